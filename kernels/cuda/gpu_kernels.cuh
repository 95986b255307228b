/*
 * gpu_kernels: the CUDA kernels of the backend, each behind a host launcher that only
 * enqueues work on a stream (no synchronisation, no allocation) and returns the launch
 * error. Activations are float32 row-major, tokens as rows, exactly as on the CPU
 * (forward.c); weights are in the GPU layouts of gpu_pack.h. Every kernel has a CPU
 * reference it is compared with in tests/gpu/kernel_check.cu.
 */
#ifndef UM_GPU_KERNELS_CUH
#define UM_GPU_KERNELS_CUH

#include <cuda_runtime.h>
#include <stdint.h>

/* A weight matrix in GPU memory (layout: gpu_pack.h). */
typedef struct gpu_mat {
    int      kind;              /* gpu_kind */
    int      group;             /* I8: weights per scale (16 or 32) */
    int      has_off;           /* I8: off present */
    int      n_in, n_out, k_pad;
    int      pack4, bias4;      /* I8 stored as nibbles (n_out, k_pad/2), value = nibble - bias4 */
    void    *w;                 /* (n_out, k_pad): int8, f16/bf16 bits or float */
    float   *scale, *off;       /* I8: (n_out, k_pad/group) */
    long long w_stride;         /* a stack of experts: bytes from one matrix's w to the next */
    long long s_stride;         /*                     floats from one's scale/off to the next */
} gpu_mat;

/* An activation matrix (n, K floats, row stride K) prepared for the GEMMs: int8 per 32
 * with float scales and int 16-sums (every I8 weight), and f16 / bf16 copies; each part
 * filled only when a consumer needs it. Buffers sized (rows, kmax). */
typedef struct gpu_act {
    const float *x;             /* (n, K) source */
    int          n, K, k_pad;
    int8_t      *q;             /* (n, k_pad) */
    float       *d;             /* (n, k_pad/32) */
    int         *sum16;         /* (n, k_pad/16) sums of q per 16 */
    uint16_t    *h;             /* (n, k_pad) f16 or bf16 bits */
    int          h_kind;        /* gpu_kind held in h, or GPU_KIND_NONE (-1 before any) */
    int          q_ready;       /* q/d/sum16 hold x quantized */
} gpu_act;
/* The buffers are shared: preparing one gpu_act invalidates every other. */

/* Fill a->q/d/sum16 (int8) from a->x. */
cudaError_t gpu_quantize_act(gpu_act *a, cudaStream_t st);
/* Fill a->h with f16 (kind GPU_KIND_F16) or bf16 (GPU_KIND_BF16) copies of a->x. */
cudaError_t gpu_convert_act(gpu_act *a, int kind, cudaStream_t st);

/* y (n_tok, ldy) [+]= x W^T (+ bias): y[t][r] for r < n_out. The activation must already be
 * prepared for W's kind (quantized for I8, converted for F16/BF16; F32 reads a->x).
 * accumulate: add onto y (residual), else overwrite. */
cudaError_t gpu_gemm(const gpu_mat *W, const gpu_act *a, float *y, int ldy, const float *bias,
                     int accumulate, cudaStream_t st);

/* The MoE expert GEMM in one launch: W is the first of n_group equal I8 matrices spaced by
 * W->w_stride / W->s_stride; expert e multiplies rows [offs[e], offs[e+1]) of the
 * prepared activation into the same rows of y (offs: device, n_group + 1 ascending ints;
 * max_rows: the largest group). cudaErrorNotSupported for non-I8 kinds (run per expert). */
cudaError_t gpu_gemm_grouped(const gpu_mat *W, int n_group, const int *offs, int max_rows, const gpu_act *a, float *y,
                             int ldy, cudaStream_t st);

/* RMSNorm of n_rows rows of n floats: y = x / sqrt(mean(x^2) + eps) * w (w may be NULL). */
cudaError_t gpu_rmsnorm(float *y, const float *x, const float *w, int n_rows, int n, float eps, cudaStream_t st);
/* RoPE in place on x (n_tok, n_head, head_dim) at positions pos (n_tok, device ints),
 * angles from the table cos_t/sin_t (positions, n_dims/2); neox: rotate halves. */
