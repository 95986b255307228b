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
/* forward_run_multi: four canvases in one pass (a partial pass over one cache, a full pass
 * filling another, a plain full pass, a partial pass of a shorter canvas over a third cache)
 * give each canvas's logits, drift and cache bytes exactly as its own pass does. The caches
 * are filled the same way first, then one token changed at an inactive position, so the
 * partial canvases really read their caches; and the plain canvas is one the others differ
 * from, so no canvas may see another's keys. */
static void check_multi(const char *shape, uint32_t wtype, bool reference) {
    um_model *m = open_model(shape, wtype);
    if (!m) return;
    um_pool *pool = reference ? NULL : pool_new(2);
    const int V = m->hp.n_vocab, T2 = 29;
    int32_t tok[4][T];
    for (int c = 0; c < 4; c++)
        for (int i = 0; i < T; i++) tok[c][i] = (i * 131 + 17 + 7 * c) % V;
    const int32_t act2[] = { 3, 9, 10, 11, 28, 20 }, rows2[] = { 10, 28, 3 };
    const int n_tok[4] = { T, T, T, T2 };
    um_forward *f = NULL;
    um_forward_opts fo = { .max_tokens = T, .kernel = UM_KERNEL_AUTO, .reference = reference };
    um_err e = { "" };
    CHECK_MSG(forward_new(&f, m, pool, &fo, &e) == UM_OK, "%s", e.msg);
    float *one[4], *many[4];
    float drift1[4] = { 0 }, driftn[4] = { 0 };
    um_kvcache *kv1[4] = { 0 }, *kvn[4] = { 0 };
    for (int c = 0; c < 4; c++) {
        one[c] = calloc((size_t)T * V, sizeof(float));
        many[c] = calloc((size_t)T * V, sizeof(float));
        if (c != 2) {
            CHECK(forward_kv_new(f, UM_TYPE_F16, T, &kv1[c], &e) == UM_OK);
            CHECK(forward_kv_new(f, UM_TYPE_F16, T, &kvn[c], &e) == UM_OK);
        }
    }
    int32_t all[T];
    for (int i = 0; i < T; i++) all[i] = i;
    /* fill caches 0 and 3 (both copies) with the canvases as they were */
    for (int c = 0; f && c < 4; c += 3)
        for (int k = 0; k < 2; k++)
            CHECK(forward_run_kv(f, k ? kvn[c] : kv1[c], tok[c], n_tok[c], NULL, 0, all, 2, one[c], NULL, &e) == UM_OK);
    tok[0][2] = (tok[0][2] + 1) % V;                /* inactive: read from the cache */
    tok[3][0] = (tok[3][0] + 1) % V;
    tok[0][24] = (tok[0][24] + 3) % V;              /* active: recomputed */
    um_pass ps[4] = {
        { .tokens = tok[0], .n_tokens = T, .active = active, .n_active = N_ACT, .rows = head_rows, .n_rows = N_HEAD },
        { .tokens = tok[1], .n_tokens = T, .rows = all, .n_rows = T },
        { .tokens = tok[2], .n_tokens = T, .rows = head_rows, .n_rows = N_HEAD },
        { .tokens = tok[3], .n_tokens = T2, .active = act2, .n_active = 6, .rows = rows2, .n_rows = 3 },
    };
    for (int c = 0; f && c < 4; c++) {               /* each alone */
        um_pass p = ps[c];
        p.kv = kv1[c];
        p.logits = one[c];
        p.drift = p.active ? &drift1[c] : NULL;
        CHECK_MSG(forward_run_multi(f, &p, 1, &e) == UM_OK, "%s", e.msg);
    }
    for (int c = 0; c < 4; c++) {
        ps[c].kv = kvn[c];
        ps[c].logits = many[c];
        ps[c].drift = ps[c].active ? &driftn[c] : NULL;
    }
    CHECK_MSG(f && forward_run_multi(f, ps, 4, &e) == UM_OK, "%s", e.msg);
    for (int c = 0; f && c < 4; c++) {
        int differ = 0;
        for (int64_t i = 0; i < (int64_t)ps[c].n_rows * V; i++) differ += one[c][i] != many[c][i];
        CHECK_MSG(differ == 0, "%s canvas %d: %d logits differ from its own pass", shape, c, differ);
        CHECK(drift1[c] == driftn[c]);
        if (!kv1[c]) continue;
        /* the caches hold the same: a pass of one row over each reads every other row's K/V */
        const int32_t one_row[] = { 1 };
        float *a = one[c], *b = many[c];
        CHECK(forward_run_kv(f, kv1[c], tok[c], n_tok[c], one_row, 1, one_row, 1, a, NULL, &e) == UM_OK);
        CHECK(forward_run_kv(f, kvn[c], tok[c], n_tok[c], one_row, 1, one_row, 1, b, NULL, &e) == UM_OK);
        CHECK_MSG(memcmp(a, b, sizeof(float) * (size_t)V) == 0, "%s canvas %d: the caches differ", shape, c);
    }
    CHECK(f && drift1[0] > 0);                      /* the changed context moved the cached rows */
    /* one cache given twice is refused */
    ps[3].kv = ps[0].kv;
    CHECK(f && forward_run_multi(f, ps, 4, &e) != UM_OK);
    for (int c = 0; c < 4; c++) {
        free(one[c]);
        free(many[c]);
        forward_kv_free(kv1[c]);
        forward_kv_free(kvn[c]);
    }
    forward_free(f);
    pool_free(pool);
    model_close(m);
}

