/*
 * kernel_check: every CUDA kernel of the backend against its CPU reference, llm.c
 * dev/cuda style: run the reference, run the kernel, check |gpu - ref| <= tol + eps*|ref|
 * element by element, print the first mismatches, then time the kernel.
 *
 *   kernel_check            run all checks, then the timings (exit 1 on any mismatch)
 *   kernel_check --probe    print the device line; exit 0 with a device, 3 without
 *   kernel_check --no-bench checks only
 *
 * References: the int8 GEMM against gpu_i8_dot_ref (the same integer-then-scale arithmetic
 * on the host: differences are float summation order only) and, loosely, against the
 * double dot of dequantized weights; f16/bf16/f32 GEMMs against double dots of the same
 * rounded inputs; rmsnorm, rope, attention, swiglu, moe combine against ops_*_ref; the K/V
 * cache's store and load (F32, F16, Q8_0) byte for byte against quant.c's reference
 * converters, its row scatter exactly and the K drift against double sums.
 */
#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <algorithm>
#include <vector>

#define UM_POOL_H               /* pool.h is C11-atomics only; ops_*_ref need no pool */
typedef struct um_pool um_pool;
extern "C" {
#include "gpu.h"
#include "ops.h"
#include "quant.h"
#include "util.h"
}
#include "gpu_kernels.cuh"
#include "gpu_pack.h"

