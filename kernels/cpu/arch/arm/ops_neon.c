/*
 * ops_neon: the AArch64 Advanced SIMD kernel set of ops (see ops.h, um_ops_kern), the twin of
 * arch/x86/ops_avx2.c with 4 lanes. NEON is baseline on AArch64, so ops.c uses it whenever
 * cpu_features() reports neon (always, on AArch64) unless UNMASK_KERNEL=ref.
 *
 * Same algorithms and numerics as ops_avx2.c: double accumulation of sums of squares and
 * softmax sums, the same polynomial exp (simd_exp_neon.h: 0 below -87, inf above 88), fused
 * multiply-adds where the AVX2 kernels fuse. Tails (n not a multiple of 4) go through a
 * 4-float buffer, so every element of a row gets the same arithmetic.
 */
#include "ops.h"

#include <arm_neon.h>
#include <math.h>
#include <string.h>

#include "simd_exp_neon.h"

/* e^x for 4 lanes; lanes below -87 give 0, above 88 inf (as exp8 of ops_avx2.c) */
static inline float32x4_t exp4(float32x4_t x) {
    const float32x4_t lo = vdupq_n_f32(-87.0f), hi = vdupq_n_f32(88.0f);
    uint32x4_t under = vcltq_f32(x, lo), over = vcgtq_f32(x, hi);
    float32x4_t y = exp4_core(vmaxq_f32(vminq_f32(x, hi), lo));
    y = vreinterpretq_f32_u32(vbicq_u32(vreinterpretq_u32_f32(y), under));
    return vbslq_f32(over, vdupq_n_f32(INFINITY), y);
}

/* The first `left` (< 4) floats of p in a vector, the rest 0; and the way back. */
static inline float32x4_t load_t(const float *p, int64_t left) {
    float t[4] = { 0 };
    memcpy(t, p, (size_t)left * sizeof(float));
    return vld1q_f32(t);
}
static inline void store_t(float *p, int64_t left, float32x4_t v) {
    float t[4];
    vst1q_f32(t, v);
    memcpy(p, t, (size_t)left * sizeof(float));
}
/* p[i..i+4) or, when fewer than 4 are left, the tail */
static inline float32x4_t ld(const float *p, int64_t i, int64_t n) {
    return n - i >= 4 ? vld1q_f32(p + i) : load_t(p + i, n - i);
}
static inline void st(float *p, int64_t i, int64_t n, float32x4_t v) {
    if (n - i >= 4) vst1q_f32(p + i, v);
    else store_t(p + i, n - i, v);
}

/* Add the 4 floats of v into two double accumulators. */
static inline void acc_pd(float64x2_t *lo, float64x2_t *hi, float32x4_t v) {
    *lo = vaddq_f64(*lo, vcvt_f64_f32(vget_low_f32(v)));
    *hi = vaddq_f64(*hi, vcvt_high_f64_f32(v));
}

/* ------------------------------------------------------------------ elementwise */

static void add_neon(float *y, const float *a, const float *b, int64_t n) {
    for (int64_t i = 0; i < n; i += 4) st(y, i, n, vaddq_f32(ld(a, i, n), ld(b, i, n)));
}

static void mul_neon(float *y, const float *a, const float *b, int64_t n) {
    for (int64_t i = 0; i < n; i += 4) st(y, i, n, vmulq_f32(ld(a, i, n), ld(b, i, n)));
}

static inline float32x4_t swiglu4(float32x4_t g, float32x4_t u) {
    float32x4_t d = vaddq_f32(vdupq_n_f32(1.0f), exp4(vnegq_f32(g)));
    return vmulq_f32(vdivq_f32(g, d), u);
}

static void swiglu_neon(float *y, const float *gate, const float *up, int64_t n) {
    for (int64_t i = 0; i < n; i += 4) st(y, i, n, swiglu4(ld(gate, i, n), ld(up, i, n)));
}

/* GELU as x / (1 + e^v) with v in double, split into float hi + lo: see geglu8 of
 * arch/x86/ops_avx2.c for why. */
