#!/usr/bin/env python3
"""t_recordings.py - GPU logs as people keep them (issue 25), written here by a
seeded generator in the shapes of three real recordings (the recordings
themselves are held back): gpulog understands them without flags, stays quiet
on the healthy ones and flags the GPU that stands out.

  workstation: 13 h of two different GPUs (an RTX 4090 and a 4080), one row per
    GPU every 30 s, a script's own header with unit suffixes
    (utilization_gpu_pct, memory_used_mib, temperature_gpu_c, power_draw_w),
    bursty jobs, idle stretches, integer temperatures: no episode.
  training: 158 s of 8 GPUs sampled 4 times a second (temperature_C,
    utilization_gpu_percent, power_W), GPU 5 about 20 C hotter and 30 W above
    its peers at the same 100 % load: one episode on GPU 5 (gpu.peer.temp),
    none on its peers, none before the rule's 30 s.
  v100: 11 minutes of one GPU at 10 rows a second with whole-second epoch
    stamps from two interleaved readers, a job start: no row is a duplicate,
    no episode.
Each: every temperature, power and utilisation column in its gpu.* field,
every event valid against the schema. Then bad headers: a unit that does not
fit its field, a GPU-looking column that cannot be placed, a --map to an
unknown field: said with the column and line, never silently a metric.
"""
import datetime
import json
import os
import random
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lib import check, finish, schema_first_error  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GPULOG = os.environ.get("GPULOG", os.path.join(ROOT, os.environ.get("BUILD", "build"), "gpulog"))
TMP = tempfile.mkdtemp(prefix="t_recordings.", dir=os.environ.get("GPULOG_TEST_TMP"))
SCHEMA = json.load(open(os.path.join(ROOT, "schemas", "event.schema.json")))
first_error = schema_first_error(SCHEMA)


def workstation(path):
    """Two GPUs of two models, 30 s rows, 13 h: jobs of 20-90 min with idle between."""
    rnd = random.Random(25)
    t0 = datetime.datetime(2025, 3, 1, 8, 0, 0)
    busy = [False, False]
    left = [0, 0]
    temp = [35.0, 33.0]
    job_mem = [300, 300]
    with open(path, "w") as f:
        f.write("timestamp,gpu_id,name,utilization_gpu_pct,utilization_mem_pct,memory_used_mib,memory_total_mib,"
                "temperature_gpu_c,power_draw_w\n")
        for i in range(13 * 120):
            t = t0 + datetime.timedelta(seconds=30 * i)
            for g, (name, total, tdp, idle_w) in enumerate([("NVIDIA GeForce RTX 4090", 24564, 450, 22),
                                                            ("NVIDIA GeForce RTX 4080", 16376, 320, 15)]):
                if left[g] <= 0:
                    busy[g] = not busy[g]
                    left[g] = rnd.randint(40, 180) if busy[g] else rnd.randint(10, 120)
                    job_mem[g] = rnd.randint(6000, total - 1500) if busy[g] else rnd.randint(250, 600)
                left[g] -= 1
                u = min(100, max(0, rnd.gauss(88, 10))) if busy[g] else (rnd.random() < 0.05) * rnd.randint(1, 9)
                if busy[g] and rnd.random() < 0.1:
                    u = rnd.randint(20, 60)          # data loading dips
                target = (34 if g == 0 else 32) + u * (0.42 if g == 0 else 0.45)
                temp[g] += (target - temp[g]) * 0.35 + rnd.gauss(0, 0.6)
                w = idle_w + (tdp - idle_w) * u / 100 * rnd.uniform(0.85, 1.0)
                mem = job_mem[g] + (rnd.randint(-8, 8) if busy[g] else 0)   # a job's model and buffers: about constant
                f.write("%s,%d,%s,%d,%d,%d,%d,%d,%.2f\n" % (t.strftime("%Y-%m-%d %H:%M:%S"), g, name, round(u),
                                                           round(u * 0.45), mem, total, round(temp[g]), w))


