#!/usr/bin/env python3
"""Every event `gpulog parse` emits for the parser fuzz corpora
(tests/fuzz/corpus/<target>, the inputs libFuzzer kept for coverage, replayed
with the options of each fuzz target: --format, --columns, UTC, the fuzz
harness's read time) validates against the whole of schemas/event.schema.json
(the fuzz targets themselves check the JSON and the numeric ranges, not the
schema's patterns, enums and types).

One check per corpus (all of its files), plus self-checks that this test
can fail: an event with an out-of-range @timestamp or field fails the schema.
Ends with "N passed, N failed".
"""
import json
import os
import subprocess
import sys
import time

from lib import check, finish, schema_first_error

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
os.chdir(ROOT)
GPULOG = os.environ.get("GPULOG") or os.path.join(ROOT, os.environ.get("BUILD", "build"), "gpulog")
CORPUS = "tests/fuzz/corpus"
# the parser fuzz targets: corpus -> parse options (as in tests/fuzz/fuzz_<target>.c)
TARGETS = {
    "auto": ["--format", "auto"],
    "csv": ["--format", "csv"],
    "dcgmi": ["--format", "dcgmi"],
    "dmon": ["--format", "dmon"],
    "dmon_csv": ["--format", "dmon-csv", "--columns", "gpu,pwr,gtemp,mtemp,sm,mem"],
    "kmsg": ["--format", "kmsg"],
    "pmon": ["--format", "pmon"],
    "query_csv": ["--format", "query-csv", "--columns", "index,name,utilization.gpu,power.draw"],
}
ENV = dict(os.environ, GPULOG_READ_TIME="2025-06-15T15:06:40Z", TZ="UTC")

with open("schemas/event.schema.json") as f:
    SCHEMA = json.load(f)
first_error = schema_first_error(SCHEMA)

# the schema refuses what emission must not let through
good = {"@timestamp": "2025-06-15T15:06:40.000Z", "event.kind": "metric", "event.dataset": "gpu.dmon",
        "event.id": "0" * 32, "agent.name": "gpulog", "agent.version": "0.1.0", "host.name": "h",
        "gpu.index": 0, "gpu.utilization.gpu.pct": 50}
check(first_error(good) is None, "self-check: a plain dmon event validates", str(first_error(good)))
for key, val in (("@timestamp", "1900-03-04T09:00:00.000Z"), ("@timestamp", "9999-03-04T09:00:00.000Z"),
                 ("gpu.utilization.gpu.pct", 150), ("gpu.index", -1)):
    bad = dict(good, **{key: val})
    check(first_error(bad) is not None, "self-check: the schema refuses %s=%s" % (key, val))

t0 = time.monotonic()
total_files = total_events = 0
for target, args in TARGETS.items():
    d = os.path.join(CORPUS, target)
    files = sorted(os.listdir(d)) if os.path.isdir(d) else []
    if not files:
        check(False, "corpus %s" % target, d + " is empty or missing")
        continue
    bad, events, crashed = [], 0, []
    for name in files:
        path = os.path.join(d, name)
        r = subprocess.run([GPULOG, "parse", "--quiet", "--keep-original", "--host", "fuzz-host"] + args + [path],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=ENV, timeout=30)
        if r.returncode not in (0,) or r.stderr.count(b"\n") > 64:
            crashed.append("%s: exit %d %s" % (name, r.returncode, r.stderr[-300:].decode("utf-8", "replace")))
        for i, line in enumerate(r.stdout.splitlines()):
            events += 1
            try:
                doc = json.loads(line)
            except ValueError as e:
                bad.append("%s event %d: not JSON: %s" % (name, i + 1, e))
                continue
            err = first_error(doc)
            if err:
                bad.append("%s event %d: %s" % (name, i + 1, err))
    total_files += len(files)
    total_events += events
    check(not bad, "corpus %s: the %d events of %d inputs validate against the schema" % (target, events, len(files)),
          "\n".join(bad[:10]))
    check(not crashed, "corpus %s: parse exits 0 on every input" % target, "\n".join(crashed[:5]))
print("# %d corpus files, %d events, %.1f s" % (total_files, total_events, time.monotonic() - t0), file=sys.stderr)
finish()