static inline float64x2_t gelu_v2(float64x2_t d) {
    float64x2_t v = vmulq_f64(d, vfmaq_f64(vdupq_n_f64(UM_GELU_K1), vdupq_n_f64(UM_GELU_K3), vmulq_f64(d, d)));
    return vmaxq_f64(vminq_f64(v, vdupq_n_f64(120.0)), vdupq_n_f64(-120.0));
}

static inline float32x4_t geglu4(float32x4_t g, float32x4_t u) {
    const float32x4_t one = vdupq_n_f32(1.0f);
    float64x2_t v0 = gelu_v2(vcvt_f64_f32(vget_low_f32(g))), v1 = gelu_v2(vcvt_high_f64_f32(g));
    float32x4_t hi = vcvt_high_f32_f64(vcvt_f32_f64(v0), v1);
    float64x2_t r0 = vsubq_f64(v0, vcvt_f64_f32(vget_low_f32(hi))), r1 = vsubq_f64(v1, vcvt_high_f64_f32(hi));
    float32x4_t lo = vcvt_high_f32_f64(vcvt_f32_f64(r0), r1);
    float32x4_t e = vmulq_f32(exp4(hi), vaddq_f32(one, lo));
    return vmulq_f32(vdivq_f32(g, vaddq_f32(one, e)), u);
}

static void geglu_neon(float *y, const float *gate, const float *up, int64_t n) {
    for (int64_t i = 0; i < n; i += 4) st(y, i, n, geglu4(ld(gate, i, n), ld(up, i, n)));
}

static void axpy_neon(float *y, float a, const float *x, int64_t n) {
    const float32x4_t va = vdupq_n_f32(a);
    for (int64_t i = 0; i < n; i += 4) st(y, i, n, vfmaq_f32(ld(y, i, n), va, ld(x, i, n)));
}

/* ------------------------------------------------------------------ row-wise */

static void rmsnorm_row_neon(float *y, const float *x, const float *w, int n, float eps) {
    float64x2_t lo = vdupq_n_f64(0), hi = lo;
    for (int i = 0; i < n; i += 4) {
        float32x4_t v = ld(x, i, n);
        acc_pd(&lo, &hi, vmulq_f32(v, v));
    }
    double sum = vaddvq_f64(vaddq_f64(lo, hi));
    const float32x4_t scale = vdupq_n_f32(1.0f / sqrtf((float)(sum / n) + eps));
    for (int i = 0; i < n; i += 4) {
        float32x4_t v = vmulq_f32(ld(x, i, n), scale);
        if (w) v = vmulq_f32(v, ld(w, i, n));
        st(y, i, n, v);
    }
}

static double exp_shift_neon(float *x, int64_t n, float shift) {
    const float32x4_t vm = vdupq_n_f32(shift);
    float64x2_t lo = vdupq_n_f64(0), hi = lo;
    for (int64_t i = 0; i < n; i += 4) {
        float32x4_t e = exp4(vsubq_f32(ld(x, i, n), vm));
        if (n - i < 4) {               /* lanes past the row: keep them out of the sum */
            float t[4];
            vst1q_f32(t, e);
            for (int64_t j = n - i; j < 4; j++) t[j] = 0.0f;
            e = vld1q_f32(t);
        }
        st(x, i, n, e);
        acc_pd(&lo, &hi, e);
    }
    return vaddvq_f64(vaddq_f64(lo, hi));
}

static void softmax_row_neon(float *x, int n) {
    float32x4_t mx = vdupq_n_f32(-INFINITY);
    int i = 0;
    for (; i + 4 <= n; i += 4) mx = vmaxq_f32(mx, vld1q_f32(x + i));
    float m = vmaxvq_f32(mx);
    for (; i < n; i++) m = x[i] > m ? x[i] : m;
    if (m == -INFINITY) {
        memset(x, 0, (size_t)n * sizeof(float));
        return;
    }
    const float32x4_t inv = vdupq_n_f32((float)(1.0 / exp_shift_neon(x, n, m)));
    for (i = 0; i < n; i += 4) st(x, i, n, vmulq_f32(ld(x, i, n), inv));
}

