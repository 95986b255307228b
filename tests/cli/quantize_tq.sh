#!/usr/bin/env bash
# quantize_tq.sh: the ternary mixtures TQ1_0 / TQ2_0 end to end. Models from `unmask synth`
# (F16, BF16, F32 sources; dense and MoE) must quantize to the same bytes llama-quantize
# wrote (tests/data/iq/synth-tq.txt, made by tools/make-iq-fixtures.sh), and a ternary model
# must generate on every kernel (AVX2: the integer path of the IQ/TQ formats; ref: the
# reference dots) with the same greedy tokens on both.
SUITE=quantize_tq
. "$(dirname "$0")/lib.sh"
D=tests/data/iq

expect_rc "help lists TQ1_0" 0 "$BIN" quantize --help
expect_grep "TQ1_0 with its ftype" "TQ1_0 +36" "$TMP/out"
expect_grep "TQ2_0 with its ftype" "TQ2_0 +37" "$TMP/out"

synth_quant_matches $D/synth-tq.txt tools/make-iq-fixtures.sh

# generation from a ternary model (tiny-llada as TQ2_0, with its Q4_K token_embd and Q6_K head)
"$BIN" synth --shape tiny-llada --type f16 -o "$TMP/s.gguf" >/dev/null 2>&1
expect_rc "TQ2_0 quantize" 0 "$BIN" quantize -q -t 2 "$TMP/s.gguf" "$TMP/tq.gguf" TQ2_0
expect_rc "info shows tq2_0 tensors" 0 "$BIN" info "$TMP/tq.gguf"
expect_grep "info names the type" "blk.0.attn_q.weight +tq2_0" "$TMP/out"
gen() { UNMASK_KERNEL=$1 "$BIN" generate -m "$TMP/tq.gguf" -p "hello" --no-chat --gen 16 --steps 8 --seed 1 -t 2; }
if gen ref >"$TMP/ref.txt" 2>"$TMP/err"; then ok "generates on the ref kernel"; else fail "generates on the ref kernel" "$(tail -2 "$TMP/err")"; fi
if "$BIN" --version | grep -q "^features:.*avx2"; then   # the binary's CPU (under QEMU not /proc/cpuinfo's)
  if gen avx2 >"$TMP/avx2.txt" 2>"$TMP/err"; then ok "generates on the avx2 kernel"; else fail "generates on the avx2 kernel" "$(tail -2 "$TMP/err")"; fi
  # the same integer sums (Q8_K activations) on both, so the same greedy tokens; where
  # UNMASK_KERNEL=avx2 means avxvnni (float tiles for TQ: other rounding) this is not asserted
  if ! grep -q "kernel avx2," "$TMP/err"; then skip "ref and avx2 give the same tokens" "avx2 runs as $(grep -o 'kernel [a-z0-9-]*' "$TMP/err")"
  elif [ -s "$TMP/ref.txt" ] && cmp -s "$TMP/ref.txt" "$TMP/avx2.txt"; then ok "ref and avx2 give the same tokens"
  else fail "ref and avx2 give the same tokens" "$(head -c 300 "$TMP/ref.txt") | $(head -c 300 "$TMP/avx2.txt")"; fi
else
  skip "avx2 generation" "no AVX2"
fi
finish
