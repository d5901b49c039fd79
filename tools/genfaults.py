#!/usr/bin/python3
"""genfaults.py - a second GPU fault model for gpulog's detectors.

Written apart from tools/gentrace.py (no code shared, other shapes) so that
`make eval` does not judge the GPU rules only on the model they were tuned
on. One host, 8 GPUs, `nvidia-smi dmon -o DT -s pucvmet`, 1 s samples in
UTC, NVRM kernel lines interleaved; a sidecar JSON of the injected faults
in the layout tools/evalscore.py reads ({host, gpus, seconds, labels:
[{gpu, kind, start, end, severity}]}).

The machine: a first-order thermal model per GPU (time constant 40-90 s,
0.055-0.075 C/W, per-GPU offsets of -3..+6 C) in a room that drifts over
the hours and cycles with the air conditioning; jobs of every width
(training on 8, 4, 2 or 1 GPUs, inference servers on 1-2) that load their
model (framebuffer climbing from near zero to 10-75 GiB over 30-90 s while
utilisation rises), let the caching allocator grow for a few minutes, dip
for checkpoints (10-40 s), stall on the data loader (5-60 s, utilisation
near 0, power decaying), and end; brief power-cap blips (1-4 s) on heavy
jobs, clock jitter, rare single ECC and PCIe counts, dropped lines and
dropped sample blocks.

Faults (kind, shape; `subtle` or `severe` in the label):
  thermal        cooling lost: +20-40 C over 2-6 minutes, throttling past 87 C
  thermal_creep  a failing fan: +0.3-1.0 C per minute for 20-40 minutes
  power_cap      capped at 82-92 % of the job's demand, violation 50-78 %
  off_bus        samples stop, Xid 79
  ecc_storm      single-bit errors climbing 0.5-8 per second (+ Xid 48 when severe)
  mem_leak       20-64 MiB chunks at 150-1,300 MiB/min, or smooth 20-100 MiB/s
  hang           utilisation 100 % at near-idle power
  idle_waste     170-380 W at 0 % utilisation
  straggler      one GPU of a 4- or 8-GPU job at 78-88 % of its peers' clock
  pcie_replay    replays climbing 0.5-15 per second for 30-120 s
  clock_drop     SM clock locked at 1000-1600 MHz under load

usage: genfaults.py --seed N [--hours H] [--faults N|none] [--host NAME] -o TRACE -l LABELS.json
"""
import argparse, datetime, json, math, random

KINDS = ["thermal", "thermal_creep", "power_cap", "off_bus", "ecc_storm", "mem_leak", "hang",
         "idle_waste", "straggler", "pcie_replay", "clock_drop"]
NEEDS_JOB = {"thermal", "thermal_creep", "power_cap", "mem_leak", "hang", "straggler", "clock_drop"}
NGPU = 8
FB_TOTAL = 81559
P_IDLE = 68.0
CLK_MAX, CLK_IDLE, MCLK = 1980, 345, 2619
BUS = ["19", "3b", "4c", "5d", "9b", "bb", "cb", "db"]


class Job:
    """A job on some GPUs from t0 to t1 (seconds from the trace start)."""

    def __init__(self, rng, gpus, t0, t1, kind):
        self.gpus, self.t0, self.t1, self.kind = gpus, t0, t1, kind
        if kind == "train":
            self.demand = rng.uniform(350, 680)
            self.fb = rng.uniform(20000, 75000)
            self.load_s = rng.uniform(30, 90)
            self.grow = rng.uniform(500, 4000) if rng.random() < 0.4 else 0.0
            self.grow_s = rng.uniform(60, 240)
            self.ckpt = rng.uniform(480, 1500)
            self.ckpt_len = rng.uniform(10, 40)
            self.stall_rate = rng.choice([0.0, 1 / 1800.0, 1 / 600.0])
        else:
            self.demand = rng.uniform(200, 420)
            self.fb = rng.uniform(8000, 30000)
            self.load_s = rng.uniform(10, 40)
            self.grow, self.grow_s = 0.0, 1.0
            self.ckpt, self.ckpt_len, self.stall_rate = 1e12, 0, 0.0
        # replicas hold nearly the same memory
        self.fb_of = {g: self.fb * rng.uniform(0.985, 1.015) for g in gpus}


