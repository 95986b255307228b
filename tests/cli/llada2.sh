# llada2.sh: the llada2 architecture end to end on tiny-llada2 (random weights): synth writes
# the converter's keys and tensor names and info reads them; with block-causal attention the
# prefix cache is exact, so `generate --cache prefix` (F32 cache) gives the tokens of an
# uncached run token for token, on F32 and Q8_0 weights, while computing fewer rows (one
# attention block per step, two when the block moves on); blocks
# commit in order. The prompt is 32 one-byte tokens (the synthetic vocabulary has no merges), so
# the decoder's blocks line up with the model's attention blocks of 32 counted from position 0.
SUITE=llada2
. "$(dirname "$0")/lib.sh"

M=$TMP/tiny-llada2.gguf
"$BIN" synth --shape tiny-llada2 --type f32 -o "$M" 2>/dev/null
"$BIN" synth --shape tiny-llada2 --type q8_0 -o "$TMP/q8.gguf" 2>/dev/null

# ---------------------------------------------------------------- the file
"$BIN" info "$M" >"$TMP/info" 2>&1
expect_grep "info: architecture" "architecture +llada2" "$TMP/info"
expect_grep "info: runnable" "^runnable: yes" "$TMP/info"
expect_grep "info: fused qkv tensor" "blk\.1\.attn_qkv\.weight +f32 +256 x 512 " "$TMP/info"
expect_grep "info: expert bias tensor" "blk\.1\.exp_probs_b\.bias +f32 +8 " "$TMP/info"
expect_grep "info: shared expert tensor" "blk\.2\.ffn_down_shexp\.weight" "$TMP/info"
expect_grep "info: leading dense layer key" "leading_dense_block_count +1$" "$TMP/info"
expect_grep "info: expert groups" "expert_group_used_count +1$" "$TMP/info"
expect_grep "info: partial rotary" "rope\.dimension_count +32$" "$TMP/info"
expect_grep "info: pre-tokenizer" "pre +bailingmoe2" "$TMP/info"
if grep -qE "blk\.0\.(ffn_gate_inp|attn_q)\.weight" "$TMP/info"; then
  fail "info: layer 0 is dense, Q/K/V fused" "$(grep -E 'blk\.0\.' "$TMP/info")"
else ok "info: layer 0 is dense, Q/K/V fused"; fi

# ---------------------------------------------------------------- cached = uncached
P="The quick brown fox jumps over t"
cat >"$TMP/same.py" <<'EOF'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
assert a["n_prompt"] == 32 and b["n_prompt"] == 32, (a["n_prompt"], b["n_prompt"])
assert a["settings"]["cache"] == "none" and b["settings"]["cache"] == "prefix"
if a["tokens"] != b["tokens"]:
    i = next(i for i, (x, y) in enumerate(zip(a["tokens"], b["tokens"])) if x != y)
    sys.exit("first difference at position %d: %d vs %d" % (i, a["tokens"][i], b["tokens"][i]))
assert b["rows_computed"] < a["rows_computed"], (b["rows_computed"], a["rows_computed"])
# the cache computes no more than it must: after the first pass, one attention block per step
# (the active one: nothing later is seen), two when the active block moves on (the block just
# finished, once more with its last commits, to store its final K/V)
for prev, s in zip(b["steps"], b["steps"][1:]):
    most = 64 if s["block"] != prev["block"] else 32
    assert s["rows_computed"] <= most, ("step %d computed %d rows" % (s["step"], s["rows_computed"]))
# blocks commit in order: a step's commits lie in its block, and blocks never go back
last = 0
for d in (a, b):
    last = 0
    for s in d["steps"]:
        assert s["block"] >= last, ("block went back", s["step"])
        last = s["block"]
        lo = 32 + 32 * s["block"]
        for c in s["commits"]:
            assert lo <= c["pos"] < lo + 32, ("commit outside its block", s["step"], c["pos"])
print("same %d tokens; rows %d uncached, %d cached" % (len(a["tokens"]), a["rows_computed"], b["rows_computed"]))
EOF
for f in "$M" "$TMP/q8.gguf"; do
  name=$(basename "$f" .gguf)
  for c in none prefix; do
    "$BIN" generate -m "$f" -t 2 -p "$P" --no-chat --gen 96 --steps 48 --block 32 --cache $c --cache-type f32 \
      --json -q >"$TMP/$name-$c.json" 2>"$TMP/err" || fail "generate $name --cache $c" "$(tail -n1 "$TMP/err")"
  done
  if r=$(python3 "$TMP/same.py" "$TMP/$name-none.json" "$TMP/$name-prefix.json" 2>&1); then
    ok "$name: --cache prefix gives the uncached tokens, blocks in order ($r)"
  else fail "$name: --cache prefix gives the uncached tokens" "$r"; fi
done

finish
