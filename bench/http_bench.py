#!/usr/bin/env python3
"""bench/http_bench.py - the metrics endpoint under hostile clients (issue 27
item 5): `gpulog collect` with a /metrics page of 10,000 GPUs (kept fresh),
its RSS with 0 (the baseline, same run), 50 and 200 slow readers of
/metrics (4 KiB receive buffer, nothing read, arriving over 10 s), and the
/healthz latency (worst of 20) while 270 slowloris connections from 9
addresses dribble. HTTP_BENCH_BASE=PATH measures an older build the same
way, in the same run. Targets: RSS with 200 slow readers within 4 pages of
the baseline; every /healthz answered within 1 s.
Env: BUILD / GPULOG, HTTP_BENCH_GPUS (10000), HTTP_BENCH_BASE."""
import os
import subprocess
import sys
import tempfile
import time

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "tests", "tools"))
from slowclients import Collector, get, slow_readers, slowloris, dribble, close_all  # noqa: E402

GPULOG = os.environ.get("GPULOG", os.path.join(here, "..", os.environ.get("BUILD", "build"), "gpulog"))
NGPU = int(os.environ.get("HTTP_BENCH_GPUS", "10000"))


def measure(name, gpulog):
    tmp = tempfile.mkdtemp(prefix="http-bench.")
    c = Collector(gpulog, tmp, NGPU)
    held = []
    out = {"name": name}
    try:
        page = c.page()
        if not page:
            print("  %s: no page with %d GPUs" % (name, NGPU))
            return None
        out["page"] = len(page)
        time.sleep(1.2)
        get(c.port, "/metrics", 10)
        out["rss0"] = c.rss_kb()
        for n in (50, 200):
            held = slow_readers(c.port, n, 10.0)
            time.sleep(1)
            out["rss%d" % n] = c.rss_kb()
            close_all(held)
            time.sleep(2)
        held = slowloris(c.port, 9, 30)
        worst, fails = 0.0, 0
        for _ in range(20):
            dribble(held)
            t0 = time.time()
            st, _ = get(c.port, "/healthz", 1.0)
            dt = time.time() - t0
            worst = max(worst, dt)
            fails += st != 200
            time.sleep(0.25)
        out["worst"], out["fails"] = worst, fails
        return out
    finally:
        close_all(held)
        c.stop()
        subprocess.run(["rm", "-rf", tmp])


def main():
    rows = [measure("gpulog collect", GPULOG)]
    if os.environ.get("HTTP_BENCH_BASE"):
        rows.append(measure("base build", os.environ["HTTP_BENCH_BASE"]))
    print("metrics endpoint under hostile clients: %d GPUs on /metrics" % NGPU)
    print("  %-16s %9s %10s %17s %18s %22s" % ("program", "page", "RSS idle", "+50 slow readers", "+200 slow readers",
                                               "/healthz, 270 slowloris"))
    ok = True
    for r in rows:
        if not r:
            ok = False
            continue
        print("  %-16s %6.1f MB %7.1f MB %14.1f MB %15.1f MB %12.2f s worst, %d/20 failed"
              % (r["name"], r["page"] / 1e6, r["rss0"] / 1024, r["rss50"] / 1024, r["rss200"] / 1024, r["worst"],
                 r["fails"]))
    r = rows[0]
    if r:
        grown = (r["rss200"] - r["rss0"]) * 1024
        met = grown < 4 * r["page"] and r["fails"] == 0
        print("  200 slow readers: +%.1f MB = %.1f pages (target < 4); /healthz: %d of 20 failed (target 0): %s"
              % (grown / 1e6, grown / r["page"], r["fails"], "met" if met else "NOT met"))
        ok = ok and met
    sys.exit(0 if ok else 1)


main()
