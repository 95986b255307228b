/*
 * test_matmul: every weight format on every kernel this CPU has, against double-precision
 * truths built from quant.c's reference dequantizers (never from the code under test).
 *
 * Two truths per case:
 *   exact  y = W_deq . x computed in double; every kernel must be within a bound that is
 *          derived, not tuned: the activation quantization error (each int8 activation is
 *          off by at most half a step, step = amax/127 of its block; 0.6 of a step where the
 *          reference stores the scale in f16 or rounds activations to f16/bf16) times
 *          sum |w|, plus f32 accumulation (1e-5 of sum |w x|), for the kernels and rows that
 *          quantize activations; the float-tile path (rows it decodes to f32: other formats,
 *          file-layout matrices, partial panels) must be within the f32 accumulation alone.
 *   quant  for the SIMD integer kernels: the same sum with the activations those kernels
 *          quantize (mm_quantize_act, whose rounding is checked here too) in double.
 *          Their integer sums are exact and the scale tables exact in f32, so only f32
 *          accumulation remains: 2e-5 of sum |w x_q|. A layout or loop bug is far outside.
 * Shapes: n_tokens 1, 7, 160, 513; n_out odd (a partial 16-row panel); one larger case.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "matmul.h"
#include "matmul_impl.h"
#include "ops.h"
#include "pool.h"
#include "quant.h"
#include "util.h"

/* ---------------------------------------------------------------- deterministic data */

static uint64_t rng_state;
static float rnd(void) {               /* uniform in [-1, 1) */
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((rng_state >> 40) & 0xFFFFFF) / 8388608.f - 1.f;
}

typedef struct mcase {
    uint32_t type;
    int64_t n_in, n_out;
    void   *raw;             /* file layout, quantized with quant.c's reference */
    float  *wf;              /* (n_out, n_in) dequantized with quant.c's reference */
    size_t  bytes;
} mcase;

/* Formats with no quantizer (the IQ1/IQ2/IQ3 lattices, TQ): random code bytes with a block
 * scale of 2^-7 .. 2^-6, so every index, sign and sub-block scale value appears. */
static void random_blocks(const um_type_traits *tr, uint8_t *b, size_t n_blocks) {
    for (size_t i = 0; i < n_blocks * tr->bytes; i++) b[i] = (uint8_t)(rnd() * 128.f + 128.f);
    for (size_t k = 0; k < n_blocks; k++) {
        uint8_t *blk = b + k * tr->bytes;
        uint16_t h = (uint16_t)(0x2000 | (blk[0] << 2 & 0x3ff));
        if (tr->type == UM_TYPE_IQ1_M) {         /* fp16 bits in the top nibbles of 4 u16 */
            for (int i = 0; i < 4; i++) blk[49 + 2 * i] = (uint8_t)((blk[49 + 2 * i] & 0x0F) | ((h >> (4 * i)) & 0xF) << 4);
        } else {
            size_t off = tr->type == UM_TYPE_TQ1_0 ? 52 : tr->type == UM_TYPE_TQ2_0 ? 64 : 0;
            memcpy(blk + off, &h, 2);
        }
    }
}

static int make_case(mcase *c, uint32_t type, int64_t n_in, int64_t n_out, uint64_t seed) {
    const um_type_traits *tr = um_traits(type);
    if (!tr || !tr->to_float_ref) return UM_FAIL;
    c->type = type; c->n_in = n_in; c->n_out = n_out;
    c->bytes = (size_t)(n_in / tr->blck) * tr->bytes * (size_t)n_out;
    c->raw = um_malloc_aligned(c->bytes);
    c->wf = malloc(sizeof(float) * (size_t)(n_in * n_out));
    float *tmp = malloc(sizeof(float) * (size_t)n_in);
    rng_state = seed;
    size_t rb = c->bytes / (size_t)n_out;
    for (int64_t r = 0; r < n_out; r++) {
        float scale = 0.02f + 0.05f * (float)(r % 7), offset = 0.3f * rnd() * scale;
        for (int64_t k = 0; k < n_in; k++) tmp[k] = scale * rnd() + offset;
        if (tr->from_float_ref) tr->from_float_ref(tmp, (uint8_t *)c->raw + r * rb, n_in);
        else random_blocks(tr, (uint8_t *)c->raw + r * rb, (size_t)(n_in / tr->blck));
        tr->to_float_ref((uint8_t *)c->raw + r * rb, c->wf + r * n_in, n_in);
    }
    free(tmp);
    return UM_OK;
}

static void free_case(mcase *c) {
    um_free_aligned(c->raw);
    free(c->wf);
}

static float *make_x(int64_t n_tokens, int64_t n_in, uint64_t seed) {
    float *x = malloc(sizeof(float) * (size_t)(n_tokens * n_in));
    rng_state = seed;
    for (int64_t i = 0; i < n_tokens * n_in; i++) x[i] = rnd() * (1.f + 3.f * (float)((i / 97) % 3));
    return x;
}

/* ---------------------------------------------------------------- running a kernel */

static int run_kernel(const mcase *c, um_kernel k, bool repack, um_pool *p, const float *x,
                      int64_t n_tokens, float *y, um_err *e) {
    void *buf = repack ? um_malloc_aligned(c->bytes) : NULL;
    um_matmul_weights w;
    if (matmul_prepare(&w, c->type, c->n_in, c->n_out, c->raw, buf, k, e) != UM_OK) {
        um_free_aligned(buf);
        return UM_FAIL;
    }
    void *scratch = um_malloc_aligned(matmul_scratch_bytes(&w, n_tokens, pool_threads(p)));
    matmul(p, &w, x, n_tokens, y, scratch);
    um_free_aligned(scratch);
    um_free_aligned(buf);
    return UM_OK;
}

static bool is_kquant(uint32_t t) {
    return t == UM_TYPE_Q2_K || t == UM_TYPE_Q3_K || t == UM_TYPE_Q4_K || t == UM_TYPE_Q5_K ||
           t == UM_TYPE_Q6_K || t == UM_TYPE_IQ4_XS || t == UM_TYPE_IQ2_XXS || t == UM_TYPE_IQ2_XS ||
           t == UM_TYPE_IQ2_S || t == UM_TYPE_IQ3_XXS || t == UM_TYPE_IQ3_S || t == UM_TYPE_IQ1_S ||
           t == UM_TYPE_IQ1_M || t == UM_TYPE_TQ1_0 || t == UM_TYPE_TQ2_0;
}

/* Bound on |y - y_exact| for a kernel that quantizes activations (see the file comment). */
static double act_bound(const mcase *c, const float *xr, const float *wr, int blk, double step_frac) {
    double b = 0, sum_abs = 0;
    for (int64_t k0 = 0; k0 < c->n_in; k0 += blk) {
        int64_t k1 = UM_MIN(k0 + blk, c->n_in);
        double amax = 0;
        for (int64_t k = k0; k < k1; k++) amax = fmax(amax, fabs(xr[k]));
        for (int64_t k = k0; k < k1; k++) {
            b += fabs(wr[k]) * step_frac * amax / 127.0;
            sum_abs += fabs((double)wr[k] * xr[k]);
        }
    }
    return b + 1e-5 * sum_abs + 1e-6;
}