cudaError_t gpu_rope(float *x, const int *pos, int n_tok, int n_head, int head_dim, int n_dims, int neox,
                     const float *cos_t, const float *sin_t, cudaStream_t st);
/* Bidirectional attention with GQA, flash-style (online softmax over key tiles):
 * q (n_q, n_head, hd), k/v (n_kv, n_head_kv, hd) -> out (n_q, n_head, hd). hd <= 256. */
cudaError_t gpu_attention(float *out, const float *q, const float *k, const float *v, int n_q, int n_kv,
                          int n_head, int n_head_kv, int head_dim, cudaStream_t st);
/* y = silu(g) * u, n elements (y may alias g or u). */
cudaError_t gpu_swiglu(float *y, const float *g, const float *u, int64_t n, cudaStream_t st);
/* dst[i,:] = src[rows[i],:], width floats per row; rows: device ints. */
cudaError_t gpu_gather_rows(float *dst, const float *src, const int *rows, int n_rows, int width, cudaStream_t st);
/* out[t,:] += sum_j w[t,j] * y[slot[t,j],:] (j in order), t < n_tok, j < k. */
cudaError_t gpu_moe_combine(float *out, const float *y, const float *w, const int *slot, int n_tok, int k,
                            int width, cudaStream_t st);
/* Per-row statistics over the vocabulary (the fused snapshot reduction): for each row of
 * logits (n_rows, n_vocab): argmax, its softmax probability, the second largest
 * probability, the entropy (nats) of softmax(logits / temp), and the k best token ids with
 * their probabilities in rank order (top_id, top_p: (n_rows, k); id -1 past the vocabulary). */
cudaError_t gpu_row_stats(const float *logits, int n_rows, int n_vocab, float temp, int *argmax, float *p_max,
                          float *p_second, float *entropy, int k, int *top_id, float *top_p, cudaStream_t st);

/* K/V cache storage (the partial passes of backend.h): a position's K (or V) row of width
 * floats stored as F32, F16 (round to nearest even) or Q8_0 (quant.c's reference
 * quantizer: per 32 values d = amax / 127 kept as f16, q = round(x / d), half away from
 * zero; 34 bytes per 32). Rows are contiguous, gpu_kv_row_bytes apart. */
enum { GPU_KV_F32 = 0, GPU_KV_F16 = 1, GPU_KV_Q8_0 = 2 };
static inline unsigned long long gpu_kv_row_bytes(int kind, int width) {
    return kind == GPU_KV_F32 ? 4ull * width : kind == GPU_KV_F16 ? 2ull * width : 34ull * (width / 32);
}
/* dst (n_rows stored rows) = x (n_rows, width); Q8_0 needs width % 32 == 0. */
cudaError_t gpu_kv_store(void *dst, const float *x, int n_rows, int width, int kind, cudaStream_t st);
/* y (n_rows, width) = the stored rows src, dequantized (bit-exact with quant.c's reference). */
cudaError_t gpu_kv_load(float *y, const void *src, int n_rows, int width, int kind, cudaStream_t st);
/* dst[rows[i],:] = src[i,:], width floats per row; rows: device ints, distinct. */
cudaError_t gpu_scatter_rows(float *dst, const float *src, const int *rows, int n_rows, int width, cudaStream_t st);
/* out[i] = |fresh[i,:] - base[rows[i],:]| / |base[rows[i],:]| (Euclidean norms; 0 when the
 * base row is zero): how far a recomputed K row moved from its cached one. */
cudaError_t gpu_row_drift(float *out, const float *fresh, const float *base, const int *rows, int n_rows, int width,
                          cudaStream_t st);

/* Opt the attention kernel into the shared memory it needs for head_dim (once per device). */
cudaError_t gpu_kernels_init(int head_dim);

#endif
