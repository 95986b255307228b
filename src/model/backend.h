/*
 * backend: where a forward pass runs. The engine talks to a backend through this table;
 * the CPU backend wraps forward.c, the CUDA backend (kernels/, built with nvcc) implements
 * the same calls on the GPU. A backend returns logits only for the rows asked for.
 */
#ifndef UM_BACKEND_H
#define UM_BACKEND_H

#include <stdint.h>

#include "model.h"
#include "util.h"

typedef struct um_backend {
    const char *name;                       /* "cpu", "cuda" */
    void       *impl;
    /* logits (n_rows, n_vocab) for canvas rows rows[0..n_rows) of tokens (n_tokens) */
    int  (*run)(void *impl, const int32_t *tokens, int n_tokens, const int32_t *rows, int n_rows,
                float *logits, um_err *e);
    int  (*reserve)(void *impl, int max_tokens, um_err *e);
    const char *(*kernel_name)(void *impl); /* "avx512", "amx", "sm_90 mma.s8", ... */
    void (*free)(void *impl);
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
