#!/usr/bin/env bash
# needs: kafka
# The operability wiring of collect, detect and run (issue 6), end to end:
#  - /metrics scraped from each command while it works (HELP/TYPE lines,
#    lines read, events, anomalies move), /readyz 503 before the input is
#    open and 200 while running;
#  - SIGTERM mid-stream: exit 0 within shutdown_timeout, everything read
#    delivered (outputs counted);
#  - SIGHUP on run and detect with a changed --detectors file: the reload is
#    counted, a changed threshold applies to later samples, an unchanged
#    rule keeps its open episode (no second "start"), the changed rule's
#    episode ends with an "end" record; a broken file is refused and counted;
#  - configuration precedence file < GPULOG_* < flag, seen by `config print`
#    and by the command's own startup log; an unknown key in the file makes
#    collect, detect and run exit 2 with FILE:LINE:COL.
# detect needs the real Kafka (KAFKA_BROKERS from services/env.sh): without
# it those checks FAIL.
set -uo pipefail
. "$(dirname "$0")/lib.sh"
[ -z "${KAFKA_BROKERS:-}" ] && [ -f services/env.sh ] && . services/env.sh
test_tmp t-wire
on_exit() { exec 3>&- 4>&- 5>&- 2>/dev/null; }   # lib.sh's exit trap calls this first
[ -x "$GPULOG" ] || fail "binary $GPULOG exists"

