/*
 * test_quant_iq: the lattice (IQ1/IQ2/IQ3) and ternary (TQ) formats of src/format/quant_iq.c.
 *
 * Expected values come from llama.cpp, never from unmask: tests/data/iq/ (NAME.bin) hold blocks that
 * llama-quantize wrote (with an importance matrix) and random blocks, each with the floats
 * ggml's own dequantizer gave for them (tools/make-iq-fixtures.sh, tests/data/iq/README.md).
 * The format tables are checked against properties stated in llama.cpp's sources, and the
 * dot products against a double-precision dot of the dequantized operands.
 */
#include "harness.h"
#include "umq1.h"
#include "infile.h"
#include "quant.h"
#include "util.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static const struct { const char *name; uint32_t type; } iq_types[] = {
    { "iq2_xxs", UM_TYPE_IQ2_XXS }, { "iq2_xs", UM_TYPE_IQ2_XS }, { "iq2_s", UM_TYPE_IQ2_S },
    { "iq3_xxs", UM_TYPE_IQ3_XXS }, { "iq3_s", UM_TYPE_IQ3_S },   { "iq1_s", UM_TYPE_IQ1_S },
    { "iq1_m", UM_TYPE_IQ1_M },     { "tq1_0", UM_TYPE_TQ1_0 },   { "tq2_0", UM_TYPE_TQ2_0 },
};

static bool load_fixture(const char *name, fixture *f) {
    return load_fixture_in("tests/data/iq", name, (size_t)1 << 24, f);
}

static long first_bit_diff(const float *a, const float *b, uint32_t n) {
    for (uint32_t i = 0; i < n; i++)
        if (memcmp(&a[i], &b[i], 4)) return (long)i;
    return -1;
}

/* ------------------------------------------------------------------ layouts and tables */

/* Block sizes are ggml's (the static_asserts in ggml-common.h), the traits agree, names are
 * ggml's, and every type pairs with Q8_K. */
TEST(quant_iq_layouts) {
    const size_t sizes[] = { sizeof(um_block_iq2_xxs), sizeof(um_block_iq2_xs), sizeof(um_block_iq2_s),
        sizeof(um_block_iq3_xxs), sizeof(um_block_iq3_s), sizeof(um_block_iq1_s), sizeof(um_block_iq1_m),
        sizeof(um_block_tq1_0), sizeof(um_block_tq2_0) };
    const uint32_t ggml_bytes[] = { 66, 74, 82, 98, 110, 50, 56, 54, 66 };
    for (size_t i = 0; i < UM_ARRAY_LEN(iq_types); i++) {
        uint32_t t = iq_types[i].type;
        const um_type_traits *tr = um_traits(t);
        CHECK_MSG(tr, "no traits for %s", iq_types[i].name);
        CHECK_STREQ(um_type_name(t), iq_types[i].name);
        CHECK_EQ(um_type_from_name(iq_types[i].name), (int)t);
        CHECK_EQ(um_type_blck(t), 256);
        CHECK_EQ(um_type_bytes(t), ggml_bytes[i]);
        CHECK_EQ(sizes[i], ggml_bytes[i]);
        CHECK(tr->bytes == ggml_bytes[i] && tr->blck == 256 && tr->to_float_ref && tr->vec_dot_ref);
        CHECK(tr->vec_dot_type == UM_TYPE_Q8_K && tr->is_quantized && !tr->is_activation);
    }
}

/* Properties of the tables stated in llama.cpp (ggml-quants.c's grid builders and comments):
 * ksigns holds 7 sign bits plus the parity bit; iq2 grids use levels 8, 25, 43; iq3xxs
 * levels 4..62 and iq3s 1..15 (odd); iq1s levels -1, 0, 1; no grid repeats an entry. */
