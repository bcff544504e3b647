#!/usr/bin/env python3
"""Fails when a function call in src/ crosses a layer the wrong way.

check-layers.py reads the #include lines; this reads what the compiled
objects actually use. For every object of the library it lists the
symbols the object needs (nm's undefined symbols) and the file of src/
that defines each one, then applies the layer order below: a file may use
what its own layer or a lower one defines, and a layer's upward entry
points only where the layer below declares them as its upcalls.

  base < platform < store < transport < core < algo < plan, rma

Within a layer, a transport's folder (transport/shm, transport/tcp) uses
only itself, the interface headers' functions and the layers below: one
transport never calls another. From above, a transport is reached only
through its table of operations: nothing outside its folder calls a
function of it, and only creation names the table itself.

One crossing is still owed: the collective layer (core/coll_api.c and
core/coll_setup.c) chooses and starts the algorithms from inside core.
DEBTS lists it by file; the check fails on a crossing from any other file,
and on a debt that no longer occurs, so the list only shrinks.

Usage: check-calls.py OBJECT_DIR   (the folder whose src/ holds the .o
files, e.g. build/CMakeFiles/shoal_objects.dir). Prints each crossing and
exits 1 if any.
"""
import os
import re
import subprocess
import sys

ORDER = ["base", "platform", "store", "transport", "core", "algo", "plan",
         "rma"]
RANK = {layer: i for i, layer in enumerate(ORDER)}
RANK["rma"] = RANK["plan"]  # siblings: neither calls the other

# Functions a lower layer declares and a higher one provides: the only
# calls that may run upward. Parsed from the headers that declare them.
UPCALL_HEADERS = ["src/transport/upcalls.h"]


# file -> the layer it may still call upward (see the docstring).
DEBTS = {"core/coll_api.c": "algo", "core/coll_setup.c": "algo"}


def layer(src):
    return src.split("/")[0]


def unit(src):
    """The room a file lives in: a transport's folder, else its layer."""
    parts = src.split("/")
    if parts[0] == "transport" and len(parts) > 2:
        return "/".join(parts[:2])
    return parts[0]


def upcalls():
    names = set()
    for header in UPCALL_HEADERS:
        if not os.path.exists(header):
            continue
        with open(header, encoding="utf-8") as f:
            text = re.sub(r"//[^\n]*|/\*.*?\*/", "", f.read(), flags=re.S)
        names.update(re.findall(r"\b(shi_\w+)\s*\(", text))
    return names


def symbols(obj):
    """(defined, undefined) global symbols of one object file."""
    out = subprocess.run(["nm", "-P", obj], capture_output=True, text=True,
                         check=True).stdout
    defined, needed = set(), set()
    for line in out.splitlines():
        fields = line.split()
        if len(fields) < 2:
            continue
        name, kind = fields[0], fields[1]
        if kind == "U":
            needed.add(name)
        elif kind in "TDBRVWCG":
            defined.add(name)
    return defined, needed


def objects(objdir):
    """{path under src/ of the source: object path}."""
    root = os.path.join(objdir, "src")
    found = {}
    for top, _, files in os.walk(root):
        for name in files:
            if name.endswith(".c.o"):
                path = os.path.join(top, name)
                src = os.path.relpath(path, root)[:-2]
                if os.path.exists(os.path.join("src", src)):  # not stale
                    found[src] = path
    return found


def allowed(src, dst, name, ups):
    if unit(src) == unit(dst):
        return True
    a, b = layer(src), layer(dst)
    if b == "transport" and dst.count("/") > 1:
        # Inside a transport's folder: only its table, and only to pick it.
        return src == "core/bootstrap.c" and name.endswith("_transport")
    if a == b == "transport":
        # A transport's folder and the interface's own sources.
        return dst.count("/") == 1
    if RANK[b] < RANK[a]:
        return True
    return a == "transport" and name in ups


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    objs = objects(sys.argv[1])
    if not objs:
        print(f"check-calls: no objects under {sys.argv[1]}/src; build first")
        return 2
    owner, needs = {}, {}
    for src, obj in objs.items():
        defined, needed = symbols(obj)
        needs[src] = needed
        for name in defined:
            owner[name] = src
    ups, bad, owed, owed_calls = upcalls(), [], set(), 0
    for src in sorted(needs):
        for name in sorted(needs[src]):
            dst = owner.get(name)
            if dst is None or allowed(src, dst, name, ups):
                continue
            if DEBTS.get(src) == layer(dst):
                owed.add(src)
                owed_calls += 1
                continue
            bad.append(f"src/{src}: calls {name} (src/{dst})")
    for src in sorted(set(DEBTS) - owed):
        bad.append(f"src/{src}: no longer calls {DEBTS[src]}; remove it "
                   "from DEBTS")
    for line in bad:
        print(line)
    if bad:
        print(f"check-calls: {len(bad)} call(s) cross a layer the wrong "
              "way (rules: scripts/check-calls.py, docs/architecture.md)")
        return 1
    print(f"check-calls: every call of {len(objs)} objects respects the "
          f"layers ({owed_calls} calls of {len(DEBTS)} files still owed: "
          "DEBTS)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
