#!/usr/bin/env bash
# Collector checks that need no broker:
# - an idle collector must sleep: tailing a file that does not grow, with NDJSON
#   output (no Kafka poll to block in), once burnt a whole core. Checks the CPU
#   time of collect over 4 s of idling, for an existing and a missing file;
# - the collector's own health events (gpulog.collector) validate against
#   schemas/event.schema.json.
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
# a command that prints garbage and exits: restart events, schema-valid
timeout -s TERM 4 "$GPULOG" collect --exec 'sh -c "echo garbage; exit 1"' --state-dir "$T/st-exec" \
  --output "$T/exec.ndjson" 2>/dev/null
n=$(grep -c '"event.dataset":"gpulog.collector"' "$T/exec.ndjson")
if [ "$n" -ge 1 ] && grep '"event.dataset":"gpulog.collector"' "$T/exec.ndjson" | /usr/bin/python3 -c '
import json, sys, jsonschema
v = jsonschema.Draft202012Validator(json.load(open(sys.argv[1])))
for line in sys.stdin:
    v.validate(json.loads(line))
' schemas/event.schema.json; then pass=$((pass+1)); echo "ok   $n collector health events validate"
else fail=$((fail+1)); echo "FAIL collector health events ($n) missing or invalid"; fi
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
