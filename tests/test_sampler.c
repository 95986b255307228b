/*
 * test_sampler: token choice, scores and random streams on tiny hand-checked rows, and
 * the fast path (prefix + heap, online softmax) against a brute-force sort of a
 * 126,464-wide row.
 */
#include "harness.h"
#include "sampler.h"

#include <stdlib.h>

static um_settings greedy_settings(void) {
    return (um_settings){ .temperature = 0.0f, .top_k = 0, .top_p = 1.0f, .seed = 42 };
}

/* ---------------------------------------------------------------- random streams */

TEST(sampler_rng_deterministic_and_keyed) {
    um_rng a, b, c;
    sampler_rng_init(&a, 7, 3, 11, UM_RNG_TOKEN);
    sampler_rng_init(&b, 7, 3, 11, UM_RNG_TOKEN);
    sampler_rng_init(&c, 7, 3, 12, UM_RNG_TOKEN);
    int same_c = 0;
    for (int i = 0; i < 100; i++) {
        uint64_t x = sampler_rng_u64(&a), y = sampler_rng_u64(&b), z = sampler_rng_u64(&c);
        CHECK(x == y);
        same_c += x == z;
    }
    CHECK_EQ(same_c, 0);
    /* every key part changes the stream */
    double u0 = sampler_uniform_at(7, 3, 11, UM_RNG_TOKEN);
    CHECK(u0 != sampler_uniform_at(8, 3, 11, UM_RNG_TOKEN));
    CHECK(u0 != sampler_uniform_at(7, 4, 11, UM_RNG_TOKEN));
    CHECK(u0 != sampler_uniform_at(7, 3, 11, UM_RNG_SCORE));
}

TEST(sampler_rng_uniform_open_interval_and_mean) {
    um_rng r;
    sampler_rng_init(&r, 1, 0, 0, UM_RNG_TOKEN);
    double sum = 0.0, lo = 1.0, hi = 0.0;
    const int n = 200000;
    for (int i = 0; i < n; i++) {
        double u = sampler_rng_uniform(&r);
        CHECK(u > 0.0 && u < 1.0);
        sum += u;
        lo = u < lo ? u : lo;
        hi = u > hi ? u : hi;
    }
    /* mean of U(0,1) is 1/2 with standard error sqrt(1/12/n) = 6.5e-4: 5 sigma */
    CHECK_NEAR(sum / n, 0.5, 5 * 6.5e-4);
    CHECK(lo < 1e-4 && hi > 1.0 - 1e-4);
}

/* ---------------------------------------------------------------- tiny rows */

TEST(sampler_greedy_scores_on_tiny_row) {
    /* l = {1, 3, 2, 0}: p = e^l / (e^0 + e^1 + e^2 + e^3) = {.087144, .643914, .236883, .032059}
       margin = p1 - p2 = .407031; sum p log p = -.947537 */
    const float l[4] = { 1, 3, 2, 0 };
    um_sample_ws *ws = sampler_ws_new(4);
    um_settings s = greedy_settings();
    um_pick pk;
    CHECK(sampler_pick(l, 4, -1, &s, 0, 0, ws, &pk, NULL) == UM_OK);
    CHECK_EQ(pk.token, 1);
    CHECK_NEAR(pk.prob, 0.6439143, 1e-6);
    CHECK_NEAR(pk.margin, 0.4070314, 1e-6);
    CHECK_NEAR(pk.neg_entropy, -0.9475370, 1e-6);
    CHECK_NEAR(pk.entropy, 0.9475370, 1e-6);
    CHECK_EQ(pk.n_top, 4);
    CHECK_EQ(pk.top[0].token, 1); CHECK_EQ(pk.top[1].token, 2);
    CHECK_EQ(pk.top[2].token, 0); CHECK_EQ(pk.top[3].token, 3);
    CHECK_NEAR(pk.top[3].prob, 0.0320586, 1e-6);
    CHECK_EQ(pk.top[4].token, -1);
    /* gumbel (LLaDA) mode at temperature 0 is the same argmax with the same raw scores */
    s.gumbel = true;
    CHECK(sampler_pick(l, 4, -1, &s, 0, 0, ws, &pk, NULL) == UM_OK);
    CHECK_EQ(pk.token, 1);
    CHECK_NEAR(pk.prob, 0.6439143, 1e-6);
    sampler_ws_free(ws);
}

