/*
 * test_ui_why: "why did this token commit, now?" end to end: schedule_explain's numbers for
 * each rule (expected values worked out by hand from the rule's definition in schedule.h),
 * the engine keeping them per position and viewing the next block without changing what
 * commits, the inspector's sentence for each rule, its candidate labels, the schedule's
 * parameters and the mark where the rule changed mid-run.
 */
#include <math.h>
#include <stdlib.h>
#include <unistd.h>

#include "engine.h"
#include "harness.h"
#include "panels.h"
#include "quant.h"
#include "schedule.h"
#include "snapshot.h"
#include "synth.h"
#include "view.h"

/* ------------------------------------------------------------------ schedule_explain */

/* Five eligible positions 10..14 with these scores and entropies. */
static int32_t select_five(const um_settings *s, const um_plan *plan, um_scored *it, um_why *why) {
    static const float score[5] = { 0.30f, 0.95f, 0.80f, 0.92f, 0.10f };
    static const float ent[5]   = { 0.70f, 0.05f, 0.20f, 0.10f, 2.00f };
    for (int i = 0; i < 5; i++) it[i] = (um_scored){ .pos = 10 + i, .score = score[i], .entropy = ent[i] };
    int32_t k = schedule_select(s, plan, 0, it, 5);
    schedule_explain(s, plan, it, 5, k, why);
    return k;
}

static const um_why *why_of(const um_scored *it, const um_why *why, int32_t k, int32_t pos) {
    for (int32_t c = 0; c < k; c++) if (it[c].pos == pos) return &why[c];
    return NULL;
}

TEST(ui_why_schedule_explain_per_rule) {
    um_settings s = { .n_gen = 5, .steps = 5, .threshold = 0.9f, .factor = 1.0f, .eb_gamma = 0.2f };
    um_plan plan = { .n_blocks = 2, .block = 1, .start = 10, .end = 15, .masks_left = 5, .steps_left = 3, .count = 2 };
    um_scored it[5];
    um_why why[5];

    /* block schedule, confidence: the 2 best (positions 11 at 0.95 and 13 at 0.92) */
    s.schedule = UM_SCHED_BLOCK;
    int32_t k = select_five(&s, &plan, it, why);
    CHECK_EQ(k, 2);
    const um_why *w = why_of(it, why, k, 13);
    CHECK(w != NULL);
    if (w) {
        CHECK_EQ(w->rule, UM_WHY_COUNT);
        CHECK_EQ(w->rank, 2);                     /* 0.92 is second after 0.95 */
        CHECK_EQ(w->n_elig, 5);
        CHECK_EQ(w->count, 2);
        CHECK_EQ(w->block, 1);
        CHECK(fabsf(w->score - 0.92f) < 1e-6f);
    }

    /* threshold 0.9 with a least count of 3: 11 and 13 pass, 12 (0.80) commits by the quota */
    s.schedule = UM_SCHED_THRESHOLD;
    plan.count = 3;
    k = select_five(&s, &plan, it, why);
    CHECK_EQ(k, 3);
    w = why_of(it, why, k, 11);
    CHECK(w && w->rule == UM_WHY_THRESHOLD && w->rank == 1 && fabsf(w->bound - 0.9f) < 1e-6f);
    w = why_of(it, why, k, 12);
    CHECK(w && w->rule == UM_WHY_QUOTA && w->rank == 3 && w->count == 3);

    /* factor 1: the n-th best needs >= 1 - 1/(n+1): 0.95 >= 0.5, 0.92 >= 0.667, 0.80 >= 0.75,
     * 0.30 < 0.8: three commit; the third's bound is 1 - 1/4 = 0.75 */
    s.schedule = UM_SCHED_FACTOR;
    k = select_five(&s, &plan, it, why);
    CHECK_EQ(k, 3);
    w = why_of(it, why, k, 12);
    CHECK(w && w->rule == UM_WHY_FACTOR && w->rank == 3 && fabsf(w->bound - 0.75f) < 1e-6f);

    /* eb, gamma 0.2: entropies ascending 0.05, 0.10, 0.20, 0.70: sums 0.05, 0.15 (<= 0.2),
     * 0.35 (> 0.2, stop): the first three commit, their sum without the largest 0.15 */
    s.schedule = UM_SCHED_EB;
    k = select_five(&s, &plan, it, why);
    CHECK_EQ(k, 3);
    w = why_of(it, why, k, 12);
    CHECK(w && w->rule == UM_WHY_EB && w->rank == 3);
    if (w) {
        CHECK(fabsf(w->value - 0.15f) < 1e-6f);
        CHECK(fabsf(w->bound - 0.2f) < 1e-6f);
        CHECK(fabsf(w->score - 0.20f) < 1e-6f);   /* eb's score is the entropy */
        CHECK_EQ(w->committed, 3);
    }
}

