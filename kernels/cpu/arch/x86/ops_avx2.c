/*
 * ops_avx2: the AVX2+FMA kernel set of ops (see ops.h, um_ops_kern). Compiled with AVX2
 * flags by the Makefile; ops.c calls it only when cpu_features() allows.
 *
 * Same algorithms and numerics as ops_avx512.c with 8 lanes: double accumulation of
 * sums of squares and softmax sums, a polynomial exp (Cephes expf coefficients, about
 * 2 ulp; inputs below -87 give 0 and above 88 give inf), fused multiply-adds.
 * Tails (n not a multiple of 8) use maskload/maskstore, so every element of a row goes
 * through the same arithmetic.
 */
#include "ops.h"

#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "dequant_avx2.h"
#include "simd_exp_avx2.h"

/* e^x for 8 lanes: x = n ln2 + r, e^r by polynomial, 2^n built in the exponent field.
 * Clamping to [-87, 88] keeps n in [-126, 127]; lanes outside get 0 or inf. */
static inline __m256 exp8(__m256 x) {
    const __m256 lo = _mm256_set1_ps(-87.0f), hi = _mm256_set1_ps(88.0f);
    __m256 under = _mm256_cmp_ps(x, lo, _CMP_LT_OQ), over = _mm256_cmp_ps(x, hi, _CMP_GT_OQ);
    __m256 y = exp8_core(_mm256_max_ps(_mm256_min_ps(x, hi), lo));
    y = _mm256_andnot_ps(under, y);
    return _mm256_blendv_ps(y, _mm256_set1_ps(INFINITY), over);
}

/* Lane mask for the first `left` lanes (all 8 when left >= 8). */
static inline __m256i tail_mask(int64_t left) {
    static const int32_t bits[16] = { -1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0 };
    return _mm256_loadu_si256((const __m256i *)(bits + 8 - (left >= 8 ? 8 : left)));
}
static inline __m256 load_t(const float *p, __m256i m) { return _mm256_maskload_ps(p, m); }
static inline void store_t(float *p, __m256i m, __m256 v) { _mm256_maskstore_ps(p, m, v); }

static inline float hmax8(__m256 v) {
    __m128 x = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    x = _mm_max_ps(x, _mm_movehl_ps(x, x));
    x = _mm_max_ss(x, _mm_movehdup_ps(x));
    return _mm_cvtss_f32(x);
}

static inline double hsum4d(__m256d v) {
    __m128d x = _mm_add_pd(_mm256_castpd256_pd128(v), _mm256_extractf128_pd(v, 1));
    return _mm_cvtsd_f64(_mm_add_sd(x, _mm_unpackhi_pd(x, x)));
}

/* Add the 8 floats of v into two double accumulators. */
static inline void acc_pd(__m256d *lo, __m256d *hi, __m256 v) {
    *lo = _mm256_add_pd(*lo, _mm256_cvtps_pd(_mm256_castps256_ps128(v)));
    *hi = _mm256_add_pd(*hi, _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)));
}

/* ------------------------------------------------------------------ elementwise */

static void add_avx2(float *y, const float *a, const float *b, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, _mm256_add_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i)));
    if (i < n) { __m256i m = tail_mask(n - i); store_t(y + i, m, _mm256_add_ps(load_t(a + i, m), load_t(b + i, m))); }
}

static void mul_avx2(float *y, const float *a, const float *b, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i)));
    if (i < n) { __m256i m = tail_mask(n - i); store_t(y + i, m, _mm256_mul_ps(load_t(a + i, m), load_t(b + i, m))); }
}

static inline __m256 swiglu8(__m256 g, __m256 u) {
    __m256 d = _mm256_add_ps(_mm256_set1_ps(1.0f), exp8(_mm256_sub_ps(_mm256_setzero_ps(), g)));
    return _mm256_mul_ps(_mm256_div_ps(g, d), u);
}

static void swiglu_avx2(float *y, const float *gate, const float *up, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, swiglu8(_mm256_loadu_ps(gate + i), _mm256_loadu_ps(up + i)));
    if (i < n) { __m256i m = tail_mask(n - i); store_t(y + i, m, swiglu8(load_t(gate + i, m), load_t(up + i, m))); }
}

