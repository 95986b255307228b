/*
 * matmul_dotprod: the AArch64 integer kernel with SDOT (FEAT_DotProd; compiled with
 * -march=armv8.2-a+dotprod, called only when cpu_features() reports it). Every quantized
 * format of matmul_impl.h's ARM list, full 16-row panels only (the dispatcher sends the rest
 * to the neon kernel).
 *
 * A chunk decodes its panel (arm_shared.c, SDOT order of matmul_arm.h), then runs register
 * blocks of up to 4 tokens over each half panel (8 rows = 2 int32x4 per token): one 16-byte
 * activation load per token and 16 columns, and per 4 columns two weight loads shared by the
 * block's tokens, each token's 4 columns a lane of its activation vector
 * (vdotq_laneq_s32). No horizontal sums: lane i of an accumulator is a row.
 *   32-blocks:  per 32 columns the int32 sums are converted once and multiplied by
 *               d[row] * scale[token] (+ m[row] * scale * sum(q) for Q4_1/Q5_1).
 *   256-blocks: per sub-block (16 columns, or 32 for Q4_K/Q5_K/IQ4_XS) the sums are
 *               multiplied by the integer sub-block scales into an int32 super-block sum
 *               (vmlaq_s32), converted once per 256; mins the same way against the
 *               activations' int16 sums per 16 (added in pairs for 32-column sub-blocks). The sums are exact: at most
 *               16 x 16 x 127 x 127 x 32 (IQ4_XS) < 2^31.
 */
#include <arm_neon.h>

#include "matmul_arm.h"

#define AI static inline __attribute__((always_inline))
#define UNROLL _Pragma("GCC unroll 16")
#define TB 4                     /* tokens per register block */

typedef struct tok_ptrs {
    const int8_t  *q[TB];
    const float   *scale[TB];
    const uint8_t *corr[TB];
} tok_ptrs;

AI void tok_init(const int T, const mm_job *j, int64_t t, tok_ptrs *p) {
    UNROLL for (int u = 0; u < T; u++) {
        const uint8_t *a = j->act + (size_t)(t + u) * j->act_stride;
        p->q[u] = (const int8_t *)a;
        p->scale[u] = (const float *)(a + j->off_scale);
        p->corr[u] = a + j->off_corr;
    }
}

/* 16 columns (4 groups of 4) of 8 rows for T tokens: wv = the first group's 32 bytes of the
 * half panel, a[u] = the tokens' 16 activations. */
#define DOT_GROUP(L) do { \
        int8x16_t w0 = vld1q_s8(wv + (L) * 64), w1 = vld1q_s8(wv + (L) * 64 + 16); \
        UNROLL for (int u = 0; u < T; u++) { \
            is[u][0] = vdotq_laneq_s32(is[u][0], w0, a[u], L); \
            is[u][1] = vdotq_laneq_s32(is[u][1], w1, a[u], L); \
        } \
    } while (0)

AI void dot16(const int T, const int8_t *wv, const int8x16_t *a, int32x4_t (*is)[2]) {
    DOT_GROUP(0); DOT_GROUP(1); DOT_GROUP(2); DOT_GROUP(3);
}

/* 32-blocks: rows 8h..8h+7, tokens t..t+T-1. */
AI void blk32(const int T, const bool affine, const int8_t *wq, const float *tab, int64_t nb,
              const mm_job *j, int64_t t, int h, float *y) {
    tok_ptrs p;
    tok_init(T, j, t, &p);
    float32x4_t acc[TB][2];
    UNROLL for (int u = 0; u < T; u++) acc[u][0] = acc[u][1] = vdupq_n_f32(0);
    for (int64_t b = 0; b < nb; b++) {
        int32x4_t is[TB][2];
        UNROLL for (int u = 0; u < T; u++) is[u][0] = is[u][1] = vdupq_n_s32(0);
        UNROLL for (int g = 0; g < 2; g++) {
            int8x16_t a[TB];
            UNROLL for (int u = 0; u < T; u++) a[u] = vld1q_s8(p.q[u] + b * 32 + g * 16);
            dot16(T, wq + (b * 8 + g * 4) * 64 + h * 32, a, is);
        }
        const float *tb = tab + b * ARM_T32 + h * 8;
        const float32x4_t d0 = vld1q_f32(tb), d1 = vld1q_f32(tb + 4);
        UNROLL for (int u = 0; u < T; u++) {
            const float s = p.scale[u][b];
            acc[u][0] = vfmaq_f32(acc[u][0], vcvtq_f32_s32(is[u][0]), vmulq_n_f32(d0, s));
            acc[u][1] = vfmaq_f32(acc[u][1], vcvtq_f32_s32(is[u][1]), vmulq_n_f32(d1, s));
            if (affine) {   /* the act row holds -128 * sum(q) per 32 (mm_quantize_act's Q8_0) */
                const float ms = s * (float)(((const int32_t *)p.corr[u])[b] / -128);
                acc[u][0] = vfmaq_n_f32(acc[u][0], vld1q_f32(tb + 32), ms);
                acc[u][1] = vfmaq_n_f32(acc[u][1], vld1q_f32(tb + 36), ms);
            }
        }
    }
    UNROLL for (int u = 0; u < T; u++) {
        vst1q_f32(y + (size_t)u * j->w->n_out + h * 8, acc[u][0]);
        vst1q_f32(y + (size_t)u * j->w->n_out + h * 8 + 4, acc[u][1]);
    }
}

