"""The cost model's constants per size range, fitted to measured times.

A collective's time is alpha * rounds + beta * bytes moved + gamma *
bytes reduced (the terms come from the algorithm's registry row). One
beta cannot hold across sizes on a CPU: memory moves several times faster
while the buffers fit in a core's cache than from the shared last-level
cache, and slower again beyond it (here: 50, 14 and 6 GB/s for memcpy).
So the sizes measured are split into at most MAX_RANGES ranges, each with
its own alpha, beta and gamma: the split, over every way of cutting the
sorted sizes into contiguous runs of at least two, with the smallest sum
of squared relative errors (times span six orders of magnitude, so
relative errors weigh each size alike), taking one range more only where
that at least halves the error. Within a range, every subset of
the three constants is fitted by least squares and the best with none
negative kept (as shoal-tune fits its single range), using fewer
constants than the range has sizes. A range ends half-way (geometric)
between its last size and the next range's first; the first range starts
at 0 and the last has no end."""

import collections
import math

MAX_RANGES = 3
MIN_SIZES = 2  # per range
SPLIT_GAIN = 0.5  # one more range must at least halve the error

Range = collections.namedtuple("Range", "lo hi alpha beta gamma")
Range.__doc__ = ("Constants for sizes lo <= bytes < hi: alpha s per round, "
                 "beta s per byte moved, gamma s per byte reduced.")


def predict(ranges, nbytes, coef):
    """Seconds for a call of `nbytes` whose cost terms are `coef`
    (rounds, bytes moved, bytes reduced): its range's constants, but never
    less than an earlier range gives at that range's end. Ranges are
    fitted apart, so one may start below where the one before ends (noisy
    sizes near the cut); a larger call is not cheaper, and a caller
    comparing sizes must not see it so. The bytes terms scale with the
    size; the rounds are the call's (never fewer than a smaller call's)."""
    best = 0.0
    for r in ranges:
        if nbytes < r.lo:
            break
        at = min(nbytes, r.hi)
        moved, reduced = ((coef[1] * at / nbytes, coef[2] * at / nbytes)
                          if nbytes > 0 else (coef[1], coef[2]))
        best = max(best, r.alpha * coef[0] + r.beta * moved
                   + r.gamma * reduced)
    return best


class _Sums:
    """Prefix sums over the sizes of the normal equations' terms, so that
    any run of sizes is fitted in constant time: m[a][b] = sum of
    c_a c_b / t^2, r[a] = sum of c_a / t, and the count."""

    def __init__(self, groups):
        self.prefix = [([[0.0] * 3 for _ in range(3)], [0.0] * 3, 0)]
        for points in groups:
            m0, r0, n0 = self.prefix[-1]
            m = [row[:] for row in m0]
            r = r0[:]
            for coef, secs in points:
                w = [c / secs for c in coef]
                for a in range(3):
                    r[a] += w[a]
                    for b in range(3):
                        m[a][b] += w[a] * w[b]
            self.prefix.append((m, r, n0 + len(points)))

    def run(self, i, j):
        """The sums over sizes i .. j-1."""
        (m1, r1, n1), (m0, r0, n0) = self.prefix[j], self.prefix[i]
        m = [[m1[a][b] - m0[a][b] for b in range(3)] for a in range(3)]
        return m, [r1[a] - r0[a] for a in range(3)], n1 - n0


