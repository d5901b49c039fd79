#!/usr/bin/python3
"""gentrace.py - labelled multi-GPU fault traces for gpulog's detectors.

Writes an `nvidia-smi dmon -o DT -s pucvmet` trace of one host with N GPUs
(1 s samples, times in UTC) with NVRM kernel lines interleaved, and a
sidecar JSON with the injected faults: [{gpu, kind, start, end}].

The load model: a daily cycle (jobs are likelier in working hours, the room
is warmer in the afternoon), training jobs on all GPUs or on halves with a
start-up phase (memory allocated in steps), steady compute with periodic
checkpoint dips, idle gaps; per-GPU thermal offsets, sensor noise, rare
single ECC/PCIe counts, occasional dropped lines and dropped sample blocks.

Fault kinds: thermal, power_cap, off_bus, ecc_storm, mem_leak, hang,
idle_waste, straggler, pcie_replay, clock_drop.

usage: gentrace.py --seed N [--hours H] [--gpus 8] [--host NAME]
                   [--faults all|none|k1,k2] [--start ISO] -o TRACE -l LABELS.json
"""
import argparse, datetime, json, math, random, sys

KINDS = ["thermal", "power_cap", "off_bus", "ecc_storm", "mem_leak", "hang",
         "idle_waste", "straggler", "pcie_replay", "clock_drop"]
BUSY_KINDS = {"thermal", "power_cap", "mem_leak", "hang", "straggler", "clock_drop"}
BUS = ["18", "2a", "3a", "5d", "9a", "ab", "ba", "db", "1b", "2b", "3b", "5e", "9b", "ac", "bb", "dc"]
LIMIT = 700.0       # H100 SXM board power limit (W)
IDLE_W = 70.0
BUSY_CLK = 1980
IDLE_CLK = 345
MCLK = 2619
FB_TOTAL = 81559

COLS = ["gpu", "pwr", "gtemp", "mtemp", "sm", "mem", "enc", "dec", "jpg", "ofa", "mclk", "pclk",
        "pviol", "tviol", "fb", "bar1", "ccpm", "sbecc", "dbecc", "pci", "rxpci", "txpci"]
UNITS = ["Idx", "W", "C", "C", "%", "%", "%", "%", "%", "%", "MHz", "MHz", "%", "bool", "MB", "MB",
         "MB", "errs", "errs", "errs", "MB/s", "MB/s"]


def header():
    h1 = "#Date       Time     " + "".join(c.rjust(7) for c in COLS)
    h2 = "#YYYYMMDD   HH:MM:SS " + "".join(u.rjust(7) for u in UNITS)
    return h1 + "\n" + h2 + "\n"


