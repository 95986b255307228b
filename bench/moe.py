#!/usr/bin/env python3
"""moe.py MOE.gguf MOE_NAME DENSE.gguf DENSE_NAME [--threads N] [--rounds R]: mixture of experts
beside the dense model, one forward pass each against llama.cpp.

For each file, bench/forward.py's measurement (the generation canvas, every row's logits, llama.cpp
and unmask alternating for R rounds), then one `unmask logits --profile` run: the share of the pass
in the experts' grouped products (gate/up and down), the routing, and the rest. Issue 19's gate: an
MoE pass <= 0.3x llama.cpp's on the LLaDA-MoE-7B shape (the issue measured 0.53x on a Zen 5, dense
0.33x). Writes bench/results/moe-tN.json (the two forward results inside, not as forward-*.json).
"""
import argparse
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as B  # noqa: E402

TARGET_MOE = 0.3


def profile(model, threads, gen, prompt):
    canvas = B.tokenize(model, prompt) + [B.mask_id(model)] * gen
    out = subprocess.run([B.UNMASK, "logits", "-m", model, "--tokens", ",".join(map(str, canvas)), "-t", str(threads),
                          "--reps", "3", "--profile"], capture_output=True, text=True, check=True).stdout
    d = json.loads(out.strip().splitlines()[-1])
    return {"forward_ms": d["forward_ms_median"], "macs": d["profile"]["macs"], "parts_ms": d["profile"]["parts_ms"]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("moe")
    ap.add_argument("moe_name")
    ap.add_argument("dense")
    ap.add_argument("dense_name")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--gen", type=int, default=128)
    a = ap.parse_args()
    os.makedirs(B.WORK, exist_ok=True)
    res = B.header("moe")
    res.update({"threads": a.threads, "rounds": a.rounds, "target_moe_ratio": TARGET_MOE,
                "issue_zen5": {"moe_ms": 1350, "moe_peer_ms": 2565, "moe_ratio": 0.53, "dense_ratio": 0.33},
                "models": {}})
    for role, path, name in (("moe", a.moe, a.moe_name), ("dense", a.dense, a.dense_name)):
        tmp = os.path.join(B.WORK, f"moe-forward-{name}.json")
        subprocess.run([sys.executable, os.path.join(B.ROOT, "bench", "forward.py"), path, name, "--threads",
                        str(a.threads), "--rounds", str(a.rounds), "--gen", str(a.gen), "--out", tmp], check=True)
        fw = json.load(open(tmp))
        fw.pop("canvas_ids", None)
        fw["profile"] = profile(path, a.threads, a.gen, B.PROMPT)
        fw["role"] = role
        res["models"][name] = fw
    ratio = {name: d["ratio"]["unmask"] for name, d in res["models"].items()}
    res["ratio"] = ratio
    res["moe_met"] = ratio[a.moe_name] <= TARGET_MOE
    B.finish(res, f"moe-t{a.threads}.json", ("ratio", "moe_met"))


if __name__ == "__main__":
    main()
