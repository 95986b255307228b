#!/usr/bin/env bash
# verdict.sh: one verdict on whether a file runs (issue 25, points 5 and 6). `unmask info`'s
# "runnable" line and `unmask generate` go through the same function (model_load_runnable),
# so for every file: info says "yes" exactly when generate starts (its "model: ..." line: the
# model loaded and the run began; what a run then meets, such as weights holding NaN, is the
# run's), and when it says "no" its reason is generate's message byte for byte ("unmask
# generate: FILE: REASON"); a file that is not a GGUF at all fails both with one message.
# First the cases found by hand (a tokenizer or a number info used to pass), then the property
# over a corpus: tests/fuzz/seeds, what `make fuzz` left in build/fuzz/corpus (at most
# VERDICT_MAX files of it, default 300; UNMASK_VERDICT_CORPUS names another directory), every
# integer key of the tiny model set to the edges of its type, and byte flips of its metadata.
SUITE=verdict
. "$(dirname "$0")/lib.sh"
ROOT=${UNMASK_ROOT:-$PWD}
ED="python3 $ROOT/tests/cli/gguf_edit.py"
tiny=$ROOT/tests/data/tiny-llada.gguf
GEN_LOUD=(-p hi --gen 4 --steps 2 --ctx 512 -t 1)
GEN=("${GEN_LOUD[@]}" -q)

# case NAME WANT EDIT... : edit the tiny model (gguf_edit.py); info's reason must start with
# WANT ('yes': runnable); the property below then holds generate to the same words
case_() {
  local name=$1 want=$2 f="$TMP/case-$1.gguf"; shift 2
  if ! $ED "$tiny" "$f" "$@" 2>"$TMP/err"; then fail "$name: edit" "$(cat "$TMP/err")"; return; fi
  "$BIN" info "$f" >"$TMP/out" 2>&1
  local got; got=$(sed -n 's/^runnable: //p' "$TMP/out")
  [ "$want" = yes ] || want="no: $want"
  if [[ "$got" == "$want"* ]]; then ok "$name: info says $want"; else fail "$name: info" "got '$got', want '$want'"; fi
}
case_ "unknown tokenizer model" "tokenizer.ggml.model is 'foo'; supported: gpt2 (byte-level BPE), llama (SentencePiece)" \
  set:tokenizer.ggml.model:str:foo
case_ "unknown pre-tokenizer" "tokenizer.ggml.pre 'nope' is not supported; supported: default, gpt-2, " \
  set:tokenizer.ggml.pre:str:nope
case_ "token types shorter than tokens" "tokenizer.ggml.token_type: 50 entries for 103 tokens" \
  trunc:tokenizer.ggml.token_type:50
case_ "more tokens than embedding rows" "tokenizer has 108 tokens but the model only 103" \
  grow:tokenizer.ggml.tokens:5 grow:tokenizer.ggml.token_type:5
case_ "token strings stored as integers" "key 'tokenizer.ggml.tokens' has type array of int32, expected array of string" \
  ints:tokenizer.ggml.tokens
case_ "mask id 4294967295: invalid, with its value (not 'missing')" \
  "key 'tokenizer.ggml.mask_token_id' = 4294967295 is outside the vocabulary (103 tokens)" \
  set:tokenizer.ggml.mask_token_id:u32:4294967295
case_ "mask id = the vocabulary size (one past the last row)" \
  "key 'tokenizer.ggml.mask_token_id' = 103 is outside the vocabulary (103 tokens)" set:tokenizer.ggml.mask_token_id:u32:103
case_ "mask id = the last row" yes set:tokenizer.ggml.mask_token_id:u32:102
# the model's own check, where no tokenizer is read to repeat it: logits opens the model alone
if $ED "$tiny" "$TMP/mask103.gguf" set:tokenizer.ggml.mask_token_id:u32:103 2>"$TMP/err" &&
   ! "$BIN" logits -m "$TMP/mask103.gguf" --tokens 1,2,3 --reps 1 -t 1 >/dev/null 2>"$TMP/err" &&
   grep -qF "key 'tokenizer.ggml.mask_token_id' = 103 is outside the vocabulary (103 tokens)" "$TMP/err"