/* GELU as x / (1 + e^v) (ops.h, UM_GELU_K1). v sits in an exponent, so its absolute error is
 * the result's relative error: v in float (four roundings) would be 1e-5 relative off at
 * |v| = 60. So v is formed in double, clamped to +-120 (e^v is 0 or inf well before), and
 * split v = hi + lo with hi its float rounding, |lo| <= 2^-24 |v|: e^v = e^hi (1 + lo) to
 * 3e-11. The product form keeps e^hi = inf an inf (1 + lo > 0), which then gives -0. */
static inline __m256d gelu_v4(__m128 x) {
    __m256d d = _mm256_cvtps_pd(x);
    __m256d v = _mm256_mul_pd(d, _mm256_fmadd_pd(_mm256_set1_pd(UM_GELU_K3), _mm256_mul_pd(d, d), _mm256_set1_pd(UM_GELU_K1)));
    return _mm256_max_pd(_mm256_min_pd(v, _mm256_set1_pd(120.0)), _mm256_set1_pd(-120.0));
}

static inline __m256 geglu8(__m256 g, __m256 u) {
    const __m256 one = _mm256_set1_ps(1.0f);
    __m256d v0 = gelu_v4(_mm256_castps256_ps128(g)), v1 = gelu_v4(_mm256_extractf128_ps(g, 1));
    __m128 h0 = _mm256_cvtpd_ps(v0), h1 = _mm256_cvtpd_ps(v1);
    __m128 l0 = _mm256_cvtpd_ps(_mm256_sub_pd(v0, _mm256_cvtps_pd(h0)));
    __m128 l1 = _mm256_cvtpd_ps(_mm256_sub_pd(v1, _mm256_cvtps_pd(h1)));
    __m256 e = _mm256_mul_ps(exp8(_mm256_set_m128(h1, h0)), _mm256_add_ps(one, _mm256_set_m128(l1, l0)));
    return _mm256_mul_ps(_mm256_div_ps(g, _mm256_add_ps(one, e)), u);
}

static void geglu_avx2(float *y, const float *gate, const float *up, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, geglu8(_mm256_loadu_ps(gate + i), _mm256_loadu_ps(up + i)));
    if (i < n) { __m256i m = tail_mask(n - i); store_t(y + i, m, geglu8(load_t(gate + i, m), load_t(up + i, m))); }
}

static void axpy_avx2(float *y, float a, const float *x, int64_t n) {
    const __m256 va = _mm256_set1_ps(a);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, _mm256_fmadd_ps(va, _mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i)));
    if (i < n) { __m256i m = tail_mask(n - i); store_t(y + i, m, _mm256_fmadd_ps(va, load_t(x + i, m), load_t(y + i, m))); }
}

/* F16C: the same values as util's scalar conversions (tests/test_util_avx2.c) */
static void f16_to_f32_avx2(const uint16_t *src, float *dst, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(src + i))));
    for (; i < n; i++) dst[i] = um_fp16_to_fp32(src[i]);
}