TEST(cache_multi_pass_llada_fast) { check_multi("tiny-llada", UM_TYPE_Q4_K, false); }
TEST(cache_multi_pass_llada_reference) { check_multi("tiny-llada", UM_TYPE_Q8_0, true); }
TEST(cache_multi_pass_llada_moe_fast) { check_multi("tiny-llada-moe", UM_TYPE_Q4_K, false); }
TEST(cache_multi_pass_dream_fast) { check_multi("tiny-dream", UM_TYPE_Q6_K, false); }
TEST(cache_multi_pass_llada2_fast) { check_multi("tiny-llada2", UM_TYPE_Q8_0, false); }

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

/* ================================================================== the engine with a cache */

#include "engine.h"
#include "schedule.h"
#include "snapshot.h"

static const char *const shapes[] = { "tiny-llada", "tiny-dream", "tiny-llada-moe", "tiny-rnd1" };
#define N_SHAPES ((int)(sizeof shapes / sizeof shapes[0]))

static const char *engine_model(int shape) {
    static char path[N_SHAPES][256];
    if (!path[shape][0]) {
        snprintf(path[shape], sizeof path[shape], "/tmp/unmask-cache-engine-%d-%s.gguf", (int)getpid(), shapes[shape]);
        um_synth_opts o = { .shape = synth_find_shape(shapes[shape]), .type = UM_TYPE_Q8_0, .seed = 5, .init_scale = 1.0f };
        um_err e;
        if (synth_write(&o, path[shape], &e)) { printf("    synth: %s\n", e.msg); path[shape][0] = '\0'; return NULL; }
    }
    return path[shape];
}

__attribute__((destructor)) static void cleanup(void) {
    for (int i = 0; i < N_SHAPES; i++) {
        char p[256];
        snprintf(p, sizeof p, "/tmp/unmask-cache-engine-%d-%s.gguf", (int)getpid(), shapes[i]);
        unlink(p);
    }
}

static um_engine *open_engine(int shape) {
    um_engine_opts o = { .model_path = engine_model(shape), .n_threads = 2, .kernel = -1 };
    um_engine *en = NULL;
    um_err e = { "" };
    if (!o.model_path || engine_open(&en, &o, &e)) th_fail(__FILE__, __LINE__, "engine_open: %s", e.msg);
    return en;
}

static const int32_t prompt_ids[] = { 72, 105, 32, 116, 104, 101, 114, 101 };
#define N_PROMPT ((int)(sizeof prompt_ids / sizeof prompt_ids[0]))

/* Deterministic settings (greedy, a score without random draws) for schedule sc over blocks. */
static um_settings det_settings(um_engine *en, um_schedule sc, int n_gen, int block, int steps_per_block) {
    um_settings s;
    engine_default_settings(en, &s);
    s.n_gen = n_gen;
    s.block_len = block;
    s.steps = (n_gen + block - 1) / block * steps_per_block;
    s.schedule = sc;
    s.score = sc == UM_SCHED_FACTOR || sc == UM_SCHED_THRESHOLD ? UM_SCORE_CONFIDENCE : UM_SCORE_MARGIN;
    s.temperature = 0;
    s.threshold = 0.05f;       /* random tiny models are unsure: let a few through */
    s.factor = 2.5f;
    s.eb_gamma = 14.0f;        /* ~2 positions of ~7 nats */
    s.eps = 0.01f;
    return s;
}