metric() {    # metric PORT 'NAME{labels}' -> value (empty if absent); a bare NAME sums its labelled series
  curl -sf "http://127.0.0.1:$1/metrics" | awk -v k="$2" '$1 == k || index($1, k "{") == 1 { s += $2; f = 1 } END { if (f) print s }'
}
metric_at_least() {   # metric_at_least PORT NAME MIN
  local v; v=$(metric "$1" "$2"); [ -n "$v" ] && [ "${v%.*}" -ge "$3" ]
}
wait_metric() { wait_for "${4:-300}" metric_at_least "$1" "$2" "$3"; }   # wait_metric PORT NAME MIN [tries]
metric_is() { [ "$(metric "$1" "$2")" = "$3" ]; }   # metric_is PORT NAME VALUE
readyz() { curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$1/readyz"; }
help_type() {     # both # HELP and # TYPE of each family given
  local body; body=$(curl -sf "http://127.0.0.1:$1/metrics") || return 1; shift
  for f in "$@"; do
    grep -q "^# HELP $f " <<<"$body" && grep -q "^# TYPE $f \(counter\|gauge\)$" <<<"$body" || { echo "no HELP/TYPE for $f"; return 1; }
  done
}
dmon_line() {  # dmon_line SECOND POWER TEMP
  printf ' 20251111   20:%02d:%02d      0    %s     %s\n' $(( $1 / 60 )) $(( $1 % 60 )) "$2" "$3"
}
dmon_header() { printf '%s\n' '#Date       Time         gpu    pwr  gtemp' '#YYYYMMDD   HH:MM:SS     Idx      W      C'; }
# record counts in an NDJSON file of anomaly records: count FILE RULE TYPE
count() { "$PY" - "$@" <<'EOF'
import json, sys
n = 0
for l in open(sys.argv[1]):
    r = json.loads(l)
    if r.get("rule.id") == sys.argv[2] and r.get("event.type") == sys.argv[3]: n += 1
print(n)
EOF
}
# t.temp: above 80 C; t.power: above 200 W (a.json) or 300 W (b.json)
cat > "$tmp/a.json" <<'EOF'
{"name":"wire","window":64,"window_span_s":600,"gap_s":5,"rules":[
{"id":"t.temp","name":"temp high","detector":"threshold","metric":"gpu.temperature.gpu","severity":2,"for":1,"clear":1,"params":{"high":80}},
{"id":"t.power","name":"power high","detector":"threshold","metric":"gpu.power.usage","severity":2,"for":1,"clear":1,"params":{"high":200}}]}
EOF
sed 's/"high":200/"high":300/' "$tmp/a.json" > "$tmp/b.json"
echo '{"rules":[{"id":"x","detector":"nope","metric":"m"}]}' > "$tmp/broken.json"

# ------------------------------------------------------------------ run
cp "$tmp/a.json" "$tmp/run-det.json"
mkfifo "$tmp/run.fifo"
"$GPULOG" run --tz UTC --host w1 --no-live --detectors "$tmp/run-det.json" --metrics-addr 127.0.0.1:0 \
  --shutdown-timeout 5 "$tmp/run.fifo" > "$tmp/run.out" 2> "$tmp/run.err" &
rpid=$!; pids+=("$rpid")
rport=$(port_of "$tmp/run.err"); check "run: startup log names the metrics port" $? "$(cat "$tmp/run.err")"
check "run: /readyz 503 while the input is not open yet" "$([ "$(readyz "$rport")" = 503 ]; echo $?)"
exec 3> "$tmp/run.fifo"
{ dmon_header; for i in 0 1 2; do dmon_line $i 250 85; done; } >&3
wait_metric "$rport" gpulog_lines_read_total 5
check "run: lines_read_total counts the 5 lines" "$([ "$(metric "$rport" gpulog_lines_read_total)" = 5 ]; echo $?)"
wait_metric "$rport" gpulog_anomalies_total 2
check "run: anomalies_total reaches 2 (both rules open)" $? "$(curl -s "http://127.0.0.1:$rport/metrics" | grep -v '^#')"
# the gauge is set once a second (the loop's tick), the counter with each
# record: up to a second behind it when the lines came after the first tick
wait_for 300 metric_is "$rport" gpulog_anomalies_open 2
check "run: anomalies_open gauge is 2" $? "$(metric "$rport" gpulog_anomalies_open)"
out=$(help_type "$rport" gpulog_lines_read_total gpulog_lines_rejected_total gpulog_events_produced_total \
  gpulog_anomalies_total gpulog_anomalies_open gpulog_config_reloads_total gpulog_consumer_lag_messages)
check "run: HELP and TYPE for every family" $? "$out"
check "run: /readyz 200 while running" "$([ "$(readyz "$rport")" = 200 ]; echo $?)"
echo "garbage here" >&3
wait_metric "$rport" 'gpulog_lines_rejected_total{reason="field_count"}' 1
check "run: a rejected line counted by reason" $? "$(curl -s "http://127.0.0.1:$rport/metrics" | grep rejected)"

# reload: t.power's threshold 200 -> 300, t.temp unchanged
cp "$tmp/b.json" "$tmp/run-det.json"
kill -HUP "$rpid"
wait_metric "$rport" 'gpulog_config_reloads_total{result="ok"}' 1
check "run: SIGHUP reload counted (result ok)" $?
{ for i in 3 4 5; do dmon_line $i 250 85; done; for i in 6 7 8; do dmon_line $i 350 85; done; } >&3
wait_metric "$rport" gpulog_lines_read_total 12
cp "$tmp/broken.json" "$tmp/run-det.json"
kill -HUP "$rpid"
wait_metric "$rport" 'gpulog_config_reloads_total{result="error"}' 1
check "run: a broken detector file is refused and counted (result error)" $?
dmon_line 9 350 85 >&3
wait_metric "$rport" gpulog_lines_read_total 13
check "run: still reading after a refused reload" $?
t0=$(date +%s%N)
kill -TERM "$rpid"; wait "$rpid"; rc=$?
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
exec 3>&-
check "run: SIGTERM mid-stream exits 0 within the deadline (${ms} ms)" "$([ "$rc" = 0 ] && [ "$ms" -lt 5000 ]; echo $?)" "rc=$rc $(tail -3 "$tmp/run.err")"
grep -q "msg=reload .*kept=1 changed=1" "$tmp/run.err"
check "run: reload logged (1 rule kept, 1 changed)" $? "$(grep reload "$tmp/run.err")"
check "run: unchanged rule keeps its open episode (one t.temp start)" \
  "$([ "$(count "$tmp/run.out" t.temp start)" = 1 ]; echo $?)" "$(cat "$tmp/run.out")"
check "run: changed rule's episode ended by the reload" \
  "$([ "$(count "$tmp/run.out" t.power end)" = 1 ] && grep -q 'ended by a configuration reload' "$tmp/run.out"; echo $?)"
"$PY" - "$tmp/run.out" > "$tmp/run.chk" <<'EOF'
import json, sys
st = [json.loads(l) for l in open(sys.argv[1])]
st = [r for r in st if r["rule.id"] == "t.power" and r["event.type"] == "start"]
# before the reload at 250 W (limit 200); after it nothing at 250 W, a start at 350 W (limit 300)
ok = len(st) == 2 and st[0]["anomaly.value"] == 250 and st[1]["anomaly.value"] == 350 \
     and st[1]["@timestamp"] == "2025-11-11T20:00:06.000Z"
print("ok" if ok else "bad", [(r["@timestamp"], r["anomaly.value"]) for r in st])
EOF
check "run: new threshold applies to later samples (250 W quiet, 350 W opens)" \
  "$(grep -q '^ok' "$tmp/run.chk"; echo $?)" "$(cat "$tmp/run.chk")"
grep -q "13 lines" "$tmp/run.err"
check "run: every line read before SIGTERM was processed" $? "$(tail -2 "$tmp/run.err")"

# -------------------------------------------------------------- collect
dmon_header > "$tmp/grow.txt"
for i in $(seq 0 199); do dmon_line $((i % 3600)) 100 50; done >> "$tmp/grow.txt"
"$GPULOG" collect --tz UTC --file "$tmp/grow.txt" --host w1 --state-dir "$tmp/st" --output "$tmp/c.ndjson" \
  --metrics-addr 127.0.0.1:0 --stats-interval 0 > /dev/null 2> "$tmp/c.err" &
cpid=$!; pids+=("$cpid")
cport=$(port_of "$tmp/c.err"); check "collect: startup log names the metrics port" $? "$(cat "$tmp/c.err")"
wait_metric "$cport" gpulog_events_produced_total 200
check "collect: events_produced_total reaches 200" $? "$(curl -s "http://127.0.0.1:$cport/metrics" | grep -v '^#')"
check "collect: lines_read_total counts header and rows (202)" "$([ "$(metric "$cport" gpulog_lines_read_total)" = 202 ]; echo $?)"
out=$(help_type "$cport" gpulog_lines_read_total gpulog_events_produced_total gpulog_spool_bytes gpulog_child_restarts_total \
  gpulog_delivery_errors_total)
check "collect: HELP and TYPE lines" $? "$out"
check "collect: /readyz 200 while running" "$([ "$(readyz "$cport")" = 200 ]; echo $?)"
# the file grows while collect reads it; SIGTERM in the middle
( for i in $(seq 200 20199); do dmon_line $((i % 3600)) 100 50; done >> "$tmp/grow.txt" ) &
gpid=$!
sleep 0.3
t0=$(date +%s%N)
kill -TERM "$cpid"; wait "$cpid"; rc=$?
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
wait "$gpid"
check "collect: SIGTERM mid-stream exits 0 within the deadline (${ms} ms)" "$([ "$rc" = 0 ] && [ "$ms" -lt 10000 ]; echo $?)" "rc=$rc $(tail -3 "$tmp/c.err")"
n1=$(wc -l < "$tmp/c.ndjson")
# the rest, from the checkpoint: together every row once
"$GPULOG" collect --tz UTC --file "$tmp/grow.txt" --host w1 --state-dir "$tmp/st" --output "$tmp/c2.ndjson" --once \
  --stats-interval 0 2> "$tmp/c2.err"
rc=$?
total=$(cat "$tmp/c.ndjson" "$tmp/c2.ndjson" | "$PY" -c 'import sys,json; print(len({json.loads(l)["event.id"] for l in sys.stdin}))')
lines=$(cat "$tmp/c.ndjson" "$tmp/c2.ndjson" | wc -l)
check "collect: what was read before SIGTERM was delivered, the rest after a restart (${n1} + $((lines - n1)) = 20200, no duplicates)" \
  "$([ "$rc" = 0 ] && [ "$total" = 20200 ] && [ "$lines" = 20200 ] && [ "$n1" -gt 0 ]; echo $?)" "rc=$rc total=$total lines=$lines"

# collect reading a FIFO (stdin source), SIGHUP: re-scan, not a stop
mkfifo "$tmp/c.fifo"
"$GPULOG" collect --tz UTC --host w1 --state-dir "$tmp/st2" --output "$tmp/c3.ndjson" --metrics-addr 127.0.0.1:0 \
  --stats-interval 0 - < "$tmp/c.fifo" 2> "$tmp/c3.err" &
cpid=$!; pids+=("$cpid")
exec 4> "$tmp/c.fifo"
cport=$(port_of "$tmp/c3.err"); check "collect (stdin): metrics port" $?
{ dmon_header; for i in 0 1 2 3; do dmon_line $i 100 50; done; } >&4
wait_metric "$cport" gpulog_events_produced_total 4
check "collect (stdin FIFO): events_produced_total moves" $?
kill -HUP "$cpid"; wait_for 300 grep -q "msg=reload" "$tmp/c3.err"
kill -0 "$cpid" 2>/dev/null && grep -q "msg=reload" "$tmp/c3.err"
check "collect: SIGHUP logs reload and keeps running" $? "$(tail -2 "$tmp/c3.err")"
dmon_line 4 100 50 >&4
wait_metric "$cport" gpulog_events_produced_total 5
check "collect: still delivering after SIGHUP" $?
kill -TERM "$cpid"; wait "$cpid"; rc=$?
exec 4>&-
check "collect (stdin): SIGTERM exits 0, 5 events written" "$([ "$rc" = 0 ] && [ "$(wc -l < "$tmp/c3.ndjson")" = 5 ]; echo $?)" "rc=$rc"

# ------------------------------------------------------- configuration
cat > "$tmp/cfg.yaml" <<'EOF'
kafka:
  brokers: file-broker:9092
  group: wire-file-group
EOF
printf 'kafka:\n  brokers: x:1\n  bogus_key: 1\n' > "$tmp/unknown.yaml"
p1=$("$GPULOG" config print "$tmp/cfg.yaml" 2>&1 | grep -A0 'brokers:')
p2=$(GPULOG_KAFKA_BROKERS=env-broker:9092 "$GPULOG" config print "$tmp/cfg.yaml" 2>&1 | grep 'brokers:')
check "config print: the file's brokers, then the environment's" \
  "$(grep -q file-broker <<<"$p1" && grep -q env-broker <<<"$p2"; echo $?)" "$p1 / $p2"
startup_brokers() {   # the brokers detect's startup log shows
  : > "$tmp/pre.err"   # not the previous call's log while this one starts
  "$@" > /dev/null 2> "$tmp/pre.err" &
  local p=$! b=""
  for _ in $(seq 1 50); do
    b=$(sed -n 's/.*msg=started brokers="\([^"]*\)".*/\1/p' "$tmp/pre.err"); [ -n "$b" ] && break; sleep 0.1
  done
  kill -KILL "$p" 2>/dev/null; wait "$p" 2>/dev/null
  echo "$b"
}
b1=$(startup_brokers "$GPULOG" detect --config "$tmp/cfg.yaml")
b2=$(GPULOG_KAFKA_BROKERS=env-broker:9092 startup_brokers "$GPULOG" detect --config "$tmp/cfg.yaml")
b3=$(GPULOG_KAFKA_BROKERS=env-broker:9092 startup_brokers "$GPULOG" detect --config "$tmp/cfg.yaml" --brokers flag-broker:9092)
check "detect startup log: file < GPULOG_KAFKA_BROKERS < --brokers" \
  "$([ "$b1" = file-broker:9092 ] && [ "$b2" = env-broker:9092 ] && [ "$b3" = flag-broker:9092 ]; echo $?)" "$b1 / $b2 / $b3"
b4=$(GPULOG_CONFIG="$tmp/cfg.yaml" startup_brokers "$GPULOG" detect)
check "detect: \$GPULOG_CONFIG is read when there is no --config" "$([ "$b4" = file-broker:9092 ]; echo $?)" "$b4"
for cmd in collect detect run; do
  case $cmd in
    collect) args=(--file "$tmp/grow.txt" --once --state-dir "$tmp/st3") ;;
    *) args=() ;;
  esac
  rc=0; timeout 10 "$GPULOG" "$cmd" --config "$tmp/unknown.yaml" "${args[@]}" < /dev/null > /dev/null 2> "$tmp/unk.err" || rc=$?
  check "$cmd: unknown key in the config file exits 2 with FILE:LINE:COL" \
    "$([ "$rc" = 2 ] && grep -q "unknown.yaml:3:3:.*bogus_key" "$tmp/unk.err"; echo $?)" "rc=$rc $(cat "$tmp/unk.err")"
