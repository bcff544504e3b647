#!/usr/bin/env python3
"""Fails when an #include in src/ crosses a layer the wrong way.

The layers, bottom to top (docs/architecture.md draws them):

  base       src/base/: errors as values, time, logging, environment,
             element types, the host's identity, the copy into shared
             memory; includes nothing else
  platform   src/platform/: the operating system (sockets, futex, memory)
             and the job-secret handshake on its sockets
  store      src/store/: the key-value store and its wire format
  transport  src/transport/: transport.h, msg.h and upcalls.h (the interface), one
             folder per transport
  core       src/core/: communicator, requests, engine, point-to-point
  algo       src/algo/: algorithms, their registry, reduction kernels
  coll       src/coll/: the collective layer: every collective's entry,
             the one place that chooses its algorithm, and its setup
  plan       src/plan/: compiled custom collectives
  rma        src/rma/: windows (one-sided put, signal, mapped memory)
  queue      src/queue/: queues of items between ranks, over a window

Every file may include the public header shoal.h and the base headers.
(scripts/check-calls.py checks the same order on the compiled objects'
calls.)
Beyond that, a file may include what its rule below lists. A transport
includes the interface (transport.h, msg.h, view.h: what it sees of the
communicator and of a request, upcalls.h: what it may call above) and
nothing of core, the collective layer, an algorithm or another
transport. Algorithms reach a transport only
through transport.h and msg.h (the mapped-memory family lays out its own
area of the shared memory, algo/mapped/area.h). The core
includes no transport's private header, nothing below algo includes
an algorithm, and nothing below coll includes the collective layer (core
and algo declare what they call of it in their own upcalls.h).

Run from the repository root; prints each crossing and exits 1 if any.
"""
import os
import re
import sys

PUBLIC = {"shoal.h"}
TRANSPORT_API = {"transport/transport.h", "transport/msg.h",
                 "transport/upcalls.h", "transport/view.h"}


def allowed(src, inc):
    """Whether src (a path under src/) may include inc (as written)."""
    if inc in PUBLIC or inc.startswith("base/"):
        return True
    layer = src.split("/")[0]
    if layer == "base":
        return False
    if layer == "platform":
        return inc.startswith("platform/")
    if layer == "store":
        return inc.startswith(("platform/", "store/"))
    if layer == "transport":
        own = "/".join(src.split("/")[:2]) + "/"
        if src.count("/") == 1:  # transport.h, msg.h themselves
            return inc.startswith("platform/") or inc in TRANSPORT_API
        return (inc.startswith(("platform/", "store/", own))
                or inc in TRANSPORT_API)
    if layer == "core":
        if inc.startswith("transport/"):
            return inc in TRANSPORT_API
        return inc.startswith(("platform/", "store/", "core/"))
    if layer == "algo":
        if inc.startswith("transport/"):
            return inc in TRANSPORT_API
        return inc.startswith(("platform/", "core/", "algo/"))
    if layer == "coll":
        if inc.startswith("transport/"):
            return inc in TRANSPORT_API
        return inc.startswith(("platform/", "store/", "core/", "algo/",
                               "coll/"))
    if layer == "rma":
        if inc.startswith("transport/"):
            return inc in TRANSPORT_API
        return inc.startswith(("platform/", "core/", "rma/"))
    if layer == "queue":
        if inc.startswith("transport/"):
            return inc in TRANSPORT_API
        return inc.startswith(("platform/", "core/", "rma/", "queue/"))
    if layer == "plan":
        return inc.startswith(
            ("plan/", "algo/kernels/", "platform/")) or inc in {
            "core/comm.h", "core/ops.h"}
    return False


def includes(path):
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            m = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
            if m:
                yield n, m.group(1)


def resolve(src, inc):
    """An include as a path under src/ (a bare name is its own folder's)."""
    if "/" in inc or inc in PUBLIC:
        return inc
    return os.path.join(os.path.dirname(src), inc)


def main():
    bad = []
    for root, _, files in os.walk("src"):
        for name in sorted(files):
            if not name.endswith((".c", ".h")):
                continue
            path = os.path.join(root, name)
            src = os.path.relpath(path, "src")
            for n, inc in includes(path):
                target = resolve(src, inc)
                if not allowed(src, target):
                    bad.append(f"src/{src}:{n}: includes {inc}")
    for line in bad:
        print(line)
    if bad:
        print(f"check-layers: {len(bad)} include(s) cross a layer the "
              "wrong way (rules: scripts/check-layers.py, "
              "docs/architecture.md)")
        return 1
    print("check-layers: every include respects the layers")
    return 0


if __name__ == "__main__":
    sys.exit(main())
