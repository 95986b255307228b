#!/usr/bin/env python3
"""forward.py MODEL.gguf NAME [--threads N] [--rounds R] [--passes P]: model compute alone.

One forward pass over the canvas of bench/e2e.py (benchlib.PROMPT tokenized, then 128 mask
tokens), logits for every row, in both runtimes:
  llama.cpp: build/bench/peer_logits (llama.h, one non-causal batch; AMX off)
  unmask:    unmask logits --reps P
each process loads the file and runs P passes; R rounds alternate the order of the runtimes.
Where unmask's own choice of kernel is not avx512 (an AMX machine), a third runtime,
UNMASK_KERNEL=avx512, is measured as well. Writes bench/results/forward-NAME-tN.json (or --out).
"""
import argparse
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as B  # noqa: E402


def build_peer_logits():
    exe = os.path.join(B.WORK, "peer_logits" if os.path.basename(B.PEER) == "peer" else f"peer_logits-{os.path.basename(B.PEER)}")
    src = os.path.join(B.ROOT, "bench", "peer_logits.c")
    if not os.path.exists(exe) or os.path.getmtime(exe) < os.path.getmtime(src):
        lib = os.path.join(B.PEER, "lib")
        subprocess.run(["cc", "-O2", "-o", exe, src, "-I" + os.path.join(B.PEER, "include"), "-L" + lib,
                        "-lllama", "-lggml", "-lggml-base", "-Wl,-rpath," + lib], check=True)
    return exe


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("name")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--passes", type=int, default=0,
                    help="passes per process (default: 2 for files over 100 MB, else 20: a small model's pass "
                         "takes milliseconds, and its first passes are noisy)")
    ap.add_argument("--gen", type=int, default=128)
    ap.add_argument("--prompt", default=B.PROMPT)
    ap.add_argument("--out", default="", help="result file name under bench/results/ (default forward-NAME-tN.json)")
    ap.add_argument("--peer-dir", default="", help="another llama.cpp build (tools/build-peer.sh SRC NAME: build/NAME) "
                    "instead of build/peer, e.g. build/peer-llada2 for llama.cpp PR #17454's llada2")
    a = ap.parse_args()
    if a.peer_dir:
        B.PEER = os.path.abspath(a.peer_dir)
    os.makedirs(B.WORK, exist_ok=True)
    if a.passes <= 0:
        a.passes = 2 if os.path.getsize(a.model) > 100e6 else 20
    peer = build_peer_logits()
    prompt_ids = B.tokenize(a.model, a.prompt)
    canvas = prompt_ids + [B.mask_id(a.model)] * a.gen
    toks = ",".join(map(str, canvas))
    best = B.unmask_best_kernel()
    runtimes = {
        "peer": ([peer, a.model, "--tokens", toks, "-t", str(a.threads), "--reps", str(a.passes)], {}),
        "unmask": ([B.UNMASK, "logits", "-m", a.model, "--tokens", toks, "-t", str(a.threads),
                    "--reps", str(a.passes)], {}),
    }
    if B.second_kernel(best):
        runtimes["unmask-avx512"] = (runtimes["unmask"][0], {"UNMASK_KERNEL": "avx512"})
    res = B.header("forward")
    res.update({"model": a.name, "file": os.path.basename(a.model), "file_bytes": os.path.getsize(a.model),
                "canvas": {"prompt": a.prompt, "prompt_tokens": len(prompt_ids), "masks": a.gen, "tokens": len(canvas)},
                "threads": a.threads, "rounds": a.rounds, "passes_per_process": a.passes,
                "unmask_kernel": best,
                "commands": {k: ("".join(f"{e}={v} " for e, v in env.items()) +
                                 B.cmdline([x if x != toks else "CANVAS_IDS" for x in argv]))
                             for k, (argv, env) in runtimes.items()},
                "canvas_ids": canvas, "runs": []})
    names = list(runtimes)

    def measure(who, t):
        j = json.loads(t["stdout"].strip().splitlines()[-1])
        return {"forward_ms": j["forward_ms"], "load_s": j["load_s"], "prepare_s": j.get("prepare_s", 0.0),
                "kernel": j.get("kernel")}
    res["page_cache_warm_s"] = B.warm_page_cache(a.model)
    res["runs"] = B.run_rounds(runtimes, a.rounds, measure, f"forward {a.name} t{a.threads}")
    med = {}
    for who in names:
        rs = [x for x in res["runs"] if x["runtime"] == who]
        med[who] = {"forward_ms": B.median(ms for x in rs for ms in x["forward_ms"]),
                    "peak_rss_kb": B.median(x["peak_rss_kb"] for x in rs),
                    "load_s": B.median(x["load_s"] + x["prepare_s"] for x in rs)}
    res["median"] = med
    res["ratio"] = {who: med[who]["forward_ms"] / med["peer"]["forward_ms"] for who in names if who != "peer"}
    B.finish(res, a.out or f"forward-{a.name}-t{a.threads}.json", ("median", "ratio"))


if __name__ == "__main__":
    main()
