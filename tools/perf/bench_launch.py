"""What the Python benchmarks here share when they launch their ranks:
a free port for the rendezvous store, and busy processes beside the
ranks. The benchmarks run as scripts from this folder, which is then on
their import path."""

import contextlib
import socket
import subprocess


def free_port():
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def busy_processes(n):
    """n processes spinning a shell loop (a CPU each) for the block."""
    busy = [subprocess.Popen(["sh", "-c", "while :; do :; done"])
            for _ in range(n)]
    try:
        yield busy
    finally:
        for b in busy:
            b.kill()
            b.wait()
