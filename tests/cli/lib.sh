# lib.sh: helpers for the end-to-end shell tests (sourced, never run alone).
# Each test file sets SUITE, calls ok/fail through the check helpers, and ends with `finish`.
set -u
BIN=${UNMASK_BIN:-./unmask}
_pass=0; _fail=0; _skip=0
TMP=$(mktemp -d); trap 'rm -rf "$TMP"' EXIT
ok()   { echo "ok   $1"; _pass=$((_pass + 1)); }
fail() { echo "FAIL $1"; [ $# -gt 1 ] && printf '    %s\n' "$2"; _fail=$((_fail + 1)); }
skip() { echo "skip $1: $2"; _skip=$((_skip + 1)); }
# expect_rc NAME RC CMD... : run CMD, check exit status
expect_rc() { local name=$1 want=$2; shift 2; "$@" >"$TMP/out" 2>"$TMP/err"; local rc=$?
  if [ "$rc" -eq "$want" ]; then ok "$name"; else fail "$name" "exit $rc, wanted $want; stderr: $(head -c 400 "$TMP/err")"; fi; }
# expect_out NAME PATTERN FILE : grep -E PATTERN in FILE
expect_grep() { if grep -qE -- "$2" "$3"; then ok "$1"; else fail "$1" "no /$2/ in $(head -c 400 "$3")"; fi; }
# temps_in DIR : the temporary files an unfinished output left in DIR (outfile.c names them
# ".NAME.XXXXXX"; older builds used NAME.tmp and NAME.tmp.PID), one per line; empty when none
temps_in() { ls -A "$1" | grep -E '^\..+\.[A-Za-z0-9]{6}$|\.tmp(\.[0-9]+)?$'; }
finish() { echo "$SUITE: $_pass passed, $_fail failed, $_skip skipped"; }
