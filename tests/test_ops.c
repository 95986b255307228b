/*
 * test_ops: every op on every kernel set this CPU has, against the scalar references
 * (ops_*_ref), plus the references themselves against independent double-precision
 * formulas (RoPE, attention) and hand-computed cases (MoE routing and grouping).
 * Data is deterministic (a fixed-seed generator). Results must not depend on the
 * thread count: threaded runs are compared bit for bit with single-threaded ones.
 */
#include "harness.h"
#include "ops.h"
#include "ops_close.h"

#include <float.h>
#include <stdlib.h>

/* ------------------------------------------------------------------ tolerances
 * TOL_EXACT: add/mul are the same single IEEE operation in every kernel set.
 * TOL_EXP:   relative; the SIMD exp is a polynomial within ~2 ulp of libm's expf (which
 *            is itself within 1 ulp), plus one division: 16 ulp of float is ample.
 *            GeGLU too: its kernels form the exponent -2u in double, so e^(-2u) carries the
 *            same ~2 ulp for any |u| (a float -2u would be 1e-5 relative off at |2u| = 60),
 *            plus one rounding for the low half of -2u and one for the final product.
 *            The absolute 1e-30 of both covers results near and below FLT_MIN (the
 *            references round once from double, the kernels round a few times there).
 * TOL_NORM:  relative; RMSNorm/softmax sums are in double in every set, so only the sum
 *            order differs, plus exp's ~3 ulp in softmax: 8 ulp.
 * RoPE:      exact; the reference and the kernels do the same fused multiply-adds on the
 *            same per-token table (and match llama.cpp bit for bit, see the fixture test).
 * TOL_ATTN:  absolute for v in [-1, 1]. With q, k in [-3, 3] a score sums head_dim
 *            products of up to 9 (partial sums ~100, so ~1e-5 of float rounding), and a
 *            different summation order (pre-scaled q, FMA, tiles) moves it by about that
 *            much; a score error of d changes softmax weights by a relative d, and the
 *            output is a convex mix of v, so |error| <~ 1e-5 (measured: 3.7e-6 worst).
 * TOL_ATTN_D: the float reference against a double naive softmax: the same argument
 *            (float dot products and running sums over up to 513 keys).
 */
#define ULP        (1.0 / 8388608.0)   /* 2^-23 */
#define TOL_EXACT  0.0
#define TOL_EXP    (16 * ULP)
#define TOL_NORM   (8 * ULP)
#define TOL_ATTN   (1e-5)
#define TOL_ATTN_D (1e-5)

/* ------------------------------------------------------------------ helpers */

static uint64_t g_rng;
static void rng_seed(uint64_t s) { g_rng = s * 0x9E3779B97F4A7C15ull + 1; }
/* uniform in [-1, 1) */
static float rnd(void) {
    g_rng ^= g_rng << 13; g_rng ^= g_rng >> 7; g_rng ^= g_rng << 17;
    return (float)((g_rng >> 40) * (1.0 / 8388608.0)) - 1.0f;
}
static float *rnd_buf(int64_t n, float amp) {
    float *p = malloc((size_t)(n > 0 ? n : 1) * sizeof *p);
    for (int64_t i = 0; i < n; i++) p[i] = amp * rnd();
    return p;
}
static float *copy_buf(const float *x, int64_t n) {
    float *p = malloc((size_t)(n > 0 ? n : 1) * sizeof *p);
    memcpy(p, x, (size_t)n * sizeof *p);
    return p;
}


/* Run body once for every available kernel set; restores the default afterwards. */
#define FOR_EACH_ISA(isa)                                                              \
    for (um_ops_isa isa = UM_OPS_REF; isa < UM_OPS_ISA_COUNT; isa++)                   \
        if (ops_isa_available(isa) && ops_select(isa, NULL) == UM_OK)

static void restore_isa(void) { ops_select(ops_isa_best(), NULL); }

static const int64_t g_sizes[] = { 1, 7, 15, 16, 17, 160, 513, 4096, 40000 };

/* ------------------------------------------------------------------ kernel sets */

TEST(ops_isa_selection) {
    CHECK(ops_isa_available(UM_OPS_REF));
    CHECK_STREQ(ops_isa_name(UM_OPS_AVX2), "avx2");
    CHECK(ops_select(UM_OPS_REF, NULL) == UM_OK);
    CHECK_EQ(ops_active(), UM_OPS_REF);
    um_err e = { "" };
    if (!ops_isa_available(UM_OPS_AVX512)) {
        CHECK(ops_select(UM_OPS_AVX512, &e) == UM_FAIL);
        CHECK_CONTAINS(e.msg, "avx512");
    }
    CHECK_STREQ(ops_isa_name(UM_OPS_NEON), "neon");
#if defined(__aarch64__)
    CHECK(ops_isa_available(UM_OPS_NEON));      /* baseline on AArch64 */
    CHECK_EQ(ops_isa_best(), UM_OPS_NEON);
#else
    CHECK(!ops_isa_available(UM_OPS_NEON));
    CHECK(ops_select(UM_OPS_NEON, &e) == UM_FAIL);
#endif
    restore_isa();
    if (ops_isa_best() == UM_OPS_REF) th_skip("this CPU has no SIMD kernel set: only the scalar kernels were tested");
}

/* ------------------------------------------------------------------ elementwise */

TEST(ops_elementwise_all_isas) {
    um_pool *pool = pool_new(3);
    for (size_t si = 0; si < UM_ARRAY_LEN(g_sizes); si++) {
        int64_t n = g_sizes[si];
        rng_seed(n);
        float *a = rnd_buf(n, 8.0f), *b = rnd_buf(n, 2.0f);
        float *ref = malloc(n * sizeof *ref), *y = malloc(n * sizeof *y);
        FOR_EACH_ISA(isa) {
            ops_add_ref(ref, a, b, n);
            ops_add(pool, y, a, b, n);
            CHECK_CLOSE(y, ref, n, TOL_EXACT, 0, ops_isa_name(isa));
            ops_mul_ref(ref, a, b, n);
            ops_mul(pool, y, a, b, n);
            CHECK_CLOSE(y, ref, n, TOL_EXACT, 0, ops_isa_name(isa));
            ops_swiglu_ref(ref, a, b, n);
            ops_swiglu(pool, y, a, b, n);
            CHECK_CLOSE(y, ref, n, 1e-30, TOL_EXP, ops_isa_name(isa));
            /* in place: y aliases gate */
            memcpy(y, a, n * sizeof *y);
            ops_swiglu(pool, y, y, b, n);
            CHECK_CLOSE(y, ref, n, 1e-30, TOL_EXP, ops_isa_name(isa));
            ops_geglu_ref(ref, a, b, n);
            ops_geglu(pool, y, a, b, n);
            CHECK_CLOSE(y, ref, n, 1e-30, TOL_EXP, ops_isa_name(isa));
            memcpy(y, b, n * sizeof *y);
            ops_geglu(pool, y, a, y, n);                /* in place: y aliases up */
            CHECK_CLOSE(y, ref, n, 1e-30, TOL_EXP, ops_isa_name(isa));
        }
        free(a); free(b); free(ref); free(y);
    }
    restore_isa();
    pool_free(pool);
}

