"""sudoku_eval.py: the sudoku yardstick (docs/sudoku.md) and what fast decoding costs on it
(docs/decoding.md), measured with `unmask eval` on held-out test puzzles.

    python3 bench/sudoku_eval.py [--n 1000] [--jobs 2] [--group yardstick|methods|uniform] [--only ID...]
                                 [--model PRESET_OR_FILE] [--out NAME] [--resume]

Every configuration runs `unmask eval -M sudoku --sudoku N --difficulty D --json -t 1 FLAGS`
on the same N puzzles of sudoku-gen's test split (seeds 2^41 + 0 .. N-1: never trained on, and
the trainer's data comes from another seed range), so configurations are paired: the same
puzzle, the same model, only the decoding differs. Two groups:

  yardstick  every difficulty with confidence, margin, entropy and random ordering, one cell
             per step, and with --threshold 0.9 and 0.999 (issues #16 and #29)
  methods    easy puzzles under every fast-decoding method: parallel decoding (threshold,
             factor, EB-sampler), K/V caches (dual, refresh, drift) and combinations; cost is
             forward passes and rows computed (a cached pass computes fewer rows) (#17)
  uniform    the uniform-state model (-M sudoku-uniform, its own sampler and settings) on every
             difficulty; run only when named (--group uniform), written to
             sudoku-eval-uniform.json unless --out says otherwise (docs/sudoku.md, "The
             uniform-state sudoku model")

Configurations run JOBS at a time, one thread each (the machine has 2 cores). Writes
bench/results/NAME (default sudoku-eval.json): per configuration the flags, the counts from
eval's JSON (correct, forward_passes, rows_computed, generated_tokens, seconds) and a string
of 0/1 per puzzle (solved or not), so any two configurations can be compared puzzle by
puzzle. With --only, the other configurations already in the file are kept.

The file is rewritten after every configuration, marked "complete": false until the last one
has run, so a long run that is stopped keeps what it measured; --resume runs only the
configurations the file lacks or measured on another model file (the model's name, shape and
training step, as eval reports it).
"""
import concurrent.futures
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402

ALGS = ["confidence", "margin", "entropy", "random"]


def configs():
    out = []
    for d in ["easy", "medium", "hard"]:
        for a in ALGS:
            out.append({"id": f"{d}-{a}", "group": "yardstick", "difficulty": d, "label": f"{a} order, one cell per step",
                        "flags": ["--alg", a]})
        for t in ("0.9", "0.999"):
            out.append({"id": f"{d}-threshold-{t}", "group": "yardstick", "difficulty": d,
                        "label": f"confidence order, --threshold {t}", "flags": ["--threshold", t]})
    m = [("threshold-0.99", "parallel: --threshold 0.99", ["--threshold", "0.99"]),
         ("threshold-0.7", "parallel: --threshold 0.7", ["--threshold", "0.7"]),
         ("threshold-0.5", "parallel: --threshold 0.5", ["--threshold", "0.5"]),
         ("threshold-0.3", "parallel: --threshold 0.3", ["--threshold", "0.3"]),
         ("factor-1", "parallel: --factor 1", ["--factor", "1"]),
         ("factor-2", "parallel: --factor 2", ["--factor", "2"]),
         ("eb-0.001", "parallel: --eb-gamma 0.001", ["--eb-gamma", "0.001"]),
         ("eb-0.01", "parallel: --eb-gamma 0.01", ["--eb-gamma", "0.01"]),
         ("eb-0.1", "parallel: --eb-gamma 0.1", ["--eb-gamma", "0.1"]),
         ("eb-1", "parallel: --eb-gamma 1", ["--eb-gamma", "1"]),
         ("dual", "cache: --cache dual", ["--cache", "dual"]),
         ("dual-q8", "cache: --cache dual --cache-type q8_0", ["--cache", "dual", "--cache-type", "q8_0"]),
         ("refresh-27", "cache: --cache-refresh 27", ["--cache-refresh", "27"]),
         ("refresh-9", "cache: --cache-refresh 9", ["--cache-refresh", "9"]),
         ("drift-0.05", "cache: --cache dual --cache-drift 0.05", ["--cache", "dual", "--cache-drift", "0.05"]),
         ("dual-threshold-0.999", "both: --cache dual --threshold 0.999", ["--cache", "dual", "--threshold", "0.999"]),
         ("drift-threshold-0.999", "both: --cache dual --cache-drift 0.05 --threshold 0.999",
          ["--cache", "dual", "--cache-drift", "0.05", "--threshold", "0.999"]),
         ("dual-threshold-0.9", "both: --cache dual --threshold 0.9", ["--cache", "dual", "--threshold", "0.9"]),
         ("dual-threshold-0.7", "both: --cache dual --threshold 0.7", ["--cache", "dual", "--threshold", "0.7"]),
         ("refresh-9-threshold-0.7", "both: --cache-refresh 9 --threshold 0.7",
          ["--cache-refresh", "9", "--threshold", "0.7"]),
         ("dual-eb-0.01", "both: --cache dual --eb-gamma 0.01", ["--cache", "dual", "--eb-gamma", "0.01"]),
         ("dual-eb-0.1", "both: --cache dual --eb-gamma 0.1", ["--cache", "dual", "--eb-gamma", "0.1"]),
         ("drift-eb-0.01", "both: --cache dual --cache-drift 0.05 --eb-gamma 0.01",
          ["--cache", "dual", "--cache-drift", "0.05", "--eb-gamma", "0.01"])]
    for i, label, flags in m:
        out.append({"id": "easy-" + i, "group": "methods", "difficulty": "easy", "label": label, "flags": flags})
    for d in ["easy", "medium", "hard"]:
        out.append({"id": f"uniform-{d}", "group": "uniform", "difficulty": d, "model": "sudoku-uniform",
                    "label": "uniform-state model, its entropy-bound sampler", "flags": []})
    return out


