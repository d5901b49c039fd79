#!/usr/bin/env bash
# needs: kafka opensearch elasticsearch
# t_e2e.sh - end to end against the REAL Kafka and OpenSearch of
# scripts/services.sh (fails when either is unset or unreachable):
#   a dmon trace with injected faults (tools/gentrace.py, labels kept) and a
#   kernel log with Xid lines -> gpulog collect --once -> Kafka (own topics)
#   -> gpulog detect --once --es (own group and namespace, --index-metrics)
#   -> OpenSearch: first a detect that cannot reach the cluster is killed
#   (its offsets must stay uncommitted), then the same group again: every
#   metric, Xid event and anomaly record is a document,
#   and a _search finds the anomaly of an injected fault by GPU, metric and
#   time. Then a second consumer group reads the same topics again: 409s,
#   still the same counts. A third group writes the same topics into the real
#   Elasticsearch ($ELASTICSEARCH_URL): the same documents and records there,
#   and _search finds the fault there too.
# Ends with "N passed, N failed".
set -uo pipefail
. "$(dirname "$0")/lib.sh"
G=$GPULOG
[ -z "${OPENSEARCH_URL:-}${KAFKA_BROKERS:-}" ] && [ -f services/env.sh ] && . services/env.sh
URL=${OPENSEARCH_URL:-}; BROKERS=${KAFKA_BROKERS:-}; EURL=${ELASTICSEARCH_URL:-}
curl -fsS -m 5 "$URL/" >/dev/null 2>&1; check "OpenSearch answers at '${URL}'" $?
# _nodes/_local: Elasticsearch's minimal distribution answers 405 on GET /
curl -fsS -m 5 "$EURL/_nodes/_local" >/dev/null 2>&1; check "Elasticsearch answers at '${EURL}'" $?
kcat -b "$BROKERS" -L -m 5 >/dev/null 2>&1; check "Kafka answers at '${BROKERS}'" $?
[ "$failed" = 0 ] || finish
[ -x "$G" ] && [ -f tools/gentrace.py ]; check "gpulog and tools/gentrace.py are there" $?
[ "$failed" = 0 ] || finish

test_tmp t_e2e
ID=$$$RANDOM
NS=e2e$ID MT=gpu.metrics.e2e$ID ET=gpu.events.e2e$ID
on_exit() {   # lib.sh's exit trap calls this first
  for s in metrics-gpu.dmon logs-gpu.xid logs-gpu.anomaly; do
    curl -s -o /dev/null -XDELETE "$URL/_data_stream/$s-$NS"
  done
}

python3 tools/gentrace.py --seed 5 --hours 0.5 --gpus 2 --host e2e-node -o "$tmp/dmon.log" -l "$tmp/labels.json" >/dev/null 2>&1
for i in $(seq 10 29); do   # a kernel log with Xid lines (dmesg -T)
  printf '[Wed Nov 26 09:%02d:%02d 2025] NVRM: Xid (PCI:0000:18:00): %s, pid=%d, name=python3, %s\n' \
    $((30 + i / 10)) "$i" "$( [ $((i % 2)) = 0 ] && echo 13 || echo 48)" $((4000 + i)) \
    "$( [ $((i % 2)) = 0 ] && echo 'Graphics SM Warp Exception' || echo 'An uncorrectable double bit error')"
done > "$tmp/kern.log"
nmetrics=$("$G" parse --host e2e-node "$tmp/dmon.log" 2>/dev/null | wc -l)
nxid=$("$G" parse --host e2e-node "$tmp/kern.log" 2>/dev/null | wc -l)
[ "$nmetrics" -gt 1000 ] && [ "$nxid" -gt 0 ]; check "inputs: $nmetrics dmon events, $nxid Xid events" $?

"$G" setup --es "$URL" --namespace "$NS" > "$tmp/setup.out" 2>&1; check "gpulog setup (namespace $NS)" $?
"$G" collect --once --brokers "$BROKERS" --host e2e-node --state-dir "$tmp/state" -t "$MT" --events-topic "$ET" \
  --file "$tmp/dmon.log" --file "$tmp/kern.log" > "$tmp/collect.out" 2>&1
