"""Plots of the benchmark tables: time and bus bandwidth against size.

Reads the text that tools/perf/compare.sh or python -m shoal.bench prints
and draws one row per operation, two log-log panels each: time (us) and
bus bandwidth (GB/s) against the message size, one line per library or
variant. tools/perf/plot_tables.py is the command-line front end;
python -m shoal.bench --plot calls plot_text().

The tables are whitespace-aligned: every column, header words and numbers
alike, is right-aligned to the same end position, and two '#' header lines
name it (compare.sh: "shoal" over "(us)", "malloc" over "busbw", "malloc
bw" over "/OMPI"; shoal.bench: "gloo" over "(us)"). Columns are therefore
found by where the numbers end and named by the header text ending there,
not by their order, so a column added to either table (another library)
is picked up by its name.

This module imports nothing from shoal (the command-line script loads it
by path, without the C extension) and imports matplotlib only to draw.
"""

import math
import re
import sys
import textwrap

KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30
MISSING_MSG = ("plot_tables: matplotlib not installed (pip install "
               "matplotlib): no plot drawn")

# Header names as printed -> the names in the legend.
DISPLAY = {"OpenMPI": "Open MPI", "OMPI": "Open MPI"}
# compare.sh's shoal variants: malloc buffers are plain shoal (the label
# every single-variant table uses), so the colour stays the same across rows.
VARIANT = {"malloc": "shoal"}
# nccl-tests' bus bandwidth factors by operation (compare.sh and
# shoal.bench state the same ones); the rest, factor 1.
BLOCK_OPS = {"allgather", "reducescatter", "alltoall", "gather", "scatter"}
MEMCPY = "memcpy"


class Series:
    """One line of a row: times in us and busbw in GB/s, keyed by size."""

    def __init__(self):
        self.time = {}
        self.busbw = {}
        # busbw printed with too few digits to plot (0.000, 0.004 GB/s):
        # used only where no time gives the exact value.
        self.coarse_busbw = {}


class Operation:
    """One operation's tables: its title, bus factor and series by name."""

    def __init__(self, title, nranks):
        self.title = title
        self.name = _op_name(title)
        self.nranks = nranks
        self.factor = _bus_factor(self.name, nranks)
        self.series = {}

    def line(self, name):
        return self.series.setdefault(name, Series())

    def sizes(self):
        out = set()
        for s in self.series.values():
            out |= set(s.time) | set(s.busbw)
        return sorted(out)


class Report:
    """A parsed output: its first header line, format and operations."""

    def __init__(self, title, source, nranks, operations):
        self.title = title
        self.source = source
        self.nranks = nranks
        self.operations = operations


# ---- parsing ----------------------------------------------------------------


def detect_source(text):
    """'compare.sh', 'shoal.bench', or None: which runner wrote the text."""
    for line in text.splitlines():
        if line.startswith("# compare.sh"):
            return "compare.sh"
        if line.startswith("# shoal.bench"):
            return "shoal.bench"
    return None


def _op_name(title):
    """The operation's key: 'all_reduce' and 'allreduce' are one."""
    words = title.split()
    return words[0].lower().replace("_", "") if words else ""


def _bus_factor(op, n):
    """busbw = size / time x factor, nccl-tests' convention."""
    if not n:
        return 1.0
    if op == "allreduce":
        return 2 * (n - 1) / n
    if op in BLOCK_OPS:
        return (n - 1) / n
    return 1.0


def _ranks(line):
    m = re.search(r"\b(\d+) ranks\b", line)
    return int(m.group(1)) if m else None


def _is_header(line):
    # Column headers are right-aligned, so they start with '#' and runs of
    # spaces; titles and notes start with "# " and a word.
    return re.match(r"#  +\S", line) is not None


def _is_title(line):
    text = line[1:].strip()
    return bool(text) and not text.startswith("^") and not _is_header(line)


def _is_row(line):
    words = line.split()
    return bool(words) and words[0].isdigit()


def _tables(lines):
    """Yields (title or None, h1, h2, rows) per table. A table is the last
    two adjacent header lines before a run of rows; the '#' line just
    before them is its title; none when the rows of the previous table
    lead straight into it (shoal.bench's busbw table of an operation)."""
    pending, cur = [], None
    for line in lines:
        if line.startswith("#"):
            pending.append(line)
            continue
        if not line.strip():
            continue
        head = _header_pair(pending)
        if head is not None:
            if cur is not None:
                yield cur
            cur = (head[0], head[1], head[2], [])
        pending = []
        if cur is not None:
            cur[3].append(line)
    if cur is not None:
        yield cur


