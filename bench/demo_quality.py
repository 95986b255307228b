"""demo_quality.py: what fast decoding costs on the bundled demo model (docs/decoding.md).

    python3 bench/demo_quality.py [--jobs 2] [--out NAME]

The demo model has no right answers, so quality is measured two ways against exact decoding
(`--cache none`, one token per step, block 32, greedy): token agreement (the share of the 64
generated positions holding the same token as the exact run on the same prompt) and the
share of generated words found in the wamerican word list (/usr/share/dict/american-english;
exact decoding is the baseline figure). Prompts: the openings of the 12 held-out paragraphs
of the training corpus (`unmask-train prompts`, data/corpus), the same as docs/model.md uses.
Cost: forward passes and rows computed per generation (a cached pass computes fewer rows).
Writes bench/results/NAME (default demo-quality.json).
"""
import concurrent.futures
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402

DICT = "/usr/share/dict/american-english"
CORPUS = ["data/corpus/grimms_fairy_tales.txt", "data/corpus/little_women.txt", "data/corpus/tiny_shakespeare.txt"]
BASE = ["--no-chat", "--gen", "64", "--block", "32", "--temp", "0", "-t", "1"]
METHODS = [
    ("exact", "exact: one token per step", ["--steps", "64"]),
    ("half-steps", "fixed: two tokens per step (--steps 32)", ["--steps", "32"]),
    ("exact-entropy", "fixed: entropy order, one token per step", ["--steps", "64", "--alg", "entropy"]),
    ("threshold-0.9", "parallel: --threshold 0.9", ["--threshold", "0.9"]),
    ("threshold-0.5", "parallel: --threshold 0.5", ["--threshold", "0.5"]),
    ("threshold-0.2", "parallel: --threshold 0.2", ["--threshold", "0.2"]),
    ("factor-1", "parallel: --factor 1", ["--factor", "1"]),
    ("factor-4", "parallel: --factor 4", ["--factor", "4"]),
    ("eb-0.01", "parallel: --eb-gamma 0.01", ["--eb-gamma", "0.01"]),
    ("eb-1", "parallel: --eb-gamma 1", ["--eb-gamma", "1"]),
    ("eb-4", "parallel: --eb-gamma 4", ["--eb-gamma", "4"]),
    ("prefix", "cache: --cache prefix", ["--steps", "64", "--cache", "prefix"]),
    ("dual", "cache: --cache dual", ["--steps", "64", "--cache", "dual"]),
    ("dual-q8", "cache: --cache dual --cache-type q8_0", ["--steps", "64", "--cache", "dual", "--cache-type", "q8_0"]),
    ("dual-refresh-8", "cache: --cache dual --cache-refresh 8", ["--steps", "64", "--cache", "dual", "--cache-refresh", "8"]),
    ("dual-drift-0.05", "cache: --cache dual --cache-drift 0.05",
     ["--steps", "64", "--cache", "dual", "--cache-drift", "0.05"]),
    ("dual-threshold-0.5", "both: --cache dual --threshold 0.5", ["--cache", "dual", "--threshold", "0.5"]),
    ("dual-factor-4", "both: --cache dual --factor 4", ["--cache", "dual", "--factor", "4"]),
    ("dual-eb-0.01", "both: --cache dual --eb-gamma 0.01", ["--cache", "dual", "--eb-gamma", "0.01"]),
    ("dual-threshold-0.9", "both: --cache dual --threshold 0.9 (Fast-dLLM's; --fast on a model without a preset)",
     ["--cache", "dual", "--threshold", "0.9"]),
    ("dual-drift-eb-0.01", "both: --eb-gamma 0.01 --cache dual --cache-drift 0.05 (--fast until this table)",
     ["--eb-gamma", "0.01", "--cache", "dual", "--cache-drift", "0.05"]),
]


def dict_share(text):
    """(words, of them in the dictionary): tools/dict-share.sh, the definition the demo test and
    tools/train/eval.sh use too."""
    out = subprocess.run([os.path.join(benchlib.ROOT, "tools", "dict-share.sh"), DICT], input=text,
                         capture_output=True, text=True, check=True).stdout.split()
    return int(out[0]), int(out[1])


def generate(prompt, flags):
    argv = [benchlib.UNMASK, "generate", "-p", prompt, "--json"] + BASE + flags
    p = subprocess.run(argv, capture_output=True, text=True, cwd=benchlib.ROOT)
    if p.returncode != 0:
        raise SystemExit(f"demo_quality: {benchlib.cmdline(argv)} failed: {p.stderr.strip()[-300:]}")
    return json.loads(p.stdout)


def main():
    a = sys.argv[1:]
    jobs = int(a[a.index("--jobs") + 1]) if "--jobs" in a else 2
    name = a[a.index("--out") + 1] if "--out" in a else "demo-quality.json"
    train = os.path.join(benchlib.ROOT, "build", "release", "unmask-train")
    if not os.path.exists(train):
        subprocess.run(["make", "--no-print-directory", "trainer"], cwd=benchlib.ROOT, check=True)
    prompts = subprocess.run([train, "prompts"] + CORPUS, capture_output=True, text=True, check=True,
                             cwd=benchlib.ROOT).stdout.splitlines()
    if not os.path.exists(DICT):
        raise SystemExit(f"demo_quality: {DICT} missing (apt-get install wamerican)")
    res = benchlib.header("demo-quality")
    res["versions"].pop("peer", None)
    res["versions"].pop("peer_cmake_options", None)
    res.update({"model": "models/unmask-demo.gguf", "prompts": len(prompts), "base_flags": " ".join(BASE),
                "dictionary": DICT})
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as ex:
        runs = {m[0]: [ex.submit(generate, p, m[2]) for p in prompts] for m in METHODS}
        out = {k: [f.result() for f in v] for k, v in runs.items()}
    exact = out["exact"]
    res["results"] = {}
    for mid, label, flags in METHODS:
        agree = total = found = nwords = passes = rows = 0
        cache_bytes = 0
        for ref, r in zip(exact, out[mid]):
            n = int(r["n_prompt"])
            gen, gref = r["tokens"][n:], ref["tokens"][n:]
            agree += sum(1 for x, y in zip(gen, gref) if x == y)
            total += len(gref)
            nw, nf = dict_share(r["answer"])
            nwords += nw
            found += nf
            passes += int(r["forward_passes"])
            rows += int(r["rows_computed"])
            cache_bytes = max(cache_bytes, int(r["cache_bytes"]))
        k = len(prompts)
        res["results"][mid] = {"label": label, "flags": " ".join(flags), "agreement": agree / total,
                               "dictionary_share": found / max(1, nwords), "words": nwords,
                               "forward_passes": passes / k, "rows_computed": rows / k, "cache_bytes": cache_bytes}
        print(f"{mid}: agreement {100 * agree / total:.1f}%, words {100 * found / max(1, nwords):.1f}%, "
              f"{passes / k:.1f} passes, {rows / k:.0f} rows", file=sys.stderr)
    print(os.path.relpath(benchlib.write(name, res), benchlib.ROOT))


if __name__ == "__main__":
    main()
