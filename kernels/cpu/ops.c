/*
 * ops: scalar references, kernel dispatch and threading of the transformer ops (ops.h).
 *
 * Layout of this file: kernel-set selection (the scalar row kernels, ops_kern_ref, are in
 * ops_ref.c, below this file and the SIMD sets, which fall back on them); the threaded drivers that split rows, tokens or
 * (head, query tile) blocks over the pool and call the active kernel set; then the ops
 * that are not worth vectorizing (embedding gather, MoE routing and grouping).
 *
 * Invariants: every row/head/token is computed by exactly one thread with the same
 * kernel, so results do not depend on the thread count; nothing here allocates.
 */
#include "ops.h"

#include "cpu.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ------------------------------------------------------------------ kernel selection */

static const char *const isa_names[UM_OPS_ISA_COUNT] = { "ref", "avx2", "avx512", "neon" };

const char *ops_isa_name(um_ops_isa isa) {
    return (unsigned)isa < UM_OPS_ISA_COUNT ? isa_names[isa] : "?";
}

bool ops_isa_available(um_ops_isa isa) {
    const um_cpu *c = cpu_features();
    switch (isa) {
    case UM_OPS_REF:    return true;
    case UM_OPS_AVX2:   return c->avx2 && c->fma && c->f16c && c->os_avx;
    case UM_OPS_AVX512: return c->avx512f && c->avx512bw && c->avx512vl && c->avx512dq &&
                               c->os_avx512 && ops_isa_available(UM_OPS_AVX2);
#if defined(__aarch64__)
    case UM_OPS_NEON:   return c->neon;
#endif
    default:            return false;
    }
}

/* Each architecture's sets exist only where the Makefile builds its folder
 * (kernels/cpu/arch/x86 or arch/arm); the other architecture's flags of cpu_features()
 * are false there, so those slots are never chosen. */
static const um_ops_kern *const isa_kern[UM_OPS_ISA_COUNT] = {
#if defined(__x86_64__) || defined(__i386__)
    &ops_kern_ref, &ops_kern_avx2, &ops_kern_avx512, &ops_kern_ref,
#elif defined(__aarch64__)
    &ops_kern_ref, &ops_kern_ref, &ops_kern_ref, &ops_kern_neon,
#else
    &ops_kern_ref, &ops_kern_ref, &ops_kern_ref, &ops_kern_ref,
#endif
};

static atomic_int g_isa = -1;       /* um_ops_isa once chosen */

um_ops_isa ops_isa_best(void) {
    static const um_ops_isa order[] = { UM_OPS_AVX512, UM_OPS_AVX2, UM_OPS_NEON };
    for (size_t i = 0; i < sizeof order / sizeof order[0]; i++)
        if (ops_isa_available(order[i])) return order[i];
    return UM_OPS_REF;
}

/* UNMASK_KERNEL names the matmul kernel too (matmul.c checks the name): here "ref" means the
 * scalar set, an x86 name caps the set at that width, an AArch64 name means neon. */
static um_ops_isa isa_default(void) {
    const char *env = getenv("UNMASK_KERNEL");
    um_ops_isa best = ops_isa_best();
    if (env && *env) {
        if (!strcasecmp(env, "ref")) return UM_OPS_REF;
        if (!strcasecmp(env, "avx2") && best == UM_OPS_AVX512) return UM_OPS_AVX2;
    }
    return best;
}

um_ops_isa ops_active(void) {
    int isa = atomic_load_explicit(&g_isa, memory_order_acquire);
    if (isa < 0) {
        int expect = -1;
        isa = isa_default();
        if (!atomic_compare_exchange_strong(&g_isa, &expect, isa)) isa = expect;
    }
    return (um_ops_isa)isa;
}

int ops_select(um_ops_isa isa, um_err *e) {
    if (!ops_isa_available(isa))
        return um_errf(e, "ops: kernel set '%s' is not available on this CPU", ops_isa_name(isa));
    atomic_store_explicit(&g_isa, (int)isa, memory_order_release);
    return UM_OK;
}

static const um_ops_kern *kern(void) { return isa_kern[ops_active()]; }

/* ------------------------------------------------------------------ elementwise */

/* Elements per chunk: big enough that a chunk costs far more than handing it out,
 * small enough to spread a (160, 4096) activation over several threads. */
#define ELEM_CHUNK 16384

typedef struct elem_job {
    void (*fn)(float *, const float *, const float *, int64_t);
    float       *y;
    const float *a, *b;
    int64_t      n;
} elem_job;

