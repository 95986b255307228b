/*
 * test_cache: partial forward passes over a K/V cache (forward_run_kv) against full passes,
 * on random-weight models of every architecture written by synth, on the fast and the
 * reference path.
 *
 * What must hold, and why:
 *   - a full pass that fills the cache gives the bytes of forward_run (storing K/V computes
 *     nothing new);
 *   - with an F32 cache, a partial pass right after the full pass gives the full pass's rows
 *     bit for bit: every op computes a row from that row alone (the subset test of
 *     test_forward.c shows it for the GEMM and the attention), and the cached K/V are the
 *     full pass's own floats;
 *   - with F16 or Q8_0 the cached K/V are rounded: F16 keeps 11 significant bits (relative
 *     error <= 2^-12 per value), Q8_0 one int8 per value scaled by its block of 32 (error up to
 *     1/254 of the block's largest value, ~4e-3 relative), the same order as the int8
 *     activations of the fast path, whose bound test_forward.c sets at cosine 0.999. A logits
 *     row moves by about the relative error of its inputs, so 1 - cosine ~ err^2 / 2: F16
 *     ~1e-8, Q8_0 ~1e-5; the bounds (check_model) leave a margin of 25 or more;
 *   - the partial pass really reads the cache: tokens changed at inactive positions after the
 *     fill change nothing, and the same change with every row active does.
 */
#include <math.h>
#include <stdlib.h>
#include <unistd.h>

#include "forward.h"
#include "harness.h"
#include "model.h"
#include "pool.h"
#include "quant.h"
#include "synth.h"

static um_model *open_model(const char *shape, uint32_t type) {
    char path[256];
    snprintf(path, sizeof path, "/tmp/unmask-cache-%d-%s-%s.gguf", (int)getpid(), shape, um_type_name(type));
    um_synth_opts o = { .shape = synth_find_shape(shape), .type = type, .seed = 11, .init_scale = 1.0f };
    um_err e = { "" };
    um_model *m = NULL;
    if (!o.shape || synth_write(&o, path, &e) || model_open(&m, path, &e)) {
        th_fail(__FILE__, __LINE__, "%s %s: %s", shape, um_type_name(type), e.msg);
        m = NULL;
    }
    unlink(path);
    return m;
}

static double cosine(const float *a, const float *b, int n) {
    double ab = 0, aa = 0, bb = 0;
    for (int i = 0; i < n; i++) { ab += (double)a[i] * b[i]; aa += (double)a[i] * a[i]; bb += (double)b[i] * b[i]; }
    return ab / sqrt(aa * bb);
}

enum { T = 41 };

/* The active rows of a partial pass: a block in the middle plus scattered positions, out of
 * order; the head rows a subset of them. */
static const int32_t active[] = { 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 5, 40, 17 };
static const int32_t head_rows[] = { 29, 22, 40, 25, 5 };
#define N_ACT ((int)(sizeof active / sizeof active[0]))
#define N_HEAD ((int)(sizeof head_rows / sizeof head_rows[0]))

static bool is_active(int p) {
    for (int i = 0; i < N_ACT; i++) if (active[i] == p) return true;
    return false;
}

