#!/usr/bin/env python3
"""The metrics endpoint under hostile client load (issue 27, item 5), with
real slow clients on real sockets against `gpulog collect`
(tests/tools/slowclients.py):

- slow readers of /metrics (a small receive buffer, nothing read; from 40
  addresses, under the per-address cap) must not each hold a copy of the
  page: with a page of 8,000 GPUs (about 7 MB, more than the kernel's send
  buffer takes), 40 slow readers arriving over 4 s pushed RSS up by about a
  page each (40 pages); now the page is shared (at most 3 alive, plus one
  being made);
- 270 slowloris connections from 9 addresses (30 each, under the 32 per
  address cap; more than the 256 in all) held every slot and /healthz timed
  out: now /healthz and /readyz answer within 1 s, every time, while they
  dribble, and the evictions are counted.
"""
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "tools"))
from lib import check, finish  # noqa: E402
from slowclients import Collector, get, slow_readers, slowloris, dribble, close_all, metric  # noqa: E402

GPULOG = os.environ.get("GPULOG", os.path.join(os.environ.get("BUILD", "build"), "gpulog"))
NGPU = 8000


def main():
    tmp = tempfile.mkdtemp(prefix="httpload.", dir=os.environ.get("GPULOG_TEST_TMP") or None)
    env = dict(os.environ)
    # a sanitizer build keeps freed memory in quarantine: RSS would count it
    env["ASAN_OPTIONS"] = (env["ASAN_OPTIONS"] + ":" if env.get("ASAN_OPTIONS") else "") + "quarantine_size_mb=1"
    c = Collector(GPULOG, tmp, NGPU, env)
    held = []
    try:
        page = c.page()
        if not check(page != b"", "collect serves /metrics with %d GPUs" % NGPU, "no page with gpu=%d" % (NGPU - 1)):
            return
        size = len(page)
        time.sleep(1.2)
        get(c.port, "/metrics", 10)
        base = c.rss_kb()
        held = slow_readers(c.port, 40, 4.0)   # a new page is due every second
        time.sleep(1)
        grown = c.rss_kb() - base
        check(grown * 1024 < 5 * size,
              "40 slow readers of a %.1f MB page: RSS grew %.1f MB (< 5 pages)" % (size / 1e6, grown / 1024),
              "RSS grew %.1f MB for a %.1f MB page (%.1f pages)" % (grown / 1024, size / 1e6, grown * 1024 / size))
        st, body = get(c.port, "/metrics", 10)
        check(st == 200 and len(body) > size // 2, "a scrape among them gets the whole page",
              "status %s, %d bytes" % (st, len(body)))
        close_all(held)
        time.sleep(0.5)
        held = slowloris(c.port, 9, 30)
        check(len(held) >= 250, "%d slow connections open" % len(held), "only %d connected" % len(held))
        bad = []
        for t in range(10):
            dribble(held)
            for path in ("/healthz", "/readyz"):
                t0 = time.time()
                st, body = get(c.port, path, 1.0)
                if st != 200:
                    bad.append("%s at %d: %s (%.2f s)" % (path, t, st if st else body, time.time() - t0))
            time.sleep(0.5)
        check(not bad, "/healthz and /readyz answer within 1 s, 10 times each, while 270 slowloris connections dribble",
              "; ".join(bad[:4]) + (" (%d of 20 failed)" % len(bad)))
        ev = metric(c.port, "gpulog_http_connections_evicted_total")
        check(ev is not None and ev > 0, "evictions counted (%s)" % ev, "gpulog_http_connections_evicted_total: %s" % ev)
    finally:
        close_all(held)
        rc = c.stop()
        check(rc == 0, "collect exits 0 after SIGTERM", "exit status %s" % rc)
        subprocess.run(["rm", "-rf", tmp])


main()
finish()
