# Shared by the tests/net/test_*_hosts.sh scripts, sourced after they set
# $name (the namespaces), $netns, $mptest, $tmp and $me (the script's name,
# for messages): starting ranks of shoal_mptest on namespaced hosts and
# waiting for them.

fail() {
    echo "$me: FAIL: $*" >&2
    exit 1
}

full=${SHOAL_NET_FULL:-0}
matrix=sample
[ "$full" = 1 ] && matrix=full

# start_job HOSTS ENV CASE ARGS...: starts one rank per entry of HOSTS
# (the host of each rank, rank 0 first, on host 0) in the background;
# rank r's output goes to $tmp/out.r, its pid to pids[r].
# A store port below the kernel's ephemeral range (32768-60999 by
# default): there an earlier job's connection from host 0 may still hold
# the number, rank 0 then cannot serve the store, connects to it instead,
# and every rank waits out its timeout.
store_port() {
    echo $((20000 + RANDOM % 12000))
}

start_job() {
    local hosts=($1) env=$2 r port
    port=$(store_port)
    shift 2
    njob=${#hosts[@]}
    pids=()
    rm -f "$tmp"/out.*
    for ((r = 0; r < njob; r++)); do
        # shellcheck disable=SC2086
        "$netns" exec "$name" "${hosts[r]}" env SHOAL_RANK=$r \
            SHOAL_SIZE=$njob SHOAL_STORE="$("$netns" addr "$name" 0):$port" \
            SHOAL_SECRET=net-test-secret SHOAL_TEST_NET=1 $env "$mptest" "$@" \
            >"$tmp/out.$r" 2>&1 &
        pids[r]=$!
    done
}

# wait_job: waits for every rank; fails unless each printed "case ... OK".
wait_job() {
    local r rc ok=1
    for ((r = 0; r < njob; r++)); do
        wait "${pids[r]}"
        rc=$?
        grep -q "case .* OK" "$tmp/out.$r" || ok=0
        [ $rc = 0 ] || ok=0
    done
    if [ $ok = 0 ]; then
        for ((r = 0; r < njob; r++)); do
            sed "s/^/rank $r: /" "$tmp/out.$r" >&2
        done
        return 1
    fi
}

run_job() {
    local hosts=$1 env=$2
    shift 2
    start_job "$hosts" "$env" "$@"
    wait_job || fail "case $* on hosts ($hosts) with '$env'"
}

# wait_looping: until every rank printed "looping" (10 s at most).
wait_looping() {
    local i r n
    for ((i = 0; i < 100; i++)); do
        n=0
        for ((r = 0; r < njob; r++)); do
            grep -q looping "$tmp/out.$r" 2>/dev/null && n=$((n + 1))
        done
        [ $n = "$njob" ] && return 0
        sleep 0.1
    done
    return 1
}

# cut_link_fails_every_rank ENV: a loop of all-reduces on hosts 0, 1, 2
# with a 3 s deadline; host 2's link goes down; every rank must fail
# cleanly within 10 s. The link comes back afterwards.
cut_link_fails_every_rank() {
    local t0 t1
    start_job "0 1 2" "$1 SHOAL_TIMEOUT_SECONDS=3" net_loop 3
    wait_looping || { wait_job; fail "the loop did not start"; }
    "$netns" link "$name" 2 down || fail "cutting host 2's link"
    t0=$(date +%s)
    wait_job || fail "ranks did not fail cleanly after host 2's link went down"
    t1=$(date +%s)
    [ $((t1 - t0)) -le 10 ] || fail "failing took $((t1 - t0)) s after the cut"
    grep -h "failed after" "$tmp"/out.* | sed 's/^/  /'
    "$netns" link "$name" 2 up || fail "restoring host 2's link"
}

# killed_rank_fails_the_others ENV: a loop of all-reduces on hosts 0, 1, 2;
# host 2's rank is killed; ranks 0 and 1 must fail naming a dead peer.
# Sets killed_after to the seconds that took.
killed_rank_fails_the_others() {
    local r t0
    start_job "0 1 2" "$1 SHOAL_TIMEOUT_SECONDS=30" net_loop 30
    wait_looping || { wait_job; fail "the loop did not start"; }
    kill -9 "${pids[2]}"
    t0=$(date +%s)
    for r in 0 1; do
        wait "${pids[r]}" || { cat "$tmp"/out.*; fail "rank $r after the kill"; }
        grep -q "SHOAL_EPEER\|SHOAL_EABORTED" "$tmp/out.$r" ||
            { cat "$tmp/out.$r"; fail "rank $r did not name the dead peer"; }
    done
    killed_after=$(($(date +%s) - t0))
    wait "${pids[2]}" 2>/dev/null
}