check "gpulog collect --once into topics $MT, $ET" $?

detect() {   # $1 group $2 records file [$3 cluster URL, default OpenSearch]
  timeout 300 "$G" detect --once --brokers "$BROKERS" --group "$1" --topics "$MT,$ET" \
    --es "${3:-$URL}" --es-namespace "$NS" --index-metrics --es-batch-age-ms 200 --output "$2" > "$tmp/detect.$1.out" 2>&1
}
count() {   # $1 data stream kind [$2 cluster URL, default OpenSearch]
  curl -s -o /dev/null -XPOST "${2:-$URL}/$1-$NS/_refresh"
  curl -s "${2:-$URL}/$1-$NS/_count" | python3 -c 'import json,sys; print(json.load(sys.stdin).get("count",-1))'
}
# a detect that cannot reach the cluster and is killed: it must not have
# committed offsets of events that never reached OpenSearch
"$G" detect --brokers "$BROKERS" --group "g1$ID" --topics "$MT,$ET" --es http://127.0.0.1:1 \
  --es-namespace "$NS" --index-metrics --output /dev/null > "$tmp/detect.crash.out" 2>&1 &
dpid=$!
# killed 3 s (three commit ticks) after its first failed bulk request (it
# has consumed and tried to store), however long its start and group join
# take (up to 60 s): not a fixed 8 s after its start
wait_for 600 grep -qs "bulk request failed" "$tmp/detect.crash.out"; rc=$?
sleep 3
kill -9 "$dpid" 2>/dev/null; wait "$dpid" 2>/dev/null
check "a detect whose bulk requests fail (no cluster) was killed 3 s after its first failed bulk request" $rc
detect "g1$ID" "$tmp/records1.ndjson"; check "gpulog detect --once --es, same group (g1$ID), cluster reachable" $?
consumed=$(sed -n 's/.*consumed \([0-9]*\) messages.*/\1/p' "$tmp/detect.g1$ID.out")
[ "$consumed" = "$((nmetrics + nxid))" ]; check "it consumed all $consumed messages again: nothing was committed for them" $?
nrec=$(wc -l < "$tmp/records1.ndjson")
m=$(count metrics-gpu.dmon); x=$(count logs-gpu.xid); a=$(count logs-gpu.anomaly)
[ "$m" = "$nmetrics" ]; check "metrics-gpu.dmon-$NS holds every dmon event ($m of $nmetrics)" $?
[ "$x" = "$nxid" ]; check "logs-gpu.xid-$NS holds every Xid event ($x of $nxid)" $?
[ "$nrec" -gt 0 ] && [ "$a" = "$nrec" ]; check "logs-gpu.anomaly-$NS holds every anomaly record ($a of $nrec)" $?

find_fault() {   # $1 cluster URL: _search there finds the anomaly of an injected fault
python3 - "$1/logs-gpu.anomaly-$NS" "$tmp/labels.json" "$tmp/records1.ndjson" <<'EOF'
import json, sys, urllib.request
url, labels, records = sys.argv[1:]
recs = [json.loads(l) for l in open(records)]
found = []
for lab in json.load(open(labels))["labels"]:
    for r in recs:
        if r.get("gpu.index") != lab["gpu"] or not (lab["start"] <= r["event.start"] <= lab["end"]):
            continue
        q = {"query": {"bool": {"filter": [
            {"term": {"host.name": "e2e-node"}}, {"term": {"gpu.index": lab["gpu"]}},
            {"term": {"anomaly.metric": r["anomaly.metric"]}}, {"term": {"event.type": "start"}},
            {"range": {"event.start": {"gte": lab["start"], "lte": lab["end"]}}}]}}}
        req = urllib.request.Request(url + "/_search", data=json.dumps(q).encode(),
                                     headers={"Content-Type": "application/json"})
        hits = json.load(urllib.request.urlopen(req))["hits"]["hits"]
        if hits and hits[0]["_source"]["rule.id"] == r["rule.id"]:
            found.append("%s: GPU %d %s at %s" % (lab["kind"], lab["gpu"], r["anomaly.metric"], r["event.start"]))
            break
print("\n".join("     found " + f for f in found))
sys.exit(0 if found else 1)
EOF
}
find_fault "$URL"; check "_search finds the anomaly of an injected fault by GPU, metric and time" $?

