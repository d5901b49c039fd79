#!/usr/bin/env bash
# `gpulog run` picks its detector profile by itself (issue 11, item 2): input
# without GPU fields (generic CSV) gets `generic`, GPU input keeps `gpu`,
# each choice logged with its reason; an explicit --profile wins; a profile
# that tracks no series after a few hundred events says so on stderr; a
# 5-minute series warms up and is judged (item 1).
# Fast lane, no service. Ends with "N passed, N failed".
set -uo pipefail
. "$(dirname "$0")/lib.sh"
test_tmp t_profile_auto
[ -x "$GPULOG" ] || fail "binary $GPULOG"

# generic CSV, 5-minute samples, one spike in the qps column
{ echo "timestamp,host,qps,lat_ms"
  for i in $(seq 0 399); do
    v=$((100 + i % 7)); [ "$i" = 350 ] && v=900
    printf '%d,db1,%d,%d\n' $((1762473600 + 300 * i)) "$v" $((5 + i % 2))
  done; } > "$tmp/g.csv"

"$GPULOG" run --no-live "$tmp/g.csv" > "$tmp/g.ndjson" 2> "$tmp/g.err"
grep -q 'msg=profile profile=generic reason="the input carries no GPU fields' "$tmp/g.err"
check "generic CSV without --profile: generic, with the reason logged" $? "$(cat "$tmp/g.err")"
grep -q ' 2 series,' "$tmp/g.err" && ! grep -q "tracks no series" "$tmp/g.err"
check "generic CSV without --profile: both columns tracked, no warning" $? "$(cat "$tmp/g.err")"
[ "$(grep -c '"event.type":"start"' "$tmp/g.ndjson")" = 1 ] &&
  grep '"event.type":"start"' "$tmp/g.ndjson" | grep -q '"@timestamp":"2025-11-08T05:10:00.000Z".*"anomaly.metric":"metrics.qps"'
check "generic CSV at 5-minute samples: warmed up, the spike is one episode on its column and time, nothing else" $? "$(head -c 600 "$tmp/g.ndjson")"

"$GPULOG" run --no-live --format csv "$tmp/g.csv" > /dev/null 2> "$tmp/f.err"
grep -q 'msg=profile profile=generic reason="--format csv"' "$tmp/f.err"
check "--format csv: generic, the format logged as the reason" $? "$(cat "$tmp/f.err")"

"$GPULOG" run --no-live --profile gpu "$tmp/g.csv" > /dev/null 2> "$tmp/p.err"
grep -q "profile gpu tracks no series after 300 events (300 metric samples)" "$tmp/p.err" &&
  ! grep -q "msg=profile " "$tmp/p.err"
check "--profile gpu on generic CSV: kept, and stderr says it tracks no series" $? "$(cat "$tmp/p.err")"

"$GPULOG" run --no-live --tz UTC --host dgx-07 data/demo/dgx-07.dmon.txt > "$tmp/d.ndjson" 2> "$tmp/d.err"
grep -q 'msg=profile profile=gpu reason="the input carries GPU fields (gpu.' "$tmp/d.err" &&
  ! grep -q "tracks no series" "$tmp/d.err"
check "dmon input without --profile: gpu, with the reason logged" $? "$(cat "$tmp/d.err")"
"$GPULOG" run --no-live --tz UTC --host dgx-07 --profile gpu data/demo/dgx-07.dmon.txt > "$tmp/d2.ndjson" 2>/dev/null
cmp -s "$tmp/d.ndjson" "$tmp/d2.ndjson"
check "dmon: auto gives the same records as --profile gpu" $?

GPULOG_DETECT_PROFILE=gpu "$GPULOG" run --no-live "$tmp/g.csv" > /dev/null 2> "$tmp/e.err"
grep -q "tracks no series" "$tmp/e.err"
check "detect.profile set in the environment is not overridden" $? "$(cat "$tmp/e.err")"
finish
