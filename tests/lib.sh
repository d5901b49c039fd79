# tests/lib.sh - what every script test (tests/t_*.sh) shares; sourced, not run:
#   set -uo pipefail
#   . "$(dirname "$0")/lib.sh"
# It moves to the repository root and sets BUILD, GPULOG (the binary under
# test) and PY; it counts the checks (ok, bad, check, check_eq, check_cmd) and
# prints the last line "N passed, N failed" (report, finish, fail); it owns the
# scratch folder made by test_tmp and the background processes a test puts in
# pids[], and removes or kills them at exit (after the test's own on_exit, if
# it defines one); wait_for and wait_lines poll instead of sleeping blind.

cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
BUILD=${BUILD:-build}
GPULOG=${GPULOG:-$PWD/$BUILD/gpulog}
PY=/usr/bin/python3
passed=0; failed=0
pids=()
tmp=""

# ok NAME: one check passed.
ok() { passed=$((passed + 1)); echo "ok   $1"; }

# bad NAME [WHY]: one check failed; a one-line WHY follows the name, a longer
# one (command output) is indented below it, 20 lines at most.
bad() {
  failed=$((failed + 1))
  if [ -z "${2:-}" ]; then echo "FAIL $1"
  elif [[ "$2" != *$'\n'* ]]; then echo "FAIL $1: ${2:0:2000}"
  else echo "FAIL $1:"; printf '%s\n' "$2" | head -n 20 | sed 's/^/     /'; fi
}

# The checks below return 0 when they pass and 1 when they fail, so that
# "check ... || finish" ends a test whose next steps need what was checked.

# check NAME STATUS [WHY]: ok when STATUS (usually $?) is 0, else bad with WHY.
check() { if [ "$2" = 0 ]; then ok "$1"; else bad "$1" "${3:-}"; return 1; fi; }

# check_eq NAME GOT WANT: ok when the two strings are equal.
check_eq() { if [ "$2" = "$3" ]; then ok "$1"; else bad "$1" "want '$3', got '$2'"; return 1; fi; }

# check_cmd NAME COMMAND...: runs the command; ok when it exits 0, else bad
# with its output (stdout and stderr).
check_cmd() {
  local name=$1 out; shift
  if out=$("$@" 2>&1); then ok "$name"; else bad "$name" "$out"; return 1; fi
}

# report: prints the last line; its status is 0 when no check failed.
report() { echo "$passed passed, $failed failed"; [ "$failed" = 0 ]; }

# finish: report and exit with its status (the end of a test, or an early end
# when what follows cannot run).
finish() { report; exit $?; }

# fail NAME [WHY]: a check the rest of the test depends on failed: count it,
# report and exit 1.
fail() { bad "$@"; finish; }

# test_tmp NAME: makes the test's scratch folder $tmp (under $GPULOG_TEST_TMP,
# which scripts/test.sh sets, else $TMPDIR or /tmp); removed at exit.
test_tmp() {
  tmp=$(mktemp -d "${GPULOG_TEST_TMP:-${TMPDIR:-/tmp}}/$1.XXXXXX") || { echo "FAIL cannot make a scratch folder"; exit 1; }
}

# The metrics port a gpulog command logged at start (msg=started ...
# metrics_port=N) in the log file $1; waits up to 10 s; fails if none.
port_of() {
  local p
  for _ in $(seq 1 100); do
    p=$(sed -n 's/.*msg=started.* metrics_port=\([0-9]*\).*/\1/p' "$1" 2>/dev/null | head -n 1)
    [ -n "$p" ] && [ "$p" != 0 ] && { echo "$p"; return 0; }
    sleep 0.1
  done
  return 1
}

# Unsets every GPULOG_* variable of the caller's environment (but the
# scratch-folder one), for tests whose checks must not depend on it.
clean_gpulog_env() {
  local v
  for v in $(env | sed -n 's/^\(GPULOG_[A-Z_]*\)=.*/\1/p'); do
    case "$v" in GPULOG_TEST_TMP) ;; *) unset "$v" ;; esac
  done
}

