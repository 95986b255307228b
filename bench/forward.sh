#!/usr/bin/env bash
# forward.sh MODEL.gguf NAME [THREADS] [ROUNDS]: one forward pass over a 160-token canvas
# (32 prompt ids + 128 mask tokens), llama.cpp (AMX off) and unmask alternating, ROUNDS
# rounds of one process each (2 passes per process, the second timed as well), medians.
# Writes bench/results/forward-NAME-tTHREADS.json with every raw run.
set -euo pipefail
cd "$(dirname "$0")/.."
model=$1; name=$2; threads=${3:-2}; rounds=${4:-3}
tools/build-peer.sh >/dev/null
w=build/bench; mkdir -p $w bench/results
cc -O2 -o $w/peer_logits bench/peer_logits.c -Ibuild/peer/include -Lbuild/peer/lib -lllama -lggml -lggml-base -Wl,-rpath,$PWD/build/peer/lib
mask=$(./unmask info --json "$model" | python3 -c 'import json,sys; print(json.load(sys.stdin)["tokenizer"]["mask_token_id"])')
toks=$(python3 -c "print(','.join([str(1000+i*7) for i in range(32)] + ['$mask']*128))")
out=bench/results/forward-$name-t$threads.json
runs=()
for r in $(seq "$rounds"); do
  for who in peer unmask; do
    if [ $who = peer ]; then
      j=$(/usr/bin/time -f '%M' -o $w/rss $w/peer_logits "$model" --tokens "$toks" -t "$threads" --reps 2 2>/dev/null | tail -1)
    else
      j=$(/usr/bin/time -f '%M' -o $w/rss ./unmask logits -m "$model" --tokens "$toks" -t "$threads" --reps 2)
    fi
    rss=$(tail -1 $w/rss)
    echo "round $r $who: $j rss_kb=$rss" >&2
    runs+=("{\"runtime\": \"$who\", \"round\": $r, \"peak_rss_kb\": $rss, \"result\": $j}")
  done
done
python3 - "$out" "$name" "$model" "$threads" "${runs[@]}" <<'PY'
import json, os, statistics, sys
sys.path.insert(0, "bench"); import benchinfo
out, name, model, threads, runs = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), [json.loads(r) for r in sys.argv[5:]]
def med(who, key):
    return statistics.median(x for r in runs if r["runtime"] == who for x in ([r["result"][key]] if key != "forward_ms" else r["result"]["forward_ms"]))
res = dict(benchinfo.header(), **{
  "benchmark": "forward", "model": name, "file": os.path.basename(model), "file_bytes": os.path.getsize(model),
  "canvas": "32 prompt ids + 128 masks (160 tokens)", "threads": threads,
  "commands": {"peer": "build/bench/peer_logits MODEL --tokens T -t N --reps 2",
               "unmask": "./unmask logits -m MODEL --tokens T -t N --reps 2"},
  "median_forward_ms": {"peer": med("peer", "forward_ms"), "unmask": med("unmask", "forward_ms")},
  "median_peak_rss_kb": {"peer": statistics.median(r["peak_rss_kb"] for r in runs if r["runtime"] == "peer"),
                          "unmask": statistics.median(r["peak_rss_kb"] for r in runs if r["runtime"] == "unmask")},
  "runs": runs,
})
res["ratio_unmask_over_peer"] = res["median_forward_ms"]["unmask"] / res["median_forward_ms"]["peer"]
json.dump(res, open(out, "w"), indent=1)
print(json.dumps({k: res[k] for k in ("median_forward_ms", "median_peak_rss_kb", "ratio_unmask_over_peer")}))
PY
