#!/usr/bin/env bash
# needs: kafka opensearch
# t_episode_cold.sh - an anomaly episode survives a cold restart of the only
# `gpulog detect` member without a second alert (issue 19 item 3), against
# the REAL Kafka and OpenSearch of scripts/services.sh (fails when either is
# unset or unreachable): a GPU runs hot (a gpu.temp.high episode); the member
# writes the episode's start to OpenSearch, commits past it and is killed
# (SIGKILL); the rest of the trace is produced and a new member of the same
# group starts cold at the committed offset, in the middle of the episode.
# It re-opens the episode later than the first member did (a later
# event.start) under the same ids: OpenSearch holds one start and one end
# of the episode, and the restarted member's start was answered 409.
# Ends with "N passed, N failed".
set -uo pipefail
. "$(dirname "$0")/lib.sh"
opensearch_kafka_setup

test_tmp t-episode-cold
ID=$$$RANDOM
NS=cold$ID topic=gpulog-cold-$ID group=gpulog-cold-g-$ID
on_exit() {   # lib.sh's exit trap calls this first
  for s in logs-gpu.anomaly logs-gpu.xid; do curl -s -o /dev/null -XDELETE "$URL/_data_stream/$s-$NS"; done
}
KX=(-X session.timeout.ms=6000 -X heartbeat.interval.ms=500)

hot_gpu_events cold-1   # GPU 1 hot from 400 s to 1300 s; part1 = the first 700 s
n=$(wc -l < "$tmp/keyed")
check_eq "3000 events parsed" "$n" 3000
"$GPULOG" setup --es "$URL" --namespace "$NS" > "$tmp/setup.out" 2>&1; check "gpulog setup (namespace $NS)" $? "$(tail -3 "$tmp/setup.out")"
kcat -b "$B" -P -t "$topic" -K '\t' -l "$tmp/part1" 2> "$tmp/kcat.err"; check "produce the first 700 s" $? "$(cat "$tmp/kcat.err")"

member() {   # $1 records file, $2 log
  "$GPULOG" detect --brokers "$B" --group "$group" --topics "$topic" "${KX[@]}" --es "$URL" --es-namespace "$NS" \
    --es-batch-age-ms 100 --output "$1" 2> "$2" &
  pids+=($!)
}
has_rec() { grep -q "\"event.type\":\"$2\",\"rule.id\":\"gpu.temp.high\"" "$1" 2>/dev/null; }
member "$tmp/a.ndjson" "$tmp/a.err"; pa=$!
wait_for 300 has_rec "$tmp/a.ndjson" start; check "the first member opens the gpu.temp.high episode" $? "$(tail -3 "$tmp/a.err")"
# its start is stored and the offsets past it committed (every second; the
# records are settled before the commit): all 1400 events of part 1, asked
# of the broker (not a fixed wait)
wait_for 600 group_committed "$group" "$topic" "$(wc -l < "$tmp/part1")"
check "the first member consumed and committed the first 700 s (at the broker)" $? "$(tail -3 "$tmp/a.err")"
kill -9 "$pa"; wait "$pa" 2>/dev/null
kcat -b "$B" -P -t "$topic" -K '\t' -l "$tmp/part2" 2>> "$tmp/kcat.err"; check "produce the rest after SIGKILL" $?

member "$tmp/b.ndjson" "$tmp/b.err"; pb=$!
wait_for 400 has_rec "$tmp/b.ndjson" end; check "the restarted member ends the episode" $? "$(tail -3 "$tmp/b.err")"
kill -TERM "$pb"; wait "$pb"; check "it stops cleanly on SIGTERM" $? "$(tail -3 "$tmp/b.err")"
# where it started: the committed offset, past the episode's first sample (offset ~800)
committed=$(sed -n 's/.*assigned .*(committed \([0-9]*\).*/\1/p' "$tmp/b.err" | sort -n | tail -1)
[ "${committed:-0}" -ge 1000 ]; check "the restart began mid-episode (committed offset ${committed:-none} >= 1000)" $?

curl -s -o /dev/null -XPOST "$URL/logs-gpu.anomaly-$NS/_refresh"
"$PY" - "$URL/logs-gpu.anomaly-$NS/_search" "$tmp/a.ndjson" "$tmp/b.ndjson" > "$tmp/cmp" 2>&1 <<'EOF'
import json, sys, urllib.request
url, fa, fb = sys.argv[1:]
q = {"size": 100, "query": {"bool": {"filter": [{"term": {"rule.id": "gpu.temp.high"}}, {"term": {"gpu.index": 1}}]}}}
req = urllib.request.Request(url, data=json.dumps(q).encode(), headers={"Content-Type": "application/json"})
hits = [h["_source"] | {"_id": h["_id"]} for h in json.load(urllib.request.urlopen(req))["hits"]["hits"]]
def recs(p): return [json.loads(l) for l in open(p) if '"rule.id":"gpu.temp.high"' in l]
a = [r for r in recs(fa) if r["event.type"] == "start"]
b = [r for r in recs(fb) if r["event.type"] == "start"]
starts = [h for h in hits if h["event.type"] == "start"]
ends = [h for h in hits if h["event.type"] == "end"]
print("stored starts", [(h["_id"], h["event.start"]) for h in starts])
print("stored ends", len(ends), "first member", [(r["event.id"], r["event.start"]) for r in a],
      "restarted", [(r["event.id"], r["event.start"]) for r in b])
ok = len(a) == 1 and len(b) == 1 and b[0]["event.start"] > a[0]["event.start"]   # re-opened cold, later
ok &= len(starts) == 1 and starts[0]["_id"] == a[0]["event.id"] == b[0]["event.id"]
ok &= len(ends) == 1 and starts[0]["event.start"] == a[0]["event.start"]
ok &= len({h.get("anomaly.episode_id") for h in hits}) == 1
sys.exit(0 if ok else 1)
EOF
check "OpenSearch holds one start (the first member's) and one end of the episode, one episode id" $? "$(cat "$tmp/cmp")"
grep -Eq "es sink\" stored=[0-9]+ duplicates=[1-9]" "$tmp/b.err"; rc=$?
check "the restarted member's start was answered 409 ($(grep -o 'stored=[0-9]* duplicates=[0-9]*' "$tmp/b.err"))" $rc
finish
