#!/usr/bin/env bash
# needs: kafka
# t_gpumetrics_cmds.sh - the GPU table (core/gpumetrics.c) on /metrics of the
# two commands t_prometheus.py does not drive (that one uses run):
#  - collect (NDJSON output, no broker): reading a dmon stream, it serves
#    DCGM_FI_DEV_GPU_TEMP / _POWER_USAGE of each GPU with the values of the
#    newest line, and gpulog_gpu_up 1; with gpu_metrics: off it serves none;
#  - detect (the real Kafka: KAFKA_BROKERS from services/env.sh) serves no GPU
#    table by default (it may see a fleet) and serves it with
#    GPULOG_GPU_METRICS=on, for the host of the consumed events; the critical
#    Xid consumed is counted in gpulog_xid_errors_total either way.
# Staleness is t_prometheus.py's and test_gpumetrics's: here gpu_metrics_stale_periods is
# 1000, so a loaded machine cannot turn the GPUs stale between feed and scrape.
# About 5 s. Fails when the broker is missing.
set -uo pipefail
. "$(dirname "$0")/lib.sh"
test_tmp gpumetrics-cmds
[ -f services/env.sh ] && [ -z "${KAFKA_BROKERS:-}" ] && . services/env.sh

scrape() { curl -sf "http://127.0.0.1:$1/metrics"; }
has() { local b; b=$(scrape "$1") && grep -qF -- "$2" <<< "$b"; }   # has PORT TEXT (no grep -q on a pipe: pipefail)
dmon() {   # dmon FIRST LAST: 2 GPUs, power 100+s / temp 40+s+gpu
  printf '%s\n' '#Date       Time         gpu    pwr  gtemp' '#YYYYMMDD   HH:MM:SS     Idx      W      C'
  for ((s = $1; s <= $2; s++)); do
    for g in 0 1; do printf ' 20251111   20:00:%02d      %d    %d     %d\n' "$s" "$g" $((100 + s)) $((40 + s + g)); done
  done
}

# ------------------------------------------------------------------ collect
for mode in auto off; do
  mkfifo "$tmp/in.$mode"
  GPULOG_GPU_METRICS=$mode GPULOG_GPU_METRICS_STALE_PERIODS=1000 "$GPULOG" collect --tz UTC --host c1 --state-dir "$tmp/st.$mode" --output /dev/null \
    --metrics-addr 127.0.0.1:0 - < "$tmp/in.$mode" 2> "$tmp/c.$mode.err" &
  pids+=($!)
  exec 7> "$tmp/in.$mode"
  dmon 0 5 >&7
  port=$(port_of "$tmp/c.$mode.err") || { bad "collect ($mode) starts" "$(cat "$tmp/c.$mode.err")"; exec 7>&-; continue; }
  lab='{gpu="1",UUID="",device="nvidia1",modelName="",Hostname="c1"}'
  if [ "$mode" = auto ]; then
    wait_for 300 has "$port" "DCGM_FI_DEV_GPU_TEMP$lab 46"
    check "collect: DCGM_FI_DEV_GPU_TEMP of GPU 1 is the newest line's (46)" $? "$(scrape "$port" | grep -E '^DCGM_FI_DEV_(GPU_TEMP|POWER)')"
    has "$port" "DCGM_FI_DEV_POWER_USAGE$lab 105"; check "collect: DCGM_FI_DEV_POWER_USAGE of GPU 1 is 105" $?
    has "$port" "gpulog_gpu_up$lab 1"; check "collect: gpulog_gpu_up 1" $? "$(scrape "$port" | grep gpu_up)"
  else
    wait_for 300 has "$port" "gpulog_lines_read_total 14"
    n=$(scrape "$port" | grep -c '^DCGM_FI_DEV\|^gpulog_gpu_up')
    check_eq "collect with gpu_metrics off: no GPU table" "$n" 0
  fi
  exec 7>&-
done

# ------------------------------------------------------------------ detect
[ -n "${KAFKA_BROKERS:-}" ] || fail "KAFKA_BROKERS is set (start scripts/services.sh up)"
B=$KAFKA_BROKERS
topic=gpulog-gm-$$-$RANDOM
{ dmon 0 5; echo '[Tue Nov 11 20:00:05 2025] NVRM: Xid (PCI:0000:3b:00): 79, pid=1, GPU has fallen off the bus.'; } > "$tmp/d.txt"
"$GPULOG" parse --tz UTC --host d1 "$tmp/d.txt" 2>/dev/null | sed 's/^/d1\t/' > "$tmp/keyed"
kcat -b "$B" -P -t "$topic" -K '\t' -l "$tmp/keyed"; check "produce 13 events to $topic" $?
for mode in auto on; do
  GPULOG_GPU_METRICS=$mode GPULOG_GPU_METRICS_STALE_PERIODS=1000 "$GPULOG" detect --brokers "$B" --group "gm-$mode-$$-$RANDOM" --topics "$topic" \
    --metrics-addr 127.0.0.1:0 --output /dev/null -X session.timeout.ms=6000 2> "$tmp/d.$mode.err" &
  dpid=$!; pids+=("$dpid")
  port=$(port_of "$tmp/d.$mode.err") || { bad "detect ($mode) starts" "$(cat "$tmp/d.$mode.err")"; continue; }
  wait_for 300 has "$port" "gpulog_lines_read_total 13"
  check "detect ($mode): consumed the 13 events" $? "$(scrape "$port" | grep lines_read; tail -3 "$tmp/d.$mode.err")"
  has "$port" 'gpulog_xid_errors_total{kind="xid",code="79",name="GPU fallen off the bus",severity="critical",Hostname="d1"} 1'
  check "detect ($mode): the critical Xid counted" $? "$(scrape "$port" | grep xid_errors)"
  n=$(scrape "$port" | grep -c '^DCGM_FI_DEV_GPU_TEMP{')
  if [ "$mode" = auto ]; then check_eq "detect by default: no GPU table" "$n" 0
  else
    check_eq "detect with GPULOG_GPU_METRICS=on: both GPUs of d1" "$n" 2
    has "$port" 'DCGM_FI_DEV_POWER_USAGE{gpu="0",UUID="",device="nvidia0",modelName="",Hostname="d1"} 105'
    check "detect: DCGM_FI_DEV_POWER_USAGE of GPU 0 is the last sample's (105)" $? "$(scrape "$port" | grep '^DCGM_FI_DEV_POWER')"
  fi
  kill "$dpid"; wait "$dpid" 2>/dev/null
done
finish
