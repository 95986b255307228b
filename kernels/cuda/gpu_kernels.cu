/*
 * gpu_kernels: the CUDA kernels of the backend (see gpu_kernels.cuh for the contracts).
 *
 * GEMMs (y = x W^T), 64 x 64 output tiles (64 weight rows x 64 tokens), 4 warps of 32 x 32,
 * K in steps of 32 staged through shared memory:
 *   I8:   mma.sync m16n8k32 s8 (groups of 32) or two m16n8k16 s8 (groups of 16); nibble
 *         weights (Q4_0/Q4_1/Q4_K) are expanded to int8 while staging the tile; each
 *         group's int32 partial is scaled in float by weight scale x activation scale and,
 *         for formats with a minimum, the offset term off x act_scale x sum(act q) is added
 *         (dequantization fused into the accumulation; weights stay int8 in memory).
 *   F16/BF16: mma.sync m16n8k16 with f32 accumulation.
 *   F32:  16 x 16 SIMT tiles (routers, tiny test models).
 * Shared-memory rows are padded (48 bytes for 32 int8, 80 bytes for 32 halves) so the
 * fragment loads of a warp hit 32 distinct banks. Fragment indices come from gpu_mma.h.
 */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <math.h>

#include "gpu_kernels.cuh"
#include "gpu_mma.h"
#include "gpu_pack.h"

#define I8_ROW 48               /* bytes per shared-memory row of 32 int8 */
#define H_ROW 40                /* halves per shared-memory row of 32 halves */

/* ------------------------------------------------------------------ tensor-core wrappers */

static __device__ __forceinline__ void mma_s8_k32(int c[4], const int a[4], const int b[2]) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                 : "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#endif
}

static __device__ __forceinline__ void mma_s8_k16(int c[4], const int a[2], int b) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("mma.sync.aligned.m16n8k16.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5}, {%6}, {%0,%1,%2,%3};"
                 : "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(b));
#endif
}

template <bool BF16>
static __device__ __forceinline__ void mma_h16(float c[4], const unsigned a[4], const unsigned b[2]) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    if (BF16)
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                     : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
    else
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                     : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#endif
}

/* ------------------------------------------------------------------ activation preparation */

/* One warp per (row, 32-block): int8 = round(x / d), d = amax / 127; sums per 16. */
__global__ void k_quantize_act(const float *x, int n, int K, int k_pad, int8_t *q, float *d, int *sum16) {
    const int nb = k_pad / 32;
    const int64_t id = (int64_t)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    const int lane = threadIdx.x & 31;
    if (id >= (int64_t)n * nb) return;
    const int row = (int)(id / nb), b = (int)(id % nb), k = b * 32 + lane;
    const float v = k < K ? x[(int64_t)row * K + k] : 0.0f;
    float amax = fabsf(v);
    for (int o = 16; o; o >>= 1) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, o));
    const float dd = amax / 127.0f, inv = dd > 0 ? 1.0f / dd : 0.0f;
    const int qi = (int)roundf(v * inv);
    q[(int64_t)row * k_pad + k] = (int8_t)qi;
    int s = qi;
    for (int o = 8; o; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);   /* within each half-warp */
    if (lane == 0) d[(int64_t)row * nb + b] = dd;
    if ((lane & 15) == 0) sum16[(int64_t)row * (k_pad / 16) + b * 2 + lane / 16] = s;
}

template <bool BF16>
__global__ void k_convert_act(const float *x, int n, int K, int k_pad, uint16_t *h) {
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (int64_t)n * k_pad) return;
    const int row = (int)(i / k_pad), k = (int)(i % k_pad);
    const float v = k < K ? x[(int64_t)row * K + k] : 0.0f;
    if (BF16) { __nv_bfloat16 b = __float2bfloat16_rn(v); h[i] = *(uint16_t *)&b; }
    else      { __half b = __float2half_rn(v); h[i] = *(uint16_t *)&b; }
}

cudaError_t gpu_quantize_act(gpu_act *a, cudaStream_t st) {
    const int64_t warps = (int64_t)a->n * (a->k_pad / 32);
    if (warps == 0) return cudaSuccess;
    k_quantize_act<<<(unsigned)((warps + 7) / 8), 256, 0, st>>>(a->x, a->n, a->K, a->k_pad, a->q, a->d, a->sum16);
    a->q_ready = 1;
    return cudaGetLastError();
}

cudaError_t gpu_convert_act(gpu_act *a, int kind, cudaStream_t st) {
    const int64_t n = (int64_t)a->n * a->k_pad;
    if (n == 0) return cudaSuccess;
    const unsigned grid = (unsigned)((n + 255) / 256);
    if (kind == GPU_KIND_BF16) k_convert_act<true><<<grid, 256, 0, st>>>(a->x, a->n, a->K, a->k_pad, a->h);
    else k_convert_act<false><<<grid, 256, 0, st>>>(a->x, a->n, a->K, a->k_pad, a->h);
    a->h_kind = kind;
    return cudaGetLastError();
}

/* ------------------------------------------------------------------ GEMM epilogue */

static __device__ __forceinline__ void store_out(float *y, int ldy, const float *bias, int accumulate, int n_out,
                                                 int n_tok, int r, int t, float v) {
    if (r >= n_out || t >= n_tok) return;
    if (bias) v += bias[r];
    float *p = y + (int64_t)t * ldy + r;
    *p = accumulate ? *p + v : v;
}

