/*
 * forward: the transformer forward pass shared by LLaDA, Dream, LLaDA-MoE, RND1 and LLaDA2. The
 * architecture flags (arch.h) select QK-norm, RoPE style, MoE and block-causal attention;
 * optional biases are used when the file has them. See forward.h for the contract.
 *
 * Per layer, with E = n_embd, T = canvas tokens:
 *   xn = fw_rmsnorm(x) ; q,k,v = xn Wq,Wk,Wv (+b) ; [qk-norm per head] ; rope(q,k)
 *   att = attention(q, k, v)  (bidirectional, GQA) ; x += att Wo (+b)
 *   xn = fw_rmsnorm(x) ; x += W_down(silu(xn W_gate) * (xn W_up))      (dense)
 *                     x += sum_k w_k * expert_k(xn) [+ shared(xn)]   (MoE, top-k routing)
 * then logits(rows) = fw_rmsnorm(x[rows]) W_out (+b).
 * Block-causal attention (arch->block_causal, LLaDA2): a query at canvas position i sees the
 * keys j with j / B <= i / B (B = hp.block_size, blocks counted from position 0), i.e. a key
 * prefix; the pass cuts the carried rows into runs of one block each and gives every run its
 * prefix of keys, in full, subset and partial passes alike. Its partial passes also store the
 * active rows' K/V (and tokens) in the cache: under block-causal attention they are exact for
 * the current tokens, and the engine recomputes a block once more after its last commit, so
 * the cache holds every finished block's final K/V (engine.c, step_forward). MoE models with leading dense layers
 * run the dense FFN on layers below hp.n_layer_dense_lead.
 */
#include "forward_impl.h"

#include <inttypes.h>
#include <stdatomic.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ops.h"
#include "quant.h"

/* ------------------------------------------------------------------ weight preparation */

static int keep_owned(um_forward *f, void *p) {
    if (f->n_owned == f->cap_owned) {
        int cap = f->cap_owned ? f->cap_owned * 2 : 64;
        void **n = realloc(f->owned, sizeof *n * (size_t)cap);
        if (!n) return UM_FAIL;
        f->owned = n;
        f->cap_owned = cap;
    }
    f->owned[f->n_owned++] = p;
    return UM_OK;
}

/* Drop the file pages wholly inside [p, p+n): they were copied into a packed buffer. */
static void release_pages(const void *p, uint64_t n) {
    long ps = sysconf(_SC_PAGESIZE);
    uintptr_t a = ((uintptr_t)p + (uintptr_t)ps - 1) & ~((uintptr_t)ps - 1);
    uintptr_t b = ((uintptr_t)p + n) & ~((uintptr_t)ps - 1);
    if (b > a) madvise((void *)a, b - a, MADV_DONTNEED);
}

/* One weight matrix to prepare: collected serially (allocations), prepared in parallel. */
typedef struct prep_item {
    um_matmul_weights *mw;
    const um_weight   *w;
    void              *dst;         /* packed copy, or NULL to use the mapping as is */
    bool               may_release;
} prep_item;

typedef struct prep_job {
    um_forward      *f;
    const um_forward_opts *o;
    prep_item       *items;
    int              n, cap;
    atomic_int       done;
    atomic_int       failed;
    um_err           err;           /* first failure */
} prep_job;

static int add_item(prep_job *j, um_matmul_weights *mw, const um_weight *w, bool may_release, um_err *e) {
    memset(mw, 0, sizeof *mw);
    if (!w->data) return UM_OK;
    if (j->n == j->cap) {
        int cap = j->cap ? j->cap * 2 : 256;
        prep_item *n = realloc(j->items, sizeof *n * (size_t)cap);
        if (!n) return um_errf(e, "out of memory");
        j->items = n;
        j->cap = cap;
    }
    prep_item *it = &j->items[j->n];
    it->mw = mw;
    it->w = w;
    it->dst = NULL;
    it->may_release = may_release;
    if (matmul_wants_repack(w->type, j->f->kernel)) {
        uint64_t bytes = w->row_bytes * (uint64_t)w->n_out;
        it->dst = um_malloc_aligned(bytes);
        if (!it->dst || keep_owned(j->f, it->dst)) {
            um_free_aligned(it->dst);
            return um_errf(e, "out of memory preparing '%s' (%" PRIu64 " bytes)", w->name, bytes);
        }
        um_hugepage_hint(it->dst, bytes);
        j->f->weight_bytes += bytes;
    }
    j->n++;
    return UM_OK;
}

static void prep_one(void *arg, int64_t i, int tid) {
    prep_job *j = arg;
    prep_item *it = &j->items[i];
    const um_weight *w = it->w;
    um_err e;
    if (matmul_prepare(it->mw, w->type, w->n_in, w->n_out, w->data, it->dst, j->f->kernel, &e)) {
        if (atomic_exchange(&j->failed, 1) == 0) {
            j->err = e;
            um_err_prefix(&j->err, "tensor '%s'", w->name);
        }
        return;
    }
    if (it->dst && it->may_release && j->o->release_pages) release_pages(w->data, w->row_bytes * (uint64_t)w->n_out);
    int done = atomic_fetch_add(&j->done, 1) + 1;
    if (tid == 0 && j->o->progress) j->o->progress(j->o->progress_ctx, done, j->n);
}

