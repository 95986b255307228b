#!/usr/bin/env bash
# run.sh: every test of unmask. Runs the unit-test binary, then each tests/cli/*.sh
# (end-to-end tests of the real binary), and ends with the combined
# "N passed, N failed, N skipped" line. Exit status is non-zero if anything failed.
# Environment: UNMASK_BIN (the binary under test), UNMASK_UNIT (unit-test binary).
set -u
cd "$(dirname "$0")/.."
export UNMASK_ROOT=$PWD
bin=${UNMASK_BIN:-./unmask}
unit=${UNMASK_UNIT:-build/release/unit_tests}
case "$bin" in /*) ;; *) bin=$PWD/$bin ;; esac
export UNMASK_BIN=$bin
passed=0; failed=0; skipped=0
log=$(mktemp); trap 'rm -f "$log"' EXIT

"$unit" "${1:-}" | tee "$log"
line=$(grep -E '^unit: [0-9]+ passed' "$log" | tail -n 1)
if [ -z "$line" ]; then
  echo "FAIL unit-test binary did not finish (crashed?)"; failed=$((failed + 1))
else
  set -- $line
  passed=$((passed + $2)); failed=$((failed + $4)); skipped=$((skipped + $6))
fi

for t in tests/cli/*.sh; do
  case $(basename "$t") in lib.sh|tmuxlib.sh) continue ;; esac   # sourced libraries, not suites
  [ -e "$t" ] || continue
  bash "$t" | tee "$log"
  line=$(grep -E '^[a-z0-9_-]+: [0-9]+ passed' "$log" | tail -n 1)
  if [ -z "$line" ]; then
    echo "FAIL $t did not finish"; failed=$((failed + 1))
  else
    set -- $line
    passed=$((passed + $2)); failed=$((failed + $4)); skipped=$((skipped + ${6:-0}))
  fi
done
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
