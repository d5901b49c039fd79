#!/usr/bin/env bash
# needs: kafka
# t_collect.sh - `gpulog collect` against the REAL Kafka broker ($KAFKA_BROKERS,
# started by scripts/services.sh; this test FAILS when it is unset or down).
#   ndjson      --once without --brokers equals `gpulog parse` byte for byte
#   once        N dmon lines -> exactly N messages keyed host/gpu, field by field
#               equal to `gpulog parse` of the same files (event.created aside)
#   rotation    writer at 1000 lines/s with a rename rotation and a copytruncate:
#               no line lost, none duplicated
#   sigkill     collector killed with SIGKILL mid-stream and restarted: every line
#               at least once, duplicates carry the same event.id
#   exec        children that exit, hang, or print garbage: restarted, stale and
#               restarted events on the events topic, clean exit on SIGTERM
#   outage      broker stopped for 30 s mid-stream (scripts/services.sh stop-kafka /
#               start-kafka, or $COLLECT_KAFKA_STOP / $COLLECT_KAFKA_START): nothing
#               lost, the spool backlog grew and drained, RSS stayed bounded
# Ends with "N passed, N failed".
set -uo pipefail
. "$(dirname "$0")/lib.sh"
G=$GPULOG
kafka_setup
test_tmp t_collect
RUN=$$$(date +%s)
export GPULOG_READ_TIME=2025-03-01T00:00:00Z

# dmon writer: writer.py PATH N RATE MODE  (RATE 0 = all at once; MODE plain|rotate|stdout;
# MODE header: only creates PATH with the header, for a collector to open before any row)
cat > "$tmp/writer.py" <<'PY'
import os, shutil, sys, time
path, n, rate, mode = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
HDR = ("# gpu   pwr  temp    sm   mem   enc   dec  mclk  pclk pviol tviol      fb  bar1 sbecc dbecc   pci rxpci txpci\n"
       "# Idx     W     C     %     %     %     %   MHz   MHz     %  bool      MB    MB  errs  errs  errs  MB/s  MB/s\n")
def row(i):
    return "%5d %5d %5d %5d %5d %5d %5d %5d %5d %5d %5d %7d %5d %5s %5s %5d %5d %5d\n" % (
        i % 4, 100 + i % 50, 60, 50, 7, 0, 0, 4513, 1683, 0, 0, i, 2, "-", "-", 0, 41, 8)
def emit(text):
    if mode == "stdout":
        sys.stdout.write(text); sys.stdout.flush()
    else:
        new = not os.path.exists(path)
        with open(path, "a") as f:
            if new: f.write(HDR)
            f.write(text)
