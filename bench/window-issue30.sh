#!/usr/bin/env bash
# window-issue30.sh [--tiny]: issue 30's committed measurements, in one quiet window of at most
# 20 minutes on 2 threads (written for the 2-core Zen 5 of the development machines):
#   1. make bench-rows: products over 16/32/64 rows against the int8 peak and the read bandwidth
#      (bench/rows.py -> rows.json);
#   2. the full-pass profile of the LLaDA-8B shape (bench/profile.py -> profile-NAME-t2.json);
#   3. the cached step's profile: rows 32..63 (the first block after the 32-token prompt) against
#      the K/V cache (bench/profile.py --partial -> profile-NAME-partial-t2.json);
#   4. the cached step and the 32-step --cache dual generation against llama.cpp, alternating
#      rounds, medians (bench/e2e.py --only unmask-dual -> cached-NAME-t2.json);
#   5. README.md / docs tables re-rendered from bench/results/ (tools/render-readme.py).
# Every result names the CPU (model name, family and model) and the kernel. Results that predate
# CPU families (no machine.cpu_family) are copied to bench/results/archive/before-issue30/ before
# they are overwritten; git keeps them too. Needs build/bench/llada-8b-q4_k_m.gguf (unmask synth
# --shape llada-8b --type Q4_K_M, tools/bench.sh) and the peer (tools/build-peer.sh, run here if
# it is not built). Environment: THREADS (2), ROUNDS (2: e2e rounds), ROWS_ROUNDS (5), PASSES (5),
# PEER=0 (leave out step 4 and the peer build).
# --tiny: the same steps on the tiny-llada shape, tiny row products and an 8-step generation, with
# results in a temporary folder (UNMASK_BENCH_RESULTS) and the tables printed, README untouched:
# a check that the script works, in a few minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
export NO_CUDA=${NO_CUDA:-1}
t0=$(date +%s)
log() { echo "window-issue30: $(( $(date +%s) - t0 )) s: $*" >&2; }
threads=${THREADS:-2}
rounds=${ROUNDS:-2}
if [ "${1:-}" = --tiny ]; then
  tiny=1
  name=tiny-llada-q4_k_m
  model=build/bench/$name.gguf
  partial=4:12
  rows_args=(--rounds 2 -- --types q4_K,q6_K --shapes 256x32 --rows 16 --threads 1,2 --arena-mib 4 --run-mib 1 --peak-reps 1)
  e2e_args=(--gen 16 --steps 4 --block 8)
  passes=3
  UNMASK_BENCH_RESULTS=$(mktemp -d)
  export UNMASK_BENCH_RESULTS
else
  tiny=0
  name=llada-8b-q4_k_m
  model=build/bench/$name.gguf
  partial=32:64
  rows_args=(--rounds "${ROWS_ROUNDS:-5}")
  e2e_args=()
  passes=${PASSES:-5}
fi
make -s -j2 unmask >/dev/null
mkdir -p build/bench
if [ "$tiny" = 1 ] && [ ! -f "$model" ]; then ./unmask synth --shape tiny-llada --type Q4_K_M -o "$model" >/dev/null; fi
if [ ! -f "$model" ]; then
  echo "window-issue30: $model is missing: make it first (unmask synth --shape llada-8b --type Q4_K_M -o $model)" >&2
  exit 1
fi
peer=${PEER:-1}
[ "$peer" = 0 ] || tools/build-peer.sh >/dev/null
log "cpu: $(python3 -c 'import sys; sys.path.insert(0, "bench"); import benchlib as B; print(B.machine()["cpu"], "/", B.cpu_family(), "/ kernel", B.kernel_in_use())')"
if [ "$tiny" = 0 ]; then
  for f in rows.json "profile-$name-t$threads.json" "cached-$name-t$threads.json"; do
    p=bench/results/$f
    if [ -f "$p" ] && ! python3 -c 'import json, sys; sys.exit(0 if json.load(open(sys.argv[1])).get("machine", {}).get("cpu_family") else 1)' "$p"; then
      mkdir -p bench/results/archive/before-issue30
      cp -n "$p" bench/results/archive/before-issue30/
    fi
  done
fi
log "1/5 bench-rows"
python3 bench/rows.py --note "window-issue30.sh (load average per round recorded)" "${rows_args[@]}"
log "2/5 full-pass profile"
python3 bench/profile.py "$model" "$name" --threads "$threads" --passes "$passes"
log "3/5 cached-step profile (rows $partial)"
python3 bench/profile.py "$model" "$name" --threads "$threads" --passes "$passes" --partial "$partial"
if [ "$peer" = 0 ]; then
  log "4/5 skipped (PEER=0)"
else
  log "4/5 cached step and --cache dual generation against llama.cpp, $rounds rounds"
  python3 bench/e2e.py "$model" "$name" --threads "$threads" --rounds "$rounds" --only unmask-dual "${e2e_args[@]}"
fi
log "5/5 tables"
if [ "$tiny" = 1 ]; then
  python3 - "$UNMASK_BENCH_RESULTS" <<'PY'
import sys
sys.path.insert(0, "bench")
import render_bench as R
R.RES = sys.argv[1]
for fn in (R.rows_table, R.profile_table, R.cached_table):
    print(fn(), "\n")
PY
  log "done (tiny: results in $UNMASK_BENCH_RESULTS, README untouched)"
else
  python3 tools/render-readme.py
  log "done: results in bench/results/, README.md and docs tables rendered; commit them"
fi
