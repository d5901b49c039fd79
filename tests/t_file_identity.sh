#!/usr/bin/env bash
# A file is one file whatever its names (issue 27, item 6): collect reads
# each line of a file once, whichever name leads to it.
# - cronolog pattern: a glob matches a "current" symlink and the dated files
#   it points to; current is repointed to a new file: the old file, no longer
#   read through current, must not be read again under its real name (it was:
#   250 events for 150 lines, with new event ids);
# - a hard link followed by a glob is deleted, and the collector restarts:
#   the other name resumes where the deleted one was read to (it re-sent
#   everything); and by name (--file of the other name after a restart);
# - a name whose inode was reused by another file (other content) is read
#   from its start: identity is device, inode and the content's fingerprint.
set -u
. "$(dirname "$0")/lib.sh"
test_tmp fileid
hdr() { printf '#Date       Time        gpu    pwr  gtemp\n#YYYYMMDD   HH:MM:SS    Idx      W      C\n'; }
rows() {   # rows FIRST N: dmon rows numbered by their second
  local i
  for ((i = $1; i < $1 + $2; i++)); do
    printf ' 20250101   %02d:%02d:%02d %6d %6d %6d\n' $((i / 3600)) $((i / 60 % 60)) $((i % 60)) 0 100 $((30 + i % 50))
  done
}
count() { local n; n=$(grep -c '"event.kind":"metric"' "$1" 2>/dev/null); echo "${n:-0}"; }
distinct_ids() { sed -n 's/.*"event.id":"\([^"]*\)".*/\1/p' "$@" | sort -u | wc -l; }
distinct_rows() { sed -n 's/.*"@timestamp":"\([^"]*\)".*/\1/p' "$@" | sort -u | wc -l; }
once() {   # once DIR FILES N: one collect --once of FILES, state in DIR/st, events to DIR/outN.ndjson, stderr DIR/errN
  "$GPULOG" collect --once --host h --tz UTC --file "$2" --state-dir "$1/st" --output "$1/out$3.ndjson" \
    --metrics-addr '' 2> "$1/err$3"
}

# ---- cronolog: current -> gpu.20250101, then -> gpu.20250102
C=$tmp/cron; mkdir -p "$C/logs"
{ hdr; rows 0 100; } > "$C/logs/gpu.20250101"
ln -s gpu.20250101 "$C/logs/current"
"$GPULOG" collect --host h --tz UTC --file "$C/logs/*" --state-dir "$C/st" --output "$C/out.ndjson" \
  --metrics-addr '' 2> "$C/err" &
cpid=$!; pids+=("$cpid")
wait_lines "$C/out.ndjson" 100 300
{ hdr; rows 100 50; } > "$C/logs/gpu.20250102"
ln -sfn gpu.20250102 "$C/logs/current"
wait_lines "$C/out.ndjson" 150 300
sleep 3   # a second glob run after the switch (the directory changed)
kill -TERM "$cpid"; wait "$cpid"
check_eq "cronolog: 150 lines, 150 events" "$(count "$C/out.ndjson")" 150
check_eq "cronolog: 150 distinct rows" "$(distinct_rows "$C/out.ndjson")" 150
check_eq "cronolog: 150 distinct event ids" "$(distinct_ids "$C/out.ndjson")" 150
# a restart reads nothing again either, and a line added to the current file is read once
{ rows 150 1; } >> "$C/logs/gpu.20250102"
once "$C" "$C/logs/*" 2
check_eq "cronolog, restart: only the new line" "$(count "$C/out2.ndjson")" 1

# ---- hard links: x.log and y.log one file; x.log followed, deleted, restart
H=$tmp/hard; mkdir -p "$H/logs"
{ hdr; rows 0 100; } > "$H/logs/x.log"
ln "$H/logs/x.log" "$H/logs/y.log"
once "$H" "$H/logs/*.log" 1
check_eq "hard links: one file read once" "$(count "$H/out1.ndjson")" 100
rm "$H/logs/x.log"
once "$H" "$H/logs/*.log" 2
check_eq "hard link deleted, restart: nothing sent again" "$(count "$H/out2.ndjson")" 0
grep -q 'another name of a file read before' "$H/err2"
check "hard link deleted, restart: the resume is said" $? "$(grep -v level=info "$H/err2" | head -n 3)"
rows 100 2 >> "$H/logs/y.log"
once "$H" "$H/logs/*.log" 3
check_eq "then two new lines under the other name: two events" "$(count "$H/out3.ndjson")" 2

# ---- by name: --file a.log, then a.log is gone and --file b.log (a hard link) names it
N=$tmp/named; mkdir -p "$N"
{ hdr; rows 0 20; } > "$N/a.log"
ln "$N/a.log" "$N/b.log"
once "$N" "$N/a.log" 1
rm "$N/a.log"
once "$N" "$N/b.log" 2
check_eq "--file of another name of a file read before: nothing again" "$(count "$N/out2.ndjson")" 0

# ---- another content under an inode seen before is another file
R=$tmp/reuse; mkdir -p "$R"
{ hdr; rows 0 20; } > "$R/a.log"
once "$R" "$R/a.log" 1
# b.log takes a.log's inode (a.log renamed onto it) but holds other lines
{ hdr; rows 500 30; } > "$R/new"
ln "$R/a.log" "$R/b.log"; rm "$R/a.log"
cat "$R/new" > "$R/b.log"   # same inode, rewritten: other content
once "$R" "$R/b.log" 2
check_eq "same inode, other content: read from its start" "$(count "$R/out2.ndjson")" 30
finish
