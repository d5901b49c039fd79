#!/usr/bin/env bash
# needs: kafka opensearch
# t_detect_state.sh - detector state that survives a SIGKILL of the only
# `gpulog detect` member (issue 19 item 2), against the REAL Kafka and
# OpenSearch of scripts/services.sh (fails when either is unset or
# unreachable): with --state-topic the member writes a snapshot of its
# partition's detector state every second once what it consumed is
# committed; a GPU runs hot (a gpu.temp.high episode), the member is killed
# mid-episode; a new member of the group restores the snapshot at its
# assignment and continues the open episode: no second start at all (not
# even one answered 409), its end carries the first member's episode id, and
# OpenSearch holds one start and one end. The state topic's bytes are
# printed (traffic per GPU).
# Ends with "N passed, N failed".
set -uo pipefail
. "$(dirname "$0")/lib.sh"
opensearch_kafka_setup

test_tmp t-detect-state
ID=$$$RANDOM
NS=state$ID topic=gpulog-state-$ID group=gpulog-state-g-$ID ST=gpulog-state-st-$ID
on_exit() {   # lib.sh's exit trap calls this first
  for s in logs-gpu.anomaly logs-gpu.xid; do curl -s -o /dev/null -XDELETE "$URL/_data_stream/$s-$NS"; done
}
KX=(-X session.timeout.ms=6000 -X heartbeat.interval.ms=500)

hot_gpu_events state-1   # GPU 1 hot from 400 s to 1300 s; part1 = the first 700 s
"$GPULOG" setup --es "$URL" --namespace "$NS" > "$tmp/setup.out" 2>&1; check "gpulog setup (namespace $NS)" $? "$(tail -3 "$tmp/setup.out")"
kcat -b "$B" -P -t "$topic" -K '\t' -l "$tmp/part1" 2> "$tmp/kcat.err"; check "produce the first 700 s" $? "$(cat "$tmp/kcat.err")"

member() {   # $1 records file, $2 log
  "$GPULOG" detect --brokers "$B" --group "$group" --topics "$topic" "${KX[@]}" --es "$URL" --es-namespace "$NS" \
    --es-batch-age-ms 100 --state-topic "$ST" --snapshot-interval 1 --output "$1" 2> "$2" &
  pids+=($!)
}
has_rec() { grep -q "\"event.type\":\"$2\",\"rule.id\":\"gpu.temp.high\"" "$1" 2>/dev/null; }
member "$tmp/a.ndjson" "$tmp/a.err"; pa=$!
wait_for 300 has_rec "$tmp/a.ndjson" start; check "the first member opens the gpu.temp.high episode" $? "$(tail -3 "$tmp/a.err")"
has_snapshot() { [ -n "$(kcat -b "$B" -C -t "$ST" -e -q -f '%k\n' 2>/dev/null)" ]; }
wait_for 100 has_snapshot; check "it writes snapshots to the state topic" $? "$(tail -3 "$tmp/a.err")"
# everything consumed is committed at the broker (all 1400 events of part 1),
# then in a snapshot (written at most --snapshot-interval 1 s after the commit)
kill_after_commit "$pa" "$group" "$topic" "$(wc -l < "$tmp/part1")" "$tmp/part2" "the first 700 s"

member "$tmp/b.ndjson" "$tmp/b.err"; pb=$!
wait_for 400 has_rec "$tmp/b.ndjson" end; check "the restarted member ends the episode" $? "$(tail -3 "$tmp/b.err")"
kill -TERM "$pb"; wait "$pb"; check "it stops cleanly on SIGTERM" $? "$(tail -3 "$tmp/b.err")"
grep -q "detector state restored from its snapshot" "$tmp/b.err"
check "it restored the partition's snapshot at its assignment" $? "$(grep -E 'assigned|snapshot' "$tmp/b.err" | head -5)"
grep "restored" "$tmp/b.err" | sed 's/^/     /'

curl -s -o /dev/null -XPOST "$URL/logs-gpu.anomaly-$NS/_refresh"
"$PY" - "$URL/logs-gpu.anomaly-$NS/_search" "$tmp/a.ndjson" "$tmp/b.ndjson" > "$tmp/cmp" 2>&1 <<'PYEOF'
import json, sys, urllib.request
url, fa, fb = sys.argv[1:]
q = {"size": 100, "query": {"bool": {"filter": [{"term": {"rule.id": "gpu.temp.high"}}, {"term": {"gpu.index": 1}}]}}}
req = urllib.request.Request(url, data=json.dumps(q).encode(), headers={"Content-Type": "application/json"})
hits = [h["_source"] | {"_id": h["_id"]} for h in json.load(urllib.request.urlopen(req))["hits"]["hits"]]
def recs(p): return [json.loads(l) for l in open(p) if '"rule.id":"gpu.temp.high"' in l]
a, b = recs(fa), recs(fb)
a_starts = [r for r in a if r["event.type"] == "start"]
b_starts = [r for r in b if r["event.type"] == "start"]
b_ends = [r for r in b if r["event.type"] == "end"]
starts = [h for h in hits if h["event.type"] == "start"]
ends = [h for h in hits if h["event.type"] == "end"]
print("first member starts", [(r["event.id"], r["event.start"]) for r in a_starts],
      "restarted member starts", len(b_starts), "ends", [(r["anomaly.episode_id"], r["event.start"]) for r in b_ends])
print("stored starts", len(starts), "ends", len(ends))
ok = len(a_starts) == 1 and not b_starts and len(b_ends) == 1
ok &= b_ends[0]["anomaly.episode_id"] == a_starts[0]["anomaly.episode_id"] if ok else False
ok &= ok and b_ends[0]["event.start"] == a_starts[0]["event.start"]     # the same episode, its start kept
ok &= len(starts) == 1 and len(ends) == 1
sys.exit(0 if ok else 1)
PYEOF
check "the episode went on: no second start, the end has the first member's episode id and start; OpenSearch: one start, one end" $? "$(cat "$tmp/cmp")"
# the GPU's incident is in the snapshot too: the restarted member ends it
# under the first member's incident id and does not start it again
"$PY" - "$tmp/a.ndjson" "$tmp/b.ndjson" > "$tmp/inc" 2>&1 <<'PYEOF'
import json, sys
def inc(p, t): return [r for r in map(json.loads, open(p)) if r["event.dataset"] == "gpu.incident"
                       and r["event.type"] == t and r.get("gpu.index") == 1]
a, bs, be = inc(sys.argv[1], "start"), inc(sys.argv[2], "start"), inc(sys.argv[2], "end")
print("first member incident starts", [r["anomaly.incident_id"] for r in a], "restarted: starts", len(bs),
      "ends", [(r["anomaly.incident_id"], r["anomaly.rules"]) for r in be])
sys.exit(0 if len(a) == 1 and not bs and len(be) == 1 and be[0]["anomaly.incident_id"] == a[0]["anomaly.incident_id"]
         and "gpu.temp.high" in be[0]["anomaly.rules"].split(",") else 1)
PYEOF
check "the incident went on too: ended by the restarted member under the first member's incident id" $? "$(cat "$tmp/inc")"
n=$(kcat -b "$B" -C -t "$ST" -e -q -f '%S\n' 2>/dev/null | awk '{n++; s+=$1; last=$1} END {printf "%d snapshots, %d bytes, the last %d bytes (2 GPUs)", n, s, last}')
echo "     state topic: $n"
finish
