/*
 * emu_kernels: the launchers of kernels/gpu_kernels.cuh implemented on the CPU with the
 * references the device kernels are checked against (gpu_i8_dot_ref, ops_*_ref), plus
 * gpu_built/gpu_describe. Linked instead of the CUDA objects, they let the real
 * orchestration code of kernels/gpu_backend.cu (buffers, strides, uploads, the row subset,
 * the MoE flow, the statistics) run on a machine without a GPU, under ASan, against the
 * CPU backend (tests/gpu/emu-check.sh). What they cannot check is the device code itself.
 */
#include <math.h>
#include <stdio.h>
#include <vector>

#define UM_POOL_H
typedef struct um_pool um_pool;
extern "C" {
#include "gpu.h"
#include "ops.h"
#include "quant.h"
#include "util.h"
}
#include "gpu_kernels.cuh"
#include "gpu_pack.h"

extern "C" int gpu_built(void) { return 1; }
extern "C" int gpu_describe(char *buf, size_t cap) {
    snprintf(buf, cap, "host emulation of the CUDA backend (no device code runs)");
    return 1;
}

cudaError_t gpu_kernels_init(int head_dim) { return head_dim <= 256 ? cudaSuccess : cudaErrorInvalidValue; }

cudaError_t gpu_quantize_act(gpu_act *a, cudaStream_t st) {
    for (int r = 0; r < a->n; r++)
        gpu_quantize_act_ref(a->x + (int64_t)r * a->K, a->K, a->k_pad, a->q + (int64_t)r * a->k_pad,
                             a->d + (int64_t)r * (a->k_pad / 32), a->sum16 + (int64_t)r * (a->k_pad / 16));
    a->q_ready = 1;
    return cudaSuccess;
}

cudaError_t gpu_convert_act(gpu_act *a, int kind, cudaStream_t st) {
    for (int r = 0; r < a->n; r++)
        for (int k = 0; k < a->k_pad; k++) {
            const float v = k < a->K ? a->x[(int64_t)r * a->K + k] : 0.0f;
            a->h[(int64_t)r * a->k_pad + k] = kind == GPU_KIND_BF16 ? um_fp32_to_bf16(v) : um_fp32_to_fp16(v);
        }
    a->h_kind = kind;
    return cudaSuccess;
}

cudaError_t gpu_gemm(const gpu_mat *W, const gpu_act *a, float *y, int ldy, const float *bias, int accumulate,
                     cudaStream_t st) {
    if (a->n == 0) return cudaSuccess;
    if (a->K != W->n_in) return cudaErrorInvalidValue;
    const int kp = W->k_pad;
    std::vector<int8_t> row(kp);
    std::vector<float> acc((size_t)a->n * W->n_out);
    gpu_layout L;
    memset(&L, 0, sizeof L);
    L.group = W->group;
    L.has_off = W->has_off;
    L.k_pad = kp;
    for (int r = 0; r < W->n_out; r++) {
        if (W->kind == GPU_KIND_I8) {
            if (!a->q_ready) return cudaErrorInvalidValue;
            if (W->pack4) gpu_nibble_unpack((const uint8_t *)W->w + (int64_t)r * (kp / 2), kp, W->bias4, row.data());
            else memcpy(row.data(), (const int8_t *)W->w + (int64_t)r * kp, (size_t)kp);
        } else if ((W->kind == GPU_KIND_F16 || W->kind == GPU_KIND_BF16) && a->h_kind != W->kind) {
            return cudaErrorInvalidValue;
        }
        const int ng = W->kind == GPU_KIND_I8 ? kp / W->group : 0;
        for (int t = 0; t < a->n; t++) {
            float v;
            if (W->kind == GPU_KIND_I8) {
                v = gpu_i8_dot_ref(&L, row.data(), W->scale + (int64_t)r * ng, W->has_off ? W->off + (int64_t)r * ng : NULL,
                                   a->q + (int64_t)t * kp, a->d + (int64_t)t * (kp / 32), a->sum16 + (int64_t)t * (kp / 16));
            } else if (W->kind == GPU_KIND_F32) {
                double s = 0;
                for (int k = 0; k < W->n_in; k++)
                    s += (double)((const float *)W->w)[(int64_t)r * kp + k] * a->x[(int64_t)t * a->K + k];
                v = (float)s;
            } else {
                double s = 0;
                const uint16_t *wr = (const uint16_t *)W->w + (int64_t)r * kp, *xr = a->h + (int64_t)t * kp;
                for (int k = 0; k < kp; k++)
                    s += W->kind == GPU_KIND_BF16 ? (double)um_bf16_to_fp32(wr[k]) * um_bf16_to_fp32(xr[k])
                                                  : (double)um_fp16_to_fp32(wr[k]) * um_fp16_to_fp32(xr[k]);
                v = (float)s;
            }
            acc[(size_t)t * W->n_out + r] = v;
        }
    }
    for (int t = 0; t < a->n; t++)
        for (int r = 0; r < W->n_out; r++) {
            float v = acc[(size_t)t * W->n_out + r] + (bias ? bias[r] : 0.0f);
            float *p = y + (int64_t)t * ldy + r;
            *p = accumulate ? *p + v : v;
        }
    return cudaSuccess;
}

