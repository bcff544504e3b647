"""PyTorch's own distributed test suite, over gloo and over shoal.

torch ships its distributed tests in the wheel
(torch/testing/_internal/distributed/distributed_test.py, class
DistributedTest._DistTestBase); upstream runs them through
test/distributed/test_distributed_spawn.py, which is not in the wheel. This
runner does the same job for three backend columns:

  gloo           the reference (BACKEND=gloo).
  shoal          BACKEND=shoal, with "shoal" added wherever the suite
                 lists gloo: the sets of DistTestCases.backend_feature
                 (and "plugin") and its profiling allowlists, so that its
                 profiler tests look for "shoal:<op>" events. Tests whose
                 decorators test BACKEND == "gloo" directly still skip.
  shoal-as-gloo  shoal (run under gloo's name: every group is a shoal
                 group). BACKEND=gloo, so every skip and every name test
                 behaves as for gloo, but each process group the suite
                 creates is a shoal group: in the rank processes this runner
                 makes torch create "shoal" wherever "gloo" is asked for and
                 records the group under the name asked for, so
                 dist.get_backend() says "gloo". shoal itself never claims
                 to be gloo. The test test_runner_group_types, added here,
                 checks in the ranks which group class each column really
                 got.

Usage (the defaults: every column, world sizes 2 and 3, 60 s a test):

  build/pyenv/bin/python tests/torch_suite/run_suite.py \
      [--backends gloo,shoal,shoal-as-gloo] [--world-sizes 2,3] \
      [-k REGEX] [--timeout SECONDS] [--jobs N] [--json PATH]

Each (column, world size) has a worker process that imports the suite once
(BACKEND and the feature sets are read when it is imported). For each test
the worker forks a driver into its own process group; the driver runs the
test as torch's MultiProcessTestCase does, forking the rank processes. A
test still running after --timeout is killed with its whole process group
and reported as "timeout"; torch's own join timeout is set a little
earlier so that the ranks' stacks are logged first.

Everything a test writes (TEMP_DIR, TMPDIR, torch's store files) lands in
a fresh temporary folder, removed at the end. Ranks run with
OMP_NUM_THREADS=1 and TORCHCOMM_ABORT_ON_ERROR=0 (shoal raises instead of
aborting), and each test gets a free MASTER_PORT.

Output: a line per test and world size (the result in each column), then
the counts per column and world size, the tests gloo passes and
shoal-as-gloo does not (the error's first lines, and the deepest frames of
the suite and of shoal), the tests that fail for both, the slow ones, and
a closing line "N passed, M failed" counted over the (test, world size)
pairs that gloo passes: passed where shoal-as-gloo passes too, failed where
it does not, except the expected differences, each listed with its reason:
the tests of EXPECTED_DIFFERENCES (read by hand: they assert gloo's
wording), and the tests that pass in the shoal column of the same run (the
two shoal columns differ only in the backend name the suite sees, so such
a failure can only come from checking the name; the profiler tests look
for "gloo:<op>" events, for one). The exit status is 0 when M is 0. --json writes every result, with the full error or, for a timeout,
the end of the test's log (the ranks' stacks). `make test-torch-suite`
runs it with the defaults.
"""

import argparse
import gc
import importlib.util
import json
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import types
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "python"))
from harness import free_master_port, port_slice  # noqa: E402

COLUMNS = ("gloo", "shoal", "shoal-as-gloo")
TITLES = {
    "shoal-as-gloo":
        "shoal (run under gloo's name: every group is a shoal group)",
}
STATUSES = ("passed", "failed", "skipped", "timeout")

