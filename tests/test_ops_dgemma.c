/*
 * test_ops_dgemma: the ops DiffusionGemma's step added, on every kernel set this CPU has:
 * ops_gemm_acc (y += a b, each element a chain of fused multiply-adds in k order) bit for bit
 * against the scalar reference and the reference against a double sum; ops_softcap within
 * 16 ulp of the double reference; ops_dequant_row bit for bit against the types' reference
 * decoders; ops_exp_shift within 16 ulp of the double exp, its sum that of its values;
 * ops_gemm_bf16_acc (BF16 pairs) bit for bit against its reference, with and without the BF16
 * instruction, and BF16 rounding by hand. Split from test_ops.c (same conventions).
 */
#include "harness.h"
#include "ops.h"
#include "ops_close.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define ULP (1.0 / 8388608.0)   /* 2^-23 */
#define TOL_EXP (16 * ULP)      /* as test_ops.c: the SIMD exp's few ulp plus a division */

/* n floats uniform in [-amp, amp) from a xorshift stream */
static float *rnd_buf(uint64_t *s, int64_t n, float amp) {
    float *p = malloc((size_t)(n > 0 ? n : 1) * sizeof *p);
    for (int64_t i = 0; i < n; i++) {
        *s ^= *s << 13; *s ^= *s >> 7; *s ^= *s << 17;
        p[i] = amp * ((float)((*s >> 40) * (1.0 / 8388608.0)) - 1.0f);
    }
    return p;
}

/* y += a b on every kernel set, bit for bit with the reference (each element one chain of
 * fused multiply-adds in k order), over row and column tails of every tile width (4 rows;
 * 64, 24 and 16 columns), leading dimensions wider than the rows (the gaps must stay as they
 * were), threaded and not; and the reference against a double sum. */
TEST(ops_gemm_acc_all_isas) {
    static const int ns[] = { 1, 3, 4, 5, 9 }, ks[] = { 1, 7, 64 }, ms[] = { 1, 5, 16, 17, 24, 63, 64, 65, 130 };
    um_pool *pool = pool_new(3);
    int shapes = 0;
    for (size_t ni = 0; ni < UM_ARRAY_LEN(ns); ni++)
        for (size_t ki = 0; ki < UM_ARRAY_LEN(ks); ki++)
            for (size_t mi = 0; mi < UM_ARRAY_LEN(ms); mi++) {
                const int n = ns[ni], k = ks[ki], m = ms[mi];
                const int64_t lda = k + 1, ldb = m + 5, ldy = m + 3;
                uint64_t seed = (uint64_t)(n * 1000 + k * 10 + m) * 0x9E3779B97F4A7C15ull + 1;
                float *a = rnd_buf(&seed, n * lda, 1.0f), *b = rnd_buf(&seed, k * ldb, 4.0f), *y0 = rnd_buf(&seed, n * ldy, 2.0f);
                float *ref = malloc(sizeof(float) * n * ldy), *y = malloc(sizeof(float) * n * ldy);
                memcpy(ref, y0, sizeof(float) * n * ldy);
                ops_gemm_acc_ref(ref, ldy, a, lda, b, ldb, n, k, m);
                double worst_d = 0;
                for (int i = 0; i < n; i++)
                    for (int j = 0; j < m; j++) {
                        double s = y0[i * ldy + j];
                        for (int kk = 0; kk < k; kk++) s += (double)a[i * lda + kk] * b[kk * ldb + j];
                        double d = fabs(s - ref[i * ldy + j]);
                        if (d > worst_d) worst_d = d;
                    }
                /* |terms| <= 4, |y0| <= 2: k + 1 roundings of partial sums below 4k + 2 */
                CHECK_MSG(worst_d <= (k + 1) * (4.0 * k + 2) * ULP, "ref %dx%dx%d: %.3g from the double sum", n, k, m, worst_d);
                for (int i = 0; i < n; i++)
                    for (int j = m; j < ldy; j++) CHECK(ref[i * ldy + j] == y0[i * ldy + j]);
                for (um_ops_isa isa = UM_OPS_REF; isa < UM_OPS_ISA_COUNT; isa++) {
                    if (!ops_isa_available(isa) || ops_select(isa, NULL) != UM_OK) continue;
                    for (int threaded = 0; threaded < 2; threaded++) {
                        memcpy(y, y0, sizeof(float) * n * ldy);
                        ops_gemm_acc(threaded ? pool : NULL, y, ldy, a, lda, b, ldb, n, k, m);
                        CHECK_MSG(!memcmp(y, ref, sizeof(float) * n * ldy), "%s %dx%dx%d%s: not the reference's bits",
                                  ops_isa_name(isa), n, k, m, threaded ? " threaded" : "");
                    }
                }
                free(a); free(b); free(y0); free(ref); free(y);
                shapes++;
            }
    ops_select(ops_isa_best(), NULL);
    pool_free(pool);
    CHECK_EQ(shapes, 135);
}


