/*
 * quant: the traits table of every type unmask computes with, and the scalar reference of
 * each: dequantizer, round-to-nearest quantizer and dot product against the activation
 * format the type pairs with.
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

/* Bit-exactness needs every a*b+c rounded twice, as llama.cpp's build does: no FMA
 * contraction, whatever -std or -march this file is built with. */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

const int8_t um_iq4nl_values[16] = {
    -127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113,
};

/* Scales smaller than this count as an all-zero group (llama.cpp's GROUP_MAX_EPS). */
#define GROUP_EPS 1e-15f

/* fp16 -> fp32 as ggml does it: also quiets signalling NaNs (sets the top mantissa bit),
 * which util's um_fp16_to_fp32 keeps as they are. */
static inline float h2f(um_half h) {
    float f = um_fp16_to_fp32(h);
    if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff)) {
        uint32_t u;
        memcpy(&u, &f, 4);
        u |= 0x00400000u;
        memcpy(&f, &u, 4);
    }
    return f;
}
static inline um_half f2h(float f) { return um_fp32_to_fp16(f); }

/* Round half to even for |v| < 2^22: adding 1.5*2^23 leaves the integer in the low
 * mantissa bits. Same trick (and so the same result on odd inputs) as llama.cpp. */
static inline int nearest_int(float v) {
    float t = v + 12582912.f;
    int32_t i;
    memcpy(&i, &t, 4);
    return (i & 0x007fffff) - 0x00400000;
}

static inline int clampi(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }

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

/* ================================================================== K-quant quantizers
 * The searches below follow llama.cpp's reference quantizers step by step (same candidate
 * scales, same error measures, same float operation order) so the bytes match.
 */

/* Symmetric levels -nmax..nmax-1 for n values, least squares weighted by x^2 (llama.cpp's
 * make_qx_quants with rmse_type 1 and no importance weights). Returns the scale; L gets
 * level + nmax. */
static float sym_levels_weighted(int n, int nmax, const float *x, int8_t *L) {
    float max = 0, amax = 0;
    for (int i = 0; i < n; i++)
        if (fabsf(x[i]) > amax) { amax = fabsf(x[i]); max = x[i]; }
    if (amax < GROUP_EPS) {
        memset(L, 0, (size_t)n);
        return 0.f;
    }
    float iscale = -nmax / max;
    float sumlx = 0, suml2 = 0;
    for (int i = 0; i < n; i++) {
        int l = clampi(nearest_int(iscale * x[i]), -nmax, nmax - 1);
        L[i] = (int8_t)(l + nmax);
        float w = x[i] * x[i];
        sumlx += w * x[i] * l;
        suml2 += w * l * l;
    }
    float scale = suml2 ? sumlx / suml2 : 0.0f;
    float best = scale * sumlx;
    /* try 18 nearby inverse scales; keep the one with the smallest weighted error */
    for (int is = -9; is <= 9; is++) {
        if (is == 0) continue;
        iscale = -(nmax + 0.1f * is) / max;
        sumlx = suml2 = 0;
        for (int i = 0; i < n; i++) {
            int l = clampi(nearest_int(iscale * x[i]), -nmax, nmax - 1);
            float w = x[i] * x[i];
            sumlx += w * x[i] * l;
            suml2 += w * l * l;
        }
        if (suml2 > 0 && sumlx * sumlx > best * suml2) {
            for (int i = 0; i < n; i++)
                L[i] = (int8_t)(nmax + clampi(nearest_int(iscale * x[i]), -nmax, nmax - 1));
            scale = sumlx / suml2;
            best = scale * sumlx;
        }
    }
    return scale;
}

/* Q3_K's sub-block search (llama.cpp's make_q3_quants with rmse): start from the max-based
 * levels, then move single levels while that lowers the x^2-weighted error, up to 5 passes. */
