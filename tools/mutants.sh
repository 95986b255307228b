#!/usr/bin/env bash
# mutants.sh (make mutants): are the tests strong enough to catch the next bug? Each line of
# tests/mutants.txt is a plausible one-line bug in a check that guards data or numerics. A copy
# of the tree (the tracked files as they are now) is built once in build/mutants/tree without
# the CUDA backend; then, one mutant at a time, the line is changed in the copy, the copy is
# rebuilt (one object and the links), the tests the line names are run, and the file is put
# back. A mutant is caught when one of its tests fails; it survives when they all pass. The
# named tests must pass on the unchanged copy first (else nothing is proved).
# Ends with "mutants: N caught, N survived, N broken" (broken: the line is not in the file any
# more, or the mutant does not compile); exit status 1 unless every mutant was caught.
# MUTANTS_ONLY=SUBSTRING runs the mutants whose line (file or text) contains it.
set -u
cd "$(dirname "$0")/.."
ROOT=$PWD
LIST=${MUTANTS_LIST:-$ROOT/tests/mutants.txt}
WORK=$ROOT/build/mutants
TREE=$WORK/tree
JOBS=${MUTANTS_JOBS:-2}
LOG=$WORK/log
mkdir -p "$WORK"
: >"$LOG"

echo "mutants: copying the tree to $TREE"
rm -rf "$TREE"
mkdir -p "$TREE"
git ls-files -z | xargs -0 cp -a --parents -t "$TREE" 2>>"$LOG"
build() { make -C "$TREE" -j"$JOBS" NO_CUDA=1 unmask build/release/unit_tests >>"$LOG" 2>&1; }
echo "mutants: building the copy (no CUDA)"
if ! build; then echo "mutants: the unchanged copy does not build (see $LOG)"; exit 1; fi

# run_tests SPEC...: 0 when every test passes, 1 when one fails
run_tests() {
  local t out
  for t in "$@"; do
    case $t in
      unit:*) out=$("$TREE/build/release/unit_tests" "${t#unit:}" 2>&1) || return 1
              grep -qE '^unit: [1-9][0-9]* passed, 0 failed' <<<"$out" || return 1 ;;
      cli:*)  out=$(cd "$TREE" && UNMASK_BIN="$TREE/unmask" UNMASK_ROOT="$TREE" UNMASK_UNIT="$TREE/build/release/unit_tests" \
                    timeout 600 bash "tests/cli/${t#cli:}" 2>&1)
              grep -qE '^[a-z0-9_-]+: [0-9]+ passed, 0 failed' <<<"$out" || return 1 ;;
      *) echo "mutants: unknown test '$t'"; return 2 ;;
    esac
  done
  return 0
}

mapfile -t LINES < <(grep -v '^#' "$LIST" | grep -v '^[[:space:]]*$')
if [ -n "${MUTANTS_ONLY:-}" ]; then mapfile -t LINES < <(printf '%s\n' "${LINES[@]}" | grep -F -- "$MUTANTS_ONLY"); fi

echo "mutants: the named tests on the unchanged copy"
declare -A base_ok
for line in "${LINES[@]}"; do
  IFS=$'\t' read -r _ _ _ tests _ <<<"$line"
  for t in $tests; do
    [ -n "${base_ok[$t]:-}" ] && continue
    if run_tests "$t"; then base_ok[$t]=1; else echo "mutants: $t fails on the unchanged tree: fix that first"; exit 1; fi
  done
done

caught=0; survived=0; broken=0; n=0
for line in "${LINES[@]}"; do
  IFS=$'\t' read -r file old new tests why <<<"$line"
  n=$((n + 1))
  name="$n. $file: $why"
  if ! python3 - "$TREE/$file" "$old" "$new" <<'PY'
import sys
p, old, new = sys.argv[1:4]
s = open(p).read()
if s.count(old) != 1:
    sys.exit(1)
open(p, "w").write(s.replace(old, new))
PY
  then echo "BROKEN   $name (the line is not in $file exactly once: update tests/mutants.txt)"; broken=$((broken + 1)); continue; fi
  if ! build; then
    echo "BROKEN   $name (does not compile)"; broken=$((broken + 1))
  elif run_tests $tests; then
    echo "SURVIVED $name (tests: $tests)"; survived=$((survived + 1))
  else
    echo "caught   $name"; caught=$((caught + 1))
  fi
  cp -a "$ROOT/$file" "$TREE/$file"
  touch "$TREE/$file"
done
build || { echo "mutants: the restored copy does not build (see $LOG)"; exit 1; }
echo "mutants: $caught caught, $survived survived, $broken broken"
[ "$survived" -eq 0 ] && [ "$broken" -eq 0 ]
