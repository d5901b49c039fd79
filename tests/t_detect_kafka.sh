#!/usr/bin/env bash
# needs: kafka
# `gpulog detect` against the real broker ($KAFKA_BROKERS from
# scripts/services.sh; FAILS when unset or unreachable): a generated trace's
# events are produced keyed by host/gpu to a fresh 3-partition topic; two
# detect processes in one group split the partitions; one is killed (SIGKILL)
# part-way, the other takes its partitions over; no message is left
# unprocessed (a final --once member of the group finds nothing to read at
# the committed offsets), the union of the outputs covers every injected
# fault, and every episode a single reference consumer finds (same ids).
set -uo pipefail
. "$(dirname "$0")/lib.sh"
test_tmp t-detect

[ -n "${KAFKA_BROKERS:-}" ] || fail "KAFKA_BROKERS is set (start scripts/services.sh up)"
B=$KAFKA_BROKERS
kcat -b "$B" -L -m 5 > /dev/null 2>&1; check "broker $B reachable" $?
[ "$failed" = 0 ] || finish

topic=gpulog-dt-$$-$RANDOM
group=gpulog-dt-g-$$-$RANDOM
KX=(-X session.timeout.ms=6000 -X heartbeat.interval.ms=500)

# 40 minutes of 8 GPUs; faults start after 10 minutes of event time
"$PY" tools/gentrace.py --seed 9 --hours 0.67 --faults hang,pcie_replay,straggler --host kt-9 \
  -o "$tmp/trace.txt" -l "$tmp/labels.json"
"$GPULOG" parse --tz UTC --host kt-9 "$tmp/trace.txt" 2>/dev/null |
  "$PY" -c '
import sys, json
for l in sys.stdin:
    d = json.loads(l)
    print("%s/%s\t%s" % (d.get("host.name"), d.get("gpu.index", d.get("gpu.pci.bus_id", "-")), l.rstrip()))
' > "$tmp/keyed"
total=$(wc -l < "$tmp/keyed")
# the first 500 s of samples (no fault yet), then the rest
cut=$((500 * 8))
head -n "$cut" "$tmp/keyed" > "$tmp/part1"
tail -n +"$((cut + 1))" "$tmp/keyed" > "$tmp/part2"

# create the topic with 3 partitions (auto-creation with the broker default)
kcat -b "$B" -P -t "$topic" -K '\t' -l "$tmp/part1" 2> "$tmp/kcat.err"
check "produce the first part" $? "$(cat "$tmp/kcat.err")"
nparts=$(kcat -b "$B" -L -t "$topic" 2>/dev/null | grep -c "partition [0-9]*, leader")
check "topic has 3 partitions" "$([ "$nparts" = 3 ]; echo $?)" "has $nparts"

# two members of one group
"$GPULOG" detect --brokers "$B" --group "$group" --topics "$topic" "${KX[@]}" --output "$tmp/a.ndjson" 2> "$tmp/a.err" &
pa=$!; pids+=("$pa")
"$GPULOG" detect --brokers "$B" --group "$group" --topics "$topic" "${KX[@]}" --output "$tmp/b.ndjson" 2> "$tmp/b.err" &
pb=$!; pids+=("$pb")
split_ok=1
for _ in $(seq 1 60); do
  sleep 0.5
  # current assignment of each member: assigned minus revoked, replayed in order
  na=$(awk '/assigned/ {n++} /revoked/ {n--} END {print n+0}' "$tmp/a.err")
  nb=$(awk '/assigned/ {n++} /revoked/ {n--} END {print n+0}' "$tmp/b.err")
  if [ "$na" -ge 1 ] && [ "$nb" -ge 1 ] && [ $((na + nb)) = 3 ]; then split_ok=0; break; fi
done
check "the two members split the 3 partitions" "$split_ok" "a=$na b=$nb"
# both processed the first part and committed it at the broker (not a
# fixed wait: a slow member killed before its commit would hand over a
# partition half read)
wait_for 600 group_committed "$group" "$topic" "$cut"
check "both members consumed and committed the first part" $? "$(committed_total "$group" "$topic" 2>&1) of $cut committed"
kill -9 "$pa"; wait "$pa" 2>/dev/null
kcat -b "$B" -P -t "$topic" -K '\t' -l "$tmp/part2" 2>> "$tmp/kcat.err"
check "produce the rest after killing one member" $?
took=1
for _ in $(seq 1 80); do
  sleep 0.5
  nb=$(awk '/assigned/ {n++} /revoked/ {n--} END {print n+0}' "$tmp/b.err")
  if [ "$nb" = 3 ]; then took=0; break; fi