/* ------------------------------------------------------------------ RoPE */

/* y0 = x0 c - x1 s, y1 = x0 s + x1 c, fused as fma(x0, (c | s), round(x1 * (-s | c))), the
 * rounding of ops_avx2.c (and of llama.cpp's compiled code). */
static void rope_norm_neon(float *x, const float *cs, int n_dims) {
    const float *cs0 = cs, *cs1 = cs + n_dims;
    for (int i = 0; i < n_dims; i += 4) {
        float32x4_t v = ld(x, i, n_dims);
        float32x4_t x0 = vtrn1q_f32(v, v), x1 = vtrn2q_f32(v, v);     /* (x0 x0 x2 x2), (x1 x1 x3 x3) */
        st(x, i, n_dims, vfmaq_f32(vmulq_f32(x1, ld(cs1, i, n_dims)), x0, ld(cs0, i, n_dims)));
    }
}

static void rope_neox_neon(float *x, const float *cs, int n_dims) {
    const int half = n_dims / 2;
    const float *c = cs, *s = cs + half;
    for (int i = 0; i < half; i += 4) {
        float32x4_t x0 = ld(x, i, half), x1 = ld(x + half, i, half);
        float32x4_t vc = ld(c, i, half), vs = ld(s, i, half);
        st(x, i, half, vfmaq_f32(vnegq_f32(vmulq_f32(x1, vs)), x0, vc));
        st(x + half, i, half, vfmaq_f32(vmulq_f32(x1, vc), x0, vs));
    }
}

/* ------------------------------------------------------------------ attention
 * As ops_avx2.c: the block's queries transposed once into qt (head_dim, BQ); per key tile
 * the scores st (BK, BQ) hold one row of 8 vectors per key, so the online softmax runs
 * across queries without horizontal reductions. */

#define BQ UM_ATTN_BLOCK_Q          /* 32: eight q registers of queries */
#define BK 64
#define NQV (BQ / 4)

_Static_assert(BQ == 32, "the kernel holds a block's queries in eight q registers");

/* acc[i] = acc[i] * corr[i] + sum_j p[j][i] v[j] (and the same for query i1) over nv
 * vectors of dims from d; inlined with a constant nv, so the accumulators stay in registers. */
static inline __attribute__((always_inline)) void
pv_pair(float *acc, const float *st, const float *vt, int nk, int hd,
        int i, int i1, const float *corr, int d, const int nv) {
    float *a0 = acc + (int64_t)i * hd + d, *a1 = acc + (int64_t)i1 * hd + d;
    float32x4_t x0[8], x1[8];
    #pragma GCC unroll 8
    for (int u = 0; u < nv; u++) {
        x0[u] = vmulq_n_f32(vld1q_f32(a0 + 4 * u), corr[i]);
        x1[u] = vmulq_n_f32(vld1q_f32(a1 + 4 * u), corr[i1]);
    }
    const float *vr = vt + d;
    for (int j = 0; j < nk; j++, vr += hd) {
        const float32x4_t p0 = vdupq_n_f32(st[j * BQ + i]), p1 = vdupq_n_f32(st[j * BQ + i1]);
        #pragma GCC unroll 8
        for (int u = 0; u < nv; u++) {
            float32x4_t vv = vld1q_f32(vr + 4 * u);
            x0[u] = vfmaq_f32(x0[u], p0, vv);
            x1[u] = vfmaq_f32(x1[u], p1, vv);
        }
    }
    #pragma GCC unroll 8
    for (int u = 0; u < nv; u++) vst1q_f32(a1 + 4 * u, x1[u]);
    #pragma GCC unroll 8
    for (int u = 0; u < nv; u++) vst1q_f32(a0 + 4 * u, x0[u]);
}

