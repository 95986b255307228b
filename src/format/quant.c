/*
 * quant: the traits table of every type unmask computes with, and the scalar reference of
 * each: block layouts' dequantizer, dot product against the activation format the type
 * pairs with, and the simple round-to-nearest quantizers of the 32-element blocks. The
 * K-quant and IQ4 quantizer searches are in quant_search.c; helpers both use, quant_impl.h.
 *
 * Invariants:
 * - Dequantizers are bit-exact with llama.cpp's dequantize_row_* (same float operations in
 *   the same order, and no FMA contraction: see the pragma below). Proven by tests/test_quant.c
 *   on tensors made by llama.cpp itself (tests/data/quant, tools/make-quant-fixtures.py).
 * - Quantizers produce the same bytes as llama.cpp's quantize_* with no importance matrix,
 *   i.e. what llama-quantize writes: the same search, the same float order, the same
 *   rounding helpers (round-half-even via the 1.5*2^23 trick, roundf where llama.cpp uses it).
 * - Dot products are the plain definition the fast kernels (matmul_*.c) are tested against:
 *   integer sums inside a block, then scaled and accumulated in float.
 * - n (elements) is always a whole number of blocks; callers check.
 */
#include "quant.h"
#include "util.h"

#include <float.h>
#include <math.h>
#include <string.h>


#include "quant_impl.h"


/* ================================================================== float types */

static void f32_to_float(const void *src, float *y, int64_t n) { memcpy(y, src, (size_t)n * 4); }
static void f32_from_float(const float *x, void *dst, int64_t n) { memcpy(dst, x, (size_t)n * 4); }

static void f16_to_float(const void *src, float *y, int64_t n) {
    const um_half *h = src;
    for (int64_t i = 0; i < n; i++) y[i] = h2f(h[i]);
}
static void f16_from_float(const float *x, void *dst, int64_t n) {
    um_half *h = dst;
    for (int64_t i = 0; i < n; i++) h[i] = um_fp32_to_fp16(x[i]);
}
static void bf16_to_float(const void *src, float *y, int64_t n) {
    const um_bf16 *h = src;
    for (int64_t i = 0; i < n; i++) y[i] = um_bf16_to_fp32(h[i]);
}
static void bf16_from_float(const float *x, void *dst, int64_t n) {
    um_bf16 *h = dst;
    for (int64_t i = 0; i < n; i++) h[i] = um_fp32_to_bf16(x[i]);
}

/* Float dots accumulate in double, as ggml's ggml_vec_dot_f32/f16 do. */
static float f32_dot(const void *w, const void *a, int64_t n) {
    const float *x = w, *y = a;
    double s = 0;
    for (int64_t i = 0; i < n; i++) s += (double)x[i] * (double)y[i];
    return (float)s;
}
static float f16_dot(const void *w, const void *a, int64_t n) {
    const um_half *x = w, *y = a;
    double s = 0;
    for (int64_t i = 0; i < n; i++) s += (double)(h2f(x[i]) * h2f(y[i]));
    return (float)s;
}
static float bf16_dot(const void *w, const void *a, int64_t n) {
    const um_bf16 *x = w, *y = a;
    double s = 0;
    for (int64_t i = 0; i < n; i++) s += (double)(um_bf16_to_fp32(x[i]) * um_bf16_to_fp32(y[i]));
    return (float)s;
}

/* ================================================================== 32-element blocks
 * Nibble layout shared by Q4_0/Q4_1/Q5_x/IQ4_NL: byte j holds element j (low nibble) and
 * element j+16 (high nibble). Q5's fifth bits: bit j of qh is element j's.
 */

static void q4_0_to_float(const void *src, float *y, int64_t n) {
    const um_block_q4_0 *b = src;
    for (int64_t i = 0; i < n / UM_QK4_0; i++, b++, y += UM_QK4_0) {
        const float d = h2f(b->d);
        for (int j = 0; j < 16; j++) {
            y[j]      = ((b->qs[j] & 0xF) - 8) * d;
            y[j + 16] = ((b->qs[j] >> 4) - 8) * d;
        }
    }
}

