#!/usr/bin/env bash
# The command-line contract of `gpulog parse`: exit statuses (0 with rejected
# lines, 1 on I/O errors, 2 on usage errors), "FILE:LINE: reason" reports and
# the summary line on stderr, --help and --version, stdin as "-", bounded
# memory on a 3 MB line, and large piped input that must not hang.
set -uo pipefail
. "$(dirname "$0")/lib.sh"
test_tmp parse-cli
run() {     # run ARGS... : stdout -> $tmp/out, stderr -> $tmp/err, status -> $rc
  rc=0; "$GPULOG" parse "$@" > "$tmp/out" 2> "$tmp/err" || rc=$?
}
hwm_kb() {  # peak RSS (VmHWM, KiB) of `gpulog parse -` after it has read file $1
  # (a wrapper's getrusage would count the forking parent's pages before exec)
  local fifo=$tmp/fifo pid v
  rm -f "$fifo"; mkfifo "$fifo"
  "$GPULOG" parse --tz UTC - < "$fifo" > /dev/null 2>&1 &
  pid=$!
  exec 3> "$fifo"
  cat "$1" >&3
  sleep 0.5
  v=$(awk '/^VmHWM/ {print $2}' "/proc/$pid/status" 2>/dev/null)
  exec 3>&-
  wait "$pid"
  echo "${v:-0}"
}

printf '# gpu    pwr  gtemp \n# Idx      W      C \n    0    100     50 \n\n    1    101 \n    1    101     51 \n    2    102     52 \n' > "$tmp/d.txt"
export GPULOG_READ_TIME=2025-01-01T00:00:00.000Z

# exit 0 with a rejected line, its report and the summary
run --tz UTC --host h "$tmp/d.txt"
check "exit 0 with rejected lines" "$rc" "status $rc"
grep -qE "^$tmp/d.txt:5: expected 3 fields as in the header, got 2\$" "$tmp/err"
check "FILE:LINE: reason on stderr" $? "$(head -n 3 "$tmp/err")"
grep -qE "^gpulog parse: $tmp/d.txt: 7 lines, 3 events, 1 rejected, 3 skipped \(headers, blanks\)\$" "$tmp/err"
check "summary line counts" $? "$(tail -n 1 "$tmp/err")"
[ "$(wc -l < "$tmp/out")" = 3 ]
check "one JSON line per event" $? "$(wc -l < "$tmp/out") lines"
/usr/bin/python3 -c 'import json,sys; [json.loads(l) for l in open(sys.argv[1])]' "$tmp/out"
check "stdout is NDJSON" $?
grep -q '"log.file.path":"'"$tmp"'/d.txt"' "$tmp/out" && grep -q '"host.name":"h"' "$tmp/out"
check "log.file.path and host.name set" $?

run --quiet --tz UTC "$tmp/d.txt"
{ [ "$rc" = 0 ] && ! grep -q ':5: ' "$tmp/err" && grep -q '1 rejected' "$tmp/err"; }
check "--quiet hides reports, keeps the summary" $?

# stdin
rc=0; "$GPULOG" parse --tz UTC - < "$tmp/d.txt" > "$tmp/out" 2> "$tmp/err" || rc=$?
{ [ "$rc" = 0 ] && [ "$(wc -l < "$tmp/out")" = 3 ] && grep -q '^<stdin>:5: ' "$tmp/err" \
  && ! grep -q 'log.file.path' "$tmp/out"; }
check "stdin via -" $? "status $rc, $(tail -n 1 "$tmp/err")"
rc=0; "$GPULOG" parse --tz UTC < "$tmp/d.txt" > "$tmp/out" 2> /dev/null || rc=$?
{ [ "$rc" = 0 ] && [ "$(wc -l < "$tmp/out")" = 3 ]; }
check "stdin when no file is given" $?

# I/O errors: exit 1
run "$tmp/does-not-exist"
{ [ "$rc" = 1 ] && grep -q 'does-not-exist' "$tmp/err"; }
check "exit 1 on a missing file" $? "status $rc"
run "$tmp"
check "exit 1 on a directory" "$([ "$rc" = 1 ] && echo 0 || echo 1)" "status $rc"
if [ -w /dev/full ]; then
  rc=0; "$GPULOG" parse --tz UTC "$tmp/d.txt" > /dev/full 2> "$tmp/err" || rc=$?
  { [ "$rc" = 1 ] && grep -qi 'write error' "$tmp/err"; }
  check "exit 1 on a write error (/dev/full)" $? "status $rc"
fi

