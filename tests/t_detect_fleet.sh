#!/usr/bin/env bash
# needs: kafka opensearch elasticsearch
# t_detect_fleet.sh - several `gpulog detect` members for real (issue 14 item
# 3, issue 19 tests), against the REAL Kafka and OpenSearch of
# scripts/services.sh, and its Elasticsearch (fails when one is unset or
# unreachable): a
# generator of 2,000 GPUs on 250 hosts (8 each, keyed by host.name) fills a
# 12-partition topic in fast event time (samples of 1 Hz with historical
# timestamps, produced in bulk), read by two groups of 3 members at once:
# group S with --state-topic (writing to Elasticsearch), group C without
# (to OpenSearch). Part 1 (70 s of samples, the
# windows warm) is consumed; one member of each group is killed (SIGKILL)
# and the group hands its partitions to the others; part 2 (90 s) carries the
# faults: GPU 0 of every host steps up 10 °C (gpu.temp.rise, a robust z over
# a 64-sample window, judged from 30 samples on) k samples after the part began, k one of 12 values
# from 0 to 70 by host, and GPU 1 of every tenth host runs at 92 °C for 20 s
# (gpu.temp.high, a threshold), and GPU 2 of every tenth host from 30 s
# before the SIGKILL to 50 s after (one episode open across it); then a member joins each group and another is
# stopped cleanly (SIGTERM); part 3 (40 s) lets the episodes end.
# Checks: every temperature fault of a host whose partition stayed with its
# member is detected on its first samples in both groups (kept partitions
# keep their state: no warm-up gap); in group S the moved hosts too; in group
# C the moved hosts' rules judge again only after the window refilled: the
# first sample they judge is measured (the warm-up, docs/operations.md);
# in group S every partition the SIGKILL moved is restored from its snapshot
# by a survivor before the next rebalance;
# every gpu.temp.high fault is detected in both groups; every anomaly record
# any member wrote is in Elasticsearch or OpenSearch exactly once by _id (no extra document,
# no _id twice in two backing indices, every hit read; one start per
# episode). A check whose failure leaves the rest nothing to test ends the
# test there (check ... || finish). Prints the rebalance durations.
# Ends with "N passed, N failed".
set -uo pipefail
. "$(dirname "$0")/lib.sh"
opensearch_kafka_setup
EURL=${ELASTICSEARCH_URL:-}   # group S writes to Elasticsearch, group C to OpenSearch
curl -fsS -m 5 "$EURL/_nodes/_local" >/dev/null 2>&1; check "Elasticsearch answers at '$EURL'" $? || finish
es_of() { if [ "$1" = s ]; then echo "$EURL"; else echo "$URL"; fi; }

test_tmp t-detect-fleet
ID=$$$RANDOM
topic=gpulog-fleet-$ID ST=gpulog-fleet-st-$ID
# the index templates first (on a fresh engine a data stream made without them
# maps event.id as text, and the comparison's sort on it is refused)
for g in s c; do
  "$GPULOG" setup --es "$(es_of $g)" --namespace "fleet$g$ID" > "$tmp/setup.$g.out" 2>&1
  check "gpulog setup on ${g^^}'s engine (namespace fleet$g$ID)" $? "$(tail -n 3 "$tmp/setup.$g.out")" || finish
done
on_exit() {
  [ "$failed" = 0 ] || grep -HE "assigned|revoked|error|restored|cold|lost|evict" "$tmp"/[sc][0-9].err 2>/dev/null |
    sed "s|^$tmp/||" | head -80
  for g in s c; do curl -s -o /dev/null -XDELETE "$(es_of $g)/_data_stream/logs-gpu.anomaly-fleet$g$ID"; done
  for m in "${pids[@]}"; do kill -KILL "$m" 2>/dev/null; done   # the members first: they would create them again
  "$PY" tests/tools/kafka_admin.py "$B" --delete "$topic" "$ST" 2>/dev/null   # ~140 MB of samples
}
KX=(-X session.timeout.ms=6000 -X heartbeat.interval.ms=500)
NPART=12 T1=70 T2=160 T3=200   # part 1 = [0, T1) s, part 2 = [T1, T2), part 3 = [T2, T3)

