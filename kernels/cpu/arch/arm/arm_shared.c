/*
 * arm_shared: what the AArch64 integer kernels share (baseline AArch64, no extension): the
 * level decoders of every format, the panel decoder from the file layout into int8 levels
 * and scale tables (layouts in matmul_arm.h) and the per-thread scratch size. With
 * arm_shared_dotprod.c (the few-token path) the shared layer of kernels/cpu/arch/arm:
 * matmul_dotprod.c and matmul_i8mm.c call into it and into nothing else beside them.
 *
 * The levels follow quant.c's reference dequantizers exactly (the same bit fields, scale
 * helpers and codebook), so level * scale is the reference weight up to f32 rounding.
 */
#include <string.h>

#include "matmul_arm.h"

static inline float h2f(um_half h) { return um_fp16_to_fp32(h); }
static inline uint32_t ld32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return v; }

/* ---------------------------------------------------------------- 32-column blocks */

/* Levels q[32] (column order), d and m of one block. */
void mm_arm_levels32(uint32_t type, const uint8_t *blk, int8_t q[32], float *d, float *m) {
    *m = 0;
    switch (type) {
    case UM_TYPE_Q4_0: {
        const um_block_q4_0 *b = (const void *)blk;
        for (int j = 0; j < 16; j++) { q[j] = (int8_t)((b->qs[j] & 15) - 8); q[j + 16] = (int8_t)((b->qs[j] >> 4) - 8); }
        *d = h2f(b->d);
        break;
    }
    case UM_TYPE_Q4_1: {
        const um_block_q4_1 *b = (const void *)blk;
        for (int j = 0; j < 16; j++) { q[j] = (int8_t)(b->qs[j] & 15); q[j + 16] = (int8_t)(b->qs[j] >> 4); }
        *d = h2f(b->d);
        *m = h2f(b->m);
        break;
    }
    case UM_TYPE_Q5_0: case UM_TYPE_Q5_1: {
        bool one = type == UM_TYPE_Q5_1;
        const uint8_t *qs = one ? ((const um_block_q5_1 *)(const void *)blk)->qs : ((const um_block_q5_0 *)(const void *)blk)->qs;
        uint32_t qh = ld32(one ? ((const um_block_q5_1 *)(const void *)blk)->qh : ((const um_block_q5_0 *)(const void *)blk)->qh);
        int off = one ? 0 : 16;
        for (int j = 0; j < 16; j++) {
            q[j] = (int8_t)(((qs[j] & 15) | ((qh >> j) & 1) << 4) - off);
            q[j + 16] = (int8_t)(((qs[j] >> 4) | ((qh >> (j + 16)) & 1) << 4) - off);
        }
        if (one) {
            const um_block_q5_1 *b = (const void *)blk;
            *d = h2f(b->d);
            *m = h2f(b->m);
        } else {
            *d = h2f(((const um_block_q5_0 *)(const void *)blk)->d);
        }
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
        for (int j = 0; j < 16; j++) { q[j] = um_iq4nl_values[b->qs[j] & 15]; q[j + 16] = um_iq4nl_values[b->qs[j] >> 4]; }
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
        for (int e = 0; e < 256; e++) {
            int half = e / 128, r = e % 128;
            q[e] = (int8_t)((b->qs[32 * half + r % 32] >> (2 * (r / 32))) & 3);
        }
        for (int s = 0; s < 16; s++) { sc[s] = b->scales[s] & 15; mn[s] = b->scales[s] >> 4; }
        *d = h2f(b->d);
        *dmin = h2f(b->dmin);
        break;
    }
    case UM_TYPE_Q3_K: {
        const um_block_q3_K *b = (const void *)blk;
        for (int e = 0; e < 256; e++) {
            int half = e / 128, r = e % 128, g = r / 32, l = r % 32;
            int low = (b->qs[32 * half + l] >> (2 * g)) & 3;
            int high = (b->hmask[l] >> (4 * half + g)) & 1;
            q[e] = (int8_t)(low - (high ? 0 : 4));
        }
        for (int s = 0; s < 16; s++) sc[s] = um_q3_K_scale(s, b->scales);
        *d = h2f(b->d);
        break;
    }
    case UM_TYPE_Q4_K: case UM_TYPE_Q5_K: {
        bool five = type == UM_TYPE_Q5_K;
        const um_block_q5_K *b5 = (const void *)blk;
        const um_block_q4_K *b4 = (const void *)blk;
        const uint8_t *qs = five ? b5->qs : b4->qs, *qh = five ? b5->qh : NULL, *scales = five ? b5->scales : b4->scales;
        for (int e = 0; e < 256; e++) {
            int chunk = e / 64, r = e % 64;
            int v = (qs[32 * chunk + r % 32] >> (r < 32 ? 0 : 4)) & 15;
            if (qh) v |= ((qh[r % 32] >> (e / 32)) & 1) << 4;
            q[e] = (int8_t)v;
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
        for (int e = 0; e < 256; e++) {
            int half = e / 128, r = e % 128, g = r / 32, l = r % 32;
            int low = (b->ql[64 * half + 32 * (g & 1) + l] >> (4 * (g >> 1))) & 15;
            int high = (b->qh[32 * half + l] >> (2 * g)) & 3;
            q[e] = (int8_t)((low | (high << 4)) - 32);
        }
        for (int s = 0; s < 16; s++) sc[s] = b->scales[s];
        *d = h2f(b->d);
        break;
    }
    case UM_TYPE_IQ4_XS: {
        const um_block_iq4_xs *b = (const void *)blk;
        for (int ib = 0; ib < 8; ib++) {
            for (int j = 0; j < 16; j++) {
                q[32 * ib + j] = um_iq4nl_values[b->qs[16 * ib + j] & 15];
                q[32 * ib + j + 16] = um_iq4nl_values[b->qs[16 * ib + j] >> 4];
            }
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
