/*
 * bpe: byte-level BPE trainer (see bpe.h).
 *
 * Training keeps the distinct pre-tokenizer pieces ("words") with their counts as arrays
 * of token ids, and a hash of adjacent-pair counts weighted by word count. Each round
 * takes the most frequent pair, rewrites every word that contains it (its pairs are
 * subtracted, the word merged left to right, its pairs added back), and appends the merge.
 */
#include "bpe.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "unicode_pre.h"

/* ------------------------------------------------------------------ hash maps */

static uint64_t hash_bytes(const uint8_t *s, size_t n) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) h = (h ^ s[i]) * 0x100000001b3ull;
    return h ^ (h >> 29);
}

static uint64_t hash_u64(uint64_t x) {
    x ^= x >> 33; x *= 0xff51afd7ed558ccdull; x ^= x >> 33; x *= 0xc4ceb9fe1a85ec53ull;
    return x ^ (x >> 33);
}

/* u64 key -> i64 value, open addressing, key UINT64_MAX = empty. Never shrinks. */
typedef struct u64map {
    uint64_t *key;
    int64_t  *val;
    uint64_t  cap, n;           /* cap is a power of two */
} u64map;

static int u64map_init(u64map *m, uint64_t cap) {
    m->cap = cap; m->n = 0;
    m->key = malloc(cap * sizeof *m->key);
    m->val = calloc(cap, sizeof *m->val);
    if (!m->key || !m->val) return UM_FAIL;
    memset(m->key, 0xff, cap * sizeof *m->key);
    return UM_OK;
}

static void u64map_free(u64map *m) { free(m->key); free(m->val); }

static int64_t *u64map_slot(u64map *m, uint64_t k, int create);

static int u64map_grow(u64map *m) {
    u64map g;
    if (u64map_init(&g, m->cap * 2)) { u64map_free(&g); return UM_FAIL; }
    for (uint64_t i = 0; i < m->cap; i++)
        if (m->key[i] != UINT64_MAX) *u64map_slot(&g, m->key[i], 1) = m->val[i];
    u64map_free(m);
    *m = g;
    return UM_OK;
}

/* Slot of k, created with value 0 when create is set; NULL if absent (or out of memory). */
static int64_t *u64map_slot(u64map *m, uint64_t k, int create) {
    if (create && (m->n + 1) * 2 > m->cap && u64map_grow(m)) return NULL;
    uint64_t i = hash_u64(k) & (m->cap - 1);
    while (m->key[i] != UINT64_MAX) {
        if (m->key[i] == k) return &m->val[i];
        i = (i + 1) & (m->cap - 1);
    }
    if (!create) return NULL;
    m->key[i] = k;
    m->n++;
    return &m->val[i];
}

static uint64_t pair_key(int32_t a, int32_t b) { return (uint64_t)(uint32_t)a << 32 | (uint32_t)b; }

/* byte string -> index, for distinct words and token texts */
typedef struct strmap {
    int32_t  *slot;             /* (cap) index + 1, 0 = empty */
    uint64_t  cap, n;
} strmap;

typedef struct strtab {
    uint8_t **s;
    uint32_t *len;
    int64_t  *count;
    int32_t   n, cap;
} strtab;

static int strtab_push(strtab *t, const uint8_t *s, uint32_t len) {
    if (t->n == t->cap) {
        int32_t cap = t->cap ? t->cap * 2 : 1024;
        uint8_t **ns = realloc(t->s, (size_t)cap * sizeof *ns);
        if (!ns) return UM_FAIL;
        t->s = ns;
        uint32_t *nl = realloc(t->len, (size_t)cap * sizeof *nl);
        if (!nl) return UM_FAIL;
        t->len = nl;
        int64_t *nc = realloc(t->count, (size_t)cap * sizeof *nc);
        if (!nc) return UM_FAIL;
        t->count = nc;
        t->cap = cap;
    }
    if (!(t->s[t->n] = malloc(len + 1))) return UM_FAIL;
    memcpy(t->s[t->n], s, len);
    t->s[t->n][len] = 0;
    t->len[t->n] = len;
    t->count[t->n] = 0;
    t->n++;
    return UM_OK;
}

