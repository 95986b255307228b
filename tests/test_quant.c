/*
 * test_quant: the reference dequantizers, quantizers and dots of src/format/quant.c.
 *
 * Expected values come from llama.cpp, never from unmask: tests/data/quant/ (*.bin) hold the
 * bytes llama-quantize wrote for tests/data/quant/input.f32, the values gguf-py's numpy
 * dequantizers give for them (cross-checked against ggml's C at fixture time), and random
 * blocks with their gguf-py values. tools/make-quant-fixtures.sh remakes them.
 */
#include "harness.h"
#include "umq1.h"
#include "infile.h"
#include "quant.h"
#include "util.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ fixtures */

static bool load_fixture(const char *name, fixture *f) {
    return load_fixture_in("tests/data/quant", name, (size_t)1 << 30, f);
}

static void free_fixture(fixture *f) { free(f->buf); }

static float *load_input(uint32_t *n) {
    char *buf;
    size_t len;
    um_err e;
    if (infile_read("tests/data/quant/input.f32", (size_t)1 << 30, &buf, &len, &e) != UM_OK) return NULL;
    *n = (uint32_t)(len / 4);
    return (float *)buf;
}

static const char *const weight_types[] = {
    "f16", "bf16", "q4_0", "q4_1", "q5_0", "q5_1", "q8_0",
    "q2_K", "q3_K", "q4_K", "q5_K", "q6_K", "iq4_nl", "iq4_xs",
};

/* Index of the first float whose bits differ, or -1. Bits, not values: -0 vs 0 counts. */
static long first_bit_diff(const float *a, const float *b, uint32_t n) {
    for (uint32_t i = 0; i < n; i++)
        if (memcmp(&a[i], &b[i], 4)) return (long)i;
    return -1;
}

/* ------------------------------------------------------------------ traits */

TEST(quant_traits_table) {
    const int supported[] = { UM_TYPE_F32, UM_TYPE_F16, UM_TYPE_BF16, UM_TYPE_Q4_0, UM_TYPE_Q4_1,
        UM_TYPE_Q5_0, UM_TYPE_Q5_1, UM_TYPE_Q8_0, UM_TYPE_Q8_1, UM_TYPE_Q2_K, UM_TYPE_Q3_K,
        UM_TYPE_Q4_K, UM_TYPE_Q5_K, UM_TYPE_Q6_K, UM_TYPE_Q8_K, UM_TYPE_IQ4_NL, UM_TYPE_IQ4_XS };
    for (size_t i = 0; i < UM_ARRAY_LEN(supported); i++) {
        const um_type_traits *t = um_traits(supported[i]);
        CHECK_MSG(t, "no traits for %s", um_type_name(supported[i]));
        CHECK_EQ(t->type, supported[i]);
        CHECK_STREQ(t->name, um_type_name(supported[i]));
        CHECK_EQ(t->blck, um_type_blck(supported[i]));
        CHECK_EQ(t->bytes, um_type_bytes(supported[i]));
        CHECK(t->to_float_ref && t->from_float_ref);
        CHECK(t->is_activation || t->vec_dot_ref);
        const um_type_traits *a = um_traits(t->vec_dot_type);
        CHECK(a && a->from_float_ref && a->blck == t->blck * (a->blck / t->blck));
    }
    CHECK(um_traits(UM_TYPE_MXFP4) == NULL);
    CHECK(um_traits(UM_TYPE_I8) == NULL);
    CHECK(um_traits(4) == NULL);             /* removed Q4_2 */
    CHECK(um_traits(UM_TYPE_COUNT) == NULL);
    CHECK(um_traits(0xFFFFFFFFu) == NULL);
    CHECK_EQ(um_row_size(UM_TYPE_Q4_K, 512), 288);
    CHECK_EQ(um_row_size(UM_TYPE_Q4_K, 100), 0);
    CHECK_EQ(um_row_size(UM_TYPE_F16, 3), 6);
}

/* ------------------------------------------------------------------ bit-exactness */

/* Every dequantizer on llama-quantize's bytes and on random blocks gives exactly the floats
 * gguf-py (and ggml) give. */
