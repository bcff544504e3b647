#!/usr/bin/env python3
"""Fails when the documentation or a comment names a file that is not there.

Reads README.md, docs/*.md and the comments of the C sources and headers
(src/, include/, python/shoal/_C, tools/, tests/) and the Python files.
A name with a folder (src/core/comm.c, transport/shm/shm.h) must exist
relative to the repository root, src/, python/ or the naming file's own
folder; a bare file name (comm.c) must be the name of some file in the
repository; a name with `*` (bench_*.c) must fit some file. Run from the
repository root; prints each stale name and exits 1 if any.
"""
import fnmatch
import os
import re
import subprocess
import sys

NAME = re.compile(
    r"(?<![\w./*<>-])((?:[\w.-]+/)*[\w*-]+\.(?:c|h|py|md|sh|cpp|txt|ini|cmake))"
    r"(?![\w/])")
ROOTS = ["", "src", "python", "tests", "tools"]
C_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
PY_COMMENT = re.compile(r"#[^\n]*|\"\"\".*?\"\"\"", re.S)
# Names that are not ours: other projects' files a comment cites, system
# headers, the user's specs (outside the repository), placeholders.
FOREIGN = ("torch/", "torchft/", "ucx/", "ucp/", "c10d/", "ProcessGroup",
           "sys/", "linux/", "openssl/", "Python.h", "stdio.h",
           "process_group_test.py", "test/distributed/", "shm.cpp",
           "shm_interface.cpp", "compile_op.md", "torchcomms-api.md",
           "sharding-communication-ops.md", "collective-autotuning.md",
           "communicator-trait.md", "INPUT.txt", "x.c")


def tracked():
    out = subprocess.run(["git", "ls-files"], capture_output=True, text=True,
                         check=True).stdout.split()
    return set(out), {os.path.basename(p) for p in out}


def texts():
    """(path, the text whose file names count) for each file read."""
    files, _ = tracked()
    for path in sorted(files):
        if not os.path.exists(path):
            continue
        if path == "README.md" or (path.startswith("docs/")
                                   and path.endswith(".md")):
            with open(path, encoding="utf-8") as f:
                yield path, f.read()
        elif path.endswith((".c", ".h", ".cpp")):
            with open(path, encoding="utf-8") as f:
                yield path, "\n".join(C_COMMENT.findall(f.read()))
        elif path.endswith(".py"):
            with open(path, encoding="utf-8") as f:
                yield path, "\n".join(PY_COMMENT.findall(f.read()))


def exists(name, here, paths, basenames):
    if "*" in name:  # a pattern (bench_*.c): some file must fit it
        return any(fnmatch.fnmatch(p, "*" + name) for p in paths)
    if "/" not in name:
        return name in basenames
    for root in ROOTS + [os.path.dirname(here)]:
        if os.path.normpath(os.path.join(root, name)) in paths:
            return True
    # A folder of ours named by its tail (shm/shm.h): some path ends so.
    return any(p.endswith("/" + name) for p in paths)


def main():
    paths, basenames = tracked()
    bad = []
    for here, text in texts():
        for m in NAME.finditer(text):
            name = m.group(1)
            if any(f in name for f in FOREIGN):
                continue
            if not exists(name, here, paths, basenames):
                bad.append(f"{here}: names {name}, which is not there")
    for line in sorted(set(bad)):
        print(line)
    if bad:
        print(f"check-paths: {len(set(bad))} stale file name(s)")
        return 1
    print("check-paths: every file the docs and comments name is there")
    return 0


if __name__ == "__main__":
    sys.exit(main())