/* BF16 rounding by hand: nearest, ties to even; below 2^-50 zero (the sign kept out). */
TEST(ops_bf16_round_by_hand) {
    CHECK_EQ(ops_bf16_round(1.0f), 0x3F80);
    CHECK_EQ(ops_bf16_round(1.0f + 0x1p-8f), 0x3F80);                  /* tie: even */
    CHECK_EQ(ops_bf16_round(1.0f + 3 * 0x1p-8f), 0x3F82);              /* tie: even (up) */
    CHECK_EQ(ops_bf16_round(1.0f + 0x1p-8f + 0x1p-20f), 0x3F81);       /* above the tie */
    CHECK_EQ(ops_bf16_round(-2.0f), 0xC000);
    CHECK_EQ(ops_bf16_round(0x1p-50f), 0x2680);
    CHECK_EQ(ops_bf16_round(-0x1p-50f), 0xA680);
    CHECK_EQ(ops_bf16_round(0x1.fffp-51f), 0);
    CHECK_EQ(ops_bf16_round(1e-40f), 0);
    CHECK_EQ(ops_bf16_round(-0.0f), 0);
    uint32_t pr[2];
    const float x[4] = { 1.0f, -2.0f, 0x1p-60f, 3.0f };
    ops_bf16_pairs(pr, x, 2);
    CHECK_EQ(pr[0], 0xC0003F80u);
    CHECK_EQ(pr[1], 0x40400000u);
}

/* The conversions into BF16 on every kernel set against ops_bf16_round, value by value:
 * ops_bf16_pairs (adjacent values) and ops_bf16_pack_b (two rows into the tiles, the odd row
 * absent too), over every tail length, with ties, values at and below the flush, negatives. */
TEST(ops_bf16_convert_all_isas) {
    enum { N = 150 };
    float x[2 * N], o[2 * N];
    uint64_t seed = 99;
    float *r = rnd_buf(&seed, 4 * N, 1.0f);
    for (int i = 0; i < 2 * N; i++) {
        const float scale = ldexpf(1.0f, (int)(r[i] * 70.0f) - 10);      /* 2^-80 .. 2^60 */
        x[i] = r[2 * N + i] * scale;
        o[i] = -x[i] * 0.75f;
    }
    x[3] = 1.0f + 0x1p-8f; x[4] = 1.0f + 3 * 0x1p-8f; x[5] = 0x1p-50f; x[6] = 0x1.fffp-51f; x[7] = -0x1p-50f; x[8] = 0.0f;
    int runs = 0;
    for (um_ops_isa isa = UM_OPS_REF; isa < UM_OPS_ISA_COUNT; isa++) {
        if (!ops_isa_available(isa) || ops_select(isa, NULL) != UM_OK) continue;
        for (int n = 0; n <= N; n += (n < 40 ? 1 : 37)) {
            uint32_t pr[N + 1];
            pr[n] = 0xDEADBEEFu;
            ops_bf16_pairs(pr, x, n);
            int bad = pr[n] != 0xDEADBEEFu;
            for (int i = 0; i < n; i++) bad |= pr[i] != (ops_bf16_round(x[2 * i]) | (uint32_t)ops_bf16_round(x[2 * i + 1]) << 16);
            CHECK_MSG(!bad, "%s ops_bf16_pairs n %d", ops_isa_name(isa), n);
            const int m = n < 1 ? 1 : n, tiles = (m + 63) / 64, kp = 3;
            uint32_t b[3 * 3 * 64];
            for (int odd = 0; odd < 2; odd++) {
                memset(b, 0xAB, sizeof b);
                ops_bf16_pack_b(b, kp, 1, x, odd ? o : NULL, m);
                for (int t = 0; t < tiles; t++)
                    for (int c = 0; c < 64; c++) {
                        const int j = 64 * t + c;
                        const uint32_t want = j >= m ? 0u : ops_bf16_round(x[j]) | (odd ? (uint32_t)ops_bf16_round(o[j]) << 16 : 0u);
                        bad |= b[(t * kp + 1) * 64 + c] != want;                       /* pair row 1 of each tile */
                        bad |= b[(t * kp + 0) * 64 + c] != 0xABABABABu;               /* the other rows untouched */
                    }
                CHECK_MSG(!bad, "%s ops_bf16_pack_b m %d odd %d", ops_isa_name(isa), m, odd);
            }
        }
        runs++;
    }
    free(r);
    ops_select(ops_isa_best(), NULL);
    CHECK(runs >= 1);
}

