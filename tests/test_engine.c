/*
 * test_engine: the step API on a random-weight model: determinism per seed (also across
 * thread counts), schedule accounting per step, immutable snapshots, settings changed
 * mid-run, context limits, stop-at-EOS, and logits computed only for the rows in play.
 */
#include <stdlib.h>
#include <unistd.h>

#include "engine.h"
#include "snapshot.h"
#include "harness.h"
#include "quant.h"
#include "synth.h"

static const char *model_path(const char *shape) {
    static char path[8][256];
    static const char *shapes[8];
    for (int i = 0; i < 8; i++) {
        if (shapes[i] && !strcmp(shapes[i], shape)) return path[i];
        if (!shapes[i]) {
            snprintf(path[i], sizeof path[i], "/tmp/unmask-engine-%d-%s.gguf", (int)getpid(), shape);
            um_synth_opts o = { .shape = synth_find_shape(shape), .type = UM_TYPE_Q8_0, .seed = 3, .init_scale = 1.0f };
            um_err e;
            if (synth_write(&o, path[i], &e)) { printf("    synth: %s\n", e.msg); return NULL; }
            shapes[i] = shape;
            return path[i];
        }
    }
    return NULL;
}

__attribute__((destructor)) static void cleanup(void) {
    const char *shapes[] = { "tiny-llada", "tiny-dream" };
    for (int i = 0; i < 2; i++) {
        char p[256];
        snprintf(p, sizeof p, "/tmp/unmask-engine-%d-%s.gguf", (int)getpid(), shapes[i]);
        unlink(p);
    }
}

static um_engine *open_engine(const char *shape, int threads) {
    um_engine_opts o = { .model_path = model_path(shape), .n_threads = threads, .kernel = -1 };
    um_engine *en = NULL;
    um_err e;
    if (!o.model_path || engine_open(&en, &o, &e)) { printf("    engine_open: %s\n", e.msg); return NULL; }
    return en;
}

static int run_all(um_engine *en, int *steps) {
    um_err e;
    int n = 0, r;
    while ((r = engine_step(en, &e)) == 1) n++;
    if (r < 0) printf("    engine_step: %s\n", e.msg);
    if (steps) *steps = n;
    return r;
}

static void final_tokens(um_engine *en, int32_t *out, int *n) {
    um_snapshot *s = engine_snapshot(en);
    for (int i = 0; i < s->n_canvas; i++) out[i] = s->pos[i].token;
    *n = s->n_canvas;
    snapshot_unref(s);
}

TEST(engine_block_schedule_commits_as_planned) {
    um_engine *en = open_engine("tiny-llada", 2);
    CHECK(en);
    um_settings s;
    engine_default_settings(en, &s);
    s.n_gen = 20; s.steps = 8; s.block_len = 10;     /* 2 blocks of 4 steps: 3,3,2,2 then 3,3,2,2 */
    um_err e;
    CHECK(engine_start(en, "Hi", &s, &e) == UM_OK);
    const int want[8] = { 3, 3, 2, 2, 3, 3, 2, 2 };
    for (int k = 0; k < 8; k++) {
        CHECK(engine_step(en, &e) == 1);
        um_snapshot *sn = engine_snapshot(en);
        CHECK_EQ(sn->step, k + 1);
        CHECK_EQ(sn->n_committed, want[k]);
        CHECK_EQ(sn->block, k / 4);
        for (int c = 0; c < sn->n_committed; c++) {
            const um_pos *p = &sn->pos[sn->committed[c]];
            CHECK(!p->masked && p->fresh && p->commit_step == k + 1);
            /* committed inside the active block only */
            CHECK(sn->committed[c] >= sn->n_prompt + 10 * (k / 4) && sn->committed[c] < sn->n_prompt + 10 * (k / 4 + 1));
        }
        /* logits only for the rows in play: no view outside the active block */
        for (int i = sn->n_prompt + 10 * (k / 4 + 1); i < sn->n_canvas; i++) CHECK(!sn->pos[i].has_view);
        snapshot_unref(sn);
    }
    CHECK(engine_done(en));
    CHECK(engine_step(en, &e) == 0);
    engine_close(en);
}

