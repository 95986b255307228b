#!/usr/bin/env bash
# check-peer-bundled.sh: the bundled models' forward pass against llama.cpp (the peer, AMX off),
# on the files as shipped (F16 matrices, F32 norms), so both runtimes read the same bytes:
#
#   models/unmask-demo.gguf          a 61-token canvas: 21 prompt tokens, 40 masks
#   models/unmask-sudoku.gguf        the preset's puzzle laid out as the file's template lays it
#                                    out ([BOS] [81 cell markers] [81 cells] [81 answer cells]):
#                                    every answer cell masked, then half of them filled with the
#                                    solution (a state decoding meets half way)
#   models/unmask-sudoku-uniform.gguf  the same puzzle, the answer cells random digits (the
#                                    uniform-state canvas)
#
# Gate on every canvas: per-row logits cosine >= 0.9999 and the same argmax on >= 99% of rows
# (the cells' choices; a near-tie may flip). Results: bench/results/check-peer-bundled.json,
# rendered into README.md by tools/render-readme.py (table check-peer-bundled).
# Needs the peer (tools/build-peer.sh, as `make check-peer`); MODELS="a.gguf b.gguf" checks
# other files of the same kinds (read from the file: a vocabulary of 14 or 95 tokens is a sudoku
# model, uniform-state decoding a uniform one, anything else a text model).
set -euo pipefail
cd "$(dirname "$0")/.."
tools/build-peer.sh >/dev/null
peer=build/peer
w=build/check-peer
mkdir -p $w
cc -O2 -o $w/peer_logits bench/peer_logits.c -I$peer/include -L$peer/lib -lllama -lggml -lggml-base -Wl,-rpath,$PWD/$peer/lib
cc -O2 -o $w/cmp_logits bench/cmp_logits.c -lm
[ -x ./unmask ] || make -j2 >/dev/null
threads=${THREADS:-2}
models=${MODELS:-models/unmask-demo.gguf models/unmask-sudoku.gguf models/unmask-sudoku-uniform.gguf}
out=bench/results/check-peer-bundled.json
tmp=$out.tmp
trap 'rm -f "$tmp" $w/bundled.rows' EXIT
: >$w/bundled.rows
puzzle=$(sed -n '/^\[sudoku\]/,/^\[/{s/^prompt *= *//p}' models.conf)
fail=0
check() { # model label ids
  local f=$1 label=$2 toks=$3 rc=0 r status
  $w/peer_logits "$f" --tokens "$toks" --out $w/peer.f32 -t "$threads" >/dev/null 2>$w/peer.err || rc=$?
  if [ $rc != 0 ]; then
    echo "check-peer-bundled: llama.cpp failed on $f (exit status $rc): $(tail -n1 $w/peer.err)" >&2
    exit 1
  fi
  ./unmask logits -m "$f" --tokens "$toks" --out $w/um.f32 -t "$threads"
  local n=$(($(echo "$toks" | tr ',' '\n' | wc -l)))
  local nv=$(($(stat -c %s $w/um.f32) / 4 / n))
  if r=$($w/cmp_logits $w/um.f32 $w/peer.f32 $nv --min-cos 0.9999 --min-argmax 0.99); then status=ok; else status=FAIL; fail=1; fi
  echo "$status $(basename "$f") $label $r"
  local name=$(./unmask info --json "$f" | python3 -c 'import json,sys; print(json.load(sys.stdin)["general"].get("name", ""))')
  echo "  {\"model\": \"$(basename "$f")\", \"name\": \"$name\", \"canvas\": \"$label\", \"status\": \"$status\", \"compare\": $r}" >>$w/bundled.rows
}
for f in $models; do
  [ -f "$f" ] || { echo "check-peer-bundled: $f not found" >&2; exit 1; }
  read -r kind vocab mask < <(./unmask info --json "$f" | python3 -c '
import json, sys
d = json.load(sys.stdin)
v = d["tokenizer"]["vocab_size"]
k = "text" if v not in (14, 95) else "uniform" if d["decoding"] == "uniform-state" else "sudoku"
print(k, v, d["tokenizer"]["mask_token_id"])')
  case $kind in
    sudoku|uniform)
      ids=$(./unmask tokenize -m "$f" --ids-only "$puzzle")
      [ "$(echo "$ids" | wc -w)" = 82 ] || { echo "check-peer-bundled: $f: the puzzle is not BOS + 81 tokens" >&2; exit 1; }
      # the template's layout: BOS, then the 81 markers (ids 14..94) when the file has them
      if [ "$vocab" = 95 ]; then
        pre="12,$(seq -s, 14 94),$(echo "$ids" | cut -d' ' -f2- | tr ' ' ',')"
      else
        pre=$(echo "$ids" | tr ' ' ',')
      fi
      if [ $kind = uniform ]; then
        noise=$(python3 -c "import random; r = random.Random(7); print(','.join(str(r.randrange(1, 10)) for _ in range(81)))")
        check "$f" "puzzle + 81 random digits" "$pre,$noise"
      else
        sol=$(./unmask generate -m "$f" -p "$puzzle" --gen 81 --steps 81 --block 81 --temp 0 -q -t "$threads" </dev/null | tr -d '\n')
        [[ $sol =~ ^[1-9]{81}$ ]] || { echo "check-peer-bundled: $f: no 81-digit answer to fill half the canvas" >&2; exit 1; }
        check "$f" "puzzle + 81 masks" "$pre,$(python3 -c "print(','.join(['$mask'] * 81))")"
        # digits are ids 0..9 in this vocabulary: every other answer cell filled
        half=$(python3 -c "s = '$sol'; print(','.join(s[i] if i % 2 == 0 else '$mask' for i in range(81)))")
        check "$f" "puzzle + 41 answer digits, 40 masks" "$pre,$half"
      fi ;;
    *)
      ids=$(./unmask tokenize -m "$f" --ids-only "First Citizen: Before we proceed any further, hear me speak. All: Speak, speak." |
            tr ' ' ',' | cut -d, -f1-21)
      [ "$(echo "$ids" | tr ',' '\n' | wc -l)" = 21 ] || { echo "check-peer-bundled: $f: the prompt is under 21 tokens" >&2; exit 1; }
      check "$f" "21 prompt tokens + 40 masks" "$ids,$(python3 -c "print(','.join(['$mask'] * 40))")" ;;
  esac
done
# written whole and moved into place only when every comparison ran
{
  echo "{\"peer\": \"$(python3 bench/benchlib.py peer)\","
  echo " \"machine\": \"$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')\","
  echo " \"date\": \"$(date -u +%Y-%m-%d)\", \"threads\": $threads, \"unmask_commit\": \"$(git rev-parse --short HEAD)\","
  echo " \"gate\": {\"min_cos\": 0.9999, \"min_argmax\": 0.99}, \"results\": ["
  sed '$!s/$/,/' $w/bundled.rows
  echo "]}"
} >"$tmp"
python3 -m json.tool "$tmp" >/dev/null
mv "$tmp" "$out"
echo "results in $out"
exit $fail
