#!/usr/bin/env bash
# e2e.sh MODEL.gguf NAME [THREADS] [ROUNDS]: whole generations, llama.cpp's llama-diffusion-cli
# (AMX off) and `unmask generate` alternating, ROUNDS rounds each, on the same file and a
# 160-token canvas: a short prompt (no chat template) + masks, 32 steps.
#   unmask: --gen (160 - prompt) --steps 32 --block 32 (LLaDA's semi-autoregressive blocks)
#   peer:   -ub 160 --diffusion-steps 32 --diffusion-eps 0.001 (its block schedule asserts that
#           the steps divide the number of blocks, which it counts over prompt + generation: 5
#           blocks of 32 do not divide 32 steps; every peer step computes the whole canvas and
#           every row's logits whatever the schedule, so ms/step is comparable)
# Measures ms/step (each runtime's own per-step timer), tokens/s (generated tokens / generation
# time), load time and peak RSS (/usr/bin/time). Writes bench/results/e2e-NAME-tTHREADS.json.
set -euo pipefail
cd "$(dirname "$0")/.."
model=$1; name=$2; threads=${3:-2}; rounds=${4:-3}
prompt=${PROMPT:-"Once upon a time there was a little girl who"}
tools/build-peer.sh >/dev/null
w=build/bench; mkdir -p $w bench/results
canvas=160; steps=32
n_prompt=$(./unmask tokenize -m "$model" --ids-only "$prompt" | wc -w)
gen=$((canvas - n_prompt))
out=bench/results/e2e-$name-t$threads.json
runs=()
for r in $(seq "$rounds"); do
  # peer
  /usr/bin/time -f '%M %e' -o $w/time build/peer/bin/llama-diffusion-cli -m "$model" -p "$prompt" -ub $canvas \
      --diffusion-steps $steps --diffusion-eps 0.001 -t "$threads" >$w/peer.out 2>$w/peer.err
  read -r rss wall < <(tail -1 $w/time)
  line=$(grep -a 'time per step' $w/peer.err | tail -1)
  total=$(sed -E 's/.*total time: ([0-9.]+)ms.*/\1/' <<<"$line")
  per=$(sed -E 's/.*, time per step: ([0-9.]+)ms,.*/\1/' <<<"$line")
  echo "round $r peer: ${per} ms/step, total ${total} ms, wall ${wall} s, rss ${rss} kB" >&2
  runs+=("{\"runtime\": \"peer\", \"round\": $r, \"ms_per_step\": $per, \"generate_ms\": $total, \"wall_s\": $wall, \"load_s\": $(python3 -c "print(round($wall - $total/1000, 3))"), \"peak_rss_kb\": $rss}")
  # unmask
  /usr/bin/time -f '%M %e' -o $w/time ./unmask generate -m "$model" --no-chat -p "$prompt" --gen $gen --steps $steps \
      --block 32 -t "$threads" --json -q >$w/um.json 2>$w/um.err
  read -r rss wall < <(tail -1 $w/time)
  j=$(python3 -c "
import json; d=json.load(open('$w/um.json')); s=d['steps']
print(json.dumps({'ms_per_step': 1000*d['generate_s']/len(s), 'generate_ms': 1000*d['generate_s'], 'load_s': d['load_s'],
                  'forward_ms_mean': sum(x['forward_ms'] for x in s)/len(s), 'sample_ms_mean': sum(x['sample_ms'] for x in s)/len(s)}))")
  echo "round $r unmask: $j wall ${wall} s, rss ${rss} kB" >&2
  runs+=("{\"runtime\": \"unmask\", \"round\": $r, \"wall_s\": $wall, \"peak_rss_kb\": $rss, ${j:1:-1}}")
done
python3 - "$out" "$name" "$model" "$threads" "$gen" "$n_prompt" "${runs[@]}" <<'PY'
import json, os, statistics, sys
sys.path.insert(0, "bench"); import benchinfo
out, name, model, threads, gen, n_prompt = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
runs = [json.loads(r) for r in sys.argv[7:]]
def med(who, key): return statistics.median(r[key] for r in runs if r["runtime"] == who)
res = dict(benchinfo.header(), **{
  "benchmark": "e2e", "model": name, "file": os.path.basename(model), "file_bytes": os.path.getsize(model),
  "canvas": 160, "prompt_tokens": n_prompt, "generated_tokens": gen, "steps": 32, "threads": threads,
  "commands": {
    "peer": "llama-diffusion-cli -m MODEL -p PROMPT -ub 160 --diffusion-steps 32 --diffusion-eps 0.001 -t N",
    "unmask": "unmask generate -m MODEL --no-chat -p PROMPT --gen GEN --steps 32 --block 32 -t N --json"},
  "median": {who: {k: med(who, k) for k in ("ms_per_step", "load_s", "peak_rss_kb")} for who in ("peer", "unmask")},
  "runs": runs,
})
for who in ("peer", "unmask"):
    res["median"][who]["tokens_per_s"] = gen / (med(who, "generate_ms") / 1000)
res["ratio_ms_per_step"] = res["median"]["unmask"]["ms_per_step"] / res["median"]["peer"]["ms_per_step"]
json.dump(res, open(out, "w"), indent=1)
print(json.dumps({"median": res["median"], "ratio_ms_per_step": res["ratio_ms_per_step"]}))
PY
