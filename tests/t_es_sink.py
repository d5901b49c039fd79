#!/usr/bin/env python3
# needs: opensearch elasticsearch
"""t_es_sink.py - the ES sink and `gpulog setup` against the REAL OpenSearch
and Elasticsearch nodes of scripts/services.sh ($OPENSEARCH_URL,
$ELASTICSEARCH_URL; the test fails when one is unset or unreachable).
One suite, run once per engine (ENGINES below): setup, bulk create, counts,
mapping types, 409 on replay and per-item 429 retry run on both; the cases
that test the sink's own handling of a proxy's faults (whole-request 429,
413, lost answers, timeouts, outage, auth headers, Kibana stand-in, run)
run on OpenSearch only, since the engine behind the proxy does not change
them. After both: the _mapping of each data stream is the same in both.
Elasticsearch here is its minimal distribution: no _data_stream API, so
its test data streams cannot be deleted (services.sh up wipes its data).

Events are real parser output (`gpulog parse` of a generated dmon -o DT file,
a generated kernel log with Xid lines and tests/fixtures/kmsg) plus schema-shaped anomaly alerts. They are pushed
through the sink with build/bench/es_push (sink_es_new), directly or through
tests/tools/flaky_proxy.py. Every case uses its own data stream namespace,
deleted at the end.
  1. setup twice: the second run reports every object unchanged; a changed
     template is reported updated.
     setup --kibana posts every saved object to a stand-in Kibana and fails
     on an HTTP 200 answer with success=false.
  2. N events -> N documents (_count per data stream), mapping types as meant.
  3. the same events again -> still N (409 = already stored).
  4. a mapping conflict in the middle of a batch -> that one document in the
     dead letter file (status 400 + reason + document), the rest stored.
     `gpulog run --es` on a trace with injected faults: _search finds the
     anomaly by GPU, metric and time.
  5. 30% of bulk items answered 429 (not forwarded) -> only those are sent
     again (items seen by the proxy = N + rejected) and all N stored once;
     then 25% of whole requests answered 429 -> all stored once.
     then 30% of answers lost after the node stored the batch -> sent
     again, 409s taken as stored, still N.
     requests that time out (the node holds them 8 s) -> sent again, all stored.
  6. basic auth / API key headers are sent, secrets never printed.
  7. the node unreachable for 20 s mid-stream -> nothing lost, nothing doubled.
Ends with "N passed, N failed".
"""
import json
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.environ.get("BUILD", "build")
GPULOG = os.environ.get("GPULOG", os.path.join(ROOT, BUILD, "gpulog"))
ES_PUSH = os.path.join(ROOT, BUILD, "bench", "es_push")
PROXY = os.path.join(ROOT, "tests", "tools", "flaky_proxy.py")
URL = ""          # the engine under test (main() sets it)
ENGINE = ""
ENGINES = [("OpenSearch", "OPENSEARCH_URL"), ("Elasticsearch", "ELASTICSEARCH_URL")]
TMP = tempfile.mkdtemp(prefix="t_es_sink.", dir=os.environ.get("GPULOG_TEST_TMP"))
RUN_ID = "%d%03d" % (os.getpid(), random.randrange(1000))

from lib import check, finish  # noqa: E402
namespaces = []


def http(method, path, body=None, base=None):
    req = urllib.request.Request((base or URL) + path, method=method,
                                 data=json.dumps(body).encode() if body is not None else None,
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, json.loads(r.read() or b"null")
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"null")


def ns(name):
    n = "t%s%s%s" % (RUN_ID, ENGINE[:2].lower(), name)
    namespaces.append((URL, n))
    return n


def count(stream):
    http("POST", "/%s/_refresh" % stream)
    st, r = http("GET", "/%s/_count" % stream)
    return r.get("count", -1) if st == 200 else -1


def ids_in(stream):
    """every _id in a data stream (checks 'exactly once' beyond _count)"""
    http("POST", "/%s/_refresh" % stream)
    st, r = http("POST", "/%s/_search" % stream,
                 {"size": 10000, "_source": False, "query": {"match_all": {}}})
    return [h["_id"] for h in r["hits"]["hits"]] if st == 200 else None