/* Index of s in t (through map m), added when absent; -1 on out of memory. */
static int32_t strmap_get(strmap *m, strtab *t, const uint8_t *s, uint32_t len, int create) {
    if (create && (m->n + 1) * 2 > m->cap) {
        uint64_t cap = m->cap ? m->cap * 2 : 4096;
        int32_t *ns = calloc(cap, sizeof *ns);
        if (!ns) return -1;
        for (uint64_t i = 0; i < m->cap; i++) {
            if (!m->slot[i]) continue;
            int32_t id = m->slot[i] - 1;
            uint64_t j = hash_bytes(t->s[id], t->len[id]) & (cap - 1);
            while (ns[j]) j = (j + 1) & (cap - 1);
            ns[j] = id + 1;
        }
        free(m->slot);
        m->slot = ns;
        m->cap = cap;
    }
    if (!m->cap) return -1;
    uint64_t j = hash_bytes(s, len) & (m->cap - 1);
    while (m->slot[j]) {
        int32_t id = m->slot[j] - 1;
        if (t->len[id] == len && !memcmp(t->s[id], s, len)) return id;
        j = (j + 1) & (m->cap - 1);
    }
    if (!create) return -1;
    if (strtab_push(t, s, len)) return -1;
    m->slot[j] = t->n;
    m->n++;
    return t->n - 1;
}

static void strtab_free(strtab *t) {
    for (int32_t i = 0; i < t->n; i++) free(t->s[i]);
    free(t->s); free(t->len); free(t->count);
}

/* ------------------------------------------------------------------ byte-level text */

/* GPT-2's byte-to-unicode map: printable bytes map to themselves, the rest to U+0100+. */
static uint32_t byte_to_unicode(int b) {
    if ((b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255)) return (uint32_t)b;
    int n = 0;
    for (int c = 0; c < b; c++)
        if (!((c >= 33 && c <= 126) || (c >= 161 && c <= 172) || (c >= 174 && c <= 255))) n++;
    return 256u + (uint32_t)n;
}

static char *byte_level_text(const uint8_t *s, uint32_t n) {
    char *out = malloc((size_t)n * 2 + 1), *p = out;
    if (!out) return NULL;
    for (uint32_t i = 0; i < n; i++) p += upre_utf8_encode(byte_to_unicode(s[i]), (uint8_t *)p);
    *p = 0;
    return out;
}

/* ------------------------------------------------------------------ training */

typedef struct word {
    int32_t *ids;               /* current symbols */
    int32_t  n;                 /* symbol count */
    int64_t  count;             /* occurrences in the corpus */
} word;

static int add_pairs(u64map *pairs, const word *w, int64_t sign) {
    for (int32_t i = 0; i + 1 < w->n; i++) {
        int64_t *c = u64map_slot(pairs, pair_key(w->ids[i], w->ids[i + 1]), 1);
        if (!c) return UM_FAIL;
        *c += sign * w->count;
    }
    return UM_OK;
}

void bpe_free(bpe_vocab *v) {
    if (!v) return;
    for (int32_t i = 0; i < v->n_vocab; i++) {
        if (v->text) free(v->text[i]);
        if (v->bytes) free(v->bytes[i]);
    }
    free(v->text); free(v->bytes); free(v->n_bytes); free(v->type); free(v->merge);
    if (v->pair_rank) { u64map_free(v->pair_rank); free(v->pair_rank); }
    free(v);
}