# Tests shoal-as-gloo may fail where gloo passes because they check gloo's
# exact wording or its backend name, not behaviour: {test name: reason}.
# Add one only after reading the test.
EXPECTED_DIFFERENCES: dict[str, str] = {
    "test_ddp_logging_data_cpu":
        "compares DDP's logged backend_name (the group's own name, "
        "'shoal') with dist.get_backend() ('gloo' by the runner's "
        "mapping); the whole test passes in the shoal column",
}
# The all_reduce_coalesced tests count profiler events named
# "gloo:all_reduce"; shoal's is "shoal:all_reduce". They run only under
# gloo's name (@require_backend_is_available({"gloo"})), so the shoal column
# cannot vouch for them; tests/python's backend_hooks case checks that
# all_reduce_coalesced records one asynchronous "shoal:all_reduce" event
# with every tensor's shape, which is what these tests check under gloo's.
EXPECTED_DIFFERENCES.update({
    f"test_all_reduce_coalesced{group}_{op}":
        "counts profiler events named 'gloo:all_reduce'; shoal records "
        "'shoal:all_reduce' (checked by tests/python backend_hooks)"
    for group in ("", "_full_group")
    for op in ("max", "min", "product", "sum")})

SLOW_SECONDS = 10
SANITY_TEST = "test_runner_group_types"

# torch's MultiProcessTestCase reports a join timeout with this text.
_JOIN_TIMEOUT = re.compile(r"terminated or timed out after [\d.]+ seconds")
# A frame of a traceback, or of a faulthandler dump (no comma before "in")
# as torch logs it (after a prefix).
_FRAME = re.compile(r'\s File "([^"]+)", line (\d+),? in (\S+)')
# Lines after an exception that are not part of its message.
_NOT_MESSAGE = ("Process ", "To execute", "Exception raised from")
_RANK_ERROR = re.compile(r"Process \d+ exited with error code \d+ and "
                         r"exception:\n")

LOG_CHARS = 60000  # of a test's log the worker reads, for the ranks' stacks
DETAIL_CHARS = 6000  # of an error or a timeout log kept in the JSON file
ERROR_CHARS = 300  # of an error's one-line form


# ---- inside a worker: the suite ---------------------------------------------

def _stub_expecttest():
    """torch.testing._internal imports expecttest (a test-only package the
    wheel does not require) for TestCase.assertExpectedInline, which the
    distributed suite never calls: a stand-in spares a dependency."""
    try:
        import expecttest  # noqa: F401
    except ImportError:
        stub = types.ModuleType("expecttest")
        stub.TestCase, stub.ACCEPT = unittest.TestCase, False
        sys.modules["expecttest"] = stub


def _create_gloo_groups_as_shoal():
    """shoal-as-gloo, in a rank process: every group torch would create as
    gloo is created as shoal. All group creation (init_process_group,
    new_group, new_subgroups) goes through _new_process_group_helper or,
    once the default group is shoal, through its own new_group. The group
    is then recorded under the name the suite asked for, so that every test
    of the name (in torch and in the suite) behaves as for gloo."""
    import torch.distributed.distributed_c10d as c10d

    create = c10d._new_process_group_helper

    def create_as_shoal(size, rank, ranks, backend, store, *args, **kwargs):
        asked = str(backend)
        if "gloo" not in asked:
            return create(size, rank, ranks, backend, store, *args, **kwargs)
        pg, pg_store = create(size, rank, ranks,
                              c10d.Backend(asked.replace("gloo", "shoal")),
                              store, *args, **kwargs)
        if pg is not c10d.GroupMember.NON_GROUP_MEMBER:
            c10d._world.pg_map[pg] = (c10d.Backend(asked), pg_store)
            c10d._world.pg_backend_config[pg] = str(c10d.BackendConfig(asked))
        return pg, pg_store

    c10d._new_process_group_helper = create_as_shoal


def _check_group_types(case, column):
    """The body of SANITY_TEST, in each rank: which class each group
    really is (the name alone proves nothing in shoal-as-gloo)."""
    import torch.distributed as dist

    world, sub = dist.group.WORLD, dist.new_group()
    for pg in (world, sub):
        shoal = type(pg).__name__ == "ProcessGroupShoal"
        case.assertEqual(shoal, column != "gloo", f"{column}: {pg!r}")
        case.assertEqual(pg._get_backend_name(),
                         "gloo" if column == "gloo" else "shoal")
    # The suite's name for the group, as get_backend() tells it.
    case.assertEqual(dist.get_backend(), os.environ["BACKEND"])