static void q4_0_from_float(const float *x, void *dst, int64_t n) {
    um_block_q4_0 *b = dst;
    for (int64_t i = 0; i < n / UM_QK4_0; i++, b++, x += UM_QK4_0) {
        float amax = 0, max = 0;                  /* signed value of largest magnitude */
        for (int j = 0; j < 32; j++)
            if (amax < fabsf(x[j])) { amax = fabsf(x[j]); max = x[j]; }
        const float d = max / -8;                 /* the extreme maps to level -8 exactly */
        const float id = d ? 1.0f / d : 0.0f;
        b->d = f2h(d);
        for (int j = 0; j < 16; j++) {
            /* truncation of v + 8.5 is llama.cpp's rounding here (not half-even) */
            int q0 = (int8_t)(x[j] * id + 8.5f), q1 = (int8_t)(x[j + 16] * id + 8.5f);
            q0 = q0 > 15 ? 15 : q0;
            q1 = q1 > 15 ? 15 : q1;
            b->qs[j] = (uint8_t)(q0 | (q1 << 4));
        }
    }
}

static void q4_1_to_float(const void *src, float *y, int64_t n) {
    const um_block_q4_1 *b = src;
    for (int64_t i = 0; i < n / UM_QK4_1; i++, b++, y += UM_QK4_1) {
        const float d = h2f(b->d), m = h2f(b->m);
        for (int j = 0; j < 16; j++) {
            y[j]      = (b->qs[j] & 0xF) * d + m;
            y[j + 16] = (b->qs[j] >> 4) * d + m;
        }
    }
}

static void minmax32(const float *x, float *min, float *max) {
    *min = FLT_MAX;
    *max = -FLT_MAX;
    for (int j = 0; j < 32; j++) {
        if (x[j] < *min) *min = x[j];
        if (x[j] > *max) *max = x[j];
    }
}

static void q4_1_from_float(const float *x, void *dst, int64_t n) {
    um_block_q4_1 *b = dst;
    for (int64_t i = 0; i < n / UM_QK4_1; i++, b++, x += UM_QK4_1) {
        float min, max;
        minmax32(x, &min, &max);
        const float d = (max - min) / 15;
        const float id = d ? 1.0f / d : 0.0f;
        b->d = f2h(d);
        b->m = f2h(min);
        for (int j = 0; j < 16; j++) {
            int q0 = (int8_t)((x[j] - min) * id + 0.5f), q1 = (int8_t)((x[j + 16] - min) * id + 0.5f);
            q0 = q0 > 15 ? 15 : q0;
            q1 = q1 > 15 ? 15 : q1;
            b->qs[j] = (uint8_t)(q0 | (q1 << 4));
        }
    }
}

static inline uint32_t load_u32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return v; }

static void q5_0_to_float(const void *src, float *y, int64_t n) {
    const um_block_q5_0 *b = src;
    for (int64_t i = 0; i < n / UM_QK5_0; i++, b++, y += UM_QK5_0) {
        const float d = h2f(b->d);
        const uint32_t qh = load_u32(b->qh);
        for (int j = 0; j < 16; j++) {
            int q0 = (b->qs[j] & 0xF) | (((qh >> j) & 1) << 4);
            int q1 = (b->qs[j] >> 4) | (((qh >> (j + 16)) & 1) << 4);
            y[j]      = (q0 - 16) * d;
            y[j + 16] = (q1 - 16) * d;
        }
    }
}

/* Pack 32 five-bit levels (element j and j+16 share a byte). */
static void pack5(const uint8_t *l, uint8_t qs[16], uint8_t qh_out[4]) {
    uint32_t qh = 0;
    for (int j = 0; j < 16; j++) {
        qs[j] = (uint8_t)((l[j] & 0xF) | ((l[j + 16] & 0xF) << 4));
        qh |= (uint32_t)((l[j] >> 4) & 1) << j;
        qh |= (uint32_t)((l[j + 16] >> 4) & 1) << (j + 16);
    }
    memcpy(qh_out, &qh, 4);
}

static void q5_0_from_float(const float *x, void *dst, int64_t n) {
    um_block_q5_0 *b = dst;
    for (int64_t i = 0; i < n / UM_QK5_0; i++, b++, x += UM_QK5_0) {
        float amax = 0, max = 0;
        for (int j = 0; j < 32; j++)
            if (amax < fabsf(x[j])) { amax = fabsf(x[j]); max = x[j]; }
        const float d = max / -16;
        const float id = d ? 1.0f / d : 0.0f;
        b->d = f2h(d);
        uint8_t l[32];
        for (int j = 0; j < 32; j++) {
            int q = (int8_t)(x[j] * id + 16.5f);
            l[j] = (uint8_t)(q > 31 ? 31 : q);
        }
        pack5(l, b->qs, b->qh);
    }
}