static float q3_levels(int n, int nmax, const float *x, int8_t *L) {
    float max = 0, amax = 0;
    for (int i = 0; i < n; i++)
        if (fabsf(x[i]) > amax) { amax = fabsf(x[i]); max = x[i]; }
    if (amax < GROUP_EPS) {
        memset(L, 0, (size_t)n);
        return 0.f;
    }
    float iscale = -nmax / max;
    float sumlx = 0, suml2 = 0;
    for (int i = 0; i < n; i++) {
        int l = clampi(nearest_int(iscale * x[i]), -nmax, nmax - 1);
        L[i] = (int8_t)l;
        float w = x[i] * x[i];
        sumlx += w * x[i] * l;
        suml2 += w * l * l;
    }
    for (int pass = 0; pass < 5; pass++) {
        int changed = 0;
        for (int i = 0; i < n; i++) {
            float w = x[i] * x[i];
            float slx = sumlx - w * x[i] * L[i];
            if (slx <= 0) continue;
            float sl2 = suml2 - w * L[i] * L[i];
            int nl = clampi(nearest_int(x[i] * sl2 / slx), -nmax, nmax - 1);
            if (nl == L[i]) continue;
            slx += w * x[i] * nl;
            sl2 += w * nl * nl;
            if (sl2 > 0 && slx * slx * suml2 > sumlx * sumlx * sl2) {
                L[i] = (int8_t)nl;
                sumlx = slx;
                suml2 = sl2;
                changed++;
            }
        }
        if (!changed) break;
    }
    for (int i = 0; i < n; i++) L[i] = (int8_t)(L[i] + nmax);
    return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
}

/* Asymmetric levels 0..nmax with scale and min (llama.cpp's make_qkx2_quants): start from
 * the min/max fit, then try nstep+1 stretched scales, each refit by weighted least squares,
 * keeping the fit with the smallest weighted error (absolute if use_mad, else squared).
 * Returns the scale; *neg_min gets -min (>= 0). */
static float asym_levels(int n, int nmax, const float *x, const float *w, uint8_t *L,
                         float *neg_min, float rmin, float rdelta, int nstep, bool use_mad) {
    uint8_t Laux[32];
    float min = x[0], max = x[0];
    float sum_w = w[0], sum_x = sum_w * x[0];
    for (int i = 1; i < n; i++) {
        if (x[i] < min) min = x[i];
        if (x[i] > max) max = x[i];
        sum_w += w[i];
        sum_x += w[i] * x[i];
    }
    if (min > 0) min = 0;
    if (max == min) {
        memset(L, 0, (size_t)n);
        *neg_min = -min;
        return 0.f;
    }
    float iscale = nmax / (max - min);
    float scale = 1 / iscale;
    float best_error = 0;
    for (int i = 0; i < n; i++) {
        L[i] = (uint8_t)clampi(nearest_int(iscale * (x[i] - min)), 0, nmax);
        float diff = scale * L[i] + min - x[i];
        diff = use_mad ? fabsf(diff) : diff * diff;
        best_error += w[i] * diff;
    }
    for (int is = 0; is <= nstep; is++) {
        iscale = (rmin + rdelta * is + nmax) / (max - min);
        float sum_l = 0, sum_l2 = 0, sum_xl = 0;
        for (int i = 0; i < n; i++) {
            int l = clampi(nearest_int(iscale * (x[i] - min)), 0, nmax);
            Laux[i] = (uint8_t)l;
            sum_l += w[i] * l;
            sum_l2 += w[i] * l * l;
            sum_xl += w[i] * l * x[i];
        }
        float D = sum_w * sum_l2 - sum_l * sum_l;
        if (D <= 0) continue;
        float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
        float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
        if (this_min > 0) {
            this_min = 0;
            this_scale = sum_xl / sum_l2;
        }
        float err = 0;
        for (int i = 0; i < n; i++) {
            float diff = this_scale * Laux[i] + this_min - x[i];
            diff = use_mad ? fabsf(diff) : diff * diff;
            err += w[i] * diff;
        }
        if (err < best_error) {
            memcpy(L, Laux, (size_t)n);
            best_error = err;
            scale = this_scale;
            min = this_min;
        }
    }
    *neg_min = -min;
    return scale;
}

