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
CSV_Q=tests/fixtures/csv/query-looped-2gpu.csv   # 8 events
sanitizer_free() { ! grep -qE 'AddressSanitizer|runtime error:|LeakSanitizer' "$1"; }
# memcap: a 2 GB memory limit for what follows in a subshell (ASan reserves
# terabytes of address space, so there its own RSS limit)
if grep -qa __asan_init "$GPULOG"; then
  memcap() { export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}hard_rss_limit_mb=2000"; }
else memcap() { ulimit -v 2000000; }; fi

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
# run_live NAME [noquit]: `run --detectors $tmp/NAME.yaml` (extends gpu)
# reading a FIFO held open on fd 7, fed the flat CSV, stdout in NAME.out,
# stderr in NAME.err; its pid in rpid once it has started. noquit: started
# with SIGQUIT ignored, as a shell starts its background jobs
run_live() {
  printf 'extends: gpu\n' >"$tmp/$1.yaml"
  mkfifo "$tmp/$1.in"
  ( memcap; [ "${2:-}" = noquit ] && trap '' QUIT
    exec "$GPULOG" run --detectors "$tmp/$1.yaml" --no-live - <"$tmp/$1.in" >"$tmp/$1.out" 2>"$tmp/$1.err" ) &
  pids+=($!); rpid=$!
  exec 7>"$tmp/$1.in"
  cat "$tmp/flat.csv" >&7
  wait_for 50 grep -q 'msg=started' "$tmp/$1.err"
}
run_live live
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

# ------------- item 3: YAML bombs by bytes; long files; signals during loads
# (an old binary took 4 GB and 16-29 s on the byte bomb: each runs under
# memcap)
"$PY" -c "
import sys
sys.stdout.write('extends: gpu\ndescription: &a \"' + 'x' * 400000 + '\"\nrules:\n  - id: gpu.hang\n    name: [' + ', '.join(['*a'] * 10000) + ']\n')
" >"$tmp/bytebomb.yaml"
start=$(date +%s%N)
out=$( (memcap; timeout 20 "$GPULOG" run --no-live --detectors "$tmp/bytebomb.yaml" "$tmp/flat.csv") 2>&1 >/dev/null); rc=$?
ms=$(( ($(date +%s%N) - start) / 1000000 ))
check "run --detectors: one 400 KB scalar aliased 10,000 times (4 GB) is refused at once (${ms} ms), exit 2" \
  "$([ "$rc" = 2 ] && grep -q 'bytebomb.yaml:1:1: aliases expand to more than 4194304 bytes of text: refused' <<<"$out"; echo $?)" "rc=$rc: $out"
"$PY" -c "
import sys
sys.stdout.write('x: &a \"' + 'x' * 400000 + '\"\nkafka:\n  properties: {' + ', '.join('k%d: *a' % i for i in range(10000)) + '}\n')
" >"$tmp/cfgbomb.yaml"
out=$( (memcap; timeout 20 "$GPULOG" config check "$tmp/cfgbomb.yaml") 2>&1); rc=$?
check "config check: the same bomb in a configuration file is refused (exit 2)" \
  "$([ "$rc" = 2 ] && grep -q 'cfgbomb.yaml:1:1: aliases expand to more than 4194304 bytes of text' <<<"$out"; echo $?)" "rc=$rc: $out"
"$PY" -c "
import sys
sys.stdout.write('extends: gpu\nrules:\n' + ''.join('  - {id: r%d, detector: threshold, metric: m%d, params: {high: 1}}\n' % (i, i % 40) for i in range(10000)))
" >"$tmp/rules10k.yaml"
out=$( (memcap; timeout 20 "$GPULOG" run --no-live --detectors "$tmp/rules10k.yaml" "$tmp/flat.csv") 2>&1 >/dev/null); rc=$?
check "a 10,000-rule detector file without aliases is refused as too long, where, not as an alias problem" \
  "$([ "$rc" = 2 ] && grep -q 'rules10k.yaml:9093:38: more than 100000 nodes (keys, values and list items): refused' <<<"$out" && ! grep -q alias <<<"$out"; echo $?)" "rc=$rc: $out"
# SIGHUP with the byte bomb: refused, the running rules stay; SIGTERM right after ends it
run_live live2
cp "$tmp/bytebomb.yaml" "$tmp/live2.yaml"
kill -HUP "$rpid"
sleep 0.2
start=$(date +%s%N)
kill -TERM "$rpid"
if wait_for 30 eval '! kill -0 '"$rpid"' 2>/dev/null'; then
  ms=$(( ($(date +%s%N) - start) / 1000000 ))
  ok "run: SIGTERM just after a SIGHUP with the byte bomb ends it within 3 s (${ms} ms)"
