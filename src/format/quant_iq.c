/*
 * quant_iq: reference dequantizers and dot products of the lattice formats IQ2_XXS, IQ2_XS,
 * IQ2_S, IQ3_XXS, IQ3_S, IQ1_S, IQ1_M and the ternary TQ1_0, TQ2_0 (layouts in quant.h,
 * grids in iq_tables.c). Written from the layouts; the float expressions of the dequantizers
 * follow llama.cpp's dequantize_row_* (ggml/src/ggml-quants.c) so the results are bit-exact,
 * proven by tests/test_quant_iq.c on blocks written by llama-quantize (tests/data/iq/).
 *
 * Every format is read the same way: an unpacker turns one 256-block into signed integer
 * levels in element order (q), a 4-bit raw scale per 16 elements (s; the multiplier is
 * always 2s+1) and the fp16 block scale. Then
 *   IQ2_*:   x = [d * (0.5 + s) * 0.25] * q        q = +-grid level (8, 25, 43)
 *   IQ3_XXS: x = [d * (0.5 + s) * 0.5] * q         q = +-grid level (4..62)
 *   IQ3_S:   x = [d * (1 + 2s)] * q                q = +-grid level (1..15)
 *   IQ1_*:   x = [d * (2s + 1)] * (q / 8)          q = 8 * grid (-1/0/1) +- 1 (the 1/8 shift)
 *   TQ*_0:   x = d * q                             q = -1/0/1
 * A bracket is one rounded float, as in llama.cpp; multiplying it by q instead of by the
 * unsigned level and then the sign gives the same bits (rounding is symmetric in sign), and
 * q / 8 is exact. The dot against Q8_K activations is the plain definition the matmul
 * kernels are tested against: integer sums per 16 elements times 2s+1, then one float
 * scale per block, d * d_act * (1/8, 1/4 or 1).
 *
 * Invariant: n is a whole number of 256-blocks (callers check); any bit pattern is a valid
 * block (every index field fits its grid), so no input can read outside a table.
 */
#include "quant_impl.h"

#include <math.h>

/* Bit-exactness needs each product rounded on its own (see quant_impl.h). */

typedef struct iq_levels {
    int8_t  q[UM_QK_K];          /* signed integer level of each element */
    uint8_t s[UM_QK_K / 16];     /* raw 3- or 4-bit scale of each 16 elements */
    float   d;                   /* the block's fp16 scale, widened */
} iq_levels;

static inline uint16_t le16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static inline uint32_t le32(const uint8_t *p) { return (uint32_t)le16(p) | (uint32_t)le16(p + 2) << 16; }

/* Byte j of a packed grid entry, signed by bit j of a sign byte. */
static inline int8_t signed_level(uint64_t grid, int j, uint8_t signs) {
    int v = (int)((grid >> (8 * j)) & 0xFF);
    return (int8_t)(signs >> j & 1 ? -v : v);
}

/* ================================================================== unpackers */

static void iq2_xxs_levels(const um_block_iq2_xxs *b, iq_levels *L) {
    const uint8_t *qs = (const uint8_t *)b->qs;
    L->d = h2f(b->d);
    for (int ib = 0; ib < 8; ib++) {
        uint32_t idx = le32(qs + 8 * ib), aux = le32(qs + 8 * ib + 4);   /* 4 indices; signs+scale */
        L->s[2 * ib] = L->s[2 * ib + 1] = (uint8_t)(aux >> 28);
        for (int l = 0; l < 4; l++) {
            uint64_t g = um_iq2xxs_grid[idx >> (8 * l) & 0xFF];
            uint8_t signs = um_ksigns_iq2xs[aux >> (7 * l) & 127];
            for (int j = 0; j < 8; j++) L->q[32 * ib + 8 * l + j] = signed_level(g, j, signs);
        }
    }
}

static void iq2_xs_levels(const um_block_iq2_xs *b, iq_levels *L) {
    const uint8_t *qs = (const uint8_t *)b->qs;
    L->d = h2f(b->d);
    for (int ib = 0; ib < 8; ib++) {
        L->s[2 * ib] = b->scales[ib] & 0xF;
        L->s[2 * ib + 1] = b->scales[ib] >> 4;
        for (int l = 0; l < 4; l++) {
            uint16_t v = le16(qs + 2 * (4 * ib + l));          /* 9-bit index, 7 sign bits */
            uint64_t g = um_iq2xs_grid[v & 511];
            uint8_t signs = um_ksigns_iq2xs[v >> 9];
            for (int j = 0; j < 8; j++) L->q[32 * ib + 8 * l + j] = signed_level(g, j, signs);
        }
    }
}

