#!/usr/bin/env bash
# needs: kafka elasticsearch
# t_fleet.sh - `gpulog fleet` on the REAL Kafka and Elasticsearch of
# scripts/services.sh (issue 28, done-when 2; fails when either is unset or
# unreachable). A fleet of 2,000 GPUs on 250 hosts (8 GPUs each, 10 hosts a
# rack, labels.rack on every record): the GPU incident records `detect`
# would write (gpu.incident start/end, the Xid episodes before Xid
# incidents, keyed by host) are produced into a 6-partition anomalies
# topic: 400 independent faults over 4.4 hours (one GPU each, five rules in
# turn, Xid 79 among them, scattered over the racks) and a correlated one:
# gpu.temp.high on all 8 GPUs of 5 hosts of rack r12, 40 starts within
# 9 minutes. A fleet member (--state-topic, snapshots every second) reads
# up to the 20th correlated start and is killed (SIGKILL) with its fleet
# incident open; the rest is produced and a new member of the group goes
# on from the state topic. Checks: Elasticsearch holds exactly one fleet
# incident (one id, one start document, one end) and it names the 5 hosts
# and all 40 GPUs; none for the independent faults; the new member wrote no
# start; a member of another group without state that reads the whole
# topic again writes the same fleet incident id (Elasticsearch's _id keeps
# one); every record validates against schemas/event.schema.json.
# Ends with "N passed, N failed".
set -uo pipefail
. "$(dirname "$0")/lib.sh"
kafka_setup
EURL=${ELASTICSEARCH_URL:-}
curl -fsS -m 5 "$EURL/_nodes/_local" >/dev/null 2>&1; check "Elasticsearch answers at '$EURL'" $? || finish

test_tmp t-fleet
ID=$$$RANDOM
NS=fleet$ID topic=gpulog-fleet-in-$ID group=gpulog-fleet-g-$ID ST=gpulog-fleet-st-$ID
on_exit() {
  curl -s -o /dev/null -XDELETE "$EURL/_data_stream/logs-gpu.anomaly-$NS"
  "$PY" tests/tools/kafka_admin.py "$B" --delete "$topic" "$ST" 2>/dev/null
}
KX=(-X session.timeout.ms=6000 -X heartbeat.interval.ms=500)

"$GPULOG" setup --es "$EURL" --namespace "$NS" > "$tmp/setup.out" 2>&1
check "gpulog setup on Elasticsearch (namespace $NS)" $? "$(tail -n 3 "$tmp/setup.out")"
"$PY" tests/tools/kafka_admin.py "$B" "$topic" 6 2> "$tmp/create.err"; check "anomalies topic with 6 partitions" $? "$(cat "$tmp/create.err")"