static void q5_1_to_float(const void *src, float *y, int64_t n) {
    const um_block_q5_1 *b = src;
    for (int64_t i = 0; i < n / UM_QK5_1; i++, b++, y += UM_QK5_1) {
        const float d = h2f(b->d), m = h2f(b->m);
        const uint32_t qh = load_u32(b->qh);
        for (int j = 0; j < 16; j++) {
            int q0 = (b->qs[j] & 0xF) | (((qh >> j) & 1) << 4);
            int q1 = (b->qs[j] >> 4) | (((qh >> (j + 16)) & 1) << 4);
            y[j]      = q0 * d + m;
            y[j + 16] = q1 * d + m;
        }
    }
}

static void q5_1_from_float(const float *x, void *dst, int64_t n) {
    um_block_q5_1 *b = dst;
    for (int64_t i = 0; i < n / UM_QK5_1; i++, b++, x += UM_QK5_1) {
        float min, max;
        minmax32(x, &min, &max);
        const float d = (max - min) / 31;
        const float id = d ? 1.0f / d : 0.0f;
        b->d = f2h(d);
        b->m = f2h(min);
        uint8_t l[32];
        for (int j = 0; j < 32; j++) l[j] = (uint8_t)((x[j] - min) * id + 0.5f);   /* <= 31.5 */
        pack5(l, b->qs, b->qh);
    }
}

static void q8_0_to_float(const void *src, float *y, int64_t n) {
    const um_block_q8_0 *b = src;
    for (int64_t i = 0; i < n / UM_QK8_0; i++, b++, y += UM_QK8_0) {
        const float d = h2f(b->d);
        for (int j = 0; j < 32; j++) y[j] = b->qs[j] * d;
    }
}

void um_quantize_q8_0(const float *x, um_block_q8_0 *b, int64_t n) {
    for (int64_t i = 0; i < n / UM_QK8_0; i++, b++, x += UM_QK8_0) {
        float amax = 0;
        for (int j = 0; j < 32; j++) amax = UM_MAX(amax, fabsf(x[j]));
        const float d = amax / 127;
        const float id = d ? 1.0f / d : 0.0f;
        b->d = f2h(d);
        for (int j = 0; j < 32; j++) b->qs[j] = (int8_t)roundf(x[j] * id);   /* half away from zero */
    }
}
static void q8_0_from_float(const float *x, void *dst, int64_t n) { um_quantize_q8_0(x, dst, n); }

static void q8_1_to_float(const void *src, float *y, int64_t n) {
    const um_block_q8_1 *b = src;
    for (int64_t i = 0; i < n / UM_QK8_1; i++, b++, y += UM_QK8_1) {
        const float d = h2f(b->d);
        for (int j = 0; j < 32; j++) y[j] = b->qs[j] * d;
    }
}

void um_quantize_q8_1(const float *x, um_block_q8_1 *b, int64_t n) {
    for (int64_t i = 0; i < n / UM_QK8_1; i++, b++, x += UM_QK8_1) {
        float amax = 0;
        for (int j = 0; j < 32; j++) amax = UM_MAX(amax, fabsf(x[j]));
        const float d = amax / 127;
        const float id = d ? 1.0f / d : 0.0f;
        b->d = f2h(d);
        int sum = 0;
        for (int j = 0; j < 32; j++) {
            b->qs[j] = (int8_t)roundf(x[j] * id);
            sum += b->qs[j];
        }
        b->s = f2h(sum * d);                      /* d * sum(q): the block's sum, for minima */
    }
}
static void q8_1_from_float(const float *x, void *dst, int64_t n) { um_quantize_q8_1(x, dst, n); }

static void iq4_nl_to_float(const void *src, float *y, int64_t n) {
    const um_block_iq4_nl *b = src;
    for (int64_t i = 0; i < n / UM_QK4_NL; i++, b++, y += UM_QK4_NL) {
        const float d = h2f(b->d);
        for (int j = 0; j < 16; j++) {
            y[j]      = d * um_iq4nl_values[b->qs[j] & 0xF];
            y[j + 16] = d * um_iq4nl_values[b->qs[j] >> 4];
        }
    }
}

/* ------------------------------------------------------------------ dots, 32-blocks */

static float q4_0_dot(const void *w, const void *a, int64_t n) {
    const um_block_q4_0 *x = w;
    const um_block_q8_0 *y = a;
    float s = 0;
    for (int64_t i = 0; i < n / 32; i++) {
        int isum = 0;
        for (int j = 0; j < 16; j++)
            isum += ((x[i].qs[j] & 0xF) - 8) * y[i].qs[j] + ((x[i].qs[j] >> 4) - 8) * y[i].qs[j + 16];
        s += isum * h2f(x[i].d) * h2f(y[i].d);
    }
    return s;
}

