/*
 * ops: the transformer operations other than matmul, on float32 row-major activations.
 *
 * Every op has a plain scalar reference ops_<name>_ref (single-threaded, always compiled,
 * the definition of the result) and a dispatched ops_<name> that runs the fastest kernel
 * set the CPU allows (AVX-512, AVX2, NEON on AArch64, or the scalar kernels), threaded over rows with the
 * pool where that pays. A NULL pool means "the caller's thread only".
 *
 * Invariants: no op allocates memory (scratch lives on the stack, bounded by the
 * UM_OPS_MAX_* limits below); output buffers may alias inputs exactly where a comment
 * says so; results do not depend on the number of threads (each row, head or token is
 * computed by one thread in a fixed order).
 *
 * Kernel choice: the first call picks the best set from cpu_features(); the environment
 * variable UNMASK_KERNEL=ref|avx2|avx512|neon overrides it (amx counts as avx512 here,
 * dotprod and i8mm, the AArch64 matmul kernels, as neon); ops_select() forces one (tests
 * use it to run every path).
 */
#ifndef UM_OPS_H
#define UM_OPS_H

#include <stdbool.h>
#include <stdint.h>

#include "pool.h"
#include "quant.h"
#include "util.h"

#define UM_OPS_MAX_HEAD_DIM 512     /* attention and RoPE scratch is sized for this (Gemma 4 global layers: 512) */

/* ------------------------------------------------------------------ kernel sets */

typedef enum um_ops_isa {
    UM_OPS_REF = 0,
    UM_OPS_AVX2,
    UM_OPS_AVX512,
    UM_OPS_NEON,                                   /* AArch64 Advanced SIMD (arch/arm/ops_neon.c) */
    UM_OPS_ISA_COUNT
} um_ops_isa;

const char *ops_isa_name(um_ops_isa isa);          /* "ref", "avx2", "avx512", "neon" */
bool        ops_isa_available(um_ops_isa isa);     /* compiled in and supported by this CPU */
um_ops_isa  ops_isa_best(void);                    /* the fastest available set (UNMASK_KERNEL aside) */
int         ops_select(um_ops_isa isa, um_err *e); /* force a set; fails if unavailable */
um_ops_isa  ops_active(void);                      /* the set ops_* use now */

/* ------------------------------------------------------------------ elementwise
 * n elements; y may alias a or b. */
void ops_add(um_pool *pool, float *y, const float *a, const float *b, int64_t n);    /* y = a + b */
void ops_mul(um_pool *pool, float *y, const float *a, const float *b, int64_t n);    /* y = a * b */
/* y = silu(gate) * up, silu(x) = x / (1 + exp(-x)); y may alias gate or up. */
void ops_swiglu(um_pool *pool, float *y, const float *gate, const float *up, int64_t n);

/* y[r,:] = x[r,:] + bias[:] for each of n_rows rows of n; y may alias x (QKV biases). */
void ops_add_bias(um_pool *pool, float *y, const float *x, const float *bias, int64_t n_rows, int n);

/* F16 rows <-> f32 (the K/V cache): dst[i] = src[i] converted, round to nearest even towards
 * F16; the same values as util's um_fp16_to_fp32 / um_fp32_to_fp16 (F16C on the SIMD sets;
 * a NaN stays a NaN, its payload may differ). No pool: called per row by threaded code. */
void ops_f16_to_f32(const uint16_t *src, float *dst, int64_t n);
void ops_f32_to_f16(const float *src, uint16_t *dst, int64_t n);

void ops_add_ref(float *y, const float *a, const float *b, int64_t n);
void ops_add_bias_ref(float *y, const float *x, const float *bias, int64_t n_rows, int n);
void ops_mul_ref(float *y, const float *a, const float *b, int64_t n);
void ops_swiglu_ref(float *y, const float *gate, const float *up, int64_t n);

/* y = gelu(gate) * up with GELU's tanh form (PyTorch's gelu "tanh", ggml_gelu, Gemma's
 * gelu_pytorch_tanh): gelu(x) = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), in double
 * rounded once. ggml's CPU path looks gelu up in an F16 table instead (vec.h GGML_GELU_FP16:
 * x rounded to F16, result rounded to F16, x <= -10 -> 0, x >= 10 -> x), about 1e-3 relative
 * apart; unmask computes the function itself. y may alias gate or up. The SIMD sets agree with
 * the reference to 16 ulp relative (tests/test_ops.c, TOL_EXP) over the whole float range. */
