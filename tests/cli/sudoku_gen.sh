# sudoku_gen.sh: end-to-end tests of tools/sudoku/gen.c (make sudoku-gen): the JSONL format,
# every puzzle checked by an independent Python checker (valid solution, givens kept, 22..45
# givens, easy ones solved by naked singles alone, medium ones not), determinism for a seed,
# seed ranges that make the splits disjoint, --check-disjoint, and bad usage.
SUITE=sudoku_gen
. "$(dirname "$0")/lib.sh"
GEN=${SUDOKU_GEN:-build/${UNMASK_VARIANT:-release}/sudoku-gen}
if [ ! -x "$GEN" ]; then skip "sudoku-gen" "no $GEN (make sudoku-gen)"; finish; exit 0; fi

expect_rc "help" 0 "$GEN" --help
expect_grep "help names the seed bases" "2\^40" "$TMP/out"

expect_rc "train mix" 0 "$GEN" --split train --difficulty mix --n 30 --out "$TMP/train.jsonl"
expect_grep "reports the seeds" "30 train mix puzzles \(seeds 0\.\.29\)" "$TMP/err"
n=$(grep -cE '^\{"prompt": "[1-9.]{81}", "answer": "[1-9]{81}", "difficulty": "(easy|medium|hard)"\}$' "$TMP/train.jsonl")
if [ "$n" = 30 ] && [ "$(wc -l <"$TMP/train.jsonl")" = 30 ]; then ok "format: 30 lines, prompt/answer/difficulty"
else fail "format: 30 lines, prompt/answer/difficulty" "$n matching lines"; fi