static int prepare_weights(um_forward *f, const um_forward_opts *o, um_err *e) {
    const um_model *m = f->m;
    const um_hparams *hp = &m->hp;
    prep_job j = { .f = f, .o = o };
    atomic_init(&j.done, 0);
    atomic_init(&j.failed, 0);
    int rc = UM_FAIL;
    f->layers = um_calloc((size_t)hp->n_layer, sizeof *f->layers);
    if (!f->layers) { um_errf(e, "out of memory"); goto out; }
    for (int il = 0; il < hp->n_layer; il++) {
        const um_layer *l = &m->layers[il];
        fw_layer *fl = &f->layers[il];
        /* Gemma 4 global layers have no attn_v: V is K's projection (l->wv aliases wk) */
        if (add_item(&j, &fl->wq, &l->wq, true, e) || add_item(&j, &fl->wk, &l->wk, true, e) ||
            (!l->v_from_k && add_item(&j, &fl->wv, &l->wv, true, e)) || add_item(&j, &fl->wo, &l->wo, true, e))
            goto out;
        if (layer_moe(m, il)) {
            int X = hp->n_expert;
            if (add_item(&j, &fl->router, &l->ffn_gate_inp, true, e)) goto out;
            if (add_item(&j, &fl->gate_sh, &l->ffn_gate_shexp, true, e) || add_item(&j, &fl->up_sh, &l->ffn_up_shexp, true, e) ||
                add_item(&j, &fl->down_sh, &l->ffn_down_shexp, true, e))
                goto out;
            fl->gate_x = um_calloc((size_t)X, sizeof *fl->gate_x);
            fl->up_x = um_calloc((size_t)X, sizeof *fl->up_x);
            fl->down_x = um_calloc((size_t)X, sizeof *fl->down_x);
            if (!fl->gate_x || !fl->up_x || !fl->down_x) { um_errf(e, "out of memory"); goto out; }
            for (int x = 0; x < X; x++)
                if (add_item(&j, &fl->gate_x[x], &l->gate_exps[x], true, e) ||
                    add_item(&j, &fl->up_x[x], &l->up_exps[x], true, e) ||
                    add_item(&j, &fl->down_x[x], &l->down_exps[x], true, e))
                    goto out;
        }
        /* dense layers; Gemma 4 runs its dense MLP beside the experts in every layer */
        if (!layer_moe(m, il) || m->arch->gemma4) {
            if (add_item(&j, &fl->gate, &l->ffn_gate, true, e) || add_item(&j, &fl->up, &l->ffn_up, true, e) ||
                add_item(&j, &fl->down, &l->ffn_down, true, e))
                goto out;
        }
    }
    if (add_item(&j, &f->sc_gate, &m->sc_gate, true, e) || add_item(&j, &f->sc_up, &m->sc_up, true, e) ||
        add_item(&j, &f->sc_down, &m->sc_down, true, e))
        goto out;
    /* a tied head shares token_embd's pages, which the embedding lookup still reads */
    bool tied = m->output.data == m->tok_embd.data;
    if (add_item(&j, &f->output, &m->output, !tied, e)) goto out;
    pool_for(f->pool, j.n, prep_one, &j);
    if (atomic_load(&j.failed)) { *e = j.err; goto out; }
    if (o->progress) o->progress(o->progress_ctx, j.n, j.n);
    rc = UM_OK;
out:
    free(j.items);
    return rc;
}

/* ------------------------------------------------------------------ buffers */

static size_t scratch_for(const um_forward *f, const um_matmul_weights *w, int64_t n) {
    return w->n_out ? matmul_scratch_bytes(w, n, pool_threads(f->pool)) : 0;
}

static void free_buffers(um_forward *f) {
    void **bufs[] = { (void **)&f->x, (void **)&f->xn, (void **)&f->q, (void **)&f->att, (void **)&f->k,
                      (void **)&f->v, (void **)&f->ff_a, (void **)&f->ff_b, (void **)&f->gathered,
                      (void **)&f->ex_out, (void **)&f->router, (void **)&f->ex_id, (void **)&f->ex_w,
                      (void **)&f->ex_off, (void **)&f->ex_tok, (void **)&f->ex_roww, (void **)&f->ex_slot,
                      (void **)&f->hidden, (void **)&f->pos, (void **)&f->rows_sel, (void **)&f->scratch,
                      (void **)&f->kc, (void **)&f->vc, (void **)&f->tok_sel, (void **)&f->slot, (void **)&f->hrow,
                      (void **)&f->resid, (void **)&f->moe_out, (void **)&f->kv_lo, (void **)&f->kv_hi,
                      (void **)&f->sc_soft, (void **)&f->sc_p, (void **)&f->sc_colsum,
                      (void **)&f->sc_exact };
    for (size_t i = 0; i < UM_ARRAY_LEN(bufs); i++) {
        um_free_aligned(*bufs[i]);
        *bufs[i] = NULL;
    }
    fwg_free_prompt(f);
    free(f->wrow);
    free(f->wrow_f);
    f->wrow = NULL;
    f->wrow_f = NULL;
    f->act_bytes = 0;
}

