/*
 * ops_avx512: the AVX-512 kernel set of ops (see ops.h, um_ops_kern). Compiled with
 * AVX-512 flags by the Makefile; ops.c calls it only when cpu_features() allows.
 *
 * Numerics against the scalar references (ops.c): sums of squares and softmax sums are
 * accumulated in double like the references, so they agree to float rounding; exp is a
 * polynomial (Cephes expf coefficients, about 2 ulp) instead of libm's expf; products
 * feeding an add are fused (FMA), one rounding fewer than the references.
 * Tails (n not a multiple of 16) use masked loads and stores, never a scalar loop, so
 * every element of a row goes through the same arithmetic.
 */
#include "ops.h"

#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "dequant_avx2.h"

/* e^x for 16 lanes: x = n ln2 + r, |r| <= ln2/2, e^r by a degree-7 polynomial, 2^n by
 * scalef (exact, and it gives 0 / inf outside the float range). -inf gives 0. */
static inline __m512 exp16(__m512 x) {
    x = _mm512_max_ps(_mm512_min_ps(x, _mm512_set1_ps(89.0f)), _mm512_set1_ps(-104.0f));
    __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
    __m512 p = _mm512_set1_ps(1.9875691500e-4f);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
    p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
    return _mm512_scalef_ps(p, n);
}

static inline __mmask16 tail_mask(int64_t left) {
    return left >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << left) - 1);
}

/* ------------------------------------------------------------------ elementwise */

static void add_avx512(float *y, const float *a, const float *b, int64_t n) {
    for (int64_t i = 0; i < n; i += 16) {
        __mmask16 m = tail_mask(n - i);
        _mm512_mask_storeu_ps(y + i, m, _mm512_add_ps(_mm512_maskz_loadu_ps(m, a + i), _mm512_maskz_loadu_ps(m, b + i)));
    }
}

static void mul_avx512(float *y, const float *a, const float *b, int64_t n) {
    for (int64_t i = 0; i < n; i += 16) {
        __mmask16 m = tail_mask(n - i);
        _mm512_mask_storeu_ps(y + i, m, _mm512_mul_ps(_mm512_maskz_loadu_ps(m, a + i), _mm512_maskz_loadu_ps(m, b + i)));
    }
}

static void swiglu_avx512(float *y, const float *gate, const float *up, int64_t n) {
    const __m512 one = _mm512_set1_ps(1.0f);
    for (int64_t i = 0; i < n; i += 16) {
        __mmask16 m = tail_mask(n - i);
        __m512 g = _mm512_maskz_loadu_ps(m, gate + i);
        __m512 d = _mm512_add_ps(one, exp16(_mm512_sub_ps(_mm512_setzero_ps(), g)));
        __m512 s = _mm512_div_ps(g, d);
        _mm512_mask_storeu_ps(y + i, m, _mm512_mul_ps(s, _mm512_maskz_loadu_ps(m, up + i)));
    }
}

/* GELU as x / (1 + e^v) with v in double, split into float hi + lo: see geglu8 of ops_avx2.c
 * for why. exp16 saturates hi itself (inf above 88.7, about 0 below -104). */
static inline __m512d gelu_v8(__m256 x) {
    __m512d d = _mm512_cvtps_pd(x);
    __m512d v = _mm512_mul_pd(d, _mm512_fmadd_pd(_mm512_set1_pd(UM_GELU_K3), _mm512_mul_pd(d, d), _mm512_set1_pd(UM_GELU_K1)));
    return _mm512_max_pd(_mm512_min_pd(v, _mm512_set1_pd(120.0)), _mm512_set1_pd(-120.0));
}

