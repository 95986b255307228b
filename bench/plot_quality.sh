#!/bin/sh
# plot_quality.sh: draw docs/fast-decoding.png, quality against cost for every decoding method,
# from the committed results (bench/results/sudoku-eval.json, bench/results/demo-quality.json;
# the tables of docs/decoding.md are rendered from the same files by tools/render-readme.py).
#
#   bench/plot_quality.sh [OUT.png]       (make plot; needs gnuplot: tools/ensure-deps.sh plot)
#
# Four panels: sudoku solve rate (easy puzzles) and demo-model agreement with exact decoding,
# each against forward passes and against full-pass equivalents (rows computed / rows of a
# full pass, which is what a cached pass saves). Exact decoding is the black square.
set -eu
cd "$(dirname "$0")/.."
OUT=${1:-docs/fast-decoding.png}
command -v gnuplot >/dev/null || { echo "plot_quality: gnuplot missing; run: tools/ensure-deps.sh plot (apt-get install gnuplot-nox)" >&2; exit 1; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
python3 - "$TMP" <<'EOF'
import json, os, sys
sys.path.insert(0, "bench")
from render_fast import _full_pass_rows
tmp = sys.argv[1]
kinds = ["exact", "fixed", "parallel", "cache", "both"]
def emit(name, rows):
    # one gnuplot data block per kind (blank-line separated: index 0..4)
    with open(os.path.join(tmp, name), "w") as f:
        for k in kinds:
            mine = [r for r in rows if r[0] == k]
            for r in mine:
                f.write(f"{r[1]:.3f} {r[2]:.3f} {100 * r[3]:.2f} \"{r[4]}\"\n")
            if not mine:   # an empty block would merge with the next one's separator
                f.write("NaN NaN NaN \"\"\n")
            f.write("\n\n")
s = json.load(open("bench/results/sudoku-eval.json"))
full_rows = _full_pass_rows(s["results"])   # rows of one full pass of the model measured
rows = []
for k, r in s["results"].items():
    c = s["configs"][k]
    if k == "easy-confidence":
        kind, tag = "exact", "exact"
    elif c["group"] == "methods" or k in ("easy-threshold-0.9", "easy-threshold-0.999"):
        kind = c["label"].split(":")[0] if ":" in c["label"] else "parallel"
        tag = k[len("easy-"):]
    else:
        continue
    n = r["total"]
    rows.append((kind, r["forward_passes"] / n, r["rows_computed"] / n / full_rows, r["correct"] / n, tag))
emit("sudoku.dat", rows)
with open(os.path.join(tmp, "sudoku.rows"), "w") as f:
    f.write(f"{full_rows:.0f}\n")
d = json.load(open("bench/results/demo-quality.json"))
full = d["results"]["exact"]["rows_computed"] / d["results"]["exact"]["forward_passes"]
rows = []
for k, r in d["results"].items():
    rows.append((r["label"].split(":")[0], r["forward_passes"], r["rows_computed"] / full, r["agreement"], k))
emit("demo.dat", rows)
EOF
gnuplot <<EOF
set terminal pngcairo size 1400,1000 font "DejaVu Sans,11"
set output "$OUT.tmp"
set multiplot layout 2,2 title "Quality against cost of every decoding method (bench/results/sudoku-eval.json, demo-quality.json)"
set grid
set key top left box opaque
set logscale x 2
set yrange [0:105]
set style line 1 pt 5 ps 1.8 lc rgb "black"
set style line 2 pt 7 ps 1.3 lc rgb "#777777"
set style line 3 pt 7 ps 1.3 lc rgb "#1f77b4"
set style line 4 pt 9 ps 1.5 lc rgb "#d62728"
set style line 5 pt 13 ps 1.5 lc rgb "#2ca02c"
# one panel: points of the five kinds from data file F, column X against column 3, labelled
panel(F, X) = sprintf('plot for [i=0:4] "%s" index i using %d:3 with points ls (i+1) title word("exact fixed parallel cache both", i+1), "%s" using %d:3:4 with labels font ",8" offset 0,0.8 notitle', F, X, F, X)
set title "sudoku, easy puzzles: solved"
set ylabel "puzzles solved (%)"
set xlabel "forward passes per puzzle"
eval panel("$TMP/sudoku.dat", 1)
set xlabel "full-pass equivalents per puzzle (rows computed / $(cat "$TMP/sudoku.rows"))"
eval panel("$TMP/sudoku.dat", 2)
set title "demo model: agreement with exact decoding"
set ylabel "same token as exact decoding (%)"
set xlabel "forward passes per generation (64 tokens)"
eval panel("$TMP/demo.dat", 1)
set xlabel "full-pass equivalents per generation"
eval panel("$TMP/demo.dat", 2)
unset multiplot
EOF
mv "$OUT.tmp" "$OUT"
echo "$OUT"
