#!/usr/bin/env bash
# t_fleet_cli.sh - the command-line contract of `gpulog fleet` without a
# broker (tests/t_fleet.sh runs it on the real Kafka and Elasticsearch):
# --help names what it writes and its settings; usage errors (exit 2 with
# the setting named) for a missing broker, thresholds and windows out of
# range and a label name that is not [a-z0-9_]+; the fleet.* keys in a
# configuration file pass `gpulog config check` and out-of-range ones are
# refused by fleet at start. Ends with "N passed, N failed".
set -uo pipefail
. "$(dirname "$0")/lib.sh"
test_tmp fleet-cli
unset KAFKA_BROKERS GPULOG_CONFIG
run() {     # run ARGS... : stderr+stdout -> $tmp/out, status -> $rc
  rc=0; "$GPULOG" fleet "$@" > "$tmp/out" 2>&1 || rc=$?
}
run --help
check "--help: exit 0, names gpu.fleet_incident, --min-gpus, --group-by, --state-topic" \
  "$([ $rc = 0 ] && grep -q gpu.fleet_incident "$tmp/out" && grep -q -- --min-gpus "$tmp/out" &&
     grep -q -- --group-by "$tmp/out" && grep -q -- --state-topic "$tmp/out"; echo $?)" "$(head -3 "$tmp/out")"
usage() {   # usage NAME WORD ARGS...: exit 2 and WORD in the message
  local name=$1 word=$2; shift 2
  run "$@"
  check "$name: exit 2 naming $word" "$([ $rc = 2 ] && grep -q -- "$word" "$tmp/out"; echo $?)" "rc=$rc $(head -3 "$tmp/out")"
}
usage "no broker" "--brokers is required"
usage "--min-gpus 0" "fleet.min_gpus" --brokers 127.0.0.1:1 --min-gpus 0
usage "--min-hosts -1" "fleet.min_hosts" --brokers 127.0.0.1:1 --min-hosts -1
usage "--window 500ms (below 1 s)" "fleet.window" --brokers 127.0.0.1:1 --window 500ms
usage "--group-by with a bad label name" "Rack-1" --brokers 127.0.0.1:1 --group-by rack,Rack-1
usage "an empty --group" "--group is required" --brokers 127.0.0.1:1 --group ''
usage "an unknown option" "unknown option" --brokers 127.0.0.1:1 --frobnicate
printf 'kafka:\n  brokers: 127.0.0.1:1\n  topics:\n    fleet: gpu.fleet.x\nfleet:\n  group: g1\n  window: 5m\n  min_hosts: 2\n  group_by: rack\n  max_members: 1000\n' > "$tmp/ok.yaml"
check_cmd "gpulog config check: the fleet.* keys" "$GPULOG" config check "$tmp/ok.yaml"
"$GPULOG" config print "$tmp/ok.yaml" > "$tmp/print" 2>&1
check "config print shows them (fleet.window 5m, kafka.topics.fleet)" \
  "$(grep -q 'window: 5m' "$tmp/print" && grep -q 'gpu.fleet.x' "$tmp/print"; echo $?)" "$(grep -A8 '^fleet' "$tmp/print")"
printf 'fleet:\n  max_keys: 0\n' > "$tmp/bad.yaml"
usage "fleet.max_keys 0 in the file" "fleet.max_keys" --config "$tmp/bad.yaml" --brokers 127.0.0.1:1
finish
