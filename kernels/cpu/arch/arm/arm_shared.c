/*
 * arm_shared: what the AArch64 integer kernels share (baseline AArch64, no extension): the
 * level decoders of every format, the panel decoder from the file layout into int8 levels
 * and scale tables (layouts in matmul_arm.h) and the per-thread scratch size. With
 * arm_shared_dotprod.c (the few-token path) the shared layer of kernels/cpu/arch/arm:
 * matmul_dotprod.c and matmul_i8mm.c call into it and into nothing else beside them.
 *
 * The levels follow quant.c's reference dequantizers exactly (the same bit fields, scale
 * helpers and codebook), so level * scale is the reference weight up to f32 rounding. The
 * bit-plane layouts (4-bit nibbles, the IQ4 codebook, Q5_0/Q5_1, Q2_K..Q6_K) are unpacked 16
 * levels at a time with Advanced SIMD; the lattices and ternary formats (um_iq_levels) byte
 * by byte. The byte-wise decode of Q5_0/Q5_1/Q2_K/Q3_K that the vector code replaced stays
 * below as mm_arm_levels32_ref/256_ref, the reference tests/test_arm_levels_neon.c holds it to.
 */
#include <arm_neon.h>
#include <string.h>

#include "matmul_arm.h"

static inline float h2f(um_half h) { return um_fp16_to_fp32(h); }
static inline uint32_t ld32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return v; }

/* 16 packed bytes -> their 16 low nibbles at q, 16 high nibbles at q + 16, each plus off;
 * with a codebook (lut) the nibbles index it instead. */
static inline void nibbles16(const uint8_t *qs, int8_t *q, int8_t off, const int8x16_t *lut) {
    const uint8x16_t v = vld1q_u8(qs), lo = vandq_u8(v, vdupq_n_u8(15)), hi = vshrq_n_u8(v, 4);
    if (lut) {
        vst1q_s8(q, vqtbl1q_s8(*lut, lo));
        vst1q_s8(q + 16, vqtbl1q_s8(*lut, hi));
    } else {
        vst1q_s8(q, vaddq_s8(vreinterpretq_s8_u8(lo), vdupq_n_s8(off)));
        vst1q_s8(q + 16, vaddq_s8(vreinterpretq_s8_u8(hi), vdupq_n_s8(off)));
    }
}

/* Q5_0 / Q5_1: 16 bytes of nibbles (column j low, j + 16 high) and qh, bit j the fifth bit of
 * column j. Each qh byte goes to 8 lanes (vqtbl1q), each lane tests its own bit (vtstq):
 * Q5_0 adds -16 where the bit is clear ((n | 16 h) - 16), Q5_1 ors 16 where it is set. */
static inline void q5_levels(const uint8_t qs[16], const uint8_t qh[4], int8_t q[32], bool minus16) {
    static const uint8_t spread[32] = { 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1,
                                        2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3 };
    static const uint8_t bit[16] = { 1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128 };
    const uint8x16_t v = vld1q_u8(qs), h = vreinterpretq_u8_u32(vdupq_n_u32(ld32(qh))), bits = vld1q_u8(bit);
    const uint8x16_t n[2] = { vandq_u8(v, vdupq_n_u8(15)), vshrq_n_u8(v, 4) };
    for (int i = 0; i < 2; i++) {
        const uint8x16_t set = vtstq_u8(vqtbl1q_u8(h, vld1q_u8(spread + 16 * i)), bits);
        const uint8x16_t l = minus16 ? vaddq_u8(n[i], vbicq_u8(vdupq_n_u8(0xF0), set))
                                     : vorrq_u8(n[i], vandq_u8(set, vdupq_n_u8(16)));
        vst1q_s8(q + 16 * i, vreinterpretq_s8_u8(l));
    }
}

/* Q2_K / Q3_K: column 128 half + 32 g + l has its two low bits at bit 2g of qs[32 half + l];
 * Q3_K's third bit is bit 4 half + g of hmask[l], clear meaning -4. Per 16 columns l0..l0+15
 * of one half: v = their qs bytes, h = their hmask bytes shifted right by 4 half. */
