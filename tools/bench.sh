#!/usr/bin/env bash
# bench.sh [ROUNDS]: the whole benchmark of bench/README.md. Builds the peer (AMX off), makes
# the benchmark models with unmask's own tools (random weights, exact LLaDA-8B and Dream-7B
# shapes, vocabulary included, Q4_K_M as llama-quantize would choose it; the bundled demo
# model as it is), then for 1 and 2 threads runs the forward-pass and whole-generation
# comparisons, alternating the runtimes, and re-renders README.md's tables.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
tools/build-peer.sh
mkdir -p build/bench
for shape in llada-8b dream-7b; do
  f=build/bench/$shape-q4_k_m.gguf
  [ -f "$f" ] || ./unmask synth --shape $shape --type Q4_K_M -o "$f"
done
models=("build/bench/llada-8b-q4_k_m.gguf:llada-8b-q4_k_m" "build/bench/dream-7b-q4_k_m.gguf:dream-7b-q4_k_m")
[ -f models/unmask-demo.gguf ] && models+=("models/unmask-demo.gguf:unmask-demo")
for t in ${BENCH_THREADS:-1 2}; do
  for m in "${models[@]}"; do
    bench/forward.sh "${m%%:*}" "${m##*:}" "$t" "$rounds"
    bench/e2e.sh "${m%%:*}" "${m##*:}" "$t" "$rounds"
  done
done
python3 tools/render-readme.py
