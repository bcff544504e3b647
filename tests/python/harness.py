"""Rank pools: N Python processes that stay up across tests.

Starting an interpreter (and torch) per test would dominate the run, so
each world size gets one pool of ranks, started on first use. A test sends
a case name and arguments to every rank (a JSON line on its stdin); each
rank runs the function of that name from cases.py on its communicator and
answers with one JSON line. A case that does not answer in time kills the
pool (the next test starts a fresh one) and fails with each rank's stderr.
"""

import array
import json
import os
import resource
import secrets
import selectors
import signal
import socket
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


def _seconds_left(deadline):
    """Seconds until a time.monotonic() deadline; None for no deadline."""
    return None if deadline is None else deadline - time.monotonic()


class _PreloadedRank:
    """A rank forked by the preload server, used as a subprocess.Popen is
    here: communicate(timeout), kill(), returncode, pid."""

    def __init__(self, server, argv, env, cwd):
        self.server = server
        self.returncode = None
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        try:
            self.pid = server.fork(argv, env, cwd, (out_w, err_w))
        finally:
            os.close(out_w)
            os.close(err_w)
        self.pipes = {out_r: [], err_r: []}
        self.out_fd, self.err_fd = out_r, err_r

    def kill(self):
        if self.returncode is None:
            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def communicate(self, timeout=None):
        deadline = None if timeout is None else time.monotonic() + timeout
        sel = selectors.DefaultSelector()
        for fd in self.pipes:
            sel.register(fd, selectors.EVENT_READ)
        try:
            while sel.get_map() or self.returncode is None:
                left = _seconds_left(deadline)
                if left is not None and left <= 0:
                    raise subprocess.TimeoutExpired(self.pid, timeout)
                if not sel.get_map():
                    self.returncode = self.server.wait_exit(self.pid, left)
                    continue
                for key, _ in sel.select(left):
                    chunk = os.read(key.fd, 1 << 16)
                    if chunk:
                        self.pipes[key.fd].append(chunk)
                    else:
                        sel.unregister(key.fd)
        finally:
            sel.close()
        for fd in self.pipes:
            os.close(fd)
        text = [b"".join(self.pipes[fd]).decode(errors="replace")
                for fd in (self.out_fd, self.err_fd)]
        self.pipes = {}
        return text[0], text[1]


class _PreloadServer:
    """The client side of preload.py: one server per test process."""

    def __init__(self):
        from preload import import_time_env
        ours, theirs = socket.socketpair()
        # PYTHONWARNINGS is each rank's own (preload.import_time_env).
        self.env = {k: v for k, v in os.environ.items()
                    if k != "PYTHONWARNINGS"}
        self.env["OMP_NUM_THREADS"] = "1"  # as every rank's (rank_env)
        self.wanted = import_time_env(self.env)
        self.proc = subprocess.Popen(
            [sys.executable, os.path.join(HERE, "preload.py"),
             str(theirs.fileno())], pass_fds=(theirs.fileno(),),
            env=self.env, cwd=HERE, stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL)
        theirs.close()
        self.sock = ours
        self.buffer = b""
        self.exits = {}

    def serves(self, argv, env):
        """Whether a rank of argv and env can be forked here."""
        from preload import import_time_env
        if argv[0] not in ("-c", "-m") and not argv[0].endswith(".py"):
            return False
        if env.get("PYTHONWARNINGS", "ignore") != "ignore":
            return False
        return (self.proc.poll() is None
                and import_time_env(env) == self.wanted)

    def fork(self, argv, env, cwd, fds):
        line = json.dumps({"argv": argv, "env": env, "cwd": cwd}) + "\n"
        self.sock.sendmsg([line.encode()], [(
            socket.SOL_SOCKET, socket.SCM_RIGHTS,
            bytes(array.array("i", fds)))])
        while True:
            words = self._line(None)
            if words[0] == "pid":
                return int(words[1])

    def wait_exit(self, pid, timeout):
        deadline = None if timeout is None else time.monotonic() + timeout
        while pid not in self.exits:
            left = _seconds_left(deadline)
            if left is not None and left <= 0:
                raise subprocess.TimeoutExpired(pid, timeout)
            self._line(left)
        return self.exits.pop(pid)

    def _line(self, timeout):
        """Reads one line of the server's, recording exits; its words."""
        while b"\n" not in self.buffer:
            self.sock.settimeout(timeout)
            try:
                chunk = self.sock.recv(4096)
            except TimeoutError:
                raise subprocess.TimeoutExpired("preload", timeout)
            if not chunk:
                raise RuntimeError("the preload server ended")
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        words = line.decode().split()
        if words[0] == "exit":
            self.exits[int(words[1])] = int(words[2])
        return words

    def close(self):
        self.sock.close()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


_preload = None


def launch(argv, env, cwd=HERE, fresh=False):
    """Starts `python ARGV...` with env: forked from the preload server
    (torch already imported) where that gives the same process, else (or
    where the test needs a fresh interpreter) as a subprocess. Either
    answers communicate(timeout), kill() and returncode as
    subprocess.Popen does, with text output. SHOAL_TEST_PRELOAD=0 turns
    the server off."""
    global _preload
    if not fresh and os.environ.get("SHOAL_TEST_PRELOAD", "1") == "1":
        if _preload is None:
            import atexit
            _preload = _PreloadServer()
            atexit.register(_preload.close)
        if _preload.serves(argv, env):
            return _PreloadedRank(_preload, argv, env, cwd)
    return subprocess.Popen(
        [sys.executable] + argv, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, env=env, cwd=cwd, text=True,
        preexec_fn=_no_core)


def run_python(argv, timeout, env=None, cwd=HERE):
    """`python ARGV...` to its end, as subprocess.run(capture_output=True,
    text=True) would, through launch (one OpenMP thread, as the ranks)."""
    env = dict(os.environ if env is None else env, OMP_NUM_THREADS="1")
    p = launch(argv, env, cwd)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        p.communicate()
        raise
    return subprocess.CompletedProcess(argv, p.returncode, out, err)


def collect(procs, timeout):
    """[(returncode, stdout, stderr)] of processes started together, within
    `timeout` seconds in all; at the deadline every one is killed and the
    stderr of those not done says so."""
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


def spawn(size, code, extra_env=None, timeout=60, store=True, argv=None,
          fresh=False):
    """Runs `code` (a Python program) on `size` new ranks; returns the
    list of (returncode, stdout, stderr). With store=False the ranks get
    TORCHCOMM_RANK/SIZE and TEST_STORE_PORT instead of SHOAL_*. fresh:
    each rank a new interpreter (see launch)."""
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
        if argv is not None and argv[0] == sys.executable:
            procs.append(launch(argv[1:], env, fresh=fresh))
        elif argv is not None:
            procs.append(subprocess.Popen(
                argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                env=env, cwd=HERE, text=True, preexec_fn=_no_core))
        else:
            procs.append(launch(["-c", code], env, fresh=fresh))
    return collect(procs, timeout)