TEST(quant_iq_tables) {
    for (int i = 0; i < 128; i++) {
        int parity = __builtin_popcount((unsigned)i) & 1;
        CHECK_EQ(um_ksigns_iq2xs[i], (uint8_t)(i | parity << 7));
    }
    for (int j = 0; j < 8; j++) CHECK_EQ(um_kmask_iq2xs[j], 1u << j);
    const struct { const uint64_t *g; int n; } g2[] = { { um_iq2xxs_grid, 256 }, { um_iq2xs_grid, 512 }, { um_iq2s_grid, 1024 } };
    for (size_t k = 0; k < UM_ARRAY_LEN(g2); k++)
        for (int i = 0; i < g2[k].n; i++) {
            for (int j = 0; j < 8; j++) {
                int v = (int)(g2[k].g[i] >> (8 * j) & 0xFF);
                CHECK_MSG(v == 8 || v == 25 || v == 43, "iq2 grid %zu entry %d byte %d = %d", k, i, j, v);
            }
            if (i) CHECK(g2[k].g[i] != g2[k].g[i - 1]);
        }
    for (int i = 0; i < 256; i++)
        for (int j = 0; j < 4; j++) {
            int v = (int)(um_iq3xxs_grid[i] >> (8 * j) & 0xFF);
            CHECK(v >= 4 && v <= 62 && v % 2 == 0);
        }
    for (int i = 0; i < 512; i++)
        for (int j = 0; j < 4; j++) {
            int v = (int)(um_iq3s_grid[i] >> (8 * j) & 0xFF);
            CHECK(v >= 1 && v <= 15 && v % 2 == 1);
        }
    for (int i = 0; i < UM_IQ1S_NGRID; i++)
        for (int j = 0; j < 8; j++) {
            int v = (int8_t)(um_iq1s_grid[i] >> (8 * j));
            CHECK(v >= -1 && v <= 1);
        }
}

/* ------------------------------------------------------------------ bit-exactness */

/* Every dequantizer gives exactly ggml's floats, on llama-quantize's blocks and on random
 * blocks (every field value, including scales and indices the quantizer rarely writes). */
TEST(quant_iq_dequant_matches_llama_cpp) {
    for (size_t i = 0; i < UM_ARRAY_LEN(iq_types); i++) {
        fixture f;
        CHECK_MSG(load_fixture(iq_types[i].name, &f), "fixture %s unreadable", iq_types[i].name);
        if (!f.buf) continue;
        CHECK_EQ(f.type, iq_types[i].type);
        const um_type_traits *t = um_traits(f.type);
        CHECK(t && f.n_a >= 1024 && f.n_b >= 1024);
        CHECK_EQ(f.bytes_a, um_row_size(f.type, f.n_a));
        CHECK_EQ(f.bytes_b, um_row_size(f.type, f.n_b));
        if (!t || th_failed()) { free(f.buf); continue; }
        float *ya = um_malloc(4u * f.n_a), *yb = um_malloc(4u * f.n_b);
        t->to_float_ref(f.qa, ya, f.n_a);
        t->to_float_ref(f.qb, yb, f.n_b);
        long da = first_bit_diff(ya, f.ea, f.n_a), db = first_bit_diff(yb, f.eb, f.n_b);
        CHECK_MSG(da < 0, "%s llama-quantize block element %ld: %.9g vs ggml %.9g", t->name, da,
                  da < 0 ? 0 : ya[da], da < 0 ? 0 : f.ea[da]);
        CHECK_MSG(db < 0, "%s random block element %ld: %.9g vs ggml %.9g", t->name, db,
                  db < 0 ? 0 : yb[db], db < 0 ? 0 : f.eb[db]);
        /* the fixtures are not degenerate: llama-quantize's blocks carry many distinct values */
        int nonzero = 0;
        for (uint32_t k = 0; k < f.n_a; k++) nonzero += f.ea[k] != 0;
        CHECK_MSG(nonzero > (int)f.n_a / 4, "%s: only %d non-zero values", t->name, nonzero);
        free(ya); free(yb); free(f.buf);
    }
}

/* ------------------------------------------------------------------ dot products */

static uint32_t xs32(uint32_t *s) { *s ^= *s << 13; *s ^= *s >> 17; *s ^= *s << 5; return *s; }

/* Random blocks with a finite block scale (|d| < 2, the top exponent bit cleared). */
static void random_blocks(uint32_t type, uint8_t *b, int nb, uint32_t seed) {
    uint32_t bytes = um_type_bytes(type), s = seed;
    for (uint32_t i = 0; i < bytes * (uint32_t)nb; i++) b[i] = (uint8_t)xs32(&s);
    int hi = type == UM_TYPE_IQ1_M ? 55 : type == UM_TYPE_TQ1_0 ? 53 : type == UM_TYPE_TQ2_0 ? 65 : 1;
    for (int k = 0; k < nb; k++) b[(size_t)k * bytes + hi] &= 0xBF;
}

/* vec_dot_ref against a double dot of the dequantized weights and Q8_K activations. The
 * reference sums integers exactly inside a block; only the float scale product per block and
 * the float accumulation round: a few ulp of sum |w_i a_i|, so the limit is 1e-5 of it. */