static void elem_chunk(void *arg, int64_t c, int thread_id) {
    const elem_job *j = arg;
    int64_t i0 = c * ELEM_CHUNK, n = UM_MIN(ELEM_CHUNK, j->n - i0);
    j->fn(j->y + i0, j->a + i0, j->b + i0, n);
}

static void elem_run(um_pool *pool, void (*fn)(float *, const float *, const float *, int64_t),
                     float *y, const float *a, const float *b, int64_t n) {
    if (n <= 0) return;
    if (n < 2 * ELEM_CHUNK || pool_threads(pool) == 1) { fn(y, a, b, n); return; }
    elem_job j = { fn, y, a, b, n };
    pool_for(pool, (n + ELEM_CHUNK - 1) / ELEM_CHUNK, elem_chunk, &j);
}

/* a kernel set without them (one added before they were) falls back to the scalar ones */
void ops_f16_to_f32(const uint16_t *src, float *dst, int64_t n) {
    (kern()->f16_to_f32 ? kern()->f16_to_f32 : ops_kern_ref.f16_to_f32)(src, dst, n);
}
void ops_f32_to_f16(const float *src, uint16_t *dst, int64_t n) {
    (kern()->f32_to_f16 ? kern()->f32_to_f16 : ops_kern_ref.f32_to_f16)(src, dst, n);
}

void ops_add(um_pool *pool, float *y, const float *a, const float *b, int64_t n) {
    elem_run(pool, kern()->add, y, a, b, n);
}
void ops_mul(um_pool *pool, float *y, const float *a, const float *b, int64_t n) {
    elem_run(pool, kern()->mul, y, a, b, n);
}
void ops_swiglu(um_pool *pool, float *y, const float *gate, const float *up, int64_t n) {
    elem_run(pool, kern()->swiglu, y, gate, up, n);
}
void ops_geglu(um_pool *pool, float *y, const float *gate, const float *up, int64_t n) {
    elem_run(pool, kern()->geglu, y, gate, up, n);
}
typedef struct gemm_job {
    void (*fn)(float *, int64_t, const float *, int64_t, const float *, int64_t, int, int, int);
    float       *y;
    const float *a, *b;
    int64_t      ldy, lda, ldb;
    int          n, k, m;
} gemm_job;

/* One 64-column tile, k in blocks of GEMM_KB rows copied into a contiguous panel first: a
 * row of b may be many pages long (a 2816-float embedding row is 11 KB), and a 256-row panel
 * read in place touches 256 pages every row tile. Storing y between k blocks and reloading
 * it is exact, so each element is still one chain of fused multiply-adds in k order. */
#define GEMM_KB 64

static void gemm_tile(void *arg, int64_t c, int thread_id) {
    const gemm_job *j = arg;
    const int64_t j0 = c * UM_GEMM_TILE_COLS;
    const int w = (int)UM_MIN(UM_GEMM_TILE_COLS, j->m - j0);
    float panel[GEMM_KB * UM_GEMM_TILE_COLS];
    for (int k0 = 0; k0 < j->k; k0 += GEMM_KB) {
        const int kb = UM_MIN(GEMM_KB, j->k - k0);
        for (int kk = 0; kk < kb; kk++)
            memcpy(panel + kk * UM_GEMM_TILE_COLS, j->b + (int64_t)(k0 + kk) * j->ldb + j0, sizeof(float) * (size_t)w);
        j->fn(j->y + j0, j->ldy, j->a + k0, j->lda, panel, UM_GEMM_TILE_COLS, j->n, kb, w);
    }
}

void ops_gemm_acc(um_pool *pool, float *y, int64_t ldy, const float *a, int64_t lda,
                  const float *b, int64_t ldb, int n, int k, int m) {
    if (n <= 0 || k <= 0 || m <= 0) return;
    gemm_job j = { kern()->gemm_acc ? kern()->gemm_acc : ops_gemm_acc_ref, y, a, b, ldy, lda, ldb, n, k, m };
    int64_t tiles = (m + UM_GEMM_TILE_COLS - 1) / UM_GEMM_TILE_COLS;
    pool_for((int64_t)n * k * m < (1 << 16) ? NULL : pool, tiles, gemm_tile, &j);
}

/* ------------------------------------------------------------------ BF16 pair GEMM */

static atomic_bool g_bf16_dot_allowed = true;

void ops_bf16_dot_allow(bool allow) { atomic_store(&g_bf16_dot_allowed, allow); }

bool ops_bf16_dot(void) {
    return kern()->gemm_bf16_dot && cpu_features()->avx512bf16 && atomic_load(&g_bf16_dot_allowed);
}

/* A pair is two BF16 values in memory order on the little-endian targets unmask builds for
 * (x86-64, AArch64): the pairs of x are x converted in place order. */