if mode == "stdout": emit(HDR)
if mode == "header": emit(""); sys.exit(0)
batch = max(1, rate // 20) if rate else n
t0 = time.time(); i = 0; rotated = copied = False
while i < n:
    k = min(batch, n - i)
    emit("".join(row(j) for j in range(i, i + k)))
    i += k
    if mode == "rotate" and not rotated and i >= n * 0.35:
        os.rename(path, path + ".1"); rotated = True          # rename rotation: new file gets a header
    if mode == "rotate" and not copied and i >= n * 0.7:
        shutil.copyfile(path, path + ".2"); os.truncate(path, 0); copied = True   # copytruncate
    if rate:
        delay = t0 + i / rate - time.time()
        if delay > 0: time.sleep(delay)
if mode == "stdout": time.sleep(3600)
PY

# check.py MODE FILE N: verifies delivered counters 0..N-1 (see modes below)
cat > "$tmp/check.py" <<'PY'
import collections, json, sys
mode, path, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
ids_by_fb = collections.defaultdict(set); total = 0; bad_keys = 0
for l in open(path):
    k, _, v = l.rstrip("\n").partition("\t")
    e = json.loads(v)
    if "gpu.memory.framebuffer.used_size" not in e: continue
    total += 1
    ids_by_fb[e["gpu.memory.framebuffer.used_size"]].add(e["event.id"])
    if k != e["host.name"]: bad_keys += 1
missing = [i for i in range(n) if i not in ids_by_fb]
multi_id = [fb for fb, ids in ids_by_fb.items() if len(ids) > 1]
distinct_ids = len(set().union(*ids_by_fb.values())) if ids_by_fb else 0
errs = []
if missing: errs.append("%d lines lost (first %s)" % (len(missing), missing[:5]))
if bad_keys: errs.append("%d messages with a wrong key" % bad_keys)
if mode == "exact" and total != n: errs.append("%d messages for %d lines (duplicates)" % (total, n))
if multi_id: errs.append("%d lines delivered with different event ids" % len(multi_id))
if distinct_ids != len(ids_by_fb): errs.append("%d distinct ids for %d lines" % (distinct_ids, len(ids_by_fb)))
print("lines=%d messages=%d duplicates=%d distinct_ids=%d" % (n, total, total - len(ids_by_fb), distinct_ids))
if errs: print("; ".join(errs)); sys.exit(1)
PY

# ------------------------------------------------------------------ ndjson
f1=$tmp/once.log
python3 "$tmp/writer.py" "$f1" 3000 0 plain
corp=tests/corpus/dmon/deepspeech-178-s-pucvmet-4gpu-2016.txt
"$G" parse --host n1 --tz UTC "$f1" > "$tmp/p1.json" 2>/dev/null
"$G" parse --host n1 --tz UTC "$corp" > "$tmp/p2.json" 2>/dev/null
cat "$tmp/p1.json" "$tmp/p2.json" > "$tmp/parse.json"
if "$G" collect --once --host n1 --tz UTC --state-dir "$tmp/st0" --file "$f1" --output "$tmp/c0.json" --stats-interval 0 2>"$tmp/c0.err" &&
   cmp -s "$tmp/p1.json" "$tmp/c0.json"; then ok ndjson
else bad ndjson "collect --once --output differs from parse: $(diff "$tmp/p1.json" "$tmp/c0.json" | head -3) $(tail -n 2 "$tmp/c0.err")"; fi
# a second --once with the same state dir reads nothing new
"$G" collect --once --host n1 --tz UTC --state-dir "$tmp/st0" --file "$f1" --output "$tmp/c0b.json" --stats-interval 0 2>/dev/null
if [ -f "$tmp/c0b.json" ] && [ ! -s "$tmp/c0b.json" ]; then ok ndjson_checkpoint_resume
else bad ndjson_checkpoint_resume "second run re-sent $(wc -l < "$tmp/c0b.json" 2>/dev/null) events"; fi

# --exec with --once: the child's lines, then exit; a failing child fails the run
"$G" collect --once --host n1 --state-dir "$tmp/st8" --exec "cat $f1" --output "$tmp/c8.json" --stats-interval 0 2>"$tmp/c8.err"; r1=$?
"$G" collect --once --host n1 --state-dir "$tmp/st8" --exec "sh -c 'exit 4'" --output "$tmp/c8b.json" --stats-interval 0 2>>"$tmp/c8.err"; r2=$?
if [ "$r1$r2" = 01 ] && [ "$(wc -l < "$tmp/c8.json")" = "$(wc -l < "$tmp/p1.json")" ]; then ok exec_once
else bad exec_once "rc=$r1/$r2 events $(wc -l < "$tmp/c8.json") want $(wc -l < "$tmp/p1.json")"; fi

# -------------------------------------------------------------------- kmsg
# a file of /dev/kmsg records: converted with the pinned boot time, parsed as
# kernel events, resumed by sequence number (the second run adds only record 103)
km=$tmp/kmsg.txt
printf '%s\n' '6,100,5000000,-;NVRM: loading NVIDIA UNIX x86_64 Kernel Module  535.104.05' \
  '4,101,6000000,-;NVRM: Xid (PCI:0000:38:00): 79, pid=1234, name=python, GPU has fallen off the bus.' \
  ' SUBSYSTEM=pci' > "$km"
export GPULOG_BOOT_TIME=2025-01-21T04:41:00Z
"$G" collect --once --host n1 --state-dir "$tmp/stk" --kmsg="$km" --output "$tmp/km1.json" --stats-interval 0 2>"$tmp/km.err"; r1=$?
printf '%s\n' '4,103,9000000,-;NVRM: Xid (PCI:0000:38:00): 13, pid=1, name=x, Graphics Exception' >> "$km"
"$G" collect --once --host n1 --state-dir "$tmp/stk" --kmsg="$km" --output "$tmp/km2.json" --stats-interval 0 2>>"$tmp/km.err"; r2=$?
unset GPULOG_BOOT_TIME
if [ "$r1$r2" = 00 ] && [ "$(wc -l < "$tmp/km1.json")" = 1 ] && [ "$(wc -l < "$tmp/km2.json")" = 1 ] &&
   grep -q '"@timestamp":"2025-01-21T04:41:06.000Z".*"gpu.xid.code":79' "$tmp/km1.json" &&
   grep -q '"gpu.xid.code":13' "$tmp/km2.json"; then ok kmsg_records_time_and_resume
else bad kmsg_records_time_and_resume "rc=$r1/$r2 $(head -c 300 "$tmp/km1.json") | $(head -c 200 "$tmp/km2.json") $(tail -n 2 "$tmp/km.err")"; fi
if [ -r /dev/kmsg ]; then
  if "$G" collect --once --host n1 --state-dir "$tmp/stk2" --kmsg --output "$tmp/km3.json" --stats-interval 1 2>"$tmp/km3.err" &&
     grep -qE 'lines=[1-9]' "$tmp/km3.err"; then ok dev_kmsg_read_once
  else bad dev_kmsg_read_once "$(tail -n 2 "$tmp/km3.err")"; fi
fi

# -------------------------------------------------------------------- once
topic=t-collect-once-$RUN
if "$G" collect --once --host n1 --tz UTC --state-dir "$tmp/st1" --file "$f1" --file "$corp" \
     --brokers "$B" --topic "$topic" --stats-interval 0 2>"$tmp/c1.err"; then
  consume "$topic" > "$tmp/k1.tsv"
  if python3 - "$tmp/parse.json" "$tmp/k1.tsv" <<'PY'
import json, sys
want = {}
for l in open(sys.argv[1]):
    e = json.loads(l); e.pop("event.created", None); want[e["event.id"]] = e
got = {}; n = 0; errs = []
for l in open(sys.argv[2]):
    k, _, v = l.rstrip("\n").partition("\t"); n += 1
    e = json.loads(v); e.pop("event.created", None)
    if k != e["host.name"]: errs.append("key %r for %s" % (k, e["event.id"]))
    got[e["event.id"]] = e
if n != len(want): errs.append("%d messages for %d parsed events" % (n, len(want)))
diff = [i for i in want if got.get(i) != want[i]]
if diff: errs.append("%d events differ, e.g. %s vs %s" % (len(diff), want[diff[0]], got.get(diff[0])))
print("messages=%d parsed=%d" % (n, len(want)))
if errs: print("\n".join(errs[:5])); sys.exit(1)
PY
  then ok once_exactly_n_messages_equal_to_parse; else bad once_exactly_n_messages_equal_to_parse "see above"; fi
else bad once_exactly_n_messages_equal_to_parse "collect exited non-zero: $(tail -n 3 "$tmp/c1.err")"; fi

# ------------------------------------------------- no ack, no checkpoint
# broker unreachable: SIGTERM ends within --shutdown-timeout, exit 1, the
# checkpoint did not move (queued is not delivered); then the real broker gets all
topic=t-collect-noack-$RUN
"$G" collect --host n1 --tz UTC --state-dir "$tmp/st6" --file "$f1" --brokers 127.0.0.1:1 --topic "$topic" \
   --shutdown-timeout 2 --stats-interval 0 2>"$tmp/c6.err" &
cpid=$!; pids+=("$cpid")
# the signal must come after start-up (signal handlers, the file read and
# queued), however slow the start (sanitizer build, loaded machine)
wait_for 600 started "$tmp/c6.err"
sleep 1
t0=$(date +%s); kill -TERM "$cpid"; wait "$cpid"; rc=$?; took=$(( $(date +%s) - t0 ))
off=$(sed -n 's/^offset=//p' "$tmp"/st6/ckpt-file-* 2>/dev/null | head -n 1)
first=$(head -n 1 "$tmp/p1.json" | python3 -c 'import json,sys; print(json.load(sys.stdin)["log.offset"])')
# only the header lines (no events) may be behind the checkpoint
if [ "$rc" = 1 ] && [ "$took" -le 6 ] && [ "${off:-0}" -le "$first" ]; then ok "unacked_not_checkpointed (stopped in ${took}s, rc=1, offset ${off:-0} <= first data line $first)"
else bad unacked_not_checkpointed "rc=$rc took=${took}s checkpoint offset=${off:-none}"; fi
if "$G" collect --once --host n1 --tz UTC --state-dir "$tmp/st6" --file "$f1" --brokers "$B" --topic "$topic" \
     --stats-interval 0 2>>"$tmp/c6.err" && [ "$(consume "$topic" | wc -l)" = "$(wc -l < "$tmp/p1.json")" ]; then
  ok unacked_lines_sent_on_next_start
else bad unacked_lines_sent_on_next_start "$(consume "$topic" | wc -l) messages; $(tail -n 2 "$tmp/c6.err")"; fi

# ------------------------------------------------------------- dead letter
# a message the producer can never send (bigger than message.max.bytes): dead
# letter file with the reason, settled (checkpoint moves on), exit status 1
topic=t-collect-dl-$RUN
fdl=$tmp/dl.log
python3 -c "
print('# gpu   pwr  temp'); print('# Idx     W     C'); print('    0   100    50')
print('    1   100    50' + ' ' * 1200); print('    2   100    50')" > "$fdl"
"$G" collect --once --host n1 --tz UTC --state-dir "$tmp/st7" --file "$fdl" --keep-original --brokers "$B" \
   --topic "$topic" -X message.max.bytes=1000 --stats-interval 0 2>"$tmp/c7.err"; rc=$?
dl=$(wc -l < "$tmp/st7/deadletter.ndjson" 2>/dev/null || echo 0)
off=$(sed -n 's/^offset=//p' "$tmp"/st7/ckpt-file-* 2>/dev/null | head -n 1)
if [ "$rc" = 1 ] && [ "$dl" = 1 ] && grep -q '"deadletter.key":"n1"' "$tmp/st7/deadletter.ndjson" && [ "${off:-0}" = "$(stat -c %s "$fdl")" ] &&
   [ "$(consume "$topic" | wc -l)" = 2 ]; then
  ok "deadletter_permanent_error ($dl dead-lettered)"
else bad deadletter_permanent_error "rc=$rc deadletters=$dl offset=${off:-none} $(tail -n 2 "$tmp/c7.err")"; fi

# ---------------------------------------------------------------- rotation
topic=t-collect-rot-$RUN
f2=$tmp/rot.log
# the collector opens the file before the writer's first row: a collector
# that started after the rename (at 1.75 s) would never see the first file
python3 "$tmp/writer.py" "$f2" 0 0 header
"$G" collect --host n1 --state-dir "$tmp/st2" --file "$f2" --brokers "$B" --topic "$topic" \
   --stats-interval 0 2>"$tmp/c2.err" &
cpid=$!; pids+=("$cpid")
wait_for 600 started "$tmp/c2.err" || bad rotation_collector_started "no msg=started in 60 s: $(tail -n 2 "$tmp/c2.err")"
python3 "$tmp/writer.py" "$f2" 5000 1000 rotate
n=$(wait_distinct "$topic" 5000 40)
kill -TERM "$cpid"; wait "$cpid"; rc=$?
consume "$topic" > "$tmp/k2.tsv"
if out=$(python3 "$tmp/check.py" exact "$tmp/k2.tsv" 5000) && [ "$rc" = 0 ]; then ok "rotation_rename_and_copytruncate ($out)"
else bad rotation_rename_and_copytruncate "rc=$rc $out $(grep -E 'rotation|truncation' "$tmp/c2.err" | head -3)"; fi
# the truncation is logged as "copytruncate" when lines written after the
# collector's last read are in the copy, else as "the file holds a new
# generation" (it had read everything before the copy: timing decides which;
# test_tail covers reading the copy deterministically)
grep -q "rotation (rename)" "$tmp/c2.err" && grep -qE "truncation \(copytruncate\)|truncation: the file holds a new generation" "$tmp/c2.err" \
  && ok rotation_both_kinds_seen || bad rotation_both_kinds_seen "the collector did not log both rotations"

# ----------------------------------------------------------------- sigkill
topic=t-collect-kill-$RUN
f3=$tmp/kill.log
python3 "$tmp/writer.py" "$f3" 4000 1000 plain &
wpid=$!; pids+=("$wpid")
"$G" collect --host n1 --state-dir "$tmp/st3" --file "$f3" --brokers "$B" --topic "$topic" --stats-interval 0 2>"$tmp/c3a.err" &
cpid=$!; pids+=("$cpid")
# killed mid-stream: once its first checkpoint moved (lines delivered), while
# the writer still writes (4 s), whatever the start-up took
wait_for 600 ckpt_moved "$tmp/st3" || bad sigkill_checkpoint_moved "no checkpoint in 60 s: $(tail -n 2 "$tmp/c3a.err")"
kill -9 "$cpid"; wait "$cpid" 2>/dev/null
"$G" collect --host n1 --state-dir "$tmp/st3" --file "$f3" --brokers "$B" --topic "$topic" --stats-interval 0 2>"$tmp/c3b.err" &
cpid=$!; pids+=("$cpid")
wait "$wpid"
n=$(wait_distinct "$topic" 4000 40)
kill -TERM "$cpid"; wait "$cpid"; rc=$?
consume "$topic" > "$tmp/k3.tsv"
if out=$(python3 "$tmp/check.py" atleast "$tmp/k3.tsv" 4000) && [ "$rc" = 0 ]; then ok "sigkill_restart_at_least_once_same_ids ($out)"
else bad sigkill_restart_at_least_once_same_ids "rc=$rc $out"; fi

# -------------------------------------------------------------------- exec
topic=t-collect-exm-$RUN; etopic=t-collect-exe-$RUN
cat > "$tmp/exits.sh" <<'SH'
#!/bin/sh
echo "# gpu   pwr  temp"
echo "# Idx     W     C"
echo "    0   100    50"
exit 3
SH
cat > "$tmp/hang.sh" <<'SH'
#!/bin/sh
echo "# gpu   pwr  temp"
echo "# Idx     W     C"
echo "    1   100    50"
exec sleep 600
SH
cat > "$tmp/garbage.sh" <<'SH'
#!/bin/sh
while :; do echo "%%% not a dmon line $$ ###"; sleep 0.1; done
SH
chmod +x "$tmp/exits.sh" "$tmp/hang.sh" "$tmp/garbage.sh"
"$G" collect --host n1 --format dmon --state-dir "$tmp/st5" --exec "$tmp/exits.sh" --exec "$tmp/hang.sh" \
   --exec "$tmp/garbage.sh" --stale-after 2 --brokers "$B" --topic "$topic" --events-topic "$etopic" \
   --stats-interval 0 2>"$tmp/c5.err" &
cpid=$!; pids+=("$cpid")
# exec_check.py TSV: the events topic holds the restarts and stale kills below
cat > "$tmp/exec_check.py" <<'PY'
import collections, json, sys
c = collections.Counter()
for l in open(sys.argv[1]):
    e = json.loads(l.split("\t", 1)[1])
    assert e["event.dataset"] == "gpulog.collector" and e["event.kind"] == "event", e
    c[(e["process.command_line"].rsplit("/", 1)[-1], e["event.action"])] += 1
print(dict(c))
need = [(("exits.sh", "source-restarted"), 2), (("hang.sh", "source-stale"), 1), (("hang.sh", "source-restarted"), 1),
        (("garbage.sh", "source-stale"), 1), (("garbage.sh", "source-restarted"), 1)]
miss = [k for k, n in need if c[k] < n]
if miss: print("missing:", miss); sys.exit(1)
PY
# until they are all there (about 4 s: restarts after 1 and 2 s, stale after
# 2 s), however slow the machine; a minute at most
exec_seen() { consume "$etopic" > "$tmp/k5.tsv"; python3 "$tmp/exec_check.py" "$tmp/k5.tsv" >/dev/null 2>&1; }
for _ in $(seq 1 60); do exec_seen && break; sleep 1; done
kill -0 "$cpid" 2>/dev/null && alive=1 || alive=0
kill -TERM "$cpid"; wait "$cpid"; rc=$?
consume "$etopic" > "$tmp/k5.tsv"
if out=$(python3 "$tmp/exec_check.py" "$tmp/k5.tsv") && [ "$rc" = 0 ] && [ "$alive" = 1 ]; then ok "exec_exit_hang_garbage_restarted ($out)"
else bad exec_exit_hang_garbage_restarted "rc=$rc alive=$alive $out $(tail -n 3 "$tmp/c5.err")"; fi
m=$(consume "$topic" | grep -c '"gpu.index":0')
if [ "$m" -ge 2 ]; then ok "exec_lines_delivered_across_restarts ($m)"; else bad exec_lines_delivered_across_restarts "only $m events from exits.sh"; fi
if pgrep -f "$tmp/garbage.sh" >/dev/null; then bad exec_children_stopped "garbage.sh still running"; else ok exec_children_stopped; fi

# ------------------------------------------------------------------ outage
topic=t-collect-out-$RUN
N=6000
"$G" collect --host n1 --state-dir "$tmp/st4" --exec "python3 $tmp/writer.py - $N 150 stdout" \
   --stale-after 600 --brokers "$B" --topic "$topic" --stats-interval 1 \
   -X queue.buffering.max.messages=1000 -X queue.buffering.max.kbytes=512 2>"$tmp/c4.err" &
cpid=$!; pids+=("$cpid")
sleep 3
t0=$(date +%s)
$KSTOP > "$tmp/kstop.out" 2>&1 || bad outage "stopping Kafka failed: $(tail -n 2 "$tmp/kstop.out")"
sleep 30
$KSTART > "$tmp/kstart.out" 2>&1 || bad outage "restarting Kafka failed: $(tail -n 2 "$tmp/kstart.out")"
down=$(( $(date +%s) - t0 ))
n=$(wait_distinct "$topic" "$N" 120)
kill -TERM "$cpid"; wait "$cpid"; rc=$?
consume "$topic" > "$tmp/k4.tsv"
stats=$(python3 - "$tmp/c4.err" <<'PY'
import re, sys
bl = []; rss = []
for l in open(sys.argv[1]):
    m = re.search(r"spool_backlog=(\d+) rss_kb=(\d+)", l)
    if m: bl.append(int(m.group(1))); rss.append(int(m.group(2)))
print(max(bl) if bl else -1, bl[-1] if bl else -1, max(rss) if rss else -1)
PY
)
read -r maxbl lastbl maxrss <<< "$stats"
if out=$(python3 "$tmp/check.py" atleast "$tmp/k4.tsv" "$N") && [ "$rc" = 0 ]; then ok "outage_nothing_lost (broker away ${down}s; $out)"
else bad outage_nothing_lost "rc=$rc $out $(tail -n 3 "$tmp/c4.err")"; fi
if [ "$maxbl" -gt 0 ] && [ "$lastbl" = 0 ]; then ok "outage_spool_used_and_drained (max backlog ${maxbl} bytes)"
else bad outage_spool_used_and_drained "max backlog $maxbl, last $lastbl"; fi
limit=40960   # kB; a sanitizer build (make SANITIZE=1) carries ASan's shadow memory
grep -aq __asan_init "$G" 2>/dev/null && limit=163840
if [ "$maxrss" -gt 0 ] && [ "$maxrss" -lt "$limit" ]; then ok "outage_memory_bounded (peak RSS ${maxrss} kB, limit $limit)"
else bad outage_memory_bounded "peak RSS ${maxrss} kB"; fi

report
