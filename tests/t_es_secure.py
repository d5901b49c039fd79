#!/usr/bin/env python3
# needs: elasticsearch-secure
"""t_es_secure.py - the ES sink and `gpulog setup` against the REAL
Elasticsearch node with x-pack security on (scripts/services.sh; TLS with the
CA services/elasticsearch/elasticsearch.sh made, the user gpulog and its API
key made through the security API). Fails when the node is not there.
  1. basic auth (user gpulog, password from a file) over TLS with the CA:
     setup and a push store everything.
  2. Authorization: ApiKey (key from a file): the same events again, every
     one answered 409 (it reached the index as gpulog's key).
  3. TLS verification: without our CA, and with another CA, setup exits 1
     with a certificate error, and a push keeps every document (nothing
     stored, nothing dead-lettered).
  4. a wrong password and an expired API key: a clear "refuses our
     credentials" error with the status, every document kept (unsettled,
     not dead-lettered), retries backed off (no spin).
  5. no secret (passwords, API key, its id:key form) in any output, in the
     dead letter file of a rejected document, in `gpulog config print`, or
     in the /metrics of a `gpulog run --es` whose credentials are refused.
Ends with "N passed, N failed".
"""
import base64
import json
import os
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

from lib import check, finish

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.environ.get("BUILD", "build")
GPULOG = os.environ.get("GPULOG", os.path.join(ROOT, BUILD, "gpulog"))
ES_PUSH = os.path.join(ROOT, BUILD, "bench", "es_push")
URL = os.environ.get("ELASTICSEARCH_SECURE_URL", "")
CA = os.environ.get("ELASTICSEARCH_SECURE_CA", "")
CREDS = os.environ.get("ELASTICSEARCH_SECURE_CREDS", "")
TMP = tempfile.mkdtemp(prefix="t_es_secure.", dir=os.environ.get("GPULOG_TEST_TMP"))
NS = "sec%d" % os.getpid()
outputs = []   # every stdout/stderr of gpulog and es_push, checked for secrets at the end


def secret(name):
    with open(os.path.join(CREDS, name)) as f:
        return f.read().strip()


def http(method, path, body=None, user=None, password=None):
    """a request as the node's superuser elastic (or user:password), verifying with our CA"""
    auth = "%s:%s" % (user or "elastic", password if password is not None else secret("elastic.password"))
    req = urllib.request.Request(URL + path, method=method,
                                 data=json.dumps(body).encode() if body is not None else None,
                                 headers={"Content-Type": "application/json",
                                          "Authorization": "Basic " + base64.b64encode(auth.encode()).decode()})
    ctx = ssl.create_default_context(cafile=CA)
    try:
        with urllib.request.urlopen(req, timeout=60, context=ctx) as r:
            return r.status, json.loads(r.read() or b"null")
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"null")


def run(args, env=None, timeout=120):
    p = subprocess.run(args, capture_output=True, text=True, timeout=timeout,
                       env=dict(os.environ, **(env or {})))
    outputs.append(p.stdout + p.stderr)
    return p


def push(events, auth, extra=(), timeout_s=60, env=None):
    p = run([ES_PUSH, "--es", URL, "--es-namespace", NS, "--es-batch-age-ms", "100",
             "--timeout-s", str(timeout_s)] + auth + list(extra) + [events], env=env, timeout=timeout_s + 60)
    kv = {}
    for tok in p.stdout.split():
        if "=" in tok:
            k, v = tok.split("=", 1)
            kv[k] = float(v) if "." in v else int(v)
    kv["rc"], kv["stderr"] = p.returncode, p.stderr
    return kv


def count(stream):
    http("POST", "/%s/_refresh" % stream)
    st, r = http("GET", "/%s/_count" % stream)
    return r.get("count", -1) if st == 200 else -1


def events():
    """real parser output: the Xid lines of a generated kernel log"""
    kern = os.path.join(TMP, "kern.log")
    with open(kern, "w") as f:
        for i in range(40):
            f.write("[Tue Mar  4 02:%02d:%02d 2025] NVRM: Xid (PCI:0000:%02x:00): %d, pid=%d, name=python3, %s\n"
                    % (i // 60, i % 60, 0x18 + i % 4, 79 if i % 2 else 13, 1000 + i,
                       "GPU has fallen off the bus." if i % 2 else "Graphics SM Warp Exception"))
    out = run([GPULOG, "parse", "--host", "node-s", "--tz", "UTC", kern],
              env={"GPULOG_READ_TIME": "2025-03-01T12:00:00.000Z"}).stdout
    path = os.path.join(TMP, "events.ndjson")
    with open(path, "w") as f:
        f.write(out)
    return path, len(out.splitlines())