TEST(quant_dequant_matches_llama_cpp) {
    for (size_t i = 0; i < UM_ARRAY_LEN(weight_types); i++) {
        fixture f;
        CHECK_MSG(load_fixture(weight_types[i], &f), "fixture %s missing or malformed", weight_types[i]);
        const um_type_traits *t = um_traits(f.type);
        CHECK(t);
        float *out = malloc(4u * (f.n_a > f.n_b ? f.n_a : f.n_b));
        CHECK(out);
        CHECK_EQ(um_row_size(f.type, f.n_a), f.bytes_a);
        t->to_float_ref(f.qa, out, f.n_a);
        long d = first_bit_diff(out, f.ea, f.n_a);
        if (d < 0) {
            CHECK_EQ(um_row_size(f.type, f.n_b), f.bytes_b);
            t->to_float_ref(f.qb, out, f.n_b);
            long d2 = first_bit_diff(out, f.eb, f.n_b);
            if (d2 >= 0) th_fail(__FILE__, __LINE__, "%s random block element %ld: %.9g vs %.9g",
                                 t->name, d2, out[d2], f.eb[d2]);
        } else {
            th_fail(__FILE__, __LINE__, "%s element %ld: %.9g vs %.9g", t->name, d, out[d], f.ea[d]);
        }
        free(out);
        free_fixture(&f);
        if (th_failed()) return;
    }
}

/* Every quantizer writes the bytes llama-quantize wrote for the same floats. */
TEST(quant_quantize_matches_llama_quantize) {
    uint32_t n;
    float *x = load_input(&n);
    CHECK(x);
    for (size_t i = 0; i < UM_ARRAY_LEN(weight_types) && !th_failed(); i++) {
        fixture f;
        CHECK_MSG(load_fixture(weight_types[i], &f), "fixture %s", weight_types[i]);
        const um_type_traits *t = um_traits(f.type);
        uint8_t *q = calloc(1, f.bytes_a);
        if (f.n_a != n || !q) th_fail(__FILE__, __LINE__, "%s: input size", weight_types[i]);
        else {
            t->from_float_ref(x, q, n);
            for (uint32_t b = 0; b < f.bytes_a; b++)
                if (q[b] != f.qa[b]) {
                    th_fail(__FILE__, __LINE__, "%s: byte %u (block %u, offset %u): %02x vs llama.cpp %02x",
                            t->name, b, b / t->bytes, b % t->bytes, q[b], f.qa[b]);
                    break;
                }
        }
        free(q);
        free_fixture(&f);
    }
    free(x);
}

/* Activation quantizers: bytes of ggml's quantize_row_q8_1_ref / q8_K_ref, and Q8_K's
 * dequantized values. (Q8_0 activations are Q8_0 weights, checked above.) */
TEST(quant_activation_formats_match_llama_cpp) {
    uint32_t n;
    float *x = load_input(&n);
    CHECK(x);
    const char *names[] = { "q8_1", "q8_K" };
    for (int i = 0; i < 2 && !th_failed(); i++) {
        fixture f;
        CHECK_MSG(load_fixture(names[i], &f), "fixture %s", names[i]);
        const um_type_traits *t = um_traits(f.type);
        uint8_t *q = calloc(1, f.bytes_a);
        float *out = malloc(4u * n);
        if (!t || !q || !out || f.n_a != n) th_fail(__FILE__, __LINE__, "%s setup", names[i]);
        else {
            t->from_float_ref(x, q, n);
            if (memcmp(q, f.qa, f.bytes_a)) th_fail(__FILE__, __LINE__, "%s bytes differ", names[i]);
            t->to_float_ref(f.qa, out, n);
            long d = first_bit_diff(out, f.ea, n);
            if (d >= 0) th_fail(__FILE__, __LINE__, "%s dequant element %ld", names[i], d);
        }
        free(q);
        free(out);
        free_fixture(&f);
    }
    free(x);
}

/* fp32 -> fp16 / bf16 rounding (ties, subnormals, overflow, inf, nan) as ggml does it, and
 * fp16 / bf16 -> fp32 back on the same bits. */