/* The formats the AArch64 integer kernels (dotprod, i8mm) take on the integer path, from
 * any layout (they decode the file layout per panel): every quantized weight format. */
static bool arm_int_format(uint32_t t) {
    return t == UM_TYPE_Q4_0 || t == UM_TYPE_Q4_1 || t == UM_TYPE_Q5_0 || t == UM_TYPE_Q5_1 ||
           t == UM_TYPE_Q8_0 || t == UM_TYPE_IQ4_NL || is_kquant(t);
}

/* The formats the x86 kernels repack into 16-row panels and run on the integer path. */
static bool x86_packable(uint32_t t) {
    return t == UM_TYPE_Q4_K || t == UM_TYPE_Q6_K || t == UM_TYPE_Q8_0 || t == UM_TYPE_Q4_0 || t == UM_TYPE_Q4_1 ||
           t == UM_TYPE_Q5_0 || t == UM_TYPE_Q5_1;
}

/* Does the kernel compute row r with quantized activations (the integer path), or decode the
 * weights to f32 and multiply f32 activations (the float-tile path)? The rule as matmul.h and
 * matmul_impl.h document it, stated here apart from the code: ref quantizes always; a SIMD
 * kernel takes the integer path for the rows of full 16-row panels of a repacked Q4_K, Q6_K,
 * Q8_0, Q4_0, Q4_1, Q5_0 or Q5_1 matrix and for IQ1/IQ2/IQ3/TQ (any layout) on the x86
 * kernels, and for every quantized format on the AArch64 dotprod/i8mm kernels; every other
 * row, format and kernel (a partial last panel, an x86 file-layout Q4_K, F16, the neon
 * kernel) is float-tile. */
static bool int_path(const mcase *c, um_kernel k, bool repack, int64_t r) {
    if (k == UM_KERNEL_REF) return true;
    bool packable = x86_packable(c->type);
    bool full_panel = r < c->n_out / UM_MATMUL_PANEL * UM_MATMUL_PANEL;
    bool x86 = k <= UM_KERNEL_AMX_EMU;
    bool arm_int = (k == UM_KERNEL_DOTPROD || k == UM_KERNEL_I8MM) && arm_int_format(c->type);
    return full_panel && ((x86 && ((packable && repack) || um_is_iq_lattice(c->type))) || arm_int);
}

/* Check one kernel on one case; returns 0 or fails the test. */
static int check_kernel(const mcase *c, um_kernel k, bool repack, um_pool *p, int64_t n_tokens,
                        const float *x, const double *truth) {
    float *y = malloc(sizeof(float) * (size_t)(n_tokens * c->n_out));
    um_err e;
    if (run_kernel(c, k, repack, p, x, n_tokens, y, &e) != UM_OK) {
        th_fail(__FILE__, __LINE__, "%s/%s: prepare failed: %s", um_type_name(c->type), matmul_kernel_name(k), e.msg);
        free(y);
        return -1;
    }
    bool float_type = c->type == UM_TYPE_F32 || c->type == UM_TYPE_F16 || c->type == UM_TYPE_BF16;
    /* which activations the kernel multiplies with */
    int blk = is_kquant(c->type) ? 256 : 32;
    double frac = 0.5;
    if (k == UM_KERNEL_REF) {
        /* quant.c's Q8_0/Q8_1 store the scale as f16: up to 127 * 2^-11 of a step more */
        if (!is_kquant(c->type)) frac = 0.6;
    }
    int bad = 0;
    for (int64_t t = 0; t < n_tokens && bad < 3; t++) {
        const float *xr = x + t * c->n_in;
        for (int64_t r = 0; r < c->n_out && bad < 3; r++) {
            const float *wr = c->wf + r * c->n_in;
            double tol;
            if (float_type || !int_path(c, k, repack, r)) {
                double sum_abs = 0;
                for (int64_t i = 0; i < c->n_in; i++) sum_abs += fabs((double)wr[i] * xr[i]);
                /* ref rounds activations to the weight type (f16: 2^-11, bf16: 2^-8 relative);
                 * the float-tile path multiplies the exactly decoded weights in f32: only the
                 * f32 accumulation, 1e-5 of sum |w x| (not the activation bound, ~1e-2) */
                double rel = k != UM_KERNEL_REF || c->type == UM_TYPE_F32 ? 1e-5
                           : c->type == UM_TYPE_F16 ? 1e-3 : 8e-3;
                tol = rel * sum_abs + 1e-6;
            } else {
                tol = act_bound(c, xr, wr, blk, frac);
            }
            double got = y[t * c->n_out + r], want = truth[t * c->n_out + r];
            if (!(fabs(got - want) <= tol)) {
                th_fail(__FILE__, __LINE__, "%s/%s%s n_tokens=%lld y[%lld][%lld] = %.7g, want %.7g (tol %.3g)",
                        um_type_name(c->type), matmul_kernel_name(k), repack ? "" : " (file layout)",
                        (long long)n_tokens, (long long)t, (long long)r, got, want, tol);
                bad++;
            }
        }
    }
    free(y);
    return bad ? -1 : 0;
}

static double *exact_truth(const mcase *c, const float *x, int64_t n_tokens) {
    double *tr = malloc(sizeof(double) * (size_t)(n_tokens * c->n_out));
    for (int64_t t = 0; t < n_tokens; t++)
        for (int64_t r = 0; r < c->n_out; r++) {
            double s = 0;
            for (int64_t k = 0; k < c->n_in; k++) s += (double)c->wf[r * c->n_in + k] * x[t * c->n_in + k];
            tr[t * c->n_out + r] = s;
        }
    return tr;
}

static const uint32_t all_types[] = {
    UM_TYPE_F32, UM_TYPE_F16, UM_TYPE_BF16, UM_TYPE_Q8_0, UM_TYPE_Q4_0, UM_TYPE_Q4_1, UM_TYPE_Q5_0,
    UM_TYPE_Q5_1, UM_TYPE_Q2_K, UM_TYPE_Q3_K, UM_TYPE_Q4_K, UM_TYPE_Q5_K, UM_TYPE_Q6_K,
    UM_TYPE_IQ4_NL, UM_TYPE_IQ4_XS, UM_TYPE_IQ2_XXS, UM_TYPE_IQ2_XS, UM_TYPE_IQ2_S, UM_TYPE_IQ3_XXS,
    UM_TYPE_IQ3_S, UM_TYPE_IQ1_S, UM_TYPE_IQ1_M, UM_TYPE_TQ1_0, UM_TYPE_TQ2_0,
};