TEST(ops_add_bias_all_isas) {
    static const int widths[] = { 1, 9, 128, 3584 };
    um_pool *pool = pool_new(3);
    for (size_t wi = 0; wi < UM_ARRAY_LEN(widths); wi++) {
        int n = widths[wi], nr = 37;
        rng_seed(n + 5);
        float *x = rnd_buf((int64_t)nr * n, 4.0f), *bias = rnd_buf(n, 1.0f);
        float *y = malloc(sizeof(float) * nr * n);
        FOR_EACH_ISA(isa) {
            ops_add_bias(pool, y, x, bias, nr, n);
            for (int r = 0; r < nr; r++)
                for (int i = 0; i < n; i++) CHECK_NEAR(y[r * n + i], x[r * n + i] + bias[i], TOL_EXACT);
            memcpy(y, x, sizeof(float) * nr * n);
            ops_add_bias(pool, y, y, bias, nr, n);      /* in place */
            for (int r = 0; r < nr; r++)
                for (int i = 0; i < n; i++) CHECK_NEAR(y[r * n + i], x[r * n + i] + bias[i], TOL_EXACT);
        }
        free(x); free(bias); free(y);
    }
    restore_isa();
    pool_free(pool);
}

TEST(ops_swiglu_extremes) {
    /* silu saturates: huge negative gates give -0, huge positive give the gate itself */
    float g[9] = { -1000, -100, -88.5f, -20, 0, 20, 88.5f, 100, 1000 }, u[9], y[9];
    for (int i = 0; i < 9; i++) u[i] = 1.0f;
    FOR_EACH_ISA(isa) {
        ops_swiglu(NULL, y, g, u, 9);
        CHECK_MSG(y[0] == 0 && y[1] == 0 && fabsf(y[2]) < 1e-30f, "%s: %g %g %g", ops_isa_name(isa), y[0], y[1], y[2]);
        CHECK_NEAR(y[4], 0, 0);
        CHECK_NEAR(y[5], 20.0 / (1 + exp(-20.0)), 20 * TOL_EXP);
        CHECK_NEAR(y[8], 1000, 0);
        for (int i = 0; i < 9; i++) CHECK(isfinite(y[i]));
    }
    restore_isa();
}

/* ------------------------------------------------------------------ GeGLU
 * gelu(x) = 0.5 x (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3). */

/* gelu in double by formulas that share no code with ops_geglu_ref: the tanh form where
 * 1 + tanh(u) keeps its digits (x >= -4: 1 + tanh(u) >= 3e-5, so its 1e-16 absolute rounding
 * is under 4e-12 relative), and below, 1 + tanh(u) = 2 e^(2u) / (1 + e^(2u)) with e^(2u) tiny. */
static double gelu_oracle(double x) {
    double u = sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x);
    if (x >= -4) return 0.5 * x * (1.0 + tanh(u));
    double t = exp(2.0 * u);
    return x * t / (1.0 + t);
}

/* The x where -2u(x) = t (-2u falls as x grows): the gates at which the kernels' exp changes
 * regime (0 / inf clamps at +-87..89 and -104, the double clamp at +-120). */
static float gelu_gate_at(double t) {
    double lo = -100, hi = 100;
    for (int i = 0; i < 200; i++) {
        double m = 0.5 * (lo + hi), v = -2.0 * sqrt(2.0 / M_PI) * (m + 0.044715 * m * m * m);
        if (v > t) lo = m; else hi = m;
    }
    return (float)lo;
}

/* Gates over the whole float range: signed zeros, the swiglu extremes, every binade from the
 * smallest subnormal to FLT_MAX (both signs), a 1/64 grid over [-16, 16] (where gelu falls
 * from normal through subnormal to 0), each regime edge of the exp and its float neighbours,
 * and random values in [-12, 12]. Returns the count (<= 9000). */
static int64_t geglu_gates(float *g) {
    static const float fixed[] = { 0.0f, -0.0f, -1000, -100, -88.5f, -20, 20, 88.5f, 100, 1000,
                                   FLT_MIN, -FLT_MIN, FLT_MAX, -FLT_MAX };
    static const double edges[] = { -120, -104, -89, -88, -87, 87, 88, 89, 104, 120 };
    int64_t n = 0;
    for (size_t i = 0; i < UM_ARRAY_LEN(fixed); i++) g[n++] = fixed[i];
    for (int e = -149; e <= 127; e++)
        for (int m = 0; m < 4; m++) {
            float x = ldexpf(1.0f + 0.25f * (float)m, e);
            if (isfinite(x)) { g[n++] = x; g[n++] = -x; }
        }
    for (int i = -1024; i <= 1024; i++) g[n++] = (float)i / 64.0f;
    for (size_t i = 0; i < UM_ARRAY_LEN(edges); i++) {
        float x = gelu_gate_at(edges[i]);
        g[n++] = x; g[n++] = nextafterf(x, -INFINITY); g[n++] = nextafterf(x, INFINITY);
    }
    rng_seed(4242);
    for (int i = 0; i < 2048; i++) g[n++] = 12.0f * rnd();
    return n;
}

TEST(ops_geglu_wide_range) {
    float *g = malloc(9000 * sizeof *g), *u = malloc(9000 * sizeof *u);
    float *ref = malloc(9000 * sizeof *ref), *y = malloc(9000 * sizeof *y);
    int64_t n = geglu_gates(g);
    CHECK(n <= 9000);
    /* the reference against the double formulas: rounded once, so within half an ulp (2^-24
     * relative) plus double's rounding; a subnormal result within half a subnormal step */
    for (int64_t i = 0; i < n; i++) u[i] = 1.0f;
    ops_geglu_ref(ref, g, u, n);
    for (int64_t i = 0; i < n; i++) {
        double want = gelu_oracle(g[i]);
        CHECK_MSG(fabs(ref[i] - want) <= 0x1p-150 + (0x1p-24 + 1e-12) * fabs(want),
                  "ref gelu(%.9g) = %.9g, want %.17g", (double)g[i], (double)ref[i], want);
    }
    /* every kernel set against the reference, with ups of both signs */
    static const float ups[] = { 1.0f, -1.0f, 0.375f, -0.8125f };
    for (int64_t i = 0; i < n; i++) u[i] = ups[i % 4];
    ops_geglu_ref(ref, g, u, n);
    FOR_EACH_ISA(isa) {
        ops_geglu(NULL, y, g, u, n);
        CHECK_CLOSE(y, ref, n, 1e-30, TOL_EXP, ops_isa_name(isa));
        for (int64_t i = 0; i < n; i++)
            CHECK_MSG(!isnan(y[i]), "%s: gelu(%.9g) is NaN", ops_isa_name(isa), (double)g[i]);
    }
    restore_isa();
    free(g); free(u); free(ref); free(y);
}