def push(events_file, namespace, url=None, extra=(), stdin=None, timeout=300):
    args = [ES_PUSH, "--es", url or URL, "--es-namespace", namespace, "--index-metrics",
            "--es-batch-age-ms", "200", "--timeout-s", str(timeout)] + list(extra)
    if stdin is None:
        args.append(events_file)
    p = subprocess.run(args, stdin=stdin, capture_output=True, text=True, timeout=timeout + 60)
    kv = {}
    for tok in p.stdout.split():
        if "=" in tok:
            k, v = tok.split("=", 1)
            kv[k] = float(v) if "." in v else int(v)
    kv["rc"] = p.returncode
    kv["stderr"] = p.stderr[-2000:]
    return kv


def gen_events():
    """real parser output: N dmon rows (4 GPUs, -o DT) + the Xid corpus + alerts"""
    dmon = os.path.join(TMP, "dmon-DT.txt")
    rnd = random.Random(7)
    with open(dmon, "w") as f:
        f.write("#Date       Time        gpu   pwr gtemp mtemp    sm   mem   enc   dec  mclk  pclk "
                "sbecc dbecc   pci rxpci txpci\n")
        f.write("#YYYYMMDD   HH:MM:SS    Idx     W     C     C     %     %     %     %   MHz   MHz  "
                "errs  errs  errs  MB/s  MB/s\n")
        for s in range(300):
            hh, mm, ss = 10 + s // 3600, (s // 60) % 60, s % 60
            for g in range(4):
                f.write(" 20250301   %02d:%02d:%02d %6d %5d %5d %5s %5d %5d %5d %5d %5d %5d %5d %5d %5d %5d %5d\n" % (
                    hh, mm, ss, g, 200 + rnd.randrange(300), 40 + rnd.randrange(40),
                    "-" if g == 3 else str(50 + rnd.randrange(30)), rnd.randrange(101),
                    rnd.randrange(101), 0, 0, 2619, 1980, 0, 0, rnd.randrange(3),
                    rnd.randrange(5000), rnd.randrange(5000)))
    env = dict(os.environ, GPULOG_READ_TIME="2025-03-01T12:00:00.000Z", TZ="UTC")
    out = subprocess.run([GPULOG, "parse", "--host", "node-t", "--tz", "UTC", dmon],
                         capture_output=True, text=True, env=env).stdout.splitlines()
    # kernel messages: the repository's fixtures and a generated dmesg -T log
    kern = os.path.join(TMP, "kern.log")
    codes = [(13, "Graphics SM Warp Exception on (GPC 0, TPC 1, SM 0): Out Of Range Address"),
             (31, "Ch 00000010, intr 00000000. MMU Fault: ENGINE GRAPHICS GPCCLIENT_T1_0 faulted @ 0x7f_1234"),
             (43, "Ch 00000008"), (48, "An uncorrectable double bit error (DBE) has been detected on GPU"),
             (79, "GPU has fallen off the bus."), (94, "Contained: SM (0x1). RST: No, D-RST: No"),
             (119, "Timeout after 6s of waiting for RPC response from GPU0 GSP!")]
    with open(kern, "w") as f:
        for i in range(50):
            code, text = codes[i % len(codes)]
            f.write("[Tue Mar  4 02:%02d:%02d 2025] NVRM: Xid (PCI:0000:%02x:00): %d, pid=%d, name=python3, %s\n"
                    % (i // 60, i % 60, 0x18 + i % 4, code, 1000 + i, text))
    fixtures = os.path.join(ROOT, "tests", "fixtures", "kmsg")
    kfiles = [os.path.join(fixtures, n) for n in sorted(os.listdir(fixtures)) if n.endswith(".txt")] \
        if os.path.isdir(fixtures) else []
    for name in [kern] + kfiles:
        out += subprocess.run([GPULOG, "parse", "--host", "node-t", "--tz", "UTC", name],
                              capture_output=True, text=True, env=env).stdout.splitlines()
    for i in range(40):
        out.append(json.dumps({
            "@timestamp": "2025-03-01T10:%02d:00.000Z" % i, "event.kind": "alert",
            "event.dataset": "gpu.anomaly", "event.id": "%032x" % (0xa11e47 + i),
            "agent.name": "gpulog", "agent.version": "0.1.0", "host.name": "node-t",
            "gpu.index": i % 4, "event.type": "start", "rule.id": "robust_z", "rule.name": "robust z-score",
            "event.start": "2025-03-01T10:%02d:00.000Z" % i, "event.risk_score": 75.5,
            "event.severity": 3, "event.reason": "power 612 W far above the usual 300-350 W",
            "anomaly.metric": "gpu.power.usage", "anomaly.value": 612, "anomaly.expected_high": 350.5}))
    path = os.path.join(TMP, "events.ndjson")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")
    by = {"metrics": 0, "xid": 0, "anomaly": 0}
    for line in out:
        ds = json.loads(line)["event.dataset"]
        by["xid" if ds in ("gpu.xid", "gpu.sxid") else "anomaly" if ds == "gpu.anomaly" else "metrics"] += 1
    return path, out, by


def streams(n):
    return {"metrics": "metrics-gpu.dmon-" + n, "xid": "logs-gpu.xid-" + n,
            "anomaly": "logs-gpu.anomaly-" + n}


def counts_ok(n, by, label):
    s = streams(n)
    got = {k: count(v) for k, v in s.items()}
    return check(got == by, "%s %s: _count per stream %s == %s" % (ENGINE, label, got, by))


MAPPINGS = {}   # engine -> stream kind -> {field path: its mapping without sub-objects}


def flat_mapping(stream):
    """the _mapping of a data stream's backing index as {path: leaf mapping}"""
    st, m = http("GET", "/%s/_mapping" % stream)
    out = {}

    def walk(props, prefix):
        for k, v in props.items():
            if "properties" in v:
                walk(v["properties"], prefix + k + ".")
            leaf = {a: b for a, b in v.items() if a not in ("properties", "fields")}
            if "fields" in v:
                leaf["fields"] = v["fields"]
            if leaf:
                out[prefix + k] = leaf
    for idx in (m or {}).values():
        walk(idx["mappings"].get("properties", {}), "")
    return out


def start_proxy(*args):
    pf = os.path.join(TMP, "proxy.port.%d" % random.randrange(10 ** 6))
    p = subprocess.Popen([sys.executable, PROXY, "--upstream", URL, "--port-file", pf] + list(args),
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    for _ in range(100):
        if os.path.exists(pf):
            return p, "http://127.0.0.1:" + open(pf).read().strip()
        time.sleep(0.05)
    p.kill()
    raise SystemExit("flaky_proxy did not start")


def node_version():
    st, r = http("GET", "/_nodes/_local?filter_path=nodes.*.version")
    return next(iter(r["nodes"].values()))["version"] if st == 200 else "?"


def case_setup():
    name = ns("setup")
    r1 = subprocess.run([GPULOG, "setup", "--es", URL, "--namespace", name],
                        capture_output=True, text=True)
    check(r1.returncode == 0, "%s setup: first run exits 0 (%s)" % (ENGINE, r1.stdout.strip().splitlines()[-1:]))
    ver = node_version()
    check(("cluster: %s %s (from " % (ENGINE, ver)) in r1.stdout,
          "%s setup: detects engine and version %s (%s)" % (ENGINE, ver, r1.stdout.splitlines()[:1]))
    r2 = subprocess.run([GPULOG, "setup", "--es", URL, "--namespace", name],
                        capture_output=True, text=True)
    objs = [l for l in r2.stdout.splitlines() if l.startswith(("component template", "index template",
                                                               "data stream", "ilm", "ism"))]
    tpls = [l for l in objs if not l.startswith("data stream")]
    if ENGINE == "Elasticsearch":
        # the minimal distribution has no ILM and no _data_stream API: reported, not failed
        dss = [l for l in objs if l.startswith("data stream")]
        check(len(dss) == 3 and all(": NOT created: " in l and "no data stream API" in l
                                    and "answered HTTP" in l for l in dss),
              "Elasticsearch setup: the 3 data streams are reported NOT created, with the reason")
        check("lifecycle: NOT installed" in r2.stdout and "ILM (GET /_ilm/status answered HTTP" in r2.stdout
              and "retention is NOT managed" in r2.stdout and "4 object(s)" in r2.stdout,
              "Elasticsearch setup: says ILM and the data stream lifecycle are missing and why")
    else:
        tpls = objs
        check("retention is NOT managed" in r2.stdout or "ism policy" in r2.stdout,
              "OpenSearch setup: says what happens to the lifecycle")
    check(r2.returncode == 0 and len(tpls) >= (8 if ENGINE == "OpenSearch" else 5) and all(l.endswith(": unchanged") for l in tpls),
          "%s setup: second run says unchanged for all %d objects" % (ENGINE, len(tpls)))
    # someone edits a template by hand: setup puts the wanted one back
    st, cur = http("GET", "/_index_template/gpulog-logs-xid")
    tpl = cur["index_templates"][0]["index_template"]
    tpl["_meta"]["gpulog_hash"] = "edited-by-hand"
    for k in ("created_date", "created_date_millis", "modified_date", "modified_date_millis"):
        tpl.pop(k, None)   # Elasticsearch 9 reports these and refuses them in a PUT
    st, _ = http("PUT", "/_index_template/gpulog-logs-xid", tpl)
    r3 = subprocess.run([GPULOG, "setup", "--es", URL], capture_output=True, text=True)
    check(st == 200 and "index template gpulog-logs-xid: updated" in r3.stdout
          and "index template gpulog-logs-anomaly: unchanged" in r3.stdout,
          "%s setup: a template changed by hand is updated, the others unchanged" % ENGINE)
    r4 = subprocess.run([GPULOG, "setup", "--es", URL], capture_output=True, text=True)
    check("index template gpulog-logs-xid: unchanged" in r4.stdout, "%s setup: and unchanged after that" % ENGINE)
    if ENGINE == "OpenSearch":
        r5 = subprocess.run([GPULOG, "setup", "--es", "http://127.0.0.1:1"], capture_output=True, text=True)
        check(r5.returncode == 1, "setup: an unreachable cluster exits 1")


def case_kibana():
    """setup --kibana against a stand-in Kibana that answers like the real
    one: HTTP 200 with success true/false"""
    import http.server
    seen, mode = [], {"fail": False}

    class K(http.server.BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            ctype = self.headers.get("Content-Type", "")
            part = b""
            if "boundary=" in ctype:
                bnd = ctype.split("boundary=", 1)[1].encode()
                for chunk in body.split(b"--" + bnd):
                    if b'name="file"' in chunk:
                        part = chunk.split(b"\r\n\r\n", 1)[1].rsplit(b"\r\n", 1)[0]
            objs = [json.loads(l) for l in part.decode().splitlines() if l.strip()]
            seen.append({"path": self.path, "xsrf": self.headers.get("kbn-xsrf"), "n": len(objs),
                         "ids": [o["id"] for o in objs]})
            if mode["fail"]:
                ans = {"success": False, "successCount": len(objs) - 1, "errors": [
                    {"id": objs[-1]["id"], "type": objs[-1]["type"], "error": {"type": "missing_references"}}]}
            else:
                ans = {"success": True, "successCount": len(objs),
                       "successResults": [{"id": o["id"], "type": o["type"]} for o in objs]}
            data = json.dumps(ans).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), K)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    kurl = "http://127.0.0.1:%d" % srv.server_address[1]
    try:
        r = subprocess.run([GPULOG, "setup", "--es", URL, "--kibana", kurl], capture_output=True, text=True)
        files = sorted(f for f in os.listdir(os.path.join(ROOT, "schemas", "kibana")) if f.endswith(".ndjson"))
        want = sum(1 for f in files for l in open(os.path.join(ROOT, "schemas", "kibana", f)) if l.strip())
        check(r.returncode == 0 and len(seen) == len(files) and sum(x["n"] for x in seen) == want
              and all(x["xsrf"] == "true" and x["path"] == "/api/saved_objects/_import?overwrite=true" for x in seen)
              and r.stdout.count("kibana ") == len(files) and "imported" in r.stdout,
              "setup --kibana: %d files, %d objects posted as multipart 'file' with kbn-xsrf, overwrite=true"
              % (len(seen), sum(x["n"] for x in seen)))
        mode["fail"] = True
        r = subprocess.run([GPULOG, "setup", "--es", URL, "--kibana", kurl], capture_output=True, text=True)
        check(r.returncode == 1 and "success=false" in r.stdout and "missing_references" in r.stdout,
              "setup --kibana: HTTP 200 with success=false is reported as a failure (exit 1)")
    finally:
        srv.shutdown()


def case_basic(path, lines, by):
    n = ns("basic")
    r = push(path, n)
    total = len(lines)
    check(r["rc"] == 0 and r.get("stored") == total and r.get("deadletter") == 0,
          "%s: push %d events: all stored (%s)" % (ENGINE, total, {k: r.get(k) for k in ("stored", "deadletter", "unsettled", "requests")}))
    counts_ok(n, by, "first push")
    MAPPINGS[ENGINE] = {k: flat_mapping(v) for k, v in streams(n).items()}
    st, m = http("GET", "/%s/_mapping/field/%s" % (streams(n)["metrics"], ",".join([
        "@timestamp", "gpu.index", "gpu.power.usage", "gpu.temperature.gpu", "gpu.pcie.replay",
        "host.name", "log.offset", "gpu.utilization.gpu.pct"])))
    types = {}
    for idx in (m or {}).values():
        for f, v in idx["mappings"].items():
            types[f] = next(iter(v["mapping"].values()))["type"]
    want = {"@timestamp": "date", "gpu.index": "keyword", "gpu.power.usage": "float",
            "gpu.temperature.gpu": "float", "gpu.pcie.replay": "long", "host.name": "keyword",
            "log.offset": "long", "gpu.utilization.gpu.pct": "float"}
    check(types == want, "%s metrics mapping types %s" % (ENGINE, types))
    st, m = http("GET", "/%s/_mapping/field/%s" % (streams(n)["xid"], ",".join([
        "gpu.xid.code", "gpu.xid.severity", "event.original", "message", "event.severity"])))
    x = {}
    for idx in (m or {}).values():
        for f, v in idx["mappings"].items():
            x[f] = next(iter(v["mapping"].values()))
    check({k: v["type"] for k, v in x.items()} == {"gpu.xid.code": "keyword", "gpu.xid.severity": "keyword",
                                                   "event.original": "keyword", "message": "text",
                                                   "event.severity": "long"}
          and x.get("event.original", {}).get("index") is False,
          "%s xid mapping types (event.original kept, not indexed)" % ENGINE)
    st, m = http("GET", "/%s/_mapping/field/anomaly.value,anomaly.metric,event.risk_score,rule.id" % streams(n)["anomaly"])
    a = {}
    for idx in (m or {}).values():
        for f, v in idx["mappings"].items():
            a[f] = next(iter(v["mapping"].values()))["type"]
    check(a == {"anomaly.value": "double", "anomaly.metric": "keyword", "event.risk_score": "float",
                "rule.id": "keyword"}, "%s anomaly mapping types (dynamic family anomaly.*) %s" % (ENGINE, a))
    # the documents are the events, byte for byte in _source
    st, r2 = http("POST", "/%s/_search" % streams(n)["xid"], {"size": 1, "query": {"term": {"gpu.xid.code": 79}}})
    hit = r2["hits"]["hits"][0] if st == 200 and r2["hits"]["hits"] else None
    orig = [json.loads(l) for l in lines if json.loads(l).get("gpu.xid.code") == 79]
    check(hit is not None and hit["_id"] == hit["_source"]["event.id"] and hit["_source"] in orig,
          "%s: _id = event.id and _source = the event (Xid 79 found by keyword term)" % ENGINE)
    # the same events again: 409s are "already stored"
    r = push(path, n)
    check(r["rc"] == 0 and r.get("stored") == total and r.get("duplicates") == total - 0,
          "%s: same events again: all settled as stored, %s duplicates (409)" % (ENGINE, r.get("duplicates")))
    counts_ok(n, by, "second push")
    got = ids_in(streams(n)["metrics"])
    check(got is not None and len(got) == len(set(got)) == by["metrics"], "%s: no _id twice in metrics" % ENGINE)


def case_run():
    """gpulog run --es: a generated dmon trace with injected faults (tools/
    gentrace.py) -> detectors -> OpenSearch; _search finds the anomaly for
    the faulty GPU, metric and time"""
    gen = os.path.join(ROOT, "tools", "gentrace.py")
    if not check(os.path.exists(gen), "tools/gentrace.py exists"):
        return
    n = ns("run")
    trace, labels = os.path.join(TMP, "trace.txt"), os.path.join(TMP, "labels.json")
    subprocess.run([sys.executable, gen, "--seed", "5", "--hours", "0.5", "--gpus", "2", "-o", trace, "-l", labels],
                   capture_output=True, check=True)
    r = subprocess.run([GPULOG, "run", "--no-live", "--es", URL, "--es-namespace", n, trace],
                       capture_output=True, text=True, timeout=300)
    recs = [json.loads(l) for l in r.stdout.splitlines() if l.strip()]
    stream = streams(n)["anomaly"]
    got = ids_in(stream) or []
    check(r.returncode == 0 and recs and sorted(got) == sorted(x["event.id"] for x in recs),
          "run --es: the %d anomaly records on stdout are the documents in %s" % (len(recs), stream))
    found = 0
    for lab in json.load(open(labels))["labels"]:
        match = [x for x in recs if x["gpu.index"] == lab["gpu"] and lab["start"] <= x["event.start"] <= lab["end"]]
        if not match:
            continue
        q = {"query": {"bool": {"filter": [
            {"term": {"gpu.index": lab["gpu"]}}, {"term": {"anomaly.metric": match[0]["anomaly.metric"]}},
            {"term": {"event.type": "start"}},
            {"range": {"event.start": {"gte": lab["start"], "lte": lab["end"]}}}]}}}
        st, res = http("POST", "/%s/_search" % stream, q)
        hits = res["hits"]["hits"] if st == 200 else []
        if hits and hits[0]["_source"]["rule.id"] == match[0]["rule.id"]:
            found += 1
    check(found >= 1, "run --es: _search finds %d injected faults by GPU, metric and time" % found)


def case_conflict(lines):
    n = ns("conflict")
    xs = [json.loads(l) for l in lines if '"gpu.xid"' in l][:30]
    bad = dict(xs[10])
    bad["event.id"] = "%032x" % 0xbad
    bad["log.offset"] = "not-a-number"
    docs = xs[:15] + [bad] + xs[15:]
    src = os.path.join(TMP, "conflict.ndjson")
    with open(src, "w") as f:
        f.write("".join(json.dumps(d) + "\n" for d in docs))
    dl = os.path.join(TMP, "deadletter.ndjson")
    r = push(src, n, extra=["--deadletter", dl, "--es-batch-bytes", "1M"])
    check(r["rc"] == 0 and r.get("stored") == len(xs) and r.get("deadletter") == 1 and r.get("requests") == 1,
          "mapping conflict: 1 dead letter, %d stored, in one request (%s)" % (len(xs), {k: r.get(k) for k in ("stored", "deadletter", "requests")}))
    check(count(streams(n)["xid"]) == len(xs), "mapping conflict: the rest of the batch is in the index")
    rec = [json.loads(l) for l in open(dl)] if os.path.exists(dl) else []
    check(len(rec) == 1 and rec[0].get("deadletter.status") == 400 and rec[0].get("event.id") == bad["event.id"]
          and rec[0].get("document") == bad and "log.offset" in rec[0].get("deadletter.reason", "")
          and rec[0].get("deadletter.index") == streams(n)["xid"],
          "dead letter record: status 400, reason names the field, original document")


def case_429(path, lines, by):
    n = ns("r429")
    proxy, purl = start_proxy("--item429", "0.3", "--seed", "3")
    try:
        r = push(path, n, url=purl, extra=["--es-batch-bytes", "64k"])
        st, ps = http("GET", "/__proxy/stats", base=purl)
        total = len(lines)
        check(r["rc"] == 0 and r.get("stored") == total and r.get("deadletter") == 0,
              "%s item 429s: all %d settled as stored (%s)" % (ENGINE, total, {k: r.get(k) for k in ("stored", "item_retries", "requests")}))
        check(ps["items_rejected"] > total // 5, "%s: proxy rejected %d items with 429" % (ENGINE, ps["items_rejected"]))
        check(ps["items_seen"] == total + ps["items_rejected"] and r.get("item_retries") == ps["items_rejected"],
              "%s: only rejected items were sent again: seen %d = %d + %d rejected"
              % (ENGINE, ps["items_seen"], total, ps["items_rejected"]))
        check(r.get("duplicates") == 0, "%s: no item answered 409: nothing accepted was sent twice" % ENGINE)
        counts_ok(n, by, "item 429s")
        got = ids_in(streams(n)["metrics"])
        check(got is not None and len(got) == len(set(got)) == by["metrics"], "%s item 429s: each document once" % ENGINE)
        if ENGINE != "OpenSearch":
            return
        # whole requests answered 429
        n2 = ns("w429")
        http("POST", "/__proxy/config?item429=0&req429=0.25", {}, base=purl)
        r = push(path, n2, url=purl, extra=["--es-batch-bytes", "64k"])
        st, ps2 = http("GET", "/__proxy/stats", base=purl)
        check(r["rc"] == 0 and r.get("stored") == total and ps2["requests_rejected"] > 0
              and r.get("request_failures") == ps2["requests_rejected"],
              "whole-request 429s (%d): all stored" % ps2["requests_rejected"])
        counts_ok(n2, by, "whole-request 429s")
        # 413 for bodies over 300 kB: the sink splits its 1 MiB batches
        n4 = ns("big")
        http("POST", "/__proxy/config?item429=0&req429=0&dropresp=0&maxbody=300000", {}, base=purl)
        r = push(path, n4, url=purl, extra=["--es-batch-bytes", "1M"])
        st, ps4 = http("GET", "/__proxy/stats", base=purl)
        check(r["rc"] == 0 and r.get("stored") == total and 0 < ps4["too_large"] <= 3 and r.get("deadletter") == 0,
              "413 (body too large, %d times, then the smaller size is kept): batches split, all %d stored"
              % (ps4["too_large"], total))
        counts_ok(n4, by, "413 split")
        http("POST", "/__proxy/config?maxbody=0", {}, base=purl)
        # answers lost after the node stored the documents: re-sent, 409 = stored
        n3 = ns("lost")
        http("POST", "/__proxy/config?item429=0.1&req429=0&dropresp=0.3", {}, base=purl)
        r = push(path, n3, url=purl, extra=["--es-batch-bytes", "64k"])
        st, ps3 = http("GET", "/__proxy/stats", base=purl)
        check(r["rc"] == 0 and r.get("stored") == total and ps3["responses_dropped"] > 0
              and r.get("duplicates", 0) > 0,
              "lost answers (%d): all stored, %s re-sent documents taken as 409 duplicates"
              % (ps3["responses_dropped"], r.get("duplicates")))
        counts_ok(n3, by, "lost answers")
        got = ids_in(streams(n3)["metrics"])
        check(got is not None and len(got) == len(set(got)) == by["metrics"], "lost answers: each document once")
    finally:
        proxy.kill()
        proxy.wait()


def case_hang(path, lines, by):
    """a node that stops answering (requests time out) for 8 s: the sink
    gives up on the request after GPULOG_ES_TIMEOUT_MS and sends it again"""
    n = ns("hang")
    proxy, purl = start_proxy()
    try:
        http("POST", "/__proxy/hang?seconds=8", {}, base=purl)
        t0 = time.time()
        env = dict(os.environ, GPULOG_ES_TIMEOUT_MS="1500")
        p = subprocess.run([ES_PUSH, "--es", purl, "--es-namespace", n, "--index-metrics", "--es-batch-age-ms", "100",
                            "--timeout-s", "120", path], capture_output=True, text=True, env=env, timeout=180)
        kv = dict(tok.split("=", 1) for tok in p.stdout.split() if "=" in tok)
        st, ps = http("GET", "/__proxy/stats", base=purl)
        check(p.returncode == 0 and int(kv.get("stored", -1)) == len(lines) and ps["hung"] >= 2
              and int(kv.get("request_failures", 0)) >= 2 and "timeout was reached" in p.stderr.lower(),
              "timeouts: %d requests hung and timed out, then all %d stored after %.0f s"
              % (ps["hung"], len(lines), time.time() - t0))
        counts_ok(n, by, "timeouts")
    finally:
        proxy.kill()
        proxy.wait()


def case_auth(lines):
    """basic auth and API key reach the server as headers; secrets are never
    printed (the proxy records the Authorization headers it forwards)"""
    import base64
    proxy, purl = start_proxy()
    try:
        src = os.path.join(TMP, "auth.ndjson")
        with open(src, "w") as f:
            f.write("\n".join(l for l in lines if '"gpu.xid"' in l) + "\n")
        keyf = os.path.join(TMP, "apikey")
        with open(keyf, "w") as f:
            f.write("k3y-S3CRET-123\n")
        env = dict(os.environ, GPULOG_ES_PASSWORD="pw-S3CRET-456")
        outs = []
        for extra in (["--es-user", "elastic"], ["--es-api-key-file", keyf]):
            p = subprocess.run([ES_PUSH, "--es", purl, "--es-namespace", ns("auth"), "--es-batch-age-ms", "50",
                                src] + extra, capture_output=True, text=True, env=env, timeout=120)
            outs.append(p.stdout + p.stderr)
        # a URL with credentials in it: setup masks them in what it prints
        bad = subprocess.run([GPULOG, "setup", "--es", "http://elastic:url-S3CRET-789@127.0.0.1:1"],
                             capture_output=True, text=True)
        outs.append(bad.stdout + bad.stderr)
        st, ps = http("GET", "/__proxy/stats", base=purl)
        basic = "Basic " + base64.b64encode(b"elastic:pw-S3CRET-456").decode()
        check(basic in ps["auth"] and "ApiKey k3y-S3CRET-123" in ps["auth"],
              "basic auth (password from GPULOG_ES_PASSWORD) and API key (from a file) are sent")
        check(not any("S3CRET" in o for o in outs) and "***@127.0.0.1:1" in outs[-1],
              "no secret in any output; credentials in a URL are masked")
    finally:
        proxy.kill()
        proxy.wait()


def case_outage(path, lines, by):
    n = ns("down")
    proxy, purl = start_proxy()
    try:
        p = subprocess.Popen([ES_PUSH, "--es", purl, "--es-namespace", n, "--index-metrics",
                              "--es-batch-age-ms", "100", "--timeout-s", "120"],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        t0 = time.time()
        down_at = None
        # ~30 s stream: ~40 lines every 0.1 s... spread over the lines we have
        per_tick = max(1, len(lines) // 250)
        for i in range(0, len(lines), per_tick):
            p.stdin.write("\n".join(lines[i:i + per_tick]) + "\n")
            p.stdin.flush()
            if down_at is None and time.time() - t0 > 4:
                http("POST", "/__proxy/down?seconds=20", {}, base=purl)
                down_at = time.time()
            time.sleep(0.1)
        p.stdin.close()
        p.stdin = None
        out, err = p.communicate(timeout=180)
        elapsed = time.time() - t0
        kv = dict(tok.split("=", 1) for tok in out.split() if "=" in tok)
        st, ps = http("GET", "/__proxy/stats", base=purl)
        check(down_at is not None and ps["conns_dropped"] > 0 and int(kv.get("request_failures", 0)) > 0,
              "outage: the proxy dropped %s connections during 20 s (%s failed requests)"
              % (ps["conns_dropped"], kv.get("request_failures")))
        check(p.returncode == 0 and int(kv.get("stored", -1)) == len(lines),
              "outage: all %d settled as stored after %.0f s" % (len(lines), elapsed))
        counts_ok(n, by, "outage")
        got = ids_in(streams(n)["metrics"])
        check(got is not None and len(got) == len(set(got)) == by["metrics"], "outage: each document once")
    finally:
        proxy.kill()
        proxy.wait()


def engine_up(name, var):
    """the engine's URL from the environment, and it answers (_nodes/_local:
    Elasticsearch's minimal distribution answers 405 on GET /)"""
    global URL
    URL = os.environ.get(var, "")
    if not check(URL != "", "%s is set (start services: scripts/services.sh up)" % var):
        return False
    try:
        st, _ = http("GET", "/_nodes/_local?filter_path=nodes.*.version")
    except Exception:  # noqa: BLE001
        st = 0
    return check(st == 200, "%s answers at %s" % (name, URL))


def case_mapping_parity():
    """the same events give the same field mappings in both engines"""
    if len(MAPPINGS) != 2:
        check(False, "mappings of both engines to compare (have %s)" % sorted(MAPPINGS))
        return
    a, b = (MAPPINGS[e] for e, _ in ENGINES)
    for kind in ("metrics", "xid", "anomaly"):
        diff = {f: (a[kind].get(f), b[kind].get(f)) for f in set(a[kind]) | set(b[kind])
                if a[kind].get(f) != b[kind].get(f)}
        check(a[kind] and not diff, "%s: the same %d field mappings in OpenSearch and Elasticsearch%s"
              % (kind, len(a[kind]), (" (differ: %s)" % dict(list(diff.items())[:5])) if diff else ""))


def main():
    global ENGINE
    for exe in (GPULOG, ES_PUSH):
        if not check(os.access(exe, os.X_OK), "%s is built" % exe):
            finish()
    path, lines, by = gen_events()
    check(by["metrics"] == 1200 and by["xid"] > 40 and by["anomaly"] == 40, "test events: %s" % by)
    try:
        for ENGINE, var in ENGINES:
            if not engine_up(ENGINE, var):
                continue
            case_setup()
            case_basic(path, lines, by)
            case_429(path, lines, by)
            if ENGINE != "OpenSearch":
                continue
            case_kibana()
            case_conflict(lines)
            case_run()
            case_auth(lines)
            case_hang(path, lines, by)
            case_outage(path, lines, by)
        case_mapping_parity()
    finally:
        for url, n in namespaces:   # Elasticsearch's minimal distribution refuses (no _data_stream API)
            for s in streams(n).values():
                http("DELETE", "/_data_stream/" + s, base=url)
    finish()


if __name__ == "__main__":
    sys.exit(main())