/* The pair chain by hand, on every set (and with the BF16 instruction where the CPU has it):
 * y = 1, the odd product +2^-24 (a tie: 1 stays), then the even one -2^-24 gives 1 - 2^-24;
 * the even one first, or one rounding for both, would give 1. */
TEST(ops_gemm_bf16_chain_order) {
    const float one[1] = { 0x1p-12f };
    const float av[2] = { -0x1p-12f, 0x1p-12f };
    uint32_t a[1], b[UM_GEMM_TILE_COLS];
    ops_bf16_pairs(a, av, 1);
    int runs = 0;
    for (um_ops_isa isa = UM_OPS_REF; isa < UM_OPS_ISA_COUNT; isa++) {
        if (!ops_isa_available(isa) || ops_select(isa, NULL) != UM_OK) continue;
        for (int dot = 0; dot < 2; dot++) {
            ops_bf16_dot_allow(dot);
            if (dot && !ops_bf16_dot()) continue;
            ops_bf16_pack_b(b, 1, 0, one, one, 1);
            float y = 1.0f;
            ops_gemm_bf16_acc(NULL, &y, 1, a, 1, b, 1, 1, 1);
            CHECK_MSG(y == 1.0f - 0x1p-24f, "%s%s: %.9g", ops_isa_name(isa), dot ? " dot" : "", (double)y);
            runs++;
        }
    }
    ops_bf16_dot_allow(true);
    ops_select(ops_isa_best(), NULL);
    CHECK(runs >= 1);
}

/* y += a b in BF16 pairs on every kernel set, with the BF16 instruction and with FMAs where
 * the CPU has it, bit for bit with the reference; over row tails (4-row groups), pair counts,
 * column tails (tiles of 64; 16-column groups), ldy wider than m (the gap kept), an odd k
 * (the last pair half zero), threaded and not; and the reference within the rounding of the
 * double sum of the BF16 values. */