def _enroll_shoal():
    """The shoal column: "shoal" joins every list of the suite that names
    gloo. The feature sets are read by decorators, so this must come
    before anything else imports distributed_test; the profiling lists are
    read by the tests (which then look for "shoal:<op>" events)."""
    from torch.testing._internal import common_distributed

    features = common_distributed.DistTestCases.backend_feature
    for backends in features.values():
        if "gloo" in backends:
            backends.add("shoal")
    features["plugin"].add("shoal")  # dist.Backend("shoal") is known
    from torch.testing._internal.distributed import distributed_test

    for backends in (distributed_test.PROFILING_SUPPORTED_BACKENDS,
                     distributed_test.CUDA_PROFILING_SUPPORTED_BACKENDS,
                     distributed_test.SEND_RECV_PROFILING_SUPPORTED_BACKENDS):
        backends.append("shoal")


def _load_suite(column):
    """The suite's test class for a column."""
    _stub_expecttest()
    import torch

    if column != "gloo":
        import shoal  # noqa: F401  (registers backend "shoal")
    if column == "shoal":
        _enroll_shoal()
    from torch.testing._internal.distributed.distributed_test import (
        DistributedTest, TestDistBackend)

    fork = torch.multiprocessing.get_context("fork").Process

    class Suite(TestDistBackend, DistributedTest._DistTestBase):
        def setUp(self):
            super().setUp()
            # Forked ranks start in well under a second; spawned ones
            # import torch again each time.
            self._start_processes(fork)

        @classmethod
        def _run(cls, rank, test_name, file_name, pipe, **kwargs):
            if column == "shoal-as-gloo":
                _create_gloo_groups_as_shoal()
            super()._run(rank, test_name, file_name, pipe, **kwargs)

        def test_runner_group_types(self):
            _check_group_types(self, column)

    return Suite


def _set_join_timeout(seconds):
    """torch's MultiProcessTestCase gives up on its ranks after this long
    and logs their stacks; the runner's own kill comes later."""
    from torch.testing._internal import common_distributed

    common_distributed.TIMEOUT_OVERRIDE.clear()
    common_distributed.TIMEOUT_DEFAULT = seconds


def _run_case(suite, name):
    """In the driver: runs one test (its ranks included) as unittest does."""
    os.environ["MASTER_PORT"] = str(free_master_port())
    result = unittest.TestResult()
    suite(name).run(result)
    problems = result.errors + result.failures
    if problems:
        return {"status": "failed", "detail": problems[0][1]}
    if result.unexpectedSuccesses:
        return {"status": "failed", "detail": "unexpected success"}
    if result.skipped:
        return {"status": "skipped", "detail": str(result.skipped[0][1])}
    return {"status": "passed", "detail": ""}


def _drive(suite, name, outcome_path, log_path):
    """The driver child's whole life: never returns."""
    code = 1
    try:
        # The worker's SIGTERM handler would keep torch from terminating
        # the ranks (a Python handler waits for the interpreter).
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        log = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        os.dup2(log, 1)
        os.dup2(log, 2)
        with open(outcome_path, "w") as f:
            json.dump(_run_case(suite, name), f)
        code = 0
    finally:
        os._exit(code)


def _run_isolated(suite, name, timeout, scratch):
    """Runs one test in a forked driver with its own process group; kills
    the group (ranks included) once the test is over or out of time."""
    outcome_path = os.path.join(scratch, "outcome.json")
    log_path = os.path.join(scratch, "test.log")
    if os.path.exists(outcome_path):
        os.unlink(outcome_path)
    start = time.monotonic()
    pid = os.fork()
    if pid == 0:
        os.setpgid(0, 0)
        _drive(suite, name, outcome_path, log_path)
    try:
        os.setpgid(pid, pid)  # also here: the kill below may come first
    except (ProcessLookupError, PermissionError):  # already gone
        pass
    pidfd = os.pidfd_open(pid)
    try:
        finished, _, _ = select.select([pidfd], [], [], timeout)
    finally:
        # The driver is not reaped yet, so its group id is still ours.
        _kill_group(pid)
        os.waitpid(pid, 0)
        os.close(pidfd)
    seconds = round(time.monotonic() - start, 2)
    if not finished:
        outcome = {"status": "timeout", "detail": _tail(log_path)}
    elif not os.path.exists(outcome_path):
        outcome = {"status": "failed",
                   "detail": "the driver died:\n" + _tail(log_path)}
    else:
        with open(outcome_path) as f:
            outcome = json.load(f)
        if _JOIN_TIMEOUT.search(outcome["detail"]):
            outcome = {"status": "timeout", "detail": _tail(log_path)}
    outcome["seconds"] = seconds
    return outcome


