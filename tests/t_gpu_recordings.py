#!/usr/bin/env python3
"""t_gpu_recordings.py - the real-GPU-recordings part of `make eval`, without
the recordings: tools/gpu_recordings.json is checked (every pin has a 40-hex
commit and a sha256, a licence, labels of a known kind with a reason, inside
the recording, on its GPUs); the scorer of tools/gpu_recordings_eval.py on hand-made episodes
(healthy GPU-days less the outliers' ranges, an episode caught by the label
it overlaps on its GPU, an open episode reaching the end of the input, a
start paired with its end, incidents left out, timeless recordings); the
whole tool on small recordings written here with a stand-in gpulog that
prints canned records (figures per recording, the total line, a missed
outlier, a recording not in the cache, the one skip line with no cache);
scripts/fetch_gpu_recordings.sh on a git repository made here (a file and a
section of a capture file extracted and checked, idempotence, a refused
hash, a repository that cannot be had skipped with its reason). Nothing is
read outside the repository and the scratch folder, no network. Ends with
"N passed, N failed"."""
import datetime
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True   # no __pycache__ in the tree
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))
sys.path.insert(0, os.path.join(ROOT, "tests"))
import gpu_recordings_eval as ev  # noqa: E402
from lib import check, finish  # noqa: E402

TOOL = os.path.join(ROOT, "tools", "gpu_recordings_eval.py")
FETCH = os.path.join(ROOT, "scripts", "fetch_gpu_recordings.sh")