# The exit trap: the test's on_exit first (it may still need its processes
# and files), then every process in pids[] and every process whose command
# line names the scratch folder (children of the test's commands) is killed,
# then the folder goes.
lib_cleanup() {
  local p
  declare -F on_exit >/dev/null && on_exit
  for p in ${pids[@]+"${pids[@]}"}; do kill -KILL "$p" 2>/dev/null; done
  if [ -n "$tmp" ]; then
    for p in $(pgrep -f "$tmp/" 2>/dev/null); do kill -KILL "$p" 2>/dev/null; done
  fi
  for p in ${pids[@]+"${pids[@]}"}; do wait "$p" 2>/dev/null; done
  [ -n "$tmp" ] && rm -rf "$tmp"
}
trap lib_cleanup EXIT

# wait_for TRIES COMMAND...: runs COMMAND every 0.1 s until it succeeds, at
# most TRIES times; the status is that of the last try.
wait_for() {
  local n=$1 i; shift
  for ((i = 1; i <= n; i++)); do
    "$@" && return 0
    [ "$i" -lt "$n" ] && sleep 0.1
  done
  return 1
}

# started LOG: the process logging to LOG has logged msg=started (its
# start-up is over): a condition to wait for (wait_for) before the work a
# test times or races against it begins.
started() { grep -qs "msg=started" "$1"; }
# ckpt_moved STATE_DIR: a collector's first file checkpoint in STATE_DIR has
# moved past 0 (lines delivered): it is mid-stream, however slow its start.
ckpt_moved() { [ "$(sed -n 's/^offset=//p' "$1"/ckpt-file-* 2>/dev/null | head -n 1)" -gt 0 ] 2>/dev/null; }

# lines_at_least FILE N: FILE has N lines or more (a missing file has none).
lines_at_least() { [ "$({ wc -l < "$1"; } 2>/dev/null || echo 0)" -ge "$2" ]; }

# wait_lines FILE N [TRIES]: waits until FILE has N lines (TRIES x 0.1 s, 10 s
# by default).
wait_lines() { wait_for "${3:-100}" lines_at_least "$1" "$2"; }

