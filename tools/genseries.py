#!/usr/bin/env python3
"""genseries.py - labelled generic time series for `make eval` (generic part).

A second fault model, built apart from tools/gentrace.py (GPU telemetry):
single metrics of the kinds a generic CSV carries (request rates with daily
and weekly cycles, CPU utilisation, disk usage growing, low event counts,
heavy-tailed latencies), sampled every 1 s to 1 h, with benign behaviour a
detector must not report (noise that changes slowly, slow trends, cycles)
and labelled anomalies of several shapes and strengths: spikes, dips to
zero (outages), level shifts, variance bursts, a stuck value, a drift that
starts, a missing daily peak. Labels follow the window convention of
streaming benchmarks: each anomaly gets a window that starts where it starts
and lasts 10 % of the series divided by the number of anomalies (at least
the anomaly itself), so detecting early inside it is what counts.

Writes DIR/<name>.csv (timestamp,value; ISO-8601 UTC) and DIR/labels.json
({name: {"interval_s", "windows": [[start_iso, end_iso, kind], ...]}}).
Deterministic per seed. Standard library only.

usage: genseries.py --seed N --count K -o DIR
"""
import argparse
import json
import math
import os
import random
import sys
import time

KINDS = ["spike", "dip", "level", "variance", "stuck", "drift", "no_peak"]
BASES = ["traffic", "cpu", "disk", "counts", "latency"]
INTERVALS = [1, 10, 60, 300, 900, 3600]


def iso(t):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def base_series(rng, kind, n, dt):
    """Benign behaviour of one metric: values and its typical noise."""
    day = 86400.0 / dt
    vals = []
    if kind == "traffic":
        amp, lvl, noise = rng.uniform(0.3, 0.7), rng.uniform(50, 5000), rng.uniform(0.03, 0.1)
        week = rng.random() < 0.5
        for i in range(n):
            ph = 2 * math.pi * i / day if day >= 8 else 0
            w = 0.8 if week and (i * dt // 86400) % 7 in (5, 6) else 1.0
            m = lvl * w * (1 + amp * math.sin(ph) + 0.2 * amp * math.sin(2 * ph + 1))
            vals.append(max(0.0, m * (1 + rng.gauss(0, noise))))
        return vals, lvl * noise
    if kind == "cpu":
        x, mean, sd = rng.uniform(20, 60), rng.uniform(20, 60), rng.uniform(1, 5)
        for i in range(n):
            x += 0.05 * (mean - x) + rng.gauss(0, sd * 0.3)
            vals.append(min(100.0, max(0.0, x + rng.gauss(0, sd))))
        return vals, sd
    if kind == "disk":
        x, slope, sd = rng.uniform(100, 500), rng.uniform(0.001, 0.02), rng.uniform(0.05, 0.5)
        for i in range(n):
            x += slope + rng.gauss(0, sd * 0.05)
            if rng.random() < 0.002:
                x *= rng.uniform(0.85, 0.95)     # a cleanup job: benign
            vals.append(x + rng.gauss(0, sd))
        return vals, sd
    if kind == "counts":
        lam = rng.uniform(2, 30)
        for i in range(n):
            # Poisson by inversion (small lambda)
            L, k, p = math.exp(-lam), 0, 1.0
            while True:
                p *= rng.random()
                if p <= L:
                    break
                k += 1
            vals.append(float(k))
        return vals, math.sqrt(lam)
    # latency: log-normal, heavy tail
    med, sig = rng.uniform(5, 200), rng.uniform(0.1, 0.3)
    for i in range(n):
        vals.append(med * math.exp(rng.gauss(0, sig)))
    return vals, med * sig


def inject(rng, vals, sd, kind, start, n, dt, strength):
    """Adds one anomaly at start; returns its length in samples."""
    N = len(vals)
    if kind == "spike":
        ln = rng.randint(1, 3)
        sign = 1 if rng.random() < 0.8 else -1
        for i in range(start, min(N, start + ln)):
            vals[i] = max(0.0, vals[i] + sign * strength * 2 * sd)
        return ln
    if kind == "dip":
        ln = rng.randint(5, 40)
        for i in range(start, min(N, start + ln)):
            vals[i] = 0.0
        return ln
    if kind == "level":
        shift = strength * sd * (1 if rng.random() < 0.6 else -1)
        for i in range(start, N):
            vals[i] = max(0.0, vals[i] + shift)
        return N - start
    if kind == "variance":
        ln = rng.randint(50, 200)
        for i in range(start, min(N, start + ln)):
            vals[i] = max(0.0, vals[i] + rng.gauss(0, sd * strength * 0.8))
        return ln
    if kind == "stuck":
        ln = rng.randint(60, 300)
        v = vals[start]
        for i in range(start, min(N, start + ln)):
            vals[i] = v
        return ln
    if kind == "drift":
        ln = N - start
        rate = strength * sd / rng.uniform(20, 80)
        for i in range(start, N):
            vals[i] = max(0.0, vals[i] + rate * (i - start))
        return ln
    # no_peak: one day-cycle's peak flattened to the series median (traffic only)
    day = int(86400 / dt)
    ln = max(10, day // 3)
    srt = sorted(vals[max(0, start - day):start + 1]) or [vals[start]]
    med = srt[len(srt) // 2]
    for i in range(start, min(N, start + ln)):
        if vals[i] > med:
            vals[i] = med + (vals[i] - med) * 0.1
    return ln


def one(rng, idx):
    base = rng.choice(BASES)
    dt = rng.choice(INTERVALS)
    n = rng.randint(2500, 5000)
    vals, sd = base_series(rng, base, n, dt)
    kinds = [k for k in KINDS if k != "no_peak" or (base == "traffic" and 86400 / dt >= 24)]
    if base == "counts":
        kinds = [k for k in kinds if k not in ("stuck",)]
    k_an = rng.randint(1, 3)
    seg = (n - 400) // k_an
    wlen = max(5, int(0.1 * n / k_an))
    t0 = 1735689600 + rng.randint(0, 300) * 86400
    t0 -= t0 % dt
    windows = []
    for a in range(k_an):
        kind = rng.choice(kinds)
        if kind in ("level", "drift") and a != k_an - 1:
            kind = "spike"   # permanent changes only as the last anomaly
        start = 400 + a * seg + rng.randint(wlen // 4, max(wlen // 4 + 1, seg - wlen))
        start = min(start, n - 10)
        strength = rng.uniform(3, 10)
        ln = inject(rng, vals, sd, kind, start, n, dt, strength)
        end = min(n - 1, start + max(wlen, min(ln, wlen * 2)))
        windows.append([iso(t0 + start * dt), iso(t0 + end * dt), kind])
    name = "s%03d-%s-%ds" % (idx, base, dt)
    return name, dt, t0, vals, windows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--count", type=int, default=12)
    ap.add_argument("-o", "--out", required=True)
    a = ap.parse_args()
    rng = random.Random(a.seed)
    os.makedirs(a.out, exist_ok=True)
    labels = {}
    for i in range(a.count):
        name, dt, t0, vals, windows = one(rng, i)
        with open(os.path.join(a.out, name + ".csv"), "w") as f:
            f.write("timestamp,value\n")
            for j, v in enumerate(vals):
                f.write("%s,%.6g\n" % (iso(t0 + j * dt), v))
        labels[name] = {"interval_s": dt, "windows": windows}
    with open(os.path.join(a.out, "labels.json"), "w") as f:
        json.dump(labels, f, indent=1, sort_keys=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
