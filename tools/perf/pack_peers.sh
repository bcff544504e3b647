#!/bin/sh
# pack_peers.sh: packs what compare.sh needs into one folder, for a
# machine that has no MPI, no oneCCL and no compilers (a lent many-core
# machine that cannot reach a package registry):
#
#   tools/perf/pack_peers.sh [BUILD_DIR] [KIT_DIR]   (./build, ./.devkit)
#
# KIT_DIR then holds
#   mpi.tar.xz   Open MPI's and MPICH's runtime files as this host's Debian
#                packages installed them (no Fortran, Java, OpenSHMEM,
#                headers or documentation), binaries stripped;
#   ccl.tar.xz   oneCCL's libraries and the libfabric providers it uses
#                (shm, tcp, rxm) from BUILD_DIR/peers-env/lib;
#   bench/       mpi_bench, mpich_bench and oneccl_bench, built here
#                (compare.sh's BENCH_BIN);
#   build/       shoalrun, shoal-perf and libshoal.so.0 (compare.sh's
#                BUILD_DIR there, with LD_LIBRARY_PATH naming it);
#   run.sh       unpacks the rest on the machine and runs compare.sh at
#                RANKS ("4 8 16") ranks into $OUT/cmpN.txt.
# Open MPI is relocated with OPAL_PREFIX; its MCA settings are copied to
# /etc/openmpi there (so both machines run the same components). oneccl_
# bench finds libccl through its RPATH: run.sh puts the libraries at the
# path they had here.
set -eu
BUILD=$(cd "${1:-./build}" && pwd)
KIT=${2:-./.devkit}
SRC=$(cd "$(dirname "$0")" && pwd)
PKGS="openmpi-bin libopenmpi3 openmpi-common mpich libmpich12 libhwloc15
libhwloc-plugins libevent-2.1-7 libevent-core-2.1-7 libevent-pthreads-2.1-7
libfabric1 libibverbs1 librdmacm1 libnl-3-200 libnl-route-3-200 libpmix2
libpsm2-2 libucx0 libxnvctrl0 libmunge2 libslurm38 libnuma1"
SKIP='fort|java|oshmem|sshmem|/include/|\.a$|/pkgconfig/|mpif|usempi'
SKIP="$SKIP|/share/(man|doc|info|lintian|bug)/|\\.mod\$"

# Build the peers' benchmarks (and check every input is here) first.
COMPARE_OUT=$BUILD/perf-pack OPS=allreduce MAXBYTES=8 ITERS=2 WARMUP=1 \
    MIN_ITERS=1 DEEPSPEED_PYTHON=none GLOO_PYTHON=none \
    sh "$SRC/compare.sh" "$BUILD" >/dev/null
for b in mpi_bench mpich_bench oneccl_bench; do
    [ -x "$BUILD/perf-pack/$b" ] || {
        echo "pack_peers.sh: $b was not built (see compare.sh's notes)" >&2
        exit 1
    }
done

rm -rf "$KIT"
mkdir -p "$KIT/bench" "$KIT/build/tools" "$KIT/root" "$KIT/ccl"
# shellcheck disable=SC2086
dpkg -L $PKGS | grep -v -E "$SKIP" | sort -u | while read -r f; do
    if [ ! -d "$f" ] && { [ -f "$f" ] || [ -L "$f" ]; }; then
        dir=$(readlink -f "$(dirname "$f")") # /lib is /usr/lib on Debian
        mkdir -p "$KIT/root$dir"
        cp -a "$f" "$KIT/root$dir/"
    fi
done
ln -sf mpirun.openmpi "$KIT/root/usr/bin/mpirun"
find "$KIT/root" -type f \( -name '*.so*' -o -path '*/bin/*' \) \
    -exec strip --strip-unneeded {} \; 2>/dev/null || true
tar cJf "$KIT/mpi.tar.xz" -C "$KIT/root" .
rm -rf "$KIT/root"
for f in libccl.so.1 libccl.so.2 libfabric.so.1 libshm-fi.so libtcp-fi.so \
    librxm-fi.so; do
    cp -L "$BUILD/peers-env/lib/$f" "$KIT/ccl/"
done
tar cJf "$KIT/ccl.tar.xz" -C "$KIT/ccl" .
rm -rf "$KIT/ccl"
cp "$BUILD/perf-pack/mpi_bench" "$BUILD/perf-pack/mpich_bench" \
    "$BUILD/perf-pack/oneccl_bench" "$KIT/bench/"
cp "$BUILD/tools/shoalrun" "$BUILD/tools/shoal-perf" "$KIT/build/tools/"
cp -L "$BUILD/libshoal.so.0" "$KIT/build/"
strip "$KIT/bench/"* "$KIT/build/tools/"* "$KIT/build/libshoal.so.0"

cat >"$KIT/run.sh" <<RUN
#!/bin/sh
# Made by tools/perf/pack_peers.sh; run from the repository's root.
set -u
K=\$(pwd)/$(basename "$KIT")
W=/tmp/peers-kit
mkdir -p "\$W/opt" /etc/openmpi "$BUILD/peers-env/lib"
tar xJf "\$K/mpi.tar.xz" -C "\$W/opt"
cp -a "\$W/opt/etc/openmpi/." /etc/openmpi/
tar xJf "\$K/ccl.tar.xz" -C "$BUILD/peers-env/lib"
L=\$W/opt/usr/lib/x86_64-linux-gnu
export OPAL_PREFIX=\$W/opt/usr PATH=\$W/opt/usr/bin:\$PATH
export LD_LIBRARY_PATH=\$L:\$L/openmpi/lib:\$K/build
{
    uname -r; nproc
    lscpu | grep -E "Model name|^CPU\\(s\\)|Thread|Core|Socket|NUMA|L3"
    df -h /dev/shm | tail -n 1
    python3 -c 'import torch; print("torch", torch.__version__)'
    # What the peers' programs would fail to load here.
    for b in \$W/opt/usr/bin/mpirun.mpich \$W/opt/usr/bin/orterun \
        \$K/bench/*; do
        ldd "\$b" | grep "not found" | sed "s|^|\$(basename "\$b"): |"
    done
} >"\$OUT/machine.txt" 2>&1
cat "\$OUT/machine.txt"
for n in \${RANKS:-4 8 16}; do
    t=\$((60 + 10 * n))
    echo "## NRANKS=\$n (at most \$t s)"
    NRANKS=\$n MODE=full MAXBYTES=\${MAXBYTES:-4M} ITERS=\${ITERS:-30} \\
        ITER_BYTES=256M WARMUP=3 MIN_ITERS=5 TIMEOUT=90 \\
        DEEPSPEED_PYTHON=none GLOO_PYTHON=\$(command -v python3) \\
        BENCH_BIN=\$K/bench \\
        COMPARE_OUT=\$W/cmp\$n timeout \$t sh tools/perf/compare.sh \\
        "\$K/build" >"\$OUT/cmp\$n.txt" 2>&1
    echo "exit \$?"
done
RUN
chmod +x "$KIT/run.sh"
du -sh "$KIT"
