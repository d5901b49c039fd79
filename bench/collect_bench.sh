#!/usr/bin/env bash
# bench/collect_bench.sh - `gpulog collect --once` of a large dmon file into the
# real Kafka broker (parse + encode + produce + wait for every ack + checkpoint),
# next to `kcat -P` sending the same raw lines to the same broker in the same run.
# Prints events/s of both, the ratio (target >= 70%) and the collector's peak RSS
# (target < 16 MB steady state; the peak here is with a full producer queue).
# Env: KAFKA_BROKERS (from services/env.sh), COLLECT_BENCH_LINES (default 400000),
#      BUILD / GPULOG. Needs the broker: scripts/services.sh up.
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
G=${GPULOG:-$PWD/$BUILD/gpulog}
# shellcheck disable=SC1091
[ -z "${KAFKA_BROKERS:-}" ] && [ -f services/env.sh ] && . services/env.sh
if [ -z "${KAFKA_BROKERS:-}" ]; then echo "collect_bench: KAFKA_BROKERS unset (scripts/services.sh up)"; echo "0 passed, 1 failed"; exit 1; fi
N=${COLLECT_BENCH_LINES:-400000}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/collect-bench.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
f=$tmp/dmon.log
python3 - "$f" "$N" <<'PY'
import sys, random
path, n = sys.argv[1], int(sys.argv[2])
r = random.Random(7)
with open(path, "w") as o:
    o.write("#Date       Time        gpu   pwr gtemp mtemp    sm   mem   enc   dec  mclk  pclk pviol tviol    fb  bar1 sbecc dbecc   pci rxpci txpci\n")
    o.write("#YYYYMMDD   HH:MM:SS    Idx     W     C     C     %     %     %     %   MHz   MHz     %  bool    MB    MB  errs  errs  errs  MB/s  MB/s\n")
    s = 0
    for i in range(n):
        g = i % 8
        if g == 0: s += 1
        hh, mm, ss = (s // 3600) % 24, (s // 60) % 60, s % 60
        o.write(" 20250301   %02d:%02d:%02d %6d %5d %5d %5d %5d %5d %5d %5d %5d %5d %5d %5d %5d %5d %5s %5s %5d %5d %5d\n" % (
            hh, mm, ss, g, r.randint(60, 700), r.randint(30, 90), r.randint(30, 95), r.randint(0, 100),
            r.randint(0, 100), 0, 0, 2619, r.randint(1000, 1980), 0, 0, r.randint(1000, 80000), 5, "-", "-", 0,
            r.randint(0, 5000), r.randint(0, 5000)))
PY
lines=$(($(wc -l < "$f") - 2))
topic_k=bench-kcat-$$; topic_g=bench-gpulog-$$
# kcat: raw lines, one message per line, librdkafka defaults
t0=$(date +%s.%N)
/usr/bin/time -f "%U %S %M" -o "$tmp/kcat.time" kcat -P -b "$KAFKA_BROKERS" -t "$topic_k" -l "$f" 2>"$tmp/kcat.err"; krc=$?
t1=$(date +%s.%N)
# gpulog: parse, encode JSON, key host/gpu, idempotent acks=all lz4, checkpoints
t2=$(date +%s.%N)
/usr/bin/time -f "%U %S %M" -o "$tmp/gpulog.time" "$G" collect --once --host bench --tz UTC --state-dir "$tmp/state" \
    --file "$f" --brokers "$KAFKA_BROKERS" --topic "$topic_g" --stats-interval 0 2>"$tmp/collect.err"; grc=$?
t3=$(date +%s.%N)
kt=$(echo "$t1 - $t0" | bc -l); gt=$(echo "$t3 - $t2" | bc -l)
krate=$(echo "$lines / $kt" | bc -l); grate=$(echo "$lines / $gt" | bc -l)
ratio=$(echo "100 * $grate / $krate" | bc -l)
read -r ku ks krss < <(tail -n 1 "$tmp/kcat.time")
read -r gu gs rss < <(tail -n 1 "$tmp/gpulog.time")
kcpu=$(echo "$ku + $ks" | bc -l); gcpu=$(echo "$gu + $gs" | bc -l)
printf 'collect_bench: %d dmon lines (%d bytes) into %s\n' "$lines" "$(stat -c %s "$f")" "$KAFKA_BROKERS"
printf '  kcat -P (raw lines)            %8.2f s  %10.0f lines/s  rc=%d\n' "$kt" "$krate" "$krc"
printf '  gpulog collect --once (events) %8.2f s  %10.0f events/s rc=%d  peak RSS %d kB\n' "$gt" "$grate" "$grc" "$rss"
printf '  ratio gpulog/kcat: %.0f%% (target >= 70%%)\n' "$ratio"
printf '  CPU seconds: kcat %.2f (peak RSS %d kB), gpulog %.2f = %.1f us/event (load average now: %s)\n' \
  "$kcpu" "$krss" "$gcpu" "$(echo "1000000 * $gcpu / $lines" | bc -l)" "$(cut -d' ' -f1-3 /proc/loadavg)"
ok=0
[ "$krc" = 0 ] && [ "$grc" = 0 ] || { echo "  FAIL: a producer failed"; tail -n 5 "$tmp/kcat.err" "$tmp/collect.err"; ok=1; }
if [ "$ok" = 0 ]; then echo "1 passed, 0 failed"; else echo "0 passed, 1 failed"; fi
exit $ok