TEST(sampler_tempered_filtered_scores_follow_dream) {
    /* T = 2, top-k 2 on l = {1, 3, 2, 0}: kept {1, 2}; q = softmax({1.5, 1}) = {.622459, .377541}
       margin .244919, sum q log q = -.662847; greedy picks token 1 with q = .622459 */
    const float l[4] = { 1, 3, 2, 0 };
    um_sample_ws *ws = sampler_ws_new(4);
    um_settings s = greedy_settings();
    s.temperature = 2.0f;
    s.top_k = 2;
    um_pick pk;
    for (int pos = 0; pos < 50; pos++) {
        CHECK(sampler_pick(l, 4, -1, &s, 0, pos, ws, &pk, NULL) == UM_OK);
        CHECK(pk.token == 1 || pk.token == 2);
        CHECK_NEAR(pk.margin, 0.2449187, 1e-6);
        CHECK_NEAR(pk.neg_entropy, -0.6628473, 1e-6);
        CHECK_NEAR(pk.prob, pk.token == 1 ? 0.6224593 : 0.3775407, 1e-6);
        /* the view stays the raw distribution */
        CHECK_NEAR(pk.entropy, 0.9475370, 1e-6);
    }
    /* LLaDA mode: the choice is still filtered, but scores are the raw softmax */
    s.gumbel = true;
    for (int pos = 0; pos < 50; pos++) {
        CHECK(sampler_pick(l, 4, -1, &s, 0, pos, ws, &pk, NULL) == UM_OK);
        CHECK(pk.token == 1 || pk.token == 2);
        CHECK_NEAR(pk.prob, pk.token == 1 ? 0.6439143 : 0.2368828, 1e-6);
        CHECK_NEAR(pk.margin, 0.4070314, 1e-6);
    }
    sampler_ws_free(ws);
}

TEST(sampler_entropy_of_uniform_is_log_v) {
    enum { V = 1000 };
    static float l[V];
    for (int i = 0; i < V; i++)
        l[i] = 0.25f;
    um_sample_ws *ws = sampler_ws_new(V);
    um_settings s = greedy_settings();
    um_pick pk;
    CHECK(sampler_pick(l, V, -1, &s, 0, 0, ws, &pk, NULL) == UM_OK);
    CHECK_NEAR(pk.entropy, log(1000.0), 1e-5);
    CHECK_NEAR(pk.neg_entropy, -log(1000.0), 1e-5);
    CHECK_NEAR(pk.prob, 1.0 / 1000, 1e-8);
    CHECK_NEAR(pk.margin, 0.0, 1e-9);
    CHECK_EQ(pk.token, 0);                 /* ties: lowest id */
    CHECK_EQ(pk.top[7].token, 7);
    /* with token 5 as the mask, 999 tokens share the mass */
    CHECK(sampler_pick(l, V, 5, &s, 0, 0, ws, &pk, NULL) == UM_OK);
    CHECK_NEAR(pk.entropy, log(999.0), 1e-5);
    CHECK_EQ(pk.top[5].token, 6);
    sampler_ws_free(ws);
}

TEST(sampler_never_chooses_mask) {
    const float l[5] = { 0, 1, 9, 2, -1 };   /* token 2 is the mask and the model's favourite */
    um_sample_ws *ws = sampler_ws_new(5);
    um_settings s = greedy_settings();
    um_pick pk;
    CHECK(sampler_pick(l, 5, 2, &s, 0, 0, ws, &pk, NULL) == UM_OK);
    CHECK_EQ(pk.token, 3);
    for (int j = 0; j < pk.n_top; j++)
        CHECK(pk.top[j].token != 2);
    CHECK_EQ(pk.n_top, 4);
    s.temperature = 5.0f;                   /* flat: every other token gets drawn */
    for (int g = 0; g < 2; g++) {
        s.gumbel = g;
        for (int pos = 0; pos < 500; pos++) {
            CHECK(sampler_pick(l, 5, 2, &s, 1, pos, ws, &pk, NULL) == UM_OK);
            CHECK(pk.token != 2);
        }
    }
    sampler_ws_free(ws);
}