void ops_bf16_pairs(uint32_t *y, const float *x, int64_t n_pairs) {
    (kern()->f32_to_bf16 ? kern()->f32_to_bf16 : ops_kern_ref.f32_to_bf16)(x, (uint16_t *)y, 2 * n_pairs);
}

void ops_bf16_pack_b(uint32_t *b, int kp, int p, const float *even, const float *odd, int m) {
    void (*pack)(uint32_t *, const float *, const float *, int) = kern()->bf16_pack2 ? kern()->bf16_pack2 : ops_kern_ref.bf16_pack2;
    for (int j0 = 0; j0 < m; j0 += UM_GEMM_TILE_COLS) {
        uint32_t *dst = b + ((int64_t)(j0 / UM_GEMM_TILE_COLS) * kp + p) * UM_GEMM_TILE_COLS;
        const int w = (int)UM_MIN(UM_GEMM_TILE_COLS, m - j0);
        pack(dst, even + j0, odd ? odd + j0 : NULL, w);
        for (int j = w; j < UM_GEMM_TILE_COLS; j++) dst[j] = 0;
    }
}

typedef struct gemm_bf16_job {
    void (*fn)(float *, int64_t, const uint32_t *, int64_t, const uint32_t *, int, int, int);
    float          *y;
    const uint32_t *a, *b;
    int64_t         ldy, lda;
    int             n, kp, m;
} gemm_bf16_job;

static void gemm_bf16_tile(void *arg, int64_t t, int thread_id) {
    (void)thread_id;
    const gemm_bf16_job *j = arg;
    const int64_t j0 = t * UM_GEMM_TILE_COLS;
    j->fn(j->y + j0, j->ldy, j->a, j->lda, j->b + t * j->kp * UM_GEMM_TILE_COLS, j->n, j->kp,
          (int)UM_MIN(UM_GEMM_TILE_COLS, j->m - j0));
}

void ops_gemm_bf16_acc(um_pool *pool, float *y, int64_t ldy, const uint32_t *a, int64_t lda,
                       const uint32_t *b, int n, int kp, int m) {
    if (n <= 0 || kp <= 0 || m <= 0) return;
    gemm_bf16_job j = { ops_bf16_dot() ? kern()->gemm_bf16_dot : kern()->gemm_bf16 ? kern()->gemm_bf16 : ops_kern_ref.gemm_bf16,
                        y, a, b, ldy, lda, n, kp, m };
    pool_for((int64_t)n * kp * m < (1 << 15) ? NULL : pool, (m + UM_GEMM_TILE_COLS - 1) / UM_GEMM_TILE_COLS, gemm_bf16_tile, &j);
}

typedef struct softcap_job { void (*fn)(float *, int64_t, float); float *x; int64_t n; float cap; } softcap_job;

static void softcap_chunk(void *arg, int64_t c, int thread_id) {
    (void)thread_id;
    const softcap_job *j = arg;
    int64_t i0 = c * ELEM_CHUNK;
    j->fn(j->x + i0, UM_MIN(ELEM_CHUNK, j->n - i0), j->cap);
}

void ops_softcap(um_pool *pool, float *x, int64_t n, float cap) {
    if (n <= 0) return;
    softcap_job j = { kern()->softcap ? kern()->softcap : ops_softcap_ref, x, n, cap };
    pool_for(n < 2 * ELEM_CHUNK ? NULL : pool, (n + ELEM_CHUNK - 1) / ELEM_CHUNK, softcap_chunk, &j);
}

/* ------------------------------------------------------------------ row-wise */

/* Rows per chunk so that a chunk holds about ELEM_CHUNK elements. */
static int64_t rows_per_chunk(int n) {
    int64_t r = ELEM_CHUNK / (n > 0 ? n : 1);
    return r > 0 ? r : 1;
}

typedef struct row_job {
    const um_ops_kern *k;
    float             *y;
    const float       *x, *w;
    int64_t            n_rows, per;
    int                n;
    float              eps;
} row_job;

static void rmsnorm_chunk(void *arg, int64_t c, int thread_id) {
    const row_job *j = arg;
    int64_t r1 = UM_MIN(j->n_rows, (c + 1) * j->per);
    for (int64_t r = c * j->per; r < r1; r++)
        j->k->rmsnorm_row(j->y + r * j->n, j->x + r * j->n, j->w, j->n, j->eps);
}

static void add_bias_chunk(void *arg, int64_t c, int thread_id) {
    const row_job *j = arg;
    int64_t r1 = UM_MIN(j->n_rows, (c + 1) * j->per);
    for (int64_t r = c * j->per; r < r1; r++) j->k->add(j->y + r * j->n, j->x + r * j->n, j->w, j->n);
}

