/*
 * arm_shared_dotprod: the AArch64 few-token path (SDOT; part of the arch/arm shared layer, used by
 * the dotprod and i8mm kernels, both of which run only where FEAT_DotProd is present).
 *
 * A chunk of at most ARM_FEW tokens (an expert with few rows, a short canvas) would spend
 * most of its time building the decoded panel (16 x n_in level bytes scattered into the
 * kernel order) for one register block. Here each row is decoded block by block into a
 * stack buffer (mm_arm_levels32/256) and dotted with each token at once: vdotq_s32 over 16
 * columns, vaddvq_s32 for the block's (or sub-block's) sum.
 *
 * The results are bit-identical to the panel kernels': the integer sums are exact in any
 * order, and the f32 operations are the same ones in the same order (per block
 * acc + float(sum) * (d * s), the min term acc + m * (s * sum) or acc - float(mins) *
 * (dmin * s), each one fused multiply-add), so a token's outputs do not depend on which
 * chunk it fell in (tests/test_matmul.c checks with memcmp).
 */
#include <arm_neon.h>
#include <math.h>

#include "matmul_arm.h"

void mm_arm_rows(const mm_job *j, int64_t panel, int64_t t0, int64_t t1) {
    const um_matmul_weights *w = j->w;
    const int nt = (int)(t1 - t0);
    const uint32_t bytes = um_type_bytes(w->type);
    const bool b32 = mm_arm_blk32(w->type), aff = mm_arm_affine(w->type);
    const int g = mm_arm_sub32(w->type) ? 2 : 1;
    const int64_t nu = w->n_in / (b32 ? 32 : 256);
    const int8_t *aq[ARM_FEW];
    const float *as[ARM_FEW];
    const int32_t *corr[ARM_FEW];
    const int16_t *bsum[ARM_FEW];
    for (int u = 0; u < nt; u++) {
        const uint8_t *a = j->act + (size_t)(t0 + u) * j->act_stride;
        aq[u] = (const int8_t *)a;
        as[u] = (const float *)(a + j->off_scale);
        corr[u] = (const int32_t *)(a + j->off_corr);
        bsum[u] = (const int16_t *)(a + j->off_corr + (size_t)(w->n_in / 16) * sizeof(int32_t));
    }
    int8_t q[256];
    for (int r = 0; r < UM_MATMUL_PANEL; r++) {
        const int64_t row_i = panel * UM_MATMUL_PANEL + r;
        const uint8_t *row = (const uint8_t *)w->data + (size_t)row_i * w->row_bytes;
        float acc[ARM_FEW] = { 0 };
        for (int64_t b = 0; b < nu; b++) {
            if (b32) {
                float d, m;
                mm_arm_levels32(w->type, row + b * bytes, q, &d, &m);
                const int8x16_t w0 = vld1q_s8(q), w1 = vld1q_s8(q + 16);
                for (int u = 0; u < nt; u++) {
                    const int8_t *a = aq[u] + b * 32;
                    int32_t s = vaddvq_s32(vdotq_s32(vdotq_s32(vdupq_n_s32(0), w0, vld1q_s8(a)), w1, vld1q_s8(a + 16)));
                    acc[u] = fmaf((float)s, d * as[u][b], acc[u]);
                    if (aff) acc[u] = fmaf(m, as[u][b] * (float)(corr[u][b] / -128), acc[u]);
                }
            } else {
                int32_t sc[16], mn[16];
                float d, dmin;
                mm_arm_levels256(w->type, row + b * bytes, q, sc, mn, &d, &dmin);
                for (int u = 0; u < nt; u++) {
                    const int8_t *a = aq[u] + b * 256;
                    int32_t ia = 0;
                    for (int s = 0; s < 16; s += g)      /* one sub-block of g x 16 columns */
                        ia += vaddvq_s32(g == 2 ? vdotq_s32(vdotq_s32(vdupq_n_s32(0), vld1q_s8(q + s * 16), vld1q_s8(a + s * 16)),
                                                            vld1q_s8(q + s * 16 + 16), vld1q_s8(a + s * 16 + 16))
                                                : vdotq_s32(vdupq_n_s32(0), vld1q_s8(q + s * 16), vld1q_s8(a + s * 16))) * sc[s];
                    acc[u] = fmaf((float)ia, d * as[u][b], acc[u]);
                    if (aff) {
                        int32_t ms = 0;
                        for (int s = 0; s < 16; s++) ms += mn[s] * bsum[u][b * 16 + s];   /* exact: any grouping */
                        acc[u] = fmaf(-(float)ms, dmin * as[u][b], acc[u]);
                    }
                }
            }
        }
        for (int u = 0; u < nt; u++) j->y[(t0 + u) * w->n_out + row_i] = acc[u];
    }
}