static void geglu_avx512(float *y, const float *gate, const float *up, int64_t n) {
    const __m512 one = _mm512_set1_ps(1.0f);
    for (int64_t i = 0; i < n; i += 16) {
        __mmask16 m = tail_mask(n - i);
        __m512 g = _mm512_maskz_loadu_ps(m, gate + i);
        __m512d v0 = gelu_v8(_mm512_castps512_ps256(g)), v1 = gelu_v8(_mm512_extractf32x8_ps(g, 1));
        __m256 h0 = _mm512_cvtpd_ps(v0), h1 = _mm512_cvtpd_ps(v1);
        __m256 l0 = _mm512_cvtpd_ps(_mm512_sub_pd(v0, _mm512_cvtps_pd(h0)));
        __m256 l1 = _mm512_cvtpd_ps(_mm512_sub_pd(v1, _mm512_cvtps_pd(h1)));
        __m512 hi = _mm512_insertf32x8(_mm512_castps256_ps512(h0), h1, 1);
        __m512 lo = _mm512_insertf32x8(_mm512_castps256_ps512(l0), l1, 1);
        __m512 e = _mm512_mul_ps(exp16(hi), _mm512_add_ps(one, lo));
        __m512 s = _mm512_div_ps(g, _mm512_add_ps(one, e));
        _mm512_mask_storeu_ps(y + i, m, _mm512_mul_ps(s, _mm512_maskz_loadu_ps(m, up + i)));
    }
}

static void f16_to_f32_avx512(const uint16_t *src, float *dst, int64_t n) {
    for (int64_t i = 0; i < n; i += 16) {
        __mmask16 m = tail_mask(n - i);
        _mm512_mask_storeu_ps(dst + i, m, _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, src + i)));
    }
}

static void f32_to_f16_avx512(const float *src, uint16_t *dst, int64_t n) {
    for (int64_t i = 0; i < n; i += 16) {
        __mmask16 m = tail_mask(n - i);
        _mm256_mask_storeu_epi16(dst + i, m, _mm512_cvtps_ph(_mm512_maskz_loadu_ps(m, src + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    }
}

static void axpy_avx512(float *y, float a, const float *x, int64_t n) {
    const __m512 va = _mm512_set1_ps(a);
    for (int64_t i = 0; i < n; i += 16) {
        __mmask16 m = tail_mask(n - i);
        _mm512_mask_storeu_ps(y + i, m, _mm512_fmadd_ps(va, _mm512_maskz_loadu_ps(m, x + i), _mm512_maskz_loadu_ps(m, y + i)));
    }
}

/* ------------------------------------------------------------------ row-wise */

/* Add the 16 floats of v into two double accumulators (exactly, as the reference's
 * double sum does, only in another order). */
static inline void acc_pd(__m512d *lo, __m512d *hi, __m512 v) {
    *lo = _mm512_add_pd(*lo, _mm512_cvtps_pd(_mm512_castps512_ps256(v)));
    *hi = _mm512_add_pd(*hi, _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1))));
}

static void rmsnorm_row_avx512(float *y, const float *x, const float *w, int n, float eps) {
    __m512d lo = _mm512_setzero_pd(), hi = _mm512_setzero_pd();
    for (int i = 0; i < n; i += 16) {
        __m512 v = _mm512_maskz_loadu_ps(tail_mask(n - i), x + i);
        acc_pd(&lo, &hi, _mm512_mul_ps(v, v));
    }
    double sum = _mm512_reduce_add_pd(_mm512_add_pd(lo, hi));
    const __m512 scale = _mm512_set1_ps(1.0f / sqrtf((float)(sum / n) + eps));
    for (int i = 0; i < n; i += 16) {
        __mmask16 m = tail_mask(n - i);
        __m512 v = _mm512_mul_ps(_mm512_maskz_loadu_ps(m, x + i), scale);
        if (w) v = _mm512_mul_ps(v, _mm512_maskz_loadu_ps(m, w + i));
        _mm512_mask_storeu_ps(y + i, m, v);
    }
}

static double exp_shift_avx512(float *x, int64_t n, float shift) {
    const __m512 vm = _mm512_set1_ps(shift);
    __m512d lo = _mm512_setzero_pd(), hi = _mm512_setzero_pd();
    for (int64_t i = 0; i < n; i += 16) {
        __mmask16 k = tail_mask(n - i);
        __m512 e = _mm512_maskz_mov_ps(k, exp16(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, x + i), vm)));
        _mm512_mask_storeu_ps(x + i, k, e);
        acc_pd(&lo, &hi, e);
    }
    return _mm512_reduce_add_pd(_mm512_add_pd(lo, hi));
}

