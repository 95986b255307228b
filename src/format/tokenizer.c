/*
 * tokenizer: byte-level BPE and SentencePiece-style encoding, decoding to raw bytes.
 *
 * Layout: hash maps; the GPT-2 byte table; loading (vocabulary, merges, specials, pieces);
 * special-token partitioning; the merge loop shared by BPE and SPM; encode; decode.
 *
 * Invariants kept by a loaded tokenizer (all checked at load, never changed after):
 *   - text_off / piece_off have n_vocab + 1 ascending entries into their arenas;
 *   - the token map holds every token text; for duplicate texts a model token (NORMAL, BYTE,
 *     ...) beats an added one (CONTROL, USER_DEFINED, UNKNOWN), else the last id wins as in
 *     llama.cpp;
 *   - the merge map holds (left id, right id) -> (rank, merged id) for every merge whose two
 *     halves and result are tokens (the first occurrence of a pair wins);
 *   - specials[] lists CONTROL / USER_DEFINED / UNKNOWN ids, longest text first, and smap /
 *     slens / sfirst index exactly those texts.
 * Behaviour follows llama.cpp's llama-vocab.cpp (which matches Hugging Face tokenizers on the
 * conformance files), except: "clean up tokenization spaces" is never applied on decode;
 * invalid UTF-8 is split byte by byte instead of failing; the duplicate rule above; and a
 * byte-level token holding a character outside GPT-2's table decodes to that character's
 * UTF-8 rather than an "[UNK_BYTE_...]" marker.
 */
#include "tokenizer.h"
#include "unicode_pre.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* ------------------------------------------------------------------ hash maps */

static uint64_t hash_bytes(const void *p, size_t n) {
    const uint8_t *s = p;
    uint64_t h = 0xcbf29ce484222325ull;             /* FNV-1a, 64-bit */
    for (size_t i = 0; i < n; i++) { h ^= s[i]; h *= 0x100000001b3ull; }
    return h ^ (h >> 29);
}

static uint64_t hash_u64(uint64_t x) {
    x ^= x >> 33; x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33; x *= 0xc4ceb9fe1a85ec53ull;
    return x ^ (x >> 33);
}

static uint32_t table_size_for(size_t n) {
    uint32_t cap = 16;
    while (cap < 2 * n) cap <<= 1;                   /* load factor <= 0.5 */
    return cap;
}

int32_t tok_find(const tokenizer *t, const char *s, size_t len) {
    uint32_t i = (uint32_t)hash_bytes(s, len) & t->tmap_mask;
    for (;;) {
        int32_t id = t->tmap[i];
        if (id < 0) return -1;
        uint32_t o = t->text_off[id];
        if (t->text_off[id + 1] - o == len && memcmp(t->text + o, s, len) == 0) return id;
        i = (i + 1) & t->tmap_mask;
    }
}

static bool is_added(uint8_t ty) {
    return ty == TOK_TYPE_CONTROL || ty == TOK_TYPE_USER_DEFINED || ty == TOK_TYPE_UNKNOWN;
}

static void tmap_insert(tokenizer *t, int32_t id) {
    uint32_t o = t->text_off[id], len = t->text_off[id + 1] - o;
    uint32_t i = (uint32_t)hash_bytes(t->text + o, len) & t->tmap_mask;
    for (;;) {
        int32_t cur = t->tmap[i];
        if (cur < 0) { t->tmap[i] = id; return; }
        uint32_t co = t->text_off[cur];
        if (t->text_off[cur + 1] - co == len && memcmp(t->text + co, t->text + o, len) == 0) {
            /* duplicate text: a model token beats an added one (DeepSeek adds "ÿ" etc. as
             * USER_DEFINED copies of byte-level tokens; the byte must stay the byte), else
             * the last id wins as in llama.cpp */
            if (is_added(t->type[id]) <= is_added(t->type[cur])) t->tmap[i] = id;
            return;
        }
        i = (i + 1) & t->tmap_mask;
    }
}

/* Returns the slot of (l, r) in the merge map, or -1. */
static int64_t merge_find(const tokenizer *t, int32_t l, int32_t r) {
    uint64_t key = (uint64_t)(uint32_t)l << 32 | (uint32_t)r;
    uint32_t i = (uint32_t)hash_u64(key) & t->mmask;
    for (;;) {
        if (t->mkey[i] == UINT64_MAX) return -1;
        if (t->mkey[i] == key) return i;
        i = (i + 1) & t->mmask;
    }
}

static void merge_insert(tokenizer *t, int32_t l, int32_t r, uint32_t rank, int32_t res) {
    uint64_t key = (uint64_t)(uint32_t)l << 32 | (uint32_t)r;
    uint32_t i = (uint32_t)hash_u64(key) & t->mmask;
    while (t->mkey[i] != UINT64_MAX) {
        if (t->mkey[i] == key) return;               /* first occurrence (lowest rank) wins */
        i = (i + 1) & t->mmask;
    }
    t->mkey[i] = key;
    t->mrank[i] = rank;
    t->mres[i] = res;
}

/* ------------------------------------------------------------------ GPT-2 byte table */

/* GPT-2 maps every byte to a printable code point: bytes that are printable Latin-1
 * (! to ~, ¡ to ¬, ® to ÿ) map to themselves, the other 68 to U+0100 + n in byte order.
 * So every table code point is below U+0144. */
#define BYTE_CP_END 0x144

static bool byte_is_printable(uint32_t b) {
    return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
}

static void build_byte_tables(tokenizer *t) {
    uint32_t n = 0;
    for (uint32_t cp = 0; cp < BYTE_CP_END; cp++) t->cp_byte[cp] = -1;
    for (uint32_t b = 0; b < 256; b++) {
        uint32_t cp = byte_is_printable(b) ? b : 0x100 + n++;
        t->byte_cp[b] = (uint16_t)cp;
        t->cp_byte[cp] = (int16_t)b;
    }
}