static void attn_block_neon(const um_attn_block *b) {
    const int hd = b->head_dim, nq = b->n_q;
    if (hd % 4) { ops_attn_block_ref(b); return; }
    float qt[UM_OPS_MAX_HEAD_DIM * BQ] __attribute__((aligned(16)));     /* (hd, BQ) */
    float st[BK * BQ] __attribute__((aligned(16)));                      /* (BK, BQ) */
    float acc[BQ * UM_OPS_MAX_HEAD_DIM] __attribute__((aligned(16)));    /* (BQ, hd) */
    float vpack[BK * UM_OPS_MAX_HEAD_DIM] __attribute__((aligned(16)));  /* (BK, hd) */
    float ml[BQ] __attribute__((aligned(16)));      /* per query: the tile's corr, at the end l */

    for (int i = 0; i < BQ; i++) {
        if (i >= nq) { for (int d = 0; d < hd; d++) qt[d * BQ + i] = 0.0f; continue; }
        const float *qr = b->q + (int64_t)i * b->q_stride;
        for (int d = 0; d < hd; d++) qt[d * BQ + i] = qr[d] * b->scale;
    }
    for (int i = 0; i < nq * hd; i++) acc[i] = 0;
    float32x4_t m[NQV], l[NQV];
    #pragma GCC unroll 8
    for (int u = 0; u < NQV; u++) { m[u] = vdupq_n_f32(-INFINITY); l[u] = vdupq_n_f32(0); }

    for (int kb = 0; kb < b->n_kv; kb += BK) {
        const int nk = UM_MIN(BK, b->n_kv - kb);
        int any = 0;
        /* scores, 2 keys x 32 queries (16 accumulators) at a time; masked keys get -inf */
        for (int j = 0; j < nk; j += 2) {
            const int nj = UM_MIN(2, nk - j);
            const float *k0r = b->k + (int64_t)(kb + j) * b->kv_stride;
            const float *k1r = nj > 1 ? k0r + b->kv_stride : k0r;
            int live0 = !b->key_mask || b->key_mask[kb + j];
            int live1 = nj > 1 && (!b->key_mask || b->key_mask[kb + j + 1]);
            any |= live0 | live1;
            float32x4_t s0[NQV], s1[NQV];
            #pragma GCC unroll 8
            for (int u = 0; u < NQV; u++) s0[u] = s1[u] = vdupq_n_f32(0);
            for (int d = 0; d < hd; d++) {
                const float a0 = k0r[d], a1 = k1r[d];
                #pragma GCC unroll 8
                for (int u = 0; u < NQV; u++) {
                    float32x4_t qv = vld1q_f32(qt + d * BQ + 4 * u);
                    s0[u] = vfmaq_n_f32(s0[u], qv, a0);
                    s1[u] = vfmaq_n_f32(s1[u], qv, a1);
                }
            }
            const float32x4_t ninf = vdupq_n_f32(-INFINITY);
            #pragma GCC unroll 8
            for (int u = 0; u < NQV; u++) vst1q_f32(st + j * BQ + 4 * u, live0 ? s0[u] : ninf);
            if (nj > 1)
                #pragma GCC unroll 8
                for (int u = 0; u < NQV; u++) vst1q_f32(st + (j + 1) * BQ + 4 * u, live1 ? s1[u] : ninf);
        }
        if (!any) continue;
        const float *vt = b->v + (int64_t)kb * b->kv_stride;
        if (b->kv_stride != hd) {
            for (int j = 0; j < nk; j++) memcpy(vpack + (int64_t)j * hd, vt + (int64_t)j * b->kv_stride, (size_t)hd * sizeof(float));
            vt = vpack;
        }
        #pragma GCC unroll 8
        for (int u = 0; u < NQV; u++) {
            float32x4_t t = m[u];
            for (int j = 0; j < nk; j++) t = vmaxq_f32(t, vld1q_f32(st + j * BQ + 4 * u));
            float32x4_t c = exp4(vsubq_f32(m[u], t));     /* 0 where m = -inf: t is finite */
            m[u] = t;
            float32x4_t sum = vdupq_n_f32(0);
            for (int j = 0; j < nk; j++) {
                float32x4_t p = exp4(vsubq_f32(vld1q_f32(st + j * BQ + 4 * u), t));
                vst1q_f32(st + j * BQ + 4 * u, p);
                sum = vaddq_f32(sum, p);
            }
            l[u] = vfmaq_f32(sum, l[u], c);
            vst1q_f32(ml + 4 * u, c);
        }
        /* acc = acc * corr + P V, two queries and 32 dims (16 registers) at a time */
        for (int i = 0; i < nq; i += 2) {
            const int i1 = i + 1 < nq ? i + 1 : i;      /* odd tail: the pair repeats i */
            int d = 0;
            for (; d + 32 <= hd; d += 32) pv_pair(acc, st, vt, nk, hd, i, i1, ml, d, 8);
            for (; d < hd; d += 4) pv_pair(acc, st, vt, nk, hd, i, i1, ml, d, 1);
        }
    }
    #pragma GCC unroll 8
    for (int u = 0; u < NQV; u++) vst1q_f32(ml + 4 * u, l[u]);
    for (int i = 0; i < nq; i++) {
        const float vi = ml[i] > 0 ? 1.0f / ml[i] : 0.0f;
        float *o = b->out + (int64_t)i * b->q_stride;
        for (int d = 0; d < hd; d += 4) vst1q_f32(o + d, vmulq_n_f32(vld1q_f32(acc + (int64_t)i * hd + d), vi));
    }
}

