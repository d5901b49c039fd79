#!/usr/bin/env bash
# needs: kafka
# t_rotation_chain.sh - `gpulog collect` follows a file through SEVERAL rotations
# while it is behind or stopped, against the REAL Kafka broker ($KAFKA_BROKERS,
# started by scripts/services.sh; this test FAILS when it is unset or down).
# Every line written is compared with what the topic holds:
#   outage      rename rotation every 2 s while the broker is stopped for 7 s
#               (more than three rotation periods): 0 lost, duplicates only
#               with the same event.id
#   stopped     collector SIGKILLed and restarted 5 s later, rotation every 1.5 s
#               (three rotations missed): 0 lost
#   mixed       the same with rename and copytruncate rotations alternating
#   deleted     collector stopped, three rotations, one unread generation
#               deleted: exactly its lines lost, every other line delivered, a
#               source-data-lost event on the events topic, the loss in
#               gpulog_files_lost_total; and with --once the checkpointed file
#               deleted: exit status 1 and the byte range in the event
# Ends with "N passed, N failed".
set -uo pipefail
. "$(dirname "$0")/lib.sh"
G=$GPULOG
kafka_setup
test_tmp t_rotchain
RUN=$$$(date +%s)
export GPULOG_READ_TIME=2025-03-01T00:00:00Z

# writer.py PATH FIRST N RATE ROT_S KEEP PLAN: rows FIRST..FIRST+N-1 (the row
# number is the fb column) at RATE lines/s; every ROT_S seconds a rotation, the
# next letter of PLAN (cycled): r = rename (NAME.1 .. NAME.KEEP, logrotate's
# numbering), c = copytruncate (copy to NAME.1 after the shift, then truncate).
# Every new or truncated file starts with the dmon header. N 0: only the
# header (a file for the collector to open before the first row).
cat > "$tmp/writer.py" <<'PY'
import os, shutil, sys, time
path, first, n, rate, rot_s, keep, plan = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5]), int(sys.argv[6]), sys.argv[7]
HDR = ("# gpu   pwr  temp    sm   mem   enc   dec  mclk  pclk pviol tviol      fb  bar1 sbecc dbecc   pci rxpci txpci\n"
       "# Idx     W     C     %     %     %     %   MHz   MHz     %  bool      MB    MB  errs  errs  errs  MB/s  MB/s\n")
def row(i):
    return "%5d %5d %5d %5d %5d %5d %5d %5d %5d %5d %5d %7d %5d %5s %5s %5d %5d %5d\n" % (
        i % 4, 100 + i % 50, 60, 50, 7, 0, 0, 4513, 1683, 0, 0, i, 2, "-", "-", 0, 41, 8)
def shift():
    for k in range(keep, 0, -1):
        src = "%s.%d" % (path, k)
        if os.path.exists(src):
            if k == keep: os.unlink(src)
            else: os.rename(src, "%s.%d" % (path, k + 1))
def emit(text):
    with open(path, "a") as f:
        if f.tell() == 0: f.write(HDR)
        f.write(text)
