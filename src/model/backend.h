/*
 * backend: where a forward pass runs. The engine talks to a backend through this table;
 * the CPU backend wraps forward.c, the CUDA backend (kernels/, built with nvcc) implements
 * the same calls on the GPU. A backend returns logits only for the rows asked for.
 *
 * Partial passes (the K/V cache calls) are optional: a backend that cannot run them leaves
 * kv_new and run_kv NULL, and the engine refuses a cache mode on it with a message.
 */
#ifndef UM_BACKEND_H
#define UM_BACKEND_H

#include <stdbool.h>
#include <stdint.h>

#include "model.h"
#include "util.h"

/* K/V of every layer for every canvas position, kept between passes (forward.h). */
typedef struct um_kvcache um_kvcache;
/* Self-conditioning input of a DiffusionGemma pass (forward.h). */
typedef struct um_selfcond um_selfcond;

/* One canvas of a pass (run_multi, forward_run_multi): kv NULL and active NULL is run; kv
 * with active NULL a full pass that fills kv; kv with active a partial pass (run_kv's
 * arguments). drift may be NULL. */
typedef struct um_pass {
    um_kvcache    *kv;
    const int32_t *tokens;
    int            n_tokens;
    const int32_t *active;
    int            n_active;
    const int32_t *rows;
    int            n_rows;
    float         *logits;
    float         *drift;
} um_pass;

typedef struct um_backend {
    const char *name;                       /* "cpu", "cuda" */
    void       *impl;
    /* logits (n_rows, n_vocab) for canvas rows rows[0..n_rows) of tokens (n_tokens) */
    int  (*run)(void *impl, const int32_t *tokens, int n_tokens, const int32_t *rows, int n_rows,
                float *logits, um_err *e);
    int  (*reserve)(void *impl, int max_tokens, um_err *e);
    const char *(*kernel_name)(void *impl); /* "avx512", "amx", "sm_90 mma.s8", ... */
    void (*free)(void *impl);
    /* Optional (NULL: no partial passes). A cache for canvases of up to max_tokens with its
     * K/V stored as type (UM_TYPE_F32, F16 or Q8_0); run_kv: active == NULL runs every row
     * and fills the cache; else only the canvas rows active[0..n_active) run through the
     * layers, attending to the cached K/V of the other positions (forward_run_kv). */
    int  (*kv_new)(void *impl, uint32_t type, int max_tokens, um_kvcache **out, um_err *e);
    void (*kv_free)(um_kvcache *kv);
    uint64_t (*kv_bytes)(const um_kvcache *kv);
    int  (*run_kv)(void *impl, um_kvcache *kv, const int32_t *tokens, int n_tokens, const int32_t *active,
                   int n_active, const int32_t *rows, int n_rows, float *logits, float *drift, um_err *e);
    /* Optional (NULL: one canvas a pass). passes[0..n) in one pass: every weight product over
     * all their rows at once, each canvas's attention over its own keys, each its own logits
     * and cache; the same numbers as n separate passes (forward_run_multi). */
    int  (*run_multi)(void *impl, const um_pass *passes, int n, um_err *e);
    /* Optional (NULL: the backend cannot decode a uniform-state model). The region-aware pass
     * of DiffusionGemma over [prompt | canvas] with self-conditioning (forward_run_dg); with
     * prompt_cached, over the prompt K/V that dg_prompt stored (forward_run_dg_cached). */
    int  (*run_dg)(void *impl, const int32_t *tokens, int n_tokens, int n_prompt, const um_selfcond *sc,
                   bool prompt_cached, const int32_t *rows, int n_rows, float *logits, um_err *e);
    int  (*dg_prompt)(void *impl, const int32_t *tokens, int n_prompt, um_err *e);
    uint64_t (*dg_prompt_bytes)(void *impl);
    int  (*dg_sc_exact_rows)(void *impl);   /* rows of the last pass whose self-conditioning went exact */
} um_backend;

#ifdef __cplusplus
extern "C" {
#endif
/* The CUDA backend (kernels/). Without CUDA it fails with "built without CUDA"; with CUDA
 * but no device, "no CUDA device: ..."; when the weights do not fit, how much is needed. */
int gpu_backend_open(um_backend *out, const um_model *m, int max_tokens, um_err *e);
#ifdef __cplusplus
}
#endif

#endif