/* ------------------------------------------------------------------ soft-cap */

/* x = cap tanh(x / cap): see ops.h (UM_TANH_*) */
static void softcap_neon(float *x, int64_t n, float cap) {
    const float32x4_t vc = vdupq_n_f32(cap), one = vdupq_n_f32(1.0f), two = vdupq_n_f32(2.0f);
    for (int64_t i = 0; i < n; i += 4) {
        float32x4_t t = vdivq_f32(ld(x, i, n), vc);
        float32x4_t a = vabsq_f32(t), s = vmulq_f32(a, a);
        float32x4_t p = vfmaq_f32(vdupq_n_f32(UM_TANH_P3), vdupq_n_f32(UM_TANH_P4), s);
        p = vfmaq_f32(vdupq_n_f32(UM_TANH_P2), p, s);
        p = vfmaq_f32(vdupq_n_f32(UM_TANH_P1), p, s);
        p = vfmaq_f32(vdupq_n_f32(UM_TANH_P0), p, s);
        float32x4_t small = vfmaq_f32(a, vmulq_f32(p, s), a);
        float32x4_t big = vsubq_f32(one, vdivq_f32(two, vaddq_f32(exp4(vaddq_f32(a, a)), one)));
        float32x4_t r = vbslq_f32(vcltq_f32(a, vdupq_n_f32(UM_TANH_SMALL)), small, big);
        r = vbslq_f32(vdupq_n_u32(0x80000000u), t, r);                           /* t's sign */
        r = vbslq_f32(vceqq_f32(t, t), r, t);                                     /* NaN stays NaN */
        st(x, i, n, vmulq_f32(vc, r));
    }
}

/* ------------------------------------------------------------------ small GEMM */

/* R rows (<= 4) by NV vectors of 4 columns (<= 4, the last one holding `left` <= 4 of them):
 * 16 accumulators, each a chain of FMAs (vfmaq, fused) in k order: the reference's bits. R and NV are constants in every call below
 * and every loop over them is unrolled, so the arrays live in registers. */
#define UNROLL _Pragma("GCC unroll 4")