static void q2_K_from_float(const float *x, void *dst, int64_t n) {
    um_block_q2_K *b = dst;
    uint8_t L[UM_QK_K];
    float w[16], mins[16], scales[16];
    for (int64_t i = 0; i < n / UM_QK_K; i++, b++, x += UM_QK_K) {
        float max_scale = 0, max_min = 0;
        for (int j = 0; j < 16; j++) {
            for (int l = 0; l < 16; l++) w[l] = fabsf(x[16 * j + l]);
            scales[j] = asym_levels(16, 3, x + 16 * j, w, L + 16 * j, &mins[j], -0.5f, 0.1f, 15, true);
            if (scales[j] > max_scale) max_scale = scales[j];
            if (mins[j] > max_min) max_min = mins[j];
        }
        /* 4-bit sub-block scales and mins against fp16 super-block factors */
        if (max_scale > 0) {
            float iscale = 15.f / max_scale;
            for (int j = 0; j < 16; j++) b->scales[j] = (uint8_t)nearest_int(iscale * scales[j]);
            b->d = f2h(max_scale / 15.f);
        } else {
            memset(b->scales, 0, 16);
            b->d = f2h(0.f);
        }
        if (max_min > 0) {
            float iscale = 15.f / max_min;
            for (int j = 0; j < 16; j++) b->scales[j] |= (uint8_t)(nearest_int(iscale * mins[j]) << 4);
            b->dmin = f2h(max_min / 15.f);
        } else {
            b->dmin = f2h(0.f);
        }
        /* re-pick levels against the scales actually stored */
        for (int j = 0; j < 16; j++) {
            const float d = h2f(b->d) * (b->scales[j] & 0xF);
            if (!d) continue;
            const float dm = h2f(b->dmin) * (b->scales[j] >> 4);
            for (int l = 0; l < 16; l++)
                L[16 * j + l] = (uint8_t)clampi(nearest_int((x[16 * j + l] + dm) / d), 0, 3);
        }
        for (int half = 0; half < 2; half++)
            for (int l = 0; l < 32; l++) {
                const uint8_t *s = L + 128 * half + l;
                b->qs[32 * half + l] = (uint8_t)(s[0] | (s[32] << 2) | (s[64] << 4) | (s[96] << 6));
            }
    }
}

static void q3_K_from_float(const float *x, void *dst, int64_t n) {
    um_block_q3_K *b = dst;
    int8_t L[UM_QK_K];
    float scales[16];
    for (int64_t i = 0; i < n / UM_QK_K; i++, b++, x += UM_QK_K) {
        float max_scale = 0, amax = 0;
        for (int j = 0; j < 16; j++) {
            scales[j] = q3_levels(16, 4, x + 16 * j, L + 16 * j);
            if (fabsf(scales[j]) > amax) { amax = fabsf(scales[j]); max_scale = scales[j]; }
        }
        /* 6-bit signed sub-block scales: low nibbles in bytes 0..7, two high bits in 8..11 */
        memset(b->scales, 0, 12);
        if (max_scale) {
            float iscale = -32.f / max_scale;
            for (int j = 0; j < 16; j++) {
                int l = (int8_t)nearest_int(iscale * scales[j]);
                l = clampi(l, -32, 31) + 32;
                if (j < 8) b->scales[j] = (uint8_t)(l & 0xF);
                else       b->scales[j - 8] |= (uint8_t)((l & 0xF) << 4);
                b->scales[j % 4 + 8] |= (uint8_t)((l >> 4) << (2 * (j / 4)));
            }
            b->d = f2h(1 / iscale);
        } else {
            b->d = f2h(0.f);
        }
        for (int j = 0; j < 16; j++) {
            const float d = h2f(b->d) * um_q3_K_scale(j, b->scales);
            if (!d) continue;
            for (int l = 0; l < 16; l++)
                L[16 * j + l] = (int8_t)(clampi(nearest_int(x[16 * j + l] / d), -4, 3) + 4);
        }
        /* third bit of element e goes to hmask[e % 32], bit e / 32 */
        memset(b->hmask, 0, 32);
        for (int e = 0; e < UM_QK_K; e++)
            if (L[e] > 3) {
                b->hmask[e % 32] |= (uint8_t)(1 << (e / 32));
                L[e] -= 4;
            }
        for (int half = 0; half < 2; half++)
            for (int l = 0; l < 32; l++) {
                const int8_t *s = L + 128 * half + l;
                b->qs[32 * half + l] = (uint8_t)(s[0] | (s[32] << 2) | (s[64] << 4) | (s[96] << 6));
            }
    }
}