void ops_geglu(um_pool *pool, float *y, const float *gate, const float *up, int64_t n);
void ops_geglu_ref(float *y, const float *gate, const float *up, int64_t n);

/* Logit soft-cap in place: x = cap * tanh(x / cap) (Gemma's final_logit_softcapping, as
 * llama.cpp's scale, tanh, scale). cap > 0. The reference rounds the double tanh once; the
 * SIMD sets take tanh in float as Cephes' tanhf does (an odd polynomial below |t| = 0.625,
 * else 1 - 2 / (e^2|t| + 1)), within 16 ulp relative of it (tests/test_ops_dgemma.c); NaN stays NaN. */
void ops_softcap(um_pool *pool, float *x, int64_t n, float cap);
void ops_softcap_ref(float *x, int64_t n, float cap);

/* ------------------------------------------------------------------ small GEMM
 * y (n, m) += a (n, k) b (k, m): row-major, leading dimensions ldy, lda, ldb in floats.
 * Each y element is one chain of fused multiply-adds in k order from its old value,
 * y = fma(a[i,k-1], b[k-1,j], ... fma(a[i,0], b[0,j], y)), so every kernel set gives the
 * reference's bits (C's fmaf). Threads take 64-column tiles. y must not overlap a or b.
 * (DiffusionGemma's exact self-conditioning: probabilities times a dequantized chunk of the
 * embedding, accumulated chunk after chunk in vocabulary order.) */
#define UM_GEMM_TILE_COLS 64
void ops_gemm_acc(um_pool *pool, float *y, int64_t ldy, const float *a, int64_t lda,
                  const float *b, int64_t ldb, int n, int k, int m);
void ops_gemm_acc_ref(float *y, int64_t ldy, const float *a, int64_t lda,
                      const float *b, int64_t ldb, int n, int k, int m);

/* ------------------------------------------------------------------ BF16 pair GEMM
 * y (n, m) += a (n, k) b (k, m) with a and b rounded to BF16 and k taken in pairs: for each
 * pair p, y = fma(a[2p], b[2p], fma(a[2p+1], b[2p+1], y)) in float. Both products are exact
 * (8-bit mantissas), so this is AVX-512 BF16's vdpbf16ps, which adds the odd product and
 * then the even one, each sum rounded to nearest even (checked bit for bit on this project's
 * Zen 4: docs/ops.md), as long as nothing falls below the float normal range, where the
 * instruction flushes; ops_bf16_round keeps every nonzero value at or above UM_BF16_FLUSH, so
 * every product and every partial sum is a multiple of 2^-123 and normal. Sets without the
 * instruction form the same chain with FMAs: every set gives the reference's bits, at twice
 * the float rate where the instruction exists. (DiffusionGemma's self-conditioning product in
 * BF16, --self-cond-product bf16.)
 *
 * a: (n, kp) pairs of BF16 as uint32 (the even k in the low half), lda in pairs; y's values
 * zero or at least 2^-100 in magnitude. b: packed by ops_bf16_pack_b into 64-column tiles,
 * tile t holding kp rows of 64 pairs at b + t kp 64 (columns past m zero); m columns of y are
 * written, threads take tiles. Inputs finite. */
#define UM_BF16_FLUSH 0x1p-50f
static inline uint16_t ops_bf16_round(float x) {    /* um_fp32_to_bf16; |x| < UM_BF16_FLUSH: 0 */
    union { float f; uint32_t u; } v = { x };
    return (v.u & 0x7FFFFFFFu) < 0x26800000u ? 0 : um_fp32_to_bf16(x);      /* 0x26800000: 0x1p-50f */
}
/* Pairs of adjacent values: y[i] = bf16(x[2i]) | bf16(x[2i + 1]) << 16, n_pairs of them
 * (x holds 2 n_pairs floats). */
