/*
 * test_matmul_avxvnni_avx512: the avxvnni kernel's code on CPUs without AVX-VNNI (AMD Zen 4
 * has AVX512-VNNI but not the VEX AVX-VNNI; QEMU 7.2 emulates neither). matmul_k256.h is
 * built here with MM_VNNI 1 exactly as matmul_avxvnni.c builds it, except that its vpdpbusd is
 * the EVEX form (AVX512-VNNI + VL: the same operation on ymm registers), and its chunk function
 * is run panel by panel as matmul() runs it, on activations quantized as matmul() quantizes
 * them. Compared with the avx2 kernel: bit for bit where both run the same loop with the same
 * float operations (Q8_0 and Q4_0..Q5_1: integer sums are exact), else within f32 rounding of
 * the same integer sums (1e-4, the bound of matmul_self_test).
 */
#define MM_VNNI 1
#define MM_CHUNK_FN mm_chunk_avxvnni_evex
#define MM_DPBUSD256 _mm256_dpbusd_epi32
#include "arch/x86/matmul_k256.h"

#include <math.h>
#include <stdlib.h>

#include "harness.h"
#include "matmul.h"
#include "quant.h"
#include "util.h"

/* matmul() with the chunk function above: the activation rows as matmul.c lays them out. */
static void run_evex(const um_matmul_weights *w, const float *x, int64_t n_tokens, float *y) {
    mm_job j = { .w = w, .x = x, .y = y, .n_tokens = n_tokens, .slab = n_tokens, .n_slabs = 1, .n_threads = 1 };
    const size_t n = (size_t)w->n_in;
    j.off_scale = (n + 63) & ~(size_t)63;
    j.off_corr = j.off_scale + n / 32 * sizeof(float);
    j.act_stride = (j.off_corr + n / 16 * (sizeof(int32_t) + sizeof(int16_t)) + 63) & ~(size_t)63;
    uint8_t *act = um_malloc_aligned((size_t)n_tokens * j.act_stride);
    for (int64_t t = 0; t < n_tokens; t++)
        mm_quantize_act(mm_act_type(w), x + t * w->n_in, w->n_in, act + (size_t)t * j.act_stride, j.off_scale, j.off_corr);
    j.act = act;
    j.per_thread = (UM_MAX(MM_INT_SCRATCH(w), MM_FLOAT_SCRATCH) + 63) & ~(size_t)63;
    j.thread_scratch = um_malloc_aligned(j.per_thread);
    for (int64_t p = 0; p < (w->n_out + UM_MATMUL_PANEL - 1) / UM_MATMUL_PANEL; p++)
        mm_chunk_avxvnni_evex(&j, p, 0, n_tokens, j.thread_scratch);
    um_free_aligned(j.thread_scratch);
    um_free_aligned(act);
}

TEST(matmul_avxvnni_code_matches_avx2_kernel) {
    if (!matmul_kernel_available(UM_KERNEL_AVX512)) { th_skip("no AVX512-VNNI to stand in for AVX-VNNI"); return; }
    static const uint32_t types[] = { UM_TYPE_Q8_0, UM_TYPE_Q5_0, UM_TYPE_Q5_1, UM_TYPE_Q4_0, UM_TYPE_Q4_1,
                                      UM_TYPE_Q4_K, UM_TYPE_Q6_K };
    static const int64_t toks[] = { 1, 7, 33 };    /* direct Q4_0..Q5_1 (<= 8), unpacked panels */
    const int64_t n_in = 512, n_out = 37, n_max = 33;
    uint64_t rng = 99;
    float *x = malloc(sizeof(float) * (size_t)(n_max * n_in)), *wrow = malloc(sizeof(float) * (size_t)n_in);
    for (int64_t i = 0; i < n_max * n_in; i++) {
        rng = rng * 6364136223846793005ull + 1442695040888963407ull;
        x[i] = (float)((int64_t)(rng >> 40) % 2001 - 1000) * 1e-3f;
    }
    float *ya = malloc(sizeof(float) * (size_t)(n_max * n_out)), *yb = malloc(sizeof(float) * (size_t)(n_max * n_out));
    for (size_t ti = 0; ti < UM_ARRAY_LEN(types); ti++) {
        const um_type_traits *tr = um_traits(types[ti]);
        const size_t rb = (size_t)(n_in / tr->blck) * tr->bytes, bytes = rb * (size_t)n_out;
        uint8_t *raw = malloc(bytes), *buf = um_malloc_aligned(bytes);
        for (int64_t r = 0; r < n_out; r++) {
            for (int64_t k = 0; k < n_in; k++) {
                rng = rng * 6364136223846793005ull + 1442695040888963407ull;
                wrow[k] = (float)((int64_t)(rng >> 40) % 2001 - 1000) * 1e-4f * (float)(1 + r % 5);
            }
            tr->from_float_ref(wrow, raw + (size_t)r * rb, n_in);
        }
        um_matmul_weights w;
        um_err e;
        CHECK_MSG(matmul_prepare(&w, types[ti], n_in, n_out, raw, buf, UM_KERNEL_AVX2, &e) == UM_OK, "%s", e.msg);
        const bool same_loop = types[ti] == UM_TYPE_Q8_0 || mm_q32_type(types[ti]);
        void *scratch = um_malloc_aligned(matmul_scratch_bytes(&w, n_max, 1));
        for (size_t i = 0; i < UM_ARRAY_LEN(toks); i++) {
            matmul(NULL, &w, x, toks[i], ya, scratch);
            run_evex(&w, x, toks[i], yb);
            for (int64_t o = 0; o < toks[i] * n_out; o++)
                CHECK_MSG(same_loop ? memcmp(&ya[o], &yb[o], sizeof(float)) == 0 : fabsf(ya[o] - yb[o]) <= 1e-4f * (fabsf(ya[o]) + 1.f),
                          "%s, %lld tokens, output %lld: avxvnni code %.9g, avx2 kernel %.9g", um_type_name(types[ti]),
                          (long long)toks[i], (long long)o, yb[o], ya[o]);
        }
        um_free_aligned(scratch);
        um_free_aligned(buf);
        free(raw);
    }
    free(x); free(wrow); free(ya); free(yb);
}
