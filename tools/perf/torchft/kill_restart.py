"""torchft end to end: two replica groups train with DDP, one is killed
mid-training and restarted; torchft's gloo wrapper against shoal's.

One run per column (torchft-gloo, torchft-shoal), each with its own
lighthouse: replicas r0 and r1 (one rank each) train a small MLP with
torchft's Manager, DistributedDataParallel and Optimizer. After `--warm`
committed steps r1 is killed (SIGKILL); `--down` seconds later it is
started again, rejoins through the quorum and recovers its weights from
r0 (torchft's live checkpoint transport). Each replica prints a line per
step; the driver reads them and reports, per column:
  - step time (median of r0's committed steps before the kill);
  - kill -> r0's next committed step (the quorum's own time included:
    the lighthouse must notice the death, `--heartbeat-ms`);
  - configure(): the median time of r0's reconfigurations;
  - restart -> r1's first committed step, and whether r1's weights then
    equal r0's at the same step.

    build/pyenv/bin/python tools/perf/torchft/kill_restart.py
"""

import argparse
import os
import signal
import statistics
import subprocess
import sys
import threading
import time

HERE = os.path.abspath(__file__)


# ---- a replica ---------------------------------------------------------------

def replica(args):
    from datetime import timedelta

    import torch
    import torch.nn as nn
    from torchft import DistributedDataParallel, Manager, Optimizer

    if args.kind == "gloo":
        from torchft.process_group import ProcessGroupGloo as Group
    else:
        from shoal.torchft import ProcessGroupShoal as Group

    class Timed(Group):
        def configure(self, *a, **k):
            t0 = time.perf_counter()
            super().configure(*a, **k)
            print(f"configure {time.perf_counter() - t0:.4f}", flush=True)

    # The replica group's store, which torchrun would serve (one rank).
    store = torch.distributed.TCPStore("localhost", args.store_port, 1, True)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 16))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    pg = Timed(timeout=timedelta(seconds=10))
    manager = Manager(
        pg=pg, min_replica_size=1,
        load_state_dict=lambda sd: (model.load_state_dict(sd["model"]),
                                    opt.load_state_dict(sd["opt"])),
        state_dict=lambda: {"model": model.state_dict(),
                            "opt": opt.state_dict()},
        replica_id=args.replica, rank=0, world_size=1,
        store_addr="localhost", store_port=args.store_port,
        lighthouse_addr=f"http://localhost:{args.lighthouse_port}",
        timeout=timedelta(seconds=10), quorum_timeout=timedelta(seconds=30),
        connect_timeout=timedelta(seconds=30))
    ddp = DistributedDataParallel(manager, model)
    optim = Optimizer(manager, opt)
    data = torch.randn(64, 256)
    target = torch.randn(64, 16)
    while manager.current_step() < args.steps:
        before = manager.current_step()
        optim.zero_grad()
        loss = nn.functional.mse_loss(ddp(data), target)
        loss.backward()
        optim.step()  # commits (and counts a step) if every replica did
        committed = manager.current_step() > before
        w = float(model[0].weight.detach().sum())
        print(f"step {manager.current_step()} {int(bool(committed))} "
              f"{time.time():.4f} {w:.6f}", flush=True)
        time.sleep(args.compute_s)  # the rest of a real step
    manager.shutdown(wait=False)
    del store


# ---- the driver --------------------------------------------------------------

class Replica:
    def __init__(self, kind, name, store_port, lh_port, steps, compute_s,
                 log):
        self.log = open(log, "a")
        self.proc = subprocess.Popen(
            [sys.executable, HERE, "--replica", name, "--kind", kind,
             "--store-port", str(store_port), "--lighthouse-port",
             str(lh_port), "--steps", str(steps), "--compute-s",
             str(compute_s)],
            stdout=subprocess.PIPE, stderr=self.log, text=True,
            env=dict(os.environ, OMP_NUM_THREADS="1"))
        self.lines = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            self.lines.append((time.time(), line.split()))

    def read(self):
        pass  # the reader thread keeps self.lines

    def steps(self):
        return [(int(w[1]), int(w[2]), float(w[3]), float(w[4]))
                for _, w in self.lines if w and w[0] == "step"]

    def configures(self):
        return [float(w[1]) for _, w in self.lines if w and w[0] == "configure"]


