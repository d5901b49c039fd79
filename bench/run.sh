#!/usr/bin/env bash
# The parse benchmark (make bench): generates a realistic 8-GPU
# `nvidia-smi dmon -o DT -s pucvmet` capture under bench/out/ (reused when
# present), then measures in the same run, best of 3:
#   gpulog parse --tz UTC FILE > /dev/null
#   floor FILE > /dev/null      (fgets + split + printf JSON: the baseline)
# and reports lines/s, MB/s, the gpulog/floor ratio and gpulog's peak RSS.
# Targets: ratio <= 1.5, peak RSS < 8 MiB.   BENCH_LINES=N overrides the size.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
B=$BUILD/bench
LINES=${BENCH_LINES:-2400000}
OUTD=bench/out
DATA=$OUTD/dmon-DT-pucvmet-8gpu-$LINES.txt
for x in "$BUILD/gpulog" "$B/gen_dmon" "$B/floor" "$B/runstat"; do
  [ -x "$x" ] || { echo "bench: $x not built (make BUILD=$BUILD bench)" >&2; exit 1; }
done
mkdir -p "$OUTD"
if [ ! -s "$DATA" ]; then
  echo "bench: generating $DATA ($LINES data lines)"
  "$B/gen_dmon" "$DATA.tmp" "$LINES" 8 && mv "$DATA.tmp" "$DATA"
fi
bytes=$(stat -c %s "$DATA")
nlines=$((LINES + 2))