static void softmax_row_avx512(float *x, int n) {
    __m512 mx = _mm512_set1_ps(-INFINITY);
    for (int i = 0; i < n; i += 16)
        mx = _mm512_max_ps(mx, _mm512_mask_loadu_ps(_mm512_set1_ps(-INFINITY), tail_mask(n - i), x + i));
    float m = _mm512_reduce_max_ps(mx);
    if (m == -INFINITY) {
        for (int i = 0; i < n; i += 16) _mm512_mask_storeu_ps(x + i, tail_mask(n - i), _mm512_setzero_ps());
        return;
    }
    const __m512 inv = _mm512_set1_ps((float)(1.0 / exp_shift_avx512(x, n, m)));
    for (int i = 0; i < n; i += 16) {
        __mmask16 k = tail_mask(n - i);
        _mm512_mask_storeu_ps(x + i, k, _mm512_mul_ps(_mm512_maskz_loadu_ps(k, x + i), inv));
    }
}

/* ------------------------------------------------------------------ RoPE */

/* y0 = x0 c - x1 s, y1 = x0 s + x1 c, fused as fma(x0, (c | s), round(x1 * (-s | c))):
 * the same single rounding of the x1 product that llama.cpp's compiled code has, so the
 * result matches ggml_rope_ext bit for bit. */
static void rope_norm_avx512(float *x, const float *cs, int n_dims) {
    const float *cs0 = cs, *cs1 = cs + n_dims;
    for (int i = 0; i < n_dims; i += 16) {
        __mmask16 m = tail_mask(n_dims - i);
        __m512 v = _mm512_maskz_loadu_ps(m, x + i);
        __m512 x0 = _mm512_moveldup_ps(v), x1 = _mm512_movehdup_ps(v);
        __m512 r = _mm512_fmadd_ps(x0, _mm512_maskz_loadu_ps(m, cs0 + i),
                                   _mm512_mul_ps(x1, _mm512_maskz_loadu_ps(m, cs1 + i)));
        _mm512_mask_storeu_ps(x + i, m, r);
    }
}

static void rope_neox_avx512(float *x, const float *cs, int n_dims) {
    const int half = n_dims / 2;
    const float *c = cs, *s = cs + half;
    for (int i = 0; i < half; i += 16) {
        __mmask16 m = tail_mask(half - i);
        __m512 x0 = _mm512_maskz_loadu_ps(m, x + i), x1 = _mm512_maskz_loadu_ps(m, x + half + i);
        __m512 vc = _mm512_maskz_loadu_ps(m, c + i), vs = _mm512_maskz_loadu_ps(m, s + i);
        _mm512_mask_storeu_ps(x + i, m, _mm512_fmsub_ps(x0, vc, _mm512_mul_ps(x1, vs)));
        _mm512_mask_storeu_ps(x + half + i, m, _mm512_fmadd_ps(x0, vs, _mm512_mul_ps(x1, vc)));
    }
}

/* ------------------------------------------------------------------ attention
 * One block of up to BQ = 32 queries of one head against all keys, in key tiles of
 * BK = 64. The block's queries are transposed once into qt (head_dim, BQ), so a key
 * tile's scores come out transposed, st (BK, BQ): one vector per key across the
 * queries. That makes the online softmax (running max m, running sum l, rescale corr)
 * plain vector arithmetic over queries, with no horizontal reductions. */

#define BQ UM_ATTN_BLOCK_Q          /* 32: two vectors of queries */
#define BK 64

_Static_assert(BQ == 32, "the kernel holds a block's queries in two zmm registers");

/* acc[i] = acc[i] * corr[i] + sum_j p[j][i] v[j] (and the same for query i1) over nv
 * vectors of dims from d. Always inlined with a constant nv, so the 2 * nv accumulators
 * live in registers across the key loop. */