def training(path):
    """8 GPUs at 4 Hz, all at 100 %; GPU 5 runs ~20 C hotter and ~30 W higher."""
    rnd = random.Random(26)
    t0 = 1731400000.0
    temp = [60.0 + rnd.uniform(-2, 2) for _ in range(8)]
    with open(path, "w") as f:
        f.write("timestamp,gpu_index,temperature_C,utilization_gpu_percent,power_W\n")
        for i in range(158 * 4):
            for g in range(8):
                t = t0 + i * 0.25 + g * 0.002
                base = 80.0 if g == 5 else 61.0
                temp[g] += (base - temp[g]) * 0.05 + rnd.gauss(0, 0.15)
                w = (328.0 if g == 5 else 298.0) + rnd.gauss(0, 6)
                stamp = datetime.datetime.fromtimestamp(t, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3]
                f.write("%s,%d,%d,100,%.1f\n" % (stamp, g, round(temp[g]), w))


def v100(path):
    """One V100, 10 rows a second, whole-second epoch stamps, two readers
    interleaved (their rows alternate and may repeat a value); idle, then a
    training job starts at 200 s."""
    rnd = random.Random(27)
    t0 = 1715000000
    temp, w = 38.0, 39.0
    with open(path, "w") as f:
        f.write("time,gpu,temp,util_percent,power_draw_w,mem_used_mib\n")
        for s in range(660):
            for k in range(10):
                busy = s >= 200
                u = 0 if not busy else min(100, max(0, round(rnd.gauss(93, 4))))
                target_t = 38 + (30 if busy else 0) * min(1, (s - 200) / 120 if busy else 0)
                temp += (target_t - temp) * 0.01 + rnd.gauss(0, 0.05)
                target_w = 250 if busy else 39
                w += (target_w - w) * 0.3 + rnd.gauss(0, 8 if busy else 0.5)
                mem = 15800 if busy else 300
                f.write("%d,0,%d,%d,%.1f,%d\n" % (t0 + s, round(temp), u, max(w, 20), mem))


def run(path, *args):
    p = subprocess.run([GPULOG, "run", "--no-live", "--tz", "UTC", "--host", "rec", *args, path],
                       capture_output=True, text=True, timeout=120)
    recs = [json.loads(l) for l in p.stdout.splitlines() if l.startswith("{")]
    return p.returncode, recs, p.stderr


def parse(path, *args):
    p = subprocess.run([GPULOG, "parse", "--tz", "UTC", "--host", "rec", *args, path], capture_output=True, text=True,
                       timeout=120)
    return p.returncode, [json.loads(l) for l in p.stdout.splitlines() if l.strip()], p.stderr


def summary_count(stderr, word):
    for line in stderr.splitlines():
        if line.startswith("gpulog run:") and (" " + word) in line:
            part = line.split(" " + word)[0].rsplit(" ", 1)[-1]
            return int(part) if part.isdigit() else None
    return None


def fields_ok(name, path, want):
    rc, evs, err = parse(path)
    check(rc == 0 and evs, name + ": parses", err[-300:])
    keys = set()
    for e in evs:
        keys.update(e)
    missing = [k for k in want if k not in keys]
    check(not missing, name + ": every temperature, power and utilisation column in its gpu.* field",
          "missing %s; metrics: %s" % (missing, sorted(k for k in keys if k.startswith("metrics."))))
    bad = [(e.get("event.id"), first_error(e)) for e in evs[:2000] if first_error(e)]
    check(not bad, name + ": events valid against the schema", bad[:2])
    return evs


def episodes(recs):
    return [r for r in recs if r.get("event.dataset") == "gpu.anomaly" and r.get("event.type") == "start"]


# --- the workstation: two models, unit-suffixed header, 13 quiet hours
ws = os.path.join(TMP, "workstation.csv")
workstation(ws)
fields_ok("workstation", ws, ["gpu.index", "gpu.name", "gpu.utilization.gpu.pct", "gpu.utilization.memory_copy.pct",
                              "gpu.memory.framebuffer.used_size", "gpu.memory.framebuffer.total_size",
                              "gpu.temperature.gpu", "gpu.power.usage"])
rc, recs, err = run(ws)
check(rc == 0, "workstation: run exits 0", err[-300:])
check("profile=gpu" in err, "workstation: auto picks the gpu profile", err[-300:])
eps = episodes(recs)
check(len(eps) == 0, "workstation: no episode in 13 healthy hours (two models are not peers)",
      [(r["rule.id"], r.get("gpu.index"), r.get("event.reason")) for r in eps][:5])
check(summary_count(err, "duplicates") == 0, "workstation: no row called a duplicate", err[-300:])

