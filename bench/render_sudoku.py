"""render_sudoku.py: the sudoku model's learning curve (bench/results/sudoku-train.json, written
by bench/sudoku_train.py at the end of `make sudoku-model`) and the recipe's pilot runs
(bench/results/sudoku-train-pilots.json) as Markdown tables,
and where it goes wrong (bench/results/sudoku-errors.json, bench/sudoku_errors.py), for
tools/render-readme.py (tables "sudoku-train", "sudoku-pilots", "sudoku-errors" in docs/sudoku.md),
and the uniform-state model beside the masked one (bench/results/sudoku-eval-uniform.json and
sudoku-eval.json, bench/sudoku_eval.py: table "sudoku-uniform" in docs/sudoku.md, sentence
"sudoku-uniform-summary" in README.md)."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import COMMITTED as RES, load_json  # noqa: E402


def render_sudoku_train():
    d = load_json(RES, "sudoku-train.json")
    if not d:
        return "_no results yet: run `make sudoku-model`_"
    curve = d["curve"]
    # every row where solving was measured, the first and the last row, and about 8 more between
    keep = {0, len(curve) - 1} | {i for i, r in enumerate(curve) if r.get("solve_rate") is not None}
    keep |= set(range(0, len(curve), max(1, len(curve) // 8)))
    m = d.get("model", {})
    staged = any(r.get("stage", 1) != 1 for r in curve)   # a stage column only for a two-stage recipe
    out = [f"{m.get('params', '?'):,} parameters, batch {m.get('batch', '?')}, {d['machine']['cpu']}, "
           f"{d['date'][:10]}. Held-out: easy puzzles of the validation split; loss and accuracy over "
           "answer cells masked at rate 0.5 (fixed masks); solving: every answer cell masked, one cell "
           "committed per step in confidence order, greedy.", "",
           "| " * staged + "| step | minutes | lr | train loss | held-out loss | held-out cell accuracy | solving: cells right | solving: puzzles solved |",
           "|---:" * staged + "|---:|---:|---:|---:|---:|---:|---:|---:|"]
    out[-2] = out[-2].replace("| | step", "| stage | step")
    for i in sorted(keep):
        r = curve[i]
        solve = ("—", "—") if r.get("solve_rate") is None else (f"{100 * r['solve_cell_acc']:.1f}%", f"{100 * r['solve_rate']:.1f}%")
        stage = f"| {r.get('stage', 1)} " if staged else ""
        out.append(f"{stage}| {r['step']} | {r.get('elapsed_total_s', r['elapsed_s']) / 60:.0f} | {r['lr']:.1e} | {r['train_loss']:.3f} | "
                   f"{r['heldout_loss_t05']:.3f} | {100 * r['heldout_acc_t05']:.1f}% | {solve[0]} | {solve[1]} |")
    f = d.get("final_eval")
    if f and "puzzles" in f:
        out += ["", f"Exported file (F16), {f['puzzles']} held-out easy puzzles: {f['solved']} solved "
                f"({100 * f['solve_rate']:.1f}%), {100 * f['solve_cell_acc']:.1f}% of cells right; "
                f"every cell predicted at once from the bare puzzle: {100 * f.get('heldout_acc_t1', 0):.1f}% right."]
    return "\n".join(out)


def render_sudoku_pilots():
    d = load_json(RES, "sudoku-train-pilots.json")
    if not d:
        return "_no pilot results_"
    steps = [100, 250, 500]
    out = ["| run | params | " + " | ".join(f"step {s}" for s in steps) + " |",
           "| --- | ---: | " + " | ".join("---:" for _ in steps) + " |"]
    for name, p in d["pilots"].items():
        acc = {r["step"]: r["heldout_acc_t05"] for r in p["curve"]}
        cells = [f"{100 * acc[s]:.1f}%" if s in acc else "—" for s in steps]
        out.append(f"| {name}: {p['what']} | {p['params']:,} | " + " | ".join(cells) + " |")
    return "\n".join(out)


def render_sudoku_errors():
    d = load_json(RES, "sudoku-errors.json")
    if not d:
        return "_no results yet: run bench/sudoku_errors.py_"
    out = [f"{d['n']} held-out easy puzzles ({d['tasks']}), `{d['command']}`, {d['date'][:10]}.", "",
           "| scoring | puzzles solved | blank cells right | wrong: clashes with a given in its row | column | box | no given |",
           "|---|---:|---:|---:|---:|---:|---:|"]
    for alg, st in d["by_scoring"].items():
        out.append(f"| {alg} | {st['solved']} / {d['n']} | {100 * st['blanks_right'] / st['blanks']:.1f}% | "
                   f"{st['wrong_clash_row']} | {st['wrong_clash_column']} | {st['wrong_clash_box']} | {st['wrong_clash_none']} |")
    return "\n".join(out)


def render_sudoku_order(name="sudoku-order.json", how_to="python3 bench/sudoku_order.py"):
    d = load_json(RES, name)
    if not d:
        return f"_no results yet: run `{how_to}`_"
    total = sum(c["cells"] for c in d["classes"].values())
    how = f"`--threshold {d['threshold']}`" if d.get("threshold") else "one cell per step, confidence order"
    out = [f"{d['n']} held-out {d['difficulty']} test puzzles, `-M {d['preset']}`, {how}; "
           f"{d['solved']} solved, {d['forward_passes'] / max(1, d['n']):.1f} forward passes per puzzle; "
           f"{d['machine']['cpu']}, {d['date'][:10]}, commit {d['versions']['commit']}. Each committed cell is "
           "classed by the grid just before its step (the givens and the model's own earlier digits).", "",
           "| the cell, when it committed | cells | share | commits at (mean, % of the run) | mean confidence | right |",
           "|---|---:|---:|---:|---:|---:|"]
    for k, c in d["classes"].items():
        if not c["cells"]:
            out.append(f"| {k} | 0 | — | — | — | — |")
            continue
        out.append(f"| {k} | {c['cells']:,} | {100 * c['cells'] / total:.1f}% | {100 * c['mean_when']:.0f}% | "
                   f"{c['mean_conf']:.4f} | {100 * c['right'] / c['cells']:.1f}% |")
    return "\n".join(out)


def _uniform_rows():
    """(uniform results file, [(difficulty, uniform result, masked one-cell confidence result)])"""
    u, m = load_json(RES, "sudoku-eval-uniform.json"), load_json(RES, "sudoku-eval.json")
    if not u or not m:
        return None, []
    rows = []
    for d in ["easy", "medium", "hard"]:
        a, b = u["results"].get(f"uniform-{d}"), m["results"].get(f"{d}-confidence")
        if a and b:
            rows.append((d, a, b))
    return u, rows


def _pct(r):
    return f"{100 * r['correct'] / r['total']:.1f}%"


def _passes(r):
    return r["forward_passes"] / r["total"]


def render_sudoku_uniform():
    u, rows = _uniform_rows()
    if not rows:
        return "_no results yet: run `python3 bench/sudoku_eval.py --group uniform`_"
    n = rows[0][1]["total"]
    out = [f"`unmask eval -M sudoku-uniform --sudoku {n} --difficulty D -t 1` (bench/sudoku_eval.py --group "
           f"uniform); {n:,} held-out test puzzles each, the same puzzles as the masked model's rows; "
           f"{u['machine']['cpu']} ({u['machine'].get('cpu_family', 'family not recorded')}), {u['date'][:10]}, commit {u['versions']['commit']}. Masked model: one cell "
           "per step in confidence order (bench/results/sudoku-eval.json).", "",
           "| difficulty | uniform-state model: solved | forward passes per puzzle | cells per pass | "
           "masked model (shipped): solved | its forward passes |",
           "| --- | --- | --- | --- | --- | --- |"]
    for d, a, b in rows:
        cells = a["generated_tokens"] / a["forward_passes"] if a.get("generated_tokens") else 81 / _passes(a)
        out.append(f"| {d} | {_pct(a)} | {_passes(a):.1f} | {cells:.1f} | {_pct(b)} | {_passes(b):.0f} |")
    return "\n".join(out)


def render_sudoku_uniform_summary():
    _, rows = _uniform_rows()
    r = {d: (a, b) for d, a, b in rows}
    if "easy" not in r:
        return "_no results yet: run `python3 bench/sudoku_eval.py --group uniform`_"
    (ea, eb) = r["easy"]
    rest = ", ".join(f"{_pct(r[d][0])} of {d}" for d in ("medium", "hard") if d in r)
    return (f"It solves {_pct(ea)} of {ea['total']:,} held-out easy puzzles in {_passes(ea):.1f} forward\n"
            f"passes each ({rest}), where the shipped masked model needs {_passes(eb):.0f} passes for\n"
            f"{_pct(eb)} (docs/sudoku.md, \"The uniform-state sudoku model\").")


def render_sudoku_order_parallel():
    return render_sudoku_order("sudoku-order-parallel.json", "python3 bench/sudoku_order.py --difficulty hard "
                               "--threshold 0.9 --out sudoku-order-parallel.json")


RENDERERS = {"sudoku-order-parallel": render_sudoku_order_parallel, "sudoku-uniform": render_sudoku_uniform, "sudoku-uniform-summary": render_sudoku_uniform_summary,
             "sudoku-train": render_sudoku_train, "sudoku-pilots": render_sudoku_pilots,
             "sudoku-errors": render_sudoku_errors, "sudoku-order": render_sudoku_order}