int bpe_train(bpe_vocab **out, const char *const *texts, const size_t *lens, int n_texts,
              int32_t n_vocab, um_err *e) {
    *out = NULL;
    if (n_vocab < 256 + BPE_N_SPECIAL + 1 || n_vocab > (1 << 20))
        return um_errf(e, "bpe: vocabulary of %d outside [%d, %d]", n_vocab, 256 + BPE_N_SPECIAL + 1, 1 << 20);
    int rc = UM_FAIL;
    strmap wmap = { 0 }, tmap = { 0 };
    strtab wtab = { 0 }, ttab = { 0 };
    word *words = NULL;
    u64map pairs = { 0 };
    bpe_vocab *v = um_calloc(1, sizeof *v);
    if (!v) return um_errf(e, "out of memory");

    /* distinct pieces and their counts */
    for (int f = 0; f < n_texts; f++) {
        upre_span *sp = NULL;
        size_t ns = 0;
        if (upre_split(UPRE_GPT2, texts[f], lens[f], &sp, &ns, e)) goto out;
        for (size_t i = 0; i < ns; i++) {
            int32_t id = strmap_get(&wmap, &wtab, (const uint8_t *)texts[f] + sp[i].off, sp[i].len, 1);
            if (id < 0) { free(sp); um_errf(e, "out of memory"); goto out; }
            wtab.count[id]++;
        }
        free(sp);
    }
    if (!(words = um_calloc((size_t)wtab.n + 1, sizeof *words))) { um_errf(e, "out of memory"); goto out; }
    if (u64map_init(&pairs, 1 << 16)) { um_errf(e, "out of memory"); goto out; }
    for (int32_t i = 0; i < wtab.n; i++) {
        words[i].n = (int32_t)wtab.len[i];
        words[i].count = wtab.count[i];
        if (!(words[i].ids = malloc((size_t)words[i].n * sizeof(int32_t)))) { um_errf(e, "out of memory"); goto out; }
        for (int32_t j = 0; j < words[i].n; j++) words[i].ids[j] = wtab.s[i][j];
        if (add_pairs(&pairs, &words[i], 1)) { um_errf(e, "out of memory"); goto out; }
    }

    /* tokens: bytes, then merges */
    const int32_t n_normal = n_vocab - BPE_N_SPECIAL;
    v->text = um_calloc((size_t)n_vocab, sizeof *v->text);
    v->bytes = um_calloc((size_t)n_vocab, sizeof *v->bytes);
    v->n_bytes = um_calloc((size_t)n_vocab, sizeof *v->n_bytes);
    v->type = um_calloc((size_t)n_vocab, sizeof *v->type);
    v->merge = um_calloc((size_t)n_vocab * 4, sizeof *v->merge);
    if (!v->text || !v->bytes || !v->n_bytes || !v->type || !v->merge) { um_errf(e, "out of memory"); goto out; }
    for (int b = 0; b < 256; b++) {
        uint8_t c = (uint8_t)b;
        if (strmap_get(&tmap, &ttab, &c, 1, 1) != b) { um_errf(e, "out of memory"); goto out; }
    }
    int32_t cap_merges = n_vocab * 4;
    while (ttab.n < n_normal && v->n_merges < cap_merges) {
        uint64_t best_k = UINT64_MAX;
        int64_t best_c = 1;             /* a pair seen once is not worth a token */
        for (uint64_t i = 0; i < pairs.cap; i++) {
            if (pairs.key[i] == UINT64_MAX) continue;
            if (pairs.val[i] > best_c || (pairs.val[i] == best_c && best_c > 1 && pairs.key[i] < best_k)) {
                best_c = pairs.val[i];
                best_k = pairs.key[i];
            }
        }
        if (best_k == UINT64_MAX) break;
        int32_t a = (int32_t)(best_k >> 32), b = (int32_t)(best_k & 0xffffffffu);
        uint32_t la = ttab.len[a], lb = ttab.len[b];
        uint8_t *cat = malloc(la + lb);
        if (!cat) { um_errf(e, "out of memory"); goto out; }
        memcpy(cat, ttab.s[a], la);
        memcpy(cat + la, ttab.s[b], lb);
        int32_t r = strmap_get(&tmap, &ttab, cat, la + lb, 1);   /* existing text: same id */
        free(cat);
        if (r < 0) { um_errf(e, "out of memory"); goto out; }
        v->merge[v->n_merges][0] = a;
        v->merge[v->n_merges][1] = b;
        v->merge[v->n_merges][2] = r;
        v->n_merges++;
        for (int32_t i = 0; i < wtab.n; i++) {
            word *w = &words[i];
            int32_t j = 0;
            while (j + 1 < w->n && !(w->ids[j] == a && w->ids[j + 1] == b)) j++;
            if (j + 1 >= w->n) continue;
            if (add_pairs(&pairs, w, -1)) { um_errf(e, "out of memory"); goto out; }
            int32_t o = 0;
            for (j = 0; j < w->n; j++) {
                if (j + 1 < w->n && w->ids[j] == a && w->ids[j + 1] == b) { w->ids[o++] = r; j++; }
                else w->ids[o++] = w->ids[j];
            }
            w->n = o;
            if (add_pairs(&pairs, w, 1)) { um_errf(e, "out of memory"); goto out; }
        }
    }
    if (ttab.n < n_normal) {
        um_errf(e, "bpe: the text yields only %d tokens, fewer than the %d asked for", ttab.n + BPE_N_SPECIAL, n_vocab);
        goto out;
    }

    v->n_vocab = n_vocab;
    for (int32_t i = 0; i < n_normal; i++) {
        v->n_bytes[i] = ttab.len[i];
        v->bytes[i] = malloc(ttab.len[i] + 1);
        v->text[i] = byte_level_text(ttab.s[i], ttab.len[i]);
        if (!v->bytes[i] || !v->text[i]) { um_errf(e, "out of memory"); goto out; }
        memcpy(v->bytes[i], ttab.s[i], ttab.len[i] + 1);
        v->type[i] = 1;
    }
    static const char *const specials[BPE_N_SPECIAL] = { "<|endoftext|>", "<|mdm_mask|>" };
    for (int s = 0; s < BPE_N_SPECIAL; s++) {
        int32_t id = n_normal + s;
        v->text[id] = strdup(specials[s]);
        v->bytes[id] = (uint8_t *)strdup(specials[s]);
        v->n_bytes[id] = (uint32_t)strlen(specials[s]);
        v->type[id] = 3;
        if (!v->text[id] || !v->bytes[id]) { um_errf(e, "out of memory"); goto out; }
    }
    v->eos_id = n_normal;
    v->mask_id = n_normal + 1;
    v->pair_rank = um_calloc(1, sizeof(u64map));
    if (!v->pair_rank || u64map_init(v->pair_rank, 1 << 14)) { um_errf(e, "out of memory"); goto out; }
    for (int32_t m = 0; m < v->n_merges; m++) {
        int64_t *s = u64map_slot(v->pair_rank, pair_key(v->merge[m][0], v->merge[m][1]), 1);
        if (!s) { um_errf(e, "out of memory"); goto out; }
        *s = m;
    }
    *out = v;
    v = NULL;
    rc = UM_OK;
out:
    if (words) for (int32_t i = 0; i < wtab.n; i++) free(words[i].ids);
    free(words);
    u64map_free(&pairs);
    strtab_free(&wtab); strtab_free(&ttab);
    free(wmap.slot); free(tmap.slot);
    bpe_free(v);
    return rc;
}