/* Run to the end; per step check the accounting and collect it. Returns steps, -1 on failure. */
typedef struct run_log {
    int     steps, refreshes;
    int64_t rows;
    int32_t tokens[512];
    int     n_canvas;
} run_log;

static int run_logged(um_engine *en, const um_settings *s, run_log *lg) {
    um_err e = { "" };
    memset(lg, 0, sizeof *lg);
    if (engine_start_tokens(en, prompt_ids, N_PROMPT, s, &e)) { th_fail(__FILE__, __LINE__, "start: %s", e.msg); return -1; }
    const int n_canvas = N_PROMPT + s->n_gen, passes = s->cfg > 0 ? 2 : 1;
    int r;
    while ((r = engine_step(en, &e)) == 1) {
        um_snapshot *sn = engine_snapshot(en);
        lg->steps++;
        lg->refreshes += sn->cache_refreshed;
        lg->rows += sn->rows_computed;
        int cached = 0;
        for (int i = 0; i < n_canvas; i++) cached += sn->pos[i].cached;
        bool ok = sn->passes == passes && sn->rows_computed == passes * (n_canvas - cached) &&
                  (sn->cache_refreshed || s->cache == UM_CACHE_NONE ? cached == 0 : cached > 0);
        if (!ok) {
            th_fail(__FILE__, __LINE__, "step %d: passes %d, rows %d, %d positions served from the cache, refreshed %d",
                    sn->step, sn->passes, sn->rows_computed, cached, sn->cache_refreshed);
            snapshot_unref(sn);
            return -1;
        }
        snapshot_unref(sn);
    }
    if (r < 0) { th_fail(__FILE__, __LINE__, "step: %s", e.msg); return -1; }
    um_snapshot *sn = engine_snapshot(en);
    if (sn->masks_left != 0) th_fail(__FILE__, __LINE__, "%d masks left at the end", sn->masks_left);
    lg->n_canvas = sn->n_canvas;
    for (int i = 0; i < sn->n_canvas && i < 512; i++) lg->tokens[i] = sn->pos[i].token;
    snapshot_unref(sn);
    if (lg->rows != engine_rows_computed(en)) th_fail(__FILE__, __LINE__, "rows %lld vs engine %lld", (long long)lg->rows,
                                                      (long long)engine_rows_computed(en));
    return lg->steps;
}

/* The first step of every block is a refresh: a full pass over the canvas as it stands, so it
 * decides exactly what an uncached engine decides on that canvas. The uncached engine gets the
 * canvas up to the block as its prompt (same tokens, same positions; later blocks all masked in
 * both) and the same steps per block, so its first step is the cached run's block start. */