cudaError_t gpu_rmsnorm(float *y, const float *x, const float *w, int n_rows, int n, float eps, cudaStream_t st) {
    ops_rmsnorm_ref(y, x, w, n_rows, n, eps);
    return cudaSuccess;
}

cudaError_t gpu_rope(float *x, const int *pos, int n_tok, int n_head, int head_dim, int n_dims, int neox,
                     const float *cos_t, const float *sin_t, cudaStream_t st) {
    const int half = n_dims / 2;
    for (int t = 0; t < n_tok; t++)
        for (int h = 0; h < n_head; h++) {
            float *v = x + ((int64_t)t * n_head + h) * head_dim;
            for (int i = 0; i < half; i++) {
                const float c = cos_t[(int64_t)pos[t] * half + i], s = sin_t[(int64_t)pos[t] * half + i];
                const int i0 = neox ? i : 2 * i, i1 = neox ? i + half : 2 * i + 1;
                const float x0 = v[i0], x1 = v[i1];
                v[i0] = fmaf(x0, c, -(x1 * s));
                v[i1] = fmaf(x0, s, x1 * c);
            }
        }
    return cudaSuccess;
}

cudaError_t gpu_attention(float *out, const float *q, const float *k, const float *v, int n_q, int n_kv, int n_head,
                          int n_head_kv, int head_dim, cudaStream_t st) {
    if (n_q <= 0) return cudaSuccess;
    um_attn at = { n_q, n_kv, n_head, n_head_kv, head_dim, NULL, 0.0f, NULL, NULL };
    um_err e;
    return ops_attention_ref(&at, out, q, k, v, &e) ? cudaErrorInvalidValue : cudaSuccess;
}

cudaError_t gpu_swiglu(float *y, const float *g, const float *u, int64_t n, cudaStream_t st) {
    ops_swiglu_ref(y, g, u, n);
    return cudaSuccess;
}

cudaError_t gpu_gather_rows(float *dst, const float *src, const int *rows, int n_rows, int width, cudaStream_t st) {
    for (int i = 0; i < n_rows; i++) memmove(dst + (int64_t)i * width, src + (int64_t)rows[i] * width, (size_t)width * 4);
    return cudaSuccess;
}

cudaError_t gpu_moe_combine(float *out, const float *y, const float *w, const int *slot, int n_tok, int k, int width,
                            cudaStream_t st) {
    ops_moe_combine_ref(out, y, w, slot, n_tok, k, width, true);
    return cudaSuccess;
}

cudaError_t gpu_row_stats(const float *logits, int n_rows, int n_vocab, float temp, int *argmax, float *p_max,
                          float *p_second, float *entropy, int k, int *top_id, float *top_p, cudaStream_t st) {
    if (!(temp > 0)) return cudaErrorInvalidValue;
    for (int r = 0; r < n_rows; r++) {
        const float *l = logits + (int64_t)r * n_vocab;
        int am = 0;
        for (int i = 1; i < n_vocab; i++) if (l[i] > l[am]) am = i;
        double z = 0, m1 = 0, second = -INFINITY;
        for (int i = 0; i < n_vocab; i++) {
            if (i != am && l[i] > second) second = l[i];
            const double u = ((double)l[i] - l[am]) / temp;
            z += exp(u);
            m1 += exp(u) * u;
        }
        argmax[r] = am;
        p_max[r] = (float)(1 / z);
        p_second[r] = second == -INFINITY ? 0.0f : (float)(exp((second - l[am]) / temp) / z);
        entropy[r] = (float)(log(z) - m1 / z);
        float pv = INFINITY;
        int pi = -1;
        for (int j = 0; j < k; j++) {
            int bi = -1;
            for (int i = 0; i < n_vocab; i++) {
                const bool after = l[i] < pv || (l[i] == pv && i > pi);
                if (after && (bi < 0 || l[i] > l[bi])) bi = i;
            }
            top_id[(int64_t)r * k + j] = bi;
            top_p[(int64_t)r * k + j] = bi < 0 ? 0.0f : (float)(exp(((double)l[bi] - l[am]) / temp) / z);
            if (bi >= 0) { pv = l[bi]; pi = bi; }
        }
    }
    return cudaSuccess;
}