TEST(quant_f16_bf16_conversions_match_ggml) {
    char *buf;
    size_t len;
    um_err e;
    CHECK_MSG(infile_read("tests/data/quant/conv.bin", (size_t)1 << 30, &buf, &len, &e) == UM_OK, "%s", e.msg);
    uint32_t n;
    memcpy(&n, buf + 4, 4);
    CHECK(len == 8 + 8u * n && !memcmp(buf, "UMCV", 4));
    const float *v = (const float *)(buf + 8);
    const uint16_t *h = (const uint16_t *)(buf + 8 + 4u * n), *b = h + n;
    for (uint32_t i = 0; i < n && !th_failed(); i++) {
        uint16_t hh = um_fp32_to_fp16(v[i]), bb = um_fp32_to_bf16(v[i]);
        if (hh != h[i]) th_fail(__FILE__, __LINE__, "fp16(%.9g) = %04x, ggml %04x", v[i], hh, h[i]);
        if (bb != b[i]) th_fail(__FILE__, __LINE__, "bf16(%.9g) = %04x, ggml %04x", v[i], bb, b[i]);
    }
    /* widening is exact, so fp16 -> fp32 -> fp16 returns every non-NaN pattern */
    for (uint32_t p = 0; p < 65536 && !th_failed(); p++) {
        float f = um_fp16_to_fp32((uint16_t)p);
        if ((p & 0x7c00) == 0x7c00 && (p & 0x3ff)) continue;
        if (um_fp32_to_fp16(f) != p) th_fail(__FILE__, __LINE__, "fp16 %04x does not round-trip", p);
        if (um_fp32_to_bf16(um_bf16_to_fp32((uint16_t)p)) != p && !((p & 0x7f80) == 0x7f80 && (p & 0x7f)))
            th_fail(__FILE__, __LINE__, "bf16 %04x does not round-trip", p);
    }
    free(buf);
}

/* F16 weights widen to fp32 for every one of the 65536 bit patterns as ggml does: exactly,
 * with signalling NaNs quieted (top mantissa bit set; payload and sign kept). */
TEST(quant_f16_widening_all_patterns) {
    static uint16_t h[65536];
    static float y[65536];
    for (uint32_t p = 0; p < 65536; p++) h[p] = (uint16_t)p;
    um_traits(UM_TYPE_F16)->to_float_ref(h, y, 65536);
    for (uint32_t p = 0; p < 65536; p++) {
        uint32_t got, want;
        memcpy(&got, &y[p], 4);
        uint32_t sign = (p & 0x8000u) << 16, e = (p >> 10) & 0x1f, m = p & 0x3ff;
        if (e == 0x1f) {
            want = sign | 0x7f800000u | (m << 13) | (m ? 0x00400000u : 0);
        } else {
            float v = ldexpf((float)(e ? (m | 0x400) : m), (e ? (int)e : 1) - 25);   /* exact */
            memcpy(&want, &v, 4);
            want |= sign;
        }
        CHECK_MSG(got == want, "fp16 %04x -> %08x, want %08x", p, got, want);
    }
}

/* ------------------------------------------------------------------ round trip */

/* Deterministic weight-like data: a sum of uniforms (near-Gaussian), some rows scaled. */
static void make_data(float *x, int n, uint32_t seed) {
    uint32_t s = seed;
    for (int i = 0; i < n; i++) {
        float acc = 0;
        for (int k = 0; k < 4; k++) {
            s = s * 1664525u + 1013904223u;
            acc += (float)(s >> 8) / 16777216.0f - 0.5f;
        }
        x[i] = acc * 0.05f * (1 + (i / 512) % 3);
    }
}

/* Normalised RMS error of quantize -> dequantize, rms(err)/rms(x), on Gaussian-like data.
 * Limits are about 1.5x the uniform-noise estimate step/sqrt(12) for each format's effective
 * step (bits per weight, block scale overhead), and well below the next-coarser format, so a
 * wrong level or scale fails while legitimate rounding passes. */
