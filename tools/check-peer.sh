#!/usr/bin/env bash
# check-peer.sh: forward-pass agreement with llama.cpp (the peer, AMX off) on random-weight
# models of every architecture written by unmask's own writer: F32 (gate: per-row logits
# cosine >= 0.9999 and argmax agreement >= 99%), and Q8_0 / Q4_K_M made by llama.cpp's own
# llama-quantize from the same F32 file, so both runtimes read byte-identical files
# (reported). The IQ1/IQ2/IQ3 and ternary mixtures (IQ2_XXS ... TQ2_0) likewise, quantized by
# llama-quantize with an importance matrix (tools/iq-fixtures.c writes one, 1 + 0.75 sin(...)
# per column: the lowest-bit types are refused without one), reported.
# Results: bench/results/check-peer.json. Run by `make check-peer`.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/build-peer.sh >/dev/null
peer=build/peer
mkdir -p build/check-peer
w=build/check-peer
cc -O2 -o $w/peer_logits bench/peer_logits.c -I$peer/include -L$peer/lib -lllama -lggml -lggml-base -Wl,-rpath,$PWD/$peer/lib
cc -O2 -o $w/cmp_logits bench/cmp_logits.c -lm
cc -O1 -std=c11 -o $w/iq-fixtures tools/iq-fixtures.c -I$peer/include -L$peer/lib -lggml-base -lm -Wl,-rpath,$PWD/$peer/lib
threads=${THREADS:-2}
# a 64-token canvas: a few prompt-like ids, then a run of mask tokens as in a real step
fail=0
out=bench/results/check-peer.json
# written to a temporary file and moved into place only when every comparison ran, so an
# interrupted or failed run never leaves a truncated results file behind
tmp=$out.tmp
trap 'rm -f "$tmp"' EXIT
{
  echo "{\"peer\": \"$(python3 bench/benchlib.py peer)\","
  echo " \"machine\": \"$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')\","
  echo " \"date\": \"$(date -u +%Y-%m-%d)\", \"threads\": $threads, \"results\": ["
} > $tmp
first=1
for shape in tiny-llada tiny-dream tiny-llada-moe tiny-rnd1; do
  ./unmask synth --shape $shape --type f32 -o $w/$shape-f32.gguf 2>/dev/null
  mask=$(./unmask info --json $w/$shape-f32.gguf | python3 -c 'import json,sys; print(json.load(sys.stdin)["tokenizer"]["mask_token_id"])')
  toks=$(python3 -c "print(','.join([str((i*37+11)%256) for i in range(24)] + ['$mask']*40))")
  $w/iq-fixtures imatrix $w/$shape-f32.gguf $w/$shape-imatrix.dat
  for q in f32 q8_0 q4_k_m ${IQ_TYPES-iq2_xxs iq2_xs iq2_s iq2_m iq3_xxs iq3_s iq3_m iq1_s iq1_m tq1_0 tq2_0}; do
    f=$w/$shape-$q.gguf
    case $q in
      f32) ;;
      iq*|tq*) $peer/bin/llama-quantize --imatrix $w/$shape-imatrix.dat $w/$shape-f32.gguf $f ${q^^} >/dev/null 2>&1 ;;
      *) $peer/bin/llama-quantize $w/$shape-f32.gguf $f ${q^^} >/dev/null 2>&1 ;;
    esac
    rc=0
    $w/peer_logits $f --tokens "$toks" --out $w/peer.f32 -t $threads >/dev/null 2>$w/peer.err || rc=$?
    if [ $rc != 0 ]; then
      echo "check-peer: llama.cpp failed on $f (exit status $rc): $(tail -n1 $w/peer.err)" >&2
      exit 1
    fi
    ./unmask logits -m $f --tokens "$toks" --out $w/um.f32 -t $threads
    n_vocab=$(python3 -c "import os; print(os.path.getsize('$w/um.f32')//4//64)")
    if [ $q = f32 ]; then gate="--min-cos 0.9999 --min-argmax 0.99"; else gate=""; fi
    if r=$($w/cmp_logits $w/um.f32 $w/peer.f32 $n_vocab $gate); then status=ok; else status=FAIL; fail=1; fi
    echo "$status $shape $q $r"
    [ $first = 1 ] || echo "," >> $tmp
    first=0
    echo "  {\"model\": \"$shape\", \"type\": \"$q\", \"gated\": $([ $q = f32 ] && echo true || echo false), \"status\": \"$status\", \"compare\": $r}" >> $tmp
  done
done
echo "]}" >> $tmp
mv "$tmp" "$out"
echo "results in $out"
exit $fail
