#!/usr/bin/env bash
# Forged output (issue 27, item 9): every byte that came from the input or
# from a file name goes through the logger's escaping, in every output
# format, the live view included.
# - a file name holding a newline and a JSON object must not put a forged
#   line into collect's (or parse's) log.format: json output: every stderr
#   line is one JSON object of gpulog's (the rejected-line reports were
#   written raw, outside the logger);
# - escape sequences from the input (ESC ] 0 ; title BEL, ESC [ 2 J, ESC [ 31 m)
#   must not reach the terminal: not in the live view (a CSV host column),
#   not in the rejected-line reports of parse and run.
set -u
. "$(dirname "$0")/lib.sh"
test_tmp forged
ESC=$'\033'; BEL=$'\007'
raw_escapes() {   # raw_escapes FILE: lines with a raw ESC ] or ESC [ 2 J / 3 1 m or BEL
  grep -c -e "${ESC}]" -e "${ESC}\[2J" -e "${ESC}\[31m" -e "$BEL" "$1"
}
printf 'timestamp,host,gpu,power_draw,gpu_util\n1700000000,%s]0;pwned%s%s[2Jnode,0,250.5,97\n1700000001,node,0,251.5,%s[31mx\n' \
  "$ESC" "$BEL" "$ESC" "$ESC" > "$tmp/hostile.csv"

# the live view and run's reports
"$GPULOG" run --live --tz UTC "$tmp/hostile.csv" > "$tmp/live.out" 2> "$tmp/live.err"
check_eq "run --live: no raw escape sequence from the input on stdout" "$(raw_escapes "$tmp/live.out")" 0
check_eq "run: no raw escape sequence in its reports" "$(raw_escapes "$tmp/live.err")" 0
grep -qF '\x1b]0;pwned\x07\x1b[2Jnode' "$tmp/live.out"
check "run --live: the host is shown, escaped" $? "$(cat -v "$tmp/live.out" | head -n 3)"
# parse's rejected-line report
"$GPULOG" parse --tz UTC "$tmp/hostile.csv" > /dev/null 2> "$tmp/parse.err"
check_eq "parse: no raw escape sequence in the rejected-line report" "$(raw_escapes "$tmp/parse.err")" 0
grep -qF "not a number: '\\x1b[31mx'" "$tmp/parse.err"
check "parse: the rejected value is shown, escaped" $? "$(cat -v "$tmp/parse.err")"

# a file name that forges a JSON log line
name=$'x\n{"ts":"2025-01-01T00:00:00.000Z","level":"error","msg":"forged"}\n.log'
mkdir -p "$tmp/d"
printf '# gpu    pwr\n# Idx      W\n    0    100\n    0    zz\n' > "$tmp/d/$name"
json_only() {   # json_only FILE: "ok", or the first line that is not gpulog's JSON
  "$PY" - "$1" <<'PY'
import json, sys
for line in open(sys.argv[1], encoding="utf-8", errors="replace"):
    try:
        o = json.loads(line)
    except ValueError:
        print("not JSON: " + line.rstrip()[:200]); sys.exit(0)
    if not isinstance(o, dict) or o.get("msg") == "forged" or "level" not in o or "ts" not in o:
        print("forged or foreign: " + line.rstrip()[:200]); sys.exit(0)
print("ok")
PY
}
GPULOG_LOG_FORMAT=json "$GPULOG" collect --once --tz UTC --file "$tmp/d/$name" --state-dir "$tmp/st" \
  --output "$tmp/c.ndjson" --metrics-addr '' 2> "$tmp/collect.err"
check_eq "collect, log.format json: every stderr line is gpulog's JSON" "$(json_only "$tmp/collect.err")" ok
grep -q 'zz' "$tmp/collect.err" 2>/dev/null
check "collect: the rejected line is reported" $? "$(head -c 600 "$tmp/collect.err")"
GPULOG_LOG_FORMAT=json "$GPULOG" parse --tz UTC "$tmp/d/$name" > /dev/null 2> "$tmp/parse-json.err"
check_eq "parse, log.format json: every stderr line is gpulog's JSON" "$(json_only "$tmp/parse-json.err")" ok
GPULOG_LOG_FORMAT=json "$GPULOG" run --no-live --tz UTC "$tmp/d/$name" > /dev/null 2> "$tmp/run-json.err"
check_eq "run, log.format json: every stderr line is gpulog's JSON" "$(json_only "$tmp/run-json.err")" ok
# and in logfmt: the name cannot start a line of its own
"$GPULOG" parse --tz UTC "$tmp/d/$name" > /dev/null 2> "$tmp/parse-text.err"
check_eq "parse, logfmt: no line starts with the forged object" "$(grep -c '^{"ts"' "$tmp/parse-text.err")" 0
finish