# free_port: a TCP port on 127.0.0.1 that nothing listens on right now.
free_port() { "$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# ---- Kafka (scripts that say "# needs: kafka")
# kafka_setup: KAFKA_BROKERS (or services/env.sh) must answer, else the test fails;
# sets B, and KSTOP/KSTART (how to stop/restart the broker for fault tests:
# $COLLECT_KAFKA_STOP / $COLLECT_KAFKA_START, else scripts/services.sh).
kafka_setup() {
  # shellcheck disable=SC1091
  [ -z "${KAFKA_BROKERS:-}" ] && [ -f services/env.sh ] && . services/env.sh
  KSTOP=${COLLECT_KAFKA_STOP:-scripts/services.sh stop-kafka}
  KSTART=${COLLECT_KAFKA_START:-scripts/services.sh start-kafka}
  [ -n "${KAFKA_BROKERS:-}" ] || fail setup "KAFKA_BROKERS is unset: start the broker with scripts/services.sh up"
  B=$KAFKA_BROKERS
  kafka_answers -b "$B" || fail setup "no Kafka broker answers at $B"
}
# kafka_answers KCAT_ARGS...: a broker lists itself in the metadata kcat
# gets with those arguments. grep -c reads all: grep -q would stop reading
# at the first broker line, kcat then fails on the closed pipe (exit 1) and
# pipefail fails the caller.
kafka_answers() { [ "$(timeout 15 kcat "$@" -L -m 5 2>/dev/null | grep -c "broker ")" -gt 0 ]; }
# opensearch_kafka_setup: OpenSearch ($OPENSEARCH_URL) and Kafka
# ($KAFKA_BROKERS), from services/env.sh when unset, must answer, else the
# test fails there; sets URL and B.
opensearch_kafka_setup() {
  # shellcheck disable=SC1091
  [ -z "${OPENSEARCH_URL:-}${KAFKA_BROKERS:-}" ] && [ -f services/env.sh ] && . services/env.sh
  URL=${OPENSEARCH_URL:-}; B=${KAFKA_BROKERS:-}
  curl -fsS -m 5 "$URL/" >/dev/null 2>&1; check "OpenSearch answers at '${URL}'" $?
  kcat -b "$B" -L -m 5 >/dev/null 2>&1; check "Kafka answers at '${B}'" $?
  [ "$failed" = 0 ] || finish
}
# hot_gpu_events HOST: $tmp/keyed, the events of 25 minutes of 2 GPUs of HOST
# at 1 s from 2025-11-07 10:00:00 UTC, GPU 1 at 92 °C from 400 s to 1300 s
# (a gpu.temp.high episode), each line "HOST<TAB>event"; $tmp/part1 the
# first 700 s (the episode open), $tmp/part2 the rest.
hot_gpu_events() {
  "$PY" - "$tmp/hot-dmon.txt" <<'PYEOF'
import sys
with open(sys.argv[1], "w") as f:
    f.write("#Date       Time         gpu    pwr  gtemp  mtemp     sm    mem   mclk   pclk\n")
    f.write("#YYYYMMDD   HH:MM:SS     Idx      W      C      C      %      %    MHz    MHz\n")
    for s in range(1500):
        for g in (0, 1):
            t = 92 if g == 1 and 400 <= s < 1300 else 48 + (s * 7 + g * 3) % 3
            f.write(" 20251107   %02d:%02d:%02d %6d %6d %6d %6d %6d %6d %6d %6d\n"
                    % (10 + s // 3600, s // 60 % 60, s % 60, g, 250, t, t + 4, 90, 40, 2619, 1980))
PYEOF
  "$GPULOG" parse --tz UTC --host "$1" "$tmp/hot-dmon.txt" 2>/dev/null | sed "s/^/$1\t/" > "$tmp/keyed"
  head -n 1400 "$tmp/keyed" > "$tmp/part1"
  tail -n +1401 "$tmp/keyed" > "$tmp/part2"
}

# committed_total GROUP TOPIC: the sum of the offsets GROUP committed at the
# broker for the partitions of TOPIC (an error on stderr, nothing on stdout)
committed_total() { "$PY" tests/tools/kafka_admin.py "$B" --committed "$1" "$2"; }
# group_committed GROUP TOPIC N: they add up to N or more (the first N
# messages of a fresh topic consumed, settled and committed): a condition to
# wait for (wait_for) where a test used to sleep while detect worked; asked
# of the broker, as a member's own lag gauge counts the commit it only requested.
group_committed() { local n; n=$(committed_total "$1" "$2" 2>/dev/null); [ "${n:-0}" -ge "$3" ] 2>/dev/null; }

# kill_after_commit PID GROUP TOPIC N PART2 WHAT: once GROUP committed the
# first N messages of TOPIC at the broker (asked of it) and a snapshot of the
# state topic followed (members run with --snapshot-interval 1), SIGKILL
# the member PID, then produce PART2 ("key<TAB>value" lines) into TOPIC;
# checks both steps (WHAT: what the N messages are, in the check's name).
kill_after_commit() {
  wait_for 600 group_committed "$2" "$3" "$4"
  check "the member consumed and committed $6 (at the broker)" $?
  sleep 1.5
  kill -9 "$1"; wait "$1" 2>/dev/null
  kcat -b "$B" -P -t "$3" -K '\t' -l "$5" 2>> "$tmp/kcat.err"; check "SIGKILL, then produce the rest" $? "$(cat "$tmp/kcat.err")"
}

# consume TOPIC: "key<TAB>value" lines of the whole topic on stdout
consume() { timeout 60 kcat -b "$B" -C -t "$1" -e -q -f '%k\t%s\n' 2>/dev/null; }
# count_distinct_fb TOPIC: distinct gpu.memory.framebuffer.used_size values delivered
# (the dmon writers of the collect tests number their rows in that column)
count_distinct_fb() {
  consume "$1" | "$PY" -c '
import sys, json
s = set()
for l in sys.stdin:
    e = json.loads(l.rstrip("\n").partition("\t")[2])
    if "gpu.memory.framebuffer.used_size" in e: s.add(e["gpu.memory.framebuffer.used_size"])
print(len(s))'
}
# wait_distinct TOPIC N SECONDS: waits until N distinct rows arrived; prints the count
wait_distinct() {
  local n=0 t=0
  while [ "$t" -lt "$3" ]; do
    n=$(count_distinct_fb "$1"); [ "$n" -ge "$2" ] && break
    sleep 2; t=$((t + 2))
  done
  echo "$n"
}