static void iq2_s_levels(const um_block_iq2_s *b, iq_levels *L) {
    const uint8_t *signs = b->qs + UM_QK_K / 8;               /* second half of qs */
    L->d = h2f(b->d);
    for (int ib = 0; ib < 8; ib++) {
        L->s[2 * ib] = b->scales[ib] & 0xF;
        L->s[2 * ib + 1] = b->scales[ib] >> 4;
        for (int l = 0; l < 4; l++) {
            int idx = b->qs[4 * ib + l] | ((b->qh[ib] >> (2 * l) & 3) << 8);
            uint64_t g = um_iq2s_grid[idx];
            for (int j = 0; j < 8; j++) L->q[32 * ib + 8 * l + j] = signed_level(g, j, signs[4 * ib + l]);
        }
    }
}

static void iq3_xxs_levels(const um_block_iq3_xxs *b, iq_levels *L) {
    const uint8_t *qs = b->qs, *ss = b->qs + UM_QK_K / 4;     /* indices, then signs+scales */
    L->d = h2f(b->d);
    for (int ib = 0; ib < 8; ib++) {
        uint32_t aux = le32(ss + 4 * ib);
        L->s[2 * ib] = L->s[2 * ib + 1] = (uint8_t)(aux >> 28);
        for (int l = 0; l < 4; l++) {
            uint64_t g = um_iq3xxs_grid[qs[8 * ib + 2 * l]] | (uint64_t)um_iq3xxs_grid[qs[8 * ib + 2 * l + 1]] << 32;
            uint8_t signs = um_ksigns_iq2xs[aux >> (7 * l) & 127];
            for (int j = 0; j < 8; j++) L->q[32 * ib + 8 * l + j] = signed_level(g, j, signs);
        }
    }
}

static void iq3_s_levels(const um_block_iq3_s *b, iq_levels *L) {
    L->d = h2f(b->d);
    for (int ib = 0; ib < 8; ib++) {
        L->s[2 * ib] = L->s[2 * ib + 1] = (uint8_t)(b->scales[ib / 2] >> (4 * (ib % 2)) & 0xF);
        for (int l = 0; l < 4; l++) {
            int i1 = b->qs[8 * ib + 2 * l] | ((b->qh[ib] >> (2 * l) & 1) << 8);
            int i2 = b->qs[8 * ib + 2 * l + 1] | ((b->qh[ib] >> (2 * l + 1) & 1) << 8);
            uint64_t g = um_iq3s_grid[i1] | (uint64_t)um_iq3s_grid[i2] << 32;
            for (int j = 0; j < 8; j++) L->q[32 * ib + 8 * l + j] = signed_level(g, j, b->signs[4 * ib + l]);
        }
    }
}

/* 8 grid levels (-1/0/1 as int8 bytes) shifted by +-1/8, times 8. */
static void iq1_group(int8_t *q, int idx, bool negative_shift) {
    uint64_t g = um_iq1s_grid[idx];
    for (int j = 0; j < 8; j++) q[j] = (int8_t)(8 * (int8_t)(g >> (8 * j)) + (negative_shift ? -1 : 1));
}

static void iq1_s_levels(const um_block_iq1_s *b, iq_levels *L) {
    L->d = h2f(b->d);
    for (int ib = 0; ib < 8; ib++) {
        uint16_t h = b->qh[ib];              /* 4 x 3 high index bits, 3-bit scale, shift sign */
        L->s[2 * ib] = L->s[2 * ib + 1] = (uint8_t)(h >> 12 & 7);
        for (int l = 0; l < 4; l++)
            iq1_group(L->q + 32 * ib + 8 * l, b->qs[4 * ib + l] | (h >> (3 * l) & 7) << 8, h & 0x8000);
    }
}

static void iq1_m_levels(const um_block_iq1_m *b, iq_levels *L) {
    L->d = h2f(um_iq1_m_d(b));
    for (int ib = 0; ib < 8; ib++) {
        uint16_t sc = le16(b->scales + 2 * (ib / 2));
        L->s[2 * ib] = (uint8_t)(sc >> (6 * (ib % 2)) & 7);
        L->s[2 * ib + 1] = (uint8_t)(sc >> (6 * (ib % 2) + 3) & 7);
        for (int l = 0; l < 4; l++) {
            uint8_t h = b->qh[2 * ib + l / 2] >> (4 * (l % 2));  /* 3 high index bits, shift sign */
            iq1_group(L->q + 32 * ib + 8 * l, b->qs[4 * ib + l] | (h & 7) << 8, h & 8);
        }
    }
}

