#!/usr/bin/env bash
# Runs libFuzzer harnesses built by `make fuzz` (shoal_fuzz_<name> in BUILD).
#
#   run.sh BUILD SECONDS NAME...   fuzz each NAME for SECONDS on its corpus,
#                                  tests/fuzz/corpus/NAME, one after the
#                                  other; new inputs join the corpus
#   run.sh --merge BUILD NAME...   minimise each corpus in place: of the
#                                  inputs libFuzzer named, keep those that
#                                  add coverage; keep every named one
#
# A crash, leak, sanitizer report, time-out (FUZZ_TIMEOUT s, default 10) or
# out-of-memory input is written to tests/fuzz/crashes/NAME-* and fails the
# run. Each harness's log is BUILD/fuzz-NAME.log. Run from the repository
# root.
set -euo pipefail

here=tests/fuzz
merge=0
if [ "${1:-}" = --merge ]; then
    merge=1
    shift
fi
build=${1:?usage: run.sh [--merge] BUILD [SECONDS] NAME...}
shift
if [ "$merge" = 0 ]; then
    seconds=${1:?usage: run.sh BUILD SECONDS NAME...}
    shift
fi
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

# Options every run of harness $1 shares, into the array opts: limits, the
# dictionary if there is one, where findings go.
set_opts() {
    opts=(-timeout="${FUZZ_TIMEOUT:-10}" -rss_limit_mb=2048 -max_len=4096
        -artifact_prefix="$here/crashes/$1-")
    [ ! -f "$here/$1.dict" ] || opts+=(-dict="$here/$1.dict")
}

# Inputs named by libFuzzer (the SHA-1 of their bytes) are replaced by the
# merge's choice; named ones (seed-*, and the inputs of fixed crashes) stay.
minimise() {
    local name=$1 bin=$2 corpus=$here/corpus/$1 tmp opts f
    tmp=$(mktemp -d)
    set_opts "$name"
    "$bin" -merge=1 "${opts[@]}" "$tmp" "$corpus" >"$build/fuzz-$name.log" 2>&1
    find "$corpus" -maxdepth 1 -type f -regextype egrep \
        -regex '.*/[0-9a-f]{40}' -delete
    for f in "$corpus"/*; do
        [ ! -f "$f" ] || rm -f "$tmp/$(sha1sum <"$f" | cut -c1-40)"
    done
    mv "$tmp"/* "$corpus"/ 2>/dev/null || true
    rmdir "$tmp"
    echo "fuzz $name: corpus minimised to $(ls "$corpus" | wc -l) inputs"
}

fuzz() {
    local name=$1 bin=$2 corpus=$here/corpus/$1 log=$build/fuzz-$1.log opts
    set_opts "$name"
    if ! "$bin" -max_total_time="$seconds" -print_final_stats=1 "${opts[@]}" \
        "$corpus" >"$log" 2>&1; then
        tail -n 40 "$log"
        echo "fuzz $name: FAILED; the input is in $here/crashes/ (log: $log)"
        return 1
    fi
    echo "fuzz $name: $(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" \
        | grep -o '[0-9]*$') runs in ${seconds} s, corpus $(ls "$corpus" | wc -l) inputs, no crash"
}

mkdir -p "$here/crashes"
status=0
for name in "$@"; do
    bin=$build/tests/fuzz/shoal_fuzz_$name
    [ -x "$bin" ] || { echo "fuzz: $bin is not built" >&2; exit 1; }
    mkdir -p "$here/corpus/$name"
    if [ "$merge" = 1 ]; then
        minimise "$name" "$bin"
    else
        fuzz "$name" "$bin" || status=1
    fi
done
exit "$status"