# the records: part1 = up to the 20th correlated start (ts < KILL), part2 the rest
"$PY" - "$tmp" <<'EOF'
import hashlib, json, sys
tmp = sys.argv[1]
T0 = 1762473600000            # 2025-11-07T00:00:00Z
TC, KILL = 7200, 7200 + 20 * 13 - 6   # the correlated fault's first start; the kill before the 21st
def ts(s): 
    ms = T0 + int(s * 1000)
    import datetime
    return datetime.datetime.fromtimestamp(ms / 1000, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.") + "%03dZ" % (ms % 1000)
def hid(*a): return hashlib.sha1(repr(a).encode()).hexdigest()[:32]
recs = []   # (time s, host, record)
def incident(host, gpu, rule, start, end, xid=None):
    h = "fleet-%03d" % host
    rack = "r%02d" % (host // 10)
    iid = hid("inc", h, gpu, start)
    base = {"event.kind": "alert", "agent.name": "gpulog", "agent.version": "0.1.0", "host.name": h,
            "gpu.index": gpu, "event.severity": 2, "event.risk_score": 55, "labels.rack": rack}
    if xid is not None:
        recs.append((start, h, dict(base, **{"@timestamp": ts(start), "event.dataset": "gpu.anomaly",
            "event.id": hid("ep", h, gpu, start), "event.type": "start", "rule.id": rule, "rule.name": "GPU kernel error (Xid/SXid)",
            "event.start": ts(start), "event.reason": "Xid %d" % xid, "gpu.xid.code": xid, "anomaly.metric": "gpu.xid.code",
            "anomaly.detector": "xid", "anomaly.value": xid, "anomaly.score": 1, "anomaly.peak_risk_score": 55,
            "anomaly.sequence": 0, "anomaly.episode_id": hid("epid", h, gpu, start)})))
    inc = dict(base, **{"event.dataset": "gpu.incident", "rule.id": "gpu.incident", "rule.name": "GPU incident",
                        "event.start": ts(start), "anomaly.incident_id": iid, "anomaly.rule_count": 1,
                        "anomaly.peak_risk_score": 55})
    recs.append((start, h, dict(inc, **{"@timestamp": ts(start), "event.id": hid("s", iid), "event.type": "start",
        "anomaly.rules": rule, "event.reason": "incident on %s GPU %d: %s" % (h, gpu, rule)})))
    recs.append((end, h, dict(inc, **{"@timestamp": ts(end), "event.id": hid("e", iid), "event.type": "end",
        "event.end": ts(end), "anomaly.rules": rule, "anomaly.duration_s": end - start,
        "event.reason": "incident on %s GPU %d over" % (h, gpu)})))
rules = ["gpu.temp.high", "gpu.power.cap", "gpu.xid", "gpu.clock.drop", "gpu.ecc.sbe"]
for k in range(400):
    host, start = (k * 37) % 250, k * 40
    if 120 <= host < 130 and rules[k % 5] == "gpu.temp.high" and TC - 1200 <= start <= TC + 2400:
        host += 10    # the correlated rack has no other gpu.temp.high near the fault
    incident(host, k % 8, rules[k % 5], start, start + 300, 79 if rules[k % 5] == "gpu.xid" else None)
for i in range(40):
    incident(120 + i % 5, i // 5, "gpu.temp.high", TC + i * 13, TC + 1500 + i)
recs.sort(key=lambda r: r[0])
with open(tmp + "/part1", "w") as p1, open(tmp + "/part2", "w") as p2:
    for t, h, r in recs:
        (p1 if t < KILL else p2).write(h + "\t" + json.dumps(r) + "\n")
with open(tmp + "/all.ndjson", "w") as f:
    for t, h, r in recs: f.write(json.dumps(r) + "\n")
EOF
check "generated $(cat "$tmp/part1" "$tmp/part2" | wc -l) records of 2,000 GPUs on 250 hosts (440 incidents)" $?
n1=$(wc -l < "$tmp/part1")
kcat -b "$B" -P -t "$topic" -K '\t' -l "$tmp/part1" 2> "$tmp/kcat.err"; check "produce part 1 ($n1 records, to the 20th correlated start)" $? "$(cat "$tmp/kcat.err")"

member() {   # $1 records file, $2 log
  "$GPULOG" fleet --brokers "$B" --group "$group" --anomalies-topic "$topic" "${KX[@]}" --hold 60s \
    --es "$EURL" --es-namespace "$NS" --es-batch-age-ms 100 --state-topic "$ST" --snapshot-interval 1 \
    --output "$1" 2> "$2" &
  pids+=($!)
}
has_rec() { grep -q "\"event.type\":\"$2\"" "$1" 2>/dev/null; }
member "$tmp/a.ndjson" "$tmp/a.err"; pa=$!
wait_for 300 has_rec "$tmp/a.ndjson" start; check "the first member opens the fleet incident" $? "$(tail -3 "$tmp/a.err")"
kill_after_commit "$pa" "$group" "$topic" "$n1" "$tmp/part2" "part 1 (the fault half way)"

member "$tmp/b.ndjson" "$tmp/b.err"; pb=$!
wait_for 400 has_rec "$tmp/b.ndjson" end; check "the restarted member ends the fleet incident" $? "$(tail -3 "$tmp/b.err")"
kill -TERM "$pb"; wait "$pb"; check "it stops cleanly on SIGTERM" $? "$(tail -3 "$tmp/b.err")"
grep -q "restored from its snapshot" "$tmp/b.err"
check "it restored the partitions' state at its assignment" $? "$(grep -E 'assigned|snapshot' "$tmp/b.err" | head -5)"
has_rec "$tmp/b.ndjson" start; check "the restarted member wrote no second start" $((1 - $?)) "$(grep '"start"' "$tmp/b.ndjson" | head -2)"
# a member of another group without state reads the whole topic again (a
# replay): the same ids, so Elasticsearch still holds one fleet incident
"$GPULOG" fleet --brokers "$B" --group "$group-cold" --anomalies-topic "$topic" "${KX[@]}" --hold 60s --once \
  --es "$EURL" --es-namespace "$NS" --es-batch-age-ms 100 --output "$tmp/c.ndjson" 2> "$tmp/c.err"
check "a cold member reads the whole topic again (--once, no state)" $? "$(tail -3 "$tmp/c.err")"
id_of() { sed -n 's/.*"event.type":"'"$2"'".*"anomaly.incident_id":"\([0-9a-f]*\)".*/\1/p' "$1" | sort -u; }
check_eq "it writes the one start and the end with the first member's fleet incident id" \
  "$(id_of "$tmp/c.ndjson" start)/$(id_of "$tmp/c.ndjson" end)" "$(id_of "$tmp/a.ndjson" start)/$(id_of "$tmp/b.ndjson" end)"
grep "gpulog fleet: consumed" "$tmp/a.err" "$tmp/b.err" "$tmp/c.err" | sed "s|^$tmp/||; s/^/     /"

curl -s -o /dev/null -XPOST "$EURL/logs-gpu.anomaly-$NS/_refresh"
"$PY" - "$EURL/logs-gpu.anomaly-$NS/_search" "$tmp" > "$tmp/cmp" 2>&1 <<'EOF'
import json, os, sys, urllib.request
sys.path.insert(0, "tests")
from lib import schema_first_error
url, tmp = sys.argv[1:]
q = {"size": 1000, "query": {"term": {"event.dataset": "gpu.fleet_incident"}}, "sort": [{"@timestamp": "asc"}]}
req = urllib.request.Request(url, json.dumps(q).encode(), {"Content-Type": "application/json"})
docs = [h["_source"] for h in json.load(urllib.request.urlopen(req))["hits"]["hits"]]
ids = sorted({d["anomaly.incident_id"] for d in docs})
types = [d["event.type"] for d in docs]
print("docs %d ids %d starts %d ends %d changes %d" % (len(docs), len(ids), types.count("start"), types.count("end"), types.count("change")))
end = [d for d in docs if d["event.type"] == "end"]
want_gpus = ",".join("fleet-%03d:%d" % (h, g) for h in range(120, 125) for g in range(8))
want_hosts = ",".join("fleet-%03d" % h for h in range(120, 125))
e = end[0] if end else {}
print("end gpu_count %s host_count %s gpus_ok %s hosts_ok %s rack %s" % (e.get("anomaly.gpu_count"), e.get("anomaly.host_count"),
      e.get("anomaly.gpus") == want_gpus, e.get("anomaly.hosts") == want_hosts, e.get("labels.rack")))
print("reason:", e.get("event.reason"))
stray = sorted({h for d in docs for h in d["anomaly.hosts"].split(",")} - set(want_hosts.split(",")))
print("stray hosts", stray)
first_error = schema_first_error(json.load(open("schemas/event.schema.json")))
bad = []
for f in ("a.ndjson", "b.ndjson", "c.ndjson", "all.ndjson"):
    for i, l in enumerate(open(os.path.join(tmp, f))):
        err = first_error(json.loads(l))
        if err: bad.append("%s:%d: %s" % (f, i + 1, err))
print("schema errors %d %s" % (len(bad), bad[:3]))
EOF
check "the Elasticsearch query and schema check ran" $? "$(cat "$tmp/cmp")"
sed 's/^/     /' "$tmp/cmp"
check_eq "exactly one fleet incident in Elasticsearch: one id, one start, one end" \
  "$(grep -oE 'ids [0-9]+ starts [0-9]+ ends [0-9]+' "$tmp/cmp")" "ids 1 starts 1 ends 1"
check_eq "its end names the 5 hosts and all 40 GPUs of rack r12" \
  "$(grep -oE '^end .*' "$tmp/cmp")" "end gpu_count 40 host_count 5 gpus_ok True hosts_ok True rack r12"
check_eq "no fleet incident names a host of the independent faults" "$(grep -oE '^stray hosts .*' "$tmp/cmp")" "stray hosts []"
check_eq "every record (fleet's and the input) validates against the schema" "$(grep -oE '^schema errors [0-9]+' "$tmp/cmp")" "schema errors 0"
finish
