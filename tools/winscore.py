#!/usr/bin/env python3
"""winscore.py - window-based scoring of generic-series detections, gpulog's
generic profile next to a rolling-Gaussian baseline, on a tune and a report
split (make eval, generic part).

Each DIR holds labels.json and <name>.csv from tools/genseries.py and
<name>.ndjson, the records of `gpulog run --profile generic` on that CSV.
A detection is the start of an episode (gpulog: a `start` record, any rule;
baseline: the first sample of a run of alarms).

Window score (the convention of streaming anomaly benchmarks): the first
detection inside a labelled window earns 2/(1+exp(5y))-1, y = (t-end)/(end-start)
in [-1,0] (about 1 at the window start, 0 at its end); later detections in the
same window count nothing; a missed window costs 1; a detection outside
every window costs 0.11. Normalised per split: 100 x (S - S_none) / (S_perfect
- S_none), S_none = every window missed, S_perfect = every window detected at
its start. Event-wise: recall = windows detected / windows, precision =
detections inside a window (first per window) / all detections counted
(first per window + outside), F1.

Baseline: rolling Gaussian: mean and deviation of the previous W samples,
two-sided Gaussian tail of the new sample; an alarm below a tail threshold,
alarms within 10 samples of each other merged into one detection. Its window
W and threshold are chosen on the tune split (grid) and reused unchanged on
the report split; gpulog runs with its defaults (tuned by hand on tune seeds
only).

usage: winscore.py TUNE_DIR... -- REPORT_DIR...
Last line: "eval-generic: report split: gpulog window score A, F1 B; baseline window score C, F1 D"
"""
import bisect
import calendar
import json
import math
import os
import sys
import time

A_FP = 0.11


def ts_of(s):
    s = s.rstrip("Z").split(".")[0]
    return calendar.timegm(time.strptime(s, "%Y-%m-%dT%H:%M:%S"))


def sig(y):
    return 2.0 / (1.0 + math.exp(5.0 * y)) - 1.0


def load_dir(d):
    labels = json.load(open(os.path.join(d, "labels.json")))
    out = []
    for name in sorted(labels):
        ts, vs = [], []
        with open(os.path.join(d, name + ".csv")) as f:
            next(f)
            for line in f:
                t, v = line.rstrip("\n").split(",")
                ts.append(ts_of(t))
                vs.append(float(v))
        wins = [(ts_of(a), ts_of(b), k) for a, b, k in labels[name]["windows"]]
        det = []
        nd = os.path.join(d, name + ".ndjson")
        if os.path.exists(nd):
            for line in open(nd):
                r = json.loads(line)
                # incidents group episodes: not detections of their own
                if r.get("event.type") == "start" and r.get("event.dataset") != "gpu.incident":
                    det.append(ts_of(r["@timestamp"]))
        out.append({"name": name, "ts": ts, "vs": vs, "wins": wins, "gpulog": sorted(set(det))})
    return out


def baseline(ts, vs, W, thr):
    """Rolling Gaussian detections (times)."""
    det, s1, s2, last = [], 0.0, 0.0, -10**9
    for i, v in enumerate(vs):
        if i >= W:
            m = s1 / W
            var = max(s2 / W - m * m, 0.0)
            sd = math.sqrt(var) if var > 0 else 1e-9
            tail = math.erfc(abs(v - m) / sd / math.sqrt(2))
            if tail < thr:
                if i - last > 10:
                    det.append(ts[i])
                last = i
            o = vs[i - W]
            s1 -= o
            s2 -= o * o
        s1 += v
        s2 += v * v
    return det