if python3 - "$TMP/train.jsonl" <<'PY'
import json, sys
def units():
    for i in range(9):
        yield [i * 9 + k for k in range(9)]
        yield [k * 9 + i for k in range(9)]
        yield [(i // 3 * 3 + k // 3) * 9 + i % 3 * 3 + k % 3 for k in range(9)]
U = list(units())
def naked_singles(g):
    g = list(g)
    while True:
        moved = False
        for c in range(81):
            if g[c]: continue
            seen = {g[x] for u in U if c in u for x in u}
            left = set(range(1, 10)) - seen
            if len(left) == 1: g[c] = left.pop(); moved = True
        if not moved: return all(g)
bad = []
for i, line in enumerate(open(sys.argv[1])):
    d = json.loads(line)
    p = [0 if ch == "." else int(ch) for ch in d["prompt"]]; s = [int(ch) for ch in d["answer"]]
    if any(sorted(s[x] for x in u) != list(range(1, 10)) for u in U): bad.append((i, "invalid solution"))
    if any(p[c] and p[c] != s[c] for c in range(81)): bad.append((i, "givens not kept"))
    if not 22 <= sum(1 for v in p if v) <= 45: bad.append((i, "givens out of range"))
    if d["difficulty"] != ["easy", "medium", "hard"][i % 3]: bad.append((i, "mix order"))
    if (d["difficulty"] == "easy") != naked_singles(p): bad.append((i, "naked singles disagree with " + d["difficulty"]))
bad and print(bad[:5]); sys.exit(1 if bad else 0)
PY
then ok "every puzzle checked independently"; else fail "every puzzle checked independently"; fi

# determinism, and one run = several runs with consecutive seed bases
"$GEN" --split train --difficulty mix --n 30 --out "$TMP/again.jsonl" 2>/dev/null
if cmp -s "$TMP/train.jsonl" "$TMP/again.jsonl"; then ok "same flags, same file"; else fail "same flags, same file"; fi
"$GEN" --split train --difficulty hard --n 6 --out "$TMP/h6.jsonl" 2>/dev/null
"$GEN" --split train --difficulty hard --n 3 --out "$TMP/h3a.jsonl" 2>/dev/null
"$GEN" --split train --difficulty hard --n 3 --seed-base 3 --out - >"$TMP/h3b.jsonl" 2>/dev/null
if cat "$TMP/h3a.jsonl" "$TMP/h3b.jsonl" | cmp -s - "$TMP/h6.jsonl"; then ok "--seed-base continues a set"
else fail "--seed-base continues a set"; fi
if grep -qv '"difficulty": "hard"' "$TMP/h6.jsonl"; then fail "hard only"; else ok "hard only"; fi

# splits: same index, different seeds and grids; --check-disjoint
"$GEN" --split test --difficulty mix --n 30 --out "$TMP/test.jsonl" 2>"$TMP/err"
expect_grep "test seeds start at 2*2^40" "seeds 2199023255552\.\.2199023255581" "$TMP/err"
"$GEN" --split val --difficulty mix --n 30 --out "$TMP/val.jsonl" 2>"$TMP/err"
expect_grep "val seeds start at 2^40" "seeds 1099511627776\.\." "$TMP/err"
expect_rc "train/test disjoint" 0 "$GEN" --check-disjoint "$TMP/train.jsonl" "$TMP/test.jsonl"
expect_grep "says disjoint" "^disjoint: none of the 30" "$TMP/out"
expect_rc "train/val disjoint" 0 "$GEN" --check-disjoint "$TMP/train.jsonl" "$TMP/val.jsonl"
sed -n 7p "$TMP/train.jsonl" >>"$TMP/test.jsonl"
sum=$(md5sum "$TMP/train.jsonl" "$TMP/test.jsonl")
expect_rc "overlap found" 1 "$GEN" --check-disjoint "$TMP/train.jsonl" "$TMP/test.jsonl"
expect_grep "overlap names both lines" "test.jsonl:31 has the solution of .*train.jsonl:7$" "$TMP/out"
expect_grep "overlap counted" "^NOT disjoint: 1 of 31" "$TMP/out"
if [ "$(md5sum "$TMP/train.jsonl" "$TMP/test.jsonl")" = "$sum" ]; then ok "check leaves the files alone"; else fail "check leaves the files alone"; fi
printf '{"prompt": "x", "answer": "123"}\n' >"$TMP/bad.jsonl"
expect_rc "check: bad answer" 2 "$GEN" --check-disjoint "$TMP/train.jsonl" "$TMP/bad.jsonl"
expect_grep "check: bad answer names the line" "bad.jsonl:1: \"answer\"" "$TMP/err"
printf '{"prompt": "x", "answer": "%s"}\n' "$(printf '1%.0s' {1..81})" >"$TMP/bad.jsonl"
expect_rc "check: answer not a solved grid" 2 "$GEN" --check-disjoint "$TMP/train.jsonl" "$TMP/bad.jsonl"
expect_grep "check: not a solved grid named" "bad.jsonl:1: \"answer\": not a valid solved grid" "$TMP/err"
expect_rc "check: two files only" 2 "$GEN" --check-disjoint "$TMP/train.jsonl"

# bad usage leaves no file behind
expect_rc "unknown split" 2 "$GEN" --split dev --difficulty easy --n 2 --out "$TMP/x.jsonl"
expect_rc "unknown difficulty" 2 "$GEN" --split train --difficulty expert --n 2 --out "$TMP/x.jsonl"
expect_rc "zero puzzles" 2 "$GEN" --split train --difficulty easy --n 0 --out "$TMP/x.jsonl"
expect_rc "missing --out" 2 "$GEN" --split train --difficulty easy --n 2
expect_rc "seed range overflow" 2 "$GEN" --split train --difficulty easy --n 2 --seed-base 1099511627775 --out "$TMP/x.jsonl"
expect_grep "overflow explained" "below 2\^40" "$TMP/err"
expect_rc "unwritable output" 1 "$GEN" --split train --difficulty easy --n 2 --out "$TMP/no/such/dir.jsonl"
if [ -e "$TMP/x.jsonl" ]; then fail "no output file on errors"; else ok "no output file on errors"; fi
finish
