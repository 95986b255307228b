#!/usr/bin/env bash
# sudoku_model.sh: the bundled sudoku model and its preset. The file is a llada model with a
# character vocabulary (one token per cell, BOS first, the mask recorded as llama.cpp reads it)
# and 81 cell markers <|r1c1|>..<|r9c9|> that its own template (unmask.chat_template) puts
# before the puzzle; models.conf's [sudoku] preset holds a held-out puzzle, and greedy decoding
# with the preset's settings lays the prompt out as [BOS][81 markers][81 cells] and answers it
# with 81 digits that keep every given (copying givens is what the model is surest of; whether
# the whole grid is right depends on the model, see docs/sudoku.md).
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
want = {"arch": "llada", "model": "gpt2", "vocab": 95, "merges": 0, "mask": "<|mdm_mask|>", "bos": "<|endoftext|>",
        "eos": "<|endoftext|>", "ctx": 244, "runnable": True, "template": "unmask.chat_template"}
got["template"] = t["template_from"]
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
# the markers are the file's template's: tokenize (no template) gives the bare puzzle, and
# every marker is one token of its own, in reading order
expect_rc tokenize-markers 0 "$BIN" tokenize -m "$MODEL" --ids-only --no-bos "<|r1c1|><|r1c2|><|r9c9|>"
if [ "$(cat "$TMP/out")" = "14 15 94" ]; then ok "cell markers are ids 14..94"; else fail markers "$(cat "$TMP/out")"; fi
expect_rc generate-json 0 "$BIN" generate -M sudoku -p "$puzzle" -t 1 --json
n_prompt=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["n_prompt"])' "$TMP/out")
if [ "$n_prompt" = 163 ]; then ok "the template lays out BOS + 81 markers + 81 cells"; else fail template "n_prompt $n_prompt"; fi
expect_rc generate 0 "$BIN" generate -q -M sudoku -p "$puzzle" -t 1
answer=$(tr -d '\n' <"$TMP/out")
if [[ $answer =~ ^[1-9]{81}$ ]]; then ok "answer is 81 digits"; else fail digits "'$answer'"; fi
keep=1
for ((i = 0; i < 81; i++)); do c=${puzzle:i:1}; [ "$c" = . ] || [ "$c" = "${answer:i:1}" ] || keep=0; done
if [ $keep = 1 ]; then ok "every given kept"; else fail givens "$puzzle -> $answer"; fi
finish