def _header_pair(pending):
    """(title, h1, h2) of the last two adjacent header lines of the '#'
    lines before a row; None when they hold none (notes between rows)."""
    idx = [i for i, line in enumerate(pending) if _is_header(line)]
    if len(idx) < 2 or idx[-1] != idx[-2] + 1:
        return None
    i = idx[-2]
    title = pending[i - 1] if i > 0 and _is_title(pending[i - 1]) else None
    if title is not None:
        title = title[1:].strip()
    return title, pending[i], pending[i + 1]


def _ends(line):
    """End positions (exclusive) of the words of a line."""
    return [m.end() for m in re.finditer(r"\S+", line)]


def _labels(header, ends):
    """The header text of each column: within the column's span (after
    the previous column's end), the words that end exactly where its
    numbers end. Other words head columns that hold no numbers
    (shoal.bench's empty 'busbw' column); they come back in the second
    list. Words one space apart are one name ("malloc bw")."""
    header = " " + header[1:]  # the '#' is only a marker
    named, orphans, start = [], [], 0
    for end in ends:
        pieces = _pieces(header, start, end)
        if pieces and pieces[-1][1] == end:
            named.append(pieces.pop()[0])
        else:
            named.append("")
        orphans += [text for text, _ in pieces]
        start = end
    orphans += [text for text, _ in _pieces(header, start, len(header))]
    return named, orphans


def _pieces(line, start, end):
    """(text, end position) of the names in line[start:end]."""
    return [(m.group(0), start + m.end())
            for m in re.finditer(r"\S+(?: \S+)*", line[start:end])]


def _number(word):
    try:
        v = float(word)
    except ValueError:
        return None  # N/A, n/a, -
    return v if math.isfinite(v) else None


def _columns(h1, h2, rows):
    """[(h1 text, h2 text)] per column, and the unit of columns with an
    empty second header line. Positions come from the most common layout
    of the rows (a number too wide for its field shifts only its row)."""
    layouts = {}
    for row in rows:
        e = tuple(_ends(row))
        layouts[e] = layouts.get(e, 0) + 1
    ends = max(layouts, key=layouts.get)
    top, top_orphans = _labels(h1, ends)
    bottom = _labels(h2, ends)[0]
    # shoal.bench's busbw table says "busbw / GB/s" once, over an empty
    # column; its library columns below have no unit of their own.
    unit = "busbw" if "busbw" in top_orphans else None
    return list(zip(top, bottom)), unit


def _meaning(top, bottom, unit, variants):
    """('time' | 'busbw', line name) of a column, or None (sizes, ratios,
    iteration counts, separators)."""
    if not top or top == "|" or "/" in top or bottom.startswith(("/", "x ")):
        return None
    if top == MEMCPY:
        return ("time" if bottom == "(us)" else "busbw"), MEMCPY
    if bottom == "(us)":
        return "time", DISPLAY.get(top, top)
    if bottom == "busbw":
        name = _variant(top) if top in variants else DISPLAY.get(top, top)
        return "busbw", name
    if top == "shoal" and bottom and not bottom.startswith("("):
        return "time", _variant(bottom)  # compare.sh: shoal over malloc
    if not bottom and unit == "busbw":
        return "busbw", DISPLAY.get(top, top)
    return None


def _variant(label):
    return VARIANT.get(label, f"shoal {label}")


def _add_table(op, h1, h2, rows):
    cols, unit = _columns(h1, h2, rows)
    variants = {b for a, b in cols if a == "shoal" and b
                and not b.startswith("(") and b != "busbw"}
    meanings = [_meaning(a, b, unit, variants) for a, b in cols]
    for row in rows:
        words = row.split()
        if len(words) != len(cols) or not words[0].isdigit():
            continue
        size = int(words[0])
        for meaning, word in zip(meanings[1:], words[1:]):
            v = _number(word)
            if meaning is None or v is None:
                continue
            kind, name = meaning
            if kind == "busbw" and _digits(word) < 3:
                kind = "coarse_busbw"
            getattr(op.line(name), kind)[size] = v