if n == 0: emit(""); sys.exit(0)
batch = max(1, rate // 20)
t0 = time.time(); i = first; last_rot = t0; k = 0
while i < first + n:
    m = min(batch, first + n - i)
    emit("".join(row(j) for j in range(i, i + m)))
    i += m
    if rot_s > 0 and time.time() - last_rot >= rot_s:
        last_rot = time.time()
        kind = plan[k % len(plan)]; k += 1
        shift()
        if kind == "r":
            os.rename(path, path + ".1")
        else:
            shutil.copyfile(path, path + ".1"); os.truncate(path, 0)
    delay = t0 + (i - first) / rate - time.time()
    if delay > 0: time.sleep(delay)
PY

# check.py FILE N [LOST_FIRST LOST_LAST]: rows 0..N-1 delivered (except the
# given range, which must be absent), duplicates only with the same event.id
cat > "$tmp/check.py" <<'PY'
import collections, json, sys
path, n = sys.argv[1], int(sys.argv[2])
lost = set(range(int(sys.argv[3]), int(sys.argv[4]) + 1)) if len(sys.argv) > 4 else set()
ids = collections.defaultdict(set); total = 0
for l in open(path):
    e = json.loads(l.split("\t", 1)[1])
    if "gpu.memory.framebuffer.used_size" not in e: continue
    total += 1
    ids[e["gpu.memory.framebuffer.used_size"]].add(e["event.id"])
missing = [i for i in range(n) if i not in ids and i not in lost]
phantom = [i for i in ids if i in lost or not 0 <= i < n]
multi = [i for i, s in ids.items() if len(s) > 1]
print("written=%d delivered=%d lost=%d duplicates=%d expected_lost=%d" % (n, len(ids), len(missing), total - len(ids), len(lost)))
errs = []
if missing: errs.append("%d lines lost (first %s)" % (len(missing), missing[:5]))
if phantom: errs.append("%d rows delivered that should be lost or were never written (%s)" % (len(phantom), phantom[:5]))
if multi: errs.append("%d lines delivered with different event ids" % len(multi))
if errs: print("; ".join(errs)); sys.exit(1)
PY

# ------------------------------------------------------------------ outage
topic=t-rotchain-out-$RUN
f=$tmp/out/dmon.log; mkdir -p "$tmp/out"
N=6000
# the collector holds the first file before the first row and rotation: one
# that started after it (slow start) would never see the first generation
python3 "$tmp/writer.py" "$f" 0 0 0 0 20 r
"$G" collect --host n1 --state-dir "$tmp/st-out" --file "$f" --brokers "$B" --topic "$topic" \
   --stats-interval 0 -X queue.buffering.max.messages=1000 2>"$tmp/out.err" &
cpid=$!; pids+=("$cpid")
wait_for 600 started "$tmp/out.err" || bad outage_collector_started "no msg=started in 60 s"
python3 "$tmp/writer.py" "$f" 0 "$N" 500 2 20 r &
wpid=$!; pids+=("$wpid")
sleep 2
$KSTOP > "$tmp/kstop.out" 2>&1 || bad outage "stopping Kafka failed: $(tail -n 2 "$tmp/kstop.out")"
sleep 7
$KSTART > "$tmp/kstart.out" 2>&1 || bad outage "restarting Kafka failed: $(tail -n 2 "$tmp/kstart.out")"
wait "$wpid"
n=$(wait_distinct "$topic" "$N" 120)
kill -TERM "$cpid"; wait "$cpid"; rc=$?
consume "$topic" > "$tmp/out.tsv"
gens=$(grep -c '"next generation"' "$tmp/out.err")
if out=$(python3 "$tmp/check.py" "$tmp/out.tsv" "$N") && [ "$rc" = 0 ]; then
  ok "outage_across_rotations ($out; $gens generation switches, $(ls "$tmp/out" | wc -l) files on disk)"
else bad outage_across_rotations "rc=$rc $out $(grep -E 'rotation|generation|lost' "$tmp/out.err" | tail -n 4)"; fi
if ! grep -q 'source-data-lost' "$tmp/out.err"; then ok outage_no_loss_reported
else bad outage_no_loss_reported "$(grep 'source-data-lost' "$tmp/out.err" | head -n 2)"; fi

# ------------------------------------------------- stopped / mixed (SIGKILL)
chain_kill() {   # name plan
  local name=$1 plan=$2 topic=t-rotchain-$1-$RUN d=$tmp/$1 N=5000
  mkdir -p "$d"
  local f=$d/dmon.log
  # the collector holds the first file before the first row and rotation (a
  # slow start must not skip a generation), and is killed no sooner than
  # 2.5 s into the writing and once it checkpointed something
  python3 "$tmp/writer.py" "$f" 0 0 0 0 20 "$plan"
  "$G" collect --host n1 --state-dir "$d/st" --file "$f" --brokers "$B" --topic "$topic" \
     --stats-interval 0 2>"$d/c1.err" &
  local cpid=$!; pids+=("$cpid")
  wait_for 600 started "$d/c1.err" || bad "${name}_collector_started" "no msg=started in 60 s"
  python3 "$tmp/writer.py" "$f" 0 "$N" 500 1.5 20 "$plan" &
  local wpid=$!; pids+=("$wpid")
  sleep 2.5
  wait_for 600 ckpt_moved "$d/st" || bad "${name}_checkpoint_moved" "no checkpoint in 60 s"
  kill -9 "$cpid"; wait "$cpid" 2>/dev/null
  sleep 5   # three rotations while stopped
  "$G" collect --host n1 --state-dir "$d/st" --file "$f" --brokers "$B" --topic "$topic" \
     --stats-interval 0 2>"$d/c2.err" &
  cpid=$!; pids+=("$cpid")
  wait "$wpid"
  wait_distinct "$topic" "$N" 90 >/dev/null
  kill -TERM "$cpid"; wait "$cpid"; local rc=$?
  consume "$topic" > "$d/k.tsv"
  local out
  if out=$(python3 "$tmp/check.py" "$d/k.tsv" "$N") && [ "$rc" = 0 ] && ! grep -q source-data-lost "$d/c2.err"; then
    ok "${name}_three_rotations_while_stopped ($out; $(grep -c '"next generation"' "$d/c2.err") generation switches after the restart)"
  else bad "${name}_three_rotations_while_stopped" "rc=$rc $out $(grep -E 'rotat|generation|lost|truncat' "$d/c2.err" | tail -n 4)"; fi
}
chain_kill stopped r
chain_kill mixed rc

# ----------------------------------------------------------------- deleted
# stopped after reading everything; then the file grows, three rotations, and
# the middle unread generation (NAME.2) is deleted before the restart
topic=t-rotchain-del-$RUN
etopic=t-rotchain-del-ev-$RUN
d=$tmp/del; mkdir -p "$d"; f=$d/dmon.log
python3 "$tmp/writer.py" "$f" 0 1000 100000 0 9 r
"$G" collect --once --host n1 --state-dir "$d/st" --file "$f" --brokers "$B" --topic "$topic" \
   --events-topic "$etopic" --stats-interval 0 2>"$d/c1.err"; rc1=$?
python3 "$tmp/writer.py" "$f" 1000 500 100000 0 9 r          # 1000..1499 unread in gen 0
mv "$f" "$f.1"; python3 "$tmp/writer.py" "$f" 1500 1000 100000 0 9 r   # gen 1: 1500..2499
mv "$f.1" "$f.2"; mv "$f" "$f.1"; python3 "$tmp/writer.py" "$f" 2500 500 100000 0 9 r   # gen 2
mv "$f.2" "$f.3"; mv "$f.1" "$f.2"; mv "$f" "$f.1"; python3 "$tmp/writer.py" "$f" 3000 500 100000 0 9 r   # gen 3
rm "$f.2"   # gen 1, never read
port=$(free_port)
"$G" collect --host n1 --state-dir "$d/st" --file "$f" --brokers "$B" --topic "$topic" --events-topic "$etopic" \
   --metrics-addr "127.0.0.1:$port" --stats-interval 0 2>"$d/c2.err" &
cpid=$!; pids+=("$cpid")
wait_distinct "$topic" 2500 60 >/dev/null
metrics=$(curl -s "http://127.0.0.1:$port/metrics")
kill -TERM "$cpid"; wait "$cpid"; rc2=$?
consume "$topic" > "$d/k.tsv"
consume "$etopic" > "$d/e.tsv"
if out=$(python3 "$tmp/check.py" "$d/k.tsv" 3500 1500 2499) && [ "$rc1$rc2" = 00 ]; then
  ok "deleted_generation_only_its_lines_lost ($out)"
else bad deleted_generation_only_its_lines_lost "rc=$rc1/$rc2 $out $(tail -n 3 "$d/c2.err")"; fi
if python3 - "$d/e.tsv" "$f.2" <<'PY'
import json, sys
ev = [json.loads(l.split("\t", 1)[1]) for l in open(sys.argv[1])]
lost = [e for e in ev if e.get("event.action") == "source-data-lost"]
assert len(lost) == 1, "want one source-data-lost event, got %d: %s" % (len(lost), lost)
e = lost[0]
assert e["event.dataset"] == "gpulog.collector" and e["log.file.path"] == sys.argv[2], e
assert "deleted" in e["message"], e["message"]
print("event:", e["message"][:140])
PY
then ok deleted_generation_event; else bad deleted_generation_event "events: $(head -c 400 "$d/e.tsv")"; fi
if grep -q '^gpulog_files_lost_total{reason="deleted"} 1$' <<<"$metrics"; then ok deleted_generation_metric
else bad deleted_generation_metric "$(grep lost <<<"$metrics" | head -n 5)"; fi
if grep -q 'source-data-lost' "$d/c2.err"; then ok deleted_generation_logged; else bad deleted_generation_logged "nothing in the log"; fi

# --once, the checkpointed generation itself deleted: exit 1, range in the event
topic=t-rotchain-del2-$RUN
etopic=t-rotchain-del2-ev-$RUN
d=$tmp/del2; mkdir -p "$d"; f=$d/dmon.log
python3 "$tmp/writer.py" "$f" 0 1000 100000 0 9 r
"$G" collect --once --host n1 --state-dir "$d/st" --file "$f" --brokers "$B" --topic "$topic" \
   --events-topic "$etopic" --stats-interval 0 2>"$d/c1.err"; rc1=$?
ckoff=$(sed -n 's/^offset=//p' "$d"/st/ckpt-file-* | head -n 1)
python3 "$tmp/writer.py" "$f" 1000 500 100000 0 9 r
mv "$f" "$f.1"; python3 "$tmp/writer.py" "$f" 1500 500 100000 0 9 r
rm "$f.1"   # the checkpointed file, with 1000..1499 unread
"$G" collect --once --host n1 --state-dir "$d/st" --file "$f" --brokers "$B" --topic "$topic" \
   --events-topic "$etopic" --stats-interval 0 2>"$d/c2.err"; rc2=$?
consume "$topic" > "$d/k.tsv"
consume "$etopic" > "$d/e.tsv"
if out=$(python3 "$tmp/check.py" "$d/k.tsv" 2000 1000 1499) && [ "$rc1" = 0 ] && [ "$rc2" = 1 ] &&
   python3 - "$d/e.tsv" "$ckoff" <<'PY'
import json, sys
ev = [json.loads(l.split("\t", 1)[1]) for l in open(sys.argv[1])]
lost = [e for e in ev if e.get("event.action") == "source-data-lost"]
assert len(lost) == 1 and lost[0]["log.offset"] == int(sys.argv[2]), lost
PY
then ok "once_checkpointed_file_deleted_exit_1 ($out)"
else bad once_checkpointed_file_deleted_exit_1 "rc=$rc1/$rc2 ckpt offset=$ckoff $out $(grep lost "$d/c2.err" | head -n 2)"; fi

report
