"""tools/perf/plot_tables.py and python -m shoal.bench --plot: the tables
of compare.sh and shoal.bench parsed into lines (by their column headers)
and drawn as a PNG. The samples are real output of both runners, cut
short; the oneCCL one adds a library column the way compare.sh's
side_by_side prints one."""

import importlib.util
import os
import subprocess
import sys

import pytest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
SCRIPT = os.path.join(ROOT, "tools", "perf", "plot_tables.py")


def _load():
    # By path, as the script does: the checkout's module, not an installed
    # shoal's, and without the C extension.
    path = os.path.join(ROOT, "python", "shoal", "_plot.py")
    spec = importlib.util.spec_from_file_location("shoal_plot_test", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


plot = _load()

COMPARE = """\
# compare.sh: shoal vs Open MPI and MPICH, 2 ranks on vm, 2 cpus, 2026-11-26 17:15 UTC, mode full
# load average before the run: 1.05 0.66 0.34
# Open MPI: vader BTL, default single-copy mechanism (CMA)
# MPICH not installed (Debian: mpich libmpich-dev, for mpicc.mpich and mpirun.mpich): MPICH columns N/A
# mpi_bench: 2 ranks, MPI 3.1, Open MPI v4.1.4, package: Debian OpenMPI, ident: 4.1.4, repo rev: v4.1.4, May 26, 2022
# nranks 2 minBytes 8 maxBytes 262144 step: 2(factor) warmup iters: 5 iters: 10 validation: 1 datatype: float32 redop: sum root: 0
# iterations: 10 per size up to 107374182 B, then as many as fit 1073741824 B (iterations x size), at least 10
#  Rank  0 Pid    9369 on         vm cpus 2
#  Rank  1 Pid    9370 on         vm cpus 2
# load average after the run: 1.05 0.67 0.34
#
# allreduce (float32 sum; malloc and shoal_alloc buffers)
#       size      shoal      shoal    OpenMPI      MPICH     malloc        shm     malloc        shm     malloc        shm    OpenMPI  malloc bw     shm bw     memcpy  malloc bw     shm bw
#        (B)     malloc        shm       (us)       (us)      /OMPI      /OMPI     /MPICH     /MPICH      busbw      busbw      busbw      /OMPI      /OMPI     (GB/s)    /memcpy    /memcpy
# times in us, busbw in GB/s; ratios: time shoal/OMPI and shoal/MPICH (< 1: shoal faster), busbw shoal/OMPI and shoal/memcpy
           8       0.96       0.91       0.82        N/A       1.16       1.10        N/A        N/A      0.008      0.009      0.010       0.86       0.91       1.61      0.005      0.005
          16       0.85       0.92       0.72        N/A       1.19       1.29        N/A        N/A      0.019      0.017      0.022       0.84       0.78       2.86      0.007      0.006
       65536     204.60       6.12      19.89        N/A      10.29       0.31        N/A        N/A      0.320     10.708      3.295       0.10       3.25      30.35      0.011      0.353
      262144     267.40      19.86      61.22        N/A       4.37       0.32        N/A        N/A      0.980     13.200      4.282       0.23       3.08      29.47      0.033      0.448
#
# allgather (size = total of all blocks)
#       size      shoal    OpenMPI      MPICH     shoal/     shoal/      shoal    OpenMPI      busbw     memcpy      busbw
#        (B)       (us)       (us)       (us)    OpenMPI      MPICH      busbw      busbw      /OMPI     (GB/s)    /memcpy
# times in us, busbw in GB/s; ratios: time shoal/OMPI and shoal/MPICH (< 1: shoal faster), busbw shoal/OMPI and shoal/memcpy
           8       0.87    7975.74        N/A       0.00        N/A      0.005      0.000    9167.52       1.41      0.003
          16       0.85       0.59        N/A       1.45        N/A      0.009      0.014       0.69       2.52      0.004
          32       0.93       0.80        N/A       1.16        N/A      0.017      0.020       0.86       5.61      0.003
#
# targets (2 ranks; float32 sum; busbw in GB/s; times are medians)
# NOT MET  allreduce 8 B: time <= 0.8 x Open MPI                shoal 0.96 us, Open MPI 0.825 us: 1.16x
# MET      allreduce 8 B: time <= 1 us                          shoal 0.96 us
"""  # noqa: E501

ONECCL = """\
# compare.sh: shoal vs Open MPI, MPICH, oneCCL and DeepSpeed, 2 ranks on vm, 2 cpus, 2026-11-26 17:30 UTC, mode full
#
# allgather (size = total of all blocks)
#       size      shoal    OpenMPI      MPICH     oneCCL     shoal/     shoal/     shoal/      shoal    OpenMPI      busbw     memcpy      busbw
#        (B)       (us)       (us)       (us)       (us)    OpenMPI      MPICH     oneCCL      busbw      busbw      /OMPI     (GB/s)    /memcpy
# times in us, busbw in GB/s; ratios: time shoal/OMPI, shoal/MPICH and shoal/oneCCL (< 1: shoal faster), busbw shoal/OMPI and shoal/memcpy
          16       0.85       0.59        N/A       1.20       1.44        N/A       0.71      0.009      0.014       0.69       2.52      0.004
# ^ oneCCL delivered 3 wrong elements
          64       0.90       0.61        N/A       1.35       1.48        N/A       0.67      0.036      0.052       0.68      14.00      0.003
         256       1.05       0.70        N/A       1.50       1.50        N/A       0.70      0.122      0.183       0.67      36.00      0.003
"""  # noqa: E501

BENCH = """\
# shoal.bench: 2 ranks on vm (2 cpus), torch 2.13.0+cpu, shoal 0.1.0; load average 2.24 at start; 0 busy processes beside the ranks
# per iteration a barrier, then every rank times the operation alone; max over ranks; median over iterations
# gloo, dist:shoal: torch.distributed over gloo / backend 'shoal'; shoal: the shoal API on ordinary tensors;
# shoal.empty: the shoal API on shoal.empty tensors; memcpy: every rank copying the same bytes at once (torch copy_)
#
# all_reduce float32 sum, 2 ranks
#       size  iters        gloo  dist:shoal       shoal shoal.empty    memcpy | dist:shoal       shoal shoal.empty
#        (B)               (us)        (us)        (us)        (us)      (us) |      /gloo       /gloo       /gloo
           4     20      294.19      167.56       26.76       25.00         - |      0.570       0.091       0.085
       65536     20      458.85      101.29       35.87       24.17     11.58 |      0.221       0.078       0.053
     1048576     20     1180.27      154.52      123.44       52.45     97.02 |      0.131       0.105       0.044
#             busbw        gloo  dist:shoal       shoal shoal.empty    memcpy | dist:shoal       shoal shoal.empty shoal.empty
#              GB/s                                                      GB/s |     x gloo      x gloo      x gloo     /memcpy
       65536               0.14        0.65        1.83        2.71      5.66 |       4.53       12.79       18.99       0.479
     1048576               0.89        6.79        8.49       19.99     10.81 |       7.64        9.56       22.50       1.850
#
# all_gather float32 (size: the gathered output), 2 ranks
#       size  iters        gloo  dist:shoal       shoal shoal.empty    memcpy | dist:shoal       shoal shoal.empty
#        (B)               (us)        (us)        (us)        (us)      (us) |      /gloo       /gloo       /gloo
     1048576     20     1573.42      197.55      284.64      296.35    135.93 |      0.126       0.181       0.188
#             busbw        gloo  dist:shoal       shoal shoal.empty    memcpy | dist:shoal       shoal shoal.empty shoal.empty
#              GB/s                                                      GB/s |     x gloo      x gloo      x gloo     /memcpy
     1048576               0.33        2.65        1.84        1.77      7.71 |       7.96        5.53        5.31       0.229
#
# window: 4-byte put + signal, wait_signal, ranks 0 <-> 1 (100 round trips per sample; median of the slowest rank)
#                round trip     half
#     window of        (us)     (us)
  shoal.zeros        145.55    72.77
  torch.zeros        197.29    98.64
#
# arrival skew: 4 B all_reduce, each iteration started by a gloo barrier (1000+ iterations); (skew): how far apart
# the ranks leave gloo's barrier (the last minus the first), which the early rank of any library waits out
#              median us     p90 us    /gloo
  (skew)            63.7      110.5    0.354
  gloo             179.8      767.2    1.000
  dist:shoal       136.5      185.9    0.759
  shoal             76.9      111.7    0.428
#
# shoal.tune.select: 2 candidates, warmup 5, reps 20 (rank 0's clock)
#   group      size   wall ms  inside ms  overhead ms/cand
  shoal         8 B      8.36       4.55             1.907
  shoal      64 KiB     14.02       7.65             3.185
#
# targets (2 ranks; the issue's are for 2)
# NOT MET  4 B all_reduce, shoal API: median <= 10 us                 26.76 us
# NOT MET  4 B all_reduce, torch.distributed shoal <= 0.2x gloo       0.570x (167.6 vs 294.2 us)
# load average 2.86 at the end
"""  # noqa: E501


def _op(report, title_start):
    ops = [op for op in report.operations if op.title.startswith(title_start)]
    assert len(ops) == 1, [op.title for op in report.operations]
    return ops[0]


def test_compare_sh_tables_parse_by_header():
    r = plot.parse(COMPARE)
    assert r.source == "compare.sh" and r.nranks == 2
    assert r.title.startswith("compare.sh: shoal vs Open MPI and MPICH, 2 "
                              "ranks on vm")
    assert [op.title for op in r.operations] == [
        "allreduce (float32 sum; malloc and shoal_alloc buffers)",
        "allgather (size = total of all blocks)"]  # not the targets block

    ar = _op(r, "allreduce")
    # MPICH is N/A throughout: no line at all.
    assert set(ar.series) == {"shoal", "shoal shm", "Open MPI", "memcpy"}
    assert ar.sizes() == [8, 16, 65536, 262144]
    assert ar.factor == 1.0  # 2(n-1)/n, n = 2
    shoal, shm = ar.series["shoal"], ar.series["shoal shm"]
    ompi = ar.series["Open MPI"]
    assert shoal.time == {8: 0.96, 16: 0.85, 65536: 204.60, 262144: 267.40}
    assert shm.time[262144] == 19.86 and ompi.time[8] == 0.82
    # busbw from the table's columns ("malloc"/"shm" over "busbw")...
    assert shm.busbw[65536] == 10.708 and shoal.busbw[262144] == 0.980
    assert ompi.busbw[262144] == 4.282
    assert ar.series["memcpy"].busbw == {8: 1.61, 16: 2.86, 65536: 30.35,
                                         262144: 29.47}
    # ...except where three decimals leave one digit: from the time.
    assert shoal.busbw[8] == pytest.approx(8 / 0.96 / 1e3)

    ag = _op(r, "allgather")
    assert ag.factor == 0.5  # (n-1)/n
    assert set(ag.series) == {"shoal", "Open MPI", "memcpy"}
    assert ag.series["Open MPI"].time[8] == 7975.74
    # printed 0.000: from the time, with the block factor
    assert ag.series["Open MPI"].busbw[8] == pytest.approx(
        8 / 7975.74 / 1e3 * 0.5)
    # printed 0.017: the time's value, which rounds to it
    assert ag.series["shoal"].busbw[32] == pytest.approx(32 / 0.93 / 1e3
                                                         * 0.5)
    assert ag.series["shoal"].busbw[32] == pytest.approx(0.017, abs=5e-4)


def test_a_new_library_column_is_found_by_name():
    ag = _op(plot.parse(ONECCL), "allgather")
    assert set(ag.series) == {"shoal", "Open MPI", "oneCCL", "memcpy"}
    # A note between rows ends nothing: all three rows are read.
    assert ag.series["oneCCL"].time == {16: 1.20, 64: 1.35, 256: 1.50}
    assert ag.series["shoal"].time == {16: 0.85, 64: 0.90, 256: 1.05}
    # oneCCL has no busbw column: size / time x (n-1)/n.
    assert ag.series["oneCCL"].busbw[256] == pytest.approx(256 / 1.5 / 1e3
                                                           * 0.5)
    assert ag.series["Open MPI"].busbw[256] == 0.183


def test_shoal_bench_tables_parse():
    r = plot.parse(BENCH)
    assert r.source == "shoal.bench" and r.nranks == 2
    # window, arrival skew and tune.select are not size tables.
    assert [op.name for op in r.operations] == ["allreduce", "allgather"]
    ar, ag = r.operations
    assert set(ar.series) == {"gloo", "dist:shoal", "shoal", "shoal.empty",
                              "memcpy"}
    assert ar.sizes() == [4, 65536, 1048576]
    assert ar.series["gloo"].time == {4: 294.19, 65536: 458.85,
                                      1048576: 1180.27}
    assert ar.series["shoal.empty"].time[1048576] == 52.45
    # The busbw table under the times: its library columns have no unit
    # of their own, "busbw / GB/s" heads the empty iterations column.
    assert ar.series["shoal.empty"].busbw[1048576] == 19.99
    # printed 0.65 (two digits): from the time, which rounds to it
    assert ar.series["dist:shoal"].busbw[65536] == pytest.approx(
        65536 / 101.29 / 1e3)
    assert ar.series["dist:shoal"].busbw[65536] == pytest.approx(0.65,
                                                                 abs=5e-3)
    # 4 B has no busbw row: from the time (all_reduce, 2 ranks: x 1).
    assert ar.series["gloo"].busbw[4] == pytest.approx(4 / 294.19 / 1e3)
    memcpy = ar.series["memcpy"]
    assert memcpy.time == {65536: 11.58, 1048576: 97.02}  # '-' at 4 B
    assert memcpy.busbw == {65536: 5.66, 1048576: 10.81}
    assert ag.factor == 0.5 and ag.sizes() == [1048576]
    assert ag.series["dist:shoal"].time[1048576] == 197.55
    assert ag.series["dist:shoal"].busbw[1048576] == 2.65


def test_other_text_has_no_operations():
    assert plot.detect_source("hello\n1 2 3\n") is None
    tail = "\n".join(COMPARE.splitlines()[-3:])  # the targets block only
    assert plot.parse(tail).operations == []


def test_size_labels():
    assert [plot.size_label(s) for s in (8, 4096, 1 << 20, 64 << 20)] == [
        "8 B", "4 KiB", "1 MiB", "64 MiB"]
    assert plot.size_label(1536) == "1.5 KiB"


def test_without_matplotlib_it_says_so_and_exits_0(tmp_path, monkeypatch,
                                                   capsys):
    src = tmp_path / "cmp.txt"
    src.write_text(COMPARE)
    out = tmp_path / "cmp.png"
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import fails
    assert plot.main([str(src), "-o", str(out)]) == 0
    assert capsys.readouterr().out.strip() == (
        "plot_tables: matplotlib not installed (pip install matplotlib): "
        "no plot drawn")
    assert not out.exists()


@pytest.mark.parametrize("name", ["COMPARE", "ONECCL", "BENCH"])
def test_the_script_writes_a_png(tmp_path, name):
    pytest.importorskip("matplotlib")
    src = tmp_path / "tables.txt"
    src.write_text(globals()[name])
    out = tmp_path / "tables.png"
    p = subprocess.run([sys.executable, SCRIPT, str(src), "-o", str(out)],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
    data = out.read_bytes()
    assert data.startswith(b"\x89PNG\r\n\x1a\n")
    assert len(data) > 20000  # axes, lines and labels, not an empty canvas