/* Asymmetric formats: sum_j (d q_j + m) a_j = d*da*sum(q_j a_j) + m * (da*sum(a_j)). */
static float q4_1_dot(const void *w, const void *a, int64_t n) {
    const um_block_q4_1 *x = w;
    const um_block_q8_1 *y = a;
    float s = 0;
    for (int64_t i = 0; i < n / 32; i++) {
        int isum = 0;
        for (int j = 0; j < 16; j++)
            isum += (x[i].qs[j] & 0xF) * y[i].qs[j] + (x[i].qs[j] >> 4) * y[i].qs[j + 16];
        s += (h2f(x[i].d) * h2f(y[i].d)) * isum + h2f(x[i].m) * h2f(y[i].s);
    }
    return s;
}

static float q5_0_dot(const void *w, const void *a, int64_t n) {
    const um_block_q5_0 *x = w;
    const um_block_q8_0 *y = a;
    float s = 0;
    for (int64_t i = 0; i < n / 32; i++) {
        const uint32_t qh = load_u32(x[i].qh);
        int isum = 0;
        for (int j = 0; j < 16; j++) {
            int q0 = (x[i].qs[j] & 0xF) | (((qh >> j) & 1) << 4);
            int q1 = (x[i].qs[j] >> 4) | (((qh >> (j + 16)) & 1) << 4);
            isum += (q0 - 16) * y[i].qs[j] + (q1 - 16) * y[i].qs[j + 16];
        }
        s += isum * h2f(x[i].d) * h2f(y[i].d);
    }
    return s;
}

static float q5_1_dot(const void *w, const void *a, int64_t n) {
    const um_block_q5_1 *x = w;
    const um_block_q8_1 *y = a;
    float s = 0;
    for (int64_t i = 0; i < n / 32; i++) {
        const uint32_t qh = load_u32(x[i].qh);
        int isum = 0;
        for (int j = 0; j < 16; j++) {
            int q0 = (x[i].qs[j] & 0xF) | (((qh >> j) & 1) << 4);
            int q1 = (x[i].qs[j] >> 4) | (((qh >> (j + 16)) & 1) << 4);
            isum += q0 * y[i].qs[j] + q1 * y[i].qs[j + 16];
        }
        s += (h2f(x[i].d) * h2f(y[i].d)) * isum + h2f(x[i].m) * h2f(y[i].s);
    }
    return s;
}

static float q8_0_dot(const void *w, const void *a, int64_t n) {
    const um_block_q8_0 *x = w, *y = a;
    float s = 0;
    for (int64_t i = 0; i < n / 32; i++) {
        int isum = 0;
        for (int j = 0; j < 32; j++) isum += x[i].qs[j] * y[i].qs[j];
        s += isum * (h2f(x[i].d) * h2f(y[i].d));
    }
    return s;
}

static float iq4_nl_dot(const void *w, const void *a, int64_t n) {
    const um_block_iq4_nl *x = w;
    const um_block_q8_0 *y = a;
    float s = 0;
    for (int64_t i = 0; i < n / 32; i++) {
        int isum = 0;
        for (int j = 0; j < 16; j++)
            isum += um_iq4nl_values[x[i].qs[j] & 0xF] * y[i].qs[j] +
                    um_iq4nl_values[x[i].qs[j] >> 4] * y[i].qs[j + 16];
        s += (h2f(x[i].d) * h2f(y[i].d)) * isum;
    }
    return s;
}

/* ================================================================== K-quant unpacking
 * Each unpacker turns one 256-element super-block into integer levels in element order
 * plus its integer sub-block scales; the dequantizer and the dot are then one loop each.
 */

/* Q2_K: levels 0..3; sub-block of 16: scale = low nibble, min = high nibble of scales[]. */
static void q2_K_levels(const um_block_q2_K *b, int8_t q[UM_QK_K]) {
    for (int e = 0; e < UM_QK_K; e++) {
        int half = e / 128, r = e % 128;
        q[e] = (int8_t)((b->qs[32 * half + r % 32] >> (2 * (r / 32))) & 3);
    }
}