/* TQ1_0: a byte holds trits t0..t4 as the base-3 fraction 0.t0t1t2t3t4 scaled to 256 (rounded
 * up): multiplying by 3^n shifts trit n to the top, and (byte * 3) >> 8 reads it. */
static inline int8_t trit(uint8_t v, int n) {
    static const uint8_t pow3[5] = { 1, 3, 9, 27, 81 };
    uint8_t q = (uint8_t)(v * pow3[n]);
    return (int8_t)(((uint16_t)q * 3 >> 8) - 1);
}

static void tq1_0_levels(const um_block_tq1_0 *b, iq_levels *L) {
    int8_t *q = L->q;
    L->d = h2f(b->d);
    for (int n = 0; n < 5; n++)                  /* qs[0..32): 160 weights, trit-major */
        for (int m = 0; m < 32; m++) *q++ = trit(b->qs[m], n);
    for (int n = 0; n < 5; n++)                  /* qs[32..48): 80 weights */
        for (int m = 0; m < 16; m++) *q++ = trit(b->qs[32 + m], n);
    for (int n = 0; n < 4; n++)                  /* qh: the last 16, 4 trits per byte */
        for (int m = 0; m < 4; m++) *q++ = trit(b->qh[m], n);
}

static void tq2_0_levels(const um_block_tq2_0 *b, iq_levels *L) {
    L->d = h2f(b->d);
    for (int e = 0; e < UM_QK_K; e++) {
        int half = e / 128, r = e % 128;         /* byte m of a 32-byte half: 4 crumbs, 32 apart */
        L->q[e] = (int8_t)((b->qs[32 * half + r % 32] >> (2 * (r / 32)) & 3) - 1);
    }
}

/* ================================================================== per-format glue */

enum { K_IQ2, K_IQ3_XXS, K_IQ3_S, K_IQ1, K_TQ };

/* Block scale per unit of d in the integer form: d * factor * (2s+1) * q (TQ: d * q). */
static const float factor[] = { [K_IQ2] = 0.125f, [K_IQ3_XXS] = 0.25f, [K_IQ3_S] = 1.f, [K_IQ1] = 0.125f, [K_TQ] = 1.f };

/* The float multiplier of 16 elements, exactly as llama.cpp rounds it. */
static inline float sub_scale(int kind, float d, int s) {
    switch (kind) {
    case K_IQ2:     return d * (0.5f + s) * 0.25f;
    case K_IQ3_XXS: return d * (0.5f + s) * 0.5f;
    case K_IQ3_S:   return d * (1 + 2 * s);
    case K_IQ1:     return d * (2 * s + 1);
    default:        return d;
    }
}

static void levels_to_float(int kind, const iq_levels *L, float *y) {
    for (int g = 0; g < 16; g++) {
        const float dl = sub_scale(kind, L->d, L->s[g]);
        const int8_t *q = L->q + 16 * g;
        if (kind == K_IQ1)
            for (int j = 0; j < 16; j++) y[16 * g + j] = dl * (q[j] * 0.125f);
        else
            for (int j = 0; j < 16; j++) y[16 * g + j] = dl * q[j];
    }
}

static float levels_dot(int kind, const iq_levels *L, const um_block_q8_K *a) {
    int isum = 0;
    for (int g = 0; g < 16; g++) {
        int t = 0;
        for (int j = 0; j < 16; j++) t += L->q[16 * g + j] * a->qs[16 * g + j];
        isum += (kind == K_TQ ? 1 : 2 * L->s[g] + 1) * t;
    }
    return L->d * a->d * factor[kind] * (float)isum;
}

#define IQ_FORMAT(name, KIND)                                                                  \
    void quant_##name##_to_float(const void *src, float *y, int64_t n) {                       \
        const um_block_##name *b = src;                                                        \
        iq_levels L;                                                                           \
        for (int64_t i = 0; i < n / UM_QK_K; i++, y += UM_QK_K) {                              \
            name##_levels(&b[i], &L);                                                          \
            levels_to_float(KIND, &L, y);                                                      \
        }                                                                                      \
    }                                                                                          \
    float quant_##name##_dot(const void *w, const void *act, int64_t n) {                      \
        const um_block_##name *b = w;                                                          \
        const um_block_q8_K *a = act;                                                          \
        iq_levels L;                                                                           \
        float s = 0;                                                                           \
        for (int64_t i = 0; i < n / UM_QK_K; i++) {                                            \
            name##_levels(&b[i], &L);                                                          \
            s += levels_dot(KIND, &L, &a[i]);                                                  \
        }                                                                                      \
        return s;                                                                              \
    }