/* A warp's 32 x 32 accumulator tile: 2 x 4 mma fragments of 16 x 8, 4 values per lane. */
static __device__ __forceinline__ void acc_zero(float acc[2][4][4]) {
    #pragma unroll
    for (int i = 0; i < 2; i++)
        #pragma unroll
        for (int j = 0; j < 4; j++)
            #pragma unroll
            for (int c = 0; c < 4; c++) acc[i][j][c] = 0.0f;
}

/* Store the warp's tile whose first row is r0 and first token t0 (bounds-checked per value). */
static __device__ __forceinline__ void store_tile(const float acc[2][4][4], int lane, float *y, int ldy,
                                                  const float *bias, int accumulate, int n_out, int n_tok,
                                                  int r0, int t0) {
    #pragma unroll
    for (int mi = 0; mi < 2; mi++)
        #pragma unroll
        for (int ni = 0; ni < 4; ni++)
            #pragma unroll
            for (int i = 0; i < 4; i++) {
                int row, n;
                gpu_frag_c(lane, i, &row, &n);
                store_out(y, ldy, bias, accumulate, n_out, n_tok, r0 + mi * 16 + row, t0 + ni * 8 + n, acc[mi][ni][i]);
            }
}

/* ------------------------------------------------------------------ int8 GEMM */

template <int G, bool OFF, bool P4>
__global__ void __launch_bounds__(GPU_GEMM_THREADS)
k_gemm_i8(const int8_t *__restrict__ W, const float *__restrict__ wscale, const float *__restrict__ woff,
          int n_out, int k_pad, const int8_t *__restrict__ X, const float *__restrict__ xd,
          const int *__restrict__ xsum, int n_tok, float *y, int ldy, const float *bias, int accumulate, int bias4,
          const int *__restrict__ offs, long long w_stride, long long s_stride) {
    constexpr int NG = 32 / G;                       /* weight groups per 32-wide k step */
    __shared__ __align__(16) int8_t Ws[GPU_GEMM_BM * I8_ROW];
    __shared__ __align__(16) int8_t Xs[GPU_GEMM_BN * I8_ROW];
    __shared__ float ws_s[GPU_GEMM_BM][NG], wo_s[GPU_GEMM_BM][NG], xd_s[GPU_GEMM_BN];
    __shared__ int xs_s[GPU_GEMM_BN][2];

    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int row0 = blockIdx.x * GPU_GEMM_BM;
    int tok0 = blockIdx.y * GPU_GEMM_BN;
    if (offs) {
        /* grouped (MoE): blockIdx.z is the expert; its rows are [offs[z], offs[z+1]) of X
         * and y, its weights the z-th of a stack of equal matrices */
        const int e = blockIdx.z, lo = offs[e], hi = offs[e + 1];
        tok0 += lo;
        if (tok0 >= hi) return;               /* whole block: no barrier has been reached */
        n_tok = hi;
        W += (long long)e * w_stride;
        wscale += (long long)e * s_stride;
        if (OFF) woff += (long long)e * s_stride;
    }
    const int wm = (warp & 1) * 32, wn = (warp >> 1) * 32;
    const int nkb = k_pad / 32, ngw = k_pad / G;
    float acc[2][4][4];
    acc_zero(acc);

    for (int kb = 0; kb < nkb; kb++) {
        {   /* stage: each thread one 16-byte piece of W and of X, then the scales */
            const int r = tid >> 1, part = tid & 1;
            int4 xv = make_int4(0, 0, 0, 0);
            if (tok0 + r < n_tok) xv = *(const int4 *)(X + (int64_t)(tok0 + r) * k_pad + kb * 32 + part * 16);
            *(int4 *)(Xs + r * I8_ROW + part * 16) = xv;
            if (P4) {
                /* 8 nibble bytes: values part*8 .. +7 (low nibbles) and 16 + part*8 .. +7 (high) */
                int2 pv = make_int2(0, 0);
                if (row0 + r < n_out) pv = *(const int2 *)(W + (int64_t)(row0 + r) * (k_pad / 2) + kb * 16 + part * 8);
                const unsigned b4 = (unsigned)bias4 * 0x01010101u;
                const unsigned lo0 = __vsub4((unsigned)pv.x & 0x0F0F0F0Fu, b4), lo1 = __vsub4((unsigned)pv.y & 0x0F0F0F0Fu, b4);
                const unsigned hi0 = __vsub4(((unsigned)pv.x >> 4) & 0x0F0F0F0Fu, b4);
                const unsigned hi1 = __vsub4(((unsigned)pv.y >> 4) & 0x0F0F0F0Fu, b4);
                /* rows past n_out must stay 0, not -bias */
                const bool ok = row0 + r < n_out;
                *(int2 *)(Ws + r * I8_ROW + part * 8) = ok ? make_int2((int)lo0, (int)lo1) : make_int2(0, 0);
                *(int2 *)(Ws + r * I8_ROW + 16 + part * 8) = ok ? make_int2((int)hi0, (int)hi1) : make_int2(0, 0);
            } else {
                int4 wv = make_int4(0, 0, 0, 0);
                if (row0 + r < n_out) wv = *(const int4 *)(W + (int64_t)(row0 + r) * k_pad + kb * 32 + part * 16);
                *(int4 *)(Ws + r * I8_ROW + part * 16) = wv;
            }
            if (tid < GPU_GEMM_BM) {
                const bool ok = row0 + tid < n_out;
                #pragma unroll
                for (int g = 0; g < NG; g++) {
                    const int64_t si = (int64_t)(row0 + tid) * ngw + kb * NG + g;
                    ws_s[tid][g] = ok ? wscale[si] : 0.0f;
                    wo_s[tid][g] = ok && OFF ? woff[si] : 0.0f;
                }
            } else {
                const int c = tid - GPU_GEMM_BM;
                const bool ok = tok0 + c < n_tok;
                xd_s[c] = ok ? xd[(int64_t)(tok0 + c) * nkb + kb] : 0.0f;
                xs_s[c][0] = ok ? xsum[(int64_t)(tok0 + c) * (nkb * 2) + kb * 2] : 0;
                xs_s[c][1] = ok ? xsum[(int64_t)(tok0 + c) * (nkb * 2) + kb * 2 + 1] : 0;
            }
        }
        __syncthreads();
        if (G == 32) {
            int a[2][4], b[4][2];
            #pragma unroll
            for (int mi = 0; mi < 2; mi++)
                #pragma unroll
                for (int r = 0; r < 4; r++) {
                    int row, k;
                    gpu_frag_a_s8k32(lane, r, &row, &k);
                    a[mi][r] = *(const int *)(Ws + (wm + mi * 16 + row) * I8_ROW + k);
                }
            #pragma unroll
            for (int ni = 0; ni < 4; ni++)
                #pragma unroll
                for (int r = 0; r < 2; r++) {
                    int n, k;
                    gpu_frag_b_s8k32(lane, r, &n, &k);
                    b[ni][r] = *(const int *)(Xs + (wn + ni * 8 + n) * I8_ROW + k);
                }
            #pragma unroll
            for (int mi = 0; mi < 2; mi++)
                #pragma unroll
                for (int ni = 0; ni < 4; ni++) {
                    int c[4] = { 0, 0, 0, 0 };
                    mma_s8_k32(c, a[mi], b[ni]);
                    #pragma unroll
                    for (int i = 0; i < 4; i++) {
                        int row, n;
                        gpu_frag_c(lane, i, &row, &n);
                        const int R = wm + mi * 16 + row, N = wn + ni * 8 + n;
                        float v = (float)c[i] * ws_s[R][0] * xd_s[N];
                        if (OFF) v += wo_s[R][0] * xd_s[N] * (float)(xs_s[N][0] + xs_s[N][1]);
                        acc[mi][ni][i] += v;
                    }
                }
        } else {
            #pragma unroll
            for (int hk = 0; hk < 2; hk++) {
                int a[2][2], b[4];
                #pragma unroll
                for (int mi = 0; mi < 2; mi++)
                    #pragma unroll
                    for (int r = 0; r < 2; r++) {
                        int row, k;
                        gpu_frag_a_s8k16(lane, r, &row, &k);
                        a[mi][r] = *(const int *)(Ws + (wm + mi * 16 + row) * I8_ROW + hk * 16 + k);
                    }
                #pragma unroll
                for (int ni = 0; ni < 4; ni++) {
                    int n, k;
                    gpu_frag_b_s8k16(lane, &n, &k);
                    b[ni] = *(const int *)(Xs + (wn + ni * 8 + n) * I8_ROW + hk * 16 + k);
                }
                #pragma unroll
                for (int mi = 0; mi < 2; mi++)
                    #pragma unroll
                    for (int ni = 0; ni < 4; ni++) {
                        int c[4] = { 0, 0, 0, 0 };
                        mma_s8_k16(c, a[mi], b[ni]);
                        #pragma unroll
                        for (int i = 0; i < 4; i++) {
                            int row, n;
                            gpu_frag_c(lane, i, &row, &n);
                            const int R = wm + mi * 16 + row, N = wn + ni * 8 + n;
                            float v = (float)c[i] * ws_s[R][hk] * xd_s[N];
                            if (OFF) v += wo_s[R][hk] * xd_s[N] * (float)xs_s[N][hk];
                            acc[mi][ni][i] += v;
                        }
                    }
            }
        }
        __syncthreads();
    }
    store_tile(acc, lane, y, ldy, bias, accumulate, n_out, n_tok, row0 + wm, tok0 + wn);
}

