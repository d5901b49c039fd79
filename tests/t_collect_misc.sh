#!/usr/bin/env bash
# An idle collector must sleep: tailing a file that does not grow, with NDJSON
# output (no Kafka poll to block in), once burnt a whole core. Checks the CPU
# time of collect over 4 s of idling, for an existing and a missing file.
set -u
GPULOG=${GPULOG:-build/gpulog}
T=$(mktemp -d "${GPULOG_TEST_TMP:-/tmp}/idle.XXXXXX")
trap 'rm -rf "$T"' EXIT
pass=0; fail=0
check_idle() {   # $1 name, rest: collect arguments
  local name=$1; shift
  "$GPULOG" collect "$@" --state-dir "$T/st-$name" --output /dev/null 2>"$T/$name.err" &
  local pid=$!
  sleep 1
  local t0 t1
  t0=$(awk '{print $14+$15}' /proc/$pid/stat 2>/dev/null || echo 0)
  sleep 4
  t1=$(awk '{print $14+$15}' /proc/$pid/stat 2>/dev/null || echo 999999)
  kill -TERM $pid 2>/dev/null; wait $pid 2>/dev/null
  # 4 s idle: allow 0.4 s of CPU (sanitizer builds are slower but idle all the same)
  if [ $((t1 - t0)) -le 40 ]; then pass=$((pass+1)); echo "ok   idle $name: $((t1 - t0)) ticks"
  else fail=$((fail+1)); echo "FAIL idle $name: $((t1 - t0)) ticks of CPU in 4 s"; fi
}
printf '# gpu    pwr\n# Idx      W\n    0    100\n' > "$T/dmon.log"
check_idle existing --file "$T/dmon.log"
check_idle missing --file "$T/nope.log"
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
