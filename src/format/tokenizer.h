/*
 * tokenizer: text <-> token ids for the vocabularies stored in GGUF files.
 *
 * Two models, chosen by tokenizer.ggml.model:
 *   "gpt2"  byte-level BPE: the pre-tokenizer named by tokenizer.ggml.pre splits the text
 *           (unicode_pre.h), each piece's bytes go through GPT-2's byte<->unicode table and
 *           are merged by rank (tokenizer.ggml.merges).
 *   "llama" SentencePiece-style: optional space prefix, ' ' -> U+2581, score-based merging
 *           (tokenizer.ggml.scores), byte fallback to <0xNN> tokens.
 *   "gemma4" SentencePiece-style BPE (Gemma 4, DiffusionGemma; llama.cpp's LLAMA_VOCAB_PRE_TYPE_GEMMA4):
 *           ' ' -> U+2581 with no prefix, the text cut only into runs of newlines and runs of
 *           anything else (a newline run that is a token is taken whole), merges by rank
 *           (tokenizer.ggml.merges) over UTF-8 characters, byte fallback to <0xNN> tokens,
 *           BOS always added (llama.cpp overrides add_bos_token to true for it).
 * Tokens typed CONTROL, USER_DEFINED or UNKNOWN (tokenizer.ggml.token_type) are recognised in
 * the text when TOK_PARSE_SPECIAL is given, longest token first, as llama.cpp does.
 *
 * Invariants: a loaded tokenizer is immutable and owns all its memory (it does not keep the
 * gguf_file), so it may be shared by threads. Every id it returns is in [0, n_vocab).
 * tok_piece() gives the exact bytes a token decodes to, which may be a partial UTF-8
 * sequence; tok_decode() concatenates those bytes, so sequences split across tokens join.
 * No input text makes encode fail except for size limits and out-of-memory: invalid UTF-8
 * is tokenised byte by byte.
 */
#ifndef UM_TOKENIZER_H
#define UM_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>
#include "util.h"
#include "gguf.h"

typedef struct tokenizer tokenizer;

typedef enum tok_model { TOK_MODEL_BPE, TOK_MODEL_SPM, TOK_MODEL_GEMMA4 } tok_model;

/* tokenizer.ggml.token_type values (llama.cpp's llama_token_type). */
typedef enum tok_type {
    TOK_TYPE_UNDEFINED    = 0,
    TOK_TYPE_NORMAL       = 1,
    TOK_TYPE_UNKNOWN      = 2,
    TOK_TYPE_CONTROL      = 3,
    TOK_TYPE_USER_DEFINED = 4,
    TOK_TYPE_UNUSED       = 5,
    TOK_TYPE_BYTE         = 6,
} tok_type;

/* Special ids, -1 where the vocabulary has none. */
typedef struct tok_specials {
    int32_t bos, eos, eot, eom, unk, pad, sep, mask;
    bool    add_bos;            /* tokenizer.ggml.add_bos_token, else the model's default */
    bool    add_eos;            /* tokenizer.ggml.add_eos_token, else false */
    bool    add_space_prefix;   /* SPM: tokenizer.ggml.add_space_prefix, default true */
} tok_specials;

/* Load from an open GGUF file. Errors name the key at fault ("tokenizer.ggml.merges: ..."). */
int  tok_load(tokenizer **out, const gguf_file *g, um_err *e);
/* Convenience: open path, load, close. */
int  tok_load_file(tokenizer **out, const char *path, um_err *e);
void tok_free(tokenizer *t);

int32_t             tok_n_vocab(const tokenizer *t);
tok_model           tok_model_kind(const tokenizer *t);
const char         *tok_pre_name(const tokenizer *t);   /* tokenizer.ggml.pre as read ("" if absent) */
const tok_specials *tok_special(const tokenizer *t);
/* End of generation: eos, eot, eom, or a token whose text marks the end of a turn. */
bool                tok_is_eog(const tokenizer *t, int32_t id);

/* Vocabulary text of a token as stored (byte-level or U+2581 form), not NUL-terminated;
 * NULL for an id out of range. */
const char *tok_text(const tokenizer *t, int32_t id, size_t *len);
tok_type    tok_get_type(const tokenizer *t, int32_t id);
/* Id of the token whose vocabulary text is exactly s[0..len), or -1. */
int32_t     tok_find(const tokenizer *t, const char *s, size_t len);

/* The raw bytes a token stands for (byte-level table undone, U+2581 -> ' ', <0xNN> -> the
 * byte). CONTROL, UNKNOWN and UNUSED tokens give their vocabulary text here; tok_decode
 * leaves them out unless asked. Not NUL-terminated; NULL for an id out of range. */
const uint8_t *tok_piece(const tokenizer *t, int32_t id, size_t *len);

/* For showing pieces as they come: the length of the longest prefix of s[0..n) that does
 * not end inside a UTF-8 sequence that later bytes could still complete. Bytes that can
 * never be valid count as complete (show them as U+FFFD); at most 3 bytes are held back. */
size_t tok_utf8_complete_len(const uint8_t *s, size_t n);

#define TOK_ADD_SPECIAL   1u    /* encode: add BOS / EOS as the file says */
#define TOK_PARSE_SPECIAL 2u    /* encode: recognise special-token text in the input */

/* Encode text[0..len). *ids is a heap array (free()); *n may be 0. */
int tok_encode(const tokenizer *t, const char *text, size_t len, unsigned flags,
               int32_t **ids, size_t *n, um_err *e);

#define TOK_DECODE_SPECIAL      1u  /* render CONTROL / UNKNOWN / UNUSED tokens' text */
#define TOK_DECODE_KEEP_PREFIX  2u  /* SPM: keep the space the encoder put before the text */

/* Decode ids into a NUL-terminated heap string (free()); *len excludes the NUL and the text
 * may contain any bytes (it is what the tokens spell, valid UTF-8 or not). With
 * add_space_prefix (SPM) the leading space of the first text token is dropped, as llama.cpp
 * does, so decode(encode(x)) == x; control tokens before it (BOS) do not count. */
int tok_decode(const tokenizer *t, const int32_t *ids, size_t n, unsigned flags,
               char **out, size_t *len, um_err *e);

#endif