/* ------------------------------------------------------------------ f16 / bf16 GEMM */

template <bool BF16>
__global__ void __launch_bounds__(GPU_GEMM_THREADS)
k_gemm_h(const uint16_t *__restrict__ W, int n_out, int k_pad, const uint16_t *__restrict__ X, int n_tok,
         float *y, int ldy, const float *bias, int accumulate) {
    __shared__ __align__(16) uint16_t Ws[GPU_GEMM_BM * H_ROW];
    __shared__ __align__(16) uint16_t Xs[GPU_GEMM_BN * H_ROW];
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int row0 = blockIdx.x * GPU_GEMM_BM, tok0 = blockIdx.y * GPU_GEMM_BN;
    const int wm = (warp & 1) * 32, wn = (warp >> 1) * 32;
    float acc[2][4][4];
    acc_zero(acc);

    for (int kb = 0; kb < k_pad / 32; kb++) {
        #pragma unroll
        for (int p = 0; p < 2; p++) {            /* 64 rows x 4 pieces of 8 halves, twice */
            const int idx = tid + p * GPU_GEMM_THREADS, r = idx >> 2, part = idx & 3;
            int4 wv = make_int4(0, 0, 0, 0), xv = make_int4(0, 0, 0, 0);
            if (row0 + r < n_out) wv = *(const int4 *)(W + (int64_t)(row0 + r) * k_pad + kb * 32 + part * 8);
            if (tok0 + r < n_tok) xv = *(const int4 *)(X + (int64_t)(tok0 + r) * k_pad + kb * 32 + part * 8);
            *(int4 *)(Ws + r * H_ROW + part * 8) = wv;
            *(int4 *)(Xs + r * H_ROW + part * 8) = xv;
        }
        __syncthreads();
        #pragma unroll
        for (int hk = 0; hk < 2; hk++) {
            unsigned a[2][4], b[4][2];
            #pragma unroll
            for (int mi = 0; mi < 2; mi++)
                #pragma unroll
                for (int r = 0; r < 4; r++) {
                    int row, k;
                    gpu_frag_a_h16(lane, r, &row, &k);
                    a[mi][r] = *(const unsigned *)(Ws + (wm + mi * 16 + row) * H_ROW + hk * 16 + k);
                }
            #pragma unroll
            for (int ni = 0; ni < 4; ni++)
                #pragma unroll
                for (int r = 0; r < 2; r++) {
                    int n, k;
                    gpu_frag_b_h16(lane, r, &n, &k);
                    b[ni][r] = *(const unsigned *)(Xs + (wn + ni * 8 + n) * H_ROW + hk * 16 + k);
                }
            #pragma unroll
            for (int mi = 0; mi < 2; mi++)
                #pragma unroll
                for (int ni = 0; ni < 4; ni++) mma_h16<BF16>(acc[mi][ni], a[mi], b[ni]);
        }
        __syncthreads();
    }
    store_tile(acc, lane, y, ldy, bias, accumulate, n_out, n_tok, row0 + wm, tok0 + wn);
}