void ops_bf16_pairs(uint32_t *y, const float *x, int64_t n_pairs);
/* Rows 2p and 2p + 1 of b (m floats each; odd NULL: a zero row) into the tiles at pair row p. */
void ops_bf16_pack_b(uint32_t *b, int kp, int p, const float *even, const float *odd, int m);
void ops_gemm_bf16_acc(um_pool *pool, float *y, int64_t ldy, const uint32_t *a, int64_t lda,
                       const uint32_t *b, int n, int kp, int m);
void ops_gemm_bf16_acc_ref(float *y, int64_t ldy, const uint32_t *a, int64_t lda,
                           const uint32_t *b, int n, int kp, int m);
/* Whether ops_gemm_bf16_acc uses the BF16 dot-product instruction (AVX-512 BF16) on this CPU
 * and kernel set; ops_bf16_dot_allow(false) makes it form the same chain with FMAs (tests). */
bool ops_bf16_dot(void);
void ops_bf16_dot_allow(bool allow);

/* ------------------------------------------------------------------ row-wise
 * RMSNorm: y[r,:] = x[r,:] / sqrt(mean(x[r,:]^2) + eps) * w[:].
 * x, y: (n_rows, n); w: (n) or NULL for no weight; y may alias x. For per-head QK-norm
 * pass n_rows = n_tokens * n_head, n = head_dim. */
void ops_rmsnorm(um_pool *pool, float *y, const float *x, const float *w,
                 int64_t n_rows, int n, float eps);
void ops_rmsnorm_ref(float *y, const float *x, const float *w, int64_t n_rows, int n, float eps);

/* Softmax of each row in place, numerically stable (max subtracted first).
 * x: (n_rows, n). A row of all -inf becomes all 0. */
void ops_softmax(um_pool *pool, float *x, int64_t n_rows, int n);
void ops_softmax_ref(float *x, int64_t n_rows, int n);

/* ------------------------------------------------------------------ RoPE
 * Rotary position embedding as llama.cpp's ggml_rope_ext with ext_factor 0 and
 * attn_factor 1. Pair i (0 <= i < n_dims/2) of every head rotates by
 *   theta_i = freq_scale * pos * freq_base^(-2i/n_dims) / freq_factors[i] (1 without factors),
 * computed as llama.cpp does: in float, theta_0 = pos, theta_{i+1} = theta_i * s with
 * s = powf(freq_base, -2/n_dims), then cosf/sinf of freq_scale * theta_i.
 * UM_ROPE_NORM rotates adjacent pairs (x[2i], x[2i+1]) (LLaMA, LLaDA);
 * UM_ROPE_NEOX rotates halves (x[i], x[i + n_dims/2]) (Qwen, Dream, OLMoE).
 * Dimensions n_dims .. head_dim-1 pass through unchanged (partial rotary). */
typedef enum um_rope_mode { UM_ROPE_NORM = 0, UM_ROPE_NEOX = 2 } um_rope_mode;  /* llama.cpp's values */

typedef struct um_rope {
    um_rope_mode mode;
    int          head_dim;          /* elements per head, even, <= UM_OPS_MAX_HEAD_DIM */
    int          n_dims;            /* rotated dims: even, 2 <= n_dims <= head_dim */
    float        freq_base;         /* e.g. 500000 (LLaDA), 1e6 (Dream) */
    float        freq_scale;        /* 1 unless the context is linearly scaled */
    const float *freq_factors;      /* (n_dims/2) divisors of each pair's angle, or NULL: llama.cpp's
                                       rope_freqs (ggml_rope_ext's c argument); Gemma 4's global layers
                                       use 1 for rotated pairs and 1e30 for pass-through pairs */
} um_rope;

/* Rotate q (n_tokens, n_head, head_dim) and, if k is not NULL, k (n_tokens, n_head_kv,
 * head_dim), in place; pos: (n_tokens) positions. Fails on inconsistent parameters. */
int ops_rope(um_pool *pool, const um_rope *r, const int32_t *pos, int n_tokens,
             float *q, int n_head, float *k, int n_head_kv, um_err *e);
int ops_rope_ref(const um_rope *r, const int32_t *pos, int n_tokens,
                 float *q, int n_head, float *k, int n_head_kv, um_err *e);

