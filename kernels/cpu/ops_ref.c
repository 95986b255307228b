/*
 * ops_ref: the scalar row kernels of the transformer ops, the reference every SIMD kernel
 * set is tested against, and ops_kern_ref, the kernel set built from them. Below the
 * dispatcher (ops.c) and the SIMD sets (arch/x86/ops_avx2.c, ops_avx512.c), which fall back on
 * ops_attn_block_ref for head sizes their vectors do not divide.
 */
#include "ops.h"

#include <math.h>
#include <string.h>

/* ------------------------------------------------------------------ scalar kernels */

void ops_add_ref(float *y, const float *a, const float *b, int64_t n) {
    for (int64_t i = 0; i < n; i++) y[i] = a[i] + b[i];
}

void ops_mul_ref(float *y, const float *a, const float *b, int64_t n) {
    for (int64_t i = 0; i < n; i++) y[i] = a[i] * b[i];
}

static void f16_to_f32_ref(const uint16_t *src, float *dst, int64_t n) {
    for (int64_t i = 0; i < n; i++) dst[i] = um_fp16_to_fp32(src[i]);
}

static void f32_to_f16_ref(const float *src, uint16_t *dst, int64_t n) {
    for (int64_t i = 0; i < n; i++) dst[i] = um_fp32_to_fp16(src[i]);
}

static void axpy_ref(float *y, float a, const float *x, int64_t n) {
    for (int64_t i = 0; i < n; i++) y[i] += a * x[i];
}

/* silu as ggml computes it: x / (1 + expf(-x)) in float. */
void ops_swiglu_ref(float *y, const float *gate, const float *up, int64_t n) {
    for (int64_t i = 0; i < n; i++) {
        float g = gate[i];
        y[i] = g / (1.0f + expf(-g)) * up[i];
    }
}

/* GELU's tanh form in double, rounded once (see ops.h for how ggml's F16 table differs), as
 * 0.5 (1 + tanh(u)) = 1 / (1 + e^(-2u)): the same function without the cancellation of
 * 1 + tanh(u) for u << 0 (in double that sum keeps only about 1e-16 absolute: gelu was more
 * than 2 ulp off below x = -5.8 and read 0 below x = -7.2, while the float result stays a
 * normal number down to x = -10.1). */
void ops_geglu_ref(float *y, const float *gate, const float *up, int64_t n) {
    const double c = 0.79788456080286535588;            /* sqrt(2/pi) */
    for (int64_t i = 0; i < n; i++) {
        double g = gate[i];
        y[i] = (float)(g / (1.0 + exp(-2.0 * c * (g + 0.044715 * g * g * g))) * up[i]);
    }
}

void ops_softcap_ref(float *x, int64_t n, float cap) {
    for (int64_t i = 0; i < n; i++) x[i] = (float)(cap * tanh((double)x[i] / cap));
}

/* As ggml_compute_forward_rms_norm_f32 then the weight multiply: the sum of squares in
 * double, scale = 1/sqrtf(mean + eps), y = (x * scale) * w. */
static void rmsnorm_row_ref(float *y, const float *x, const float *w, int n, float eps) {
    double sum = 0;
    for (int i = 0; i < n; i++) sum += (double)(x[i] * x[i]);
    float scale = 1.0f / sqrtf((float)(sum / n) + eps);
    if (w) for (int i = 0; i < n; i++) y[i] = (x[i] * scale) * w[i];
    else   for (int i = 0; i < n; i++) y[i] = x[i] * scale;
}

/* Max first, exponentials in float, their sum in double (as ggml's soft_max). */
double ops_exp_shift_ref(float *x, int64_t n, float shift) {
    double sum = 0;
    for (int64_t i = 0; i < n; i++) { x[i] = expf(x[i] - shift); sum += x[i]; }
    return sum;
}

static void softmax_row_ref(float *x, int n) {
    float mx = -INFINITY;
    for (int i = 0; i < n; i++) if (x[i] > mx) mx = x[i];
    if (mx == -INFINITY) { memset(x, 0, (size_t)n * sizeof *x); return; }
    float inv = (float)(1.0 / ops_exp_shift_ref(x, n, mx));
    for (int i = 0; i < n; i++) x[i] *= inv;
}

/* Both rotations use one fused multiply-add, rounding the x1 product first, exactly as
 * llama.cpp's compiled rotate_pairs (GCC contracts x0*c - x1*s into fma(x0, c, -(x1*s)));
 * so the reference and every kernel set match ggml_rope_ext bit for bit. */
static void rope_norm_ref(float *x, const float *cs, int n_dims) {
    for (int i = 0; i < n_dims; i += 2) {                /* cs: (cos, sin) per pair */
        float x0 = x[i], x1 = x[i + 1];
        float c = cs[i], s = cs[i + 1];
        x[i]     = fmaf(x0, c, -(x1 * s));
        x[i + 1] = fmaf(x0, s, x1 * c);
    }
}