/* Every format in types x every available kernel x (repacked, file layout) x n_tokens. */
static void sweep_types(const uint32_t *types, size_t n_types, int64_t n_in, int64_t n_out, const int64_t *toks,
                        int n_toks, um_pool *p) {
    int n_kernels = 0;
    for (size_t ti = 0; ti < n_types; ti++) {
        mcase c;
        CHECK_MSG(make_case(&c, types[ti], n_in, n_out, 1000 + ti) == UM_OK, "no reference quantizer for %s",
                  um_type_name(types[ti]));
        for (int i = 0; i < n_toks; i++) {
            float *x = make_x(toks[i], n_in, 77 + i);
            double *truth = exact_truth(&c, x, toks[i]);
            for (int k = 0; k < UM_KERNEL_COUNT; k++) {
                if (!matmul_kernel_available((um_kernel)k)) continue;
                n_kernels++;
                int bad = check_kernel(&c, (um_kernel)k, true, p, toks[i], x, truth);
                if (!bad && matmul_wants_repack(c.type, (um_kernel)k))
                    bad = check_kernel(&c, (um_kernel)k, false, p, toks[i], x, truth);
                if (bad) { free(x); free(truth); free_case(&c); return; }
            }
            free(x);
            free(truth);
        }
        free_case(&c);
    }
    CHECK(n_kernels > 0);
}

static void sweep(int64_t n_in, int64_t n_out, const int64_t *toks, int n_toks, um_pool *p) {
    sweep_types(all_types, UM_ARRAY_LEN(all_types), n_in, n_out, toks, n_toks, p);
}

/* Float formats take any width: columns that are not a multiple of the 16-column transpose
 * groups (200 = 12 x 16 + 8; 40 < one 256-column tile) and a width past one tile (300). */
TEST(matmul_float_formats_odd_widths) {
    static const uint32_t types[] = { UM_TYPE_F32, UM_TYPE_F16, UM_TYPE_BF16 };
    static const int64_t toks[] = { 1, 8, 29 };
    static const int64_t widths[] = { 40, 200, 300 };
    um_pool *p = pool_new(2);
    for (size_t i = 0; i < UM_ARRAY_LEN(widths); i++) sweep_types(types, UM_ARRAY_LEN(types), widths[i], 37, toks, 3, p);
    pool_free(p);
}

TEST(matmul_every_format_every_kernel_small) {
    static const int64_t toks[] = { 1, 7, 160, 513 };
    um_pool *p = pool_new(2);
    sweep(256, 37, toks, 4, p);       /* 37 rows: two panels and a partial one */
    pool_free(p);
}

TEST(matmul_every_format_larger_shape) {
    static const int64_t toks[] = { 33 };
    sweep(1536, 48, toks, 1, NULL);   /* several super-blocks per row, no pool */
}

/* The integer kernels against their own quantized activations: tight, catches layout bugs
 * that the activation-error bound could hide on small values. */
TEST(matmul_int_kernels_match_quantized_activations) {
    /* Q4_0..Q5_1 run the Q8_0 loop on Q8_0 activation rows (matmul_impl.h, mm_act_type) */
    static const uint32_t types[] = { UM_TYPE_Q4_K, UM_TYPE_Q6_K, UM_TYPE_Q8_0, UM_TYPE_Q4_0, UM_TYPE_Q4_1,
        UM_TYPE_Q5_0, UM_TYPE_Q5_1, UM_TYPE_IQ2_XXS, UM_TYPE_IQ2_XS, UM_TYPE_IQ2_S, UM_TYPE_IQ3_XXS,
        UM_TYPE_IQ3_S, UM_TYPE_IQ1_S, UM_TYPE_IQ1_M, UM_TYPE_TQ1_0, UM_TYPE_TQ2_0 };
    const int64_t n_in = 512, n_out = 32, n_tokens = 19;
    for (size_t ti = 0; ti < UM_ARRAY_LEN(types); ti++) {
        mcase c;
        CHECK(make_case(&c, types[ti], n_in, n_out, 5 + ti) == UM_OK);
        float *x = make_x(n_tokens, n_in, 9);
        /* quantized activations, in double */
        double *xq = malloc(sizeof(double) * (size_t)(n_tokens * n_in));
        const uint32_t act = x86_packable(types[ti]) && !is_kquant(types[ti]) ? UM_TYPE_Q8_0 : types[ti];
        int blk = act == UM_TYPE_Q8_0 ? 32 : 256;
        size_t row_bytes = (size_t)n_in * 3 + 256, off_scale = (size_t)n_in, off_corr = off_scale + (size_t)n_in / 32 * 4;
        uint8_t *row = um_malloc_aligned(row_bytes);
        uint8_t *row2 = um_malloc_aligned(row_bytes);
        for (int64_t t = 0; t < n_tokens; t++) {
            mm_quantize_act(act, x + t * n_in, n_in, row, off_scale, off_corr);
#if MM_X86      /* the x86 quantizers exist only in x86 builds */
            if (matmul_kernel_available(UM_KERNEL_AVX2)) {
                /* the kernels' AVX2 quantizer must give the same bytes as the portable one */
                size_t used = off_corr + (size_t)n_in / 16 * 6;
                memset(row2, 0, row_bytes);
                memset(row, 0, row_bytes);
                mm_quantize_act(act, x + t * n_in, n_in, row, off_scale, off_corr);
                mm_quantize_act_avx2(act, x + t * n_in, n_in, row2, off_scale, off_corr);
                CHECK_MSG(memcmp(row, row2, used) == 0, "%s: AVX2 activation quantizer differs", um_type_name(types[ti]));
            }
            if (matmul_kernel_available(UM_KERNEL_AVX512)) {
                size_t used = off_corr + (size_t)n_in / 16 * 6;
                memset(row2, 0, row_bytes);
                mm_quantize_act_avx512(act, x + t * n_in, n_in, row2, off_scale, off_corr);
                CHECK_MSG(memcmp(row, row2, used) == 0, "%s: AVX-512 activation quantizer differs", um_type_name(types[ti]));
            }
#endif
            if (act == UM_TYPE_Q8_0) {          /* -128 x sum(q), then scale x sum(q), per 32 */
                const int32_t *corr = (const int32_t *)(row + off_corr);
                const float *ssum = (const float *)(row + off_corr + (size_t)n_in / 32 * 4), *sc = (const float *)(row + off_scale);
                for (int64_t g = 0; g < n_in / 32; g++) {
                    int s = 0;
                    for (int i = 0; i < 32; i++) s += ((const int8_t *)row)[g * 32 + i];
                    CHECK_MSG(corr[g] == -128 * s && ssum[g] == sc[g] * (float)s, "Q8_0 activation sums %lld", (long long)g);
                }
            }
            if (types[ti] == UM_TYPE_Q6_K) {     /* the int16 sums per 16 of the AVX2 Q6_K loop */
                const int16_t *bsum = (const int16_t *)(row + off_corr + (size_t)n_in / 16 * 4);
                for (int64_t g = 0; g < n_in / 16; g++) {
                    int s = 0;
                    for (int i = 0; i < 16; i++) s += ((const int8_t *)row)[g * 16 + i];
                    CHECK_MSG(bsum[g] == s, "Q6_K activation sum %lld: %d, want %d", (long long)g, bsum[g], s);
                }
            }
            const float *scale = (const float *)(row + off_scale);
            for (int64_t k = 0; k < n_in; k++) {
                double v = (double)((int8_t *)row)[k] * scale[k / blk];
                /* the quantizer rounds to nearest: within half a step of x */
                CHECK_MSG(fabs(v - x[t * n_in + k]) <= 0.5001 * scale[k / blk] + 1e-7,
                          "activation %lld of token %lld: %g vs %g", (long long)k, (long long)t, v, x[t * n_in + k]);
                xq[t * n_in + k] = v;
            }
        }
        for (int k = UM_KERNEL_AVX2; k <= UM_KERNEL_AMX_EMU; k++) {     /* the x86 kernels */
            if (!matmul_kernel_available((um_kernel)k)) continue;
            float *y = malloc(sizeof(float) * (size_t)(n_tokens * n_out));
            um_err e;
            CHECK_MSG(run_kernel(&c, (um_kernel)k, true, NULL, x, n_tokens, y, &e) == UM_OK, "%s", e.msg);
            for (int64_t t = 0; t < n_tokens; t++)
                for (int64_t r = 0; r < n_out; r++) {
                    double s = 0, sa = 0;
                    for (int64_t i = 0; i < n_in; i++) {
                        s += (double)c.wf[r * n_in + i] * xq[t * n_in + i];
                        sa += fabs((double)c.wf[r * n_in + i] * xq[t * n_in + i]);
                    }
                    CHECK_MSG(fabs(y[t * n_out + r] - s) <= 2e-5 * sa + 1e-6, "%s/%s y[%lld][%lld] = %.8g, want %.8g",
                              um_type_name(c.type), matmul_kernel_name((um_kernel)k), (long long)t, (long long)r,
                              y[t * n_out + r], s);
                }
            free(y);
        }
        um_free_aligned(row);
        um_free_aligned(row2);
        free(xq);
        free(x);
        free_case(&c);
    }
}

