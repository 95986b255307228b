/*
 * tokenizer_impl: the loaded tokenizer's layout (invariants in tokenizer.c's header) and
 * the lookups both halves use, private to src/format: tokenizer_load.c builds it from a
 * GGUF file, tokenizer.c encodes and decodes with it.
 */
#ifndef UM_TOKENIZER_IMPL_H
#define UM_TOKENIZER_IMPL_H

#include <stdint.h>
#include <string.h>

#include "tokenizer.h"
#include "unicode_pre.h"

#define MAX_VOCAB   (1 << 24)       /* far above any real vocabulary (LLaDA: 126464) */
#define MAX_EOG     16

struct tokenizer {
    tok_model    model;
    upre_kind    pre;               /* BPE only */
    char         pre_name[64];
    bool         ignore_merges;     /* BPE: a piece that is a whole token is taken as is */
    int32_t      n_vocab;

    char        *text;              /* arena: every token's vocabulary text, back to back */
    uint32_t    *text_off;          /* (n_vocab + 1) byte offsets into text */
    uint8_t     *piece;             /* arena: every token's decoded bytes */
    uint32_t    *piece_off;         /* (n_vocab + 1) byte offsets into piece */
    uint8_t     *type;              /* (n_vocab) tok_type */
    float       *score;             /* (n_vocab) SPM merge scores; 0 when absent */

    int32_t     *tmap;              /* (tmap_mask + 1) token ids by text hash, -1 empty */
    uint32_t     tmap_mask;

    uint64_t    *mkey;              /* (mmask + 1) left << 32 | right, UINT64_MAX empty */
    uint32_t    *mrank;             /* (mmask + 1) merge rank (its line in the merges list) */
    int32_t     *mres;              /* (mmask + 1) id of the merged token */
    uint32_t     mmask;

    uint16_t     byte_cp[256];      /* GPT-2 table: byte -> code point */
    int16_t      cp_byte[0x144];    /* and back, -1 for code points outside the table */
    int32_t      byte_tok[256];     /* token for a lone byte (BPE: its table character; SPM:
                                       <0xNN>, else the 1-byte token, else unk), -1 if none */
    int32_t     *specials;          /* (n_specials) see invariants */
    size_t       n_specials;
    int32_t     *smap;              /* (smap_mask + 1) rank in specials[] by text hash, -1 empty */
    uint32_t     smap_mask;
    uint32_t    *slens;             /* (n_slens) distinct special text lengths, descending */
    size_t       n_slens;
    uint8_t      sfirst[32];        /* bit set of the first bytes of special texts */

    tok_specials sp;
    int32_t      eog[MAX_EOG];
    int          n_eog;
};

/* ------------------------------------------------------------------ lookups */

static inline uint64_t hash_bytes(const void *p, size_t n) {
    const uint8_t *s = p;
    uint64_t h = 0xcbf29ce484222325ull;             /* FNV-1a, 64-bit */
    for (size_t i = 0; i < n; i++) { h ^= s[i]; h *= 0x100000001b3ull; }
    return h ^ (h >> 29);
}

static inline uint64_t hash_u64(uint64_t x) {
    x ^= x >> 33; x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33; x *= 0xc4ceb9fe1a85ec53ull;
    return x ^ (x >> 33);
}

static inline bool is_added(uint8_t ty) {
    return ty == TOK_TYPE_CONTROL || ty == TOK_TYPE_USER_DEFINED || ty == TOK_TYPE_UNKNOWN;
}

/* Returns the slot of (l, r) in the merge map, or -1. */
static inline int64_t merge_find(const tokenizer *t, int32_t l, int32_t r) {
    uint64_t key = (uint64_t)(uint32_t)l << 32 | (uint32_t)r;
    uint32_t i = (uint32_t)hash_u64(key) & t->mmask;
    for (;;) {
        if (t->mkey[i] == UINT64_MAX) return -1;
        if (t->mkey[i] == key) return i;
        i = (i + 1) & t->mmask;
    }
}

/* GPT-2 maps every byte to a printable code point: bytes that are printable Latin-1
 * (! to ~, ¡ to ¬, ® to ÿ) map to themselves, the other 68 to U+0100 + n in byte order.
 * So every table code point is below U+0144. */
#define BYTE_CP_END 0x144

static inline uint32_t byte_to_cp(const tokenizer *t, uint8_t b) { return t->byte_cp[b]; }

/* Inverse: -1 for a code point outside the table. */
static inline int cp_to_byte(const tokenizer *t, uint32_t cp) { return cp < BYTE_CP_END ? t->cp_byte[cp] : -1; }


/* Rank in specials[] of the special token whose text is s[0..len), or -1. */
static inline int32_t special_rank(const tokenizer *t, const char *s, size_t len) {
    uint32_t i = (uint32_t)hash_bytes(s, len) & t->smap_mask;
    for (;;) {
        int32_t k = t->smap[i];
        if (k < 0) return -1;
        int32_t id = t->specials[k];
        uint32_t o = t->text_off[id];
        if (t->text_off[id + 1] - o == len && memcmp(t->text + o, s, len) == 0) return k;
        i = (i + 1) & t->smap_mask;
    }
}

#endif
