#!/usr/bin/env bash
# quantize.sh: `unmask quantize` end to end. tiny-f32.gguf and llama-quantize's outputs for it
# (tests/data/quant/tiny-*.gguf, made by tools/make-quant-fixtures.sh) must come out byte-identical.
SUITE=quantize
. "$(dirname "$0")/lib.sh"
D=tests/data/quant

expect_rc "help exits 0" 0 "$BIN" quantize --help
expect_grep "help lists the mixtures" "Q4_K_M +15" "$TMP/out"
expect_grep "help lists --threads" "--threads" "$TMP/out"
expect_rc "unmask --help lists quantize" 0 "$BIN" --help
expect_grep "quantize in the command list" "^  quantize" "$TMP/out"

expect_rc "no arguments is a usage error" 2 "$BIN" quantize
expect_rc "unknown type is a usage error" 2 "$BIN" quantize $D/tiny-f32.gguf "$TMP/x.gguf" Q4_K_X
expect_grep "unknown type is named" "unknown type 'Q4_K_X'" "$TMP/err"
expect_rc "bad thread count" 2 "$BIN" quantize -t 0 $D/tiny-f32.gguf "$TMP/x.gguf" Q8_0
expect_rc "missing input fails" 1 "$BIN" quantize "$TMP/none.gguf" "$TMP/x.gguf" Q8_0
if [ "$(wc -l <"$TMP/err")" -eq 1 ]; then ok "missing input: one-line error"; else fail "missing input: one-line error" "$(cat "$TMP/err")"; fi
printf 'GGUF\003\000\000\000garbage' >"$TMP/bad.gguf"
expect_rc "truncated input fails cleanly" 1 "$BIN" quantize "$TMP/bad.gguf" "$TMP/x.gguf" Q8_0

for mix in Q4_K_M Q8_0; do
  lc=$(echo $mix | tr 'A-Z' 'a-z')
  expect_rc "$mix exits 0" 0 "$BIN" quantize -t 2 $D/tiny-f32.gguf "$TMP/$lc.gguf" $mix
  expect_grep "$mix reports per-tensor progress" "blk.7.ffn_down.weight +f32 +-> q" "$TMP/err"
  if cmp -s "$TMP/$lc.gguf" $D/tiny-$lc.gguf; then ok "$mix: same bytes as llama-quantize"
  else fail "$mix: same bytes as llama-quantize" "$(cmp "$TMP/$lc.gguf" $D/tiny-$lc.gguf)"; fi
done

expect_rc "requantizing is refused" 1 "$BIN" quantize $D/tiny-q4_k_m.gguf "$TMP/re.gguf" Q8_0
expect_grep "refusal names the flag" "allow-requantize" "$TMP/err"
expect_rc "--allow-requantize converts" 0 "$BIN" quantize -q --allow-requantize $D/tiny-q4_k_m.gguf "$TMP/re.gguf" Q8_0
# Models from `unmask synth` (MoE, F16/BF16 sources): same sha256 as llama-quantize's output.
# If synth no longer writes the recorded input, the comparison is skipped (not passed).
synth_quant_matches $D/synth.txt tools/make-quant-fixtures.sh
finish
