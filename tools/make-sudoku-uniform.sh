#!/bin/sh
# make-sudoku-uniform.sh: the uniform-state sudoku model, models/unmask-sudoku-uniform.gguf (the
# `make sudoku-uniform-model` recipe; docs/sudoku.md "The uniform-state sudoku model").
#
# The masked sudoku model's data, vocabulary and prompt (the 81 cell markers, then the puzzle),
# trained with random-token corruption instead of masks (unmask-train --corrupt uniform: each
# answer token replaced by a uniformly random token with probability p, the loss at every answer
# position), and exported as a llada file that says unmask.uniform_state = true with one canvas
# of 81 positions: unmask decodes it with the uniform-state (DiffusionGemma) sampler. It is there
# so uniform-state decoding can be watched converging on a model that knows something
# (`unmask --compare` beside the masked model; random weights only flicker).
#
# Reuses $WORK's data and vocabulary when tools/make-sudoku-model.sh made them (same folder by
# default). Overrides: THREADS (2), STEPS (6000), MINUTES (0: no cap), BATCH (16), WORK
# (build/sudoku/main), UWORK (build/sudoku/uniform), MODEL (models/unmask-sudoku-uniform.gguf),
# SEED_CKPT (data/sudoku-uniform/sudoku.ck when committed; FRESH=1 ignores it).
set -eu
cd "$(dirname "$0")/.."
DATA=${WORK:-build/sudoku/main}
OUT=${UWORK:-build/sudoku/uniform}
MODEL=${MODEL:-models/unmask-sudoku-uniform.gguf}
THREADS=${THREADS:-2}
STEPS=${STEPS:-6000}
MINUTES=${MINUTES:-0}
BATCH=${BATCH:-16}
SEED_CKPT=${SEED_CKPT:-data/sudoku-uniform/sudoku.ck}
FRESH=${FRESH:-0}
MAKE=${MAKE:-make}
mkdir -p "$OUT" "$DATA"
$MAKE --no-print-directory trainer sudoku-gen
BIN=build/release/unmask-train
GEN=build/release/sudoku-gen
start=$(date +%s)
if [ ! -s "$DATA/train.jsonl" ]; then
    for d in easy medium hard; do
        "$GEN" --split train --difficulty $d --n 60000 --out "$DATA/train-$d.jsonl"
    done
    paste -d '\n' "$DATA/train-easy.jsonl" "$DATA/train-medium.jsonl" "$DATA/train-hard.jsonl" > "$DATA/train.jsonl.tmp"
    mv "$DATA/train.jsonl.tmp" "$DATA/train.jsonl"
fi
[ -s "$DATA/val-easy.jsonl" ] || "$GEN" --split val --difficulty easy --n 500 --out "$DATA/val-easy.jsonl"
[ -s "$DATA/tok.gguf" ] || "$BIN" chars --markers sudoku --out "$DATA/tok.gguf"
if [ ! -s "$OUT/sudoku.ck" ] && [ "$FRESH" = 0 ] && [ -s "$SEED_CKPT" ]; then
    cp "$SEED_CKPT" "$OUT/sudoku.ck"
    [ -s "$(dirname "$SEED_CKPT")/log.tsv" ] && cp "$(dirname "$SEED_CKPT")/log.tsv" "$OUT/log.tsv"
    echo "make-sudoku-uniform: resuming from the committed checkpoint $SEED_CKPT"
fi
# 6 layers, width 64, 4 heads of 16, SwiGLU 192, the masked model's RoPE base and prompt
"$BIN" train --sft --sudoku --corrupt uniform --tok "$DATA/tok.gguf" --ckpt "$OUT/sudoku.ck" --log "$OUT/log.tsv" \
    --valid "$DATA/val-easy.jsonl" --steps "$STEPS" --minutes "$MINUTES" --warmup 200 --batch "$BATCH" \
    --threads "$THREADS" --embd 64 --layers 6 --heads 4 --ffn 192 --rope-base 17.7214 \
    --lr 2e-3 --lr-min 5e-5 --eval-every 100 --solve-every 1000 --solve-n 64 --heldout-n 256 \
    --ckpt-minutes 4 "$DATA/train.jsonl" 2>&1 | tee -a "$OUT/train.out"
mkdir -p "$(dirname "$MODEL")"
"$BIN" export --ckpt "$OUT/sudoku.ck" --tok "$DATA/tok.gguf" --out "$MODEL" --name unmask-sudoku-uniform --uniform-canvas 81
"$BIN" eval --sft -m "$MODEL" --threads "$THREADS" --solve-n 250 "$DATA/val-easy.jsonl" | tee "$OUT/eval.txt"
echo "make-sudoku-uniform: done in $(( ($(date +%s) - start) / 60 )) minutes"