"$PY" tests/tools/kafka_admin.py "$B" "$topic" "$NPART" 2> "$tmp/create.err"
check "topic with $NPART partitions" $? "$(cat "$tmp/create.err")" || finish
"$PY" - "$tmp" "$T1" "$T2" "$T3" <<'EOF'
import sys
tmp, t1, t2, t3 = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
K = [0, 10, 20, 30, 40, 50, 55, 58, 59, 60, 62, 70]   # the step of host h begins K[h % 12] samples into part 2
tpl = ('fleet-%03d\t{"@timestamp":"2025-11-07T10:%02d:%02d.000Z","event.kind":"metric","event.dataset":"gpu.dmon",'
       '"event.id":"%08x%08x%016x","agent.name":"gpulog","agent.version":"0.1.0","host.name":"fleet-%03d",'
       '"gpu.index":%d,"gpu.temperature.gpu":%d,"gpu.power.usage":%d,"gpu.utilization.gpu.pct":90}\n')
files = [open("%s/part%d" % (tmp, i), "w") for i in (1, 2, 3)]
for s in range(t3):
    f = files[0 if s < t1 else 1 if s < t2 else 2]
    out = []
    for h in range(250):
        for g in range(8):
            t = 48 + (s * 7 + g * 3 + h) % 3
            if g == 0 and t1 + K[h % 12] <= s < t2: t += 10
            if g == 1 and h % 10 == 5 and t1 + 30 <= s < t1 + 50: t = 92
            if g == 2 and h % 10 == 3 and t1 - 30 <= s < t1 + 50: t = 92   # open across the SIGKILL
            out.append(tpl % (h, s // 60, s % 60, h, g, s, h, g, t, 250 + (s * 3 + g + h) % 5))
    f.write("".join(out))
for f in files: f.close()
EOF
check "generated $(( T3 * 2000 )) samples of 2,000 GPUs on 250 hosts" $? || finish
produce() { kcat -b "$B" -P -t "$topic" -K '\t' -l "$tmp/part$1" 2>> "$tmp/kcat.err"; }
member() {   # $1 group s|c, $2 name: records $tmp/$1$2.ndjson, log $tmp/$1$2.err, pid in mpid
  local st=(); [ "$1" = s ] && st=(--state-topic "$ST" --snapshot-interval 1)
  "$GPULOG" detect --brokers "$B" --group "gpulog-fleet-$1-$ID" --topics "$topic" "${KX[@]}" "${st[@]}" \
    --es "$(es_of "$1")" --es-namespace "fleet$1$ID" --es-batch-age-ms 100 --metrics-addr 127.0.0.1:0 \
    --output "$tmp/$1$2.ndjson" 2> "$tmp/$1$2.err" &
  mpid=$!; pids+=("$mpid"); echo "$mpid" > "$tmp/$1$2.pid"
}
held() { awk '/: assigned / {n++} /: revoked / {n--} END {print n+0}' "$tmp/$1.err" 2>/dev/null; }
live=(s1 s2 s3 c1 c2 c3)
all_held() {   # every partition held once in each group, by live members, each holding some
  local g m n h
  for g in s c; do
    n=0
    for m in "${live[@]}"; do
      [ "${m:0:1}" = "$g" ] || continue
      h=$(held "$m"); [ "$h" -ge 1 ] || return 1; n=$((n + h))
    done
    [ "$n" = "$NPART" ] || return 1
  done
}
lag_of() {
  curl -s -m 2 "http://127.0.0.1:$(port_of "$tmp/$1.err")/metrics" | awk '/^gpulog_consumer_lag_messages / {print $2}'
}
caught_up() { local m; for m in "${live[@]}"; do [ "$(lag_of "$m")" = 0 ] || return 1; done; }
settle() {   # $1 messages produced so far: both groups committed them at the broker (asked of it: a
  # member's lag gauge reads 0 before its first refresh and counts a commit once requested), and
  # every live member's gauge (refreshed every 2 s) reads 0; $2 = snap: snapshots written (every 1 s)
  wait_for 900 group_committed "gpulog-fleet-s-$ID" "$topic" "$1" || return 1
  wait_for 900 group_committed "gpulog-fleet-c-$ID" "$topic" "$1" || return 1
  wait_for 900 caught_up || return 1
  [ "${2:-}" != snap ] || sleep 1.5
}
for m in "${live[@]}"; do member "${m:0:1}" "${m:1}"; done
wait_for 300 all_held; check "two groups of 3 members share the $NPART partitions" $? "$(for m in "${live[@]}"; do echo "$m $(held "$m")"; done)" || finish
sleep 1   # a late joiner's rebalance ends (no partition may move while part 1 is read: its new owner would start cold)
produce 1; check "produce part 1 ($T1 s, $(( T1 * 2000 )) samples)" $? "$(cat "$tmp/kcat.err")" || finish
settle $((T1 * 2000)) snap; check "part 1 consumed and committed by both groups" $? "$(for m in "${live[@]}"; do echo "$m lag $(lag_of "$m")"; done)"

# SIGKILL one member of each group; the others take its partitions
for g in s c; do
  grep -oE ": assigned [^ ]+" "$tmp/${g}1.err" | sed 's/.*\[\([0-9]*\)\]/\1/' | sort > "$tmp/${g}1.parts"
  grep -oE ": revoked [^ ]+" "$tmp/${g}1.err" | sed 's/.*\[\([0-9]*\)\]/\1/' | sort > "$tmp/${g}1.gone"
  comm -23 "$tmp/${g}1.parts" "$tmp/${g}1.gone" > "$tmp/${g}.moved"
  p=$(cat "$tmp/${g}1.pid"); { kill -9 "$p"; wait "$p"; } 2>/dev/null
done
for m in s2 s3; do wc -l < "$tmp/$m.err" > "$tmp/$m.at_kill"; done   # what the survivors logged before it
t0=$(date +%s%N); live=(s2 s3 c2 c3)
wait_for 600 all_held; rc=$?; kill_ms=$(( ($(date +%s%N) - t0) / 1000000 ))
check "SIGKILL: the survivors hold all partitions again after ${kill_ms} ms (moved: S $(paste -sd, "$tmp/s.moved"), C $(paste -sd, "$tmp/c.moved"))" $rc
produce 2; check "produce part 2 ($(( (T2 - T1) * 2000 )) samples, the faults)" $? "$(cat "$tmp/kcat.err")" || finish
settle $((T2 * 2000)); check "part 2 consumed and committed" $? "$(for m in "${live[@]}"; do echo "$m lag $(lag_of "$m")"; done)"

# the partitions the SIGKILL moved in group S: restored by the survivors
# between the SIGKILL and the join (restores at the later rebalances do not count)
restored_after_kill() {
  local m
  for m in s2 s3; do sed -n "$(( $(cat "$tmp/$m.at_kill") + 1 )),\$p" "$tmp/$m.err"; done |
    sed -n "s|.*: $topic/\([0-9]*\): detector state restored from its snapshot .*|\1|p" | sort -u
}
restored_after_kill > "$tmp/s.restored"
missing=$(comm -23 <(sort -u "$tmp/s.moved") "$tmp/s.restored" | paste -sd,)
[ -s "$tmp/s.moved" ] && [ -z "$missing" ]; rc=$?   # (the $(...) in the name would reset $?)
check "S: every partition the SIGKILL moved ($(paste -sd, "$tmp/s.moved")) was restored from its snapshot by a survivor before the next rebalance (restored: $(paste -sd, "$tmp/s.restored"))" $rc "not restored: ${missing:-none moved}"

# a member joins each group, then another stops cleanly
member s 4; member c 4; t0=$(date +%s%N); live=(s2 s3 s4 c2 c3 c4)
wait_for 600 all_held; rc=$?; join_ms=$(( ($(date +%s%N) - t0) / 1000000 ))
check "a member joins each group: it holds partitions ${join_ms} ms after it started" $rc
t0=$(date +%s%N)
for g in s c; do kill -TERM "$(cat "$tmp/${g}2.pid")"; done
for g in s c; do wait "$(cat "$tmp/${g}2.pid")"; check "member ${g}2 stops on SIGTERM (exit 0)" $? "$(tail -3 "$tmp/${g}2.err")"; done
live=(s3 s4 c3 c4)
wait_for 600 all_held; rc=$?; term_ms=$(( ($(date +%s%N) - t0) / 1000000 ))
check "SIGTERM: the others hold all partitions ${term_ms} ms after the signal" $rc
produce 3; check "produce part 3" $? "$(cat "$tmp/kcat.err")" || finish
settle $((T3 * 2000)); check "part 3 consumed and committed" $? "$(for m in "${live[@]}"; do echo "$m lag $(lag_of "$m")"; done)"
echo "     rebalance: SIGKILL ${kill_ms} ms (session.timeout.ms 6000), join ${join_ms} ms, SIGTERM ${term_ms} ms"

for g in s c; do curl -s -o /dev/null -XPOST "$(es_of $g)/logs-gpu.anomaly-fleet$g$ID/_refresh"; done
"$PY" - "$EURL,$URL" "$ID" "$tmp" "$T1" "$NPART" "$T2" > "$tmp/cmp" 2>&1 <<'EOF'
import glob, json, sys, urllib.request, zlib
from datetime import datetime, timezone
url, rid, tmp, t1, npart, t2 = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
K = [0, 10, 20, 30, 40, 50, 55, 58, 59, 60, 62, 70]
T0 = datetime(2025, 11, 7, 10, 0, 0, tzinfo=timezone.utc).timestamp()
def sec(ts): return int(datetime.strptime(ts, "%Y-%m-%dT%H:%M:%S.%f%z").timestamp() - T0)
def part_of(host):   # librdkafka's default partitioner (consistent_random): CRC32 of the key
    return zlib.crc32(host.encode()) % npart
def es_docs(url, index):
    """Every document of the data stream -> ({_id: source}, [_ids seen again],
    hits read, hits the engine counts): a second document with an _id (in
    another backing index) is read too (sorted by event.id, then index)."""
    docs, after, dups, nread, total = {}, None, [], 0, None
    while True:
        q = {"size": 5000, "sort": [{"event.id": "asc"}, {"_index": "asc"}], "query": {"match_all": {}},
             "track_total_hits": True}
        if after: q["search_after"] = after
        req = urllib.request.Request(url + "/" + index + "/_search", data=json.dumps(q).encode(),
                                     headers={"Content-Type": "application/json"})
        res = json.load(urllib.request.urlopen(req))["hits"]
        if total is None: total = res["total"]["value"]
        hits = res["hits"]
        if not hits: return docs, dups, nread, total
        for h in hits:
            nread += 1
            if h["_id"] in docs:
                dups.append(h["_id"])
                print("     DUPLICATE _id %s (%s)" % (h["_id"], h["_index"]))
            docs[h["_id"]] = h["_source"]
        after = hits[-1]["sort"]
ok = True
engine = {"s": "Elasticsearch", "c": "OpenSearch"}
def check(what, good):
    global ok
    print(("ok   " if good else "FAIL ") + what)
    ok &= bool(good)
res = {}
for g in "sc":
    moved = {int(l) for l in open("%s/%s.moved" % (tmp, g)) if l.strip()}
    recs = [json.loads(l) for p in sorted(glob.glob("%s/%s*.ndjson" % (tmp, g))) for l in open(p)]
    docs, dups, nread, total = es_docs(url.split(",")[0 if g == "s" else 1], "logs-gpu.anomaly-fleet%s%s" % (g, rid))
    ids = {r["event.id"] for r in recs}
    check("%s: every record written (%d, %d distinct ids) is in %s exactly once by _id (%d documents, %d _ids "
          "twice, %d of %d hits read), no other" % (g.upper(), len(recs), len(ids), engine[g], len(docs), len(dups),
                                                  nread, total),
          ids == set(docs) and len(docs) > 0 and not dups and nread == total)
    eps = {}
    for d in docs.values():
        if d["event.type"] == "start":
            eps.setdefault((d["host.name"], d.get("gpu.index"), d["rule.id"], d["event.start"]), []).append(d)
    starts = {}
    for d in docs.values():
        if d["event.type"] == "start":
            starts.setdefault((d["host.name"], d.get("gpu.index"), d["rule.id"]), []).append(d)
    hist = {}
    for k in starts: hist[k[2]] = hist.get(k[2], 0) + 1
    print("     %s: GPUs with a start per rule: %s" % (g.upper(), ", ".join("%s %d" % kv for kv in sorted(hist.items()))))
    one = all(len(v) == 1 for k, v in starts.items() if k[2] in ("gpu.temp.high", "gpu.temp.rise"))
    check("%s: one start per faulty GPU and rule in %s (%d)" % (g.upper(), engine[g], len(starts)), one)
    # GPU 2 of every tenth host: hot from 30 s before the SIGKILL to 50 s after
    span = ["fleet-%03d" % h for h in range(250) if h % 10 == 3]
    smoved = [x for x in span if part_of(x) in moved]
    wst = {x: sum(1 for r in recs if r["host.name"] == x and r.get("gpu.index") == 2 and r["rule.id"] == "gpu.temp.high"
                  and r["event.type"] == "start") for x in span}
    est = {x: [d for d in docs.values() if d["host.name"] == x and d.get("gpu.index") == 2 and d["rule.id"] == "gpu.temp.high"]
           for x in span}
    stored_one = all(sum(d["event.type"] == "start" for d in v) == 1 and len({d["anomaly.episode_id"] for d in v}) == 1
                     for v in est.values())
    check("%s: the fault open across the SIGKILL (%d GPUs, %d moved): one start and one episode id in %s each"
          % (g.upper(), len(span), len(smoved), engine[g]), stored_one)
    print("     %s: starts written for it (all members): kept hosts %s, moved hosts %s" % (g.upper(),
          sorted({wst[x] for x in span if x not in smoved}), sorted({wst[x] for x in smoved})))
    if g == "s":
        ends = all(sum(d["event.type"] == "end" for d in v) == 1 for v in est.values())
        check("S: its moved GPUs went on warm: one start written in all, not even a second one answered 409; "
              "one end each in Elasticsearch", len(smoved) > 0 and all(v == 1 for v in wst.values()) and ends)
    high = [h for h in range(250) if h % 10 == 5]
    got = [h for h in high if ("fleet-%03d" % h, 1, "gpu.temp.high") in starts]
    check("%s: every gpu.temp.high fault detected (%d of %d)" % (g.upper(), len(got), len(high)), len(got) == len(high))
    # the step of GPU 0: the first sample judged anomalous (event.start) against the fault's first sample
    kept_lag, moved_rows = [], []
    for h in range(250):
        host = "fleet-%03d" % h
        st = [sec(r["event.start"]) for r in recs if r["host.name"] == host and r.get("gpu.index") == 0
              and r["rule.id"] == "gpu.temp.rise" and r["event.type"] == "start"]
        first = min(st) - t1 if st else None
        k = K[h % 12]
        if part_of(host) in moved: moved_rows.append((k, first))
        else: kept_lag.append(None if first is None else first - k)
    res[g] = moved_rows
    check("%s: the %d hosts whose partition stayed detect their step on its first sample (lags %s)"
          % (g.upper(), len(kept_lag), sorted(set(kept_lag), key=str)), len(kept_lag) > 0 and set(kept_lag) == {0})
    if g == "s":   # the steps' episodes were open across the join and the SIGTERM
        w0 = {}
        for r in recs:
            if r.get("gpu.index") == 0 and r["rule.id"] == "gpu.temp.rise" and r["event.type"] != "change":
                w0.setdefault((r["host.name"], r["event.type"]), []).append(r)
        e0 = sum(1 for d in docs.values() if d.get("gpu.index") == 0 and d["rule.id"] == "gpu.temp.rise"
                 and d["event.type"] == "end")
        nopen = sum(1 for k, v in w0.items() if k[1] == "end" and sec(v[0]["@timestamp"]) >= t2)
        check("S: the steps' episodes (%d still open while a member joined and another stopped): one start and one "
              "end written each in all outputs (%d GPUs), %d ends stored" % (nopen, sum(1 for k in w0 if k[1] == "start"), e0),
              all(len(v) == 1 for v in w0.values()) and len(w0) == 500 and e0 == 250 and nopen > 0)
        lags = [None if f is None else f - k for k, f in moved_rows]
        check("S: the %d moved hosts (state restored) detect their step on its first sample too (lags %s)"
              % (len(moved_rows), sorted(set(lags), key=str)), len(moved_rows) > 0 and set(lags) == {0})
# the snapshots restored in group S: bytes per GPU (these GPUs report 3 metrics)
import re
per = []
for path in glob.glob("%s/s[0-9].err" % tmp):
    for m in re.finditer(r"/(\d+): detector state restored from its snapshot \(offset \d+, (\d+) bytes", open(path).read()):
        ngpu = 8 * sum(1 for h in range(250) if part_of("fleet-%03d" % h) == int(m.group(1)))
        if ngpu: per.append(int(m.group(2)) / ngpu)
if per: print("     S: restored snapshots: %d, %.0f-%.0f bytes per GPU" % (len(per), min(per), max(per)))
# group C, moved hosts: which sample after the move the rules first judge
rows = res["c"]
check("C: %d hosts moved cold" % len(rows), len(rows) > 0)
by_k = {}
for k, f in rows: by_k.setdefault(k, set()).add("missed" if f is None else f)
print("     C moved hosts, step at sample k -> first sample judged anomalous: " +
      ", ".join("%d->%s" % (k, "/".join(str(x) for x in sorted(v, key=str))) for k, v in sorted(by_k.items())))
late = [f for k, f in rows if f is not None and f > k]
missed = sum(1 for k, f in rows if f is None)
warm = min(late) if late else None
print("     warm-up without --state-topic: a moved host's rules judge from sample %s of its new owner "
      "(%d steps detected late, %d missed); with --state-topic: from sample 0" % (warm, len(late), missed))
sys.exit(0)   # the checks are counted above; non-zero only when this script broke
EOF
rc=$?
while IFS= read -r l; do
  case "$l" in "ok   "*) ok "${l#ok   }" ;; "FAIL "*) bad "${l#FAIL }" ;; *) echo "$l" ;; esac
done < "$tmp/cmp"
check "the comparison ran to its end" $rc "$(tail -3 "$tmp/cmp")"
finish