TEST(ops_gemm_bf16_all_isas) {
    static const int ns[] = { 1, 3, 4, 5, 9 }, ks[] = { 1, 2, 7, 64, 256 }, ms[] = { 1, 5, 16, 17, 63, 64, 65, 130 };
    um_pool *pool = pool_new(3);
    int shapes = 0, dot_runs = 0;
    for (size_t ni = 0; ni < UM_ARRAY_LEN(ns); ni++)
        for (size_t ki = 0; ki < UM_ARRAY_LEN(ks); ki++)
            for (size_t mi = 0; mi < UM_ARRAY_LEN(ms); mi++) {
                const int n = ns[ni], k = ks[ki], m = ms[mi], kp = (k + 1) / 2, tiles = (m + 63) / 64;
                const int64_t lda = kp + 1, ldy = m + 3;
                uint64_t seed = (uint64_t)(n * 1000 + k * 10 + m) * 0x9E3779B97F4A7C15ull + 7;
                float *af = rnd_buf(&seed, n * 2 * lda, 1.0f), *bf = rnd_buf(&seed, (int64_t)2 * kp * m, 4.0f);
                float *y0 = rnd_buf(&seed, n * ldy, 2.0f);
                for (int i = 0; i < n; i++) af[i * 2 * lda + k] = k % 2 ? 0.0f : af[i * 2 * lda + k];   /* odd k: zero half */
                uint32_t *a = malloc(sizeof(uint32_t) * n * lda), *b = malloc(sizeof(uint32_t) * tiles * kp * 64);
                for (int i = 0; i < n; i++) ops_bf16_pairs(a + i * lda, af + i * 2 * lda, lda);
                for (int p = 0; p < kp; p++) ops_bf16_pack_b(b, kp, p, bf + 2 * p * m, 2 * p + 1 < k ? bf + (2 * p + 1) * m : NULL, m);
                float *ref = malloc(sizeof(float) * n * ldy), *y = malloc(sizeof(float) * n * ldy);
                memcpy(ref, y0, sizeof(float) * n * ldy);
                ops_gemm_bf16_acc_ref(ref, ldy, a, lda, b, n, kp, m);
                double worst_d = 0;
                for (int i = 0; i < n; i++)
                    for (int j = 0; j < m; j++) {
                        double s = y0[i * ldy + j];
                        for (int kk = 0; kk < k; kk++) {
                            s += (double)um_bf16_to_fp32(ops_bf16_round(af[i * 2 * lda + kk])) *
                                 um_bf16_to_fp32(ops_bf16_round(bf[kk * m + j]));
                        }
                        double d = fabs(s - ref[i * ldy + j]);
                        if (d > worst_d) worst_d = d;
                    }
                CHECK_MSG(worst_d <= (k + 1) * (4.0 * k + 2) * ULP, "ref %dx%dx%d: %.3g from the double sum", n, k, m, worst_d);
                for (int i = 0; i < n; i++)
                    for (int j = m; j < ldy; j++) CHECK(ref[i * ldy + j] == y0[i * ldy + j]);
                for (um_ops_isa isa = UM_OPS_REF; isa < UM_OPS_ISA_COUNT; isa++) {
                    if (!ops_isa_available(isa) || ops_select(isa, NULL) != UM_OK) continue;
                    for (int dot = 0; dot < 2; dot++) {
                        ops_bf16_dot_allow(dot);
                        if (dot && !ops_bf16_dot()) continue;
                        dot_runs += dot;
                        for (int threaded = 0; threaded < 2; threaded++) {
                            memcpy(y, y0, sizeof(float) * n * ldy);
                            ops_gemm_bf16_acc(threaded ? pool : NULL, y, ldy, a, lda, b, n, kp, m);
                            CHECK_MSG(!memcmp(y, ref, sizeof(float) * n * ldy), "%s%s %dx%dx%d%s: not the reference's bits",
                                      ops_isa_name(isa), dot ? " dot" : "", n, k, m, threaded ? " threaded" : "");
                        }
                    }
                }
                free(af); free(bf); free(y0); free(a); free(b); free(ref); free(y);
                shapes++;
            }
    ops_bf16_dot_allow(true);
    ops_select(ops_isa_best(), NULL);
    pool_free(pool);
    printf("    %d shapes; the BF16 instruction ran %d of them%s\n", shapes, dot_runs, dot_runs ? "" : " (not on this CPU)");
    CHECK_EQ(shapes, 200);
}

/* The soft-cap on every kernel set against the reference (double tanh rounded once) over
 * the whole float range at cap 30 and 15: both sides of |x/cap| = 0.625 (the polynomial and
 * the exp form), tiny values (x/cap ~ t), saturation, the tail lengths; NaN stays NaN and
 * +-inf gives +-cap. Threaded runs equal single-threaded ones bit for bit. */