def run_one(model, n, c):
    model = c.get("model", model)
    sel = ["-M", model] if "/" not in model and not model.endswith(".gguf") else ["-m", model]
    argv = [benchlib.UNMASK, "eval"] + sel + ["--sudoku", str(n), "--difficulty", c["difficulty"], "--json",
                                               "-t", "1"] + c["flags"]
    p = subprocess.run(argv, capture_output=True, text=True, cwd=benchlib.ROOT)
    if p.returncode != 0:
        raise SystemExit(f"sudoku_eval: {' '.join(argv)} failed: {p.stderr.strip()[-400:]}")
    d = json.loads(p.stdout)
    r = {k: d[k] for k in ("total", "correct", "accuracy", "forward_passes", "rows_computed", "generated_tokens",
                           "seconds")}
    r["solved"] = "".join("1" if it["correct"] else "0" for it in d["items"])
    r["command"] = benchlib.cmdline(argv)
    r["settings"] = d["settings"]
    r["model"] = d["model"]
    return r


def main():
    a = sys.argv[1:]
    if "-h" in a or "--help" in a:
        print(__doc__.strip())
        return

    def opt(name, default):
        return a[a.index(name) + 1] if name in a else default
    n, jobs = int(opt("--n", "1000")), int(opt("--jobs", "2"))
    group = opt("--group", None)
    model = opt("--model", "sudoku")
    name = opt("--out", "sudoku-eval-uniform.json" if group == "uniform" else "sudoku-eval.json")
    only = []
    if "--only" in a:
        for x in a[a.index("--only") + 1:]:
            if x.startswith("--"):
                break
            only.append(x)
    # the uniform group runs only when named: it is another model's file of results
    in_file = [c for c in configs() if (c["group"] == "uniform") == (group == "uniform")]
    todo = [c for c in in_file if (not group or c["group"] == group) and (not only or c["id"] in only)]
    path = os.path.join(benchlib.RESULTS, name)
    old = {}
    if os.path.exists(path) and (only or group or "--resume" in a):
        with open(path) as f:
            old = json.load(f).get("results", {})
    if "--resume" in a:
        # keep only what was measured on the model file this run would measure
        models = {}
        for c in todo:
            m = c.get("model", model)
            if m not in models:
                models[m] = run_one(model, 1, dict(c, difficulty="easy"))["model"]
        keep = {c["id"] for c in todo if c["id"] in old and old[c["id"]].get("model") == models[c.get("model", model)]}
        todo = [c for c in todo if c["id"] not in keep]
        print(f"sudoku_eval: --resume: {len(keep)} configurations kept, {len(todo)} to run", file=sys.stderr)
    res = benchlib.header("sudoku-eval")
    res["versions"].pop("peer", None)
    res["versions"].pop("peer_cmake_options", None)
    res.update({"n": n, "split": "test", "threads_per_run": 1, "parallel_runs": jobs,
                "note": "Each configuration: one `unmask eval` process with one thread; up to JOBS run at once "
                        "on the 2-core machine, so seconds are indicative only (forward passes and rows computed "
                        "are exact counts)."})
    res["configs"] = {c["id"]: {k: c[k] for k in ("group", "difficulty", "label", "flags", "model") if k in c}
                      for c in in_file}
    results = dict(old)
    order = [c["id"] for c in in_file]

    def save(complete):
        res["results"] = {k: results[k] for k in order if k in results}
        res["complete"] = complete
        return benchlib.write(name, res, history=False)
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as ex:
        futs = {ex.submit(run_one, model, n, c): c for c in todo}
        for f in concurrent.futures.as_completed(futs):
            c = futs[f]
            r = f.result()
            results[c["id"]] = r
            print(f"{c['id']}: {r['correct']}/{r['total']} solved, {r['forward_passes'] / r['total']:.1f} passes, "
                  f"{r['rows_computed'] / r['total']:.0f} rows per puzzle, {r['seconds']:.0f} s", file=sys.stderr)
            save(False)
    print(os.path.relpath(save(all(k in results for k in order)), benchlib.ROOT))


if __name__ == "__main__":
    main()