static uint32_t byte_to_cp(const tokenizer *t, uint8_t b) { return t->byte_cp[b]; }

/* Inverse: -1 for a code point outside the table. */
static int cp_to_byte(const tokenizer *t, uint32_t cp) { return cp < BYTE_CP_END ? t->cp_byte[cp] : -1; }

/* ------------------------------------------------------------------ loading */

static const struct pre_entry {
    const char *name;
    upre_kind   kind;
    bool        ignore_merges;
    bool        add_bos;            /* default before tokenizer.ggml.add_bos_token */
} pre_table[] = {
    { "default",          UPRE_DEFAULT,        false, false },
    { "gpt-2",            UPRE_GPT2,           false, false },
    { "phi-2",            UPRE_GPT2,           false, false },
    { "mpt",              UPRE_GPT2,           false, false },
    { "olmo",             UPRE_GPT2,           false, false },
    { "jais",             UPRE_GPT2,           false, false },
    { "gigachat",         UPRE_GPT2,           false, false },
    { "exaone4",          UPRE_GPT2,           false, false },
    { "llama3",           UPRE_LLAMA3,         true,  true  },
    { "llama-v3",         UPRE_LLAMA3,         true,  true  },
    { "llama-bpe",        UPRE_LLAMA3,         true,  true  },
    { "falcon3",          UPRE_LLAMA3,         true,  true  },
    { "pixtral",          UPRE_LLAMA3,         true,  true  },
    { "dbrx",             UPRE_LLAMA3,         false, false },
    { "smaug-bpe",        UPRE_LLAMA3,         false, false },
    { "qwen2",            UPRE_QWEN2,          false, false },
    { "deepseek-r1-qwen", UPRE_QWEN2,          false, false },
    { "stablelm2",        UPRE_QWEN2,          false, false },
    { "megrez",           UPRE_QWEN2,          false, false },
    { "hunyuan",          UPRE_QWEN2,          false, false },
    { "llada-moe",        UPRE_QWEN2,          false, false },
    { "bailingmoe",       UPRE_QWEN2,          false, false },
    { "bailingmoe2",      UPRE_QWEN2,          false, false },
    { "deepseek-llm",     UPRE_DEEPSEEK_LLM,   false, false },
    { "deepseek-coder",   UPRE_DEEPSEEK_CODER, false, false },
    { "starcoder",        UPRE_STARCODER,      false, false },
    { "refact",           UPRE_STARCODER,      false, false },
    { "command-r",        UPRE_STARCODER,      false, false },
    { "smollm",           UPRE_STARCODER,      false, false },
    { "codeshell",        UPRE_STARCODER,      false, false },
    { "exaone",           UPRE_STARCODER,      false, false },
    { "minerva-7b",       UPRE_STARCODER,      false, false },
    { "falcon",           UPRE_FALCON,         false, false },
};

static const char *const eot_texts[] = {
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<|end_of_text|>", "<EOT>",
};

static int tok_alloc_fail(um_err *e) { return um_errf(e, "tokenizer: out of memory loading the vocabulary"); }

/* Optional integer key: absent leaves *id as is; present and in range sets it; out of range
 * or negative is ignored as llama.cpp does (the model's default stays). */
static int read_special(const gguf_file *g, const char *key, int32_t n_vocab, int32_t *id, um_err *e) {
    const gguf_kv *kv = gguf_find_kv(g, key);
    if (!kv) return UM_OK;
    uint64_t v;
    if (gguf_get_u64(g, key, &v, e) != UM_OK) return UM_FAIL;
    if (v < (uint64_t)n_vocab) *id = (int32_t)v;
    return UM_OK;
}

static int read_flag(const gguf_file *g, const char *key, bool *v, um_err *e) {
    if (!gguf_find_kv(g, key)) return UM_OK;
    return gguf_get_bool(g, key, v, e);
}

static int hex_digit(uint8_t c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
}

/* Bytes of token id's decoded piece, written to out. Never longer than the token's text:
 * a GPT-2 table character (1-2 bytes) becomes one byte, U+2581 (3 bytes) one space, <0xNN>
 * one byte, anything else is copied. */
static size_t make_piece(const tokenizer *t, int32_t id, uint8_t *out) {
    const uint8_t *s = (const uint8_t *)t->text + t->text_off[id];
    size_t n = t->text_off[id + 1] - t->text_off[id];
    tok_type ty = (tok_type)t->type[id];
    if (ty == TOK_TYPE_BYTE && n == 6 && memcmp(s, "<0x", 3) == 0 && s[5] == '>') {
        int hi = hex_digit(s[3]), lo = hex_digit(s[4]);
        if (hi >= 0 && lo >= 0) { out[0] = (uint8_t)(hi << 4 | lo); return 1; }
    }
    if (ty == TOK_TYPE_CONTROL || ty == TOK_TYPE_USER_DEFINED || ty == TOK_TYPE_UNKNOWN ||
        ty == TOK_TYPE_UNUSED || ty == TOK_TYPE_BYTE) {
        memcpy(out, s, n);
        return n;
    }
    size_t k = 0;
    if (t->model == TOK_MODEL_SPM) {
        for (size_t i = 0; i < n; ) {
            if (i + 3 <= n && s[i] == 0xE2 && s[i + 1] == 0x96 && s[i + 2] == 0x81) { out[k++] = ' '; i += 3; }
            else out[k++] = s[i++];
        }
        return k;
    }
    for (size_t i = 0; i < n; ) {
        uint32_t cp;
        size_t c = upre_utf8_decode(s + i, n - i, &cp);
        int b = cp == UPRE_INVALID ? -1 : cp_to_byte(t, cp);
        if (b >= 0) out[k++] = (uint8_t)b;
        else { memcpy(out + k, s + i, c); k += c; }
        i += c;
    }
    return k;
}