IQ_FORMAT(iq2_xxs, K_IQ2)
IQ_FORMAT(iq2_xs,  K_IQ2)
IQ_FORMAT(iq2_s,   K_IQ2)
IQ_FORMAT(iq3_xxs, K_IQ3_XXS)
IQ_FORMAT(iq3_s,   K_IQ3_S)
IQ_FORMAT(iq1_s,   K_IQ1)
IQ_FORMAT(iq1_m,   K_IQ1)
IQ_FORMAT(tq1_0,   K_TQ)
IQ_FORMAT(tq2_0,   K_TQ)

/* ================================================================== ternary quantizers
 * The same bytes as llama.cpp's quantize_row_tq1_0_ref / tq2_0_ref (what llama-quantize
 * writes: both ignore an importance matrix): d = max |x|, t = round-half-away(x / d) in
 * -1..1. TQ1_0 packs 5 trits as the base-3 number t0..t4 (t0 most significant) scaled to a
 * byte by ceiling division, qh's 4 trits shifted up one place; tq1_0_levels reads them back.
 */
static uint8_t trit_of(float v, float id) { return (uint8_t)(lroundf(v * id) + 1); }

static float tq_scale(const float *x, um_half *d) {
    float amax = 0;
    for (int j = 0; j < UM_QK_K; j++) amax = fmaxf(amax, fabsf(x[j]));
    *d = f2h(amax);
    return amax ? 1.0f / amax : 0.0f;
}

static uint8_t pack_trits(const float *x, int stride, int n, float id) {
    unsigned q = 0;
    for (int k = 0; k < n; k++) q = q * 3 + trit_of(x[k * stride], id);
    if (n == 4) q *= 3;                          /* qh: the first trit in the top place */
    return (uint8_t)((q * 256 + 242) / 243);
}

void quant_tq1_0_from_float(const float *x, void *dst, int64_t n) {
    um_block_tq1_0 *b = dst;
    for (int64_t i = 0; i < n / UM_QK_K; i++, b++, x += UM_QK_K) {
        const float id = tq_scale(x, &b->d);
        for (int m = 0; m < 32; m++) b->qs[m] = pack_trits(x + m, 32, 5, id);             /* 0..160 */
        for (int m = 0; m < 16; m++) b->qs[32 + m] = pack_trits(x + 160 + m, 16, 5, id);  /* ..240 */
        for (int m = 0; m < 4; m++) b->qh[m] = pack_trits(x + 240 + m, 4, 4, id);         /* ..256 */
    }
}

void quant_tq2_0_from_float(const float *x, void *dst, int64_t n) {
    um_block_tq2_0 *b = dst;
    for (int64_t i = 0; i < n / UM_QK_K; i++, b++, x += UM_QK_K) {
        const float id = tq_scale(x, &b->d);
        for (int half = 0; half < 2; half++)
            for (int m = 0; m < 32; m++) {
                uint8_t q = 0;
                for (int k = 0; k < 4; k++) q |= (uint8_t)(trit_of(x[128 * half + 32 * k + m], id) << (2 * k));
                b->qs[32 * half + m] = q;
            }
    }
}

/* The integer form of one block, for the matmul kernels (declared in quant.h). */
int um_iq_levels(uint32_t type, const void *block, int8_t q[UM_QK_K], uint8_t mult[UM_QK_K / 16], float *scale) {
    iq_levels L;
    int kind;
    switch (type) {
    case UM_TYPE_IQ2_XXS: iq2_xxs_levels(block, &L); kind = K_IQ2; break;
    case UM_TYPE_IQ2_XS:  iq2_xs_levels(block, &L);  kind = K_IQ2; break;
    case UM_TYPE_IQ2_S:   iq2_s_levels(block, &L);   kind = K_IQ2; break;
    case UM_TYPE_IQ3_XXS: iq3_xxs_levels(block, &L); kind = K_IQ3_XXS; break;
    case UM_TYPE_IQ3_S:   iq3_s_levels(block, &L);   kind = K_IQ3_S; break;
    case UM_TYPE_IQ1_S:   iq1_s_levels(block, &L);   kind = K_IQ1; break;
    case UM_TYPE_IQ1_M:   iq1_m_levels(block, &L);   kind = K_IQ1; break;
    case UM_TYPE_TQ1_0:   tq1_0_levels(block, &L);   kind = K_TQ; break;
    case UM_TYPE_TQ2_0:   tq2_0_levels(block, &L);   kind = K_TQ; break;
    default: return -1;
    }
    memcpy(q, L.q, sizeof L.q);
    for (int g = 0; g < UM_QK_K / 16; g++) mult[g] = (uint8_t)(kind == K_TQ ? 1 : 2 * L.s[g] + 1);
    *scale = L.d * factor[kind];
    return 0;
}