TEST(sampler_bad_rows) {
    const float nan_row[3] = { NAN, 1.0f, NAN };
    const float dead[3] = { -INFINITY, -INFINITY, NAN };
    um_sample_ws *ws = sampler_ws_new(3);
    um_settings s = greedy_settings();
    um_pick pk;
    um_err e = { "" };
    CHECK(sampler_pick(nan_row, 3, -1, &s, 0, 0, ws, &pk, &e) == UM_OK);
    CHECK_EQ(pk.token, 1);
    CHECK_NEAR(pk.prob, 1.0, 1e-9);
    CHECK(sampler_pick(dead, 3, -1, &s, 0, 4, ws, &pk, &e) == UM_FAIL);
    CHECK_CONTAINS(e.msg, "no finite logit");
    CHECK(sampler_pick(nan_row, 4, -1, &s, 0, 0, ws, &pk, &e) == UM_FAIL);   /* wider than ws */
    s.temperature = -1.0f;
    CHECK(sampler_pick(nan_row, 3, -1, &s, 0, 0, ws, &pk, &e) == UM_FAIL);
    CHECK_CONTAINS(e.msg, "temperature");
    sampler_ws_free(ws);
}

/* ---------------------------------------------------------------- distributions */

/* Draw n tokens (one per position) and count them. */
static void draw_counts(const float *l, int V, const um_settings *s, int n, int *counts) {
    um_sample_ws *ws = sampler_ws_new(V);
    um_pick pk;
    for (int i = 0; i < V; i++)
        counts[i] = 0;
    for (int pos = 0; pos < n; pos++)
        if (sampler_pick(l, V, -1, s, 3, pos, ws, &pk, NULL) == UM_OK)
            counts[pk.token]++;
    sampler_ws_free(ws);
}

TEST(sampler_temperature_sampling_matches_softmax) {
    /* p = {.5, .3, .15, .05}; at T = 2 the distribution is softmax(l/2) ~ sqrt(p) normalised:
       sqrt = {.70711, .54772, .38730, .22361}, sum 1.86573 -> {.37900, .29357, .20758, .11985} */
    const float l[4] = { logf(0.5f), logf(0.3f), logf(0.15f), logf(0.05f) };
    const double p1[4] = { 0.5, 0.3, 0.15, 0.05 };
    const double p2[4] = { 0.37900, 0.29357, 0.20758, 0.11985 };
    const int n = 20000;
    int counts[4];
    for (int g = 0; g < 2; g++) {
        um_settings s = greedy_settings();
        s.gumbel = g;
        s.temperature = 1.0f;
        draw_counts(l, 4, &s, n, counts);
        /* binomial sd <= sqrt(.25/n) = .0035: 5 sigma */
        for (int i = 0; i < 4; i++)
            CHECK_NEAR((double)counts[i] / n, p1[i], 0.018);
        s.temperature = 2.0f;
        draw_counts(l, 4, &s, n, counts);
        for (int i = 0; i < 4; i++)
            CHECK_NEAR((double)counts[i] / n, p2[i], 0.018);
    }
}

TEST(sampler_top_p_keeps_dreams_nucleus) {
    /* p = {.5, .3, .15, .05}, top-p .7: cumulative .5 <= .7 keeps the 2nd, .8 > .7 stops:
       kept {0, 1}, renormalised {.625, .375} */
    const float l[4] = { logf(0.5f), logf(0.3f), logf(0.15f), logf(0.05f) };
    const int n = 20000;
    int counts[4];
    um_settings s = greedy_settings();
    s.temperature = 1.0f;
    s.top_p = 0.7f;
    draw_counts(l, 4, &s, n, counts);
    CHECK_EQ(counts[2] + counts[3], 0);
    CHECK_NEAR((double)counts[0] / n, 0.625, 0.018);
    /* top-p .4: the first token alone already exceeds it */
    s.top_p = 0.4f;
    draw_counts(l, 4, &s, 200, counts);
    CHECK_EQ(counts[0], 200);
    /* top-k 1 at temperature 1: always the argmax, with confidence 1 in Dream's reading */
    s.top_p = 1.0f;
    s.top_k = 1;
    um_sample_ws *ws = sampler_ws_new(4);
    um_pick pk;
    CHECK(sampler_pick(l, 4, -1, &s, 0, 9, ws, &pk, NULL) == UM_OK);
    CHECK_EQ(pk.token, 0);
    CHECK_NEAR(pk.prob, 1.0, 1e-9);
    CHECK_NEAR(pk.margin, 1.0, 1e-9);
    CHECK_NEAR(pk.neg_entropy, 0.0, 1e-9);
    sampler_ws_free(ws);
}

