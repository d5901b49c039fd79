#!/usr/bin/env bash
# Collector checks that need no broker:
# - an idle collector must sleep: tailing a file that does not grow, with NDJSON
#   output (no Kafka poll to block in), once burnt a whole core. Checks the CPU
#   time of collect over 4 s of idling, for an existing and a missing file;
# - the collector's own health events (gpulog.collector) validate against
#   schemas/event.schema.json;
# - rotation of a dmon log without -o DT: the new file holds the same bytes at
#   the same offsets (idle GPUs print identical rows), and its events must
#   still get new event.ids, or Elasticsearch and detect drop them as
#   duplicates; a restart must keep the ids of lines it sends again;
# - a glob that also matches rotated names (dmon.log.1, dmon.log-20250101,
#   .gz) follows only the live files: the rotated ones are read through the
#   live file's rotation, and as sources of their own would be sent twice.
set -u
. "$(dirname "$0")/lib.sh"
test_tmp idle
check_idle() {   # $1 name, rest: collect arguments
  local name=$1; shift
  "$GPULOG" collect "$@" --state-dir "$tmp/st-$name" --output /dev/null 2>"$tmp/$name.err" &
  local pid=$!
  # measured from after its start-up (its CPU is no idling), however slow
  wait_for 300 started "$tmp/$name.err"
  sleep 1
  local t0 t1
  t0=$(awk '{print $14+$15}' /proc/$pid/stat 2>/dev/null || echo 0)
  sleep 4
  t1=$(awk '{print $14+$15}' /proc/$pid/stat 2>/dev/null || echo 999999)
  kill -TERM $pid 2>/dev/null; wait $pid 2>/dev/null
  # 4 s idle: allow 0.4 s of CPU (sanitizer builds are slower but idle all the same)
  if [ $((t1 - t0)) -le 40 ]; then ok "idle $name: $((t1 - t0)) ticks"
  else bad "idle $name: $((t1 - t0)) ticks of CPU in 4 s"; fi
}
printf '# gpu    pwr\n# Idx      W\n    0    100\n' > "$tmp/dmon.log"
check_idle existing --file "$tmp/dmon.log"
check_idle missing --file "$tmp/nope.log"
# a command that prints garbage and exits: restart events, schema-valid
timeout -s TERM 4 "$GPULOG" collect --exec 'sh -c "echo garbage; exit 1"' --state-dir "$tmp/st-exec" \
  --output "$tmp/exec.ndjson" 2>/dev/null
n=$(grep -c '"event.dataset":"gpulog.collector"' "$tmp/exec.ndjson")
if [ "$n" -ge 1 ] && grep '"event.dataset":"gpulog.collector"' "$tmp/exec.ndjson" | /usr/bin/python3 -c '
import json, sys, jsonschema
v = jsonschema.Draft202012Validator(json.load(open(sys.argv[1])))
for line in sys.stdin:
    v.validate(json.loads(line))
' schemas/event.schema.json; then ok "$n collector health events validate"
else bad "collector health events ($n) missing or invalid"; fi
# rotation with identical content
R=$tmp/rot; mkdir -p "$R"
rows=$(printf '# gpu    pwr  gtemp\n# Idx      W      C\n'; for i in 1 2 3 4 5; do printf '    0     61     34\n'; done)
echo "$rows" > "$R/dmon.log"
"$GPULOG" collect --file "$R/dmon.log" --host h --state-dir "$R/st" --output "$R/out1.ndjson" 2>"$R/c1.err" &
cpid=$!
wait_lines "$R/out1.ndjson" 5
mv "$R/dmon.log" "$R/dmon.log.1"; echo "$rows" > "$R/dmon.log"
wait_lines "$R/out1.ndjson" 10
kill -TERM $cpid; wait $cpid
# restart from the checkpoint: only the appended line is new; then a crash
# simulated by winding the checkpoint back to the start of the new file: the
# lines sent again must carry the ids they had (same generation)
echo "    0     61     34" >> "$R/dmon.log"
cp -r "$R/st" "$R/st-crash"
"$GPULOG" collect --once --file "$R/dmon.log" --host h --state-dir "$R/st" --output "$R/out2.ndjson" 2>"$R/c2.err"
sed -i 's/^offset=.*/offset=0/' "$R"/st-crash/ckpt-file-*
"$GPULOG" collect --once --file "$R/dmon.log" --host h --state-dir "$R/st-crash" --output "$R/out3.ndjson" 2>"$R/c3.err"
if /usr/bin/python3 - "$R/out1.ndjson" "$R/out2.ndjson" "$R/out3.ndjson" <<'PY'
import json, sys
a, b, c = ([json.loads(l) for l in open(p)] for p in sys.argv[1:4])
ids = [e["event.id"] for e in a]
errs = []
if len(a) != 10: errs.append("%d events for 10 lines" % len(a))
if len(set(ids)) != len(ids): errs.append("%d distinct ids for %d events" % (len(set(ids)), len(ids)))
if len(b) != 1: errs.append("restart sent %d events, expected 1 (the appended line)" % len(b))
elif b[0]["event.id"] in ids: errs.append("the appended line reuses an id")
want = ids[5:] + [e["event.id"] for e in b]
got = [e["event.id"] for e in c]
if got != want: errs.append("replay from the rewound checkpoint: ids %s, expected %s" % (got, want))
print("; ".join(errs) if errs else "10 + 1 events, all ids distinct, replay of 6 lines with the same ids")
sys.exit(1 if errs else 0)
PY
then ok "rotation with identical content gets new ids"
else bad "rotation with identical content: see above; $(tail -n 3 "$R/c1.err")"; fi
# a glob over live and rotated names
G2=$tmp/glob; mkdir -p "$G2"
one() { printf '# gpu    pwr\n# Idx      W\n    0    %s\n' "$1"; }
one 101 > "$G2/dmon.log"; one 102 > "$G2/dmon.log.1"; one 103 > "$G2/dmon.log-20250101"
one 104 | gzip > "$G2/dmon.log.2.gz"; one 105 > "$G2/dmon-gpu1.log"; one 106 > "$G2/dmon.log_old"
"$GPULOG" collect --once --file "$G2/dmon*" --host h --state-dir "$G2/st" --output "$G2/out.ndjson" 2>"$G2/err"
got=$(/usr/bin/python3 -c 'import json,sys; print(" ".join(sorted(str(json.loads(l)["gpu.power.usage"]) for l in open(sys.argv[1]))))' "$G2/out.ndjson" 2>&1)
nskip=$(grep -c "glob match not followed" "$G2/err")
if [ "$got" = "101 105 106" ] && [ "$nskip" = 3 ]; then ok "a glob skips rotated and compressed names ($nskip logged)"
else bad "a glob over rotated names: values '$got' (want 101 105 106), $nskip skips logged"; grep "not followed" "$G2/err"; fi
# following (the glob is re-scanned every second): each skip is said once
timeout -s TERM 3 "$GPULOG" collect --file "$G2/dmon*" --host h --state-dir "$G2/st2" --output /dev/null 2>"$G2/err2"
nskip=$(grep -c "glob match not followed" "$G2/err2")
if [ "$nskip" = 3 ]; then ok "skipped glob matches are logged once over 3 s of re-scans"
else bad "skipped glob matches logged $nskip times in 3 s (want 3)"; fi
report