def score(series, key):
    """Returns S, S_none, S_perfect, tp, fp, nwin, per-kind {kind: [hit, n]}."""
    S = Sn = Sp = 0.0
    tp = fp = nwin = 0
    kinds = {}
    for s in series:
        det = s[key]
        used = set()
        for a, b, k in s["wins"]:
            nwin += 1
            Sn -= 1
            Sp += sig(-1.0)
            kinds.setdefault(k, [0, 0])[1] += 1
            i = bisect.bisect_left(det, a)
            if i < len(det) and det[i] <= b:
                y = (det[i] - b) / float(b - a) if b > a else 0.0
                S += sig(y)
                tp += 1
                kinds[k][0] += 1
                j = i
                while j < len(det) and det[j] <= b:
                    used.add(j)
                    j += 1
            else:
                S -= 1
        for j, t in enumerate(det):
            if j in used:
                continue
            if any(a <= t <= b for a, b, _ in s["wins"]):
                continue
            fp += 1
            S -= A_FP
    return S, Sn, Sp, tp, fp, nwin, kinds


def summary(series, key):
    S, Sn, Sp, tp, fp, nwin, kinds = score(series, key)
    norm = 100.0 * (S - Sn) / (Sp - Sn) if Sp > Sn else 0.0
    rec = tp / nwin if nwin else 0.0
    prec = tp / (tp + fp) if tp + fp else 0.0
    f1 = 2 * prec * rec / (prec + rec) if prec + rec else 0.0
    samples = sum(len(s["ts"]) for s in series)
    return {"score": norm, "rec": rec, "prec": prec, "f1": f1, "tp": tp, "fp": fp, "nwin": nwin,
            "fp_per_1k": 1000.0 * fp / samples if samples else 0.0, "kinds": kinds}


def table(title, series):
    rows = [("gpulog generic", summary(series, "gpulog")), ("rolling Gaussian", summary(series, "base"))]
    print("%s: %d series, %d samples, %d labelled windows" % (
        title, len(series), sum(len(s["ts"]) for s in series), rows[0][1]["nwin"]))
    print("  %-18s %7s %6s %6s %6s %5s %5s %9s" % ("detector", "score", "prec", "recall", "F1", "TP", "FP", "FP/1k"))
    for name, r in rows:
        print("  %-18s %7.1f %6.2f %6.2f %6.2f %5d %5d %9.2f" % (
            name, r["score"], r["prec"], r["rec"], r["f1"], r["tp"], r["fp"], r["fp_per_1k"]))
    kinds = sorted(rows[0][1]["kinds"])
    print("  recall by kind:    " + "  ".join("%s %d/%d|%d/%d" % (
        k, rows[0][1]["kinds"][k][0], rows[0][1]["kinds"][k][1], rows[1][1]["kinds"][k][0],
        rows[1][1]["kinds"][k][1]) for k in kinds) + "   (gpulog|baseline)")
    return rows


def main(argv):
    if "--" not in argv:
        print(__doc__.split("\n\n")[-2], file=sys.stderr)
        return 2
    cut = argv.index("--")
    tune = [s for d in argv[:cut] for s in load_dir(d)]
    rep = [s for d in argv[cut + 1:] for s in load_dir(d)]
    # the baseline's window and threshold, chosen on the tune split
    best = None
    for W in (32, 100, 300):
        for thr in (1e-3, 1e-4, 1e-5, 1e-6, 1e-8):
            for s in tune:
                s["base"] = baseline(s["ts"], s["vs"], W, thr)
            sc = summary(tune, "base")["score"]
            if best is None or sc > best[0]:
                best = (sc, W, thr)
    _, W, thr = best
    for s in tune + rep:
        s["base"] = baseline(s["ts"], s["vs"], W, thr)
    print("baseline rolling Gaussian: window %d samples, tail threshold %g (best window score on the tune split)" % (W, thr))
    table("tune split (seeds gpulog's defaults and the baseline were tuned on)", tune)
    rows = table("report split (not tuned on)", rep)
    g, b = rows[0][1], rows[1][1]
    print("eval-generic: report split: gpulog window score %.1f, F1 %.2f; baseline window score %.1f, F1 %.2f" % (
        g["score"], g["f1"], b["score"], b["f1"]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
