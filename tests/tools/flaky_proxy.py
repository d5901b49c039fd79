#!/usr/bin/env python3
"""flaky_proxy.py - a loopback HTTP proxy in front of Elasticsearch/OpenSearch
that injects the failures the ES sink must survive (python3 stdlib only).

    flaky_proxy.py --upstream http://127.0.0.1:19200 [--port 0] [--port-file F]
                   [--item429 0.3] [--req429 0.1] [--dropresp 0.2] [--maxbody N] [--seed N]

- item429 f: in every `_bulk` request, a fraction f of the items is answered
  429 (es_rejected_execution_exception) WITHOUT being forwarded, so those
  documents are really not stored until the client sends them again; the
  other items are forwarded and their real answers merged back in order.
- req429 f: a fraction f of `_bulk` requests is answered 429 as a whole.
- dropresp f: a fraction f of `_bulk` requests is forwarded whole and then
  the connection is closed without an answer (stored, but the client does
  not know: it must send again and take the 409s as success).
- maxbody N: a `_bulk` body (after gunzip) over N bytes is answered 413,
  like http.max_content_length (0 = no limit).
- down: POST /__proxy/down?seconds=S makes the proxy close every connection
  at once (no answer) for S seconds, like a node that went away.
- hang: POST /__proxy/hang?seconds=S: for S seconds `_bulk` requests get no
  answer (held, then the connection is closed), like an overloaded node.
- GET /__proxy/stats: counters as JSON (bulk_requests, items_seen,
  items_rejected, items_forwarded, requests_rejected, conns_dropped,
  responses_dropped) and the Authorization headers seen ("auth"; the
  proxy is for tests: it forwards them and keeps them in memory).
- POST /__proxy/config?item429=F&req429=F changes the rates at run time.
Everything else is forwarded unchanged. Gzip request bodies are understood.
The chosen port is printed on stdout ("port N") and written to --port-file.
"""
import argparse
import gzip
import http.client
import json
import random
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "host",
       "content-encoding", "proxy-connection", "te", "upgrade", "expect"}


