"""torchft's own process-group tests (torchft 0.2.0's process_group_test.py,
shipped in its wheel) over gloo and over shoal, side by side.

torchft's tests exercise its reconfigurable gloo wrapper
(torchft.process_group.ProcessGroupGloo): configure() under a fresh store
prefix, every collective torchft uses, a rank that leaves while the others
wait (their errors must match gloo's phrases), 2-3 ranks as threads of one
process. This runner runs the tests that name that wrapper twice: as
shipped, and with the wrapper's place taken by shoal.torchft's
ProcessGroupShoal, a torchft ProcessGroupWrapper whose groups are shoal
groups (made by shoal's own torch.distributed creator from torchft's
store). Gloo's wrapper
refuses reduce_scatter and the test skips it; the shoal column runs it too.

Usage: build/pyenv/bin/python tests/torchft/run_torchft_pg_test.py
Prints a line per test and the counts per column; exits 1 when a test gloo
passes fails over shoal.
"""

import io
import sys
import unittest

try:
    import torchft.process_group as tpg
    import torchft.process_group_test as tests
except ImportError as e:  # torchft is optional
    print(f"torchft is not installed ({e}): pip install torchft==0.2.0")
    sys.exit(0)

from shoal.torchft import ProcessGroupShoal  # noqa: E402


GLOO_CLASSES = ("ProcessGroupTest", "NormalGlooMultiPgTest")


def gloo_tests():
    """The tests of torchft's file that use its gloo wrapper."""
    loader = unittest.TestLoader()
    names = []
    for cls_name in GLOO_CLASSES:
        cls = getattr(tests, cls_name)
        for name in loader.getTestCaseNames(cls):
            if cls_name == "ProcessGroupTest" and "gloo" not in name:
                continue
            names.append(f"{cls_name}.{name}")
    return names


def run(names):
    results = {}
    for name in names:
        suite = unittest.TestLoader().loadTestsFromName(name, tests)
        stream = io.StringIO()
        outcome = unittest.TextTestRunner(stream=stream, verbosity=0).run(
            suite)
        if outcome.failures or outcome.errors:
            text = (outcome.failures + outcome.errors)[0][1]
            results[name] = ("failed", text.strip().splitlines()[-1])
        elif outcome.skipped:
            results[name] = ("skipped", outcome.skipped[0][1])
        else:
            results[name] = ("passed", "")
    return results


def main():
    names = gloo_tests()
    gloo = run(names)
    tests.ProcessGroupGloo = ProcessGroupShoal  # the file's name for it
    tests.NormalGlooMultiPgTest.SKIP = ["alltoall_base"]
    shoal = run(names)
    worse = 0
    print(f"{'test':70} {'gloo':8} shoal")
    for name in names:
        g, s = gloo[name][0], shoal[name][0]
        print(f"{name:70} {g:8} {s}"
              + (f"  ({shoal[name][1][:100]})" if s == "failed" else ""))
        worse += g == "passed" and s == "failed"
    for title, res in (("gloo", gloo), ("shoal", shoal)):
        counts = {k: sum(v[0] == k for v in res.values())
                  for k in ("passed", "failed", "skipped")}
        print(f"{title}: {counts['passed']} passed, {counts['failed']} "
              f"failed, {counts['skipped']} skipped")
    return 1 if worse else 0


if __name__ == "__main__":
    sys.exit(main())
