#!/usr/bin/env python3
"""Validates every event `gpulog parse` emits for the real corpus
(tests/corpus) and tests/fixtures/** against schemas/event.schema.json.

One check per input file (a file passes when every event it gives validates),
plus self-checks that the schema rejects what it must (typos, nulls, wrong
types) so this test can fail. Per-file parse arguments come from
tests/golden/<dir>/<file>.args, as in the golden tests.
Ends with "N passed, N failed".
"""
import json
import os
import shlex
import subprocess

from lib import check, finish, schema_first_error

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
os.chdir(ROOT)
GPULOG = os.environ.get("GPULOG") or os.path.join(ROOT, os.environ.get("BUILD", "build"), "gpulog")
CORPUS = "tests/corpus"

with open("schemas/event.schema.json") as f:
    SCHEMA = json.load(f)
first_error = schema_first_error(SCHEMA)


def inputs():
    out = []
    if os.path.isdir(CORPUS):
        for d in sorted(os.listdir(CORPUS)):
            full = os.path.join(CORPUS, d)
            if not os.path.isdir(full):
                continue
            for f in sorted(os.listdir(full)):
                out.append((os.path.join(full, f), os.path.join("tests/golden", d, f + ".args")))
    else:
        check(False, "corpus", CORPUS + " not found")
    for base, _, files in sorted(os.walk("tests/fixtures")):
        for f in sorted(files):
            if f.endswith(".args"):
                continue
            p = os.path.join(base, f)
            out.append((p, p + ".args"))
    return out


def extra_args(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return shlex.split(f.read())


total_events = 0
for path, argsf in inputs():
    cmd = [GPULOG, "parse", "--tz", "UTC", "--host", "schema-host"] + extra_args(argsf) + [path]
    env = dict(os.environ, GPULOG_READ_TIME="2025-01-01T00:00:00.000Z")
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, timeout=60)
    except Exception as ex:  # noqa: BLE001 - any failure to run is a failed check
        check(False, path, "could not run gpulog: %s" % ex)
        continue
    if p.returncode != 0:
        check(False, path, "exit %d: %s" % (p.returncode, p.stderr.decode(errors="replace")[-300:]))
        continue
    bad = None
    n = 0
    for i, line in enumerate(p.stdout.decode("utf-8", errors="strict").splitlines(), 1):
        n += 1
        try:
            doc = json.loads(line)
        except ValueError as ex:
            bad = "event %d: not JSON: %s" % (i, ex)
            break
        err = first_error(doc)
        if err:
            bad = "event %d: %s" % (i, err)
            break
    total_events += n
    check(bad is None, "%s (%d events)" % (path, n), bad or "")

# Self-checks: the schema must be able to fail.
GOOD = {
    "@timestamp": "2025-11-07T03:15:01.000Z", "event.kind": "metric", "event.dataset": "gpu.dmon",
    "event.id": "0123456789abcdef0123456789abcdef", "agent.name": "gpulog", "agent.version": "0.1.0",
    "host.name": "n1", "gpu.index": 0, "gpu.power.usage": 111, "gpu.throttling.thermal.active": False,
}
ALERT = {
    "@timestamp": "2025-11-07T03:15:01.000Z", "event.kind": "alert", "event.dataset": "gpu.anomaly",
    "event.id": "0123456789abcdef0123456789abcdef", "agent.name": "gpulog", "agent.version": "0.1.0",
    "host.name": "n1", "gpu.index": 3, "event.type": "start", "rule.id": "zscore.gpu.power.usage",
    "rule.name": "power z-score", "event.start": "2025-11-07T03:14:00.000Z", "event.risk_score": 73.5,
    "event.severity": 2, "event.reason": "power 420 W above expected 280-330 W",
    "anomaly.field": "gpu.power.usage", "anomaly.observed": 420, "anomaly.expected.low": 280.0,
    "anomaly.expected.high": 330.0, "anomaly.zscore": 6.1,
}
check(first_error(GOOD) is None, "self-check: a minimal dmon event validates", str(first_error(GOOD)))
check(first_error(ALERT) is None, "self-check: an alert validates", str(first_error(ALERT)))
MUTATIONS = [
    ("misspelt key", {"gpu.powr.usage": 1}),
    ("null value", {"gpu.power.usage": None}),
    ("float where integer", {"gpu.memory.framebuffer.used_size": 45.5}),
    ("percentage above 100", {"gpu.utilization.gpu.pct": 101}),
    ("string number", {"gpu.index": "0"}),
    ("timestamp without ms", {"@timestamp": "2025-11-07T03:15:01Z"}),
    ("uppercase event.id", {"event.id": "0123456789ABCDEF0123456789ABCDEF"}),
    ("unknown dataset", {"event.dataset": "gpu.dmonn"}),
    ("boolean reason as int", {"gpu.throttling.reason.sw_power_cap": 1}),
    ("alert without rule.id", "alert-no-rule"),
    ("metric kind on anomaly dataset", {"event.dataset": "gpu.anomaly"}),
]
for name, change in MUTATIONS:
    if change == "alert-no-rule":
        doc = dict(ALERT)
        del doc["rule.id"]
    else:
        doc = dict(GOOD)
        doc.update(change)
    check(first_error(doc) is not None, "self-check: rejects " + name, "schema accepted it")
# incidents (gpu.incident): what `gpulog run` writes on the demo validates,
# and one without its id, rules or with an episode's rule.id does not
r = subprocess.run([GPULOG, "run", "--tz", "UTC", "--host", "dgx-07", os.path.join(ROOT, "data/demo/dgx-07.dmon.txt")],
                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
incs = [json.loads(l) for l in r.stdout.decode().splitlines() if '"event.dataset":"gpu.incident"' in l]
errs = [first_error(d) for d in incs if first_error(d)]
check(r.returncode == 0 and len(incs) >= 2 and not errs, "the demo's %d incident records validate" % len(incs), errs[:2])
for name, change in (("incident without its id", "anomaly.incident_id"), ("incident without rules", "anomaly.rules"),
                     ("incident with an episode's rule.id", {"rule.id": "gpu.temp.high"}),
                     ("incident record of another type", {"event.type": "updated"}),
                     ("incident with an action outside the table", {"anomaly.action": "panic"})):
    doc = dict(incs[0]) if incs else {}
    if isinstance(change, str):
        doc.pop(change, None)
    else:
        doc.update(change)
    check(bool(incs) and first_error(doc) is not None, "self-check: rejects " + name, "schema accepted it")
for req in SCHEMA["required"]:
    doc = dict(GOOD)
    del doc[req]
    check(first_error(doc) is not None, "self-check: requires " + req, "schema accepted it")

print("%d events validated" % total_events)
finish()