/* The AArch64 integer kernels (dotprod, i8mm) against their own quantized activations, every
 * format they take: per 32 columns like Q8_0 for the 32-blocks (Q4_0..Q8_0, IQ4_NL), per
 * 256 like Q6_K for the rest (matmul_impl.h). Integer sums exact, f32 scales: 2e-5 of
 * sum |w x_q|, as for the x86 kernels. 37 rows (a partial panel on the neon kernel), 19
 * tokens (full and partial register blocks, an odd token for the i8mm pairs). */
TEST(matmul_arm_int_kernels_match_quantized_activations) {
    static const uint32_t types[] = { UM_TYPE_Q8_0, UM_TYPE_Q4_0, UM_TYPE_Q4_1, UM_TYPE_Q5_0, UM_TYPE_Q5_1,
        UM_TYPE_IQ4_NL, UM_TYPE_Q2_K, UM_TYPE_Q3_K, UM_TYPE_Q4_K, UM_TYPE_Q5_K, UM_TYPE_Q6_K, UM_TYPE_IQ4_XS,
        UM_TYPE_IQ2_XXS, UM_TYPE_IQ2_XS, UM_TYPE_IQ2_S, UM_TYPE_IQ3_XXS, UM_TYPE_IQ3_S, UM_TYPE_IQ1_S,
        UM_TYPE_IQ1_M, UM_TYPE_TQ1_0, UM_TYPE_TQ2_0 };
    static const um_kernel kernels[] = { UM_KERNEL_DOTPROD, UM_KERNEL_I8MM };
    if (!matmul_kernel_available(UM_KERNEL_DOTPROD)) { th_skip("no AArch64 dot product"); return; }
    const int64_t n_in = 512, n_out = 37, n_tokens = 19;
    for (size_t ti = 0; ti < UM_ARRAY_LEN(types); ti++) {
        mcase c;
        CHECK(make_case(&c, types[ti], n_in, n_out, 55 + ti) == UM_OK);
        float *x = make_x(n_tokens, n_in, 19 + ti);
        double *xq = malloc(sizeof(double) * (size_t)(n_tokens * n_in));
        int blk = is_kquant(types[ti]) ? 256 : 32;
        uint32_t act = blk == 32 ? UM_TYPE_Q8_0 : UM_TYPE_Q6_K;
        size_t off_scale = (size_t)n_in, off_corr = off_scale + (size_t)n_in / 32 * 4;
        uint8_t *row = um_malloc_aligned((size_t)n_in * 3 + 256);
        for (int64_t t = 0; t < n_tokens; t++) {
            mm_quantize_act(act, x + t * n_in, n_in, row, off_scale, off_corr);
            const float *scale = (const float *)(row + off_scale);
            for (int64_t k = 0; k < n_in; k++) xq[t * n_in + k] = (double)((int8_t *)row)[k] * scale[k / blk];
        }
        for (size_t ki = 0; ki < UM_ARRAY_LEN(kernels); ki++) {
            um_kernel k = kernels[ki];
            if (!matmul_kernel_available(k)) continue;
            float *y = malloc(sizeof(float) * (size_t)(n_tokens * n_out));
            um_err e;
            CHECK_MSG(run_kernel(&c, k, true, NULL, x, n_tokens, y, &e) == UM_OK, "%s", e.msg);
            int bad = 0;
            for (int64_t t = 0; t < n_tokens; t++)
                for (int64_t r = 0; r < n_out / UM_MATMUL_PANEL * UM_MATMUL_PANEL && bad < 3; r++) {
                    double s = 0, sa = 0;
                    for (int64_t i = 0; i < n_in; i++) {
                        s += (double)c.wf[r * n_in + i] * xq[t * n_in + i];
                        sa += fabs((double)c.wf[r * n_in + i] * xq[t * n_in + i]);
                    }
                    if (!(fabs(y[t * n_out + r] - s) <= 2e-5 * sa + 1e-6)) {
                        th_fail(__FILE__, __LINE__, "%s/%s y[%lld][%lld] = %.8g, want %.8g", um_type_name(c.type),
                                matmul_kernel_name(k), (long long)t, (long long)r, y[t * n_out + r], s);
                        bad++;
                    }
                }
            free(y);
        }
        um_free_aligned(row);
        free(xq);
        free(x);
        free_case(&c);
    }
}

/* The ARM few-token path (at most 4 tokens: decoded row by row, no panel) gives the same
 * bits as the panel kernels on the same tokens: 3 tokens alone vs the same 3 at the head of
 * a 9-token product (one chunk of 9: panel path), every format, dotprod and i8mm. */
