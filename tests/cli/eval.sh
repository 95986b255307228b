# eval.sh: end-to-end tests of `unmask eval` on the bundled demo model. Right answers are the
# outputs `unmask generate` prints for the same prompt and flags (obtained separately, before
# eval runs), wrong ones are those outputs changed; so every verdict is known in advance.
# Also: --json totals against the per-item list, the flags reaching the decoder (steps and CFG
# change the forward passes as they must), held-out sudoku sets equal to sudoku-gen's test
# split, and bad task files rejected with FILE:LINE.
SUITE=eval
. "$(dirname "$0")/lib.sh"
M=models/unmask-demo.gguf
F=(-m "$M" -t 2 --gen 24)
GEN=${SUDOKU_GEN:-build/${UNMASK_VARIANT:-release}/sudoku-gen}

json_str() { python3 -c 'import json,sys; print(json.dumps(sys.stdin.read()[:-1]))'; }

expect_rc "help exits 0" 0 "$BIN" eval --help
for opt in --check --sudoku --difficulty --sudoku-seed --limit --json --threshold --alg; do
  expect_grep "help lists $opt" "$opt" "$TMP/out"
done

# ---------------------------------------------------------------- exact
"$BIN" generate "${F[@]}" -q -p "The cat" >"$TMP/g1" 2>/dev/null
"$BIN" generate "${F[@]}" -q -p "Once upon a time" >"$TMP/g2" 2>/dev/null
right1=$(json_str <"$TMP/g1"); right2=$(json_str <"$TMP/g2")
{
  echo "{\"prompt\": \"The cat\", \"answer\": $right1}"
  echo "{\"prompt\": \"Once upon a time\", \"answer\": $right2}"
  echo ""
  echo "{\"prompt\": \"The cat\", \"answer\": \"certainly not this\"}"
  echo "{\"prompt\": \"Once upon a time\", \"answer\": $right1, \"note\": [1, 2]}"
  echo "{\"prompt\": \"The cat\", \"answer\": $right1}"
} >"$TMP/exact.jsonl"
sum=$(md5sum <"$TMP/exact.jsonl")
expect_rc "exact runs" 0 "$BIN" eval "${F[@]}" "$TMP/exact.jsonl"
cp "$TMP/out" "$TMP/exact.out"
expect_grep "exact item 1 ok (line 1)" '^item 1: ok, 24 forward passes, line 1$' "$TMP/exact.out"
expect_grep "exact item 2 ok" '^item 2: ok, 24 forward passes, line 2$' "$TMP/exact.out"
expect_grep "exact item 3 wrong (blank line skipped: line 4)" '^item 3: wrong, 24 forward passes, line 4: differs' "$TMP/exact.out"
expect_grep "exact item 4 wrong (another prompt's output)" '^item 4: wrong, .*line 5' "$TMP/exact.out"
expect_grep "exact item 5 ok (same prompt again: the restarted engine repeats itself)" '^item 5: ok' "$TMP/exact.out"
expect_grep "exact summary" '^accuracy: 3/5 = 60.0% \(check exact\)$' "$TMP/exact.out"
expect_grep "summary counts passes" '^forward passes: 120 \(24.0 per task\)' "$TMP/exact.out"
if [ "$(md5sum <"$TMP/exact.jsonl")" = "$sum" ]; then ok "task file unchanged"; else fail "task file unchanged"; fi
if grep -q $'\r' "$TMP/err"; then fail "no progress bar when stderr is not a terminal" "$(head -c 200 "$TMP/err")"
else ok "no progress bar when stderr is not a terminal"; fi

# on a terminal (script(1) gives it one) the bar shows tasks done and the step in flight
if command -v script >/dev/null; then
  script -qec "$BIN eval ${F[*]} --limit 2 $TMP/exact.jsonl" /dev/null >"$TMP/tty" 2>&1
  expect_grep "progress bar on a terminal" '\[#{15}\.{15}\] 1/2  correct 1  step [0-9]+/24' "$TMP/tty"
  script -qec "$BIN eval ${F[*]} -q --limit 2 $TMP/exact.jsonl" /dev/null >"$TMP/tty" 2>&1
  if grep -q 'correct 1' "$TMP/tty"; then fail "-q: no progress bar"; else ok "-q: no progress bar"; fi