TEST(ops_geglu_extremes) {
    /* gelu saturates as silu does: gates far below 0 give -0 (no inf / inf or inf * 0 NaN on
     * the way), far above give the gate itself, exactly; signed zeros stay */
    float g[10] = { -1000, -100, -88.5f, -20, -0.0f, 0, 20, 88.5f, 100, 1000 }, u[10], y[10];
    for (int i = 0; i < 10; i++) u[i] = 1.0f;
    FOR_EACH_ISA(isa) {
        ops_geglu(NULL, y, g, u, 10);
        for (int i = 0; i < 5; i++)
            CHECK_MSG(y[i] == 0 && signbit(y[i]), "%s: gelu(%g) = %g, want -0", ops_isa_name(isa), g[i], y[i]);
        CHECK_MSG(y[5] == 0 && !signbit(y[5]), "%s: gelu(0) = %g", ops_isa_name(isa), y[5]);
        for (int i = 6; i < 10; i++) CHECK_NEAR(y[i], g[i], 0);
    }
    restore_isa();
}

/* ------------------------------------------------------------------ RMSNorm, softmax */

TEST(ops_rmsnorm_all_isas) {
    static const int widths[] = { 1, 7, 64, 100, 128, 4096 };
    static const int64_t rows[] = { 1, 7, 160 };
    um_pool *pool = pool_new(3);
    for (size_t wi = 0; wi < UM_ARRAY_LEN(widths); wi++)
        for (size_t ri = 0; ri < UM_ARRAY_LEN(rows); ri++) {
            int n = widths[wi];
            int64_t nr = rows[ri], tot = nr * n;
            rng_seed(n * 1000 + nr);
            float *x = rnd_buf(tot, 3.0f), *w = rnd_buf(n, 1.5f);
            float *ref = malloc(tot * sizeof *ref), *y = malloc(tot * sizeof *y), *y1 = malloc(tot * sizeof *y1);
            FOR_EACH_ISA(isa) {
                for (int with_w = 0; with_w < 2; with_w++) {
                    ops_rmsnorm_ref(ref, x, with_w ? w : NULL, nr, n, 1e-5f);
                    ops_rmsnorm(pool, y, x, with_w ? w : NULL, nr, n, 1e-5f);
                    CHECK_CLOSE(y, ref, tot, 1e-30, TOL_NORM, ops_isa_name(isa));
                    ops_rmsnorm(NULL, y1, x, with_w ? w : NULL, nr, n, 1e-5f);
                    CHECK(memcmp(y, y1, tot * sizeof *y) == 0);   /* thread-count independent */
                }
                memcpy(y, x, tot * sizeof *y);
                ops_rmsnorm(pool, y, y, w, nr, n, 1e-6f);         /* in place */
                ops_rmsnorm_ref(ref, x, w, nr, n, 1e-6f);
                CHECK_CLOSE(y, ref, tot, 1e-30, TOL_NORM, ops_isa_name(isa));
            }
            free(x); free(w); free(ref); free(y); free(y1);
        }
    restore_isa();
    pool_free(pool);
}

TEST(ops_rmsnorm_formula) {
    /* x = (3, 4): mean square 12.5, y = x / sqrt(12.5 + eps) * w */
    float x[2] = { 3, 4 }, w[2] = { 2, -1 }, y[2];
    FOR_EACH_ISA(isa) {
        ops_rmsnorm(NULL, y, x, w, 1, 2, 0.5f);
        CHECK_NEAR(y[0], 3 / sqrt(13.0) * 2, 1e-6);
        CHECK_NEAR(y[1], -4 / sqrt(13.0), 1e-6);
    }
    restore_isa();
}

TEST(ops_softmax_all_isas) {
    static const int widths[] = { 1, 2, 7, 17, 64, 160, 513, 126464 };
    um_pool *pool = pool_new(3);
    for (size_t wi = 0; wi < UM_ARRAY_LEN(widths); wi++) {
        int n = widths[wi];
        int64_t nr = n > 10000 ? 2 : 9, tot = nr * n;
        rng_seed(n);
        float *x = rnd_buf(tot, 20.0f);
        for (int i = 1; i < n; i += 3) x[n + i] = -INFINITY;        /* masked entries in row 1 */
        for (int i = 0; i < n; i++) x[i] += 1000.0f;                 /* row 0: large offset */
        float *ref = copy_buf(x, tot), *y = malloc(tot * sizeof *y);
        ops_softmax_ref(ref, nr, n);
        FOR_EACH_ISA(isa) {
            memcpy(y, x, tot * sizeof *y);
            ops_softmax(pool, y, nr, n);
            CHECK_CLOSE(y, ref, tot, 1e-12, TOL_NORM, ops_isa_name(isa));
            for (int64_t r = 0; r < nr; r++) {
                double s = 0;
                for (int i = 0; i < n; i++) s += y[r * n + i];
                CHECK_NEAR(s, 1.0, 1e-5);
            }
        }
        free(x); free(ref); free(y);
    }
    /* a row of all -inf becomes zeros, not NaN */
    float z[5] = { -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY };
    FOR_EACH_ISA(isa) {
        float t[5];
        memcpy(t, z, sizeof t);
        ops_softmax(NULL, t, 1, 5);
        for (int i = 0; i < 5; i++) CHECK_NEAR(t[i], 0, 0);
    }
    restore_isa();
    pool_free(pool);
}

/* ------------------------------------------------------------------ RoPE */

/* Independent double-precision RoPE of one head (formula, not llama.cpp's recurrence). */
static void rope_double(const um_rope *r, int pos, const float *x, double *y) {
    for (int i = 0; i < r->head_dim; i++) y[i] = x[i];
    for (int i = 0; i < r->n_dims / 2; i++) {
        double th = pos * pow((double)r->freq_base, -2.0 * i / r->n_dims);
        int a = r->mode == UM_ROPE_NORM ? 2 * i : i;
        int b = r->mode == UM_ROPE_NORM ? 2 * i + 1 : i + r->n_dims / 2;
        y[a] = x[a] * cos(th) - x[b] * sin(th);
        y[b] = x[a] * sin(th) + x[b] * cos(th);
    }
}

/* How far llama.cpp's float recurrence may drift from the exact angle: theta_i carries i
 * float roundings of the running product plus the rounding of powf's factor, so its
 * relative error is below (i + 1) * 2^-23; the float cos/sin add ~1 ulp. */
static double rope_tol(const um_rope *r, int pos, int pair, double mag) {
    double th = pos * pow((double)r->freq_base, -2.0 * pair / r->n_dims);
    return (2e-7 + (pair + 1) * ULP * th) * mag + 1e-7;
}