TEST(matmul_arm_few_tokens_match_panel_path) {
    static const uint32_t types[] = { UM_TYPE_Q8_0, UM_TYPE_Q4_0, UM_TYPE_Q4_1, UM_TYPE_Q5_0, UM_TYPE_Q5_1,
        UM_TYPE_IQ4_NL, UM_TYPE_Q2_K, UM_TYPE_Q3_K, UM_TYPE_Q4_K, UM_TYPE_Q5_K, UM_TYPE_Q6_K, UM_TYPE_IQ4_XS,
        UM_TYPE_IQ2_XXS, UM_TYPE_IQ3_S, UM_TYPE_IQ1_M, UM_TYPE_TQ1_0 };
    static const um_kernel kernels[] = { UM_KERNEL_DOTPROD, UM_KERNEL_I8MM };
    if (!matmul_kernel_available(UM_KERNEL_DOTPROD)) { th_skip("no AArch64 dot product"); return; }
    const int64_t n_in = 512, n_out = 32;
    for (size_t ti = 0; ti < UM_ARRAY_LEN(types); ti++) {
        mcase c;
        CHECK(make_case(&c, types[ti], n_in, n_out, 301 + ti) == UM_OK);
        float *x = make_x(9, n_in, 7 + ti), *y9 = malloc(sizeof(float) * 9 * n_out), *y3 = malloc(sizeof(float) * 3 * n_out);
        for (size_t ki = 0; ki < UM_ARRAY_LEN(kernels); ki++) {
            if (!matmul_kernel_available(kernels[ki])) continue;
            um_err e;
            CHECK_MSG(run_kernel(&c, kernels[ki], true, NULL, x, 9, y9, &e) == UM_OK, "%s", e.msg);
            CHECK_MSG(run_kernel(&c, kernels[ki], true, NULL, x, 3, y3, &e) == UM_OK, "%s", e.msg);
            CHECK_MSG(memcmp(y3, y9, sizeof(float) * 3 * n_out) == 0, "%s/%s: 3 tokens alone differ from the panel path",
                      um_type_name(c.type), matmul_kernel_name(kernels[ki]));
        }
        free(x); free(y9); free(y3);
        free_case(&c);
    }
}

/* The kernels' F16C scale tables equal the portable ones exactly (one exact product each). */
TEST(matmul_panel_tables_avx2_match_portable) {
    if (!matmul_kernel_available(UM_KERNEL_AVX2)) { th_skip("no AVX2"); return; }
    static const uint32_t types[] = { UM_TYPE_Q4_K, UM_TYPE_Q6_K, UM_TYPE_Q8_0, UM_TYPE_Q4_0, UM_TYPE_Q4_1,
                                      UM_TYPE_Q5_0, UM_TYPE_Q5_1 };
    for (size_t ti = 0; ti < UM_ARRAY_LEN(types); ti++) {
        mcase c;
        CHECK(make_case(&c, types[ti], 512, 32, 11 + ti) == UM_OK);
        void *buf = um_malloc_aligned(c.bytes);
        um_matmul_weights w;
        um_err e;
        CHECK(matmul_prepare(&w, c.type, 512, 32, c.raw, buf, UM_KERNEL_AVX2, &e) == UM_OK);
        CHECK(w.packed);
        float *t1 = malloc(mm_tables_bytes(&w)), *t2 = malloc(mm_tables_bytes(&w));
        /* d per 32 columns and row (Q8_0, Q4_0, Q5_0), then m (Q4_1, Q5_1); n_in for the K-quants */
        size_t n = c.type == UM_TYPE_Q8_0 || c.type == UM_TYPE_Q4_0 || c.type == UM_TYPE_Q5_0 ? 512 / 2 : 512;
        for (int64_t p = 0; p < 2; p++) {
            mm_panel_tables(&w, p, t1);
#if MM_X86
            mm_panel_tables_avx2(&w, p, t2);
#else
            mm_panel_tables(&w, p, t2);     /* unreachable: no AVX2 kernel outside x86 */
#endif
            CHECK_MSG(memcmp(t1, t2, n * sizeof(float)) == 0, "%s panel %lld tables differ", um_type_name(c.type), (long long)p);
        }
        free(t1); free(t2);
        um_free_aligned(buf);
        free_case(&c);
    }
}

/* Results do not depend on the thread count or on repacking in place vs into a copy. */
TEST(matmul_threads_and_in_place_repack_agree) {
    mcase c;
    CHECK(make_case(&c, UM_TYPE_Q4_K, 512, 40, 3) == UM_OK);
    int64_t n_tokens = 50;
    float *x = make_x(n_tokens, 512, 4);
    um_kernel k;
    um_err e;
    CHECK(matmul_kernel_default(&k, &e) == UM_OK);
    float *y1 = malloc(sizeof(float) * 50 * 40), *y2 = malloc(sizeof(float) * 50 * 40);
    CHECK(run_kernel(&c, k, true, NULL, x, n_tokens, y1, &e) == UM_OK);
    um_pool *p = pool_new(2);
    CHECK(run_kernel(&c, k, true, p, x, n_tokens, y2, &e) == UM_OK);
    pool_free(p);
    CHECK(memcmp(y1, y2, sizeof(float) * 50 * 40) == 0);
    /* in place */
    void *copy = um_malloc_aligned(c.bytes);
    memcpy(copy, c.raw, c.bytes);
    um_matmul_weights w;
    CHECK(matmul_prepare(&w, c.type, 512, 40, copy, copy, k, &e) == UM_OK);
    CHECK(w.data == copy);
    void *scratch = um_malloc_aligned(matmul_scratch_bytes(&w, n_tokens, 1));
    matmul(NULL, &w, x, n_tokens, y2, scratch);
    CHECK(memcmp(y1, y2, sizeof(float) * 50 * 40) == 0);
    um_free_aligned(scratch);
    um_free_aligned(copy);
    free(y1); free(y2); free(x);
    free_case(&c);
}

TEST(matmul_rejects_bad_input) {
    um_matmul_weights w;
    um_err e;
    static uint8_t data[4096];
    CHECK(matmul_prepare(&w, UM_TYPE_Q4_K, 100, 4, data, NULL, UM_KERNEL_REF, &e) == UM_FAIL);
    CHECK_CONTAINS(e.msg, "multiple of 256");
    CHECK(matmul_prepare(&w, UM_TYPE_Q8_K, 256, 4, data, NULL, UM_KERNEL_REF, &e) == UM_FAIL);
    CHECK_CONTAINS(e.msg, "not supported");
    CHECK(matmul_prepare(&w, 77, 256, 4, data, NULL, UM_KERNEL_REF, &e) == UM_FAIL);
    CHECK(matmul_prepare(&w, UM_TYPE_F32, 0, 4, data, NULL, UM_KERNEL_REF, &e) == UM_FAIL);
    CHECK(matmul_prepare(&w, UM_TYPE_F32, 16, 4, data, NULL, (um_kernel)99, &e) == UM_FAIL);
}