static int alloc_buffers(um_forward *f, um_err *e) {
    free_buffers(f);
    const um_hparams *hp = &f->m->hp;
    const int64_t T = f->max_tokens, E = hp->n_embd, HD = hp->head_dim;
    const bool g4 = f->m->arch->gemma4;
    /* Gemma 4: head_dim is the largest layer's, nkv_max the largest K row */
    const int64_t NQ = (int64_t)hp->n_head * HD, NKV = g4 ? hp->nkv_max : (int64_t)hp->n_head_kv * HD;
    const bool moe = f->m->arch->moe;
    const int64_t KU = moe ? hp->n_expert_used : 1;
    /* ff_a, ff_b hold the grouped expert rows (T * KU, n_ff_exp), a dense layer's (T, n_ff) or the
     * shared experts' (T, n_ff_shexp) */
    const int64_t FKU = UM_MAX(UM_MAX(moe ? KU * hp->n_ff_exp : 0, hp->n_ff), (int64_t)hp->n_ff_shexp);
    const int64_t F = UM_MAX(UM_MAX(moe ? (int64_t)hp->n_ff_exp : 0, hp->n_ff), (int64_t)hp->n_ff_shexp);
    const int64_t X = moe ? hp->n_expert : 0;
    struct { void **p; uint64_t bytes; } want[] = {
        { (void **)&f->x, T * E * 4 }, { (void **)&f->xn, T * E * 4 },
        { (void **)&f->q, T * NQ * 4 }, { (void **)&f->att, T * (g4 ? UM_MAX(NQ, E) : NQ) * 4 },
        { (void **)&f->k, T * NKV * 4 }, { (void **)&f->v, T * NKV * 4 },
        { (void **)&f->ff_a, T * FKU * 4 }, { (void **)&f->ff_b, T * FKU * 4 },
        { (void **)&f->gathered, moe && f->ref ? T * KU * E * 4 : 0 }, { (void **)&f->ex_out, moe ? T * KU * E * 4 : 0 },
        { (void **)&f->router, T * X * 4 },
        { (void **)&f->ex_id, T * KU * 4 }, { (void **)&f->ex_w, T * KU * 4 },
        { (void **)&f->ex_off, (X + 1) * 4 }, { (void **)&f->ex_tok, T * KU * 4 },
        { (void **)&f->ex_roww, T * KU * 4 }, { (void **)&f->ex_slot, T * KU * 4 },
        { (void **)&f->hidden, T * E * 4 }, { (void **)&f->pos, T * 4 }, { (void **)&f->rows_sel, T * 4 },
        { (void **)&f->kc, T * NKV * 4 }, { (void **)&f->vc, T * NKV * 4 }, { (void **)&f->tok_sel, T * 4 },
        { (void **)&f->slot, T * 4 }, { (void **)&f->hrow, T * 4 },
        { (void **)&f->resid, g4 ? T * E * 4 : 0 }, { (void **)&f->moe_out, g4 ? T * E * 4 : 0 },
        { (void **)&f->kv_lo, g4 ? T * 4 : 0 }, { (void **)&f->kv_hi, g4 ? T * 4 : 0 },
        { (void **)&f->sc_soft, g4 ? T * E * 4 : 0 },
        { (void **)&f->sc_p, g4 ? (int64_t)pool_threads(f->pool) * (hp->n_vocab + E) * 4 : 0 },
        { (void **)&f->sc_colsum, g4 ? E * 8 : 0 }, { (void **)&f->sc_exact, g4 ? T : 0 },
    };
    for (size_t i = 0; i < UM_ARRAY_LEN(want); i++) {
        *want[i].p = um_malloc_aligned(want[i].bytes ? want[i].bytes : 64);
        if (!*want[i].p) return um_errf(e, "out of memory for activations (%" PRIu64 " bytes)", want[i].bytes);
        f->act_bytes += want[i].bytes;
    }
    for (int64_t i = 0; i < T; i++) f->pos[i] = (int32_t)i;
    int64_t max_in = UM_MAX(UM_MAX(E, NQ), F);
    f->wrow = um_malloc((size_t)max_in * sizeof(double));
    f->wrow_f = um_malloc((size_t)max_in * sizeof(float));
    if (!f->wrow || !f->wrow_f) return um_errf(e, "out of memory");
    if (!f->ref) {
        size_t s = scratch_for(f, &f->output, T);
        for (int il = 0; il < hp->n_layer; il++) {
            const fw_layer *fl = &f->layers[il];
            const um_matmul_weights *ws[] = { &fl->wq, &fl->wk, &fl->wv, &fl->wo, &fl->gate, &fl->up, &fl->down, &fl->router,
                                              &fl->gate_sh, &fl->up_sh, &fl->down_sh, &f->sc_gate, &f->sc_up, &f->sc_down };
            for (size_t j = 0; j < UM_ARRAY_LEN(ws); j++) s = UM_MAX(s, scratch_for(f, ws[j], T));
            for (int x = 0, nt = pool_threads(f->pool); fl->gate_x && x < hp->n_expert; x++) {
                s = UM_MAX(s, matmul_grouped_scratch_bytes(&fl->gate_x[x], T, (int)KU, nt));
                s = UM_MAX(s, matmul_grouped_scratch_bytes(&fl->up_x[x], T, (int)KU, nt));
                s = UM_MAX(s, matmul_grouped_scratch_bytes(&fl->down_x[x], T * KU, 1, nt));
            }
        }
        f->scratch = um_malloc_aligned(s ? s : 64);
        if (!f->scratch) return um_errf(e, "out of memory for matmul scratch (%zu bytes)", s);
        f->scratch_bytes = s;
        f->act_bytes += s;
    }
    return UM_OK;
}