/* ------------------------------------------------------------------ engine */

static char model_file[256];

static const char *tiny_model(void) {
    if (model_file[0]) return model_file;
    snprintf(model_file, sizeof model_file, "/tmp/unmask-why-%d.gguf", (int)getpid());
    um_synth_opts o = { .shape = synth_find_shape("tiny-llada"), .type = UM_TYPE_Q8_0, .seed = 3, .init_scale = 1.0f };
    um_err e;
    if (synth_write(&o, model_file, &e)) { printf("    synth: %s\n", e.msg); model_file[0] = 0; return NULL; }
    return model_file;
}

__attribute__((destructor)) static void cleanup(void) {
    if (model_file[0]) unlink(model_file);
}

/* Run the block schedule to the end; tokens[] gets the final canvas; with view_ahead, checks
 * that after step 1 the next block's first position and the canvas's last have candidates
 * computed at step 1. */
static int run_blocks(bool view_ahead, int32_t *tokens, int32_t *n, bool *next_viewed, bool *why_ok) {
    um_engine_opts o = { .model_path = tiny_model(), .n_threads = 2, .kernel = -1, .view_ahead = view_ahead };
    um_engine *en = NULL;
    um_err e;
    if (!o.model_path || engine_open(&en, &o, &e)) return UM_FAIL;
    um_settings s;
    engine_default_settings(en, &s);
    s.n_gen = 24; s.steps = 12; s.block_len = 8; s.schedule = UM_SCHED_BLOCK;
    if (engine_start(en, "Hi", &s, &e)) { engine_close(en); return UM_FAIL; }
    *next_viewed = false;
    *why_ok = true;
    int r, step = 0;
    while ((r = engine_step(en, &e)) == 1) {
        um_snapshot *sn = engine_snapshot(en);
        step++;
        int32_t next = sn->n_prompt + 8;                /* the first position of block 2 */
        int32_t last = sn->n_canvas - 1;                /* the last position, in block 3 */
        if (step == 1)
            *next_viewed = sn->pos[next].has_view && sn->pos[next].view_step == 1 && sn->pos[next].masked &&
                           sn->pos[last].has_view && sn->pos[last].view_step == 1 && sn->pos[last].masked;
        for (int32_t c = 0; c < sn->n_committed; c++) {
            const um_pos *p = &sn->pos[sn->committed[c]];
            /* two commits a step out of 8 - 2 (step - 1 % 4) masks left in the block */
            *why_ok &= p->why.rule == UM_WHY_COUNT && p->why.rank >= 1 && p->why.rank <= p->why.count &&
                       p->why.count == 2 && p->why.n_elig == 8 - 2 * ((step - 1) % 4) && p->view_step == step;
        }
        snapshot_unref(sn);
    }
    um_snapshot *sn = engine_snapshot(en);
    *n = sn->n_canvas;
    for (int32_t i = 0; i < sn->n_canvas; i++) tokens[i] = sn->pos[i].token;
    snapshot_unref(sn);
    engine_close(en);
    return r < 0 ? UM_FAIL : UM_OK;
}

TEST(ui_why_engine_keeps_why_and_views_the_next_block) {
    int32_t with[64], without[64], n1 = 0, n2 = 0;
    bool viewed, viewed_off, why1, why2;
    CHECK(run_blocks(true, with, &n1, &viewed, &why1) == UM_OK);
    CHECK(run_blocks(false, without, &n2, &viewed_off, &why2) == UM_OK);
    CHECK(viewed);                 /* view_ahead: every later mask has candidates at step 1 */
    CHECK(!viewed_off);            /* without it, none (the engine scores only the active block) */
    CHECK(why1 && why2);
    CHECK_EQ(n1, n2);
    for (int32_t i = 0; i < n1 && i < 64; i++) CHECK_EQ(with[i], without[i]);   /* viewing changes nothing */
}

/* ------------------------------------------------------------------ the inspector */

static size_t piece(void *self, int32_t t, char *buf, size_t cap) {
    (void)self;
    static const char *const words[] = { "<m>", "cat", "dog", "sat" };
    size_t n = t >= 0 && t < 4 ? strlen(words[t]) : 0;
    if (n > cap) n = cap;
    memcpy(buf, words[t], n);
    return n;
}

static ui_source src = { .info = { .arch = "t", .name = "unit", .quant = "q", .backend = "cpu", .isa = "x", .n_threads = 1 },
                         .piece = piece };

