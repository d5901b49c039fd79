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

Low-false-positive weighting (as streaming benchmarks weight it): the same
score with a detection outside every window costing 0.22 instead of 0.11
("low-FP" columns).

Baselines, each an alarm below a tail threshold, alarms within 10 samples of
each other merged into one detection, their settings chosen on the tune split
(grid) and reused unchanged on every other split; gpulog runs with its
defaults (tuned by hand on tune sets only):
- rolling Gaussian: mean and deviation of the previous W samples, two-sided
  Gaussian tail of the new sample.
- HTM likelihood: the anomaly likelihood of the HTM detector (Ahmad, Lavin,
  Purdy and Agha, Neurocomputing 262, 2017), re-implemented here from the
  paper over a simple predictor instead of an HTM model (htm_likelihood()).

Optional fields of a series in labels.json (tools/realdata.py writes them):
"dataset" (with --per-dataset, one row per dataset in each split),
"score_from" (detections before it are ignored: a probation period).
Series of the third group (unlabelled, after a second --) are scored for
false alarms only and are not part of either split's totals.
--holdout DIR and --holdout-unlabelled DIR (each may repeat) add a third
split, scored and printed after the report split with the same baseline
settings (chosen on the tune split): a fresh hold-out that nobody tunes on.
--holdout2 DIR (may repeat) adds a second such split, printed before it;
--holdout3 DIR and --holdout3-unlabelled DIR (may repeat) a third, printed
after holdout2, before the holdout split.
--tune-unlabelled DIR (may repeat): unlabelled series of the tune split,
scored for false alarms only and printed after its table (also when
tuning); they may be looked at while tuning.

usage: winscore.py [--name NAME] [--per-dataset] [--tune-unlabelled DIR]... [--holdout DIR]... [--holdout-unlabelled DIR]...
                   [--holdout2 DIR]... [--holdout3 DIR]... [--holdout3-unlabelled DIR]...
                   TUNE_DIR... -- [REPORT_DIR... [-- UNLABELLED_DIR...]]
