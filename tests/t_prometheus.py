#!/usr/bin/env python3
# needs: prometheus
"""t_prometheus.py - gpulog's /metrics in a real Prometheus (Debian's package,
started by scripts/services.sh: services/prometheus/prometheus.sh, scrape and
rule evaluation every 1 s, the shipped deploy/prometheus/gpulog-rules.yml).

A trace of one host with 4 GPUs in nvidia-smi --query-gpu CSV with one kernel
Xid line (GPU 0 healthy; GPU 1 hot at 90-92 C and an Xid 79 on its bus; GPU 2
with its framebuffer 95 % full; GPU 3 stops reporting after 9 samples) is fed
through `gpulog run --metrics-addr` at 2 samples per second while Prometheus
scrapes it. Checked through Prometheus's HTTP API:
  - the target is up and carries the dcgm-exporter labels;
  - every value Prometheus stored for GPU power, temperature, framebuffer and
    sample time is one `gpulog parse` printed for that GPU, and several distinct
    ones arrived (the scrape followed the feed);
  - every query of every panel of deploy/grafana/gpulog-dashboard.json returns
    series (variables set to the test's host and all GPUs);
  - the shipped alert rules are active (pending or firing) for the faulty GPUs
    and for no other: temperature GPU 1, framebuffer GPU 2, stopped GPU 3,
    critical Xid on the host, open anomalies of severity >= 2 only on GPUs 1 and 3,
    never anything for GPU 0, and neither GpulogDown nor GpulogDroppingData.
Takes about 15 s. Fails (does not skip) when Prometheus is not running.
"""
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GPULOG = os.environ.get("GPULOG", os.path.join(ROOT, os.environ.get("BUILD", "build"), "gpulog"))
PROM = os.environ.get("PROMETHEUS_URL", "http://127.0.0.1:19490")
TARGETS = os.environ.get("PROMETHEUS_TARGETS", os.path.join(ROOT, "services/prometheus/run/targets"))
HOST = "promtest-%d-%d" % (os.getpid(), int(time.time()) % 100000)
from lib import check, finish  # noqa: E402


def api(path, **params):
    url = PROM + "/api/v1/" + path + ("?" + urllib.parse.urlencode(params) if params else "")
    with urllib.request.urlopen(url, timeout=10) as r:
        body = json.load(r)
    if body.get("status") != "success":
        raise RuntimeError("%s: %s" % (path, body))
    return body["data"]


