#!/usr/bin/env bash
# needs: kafka
# t_detect_state_chunks.sh - a detector snapshot larger than the broker's
# default message limit (1 MiB) goes through a state topic created with the
# broker's defaults (no max.message.bytes), against the REAL Kafka of
# scripts/services.sh (fails when it is unset or unreachable): 1,280 GPUs on
# one input partition (3 noisy metrics: ~970 bytes of state a GPU), `detect
# --once --state-topic` writes the partition's snapshot in chunks (each
# message under 1 MiB, a manifest under TOPIC/0); a restarted member restores
# it whole (its size over 1 MiB); a third member consumes more, writes a new
# generation (in smaller chunks: -X message.max.bytes=400000) and tombstones
# the chunks of every older one; a fourth restores the new generation; with
# one of its chunks deleted, a fifth member logs the snapshot incomplete and
# starts cold. The broker is first shown to refuse the snapshot as one 1.2 MB
# message on such a topic.
# Ends with "N passed, N failed".
set -uo pipefail
. "$(dirname "$0")/lib.sh"
kafka_setup

test_tmp t-detect-state-chunks
ID=$$$RANDOM
topic=gpulog-chunks-$ID group=gpulog-chunks-g-$ID ST=gpulog-chunks-st-$ID
on_exit() { "$PY" tests/tools/kafka_admin.py "$B" --delete "$topic" "$ST" 2>/dev/null; }

"$PY" tests/tools/kafka_admin.py "$B" "$topic" 1 2> "$tmp/create.err" &&
  "$PY" tests/tools/kafka_admin.py "$B" "$ST" 1 cleanup.policy=compact 2>> "$tmp/create.err"
check "an input topic of 1 partition, a compacted state topic with the broker's default max.message.bytes" $? \
  "$(cat "$tmp/create.err")"
head -c 1200000 /dev/urandom > "$tmp/big"
kcat -b "$B" -P -t "$ST" -k probe -X message.max.bytes=2000000 "$tmp/big" > "$tmp/probe.err" 2>&1
grep -qi "too large" "$tmp/probe.err"
check "the broker refuses a 1.2 MB message on the state topic" $? "$(tail -3 "$tmp/probe.err")"

# 1,280 GPUs (160 hosts of 8) with noisy samples: part1 70 s, part2 10 s more
"$PY" - "$tmp" <<'EOF'
import random, sys
random.seed(19)
tpl = ('chunk-%03d\t{"@timestamp":"2025-11-07T10:%02d:%02d.000Z","event.kind":"metric","event.dataset":"gpu.dmon",'
       '"event.id":"%08x%08x%016x","agent.name":"gpulog","agent.version":"0.1.0","host.name":"chunk-%03d",'
       '"gpu.index":%d,"gpu.temperature.gpu":%.1f,"gpu.power.usage":%.2f,"gpu.utilization.gpu.pct":%.1f}\n')
for name, rng in (("part1", range(70)), ("part2", range(70, 80))):
    with open("%s/%s" % (sys.argv[1], name), "w") as f:
        f.write("".join(tpl % (h, s // 60, s % 60, h, g, s, h, g, random.uniform(40, 60), random.uniform(200, 300),
                               random.uniform(50, 100)) for s in rng for h in range(160) for g in range(8)))
EOF
kcat -b "$B" -P -t "$topic" -K '\t' -l "$tmp/part1" 2> "$tmp/kcat.err"
check "produce 70 s of 1,280 GPUs (89,600 samples)" $? "$(cat "$tmp/kcat.err")"

member() {   # $1 name [-X k=v...]: detect --once, records $tmp/$1.ndjson, log $tmp/$1.err
  local n=$1; shift
  timeout 60 "$GPULOG" detect --brokers "$B" --group "$group" --topics "$topic" --once --state-topic "$ST" \
    --snapshot-interval 1 --output "$tmp/$n.ndjson" "$@" 2> "$tmp/$n.err"
}
restored() { sed -n 's/.*detector state restored from its snapshot (offset \([0-9]*\), \([0-9]*\) bytes.*/\1 \2/p' "$1"; }
member a; check "member A consumes the partition and exits" $? "$(tail -3 "$tmp/a.err")"
! grep -E "not stored|not written|too large" "$tmp/a.err"
check "its snapshot was stored (no refused message)" $? "$(grep -E 'state topic' "$tmp/a.err" | head -3)"
state() { timeout 30 kcat -b "$B" -C -t "$ST" -e -q -f '%k %S\n' 2>/dev/null | grep -v '^probe '; }
state > "$tmp/st1"
grep -qE "^$topic/0/[0-9a-f]{16}/1 " "$tmp/st1" && grep -qE "^$topic/0 32$" "$tmp/st1"
check "the state topic holds chunks $topic/0/GEN/0.. and a 32-byte manifest under $topic/0" $? "$(cat "$tmp/st1")"
awk '$2 >= 1048576 { bad = 1 } END { exit bad }' "$tmp/st1"
check "every message under 1 MiB" $? "$(cat "$tmp/st1")"