/* Store 8 six-bit scales and mins in the 12-byte K4 layout (inverse of um_k4_scale_min). */
static void k4_pack_scales(uint8_t out[12], const uint8_t ls[8], const uint8_t lm[8]) {
    for (int j = 0; j < 8; j++) {
        if (j < 4) {
            out[j] = ls[j];
            out[j + 4] = lm[j];
        } else {
            out[j + 4] = (uint8_t)((ls[j] & 0xF) | ((lm[j] & 0xF) << 4));
            out[j - 4] |= (uint8_t)((ls[j] >> 4) << 6);
            out[j] |= (uint8_t)((lm[j] >> 4) << 6);
        }
    }
}

/* Shared body of Q4_K and Q5_K: 8 sub-blocks of 32 with 6-bit scales and mins.
 * Fills L (levels 0..nmax) and the block's d, dmin and scales. */
static void k4_quantize_block(const float *x, int nmax, float rmin, float rdelta, int nstep,
                              uint8_t L[UM_QK_K], um_half *d_out, um_half *dmin_out, uint8_t sc_out[12]) {
    float w[32], mins[8], scales[8];
    float max_scale = 0, max_min = 0;
    for (int j = 0; j < 8; j++) {
        const float *xs = x + 32 * j;
        float sum_x2 = 0;
        for (int l = 0; l < 32; l++) sum_x2 += xs[l] * xs[l];
        const float av_x = sqrtf(sum_x2 / 32);
        for (int l = 0; l < 32; l++) w[l] = av_x + fabsf(xs[l]);
        scales[j] = asym_levels(32, nmax, xs, w, L + 32 * j, &mins[j], rmin, rdelta, nstep, false);
        if (scales[j] > max_scale) max_scale = scales[j];
        if (mins[j] > max_min) max_min = mins[j];
    }
    const float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
    const float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
    uint8_t ls[8], lm[8];
    for (int j = 0; j < 8; j++) {
        ls[j] = (uint8_t)nearest_int(inv_scale * scales[j]);
        lm[j] = (uint8_t)nearest_int(inv_min * mins[j]);
        ls[j] = UM_MIN(63, ls[j]);
        lm[j] = UM_MIN(63, lm[j]);
    }
    memset(sc_out, 0, 12);
    k4_pack_scales(sc_out, ls, lm);
    *d_out = f2h(max_scale / 63.f);
    *dmin_out = f2h(max_min / 63.f);
    for (int j = 0; j < 8; j++) {
        uint8_t sc, m;
        um_k4_scale_min(j, sc_out, &sc, &m);
        const float d = h2f(*d_out) * sc;
        if (!d) continue;
        const float dm = h2f(*dmin_out) * m;
        for (int l = 0; l < 32; l++)
            L[32 * j + l] = (uint8_t)clampi(nearest_int((x[32 * j + l] + dm) / d), 0, nmax);
    }
}