static int load_vocab(tokenizer *t, const gguf_file *g, um_err *e) {
    const gguf_kv *toks;
    if (gguf_get_arr(g, "tokenizer.ggml.tokens", GGUF_TYPE_STRING, &toks, e) != UM_OK) return UM_FAIL;
    if (toks->arr_n == 0 || toks->arr_n > MAX_VOCAB)
        return um_errf(e, "tokenizer.ggml.tokens: %llu tokens (expected 1 to %d)",
                       (unsigned long long)toks->arr_n, MAX_VOCAB);
    int32_t n = (int32_t)toks->arr_n;
    t->n_vocab = n;

    uint64_t total = 0;
    for (int32_t i = 0; i < n; i++) total += toks->arr_str[i].len;
    if (total >= UINT32_MAX / 4)
        return um_errf(e, "tokenizer.ggml.tokens: %llu bytes of token text is too much",
                       (unsigned long long)total);

    t->text      = malloc(total + 1);
    t->text_off  = malloc(((size_t)n + 1) * sizeof *t->text_off);
    t->type      = malloc((size_t)n);
    t->score     = calloc((size_t)n, sizeof *t->score);
    t->tmap_mask = table_size_for((size_t)n) - 1;
    t->tmap      = malloc(((size_t)t->tmap_mask + 1) * sizeof *t->tmap);
    if (!t->text || !t->text_off || !t->type || !t->score || !t->tmap) return tok_alloc_fail(e);

    uint32_t o = 0;
    for (int32_t i = 0; i < n; i++) {
        t->text_off[i] = o;
        memcpy(t->text + o, toks->arr_str[i].ptr, toks->arr_str[i].len);
        o += (uint32_t)toks->arr_str[i].len;
        t->type[i] = TOK_TYPE_NORMAL;
    }
    t->text_off[n] = o;

    const gguf_kv *kv = gguf_find_kv(g, "tokenizer.ggml.token_type");
    if (kv) {
        if (gguf_get_arr(g, "tokenizer.ggml.token_type", GGUF_TYPE_COUNT, &kv, e) != UM_OK) return UM_FAIL;
        if (kv->arr_type != GGUF_TYPE_INT32 && kv->arr_type != GGUF_TYPE_UINT32)
            return um_errf(e, "tokenizer.ggml.token_type: array of %s, expected int32", gguf_type_name(kv->arr_type));
        if (kv->arr_n < (uint64_t)n)
            return um_errf(e, "tokenizer.ggml.token_type: %llu entries for %d tokens",
                           (unsigned long long)kv->arr_n, n);
        for (int32_t i = 0; i < n; i++) {
            int64_t ty = gguf_arr_i64(kv, (uint64_t)i);
            t->type[i] = (ty >= TOK_TYPE_NORMAL && ty <= TOK_TYPE_BYTE) ? (uint8_t)ty : TOK_TYPE_UNDEFINED;
        }
    }
    memset(t->tmap, 0xFF, ((size_t)t->tmap_mask + 1) * sizeof *t->tmap);
    for (int32_t i = 0; i < n; i++)
        if (t->text_off[i + 1] > t->text_off[i]) tmap_insert(t, i);

    kv = gguf_find_kv(g, "tokenizer.ggml.scores");
    if (kv) {
        if (gguf_get_arr(g, "tokenizer.ggml.scores", GGUF_TYPE_COUNT, &kv, e) != UM_OK) return UM_FAIL;
        if (kv->arr_type != GGUF_TYPE_FLOAT32 && kv->arr_type != GGUF_TYPE_INT32)
            return um_errf(e, "tokenizer.ggml.scores: array of %s, expected float32", gguf_type_name(kv->arr_type));
        if (kv->arr_n < (uint64_t)n)
            return um_errf(e, "tokenizer.ggml.scores: %llu entries for %d tokens",
                           (unsigned long long)kv->arr_n, n);
        for (int32_t i = 0; i < n; i++) t->score[i] = (float)gguf_arr_f64(kv, (uint64_t)i);
    }
    return UM_OK;
}

static int load_merges(tokenizer *t, const gguf_file *g, um_err *e) {
    const gguf_kv *kv;
    if (gguf_get_arr(g, "tokenizer.ggml.merges", GGUF_TYPE_STRING, &kv, e) != UM_OK) return UM_FAIL;
    if (kv->arr_n > UINT32_MAX / 4)
        return um_errf(e, "tokenizer.ggml.merges: %llu merges is too many", (unsigned long long)kv->arr_n);
    t->mmask = table_size_for(kv->arr_n) - 1;
    size_t cap = (size_t)t->mmask + 1;
    t->mkey  = malloc(cap * sizeof *t->mkey);
    t->mrank = malloc(cap * sizeof *t->mrank);
    t->mres  = malloc(cap * sizeof *t->mres);
    if (!t->mkey || !t->mrank || !t->mres) return tok_alloc_fail(e);
    memset(t->mkey, 0xFF, cap * sizeof *t->mkey);

    char  stack_buf[512];
    char *buf = stack_buf;
    size_t buf_cap = sizeof stack_buf;
    for (uint64_t r = 0; r < kv->arr_n; r++) {
        const char *s = kv->arr_str[r].ptr;
        size_t n = kv->arr_str[r].len;
        /* "left right", split at the first space after the first byte (a half may start
         * with a space character in vocabularies that do not byte-encode) */
        const char *sp = n > 1 ? memchr(s + 1, ' ', n - 1) : NULL;
        if (!sp) continue;
        size_t ln = (size_t)(sp - s), rn = n - ln - 1;
        int32_t l = tok_find(t, s, ln), rr = tok_find(t, sp + 1, rn);
        if (l < 0 || rr < 0) continue;
        if (ln + rn > buf_cap) {
            char *nb = malloc(ln + rn);
            if (!nb) { if (buf != stack_buf) free(buf); return tok_alloc_fail(e); }
            if (buf != stack_buf) free(buf);
            buf = nb;
            buf_cap = ln + rn;
        }
        memcpy(buf, s, ln);
        memcpy(buf + ln, sp + 1, rn);
        int32_t res = tok_find(t, buf, ln + rn);
        if (res < 0) continue;
        merge_insert(t, l, rr, (uint32_t)r, res);
    }
    if (buf != stack_buf) free(buf);
    return UM_OK;
}