/* ------------------------------------------------------------------ f32 GEMM (SIMT) */

__global__ void k_gemm_f32(const float *__restrict__ W, int n_out, int K, int k_pad, const float *__restrict__ X,
                           int n_tok, float *y, int ldy, const float *bias, int accumulate) {
    __shared__ float Ws[16][17], Xs[16][17];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int r0 = blockIdx.x * 16, t0 = blockIdx.y * 16;
    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += 16) {
        const int k = k0 + tx;
        Ws[ty][tx] = (r0 + ty < n_out && k < K) ? W[(int64_t)(r0 + ty) * k_pad + k] : 0.0f;
        Xs[ty][tx] = (t0 + ty < n_tok && k < K) ? X[(int64_t)(t0 + ty) * K + k] : 0.0f;
        __syncthreads();
        for (int kk = 0; kk < 16; kk++) acc += Ws[tx][kk] * Xs[ty][kk];
        __syncthreads();
    }
    store_out(y, ldy, bias, accumulate, n_out, n_tok, r0 + tx, t0 + ty, acc);
}

/* Plain (offs NULL) or grouped GEMM; grouped: n_group experts, at most max_rows rows each. */
static cudaError_t gemm_any(const gpu_mat *W, const gpu_act *a, float *y, int ldy, const float *bias, int accumulate,
                            const int *offs, int n_group, int max_rows, cudaStream_t st) {
    if (a->n == 0) return cudaSuccess;
    if (a->K != W->n_in) return cudaErrorInvalidValue;
    int gx, gy;
    gpu_gemm_grid(W->n_out, offs ? max_rows : a->n, &gx, &gy);
    const dim3 grid((unsigned)gx, (unsigned)gy, (unsigned)(offs ? n_group : 1));
    const long long w_stride = W->w_stride, s_stride = W->s_stride;
    if (offs && (W->kind != GPU_KIND_I8 || gy == 0)) return gy == 0 ? cudaSuccess : cudaErrorNotSupported;
    switch (W->kind) {
    case GPU_KIND_I8: {
        if (!a->q_ready) return cudaErrorInvalidValue;
        const int8_t *w = (const int8_t *)W->w;
#define GEMM_I8(G_, OFF_, P4_)                                                                                  \
    k_gemm_i8<G_, OFF_, P4_><<<grid, GPU_GEMM_THREADS, 0, st>>>(w, W->scale, W->off, W->n_out, W->k_pad, a->q, a->d, \
                                                              a->sum16, a->n, y, ldy, bias, accumulate, W->bias4,     \
                                                              offs, w_stride, s_stride)
        if (W->pack4 && W->group != 32) return cudaErrorInvalidValue;
        if (W->pack4 && W->has_off) GEMM_I8(32, true, true);
        else if (W->pack4) GEMM_I8(32, false, true);
        else if (W->group == 32 && W->has_off) GEMM_I8(32, true, false);
        else if (W->group == 32) GEMM_I8(32, false, false);
        else if (W->has_off) GEMM_I8(16, true, false);
        else GEMM_I8(16, false, false);
#undef GEMM_I8
        break;
    }
    case GPU_KIND_F16:
    case GPU_KIND_BF16:
        if (a->h_kind != W->kind) return cudaErrorInvalidValue;
        if (W->kind == GPU_KIND_BF16)
            k_gemm_h<true><<<grid, GPU_GEMM_THREADS, 0, st>>>((const uint16_t *)W->w, W->n_out, W->k_pad, a->h, a->n, y,
                                                             ldy, bias, accumulate);
        else
            k_gemm_h<false><<<grid, GPU_GEMM_THREADS, 0, st>>>((const uint16_t *)W->w, W->n_out, W->k_pad, a->h, a->n, y,
                                                              ldy, bias, accumulate);
        break;
    case GPU_KIND_F32: {
        const dim3 g16((unsigned)((W->n_out + 15) / 16), (unsigned)((a->n + 15) / 16));
        k_gemm_f32<<<g16, dim3(16, 16), 0, st>>>((const float *)W->w, W->n_out, W->n_in, W->k_pad, a->x, a->n, y, ldy,
                                                 bias, accumulate);
        break;
    }
    default:
        return cudaErrorInvalidValue;
    }
    return cudaGetLastError();
}