static void first_steps_match(int shape, um_schedule sc, um_cache mode) {
    um_engine *a = open_engine(shape), *b = open_engine(shape);
    if (!a || !b) goto out;
    const int n_gen = 24, block = 8, spb = 4;
    um_settings s = det_settings(a, sc, n_gen, block, spb);
    s.cache = mode;
    um_err e = { "" };
    if (engine_start_tokens(a, prompt_ids, N_PROMPT, &s, &e)) { th_fail(__FILE__, __LINE__, "%s", e.msg); goto out; }
    int blocks_seen = 0, last_block = -1;
    for (;;) {
        um_snapshot *before = engine_snapshot(a);
        if (before->done) { snapshot_unref(before); break; }
        /* the block this step works on: the first holding a mask */
        int start = -1;
        for (int i = before->n_prompt; i < before->n_canvas; i++) if (before->pos[i].masked) { start = i; break; }
        const int blk = (start - N_PROMPT) / block;
        int32_t ids[512];
        for (int i = 0; i < start; i++) ids[i] = before->pos[i].token;
        snapshot_unref(before);
        if (engine_step(a, &e) != 1) { th_fail(__FILE__, __LINE__, "step: %s", e.msg); goto out; }
        um_snapshot *sa = engine_snapshot(a);
        if (blk != last_block) {
            last_block = blk;
            blocks_seen++;
            CHECK_MSG(sa->cache_refreshed, "%s %s: block %d started without a refresh", shapes[shape], schedule_name(sc), blk);
            um_settings t = s;
            t.cache = UM_CACHE_NONE;
            t.n_gen = N_PROMPT + n_gen - start;
            t.steps = (t.n_gen + block - 1) / block * spb;
            um_snapshot *sb = NULL;
            if (engine_start_tokens(b, ids, start, &t, &e) || engine_step(b, &e) != 1) {
                th_fail(__FILE__, __LINE__, "uncached: %s", e.msg);
                snapshot_unref(sa);
                goto out;
            }
            sb = engine_snapshot(b);
            bool same = sa->n_committed == sb->n_committed;
            for (int c = 0; same && c < sa->n_committed; c++) {
                int p = sa->committed[c];
                same = p == sb->committed[c] && sa->pos[p].token == sb->pos[p].token &&
                       sa->pos[p].commit_conf == sb->pos[p].commit_conf;
            }
            /* the model's view of every position of the block, bit for bit */
            for (int i = start; same && i < start + block && i < sa->n_canvas; i++)
                same = sa->pos[i].has_view == sb->pos[i].has_view && sa->pos[i].entropy == sb->pos[i].entropy &&
                       memcmp(sa->pos[i].top, sb->pos[i].top, sizeof sa->pos[i].top) == 0;
            snapshot_unref(sb);
            if (!same) {
                th_fail(__FILE__, __LINE__, "%s %s %s: block %d's first step differs from uncached decoding", shapes[shape],
                        schedule_name(sc), engine_cache_name(mode), blk);
                snapshot_unref(sa);
                goto out;
            }
        } else {
            CHECK_MSG(!sa->cache_refreshed, "%s: a refresh inside block %d without a refresh rule", shapes[shape], blk);
        }
        snapshot_unref(sa);
    }
    CHECK_MSG(blocks_seen == 3, "%s: %d blocks seen", shapes[shape], blocks_seen);
out:
    engine_close(a);
    engine_close(b);
}

TEST(cache_first_step_of_each_block_is_exact) {
    const um_schedule scheds[] = { UM_SCHED_BLOCK, UM_SCHED_TIMESTEP, UM_SCHED_THRESHOLD, UM_SCHED_LINEAR,
                                   UM_SCHED_FACTOR, UM_SCHED_EB };
    for (int sh = 0; sh < N_SHAPES && !th_failed(); sh++)
        for (int k = 0; k < (int)(sizeof scheds / sizeof scheds[0]) && !th_failed(); k++)
            first_steps_match(sh, scheds[k], (sh + k) % 2 ? UM_CACHE_PREFIX : UM_CACHE_DUAL);
}

/* Every architecture, schedule and cache mode, with and without guidance: the run completes,
 * each block refreshes once (no refresh rule), partial steps compute fewer rows than the
 * canvas, and a refresh every step (cache_refresh 1: only full passes) decodes exactly as no
 * cache, with guidance too (both branches go through the cache). */
TEST(cache_every_arch_schedule_mode_and_cfg) {
    const um_schedule scheds[] = { UM_SCHED_BLOCK, UM_SCHED_TIMESTEP, UM_SCHED_THRESHOLD, UM_SCHED_LINEAR,
                                   UM_SCHED_FACTOR, UM_SCHED_EB };
    const int n_sched = (int)(sizeof scheds / sizeof scheds[0]);
    for (int sh = 0; sh < N_SHAPES && !th_failed(); sh++) {
        um_engine *en = open_engine(sh);
        if (!en) return;
        for (int k = 0; k < n_sched && !th_failed(); k++) {
            for (int cfg = 0; cfg < 2 && !th_failed(); cfg++) {
                um_settings s = det_settings(en, scheds[k], 24, 8, 4);
                s.cfg = cfg ? 1.5f : 0.0f;
                run_log none, every, part;
                if (run_logged(en, &s, &none) < 0) break;
                s.cache = UM_CACHE_DUAL;
                s.cache_refresh = 1;
                s.cache_type = UM_KV_Q8_0;     /* never read: full passes only */
                if (run_logged(en, &s, &every) < 0) break;
                CHECK_MSG(every.refreshes == every.steps && memcmp(none.tokens, every.tokens, sizeof none.tokens) == 0,
                          "%s %s cfg %d: refreshing every step differs from no cache", shapes[sh], schedule_name(scheds[k]), cfg);
                CHECK_EQ(engine_cache_bytes(en) > 0, 1);
                for (int mode = UM_CACHE_PREFIX; mode <= UM_CACHE_DUAL; mode++) {
                    s.cache = (um_cache)mode;
                    s.cache_refresh = 0;
                    s.cache_type = UM_KV_F16;
                    if (run_logged(en, &s, &part) < 0) break;
                    CHECK_MSG(part.refreshes == 3, "%s %s %s: %d refreshes for 3 blocks", shapes[sh], schedule_name(scheds[k]),
                              engine_cache_name(s.cache), part.refreshes);
                    if (part.steps > part.refreshes)
                        CHECK_MSG(part.rows < (int64_t)part.steps * (cfg + 1) * part.n_canvas, "%s: no rows saved", shapes[sh]);
                }
            }
        }
        engine_close(en);
    }
}

