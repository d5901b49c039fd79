#!/usr/bin/env bash
# es_bench.sh - bulk indexing throughput (documents/s) of gpulog's ES sink
# (bench/es_push -> sink_es_new: batches, gzip, per-item results) next to
# curl posting the same prebuilt bulk bodies to the same node, one request at
# a time on one connection, in the same run. Target: sink >= 90% of curl.
#
#   bench/es_bench.sh            (needs $OPENSEARCH_URL or services/env.sh)
# Env: ES_BENCH_ENGINE (opensearch, default, or elasticsearch: $ELASTICSEARCH_URL;
#      Elasticsearch's minimal distribution cannot delete the data streams afterwards),
#      ES_BENCH_DOCS (default 40000), ES_BENCH_ROUNDS (default 3; medians),
#      BUILD (default build).
# Prints one line per round and a summary with the medians:
#   es_bench: sink D docs/s, curl D docs/s (gzip bodies) / D docs/s (plain bodies) ...; sink/curl ratio median R
# Every run goes to its own data stream namespace and its _count is checked
# (a run that did not store every document is reported as failed).
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
[ -z "${OPENSEARCH_URL:-}" ] && [ -f services/env.sh ] && . services/env.sh
ENGINE=${ES_BENCH_ENGINE:-opensearch}
case "$ENGINE" in
  opensearch) URL=${OPENSEARCH_URL:-} ;;
  elasticsearch) URL=${ELASTICSEARCH_URL:-} ;;
  *) echo "es_bench: FAILED: ES_BENCH_ENGINE must be opensearch or elasticsearch"; exit 1 ;;
esac
N=${ES_BENCH_DOCS:-40000}
ROUNDS=${ES_BENCH_ROUNDS:-3}
# _nodes/_local, not GET /: Elasticsearch's minimal distribution answers 405 there
if [ -z "$URL" ] || ! curl -fsS -m 5 "$URL/_nodes/_local" >/dev/null 2>&1; then
  echo "es_bench: FAILED: no $ENGINE at '${URL}' (scripts/services.sh up)"; exit 1
fi
for x in "$BUILD/gpulog" "$BUILD/bench/es_push"; do
  [ -x "$x" ] || { echo "es_bench: FAILED: $x not built (make BUILD=$BUILD bench)"; exit 1; }
done
TMP=$(mktemp -d "${TMPDIR:-/tmp}/es_bench.XXXXXX")
cleanup() {   # every run's namespace ends in x$$
  curl -s -o /dev/null -XDELETE "$URL/_data_stream/metrics-gpu.dmon-b*x$$"
  rm -rf "$TMP"
}
trap cleanup EXIT

"$BUILD/gpulog" setup --es "$URL" --namespace default >/dev/null || { echo "es_bench: FAILED: setup"; exit 1; }

# realistic documents: gpulog parse of a generated 8-GPU dmon -o DT stream
python3 - "$N" > "$TMP/dmon.txt" <<'EOF'
import random, sys
n = int(sys.argv[1]); r = random.Random(1)
print("#Date       Time        gpu   pwr gtemp mtemp    sm   mem   enc   dec  mclk  pclk sbecc dbecc   pci rxpci txpci")
print("#YYYYMMDD   HH:MM:SS    Idx     W     C     C     %     %     %     %   MHz   MHz  errs  errs  errs  MB/s  MB/s")
for i in range(n):
    s, g = i // 8, i % 8
    print(" 2025%02d%02d   %02d:%02d:%02d %6d %5d %5d %5d %5d %5d %5d %5d %5d %5d %5d %5d %5d %5d %5d"
          % (3 + s // 2592000, 1 + (s // 86400) % 28, (s // 3600) % 24, (s // 60) % 60, s % 60, g,
             200 + r.randrange(300), 40 + r.randrange(40), 50 + r.randrange(30), r.randrange(101),
             r.randrange(101), 0, 0, 2619, 1980, 0, 0, r.randrange(3), r.randrange(5000), r.randrange(5000)))
EOF
GPULOG_READ_TIME=2025-03-01T00:00:00.000Z TZ=UTC "$BUILD/gpulog" parse --tz UTC --host bench-node \
  "$TMP/dmon.txt" > "$TMP/events.ndjson" 2>/dev/null
ndocs=$(wc -l < "$TMP/events.ndjson")
bytes=$(wc -c < "$TMP/events.ndjson")
echo "es_bench: $ndocs documents, $((bytes / ndocs)) bytes each, $ENGINE node $URL"