def _kill_group(pgid):
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _tail(path):
    try:
        with open(path, errors="replace") as f:
            return f.read()[-LOG_CHARS:]
    except FileNotFoundError:
        return ""


def _skipped_by_decorator(suite, name):
    """Why a test is skipped by its decorators (unittest.skip and the
    suite's skip_but_pass_in_sandcastle_if mark the method or the class),
    or None. unittest skips such a test before its setUp, so it needs no
    driver: forking one (torch loaded) costs about a third of a second,
    and a quarter of the suite's tests (75 of 286 in torch 2.13) are
    skipped so."""
    for holder in (suite, getattr(suite, name)):
        if getattr(holder, "__unittest_skip__", False):
            return getattr(holder, "__unittest_skip_why__", "")
    return None


def worker_main(column, timeout):
    """A worker: says which tests there are, then runs each test named on
    stdin, answering with one JSON line per test on its stdout."""
    answers = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # stray prints from torch go to stderr, not the answers
    # SIGTERM from the runner unwinds, so the running test's group dies.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    suite = _load_suite(column)
    suite.setUpClass()
    _set_join_timeout(timeout * 0.75)
    tests = sorted(n for n in dir(suite) if n.startswith("test"))
    answers.write(json.dumps({"tests": tests}) + "\n")
    # Torch and the suite, loaded, live as long as this worker: in the
    # permanent generation the drivers' and ranks' collections neither walk
    # them nor copy their pages.
    gc.freeze()
    scratch = tempfile.mkdtemp(prefix="driver-")
    for line in sys.stdin:
        name = line.strip()
        why = _skipped_by_decorator(suite, name)
        outcome = (_run_isolated(suite, name, timeout, scratch) if why is None
                   else {"status": "skipped", "detail": why, "seconds": 0.0})
        answers.write(json.dumps(outcome) + "\n")


# ---- the runner: workers ----------------------------------------------------

class Worker:
    """One worker process, for a column and a world size."""

    def __init__(self, column, world_size, timeout, tmp, ports):
        self.column, self.timeout = column, timeout
        home = os.path.join(tmp, f"{column}-{world_size}")
        os.makedirs(os.path.join(home, "tmp"))
        self.stderr_path = os.path.join(home, "worker.log")
        self.env = dict(
            os.environ,
            BACKEND="shoal" if column == "shoal" else "gloo",
            WORLD_SIZE=str(world_size),
            TEMP_DIR=home,
            # Read by the suite at import; a few tests re-initialize the
            # default group through it (a file store in TEMP_DIR).
            INIT_METHOD="file://" + os.path.join(home, "shared_init_file"),
            # Every temporary file of the suite lands in the run's folder.
            TMPDIR=os.path.join(home, "tmp"),
            OMP_NUM_THREADS="1",
            TORCHCOMM_ABORT_ON_ERROR="0",  # shoal raises instead
            PYTORCH_PRINT_REPRO_ON_FAILURE="0",
            SHOAL_STORE_PORTS=ports,  # its own: workers run side by side
        )
        self.tests = self._start()

    def _start(self):
        """Starts the worker process; returns the suite's test names."""
        with open(self.stderr_path, "a") as err:
            self.proc = subprocess.Popen(
                [sys.executable, os.path.abspath(__file__), "--worker",
                 self.column, "--timeout", str(self.timeout)],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err,
                env=self.env, text=True)
        # Importing torch and the suite: generous, but bounded.
        hello = self._answer(300)
        return hello["tests"] if hello else []

    def send(self, name):
        if self.proc.poll() is not None:  # killed as stuck: a fresh one
            self._start()
        try:
            self.proc.stdin.write(name + "\n")
            self.proc.stdin.flush()
        except BrokenPipeError:  # died just now: receive() reports it
            pass

    def receive(self):
        """The answer to send(); a dead or stuck worker is a failure."""
        answer = self._answer(self.timeout + 60)
        if answer is not None:
            return answer
        self.close()
        detail = "runner: the worker died or hung:\n" + _tail(self.stderr_path)
        return {"status": "failed", "detail": detail, "seconds": 0}

    def _answer(self, limit):
        if self.proc.poll() is not None:
            return None
        timer = threading.Timer(limit, self._stop)
        timer.start()
        try:
            line = self.proc.stdout.readline()
        finally:
            timer.cancel()
        return json.loads(line) if line else None

    def _stop(self):
        self.proc.terminate()  # its handler kills the running test first
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def close(self):
        if self.proc.poll() is None:
            self.proc.stdin.close()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self._stop()


