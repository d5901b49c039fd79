#!/usr/bin/env bash
# bench/detect_kafka_bench.sh - `gpulog detect --once` from the real Kafka
# broker to a file, and the JSON decoding inside it, on the same events:
#   1. decode only (bench/decode_bench): the jansson tree (the old
#      event_from_json, kept as event_from_json_jansson) against the flat
#      decoder, same lines, same run, CPU time on one core;
#   2. end to end: N schema-v1 events (gen_dmon -> gpulog parse, 8 GPUs) are
#      produced once with kcat (gpulog's producer settings) to a fresh topic,
#      then read R times by `gpulog detect --once --output FILE` with a fresh
#      group each round: wall and CPU time, events per CPU second (user+sys
#      of every thread, librdkafka's fetch and lz4 thread included: the
#      per-core figure), events/s from the partitions' assignment to exit
#      (wall without the group join; commit and group leave included), peak RSS.
#      With GPULOG_BEFORE=/path/to/an/older/gpulog the same rounds run with
#      it too, alternating, for before/after figures from the same run.
# The machine may be shared: each round's figures are printed, then the
# range. Every round must consume N messages and write the same records.
# Env: KAFKA_BROKERS (services/env.sh), DETECT_BENCH_EVENTS (400000),
#      DETECT_BENCH_ROUNDS (3), BUILD / GPULOG, GPULOG_BEFORE.
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
G=${GPULOG:-$PWD/$BUILD/gpulog}
B=$BUILD/bench
# shellcheck disable=SC1091
[ -z "${KAFKA_BROKERS:-}" ] && [ -f services/env.sh ] && . services/env.sh
if [ -z "${KAFKA_BROKERS:-}" ]; then echo "detect_bench: KAFKA_BROKERS unset (scripts/services.sh up)"; echo "0 passed, 1 failed"; exit 1; fi
N=${DETECT_BENCH_EVENTS:-400000}
R=${DETECT_BENCH_ROUNDS:-3}
for x in "$G" "$B/gen_dmon" "$B/decode_bench"; do
  [ -x "$x" ] || { echo "detect_bench: $x not built"; echo "0 passed, 1 failed"; exit 1; }
done
tmp=$(mktemp -d "${TMPDIR:-/tmp}/detect-bench.XXXXXX")
# the topic (400,000 events) is deleted at exit
cleanup() {
  [ -z "${topic:-}" ] || python3 tests/tools/kafka_admin.py "${KAFKA_BROKERS%%,*}" --delete "$topic" > /dev/null 2>&1
  rm -rf "$tmp"
}
trap cleanup EXIT
"$B/gen_dmon" "$tmp/dmon.txt" "$N" 8 || { echo "detect_bench: gen_dmon failed"; echo "0 passed, 1 failed"; exit 1; }
ev=$tmp/events.ndjson
"$G" parse --host bench --tz UTC "$tmp/dmon.txt" > "$ev" 2> "$tmp/parse.err" \
  || { echo "detect_bench: parse failed"; cat "$tmp/parse.err"; echo "0 passed, 1 failed"; exit 1; }
mb=$(awk -v b="$(stat -c %s "$ev")" 'BEGIN { printf "%.0f", b / 1e6 }')

echo "detect from Kafka: $N schema-v1 events (8 GPUs, dmon -s pucvmet), $mb MB of JSON"
echo " decode only:"
"$B/decode_bench" "$ev" 3 || { echo "0 passed, 1 failed"; exit 1; }

topic=bench-detect-$$
same=(-X enable.idempotence=true -X acks=all -X compression.codec=lz4 -X linger.ms=20
      -X queue.buffering.max.kbytes=8192 -X queue.buffering.max.messages=50000)
kcat -P -b "$KAFKA_BROKERS" -t "$topic" "${same[@]}" -l "$ev" 2> "$tmp/kcat.err" \
  || { echo "detect_bench: kcat -P failed"; cat "$tmp/kcat.err"; echo "0 passed, 1 failed"; exit 1; }

