"""sudoku_order.py: which cells the sudoku model commits first, and why, from its own
confidences (docs/sudoku.md, "Which cells commit first").

    python3 bench/sudoku_order.py [--n 100] [--difficulty easy|medium|hard] [--preset sudoku]
                                  [--threshold T] [--out NAME]

(docs/sudoku.md renders two runs: the default one, sudoku-order.json, and
`--difficulty hard --threshold 0.9 --out sudoku-order-parallel.json`.)

Solves N held-out test puzzles (sudoku-gen's test split, the puzzles `unmask eval --sudoku`
draws) with `unmask generate -M PRESET --stream-json` (one cell per step in confidence order,
or with --threshold T every cell above T at once) and classifies every committed cell by the
state of the grid just before its step (the givens and the model's own earlier digits, right
or wrong):

  given         the cell is a given of the puzzle (the model copies it)
  naked single  exactly one digit fits the cell's row, column and box
  hidden single not a naked single, but the committed digit has no other place in one of
                the cell's row, column or box
  open          neither: more than one digit fits and none is forced (a decision the grid
                state does not force; it may still follow from longer chains of logic)
  clash         the committed digit already stands in the cell's row, column or box
  same-pass clash  (parallel decoding) not a clash with the grid before the step, but another
                cell committed in the same forward pass puts the same digit in one of its
                units: each looked safe alone, the two together cannot both be right

and reports per class: how many, the mean step (as a fraction of the run) at which they
commit, the mean confidence the model gave them, and how many were right. Writes
bench/results/NAME (sudoku-order.json); tools/render-readme.py renders it into docs/sudoku.md.
"""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402

CLASSES = ["given", "naked single", "hidden single", "open", "clash", "same-pass clash"]


def units_of(c):
    r, k = divmod(c, 9)
    b0 = (r // 3) * 27 + (k // 3) * 3
    return {"row": [r * 9 + j for j in range(9)], "column": [j * 9 + k for j in range(9)],
            "box": [b0 + i * 9 + j for i in range(3) for j in range(3)]}


def candidates(grid, c):
    seen = {grid[p] for u in units_of(c).values() for p in u if p != c and grid[p]}
    return {d for d in range(1, 10) if d not in seen}


def classify(grid, puzzle, c, d):
    """grid: 81 ints (0 empty) before the commit; puzzle: the prompt's 81 characters."""
    if puzzle[c] != ".":
        return "given"
    cand = candidates(grid, c)
    if d not in cand:
        return "clash"
    if len(cand) == 1:
        return "naked single"
    for u in units_of(c).values():
        if all(p == c or grid[p] or d not in candidates(grid, p) for p in u):
            return "hidden single"
    return "open"


def classify_pass(grid, puzzle, digits):
    """The class of every cell of one forward pass: digits = {cell: digit committed (0: not a
    digit)}, grid = the 81 cells before the pass. A cell the grid alone allows is a same-pass
    clash when another cell of the same pass puts the same digit in one of its units."""
    out = {}
    for cell, d in digits.items():
        k = classify(grid, puzzle, cell, d) if d else "clash"
        if k not in ("given", "clash") and any(digits.get(p) == d for u in units_of(cell).values()
                                               for p in u if p != cell):
            k = "same-pass clash"
        out[cell] = k
    return out


def run_one(preset, puzzle, threshold):
    argv = [benchlib.UNMASK, "generate", "-M", preset, "-p", puzzle, "-t", "1", "--stream-json"]
    if threshold:
        argv += ["--threshold", str(threshold)]
    out = subprocess.run(argv, capture_output=True, text=True, check=True).stdout
    events = [json.loads(line) for line in out.splitlines() if line.strip()]
    start = events[0]
    n_prompt = start["n_prompt"]
    steps = [e for e in events if e["type"] == "step"]
    return n_prompt, steps


def main():
    args = sys.argv[1:]
    def opt(name, default):
        return args[args.index(name) + 1] if name in args else default
    n = int(opt("--n", "100"))
    diff = opt("--difficulty", "easy")
    preset = opt("--preset", "sudoku")
    threshold = float(opt("--threshold", "0")) or None
    name = opt("--out", "sudoku-order.json")
    gen = os.path.join(benchlib.ROOT, "build", "release", "sudoku-gen")
    tasks = os.path.join(benchlib.WORK, f"order-{diff}-{n}.jsonl")
    os.makedirs(benchlib.WORK, exist_ok=True)
    subprocess.run([gen, "--split", "test", "--difficulty", diff, "--n", str(n), "--out", tasks], check=True,
                   capture_output=True)
    items = [json.loads(line) for line in open(tasks) if line.strip()]
    stats = {k: {"cells": 0, "right": 0, "conf_sum": 0.0, "when_sum": 0.0} for k in CLASSES}
    solved, passes = 0, 0
    for it in items:
        puzzle, answer = it["prompt"], it["answer"]
        n_prompt, steps = run_one(preset, puzzle, threshold)
        grid = [0] * 81
        for s in steps:
            commits = [(c["pos"] - n_prompt, c) for c in s.get("commits", []) if 0 <= c["pos"] - n_prompt < 81]
            digit = {cell: (int(c["text"]) if c["text"].isdigit() else 0) for cell, c in commits}
            kinds = classify_pass(grid, puzzle, digit)
            for cell, c in commits:
                d = digit[cell]
                st = stats[kinds[cell]]
                st["cells"] += 1
                st["right"] += str(d) == answer[cell]
                st["conf_sum"] += c["conf"]
                st["when_sum"] += (s["step"] - 1) / max(1, len(steps))
            for cell, c in commits:
                grid[cell] = int(c["text"]) if c["text"].isdigit() else 0
        solved += "".join(str(v) for v in grid) == answer
        passes += steps[-1]["forward_passes"] if steps else 0
    res = benchlib.header("sudoku-order")
    res["versions"].pop("peer", None)
    res["versions"].pop("peer_cmake_options", None)
    res["n"], res["difficulty"], res["preset"], res["threshold"] = len(items), diff, preset, threshold
    res["command"] = (f"unmask generate -M {preset} -p PUZZLE -t 1 --stream-json"
                      + (f" --threshold {threshold}" if threshold else ""))
    res["solved"], res["forward_passes"] = solved, passes
    res["classes"] = {k: {"cells": v["cells"], "right": v["right"],
                          "mean_conf": v["conf_sum"] / v["cells"] if v["cells"] else None,
                          "mean_when": v["when_sum"] / v["cells"] if v["cells"] else None}
                      for k, v in stats.items()}
    path = benchlib.write(name, res)
    print(os.path.relpath(path, benchlib.ROOT))


if __name__ == "__main__":
    main()