int forward_new(um_forward **out, const um_model *m, um_pool *pool, const um_forward_opts *o, um_err *e) {
    *out = NULL;
    if (o->max_tokens <= 0) return um_errf(e, "max_tokens must be positive");
    um_forward *f = um_calloc(1, sizeof *f);
    if (!f) return um_errf(e, "out of memory");
    f->m = m;
    f->pool = pool;
    f->ref = o->reference;
    f->max_tokens = o->max_tokens;
    if (!f->ref) {
        f->kernel = o->kernel;
        if (f->kernel == UM_KERNEL_AUTO && matmul_kernel_default(&f->kernel, e)) goto fail;
        if (prepare_weights(f, o, e)) goto fail;
    }
    if (alloc_buffers(f, e)) goto fail;
    *out = f;
    return UM_OK;
fail:
    forward_free(f);
    return UM_FAIL;
}

void forward_free(um_forward *f) {
    if (!f) return;
    if (f->layers) {
        for (int il = 0; il < f->m->hp.n_layer; il++) {
            free(f->layers[il].gate_x);
            free(f->layers[il].up_x);
            free(f->layers[il].down_x);
        }
    }
    free(f->layers);
    for (int i = 0; i < f->n_owned; i++) um_free_aligned(f->owned[i]);
    free(f->owned);
    free_buffers(f);
    free(f);
}

int forward_reserve(um_forward *f, int max_tokens, um_err *e) {
    if (max_tokens <= f->max_tokens) return UM_OK;
    f->max_tokens = max_tokens;
    return alloc_buffers(f, e);
}

const char *forward_kernel_name(const um_forward *f) {
    return f->ref ? "reference" : matmul_kernel_name(f->kernel);
}
uint64_t forward_weight_bytes(const um_forward *f) { return f->weight_bytes; }
uint64_t forward_activation_bytes(const um_forward *f) { return f->act_bytes; }

/* ------------------------------------------------------------------ K/V cache */

struct um_kvcache {
    const um_type_traits *tr;     /* storage type: F32, F16 or Q8_0 */
    int      n_layer, max_tokens;
    int64_t  nkv;                 /* floats of one position's K (and of its V) in one layer */
    uint64_t row_bytes;           /* bytes of such a row as stored */
    uint8_t *k, *v;               /* (n_layer, max_tokens, row_bytes) */
    int32_t *tok;                 /* (max_tokens) tokens of the canvas the last full pass saw */
    int      n_tokens;            /* that canvas's length; 0: empty */
    uint64_t bytes;               /* k and v */
};

int forward_kv_new(const um_forward *f, uint32_t type, int max_tokens, um_kvcache **out, um_err *e) {
    *out = NULL;
    const um_hparams *hp = &f->m->hp;
    const int64_t nkv = (int64_t)hp->n_head_kv * hp->head_dim;
    if (f->m->arch->gemma4) return um_errf(e, "K/V cache passes are not supported for %s yet", f->m->arch->name);
    if (type != UM_TYPE_F32 && type != UM_TYPE_F16 && type != UM_TYPE_Q8_0)
        return um_errf(e, "K/V cache type %s: only f32, f16 and q8_0 are supported", um_type_name(type));
    const uint64_t rb = um_row_size(type, nkv);
    if (!rb)
        return um_errf(e, "K/V cache type %s stores rows of a multiple of %u values; this model's K rows have %" PRId64,
                       um_type_name(type), um_type_blck(type), nkv);
    if (max_tokens <= 0) return um_errf(e, "K/V cache: max_tokens must be positive");
    um_kvcache *kv = um_calloc(1, sizeof *kv);
    if (!kv) return um_errf(e, "out of memory");
    kv->tr = um_traits(type);
    kv->n_layer = hp->n_layer;
    kv->max_tokens = max_tokens;
    kv->nkv = nkv;
    kv->row_bytes = rb;
    const uint64_t per = (uint64_t)hp->n_layer * (uint64_t)max_tokens * rb;
    kv->k = um_malloc_aligned(per);
    kv->v = um_malloc_aligned(per);
    kv->tok = um_calloc((size_t)max_tokens, sizeof *kv->tok);
    if (!kv->tr || !kv->k || !kv->v || !kv->tok) {
        forward_kv_free(kv);
        return um_errf(e, "out of memory for a K/V cache of %" PRIu64 " bytes", 2 * per);
    }
    kv->bytes = 2 * per;
    *out = kv;
    return UM_OK;
}