TEST(ops_softcap_all_isas) {
    enum { N = 40003 };
    float *x = malloc(N * sizeof *x), *ref = malloc(N * sizeof *ref), *y = malloc(N * sizeof *y), *y1 = malloc(N * sizeof *y1);
    um_pool *pool = pool_new(3);
    static const float caps[] = { 30.0f, 15.0f };
    for (size_t ci = 0; ci < UM_ARRAY_LEN(caps); ci++) {
        const float cap = caps[ci];
        uint64_t seed = (17 + ci) * 0x9E3779B97F4A7C15ull + 1;
        float *r01 = rnd_buf(&seed, N, 1.0f);
        for (int i = 0; i < N; i++) {
            float r = r01[i];
            switch (i % 4) {
            case 0: x[i] = r * cap; break;                            /* |t| < 1: both forms */
            case 1: x[i] = r * 0.625f * cap * 1.02f; break;           /* around the switch */
            case 2: x[i] = ldexpf(r, (i / 4) % 60 - 40); break;       /* 2^-40 .. 2^19 */
            default: x[i] = r * 400.0f; break;                        /* saturating */
            }
        }
        free(r01);
        x[0] = NAN; x[1] = INFINITY; x[2] = -INFINITY; x[3] = 0.0f; x[5] = -0.0f;
        memcpy(ref, x, N * sizeof *x);
        ops_softcap_ref(ref, N, cap);
        CHECK(isnan(ref[0]) && ref[1] == cap && ref[2] == -cap && ref[3] == 0.0f);
        for (um_ops_isa isa = UM_OPS_REF; isa < UM_OPS_ISA_COUNT; isa++) {
            if (!ops_isa_available(isa) || ops_select(isa, NULL) != UM_OK) continue;
            for (int64_t n = 1; n <= N; n = n < 40 ? n + 1 : n < N ? N : N + 1) {   /* every tail, then all */
                memcpy(y, x, (size_t)n * sizeof *x);
                ops_softcap(NULL, y, n, cap);
                CHECK_CLOSE(y + 1, ref + 1, n - 1, 1e-30, TOL_EXP, ops_isa_name(isa));
                CHECK_MSG(isnan(y[0]), "%s: softcap(NaN) = %g", ops_isa_name(isa), (double)y[0]);
            }
            memcpy(y1, x, N * sizeof *x);
            memcpy(y, x, N * sizeof *x);
            ops_softcap(NULL, y1, N, cap);
            ops_softcap(pool, y, N, cap);
            CHECK_MSG(!memcmp(y, y1, N * sizeof *y), "%s: threaded soft-cap differs", ops_isa_name(isa));
        }
    }
    ops_select(ops_isa_best(), NULL);
    pool_free(pool);
    free(x); free(ref); free(y); free(y1);
}

/* ops_dequant_row on every kernel set gives the reference decoder's bits: Q6_K and Q8_0
 * (the SIMD kernels) over random blocks whose every byte is random (codes, high bits, signed
 * scales) and whose f16 scales are any finite value (subnormal, negative, +-0, the largest),
 * 1 to 11 blocks; Q4_K, which has no SIMD kernel, through the fallback. */
