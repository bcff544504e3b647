"""python -m shoal.bench --quick runs on its own ranks and prints its
tables and the targets block (a smoke test: the numbers are not judged)."""

import subprocess
import sys

import pytest

pytest.importorskip("torch")


@pytest.mark.full  # a smoke test of the benchmark, not of shoal
def test_bench_quick_prints_the_tables():
    p = subprocess.run(
        [sys.executable, "-m", "shoal.bench", "--quick", "--iters", "3",
         "--warmup", "1"], capture_output=True, text=True, timeout=240)
    out = p.stdout
    assert p.returncode == 0, out + p.stderr
    for title in ("# all_reduce float32 sum, 2 ranks", "# all_gather",
                  "# reduce_scatter", "# targets"):
        assert title in out, out
    rows = {line.split()[0]: line.split() for line in out.splitlines()
            if line and not line.startswith("#")}
    assert {"4", "65536", "1048576"} <= set(rows), out
    assert len(rows["4"]) >= 7 and "wrong" not in out
    assert "4 B all_reduce, shoal API" in out
    late = out.split("# the late rank after a gloo barrier")[1]
    assert all(f"  {v} " in late for v in ("gloo", "dist:shoal", "shoal"))
    assert "the late rank <= 1.5x back to back" in out