static void softmax_chunk(void *arg, int64_t c, int thread_id) {
    const row_job *j = arg;
    int64_t r1 = UM_MIN(j->n_rows, (c + 1) * j->per);
    for (int64_t r = c * j->per; r < r1; r++) j->k->softmax_row(j->y + r * j->n, j->n);
}

void ops_rmsnorm(um_pool *pool, float *y, const float *x, const float *w,
                 int64_t n_rows, int n, float eps) {
    if (n_rows <= 0 || n <= 0) return;
    row_job j = { kern(), y, x, w, n_rows, rows_per_chunk(n), n, eps };
    pool_for(n_rows * n < 2 * ELEM_CHUNK ? NULL : pool, (n_rows + j.per - 1) / j.per, rmsnorm_chunk, &j);
}

void ops_rmsnorm_ref(float *y, const float *x, const float *w, int64_t n_rows, int n, float eps) {
    for (int64_t r = 0; r < n_rows; r++) ops_kern_ref.rmsnorm_row(y + r * n, x + r * n, w, n, eps);
}

void ops_add_bias(um_pool *pool, float *y, const float *x, const float *bias, int64_t n_rows, int n) {
    if (n_rows <= 0 || n <= 0) return;
    row_job j = { kern(), y, x, bias, n_rows, rows_per_chunk(n), n, 0 };
    pool_for(n_rows * n < 2 * ELEM_CHUNK ? NULL : pool, (n_rows + j.per - 1) / j.per, add_bias_chunk, &j);
}

void ops_add_bias_ref(float *y, const float *x, const float *bias, int64_t n_rows, int n) {
    for (int64_t r = 0; r < n_rows; r++) ops_add_ref(y + r * n, x + r * n, bias, n);
}

void ops_softmax(um_pool *pool, float *x, int64_t n_rows, int n) {
    if (n_rows <= 0 || n <= 0) return;
    row_job j = { kern(), x, x, NULL, n_rows, rows_per_chunk(n), n, 0 };
    pool_for(n_rows * n < 2 * ELEM_CHUNK ? NULL : pool, (n_rows + j.per - 1) / j.per, softmax_chunk, &j);
}

void ops_softmax_ref(float *x, int64_t n_rows, int n) {
    for (int64_t r = 0; r < n_rows; r++) ops_kern_ref.softmax_row(x + r * n, n);
}

/* ------------------------------------------------------------------ RoPE */

static int rope_check(const um_rope *r, const int32_t *pos, int n_tokens, const float *q,
                      int n_head, const float *k, int n_head_kv, um_err *e) {
    if (!r || !pos || !q) return um_errf(e, "rope: missing parameters, positions or q");
    if (r->mode != UM_ROPE_NORM && r->mode != UM_ROPE_NEOX)
        return um_errf(e, "rope: unknown mode %d", (int)r->mode);
    if (r->head_dim < 2 || r->head_dim > UM_OPS_MAX_HEAD_DIM || r->head_dim % 2)
        return um_errf(e, "rope: head_dim %d must be even and in [2, %d]", r->head_dim, UM_OPS_MAX_HEAD_DIM);
    if (r->n_dims < 2 || r->n_dims > r->head_dim || r->n_dims % 2)
        return um_errf(e, "rope: n_dims %d must be even and in [2, head_dim %d]", r->n_dims, r->head_dim);
    if (!(r->freq_base > 0) || !isfinite(r->freq_base))
        return um_errf(e, "rope: freq_base %g must be positive", (double)r->freq_base);
    if (n_tokens < 0 || n_head < 1 || (k && n_head_kv < 1))
        return um_errf(e, "rope: bad counts (n_tokens %d, n_head %d, n_head_kv %d)", n_tokens, n_head, n_head_kv);
    return UM_OK;
}

/* The per-token rotation table in the layout the kernels read (see um_ops_kern). */
static void rope_table(const um_rope *r, int32_t pos, float *cs) {
    const float theta_scale = powf(r->freq_base, -2.0f / (float)r->n_dims);
    const float freq_scale = r->freq_scale > 0 ? r->freq_scale : 1.0f;
    const int half = r->n_dims / 2;
    float theta = (float)pos;
    for (int i = 0; i < half; i++) {
        float t = freq_scale * (r->freq_factors ? theta / r->freq_factors[i] : theta);
        float c = cosf(t), s = sinf(t);
        if (r->mode == UM_ROPE_NORM) {
            cs[2 * i] = c;
            cs[2 * i + 1] = s;
            cs[r->n_dims + 2 * i] = -s;
            cs[r->n_dims + 2 * i + 1] = c;
        } else {
            cs[i] = c;
            cs[half + i] = s;
        }
        theta *= theta_scale;
    }
}