def metrics_of_refused_run(path, badpw):
    """/metrics of `gpulog run --es` with a wrong password, while it holds its documents"""
    with socket.socket() as so:
        so.bind(("127.0.0.1", 0))
        port = so.getsockname()[1]
    dmon = os.path.join(TMP, "trace.txt")   # a trace with injected faults: anomalies to send
    subprocess.run([sys.executable, os.path.join(ROOT, "tools", "gentrace.py"), "--seed", "5", "--hours", "0.5",
                    "--gpus", "2", "-o", dmon, "-l", os.path.join(TMP, "labels.json")], capture_output=True)
    p = subprocess.Popen([GPULOG, "run", "--no-live", "--index-metrics", "--es", URL, "--es-namespace", NS,
                          "--es-user", "gpulog", "--es-password-file", badpw, "--es-ca", CA,
                          "--metrics-addr", "127.0.0.1:%d" % port, "-"],
                         stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    body = ""
    try:
        p.stdin.write(open(dmon).read())
        p.stdin.flush()
        for _ in range(50):
            time.sleep(0.2)
            try:
                with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=5) as r:
                    body = r.read().decode()
            except (urllib.error.URLError, ConnectionError):
                continue
            errs = [l for l in body.splitlines() if l.startswith("gpulog_delivery_errors_total")]
            if errs and float(errs[0].split()[-1]) > 0:
                break
    finally:
        p.kill()
        err = p.communicate(timeout=30)[1]
    check("gpulog_delivery_errors_total" in body and "refuses our credentials" in err,
          "gpulog run --es with a wrong password serves /metrics (%d bytes, delivery errors counted) and says why"
          % len(body))
    return body + err


