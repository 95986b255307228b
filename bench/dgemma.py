#!/usr/bin/env python3
"""dgemma.py MODEL.gguf NAME [--threads 2] [--rounds 3] [--lo 2] [--hi 6] [--prompt-tokens 32] [--no-bf16]:
uniform-state decoding of a DiffusionGemma file side by side with llama.cpp's port (issue 28
point 6).

The peer is the DiffusionGemma port of llama.cpp PR #24423 as unslothai/llama.cpp carries it at
refs/pins/c3fb97241295c196e09b783e705e84b96cd1bd74, built by tools/build-peer.sh into
build/peer-dgemma (CI cannot fetch it: the result file says where it came from). Both runtimes
get the same file, threads, prompt and one canvas of the
file's canvas_length, the prompt's K/V cached once (unmask's default; the peer's
--diffusion-kv-cache on), the same entropy-bound sampler settings except that the stop rule
is switched off (stability threshold never reached, confidence 0) so that every run takes
exactly the steps asked for. The port's CLI always applies a chat template (the file's, else
llama.cpp's ChatML fallback; it has no flag to turn it off) and the synthetic file has none, so
unmask is given --chat-template chatml: the same text, "<|im_start|>user\nPROMPT<|im_end|>\n
<|im_start|>assistant\n", tokenized by both (those markers are plain text in this vocabulary).

The port's CLI prints no timing for this sampler, so time per step is measured the same way
for both, from wall time: each round runs every runtime with `lo` and with `hi` steps (one
process each: load, prompt K/V, the steps, exit), and time per step = (wall(hi) - wall(lo)) /
(hi - lo): loading, the prompt's K/V and the exit cancel. Rounds alternate the order (A B,
then B A). unmask's own per-step timer (--json) is kept beside it as a check. Peak RSS from
/usr/bin/time, against the file size plus unmask's reported caches. Unless --no-bf16, unmask
also runs with --self-cond-product bf16 (the self-conditioning product from BF16 values, an
option beside the default float product) in the same rounds: "unmask_bf16".
Writes bench/results/dgemma-NAME-tN.json.
"""
import argparse
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as B  # noqa: E402

PEER_DIR = os.path.join(B.ROOT, "build", "peer-dgemma")
WORDS = ("the quick brown fox jumps over the lazy dog while a small bird sings in the old tree "
         "near the river and the children play games on the green grass under the warm sun").split()


def chatml(text):
    return f"<|im_start|>user\n{text}<|im_end|>\n<|im_start|>assistant\n"