typedef struct rope_job {
    const um_ops_kern *k;
    const um_rope     *r;
    const int32_t     *pos;
    float             *q, *kk;
    int                n_head, n_head_kv;
} rope_job;

static void rope_token(const rope_job *j, int64_t t) {
    float cs[2 * UM_OPS_MAX_HEAD_DIM];
    const int hd = j->r->head_dim, nd = j->r->n_dims;
    void (*rot)(float *, const float *, int) = j->r->mode == UM_ROPE_NORM ? j->k->rope_norm : j->k->rope_neox;
    rope_table(j->r, j->pos[t], cs);
    float *q = j->q + t * j->n_head * hd;
    for (int h = 0; h < j->n_head; h++) rot(q + h * hd, cs, nd);
    if (j->kk) {
        float *k = j->kk + t * j->n_head_kv * hd;
        for (int h = 0; h < j->n_head_kv; h++) rot(k + h * hd, cs, nd);
    }
}

static void rope_chunk(void *arg, int64_t c, int thread_id) { rope_token(arg, c); }

int ops_rope(um_pool *pool, const um_rope *r, const int32_t *pos, int n_tokens,
             float *q, int n_head, float *k, int n_head_kv, um_err *e) {
    if (rope_check(r, pos, n_tokens, q, n_head, k, n_head_kv, e)) return UM_FAIL;
    rope_job j = { kern(), r, pos, q, k, n_head, n_head_kv };
    int64_t work = (int64_t)n_tokens * (n_head + (k ? n_head_kv : 0)) * r->n_dims;
    pool_for(work < 2 * ELEM_CHUNK ? NULL : pool, n_tokens, rope_chunk, &j);
    return UM_OK;
}

int ops_rope_ref(const um_rope *r, const int32_t *pos, int n_tokens,
                 float *q, int n_head, float *k, int n_head_kv, um_err *e) {
    if (rope_check(r, pos, n_tokens, q, n_head, k, n_head_kv, e)) return UM_FAIL;
    rope_job j = { &ops_kern_ref, r, pos, q, k, n_head, n_head_kv };
    for (int t = 0; t < n_tokens; t++) rope_token(&j, t);
    return UM_OK;
}

/* ------------------------------------------------------------------ attention */

static int attn_check(const um_attn *a, const float *out, const float *q, const float *k,
                      const float *v, um_err *e) {
    if (!a || !out || !q || !k || !v) return um_errf(e, "attention: missing buffer");
    if (a->n_q < 0 || a->n_kv < 0 || a->n_head < 1 || a->n_head_kv < 1)
        return um_errf(e, "attention: bad counts (n_q %d, n_kv %d, n_head %d, n_head_kv %d)",
                       a->n_q, a->n_kv, a->n_head, a->n_head_kv);
    if (a->n_head % a->n_head_kv)
        return um_errf(e, "attention: n_head_kv %d does not divide n_head %d", a->n_head_kv, a->n_head);
    if (a->head_dim < 1 || a->head_dim > UM_OPS_MAX_HEAD_DIM)
        return um_errf(e, "attention: head_dim %d outside [1, %d]", a->head_dim, UM_OPS_MAX_HEAD_DIM);
    if (!a->kv_lo != !a->kv_hi) return um_errf(e, "attention: kv_lo and kv_hi come together");
    if (!(a->scale >= 0) || !isfinite(a->scale)) return um_errf(e, "attention: bad scale %g", (double)a->scale);
    return UM_OK;
}

typedef struct attn_job {
    const um_ops_kern *k;
    const um_attn     *a;
    float             *out;
    const float       *q, *kk, *v;
    int                n_qblocks;
} attn_job;

/* Block c = (head, query tile), heads outermost so neighbouring blocks share K/V. With
 * per-query key ranges the tile runs as sub-blocks of consecutive queries that share a
 * range, each over its own key slice (the kernels see an ordinary unmasked block). */