/* Rank in specials[] of the special token whose text is s[0..len), or -1. */
static int32_t special_rank(const tokenizer *t, const char *s, size_t len) {
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

static int cmp_special(const void *a, const void *b, void *ctx) {
    const tokenizer *t = ctx;
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    uint32_t lx = t->text_off[x + 1] - t->text_off[x], ly = t->text_off[y + 1] - t->text_off[y];
    if (lx != ly) return lx > ly ? -1 : 1;
    return (x > y) - (x < y);
}

static int load_specials(tokenizer *t, const gguf_file *g, um_err *e) {
    tok_specials *sp = &t->sp;
    int32_t n = t->n_vocab;
    sp->bos = sp->eos = sp->eot = sp->eom = sp->unk = sp->pad = sp->sep = sp->mask = -1;
    if (t->model == TOK_MODEL_SPM) {
        sp->bos = n > 1 ? 1 : -1;
        sp->eos = n > 2 ? 2 : -1;
        sp->unk = 0;
        sp->add_bos = true;
        sp->add_space_prefix = true;
    } else {
        sp->bos = sp->eos = n > 11 ? 11 : -1;        /* llama.cpp's gpt2 defaults */
    }
    static const struct { const char *key; size_t field; } keys[] = {
        { "tokenizer.ggml.bos_token_id",     offsetof(tok_specials, bos) },
        { "tokenizer.ggml.eos_token_id",     offsetof(tok_specials, eos) },
        { "tokenizer.ggml.eot_token_id",     offsetof(tok_specials, eot) },
        { "tokenizer.ggml.eom_token_id",     offsetof(tok_specials, eom) },
        { "tokenizer.ggml.unknown_token_id", offsetof(tok_specials, unk) },
        { "tokenizer.ggml.padding_token_id", offsetof(tok_specials, pad) },
        { "tokenizer.ggml.seperator_token_id", offsetof(tok_specials, sep) },
        { "tokenizer.ggml.mask_token_id",    offsetof(tok_specials, mask) },
    };
    for (size_t i = 0; i < UM_ARRAY_LEN(keys); i++)
        if (read_special(g, keys[i].key, n, (int32_t *)((char *)sp + keys[i].field), e) != UM_OK) return UM_FAIL;
    if (read_flag(g, "tokenizer.ggml.add_bos_token", &sp->add_bos, e) != UM_OK) return UM_FAIL;
    if (read_flag(g, "tokenizer.ggml.add_eos_token", &sp->add_eos, e) != UM_OK) return UM_FAIL;
    if (t->model == TOK_MODEL_SPM &&
        read_flag(g, "tokenizer.ggml.add_space_prefix", &sp->add_space_prefix, e) != UM_OK) return UM_FAIL;
    if (sp->add_bos && sp->bos < 0)
        return um_errf(e, "tokenizer.ggml.add_bos_token is true but there is no valid bos_token_id");
    if (sp->add_eos && sp->eos < 0)
        return um_errf(e, "tokenizer.ggml.add_eos_token is true but there is no valid eos_token_id");

    /* end of turn by text when the file does not say, as llama.cpp does */
    if (sp->eot < 0)
        for (size_t i = 0; i < UM_ARRAY_LEN(eot_texts) && sp->eot < 0; i++)
            sp->eot = tok_find(t, eot_texts[i], strlen(eot_texts[i]));
    if (sp->eom < 0) sp->eom = tok_find(t, "<|eom_id|>", 10);
    int32_t cand[3 + UM_ARRAY_LEN(eot_texts)];
    int nc = 0;
    cand[nc++] = sp->eos; cand[nc++] = sp->eot; cand[nc++] = sp->eom;
    for (size_t i = 0; i < UM_ARRAY_LEN(eot_texts); i++) {
        int32_t id = tok_find(t, eot_texts[i], strlen(eot_texts[i]));
        if (id >= 0 && (t->type[id] == TOK_TYPE_CONTROL || t->type[id] == TOK_TYPE_USER_DEFINED)) cand[nc++] = id;
    }
    for (int i = 0; i < nc; i++) {
        bool seen = cand[i] < 0;
        for (int j = 0; j < t->n_eog && !seen; j++) seen = t->eog[j] == cand[i];
        if (!seen && t->n_eog < MAX_EOG) t->eog[t->n_eog++] = cand[i];
    }

    size_t ns = 0;
    for (int32_t i = 0; i < n; i++) {
        uint8_t ty = t->type[i];
        if ((ty == TOK_TYPE_CONTROL || ty == TOK_TYPE_USER_DEFINED || ty == TOK_TYPE_UNKNOWN) &&
            t->text_off[i + 1] > t->text_off[i]) ns++;
    }
    t->specials = malloc((ns ? ns : 1) * sizeof *t->specials);
    if (!t->specials) return tok_alloc_fail(e);
    for (int32_t i = 0; i < n; i++) {
        uint8_t ty = t->type[i];
        if ((ty == TOK_TYPE_CONTROL || ty == TOK_TYPE_USER_DEFINED || ty == TOK_TYPE_UNKNOWN) &&
            t->text_off[i + 1] > t->text_off[i]) t->specials[t->n_specials++] = i;
    }
    qsort_r(t->specials, t->n_specials, sizeof *t->specials, cmp_special, t);

    /* index for partition(): text -> lowest rank, the distinct lengths, the first bytes */
    t->smap_mask = table_size_for(t->n_specials) - 1;
    t->smap = malloc(((size_t)t->smap_mask + 1) * sizeof *t->smap);
    t->slens = malloc((t->n_specials ? t->n_specials : 1) * sizeof *t->slens);
    if (!t->smap || !t->slens) return tok_alloc_fail(e);
    memset(t->smap, 0xFF, ((size_t)t->smap_mask + 1) * sizeof *t->smap);
    for (size_t k = 0; k < t->n_specials; k++) {
        int32_t id = t->specials[k];
        const char *st = t->text + t->text_off[id];
        uint32_t sl = t->text_off[id + 1] - t->text_off[id];
        if (special_rank(t, st, sl) >= 0) continue;            /* same text, lower rank kept */
        uint32_t i = (uint32_t)hash_bytes(st, sl) & t->smap_mask;
        while (t->smap[i] >= 0) i = (i + 1) & t->smap_mask;
        t->smap[i] = (int32_t)k;
        if (!t->n_slens || t->slens[t->n_slens - 1] != sl) t->slens[t->n_slens++] = sl;
        t->sfirst[(uint8_t)st[0] >> 3] |= (uint8_t)(1u << (st[0] & 7));
    }
    return UM_OK;
}

static int load_pieces(tokenizer *t, um_err *e) {
    int32_t n = t->n_vocab;
    size_t cap = (size_t)t->text_off[n] + 1;        /* pieces are never longer than texts */
    t->piece = malloc(cap);
    t->piece_off = malloc(((size_t)n + 1) * sizeof *t->piece_off);
    if (!t->piece || !t->piece_off) return tok_alloc_fail(e);
    uint32_t o = 0;
    for (int32_t i = 0; i < n; i++) {
        t->piece_off[i] = o;
        o += (uint32_t)make_piece(t, i, t->piece + o);
    }
    t->piece_off[n] = o;

    for (int b = 0; b < 256; b++) {
        t->byte_tok[b] = -1;
        if (t->model == TOK_MODEL_BPE) {
            uint8_t u[4];
            size_t k = upre_utf8_encode(byte_to_cp(t, (uint8_t)b), u);
            t->byte_tok[b] = tok_find(t, (const char *)u, k);
        } else {
            static const char hex[] = "0123456789ABCDEF";
            char s[6] = { '<', '0', 'x', hex[b >> 4], hex[b & 15], '>' };
            char c = (char)b;
            int32_t id = tok_find(t, s, 6);
            if (id < 0) id = tok_find(t, &c, 1);
            if (id < 0) id = t->sp.unk;
            t->byte_tok[b] = id;
        }
    }
    return UM_OK;
}

int tok_load(tokenizer **out, const gguf_file *g, um_err *e) {
    *out = NULL;
    tokenizer *t = calloc(1, sizeof *t);
    if (!t) return tok_alloc_fail(e);

    char model[32];
    if (gguf_get_str(g, "tokenizer.ggml.model", model, sizeof model, e) != UM_OK) goto fail;
    if (!strcmp(model, "gpt2")) t->model = TOK_MODEL_BPE;
    else if (!strcmp(model, "llama")) t->model = TOK_MODEL_SPM;
    else {
        um_errf(e, "tokenizer.ggml.model is '%s'; supported: gpt2 (byte-level BPE), llama (SentencePiece)", model);
        goto fail;
    }
    if (gguf_find_kv(g, "tokenizer.ggml.pre") &&
        gguf_get_str(g, "tokenizer.ggml.pre", t->pre_name, sizeof t->pre_name, e) != UM_OK) goto fail;

    bool add_bos_default = false;
    if (t->model == TOK_MODEL_BPE) {
        const char *name = t->pre_name[0] ? t->pre_name : "default";
        size_t i = 0;
        while (i < UM_ARRAY_LEN(pre_table) && strcmp(pre_table[i].name, name)) i++;
        if (i == UM_ARRAY_LEN(pre_table)) {
            char list[1024] = "";
            for (size_t j = 0; j < UM_ARRAY_LEN(pre_table); j++) {
                size_t l = strlen(list);
                snprintf(list + l, sizeof list - l, "%s%s", j ? ", " : "", pre_table[j].name);
            }
            um_errf(e, "tokenizer.ggml.pre '%s' is not supported; supported: %s", name, list);
            goto fail;
        }
        t->pre = pre_table[i].kind;
        t->ignore_merges = pre_table[i].ignore_merges;
        add_bos_default = pre_table[i].add_bos;
    }

    build_byte_tables(t);
    if (load_vocab(t, g, e) != UM_OK) goto fail;
    if (t->model == TOK_MODEL_BPE && load_merges(t, g, e) != UM_OK) goto fail;
    if (t->model == TOK_MODEL_BPE) t->sp.add_bos = add_bos_default;
    if (load_specials(t, g, e) != UM_OK) goto fail;
    if (load_pieces(t, e) != UM_OK) goto fail;
    *out = t;
    return UM_OK;
fail:
    tok_free(t);
    return UM_FAIL;
}

int tok_load_file(tokenizer **out, const char *path, um_err *e) {
    gguf_file *g;
    *out = NULL;
    if (gguf_open(&g, path, e) != UM_OK) return UM_FAIL;
    int rc = tok_load(out, g, e);
    if (rc != UM_OK) um_err_prefix(e, "%s", path);
    gguf_close(g);
    return rc;
}

void tok_free(tokenizer *t) {
    if (!t) return;
    free(t->text); free(t->text_off); free(t->piece); free(t->piece_off);
    free(t->type); free(t->score); free(t->tmap);
    free(t->mkey); free(t->mrank); free(t->mres); free(t->specials); free(t->smap); free(t->slens);
    free(t);
}

/* ------------------------------------------------------------------ accessors */

int32_t             tok_n_vocab(const tokenizer *t)    { return t->n_vocab; }
tok_model           tok_model_kind(const tokenizer *t) { return t->model; }
const char         *tok_pre_name(const tokenizer *t)   { return t->pre_name; }
const tok_specials *tok_special(const tokenizer *t)    { return &t->sp; }

bool tok_is_eog(const tokenizer *t, int32_t id) {
    for (int i = 0; i < t->n_eog; i++)
        if (t->eog[i] == id) return true;
    return false;
}

const char *tok_text(const tokenizer *t, int32_t id, size_t *len) {
    if (id < 0 || id >= t->n_vocab) { *len = 0; return NULL; }
    *len = t->text_off[id + 1] - t->text_off[id];
    return t->text + t->text_off[id];
}

tok_type tok_get_type(const tokenizer *t, int32_t id) {
    return (id < 0 || id >= t->n_vocab) ? TOK_TYPE_UNDEFINED : (tok_type)t->type[id];
}

const uint8_t *tok_piece(const tokenizer *t, int32_t id, size_t *len) {
    if (id < 0 || id >= t->n_vocab) { *len = 0; return NULL; }
    *len = t->piece_off[id + 1] - t->piece_off[id];
    return t->piece + t->piece_off[id];
}

/* ------------------------------------------------------------------ output buffer */

typedef struct idbuf {
    int32_t *v;                 /* (cap) token ids */
    size_t   n, cap;
    bool     oom;
} idbuf;

static void idbuf_push(idbuf *b, int32_t id) {
    if (b->oom) return;
    if (b->n == b->cap) {
        size_t cap = b->cap ? 2 * b->cap : 64;
        int32_t *v = realloc(b->v, cap * sizeof *v);
        if (!v) { b->oom = true; return; }
        b->v = v;
        b->cap = cap;
    }
    b->v[b->n++] = id;
}

/* ------------------------------------------------------------------ merge loop */

/* A symbol is a run of bytes of the text being merged; merged-away symbols have len 0. */
typedef struct sym {
    int32_t  id;                /* BPE: token of this run (-1 if none); SPM: unused */
    uint32_t off, len;          /* bytes into the work text */
    int32_t  prev, next;        /* neighbours, -1 at the ends */
} sym;

/* A candidate merge of symbols left and right = left->next. Lower prio first, then the
 * leftmost: BPE prio is the merge rank, SPM prio is minus the merged token's score. */
typedef struct cand {
    double   prio;
    int32_t  left, right;
    uint32_t llen, rlen;        /* lengths when queued; a changed length means stale */
    int32_t  id;                /* the merged token */
} cand;

typedef struct heap {
    cand  *v;
    size_t n, cap;
    bool   oom;
} heap;

static bool cand_before(const cand *a, const cand *b) {
    return a->prio < b->prio || (a->prio == b->prio && a->left < b->left);
}

static void heap_push(heap *h, cand c) {
    if (h->oom) return;
    if (h->n == h->cap) {
        size_t cap = h->cap ? 2 * h->cap : 64;
        cand *v = realloc(h->v, cap * sizeof *v);
        if (!v) { h->oom = true; return; }
        h->v = v;
        h->cap = cap;
    }
    size_t i = h->n++;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!cand_before(&c, &h->v[p])) break;
        h->v[i] = h->v[p];
        i = p;
    }
    h->v[i] = c;
}

