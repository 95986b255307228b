#!/bin/sh
# make-sudoku-model.sh: rebuild models/unmask-sudoku.gguf from scratch (the `make sudoku-model`
# recipe; docs/sudoku.md "the sudoku model").
#
#   1. build the trainer (build/release/unmask-train) and the generator (build/release/sudoku-gen)
#   2. data: PER_LEVEL (60,000) training puzzles of each difficulty, interleaved easy, medium,
#      hard, and 500 held-out easy puzzles (the validation split: other seeds than training and
#      test); about 3 minutes, kept in $WORK between runs
#   3. the vocabulary: 0-9 . newline, <|endoftext|> (BOS, EOS), <|mdm_mask|>, and the 81 cell
#      markers <|r1c1|>..<|r9c9|> with the prompt template that puts them before the puzzle
#   4. conditional training: [BOS][81 markers][81 prompt cells][81 answer cells], prompt never
#      masked (resumes from $WORK/sudoku.ck, written every 4 minutes, when it exists; when it
#      does not and the committed checkpoint $SEED_CKPT exists, from that one)
#   5. export models/unmask-sudoku.gguf (F16 matrices), measure it, write the learning curve
#      to bench/results/sudoku-train.json
#
# Two threads by default (THREADS). Overrides: THREADS, STEPS, MINUTES (a wall-clock cap: the
# run stops, checkpoints and exports when it is reached; 0 = none), BATCH, PER_LEVEL, WORK
# (build/sudoku/main), MODEL (models/unmask-sudoku.gguf), SEED_CKPT (data/sudoku-train/sudoku.ck;
# FRESH=1 ignores it and starts from random weights). Logs: $WORK/{train.out,log.tsv}.
set -eu
cd "$(dirname "$0")/.."
OUT=${WORK:-build/sudoku/main}
MODEL=${MODEL:-models/unmask-sudoku.gguf}
THREADS=${THREADS:-2}
STEPS=${STEPS:-16000}
MINUTES=${MINUTES:-0}
BATCH=${BATCH:-16}
PER_LEVEL=${PER_LEVEL:-60000}
SEED_CKPT=${SEED_CKPT:-data/sudoku-train/sudoku.ck}
FRESH=${FRESH:-0}
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
# 3. tokenizer with the cell markers and their prompt template (unmask.chat_template)
[ -s "$OUT/tok.gguf" ] || "$BIN" chars --markers sudoku --out "$OUT/tok.gguf"
# 4. model: 6 layers, width 96, 6 heads of 16, SwiGLU 288, 244-token context, tied embeddings.
#    The markers carry each cell's row, column and box (their embeddings are the positions a
#    llada file has no other place for); RoPE base 17.7214 = (9 / 2 pi)^8 makes the second of
#    each head's 8 rotation frequencies exactly 2 pi / 9, so a cell lines up with its marker
#    (81 back) and an answer cell with its puzzle cell (81 back) at one phase. Learning rate
#    2e-3 after 200 warm-up steps, cosine to 5e-5 at STEPS.
if [ ! -s "$OUT/sudoku.ck" ] && [ "$FRESH" = 0 ] && [ -s "$SEED_CKPT" ]; then
    cp "$SEED_CKPT" "$OUT/sudoku.ck"
    [ -s "$(dirname "$SEED_CKPT")/log.tsv" ] && cp "$(dirname "$SEED_CKPT")/log.tsv" "$OUT/log.tsv"
    [ -s "$(dirname "$SEED_CKPT")/train.out" ] && cp "$(dirname "$SEED_CKPT")/train.out" "$OUT/train.out"
    echo "make-sudoku-model: resuming from the committed checkpoint $SEED_CKPT"
fi
"$BIN" train --sft --sudoku --tok "$OUT/tok.gguf" --ckpt "$OUT/sudoku.ck" --log "$OUT/log.tsv" \
    --valid "$OUT/val-easy.jsonl" --steps "$STEPS" --minutes "$MINUTES" --warmup 200 --batch "$BATCH" \
    --threads "$THREADS" --embd 96 --layers 6 --heads 6 --ffn 288 --rope-base 17.7214 \
    --lr 2e-3 --lr-min 5e-5 --eval-every 100 --solve-every 1000 --solve-n 64 --heldout-n 256 \
    --ckpt-minutes 4 "$OUT/train.jsonl" 2>&1 | tee -a "$OUT/train.out"
CK="$OUT/sudoku.ck"
# 5. export, measure, record
mkdir -p "$(dirname "$MODEL")"
"$BIN" export --ckpt "$CK" --tok "$OUT/tok.gguf" --out "$MODEL" --name unmask-sudoku
"$BIN" eval --sft -m "$MODEL" --threads "$THREADS" --solve-n 250 "$OUT/val-easy.jsonl" | tee "$OUT/eval.txt"
python3 bench/sudoku_train.py "$OUT"
echo "make-sudoku-model: done in $(( ($(date +%s) - start) / 60 )) minutes"