TEST(quant_iq_vec_dot_matches_dequantized_dot) {
    enum { N = 2048, NB = N / 256 };
    static uint8_t qw[NB * 128];
    static um_block_q8_K qa[NB];
    static float a[N], xd[N], ad[N];
    uint32_t s = 77;
    for (int i = 0; i < N; i++) a[i] = (float)((int)(xs32(&s) % 2001) - 1000) * 1e-3f;
    um_quantize_q8_K(a, qa, N);
    um_traits(UM_TYPE_Q8_K)->to_float_ref(qa, ad, N);
    for (size_t k = 0; k < UM_ARRAY_LEN(iq_types); k++) {
        const um_type_traits *t = um_traits(iq_types[k].type);
        CHECK(t);
        if (!t) continue;
        random_blocks(t->type, qw, NB, 1000 + (uint32_t)k);
        t->to_float_ref(qw, xd, N);
        double exact = 0, mag = 0;
        for (int i = 0; i < N; i++) {
            exact += (double)xd[i] * ad[i];
            mag += fabs((double)xd[i] * ad[i]);
        }
        double got = t->vec_dot_ref(qw, qa, N);
        CHECK_MSG(mag > 0 && fabs(got - exact) <= 1e-5 * mag, "%s: %.9g vs %.9g (mag %.3g)", t->name, got, exact, mag);
    }
}

/* The dot sees every block: activations aligned with the last block's weights raise it. */
TEST(quant_iq_vec_dot_sees_every_block) {
    enum { N = 1024, NB = N / 256 };
    static uint8_t qw[NB * 128];
    static um_block_q8_K qa[NB];
    static float a[N];
    for (size_t k = 0; k < UM_ARRAY_LEN(iq_types); k++) {
        const um_type_traits *t = um_traits(iq_types[k].type);
        if (!t) { CHECK(t); continue; }
        random_blocks(t->type, qw, NB, 5000 + (uint32_t)k);
        float w_last[256];
        t->to_float_ref(qw + (size_t)(NB - 1) * t->bytes, w_last, 256);
        for (int i = 0; i < N; i++) a[i] = i < 256 ? 0.5f : 0;
        um_quantize_q8_K(a, qa, N);
        float base = t->vec_dot_ref(qw, qa, N);
        for (int i = 0; i < 256; i++) a[N - 256 + i] = w_last[i] >= 0 ? 0.5f : -0.5f;
        um_quantize_q8_K(a, qa, N);
        float changed = t->vec_dot_ref(qw, qa, N);
        CHECK_MSG(changed > base, "%s: last block ignored (%g vs %g)", t->name, changed, base);
    }
}

/* ------------------------------------------------------------------ ternary quantizers */

/* TQ1_0 / TQ2_0 write exactly the bytes llama-quantize wrote for the same source values
 * (tests/data/iq/source.f32: the f16 inputs of section A's 4 blocks). */
TEST(quant_tq_quantize_matches_llama_quantize) {
    char *src;
    size_t len;
    um_err e;
    CHECK_MSG(infile_read("tests/data/iq/source.f32", 1 << 20, &src, &len, &e) == UM_OK, "%s", e.msg);
    if (th_failed()) return;
    CHECK_EQ(len, 4u * 1024);
    const char *names[] = { "tq1_0", "tq2_0" };
    for (int i = 0; i < 2; i++) {
        fixture f;
        CHECK(load_fixture(names[i], &f));
        if (!f.buf) continue;
        const um_type_traits *t = um_traits(f.type);
        uint8_t out[4 * 66];
        CHECK(t && t->from_float_ref && f.n_a == 1024 && f.bytes_a <= sizeof out);
        if (!th_failed()) {
            t->from_float_ref((const float *)src, out, 1024);
            long diff = -1;
            for (uint32_t k = 0; k < f.bytes_a && diff < 0; k++) if (out[k] != f.qa[k]) diff = (long)k;
            CHECK_MSG(diff < 0, "%s: byte %ld is %u, llama-quantize wrote %u", t->name, diff,
                      diff < 0 ? 0 : out[diff], diff < 0 ? 0 : f.qa[diff]);
        }
        free(f.buf);
    }
    free(src);
}

/* Ternary round trip: every value becomes -d, 0 or d with d = max |x|, the nearest of the three. */
TEST(quant_tq_round_trip) {
    static float x[512], y[512];
    static uint8_t q[2 * 66];
    uint32_t s = 3;
    for (int i = 0; i < 512; i++) x[i] = (float)((int)(xs32(&s) % 2001) - 1000) * 1e-3f;
    x[7] = 1.5f;                                            /* the first block's max */
    for (int k = 0; k < 2; k++) {
        const um_type_traits *t = um_traits(k ? UM_TYPE_TQ2_0 : UM_TYPE_TQ1_0);
        t->from_float_ref(x, q, 512);
        t->to_float_ref(q, y, 512);
        for (int b = 0; b < 2; b++) {
            float d = 0;
            for (int i = 0; i < 256; i++) d = fmaxf(d, fabsf(x[256 * b + i]));
            d = um_fp16_to_fp32(um_fp32_to_fp16(d));
            for (int i = 256 * b; i < 256 * b + 256; i++) {
                float want = fabsf(x[i]) < 0.5f * d ? 0 : x[i] < 0 ? -d : d;
                if (fabsf(fabsf(x[i]) - 0.5f * d) < 1e-3f * d) continue;   /* ties: rounding of x/d */
                CHECK_MSG(y[i] == want, "%s element %d: %g -> %g, want %g", t->name, i, x[i], y[i], want);
                if (th_failed()) return;
            }
        }
    }
}