static void q4_K_from_float(const float *x, void *dst, int64_t n) {
    um_block_q4_K *b = dst;
    uint8_t L[UM_QK_K];
    for (int64_t i = 0; i < n / UM_QK_K; i++, b++, x += UM_QK_K) {
        k4_quantize_block(x, 15, -1.f, 0.1f, 20, L, &b->d, &b->dmin, b->scales);
        for (int c = 0; c < 4; c++)
            for (int l = 0; l < 32; l++)
                b->qs[32 * c + l] = (uint8_t)(L[64 * c + l] | (L[64 * c + l + 32] << 4));
    }
}

static void q5_K_from_float(const float *x, void *dst, int64_t n) {
    um_block_q5_K *b = dst;
    uint8_t L[UM_QK_K];
    for (int64_t i = 0; i < n / UM_QK_K; i++, b++, x += UM_QK_K) {
        k4_quantize_block(x, 31, -0.5f, 0.1f, 15, L, &b->d, &b->dmin, b->scales);
        memset(b->qh, 0, 32);
        for (int c = 0; c < 4; c++)
            for (int l = 0; l < 32; l++) {
                int lo = L[64 * c + l], hi = L[64 * c + l + 32];
                if (lo > 15) { lo -= 16; b->qh[l] |= (uint8_t)(1 << (2 * c)); }
                if (hi > 15) { hi -= 16; b->qh[l] |= (uint8_t)(2 << (2 * c)); }
                b->qs[32 * c + l] = (uint8_t)(lo | (hi << 4));
            }
    }
}

static void q6_K_from_float(const float *x, void *dst, int64_t n) {
    um_block_q6_K *b = dst;
    int8_t L[UM_QK_K];
    float scales[16];
    for (int64_t i = 0; i < n / UM_QK_K; i++, b++, x += UM_QK_K) {
        float max_scale = 0, max_abs = 0;
        for (int j = 0; j < 16; j++) {
            scales[j] = sym_levels_weighted(16, 32, x + 16 * j, L + 16 * j);
            if (fabsf(scales[j]) > max_abs) { max_abs = fabsf(scales[j]); max_scale = scales[j]; }
        }
        if (max_abs < GROUP_EPS) {
            memset(b, 0, sizeof *b);
            continue;
        }
        /* int8 sub-block scales: the largest maps to -128 */
        const float iscale = -128.f / max_scale;
        b->d = f2h(1 / iscale);
        for (int j = 0; j < 16; j++) b->scales[j] = (int8_t)UM_MIN(127, nearest_int(iscale * scales[j]));
        for (int j = 0; j < 16; j++) {
            const float d = h2f(b->d) * b->scales[j];
            if (!d) continue;
            for (int l = 0; l < 16; l++)
                L[16 * j + l] = (int8_t)(clampi(nearest_int(x[16 * j + l] / d), -32, 31) + 32);
        }
        for (int half = 0; half < 2; half++) {
            uint8_t *ql = b->ql + 64 * half, *qh = b->qh + 32 * half;
            const int8_t *s = L + 128 * half;
            for (int l = 0; l < 32; l++) {
                ql[l]      = (uint8_t)((s[l] & 0xF) | ((s[l + 64] & 0xF) << 4));
                ql[l + 32] = (uint8_t)((s[l + 32] & 0xF) | ((s[l + 96] & 0xF) << 4));
                qh[l] = (uint8_t)((s[l] >> 4) | ((s[l + 32] >> 4) << 2) | ((s[l + 64] >> 4) << 4) | ((s[l + 96] >> 4) << 6));
            }
        }
    }
}