static void rope_neox_ref(float *x, const float *cs, int n_dims) {
    int half = n_dims / 2;
    const float *c = cs, *s = cs + half;
    for (int i = 0; i < half; i++) {
        float x0 = x[i], x1 = x[i + half];
        x[i]        = fmaf(x0, c[i], -(x1 * s[i]));
        x[i + half] = fmaf(x0, s[i], x1 * c[i]);
    }
}

/* One key at a time with a running max m, running sum l and accumulator acc: the plain
 * online softmax, O(head_dim) memory per query. */
void ops_attn_block_ref(const um_attn_block *b) {
    const int hd = b->head_dim;
    float acc[UM_OPS_MAX_HEAD_DIM];
    for (int i = 0; i < b->n_q; i++) {
        const float *q = b->q + (int64_t)i * b->q_stride;
        float m = -INFINITY, l = 0;
        for (int d = 0; d < hd; d++) acc[d] = 0;
        for (int j = 0; j < b->n_kv; j++) {
            if (b->key_mask && !b->key_mask[j]) continue;
            const float *kj = b->k + (int64_t)j * b->kv_stride;
            const float *vj = b->v + (int64_t)j * b->kv_stride;
            float s = 0;
            for (int d = 0; d < hd; d++) s += q[d] * kj[d];
            s *= b->scale;
            if (s > m) {
                float corr = expf(m - s);           /* 0 on the first key (m = -inf) */
                for (int d = 0; d < hd; d++) acc[d] *= corr;
                l *= corr;
                m = s;
            }
            float p = expf(s - m);
            l += p;
            for (int d = 0; d < hd; d++) acc[d] += p * vj[d];
        }
        float *o = b->out + (int64_t)i * b->q_stride;
        float inv = l > 0 ? 1.0f / l : 0.0f;
        for (int d = 0; d < hd; d++) o[d] = acc[d] * inv;
    }
}

void ops_gemm_acc_ref(float *y, int64_t ldy, const float *a, int64_t lda,
                      const float *b, int64_t ldb, int n, int k, int m) {
    for (int i = 0; i < n; i++)
        for (int j = 0; j < m; j++) {
            float acc = y[i * ldy + j];
            for (int kk = 0; kk < k; kk++) acc = fmaf(a[i * lda + kk], b[kk * ldb + j], acc);
            y[i * ldy + j] = acc;
        }
}

/* BF16 pairs (ops_gemm_bf16_acc): the even value is the low half */
static inline float bf16_even(uint32_t u) { return um_bf16_to_fp32((uint16_t)u); }
static inline float bf16_odd(uint32_t u) { return um_bf16_to_fp32((uint16_t)(u >> 16)); }

static void gemm_bf16_ref(float *y, int64_t ldy, const uint32_t *a, int64_t lda, const uint32_t *bt, int n, int kp, int w) {
    for (int i = 0; i < n; i++)
        for (int j = 0; j < w; j++) {
            float acc = y[i * ldy + j];
            for (int p = 0; p < kp; p++) {
                const uint32_t av = a[i * lda + p], bv = bt[p * UM_GEMM_TILE_COLS + j];
                acc = fmaf(bf16_odd(av), bf16_odd(bv), acc);
                acc = fmaf(bf16_even(av), bf16_even(bv), acc);
            }
            y[i * ldy + j] = acc;
        }
}

void ops_gemm_bf16_acc_ref(float *y, int64_t ldy, const uint32_t *a, int64_t lda,
                           const uint32_t *b, int n, int kp, int m) {
    for (int j0 = 0; j0 < m; j0 += UM_GEMM_TILE_COLS)
        gemm_bf16_ref(y + j0, ldy, a, lda, b + (int64_t)(j0 / UM_GEMM_TILE_COLS) * kp * UM_GEMM_TILE_COLS, n, kp,
                      m - j0 < UM_GEMM_TILE_COLS ? m - j0 : UM_GEMM_TILE_COLS);
}

static void f32_to_bf16_ref(const float *x, uint16_t *y, int64_t n) {
    for (int64_t i = 0; i < n; i++) y[i] = ops_bf16_round(x[i]);
}

static void bf16_pack2_ref(uint32_t *dst, const float *even, const float *odd, int n) {
    for (int j = 0; j < n; j++) dst[j] = ops_bf16_round(even[j]) | (odd ? (uint32_t)ops_bf16_round(odd[j]) << 16 : 0u);
}

const um_ops_kern ops_kern_ref = {
    .add         = ops_add_ref,
    .mul         = ops_mul_ref,
    .swiglu      = ops_swiglu_ref,
    .geglu       = ops_geglu_ref,
    .axpy        = axpy_ref,
    .f16_to_f32  = f16_to_f32_ref,
    .f32_to_f16  = f32_to_f16_ref,
    .rmsnorm_row = rmsnorm_row_ref,
    .softmax_row = softmax_row_ref,
    .exp_shift   = ops_exp_shift_ref,
    .rope_norm   = rope_norm_ref,
    .rope_neox   = rope_neox_ref,
    .attn_block  = ops_attn_block_ref,
    .gemm_acc    = ops_gemm_acc_ref,
    .gemm_bf16   = gemm_bf16_ref,
    .bf16_pack2  = bf16_pack2_ref,
    .f32_to_bf16 = f32_to_bf16_ref,
};