static cand heap_pop(heap *h) {
    cand top = h->v[0], last = h->v[--h->n];
    size_t i = 0;
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        const cand *best = &last;
        if (l < h->n && cand_before(&h->v[l], best)) { m = l; best = &h->v[l]; }
        if (r < h->n && cand_before(&h->v[r], best)) { m = r; }
        if (m == i) break;
        h->v[i] = h->v[m];
        i = m;
    }
    if (h->n) h->v[i] = last;
    return top;
}

typedef struct work {
    sym   *s;                   /* (cap) symbols */
    size_t cap;
    heap   h;
    char  *buf;                 /* (buf_cap) scratch text */
    size_t buf_cap;
    bool   oom;
} work;

static bool work_reserve(work *w, size_t n_sym, size_t n_buf) {
    if (n_sym > w->cap) {
        sym *s = realloc(w->s, n_sym * sizeof *s);
        if (!s) return !(w->oom = true);
        w->s = s;
        w->cap = n_sym;
    }
    if (n_buf > w->buf_cap) {
        char *b = realloc(w->buf, n_buf);
        if (!b) return !(w->oom = true);
        w->buf = b;
        w->buf_cap = n_buf;
    }
    return true;
}

/* Queue the merge of symbols l and r if the vocabulary has it. text is the work text. */
static void try_pair(const tokenizer *t, work *w, const char *text, int32_t l, int32_t r) {
    if (l < 0 || r < 0) return;
    const sym *a = &w->s[l], *b = &w->s[r];
    cand c = { 0, l, r, a->len, b->len, -1 };
    if (t->model == TOK_MODEL_BPE) {
        if (a->id < 0 || b->id < 0) return;
        int64_t slot = merge_find(t, a->id, b->id);
        if (slot < 0) return;
        c.prio = t->mrank[slot];
        c.id = t->mres[slot];
    } else {
        int32_t id = tok_find(t, text + a->off, (size_t)a->len + b->len);
        if (id < 0) return;
        c.prio = -(double)t->score[id];
        c.id = id;
    }
    heap_push(&w->h, c);
}