# ---- the runner: results ----------------------------------------------------

def _exception_line(traceback_text):
    """The exception of a traceback (the first line that follows its last
    frame unindented) and the next line of its message: torch's
    assertions put the numbers there."""
    lines = traceback_text.splitlines()
    frames = [i for i, line in enumerate(lines) if _FRAME.search(line)]
    after = frames[-1] + 1 if frames else 0
    start = next((i for i in range(after, len(lines))
                  if lines[i].strip() and not lines[i].startswith(" ")), None)
    if start is None:
        return lines[-1].strip() if lines else ""
    message = [lines[start].strip()]
    for line in lines[start + 1:]:
        if line.startswith(_NOT_MESSAGE) or len(message) == 2:
            break
        if line.strip():
            message.append(line.strip())
    return " ".join(message)[:ERROR_CHARS]


def _first_rank_error(detail):
    """Of torch's report of failed ranks, the first rank's traceback."""
    found = _RANK_ERROR.search(detail)
    if not found:
        return detail
    rest = detail[found.end():]
    following = re.search(r"\nProcess \d+ exited with error code", rest)
    return rest[:following.start()] if following else rest


def _where(text, newest_first=False):
    """The deepest frames of the suite and of shoal's Python package: the
    last ones of a traceback, the first ones of the stack dumps torch logs
    for a timeout (newest_first)."""
    frames = [m for m in map(_FRAME.search, text.splitlines()) if m]
    if not newest_first:
        frames.reverse()
    places = []
    for part in ("/distributed_test.py", "/shoal/"):
        frame = next((f for f in frames if part in f.group(1)), None)
        if frame:
            path = frame.group(1)
            short = ("shoal/" + path.rsplit(part, 1)[1] if part == "/shoal/"
                     else os.path.basename(path))
            places.append(f"{short}:{frame.group(2)} in {frame.group(3)}")
    return "; ".join(places)


def _describe(outcome):
    """Adds the short forms of a result: its error line and where it
    happened (the suite's frame, and shoal's if any)."""
    detail = outcome.get("detail", "")
    status = outcome["status"]
    if status == "failed":
        rank_error = _first_rank_error(detail)
        outcome["error"] = _exception_line(rank_error)
        outcome["where"] = _where(rank_error)
    elif status == "timeout":
        outcome["error"] = f"timeout after {outcome['seconds']} s"
        outcome["where"] = _where(detail, newest_first=True)
    elif status == "skipped":
        outcome["error"] = detail.splitlines()[0] if detail else ""
    outcome["detail"] = detail[:DETAIL_CHARS]
    return outcome


def _test_line(name, world_size, row, columns, width):
    cells = []
    for column in columns:
        r = row.get(column)
        cell = r["status"] if r else "-"
        if r and r["seconds"] > SLOW_SECONDS:
            cell += f" {r['seconds']:.0f}s"
        cells.append(f"{cell:<14}")
    return f"{name:<{width}} {world_size}  " + "".join(cells).rstrip()


def _run_all(args, tmp):
    """Runs every test in every column; returns results[ws][test][column]."""
    results = {}
    for world_size in args.world_sizes:
        workers = [Worker(c, world_size, args.timeout, tmp,
                          port_slice(i, len(args.backends)))
                   for i, c in enumerate(args.backends)]
        try:
            tests = sorted({t for w in workers for t in w.tests
                            if re.search(args.k, t)})
            width = max([len(t) for t in tests] + [40])
            print(f"\n{'test':<{width}} ws  "
                  + "".join(f"{c:<14}" for c in args.backends), flush=True)
            results[world_size] = {}
            for name in tests:
                row = results[world_size][name] = {}
                for start in range(0, len(workers), args.jobs):
                    batch = workers[start:start + args.jobs]
                    for w in batch:
                        w.send(name)
                    for w in batch:
                        row[w.column] = _describe(w.receive())
                print(_test_line(name, world_size, row, args.backends, width),
                      flush=True)
        finally:
            for w in workers:
                w.close()
    return results