static inline __attribute__((always_inline)) void
pv_pair(float *acc, const float *st, const float *vt, int nk, int hd,
        int i, int i1, const float *corr, int d, const int nv) {
    float *a0 = acc + (int64_t)i * hd + d, *a1 = acc + (int64_t)i1 * hd + d;
    const __m512 cr0 = _mm512_set1_ps(corr[i]), cr1 = _mm512_set1_ps(corr[i1]);
    __m512 x0[4], x1[4];
    #pragma GCC unroll 4
    for (int u = 0; u < nv; u++) {
        x0[u] = _mm512_mul_ps(_mm512_load_ps(a0 + 16 * u), cr0);
        x1[u] = _mm512_mul_ps(_mm512_load_ps(a1 + 16 * u), cr1);
    }
    const float *vr = vt + d;
    for (int j = 0; j < nk; j++, vr += hd) {
        const __m512 p0 = _mm512_set1_ps(st[j * BQ + i]), p1 = _mm512_set1_ps(st[j * BQ + i1]);
        #pragma GCC unroll 4
        for (int u = 0; u < nv; u++) {
            __m512 vv = _mm512_loadu_ps(vr + 16 * u);
            x0[u] = _mm512_fmadd_ps(p0, vv, x0[u]);
            x1[u] = _mm512_fmadd_ps(p1, vv, x1[u]);
        }
    }
    /* store a1 first: when i1 == i the first query's result must win (they are equal) */
    #pragma GCC unroll 4
    for (int u = 0; u < nv; u++) _mm512_store_ps(a1 + 16 * u, x1[u]);
    #pragma GCC unroll 4
    for (int u = 0; u < nv; u++) _mm512_store_ps(a0 + 16 * u, x0[u]);
}