cudaError_t gpu_gemm_grouped(const gpu_mat *W, int n_group, const int *offs, int max_rows, const gpu_act *a, float *y,
                             int ldy, cudaStream_t st) {
    if (!offs || n_group <= 0) return cudaErrorInvalidValue;
    if (W->kind != GPU_KIND_I8) return cudaErrorNotSupported;
    if (!a->q_ready && a->n) return cudaErrorInvalidValue;
    for (int e = 0; e < n_group; e++) {
        const int lo = offs[e], hi = offs[e + 1];
        if (hi - lo > max_rows || lo > hi || hi > a->n) return cudaErrorInvalidValue;
        gpu_mat we = *W;
        we.w = (char *)W->w + (long long)e * W->w_stride;
        we.scale = W->scale + (long long)e * W->s_stride;
        we.off = W->has_off ? W->off + (long long)e * W->s_stride : NULL;
        gpu_act ae = *a;
        ae.x = a->x + (int64_t)lo * a->K;
        ae.n = hi - lo;
        ae.q = a->q + (int64_t)lo * a->k_pad;
        ae.d = a->d + (int64_t)lo * (a->k_pad / 32);
        ae.sum16 = a->sum16 + (int64_t)lo * (a->k_pad / 16);
        cudaError_t err = gpu_gemm(&we, &ae, y + (int64_t)lo * ldy, ldy, NULL, 0, st);
        if (err != cudaSuccess) return err;
    }
    return cudaSuccess;
}

/* K/V cache storage through quant.c's reference row converters (what the device kernels
 * are checked against in kernel_check.cu). */
static const um_type_traits *kv_traits(int kind, int width) {
    if (kind == GPU_KV_Q8_0 && width % 32) return NULL;
    return um_traits(kind == GPU_KV_F32 ? UM_TYPE_F32 : kind == GPU_KV_F16 ? UM_TYPE_F16
                     : kind == GPU_KV_Q8_0 ? UM_TYPE_Q8_0 : UM_TYPE_COUNT);
}

cudaError_t gpu_kv_store(void *dst, const float *x, int n_rows, int width, int kind, cudaStream_t st) {
    const um_type_traits *tr = kv_traits(kind, width);
    if (!tr) return cudaErrorInvalidValue;
    const uint64_t rb = gpu_kv_row_bytes(kind, width);
    for (int r = 0; r < n_rows; r++) tr->from_float_ref(x + (int64_t)r * width, (uint8_t *)dst + rb * (uint64_t)r, width);
    return cudaSuccess;
}

cudaError_t gpu_kv_load(float *y, const void *src, int n_rows, int width, int kind, cudaStream_t st) {
    const um_type_traits *tr = kv_traits(kind, width);
    if (!tr) return cudaErrorInvalidValue;
    const uint64_t rb = gpu_kv_row_bytes(kind, width);
    for (int r = 0; r < n_rows; r++) tr->to_float_ref((const uint8_t *)src + rb * (uint64_t)r, y + (int64_t)r * width, width);
    return cudaSuccess;
}

cudaError_t gpu_scatter_rows(float *dst, const float *src, const int *rows, int n_rows, int width, cudaStream_t st) {
    for (int i = 0; i < n_rows; i++) memmove(dst + (int64_t)rows[i] * width, src + (int64_t)i * width, (size_t)width * 4);
    return cudaSuccess;
}

cudaError_t gpu_row_drift(float *out, const float *fresh, const float *base, const int *rows, int n_rows, int width,
                          cudaStream_t st) {
    for (int i = 0; i < n_rows; i++) {
        const float *a = fresh + (int64_t)i * width, *b = base + (int64_t)rows[i] * width;
        double dd = 0, rr = 0;
        for (int c = 0; c < width; c++) {
            const double x = (double)a[c] - b[c];
            dd += x * x;
            rr += (double)b[c] * b[c];
        }
        out[i] = rr > 0 ? (float)sqrt(dd / rr) : 0.0f;
    }
    return cudaSuccess;
}
