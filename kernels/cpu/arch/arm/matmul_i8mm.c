/*
 * matmul_i8mm: the AArch64 integer kernel with SMMLA (FEAT_I8MM; compiled with
 * -march=armv8.2-a+dotprod+i8mm, called only when cpu_features() reports it). The same
 * formats, panels, tables and sums as matmul_dotprod.c, in SMMLA order (matmul_arm.h).
 *
 * vmmlaq_s32(acc, a, w) adds a (2 tokens x 8 columns) times w (2 rows x 8 columns)^T to
 * the 2x2 tile acc = [t r, t r', t' r, t' r']: 32 multiply-adds, twice an SDOT's. A register
 * block is 2 token pairs (up to 4 tokens; an odd last token is paired with itself and its
 * copy dropped) over a half panel (8 rows = 4 tiles per pair): per 8 columns 4 weight loads,
 * each shared by both pairs, and one activation vector per pair (vzip1q_s64/vzip2q_s64 of
 * the two tokens' 16-byte loads give columns 0..7 and 8..15). The tables are pair-duplicated
 * so that a row's scale sits in both of its tile lanes; the token scale vector is
 * [s_t, s_t, s_t', s_t'].
 */
#include <arm_neon.h>

#include "matmul_arm.h"

#define AI static inline __attribute__((always_inline))
#define UNROLL _Pragma("GCC unroll 16")
#define TP 2                     /* token pairs per register block */

typedef struct pair_ptrs {
    const int8_t  *q[2 * TP];
    const float   *scale[2 * TP];
    const uint8_t *corr[2 * TP];
} pair_ptrs;

/* nt tokens from t; an odd last token stands in for its missing partner too. */
AI void pair_init(const int P, int nt, const mm_job *j, int64_t t, pair_ptrs *p) {
    UNROLL for (int u = 0; u < 2 * P; u++) {
        const uint8_t *a = j->act + (size_t)(t + (u < nt ? u : nt - 1)) * j->act_stride;
        p->q[u] = (const int8_t *)a;
        p->scale[u] = (const float *)(a + j->off_scale);
        p->corr[u] = a + j->off_corr;
    }
}

AI float32x4_t pair_f32(float a, float b) { return vcombine_f32(vdup_n_f32(a), vdup_n_f32(b)); }
AI int32x4_t pair_s32(int32_t a, int32_t b) { return vcombine_s32(vdup_n_s32(a), vdup_n_s32(b)); }

/* 16 columns of 8 rows (4 tiles) for P token pairs; wv = the half panel's bytes of the first
 * 8 columns (the next 8 are 128 bytes on), k = the first column. */
AI void mmla16(const int P, const int8_t *wv, const pair_ptrs *p, size_t k, int32x4_t (*is)[4]) {
    int8x16_t lo[TP], hi[TP];
    UNROLL for (int pp = 0; pp < P; pp++) {
        int64x2_t x0 = vreinterpretq_s64_s8(vld1q_s8(p->q[2 * pp] + k));
        int64x2_t x1 = vreinterpretq_s64_s8(vld1q_s8(p->q[2 * pp + 1] + k));
        lo[pp] = vreinterpretq_s8_s64(vzip1q_s64(x0, x1));
        hi[pp] = vreinterpretq_s8_s64(vzip2q_s64(x0, x1));
    }
    UNROLL for (int i = 0; i < 4; i++) {
        const int8x16_t w = vld1q_s8(wv + i * 16);
        UNROLL for (int pp = 0; pp < P; pp++) is[pp][i] = vmmlaq_s32(is[pp][i], lo[pp], w);
    }
    UNROLL for (int i = 0; i < 4; i++) {
        const int8x16_t w = vld1q_s8(wv + 128 + i * 16);
        UNROLL for (int pp = 0; pp < P; pp++) is[pp][i] = vmmlaq_s32(is[pp][i], hi[pp], w);
    }
}

