#!/usr/bin/env bash
# Installs what building and testing shoal needs and a fresh Debian machine
# may lack: a C compiler, CMake, Ninja, pkg-config, OpenSSL's libcrypto
# headers; with --ci also clang-format and valgrind, with --bench Open MPI
# (the peer the benchmarks compare against). Only missing tools are
# installed; nothing happens when all are present.
set -euo pipefail

ci=0
bench=0
for arg in "$@"; do
    case "$arg" in
        --ci) ci=1 ;;
        --bench) bench=1 ;;
        *) echo "usage: install-deps.sh [--ci] [--bench]" >&2; exit 2 ;;
    esac
done

missing=()
need() { command -v "$1" >/dev/null 2>&1 || missing+=("$2"); }
need cc gcc
need make make
need cmake cmake
need ninja ninja-build
need pkg-config pkg-config
[ -f /usr/include/openssl/hmac.h ] || missing+=(libssl-dev)
if [ "$ci" = 1 ]; then
    need clang-format clang-format
    need valgrind valgrind
fi
if [ "$bench" = 1 ]; then
    need mpicc libopenmpi-dev
    need mpirun openmpi-bin
fi

[ ${#missing[@]} -eq 0 ] && exit 0
echo "install-deps: installing ${missing[*]}"
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "install-deps: please install: ${missing[*]}" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