static void attn_chunk(void *arg, int64_t c, int thread_id) {
    (void)thread_id;
    const attn_job *j = arg;
    const um_attn *a = j->a;
    const int hd = a->head_dim;
    const int h = (int)(c / j->n_qblocks), qb = (int)(c % j->n_qblocks);
    const int g = h / (a->n_head / a->n_head_kv);
    const int t0 = qb * UM_ATTN_BLOCK_Q, t_end = UM_MIN(t0 + UM_ATTN_BLOCK_Q, a->n_q);
    const int64_t q_stride = (int64_t)a->n_head * hd, kv_stride = (int64_t)a->n_head_kv * hd;
    for (int t = t0; t < t_end;) {
        int lo = 0, hi = a->n_kv, t1 = t_end;
        if (a->kv_lo) {
            lo = UM_MAX(a->kv_lo[t], 0);
            hi = UM_MIN(a->kv_hi[t], a->n_kv);
            t1 = t + 1;
            while (t1 < t_end && a->kv_lo[t1] == a->kv_lo[t] && a->kv_hi[t1] == a->kv_hi[t]) t1++;
        }
        um_attn_block b = {
            .out = j->out + t * q_stride + h * hd,
            .q = j->q + t * q_stride + h * hd,
            .k = j->kk + (int64_t)lo * kv_stride + g * hd,
            .v = j->v + (int64_t)lo * kv_stride + g * hd,
            .q_stride = q_stride,
            .kv_stride = kv_stride,
            .n_q = t1 - t,
            .n_kv = UM_MAX(hi - lo, 0),
            .head_dim = hd,
            .scale = a->scale > 0 ? a->scale : 1.0f / sqrtf((float)hd),
            .key_mask = a->key_mask ? a->key_mask + lo : NULL,
        };
        j->k->attn_block(&b);
        t = t1;
    }
}

static int attn_run(um_pool *pool, const um_ops_kern *k, const um_attn *a, float *out,
                    const float *q, const float *kk, const float *v, um_err *e) {
    if (attn_check(a, out, q, kk, v, e)) return UM_FAIL;
    attn_job j = { k, a, out, q, kk, v, (a->n_q + UM_ATTN_BLOCK_Q - 1) / UM_ATTN_BLOCK_Q };
    pool_for(pool, (int64_t)a->n_head * j.n_qblocks, attn_chunk, &j);
    return UM_OK;
}

int ops_attention(um_pool *pool, const um_attn *a, float *out,
                  const float *q, const float *k, const float *v, um_err *e) {
    return attn_run(pool, kern(), a, out, q, k, v, e);
}

int ops_attention_ref(const um_attn *a, float *out,
                      const float *q, const float *k, const float *v, um_err *e) {
    return attn_run(NULL, &ops_kern_ref, a, out, q, k, v, e);
}

/* ------------------------------------------------------------------ dequantization */

void ops_dequant_row(um_type type, const void *src, float *y, int64_t n) {
    const um_ops_kern *k = kern();
    if (k->dequant_row && k->dequant_row(type, src, y, n)) return;
    um_traits(type)->to_float_ref(src, y, n);
}

double ops_exp_shift(float *x, int64_t n, float shift) {
    return kern()->exp_shift(x, n, shift);
}

/* ------------------------------------------------------------------ embedding */

typedef struct embed_job {
    float                *out;
    const uint8_t        *table;
    um_type               type;
    size_t                row_bytes;
    int                   n_embd;
    const int32_t        *tokens;
    const um_type_traits *tr;
} embed_job;

static void embed_chunk(void *arg, int64_t t, int thread_id) {
    const embed_job *j = arg;
    const uint8_t *row = j->table + (size_t)j->tokens[t] * j->row_bytes;
    float *o = j->out + t * j->n_embd;
    switch (j->type) {
    case UM_TYPE_F32:
        memcpy(o, row, (size_t)j->n_embd * sizeof(float));
        break;
    case UM_TYPE_F16:
    case UM_TYPE_BF16:
        for (int i = 0; i < j->n_embd; i++) {
            uint16_t h;
            memcpy(&h, row + 2 * (size_t)i, 2);
            o[i] = j->type == UM_TYPE_F16 ? um_fp16_to_fp32(h) : um_bf16_to_fp32(h);
        }
        break;
    default:
        ops_dequant_row(j->type, row, o, j->n_embd);
        break;
    }
}

int ops_embed(um_pool *pool, float *out, const void *table, um_type type,
              int64_t n_vocab, int n_embd, const int32_t *tokens, int n_tokens, um_err *e) {
    if (!out || !table || (!tokens && n_tokens > 0) || n_embd < 1 || n_vocab < 1 || n_tokens < 0)
        return um_errf(e, "embed: bad arguments (n_vocab %lld, n_embd %d, n_tokens %d)",
                       (long long)n_vocab, n_embd, n_tokens);
    const um_type_traits *tr = NULL;
    if (type != UM_TYPE_F32 && type != UM_TYPE_F16 && type != UM_TYPE_BF16) {
        tr = um_traits(type);
        if (!tr || !tr->to_float_ref)
            return um_errf(e, "embed: cannot dequantize type %s", um_type_name(type));
    }
    uint32_t blck = um_type_blck(type), bytes = um_type_bytes(type);
    if (!blck || n_embd % blck)
        return um_errf(e, "embed: n_embd %d is not a multiple of %s's block of %u",
                       n_embd, um_type_name(type), blck);
    for (int t = 0; t < n_tokens; t++)
        if (tokens[t] < 0 || tokens[t] >= n_vocab)
            return um_errf(e, "embed: token id %d at position %d is outside the vocabulary of %lld",
                           tokens[t], t, (long long)n_vocab);
    embed_job j = { out, table, type, (size_t)(n_embd / blck) * bytes, n_embd, tokens, tr };
    pool_for((int64_t)n_tokens * n_embd < 2 * ELEM_CHUNK ? NULL : pool, n_tokens, embed_chunk, &j);
    return UM_OK;
}

