#!/usr/bin/env bash
# `gpulog run` end to end: a generated trace with injected, labelled faults
# is found on the right GPU, metric and time; the NDJSON validates against
# schemas/event.schema.json; output is deterministic (same ids on a replay)
# and the same through --exec; generic CSV works with the generic profile;
# the terminal view (under a pty via script(1)) shows anomalies and a summary;
# bad configurations are usage errors.
set -uo pipefail
. "$(dirname "$0")/lib.sh"
test_tmp t-run

# 40 minutes of 8 GPUs with a hang, a PCIe replay burst and a straggler
"$PY" tools/gentrace.py --seed 9 --hours 0.67 --faults hang,pcie_replay,straggler --host tr-7 \
  -o "$tmp/trace.txt" -l "$tmp/labels.json"
rc=0; "$GPULOG" run --tz UTC --host tr-7 "$tmp/trace.txt" > "$tmp/out.ndjson" 2> "$tmp/err" || rc=$?
check "run exits 0" "$rc" "$(tail -3 "$tmp/err")"
check "run writes records" "$([ -s "$tmp/out.ndjson" ]; echo $?)"
grep -q "anomalies: .* started" "$tmp/err"; check "summary on stderr" $?

# each label is found: an episode on its GPU starting within [start, end + 60 s]
# with the expected rule and metric
"$PY" - "$tmp/labels.json" "$tmp/out.ndjson" > "$tmp/match" <<'PYEOF'
import json, sys, datetime
def ts(s): return datetime.datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()
lab = json.load(open(sys.argv[1]))
recs = [json.loads(l) for l in open(sys.argv[2])]
want = {"hang": ("gpu.hang", "gpu.utilization.gpu.pct"),
        "pcie_replay": ("gpu.pcie.replay", "gpu.pcie.replay"),
        "straggler": ("gpu.peer.clock", "gpu.clock.streaming_multiprocessor_frequency")}
kinds = set()
for l in lab["labels"]:
    rule, metric = want[l["kind"]]
    hit = [r for r in recs if r["event.type"] == "start" and r.get("gpu.index") == l["gpu"]
           and r["rule.id"] == rule and r["anomaly.metric"] == metric
           and ts(l["start"]) <= ts(r["@timestamp"]) <= ts(l["end"]) + 60]
    print(l["kind"], "found" if hit else "MISSING", l)
    if hit: kinds.add(l["kind"])
print("kinds", len(kinds), "labels", len(lab["labels"]))
PYEOF
check "three labelled faults placed" "$(grep -q '^kinds 3 labels 3' "$tmp/match"; echo $?)" "$(cat "$tmp/match")"
check "every fault found on its GPU, rule, metric and time" "$(! grep -q MISSING "$tmp/match"; echo $?)" "$(grep MISSING "$tmp/match")"

# no episode on a GPU without a fault (clean trace of 40 minutes)
"$PY" tools/gentrace.py --seed 8 --hours 0.67 --faults none --host tr-8 -o "$tmp/clean.txt" -l "$tmp/clean.json"
"$GPULOG" run --tz UTC --host tr-8 "$tmp/clean.txt" > "$tmp/clean.ndjson" 2>/dev/null
check "no anomalies on a fault-free trace" "$([ ! -s "$tmp/clean.ndjson" ]; echo $?)" "$(head -c 300 "$tmp/clean.ndjson")"

# schema and NaN-free output
"$PY" - schemas/event.schema.json "$tmp/out.ndjson" > "$tmp/schema" 2>&1 <<'PYEOF'
import json, sys, jsonschema, math
schema = json.load(open(sys.argv[1]))
cls = jsonschema.validators.validator_for(schema)
v = cls(schema)
bad = n = 0
for line in open(sys.argv[2]):
    n += 1
    assert "NaN" not in line and "Infinity" not in line, line
    r = json.loads(line)
    # incidents (gpu.incident) group the episodes: their own fields instead of a metric
    inc = r.get("event.dataset") == "gpu.incident"
    for k in ("event.kind", "event.dataset", "event.type", "rule.id", "event.reason", "event.risk_score",
              "event.severity", "event.start") + (("anomaly.incident_id", "anomaly.rules", "anomaly.rule_count")
                                                  if inc else ("anomaly.metric", "anomaly.value")):
        assert k in r, (k, line)
    assert r["event.kind"] == "alert" and r["event.dataset"] == ("gpu.incident" if inc else "gpu.anomaly")
    assert not inc or (r["rule.id"] == "gpu.incident" and r["event.type"] in ("start", "change", "end")), line
    assert 0 <= r["event.risk_score"] <= 100 and r["event.severity"] in (1, 2, 3)
    for e in v.iter_errors(r):
        bad += 1
        print("invalid:", e.message[:200])
print("records", n, "invalid", bad)
sys.exit(1 if bad or n == 0 else 0)
PYEOF
check "records validate against the event schema" $? "$(tail -3 "$tmp/schema")"

