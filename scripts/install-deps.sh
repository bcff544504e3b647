#!/usr/bin/env bash
# Installs what building and testing shoal needs and a fresh Debian machine
# may lack: a C compiler, CMake, Ninja, pkg-config, OpenSSL's libcrypto
# headers; with --ci also clang-format and valgrind, with --bench Open MPI
# (the peer the benchmarks compare against), with --net iproute2 and
# iputils-ping (ip, tc and ping: the network-namespace hosts of tests/net
# and make bench-net), with --fuzz clang and its libFuzzer runtime (make
# fuzz); with --venv DIR what building
# and testing the Python package needs: Python with its headers and venv
# module (Debian packages), a virtual environment at DIR created from
# $PYTHON (python3) that also sees the system's packages, and in it
# scikit-build-core, numpy, pytest, pytest-timeout, pytest-xdist and
# torch==2.13.0 unless
# already importable. Only missing things are installed; nothing happens
# when all are present.
set -euo pipefail

ci=0
bench=0
net=0
fuzz=0
venv=
python=${PYTHON:-python3}
while [ $# -gt 0 ]; do
    case "$1" in
        --ci) ci=1 ;;
        --bench) bench=1 ;;
        --net) net=1 ;;
        --fuzz) fuzz=1 ;;
        --venv) venv=${2:?--venv needs a directory}; shift ;;
        *) echo "usage: install-deps.sh [--ci] [--bench] [--net] [--fuzz] [--venv DIR]" >&2; exit 2 ;;
    esac
    shift
done

missing=()
need() { command -v "$1" >/dev/null 2>&1 || missing+=("$2"); }
need cc gcc
need make make
need cmake cmake
need ninja ninja-build
need pkg-config pkg-config
[ -f /usr/include/openssl/hmac.h ] || missing+=(libssl-dev)
# UCX: the UCX transport is built where it is found (SHOAL_WITH_UCX).
[ -f /usr/include/ucp/api/ucp.h ] || missing+=(libucx-dev)
if [ "$ci" = 1 ]; then
    need clang-format clang-format
    need valgrind valgrind
fi
if [ "$bench" = 1 ]; then
    need mpicc libopenmpi-dev
    need mpirun openmpi-bin
fi
if [ "$net" = 1 ]; then
    # ip and tc both come from iproute2.
    { command -v ip && command -v tc; } >/dev/null 2>&1 || missing+=(iproute2)
    need ping iputils-ping
fi
if [ "$fuzz" = 1 ]; then
    need clang clang
    # libFuzzer comes with clang's runtime (libclang-rt-N-dev), which the
    # clang package only recommends; N is the version clang depends on.
    if ! command -v clang >/dev/null 2>&1 \
        || [ ! -f "$(clang -print-file-name="libclang_rt.fuzzer-$(uname -m).a")" ]; then
        v=$(apt-cache depends clang 2>/dev/null \
            | sed -n 's/.*Depends: clang-\([0-9][0-9]*\)$/\1/p' | head -n 1)
        missing+=("libclang-rt-${v:-14}-dev")
    fi
fi

if [ -n "$venv" ] && [ ! -x "$venv/bin/python" ]; then
    if ! command -v "$python" >/dev/null 2>&1; then
        missing+=(python3 python3-dev python3-venv)
    else
        # Headers for the extension module, ensurepip for the venv.
        "$python" -c 'import os, sysconfig, sys
sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")))' \
            || missing+=(python3-dev)
        "$python" -c 'import ensurepip, venv' 2>/dev/null || missing+=(python3-venv)
    fi
fi

if [ ${#missing[@]} -gt 0 ]; then
    echo "install-deps: installing ${missing[*]}"
    if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
        echo "install-deps: please install: ${missing[*]}" >&2
        exit 1
    fi
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

[ -n "$venv" ] || exit 0
if [ ! -x "$venv/bin/python" ]; then
    "$python" -m venv --system-site-packages "$venv"
fi
python=$venv/bin/python
# Python packages, by import name and what pip installs for it. torch is
# pinned: a CPU build is all the tests need (a newer one may pull CUDA).
pips=()
want() { "$python" -c "import $1" >/dev/null 2>&1 || pips+=("$2"); }
want scikit_build_core scikit-build-core
want numpy numpy
want pytest pytest
want pytest_timeout pytest-timeout
want xdist pytest-xdist
want torch torch==2.13.0
[ ${#pips[@]} -eq 0 ] && exit 0
echo "install-deps: pip installing ${pips[*]}"
"$python" -m pip install --quiet "${pips[@]}"