then ok "mask id = the vocabulary size: logits (the model without its tokenizer) refuses it too"
else fail "mask id = the vocabulary size, logits" "$(cat "$TMP/err")"; fi
# the other special ids (issue 25: once silently ignored): outside the vocabulary is invalid,
# named with the value, in info and generate alike (the property below); the last row is fine
for k in bos eos eot eom unknown padding seperator; do
  case_ "$k id = the vocabulary size" "key 'tokenizer.ggml.${k}_token_id' = 103 is outside the vocabulary (103 tokens)" \
    set:tokenizer.ggml.${k}_token_id:u32:103
done
case_ "eos id 4294967295" "key 'tokenizer.ggml.eos_token_id' = 4294967295 is outside the vocabulary (103 tokens)" \
  set:tokenizer.ggml.eos_token_id:u32:4294967295
case_ "eos id = the last row" yes set:tokenizer.ggml.eos_token_id:u32:102
case_ "one token more than embedding rows" "tokenizer has 104 tokens but the model only 103" \
  grow:tokenizer.ggml.tokens:1 grow:tokenizer.ggml.token_type:1
case_ "no mask id at all" "no tokenizer.ggml.mask_token_id: not a diffusion model file" del:tokenizer.ggml.mask_token_id
# the file's own chat template (unmask.chat_template): generate uses it, so a malformed one fails both
case_ "unmask.chat_template well formed" yes 'set:unmask.chat_template:str:user = "<|r1c1|>{user}"\nassistant = ""\n'
case_ "unmask.chat_template malformed" "unmask.chat_template:2: unknown key 'asistant'" \
  'set:unmask.chat_template:str:user = "{user}"\nasistant = ""\n'
case_ "unmask.chat_template not a string" "unmask.chat_template: has type uint32, expected string" \
  set:unmask.chat_template:u32:7
case_ "context_length 4294967295 (a valid uint32)" yes set:llada.context_length:u32:4294967295
"$BIN" info "$TMP/case-context_length 4294967295 (a valid uint32).gguf" >"$TMP/out"
expect_grep "context_length 4294967295: printed as it is, not -1" '^  context_length +4294967295$' "$TMP/out"
expect_rc "context_length 4294967295: generate runs (not 'trained context of -1')" 0 \
  "$BIN" generate -m "$TMP/case-context_length 4294967295 (a valid uint32).gguf" -p hi --gen 4 --steps 2 -q
case_ "context_length 0: invalid, with its value" "key 'llada.context_length' = 0 is invalid (must be 1..4294967295)" \
  set:llada.context_length:u32:0
case_ "feed_forward_length 0: invalid, not 'missing'" "key 'llada.feed_forward_length' = 0 is invalid (must be 1..1048576)" \
  set:llada.feed_forward_length:u32:0
case_ "feed_forward_length absent: missing" "required key 'llada.feed_forward_length' missing" del:llada.feed_forward_length
case_ "block_count 4294967295" "key 'llada.block_count' = 4294967295 is invalid (must be 1..8192)" \
  set:llada.block_count:u32:4294967295
"$BIN" info "$ROOT/tests/data/vocab/ggml-vocab-gpt-2.gguf" >"$TMP/out" 2>&1
expect_grep "a vocabulary file: info's reason" '^runnable: no: vocabulary only \(no weights\)$' "$TMP/out"