TEST(matmul_unmask_kernel_env) {
    const char *old = getenv("UNMASK_KERNEL");
    char *saved = old ? strdup(old) : NULL;
    um_kernel k;
    um_err e;
    setenv("UNMASK_KERNEL", "ref", 1);
    CHECK(matmul_kernel_default(&k, &e) == UM_OK && k == UM_KERNEL_REF);
    setenv("UNMASK_KERNEL", "bogus", 1);
    CHECK(matmul_kernel_default(&k, &e) == UM_FAIL);
    CHECK_CONTAINS(e.msg, "UNMASK_KERNEL=bogus");
    setenv("UNMASK_KERNEL", "amx", 1);
    if (matmul_kernel_available(UM_KERNEL_AMX)) CHECK(matmul_kernel_default(&k, &e) == UM_OK && k == UM_KERNEL_AMX);
    else CHECK(matmul_kernel_default(&k, &e) == UM_FAIL);
    setenv("UNMASK_KERNEL", "avx2", 1);
    if (matmul_kernel_available(UM_KERNEL_AVX2)) {
        CHECK(matmul_kernel_default(&k, &e) == UM_OK);
        CHECK(k == UM_KERNEL_AVX2 || k == UM_KERNEL_AVXVNNI);
    }
    /* the AArch64 kernels: each forces exactly itself where the CPU has it, else one error
     * line naming it (x86, or dotprod/i8mm under qemu -cpu cortex-a53) */
    static const struct { const char *name; um_kernel k; } arm[] = {
        { "neon", UM_KERNEL_NEON }, { "dotprod", UM_KERNEL_DOTPROD }, { "i8mm", UM_KERNEL_I8MM } };
    for (size_t i = 0; i < UM_ARRAY_LEN(arm); i++) {
        setenv("UNMASK_KERNEL", arm[i].name, 1);
        if (matmul_kernel_available(arm[i].k)) {
            CHECK(matmul_kernel_default(&k, &e) == UM_OK && k == arm[i].k);
        } else {
            CHECK(matmul_kernel_default(&k, &e) == UM_FAIL);
            CHECK_CONTAINS(e.msg, "cannot run");
        }
    }
    unsetenv("UNMASK_KERNEL");
    CHECK(matmul_kernel_default(&k, &e) == UM_OK);
    if (matmul_kernel_available(UM_KERNEL_I8MM)) CHECK(k == UM_KERNEL_I8MM);
    else if (matmul_kernel_available(UM_KERNEL_DOTPROD)) CHECK(k == UM_KERNEL_DOTPROD);
    if (saved) { setenv("UNMASK_KERNEL", saved, 1); free(saved); }
    else unsetenv("UNMASK_KERNEL");
}

/* The self-test that guards automatic AMX use passes for a correct kernel (the emulated
 * AMX loops here) and for AVX-512 against itself. */
TEST(matmul_self_test_accepts_correct_kernels) {
    if (!matmul_kernel_available(UM_KERNEL_AVX512)) { th_skip("no AVX-512"); return; }
    CHECK(matmul_self_test(UM_KERNEL_AMX_EMU));
    CHECK(matmul_self_test(UM_KERNEL_AVX2));
    CHECK(!matmul_self_test((um_kernel)77));
}

/* The word-wise repacking that matmul_prepare uses writes exactly the bytes of the byte-wise
 * reference, for every packed format, on random block bytes (repacking only moves bits, so
 * any bytes are valid input), every byte of the panel compared. */
TEST(matmul_pack_panel_matches_reference) {
    static const uint32_t types[] = { UM_TYPE_Q4_K, UM_TYPE_Q6_K, UM_TYPE_Q8_0, UM_TYPE_Q4_0, UM_TYPE_Q4_1,
                                      UM_TYPE_Q5_0, UM_TYPE_Q5_1 };
    for (size_t ti = 0; ti < UM_ARRAY_LEN(types); ti++) {
        const int64_t nb = 3;
        size_t row_bytes = (size_t)nb * um_type_bytes(types[ti]), bytes = 16 * row_bytes;
        uint8_t *src = malloc(bytes), *a = malloc(bytes), *b = malloc(bytes);
        rng_state = 4242 + ti;
        for (size_t i = 0; i < bytes; i++) src[i] = (uint8_t)(rnd() * 128.f + 128.f);
        memset(a, 0xAA, bytes);
        memset(b, 0x55, bytes);
        mm_pack_panel_ref(types[ti], src, row_bytes, nb, a);
        mm_pack_panel(types[ti], src, row_bytes, nb, b);
        size_t first = 0;
        while (first < bytes && a[first] == b[first]) first++;
        CHECK_MSG(first == bytes, "%s: packed byte %zu differs (%02x vs reference %02x)", um_type_name(types[ti]), first,
                  first < bytes ? b[first] : 0, first < bytes ? a[first] : 0);
        free(src); free(a); free(b);
    }
}

/* The largest sums the integer kernels can meet: Q4_K codes all 15 with every 6-bit scale at
 * 63, against activations that all quantize to +127 or all to -127. The AVX2 kernel without
 * VNNI adds 16 products of a 32-column sub-block in int16 (16 x 15 x 127 = 30480, just under
 * 32767); a sum one step wider, or a saturating add, would be off here by thousands, while the
 * exact product is known in closed form. Also mixed signs per column, and dmin != 0. */
/* Every block of row r filled by fill(block, r); all-extreme activations (exact in int8:
 * all +127, all -127, +-127 mixed) against the double truth on every kernel. */
static void extreme_sums(uint32_t type, void (*fill)(uint8_t *blk, int64_t r)) {
    const int64_t n_in = 512, n_out = 16, n_tokens = 3;
    mcase c = { .type = type, .n_in = n_in, .n_out = n_out };
    const um_type_traits *tr = um_traits(type);
    size_t rb = (size_t)(n_in / 256) * tr->bytes;
    c.bytes = rb * (size_t)n_out;
    c.raw = um_malloc_aligned(c.bytes);
    c.wf = malloc(sizeof(float) * (size_t)(n_in * n_out));
    for (int64_t r = 0; r < n_out; r++)
        for (int64_t b = 0; b < n_in / 256; b++) fill((uint8_t *)c.raw + (size_t)r * rb + (size_t)b * tr->bytes, r);
    for (int64_t r = 0; r < n_out; r++) tr->to_float_ref((uint8_t *)c.raw + (size_t)r * rb, c.wf + r * n_in, n_in);
    float *x = malloc(sizeof(float) * (size_t)(n_tokens * n_in));
    for (int64_t k = 0; k < n_in; k++) {
        x[k] = 1.0f;                                /* all +127 */
        x[n_in + k] = -2.0f;                        /* all -127 */
        x[2 * n_in + k] = k % 3 ? 3.0f : -3.0f;     /* +-127 mixed */
    }
    for (int k = UM_KERNEL_REF; k < UM_KERNEL_COUNT; k++) {
        if (!matmul_kernel_available((um_kernel)k)) continue;
        float *y = malloc(sizeof(float) * (size_t)(n_tokens * n_out));
        um_err e;
        CHECK_MSG(run_kernel(&c, (um_kernel)k, true, NULL, x, n_tokens, y, &e) == UM_OK, "%s", e.msg);
        for (int64_t t = 0; t < n_tokens; t++)
            for (int64_t r = 0; r < n_out; r++) {
                double s = 0, sa = 0;   /* the activations are exact in int8 here: no rounding */
                for (int64_t i = 0; i < n_in; i++) {
                    s += (double)c.wf[r * n_in + i] * x[t * n_in + i];
                    sa += fabs((double)c.wf[r * n_in + i] * x[t * n_in + i]);
                }
                CHECK_MSG(fabs(y[t * n_out + r] - s) <= 2e-5 * sa + 1e-6, "%s/%s token %lld row %lld: %.8g, want %.8g",
                          um_type_name(type), matmul_kernel_name((um_kernel)k), (long long)t, (long long)r, y[t * n_out + r], s);
            }
        free(y);
    }
    free(x);
    free_case(&c);
}

