#!/usr/bin/python3
"""evalscore.py - scores gpulog anomaly episodes against generator labels.

usage: evalscore.py [--grace S] [--name NAME] [--fa-all] [--no-gate] FAULT_PAIRS... -- CLEAN_PAIRS...
  each pair is LABELS.json:RECORDS.ndjson

--name: the summary line reads "eval-NAME: ..." (a second fault model);
--fa-all: false alarms per GPU-hour over every trace (episodes of the
fault traces that match no label count too), not only the fault-free
ones; --no-gate: exit 0 whatever the figures (a model reported, not
gated). Kinds come from KINDS and from the labels (tools/genfaults.py
adds thermal_creep); labels with a "severity" also get recall by it.

An episode (a "start" record) matches a label when it is on the label's
host and GPU (an episode with no GPU, e.g. an Xid whose bus id was not
mapped, matches any GPU of the host) and its detection time (@timestamp)
lies in [start, end + grace]. A label with a matching episode is detected
(delay = first detection - start, in 1 s samples); episodes matching no
label are false alarms. Per kind: recall over that kind's labels;
precision over the episodes of the rules that report that kind (1 - their
false alarms / their episodes). False alarms per GPU-hour come from the
fault-free traces only.
"""
import datetime, json, statistics, sys

KINDS = ["thermal", "power_cap", "off_bus", "ecc_storm", "mem_leak", "hang",
         "idle_waste", "straggler", "pcie_replay", "clock_drop"]
RULE_KIND = {
    "gpu.thermal": "thermal", "gpu.temp.high": "thermal", "gpu.temp.rise": "thermal", "gpu.temp.climb": "thermal", "gpu.temp.creep": "thermal", "gpu.temp.excess": "thermal", "gpu.peer.temp": "thermal",
    "gpu.power.cap": "power_cap", "gpu.missing": "off_bus", "gpu.ecc.sbe": "ecc_storm",
    "gpu.ecc.dbe": "ecc_storm", "gpu.mem.leak": "mem_leak", "gpu.mem.pressure": "mem_leak",
    "gpu.hang": "hang", "gpu.power.stuck": "hang", "gpu.power.idle": "idle_waste",
    "gpu.peer.clock": "straggler", "gpu.peer.power": "straggler", "gpu.pcie.replay": "pcie_replay",
    "gpu.clock.drop": "clock_drop",
}
XID_KIND = {79: "off_bus", 48: "ecc_storm"}


def ts(s):
    return datetime.datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()


INCIDENTS = {}   # labels file -> [(time, gpu)] of gpu.incident starts


def load(pair):
    lab_path, rec_path = pair.split(":", 1)
    lab = json.load(open(lab_path))
    eps = []
    for line in open(rec_path):
        line = line.strip()
        if not line:
            continue
        r = json.loads(line)
        # incidents group the episodes scored here: not alarms of their own
        # (counted apart: INCIDENTS, for the incidents-per-fault line)
        if r.get("event.type") == "start" and r.get("event.dataset") == "gpu.incident":
            INCIDENTS.setdefault(lab_path, []).append((ts(r["@timestamp"]), r.get("gpu.index")))
        if r.get("event.type") != "start" or r.get("event.dataset") == "gpu.incident":
            continue
        rid = r["rule.id"]
        kind = RULE_KIND.get(rid)
        if rid.endswith(".xid"):
            kind = XID_KIND.get(r.get("gpu.xid.code"), "xid")
        eps.append(dict(t=ts(r["@timestamp"]), gpu=r.get("gpu.index"), host=r.get("host.name"), rule=rid, kind=kind))
    return lab, eps