# ---------------------------------------------------------------- the property, over a corpus
mkdir -p "$TMP/corpus"
cp "$ROOT"/tests/fuzz/seeds/*.gguf "$TMP"/case-*.gguf "$TMP/corpus/" 2>/dev/null
extra=${UNMASK_VERDICT_CORPUS:-$ROOT/build/fuzz/corpus}
n_extra=0
if [ -d "$extra" ]; then
  for f in $(ls "$extra" | sort | head -n "${VERDICT_MAX:-300}"); do cp "$extra/$f" "$TMP/corpus/fuzz-$f"; n_extra=$((n_extra + 1)); done
fi
python3 - "$tiny" "$TMP/corpus" "$ROOT/tests/cli" <<'PY'
# every integer key at the edges of its type (and as another integer type), byte flips in the metadata
import random, sys
sys.path.insert(0, sys.argv[3])
import gguf_edit as ge
src, out = sys.argv[1], sys.argv[2]
edges = {0: [0, 1, 255], 1: [-128, -1, 0, 127], 2: [0, 65535], 3: [-32768, -1, 32767], 4: [0, 1, 2**31 - 1, 2**31, 2**32 - 1],
         5: [-2**31, -1, 0, 2**31 - 1], 10: [0, 2**32, 2**63, 2**64 - 1], 11: [-2**63, -1, 0, 2**63 - 1]}
g0 = ge.load(src)
n = 0
for i, (k, t, v) in enumerate(g0.kv):
    for x in edges.get(t, []):
        g = ge.load(src)
        g.kv[i][2] = x
        g.write("%s/edge-%02d-%d.gguf" % (out, i, n)); n += 1
    if t in (4, 5):                       # the same key as another integer type
        for nt, x in ((10, 2**32 + 5), (11, -5), (2, 7)):
            g = ge.load(src)
            g.kv[i][1], g.kv[i][2] = nt, x
            g.write("%s/retype-%02d-%d.gguf" % (out, i, n)); n += 1
raw = open(src, "rb").read()
meta = len(raw) - len(g0.data)
rng = random.Random(25)
for j in range(120):
    b = bytearray(raw)
    for _ in range(rng.choice((1, 1, 2, 4))):
        b[rng.randrange(24, meta)] ^= 1 << rng.randrange(8)
    open("%s/flip-%03d.gguf" % (out, j), "wb").write(bytes(b))
PY
n_files=0; agree=0; runnable=0
for f in "$TMP"/corpus/*; do
  n_files=$((n_files + 1))
  "$BIN" info "$f" >"$TMP/info.out" 2>"$TMP/info.err"; irc=$?
  # not quiet: generate prints "model: ..." once the model is loaded and the run starts
  timeout 30 "$BIN" generate -m "$f" "${GEN_LOUD[@]}" >/dev/null 2>"$TMP/gen.raw" </dev/null; grc=$?
  tr '\r' '\n' <"$TMP/gen.raw" >"$TMP/gen.all"
  started=0; grep -q '^model: ' "$TMP/gen.all" && started=1
  msg=$(grep -m1 '^unmask generate: ' "$TMP/gen.all")
  why=""
  if [ $irc -ne 0 ]; then              # not a GGUF at all: the same message from both
    a=$(sed 's/^unmask info: //' "$TMP/info.err")
    [ $grc -eq 1 ] && [ $started = 0 ] && [ "$a" = "${msg#unmask generate: }" ] || why="info failed with '$a', generate (exit $grc) said '$msg'"
  else
    v=$(sed -n 's/^runnable: //p' "$TMP/info.out")
    if [ "$v" = yes ]; then
      runnable=$((runnable + 1))
      [ $started = 1 ] || why="info says yes, generate did not start (exit $grc): $msg"
    else
      want="unmask generate: $f: ${v#no: }"
      [ $started = 0 ] && [ "$msg" = "$want" ] || why="info says '$v', generate (exit $grc, started $started) said '$msg'"
    fi
  fi
  if [ -z "$why" ]; then agree=$((agree + 1)); else fail "verdict: $(basename "$f")" "$why"; fi
done
if [ "$agree" -eq "$n_files" ] && [ "$n_files" -gt 100 ] && [ "$runnable" -gt 5 ]; then
  ok "info's verdict is generate's over $n_files files ($runnable runnable, $n_extra from $extra)"
else fail "verdict property" "$agree of $n_files agree, $runnable runnable"; fi
finish