static void fill_q4k_max(uint8_t *b, int64_t r) {
    um_block_q4_K *blk = (um_block_q4_K *)b;
    blk->d = um_fp32_to_fp16(r % 2 ? 0.5f : 1.0f);
    blk->dmin = um_fp32_to_fp16(r % 4 >= 2 ? 0.25f : 0.0f);
    memset(blk->scales, 0xFF, sizeof blk->scales);   /* every scale and min 63 */
    memset(blk->qs, 0xFF, sizeof blk->qs);           /* every code 15 */
}

/* Q6_K: every code 63 (weight +31) or 0 (weight -32), every scale -128 or +127: the int16
 * pair sums and the int32 super-block sums of the AVX2 loop at their largest. */
static void fill_q6k_max(uint8_t *b, int64_t r) {
    um_block_q6_K *blk = (um_block_q6_K *)b;
    memset(blk->ql, r % 2 ? 0x00 : 0xFF, sizeof blk->ql);
    memset(blk->qh, r % 2 ? 0x00 : 0xFF, sizeof blk->qh);
    memset(blk->scales, r % 4 >= 2 ? 0x80 : 0x7F, sizeof blk->scales);
    blk->d = um_fp32_to_fp16(r % 8 >= 4 ? 0.5f : 1.0f);
}

TEST(matmul_extreme_sums_do_not_overflow) {
    extreme_sums(UM_TYPE_Q4_K, fill_q4k_max);
    extreme_sums(UM_TYPE_Q6_K, fill_q6k_max);
}

/* The IQ/TQ integer path with many panels (no token slabs, next-panel prefetch) and the
 * expert-sized token counts of MoE layers. */
TEST(matmul_iq_many_panels) {
    static const uint32_t types[] = { UM_TYPE_IQ2_XXS, UM_TYPE_IQ2_S, UM_TYPE_IQ3_S, UM_TYPE_IQ1_S, UM_TYPE_TQ2_0 };
    static const int64_t toks[] = { 3, 16, 40 };
    um_pool *p = pool_new(2);
    sweep_types(types, UM_ARRAY_LEN(types), 512, 256, toks, 3, p);
    pool_free(p);
}

/* Q4_0..Q5_1 (repacked, unpacked to Q8_0 codes per chunk) with many panels and DiffusionGemma's
 * expert down-projection width: 704 columns, 22 blocks, not a multiple of 256. */
TEST(matmul_q32_many_panels) {
    static const uint32_t types[] = { UM_TYPE_Q5_0, UM_TYPE_Q5_1, UM_TYPE_Q4_0, UM_TYPE_Q4_1 };
    static const int64_t toks[] = { 3, 16, 40 };
    um_pool *p = pool_new(2);
    sweep_types(types, UM_ARRAY_LEN(types), 704, 256, toks, 3, p);
    pool_free(p);
}

/* ---------------------------------------------------------------- grouped (MoE) products */

/* matmul_grouped against the plain path it replaces: each expert's matmul() over its rows,
 * gathered in float. Bit-identical by construction (same quantized bytes, same chunk
 * kernel), so compared with memcmp: every kernel, panel and fallback formats, a partial last
 * panel, an expert with no rows, 1 and 2 threads, gate+up together, down (slot NULL) and
 * two groups of different types (run one after the other). */
enum { GX = 5, GK = 3, GT = 23 };

typedef struct grp_case {
    mcase c[2][GX];
    void *buf[2][GX];
    um_matmul_weights w[2][GX];
} grp_case;

static int grp_prepare(grp_case *g, int gi, uint32_t type, int64_t n_in, int64_t n_out, um_kernel k, uint64_t seed) {
    for (int x = 0; x < GX; x++) {
        if (make_case(&g->c[gi][x], type, n_in, n_out, seed + (uint64_t)x) != UM_OK) return UM_FAIL;
        g->buf[gi][x] = um_malloc_aligned(g->c[gi][x].bytes);
        if (matmul_prepare(&g->w[gi][x], type, n_in, n_out, g->c[gi][x].raw, g->buf[gi][x], k, NULL) != UM_OK)
            return UM_FAIL;
    }
    return UM_OK;
}

static void grp_free(grp_case *g, int n_g) {
    for (int gi = 0; gi < n_g; gi++)
        for (int x = 0; x < GX; x++) { free_case(&g->c[gi][x]); um_free_aligned(g->buf[gi][x]); }
}

/* The expected rows: each expert's matmul() over its gathered rows xg (grouped-row order). */
static void grp_expected(const um_matmul_weights *w, const int32_t *off, const float *xg, float *y, um_pool *p) {
    int64_t n_in = w[0].n_in, n_out = w[0].n_out;
    for (int e = 0; e < GX; e++) {
        int64_t r0 = off[e], cnt = off[e + 1] - r0;
        if (!cnt) continue;
        void *s = um_malloc_aligned(matmul_scratch_bytes(&w[e], cnt, pool_threads(p)));
        matmul(p, &w[e], xg + r0 * n_in, cnt, y + r0 * n_out, s);
        um_free_aligned(s);
    }
}

