#!/usr/bin/env python3
"""t_winscore.py - the generic-series scorer of `make eval` (tools/winscore.py)
on hand-computed cases: window score of a detection at the window start, at
its end, missed, with a false alarm; event-wise precision and recall; the
rolling-Gaussian baseline finds a spike and nothing else, and so does the
HTM-likelihood baseline; the low-false-positive weighting; a folder written
by tools/genseries.py loads with its labels inside the series. Fast lane, no
service, no binary. Ends with "N passed, N failed"."""
import math
import os
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True   # no __pycache__ in the tree
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))
import winscore  # noqa: E402

from lib import check, finish  # noqa: E402


def series(det):
    ts = list(range(1000, 1300))
    return [{"name": "x", "ts": ts, "vs": [0.0] * len(ts), "wins": [(1100, 1200, "spike")], "gpulog": det}]


P = 2.0 / (1.0 + math.exp(-5.0)) - 1.0        # earned at the window start
for label, det, want in [
    ("detection at the window start scores 100", [1100], 100.0),
    ("detection at the window end scores 100/(1+P)", [1200], 100.0 / (1 + P)),
    ("no detection scores 0", [], 0.0),
    ("a false alarm costs 0.11 of a hit", [1050, 1100], 100.0 * (P - 0.11 + 1) / (P + 1)),
    ("only the first detection in a window counts", [1100, 1150, 1160], 100.0),
]:
    r = winscore.summary(series(det), "gpulog")
    check(abs(r["score"] - want) < 1e-9, label, "got %.6f want %.6f" % (r["score"], want))

r = winscore.summary(series([1050, 1100]), "gpulog")
check(abs(r["lowfp"] - 100.0 * (P - 0.22 + 1) / (P + 1)) < 1e-9,
      "low-FP weighting: a false alarm costs 0.22 of a hit", "got %.6f" % r["lowfp"])

r = winscore.summary(series([1050, 1100, 1250]), "gpulog")
check(r["tp"] == 1 and r["fp"] == 2 and abs(r["prec"] - 1 / 3.0) < 1e-9 and r["rec"] == 1.0,
      "event-wise: 1 hit, 2 false alarms -> precision 1/3, recall 1", str(r))

ts = list(range(0, 500))
vs = [10.0 + (i % 5) * 0.1 for i in ts]
vs[300] = 50.0
d = winscore.baseline(ts, vs, 100, 1e-6)
check(d == [300], "rolling Gaussian: the spike and nothing else", str(d))

# HTM likelihood over persistence: a noisy series with one spike at 3000
import random  # noqa: E402
rnd = random.Random(7)
ts = list(range(0, 4000))
vs = [10.0 + rnd.gauss(0, 1) for _ in ts]
vs[3000] = 40.0
d = winscore.htm_likelihood(ts, vs, 1e-4)
check(any(3000 <= t <= 3010 for t in d) and len(d) <= 3, "HTM likelihood: the spike, at most two others", str(d))
d = winscore.htm_likelihood(ts[:200], vs[:200], 1e-4)
check(d == [], "HTM likelihood: nothing in the learning period of a quiet short series", str(d))

with tempfile.TemporaryDirectory() as tmp:
    out = os.path.join(tmp, "g")
    rc = subprocess.call([sys.executable, os.path.join(ROOT, "tools", "genseries.py"), "--seed", "5", "--count", "3",
                          "-o", out])
    s = winscore.load_dir(out) if rc == 0 else []
    ok = len(s) == 3 and all(s_["wins"] and all(s_["ts"][0] <= a <= b <= s_["ts"][-1] for a, b, _ in s_["wins"])
                             for s_ in s)
    check(ok, "genseries: 3 series, every label window inside its series", "rc %d, %d series" % (rc, len(s)))
    again = os.path.join(tmp, "h")
    subprocess.call([sys.executable, os.path.join(ROOT, "tools", "genseries.py"), "--seed", "5", "--count", "3",
                     "-o", again])
    same = all(open(os.path.join(out, f)).read() == open(os.path.join(again, f)).read() for f in os.listdir(out))
    check(same, "genseries: deterministic per seed")

finish()
