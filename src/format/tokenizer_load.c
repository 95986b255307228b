/*
 * tokenizer_load: builds a tokenizer from a GGUF file's tokenizer.ggml.* keys (vocabulary,
 * merges, special tokens, decoded pieces) and checks every invariant tokenizer.c's header
 * lists, once, at load. Hostile files get a one-line error, never a crash.
 */
#include "tokenizer_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ hash maps */

static uint32_t table_size_for(size_t n) {
    uint32_t cap = 16;
    while (cap < 2 * n) cap <<= 1;                   /* load factor <= 0.5 */
    return cap;
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
    "<turn|>",                          /* Gemma 4 (llama-vocab.cpp lists it among the end-of-generation texts) */
};

static int tok_alloc_fail(um_err *e) { return um_errf(e, "tokenizer: out of memory loading the vocabulary"); }

/* Optional integer key: absent leaves *id as is; present and in range sets it; out of range
 * or negative is ignored as llama.cpp does (the model's default stays). */
static int read_special(const gguf_file *g, const char *key, int32_t n_vocab, int32_t *id, um_err *e) {
    const gguf_kv *kv = gguf_find_kv(g, key);
    if (!kv) return UM_OK;
    uint64_t v;
    if (gguf_get_u64(g, key, &v, e) != UM_OK) return UM_FAIL;
    /* a present id outside the vocabulary is invalid, reported with its value (the verdict's
     * rule for every key, docs/info.md): never silently replaced by a default */
    if (v >= (uint64_t)n_vocab)
        return um_errf(e, "key '%s' = %llu is outside the vocabulary (%d tokens)", key, (unsigned long long)v, n_vocab);
    *id = (int32_t)v;
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
    /* Gemma's whitespace-run tokens ("▁▁", ...) are added tokens, so the converter types them
     * USER_DEFINED; they stand for spaces (Hugging Face decodes them so; llama.cpp prints the
     * text as is), so gemma4 decodes its user-defined tokens' U+2581 as spaces */
    const bool gemma4_user = t->model == TOK_MODEL_GEMMA4 && ty == TOK_TYPE_USER_DEFINED;
    if (ty == TOK_TYPE_CONTROL || (ty == TOK_TYPE_USER_DEFINED && !gemma4_user) || ty == TOK_TYPE_UNKNOWN ||
        ty == TOK_TYPE_UNUSED || ty == TOK_TYPE_BYTE) {
        memcpy(out, s, n);
        return n;
    }
    size_t k = 0;
    if (t->model != TOK_MODEL_BPE) {               /* SPM, GEMMA4: U+2581 is a space */
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
    } else if (t->model == TOK_MODEL_BPE) {
        sp->bos = sp->eos = n > 11 ? 11 : -1;        /* llama.cpp's gpt2 defaults */
    }                                                /* gemma4: none unless the file names them */
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
    if (t->model == TOK_MODEL_GEMMA4) sp->add_bos = true;   /* llama-vocab.cpp: overridden to true for Gemma 4 */
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
    um_qsort_r(t->specials, t->n_specials, sizeof *t->specials, cmp_special, t);

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
    else if (!strcmp(model, "gemma4")) t->model = TOK_MODEL_GEMMA4;
    else {
        um_errf(e, "tokenizer.ggml.model is '%s'; supported: gpt2 (byte-level BPE), llama (SentencePiece), "
                   "gemma4 (SentencePiece-style BPE)", model);
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
    if (t->model != TOK_MODEL_SPM && load_merges(t, g, e) != UM_OK) goto fail;
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