static const struct { uint32_t type; double max_nrmse; const char *why; } rt_limits[] = {
    { UM_TYPE_F16,    1.0e-3, "11-bit mantissa: 2^-11/sqrt(3)" },
    { UM_TYPE_BF16,   5.0e-3, "8-bit mantissa: 2^-8/sqrt(3)" },
    { UM_TYPE_Q8_0,   1.0e-2, "255 levels over +-amax of 32" },
    { UM_TYPE_Q6_K,   2.5e-2, "64 levels, 8-bit sub-scales" },
    { UM_TYPE_Q5_0,   5.0e-2, "32 levels symmetric" },
    { UM_TYPE_Q5_1,   4.5e-2, "32 levels over [min,max]" },
    { UM_TYPE_Q5_K,   4.5e-2, "32 levels, 6-bit scales and mins" },
    { UM_TYPE_Q4_0,   1.0e-1, "16 levels symmetric" },
    { UM_TYPE_Q4_1,   9.0e-2, "16 levels over [min,max]" },
    { UM_TYPE_Q4_K,   9.0e-2, "16 levels, 6-bit scales and mins" },
    { UM_TYPE_IQ4_NL, 9.0e-2, "16-value non-linear codebook" },
    { UM_TYPE_IQ4_XS, 9.0e-2, "codebook with 6-bit sub-scales" },
    { UM_TYPE_Q3_K,   2.0e-1, "8 levels, 6-bit scales" },
    { UM_TYPE_Q2_K,   4.0e-1, "4 levels, 4-bit scales and mins" },
};

TEST(quant_round_trip_error_bounds) {
    enum { N = 4096 };
    static float x[N], y[N];
    static uint8_t q[N * 4];
    make_data(x, N, 12345);
    double sx = 0;
    for (int i = 0; i < N; i++) sx += (double)x[i] * x[i];
    for (size_t k = 0; k < UM_ARRAY_LEN(rt_limits); k++) {
        const um_type_traits *t = um_traits(rt_limits[k].type);
        CHECK(t);
        t->from_float_ref(x, q, N);
        t->to_float_ref(q, y, N);
        double se = 0;
        for (int i = 0; i < N; i++) se += ((double)x[i] - y[i]) * ((double)x[i] - y[i]);
        double nrmse = sqrt(se / sx);
        CHECK_MSG(nrmse <= rt_limits[k].max_nrmse, "%s: normalised RMS error %.4g > %.4g (%s)",
                  t->name, nrmse, rt_limits[k].max_nrmse, rt_limits[k].why);
        CHECK_MSG(nrmse > 0 || k < 2, "%s: lossless on random data is impossible", t->name);
    }
}

/* Q8_0 has a hard per-element bound: half a step of the float scale, plus the scale's
 * fp16 rounding (2^-11 relative) carried to the largest level 127. */
TEST(quant_q8_0_per_element_bound) {
    enum { N = 2048 };
    static float x[N], y[N];
    static um_block_q8_0 q[N / 32];
    make_data(x, N, 99);
    um_quantize_q8_0(x, q, N);
    um_traits(UM_TYPE_Q8_0)->to_float_ref(q, y, N);
    for (int b = 0; b < N / 32; b++) {
        float amax = 0;
        for (int j = 0; j < 32; j++) amax = fmaxf(amax, fabsf(x[32 * b + j]));
        const double d = amax / 127.0, bound = 0.5 * d + 127 * d * (1.0 / 2048) + 1e-12;
        for (int j = 0; j < 32; j++)
            CHECK_MSG(fabs((double)x[32 * b + j] - y[32 * b + j]) <= bound, "block %d elem %d", b, j);
    }
}

/* All-zero input quantizes to blocks that dequantize to exact zeros (no NaN from 0/0). */
TEST(quant_zero_input_is_exact) {
    enum { N = 512 };
    static float x[N], y[N];
    static uint8_t q[N * 4];
    for (size_t k = 0; k < UM_ARRAY_LEN(rt_limits); k++) {
        const um_type_traits *t = um_traits(rt_limits[k].type);
        memset(q, 0xAB, sizeof q);
        t->from_float_ref(x, q, N);
        t->to_float_ref(q, y, N);
        for (int i = 0; i < N; i++) CHECK_MSG(y[i] == 0.0f, "%s elem %d = %g", t->name, i, y[i]);
    }
}