def iso(t):
    return datetime.datetime.fromtimestamp(t, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


# ---- the committed list
doc = json.load(open(os.path.join(ROOT, "tools", "gpu_recordings.json")))
recs = doc["recordings"]
check(len(recs) >= 8 and "before gpulog was run" in doc.get("how_labelled", ""),
      "the list holds recordings and says how and when they were labelled", len(recs))
names = [r["name"] for r in recs]
check(len(set(names)) == len(names), "recording names unique")
bad = []
for r in recs:
    why = []
    if not re.fullmatch(r"[0-9a-f]{40}", r.get("commit", "")):
        why.append("commit")
    if not re.fullmatch(r"[0-9a-f]{64}", r.get("sha256", "")) or ("section" in r) != ("file_sha256" in r):
        why.append("sha256")
    if not r.get("licence") or not r.get("looked_at") or not r.get("gpus") or not r.get("shape"):
        why.append("licence/looked_at/gpus/shape")
    span = ev.recording_span(r)
    for lab in r.get("labels", []):
        if lab.get("kind") not in ("outlier", "note") or not lab.get("how") or not lab.get("what"):
            why.append("label kind/how/what")
        if not set(ev.label_gpus(lab, r)) <= set(r["gpus"]):
            why.append("label GPUs not of the recording")
        if span is None and ("from" in lab or "to" in lab):
            why.append("a time range on a timeless recording")
        if span is not None and not (span[0] <= ev.ts(lab["from"]) <= ev.ts(lab["to"]) <= span[1]):
            why.append("label %s outside the recording" % lab.get("what"))
    if why:
        bad.append((r.get("name"), why))
check(not bad, "every recording pinned, licensed and labelled inside itself", bad)
check(any(lab["kind"] == "outlier" for r in recs for lab in r["labels"]), "at least one labelled outlier")

# ---- the scorer on hand-made records
DAY = 86400.0
t0 = 1700000000.0
rec = {"name": "two", "gpus": ["0", "1"], "start": iso(t0), "end": iso(t0 + DAY),
       "labels": [{"kind": "note", "what": "job-start", "gpus": "all", "from": iso(t0), "to": iso(t0 + 60), "how": "x"},
                  {"kind": "outlier", "what": "hot", "gpus": ["1"], "from": iso(t0 + 6 * 3600), "to": iso(t0 + 12 * 3600), "how": "x"}]}
check(abs(ev.healthy_gpu_days(rec) - 1.75) < 1e-9, "healthy GPU-days: every GPU's span less the outlier's range on its GPU",
      ev.healthy_gpu_days(rec))
check(ev.union_length([(0, 10), (5, 15), (20, 30)]) == 25, "overlapping ranges counted once")


def start(rule, gpu, t, metric="gpu.temperature.gpu", dataset="gpu.anomaly", estart=None):
    r = {"event.type": "start", "event.dataset": dataset, "rule.id": rule, "@timestamp": iso(t),
         "event.start": iso(estart if estart is not None else t), "anomaly.metric": metric, "event.reason": rule + " reason"}
    if gpu is not None:
        r["gpu.index"] = gpu
    return r


def end(rule, gpu, t, estart, metric="gpu.temperature.gpu"):
    r = {"event.type": "end", "event.dataset": "gpu.anomaly", "rule.id": rule, "@timestamp": iso(t),
         "event.start": iso(estart), "anomaly.metric": metric}
    if gpu is not None:
        r["gpu.index"] = gpu
    return r


records = [start("a", 0, t0 + 7 * 3600), end("a", 0, t0 + 7 * 3600 + 300, t0 + 7 * 3600),      # GPU 0: healthy stretch
           start("b", 1, t0 + 3600), end("b", 1, t0 + 2 * 3600, t0 + 3600),                    # GPU 1 before the outlier
           start("c", 1, t0 + 5 * 3600),                                                         # GPU 1, open: reaches the outlier
           start("gpu.incident", 1, t0 + 5 * 3600, dataset="gpu.incident")]
eps = ev.episodes_of(records, t0 + DAY)
check(len(eps) == 3, "incident records left out", eps)
check([e["end"] for e in eps] == [t0 + 7 * 3600 + 300, t0 + 2 * 3600, t0 + DAY], "a start paired with its end; an open one reaches the end of the input",
      [e["end"] for e in eps])
healthy, caught = ev.score(rec, eps)
check(sorted(e["rule"] for e in healthy) == ["a", "b"], "episodes off the outlier's range count on the healthy stretches", healthy)
check(len(caught) == 1 and caught[0][1] is not None and caught[0][1]["rule"] == "c", "the outlier caught by the open episode overlapping it on its GPU", caught)
eps2 = ev.episodes_of([start("d", 0, t0 + 7 * 3600)], t0 + DAY)
check(ev.score(rec, eps2)[1][0][1] is None, "an episode on another GPU does not catch the outlier")
eps3 = ev.episodes_of([start("e", None, t0 + 8 * 3600, estart=t0 + 8 * 3600)], t0 + DAY)
h3, c3 = ev.score(rec, eps3)
check(c3[0][1] is not None and not h3, "an episode without a GPU id matches the outlier's GPU")
eps4 = ev.episodes_of([start("f", 1, t0 + 13 * 3600, estart=t0 + 11 * 3600)], t0 + DAY)
check(ev.score(rec, eps4)[1][0][1] is not None, "an episode whose event.start lies in the range overlaps it")
timeless = {"name": "dm", "gpus": ["0"], "timeless": True, "duration_s": 120, "labels": []}
check(abs(ev.healthy_gpu_days(timeless) - 120 / DAY) < 1e-12, "a timeless recording counts its duration")
check(len(ev.score(timeless, ev.episodes_of([start("g", 0, t0)], None))[0]) == 1, "every episode of a timeless recording lies in it")
check(ev.healthy_gpu_days({"name": "q", "gpus": ["0"], "timeless": True, "snapshot": True, "labels": []}) is None, "a snapshot has no GPU-days")

# ---- the whole tool with a stand-in gpulog
FAKE = r'''#!/usr/bin/env python3
import json, os, sys
a = sys.argv[1:]
path = a[-1]
canned = json.load(open(os.environ["FAKE_CANNED"]))[os.path.basename(os.path.dirname(path))]
if a[0] == "parse":
    for e in canned["parse"]:
        print(json.dumps(e))
    sys.stderr.write("gpulog parse: %s: 3 lines, %d events, 0 rejected, 1 skipped (headers, blanks)\n" % (path, len(canned["parse"])))
else:
    assert "--no-live" in a and "--tz" in a, a
    for e in canned["run"]:
        print(json.dumps(e))
    sys.stderr.write("ts=x level=info msg=profile profile=gpu reason=\"canned\"\n")
    sys.stderr.write("gpulog run: %s: 3 lines, 2 events, 0 rejected; anomalies: 1 started\n" % path)
'''
with tempfile.TemporaryDirectory() as tmp:
    fake = os.path.join(tmp, "gpulog")
    open(fake, "w").write(FAKE)
    os.chmod(fake, 0o755)
    cache = os.path.join(tmp, "cache")
    lst = {"recordings": []}
    canned = {}

    def add(name, body, gpus, span, labels, parse, run, **kw):
        os.makedirs(os.path.join(cache, name))
        open(os.path.join(cache, name, "data.csv"), "w").write(body)
        r = {"name": name, "repo": "o/" + name, "commit": "0" * 40, "path": "data.csv", "file": "data.csv",
             "sha256": hashlib.sha256(body.encode()).hexdigest(), "licence": "test", "gpus": gpus, "rows": 2,
             "labels": labels}
        if span:
            r["start"], r["end"] = iso(span[0]), iso(span[1])
        r.update(kw)
        lst["recordings"].append(r)
        canned[name] = {"parse": parse, "run": run}

    metric = lambda g, t, extra: dict({"event.kind": "metric", "@timestamp": iso(t), "gpu.index": g}, **extra)   # noqa: E731
    add("hot", "a,b\n1,2\n", ["0", "1"], (t0, t0 + DAY),
        [{"kind": "outlier", "what": "hot", "gpus": ["1"], "from": iso(t0 + 3600), "to": iso(t0 + 7200), "how": "x"}],
        [metric(0, t0, {"gpu.temperature.gpu": 40, "metrics.phase_x": 1}), metric(1, t0, {"gpu.temperature.gpu": 60})],
        [start("gpu.peer.temp", 1, t0 + 4000), start("gpu.temp.rise", 0, t0 + 9000)])
    add("quiet", "a\n1\n", ["0"], (t0, t0 + DAY / 2),
        [{"kind": "outlier", "what": "frozen", "gpus": ["0"], "from": iso(t0 + 100), "to": iso(t0 + 200), "how": "x"}],
        [metric(0, t0, {"gpu.power.usage": 1})], [])
    add("gone", "x\n", ["0"], (t0, t0 + 10), [], [], [])
    os.remove(os.path.join(cache, "gone", "data.csv"))
    lf = os.path.join(tmp, "list.json")
    json.dump(lst, open(lf, "w"))
    cf = os.path.join(tmp, "canned.json")
    json.dump(canned, open(cf, "w"))
    env = dict(os.environ, FAKE_CANNED=cf)

    def tool(*args):
        p = subprocess.run([sys.executable, TOOL, "--gpulog", fake, "--list", lf] + list(args), cwd=ROOT, env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        return p.returncode, p.stdout, p.stderr

    rc, out, err = tool("--cache", cache)
    last = out.strip().splitlines()[-1] if out.strip() else ""
    check(rc == 0, "the tool runs", err[-500:])
    check("hot: 2 events (2 rows labelled), GPUs 2/2, 24.0 h; fields gpu.temperature.gpu; metrics.* metrics.phase_x" in out,
          "per recording: events, GPUs, duration, fields recognised and columns left in metrics.*", out[:800])
    check("  episodes 2, on healthy stretches 1 (1.9583 GPU-days: 0.5/GPU-day); outliers caught 1/1" in out,
          "per recording: episodes per GPU-day on the healthy stretches, outliers caught", out[:1200])
    check("outlier hot GPU 1" in out and "caught by gpu.peer.temp" in out, "the catching episode named", out[:1200])
    check("outlier frozen GPU 0" in out and "MISSED" in out, "a missed outlier said so", out)
    check("gone: skipped (not in the cache" in out, "a recording not in the cache skipped with its reason", out)
    check("  gpulog parse: data.csv: 3 lines" in out and 'profile gpu reason="canned"' in out, "gpulog's own summary lines kept", out)
    check(last == "gpu-recordings: 2 recordings (1 skipped), 3 events, 3 GPUs, 2.457 healthy GPU-days; "
                  "1 episodes on healthy stretches = 0.4 per GPU-day (target <= 1); outliers caught 1/2", "the total line", last)
    # a changed file is not scored as the pinned one
    open(os.path.join(cache, "quiet", "data.csv"), "a").write("2\n")
    rc, out, err = tool("--cache", cache)
    check(rc == 0 and "quiet: skipped (not in the cache with its pinned sha256" in out, "a file that is not the pinned one is skipped", out[-600:])
    rc, out, err = tool("--cache", os.path.join(tmp, "nothing"))
    check(rc == 0 and out.strip() == "gpu-recordings: skipped (no recording in %s: run scripts/fetch_gpu_recordings.sh)" % os.path.join(tmp, "nothing"),
          "no cache: the one skip line, exit 0", out + err)
    rc, out, err = tool("--cache", cache, "--only", "gone")
    check(rc == 0 and out.startswith("gpu-recordings: skipped (none of the 1 recordings"), "nothing of the list there: the skip line", out + err)

    # ---- the fetch script on a repository made here
    def git(d, *a):
        return subprocess.run(["git", "-C", d] + list(a), check=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env=dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t", GIT_COMMITTER_NAME="t",
                                       GIT_COMMITTER_EMAIL="t@t", GIT_CONFIG_GLOBAL="/dev/null", GIT_CONFIG_SYSTEM="/dev/null")).stdout
    src = os.path.join(tmp, "src")
    os.makedirs(os.path.join(src, "data"))
    git(src, "init", "-q")
    csv_body = "timestamp,gpu,temp_c\n1,0,40\n"
    cap = "#####\n# idle :: query (-q)\n# $ nvidia-smi -q\n#####\n\n==NVSMI LOG==\nGPU 0\n#####\n# load :: dmon\n#####\nx\n"
    open(os.path.join(src, "data", "t.csv"), "w").write(csv_body)
    open(os.path.join(src, "cap.txt"), "w").write(cap)
    git(src, "add", ".")
    git(src, "commit", "-q", "-m", "data")
    commit = git(src, "rev-parse", "HEAD").strip()
    sh = lambda s: hashlib.sha256(s.encode()).hexdigest()   # noqa: E731
    section = "\n==NVSMI LOG==\nGPU 0\n"
    pins = {"recordings": [
        {"name": "csv", "repo": "me/src", "commit": commit, "path": "data/t.csv", "sha256": sh(csv_body), "file": "t.csv"},
        {"name": "q", "repo": "me/src", "commit": commit, "path": "cap.txt", "sha256": sh(cap), "section": "idle :: query (-q)",
         "file_sha256": sh(section), "file": "q.txt"}]}
    pf = os.path.join(tmp, "pins.json")
    json.dump(pins, open(pf, "w"))
    fcache = os.path.join(tmp, "fcache")

    def fetch(extra_env, pinfile=pf):
        e = {k: v for k, v in os.environ.items() if not k.startswith("GPU_REC_")}
        e.update(extra_env, GPU_REC_LIST=pinfile, GIT_CONFIG_GLOBAL="/dev/null")
        p = subprocess.run(["bash", FETCH, fcache], cwd=ROOT, env=e, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        return p.returncode, p.stdout + p.stderr

    rc, out = fetch({"GPU_REC_GIT_ME_SRC": src})
    check(rc == 0 and "2 of 2 recordings" in out and "2 fetched now" in out, "fetch from GPU_REC_GIT_<REPO>=DIR", out)
    check(open(os.path.join(fcache, "csv", "t.csv")).read() == csv_body, "the pinned file extracted")
    check(open(os.path.join(fcache, "q", "q.txt")).read() == section, "the pinned section of a capture file extracted, alone")
    rc, out = fetch({"GPU_REC_GIT_ME_SRC": src})
    check(rc == 0 and "0 fetched now" in out, "idempotent: nothing fetched again", out)
    os.makedirs(os.path.join(tmp, "mirrors", "me+src"))
    subprocess.run(["git", "clone", "-q", "--bare", src, os.path.join(tmp, "mirrors", "me+src", "repo")], check=True)
    os.remove(os.path.join(fcache, "csv", ".sha256"))
    rc, out = fetch({"GPU_REC_MIRRORS": os.path.join(tmp, "mirrors")})
    check(rc == 0 and "1 fetched now" in out, "fetch from a folder of owner+name mirrors", out)
    pins["recordings"][0]["sha256"] = sh("other")
    pins["recordings"][0]["name"] = "csv2"
    json.dump(pins, open(pf, "w"))
    rc, out = fetch({"GPU_REC_GIT_ME_SRC": src})
    check(rc == 4 and "csv2: me/src" in out and "refusing it" in out and not os.path.exists(os.path.join(fcache, "csv2")),
          "a hash mismatch refused, exit 4", out)
    pins["recordings"] = [dict(pins["recordings"][1], name="q2", repo="me/elsewhere")]
    json.dump(pins, open(pf, "w"))
    rc, out = fetch({"GPU_REC_MIRRORS": os.path.join(tmp, "mirrors")})
    check(rc == 5 and "q2: skipped (no mirror of me/elsewhere under GPU_REC_MIRRORS=" in out, "a repository that cannot be had: one skip line, exit 5", out)
    pins["recordings"] = [dict(pins["recordings"][0], name="q3", repo="me/src", commit="1" * 40)]
    json.dump(pins, open(pf, "w"))
    rc, out = fetch({"GPU_REC_GIT_ME_SRC": src})
    check(rc == 5 and "q3: skipped (GPU_REC_GIT_ME_SRC=%s holds no commit %s)" % (src, "1" * 40) in out, "a commit that is not there: skipped", out)
    open(pf, "w").write("{")
    rc, out = fetch({})
    check(rc == 2, "an unreadable list: exit 2", out)

finish()