TEST(sampler_gumbel_deterministic_per_seed_step_position) {
    enum { V = 50 };
    float l[V];
    for (int i = 0; i < V; i++)
        l[i] = (float)((i * 37) % 11) * 0.1f;
    um_sample_ws *ws = sampler_ws_new(V);
    um_settings s = greedy_settings();
    s.gumbel = true;
    s.temperature = 1.0f;
    um_pick a, b;
    int differs = 0;
    for (int pos = 0; pos < 64; pos++) {
        CHECK(sampler_pick(l, V, -1, &s, 5, pos, ws, &a, NULL) == UM_OK);
        CHECK(sampler_pick(l, V, -1, &s, 5, pos, ws, &b, NULL) == UM_OK);
        CHECK_EQ(a.token, b.token);
        s.seed = 43;
        CHECK(sampler_pick(l, V, -1, &s, 5, pos, ws, &b, NULL) == UM_OK);
        s.seed = 42;
        differs += a.token != b.token;
    }
    CHECK(differs > 32);   /* near-flat row over 50 tokens: another seed mostly differs */
    sampler_ws_free(ws);
}

TEST(sampler_cfg_formula) {
    /* out = uncond + (w + 1)(cond - uncond), w = 2: .5 + 3(.5) = 2; 3 + 3(-1) = 0; -1 + 3(0) = -1 */
    float cond[3] = { 1.0f, 2.0f, -1.0f };
    const float uncond[3] = { 0.5f, 3.0f, -1.0f };
    float out[3];
    sampler_cfg(out, cond, uncond, 3, 2.0f);
    CHECK_NEAR(out[0], 2.0, 1e-6);
    CHECK_NEAR(out[1], 0.0, 1e-6);
    CHECK_NEAR(out[2], -1.0, 1e-6);
    sampler_cfg(cond, cond, uncond, 3, 0.0f);   /* w = 0 is the conditional row, in place */
    CHECK_NEAR(cond[0], 1.0, 1e-6);
    CHECK_NEAR(cond[1], 2.0, 1e-6);
}

/* ---------------------------------------------------------------- wide rows vs brute force */

typedef struct ref_ent { float l; int id; } ref_ent;

static int ref_cmp(const void *pa, const void *pb) {
    const ref_ent *a = pa, *b = pb;
    if (a->l != b->l)
        return a->l > b->l ? -1 : 1;
    return a->id - b->id;
}

