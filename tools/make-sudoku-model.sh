#!/bin/sh
# make-sudoku-model.sh: rebuild models/unmask-sudoku.gguf from scratch (the `make sudoku-model`
# recipe; docs/sudoku.md "the sudoku model").
#
#   1. build the trainer (build/release/unmask-train) and the generator (build/release/sudoku-gen)
#   2. data: PER_LEVEL (60,000) training puzzles of each difficulty, interleaved easy, medium,
#      hard, and 500 held-out easy puzzles (the validation split: other seeds than training and
#      test); about 10 minutes, kept in $WORK between runs
#   3. a character vocabulary: 0-9 . newline, <|endoftext|> (BOS, EOS), <|mdm_mask|>
#   4. conditional training: [BOS][81 prompt cells][81 answer cells], prompt never masked
#      (resumes from $WORK/sudoku.ck, written every 4 minutes, when it exists)
#   5. export models/unmask-sudoku.gguf (F16 matrices), measure it, write the learning curve
#      to bench/results/sudoku-train.json
#
# One thread by default (THREADS): the shipped run took about 100 minutes on one core of this
# machine, shared with other jobs. Overrides: THREADS, STEPS, MINUTES (a wall-clock cap: the
# run stops, checkpoints and exports when it is reached; 0 = none), BATCH, PER_LEVEL, WORK
# (build/sudoku/main), MODEL (models/unmask-sudoku.gguf). Logs: $WORK/{train.out,log.tsv}.
set -eu
cd "$(dirname "$0")/.."
OUT=${WORK:-build/sudoku/main}
MODEL=${MODEL:-models/unmask-sudoku.gguf}
THREADS=${THREADS:-1}
STEPS=${STEPS:-4500}
STEPS2=${STEPS2:-2500}
MINUTES=${MINUTES:-0}
BATCH=${BATCH:-16}
PER_LEVEL=${PER_LEVEL:-60000}
MAKE=${MAKE:-make}
mkdir -p "$OUT"

# 1. tools
$MAKE --no-print-directory trainer
grep -q '^sudoku-gen:' Makefile || { echo "make-sudoku-model: this tree has no 'make sudoku-gen' (tools/sudoku)" >&2; exit 1; }
$MAKE --no-print-directory sudoku-gen
BIN=build/release/unmask-train
GEN=build/release/sudoku-gen

start=$(date +%s)
# 2. data
if [ ! -s "$OUT/train.jsonl" ]; then
    for d in easy medium hard; do
        "$GEN" --split train --difficulty $d --n "$PER_LEVEL" --out "$OUT/train-$d.jsonl"
    done
    paste -d '\n' "$OUT/train-easy.jsonl" "$OUT/train-medium.jsonl" "$OUT/train-hard.jsonl" > "$OUT/train.jsonl.tmp"
    mv "$OUT/train.jsonl.tmp" "$OUT/train.jsonl"
fi
[ -s "$OUT/val-easy.jsonl" ] || "$GEN" --split val --difficulty easy --n 500 --out "$OUT/val-easy.jsonl"
# 3. tokenizer
[ -s "$OUT/tok.gguf" ] || "$BIN" chars --out "$OUT/tok.gguf"
# 4. model: 6 layers, width 64, 4 heads of 16, SwiGLU 192, 163-token context, tied embeddings.
#    RoPE base 17.7214 = (9 / 2 pi)^8 makes the second of each head's 8 rotation frequencies
#    exactly 2 pi / 9: positions 9k apart (the same column, in the prompt or the answer) line
#    up, and so does the BOS seen from every cell of a column. With the usual base 10000 the
#    same model learnt nothing but copying in the same time (docs/sudoku.md).
#    Stage 1 (STEPS, from random weights, LR 2e-3 to 1e-4) ends in $OUT/stage1.gguf; stage 2
#    (STEPS2, from those weights with a fresh optimizer, LR 1e-3 to 5e-5) goes on from there.
#    A stage whose result exists is skipped, so a run can be resumed at either stage.
if [ ! -s "$OUT/stage1.gguf" ]; then
    "$BIN" train --sft --tok "$OUT/tok.gguf" --ckpt "$OUT/sudoku.ck" --log "$OUT/log.tsv" \
        --valid "$OUT/val-easy.jsonl" --steps "$STEPS" --minutes "$MINUTES" --warmup 100 --batch "$BATCH" \
        --threads "$THREADS" --embd 64 --layers 6 --heads 4 --ffn 192 --rope-base 17.7214 \
        --lr 2e-3 --lr-min 1e-4 --eval-every 100 --solve-every 1000 --solve-n 64 --heldout-n 256 \
        --ckpt-minutes 4 "$OUT/train.jsonl" 2>&1 | tee -a "$OUT/train.out"
    "$BIN" export --ckpt "$OUT/sudoku.ck" --tok "$OUT/tok.gguf" --out "$OUT/stage1.gguf" --name unmask-sudoku
fi
if [ "$STEPS2" -gt 0 ]; then
    "$BIN" train --sft --tok "$OUT/tok.gguf" --init "$OUT/stage1.gguf" --ckpt "$OUT/sudoku2.ck" \
        --log "$OUT/log2.tsv" --seed 2 \
        --valid "$OUT/val-easy.jsonl" --steps "$STEPS2" --minutes "$MINUTES" --warmup 100 --batch "$BATCH" \
        --threads "$THREADS" --lr 1e-3 --lr-min 5e-5 --eval-every 100 --solve-every 1000 --solve-n 64 \
        --heldout-n 256 --ckpt-minutes 4 "$OUT/train.jsonl" 2>&1 | tee -a "$OUT/train2.out"
    CK="$OUT/sudoku2.ck"
else
    CK="$OUT/sudoku.ck"
fi
# 5. export, measure, record
mkdir -p "$(dirname "$MODEL")"
"$BIN" export --ckpt "$CK" --tok "$OUT/tok.gguf" --out "$MODEL" --name unmask-sudoku
"$BIN" eval --sft -m "$MODEL" --threads "$THREADS" --solve-n 250 "$OUT/val-easy.jsonl" | tee "$OUT/eval.txt"
python3 bench/sudoku_train.py "$OUT"
echo "make-sudoku-model: done in $(( ($(date +%s) - start) / 60 )) minutes"