void forward_kv_free(um_kvcache *kv) {
    if (!kv) return;
    um_free_aligned(kv->k);
    um_free_aligned(kv->v);
    free(kv->tok);
    free(kv);
}

uint64_t forward_kv_bytes(const um_kvcache *kv) { return kv ? kv->bytes : 0; }

static uint8_t *kv_row(const um_kvcache *kv, uint8_t *base, int il, int64_t p) {
    return base + ((uint64_t)il * (uint64_t)kv->max_tokens + (uint64_t)p) * kv->row_bytes;
}

/* One position per chunk: store K/V rows of layer il (full pass), or load them into f->k, f->v
 * where the position is not active (partial pass; active rows are copied from kc, vc). */
typedef struct kv_job {
    um_forward *f;
    um_kvcache *kv;
    int         il;
    bool        store;              /* a full pass: every row into the cache */
    bool        keep;               /* a partial pass that also stores its active rows */
} kv_job;

/* One cached row to f32 and back: F16 with the SIMD conversions on the fast path (every
 * cached row of every layer is converted on every partial pass: the scalar conversion was
 * most of the K/V cache's part of a cached step), the reference conversion otherwise (same
 * values, tests/test_ops.c). */
static void kv_get(const um_forward *f, const um_kvcache *kv, const void *src, float *dst, int64_t n) {
    if (!f->ref && kv->tr == um_traits(UM_TYPE_F16)) ops_f16_to_f32(src, dst, n);
    else kv->tr->to_float_ref(src, dst, n);
}

static void kv_put(const um_forward *f, const um_kvcache *kv, const float *src, void *dst, int64_t n) {
    if (!f->ref && kv->tr == um_traits(UM_TYPE_F16)) ops_f32_to_f16(src, dst, n);
    else kv->tr->from_float_ref(src, dst, n);
}

static void kv_one(void *arg, int64_t p, int tid) {
    (void)tid;
    kv_job *j = arg;
    um_forward *f = j->f;
    um_kvcache *kv = j->kv;
    const int64_t n = kv->nkv;
    float *k = f->k + p * n, *v = f->v + p * n;
    if (j->store) {
        kv_put(f, kv, k, kv_row(kv, kv->k, j->il, p), n);
        kv_put(f, kv, v, kv_row(kv, kv->v, j->il, p), n);
    } else if (f->slot[p] >= 0) {
        memcpy(k, f->kc + (int64_t)f->slot[p] * n, (size_t)n * sizeof(float));
        memcpy(v, f->vc + (int64_t)f->slot[p] * n, (size_t)n * sizeof(float));
        if (j->keep) {
            kv_put(f, kv, k, kv_row(kv, kv->k, j->il, p), n);
            kv_put(f, kv, v, kv_row(kv, kv->v, j->il, p), n);
        }
    } else {
        kv_get(f, kv, kv_row(kv, kv->k, j->il, p), k, n);
        kv_get(f, kv, kv_row(kv, kv->v, j->il, p), v, n);
    }
}

/* Mean over the active rows whose token is unchanged since the cache was filled of
 * |k - k_cached| / |k_cached| (layer il's K after RoPE); 0 when there is no such row. */
static float kv_drift(um_forward *f, const um_kvcache *kv, int il, const int32_t *act, int n_act, const int32_t *tokens) {
    const int64_t n = kv->nkv;
    double sum = 0;
    int cnt = 0;
    for (int i = 0; i < n_act; i++) {
        int p = act[i];
        if (tokens[p] != kv->tok[p]) continue;
        kv->tr->to_float_ref(kv_row(kv, kv->k, il, p), f->wrow_f, n);
        const float *k = f->kc + (int64_t)i * n;
        double d = 0, r = 0;
        for (int64_t c = 0; c < n; c++) {
            double x = (double)k[c] - f->wrow_f[c];
            d += x * x;
            r += (double)f->wrow_f[c] * f->wrow_f[c];
        }
        sum += r > 0 ? sqrt(d / r) : 0;
        cnt++;
    }
    return cnt ? (float)(sum / cnt) : 0.0f;
}

/* ------------------------------------------------------------------ attention */

/* f->att (nq rows) = attention of the nq queries in f->q, at canvas positions qpos, over the
 * keys and values f->k, f->v of canvas positions 0..T-1. Bidirectional: one call over all keys.
 * Block-causal: consecutive queries of one block form a run that sees the key prefix up to its
 * block's end; rows in canvas order (full passes; partial passes over sorted active rows) make
 * one run per block, any other order just makes shorter runs with the same result per row. */