/* Q3_K: levels -4..3 (two low bits in qs, the third in hmask, set bit = no offset). */
static void q3_K_levels(const um_block_q3_K *b, int8_t q[UM_QK_K]) {
    for (int e = 0; e < UM_QK_K; e++) {
        int half = e / 128, r = e % 128, g = r / 32, l = r % 32;
        int low = (b->qs[32 * half + l] >> (2 * g)) & 3;
        int high = (b->hmask[l] >> (4 * half + g)) & 1;
        q[e] = (int8_t)(low - (high ? 0 : 4));
    }
}

/* Q4_K / Q5_K: 64-element chunks; byte l of a chunk holds element l (low) and l+32 (high). */
static void q4_K_levels(const uint8_t *qs, const uint8_t *qh, int8_t q[UM_QK_K]) {
    for (int e = 0; e < UM_QK_K; e++) {
        int chunk = e / 64, r = e % 64;
        int v = (qs[32 * chunk + r % 32] >> (r < 32 ? 0 : 4)) & 0xF;
        if (qh) v |= ((qh[r % 32] >> (e / 32)) & 1) << 4;
        q[e] = (int8_t)v;
    }
}

/* Q6_K: 128-element halves; four low nibbles in ql, two high bits in qh; levels -32..31. */
static void q6_K_levels(const um_block_q6_K *b, int8_t q[UM_QK_K]) {
    for (int e = 0; e < UM_QK_K; e++) {
        int half = e / 128, r = e % 128, g = r / 32, l = r % 32;
        int low = (b->ql[64 * half + 32 * (g & 1) + l] >> (4 * (g >> 1))) & 0xF;
        int high = (b->qh[32 * half + l] >> (2 * g)) & 3;
        q[e] = (int8_t)((low | (high << 4)) - 32);
    }
}

/* IQ4_XS: codebook values; sub-block of 32 as in IQ4_NL. */
static void iq4_xs_levels(const um_block_iq4_xs *b, int8_t q[UM_QK_K]) {
    for (int ib = 0; ib < 8; ib++)
        for (int j = 0; j < 16; j++) {
            q[32 * ib + j]      = um_iq4nl_values[b->qs[16 * ib + j] & 0xF];
            q[32 * ib + j + 16] = um_iq4nl_values[b->qs[16 * ib + j] >> 4];
        }
}

/* ------------------------------------------------------------------ K dequantizers */

static void q2_K_to_float(const void *src, float *y, int64_t n) {
    const um_block_q2_K *b = src;
    int8_t q[UM_QK_K];
    for (int64_t i = 0; i < n / UM_QK_K; i++, b++, y += UM_QK_K) {
        const float d = h2f(b->d), dmin = h2f(b->dmin);
        q2_K_levels(b, q);
        for (int s = 0; s < 16; s++) {
            const float dl = d * (b->scales[s] & 0xF), ml = dmin * (b->scales[s] >> 4);
            for (int l = 0; l < 16; l++) y[16 * s + l] = dl * q[16 * s + l] - ml;
        }
    }
}

static void q3_K_to_float(const void *src, float *y, int64_t n) {
    const um_block_q3_K *b = src;
    int8_t q[UM_QK_K];
    for (int64_t i = 0; i < n / UM_QK_K; i++, b++, y += UM_QK_K) {
        const float d = h2f(b->d);
        q3_K_levels(b, q);
        for (int s = 0; s < 16; s++) {
            const float dl = d * um_q3_K_scale(s, b->scales);
            for (int l = 0; l < 16; l++) y[16 * s + l] = dl * q[16 * s + l];
        }
    }
}

static void q4_K_to_float(const void *src, float *y, int64_t n) {
    const um_block_q4_K *b = src;
    int8_t q[UM_QK_K];
    for (int64_t i = 0; i < n / UM_QK_K; i++, b++, y += UM_QK_K) {
        const float d = h2f(b->d), dmin = h2f(b->dmin);
        q4_K_levels(b->qs, NULL, q);
        for (int s = 0; s < 8; s++) {
            uint8_t sc, m;
            um_k4_scale_min(s, b->scales, &sc, &m);
            const float dl = d * sc, ml = dmin * m;
            for (int l = 0; l < 32; l++) y[32 * s + l] = dl * q[32 * s + l] - ml;
        }
    }
}

static void q5_K_to_float(const void *src, float *y, int64_t n) {
    const um_block_q5_K *b = src;
    int8_t q[UM_QK_K];
    for (int64_t i = 0; i < n / UM_QK_K; i++, b++, y += UM_QK_K) {
        const float d = h2f(b->d), dmin = h2f(b->dmin);
        q4_K_levels(b->qs, b->qh, q);
        for (int s = 0; s < 8; s++) {
            uint8_t sc, m;
            um_k4_scale_min(s, b->scales, &sc, &m);
            const float dl = d * sc, ml = dmin * m;
            for (int l = 0; l < 32; l++) y[32 * s + l] = dl * q[32 * s + l] - ml;
        }
    }
}