static inline void k23_put(uint8x16_t low, uint8x16_t h, uint8_t bit, bool three, int8_t *o) {
    if (three) low = vaddq_u8(low, vbicq_u8(vdupq_n_u8(0xFC), vtstq_u8(h, vdupq_n_u8(bit))));
    vst1q_s8(o, vreinterpretq_s8_u8(low));
}

static inline void k23_four(uint8x16_t v, uint8x16_t h, bool three, int8_t *o) {
    const uint8x16_t m3 = vdupq_n_u8(3);
    k23_put(vandq_u8(v, m3), h, 1, three, o);
    k23_put(vandq_u8(vshrq_n_u8(v, 2), m3), h, 2, three, o + 32);
    k23_put(vandq_u8(vshrq_n_u8(v, 4), m3), h, 4, three, o + 64);
    k23_put(vshrq_n_u8(v, 6), h, 8, three, o + 96);
}

static inline void k23_levels(const uint8_t qs[64], const uint8_t hmask[32], bool three, int8_t q[256]) {
    for (int l0 = 0; l0 < 32; l0 += 16) {
        const uint8x16_t h = three ? vld1q_u8(hmask + l0) : vdupq_n_u8(0);
        k23_four(vld1q_u8(qs + l0), h, three, q + l0);
        k23_four(vld1q_u8(qs + 32 + l0), vshrq_n_u8(h, 4), three, q + 128 + l0);
    }
}

/* Q3_K's 16 six-bit scales less 32 (um_q3_K_scale): the low four bits of scale j are the low
 * nibble of scales[j] (j < 8) or the high nibble of scales[j - 8], its two high bits are
 * bits 2 (j / 4) and up of scales[8 + j % 4]. */
static inline int8x16_t q3_K_scales(const uint8_t scales[12]) {
    static const int8_t up[16] = { 4, 4, 4, 4, 2, 2, 2, 2, 0, 0, 0, 0, -2, -2, -2, -2 };
    const uint8x8_t a = vld1_u8(scales);
    const uint8x16_t lo = vcombine_u8(vand_u8(a, vdup_n_u8(15)), vshr_n_u8(a, 4));
    const uint8x16_t hi = vandq_u8(vshlq_u8(vreinterpretq_u8_u32(vdupq_n_u32(ld32(scales + 8))), vld1q_s8(up)),
                                   vdupq_n_u8(0x30));
    return vsubq_s8(vreinterpretq_s8_u8(vorrq_u8(lo, hi)), vdupq_n_s8(32));
}

/* 16 signed bytes -> 16 int32 (the per-16-column scale and min tables). */
static inline void widen16(int8x16_t v, int32_t o[16]) {
    const int16x8_t a = vmovl_s8(vget_low_s8(v)), b = vmovl_high_s8(v);
    vst1q_s32(o, vmovl_s16(vget_low_s16(a)));
    vst1q_s32(o + 4, vmovl_high_s16(a));
    vst1q_s32(o + 8, vmovl_s16(vget_low_s16(b)));
    vst1q_s32(o + 12, vmovl_high_s16(b));
}

/* ---------------------------------------------------------------- 32-column blocks */

