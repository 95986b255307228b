#!/usr/bin/env python3
"""blocks.py LLADA2.gguf NAME DENSE.gguf DENSE_NAME [--threads N] [--rounds R]: block diffusion speed.

Whole generations on a LLaDA 2.x file (block-causal attention, bench/README.md), 128 tokens after
benchlib.PROMPT (no chat template), 32 steps in blocks of 32, one process per run, R rounds
alternating the order of the runtimes:
  llada2          unmask's defaults for the architecture: the exact block K/V cache on (the
                  prompt's and finished blocks' keys and values are final under block-causal
                  attention), LLaDA 2.0's threshold rule with at least the schedule's quota per
                  step (on random weights no position passes 0.95: exactly 4 per step, 32 steps)
  llada2-nocache  the same with --cache none: every step recomputes the whole canvas
  dense           unmask on the dense file (the LLaDA-8B shape) with the same canvas and steps
                  (exact decoding, LLaDA's block schedule)
llama.cpp PR #17454's llama-diffusion-cli cannot generate with this architecture here, so it is not a
runtime of this script: without --diffusion-hybrid its second llama_decode fails ("sequence positions
must remain consecutive": the branch gives llada2 a K/V memory) and it exits 0 after one step with a
timing line for all of them (seen as 207 ms "per step"); with --diffusion-hybrid its blocks start
after the prompt but are counted over prompt + generation, so for any prompt of 32 tokens or more
(the CLI always applies the chat template) the last block is empty and it aborts
(GGML_ASSERT(batch.n_tokens > 0)). Its forward pass is compared instead: bench/forward.py
--peer-dir build/peer-llada2 (tools/bench.sh runs it where that build exists).
End-of-text early stop is off in every runtime, so all generate the same number of tokens.
Measures ms/step, tokens/s (128 / generation time), cache bytes, rows computed, peak RSS.
Writes bench/results/blocks-NAME-tN.json.
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as B  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("name")
    ap.add_argument("dense")
    ap.add_argument("dense_name")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--gen", type=int, default=128)
    ap.add_argument("--steps", type=int, default=32)
    ap.add_argument("--block", type=int, default=32)
    ap.add_argument("--prompt", default=B.PROMPT)
    a = ap.parse_args()
    os.makedirs(B.WORK, exist_ok=True)
    n_prompt = len(B.tokenize(a.model, a.prompt))
    canvas = n_prompt + a.gen

    def um(model, *extra):
        return [B.UNMASK, "generate", "-m", model, "--no-chat", "-p", a.prompt, "--gen", str(a.gen), "--steps",
                str(a.steps), "--block", str(a.block), "-t", str(a.threads), "--json", "-q", *extra]
    runtimes = {
        "llada2": (um(a.model, "--no-eos-early-stop"), {}),
        "llada2-nocache": (um(a.model, "--no-eos-early-stop", "--cache", "none"), {}),
        "dense": (um(a.dense), {}),
    }
    res = B.header("blocks")
    res.update({"model": a.name, "file": os.path.basename(a.model), "file_bytes": os.path.getsize(a.model),
                "dense_model": a.dense_name, "dense_file_bytes": os.path.getsize(a.dense),
                "prompt": a.prompt, "prompt_tokens": n_prompt, "generated_tokens": a.gen, "canvas": canvas,
                "steps": a.steps, "block": a.block, "threads": a.threads, "rounds": a.rounds,
                "commands": {k: "".join(f"{e}={v} " for e, v in env.items()) + B.cmdline(argv)
                             for k, (argv, env) in runtimes.items()},
                "runs": []})
    res["page_cache_warm_s"] = B.warm_page_cache(a.model) + B.warm_page_cache(a.dense)
    res["runs"] = B.run_rounds(runtimes, a.rounds, lambda who, t: B.measure_unmask(t), f"blocks {a.name} t{a.threads}")
    med = {}
    for who in runtimes:
        rs = [x for x in res["runs"] if x["runtime"] == who]
        med[who] = {k: B.median(x[k] for x in rs) for k in ("ms_per_step", "generate_ms", "load_s", "peak_rss_kb")}
        med[who]["tokens_per_s"] = a.gen / (med[who]["generate_ms"] / 1000)
        for k in ("cache_bytes", "rows_computed", "steps_run", "partial_step_ms", "refresh_step_ms"):
            if any(k in x for x in rs):
                med[who][k] = B.median(x[k] for x in rs if k in x)
    res["median"] = med
    tps = {who: med[who]["tokens_per_s"] for who in med}
    res["ratio_tokens_per_s"] = {
        "llada2_over_dense": tps["llada2"] / tps["dense"],
        "cache_over_nocache": tps["llada2"] / tps["llada2-nocache"],
    }
    B.finish(res, f"blocks-{a.name}-t{a.threads}.json", ("median", "ratio_tokens_per_s"))


if __name__ == "__main__":
    main()