static void q6_K_to_float(const void *src, float *y, int64_t n) {
    const um_block_q6_K *b = src;
    int8_t q[UM_QK_K];
    for (int64_t i = 0; i < n / UM_QK_K; i++, b++, y += UM_QK_K) {
        const float d = h2f(b->d);
        q6_K_levels(b, q);
        for (int s = 0; s < 16; s++) {
            const float dl = d * b->scales[s];
            for (int l = 0; l < 16; l++) y[16 * s + l] = dl * q[16 * s + l];
        }
    }
}

static void iq4_xs_to_float(const void *src, float *y, int64_t n) {
    const um_block_iq4_xs *b = src;
    int8_t q[UM_QK_K];
    for (int64_t i = 0; i < n / UM_QK_K; i++, b++, y += UM_QK_K) {
        const float d = h2f(b->d);
        iq4_xs_levels(b, q);
        for (int s = 0; s < 8; s++) {
            const float dl = d * um_iq4_xs_scale(s, b);
            for (int l = 0; l < 32; l++) y[32 * s + l] = dl * q[32 * s + l];
        }
    }
}

static void q8_K_to_float(const void *src, float *y, int64_t n) {
    const um_block_q8_K *b = src;
    for (int64_t i = 0; i < n / UM_QK_K; i++, b++, y += UM_QK_K)
        for (int j = 0; j < UM_QK_K; j++) y[j] = b->d * b->qs[j];
}

/* ------------------------------------------------------------------ K dots (vs Q8_K) */

/* Sum of level*activation over sub-block s of size len. */
static inline int isum_sub(const int8_t *q, const int8_t *a, int s, int len) {
    int t = 0;
    for (int l = 0; l < len; l++) t += q[len * s + l] * a[len * s + l];
    return t;
}

static float q2_K_dot(const void *w, const void *act, int64_t n) {
    const um_block_q2_K *x = w;
    const um_block_q8_K *y = act;
    int8_t q[UM_QK_K];
    float s = 0;
    for (int64_t i = 0; i < n / UM_QK_K; i++) {
        q2_K_levels(&x[i], q);
        int isum = 0, summ = 0;
        for (int j = 0; j < 16; j++) {
            isum += (x[i].scales[j] & 0xF) * isum_sub(q, y[i].qs, j, 16);
            summ += (x[i].scales[j] >> 4) * y[i].bsums[j];
        }
        s += y[i].d * h2f(x[i].d) * isum - y[i].d * h2f(x[i].dmin) * summ;
    }
    return s;
}

static float q3_K_dot(const void *w, const void *act, int64_t n) {
    const um_block_q3_K *x = w;
    const um_block_q8_K *y = act;
    int8_t q[UM_QK_K];
    float s = 0;
    for (int64_t i = 0; i < n / UM_QK_K; i++) {
        q3_K_levels(&x[i], q);
        int isum = 0;
        for (int j = 0; j < 16; j++) isum += um_q3_K_scale(j, x[i].scales) * isum_sub(q, y[i].qs, j, 16);
        s += h2f(x[i].d) * y[i].d * isum;
    }
    return s;
}

/* Q4_K and Q5_K: sum = d*da*sum_s sc_s*isum_s - dmin*da*sum_s m_s*(bsums of s). */
static float k4_dot(const uint8_t *scales, um_half d, um_half dmin, const int8_t *q, const um_block_q8_K *y) {
    int isum = 0, summ = 0;
    for (int s = 0; s < 8; s++) {
        uint8_t sc, m;
        um_k4_scale_min(s, scales, &sc, &m);
        isum += sc * isum_sub(q, y->qs, s, 32);
        summ += m * (y->bsums[2 * s] + y->bsums[2 * s + 1]);
    }
    return y->d * h2f(d) * isum - y->d * h2f(dmin) * summ;
}

static float q4_K_dot(const void *w, const void *act, int64_t n) {
    const um_block_q4_K *x = w;
    const um_block_q8_K *y = act;
    int8_t q[UM_QK_K];
    float s = 0;
    for (int64_t i = 0; i < n / UM_QK_K; i++) {
        q4_K_levels(x[i].qs, NULL, q);
        s += k4_dot(x[i].scales, x[i].d, x[i].dmin, q, &y[i]);
    }
    return s;
}