TEST(sampler_wide_row_matches_full_sort) {
    enum { V = 126464, MASK = 126336 };
    float *l = malloc(V * sizeof *l);
    ref_ent *ref = malloc(V * sizeof *ref);
    CHECK(l && ref);
    um_rng r;
    sampler_rng_init(&r, 99, 0, 0, UM_RNG_TOKEN);
    for (int i = 0; i < V; i++)   /* logits in [-4, 4): flat enough that top-p .9 needs ~100k tokens */
        l[i] = (float)(sampler_rng_uniform(&r) * 8.0 - 4.0);
    l[MASK] = 50.0f;
    int n = 0;
    double zr = 0.0;
    for (int i = 0; i < V; i++)
        if (i != MASK)
            ref[n++] = (ref_ent){ l[i], i };
    qsort(ref, n, sizeof *ref, ref_cmp);
    for (int j = 0; j < n; j++)
        zr += exp((double)ref[j].l - ref[0].l);
    double h = 0.0;
    for (int j = 0; j < n; j++) {
        double p = exp((double)ref[j].l - ref[0].l) / zr;
        h -= p * log(p);
    }

    um_sample_ws *ws = sampler_ws_new(V);
    um_settings s = greedy_settings();
    um_pick pk;
    /* top-k 100 > the 64-entry prefix: the heap path */
    s.top_k = 100;
    CHECK(sampler_pick(l, V, MASK, &s, 0, 0, ws, &pk, NULL) == UM_OK);
    CHECK_EQ(pk.token, ref[0].id);
    double z100 = 0.0;
    for (int j = 0; j < 100; j++)
        z100 += exp((double)ref[j].l - ref[0].l);
    /* tolerance: float expf in the sums, relative ~1e-6 */
    CHECK_NEAR(pk.prob, 1.0 / z100, 1e-5);
    for (int j = 0; j < UM_TOPK; j++) {
        CHECK_EQ(pk.top[j].token, ref[j].id);
        CHECK_NEAR(pk.top[j].prob, exp((double)ref[j].l - ref[0].l) / zr, 1e-8);
    }
    /* entropy over 126k tokens from the one online pass: float terms, ~1e-5 relative */
    CHECK_NEAR(pk.entropy, h, 1e-4 * h);

    /* top-p .9: the nucleus, by brute force */
    s.top_k = 0;
    s.top_p = 0.9f;
    int m = 0;
    double cum = 0.0;
    while (m < n) {
        cum += exp((double)ref[m].l - ref[0].l) / zr;
        m++;
        if (cum > 0.9)
            break;
    }
    double zm = 0.0;
    for (int j = 0; j < m; j++)
        zm += exp((double)ref[j].l - ref[0].l);
    CHECK(sampler_pick(l, V, MASK, &s, 0, 1, ws, &pk, NULL) == UM_OK);
    CHECK_EQ(pk.token, ref[0].id);
    CHECK_NEAR(pk.prob, 1.0 / zm, 1e-4 / zm);

    /* sampling over the whole row: the token is drawn, never the mask, and in the row */
    s.top_p = 1.0f;
    s.temperature = 0.7f;
    for (int g = 0; g < 2; g++) {
        s.gumbel = g;
        CHECK(sampler_pick(l, V, MASK, &s, 0, 2, ws, &pk, NULL) == UM_OK);
        CHECK(pk.token >= 0 && pk.token < V && pk.token != MASK);
        CHECK(pk.prob > 0.0f);
    }
    sampler_ws_free(ws);
    free(l);
    free(ref);
}

/* ---------------------------------------------------------------- SIMD kernels vs reference */

#include "cpu.h"

/* The fast kernel `fast` against the reference over rows with NaN, infinities and ties. */
static void check_scan_kernel(um_scan_fn fast) {
    enum { V = 5000 };
    static float x[V];
    um_rng r;
    sampler_rng_init(&r, 3, 0, 0, UM_RNG_TOKEN);
    const int lens[] = { 1, 7, 8, 9, 31, 64, 1000, 4999, 5000 };
    for (unsigned li = 0; li < sizeof lens / sizeof lens[0]; li++) {
        int n = lens[li];
        for (int trial = 0; trial < 6; trial++) {
            double spread = trial < 3 ? 4.0 : 40.0;   /* flat rows and peaked ones (e^-87 underflow) */
            for (int i = 0; i < n; i++) {
                x[i] = (float)((sampler_rng_uniform(&r) - 0.5) * 2.0 * spread);
                double u = sampler_rng_uniform(&r);
                if (trial % 3 == 1 && u < 0.02) x[i] = NAN;
                if (trial % 3 == 1 && u > 0.98) x[i] = -INFINITY;
                if (trial % 3 == 2 && u < 0.01) x[i] = INFINITY;
                if (trial % 3 == 2 && u > 0.995) x[i] = x[0];   /* ties in the best list */
            }
            int skip = trial == 0 ? -1 : (int)(sampler_rng_u64(&r) % (uint64_t)n);
            double inv_t = trial % 2 ? 1.0 / 0.7 : 1.0;
            bool track = trial % 2;
            int cap = trial % 2 ? 64 : 8;
            um_logit_id b1[64], b2[64];
            um_row_scan s1, s2;
            sampler_scan_ref(x, n, skip, inv_t, track, b1, cap, &s1);
            fast(x, n, skip, inv_t, track, b2, cap, &s2);
            CHECK_MSG(s1.n_finite == s2.n_finite, "n %d trial %d: finite %d vs %d", n, trial, s2.n_finite, s1.n_finite);
            if (s1.n_finite == 0)
                continue;
            CHECK(s1.m == s2.m);
            CHECK_EQ(s1.n_best, s2.n_best);
            for (int j = 0; j < s1.n_best; j++) {
                CHECK_MSG(b1[j].id == b2[j].id && b1[j].logit == b2[j].logit,
                          "n %d trial %d best[%d]: %d vs %d", n, trial, j, b2[j].id, b1[j].id);
            }
            /* polynomial exp (~2 ulp) against libm expf (<= 1 ulp), same-sign terms:
               relative error of the sums stays a few 1e-7; 2e-6 leaves margin */
            CHECK_NEAR(s2.zr, s1.zr, 2e-6 * s1.zr);
            CHECK_NEAR(s2.sr, s1.sr, 2e-6 * (fabs(s1.sr) + s1.zr));
            if (track) {
                CHECK_NEAR(s2.zt, s1.zt, 2e-6 * s1.zt);
                CHECK_NEAR(s2.st, s1.st, 2e-6 * (fabs(s1.st) + s1.zt));
            }
        }
    }
}