class State:
    def __init__(self, upstream, item429, req429, seed, dropresp=0.0):
        u = urllib.parse.urlsplit(upstream)
        self.host, self.port = u.hostname, u.port or 80
        self.item429, self.req429, self.dropresp = item429, req429, dropresp
        self.rnd = random.Random(seed)
        self.down_until = 0.0
        self.hang_until = 0.0
        self.maxbody = 0
        self.lock = threading.Lock()
        self.stats = dict(requests=0, bulk_requests=0, items_seen=0, items_rejected=0,
                          items_forwarded=0, requests_rejected=0, conns_dropped=0,
                          responses_dropped=0, too_large=0, hung=0)
        self.auth = set()           # Authorization headers seen (tests of auth options)

    def add(self, key, n=1):
        with self.lock:
            self.stats[key] += n


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    state = None

    def log_message(self, fmt, *args):
        pass

    def upstream(self):
        c = getattr(self, "_up", None)
        if c is None:
            c = http.client.HTTPConnection(self.state.host, self.state.port, timeout=120)
            self._up = c
        return c

    def forward(self, method, path, headers, body):
        for attempt in range(2):
            c = self.upstream()
            try:
                c.request(method, path, body=body, headers=headers)
                r = c.getresponse()
                data = r.read()
                return r.status, [(k, v) for k, v in r.getheaders() if k.lower() not in HOP], data
            except (http.client.HTTPException, OSError):
                c.close()
                self._up = None
                if attempt:
                    raise

    def reply(self, status, headers, data):
        self.send_response(status)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def reply_json(self, status, obj):
        self.reply(status, [("Content-Type", "application/json")], json.dumps(obj).encode())

    def do_any(self):
        st = self.state
        st.add("requests")
        if time.time() < st.down_until:
            st.add("conns_dropped")
            self.close_connection = True
            return
        if self.headers.get("Authorization"):
            with st.lock:
                st.auth.add(self.headers["Authorization"])
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n) if n else None
        url = urllib.parse.urlsplit(self.path)
        if url.path.startswith("/__proxy/"):
            return self.control(url)
        if body and (self.headers.get("Content-Encoding") or "").lower() == "gzip":
            body = gzip.decompress(body)
        headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP}
        if self.command == "POST" and url.path.endswith("/_bulk") and body:
            return self.bulk(body, headers)
        status, rh, data = self.forward(self.command, self.path, headers, body)
        self.reply(status, rh, data)

    do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = do_any

    def control(self, url):
        st = self.state
        q = dict(urllib.parse.parse_qsl(url.query))
        if url.path == "/__proxy/stats":
            with st.lock:
                return self.reply_json(200, dict(st.stats, auth=sorted(st.auth)))
        if url.path == "/__proxy/down":
            st.down_until = time.time() + float(q.get("seconds", "20"))
            return self.reply_json(200, {"down_until": st.down_until})
        if url.path == "/__proxy/hang":
            st.hang_until = time.time() + float(q.get("seconds", "10"))
            return self.reply_json(200, {"hang_until": st.hang_until})
        if url.path == "/__proxy/config":
            if "item429" in q:
                st.item429 = float(q["item429"])
            if "req429" in q:
                st.req429 = float(q["req429"])
            if "dropresp" in q:
                st.dropresp = float(q["dropresp"])
            if "maxbody" in q:
                st.maxbody = int(q["maxbody"])
            return self.reply_json(200, {"item429": st.item429, "req429": st.req429,
                                         "dropresp": st.dropresp})
        self.reply_json(404, {"error": "unknown control " + url.path})

    def bulk(self, body, headers):
        st = self.state
        st.add("bulk_requests")
        if time.time() < st.hang_until:
            st.add("hung")
            while time.time() < st.hang_until:
                time.sleep(0.1)
            self.close_connection = True
            return
        if st.maxbody and len(body) > st.maxbody:
            st.add("too_large")
            return self.reply_json(413, {"error": {"type": "content_too_long_exception",
                                                   "reason": "injected by flaky_proxy"}, "status": 413})
        lines = body.split(b"\n")
        if lines and lines[-1] == b"":
            lines.pop()
        pairs = [(lines[i], lines[i + 1]) for i in range(0, len(lines) - 1, 2)]
        st.add("items_seen", len(pairs))
        with st.lock:
            whole = st.rnd.random() < st.req429
            reject = [st.rnd.random() < st.item429 for _ in pairs]
            drop = st.rnd.random() < st.dropresp
        if whole:
            st.add("requests_rejected")
            return self.reply_json(429, {"error": {"type": "es_rejected_execution_exception",
                                                   "reason": "injected by flaky_proxy"}, "status": 429})
        keep = [p for p, r in zip(pairs, reject) if not r]
        st.add("items_rejected", len(pairs) - len(keep))
        st.add("items_forwarded", len(keep))
        up_items = []
        if keep:
            fwd = b"".join(a + b"\n" + s + b"\n" for a, s in keep)
            headers["Content-Type"] = "application/x-ndjson"
            status, rh, data = self.forward("POST", self.path, headers, fwd)
            if status != 200:
                return self.reply(status, rh, data)
            if drop:
                st.add("responses_dropped")
                self.close_connection = True
                return
            up = json.loads(data)
            up_items = up.get("items")
            if up_items is None:
                up_items = [{"create": {"status": 201}}] * len(keep)
        items, it, errors = [], iter(up_items), False
        for (action, _), r in zip(pairs, reject):
            if r:
                kind = next(iter(json.loads(action)))
                items.append({kind: {"status": 429, "error": {
                    "type": "es_rejected_execution_exception", "reason": "injected by flaky_proxy"}}})
                errors = True
            else:
                item = next(it)
                errors = errors or next(iter(item.values())).get("status", 500) >= 300
                items.append(item)
        self.reply_json(200, {"errors": errors, "items": items})


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--upstream", required=True)
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--port-file")
    ap.add_argument("--item429", type=float, default=0.0)
    ap.add_argument("--req429", type=float, default=0.0)
    ap.add_argument("--dropresp", type=float, default=0.0)
    ap.add_argument("--maxbody", type=int, default=0)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    Handler.state = State(a.upstream, a.item429, a.req429, a.seed, a.dropresp)
    Handler.state.maxbody = a.maxbody
    srv = ThreadingHTTPServer(("127.0.0.1", a.port), Handler)
    srv.daemon_threads = True
    port = srv.server_address[1]
    if a.port_file:
        with open(a.port_file + ".tmp", "w") as f:
            f.write("%d\n" % port)
        import os
        os.replace(a.port_file + ".tmp", a.port_file)
    print("port %d" % port, flush=True)
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    sys.exit(main())