cudaError_t gpu_gemm(const gpu_mat *W, const gpu_act *a, float *y, int ldy, const float *bias, int accumulate,
                     cudaStream_t st) {
    return gemm_any(W, a, y, ldy, bias, accumulate, NULL, 0, 0, st);
}

cudaError_t gpu_gemm_grouped(const gpu_mat *W, int n_group, const int *offs, int max_rows, const gpu_act *a, float *y,
                             int ldy, cudaStream_t st) {
    if (!offs || n_group <= 0) return cudaErrorInvalidValue;
    return gemm_any(W, a, y, ldy, NULL, 0, offs, n_group, max_rows, st);
}

/* ------------------------------------------------------------------ row-wise and elementwise */

/* One warp per row; float sums (the CPU reference sums in double: see the tolerance in
 * tests/gpu/kernel_check.cu). */
__global__ void k_rmsnorm(float *y, const float *x, const float *w, int n_rows, int n, float eps) {
    const int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32, lane = threadIdx.x & 31;
    if (row >= n_rows) return;
    const float *xr = x + (int64_t)row * n;
    float *yr = y + (int64_t)row * n;
    float s = 0.0f;
    for (int i = lane; i < n; i += 32) s += xr[i] * xr[i];
    for (int o = 16; o; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
    const float scale = 1.0f / sqrtf(s / (float)n + eps);
    for (int i = lane; i < n; i += 32) yr[i] = w ? __fmul_rn(__fmul_rn(xr[i], scale), w[i]) : __fmul_rn(xr[i], scale);
}

cudaError_t gpu_rmsnorm(float *y, const float *x, const float *w, int n_rows, int n, float eps, cudaStream_t st) {
    if (n_rows <= 0) return cudaSuccess;
    k_rmsnorm<<<(unsigned)((n_rows + 7) / 8), 256, 0, st>>>(y, x, w, n_rows, n, eps);
    return cudaGetLastError();
}

/* One thread per rotated pair; one fused multiply-add after rounding the x1 product, as
 * ops.c (and llama.cpp's compiled rotate_pairs) do: bit-identical to the CPU. */
__global__ void k_rope(float *x, const int *pos, int n_tok, int n_head, int head_dim, int n_dims, int neox,
                       const float *cos_t, const float *sin_t) {
    const int half = n_dims / 2;
    const int64_t id = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (id >= (int64_t)n_tok * n_head * half) return;
    const int i = (int)(id % half);
    const int64_t th = id / half;                 /* token * n_head + head */
    const int t = (int)(th / n_head);
    float *h = x + th * head_dim;
    const float c = cos_t[(int64_t)pos[t] * half + i], s = sin_t[(int64_t)pos[t] * half + i];
    const int i0 = neox ? i : 2 * i, i1 = neox ? i + half : 2 * i + 1;
    const float x0 = h[i0], x1 = h[i1];
    h[i0] = __fmaf_rn(x0, c, -__fmul_rn(x1, s));
    h[i1] = __fmaf_rn(x0, s, __fmul_rn(x1, c));
}

cudaError_t gpu_rope(float *x, const int *pos, int n_tok, int n_head, int head_dim, int n_dims, int neox,
                     const float *cos_t, const float *sin_t, cudaStream_t st) {
    const int64_t n = (int64_t)n_tok * n_head * (n_dims / 2);
    if (n <= 0) return cudaSuccess;
    k_rope<<<(unsigned)((n + 255) / 256), 256, 0, st>>>(x, pos, n_tok, n_head, head_dim, n_dims, neox, cos_t, sin_t);
    return cudaGetLastError();
}

__global__ void k_swiglu(float *y, const float *g, const float *u, int64_t n) {
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const float gv = g[i];
    y[i] = gv / (1.0f + expf(-gv)) * u[i];
}

cudaError_t gpu_swiglu(float *y, const float *g, const float *u, int64_t n, cudaStream_t st) {
    if (n <= 0) return cudaSuccess;
    k_swiglu<<<(unsigned)((n + 255) / 256), 256, 0, st>>>(y, g, u, n);
    return cudaGetLastError();
}

__global__ void k_gather_rows(float *dst, const float *src, const int *rows, int n_rows, int width) {
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (int64_t)n_rows * width) return;
    const int r = (int)(i / width), c = (int)(i % width);
    dst[i] = src[(int64_t)rows[r] * width + c];
}

cudaError_t gpu_gather_rows(float *dst, const float *src, const int *rows, int n_rows, int width, cudaStream_t st) {
    const int64_t n = (int64_t)n_rows * width;
    if (n <= 0) return cudaSuccess;
    k_gather_rows<<<(unsigned)((n + 255) / 256), 256, 0, st>>>(dst, src, rows, n_rows, width);
    return cudaGetLastError();
}

__global__ void k_moe_combine(float *out, const float *y, const float *w, const int *slot, int n_tok, int k, int width) {
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (int64_t)n_tok * width) return;
    const int t = (int)(i / width), c = (int)(i % width);
    float o = out[i];   /* choices added one at a time, in order, as ops_moe_combine's axpy */
    for (int j = 0; j < k; j++) o += w[t * k + j] * y[(int64_t)slot[t * k + j] * width + c];
    out[i] = o;
}