static void attn_block_avx512(const um_attn_block *b) {
    const int hd = b->head_dim, nq = b->n_q;
    if (hd % 16) { ops_attn_block_ref(b); return; }
    float qt[UM_OPS_MAX_HEAD_DIM * BQ] __attribute__((aligned(64)));     /* (hd, BQ) */
    float st[BK * BQ] __attribute__((aligned(64)));                      /* (BK, BQ) */
    float acc[BQ * UM_OPS_MAX_HEAD_DIM] __attribute__((aligned(64)));    /* (BQ, hd) */
    float vpack[BK * UM_OPS_MAX_HEAD_DIM] __attribute__((aligned(64)));  /* (BK, hd) */
    float ml[BQ] __attribute__((aligned(64)));      /* per query: the tile's corr, at the end l */

    /* row by row: each q row is read contiguously (rows are far apart in memory) */
    for (int i = 0; i < BQ; i++) {
        if (i >= nq) { for (int d = 0; d < hd; d++) qt[d * BQ + i] = 0.0f; continue; }
        const float *qr = b->q + (int64_t)i * b->q_stride;
        for (int d = 0; d < hd; d++) qt[d * BQ + i] = qr[d] * b->scale;
    }
    for (int i = 0; i < nq * hd; i++) acc[i] = 0;
    __m512 m0 = _mm512_set1_ps(-INFINITY), m1 = m0;
    __m512 l0 = _mm512_setzero_ps(), l1 = l0;

    for (int kb = 0; kb < b->n_kv; kb += BK) {
        const int nk = UM_MIN(BK, b->n_kv - kb);
        /* scores, 4 keys at a time; masked keys get -inf */
        int any = 0;
        for (int j = 0; j < nk; j += 4) {
            const int nj = UM_MIN(4, nk - j);
            const float *kr[4];
            int live[4];
            #pragma GCC unroll 4
            for (int u = 0; u < 4; u++) {
                int jj = kb + j + (u < nj ? u : 0);
                kr[u] = b->k + (int64_t)jj * b->kv_stride;
                live[u] = u < nj && (!b->key_mask || b->key_mask[jj]);
                any |= live[u];
            }
            __m512 s00 = _mm512_setzero_ps(), s01 = s00, s10 = s00, s11 = s00;
            __m512 s20 = s00, s21 = s00, s30 = s00, s31 = s00;
            for (int d = 0; d < hd; d++) {
                __m512 q0 = _mm512_load_ps(qt + d * BQ), q1 = _mm512_load_ps(qt + d * BQ + 16);
                __m512 k0 = _mm512_set1_ps(kr[0][d]), k1 = _mm512_set1_ps(kr[1][d]);
                __m512 k2 = _mm512_set1_ps(kr[2][d]), k3 = _mm512_set1_ps(kr[3][d]);
                s00 = _mm512_fmadd_ps(k0, q0, s00); s01 = _mm512_fmadd_ps(k0, q1, s01);
                s10 = _mm512_fmadd_ps(k1, q0, s10); s11 = _mm512_fmadd_ps(k1, q1, s11);
                s20 = _mm512_fmadd_ps(k2, q0, s20); s21 = _mm512_fmadd_ps(k2, q1, s21);
                s30 = _mm512_fmadd_ps(k3, q0, s30); s31 = _mm512_fmadd_ps(k3, q1, s31);
            }
            const __m512 ninf = _mm512_set1_ps(-INFINITY);
            __m512 s[8] = { s00, s01, s10, s11, s20, s21, s30, s31 };
            for (int u = 0; u < nj; u++) {
                _mm512_store_ps(st + (j + u) * BQ, live[u] ? s[2 * u] : ninf);
                _mm512_store_ps(st + (j + u) * BQ + 16, live[u] ? s[2 * u + 1] : ninf);
            }
        }
        if (!any) continue;
        /* V rows of the tile, contiguous: PV reads each of them once per query pair */
        const float *vt = b->v + (int64_t)kb * b->kv_stride;
        if (b->kv_stride != hd) {
            for (int j = 0; j < nk; j++) memcpy(vpack + (int64_t)j * hd, vt + (int64_t)j * b->kv_stride, (size_t)hd * sizeof(float));
            vt = vpack;
        }
        /* online softmax over the tile, vectorized across queries */
        __m512 t0 = m0, t1 = m1;
        for (int j = 0; j < nk; j++) {
            t0 = _mm512_max_ps(t0, _mm512_load_ps(st + j * BQ));
            t1 = _mm512_max_ps(t1, _mm512_load_ps(st + j * BQ + 16));
        }
        /* t is finite here (some key is live), so exp(m - t) is 0 when m = -inf */
        __m512 c0 = exp16(_mm512_sub_ps(m0, t0)), c1 = exp16(_mm512_sub_ps(m1, t1));
        m0 = t0; m1 = t1;
        __m512 sum0 = _mm512_setzero_ps(), sum1 = sum0;
        for (int j = 0; j < nk; j++) {
            __m512 p0 = exp16(_mm512_sub_ps(_mm512_load_ps(st + j * BQ), m0));
            __m512 p1 = exp16(_mm512_sub_ps(_mm512_load_ps(st + j * BQ + 16), m1));
            _mm512_store_ps(st + j * BQ, p0);
            _mm512_store_ps(st + j * BQ + 16, p1);
            sum0 = _mm512_add_ps(sum0, p0);
            sum1 = _mm512_add_ps(sum1, p1);
        }
        l0 = _mm512_fmadd_ps(l0, c0, sum0);
        l1 = _mm512_fmadd_ps(l1, c1, sum1);
        _mm512_store_ps(ml, c0);
        _mm512_store_ps(ml + 16, c1);
        /* acc = acc * corr + P V, two queries and 64 dims (8 registers) at a time */
        for (int i = 0; i < nq; i += 2) {
            const int i1 = i + 1 < nq ? i + 1 : i;      /* odd tail: the pair repeats i */
            int d = 0;
            for (; d + 64 <= hd; d += 64) pv_pair(acc, st, vt, nk, hd, i, i1, ml, d, 4);
            for (; d < hd; d += 16) pv_pair(acc, st, vt, nk, hd, i, i1, ml, d, 1);
        }
    }
    _mm512_store_ps(ml, l0);                    /* ml now holds l */
    _mm512_store_ps(ml + 16, l1);
    for (int i = 0; i < nq; i++) {
        const float inv = ml[i] > 0 ? 1.0f / ml[i] : 0.0f;
        const __m512 vi = _mm512_set1_ps(inv);
        float *o = b->out + (int64_t)i * b->q_stride;
        for (int d = 0; d < hd; d += 16)
            _mm512_storeu_ps(o + d, _mm512_mul_ps(_mm512_load_ps(acc + (int64_t)i * hd + d), vi));
    }
}

/* ------------------------------------------------------------------ soft-cap */

