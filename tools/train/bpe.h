/*
 * bpe: a byte-level BPE tokenizer trainer that writes a GGUF "gpt2" tokenizer.
 *
 * Text is split with the engine's own GPT-2 pre-tokenizer (src/format/unicode_pre.h), so the
 * pieces the trainer counts are exactly the pieces unmask's tokenizer will merge. Merges
 * are learnt greedily: the most frequent adjacent pair over all pieces (ties: smallest
 * (left id, right id)) becomes the next merge, until the vocabulary is full.
 *
 * Vocabulary layout (n_vocab ids):
 *   [0, 256)             the bytes; token text is GPT-2's byte-to-unicode form of the byte
 *   [256, n_vocab - 2)   merged tokens, in merge order
 *   n_vocab - 2          <|endoftext|>  (control; EOS, also BOS, between documents)
 *   n_vocab - 1          <|mdm_mask|>   (control; the diffusion mask)
 * Invariants: token texts are unique; every merge "A B" names two tokens whose
 * concatenation is a token; merge rank = line order.
 *
 * A character vocabulary (bpe_chars) is the same "gpt2" kind with no merges: one token per
 * given byte (ids in the order given), then <|endoftext|> and <|mdm_mask|>; the file asks
 * for a BOS (<|endoftext|>) before every prompt, so position 0 is always the same token.
 * Text of those bytes encodes one token per byte in unmask and in llama.cpp (bytes outside
 * the set have no token and are dropped by both).
 */
#ifndef UM_TRAIN_BPE_H
#define UM_TRAIN_BPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gguf.h"
#include "util.h"

#define BPE_N_SPECIAL 2

typedef struct bpe_vocab {
    int32_t   n_vocab;          /* tokens, specials included */
    int32_t   n_merges;
    char    **text;             /* (n_vocab) byte-level token text, NUL-terminated */
    uint8_t **bytes;            /* (n_vocab) raw bytes a token stands for */
    uint32_t *n_bytes;          /* (n_vocab) */
    int32_t  *type;             /* (n_vocab) tok_type: 1 normal, 3 control */
    int32_t (*merge)[3];        /* (n_merges) left id, right id, result id */
    int32_t   eos_id, mask_id;
    bool      add_bos;          /* tokenizer.ggml.add_bos_token (bpe_train: false) */
    void     *pair_rank;        /* hash (left, right) -> rank, for bpe_encode */
} bpe_vocab;

/* Learn a vocabulary of n_vocab tokens (>= 256 + BPE_N_SPECIAL + 1) from texts. */
int  bpe_train(bpe_vocab **out, const char *const *texts, const size_t *lens, int n_texts,
               int32_t n_vocab, um_err *e);
void bpe_free(bpe_vocab *v);

/* A character vocabulary of the n_chars distinct bytes chars (no merges, see above). */
int  bpe_chars(bpe_vocab **out, const char *chars, size_t n_chars, um_err *e);

/* Append a control token (type 3) with the given text after the vocabulary's last token
 * (e.g. the sudoku model's cell markers <|r1c1|>...<|r9c9|>, after <|mdm_mask|>). Text
 * already in the vocabulary is an error. bpe_free frees it with the rest. */
int  bpe_add_control(bpe_vocab *v, const char *text, um_err *e);

/* The trainer's own segmentation (vocabularies from bpe_train only): GPT-2 pieces, then merges by rank. *ids is heap (free()). */
int  bpe_encode(const bpe_vocab *v, const char *text, size_t len, int32_t **ids, size_t *n, um_err *e);

/* Write the tokenizer.ggml.* keys (model "gpt2", pre "gpt-2", tokens, types, merges, ids). */
int  bpe_write_kv(const bpe_vocab *v, gguf_writer *w, um_err *e);

#endif
