/*
 * matmul_neon: the AArch64 float-tile kernel (Advanced SIMD, present on every AArch64 CPU).
 * Every format: a panel of 16 rows x 256 columns is decoded to f32 once (quant.c's reference
 * dequantizers, mm_decode_rows_ref), transposed to (256, 16), and multiplied with f32
 * activations by FMA, a register block of up to 6 tokens x 16 rows (24 accumulators).
 * It is the "neon" kernel on CPUs without the dot-product extension, and the dispatcher
 * (matmul.c chunk_for) sends it what the dotprod/i8mm kernels do not take: F32/F16/BF16,
 * formats without an integer path, a partial last panel.
 */
#include <arm_neon.h>
#include <string.h>

#include "matmul_impl.h"

#define AI static inline __attribute__((always_inline))
#define UNROLL _Pragma("GCC unroll 16")
#define TF 6                     /* tokens per register block */

/* y[u][0..n_rows) (+)= sum_k x[u][k] * wt[k][r] for T tokens; wt (kc, 16). */
AI void float_block(const int T, const float *wt, int64_t kc, const float *x, int64_t xs,
                    float *y, int64_t ys, int n_rows, bool add) {
    float32x4_t a[TF][4];
    UNROLL for (int u = 0; u < T; u++) UNROLL for (int i = 0; i < 4; i++) a[u][i] = vdupq_n_f32(0);
    for (int64_t k = 0; k < kc; k++) {
        float32x4_t w0 = vld1q_f32(wt + k * 16), w1 = vld1q_f32(wt + k * 16 + 4);
        float32x4_t w2 = vld1q_f32(wt + k * 16 + 8), w3 = vld1q_f32(wt + k * 16 + 12);
        UNROLL for (int u = 0; u < T; u++) {
            float xv = x[u * xs + k];
            a[u][0] = vfmaq_n_f32(a[u][0], w0, xv);
            a[u][1] = vfmaq_n_f32(a[u][1], w1, xv);
            a[u][2] = vfmaq_n_f32(a[u][2], w2, xv);
            a[u][3] = vfmaq_n_f32(a[u][3], w3, xv);
        }
    }
    UNROLL for (int u = 0; u < T; u++) {
        float o[16];
        UNROLL for (int i = 0; i < 4; i++) vst1q_f32(o + 4 * i, a[u][i]);
        float *yr = y + u * ys;
        for (int r = 0; r < n_rows; r++) yr[r] = add ? yr[r] + o[r] : o[r];
    }
}

void mm_chunk_neon(const mm_job *j, int64_t panel, int64_t t0, int64_t t1, void *ts) {
    const um_matmul_weights *w = j->w;
    int64_t row0 = panel * UM_MATMUL_PANEL;
    int n_rows = (int)UM_MIN(UM_MATMUL_PANEL, w->n_out - row0);
    float *rows = ts, *wt = (float *)ts + UM_MATMUL_PANEL * MM_KC;
    for (int64_t k0 = 0; k0 < w->n_in; k0 += MM_KC) {
        int64_t kc = UM_MIN(MM_KC, w->n_in - k0);
        mm_decode_rows_ref(w, row0, n_rows, k0, kc, rows);
        for (int64_t k = 0; k < kc; k++)
            for (int r = 0; r < UM_MATMUL_PANEL; r++) wt[k * 16 + r] = rows[r * MM_KC + k];
        int64_t n_blocks = (t1 - t0 + TF - 1) / TF;   /* even register blocks */
        int bs = (int)((t1 - t0 + n_blocks - 1) / n_blocks);
        for (int64_t t = t0; t < t1; t += bs) {
            int nt = (int)UM_MIN(bs, t1 - t);
            const float *x = j->x + t * w->n_in + k0;
            float *y = j->y + t * w->n_out + row0;
            int64_t xs = w->n_in, ys = w->n_out;
            bool add = k0 > 0;
            switch (nt) {
            case 1: float_block(1, wt, kc, x, xs, y, ys, n_rows, add); break;
            case 2: float_block(2, wt, kc, x, xs, y, ys, n_rows, add); break;
            case 3: float_block(3, wt, kc, x, xs, y, ys, n_rows, add); break;
            case 4: float_block(4, wt, kc, x, xs, y, ys, n_rows, add); break;
            case 5: float_block(5, wt, kc, x, xs, y, ys, n_rows, add); break;
            default: float_block(6, wt, kc, x, xs, y, ys, n_rows, add); break;
            }
        }
    }
}
