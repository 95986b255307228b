# dgemma.sh: the diffusion-gemma architecture (DiffusionGemma) from the command line, on
# tiny-diffusion-gemma random weights: synth writes the port's keys and tensor names, info reads
# them (per-layer arrays, the diffusion.* keys) and says the file runs; `unmask logits` runs the
# region-aware pass (fast and reference agree; the prompt rows do not depend on the canvas, which
# they never see; self-conditioning changes the canvas rows only); bad flags and bad inputs are
# refused with a message; the peer check skips with a message when no peer is built (CI).
SUITE=dgemma
. "$(dirname "$0")/lib.sh"

M=$TMP/tdg.gguf
"$BIN" synth --shape tiny-diffusion-gemma --type f32 -o "$M" 2>/dev/null
"$BIN" info "$M" >"$TMP/info" 2>&1
expect_grep "info: architecture" "architecture +diffusion-gemma" "$TMP/info"
expect_grep "info: runnable (the uniform-state sampler decodes it)" "^runnable: yes" "$TMP/info"
expect_grep "info: sliding pattern" "sliding_window_pattern +\[true, true, false\]" "$TMP/info"
expect_grep "info: per-layer kv heads" "head_count_kv +\[2, 2, 1\]" "$TMP/info"
expect_grep "info: canvas length" "^  canvas_length +16$" "$TMP/info"
expect_grep "info: sampler keys" "^  eb_entropy_bound +0.1$" "$TMP/info"
expect_grep "info: global layer has no attn_v" "blk\.2\.attn_output" "$TMP/info"
if grep -q "blk\.2\.attn_v\.weight" "$TMP/info"; then fail "info: no attn_v on the global layer"; else ok "info: no attn_v on the global layer"; fi