static int attend(um_forward *f, const int32_t *qpos, int nq, int T, um_err *e) {
    const um_hparams *hp = &f->m->hp;
    const int64_t H = hp->n_head, HD = hp->head_dim;
    um_pool *pool = f->ref ? NULL : f->pool;
    um_attn at = { .n_q = nq, .n_kv = T, .n_head = (int)H, .n_head_kv = hp->n_head_kv, .head_dim = (int)HD, .key_mask = NULL };
    if (!f->m->arch->block_causal) {
        return f->ref ? ops_attention_ref(&at, f->att, f->q, f->k, f->v, e)
                      : ops_attention(pool, &at, f->att, f->q, f->k, f->v, e);
    }
    const int B = hp->block_size;
    for (int i0 = 0; i0 < nq;) {
        const int blk = qpos[i0] / B;
        int i1 = i0 + 1;
        while (i1 < nq && qpos[i1] / B == blk) i1++;
        const int64_t kv_end = UM_MIN((int64_t)(blk + 1) * B, (int64_t)T);
        at.n_q = i1 - i0;
        at.n_kv = (int)kv_end;
        const float *q = f->q + (int64_t)i0 * H * HD;
        float *out = f->att + (int64_t)i0 * H * HD;
        int rc = f->ref ? ops_attention_ref(&at, out, q, f->k, f->v, e) : ops_attention(pool, &at, out, q, f->k, f->v, e);
        if (rc) return UM_FAIL;
        i0 = i1;
    }
    return UM_OK;
}

/* ------------------------------------------------------------------ the pass */

/* forward_run (act NULL, kv NULL), a full pass filling kv (act NULL), or a partial pass over
 * the active rows act[0..n_act) reading kv (see forward.h). The rows carried through the
 * layers are every position (full) or the active ones (partial); on the last layer the fast
 * path carries only the head's rows past the attention. */