def trace(nsets):
    """The trace lines, one sample set (4 GPUs, 1 s apart in the trace) at a time."""
    head = ("timestamp, index, uuid, name, pci.bus_id, temperature.gpu, temperature.memory, power.draw [W], "
            "power.limit [W], utilization.gpu [%], memory.used [MiB], memory.total [MiB], clocks.sm [MHz], "
            "clocks.mem [MHz], ecc.errors.corrected.volatile.total, ecc.errors.uncorrected.volatile.total")
    sets = [[head]]
    bus = ["18", "2A", "3A", "5D"]
    for s in range(nsets):
        ts = "2025/11/07 09:%02d:%02d.000" % (s // 60, s % 60)
        lines = []
        for g in range(4):
            if g == 3 and s > 8:
                continue
            temp = 90 + s % 3 if g == 1 else 50 + g
            fb = 77500 + s if g == 2 else 8000 + 10 * g
            lines.append("%s, %d, GPU-5e1f0000-0000-4000-8000-00000000000%d, NVIDIA H100 80GB HBM3, 00000000:%s:00.0, "
                         "%d, %d, %.2f W, 700.00 W, %d %%, %d MiB, 81559 MiB, 1980 MHz, 2619 MHz, %d, 0"
                         % (ts, g, g, bus[g], temp, temp + 5, 200 + g + s * 0.25, 60 + g, fb, g))
        if s == 5:
            lines.append("[Fri Nov  7 09:00:05 2025] NVRM: Xid (PCI:0000:2a:00): 79, pid=1234, GPU has fallen off the bus.")
        sets.append(lines)
    return sets


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def main():
    t_start = time.time()
    try:
        api("status/buildinfo")
    except Exception as e:
        check(False, "Prometheus answers at " + PROM + " (scripts/services.sh up starts it)", e)
        finish()
    tmp = tempfile.mkdtemp(prefix="gpulog-prom.", dir=os.environ.get("GPULOG_TEST_TMP"))
    sets = trace(60)
    path = os.path.join(tmp, "trace.csv")
    with open(path, "w") as f:
        f.write("\n".join(line for s in sets for line in s) + "\n")
    # what gpulog parse prints for the same samples: (gpu, field) -> values
    parsed = {}
    out = subprocess.run([GPULOG, "parse", "--tz", "UTC", "--host", HOST, path], capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        ev = json.loads(line)
        if ev.get("event.kind") != "metric":
            continue
        g = str(ev["gpu.index"])
        for k in ("gpu.power.usage", "gpu.temperature.gpu", "gpu.memory.framebuffer.used_size"):
            parsed.setdefault((g, k), set()).add(float(ev[k]))
        ts = ev["@timestamp"]
        parsed.setdefault((g, "ts"), set()).add(time.mktime(time.strptime(ts[:19], "%Y-%m-%dT%H:%M:%S")) - time.timezone)

    port = free_port()
    os.makedirs(TARGETS, exist_ok=True)
    tfile = os.path.join(TARGETS, HOST + ".json")
    with open(tfile + ".tmp", "w") as f:
        json.dump([{"targets": ["127.0.0.1:%d" % port], "labels": {"test": HOST}}], f)
    os.rename(tfile + ".tmp", tfile)
    err = open(os.path.join(tmp, "run.err"), "w")
    run = subprocess.Popen([GPULOG, "run", "--tz", "UTC", "--host", HOST, "--metrics-addr", "127.0.0.1:%d" % port,
                            "--no-live", "-o", os.path.join(tmp, "anomalies.ndjson"), "-"],
                           stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=err, text=True)
    stop = threading.Event()

    def feed():   # 2 sample sets per second (1 s apart in the trace): the scrape sees most of them
        try:
            for s in sets:
                if stop.is_set():
                    break
                run.stdin.write("\n".join(s) + "\n")
                run.stdin.flush()
                time.sleep(0.5)
        except (BrokenPipeError, ValueError):
            pass

    feeder = threading.Thread(target=feed, daemon=True)
    feeder.start()
    try:
        checks(port, parsed, t_start)
    finally:
        stop.set()
        feeder.join(5)
        try:
            run.stdin.close()
        except OSError:
            pass
        try:
            run.wait(10)
        except subprocess.TimeoutExpired:
            run.kill()
        os.unlink(tfile)
        err.close()
    check(run.returncode == 0, "gpulog run exits 0", open(os.path.join(tmp, "run.err")).read()[-800:])
    print("took %.1f s" % (time.time() - t_start))
    finish()


def wait(what, fn, timeout=25):
    """Polls fn() (returns (ok, detail)) until ok or timeout; checks the last answer."""
    end = time.time() + timeout
    while True:
        try:
            ok, detail = fn()
        except Exception as e:   # Prometheus not there yet, a query error
            ok, detail = False, e
        if ok or time.time() > end:
            check(ok, what, detail)
            return ok
        time.sleep(0.5)


def checks(port, parsed, t_start):
    inst = "127.0.0.1:%d" % port

    def target_up():
        ts = [t for t in api("targets")["activeTargets"] if t["labels"].get("instance") == inst]
        return bool(ts) and ts[0]["health"] == "up", ts
    wait("Prometheus scrapes gpulog run (target up)", target_up)

    def labels():
        r = api("query", query='DCGM_FI_DEV_GPU_TEMP{Hostname="%s",gpu="1"}' % HOST)["result"]
        want = {"gpu": "1", "UUID": "GPU-5e1f0000-0000-4000-8000-000000000001", "device": "nvidia1",
                "modelName": "NVIDIA H100 80GB HBM3", "pci_bus_id": "0000:2a:00", "Hostname": HOST}
        return len(r) == 1 and all(r[0]["metric"].get(k) == v for k, v in want.items()), r
    wait("DCGM_FI_DEV_GPU_TEMP carries dcgm-exporter's labels", labels)

    # alerts: wait until the expected set is active, then check nothing else is
    expect = {("GpuTemperatureHigh", "1"), ("GpuFramebufferFull", "2"), ("GpuStoppedReporting", "3"),
              ("GpuCriticalXid", None), ("GpuIncidentOpen", "1"), ("GpuIncidentOpen", "3")}

    def active():
        got = set()
        for a in api("alerts")["alerts"]:
            l = a["labels"]
            if l.get("Hostname") == HOST or l.get("instance") == inst:
                got.add((l["alertname"], l.get("gpu"), a["state"]))
        return got

    def alerts_fire():
        got = active()
        names = {(n, g) for n, g, _ in got}
        return expect <= names, sorted(got)
    wait("alerts active: temperature GPU 1, framebuffer GPU 2, stopped GPU 3, critical Xid, incidents GPUs 1 and 3",
         alerts_fire, timeout=30)
    got = active()
    check({(n, g) for n, g, _ in got} <= expect,
          "no alert for another GPU or for gpulog itself (down, dropping data)", sorted(got))
    check(not any(g == "0" for _, g, _ in got), "no alert for the healthy GPU 0", sorted(got))
    check(not any(n == "GpulogAnomalyOpen" for n, _, _ in got),
          "the anomalies of GPUs 1 and 3 alert once, as their incident (no GpulogAnomalyOpen)", sorted(got))
    xid = api("query", query='DCGM_FI_DEV_XID_ERRORS{Hostname="%s"}' % HOST)["result"]
    check(len(xid) == 1 and xid[0]["metric"].get("gpu") == "1" and xid[0]["value"][1] == "79",
          "DCGM_FI_DEV_XID_ERRORS is 79 on GPU 1 (matched by bus id)", xid)
    up = api("query", query='gpulog_gpu_up{Hostname="%s"}' % HOST)["result"]
    check(sorted((r["metric"]["gpu"], r["value"][1]) for r in up) == [("0", "1"), ("1", "1"), ("2", "1"), ("3", "0")],
          "gpulog_gpu_up: GPUs 0-2 1, GPU 3 0", up)

    # values: everything Prometheus stored is what gpulog parse printed
    end = time.time()
    for name, field in (("DCGM_FI_DEV_POWER_USAGE", "gpu.power.usage"), ("DCGM_FI_DEV_GPU_TEMP", "gpu.temperature.gpu"),
                        ("DCGM_FI_DEV_FB_USED", "gpu.memory.framebuffer.used_size"),
                        ("gpulog_gpu_last_sample_timestamp_seconds", "ts")):
        r = api("query_range", query='%s{Hostname="%s"}' % (name, HOST), start=t_start, end=end, step=1)["result"]
        bad, distinct = [], set()
        for series in r:
            g = series["metric"]["gpu"]
            for _, v in series["values"]:
                distinct.add((g, float(v)))
                if float(v) not in parsed.get((g, field), set()):
                    bad.append((g, v))
        check(len(r) == 4 and not bad,
              "%s: %d series, every stored value is one gpulog parse printed" % (name, len(r)), bad[:10])
        if name != "DCGM_FI_DEV_FB_USED":
            check(len(distinct) >= 5, "%s: the scrape followed the feed (>= 5 distinct values)" % name, len(distinct))

    # every dashboard panel's query returns series
    dash = json.load(open(os.path.join(ROOT, "deploy/grafana/gpulog-dashboard.json")))
    names = [v["name"] for v in dash["templating"]["list"]]
    check(dash["templating"]["list"][0]["type"] == "datasource", "dashboard has a datasource variable", names)
    empty, n = [], 0
    for p in dash["panels"]:
        check_ds = p.get("type") == "row" or p.get("datasource", {}).get("uid") == "${datasource}"
        if not check_ds:
            empty.append(p["title"] + ": datasource is not ${datasource}")
        for t in p.get("targets", []):
            q = (t["expr"].replace("$Hostname", HOST).replace("$gpu", ".*")
                 .replace("$__rate_interval", "1m").replace("$__interval", "1s"))
            n += 1
            try:
                r = api("query_range", query=q, start=t_start, end=time.time(), step=1)["result"]
            except Exception as e:
                r, q = [], "%s (%s)" % (q, e)
            if not r:
                empty.append("%s: %s" % (p["title"], q))
    check(n >= 20 and not empty, "all %d dashboard queries return series" % n, empty)


if __name__ == "__main__":
    main()
