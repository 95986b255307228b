/*
 * forward: one forward pass of a diffusion LM over a whole canvas: bidirectional, or block-causal
 * for arch->block_causal (LLaDA2: a position sees its own block of hp.block_size and every
 * earlier one, blocks counted from position 0; partial passes keep that mask over cached K/V).
 *
 * forward_new() prepares the model's weights for the chosen matmul kernel (repacked copies;
 * the file pages they came from are released so resident memory stays near the file size)
 * and allocates every activation buffer once for max_tokens. forward_run() then never
 * allocates. Logits are computed only for the canvas rows the caller asks for; the last
 * layer also runs its attention output and FFN only for those rows.
 *
 * Partial passes (forward_run_kv): a full pass can also store every layer's K and V (after
 * QK-norm and RoPE) of every position in a um_kvcache; a later pass then runs only some
 * canvas rows (the active rows) through the layers, and their attention reads the cached
 * K/V for every other position. The cache keeps what the last full pass stored: partial
 * passes read it but never write it, so it is one consistent picture of the canvas as it was
 * at that pass; except on block-causal architectures (LLaDA2), where a partial pass also
 * stores its active rows' K/V, exact for their current tokens since no position sees a later
 * block (forward.c). With an F32 cache a partial pass right after the full pass gives the full
 * pass's rows bit for bit (every op computes a row independently of the others); F16 and
 * Q8_0 round the cached K/V (tests/test_cache.c states the tolerances).
 *
 * The reference forward (opts.reference) uses no packing and no SIMD: weights dequantized
 * row by row with quant.c's reference dequantizers, dot products in double, the scalar
 * ops_*_ref, every row computed through the last layer. Tests compare the two.
 */
#ifndef UM_FORWARD_H
#define UM_FORWARD_H

#include <stdbool.h>
#include <stdint.h>

#include "backend.h"
#include "matmul.h"
#include "model.h"
#include "pool.h"
#include "util.h"

typedef struct um_forward um_forward;

typedef struct um_forward_opts {
    int       max_tokens;       /* largest canvas forward_run will see */
    bool      reference;        /* scalar reference path (slow; tests) */
    um_kernel kernel;           /* UM_KERNEL_AUTO: best available or UNMASK_KERNEL */
    bool      release_pages;    /* drop the mmapped pages of repacked weights (default path) */
    void    (*progress)(void *ctx, int done, int total);  /* weight preparation progress, or NULL */
    void     *progress_ctx;
} um_forward_opts;

int  forward_new(um_forward **out, const um_model *m, um_pool *pool, const um_forward_opts *o, um_err *e);
void forward_free(um_forward *f);

/* Run tokens (n_tokens, positions 0..n_tokens-1) and write logits for the canvas rows
 * rows[0..n_rows) into logits (n_rows, n_vocab), in that order. Rows must be distinct
 * and in [0, n_tokens). Fails on a token id outside the vocabulary or n_tokens > max. */
int  forward_run(um_forward *f, const int32_t *tokens, int n_tokens,
                 const int32_t *rows, int n_rows, float *logits, um_err *e);

/* DiffusionGemma (arch->gemma4): one region-aware pass over [prompt | canvas]. Rows
 * [0, n_prompt) are the prompt (embeddings x sqrt(n_embd), causal attention over the prompt,
 * sliding layers windowed, encoder layer scalars), rows [n_prompt, n_tokens) the canvas
 * (rmsnorm_noscale(embedding x sqrt(n_embd) + self-conditioning), bidirectional over prompt
 * and canvas, sliding layers seeing only the last n_swa - 1 prompt rows, decoder scalars).
 * n_prompt < 0 takes llama.cpp's split: n_tokens - canvas_length when n_tokens exceeds the
 * file's diffusion.canvas_length, else 0. forward_run on such a model is this with
 * n_prompt = -1 and no self-conditioning.
 *
 * Self-conditioning (sc, NULL or sc->logits NULL: none, the first step): the previous step's
 * logits of the canvas rows, p = softmax(logits / temp) per row, soft = (p @ token_embd) x
 * sqrt(n_embd), then sc_down(gelu(sc_gate(n)) * sc_up(n)) with n = rmsnorm(soft) x sc_pre_norm,
 * added to the canvas embeddings before their norm (llama.cpp: dg_canvas_embed). UM_SC_EXACT
 * forms the product over the whole vocabulary (n_vocab x n_embd per row); UM_SC_TOPK keeps the
 * top_k largest probabilities of each row exactly and spreads the rest of the mass evenly
 * over the other tokens (their mean embedding: k + 1 embedding rows per row); UM_SC_AUTO does
 * that for the rows whose top_k hold all but tail_max of the mass and the exact product for
 * the others (docs/decoding.md has the agreement measured between them; the soft embedding's
 * error of a top-k row is at most 2 tail max_v |emb_v| sqrt(n_embd)). */