detect "g2$ID" "$tmp/records2.ndjson"; check "a second consumer group reads the same topics again" $?
m2=$(count metrics-gpu.dmon); x2=$(count logs-gpu.xid); a2=$(count logs-gpu.anomaly)
ids() { python3 -c 'import json,sys; print("\n".join(sorted(json.loads(l)["event.id"] for l in open(sys.argv[1]))))' "$1"; }
[ "$m2" = "$m" ] && [ "$x2" = "$x" ] && [ "$a2" = "$a" ] && [ "$(ids "$tmp/records1.ndjson")" = "$(ids "$tmp/records2.ndjson")" ]
check "still $m / $x / $a documents after the replay (409 = already stored; same record ids)" $?
grep -q "stored=0 duplicates=$((m + x + a))" "$tmp/detect.g2$ID.out"
check "the replay was answered 409 for every document ($(grep -o 'stored=[0-9]* duplicates=[0-9]*' "$tmp/detect.g2$ID.out"))" $?

# the same topics into Elasticsearch: a third group, the same documents and records
# (not deleted afterwards: its minimal distribution has no _data_stream API)
"$G" setup --es "$EURL" --namespace "$NS" > "$tmp/setup.es.out" 2>&1
check "gpulog setup on Elasticsearch" $? "$(tail -n 5 "$tmp/setup.es.out")"
detect "g5$ID" "$tmp/records5.ndjson" "$EURL"; check "gpulog detect --once --es into Elasticsearch (group g5$ID)" $?
m5=$(count metrics-gpu.dmon "$EURL"); x5=$(count logs-gpu.xid "$EURL"); a5=$(count logs-gpu.anomaly "$EURL")
[ "$m5" = "$m" ] && [ "$x5" = "$x" ] && [ "$a5" = "$a" ] && [ "$(ids "$tmp/records1.ndjson")" = "$(ids "$tmp/records5.ndjson")" ]
check "Elasticsearch holds the same $m5 / $x5 / $a5 documents and records as OpenSearch ($m / $x / $a)" $?
find_fault "$EURL"; check "_search on Elasticsearch finds the anomaly of an injected fault too" $?

# an outage of the cluster longer than max.poll.interval.ms (8 s here): with
# its outputs full, detect pauses its partitions and keeps polling the group,
# so it keeps them (no eviction, no revoke, nothing consumed twice) and
# delivers everything once the cluster is back
python3 tests/tools/flaky_proxy.py --upstream "$URL" --port-file "$tmp/proxy.port" > "$tmp/proxy.out" 2>&1 &
ppid=$!
wait_for 50 test -s "$tmp/proxy.port"
PURL=http://127.0.0.1:$(cat "$tmp/proxy.port" 2>/dev/null)
curl -s -o /dev/null -XPOST "$PURL/__proxy/down?seconds=20"; check "loopback proxy in front of OpenSearch, down for 20 s" $?
t0=$(date +%s)
timeout 180 "$G" detect --once --brokers "$BROKERS" --group "g3$ID" --topics "$MT,$ET" --es "$PURL" --es-namespace "$NS" \
  --index-metrics --es-batch-age-ms 200 --es-batch-bytes 16k --es-max-pending-bytes 32k --output "$tmp/records3.ndjson" \
  -X max.poll.interval.ms=8000 -X session.timeout.ms=6000 -X heartbeat.interval.ms=500 > "$tmp/detect.g3.out" 2>&1
