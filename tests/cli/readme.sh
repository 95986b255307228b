#!/usr/bin/env bash
# readme.sh: README.md's tables agree with the committed results under bench/results/, and
# the README starts with the two set-up commands that .ci/run also uses.
. "$(dirname "$0")/lib.sh"
SUITE=readme
if python3 tools/render-readme.py --check 2>"$TMP/err"; then ok tables-match-results; else fail tables-match-results "$(cat "$TMP/err")"; fi
first=$(grep -m2 -E '^(sudo )?make ' README.md | tr '\n' ' ')
case "$first" in
  "make run "*"make test "*) ok two-setup-commands-first ;;
  *) fail two-setup-commands-first "first commands in README.md: $first" ;;
esac
grep -qx 'make test' .ci/run && ok ci-runs-readme-test-command || fail ci-runs-readme-test-command "no 'make test' line in .ci/run"
finish
