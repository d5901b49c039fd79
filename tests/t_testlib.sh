#!/usr/bin/env bash
# t_testlib.sh - the helpers of tests/lib.sh guard what they claim, and the
# script tests use them so that a check can fail:
# - check, check_eq and check_cmd return 1 when they fail (0 when they
#   pass), so "check ... || finish" ends a test early; finish's last line
#   counts the checks and its status is 1 after a failure;
# - no script test passes $? to check on a line whose NAME holds a command
#   substitution "$(...)": it runs before $? is read and resets it, so the
#   check could never fail (write "rc=$?" first, then "check NAME $rc").
# Ends with "N passed, N failed".
set -uo pipefail
. "$(dirname "$0")/lib.sh"
test_tmp t-testlib

# a small test run in a child bash: its output and status
child() {   # BODY: the lines after sourcing lib.sh
  printf '%s\n' 'set -uo pipefail' ". '$PWD/tests/lib.sh'" "$1" > "$tmp/child.sh"
  bash "$tmp/child.sh" > "$tmp/child.out" 2>&1
  echo $? > "$tmp/child.rc"
}

child 'check "a passing check" 0 && echo "status 0"
check "a failing check" 1 || echo "status 1"
check_eq "a failing check_eq" a b || echo "eq status 1"
check_eq "a passing check_eq" a a && echo "eq status 0"
check_cmd "a failing check_cmd" false || echo "cmd status 1"
check_cmd "a passing check_cmd" true && echo "cmd status 0"
report'
out=$(cat "$tmp/child.out")
grep -qx "status 0" <<<"$out" && grep -qx "status 1" <<<"$out" && grep -qx "eq status 1" <<<"$out" &&
  grep -qx "eq status 0" <<<"$out" && grep -qx "cmd status 1" <<<"$out" && grep -qx "cmd status 0" <<<"$out" &&
  grep -qx "3 passed, 3 failed" <<<"$out" && [ "$(cat "$tmp/child.rc")" = 1 ]
check "check, check_eq, check_cmd: status 0 when they pass, 1 when they fail; report counts them" $? "$out"

child 'check "a prerequisite" 1 "it is not there" || finish
echo "went on"
check "a later check" 0
finish'
out=$(cat "$tmp/child.out")
! grep -q "went on" <<<"$out" && [ "$(tail -n 1 <<<"$out")" = "0 passed, 1 failed" ] && [ "$(cat "$tmp/child.rc")" = 1 ]
check "check ... || finish: a failed check ends the test there, exit 1" $? "$out"

# every "check NAME $?" (on one line) whose NAME holds a command
# substitution; $(( )) is arithmetic and leaves $? alone (this file's probe
# below is the one left out)
grep -nE --exclude=t_testlib.sh 'check "([^"\\]|\\.)*\$\([^(]([^"\\]|\\.)*" \$\?' tests/*.sh > "$tmp/lint" 2>/dev/null
[ ! -s "$tmp/lint" ]
check "no script test passes \$? to check after a \$(...) in its name (it would always read 0)" $? "$(cat "$tmp/lint")"
# the lint finds what it looks for
printf '%s\n' 'x; check "stored ($(count) of 3200)" $?' 'check "n $(( 1 + 2 ))" $?' > "$tmp/probe.sh"
[ "$(grep -cE 'check "([^"\\]|\\.)*\$\([^(]([^"\\]|\\.)*" \$\?' "$tmp/probe.sh")" = 1 ]
check "the lint flags \$(count) in a name, not \$(( 1 + 2 ))" $?
finish