rc=$?; took=$(( $(date +%s) - t0 ))
kill "$ppid" 2>/dev/null; wait "$ppid" 2>/dev/null
consumed=$(sed -n 's/.*consumed \([0-9]*\) messages.*/\1/p' "$tmp/detect.g3.out")
[ "$rc" = 0 ] && [ "$took" -ge 20 ]; check "detect --once through a 20 s outage exits 0 (rc=$rc after ${took} s)" $?
grep -q "partitions paused" "$tmp/detect.g3.out"; check "it paused its partitions while the outputs were full" $?
# evicted members rejoin and are assigned again (the revokes at the final close are normal)
nparts=$(kcat -b "$BROKERS" -L -t "$MT" 2>/dev/null | grep -c "partition [0-9]*, leader")
nparts=$((nparts + $(kcat -b "$BROKERS" -L -t "$ET" 2>/dev/null | grep -c "partition [0-9]*, leader")))
evict=$(grep -iE "rebalance error|max(imum)? poll interval" "$tmp/detect.g3.out")
nassigned=$(grep -c "gpulog detect: assigned " "$tmp/detect.g3.out")
[ -z "$evict" ] && [ "$nassigned" = "$nparts" ]
check "no eviction from the group: each of the $nparts partitions assigned once ($nassigned assignments)" $?
[ -z "$evict" ] || sed 's/^/     /' <<<"$evict" | head -8
[ "$consumed" = "$((nmetrics + nxid))" ]; check "every message consumed exactly once ($consumed of $((nmetrics + nxid)))" $?
m3=$(count metrics-gpu.dmon); x3=$(count logs-gpu.xid); a3=$(count logs-gpu.anomaly)
[ "$m3" = "$m" ] && [ "$x3" = "$x" ] && [ "$a3" = "$a" ] && [ "$(ids "$tmp/records1.ndjson")" = "$(ids "$tmp/records3.ndjson")" ]
check "after the outage still $m3 / $x3 / $a3 documents, the same records" $?
grep -q "duplicates=$((m + x + a))" "$tmp/detect.g3.out"
check "every document reached the cluster after the outage ($(grep -o 'stored=[0-9]* duplicates=[0-9]*' "$tmp/detect.g3.out"))" $?

# evicted anyway: a member frozen (SIGSTOP) past session.timeout.ms loses its
# partitions; when it wakes up it is revoked and assigned again, and --once
# must go on until everything is read (it used to stop at the revoke)
python3 tests/tools/flaky_proxy.py --upstream "$URL" --port-file "$tmp/proxy2.port" > "$tmp/proxy2.out" 2>&1 &
ppid=$!
wait_for 50 test -s "$tmp/proxy2.port"
PURL=http://127.0.0.1:$(cat "$tmp/proxy2.port" 2>/dev/null)
curl -s -o /dev/null -XPOST "$PURL/__proxy/down?seconds=25"
timeout 180 "$G" detect --once --brokers "$BROKERS" --group "g4$ID" --topics "$MT,$ET" --es "$PURL" --es-namespace "$NS" \
  --index-metrics --es-batch-age-ms 200 --es-batch-bytes 16k --es-max-pending-bytes 32k --output "$tmp/records4.ndjson" \
  -X session.timeout.ms=6000 -X heartbeat.interval.ms=500 > "$tmp/detect.g4.out" 2>&1 &
dpid=$!
wait_for 600 grep -q "partitions paused" "$tmp/detect.g4.out"
gpid=$(pgrep -P "$dpid" | head -n 1)   # gpulog itself, under timeout(1)
kill -STOP "$gpid"; sleep 10; kill -CONT "$gpid"
wait "$dpid"; rc=$?
kill "$ppid" 2>/dev/null; wait "$ppid" 2>/dev/null
consumed=$(sed -n 's/.*consumed \([0-9]*\) messages.*/\1/p' "$tmp/detect.g4.out")
nrevoked=$(grep -c "gpulog detect: revoked " "$tmp/detect.g4.out")
[ "$rc" = 0 ] && [ "$nrevoked" -gt "$nparts" ]
check "a member frozen past its session timeout is revoked and assigned again (rc=$rc, $nrevoked revokes for $nparts partitions)" $?
[ "$consumed" -ge "$((nmetrics + nxid))" ]
check "--once reads on after the revoke: all $((nmetrics + nxid)) messages ($consumed consumed, replays included)" $?
[ "$(ids "$tmp/records1.ndjson")" = "$(ids "$tmp/records4.ndjson" | sort -u)" ]
check "and finds the same anomaly records" $?
finish
