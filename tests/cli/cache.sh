# cache.sh: end-to-end tests of the K/V caches and the adaptive schedules on the bundled demo
# model: --cache none is the default to the byte; a cached run reports its passes, rows and
# refreshes in --json consistently (one refresh per block, fewer rows than full passes); the
# flags reach generate, eval and record; bad values and conflicting schedule flags exit 2.
SUITE=cache
. "$(dirname "$0")/lib.sh"
M=models/unmask-demo.gguf
F=(-m "$M" -t 2 -p "Once upon a time" --no-chat --gen 48 --steps 24 --block 16)
strip() { sed -E 's/"(load_s|generate_s|forward_ms|sample_ms)":[-0-9.e+]+/"\1":0/g'; }

# ---------------------------------------------------------------- none is the default
"$BIN" generate "${F[@]}" --json -q 2>/dev/null | strip >"$TMP/default.json"
"$BIN" generate "${F[@]}" --json -q --cache none 2>/dev/null | strip >"$TMP/none.json"
if [ -s "$TMP/default.json" ] && cmp -s "$TMP/default.json" "$TMP/none.json"; then ok "--cache none is the default"
else fail "--cache none is the default" "$(diff "$TMP/default.json" "$TMP/none.json" | head -c 300)"; fi

# ---------------------------------------------------------------- accounting in --json
# check.py MODE FILE: the numbers a run reports must agree with each other
cat >"$TMP/check.py" <<'EOF'
import json, sys
mode, path = sys.argv[1], sys.argv[2]
d = json.load(open(path))
canvas = len(d["tokens"])
steps = d["steps"]
assert d["settings"]["cache"] == mode, d["settings"]["cache"]
assert d["forward_passes"] == len(steps), (d["forward_passes"], len(steps))
assert d["rows_computed"] == sum(s["rows_computed"] for s in steps)
refreshed = [s for s in steps if s["cache_refreshed"]]
if mode == "none":
    assert not refreshed and d["cache_bytes"] == 0
    assert all(s["rows_computed"] == canvas for s in steps)
else:
    blocks = sorted({s["block"] for s in steps})
    # one refresh per block, on its first step; full rows then, fewer after
    assert [s["block"] for s in refreshed] == blocks, [s["block"] for s in refreshed]
    assert all(s["rows_computed"] == canvas for s in refreshed)
    partial = [s for s in steps if not s["cache_refreshed"]]
    assert partial and all(s["rows_computed"] < canvas for s in partial)
    if mode == "dual":
        assert all(s["rows_computed"] <= 16 for s in partial), [s["rows_computed"] for s in partial]
    assert d["cache_bytes"] > 0
print("fine", d["rows_computed"], d["forward_passes"] * canvas)
EOF
for mode in none prefix dual; do
  "$BIN" generate "${F[@]}" --json -q --cache "$mode" >"$TMP/$mode.json" 2>"$TMP/err"
  if python3 "$TMP/check.py" "$mode" "$TMP/$mode.json" >"$TMP/chk" 2>&1; then ok "--cache $mode accounting"
  else fail "--cache $mode accounting" "$(tail -c 300 "$TMP/chk") $(head -c 200 "$TMP/err")"; fi
done
# the cached runs decode every position too
for mode in prefix dual; do
  if python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["steps_run"] == 24 and d["answer"]' "$TMP/$mode.json"
  then ok "--cache $mode completes"; else fail "--cache $mode completes"; fi
done
# a refresh rule alone means dual; with one block it refreshes every K steps
"$BIN" generate -m "$M" -t 2 -p "The" --no-chat --gen 32 --steps 16 --eps 0.001 --cache-refresh 4 --json -q \
  >"$TMP/k.json" 2>"$TMP/err"
if python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["settings"]["cache"] == "dual" and d["settings"]["cache_refresh"] == 4
assert [s["step"] for s in d["steps"] if s["cache_refreshed"]] == [1, 5, 9, 13], d["steps"]
' "$TMP/k.json" 2>"$TMP/chk"; then ok "--cache-refresh 4 alone: dual, refreshed every 4 steps"
else fail "--cache-refresh 4 alone: dual, refreshed every 4 steps" "$(tail -c 300 "$TMP/chk")"; fi
# storage types: f32 twice the bytes of f16, q8_0 less than f16
for t in f16 f32 q8_0; do
  "$BIN" generate "${F[@]}" --json -q --cache dual --cache-type "$t" 2>/dev/null >"$TMP/t-$t.json"