static void f32_to_f16_avx2(const float *src, uint16_t *dst, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm_storeu_si128((__m128i *)(dst + i), _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    for (; i < n; i++) dst[i] = um_fp32_to_fp16(src[i]);
}

/* ------------------------------------------------------------------ row-wise */

static void rmsnorm_row_avx2(float *y, const float *x, const float *w, int n, float eps) {
    __m256d lo = _mm256_setzero_pd(), hi = lo;
    for (int i = 0; i < n; i += 8) {
        __m256 v = load_t(x + i, tail_mask(n - i));
        acc_pd(&lo, &hi, _mm256_mul_ps(v, v));
    }
    double sum = hsum4d(_mm256_add_pd(lo, hi));
    const __m256 scale = _mm256_set1_ps(1.0f / sqrtf((float)(sum / n) + eps));
    for (int i = 0; i < n; i += 8) {
        __m256i m = tail_mask(n - i);
        __m256 v = _mm256_mul_ps(load_t(x + i, m), scale);
        if (w) v = _mm256_mul_ps(v, load_t(w + i, m));
        store_t(y + i, m, v);
    }
}

static double exp_shift_avx2(float *x, int64_t n, float shift) {
    const __m256 vm = _mm256_set1_ps(shift);
    __m256d lo = _mm256_setzero_pd(), hi = lo;
    for (int64_t i = 0; i < n; i += 8) {
        __m256i k = tail_mask(n - i);
        __m256 e = _mm256_and_ps(exp8(_mm256_sub_ps(load_t(x + i, k), vm)), _mm256_castsi256_ps(k));
        store_t(x + i, k, e);
        acc_pd(&lo, &hi, e);
    }
    return hsum4d(_mm256_add_pd(lo, hi));
}

static void softmax_row_avx2(float *x, int n) {
    const __m256 ninf = _mm256_set1_ps(-INFINITY);
    __m256 mx = ninf;
    for (int i = 0; i < n; i += 8) {
        __m256i m = tail_mask(n - i);
        mx = _mm256_max_ps(mx, _mm256_blendv_ps(ninf, load_t(x + i, m), _mm256_castsi256_ps(m)));
    }
    float m = hmax8(mx);
    if (m == -INFINITY) {
        for (int i = 0; i < n; i += 8) store_t(x + i, tail_mask(n - i), _mm256_setzero_ps());
        return;
    }
    const __m256 inv = _mm256_set1_ps((float)(1.0 / exp_shift_avx2(x, n, m)));
    for (int i = 0; i < n; i += 8) {
        __m256i k = tail_mask(n - i);
        store_t(x + i, k, _mm256_mul_ps(load_t(x + i, k), inv));
    }
}

/* ------------------------------------------------------------------ RoPE */

/* y0 = x0 c - x1 s, y1 = x0 s + x1 c, fused as fma(x0, (c | s), round(x1 * (-s | c))):
 * the same single rounding of the x1 product that llama.cpp's compiled code has, so the
 * result matches ggml_rope_ext bit for bit. */
static void rope_norm_avx2(float *x, const float *cs, int n_dims) {
    const float *cs0 = cs, *cs1 = cs + n_dims;
    for (int i = 0; i < n_dims; i += 8) {
        __m256i m = tail_mask(n_dims - i);
        __m256 v = load_t(x + i, m);
        __m256 x0 = _mm256_moveldup_ps(v), x1 = _mm256_movehdup_ps(v);
        store_t(x + i, m, _mm256_fmadd_ps(x0, load_t(cs0 + i, m), _mm256_mul_ps(x1, load_t(cs1 + i, m))));
    }
}

static void rope_neox_avx2(float *x, const float *cs, int n_dims) {
    const int half = n_dims / 2;
    const float *c = cs, *s = cs + half;
    for (int i = 0; i < half; i += 8) {
        __m256i m = tail_mask(half - i);
        __m256 x0 = load_t(x + i, m), x1 = load_t(x + half + i, m);
        __m256 vc = load_t(c + i, m), vs = load_t(s + i, m);
        store_t(x + i, m, _mm256_fmsub_ps(x0, vc, _mm256_mul_ps(x1, vs)));
        store_t(x + half + i, m, _mm256_fmadd_ps(x0, vs, _mm256_mul_ps(x1, vc)));
    }
}

/* ------------------------------------------------------------------ attention
 * As ops_avx512.c: the block's queries transposed once into qt (head_dim, BQ); per key
 * tile the scores st (BK, BQ) hold one row of 4 vectors per key, so the online softmax
 * runs across queries without horizontal reductions. */

#define BQ UM_ATTN_BLOCK_Q          /* 32: four ymm of queries */
#define BK 64

_Static_assert(BQ == 32, "the kernel holds a block's queries in four ymm registers");

/* acc[i] = acc[i] * corr[i] + sum_j p[j][i] v[j] (and the same for query i1) over nv
 * vectors of dims from d. Always inlined with a constant nv, so the 2 * nv accumulators
 * live in registers across the key loop. */
static inline __attribute__((always_inline)) void
pv_pair(float *acc, const float *st, const float *vt, int nk, int hd,
        int i, int i1, const float *corr, int d, const int nv) {
    float *a0 = acc + (int64_t)i * hd + d, *a1 = acc + (int64_t)i1 * hd + d;
    const __m256 cr0 = _mm256_set1_ps(corr[i]), cr1 = _mm256_set1_ps(corr[i1]);
    __m256 x0[4], x1[4];
    #pragma GCC unroll 4
    for (int u = 0; u < nv; u++) {
        x0[u] = _mm256_mul_ps(_mm256_load_ps(a0 + 8 * u), cr0);
        x1[u] = _mm256_mul_ps(_mm256_load_ps(a1 + 8 * u), cr1);
    }
    const float *vr = vt + d;
    for (int j = 0; j < nk; j++, vr += hd) {
        const __m256 p0 = _mm256_broadcast_ss(st + j * BQ + i), p1 = _mm256_broadcast_ss(st + j * BQ + i1);
        #pragma GCC unroll 4
        for (int u = 0; u < nv; u++) {
            __m256 vv = _mm256_loadu_ps(vr + 8 * u);
            x0[u] = _mm256_fmadd_ps(p0, vv, x0[u]);
            x1[u] = _mm256_fmadd_ps(p1, vv, x1[u]);
        }
    }
    #pragma GCC unroll 4
    for (int u = 0; u < nv; u++) _mm256_store_ps(a1 + 8 * u, x1[u]);
    #pragma GCC unroll 4
    for (int u = 0; u < nv; u++) _mm256_store_ps(a0 + 8 * u, x0[u]);
}

static void attn_block_avx2(const um_attn_block *b) {
    const int hd = b->head_dim, nq = b->n_q;
    if (hd % 8) { ops_attn_block_ref(b); return; }
    float qt[UM_OPS_MAX_HEAD_DIM * BQ] __attribute__((aligned(32)));     /* (hd, BQ) */
    float st[BK * BQ] __attribute__((aligned(32)));                      /* (BK, BQ) */
    float acc[BQ * UM_OPS_MAX_HEAD_DIM] __attribute__((aligned(32)));    /* (BQ, hd) */
    float vpack[BK * UM_OPS_MAX_HEAD_DIM] __attribute__((aligned(32)));  /* (BK, hd) */
    float ml[BQ] __attribute__((aligned(32)));      /* per query: the tile's corr, at the end l */

    /* row by row: each q row is read contiguously (rows are far apart in memory) */
    for (int i = 0; i < BQ; i++) {
        if (i >= nq) { for (int d = 0; d < hd; d++) qt[d * BQ + i] = 0.0f; continue; }
        const float *qr = b->q + (int64_t)i * b->q_stride;
        for (int d = 0; d < hd; d++) qt[d * BQ + i] = qr[d] * b->scale;
    }
    for (int i = 0; i < nq * hd; i++) acc[i] = 0;
    __m256 m[4], l[4];
    #pragma GCC unroll 4
    for (int u = 0; u < 4; u++) { m[u] = _mm256_set1_ps(-INFINITY); l[u] = _mm256_setzero_ps(); }

    for (int kb = 0; kb < b->n_kv; kb += BK) {
        const int nk = UM_MIN(BK, b->n_kv - kb);
        int any = 0;
        /* scores, 2 keys x 32 queries (8 accumulators) at a time; masked keys get -inf */
        for (int j = 0; j < nk; j += 2) {
            const int nj = UM_MIN(2, nk - j);
            const float *k0r = b->k + (int64_t)(kb + j) * b->kv_stride;
            const float *k1r = nj > 1 ? k0r + b->kv_stride : k0r;
            int live0 = !b->key_mask || b->key_mask[kb + j];
            int live1 = nj > 1 && (!b->key_mask || b->key_mask[kb + j + 1]);
            any |= live0 | live1;
            __m256 s0[4], s1[4];
            #pragma GCC unroll 4
            for (int u = 0; u < 4; u++) s0[u] = s1[u] = _mm256_setzero_ps();
            for (int d = 0; d < hd; d++) {
                const __m256 a0 = _mm256_set1_ps(k0r[d]), a1 = _mm256_set1_ps(k1r[d]);
                #pragma GCC unroll 4
                for (int u = 0; u < 4; u++) {
                    __m256 qv = _mm256_load_ps(qt + d * BQ + 8 * u);
                    s0[u] = _mm256_fmadd_ps(a0, qv, s0[u]);
                    s1[u] = _mm256_fmadd_ps(a1, qv, s1[u]);
                }
            }
            const __m256 ninf = _mm256_set1_ps(-INFINITY);
            #pragma GCC unroll 4
            for (int u = 0; u < 4; u++) _mm256_store_ps(st + j * BQ + 8 * u, live0 ? s0[u] : ninf);
            if (nj > 1)
                #pragma GCC unroll 4
                for (int u = 0; u < 4; u++) _mm256_store_ps(st + (j + 1) * BQ + 8 * u, live1 ? s1[u] : ninf);
        }
        if (!any) continue;
        /* V rows of the tile, contiguous: PV reads each of them once per query pair */
        const float *vt = b->v + (int64_t)kb * b->kv_stride;
        if (b->kv_stride != hd) {
            for (int j = 0; j < nk; j++) memcpy(vpack + (int64_t)j * hd, vt + (int64_t)j * b->kv_stride, (size_t)hd * sizeof(float));
            vt = vpack;
        }
        __m256 c[4], sum[4];
        #pragma GCC unroll 4
        for (int u = 0; u < 4; u++) {
            __m256 t = m[u];
            for (int j = 0; j < nk; j++) t = _mm256_max_ps(t, _mm256_load_ps(st + j * BQ + 8 * u));
            c[u] = exp8(_mm256_sub_ps(m[u], t));        /* 0 where m = -inf: t is finite */
            m[u] = t;
            sum[u] = _mm256_setzero_ps();
            for (int j = 0; j < nk; j++) {
                __m256 p = exp8(_mm256_sub_ps(_mm256_load_ps(st + j * BQ + 8 * u), t));
                _mm256_store_ps(st + j * BQ + 8 * u, p);
                sum[u] = _mm256_add_ps(sum[u], p);
            }
            l[u] = _mm256_fmadd_ps(l[u], c[u], sum[u]);
            _mm256_store_ps(ml + 8 * u, c[u]);
        }
        /* acc = acc * corr + P V, two queries and 32 dims (8 registers) at a time */
        for (int i = 0; i < nq; i += 2) {
            const int i1 = i + 1 < nq ? i + 1 : i;      /* odd tail: the pair repeats i */
            int d = 0;
            for (; d + 32 <= hd; d += 32) pv_pair(acc, st, vt, nk, hd, i, i1, ml, d, 4);
            for (; d < hd; d += 8) pv_pair(acc, st, vt, nk, hd, i, i1, ml, d, 1);
        }
    }
    #pragma GCC unroll 4
    for (int u = 0; u < 4; u++) _mm256_store_ps(ml + 8 * u, l[u]);
    for (int i = 0; i < nq; i++) {
        const __m256 vi = _mm256_set1_ps(ml[i] > 0 ? 1.0f / ml[i] : 0.0f);
        float *o = b->out + (int64_t)i * b->q_stride;
        for (int d = 0; d < hd; d += 8)
            _mm256_storeu_ps(o + d, _mm256_mul_ps(_mm256_load_ps(acc + (int64_t)i * hd + d), vi));
    }
}

/* ------------------------------------------------------------------ soft-cap */

/* x = cap tanh(x / cap): see ops.h (UM_TANH_*) */
static void softcap_avx2(float *x, int64_t n, float cap) {
    const __m256 vc = _mm256_set1_ps(cap), one = _mm256_set1_ps(1.0f), two = _mm256_set1_ps(2.0f);
    const __m256 sign = _mm256_set1_ps(-0.0f);
    for (int64_t i = 0; i < n; i += 8) {
        const __m256i m = tail_mask(n - i);
        __m256 t = _mm256_div_ps(load_t(x + i, m), vc);
        __m256 a = _mm256_andnot_ps(sign, t), s = _mm256_mul_ps(a, a);
        __m256 p = _mm256_fmadd_ps(_mm256_set1_ps(UM_TANH_P4), s, _mm256_set1_ps(UM_TANH_P3));
        p = _mm256_fmadd_ps(p, s, _mm256_set1_ps(UM_TANH_P2));
        p = _mm256_fmadd_ps(p, s, _mm256_set1_ps(UM_TANH_P1));
        p = _mm256_fmadd_ps(p, s, _mm256_set1_ps(UM_TANH_P0));
        __m256 small = _mm256_fmadd_ps(_mm256_mul_ps(p, s), a, a);
        __m256 big = _mm256_sub_ps(one, _mm256_div_ps(two, _mm256_add_ps(exp8(_mm256_add_ps(a, a)), one)));
        __m256 r = _mm256_blendv_ps(big, small, _mm256_cmp_ps(a, _mm256_set1_ps(UM_TANH_SMALL), _CMP_LT_OQ));
        r = _mm256_or_ps(r, _mm256_and_ps(t, sign));
        r = _mm256_blendv_ps(r, t, _mm256_cmp_ps(t, t, _CMP_UNORD_Q));            /* NaN stays NaN */
        store_t(x + i, m, _mm256_mul_ps(vc, r));
    }
}

/* ------------------------------------------------------------------ small GEMM */

/* R rows (<= 4) by NV vectors of 8 columns (<= 3, the last one under the mask `last`):
 * 12 accumulators, each a chain of FMAs in k order (the reference's bits). R and NV are constants in every call below and
 * every loop over them is unrolled, so the arrays live in registers. */
#define UNROLL _Pragma("GCC unroll 4")

static inline __attribute__((always_inline)) void
gemm_tile256(int R, int NV, __m256i last, float *y, int64_t ldy, const float *a, int64_t lda,
             const float *b, int64_t ldb, int k) {
    const __m256i all = _mm256_set1_epi32(-1);
    __m256 acc[4][3];
    UNROLL
    for (int r = 0; r < R; r++)
        UNROLL
        for (int v = 0; v < NV; v++) acc[r][v] = load_t(y + r * ldy + 8 * v, v == NV - 1 ? last : all);
    for (int kk = 0; kk < k; kk++) {
        __m256 bv[3];
        UNROLL
        for (int v = 0; v < NV; v++) bv[v] = v == NV - 1 ? load_t(b + kk * ldb + 8 * v, last) : _mm256_loadu_ps(b + kk * ldb + 8 * v);
        UNROLL
        for (int r = 0; r < R; r++) {
            __m256 ar = _mm256_broadcast_ss(a + r * lda + kk);
            UNROLL
            for (int v = 0; v < NV; v++) acc[r][v] = _mm256_fmadd_ps(ar, bv[v], acc[r][v]);
        }
    }
    UNROLL
    for (int r = 0; r < R; r++)
        UNROLL
        for (int v = 0; v < NV; v++) store_t(y + r * ldy + 8 * v, v == NV - 1 ? last : all, acc[r][v]);
}

static void gemm_acc_avx2(float *y, int64_t ldy, const float *a, int64_t lda, const float *b, int64_t ldb,
                          int n, int k, int m) {
    for (int j0 = 0; j0 < m; j0 += 24) {
        const int w = m - j0 < 24 ? m - j0 : 24, nv = (w + 7) / 8;
        const __m256i last = tail_mask(w - 8 * (nv - 1));
        for (int i0 = 0; i0 < n; i0 += 4) {
            const int R = n - i0 < 4 ? n - i0 : 4;
            float *yt = y + i0 * ldy + j0;
            const float *at = a + i0 * lda, *bt = b + j0;
            switch (R * 4 + nv) {
#define GT(r, v) case r * 4 + v: gemm_tile256(r, v, last, yt, ldy, at, lda, bt, ldb, k); break;
            GT(1, 1) GT(1, 2) GT(1, 3) GT(2, 1) GT(2, 2) GT(2, 3)
            GT(3, 1) GT(3, 2) GT(3, 3) GT(4, 1) GT(4, 2) GT(4, 3)
#undef GT
            }
        }
    }
}

/* ops_gemm_bf16_acc's tile with FMAs: R rows (<= 4) by 16 columns at a time (2 vectors, y
 * under the masks m0, m1), each pair the reference's chain: the odd product, then the even
 * one (the pair split into floats: the even value shifted up, the odd one masked). */
static inline __attribute__((always_inline)) void
gemm_bf16_tile256(int R, __m256i m0, __m256i m1, float *y, int64_t ldy, const uint32_t *a, int64_t lda,
                  const uint32_t *bt, int kp) {
    const __m256i hi = _mm256_set1_epi32((int)0xFFFF0000u);
    __m256 acc[4][2];
    UNROLL
    for (int r = 0; r < R; r++) { acc[r][0] = load_t(y + r * ldy, m0); acc[r][1] = load_t(y + r * ldy + 8, m1); }
    for (int p = 0; p < kp; p++) {
        __m256 be[2], bo[2];
        UNROLL
        for (int v = 0; v < 2; v++) {
            const __m256i bv = _mm256_loadu_si256((const __m256i *)(bt + p * UM_GEMM_TILE_COLS + 8 * v));
            be[v] = _mm256_castsi256_ps(_mm256_slli_epi32(bv, 16));
            bo[v] = _mm256_castsi256_ps(_mm256_and_si256(bv, hi));
        }
        UNROLL
        for (int r = 0; r < R; r++) {
            const __m256i ar = _mm256_set1_epi32((int)a[r * lda + p]);
            const __m256 ae = _mm256_castsi256_ps(_mm256_slli_epi32(ar, 16)), ao = _mm256_castsi256_ps(_mm256_and_si256(ar, hi));
            UNROLL
            for (int v = 0; v < 2; v++) acc[r][v] = _mm256_fmadd_ps(ae, be[v], _mm256_fmadd_ps(ao, bo[v], acc[r][v]));
        }
    }
    UNROLL
    for (int r = 0; r < R; r++) { store_t(y + r * ldy, m0, acc[r][0]); store_t(y + r * ldy + 8, m1, acc[r][1]); }
}

static void gemm_bf16_avx2(float *y, int64_t ldy, const uint32_t *a, int64_t lda, const uint32_t *bt, int n, int kp, int w) {
    for (int c0 = 0; c0 < w; c0 += 16) {
        const __m256i m0 = tail_mask(w - c0), m1 = tail_mask(w - c0 > 8 ? w - c0 - 8 : 0);
        for (int i0 = 0; i0 < n; i0 += 4) {
            float *yt = y + i0 * ldy + c0;
            const uint32_t *at = a + i0 * lda, *b = bt + c0;
            switch (n - i0 < 4 ? n - i0 : 4) {
            case 1: gemm_bf16_tile256(1, m0, m1, yt, ldy, at, lda, b, kp); break;
            case 2: gemm_bf16_tile256(2, m0, m1, yt, ldy, at, lda, b, kp); break;
            case 3: gemm_bf16_tile256(3, m0, m1, yt, ldy, at, lda, b, kp); break;
            default: gemm_bf16_tile256(4, m0, m1, yt, ldy, at, lda, b, kp); break;
            }
        }
    }
}

/* ops_bf16_round on 8 lanes (see ops_avx512.c's bf16_round16) */
static inline __m256i bf16_round8(__m256 x) {
    const __m256i u = _mm256_castps_si256(x);
    const __m256i keep = _mm256_cmpgt_epi32(_mm256_and_si256(u, _mm256_set1_epi32(0x7FFFFFFF)), _mm256_set1_epi32(0x267FFFFF));
    const __m256i r = _mm256_add_epi32(u, _mm256_add_epi32(_mm256_set1_epi32(0x7FFF), _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1))));
    return _mm256_and_si256(keep, _mm256_srli_epi32(r, 16));
}

