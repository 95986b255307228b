/*
 * gpu_pack: the host side of the CUDA backend that needs no GPU: how each weight type is
 * laid out in GPU memory, the repacking from GGUF blocks into that layout, how much GPU
 * memory a model needs, and the RoPE table. Plain C host code (gpu_pack.c), built in every
 * build, CUDA or not: the CUDA backend (gpu_backend.cu), the device checks and the CPU-only
 * unit tests (tests/test_gpu_host.c) all call the very same compiled functions.
 *
 * GPU weight layout of a matrix W (n_out, n_in), K = n_in rounded up to 32 (zero padded):
 *   GPU_KIND_I8  (every integer format): q int8 (n_out, K), scale float (n_out, K/G) and,
 *                for formats with a minimum (Q4_1, Q5_1, Q2_K, Q4_K, Q5_K), off float
 *                (n_out, K/G), with  w[r][i] = scale[r][i/G] * q[r][i] + off[r][i/G]
 *                exactly as the reference dequantizer computes it (same float products).
 *                G is the format's sub-block: 32 (Q4_0..Q8_0, Q4_K, Q5_K, IQ4_*) or
 *                16 (Q2_K, Q3_K, Q6_K). One byte per weight: 4/5-bit formats take about
 *                twice their file size on the GPU, except Q4_0, Q4_1 and Q4_K, whose
 *                values are stored as nibbles (gpu_layout_pack4) unless
 *                UNMASK_CUDA_PACK4=0.
 *   GPU_KIND_F16 / GPU_KIND_BF16: the file's 16-bit values (n_out, K), tensor-core mma.
 *   GPU_KIND_F32: float (n_out, K), SIMT kernel (routers, tiny test models).
 * Types with a reference dequantizer but no exact integer repacking here are dequantized
 * and requantized to int8 per 32 (absmax/127): lossy, flagged by gpu_layout.requant.
 */
#ifndef UM_GPU_PACK_H
#define UM_GPU_PACK_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "gpu_backend.h"

