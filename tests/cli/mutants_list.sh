#!/usr/bin/env bash
# mutants_list.sh: every line of tests/mutants.txt still names a line that is in its file
# exactly once, and tests that exist. `make mutants` (CI, about 10 minutes) reports such a
# mutant as BROKEN only at its end; this check runs in `make test` in a second, so a moved or
# edited line is seen by whoever moved it. A copy of the list with a line that is not in its
# file must fail, naming it (else the check proves nothing).
. "$(dirname "$0")/lib.sh"
SUITE=mutants_list

# check LIST: prints one line per problem, exit 1 when there is one
check() {
  python3 - "$1" <<'PY'
import os, sys
bad = 0
for n, line in enumerate(open(sys.argv[1]), 1):
    if line.startswith("#") or not line.strip():
        continue
    parts = line.rstrip("\n").split("\t")
    if len(parts) != 5:
        print(f"line {n}: {len(parts)} tab-separated fields, wanted 5"); bad = 1; continue
    path, old, new, tests, why = parts
    if not os.path.isfile(path):
        print(f"line {n}: {path}: no such file"); bad = 1; continue
    c = open(path).read().count(old)
    if c != 1:
        print(f"line {n}: {path}: the line is there {c} times, not once ({why})"); bad = 1
    for t in tests.split():
        kind, _, name = t.partition(":")
        if kind == "cli" and not os.path.isfile("tests/cli/" + name):
            print(f"line {n}: test {t}: no tests/cli/{name}"); bad = 1
        elif kind not in ("cli", "unit"):
            print(f"line {n}: test {t}: unknown kind"); bad = 1
sys.exit(bad)
PY
}

if check tests/mutants.txt >"$TMP/log" 2>&1; then ok "every mutant's line is in its file once"
else fail "every mutant's line is in its file once" "$(head -5 "$TMP/log")"; fi

# a copy with one mutant whose line has moved away
cp tests/mutants.txt "$TMP/m.txt"
printf 'src/base/util.c\tthis text is in no file\tx\tunit:util\ta moved line\n' >>"$TMP/m.txt"
if check "$TMP/m.txt" >"$TMP/log" 2>&1; then fail "a moved line fails the check" "it passed"
else expect_grep "a moved line fails the check, naming it" 'src/base/util\.c: the line is there 0 times, not once \(a moved line\)' "$TMP/log"; fi
finish
