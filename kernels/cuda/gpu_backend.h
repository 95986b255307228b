/*
 * gpu_backend: what the CUDA backend offers beyond backend.h's table. Plain C.
 *
 * gpu_backend_run_stats() is the fused snapshot reduction: the same pass as run(), but
 * instead of the logits (n_rows x n_vocab floats) only four numbers per row come back,
 * computed on the GPU over softmax(logits / temp): the argmax token (lowest id on ties),
 * its probability, the runner-up's probability, the entropy in nats and the
 * GPU_STATS_TOPK best candidates with their probabilities. impl is the
 * um_backend.impl that gpu_backend_open() filled (CUDA builds only: there is no stub).
 */
#ifndef UM_GPU_BACKEND_H
#define UM_GPU_BACKEND_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif
#include "util.h"
#ifdef __cplusplus
}
#endif

#define GPU_STATS_TOPK 8          /* candidates per row */

typedef struct gpu_row_stat {
    int32_t token;              /* argmax of the row */
    float   p_max;              /* its probability */
    float   p_second;           /* the second largest probability (p_max - p_second: margin) */
    float   entropy;            /* nats */
    int32_t top_id[GPU_STATS_TOPK];     /* best tokens, best first (top_id[0] == token) */
    float   top_p[GPU_STATS_TOPK];      /* their probabilities */
} gpu_row_stat;

#ifdef __cplusplus
extern "C" {
#endif
/* out: (n_rows); temp > 0. Same argument checks and errors as um_backend.run. */
int gpu_backend_run_stats(void *impl, const int32_t *tokens, int n_tokens, const int32_t *rows, int n_rows,
                          float temp, gpu_row_stat *out, um_err *e);
#ifdef __cplusplus
}
#endif

#endif