static void grp_check(uint32_t ta, uint32_t tb, int64_t n_in, int64_t n_out, um_kernel k, um_pool *p) {
    /* routing: GK distinct experts per token, never expert 2 */
    int32_t ex[GT * GK], off[GX + 1], tok[GT * GK], slot[GT * GK];
    float wt[GT * GK], roww[GT * GK];
    static const int32_t used[4] = { 0, 1, 3, 4 };
    for (int t = 0; t < GT; t++)
        for (int c = 0; c < GK; c++) {       /* 3 consecutive of 4: distinct, unevenly spread */
            ex[t * GK + c] = used[(t * 5 / 3 + c) % 4];
            wt[t * GK + c] = 1.f;
        }
    um_err e;
    CHECK(ops_moe_group(ex, wt, GT, GK, GX, off, tok, roww, slot, &e) == UM_OK);
    CHECK(off[3] == off[2]);                             /* expert 2 has no rows */
    grp_case g;
    memset(&g, 0, sizeof g);
    CHECK(grp_prepare(&g, 0, ta, n_in, n_out, k, 100) == UM_OK);
    CHECK(grp_prepare(&g, 1, tb, n_in, n_out, k, 200) == UM_OK);
    int64_t n_rows = GT * GK;
    float *x = make_x(GT, n_in, 9);
    float *xg = malloc(sizeof(float) * (size_t)(n_rows * n_in));     /* x's rows in grouped order */
    for (int64_t r = 0; r < n_rows; r++) memcpy(xg + r * n_in, x + (int64_t)tok[r] * n_in, sizeof(float) * (size_t)n_in);
    float *want[2], *got[2];
    for (int gi = 0; gi < 2; gi++) {
        want[gi] = malloc(sizeof(float) * (size_t)(n_rows * n_out));
        got[gi] = malloc(sizeof(float) * (size_t)(n_rows * n_out));
        memset(got[gi], 0xff, sizeof(float) * (size_t)(n_rows * n_out));   /* NaN: every row must be written */
        grp_expected(g.w[gi], off, xg, want[gi], p);
    }
    size_t sb = UM_MAX(matmul_grouped_scratch_bytes(&g.w[0][0], GT, GK, pool_threads(p)),
                       matmul_grouped_scratch_bytes(&g.w[1][0], GT, GK, pool_threads(p)));
    void *scratch = um_malloc_aligned(sb);
    const um_matmul_group grp[2] = { { g.w[0], got[0] }, { g.w[1], got[1] } };
    matmul_grouped(p, grp, 2, GX, off, x, GT, slot, GK, scratch);
    for (int gi = 0; gi < 2; gi++)
        CHECK_MSG(memcmp(want[gi], got[gi], sizeof(float) * (size_t)(n_rows * n_out)) == 0,
                  "grouped %s/%s group %d %lldx%lld kernel %s threads %d differs from per-expert matmul",
                  um_type_name(ta), um_type_name(tb), gi, (long long)n_out, (long long)n_in,
                  matmul_kernel_name(k), pool_threads(p));
    /* down-style: the input already in grouped-row order (slot NULL) */
    memset(got[0], 0xff, sizeof(float) * (size_t)(n_rows * n_out));
    um_free_aligned(scratch);
    scratch = um_malloc_aligned(matmul_grouped_scratch_bytes(&g.w[0][0], n_rows, 1, pool_threads(p)));
    matmul_grouped(p, grp, 1, GX, off, xg, n_rows, NULL, 1, scratch);
    CHECK_MSG(memcmp(want[0], got[0], sizeof(float) * (size_t)(n_rows * n_out)) == 0,
           "grouped %s (rows in order) kernel %s differs", um_type_name(ta), matmul_kernel_name(k));
    um_free_aligned(scratch);
    free(xg); free(x);
    for (int gi = 0; gi < 2; gi++) { free(want[gi]); free(got[gi]); }
    grp_free(&g, 2);
}

TEST(matmul_grouped_equals_per_expert_products) {
    static const uint32_t pairs[][2] = {
        { UM_TYPE_Q4_K, UM_TYPE_Q4_K },    /* gate + up together, one dispatch */
        { UM_TYPE_Q6_K, UM_TYPE_Q6_K }, { UM_TYPE_Q8_0, UM_TYPE_Q8_0 },
        { UM_TYPE_IQ2_XS, UM_TYPE_IQ2_XS },  /* the IQ integer path (every SIMD kernel) */
        { UM_TYPE_Q5_0, UM_TYPE_Q5_0 },    /* unpacked to Q8_0 codes per chunk */
        { UM_TYPE_Q5_1, UM_TYPE_Q4_1 },    /* and the mins term */
        { UM_TYPE_Q4_K, UM_TYPE_Q6_K },    /* different types: one group after the other */
        { UM_TYPE_F16, UM_TYPE_Q5_K },     /* float-tile formats: gathered rows */
    };
    um_pool *p2 = pool_new(2);
    for (int k = 0; k < UM_KERNEL_COUNT; k++) {
        if (!matmul_kernel_available((um_kernel)k)) continue;
        for (size_t i = 0; i < UM_ARRAY_LEN(pairs); i++) {
            grp_check(pairs[i][0], pairs[i][1], 512, 48, (um_kernel)k, NULL);
            grp_check(pairs[i][0], pairs[i][1], 512, 48, (um_kernel)k, p2);
            grp_check(pairs[i][0], pairs[i][1], 256, 40, (um_kernel)k, p2);   /* partial last panel */
        }
    }
    pool_free(p2);
}

/* A chunk of at most 4 tokens (one register block: an expert with few rows) takes other code
 * paths than a longer one (Q4_K straight from the packed panel on AVX2); a token's outputs
 * must not depend on how many tokens share its product. Every kernel, panel formats. */
TEST(matmul_token_count_does_not_change_a_row) {
    static const uint32_t types[] = { UM_TYPE_Q4_K, UM_TYPE_Q6_K, UM_TYPE_Q8_0, UM_TYPE_Q5_0, UM_TYPE_Q5_1 };
    /* 1-4: one 256-bit register block (AVX2's packed Q4_K); 10 and fewer: AVX-512's packed Q6_K
     * (Q6K_DIRECT_MAX), 64 and fewer its packed Q4_K (Q4K_DIRECT_MAX); 80: both kernels unpack
     * the panel first */
    static const int counts[] = { 1, 2, 3, 4, 10, 64 };
    enum { ALL = 80 };
    for (size_t ti = 0; ti < UM_ARRAY_LEN(types); ti++) {
        mcase c;
        CHECK(make_case(&c, types[ti], 512, 48, 40 + ti) == UM_OK);
        float *x = make_x(ALL, 512, 41);
        float *all = malloc(sizeof(float) * ALL * 48), *few = malloc(sizeof(float) * 64 * 48);
        for (int k = UM_KERNEL_AVX2; k < UM_KERNEL_COUNT; k++) {
            if (!matmul_kernel_available((um_kernel)k)) continue;
            um_err e;
            CHECK(run_kernel(&c, (um_kernel)k, true, NULL, x, ALL, all, &e) == UM_OK);
            for (size_t i = 0; i < UM_ARRAY_LEN(counts); i++) {
                int n = counts[i];
                CHECK(run_kernel(&c, (um_kernel)k, true, NULL, x + 5 * 512, n, few, &e) == UM_OK);
                CHECK_MSG(memcmp(few, all + 5 * 48, sizeof(float) * (size_t)(n * 48)) == 0,
                          "%s/%s: %d tokens differ from the same tokens among %d", um_type_name(types[ti]),
                          matmul_kernel_name((um_kernel)k), n, ALL);
            }
        }
        free(all); free(few); free(x);
        free_case(&c);
    }
}