done
cat > "$tmp/col.yaml" <<'EOF'
host: yaml-host
shutdown_timeout: 3s
collect:
  stats_interval: 0
sources:
  - type: file
    path: PATH
EOF
sed -i "s|PATH|$tmp/grow.txt|" "$tmp/col.yaml"
"$GPULOG" collect --config "$tmp/col.yaml" --tz UTC --once --state-dir "$tmp/st4" --output "$tmp/c4.ndjson" 2> "$tmp/c4.err"
rc=$?
check "collect: sources, host and shutdown_timeout from the config file" \
  "$([ "$rc" = 0 ] && [ "$(wc -l < "$tmp/c4.ndjson")" = 20200 ] && grep -q '"host.name":"yaml-host"' "$tmp/c4.ndjson" \
     && grep -q 'shutdown_timeout_ms=3000' "$tmp/c4.err"; echo $?)" "rc=$rc $(head -3 "$tmp/c4.err")"

# --------------------------------------------------------------- detect
[ -n "${KAFKA_BROKERS:-}" ] || fail "KAFKA_BROKERS is set (start scripts/services.sh up)"
B=$KAFKA_BROKERS
kcat -b "$B" -L -m 5 > /dev/null 2>&1; check "broker $B reachable" $?
topic=gpulog-wire-$$-$RANDOM
group=gpulog-wire-g-$$-$RANDOM
produce() {   # produce DMON_FILE: parsed and keyed by host/gpu into the topic
  "$GPULOG" parse --tz UTC --host w2 "$1" 2>/dev/null |
    "$PY" -c 'import sys, json
for l in sys.stdin:
    d = json.loads(l); print("%s/%s\t%s" % (d["host.name"], d.get("gpu.index", "-"), l.rstrip()))' > "$tmp/keyed"
  kcat -b "$B" -P -t "$topic" -K '\t' -l "$tmp/keyed"
}
{ dmon_header; for i in 0 1 2; do dmon_line $i 250 85; done; } > "$tmp/d1.txt"
produce "$tmp/d1.txt"; check "produce 3 events" $?
cp "$tmp/a.json" "$tmp/det.json"
"$GPULOG" detect --brokers "$B" --group "$group" --topics "$topic" --detectors "$tmp/det.json" \
  --metrics-addr 127.0.0.1:0 --output "$tmp/d.out" --shutdown-timeout 8 \
  -X session.timeout.ms=6000 -X heartbeat.interval.ms=500 2> "$tmp/d.err" &