void um_quantize_q8_K(const float *x, um_block_q8_K *b, int64_t n) {
    for (int64_t i = 0; i < n / UM_QK_K; i++, b++, x += UM_QK_K) {
        float max = 0, amax = 0;
        for (int j = 0; j < UM_QK_K; j++)
            if (fabsf(x[j]) > amax) { amax = fabsf(x[j]); max = x[j]; }
        if (!amax) {
            b->d = 0;
            memset(b->qs, 0, sizeof b->qs);
            memset(b->bsums, 0, sizeof b->bsums);   /* llama.cpp leaves them unset */
            continue;
        }
        const float iscale = -127.f / max;
        for (int j = 0; j < UM_QK_K; j++) b->qs[j] = (int8_t)UM_MIN(127, nearest_int(iscale * x[j]));
        for (int j = 0; j < 16; j++) {
            int sum = 0;
            for (int l = 0; l < 16; l++) sum += b->qs[16 * j + l];
            b->bsums[j] = (int16_t)sum;
        }
        b->d = 1 / iscale;
    }
}
static void q8_K_from_float(const float *x, void *dst, int64_t n) { um_quantize_q8_K(x, dst, n); }

/* ================================================================== IQ4 quantizers */

/* Index of the codebook value nearest to v (ties to the lower index's neighbour rule of
 * llama.cpp: strictly closer to the lower one picks it). */
static int iq4_nearest(float v) {
    const int8_t *k = um_iq4nl_values;
    if (v <= k[0]) return 0;
    if (v >= k[15]) return 15;
    int lo = 0, hi = 15;
    while (hi - lo > 1) {
        int mid = (lo + hi) / 2;
        if (v < k[mid]) hi = mid; else lo = mid;
    }
    return v - k[hi - 1] < k[hi] - v ? hi - 1 : hi;
}

/* Best scale of one 32-element sub-block for the codebook, weighted by x^2: start from the
 * max-based scale, refit by least squares, then try 2*ntry+1 other inverse scales (llama.cpp's
 * quantize_row_iq4_nl_impl without importance weights, ntry 7 as llama-quantize uses).
 * L gets the levels of the first fit only, as in llama.cpp. */
static float iq4_sub_scale(const float *x, uint8_t L[32], int ntry) {
    const int8_t *k = um_iq4nl_values;
    float amax = 0, max = 0;
    for (int j = 0; j < 32; j++)
        if (fabsf(x[j]) > amax) { amax = fabsf(x[j]); max = x[j]; }
    if (amax < GROUP_EPS) return 0;
    float d = ntry > 0 ? -max / k[0] : max / k[0];
    float id = 1 / d;
    float sumqx = 0, sumq2 = 0;
    for (int j = 0; j < 32; j++) {
        int l = iq4_nearest(id * x[j]);
        L[j] = (uint8_t)l;
        float q = k[l], w = x[j] * x[j];
        sumqx += w * q * x[j];
        sumq2 += w * q * q;
    }
    d = sumq2 > 0 ? sumqx / sumq2 : 0.f;
    float best = d * sumqx;
    for (int t = -ntry; t <= ntry; t++) {
        id = (t + k[0]) / max;
        sumqx = sumq2 = 0;
        for (int j = 0; j < 32; j++) {
            float q = k[iq4_nearest(id * x[j])], w = x[j] * x[j];
            sumqx += w * q * x[j];
            sumq2 += w * q * q;
        }
        if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
            d = sumqx / sumq2;
            best = d * sumqx;
        }
    }
    return d;
}

static void iq4_pack(const uint8_t *L, uint8_t *qs, int n) {
    for (int i = 0; i < n / 32; i++)
        for (int j = 0; j < 16; j++) qs[16 * i + j] = (uint8_t)(L[32 * i + j] | (L[32 * i + 16 + j] << 4));
}

static void iq4_nl_from_float(const float *x, void *dst, int64_t n) {
    um_block_iq4_nl *b = dst;
    for (int64_t i = 0; i < n / UM_QK4_NL; i++, b++, x += UM_QK4_NL) {
        uint8_t L[32] = {0};
        float d = iq4_sub_scale(x, L, 7);
        b->d = f2h(d);
        float id = d ? 1 / d : 0;
        for (int j = 0; j < 32; j++) L[j] = (uint8_t)iq4_nearest(id * x[j]);
        iq4_pack(L, b->qs, 32);
    }
}