# usage errors: exit 2
for args in "--bogus" "--format nope" "--tz Mars/Olympus_Mons" "--format" "--max-line 10" \
            "--max-line abc" "$tmp/d.txt $tmp/d.txt"; do
  # shellcheck disable=SC2086
  run $args
  { [ "$rc" = 2 ] && [ -s "$tmp/err" ] && [ ! -s "$tmp/out" ]; }
  check "exit 2 on: parse $args" $? "status $rc"
done
rc=0; "$GPULOG" nosuchcommand > /dev/null 2>&1 || rc=$?
check "exit 2 on an unknown command" "$([ "$rc" = 2 ] && echo 0 || echo 1)" "status $rc"

# help and version
run --help
check "--help exits 0" "$rc"
missing=""
for f in auto dmon dmon-csv query-csv csv pmon dcgmi kmsg; do
  grep -qE "^ +$f " "$tmp/out" || missing="$missing $f"
done
check "--help lists every format" "$([ -z "$missing" ] && echo 0 || echo 1)" "missing:$missing"
rc=0; v=$("$GPULOG" --version 2>&1) || rc=$?
{ [ "$rc" = 0 ] && head -n 1 <<<"$v" | grep -qxE 'gpulog [0-9]+\.[0-9]+\.[0-9]+'; }
check "--version: gpulog X.Y.Z on its first line" $? "status $rc: $v"
# its second line: the librdkafka gpulog loads, as that library itself says
# (rd_kafka_version_str of the same soname, read with ctypes)
lib=$("$PY" -c 'import ctypes; l = ctypes.CDLL("librdkafka.so.1"); l.rd_kafka_version_str.restype = ctypes.c_char_p; print(l.rd_kafka_version_str().decode())' 2>&1)
got=$(sed -n '2s/^librdkafka \([^ ]*\) (\(\/[^)]*\))$/\1 \2/p' <<<"$v")
[ -n "$lib" ] && [ "${got%% *}" = "$lib" ] && [ -f "${got#* }" ]
check "--version: the librdkafka it loads on its second line ($lib, with its file)" $? "library says '$lib'; gpulog: $v"

# a 3 MB line is rejected without buffering it; the next line still parses
{ printf '# gpu pwr\n# Idx W\n    0 100\n'; head -c 3000000 /dev/zero | tr '\0' 'x'; printf '\n    1 101\n'; } > "$tmp/big.txt"
run --tz UTC "$tmp/big.txt"
{ [ "$rc" = 0 ] && grep -q ':4: line longer than' "$tmp/err" && [ "$(wc -l < "$tmp/out")" = 2 ] \
  && grep -q '5 lines, 2 events, 1 rejected' "$tmp/err"; }
check "3 MB line rejected, next line parsed" $? "$(cat "$tmp/err" | head -c 300)"
if grep -qa __asan_init "$GPULOG"; then
  # AddressSanitizer's quarantine keeps every freed buffer: RSS says nothing here
  echo "     (AddressSanitizer build: peak RSS check left to the plain build)"
else
  base=$(hwm_kb "$tmp/d.txt")
  big=$(hwm_kb "$tmp/big.txt")
  echo "     peak RSS: small input ${base} KiB, 3 MB line ${big} KiB"
  check "3 MB line: peak RSS grows by < 2 MiB (${base} -> ${big} KiB)" \
    "$([ "$base" -gt 0 ] && [ $((big - base)) -lt 2048 ] && echo 0 || echo 1)"
fi

# large piped input finishes: 400k dmon rows, and 64 MB without any newline
{ printf '# gpu pwr gtemp\n# Idx W C\n'; yes '    0    100     50' | head -n 400000; } > "$tmp/rows.txt"
rc=0
cat "$tmp/rows.txt" | timeout 120 "$GPULOG" parse --tz UTC - 2> "$tmp/err" | wc -l > "$tmp/n" || rc=$?
{ [ "$rc" = 0 ] && [ "$(cat "$tmp/n")" = 400000 ] && grep -q '400002 lines, 400000 events, 0 rejected' "$tmp/err"; }
check "400k rows through a pipe" $? "status $rc, $(cat "$tmp/n") events"
rc=0
head -c 64000000 /dev/zero | timeout 120 "$GPULOG" parse - > "$tmp/out" 2> "$tmp/err" || rc=$?
{ [ "$rc" = 0 ] && grep -q '1 lines, 0 events, 1 rejected' "$tmp/err"; }
check "64 MB without a newline through a pipe ends" $? "status $rc: $(tail -n 1 "$tmp/err")"

report