/* hist[0..3): steps 0, 1, 2 over a canvas of 2 prompt + 4 generated positions. Position 2
 * commits "cat" at step 1 (as given in w), 3 "dog" at step 2; 4 and 5 stay masked, 4 with
 * candidates at every step, 5 with none. */
static void make_hist(um_snapshot **h, um_why w, um_settings se) {
    for (int k = 0; k < 3; k++) {
        um_snapshot *s = snapshot_new(6, 1);
        s->step = k;
        s->n_steps = 4;
        s->n_prompt = 2;
        s->n_canvas = 6;
        s->n_blocks = 2;
        s->settings = se;
        for (int32_t i = 0; i < 6; i++) {
            um_pos *p = &s->pos[i];
            p->is_prompt = i < 2;
            p->token = i < 2 ? 3 : 0;
            p->masked = i >= 2;
            p->commit_step = -1;
        }
        um_pos *p = &s->pos[2];
        p->has_view = k >= 1;
        p->view_step = 1;
        p->top[0] = (um_cand){ 1, 0.93f };
        p->top[1] = (um_cand){ 2, 0.05f };
        if (k >= 1) { p->masked = false; p->token = 1; p->commit_step = 1; p->commit_conf = 0.93f; p->why = w; }
        p = &s->pos[3];
        p->has_view = true;
        p->view_step = k;
        p->top[0] = (um_cand){ 2, 0.61f };
        if (k >= 2) { p->masked = false; p->token = 2; p->commit_step = 2; p->commit_conf = 0.61f;
                      p->why = (um_why){ .rule = UM_WHY_COUNT, .rank = 1, .n_elig = 3, .count = 1 }; }
        p = &s->pos[4];
        p->has_view = true;
        p->view_step = k;
        p->top[0] = (um_cand){ 3, 0.40f };
        s->masks_left = 4 - (k >= 1) - (k >= 2);
        h[k] = s;
    }
}

static void free_hist(um_snapshot **h) { for (int k = 0; k < 3; k++) snapshot_unref(h[k]); }

static void why_text(um_why w, um_settings se, char *buf, size_t cap) {
    um_snapshot *h[3];
    make_hist(h, w, se);
    theme th;
    theme_builtin(&th);
    view_state v = { .src = &src, .hist = h, .n_hist = 3, .shown = 2, .th = &th, .depth = 256, .cursor = 2 };
    panel_why(&v, h[2], 2, buf, cap);
    free_hist(h);
}

TEST(ui_why_sentence_per_rule) {
    char b[640];
    um_settings se = { .n_gen = 4, .steps = 4, .threshold = 0.9f, .factor = 1.0f, .eb_gamma = 0.5f };
    se.schedule = UM_SCHED_BLOCK;
    why_text((um_why){ .rule = UM_WHY_COUNT, .rank = 2, .n_elig = 31, .count = 2, .block = 0, .score = 0.93f }, se, b, sizeof b);
    CHECK_STREQ(b, "rank 2 of 31 masked in block 1, quota 2 this step (p 0.93)");
    why_text((um_why){ .rule = UM_WHY_COUNT, .rank = 1, .n_elig = 2, .count = 2 }, se, b, sizeof b);
    CHECK_STREQ(b, "all 2 masks left commit: the block's last step");
    se.schedule = UM_SCHED_THRESHOLD;
    why_text((um_why){ .rule = UM_WHY_THRESHOLD, .rank = 1, .n_elig = 4, .count = 1, .score = 0.93f, .bound = 0.9f }, se, b, sizeof b);
    CHECK_STREQ(b, "p 0.93 >= threshold 0.90 (rank 1 of 4 masked in block 1)");
    why_text((um_why){ .rule = UM_WHY_QUOTA, .rank = 1, .n_elig = 4, .count = 1, .score = 0.41f, .bound = 0.9f }, se, b, sizeof b);
    CHECK_STREQ(b, "p 0.41 < threshold 0.90, but rank 1 of 4 masked in block 1 and the step commits at least 1");
    se.schedule = UM_SCHED_FACTOR;
    why_text((um_why){ .rule = UM_WHY_FACTOR, .rank = 3, .n_elig = 5, .count = 1, .score = 0.8f, .bound = 0.75f }, se, b, sizeof b);
    CHECK_STREQ(b, "p 0.80 >= 1 - factor 1.00/(rank+1) = 0.75 (rank 3 of 5 masked in block 1)");
    se.schedule = UM_SCHED_EB;
    why_text((um_why){ .rule = UM_WHY_EB, .rank = 2, .n_elig = 5, .committed = 3, .score = 0.1f, .bound = 0.5f, .value = 0.41f },
             se, b, sizeof b);
    CHECK_STREQ(b, "entropy sum 0.41 <= gamma 0.50 (its H 0.10, rank 2 of 5 masked in block 1; 3 committed)");
    why_text((um_why){ .rule = UM_WHY_EOS }, se, b, sizeof b);
    CHECK_STREQ(b, "end of text: filled when the run stopped at one");
    /* temperature: the committed "cat" is the view's top, so only the temperature is named;
     * guidance is named when it was on at the commit step */
    se.schedule = UM_SCHED_BLOCK;
    se.temperature = 0.7f;
    se.cfg = 1.5f;
    why_text((um_why){ .rule = UM_WHY_COUNT, .rank = 1, .n_elig = 4, .count = 1, .score = 0.93f }, se, b, sizeof b);
    CHECK_STREQ(b, "rank 1 of 4 masked in block 1, quota 1 this step (p 0.93); sampled at T 0.70; "
                   "guidance cfg 1.50 shaped these probabilities");
}

