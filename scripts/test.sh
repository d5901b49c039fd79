#!/usr/bin/env bash
# Runs the whole test suite and ends with one line "N passed, N failed".
#  - every build/tests/test_* binary (unit tests, one per module)
#  - every build/tests/replay_* binary over tests/fuzz/corpus/<name>/ (fuzz corpus replay)
#  - every tests/t_*.sh and tests/t_*.py script (golden, schema, integration)
# A script that needs a service or an install says so in a comment line among
# its first 20 lines: "# needs: kafka opensearch" (the real Kafka/OpenSearch of
# scripts/services.sh, which this script starts and stops if it started them),
# "# needs: root apt", "# needs: plain" (a plain build: run by make test,
# not under the sanitizers, SANITIZE=1, where it is named as not run).
# GPULOG_NO_SERVICES=1 (make check, the fast lane) starts nothing and runs
# only the scripts without a "# needs:" line; it names the ones it left out.
# GPULOG_TEST_JOBS=N runs up to N of the service-free tests at a time.
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
export BUILD GPULOG=${GPULOG:-$PWD/$BUILD/gpulog}
export GPULOG_TEST_TMP=$(mktemp -d "${TMPDIR:-/tmp}/gpulog-test.XXXXXX")
passed=0; failed=0; failed_names=()
started_services=0
cleanup() {
  [ "$started_services" = 1 ] && scripts/services.sh down >/dev/null 2>&1
  rm -rf "$GPULOG_TEST_TMP"
}
trap cleanup EXIT

count() {   # $1 name, $2 log file, $3 exit code; NAME.time beside the log: its seconds
  local line p f t=""
  [ -f "${2%.log}.time" ] && t=" ($(cat "${2%.log}.time") s)"
  line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$2" | tail -n 1)
  if [ -z "$line" ]; then
    p=0; f=1
  else
    p=$(echo "$line" | awk '{print $1}'); f=$(echo "$line" | awk '{print $3}')
    [ "$3" != 0 ] && [ "$f" = 0 ] && f=1
  fi
  passed=$((passed + p)); failed=$((failed + f))
  if [ "$f" != 0 ]; then failed_names+=("$1"); echo "== $1: FAILED$t"; sed 's/^/   /' "$2" | grep -vE '^   ok ' | tail -n 40
  else echo "== $1: $p passed$t"; fi
}

if [ "${GPULOG_NO_SERVICES:-0}" != 1 ] && [ -x scripts/services.sh ]; then
  if scripts/services.sh status >/dev/null 2>&1; then scripts/services.sh up >/dev/null; echo "== services already running: left running"
  elif scripts/services.sh up; then started_services=1; else echo "== services failed to start: integration tests will fail"; fi
fi
# shellcheck disable=SC1091
[ -f services/env.sh ] && . services/env.sh

# Tests that need no service are independent of each other (own scratch
# folders, free ports): they run GPULOG_TEST_JOBS at a time (make check sets
# 3: most of their time is waiting; default 1), and are counted in order.
# The ones with "# needs:" run one at a time after them (some stop the broker).
logs=$GPULOG_TEST_TMP/logs; mkdir -p "$logs"
jobs_max=${GPULOG_TEST_JOBS:-1}
queued=()
run_one() {   # NAME COMMAND...: the output to $logs/NAME.log, the status to .rc, the seconds to .time
  local name=$1 t0=$SECONDS; shift
  "$@" > "$logs/$name.log" 2>&1; echo $? > "$logs/$name.rc"
  echo $((SECONDS - t0)) > "$logs/$name.time"
}
queue() {     # NAME COMMAND...: runs it in the background, at most $jobs_max at a time
  while [ "$(jobs -rp | wc -l)" -ge "$jobs_max" ]; do wait -n; done
  queued+=("$1"); run_one "$@" &
}
count_queued() {
  local name
  wait
  for name in ${queued[@]+"${queued[@]}"}; do count "$name" "$logs/$name.log" "$(cat "$logs/$name.rc")"; done
  queued=()
}
runner_of() { case "$1" in *.py) echo /usr/bin/python3 ;; *) echo bash ;; esac; }

for t in "$BUILD"/tests/test_*; do
  [ -x "$t" ] || continue
  queue "$(basename "$t")" timeout 600 "$t"
done
for r in "$BUILD"/tests/replay_*; do
  [ -x "$r" ] || continue
  name=${r##*/replay_}
  queue "replay_$name" timeout 600 "$r" tests/fuzz/corpus/"$name"
done
not_run=(); not_sanitized=(); with_services=()
for s in tests/t_*.sh tests/t_*.py; do
  [ -f "$s" ] || continue
  needs=$(sed -n '1,20s/^# needs: *//p' "$s" | head -n 1)
  if [ -z "$needs" ]; then queue "$(basename "$s")" timeout 1200 "$(runner_of "$s")" "$s"
  elif [ "${GPULOG_NO_SERVICES:-0}" = 1 ]; then not_run+=("$(basename "$s") ($needs)")
  elif [[ " $needs " == *" plain "* ]] && [ "${SANITIZE:-}" = 1 ]; then not_sanitized+=("$(basename "$s")")
  else with_services+=("$s"); fi
done
count_queued
for s in ${with_services[@]+"${with_services[@]}"}; do
  run_one "$(basename "$s")" timeout 1200 "$(runner_of "$s")" "$s"
  count "$(basename "$s")" "$logs/$(basename "$s").log" "$(cat "$logs/$(basename "$s").rc")"
done
if [ ${#not_run[@]} -gt 0 ]; then echo "== not run in the fast lane (make test runs them): ${not_run[*]}"; fi
if [ ${#not_sanitized[@]} -gt 0 ]; then echo "== not run under the sanitizers (make test's plain lane runs them): ${not_sanitized[*]}"; fi
if [ ${#failed_names[@]} -gt 0 ]; then echo "failed: ${failed_names[*]}"; fi
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