TEST(engine_is_deterministic_per_seed_and_thread_count) {
    int32_t a[512], b[512], c[512];
    int na, nb, nc;
    for (int pass = 0; pass < 3; pass++) {
        um_engine *en = open_engine("tiny-dream", pass == 2 ? 1 : 2);
        CHECK(en);
        um_settings s;
        engine_default_settings(en, &s);          /* Dream: timestep, entropy, temperature 0.2 */
        s.n_gen = 24; s.steps = 6; s.seed = 1234;
        s.score = UM_SCORE_RANDOM;
        um_err e;
        CHECK(engine_start(en, "Once", &s, &e) == UM_OK);
        CHECK(run_all(en, NULL) == 0);
        final_tokens(en, pass == 0 ? a : pass == 1 ? b : c, pass == 0 ? &na : pass == 1 ? &nb : &nc);
        engine_close(en);
    }
    CHECK_EQ(na, nb);
    CHECK_EQ(na, nc);
    CHECK(memcmp(a, b, sizeof(int32_t) * na) == 0);
    CHECK(memcmp(a, c, sizeof(int32_t) * na) == 0);
    /* and another seed gives another answer (with temperature 0.2 over a 1024-token vocabulary) */
    um_engine *en = open_engine("tiny-dream", 2);
    CHECK(en);
    um_settings s;
    engine_default_settings(en, &s);
    s.n_gen = 24; s.steps = 6; s.seed = 99; s.score = UM_SCORE_RANDOM; s.temperature = 1.0f;
    um_err e;
    CHECK(engine_start(en, "Once", &s, &e) == UM_OK);
    CHECK(run_all(en, NULL) == 0);
    final_tokens(en, b, &nb);
    engine_close(en);
    CHECK(memcmp(a, b, sizeof(int32_t) * na) != 0);
}

TEST(engine_snapshots_are_immutable) {
    um_engine *en = open_engine("tiny-llada", 2);
    CHECK(en);
    um_settings s;
    engine_default_settings(en, &s);
    s.n_gen = 16; s.steps = 4; s.block_len = 16;
    um_err e;
    CHECK(engine_start(en, "Hello", &s, &e) == UM_OK);
    um_snapshot *s0 = engine_snapshot(en);
    CHECK_EQ(s0->step, 0);
    CHECK_EQ(s0->masks_left, 16);
    CHECK(engine_step(en, &e) == 1);
    um_snapshot *s1 = engine_snapshot(en);
    um_pos copy[64];
    int n = s1->n_canvas;
    memcpy(copy, s1->pos, sizeof(um_pos) * n);
    CHECK(run_all(en, NULL) == 0);
    CHECK(memcmp(copy, s1->pos, sizeof(um_pos) * n) == 0);
    CHECK_EQ(s1->masks_left, 12);
    CHECK_EQ(s0->masks_left, 16);
    for (int i = s0->n_prompt; i < n; i++) CHECK(s0->pos[i].masked);
    snapshot_unref(s0);
    snapshot_unref(s1);
    engine_close(en);
}

TEST(engine_settings_change_mid_run) {
    um_engine *en = open_engine("tiny-llada", 2);
    CHECK(en);
    um_settings s;
    engine_default_settings(en, &s);
    s.n_gen = 16; s.steps = 16; s.block_len = 16;
    um_err e;
    CHECK(engine_start(en, "Hi", &s, &e) == UM_OK);
    CHECK(engine_step(en, &e) == 1);
    CHECK(engine_step(en, &e) == 1);
    /* fewer steps from now on: 14 masks over the 2 steps left of 4 */
    um_settings t = s;
    t.steps = 4;
    t.score = UM_SCORE_MARGIN;
    CHECK_EQ(engine_set(en, &t), 0);
    int n = 0;
    CHECK(run_all(en, &n) == 0);
    CHECK_EQ(n, 2);
    um_snapshot *sn = engine_snapshot(en);
    CHECK_EQ(sn->masks_left, 0);
    CHECK_EQ(sn->settings.score, UM_SCORE_MARGIN);
    snapshot_unref(sn);
    /* a different length or seed needs a restart */
    t.n_gen = 8;
    CHECK_EQ(engine_set(en, &t), 1);
    engine_close(en);
}