/* ------------------------------------------------------------------ MoE */

/* Is (va, a) ranked before (vb, b)? Larger value first, then lower index; NaN last. */
static bool ranks_before(float va, int a, float vb, int b) {
    if (isnan(vb)) return !isnan(va) || a < b;
    if (isnan(va)) return false;
    return va > vb || (va == vb && a < b);
}

int ops_moe_route(const um_moe_cfg *c, const float *logits, int n_tokens,
                  int32_t *expert, float *weight, um_err *e) {
    if (!c || c->n_expert < 1 || c->k < 1 || c->k > c->n_expert || c->k > UM_MOE_MAX_K || n_tokens < 0)
        return um_errf(e, "moe: need 1 <= k <= min(n_expert, %d) (k %d, n_expert %d)",
                       UM_MOE_MAX_K, c ? c->k : 0, c ? c->n_expert : 0);
    if (c->gating != UM_MOE_SOFTMAX && c->gating != UM_MOE_SIGMOID)
        return um_errf(e, "moe: unknown gating %d", (int)c->gating);
    const int ne = c->n_expert, k = c->k;
    const float scale = c->scale != 0 ? c->scale : 1.0f;
    const int ng = c->n_group > 1 ? c->n_group : 0;
    if (ng && (ng > UM_MOE_MAX_GROUPS || ne % ng || c->n_group_used < 1 || c->n_group_used >= ng ||
               c->n_group_used * (ne / ng) < k))
        return um_errf(e, "moe: groups %d (used %d) do not fit %d experts, k %d", ng, c->n_group_used, ne, k);
    for (int t = 0; t < n_tokens; t++) {
        const float *z = logits + (int64_t)t * ne;
        int32_t *ex = expert + (int64_t)t * k;
        float *wt = weight + (int64_t)t * k;
        /* softmax as ops_softmax_ref: max first, exp in float, sum in double */
        float mx = -INFINITY, inv_sum = 1;
        if (c->gating == UM_MOE_SOFTMAX) {
            double sum = 0;
            for (int i = 0; i < ne; i++) if (z[i] > mx) mx = z[i];
            for (int i = 0; i < ne; i++) sum += expf(z[i] - mx);
            inv_sum = (float)(1.0 / sum);
        }
        /* group-limited routing: keep only the n_group_used groups whose two best keys sum highest */
        bool group_on[UM_MOE_MAX_GROUPS];
        if (ng) {
            const int per = ne / ng;
            float gscore[UM_MOE_MAX_GROUPS];
            for (int g = 0; g < ng; g++) {
                float b1 = -INFINITY, b2 = -INFINITY;
                for (int i = g * per; i < (g + 1) * per; i++) {
                    float p = c->gating == UM_MOE_SOFTMAX ? expf(z[i] - mx) * inv_sum : 1.0f / (1.0f + expf(-z[i]));
                    float key = c->bias ? p + c->bias[i] : p;
                    if (key > b1) { b2 = b1; b1 = key; }
                    else if (key > b2) b2 = key;
                }
                gscore[g] = per > 1 ? b1 + b2 : b1;
                group_on[g] = false;
            }
            for (int u = 0; u < c->n_group_used; u++) {
                int best = -1;
                for (int g = 0; g < ng; g++)
                    if (!group_on[g] && (best < 0 || gscore[g] > gscore[best])) best = g;
                group_on[best] = true;
            }
        }
        /* keep the k best so far in order, by insertion (k is small, typically 8) */
        float keys[UM_MOE_MAX_K];
        int n_sel = 0;
        for (int i = 0; i < ne; i++) {
            if (ng && !group_on[i / (ne / ng)]) continue;
            float p = c->gating == UM_MOE_SOFTMAX ? expf(z[i] - mx) * inv_sum
                                                  : 1.0f / (1.0f + expf(-z[i]));
            float key = c->bias ? p + c->bias[i] : p;
            int pos = n_sel;
            while (pos > 0 && ranks_before(key, i, keys[pos - 1], ex[pos - 1])) pos--;
            if (pos >= k) continue;
            for (int m = n_sel < k ? n_sel : k - 1; m > pos; m--) {
                keys[m] = keys[m - 1]; ex[m] = ex[m - 1]; wt[m] = wt[m - 1];
            }
            keys[pos] = key;
            ex[pos] = i;
            wt[pos] = p;
            if (n_sel < k) n_sel++;
        }
        if (c->norm_topk) {
            double s = 0;
            for (int m = 0; m < k; m++) s += wt[m];
            if (s > 0) for (int m = 0; m < k; m++) wt[m] = (float)(wt[m] / s);
        }
        if (scale != 1.0f) for (int m = 0; m < k; m++) wt[m] *= scale;
    }
    return UM_OK;
}