/* ------------------------------------------------------------------ attention
 * Bidirectional (non-causal) scaled-dot-product attention with GQA:
 *   out[t,h,:] = sum_j softmax_j(q[t,h,:] . k[j,g,:] * scale) v[j,g,:],
 *   g = h / (n_head / n_head_kv), scale = 1/sqrt(head_dim),
 * over keys j with key_mask[j] != 0 (all keys if key_mask is NULL) and, when kv_lo/kv_hi
 * are given, kv_lo[t] <= j < kv_hi[t] for query t (a per-query key range: causal rows,
 * sliding windows; consecutive queries with the same range run as one block). A query
 * whose keys are all masked gets zeros. scale: 0 means 1/sqrt(head_dim) (Gemma 4: 1).
 * q: (n_q, n_head, head_dim); k, v: (n_kv, n_head_kv, head_dim); out: (n_q, n_head,
 * head_dim), must not alias q, k or v; key_mask: (n_kv) or NULL.
 * Memory-bounded: keys are visited in tiles with an online (flash-style) softmax, so no
 * (n_q x n_kv) score matrix exists; threads take (head, query tile) blocks.
 * QK-norm, if the model has it, is the caller's job (ops_rmsnorm per head) before RoPE. */
typedef struct um_attn {
    int            n_q, n_kv;       /* query and key tokens (equal for a full canvas) */
    int            n_head, n_head_kv, head_dim;
    const uint8_t *key_mask;        /* (n_kv) or NULL */
    float          scale;           /* score scale; 0: 1/sqrt(head_dim) */
    const int32_t *kv_lo, *kv_hi;   /* (n_q) each, or both NULL: query t sees keys [kv_lo[t], kv_hi[t]) */
} um_attn;

int ops_attention(um_pool *pool, const um_attn *a, float *out,
                  const float *q, const float *k, const float *v, um_err *e);
int ops_attention_ref(const um_attn *a, float *out,
                      const float *q, const float *k, const float *v, um_err *e);

/* ------------------------------------------------------------------ dequantization
 * One row of n weights of a quantized type to float, on the calling thread: the same values
 * bit for bit as um_traits(type)->to_float_ref (each y = (d * sub-block scale) * level, or
 * level * d, in float as the reference forms it). Q6_K and Q8_0 have SIMD kernels (the tied
 * embedding of DiffusionGemma's Q4_K_M and Q8_0 files, decoded a block at a time for the
 * exact self-conditioning product); every other type is the reference. n must be a
 * multiple of the type's block size. */
void ops_dequant_row(um_type type, const void *src, float *y, int64_t n);

/* x = e^(x - shift) in place, on the calling thread; returns the sum of the new x in double.
 * The kernel set's exp (the softmax kernels' one: within a few ulp of expf; the scalar set
 * is expf). One row of DiffusionGemma's self-conditioning softmax (262K entries, formed and
 * re-formed every step). */
double ops_exp_shift(float *x, int64_t n, float shift);
double ops_exp_shift_ref(float *x, int64_t n, float shift);   /* expf, summed in order */

/* ------------------------------------------------------------------ embedding
 * out[t,:] = dequantized row tokens[t] of table (n_vocab, n_embd) of type `type`.
 * F32, F16 and BF16 are converted directly; other types go through
 * um_traits(type)->to_float_ref. n_embd must be a multiple of the type's block size.
 * out: (n_tokens, n_embd). Fails (naming the token) on an id outside [0, n_vocab). */
int ops_embed(um_pool *pool, float *out, const void *table, um_type type,
              int64_t n_vocab, int n_embd, const int32_t *tokens, int n_tokens, um_err *e);

/* ------------------------------------------------------------------ MoE routing
 * Per token: probabilities p = softmax(logits) or sigmoid(logits); experts chosen by the
 * k largest p[e] + bias[e] (bias only steers the choice, as DeepSeek/Ling's
 * e_score_correction_bias; NULL for none); ties go to the lower expert index; weights
 * are the chosen p[e], divided by their sum if norm_topk, then multiplied by scale.
 * OLMoE / LLaDA-MoE: softmax, norm_topk as the model's norm_topk_prob; Qwen3-MoE/RND1:
 * softmax, norm_topk true; Ling/LLaDA2 style: sigmoid + bias + norm_topk + scale, with
 * group-limited choice (DeepSeek-V3's): the experts form n_group equal consecutive groups, a
 * group scores the sum of its two best p[e] + bias[e], only the n_group_used best groups (ties to
 * the lower index) offer experts. As llama.cpp's build_moe_ffn. */
