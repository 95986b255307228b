/*
 * gpu_cache: the K/V cache of the CUDA backend's partial passes (backend.h's kv_new /
 * kv_free / kv_bytes, forward_run_kv's contract), in device memory. It holds every layer's
 * K and V, after QK-norm and RoPE, for every canvas position, as the last full pass computed
 * them, stored as F32, F16 or Q8_0 rows (gpu_kernels.cuh: gpu_kv_store / gpu_kv_load); plus
 * the per-pass scratch of a partial pass, which reads the stored rows and never writes them.
 * C++ (the backend's .cu files); the fields are the backend's to use (gpu_backend.cu).
 */
#ifndef UM_GPU_CACHE_H
#define UM_GPU_CACHE_H

#include <stdint.h>

extern "C" {
#include "model.h"
#include "util.h"
}

struct um_kvcache {
    int       kind;                             /* GPU_KV_F32, F16 or Q8_0 */
    int       n_layer, max_tokens, nkv;         /* nkv: floats of one position's K in one layer */
    uint64_t  row_bytes;                        /* such a row as stored */
    uint8_t  *k, *v;                            /* device (n_layer, max_tokens, row_bytes) */
    float    *kc, *vc;                          /* device (max_tokens, nkv): a partial pass's fresh K/V */
    int      *pos_d, *qpos_d;                   /* device (max_tokens): carried rows', head rows' positions */
    float    *drift_d;                          /* device (max_tokens): per active row K drift */
    int32_t  *tok;                              /* host (max_tokens): the canvas of the last full pass */
    int       n_tokens;                         /* its length; 0: holds no canvas */
    int32_t  *slot;                             /* host (max_tokens): position -> active index, or -1 */
    int32_t  *tok_sel, *hrow, *pos_host, *qpos_host;  /* host (max_tokens) mirrors of a partial pass */
    float    *drift_host;                       /* host (max_tokens) */
    uint64_t  bytes;                            /* k and v (what kv_bytes reports) */
};

/* Device bytes a cache of type (UM_TYPE_F32, F16 or Q8_0) for canvases of max_tokens needs:
 * K and V of every layer plus the scratch (2 x max_tokens x nkv floats and three index
 * arrays). Fails with the CPU cache's messages on another type, on Q8_0 when nkv is not a
 * multiple of 32, or on max_tokens <= 0. */
int  gpu_cache_plan(const um_hparams *hp, uint32_t type, int max_tokens, uint64_t *device_bytes, um_err *e);
/* Allocate one (the caller checked the free memory against gpu_cache_plan). */
int  gpu_cache_new(const um_hparams *hp, uint32_t type, int max_tokens, um_kvcache **out, um_err *e);
void gpu_cache_free(um_kvcache *kv);
uint64_t gpu_cache_bytes(const um_kvcache *kv);

#endif
