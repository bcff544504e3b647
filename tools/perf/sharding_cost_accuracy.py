"""Accuracy of shoal.sharding's cost model: estimate_cost against measured
collective times, per collective and size, for the three sources of
constants:

  built-in   the quick local measurement (memcpy, float sum, cache-line
             round trip), nothing else known;
  sweep      fitted per size range to shoal-tune's full sweep (8 B to
             64 MiB, every algorithm; run here first into a scratch
             tuning file); ppermute, which shoal-tune does not measure,
             stays built-in there;
  calibrate  fitted to shoal.sharding.calibrate(mesh) (4 KiB to 64 MiB).

Then every collective is measured again (shoal.sharding.calibration.
measure: lockstep, the median of --reps calls each at its slowest rank),
twice: the lower of the two medians is the reference ("measured", as
calibrate keeps the lower of its passes), and the higher over the lower
("spread") shows how far two runs of the same call lie apart here. A
ratio is estimate / measured; the target is every estimate within 25%
(0.8 .. 1.25). The summary counts all points and, apart, the points
whose own spread is within 25% (where the measurement itself can say
whether an estimate is within 25%).

    python tools/perf/sharding_cost_accuracy.py [--ranks 2] [--reps 20]
"""

import argparse
import os
import subprocess
import sys
import tempfile

OPS = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all",
       "ppermute")
SIZES = [64 << 10 << i for i in range(11)]  # 64 KiB .. 64 MiB


def launch(args):
    from shoal.run import tool_path

    env = dict(os.environ, OMP_NUM_THREADS="1")
    with tempfile.TemporaryDirectory() as tmp:
        tuning = os.path.join(tmp, "sweep", "tuning")
        os.makedirs(os.path.dirname(tuning))
        subprocess.run([tool_path("shoalrun"), "-n", str(args.ranks),
                        tool_path("shoal-tune"), "-c",
                        ",".join(OPS[:4]), "-o", tuning], env=env,
                       check=True, stdout=subprocess.DEVNULL, timeout=600)
        cmd = [tool_path("shoalrun"), "-n", str(args.ranks), sys.executable,
               os.path.abspath(__file__), "--worker", "--dir", tmp,
               "--reps", str(args.reps)]
        return subprocess.run(cmd, env=env, timeout=1800).returncode


def within(ratio):
    return 0.8 <= ratio <= 1.25


def worker(args):
    import shoal
    from shoal import sharding as sh
    from shoal.sharding import calibration

    comm = shoal.new_comm("shoal", "cpu", name="accuracy")
    mesh = sh.DeviceMesh(comm, (comm.get_size(),), ("x",))
    axis = mesh.comm_for(("x",))
    paths = {"built-in": os.path.join(args.dir, "none", "tuning"),
             "sweep": os.path.join(args.dir, "sweep", "tuning"),
             "calibrate": os.path.join(args.dir, "cal", "tuning")}
    sh.calibrate(mesh, path=paths["calibrate"], reps=args.reps // 2)
    rows = []
    for op in OPS:
        for nbytes in SIZES:
            est = {k: sh.estimate_cost(op, nbytes, mesh, "x", path=p)
                   for k, p in paths.items()}
            times = [calibration.measure(axis, op, nbytes, args.reps)
                     for _ in range(2)]
            rows.append((op, nbytes, min(times), max(times) / min(times),
                         est))
    if mesh.rank == 0:
        report(rows, comm.get_size())
    comm.finalize()
    return 0


def report(rows, n):
    print(f"# {n} ranks; times in us; ratio = estimate / measured "
          "(target 0.80 .. 1.25)")
    print(f"{'collective':<15}{'bytes':>10}{'measured':>10}{'spread':>7}"
          f"{'built-in':>17}{'sweep':>17}{'calibrate':>17}")
    sources = list(rows[0][4])
    hits = {k: [0, 0] for k in sources}  # all points, stable points
    worst = {k: 1.0 for k in sources}
    stable = sum(spread <= 1.25 for _, _, _, spread, _ in rows)
    for op, nbytes, measured, spread, est in rows:
        cells = []
        for k, e in est.items():
            ratio = e / measured
            hits[k][0] += within(ratio)
            hits[k][1] += within(ratio) and spread <= 1.25
            worst[k] = max(worst[k], ratio, 1 / ratio)
            mark = "" if within(ratio) else "*"
            src = "" if e.source == "measured" else f" {e.source[:5]}"
            cells.append(f"{e * 1e6:9.1f} {ratio:5.2f}{mark:1}{src}")
        print(f"{op:<15}{nbytes:>10}{measured * 1e6:10.1f}{spread:7.2f}"
              + "".join(f"{c:>17}" for c in cells))
    for k in sources:
        print(f"# {k}: {hits[k][0]} of {len(rows)} within 25% (worst "
              f"{worst[k]:.2f}x); of the {stable} points measured twice "
              f"within 25%, {hits[k][1]}")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--reps", type=int, default=20)
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--dir", help=argparse.SUPPRESS)
    args = p.parse_args()
    return worker(args) if args.worker else launch(args)


if __name__ == "__main__":
    sys.exit(main())
