"""render_fast.py: the sudoku yardstick and the cost of fast decoding as Markdown tables, from
bench/results/sudoku-eval.json (bench/sudoku_eval.py) and bench/results/demo-quality.json
(bench/demo_quality.py), for tools/render-readme.py: tables "sudoku-yardstick" (README.md,
docs/sudoku.md), "sudoku-methods" and "demo-quality" (README.md, docs/decoding.md).
bench/plot_quality.sh draws the same numbers as docs/fast-decoding.png."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import COMMITTED, load_json  # noqa: E402

RES = COMMITTED   # tests point it elsewhere


def _load(name):
    return load_json(RES, name)

SUDOKU_ROWS = 163   # the previous model's full pass ([BOS] + 81 + 81), when a result file lacks the exact run


def _pct(r):
    return f"{100 * r['correct'] / r['total']:.1f}%"


def _machine(d):
    models = sorted({r["model"] for r in d["results"].values() if r.get("model")})
    return (f"{d['machine']['cpu']}, {d['date'][:10]}, commit {d['versions']['commit']}"
            + (f"; model {', '.join(models)}" if models else "")
            + ("; an unfinished run: only the configurations it measured" if d.get("complete") is False else ""))


def render_sudoku_yardstick():
    d = _load("sudoku-eval.json")
    if not d:
        return "_no results yet: run `python3 bench/sudoku_eval.py`_"
    res = d["results"]
    algs = ["confidence", "margin", "entropy", "random"]
    out = [f"{d['n']:,} held-out test puzzles per difficulty (sudoku-gen's test split, never trained on), "
           f"the bundled model `-M sudoku`, greedy; {_machine(d)}. Puzzles solved (every cell right) with each "
           "ordering, one cell per step (81 forward passes), and with `--threshold T` (every cell above "
           "T commits at once, at least one per step; confidence order): solved, forward passes per puzzle, "
           "cells per pass (of the 81 answer cells, givens included).", "",
           "| difficulty | confidence | margin | entropy | random | `--threshold 0.9` | `--threshold 0.999` |",
           "|---|---:|---:|---:|---:|---:|---:|"]
    for diff in ["easy", "medium", "hard"]:
        cells = [_pct(res[f"{diff}-{a}"]) if f"{diff}-{a}" in res else "—" for a in algs]
        for th in ("0.9", "0.999"):
            t = res.get(f"{diff}-threshold-{th}")
            cells.append(f"{_pct(t)} in {t['forward_passes'] / t['total']:.1f} passes "
                         f"({t['generated_tokens'] / t['forward_passes']:.1f} cells/pass)" if t else "—")
        out.append(f"| {diff} | " + " | ".join(cells) + " |")
    return "\n".join(out)


def pareto(points):
    """Indices of the points (quality, cost) no other point beats: another point dominates one
    when its quality is at least as high and its cost at most as high, one of them strictly."""
    front = []
    for i, (q, c) in enumerate(points):
        if not any((q2 >= q and c2 <= c) and (q2 > q or c2 < c) for j, (q2, c2) in enumerate(points) if j != i):
            front.append(i)
    return front


def _full_pass_rows(res):
    """Rows of one full pass: what the exact run (no cache: every pass is full) computed per pass."""
    ex = res.get("easy-confidence")
    if ex and ex.get("forward_passes"):
        return ex["rows_computed"] / ex["forward_passes"]
    return SUDOKU_ROWS


def render_sudoku_methods():
    d = _load("sudoku-eval.json")
    if not d:
        return "_no results yet: run `python3 bench/sudoku_eval.py`_"
    res, cfg = d["results"], d["configs"]
    exact = res.get("easy-confidence")
    full = _full_pass_rows(res)
    out = [f"{d['n']:,} held-out easy puzzles, the same for every row; {_machine(d)}. Cost per puzzle: forward "
           f"passes, and rows computed in units of a full pass ({full:.0f} rows: a cached pass computes only "
           "some rows). Both solved: of the puzzles exact decoding solves, the share this method solves too. "
           "Front: ◆ where no other row solves at least as many puzzles with at most as many forward passes "
           "(one of the two strictly): the Pareto front of solve rate against forward passes.", "",
           "| method | flags | solved | forward passes | full-pass equivalents | cells per pass | both solved | front |",
           "|---|---|---:|---:|---:|---:|---:|:---:|"]
    ids = ["easy-confidence", "easy-threshold-0.9", "easy-threshold-0.999"] + [k for k, c in cfg.items() if c["group"] == "methods"]
    ids = [k for k in ids if res.get(k)]
    front = set(ids[i] for i in pareto([(res[k]["correct"] / res[k]["total"], res[k]["forward_passes"] / res[k]["total"])
                                        for k in ids]))
    for k in ids:
        r = res[k]
        label = ("exact: one cell per step" if k == "easy-confidence" else
                 "parallel" if cfg[k]["group"] == "yardstick" else cfg[k]["label"].split(":")[0])
        flags = " ".join(cfg[k]["flags"]) if k != "easy-confidence" else "--alg confidence"
        both = "—"
        if exact and k != "easy-confidence":
            ex = [i for i, c in enumerate(exact["solved"]) if c == "1"]
            both = f"{100 * sum(r['solved'][i] == '1' for i in ex) / max(1, len(ex)):.1f}%"
        n = r["total"]
        out.append(f"| {label} | `{flags}` | {_pct(r)} | {r['forward_passes'] / n:.1f} | "
                   f"{r['rows_computed'] / n / full:.1f} | {r['generated_tokens'] / r['forward_passes']:.2f} | {both} | "
                   f"{'◆' if k in front else ''} |")
    return "\n".join(out)


def render_demo_quality():
    d = _load("demo-quality.json")
    if not d:
        return "_no results yet: run `python3 bench/demo_quality.py`_"
    res = d["results"]
    full = res["exact"]["rows_computed"] / res["exact"]["forward_passes"]
    out = [f"The bundled demo model, {d['prompts']} held-out prompts, `{d['base_flags']}`; {_machine(d)}. "
           "Agreement: generated positions holding the same token as exact decoding (one token per step, "
           "confidence order, no cache); words: generated words found in the wamerican list. Cost per "
           f"generation: forward passes and full-pass equivalents (rows computed ÷ {full:.0f}, the rows of "
           "a full pass).", "",
           "| method | flags | agreement | words | forward passes | full-pass equivalents | cache |",
           "|---|---|---:|---:|---:|---:|---:|"]
    for k, r in res.items():
        cache = f"{r['cache_bytes'] / 1024:.0f} KiB" if r["cache_bytes"] else "—"
        out.append(f"| {r['label'].split(':')[0]} | `{r['flags']}` | {100 * r['agreement']:.1f}% | "
                   f"{100 * r['dictionary_share']:.1f}% | {r['forward_passes']:.1f} | {r['rows_computed'] / full:.1f} | {cache} |")
    return "\n".join(out)


RENDERERS = {
    "sudoku-yardstick": render_sudoku_yardstick,
    "sudoku-methods": render_sudoku_methods,
    "demo-quality": render_demo_quality,
}