typedef enum um_sc_mode { UM_SC_EXACT = 0, UM_SC_TOPK = 1, UM_SC_AUTO = 2 } um_sc_mode;
#define UM_SC_AUTO_K     256        /* UM_SC_AUTO's default top_k */
#define UM_SC_AUTO_TAIL  1e-3f      /* and its default tail_max */
#define UM_SC_MAX_TOPK 4096         /* top_k at most */
typedef struct um_selfcond {
    const float *logits;        /* (n_tokens - n_prompt, n_vocab) previous step's canvas logits, or NULL */
    float        temp;          /* previous step's temperature (> 0) */
    um_sc_mode   mode;
    int          top_k;         /* UM_SC_TOPK, UM_SC_AUTO: kept entries per row, 1 .. n_vocab - 1 */
    float        tail_max;      /* UM_SC_AUTO: a row whose tail holds more goes exact (0: UM_SC_AUTO_TAIL) */
    bool         bf16;          /* the exact rows' product from BF16 probabilities and embedding
                                   values, in float pairs (ops_gemm_bf16_acc): twice the float rate
                                   with AVX-512 BF16, the same bits on every kernel set */
} um_selfcond;

/* Canvas rows of the last pass whose self-conditioning was the exact product (UM_SC_AUTO's
 * fallback; every row for UM_SC_EXACT, none for UM_SC_TOPK). */
int  forward_sc_exact_rows(const um_forward *f);

/* The keys [*lo, *hi) that row t of a pass of T rows sees, the first P of them the prompt,
 * in a sliding (window n_swa) or global layer: the region mask of llama.cpp's
 * llm_graph_input_attn_diffusion (prompt rows causal over the prompt, sliding ones windowed;
 * canvas rows everything, sliding ones only the last n_swa - 1 prompt rows of the prompt). */
void forward_dg_key_range(int t, int T, int P, int n_swa, bool swa, int32_t *lo, int32_t *hi);

int  forward_run_dg(um_forward *f, const int32_t *tokens, int n_tokens, int n_prompt, const um_selfcond *sc,
                    const int32_t *rows, int n_rows, float *logits, um_err *e);

/* The prompt's K/V once per canvas (exact: no prompt row sees the canvas). forward_dg_prompt
 * runs the prompt rows tokens[0..n_prompt) alone and keeps every layer's K and V of them in
 * the forward state (allocated on first use for max_tokens rows, kept until forward_free or a
 * larger forward_reserve). forward_run_dg_cached is then forward_run_dg with an explicit
 * n_prompt that runs only the canvas rows [n_prompt, n_tokens) through the layers, their
 * attention reading the stored prompt K/V; tokens[0..n_prompt) must be the stored prompt and
 * rows canvas rows. Every op computes a row independently of the others, so its logits equal
 * forward_run_dg's bit for bit (tests/test_dgemma.c). */
int  forward_dg_prompt(um_forward *f, const int32_t *tokens, int n_prompt, um_err *e);
int  forward_run_dg_cached(um_forward *f, const int32_t *tokens, int n_tokens, int n_prompt, const um_selfcond *sc,
                           const int32_t *rows, int n_rows, float *logits, um_err *e);
uint64_t forward_dg_prompt_bytes(const um_forward *f);   /* the prompt store's K and V, 0 before its first use */