best() {   # best CMD... : best of 3 wall and CPU times; sets best_s, best_cpu, rss_kb, anon_kb
  local w c r an i out
  best_s=""; best_cpu=""; rss_kb=0; anon_kb=0
  for i in 1 2 3; do
    out=$("$B/runstat" "$@" 2> "$OUTD/stderr.txt")
    w=${out#wall_s=}; w=${w%% *}
    c=${out#*cpu_s=}; c=${c%% *}
    r=${out#*maxrss_kb=}; r=${r%% *}
    an=${out#*anon_kb=}; an=${an%% *}
    case "$out" in *status=0) ;; *) echo "bench: $* failed: $out" >&2; cat "$OUTD/stderr.txt" >&2; exit 1 ;; esac
    if [ -z "$best_s" ] || awk -v a="$w" -v b="$best_s" 'BEGIN{exit !(a<b)}'; then best_s=$w; fi
    if [ -z "$best_cpu" ] || awk -v a="$c" -v b="$best_cpu" 'BEGIN{exit !(a<b)}'; then best_cpu=$c; fi
    if [ "$r" -gt "$rss_kb" ]; then rss_kb=$r; fi
    if [ "$an" -gt "$anon_kb" ]; then anon_kb=$an; fi
  done
}

# sanity: gpulog accepts every data line of the generated file
"$BUILD/gpulog" parse --tz UTC "$DATA" 2> "$OUTD/stderr.txt" > /dev/null
grep -q " $nlines lines, $LINES events, 0 rejected" "$OUTD/stderr.txt" \
  || { echo "bench: unexpected parse summary: $(tail -n 1 "$OUTD/stderr.txt")" >&2; exit 1; }

best "$BUILD/gpulog" parse --tz UTC "$DATA"; g_s=$best_s; g_cpu=$best_cpu; g_rss=$rss_kb; g_anon=$anon_kb
best "$B/floor" "$DATA"; f_s=$best_s; f_cpu=$best_cpu; f_rss=$rss_kb; f_anon=$anon_kb
"$B/runstat" /bin/true > "$OUTD/runstat-floor.txt"
probe_rss=$(sed 's/.*maxrss_kb=\([0-9]*\).*/\1/' "$OUTD/runstat-floor.txt")

awk -v lines="$nlines" -v bytes="$bytes" -v g="$g_s" -v f="$f_s" -v gc="$g_cpu" -v fc="$f_cpu" \
    -v grss="$g_rss" -v frss="$f_rss" -v ganon="$g_anon" -v fanon="$f_anon" \
    -v probe="$probe_rss" -v file="$DATA" '
BEGIN {
  mb = bytes / 1e6
  printf "\nparse benchmark: %s\n", file
  printf "  %d lines (8 GPUs, -o DT -s pucvmet), %.1f MB; best of 3 runs each\n\n", lines, mb
  printf "  %-28s %8s %8s %13s %9s %12s %12s\n", "program", "wall s", "CPU s", "lines/s", "MB/s", "peak RSS", "anon RSS"
  printf "  %-28s %8.3f %8.3f %13.0f %9.1f %8.1f MiB %8.1f MiB\n", "gpulog parse --tz UTC", g, gc, lines / g, mb / g, grss / 1024, ganon / 1024
  printf "  %-28s %8.3f %8.3f %13.0f %9.1f %8.1f MiB %8.1f MiB\n", "floor (fgets+split+printf)", f, fc, lines / f, mb / f, frss / 1024, fanon / 1024
  printf "  (lines/s and MB/s from wall time; CPU s = user+sys, steadier on a shared machine;\n"
  printf "   peak RSS = ru_maxrss incl. shared-library pages; anon RSS = peak RssAnon, sampled)\n"
  ratio = g / f
  printf "\n  ratio gpulog/floor: %.2f wall, %.2f CPU   (target <= 1.5: %s)\n", ratio, gc / fc, ratio <= 1.5 ? "met" : "NOT met"
  printf "  gpulog peak RSS:    %.1f MiB (target < 8 MiB: %s; measuring wrapper alone: %.1f MiB)\n", \
         grss / 1024, grss < 8192 ? "met" : "NOT met", probe / 1024
}'

# ---------------------------------------------------------------- the other benchmarks
echo
echo "detector engine (one core, default GPU profile):"
"$B/detect_bench"

# The generic detector (--profile generic: the seasonal likelihood rule on
# every field) per metric update and state per series, next to two
# baselines measured in the same run on the same samples: the plain
# likelihood detector and a rolling z-score over a 64-sample window
# (docs/detectors.md, "Fewer, better alarms": the figures before issue 26).
echo
echo "generic detector (one core, --profile generic, 5-minute host metrics):"
"$B/generic_bench"
# gpulog fleet's correlator (detect/fleet.c) on one core: anomalies-topic records/s
# next to decoding them alone (the baseline, same run), and its memory at the caps.
echo
echo "fleet correlator (one core, default fleet.* settings):"
"$B/fleet_bench"

# One /metrics scrape with the GPU table (core/gpumetrics.c) of 8 GPUs (a node) and
# of 10,000 GPUs (detect with gpu_metrics: on): render time, bytes, memory per GPU
# (issue 13 target: 10,000 GPUs in < 100 ms).
echo
echo "/metrics scrape with the GPU table (dcgm-exporter names):"
"$B/metrics_bench" 8 200 || rc_report=1
"$B/metrics_bench" 10000 10 || rc_report=1

# The report page: a day of 8 GPUs at 1 s into one HTML page (< 3 MB, < 2 s
# on one core), the page stage alone (report_bench: events in memory) and
# end to end (gpulog report on a generated day of dmon text: parse, detect, page).
echo
echo "report page (one core), a day of 8 GPUs at 1 s:"
"$B/report_bench" 86400 8 "$OUTD/report-bench.html" || rc_report=1
DAY=$OUTD/dmon-DT-pucvmet-8gpu-day.txt
if [ ! -s "$DAY" ]; then "$B/gen_dmon" "$DAY.tmp" 691200 8 && mv "$DAY.tmp" "$DAY"; fi
best "$BUILD/gpulog" report --tz UTC -o "$OUTD/report-day.html" "$DAY"
awk -v w="$best_s" -v c="$best_cpu" -v rss="$rss_kb" -v sz="$(stat -c %s "$OUTD/report-day.html")" 'BEGIN {
  printf "  end to end, gpulog report of the day as dmon text (691,200 lines, parse + detectors + page), best of 3:\n"
  printf "    %.2f s wall, %.2f s CPU, peak RSS %.1f MiB, page %.2f MB\n", w, c, rss / 1024, sz / 1e6 }'

# Many idle followed files (collect --file GLOB): 1,000 and 10,000 files next
# to one file and to tail -F of the same files (issue 27: 10,000 < 2 % of a core).
echo
bash bench/files_bench.sh || rc_report=1
# The metrics endpoint under slow readers and a slowloris: RSS with 0 / 50 /
# 200 slow readers of a 10,000-GPU page, /healthz latency (issue 27 item 5).
echo
python3 bench/http_bench.py || rc_report=1

# The collector and ES sink benchmarks run against the real Kafka and
# OpenSearch of scripts/services.sh (started here if needed, stopped after).
started=0
if ! scripts/services.sh status >/dev/null 2>&1; then
  scripts/services.sh up || { echo "bench: services failed to start" >&2; exit 1; }
  started=1
fi
# shellcheck disable=SC1091
. services/env.sh
rc=${rc_report:-0}
echo
bash bench/collect_bench.sh || rc=1
echo
bash bench/detect_kafka_bench.sh || rc=1
echo
bash bench/es_bench.sh || rc=1
echo
ES_BENCH_ENGINE=elasticsearch bash bench/es_bench.sh || rc=1
# line written -> anomaly searchable, collect -> Kafka -> detect --es, default
# settings, stage by stage (about 60 s for both; target p99 <= 2 s)
echo
GPULOG=$BUILD/gpulog python3 bench/latency_bench.py --gpus 8 --ticks 24 --engine elasticsearch || rc=1
echo
GPULOG=$BUILD/gpulog python3 bench/latency_bench.py --gpus 512 --faults-per-tick 2 --ticks 20 --engine opensearch || rc=1
[ "$started" = 1 ] && scripts/services.sh down >/dev/null
exit $rc