def schedule(rng, n, secs, t0):
    """Per-GPU job id per second (0 = idle) and per-job parameters."""
    job = [[0] * secs for _ in range(n)]
    jobs = {}
    jid = 0
    # groups: the whole host, or two halves scheduled independently
    t = 0
    while t < secs:
        hour = ((t0 + t) / 3600.0) % 24
        busy_p = 0.55 + 0.35 * math.sin((hour - 8) / 24 * 2 * math.pi)
        if rng.random() < 0.6:
            groups = [list(range(n))]
        else:
            groups = [list(range(n // 2)), list(range(n // 2, n))]
        span = rng.randint(1200, 3600)
        for g in groups:
            u = t + rng.randint(0, 300)
            end = min(secs, t + span)
            while u < end:
                if rng.random() < busy_p:
                    d = rng.randint(600, 2400)
                    jid += 1
                    jobs[jid] = dict(power=rng.uniform(380, 620), fb=rng.uniform(20000, 72000),
                                     mem=rng.uniform(20, 60), ckpt=rng.randint(600, 1200),
                                     start=u, end=min(end, u + d), gpus=g,
                                     # caching allocators grow in steps for minutes
                                     grow=rng.random() < 0.3,
                                     # input-pipeline stalls: utilisation drops, power decays
                                     stall_p=rng.choice([0, 0.0005, 0.002]))
                    for i in g:
                        for s in range(u, min(end, u + d)):
                            job[i][s] = jid
                    u += d
                u += rng.randint(60, 600)
        t += span
    return job, jobs


def busy_runs(job, gpu, secs, need):
    """Intervals [a, b) where the GPU runs one job for at least need seconds."""
    out = []
    s = 0
    while s < secs:
        j = job[gpu][s]
        e = s
        while e < secs and job[gpu][e] == j:
            e += 1
        if e - s >= need:
            out.append((s, e, j))
        s = e
    return out


def plan_faults(rng, job, jobs, n, secs, kinds, warm=600):
    faults = []
    used = [[] for _ in range(n)]        # (a, b) reserved per GPU
    offbus_gpu = None

    def free(g, a, b):
        return all(b + 240 <= x or a >= y + 240 for x, y in used[g])

    order = [k for k in kinds if k not in ("straggler", "off_bus")]
    rng.shuffle(order)
    if "straggler" in kinds:             # first: it needs the whole host
        order.insert(0, "straggler")
    if "off_bus" in kinds:               # last: the GPU never comes back
        order.append("off_bus")
    for kind in order:
        for _attempt in range(2000):
            g = rng.randrange(n)
            if g == offbus_gpu:
                continue
            dur = {"thermal": rng.randint(180, 420), "power_cap": rng.randint(180, 420),
                   "ecc_storm": rng.randint(120, 300), "mem_leak": rng.randint(180, 420),
                   "hang": rng.randint(180, 480), "idle_waste": rng.randint(300, 700),
                   "straggler": rng.randint(180, 420), "pcie_replay": rng.randint(30, 120),
                   "clock_drop": rng.randint(120, 300), "off_bus": 120}[kind]
            if kind in BUSY_KINDS:
                runs = [r for r in busy_runs(job, g, secs, dur + 400) if r[2] != 0]
                if kind == "straggler":
                    runs = [r for r in runs if len(jobs[r[2]]["gpus"]) == n]
                if not runs:
                    continue
                a0, b0, _ = rng.choice(runs)
                if b0 - dur - 60 < a0 + 240:
                    continue
                a = rng.randint(a0 + 240, b0 - dur - 60)
            elif kind == "idle_waste":
                runs = [r for r in busy_runs(job, g, secs, dur + 120) if r[2] == 0]
                if not runs:
                    continue
                a0, b0, _ = rng.choice(runs)
                if b0 - dur - 60 < a0 + 60:
                    continue
                a = rng.randint(a0 + 60, b0 - dur - 60)
            elif kind == "off_bus":
                a = rng.randint(int(secs * 0.6), secs - 300)
            else:
                if secs - dur - 300 < warm:
                    continue
                a = rng.randint(warm, secs - dur - 300)
            b = a + dur
            if a < warm or b > secs - 60 or not free(g, a, b):
                continue
            if kind == "straggler" and any(not free(o, a, b) for o in range(n) if o != g):
                continue
            if kind == "off_bus" and any(x >= a for x, y in used[g]):
                continue
            used[g].append((a, b))
            if kind == "straggler":       # peers are affected too (they wait)
                for o in range(n):
                    if o != g:
                        used[o].append((a, b))
            faults.append(dict(gpu=g, kind=kind, a=a, b=b))
            if kind == "off_bus":
                offbus_gpu = g
            break
    return faults


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--hours", type=float, default=2.0)
    ap.add_argument("--gpus", type=int, default=8)
    ap.add_argument("--host", default=None)
    ap.add_argument("--faults", default="all")
    ap.add_argument("--start", default=None)
    ap.add_argument("--warmup", type=int, default=600, help="no fault before this many seconds")
    ap.add_argument("-o", "--output", required=True)
    ap.add_argument("-l", "--labels", required=True)
    a = ap.parse_args()
    rng = random.Random(a.seed)
    n = a.gpus
    secs = int(a.hours * 3600)
    host = a.host or "node-%d" % (a.seed % 1000)
    if a.start:
        t0 = int(datetime.datetime.fromisoformat(a.start.replace("Z", "+00:00")).timestamp())
    else:
        t0 = 1762473600 + rng.randint(0, 30) * 86400 + rng.randint(0, 86399)   # Nov 2025
    kinds = KINDS if a.faults == "all" else [] if a.faults == "none" else a.faults.split(",")
    job, jobs = schedule(rng, n, secs, t0)
    faults = plan_faults(rng, job, jobs, n, secs, kinds, a.warmup)
    by_gpu = [[f for f in faults if f["gpu"] == g] for g in range(n)]
    strag = [f for f in faults if f["kind"] == "straggler"]
    offbus = {f["gpu"]: f["a"] for f in faults if f["kind"] == "off_bus"}

    goff = [rng.uniform(-4, 4) for _ in range(n)]
    temp = [30.0 + goff[g] for g in range(n)]
    fbv = [rng.uniform(0, 600) for _ in range(n)]
    sbe = [rng.randint(0, 20) for _ in range(n)]
    dbe = [0] * n
    pci = [rng.randint(0, 50) for _ in range(n)]
    leak = [0.0] * n
    last_job = [0] * n
    fb_target = [0.0] * n
    kern = []            # (sec, gpu, line)
    stalls = {}          # gpu -> [start, length]

    out = open(a.output, "w")
    out.write(header())
    for s in range(secs):
        tt = t0 + s
        dt = datetime.datetime.fromtimestamp(tt, datetime.timezone.utc)
        hour = dt.hour + dt.minute / 60.0
        ambient = 24 + 2.5 * math.sin((hour - 9) / 24 * 2 * math.pi)
        drop_block = rng.random() < 0.0004
        stamp = dt.strftime(" %Y%m%d   %H:%M:%S")
        lines = []
        for g in range(n):
            if g in offbus and s >= offbus[g]:
                if s == offbus[g] + 1:
                    kern.append((s, g, 79))
                continue
            j = job[g][s]
            act = [f for f in by_gpu[g] if f["a"] <= s < f["b"]]
            kind = act[0]["kind"] if act else None
            sa = [f for f in strag if f["a"] <= s < f["b"]]
            if j:
                J = jobs[j]
                if last_job[g] != j:
                    fb_target[g] = J["fb"] * rng.uniform(0.97, 1.03)
                    last_job[g] = j
                age = s - J["start"]
                ramp = min(1.0, age / rng.uniform(8, 20))
                in_ckpt = (age % J["ckpt"]) < 12 and age > 60
                util = 0 if age < 5 else (rng.uniform(0, 25) if in_ckpt else min(100, rng.gauss(98, 1.5)))
                pw = IDLE_W + (J["power"] - IDLE_W) * ramp * (0.35 if in_ckpt else 1.0) * rng.gauss(1, 0.03)
                clk = BUSY_CLK - (rng.choice([0, 0, 0, 15]) if util > 50 else 0)
                if util < 30:
                    clk = rng.choice([BUSY_CLK, 1755, 1410]) if age > 5 else IDLE_CLK
                # memory allocated in a few steps at start
                if age < 30 and fbv[g] < fb_target[g]:
                    if rng.random() < 0.15:
                        fbv[g] = min(fb_target[g], fbv[g] + fb_target[g] * rng.uniform(0.3, 0.7))
                elif age >= 30 and fbv[g] < fb_target[g] * 0.9:
                    fbv[g] = fb_target[g]
                if J["grow"] and 30 <= age < 300 and rng.random() < 0.05:
                    fbv[g] = min(FB_TOTAL * 0.9, fbv[g] + rng.uniform(500, 2000))
                st = stalls.get(g)
                if st is None and age > 60 and rng.random() < J["stall_p"]:
                    stalls[g] = st = [s, rng.randint(8, 45)]
                if st is not None:
                    if s - st[0] < st[1]:
                        util = rng.uniform(0, 3)
                        pw = IDLE_W + (J["power"] - IDLE_W) * max(0.12, 0.6 ** (s - st[0]))
                    else:
                        del stalls[g]
                if J["power"] > 550 and util > 50:
                    clk = BUSY_CLK - rng.choice([0, 0, 15, 30, 45, 60])
                mem = J["mem"] * util / 100 * rng.uniform(0.9, 1.1)
                pviol = rng.choice([5, 9, 12, 17]) if (J["power"] > 580 and rng.random() < 0.01) else 0
                if sa and g != sa[0]["gpu"]:          # peers wait for the straggler
                    util = min(util, rng.uniform(72, 88))
                    pw *= 0.9
            else:
                last_job[g] = 0
                age = 0
                util = 0
                pw = IDLE_W * rng.gauss(1, 0.03)
                clk = IDLE_CLK
                mem = 0
                pviol = 0
                if fbv[g] > 600:
                    fbv[g] = rng.uniform(0, 600)
            tviol = 0
            temp_boost = 0.0
            if kind == "thermal":
                f = act[0]
                el = s - f["a"]
                temp_boost = min(30.0, el * f.setdefault("rate", rng.uniform(0.2, 0.6)))
                if temp[g] > 88:
                    tviol = 1
                    clk = int(BUSY_CLK - min(600, (temp[g] - 86) * 90))
                    pw *= 0.9
            elif kind == "power_cap":
                pw = LIMIT * rng.uniform(0.985, 1.0)
                pviol = int(act[0].setdefault("pv", rng.uniform(25, 90)) + rng.uniform(-5, 5))
                clk = int(rng.uniform(1600, 1760))
                util = min(100, rng.gauss(99, 0.7))
            elif kind == "mem_leak":
                leak[g] += act[0].setdefault("rate", rng.uniform(10, 120)) * rng.uniform(0.3, 1.7)
            elif kind == "hang":
                util = 100
                pw = IDLE_W + act[0].setdefault("extra", rng.uniform(8, 60)) + rng.uniform(-5, 5)
                mem = 0
            elif kind == "idle_waste":
                util = 0
                pw = act[0].setdefault("w", rng.uniform(230, 380)) * rng.gauss(1, 0.02)
                clk = BUSY_CLK
            elif kind == "straggler":
                f = act[0]
                fac = f.setdefault("fac", rng.uniform(0.65, 0.85))
                clk = int(BUSY_CLK * fac)
                pw *= fac * 0.95
                util = 100
            elif kind == "clock_drop":
                f = act[0]
                clk = int(f.setdefault("clk", rng.uniform(900, 1550)) + rng.uniform(-15, 15))
                pw *= 0.8
            elif kind == "ecc_storm":
                f = act[0]
                sbe[g] += rng.randint(0, f.setdefault("rate", rng.randint(2, 30)))
                if s == f["a"] + 2:
                    dbe[g] += 1
                    kern.append((s, g, 48))
            elif kind == "pcie_replay":
                pci[g] += rng.randint(0, act[0].setdefault("rate", rng.randint(2, 25)))
            if kind != "mem_leak" and leak[g] > 0:
                leak[g] = 0                       # the leaking process was killed
            if rng.random() < 0.00003:
                sbe[g] += 1
            if rng.random() < 0.00005:
                pci[g] += 1
            target = ambient + goff[g] + 6 + pw * 0.068 + temp_boost
            temp[g] += (target - temp[g]) / 25.0 + rng.gauss(0, 0.15)
            fb = min(FB_TOTAL - 200, fbv[g] + leak[g])
            if drop_block or rng.random() < 0.0008:
                continue
            vals = [g, int(round(max(pw, 20))), int(round(temp[g])), int(round(temp[g] + 4 + rng.gauss(0, 0.3))),
                    int(round(max(0, util))), int(round(max(0, mem))), 0, 0, 0, 0, MCLK, int(clk),
                    int(pviol), tviol, int(fb), 4 + (int(fb) // 4000), 0, sbe[g], dbe[g], pci[g],
                    int(max(0, rng.gauss(120 if util > 50 else 2, 10 if util > 50 else 1))),
                    int(max(0, rng.gauss(90 if util > 50 else 1, 8 if util > 50 else 1)))]
            lines.append(stamp + "".join(str(v).rjust(7) for v in vals) + "\n")
        out.write("".join(lines))
        for ks, g, code in [k for k in kern if k[0] == s]:
            iso = dt.strftime("%Y-%m-%dT%H:%M:%S") + ",%06d+00:00" % rng.randint(0, 999999)
            bus = "0000:%s:00" % BUS[g % len(BUS)]
            if code == 79:
                msg = "79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus."
            else:
                msg = ("48, pid=%d, name=python3, An uncorrectable double bit error (DBE) has been detected "
                       "on GPU in the framebuffer at partition 6, subpartition 0." % rng.randint(1000, 99999))
            out.write("kern  :err   : %s NVRM: Xid (PCI:%s): %s\n" % (iso, bus, msg))
    out.close()

    def iso(sec):
        return datetime.datetime.fromtimestamp(t0 + sec, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.000Z")
    lab = dict(host=host, gpus=n, seed=a.seed, start=iso(0), end=iso(secs), seconds=secs,
               bus_ids={str(g): "0000:%s:00" % BUS[g % len(BUS)] for g in range(n)},
               labels=[dict(gpu=f["gpu"], kind=f["kind"], start=iso(f["a"]), end=iso(f["b"]))
                       for f in sorted(faults, key=lambda f: f["a"])])
    with open(a.labels, "w") as fh:
        json.dump(lab, fh, indent=1)
        fh.write("\n")


if __name__ == "__main__":
    main()
