#!/usr/bin/env bash
# make-readme-gif.sh: makes docs/demo.gif, the GIF README.md opens with: `unmask record`
# decoding the bundled model (models/unmask-demo.gguf, a raw LM: --no-chat) on a 100x30
# virtual screen. Prints the exact command it ran (for the README) and checks the file is
# at most 2 MB.
#
#   tools/make-readme-gif.sh                 # builds ./unmask if needed
#   MODEL=other.gguf OUT=/tmp/x.gif tools/make-readme-gif.sh
set -eu
cd "$(dirname "$0")/.."
MODEL=${MODEL:-models/unmask-demo.gguf}
OUT=${OUT:-docs/demo.gif}
BIN=${UNMASK_BIN:-./unmask}
PROMPT=${PROMPT:-Once upon a time}
MAX_BYTES=$((2 * 1024 * 1024))

[ -x "$BIN" ] || make -j2 >/dev/null
if [ ! -f "$MODEL" ]; then
  echo "make-readme-gif: $MODEL not found (make demo-model builds it)" >&2
  exit 1
fi
args=(record -m "$MODEL" -p "$PROMPT" --no-chat --gen 64 --steps 32 --size 100x30 --delay-cs 12 --hold-cs 400 --gif "$OUT")
echo "unmask record -m $MODEL -p \"$PROMPT\" --no-chat --gen 64 --steps 32 --size 100x30 --delay-cs 12 --hold-cs 400 --gif $OUT"
"$BIN" "${args[@]}" -q </dev/null
bytes=$(stat -c %s "$OUT")
frames=$(gifsicle --info "$OUT" 2>/dev/null | sed -n 's/.* \([0-9]*\) images$/\1/p' || true)
echo "make-readme-gif: $OUT: ${frames:-?} frames, $((bytes / 1024)) KB"
if [ "$bytes" -gt "$MAX_BYTES" ]; then
  echo "make-readme-gif: $OUT is over 2 MB; use fewer steps or a smaller --size" >&2
  exit 1
fi
