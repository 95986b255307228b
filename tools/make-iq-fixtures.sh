#!/bin/sh
# Regenerate tests/data/iq/ from llama.cpp (the peer build): IQ1/IQ2/IQ3 and ternary blocks as
# llama-quantize writes them, and the floats ggml's own dequantizers give for them.
# Needs: the peer (make peer, or PEER=/path/to/build/peer), a C compiler and ./unmask (for
# `unmask synth`). The unit tests only read the committed fixtures; they never need the peer.
#
#   1. unmask synth --shape tiny-llada --type f16        a small random-weight model
#   2. tools/iq-fixtures.c imatrix                       a legacy imatrix for every matrix
#                                                        (IQ2_XXS/IQ2_XS/IQ1_S/IQ1_M need one)
#   3. llama-quantize --imatrix --pure ... FTYPE         each type (IQ2_S blocks: ftype IQ2_M, whose
#                                                        default type it is), token_embd/output q8_0
#   4. tools/iq-fixtures.c blocks                        4 blocks of blk.0.attn_q.weight and 4
#                                                        random blocks, with ggml's to_float values;
#                                                        source.f32: those 4 blocks' input values
set -e
cd "$(dirname "$0")/.."
PEER=${PEER:-/work/main/build/peer}
UNMASK=${UNMASK:-./unmask}
OUT=tests/data/iq
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
cc -O1 -std=c11 -I"$PEER/include" -o "$TMP/iq-fixtures" tools/iq-fixtures.c \
   -L"$PEER/lib" -Wl,-rpath,"$PEER/lib" -lggml-base -lm
"$UNMASK" synth --shape tiny-llada --type f16 -o "$TMP/src.gguf" >/dev/null 2>&1
"$TMP/iq-fixtures" imatrix "$TMP/src.gguf" "$TMP/imatrix.dat"
mkdir -p "$OUT"
"$TMP/iq-fixtures" source "$TMP/src.gguf" blk.0.attn_q.weight "$OUT/source.f32"
# ftype name for llama-quantize, ggml type id, fixture name
for spec in IQ2_XXS:16:iq2_xxs IQ2_XS:17:iq2_xs IQ2_M:22:iq2_s IQ3_XXS:18:iq3_xxs IQ3_S:21:iq3_s \
            IQ1_S:19:iq1_s IQ1_M:29:iq1_m TQ1_0:34:tq1_0 TQ2_0:35:tq2_0; do
    ft=${spec%%:*}; rest=${spec#*:}; id=${rest%%:*}; name=${rest#*:}
    nice -n 19 "$PEER/bin/llama-quantize" --imatrix "$TMP/imatrix.dat" --pure \
        --token-embedding-type q8_0 --output-tensor-type q8_0 \
        "$TMP/src.gguf" "$TMP/$name.gguf" "$ft" 1 >"$TMP/$name.log" 2>&1 \
        || { tail -20 "$TMP/$name.log"; exit 1; }
    "$TMP/iq-fixtures" blocks "$TMP/$name.gguf" blk.0.attn_q.weight "$id" "$OUT/$name.bin"
done
# synth-tq.txt: sha256 of what llama-quantize makes of `unmask synth` models with the ternary
# mixtures (no imatrix: TQ ignores one), for tests/cli/quantize_tq.sh (same bytes from unmask quantize)
{
  echo "# unmask synth model, source type, mixture, sha256 of the synth output, sha256 of what"
  echo "# llama-quantize (llama.cpp $(sed -n 1p "$PEER/VERSION")) makes of it. Made by tools/make-iq-fixtures.sh."
  for spec in tiny-llada:f16:TQ1_0 tiny-dream:bf16:TQ2_0 tiny-llada-moe:f32:TQ2_0 tiny-rnd1:f16:TQ1_0; do
    shape=${spec%%:*}; rest=${spec#*:}; ty=${rest%%:*}; mix=${rest#*:}
    "$UNMASK" synth --shape "$shape" --type "$ty" -o "$TMP/s.gguf" >/dev/null 2>&1
    nice -n 19 "$PEER/bin/llama-quantize" "$TMP/s.gguf" "$TMP/q.gguf" "$mix" 1 >"$TMP/q.log" 2>&1 \
        || { tail -20 "$TMP/q.log"; exit 1; }
    echo "$shape $ty $mix $(sha256sum <"$TMP/s.gguf" | cut -d' ' -f1) $(sha256sum <"$TMP/q.gguf" | cut -d' ' -f1)"
  done
} >"$OUT/synth-tq.txt"
# mixtures-iq.txt: the per-tensor types llama-quantize picks for the IQ mixtures on the four
# synth shapes (f16 sources; with the imatrix where llama-quantize demands one), for
# tests/cli/quantize_iq.sh (unmask quantize must pick the same)
{
  echo "# SHAPE MIXTURE TENSOR TYPE: llama-quantize (llama.cpp $(sed -n 1p "$PEER/VERSION")) on unmask synth"
  echo "# models (f16). Made by tools/make-iq-fixtures.sh."
  for shape in tiny-llada tiny-dream tiny-llada-moe tiny-rnd1; do
    "$UNMASK" synth --shape "$shape" --type f16 -o "$TMP/s.gguf" >/dev/null 2>&1
    "$TMP/iq-fixtures" imatrix "$TMP/s.gguf" "$TMP/im.dat"
    for mix in IQ2_XXS IQ2_XS IQ2_S IQ2_M IQ3_XXS IQ3_S IQ3_M IQ1_S IQ1_M; do
      case $mix in IQ3_S|IQ3_M) im= ;; *) im="--imatrix $TMP/im.dat" ;; esac
      nice -n 19 "$PEER/bin/llama-quantize" $im "$TMP/s.gguf" "$TMP/q.gguf" "$mix" 1 >"$TMP/q.log" 2>&1 \
          || { tail -20 "$TMP/q.log"; exit 1; }
      "$TMP/iq-fixtures" types "$TMP/q.gguf" | sed "s/^/$shape $mix /"
    done
  done
} >"$OUT/mixtures-iq.txt"
echo "wrote $OUT ($(sed -n 1p "$PEER/VERSION"))"