/* Guidance keeps two caches (the canvas and the one with the prompt masked). */
TEST(cache_cfg_keeps_two_caches) {
    um_engine *en = open_engine(0);
    if (!en) return;
    um_settings s = det_settings(en, UM_SCHED_BLOCK, 24, 8, 4);
    s.cache = UM_CACHE_DUAL;
    run_log lg;
    run_logged(en, &s, &lg);
    uint64_t one = engine_cache_bytes(en);
    s.cfg = 2.0f;
    run_logged(en, &s, &lg);
    CHECK_EQ(engine_cache_bytes(en), 2 * one);
    /* tiny-llada: 2 layers, K and V of 4 heads x 64 as f16, for the canvas capacity */
    CHECK_EQ(one % (2ull * 2 * 256 * 2), 0);
    engine_close(en);
}

/* One block (the timestep schedule as Dream runs it) with a refresh every K steps: the steps
 * in between recompute the positions masked at the last refresh (plus, for a model that
 * scores position i from row i-1, the rows in front of them). */
TEST(cache_refresh_every_k_steps) {
    for (int sh = 0; sh < 2 && !th_failed(); sh++) {     /* llada, dream (shifted logits) */
        um_engine *en = open_engine(sh);
        if (!en) return;
        um_settings s = det_settings(en, UM_SCHED_TIMESTEP, 24, 24, 12);
        s.block_len = 0;
        s.steps = 12;
        s.cache = UM_CACHE_DUAL;
        s.cache_refresh = 3;
        um_err e = { "" };
        CHECK(engine_start_tokens(en, prompt_ids, N_PROMPT, &s, &e) == UM_OK);
        bool at_refresh[512] = { false };    /* masked when the last refresh ran */
        int n_at_refresh = 0;
        for (int step = 0; step < 12; step++) {
            um_snapshot *b = engine_snapshot(en);
            const bool done = b->done;
            bool masked_now[512];
            for (int i = 0; i < b->n_canvas; i++) masked_now[i] = b->pos[i].masked;
            const int n_canvas = b->n_canvas;
            snapshot_unref(b);
            if (done) break;
            CHECK(engine_step(en, &e) == 1);
            um_snapshot *a = engine_snapshot(en);
            const bool want_refresh = step % 3 == 0;
            CHECK_MSG(a->cache_refreshed == want_refresh, "%s step %d: refreshed %d", shapes[sh], step, a->cache_refreshed);
            if (want_refresh) {
                n_at_refresh = 0;
                for (int i = 0; i < n_canvas; i++) n_at_refresh += at_refresh[i] = masked_now[i];
                CHECK_EQ(a->rows_computed, a->n_canvas);
            } else {
                /* shifted logits: row i-1 for each masked i, recomputed too when not in the set */
                int want = n_at_refresh;
                for (int i = N_PROMPT; sh == 1 && i < n_canvas; i++) want += masked_now[i] && !at_refresh[i - 1];
                CHECK_MSG(a->rows_computed == want, "%s step %d: %d rows, want %d (%d masked at the refresh)", shapes[sh],
                          step, a->rows_computed, want, n_at_refresh);
            }
            snapshot_unref(a);
        }
        engine_close(en);
    }
}

/* The drift rule: a bound below any drift refreshes after every partial step (so partial and
 * full steps alternate inside a block); a bound above any drift never adds a refresh. */