/* Levels q[32] (column order), d and m of one block. */
void mm_arm_levels32(uint32_t type, const uint8_t *blk, int8_t q[32], float *d, float *m) {
    *m = 0;
    switch (type) {
    case UM_TYPE_Q4_0: {
        const um_block_q4_0 *b = (const void *)blk;
        nibbles16(b->qs, q, -8, NULL);
        *d = h2f(b->d);
        break;
    }
    case UM_TYPE_Q4_1: {
        const um_block_q4_1 *b = (const void *)blk;
        nibbles16(b->qs, q, 0, NULL);
        *d = h2f(b->d);
        *m = h2f(b->m);
        break;
    }
    case UM_TYPE_Q5_0: {
        const um_block_q5_0 *b = (const void *)blk;
        q5_levels(b->qs, b->qh, q, true);
        *d = h2f(b->d);
        break;
    }
    case UM_TYPE_Q5_1: {
        const um_block_q5_1 *b = (const void *)blk;
        q5_levels(b->qs, b->qh, q, false);
        *d = h2f(b->d);
        *m = h2f(b->m);
        break;
    }
    case UM_TYPE_Q8_0: {
        const um_block_q8_0 *b = (const void *)blk;
        memcpy(q, b->qs, 32);
        *d = h2f(b->d);
        break;
    }
    default: { /* IQ4_NL */
        const um_block_iq4_nl *b = (const void *)blk;
        const int8x16_t lut = vld1q_s8(um_iq4nl_values);
        nibbles16(b->qs, q, 0, &lut);
        *d = h2f(b->d);
        break;
    }
    }
}

/* ---------------------------------------------------------------- 256-column blocks */

/* Levels q[256], integer scale and min per 16 columns, d and dmin of one super-block. */
void mm_arm_levels256(uint32_t type, const uint8_t *blk, int8_t q[256], int32_t sc[16], int32_t mn[16],
                      float *d, float *dmin) {
    memset(mn, 0, 16 * sizeof(int32_t));
    *dmin = 0;
    switch (type) {
    case UM_TYPE_Q2_K: {
        const um_block_q2_K *b = (const void *)blk;
        k23_levels(b->qs, NULL, false, q);
        const uint8x16_t s = vld1q_u8(b->scales);
        widen16(vreinterpretq_s8_u8(vandq_u8(s, vdupq_n_u8(15))), sc);
        widen16(vreinterpretq_s8_u8(vshrq_n_u8(s, 4)), mn);
        *d = h2f(b->d);
        *dmin = h2f(b->dmin);
        break;
    }
    case UM_TYPE_Q3_K: {
        const um_block_q3_K *b = (const void *)blk;
        k23_levels(b->qs, b->hmask, true, q);
        widen16(q3_K_scales(b->scales), sc);
        *d = h2f(b->d);
        break;
    }
    case UM_TYPE_Q4_K: case UM_TYPE_Q5_K: {
        bool five = type == UM_TYPE_Q5_K;
        const um_block_q5_K *b5 = (const void *)blk;
        const um_block_q4_K *b4 = (const void *)blk;
        const uint8_t *qs = five ? b5->qs : b4->qs, *qh = five ? b5->qh : NULL, *scales = five ? b5->scales : b4->scales;
        /* 64-column chunk c: byte l of qs[32c..] holds column l (low) and l + 32 (high);
         * Q5_K's fifth bit of column e is bit e / 32 of qh[e % 32] */
        for (int c = 0; c < 4; c++)
            for (int l0 = 0; l0 < 32; l0 += 16) {
                const uint8x16_t v = vld1q_u8(qs + 32 * c + l0);
                uint8x16_t lo = vandq_u8(v, vdupq_n_u8(15)), hi = vshrq_n_u8(v, 4);
                if (qh) {
                    const uint8x16_t h = vld1q_u8(qh + l0), b16 = vdupq_n_u8(16);
                    lo = vorrq_u8(lo, vandq_u8(vtstq_u8(h, vdupq_n_u8((uint8_t)(1u << (2 * c)))), b16));
                    hi = vorrq_u8(hi, vandq_u8(vtstq_u8(h, vdupq_n_u8((uint8_t)(2u << (2 * c)))), b16));
                }
                vst1q_s8(q + 64 * c + l0, vreinterpretq_s8_u8(lo));
                vst1q_s8(q + 64 * c + 32 + l0, vreinterpretq_s8_u8(hi));
            }
        for (int s = 0; s < 8; s++) {
            uint8_t a, m;
            um_k4_scale_min(s, scales, &a, &m);
            sc[2 * s] = sc[2 * s + 1] = a;
            mn[2 * s] = mn[2 * s + 1] = m;
        }
        *d = h2f(five ? b5->d : b4->d);
        *dmin = h2f(five ? b5->dmin : b4->dmin);
        break;
    }
    case UM_TYPE_Q6_K: {
        const um_block_q6_K *b = (const void *)blk;
        /* column 128 half + 32 g + l: low 4 bits in ql[64 half + 32 (g & 1) + l] (high nibble
         * when g >= 2), high 2 bits at bit 2g of qh[32 half + l] */
        for (int half = 0; half < 2; half++)
            for (int g = 0; g < 4; g++)
                for (int l0 = 0; l0 < 32; l0 += 16) {
                    const uint8x16_t L = vld1q_u8(b->ql + 64 * half + 32 * (g & 1) + l0);
                    const uint8x16_t H = vld1q_u8(b->qh + 32 * half + l0);
                    const uint8x16_t low = g >> 1 ? vshrq_n_u8(L, 4) : vandq_u8(L, vdupq_n_u8(15));
                    const uint8x16_t high = vandq_u8(vshlq_u8(H, vdupq_n_s8((int8_t)(-2 * g))), vdupq_n_u8(3));
                    const int8x16_t v = vreinterpretq_s8_u8(vorrq_u8(low, vshlq_n_u8(high, 4)));
                    vst1q_s8(q + 128 * half + 32 * g + l0, vsubq_s8(v, vdupq_n_s8(32)));
                }
        for (int s = 0; s < 16; s++) sc[s] = b->scales[s];
        *d = h2f(b->d);
        break;
    }
    case UM_TYPE_IQ4_XS: {
        const um_block_iq4_xs *b = (const void *)blk;
        const int8x16_t lut = vld1q_s8(um_iq4nl_values);
        for (int ib = 0; ib < 8; ib++) {
            nibbles16(b->qs + 16 * ib, q + 32 * ib, 0, &lut);
            sc[2 * ib] = sc[2 * ib + 1] = um_iq4_xs_scale(ib, b);
        }
        *d = h2f(b->d);
        break;
    }
    default: { /* IQ1-IQ3, TQ: block = scale * mult[g] * q per 16 */
        uint8_t mult[16];
        um_iq_levels(type, blk, q, mult, d);
        for (int s = 0; s < 16; s++) sc[s] = mult[s];
        break;
    }
    }
}

