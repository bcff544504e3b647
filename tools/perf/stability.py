"""The stability target over several compare.sh runs of one host.

    python3 tools/perf/stability.py RUN_DIR RUN_DIR ...

Each RUN_DIR is a compare.sh output folder (COMPARE_OUT), whose
shoal_OP.tsv and mpi_OP.tsv rows start with the size and the median time
in us. Per operation and size present in every run:

- spread: the row's largest time over its median across the runs, or the
  median over its smallest, whichever is larger. Target: at most 1.5x for
  every shoal row. Open MPI's rows get the same figure: a spread both
  share is the host's.
- the ratio to Open MPI's time in the same run. Target: no cell above 2x.

Windows come in two kinds of memory. Open MPI's puts go into
MPI_Win_allocate windows, memory the library allocates (shared memory
between local ranks), so their ratio is taken against shoal's window
over shoal_alloc memory (put_shm, putpingpong_shm). shoal's window over
the caller's malloc memory (put, putpingpong: each put a
process_vm_writev) has no counterpart in mpi_bench; its rows are held to
the spread target only.

Prints the rows that miss, the counts, and a verdict per target.
"""

import os
import statistics
import sys

OPS = ("allreduce reduce allgather reducescatter alltoall gather scatter "
       "broadcast sendrecv pingpong put putpingpong").split()
SHOAL_OPS = OPS + ["put_shm", "putpingpong_shm"]
# The Open MPI table each shoal table is compared with (None: none).
PEER = {"put": None, "putpingpong": None, "put_shm": "put",
        "putpingpong_shm": "putpingpong"}
SPREAD_MAX = 1.5
RATIO_MAX = 2.0


def medians(run_dir, name):
    """{size: median us} of one tsv file ({} when it is missing)."""
    rows = {}
    try:
        with open(os.path.join(run_dir, name + ".tsv")) as f:
            for line in f:
                fields = line.split()
                try:
                    rows[int(fields[0])] = float(fields[1])
                except (IndexError, ValueError):
                    continue  # a header, or N/A
    except FileNotFoundError:
        pass
    return rows


def spread(values):
    mid = statistics.median(values)
    if mid <= 0 or min(values) <= 0:
        return float("inf")
    return max(max(values) / mid, mid / min(values))


def common_rows(runs, ops):
    """{(op, size): [time per run]} for the rows every run has."""
    out = {}
    for op in ops:
        tables = [r[op] for r in runs]
        if not all(tables):
            continue
        for size in sorted(set.intersection(*(set(t) for t in tables))):
            out[(op, size)] = [t[size] for t in tables]
    return out


def main(dirs):
    if len(dirs) < 2:
        print("stability.py: give two or more compare.sh output folders",
              file=sys.stderr)
        return 2
    shoal = common_rows([{op: medians(d, "shoal_" + op) for op in SHOAL_OPS}
                         for d in dirs], SHOAL_OPS)
    mpi = common_rows([{op: medians(d, "mpi_" + op) for op in OPS}
                       for d in dirs], OPS)
    # Open MPI's rows under the name of the shoal table they are held to.
    peer_of = {key: mpi.get((PEER.get(key[0], key[0]), key[1]))
               for key in shoal}
    if not shoal:
        print("stability.py: no shoal rows common to every run",
              file=sys.stderr)
        return 2
    print(f"# {len(dirs)} runs; times are medians in us, run by run")
    print(f"# shoal rows whose spread over the runs is above {SPREAD_MAX}x "
          "(Open MPI's spread of the same row beside)")
    unsteady = sorted(((spread(v), key, v) for key, v in shoal.items()),
                      reverse=True)
    for s, (op, size), v in unsteady:
        if s > SPREAD_MAX:
            peer = peer_of[(op, size)]
            peer_s = f"{spread(peer):5.2f}x" if peer else "  N/A"
            print(f"{op:14} {size:>8} {s:5.2f}x  Open MPI {peer_s}  "
                  + " ".join(f"{t:.2f}" for t in v))
    print("# above 2x Open MPI's time in the same run")
    over = []
    for key, v in shoal.items():
        for run, (mine, theirs) in enumerate(zip(v, peer_of[key] or [])):
            if theirs > 0 and mine / theirs > RATIO_MAX:
                over.append((mine / theirs, key, run + 1, mine, theirs))
    for ratio, (op, size), run, mine, theirs in sorted(over, reverse=True):
        print(f"{op:14} {size:>8} run {run}  {ratio:5.2f}x  "
              f"{mine:.2f} / {theirs:.2f}")
    n_unsteady = sum(1 for s, _, _ in unsteady if s > SPREAD_MAX)
    counts = (f"# shoal: {n_unsteady} of {len(shoal)} rows above "
              f"{SPREAD_MAX}x (median spread "
              f"{statistics.median(s for s, _, _ in unsteady):.2f}x)")
    if mpi:
        mpi_spreads = [spread(v) for v in mpi.values()]
        n_mpi = sum(1 for s in mpi_spreads if s > SPREAD_MAX)
        counts += (f"; Open MPI: {n_mpi} of {len(mpi_spreads)} (median "
                   f"spread {statistics.median(mpi_spreads):.2f}x)")
    print(counts)
    cells = sum(len(v) for key, v in shoal.items() if peer_of[key])
    verdict = "MET" if n_unsteady == 0 else "NOT MET"
    print(f"# target: every shoal row within {SPREAD_MAX}x of its median "
          f"over the runs: {verdict} ({n_unsteady} rows)")
    if cells == 0:
        print("# target: no cell above 2x Open MPI: N/A (Open MPI not run)")
    else:
        verdict = "MET" if not over else "NOT MET"
        print(f"# target: no cell above 2x Open MPI: {verdict} "
              f"({len(over)} of {cells} cells)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