# --- the training run: 8 GPUs at 4 Hz, one hot
tr = os.path.join(TMP, "training.csv")
training(tr)
fields_ok("training", tr, ["gpu.index", "gpu.temperature.gpu", "gpu.utilization.gpu.pct", "gpu.power.usage"])
rc, recs, err = run(tr)
check(rc == 0, "training: run exits 0", err[-300:])
eps = episodes(recs)
hot = [r for r in eps if r.get("gpu.index") == 5]
others = [r for r in eps if r.get("gpu.index") != 5]
check(len(hot) == 1 and hot[0]["rule.id"] == "gpu.peer.temp", "training: the hot GPU flagged once, by gpu.peer.temp",
      [(r["rule.id"], r.get("event.reason")) for r in hot])
check(not others, "training: its seven peers quiet", [(r["rule.id"], r.get("gpu.index")) for r in others][:5])
if hot:
    start = datetime.datetime.fromisoformat(hot[0]["@timestamp"].replace("Z", "+00:00")).timestamp()
    check(start - 1731400000.0 >= 29, "training: not before the rule's 30 s at 4 Hz (rows folded into 1 s steps)",
          start - 1731400000.0)
    check("peers assumed alike" in hot[0].get("event.reason", ""),
          "training: the reason says the peers' model was assumed (no name column)", hot[0].get("event.reason"))
check(summary_count(err, "duplicates") == 0, "training: no row called a duplicate", err[-300:])
check("rows folded" in err, "training: the folding is counted", err[-300:])

# --- the V100: 10 rows a second on whole-second stamps
vp = os.path.join(TMP, "v100.csv")
v100(vp)
fields_ok("v100", vp, ["gpu.index", "gpu.temperature.gpu", "gpu.utilization.gpu.pct", "gpu.power.usage",
                       "gpu.memory.framebuffer.used_size"])
rc, recs, err = run(vp)
check(rc == 0, "v100: run exits 0", err[-300:])
check(summary_count(err, "duplicates") == 0, "v100: none of 6,600 rows is a duplicate", err[-400:])
check(" 660 samples" in err and "5940 rows folded" in err, "v100: one sample a second, the rest folded (counted)",
      err[-400:])
eps = episodes(recs)
check(not eps, "v100: no episode at the job start", [(r["rule.id"], r.get("event.reason")) for r in eps][:5])
rc, recs, err = run(vp, "--profile", "generic")
eps = episodes(recs)
check(len(eps) <= 3, "v100 with --profile generic: at most one episode per series (temperature, power, utilisation, "
      "memory) at the job start, not a flood", len(eps))

# --- bad headers: said with column and line, never silently a metric
bad = os.path.join(TMP, "bad.csv")
with open(bad, "w") as f:
    f.write("timestamp,gpu,temperature_gpu_w,power_draw_w\n2025-01-01 00:00:00,0,60,100\n")
rc, evs, err = parse(bad)
check(rc == 0 and any("column=3" in l and "line=1" in l and "temperature_gpu_w" in l for l in err.splitlines()),
      "a GPU-looking column whose unit does not fit: a warning with column and line", err[-400:])
check(evs and "metrics.temperature_gpu_w" in evs[0] and "gpu.temperature.gpu" not in evs[0],
      "... its values kept as a metric, not put in the wrong field", evs[:1])
with open(bad, "w") as f:
    f.write("timestamp,gpu,power_w\n2025-01-01 00:00:00,0,60C\n")
rc, evs, err = parse(bad)
check(rc == 0 and not evs and "bad.csv:2: column 3: unit 'C' does not fit gpu.power.usage" in err,
      "a value whose unit does not fit its column's field: the row refused with file, line and column", err[-300:])
rc, evs, err = parse(bad, "--map", "power_w=gpu.pwr")
check(rc == 2 and "unknown field 'gpu.pwr'" in err and "did you mean" in err, "--map to an unknown field: usage error",
      err[-300:])
p = subprocess.run([GPULOG, "run", "--no-live", "--map", "x=gpu.temprature.gpu", bad], capture_output=True, text=True)
check(p.returncode == 2 and "did you mean gpu.temperature.gpu" in p.stderr, "run --map to an unknown field: usage error",
      p.stderr[-300:])
with open(bad, "w") as f:
    f.write("time,ts,temp_f\n1,2\n")
rc, evs, err = parse(bad, "--map", "temp_f=gpu.temperature.gpu")
check("expected 3 fields as in the header, got 2" in err, "a row that does not fit its header: refused with the reason",
      err[-300:])
finish()