def _pairs(results):
    for world_size, tests in results.items():
        for name, row in tests.items():
            yield world_size, name, row


def _print_counts(results, columns):
    print(f"{'backend':<15} ws " + "".join(f"{s:>9}" for s in STATUSES))
    for column in columns:
        for world_size, tests in results.items():
            counts = {s: 0 for s in STATUSES}
            for row in tests.values():
                if column in row:
                    counts[row[column]["status"]] += 1
            print(f"{column:<15} {world_size:>2} "
                  + "".join(f"{counts[s]:>9}" for s in STATUSES))


def _print_listing(title, entries):
    """entries: (test, world size, result); one line per test and error."""
    merged = {}
    for name, world_size, r in entries:
        key = (name, r["status"], r.get("error", ""), r.get("where", ""))
        merged.setdefault(key, []).append(str(world_size))
    print(f"\n{title}: {len(merged)}")
    for (name, status, error, where), sizes in sorted(merged.items()):
        place = f"  [{where}]" if where else ""
        print(f"  {name} (ws {','.join(sizes)}) {status}: {error}{place}")


# Why a failure under gloo's name is only about the name, when the same
# test passes in the shoal column of the same run: the two runs differ in
# nothing but the backend's name the suite sees (the profiler tests, for
# one, look for events named "<dist.get_backend()>:<op>", and shoal's are
# "shoal:<op>").
NAME_ONLY = ("passes in the shoal column of this run, which differs only "
             "in the backend name the suite sees: the test checks the name")


def _difference_reason(name, row):
    """Why a shoal-as-gloo failure of a test gloo passes is expected, or
    None when it is a real failure."""
    if name in EXPECTED_DIFFERENCES:
        return EXPECTED_DIFFERENCES[name]
    if row.get("shoal", {}).get("status") == "passed":
        return NAME_ONLY
    return None


def _verdict(results):
    """(passed, failed, expected) over pairs gloo passes, for shoal-as-gloo;
    expected entries carry their reason."""
    passed, failed, expected = [], [], []
    for world_size, name, row in _pairs(results):
        gloo, shoal = row.get("gloo"), row.get("shoal-as-gloo")
        if not gloo or not shoal or gloo["status"] != "passed":
            continue
        reason = _difference_reason(name, row)
        if shoal["status"] == "passed":
            passed.append((name, world_size, shoal))
        elif reason is not None:
            expected.append((name, world_size, dict(shoal, reason=reason)))
        else:
            failed.append((name, world_size, shoal))
    return passed, failed, expected


def _print_sanity(results, columns):
    """What SANITY_TEST found in the ranks: is each column's group the
    class it claims (ProcessGroupShoal for both shoal columns)?"""
    for world_size, tests in results.items():
        row = tests.get(SANITY_TEST)
        if row:
            found = ", ".join(f"{c} {row[c]['status']}"
                              for c in columns if c in row)
            print(f"group classes checked in the ranks ({SANITY_TEST}, "
                  f"ws {world_size}): {found}")


def _print_summary(results, columns):
    print()
    _print_sanity(results, columns)
    _print_counts(results, columns)
    if "gloo" not in columns or "shoal-as-gloo" not in columns:
        return
    _, failed, expected = _verdict(results)
    _print_listing("gloo passes, shoal-as-gloo does not", failed)
    if expected:
        print("\nexpected differences (they check gloo's name or wording):")
        for name, world_size, r in sorted(expected, key=lambda e: e[:2]):
            print(f"  {name} (ws {world_size}): {r['reason']}\n"
                  f"      {r.get('error', '')[:160]}")
    both = [(name, ws, row["shoal-as-gloo"])
            for ws, name, row in _pairs(results)
            if row.get("gloo", {}).get("status") in ("failed", "timeout")
            and row.get("shoal-as-gloo", {}).get("status")
            in ("failed", "timeout")]
    _print_listing("failed for both gloo and shoal-as-gloo", both)


