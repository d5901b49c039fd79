#!/usr/bin/env bash
# needs: opensearch
# t_run_es.sh - `gpulog run --es` against the REAL OpenSearch of
# scripts/services.sh ($OPENSEARCH_URL; fails when it is unset or
# unreachable): a small generated dmon trace (tools/gentrace.py) with
# --index-metrics puts every parsed metric event into metrics-gpu.dmon-NS
# (the ES output takes the metric stream; the NDJSON output on stdout still
# gets the records only: anomalies and incidents), and without --index-metrics none.
# ~5 s. Ends with "N passed, N failed".
set -uo pipefail
. "$(dirname "$0")/lib.sh"
G=$GPULOG
[ -z "${OPENSEARCH_URL:-}" ] && [ -f services/env.sh ] && . services/env.sh
URL=${OPENSEARCH_URL:-}
curl -fsS -m 5 "$URL/" >/dev/null 2>&1; check "OpenSearch answers at '${URL}'" $?
[ "$failed" = 0 ] || finish

test_tmp t_run_es
ID=$$$RANDOM
NS=runes$ID NS2=runesno$ID
on_exit() {   # lib.sh's exit trap calls this first
  for n in "$NS" "$NS2"; do
    for s in metrics-gpu.dmon logs-gpu.xid logs-gpu.anomaly; do
      curl -s -o /dev/null -XDELETE "$URL/_data_stream/$s-$n"
    done
  done
}
count() {   # $1 data stream kind $2 namespace
  curl -s -o /dev/null -XPOST "$URL/$1-$2/_refresh"
  curl -s "$URL/$1-$2/_count" | $PY -c 'import json,sys; print(json.load(sys.stdin).get("count",0))'
}

$PY tools/gentrace.py --seed 5 --hours 0.5 --gpus 2 --host runes-node -o "$tmp/dmon.log" -l "$tmp/labels.json" >/dev/null 2>&1
nmetrics=$("$G" parse --host runes-node "$tmp/dmon.log" 2>/dev/null | wc -l)
[ "$nmetrics" -gt 1000 ] || fail "input: $nmetrics dmon events (tools/gentrace.py)"
"$G" setup --es "$URL" --namespace "$NS" > "$tmp/setup.out" 2>&1; check "gpulog setup (namespace $NS)" $? "$(tail -n 5 "$tmp/setup.out")"
"$G" setup --es "$URL" --namespace "$NS2" > "$tmp/setup2.out" 2>&1; check "gpulog setup (namespace $NS2)" $?

timeout 120 "$G" run --no-live --host runes-node --es "$URL" --es-namespace "$NS" --index-metrics \
  --es-batch-age-ms 100 "$tmp/dmon.log" > "$tmp/records.ndjson" 2> "$tmp/run.err"
check "gpulog run --es --index-metrics exits 0" $? "$(tail -n 5 "$tmp/run.err")"
m=$(count metrics-gpu.dmon "$NS")
check_eq "metrics-gpu.dmon-$NS holds every metric event" "$m" "$nmetrics"
nrec=$(wc -l < "$tmp/records.ndjson")
a=$(count logs-gpu.anomaly "$NS")
check_eq "logs-gpu.anomaly-$NS holds the $nrec records of stdout" "$a" "$nrec"
[ "$nrec" -gt 0 ] && ! grep -vq '"event.kind":"alert"' "$tmp/records.ndjson"
check "stdout has the $nrec records (alerts) only, no metric event" $?

timeout 120 "$G" run --no-live --host runes-node --es "$URL" --es-namespace "$NS2" \
  --es-batch-age-ms 100 "$tmp/dmon.log" > /dev/null 2> "$tmp/run2.err"
check "gpulog run --es without --index-metrics exits 0" $? "$(tail -n 5 "$tmp/run2.err")"
check_eq "without --index-metrics no metric event is indexed" "$(count metrics-gpu.dmon "$NS2")" 0
finish