#define CU(call)                                                                                   \
    do {                                                                                           \
        cudaError_t err_ = (call);                                                                 \
        if (err_ != cudaSuccess) {                                                                 \
            fprintf(stderr, "%s:%d: CUDA %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(err_)); \
            exit(2);                                                                               \
        }                                                                                          \
    } while (0)

static int n_failed, n_passed;
static uint64_t rs = 88172645463325252ull;
static float frand(void) {
    rs ^= rs << 13; rs ^= rs >> 7; rs ^= rs << 17;
    return (float)((rs >> 40) & 0xFFFFFF) / 8388608.0f - 1.0f;
}

template <typename T> static T *dev_copy(const T *h, size_t n) {
    T *d = NULL;
    CU(cudaMalloc((void **)&d, n * sizeof(T) + 16));
    if (h) CU(cudaMemcpy(d, h, n * sizeof(T), cudaMemcpyHostToDevice));
    return d;
}
template <typename T> static std::vector<T> host_copy(const T *d, size_t n) {
    std::vector<T> h(n);
    CU(cudaMemcpy(h.data(), d, n * sizeof(T), cudaMemcpyDeviceToHost));
    return h;
}

/* |got - ref| <= tol + eps * |ref| everywhere; prints the first 5 mismatches. */
static bool compare(const char *name, const float *got, const float *ref, size_t n, double tol, double eps) {
    int bad = 0;
    double worst = 0;
    for (size_t i = 0; i < n; i++) {
        const double diff = fabs((double)got[i] - ref[i]);
        const bool ok = diff <= tol + eps * fabs(ref[i]) && !isnan(got[i]);
        if (diff > worst || isnan(got[i])) worst = isnan(got[i]) ? INFINITY : diff;
        if (!ok && bad++ < 5) printf("    %s[%zu]: gpu %.9g ref %.9g\n", name, i, got[i], ref[i]);
    }
    printf("%-4s %-44s n=%-8zu max|diff| %.3g (tol %g + %g*|ref|)%s\n", bad ? "FAIL" : "ok", name, n, worst, tol, eps,
           bad ? "" : "");
    if (bad) { n_failed++; printf("    %d mismatches\n", bad); }
    else n_passed++;
    return !bad;
}

static float time_ms(void (*fn)(void *), void *ctx, int reps) {
    cudaEvent_t a, b;
    CU(cudaEventCreate(&a));
    CU(cudaEventCreate(&b));
    fn(ctx);                                   /* warm-up */
    CU(cudaEventRecord(a));
    for (int i = 0; i < reps; i++) fn(ctx);
    CU(cudaEventRecord(b));
    CU(cudaEventSynchronize(b));
    float ms = 0;
    CU(cudaEventElapsedTime(&ms, a, b));
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    return ms / reps;
}

/* ------------------------------------------------------------------ GEMM */

typedef struct gemm_case {
    gpu_mat W;
    gpu_act A;
    float  *y;
    int     ldy;
} gemm_case;

/* Upload W (n_out, n_in) of type t built from random floats (nibbles when pack4 and the
 * type allows); fills the host dequantized copy wd and the int8 values hq (n_out, k_pad). */
static gpu_mat make_weight(uint32_t t, int n_in, int n_out, bool pack4, std::vector<float> &wd,
                           std::vector<int8_t> &hq, std::vector<float> &hs, std::vector<float> &ho) {
    const um_type_traits *tr = um_traits(t);
    gpu_layout L = gpu_layout_for(t, n_in, n_out);
    if (pack4) gpu_layout_pack4(&L, n_out);
    std::vector<float> x(n_in), tmp(n_in);
    std::vector<uint8_t> blk(um_row_size(t, n_in));
    wd.assign((size_t)n_out * n_in, 0);
    gpu_mat m;
    memset(&m, 0, sizeof m);
    m.kind = L.kind; m.group = L.group; m.has_off = L.has_off; m.n_in = n_in; m.n_out = n_out; m.k_pad = (int)L.k_pad;
    m.pack4 = L.pack4; m.bias4 = L.bias4;
    const int64_t ng = L.kind == GPU_KIND_I8 ? L.k_pad / L.group : 0;
    std::vector<uint8_t> packed(L.bytes_w);
    hq.assign(L.kind == GPU_KIND_I8 ? (size_t)n_out * L.k_pad : 0, 0);
    hs.assign((size_t)(ng * n_out) + 1, 0);
    ho.assign((size_t)(ng * n_out) + 1, 0);
    const uint64_t row_w = L.bytes_w / n_out;
    for (int r = 0; r < n_out; r++) {
        for (int i = 0; i < n_in; i++) x[i] = frand() * 0.5f + (r % 7 == 0 ? 0.25f : 0.0f);
        tr->from_float_ref(x.data(), blk.data(), n_in);
        tr->to_float_ref(blk.data(), &wd[(size_t)r * n_in], n_in);
        if (L.kind == GPU_KIND_I8) {
            int8_t *q = &hq[(size_t)r * L.k_pad];
            gpu_pack_row(t, &L, blk.data(), n_in, q, &hs[r * ng], &ho[r * ng], tmp.data());
            if (L.pack4) gpu_nibble_pack(q, L.k_pad, L.bias4, &packed[r * row_w]);
            else memcpy(&packed[r * row_w], q, (size_t)L.k_pad);
        } else {
            gpu_pack_row_float(t, blk.data(), n_in, L.k_pad, &packed[r * row_w]);
        }
    }
    m.w = dev_copy(packed.data(), packed.size());
    if (ng) {
        m.scale = dev_copy(hs.data(), (size_t)ng * n_out);
        m.off = L.has_off ? dev_copy(ho.data(), (size_t)ng * n_out) : NULL;
    }
    return m;
}

static gpu_act make_act_buffers(const float *x_dev, int n, int K) {
    gpu_act a;
    memset(&a, 0, sizeof a);
    a.x = x_dev; a.n = n; a.K = K; a.k_pad = (int)gpu_round_up(K, 32);
    a.q = dev_copy<int8_t>(NULL, (size_t)n * a.k_pad);
    a.d = dev_copy<float>(NULL, (size_t)n * a.k_pad / 32);
    a.sum16 = dev_copy<int>(NULL, (size_t)n * a.k_pad / 16);
    a.h = dev_copy<uint16_t>(NULL, (size_t)n * a.k_pad);
    a.h_kind = -1;
    return a;
}

static void free_case(gpu_mat *m, gpu_act *a, float *xd, float *y) {
    cudaFree(m->w); cudaFree(m->scale); cudaFree(m->off);
    cudaFree(a->q); cudaFree(a->d); cudaFree(a->sum16); cudaFree(a->h);
    cudaFree(xd); cudaFree(y);
}

static void check_gemm(uint32_t t, int n_in, int n_out, int n_tok, bool with_bias, bool accumulate, bool pack4) {
    std::vector<float> wd, hs, ho;
    std::vector<int8_t> hq;
    gpu_mat W = make_weight(t, n_in, n_out, pack4, wd, hq, hs, ho);
    const gpu_layout L = gpu_layout_for(t, n_in, n_out);
    std::vector<float> x((size_t)n_tok * n_in), bias(n_out), y0((size_t)n_tok * n_out);
    for (auto &v : x) v = frand() * 2.0f;
    for (auto &v : bias) v = frand();
    for (auto &v : y0) v = frand();
    float *xd = dev_copy(x.data(), x.size());
    float *bd = with_bias ? dev_copy(bias.data(), bias.size()) : NULL;
    float *yd = dev_copy(y0.data(), y0.size());
    gpu_act A = make_act_buffers(xd, n_tok, n_in);
    if (W.kind == GPU_KIND_I8) CU(gpu_quantize_act(&A, 0));
    else if (W.kind != GPU_KIND_F32) CU(gpu_convert_act(&A, W.kind, 0));
    CU(gpu_gemm(&W, &A, yd, n_out, bd, accumulate, 0));
    CU(cudaDeviceSynchronize());
    std::vector<float> got = host_copy(yd, y0.size());

    /* references */
    std::vector<float> ref((size_t)n_tok * n_out), loose((size_t)n_tok * n_out);
    const int kp = (int)L.k_pad;
    std::vector<int8_t> aq((size_t)kp);
    std::vector<float> ad(kp / 32);
    std::vector<int> as(kp / 16);
    std::vector<float> xr(n_in);
    char name[96];
    if (W.kind == GPU_KIND_I8) {
        /* the activation quantization itself: the kernel's int8 must equal the host's */
        std::vector<int8_t> gq = host_copy(A.q, (size_t)n_tok * kp);
        std::vector<float> gd = host_copy(A.d, (size_t)n_tok * kp / 32);
        std::vector<float> hq_all((size_t)n_tok * kp), gq_all((size_t)n_tok * kp);
        for (int tk = 0; tk < n_tok; tk++) {
            gpu_quantize_act_ref(&x[(size_t)tk * n_in], n_in, kp, aq.data(), ad.data(), as.data());
            for (int i = 0; i < kp; i++) {
                hq_all[(size_t)tk * kp + i] = ad[i / 32] * aq[i];
                gq_all[(size_t)tk * kp + i] = gd[((size_t)tk * kp + i) / 32] * gq[(size_t)tk * kp + i];
            }
        }
        snprintf(name, sizeof name, "quantize_act %dx%d", n_tok, n_in);
        compare(name, gq_all.data(), hq_all.data(), hq_all.size(), 0.0, 0.0);
    }
    for (int tk = 0; tk < n_tok; tk++) {
        const float *xt = &x[(size_t)tk * n_in];
        if (W.kind == GPU_KIND_I8) gpu_quantize_act_ref(xt, n_in, kp, aq.data(), ad.data(), as.data());
        for (int i = 0; i < n_in; i++) {
            if (W.kind == GPU_KIND_I8) xr[i] = ad[i / 32] * aq[i];
            else if (W.kind == GPU_KIND_F16) xr[i] = um_fp16_to_fp32(um_fp32_to_fp16(xt[i]));
            else if (W.kind == GPU_KIND_BF16) xr[i] = um_bf16_to_fp32(um_fp32_to_bf16(xt[i]));
            else xr[i] = xt[i];
        }
        for (int r = 0; r < n_out; r++) {
            double s = 0;
            for (int i = 0; i < n_in; i++) s += (double)wd[(size_t)r * n_in + i] * xr[i];
            float v = W.kind == GPU_KIND_I8
                          ? gpu_i8_dot_ref(&L, &hq[(size_t)r * kp], &hs[(size_t)r * (kp / L.group)],
                                           &ho[(size_t)r * (kp / L.group)], aq.data(), ad.data(), as.data())
                          : (float)s;
            float add = (with_bias ? bias[r] : 0.0f);
            const float base = accumulate ? y0[(size_t)tk * n_out + r] : 0.0f;
            ref[(size_t)tk * n_out + r] = base + (v + add);
            loose[(size_t)tk * n_out + r] = base + ((float)s + add);
        }
    }
    /* tolerance: the values are sums of n_in products of size ~0.5; float accumulation in
     * a different order (and FMA contraction) moves them by ~n_in * 2^-24 relative to the
     * sum of magnitudes: 1e-4 absolute covers n_in <= 4096 at these magnitudes. */
    snprintf(name, sizeof name, "gemm %s%s %dx%dx%d%s%s", um_type_name(t), W.pack4 ? " nibbles" : "", n_out, n_in, n_tok,
             with_bias ? " +bias" : "", accumulate ? " +=" : "");
    compare(name, got.data(), ref.data(), ref.size(), 1e-4 * sqrt((double)n_in), 1e-5);
    if (W.kind == GPU_KIND_I8) {
        /* loose check of the whole algebra against dequantized weights x quantized acts */
        snprintf(name, sizeof name, "gemm %s vs dequantized dot", um_type_name(t));
        compare(name, got.data(), loose.data(), loose.size(), 1e-3 * sqrt((double)n_in), 1e-4);
    }
    free_case(&W, &A, xd, yd);
    cudaFree(bd);
}

/* The grouped (MoE) GEMM: experts stacked in one buffer, each over its own rows, some empty. */
static void check_gemm_grouped(uint32_t t, bool pack4) {
    const int X = 5, n_in = 512, n_out = 96;
    const int counts[5] = { 0, 70, 1, 130, 33 };
    std::vector<int> offs(X + 1, 0);
    for (int e = 0; e < X; e++) offs[e + 1] = offs[e] + counts[e];
    const int R = offs[X];
    int max_rows = 0;
    for (int e = 0; e < X; e++) max_rows = counts[e] > max_rows ? counts[e] : max_rows;
    std::vector<std::vector<float>> wd(X), hs(X), ho(X);
    std::vector<std::vector<int8_t>> hq(X);
    std::vector<gpu_mat> ws(X);
    for (int e = 0; e < X; e++) ws[e] = make_weight(t, n_in, n_out, pack4, wd[e], hq[e], hs[e], ho[e]);
    gpu_layout L = gpu_layout_for(t, n_in, n_out);
    if (pack4) gpu_layout_pack4(&L, n_out);
    const long long ns = (long long)(L.bytes_scale / 4);
    gpu_mat st = ws[0];
    st.w = dev_copy<uint8_t>(NULL, L.bytes_w * X);
    st.scale = dev_copy<float>(NULL, (size_t)ns * X);
    st.off = L.has_off ? dev_copy<float>(NULL, (size_t)ns * X) : NULL;
    st.w_stride = (long long)L.bytes_w;
    st.s_stride = ns;
    for (int e = 0; e < X; e++) {
        CU(cudaMemcpy((char *)st.w + L.bytes_w * e, ws[e].w, L.bytes_w, cudaMemcpyDeviceToDevice));
        CU(cudaMemcpy(st.scale + ns * e, ws[e].scale, (size_t)ns * 4, cudaMemcpyDeviceToDevice));
        if (L.has_off) CU(cudaMemcpy(st.off + ns * e, ws[e].off, (size_t)ns * 4, cudaMemcpyDeviceToDevice));
    }
    std::vector<float> x((size_t)R * n_in);
    for (auto &v : x) v = frand() * 2.0f;
    float *xd = dev_copy(x.data(), x.size()), *yd = dev_copy<float>(NULL, (size_t)R * n_out);
    int *od = dev_copy(offs.data(), offs.size());
    gpu_act A = make_act_buffers(xd, R, n_in);
    CU(gpu_quantize_act(&A, 0));
    CU(gpu_gemm_grouped(&st, X, od, max_rows, &A, yd, n_out, 0));
    std::vector<float> got = host_copy(yd, (size_t)R * n_out), ref((size_t)R * n_out);
    const int kp = (int)L.k_pad;
    std::vector<int8_t> aq(kp);
    std::vector<float> ad(kp / 32);
    std::vector<int> as(kp / 16);
    for (int e = 0; e < X; e++)
        for (int r = offs[e]; r < offs[e + 1]; r++) {
            gpu_quantize_act_ref(&x[(size_t)r * n_in], n_in, kp, aq.data(), ad.data(), as.data());
            for (int o = 0; o < n_out; o++)
                ref[(size_t)r * n_out + o] = gpu_i8_dot_ref(&L, &hq[e][(size_t)o * kp], &hs[e][(size_t)o * (kp / L.group)],
                                                            &ho[e][(size_t)o * (kp / L.group)], aq.data(), ad.data(), as.data());
        }
    char name[96];
    snprintf(name, sizeof name, "gemm grouped %s%s 5 experts, %d rows", um_type_name(t), L.pack4 ? " nibbles" : "", R);
    compare(name, got.data(), ref.data(), ref.size(), 1e-4 * sqrt((double)n_in), 1e-5);
    for (int e = 0; e < X; e++) { cudaFree(ws[e].w); cudaFree(ws[e].scale); cudaFree(ws[e].off); }
    cudaFree(A.q); cudaFree(A.d); cudaFree(A.sum16); cudaFree(A.h);
    cudaFree(st.w); cudaFree(st.scale); cudaFree(st.off); cudaFree(xd); cudaFree(yd); cudaFree(od);
}

/* ------------------------------------------------------------------ other kernels */

static void check_rmsnorm(int rows, int n) {
    std::vector<float> x((size_t)rows * n), w(n), ref((size_t)rows * n);
    for (auto &v : x) v = frand() * 3.0f;
    for (auto &v : w) v = frand() + 1.0f;
    ops_rmsnorm_ref(ref.data(), x.data(), w.data(), rows, n, 1e-6f);
    float *xd = dev_copy(x.data(), x.size()), *wd = dev_copy(w.data(), w.size());
    CU(gpu_rmsnorm(xd, xd, wd, rows, n, 1e-6f, 0));   /* in place, as the backend does for QK-norm */
    std::vector<float> got = host_copy(xd, x.size());
    char name[64];
    snprintf(name, sizeof name, "rmsnorm %dx%d", rows, n);
    /* float sum of squares vs the reference's double: scale differs by ~1e-7 relative */
    compare(name, got.data(), ref.data(), ref.size(), 1e-6, 2e-6);
    cudaFree(xd); cudaFree(wd);
}

static void check_rope(int neox, int n_dims) {
    const int T = 50, H = 4, HD = 128;
    std::vector<float> x((size_t)T * H * HD), ref;
    for (auto &v : x) v = frand();
    ref = x;
    std::vector<int32_t> pos(T);
    for (int t = 0; t < T; t++) pos[t] = (t * 7) % T;   /* positions out of order, as a row subset */
    um_rope r = { neox ? UM_ROPE_NEOX : UM_ROPE_NORM, HD, n_dims, 1000000.0f, 1.0f, NULL };
    um_err e;
    if (ops_rope_ref(&r, pos.data(), T, ref.data(), H, NULL, 0, &e)) { printf("rope ref: %s\n", e.msg); exit(2); }
    std::vector<float> ct((size_t)T * n_dims / 2), st((size_t)T * n_dims / 2);
    gpu_rope_table(r.freq_base, 1.0f, n_dims, T, ct.data(), st.data());
    float *xd = dev_copy(x.data(), x.size()), *cd = dev_copy(ct.data(), ct.size()), *sd = dev_copy(st.data(), st.size());
    int *pd = dev_copy((const int *)pos.data(), pos.size());
    CU(gpu_rope(xd, pd, T, H, HD, n_dims, neox, cd, sd, 0));
    std::vector<float> got = host_copy(xd, x.size());
    char name[64];
    snprintf(name, sizeof name, "rope %s dims %d", neox ? "neox" : "norm", n_dims);
    compare(name, got.data(), ref.data(), ref.size(), 0.0, 0.0);   /* same table, products rounded alike */
    cudaFree(xd); cudaFree(cd); cudaFree(sd); cudaFree(pd);
}

static void check_attention(int n_q, int n_kv, int H, int HKV, int HD) {
    std::vector<float> q((size_t)n_q * H * HD), k((size_t)n_kv * HKV * HD), v((size_t)n_kv * HKV * HD),
        ref((size_t)n_q * H * HD);
    for (auto &x : q) x = frand() * 2.0f;
    for (auto &x : k) x = frand() * 2.0f;
    for (auto &x : v) x = frand();
    um_attn at = { n_q, n_kv, H, HKV, HD, NULL, 0.0f, NULL, NULL };
    um_err e;
    if (ops_attention_ref(&at, ref.data(), q.data(), k.data(), v.data(), &e)) { printf("attn ref: %s\n", e.msg); exit(2); }
    float *qd = dev_copy(q.data(), q.size()), *kd = dev_copy(k.data(), k.size()), *vd = dev_copy(v.data(), v.size());
    float *od = dev_copy<float>(NULL, ref.size());
    CU(gpu_attention(od, qd, kd, vd, n_q, n_kv, H, HKV, HD, 0));
    std::vector<float> got = host_copy(od, ref.size());
    char name[64];
    snprintf(name, sizeof name, "attention q%d kv%d h%d/%d hd%d", n_q, n_kv, H, HKV, HD);
    /* outputs are convex combinations of v (|v| < 1): float softmax in another order */
    compare(name, got.data(), ref.data(), ref.size(), 2e-6, 1e-4);
    cudaFree(qd); cudaFree(kd); cudaFree(vd); cudaFree(od);
}

static void check_small(void) {
    const int n = 10000;
    std::vector<float> g(n), u(n), ref(n);
    for (int i = 0; i < n; i++) { g[i] = frand() * 8.0f; u[i] = frand(); }
    ops_swiglu_ref(ref.data(), g.data(), u.data(), n);
    float *gd = dev_copy(g.data(), n), *ud = dev_copy(u.data(), n);
    CU(gpu_swiglu(gd, gd, ud, n, 0));
    std::vector<float> got = host_copy(gd, n);
    compare("swiglu", got.data(), ref.data(), n, 1e-7, 4e-7);   /* expf within 2 ulp */
    cudaFree(gd); cudaFree(ud);

    /* gather + MoE combine */
    const int T = 40, K = 3, W = 96, X = 5;
    std::vector<float> logits((size_t)T * X);
    for (auto &x : logits) x = frand() * 3.0f;
    std::vector<int32_t> ex((size_t)T * K), off(X + 1), tok((size_t)T * K), slot((size_t)T * K);
    std::vector<float> wt((size_t)T * K), roww((size_t)T * K);
    um_moe_cfg cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.n_expert = X; cfg.k = K; cfg.gating = UM_MOE_SOFTMAX; cfg.norm_topk = true; cfg.scale = 1.0f;
    um_err e;
    if (ops_moe_route(&cfg, logits.data(), T, ex.data(), wt.data(), &e) ||
        ops_moe_group(ex.data(), wt.data(), T, K, X, off.data(), tok.data(), roww.data(), slot.data(), &e)) {
        printf("moe ref: %s\n", e.msg);
        exit(2);
    }
    std::vector<float> src((size_t)T * W), y((size_t)T * K * W), out((size_t)T * W), gref((size_t)T * K * W);
    for (auto &x : src) x = frand();
    for (auto &x : y) x = frand();
    for (auto &x : out) x = frand();
    for (int i = 0; i < T * K; i++) memcpy(&gref[(size_t)i * W], &src[(size_t)tok[i] * W], W * 4);
    std::vector<float> cref = out;
    ops_moe_combine_ref(cref.data(), y.data(), wt.data(), slot.data(), T, K, W, true);
    float *sd = dev_copy(src.data(), src.size()), *gd2 = dev_copy<float>(NULL, gref.size());
    int *td = dev_copy((const int *)tok.data(), tok.size()), *sld = dev_copy((const int *)slot.data(), slot.size());
    float *yd = dev_copy(y.data(), y.size()), *od = dev_copy(out.data(), out.size()), *wd = dev_copy(wt.data(), wt.size());
    CU(gpu_gather_rows(gd2, sd, td, T * K, W, 0));
    CU(gpu_moe_combine(od, yd, wd, sld, T, K, W, 0));
    std::vector<float> ggot = host_copy(gd2, gref.size()), cgot = host_copy(od, out.size());
    compare("gather_rows", ggot.data(), gref.data(), gref.size(), 0.0, 0.0);
    compare("moe_combine", cgot.data(), cref.data(), cref.size(), 1e-6, 1e-6);
    cudaFree(sd); cudaFree(gd2); cudaFree(td); cudaFree(sld); cudaFree(yd); cudaFree(od); cudaFree(wd);

    /* snapshot reduction: argmax, p_max, p_second, entropy against double sums */
    const int R = 7, V = 5000;
    std::vector<float> lg((size_t)R * V);
    for (auto &x : lg) x = frand() * 6.0f;
    lg[3 * V + 17] = lg[3 * V + 4000] = 9.0f;      /* a tie: the lower index wins */
    std::vector<float> want(4 * R), have(4 * R);
    for (int r = 0; r < R; r++) {
        const float *l = &lg[(size_t)r * V];
        int am = 0;
        for (int i = 1; i < V; i++) if (l[i] > l[am]) am = i;
        double mx = l[am], z = 0, m1 = 0, second = -INFINITY;
        for (int i = 0; i < V; i++) {
            if (i != am && l[i] > second) second = l[i];
            const double u = (l[i] - mx) / 0.7, ee = exp(u);
            z += ee; m1 += ee * u;
        }
        want[4 * r] = (float)am; want[4 * r + 1] = (float)(1 / z);
        want[4 * r + 2] = (float)(exp((second - mx) / 0.7) / z); want[4 * r + 3] = (float)(log(z) - m1 / z);
    }
    float *ld = dev_copy(lg.data(), lg.size()), *pm = dev_copy<float>(NULL, R), *p2 = dev_copy<float>(NULL, R),
          *en = dev_copy<float>(NULL, R);
    int *amd = dev_copy<int>(NULL, R);
    const int KK = 6;
    int *tid_d = dev_copy<int>(NULL, (size_t)R * KK);
    float *tp_d = dev_copy<float>(NULL, (size_t)R * KK);
    CU(gpu_row_stats(ld, R, V, 0.7f, amd, pm, p2, en, KK, tid_d, tp_d, 0));
    {   /* top-k against a host ranking (value descending, lower id first on ties) */
        std::vector<int> ti = host_copy(tid_d, (size_t)R * KK);
        std::vector<float> tp = host_copy(tp_d, (size_t)R * KK), tref((size_t)R * KK), tgot((size_t)R * KK);
        std::vector<float> iref((size_t)R * KK), igot((size_t)R * KK);
        for (int r = 0; r < R; r++) {
            const float *l = &lg[(size_t)r * V];
            std::vector<int> idx(V);
            for (int i = 0; i < V; i++) idx[i] = i;
            std::partial_sort(idx.begin(), idx.begin() + KK, idx.end(),
                              [l](int a, int b) { return l[a] > l[b] || (l[a] == l[b] && a < b); });
            double mx = l[idx[0]], z = 0;
            for (int i = 0; i < V; i++) z += exp((l[i] - mx) / 0.7);
            for (int j = 0; j < KK; j++) {
                iref[(size_t)r * KK + j] = (float)idx[j];
                igot[(size_t)r * KK + j] = (float)ti[(size_t)r * KK + j];
                tref[(size_t)r * KK + j] = (float)(exp((l[idx[j]] - mx) / 0.7) / z);
                tgot[(size_t)r * KK + j] = tp[(size_t)r * KK + j];
            }
        }
        compare("row_stats top-6 ids", igot.data(), iref.data(), iref.size(), 0.0, 0.0);
        compare("row_stats top-6 probabilities", tgot.data(), tref.data(), tref.size(), 1e-6, 1e-4);
    }
    cudaFree(tid_d); cudaFree(tp_d);
    std::vector<int> am = host_copy(amd, R);
    std::vector<float> pmh = host_copy(pm, R), p2h = host_copy(p2, R), enh = host_copy(en, R);
    for (int r = 0; r < R; r++) {
        have[4 * r] = (float)am[r]; have[4 * r + 1] = pmh[r]; have[4 * r + 2] = p2h[r]; have[4 * r + 3] = enh[r];
    }
    compare("row_stats (argmax, p1, p2, entropy)", have.data(), want.data(), have.size(), 1e-5, 1e-4);
    cudaFree(ld); cudaFree(pm); cudaFree(p2); cudaFree(en); cudaFree(amd);
}

/* ------------------------------------------------------------------ K/V cache */

/* Store and load of the cache rows against quant.c's reference converters: the stored bytes
 * and the loaded floats must be identical (the same float operations: F16 round to nearest
 * even; Q8_0 d = amax / 127, q = roundf(x * (1 / d)), x = q * f16(d)). A zero block (d = 0)
 * and a row of large values are included. */
static void check_kv_store(int kind, int rows, int width) {
    const uint32_t type = kind == GPU_KV_F32 ? UM_TYPE_F32 : kind == GPU_KV_F16 ? UM_TYPE_F16 : UM_TYPE_Q8_0;
    const um_type_traits *tr = um_traits(type);
    const uint64_t rb = gpu_kv_row_bytes(kind, width);
    char name[64];
    if (rb != um_row_size(type, width)) {
        printf("FAIL kv %s row bytes %llu, quant.c says %llu\n", tr->name, (unsigned long long)rb,
               (unsigned long long)um_row_size(type, width));
        n_failed++;
        return;
    }
    std::vector<float> x((size_t)rows * width), ref((size_t)rows * width);
    for (auto &v : x) v = frand() * 4.0f;
    for (int i = 0; i < 32 && rows > 1; i++) x[(size_t)width + i] = 0.0f;                /* a zero block */
    for (int i = 0; i < width && rows > 2; i++) x[(size_t)2 * width + i] *= 3000.0f;      /* large values */
    std::vector<uint8_t> bref((size_t)(rb * rows));
    for (int r = 0; r < rows; r++) {
        tr->from_float_ref(&x[(size_t)r * width], &bref[(size_t)(rb * r)], width);
        tr->to_float_ref(&bref[(size_t)(rb * r)], &ref[(size_t)r * width], width);
    }
    float *xd = dev_copy(x.data(), x.size()), *yd = dev_copy<float>(NULL, x.size()), *yd2 = dev_copy<float>(NULL, x.size());
    uint8_t *sd = dev_copy<uint8_t>(NULL, bref.size()), *bd = dev_copy(bref.data(), bref.size());
    CU(gpu_kv_store(sd, xd, rows, width, kind, 0));
    CU(gpu_kv_load(yd, sd, rows, width, kind, 0));
    CU(gpu_kv_load(yd2, bd, rows, width, kind, 0));     /* the load alone, from the reference's bytes */
    std::vector<uint8_t> bgot = host_copy(sd, bref.size());
    size_t bad = 0, first = 0;
    for (size_t i = 0; i < bref.size(); i++) if (bgot[i] != bref[i] && !bad++) first = i;
    printf("%-4s kv store %-5s %dx%d: bytes as quant.c's quantizer (%zu differ)\n", bad ? "FAIL" : "ok", tr->name, rows,
           width, bad);
    if (bad) { printf("    byte %zu: gpu %u ref %u\n", first, bgot[first], bref[first]); n_failed++; }
    else n_passed++;
    std::vector<float> got = host_copy(yd, x.size()), got2 = host_copy(yd2, x.size());
    snprintf(name, sizeof name, "kv store+load %s %dx%d", tr->name, rows, width);
    compare(name, got.data(), ref.data(), ref.size(), 0.0, 0.0);
    snprintf(name, sizeof name, "kv load %s (reference bytes)", tr->name);
    compare(name, got2.data(), ref.data(), ref.size(), 0.0, 0.0);
    cudaFree(xd); cudaFree(yd); cudaFree(yd2); cudaFree(sd); cudaFree(bd);
}

/* Scatter of the active rows over the loaded cache rows, and the K drift of each active row
 * against the row it covers (host: double sums; the kernel sums in float). */
static void check_kv_scatter_drift(void) {
    const int T = 90, N = 23, W = 256;
    std::vector<float> base((size_t)T * W), fresh((size_t)N * W);
    for (auto &v : base) v = frand();
    for (auto &v : fresh) v = frand();
    std::vector<int32_t> rows(N);
    for (int i = 0; i < N; i++) rows[i] = (i * 37 + 11) % T;         /* distinct, out of order */
    for (int i = 0; i < W; i++) base[(size_t)rows[3] * W + i] = 0.0f;  /* a zero base row: drift 0 */
    for (int i = 0; i < W; i++) fresh[(size_t)5 * W + i] = base[(size_t)rows[5] * W + i];   /* unchanged: 0 */
    std::vector<float> dref(N), sref = base;
    for (int i = 0; i < N; i++) {
        double dd = 0, rr = 0;
        for (int c = 0; c < W; c++) {
            const double d = (double)fresh[(size_t)i * W + c] - base[(size_t)rows[i] * W + c];
            dd += d * d;
            rr += (double)base[(size_t)rows[i] * W + c] * base[(size_t)rows[i] * W + c];
        }
        dref[i] = rr > 0 ? (float)sqrt(dd / rr) : 0.0f;
        memcpy(&sref[(size_t)rows[i] * W], &fresh[(size_t)i * W], W * 4);
    }
    float *bd = dev_copy(base.data(), base.size()), *fd = dev_copy(fresh.data(), fresh.size()), *dd = dev_copy<float>(NULL, N);
    int *rd = dev_copy((const int *)rows.data(), rows.size());
    CU(gpu_row_drift(dd, fd, bd, rd, N, W, 0));
    CU(gpu_scatter_rows(bd, fd, rd, N, W, 0));
    std::vector<float> dgot = host_copy(dd, N), sgot = host_copy(bd, base.size());
    compare("kv row drift", dgot.data(), dref.data(), N, 1e-6, 1e-5);   /* float sums of 256 squares */
    compare("kv scatter rows", sgot.data(), sref.data(), sref.size(), 0.0, 0.0);
    cudaFree(bd); cudaFree(fd); cudaFree(dd); cudaFree(rd);
}

/* ------------------------------------------------------------------ timings */

typedef struct bench_gemm { gpu_mat W; gpu_act A; float *y; } bench_gemm;
static void run_gemm(void *p) {
    bench_gemm *b = (bench_gemm *)p;
    if (b->W.kind == GPU_KIND_I8) { b->A.q_ready = 0; gpu_quantize_act(&b->A, 0); }
    else if (b->W.kind != GPU_KIND_F32) gpu_convert_act(&b->A, b->W.kind, 0);
    gpu_gemm(&b->W, &b->A, b->y, b->W.n_out, NULL, 0, 0);
}

static void bench_gemm_shape(uint32_t t, int n_in, int n_out, int n_tok) {
    std::vector<float> wd, hs, ho;
    std::vector<int8_t> hq;
    bench_gemm b;
    b.W = make_weight(t, n_in, n_out, true, wd, hq, hs, ho);
    std::vector<float> x((size_t)n_tok * n_in);
    for (auto &v : x) v = frand();
    float *xd = dev_copy(x.data(), x.size());
    b.A = make_act_buffers(xd, n_tok, n_in);
    b.y = dev_copy<float>(NULL, (size_t)n_tok * n_out);
    const float ms = time_ms(run_gemm, &b, 20);
    printf("bench gemm %-6s %5d x %5d x %4d tokens: %8.3f ms  %7.1f TOPS (incl. activation prep)\n", um_type_name(t),
           n_out, n_in, n_tok, ms, 2.0 * n_out * n_in * n_tok / (ms * 1e-3) / 1e12);
    free_case(&b.W, &b.A, xd, b.y);
}

typedef struct bench_att { float *o, *q, *k, *v; int T, H, HKV, HD; } bench_att;
static void run_att(void *p) {
    bench_att *b = (bench_att *)p;
    gpu_attention(b->o, b->q, b->k, b->v, b->T, b->T, b->H, b->HKV, b->HD, 0);
}

static void bench_attention(int T, int H, int HKV, int HD) {
    bench_att b = { NULL, NULL, NULL, NULL, T, H, HKV, HD };
    b.q = dev_copy<float>(NULL, (size_t)T * H * HD);
    b.o = dev_copy<float>(NULL, (size_t)T * H * HD);
    b.k = dev_copy<float>(NULL, (size_t)T * HKV * HD);
    b.v = dev_copy<float>(NULL, (size_t)T * HKV * HD);
    CU(cudaMemset(b.q, 0, (size_t)T * H * HD * 4));
    CU(cudaMemset(b.k, 0, (size_t)T * HKV * HD * 4));
    CU(cudaMemset(b.v, 0, (size_t)T * HKV * HD * 4));
    const float ms = time_ms(run_att, &b, 10);
    printf("bench attention T=%d heads %d/%d hd %d: %8.3f ms  %7.2f TFLOPS\n", T, H, HKV, HD, ms,
           4.0 * T * T * H * HD / (ms * 1e-3) / 1e12);
    cudaFree(b.q); cudaFree(b.o); cudaFree(b.k); cudaFree(b.v);
}

int main(int argc, char **argv) {
    char desc[256];
    const int n_dev = gpu_describe(desc, sizeof desc);
    const bool probe = argc > 1 && !strcmp(argv[1], "--probe");
    const bool bench = !(argc > 1 && !strcmp(argv[1], "--no-bench"));
    if (probe) { printf("%s\n", desc); return n_dev > 0 ? 0 : 3; }
    if (n_dev == 0) { printf("kernel_check: %s: nothing to check\n", desc); return 3; }
    printf("device: %s\n", desc);
    int hd_max = 256;
    CU(gpu_kernels_init(hd_max));

    const uint32_t types[] = { UM_TYPE_Q8_0, UM_TYPE_Q4_0, UM_TYPE_Q4_1, UM_TYPE_Q5_0, UM_TYPE_Q5_1, UM_TYPE_Q2_K,
                               UM_TYPE_Q3_K, UM_TYPE_Q4_K, UM_TYPE_Q5_K, UM_TYPE_Q6_K, UM_TYPE_IQ4_NL, UM_TYPE_IQ4_XS,
                               UM_TYPE_F16, UM_TYPE_BF16, UM_TYPE_F32 };
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) check_gemm(types[i], 512, 200, 77, false, false, false);
    /* the nibble layout of the 4-bit formats (the backend's default for them) */
    check_gemm(UM_TYPE_Q4_0, 512, 200, 77, false, false, true);
    check_gemm(UM_TYPE_Q4_1, 512, 200, 77, false, false, true);
    check_gemm(UM_TYPE_Q4_K, 512, 200, 77, false, false, true);
    check_gemm(UM_TYPE_Q4_K, 1024, 130, 1, true, true, true);    /* one token, bias, residual accumulate */
    check_gemm(UM_TYPE_Q4_0, 256, 70, 130, true, false, true);   /* rows past n_out in a tile */
    check_gemm(UM_TYPE_Q6_K, 768, 64, 64, true, false, false);
    check_gemm(UM_TYPE_BF16, 80, 70, 65, true, true, false);     /* K = 80: zero padding to 96 */
    check_gemm(UM_TYPE_F32, 100, 33, 17, true, true, false);
    check_gemm_grouped(UM_TYPE_Q4_K, true);
    check_gemm_grouped(UM_TYPE_Q6_K, false);
    check_gemm_grouped(UM_TYPE_Q8_0, false);
    check_rmsnorm(300, 256);
    check_rmsnorm(1000, 128);
    check_rope(0, 128);
    check_rope(1, 128);
    check_rope(1, 64);
    check_attention(100, 100, 8, 2, 64);
    check_attention(37, 130, 4, 4, 128);
    check_attention(17, 17, 2, 1, 256);
    check_small();
    for (int kind = GPU_KV_F32; kind <= GPU_KV_Q8_0; kind++) {
        check_kv_store(kind, 37, 1024);       /* LLaDA-8B's K row is 4096 values; Dream-7B's 512 */
        check_kv_store(kind, 5, 64);
    }
    check_kv_scatter_drift();
    printf("kernel_check: %d passed, %d failed\n", n_passed, n_failed);
    if (bench && !n_failed) {
        /* LLaDA-8B shapes for a 256-token canvas */
        const uint32_t bt[] = { UM_TYPE_Q4_K, UM_TYPE_Q6_K, UM_TYPE_Q8_0, UM_TYPE_BF16 };
        for (size_t i = 0; i < 4; i++) {
            bench_gemm_shape(bt[i], 4096, 4096, 256);
            bench_gemm_shape(bt[i], 4096, 12288, 256);
        }
        bench_gemm_shape(UM_TYPE_Q4_K, 4096, 4096, 32);
        bench_attention(256, 32, 32, 128);
        bench_attention(1024, 32, 32, 128);
        bench_attention(256, 28, 4, 128);
    }
    return n_failed ? 1 : 0;
}
