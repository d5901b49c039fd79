#!/usr/bin/env bash
# bench/files_bench.sh - the CPU of `gpulog collect --file GLOB` following
# many idle files (issue 27 item 4; target: 10,000 idle files under 2 % of a
# core), next to baselines measured in the same run on the same files:
#   collect following 1 file   (what an idle collector costs whatever it follows)
#   tail -F of the same files  (GNU coreutils, inotify: the floor of following them)
#   COLLECT_FILES_BASE=PATH    a second gpulog binary (an older build) on the same files
# Each collector first reads every file and checkpoints it; then its CPU time
# (utime + stime from /proc) over FILES_BENCH_SECONDS (10) of idling is
# measured. Also printed: descriptors and RSS. No service is needed; files and
# state live under FILES_BENCH_DIR (default /dev/shm when it exists: the
# first checkpoints' fsyncs are not what is measured).
# Env: BUILD / GPULOG, FILES_BENCH_COUNTS ("1000 10000": powers of ten up to
#      100000), FILES_BENCH_SECONDS, COLLECT_FILES_BASE, FILES_BENCH_DIR.
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
G=${GPULOG:-$PWD/$BUILD/gpulog}
GB=${COLLECT_FILES_BASE:-}
COUNTS=${FILES_BENCH_COUNTS:-1000 10000}
SECS=${FILES_BENCH_SECONDS:-10}
base=${FILES_BENCH_DIR:-$([ -d /dev/shm ] && echo /dev/shm || echo "${TMPDIR:-/tmp}")}
tmp=$(mktemp -d "$base/files-bench.XXXXXX")
bg=()
cleanup() { for p in ${bg[@]+"${bg[@]}"}; do kill -KILL "$p" 2>/dev/null; done; rm -rf "$tmp"; }
trap cleanup EXIT
# the descriptor limit: 10,000 files want 10,000 descriptors (raised to the hard limit when allowed)
ulimit -n "$(ulimit -Hn)" 2>/dev/null
max=0; for n in $COUNTS; do [ "$n" -gt "$max" ] && max=$n; done
python3 - "$tmp/logs" "$max" <<'PY'
import os, sys
d, n = sys.argv[1], int(sys.argv[2])
os.makedirs(d)
for i in range(n):
    with open("%s/gpu%05d.log" % (d, i), "w") as f:
        f.write("#Date       Time        gpu    pwr  gtemp\n#YYYYMMDD   HH:MM:SS    Idx      W      C\n")
        f.write(" 20250101   00:00:01 %6d    100     40\n" % (i % 8))
PY
ticks() { awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null || echo 0; }
hz=$(getconf CLK_TCK)
# measure NAME FILES_EXPECTED CMD...: runs CMD in the background, waits for
# its first checkpoints (collect) or 3 s (tail), then its CPU over SECS
measure() {
  local name=$1 want=$2; shift 2
  "$@" > /dev/null 2> "$tmp/err" &
  local pid=$! t0 t1 i
  bg+=("$pid")
  if [ "$want" -gt 0 ]; then
    for i in $(seq 1 1200); do
      [ "$(find "$tmp/st" -name 'ckpt-file-*' ! -name '*.tmp' 2>/dev/null | wc -l)" -ge "$want" ] && break
      sleep 0.25
    done
  fi
  sleep 3
  t0=$(ticks "$pid"); sleep "$SECS"; t1=$(ticks "$pid")
  local fds rss
  fds=$(ls "/proc/$pid/fd" 2>/dev/null | wc -l)
  rss=$(awk '/VmRSS/{print $2}' "/proc/$pid/status" 2>/dev/null)
  kill -TERM "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
  awk -v n="$name" -v a="$t0" -v b="$t1" -v s="$SECS" -v hz="$hz" -v f="$fds" -v r="${rss:-0}" 'BEGIN {
    pct = (b - a) / hz / s * 100
    printf "  %-44s %7.2f %%   %6d fds  %7.1f MiB\n", n, pct, f, r / 1024 }'
  last=$(awk -v a="$t0" -v b="$t1" -v s="$SECS" -v hz="$hz" 'BEGIN { printf "%.3f", (b - a) / hz / s * 100 }')
}
collect() {   # collect NAME GPULOG GLOB WANT: measured, with a fresh state dir
  rm -rf "$tmp/st"
  measure "$1" "$4" "$2" collect --host bench --tz UTC --file "$3" --state-dir "$tmp/st" --output /dev/null --metrics-addr ''
}
echo "many idle files: CPU of one core while idling ($SECS s each, after every file was read and checkpointed)"
printf "  %-44s %9s   %10s  %11s\n" "program" "CPU" "descriptors" "RSS"
rc=0
collect "gpulog collect, 1 file (baseline)" "$G" "$tmp/logs/gpu00000.log" 1
for n in $COUNTS; do
  # the first n of gpu00000.log ...: n a power of ten
  glob="$tmp/logs/gpu$(printf '%0*d' $((6 - ${#n})) 0)*.log"
  collect "gpulog collect, $n files" "$G" "$glob" "$n"
  [ "$n" = "$max" ] && top=$last
  [ -n "$GB" ] && collect "base build, $n files" "$GB" "$glob" "$n"
done
files=("$tmp"/logs/gpu*.log)
measure "tail -F, ${#files[@]} files (GNU coreutils)" 0 tail -q -n 0 -F "${files[@]}"
ok=$(awk -v p="$top" 'BEGIN { print (p < 2.0) ? "met" : "NOT met" }')
echo "  $max idle files: ${top} % of a core (target < 2 %: $ok)"
[ "$ok" = met ] || rc=1
exit $rc
