"""torch.distributed backend "shoal" without ``import shoal``: torch loads
shoal's "torch.backends" entry point at ``import torch`` and it registers
the backend, so a script that only imports torch can create a group."""

import os
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("torch")

SCRIPT = textwrap.dedent("""
    import sys
    import torch
    import torch.distributed as dist
    assert "shoal" not in sys.modules or "{autoload}" == "1", sys.modules
    print("registered", "SHOAL" in dist.Backend._plugins)
    if "{autoload}" == "1":
        dist.init_process_group("shoal", init_method="tcp://127.0.0.1:0",
                                rank=0, world_size=1)
        t = torch.ones(4)
        dist.all_reduce(t)
        print("sum", float(t.sum()))
        dist.destroy_process_group()
""")


def _run(autoload):
    env = dict(os.environ, TORCH_DEVICE_BACKEND_AUTOLOAD=autoload)
    out = subprocess.run([sys.executable, "-c", SCRIPT.format(
        autoload=autoload)], env=env, capture_output=True, text=True,
        timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_registered_at_import_torch():
    out = _run("1")
    assert "registered True" in out, out
    assert "sum 4.0" in out, out


def test_not_registered_when_autoload_is_off():
    # Then `import shoal` registers it (as before): nothing loads shoal.
    out = _run("0")
    assert "registered False" in out, out