cudaError_t gpu_moe_combine(float *out, const float *y, const float *w, const int *slot, int n_tok, int k, int width,
                            cudaStream_t st) {
    const int64_t n = (int64_t)n_tok * width;
    if (n <= 0) return cudaSuccess;
    k_moe_combine<<<(unsigned)((n + 255) / 256), 256, 0, st>>>(out, y, w, slot, n_tok, k, width);
    return cudaGetLastError();
}

/* ------------------------------------------------------------------ K/V cache
 * Store and load convert between float rows and the cache's storage; the partial pass
 * loads a layer's cached rows, then scatters the active rows' fresh K/V over them. */

/* F32 / F16: one thread per value. */
__global__ void k_kv_store_flat(void *dst, const float *x, int64_t n, int kind) {
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    if (kind == GPU_KV_F32) ((float *)dst)[i] = x[i];
    else ((unsigned short *)dst)[i] = __half_as_ushort(__float2half_rn(x[i]));
}

/* Q8_0: one warp per block of 32 values, as quant.c's um_quantize_q8_0 (d = amax / 127,
 * id = 1 / d in IEEE division, q = roundf(x * id); the block holds d as f16, then q). */
__global__ void k_kv_store_q8_0(uint8_t *dst, const float *x, int n_rows, int width) {
    const int nb = width / 32;
    const int64_t id = (int64_t)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    const int lane = threadIdx.x & 31;
    if (id >= (int64_t)n_rows * nb) return;
    const int64_t row = id / nb;
    const int b = (int)(id % nb);
    const float v = x[row * width + (int64_t)b * 32 + lane];
    float amax = fabsf(v);
    for (int o = 16; o; o >>= 1) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, o));
    const float d = __fdiv_rn(amax, 127.0f), inv = d != 0.0f ? __fdiv_rn(1.0f, d) : 0.0f;
    uint8_t *blk = dst + (uint64_t)row * (uint64_t)(34 * nb) + (uint64_t)b * 34;
    if (lane == 0) *(unsigned short *)blk = __half_as_ushort(__float2half_rn(d));
    blk[2 + lane] = (uint8_t)(int8_t)roundf(__fmul_rn(v, inv));
}

__global__ void k_kv_load(float *y, const void *src, int64_t n, int kind) {
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    if (kind == GPU_KV_F32) y[i] = ((const float *)src)[i];
    else if (kind == GPU_KV_F16) y[i] = __half2float(__ushort_as_half(((const unsigned short *)src)[i]));
    else {   /* Q8_0: value i of the contiguous rows is value i % 32 of block i / 32 */
        const uint8_t *blk = (const uint8_t *)src + (i / 32) * 34;
        const float d = __half2float(__ushort_as_half(*(const unsigned short *)blk));
        y[i] = __fmul_rn((float)(int8_t)blk[2 + i % 32], d);
    }
}

cudaError_t gpu_kv_store(void *dst, const float *x, int n_rows, int width, int kind, cudaStream_t st) {
    const int64_t n = (int64_t)n_rows * width;
    if (n <= 0) return cudaSuccess;
    if (kind == GPU_KV_Q8_0) {
        if (width % 32) return cudaErrorInvalidValue;
        const int64_t blocks = n / 32;
        k_kv_store_q8_0<<<(unsigned)((blocks + 7) / 8), 256, 0, st>>>((uint8_t *)dst, x, n_rows, width);
    } else if (kind == GPU_KV_F32 || kind == GPU_KV_F16) {
        k_kv_store_flat<<<(unsigned)((n + 255) / 256), 256, 0, st>>>(dst, x, n, kind);
    } else {
        return cudaErrorInvalidValue;
    }
    return cudaGetLastError();
}

cudaError_t gpu_kv_load(float *y, const void *src, int n_rows, int width, int kind, cudaStream_t st) {
    const int64_t n = (int64_t)n_rows * width;
    if (n <= 0) return cudaSuccess;
    if ((kind == GPU_KV_Q8_0 && width % 32) || kind < GPU_KV_F32 || kind > GPU_KV_Q8_0) return cudaErrorInvalidValue;
    k_kv_load<<<(unsigned)((n + 255) / 256), 256, 0, st>>>(y, src, n, kind);
    return cudaGetLastError();
}

__global__ void k_scatter_rows(float *dst, const float *src, const int *rows, int n_rows, int width) {
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (int64_t)n_rows * width) return;
    const int r = (int)(i / width), c = (int)(i % width);
    dst[(int64_t)rows[r] * width + c] = src[i];
}

cudaError_t gpu_scatter_rows(float *dst, const float *src, const int *rows, int n_rows, int width, cudaStream_t st) {
    const int64_t n = (int64_t)n_rows * width;
    if (n <= 0) return cudaSuccess;
    k_scatter_rows<<<(unsigned)((n + 255) / 256), 256, 0, st>>>(dst, src, rows, n_rows, width);
    return cudaGetLastError();
}

/* One warp per row; float sums (the host reference sums in double). */
__global__ void k_row_drift(float *out, const float *fresh, const float *base, const int *rows, int n_rows, int width) {
    const int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32, lane = threadIdx.x & 31;
    if (row >= n_rows) return;
    const float *a = fresh + (int64_t)row * width, *b = base + (int64_t)rows[row] * width;
    float dd = 0.0f, rr = 0.0f;
    for (int i = lane; i < width; i += 32) {
        const float x = a[i] - b[i];
        dd += x * x;
        rr += b[i] * b[i];
    }
    for (int o = 16; o; o >>= 1) {
        dd += __shfl_xor_sync(0xffffffffu, dd, o);
        rr += __shfl_xor_sync(0xffffffffu, rr, o);
    }
    if (lane == 0) out[row] = rr > 0.0f ? sqrtf(dd / rr) : 0.0f;
}