static int run_pass(um_forward *f, um_kvcache *kv, const int32_t *tokens, int n_tokens, const int32_t *act,
                    int n_act, const int32_t *rows, int n_rows, float *logits, float *drift, um_err *e) {
    const um_model *m = f->m;
    const um_hparams *hp = &m->hp;
    if (m->arch->gemma4) {
        if (kv) return um_errf(e, "K/V cache passes are not supported for %s yet", m->arch->name);
        return fwg_run(f, tokens, n_tokens, -1, NULL, rows, n_rows, logits, FWG_FULL, e);
    }
    if (n_tokens <= 0 || n_tokens > f->max_tokens)
        return um_errf(e, "canvas of %d tokens exceeds the prepared maximum of %d", n_tokens, f->max_tokens);
    if (n_rows < 0 || n_rows > n_tokens) return um_errf(e, "bad row count %d", n_rows);
    for (int i = 0; i < n_rows; i++)
        if (rows[i] < 0 || rows[i] >= n_tokens) return um_errf(e, "row %d outside the canvas", rows[i]);
    if (kv && n_tokens > kv->max_tokens)
        return um_errf(e, "canvas of %d tokens exceeds the K/V cache's %d", n_tokens, kv->max_tokens);
    const int T = n_tokens;
    const bool partial = act != NULL;
    int N = T;                        /* rows carried through the layers */
    const int32_t *cpos = f->pos;     /* their canvas positions */
    const int32_t *ctok = tokens;     /* their tokens */
    const int32_t *hrow = rows;       /* the head's rows as indices among the carried rows */
    if (partial) {
        if (kv->n_tokens != T)
            return um_errf(e, "the K/V cache holds no canvas of %d tokens (a full pass fills it)", T);
        if (n_act <= 0 || n_act > T) return um_errf(e, "bad active row count %d", n_act);
        for (int p = 0; p < T; p++) f->slot[p] = -1;
        for (int i = 0; i < n_act; i++) {
            int p = act[i];
            if (p < 0 || p >= T) return um_errf(e, "active row %d outside the canvas", p);
            if (f->slot[p] >= 0) return um_errf(e, "active row %d given twice", p);
            f->slot[p] = i;
            f->tok_sel[i] = tokens[p];
        }
        for (int i = 0; i < n_rows; i++) {
            if (f->slot[rows[i]] < 0) return um_errf(e, "logits row %d is not an active row", rows[i]);
            f->hrow[i] = f->slot[rows[i]];
        }
        N = n_act;
        cpos = act;
        ctok = f->tok_sel;
        hrow = f->hrow;
    } else if (kv) {
        kv->n_tokens = 0;             /* holds no canvas until this pass completes */
    }
    if (drift) *drift = 0;
    const int64_t E = hp->n_embd, HD = hp->head_dim, H = hp->n_head, HKV = hp->n_head_kv;
    um_pool *pool = f->ref ? NULL : f->pool;

    fw_prof_begin(f);
    if (ops_embed(pool, f->x, m->tok_embd.data, m->tok_embd.type, hp->n_vocab, (int)E, ctok, N, e)) return UM_FAIL;
    fw_mark(f, UM_FW_EMBED);
    um_rope rope = { .mode = m->arch->rope_neox ? UM_ROPE_NEOX : UM_ROPE_NORM, .head_dim = (int)HD,
                     .n_dims = hp->n_rot, .freq_base = hp->rope_base, .freq_scale = 1.0f };

    for (int il = 0; il < hp->n_layer; il++) {
        const um_layer *l = &m->layers[il];
        const fw_layer *fl = f->layers ? &f->layers[il] : NULL;
        /* On the last layer the fast path carries only the rows the head needs past the
         * attention (K and V still cover every carried row). */
        const bool subset = !f->ref && il == hp->n_layer - 1 && n_rows < N;
        const int nq = subset ? n_rows : N;
        /* a partial pass computes the active rows' K/V apart, then lays them over the cache's */
        float *kd = partial ? f->kc : f->k, *vd = partial ? f->vc : f->v;

        fw_rmsnorm(f, f->xn, f->x, l->attn_norm, N, (int)E);
        fw_mark(f, UM_FW_NORM);
        fw_linear(f, fl ? &fl->wk : NULL, &l->wk, f->xn, N, kd, l->bk);
        fw_linear(f, fl ? &fl->wv : NULL, &l->wv, f->xn, N, vd, l->bv);
        if (subset) {
            fw_gather(f->hidden, f->xn, hrow, n_rows, E);
            fw_linear(f, fl ? &fl->wq : NULL, &l->wq, f->hidden, nq, f->q, l->bq);
            /* positions of the kept rows, for RoPE on q */
            for (int i = 0; i < n_rows; i++) f->rows_sel[i] = cpos[hrow[i]];
        } else {
            fw_linear(f, fl ? &fl->wq : NULL, &l->wq, f->xn, N, f->q, l->bq);
        }
        fw_mark(f, UM_FW_QKV);
        if (m->arch->qk_norm) {
            fw_rmsnorm(f, f->q, f->q, l->q_norm, (int64_t)nq * H, (int)HD);
            fw_rmsnorm(f, kd, kd, l->k_norm, (int64_t)N * HKV, (int)HD);
            fw_mark(f, UM_FW_NORM);
        }
        const int32_t *qpos = subset ? f->rows_sel : cpos;
        int rc = f->ref ? ops_rope_ref(&rope, qpos, nq, f->q, (int)H, NULL, 0, e)
                        : ops_rope(pool, &rope, qpos, nq, f->q, (int)H, NULL, 0, e);
        if (!rc) rc = f->ref ? ops_rope_ref(&rope, cpos, N, kd, (int)HKV, NULL, 0, e)
                             : ops_rope(pool, &rope, cpos, N, kd, (int)HKV, NULL, 0, e);
        if (rc) return UM_FAIL;
        fw_mark(f, UM_FW_ROPE);
        if (kv) {
            if (partial && drift && il == hp->n_layer - 1) *drift = kv_drift(f, kv, il, act, n_act, tokens);
            kv_job kj = { .f = f, .kv = kv, .il = il, .store = !partial, .keep = partial && m->arch->block_causal };
            pool_for(pool, T, kv_one, &kj);
            fw_mark(f, UM_FW_KV);
        }
        if (attend(f, qpos, nq, T, e)) return UM_FAIL;
        fw_mark(f, UM_FW_ATTN);
        if (subset) {
            /* shrink the residual stream to the kept rows, in the caller's order */
            fw_gather(f->hidden, f->x, hrow, n_rows, E);
            memcpy(f->x, f->hidden, (size_t)(n_rows * E) * sizeof(float));
            fw_mark(f, UM_FW_GATHER);
        }
        fw_linear(f, fl ? &fl->wo : NULL, &l->wo, f->att, nq, f->xn, l->bo);
        fw_mark(f, UM_FW_WO);
        fw_add(f, f->x, f->x, f->xn, nq * E);
        fw_mark(f, UM_FW_ADD);
        fw_rmsnorm(f, f->xn, f->x, l->ffn_norm, nq, (int)E);
        fw_mark(f, UM_FW_NORM);
        if (fw_ffn(f, il, f->x, f->xn, nq, e)) return UM_FAIL;
    }
    const bool subset_done = !f->ref && n_rows < N;
    if (subset_done) memcpy(f->hidden, f->x, (size_t)(n_rows * E) * sizeof(float));
    else fw_gather(f->hidden, f->x, hrow, n_rows, E);
    fw_mark(f, UM_FW_GATHER);
    fw_rmsnorm(f, f->hidden, f->hidden, m->output_norm, n_rows, (int)E);
    fw_linear(f, &f->output, &m->output, f->hidden, n_rows, logits, m->output_b);
    fw_mark(f, UM_FW_HEAD);
    if (kv && !partial) {
        memcpy(kv->tok, tokens, (size_t)T * sizeof *tokens);
        kv->n_tokens = T;
    } else if (kv && m->arch->block_causal) {
        for (int i = 0; i < n_act; i++) kv->tok[act[i]] = tokens[act[i]];
    }
    fw_prof_end(f);
    return UM_OK;
}

