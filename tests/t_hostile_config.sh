#!/usr/bin/env bash
# t_hostile_config.sh - hostile input, third pass (issue 27, part A): what a
# hostile or careless user puts in a detector file, a state snapshot, a YAML
# file, a CSV, the configuration and the environment, and the signals they
# send. Each check failed on the binary before its fix (the ASan/UBSan build
# included: a sanitizer report fails the check). No service needed (servers
# it talks to are small local Python stubs).
# Ends with "N passed, N failed".
set -uo pipefail
. "$(dirname "$0")/lib.sh"
test_tmp t_hostile_config
clean_gpulog_env
[ -x "$GPULOG" ] || fail "binary $GPULOG exists"
sanitizer_free() { ! grep -qE 'AddressSanitizer|runtime error:|LeakSanitizer' "$1"; }

# ------------------- item 1: detector parameters with degenerate values
# one GPU (no peers) at a flat power, clock and temperature
"$PY" -c "
import sys
w = sys.stdout.write
w('timestamp,host,gpu,power_draw,gpu_util,temp_gpu,clock_sm,memory_used\n')
for i in range(60): w('%d,h,0,250,97,60,1400,1000\n' % (1700000000 + i))
" >"$tmp/flat.csv"
det_refused() {   # NAME FILE-CONTENT EXPECTED-MESSAGE [yaml|json]
  local f="$tmp/d.${4:-yaml}" out rc
  printf '%b' "$2" >"$f"
  out=$(timeout 20 "$GPULOG" run --no-live --detectors "$f" "$tmp/flat.csv" 2>&1 >"$tmp/d.out"); rc=$?
  check "$1" "$([ "$rc" = 2 ] && grep -qF "$3" <<<"$out" && ! grep -q 'event.reason' "$tmp/d.out"; echo $?)" "rc=$rc: $out"
}
det_refused "peer min_peers 0 refused at load with FILE:LINE:COL (was: vals[-1] read, a straggler of 0 peers)" \
  'extends: gpu\nrules:\n  - id: gpu.peer.power\n    params: {min_peers: 0}\n' \
  'd.yaml:4:25: rule gpu.peer.power: parameter min_peers must be a whole number from 1 to 64'
det_refused "peer min_peers -3 refused" \
  'extends: gpu\nrules:\n  - id: gpu.peer.clock\n    params:\n      min_peers: -3\n' \
  'd.yaml:5:18: rule gpu.peer.clock: parameter min_peers must be'
det_refused "zscore min_std 0 refused (was: NaN z, alarms on a flat series)" \
  'extends: gpu\nrules:\n  - id: z\n    detector: zscore\n    metric: gpu.power.usage\n    params: {min_std: 0}\n' \
  'd.yaml:6:23: rule z: parameter min_std must be a number in (0, 1e+15]'
det_refused "zscore min_std -1 refused" \
  '{"extends": "gpu", "rules": [{"id": "z", "detector": "zscore", "metric": "gpu.power.usage",\n "params": {"min_std": -1}}]}' \
  'd.json:2:24: rule z: parameter min_std must be' json
det_refused "robust_z min_scale 0 refused" \
  'extends: gpu\nrules:\n  - id: gpu.temp.rise\n    params: {min_scale: 0}\n' \
  'd.yaml:4:25: rule gpu.temp.rise: parameter min_scale must be a number in (0,'
det_refused "ewma lambda 0 refused" \
  'extends: gpu\nrules:\n  - id: e\n    detector: ewma\n    metric: gpu.power.usage\n    params: {lambda: 0}\n' \
  'd.yaml:6:22: rule e: parameter lambda must be a number in (0, 1]'
det_refused "ewma lambda 1.5 refused" \
  'extends: gpu\nrules:\n  - id: e\n    detector: ewma\n    metric: gpu.power.usage\n    params: {lambda: 1.5}\n' \
  'rule e: parameter lambda must be a number in (0, 1]'
det_refused "clock_drop decay 1e15 refused (was: an infinite learned clock in the reason)" \
  'extends: gpu\nrules:\n  - id: gpu.clock.drop\n    params: {decay: 1e15}\n' \
  'd.yaml:4:21: rule gpu.clock.drop: parameter decay must be a number in (0, 1]'
det_refused "counter_increase min_increase 0 refused (was: alarms on a counter that did not move)" \
  'extends: gpu\nrules:\n  - id: gpu.pcie.replay\n    params: {min_increase: 0}\n' \
  'rule gpu.pcie.replay: parameter min_increase must be a number in (0,'
det_refused "peer rel 0 with min_abs 0 refused (a limit of 0: every GPU a straggler)" \
  'extends: gpu\nrules:\n  - id: gpu.peer.temp\n    params: {min_abs: 0}\n' \
  'd.yaml:4:23: rule gpu.peer.temp: rel or min_abs must be above 0'
det_refused "robust_z lag 2.5 refused (a whole number)" \
  'extends: gpu\nrules:\n  - id: gpu.temp.rise\n    params: {lag: 2.5}\n' \
  'rule gpu.temp.rise: parameter lag must be a whole number from 0 to 63'
out=$(timeout 20 "$GPULOG" run --no-live "$tmp/flat.csv" 2>&1 >"$tmp/plain.out")
check "the gpu profile on the flat one-GPU series: no anomaly" \
  "$([ ! -s "$tmp/plain.out" ] && sanitizer_free <(echo "$out"); echo $?)" "$(head -c 600 "$tmp/plain.out") $out"
# SIGHUP with a degenerate parameter: refused with FILE:LINE:COL, the running rules stay
printf 'extends: gpu\n' >"$tmp/live.yaml"
mkfifo "$tmp/in"
"$GPULOG" run --detectors "$tmp/live.yaml" --no-live - <"$tmp/in" >"$tmp/live.out" 2>"$tmp/live.err" &
pids+=($!); rpid=$!
exec 7>"$tmp/in"
cat "$tmp/flat.csv" >&7
wait_for 50 grep -q 'msg=started' "$tmp/live.err"
printf 'extends: gpu\nrules:\n  - id: gpu.peer.power\n    params: {min_peers: 0}\n' >"$tmp/live.yaml"
kill -HUP "$rpid"
if wait_for 50 grep -q 'reload refused.*live.yaml:4:25: rule gpu.peer.power: parameter min_peers' "$tmp/live.err"; then
  ok "run: SIGHUP with min_peers 0 is refused with FILE:LINE:COL, logged"
else bad "run: SIGHUP with min_peers 0 is refused with FILE:LINE:COL, logged" "$(cat "$tmp/live.err")"; fi
check "run: the process still runs after the refused reload" "$(kill -0 "$rpid" 2>/dev/null; echo $?)"
exec 7>&-
wait "$rpid" 2>/dev/null
check "run: no record, no sanitizer report after the refused reload" \
  "$([ ! -s "$tmp/live.out" ] && sanitizer_free "$tmp/live.err"; echo $?)" "$(cat "$tmp/live.err")"

finish