TEST(cache_drift_bound_refreshes) {
    um_engine *en = open_engine(0);
    if (!en) return;
    um_settings s = det_settings(en, UM_SCHED_BLOCK, 24, 24, 12);
    s.cache = UM_CACHE_DUAL;
    run_log lg;
    s.cache_drift = 1e-9f;
    CHECK(run_logged(en, &s, &lg) == 12);
    CHECK_EQ(lg.refreshes, 6);          /* steps 1, 3, 5, ...: full, partial, full, ... */
    s.cache_drift = 1e6f;
    CHECK(run_logged(en, &s, &lg) == 12);
    CHECK_EQ(lg.refreshes, 1);
    engine_close(en);
}

/* The cache settings change between steps without a restart; a new mode or storage type
 * refreshes at the next step. A mode the backend cannot run is refused (engine_set -1). */
TEST(cache_settings_change_mid_run) {
    um_engine *en = open_engine(1);
    if (!en) return;
    um_settings s = det_settings(en, UM_SCHED_BLOCK, 24, 24, 12);
    um_err e = { "" };
    CHECK(engine_start_tokens(en, prompt_ids, N_PROMPT, &s, &e) == UM_OK);
    CHECK_EQ(engine_cache_bytes(en), 0);
    CHECK(engine_step(en, &e) == 1);
    const struct { um_cache mode; um_kv_store type; bool refresh; } seq[] = {
        { UM_CACHE_DUAL, UM_KV_F16, true }, { UM_CACHE_DUAL, UM_KV_F16, false }, { UM_CACHE_PREFIX, UM_KV_F16, true },
        { UM_CACHE_PREFIX, UM_KV_F16, false }, { UM_CACHE_PREFIX, UM_KV_Q8_0, true }, { UM_CACHE_PREFIX, UM_KV_Q8_0, false },
        { UM_CACHE_NONE, UM_KV_Q8_0, false }, { UM_CACHE_PREFIX, UM_KV_Q8_0, true },
    };
    for (int i = 0; i < (int)(sizeof seq / sizeof seq[0]); i++) {
        s.cache = seq[i].mode;
        s.cache_type = seq[i].type;
        CHECK_EQ(engine_set(en, &s), 0);
        CHECK(engine_step(en, &e) == 1);
        um_snapshot *sn = engine_snapshot(en);
        const bool refreshed = sn->cache_refreshed, full = sn->rows_computed == sn->n_canvas;
        snapshot_unref(sn);
        CHECK_MSG(refreshed == seq[i].refresh, "change %d: refreshed %d", i, refreshed);
        CHECK_MSG(full == (seq[i].refresh || seq[i].mode == UM_CACHE_NONE), "change %d: full %d", i, full);
    }
    um_settings bad = s;
    bad.cache = UM_CACHE_COUNT;
    CHECK_EQ(engine_set(en, &bad), -1);
    bad = s;
    bad.cache_refresh = -1;
    CHECK_EQ(engine_set(en, &bad), -1);
    CHECK(run_logged(en, &s, &(run_log){ 0 }) > 0);
    engine_close(en);
}

/* What the visualizer reads: the CPU backend says it can cache (engine_info.can_cache), and
 * every snapshot carries the cache's bytes as engine_cache_bytes says them (0 without one),
 * from the start's snapshot on. */
TEST(cache_snapshot_reports_bytes_and_backend) {
    um_engine *en = open_engine(0);
    if (!en) return;
    um_engine_info info;
    engine_get_info(en, &info);
    CHECK(info.can_cache);
    um_settings s = det_settings(en, UM_SCHED_BLOCK, 24, 8, 4);
    um_err e = { "" };
    CHECK(engine_start_tokens(en, prompt_ids, N_PROMPT, &s, &e) == UM_OK);
    um_snapshot *sn = engine_snapshot(en);
    CHECK_EQ(sn->cache_bytes, 0);
    snapshot_unref(sn);
    s.cache = UM_CACHE_DUAL;
    CHECK(engine_start_tokens(en, prompt_ids, N_PROMPT, &s, &e) == UM_OK);
    for (int k = 0; k < 3; k++) {
        if (k) CHECK(engine_step(en, &e) == 1);
        sn = engine_snapshot(en);
        CHECK(sn->cache_bytes > 0);
        CHECK_EQ(sn->cache_bytes, engine_cache_bytes(en));
        snapshot_unref(sn);
    }
    engine_close(en);
}