/* Tiles -> rows 8h..8h+7 of each real token. */
AI void store_pairs(const int P, int nt, float32x4_t (*acc)[4], float *y, int64_t n_out, int h) {
    UNROLL for (int pp = 0; pp < P; pp++) {
        float64x2_t a0 = vreinterpretq_f64_f32(acc[pp][0]), a1 = vreinterpretq_f64_f32(acc[pp][1]);
        float64x2_t a2 = vreinterpretq_f64_f32(acc[pp][2]), a3 = vreinterpretq_f64_f32(acc[pp][3]);
        float *y0 = y + (size_t)(2 * pp) * n_out + h * 8;
        vst1q_f32(y0, vreinterpretq_f32_f64(vzip1q_f64(a0, a1)));
        vst1q_f32(y0 + 4, vreinterpretq_f32_f64(vzip1q_f64(a2, a3)));
        if (2 * pp + 1 < nt) {
            vst1q_f32(y0 + n_out, vreinterpretq_f32_f64(vzip2q_f64(a0, a1)));
            vst1q_f32(y0 + n_out + 4, vreinterpretq_f32_f64(vzip2q_f64(a2, a3)));
        }
    }
}

AI void blk32(const int P, const bool affine, int nt, const int8_t *wq, const float *tab, int64_t nb,
              const mm_job *j, int64_t t, int h, float *y) {
    pair_ptrs p;
    pair_init(P, nt, j, t, &p);
    float32x4_t acc[TP][4];
    UNROLL for (int pp = 0; pp < P; pp++) UNROLL for (int i = 0; i < 4; i++) acc[pp][i] = vdupq_n_f32(0);
    for (int64_t b = 0; b < nb; b++) {
        int32x4_t is[TP][4];
        UNROLL for (int pp = 0; pp < P; pp++) UNROLL for (int i = 0; i < 4; i++) is[pp][i] = vdupq_n_s32(0);
        UNROLL for (int g = 0; g < 2; g++) mmla16(P, wq + (b * 4 + g * 2) * 128 + h * 64, &p, (size_t)b * 32 + g * 16, is);
        const float *tb = tab + b * ARM_T32 + h * 16;
        UNROLL for (int pp = 0; pp < P; pp++) {
            const float32x4_t s = pair_f32(p.scale[2 * pp][b], p.scale[2 * pp + 1][b]);
            float32x4_t ms = vdupq_n_f32(0);
            if (affine)     /* the act rows hold -128 * sum(q) per 32 (mm_quantize_act's Q8_0) */
                ms = vmulq_f32(s, pair_f32((float)(((const int32_t *)p.corr[2 * pp])[b] / -128),
                                           (float)(((const int32_t *)p.corr[2 * pp + 1])[b] / -128)));
            UNROLL for (int i = 0; i < 4; i++) {
                acc[pp][i] = vfmaq_f32(acc[pp][i], vcvtq_f32_s32(is[pp][i]), vmulq_f32(vld1q_f32(tb + 4 * i), s));
                if (affine) acc[pp][i] = vfmaq_f32(acc[pp][i], vld1q_f32(tb + 32 + 4 * i), ms);
            }
        }
    }
    store_pairs(P, nt, acc, y, j->w->n_out, h);
}