static void f32_to_bf16_avx2(const float *x, uint16_t *y, int64_t n) {
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {      /* packus works within 128-bit lanes: put them back in order */
        const __m256i p = _mm256_packus_epi32(bf16_round8(_mm256_loadu_ps(x + i)), bf16_round8(_mm256_loadu_ps(x + i + 8)));
        _mm256_storeu_si256((__m256i *)(y + i), _mm256_permute4x64_epi64(p, 0xD8));
    }
    for (; i < n; i++) y[i] = ops_bf16_round(x[i]);
}

static void bf16_pack2_avx2(uint32_t *dst, const float *even, const float *odd, int n) {
    int j = 0;
    for (; j + 8 <= n; j += 8) {
        __m256i r = bf16_round8(_mm256_loadu_ps(even + j));
        if (odd) r = _mm256_or_si256(r, _mm256_slli_epi32(bf16_round8(_mm256_loadu_ps(odd + j)), 16));
        _mm256_storeu_si256((__m256i *)(dst + j), r);
    }
    for (; j < n; j++) dst[j] = ops_bf16_round(even[j]) | (odd ? (uint32_t)ops_bf16_round(odd[j]) << 16 : 0u);
}

/* ops_dequant_row: Q6_K and Q8_0, the reference's products in the same order */
static bool dequant_row_avx2(um_type type, const void *src, float *y, int64_t n) {
    if (type == UM_TYPE_Q6_K) {
        const um_block_q6_K *b = src;
        for (int64_t i = 0; i < n / UM_QK_K; i++, b++, y += UM_QK_K) {
            const float d = um_fp16_to_fp32(b->d);
            for (int h = 0; h < 2; h++) {
                __m256i q[4];
                q6k_levels_avx2(b, h, q);
                for (int g = 0; g < 4; g++)
                    for (int s2 = 0; s2 < 2; s2++) {   /* sub-block 8h + 2g + s2: 16 weights, one scale */
                        const __m128i c = s2 ? _mm256_extracti128_si256(q[g], 1) : _mm256_castsi256_si128(q[g]);
                        const __m256 dl = _mm256_set1_ps(d * (float)b->scales[8 * h + 2 * g + s2]);
                        float *o = y + 128 * h + 32 * g + 16 * s2;
                        _mm256_storeu_ps(o, _mm256_mul_ps(dl, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(c))));
                        _mm256_storeu_ps(o + 8, _mm256_mul_ps(dl, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(c, 8)))));
                    }
            }
        }
        return true;
    }
    if (type == UM_TYPE_Q8_0) {
        const um_block_q8_0 *b = src;
        for (int64_t i = 0; i < n / UM_QK8_0; i++, b++, y += UM_QK8_0) {
            const __m256 d = _mm256_set1_ps(um_fp16_to_fp32(b->d));
            for (int j = 0; j < UM_QK8_0; j += 8) {
                const __m128i c = _mm_loadl_epi64((const __m128i *)(b->qs + j));
                _mm256_storeu_ps(y + j, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(c)), d));
            }
        }
        return true;
    }
    return false;
}

const um_ops_kern ops_kern_avx2 = {
    .add         = add_avx2,
    .mul         = mul_avx2,
    .swiglu      = swiglu_avx2,
    .geglu       = geglu_avx2,
    .axpy        = axpy_avx2,
    .rmsnorm_row = rmsnorm_row_avx2,
    .softmax_row = softmax_row_avx2,
    .rope_norm   = rope_norm_avx2,
    .rope_neox   = rope_neox_avx2,
    .attn_block  = attn_block_avx2,
    .f16_to_f32  = f16_to_f32_avx2,
    .f32_to_f16  = f32_to_f16_avx2,
    .softcap     = softcap_avx2,
    .dequant_row = dequant_row_avx2,
    .exp_shift   = exp_shift_avx2,
    .gemm_acc    = gemm_acc_avx2,
    .gemm_bf16   = gemm_bf16_avx2,
    .bf16_pack2  = bf16_pack2_avx2,
    .f32_to_bf16 = f32_to_bf16_avx2,
};