/* ------------------------------------------------------------------ dot products */

/* vec_dot_ref against dequantize-both-then-dot in double. Inside a block the reference sums
 * integers exactly; what differs is float rounding of the per-block scale products and of the
 * float accumulation over blocks: a few ulp (2^-24) of sum |w_i a_i| per block, so the limit is
 * 1e-5 * sum |w_i a_i|. Q4_1/Q5_1 pair with Q8_1, whose block sum s is stored as fp16: that
 * adds up to 2^-11 |m s| per block, added to the limit. */
TEST(quant_vec_dot_matches_dequantized_dot) {
    enum { N = 2048 };
    static float x[N], a[N], xd[N], ad[N];
    static uint8_t qw[N * 4], qa[N * 4];
    make_data(x, N, 7);
    make_data(a, N, 8);
    const int types[] = { UM_TYPE_F32, UM_TYPE_F16, UM_TYPE_BF16, UM_TYPE_Q4_0, UM_TYPE_Q4_1,
        UM_TYPE_Q5_0, UM_TYPE_Q5_1, UM_TYPE_Q8_0, UM_TYPE_Q2_K, UM_TYPE_Q3_K, UM_TYPE_Q4_K,
        UM_TYPE_Q5_K, UM_TYPE_Q6_K, UM_TYPE_IQ4_NL, UM_TYPE_IQ4_XS };
    for (size_t k = 0; k < UM_ARRAY_LEN(types); k++) {
        const um_type_traits *t = um_traits(types[k]);
        const um_type_traits *at = um_traits(t->vec_dot_type);
        CHECK(t && at);
        t->from_float_ref(x, qw, N);
        at->from_float_ref(a, qa, N);
        t->to_float_ref(qw, xd, N);
        at->to_float_ref(qa, ad, N);
        double exact = 0, mag = 0, extra = 0;
        for (int i = 0; i < N; i++) {
            exact += (double)xd[i] * ad[i];
            mag += fabs((double)xd[i] * ad[i]);
        }
        if (t->vec_dot_type == UM_TYPE_Q8_1) {
            const um_block_q8_1 *b = (const um_block_q8_1 *)qa;
            for (int i = 0; i < N / 32; i++) {
                float m = um_fp16_to_fp32(t->type == UM_TYPE_Q4_1 ? ((const um_block_q4_1 *)qw)[i].m
                                                                   : ((const um_block_q5_1 *)qw)[i].m);
                extra += fabs((double)m * um_fp16_to_fp32(b[i].s)) / 2048;
            }
        }
        double got = t->vec_dot_ref(qw, qa, N);
        double tol = 1e-5 * mag + extra + 1e-9;
        CHECK_MSG(fabs(got - exact) <= tol, "%s . %s: %.9g vs %.9g (tol %.3g)", t->name, at->name, got, exact, tol);
    }
}

/* The dot must actually depend on every element: flipping one activation changes it. */
TEST(quant_vec_dot_sees_every_block) {
    enum { N = 1024 };
    static float x[N], a[N];
    static uint8_t qw[N * 4], qa[N * 4];
    make_data(x, N, 21);
    for (int i = 0; i < N; i++) x[i] = fabsf(x[i]) + 0.01f;    /* no zero weights */
    const int types[] = { UM_TYPE_Q4_0, UM_TYPE_Q8_0, UM_TYPE_Q4_K, UM_TYPE_Q6_K, UM_TYPE_IQ4_XS, UM_TYPE_Q5_1 };
    for (size_t k = 0; k < UM_ARRAY_LEN(types); k++) {
        const um_type_traits *t = um_traits(types[k]), *at = um_traits(t->vec_dot_type);
        t->from_float_ref(x, qw, N);
        for (int i = 0; i < N; i++) a[i] = 0.5f;
        at->from_float_ref(a, qa, N);
        float base = t->vec_dot_ref(qw, qa, N);
        a[N - 1] = -0.5f;                                       /* last block only */
        at->from_float_ref(a, qa, N);
        float changed = t->vec_dot_ref(qw, qa, N);
        CHECK_MSG(changed < base, "%s: last block ignored (%g vs %g)", t->name, changed, base);
    }
}