/* x = cap tanh(x / cap): see ops.h (UM_TANH_*) */
static void softcap_avx512(float *x, int64_t n, float cap) {
    const __m512 vc = _mm512_set1_ps(cap), one = _mm512_set1_ps(1.0f), two = _mm512_set1_ps(2.0f);
    const __m512i sign = _mm512_set1_epi32((int)0x80000000u);
    for (int64_t i = 0; i < n; i += 16) {
        const __mmask16 m = tail_mask(n - i);
        __m512 t = _mm512_div_ps(_mm512_maskz_loadu_ps(m, x + i), vc);
        __m512 a = _mm512_abs_ps(t), s = _mm512_mul_ps(a, a);
        __m512 p = _mm512_fmadd_ps(_mm512_set1_ps(UM_TANH_P4), s, _mm512_set1_ps(UM_TANH_P3));
        p = _mm512_fmadd_ps(p, s, _mm512_set1_ps(UM_TANH_P2));
        p = _mm512_fmadd_ps(p, s, _mm512_set1_ps(UM_TANH_P1));
        p = _mm512_fmadd_ps(p, s, _mm512_set1_ps(UM_TANH_P0));
        __m512 small = _mm512_fmadd_ps(_mm512_mul_ps(p, s), a, a);
        __m512 big = _mm512_sub_ps(one, _mm512_div_ps(two, _mm512_add_ps(exp16(_mm512_add_ps(a, a)), one)));
        __m512 r = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(a, _mm512_set1_ps(UM_TANH_SMALL), _CMP_LT_OQ), big, small);
        r = _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(r), _mm512_and_si512(_mm512_castps_si512(t), sign)));
        r = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(t, t, _CMP_UNORD_Q), r, t);    /* NaN stays NaN */
        _mm512_mask_storeu_ps(x + i, m, _mm512_mul_ps(vc, r));
    }
}

/* ------------------------------------------------------------------ small GEMM */

/* R rows (<= 4) by NV vectors of 16 columns (<= 4, the last one under the mask `last`):
 * 16 accumulators, each a chain of FMAs in k order, so the bits are the reference's. R and
 * NV are constants in every call below and every loop over them is unrolled, so the arrays
 * live in registers (without the unrolling they go through the stack). */
#define UNROLL _Pragma("GCC unroll 4")

static inline __attribute__((always_inline)) void
gemm_tile512(int R, int NV, __mmask16 last, float *y, int64_t ldy, const float *a, int64_t lda,
             const float *b, int64_t ldb, int k) {
    __m512 acc[4][4];
    UNROLL
    for (int r = 0; r < R; r++)
        UNROLL
        for (int v = 0; v < NV; v++) acc[r][v] = _mm512_maskz_loadu_ps(v == NV - 1 ? last : 0xFFFF, y + r * ldy + 16 * v);
    for (int kk = 0; kk < k; kk++) {
        __m512 bv[4];
        UNROLL
        for (int v = 0; v < NV; v++) bv[v] = _mm512_maskz_loadu_ps(v == NV - 1 ? last : 0xFFFF, b + kk * ldb + 16 * v);
        UNROLL
        for (int r = 0; r < R; r++) {
            __m512 ar = _mm512_set1_ps(a[r * lda + kk]);
            UNROLL
            for (int v = 0; v < NV; v++) acc[r][v] = _mm512_fmadd_ps(ar, bv[v], acc[r][v]);
        }
    }
    UNROLL
    for (int r = 0; r < R; r++)
        UNROLL
        for (int v = 0; v < NV; v++) _mm512_mask_storeu_ps(y + r * ldy + 16 * v, v == NV - 1 ? last : 0xFFFF, acc[r][v]);
}

static void gemm_acc_avx512(float *y, int64_t ldy, const float *a, int64_t lda, const float *b, int64_t ldb,
                            int n, int k, int m) {
    for (int j0 = 0; j0 < m; j0 += 64) {
        const int w = m - j0 < 64 ? m - j0 : 64, nv = (w + 15) / 16;
        const __mmask16 last = tail_mask(w - 16 * (nv - 1));
        for (int i0 = 0; i0 < n; i0 += 4) {
            const int R = n - i0 < 4 ? n - i0 : 4;
            float *yt = y + i0 * ldy + j0;
            const float *at = a + i0 * lda, *bt = b + j0;
            switch (R * 8 + nv) {
#define GT(r, v) case r * 8 + v: gemm_tile512(r, v, last, yt, ldy, at, lda, bt, ldb, k); break;
            GT(1, 1) GT(1, 2) GT(1, 3) GT(1, 4) GT(2, 1) GT(2, 2) GT(2, 3) GT(2, 4)
            GT(3, 1) GT(3, 2) GT(3, 3) GT(3, 4) GT(4, 1) GT(4, 2) GT(4, 3) GT(4, 4)
#undef GT
            }
        }
    }
}