TEST(ops_rope_against_formula_and_isas) {
    static const struct { um_rope_mode mode; int hd, nd; float base; int n_tok, nh, nkv; } cases[] = {
        { UM_ROPE_NORM, 128, 128, 500000.0f, 160, 4, 4 },   /* LLaDA */
        { UM_ROPE_NEOX, 128, 128, 1e6f, 7, 7, 1 },          /* Dream-like GQA */
        { UM_ROPE_NEOX, 64, 64, 50000.0f, 513, 2, 2 },      /* LLaDA-MoE */
        { UM_ROPE_NEOX, 128, 64, 600000.0f, 33, 2, 1 },     /* partial rotary 0.5 */
        { UM_ROPE_NORM, 64, 40, 10000.0f, 1, 3, 0 },        /* partial, q only */
        { UM_ROPE_NORM, 80, 80, 10000.0f, 9, 1, 1 },        /* tail lengths */
        { UM_ROPE_NEOX, 72, 36, 10000.0f, 9, 1, 1 },
    };
    um_pool *pool = pool_new(3);
    for (size_t ci = 0; ci < UM_ARRAY_LEN(cases); ci++) {
        um_rope r = { cases[ci].mode, cases[ci].hd, cases[ci].nd, cases[ci].base, 1.0f, NULL };
        int nt = cases[ci].n_tok, nh = cases[ci].nh, nkv = cases[ci].nkv, hd = r.head_dim;
        int64_t nq = (int64_t)nt * nh * hd, nk = (int64_t)nt * (nkv ? nkv : 1) * hd;
        rng_seed(ci + 77);
        float *q = rnd_buf(nq, 1.0f), *k = rnd_buf(nk, 1.0f);
        int32_t *pos = malloc(nt * sizeof *pos);
        for (int t = 0; t < nt; t++) pos[t] = t * 2 + (int)ci;      /* up to ~1030 */
        float *qr = copy_buf(q, nq), *kr = copy_buf(k, nk);
        um_err e = { "" };
        CHECK_MSG(ops_rope_ref(&r, pos, nt, qr, nh, nkv ? kr : NULL, nkv, &e) == UM_OK, "%s", e.msg);
        /* the reference against the double formula */
        double y[UM_OPS_MAX_HEAD_DIM];
        for (int t = 0; t < nt; t++)
            for (int h = 0; h < nh; h++) {
                const float *x0 = q + ((int64_t)t * nh + h) * hd, *x1 = qr + ((int64_t)t * nh + h) * hd;
                rope_double(&r, pos[t], x0, y);
                for (int i = 0; i < hd; i++) {
                    int pair = i < r.n_dims ? (r.mode == UM_ROPE_NORM ? i / 2 : i % (r.n_dims / 2)) : -1;
                    if (pair < 0) { CHECK_MSG(x1[i] == x0[i], "pass-through dim %d changed", i); continue; }
                    double tol = rope_tol(&r, pos[t], pair, 2.0);
                    CHECK_MSG(fabs(x1[i] - y[i]) <= tol, "case %zu t %d h %d i %d: %.9g vs %.9g (tol %g)",
                              ci, t, h, i, x1[i], y[i], tol);
                }
            }
        /* every kernel set against the reference, threaded */
        FOR_EACH_ISA(isa) {
            float *qa = copy_buf(q, nq), *ka = copy_buf(k, nk);
            CHECK(ops_rope(pool, &r, pos, nt, qa, nh, nkv ? ka : NULL, nkv, &e) == UM_OK);
            CHECK_CLOSE(qa, qr, nq, TOL_EXACT, 0, ops_isa_name(isa));
            CHECK_CLOSE(ka, kr, nk, TOL_EXACT, 0, ops_isa_name(isa));
            free(qa); free(ka);
        }
        free(q); free(k); free(qr); free(kr); free(pos);
    }
    restore_isa();
    pool_free(pool);
}

/* Values computed by llama.cpp v0.4.0 (80fb11a, the peer build: AVX-512, AMX off) with
 * ggml_rope_ext(ext_factor 0, attn_factor 1, freq_scale 1) on one head of 128 with
 * x[t][i] = ((5i + t) % 11 - 5) / 8, positions 0, 1, 77, 1023; elements 0, 1, 2, 3, 62,
 * 63, 64, 127. Every kernel set must reproduce them bit for bit. */
TEST(ops_rope_matches_llama_cpp) {
    static const int pos[4] = { 0, 1, 77, 1023 }, idx[8] = { 0, 1, 2, 3, 62, 63, 64, 127 };
    static const float norm128[4][8] = {   /* UM_ROPE_NORM, n_dims 128, base 500000 */
        { -0x1.4p-1, 0x0p+0, 0x1.4p-1, -0x1p-3, -0x1.8p-2, 0x1p-2, -0x1p-1, 0x1.8p-2 },
        { -0x1.8057d2p-2, -0x1.69aca8p-2, -0x1.b7225p-2, -0x1.d1938ap-2, -0x1.00aa9p-2, 0x1.7f8e14p-2, -0x1.805c96p-2, 0x1.ffffecp-2 },
        { -0x1.e7f72cp-3, -0x1.87bedp-2, -0x1.ef862ap-2, 0x1.6b3abp-3, -0x1.86314cp-3, 0x1.ea5f6ep-2, -0x1.28376ep-2, 0x1.4p-1 },
        { 0x1.f306ap-3, 0x1.843f18p-2, 0x1.bfeap-2, 0x1.bccaaap-4, -0x1.3949b4p-1, -0x1.04ca0cp-3, -0x1.05f3aep-1, -0x1.3fd698p-1 },
    };
    static const float neox96[4][8] = {    /* UM_ROPE_NEOX, n_dims 96 (partial), base 1e6 */
        { -0x1.4p-1, 0x0p+0, 0x1.4p-1, -0x1p-3, -0x1.8p-2, 0x1p-2, -0x1p-1, 0x1.8p-2 },
        { -0x1.97968cp-1, 0x1.69cf7ep-3, -0x1.9736ccp-1, 0x1.a321e2p-4, -0x1.ffeb46p-3, 0x1.888008p-2, -0x1.8142c2p-2, 0x1p-1 },
        { 0x1.45cb2ep-1, 0x1.798d06p-4, 0x1.7d968p-8, 0x1.5cfd4p-3, 0x1.8f281cp-4, -0x1.1aa1e2p-2, -0x1.6f9202p-3, 0x1.4p-1 },
        { -0x1.1dd438p-1, 0x1.edb2b4p-3, 0x1.066f98p-3, -0x1.15ca78p-3, -0x1.39022cp-3, -0x1.24a768p-3, -0x1.cb444p-9, -0x1.4p-1 },
    };
    const um_rope modes[2] = { { UM_ROPE_NORM, 128, 128, 500000.0f, 1.0f, NULL }, { UM_ROPE_NEOX, 128, 96, 1e6f, 1.0f, NULL } };
    const float (*expect[2])[8] = { norm128, neox96 };
    float x[4 * 128], y[4 * 128];
    for (int t = 0; t < 4; t++)
        for (int i = 0; i < 128; i++) x[t * 128 + i] = (float)((i * 5 + t) % 11 - 5) * 0.125f;
    um_err e = { "" };
    for (int m = 0; m < 2; m++) {
        memcpy(y, x, sizeof y);
        CHECK(ops_rope_ref(&modes[m], pos, 4, y, 1, NULL, 0, &e) == UM_OK);
        for (int t = 0; t < 4; t++)
            for (int k = 0; k < 8; k++)
                CHECK_MSG(y[t * 128 + idx[k]] == expect[m][t][k], "ref mode %d t %d i %d: %a vs llama.cpp %a",
                          (int)modes[m].mode, t, idx[k], y[t * 128 + idx[k]], expect[m][t][k]);
        FOR_EACH_ISA(isa) {
            memcpy(y, x, sizeof y);
            CHECK(ops_rope(NULL, &modes[m], pos, 4, y, 1, NULL, 0, &e) == UM_OK);
            for (int t = 0; t < 4; t++)
                for (int k = 0; k < 8; k++)
                    CHECK_MSG(y[t * 128 + idx[k]] == expect[m][t][k], "%s mode %d t %d i %d: %a vs llama.cpp %a",
                              ops_isa_name(isa), (int)modes[m].mode, t, idx[k], y[t * 128 + idx[k]], expect[m][t][k]);
        }
    }
    restore_isa();
}