/* Full vs partial passes on one model and one path, for each cache type. */
static void check_model(const char *shape, uint32_t wtype, bool reference) {
    um_model *m = open_model(shape, wtype);
    if (!m) return;
    um_pool *pool = reference ? NULL : pool_new(2);
    const int V = m->hp.n_vocab;
    int32_t tok[T], tok2[T], all[T];
    for (int i = 0; i < T; i++) { tok[i] = (i * 131 + 17) % V; all[i] = i; }
    um_forward *f = NULL;
    um_forward_opts fo = { .max_tokens = T, .kernel = UM_KERNEL_AUTO, .reference = reference };
    float *full = malloc(sizeof(float) * T * V), *filled = malloc(sizeof(float) * T * V);
    float *part = malloc(sizeof(float) * T * V), *part2 = malloc(sizeof(float) * T * V);
    um_kvcache *kv = NULL;
    um_err e = { "" };
    const char *path = reference ? "reference" : "fast";
    if (forward_new(&f, m, pool, &fo, &e) || forward_run(f, tok, T, all, T, full, &e)) {
        th_fail(__FILE__, __LINE__, "%s: %s", shape, e.msg);
        goto out;
    }
    const uint32_t kv_types[] = { UM_TYPE_F32, UM_TYPE_F16, UM_TYPE_Q8_0 };
    /* Bounds on 1 - cosine (see the top): rounding alone (reference path, or float weights on
     * the fast path): F16 1e-6, Q8_0 1e-4 (measured ~5e-9 and ~4e-6). With integer weights the
     * fast path quantizes activations to int8, and a K/V value moved by the rounding can push
     * an activation across an int8 step (1/127 of its block's largest value), so the bound is
     * test_forward.c's for int8 activations, 1e-3 (measured ~1e-4). */
    const bool int8_acts = !reference && um_traits(wtype)->is_quantized;
    const double min_cos[] = { 1.0, int8_acts ? 0.999 : 0.999999, int8_acts ? 0.999 : 0.9999 };
    for (int ti = 0; ti < 3; ti++) {
        const char *tn = um_type_name(kv_types[ti]);
        forward_kv_free(kv);
        kv = NULL;
        float drift = -1;
        if (forward_kv_new(f, kv_types[ti], T, &kv, &e) ||
            forward_run_kv(f, kv, tok, T, NULL, 0, all, T, filled, NULL, &e) ||
            forward_run_kv(f, kv, tok, T, active, N_ACT, head_rows, N_HEAD, part, &drift, &e)) {
            th_fail(__FILE__, __LINE__, "%s %s kv %s: %s", shape, path, tn, e.msg);
            goto out;
        }
        const int64_t nkv = (int64_t)m->hp.n_head_kv * m->hp.head_dim;
        CHECK_MSG(forward_kv_bytes(kv) == 2 * (uint64_t)m->hp.n_layer * T * um_row_size(kv_types[ti], nkv),
                  "kv bytes %llu", (unsigned long long)forward_kv_bytes(kv));
        CHECK_MSG(memcmp(full, filled, sizeof(float) * T * V) == 0, "%s %s: filling the %s cache changed the logits",
                  shape, path, tn);
        for (int i = 0; i < N_HEAD; i++) {
            const float *a = part + (size_t)i * V, *b = full + (size_t)head_rows[i] * V;
            if (kv_types[ti] == UM_TYPE_F32) {
                CHECK_MSG(memcmp(a, b, sizeof(float) * V) == 0, "%s %s: partial row %d differs with an f32 cache (cos %.9f)",
                          shape, path, head_rows[i], cosine(a, b, V));
            } else {
                double c = cosine(a, b, V);
                CHECK_MSG(c >= min_cos[ti], "%s %s: partial row %d with a %s cache: cosine %.9f < %.5f", shape, path,
                          head_rows[i], tn, c, min_cos[ti]);
            }
        }
        /* the active rows' K right after the fill are the cached ones: no drift (f32), rounding only (f16) */
        if (kv_types[ti] == UM_TYPE_F32) CHECK_MSG(drift == 0.0f, "%s %s: drift %g right after the fill", shape, path, drift);
        /* (int8 activations turn the rounding into int8 steps: a floor of ~1e-2 there) */
        if (kv_types[ti] == UM_TYPE_F16)
            CHECK_MSG(drift >= 0.0f && drift < (int8_acts ? 0.05f : 1e-3f), "%s %s: f16 drift %g", shape, path, drift);

        /* tokens changed at inactive positions are not read: their K/V come from the cache */
        memcpy(tok2, tok, sizeof tok);
        for (int p = 0; p < T; p++) if (!is_active(p)) tok2[p] = (tok[p] + 7) % V;
        if (forward_run_kv(f, kv, tok2, T, active, N_ACT, head_rows, N_HEAD, part2, NULL, &e)) {
            th_fail(__FILE__, __LINE__, "%s: %s", shape, e.msg);
            goto out;
        }
        CHECK_MSG(memcmp(part, part2, sizeof(float) * N_HEAD * V) == 0,
                  "%s %s %s: a partial pass read tokens of inactive positions", shape, path, tn);
        /* every row active: nothing read from the cache, so the full pass of the new canvas exactly */
        float d2 = 0;
        if (forward_run_kv(f, kv, tok2, T, all, T, all, T, part2, &d2, &e) || forward_run(f, tok2, T, all, T, full, &e)) {
            th_fail(__FILE__, __LINE__, "%s: %s", shape, e.msg);
            goto out;
        }
        CHECK_MSG(memcmp(part2, full, sizeof(float) * T * V) == 0, "%s %s %s: all rows active differs from a full pass",
                  shape, path, tn);
        /* the unchanged (active) positions now see a different context: their K moved */
        CHECK_MSG(d2 > 1e-3f, "%s %s %s: drift %g after changing %d tokens", shape, path, tn, d2, T - N_ACT);
        if (forward_run(f, tok, T, all, T, full, &e)) { th_fail(__FILE__, __LINE__, "%s", e.msg); goto out; }
    }
out:
    free(full); free(filled); free(part); free(part2);
    forward_kv_free(kv);
    forward_free(f);
    pool_free(pool);
    model_close(m);
}

