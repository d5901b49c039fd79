#!/usr/bin/env python3
"""kafka_admin.py - the few Kafka admin requests the tests need that kcat
cannot make (python3 stdlib only, one broker):

    kafka_admin.py HOST:PORT TOPIC PARTITIONS [key=value ...]
    kafka_admin.py HOST:PORT --delete TOPIC...
    kafka_admin.py HOST:PORT --members GROUP
    kafka_admin.py HOST:PORT --committed GROUP TOPIC

The first creates a topic with that many partitions (the broker
auto-creates them with its num.partitions, 3 for the tests' broker):
CreateTopics v2, replication factor 1, the key=value pairs as topic
configs. --delete deletes topics (a test that writes much deletes its own
at exit): DeleteTopics v1. --members prints the group's state and then its
members' ids, one a line, sorted (DescribeGroups v1; a member that left and
joined again has a new id). --committed prints the sum of the group's
offsets committed at the broker for the partitions of TOPIC (none counts 0;
OffsetFetch v2 for all the group's topics, so no partition count is needed):
what a process that reports a commit it only requested cannot tell. Exit 0 when the broker did it, 1 with the
broker's error otherwise, 2 for usage."""
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
            sys.stderr.write("kafka_admin: delete %s: error %d\n" % (name, err))
            rc = 1
    return rc


def rstr(r, p):
    """The string at r[p:] and the position after it."""
    n = struct.unpack(">h", r[p:p + 2])[0]
    return (r[p + 2:p + 2 + n].decode() if n > 0 else ""), p + 2 + max(n, 0)


def members(hostport, group):
    """DescribeGroups v1: throttle, [error, group, state, protocol type, protocol, [member id, client id,
    client host, metadata bytes, assignment bytes]]."""
    r = call(hostport, 15, 1, struct.pack(">i", 1) + kstr(group))
    p = 4 + 4
    err = struct.unpack(">h", r[p:p + 2])[0]
    _, p = rstr(r, p + 2)
    state, p = rstr(r, p)
    _, p = rstr(r, p)
    _, p = rstr(r, p)
    if err:
        sys.stderr.write("kafka_admin: describe %s: error %d\n" % (group, err))
        return 1
    ids = []
    count = struct.unpack(">i", r[p:p + 4])[0]
    p += 4
    for _ in range(count):
        mid, p = rstr(r, p)
        ids.append(mid)
        for _ in range(2):
            _, p = rstr(r, p)
        for _ in range(2):
            p += 4 + max(struct.unpack(">i", r[p:p + 4])[0], 0)
    print(state)
    for m in sorted(ids):
        print(m)
    return 0


def committed(hostport, group, topic):
    """OffsetFetch v2: group, null topics (all of the group's); answers
    [topic, [partition, offset, metadata, error]], error."""
    r = call(hostport, 9, 2, kstr(group) + struct.pack(">i", -1))
    total, p = 0, 4
    for _ in range(struct.unpack(">i", r[0:4])[0]):
        name, p = rstr(r, p)
        count = struct.unpack(">i", r[p:p + 4])[0]
        p += 4
        for _ in range(count):
            part, off = struct.unpack(">iq", r[p:p + 12])
            _, p = rstr(r, p + 12)
            err = struct.unpack(">h", r[p:p + 2])[0]
            p += 2
            if err:
                sys.stderr.write("kafka_admin: committed %s[%d]: error %d\n" % (name, part, err))
                return 1
            if name == topic:
                total += max(off, 0)
    err = struct.unpack(">h", r[p:p + 2])[0]
    if err:
        sys.stderr.write("kafka_admin: committed (group %s): error %d\n" % (group, err))
        return 1
    print(total)
    return 0


def main(argv):
    if len(argv) == 5 and argv[2] == "--committed":
        return committed(argv[1], argv[3], argv[4])
    if len(argv) >= 4 and argv[2] == "--delete":
        return delete(argv[1], argv[3:])
    if len(argv) == 4 and argv[2] == "--members":
        return members(argv[1], argv[3])
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
        sys.stderr.write("kafka_admin: %s: error %d %s\n" % (name, err, msg))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