TEST(ops_rope_rejects_bad_params) {
    float q[8] = { 0 };
    int32_t pos[1] = { 0 };
    um_err e = { "" };
    um_rope r = { UM_ROPE_NORM, 8, 6, 10000.0f, 1.0f, NULL };
    r.n_dims = 10;
    CHECK(ops_rope(NULL, &r, pos, 1, q, 1, NULL, 0, &e) == UM_FAIL);
    CHECK_CONTAINS(e.msg, "n_dims");
    r.n_dims = 3;
    CHECK(ops_rope(NULL, &r, pos, 1, q, 1, NULL, 0, &e) == UM_FAIL);
    r.n_dims = 8;
    r.mode = (um_rope_mode)1;
    CHECK(ops_rope(NULL, &r, pos, 1, q, 1, NULL, 0, &e) == UM_FAIL);
    CHECK_CONTAINS(e.msg, "mode");
    r.mode = UM_ROPE_NEOX;
    r.freq_base = 0;
    CHECK(ops_rope(NULL, &r, pos, 1, q, 1, NULL, 0, &e) == UM_FAIL);
    CHECK_CONTAINS(e.msg, "freq_base");
}

/* ------------------------------------------------------------------ attention */

/* Naive double-precision attention: the whole score row, exact softmax. */
static void attn_double(const um_attn *a, const float *q, const float *k, const float *v, double *out) {
    const int hd = a->head_dim, grp = a->n_head / a->n_head_kv;
    double *s = malloc((size_t)(a->n_kv > 0 ? a->n_kv : 1) * sizeof *s);
    for (int t = 0; t < a->n_q; t++)
        for (int h = 0; h < a->n_head; h++) {
            const float *qr = q + ((int64_t)t * a->n_head + h) * hd;
            const int g = h / grp;
            double mx = -INFINITY;
            for (int j = 0; j < a->n_kv; j++) {
                const float *kr = k + ((int64_t)j * a->n_head_kv + g) * hd;
                double d = 0;
                for (int i = 0; i < hd; i++) d += (double)qr[i] * kr[i];
                s[j] = (a->key_mask && !a->key_mask[j]) ? -INFINITY : d / sqrt((double)hd);
                if (s[j] > mx) mx = s[j];
            }
            double sum = 0;
            for (int j = 0; j < a->n_kv; j++) { s[j] = mx == -INFINITY ? 0 : exp(s[j] - mx); sum += s[j]; }
            double *o = out + ((int64_t)t * a->n_head + h) * hd;
            for (int i = 0; i < hd; i++) o[i] = 0;
            for (int j = 0; j < a->n_kv && sum > 0; j++) {
                const float *vr = v + ((int64_t)j * a->n_head_kv + g) * hd;
                for (int i = 0; i < hd; i++) o[i] += s[j] / sum * vr[i];
            }
        }
    free(s);
}

typedef struct attn_case { int n_q, n_kv, n_head, n_head_kv, hd; int masked; } attn_case;

static void run_attn_case(const attn_case *c, um_pool *pool, int *failed) {
    um_attn a = { c->n_q, c->n_kv, c->n_head, c->n_head_kv, c->hd, NULL, 0, NULL, NULL };
    int64_t nq = (int64_t)c->n_q * c->n_head * c->hd, nk = (int64_t)c->n_kv * c->n_head_kv * c->hd;
    rng_seed((uint64_t)c->n_q * 31 + c->n_head * 7 + c->hd);
    /* q amplitude 3 gives scores up to ~3*3*sqrt(hd)/sqrt(hd)... peaked enough softmax rows */
    float *q = rnd_buf(nq, 3.0f), *k = rnd_buf(nk, 3.0f), *v = rnd_buf(nk, 1.0f);
    uint8_t *mask = NULL;
    if (c->masked) {
        mask = malloc(c->n_kv);
        for (int j = 0; j < c->n_kv; j++) mask[j] = (j % 5) != 2 && j != c->n_kv - 1;
        a.key_mask = mask;
    }
    float *ref = malloc(nq * sizeof *ref), *out = malloc(nq * sizeof *out), *out1 = malloc(nq * sizeof *out1);
    double *dref = malloc(nq * sizeof *dref);
    float *dref_f = malloc(nq * sizeof *dref_f);
    um_err e = { "" };
    *failed = 1;
    CHECK_MSG(ops_attention_ref(&a, ref, q, k, v, &e) == UM_OK, "%s", e.msg);
    attn_double(&a, q, k, v, dref);
    for (int64_t i = 0; i < nq; i++) dref_f[i] = (float)dref[i];
    char what[96];
    snprintf(what, sizeof what, "ref vs double (nq %d nkv %d h %d/%d hd %d)", c->n_q, c->n_kv, c->n_head, c->n_head_kv, c->hd);
    CHECK_CLOSE(ref, dref_f, nq, TOL_ATTN_D, 0, what);
    FOR_EACH_ISA(isa) {
        CHECK(ops_attention(pool, &a, out, q, k, v, &e) == UM_OK);
        snprintf(what, sizeof what, "%s (nq %d nkv %d h %d/%d hd %d)", ops_isa_name(isa), c->n_q, c->n_kv, c->n_head, c->n_head_kv, c->hd);
        CHECK_CLOSE(out, ref, nq, TOL_ATTN, 0, what);
        CHECK(ops_attention(NULL, &a, out1, q, k, v, &e) == UM_OK);
        CHECK_MSG(memcmp(out, out1, nq * sizeof *out) == 0, "%s: result depends on thread count", what);
    }
    *failed = 0;
    free(q); free(k); free(v); free(mask); free(ref); free(out); free(out1); free(dref); free(dref_f);
}