int ops_moe_group(const int32_t *expert, const float *weight, int n_tokens, int k, int n_expert,
                  int32_t *offset, int32_t *token, float *row_weight, int32_t *slot, um_err *e) {
    if (n_tokens < 0 || k < 1 || n_expert < 1)
        return um_errf(e, "moe: bad grouping counts (n_tokens %d, k %d, n_expert %d)", n_tokens, k, n_expert);
    const int64_t n = (int64_t)n_tokens * k;
    for (int i = 0; i <= n_expert; i++) offset[i] = 0;
    for (int64_t i = 0; i < n; i++) {
        if (expert[i] < 0 || expert[i] >= n_expert)
            return um_errf(e, "moe: expert id %d of token %lld outside [0, %d)",
                           expert[i], (long long)(i / k), n_expert);
        offset[expert[i] + 1]++;
    }
    for (int i = 0; i < n_expert; i++) offset[i + 1] += offset[i];
    /* counting sort, stable in token order; offset[e] is advanced as the fill cursor
     * and restored afterwards */
    for (int64_t i = 0; i < n; i++) {
        int32_t r = offset[expert[i]]++;
        token[r] = (int32_t)(i / k);
        row_weight[r] = weight[i];
        slot[i] = r;
    }
    for (int i = n_expert; i > 0; i--) offset[i] = offset[i - 1];
    offset[0] = 0;
    return UM_OK;
}

typedef struct gather_job {
    float         *dst;
    const float   *src;
    const int32_t *rows;
    int            width;
} gather_job;

static void gather_chunk(void *arg, int64_t i, int thread_id) {
    const gather_job *j = arg;
    memcpy(j->dst + i * j->width, j->src + (int64_t)j->rows[i] * j->width, (size_t)j->width * sizeof(float));
}

void ops_gather_rows(um_pool *pool, float *dst, const float *src, const int32_t *rows,
                     int64_t n_rows, int width) {
    gather_job j = { dst, src, rows, width };
    pool_for(n_rows * width < 2 * ELEM_CHUNK ? NULL : pool, n_rows, gather_chunk, &j);
}

typedef struct combine_job {
    const um_ops_kern *k;
    float             *out;
    const float       *y, *weight;
    const int32_t     *slot;
    int                n_choice, width;
    bool               accumulate;
} combine_job;

static void combine_chunk(void *arg, int64_t t, int thread_id) {
    const combine_job *j = arg;
    float *o = j->out + t * j->width;
    if (!j->accumulate) memset(o, 0, (size_t)j->width * sizeof *o);
    for (int m = 0; m < j->n_choice; m++)
        j->k->axpy(o, j->weight[t * j->n_choice + m], j->y + (int64_t)j->slot[t * j->n_choice + m] * j->width, j->width);
}

static void combine_run(um_pool *pool, const um_ops_kern *k, float *out, const float *y, const float *weight,
                        const int32_t *slot, int n_tokens, int n_choice, int width, bool accumulate) {
    combine_job j = { k, out, y, weight, slot, n_choice, width, accumulate };
    pool_for((int64_t)n_tokens * width * n_choice < 2 * ELEM_CHUNK ? NULL : pool, n_tokens, combine_chunk, &j);
}

void ops_moe_combine(um_pool *pool, float *out, const float *y, const float *weight,
                     const int32_t *slot, int n_tokens, int k, int width, bool accumulate) {
    combine_run(pool, kern(), out, y, weight, slot, n_tokens, k, width, accumulate);
}

void ops_moe_combine_ref(float *out, const float *y, const float *weight,
                         const int32_t *slot, int n_tokens, int k, int width, bool accumulate) {
    combine_run(NULL, &ops_kern_ref, out, y, weight, slot, n_tokens, k, width, accumulate);
}