done
check "the survivor takes over all 3 partitions" "$took" "$(grep -E 'assigned|revoked' "$tmp/b.err" | tail -5)"
# the survivor processed the rest and committed it at the broker
wait_for 1200 group_committed "$group" "$topic" "$total"
check "the survivor consumed and committed the rest" $? "$(committed_total "$group" "$topic" 2>&1) of $total committed"
kill -TERM "$pb"; wait "$pb"; rc=$?
check "the survivor stops cleanly on SIGTERM (exit 0)" "$rc" "$(tail -3 "$tmp/b.err")"

# nothing left: a --once member of the group reads nothing
"$GPULOG" detect --brokers "$B" --group "$group" --topics "$topic" --once --output "$tmp/c.ndjson" 2> "$tmp/c.err"
check "--once exits 0" $?
grep -q "consumed 0 messages" "$tmp/c.err" && [ "$(grep -c 'nothing to read' "$tmp/c.err")" = 3 ]
check "committed offsets reach the end of every partition" $? "$(cat "$tmp/c.err")"

# reference: one consumer of everything
"$GPULOG" detect --brokers "$B" --group "$group-ref" --topics "$topic" --once --output "$tmp/ref.ndjson" 2> "$tmp/ref.err"
grep -q "consumed $total messages" "$tmp/ref.err"
check "reference consumer reads all $total messages" $? "$(tail -1 "$tmp/ref.err")"

"$PY" - "$tmp/labels.json" "$tmp/ref.ndjson" "$tmp/a.ndjson" "$tmp/b.ndjson" > "$tmp/cmp" 2>&1 <<'PYEOF'
import json, sys, datetime
def ts(s): return datetime.datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()
def recs(p):
    try: return [json.loads(l) for l in open(p) if l.strip()]
    except FileNotFoundError: return []
lab = json.load(open(sys.argv[1]))
ref = [r for r in recs(sys.argv[2]) if r["event.type"] == "start"]
union = [r for p in sys.argv[3:] for r in recs(p) if r["event.type"] == "start"]
ok = True
for l in lab["labels"]:
    hit = [r for r in union if r.get("gpu.index") == l["gpu"] and ts(l["start"]) <= ts(r["@timestamp"]) <= ts(l["end"]) + 60]
    print(l["kind"], "gpu", l["gpu"], "found" if hit else "MISSING")
    ok &= bool(hit)
ids = {r["event.id"] for r in union}
miss = [r for r in ref if r["event.id"] not in ids]
for r in miss: print("reference episode missing from the group's output:", r["rule.id"], r.get("gpu.index"), r["@timestamp"])
print("labels", len(lab["labels"]), "reference", len(ref), "union", len(union), "missing", len(miss))
sys.exit(0 if ok and not miss and len(lab["labels"]) == 3 and ref else 1)
PYEOF
check "the group's outputs cover every fault and every reference episode (same ids)" $? "$(cat "$tmp/cmp")"

# records are well-formed anomaly events
"$PY" - schemas/event.schema.json "$tmp/ref.ndjson" <<'PYEOF'
import json, sys, jsonschema
s = json.load(open(sys.argv[1])); v = jsonschema.validators.validator_for(s)(s)
n = 0
for l in open(sys.argv[2]):
    n += 1
    errs = list(v.iter_errors(json.loads(l)))
    assert not errs, errs[0].message
assert n > 0
PYEOF
check "detect records validate against the schema" $?

# records to an anomalies topic, keyed host/gpu, settled before the commit
"$GPULOG" detect --brokers "$B" --group "$group-topic" --topics "$topic" --once --anomalies-topic "$topic-anom" \
  > /dev/null 2> "$tmp/t.err"
rc=$?
nref=$(wc -l < "$tmp/ref.ndjson")
ntopic=$(kcat -b "$B" -C -t "$topic-anom" -e -q -f '%k %s\n' 2>/dev/null | grep -c '^kt-9 {"@timestamp"')
[ "$rc" = 0 ] && [ "$ntopic" = "$nref" ] && grep -q "$nref settled" "$tmp/t.err"
check "--anomalies-topic gets every record, keyed host/gpu" $? "rc $rc, $ntopic in topic, $nref expected; $(tail -1 "$tmp/t.err")"

# usage errors
# (the group defaults to kafka.group, gpulog-detect; an empty one is refused)
rc=0; timeout 20 "$GPULOG" detect --brokers "$B" --group "" > /dev/null 2>&1 || rc=$?
check "an empty --group is a usage error (exit 2)" "$([ "$rc" = 2 ]; echo $?)"
kcat -b "$B" -P -t "$topic-bad" -K '\t' <<< $'k\tnot json' 2>/dev/null
"$GPULOG" detect --brokers "$B" --group "$group-bad" --topics "$topic-bad" --once > /dev/null 2> "$tmp/bad.err"
rc=$?
grep -q "1 undecodable" "$tmp/bad.err" && [ "$rc" = 0 ]
check "an undecodable message is reported and skipped" $? "$(cat "$tmp/bad.err")"
finish
