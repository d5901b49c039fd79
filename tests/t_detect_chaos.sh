#!/usr/bin/env bash
# needs: kafka opensearch
# t_detect_chaos.sh - members killed, added and stopped during a fault, and
# still one episode per fault (issue 19), against the REAL Kafka and
# OpenSearch of scripts/services.sh (fails when either is unset or
# unreachable): 3 hosts, each with a GPU that runs hot from 300 s to 1000 s
# of a 1200 s trace, fed in four parts to a group of `gpulog detect`
# members with --state-topic: three members start; after the second part
# one is killed (SIGKILL); after the third a new one joins; after the last
# one is stopped (SIGTERM). Whatever moved, every hot GPU has exactly one
# gpu.temp.high start (in all members' outputs together: not even a second
# one answered 409) and one end in OpenSearch, under one episode id; moved
# partitions were restored from their snapshots.
# Ends with "N passed, N failed".
set -uo pipefail
. "$(dirname "$0")/lib.sh"
opensearch_kafka_setup

test_tmp t-detect-chaos
ID=$$$RANDOM
NS=chaos$ID topic=gpulog-chaos-$ID group=gpulog-chaos-g-$ID ST=gpulog-chaos-st-$ID
on_exit() { for s in logs-gpu.anomaly logs-gpu.xid; do curl -s -o /dev/null -XDELETE "$URL/_data_stream/$s-$NS"; done; }
KX=(-X session.timeout.ms=6000 -X heartbeat.interval.ms=500)

"$PY" - "$tmp/keyed" <<'EOF'
import json, sys
with open(sys.argv[1], "w") as f:
    for s in range(1200):
        for h in range(3):
            for g in (0, 1):
                t = 92 if g == 1 and 300 <= s < 1000 else 48 + (s * 7 + g * 3 + h) % 3
                e = {"@timestamp": "2025-11-07T10:%02d:%02d.000Z" % (s // 60, s % 60), "event.kind": "metric",
                     "event.dataset": "gpu.dmon", "event.id": "%08x%08x%016x" % (h, g, s), "agent.name": "gpulog",
                     "agent.version": "0.1.0", "host.name": "chaos-%d" % h, "gpu.index": g,
                     "gpu.temperature.gpu": t, "gpu.power.usage": 250, "gpu.utilization.gpu.pct": 90}
                f.write("chaos-%d\t%s\n" % (h, json.dumps(e, separators=(",", ":"))))
EOF
for k in 1 2 3 4; do sed -n "$(( (k - 1) * 1800 + 1 )),$(( k * 1800 ))p" "$tmp/keyed" > "$tmp/part$k"; done
"$GPULOG" setup --es "$URL" --namespace "$NS" > "$tmp/setup.out" 2>&1; check "gpulog setup (namespace $NS)" $? "$(tail -3 "$tmp/setup.out")"
produce() { kcat -b "$B" -P -t "$topic" -K '\t' -l "$tmp/part$1" 2>> "$tmp/kcat.err"; }
produce 1; check "produce the first 300 s" $? "$(cat "$tmp/kcat.err")"

member() {   # $1 name: records $tmp/$1.ndjson, log $tmp/$1.err; pid in mpid
  "$GPULOG" detect --brokers "$B" --group "$group" --topics "$topic" "${KX[@]}" --es "$URL" --es-namespace "$NS" \
    --es-batch-age-ms 100 --state-topic "$ST" --snapshot-interval 1 --output "$tmp/$1.ndjson" 2> "$tmp/$1.err" &
  mpid=$!; pids+=("$mpid")
}
held() { awk '/: assigned / {n++} /: revoked / {n--} END {print n+0}' "$tmp/$1.err" 2>/dev/null; }
spread() { [ "$(( $(held m1) + $(held m2) + $(held m3) ))" = 3 ] && [ "$(held m1)" -ge 1 ] && [ "$(held m2)" -ge 1 ]; }
member m1; p1=$mpid; member m2; p2=$mpid; member m3
wait_for 300 spread; check "three members share the 3 partitions" $? "m1 $(held m1) m2 $(held m2) m3 $(held m3)"
produce 2; sleep 3                                      # the fault begins at 300 s
kill -9 "$p1"; wait "$p1" 2>/dev/null
produce 3; check "member 1 killed (SIGKILL) during the fault, the next 300 s produced" $?
wait_for 300 grep -q ": assigned " "$tmp/m2.err"
sleep 8                                                 # the group gives member 1's partitions away
member m4
produce 4; check "member 4 joins, the last 300 s produced (the fault ends at 1000 s)" $?
sleep 4
kill -TERM "$p2"; wait "$p2"; check "member 2 stops on SIGTERM" $? "$(tail -3 "$tmp/m2.err")"
ends() { [ "$(cat "$tmp"/m*.ndjson 2>/dev/null | grep -c '"event.type":"end","rule.id":"gpu.temp.high"')" -ge 3 ]; }
wait_for 400 ends; check "every hot GPU's episode ended" $? "$(grep -h 'temp.high' "$tmp"/m*.ndjson | cut -c1-200)"
sleep 2   # the last documents stored

curl -s -o /dev/null -XPOST "$URL/logs-gpu.anomaly-$NS/_refresh"
"$PY" - "$URL/logs-gpu.anomaly-$NS/_search" "$tmp"/m*.ndjson > "$tmp/cmp" 2>&1 <<'EOF'
import json, sys, urllib.request
url, files = sys.argv[1], sys.argv[2:]
q = {"size": 500, "query": {"term": {"rule.id": "gpu.temp.high"}}}
req = urllib.request.Request(url, data=json.dumps(q).encode(), headers={"Content-Type": "application/json"})
hits = [h["_source"] for h in json.load(urllib.request.urlopen(req))["hits"]["hits"]]
out = [json.loads(l) for p in files for l in open(p) if '"gpu.temp.high"' in l]
ok = True
for h in range(3):
    host = "chaos-%d" % h
    st = [r for r in out if r["host.name"] == host and r["event.type"] == "start"]
    es_st = [r for r in hits if r["host.name"] == host and r["event.type"] == "start"]
    es_end = [r for r in hits if r["host.name"] == host and r["event.type"] == "end"]
    eps = {r["anomaly.episode_id"] for r in hits if r["host.name"] == host}
    good = len(st) == 1 and len(es_st) == 1 and len(es_end) == 1 and len(eps) == 1 and es_st[0].get("gpu.index") == 1
    print(host, "starts written", len(st), "stored starts", len(es_st), "ends", len(es_end), "episode ids", len(eps),
          "ok" if good else "WRONG")
    ok &= good
sys.exit(0 if ok else 1)
EOF
check "each hot GPU: one start (in all outputs), one end in OpenSearch, one episode id" $? "$(cat "$tmp/cmp")"
sed 's/^/     /' "$tmp/cmp"
nrest=$(cat "$tmp"/m*.err | grep -c "restored from its snapshot")
[ "$nrest" -ge 1 ]; check "partitions that moved were restored from their snapshots ($nrest restores)" $? \
  "$(grep -h -E 'assigned|revoked|snapshot' "$tmp"/m*.err | head -20)"
finish
