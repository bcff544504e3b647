#!/usr/bin/env python3
"""plot_tables.py: the tables of compare.sh or python -m shoal.bench as a PNG.

    tools/perf/plot_tables.py INPUT.txt -o OUT.png

INPUT.txt is the saved output of either runner (which one is detected from
its header). Per operation a row of two log-log panels: time (us) and bus
bandwidth (GB/s) against size, one line per library or variant. Needs
matplotlib (optional: without it the script says so and exits 0). The
parsing and drawing live in python/shoal/_plot.py, shared with
python -m shoal.bench --plot.
"""

import importlib.util
import os
import sys


def _load_plot_module():
    # By path rather than `import shoal._plot`: the package's __init__ loads
    # the C extension, which a checkout without a build does not have.
    here = os.path.dirname(os.path.abspath(__file__))
    path = os.path.join(here, "..", "..", "python", "shoal", "_plot.py")
    spec = importlib.util.spec_from_file_location("shoal_plot", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


if __name__ == "__main__":
    sys.exit(_load_plot_module().main())
