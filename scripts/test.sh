#!/usr/bin/env bash
# Runs the whole test suite and ends with one line "N passed, N failed".
#  - every build/tests/test_* binary (unit tests, one per module)
#  - every build/tests/replay_* binary over tests/fuzz/corpus/<name>/ (fuzz corpus replay)
#  - every tests/t_*.sh and tests/t_*.py script (golden, schema, integration)
# Integration scripts need the real Kafka/OpenSearch started by scripts/services.sh;
# this script starts them (unless GPULOG_NO_SERVICES=1) and stops what it started.
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

count() {   # $1 name, $2 log file, $3 exit code
  local line p f
  line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$2" | tail -n 1)
  if [ -z "$line" ]; then
    p=0; f=1
  else
    p=$(echo "$line" | awk '{print $1}'); f=$(echo "$line" | awk '{print $3}')
    [ "$3" != 0 ] && [ "$f" = 0 ] && f=1
  fi
  passed=$((passed + p)); failed=$((failed + f))
  if [ "$f" != 0 ]; then failed_names+=("$1"); echo "== $1: FAILED"; sed 's/^/   /' "$2" | grep -vE '^   ok ' | tail -n 40
  else echo "== $1: $p passed"; fi
}

if [ "${GPULOG_NO_SERVICES:-0}" != 1 ] && [ -x scripts/services.sh ]; then
  if scripts/services.sh status >/dev/null 2>&1; then scripts/services.sh up >/dev/null; echo "== services already running: left running"
  elif scripts/services.sh up; then started_services=1; else echo "== services failed to start: integration tests will fail"; fi
fi
# shellcheck disable=SC1091
[ -f services/env.sh ] && . services/env.sh

log=$GPULOG_TEST_TMP/log
for t in "$BUILD"/tests/test_*; do
  [ -x "$t" ] || continue
  (cd "$PWD" && timeout 600 "$t") > "$log" 2>&1; count "$(basename "$t")" "$log" $?
done
for r in "$BUILD"/tests/replay_*; do
  [ -x "$r" ] || continue
  name=${r##*/replay_}
  timeout 600 "$r" tests/fuzz/corpus/"$name" > "$log" 2>&1; count "replay_$name" "$log" $?
done
for s in tests/t_*.sh tests/t_*.py; do
  [ -f "$s" ] || continue
  case "$s" in *.py) runner=/usr/bin/python3 ;; *) runner=bash ;; esac
  timeout 1200 "$runner" "$s" > "$log" 2>&1; count "$(basename "$s")" "$log" $?
done
if [ ${#failed_names[@]} -gt 0 ]; then echo "failed: ${failed_names[*]}"; fi
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