else bad "run: SIGTERM just after a SIGHUP with the byte bomb ends it within 3 s" "$(cat "$tmp/live2.err")"; fi
check "run: that reload was refused and said why" \
  "$(grep -q 'reload refused.*aliases expand to more than 4194304 bytes' "$tmp/live2.err" && sanitizer_free "$tmp/live2.err"; echo $?)" "$(cat "$tmp/live2.err")"
exec 7>&-

# -------- item 8: fractions in integer fields, -H '', dead letters, max_series
cat >"$tmp/frac.csv" <<'CSV'
timestamp,host,gpu,power_draw,temp_gpu,temp_mem,gpu_util,mem_util,utilization_enc,memory_used,memory_total,clock_sm,clock_mem,fan_speed,ecc_corrected,ecc_uncorrected
1700000000,h,0,250.5,100.5,80.25,45.5,12.5,1.5,1000.5,81920.4,1410.5,1593.5,50.5,1.5,0.5
1700000001,h,1,250,100,80,45,12,1,1000,81920,1410,1593,50,1,0
CSV
printf '# gpu    pwr  gtemp  mtemp     sm    mem    enc    dec   mclk   pclk     fb   bar1  sbecc  dbecc    pci  rxpci  txpci\n# Idx      W      C      C      %%      %%      %%      %%    MHz    MHz     MB     MB   errs   errs   errs   MB/s   MB/s\n    0  73.5  34.5  38.5  10.5   0.5    0.5     0.5   2619.5  345.5    544.5      4.5     15.5      0.5     36.5      3.5      2.5\n' >"$tmp/frac.dmon"
printf 'timestamp, index, name, utilization.gpu [%%], memory.used [MiB], power.draw [W], temperature.gpu\n2024/01/16 14:44:16.977, 0, A100, 97.5 %%, 61234.5 MiB, 391.42 W, 71.5\n2024/01/16 14:44:16.977, 1.5, A100, 97 %%, 61234 MiB, 391.42 W, 71\n' >"$tmp/frac.query"
for f in frac.csv frac.dmon frac.query; do "$GPULOG" parse --tz UTC "$tmp/$f" >>"$tmp/frac.ndjson" 2>>"$tmp/frac.err"; done
check_cmd "parse: fractions in CSV, dmon and query rows give events that all validate (widened gauges, rounded counts and sizes)" \
  "$PY" - "$tmp/frac.ndjson" <<'PY'
import json, sys
sys.path.insert(0, "tests")
from lib import schema_first_error
first_error = schema_first_error(json.load(open("schemas/event.schema.json")))
evs = [json.loads(l) for l in open(sys.argv[1])]
assert len(evs) == 4, len(evs)
for e in evs:
    err = first_error(e)
    assert err is None, err
e = evs[0]
assert e["gpu.temperature.gpu"] == 100.5 and e["gpu.utilization.gpu.pct"] == 45.5 and e["gpu.clock.streaming_multiprocessor_frequency"] == 1410.5, e
assert e["gpu.memory.framebuffer.used_size"] == 1001 and e["gpu.memory.framebuffer.total_size"] == 81920, e
assert e["gpu.ecc.corrected.volatile.count"] == 2 and e["gpu.ecc.uncorrected.volatile.count"] == 1, e
d = evs[2]
assert d["gpu.pcie.replay"] == 37 and d["gpu.memory.bar1.used_size"] == 5 and d["gpu.pcie.rx.throughput"] == 3.5, d
raw = open(sys.argv[1]).read()
assert '"gpu.memory.framebuffer.used_size":1001,' in raw, "a rounded size is an integer on the wire"
PY
check "parse: a fractional gpu.index is refused with the reason, the rounding said" \
  "$(grep -q 'gpu.index 1.5 is not a whole number (an identifier): event refused' "$tmp/frac.err" && grep -q 'fractions rounded to whole numbers' "$tmp/frac.err"; echo $?)" "$(cat "$tmp/frac.err")"
check_cmd "the schema's integer fields are exactly parsers/parser.c's whole-number lists, and gauges are numbers" "$PY" - <<'PY'
import json, re
s = json.load(open("schemas/event.schema.json")); d = s["$defs"]
def typ(v):
    r = v.get("$ref", "").split("/")[-1]
    return v.get("type", d.get(r, {}).get("type"))
ints = {k for k, v in s["properties"].items() if typ(v) == "integer"}
src = open("parsers/parser.c").read()
listed = set(re.findall(r'WK\("([a-z0-9_.]+)", WHOLE_(?:ROUND|ID)\)', src))
by_suffix = {k for k in ints if k.endswith("_size") or k.endswith(".count")}
assert ints == listed | by_suffix, (ints ^ (listed | by_suffix))
for k, v in s["properties"].items():
    if k.startswith("gpu.temperature.") or k.endswith(".pct") or "frequency" in k or k.endswith(".throughput"):
        assert typ(v) == "number", k