TEST(sampler_scan_avx2_matches_reference) {
#if defined(__x86_64__) || defined(__i386__)
    const um_cpu *c = cpu_features();
    if (!(c->avx2 && c->fma && c->os_avx)) { th_skip("no AVX2+FMA"); return; }
    check_scan_kernel(sampler_scan_avx2);
#else
    th_skip("not an x86 build");
#endif
}

TEST(sampler_scan_neon_matches_reference) {
#if defined(__aarch64__)
    if (!cpu_features()->neon) { th_skip("no NEON"); return; }
    check_scan_kernel(sampler_scan_neon);
#else
    th_skip("not an AArch64 build");
#endif
}

/* ---------------------------------------------------------------- the draws, re-derived */

TEST(sampler_draws_follow_the_reference_formulas) {
    /* With the position's TOKEN stream drawn in token-id order (the mask skipped), LLaDA's
       argmax exp(l) / (-log u)^T and Dream's inverse-CDF draw from softmax(l/T) are
       recomputed here in float64 and must pick the same tokens as sampler_pick. */
    enum { V = 40, MASK = 13 };
    float l[V];
    for (int i = 0; i < V; i++)
        l[i] = (float)((i * 7919) % 23) * 0.15f;
    um_sample_ws *ws = sampler_ws_new(V);
    um_settings s = greedy_settings();
    s.temperature = 0.7f;
    for (int pos = 0; pos < 200; pos++) {
        um_pick pk;
        um_rng r;
        /* LLaDA */
        s.gumbel = true;
        CHECK(sampler_pick(l, V, MASK, &s, 4, pos, ws, &pk, NULL) == UM_OK);
        sampler_rng_init(&r, s.seed, 4, pos, UM_RNG_TOKEN);
        int want = -1;
        double best = -1.0;
        for (int i = 0; i < V; i++) {
            if (i == MASK) continue;
            double u = sampler_rng_uniform(&r);
            double key = exp((double)l[i]) / pow(-log(u), (double)s.temperature);
            if (key > best) { best = key; want = i; }
        }
        CHECK_EQ(pk.token, want);
        /* Dream */
        s.gumbel = false;
        CHECK(sampler_pick(l, V, MASK, &s, 4, pos, ws, &pk, NULL) == UM_OK);
        sampler_rng_init(&r, s.seed, 4, pos, UM_RNG_TOKEN);
        double z = 0.0;
        for (int i = 0; i < V; i++)
            if (i != MASK) z += exp(l[i] / 0.7);
        double target = sampler_rng_uniform(&r) * z, acc = 0.0;
        want = -1;
        for (int i = 0; i < V && want < 0; i++) {
            if (i == MASK) continue;
            acc += exp(l[i] / 0.7);
            if (acc >= target) want = i;
        }
        CHECK_EQ(pk.token, want);
        CHECK_NEAR(pk.prob, exp(l[want] / 0.7) / z, 1e-6);
    }
    sampler_ws_free(ws);
}