def _digits(word):
    """Significant digits of a printed number."""
    return len(word.lstrip("+-").replace(".", "").lstrip("0"))


def _fill_in(op):
    """Where a line has only one of time and busbw at a size, the other
    from it: busbw = size / time x factor (memcpy: factor 1, bytes copied
    once)."""
    for name, s in op.series.items():
        f = 1.0 if name == MEMCPY else op.factor
        for size, t in s.time.items():
            if size not in s.busbw and t > 0:
                s.busbw[size] = size / t / 1e3 * f
        for size, bw in s.coarse_busbw.items():
            s.busbw.setdefault(size, bw)
        for size, bw in s.busbw.items():
            if size not in s.time and bw > 0:
                s.time[size] = size / bw / 1e3 * f


def parse(text):
    """A Report of every size table in the text (tables that do not start
    with a size column, such as targets, are skipped)."""
    lines = text.splitlines()
    first = next((ln for ln in lines if ln.startswith("#")
                  and ln[1:].strip()), "#")
    nranks = _ranks(first)
    ops, joined = [], False
    for title, h1, h2, rows in _tables(lines):
        if not rows or not all(_is_row(r) for r in rows):
            joined = False
            continue
        size_head = _labels(h1, _ends(rows[0]))[0][0]
        if title is not None and size_head == "size":
            ops.append(Operation(title, _ranks(title) or nranks))
        elif title is not None or not joined:
            joined = False
            continue  # a table of something else
        # A table without a title continues the operation above it
        # (shoal.bench prints busbw under the times).
        _add_table(ops[-1], h1, h2, rows)
        joined = True
    ops = [op for op in ops if op.series]
    for op in ops:
        _fill_in(op)
    return Report(first[1:].strip(), detect_source(text), nranks, ops)


# ---- drawing ----------------------------------------------------------------


def size_label(nbytes):
    """8 B, 4 KiB, 1 MiB, 64 MiB; 1.5 KiB where not a whole unit."""
    for unit, div in (("GiB", GiB), ("MiB", MiB), ("KiB", KiB)):
        if nbytes >= div:
            v = nbytes / div
            return f"{v:.0f} {unit}" if v == int(v) else f"{v:.3g} {unit}"
    return f"{nbytes:.0f} B"


def _size_ticks(sizes):
    """Powers of two from the largest size down, at most 7 of them, so
    that the labels do not collide on a narrow panel."""
    lo = max(0, math.floor(math.log2(min(sizes))))
    hi = math.ceil(math.log2(max(sizes)))
    step = 1
    while (hi - lo) // step + 1 > 7:
        step += 1
    return [2.0 ** e for e in range(hi, lo - 1, -step)]


def _number_label(v):
    return f"{v:g}"


