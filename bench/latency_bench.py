#!/usr/bin/env python3
"""latency_bench.py - line-to-searchable latency of the whole pipeline (make bench).

A writer appends an `nvidia-smi dmon -o DT` stream of N GPUs at 1 Hz to a file
(one write() per second, as dmon does per line); `gpulog collect` tails it into
a fresh Kafka topic; `gpulog detect --es` consumes it, runs the GPU profile and
indexes the anomaly records into a fresh data stream namespace of
Elasticsearch/OpenSearch. Faults are injected into chosen rows (a double-bit
ECC error, 10 single-bit ECC errors, 20 PCIe replays: rules gpu.ecc.dbe,
gpu.ecc.sbe, gpu.pcie.replay fire on the very row), and for each one the
stages are timed on the same clock:

  write      the writer's write() of the faulty row returned
  produce    Kafka CreateTime of that row's message: collect read and parsed
             it and handed it to librdkafka (tail poll + parse)
  broker     a live kcat consumer of the topic received it (producer linger,
             broker append, fetch)
  detect     detect wrote the anomaly record to its --output file (detect's
             consumer poll, decode, detectors)
  stored     the record's _id answers a realtime GET on the backing index
             (ES sink batch age + bulk request)
  searchable the _id answers a _search (index refresh)

Polls run every POLL_MS (25 ms), which bounds the resolution of the last
three stages. Prints p50/p99/max per stage and end to end; exits 1 when a
fault was not searchable within 30 s, or when the end-to-end p99 is above the
target (2 s) and LAT_BENCH_STRICT=1.

usage: latency_bench.py --gpus N --faults-per-tick K --ticks T [--engine elasticsearch|opensearch]
env:   KAFKA_BROKERS, ELASTICSEARCH_URL / OPENSEARCH_URL (services/env.sh), GPULOG,
       LAT_BENCH_DETECT_ARGS (extra detect flags, e.g. "--es-batch-age-ms 1000"),
       LAT_BENCH_REFRESH (set this refresh_interval on the namespace's streams:
       what the shipped templates give is measured otherwise)
"""
import argparse
import http.client
import json
import os
import shlex
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

POLL_MS = 25
RULES = {"dbe": ("gpu.ecc.dbe", 1), "sbe": ("gpu.ecc.sbe", 10), "pci": ("gpu.pcie.replay", 20)}
HDR = ("#Date       Time        gpu   pwr gtemp mtemp    sm   mem   enc   dec  mclk  pclk sbecc dbecc   pci rxpci txpci\n"
       "#YYYYMMDD   HH:MM:SS    Idx     W     C     C     %     %     %     %   MHz   MHz  errs  errs  errs  MB/s  MB/s\n")


def die(msg):
    print("latency_bench: FAILED: " + msg, flush=True)
    print("0 passed, 1 failed")
    sys.exit(1)


class Es:
    """One keep-alive connection to the search engine (owned by one thread)."""
    def __init__(self, url):
        u = urllib.parse.urlparse(url)
        self.host, self.port = u.hostname, u.port or 9200
        self.c = None

    def req(self, method, path, body=None):
        for _ in range(2):
            try:
                if self.c is None:
                    self.c = http.client.HTTPConnection(self.host, self.port, timeout=10)
                data = json.dumps(body).encode() if body is not None else None
                self.c.request(method, path, body=data, headers={"Content-Type": "application/json"})
                r = self.c.getresponse()
                return r.status, json.loads(r.read() or b"{}")
            except (OSError, http.client.HTTPException):
                self.c = None
        return 0, {}


