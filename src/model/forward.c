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
                      (void **)&f->kc, (void **)&f->vc, (void **)&f->tok_sel, (void **)&f->slot, (void **)&f->hrow, (void **)&f->cpos,
                      (void **)&f->resid, (void **)&f->moe_out, (void **)&f->kv_lo, (void **)&f->kv_hi,
                      (void **)&f->sc_soft, (void **)&f->sc_p, (void **)&f->sc_colsum,
                      (void **)&f->sc_exact, (void **)&f->sc_mx, (void **)&f->sc_inv, (void **)&f->sc_rows,
                      (void **)&f->sc_pb, (void **)&f->sc_eb, (void **)&f->sc_y,
                      (void **)&f->sc_pb16, (void **)&f->sc_eb16 };
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
    const bool g4 = f->m->arch->gemma4, gf = g4 && !f->ref;     /* gf: the blocked exact product */
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
        { (void **)&f->slot, T * 4 }, { (void **)&f->hrow, T * 4 }, { (void **)&f->cpos, T * 4 },
        { (void **)&f->resid, g4 ? T * E * 4 : 0 }, { (void **)&f->moe_out, g4 ? T * E * 4 : 0 },
        { (void **)&f->kv_lo, g4 ? T * 4 : 0 }, { (void **)&f->kv_hi, g4 ? T * 4 : 0 },
        { (void **)&f->sc_soft, g4 ? T * E * 4 : 0 },
        { (void **)&f->sc_p, g4 ? (int64_t)pool_threads(f->pool) * (hp->n_vocab + E) * 4 : 0 },
        { (void **)&f->sc_colsum, g4 ? E * 8 : 0 }, { (void **)&f->sc_exact, g4 ? T : 0 },
        { (void **)&f->sc_mx, gf ? T * 4 : 0 }, { (void **)&f->sc_inv, gf ? T * 4 : 0 },
        { (void **)&f->sc_rows, gf ? T * 4 : 0 }, { (void **)&f->sc_pb, gf ? T * UM_SC_BLOCK * 4 : 0 },
        { (void **)&f->sc_eb, gf ? UM_SC_BLOCK * E * 4 : 0 }, { (void **)&f->sc_y, gf ? T * E * 4 : 0 },
        { (void **)&f->sc_pb16, gf ? T * UM_SC_BLOCK / 2 * 4 : 0 },
        { (void **)&f->sc_eb16, gf ? (E + UM_GEMM_TILE_COLS - 1) / UM_GEMM_TILE_COLS * UM_GEMM_TILE_COLS * UM_SC_BLOCK / 2 * 4 : 0 },
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
    int64_t     k0, r0;             /* the canvas's first row in k, v, slot, and among the carried rows */
    bool        from_kc;            /* a full canvas's K/V are still in kc, vc (a pass with a partial canvas) */
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
    float *k = f->k + (j->k0 + p) * n, *v = f->v + (j->k0 + p) * n;
    const int32_t sl = f->slot[j->k0 + p];
    if (sl >= 0 && (!j->store || j->from_kc)) {
        memcpy(k, f->kc + (j->r0 + sl) * n, (size_t)n * sizeof(float));
        memcpy(v, f->vc + (j->r0 + sl) * n, (size_t)n * sizeof(float));
    }
    if (j->store || (sl >= 0 && j->keep)) {
        kv_put(f, kv, k, kv_row(kv, kv->k, j->il, p), n);
        kv_put(f, kv, v, kv_row(kv, kv->v, j->il, p), n);
    } else if (sl < 0) {
        kv_get(f, kv, kv_row(kv, kv->k, j->il, p), k, n);
        kv_get(f, kv, kv_row(kv, kv->v, j->il, p), v, n);
    }
}

/* Mean over the active rows whose token is unchanged since the cache was filled of
 * |k - k_cached| / |k_cached| (layer il's K after RoPE); 0 when there is no such row. */
