#!/usr/bin/env bash
# Golden tests of `gpulog parse` over the real corpus (tests/corpus, with its PROVENANCE.tsv).
# For every corpus file: stdout and stderr must equal tests/golden/<dir>/<file>
# .ndjson/.stderr (made by tests/golden/update.sh, reviewed by eye); a corpus
# file without expected output fails (new captures must be reviewed), and so
# does a golden file whose capture is gone. Every file must also parse with 0
# rejected lines unless tests/golden/<dir>/<file>.allow-rejects says why (tool
# error outputs); such a file must then really have rejected lines.
set -uo pipefail
. "$(dirname "$0")/lib.sh"
CORPUS=tests/corpus
test_tmp golden

[ -d "$CORPUS" ] || fail "corpus: $CORPUS not found"
for f in "$CORPUS"/*/*; do
  [ -f "$f" ] || continue
  rel=${f#"$CORPUS"/}
  base=tests/golden/$rel
  if [ ! -f "$base.ndjson" ] || [ ! -f "$base.stderr" ]; then
    bad "$rel: no expected output (run make golden, review, commit)"; continue
  fi
  args=()
  if [ -f "$base.args" ]; then read -r -a args < "$base.args"; fi
  rc=0
  GPULOG_READ_TIME=2025-01-01T00:00:00.000Z "$GPULOG" parse --tz UTC --host golden-host \
    ${args[@]+"${args[@]}"} "$f" > "$tmp/out" 2> "$tmp/err" || rc=$?
  why=""
  if [ "$rc" != 0 ]; then why="exit status $rc"; fi
  if ! diff -u "$base.ndjson" "$tmp/out" > "$tmp/diff"; then
    why="${why:+$why; }stdout differs from $base.ndjson"
  elif ! diff -u "$base.stderr" "$tmp/err" > "$tmp/diff"; then
    why="${why:+$why; }stderr differs from $base.stderr"
  fi
  rejected=$(sed -n 's/.* \([0-9][0-9]*\) rejected,.*/\1/p' "$tmp/err" | tail -n 1)
  if [ -z "$rejected" ]; then
    why="${why:+$why; }no summary line on stderr"
  elif [ -f "$base.allow-rejects" ]; then
    [ "$rejected" -gt 0 ] || why="${why:+$why; }has .allow-rejects but 0 rejected lines (stale marker?)"
  elif [ "$rejected" != 0 ]; then
    why="${why:+$why; }$rejected rejected line(s): $(grep -m1 -v '^gpulog parse:' "$tmp/err")"
  fi
  if [ -z "$why" ]; then ok "$rel"; else
    bad "$rel: $why"
    [ -s "$tmp/diff" ] && head -n 20 "$tmp/diff" | sed 's/^/     /'
  fi
  : > "$tmp/diff"
done
# golden files whose capture is gone
for g in tests/golden/*/*.ndjson; do
  [ -f "$g" ] || continue
  rel=${g#tests/golden/}; rel=${rel%.ndjson}
  [ -f "$CORPUS/$rel" ] || bad "$g: no corpus file $CORPUS/$rel (stale golden)"
done
report