else
  skip "progress bar on a terminal" "no script(1)"
fi

# --json: totals consistent with the items, and the same verdicts as the text output
expect_rc "exact --json" 0 "$BIN" eval "${F[@]}" --json "$TMP/exact.jsonl"
if python3 - "$TMP/out" "$TMP/g1" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); g1 = open(sys.argv[2]).read()[:-1]
it = d["items"]
ok = (d["total"] == len(it) == 5 and d["correct"] == sum(i["correct"] for i in it) == 3
      and abs(d["accuracy"] - d["correct"] / d["total"]) < 1e-8
      and d["forward_passes"] == sum(i["forward_passes"] for i in it) == 120
      and d["generated_tokens"] == sum(i["generated_tokens"] for i in it)
      and [i["correct"] for i in it] == [True, True, False, False, True]
      and [i["index"] for i in it] == [1, 2, 3, 4, 5] and [i["line"] for i in it] == [1, 2, 4, 5, 6]
      and it[0]["output"] == g1 and d["seconds"] >= 0 and d["check"] == "exact"
      and d["settings"]["gen"] == 24 and d["settings"]["steps_requested"] == 24 and "alg" in d["settings"])
sys.exit(0 if ok else 1)
PY
then ok "json totals = sums of the items"; else fail "json totals = sums of the items" "$(head -c 600 "$TMP/out")"; fi

expect_rc "--limit 2" 0 "$BIN" eval "${F[@]}" --limit 2 "$TMP/exact.jsonl"
expect_grep "--limit 2 runs two" '^accuracy: 2/2 ' "$TMP/out"

# decoding flags reach the decoder: 8 steps = 8 passes per task, CFG doubles them
expect_rc "--steps 8" 0 "$BIN" eval "${F[@]}" --steps 8 --limit 2 "$TMP/exact.jsonl"
expect_grep "--steps 8: 8 passes" '^forward passes: 16 \(8.0 per task\), generated tokens: 48 \(3.00 per pass\)' "$TMP/out"
expect_rc "--cfg" 0 "$BIN" eval "${F[@]}" --steps 8 --cfg 1 --limit 1 "$TMP/exact.jsonl"
expect_grep "--cfg: two passes per step" '^item 1: [a-z]+, 16 forward passes' "$TMP/out"

# ---------------------------------------------------------------- number
# a sampled output that ends in a number (the demo model writes words; some seeds give digits)
numseed=""
for s in 10 35 1 2 3 4 5 6 7 8 9 11 12 13; do
  "$BIN" generate "${F[@]}" -q --temp 1.5 --seed $s -p "1 2 3 4 5 6 7 8 9" >"$TMP/gn" 2>/dev/null
  if grep -q '[0-9]' "$TMP/gn"; then numseed=$s; break; fi
