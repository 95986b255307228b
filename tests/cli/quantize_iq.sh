#!/usr/bin/env bash
# quantize_iq.sh: `unmask quantize` to the IQ1/IQ2/IQ3 mixtures picks, tensor by tensor, the types
# llama-quantize picks (tests/data/iq/mixtures-iq.txt: llama-quantize's choices on the four
# synth shapes, made by tools/make-iq-fixtures.sh), and the files run. The bytes differ from
# llama-quantize's (unmask's lattice quantizer is its own, docs/quant.md), so only types are
# compared here.
SUITE=quantize_iq
. "$(dirname "$0")/lib.sh"
D=tests/data/iq

expect_rc "help lists the IQ mixtures" 0 "$BIN" quantize --help
for m in "IQ2_XXS +19" "IQ2_XS +20" "IQ3_XXS +23" "IQ1_S +24" "IQ3_S +26" "IQ3_M +27" "IQ2_S +28" "IQ2_M +29" "IQ1_M +31"; do
  expect_grep "help lists $m" "$m" "$TMP/out"
done

types_of() { "$BIN" info "$1" | awk '/^tensors/ { t = 1; next } /^$/ { t = 0 } t && $1 != "name" { print $1, $2 }' | sort; }
for shape in tiny-llada tiny-dream tiny-llada-moe tiny-rnd1; do
  if ! "$BIN" synth --shape "$shape" --type f16 -o "$TMP/s.gguf" >/dev/null 2>&1; then
    fail "synth $shape" "unmask synth failed"; continue
  fi
  for mix in IQ2_XXS IQ2_XS IQ2_S IQ2_M IQ3_XXS IQ3_S IQ3_M IQ1_S IQ1_M; do
    name="$shape $mix"
    awk -v s="$shape" -v m="$mix" '$1 == s && $2 == m { print $3, $4 }' $D/mixtures-iq.txt | sort >"$TMP/want"
    if [ ! -s "$TMP/want" ]; then fail "$name" "no expected types in $D/mixtures-iq.txt"; continue; fi
    if ! "$BIN" quantize -q -t 2 "$TMP/s.gguf" "$TMP/q.gguf" "$mix" 2>"$TMP/err"; then
      fail "$name" "$(cat "$TMP/err")"; continue
    fi
    types_of "$TMP/q.gguf" >"$TMP/got"
    if cmp -s "$TMP/want" "$TMP/got"; then ok "$name: llama-quantize's per-tensor types"
    else fail "$name: llama-quantize's per-tensor types" "$(diff "$TMP/want" "$TMP/got" | head -6 | tr '\n' ' ')"; fi
  done
done

# the last file (tiny-rnd1, IQ3_M: IQ3_S experts, Q4_K/Q8_0 attention) generates on ref and avx2
gen() { UNMASK_KERNEL=$1 "$BIN" generate -m "$TMP/q.gguf" -p "hello" --no-chat --gen 16 --steps 8 --seed 1 -t 2; }
if gen ref >"$TMP/ref.txt" 2>"$TMP/err" && [ -s "$TMP/ref.txt" ]; then ok "IQ3_M model generates (ref)"
else fail "IQ3_M model generates (ref)" "$(tail -2 "$TMP/err")"; fi
if "$BIN" --version | grep -q "^features:.*avx2"; then   # the binary's CPU (under QEMU not /proc/cpuinfo's)
  if gen avx2 >"$TMP/avx2.txt" 2>"$TMP/err" && [ -s "$TMP/avx2.txt" ]; then ok "IQ3_M model generates (avx2)"
  else fail "IQ3_M model generates (avx2)" "$(tail -2 "$TMP/err")"; fi
else
  skip "IQ3_M model generates (avx2)" "no AVX2"
fi
finish