done
if python3 -c '
import json, sys
b = {t: json.load(open(sys.argv[1] + "/t-" + t + ".json"))["cache_bytes"] for t in ("f16", "f32", "q8_0")}
assert b["f32"] == 2 * b["f16"] and 0 < b["q8_0"] < b["f16"], b
' "$TMP"; then ok "--cache-type sizes"; else fail "--cache-type sizes"; fi

# ---------------------------------------------------------------- schedules
"$BIN" generate "${F[@]}" --json -q --eb-gamma 0 >"$TMP/eb0.json" 2>/dev/null
"$BIN" generate "${F[@]}" --json -q --eb-gamma 50 >"$TMP/eb50.json" 2>/dev/null
if python3 -c '
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
assert a["settings"]["schedule"] == "eb" and a["settings"]["eb_gamma"] == 0
assert all(len(s["commits"]) == 1 for s in a["steps"]) and a["steps_run"] == 48
assert b["steps_run"] < 48
' "$TMP/eb0.json" "$TMP/eb50.json"; then ok "eb: gamma 0 one per step, a large gamma fewer steps"
else fail "eb: gamma 0 one per step, a large gamma fewer steps"; fi
"$BIN" generate "${F[@]}" --json -q --factor 1 >"$TMP/f.json" 2>/dev/null
expect_grep "--factor names the factor schedule" '"schedule":"factor"' "$TMP/f.json"

# ---------------------------------------------------------------- other commands take the flags
printf '{"prompt": "The cat", "answer": "x"}\n' >"$TMP/t.jsonl"
expect_rc "eval takes --cache" 0 "$BIN" eval -m "$M" -t 2 --gen 16 --cache dual --block 8 --json "$TMP/t.jsonl"
if python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["settings"]["cache"] == "dual" and 0 < d["rows_computed"] < d["forward_passes"] * 19, d
' "$TMP/out"; then ok "eval reports rows_computed"; else fail "eval reports rows_computed" "$(head -c 300 "$TMP/out")"; fi
expect_rc "record takes --cache" 0 "$BIN" record -m "$M" -t 2 -p hi --gen 8 --steps 4 --cache prefix --cast "$TMP/c.cast"

# ---------------------------------------------------------------- bad values
expect_rc "--cache bogus exits 2" 2 "$BIN" generate "${F[@]}" --cache bogus
expect_grep "--cache bogus names the modes" 'none\|prefix\|dual' "$TMP/err"
expect_rc "--cache-type q4_0 exits 2" 2 "$BIN" generate "${F[@]}" --cache-type q4_0
expect_rc "--cache-refresh 0 exits 2" 2 "$BIN" generate "${F[@]}" --cache-refresh 0
expect_grep "--cache-refresh 0 names the range" 'out of range' "$TMP/err"
expect_rc "--cache-drift nan exits 2" 2 "$BIN" generate "${F[@]}" --cache-drift nan
expect_rc "--factor 0 exits 2" 2 "$BIN" generate "${F[@]}" --factor 0
expect_rc "--eb-gamma -1 exits 2" 2 "$BIN" generate "${F[@]}" --eb-gamma -1
expect_rc "--factor with --threshold exits 2" 2 "$BIN" generate "${F[@]}" --factor 1 --threshold 0.5
expect_grep "--factor with --threshold names both" 'choose different schedules \(factor, threshold\)' "$TMP/err"
expect_rc "--schedule block with --eb-gamma exits 2" 2 "$BIN" generate "${F[@]}" --schedule block --eb-gamma 1
expect_grep "--schedule block with --eb-gamma names both" 'choose different schedules \(block, eb\)' "$TMP/err"
expect_rc "--schedule eb with --eb-gamma is fine" 0 "$BIN" generate "${F[@]}" -q --schedule eb --eb-gamma 1

