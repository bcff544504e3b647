#!/bin/sh
# install.sh: the peers of tools/perf/compare.sh that come from PyPI, in a
# virtual environment of their own (never the system's Python, nor the
# project's build or CI environment).
#
#   tools/perf/oneccl/install.sh [--deepspeed] [VENV]   (default build/peers-env)
#
# oneCCL (Intel oneAPI Collective Communications Library), CPU build:
# oneccl-cpu (libccl.so.1; it pulls impi-rt, Intel MPI's runtime, which
# brings libfabric) and oneccl-cpu-devel (the headers, include/oneapi/
# ccl.hpp) at ONECCL_VERSION (2022.1.2: the release pip resolves here; the
# newer ones want a libfabric wheel that PyPI lacks). The CPU wheel's
# libccl.so.1 needs libccl.so.2 (Intel's fast memcpy/memset, 140 KB), which
# only the `oneccl` wheel of the same version ships; that wheel is the SYCL
# (GPU) build: its own libccl.so.1 needs libsycl and would replace the CPU
# one, and pip would add intel-sycl-rt and 650 MB of libraries. So it is
# downloaded (no dependencies) and only lib/libccl.so.2* is copied into
# VENV/lib. compare.sh then finds VENV/include and VENV/lib (or
# ONECCL_ROOT) and builds oneccl/oneccl_bench.cpp with g++.
#
# Note: VENV/bin then holds impi-rt's mpirun and mpiexec (Intel MPI); do
# not put VENV/bin first in PATH where Open MPI's mpirun is meant.
#
# --deepspeed: also torch (TORCH_VERSION, 2.13.0, the CPU build) and
# deepspeed (DEEPSPEED_VERSION, 0.19.8) for deepspeed/ds_allreduce.py.
set -eu

ONECCL_VERSION=${ONECCL_VERSION:-2022.1.2}
TORCH_VERSION=${TORCH_VERSION:-2.13.0}
DEEPSPEED_VERSION=${DEEPSPEED_VERSION:-0.19.8}
deepspeed=0
if [ "${1:-}" = --deepspeed ]; then
    deepspeed=1
    shift
fi
VENV=${1:-build/peers-env}
PYTHON=${PYTHON:-python3}

if [ ! -x "$VENV/bin/python" ]; then
    "$PYTHON" -m venv "$VENV"
fi
PIP="$VENV/bin/pip"
"$PIP" install "oneccl-cpu==$ONECCL_VERSION" \
    "oneccl-cpu-devel==$ONECCL_VERSION"

if [ ! -e "$VENV/lib/libccl.so.2" ]; then
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    "$PIP" download --no-deps -d "$tmp" "oneccl==$ONECCL_VERSION"
    "$VENV/bin/python" - "$tmp" "$VENV/lib" <<'EOF'
import glob, os, shutil, sys, zipfile
src, dst = sys.argv[1], sys.argv[2]
(wheel,) = glob.glob(os.path.join(src, "oneccl-*.whl"))
with zipfile.ZipFile(wheel) as z:
    names = [n for n in z.namelist()
             if os.path.basename(n).startswith("libccl.so.2")
             and "/data/lib/" in n]
    if not names:
        sys.exit("install.sh: no libccl.so.2 in " + wheel)
    for n in names:
        out = os.path.join(dst, os.path.basename(n))
        with z.open(n) as f, open(out, "wb") as g:
            shutil.copyfileobj(f, g)
        os.chmod(out, 0o755)
        print("install.sh: " + out)
EOF
fi

if [ "$deepspeed" = 1 ]; then
    # torch first, pinned: its CPU build lies on this machine's disk; an
    # unpinned torch would bring the CUDA one.
    "$PIP" install "torch==$TORCH_VERSION"
    "$PIP" install "deepspeed==$DEEPSPEED_VERSION"
fi
echo "install.sh: peers in $VENV (oneCCL $ONECCL_VERSION)"