/* Merge the linked symbols s[0..n) of text until no queued pair applies. */
static void merge_all(const tokenizer *t, work *w, const char *text, int32_t n) {
    w->h.n = 0;
    for (int32_t i = 0; i + 1 < n; i++) try_pair(t, w, text, i, i + 1);
    while (w->h.n) {
        cand c = heap_pop(&w->h);
        sym *a = &w->s[c.left], *b = &w->s[c.right];
        if (a->len != c.llen || b->len != c.rlen || a->len == 0 || b->len == 0) continue;
        a->len += b->len;
        a->id = c.id;
        b->len = 0;
        a->next = b->next;
        if (b->next >= 0) w->s[b->next].prev = c.left;
        try_pair(t, w, text, a->prev, c.left);
        try_pair(t, w, text, c.left, a->next);
    }
    if (w->h.oom) w->oom = true;
}

/* ------------------------------------------------------------------ models */

static void bpe_piece(const tokenizer *t, work *w, const char *p, size_t n, idbuf *out) {
    if (t->ignore_merges) {
        /* the piece as byte-level text: each byte is one 1- or 2-byte character */
        if (!work_reserve(w, 0, 2 * n)) return;
        size_t k = 0;
        for (size_t i = 0; i < n; i++) k += upre_utf8_encode(byte_to_cp(t, (uint8_t)p[i]), (uint8_t *)w->buf + k);
        int32_t id = tok_find(t, w->buf, k);
        if (id >= 0) { idbuf_push(out, id); return; }
    }
    if (!work_reserve(w, n, 0)) return;
    for (size_t i = 0; i < n; i++)
        w->s[i] = (sym){ t->byte_tok[(uint8_t)p[i]], (uint32_t)i, 1, (int32_t)i - 1,
                         i + 1 < n ? (int32_t)i + 1 : -1 };
    merge_all(t, w, p, (int32_t)n);
    for (int32_t i = 0; i >= 0 && n; i = w->s[i].next)
        if (w->s[i].id >= 0) idbuf_push(out, w->s[i].id);
}

