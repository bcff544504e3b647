"""Rank pools: N Python processes that stay up across tests.

Starting an interpreter (and torch) per test would dominate the run, so
each world size gets one pool of ranks, started on first use. A test sends
a case name and arguments to every rank (a JSON line on its stdin); each
rank runs the function of that name from cases.py on its communicator and
answers with one JSON line. A case that does not answer in time kills the
pool (the next test starts a fresh one) and fails with each rank's stderr.
"""

import json
import os
import resource
import secrets
import selectors
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
BUILD = os.environ.get("SHOAL_BUILD_DIR",
                       os.path.join(HERE, "..", "..", "build"))


def tool_path(name):
    """A shoal tool (shoalrun, shoal-tune): the build tree's, else the
    installed package's."""
    path = os.path.join(BUILD, "tools", name)
    if os.access(path, os.X_OK):
        return path
    import shoal.run
    return shoal.run.tool_path(name)


def free_port(span=1):
    """A port on 127.0.0.1 (and the span - 1 after it) that nothing uses
    now: shoal's own choice for rank 0's store (shoal._bootstrap)."""
    from shoal._bootstrap import free_port as free_on
    return free_on("127.0.0.1", span)


def port_slice(index, count):
    """The index-th of count disjoint slices of SHOAL_STORE_PORTS, as its
    value: for processes that run tests side by side, so that no two draw
    the same port between one's check and its server's bind."""
    from shoal import _env
    low, high = _env.store_ports()
    width = (high - low + 1) // count
    first = low + index * width
    return f"{first}-{first + width - 1}"


def free_master_port():
    """A port p with p + 1 free too: under torchrun's variables shoal's store
    listens on MASTER_PORT + 1, and with tests running side by side a taken
    p + 1 would leave the job without a store."""
    return free_port(span=2)


def rank_env(rank, size, store, secret, extra=None):
    env = dict(os.environ)
    for name in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT",
                 "TORCHCOMM_RANK", "TORCHCOMM_SIZE"):
        env.pop(name, None)
    env.update(SHOAL_RANK=str(rank), SHOAL_SIZE=str(size), SHOAL_STORE=store,
               SHOAL_SECRET=secret, TORCHCOMM_ABORT_ON_ERROR="0",
               TORCHCOMM_TIMEOUT_SECONDS="30", OMP_NUM_THREADS="1")
    env.update(extra or {})
    return env


class CaseFailed(AssertionError):
    pass


class RankPool:
    def __init__(self, size, extra_env=None):
        self.size = size
        store = f"127.0.0.1:{free_port()}"
        secret = secrets.token_hex(16)
        self.logs = []
        self.procs = []
        for r in range(size):
            log = tempfile.TemporaryFile(mode="w+")
            self.logs.append(log)
            self.procs.append(subprocess.Popen(
                [sys.executable, "-u", os.path.join(HERE, "rank_worker.py")],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log,
                env=rank_env(r, size, store, secret, extra_env), cwd=HERE,
                text=True))

    def alive(self):
        return all(p.poll() is None for p in self.procs)

    def run(self, case, *args, timeout=90):
        """Runs case(state, *args) on every rank; returns the replies."""
        line = json.dumps({"case": case, "args": list(args)}) + "\n"
        for p in self.procs:
            p.stdin.write(line)
            p.stdin.flush()
        replies = [None] * self.size
        sel = selectors.DefaultSelector()
        for r, p in enumerate(self.procs):
            sel.register(p.stdout, selectors.EVENT_READ, r)
        deadline = time.monotonic() + timeout
        try:
            while any(x is None for x in replies):
                left = deadline - time.monotonic()
                if left <= 0:
                    raise self._fail(case, f"no answer within {timeout} s")
                for key, _ in sel.select(left):
                    r = key.data
                    text = self.procs[r].stdout.readline()
                    if not text:
                        raise self._fail(case, f"rank {r} exited "
                                         f"({self.procs[r].wait()})")
                    replies[r] = json.loads(text)
                    sel.unregister(key.fileobj)
        finally:
            sel.close()
        return replies

    def check(self, case, *args, timeout=90):
        """As run, but fails unless every rank succeeded; returns values."""
        replies = self.run(case, *args, timeout=timeout)
        errors = [f"--- rank {r}:\n{x['error']}"
                  for r, x in enumerate(replies) if not x["ok"]]
        if errors:
            raise CaseFailed(f"{case}{tuple(args)} on {self.size} ranks:\n"
                             + "\n".join(errors))
        return [x["value"] for x in replies]

    def _fail(self, case, why):
        self.close(kill=True)
        tails = []
        for r, log in enumerate(self.logs):
            log.seek(0)
            tails.append(f"--- rank {r} stderr:\n{log.read()[-3000:]}")
        return CaseFailed(f"{case} on {self.size} ranks: {why}\n"
                          + "\n".join(tails))

    def close(self, kill=False):
        for p in self.procs:
            if p.poll() is None and not kill:
                try:
                    p.stdin.write(json.dumps({"case": "__exit__"}) + "\n")
                    p.stdin.flush()
                except OSError:
                    pass
        deadline = time.monotonic() + (0 if kill else 20)
        for p in self.procs:
            try:
                p.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
            for f in (p.stdin, p.stdout):
                try:
                    f.close()
                except OSError:
                    pass


class Pools:
    """One RankPool per world size, restarted when a case killed it.
    `extra_env`, when given, makes each new pool's extra environment."""

    def __init__(self, extra_env=None):
        self.pools = {}
        self.extra_env = extra_env

    def get(self, size):
        pool = self.pools.get(size)
        if pool is None or not pool.alive():
            if pool is not None:
                pool.close(kill=True)
            env = self.extra_env() if self.extra_env else None
            pool = self.pools[size] = RankPool(size, env)
        return pool

    def close(self):
        for pool in self.pools.values():
            pool.close()
        self.pools.clear()


def _no_core():
    # Cases that end in abort() must not leave core files behind.
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def spawn(size, code, extra_env=None, timeout=60, store=True, argv=None):
    """Runs `code` (a Python program) on `size` fresh ranks; returns the
    list of (returncode, stdout, stderr). With store=False the ranks get
    TORCHCOMM_RANK/SIZE and TEST_STORE_PORT instead of SHOAL_*."""
    port = free_port()
    secret = secrets.token_hex(16)
    procs = []
    for r in range(size):
        env = rank_env(r, size, f"127.0.0.1:{port}", secret, extra_env)
        if not store:
            for name in ("SHOAL_RANK", "SHOAL_SIZE", "SHOAL_STORE"):
                env.pop(name)
            env.update(TORCHCOMM_RANK=str(r), TORCHCOMM_SIZE=str(size),
                       TEST_STORE_PORT=str(port))
        procs.append(subprocess.Popen(
            argv or [sys.executable, "-c", code], stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, env=env, cwd=HERE, text=True,
            preexec_fn=_no_core))
    out = []
    deadline = time.monotonic() + timeout
    for p in procs:
        try:
            o, e = p.communicate(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            for q in procs:
                q.kill()
            o, e = p.communicate()
            e += "\n[killed: timeout]"
        out.append((p.returncode, o, e))
    return out
