#!/bin/sh
# eval.sh: quality figures of the demo model (docs/model.md).
#
#   tools/train/eval.sh [MODEL]        default models/unmask-demo.gguf
#
# 1. held-out masked-token loss (nats per masked token) at t = 0.5, and at t = 0.05, 0.15, ... 0.95 and their
#    mean (unmask-train eval: the last 5% of each corpus file, windows of the model's context).
# 2. greedy generation of 64 tokens in 32 steps (block 64) from the openings of 12 held-out
#    paragraphs (unmask-train prompts), with unmask's own engine.
# 3. the share of generated words (letters and apostrophes, case folded) found in the
#    wamerican word list, /usr/share/dict/american-english.
# Environment: UNMASK (default ./unmask), TRAIN (default build/train/unmask-train), OUT
# (default build/train/eval) receives samples.txt.
set -eu
cd "$(dirname "$0")/../.."
MODEL=${1:-models/unmask-demo.gguf}
UNMASK=${UNMASK:-./unmask}
TRAIN=${TRAIN:-build/train/unmask-train}
OUT=${OUT:-build/train/eval}
DICT=/usr/share/dict/american-english
CORPUS="data/corpus/grimms_fairy_tales.txt data/corpus/little_women.txt data/corpus/tiny_shakespeare.txt"
mkdir -p "$OUT"

"$TRAIN" eval -m "$MODEL" $CORPUS

: > "$OUT/samples.txt"
: > "$OUT/generated.txt"
"$TRAIN" prompts $CORPUS > "$OUT/prompts.txt"
while IFS= read -r prompt; do
    gen=$("$UNMASK" generate -m "$MODEL" --no-chat -p "$prompt" --gen 64 --steps 32 --block 64 --temp 0 -q -t 2 </dev/null)
    printf '### %s\n%s\n\n' "$prompt" "$gen" >> "$OUT/samples.txt"
    printf '%s\n' "$gen" >> "$OUT/generated.txt"
done < "$OUT/prompts.txt"

if [ -r "$DICT" ]; then
    set -- $("$(dirname "$0")/../dict-share.sh" "$DICT" < "$OUT/generated.txt")
    total=$1 found=$2
    echo "dictionary words: $found of $total generated words are in $DICT" \
         "($(awk -v f="$found" -v t="$total" 'BEGIN { printf "%.1f%%", t ? 100 * f / t : 0 }'))"
else
    echo "dictionary words: $DICT missing (apt-get install wamerican)"
fi
echo "samples: $OUT/samples.txt"