def prompt_of(model, n):
    """User text whose ChatML prompt is at most n tokens with the file's tokenizer (BOS included)."""
    words, best = [], ""
    for w in WORDS * 4:
        words.append(w)
        text = " ".join(words)
        if len(B.tokenize(model, chatml(text))) > n:
            break
        best = text
    return best


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("name")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--lo", type=int, default=2)
    ap.add_argument("--hi", type=int, default=6)
    ap.add_argument("--prompt-tokens", type=int, default=32)
    ap.add_argument("--canvas", type=int, default=256)
    ap.add_argument("--no-bf16", action="store_true", help="leave out the --self-cond-product bf16 runs")
    a = ap.parse_args()
    cli = os.path.join(PEER_DIR, "bin", "llama-diffusion-cli")
    if not os.path.exists(cli):
        sys.exit(f"dgemma: no peer at {os.path.relpath(cli, B.ROOT)}: build the port first "
                 "(tools/check-peer-dgemma.sh SRC, SRC a clone of unslothai/llama.cpp at refs/pins/c3fb9724)")
    os.makedirs(B.WORK, exist_ok=True)
    prompt = prompt_of(a.model, a.prompt_tokens)
    n_prompt = len(B.tokenize(a.model, chatml(prompt)))
    ctx = n_prompt + a.canvas + 8
    eb = ["--diffusion-eb-stability", "100000", "--diffusion-eb-confidence", "0"]
    runtimes = {}
    for steps in (a.lo, a.hi):
        runtimes[f"peer-{steps}"] = ([cli, "-m", a.model, "-p", prompt, "-n", str(a.canvas),
                                      "-c", str(ctx), "-b", str(ctx), "-ub", str(ctx), "-t", str(a.threads),
                                      "--diffusion-kv-cache", "on", "--diffusion-eb-max-steps", str(steps)] + eb, {})
        um = [B.UNMASK, "generate", "-m", a.model, "--chat-template", "chatml", "-p", prompt,
              "--gen", str(a.canvas), "--steps", str(steps), "--stability", "100000",
              "--confidence", "0", "-t", str(a.threads), "--json", "-q"]
        runtimes[f"unmask-{steps}"] = (um, {})
        if not a.no_bf16:
            runtimes[f"unmask_bf16-{steps}"] = (um + ["--self-cond-product", "bf16"], {})

    def measure(who, t):
        r = {"steps": int(who.rsplit("-", 1)[1])}
        if who.startswith("peer"):
            # its progress line counts steps from 0 ("diffusion step: 4/5" is the fifth of five); its
            # log thread may drop the last lines at exit, so this is a floor, kept for the record: with
            # confidence 0 its stop rule cannot fire (mean entropy < 0), so it runs every step asked for
            seen = re.findall(r"diffusion step: (\d+)/(\d+)", t["stderr"])
            r["steps_seen"] = int(seen[-1][0]) + 1 if seen else None
        if who.startswith("unmask"):
            d = json.loads(t["stdout"])
            s = d["steps"]
            r.update({"own_ms_per_step": 1000 * d["generate_s"] / max(1, len(s)), "steps_run": len(s),
                      "n_prompt": d["n_prompt"],
                      "kernel": d["kernel"], "cache_bytes": int(d.get("cache_bytes", 0))})
        return r

    # the file (16.8 GB) and the peer's 23.8 GB do not fit the 24 GB machine together: after a peer
    # run the file is partly out of the page cache, and a run's load then reads it from disk. That
    # load is not a step, but the lo- and hi-step runs pay it unequally, which went straight into
    # the per-step difference (2026-12-06: unmask's own step timing 5.6-7.6 s where the wall
    # difference said 5.3-9.2 s). Every run, of either runtime, now starts with the file cached.
    runs = B.run_rounds(runtimes, a.rounds, measure, "dgemma",
                        before=lambda: {"warm_page_cache_s": round(B.warm_page_cache(a.model), 2)})
    res = B.header("dgemma")
    res["versions"]["peer"] = open(os.path.join(PEER_DIR, "VERSION")).read().strip() \
        if os.path.exists(os.path.join(PEER_DIR, "VERSION")) else "build/peer-dgemma"
    res.update({"model": a.name, "file_bytes": os.path.getsize(a.model), "threads": a.threads, "rounds": a.rounds,
                "steps": [a.lo, a.hi], "prompt": prompt, "prompt_tokens": n_prompt, "canvas": a.canvas,
                "method": "time per step = (wall(hi steps) - wall(lo steps)) / (hi - lo), per round; medians",
                "runs": runs})
    whos = ["peer", "unmask"] + ([] if a.no_bf16 else ["unmask_bf16"])
    per = {w: [] for w in whos}
    rss = {w: [] for w in whos}
    for r in range(1, a.rounds + 1):
        for who in per:
            lo = next(x for x in runs if x["round"] == r and x["runtime"] == f"{who}-{a.lo}")
            hi = next(x for x in runs if x["round"] == r and x["runtime"] == f"{who}-{a.hi}")
            per[who].append(1000 * (hi["wall_s"] - lo["wall_s"]) / (a.hi - a.lo))
            rss[who].append(hi["peak_rss_kb"])
    short = [f"{x['runtime']} ran {x['steps_run']}" for x in runs
             if x["runtime"].startswith("unmask") and x["steps_run"] != x["steps"]]
    if short:
        sys.exit("dgemma: a run did not take the steps asked for: " + ", ".join(short))
    cache = max(x.get("cache_bytes", 0) for x in runs if x["runtime"].startswith("unmask"))
    res["median"] = {w: {"ms_per_step": B.median(per[w]), "peak_rss_kb": B.median(rss[w])} for w in per}
    for w in whos[1:]:
        res["median"][w]["own_ms_per_step"] = B.median([x["own_ms_per_step"] for x in runs if x["runtime"] == f"{w}-{a.hi}"])
    res["per_round_ms_per_step"] = per
    res["ratio"] = {w: res["median"][w]["ms_per_step"] / res["median"]["peer"]["ms_per_step"] for w in whos[1:]}
    res["unmask_cache_bytes"] = cache
    res["rss_vs_file_plus_cache"] = res["median"]["unmask"]["peak_rss_kb"] * 1024 / (res["file_bytes"] + cache)
    B.finish(res, f"dgemma-{a.name}-t{a.threads}.json", ["ratio", "rss_vs_file_plus_cache"])


if __name__ == "__main__":
    main()