dpid=$!; pids+=("$dpid")
dport=$(port_of "$tmp/d.err"); check "detect: startup log names the metrics port" $? "$(cat "$tmp/d.err")"
wait_metric "$dport" gpulog_anomalies_total 2 300
check "detect: anomalies_total reaches 2" $? "$(curl -s "http://127.0.0.1:$dport/metrics" | grep -v '^#'; tail -3 "$tmp/d.err")"
check "detect: lines_read_total counts the 3 messages" "$([ "$(metric "$dport" gpulog_lines_read_total)" = 3 ]; echo $?)"
wait_metric "$dport" gpulog_events_produced_total 2
check "detect: events_produced_total counts the written records" $?
out=$(help_type "$dport" gpulog_lines_read_total gpulog_anomalies_total gpulog_anomalies_open gpulog_consumer_lag_messages \
  gpulog_events_produced_total gpulog_config_reloads_total)
check "detect: HELP and TYPE lines" $? "$out"
check "detect: /readyz 200 while running" "$([ "$(readyz "$dport")" = 200 ]; echo $?)"
lag=""
for _ in $(seq 1 50); do lag=$(metric "$dport" gpulog_consumer_lag_messages); [ "$lag" = 0 ] && break; sleep 0.1; done
check "detect: consumer lag 0 once everything is committed" "$([ "$lag" = 0 ]; echo $?)" "lag=$lag"
cp "$tmp/b.json" "$tmp/det.json"
kill -HUP "$dpid"
wait_metric "$dport" 'gpulog_config_reloads_total{result="ok"}' 1
check "detect: SIGHUP reload counted" $?
{ dmon_header; for i in 3 4 5; do dmon_line $i 250 85; done; for i in 6 7 8; do dmon_line $i 350 85; done; } > "$tmp/d2.txt"
produce "$tmp/d2.txt"
wait_metric "$dport" gpulog_lines_read_total 9 300
check "detect: later messages consumed" $?
wait_metric "$dport" gpulog_anomalies_total 3 100
t0=$(date +%s%N)
kill -TERM "$dpid"; wait "$dpid"; rc=$?
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
check "detect: SIGTERM exits 0 within the deadline (${ms} ms)" "$([ "$rc" = 0 ] && [ "$ms" -lt 8000 ]; echo $?)" "rc=$rc $(tail -4 "$tmp/d.err")"
grep -q "committed 9)" "$tmp/d.err"
check "detect: every consumed message committed (offset 9)" $? "$(grep committed "$tmp/d.err")"
check "detect: unchanged rule keeps its episode over the reload (one t.temp start)" \
  "$([ "$(count "$tmp/d.out" t.temp start)" = 1 ]; echo $?)" "$(cat "$tmp/d.out")"
"$PY" - "$tmp/d.out" > "$tmp/d.chk" <<'EOF'
import json, sys
rs = [json.loads(l) for l in open(sys.argv[1])]
st = [r for r in rs if r["rule.id"] == "t.power" and r["event.type"] == "start"]
en = [r for r in rs if r["rule.id"] == "t.power" and r["event.type"] == "end"]
ok = len(st) == 2 and st[1]["anomaly.value"] == 350 and len(en) == 1 and "reload" in en[0]["event.reason"]
print("ok" if ok else "bad", [(r["@timestamp"], r["event.type"], r["anomaly.value"]) for r in st + en])
EOF
check "detect: changed threshold applies to later samples, old episode ended" "$(grep -q '^ok' "$tmp/d.chk"; echo $?)" "$(cat "$tmp/d.chk")"

report
