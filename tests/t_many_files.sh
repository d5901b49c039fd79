#!/usr/bin/env bash
# collect --file with more followed files than file descriptors (issue 27,
# item 4): at a low RLIMIT_NOFILE every file is still read, none is skipped
# as "file not found (yet)"; the wait for a descriptor is said as an error
# and counted (gpulog_descriptor_waits_total, gpulog_files_waiting_descriptor);
# files that gave their descriptor back (idle at their end) are read again
# when they grow, and one rotated while it had no descriptor is read to its
# end under its rotated name before the new file. Also --once with a glob
# that matches nothing is an error (exit status, message).
set -u
. "$(dirname "$0")/lib.sh"
test_tmp manyfiles
D=$tmp/logs; mkdir -p "$D"
NF=120
row() { printf ' 20250101   00:%02d:%02d %6d %6d %6d\n' "$(( $2 / 60 % 60 ))" "$(( $2 % 60 ))" "$1" 100 "$(( 30 + $2 % 50 ))"; }
for i in $(seq 1 $NF); do
  { printf '#Date       Time        gpu    pwr  gtemp\n#YYYYMMDD   HH:MM:SS    Idx      W      C\n'
    for s in 1 2 3; do row 0 "$s"; done; } > "$D/gpu$i.log"
done
# events per file: {path: n}
per_file() {
  "$PY" - "$1" <<'PY'
import json, sys, collections
c = collections.Counter()
for l in open(sys.argv[1]):
    e = json.loads(l)
    if e.get("event.dataset") != "gpulog.collector": c[e["log.file.path"]] += 1
print(" ".join("%s=%d" % (k.rsplit("/", 1)[1], v) for k, v in sorted(c.items())))
print("files=%d events=%d" % (len(c), sum(c.values())))
PY
}
metric() { curl -fsS -m 5 "http://127.0.0.1:$port/metrics" 2>/dev/null | sed -n "s/^$1 //p"; }

# --once at 48 descriptors (a budget of 24 files): every file, exit 0
(ulimit -n 48; exec "$GPULOG" collect --once --host h --tz UTC --file "$D/*.log" --state-dir "$tmp/st1" \
   --output "$tmp/once.ndjson" --metrics-addr '') 2> "$tmp/once.err"
rc=$?
check_eq "--once at ulimit -n 48: exit status" "$rc" 0
check_eq "--once at ulimit -n 48: every file read" "$(per_file "$tmp/once.ndjson" | tail -n 1)" "files=$NF events=$((NF * 3))"
n=$(grep -c 'file not found' "$tmp/once.err")
check_eq "--once: no file said to be missing" "$n" 0
grep -q 'descriptor limit: a followed file waits for a file descriptor' "$tmp/once.err"
check "--once: the wait for a descriptor is said as an error" $? "$(grep -v 'level=info' "$tmp/once.err" | head -n 3)"

# following, at 48 descriptors: every file, the metrics, then growth of
# files that gave their descriptor back, and a rotation of one of them
(ulimit -n 48; exec "$GPULOG" collect --host h --tz UTC --file "$D/*.log" --state-dir "$tmp/st2" \
   --output "$tmp/follow.ndjson" --metrics-addr 127.0.0.1:0) 2> "$tmp/follow.err" &
cpid=$!; pids+=("$cpid")
port=$(port_of "$tmp/follow.err") || fail "collect started" "$(tail -n 3 "$tmp/follow.err")"
wait_lines "$tmp/follow.ndjson" $((NF * 3)) 300
check_eq "following at ulimit -n 48: every file read" "$(per_file "$tmp/follow.ndjson" | tail -n 1)" "files=$NF events=$((NF * 3))"
w=$(metric gpulog_descriptor_waits_total)
if [ "${w:-0}" -ge 1 ] 2>/dev/null; then ok "gpulog_descriptor_waits_total counts the waits ($w)"
else bad "gpulog_descriptor_waits_total" "got '${w:-}'"; fi
wait_for 100 eval '[ "$(metric gpulog_files_waiting_descriptor)" = 0 ]'
check "gpulog_files_waiting_descriptor back to 0 once every file was read" $? "$(metric gpulog_files_waiting_descriptor)"
grep -q 'descriptor limit: a followed file waits' "$tmp/follow.err"
check "following: the wait is said as an error" $?
check_eq "following: no file said to be missing" "$(grep -c 'file not found' "$tmp/follow.err")" 0
# every file grows by one row (most have no descriptor now: opened on the change)
for i in $(seq 1 $NF); do row 0 4 >> "$D/gpu$i.log"; done
wait_lines "$tmp/follow.ndjson" $((NF * 4)) 300
check_eq "a row appended to every file is read" "$(per_file "$tmp/follow.ndjson" | tail -n 1)" "files=$NF events=$((NF * 4))"
# gpu7.log (idle, without a descriptor by now) gets a last row, is renamed
# away and replaced: the row is read from gpu7.log.1, then the new file
sleep 1
row 0 5 >> "$D/gpu7.log"; mv "$D/gpu7.log" "$D/gpu7.log.1"
{ printf '#Date       Time        gpu    pwr  gtemp\n#YYYYMMDD   HH:MM:SS    Idx      W      C\n'; row 0 6; } > "$D/gpu7.log"
wait_lines "$tmp/follow.ndjson" $((NF * 4 + 2)) 300
got=$(per_file "$tmp/follow.ndjson" | head -n 1 | tr ' ' '\n' | grep '^gpu7.log=')
check_eq "rotated while idle: its last row and the new file's row are read" "$got" "gpu7.log=6"
kill -TERM "$cpid"; wait "$cpid"
check_eq "no data reported lost" "$(grep -c 'source-data-lost' "$tmp/follow.err")" 0
check_eq "no event twice" "$(sed -n 's/.*"event.id":"\([^"]*\)".*/\1/p' "$tmp/follow.ndjson" | sort | uniq -d | wc -l)" 0

# --once with a glob that matches nothing: an error, not a silent success
"$GPULOG" collect --once --file "$tmp/none/*.log" --state-dir "$tmp/st3" --output "$tmp/none.ndjson" 2> "$tmp/none.err"
rc=$?
if [ "$rc" != 0 ]; then ok "--once, glob matching nothing: exit status $rc"; else bad "--once, glob matching nothing: exit status 0"; fi
grep -q 'matches no file' "$tmp/none.err"
check "--once, glob matching nothing: said" $? "$(cat "$tmp/none.err")"
finish