/* ---------------------------------------------------------------- byte-wise references */

/* The byte-by-byte decode of Q5_0/Q5_1 (32-blocks) and Q2_K/Q3_K (256-blocks), in quant.c's
 * dequantizers' words, which the vector decode above replaced; same outputs. False for any
 * other type (nothing written). */
bool mm_arm_levels32_ref(uint32_t type, const uint8_t *blk, int8_t q[32], float *d, float *m) {
    if (type != UM_TYPE_Q5_0 && type != UM_TYPE_Q5_1) return false;
    bool one = type == UM_TYPE_Q5_1;
    const um_block_q5_0 *b0 = (const void *)blk;
    const um_block_q5_1 *b1 = (const void *)blk;
    const uint8_t *qs = one ? b1->qs : b0->qs;
    uint32_t qh = ld32(one ? b1->qh : b0->qh);
    int off = one ? 0 : 16;
    for (int j = 0; j < 16; j++) {
        q[j] = (int8_t)(((qs[j] & 15) | ((qh >> j) & 1) << 4) - off);
        q[j + 16] = (int8_t)(((qs[j] >> 4) | ((qh >> (j + 16)) & 1) << 4) - off);
    }
    *d = h2f(one ? b1->d : b0->d);
    *m = one ? h2f(b1->m) : 0;
    return true;
}

