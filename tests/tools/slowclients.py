"""slowclients.py - hostile HTTP clients of gpulog's metrics endpoint, and a
collector with a big /metrics page to point them at (python3 stdlib only);
shared by tests/t_http_load.py and bench/http_bench.py:

    c = Collector(gpulog, tmpdir, ngpu)   # collect following a dmon file of
                                          # ngpu GPUs, one fresh sample of
                                          # each a second (stale GPUs leave
                                          # the page); c.port, c.pid, c.rss_kb()
    get(port, "/healthz", timeout)        # (status, body) or (None, error)
    slow_readers(port, n, spread_s)       # n sockets that asked for /metrics
                                          # and read nothing, each from its
                                          # own address (127.0.1.k)
    slowloris(port, addrs, per_addr)      # connections that never finish
                                          # their request; dribble(socks)
                                          # sends one more header line
    close_all(socks); c.stop()
"""
import os
import re
import socket
import subprocess
import threading
import time


def get(port, path, timeout=1.0, src="127.0.0.1"):
    """(status, body) of GET path from address src, or (None, error)."""
    s = socket.socket()
    try:
        s.bind((src, 0))
        s.settimeout(timeout)
        s.connect(("127.0.0.1", port))
        s.sendall(b"GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n" % path.encode())
        data = b""
        deadline = time.time() + timeout
        while time.time() < deadline:
            chunk = s.recv(1 << 20)
            if not chunk:
                break
            data += chunk
        head, _, body = data.partition(b"\r\n\r\n")
        m = re.match(rb"HTTP/1\.[01] (\d+)", head)
        return (int(m.group(1)) if m else None), body
    except OSError as e:
        return None, str(e)
    finally:
        s.close()


def slow_readers(port, n, spread_s):
    """n connections that ask for /metrics with a 4 KiB receive buffer and
    never read, from 127.0.1.1 ... (under the per-address cap), spread over
    spread_s seconds."""
    socks = []
    for i in range(n):
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.bind(("127.0.%d.%d" % (1 + i // 250, 1 + i % 250), 0))
        s.connect(("127.0.0.1", port))
        s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        socks.append(s)
        if spread_s:
            time.sleep(spread_s / n)
    return socks


def slowloris(port, addrs, per_addr):
    """per_addr connections from each of 127.0.0.2 ... 127.0.0.(addrs + 1)
    that send a request line and no end of headers."""
    socks = []
    for a in range(2, 2 + addrs):
        for _ in range(per_addr):
            s = socket.socket()
            s.bind(("127.0.0.%d" % a, 0))
            s.settimeout(2)
            try:
                s.connect(("127.0.0.1", port))
                s.send(b"GET / HTTP/1.1\r\n")
                socks.append(s)
            except OSError:
                s.close()
    return socks


def dribble(socks):
    """One more header line on each slowloris connection (keeps it alive)."""
    for s in socks:
        try:
            s.send(b"X-a: b\r\n")
        except OSError:
            pass


def close_all(socks):
    for s in socks:
        s.close()
    del socks[:]


def metric(port, name):
    """The value of an unlabelled metric, or None."""
    st, body = get(port, "/metrics", 10)
    m = re.search(rb"^%s (\S+)$" % name.encode(), body, re.M) if st == 200 else None
    return float(m.group(1)) if m else None


class Collector:
    """gpulog collect following a dmon file of ngpu GPUs kept fresh by a
    writer thread (a sample of every GPU each second), serving metrics on a
    free port of 127.0.0.1."""

    def __init__(self, gpulog, tmp, ngpu, env=None):
        self.dmon = os.path.join(tmp, "dmon.log")
        self.ngpu = ngpu
        with open(self.dmon, "w") as f:
            f.write("#Date       Time        gpu    pwr  gtemp  mtemp     sm    mem   mclk   pclk\n")
            f.write("#YYYYMMDD   HH:MM:SS    Idx      W      C      C      %      %    MHz    MHz\n")
        self.stopping = threading.Event()
        self.writer = threading.Thread(target=self._write, daemon=True)
        self.writer.start()
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.err = open(os.path.join(tmp, "collect.err"), "w")
        self.p = subprocess.Popen([gpulog, "collect", "--host", "h", "--tz", "UTC", "--file", self.dmon,
                                   "--state-dir", os.path.join(tmp, "st"), "--output", "/dev/null",
                                   "--metrics-addr", "127.0.0.1:%d" % self.port], stderr=self.err, env=env)
        self.pid = self.p.pid

    def _write(self):
        sec = 0
        while not self.stopping.is_set():
            t = time.strftime("%Y%m%d   %H:%M:%S", time.gmtime(time.time()))
            rows = "".join(" %s %6d %6d %6d %6d %6d %6d %6d %6d\n"
                           % (t, g, 250, 40 + (g + sec) % 30, 45, 90, 40, 2619, 1980) for g in range(self.ngpu))
            with open(self.dmon, "a") as f:
                f.write(rows)
            sec += 1
            self.stopping.wait(1)

    def page(self, tries=600):
        """The first /metrics page with every GPU in it, or b""."""
        for _ in range(tries):
            st, body = get(self.port, "/metrics", 10)
            if st == 200 and b'gpu="%d"' % (self.ngpu - 1) in body:
                return body
            time.sleep(0.1)
        return b""

    def rss_kb(self):
        with open("/proc/%d/status" % self.pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        return 0

    def stop(self):
        """SIGTERM, then the exit status (killed after 15 s)."""
        self.stopping.set()
        self.p.terminate()
        try:
            self.p.wait(15)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()
        self.err.close()
        return self.p.returncode