static inline __attribute__((always_inline)) void
gemm_tile_neon(int R, int NV, int left, float *y, int64_t ldy, const float *a, int64_t lda,
               const float *b, int64_t ldb, int k) {
    float32x4_t acc[4][4];
    UNROLL
    for (int r = 0; r < R; r++)
        UNROLL
        for (int v = 0; v < NV; v++)
            acc[r][v] = v == NV - 1 && left < 4 ? load_t(y + r * ldy + 4 * v, left) : vld1q_f32(y + r * ldy + 4 * v);
    for (int kk = 0; kk < k; kk++) {
        float32x4_t bv[4];
        UNROLL
        for (int v = 0; v < NV; v++)
            bv[v] = v == NV - 1 && left < 4 ? load_t(b + kk * ldb + 4 * v, left) : vld1q_f32(b + kk * ldb + 4 * v);
        UNROLL
        for (int r = 0; r < R; r++) {
            float32x4_t ar = vdupq_n_f32(a[r * lda + kk]);
            UNROLL
            for (int v = 0; v < NV; v++) acc[r][v] = vfmaq_f32(acc[r][v], ar, bv[v]);
        }
    }
    UNROLL
    for (int r = 0; r < R; r++)
        UNROLL
        for (int v = 0; v < NV; v++) {
            if (v == NV - 1 && left < 4) store_t(y + r * ldy + 4 * v, left, acc[r][v]);
            else vst1q_f32(y + r * ldy + 4 * v, acc[r][v]);
        }
}

static void gemm_acc_neon(float *y, int64_t ldy, const float *a, int64_t lda, const float *b, int64_t ldb,
                          int n, int k, int m) {
    for (int j0 = 0; j0 < m; j0 += 16) {
        const int w = m - j0 < 16 ? m - j0 : 16, nv = (w + 3) / 4, left = w - 4 * (nv - 1);
        for (int i0 = 0; i0 < n; i0 += 4) {
            const int R = n - i0 < 4 ? n - i0 : 4;
            float *yt = y + i0 * ldy + j0;
            const float *at = a + i0 * lda, *bt = b + j0;
            switch (R * 8 + nv) {
#define GT(r, v) case r * 8 + v: gemm_tile_neon(r, v, left, yt, ldy, at, lda, bt, ldb, k); break;
            GT(1, 1) GT(1, 2) GT(1, 3) GT(1, 4) GT(2, 1) GT(2, 2) GT(2, 3) GT(2, 4)
            GT(3, 1) GT(3, 2) GT(3, 3) GT(3, 4) GT(4, 1) GT(4, 2) GT(4, 3) GT(4, 4)
#undef GT
            }
        }
    }
}

/* ops_gemm_bf16_acc's tile with FMAs: R rows (<= 4) by 16 columns at a time (4 vectors;
 * lv[v] of vector v's lanes are y's), each pair the reference's chain: the odd product, then
 * the even one (the pair split into floats: the even value shifted up, the odd one masked). */
static inline __attribute__((always_inline)) void
gemm_bf16_tile_neon(int R, const int lv[4], float *y, int64_t ldy, const uint32_t *a, int64_t lda,
                    const uint32_t *bt, int kp) {
    const uint32x4_t hi = vdupq_n_u32(0xFFFF0000u);
    float32x4_t acc[4][4];
    UNROLL
    for (int r = 0; r < R; r++)
        UNROLL
        for (int v = 0; v < 4; v++)
            acc[r][v] = lv[v] >= 4 ? vld1q_f32(y + r * ldy + 4 * v) : lv[v] ? load_t(y + r * ldy + 4 * v, lv[v]) : vdupq_n_f32(0);
    for (int p = 0; p < kp; p++) {
        float32x4_t be[4], bo[4];
        UNROLL
        for (int v = 0; v < 4; v++) {
            const uint32x4_t bv = vld1q_u32(bt + p * UM_GEMM_TILE_COLS + 4 * v);
            be[v] = vreinterpretq_f32_u32(vshlq_n_u32(bv, 16));
            bo[v] = vreinterpretq_f32_u32(vandq_u32(bv, hi));
        }
        UNROLL
        for (int r = 0; r < R; r++) {
            const uint32x4_t ar = vdupq_n_u32(a[r * lda + p]);
            const float32x4_t ae = vreinterpretq_f32_u32(vshlq_n_u32(ar, 16)), ao = vreinterpretq_f32_u32(vandq_u32(ar, hi));
            UNROLL
            for (int v = 0; v < 4; v++) acc[r][v] = vfmaq_f32(vfmaq_f32(acc[r][v], ao, bo[v]), ae, be[v]);
        }
    }
    UNROLL
    for (int r = 0; r < R; r++)
        UNROLL
        for (int v = 0; v < 4; v++) {
            if (lv[v] >= 4) vst1q_f32(y + r * ldy + 4 * v, acc[r][v]);
            else if (lv[v]) store_t(y + r * ldy + 4 * v, lv[v], acc[r][v]);
        }
}