/* ------------------------------------------------------------------ character vocabularies */

int bpe_chars(bpe_vocab **out, const char *chars, size_t n_chars, um_err *e) {
    *out = NULL;
    bool seen[256] = { false };
    int32_t n_normal = 0;
    for (size_t i = 0; i < n_chars; i++) {
        uint8_t c = (uint8_t)chars[i];
        if (seen[c]) return um_errf(e, "bpe: character 0x%02x given twice", c);
        seen[c] = true;
        n_normal++;
    }
    if (n_normal < 1) return um_errf(e, "bpe: no characters given");
    bpe_vocab *v = um_calloc(1, sizeof *v);
    if (!v) return um_errf(e, "out of memory");
    const int32_t n_vocab = n_normal + BPE_N_SPECIAL;
    v->text = um_calloc((size_t)n_vocab, sizeof *v->text);
    v->bytes = um_calloc((size_t)n_vocab, sizeof *v->bytes);
    v->n_bytes = um_calloc((size_t)n_vocab, sizeof *v->n_bytes);
    v->type = um_calloc((size_t)n_vocab, sizeof *v->type);
    if (!v->text || !v->bytes || !v->n_bytes || !v->type) { bpe_free(v); return um_errf(e, "out of memory"); }
    v->n_vocab = n_vocab;
    for (int32_t i = 0; i < n_normal; i++) {
        uint8_t c = (uint8_t)chars[i];
        v->n_bytes[i] = 1;
        v->bytes[i] = malloc(2);
        v->text[i] = byte_level_text(&c, 1);
        if (!v->bytes[i] || !v->text[i]) { bpe_free(v); return um_errf(e, "out of memory"); }
        v->bytes[i][0] = c;
        v->bytes[i][1] = 0;
        v->type[i] = 1;
    }
    static const char *const specials[BPE_N_SPECIAL] = { "<|endoftext|>", "<|mdm_mask|>" };
    for (int s = 0; s < BPE_N_SPECIAL; s++) {
        int32_t id = n_normal + s;
        v->text[id] = strdup(specials[s]);
        v->bytes[id] = (uint8_t *)strdup(specials[s]);
        v->n_bytes[id] = (uint32_t)strlen(specials[s]);
        v->type[id] = 3;
        if (!v->text[id] || !v->bytes[id]) { bpe_free(v); return um_errf(e, "out of memory"); }
    }
    v->eos_id = n_normal;
    v->mask_id = n_normal + 1;
    v->add_bos = true;
    *out = v;
    return UM_OK;
}

int bpe_add_control(bpe_vocab *v, const char *text, um_err *e) {
    size_t len = strlen(text);
    if (len == 0) return um_errf(e, "bpe: an empty control token");
    for (int32_t i = 0; i < v->n_vocab; i++)
        if (!strcmp(v->text[i], text)) return um_errf(e, "bpe: token '%s' given twice", text);
    int32_t n = v->n_vocab + 1;
    char **nt = realloc(v->text, (size_t)n * sizeof *nt);
    if (nt) v->text = nt;
    uint8_t **nb = realloc(v->bytes, (size_t)n * sizeof *nb);
    if (nb) v->bytes = nb;
    uint32_t *nn = realloc(v->n_bytes, (size_t)n * sizeof *nn);
    if (nn) v->n_bytes = nn;
    int32_t *ty = realloc(v->type, (size_t)n * sizeof *ty);
    if (ty) v->type = ty;
    if (!nt || !nb || !nn || !ty) return um_errf(e, "out of memory");
    v->text[v->n_vocab] = strdup(text);
    v->bytes[v->n_vocab] = (uint8_t *)strdup(text);
    if (!v->text[v->n_vocab] || !v->bytes[v->n_vocab]) {
        free(v->text[v->n_vocab]); free(v->bytes[v->n_vocab]);
        return um_errf(e, "out of memory");
    }
    v->n_bytes[v->n_vocab] = (uint32_t)len;
    v->type[v->n_vocab] = 3;
    v->n_vocab = n;
    return UM_OK;
}