# the same bulk bodies the sink builds: create actions, 5 MiB batches
mkbodies() {   # $1 namespace $2 dir
  mkdir -p "$2"
  python3 - "$1" "$2" "$TMP/events.ndjson" <<'EOF'
import gzip, json, sys
ns, out, src = sys.argv[1:]
idx = json.dumps("metrics-gpu.dmon-" + ns)
body, k = [], 0
size = 0
def flush():
    global body, k, size
    if not body: return
    data = "".join(body).encode()
    open("%s/b%05d" % (out, k), "wb").write(data)
    open("%s/b%05d.gz" % (out, k), "wb").write(gzip.compress(data, 1))
    k += 1; body = []; size = 0
for line in open(src):
    line = line.rstrip("\n")
    eid = json.loads(line)["event.id"]
    a = '{"create":{"_index":%s,"_id":"%s"}}\n' % (idx, eid)
    body.append(a + line + "\n"); size += len(a) + len(line) + 1
    if size >= 5 << 20: flush()
flush()
EOF
}

count() {
  curl -s -o /dev/null -XPOST "$URL/metrics-gpu.dmon-$1/_refresh"
  curl -s "$URL/metrics-gpu.dmon-$1/_count" | python3 -c 'import json,sys; print(json.load(sys.stdin).get("count",-1))'
}

now_ms() { date +%s%3N; }

run_curl() {   # $1 label (plain|gzip) $2 round -> prints docs/s
  local ns="bc$1$2x$$" dir="$TMP/bodies.$1.$2" args=() f t0 t1 c
  mkbodies "$ns" "$dir"
  for f in "$dir"/b?????; do
    [ "$1" = gzip ] && args+=(-H "Content-Encoding: gzip" --data-binary "@$f.gz") || args+=(--data-binary "@$f")
    args+=(-H "Content-Type: application/x-ndjson" -H "Expect:" -o /dev/null
           "$URL/_bulk?filter_path=errors,items.*.status,items.*.error.type,items.*.error.reason" --next)
  done
  unset 'args[${#args[@]}-1]'
  t0=$(now_ms)
  curl -sS "${args[@]}" || echo "es_bench: curl failed" >&2
  t1=$(now_ms)
  c=$(count "$ns")
  [ "$c" = "$ndocs" ] || { echo "es_bench: curl $1 run stored $c of $ndocs" >&2; echo 0; return; }
  echo $(( ndocs * 1000 / (t1 - t0 > 0 ? t1 - t0 : 1) ))
}

run_sink() {   # $1 round -> prints docs/s
  local ns="bsink$1x$$" out c
  out=$("$BUILD/bench/es_push" -q --es "$URL" --es-namespace "$ns" --index-metrics \
        --es-batch-age-ms 50 "$TMP/events.ndjson")
  echo "$out" | sed 's/^/es_bench:   sink /' >&2
  c=$(count "$ns")
  [ "$c" = "$ndocs" ] || { echo "es_bench: sink run stored $c of $ndocs" >&2; echo 0; return; }
  echo "$out" | sed -n 's/.*docs_per_s=\([0-9]*\).*/\1/p'
}

# warm-up (JIT, first index creation), not counted
w=$(run_curl gzip 0); echo "es_bench: warm-up curl gzip $w docs/s"
# rounds alternate the order (sink first, then curl first); each round gives
# the ratio sink / curl gzip (the same gzip bodies reach the server); the
# figure is the median ratio, robust to a busy machine
ratios=(); sinks=(); gzips=(); plains=()
for r in $(seq 1 "$ROUNDS"); do
  if [ $((r % 2)) = 1 ]; then
    s=$(run_sink "$r"); g=$(run_curl gzip "$r")
  else
    g=$(run_curl gzip "$r"); s=$(run_sink "$r")
  fi
  p=$(run_curl plain "$r")
  echo "es_bench: round $r: sink $s docs/s, curl gzip $g docs/s, curl plain $p docs/s"
  sinks+=("$s"); gzips+=("$g"); plains+=("$p")
  ratios+=("$(python3 -c "print('%.3f' % ($s / $g if $g else 0))")")
done
med() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
echo "es_bench: $ENGINE: sink $(med "${sinks[@]}") docs/s, curl $(med "${gzips[@]}") docs/s (gzip bodies) / $(med "${plains[@]}") docs/s (plain bodies) (medians of $ROUNDS rounds); sink/curl ratio median $(med "${ratios[@]}") (rounds: ${ratios[*]}; target >= 0.90)"
[ "$(med "${sinks[@]}")" != 0 ]