static float kv_drift(um_forward *f, const um_kvcache *kv, int il, const int32_t *act, int n_act, const int32_t *tokens,
                      const float *kc) {
    const int64_t n = kv->nkv;
    double sum = 0;
    int cnt = 0;
    for (int i = 0; i < n_act; i++) {
        int p = act[i];
        if (tokens[p] != kv->tok[p]) continue;
        kv->tr->to_float_ref(kv_row(kv, kv->k, il, p), f->wrow_f, n);
        const float *k = kc + (int64_t)i * n;
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

/* att (nq rows) = attention of the nq queries in q, at canvas positions qpos, over the keys
 * and values k, v of canvas positions 0..T-1. Bidirectional: one call over all keys.
 * Block-causal: consecutive queries of one block form a run that sees the key prefix up to its
 * block's end; rows in canvas order (full passes; partial passes over sorted active rows) make
 * one run per block, any other order just makes shorter runs with the same result per row. */
static int attend(um_forward *f, const float *q, const float *k, const float *v, float *att, const int32_t *qpos,
                  int nq, int T, um_err *e) {
    const um_hparams *hp = &f->m->hp;
    const int64_t H = hp->n_head, HD = hp->head_dim;
    um_pool *pool = f->ref ? NULL : f->pool;
    um_attn at = { .n_q = nq, .n_kv = T, .n_head = (int)H, .n_head_kv = hp->n_head_kv, .head_dim = (int)HD, .key_mask = NULL };
    if (!f->m->arch->block_causal) {
        return f->ref ? ops_attention_ref(&at, att, q, k, v, e)
                      : ops_attention(pool, &at, att, q, k, v, e);
    }
    const int B = hp->block_size;
    for (int i0 = 0; i0 < nq;) {
        const int blk = qpos[i0] / B;
        int i1 = i0 + 1;
        while (i1 < nq && qpos[i1] / B == blk) i1++;
        const int64_t kv_end = UM_MIN((int64_t)(blk + 1) * B, (int64_t)T);
        at.n_q = i1 - i0;
        at.n_kv = (int)kv_end;
        const float *qi = q + (int64_t)i0 * H * HD;
        float *out = att + (int64_t)i0 * H * HD;
        int rc = f->ref ? ops_attention_ref(&at, out, qi, k, v, e) : ops_attention(pool, &at, out, qi, k, v, e);
        if (rc) return UM_FAIL;
        i0 = i1;
    }
    return UM_OK;
}

/* ------------------------------------------------------------------ the pass */

/* Where one canvas of a pass lives in the shared buffers: its carried rows (every position, or
 * the active ones) from row r0 of x, xn, kc, vc...; its T positions' K/V from row k0 of k, v
 * (and slot); its head rows from row h0 of the head's rows. */
typedef struct seg_at {
    int64_t r0, n, k0, h0;
    bool    partial;
} seg_at;

/* One canvas's checks, before anything runs. */
static int check_pass(const um_pass *p, um_err *e) {
    const int T = p->n_tokens;
    if (T <= 0) return um_errf(e, "canvas of %d tokens", T);
    if (p->n_rows < 0 || p->n_rows > T) return um_errf(e, "bad row count %d", p->n_rows);
    for (int i = 0; i < p->n_rows; i++)
        if (p->rows[i] < 0 || p->rows[i] >= T) return um_errf(e, "row %d outside the canvas", p->rows[i]);
    if (p->kv && T > p->kv->max_tokens)
        return um_errf(e, "canvas of %d tokens exceeds the K/V cache's %d", T, p->kv->max_tokens);
    if (p->active) {
        if (!p->kv) return um_errf(e, "a partial pass needs a K/V cache");
        if (p->kv->n_tokens != T)
            return um_errf(e, "the K/V cache holds no canvas of %d tokens (a full pass fills it)", T);
        if (p->n_active <= 0 || p->n_active > T) return um_errf(e, "bad active row count %d", p->n_active);
        for (int i = 0; i < p->n_active; i++)
            if (p->active[i] < 0 || p->active[i] >= T) return um_errf(e, "active row %d outside the canvas", p->active[i]);
    }
    return UM_OK;
}

/* forward_run (active NULL, kv NULL), a full pass filling kv (active NULL), or a partial pass
 * over the active rows reading kv (see forward.h), for n canvases at once (forward_run_multi):
 * their rows go through every weight product together, each canvas's attention sees only its
 * own keys. The rows carried through the layers are every position (full) or the active ones
 * (partial); on the last layer the fast path carries only the head's rows past the attention. */
static int run_passes(um_forward *f, const um_pass *ps, int n, um_err *e) {
    const um_model *m = f->m;
    const um_hparams *hp = &m->hp;
    if (n <= 0) return um_errf(e, "no canvas to run");
    if (m->arch->gemma4) {
        if (n > 1 || ps[0].kv) return um_errf(e, "K/V cache passes are not supported for %s yet", m->arch->name);
        return fwg_run(f, ps[0].tokens, ps[0].n_tokens, -1, NULL, ps[0].rows, ps[0].n_rows, ps[0].logits, FWG_FULL, e);
    }
    seg_at sa[UM_FW_MAX_PASSES];
    if (n > UM_FW_MAX_PASSES) return um_errf(e, "%d canvases in one pass (at most %d)", n, UM_FW_MAX_PASSES);
    int64_t TT = 0, N = 0, NR = 0;
    bool any_partial = false;
    for (int s = 0; s < n; s++) {
        if (check_pass(&ps[s], e)) return UM_FAIL;
        for (int t = 0; t < s; t++)
            if (ps[s].kv && ps[s].kv == ps[t].kv) return um_errf(e, "one K/V cache given to two canvases of a pass");
        sa[s] = (seg_at){ .r0 = N, .n = ps[s].active ? ps[s].n_active : ps[s].n_tokens, .k0 = TT, .h0 = NR,
                          .partial = ps[s].active != NULL };
        any_partial |= sa[s].partial;
        TT += ps[s].n_tokens;
        N += sa[s].n;
        NR += ps[s].n_rows;
    }
    if (n == 1 && TT > f->max_tokens)
        return um_errf(e, "canvas of %" PRId64 " tokens exceeds the prepared maximum of %d", TT, f->max_tokens);
    if (TT > INT32_MAX / 2 || forward_reserve(f, (int)TT, e)) return UM_FAIL;
    /* the carried rows' canvas positions and tokens, each canvas's slots, the head's rows */
    int32_t *cpos = f->cpos, *ctok = f->tok_sel, *hrow = f->hrow;
    for (int s = 0; s < n; s++) {
        const um_pass *p = &ps[s];
        int32_t *slot = f->slot + sa[s].k0;
        if (sa[s].partial) {
            for (int q = 0; q < p->n_tokens; q++) slot[q] = -1;
            for (int i = 0; i < p->n_active; i++) {
                int q = p->active[i];
                if (slot[q] >= 0) return um_errf(e, "active row %d given twice", q);
                slot[q] = i;
                cpos[sa[s].r0 + i] = q;
                ctok[sa[s].r0 + i] = p->tokens[q];
            }
        } else {
            for (int q = 0; q < p->n_tokens; q++) {
                slot[q] = q;
                cpos[sa[s].r0 + q] = q;
                ctok[sa[s].r0 + q] = p->tokens[q];
            }
        }
        for (int i = 0; i < p->n_rows; i++) {
            if (slot[p->rows[i]] < 0) return um_errf(e, "logits row %d is not an active row", p->rows[i]);
            hrow[sa[s].h0 + i] = (int32_t)sa[s].r0 + slot[p->rows[i]];
        }
        if (p->drift) *p->drift = 0;
        if (p->kv && !p->active) p->kv->n_tokens = 0;   /* holds no canvas until this pass completes */
    }
    const int64_t E = hp->n_embd, HD = hp->head_dim, H = hp->n_head, HKV = hp->n_head_kv, NKV = HKV * HD;
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
        const bool subset = !f->ref && il == hp->n_layer - 1 && NR < N;
        const int64_t nq = subset ? NR : N;
        /* With only full canvases the carried rows are the K/V rows; with a partial one the
         * carried rows' K/V are computed apart (kc, vc), then laid over each canvas's. */
        float *kd = any_partial ? f->kc : f->k, *vd = any_partial ? f->vc : f->v;

        fw_rmsnorm(f, f->xn, f->x, l->attn_norm, N, (int)E);
        fw_mark(f, UM_FW_NORM);
        fw_linear(f, fl ? &fl->wk : NULL, &l->wk, f->xn, N, kd, l->bk);
        fw_linear(f, fl ? &fl->wv : NULL, &l->wv, f->xn, N, vd, l->bv);
        if (subset) {
            fw_gather(f->hidden, f->xn, hrow, NR, E);
            fw_linear(f, fl ? &fl->wq : NULL, &l->wq, f->hidden, nq, f->q, l->bq);
            /* positions of the kept rows, for RoPE on q */
            for (int64_t i = 0; i < NR; i++) f->rows_sel[i] = cpos[hrow[i]];
        } else {
            fw_linear(f, fl ? &fl->wq : NULL, &l->wq, f->xn, N, f->q, l->bq);
        }
        fw_mark(f, UM_FW_QKV);
        if (m->arch->qk_norm) {
            fw_rmsnorm(f, f->q, f->q, l->q_norm, nq * H, (int)HD);
            fw_rmsnorm(f, kd, kd, l->k_norm, N * HKV, (int)HD);
            fw_mark(f, UM_FW_NORM);
        }
        const int32_t *qpos = subset ? f->rows_sel : cpos;
        int rc = f->ref ? ops_rope_ref(&rope, qpos, (int)nq, f->q, (int)H, NULL, 0, e)
                        : ops_rope(pool, &rope, qpos, (int)nq, f->q, (int)H, NULL, 0, e);
        if (!rc) rc = f->ref ? ops_rope_ref(&rope, cpos, (int)N, kd, (int)HKV, NULL, 0, e)
                             : ops_rope(pool, &rope, cpos, (int)N, kd, (int)HKV, NULL, 0, e);
        if (rc) return UM_FAIL;
        fw_mark(f, UM_FW_ROPE);
        for (int s = 0; s < n; s++) {
            const um_pass *p = &ps[s];
            if (!p->kv) {
                if (any_partial) {          /* a full canvas without a cache beside a partial one */
                    memcpy(f->k + sa[s].k0 * NKV, f->kc + sa[s].r0 * NKV, (size_t)(p->n_tokens * NKV) * sizeof(float));
                    memcpy(f->v + sa[s].k0 * NKV, f->vc + sa[s].r0 * NKV, (size_t)(p->n_tokens * NKV) * sizeof(float));
                }
                continue;
            }
            if (p->active && p->drift && il == hp->n_layer - 1)
                *p->drift = kv_drift(f, p->kv, il, p->active, p->n_active, p->tokens, f->kc + sa[s].r0 * NKV);
            kv_job kj = { .f = f, .kv = p->kv, .il = il, .store = !p->active, .keep = p->active && m->arch->block_causal,
                          .k0 = sa[s].k0, .r0 = sa[s].r0, .from_kc = any_partial };
            pool_for(pool, p->n_tokens, kv_one, &kj);
        }
        fw_mark(f, UM_FW_KV);
        /* each canvas's queries over its own keys: its carried rows, or its head rows */
        for (int s = 0; s < n; s++) {
            const int64_t q0 = subset ? sa[s].h0 : sa[s].r0, nqs = subset ? ps[s].n_rows : sa[s].n;
            if (nqs == 0) continue;
            if (attend(f, f->q + q0 * H * HD, f->k + sa[s].k0 * NKV, f->v + sa[s].k0 * NKV, f->att + q0 * H * HD,
                       qpos + q0, (int)nqs, ps[s].n_tokens, e))
                return UM_FAIL;
        }
        fw_mark(f, UM_FW_ATTN);
        if (subset) {
            /* shrink the residual stream to the kept rows, in the caller's order */
            fw_gather(f->hidden, f->x, hrow, NR, E);
            memcpy(f->x, f->hidden, (size_t)(NR * E) * sizeof(float));
            fw_mark(f, UM_FW_GATHER);
        }
        fw_linear(f, fl ? &fl->wo : NULL, &l->wo, f->att, nq, f->xn, l->bo);
        fw_mark(f, UM_FW_WO);
        fw_add(f, f->x, f->x, f->xn, nq * E);
        fw_mark(f, UM_FW_ADD);
        fw_rmsnorm(f, f->xn, f->x, l->ffn_norm, nq, (int)E);
        fw_mark(f, UM_FW_NORM);
        if (fw_ffn(f, il, f->x, f->xn, (int)nq, e)) return UM_FAIL;
    }
    const bool subset_done = !f->ref && NR < N;
    if (subset_done) memcpy(f->hidden, f->x, (size_t)(NR * E) * sizeof(float));
    else fw_gather(f->hidden, f->x, hrow, NR, E);
    fw_mark(f, UM_FW_GATHER);
    fw_rmsnorm(f, f->hidden, f->hidden, m->output_norm, NR, (int)E);
    /* the head per canvas, straight into its logits */
    for (int s = 0; s < n; s++)
        if (ps[s].n_rows > 0)
            fw_linear(f, &f->output, &m->output, f->hidden + sa[s].h0 * E, ps[s].n_rows, ps[s].logits, m->output_b);
    fw_mark(f, UM_FW_HEAD);
    for (int s = 0; s < n; s++) {
        const um_pass *p = &ps[s];
        if (p->kv && !p->active) {
            memcpy(p->kv->tok, p->tokens, (size_t)p->n_tokens * sizeof *p->tokens);
            p->kv->n_tokens = p->n_tokens;
        } else if (p->kv && m->arch->block_causal) {
            for (int i = 0; i < p->n_active; i++) p->kv->tok[p->active[i]] = p->tokens[p->active[i]];
        }
    }
    fw_prof_end(f);
    return UM_OK;
}

static int run_pass(um_forward *f, um_kvcache *kv, const int32_t *tokens, int n_tokens, const int32_t *act,
                    int n_act, const int32_t *rows, int n_rows, float *logits, float *drift, um_err *e) {
    um_pass p = { .kv = kv, .tokens = tokens, .n_tokens = n_tokens, .active = act, .n_active = n_act,
                  .rows = rows, .n_rows = n_rows, .logits = logits, .drift = drift };
    return run_passes(f, &p, 1, e);
}

int forward_run_multi(um_forward *f, const um_pass *passes, int n, um_err *e) { return run_passes(f, passes, n, e); }

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

static int cpu_run_multi(void *impl, const um_pass *passes, int n, um_err *e) {
    return forward_run_multi(impl, passes, n, e);
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
    b->run_multi = f->m->arch->gemma4 ? NULL : cpu_run_multi;
    b->run_dg = f->m->arch->gemma4 ? cpu_run_dg : NULL;
    b->dg_prompt = f->m->arch->gemma4 ? cpu_dg_prompt : NULL;
    b->dg_prompt_bytes = cpu_dg_prompt_bytes;
    b->dg_sc_exact_rows = cpu_dg_sc_exact_rows;
}
