"""A fork server with torch already imported, for the tests' rank processes.

Importing torch costs a rank process about 2.5 s of CPU, and the suite
starts a few hundred of them on a 2-core machine: most of its time. So
each pytest worker starts this server once; it imports torch and then
forks a rank for each request, which runs its program as the interpreter
would (`-c CODE`, `-m MODULE` or a script, with its argv, environment,
working directory and stdout/stderr pipes) and exits with its status.

The protocol, over a Unix socket pair: a request is one JSON line
{"argv", "env", "cwd"} sent with the rank's stdout and stderr as
SCM_RIGHTS descriptors; the server answers "pid <pid>\\n" at once and
"exit <pid> <status>\\n" when the rank ended (the negative signal number
where a signal ended it, as subprocess says). harness._PreloadServer is
the client, and only sends a request whose environment matches the
server's in every variable read while torch is imported (IMPORT_TIME
below); others run as ordinary subprocesses.

The server is single-threaded (forking a threaded process is unsafe) and
ends when its client closes the socket.
"""

import array
import gc
import json
import os
import selectors
import signal
import socket
import sys

# Variables read while the interpreter starts or torch is imported (the
# OpenMP runtime reads OMP_* when it loads): a rank is forked only where
# these equal the server's own.
IMPORT_TIME = ("TORCH_", "PYTORCH_", "OMP_", "MKL_", "KMP_", "GOMP_", "LD_",
               "PYTHON", "MALLOC")


def import_time_env(env):
    """The variables of env that must equal the server's for a fork. Not
    PYTHONWARNINGS: a rank applies its own (_become_rank)."""
    return {k: v for k, v in env.items()
            if k.startswith(IMPORT_TIME) and k != "PYTHONWARNINGS"}


def _receive(conn):
    """One request: (dict, [stdout fd, stderr fd]), or None at EOF."""
    fds = array.array("i")
    data = b""
    while not data.endswith(b"\n"):
        msg, anc, _, _ = conn.recvmsg(1 << 16, socket.CMSG_SPACE(
            2 * fds.itemsize))
        if not msg:
            return None
        data += msg
        for level, kind, payload in anc:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                fds.frombytes(payload[:len(payload) - len(payload)
                                      % fds.itemsize])
    return json.loads(data), list(fds)


def _become_rank(conn, wake_r, wake_w, request, fds):
    """In the forked child: takes on the request's process state."""
    signal.set_wakeup_fd(-1)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    conn.close()
    for f in (wake_r, wake_w):
        os.close(f)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(fds[0], 1)
    os.dup2(fds[1], 2)
    for f in (null, *fds):
        os.close(f)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    if request["env"].get("PYTHONWARNINGS") == "ignore":
        import warnings
        warnings.simplefilter("ignore")
    import resource
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def _serve(conn):
    """Forks a rank per request; returns its request in the child, None in
    the server when the client is gone."""
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    sel = selectors.DefaultSelector()
    sel.register(conn, selectors.EVENT_READ)
    sel.register(wake_r, selectors.EVENT_READ)
    ranks = set()
    while True:
        for key, _ in sel.select():
            if key.fileobj == wake_r:
                os.read(wake_r, 4096)
                try:
                    _reap(conn, ranks)
                except OSError:
                    return None
                continue
            try:
                got = _receive(conn)
            except OSError:
                got = None
            if got is None:
                return None
            request, fds = got
            sys.stdout.flush()
            sys.stderr.flush()
            pid = os.fork()
            if pid == 0:
                sel.close()
                _become_rank(conn, wake_r, wake_w, request, fds)
                return request
            for f in fds:
                os.close(f)
            ranks.add(pid)
            try:
                conn.sendall(f"pid {pid}\n".encode())
                _reap(conn, ranks)
            except OSError:  # the client is gone
                return None


def _reap(conn, ranks):
    for pid in list(ranks):
        done, status = os.waitpid(pid, os.WNOHANG)
        if done == 0:
            continue
        ranks.discard(pid)
        code = (-os.WTERMSIG(status) if os.WIFSIGNALED(status)
                else os.WEXITSTATUS(status))
        conn.sendall(f"exit {pid} {code}\n".encode())


def _run_as_main(source, filename):
    """Runs source as the program's __main__ module (so that pickling and
    multiprocessing find what it defines, as under `python`)."""
    import types
    main = types.ModuleType("__main__")
    main.__file__ = filename
    main.__builtins__ = __builtins__
    sys.modules["__main__"] = main
    exec(compile(source, filename, "exec"), main.__dict__)


def _run(argv):
    """Runs argv as `python ARGV...` would, in this process."""
    if argv[0] == "-c":
        sys.argv = ["-c"] + argv[2:]
        sys.path[0] = ""
        _run_as_main(argv[1], "<string>")
    elif argv[0] == "-m":
        import runpy
        sys.argv = argv[1:]
        sys.path[0] = os.getcwd()
        runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
    else:
        sys.argv = argv
        path = os.path.abspath(argv[0])
        sys.path[0] = os.path.dirname(path)
        with open(path, encoding="utf-8") as f:
            source = f.read()
        _run_as_main(source, argv[0])


def main():
    conn = socket.socket(fileno=int(sys.argv[1]))
    # torch imports its backends' packages (shoal among them) as it loads;
    # each rank does that itself, under its own environment.
    autoload = os.environ.pop("TORCH_DEVICE_BACKEND_AUTOLOAD", None)
    os.environ["TORCH_DEVICE_BACKEND_AUTOLOAD"] = "0"
    import torch  # the point of this server
    del os.environ["TORCH_DEVICE_BACKEND_AUTOLOAD"]
    if autoload is not None:
        os.environ["TORCH_DEVICE_BACKEND_AUTOLOAD"] = autoload
    assert "shoal" not in sys.modules
    # What is alive now lives as long as the server: in the permanent
    # generation the ranks' collections neither walk it nor write to its
    # pages (each rank would copy them), about a quarter of a rank's CPU.
    gc.freeze()
    request = _serve(conn)
    if request is None:
        return
    if torch._is_device_backend_autoload_enabled():
        torch._import_device_backends()
    _run(request["argv"])


if __name__ == "__main__":
    main()