TEST(ops_attention_all_isas) {
    static const attn_case cases[] = {
        { 1, 1, 8, 1, 128, 0 },         /* one token, GQA 8 */
        { 7, 7, 4, 4, 64, 0 },          /* MHA */
        { 160, 160, 8, 2, 128, 0 },     /* GQA 4, several query blocks and key tiles */
        { 513, 513, 4, 1, 64, 0 },      /* GQA 4, tails of both tiles */
        { 160, 160, 8, 1, 64, 1 },      /* GQA 8 with a key mask */
        { 33, 70, 2, 2, 128, 1 },       /* fewer queries than keys */
        { 20, 65, 2, 1, 80, 0 },        /* head_dim 80: AVX2 tiles it, AVX-512 falls back */
        { 9, 9, 1, 1, 72, 1 },
        { 5, 5, 2, 2, 3, 0 },           /* odd head_dim: scalar everywhere */
    };
    um_pool *pool = pool_new(3);
    for (size_t i = 0; i < UM_ARRAY_LEN(cases); i++) {
        int failed;
        run_attn_case(&cases[i], pool, &failed);
        if (failed || th_failed()) break;
    }
    restore_isa();
    pool_free(pool);
}

/* Masking keys must equal attending over the unmasked keys only (padding semantics),
 * and a query with every key masked gets zeros. */
TEST(ops_attention_mask_is_padding) {
    const int n_q = 40, n_kv = 90, nh = 4, nkv = 2, hd = 64;
    rng_seed(5);
    float *q = rnd_buf((int64_t)n_q * nh * hd, 2.0f), *k = rnd_buf((int64_t)n_kv * nkv * hd, 2.0f);
    float *v = rnd_buf((int64_t)n_kv * nkv * hd, 1.0f);
    uint8_t mask[90];
    int n_live = 0;
    float *kc = malloc((size_t)n_kv * nkv * hd * sizeof *kc), *vc = malloc((size_t)n_kv * nkv * hd * sizeof *vc);
    for (int j = 0; j < n_kv; j++) {
        mask[j] = j < 70 && j % 3 != 0;
        if (mask[j]) {
            memcpy(kc + (int64_t)n_live * nkv * hd, k + (int64_t)j * nkv * hd, nkv * hd * sizeof *kc);
            memcpy(vc + (int64_t)n_live * nkv * hd, v + (int64_t)j * nkv * hd, nkv * hd * sizeof *vc);
            n_live++;
        }
    }
    float *o1 = malloc((size_t)n_q * nh * hd * sizeof *o1), *o2 = malloc((size_t)n_q * nh * hd * sizeof *o2);
    um_pool *pool = pool_new(2);
    um_err e = { "" };
    FOR_EACH_ISA(isa) {
        um_attn am = { n_q, n_kv, nh, nkv, hd, mask, 0, NULL, NULL }, ac = { n_q, n_live, nh, nkv, hd, NULL, 0, NULL, NULL };
        CHECK(ops_attention(pool, &am, o1, q, k, v, &e) == UM_OK);
        CHECK(ops_attention(pool, &ac, o2, q, kc, vc, &e) == UM_OK);
        CHECK_CLOSE(o1, o2, (int64_t)n_q * nh * hd, TOL_ATTN, 0, ops_isa_name(isa));
        uint8_t none[90] = { 0 };
        um_attn an = { n_q, n_kv, nh, nkv, hd, none, 0, NULL, NULL };
        CHECK(ops_attention(pool, &an, o1, q, k, v, &e) == UM_OK);
        for (int64_t i = 0; i < (int64_t)n_q * nh * hd; i++) CHECK_NEAR(o1[i], 0, 0);
    }
    restore_isa();
    pool_free(pool);
    free(q); free(k); free(v); free(kc); free(vc); free(o1); free(o2);
}

TEST(ops_attention_rejects_bad_shapes) {
    float x[64] = { 0 }, o[64];
    um_err e = { "" };
    um_attn a = { 1, 1, 6, 4, 8, NULL, 0, NULL, NULL };
    CHECK(ops_attention(NULL, &a, o, x, x, x, &e) == UM_FAIL);
    CHECK_CONTAINS(e.msg, "does not divide");
    um_attn b = { 1, 1, 1, 1, UM_OPS_MAX_HEAD_DIM + 2, NULL, 0, NULL, NULL };
    CHECK(ops_attention(NULL, &b, o, x, x, x, &e) == UM_FAIL);
    CHECK_CONTAINS(e.msg, "head_dim");
}

/* ------------------------------------------------------------------ embedding */

TEST(ops_embed_float_tables) {
    enum { V = 11, D = 48, T = 6 };
    float tab32[V * D];
    uint16_t tab16[V * D], tabbf[V * D];
    for (int i = 0; i < V * D; i++) {
        tab32[i] = (float)(i % 97) * 0.25f - 12.0f;     /* exact in f16 and bf16 */
        tab16[i] = um_fp32_to_fp16(tab32[i]);
        tabbf[i] = um_fp32_to_bf16(tab32[i]);
    }
    int32_t tok[T] = { 0, 10, 3, 3, 7, 1 };
    float out[T * D];
    um_err e = { "" };
    um_pool *pool = pool_new(2);
    const void *tabs[3] = { tab32, tab16, tabbf };
    const um_type types[3] = { UM_TYPE_F32, UM_TYPE_F16, UM_TYPE_BF16 };
    for (int ti = 0; ti < 3; ti++) {
        memset(out, 0xff, sizeof out);
        CHECK_MSG(ops_embed(pool, out, tabs[ti], types[ti], V, D, tok, T, &e) == UM_OK, "%s", e.msg);
        for (int t = 0; t < T; t++)
            for (int i = 0; i < D; i++) CHECK_NEAR(out[t * D + i], tab32[tok[t] * D + i], 0);
    }
    int32_t bad[2] = { 3, 11 };
    CHECK(ops_embed(pool, out, tab32, UM_TYPE_F32, V, D, bad, 2, &e) == UM_FAIL);
    CHECK_CONTAINS(e.msg, "token id 11");
    bad[1] = -1;
    CHECK(ops_embed(pool, out, tab32, UM_TYPE_F32, V, D, bad, 2, &e) == UM_FAIL);
    CHECK_CONTAINS(e.msg, "token id -1");
    CHECK(ops_embed(pool, out, tab32, UM_TYPE_Q8_0, V, 40, tok, 1, &e) == UM_FAIL);   /* 40 % 32 */
    CHECK_CONTAINS(e.msg, "multiple");
    CHECK(ops_embed(pool, out, tab32, UM_TYPE_MXFP4, V, 256, tok, 1, &e) == UM_FAIL);
    CHECK_CONTAINS(e.msg, "cannot dequantize");
    pool_free(pool);
}