#define UM_MOE_MAX_K 64             /* experts per token at most */
#define UM_MOE_MAX_GROUPS 64        /* expert groups at most */

typedef enum um_moe_gating { UM_MOE_SOFTMAX = 0, UM_MOE_SIGMOID = 1 } um_moe_gating;

typedef struct um_moe_cfg {
    int            n_expert;        /* experts, >= 1 */
    int            k;               /* experts per token, 1 <= k <= n_expert, <= UM_MOE_MAX_K */
    um_moe_gating  gating;
    bool           norm_topk;       /* renormalise the k weights to sum 1 */
    float          scale;           /* weight multiplier (0 is taken as 1) */
    const float   *bias;            /* (n_expert) selection bias or NULL */
    int            n_group;         /* expert groups (0 or 1: none); divides n_expert, <= UM_MOE_MAX_GROUPS */
    int            n_group_used;    /* groups that offer experts, 1..n_group-1, with n_group > 1 */
} um_moe_cfg;

/* logits: (n_tokens, n_expert) router outputs. expert, weight: (n_tokens, k), best first. */
int ops_moe_route(const um_moe_cfg *c, const float *logits, int n_tokens,
                  int32_t *expert, float *weight, um_err *e);

/* Grouping by expert, so each expert's FFN is one GEMM over its tokens. With
 * n_rows = n_tokens * k "grouped rows" (one per (token, choice) pair), sorted by expert
 * and, within an expert, by token:
 *   offset:     (n_expert + 1)  expert e owns grouped rows [offset[e], offset[e+1])
 *   token:      (n_rows)        source token of each grouped row
 *   row_weight: (n_rows)        gate weight of each grouped row
 *   slot:       (n_tokens, k)   grouped row of token t's j-th choice
 * Fails if an expert id is out of range. */
int ops_moe_group(const int32_t *expert, const float *weight, int n_tokens, int k, int n_expert,
                  int32_t *offset, int32_t *token, float *row_weight, int32_t *slot, um_err *e);

/* dst[i,:] = src[rows[i],:], i < n_rows; src, dst: row width `width` floats.
 * Builds each expert's input matrix from the grouping's `token` list. */
void ops_gather_rows(um_pool *pool, float *dst, const float *src, const int32_t *rows,
                     int64_t n_rows, int width);

/* The weighted combine after the per-expert FFNs:
 *   out[t,:] (+)= sum_j weight[t,j] * y[slot[t,j],:]   (j in choice order, so the sum is
 * the same for any thread count). y: (n_tokens * k, width) grouped-row outputs;
 * out: (n_tokens, width), overwritten, or accumulated into when accumulate is true
 * (adding the MoE output straight onto the residual stream). */
void ops_moe_combine(um_pool *pool, float *out, const float *y, const float *weight,
                     const int32_t *slot, int n_tokens, int k, int width, bool accumulate);
void ops_moe_combine_ref(float *out, const float *y, const float *weight,
                         const int32_t *slot, int n_tokens, int k, int width, bool accumulate);

/* ------------------------------------------------------------------ kernel tables
 * Row kernels of one instruction set; ops.c threads and dispatches, ops_<isa>.c fill
 * these. Not for use outside ops*.c and their tests. */
typedef struct um_attn_block {
    float         *out;             /* first output row of the block */
    const float   *q, *k, *v;       /* first q row of the block; k, v of its kv head */
    int64_t        q_stride;        /* floats between tokens in q and out */
    int64_t        kv_stride;       /* floats between tokens in k and v */
    int            n_q;             /* queries in the block, <= UM_ATTN_BLOCK_Q */
    int            n_kv, head_dim;
    float          scale;
    const uint8_t *key_mask;        /* (n_kv) or NULL */
} um_attn_block;

#define UM_ATTN_BLOCK_Q 32          /* queries per block (one thread's unit of work) */