cudaError_t gpu_row_drift(float *out, const float *fresh, const float *base, const int *rows, int n_rows, int width,
                          cudaStream_t st) {
    if (n_rows <= 0) return cudaSuccess;
    k_row_drift<<<(unsigned)((n_rows + 7) / 8), 256, 0, st>>>(out, fresh, base, rows, n_rows, width);
    return cudaGetLastError();
}

/* ------------------------------------------------------------------ attention
 * Block = (query tile of QT, head h), 128 threads. Per key tile: scores S = Q K^T * scale
 * into shared memory, the online-softmax update of each query's running max m and sum l
 * (one thread per query), then O = O * alpha + P V. K rows are padded by one float so the
 * score loop (threads over keys) does not hit one bank. fp32 throughout. */
__global__ void __launch_bounds__(128)
k_attention(float *out, const float *q, const float *k, const float *v, int n_q, int n_kv, int n_head,
            int n_head_kv, int hd) {
    extern __shared__ float sm[];
    constexpr int QT = GPU_ATT_QT, KT = GPU_ATT_KT;
    float *Qs = sm;                               /* (QT, hd) */
    float *Os = Qs + QT * hd;                     /* (QT, hd) */
    float *Ks = Os + QT * hd;                     /* (KT, hd + 1) */
    float *Vs = Ks + KT * (hd + 1);               /* (KT, hd) */
    float *S = Vs + KT * hd;                      /* (QT, KT) */
    float *m_s = S + QT * KT, *l_s = m_s + QT, *al_s = l_s + QT;
    const int h = blockIdx.y, g = h / (n_head / n_head_kv), q0 = blockIdx.x * QT, tid = threadIdx.x;
    const float scale = 1.0f / sqrtf((float)hd);
    const int64_t qs = (int64_t)n_head * hd, kvs = (int64_t)n_head_kv * hd;

    for (int i = tid; i < QT * hd; i += blockDim.x) {
        const int qi = i / hd, d = i % hd;
        Qs[i] = q0 + qi < n_q ? q[(int64_t)(q0 + qi) * qs + (int64_t)h * hd + d] : 0.0f;
        Os[i] = 0.0f;
    }
    if (tid < QT) { m_s[tid] = -INFINITY; l_s[tid] = 0.0f; }
    __syncthreads();
    for (int j0 = 0; j0 < n_kv; j0 += KT) {
        for (int i = tid; i < KT * hd; i += blockDim.x) {
            const int kj = i / hd, d = i % hd;
            const bool ok = j0 + kj < n_kv;
            const int64_t src = (int64_t)(j0 + kj) * kvs + (int64_t)g * hd + d;
            Ks[kj * (hd + 1) + d] = ok ? k[src] : 0.0f;
            Vs[kj * hd + d] = ok ? v[src] : 0.0f;
        }
        __syncthreads();
        for (int i = tid; i < QT * KT; i += blockDim.x) {
            const int qi = i / KT, kj = i % KT;
            float s = -INFINITY;
            if (j0 + kj < n_kv) {
                s = 0.0f;
                for (int d = 0; d < hd; d++) s += Qs[qi * hd + d] * Ks[kj * (hd + 1) + d];
                s *= scale;
            }
            S[i] = s;
        }
        __syncthreads();
        if (tid < QT) {
            float mx = m_s[tid];
            for (int j = 0; j < KT; j++) mx = fmaxf(mx, S[tid * KT + j]);
            const float alpha = m_s[tid] == -INFINITY ? 0.0f : expf(m_s[tid] - mx);
            float sum = 0.0f;
            for (int j = 0; j < KT; j++) {
                const float p = S[tid * KT + j] == -INFINITY ? 0.0f : expf(S[tid * KT + j] - mx);
                S[tid * KT + j] = p;
                sum += p;
            }
            l_s[tid] = l_s[tid] * alpha + sum;
            m_s[tid] = mx;
            al_s[tid] = alpha;
        }
        __syncthreads();
        for (int i = tid; i < QT * hd; i += blockDim.x) {
            const int qi = i / hd, d = i % hd;
            float o = Os[i] * al_s[qi];
            for (int j = 0; j < KT; j++) o += S[qi * KT + j] * Vs[j * hd + d];
            Os[i] = o;
        }
        __syncthreads();
    }
    for (int i = tid; i < QT * hd; i += blockDim.x) {
        const int qi = i / hd, d = i % hd;
        if (q0 + qi < n_q)
            out[(int64_t)(q0 + qi) * qs + (int64_t)h * hd + d] = l_s[qi] > 0 ? Os[i] / l_s[qi] : 0.0f;
    }
}

cudaError_t gpu_kernels_init(int head_dim) {
    return cudaFuncSetAttribute(k_attention, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                (int)gpu_attention_smem(head_dim));
}

cudaError_t gpu_attention(float *out, const float *q, const float *k, const float *v, int n_q, int n_kv, int n_head,
                          int n_head_kv, int head_dim, cudaStream_t st) {
    if (n_q <= 0) return cudaSuccess;
    if (head_dim > 256 || n_head_kv <= 0 || n_head % n_head_kv) return cudaErrorInvalidValue;
    const dim3 grid((unsigned)((n_q + GPU_ATT_QT - 1) / GPU_ATT_QT), (unsigned)n_head);
    k_attention<<<grid, 128, gpu_attention_smem(head_dim), st>>>(out, q, k, v, n_q, n_kv, n_head, n_head_kv, head_dim);
    return cudaGetLastError();
}