/* top-k at every edge: 1, 2, one less than the tokens that can be chosen, exactly those, the
 * vocabulary (mask included), more, and 0 (off), on the prefix path (11 choosable tokens) and
 * the heap path (99, past the 64-entry prefix). The scoring distribution is the softmax over
 * the k best, so the greedy pick's probability is 1 / sum_{j<k} exp(l_j - l_0) and its
 * negative entropy sum q log q over the same k: both computed here in double from the sorted
 * logits. A top-k that is ignored at any edge (k = choosable - 1 treated as off) changes them. */
static void check_top_k_edges(int32_t V, int32_t mask) {
    float *l = malloc((size_t)V * sizeof *l);
    double *sorted = malloc((size_t)V * sizeof *sorted);
    int32_t n = 0;
    for (int32_t i = 0; i < V; i++) {
        l[i] = 0.25f * (float)((i * 7) % V) / 4.0f;      /* distinct, spread over [0, V/16) */
        if (i != mask) sorted[n++] = l[i];
    }
    for (int32_t a = 0; a < n; a++)                      /* descending */
        for (int32_t b = a + 1; b < n; b++)
            if (sorted[b] > sorted[a]) { double t = sorted[a]; sorted[a] = sorted[b]; sorted[b] = t; }
    um_sample_ws *ws = sampler_ws_new(V);
    const int32_t ks[] = { 1, 2, n - 1, n, V, V + 1, 0 };
    for (size_t c = 0; c < sizeof ks / sizeof ks[0]; c++) {
        int32_t k = ks[c], kept = k == 0 || k > n ? n : k;
        double z = 0.0, sxe = 0.0;
        for (int32_t j = 0; j < kept; j++) {
            double x = sorted[j] - sorted[0], ex = exp(x);
            z += ex;
            sxe += ex * x;
        }
        um_settings s = greedy_settings();
        s.top_k = k;
        um_pick pk;
        um_err e = { "" };
        if (sampler_pick(l, V, mask, &s, 0, 0, ws, &pk, &e) != UM_OK) { th_fail(__FILE__, __LINE__, "%s", e.msg); break; }
        /* float sums inside the sampler: relative 1e-6 */
        if (fabs(pk.prob - 1.0 / z) > 1e-6 || fabs(pk.neg_entropy - (sxe / z - log(z))) > 1e-5 * (1 + log(z))) {
            th_fail(__FILE__, __LINE__, "V %d, top-k %d (keeps %d): prob %.9g want %.9g, neg_entropy %.9g want %.9g", V,
                    k, kept, pk.prob, 1.0 / z, pk.neg_entropy, sxe / z - log(z));
            break;
        }
        /* drawn tokens (Dream: one draw from the filtered distribution, temperature 4) stay in
         * the k best; with k = n - 1 the worst token never comes, with k = n it does */
        s.temperature = 4.0f;
        int worst_seen = 0, outside = 0;
        for (int64_t pos = 0; pos < 3000; pos++) {
            if (sampler_pick(l, V, mask, &s, 1, pos, ws, &pk, &e) != UM_OK) { outside = -1; break; }
            float lt = l[pk.token];
            int rank = 0;
            for (int32_t j = 0; j < n; j++) rank += sorted[j] > lt;
            outside += rank >= kept;
            worst_seen += rank == n - 1;
        }
        if (outside != 0 || (kept == n && worst_seen == 0) || (kept < n && worst_seen != 0)) {
            th_fail(__FILE__, __LINE__, "V %d, top-k %d: %d draws outside the k best, the worst token drawn %d times", V, k,
                    outside, worst_seen);
            break;
        }
    }
    sampler_ws_free(ws);
    free(sorted);
    free(l);
}

TEST(sampler_top_k_every_edge) {
    check_top_k_edges(12, 5);        /* 11 choosable: the prefix path */
    if (th_failed()) return;
    check_top_k_edges(100, 40);      /* 99 choosable: k = 98, 99 take the heap past the 64-entry prefix */
}