/* 256-blocks: rows 8h..8h+7, tokens t..t+T-1. */
AI void blk256(const int T, const bool affine, const int G, const int8_t *wq, const int32_t *tab, int64_t nsb,
               const mm_job *j, int64_t t, int h, float *y) {
    tok_ptrs p;
    tok_init(T, j, t, &p);
    const int16_t *bsum[TB];     /* int16 sums of the activations per 16 columns */
    UNROLL for (int u = 0; u < T; u++) bsum[u] = (const int16_t *)(p.corr[u] + (size_t)(j->w->n_in / 16) * sizeof(int32_t));
    float32x4_t acc[TB][2];
    UNROLL for (int u = 0; u < T; u++) acc[u][0] = acc[u][1] = vdupq_n_f32(0);
    for (int64_t sb = 0; sb < nsb; sb++) {
        const int32_t *tb = tab + sb * ARM_T256 + h * 8;
        int32x4_t ia[TB][2];
        UNROLL for (int u = 0; u < T; u++) ia[u][0] = ia[u][1] = vdupq_n_s32(0);
        for (int s = 0; s < 16; s += G) {     /* one sub-block: G groups of 16 columns */
            int32x4_t is[TB][2];
            UNROLL for (int u = 0; u < T; u++) is[u][0] = is[u][1] = vdupq_n_s32(0);
            UNROLL for (int g = 0; g < G; g++) {
                int8x16_t a[TB];
                UNROLL for (int u = 0; u < T; u++) a[u] = vld1q_s8(p.q[u] + sb * 256 + (s + g) * 16);
                dot16(T, wq + (sb * 64 + (s + g) * 4) * 64 + h * 32, a, is);
            }
            const int32x4_t sc0 = vld1q_s32(tb + s * 32), sc1 = vld1q_s32(tb + s * 32 + 4);
            UNROLL for (int u = 0; u < T; u++) {
                ia[u][0] = vmlaq_s32(ia[u][0], is[u][0], sc0);
                ia[u][1] = vmlaq_s32(ia[u][1], is[u][1], sc1);
            }
        }
        const float32x4_t d0 = vld1q_f32((const float *)tb + 1024), d1 = vld1q_f32((const float *)tb + 1028);
        UNROLL for (int u = 0; u < T; u++) {
            const float sa = p.scale[u][sb];
            acc[u][0] = vfmaq_f32(acc[u][0], vcvtq_f32_s32(ia[u][0]), vmulq_n_f32(d0, sa));
            acc[u][1] = vfmaq_f32(acc[u][1], vcvtq_f32_s32(ia[u][1]), vmulq_n_f32(d1, sa));
            if (affine) {
                int32x4_t m0 = vdupq_n_s32(0), m1 = vdupq_n_s32(0);
                for (int s = 0; s < 16; s += G) {
                    const int32_t bs = G == 2 ? bsum[u][sb * 16 + s] + bsum[u][sb * 16 + s + 1] : bsum[u][sb * 16 + s];
                    m0 = vmlaq_n_s32(m0, vld1q_s32(tb + 512 + s * 32), bs);
                    m1 = vmlaq_n_s32(m1, vld1q_s32(tb + 512 + s * 32 + 4), bs);
                }
                const float32x4_t e0 = vld1q_f32((const float *)tb + 1056), e1 = vld1q_f32((const float *)tb + 1060);
                acc[u][0] = vfmsq_f32(acc[u][0], vcvtq_f32_s32(m0), vmulq_n_f32(e0, sa));
                acc[u][1] = vfmsq_f32(acc[u][1], vcvtq_f32_s32(m1), vmulq_n_f32(e1, sa));
            }
        }
    }
    UNROLL for (int u = 0; u < T; u++) {
        vst1q_f32(y + (size_t)u * j->w->n_out + h * 8, acc[u][0]);
        vst1q_f32(y + (size_t)u * j->w->n_out + h * 8 + 4, acc[u][1]);
    }
}

#define CASES(F, ...) \
    switch (nt) { \
    case 1: F(1, __VA_ARGS__); break; case 2: F(2, __VA_ARGS__); break; \
    case 3: F(3, __VA_ARGS__); break; default: F(4, __VA_ARGS__); break; }

void mm_chunk_dotprod(const mm_job *j, int64_t panel, int64_t t0, int64_t t1, void *ts) {
    const um_matmul_weights *w = j->w;
    if (t1 - t0 <= ARM_FEW) { mm_arm_rows(j, panel, t0, t1); return; }   /* few tokens: no panel */
    void *tab = ts;
    int8_t *wq = (int8_t *)ts + mm_arm_tables_bytes(w);
    mm_arm_panel(w, panel, false, tab, wq);
    const bool b32 = mm_arm_blk32(w->type), aff = mm_arm_affine(w->type), s32 = mm_arm_sub32(w->type);
    const int64_t nu = w->n_in / (b32 ? 32 : 256);
    int64_t n_blocks = (t1 - t0 + TB - 1) / TB;   /* even register blocks */
    int bs = (int)((t1 - t0 + n_blocks - 1) / n_blocks);
    for (int64_t t = t0; t < t1; t += bs) {
        int nt = (int)UM_MIN(bs, t1 - t);
        float *y = j->y + t * w->n_out + panel * UM_MATMUL_PANEL;
        for (int h = 0; h < 2; h++) {
            if (b32 && aff) { CASES(blk32, true, wq, tab, nu, j, t, h, y) }
            else if (b32) { CASES(blk32, false, wq, tab, nu, j, t, h, y) }
            else if (aff && s32) { CASES(blk256, true, 2, wq, tab, nu, j, t, h, y) }
            else if (aff) { CASES(blk256, true, 1, wq, tab, nu, j, t, h, y) }
            else if (s32) { CASES(blk256, false, 2, wq, tab, nu, j, t, h, y) }
            else { CASES(blk256, false, 1, wq, tab, nu, j, t, h, y) }
        }
    }
}