bool mm_arm_levels256_ref(uint32_t type, const uint8_t *blk, int8_t q[256], int32_t sc[16], int32_t mn[16],
                          float *d, float *dmin) {
    if (type != UM_TYPE_Q2_K && type != UM_TYPE_Q3_K) return false;
    memset(mn, 0, 16 * sizeof(int32_t));
    *dmin = 0;
    if (type == UM_TYPE_Q2_K) {
        const um_block_q2_K *b = (const void *)blk;
        for (int e = 0; e < 256; e++) {
            int half = e / 128, r = e % 128;
            q[e] = (int8_t)((b->qs[32 * half + r % 32] >> (2 * (r / 32))) & 3);
        }
        for (int s = 0; s < 16; s++) { sc[s] = b->scales[s] & 15; mn[s] = b->scales[s] >> 4; }
        *d = h2f(b->d);
        *dmin = h2f(b->dmin);
    } else {
        const um_block_q3_K *b = (const void *)blk;
        for (int e = 0; e < 256; e++) {
            int half = e / 128, r = e % 128, g = r / 32, l = r % 32;
            int low = (b->qs[32 * half + l] >> (2 * g)) & 3;
            int high = (b->hmask[l] >> (4 * half + g)) & 1;
            q[e] = (int8_t)(low - (high ? 0 : 4));
        }
        for (int s = 0; s < 16; s++) sc[s] = um_q3_K_scale(s, b->scales);
        *d = h2f(b->d);
    }
    return true;
}

/* ---------------------------------------------------------------- the panel */

/* Store one per-row value v of row r at table slot t (16 words SDOT, 32 pair-duplicated). */
static inline void put_row(void *t, int r, bool mmla, const void *v) {
    uint8_t *o = t;
    if (!mmla) { memcpy(o + r * 4, v, 4); return; }
    int p = r / 2, i = r % 2;
    memcpy(o + (4 * p + i) * 4, v, 4);
    memcpy(o + (4 * p + 2 + i) * 4, v, 4);
}

/* Levels q[n] of row r starting at column k0 into the weight layout. */
static inline void put_levels(int8_t *wq, int r, int64_t k0, int n, bool mmla, const int8_t *q) {
    if (!mmla) {
        for (int c = 0; c < n; c += 4) memcpy(wq + ((k0 + c) / 4) * 64 + r * 4, q + c, 4);
    } else {
        for (int c = 0; c < n; c += 8) memcpy(wq + ((k0 + c) / 8) * 128 + (r / 2) * 16 + (r % 2) * 8, q + c, 8);
    }
}

void mm_arm_panel(const um_matmul_weights *w, int64_t panel, bool mmla, void *tab, int8_t *wq) {
    const uint32_t bytes = um_type_bytes(w->type);
    const bool b32 = mm_arm_blk32(w->type);
    const int64_t nu = w->n_in / (b32 ? 32 : 256);
    uint32_t *t = tab;
    int8_t q[256];
    for (int r = 0; r < UM_MATMUL_PANEL; r++) {
        const uint8_t *row = (const uint8_t *)w->data + (size_t)(panel * UM_MATMUL_PANEL + r) * w->row_bytes;
        for (int64_t u = 0; u < nu; u++) {
            if (b32) {
                float d, m;
                mm_arm_levels32(w->type, row + u * bytes, q, &d, &m);
                put_levels(wq, r, u * 32, 32, mmla, q);
                put_row(t + u * ARM_T32, r, mmla, &d);
                put_row(t + u * ARM_T32 + 32, r, mmla, &m);
            } else {
                int32_t sc[16], mn[16];
                float d, dmin;
                mm_arm_levels256(w->type, row + u * bytes, q, sc, mn, &d, &dmin);
                put_levels(wq, r, u * 256, 256, mmla, q);
                uint32_t *tu = t + u * ARM_T256;
                for (int s = 0; s < 16; s++) {
                    put_row(tu + s * 32, r, mmla, &sc[s]);
                    put_row(tu + 512 + s * 32, r, mmla, &mn[s]);
                }
                put_row(tu + 1024, r, mmla, &d);
                put_row(tu + 1056, r, mmla, &dmin);
            }
        }
    }
}

size_t mm_arm_scratch_bytes(const um_matmul_weights *w) {
    return mm_arm_tables_bytes(w) + (size_t)UM_MATMUL_PANEL * (size_t)w->n_in + 64;
}
