/*
 * unicode_pre: the pre-tokenizers of byte-level BPE vocabularies, as hand-written scanners
 * over code points, plus the lenient UTF-8 decoding and character classes they rest on.
 *
 * Hugging Face tokenizers splits text with regular expressions before BPE (GPT-2's
 * "'s|'t|... ?\p{L}+| ?\p{N}+|...", Llama-3's, Qwen2's, DeepSeek's chains of splits).
 * Each regex is implemented here as a matcher that, at a code-point position, returns the
 * length of the match the regex engine would report there (leftmost-first alternation,
 * greedy quantifiers, the lookahead in "\s+(?!\S)" included), or 0. A split stage keeps the
 * matches and the text between them as separate pieces ("Isolated" behaviour); stages of a
 * chain each split the pieces of the previous one.
 *
 * Invariants: the pieces returned are non-empty, in order, and tile the input exactly (their
 * byte lengths sum to the input length), whatever the input. Invalid UTF-8 never fails: each
 * byte that does not start a well-formed sequence is one "character" of class OTHER, so it
 * stays in the pieces and reaches the byte-level BPE as that byte.
 * Character classes come from utf8proc's general categories (letters L*, numbers N*,
 * punctuation P*, symbols S*, marks M*); whitespace is the Unicode White_Space set.
 */
#ifndef UM_UNICODE_PRE_H
#define UM_UNICODE_PRE_H

#include <stddef.h>
#include <stdint.h>
#include "util.h"

/* Character class bits (a code point has one category bit and maybe UPRE_WS). */
enum {
    UPRE_L  = 1 << 0,           /* letter, \p{L} */
    UPRE_N  = 1 << 1,           /* number, \p{N} */
    UPRE_P  = 1 << 2,           /* punctuation, \p{P} */
    UPRE_S  = 1 << 3,           /* symbol, \p{S} */
    UPRE_M  = 1 << 4,           /* mark, \p{M} */
    UPRE_WS = 1 << 5,           /* Unicode White_Space, \s */
};

/* The pre-tokenizer families (several GGUF tokenizer.ggml.pre names map to each). */
typedef enum upre_kind {
    UPRE_GPT2,                  /* gpt-2, mpt, olmo, phi-2, ... : the GPT-2 regex */
    UPRE_LLAMA3,                /* llama3 / llama-bpe / dbrx / smaug-bpe: digits in runs of 1-3 */
    UPRE_QWEN2,                 /* qwen2, stablelm2, llada-moe: llama3 rules with single digits */
    UPRE_DEEPSEEK_LLM,          /* deepseek-llm: a chain of six splits */
    UPRE_DEEPSEEK_CODER,        /* deepseek-coder: a chain of five splits */
    UPRE_STARCODER,             /* starcoder, refact, smollm, ...: single digits, then GPT-2 */
    UPRE_FALCON,                /* falcon: punctuation runs, GPT-2, digit triples */
    UPRE_DEFAULT,               /* llama.cpp's default for BPE without a known pre-tokenizer */
    UPRE_COUNT
} upre_kind;

typedef struct upre_span {
    uint32_t off;               /* bytes from the start of the text */
    uint32_t len;               /* bytes, > 0 */
} upre_span;

/* Decode one code point from s[0..n) (n >= 1). Returns the bytes consumed (1..4) and sets
 * *cp; a byte that does not start a well-formed, shortest-form sequence (or a surrogate, or
 * a value above U+10FFFF) consumes 1 byte and sets *cp = UPRE_INVALID. */
#define UPRE_INVALID 0xFFFFFFFFu
size_t upre_utf8_decode(const uint8_t *s, size_t n, uint32_t *cp);

/* Encode cp as UTF-8 into out (4 bytes room); returns the byte count (0 if cp is invalid). */
size_t upre_utf8_encode(uint32_t cp, uint8_t out[4]);

/* Class bits of a code point (0 for UPRE_INVALID, unassigned, control and format chars). */
unsigned upre_class(uint32_t cp);

/* Split text[0..len) into pieces for the given pre-tokenizer. *spans is a heap array the
 * caller frees; *n is 0 for empty text. Fails only for text over 4 GiB or out of memory. */
int upre_split(upre_kind kind, const char *text, size_t len, upre_span **spans, size_t *n, um_err *e);

#endif