TEST(ops_dequant_row_all_isas) {
    static const um_type types[] = { UM_TYPE_Q6_K, UM_TYPE_Q8_0, UM_TYPE_Q4_K };
    static const uint16_t halves[] = { 0x0000, 0x8000, 0x0001, 0x83FF, 0x7BFF, 0xFBFF, 0x3C00, 0x2E66 };
    uint64_t seed = 0x5DEECE66Dull;
    int cases = 0;
    for (size_t ti = 0; ti < UM_ARRAY_LEN(types); ti++) {
        const um_type ty = types[ti];
        const int blck = (int)um_type_blck(ty), bytes = (int)um_type_bytes(ty);
        for (int nb = 1; nb <= 11; nb += 5) {
            const int64_t n = (int64_t)nb * blck;
            uint8_t *src = malloc((size_t)nb * bytes);
            float *ref = malloc(sizeof(float) * n), *y = malloc(sizeof(float) * n);
            for (int i = 0; i < nb * bytes; i++) {
                seed ^= seed << 13; seed ^= seed >> 7; seed ^= seed << 17;
                src[i] = (uint8_t)(seed >> 32);
            }
            /* the f16 scales: d (and Q4_K's dmin) at the start or end of each block, finite */
            for (int b = 0; b < nb; b++) {
                uint8_t *blk = src + (size_t)b * bytes;
                const size_t off = ty == UM_TYPE_Q6_K ? (size_t)bytes - 2 : 0;
                const int nh = ty == UM_TYPE_Q4_K ? 2 : 1;
                for (int h = 0; h < nh; h++) {
                    uint16_t v = halves[(b + h + nb) % UM_ARRAY_LEN(halves)];
                    if ((b + nb) % 3 == 2) v = (uint16_t)((blk[off + 2 * h] | blk[off + 2 * h + 1] << 8) & 0xBBFF);
                    memcpy(blk + off + 2 * h, &v, 2);
                }
            }
            um_traits(ty)->to_float_ref(src, ref, n);
            for (um_ops_isa isa = UM_OPS_REF; isa < UM_OPS_ISA_COUNT; isa++) {
                if (!ops_isa_available(isa) || ops_select(isa, NULL) != UM_OK) continue;
                memset(y, 0xFF, sizeof(float) * n);
                ops_dequant_row(ty, src, y, n);
                CHECK_MSG(!memcmp(y, ref, sizeof(float) * n), "%s %s, %d blocks: not the reference's bits",
                          ops_isa_name(isa), um_type_name(ty), nb);
            }
            free(src); free(ref); free(y);
            cases++;
        }
    }
    ops_select(ops_isa_best(), NULL);
    CHECK_EQ(cases, 9);
}

/* ops_exp_shift on every kernel set: x = e^(x - shift) within 16 ulp of the double exp (a
 * flush to 0 allowed below 1e-30), over a softmax row's range (the row's max as shift: every
 * argument <= 0, down to far below the float range) and positive arguments, every tail
 * length; the sum it returns is the sum of the values it wrote. */
TEST(ops_exp_shift_all_isas) {
    enum { N = 4099 };
    uint64_t seed = 0xC0FFEE;
    float *x0 = rnd_buf(&seed, N, 60.0f), *ref = malloc(N * sizeof(float)), *y = malloc(N * sizeof(float));
    for (int i = 0; i < N; i += 7) x0[i] = -3.0f * fabsf(x0[i]);  /* some arguments below -100 */
    x0[3] = 40.0f;
    const float shift = 40.0f;
    x0[5] = -INFINITY;                                       /* a logit of -inf gives 0 */
    /* the difference is rounded to float first, as every kernel forms it */
    for (int i = 0; i < N; i++) { const float d = x0[i] - shift; ref[i] = (float)exp((double)d); }
    int sets = 0;
    for (um_ops_isa isa = UM_OPS_REF; isa < UM_OPS_ISA_COUNT; isa++) {
        if (!ops_isa_available(isa) || ops_select(isa, NULL) != UM_OK) continue;
        for (int64_t n = 1; n <= N; n = n < 40 ? n + 1 : n < N ? N : N + 1) {
            memcpy(y, x0, (size_t)n * sizeof(float));
            const double sum = ops_exp_shift(y, n, shift);
            CHECK_CLOSE(y, ref, n, 1e-30, TOL_EXP, ops_isa_name(isa));
            double s2 = 0;
            for (int64_t i = 0; i < n; i++) s2 += y[i];
            CHECK_MSG(fabs(sum - s2) <= 1e-12 * s2, "%s n %lld: sum %.17g, its values %.17g", ops_isa_name(isa),
                      (long long)n, sum, s2);
        }
        CHECK_MSG(y[3] == 1.0f && y[5] == 0.0f, "%s: e^0 %g, e^-inf %g", ops_isa_name(isa), (double)y[3], (double)y[5]);
        sets++;
    }
    ops_select(ops_isa_best(), NULL);
    CHECK(sets >= 1);
    free(x0); free(ref); free(y);
}
