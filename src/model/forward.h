/*
 * forward: one bidirectional forward pass of a diffusion LM over a whole canvas.
 *
 * forward_new() prepares the model's weights for the chosen matmul kernel (repacked copies;
 * the file pages they came from are released so resident memory stays near the file size)
 * and allocates every activation buffer once for max_tokens. forward_run() then never
 * allocates. Logits are computed only for the canvas rows the caller asks for; the last
 * layer also runs its attention output and FFN only for those rows.
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

/* The forward pass as a backend table (backend.h); the table owns f afterwards. */
void forward_as_backend(um_forward *f, um_backend *b);

/* Grow the activation buffers to hold canvases of max_tokens (no-op if they already do). */
int  forward_reserve(um_forward *f, int max_tokens, um_err *e);

/* Where a forward pass spends its time: wall milliseconds per part, summed over the passes
 * since the last forward_profile_reset, and the multiply-accumulates of the weight products.
 * Always on (a clock read per op, about 1 us per layer in all). */
typedef enum um_fw_part {
    UM_FW_EMBED = 0, UM_FW_NORM, UM_FW_QKV, UM_FW_ROPE, UM_FW_ATTN, UM_FW_WO, UM_FW_FFN_IN,
    UM_FW_ACT, UM_FW_FFN_DOWN, UM_FW_ROUTE, UM_FW_ADD, UM_FW_HEAD, UM_FW_PART_COUNT
} um_fw_part;
typedef struct um_fw_profile {
    double   ms[UM_FW_PART_COUNT];
    uint64_t macs;               /* weight-product MACs (n_tokens x n_in x n_out summed) */
    double   matmul_ms;          /* time inside those products (part of ms[]) */
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