PY
host=$(hostname)
p=$("$GPULOG" parse -H '' "$CSV_Q" 2>/dev/null | head -n 1 | sed -n 's/.*"host.name":"\([^"]*\)".*/\1/p')
r=$("$GPULOG" parse --host "" "$CSV_Q" 2>/dev/null | head -n 1 | sed -n 's/.*"host.name":"\([^"]*\)".*/\1/p')
check "parse -H '' writes the machine's name as run -H '' does (was \"host.name\":\"\")" \
  "$([ -n "$p" ] && [ "$p" = "$host" ] && [ "$r" = "$host" ]; echo $?)" "parse=$p --host=$r machine=$host"
# an Elasticsearch that refuses every document (400): run dead-letters them all
esbad=$(free_port)
"$PY" - "$esbad" <<'PY' &
import gzip, http.server, json, sys
class H(http.server.BaseHTTPRequestHandler):
    def answer(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n) if n else b""
        if self.headers.get("Content-Encoding") == "gzip": body = gzip.decompress(body)
        if self.path.startswith("/_bulk"):
            acts = [l for i, l in enumerate(body.splitlines()) if i % 2 == 0 and l.strip()]
            out = {"took": 1, "errors": True, "items": [{"create": {"status": 400, "error": {
                "type": "mapper_parsing_exception", "reason": "refused by the test"}}} for _ in acts]}
        else:
            out = {"version": {"number": "8.13.0"}, "tagline": "You Know, for Search"}
        b = json.dumps(out).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(b)))
        self.end_headers()
        self.wfile.write(b)
    do_GET = do_PUT = do_POST = do_HEAD = answer
    def log_message(self, *a): pass
http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
PY
pids+=($!)
wait_for 50 curl -s -o /dev/null "http://127.0.0.1:$esbad/" || bad "the refusing Elasticsearch stub starts"
out=$(timeout 60 "$GPULOG" run --no-live --es "http://127.0.0.1:$esbad" --deadletter "$tmp/dl.ndjson" data/demo/dgx-07.dmon.txt 2>&1 >"$tmp/dl.out"); rc=$?
n=$(wc -l <"$tmp/dl.out")   # the records (NDJSON on stdout too): each one dead-lettered by Elasticsearch
check "run: every record dead-lettered by Elasticsearch exits 1 and says so (was 0)" \
  "$([ "$rc" = 1 ] && [ "$n" -gt 10 ] && grep -q "gpulog run: $n records were refused by an output for good and dead-lettered" <<<"$out" && [ "$(wc -l <"$tmp/dl.ndjson")" = "$n" ]; echo $?)" "rc=$rc records=$n: $(tail -n 3 <<<"$out")"
# max_series below the GPUs that report: said once, counted
"$PY" -c "
import sys
w = sys.stdout.write
w('timestamp,host,gpu,power_draw,gpu_util,temp_gpu,clock_sm,memory_used\n')
for t in range(30):
    for g in range(20): w('%d,h,%d,250,97,60,1400,1000\n' % (1700000000 + t, g))
" >"$tmp/twenty.csv"
printf 'extends: gpu\nmax_series: 40\n' >"$tmp/cap40.yaml"
mport=$(free_port)
"$GPULOG" run --no-live --detectors "$tmp/cap40.yaml" --metrics-addr "127.0.0.1:$mport" - <"$tmp/twenty.csv" >/dev/null 2>"$tmp/cap.err" &
cpid=$!; pids+=($cpid)
wait "$cpid"
check "run: max_series below the active series is said once (log) and in the summary" \
  "$([ "$(grep -c 'max_series reached: GPUs that still report are evicted' "$tmp/cap.err")" = 1 ] && grep -q 'max_series 40 is below the GPUs.* series: [0-9]* evictions of GPUs still reporting' "$tmp/cap.err"; echo $?)" "$(cat "$tmp/cap.err")"

# ------ item 10: one rule of what is secret; check validates as run does
cat >"$tmp/sec.yaml" <<'YAML'
kafka:
  brokers: 127.0.0.1:9092
  properties:
    ssl.keystore.key: "-----BEGIN PRIVATE KEY-----keyS3CR3T"
    sasl.oauthbearer.extensions: "logicalCluster=lkc-1,pool=extS3CR3T"
    ssl.keystore.location: /etc/gpulog/ks.p12
YAML
out=$("$GPULOG" config print "$tmp/sec.yaml" 2>&1)
check "config print masks ssl.keystore.key and sasl.oauthbearer.extensions (were in clear), keeps the keystore's path" \
  "$(! grep -q 'S3CR3T' <<<"$out" && grep -q 'ssl.keystore.key: "\*\*\*"' <<<"$out" && grep -q 'sasl.oauthbearer.extensions: "\*\*\*"' <<<"$out" && grep -q 'ssl.keystore.location: /etc/gpulog/ks.p12' <<<"$out"; echo $?)" "$out"
