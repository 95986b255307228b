/*
 * test_engine: the step API on a random-weight model: determinism per seed (also across
 * thread counts), schedule accounting per step, immutable snapshots, settings changed
 * mid-run, context limits, stop-at-EOS, and logits computed only for the rows in play.
 */
#include <math.h>
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
            /* "-flat": near-uniform logits (tiny weights), so sampling reaches every token */
            bool flat = strstr(shape, "-flat") != NULL;
            char base[64];
            snprintf(base, sizeof base, "%.*s", flat ? (int)(strstr(shape, "-flat") - shape) : 63, shape);
            um_synth_opts o = { .shape = synth_find_shape(base), .type = UM_TYPE_Q8_0, .seed = 3,
                                .init_scale = flat ? 0.01f : 1.0f };
            um_err e;
            if (synth_write(&o, path[i], &e)) { printf("    synth: %s\n", e.msg); return NULL; }
            shapes[i] = shape;
            return path[i];
        }
    }
    return NULL;
}

__attribute__((destructor)) static void cleanup(void) {
    const char *shapes[] = { "tiny-llada", "tiny-dream", "tiny-llada-flat" };
    for (int i = 0; i < 3; i++) {
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

/* ---------------------------------------------------------------- LLaDA 2.x and editing */

/* The block-causal family's defaults, from a faked architecture (no llada2 file needed):
 * LLaDA 2.x generate()'s threshold 0.95 over aligned blocks of the attention's size, the exact
 * prefix cache where the backend runs partial passes, eos_early_stop; editing off. Other
 * families keep theirs, cache off. */
TEST(engine_family_defaults_block_causal) {
    um_settings s;
    engine_family_defaults("llada2", true, 32, true, &s);
    CHECK_EQ(s.schedule, UM_SCHED_THRESHOLD);
    CHECK(fabsf(s.threshold - 0.95f) < 1e-6f);
    CHECK_EQ(s.block_len, 32);
    CHECK(s.block_aligned);
    CHECK_EQ(s.block_steps, 32);
    CHECK_EQ(s.cache, UM_CACHE_PREFIX);
    CHECK_EQ(s.cache_type, UM_KV_F32);
    CHECK(s.eos_early_stop);
    CHECK(!s.edit);
    CHECK(s.temperature == 0.0f);
    engine_family_defaults("llada2", true, 16, false, &s);   /* no partial passes (CUDA): no cache */
    CHECK_EQ(s.cache, UM_CACHE_NONE);
    CHECK_EQ(s.block_len, 16);
    engine_family_defaults("llada", false, 0, true, &s);
    CHECK_EQ(s.schedule, UM_SCHED_BLOCK);
    CHECK_EQ(s.cache, UM_CACHE_NONE);
    CHECK(!s.block_aligned && !s.eos_early_stop && !s.edit);
    engine_family_defaults("dream", false, 0, true, &s);
    CHECK_EQ(s.schedule, UM_SCHED_TIMESTEP);
    CHECK_EQ(s.cache, UM_CACHE_NONE);
}

/* Token editing on a random-weight model with a low edit threshold: every recorded edit
 * replaces a committed, generated token of the active block by another; edits are not
 * commits; post steps commit nothing, follow a filled block, at most post_steps of them, and
 * a post step without an edit ends them. Without editing: no edits, no post steps, and the
 * tokens equal a run whose edit threshold can never be passed. */
TEST(engine_token_editing_records_edits) {
    um_engine *en = open_engine("tiny-llada", 2);
    CHECK(en);
    um_settings s;
    engine_default_settings(en, &s);
    s.n_gen = 24; s.block_len = 8; s.schedule = UM_SCHED_THRESHOLD; s.threshold = 0.3f;
    s.edit = true; s.edit_threshold = 0.0f; s.post_steps = 3;
    um_err e;
    CHECK(engine_start(en, "Hi", &s, &e) == UM_OK);
    um_snapshot *prev = engine_snapshot(en);
    int edits = 0, post_run = 0, r;
    while ((r = engine_step(en, &e)) == 1) {
        um_snapshot *sn = engine_snapshot(en);
        int n_ed = 0;
        for (int i = 0; i < sn->n_canvas; i++) {
            const um_pos *p = &sn->pos[i];
            if (!p->edited) continue;
            n_ed++;
            CHECK(!p->masked && !p->is_prompt && !p->fresh);
            CHECK(!prev->pos[i].masked);                      /* committed before this step */
            CHECK_EQ(p->edit_from, prev->pos[i].token);
            CHECK(p->token != p->edit_from);
            CHECK_EQ(p->edit_step, sn->step);
            CHECK_EQ(p->n_edits, prev->pos[i].n_edits + 1);
            CHECK_EQ(p->commit_step, prev->pos[i].commit_step);   /* an edit is not a commit */
        }
        CHECK_EQ(n_ed, sn->n_edited);
        for (int c = 0; c < sn->n_committed; c++) CHECK(!sn->pos[sn->committed[c]].edited);
        if (sn->post_step) {
            CHECK_EQ(sn->n_committed, 0);
            CHECK(prev->post_step ? prev->n_edited > 0 : prev->n_committed > 0);
            post_run++;
            CHECK(post_run <= s.post_steps);
        } else {
            post_run = 0;
        }
        edits += n_ed;
        snapshot_unref(prev);
        prev = sn;
    }
    CHECK_EQ(r, 0);
    CHECK_MSG(edits > 0, "no edit at edit threshold 0");
    snapshot_unref(prev);
    /* editing off and editing that never passes its threshold: the same tokens */
    int32_t a[64], b[64];
    int na, nb, steps_off, steps_on;
    s.edit = false;
    CHECK(engine_start(en, "Hi", &s, &e) == UM_OK);
    CHECK(run_all(en, &steps_off) == 0);
    final_tokens(en, a, &na);
    s.edit = true; s.edit_threshold = 1.0f;                  /* p > 1 never holds */
    CHECK(engine_start(en, "Hi", &s, &e) == UM_OK);
    CHECK(run_all(en, &steps_on) == 0);
    final_tokens(en, b, &nb);
    CHECK_EQ(na, nb);
    CHECK(memcmp(a, b, (size_t)na * sizeof a[0]) == 0);
    CHECK_EQ(steps_on, steps_off + 3);                       /* one edit-free post step per block */
    engine_close(en);
}

/* Aligned blocks commit in order: every step commits inside one block, block b is full before
 * any position of b+1 commits, and the first block ends at the first multiple of the block
 * length after the prompt. With the LLaDA 2.0 quota (block_steps 2 over blocks of 8), a step
 * commits at least 4 until the block is full. */
TEST(engine_aligned_blocks_commit_in_order) {
    um_engine *en = open_engine("tiny-llada", 2);
    CHECK(en);
    um_settings s;
    engine_default_settings(en, &s);
    s.n_gen = 30; s.block_len = 8; s.schedule = UM_SCHED_THRESHOLD; s.threshold = 0.95f;
    s.block_aligned = true; s.block_steps = 2;
    um_err e;
    CHECK(engine_start(en, "Hello there", &s, &e) == UM_OK);
    um_snapshot *s0 = engine_snapshot(en);
    const int np = s0->n_prompt, T = s0->n_canvas;
    snapshot_unref(s0);
    CHECK(np % 8 != 0);                                      /* the test needs a partial first block */
    int last_block = -1, r;
    while ((r = engine_step(en, &e)) == 1) {
        um_snapshot *sn = engine_snapshot(en);
        CHECK(sn->n_committed > 0);
        int b = sn->committed[0] / 8;                         /* aligned: block = position / 8 */
        for (int c = 0; c < sn->n_committed; c++) CHECK_EQ(sn->committed[c] / 8, b);
        CHECK(b >= last_block);
        for (int i = np; i < T && i < b * 8; i++) CHECK(!sn->pos[i].masked);   /* earlier blocks full */
        int left = 0;
        for (int i = UM_MAX(np, b * 8); i < UM_MIN(T, b * 8 + 8); i++) left += sn->pos[i].masked;
        if (b == np / 8 && last_block < b) CHECK(sn->committed[sn->n_committed - 1] < (np / 8 + 1) * 8);
        if (left > 0) CHECK(sn->n_committed >= 4);            /* the quota: 8 / 2 per step */
        last_block = b;
        snapshot_unref(sn);
    }
    CHECK_EQ(r, 0);
    CHECK_EQ(last_block, (T - 1) / 8);
    engine_close(en);
}

/* eos_early_stop: find a seed whose sampled run commits an end-of-text token, then the run
 * stops at the first step where everything before the first one is committed; every mask left
 * becomes end-of-text at that step. */
TEST(engine_eos_early_stop) {
    um_engine *en = open_engine("tiny-llada-flat", 2);
    CHECK(en);
    um_engine_info info;
    engine_get_info(en, &info);
    um_settings s;
    engine_default_settings(en, &s);
    s.n_gen = 32; s.block_len = 8; s.schedule = UM_SCHED_THRESHOLD; s.threshold = 0.5f;
    s.temperature = 1.0f; s.block_aligned = true; s.eos_early_stop = true;
    um_err e;
    bool found = false;
    uint64_t found_seed = 0;
    int found_step = 0;
    for (uint64_t seed = 1; seed <= 200 && !found; seed++) {
        s.seed = seed;
        CHECK(engine_start(en, "Hi", &s, &e) == UM_OK);
        um_snapshot *prev = engine_snapshot(en);
        int r;
        while ((r = engine_step(en, &e)) == 1) {
            um_snapshot *sn = engine_snapshot(en);
            int first = -1;
            bool before_done = true;
            for (int i = sn->n_prompt; i < sn->n_canvas && first < 0; i++) {
                if (!sn->pos[i].masked && engine_token_is_eog(en, sn->pos[i].token)) first = i;
                else if (sn->pos[i].masked) before_done = false;
            }
            /* the stop happens exactly at the first step where the rule holds */
            bool rule = first >= 0 && before_done;
            int prev_masks = prev->masks_left;
            if (rule) {
                if (!found && prev_masks > sn->n_committed) { found_seed = s.seed; found_step = sn->step; }
                found = found || prev_masks > sn->n_committed;   /* it cut the run short */
                CHECK(sn->done);
                CHECK_EQ(sn->masks_left, 0);
                for (int i = first + 1; i < sn->n_canvas; i++)
                    if (prev->pos[i].masked && !sn->pos[i].fresh) CHECK_EQ(sn->pos[i].token, info.eos_id);
            }
            snapshot_unref(prev);
            prev = sn;
            if (rule) break;
        }
        snapshot_unref(prev);
        CHECK(r >= 0);
    }
    CHECK_MSG(found, "no seed in 1..200 made an early stop (eos id %d)", info.eos_id);
    /* and without the rule the same seed runs on past that step */
    s.seed = found_seed;
    s.eos_early_stop = false;
    int steps = 0;
    CHECK(engine_start(en, "Hi", &s, &e) == UM_OK);
    CHECK(run_all(en, &steps) == 0);
    CHECK_MSG(steps > found_step, "seed %llu: %d steps without the rule, stopped at %d with it",
              (unsigned long long)found_seed, steps, found_step);
    engine_close(en);
}

/* Block-causal attention (LLaDA 2.x): the family's default prefix cache is exact, so the
 * cached run equals the uncached one token for token, with and without editing, and blocks
 * commit in order. Needs the tiny-llada2 synth shape (the llada2 architecture); skipped
 * where this build has none. */
TEST(engine_block_causal_prefix_cache_is_exact) {
    if (!synth_find_shape("tiny-llada2")) { th_skip("no tiny-llada2 shape in this build"); return; }
    um_engine *en = open_engine("tiny-llada2", 2);
    CHECK(en);
    um_settings s;
    engine_default_settings(en, &s);
    CHECK(s.block_aligned);
    CHECK_EQ(s.cache, UM_CACHE_PREFIX);
    s.n_gen = 40;
    s.eos_early_stop = false;
    um_err e;
    for (int edit = 0; edit < 2; edit++) {
        s.edit = edit;
        s.edit_threshold = 0.2f;
        int32_t a[128], b[128];
        int na, nb, sa, sb;
        s.cache = UM_CACHE_PREFIX;
        CHECK_MSG(engine_start(en, "Hello there", &s, &e) == UM_OK, "%s", e.msg);
        CHECK(run_all(en, &sa) == 0);
        final_tokens(en, a, &na);
        CHECK(engine_rows_computed(en) < (int64_t)sa * na);  /* the cache did save rows */
        s.cache = UM_CACHE_NONE;
        CHECK(engine_start(en, "Hello there", &s, &e) == UM_OK);
        CHECK(run_all(en, &sb) == 0);
        final_tokens(en, b, &nb);
        CHECK_EQ(sa, sb);
        CHECK_EQ(na, nb);
        CHECK_MSG(memcmp(a, b, (size_t)na * sizeof a[0]) == 0, "edit %d: cached and uncached runs differ", edit);
    }
    engine_close(en);
}