static float q5_K_dot(const void *w, const void *act, int64_t n) {
    const um_block_q5_K *x = w;
    const um_block_q8_K *y = act;
    int8_t q[UM_QK_K];
    float s = 0;
    for (int64_t i = 0; i < n / UM_QK_K; i++) {
        q4_K_levels(x[i].qs, x[i].qh, q);
        s += k4_dot(x[i].scales, x[i].d, x[i].dmin, q, &y[i]);
    }
    return s;
}

static float q6_K_dot(const void *w, const void *act, int64_t n) {
    const um_block_q6_K *x = w;
    const um_block_q8_K *y = act;
    int8_t q[UM_QK_K];
    float s = 0;
    for (int64_t i = 0; i < n / UM_QK_K; i++) {
        q6_K_levels(&x[i], q);
        int isum = 0;
        for (int j = 0; j < 16; j++) isum += x[i].scales[j] * isum_sub(q, y[i].qs, j, 16);
        s += h2f(x[i].d) * y[i].d * isum;
    }
    return s;
}

static float iq4_xs_dot(const void *w, const void *act, int64_t n) {
    const um_block_iq4_xs *x = w;
    const um_block_q8_K *y = act;
    int8_t q[UM_QK_K];
    float s = 0;
    for (int64_t i = 0; i < n / UM_QK_K; i++) {
        iq4_xs_levels(&x[i], q);
        int isum = 0;
        for (int j = 0; j < 8; j++) isum += um_iq4_xs_scale(j, &x[i]) * isum_sub(q, y[i].qs, j, 32);
        s += h2f(x[i].d) * y[i].d * isum;
    }
    return s;
}

/* ================================================================== traits table */

#define ROW(T, nm, blk, sz, to, from, dot, vdt, quant, act)                                    \
    [T] = { T, nm, blk, sz, to, from, dot, vdt, quant, act }