/* ops_gemm_bf16_acc's tile: R rows (<= 4) by the tile's 64 columns (4 vectors; the B tile is
 * zero past w, y is loaded and stored under `lm`). With DOT, vdpbf16ps (the odd product added
 * first, then the even one: the reference's chain); else the same two FMAs on the pairs split
 * into floats (the even value shifted up, the odd one masked). */
static inline __attribute__((always_inline)) void
gemm_bf16_tile512(int R, bool dot, const __mmask16 lm[4], float *y, int64_t ldy, const uint32_t *a, int64_t lda,
                  const uint32_t *bt, int kp) {
    const __m512i hi = _mm512_set1_epi32((int)0xFFFF0000u);
    __m512 acc[4][4];
    UNROLL
    for (int r = 0; r < R; r++)
        UNROLL
        for (int v = 0; v < 4; v++) acc[r][v] = _mm512_maskz_loadu_ps(lm[v], y + r * ldy + 16 * v);
    for (int p = 0; p < kp; p++) {
        const uint32_t *bp = bt + p * UM_GEMM_TILE_COLS;
        __m512i bv[4];
        UNROLL
        for (int v = 0; v < 4; v++) bv[v] = _mm512_loadu_si512(bp + 16 * v);
        if (dot) {
            UNROLL
            for (int r = 0; r < R; r++) {
                const __m512i ar = _mm512_set1_epi32((int)a[r * lda + p]);
                UNROLL
                for (int v = 0; v < 4; v++) acc[r][v] = _mm512_dpbf16_ps(acc[r][v], (__m512bh)ar, (__m512bh)bv[v]);
            }
        } else {
            __m512 be[4], bo[4];
            UNROLL
            for (int v = 0; v < 4; v++) {
                be[v] = _mm512_castsi512_ps(_mm512_slli_epi32(bv[v], 16));
                bo[v] = _mm512_castsi512_ps(_mm512_and_si512(bv[v], hi));
            }
            UNROLL
            for (int r = 0; r < R; r++) {
                const __m512i ar = _mm512_set1_epi32((int)a[r * lda + p]);
                const __m512 ae = _mm512_castsi512_ps(_mm512_slli_epi32(ar, 16)), ao = _mm512_castsi512_ps(_mm512_and_si512(ar, hi));
                UNROLL
                for (int v = 0; v < 4; v++) acc[r][v] = _mm512_fmadd_ps(ae, be[v], _mm512_fmadd_ps(ao, bo[v], acc[r][v]));
            }
        }
    }
    UNROLL
    for (int r = 0; r < R; r++)
        UNROLL
        for (int v = 0; v < 4; v++) _mm512_mask_storeu_ps(y + r * ldy + 16 * v, lm[v], acc[r][v]);
}

static inline __attribute__((always_inline)) void
gemm_bf16_512(bool dot, float *y, int64_t ldy, const uint32_t *a, int64_t lda, const uint32_t *bt, int n, int kp, int w) {
    __mmask16 lm[4];
    for (int v = 0; v < 4; v++) lm[v] = w > 16 * v ? tail_mask(w - 16 * v) : 0;
    for (int i0 = 0; i0 < n; i0 += 4) {
        float *yt = y + i0 * ldy;
        const uint32_t *at = a + i0 * lda;
        switch (n - i0 < 4 ? n - i0 : 4) {
        case 1: gemm_bf16_tile512(1, dot, lm, yt, ldy, at, lda, bt, kp); break;
        case 2: gemm_bf16_tile512(2, dot, lm, yt, ldy, at, lda, bt, kp); break;
        case 3: gemm_bf16_tile512(3, dot, lm, yt, ldy, at, lda, bt, kp); break;
        default: gemm_bf16_tile512(4, dot, lm, yt, ldy, at, lda, bt, kp); break;
        }
    }
}

static void gemm_bf16_avx512(float *y, int64_t ldy, const uint32_t *a, int64_t lda, const uint32_t *bt, int n, int kp, int w) {
    gemm_bf16_512(false, y, ldy, a, lda, bt, n, kp, w);
}

