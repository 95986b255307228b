#!/bin/sh
# make-demo-model.sh: rebuild models/unmask-demo.gguf from scratch (the `make demo-model` recipe).
#
#   1. build the trainer, build/train/unmask-train (tools/train/*.c + the engine's sources)
#   2. learn a 4096-token byte-level BPE from the training parts of data/corpus/*.txt
#   3. train the llada model (resumes from build/train/demo/demo.ck if it exists, so an
#      interrupted run continues where its last checkpoint left it)
#   4. export models/unmask-demo.gguf (F16 matrices, F32 norms) and measure it
#
# On this project's machine (2 cores, partly shared with other jobs) the shipped run took
# about 85 minutes; expect about 60 on 2 idle cores. Overrides: THREADS (default: all
# cores), STEPS, STEPS2 (0: one cycle only), BATCH, WORK (build/train/demo), MODEL
# (models/unmask-demo.gguf). Logs: $WORK/{train.out,log.tsv}.
set -eu
cd "$(dirname "$0")/.."
OUT=${WORK:-build/train/demo}
MODEL=${MODEL:-models/unmask-demo.gguf}
STEPS=${STEPS:-2600}
STEPS2=${STEPS2:-5000}
BATCH=${BATCH:-8}
THREADS=${THREADS:-0}
CORPUS="data/corpus/grimms_fairy_tales.txt data/corpus/little_women.txt data/corpus/tiny_shakespeare.txt"
mkdir -p "$OUT"

# 1. the trainer
${MAKE:-make} --no-print-directory trainer
BIN=build/release/unmask-train

start=$(date +%s)
# 2. tokenizer
[ -e "$OUT/tok.gguf" ] || "$BIN" bpe --vocab 4096 --out "$OUT/tok.gguf" $CORPUS
# 3. model: 4 layers, width 192, 3 heads of 64, SwiGLU 512, context 256, tied embeddings.
#    Two cosine cycles: warm-up and decay over STEPS (2600), then a warm restart that runs
#    the schedule of STEPS2 (5000) from step STEPS on (the learning rate jumps back to ~1e-3).
train() {
    "$BIN" train --tok "$OUT/tok.gguf" --ckpt "$OUT/demo.ck" --log "$OUT/log.tsv" \
        --steps "$1" --warmup 60 --batch "$BATCH" --threads "$THREADS" \
        --embd 192 --layers 4 --heads 3 --ffn 512 --ctx 256 --lr 2e-3 --lr-min 2e-4 \
        --eval-every 25 --ckpt-minutes 4 $CORPUS 2>&1 && echo 0 > "$OUT/rc" || echo 1 > "$OUT/rc"
}
train "$STEPS" | tee -a "$OUT/train.out"
[ "$(cat "$OUT/rc")" = 0 ] || { echo "make-demo-model: training failed" >&2; exit 1; }
if [ "$STEPS2" -gt "$STEPS" ]; then
    train "$STEPS2" | tee -a "$OUT/train.out"
    [ "$(cat "$OUT/rc")" = 0 ] || { echo "make-demo-model: training failed" >&2; exit 1; }
fi
# 4. export and measure
mkdir -p "$(dirname "$MODEL")"
"$BIN" export --ckpt "$OUT/demo.ck" --tok "$OUT/tok.gguf" --out "$MODEL"
"$BIN" eval -m "$MODEL" $CORPUS
echo "make-demo-model: done in $(( ($(date +%s) - start) / 60 )) minutes"