def _print_slow(results, columns):
    slow = [(ws, name, row) for ws, name, row in _pairs(results)
            if any(r["seconds"] > SLOW_SECONDS
                   for c, r in row.items() if c != "gloo")]
    print(f"\nslow for shoal (> {SLOW_SECONDS} s): {len(slow)}")
    for ws, name, row in slow:
        times = "  ".join(f"{c} {row[c]['seconds']:.1f}s"
                          for c in columns if c in row)
        print(f"  {name} (ws {ws}): {times}")


def _write_json(path, args, results, wall, reinstalled):
    flat = [dict(test=name, world_size=ws, backend=column, **r)
            for ws, name, row in _pairs(results)
            for column, r in row.items()]
    data = {"backends": args.backends, "world_sizes": args.world_sizes,
            "timeout": args.timeout, "pattern": args.k,
            "titles": {c: TITLES.get(c, c) for c in args.backends},
            "wall_seconds": wall, "shoal_reinstalled_during_run": reinstalled,
            "expected_differences": EXPECTED_DIFFERENCES,
            "results": flat}
    with open(path, "w") as f:
        json.dump(data, f, indent=1)


def _shoal_install():
    """Where shoal is installed, and a stamp of its files: a run during
    which someone reinstalled it (make python-env) mixes two versions."""
    spec = importlib.util.find_spec("shoal")
    if spec is None or not spec.submodule_search_locations:
        return None, None
    root = spec.submodule_search_locations[0]
    stamp = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(files):
            st = os.stat(os.path.join(folder, name))
            stamp.append((folder, name, st.st_size, st.st_mtime_ns))
    return root, stamp


def _shm_entries():
    try:
        return set(os.listdir("/dev/shm"))
    except FileNotFoundError:
        return set()


def _parse_args(argv):
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--backends", default=",".join(COLUMNS),
                   type=lambda s: s.split(","),
                   help="columns to run: gloo, shoal, shoal-as-gloo")
    p.add_argument("--world-sizes", default="2,3",
                   type=lambda s: [int(n) for n in s.split(",")])
    p.add_argument("-k", default="", metavar="REGEX",
                   help="run only the tests whose name matches")
    p.add_argument("--timeout", type=float, default=60,
                   help="seconds a test may take (default 60)")
    p.add_argument("--jobs", type=int, default=1,
                   help="columns of one test run at once (default 1)")
    p.add_argument("--json", metavar="PATH", help="write every result here")
    p.add_argument("--worker", choices=COLUMNS, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    unknown = set(args.backends) - set(COLUMNS)
    if unknown:
        p.error(f"unknown backends: {', '.join(sorted(unknown))}")
    if args.jobs < 1:
        p.error("--jobs must be at least 1")
    return args


def main(argv=None):
    args = _parse_args(argv)
    if args.worker:
        return worker_main(args.worker, args.timeout)
    for column in args.backends:
        print(f"{column}: {TITLES.get(column, column)}")
    shoal_root, shoal_stamp = _shoal_install()
    print(f"shoal installed in {shoal_root or '(nowhere)'}")
    shm_before = _shm_entries()
    tmp = tempfile.mkdtemp(prefix="torch-suite-")
    start = time.monotonic()
    try:
        results = _run_all(args, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    wall = round(time.monotonic() - start, 1)
    _print_summary(results, args.backends)
    _print_slow(results, args.backends)
    reinstalled = _shoal_install()[1] != shoal_stamp
    if args.json:
        _write_json(args.json, args, results, wall, reinstalled)
    if reinstalled:
        print("\nwarning: shoal was reinstalled during the run; its results "
              "mix two versions")
    left = _shm_entries() - shm_before
    if left:  # shoal uses memfds; anything here came from somewhere else
        print(f"\nnew in /dev/shm during the run: {', '.join(sorted(left))}")
    print(f"\nwall time {wall} s")
    passed, failed, _ = _verdict(results)
    print(f"{len(passed)} passed, {len(failed)} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