# what the topic costs the broker: bytes of its log segments per event (lz4
# batches as stored; the capacity model in docs/operations.md uses it)
kdir=${KAFKA_RUN_DIR:-services/kafka/run}/data
if ls -d "$kdir/$topic"-* >/dev/null 2>&1; then
  kb=$(cat "$kdir/$topic"-*/*.log | wc -c)
  echo " Kafka: $N events stored in $kb bytes of log segments ($((kb / N)) bytes per event, lz4; $((($(stat -c %s "$ev")) / N)) bytes of JSON)"
fi

fail=0
# one_round NAME BINARY: detect --once with a fresh group; appends
# "wall cpu rss events_per_s_after_assign" to $tmp/NAME.rounds
one_round() {
  local name=$1 bin=$2 t0 ta t1 out
  out=$tmp/$name.ndjson
  t0=$(date +%s.%N)
  /usr/bin/time -f "%e %U %S %M" -o "$tmp/$name.time" "$bin" detect --brokers "$KAFKA_BROKERS" \
      --group "bench-detect-$name-$$-$RANDOM" --topics "$topic" --once --output "$out" 2>&1 \
    | while IFS= read -r l; do printf '%s %s\n' "$(date +%s.%N)" "$l"; done > "$tmp/$name.err"
  t1=$(date +%s.%N)
  ta=$(grep -m1 ' gpulog detect: assigned ' "$tmp/$name.err" | cut -d' ' -f1)
  local sum; sum=$(grep -o 'consumed [0-9]* messages (0 undecodable), [0-9]* samples; records: [0-9]*' "$tmp/$name.err")
  if ! echo "$sum" | grep -q "consumed $N messages"; then
    echo "  FAIL: $name did not consume $N messages: $(tail -n 2 "$tmp/$name.err")"; fail=1; return
  fi
  echo "${sum##* }" >> "$tmp/$name.records"
  read -r w u s m < "$tmp/$name.time"
  awk -v w="$w" -v u="$u" -v s="$s" -v m="$m" -v n="$N" -v ta="$ta" -v t1="$t1" \
    'BEGIN { c = u + s; printf "%.2f %.2f %d %.0f\n", w, c, m, n / (t1 - ta) }' >> "$tmp/$name.rounds"
}
names=(after)
[ -n "${GPULOG_BEFORE:-}" ] && names=(before after)
for ((i = 1; i <= R; i++)); do
  for n in "${names[@]}"; do
    if [ "$n" = before ]; then one_round before "$GPULOG_BEFORE"; else one_round after "$G"; fi
  done
done
echo " end to end, gpulog detect --once --output FILE (default settings, GPU profile), $R rounds:"
printf "  %-8s %-30s %-28s %-28s %-22s\n" "" "wall s (incl. group join)" "events per CPU second" "events/s assignment->exit" "peak RSS MiB"
for n in "${names[@]}"; do
  [ -s "$tmp/$n.rounds" ] || continue
  awk -v n="$N" -v name="$n" '
    { w[NR] = $1; c[NR] = $2; r[NR] = $3 / 1024; a[NR] = $4; e[NR] = n / $2 }
    function rng(x, fmt,   i, lo, hi) { lo = hi = x[1]; for (i = 2; i <= NR; i++) { if (x[i] < lo) lo = x[i]; if (x[i] > hi) hi = x[i] }
                                       return sprintf(fmt " - " fmt, lo, hi) }
    END { printf "  %-8s %-30s %-28s %-28s %-22s\n", name, rng(w, "%.2f"), rng(e, "%.0f"), rng(a, "%.0f"), rng(r, "%.1f") }' "$tmp/$n.rounds"
  if [ "$(sort -u "$tmp/$n.records" | wc -l)" != 1 ]; then echo "  FAIL: $n wrote different record counts: $(tr '\n' ' ' < "$tmp/$n.records")"; fail=1; fi
done
echo "  (targets: >= 400,000 events per CPU second, peak RSS <= 64 MiB; a shared machine: ranges, not best)"
[ "$fail" = 0 ] && echo "1 passed, 0 failed" || echo "0 passed, 1 failed"
exit $fail