# episodes: every end has a start before it, one open episode per GPU and rule
"$PY" - "$tmp/out.ndjson" <<'PYEOF'
import json, sys
open_ = {}
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r["event.dataset"] == "gpu.incident":
        continue
    k = (r["host.name"], r.get("gpu.index"), r["rule.id"], r["anomaly.metric"])
    if r["event.type"] == "start":
        assert k not in open_, ("two open episodes", k)
        open_[k] = r["event.start"]
    else:
        assert k in open_ and open_[k] == r["event.start"], ("record without its start", k)
        if r["event.type"] == "end":
            del open_[k]
PYEOF
check "episode lifecycle is consistent" $?

# incidents (the gpu profile groups a GPU's overlapping episodes): every
# episode starts inside an open incident of its GPU, which lists its rule;
# an incident ends after the last of its episodes, with the same id; fewer
# incidents than episodes (the straggler's peer and clock rules are one)
"$PY" - "$tmp/out.ndjson" > "$tmp/inc" 2>&1 <<'PYEOF'
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
inc_open, eps_open, n_inc, n_eps, ends = {}, {}, 0, 0, {}
for i, r in enumerate(recs):
    g = (r["host.name"], r.get("gpu.index"))
    if r["event.dataset"] == "gpu.incident":
        if r["event.type"] == "start":
            assert g not in inc_open, ("two open incidents", g)
            inc_open[g] = r["anomaly.incident_id"]
            n_inc += 1
        elif r["event.type"] == "change":    # its action raised by a later episode
            assert inc_open.get(g) == r["anomaly.incident_id"], ("change of an incident not open", r)
        else:
            assert inc_open.get(g) == r["anomaly.incident_id"], ("end of an incident not open", r)
            assert not eps_open.get(g), ("incident over while episodes are open", eps_open.get(g))
            ends[r["anomaly.incident_id"]] = r["anomaly.rules"].split(",")
            del inc_open[g]
        continue
    key = (r["rule.id"], r["anomaly.metric"])
    if r["event.type"] == "start":
        n_eps += 1
        # the incident's start record follows the episode that opened it
        nxt = recs[i + 1] if i + 1 < len(recs) else {}
        assert g in inc_open or (nxt.get("event.dataset") == "gpu.incident" and nxt["event.type"] == "start"
                                 and (nxt["host.name"], nxt.get("gpu.index")) == g), ("episode outside an incident", r)
        eps_open.setdefault(g, set()).add(key)
    elif r["event.type"] == "end":
        eps_open[g].discard(key)
for rules in ends.values():
    assert rules and all(x.startswith("gpu.") for x in rules), rules
print("incidents", n_inc, "episodes", n_eps, "ended", len(ends))
assert 0 < n_inc < n_eps, (n_inc, n_eps)
PYEOF
check "incidents: each episode inside one, ended after its last episode, fewer than episodes" $? "$(tail -3 "$tmp/inc")"

# determinism: a replay gives the same records, ids included; --exec the same
"$GPULOG" run --tz UTC --host tr-7 "$tmp/trace.txt" > "$tmp/out2.ndjson" 2>/dev/null
cmp -s "$tmp/out.ndjson" "$tmp/out2.ndjson"; check "replay gives identical records and ids" $?
"$GPULOG" run --tz UTC --host tr-7 --exec "cat $tmp/trace.txt" > "$tmp/out3.ndjson" 2>/dev/null
cmp -s "$tmp/out.ndjson" "$tmp/out3.ndjson"; check "--exec reads the command's output" $?
"$GPULOG" run --tz UTC --host tr-7 - < "$tmp/trace.txt" > "$tmp/out4.ndjson" 2>/dev/null
cmp -s "$tmp/out.ndjson" "$tmp/out4.ndjson"; check "stdin works the same" $?
"$GPULOG" run --tz UTC --host tr-7 --output "$tmp/file.ndjson" "$tmp/trace.txt" > /dev/null 2>&1
cmp -s "$tmp/out.ndjson" "$tmp/file.ndjson"; check "--output writes the same records" $?
# the config file's one source is the input when the command line names none
printf 'sources:\n  - type: file\n    path: %s\n' "$tmp/trace.txt" > "$tmp/src.yaml"
"$GPULOG" run --config "$tmp/src.yaml" --tz UTC --host tr-7 > "$tmp/out5.ndjson" 2>/dev/null < /dev/null
cmp -s "$tmp/out.ndjson" "$tmp/out5.ndjson"; check "a file source in the config file is run's input" $?
printf 'sources:\n  - type: exec\n    command: cat %s\n' "$tmp/trace.txt" > "$tmp/src2.yaml"
"$GPULOG" run --config "$tmp/src2.yaml" --tz UTC --host tr-7 > "$tmp/out6.ndjson" 2>/dev/null < /dev/null
cmp -s "$tmp/out.ndjson" "$tmp/out6.ndjson"; check "an exec source in the config file is run's input" $?
printf 'sources:\n  - type: file\n    path: /a\n  - type: file\n    path: /b\n' > "$tmp/src3.yaml"
rc=0; "$GPULOG" run --config "$tmp/src3.yaml" > /dev/null 2> "$tmp/err" < /dev/null || rc=$?
check "two config sources: usage error (2) that says run reads one input" \
  "$([ "$rc" = 2 ] && grep -q "run reads one input" "$tmp/err"; echo $?)" "$(cat "$tmp/err")"