def _value_ticks(ax):
    """Plain numbers (0.01, 1, 100) on the log value axis; on a panel
    spanning under two decades also 2 and 5 of each, which would otherwise
    leave it with one or two labels."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: _number_label(v)))
    lo, hi = ax.get_ylim()
    if lo > 0 and math.log10(hi / lo) < 2:
        ax.yaxis.set_minor_locator(LogLocator(subs=(2.0, 5.0)))
        ax.yaxis.set_minor_formatter(
            FuncFormatter(lambda v, _: _number_label(v)))
    else:
        ax.yaxis.set_minor_formatter(NullFormatter())


def _colours(report):
    """One colour per line name for the whole figure, in order of first
    appearance, so a library looks the same in every row."""
    names = []
    for op in report.operations:
        names += [n for n in op.series if n != MEMCPY and n not in names]
    cycle = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
             "#8c564b", "#e377c2", "#17becf", "#bcbd22", "#7f7f7f"]
    return {n: cycle[i % len(cycle)] for i, n in enumerate(names)}


def _panel(ax, op, kind, colours):
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter

    for name, s in op.series.items():
        if name == MEMCPY and kind == "time":
            continue  # a bound on bandwidth; its times only stretch the axis
        pts = sorted((k, v) for k, v in getattr(s, kind).items() if v > 0)
        if not pts:
            continue
        xs, ys = zip(*pts)
        ms = 3.5 if len(pts) > 1 else 6  # a lone point must still show
        if name == MEMCPY:
            ax.plot(xs, ys, "x--", color="0.45", lw=1.2, ms=ms, label=name)
        else:
            ax.plot(xs, ys, "o-", color=colours[name], lw=1.6, ms=ms,
                    label=name)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    sizes = op.sizes()
    if sizes:
        ax.xaxis.set_major_locator(FixedLocator(_size_ticks(sizes)))
        ax.xaxis.set_major_formatter(
            FuncFormatter(lambda x, _: size_label(x)))
        ax.xaxis.set_minor_formatter(NullFormatter())
    _value_ticks(ax)
    ax.grid(True, which="major", alpha=0.35)
    ax.grid(True, which="minor", axis="y", alpha=0.12)
    ax.set_ylabel("time (us)" if kind == "time" else "busbw (GB/s)")
    ax.tick_params(labelsize=8)


def _legend(t_ax, b_ax):
    """One legend per row, in the time panel, with the memcpy line that
    only the busbw panel draws."""
    seen = {}
    for ax in (t_ax, b_ax):
        for h, label in zip(*ax.get_legend_handles_labels()):
            seen.setdefault(label, h)
    t_ax.legend(list(seen.values()), list(seen), fontsize=8, loc="best",
                framealpha=0.85)


def draw(report, path):
    """Writes the PNG: one row per operation, time and busbw panels."""
    from matplotlib.figure import Figure

    ops = report.operations
    if not ops:
        raise ValueError("no size tables found")
    fig = Figure(figsize=(13, 3.3 * len(ops) + 0.9), layout="constrained")
    axes = fig.subplots(len(ops), 2, squeeze=False)
    colours = _colours(report)
    for (t_ax, b_ax), op in zip(axes, ops):
        _panel(t_ax, op, "time", colours)
        _panel(b_ax, op, "busbw", colours)
        factor = "" if op.factor == 1 else f" x {op.factor:g}"
        t_ax.set_title(textwrap.shorten(op.title, 95), fontsize=9.5,
                       loc="left")
        b_ax.set_title(f"bus bandwidth = size / time{factor}", fontsize=9,
                       loc="left", color="0.3")
        _legend(t_ax, b_ax)
    for ax in axes[-1]:
        ax.set_xlabel("size")
    fig.suptitle(textwrap.fill(report.title, 140), fontsize=10.5)
    fig.savefig(path, dpi=100)


def have_matplotlib():
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def plot_text(text, path):
    """Parses a runner's output and draws it to path. False (and one line
    on stderr) when it cannot: matplotlib missing, or no size tables."""
    if not have_matplotlib():
        print(MISSING_MSG, file=sys.stderr)
        return False
    report = parse(text)
    if not report.operations:
        print("plot_tables: no size tables in the input: no plot drawn",
              file=sys.stderr)
        return False
    draw(report, path)
    return True


class Tee:
    """A stdout that also keeps what passes through it, so that the
    tables a run prints can be plotted at its end."""

    def __init__(self, out):
        self.out = out
        self.parts = []

    def write(self, s):
        self.parts.append(s)
        return self.out.write(s)

    def flush(self):
        self.out.flush()

    def getvalue(self):
        return "".join(self.parts)

    def __getattr__(self, name):
        return getattr(self.out, name)


def main(argv=None):
    import argparse

    p = argparse.ArgumentParser(
        prog="plot_tables.py",
        description="Draw the tables of tools/perf/compare.sh or python -m "
                    "shoal.bench (their saved output) as a PNG: per "
                    "operation, time and bus bandwidth against size.")
    p.add_argument("input", help="saved output of either runner ('-': "
                                 "standard input)")
    p.add_argument("-o", "--output", required=True, metavar="OUT.png")
    args = p.parse_args(argv)
    if not have_matplotlib():
        print(MISSING_MSG)
        return 0
    if args.input == "-":
        text = sys.stdin.read()
    else:
        with open(args.input, encoding="utf-8", errors="replace") as f:
            text = f.read()
    report = parse(text)
    if not report.operations:
        print(f"plot_tables: no size tables in {args.input}", file=sys.stderr)
        return 1
    draw(report, args.output)
    names = ", ".join(op.name for op in report.operations)
    print(f"plot_tables: {args.output}: {len(report.operations)} operations "
          f"({names}) from {report.source or 'unknown runner'} output")
    return 0
