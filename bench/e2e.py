#!/usr/bin/env python3
"""e2e.py MODEL.gguf NAME [--threads N] [--peer-threads M] [--rounds R]: whole generations.

128 tokens after a short prompt (benchlib.PROMPT, no chat template), 32 steps, one process
per run (load, generate, exit), R rounds alternating the order of the runtimes:
  unmask:    unmask generate --gen 128 --steps 32 --block 32 (LLaDA's semi-autoregressive
             blocks: 4 blocks of 8 steps)
  llama.cpp: llama-diffusion-cli -ub CANVAS --diffusion-steps 32 --diffusion-eps 0.001
             Its block schedule asserts that the blocks, which it counts over prompt + generation
             (a defect, ../shared/REFERENCE.md), divide the steps: 160/32 = 5 blocks do not divide
             32 steps, so it runs the timestep schedule. Every one of its steps runs the whole
             canvas through the model and computes every row's logits whatever the schedule, so
             its time per step does not depend on that choice.
Both runtimes get the same canvas size (prompt + 128). --peer-threads runs llama.cpp at another
thread count than unmask (tools/bench.sh passes llama.cpp's best setting on this machine).
Measures ms/step (each runtime's own generation timer / steps), tokens/s (128 / generation
time), load time (process wall time minus generation time for llama.cpp; unmask's own load +
prepare timer) and peak RSS (/usr/bin/time). Two more unmask runs use fast decoding:
`--cache dual` (same schedule; the time of the steps that reuse the cache is reported apart
from the refreshes) and `--fast` (on these files, which no models.conf preset measured, Fast-dLLM's
--threshold 0.9 --cache dual, the constants of src/app/genopts.h: fewer steps when the model
is sure), with their ratios to llama.cpp
(ratio_cached) and peak RSS against the file plus the reported cache (--no-cache leaves them
out). Writes bench/results/e2e-NAME-tN.json; with --only and no exact unmask runtime,
bench/results/cached-NAME-tN.json (read by the README's fast-decoding table only).
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as B  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("name")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--peer-threads", type=int, default=0)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--gen", type=int, default=128)
    ap.add_argument("--steps", type=int, default=32)
    ap.add_argument("--block", type=int, default=32)
    ap.add_argument("--prompt", default=B.PROMPT)
    ap.add_argument("--no-cache", action="store_true", help="leave out the --cache dual and --fast runs")
    ap.add_argument("--only", default="", help="comma-separated runtimes to keep beside llama.cpp "
                    "(unmask, unmask-avx512, unmask-dual, unmask-fast; default: all), for a shorter run")
    a = ap.parse_args()
    peer_threads = a.peer_threads or a.threads
    os.makedirs(B.WORK, exist_ok=True)
    n_prompt = len(B.tokenize(a.model, a.prompt))
    canvas = n_prompt + a.gen
    best = B.unmask_best_kernel()
    um = [B.UNMASK, "generate", "-m", a.model, "--no-chat", "-p", a.prompt, "--gen", str(a.gen),
          "--steps", str(a.steps), "--block", str(a.block), "-t", str(a.threads), "--json", "-q"]
    runtimes = {
        "peer": ([os.path.join(B.PEER, "bin", "llama-diffusion-cli"), "-m", a.model, "-p", a.prompt,
                  "-ub", str(canvas), "--diffusion-steps", str(a.steps), "--diffusion-eps", "0.001",
                  "-t", str(peer_threads)], {}),
        "unmask": (um, {}),
    }
    if B.second_kernel(best):
        runtimes["unmask-avx512"] = (um, {"UNMASK_KERNEL": "avx512"})
    # fast decoding (docs/decoding.md): the same schedule with Fast-dLLM's dual cache, and --fast
    # (the dual cache with the entropy-bounded schedule: fewer steps when the model is sure)
    if not a.no_cache:
        runtimes["unmask-dual"] = (um + ["--cache", "dual"], {})
        # --fast chooses its own steps: drop the "--steps N" pair (only that pair: N may equal
        # another flag's value, e.g. --block 32)
        k = um.index("--steps")
        runtimes["unmask-fast"] = (um[:k] + um[k + 2:] + ["--fast"], {})
    if a.only:
        keep = {"peer"} | set(a.only.split(","))
        unknown = keep - set(runtimes)
        if unknown:
            sys.exit(f"e2e: --only: unknown runtime(s) {', '.join(sorted(unknown))} (have {', '.join(runtimes)})")
        runtimes = {k: v for k, v in runtimes.items() if k in keep}
    res = B.header("e2e")
    res.update({"model": a.name, "file": os.path.basename(a.model), "file_bytes": os.path.getsize(a.model),
                "prompt": a.prompt, "prompt_tokens": n_prompt, "generated_tokens": a.gen, "canvas": canvas,
                "steps": a.steps, "block": a.block, "threads": a.threads, "peer_threads": peer_threads,
                "rounds": a.rounds, "unmask_kernel": best,
                "commands": {k: "".join(f"{e}={v} " for e, v in env.items()) + B.cmdline(argv)
                             for k, (argv, env) in runtimes.items()},
                "runs": []})
    names = list(runtimes)

    def measure(who, t):
        return B.measure_peer(t) if who == "peer" else B.measure_unmask(t)
    res["page_cache_warm_s"] = B.warm_page_cache(a.model)
    res["runs"] = B.run_rounds(runtimes, a.rounds, measure, f"e2e {a.name} t{a.threads}")
    med = {}
    for who in names:
        rs = [x for x in res["runs"] if x["runtime"] == who]
        med[who] = {k: B.median(x[k] for x in rs) for k in ("ms_per_step", "load_s", "peak_rss_kb", "sample_ms_per_step")}
        med[who]["tokens_per_s"] = a.gen / (B.median(x["generate_ms"] for x in rs) / 1000)
        med[who]["rss_over_file"] = med[who]["peak_rss_kb"] * 1024 / res["file_bytes"]
        med[who]["generate_ms"] = B.median(x["generate_ms"] for x in rs)
        for k in ("partial_step_ms", "refresh_step_ms", "cache_bytes", "steps_run"):
            if any(k in x for x in rs):
                med[who][k] = B.median(x[k] for x in rs if k in x)
        if med[who].get("cache_bytes"):
            med[who]["rss_over_file_plus_cache"] = med[who]["peak_rss_kb"] * 1024 / (res["file_bytes"] + med[who]["cache_bytes"])
    res["median"] = med
    res["ratio_ms_per_step"] = {who: med[who]["ms_per_step"] / med["peer"]["ms_per_step"] for who in names if who != "peer"}
    # issue #17's gates: a step that reuses the dual cache against a llama.cpp step, a whole
    # generation with the dual cache and with --fast against llama.cpp's
    peer_step, peer_gen = med["peer"]["ms_per_step"], med["peer"]["generate_ms"]
    res["ratio_cached"] = {who: {"partial_step": med[who].get("partial_step_ms", 0) / peer_step,
                                 "generation": med[who]["generate_ms"] / peer_gen,
                                 "tokens_per_s_over_peer": med[who]["tokens_per_s"] / med["peer"]["tokens_per_s"]}
                           for who in ("unmask-dual", "unmask-fast") if who in med}
    # a run without the exact unmask runtime (--only) is kept apart from the full comparison:
    # the README's exact-decoding tables read e2e-*.json, the fast-decoding table both
    kind = "e2e" if "unmask" in runtimes else "cached"
    B.finish(res, f"{kind}-{a.name}-t{a.threads}.json", ("median", "ratio_ms_per_step", "ratio_cached"))


if __name__ == "__main__":
    main()