static const char *find_row(const frame *f, const char *needle) {
    static char buf[4096];
    for (int y = 0; y < f->h; y++) {
        frame_row_text(f, y, buf, sizeof buf);
        if (strstr(buf, needle)) return buf;
    }
    return NULL;
}

TEST(ui_why_inspector_labels_and_schedule_params) {
    um_snapshot *h[3];
    um_settings se = { .n_gen = 4, .steps = 4, .block_len = 2, .threshold = 0.9f, .schedule = UM_SCHED_THRESHOLD };
    make_hist(h, (um_why){ .rule = UM_WHY_THRESHOLD, .rank = 1, .n_elig = 2, .count = 1, .score = 0.93f, .bound = 0.9f }, se);
    h[2]->settings.schedule = UM_SCHED_EB;         /* switched at step 2 */
    h[2]->settings.eb_gamma = 0.25f;
    theme th;
    theme_builtin(&th);
    frame f = { 0 };
    view_ctx c = { 0 };
    um_err e = { "" };
    CHECK(frame_init(&f, 120, 40, &e) == UM_OK);
    view_state v = { .src = &src, .hist = h, .n_hist = 3, .shown = 2, .th = &th, .depth = 256, .cursor = 2 };
    CHECK(view_build(&c, &f, &v, &e) == UM_OK);
    CHECK(find_row(&f, "top-8 at commit, step 1") != NULL);           /* committed: its view at commit */
    CHECK(find_row(&f, "p 0.93 >= threshold 0.90") != NULL);
    v.cursor = 4;                                                    /* masked: the shown step's view */
    CHECK(view_build(&c, &f, &v, &e) == UM_OK);
    CHECK(find_row(&f, "top-8 at the shown step 2") != NULL);
    CHECK(find_row(&f, "sat") != NULL);
    v.cursor = 5;                                                    /* masked, never viewed: a reason */
    CHECK(view_build(&c, &f, &v, &e) == UM_OK);
    CHECK(find_row(&f, "no candidates: this step") != NULL);
    CHECK(find_row(&f, "K/V cache") == NULL);
    h[2]->pos[5].cached = true;                                      /* a cached pass skipped it */
    CHECK(view_build(&c, &f, &v, &e) == UM_OK);
    CHECK(find_row(&f, "no candidates yet: this cached") != NULL);
    h[2]->pos[5].cached = false;
    /* the schedule's parameters, and the switch at step 2 in the text and as a ╎ in the chart */
    CHECK(find_row(&f, "gamma 0.25") != NULL);
    CHECK(find_row(&f, "step 2: threshold -> eb") != NULL);
    CHECK(find_row(&f, "\xE2\x95\x8E") != NULL);
    v.shown = 1;                                                     /* before the switch: no text */
    v.cursor = 2;
    CHECK(view_build(&c, &f, &v, &e) == UM_OK);
    CHECK(find_row(&f, "threshold 0.90") != NULL);
    CHECK(find_row(&f, "threshold -> eb") == NULL);
    char p[128];
    panel_schedule_params(&h[1]->settings, 34, p, sizeof p);          /* 14 + 3 + 7 + 3 + 7 columns */
    CHECK_STREQ(p, "threshold 0.90 \xC2\xB7 block 2 \xC2\xB7 quota 1");
    panel_schedule_params(&h[1]->settings, 33, p, sizeof p);           /* whole fields only */
    CHECK_STREQ(p, "threshold 0.90 \xC2\xB7 block 2");
    frame_free(&f);
    view_ctx_free(&c);
    free_hist(h);
}
