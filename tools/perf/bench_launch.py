"""What the Python benchmarks here share when they launch their ranks:
the ranks themselves (the script again under shoalrun, with a free port
for the rendezvous store), the options that tell a rank from the
launcher, and busy processes beside the ranks. The benchmarks run as
scripts from this folder, which is then on their import path."""

import argparse
import contextlib
import os
import socket
import subprocess
import sys


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


def run_ranks(script, n, argv, env=None, timeout=1800):
    """Runs `script` on n local ranks under shoalrun, each given --port
    (a free port for the rendezvous store) and argv; returns its exit
    status."""
    from shoal.run import tool_path

    cmd = [tool_path("shoalrun"), "-n", str(n), sys.executable,
           os.path.abspath(script), "--port", str(free_port())] + argv
    return subprocess.run(cmd, env=env, timeout=timeout).returncode


def run_main(parser, worker, launch):
    """Adds the hidden options a rank gets (--worker, and run_ranks'
    --port), parses the command line and runs worker(args) on a rank,
    launch(args) otherwise."""
    parser.add_argument("--worker", action="store_true",
                        help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, default=0,
                        help=argparse.SUPPRESS)
    args = parser.parse_args()
    return worker(args) if args.worker else launch(args)
