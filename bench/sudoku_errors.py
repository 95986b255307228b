"""sudoku_errors.py: where the sudoku model goes wrong, by constraint.

    python3 bench/sudoku_errors.py MODEL TASKS.jsonl [--n N] [--alg A...] [--out NAME]

Solves the first N (default 100) puzzles of TASKS with `unmask generate --gen 81
--steps 81 --block 81 --temp 0` for each scoring (default: confidence margin entropy random)
and sorts every wrong blank cell by the given digits it clashes with: a wrong digit that a
given of the same row, column or box already holds breaks that constraint in the plainest way.
Writes bench/results/NAME (sudoku-errors.json): per scoring, puzzles solved, blank cells right,
and the counts of wrong cells clashing with a given in their row, column, box, or none.
"""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402


def peers(c):
    r, k = divmod(c, 9)
    br, bc = r // 3 * 3, k // 3 * 3
    return {"row": [r * 9 + j for j in range(9) if r * 9 + j != c],
            "column": [i * 9 + k for i in range(9) if i * 9 + k != c],
            "box": [(br + i) * 9 + bc + j for i in range(3) for j in range(3) if (br + i) * 9 + bc + j != c]}


def main():
    a = sys.argv[1:]
    if len(a) < 2:
        sys.exit("usage: sudoku_errors.py MODEL TASKS.jsonl [--n N] [--alg A...] [--out NAME]")
    model, tasks = a[0], a[1]
    n = int(a[a.index("--n") + 1]) if "--n" in a else 100
    name = a[a.index("--out") + 1] if "--out" in a else "sudoku-errors.json"
    algs = []
    if "--alg" in a:
        for x in a[a.index("--alg") + 1:]:
            if x.startswith("--"):
                break
            algs.append(x)
    algs = algs or ["confidence", "margin", "entropy", "random"]
    items = [json.loads(l) for l in open(tasks) if l.strip()][:n]
    res = benchlib.header("sudoku-errors")
    res["versions"].pop("peer", None)
    res["versions"].pop("peer_cmake_options", None)
    res["model"], res["tasks"], res["n"] = os.path.relpath(model, benchlib.ROOT), os.path.basename(tasks), len(items)
    # no --no-chat: the prompt is laid out as the model was trained (the file's own template adds
    # the cell markers; models.conf's preset for the file may name another)
    res["command"] = "unmask generate -m MODEL -p PUZZLE --gen 81 --steps 81 --block 81 --temp 0 --alg ALG -t 1 -q"
    res["by_scoring"] = {}
    for alg in algs:
        st = {"solved": 0, "blanks": 0, "blanks_right": 0, "wrong_clash_row": 0, "wrong_clash_column": 0,
              "wrong_clash_box": 0, "wrong_clash_none": 0, "outputs_not_81_digits": 0}
        for d in items:
            out = subprocess.run([benchlib.UNMASK, "generate", "-m", model, "-p", d["prompt"], "--gen", "81",
                                  "--steps", "81", "--block", "81", "--temp", "0", "--alg", alg, "-t", "1", "-q"],
                                 capture_output=True, text=True, check=True).stdout.strip()
            if len(out) != 81 or not out.isdigit():
                st["outputs_not_81_digits"] += 1
                continue
            st["solved"] += out == d["answer"]
            p = d["prompt"]
            for c in range(81):
                if p[c] != ".":
                    continue
                st["blanks"] += 1
                if out[c] == d["answer"][c]:
                    st["blanks_right"] += 1
                    continue
                hit = False
                for kind, cells in peers(c).items():
                    if any(p[x] == out[c] for x in cells):
                        st["wrong_clash_" + kind] += 1
                        hit = True
                if not hit:
                    st["wrong_clash_none"] += 1
        res["by_scoring"][alg] = st
        print(alg, json.dumps(st))
    print(os.path.relpath(benchlib.write(name, res), benchlib.ROOT))


if __name__ == "__main__":
    main()