/* A Q8_0 table built by hand: row r, element i = d_r * q with d_r = 2^-r, q = i - 16. */
TEST(ops_embed_q8_0_table) {
    enum { V = 3, D = 64 };
    um_block_q8_0 tab[V * D / 32];
    for (int r = 0; r < V; r++)
        for (int b = 0; b < D / 32; b++) {
            tab[r * 2 + b].d = um_fp32_to_fp16(ldexpf(1.0f, -r));
            for (int i = 0; i < 32; i++) tab[r * 2 + b].qs[i] = (int8_t)(b * 32 + i - 16);
        }
    int32_t tok[2] = { 2, 1 };
    float out[2 * D];
    um_err e = { "" };
    CHECK_MSG(ops_embed(NULL, out, tab, UM_TYPE_Q8_0, V, D, tok, 2, &e) == UM_OK, "%s", e.msg);
    for (int t = 0; t < 2; t++)
        for (int i = 0; i < D; i++) CHECK_NEAR(out[t * D + i], ldexp(i - 16, -tok[t]), 0);
}

/* ------------------------------------------------------------------ MoE */

TEST(ops_moe_route_softmax_hand_cases) {
    /* softmax([1, 3, 2, 0]): top-2 are experts 1 and 2 with e^3/S and e^2/S,
     * S = e + e^3 + e^2 + 1; renormalised they are 1/(1+e^-1) and 1/(1+e) */
    const float z[2 * 4] = { 1, 3, 2, 0, 0, 0, 0, 0 };
    int32_t ex[4];
    float w[4];
    um_err e = { "" };
    double S = exp(1) + exp(3) + exp(2) + 1;
    um_moe_cfg c = { 4, 2, UM_MOE_SOFTMAX, false, 0, NULL, 0, 0 };
    CHECK(ops_moe_route(&c, z, 2, ex, w, &e) == UM_OK);
    CHECK_EQ(ex[0], 1); CHECK_EQ(ex[1], 2);
    CHECK_NEAR(w[0], exp(3) / S, 1e-6);
    CHECK_NEAR(w[1], exp(2) / S, 1e-6);
    CHECK_EQ(ex[2], 0); CHECK_EQ(ex[3], 1);             /* ties: lower index first */
    CHECK_NEAR(w[2], 0.25, 1e-7);
    CHECK_NEAR(w[3], 0.25, 1e-7);
    c.norm_topk = true;
    CHECK(ops_moe_route(&c, z, 2, ex, w, &e) == UM_OK);
    CHECK_NEAR(w[0], 1 / (1 + exp(-1)), 1e-6);
    CHECK_NEAR(w[1], 1 / (1 + exp(1)), 1e-6);
    CHECK_NEAR(w[2], 0.5, 1e-7);
    /* k = n_expert: a full ordering, weights sum to 1 */
    int32_t ex4[4];
    float w4[4];
    um_moe_cfg c4 = { 4, 4, UM_MOE_SOFTMAX, false, 0, NULL, 0, 0 };
    CHECK(ops_moe_route(&c4, z, 1, ex4, w4, &e) == UM_OK);
    CHECK_EQ(ex4[0], 1); CHECK_EQ(ex4[1], 2); CHECK_EQ(ex4[2], 0); CHECK_EQ(ex4[3], 3);
    CHECK_NEAR(w4[0] + w4[1] + w4[2] + w4[3], 1.0, 1e-6);
}

TEST(ops_moe_route_sigmoid_bias_scale) {
    /* sigmoid([0, 1, -1, 2]) = (.5, .731, .269, .881); bias (.5, 0, 1, 0) makes the
     * selection keys (1, .731, 1.269, .881): experts 2 then 0; weights stay unbiased */
    const float z[4] = { 0, 1, -1, 2 }, bias[4] = { 0.5f, 0, 1.0f, 0 };
    int32_t ex[2];
    float w[2];
    um_err e = { "" };
    double s0 = 0.5, s2 = 1 / (1 + exp(1.0));
    um_moe_cfg c = { 4, 2, UM_MOE_SIGMOID, false, 0, bias, 0, 0 };
    CHECK(ops_moe_route(&c, z, 1, ex, w, &e) == UM_OK);
    CHECK_EQ(ex[0], 2); CHECK_EQ(ex[1], 0);
    CHECK_NEAR(w[0], s2, 1e-6);
    CHECK_NEAR(w[1], s0, 1e-6);
    c.norm_topk = true;
    c.scale = 2.5f;
    CHECK(ops_moe_route(&c, z, 1, ex, w, &e) == UM_OK);
    CHECK_NEAR(w[0], 2.5 * s2 / (s0 + s2), 1e-6);
    CHECK_NEAR(w[1], 2.5 * s0 / (s0 + s2), 1e-6);
    c.bias = NULL;
    c.norm_topk = false;
    c.scale = 0;
    CHECK(ops_moe_route(&c, z, 1, ex, w, &e) == UM_OK);
    CHECK_EQ(ex[0], 3); CHECK_EQ(ex[1], 1);
    CHECK_NEAR(w[0], 1 / (1 + exp(-2.0)), 1e-6);
    /* bad k */
    um_moe_cfg bad = { 4, 5, UM_MOE_SOFTMAX, false, 0, NULL, 0, 0 };
    CHECK(ops_moe_route(&bad, z, 1, ex, w, &e) == UM_FAIL);
    CHECK_CONTAINS(e.msg, "k 5");
}

TEST(ops_moe_group_hand_case) {
    /* 3 tokens, k 2, 4 experts: t0 -> (2, 0), t1 -> (0, 1), t2 -> (2, 1) */
    const int32_t ex[6] = { 2, 0, 0, 1, 2, 1 };
    const float w[6] = { .6f, .4f, .7f, .3f, .9f, .1f };
    int32_t off[5], tok[6], slot[6];
    float rw[6];
    um_err e = { "" };
    CHECK(ops_moe_group(ex, w, 3, 2, 4, off, tok, rw, slot, &e) == UM_OK);
    const int32_t off_x[5] = { 0, 2, 4, 6, 6 }, tok_x[6] = { 0, 1, 1, 2, 0, 2 }, slot_x[6] = { 4, 0, 1, 2, 5, 3 };
    const float rw_x[6] = { .4f, .7f, .3f, .1f, .6f, .9f };
    for (int i = 0; i < 5; i++) CHECK_EQ(off[i], off_x[i]);
    for (int i = 0; i < 6; i++) {
        CHECK_EQ(tok[i], tok_x[i]);
        CHECK_EQ(slot[i], slot_x[i]);
        CHECK_NEAR(rw[i], rw_x[i], 0);
    }
    const int32_t bad[2] = { 0, 4 };
    CHECK(ops_moe_group(bad, w, 1, 2, 4, off, tok, rw, slot, &e) == UM_FAIL);
    CHECK_CONTAINS(e.msg, "expert id 4");
}