# ---------------------------------------------------------------- --fast
# --fast is what the model's preset measured best (models.conf `fast`; the demo model's is
# --threshold 0.5), else Fast-dLLM's --threshold 0.9 --cache dual (a file no preset names): the
# same runs to the byte. A flag naming a schedule or a cache mode or refresh rule replaces
# that part only (--cache-type, storage, keeps the rest); a preset's fast is checked as the
# flags are, FILE:LINE.
"$BIN" generate "${F[@]}" --json -q --fast 2>/dev/null | strip >"$TMP/fast.json"
"$BIN" generate "${F[@]}" --json -q --threshold 0.5 2>/dev/null | strip >"$TMP/fast-spelled.json"
if [ -s "$TMP/fast.json" ] && cmp -s "$TMP/fast.json" "$TMP/fast-spelled.json"; then ok "--fast on the demo model is its preset's --threshold 0.5"
else fail "--fast on the demo model is its preset's --threshold 0.5" "$(diff "$TMP/fast.json" "$TMP/fast-spelled.json" | head -c 300)"; fi
mkdir -p "$TMP/conf"
cp "$M" "$TMP/conf/plain.gguf"
P=(-m "$TMP/conf/plain.gguf" -t 2 -p "Once upon a time" --no-chat --gen 48 --steps 24 --block 16)
"$BIN" generate "${P[@]}" --json -q --fast 2>/dev/null | strip >"$TMP/fastp.json"
"$BIN" generate "${P[@]}" --json -q --threshold 0.9 --cache dual 2>/dev/null | strip >"$TMP/fastp-spelled.json"
if [ -s "$TMP/fastp.json" ] && cmp -s "$TMP/fastp.json" "$TMP/fastp-spelled.json"; then ok "--fast without a preset is --threshold 0.9 --cache dual"
else fail "--fast without a preset is --threshold 0.9 --cache dual" "$(diff "$TMP/fastp.json" "$TMP/fastp-spelled.json" | head -c 300)"; fi
"$BIN" generate "${P[@]}" --json -q --fast --cache none --factor 2 >"$TMP/fast-over.json" 2>/dev/null
if python3 -c "
import json, sys
s = json.load(open(sys.argv[1]))['settings']
assert (s['schedule'], s['cache'], s['factor']) == ('factor', 'none', 2), s
" "$TMP/fast-over.json" 2>"$TMP/perr"; then ok "--fast: --cache none and --factor replace its parts"
else fail "--fast: --cache none and --factor replace its parts" "$(tail -1 "$TMP/perr")"; fi
"$BIN" generate "${P[@]}" --json -q --fast --cache-type q8_0 --eb-gamma 1 >"$TMP/fast-over2.json" 2>/dev/null
if python3 -c "
import json, sys
s = json.load(open(sys.argv[1]))['settings']
assert (s['schedule'], s['cache'], s['cache_type'], s['eb_gamma']) == ('eb', 'dual', 'q8_0', 1), s
" "$TMP/fast-over2.json" 2>"$TMP/perr"; then ok "--fast: --eb-gamma and --cache-type keep the dual cache"
else fail "--fast: --eb-gamma and --cache-type keep the dual cache" "$(tail -1 "$TMP/perr")"; fi
printf '[plain]\npath = plain.gguf\nfast = --eb-gamma 0.01 --cache dual --cache-drift 0.05\n' >"$TMP/conf/models.conf"
C=(-M plain -t 2 -p "Once upon a time" --no-chat --gen 48 --steps 24 --block 16)
(cd "$TMP/conf" && XDG_CONFIG_HOME=$TMP/conf/none "$BIN" generate "${C[@]}" --json -q --fast 2>/dev/null) | strip >"$TMP/fastc.json"
(cd "$TMP/conf" && XDG_CONFIG_HOME=$TMP/conf/none "$BIN" generate "${C[@]}" --json -q --eb-gamma 0.01 --cache dual --cache-drift 0.05 2>/dev/null) | strip >"$TMP/fastc-spelled.json"
if [ -s "$TMP/fastc.json" ] && cmp -s "$TMP/fastc.json" "$TMP/fastc-spelled.json"; then ok "--fast is the preset's fast = --eb-gamma 0.01 --cache dual --cache-drift 0.05"
else fail "--fast is the preset's fast = --eb-gamma 0.01 --cache dual --cache-drift 0.05" "$(diff "$TMP/fastc.json" "$TMP/fastc-spelled.json" | head -c 300)"; fi
printf '[plain]\npath = plain.gguf\nfast = --threshold 2\n' >"$TMP/conf/models.conf"
(cd "$TMP/conf" && XDG_CONFIG_HOME=$TMP/conf/none "$BIN" generate "${C[@]}" -q --fast >"$TMP/o" 2>"$TMP/e"); rc=$?
want="unmask generate: -M plain: models.conf:3: fast: --threshold: '2' is out of range (0 to 1)"
if [ $rc = 1 ] && [ "$(cat "$TMP/e")" = "$want" ]; then ok "a preset's bad fast: refused with FILE:LINE"
else fail "a preset's bad fast" "rc $rc: $(cat "$TMP/e") (wanted: $want)"; fi
expect_rc "--fast reaches eval" 0 "$BIN" eval -M sudoku --sudoku 2 -t 2 --fast --json
expect_grep "--fast in eval on the sudoku model is --threshold 0.999 without a cache" '"cache":"none".*"threshold":0.999|"threshold":0.999.*"cache":"none"' "$TMP/out"

finish