/* A K/V cache for canvases of up to max_tokens, K and V stored as type: UM_TYPE_F32, F16
 * (the default) or Q8_0 (needs n_head_kv * head_dim divisible by 32). */
int  forward_kv_new(const um_forward *f, uint32_t type, int max_tokens, um_kvcache **out, um_err *e);
void forward_kv_free(um_kvcache *kv);
uint64_t forward_kv_bytes(const um_kvcache *kv);   /* K and V of every layer, all positions */

/* active == NULL: forward_run, and the K/V of every layer and position stored in kv (which
 * then holds this canvas). Otherwise run only the canvas rows active[0..n_active) (distinct,
 * any order) through the layers; every other position's K/V comes from kv, which must hold
 * a canvas of n_tokens filled by a full pass. rows must be among the active rows. drift
 * (NULL: not wanted) gets the mean relative change, at the last layer, of the K of the active
 * rows whose token is the one kv was filled with (|k - k_cached| / |k_cached|, 0 if none):
 * how far the context has moved the cached rows since the full pass. */
int  forward_run_kv(um_forward *f, um_kvcache *kv, const int32_t *tokens, int n_tokens, const int32_t *active,
                    int n_active, const int32_t *rows, int n_rows, float *logits, float *drift, um_err *e);

#define UM_FW_MAX_PASSES 16
/* Up to UM_FW_MAX_PASSES canvases in one pass (compare panes sharing one model): their rows go
 * through every weight product together, so the weights are read once for all of them, while
 * each canvas's attention sees only its own keys and each gets its own logits, drift and cache
 * (distinct caches). Every op computes a row on its own, so each canvas's logits equal those of
 * its own forward_run / forward_run_kv bit for bit (tests/test_cache.c). The activation buffers
 * grow to the canvases' total length. Not for Gemma 4 (one canvas, no cache). */
int  forward_run_multi(um_forward *f, const um_pass *passes, int n, um_err *e);

/* The forward pass as a backend table (backend.h); the table owns f afterwards. */
void forward_as_backend(um_forward *f, um_backend *b);

/* Grow the activation buffers to hold canvases of max_tokens (no-op if they already do). */
int  forward_reserve(um_forward *f, int max_tokens, um_err *e);

/* Where a forward pass spends its time: wall milliseconds per part, summed over the passes
 * since the last forward_profile_reset, and the multiply-accumulates of the weight products.
 * Always on (a clock read per op, about 1 us per layer in all). */
typedef enum um_fw_part {
    UM_FW_EMBED = 0, UM_FW_NORM, UM_FW_QKV, UM_FW_ROPE, UM_FW_ATTN, UM_FW_WO, UM_FW_FFN_IN,
    UM_FW_ACT, UM_FW_FFN_DOWN, UM_FW_ROUTE, UM_FW_ADD, UM_FW_HEAD,
    UM_FW_KV,                    /* K/V cache: storing (F16 conversion), loading, the drift */
    UM_FW_GATHER,                /* row gathers (the last layer's and the head's rows) */
    UM_FW_PART_COUNT
} um_fw_part;
typedef struct um_fw_profile {
    double   ms[UM_FW_PART_COUNT];
    uint64_t macs;               /* weight-product MACs (n_tokens x n_in x n_out summed) */
    double   matmul_ms;          /* time inside those products (part of ms[]) */
    uint64_t dispatches;         /* thread-pool runs (pool_stats) */
    double   handoff_ms;         /* the caller's wait in them after its own share (pool_stats):
                                  * spread over the parts above, not one of them */
    int      passes;
} um_fw_profile;
const char *forward_part_name(um_fw_part p);
void forward_profile(const um_forward *f, um_fw_profile *out);
void forward_profile_reset(um_forward *f);

/* Kernel the weights were prepared for ("ref" for the reference path). */
const char *forward_kernel_name(const um_forward *f);
/* Bytes of prepared weight copies and of activation buffers. */
uint64_t forward_weight_bytes(const um_forward *f);
uint64_t forward_activation_bytes(const um_forward *f);

#endif