typedef struct um_ops_kern {
    void (*add)(float *y, const float *a, const float *b, int64_t n);
    void (*mul)(float *y, const float *a, const float *b, int64_t n);
    void (*swiglu)(float *y, const float *gate, const float *up, int64_t n);
    void (*geglu)(float *y, const float *gate, const float *up, int64_t n);
    void (*axpy)(float *y, float a, const float *x, int64_t n);      /* y += a * x */
    void (*rmsnorm_row)(float *y, const float *x, const float *w, int n, float eps);
    void (*softmax_row)(float *x, int n);
    /* Rotate one head's first n_dims values with a per-token table made by ops.c:
     * NORM: cs = (cos_i, sin_i) pairs (n_dims), then (-sin_i, cos_i) pairs (n_dims);
     * NEOX: cs = cos (n_dims/2), then sin (n_dims/2). */
    void (*rope_norm)(float *x, const float *cs, int n_dims);
    void (*rope_neox)(float *x, const float *cs, int n_dims);
    void (*attn_block)(const um_attn_block *b);
    void (*f16_to_f32)(const uint16_t *src, float *dst, int64_t n);
    void (*f32_to_f16)(const float *src, uint16_t *dst, int64_t n);
    void (*softcap)(float *x, int64_t n, float cap);                 /* NULL: the scalar one */
    /* ops_dequant_row for the types the set has a kernel for; false: not one of them (the
     * caller uses the reference) */
    bool (*dequant_row)(um_type type, const void *src, float *y, int64_t n);
    double (*exp_shift)(float *x, int64_t n, float shift);
    /* ops_gemm_acc on one thread (any n, k, m); NULL: the scalar one */
    void (*gemm_acc)(float *y, int64_t ldy, const float *a, int64_t lda, const float *b, int64_t ldb,
                     int n, int k, int m);
    /* one 64-column tile of ops_gemm_bf16_acc (w <= 64 columns of y; bt the tile's kp rows):
     * with FMAs, and with the BF16 dot-product instruction (NULL: none in the set) */
    void (*gemm_bf16)(float *y, int64_t ldy, const uint32_t *a, int64_t lda, const uint32_t *bt, int n, int kp, int w);
    void (*gemm_bf16_dot)(float *y, int64_t ldy, const uint32_t *a, int64_t lda, const uint32_t *bt, int n, int kp, int w);
    /* ops_bf16_pack_b's row pair into one tile row (n <= 64; NULL: the scalar one) */
    void (*bf16_pack2)(uint32_t *dst, const float *even, const float *odd, int n);
    /* y[i] = ops_bf16_round(x[i]) (ops_bf16_pairs; NULL: the scalar one) */
    void (*f32_to_bf16)(const float *x, uint16_t *y, int64_t n);
} um_ops_kern;

/* The SIMD geglu kernels' form of GELU: 0.5 x (1 + tanh(u)) = x / (1 + e^v) with
 * v = -2u = x (UM_GELU_K1 + UM_GELU_K3 x^2), u = sqrt(2/pi) (x + 0.044715 x^3); no 1 + tanh
 * to cancel for u << 0, and e^v saturates cleanly (inf gives -0, 0 gives x). */
#define UM_GELU_K1 (-2.0 * 0.79788456080286535588)         /* -2 sqrt(2/pi) */
#define UM_GELU_K3 (UM_GELU_K1 * 0.044715)

/* tanh for |t| < UM_TANH_SMALL in the SIMD soft-caps: t + t^3 P(t^2), Cephes tanhf's
 * polynomial (coefficients P4 .. P0). */
#define UM_TANH_SMALL 0.625f
#define UM_TANH_P4 (-5.70498872745e-3f)
#define UM_TANH_P3 2.06390887954e-2f
#define UM_TANH_P2 (-5.37397155531e-2f)
#define UM_TANH_P1 1.33314422036e-1f
#define UM_TANH_P0 (-3.33332819422e-1f)

extern const um_ops_kern ops_kern_ref;      /* scalar, ops_ref.c */
extern const um_ops_kern ops_kern_avx2;
extern const um_ops_kern ops_kern_avx512;
extern const um_ops_kern ops_kern_neon;     /* arch/arm/ops_neon.c */

/* The scalar attention block (used by kernel sets for head_dims they do not tile). */
void ops_attn_block_ref(const um_attn_block *b);

#endif