TEST(cache_partial_llada_fast) { check_model("tiny-llada", UM_TYPE_Q8_0, false); }
TEST(cache_partial_llada_f32_fast) { check_model("tiny-llada", UM_TYPE_F32, false); }
TEST(cache_partial_llada_reference) { check_model("tiny-llada", UM_TYPE_Q4_K, true); }
TEST(cache_partial_dream_fast) { check_model("tiny-dream", UM_TYPE_Q6_K, false); }
TEST(cache_partial_dream_reference) { check_model("tiny-dream", UM_TYPE_F16, true); }
TEST(cache_partial_llada_moe_fast) { check_model("tiny-llada-moe", UM_TYPE_Q4_K, false); }
TEST(cache_partial_llada_moe_reference) { check_model("tiny-llada-moe", UM_TYPE_Q8_0, true); }
TEST(cache_partial_rnd1_fast) { check_model("tiny-rnd1", UM_TYPE_Q4_K, false); }
TEST(cache_partial_rnd1_reference) { check_model("tiny-rnd1", UM_TYPE_F32, true); }

/* Misuse fails with a message, never reads garbage. */
TEST(cache_partial_refuses_misuse) {
    um_model *m = open_model("tiny-llada", UM_TYPE_F32);
    if (!m) return;
    const int V = m->hp.n_vocab;
    int32_t tok[T], all[T];
    for (int i = 0; i < T; i++) { tok[i] = i % V; all[i] = i; }
    um_forward *f = NULL;
    um_forward_opts fo = { .max_tokens = T, .kernel = UM_KERNEL_AUTO };
    float *lg = malloc(sizeof(float) * T * V);
    um_kvcache *kv = NULL;
    um_err e = { "" };
    int ok = forward_new(&f, m, NULL, &fo, &e) == UM_OK && forward_kv_new(f, UM_TYPE_F16, T, &kv, &e) == UM_OK;
    if (!ok) th_fail(__FILE__, __LINE__, "%s", e.msg);
    else {
        const int32_t act[] = { 3, 4, 5 }, dup[] = { 3, 4, 3 }, row_out[] = { 6 };
        /* an empty cache */
        if (forward_run_kv(f, kv, tok, T, act, 3, act, 3, lg, NULL, &e) == UM_OK) th_fail(__FILE__, __LINE__, "empty cache accepted");
        else if (!strstr(e.msg, "full pass fills it")) th_fail(__FILE__, __LINE__, "message: %s", e.msg);
        if (forward_run_kv(f, kv, tok, T, NULL, 0, all, T, lg, NULL, &e)) th_fail(__FILE__, __LINE__, "%s", e.msg);
        /* a canvas of another length than the one cached */
        if (forward_run_kv(f, kv, tok, T - 1, act, 3, act, 3, lg, NULL, &e) == UM_OK) th_fail(__FILE__, __LINE__, "length accepted");
        if (forward_run_kv(f, kv, tok, T, dup, 3, act, 1, lg, NULL, &e) == UM_OK) th_fail(__FILE__, __LINE__, "duplicate accepted");
        if (forward_run_kv(f, kv, tok, T, act, 3, row_out, 1, lg, NULL, &e) == UM_OK) th_fail(__FILE__, __LINE__, "row outside accepted");
        else if (!strstr(e.msg, "not an active row")) th_fail(__FILE__, __LINE__, "message: %s", e.msg);
        um_kvcache *bad = NULL;
        if (forward_kv_new(f, UM_TYPE_Q4_K, T, &bad, &e) == UM_OK) th_fail(__FILE__, __LINE__, "q4_K cache accepted");
        forward_kv_free(bad);
        /* the cache still works after the refusals */
        if (forward_run_kv(f, kv, tok, T, act, 3, act, 3, lg, NULL, &e)) th_fail(__FILE__, __LINE__, "%s", e.msg);
    }
    free(lg);
    forward_kv_free(kv);
    forward_free(f);
    model_close(m);
}