(no REPORT_DIR: the tune split only, for tuning)
Last line: "eval-NAME: report split: gpulog window score A, F1 B; baseline window score C, F1 D"
(NAME generic by default); with --holdout the line before it says the same
of the "holdout split"; with --holdout2 a line of the "holdout2 split" comes
after its table, before the holdout split's table, and so does one of the
"holdout3 split" with --holdout3 (after holdout2's).
"""
import bisect
import calendar
import json
import math
import os
import sys
import time

A_FP = 0.11          # standard weighting of a false alarm
A_FP_LOW = 0.22      # low-false-positive weighting


_DAYS = {}


def ts_of(s):
    """An ISO time YYYY-MM-DDTHH:MM:SS[.fff][Z] (UTC) -> epoch seconds; the
    days are cached (series of 450,000 samples are read)."""
    d = _DAYS.get(s[:10])
    if d is None:
        d = _DAYS[s[:10]] = calendar.timegm(time.strptime(s[:10], "%Y-%m-%d"))
    if len(s) < 19 or s[10] != "T" or s[13] != ":" or s[16] != ":":
        raise ValueError("not an ISO time: %r" % s)
    return d + int(s[11:13]) * 3600 + int(s[14:16]) * 60 + int(s[17:19])


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
        sfrom = labels[name].get("score_from")
        det = []
        nd = os.path.join(d, name + ".ndjson")
        if os.path.exists(nd):
            for line in open(nd):
                r = json.loads(line)
                # incidents group episodes: not detections of their own
                if r.get("event.type") == "start" and r.get("event.dataset") != "gpu.incident":
                    det.append(ts_of(r["@timestamp"]))
        out.append({"name": name, "ts": ts, "vs": vs, "wins": wins, "gpulog": sorted(set(det)),
                    "dataset": labels[name].get("dataset", ""), "from": ts_of(sfrom) if sfrom else None})
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


# HTM likelihood parameters (the paper's, and the defaults of its public
# implementation): learning period, samples before the first estimate, the
# history the distribution is estimated from, how often it is re-estimated,
# the short average of raw scores, and the floors of the estimate
HTM_LEARN, HTM_EST, HTM_HIST, HTM_REEST, HTM_AVG = 288, 100, 8640, 100, 10
HTM_MEAN_MIN, HTM_VAR_MIN = 0.03, 0.0003


def htm_likelihood(ts, vs, thr):
    """HTM-style anomaly likelihood over a simple predictor (detection times).
    Raw anomaly score in [0, 1], 0 for a predicted sample and 1 for a
    surprising one as an HTM model's share of unpredicted columns is:
    (|x - prediction| / typical error - 2) / 4, clipped to [0, 1], the
    prediction the previous value (persistence), the typical error the
    mean absolute error so far (moving, 1/1000 a sample once 1000 were seen).
    Then the paper's post-processing: the raw scores averaged over the last
    HTM_AVG samples; their distribution (mean and variance of those averages
    over the last HTM_HIST samples after the learning period, floored at
    HTM_MEAN_MIN and HTM_VAR_MIN) estimated after HTM_LEARN + HTM_EST samples
    and again every HTM_REEST samples; the likelihood of a sample is 1 - the
    two-sided Gaussian tail of its short average under that distribution;
    anomalous when the tail is below thr. On a short series the learning
    period and the estimation samples are at most half of the first 15 %
    each (the probation period that streaming benchmarks leave unscored,
    which the public detector sizes them from). As in the paper only the first
    anomalous sample of a run alarms (later ones are filtered), and alarms
    within 10 samples of each other are one detection."""
    from collections import deque
    det, last = [], -10**9
    mae, nerr = 0.0, 0
    raw = deque()
    rsum = 0.0
    hist = deque()
    hs1 = hs2 = 0.0
    mean = sd = None
    prev_bad = False
    learn = min(HTM_LEARN, int(0.075 * len(vs)))
    est = max(5, min(HTM_EST, int(0.075 * len(vs))))
    for i, v in enumerate(vs):
        if i == 0:
            continue
        e = abs(v - vs[i - 1])
        sc = mae if mae > 0 else 1e-12
        r = min(1.0, max(0.0, (e / sc - 2.0) / 4.0)) if nerr else 0.0
        nerr += 1
        mae += (e - mae) / (nerr if nerr < 1000 else 1000)
        raw.append(r)
        rsum += r
        if len(raw) > HTM_AVG:
            rsum -= raw.popleft()
        avg = rsum / len(raw)
        bad = False
        if mean is not None:
            z = abs(avg - mean) / sd
            bad = 0.5 * math.erfc(z / math.sqrt(2)) < thr
            if bad and not prev_bad:
                if i - last > 10:
                    det.append(ts[i])
                last = i
        prev_bad = bad
        if i > learn:
            hist.append(avg)
            hs1 += avg
            hs2 += avg * avg
            if len(hist) > HTM_HIST:
                o = hist.popleft()
                hs1 -= o
                hs2 -= o * o
            if len(hist) >= est and (mean is None or i % HTM_REEST == 0):
                m = hs1 / len(hist)
                var = max(hs2 / len(hist) - m * m, 0.0)
                mean, sd = max(m, HTM_MEAN_MIN), math.sqrt(max(var, HTM_VAR_MIN))
    return det


HTM_GRID = (1e-2, 1e-3, 1e-4, 1e-5, 1e-6)


def score(series, key, a_fp=A_FP):
    """Returns S, S_none, S_perfect, tp, fp, nwin, per-kind {kind: [hit, n]};
    a false alarm costs a_fp."""
    S = Sn = Sp = 0.0
    tp = fp = nwin = 0
    kinds = {}
    for s in series:
        det = s[key] if s.get("from") is None else [t for t in s[key] if t >= s["from"]]
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
            S -= a_fp
    return S, Sn, Sp, tp, fp, nwin, kinds


def summary(series, key):
    S, Sn, Sp, tp, fp, nwin, kinds = score(series, key)
    norm = 100.0 * (S - Sn) / (Sp - Sn) if Sp > Sn else 0.0
    S2 = S - (A_FP_LOW - A_FP) * fp
    low = 100.0 * (S2 - Sn) / (Sp - Sn) if Sp > Sn else 0.0
    rec = tp / nwin if nwin else 0.0
    prec = tp / (tp + fp) if tp + fp else 0.0
    f1 = 2 * prec * rec / (prec + rec) if prec + rec else 0.0
    samples = sum(len(s["ts"]) for s in series)
    return {"score": norm, "lowfp": low, "rec": rec, "prec": prec, "f1": f1, "tp": tp, "fp": fp, "nwin": nwin,
            "fp_per_1k": 1000.0 * fp / samples if samples else 0.0, "kinds": kinds}


# the detectors of every table: key in a series, name
DETECTORS = (("gpulog", "gpulog generic"), ("base", "rolling Gaussian"), ("htm", "HTM likelihood"))


def table(title, series):
    rows = [(name, summary(series, key)) for key, name in DETECTORS]
    print("%s: %d series, %d samples, %d labelled windows" % (
        title, len(series), sum(len(s["ts"]) for s in series), rows[0][1]["nwin"]))
    print("  %-18s %7s %7s %6s %6s %6s %5s %5s %9s" % ("detector", "score", "low-FP", "prec", "recall", "F1", "TP", "FP",
                                                     "FP/1k"))
    for name, r in rows:
        print("  %-18s %7.1f %7.1f %6.2f %6.2f %6.2f %5d %5d %9.2f" % (
            name, r["score"], r["lowfp"], r["prec"], r["rec"], r["f1"], r["tp"], r["fp"], r["fp_per_1k"]))
    kinds = sorted(rows[0][1]["kinds"])
    print("  recall by kind:    " + "  ".join("%s %d/%d|%d/%d" % (
        k, rows[0][1]["kinds"][k][0], rows[0][1]["kinds"][k][1], rows[1][1]["kinds"][k][0],
        rows[1][1]["kinds"][k][1]) for k in kinds) + "   (gpulog|rolling Gaussian)")
    return rows


def per_dataset(series):
    """One row per dataset (the "dataset" field) of a split."""
    names = sorted({s["dataset"] for s in series})
    w = max([18] + [len(n) for n in names])
    print("  %-*s %6s %7s | %-35s | %-35s | %-35s" % (
        w, "per dataset", "series", "windows", "gpulog: score low-FP   F1   TP   FP",
        "Gaussian: score low-FP   F1   TP   FP", "HTM lik: score low-FP   F1   TP   FP"))
    for n in names:
        sub = [s for s in series if s["dataset"] == n]
        cells = []
        for key, _ in DETECTORS:
            r = summary(sub, key)
            cells.append("%14.1f %6.1f %4.2f %4d %4d" % (r["score"], r["lowfp"], r["f1"], r["tp"], r["fp"]))
        print("  %-*s %6d %7d | %s" % (w, n, len(sub), summary(sub, "gpulog")["nwin"], " | ".join(cells)))


def false_alarms(series, title="unlabelled series (false alarms only, not in the splits' totals)"):
    """Series without labels: false alarms only."""
    samples = sum(len(s["ts"]) for s in series)
    fa = {}
    for key, _ in DETECTORS:
        fa[key] = sum(len([t for t in s[key] if s.get("from") is None or t >= s["from"]]) for s in series)
    print("%s: %d series, %d samples" % (title, len(series), samples))
    for key, name in DETECTORS:
        print("  %-18s %5d false alarms, %.2f per 1000 samples" % (name, fa[key], 1000.0 * fa[key] / samples))


def eval_line(name, split, rows):
    """The one summary line of a split (table()'s rows), read by scripts."""
    g, b, h = rows[0][1], rows[1][1], rows[2][1]
    print("eval-%s: %s split: gpulog window score %.1f, F1 %.2f; baseline window score %.1f, F1 %.2f; "
          "low-FP gpulog %.1f, baseline %.1f; HTM likelihood window score %.1f, low-FP %.1f, F1 %.2f" % (
              name, split, g["score"], g["f1"], b["score"], b["f1"], g["lowfp"], b["lowfp"], h["score"], h["lowfp"],
              h["f1"]))


def main(argv):
    name, perds = "generic", False
    dirs = {"--holdout": [], "--holdout2": [], "--holdout-unlabelled": [], "--tune-unlabelled": [], "--holdout3": [],
            "--holdout3-unlabelled": []}   # options that may repeat
    while argv and argv[0].startswith("--") and argv[0] != "--":
        if argv[0] == "--name" and len(argv) > 1:
            name, argv = argv[1], argv[2:]
        elif argv[0] in dirs and len(argv) > 1:
            dirs[argv[0]].append(argv[1])
            argv = argv[2:]
        elif argv[0] == "--per-dataset":
            perds, argv = True, argv[1:]
        else:
            break
    if "--" not in argv:
        print(__doc__.split("\n\n")[-2], file=sys.stderr)
        return 2
    cut = argv.index("--")
    rest = argv[cut + 1:]
    cut2 = rest.index("--") if "--" in rest else len(rest)
    tune = [s for d in argv[:cut] for s in load_dir(d)]
    rep = [s for d in rest[:cut2] for s in load_dir(d)]
    unl = [s for d in rest[cut2 + 1:] for s in load_dir(d)]
    hold, hold2, hunl, tunl, hold3, h3unl = ([s for d in dirs[o] for s in load_dir(d)]
                                             for o in ("--holdout", "--holdout2", "--holdout-unlabelled",
                                                       "--tune-unlabelled", "--holdout3", "--holdout3-unlabelled"))
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
    hbest = None
    for hthr in HTM_GRID:
        for s in tune:
            s["htm"] = htm_likelihood(s["ts"], s["vs"], hthr)
        sc = summary(tune, "htm")["score"]
        if hbest is None or sc > hbest[0]:
            hbest = (sc, hthr)
    _, hthr = hbest
    for s in tune + rep + unl + hold + hunl + hold2 + tunl + hold3 + h3unl:
        s["base"] = baseline(s["ts"], s["vs"], W, thr)
        s["htm"] = htm_likelihood(s["ts"], s["vs"], hthr)
    print("baseline rolling Gaussian: window %d samples, tail threshold %g (best window score on the tune split)" % (W, thr))
    print("baseline HTM likelihood: tail threshold %g (best window score on the tune split)" % hthr)
    if name == "generic":
        titles = ("tune split (seeds gpulog's defaults and the baseline were tuned on)", "report split (not tuned on)")
    else:
        titles = ("tune split (may be looked at while tuning; the baseline's settings are chosen on it)",
                  "report split (not looked at while tuning)")
    def split(title, series):   # a split's table (and rows per dataset): its rows
        rows = table(title, series)
        if perds:
            per_dataset(series)
        return rows
    trows = split(titles[0], tune)
    if tunl:
        false_alarms(tunl, "tune unlabelled series (false alarms only, may be looked at while tuning; not in the totals)")
    if not rep:   # tuning: the report split stays unseen
        eval_line(name, "tune", trows)
        return 0
    rows = split(titles[1], rep)
    if unl:
        false_alarms(unl)
    def fresh(label, series, unlabelled):   # a fresh split: its table, false alarms and eval line
        rows = split(label + " split (fresh: fixed before gpulog ran on it, never tuned on)", series)
        if unlabelled:
            false_alarms(unlabelled, "%s unlabelled series (false alarms only, not in the %s totals)" % (label, label))
        eval_line(name, label, rows)
    if hold2:
        fresh("holdout2", hold2, [])
    if hold3:
        fresh("holdout3", hold3, h3unl)
    if hold or hunl:
        fresh("holdout", hold, hunl)
    eval_line(name, "report", rows)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
