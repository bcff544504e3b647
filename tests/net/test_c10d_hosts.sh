#!/usr/bin/env bash
# torch.distributed with backend "shoal" across hosts: 3 network
# namespaces on a bridge, ranks started as torchrun starts them (RANK,
# WORLD_SIZE, MASTER_ADDR, MASTER_PORT: torch's store on host 0), one or
# two per host. Every rank must finish c10d_hosts.py's collectives.
# Exit 77 = skipped (no namespaces here, or no torch in the test Python).
set -u
here=$(cd "$(dirname "$0")" && pwd)
netns=$here/netns.sh
build=${SHOAL_BUILD_DIR:-$here/../../build}
python=${SHOAL_TEST_PYTHON:-$build/pyenv/bin/python}
name=shoal-tc$$
tmp=$(mktemp -d)

"$python" -c "import torch, shoal" 2>/dev/null ||
    { echo "test_c10d_hosts: SKIP: no torch and shoal in $python" >&2; exit 77; }
trap '"$netns" down "$name"; rm -rf "$tmp"' EXIT
trap 'exit 1' INT TERM HUP
"$netns" up "$name" 3 || exit $?

# run HOSTS: one rank per entry (the host of each rank, rank 0 first).
run() {
    local hosts=($1) r rc ok=1 port=$((20000 + RANDOM % 12000))
    local n=${#hosts[@]} pids=()
    for ((r = 0; r < n; r++)); do
        "$netns" exec "$name" "${hosts[r]}" env RANK=$r WORLD_SIZE=$n \
            MASTER_ADDR="$("$netns" addr "$name" 0)" MASTER_PORT=$port \
            SHOAL_TIMEOUT_SECONDS=60 "$python" "$here/c10d_hosts.py" \
            >"$tmp/out.$r" 2>&1 &
        pids[r]=$!
    done
    for ((r = 0; r < n; r++)); do
        wait "${pids[r]}"
        rc=$?
        grep -q "c10d rank $r of $n OK" "$tmp/out.$r" && [ $rc = 0 ] || ok=0
    done
    if [ $ok = 0 ]; then
        for ((r = 0; r < n; r++)); do
            sed "s/^/rank $r: /" "$tmp/out.$r" | tail -n 20 >&2
        done
        echo "test_c10d_hosts: FAIL: ranks on hosts ($1)" >&2
        exit 1
    fi
}

run "0 1"
run "0 1 2 0 1"
echo "test_c10d_hosts: torch.distributed across 2 and 3 hosts ok"