/* ------------------------------------------------------------------ lattice quantizers */

/* Deterministic weight-like data (test_quant.c's make_data: sums of 4 uniforms, some rows
 * scaled), for comparing errors with numbers measured on the same values. */
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

/* The simple quantizers (quant_iq_search.c) against llama.cpp's own on the same 4096 values:
 * normalised RMS error of quantize -> dequantize. llama: ggml_quantize_chunk of the peer
 * (v0.4.0) on exactly this data, without an importance matrix where it allows that, with an
 * all-ones one where it demands one (IQ2_XXS, IQ2_XS, IQ1_S; IQ1_M: with one, as
 * llama-quantize demands). Limit: 1.25x llama.cpp's error, so a
 * wrong level, sign, scale or packing (which gives errors near or above 1) fails. */
TEST(quant_iq_quantizers_error_near_llama_cpp) {
    static const struct { uint32_t type; double llama; } ref[] = {
        { UM_TYPE_IQ2_XXS, 0.3449 }, { UM_TYPE_IQ2_XS, 0.2924 }, { UM_TYPE_IQ2_S, 0.2564 },
        { UM_TYPE_IQ3_XXS, 0.2076 }, { UM_TYPE_IQ3_S, 0.1624 }, { UM_TYPE_IQ1_S, 0.4708 },
        { UM_TYPE_IQ1_M, 0.4467 },
    };
    enum { N = 4096 };
    static float x[N], y[N];
    static uint8_t q[N];
    make_data(x, N, 12345);
    double sx = 0;
    for (int i = 0; i < N; i++) sx += (double)x[i] * x[i];
    for (size_t k = 0; k < UM_ARRAY_LEN(ref); k++) {
        const um_type_traits *t = um_traits(ref[k].type);
        CHECK(t && t->from_float_ref);
        if (!t || !t->from_float_ref) continue;
        t->from_float_ref(x, q, N);
        t->to_float_ref(q, y, N);
        double se = 0;
        for (int i = 0; i < N; i++) se += ((double)x[i] - y[i]) * ((double)x[i] - y[i]);
        double nrmse = sqrt(se / sx);
        printf("    %-8s nrmse %.4f (llama.cpp %.4f)\n", t->name, nrmse, ref[k].llama);
        CHECK_MSG(nrmse <= 1.25 * ref[k].llama, "%s: normalised RMS error %.4f > 1.25 x llama.cpp's %.4f",
                  t->name, nrmse, ref[k].llama);
    }
}

/* Zero and constant blocks: zeros stay exact zeros; a constant block keeps its sign and,
 * on average, its value (not per element: the grids hold few constant points). */
TEST(quant_iq_quantizers_edge_blocks) {
    static float x[512], y[512];
    static uint8_t q[512];
    for (int i = 0; i < 256; i++) { x[i] = 0; x[256 + i] = -0.3f; }
    const uint32_t types[] = { UM_TYPE_IQ2_XXS, UM_TYPE_IQ2_XS, UM_TYPE_IQ2_S, UM_TYPE_IQ3_XXS, UM_TYPE_IQ3_S,
                               UM_TYPE_IQ1_S, UM_TYPE_IQ1_M };
    for (size_t k = 0; k < UM_ARRAY_LEN(types); k++) {
        const um_type_traits *t = um_traits(types[k]);
        t->from_float_ref(x, q, 512);
        t->to_float_ref(q, y, 512);
        for (int i = 0; i < 256; i++) CHECK_MSG(y[i] == 0, "%s: zero block gives %g at %d", t->name, y[i], i);
        double mean = 0;
        for (int i = 256; i < 512; i++) {
            CHECK_MSG(y[i] < 0, "%s: constant -0.3 gives %g at %d", t->name, y[i], i);
            mean += y[i] / 256.0;
        }
        /* least squares over unequal levels shrinks the mean: a (sum g)^2 / (n sum g^2) */
        CHECK_MSG(fabs(mean + 0.3) < 0.05, "%s: constant -0.3 block averages %g", t->name, mean);
        if (th_failed()) return;
    }
}
