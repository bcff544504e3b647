#!/usr/bin/env bash
# Runs every tests/net/test_*.sh. A test that exits 77 is skipped (no
# namespaces here: not root, or a container without CAP_SYS_ADMIN), which
# does not fail the run; any other non-zero status does.
set -u
here=$(cd "$(dirname "$0")" && pwd)
pass=0 skipped=0 failed=0
for t in "$here"/test_*.sh; do
    "$t"
    case $? in
        0) pass=$((pass + 1)) ;;
        77) skipped=$((skipped + 1)) ;;
        *) failed=$((failed + 1)); echo "tests/net: FAILED $(basename "$t")" >&2 ;;
    esac
done
echo "tests/net: $pass passed, $skipped skipped, $failed failed"
[ $failed -eq 0 ]
