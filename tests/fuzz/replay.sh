#!/usr/bin/env bash
# Replays every checked-in corpus (tests/fuzz/corpus/NAME) through its
# harness as built in BUILD (shoal_fuzz_replay_NAME, with the ordinary
# compiler): the regression half of the fuzzing, part of make test and make
# test-asan. Run from the repository root.
set -euo pipefail

build=${1:?usage: replay.sh BUILD}
for corpus in tests/fuzz/corpus/*/; do
    name=$(basename "$corpus")
    "$build/tests/fuzz/shoal_fuzz_replay_$name" "$corpus"
done