out=$(GPULOG_KAFKA_PROPERTIES='sasl.password=pa,ssS3CR3T,word,security.protocol=SASL_SSL' "$GPULOG" config print 2>&1)
check "GPULOG_KAFKA_PROPERTIES: a comma in a password stays in it (masked whole), the next property still read" \
  "$(! grep -q 'S3CR3T' <<<"$out" && grep -q 'sasl.password: "\*\*\*"' <<<"$out" && grep -q 'security.protocol: SASL_SSL' <<<"$out"; echo $?)" "$out"
out=$(GPULOG_KAFKA_PROPERTIES='pwS3CR3T,security.protocol=SSL' "$GPULOG" config print 2>&1); rc=$?
check "GPULOG_KAFKA_PROPERTIES not starting with key=: refused without quoting it (it echoed the rest)" \
  "$([ "$rc" = 2 ] && grep -q 'GPULOG_KAFKA_PROPERTIES: kafka.properties: expected key=value' <<<"$out" && ! grep -q 'S3CR3T' <<<"$out"; echo $?)" "rc=$rc: $out"
printf 'elasticsearch:\n  url: ftp://elastic:urlS3CR3T@es.example:21\n' >"$tmp/ftp.yaml"
out=$("$GPULOG" config check "$tmp/ftp.yaml" 2>&1); rc=$?
check "config check refuses an ftp:// Elasticsearch URL at FILE:LINE:COL, its password masked (was: ok)" \
  "$([ "$rc" = 2 ] && grep -q "ftp.yaml:2:8: elasticsearch.url: 'ftp://\*\*\*@es.example:21' is not an http:// or https:// URL" <<<"$out" && ! grep -q S3CR3T <<<"$out"; echo $?)" "rc=$rc: $out"
out2=$("$GPULOG" run --config "$tmp/ftp.yaml" --no-live "$tmp/flat.csv" 2>&1 >/dev/null); rc2=$?
check "run refuses the same file with the same message" \
  "$([ "$rc2" = 2 ] && grep -q "ftp.yaml:2:8: elasticsearch.url: 'ftp://\*\*\*@es.example:21' is not an http" <<<"$out2"; echo $?)" "rc=$rc2: $out2"
out=$(GPULOG_ELASTICSEARCH_URL=ftp://es.example "$GPULOG" config print 2>&1); rc=$?
check "GPULOG_ELASTICSEARCH_URL=ftp://... is refused by config print as by run" \
  "$([ "$rc" = 2 ] && grep -q 'is not an http:// or https:// URL' <<<"$out"; echo $?)" "rc=$rc: $out"
printf 'elasticsearch:\n  namespace: Prod-1\n' >"$tmp/ns.yaml"
out=$("$GPULOG" config check "$tmp/ns.yaml" 2>&1); rc=$?
check "config check refuses a namespace run refuses (was: ok)" \
  "$([ "$rc" = 2 ] && grep -q "ns.yaml:2:14: elasticsearch.namespace: 'Prod-1' is not a valid namespace" <<<"$out"; echo $?)" "rc=$rc: $out"

# ------------------------------- smaller: SIGQUIT; setup's time limits said
# (started with SIGQUIT ignored, as a shell starts its background jobs and as
# the issue's run was: gpulog must install its own handler)
run_live quit noquit
start=$(date +%s%N)
kill -QUIT "$rpid"
if wait_for 30 eval '! kill -0 '"$rpid"' 2>/dev/null'; then
  ms=$(( ($(date +%s%N) - start) / 1000000 ))
  ok "run: SIGQUIT stops it like SIGTERM (${ms} ms; was ignored)"
else bad "run: SIGQUIT stops it like SIGTERM (was ignored)" "$(cat "$tmp/quit.err")"; kill -TERM "$rpid" 2>/dev/null; fi
exec 7>&-
check "run: after SIGQUIT the summary says it was stopped by a signal, no core, no sanitizer report" \
  "$(grep -q '(stopped by a signal)' "$tmp/quit.err" && sanitizer_free "$tmp/quit.err"; echo $?)" "$(cat "$tmp/quit.err")"
out=$("$GPULOG" setup --help 2>&1)
check "setup --help says its time limits (60 s per request, 10 s to connect, 120 s for the Kibana import)" \
  "$(grep -q 'gives up after 60 s (10 s to' <<<"$out" && grep -q 'Kibana import after 120 s' <<<"$out"; echo $?)" "$out"
check "README and schemas/es/README.md say setup's time limits" \
  "$(grep -q 'gives up after 60 s (10 s to' README.md && grep -q 'gives up after 60 s (10 s to connect)' schemas/es/README.md; echo $?)"

finish
