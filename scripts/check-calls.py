#!/usr/bin/env python3
"""Fails when a function call in src/ crosses a layer the wrong way.

check-layers.py reads the #include lines; this reads what the compiled
objects actually use. For every object of the library it lists the
symbols the object needs (nm's undefined symbols) and the file of src/
that defines each one, then applies the layer order below: a file may use
what its own layer or a lower one defines, and a layer's upward entry
points only where the layer below declares them as its upcalls.

  base < platform < store < transport < core < algo < coll < plan, rma
       < queue

Within a layer, a transport's folder (transport/shm, transport/tcp) uses
only itself, the interface headers' functions and the layers below: one
transport never calls another. From above, a transport is reached only
through its table of operations: nothing outside its folder calls a
function of it, and only creation names the table itself.

Three layers declare what they call of the layers above them, each in
its upcalls.h: a transport calls core (completions, aborts, rendezvous),
core calls the collective layer (its part of creation and destruction),
and an algorithm calls the collective layer (the host-aware family starts
collectives on its sub-communicators). Those calls, and no others, run
upward.

Usage: check-calls.py OBJECT_DIR   (the folder whose src/ holds the .o
files, e.g. build/CMakeFiles/shoal_objects.dir). Prints each crossing and
exits 1 if any.
"""
import os
import re
import subprocess
import sys

ORDER = ["base", "platform", "store", "transport", "core", "algo", "coll",
         "plan", "rma", "queue"]
RANK = {layer: i for i, layer in enumerate(ORDER)}
RANK["rma"] = RANK["plan"]  # siblings: neither calls the other

# Per layer, the header declaring the functions of the layers above that
# it calls: the only calls that may run upward.
UPCALL_HEADERS = {"transport": "src/transport/upcalls.h",
                  "core": "src/core/upcalls.h",
                  "algo": "src/algo/upcalls.h"}


def layer(src):
    return src.split("/")[0]


def unit(src):
    """The room a file lives in: a transport's folder, else its layer."""
    parts = src.split("/")
    if parts[0] == "transport" and len(parts) > 2:
        return "/".join(parts[:2])
    return parts[0]


def upcalls():
    """{layer: the function names its upcalls header declares}."""
    names = {}
    for lower, header in UPCALL_HEADERS.items():
        with open(header, encoding="utf-8") as f:
            text = re.sub(r"//[^\n]*|/\*.*?\*/", "", f.read(), flags=re.S)
        names[lower] = set(re.findall(r"\b((?:shi|shoal)_\w+)\s*\(", text))
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
    return name in ups.get(a, ())


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
    ups, bad, upward = upcalls(), [], 0
    for src in sorted(needs):
        for name in sorted(needs[src]):
            dst = owner.get(name)
            if dst is None or allowed(src, dst, name, ups):
                upward += dst is not None and RANK[layer(dst)] > RANK[layer(src)]
                continue
            bad.append(f"src/{src}: calls {name} (src/{dst})")
    for line in bad:
        print(line)
    if bad:
        print(f"check-calls: {len(bad)} call(s) cross a layer the wrong "
              "way (rules: scripts/check-calls.py, docs/architecture.md)")
        return 1
    print(f"check-calls: every call of {len(objs)} objects respects the "
          f"layers ({upward} of them upcalls its headers declare)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