done
if [ -n "$numseed" ]; then
  last=$(grep -oE '[0-9]+' "$TMP/gn" | tail -n 1); last=$((10#$last))
  {
    echo "{\"prompt\": \"1 2 3 4 5 6 7 8 9\", \"answer\": \"#### $last\"}"
    echo "{\"prompt\": \"1 2 3 4 5 6 7 8 9\", \"answer\": $((last + 1))}"
    echo "{\"prompt\": \"The cat\", \"answer\": \"7\"}"
  } >"$TMP/num.jsonl"
  expect_rc "number runs" 0 "$BIN" eval "${F[@]}" --temp 1.5 --seed $numseed --check number "$TMP/num.jsonl"
  expect_grep "number right" '^item 1: ok' "$TMP/out"
  expect_grep "number off by one is wrong" "^item 2: wrong, .*last number $last, expected $((last + 1))" "$TMP/out"
  if grep -q '[0-9]' "$TMP/g1"; then skip "number: no number in output" "the greedy output of 'The cat' has digits"
  else expect_grep "number: no number in output" '^item 3: wrong, .*no number in the output' "$TMP/out"; fi
  expect_grep "number summary" '^accuracy: [12]/3 ' "$TMP/out"
else
  skip "number right/wrong" "no seed made the demo model write a digit"
fi

# ---------------------------------------------------------------- sudoku
# the demo model cannot solve a sudoku: both tasks are wrong, for the reason the checker gives
P="8..........36......7..9.2...5...7.......457.....1...3...1....68..85...1..9....4.."
S="812753649943682175675491283154237896369845721287169534521974368438526917796318452"
printf '{"prompt": "%s", "answer": "%s"}\n{"prompt": "%s", "answer": "%s"}\n' "$P" "$S" "${P//./0}" "$S" >"$TMP/sud.jsonl"
expect_rc "sudoku runs" 0 "$BIN" eval -m "$M" -t 2 --gen 81 --block 81 --check sudoku --json "$TMP/sud.jsonl"
if python3 - "$TMP/out" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
ok = d["total"] == 2 and d["correct"] == 0 and all(not i["correct"] and i["why"] for i in d["items"])
ok = ok and all(i["forward_passes"] == 81 for i in d["items"]) and d["forward_passes"] == 162
sys.exit(0 if ok else 1)
PY
then ok "sudoku: the demo model's answers are wrong, with a reason"; else fail "sudoku: the demo model's answers are wrong, with a reason" "$(head -c 600 "$TMP/out")"; fi

# held-out puzzles: the test split of sudoku-gen, seed base from --sudoku-seed (or --seed)
expect_rc "--sudoku" 0 "$BIN" eval -m "$M" -t 2 --gen 81 --steps 9 --sudoku 3 --difficulty medium --sudoku-seed 5 --json
cp "$TMP/out" "$TMP/sudoku.json"
if [ -x "$GEN" ]; then
  "$GEN" --split test --difficulty medium --n 3 --seed-base 5 --out "$TMP/test.jsonl" 2>/dev/null
  if python3 - "$TMP/sudoku.json" "$TMP/test.jsonl" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); t = [json.loads(l) for l in open(sys.argv[2])]
ok = ([i["prompt"] for i in d["items"]] == [x["prompt"] for x in t] and d["check"] == "sudoku"
      and d["tasks"] == {"sudoku": 3, "difficulty": "medium", "split": "test", "seed_base": 5}
      and d["forward_passes"] == 27)
sys.exit(0 if ok else 1)
PY
  then ok "--sudoku puzzles = sudoku-gen test split"; else fail "--sudoku puzzles = sudoku-gen test split" "$(head -c 400 "$TMP/sudoku.json")"; fi
  expect_rc "--sudoku --seed" 0 "$BIN" eval -m "$M" -t 2 --gen 81 --steps 9 --sudoku 3 --difficulty medium --seed 5 --json
  if python3 -c 'import json,sys; a=json.load(open(sys.argv[1])); b=json.load(open(sys.argv[2])); sys.exit(0 if [i["prompt"] for i in a["items"]]==[i["prompt"] for i in b["items"]] else 1)' "$TMP/out" "$TMP/sudoku.json"
  then ok "--seed picks the puzzles when --sudoku-seed is absent"; else fail "--seed picks the puzzles when --sudoku-seed is absent"; fi
else
  skip "--sudoku puzzles = sudoku-gen test split" "no $GEN (make sudoku-gen)"
fi
# --sudoku without --gen on a file no preset names: the 81 cells in one block, one per step (the
# demo model's copy, so models.conf's [demo] preset does not apply); --gen still wins
cp "$M" "$TMP/nopreset.gguf"
expect_rc "--sudoku default length" 0 "$BIN" eval -m "$TMP/nopreset.gguf" -t 2 --sudoku 1 -q
expect_grep "--sudoku: gen 81, one block" '^settings: gen 81, steps 81, schedule block, block 81,' "$TMP/out"
expect_rc "--sudoku --gen 90" 0 "$BIN" eval -m "$TMP/nopreset.gguf" -t 2 --sudoku 1 --gen 90 --steps 9 -q
expect_grep "--sudoku: --gen wins" '^settings: gen 90, steps 9,' "$TMP/out"

# ---------------------------------------------------------------- bad input
bad() {   # bad NAME CONTENT WANT: a task file with CONTENT fails naming WANT
  printf '%b' "$2" >"$TMP/bad.jsonl"
  expect_rc "bad: $1 exits 1" 1 "$BIN" eval "${F[@]}" ${4:-} "$TMP/bad.jsonl"
  expect_grep "bad: $1 names it" "$3" "$TMP/err"
}
good='{"prompt": "The cat", "answer": "x"}\n'
bad "not json" "${good}not json\n" "bad.jsonl:2: column 1: expected a JSON object"
bad "missing answer" "${good}${good}{\"prompt\": \"The cat\"}\n" "bad.jsonl:3: missing \"answer\""
bad "missing prompt" '{"answer": "x"}\n' "bad.jsonl:1: missing \"prompt\""
bad "prompt not a string" '{"prompt": ["a"], "answer": "x"}\n' "bad.jsonl:1: \"prompt\" must be a string, got array"
bad "answer not a string" '{"prompt": "a", "answer": null}\n' "bad.jsonl:1: \"answer\" must be a string or a number, got null"
bad "empty file" '' "bad.jsonl: no tasks"
bad "blank lines only" '\n  \n' "bad.jsonl: no tasks"
bad "invalid UTF-8" "${good}{\"prompt\": \"a\\xff\", \"answer\": \"x\"}\n" "bad.jsonl:2: column 14: invalid UTF-8"
bad "trailing comma" '{"prompt": "a", "answer": "x",}\n' "bad.jsonl:1: .*expected a string key"
bad "lone surrogate" '{"prompt": "\\ud800", "answer": "x"}\n' "bad.jsonl:1: .*surrogate"
long=$(python3 -c 'print("word " * 400)')
bad "prompt longer than the context" "${good}{\"prompt\": \"$long\", \"answer\": \"x\"}\n" "bad.jsonl:2: prompt of [0-9]+ tokens.*context of 256"
bad "prompt + gen over the context" "{\"prompt\": \"$(python3 -c 'print("word " * 45)')\", \"answer\": \"x\"}\n" "bad.jsonl:1: prompt of [0-9]+ tokens \+ 250 to generate" "--gen 250"
bad "sudoku prompt not a puzzle" '{"prompt": "123", "answer": "x"}\n' "bad.jsonl:1: \"prompt\": a sudoku is 81 characters" "--check sudoku"
bad "number answer without a number" '{"prompt": "a", "answer": "none"}\n' "bad.jsonl:1: \"answer\" holds no number" "--check number"
expect_rc "missing file" 1 "$BIN" eval "${F[@]}" "$TMP/nonexistent.jsonl"
expect_grep "missing file named" "nonexistent.jsonl: No such file" "$TMP/err"

expect_rc "no tasks given" 2 "$BIN" eval "${F[@]}"
expect_rc "file and --sudoku" 2 "$BIN" eval "${F[@]}" "$TMP/exact.jsonl" --sudoku 2
expect_rc "-p refused" 2 "$BIN" eval "${F[@]}" -p hi "$TMP/exact.jsonl"
expect_rc "unknown check" 2 "$BIN" eval "${F[@]}" --check fuzzy "$TMP/exact.jsonl"
expect_grep "unknown check named" "unknown check 'fuzzy'" "$TMP/err"
expect_rc "unknown difficulty" 2 "$BIN" eval "${F[@]}" --sudoku 2 --difficulty extreme
expect_rc "--difficulty without --sudoku" 2 "$BIN" eval "${F[@]}" --difficulty easy "$TMP/exact.jsonl"
expect_rc "bad --limit" 2 "$BIN" eval "${F[@]}" --limit 0 "$TMP/exact.jsonl"
expect_rc "bad decoding flag value" 2 "$BIN" eval "${F[@]}" --steps x "$TMP/exact.jsonl"
expect_rc "unknown flag" 2 "$BIN" eval "${F[@]}" --frobnicate "$TMP/exact.jsonl"
finish