static void bpe_fragment(const tokenizer *t, work *w, const char *text, size_t len, idbuf *out, um_err *e) {
    upre_span *sp;
    size_t ns;
    if (upre_split(t->pre, text, len, &sp, &ns, e) != UM_OK) { w->oom = true; return; }
    for (size_t i = 0; i < ns && !w->oom; i++) bpe_piece(t, w, text + sp[i].off, sp[i].len, out);
    free(sp);
}

static void spm_fragment(const tokenizer *t, work *w, const char *text, size_t len, bool prefix, idbuf *out) {
    /* work text: optional leading space, then every ' ' as U+2581 (3 bytes) */
    size_t cap = 3 * (len + 1);
    if (!work_reserve(w, len + 1, cap)) return;
    char *s = w->buf;
    size_t k = 0;
    if (prefix) { memcpy(s, "\xE2\x96\x81", 3); k = 3; }
    for (size_t i = 0; i < len; i++) {
        if (text[i] == ' ') { memcpy(s + k, "\xE2\x96\x81", 3); k += 3; }
        else s[k++] = text[i];
    }
    int32_t n = 0;
    for (size_t i = 0; i < k; ) {
        uint32_t cp;
        size_t c = upre_utf8_decode((const uint8_t *)s + i, k - i, &cp);
        w->s[n] = (sym){ -1, (uint32_t)i, (uint32_t)c, n - 1, -1 };
        if (n > 0) w->s[n - 1].next = n;
        n++;
        i += c;
    }
    merge_all(t, w, s, n);
    for (int32_t i = 0; i >= 0 && n; i = w->s[i].next) {
        const sym *y = &w->s[i];
        int32_t id = tok_find(t, s + y->off, y->len);
        if (id >= 0) { idbuf_push(out, id); continue; }
        for (uint32_t j = 0; j < y->len; j++) {       /* byte fallback */
            int32_t b = t->byte_tok[(uint8_t)s[y->off + j]];
            if (b >= 0) idbuf_push(out, b);
        }
    }
}

/* ------------------------------------------------------------------ special tokens */

typedef struct frag {
    int32_t  id;                /* a special token, or -1 for text */
    uint32_t off, len;          /* text: bytes into the input */
} frag;

typedef struct fraglist {
    frag  *v;
    size_t n, cap;
} fraglist;

static bool frag_push(fraglist *l, frag f) {
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 16;
        frag *v = realloc(l->v, cap * sizeof *v);
        if (!v) return false;
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = f;
    return true;
}

typedef struct occ { uint32_t rank, pos; } occ;    /* a special token's text found at pos */

static int cmp_occ(const void *a, const void *b) {
    const occ *x = a, *y = b;
    if (x->rank != y->rank) return x->rank < y->rank ? -1 : 1;
    return (x->pos > y->pos) - (x->pos < y->pos);
}

static int cmp_occ_pos(const void *a, const void *b) {
    const occ *x = a, *y = b;
    return (x->pos > y->pos) - (x->pos < y->pos);
}

/* Split the text around special tokens with llama.cpp's tokenizer_st_partition result:
 * tokens are taken longest first (specials[] order); each one's occurrences are matched left
 * to right in the text not yet taken by a longer one. Rather than scanning the text once per
 * special (slow with tens of thousands of them), every occurrence of every special is found
 * in one pass (hash lookups at the positions whose byte starts some special, one per distinct
 * length), then accepted in (rank, position) order when none of its bytes is taken yet: the
 * same outcome, since an occurrence overlapping an accepted one is exactly one that the
 * fragment splitting would no longer see. Without parse_special only USER_DEFINED tokens
 * count, as Hugging Face does with added tokens that are not special. */
static bool partition(const tokenizer *t, const char *text, size_t len, bool parse_special, fraglist *out) {
    occ *found = NULL, *acc = NULL;
    size_t nc = 0, cap = 0, na = 0;
    uint8_t *taken = NULL;
    bool ok = false;
    for (size_t p = 0; p < len && t->n_specials; p++) {
        uint8_t b = (uint8_t)text[p];
        if (!(t->sfirst[b >> 3] & (1u << (b & 7)))) continue;
        for (size_t li = 0; li < t->n_slens; li++) {
            size_t sl = t->slens[li];
            if (sl > len - p) continue;
            int32_t k = special_rank(t, text + p, sl);
            if (k < 0) continue;
            if (!parse_special && t->type[t->specials[k]] != TOK_TYPE_USER_DEFINED) continue;
            if (nc == cap) {
                cap = cap ? 2 * cap : 16;
                occ *v = realloc(found, cap * sizeof *v);
                if (!v) goto done;
                found = v;
            }
            found[nc++] = (occ){ (uint32_t)k, (uint32_t)p };
        }
    }
    if (nc) {
        qsort(found, nc, sizeof *found, cmp_occ);
        taken = calloc(len, 1);
        acc = malloc(nc * sizeof *acc);
        if (!taken || !acc) goto done;
        for (size_t i = 0; i < nc; i++) {
            int32_t id = t->specials[found[i].rank];
            size_t sl = t->text_off[id + 1] - t->text_off[id];
            if (memchr(taken + found[i].pos, 1, sl)) continue;
            memset(taken + found[i].pos, 1, sl);
            acc[na++] = found[i];
        }
        qsort(acc, na, sizeof *acc, cmp_occ_pos);
    }
    size_t pos = 0;
    for (size_t i = 0; i < na; i++) {
        int32_t id = t->specials[acc[i].rank];
        if (acc[i].pos > pos && !frag_push(out, (frag){ -1, (uint32_t)pos, acc[i].pos - (uint32_t)pos })) goto done;
        if (!frag_push(out, (frag){ id, 0, 0 })) goto done;
        pos = acc[i].pos + (t->text_off[id + 1] - t->text_off[id]);
    }
    if (pos < len && !frag_push(out, (frag){ -1, (uint32_t)pos, (uint32_t)(len - pos) })) goto done;
    ok = true;
done:
    free(found);
    free(acc);
    free(taken);
    if (!ok) { free(out->v); *out = (fraglist){ 0 }; }
    return ok;
}