/* ------------------------------------------------------------------ encoding */

int bpe_encode(const bpe_vocab *v, const char *text, size_t len, int32_t **ids, size_t *n, um_err *e) {
    *ids = NULL; *n = 0;
    if (!v->pair_rank) return um_errf(e, "bpe: encoding needs a vocabulary from bpe_train");
    upre_span *sp = NULL;
    size_t ns = 0;
    if (upre_split(UPRE_GPT2, text, len, &sp, &ns, e)) return UM_FAIL;
    int32_t *out = malloc((len + 1) * sizeof *out);
    if (!out) { free(sp); return um_errf(e, "out of memory"); }
    size_t k = 0;
    for (size_t i = 0; i < ns; i++) {
        int32_t *w = out + k;
        int32_t wn = (int32_t)sp[i].len;
        for (int32_t j = 0; j < wn; j++) w[j] = (uint8_t)text[sp[i].off + j];
        for (;;) {      /* merge the lowest-ranked pair, all its occurrences, left to right */
            int64_t best = INT64_MAX;
            for (int32_t j = 0; j + 1 < wn; j++) {
                const int64_t *r = u64map_slot(v->pair_rank, pair_key(w[j], w[j + 1]), 0);
                if (r && *r < best) best = *r;
            }
            if (best == INT64_MAX) break;
            const int32_t *m = v->merge[best];
            int32_t o = 0;
            for (int32_t j = 0; j < wn; j++) {
                if (j + 1 < wn && w[j] == m[0] && w[j + 1] == m[1]) { w[o++] = m[2]; j++; }
                else w[o++] = w[j];
            }
            wn = o;
        }
        k += (size_t)wn;
    }
    free(sp);
    *ids = out;
    *n = k;
    return UM_OK;
}

/* ------------------------------------------------------------------ GGUF */

int bpe_write_kv(const bpe_vocab *v, gguf_writer *w, um_err *e) {
    char **merges = um_calloc((size_t)v->n_merges + 1, sizeof *merges);
    if (!merges) return um_errf(e, "out of memory");
    int rc = UM_OK;
    for (int32_t m = 0; m < v->n_merges && rc == UM_OK; m++) {
        const char *a = v->text[v->merge[m][0]], *b = v->text[v->merge[m][1]];
        size_t la = strlen(a), lb = strlen(b);
        if (!(merges[m] = malloc(la + lb + 2))) { rc = um_errf(e, "out of memory"); break; }
        memcpy(merges[m], a, la);
        merges[m][la] = ' ';
        memcpy(merges[m] + la + 1, b, lb + 1);
    }
    if (rc == UM_OK) {
        gguf_set_str(w, "tokenizer.ggml.model", "gpt2");
        gguf_set_str(w, "tokenizer.ggml.pre", "gpt-2");
        gguf_set_arr_str(w, "tokenizer.ggml.tokens", (const char *const *)v->text, (uint64_t)v->n_vocab);
        gguf_set_arr(w, "tokenizer.ggml.token_type", GGUF_TYPE_INT32, v->type, (uint64_t)v->n_vocab);
        gguf_set_arr_str(w, "tokenizer.ggml.merges", (const char *const *)merges, (uint64_t)v->n_merges);
        gguf_set_u32(w, "tokenizer.ggml.bos_token_id", (uint32_t)v->eos_id);
        gguf_set_u32(w, "tokenizer.ggml.eos_token_id", (uint32_t)v->eos_id);
        gguf_set_u32(w, "tokenizer.ggml.padding_token_id", (uint32_t)v->eos_id);
        gguf_set_u32(w, "tokenizer.ggml.mask_token_id", (uint32_t)v->mask_id);
        gguf_set_bool(w, "tokenizer.ggml.add_bos_token", v->add_bos);
        gguf_set_bool(w, "tokenizer.ggml.add_eos_token", false);
    }
    for (int32_t m = 0; m < v->n_merges; m++) free(merges[m]);
    free(merges);
    return rc;
}
