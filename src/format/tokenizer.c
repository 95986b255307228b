/*
 * tokenizer: byte-level BPE and SentencePiece-style encoding, decoding to raw bytes.
 *
 * Layout: the token lookup; accessors; special-token partitioning; the merge loop shared by
 * BPE and SPM; encode; decode. Loading (vocabulary, merges, specials, pieces) is in
 * tokenizer_load.c; the layout and lookups both use, in tokenizer_impl.h.
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
#include "tokenizer_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ lookup */

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
    if (t->model != TOK_MODEL_SPM) {              /* BPE, GEMMA4: merges by rank */
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

/* Gemma 4's SentencePiece-style BPE on one text run: spaces become U+2581, the run is cut into
 * newline runs and the rest ("[^\n]+|[\n]+"), each merged by rank from its UTF-8 characters;
 * a newline run that is a token is kept whole (llama.cpp's fix for Gemma 4, PR #21343); a final
 * symbol that is no token falls back to its bytes' <0xNN> tokens. */
static void gemma4_fragment(const tokenizer *t, work *w, const char *text, size_t len, idbuf *out) {
    size_t cap = 3 * len + 1;
    if (!work_reserve(w, len + 1, cap)) return;
    char *s = w->buf;
    size_t k = 0;
    for (size_t i = 0; i < len; i++) {
        if (text[i] == ' ') { memcpy(s + k, "\xE2\x96\x81", 3); k += 3; }
        else s[k++] = text[i];
    }
    for (size_t p0 = 0; p0 < k; ) {
        const bool nl = s[p0] == '\n';
        size_t p1 = p0;
        while (p1 < k && (s[p1] == '\n') == nl) p1++;
        int32_t whole = nl ? tok_find(t, s + p0, p1 - p0) : -1;
        if (whole >= 0) { idbuf_push(out, whole); p0 = p1; continue; }
        int32_t n = 0;
        for (size_t i = p0; i < p1; ) {
            uint32_t cp;
            size_t c = upre_utf8_decode((const uint8_t *)s + i, p1 - i, &cp);
            w->s[n] = (sym){ tok_find(t, s + i, c), (uint32_t)i, (uint32_t)c, n - 1, -1 };
            if (n > 0) w->s[n - 1].next = n;
            n++;
            i += c;
        }
        merge_all(t, w, s, n);
        for (int32_t i = 0; i >= 0 && n; i = w->s[i].next) {
            const sym *y = &w->s[i];
            if (y->id >= 0) { idbuf_push(out, y->id); continue; }
            for (uint32_t j = 0; j < y->len; j++) {   /* byte fallback */
                int32_t b = t->byte_tok[(uint8_t)s[y->off + j]];
                if (b >= 0) idbuf_push(out, b);
            }
        }
        p0 = p1;
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
        else if (t->model == TOK_MODEL_GEMMA4) gemma4_fragment(t, &w, text + f->off, f->len, &out);
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
