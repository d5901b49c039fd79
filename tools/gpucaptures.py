#!/usr/bin/python3
"""gpucaptures.py - false alarms of the gpu profile on real GPU captures.

usage: gpucaptures.py --gpulog BIN [--args-dir DIR] CAPTURE...

Runs `gpulog run --profile gpu` over each real telemetry capture (nvidia-smi
dmon, pmon, --query-gpu CSV, dcgmi dmon: tests/corpus, whose PROVENANCE.tsv
says where each comes from) and `gpulog parse` for what it holds. A capture
is "multi-sample" when one of its GPUs has two samples or more. These
captures hold no known fault, so every episode is counted as a false alarm
(and listed, with its reason, to be judged by eye: a GPU at 90 C is a true
high temperature). GPU time is what the engine can judge: per GPU, the
distinct sample times times the GPU's median step (1 s, nvidia-smi's
default, when it has one time only: a capture without timestamps gets the
read time on every line, so its samples collapse into one).
Extra arguments for one capture (header-less CSV) come from
DIR/<format>/<file>.args, the golden files' convention (tests/golden).

Last line: "eval-gpu-captures: N captures (M multi-sample), G GPUs, S
samples, H GPU-hours; E episodes, F false alarms per GPU-hour"
"""
import json, os, statistics, subprocess, sys


def run(cmd):
    """stdout lines of cmd (stderr dropped); exits with its status on failure"""
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        sys.exit("gpucaptures: %s failed (%d): %s" % (" ".join(cmd), p.returncode, p.stderr.strip()[-300:]))
    return [json.loads(l) for l in p.stdout.splitlines() if l.strip()]


def ts(s):
    import datetime
    return datetime.datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()


def main():
    a = sys.argv[1:]
    gpulog, args_dir, files = None, "tests/golden", []
    while a:
        if a[0] == "--gpulog":
            gpulog, a = a[1], a[2:]
        elif a[0] == "--args-dir":
            args_dir, a = a[1], a[2:]
        else:
            files.append(a[0])
            a = a[1:]
    if not gpulog or not files:
        sys.exit(__doc__.split("\n\n")[1])
    n_multi = n_gpus = n_samples = n_eps = 0
    gpu_s = 0.0
    print("%-52s %4s %7s %7s %9s %8s" % ("capture", "GPUs", "samples", "times", "GPU-s", "episodes"))
    for f in files:
        parts = f.split("/")
        extra = []
        af = os.path.join(args_dir, parts[-2], parts[-1] + ".args") if len(parts) >= 2 else ""
        if af and os.path.exists(af):
            extra = open(af).read().split()
        recs = run([gpulog, "parse", "--tz", "UTC", "--quiet"] + extra + [f])
        per = {}
        for r in recs:
            # a GPU sample: a metric with GPU fields (a query CSV without an
            # index column is one GPU)
            if r.get("event.kind") == "metric" and any(k.startswith("gpu.") for k in r):
                gid = r.get("gpu.index", r.get("gpu.uuid", r.get("gpu.pci.bus_id", r.get("gpu.name"))))
                per.setdefault((r.get("host.name"), gid), []).append(ts(r["@timestamp"]))
        secs = 0.0
        for t in per.values():
            u = sorted(set(t))
            step = statistics.median([b - x for x, b in zip(u, u[1:])]) if len(u) > 1 else 1.0
            secs += len(u) * step
        eps = [r for r in run([gpulog, "run", "--no-live", "--tz", "UTC", "--profile", "gpu", "--quiet"] + extra + [f])
               if r.get("event.type") == "start" and r.get("event.dataset") != "gpu.incident"]
        multi = any(len(t) >= 2 for t in per.values())
        n_multi += multi
        n_gpus += len(per)
        n_samples += sum(len(t) for t in per.values())
        n_eps += len(eps)
        gpu_s += secs
        print("%-52s %4d %7d %7d %9.0f %8d%s" % ("/".join(parts[-2:])[:52], len(per), sum(len(t) for t in per.values()),
              sum(len(set(t)) for t in per.values()), secs, len(eps), "" if multi else "  (single sample)" if per else "  (no GPU sample)"))
        for e in eps:
            print("  episode: %s GPU %s at %s: %s" % (e.get("rule.id"), e.get("gpu.index"), e.get("@timestamp"),
                  e.get("event.reason", "")[:160]))
    hours = gpu_s / 3600
    print("eval-gpu-captures: %d captures (%d multi-sample), %d GPUs, %d samples, %.4f GPU-hours; %d episodes, %s false alarms per GPU-hour"
          % (len(files), n_multi, n_gpus, n_samples, hours, n_eps, ("%.1f" % (n_eps / hours)) if hours else "-"))


if __name__ == "__main__":
    main()