static const um_type_traits traits[UM_TYPE_COUNT] = {
    ROW(UM_TYPE_F32,    "f32",    1, 4,         f32_to_float,    f32_from_float,    f32_dot,    UM_TYPE_F32,  false, false),
    ROW(UM_TYPE_F16,    "f16",    1, 2,         f16_to_float,    f16_from_float,    f16_dot,    UM_TYPE_F16,  false, false),
    ROW(UM_TYPE_BF16,   "bf16",   1, 2,         bf16_to_float,   bf16_from_float,   bf16_dot,   UM_TYPE_BF16, false, false),
    ROW(UM_TYPE_Q4_0,   "q4_0",   UM_QK4_0, sizeof(um_block_q4_0),  q4_0_to_float,   q4_0_from_float,   q4_0_dot,   UM_TYPE_Q8_0, true,  false),
    ROW(UM_TYPE_Q4_1,   "q4_1",   UM_QK4_1, sizeof(um_block_q4_1),  q4_1_to_float,   q4_1_from_float,   q4_1_dot,   UM_TYPE_Q8_1, true,  false),
    ROW(UM_TYPE_Q5_0,   "q5_0",   UM_QK5_0, sizeof(um_block_q5_0),  q5_0_to_float,   q5_0_from_float,   q5_0_dot,   UM_TYPE_Q8_0, true,  false),
    ROW(UM_TYPE_Q5_1,   "q5_1",   UM_QK5_1, sizeof(um_block_q5_1),  q5_1_to_float,   q5_1_from_float,   q5_1_dot,   UM_TYPE_Q8_1, true,  false),
    ROW(UM_TYPE_Q8_0,   "q8_0",   UM_QK8_0, sizeof(um_block_q8_0),  q8_0_to_float,   q8_0_from_float,   q8_0_dot,   UM_TYPE_Q8_0, true,  false),
    ROW(UM_TYPE_Q8_1,   "q8_1",   UM_QK8_1, sizeof(um_block_q8_1),  q8_1_to_float,   q8_1_from_float,   NULL,       UM_TYPE_Q8_1, true,  true),
    ROW(UM_TYPE_Q2_K,   "q2_K",   UM_QK_K, sizeof(um_block_q2_K),   q2_K_to_float,   quant_q2_K_from_float,   q2_K_dot,   UM_TYPE_Q8_K, true,  false),
    ROW(UM_TYPE_Q3_K,   "q3_K",   UM_QK_K, sizeof(um_block_q3_K),   q3_K_to_float,   quant_q3_K_from_float,   q3_K_dot,   UM_TYPE_Q8_K, true,  false),
    ROW(UM_TYPE_Q4_K,   "q4_K",   UM_QK_K, sizeof(um_block_q4_K),   q4_K_to_float,   quant_q4_K_from_float,   q4_K_dot,   UM_TYPE_Q8_K, true,  false),
    ROW(UM_TYPE_Q5_K,   "q5_K",   UM_QK_K, sizeof(um_block_q5_K),   q5_K_to_float,   quant_q5_K_from_float,   q5_K_dot,   UM_TYPE_Q8_K, true,  false),
    ROW(UM_TYPE_Q6_K,   "q6_K",   UM_QK_K, sizeof(um_block_q6_K),   q6_K_to_float,   quant_q6_K_from_float,   q6_K_dot,   UM_TYPE_Q8_K, true,  false),
    ROW(UM_TYPE_Q8_K,   "q8_K",   UM_QK_K, sizeof(um_block_q8_K),   q8_K_to_float,   quant_q8_K_from_float,   NULL,       UM_TYPE_Q8_K, true,  true),
    ROW(UM_TYPE_IQ4_NL, "iq4_nl", UM_QK4_NL, sizeof(um_block_iq4_nl), iq4_nl_to_float, quant_iq4_nl_from_float, iq4_nl_dot, UM_TYPE_Q8_0, true,  false),
    ROW(UM_TYPE_IQ4_XS, "iq4_xs", UM_QK_K, sizeof(um_block_iq4_xs),   iq4_xs_to_float, quant_iq4_xs_from_float, iq4_xs_dot, UM_TYPE_Q8_K, true,  false),
    ROW(UM_TYPE_IQ2_XXS, "iq2_xxs", UM_QK_K, sizeof(um_block_iq2_xxs), quant_iq2_xxs_to_float, quant_iq2_xxs_from_float, quant_iq2_xxs_dot, UM_TYPE_Q8_K, true, false),
    ROW(UM_TYPE_IQ2_XS, "iq2_xs", UM_QK_K, sizeof(um_block_iq2_xs), quant_iq2_xs_to_float, quant_iq2_xs_from_float, quant_iq2_xs_dot, UM_TYPE_Q8_K, true, false),
    ROW(UM_TYPE_IQ2_S, "iq2_s", UM_QK_K, sizeof(um_block_iq2_s), quant_iq2_s_to_float, quant_iq2_s_from_float, quant_iq2_s_dot, UM_TYPE_Q8_K, true, false),
    ROW(UM_TYPE_IQ3_XXS, "iq3_xxs", UM_QK_K, sizeof(um_block_iq3_xxs), quant_iq3_xxs_to_float, quant_iq3_xxs_from_float, quant_iq3_xxs_dot, UM_TYPE_Q8_K, true, false),
    ROW(UM_TYPE_IQ3_S, "iq3_s", UM_QK_K, sizeof(um_block_iq3_s), quant_iq3_s_to_float, quant_iq3_s_from_float, quant_iq3_s_dot, UM_TYPE_Q8_K, true, false),
    ROW(UM_TYPE_IQ1_S, "iq1_s", UM_QK_K, sizeof(um_block_iq1_s), quant_iq1_s_to_float, quant_iq1_s_from_float, quant_iq1_s_dot, UM_TYPE_Q8_K, true, false),
    ROW(UM_TYPE_IQ1_M, "iq1_m", UM_QK_K, sizeof(um_block_iq1_m), quant_iq1_m_to_float, quant_iq1_m_from_float, quant_iq1_m_dot, UM_TYPE_Q8_K, true, false),
    ROW(UM_TYPE_TQ1_0, "tq1_0", UM_QK_K, sizeof(um_block_tq1_0), quant_tq1_0_to_float, quant_tq1_0_from_float, quant_tq1_0_dot, UM_TYPE_Q8_K, true, false),
    ROW(UM_TYPE_TQ2_0, "tq2_0", UM_QK_K, sizeof(um_block_tq2_0), quant_tq2_0_to_float, quant_tq2_0_from_float, quant_tq2_0_dot, UM_TYPE_Q8_K, true, false),
};

const um_type_traits *um_traits(uint32_t t) {
    if (t >= UM_TYPE_COUNT || !traits[t].name) return NULL;
    return &traits[t];
}

uint64_t um_row_size(uint32_t t, int64_t n) {
    uint32_t blck = um_type_blck(t);
    if (!blck || n < 0 || n % blck) return 0;
    return (uint64_t)(n / blck) * um_type_bytes(t);
}