def plan(rng, secs, nfaults, kinds_wanted):
    """Faults first, then jobs that carry the busy ones, then filler jobs."""
    busy = [[] for _ in range(NGPU)]       # (t0, t1) reservations per GPU
    jobs, faults = [], []

    def free(g, a, b):
        return all(b <= x or a >= y for x, y in busy[g])

    def reserve(gs, a, b):
        for g in gs:
            busy[g].append((a, b))

    for kind in kinds_wanted[:nfaults]:
        for _ in range(200):
            dur = {"thermal": rng.randint(300, 720), "thermal_creep": rng.randint(1200, 2400),
                   "power_cap": rng.randint(420, 600), "off_bus": 120, "ecc_storm": rng.randint(120, 300),
                   "mem_leak": rng.randint(600, 1500), "hang": rng.randint(180, 480),
                   "idle_waste": rng.randint(480, 900), "straggler": rng.randint(240, 480),
                   "pcie_replay": rng.randint(30, 120), "clock_drop": rng.randint(180, 480)}[kind]
            if kind == "straggler":
                width = rng.choice([4, 8])
                base = rng.choice([0, 4]) if width == 4 else 0
                gpus = list(range(base, base + width))
                g = rng.choice(gpus)
            else:
                g = rng.randrange(NGPU)
                width = rng.choice([1, 2, 4, 8]) if kind in NEEDS_JOB else 0
                lo = g - g % width if width else g
                gpus = list(range(lo, lo + width)) if width else [g]
            pre = rng.randint(600, 1500) if kind in NEEDS_JOB else 120
            post = rng.randint(300, 900) if kind in NEEDS_JOB else 120
            a = rng.randint(pre + 300, secs - dur - post - 60)
            if kind == "off_bus":
                a = rng.randint(secs // 2, secs - dur - 60)
                span = (a - 300, secs)
            else:
                span = (a - pre, a + dur + post)
            if not all(free(x, *span) for x in gpus):
                continue
            if any(f["gpu"] in gpus and not (span[1] <= f["a"] - 300 or span[0] >= f["b"] + 300) for f in faults):
                continue
            reserve(gpus, *span)
            sev = rng.choice(["subtle", "severe"])
            f = dict(gpu=g, kind=kind, a=a, b=a + dur, severity=sev, p={})
            faults.append(f)
            if kind in NEEDS_JOB:
                jobs.append(Job(rng, gpus, span[0], span[1], "train"))
            elif kind == "off_bus":
                jobs.append(Job(rng, [g], span[0], a + 5, "train"))
            break
    # filler: training of every width and inference servers, with gaps
    t = 0
    while t < secs:
        width = rng.choice([8, 4, 4, 2, 1, 1])
        base = rng.randrange(0, NGPU, width)
        gpus = list(range(base, base + width))
        kind = "infer" if width <= 2 and rng.random() < 0.4 else "train"
        d = rng.randint(600, 3600)
        a = t + rng.randint(0, 400)
        if all(free(g, a - 60, a + d + 60) for g in gpus):
            reserve(gpus, a, a + d)
            jobs.append(Job(rng, gpus, a, a + d, kind))
        t += rng.randint(60, 500)
    return jobs, faults


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--hours", type=float, default=3)
    ap.add_argument("--faults", default="4")
    ap.add_argument("--host", default=None)
    ap.add_argument("--start", default="2025-11-03T06:00:00")
    ap.add_argument("-o", dest="out", required=True)
    ap.add_argument("-l", dest="labels", required=True)
    a = ap.parse_args()
    rng = random.Random(a.seed * 7919 + 17)
    secs = int(a.hours * 3600)
    host = a.host or "dgx-%d" % a.seed
    nf = 0 if a.faults == "none" else int(a.faults)
    # every kind as often as the others across consecutive seeds
    order = [KINDS[(a.seed * nf + i) % len(KINDS)] for i in range(nf)]
    jobs, faults = plan(rng, secs, nf, order)
    t0 = datetime.datetime.fromisoformat(a.start).replace(tzinfo=datetime.timezone.utc).timestamp()

    job_at = [dict() for _ in range(NGPU)]
    for j in jobs:
        for g in j.gpus:
            for s in range(max(0, j.t0), min(secs, j.t1)):
                job_at[g][s] = j
    fault_at = [[] for _ in range(NGPU)]
    for f in faults:
        fault_at[f["gpu"]].append(f)

    k_w = [rng.uniform(0.055, 0.075) for _ in range(NGPU)]
    tau = [rng.uniform(40, 90) for _ in range(NGPU)]
    off = [rng.uniform(-3, 6) for _ in range(NGPU)]
    temp = [30.0 + off[g] for g in range(NGPU)]
    fb = [rng.uniform(0, 500) for _ in range(NGPU)]
    sbe = [rng.randint(0, 40) for _ in range(NGPU)]
    dbe = [0] * NGPU
    pci = [rng.randint(0, 100) for _ in range(NGPU)]
    leak = [0.0] * NGPU
    stall = [0] * NGPU
    blip = [0] * NGPU
    grown = [0.0] * NGPU
    cur_job = [None] * NGPU
    drift = rng.uniform(-1.5, 2.5)
    hvac = rng.uniform(900, 1800)
    kern = []
    cols = ["gpu", "pwr", "gtemp", "mtemp", "sm", "mem", "enc", "dec", "jpg", "ofa", "mclk", "pclk",
            "pviol", "tviol", "fb", "bar1", "ccpm", "sbecc", "dbecc", "pci", "rxpci", "txpci"]
    units = ["Idx", "W", "C", "C", "%", "%", "%", "%", "%", "%", "MHz", "MHz", "%", "bool", "MB", "MB",
             "MB", "errs", "errs", "errs", "MB/s", "MB/s"]
    out = open(a.out, "w")
    out.write("#Date       Time     " + "".join(c.rjust(7) for c in cols) + "\n")
    out.write("#YYYYMMDD   HH:MM:SS " + "".join(u.rjust(7) for u in units) + "\n")
    gone = {f["gpu"]: f["a"] for f in faults if f["kind"] == "off_bus"}
    for s in range(secs):
        now = datetime.datetime.fromtimestamp(t0 + s, datetime.timezone.utc)
        room = 23 + drift * s / secs + 0.7 * ((s % hvac) / hvac * 2 - 1) + 1.5 * math.sin(2 * math.pi * (now.hour + now.minute / 60 - 8) / 24)
        block_lost = rng.random() < 0.0003
        # peers of a straggler's job wait for it
        slow_jobs = {id(job_at[f["gpu"]].get(s)) for f in faults if f["kind"] == "straggler" and f["a"] <= s < f["b"]}
        stamp = now.strftime(" %Y%m%d   %H:%M:%S")
        rows = []
        for g in range(NGPU):
            if g in gone and s >= gone[g]:
                if s == gone[g] + 2:
                    kern.append((s, g, 79))
                continue
            j = job_at[g].get(s)
            f = next((x for x in fault_at[g] if x["a"] <= s < x["b"]), None)
            kind = f["kind"] if f else None
            pviol, tviol, clk = 0, 0, CLK_IDLE
            if j is not cur_job[g]:
                cur_job[g] = j
                grown[g] = 0.0
                stall[g] = 0
            if j:
                age = s - j.t0
                ramp = min(1.0, age / j.load_s)
                if j.kind == "train":
                    in_ckpt = age > j.load_s + 60 and (age % j.ckpt) < j.ckpt_len
                    if stall[g] == 0 and age > 120 and rng.random() < j.stall_rate:
                        stall[g] = rng.randint(5, 60)
                    util = 100 * ramp ** 0.5 * rng.uniform(0.95, 1.0)
                    pw = P_IDLE + (j.demand - P_IDLE) * ramp * rng.gauss(1, 0.025)
                    if in_ckpt:
                        util = rng.uniform(0, 30)
                        pw = P_IDLE + (j.demand - P_IDLE) * rng.uniform(0.2, 0.4)
                    if stall[g] > 0:
                        stall[g] -= 1
                        util = rng.uniform(0, 4)
                        pw = P_IDLE + rng.uniform(20, 70)
                    if id(j) in slow_jobs and kind != "straggler":
                        util = min(util, rng.uniform(80, 92))
                        pw *= 0.92
                else:
                    util = max(0.0, min(100.0, 50 + 30 * math.sin(s / rng.uniform(200, 260) + g) + rng.gauss(0, 8))) * ramp
                    pw = P_IDLE + (j.demand - P_IDLE) * util / 100
                clk = CLK_MAX if util > 5 else rng.choice([CLK_MAX, 1755, 1410])
                if util > 60 and rng.random() < 0.3:
                    clk -= rng.choice([15, 30, 45])
                target = j.fb_of[g]
                if age < j.load_s:
                    fb[g] = max(fb[g], 300 + (target - 300) * (age / j.load_s) * rng.uniform(0.97, 1.0))
                elif grown[g] < j.grow and age < j.load_s + j.grow_s:
                    if rng.random() < 0.1:
                        step = min(j.grow - grown[g], rng.uniform(100, 600))
                        grown[g] += step
                        fb[g] += step
                elif fb[g] < target:
                    fb[g] = target
                if j.kind == "train" and j.demand > 560 and util > 80 and blip[g] == 0 and rng.random() < 0.002:
                    blip[g] = rng.randint(1, 4)
                if blip[g] > 0:                          # a power-cap blip
                    blip[g] -= 1
                    pviol = rng.randint(15, 60)
            else:
                util, pw = 0.0, P_IDLE * rng.gauss(1, 0.03)
                if fb[g] > 800:
                    fb[g] = rng.uniform(0, 500)
            # faults
            if kind == "thermal":
                el = s - f["a"]
                f["p"].setdefault("rise", rng.uniform(20, 40) if f["severity"] == "severe" else rng.uniform(14, 22))
                f["p"].setdefault("over", rng.uniform(120, 360))
                boost = f["p"]["rise"] * min(1.0, el / f["p"]["over"])
            elif kind == "thermal_creep":
                rate = f["p"].setdefault("rate", rng.uniform(0.3, 0.5) if f["severity"] == "subtle" else rng.uniform(0.5, 1.0))
                boost = rate * (s - f["a"]) / 60.0
            else:
                boost = 0.0
            if kind == "power_cap":
                fr = f["p"].setdefault("frac", rng.uniform(0.82, 0.92))
                share = f["p"].setdefault("share", rng.uniform(50, 78))
                pw = (P_IDLE + (j.demand - P_IDLE)) * fr * rng.gauss(1, 0.01)
                pviol = 0 if rng.random() < 0.1 else int(max(0, min(100, share + rng.gauss(0, 8))))
                clk = int(CLK_MAX * rng.uniform(0.86, 0.93))
                util = max(util, rng.uniform(97, 100))
            elif kind == "mem_leak":
                if f["severity"] == "subtle" or f["p"].setdefault("chunky", rng.random() < 0.7):
                    rate = f["p"].setdefault("rate", rng.uniform(150, 400) if f["severity"] == "subtle" else rng.uniform(400, 1300))
                    if rng.random() < rate / 60.0 / 42.0:
                        leak[g] += rng.uniform(20, 64)
                else:
                    leak[g] += f["p"].setdefault("rate", rng.uniform(20, 100)) * rng.uniform(0.5, 1.5)
            elif kind == "hang":
                util = 100.0
                pw = P_IDLE + f["p"].setdefault("extra", rng.uniform(5, 45)) + rng.gauss(0, 3)
            elif kind == "idle_waste":
                util = 0.0
                w = f["p"].setdefault("w", rng.uniform(170, 235) if f["severity"] == "subtle" else rng.uniform(235, 380))
                pw = w * rng.gauss(1, 0.015)
                clk = CLK_MAX
            elif kind == "straggler":
                fac = f["p"].setdefault("fac", rng.uniform(0.82, 0.88) if f["severity"] == "subtle" else rng.uniform(0.7, 0.82))
                clk = int(CLK_MAX * fac)
                pw *= fac * 0.97
                util = 100.0
            elif kind == "clock_drop":
                clk = int(f["p"].setdefault("clk", rng.uniform(1300, 1600) if f["severity"] == "subtle" else rng.uniform(1000, 1300)) + rng.gauss(0, 10))
                pw *= 0.8
            elif kind == "ecc_storm":
                r = f["p"].setdefault("rate", rng.uniform(0.5, 2) if f["severity"] == "subtle" else rng.uniform(2, 8))
                sbe[g] += int(r) + (1 if rng.random() < r - int(r) else 0)
                if f["severity"] == "severe" and s == f["a"] + 3:
                    dbe[g] += 1
                    kern.append((s, g, 48))
            elif kind == "pcie_replay":
                r = f["p"].setdefault("rate", rng.uniform(0.5, 2) if f["severity"] == "subtle" else rng.uniform(2, 15))
                pci[g] += int(r) + (1 if rng.random() < r - int(r) else 0)
            if kind != "mem_leak" and leak[g] and (not j or s >= j.t1 - 1):
                leak[g] = 0.0
            if not j and leak[g]:
                leak[g] = 0.0
            target_t = room + off[g] + 8 + k_w[g] * pw + boost
            temp[g] += (target_t - temp[g]) / tau[g] + rng.gauss(0, 0.12)
            if temp[g] > 87.5:
                tviol = 1
                clk = min(clk, int(CLK_MAX - (temp[g] - 86) * 80))
                pw *= 0.93
            if rng.random() < 0.00002:
                sbe[g] += 1
            if rng.random() < 0.00004:
                pci[g] += 1
            used = min(FB_TOTAL - 300, fb[g] + leak[g])
            if block_lost or rng.random() < 0.0005:
                continue
            v = [g, int(round(max(pw, 25))), int(round(temp[g])), int(round(temp[g] + 3 + rng.gauss(0, 0.4))),
                 int(round(max(0, min(100, util)))), int(round(max(0, util * rng.uniform(0.2, 0.6)))), 0, 0, 0, 0,
                 MCLK, int(clk), int(pviol), tviol, int(used), 5 + int(used) // 5000, 0, sbe[g], dbe[g], pci[g],
                 int(max(0, rng.gauss(150 if util > 40 else 3, 15 if util > 40 else 1))),
                 int(max(0, rng.gauss(110 if util > 40 else 2, 12 if util > 40 else 1)))]
            rows.append(stamp + "".join(str(x).rjust(7) for x in v) + "\n")
        out.write("".join(rows))
        for ks, g, code in [k for k in kern if k[0] == s]:
            iso = now.strftime("%Y-%m-%dT%H:%M:%S") + ",%06d+00:00" % rng.randint(0, 999999)
            msg = ("79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus." if code == 79 else
                   "48, pid=%d, name=python, An uncorrectable double bit error (DBE) has been detected on GPU in "
                   "the framebuffer at partition 2, subpartition 1." % rng.randint(2000, 60000))
            out.write("kern  :err   : %s NVRM: Xid (PCI:0000:%s:00): %s\n" % (iso, BUS[g], msg))
    out.close()

    def iso(sec):
        return datetime.datetime.fromtimestamp(t0 + sec, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.000Z")
    lab = dict(host=host, gpus=NGPU, seed=a.seed, model="genfaults", start=iso(0), end=iso(secs), seconds=secs,
               labels=[dict(gpu=f["gpu"], kind=f["kind"], severity=f["severity"], start=iso(f["a"]), end=iso(f["b"]))
                       for f in sorted(faults, key=lambda f: f["a"])])
    with open(a.labels, "w") as fh:
        json.dump(lab, fh, indent=1)
        fh.write("\n")


if __name__ == "__main__":
    main()