static void gemm_bf16_neon(float *y, int64_t ldy, const uint32_t *a, int64_t lda, const uint32_t *bt, int n, int kp, int w) {
    for (int c0 = 0; c0 < w; c0 += 16) {
        int lv[4];
        for (int v = 0; v < 4; v++) { const int l = w - c0 - 4 * v; lv[v] = l < 0 ? 0 : l > 4 ? 4 : l; }
        for (int i0 = 0; i0 < n; i0 += 4) {
            float *yt = y + i0 * ldy + c0;
            const uint32_t *at = a + i0 * lda, *b = bt + c0;
            switch (n - i0 < 4 ? n - i0 : 4) {
            case 1: gemm_bf16_tile_neon(1, lv, yt, ldy, at, lda, b, kp); break;
            case 2: gemm_bf16_tile_neon(2, lv, yt, ldy, at, lda, b, kp); break;
            case 3: gemm_bf16_tile_neon(3, lv, yt, ldy, at, lda, b, kp); break;
            default: gemm_bf16_tile_neon(4, lv, yt, ldy, at, lda, b, kp); break;
            }
        }
    }
}

/* ops_bf16_round on 4 lanes (see ops_avx512.c's bf16_round16) */
static inline uint32x4_t bf16_round4(float32x4_t x) {
    const uint32x4_t u = vreinterpretq_u32_f32(x);
    const uint32x4_t keep = vcgeq_u32(vandq_u32(u, vdupq_n_u32(0x7FFFFFFFu)), vdupq_n_u32(0x26800000u));
    const uint32x4_t r = vaddq_u32(u, vaddq_u32(vdupq_n_u32(0x7FFFu), vandq_u32(vshrq_n_u32(u, 16), vdupq_n_u32(1))));
    return vandq_u32(keep, vshrq_n_u32(r, 16));
}

static void f32_to_bf16_neon(const float *x, uint16_t *y, int64_t n) {
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) vst1_u16(y + i, vmovn_u32(bf16_round4(vld1q_f32(x + i))));
    for (; i < n; i++) y[i] = ops_bf16_round(x[i]);
}

static void bf16_pack2_neon(uint32_t *dst, const float *even, const float *odd, int n) {
    int j = 0;
    for (; j + 4 <= n; j += 4) {
        uint32x4_t r = bf16_round4(vld1q_f32(even + j));
        if (odd) r = vorrq_u32(r, vshlq_n_u32(bf16_round4(vld1q_f32(odd + j)), 16));
        vst1q_u32(dst + j, r);
    }
    for (; j < n; j++) dst[j] = ops_bf16_round(even[j]) | (odd ? (uint32_t)ops_bf16_round(odd[j]) << 16 : 0u);
}

/* 16 int8 levels times one scale, as four float vectors at y */
static inline void store16_scaled(float *y, int8x16_t c, float dl) {
    const int16x8_t lo = vmovl_s8(vget_low_s8(c)), hi = vmovl_s8(vget_high_s8(c));
    vst1q_f32(y, vmulq_n_f32(vcvtq_f32_s32(vmovl_s16(vget_low_s16(lo))), dl));
    vst1q_f32(y + 4, vmulq_n_f32(vcvtq_f32_s32(vmovl_s16(vget_high_s16(lo))), dl));
    vst1q_f32(y + 8, vmulq_n_f32(vcvtq_f32_s32(vmovl_s16(vget_low_s16(hi))), dl));
    vst1q_f32(y + 12, vmulq_n_f32(vcvtq_f32_s32(vmovl_s16(vget_high_s16(hi))), dl));
}

