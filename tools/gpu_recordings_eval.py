#!/usr/bin/python3
"""gpu_recordings_eval.py - gpulog on real GPU recordings, scored against hand labels.

usage: gpu_recordings_eval.py --gpulog BIN [--list FILE] [--cache DIR] [--only NAME[,NAME]]

The recordings and their labels are tools/gpu_recordings.json (what each one
is, its pin, licence, and how it was labelled); scripts/fetch_gpu_recordings.sh
puts the files in the cache (.cache/gpu-recordings/<name>/<file>). For each
recording in the cache (its sha256 checked) this runs `gpulog parse --tz UTC`
(what gpulog reads: events, GPUs, the gpu.* fields the events carry and the
columns that stayed metrics.*) and `gpulog run --no-live --tz UTC` (the
default profile, auto), with the recording's own extra arguments ("args",
e.g. --columns for a header-less file), and prints:

  events   the metric events gpulog made, next to the rows the labels count
           (a wide row of N GPUs makes N events)
  GPUs     the labelled GPU ids gpulog saw, of the labelled ones, and the
           ids it made up or the events it left without one
  episodes per GPU-day on the healthy stretches: every GPU's whole recording
           minus the outlier labels' ranges on their GPUs; an episode counts
           there unless it overlaps an outlier label on its GPU
  outliers caught: a label of kind "outlier" is caught by an episode on one
           of its GPUs (an episode without a GPU id matches any GPU) whose
           time [event.start or @timestamp, its end record or the end of the
           input] overlaps the label's range

Recordings without time (dmon without -o T, nvidia-smi -q snapshots:
"timeless") are stamped by gpulog at read time: every episode of such a
recording lies in it; a snapshot has no GPU-days (its episodes are counted,
no rate). gpu.incident records group episodes and are not counted.

A recording missing from the cache prints "<name>: skipped (not in the
cache ...)"; with none there the one line is "gpu-recordings: skipped (why)"
and the exit status is 0 (make eval goes on). Exit 1 when gpulog fails on a
recording, 2 on usage or an unreadable list.

Last line: "gpu-recordings: N recordings (S skipped), E events, G GPUs,
D healthy GPU-days; E episodes on healthy stretches = X per GPU-day
(target <= 1); outliers caught C/L"
"""
import datetime
import hashlib
import json
import os
import subprocess
import sys

ID_FIELDS = ("gpu.index", "gpu.uuid", "gpu.pci.bus_id")


def ts(s):
    """ISO 8601 (Z or an offset; naive = UTC) -> epoch seconds"""
    d = datetime.datetime.fromisoformat(s.replace("Z", "+00:00"))
    if d.tzinfo is None:
        d = d.replace(tzinfo=datetime.timezone.utc)
    return d.timestamp()


def gpu_of(rec):
    """the GPU id of an event as a string, or None"""
    for k in ID_FIELDS:
        if rec.get(k) is not None:
            return str(rec[k])
    return None


