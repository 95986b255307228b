"""sudoku_train.py: the sudoku model's learning curve as a result file.

    python3 bench/sudoku_train.py WORK [--out NAME]

Reads what tools/make-sudoku-model.sh leaves in WORK (build/sudoku/main): log.tsv (one row per
evaluation of `unmask-train train --sft`, stage 1), log2.tsv (stage 2, from stage 1's weights;
its steps are counted on from stage 1's last), train.out (its stderr: the command's shape line) and
eval.txt (`unmask-train eval --sft` on the exported file), and writes
bench/results/sudoku-train.json (NAME): the machine, the curve (step, learning rate, train loss,
held-out answer loss and accuracy at mask rate 0.5, and at the steps where it was measured
greedy solving of held-out puzzles: cell accuracy and solve rate) and the final evaluation.
Nothing is typed by hand: docs render from this file.
"""
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402


def num(s):
    if s == "":
        return None
    return float(s) if any(c in s for c in ".e") else int(s)


def main():
    args = sys.argv[1:]
    if not args or args[0].startswith("-"):
        sys.exit("usage: sudoku_train.py WORK [--out NAME]")
    work = args[0]
    name = args[args.index("--out") + 1] if "--out" in args else "sudoku-train.json"
    def read_log(path):
        rows = []
        with open(path) as f:
            header = None
            for line in f:
                cells = line.rstrip("\n").split("\t")
                if cells[0] == "step":
                    header = cells
                    continue
                if header is None or len(cells) != len(header):
                    sys.exit(f"{path}: a row does not match the header: {line.strip()}")
                rows.append({k: num(v) for k, v in zip(header, cells)})
        return rows
    old_path = os.path.join(benchlib.RESULTS, name)
    stage1_note = None
    if os.path.exists(os.path.join(work, "log.tsv")):
        rows = read_log(os.path.join(work, "log.tsv"))
        # elapsed_s restarts at 0 when a run is resumed: elapsed_total_s adds the segments before
        # (each counted to its last logged row, so up to one evaluation interval short)
        base = prev = 0
        for r in rows:
            if r["elapsed_s"] < prev:
                base += prev
            prev = r["elapsed_s"]
            r["elapsed_total_s"] = base + r["elapsed_s"]
    elif os.path.exists(os.path.join(work, "log2.tsv")) and os.path.exists(old_path):
        # stage 2 run on a stage-1 export made earlier: that run's curve is the committed one
        with open(old_path) as f:
            old = json.load(f)
        rows = [r for r in old["curve"] if r.get("stage", 1) == 1]
        stage1_note = f"stage 1's curve is the one committed on {old['date']} (commit {old['versions']['commit']})"
    else:
        sys.exit(f"sudoku_train: no {work}/log.tsv")
    for r in rows:
        r["stage"] = 1
    if os.path.exists(os.path.join(work, "log2.tsv")):
        s0 = rows[-1]["step"] if rows else 0
        t0 = rows[-1]["elapsed_total_s"] if rows else 0
        stage2 = {}
        for r in read_log(os.path.join(work, "log2.tsv")):   # a resumed run may log a step again
            stage2[r["step"]] = r
        base = prev = 0
        for r in sorted(stage2.values(), key=lambda x: x["step"]):
            r["stage"], r["stage_step"] = 2, r["step"]
            r["step"] += s0
            if r["elapsed_s"] < prev:     # resumed: the clock restarted
                base += prev
            prev = r["elapsed_s"]
            r["elapsed_total_s"] = t0 + base + r["elapsed_s"]
            rows.append(r)
    res = benchlib.header("sudoku-train")
    if stage1_note:
        res["stage1_note"] = stage1_note
    out = "".join(open(os.path.join(work, f)).read() for f in ("train.out", "train2.out")
                  if os.path.exists(os.path.join(work, f)))
    shape = re.findall(r"train: (\d+) params, (\d+) training / (\d+) held-out examples of (\d+) tokens, batch (\d+)", out)
    if shape:
        p, ntr, nva, T, B = (int(x) for x in shape[-1])
        res["model"] = {"params": p, "train_examples": ntr, "heldout_examples": nva, "sequence_tokens": T, "batch": B}
    resumed = re.findall(r"resumed .* at step (\d+)", out)
    res["resumed_at_steps"] = [int(s) for s in resumed]
    if stage1_note:
        res["resumed_at_steps"] = old.get("resumed_at_steps", []) + res["resumed_at_steps"]
    res["curve"] = rows
    ev = os.path.join(work, "eval.txt")
    if os.path.exists(ev):
        text = open(ev).read()
        final = {}
        m = re.search(r"t=0.50  answer loss ([\d.]+) nats, accuracy ([\d.]+)", text)
        if m:
            final["heldout_loss_t05"], final["heldout_acc_t05"] = float(m.group(1)), float(m.group(2))
        m = re.search(r"t=1.00  answer loss ([\d.]+) nats, accuracy ([\d.]+)", text)
        if m:
            final["heldout_loss_t1"], final["heldout_acc_t1"] = float(m.group(1)), float(m.group(2))
        m = re.search(r"(\d+) of (\d+) solved \(([\d.]+)\), cells ([\d.]+)", text)
        if m:
            final["solved"], final["puzzles"] = int(m.group(1)), int(m.group(2))
            final["solve_rate"], final["solve_cell_acc"] = float(m.group(3)), float(m.group(4))
        res["final_eval"] = final
        res["final_eval_text"] = text
    path = benchlib.write(name, res)
    print(os.path.relpath(path, benchlib.ROOT))


if __name__ == "__main__":
    main()
