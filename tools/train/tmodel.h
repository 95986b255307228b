/*
 * tmodel: a llada-architecture transformer in float32 with a hand-written backward pass,
 * LLaDA's masked-diffusion loss, AdamW, checkpoints and GGUF export.
 *
 * Model (the engine's "llada" layout): token embedding tied with the output projection
 * (no output.weight is written), per layer x += Wo attn(rope(Wq n1(x)), rope(Wk n1(x)),
 * Wv n1(x)) with bidirectional softmax attention, x += Wd (silu(Wg n2(x)) * Wu n2(x));
 * logits = E rmsnorm(x). RMSNorm with gains, RoPE "normal" (adjacent pairs), no biases.
 *
 * Parameters live in one float array p (and gradients in g, Adam moments in m, v) laid
 * out tensor after tensor; every matrix is stored as in GGUF, (n_out rows, n_in columns).
 *
 * Loss of a batch (B sequences of T tokens, sequence b masked with probability t_b):
 *   L = sum over masked (b, i) of -log softmax(logits[b, i])[target] / t_b, divided by B*T.
 * Conditional (SFT) training masks only the answer part of each sequence and divides each
 * sequence's sum by its answer length and the batch by B (tm_mask_answer, tm_step_norm).
 * Invariants: no allocation inside tm_step after tm_ws_new; results do not depend on the
 * number of threads (every reduction runs in a fixed order), so a resumed run matches an
 * uninterrupted one bit for bit.
 */
#ifndef UM_TRAIN_TMODEL_H
#define UM_TRAIN_TMODEL_H

#include <stdbool.h>
#include <stdint.h>

#include "pool.h"
#include "util.h"

typedef struct tm_config {
    int32_t n_vocab, n_embd, n_layer, n_head, n_ff, n_ctx;
    int32_t mask_id;            /* the mask token */
    float   rope_base, norm_eps;
} tm_config;

typedef struct tm_tensor {
    char     name[48];          /* GGUF name, e.g. "blk.0.attn_q.weight" */
    int64_t  off;               /* offset into p, floats */
    int32_t  n_out, n_in;       /* rows, columns; norms: n_out = 1 */
    bool     decay;             /* AdamW weight decay applies (matrices other than the embedding) */
} tm_tensor;

typedef struct tm_model {
    tm_config  c;
    int64_t    n_params;
    float     *p, *g, *m, *v;   /* (n_params) parameters, gradients, Adam moments */
    tm_tensor *t;               /* (n_tensors) */
    int        n_tensors;
} tm_model;

int  tm_new(tm_model **out, const tm_config *c, um_err *e);
void tm_free(tm_model *m);
/* Random init: normal(0, 0.02) matrices (residual outputs scaled by 1/sqrt(2 n_layer)), gains 1. */
void tm_init(tm_model *m, uint64_t seed);
const tm_tensor *tm_find(const tm_model *m, const char *name);

/* Activation memory for batches of up to max_b sequences of the model's n_ctx tokens. */
typedef struct tm_ws tm_ws;
int  tm_ws_new(tm_ws **out, const tm_model *m, int max_b, int n_threads, um_err *e);
void tm_ws_free(tm_ws *w);

/* One forward (and, with grad, backward into m->g, which is overwritten) pass.
 * input (B, T): token ids with masks in place; target (B, T): the clean ids;
 * inv_t (B): 1/t_b. Only positions where input == mask_id count. T <= n_ctx.
 * Returns the loss L above; *n_masked receives the masked count (may be NULL). */
double tm_step(tm_model *m, tm_ws *w, um_pool *p, const int32_t *input, const int32_t *target,
               const float *inv_t, int B, int T, bool grad, int64_t *n_masked);

/* The same with the loss divided by norm instead of B*T and per-sequence weights wgt (B) in
 * place of 1/t_b: L = sum over masked (b, i) of CE * wgt[b] / norm. tm_step(...) is
 * tm_step_norm(..., inv_t, B, T, B*T, ...). Conditional (SFT) batches use the weights of
 * tm_mask_answer and norm = B: each sequence's answer loss / (t_b * answer length), averaged
 * over the batch, as LLaDA's supervised fine-tuning does. */
double tm_step_norm(tm_model *m, tm_ws *w, um_pool *p, const int32_t *input, const int32_t *target,
                    const float *wgt, int B, int T, double norm, bool grad, int64_t *n_masked);