def sha256_of(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for b in iter(lambda: f.read(1 << 20), b""):
            h.update(b)
    return h.hexdigest()


def label_gpus(label, rec):
    g = label.get("gpus", "all")
    return list(rec["gpus"]) if g == "all" else [str(x) for x in g]


def recording_span(rec):
    """(start, end) epoch seconds, or None for a timeless recording"""
    if rec.get("timeless"):
        return None
    return ts(rec["start"]), ts(rec["end"])


def outlier_ranges(rec):
    """{gpu: [(from, to)]} of the outlier labels (timeless: the whole recording, None)"""
    out = {}
    span = recording_span(rec)
    for lab in rec.get("labels", []):
        if lab.get("kind") != "outlier":
            continue
        rng = (ts(lab["from"]) if "from" in lab else span[0], ts(lab["to"]) if "to" in lab else span[1]) if span else None
        for g in label_gpus(lab, rec):
            out.setdefault(g, []).append(rng)
    return out


def union_length(ranges):
    """total length of a list of (a, b) intervals, overlaps counted once"""
    total, end = 0.0, None
    for a, b in sorted(ranges):
        if end is None or a > end:
            total += b - a
            end = b
        elif b > end:
            total += b - end
            end = b
    return total


def healthy_gpu_days(rec):
    """GPU-days of the healthy stretches; None for a snapshot"""
    if rec.get("snapshot"):
        return None
    outl = outlier_ranges(rec)
    span = recording_span(rec)
    total = 0.0
    for g in rec["gpus"]:
        if span is None:   # timeless: its length, less any outlier covering it (all of it)
            total += 0.0 if g in outl else float(rec.get("duration_s", 0))
            continue
        a, b = span
        cut = union_length([(max(a, x), min(b, y)) for x, y in outl.get(g, []) if min(b, y) > max(a, x)])
        total += (b - a) - cut
    return total / 86400.0


def episode_key(r):
    """what a start and its end record share (docs/detectors.md, the record fields)"""
    return (r.get("rule.id"), gpu_of(r), r.get("anomaly.metric"), r.get("event.start"))


def episodes_of(records, input_end):
    """gpulog run records -> [{rule, gpu, t, start, end, reason}] (starts only, incidents left out)"""
    eps, by_id = [], {}
    for r in records:
        if r.get("event.dataset") == "gpu.incident":
            continue
        typ = r.get("event.type")
        if typ == "start":
            t = ts(r["@timestamp"])
            e = {"rule": r.get("rule.id", "?"), "gpu": gpu_of(r), "t": t,
                 "start": ts(r["event.start"]) if r.get("event.start") else t, "end": None,
                 "reason": r.get("event.reason", "")}
            eps.append(e)
            by_id[episode_key(r)] = e
        elif typ == "end":
            e = by_id.get(episode_key(r))
            if e is not None and e["end"] is None:
                e["end"] = ts(r["@timestamp"])
    for e in eps:
        if e["end"] is None:
            e["end"] = max(input_end, e["t"]) if input_end is not None else float("inf")
    return eps


def score(rec, eps):
    """-> (healthy episodes [ep], caught [(label, ep or None)])"""
    timeless = recording_span(rec) is None
    outl = outlier_ranges(rec)

    def overlaps(e, rng):
        if timeless or rng is None:
            return True
        return e["start"] <= rng[1] and e["end"] >= rng[0]

    healthy = []
    for e in eps:
        gpus = [e["gpu"]] if e["gpu"] is not None else list(outl)
        if not any(overlaps(e, rng) for g in gpus for rng in outl.get(g, [])):
            healthy.append(e)
    caught = []
    span = recording_span(rec)
    for lab in rec.get("labels", []):
        if lab.get("kind") != "outlier":
            continue
        rng = None if span is None else (ts(lab["from"]) if "from" in lab else span[0], ts(lab["to"]) if "to" in lab else span[1])
        gpus = label_gpus(lab, rec)
        hit = next((e for e in eps if (e["gpu"] is None or e["gpu"] in gpus) and overlaps(e, rng)), None)
        caught.append((lab, hit))
    return healthy, caught


def run_gpulog(gpulog, args):
    """-> (rc, records, stderr)"""
    p = subprocess.run([gpulog] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors="replace")
    recs = []
    for line in p.stdout.splitlines():
        line = line.strip()
        if line.startswith("{"):
            try:
                recs.append(json.loads(line))
            except ValueError:
                pass
    return p.returncode, recs, p.stderr


def summary_lines(stderr, prog):
    """gpulog's own summary lines ("gpulog parse: FILE: ...") and the profile it chose"""
    out = [l.strip() for l in stderr.splitlines() if l.startswith(prog + ":")]
    out += ["profile " + l.split("profile=", 2)[-1] for l in stderr.splitlines() if "msg=profile" in l]
    return out


def compact(keys):
    """field names, the members of a family (gpu.throttling.reason.*) as one"""
    out, fam = [], {}
    for k in keys:
        head, _, tail = k.rpartition(".")
        if head.endswith(".reason"):
            fam.setdefault(head, []).append(tail)
        else:
            out.append(k)
    out += ["%s.{%s}" % (h, ",".join(v)) for h, v in fam.items()]
    return sorted(out)


def fmt_dur(s):
    if s is None:
        return "-"
    return "%.1f h" % (s / 3600) if s >= 5400 else "%.1f min" % (s / 60) if s >= 90 else "%.0f s" % s


def main(argv):
    gpulog, lst, cache, only = None, "tools/gpu_recordings.json", ".cache/gpu-recordings", None
    a = list(argv)
    while a:
        if a[0] in ("--gpulog", "--list", "--cache", "--only") and len(a) > 1:
            if a[0] == "--gpulog":
                gpulog = a[1]
            elif a[0] == "--list":
                lst = a[1]
            elif a[0] == "--cache":
                cache = a[1]
            else:
                only = set(a[1].split(","))
            a = a[2:]
        else:
            print(__doc__.split("\n\n")[1], file=sys.stderr)
            return 2
    if not gpulog:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    try:
        recs = json.load(open(lst))["recordings"]
    except (OSError, ValueError, KeyError) as e:
        print("gpu-recordings: %s: %s" % (lst, e), file=sys.stderr)
        return 2
    if only:
        recs = [r for r in recs if r["name"] in only]
    have = []
    for r in recs:
        path = os.path.join(cache, r["name"], r["file"])
        want = r.get("file_sha256") or r["sha256"]
        if os.path.isfile(path) and sha256_of(path) == want:
            have.append((r, path))
    if not have:
        why = "no recording in %s: run scripts/fetch_gpu_recordings.sh" % cache if not os.path.isdir(cache) or not os.listdir(cache) \
            else "none of the %d recordings of %s is in %s with its pinned sha256: run scripts/fetch_gpu_recordings.sh" % (len(recs), lst, cache)
        print("gpu-recordings: skipped (%s)" % why)
        return 0
    if not os.access(gpulog, os.X_OK):
        print("gpu-recordings: skipped (no gpulog binary at %s)" % gpulog)
        return 0
    tot = {"rows": 0, "gpus": 0, "days": 0.0, "healthy": 0, "labels": 0, "caught": 0, "skipped": 0}
    for r in recs:
        if not any(r is h for h, _ in have):
            print("%s: skipped (not in the cache with its pinned sha256: scripts/fetch_gpu_recordings.sh)" % r["name"])
            tot["skipped"] += 1
    for r, path in have:
        extra = list(r.get("args", []))
        rc, events, err = run_gpulog(gpulog, ["parse", "--tz", "UTC", "--quiet"] + extra + [path])
        if rc != 0:
            print("gpu-recordings: gpulog parse failed (%d) on %s: %s" % (rc, r["name"], err.strip()[-300:]), file=sys.stderr)
            return 1
        metrics = [e for e in events if e.get("event.kind") == "metric"]
        gpus_seen = sorted({gpu_of(e) for e in metrics if gpu_of(e) is not None}, key=lambda s: (len(s), s))
        fields = compact(sorted({k for e in metrics for k in e if k.startswith("gpu.") and k not in ID_FIELDS and k != "gpu.name"}))
        unrec = sorted({k for e in metrics for k in e if k.startswith("metrics.")})
        parse_sum = summary_lines(err, "gpulog parse")
        rc, out, err = run_gpulog(gpulog, ["run", "--no-live", "--tz", "UTC", "--host", r["name"], "--quiet"] + extra + [path])
        if rc != 0:
            print("gpu-recordings: gpulog run failed (%d) on %s: %s" % (rc, r["name"], err.strip()[-300:]), file=sys.stderr)
            return 1
        span = recording_span(r)
        eps = episodes_of(out, span[1] if span else None)
        healthy, caught = score(r, eps)
        days = healthy_gpu_days(r)
        dur = None if span is None else span[1] - span[0]
        if dur is None and not r.get("snapshot"):
            dur = r.get("duration_s")
        unknown = [g for g in gpus_seen if g not in r["gpus"]]
        known = len([g for g in gpus_seen if g in r["gpus"]])
        noid = any(gpu_of(e) is None for e in metrics)
        print("%s: %d events (%d rows labelled), GPUs %d/%d%s%s, %s; fields %s; metrics.* %s" % (
            r["name"], len(metrics), r.get("rows", 0), known, len(r["gpus"]),
            " (+%d unlabelled ids: %s)" % (len(unknown), ",".join(unknown[:6])) if unknown else "",
            " (+events without a GPU id)" if noid else "",
            "snapshot" if r.get("snapshot") else fmt_dur(dur), " ".join(fields) or "none", " ".join(unrec) or "none"))
        rate = "-" if not days else "%.1f/GPU-day" % (len(healthy) / days)
        print("  episodes %d, on healthy stretches %d (%s GPU-days: %s); outliers caught %d/%d" % (
            len(eps), len(healthy), "-" if days is None else "%.4f" % days, rate, sum(1 for _, e in caught if e), len(caught)))
        for lab, e in caught:
            print("  outlier %s GPU %s %s..%s: %s" % (lab["what"], ",".join(label_gpus(lab, r)), lab.get("from", "start"), lab.get("to", "end"),
                  "caught by %s at %s" % (e["rule"], datetime.datetime.fromtimestamp(e["t"], datetime.timezone.utc).isoformat()) if e else "MISSED"))
        for e in healthy[:6]:
            print("  episode %s GPU %s at %s: %s" % (e["rule"], e["gpu"] if e["gpu"] is not None else "-",
                  datetime.datetime.fromtimestamp(e["t"], datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"), e["reason"][:140]))
        if len(healthy) > 6:
            print("  ... %d more on healthy stretches" % (len(healthy) - 6))
        for s in parse_sum + summary_lines(err, "gpulog run"):
            print("  " + s.replace(path, r["file"]))
        tot["rows"] += len(metrics)
        tot["gpus"] += len(r["gpus"])
        tot["days"] += days or 0.0
        tot["healthy"] += len(healthy)
        tot["labels"] += len(caught)
        tot["caught"] += sum(1 for _, e in caught if e)
    print("gpu-recordings: %d recordings (%d skipped), %d events, %d GPUs, %.3f healthy GPU-days; %d episodes on healthy stretches = %s per GPU-day (target <= 1); outliers caught %d/%d" % (
        len(have), tot["skipped"], tot["rows"], tot["gpus"], tot["days"], tot["healthy"],
        "%.1f" % (tot["healthy"] / tot["days"]) if tot["days"] else "-", tot["caught"], tot["labels"]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