def main():
    if not check(URL.startswith("https://") and CA and CREDS,
                 "ELASTICSEARCH_SECURE_URL/_CA/_CREDS are set (scripts/services.sh up)"):
        finish()
    try:
        st, _ = http("GET", "/_security/_authenticate")
    except Exception as e:  # noqa: BLE001
        st = str(e)
    if not check(st == 200, "the secure node answers at %s with TLS and a user (%s)" % (URL, st)):
        finish()
    pwfile = os.path.join(CREDS, "gpulog.password")
    keyfile = os.path.join(CREDS, "gpulog.apikey")
    basic = ["--es-user", "gpulog", "--es-password-file", pwfile, "--es-ca", CA]
    apikey = ["--es-api-key-file", keyfile, "--es-ca", CA]
    path, n = events()
    check(n == 40, "40 Xid events parsed")
    stream = "logs-gpu.xid-" + NS

    # 1. basic auth over verified TLS
    p = run([GPULOG, "setup", "--es", URL, "--namespace", NS] + basic)
    check(p.returncode == 0 and "cluster: Elasticsearch" in p.stdout
          and "index template gpulog-logs-xid: " in p.stdout,
          "setup with basic auth over TLS (CA checked) exits 0 and installs the templates")
    r = push(path, basic)
    check(r["rc"] == 0 and r.get("stored") == n and r.get("duplicates") == 0,
          "basic auth: all %d stored (%s)" % (n, {k: r.get(k) for k in ("stored", "duplicates", "requests")}))
    check(count(stream) == n, "basic auth: _count is %d" % n)

    # 2. Authorization: ApiKey
    r = push(path, apikey)
    check(r["rc"] == 0 and r.get("stored") == n and r.get("duplicates") == n,
          "API key: the same events again are all answered 409 (%s duplicates)" % r.get("duplicates"))
    check(count(stream) == n, "API key: still %d documents" % n)

    # 3. TLS verification
    p = run([GPULOG, "setup", "--es", URL, "--es-user", "gpulog", "--es-password-file", pwfile])
    check(p.returncode == 1 and "certificate" in p.stderr.lower(),
          "setup without our CA: exit 1, certificate error (%s)" % p.stderr.strip()[-160:])
    other = os.path.join(TMP, "other-ca.crt")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=other",
                    "-keyout", os.path.join(TMP, "other-ca.key"), "-out", other], capture_output=True, check=True)
    p = run([GPULOG, "setup", "--es", URL, "--es-user", "gpulog", "--es-password-file", pwfile, "--es-ca", other])
    check(p.returncode == 1 and "certificate" in p.stderr.lower(),
          "setup with another CA: exit 1, certificate error (%s)" % p.stderr.strip()[-160:])
    r = push(path, ["--es-user", "gpulog", "--es-password-file", pwfile, "--es-ca", other], timeout_s=3)
    check(r.get("stored") == 0 and r.get("unsettled") == n and r.get("deadletter") == 0
          and "TLS certificate cannot be verified" in r["stderr"] and "unable to get local issuer" in r["stderr"],
          "push with another CA: says the certificate cannot be verified and why, all %d kept (unsettled %s, dead letter %s)"
          % (n, r.get("unsettled"), r.get("deadletter")))

    # 4. refused credentials: kept, backed off, said clearly
    badpw = os.path.join(TMP, "bad.password")
    with open(badpw, "w") as f:
        f.write("not-the-password-W4RONG\n")
    t0 = time.time()
    r = push(path, ["--es-user", "gpulog", "--es-password-file", badpw, "--es-ca", CA], timeout_s=5)
    took = time.time() - t0
    check(r.get("stored") == 0 and r.get("unsettled") == n and r.get("deadletter") == 0,
          "wrong password: nothing stored, all %d kept (unsettled %s, dead letter %s)"
          % (n, r.get("unsettled"), r.get("deadletter")))
    check("refuses our credentials" in r["stderr"] and "401" in r["stderr"],
          "wrong password: a clear error with the status (%s)"
          % [l for l in r["stderr"].splitlines() if "credentials" in l][:1])
    check(0 < r.get("requests", 0) <= 8 and took < 30,
          "wrong password: backed off, %s requests in %.0f s (no spin)" % (r.get("requests"), took))
    # an API key that expired
    st, k = http("POST", "/_security/api_key", {"name": "t-expiring", "expiration": "1s"},
                 user="gpulog", password=secret("gpulog.password"))
    expired = os.path.join(TMP, "expired.apikey")
    with open(expired, "w") as f:
        f.write((k or {}).get("encoded", "") + "\n")
    time.sleep(2)
    r = push(path, ["--es-api-key-file", expired, "--es-ca", CA], timeout_s=3)
    check(st == 200 and r.get("stored") == 0 and r.get("unsettled") == n and r.get("deadletter") == 0
          and "refuses our credentials" in r["stderr"] and "401" in r["stderr"],
          "expired API key: a clear 401 error, all %d kept (unsettled %s)" % (n, r.get("unsettled")))
    # the same documents with the right key afterwards: stored (409: they were there)
    r = push(path, apikey)
    check(r.get("stored") == n and count(stream) == n, "and with a valid key: all settled as stored, still %d" % n)

    # 5. secrets: dead letter and config print too
    bad = json.loads(open(path).readline())
    bad["event.id"] = "%032x" % 0x5ec
    bad["log.offset"] = "not-a-number"
    badf, dl = os.path.join(TMP, "bad.ndjson"), os.path.join(TMP, "deadletter.ndjson")
    with open(badf, "w") as f:
        f.write(json.dumps(bad) + "\n")
    r = push(badf, basic, extra=["--deadletter", dl])
    dltext = open(dl).read() if os.path.exists(dl) else ""
    check(r.get("deadletter") == 1 and '"deadletter.status":400' in dltext.replace(" ", ""),
          "a rejected document goes to the dead letter file through the secure node")
    cfg = os.path.join(TMP, "gpulog.yaml")
    with open(cfg, "w") as f:
        f.write("elasticsearch:\n  url: https://gpulog:%s@127.0.0.1:19410\n  user: gpulog\n  password: %s\n"
                "  api_key: %s\n  ca_file: %s\n" % (secret("gpulog.password"), secret("gpulog.password"),
                                                    secret("gpulog.apikey"), CA))
    p = run([GPULOG, "config", "print", cfg])
    check(p.returncode == 0 and "api_key" in p.stdout, "config print of a file with secrets runs")
    outputs.append(metrics_of_refused_run(path, badpw))
    key = secret("gpulog.apikey")
    secrets = [secret("gpulog.password"), secret("elastic.password"), key,
               base64.b64decode(key + "=" * (-len(key) % 4)).decode(errors="replace").split(":")[-1],
               "not-the-password-W4RONG"]
    leaks = [s[:4] + "..." for s in secrets if any(s in o for o in outputs + [dltext])]
    check(not leaks, "no password or API key in any output, the dead letter, config print or /metrics (%d outputs; leaked: %s)"
          % (len(outputs), leaks))
    finish()


if __name__ == "__main__":
    main()