/* ------------------------------------------------------------------ encode / decode */

int tok_encode(const tokenizer *t, const char *text, size_t len, unsigned flags,
               int32_t **ids, size_t *n, um_err *e) {
    *ids = NULL;
    *n = 0;
    if (len >= UINT32_MAX / 4) return um_errf(e, "tokenize: text of %zu bytes is too long (limit 1 GiB)", len);
    idbuf out = { 0 };
    work w = { 0 };
    fraglist fr = { 0 };
    um_err local = { { 0 } };

    if ((flags & TOK_ADD_SPECIAL) && t->sp.add_bos) idbuf_push(&out, t->sp.bos);
    if (len > 0 && !partition(t, text, len, flags & TOK_PARSE_SPECIAL, &fr)) w.oom = true;
    bool prev_special = true;                       /* SPM: a space prefix starts each text run */
    for (size_t i = 0; i < fr.n && !w.oom; i++) {
        const frag *f = &fr.v[i];
        if (f->id >= 0) { idbuf_push(&out, f->id); prev_special = true; continue; }
        if (t->model == TOK_MODEL_BPE) bpe_fragment(t, &w, text + f->off, f->len, &out, &local);
        else spm_fragment(t, &w, text + f->off, f->len, t->sp.add_space_prefix && prev_special, &out);
        prev_special = false;
    }
    if ((flags & TOK_ADD_SPECIAL) && t->sp.add_eos) idbuf_push(&out, t->sp.eos);

    free(fr.v); free(w.s); free(w.h.v); free(w.buf);
    if (w.oom || out.oom) {
        free(out.v);
        if (local.msg[0]) return um_errf(e, "%s", local.msg);
        return um_errf(e, "tokenize: out of memory for %zu bytes of text", len);
    }
    *ids = out.v;
    *n = out.n;
    return UM_OK;
}

static bool is_hidden(tok_type ty) {
    return ty == TOK_TYPE_CONTROL || ty == TOK_TYPE_UNKNOWN || ty == TOK_TYPE_UNUSED;
}

int tok_decode(const tokenizer *t, const int32_t *ids, size_t n, unsigned flags,
               char **out, size_t *len, um_err *e) {
    *out = NULL;
    *len = 0;
    size_t total = 0;
    for (size_t i = 0; i < n; i++) {
        if (ids[i] < 0 || ids[i] >= t->n_vocab)
            return um_errf(e, "detokenize: token id %d at position %zu is outside the vocabulary (0..%d)",
                           ids[i], i, t->n_vocab - 1);
        total += t->piece_off[ids[i] + 1] - t->piece_off[ids[i]];
    }
    char *s = malloc(total + 1);
    if (!s) return um_errf(e, "detokenize: out of memory for %zu bytes", total);
    bool strip = t->model == TOK_MODEL_SPM && t->sp.add_space_prefix && !(flags & TOK_DECODE_KEEP_PREFIX);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        tok_type ty = (tok_type)t->type[ids[i]];
        if (is_hidden(ty) && !(flags & TOK_DECODE_SPECIAL)) continue;
        size_t pl;
        const uint8_t *p = tok_piece(t, ids[i], &pl);
        if (strip && !is_hidden(ty)) {
            if (pl && p[0] == ' ') { p++; pl--; }
            strip = false;
        }
        memcpy(s + k, p, pl);
        k += pl;
    }
    s[k] = 0;
    *out = s;
    *len = k;
    return UM_OK;
}

size_t tok_utf8_complete_len(const uint8_t *s, size_t n) {
    /* look for a lead byte among the last 3 bytes whose sequence runs past the end */
    for (size_t back = 1; back <= 3 && back <= n; back++) {
        uint8_t b = s[n - back];
        if ((b & 0xC0) == 0x80) continue;               /* continuation: keep looking */
        size_t need = (b & 0xE0) == 0xC0 ? 2 : (b & 0xF0) == 0xE0 ? 3 : (b & 0xF8) == 0xF0 ? 4 : 1;
        if (need <= back) return n;                     /* complete (or ASCII / invalid) */
        /* the bytes present must be a valid start of a sequence to be worth waiting for */
        uint8_t tmp[4] = { 0x80, 0x80, 0x80, 0x80 };
        memcpy(tmp, s + n - back, back);
        if (b == 0xE0 && back >= 2 && tmp[1] < 0xA0) return n;      /* overlong */
        if (b == 0xED && back >= 2 && tmp[1] > 0x9F) return n;      /* surrogate */
        if (b == 0xF0 && back >= 2 && tmp[1] < 0x90) return n;      /* overlong */
        if (b == 0xF4 && back >= 2 && tmp[1] > 0x8F) return n;      /* above U+10FFFF */
        if (b == 0xC0 || b == 0xC1 || b > 0xF4) return n;           /* never valid */
        return n - back;
    }
    return n;
}