def _solve(m, r):
    """m x = r by Gaussian elimination with partial pivoting, the columns
    scaled to unit diagonal first (the terms differ by 10^8); None when
    singular."""
    k = len(r)
    s = [math.sqrt(m[i][i]) if m[i][i] > 0 else 0.0 for i in range(k)]
    if min(s) == 0:
        return None
    a = [[m[i][j] / (s[i] * s[j]) for j in range(k)] + [r[i] / s[i]]
         for i in range(k)]
    for col in range(k):
        piv = max(range(col, k), key=lambda i: abs(a[i][col]))
        if abs(a[piv][col]) < 1e-12:
            return None
        a[col], a[piv] = a[piv], a[col]
        for i in range(col + 1, k):
            f = a[i][col] / a[col][col]
            for j in range(col, k + 1):
                a[i][j] -= f * a[col][j]
    y = [0.0] * k
    for i in reversed(range(k)):
        y[i] = (a[i][k] - sum(a[i][j] * y[j] for j in range(i + 1, k))) \
            / a[i][i]
    return [y[i] / s[i] for i in range(k)]


def _fit_run(m, r, n, most):
    """(sum of squared relative errors, (alpha, beta, gamma)) of the best
    fit using at most `most` constants, or None."""
    best = None
    for mask in range(1, 8):
        idx = [j for j in range(3) if mask >> j & 1]
        if len(idx) > most:
            continue
        y = _solve([[m[a][b] for b in idx] for a in idx], [r[a] for a in idx])
        if y is None or any(v < 0 for v in y):
            continue
        x = [0.0, 0.0, 0.0]
        for a, j in zip(idx, y):
            x[a] = j
        # sum (x.c / t - 1)^2 = x'Mx - 2 x'r + n
        err = (sum(x[a] * m[a][b] * x[b] for a in range(3) for b in range(3))
               - 2 * sum(x[a] * r[a] for a in range(3)) + n)
        err = max(err, 0.0)
        if best is None or err < best[0]:
            best = (err, tuple(x))
    return best


def fit_ranges(points, max_ranges=MAX_RANGES):
    """points: [(bytes, (rounds, bytes moved, bytes reduced), seconds)],
    any order, several per size allowed. Returns [Range] covering 0 ..
    inf, or [] when nothing could be fitted."""
    by_size = collections.defaultdict(list)
    for nbytes, coef, secs in points:
        if secs > 0:
            by_size[int(nbytes)].append((tuple(coef), float(secs)))
    sizes = sorted(by_size)
    if not sizes:
        return []
    sums = _Sums([by_size[s] for s in sizes])
    runs = {}

    def run(i, j):
        if (i, j) not in runs:
            m, r, n = sums.run(i, j)
            runs[i, j] = _fit_run(m, r, n, max(1, min(3, j - i - 1)))
        return runs[i, j]

    cuts = _best_cuts(len(sizes), max_ranges, run)
    if cuts is None:
        return []
    out = []
    for k, (i, j) in enumerate(zip(cuts, cuts[1:])):
        lo = 0 if k == 0 else out[-1].hi
        hi = (math.inf if j == len(sizes)
              else round(math.sqrt(sizes[j - 1] * sizes[j])))
        out.append(Range(lo, hi, *run(i, j)[1]))
    return out


def _best_cuts(m, max_ranges, run):
    """The boundaries [0, ..., m] of the split of m sizes into runs of at
    least MIN_SIZES (one run when there are fewer sizes), by dynamic
    programming over the run ends: for each number of runs the split with
    the smallest total error; one more run only where it at least halves
    the error (a split that merely follows noise does not)."""
    least = min(MIN_SIZES, m)
    # best[j] for the current number of runs: (error, cuts) of sizes 0..j-1
    best = {j: (run(0, j)[0], [0, j]) for j in range(least, m + 1)
            if run(0, j) is not None}
    winner = best.get(m)
    for _ in range(1, max_ranges):
        nxt = {}
        for j in range(2 * least, m + 1):
            for i in range(least, j - least + 1):
                if i not in best or run(i, j) is None:
                    continue
                err = best[i][0] + run(i, j)[0]
                if j not in nxt or err < nxt[j][0]:
                    nxt[j] = (err, best[i][1] + [j])
        best = nxt
        if m in best and (winner is None
                          or best[m][0] < SPLIT_GAIN * winner[0]):
            winner = best[m]
    return None if winner is None else winner[1]