def proc_usage(pid):
    """(CPU seconds user+sys, VmRSS kB, VmHWM kB) of a running process."""
    try:
        f = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()
        cpu = (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")
        st = dict(ln.split(":", 1) for ln in open("/proc/%d/status" % pid) if ":" in ln)
        return cpu, int(st["VmRSS"].split()[0]), int(st["VmHWM"].split()[0])
    except (OSError, KeyError, IndexError, ValueError):
        return float("nan"), 0, 0


def topic_bytes(topic):
    """Bytes of the topic's log segments on the local broker (lz4 batches as stored), or None."""
    d = os.environ.get("KAFKA_RUN_DIR", "services/kafka/run") + "/data"
    tot, seen = 0, False
    for e in os.listdir(d) if os.path.isdir(d) else []:
        if e.rsplit("-", 1)[0] == topic:
            seen = True
            for f in os.listdir(os.path.join(d, e)):
                if f.endswith(".log"):
                    tot += os.path.getsize(os.path.join(d, e, f))
    return tot if seen else None


def pct(xs, p):
    xs = sorted(xs)
    if not xs:
        return float("nan")
    k = max(0, min(len(xs) - 1, int(round(p / 100.0 * len(xs) + 0.5)) - 1))
    return xs[k]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gpus", type=int, default=8)
    ap.add_argument("--faults-per-tick", type=int, default=1)
    ap.add_argument("--ticks", type=int, default=24, help="seconds with faults (after 5 s of warm-up)")
    ap.add_argument("--engine", default=os.environ.get("LAT_BENCH_ENGINE", "elasticsearch"))
    ap.add_argument("--label", default="")
    a = ap.parse_args()
    brokers = os.environ.get("KAFKA_BROKERS") or die("KAFKA_BROKERS unset (scripts/services.sh up)")
    url = os.environ.get("ELASTICSEARCH_URL" if a.engine == "elasticsearch" else "OPENSEARCH_URL") \
        or die("no URL for %s (services/env.sh)" % a.engine)
    gpulog = os.environ.get("GPULOG", "build/gpulog")
    tag = "%d%d" % (os.getpid(), int(time.time()) % 100000)
    ns = "latb" + tag
    tm, te = "bench-lat-m-" + tag, "bench-lat-e-" + tag
    tmp = tempfile.mkdtemp(prefix="latency-bench.")
    procs = []

    def cleanup():
        for p in procs:
            if p.poll() is None:
                p.terminate()
        for p in procs:
            try:
                p.wait(15)
            except subprocess.TimeoutExpired:
                p.kill()
        es = Es(url)
        for ds in ("logs-gpu.anomaly-", "logs-gpu.xid-", "metrics-gpu.dmon-"):
            es.req("DELETE", "/_data_stream/" + ds + ns)
        subprocess.run(["rm", "-rf", tmp])

    try:
        return run(a, brokers, url, gpulog, ns, tm, te, tmp, procs)
    finally:
        cleanup()


def run(a, brokers, url, gpulog, ns, tm, te, tmp, procs):
    es = Es(url)
    st, _ = es.req("GET", "/_nodes/_local")
    if st != 200:
        die("no %s at %s" % (a.engine, url))
    p = subprocess.run([gpulog, "setup", "--es", url, "--namespace", ns], capture_output=True, text=True)
    if p.returncode != 0:
        die("gpulog setup: " + p.stdout[-400:] + p.stderr[-400:])
    stream = "logs-gpu.anomaly-" + ns
    # one document of another host creates the stream now (Elasticsearch's minimal
    # distribution has no data stream API: its first write creates it)
    st, r = es.req("POST", "/%s/_doc?op_type=create&refresh=true" % stream,
                   {"@timestamp": "2025-03-01T00:00:00.000Z", "host.name": "lat-warmup"})
    if st not in (200, 201):
        die("cannot create %s: HTTP %d %s" % (stream, st, str(r)[:300]))
    if os.environ.get("LAT_BENCH_REFRESH"):
        es.req("PUT", "/%s/_settings" % stream, {"index": {"refresh_interval": os.environ["LAT_BENCH_REFRESH"]}})
    # the backing index (realtime GETs go there) and its refresh interval; GET
    # /_data_stream is refused by Elasticsearch's minimal distribution
    st, s = es.req("GET", "/%s/_settings/index.refresh_interval?include_defaults=true" % stream)
    if st != 200 or not s:
        die("data stream %s not created by setup: %s" % (stream, str(s)[:300]))
    backing = sorted(s)[-1]
    idx = s[backing]
    refresh = idx.get("settings", {}).get("index", {}).get("refresh_interval") \
        or idx.get("defaults", {}).get("index", {}).get("refresh_interval", "?")

    # the topics exist before anyone subscribes: one real event of another host each
    warm = os.path.join(tmp, "warm.txt")
    with open(warm, "w") as o:
        o.write(HDR + " 20250301   00:00:00      0   300    50    50    50    50     0     0  2619  1980     0     0     0   100   100\n")
    ev = subprocess.run([gpulog, "parse", "--tz", "UTC", "--host", "lat-warmup", warm], capture_output=True, text=True).stdout
    for t in (tm, te):
        if subprocess.run(["kcat", "-P", "-b", brokers, "-t", t], input=ev, text=True, capture_output=True).returncode:
            die("cannot create topic " + t)

    # live consumer of the metrics topic: when each faulty row reached the broker
    kc = subprocess.Popen(["kcat", "-C", "-b", brokers, "-t", tm, "-o", "end", "-u", "-q", "-f", "%T\t%s\n"],
                          stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    procs.append(kc)
    data = os.path.join(tmp, "dmon.txt")
    with open(data, "w") as o:
        o.write(HDR)
    out = os.path.join(tmp, "records.ndjson")
    open(out, "w").close()
    dlog = open(os.path.join(tmp, "detect.err"), "w")
    clog = open(os.path.join(tmp, "collect.err"), "w")
    extra = shlex.split(os.environ.get("LAT_BENCH_DETECT_ARGS", ""))
    det = subprocess.Popen([gpulog, "detect", "--brokers", brokers, "--group", "bench-lat-" + ns, "--topics", tm + "," + te,
                            "--es", url, "--es-namespace", ns, "--output", out] + extra, stdout=dlog, stderr=dlog)
    procs.append(det)
    col = subprocess.Popen([gpulog, "collect", "--host", "lat-node", "--tz", "UTC", "--file", data,
                            "--state-dir", os.path.join(tmp, "state"), "--brokers", brokers, "--topic", tm,
                            "--events-topic", te, "--stats-interval", "0"], stdout=clog, stderr=clog)
    procs.append(col)
    t_end = time.time() + 30
    while time.time() < t_end:
        with open(os.path.join(tmp, "detect.err")) as f:
            if " assigned " in f.read():
                break
        if det.poll() is not None or col.poll() is not None:
            break
        time.sleep(0.1)
    else:
        die("detect not assigned within 30 s")
    if det.poll() is not None or col.poll() is not None:
        die("detect or collect exited at start: " + open(os.path.join(tmp, "detect.err")).read()[-600:]
            + open(os.path.join(tmp, "collect.err")).read()[-600:])
    time.sleep(1.0)   # every detect partition assigned (3), kcat at the end

    faults = {}       # (gpu, rule) -> dict of stage times
    lock = threading.Lock()
    stop = threading.Event()

    def kcat_reader():
        for line in kc.stdout:
            now = time.time()
            ts, _, js = line.partition("\t")
            try:
                e = json.loads(js)
            except ValueError:
                continue
            g = e.get("gpu.index")
            for kind, (rule, inc) in RULES.items():
                f = faults.get((g, rule))
                if f and "broker" not in f:
                    fld = {"dbe": "gpu.ecc.double_bit.count", "sbe": "gpu.ecc.single_bit.count",
                           "pci": "gpu.pcie.replay"}[kind]
                    if e.get(fld, 0) >= f["value"]:
                        with lock:
                            f["broker"] = now
                            f["produce"] = int(ts) / 1000.0

    def out_reader():
        pos = 0
        rest = ""
        while not stop.is_set():
            with open(out) as f:
                f.seek(pos)
                chunk = f.read()
                pos = f.tell()
            now = time.time()
            rest += chunk
            lines = rest.split("\n")
            rest = lines.pop()
            for ln in lines:
                try:
                    r = json.loads(ln)
                except ValueError:
                    continue
                if r.get("event.type") != "start" or r.get("host.name") != "lat-node":
                    continue
                f = faults.get((r.get("gpu.index"), r.get("rule.id")))
                if f and "detect" not in f:
                    with lock:
                        f["detect"] = now
                        f["id"] = r["event.id"]
            time.sleep(0.01)

    def es_poller():
        e2 = Es(url)
        while not stop.is_set():
            with lock:
                unstored = [f["id"] for f in faults.values() if "id" in f and "stored" not in f]
                unsearch = [f["id"] for f in faults.values() if "id" in f and "searchable" not in f]
            if unstored:
                st, r = e2.req("POST", "/%s/_mget?realtime=true&_source=false" % backing, {"ids": unstored})
                now = time.time()
                for d in r.get("docs", []):
                    if d.get("found"):
                        with lock:
                            for f in faults.values():
                                if f.get("id") == d["_id"] and "stored" not in f:
                                    f["stored"] = now
            if unsearch:
                st, r = e2.req("POST", "/%s/_search" % stream,
                               {"size": len(unsearch), "_source": False, "query": {"ids": {"values": unsearch}}})
                now = time.time()
                for h in r.get("hits", {}).get("hits", []):
                    with lock:
                        for f in faults.values():
                            if f.get("id") == h["_id"] and "searchable" not in f:
                                f["searchable"] = now
            time.sleep(POLL_MS / 1000.0)

    # the fault plan: tick -> [(gpu, kind)], each (gpu, rule) once
    plan = {}
    kinds = ["dbe", "sbe", "pci"]
    nf = 0
    for t in range(a.ticks):
        for j in range(a.faults_per_tick):
            k = t * a.faults_per_tick + j
            g = k % a.gpus
            kind = kinds[(k // a.gpus) % 3]
            if k >= 3 * a.gpus:
                break
            plan.setdefault(5 + t, []).append((g, kind))
            nf += 1
    th = [threading.Thread(target=x, daemon=True) for x in (kcat_reader, out_reader, es_poller)]
    for x in th:
        x.start()

    cnt = {g: {"sbe": 0, "dbe": 0, "pci": 0} for g in range(a.gpus)}
    fd = os.open(data, os.O_WRONLY | os.O_APPEND)
    u0 = {n: proc_usage(p.pid) for n, p in (("collect", col), ("detect", det))}
    t0 = time.time()
    nticks = 5 + a.ticks + 1
    for tick in range(nticks):
        target = t0 + tick
        d = target - time.time()
        if d > 0:
            time.sleep(d)
        for (g, kind) in plan.get(tick, []):
            cnt[g][kind] += RULES[kind][1]
        tm_ = time.gmtime()
        stamp = time.strftime(" %Y%m%d   %H:%M:%S", tm_)
        rows = []
        for g in range(a.gpus):
            c = cnt[g]
            rows.append("%s %6d %5d %5d %5d %5d %5d %5d %5d %5d %5d %5d %5d %5d %5d %5d\n" % (
                stamp, g, 300 + (tick + g) % 7, 60, 62, 90, 40, 0, 0, 2619, 1980, c["sbe"], c["dbe"], c["pci"], 100, 100))
        buf = "".join(rows).encode()
        os.write(fd, buf)
        now = time.time()
        with lock:
            for (g, kind) in plan.get(tick, []):
                faults[(g, RULES[kind][0])] = {"write": now, "value": cnt[g][kind]}
    os.close(fd)
    t1 = time.time()
    u1 = {n: proc_usage(p.pid) for n, p in (("collect", col), ("detect", det))}
    deadline = time.time() + 30
    while time.time() < deadline:
        with lock:
            if all("searchable" in f for f in faults.values()):
                break
        time.sleep(0.1)
    stop.set()
    time.sleep(0.1)

    stages = [("write->produce", "write", "produce", "collect: tail poll (50 ms) + parse"),
              ("produce->broker", "produce", "broker", "producer linger + broker append + fetch"),
              ("broker->detect", "broker", "detect", "detect: consumer fetch/poll + detectors + file write"),
              ("detect->stored", "detect", "stored", "ES sink batch age + bulk request"),
              ("stored->searchable", "stored", "searchable", "index refresh"),
              ("write->searchable", "write", "searchable", "end to end")]
    missing = [k for k, f in faults.items() if "searchable" not in f]
    label = a.label or "%d GPUs" % a.gpus
    print("latency %s: %d GPUs at 1 Hz, %d faults, collect -> Kafka -> detect --es -> %s (refresh_interval %s%s)"
          % (label, a.gpus, nf, a.engine, refresh, ", detect " + " ".join(extra) if extra else ""))
    print("  %-20s %8s %8s %8s   %s" % ("stage (ms)", "p50", "p99", "max", "what"))
    for name, x, y, what in stages:
        v = [1000 * (f[y] - f[x]) for f in faults.values() if x in f and y in f]
        print("  %-20s %8.0f %8.0f %8.0f   %s" % (name, pct(v, 50), pct(v, 99), max(v) if v else float("nan"), what))
    e2e = [f["searchable"] - f["write"] for f in faults.values() if "searchable" in f]
    p99 = pct(e2e, 99)
    print("  end to end p50 %.2f s, p99 %.2f s over %d faults (target p99 <= 2 s: %s); polls every %d ms"
          % (pct(e2e, 50), p99, len(e2e), "met" if p99 <= 2.0 else "NOT met", POLL_MS))
    res = []
    for n in ("collect", "detect"):
        res.append("%s %.2f%% of a core, RSS %.1f MiB (peak %.1f)" % (
            n, 100 * (u1[n][0] - u0[n][0]) / (t1 - t0), u1[n][1] / 1024, u1[n][2] / 1024))
    print("  resources over %.0f s of streaming: %s" % (t1 - t0, "; ".join(res)))
    tb = topic_bytes(tm)
    if tb is not None:
        nev = a.gpus * nticks
        print("  Kafka: %d events in %s, %d bytes stored (%.0f bytes per event, lz4)" % (nev, tm, tb, tb / nev))
    fail = 0
    if missing:
        print("  FAIL: %d faults never searchable: %s" % (len(missing), missing[:5]))
        print("  detect stderr: " + open(os.path.join(tmp, "detect.err")).read()[-800:])
        fail = 1
    if os.environ.get("LAT_BENCH_STRICT") == "1" and not p99 <= 2.0:
        fail = 1
    print("%d passed, %d failed" % (1 - fail, fail))
    return fail


if __name__ == "__main__":
    sys.exit(main())
