#!/usr/bin/env bash
# check-peer-dgemma.sh [SRC]: unmask's diffusion-gemma forward pass against llama.cpp's DiffusionGemma
# port (PR #24423 as unslothai/llama.cpp carries it at refs/pins/c3fb97241295c196e09b783e705e84b96cd1bd74,
# 2026-07-04; its branch heads lack the port). The peer is built once by tools/build-peer.sh into
# build/peer-dgemma (AMX off, every other extension this CPU has) from SRC, a repository whose HEAD is
# that commit; without SRC and without a built peer (CI: the fork cannot be fetched there) the check
# says so and skips. bench/peer_logits_dgemma.c drives the port's C API (flash attention off).
#
# Files: tiny-diffusion-gemma (fused gate_up experts) and tiny-diffusion-gemma-split, written by
# unmask synth as F32, F16, Q8_0 and Q4_K (both runtimes read the same file). Passes: a 5-token
# prompt (shorter than the window of 8) and a 20-token one, each with the 16-token canvas; without
# self-conditioning, then with it (input: unmask's canvas logits of the first pass, temperature 0.8,
# the same file for both). Gate on F32: every row's cosine >= 0.9999 and the same argmax on every
# row; the other types are reported. Results: bench/results/check-peer-dgemma.txt.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
peer=build/peer-dgemma
if [ ! -f $peer/lib/libllama.so ] || [ ! -f $peer/include/llama.h ]; then
  if [ -z "${1:-}" ]; then
    echo "check-peer-dgemma: skipped: no DiffusionGemma peer in $peer and no source given (give a clone of" \
         "unslothai/llama.cpp checked out at refs/pins/c3fb9724; CI cannot fetch it)"
    exit 0
  fi
  nice -n 10 tools/build-peer.sh "$1" peer-dgemma "unslothai/llama.cpp refs/pins/c3fb9724 (PR #24423)"
fi
grep -q llama_diffusion_set_sc $peer/include/llama.h ||
  { echo "check-peer-dgemma: $peer is not the DiffusionGemma port (no llama_diffusion_set_sc)" >&2; exit 1; }
w=build/check-peer-dgemma
mkdir -p $w
cc -O2 -o $w/peer_logits_dgemma bench/peer_logits_dgemma.c -I$peer/include -L$peer/lib -lllama -lggml -lggml-base \
  -Wl,-rpath,$root/$peer/lib
cc -O2 -o $w/cmp_logits bench/cmp_logits.c -lm
U=$root/unmask
[ -x "$U" ] || { echo "check-peer-dgemma: build unmask first (make)" >&2; exit 1; }
threads=${THREADS:-2}
out=bench/results/check-peer-dgemma.txt
tmp=$out.tmp
trap 'rm -f "$tmp"' EXIT
fail=0
{
  echo "# unmask diffusion-gemma vs llama.cpp's DiffusionGemma port: one forward pass, every row's logits"
  echo "# peer: $(cat $peer/VERSION) ($(cat $peer/CONFIG | tr '\n' ' '))"
  echo "# machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $threads threads, $(date -u +%Y-%m-%d)"
  echo "# shape type prompt canvas self-conditioning: rows, min/mean row cosine, argmax agreement, max |diff|"
} >"$tmp"
for shape in tiny-diffusion-gemma tiny-diffusion-gemma-split; do
  for type in f32 f16 q8_0 q4_K; do
    f=$w/$shape-$type.gguf
    "$U" synth --shape $shape --type $type --seed 3 -o $f 2>/dev/null
    for P in 5 20; do
      n=$((P + 16))
      toks=$(python3 -c "print(','.join(str((i * 37 + 11) % 1024) for i in range($n)))")
      for sc in off on; do
        args=(); pargs=()
        if [ $sc = on ]; then
          # the first pass's canvas rows (P .. n-1) as the previous step's logits
          tail -c $((16 * 1024 * 4)) $w/um-$shape-$type-$P-off.f32 >$w/prev.f32
          args=(--sc $w/prev.f32 --sc-temp 0.8); pargs=(--sc $w/prev.f32 --sc-temp 0.8)
        fi
        um=$w/um-$shape-$type-$P-$sc.f32 pe=$w/peer-$shape-$type-$P-$sc.f32
        "$U" logits -m $f --tokens "$toks" --out $um -t $threads "${args[@]}"
        $w/peer_logits_dgemma $f --tokens "$toks" --out $pe -t $threads "${pargs[@]}" >/dev/null 2>$w/peer.err ||
          { echo "check-peer-dgemma: the peer failed: $(tail -n 2 $w/peer.err)" >&2; exit 1; }
        gate=()
        [ $type = f32 ] && gate=(--min-cos 0.9999 --min-argmax 1.0)
        if r=$($w/cmp_logits $um $pe 1024 "${gate[@]}"); then st=ok; else st=FAIL; fail=1; fi
        line="$shape $type prompt $P canvas 16 sc $sc: $r${gate:+ [$st]}"
        if [ $type != f32 ]; then
          # how far each runtime's own logits move from its F32 file's (same seed): the weights'
          # rounding flips this random model's expert choices, in each runtime its own way
          if [ $sc = off ]; then
            line="$line; unmask vs its f32 $($w/cmp_logits $um $w/um-$shape-f32-$P-off.f32 1024 | sed 's/.*cos_min": \([0-9.]*\).*/\1/'),"
            line="$line peer vs its f32 $($w/cmp_logits $pe $w/peer-$shape-f32-$P-off.f32 1024 | sed 's/.*cos_min": \([0-9.]*\).*/\1/') (min cosine)"
          fi
        fi
        echo "$line" | tee -a "$tmp"
      done
    done
  done
done
mv "$tmp" "$out"
trap - EXIT
echo "check-peer-dgemma: results in $out"
exit $fail