int forward_run(um_forward *f, const int32_t *tokens, int n_tokens,
                const int32_t *rows, int n_rows, float *logits, um_err *e) {
    return run_pass(f, NULL, tokens, n_tokens, NULL, 0, rows, n_rows, logits, NULL, e);
}

int forward_run_dg(um_forward *f, const int32_t *tokens, int n_tokens, int n_prompt, const um_selfcond *sc,
                   const int32_t *rows, int n_rows, float *logits, um_err *e) {
    if (!f->m->arch->gemma4) return um_errf(e, "architecture '%s' has no region-aware pass", f->m->arch->name);
    return fwg_run(f, tokens, n_tokens, n_prompt, sc, rows, n_rows, logits, FWG_FULL, e);
}

int forward_dg_prompt(um_forward *f, const int32_t *tokens, int n_prompt, um_err *e) {
    if (!f->m->arch->gemma4) return um_errf(e, "architecture '%s' has no region-aware pass", f->m->arch->name);
    if (n_prompt <= 0) {            /* nothing to store: an empty prompt */
        if (n_prompt < 0) return um_errf(e, "negative prompt length %d", n_prompt);
        f->pc_n = 0;
        return UM_OK;
    }
    return fwg_run(f, tokens, n_prompt, n_prompt, NULL, NULL, 0, NULL, FWG_PROMPT, e);
}

int forward_run_dg_cached(um_forward *f, const int32_t *tokens, int n_tokens, int n_prompt, const um_selfcond *sc,
                          const int32_t *rows, int n_rows, float *logits, um_err *e) {
    if (!f->m->arch->gemma4) return um_errf(e, "architecture '%s' has no region-aware pass", f->m->arch->name);
    return fwg_run(f, tokens, n_tokens, n_prompt, sc, rows, n_rows, logits, FWG_CANVAS, e);
}

uint64_t forward_dg_prompt_bytes(const um_forward *f) { return f->pc_bytes; }

int forward_run_kv(um_forward *f, um_kvcache *kv, const int32_t *tokens, int n_tokens, const int32_t *active,
                   int n_active, const int32_t *rows, int n_rows, float *logits, float *drift, um_err *e) {
    if (!kv) return um_errf(e, "forward_run_kv: no K/V cache");
    return run_pass(f, kv, tokens, n_tokens, active, n_active, rows, n_rows, logits, drift, e);
}

/* ------------------------------------------------------------------ as a backend */

static int cpu_run(void *impl, const int32_t *tokens, int n_tokens, const int32_t *rows, int n_rows,
                   float *logits, um_err *e) {
    return forward_run(impl, tokens, n_tokens, rows, n_rows, logits, e);
}
static int cpu_reserve(void *impl, int max_tokens, um_err *e) { return forward_reserve(impl, max_tokens, e); }
static const char *cpu_kernel_name(void *impl) { return forward_kernel_name(impl); }
static void cpu_free(void *impl) { forward_free(impl); }
static int cpu_kv_new(void *impl, uint32_t type, int max_tokens, um_kvcache **out, um_err *e) {
    return forward_kv_new(impl, type, max_tokens, out, e);
}
static int cpu_run_kv(void *impl, um_kvcache *kv, const int32_t *tokens, int n_tokens, const int32_t *active,
                      int n_active, const int32_t *rows, int n_rows, float *logits, float *drift, um_err *e) {
    return forward_run_kv(impl, kv, tokens, n_tokens, active, n_active, rows, n_rows, logits, drift, e);
}

static int cpu_run_dg(void *impl, const int32_t *tokens, int n_tokens, int n_prompt, const um_selfcond *sc,
                      bool prompt_cached, const int32_t *rows, int n_rows, float *logits, um_err *e) {
    return prompt_cached ? forward_run_dg_cached(impl, tokens, n_tokens, n_prompt, sc, rows, n_rows, logits, e)
                         : forward_run_dg(impl, tokens, n_tokens, n_prompt, sc, rows, n_rows, logits, e);
}
static int cpu_dg_prompt(void *impl, const int32_t *tokens, int n_prompt, um_err *e) {
    return forward_dg_prompt(impl, tokens, n_prompt, e);
}
static uint64_t cpu_dg_prompt_bytes(void *impl) { return forward_dg_prompt_bytes(impl); }
static int cpu_dg_sc_exact_rows(void *impl) { return forward_sc_exact_rows(impl); }

void forward_as_backend(um_forward *f, um_backend *b) {
    b->name = "cpu";
    b->impl = f;
    b->run = cpu_run;
    b->reserve = cpu_reserve;
    b->kernel_name = cpu_kernel_name;
    b->free = cpu_free;
    b->kv_new = cpu_kv_new;
    b->kv_free = forward_kv_free;
    b->kv_bytes = forward_kv_bytes;
    b->run_kv = cpu_run_kv;
    b->run_dg = f->m->arch->gemma4 ? cpu_run_dg : NULL;
    b->dg_prompt = f->m->arch->gemma4 ? cpu_dg_prompt : NULL;
    b->dg_prompt_bytes = cpu_dg_prompt_bytes;
    b->dg_sc_exact_rows = cpu_dg_sc_exact_rows;
}
