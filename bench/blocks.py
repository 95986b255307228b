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
  peer            llama.cpp PR #17454's llama-diffusion-cli (build/peer-llada2, tools/build-peer.sh)
                  on the LLaDA 2.x file, where that build exists, run as bench/e2e.py runs
                  v0.4.0: the same canvas (-ub CANVAS), --steps steps of the timestep schedule,
                  every step a full pass over the canvas. Its --diffusion-hybrid K/V cache
                  cannot run here: its blocks start after the prompt but are counted over
                  prompt + generation, so with a prompt of 32 tokens or more (the CLI always
                  applies the chat template) the last block is empty and llama_decode asserts
                  (GGML_ASSERT(batch.n_tokens > 0), seen on this file and on tiny-llada2).
End-of-text early stop is off in every runtime, so all generate the same number of tokens.
Measures ms/step, tokens/s (128 / generation time), cache bytes, rows computed, peak RSS.
Writes bench/results/blocks-NAME-tN.json.
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as B  # noqa: E402

PR_PEER = os.path.join(B.ROOT, "build", "peer-llada2")


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
    ap.add_argument("--no-peer", action="store_true", help="leave out the PR #17454 peer even where it is built")
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
    peer_cli = os.path.join(PR_PEER, "bin", "llama-diffusion-cli")
    peer_steps = a.steps
    if os.path.exists(peer_cli) and not a.no_peer:
        runtimes["peer"] = ([peer_cli, "-m", a.model, "-p", a.prompt, "-ub", str(canvas),
                             "--diffusion-steps", str(peer_steps), "--diffusion-eps", "0.001",
                             "-t", str(a.threads)], {})
    res = B.header("blocks")
    peer_desc = open(os.path.join(PR_PEER, "VERSION")).read().strip() if "peer" in runtimes else None
    res.update({"model": a.name, "file": os.path.basename(a.model), "file_bytes": os.path.getsize(a.model),
                "dense_model": a.dense_name, "dense_file_bytes": os.path.getsize(a.dense),
                "prompt": a.prompt, "prompt_tokens": n_prompt, "generated_tokens": a.gen, "canvas": canvas,
                "steps": a.steps, "block": a.block, "threads": a.threads, "rounds": a.rounds,
                "pr_peer": peer_desc and f"llama.cpp PR #17454 branch ({peer_desc}), built by tools/build-peer.sh",
                "commands": {k: "".join(f"{e}={v} " for e, v in env.items()) + B.cmdline(argv)
                             for k, (argv, env) in runtimes.items()},
                "runs": []})

    def measure(who, t):
        return B.measure_peer(t) if who == "peer" else B.measure_unmask(t)
    res["page_cache_warm_s"] = B.warm_page_cache(a.model) + B.warm_page_cache(a.dense)
    res["runs"] = B.run_rounds(runtimes, a.rounds, measure, f"blocks {a.name} t{a.threads}")
    med = {}
    for who in runtimes:
        rs = [x for x in res["runs"] if x["runtime"] == who]
        med[who] = {k: B.median(x[k] for x in rs) for k in ("ms_per_step", "generate_ms", "load_s", "peak_rss_kb")}
        med[who]["tokens_per_s"] = a.gen / (med[who]["generate_ms"] / 1000)
        for k in ("cache_bytes", "rows_computed", "steps_run", "partial_step_ms", "refresh_step_ms"):
            if any(k in x for x in rs):
                med[who][k] = B.median(x[k] for x in rs if k in x)
    if "peer" in med:
        med["peer"]["steps_run"] = peer_steps
    res["median"] = med
    tps = {who: med[who]["tokens_per_s"] for who in med}
    res["ratio_tokens_per_s"] = {
        "llada2_over_dense": tps["llada2"] / tps["dense"],
        "cache_over_nocache": tps["llada2"] / tps["llada2-nocache"],
    }
    if "peer" in med:
        res["ratio_tokens_per_s"]["llada2_over_peer"] = tps["llada2"] / tps["peer"]
        # like for like: a full pass of each runtime (unmask without its cache)
        res["ratio_ms_per_step"] = {"nocache_over_peer": med["llada2-nocache"]["ms_per_step"] / med["peer"]["ms_per_step"]}
    B.finish(res, f"blocks-{a.name}-t{a.threads}.json", ("median", "ratio_tokens_per_s"))


if __name__ == "__main__":
    main()