static void iq4_xs_from_float(const float *x, void *dst, int64_t n) {
    um_block_iq4_xs *b = dst;
    uint8_t L[UM_QK_K];
    float scales[8];
    for (int64_t i = 0; i < n / UM_QK_K; i++, b++, x += UM_QK_K) {
        float max_scale = 0, amax_scale = 0;
        for (int ib = 0; ib < 8; ib++) {
            scales[ib] = iq4_sub_scale(x + 32 * ib, L + 32 * ib, 7);
            if (fabsf(scales[ib]) > amax_scale) { amax_scale = fabsf(scales[ib]); max_scale = scales[ib]; }
        }
        /* 6-bit signed sub-block scales against an fp16 block scale; the largest maps to -32 */
        const float d = -max_scale / 32;
        b->d = f2h(d);
        b->scales_h = 0;
        memset(b->scales_l, 0, sizeof b->scales_l);
        const float id = d ? 1 / d : 0.f;
        for (int ib = 0; ib < 8; ib++) {
            int l = clampi(nearest_int(id * scales[ib]), -32, 31);
            const float dl = d * l;
            const float idl = dl ? 1 / dl : 0.f;
            for (int j = 0; j < 32; j++) L[32 * ib + j] = (uint8_t)iq4_nearest(idl * x[32 * ib + j]);
            l += 32;
            b->scales_l[ib / 2] |= (uint8_t)((l & 0xF) << (4 * (ib % 2)));
            b->scales_h |= (uint16_t)((l >> 4) << (2 * ib));
        }
        iq4_pack(L, b->qs, UM_QK_K);
    }
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
    ROW(UM_TYPE_Q2_K,   "q2_K",   UM_QK_K, sizeof(um_block_q2_K),   q2_K_to_float,   q2_K_from_float,   q2_K_dot,   UM_TYPE_Q8_K, true,  false),
    ROW(UM_TYPE_Q3_K,   "q3_K",   UM_QK_K, sizeof(um_block_q3_K),   q3_K_to_float,   q3_K_from_float,   q3_K_dot,   UM_TYPE_Q8_K, true,  false),
    ROW(UM_TYPE_Q4_K,   "q4_K",   UM_QK_K, sizeof(um_block_q4_K),   q4_K_to_float,   q4_K_from_float,   q4_K_dot,   UM_TYPE_Q8_K, true,  false),
    ROW(UM_TYPE_Q5_K,   "q5_K",   UM_QK_K, sizeof(um_block_q5_K),   q5_K_to_float,   q5_K_from_float,   q5_K_dot,   UM_TYPE_Q8_K, true,  false),
    ROW(UM_TYPE_Q6_K,   "q6_K",   UM_QK_K, sizeof(um_block_q6_K),   q6_K_to_float,   q6_K_from_float,   q6_K_dot,   UM_TYPE_Q8_K, true,  false),
    ROW(UM_TYPE_Q8_K,   "q8_K",   UM_QK_K, sizeof(um_block_q8_K),   q8_K_to_float,   q8_K_from_float,   NULL,       UM_TYPE_Q8_K, true,  true),
    ROW(UM_TYPE_IQ4_NL, "iq4_nl", UM_QK4_NL, sizeof(um_block_iq4_nl), iq4_nl_to_float, iq4_nl_from_float, iq4_nl_dot, UM_TYPE_Q8_0, true,  false),
    ROW(UM_TYPE_IQ4_XS, "iq4_xs", UM_QK_K, sizeof(um_block_iq4_xs),   iq4_xs_to_float, iq4_xs_from_float, iq4_xs_dot, UM_TYPE_Q8_K, true,  false),
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