/* ------------------------------------------------------------------ snapshot reduction
 * One block per row: pass 1 finds the largest two logits (and the argmax, lowest index on
 * ties), pass 2 sums exp((l - max) / temp) and its first moment for the entropy:
 *   H = log Z - sum p (l - max) / temp,  p_max = 1 / Z,  p_second = exp((l2 - max) / temp) / Z;
 * then k passes pick the top-k candidates in rank order (value, then lower id). */
/* (v, i) ranks before (bv, bi): larger value first, lower index on ties. */
static __device__ __forceinline__ bool ranks_before(float v, int i, float bv, int bi) {
    return v > bv || (v == bv && i < bi);
}

__global__ void k_row_stats(const float *logits, int n_vocab, float temp, int *argmax, float *p_max, float *p_second,
                            float *entropy, int k, int *top_id, float *top_p) {
    __shared__ float s1[256], s2[256];
    __shared__ int si[256];
    const float *l = logits + (int64_t)blockIdx.x * n_vocab;
    const int tid = threadIdx.x;
    float b1 = -INFINITY, b2 = -INFINITY;
    int bi = 0x7fffffff;
    for (int i = tid; i < n_vocab; i += blockDim.x) {
        const float x = l[i];
        if (x > b1) { b2 = b1; b1 = x; bi = i; }
        else if (x > b2) b2 = x;
    }
    s1[tid] = b1; s2[tid] = b2; si[tid] = bi;
    __syncthreads();
    for (int o = blockDim.x / 2; o; o >>= 1) {
        if (tid < o) {
            float a1 = s1[tid], a2 = s2[tid], c1 = s1[tid + o], c2 = s2[tid + o];
            int ai = si[tid], ci = si[tid + o];
            if (c1 > a1 || (c1 == a1 && ci < ai)) {
                s2[tid] = fmaxf(a1, c2); s1[tid] = c1; si[tid] = ci;
            } else {
                s2[tid] = fmaxf(a2, c1);
            }
        }
        __syncthreads();
    }
    const float mx = s1[0], second = s2[0];
    const int am = si[0];
    __syncthreads();
    const float it = 1.0f / temp;
    float z = 0.0f, m1 = 0.0f;
    for (int i = tid; i < n_vocab; i += blockDim.x) {
        const float u = (l[i] - mx) * it, e = expf(u);
        z += e;
        m1 += e * u;
    }
    s1[tid] = z; s2[tid] = m1;
    __syncthreads();
    for (int o = blockDim.x / 2; o; o >>= 1) {
        if (tid < o) { s1[tid] += s1[tid + o]; s2[tid] += s2[tid + o]; }
        __syncthreads();
    }
    const float Z = s1[0];
    if (tid == 0) {
        argmax[blockIdx.x] = am;
        p_max[blockIdx.x] = 1.0f / Z;
        p_second[blockIdx.x] = second == -INFINITY ? 0.0f : expf((second - mx) * it) / Z;
        entropy[blockIdx.x] = logf(Z) - s2[0] / Z;
    }
    /* top-k, one block-wide pass per rank: the best entry ranked after the previous pick */
    __shared__ float prev_v;
    __shared__ int prev_i;
    if (tid == 0) { prev_v = INFINITY; prev_i = -1; }
    __syncthreads();
    for (int j = 0; j < k; j++) {
        const float pv = prev_v;
        const int pi = prev_i;
        float bv = -INFINITY;
        int bi = 0x7fffffff;
        for (int i = tid; i < n_vocab; i += blockDim.x) {
            const float x = l[i];
            if (ranks_before(pv, pi, x, i) && ranks_before(x, i, bv, bi)) { bv = x; bi = i; }
        }
        __syncthreads();                          /* everyone has read prev_v / prev_i */
        s1[tid] = bv; si[tid] = bi;
        __syncthreads();
        for (int o = blockDim.x / 2; o; o >>= 1) {
            if (tid < o && ranks_before(s1[tid + o], si[tid + o], s1[tid], si[tid])) {
                s1[tid] = s1[tid + o];
                si[tid] = si[tid + o];
            }
            __syncthreads();
        }
        if (tid == 0) {
            const bool found = si[0] != 0x7fffffff;
            top_id[(int64_t)blockIdx.x * k + j] = found ? si[0] : -1;
            top_p[(int64_t)blockIdx.x * k + j] = found ? expf((s1[0] - mx) * it) / Z : 0.0f;
            prev_v = s1[0];
            prev_i = si[0];
        }
        __syncthreads();
    }
}

cudaError_t gpu_row_stats(const float *logits, int n_rows, int n_vocab, float temp, int *argmax, float *p_max,
                          float *p_second, float *entropy, int k, int *top_id, float *top_p, cudaStream_t st) {
    if (n_rows <= 0) return cudaSuccess;
    if (!(temp > 0) || k < 0 || (k > 0 && (!top_id || !top_p))) return cudaErrorInvalidValue;
    k_row_stats<<<(unsigned)n_rows, 256, 0, st>>>(logits, n_vocab, temp, argmax, p_max, p_second, entropy, k, top_id,
                                                  top_p);
    return cudaGetLastError();
}
