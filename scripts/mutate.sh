#!/usr/bin/env bash
# mutate.sh - the mutation pass: do the tests notice when a key constant or
# condition of the detectors or sinks changes? Each row of the table below
# is one small change (a mutation) of one source file. For each, a scratch
# copy of the source (never this tree) gets the change, is built (only the
# changed file is compiled again: the scratch build starts from a copy of
# $BUILD's objects) and runs the tests of the row, in order, until one
# fails. A mutation no test fails on "survives": a behaviour no test pins.
# First the row's tests run once on the unchanged copy: they must pass, or
# the pass says so and fails (a red test cannot tell a mutation apart).
#
# How the rows were chosen (docs/detectors.md, "Quality" lists them too):
# for each rule of the gpu profile whose behaviour the docs promise, its
# deciding threshold and its for/clear counts (how long before an episode
# opens, how long before it ends); the peer rules' limits; the engine's
# episode conditions (for, storm back-off) and episode numbering (the ids
# that make a record stored once: dedupe); the generic profile's tail and
# its confirming view and its lone-sample view; the
# Elasticsearch sink's verdicts (409 = already stored, 429/5xx = send
# again, the rest to the dead letter file) and its back-off. Each change is
# the kind of slip a hand makes (a value off by a lot, a comparison turned,
# a line dropped), large enough that the documented behaviour is gone.
# Left out as equivalent (no behaviour can tell them apart): gpu.temp.rise's
# min_dev lowered (|z| >= 4 at the scale's floor of 1 already means 4 C),
# and a change record's id without its sequence number (its time tells the
# changes of one episode apart); a clear count at or under the rule's
# cooldown shows only on samples sparser than 1 s, so the tests pin those
# there (tests/test_gpu_rules.c).
#
# usage: scripts/mutate.sh [NAME...]   (default: every row; BUILD=build)
# Prints "ok   NAME: killed by TEST" or "FAIL NAME: survived (TESTS)" per
# row, the survivors, and ends with "N passed, N failed" (exit 1 when a
# mutation survived, a row no longer applies, or a test fails unmutated).
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BUILD=${BUILD:-build}
PY=/usr/bin/python3
case "$BUILD" in *asan*) echo "mutate.sh: $BUILD is a sanitizer build: the mutation pass seeds from a plain one (BUILD=build)" >&2; exit 2 ;; esac
unset MAKEFLAGS MAKELEVEL MFLAGS SANITIZE   # under make test: a make of its own, plain

