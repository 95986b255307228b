/*
 * gpu_cache: allocation and sizes of the CUDA backend's K/V cache (see gpu_cache.h); the
 * passes that fill and read it are in gpu_backend.cu. Every device buffer is allocated
 * here once per cache, so the passes allocate nothing.
 */
#include <cuda_runtime.h>
#include <inttypes.h>
#include <stdlib.h>

#include "gpu_cache.h"
#include "gpu_kernels.cuh"

extern "C" {
#include "quant.h"
}

static int kind_of(uint32_t type) {
    return type == UM_TYPE_F32 ? GPU_KV_F32 : type == UM_TYPE_F16 ? GPU_KV_F16 : type == UM_TYPE_Q8_0 ? GPU_KV_Q8_0 : -1;
}

int gpu_cache_plan(const um_hparams *hp, uint32_t type, int max_tokens, uint64_t *device_bytes, um_err *e) {
    const int nkv = hp->n_head_kv * hp->head_dim, kind = kind_of(type);
    if (kind < 0) return um_errf(e, "K/V cache type %s: only f32, f16 and q8_0 are supported", um_type_name(type));
    if (kind == GPU_KV_Q8_0 && nkv % 32)
        return um_errf(e, "K/V cache type %s stores rows of a multiple of %u values; this model's K rows have %d",
                       um_type_name(type), um_type_blck(type), nkv);
    if (max_tokens <= 0) return um_errf(e, "K/V cache: max_tokens must be positive");
    const uint64_t T = (uint64_t)max_tokens;
    *device_bytes = 2 * (uint64_t)hp->n_layer * T * gpu_kv_row_bytes(kind, nkv) + 2 * T * (uint64_t)nkv * 4 + 3 * T * 4;
    return UM_OK;
}

void gpu_cache_free(um_kvcache *kv) {
    if (!kv) return;
    void *dev[] = { kv->k, kv->v, kv->kc, kv->vc, kv->pos_d, kv->qpos_d, kv->drift_d };
    for (size_t i = 0; i < UM_ARRAY_LEN(dev); i++) cudaFree(dev[i]);   /* waits for work using them */
    void *host[] = { kv->tok, kv->slot, kv->tok_sel, kv->hrow, kv->pos_host, kv->qpos_host, kv->drift_host };
    for (size_t i = 0; i < UM_ARRAY_LEN(host); i++) free(host[i]);
    free(kv);
}

uint64_t gpu_cache_bytes(const um_kvcache *kv) { return kv ? kv->bytes : 0; }

int gpu_cache_new(const um_hparams *hp, uint32_t type, int max_tokens, um_kvcache **out, um_err *e) {
    *out = NULL;
    uint64_t need = 0;
    if (gpu_cache_plan(hp, type, max_tokens, &need, e)) return UM_FAIL;
    um_kvcache *kv = (um_kvcache *)calloc(1, sizeof *kv);
    if (!kv) return um_errf(e, "out of memory");
    const uint64_t T = (uint64_t)max_tokens;
    kv->kind = kind_of(type);
    kv->n_layer = hp->n_layer;
    kv->max_tokens = max_tokens;
    kv->nkv = hp->n_head_kv * hp->head_dim;
    kv->row_bytes = gpu_kv_row_bytes(kv->kind, kv->nkv);
    const uint64_t per = (uint64_t)hp->n_layer * T * kv->row_bytes, nkv = (uint64_t)kv->nkv;
    kv->bytes = 2 * per;
    struct { void **p; uint64_t bytes; } want[] = {
        { (void **)&kv->k, per }, { (void **)&kv->v, per }, { (void **)&kv->kc, T * nkv * 4 },
        { (void **)&kv->vc, T * nkv * 4 }, { (void **)&kv->pos_d, T * 4 }, { (void **)&kv->qpos_d, T * 4 },
        { (void **)&kv->drift_d, T * 4 },
    };
    for (size_t i = 0; i < UM_ARRAY_LEN(want); i++) {
        cudaError_t err = cudaMalloc(want[i].p, want[i].bytes);
        if (err != cudaSuccess) {
            gpu_cache_free(kv);
            return um_errf(e, "CUDA out of memory for a %s K/V cache (%" PRIu64 " bytes): %s", um_type_name(type),
                           want[i].bytes, cudaGetErrorString(err));
        }
    }
    kv->tok = (int32_t *)calloc(T, 4);
    kv->slot = (int32_t *)malloc(T * 4);
    kv->tok_sel = (int32_t *)malloc(T * 4);
    kv->hrow = (int32_t *)malloc(T * 4);
    kv->pos_host = (int32_t *)malloc(T * 4);
    kv->qpos_host = (int32_t *)malloc(T * 4);
    kv->drift_host = (float *)malloc(T * 4);
    if (!kv->tok || !kv->slot || !kv->tok_sel || !kv->hrow || !kv->pos_host || !kv->qpos_host || !kv->drift_host) {
        gpu_cache_free(kv);
        return um_errf(e, "out of memory");
    }
    *out = kv;
    return UM_OK;
}