TEST(engine_threshold_schedule_commits_all_above_tau) {
    um_engine *en = open_engine("tiny-llada", 2);
    CHECK(en);
    um_settings s;
    engine_default_settings(en, &s);
    s.n_gen = 16; s.block_len = 8; s.schedule = UM_SCHED_THRESHOLD;
    s.threshold = 0.0f;                 /* every position qualifies: one step per block */
    um_err e;
    CHECK(engine_start(en, "Hi", &s, &e) == UM_OK);
    int n = 0;
    CHECK(run_all(en, &n) == 0);
    CHECK_EQ(n, 2);
    s.threshold = 1.0f;                 /* nothing qualifies: exactly one per step */
    CHECK(engine_start(en, "Hi", &s, &e) == UM_OK);
    CHECK(run_all(en, &n) == 0);
    CHECK_EQ(n, 16);
    engine_close(en);
}

typedef struct warn_log { int n; char last[256]; } warn_log;
static void log_warning(void *ctx, const char *msg) {
    warn_log *w = ctx;
    w->n++;
    snprintf(w->last, sizeof w->last, "%s", msg);
}

/* The context rule (engine.h): past the trained context only when n_ctx raises the limit,
 * then with a warning; past an explicit n_ctx never. tiny-llada is trained for 512. */
TEST(engine_context_rule) {
    warn_log w = { 0 };
    um_engine_opts o = { .model_path = model_path("tiny-llada"), .n_threads = 1, .kernel = -1, .n_ctx = 1000,
                         .warn = log_warning, .warn_ctx = &w };
    um_engine *en = NULL;
    um_err e = { "" };
    CHECK_MSG(o.model_path && engine_open(&en, &o, &e) == UM_OK, "%s", e.msg);
    um_settings s;
    engine_default_settings(en, &s);
    s.steps = 4;
    int32_t ids[2] = { 5, 6 };
    s.n_gen = 510;                                   /* 2 + 510 = 512: inside the trained context */
    CHECK_MSG(engine_start_tokens(en, ids, 2, &s, &e) == UM_OK, "%s", e.msg);
    CHECK_EQ(w.n, 0);
    s.n_gen = 511;                                   /* 513: past it, allowed by n_ctx 1000, warned */
    CHECK_MSG(engine_start_tokens(en, ids, 2, &s, &e) == UM_OK, "%s", e.msg);
    CHECK_EQ(w.n, 1);
    CHECK_STREQ(w.last, "prompt of 2 tokens + 511 to generate = 513 exceeds the model's trained context of 512 "
                        "tokens; running it because --ctx 1000 allows it (expect worse text past it)");
    CHECK(run_all(en, NULL) == 0);                   /* and it runs to the end */
    s.n_gen = 999;                                   /* 1001: past the explicit limit */
    CHECK(engine_start_tokens(en, ids, 2, &s, &e) == UM_FAIL);
    CHECK_STREQ(e.msg, "prompt of 2 tokens + 999 to generate = 1001 exceeds the context of 1000 tokens set by --ctx");
    CHECK_EQ(w.n, 1);
    engine_close(en);
    /* an explicit limit below the trained context: a limit, no warning */
    o.n_ctx = 100;
    CHECK_MSG(engine_open(&en, &o, &e) == UM_OK, "%s", e.msg);
    s.n_gen = 99;
    CHECK(engine_start_tokens(en, ids, 2, &s, &e) == UM_FAIL);
    CHECK_CONTAINS(e.msg, "= 101 exceeds the context of 100 tokens set by --ctx");
    s.n_gen = 98;
    CHECK(engine_start_tokens(en, ids, 2, &s, &e) == UM_OK);
    CHECK_EQ(w.n, 1);
    engine_close(en);
}

TEST(engine_context_and_prompt_errors) {
    um_engine *en = open_engine("tiny-llada", 1);
    CHECK(en);
    um_settings s;
    engine_default_settings(en, &s);
    s.n_gen = 600;                      /* tiny models have a 512-token context */
    um_err e = { "" };
    CHECK(engine_start(en, "Hi", &s, &e) == UM_FAIL);
    CHECK_CONTAINS(e.msg, "exceeds the model's trained context of 512 tokens");
    s.n_gen = 8;
    int32_t bad[2] = { 5, 99999 };
    CHECK(engine_start_tokens(en, bad, 2, &s, &e) == UM_FAIL);
    CHECK_CONTAINS(e.msg, "outside the vocabulary");
    engine_close(en);
}