def main():
    args = sys.argv[1:]
    grace, name, fa_all, gate = 60, "", False, True
    while args and args[0].startswith("--") and args[0] != "--":
        if args[0] == "--grace":
            grace = float(args[1])
            args = args[1:]
        elif args[0] == "--name":
            name = "-" + args[1]
            args = args[1:]
        elif args[0] == "--fa-all":
            fa_all = True
        elif args[0] == "--no-gate":
            gate = False
        args = args[1:]
    sep = args.index("--") if "--" in args else len(args)
    faults, clean = args[:sep], args[sep + 1:]
    kinds = list(KINDS)
    loaded = [load(pair) for pair in faults]
    for lab, _ in loaded:
        for l in lab["labels"]:
            if l["kind"] not in kinds:
                kinds.append(l["kind"])
    det = {k: 0 for k in kinds}
    tot = {k: 0 for k in kinds}
    delays = {k: [] for k in kinds}
    by_sev = {}
    ep_n = {}
    ep_fa = {}
    fault_fa = 0
    gpu_hours = 0.0
    for lab, eps in loaded:
        gpu_hours += lab["gpus"] * lab["seconds"] / 3600.0 if fa_all else 0.0
        labels = [dict(l, a=ts(l["start"]), b=ts(l["end"])) for l in lab["labels"]]
        matched = [False] * len(eps)
        for l in labels:
            tot[l["kind"]] += 1
            hits = []
            for i, e in enumerate(eps):
                if e["host"] != lab["host"]:
                    continue
                if e["gpu"] is not None and e["gpu"] != l["gpu"]:
                    continue
                if l["a"] <= e["t"] <= l["b"] + grace:
                    hits.append(e["t"] - l["a"])
                    matched[i] = True
            if hits:
                det[l["kind"]] += 1
                delays[l["kind"]].append(min(hits))
            if "severity" in l:
                sv = by_sev.setdefault(l["severity"], [0, 0])
                sv[0] += 1 if hits else 0
                sv[1] += 1
        for e, m in zip(eps, matched):
            k = e["kind"] or "other"
            ep_n[k] = ep_n.get(k, 0) + 1
            if not m:
                ep_fa[k] = ep_fa.get(k, 0) + 1
                fault_fa += 1
                print("  false alarm: %s %s gpu %s at %s" % (lab["host"], e["rule"], e["gpu"],
                      datetime.datetime.fromtimestamp(e["t"], datetime.timezone.utc).strftime("%H:%M:%S")))
    clean_fa = 0
    for pair in clean:
        lab, eps = load(pair)
        gpu_hours += lab["gpus"] * lab["seconds"] / 3600.0
        clean_fa += len(eps)
        for e in eps:
            print("  false alarm (clean): %s %s gpu %s at %s" % (lab["host"], e["rule"], e["gpu"],
                  datetime.datetime.fromtimestamp(e["t"], datetime.timezone.utc).strftime("%H:%M:%S")))
    # incidents: how many a detected fault gave (on its GPU, from its start
    # to its end + grace); one is the aim (issue 11: one incident per fault)
    per_fault = []
    for (lab, eps), pair in zip(loaded, faults):
        incs = INCIDENTS.get(pair.split(":", 1)[0], [])
        for l in lab["labels"]:
            a, b = ts(l["start"]), ts(l["end"]) + grace
            if any(e["host"] == lab["host"] and e["gpu"] in (None, l["gpu"]) and a <= e["t"] <= b for e in eps):
                per_fault.append((sum(1 for t, g in incs if g in (None, l["gpu"]) and a <= t <= b), l["kind"]))
    n_inc = sum(len(v) for v in INCIDENTS.values())
    if n_inc:
        more = {}
        for n, k in per_fault:
            if n > 1:
                more[k] = more.get(k, 0) + 1
        print("incidents: %d in all; detected faults with exactly one incident %d/%d, with more %d%s" %
              (n_inc, sum(1 for n, _ in per_fault if n == 1), len(per_fault), sum(more.values()),
               " (%s)" % ", ".join("%s %d" % kv for kv in sorted(more.items())) if more else ""))
    print("%-12s %6s %9s %7s %6s %6s %14s" % ("kind", "labels", "detected", "prec", "recall", "F1", "median delay"))
    f1s = []
    all_delays = []
    for k in kinds:
        n = ep_n.get(k, 0)
        fa = ep_fa.get(k, 0)
        prec = 1.0 - fa / n if n else (1.0 if det[k] else 0.0)
        rec = det[k] / tot[k] if tot[k] else 0.0
        f1 = 2 * prec * rec / (prec + rec) if prec + rec > 0 else 0.0
        if tot[k]:
            f1s.append(f1)
        all_delays += delays[k]
        md = statistics.median(delays[k]) if delays[k] else float("nan")
        print("%-12s %6d %9d %7.2f %6.2f %6.2f %14s" % (k, tot[k], det[k], prec, rec, f1,
              ("%.0f samples" % md) if delays[k] else "-"))
    other_fa = sum(v for k, v in ep_fa.items() if k not in kinds)
    if other_fa:
        print("other false alarms (rules of no fault kind): %d" % other_fa)
    macro = sum(f1s) / len(f1s) if f1s else 0.0
    fa_n = clean_fa + (fault_fa if fa_all else 0)
    fa_rate = fa_n / gpu_hours if gpu_hours else 0.0
    md = statistics.median(all_delays) if all_delays else float("nan")
    if by_sev:
        print("recall by severity: " + ", ".join("%s %d/%d" % (k, v[0], v[1]) for k, v in sorted(by_sev.items())))
    if fa_all:
        print("all traces: %d false alarms in %.1f GPU-hours (%d in fault-free traces)" % (fa_n, gpu_hours, clean_fa))
    else:
        print("clean traces: %d false alarms in %.1f GPU-hours" % (clean_fa, gpu_hours))
    recalls = [det[k] / tot[k] for k in kinds if tot[k]]
    print("eval%s: macro-F1 %.3f, min recall %.2f, false alarms/GPU-hour %.3f, median delay %.0f samples" %
          (name, macro, min(recalls) if recalls else 0.0, fa_rate, md))
    ok = all(f >= 0.9 for f in f1s) and fa_rate <= 0.1 and md <= 10
    return 0 if ok or not gate else 3


if __name__ == "__main__":
    sys.exit(main())