AI void blk256(const int P, const bool affine, const int G, int nt, const int8_t *wq, const int32_t *tab, int64_t nsb,
               const mm_job *j, int64_t t, int h, float *y) {
    pair_ptrs p;
    pair_init(P, nt, j, t, &p);
    const int16_t *bsum[2 * TP];     /* int16 sums of the activations per 16 columns */
    UNROLL for (int u = 0; u < 2 * P; u++) bsum[u] = (const int16_t *)(p.corr[u] + (size_t)(j->w->n_in / 16) * sizeof(int32_t));
    float32x4_t acc[TP][4];
    UNROLL for (int pp = 0; pp < P; pp++) UNROLL for (int i = 0; i < 4; i++) acc[pp][i] = vdupq_n_f32(0);
    for (int64_t sb = 0; sb < nsb; sb++) {
        const int32_t *tb = tab + sb * ARM_T256 + h * 16;
        int32x4_t ia[TP][4];
        UNROLL for (int pp = 0; pp < P; pp++) UNROLL for (int i = 0; i < 4; i++) ia[pp][i] = vdupq_n_s32(0);
        for (int s = 0; s < 16; s += G) {     /* one sub-block: G groups of 16 columns */
            int32x4_t is[TP][4];
            UNROLL for (int pp = 0; pp < P; pp++) UNROLL for (int i = 0; i < 4; i++) is[pp][i] = vdupq_n_s32(0);
            UNROLL for (int g = 0; g < G; g++)
                mmla16(P, wq + (sb * 32 + (s + g) * 2) * 128 + h * 64, &p, (size_t)sb * 256 + (s + g) * 16, is);
            UNROLL for (int i = 0; i < 4; i++) {
                const int32x4_t sc = vld1q_s32(tb + s * 32 + 4 * i);
                UNROLL for (int pp = 0; pp < P; pp++) ia[pp][i] = vmlaq_s32(ia[pp][i], is[pp][i], sc);
            }
        }
        UNROLL for (int pp = 0; pp < P; pp++) {
            const float32x4_t sa = pair_f32(p.scale[2 * pp][sb], p.scale[2 * pp + 1][sb]);
            int32x4_t ms[4] = { vdupq_n_s32(0), vdupq_n_s32(0), vdupq_n_s32(0), vdupq_n_s32(0) };
            if (affine)
                for (int s = 0; s < 16; s += G) {
                    const int16_t *b0 = bsum[2 * pp] + sb * 16 + s, *b1 = bsum[2 * pp + 1] + sb * 16 + s;
                    const int32x4_t bs = G == 2 ? pair_s32(b0[0] + b0[1], b1[0] + b1[1]) : pair_s32(b0[0], b1[0]);
                    UNROLL for (int i = 0; i < 4; i++) ms[i] = vmlaq_s32(ms[i], vld1q_s32(tb + 512 + s * 32 + 4 * i), bs);
                }
            UNROLL for (int i = 0; i < 4; i++) {
                const float32x4_t d = vld1q_f32((const float *)tb + 1024 + 4 * i);
                acc[pp][i] = vfmaq_f32(acc[pp][i], vcvtq_f32_s32(ia[pp][i]), vmulq_f32(d, sa));
                if (affine) {
                    const float32x4_t dm = vld1q_f32((const float *)tb + 1056 + 4 * i);
                    acc[pp][i] = vfmsq_f32(acc[pp][i], vcvtq_f32_s32(ms[i]), vmulq_f32(dm, sa));
                }
            }
        }
    }
    store_pairs(P, nt, acc, y, j->w->n_out, h);
}

#define CASES(F, ...) \
    switch ((nt + 1) / 2) { case 1: F(1, __VA_ARGS__); break; default: F(2, __VA_ARGS__); break; }

void mm_chunk_i8mm(const mm_job *j, int64_t panel, int64_t t0, int64_t t1, void *ts) {
    const um_matmul_weights *w = j->w;
    if (t1 - t0 <= ARM_FEW) { mm_arm_rows(j, panel, t0, t1); return; }   /* few tokens: no panel */
    void *tab = ts;
    int8_t *wq = (int8_t *)ts + mm_arm_tables_bytes(w);
    mm_arm_panel(w, panel, true, tab, wq);
    const bool b32 = mm_arm_blk32(w->type), aff = mm_arm_affine(w->type), s32 = mm_arm_sub32(w->type);
    const int64_t nu = w->n_in / (b32 ? 32 : 256);
    const int TB = 2 * TP;
    int64_t n_blocks = (t1 - t0 + TB - 1) / TB;   /* even register blocks */
    int bs = (int)((t1 - t0 + n_blocks - 1) / n_blocks);
    for (int64_t t = t0; t < t1; t += bs) {
        int nt = (int)UM_MIN(bs, t1 - t);
        float *y = j->y + t * w->n_out + panel * UM_MATMUL_PANEL;
        for (int h = 0; h < 2; h++) {
            if (b32 && aff) { CASES(blk32, true, nt, wq, tab, nu, j, t, h, y) }
            else if (b32) { CASES(blk32, false, nt, wq, tab, nu, j, t, h, y) }
            else if (aff && s32) { CASES(blk256, true, 2, nt, wq, tab, nu, j, t, h, y) }
            else if (aff) { CASES(blk256, true, 1, nt, wq, tab, nu, j, t, h, y) }
            else if (s32) { CASES(blk256, false, 2, nt, wq, tab, nu, j, t, h, y) }
            else { CASES(blk256, false, 1, nt, wq, tab, nu, j, t, h, y) }
        }
    }
}
