#!/usr/bin/env python3
"""kafka_create_topic.py - creates a Kafka topic with a given number of
partitions, or deletes topics (python3 stdlib only: kcat cannot create
topics and the broker auto-creates them with its num.partitions, 3 for the
tests' broker; a test that writes much deletes its topics at exit).

    kafka_create_topic.py HOST:PORT TOPIC PARTITIONS [key=value ...]
    kafka_create_topic.py HOST:PORT --delete TOPIC...

Sends one CreateTopics request (API 19, version 2, replication factor 1,
the key=value pairs as topic configs) or one DeleteTopics request (API 20,
version 1) and exits 0 when the broker did it, 1 with the broker's error
otherwise (2 for usage)."""
import socket
import struct
import sys


def kstr(s):
    b = s.encode()
    return struct.pack(">h", len(b)) + b


def call(hostport, api, version, body):
    """One request of API api at version to hostport; its response after the correlation id."""
    host, _, port = hostport.rpartition(":")
    req = struct.pack(">hhi", api, version, 1) + kstr("gpulog-test") + body
    with socket.create_connection((host, int(port)), timeout=30) as s:
        s.sendall(struct.pack(">i", len(req)) + req)
        buf = b""
        while len(buf) < 4 or len(buf) < 4 + struct.unpack(">i", buf[:4])[0]:
            chunk = s.recv(65536)
            if not chunk:
                break
            buf += chunk
    return buf[8:]


def delete(hostport, topics):
    """DeleteTopics v1: [name], timeout; answers throttle, [name, error_code]."""
    body = struct.pack(">i", len(topics)) + b"".join(kstr(t) for t in topics) + struct.pack(">i", 30000)
    r = call(hostport, 20, 1, body)
    rc, p = 0, 4
    for _ in range(struct.unpack(">i", r[p:p + 4])[0]):
        p += 4
        n = struct.unpack(">h", r[p:p + 2])[0]
        name = r[p + 2:p + 2 + n].decode()
        err = struct.unpack(">h", r[p + 2 + n:p + 4 + n])[0]
        p += n
        if err:
            sys.stderr.write("kafka_create_topic: delete %s: error %d\n" % (name, err))
            rc = 1
    return rc


def main(argv):
    if len(argv) >= 4 and argv[2] == "--delete":
        return delete(argv[1], argv[3:])
    if len(argv) < 4:
        sys.stderr.write(__doc__)
        return 2
    topic, parts = argv[2], int(argv[3])
    configs = [a.split("=", 1) for a in argv[4:]]
    body = struct.pack(">i", 1) + kstr(topic) + struct.pack(">ihi", parts, 1, 0)
    body += struct.pack(">i", len(configs)) + b"".join(kstr(k) + kstr(v) for k, v in configs)
    body += struct.pack(">ib", 30000, 0)                       # timeout_ms, validate_only
    buf = call(argv[1], 19, 2, body)
    # throttle_time_ms, [name, error_code, error_message]
    p = 4 + 4
    n = struct.unpack(">h", buf[p:p + 2])[0]
    name = buf[p + 2:p + 2 + n].decode()
    p += 2 + n
    err = struct.unpack(">h", buf[p:p + 2])[0]
    p += 2
    mlen = struct.unpack(">h", buf[p:p + 2])[0]
    msg = buf[p + 2:p + 2 + mlen].decode() if mlen > 0 else ""
    if err:
        sys.stderr.write("kafka_create_topic: %s: error %d %s\n" % (name, err, msg))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