/* ops_dequant_row: Q6_K and Q8_0, the reference's products in the same order. Q6_K's layout:
 * in half h, weight 32g + l takes its low bits from ql[64h + 32(g & 1) + l] (low nibble for
 * g < 2, high after) and bits 2g, 2g+1 of qh[32h + l] above them; level = code - 32. */
static bool dequant_row_neon(um_type type, const void *src, float *y, int64_t n) {
    if (type == UM_TYPE_Q6_K) {
        const um_block_q6_K *b = src;
        const uint8x16_t m4 = vdupq_n_u8(0x0F), m3 = vdupq_n_u8(3);
        const int8x16_t o32 = vdupq_n_s8(32);
        for (int64_t i = 0; i < n / UM_QK_K; i++, b++, y += UM_QK_K) {
            const float d = um_fp16_to_fp32(b->d);
            for (int h = 0; h < 2; h++)
                for (int s2 = 0; s2 < 2; s2++) {     /* weights l = 16 s2 .. 16 s2 + 15 of each g */
                    const uint8x16_t a = vld1q_u8(b->ql + 64 * h + 16 * s2), c = vld1q_u8(b->ql + 64 * h + 32 + 16 * s2);
                    const uint8x16_t hb = vld1q_u8(b->qh + 32 * h + 16 * s2);
                    uint8x16_t q[4];
                    q[0] = vorrq_u8(vandq_u8(a, m4), vshlq_n_u8(vandq_u8(hb, m3), 4));
                    q[1] = vorrq_u8(vandq_u8(c, m4), vshlq_n_u8(vandq_u8(vshrq_n_u8(hb, 2), m3), 4));
                    q[2] = vorrq_u8(vshrq_n_u8(a, 4), vshlq_n_u8(vandq_u8(vshrq_n_u8(hb, 4), m3), 4));
                    q[3] = vorrq_u8(vshrq_n_u8(c, 4), vshlq_n_u8(vshrq_n_u8(hb, 6), 4));
                    for (int g = 0; g < 4; g++)
                        store16_scaled(y + 128 * h + 32 * g + 16 * s2, vsubq_s8(vreinterpretq_s8_u8(q[g]), o32),
                                       d * (float)b->scales[8 * h + 2 * g + s2]);
                }
        }
        return true;
    }
    if (type == UM_TYPE_Q8_0) {
        const um_block_q8_0 *b = src;
        for (int64_t i = 0; i < n / UM_QK8_0; i++, b++, y += UM_QK8_0) {
            const float d = um_fp16_to_fp32(b->d);
            store16_scaled(y, vld1q_s8(b->qs), d);
            store16_scaled(y + 16, vld1q_s8(b->qs + 16), d);
        }
        return true;
    }
    return false;
}

const um_ops_kern ops_kern_neon = {
    .add         = add_neon,
    .mul         = mul_neon,
    .swiglu      = swiglu_neon,
    .geglu       = geglu_neon,
    .axpy        = axpy_neon,
    .rmsnorm_row = rmsnorm_row_neon,
    .softmax_row = softmax_row_neon,
    .rope_norm   = rope_norm_neon,
    .rope_neox   = rope_neox_neon,
    .attn_block  = attn_block_neon,
    .softcap     = softcap_neon,
    .dequant_row = dequant_row_neon,
    .exp_shift   = exp_shift_neon,
    .gemm_acc    = gemm_acc_neon,
    .gemm_bf16   = gemm_bf16_neon,
    .bf16_pack2  = bf16_pack2_neon,
    .f32_to_bf16 = f32_to_bf16_neon,
};