/* The same with the positions that count given: loss_at (B*T) true where the loss is taken
 * (uniform-state training, where every answer position counts whatever it holds); NULL: the
 * masked positions, as tm_step_norm. */
double tm_step_at(tm_model *m, tm_ws *w, um_pool *p, const int32_t *input, const int32_t *target,
                  const bool *loss_at, const float *wgt, int B, int T, double norm, bool grad, int64_t *n_masked);

/* Logits (T, n_vocab) of every position of one sequence (eval, tests). */
void tm_logits(tm_model *m, tm_ws *w, um_pool *p, const int32_t *input, int T, float *logits);
/* Logits (B*T, n_vocab) of every position of B sequences; B <= the workspace's max_b. */
void tm_logits_batch(tm_model *m, tm_ws *w, um_pool *p, const int32_t *input, int B, int T, float *logits);

/* LLaDA's forward process: for each of B sequences a window of T tokens at a random offset of
 * data[0..n) (n > T) into target, t ~ U(0, 1), p = (1 - eps) t + eps, each token replaced by
 * the mask with probability p into input, inv_t[b] = 1 / p. Uses rng only. */
#define TM_MASK_EPS 1e-3
void tm_draw_batch(const tm_model *m, const int32_t *data, size_t n, int B, int T, uint64_t rng[4],
                   int32_t *input, int32_t *target, float *inv_t);

/* The forward process of conditional training on one sequence seq (T) of a prompt
 * [0, prompt_len) and its answer [prompt_len, T): the prompt is never masked; t ~ U(0, 1),
 * p = (1 - eps) t + eps, each answer token replaced by the mask with probability p into
 * input (T); target (T) = seq. Returns the sequence's loss weight 1 / (p * answer length). */
float tm_mask_answer(const tm_model *m, const int32_t *seq, int T, int prompt_len, uint64_t rng[4],
                     int32_t *input, int32_t *target);

/* Uniform-state corruption (DiffusionGemma's kind of diffusion) of one sequence's answer:
 * t ~ U(0, 1), p = (1 - eps) t + eps, each answer token replaced with probability p by a token
 * drawn uniformly from the whole vocabulary (as the uniform-state sampler renoises); the
 * prompt is kept. loss_at (T): every answer position (the model must tell clean from noise).
 * Returns the sequence's weight 1 / answer length. */
float tm_uniform_answer(const tm_model *m, const int32_t *seq, int T, int prompt_len, uint64_t rng[4],
                        int32_t *input, int32_t *target, bool *loss_at);

typedef struct tm_adam {
    float lr, beta1, beta2, eps, weight_decay, clip;
} tm_adam;

/* Clip g to global norm clip (if > 0), then one AdamW update at step (1-based) with rate lr.
 * Returns the gradient norm before clipping. */
double tm_adam_update(tm_model *m, const tm_adam *a, int64_t step);

/* Learning rate: linear warm-up over warmup steps, then cosine from lr to lr_min at total. */
float tm_lr_at(int64_t step, int64_t warmup, int64_t total, float lr, float lr_min);

/* Checkpoint: config, step, RNG state, parameters and Adam moments (atomic write). */
int tm_save(const tm_model *m, int64_t step, const uint64_t rng[4], const char *path, um_err *e);
int tm_load(tm_model **out, int64_t *step, uint64_t rng[4], const char *path, um_err *e);

/* Write a llada GGUF: F16 matrices, F32 norms, tokenizer keys copied from tok_gguf. */
int tm_export(const tm_model *m, const char *tok_gguf, const char *name, const char *path, um_err *e);
/* The same for a model trained with uniform-state corruption (canvas > 0): the file also says
 * unmask.uniform_state = true and diffusion.canvas_length = canvas, so unmask decodes it with the
 * uniform-state sampler (the other diffusion.eb_* settings take their defaults). */
int tm_export_uniform(const tm_model *m, const char *tok_gguf, const char *name, const char *path, int canvas,
                      um_err *e);
/* Load parameters from such a GGUF (F16/F32 tensors), e.g. to evaluate the shipped file. */
int tm_import(tm_model **out, const char *path, um_err *e);

/* xoshiro256** random numbers (the trainer's only RNG, saved in checkpoints). */
uint64_t tm_rand(uint64_t s[4]);
double   tm_rand_unit(uint64_t s[4]);       /* [0, 1) */
double   tm_rand_normal(uint64_t s[4]);     /* standard normal (Box-Muller, two uniforms) */
void     tm_rand_seed(uint64_t s[4], uint64_t seed);

#endif