# 24 tokens: 8 prompt + 16 canvas; then the same prompt with another canvas
A=$(python3 -c "print(','.join(str((i * 37 + 11) % 1000) for i in range(24)))")
B=$(python3 -c "print(','.join(str((i * 37 + 11) % 1000 if i < 8 else (i * 53) % 1000) for i in range(24)))")
expect_rc logits-fast 0 "$BIN" logits -m "$M" --tokens "$A" --out "$TMP/a.f32" -t 2
expect_rc logits-reference 0 "$BIN" logits -m "$M" --tokens "$A" --out "$TMP/r.f32" --reference
expect_rc logits-other-canvas 0 "$BIN" logits -m "$M" --tokens "$B" --out "$TMP/b.f32" -t 2
tail -c $((16 * 1024 * 4)) "$TMP/a.f32" >"$TMP/prev.f32"
expect_rc logits-self-conditioning 0 "$BIN" logits -m "$M" --tokens "$A" --out "$TMP/s.f32" --sc "$TMP/prev.f32" --sc-temp 0.8 -t 2
expect_rc logits-self-conditioning-topk 0 "$BIN" logits -m "$M" --tokens "$A" --out "$TMP/k.f32" --sc "$TMP/prev.f32" --sc-temp 0.8 --sc-mode topk --sc-topk 64 -t 2
expect_rc logits-prompt-len 0 "$BIN" logits -m "$M" --tokens "$A" --out "$TMP/p.f32" --prompt-len 12 -t 2
expect_rc logits-self-conditioning-bf16 0 "$BIN" logits -m "$M" --tokens "$A" --out "$TMP/h.f32" --sc "$TMP/prev.f32" --sc-temp 0.8 --sc-product bf16 -t 2
expect_rc logits-self-conditioning-bf16-ref 0 "$BIN" logits -m "$M" --tokens "$A" --out "$TMP/g.f32" --sc "$TMP/prev.f32" --sc-temp 0.8 --sc-product bf16 --reference
cat >"$TMP/cmp.py" <<'PY'
import struct, sys, math
V = 1024
def load(p):
    d = open(p, 'rb').read()
    return [struct.unpack_from('<%df' % V, d, r * V * 4) for r in range(len(d) // (V * 4))]
def cos(a, b):
    ab = sum(x * y for x, y in zip(a, b)); return ab / math.sqrt(sum(x * x for x in a) * sum(y * y for y in b))
a, r, b, s, p, h, g = (load(sys.argv[1] + n + '.f32') for n in 'arbsphg')
assert min(cos(x, y) for x, y in zip(a, r)) > 0.99999, 'fast and reference differ'
assert all(x == y for x, y in zip(a[:8], b[:8])), 'prompt rows changed with the canvas'
assert all(x == y for x, y in zip(a[:8], s[:8])), 'self-conditioning changed prompt rows'
assert min(cos(x, y) for x, y in zip(a[8:], s[8:])) < 0.9999, 'self-conditioning changed nothing'
assert any(x != y for x, y in zip(a[8:12], p[8:12])), '--prompt-len 12 changed nothing in rows 8-11'
# the BF16 product: near the float one, not equal to it; its reference path agrees
assert h[:8] == s[:8] and h[8:] != s[8:], 'bf16 product: prompt rows changed, or canvas rows not'
assert min(cos(x, y) for x, y in zip(h[8:], s[8:])) > 0.9999, 'bf16 product far from f32'
assert min(cos(x, y) for x, y in zip(h, g)) > 0.99999, 'bf16: fast and reference differ'
PY
if python3 "$TMP/cmp.py" "$TMP/" 2>"$TMP/err"; then ok "logits: fast = reference, prompt rows blind to the canvas, self-conditioning on canvas rows, bf16 near f32"
else fail "logits: region-aware pass" "$(tail -n 2 "$TMP/err")"; fi

expect_rc sc-wrong-size 1 "$BIN" logits -m "$M" --tokens "$A" --out "$TMP/x.f32" --sc "$TMP/a.f32"
expect_grep sc-wrong-size-msg "expected 16 canvas rows x 1024 logits" "$TMP/err"
expect_rc sc-missing 1 "$BIN" logits -m "$M" --tokens "$A" --out "$TMP/x.f32" --sc "$TMP/nope.f32"
expect_grep sc-missing-msg "nope.f32" "$TMP/err"
expect_rc sc-topk-needs-sc 2 "$BIN" logits -m "$M" --tokens "$A" --out "$TMP/x.f32" --sc-topk 8
expect_rc sc-mode-unknown 2 "$BIN" logits -m "$M" --tokens "$A" --out "$TMP/x.f32" --sc "$TMP/prev.f32" --sc-mode fast
expect_grep sc-mode-unknown-msg "exact, topk or auto" "$TMP/err"
expect_rc sc-product-unknown 2 "$BIN" logits -m "$M" --tokens "$A" --out "$TMP/x.f32" --sc "$TMP/prev.f32" --sc-product f16
expect_grep sc-product-unknown-msg "f32 or bf16 \(not 'f16'\)" "$TMP/err"
expect_rc sc-product-needs-sc 2 "$BIN" logits -m "$M" --tokens "$A" --out "$TMP/x.f32" --sc-product bf16
expect_grep sc-product-needs-sc-msg "need --sc" "$TMP/err"
expect_rc sc-topk-range 2 "$BIN" logits -m "$M" --tokens "$A" --out "$TMP/x.f32" --sc "$TMP/prev.f32" --sc-topk 0
expect_rc prompt-len-too-long 1 "$BIN" logits -m "$M" --tokens "$A" --out "$TMP/x.f32" --prompt-len 30
expect_grep prompt-len-too-long-msg "longer than the 24 tokens" "$TMP/err"
expect_rc dg-flags-other-arch 1 "$BIN" logits -m models/unmask-demo.gguf --tokens 1,2,3 --out "$TMP/x.f32" --prompt-len 1
expect_grep dg-flags-other-arch-msg "diffusion-gemma files" "$TMP/err"
[ -e "$TMP/x.f32" ] && fail "no output written on errors" || ok "no output written on errors"

# generate: the uniform-state sampler, two canvases of 16 at most 6 steps each; the JSON names
# the sampler's settings and the steps the canvases took; the prompt K/V cache changes nothing
expect_rc generate-runs 0 "$BIN" generate -m "$M" -p hello --gen 32 --steps 6 -t 2 --json --cache prefix
cp "$TMP/out" "$TMP/gen-prefix.json"
expect_rc generate-runs-uncached 0 "$BIN" generate -m "$M" -p hello --gen 32 --steps 6 -t 2 --json --cache none
cp "$TMP/out" "$TMP/gen-none.json"
cat >"$TMP/gen.py" <<'PY'
import json, sys
a = json.load(open(sys.argv[1])); b = json.load(open(sys.argv[2]))
s = a["settings"]
assert s["schedule"] == "uniform" and s["canvas"] == 16 and s["steps_requested"] == 6, s
assert abs(s["t_min"] - 0.4) < 1e-6 and abs(s["t_max"] - 0.8) < 1e-6 and s["self_cond"] == "auto", s
assert 1 <= a["steps_run"] <= 12, a["steps_run"]
assert len(a["tokens"]) == a["n_prompt"] + 32, len(a["tokens"])
assert a["tokens"] == b["tokens"] and a["steps_run"] == b["steps_run"], "prompt cache changed the decode"
assert a["rows_computed"] < b["rows_computed"], (a["rows_computed"], b["rows_computed"])
PY
if python3 "$TMP/gen.py" "$TMP/gen-prefix.json" "$TMP/gen-none.json" 2>"$TMP/err"; then ok "generate --json: uniform settings, two canvases, cache = no cache"
else fail "generate --json: uniform-state run" "$(tail -n 2 "$TMP/err")"; fi
# --stream-json: every step line names the rule's state and the canvas, position by position
expect_rc generate-stream 0 "$BIN" generate -m "$M" -p hello --gen 16 --steps 4 -t 2 --stream-json
cat >"$TMP/stream.py" <<'PY'
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
steps = [l for l in lines if l["type"] == "step"]
assert len(steps) == 4 and lines[-1]["type"] == "done", [l["type"] for l in lines]
for k, st in enumerate(steps):
    u = st["uniform"]
    assert u["end"] - u["start"] == 16 and u["canvas_step"] == k + 1, u
    assert abs(u["temperature"] - (0.4 + 0.4 * (4 - k) / 4)) < 1e-6, u["temperature"]
    assert all(len(u[a]) == 16 for a in ("kind", "token", "held", "entropy")), u
    kinds = u["kind"]
    if not u["stopped"]:
        assert set(kinds) <= {"draft", "accepted"}, kinds
        assert kinds.count("accepted") == u["accepted"] == len(st["commits"]) >= 1, u
    assert u["self_cond"] == (k > 0), u
    assert abs(u["mean_entropy"] - sum(u["entropy"]) / 16) < 1e-4, u
assert steps[-1]["uniform"]["stopped"] and steps[-1]["done"]
assert set(steps[-1]["uniform"]["kind"]) <= {"kept", "cut"}
PY
if python3 "$TMP/stream.py" "$TMP/out" 2>"$TMP/err"; then ok "--stream-json: the uniform object per step"
else fail "--stream-json: the uniform object" "$(tail -n 2 "$TMP/err")"; fi
expect_rc generate-dual-refused 1 "$BIN" generate -m "$M" -p hello --gen 16 --cache dual
expect_grep generate-dual-refused-msg "prompt's K/V \(prefix\) or nothing" "$TMP/err"
expect_rc generate-other-schedule-refused 1 "$BIN" generate -m "$M" -p hello --gen 16 --eb-gamma 1
expect_grep generate-other-schedule-refused-msg "uniform schedule only" "$TMP/err"
expect_rc generate-cfg-refused 1 "$BIN" generate -m "$M" -p hello --gen 16 --cfg 1
expect_grep generate-cfg-refused-msg "no masked prompt to guide against" "$TMP/err"
expect_rc generate-self-cond-unknown 2 "$BIN" generate -m "$M" -p hello --self-cond fast
expect_grep generate-self-cond-unknown-msg "auto, exact, topk or off" "$TMP/err"
expect_rc generate-self-cond-product-unknown 2 "$BIN" generate -m "$M" -p hello --self-cond-product fp8
expect_grep generate-self-cond-product-unknown-msg "f32 or bf16 \(not 'fp8'\)" "$TMP/err"
# --self-cond-product bf16: the settings and every self-conditioned step say so; the same
# run with the f32 product differs only where the product does (same step count or not, both finish)
expect_rc generate-bf16 0 "$BIN" generate -m "$M" -p hello --gen 16 --steps 4 -t 2 --stream-json --self-cond exact --self-cond-product bf16
cp "$TMP/out" "$TMP/bf16.jsonl"
expect_rc generate-bf16-json 0 "$BIN" generate -m "$M" -p hello --gen 16 --steps 4 -t 2 --json --self-cond-product bf16
cat >"$TMP/bf16.py" <<'PY'
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
steps = [l["uniform"] for l in lines if l["type"] == "step"]
assert [u["sc_product"] for u in steps if u["self_cond"]] == ["bf16"] * (len(steps) - 1), steps
assert all(u["sc_exact_rows"] == 16 for u in steps if u["self_cond"]), [u["sc_exact_rows"] for u in steps]
s = json.load(open(sys.argv[2]))["settings"]
assert s["self_cond_product"] == "bf16", s
PY
if python3 "$TMP/bf16.py" "$TMP/bf16.jsonl" "$TMP/out" 2>"$TMP/err"; then ok "--self-cond-product bf16: settings and steps name it"
else fail "--self-cond-product bf16" "$(tail -n 2 "$TMP/err")"; fi

# the peer check without a peer and without a source: skips, saying why (CI cannot fetch the fork)
if [ ! -e build/peer-dgemma/lib/libllama.so ]; then
  expect_rc peer-check-skips 0 bash tools/check-peer-dgemma.sh
  expect_grep peer-check-skip-msg "skipped: no DiffusionGemma peer" "$TMP/out"
else
  skip peer-check-skips "a peer is built here (build/peer-dgemma): tools/check-peer-dgemma.sh runs it"
fi
finish
