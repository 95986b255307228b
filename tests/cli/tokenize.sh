# tokenize.sh: end-to-end tests of `unmask tokenize` on the vocabulary files in tests/data/vocab.
# Expected ids come from the .out conformance files (Hugging Face tokenizers) or, for BOS and
# special tokens, from the vocabularies' own ids (<s> = 1 in llama-spm, <|user|> = 32010 and
# <|end|> = 32007 in phi-3).
SUITE=tokenize
. "$(dirname "$0")/lib.sh"
V=tests/data/vocab

expect_rc "help exits 0" 0 "$BIN" tokenize --help
expect_grep "help lists options" "--ids-only" "$TMP/out"
expect_grep "help lists --no-bos" "--no-bos" "$TMP/out"
expect_grep "help lists --no-special" "--no-special" "$TMP/out"

expect_rc "gpt-2 ids" 0 "$BIN" tokenize -m $V/ggml-vocab-gpt-2.gguf --ids-only "Hello world"
expect_grep "gpt-2 'Hello world' is 15496 995" "^15496 995$" "$TMP/out"

expect_rc "gpt-2 pieces" 0 "$BIN" tokenize -m $V/ggml-vocab-gpt-2.gguf " Hello, world!"
expect_grep "pieces are id TAB 'piece'" "^18435	' Hello'$" "$TMP/out"
expect_grep "piece escapes nothing printable" "^0	'!'$" "$TMP/out"

expect_rc "spm adds BOS" 0 "$BIN" tokenize -m $V/ggml-vocab-llama-spm.gguf --ids-only "Hello world"
expect_grep "spm BOS then ids" "^1 15043 3186$" "$TMP/out"
expect_rc "spm --no-bos" 0 "$BIN" tokenize -m $V/ggml-vocab-llama-spm.gguf --ids-only --no-bos "Hello world"
expect_grep "spm no BOS" "^15043 3186$" "$TMP/out"

expect_rc "special tokens parsed" 0 "$BIN" tokenize -m $V/ggml-vocab-phi-3.gguf --ids-only --no-bos "<|user|>Hi<|end|>"
expect_grep "special ids" "^32010 [0-9]+ 32007$" "$TMP/out"
expect_rc "--no-special" 0 "$BIN" tokenize -m $V/ggml-vocab-phi-3.gguf --ids-only --no-bos --no-special "<|user|>"
if grep -qE "32010" "$TMP/out"; then fail "--no-special keeps <|user|> as text" "$(cat "$TMP/out")"; else ok "--no-special keeps <|user|> as text"; fi

printf 'a\377\342\202\n' > "$TMP/bad.txt"
expect_rc "invalid UTF-8 (BPE)" 0 "$BIN" tokenize -m $V/ggml-vocab-gpt-2.gguf -f "$TMP/bad.txt"
expect_grep "invalid byte shown escaped" "'\\\\xff'" "$TMP/out"
expect_rc "invalid UTF-8 (SPM byte fallback)" 0 "$BIN" tokenize -m $V/ggml-vocab-llama-spm.gguf -f "$TMP/bad.txt"
expect_grep "byte fallback token <0xFF> = 258" "^258	'\\\\xff'$" "$TMP/out"

expect_rc "missing -m" 2 "$BIN" tokenize "x"
expect_rc "unknown option" 2 "$BIN" tokenize -m $V/ggml-vocab-gpt-2.gguf --bogus "x"
expect_rc "missing file" 1 "$BIN" tokenize -m "$TMP/none.gguf" "x"
expect_grep "error names the file" "none.gguf" "$TMP/err"
expect_rc "not a GGUF" 1 "$BIN" tokenize -m $V/README.md "x"
finish
