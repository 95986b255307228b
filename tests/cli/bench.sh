#!/usr/bin/env bash
# bench.sh: the benchmark tooling's own logic, without running a benchmark: the parser of
# llama-diffusion-cli's timing line (on a line that llama.cpp printed), and the README
# renderer's targets and ratios on hand-made result files (the verdicts must follow the
# numbers: a ratio above a target is "no", at or below it "yes").
. "$(dirname "$0")/lib.sh"
SUITE=bench
mkdir -p "$TMP/res"
if python3 - "$TMP/res" >"$TMP/out" 2>&1 <<'PY'
import json, os, sys
sys.path.insert(0, "bench")
import e2e, render_bench as R
# printed by llama-diffusion-cli v0.4.0 on models/unmask-demo.gguf
line = "0.00.351.080 I \ntotal time: 335.62ms, time per step: 10.49ms, sampling time per step: 0.55ms\n"
m = e2e.PEER_LINE.findall(line)
assert m == [("335.62", "10.49", "0.55")], m

res = sys.argv[1]
R.RES = res
machine = {"cpu": "Test CPU", "cores": 2, "amx": False}
versions = {"peer": "llama.cpp test", "commit": "abc1234"}
def e2e_file(model, threads, peer_ms, um_ms, rss_kb, file_bytes, kernel="avx512", avx=None):
    med = {"peer": {"ms_per_step": peer_ms, "load_s": 1.0, "peak_rss_kb": 8e6, "tokens_per_s": 1.0, "sample_ms_per_step": 1},
           "unmask": {"ms_per_step": um_ms, "load_s": 0.5, "peak_rss_kb": rss_kb, "tokens_per_s": 3.0,
                      "rss_over_file": rss_kb * 1024 / file_bytes, "sample_ms_per_step": 1}}
    ratio = {"unmask": um_ms / peer_ms}
    if avx is not None:
        med["unmask-avx512"] = dict(med["unmask"], ms_per_step=avx)
        ratio["unmask-avx512"] = avx / peer_ms
    d = {"model": model, "threads": threads, "peer_threads": 2, "median": med, "ratio_ms_per_step": ratio,
         "unmask_kernel": kernel, "generated_tokens": 128, "prompt_tokens": 32, "steps": 32, "block": 32, "rounds": 3,
         "commands": {"unmask": "u", "peer": "p"}, "machine": machine, "versions": versions, "date": "2026-12-01T00:00:00Z"}
    json.dump(d, open(os.path.join(res, f"e2e-{model}-t{threads}.json"), "w"))
# LLaDA: 0.30x (misses 0.15, meets 0.8), RSS 1.05x file; Dream on an AMX machine: best 0.10x, avx512 0.9x, RSS 1.2x
e2e_file("llada-8b-q4_k_m", 2, 10000.0, 3000.0, 5.05e6, 4.92e9)
e2e_file("dream-7b-q4_k_m", 2, 10000.0, 1000.0, 5.5e6, 4.68e9, kernel="amx", avx=9000.0)
e2e_file("llada-8b-q4_k_m", 1, 10000.0, 6000.0, 5.05e6, 4.92e9)     # 1 thread: not a target row
t = R.targets_table()
rows = [l for l in t.splitlines() if l.startswith("| ") and "target" not in l]
want = [("llada-8b-q4_k_m", "0.15x", "0.30x", "**no**"), ("llada-8b-q4_k_m", "0.8x", "0.30x", "yes"),
        ("llada-8b-q4_k_m", "1.1x file", "1.05x", "yes"),
        ("dream-7b-q4_k_m", "0.15x", "0.10x", "yes"), ("dream-7b-q4_k_m", "0.8x", "0.90x", "**no**"),
        ("dream-7b-q4_k_m", "1.1x file", "1.20x", "**no**")]
assert len(rows) == len(want), t
for r, (model, target, got, verdict) in zip(rows, want):
    cells = [c.strip() for c in r.strip("|").split("|")]
    assert cells[0] == model and target in cells[1] and cells[2] == got and cells[3] == verdict, (r, model, target, got, verdict)
assert "no AMX" in rows[0] and "no AMX" not in rows[3], t
e = R.e2e_table()
assert "**0.30x**" in e and "**0.60x**" in e and "**0.10x**" in e and "**0.90x**" in e, e
assert e.index("llada-8b-q4_k_m | 2 / 2") < e.index("llada-8b-q4_k_m | 1 / 2") < e.index("dream-7b"), e
print("ok")
PY
then ok bench-parser-and-renderer; else fail bench-parser-and-renderer "$(tail -c 600 "$TMP/out")"; fi
finish
