#!/usr/bin/env bash
# make-sudoku-gifs.sh: records the sudoku GIFs of README.md and docs/sudoku.md with
# `unmask record` (no terminal, no screen recorder) from the bundled sudoku models and the
# presets of models.conf, printing each command as it runs it:
#
#   docs/sudoku.gif           -M sudoku: the preset's held-out easy puzzle, one cell per step
#   docs/compare.gif          the same, confidence order beside random order
#   docs/sudoku-parallel.gif  -M sudoku-hard: a held-out hard puzzle, one cell per step beside
#                             --threshold 0.9 (every cell above 0.9 at once); each pane's header
#                             counts its forward passes
#   docs/sudoku-uniform.gif   the uniform-state model beside the masked one on a held-out
#                             medium puzzle
#
#   tools/make-sudoku-gifs.sh [NAME...]     NAME: sudoku compare parallel uniform (default: all)
#
# Each GIF must stay under 2 MB. The frames can be looked at with tools/gif-frame.py.
set -eu
cd "$(dirname "$0")/.."
BIN=${UNMASK_BIN:-./unmask}
MAX_BYTES=$((2 * 1024 * 1024))
[ -x "$BIN" ] || make -j2 >/dev/null
for f in models/unmask-sudoku.gguf models/unmask-sudoku-uniform.gguf; do
  [ -f "$f" ] || { echo "make-sudoku-gifs: $f not found (make sudoku-model / make sudoku-uniform-model)" >&2; exit 1; }
done
# the held-out medium puzzle of the uniform-state GIF (sudoku-gen's test split)
MEDIUM=1.6....7.....8..93......2..9....61....89.35...5.8.17..5.17.4.6...7..........259..
record() { # OUT ARGS...
  local out=$1; shift
  echo "unmask record $* --gif $out"
  "$BIN" record "$@" --gif "$out" -q </dev/null
  local bytes
  bytes=$(stat -c %s "$out")
  echo "make-sudoku-gifs: $out: $((bytes / 1024)) KB"
  [ "$bytes" -le "$MAX_BYTES" ] || { echo "make-sudoku-gifs: $out is over 2 MB" >&2; exit 1; }
}
want=${*:-sudoku compare parallel uniform}
for name in $want; do
  case $name in
    sudoku)   record docs/sudoku.gif -M sudoku --size 80x30 --delay-cs 10 --hold-cs 400 ;;
    compare)  record docs/compare.gif -M sudoku --size 170x30 --delay-cs 12 --hold-cs 400 --compare "--alg random" ;;
    parallel) record docs/sudoku-parallel.gif -M sudoku-hard --size 170x30 --delay-cs 12 --hold-cs 500 \
                --compare "--threshold 0.9" ;;
    uniform)  record docs/sudoku-uniform.gif -M sudoku-uniform -p "$MEDIUM" --compare "-M sudoku" --size 170x30 \
                --delay-cs 15 --hold-cs 500 ;;
    *) echo "make-sudoku-gifs: unknown GIF '$name' (sudoku, compare, parallel, uniform)" >&2; exit 2 ;;
  esac
done