# NAME <TAB> FILE <TAB> ANCHOR <TAB> OLD <TAB> NEW <TAB> TESTS
# OLD is replaced by NEW at its first occurrence after ANCHOR (ANCHOR must
# occur once in FILE; OLD within 600 characters of it). TESTS: unit tests
# (test_X) and script tests (t_X.sh, t_X.py), run in that order.
TABLE=$(cat <<'EOF'
temp.high.high	detect/config.c	\"id\":\"gpu.temp.high\"	\"high\":87	\"high\":95	test_detectors test_episode_end
temp.high.clear_high	detect/config.c	\"id\":\"gpu.temp.high\"	\"clear_high\":82	\"clear_high\":87	test_episode_end test_detectors
temp.high.for	detect/config.c	\"id\":\"gpu.temp.high\"	\"for\":10	\"for\":1	test_gpu_rules test_detectors
temp.high.clear	detect/config.c	\"id\":\"gpu.temp.high\"	\"clear\":10	\"clear\":1	test_gpu_rules
temp.rise.z	detect/config.c	\"id\":\"gpu.temp.rise\"	\"z\":4	\"z\":8	test_gpu_rules test_gpu_faults
temp.rise.min_dev	detect/config.c	\"id\":\"gpu.temp.rise\"	\"min_dev\":4	\"min_dev\":6	test_gpu_rules test_gpu_faults
temp.rise.clear	detect/config.c	\"id\":\"gpu.temp.rise\"	\"clear\":20	\"clear\":2	test_gpu_rules
temp.excess.for	detect/config.c	\"id\":\"gpu.temp.excess\"	\"for\":10	\"for\":1	test_gpu_faults
temp.excess.clear	detect/config.c	\"id\":\"gpu.temp.excess\"	\"clear\":10	\"clear\":1	test_gpu_faults
thermal.for	detect/config.c	\"id\":\"gpu.thermal\"	\"for\":3	\"for\":30	test_detectors test_gpu_faults
power.cap.for	detect/config.c	\"id\":\"gpu.power.cap\"	\"for\":5	\"for\":50	test_gpu_faults test_episode_end
power.idle.for	detect/config.c	\"id\":\"gpu.power.idle\"	\"for\":10	\"for\":100	test_gpu_faults test_detectors
hang.for	detect/config.c	\"id\":\"gpu.hang\"	\"for\":8	\"for\":80	test_detectors test_gpu_faults
mem.leak.clear	detect/config.c	\"id\":\"gpu.mem.leak\"	\"clear\":30	\"clear\":1	test_gpu_faults
clock.drop.for	detect/config.c	\"id\":\"gpu.clock.drop\"	\"for\":5	\"for\":50	test_gpu_rules test_gpu_faults
peer.clock.rel	detect/config.c	\"id\":\"gpu.peer.clock\"	\"rel\":0.12	\"rel\":0.5	test_gpu_faults test_detectors
peer.power.rel	detect/config.c	\"id\":\"gpu.peer.power\"	\"rel\":0.25	\"rel\":0.05	test_gpu_rules test_gpu_faults
peer.temp.min_abs	detect/config.c	\"id\":\"gpu.peer.temp\"	\"min_abs\":15	\"min_abs\":40	test_gpu_rules test_gpu_faults
peer.temp.for	detect/config.c	\"id\":\"gpu.peer.temp\"	\"for\":30	\"for\":3	test_gpu_rules test_gpu_faults
ecc.sbe.min_increase	detect/config.c	\"id\":\"gpu.ecc.sbe\"	\"min_increase\":10	\"min_increase\":100	test_gpu_rules
ecc.dbe.min_increase	detect/config.c	\"id\":\"gpu.ecc.dbe\"	\"min_increase\":1	\"min_increase\":5	test_gpu_rules
missing.after_s	detect/config.c	\"id\":\"gpu.missing\"	\"after_s\":5	\"after_s\":60	test_gpu_rules test_detectors
generic.likelihood.clear	detect/config.c	\"id\":\"metric.likelihood\"	\"clear\":5	\"clear\":1	test_gpu_rules
generic.likelihood.confirm	detect/config.c	\"id\":\"metric.likelihood\"	\"confirm\":20	\"confirm\":0	test_detectors
generic.likelihood.point	detect/config.c	\"id\":\"metric.likelihood\"	\"point\":10	\"point\":0	test_detectors
engine.for_reached	detect/episode.c	if (!ep->open) {	ep->bad_run >= rc->for_n	ep->bad_run > rc->for_n	test_detectors test_episode_end
engine.clear_reached	detect/episode.c	if (ep->good_run < 65535) ep->good_run++;	ep->good_run >= rc->clear_n	ep->good_run > rc->clear_n	test_gpu_rules test_gpu_faults test_episode_end
engine.storm_backoff	detect/episode.c	if (ep->id_set && ep->first_bad - ep->last_change <= rearm) {	if (ep->backoff < 4) ep->backoff++;	ep->backoff = 0;	test_gpu_faults
engine.cooldown	detect/episode.c	if (ep->good_run < 65535) ep->good_run++;	ts - ep->last_anom >= (rc->cooldown_ms << ep->backoff)	ts - ep->last_anom >= 0	test_episode_end test_gpu_faults test_detectors
ids.episode_number	detect/episode.c	static void episode_number(struct episode *ep)	if (ep->id_n < 254) ep->id_n++;	(void)0;	test_episode_ids
ids.episode_key_n	detect/episode.c	static void episode_key(	hash128_feed_u64(h, ep->id_n);	(void)0;	test_episode_ids
ids.record_type	detect/episode.c	hash128_hex(&h, epid);	hash128_feed_u64(&h, (uint64_t)type);	(void)0;	test_episode_ids test_detectors
ids.change_time	detect/episode.c	if (type == REC_CHANGE) {	hash128_feed_u64(&h, (uint64_t)ts);	(void)0;	test_episode_ids test_detectors
es.409_stored	sinks/es_bulk.c	enum es_verdict es_item_verdict(int status)	if (status == 409) return ES_STORED;	if (status == 409) return ES_REJECT;	test_es_bulk
es.429_retried	sinks/es_bulk.c	enum es_verdict es_item_verdict(int status)	if (status == 429 ||	if (status == 428 ||	test_es_bulk
es.5xx_retried	sinks/es_bulk.c	enum es_verdict es_item_verdict(int status)	(status >= 500 && status < 600)	(status >= 500 && status < 501)	test_es_bulk
es.backoff_doubles	sinks/es_bulk.c	int64_t es_backoff_ms(	d *= 2;	d *= 1;	test_es_bulk
es.retry_item_again	sinks/es.c	case ES_RETRY:	delay_item(e, it, now);	reject_item(e, it, status, "mutated", now);	test_es_bulk
es.409_counted_stored	sinks/es.c	case ES_STORED:	settle(e, it, SINK_STORED);	settle(e, it, SINK_DEADLETTER);	test_es_bulk
EOF
)

S=$(mktemp -d "${TMPDIR:-/tmp}/gpulog-mutate.XXXXXX")
trap 'rm -rf "$S"' EXIT
t0=$SECONDS
# the scratch copy: the files git tracks or would (new ones too, not the
# ignored), else the tree less its builds; mtimes kept, so make compiles
# only what is newer than $BUILD's objects
mkdir -p "$S/pristine" "$S/src"
if git rev-parse --git-dir >/dev/null 2>&1; then
  git ls-files -z --cached --others --exclude-standard | xargs -0 tar -cf - 2>/dev/null | tar -xf - -C "$S/pristine/" ||
    { echo "mutate.sh: cannot copy the tree" >&2; exit 2; }
else
  tar -cf - --exclude=./build --exclude='./build-*' --exclude=./.cache . | tar -xf - -C "$S/pristine/"
fi
(cd "$S/pristine" && tar -cf - .) | tar -xf - -C "$S/src/"
# the seed: $BUILD's objects and library, never its programs (each build
# links the ones it needs against the mutated library)
seed="$S/seed"
if [ -d "$ROOT/$BUILD" ]; then cp -a "$ROOT/$BUILD" "$seed"; else mkdir -p "$seed"; fi
rm -f "$seed/gpulog" "$seed"/tests/test_* "$seed"/tests/replay_*

passed=0; failed=0; survivors=()
ok() { passed=$((passed + 1)); echo "ok   $1"; }
bad() { failed=$((failed + 1)); echo "FAIL $1"; }

# builds TARGETS... in the scratch tree from a fresh copy of the seed objects
build() {
  rm -rf "$S/src/build"; cp -a "$seed" "$S/src/build"
  (cd "$S/src" && make -s -j2 WERROR=1 BUILD=build "$@" > "$S/make.log" 2>&1)
}
targets_of() {   # TESTS... -> the make targets they need
  local t out=(build/gpulog)
  for t in "$@"; do case $t in test_*) out+=("build/tests/$t") ;; esac; done
  echo "${out[@]}"
}
# runs one test in the scratch tree: status 0 when it passed
run_test() {
  local t=$1 log=$S/test.log
  case $t in
    # (each in a subshell that exits by itself: a crash is reported into the log)
    test_*) (cd "$S/src" && timeout 300 "build/tests/$t"; exit $?) > "$log" 2>&1 ;;
    *.sh) (cd "$S/src" && BUILD=build GPULOG="$S/src/build/gpulog" timeout 300 bash "tests/$t"; exit $?) > "$log" 2>&1 ;;
    *.py) (cd "$S/src" && BUILD=build GPULOG="$S/src/build/gpulog" timeout 300 "$PY" "tests/$t"; exit $?) > "$log" 2>&1 ;;
  esac
  local rc=$?
  [ "$rc" = 0 ] && ! grep -qE '^[0-9]+ passed, [1-9][0-9]* failed' "$log"
}
# applies row (file anchor old new) to the scratch tree's file
apply() {
  "$PY" - "$S/src/$1" "$2" "$3" "$4" <<'PYEOF'
import sys
path, anchor, old, new = sys.argv[1:5]
s = open(path).read()
n = s.count(anchor)
if n != 1:
    sys.exit("anchor %r occurs %d times in %s" % (anchor, n, path))
a = s.index(anchor)
i = s.find(old, a)
if i < 0 or i - a > 600:
    sys.exit("%r not found within 600 characters after %r in %s" % (old, anchor, path))
open(path, "w").write(s[:i] + new + s[i + len(old):])
PYEOF
}
restore() { cp -p "$S/pristine/$1" "$S/src/$1"; }

# the rows asked for (all by default)
mapfile -t rows < <(printf '%s\n' "$TABLE" | grep -v '^$')
if [ $# -gt 0 ]; then
  sel=()
  for r in "${rows[@]}"; do for n in "$@"; do [ "${r%%$'\t'*}" = "$n" ] && sel+=("$r"); done; done
  [ ${#sel[@]} = $# ] || { echo "mutate.sh: unknown mutation among: $*" >&2; exit 2; }
  rows=("${sel[@]}")
fi

# unmutated: every test named must pass
all=()
for r in "${rows[@]}"; do IFS=$'\t' read -r _ _ _ _ _ tests <<<"$r"; for t in $tests; do
  [[ " ${all[*]} " == *" $t "* ]] || all+=("$t"); done; done
# shellcheck disable=SC2046
if ! build $(targets_of "${all[@]}"); then
  echo "FAIL the unmutated scratch copy builds:"; sed 's/^/     /' "$S/make.log" | tail -20
  echo "0 passed, 1 failed"; exit 1
fi
red=()
for t in "${all[@]}"; do run_test "$t" || red+=("$t"); done
if [ ${#red[@]} -gt 0 ]; then
  bad "the tests pass unmutated (red: ${red[*]})"
  echo "$passed passed, $failed failed"; exit 1
fi
ok "the ${#all[@]} tests of the table pass unmutated ($((SECONDS - t0)) s)"

for r in "${rows[@]}"; do
  IFS=$'\t' read -r name file anchor old new tests <<<"$r"
  ts=$SECONDS
  if ! err=$(apply "$file" "$anchor" "$old" "$new" 2>&1); then
    bad "$name: the row no longer applies to $file ($err)"; restore "$file"; continue
  fi
  # shellcheck disable=SC2046,SC2086
  if ! build $(targets_of $tests); then
    # a mutation that does not build is no test of the tests: say so
    bad "$name: the mutated copy does not build ($(grep -m1 'error' "$S/make.log"))"; restore "$file"; continue
  fi
  killer=""
  for t in $tests; do run_test "$t" || { killer=$t; break; }; done
  restore "$file"
  if [ -n "$killer" ]; then ok "$name: killed by $killer ($((SECONDS - ts)) s)"
  else bad "$name: survived ($tests; $((SECONDS - ts)) s)"; survivors+=("$name"); fi
done
echo "mutate: ${#rows[@]} mutations, ${#survivors[@]} survived${survivors[*]:+: ${survivors[*]}}; $((SECONDS - t0)) s"
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