def column(kind, a, base_port):
    lh_port = base_port
    log = f"/tmp/torchft-{kind}.log"
    open(log, "w").close()
    lh = subprocess.Popen(
        ["torchft_lighthouse", "--min_replicas", "1", "--bind",
         f"[::]:{lh_port}", "--join_timeout_ms", "100",
         "--quorum_tick_ms", "20", "--heartbeat_timeout_ms",
         str(a.heartbeat_ms)],
        stdout=open(log, "a"), stderr=subprocess.STDOUT)
    time.sleep(0.5)
    r0 = Replica(kind, "r0", base_port + 1, lh_port, a.steps, a.compute_s,
                 log)
    r1 = Replica(kind, "r1", base_port + 2, lh_port, a.steps, a.compute_s,
                 log)
    try:
        return drive(a, r0, r1, kind, base_port, lh_port, log)
    finally:
        for p in (r0.proc, r1.proc, lh):
            if p.poll() is None:
                p.kill()
                p.wait()


def wait_for(cond, replicas, limit):
    end = time.time() + limit
    while time.time() < end:
        for r in replicas:
            r.read()
        if cond():
            return True
        time.sleep(0.005)
    return False


def committed_after(r, t):
    return [s for s in r.steps() if s[1] and s[2] > t]


def drive(a, r0, r1, kind, base_port, lh_port, log):
    ok = wait_for(lambda: len(committed_after(r0, 0)) >= a.warm
                  and len(committed_after(r1, 0)) >= 2, [r0, r1], 120)
    if not ok:
        raise SystemExit(f"{kind}: no training before the kill (see {log})")
    before = [s[2] for s in committed_after(r0, 0)]
    step_s = statistics.median(b - x for x, b in zip(before, before[1:]))
    r1.proc.send_signal(signal.SIGKILL)
    killed = time.time()
    confs_before = len(r0.configures())
    ok = wait_for(lambda: committed_after(r0, killed), [r0], 60)
    recovered = committed_after(r0, killed)[0][2] - killed if ok else None
    time.sleep(max(0.0, a.down - (time.time() - killed)))
    r1.proc.wait()
    restarted = time.time()
    r1b = Replica(kind, "r1", base_port + 2, lh_port, a.steps, a.compute_s,
                 log)
    ok = wait_for(lambda: committed_after(r1b, restarted), [r0, r1b], 120)
    rejoined = committed_after(r1b, restarted)[0][2] - restarted if ok else None
    # Weights: r1's and r0's at the same committed step, after the rejoin.
    same = None
    if ok and wait_for(lambda: len(committed_after(r1b, restarted)) >= 3,
                       [r0, r1b], 60):
        step, _, _, w1 = committed_after(r1b, restarted)[2]
        w0 = [s[3] for s in r0.steps() if s[0] == step and s[1]]
        same = bool(w0) and abs(w0[0] - w1) < 1e-4
    confs = r0.configures()[confs_before:] or r0.configures()
    r1b.proc.kill()
    return dict(kind=kind, step_ms=step_s * 1e3,
                recovered_s=recovered, configure_ms=statistics.median(
                    confs) * 1e3, rejoined_s=rejoined, same=same)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--replica")
    ap.add_argument("--kind", default="shoal")
    ap.add_argument("--store-port", type=int)
    ap.add_argument("--lighthouse-port", type=int)
    ap.add_argument("--steps", type=int, default=100000)
    ap.add_argument("--compute-s", type=float, default=0.02)
    ap.add_argument("--warm", type=int, default=20)
    ap.add_argument("--down", type=float, default=3.0)
    ap.add_argument("--heartbeat-ms", type=int, default=500)
    ap.add_argument("--port", type=int, default=29710)
    a = ap.parse_args()
    if a.replica:
        return replica(a)
    rows = [column(k, a, a.port + 10 * i)
            for i, k in enumerate(("gloo", "shoal"))]
    print(f"lighthouse heartbeat timeout {a.heartbeat_ms} ms; two replicas "
          "of one rank; r1 killed after "
          f"{a.warm} steps, restarted {a.down} s later")
    print(f"{'column':15} {'step ms':>8} {'kill->next commit s':>20} "
          f"{'configure ms':>13} {'restart->commit s':>18} {'weights':>8}")
    for r in rows:
        f = (lambda x: "-" if x is None else f"{x:.3f}")
        print(f"torchft-{r['kind']:7} {r['step_ms']:8.1f} "
              f"{f(r['recovered_s']):>20} {r['configure_ms']:13.1f} "
              f"{f(r['rejoined_s']):>18} "
              f"{'same' if r['same'] else 'DIFFER' if r['same'] is False else '-':>8}")


if __name__ == "__main__":
    main()