#ifdef __cplusplus
extern "C" {
#endif
#include "model.h"
#include "quant.h"
#include "util.h"

typedef enum gpu_kind { GPU_KIND_I8 = 0, GPU_KIND_F16, GPU_KIND_BF16, GPU_KIND_F32, GPU_KIND_NONE } gpu_kind;

typedef struct gpu_layout {
    gpu_kind kind;
    int      group;             /* G: weights per scale (I8 only) */
    bool     has_off;           /* I8: per-group additive offset present */
    bool     requant;           /* I8: lossy requantization (no exact repacking for this type) */
    bool     pack4_ok;          /* I8 values fit 4 bits: q + bias4 in 0..15 (Q4_0, Q4_1, Q4_K) */
    bool     pack4;             /* stored as nibbles (gpu_layout_pack4): half a byte per weight */
    int      bias4;             /* nibble = q + bias4 */
    int64_t  k_pad;             /* K: n_in rounded up to 32 */
    uint64_t bytes_w;           /* q or 16/32-bit values: n_out * K * elem */
    uint64_t bytes_scale;       /* n_out * K/G floats (I8) */
    uint64_t bytes_off;         /* n_out * K/G floats when has_off */
} gpu_layout;

static inline int64_t gpu_round_up(int64_t n, int64_t m) { return (n + m - 1) / m * m; }

/* Layout of a (n_out, n_in) matrix of type t; kind GPU_KIND_NONE when the type is not computable. */
gpu_layout gpu_layout_for(uint32_t t, int64_t n_in, int64_t n_out);

uint64_t gpu_layout_bytes(const gpu_layout *L);

/* Switch a 4-bit format to the nibble layout: per 32 values 16 bytes, byte j holding value
 * j + bias4 (low nibble) and value j + 16 + bias4 (high nibble); the GEMM expands them to
 * int8 while staging a tile. No-op for other layouts. */
void gpu_layout_pack4(gpu_layout *L, int64_t n_out);

/* int8 row q (k_pad) -> nibbles (k_pad / 2), and back. */
void gpu_nibble_pack(const int8_t *q, int64_t k_pad, int bias, uint8_t *out);
void gpu_nibble_unpack(const uint8_t *in, int64_t k_pad, int bias, int8_t *q);

/* ------------------------------------------------------------------ repacking one row
 * q: (K) int8, scale/off: (K/G) floats; src: one row of n_in elements in the file's type.
 * tmp: n_in floats of scratch (used by the requantizing fallback only). */

/* The fallback for types without an exact repacking: dequantize, then int8 per 32. */
void gpu_requant_row(const float *x, int64_t n_in, int64_t k_pad, int8_t *q, float *scale);

/* Repack one row of any computable quantized type (I8 kind). */
void gpu_pack_row(uint32_t t, const gpu_layout *L, const void *src, int64_t n_in,
                  int8_t *q, float *scale, float *off, float *tmp);

/* F32/F16/BF16 rows: copied, zero padded to K. dst: K elements of the kind's size. */
void gpu_pack_row_float(uint32_t t, const void *src, int64_t n_in, int64_t k_pad, void *dst);

/* What the packed row means, for tests: w[i] = scale[i/G] * q[i] + off[i/G]. */
void gpu_unpack_row_ref(const gpu_layout *L, const int8_t *q, const float *scale,
                        const float *off, int64_t n_in, float *w);

/* ------------------------------------------------------------------ int8 GEMM arithmetic
 * The host definition of what the int8 GEMM computes, used as the tight reference for the
 * kernel (tests/gpu) and checked against plain dequantized dot products (unit tests). */

/* Activations, as k_quantize_act: per 32 values d = amax/127, q = round(x/d); sums per 16.
 * x: (K) floats; q: (k_pad); d: (k_pad/32); sum16: (k_pad/16). */
void gpu_quantize_act_ref(const float *x, int64_t K, int64_t k_pad, int8_t *q, float *d, int *sum16);

/* One output of the int8 GEMM: weight row (q, scale, off) against one quantized activation
 * row, group by group: integer dot, then float scaling (and the offset term). */
float gpu_i8_dot_ref(const gpu_layout *L, const int8_t *wq, const float *wscale, const float *woff,
                     const int8_t *aq, const float *ad, const int *asum);

/* ------------------------------------------------------------------ memory plan */

typedef struct gpu_dims {
    int64_t T;                  /* max canvas tokens */
    int64_t E, NQ, NKV, F, KU, X, V, HD, n_rot;
    int64_t kmax;               /* largest padded GEMM input width */
    int64_t rows_ff;            /* T * KU: FFN rows (grouped expert rows for MoE) */
} gpu_dims;

gpu_dims gpu_dims_for(const um_model *m, int64_t T);

/* Device bytes of the activation buffers for canvases of up to T tokens (every buffer the
 * backend allocates in gpu_backend.cu's alloc_acts, in the same order). */
uint64_t gpu_activation_bytes(const gpu_dims *d);

/* Floats of the per-layer vectors (norms, biases) the backend uploads: an upper bound
 * (absent biases counted). */
uint64_t gpu_vec_floats(const um_model *m);

/* Device bytes of every weight in its GPU layout plus the float vectors; fails (returns
 * false, e filled) on a weight type the GPU cannot compute with. */
bool gpu_weight_plan(const um_model *m, bool pack4, uint64_t *bytes, um_err *e);

/* ------------------------------------------------------------------ RoPE table
 * cos/sin (T, n_dims/2) computed exactly as ops.c's rope_table (float, theta_{i+1} =
 * theta_i * powf(base, -2/n_dims)), so the GPU rotation uses the CPU's angles bit for bit. */
void gpu_rope_table(float freq_base, float freq_scale, int n_dims, int64_t T, float *cos_t, float *sin_t);

/* ------------------------------------------------------------------ GEMM tiling
 * The integer and half GEMMs cover (n_out, n_tok) with 64 x 64 tiles, 4 warps of 32 x 32. */
#define GPU_GEMM_BM 64
#define GPU_GEMM_BN 64
#define GPU_GEMM_THREADS 128

static inline void gpu_gemm_grid(int64_t n_out, int64_t n_tok, int *gx, int *gy) {
    *gx = (int)((n_out + GPU_GEMM_BM - 1) / GPU_GEMM_BM);
    *gy = (int)((n_tok + GPU_GEMM_BN - 1) / GPU_GEMM_BN);
}

/* Attention tiles: QT queries per block, KT keys per step; dynamic shared memory bytes. */
#define GPU_ATT_QT 16
#define GPU_ATT_KT 16
static inline size_t gpu_attention_smem(int head_dim) {
    /* Q (QT, HD), K (KT, HD+1), V (KT, HD), O (QT, HD), S (QT, KT), m/l/alpha (QT) */
    return sizeof(float) * ((size_t)GPU_ATT_QT * head_dim * 2 + (size_t)GPU_ATT_KT * (head_dim + 1) +
                            (size_t)GPU_ATT_KT * head_dim + GPU_ATT_QT * GPU_ATT_KT + 3 * GPU_ATT_QT);
}

#ifdef __cplusplus
}
#endif
#endif
