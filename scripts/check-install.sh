#!/usr/bin/env bash
# Installs shoal into a scratch prefix and builds the hello example against
# it twice: with pkg-config and with CMake's find_package(shoal). Run by
# `make test`.
set -euo pipefail
build=${1:-build}
prefix=$(mktemp -d /tmp/shoal-install.XXXXXX)
trap 'rm -rf "$prefix"' EXIT
cmake --install "$build" --prefix "$prefix" >/dev/null
export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
cc -Wall -Werror examples/hello.c -o "$prefix/hello-pc" \
    $(pkg-config --cflags --libs shoal) -Wl,-rpath,"$prefix/lib"
mkdir -p "$prefix/proj"
cat >"$prefix/proj/CMakeLists.txt" <<CMAKE
cmake_minimum_required(VERSION 3.16)
project(uses_shoal C)
find_package(shoal REQUIRED)
add_executable(hello $(pwd)/examples/hello.c)
target_link_libraries(hello PRIVATE shoal::shoal)
CMAKE
cmake -S "$prefix/proj" -B "$prefix/proj/build" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$prefix/proj/build" >/dev/null
for prog in "$prefix/hello-pc" "$prefix/proj/build/hello"; do
    "$prefix/bin/shoalrun" -n 2 "$prog" >/dev/null
done
echo "install check: pkg-config and find_package(shoal) builds run on 2 ranks"
