#!/usr/bin/env bash
# info.sh: end-to-end tests of `unmask info` on the vocabulary files, the bundled tiny
# model, broken files (one-line error, exit 1) and hostile strings (escaped in text, valid JSON).
SUITE=info
. "$(dirname "$0")/lib.sh"
PY=python3
tiny=tests/data/tiny-llada.gguf

expect_rc "help exits 0" 0 "$BIN" info --help
expect_grep "help lists --json" '--json' "$TMP/out"
expect_rc "no file is a usage error" 2 "$BIN" info
expect_rc "unknown option is a usage error" 2 "$BIN" info --frobnicate "$tiny"

for f in tests/data/vocab/*.gguf; do
  n=$(basename "$f")
  expect_rc "$n: text" 0 "$BIN" info "$f"
  expect_grep "$n: vocabulary only" '^runnable: no: vocabulary only \(no weights\)$' "$TMP/out"
  expect_rc "$n: json" 0 "$BIN" info --json "$f"
  if $PY -m json.tool "$TMP/out" >/dev/null 2>"$TMP/jerr"; then ok "$n: json parses"; else fail "$n: json parses" "$(head -c 300 "$TMP/jerr")"; fi
done
"$BIN" info tests/data/vocab/ggml-vocab-gpt-2.gguf >"$TMP/out" 2>&1
expect_grep "gpt-2: vocab size" '^  vocab size +50257$' "$TMP/out"
expect_grep "gpt-2: merges" '^  merges +50000$' "$TMP/out"
expect_grep "gpt-2: eos token" "^  eos +50256 '<\|endoftext\|>'$" "$TMP/out"
"$BIN" info tests/data/vocab/ggml-vocab-llama-spm.gguf >"$TMP/out" 2>&1
expect_grep "llama-spm: model" '^  model +llama$' "$TMP/out"
expect_grep "llama-spm: hyper-parameters" '^  attention\.head_count_kv +32$' "$TMP/out"

expect_rc "tiny: text" 0 "$BIN" info "$tiny"
expect_grep "tiny: runnable" '^runnable: yes$' "$TMP/out"
expect_grep "tiny: mask id" "^  mask +102 '<\|mdm_mask\|>'$" "$TMP/out"
expect_grep "tiny: tensor row" '^  blk\.1\.ffn_down\.weight +q8_0 +32 x 32 +1088$' "$TMP/out"
expect_grep "tiny: chat template" '^  chat template +yes' "$TMP/out"
expect_rc "tiny: json" 0 "$BIN" info --json "$tiny"
if $PY -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["runnable"] is True and d["architecture"] == "llada" \
    and d["hyperparameters"]["block_count"] == 2 and len(d["tensors"]) == 20 and d["tokenizer"]["mask_token_id"] == 102 \
    and d["totals"]["params"] == sum(eval("*".join(map(str, t["shape"]))) for t in d["tensors"])' "$TMP/out" 2>"$TMP/jerr"
then ok "tiny: json fields"; else fail "tiny: json fields" "$(tail -c 300 "$TMP/jerr")"; fi

# runnable: the model loader's verdict, named
$PY - "$tiny" "$TMP" <<'PYEOF'
import sys
b = open(sys.argv[1], "rb").read()
i = b.index(b"llada", b.index(b"general.architecture") + 20)
open(sys.argv[2] + "/llama.gguf", "wb").write(b[:i] + b"llama" + b[i + 5:])
i = b.index(b"blk.1.ffn_up.weight")
open(sys.argv[2] + "/missing.gguf", "wb").write(b[:i] + b"blk.1.ffn_uq.weight" + b[i + 19:])
PYEOF
expect_rc "other architecture: text" 0 "$BIN" info "$TMP/llama.gguf"
expect_grep "other architecture: why" "^runnable: no: unknown architecture 'llama' \(supported: llada, dream, llada-moe, rnd1, llada2, diffusion-gemma\)$" "$TMP/out"
expect_rc "missing tensor: text" 0 "$BIN" info "$TMP/missing.gguf"
expect_grep "missing tensor: why" "^runnable: no: tensor 'blk\.1\.ffn_up\.weight' missing" "$TMP/out"
expect_rc "missing tensor: json" 0 "$BIN" info --json "$TMP/missing.gguf"
expect_grep "missing tensor: json why" '"runnable": false, "why_not": "tensor .blk\.1\.ffn_up\.weight. missing' "$TMP/out"

# broken files: exit 1 and exactly one line naming the file and the problem
head -c 1500 "$tiny" >"$TMP/trunc.gguf"     # cut inside the metadata
expect_rc "truncated: exit 1" 1 "$BIN" info "$TMP/trunc.gguf"
expect_grep "truncated: names the problem" "^unmask info: $TMP/trunc.gguf: (.* runs past end of file.*|truncated file: .*) \(at byte [0-9]+\)$" "$TMP/err"
[ "$(wc -l <"$TMP/err")" -eq 1 ] && ok "truncated: one line" || fail "truncated: one line" "$(cat "$TMP/err")"
expect_rc "data past end: exit 1" 1 "$BIN" info tests/fuzz/seeds/broken-data-past-end.gguf
expect_grep "data past end: message" "^unmask info: tests/fuzz/seeds/broken-data-past-end.gguf: tensor 't\.bb': data \[[0-9]+, [0-9]+\) ends past end of file \(size [0-9]+\) \(at byte [0-9]+\)$" "$TMP/err"
[ "$(wc -l <"$TMP/err")" -eq 1 ] && ok "data past end: one line" || fail "data past end: one line" "$(cat "$TMP/err")"
expect_rc "missing file: exit 1" 1 "$BIN" info "$TMP/nope.gguf"
expect_grep "missing file: message" "^unmask info: $TMP/nope.gguf: No such file or directory$" "$TMP/err"
expect_rc "not gguf: exit 1" 1 "$BIN" info tests/data/vocab/README.md
expect_grep "not gguf: message" '^unmask info: tests/data/vocab/README.md: bad magic 0x[0-9a-f]{8}, not a GGUF file \(at byte 0\)$' "$TMP/err"

# hostile strings: general.name "tiny-llada" becomes ESC [31m, two invalid UTF-8 bytes, a quote, a backslash
$PY - "$tiny" "$TMP/evil.gguf" <<'PYEOF'
import sys
b = open(sys.argv[1], "rb").read()
i = b.index(b"tiny-llada", b.index(b"general.name"))
open(sys.argv[2], "wb").write(b[:i] + b"\x1b[31m\xff\xfe\"\\x" + b[i + 10:])
PYEOF
expect_rc "hostile strings: text" 0 "$BIN" info "$TMP/evil.gguf"
if grep -q $'\x1b' "$TMP/out"; then fail "hostile strings: no raw ESC in text"; else ok "hostile strings: no raw ESC in text"; fi
expect_grep "hostile strings: escaped" '^  name +\\x1b\[31m' "$TMP/out"
expect_rc "hostile strings: json" 0 "$BIN" info --json "$TMP/evil.gguf"
if $PY -c 'import json,sys; d=json.load(open(sys.argv[1], encoding="utf-8")); assert d["general"]["name"] == "\x1b[31m\ufffd\ufffd\"\\x", d["general"]["name"]' "$TMP/out" 2>"$TMP/jerr"
then ok "hostile strings: json value"; else fail "hostile strings: json value" "$(tail -c 300 "$TMP/jerr")"; fi
finish