member b; check "member B (restarted) exits" $? "$(tail -3 "$tmp/b.err")"
read -r off size < <(restored "$tmp/b.err")
[ "${off:-0}" = 89600 ] && [ "${size:-0}" -gt 1048576 ]
check "B restored the whole snapshot: offset 89600, over 1 MiB" $? "$(grep -E 'snapshot|state topic' "$tmp/b.err")"
echo "     snapshot of 1,280 GPUs: $size bytes ($(( ${size:-0} / 1280 )) per GPU), $(grep -cE "^$topic/0/.* [0-9]+$" "$tmp/st1") chunk messages, $(grep -c " -1$" "$tmp/st1") tombstones"

kcat -b "$B" -P -t "$topic" -K '\t' -l "$tmp/part2" 2>> "$tmp/kcat.err"
member c -X message.max.bytes=400000
check "member C (-X message.max.bytes=400000) restores, consumes 10 s more and exits" $? "$(tail -3 "$tmp/c.err")"
state > "$tmp/st2"
tail -n +"$(( $(wc -l < "$tmp/st1") + 1 ))" "$tmp/st2" | awk '$2 > 400000 { bad = 1 } END { exit bad }'
check "its chunks fit its message.max.bytes" $? "$(tail -8 "$tmp/st2")"
"$PY" - "$tmp/st2" "$topic/0/" > "$tmp/gens" <<'EOF'
import sys
pre = sys.argv[2]
last = {}
for k, n in (l.split() for l in open(sys.argv[1])):
    if k.startswith(pre): last[k] = n   # the latest value of each chunk key
gens = {k.rsplit("/", 1)[0] for k in last}
live = {k.rsplit("/", 1)[0] for k, n in last.items() if n != "-1"}
print("generations written", len(gens), "with live chunks", len(live))
sys.exit(0 if len(gens) >= 2 and len(live) == 1 else 1)
EOF
check "C wrote a new generation; every chunk of the older ones is tombstoned" $? "$(cat "$tmp/gens")"
member d; check "member D exits" $? "$(tail -3 "$tmp/d.err")"
read -r off size < <(restored "$tmp/d.err")
[ "${off:-0}" = 102400 ] && [ "${size:-0}" -gt 1048576 ]
check "D restored the second generation: offset 102400, over 1 MiB" $? "$(grep -E 'snapshot|state topic' "$tmp/d.err")"
! grep -qE "incomplete|starts cold" "$tmp"/[abcd].err
check "no member found a snapshot incomplete" $? "$(grep -hE 'incomplete|cold' "$tmp"/[abcd].err)"
# a chunk of the live generation deleted (a tombstone): the next member logs
# the snapshot incomplete and starts the partition cold
state > "$tmp/st3"
victim=$("$PY" -c '
import sys
last = {}
for k, n in (l.split() for l in open(sys.argv[1])):
    if k.startswith(sys.argv[2]): last[k] = n
print(next(k for k, n in sorted(last.items()) if n != "-1" and k.endswith("/1")))' "$tmp/st3" "$topic/0/" 2>/dev/null)
printf '%s\t\n' "$victim" | kcat -b "$B" -P -t "$ST" -K '\t' -Z 2>> "$tmp/kcat.err"
check "a tombstone for chunk ${victim##*/} of the live generation" $? "$(cat "$tmp/kcat.err")"
member e; check "member E exits" $? "$(tail -3 "$tmp/e.err")"
grep -q "the snapshot of $topic/0 is incomplete (chunk 2 of [0-9]* of generation [0-9a-f]* is missing): the partition starts cold" "$tmp/e.err" &&
  ! grep -q "restored from its snapshot" "$tmp/e.err"
check "E logs the snapshot incomplete and starts cold" $? "$(grep -E 'snapshot|state topic' "$tmp/e.err")"
finish