/* only where cpu_features() has avx512bf16 (ops_bf16_dot) */
static void gemm_bf16_dot_avx512(float *y, int64_t ldy, const uint32_t *a, int64_t lda, const uint32_t *bt, int n, int kp, int w) {
    gemm_bf16_512(true, y, ldy, a, lda, bt, n, kp, w);
}

/* ops_bf16_round on 16 lanes: below UM_BF16_FLUSH (the bits of |x| under 0x26800000) 0, else
 * the float's bits plus 0x7FFF plus the kept half's lowest bit, the upper half kept */
static inline __m512i bf16_round16(__m512 x) {
    const __m512i u = _mm512_castps_si512(x);
    const __mmask16 keep = _mm512_cmpge_epu32_mask(_mm512_and_si512(u, _mm512_set1_epi32(0x7FFFFFFF)), _mm512_set1_epi32(0x26800000));
    const __m512i r = _mm512_add_epi32(u, _mm512_add_epi32(_mm512_set1_epi32(0x7FFF), _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1))));
    return _mm512_maskz_srli_epi32(keep, r, 16);
}

static void f32_to_bf16_avx512(const float *x, uint16_t *y, int64_t n) {
    for (int64_t i = 0; i < n; i += 16) {
        const __mmask16 m = tail_mask(n - i);
        _mm256_mask_storeu_epi16(y + i, m, _mm512_cvtepi32_epi16(bf16_round16(_mm512_maskz_loadu_ps(m, x + i))));
    }
}

static void bf16_pack2_avx512(uint32_t *dst, const float *even, const float *odd, int n) {
    for (int j = 0; j < n; j += 16) {
        const __mmask16 m = tail_mask(n - j);
        __m512i r = bf16_round16(_mm512_maskz_loadu_ps(m, even + j));
        if (odd) r = _mm512_or_si512(r, _mm512_slli_epi32(bf16_round16(_mm512_maskz_loadu_ps(m, odd + j)), 16));
        _mm512_mask_storeu_epi32(dst + j, m, r);
    }
}

/* ops_dequant_row: Q6_K and Q8_0, the reference's products in the same order */
static bool dequant_row_avx512(um_type type, const void *src, float *y, int64_t n) {
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
                        const __m512 dl = _mm512_set1_ps(d * (float)b->scales[8 * h + 2 * g + s2]);
                        _mm512_storeu_ps(y + 128 * h + 32 * g + 16 * s2,
                                         _mm512_mul_ps(dl, _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(c))));
                    }
            }
        }
        return true;
    }
    if (type == UM_TYPE_Q8_0) {
        const um_block_q8_0 *b = src;
        for (int64_t i = 0; i < n / UM_QK8_0; i++, b++, y += UM_QK8_0) {
            const __m512 d = _mm512_set1_ps(um_fp16_to_fp32(b->d));
            for (int j = 0; j < UM_QK8_0; j += 16) {
                const __m128i c = _mm_loadu_si128((const __m128i *)(b->qs + j));
                _mm512_storeu_ps(y + j, _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(c)), d));
            }
        }
        return true;
    }
    return false;
}

const um_ops_kern ops_kern_avx512 = {
    .add         = add_avx512,
    .mul         = mul_avx512,
    .swiglu      = swiglu_avx512,
    .geglu       = geglu_avx512,
    .axpy        = axpy_avx512,
    .rmsnorm_row = rmsnorm_row_avx512,
    .softmax_row = softmax_row_avx512,
    .rope_norm   = rope_norm_avx512,
    .rope_neox   = rope_neox_avx512,
    .attn_block  = attn_block_avx512,
    .f16_to_f32  = f16_to_f32_avx512,
    .f32_to_f16  = f32_to_f16_avx512,
    .softcap     = softcap_avx512,
    .dequant_row = dequant_row_avx512,
    .exp_shift   = exp_shift_avx512,
    .gemm_acc    = gemm_acc_avx512,
    .gemm_bf16   = gemm_bf16_avx512,
    .gemm_bf16_dot = gemm_bf16_dot_avx512,
    .bf16_pack2  = bf16_pack2_avx512,
    .f32_to_bf16 = f32_to_bf16_avx512,
};
