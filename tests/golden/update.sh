#!/usr/bin/env bash
# Regenerates the golden outputs of `gpulog parse` over the real corpus:
#   tests/golden/<dir>/<file>.ndjson  (stdout)   tests/golden/<dir>/<file>.stderr
# for every tests/corpus/<dir>/<file>, run from the repository root with the
# relative path (so log.file.path is stable), a pinned read time, zone and host.
# Extra arguments for one file: tests/golden/<dir>/<file>.args (shell words).
# Review the diff by eye against the raw corpus before committing (make golden).
set -euo pipefail
cd "$(dirname "$0")/../.."
GPULOG=${GPULOG:-$PWD/${BUILD:-build}/gpulog}
CORPUS=tests/corpus
[ -x "$GPULOG" ] || { echo "update.sh: $GPULOG not built" >&2; exit 1; }
[ -d "$CORPUS" ] || { echo "update.sh: $CORPUS not found" >&2; exit 1; }
n=0
for f in "$CORPUS"/*/*; do
  [ -f "$f" ] || continue
  rel=${f#"$CORPUS"/}
  case "$rel" in */*) ;; *) continue ;; esac
  dir=tests/golden/${rel%/*}
  base=tests/golden/$rel
  mkdir -p "$dir"
  args=()
  if [ -f "$base.args" ]; then read -r -a args < "$base.args"; fi
  rc=0
  GPULOG_READ_TIME=2025-01-01T00:00:00.000Z "$GPULOG" parse --tz UTC --host golden-host \
    ${args[@]+"${args[@]}"} "$f" > "$base.ndjson" 2> "$base.stderr" || rc=$?
  [ "$rc" = 0 ] || echo "update.sh: $rel: exit status $rc" >&2
  n=$((n + 1))
done
echo "update.sh: regenerated $n golden files under tests/golden/ (review with git diff)"