printf 'sources:\n  - type: kmsg\n' > "$tmp/src4.yaml"
rc=0; "$GPULOG" run --config "$tmp/src4.yaml" > /dev/null 2> "$tmp/err" < /dev/null || rc=$?
check "a kmsg config source: usage error (2)" "$([ "$rc" = 2 ] && grep -q "cannot read a kmsg source" "$tmp/err"; echo $?)" "$(cat "$tmp/err")"
"$GPULOG" run --config "$tmp/src3.yaml" --tz UTC --host tr-7 "$tmp/trace.txt" > "$tmp/out7.ndjson" 2>/dev/null
cmp -s "$tmp/out.ndjson" "$tmp/out7.ndjson"; check "a FILE argument overrides the config's sources" $?

# generic CSV with the generic profile: a spike in one column
{ echo "timestamp,host,qps,lat_ms"
  for i in $(seq 0 119); do
    v=$((100 + i % 7)); [ "$i" = 100 ] && v=900
    printf '2025-11-07T00:%02d:%02dZ,db1,%d,%d\n' $((i / 60)) $((i % 60)) "$v" $((5 + i % 2))
  done; } > "$tmp/g.csv"
"$GPULOG" run --profile generic "$tmp/g.csv" > "$tmp/g.ndjson" 2>/dev/null
grep -q '"anomaly.metric":"metrics.qps"' "$tmp/g.ndjson" && grep -q '"@timestamp":"2025-11-07T00:01:40.000Z"' "$tmp/g.ndjson" &&
  ! grep -q 'metrics.lat_ms' "$tmp/g.ndjson"
check "generic CSV: the spike, on its column and time, nothing else" $? "$(head -c 400 "$tmp/g.ndjson")"

# the terminal view, under a pseudo-terminal
if command -v script > /dev/null; then
  TERM=dumb script -qec "$GPULOG run --tz UTC --host tr-7 $tmp/trace.txt" /dev/null > "$tmp/tty" 2>&1
  grep -q "OPEN" "$tmp/tty" && grep -q "CLEAR" "$tmp/tty" && grep -q -- "-- summary --" "$tmp/tty" &&
    grep -q "GPU 3" "$tmp/tty" && ! grep -q '"event.kind"' "$tmp/tty"
  check "terminal view: anomalies, GPU status lines and a summary, no JSON" $? "$(tail -5 "$tmp/tty")"
  # incidents apart from the rules and first in the summary (not counted as a rule);
  # grep -c, not grep -q, after tail: grep -q stops reading at its match and
  # tail's next write (past 4 KB) then dies of SIGPIPE, which pipefail counts
  ninc=$(grep -c '"event.type":"start","rule.id":"gpu.incident"' "$tmp/out.ndjson")
  sed 's/\x1b\[[0-9;]*m//g' "$tmp/tty" > "$tmp/tty.txt"
  [ "$(grep -cE "INCIDENT {2,}risk" "$tmp/tty.txt")" = "$ninc" ] && [ "$ninc" -gt 0 ] &&
    awk '/-- incidents --/ && !i {i=NR} /-- summary --/ {s=NR} END {exit !(i && s && i < s)}' "$tmp/tty.txt" &&
    [ "$(tail -40 "$tmp/tty.txt" | grep -c "^  $ninc incidents")" -gt 0 ] && ! grep -Eq '^  gpu\.incident +[0-9]' "$tmp/tty.txt" &&
    grep -Eq '^  tr-7 +GPU [0-9]+ +since' "$tmp/tty.txt" && ! grep -Eq '^ +GPU -?[0-9]+ +since' "$tmp/tty.txt"
  check "terminal view: $ninc incidents shown apart, listed first at the end, each with its host" $? "$(tail -20 "$tmp/tty.txt")"
else
  check "terminal view (script(1) missing)" 1
fi

# usage errors
echo '{"rules":[{"id":"x","detector":"nope","metric":"m"}]}' > "$tmp/bad.json"
rc=0; "$GPULOG" run --detectors "$tmp/bad.json" "$tmp/trace.txt" > /dev/null 2> "$tmp/err" || rc=$?
check "unknown detector is a usage error (2)" "$([ "$rc" = 2 ] && grep -q nope "$tmp/err"; echo $?)"
rc=0; "$GPULOG" run "$tmp/does-not-exist" > /dev/null 2>&1 || rc=$?
check "missing input file exits 1" "$([ "$rc" = 1 ]; echo $?)"

report