/* The whole MoE data path with toy experts f_e(x) = (e + 1) * x + e: route, group,
 * gather each expert's rows, run the expert on them, combine; compared with the direct
 * per-token sum over its chosen experts. */
TEST(ops_moe_pipeline_matches_direct) {
    enum { NT = 37, NE = 8, K = 3, W = 50 };
    rng_seed(99);
    float *logits = rnd_buf(NT * NE, 4.0f), *x = rnd_buf(NT * W, 1.0f), *resid = rnd_buf(NT * W, 1.0f);
    int32_t ex[NT * K], off[NE + 1], tok[NT * K], slot[NT * K];
    float w[NT * K], rw[NT * K];
    float *xg = malloc(sizeof(float) * NT * K * W), *yg = malloc(sizeof(float) * NT * K * W);
    float *out = malloc(sizeof(float) * NT * W), *acc = copy_buf(resid, NT * W);
    um_err e = { "" };
    um_moe_cfg c = { NE, K, UM_MOE_SOFTMAX, true, 0, NULL, 0, 0 };
    um_pool *pool = pool_new(3);
    CHECK(ops_moe_route(&c, logits, NT, ex, w, &e) == UM_OK);
    CHECK(ops_moe_group(ex, w, NT, K, NE, off, tok, rw, slot, &e) == UM_OK);
    ops_gather_rows(pool, xg, x, tok, NT * K, W);
    for (int r = 0; r < NT * K; r++)
        CHECK(memcmp(xg + r * W, x + tok[r] * W, W * sizeof *x) == 0);
    for (int ei = 0; ei < NE; ei++)
        for (int r = off[ei]; r < off[ei + 1]; r++)
            for (int i = 0; i < W; i++) yg[r * W + i] = (ei + 1) * xg[r * W + i] + ei;
    float *out_ref = malloc(sizeof(float) * NT * W);
    ops_moe_combine_ref(out_ref, yg, w, slot, NT, K, W, false);
    FOR_EACH_ISA(isa) {
        memcpy(acc, resid, sizeof(float) * NT * W);
        ops_moe_combine(pool, out, yg, w, slot, NT, K, W, false);
        ops_moe_combine(pool, acc, yg, w, slot, NT, K, W, true);
        /* FMA in the SIMD sets: one rounding fewer per term than the reference */
        CHECK_CLOSE(out, out_ref, NT * W, 1e-6, 4 * ULP, ops_isa_name(isa));
        for (int t = 0; t < NT; t++) {
            double wsum = 0;
            for (int j = 0; j < K; j++) wsum += w[t * K + j];
            CHECK_NEAR(wsum, 1.0, 1e-6);
            for (int j = 1; j < K; j++) CHECK(w[t * K + j] <= w[t * K + j - 1]);
            for (int i = 0; i < W; i++) {
                double d = 0;
                for (int j = 0; j < K; j++) {
                    int ei = ex[t * K + j];
                    d += w[t * K + j] * ((ei + 1) * (double)x[t * W + i] + ei);
                }
                CHECK_NEAR(out[t * W + i], d, 1e-5);    /* float sum of K terms of size <= 16 */
                CHECK_NEAR(acc[t * W + i], resid[t * W + i] + d, 1e-5);
            }
        }
    }
    restore_isa();
    pool_free(pool);
    free(out_ref);
    free(logits); free(x); free(resid); free(xg); free(yg); free(out); free(acc);
}

/* The F16 row conversions of the K/V cache: every one of the 65,536 halves to f32 and back, and
 * f32 values around every rounding boundary, subnormal, overflow and tie, on every kernel set,
 * equal util's scalar conversions (the expected values; a NaN only has to stay a NaN), with
 * odd lengths for the vector tails. */
TEST(ops_f16_rows_all_isas) {
    enum { NH = 65536 };
    uint16_t *h = malloc(NH * sizeof *h), *h2 = malloc(NH * sizeof *h2);
    float *f = malloc(NH * sizeof *f), *g = malloc(NH * sizeof *g);
    for (int i = 0; i < NH; i++) h[i] = (uint16_t)i;
    /* f32 inputs: each half's value, nudged one ulp down and up, and the midpoint to the next */
    float *x = malloc(4 * NH * sizeof *x);
    for (int i = 0; i < NH; i++) {
        float v = um_fp16_to_fp32((uint16_t)i), w = um_fp16_to_fp32((uint16_t)(i + 1));
        x[4 * i] = v;
        x[4 * i + 1] = nextafterf(v, -INFINITY);
        x[4 * i + 2] = nextafterf(v, INFINITY);
        x[4 * i + 3] = (i & 0x7c00) != 0x7c00 && ((i + 1) & 0x7c00) != 0x7c00 ? 0.5f * (v + w) : 70000.f;
    }
    uint16_t *hx = malloc(4 * NH * sizeof *hx);
    FOR_EACH_ISA(isa) {
        static const int64_t lens[] = { NH, NH - 3, 13, 1 };
        for (size_t li = 0; li < UM_ARRAY_LEN(lens); li++) {
            int64_t n = lens[li];
            memset(f, 0, NH * sizeof *f);
            ops_f16_to_f32(h, f, n);
            for (int64_t i = 0; i < n; i++) {
                float want = um_fp16_to_fp32(h[i]);
                CHECK_MSG(isnan(want) ? isnan(f[i]) : memcmp(&want, &f[i], 4) == 0, "%s: half 0x%04x -> %g, want %g",
                          ops_isa_name(isa), h[i], f[i], want);
            }
            CHECK(n == NH || f[n] == 0);               /* nothing past n written */
        }
        ops_f32_to_f16(x, hx, 4 * NH - 5);
        for (int64_t i = 0; i < 4 * NH - 5; i++) {
            uint16_t want = um_fp32_to_fp16(x[i]);
            bool nan = isnan(x[i]);
            CHECK_MSG(nan ? (hx[i] & 0x7c00) == 0x7c00 && (hx[i] & 0x3ff) : hx[i] == want,
                      "%s: %.9g -> 0x%04x, want 0x%04x", ops_isa_name(isa), x[i], hx[i], want);
        }
        ops_f16_to_f32(h, g, NH);
        ops_f32_to_f16(g, h2, NH);
        for (int i = 0; i < NH; i++)
            if ((i & 0x7c00) != 0x7c00 || !(i & 0x3ff)) CHECK_MSG(h2[i] == h[i], "%s: 0x%04x round trip", ops_isa_name(isa), i);
    }
    restore_isa();
    free(h); free(h2); free(f); free(g); free(x); free(hx);
}
