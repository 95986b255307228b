#!/usr/bin/env bash
# sudoku_model.sh: the bundled sudoku model and its preset. The file is a llada model with a
# character vocabulary (one token per cell, BOS first, the mask recorded as llama.cpp reads it),
# models.conf's [sudoku] preset holds a held-out puzzle, and greedy decoding with the preset's
# settings answers it with 81 digits that keep every given (copying givens is what the model
# is surest of; whether the whole grid is right depends on the model, see docs/sudoku.md).
. "$(dirname "$0")/lib.sh"
SUITE=sudoku-model
MODEL=models/unmask-sudoku.gguf
if [ ! -f "$MODEL" ]; then skip sudoku-model "no $MODEL (make sudoku-model)"; finish; exit 0; fi
expect_rc info 0 "$BIN" info --json "$MODEL"
python3 - "$TMP/out" >"$TMP/chk" 2>&1 <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
t, h = d["tokenizer"], d["hyperparameters"]
got = {"arch": d["architecture"], "model": t["model"], "vocab": t["vocab_size"], "merges": t["merges"],
       "mask": t["mask_token"], "bos": t["bos_token"], "eos": t["eos_token"], "ctx": h["context_length"],
       "runnable": d["runnable"]}
want = {"arch": "llada", "model": "gpt2", "vocab": 14, "merges": 0, "mask": "<|mdm_mask|>", "bos": "<|endoftext|>",
        "eos": "<|endoftext|>", "ctx": 163, "runnable": True}
bad = [f"{k}={got[k]!r}" for k in want if got[k] != want[k]]
print("bad: " + ", ".join(bad) if bad else "ok")
PY
expect_grep metadata '^ok$' "$TMP/chk"
puzzle=$(sed -n '/^\[sudoku\]/,/^\[/{s/^prompt *= *//p}' models.conf)
layout=$(sed -n '/^\[sudoku\]/,/^\[/{s/^layout *= *//p}' models.conf)
if [ ${#puzzle} = 81 ]; then ok "preset prompt is an 81-cell puzzle"; else fail preset-prompt "got '$puzzle'"; fi
if [ "$layout" = grid9 ]; then ok "preset layout grid9"; else fail preset-layout "got '$layout'"; fi
expect_rc tokenize 0 "$BIN" tokenize -m "$MODEL" --ids-only "$puzzle"
n=$(wc -w <"$TMP/out"); first=$(awk '{print $1}' "$TMP/out")
if [ "$n" = 82 ] && [ "$first" = 12 ]; then ok "BOS + one token per cell"; else fail tokens "$n ids, first $first"; fi
expect_rc generate 0 "$BIN" generate -q -M sudoku -p "$puzzle" -t 1
answer=$(tr -d '\n' <"$TMP/out")
if [[ $answer =~ ^[1-9]{81}$ ]]; then ok "answer is 81 digits"; else fail digits "'$answer'"; fi
keep=1
for ((i = 0; i < 81; i++)); do c=${puzzle:i:1}; [ "$c" = . ] || [ "$c" = "${answer:i:1}" ] || keep=0; done
if [ $keep = 1 ]; then ok "every given kept"; else fail givens "$puzzle -> $answer"; fi
finish
