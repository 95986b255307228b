/*
 * test_uniform: uniform-state decoding (DiffusionGemma, issue 28): the prompt's K/V stored once
 * and reused by canvas passes against the full pass; one sampler step worked by hand with a
 * fixed random stream (the expected values computed here in double from the rule in
 * docs/decoding.md, never by the code under test); the block cut; and a whole decode through the
 * engine with the prompt cache equal, token for token and step for step, to the one without.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine.h"
#include "forward.h"
#include "harness.h"
#include "model.h"
#include "pool.h"
#include "quant.h"
#include "sampler.h"
#include "schedule.h"
#include "snapshot.h"
#include "synth.h"

static int make_model(const char *shape, char *path, size_t cap) {
    snprintf(path, cap, "/tmp/unmask-test-uniform-%d-%s.gguf", (int)getpid(), shape);
    um_synth_opts o = { .shape = synth_find_shape(shape), .type = UM_TYPE_F32, .seed = 7, .init_scale = 1.0f };
    um_err e;
    if (!o.shape || synth_write(&o, path, &e)) { printf("    synth: %s\n", e.msg); return -1; }
    return 0;
}

/* ------------------------------------------------------------------ prompt K/V */

/* A canvas pass over the stored prompt K/V gives the full pass's canvas logits bit for bit
 * (every op computes a row on its own), with and without self-conditioning, prompts shorter
 * and longer than the window (8); the store refuses a prompt it does not hold. */
static void prompt_cache_case(bool reference) {
    char path[256];
    if (make_model("tiny-diffusion-gemma", path, sizeof path)) { th_fail(__FILE__, __LINE__, "synth"); return; }
    um_err e = { "" };
    um_model *m = NULL;
    int rc = model_open(&m, path, &e);
    unlink(path);
    CHECK_MSG(rc == UM_OK, "%s", e.msg);
    if (rc) return;
    const int V = m->hp.n_vocab, C = m->hp.canvas_length, PMAX = 13, TMAX = PMAX + C;
    int32_t tok[64], rows[64];
    float *full = malloc(sizeof(float) * C * V), *cached = malloc(sizeof(float) * C * V);
    float *prev = malloc(sizeof(float) * C * V);
    for (int i = 0; i < C * V; i++) prev[i] = (float)((i * 2654435761u) % 997) / 90.0f;
    um_pool *pool = reference ? NULL : pool_new(2);
    um_forward *f = NULL;
    um_forward_opts fo = { .max_tokens = TMAX, .kernel = UM_KERNEL_AUTO, .reference = reference };
    rc = forward_new(&f, m, pool, &fo, &e);
    int differ = 0, cases = 0;
    const int prompts[] = { 3, 13 };
    for (int pi = 0; !rc && pi < 2; pi++) {
        const int P = prompts[pi], T = P + C;
        for (int i = 0; i < T; i++) tok[i] = (i * 131 + 17 + P) % V;
        for (int i = 0; i < C; i++) rows[i] = P + i;
        for (int sc = 0; !rc && sc < 2; sc++) {
            um_selfcond s = { .logits = sc ? prev : NULL, .temp = 0.7f, .mode = UM_SC_EXACT };
            rc = forward_run_dg(f, tok, T, P, &s, rows, C, full, &e);
            if (!rc && sc == 0) rc = forward_dg_prompt(f, tok, P, &e);
            /* the canvas may change between canvas passes: the prompt's K/V stay valid */
            if (!rc) rc = forward_run_dg_cached(f, tok, T, P, &s, rows, C, cached, &e);
            for (int i = 0; !rc && i < C * V; i++) differ += full[i] != cached[i];
            cases++;
        }
        tok[P + 2] = (tok[P + 2] + 5) % V;
        if (!rc) rc = forward_run_dg(f, tok, T, P, NULL, rows, C, full, &e);
        if (!rc) rc = forward_run_dg_cached(f, tok, T, P, NULL, rows, C, cached, &e);
        for (int i = 0; !rc && i < C * V; i++) differ += full[i] != cached[i];
    }
    CHECK_MSG(rc == UM_OK, "%s", e.msg);
    CHECK_MSG(cases == 4 && differ == 0, "%d logits differ between the cached and the full pass", differ);
    CHECK(forward_dg_prompt_bytes(f) > 0);
    /* another prompt than the stored one, and a prompt row asked of a canvas pass */
    um_err e2 = { "" }, e3 = { "" };
    tok[0] = (tok[0] + 1) % V;
    CHECK(!rc && forward_run_dg_cached(f, tok, 13 + C, 13, NULL, rows, C, cached, &e2) != UM_OK);
    CHECK_CONTAINS(e2.msg, "another prompt");
    tok[0] = (tok[0] + V - 1) % V;
    rows[0] = 2;
    CHECK(!rc && forward_run_dg_cached(f, tok, 13 + C, 13, NULL, rows, C, cached, &e3) != UM_OK);
    CHECK_CONTAINS(e3.msg, "prompt row");
    free(full); free(cached); free(prev);
    forward_free(f);
    pool_free(pool);
    model_close(m);
}

TEST(uniform_prompt_cache_equals_full_pass)           { prompt_cache_case(false); }
TEST(uniform_prompt_cache_equals_full_pass_reference) { prompt_cache_case(true); }

/* ------------------------------------------------------------------ one step by hand */

/* Four positions, five tokens, t = 0.5, rows whose tempered distributions have entropies in
 * closed form: one finite logit (H = 0); two equal (H = ln 2); p = (3/4, 1/4) (logits apart by
 * t ln 3: H = -(3/4 ln 3/4 + 1/4 ln 1/4)); four equal (H = ln 4). The stream is fixed (seed 9,
 * step 3): each sample is the first token whose cumulative probability reaches the position's
 * uniform, worked here from the probabilities above; the acceptance follows the bound by hand:
 * ordered 0, ln(4/3)-ish, ln 2, ln 4, the sums before them are 0, 0, 0.5623, 1.2555. */
TEST(uniform_one_step_by_hand) {
    const int V = 5;
    const float t = 0.5f, NI = -INFINITY;
    const double l3 = 0.5 * log(3.0);
    const float rows[4][5] = {
        { NI, NI, 1.0f, NI, NI },
        { 2.0f, 2.0f, NI, NI, NI },
        { NI, NI, NI, 1.0f + (float)l3, 1.0f },
        { 0.5f, NAN, 0.5f, 0.5f, 0.5f },
    };
    const double H[4] = { 0.0, log(2.0), -(0.75 * log(0.75) + 0.25 * log(0.25)), log(4.0) };
    const double P[4][5] = { { 0, 0, 1, 0, 0 }, { .5, .5, 0, 0, 0 }, { 0, 0, 0, .75, .25 }, { .25, 0, .25, .25, .25 } };
    const uint64_t seed = 9;
    const int64_t step = 3;
    um_settings s = { .temperature = t, .top_p = 1.0f, .seed = seed, .schedule = UM_SCHED_UNIFORM };
    um_sample_ws *ws = sampler_ws_new(V);
    um_pick pk[4];
    um_scored it[4];
    um_err e = { "" };
    for (int i = 0; i < 4; i++) {
        CHECK_MSG(sampler_pick(rows[i], V, -1, &s, step, 10 + i, ws, &pk[i], &e) == UM_OK, "%s", e.msg);
        double u = sampler_uniform_at(seed, step, 10 + i, UM_RNG_TOKEN), cum = 0;
        int want = -1;
        for (int v = 0; v < V && want < 0; v++) { cum += P[i][v]; if (P[i][v] > 0 && cum >= u) want = v; }
        CHECK_MSG(pk[i].token == want, "position %d: sample %d, by hand %d (u %.4f)", i, pk[i].token, want, u);
        CHECK_NEAR(-pk[i].neg_entropy, H[i], 1e-5);
        it[i] = (um_scored){ .pos = 10 + i, .score = pk[i].neg_entropy, .entropy = -pk[i].neg_entropy };
    }
    CHECK_EQ(pk[0].top[0].token, 2);
    CHECK_EQ(pk[1].top[0].token, 0);                 /* a tie: the lower id */
    CHECK_EQ(pk[2].top[0].token, 3);
    CHECK_EQ(pk[3].top[0].token, 0);
    um_plan plan = { .entropy_bound = 0.6f, .count = 1 };
    um_scored a[4];
    memcpy(a, it, sizeof a);
    int32_t k = schedule_select(&s, &plan, step, a, 4);
    CHECK_EQ(k, 3);                                  /* 0 + 0 + 0.5623 <= 0.6 < 1.2555 */
    CHECK(k == 3 && a[0].pos == 10 && a[1].pos == 11 && a[2].pos == 12);
    plan.entropy_bound = 0.5f;                       /* 0.5623 > 0.5: position 11 (ln 2) is out */
    memcpy(a, it, sizeof a);
    k = schedule_select(&s, &plan, step, a, 4);
    CHECK(k == 2 && a[0].pos == 10 && a[1].pos == 12);
    plan.entropy_bound = 0.0f;                       /* the lowest is always accepted (0 <= 0), and so is
                                                        the next when the first is exactly 0 */
    memcpy(a, it, sizeof a);
    k = schedule_select(&s, &plan, step, a, 4);
    CHECK(k == 2 && a[0].pos == 10 && a[1].pos == 12);
    /* a renoised position's token: floor(u V) from its NOISE stream */
    double un = sampler_uniform_at(seed, step, 13, UM_RNG_NOISE);
    CHECK_EQ(sampler_token_at(seed, step, 13, UM_RNG_NOISE, V), (int32_t)floor(un * V));
    sampler_ws_free(ws);
}

/* The temperature schedule, self-conditioning's switch and the stop rule over a canvas of
 * S = 4 steps: t = 0.4 + 0.4 s / 4 for s = 4..1; a stop needs the argmax unchanged for
 * `stability` steps running and the mean entropy under the threshold; out of steps stops too. */
TEST(uniform_schedule_steps_and_stop_by_hand) {
    um_settings s = { .schedule = UM_SCHED_UNIFORM, .steps = 4, .us_canvas = 8, .us_t_min = 0.4f, .us_t_max = 0.8f,
                      .us_bound = 0.1f, .us_stability = 2, .us_confidence = 0.01f, .us_self_cond = true };
    um_us_state st;
    um_err e = { "" };
    CHECK(schedule_us_start(&st, &s, 20, &e) == UM_OK);
    CHECK_EQ(st.n_blocks, 3);                        /* ceil(20 / 8) */
    um_plan p;
    const double t_want[4] = { 0.8, 0.7, 0.6, 0.5 };
    const bool same[4] = { true, true, true, false }; /* step 0's "same" never counts */
    const double ent[4] = { 0.5, 0.001, 0.001, 0.001 };
    const bool stop_want[4] = { false, false, true, true };
    for (int k = 0; k < 3; k++) {
        schedule_us_plan(&st, &s, 5, &p);
        CHECK_NEAR(p.temperature, t_want[k], 1e-6);
        CHECK(p.start == 5 && p.end == 13 && p.us_step == k);
        CHECK_NEAR(p.sc_temp, k == 0 ? 0.0 : t_want[k - 1], 1e-6);   /* off first, then the last t */
        bool stop = schedule_us_after(&st, &s, &p, same[k], ent[k], 1);
        CHECK_MSG(stop == stop_want[k], "step %d: stop %d", k, stop);
    }
    CHECK(st.stable && st.held == 2);
    schedule_us_next(&st, 8, 8);                     /* nothing cut: the next canvas, fresh state */
    CHECK(!st.done && st.block == 1 && st.step == 0 && st.held == 0);
    schedule_us_plan(&st, &s, 5, &p);
    CHECK(p.start == 13 && p.end == 21 && p.sc_temp == 0.0f);
    for (int k = 0; k < 4; k++) {                    /* never stable: out of steps after 4 */
        schedule_us_plan(&st, &s, 5, &p);
        bool stop = schedule_us_after(&st, &s, &p, false, 1.0, 1);
        CHECK(stop == (k == 3));
    }
    CHECK(!st.stable);
    schedule_us_next(&st, 3, 8);                     /* cut: the run is over */
    CHECK(st.done);
    schedule_us_plan(&st, &s, 5, &p);
    CHECK(p.done);
    s.us_self_cond = false;
    CHECK(schedule_us_start(&st, &s, 8, &e) == UM_OK);
    schedule_us_after(&st, &s, &p, false, 1.0, 1);
    schedule_us_plan(&st, &s, 5, &p);
    CHECK(p.sc_temp == 0.0f);
    s.us_canvas = 0;
    CHECK(schedule_us_start(&st, &s, 8, &e) != UM_OK);
}

/* The cut: the first end of generation, or where a token starts repeating at stride 1 or 2
 * for 6 or more positions running (llama.cpp diffusion-cli trim_canvas), whichever is first. */
TEST(uniform_cut_by_hand) {
    bool eog[16] = { false };
    const int32_t plain[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
    CHECK_EQ(schedule_us_cut(plain, eog, 8), 8);
    eog[5] = true;
    CHECK_EQ(schedule_us_cut(plain, eog, 8), 5);
    memset(eog, 0, sizeof eog);
    const int32_t rep1[12] = { 1, 2, 7, 7, 7, 7, 7, 7, 7, 3, 4, 5 };   /* 7 x7 from 2: 6 repeats */
    CHECK_EQ(schedule_us_cut(rep1, eog, 12), 2);
    const int32_t rep1s[12] = { 1, 2, 7, 7, 7, 7, 7, 7, 3, 3, 4, 5 };  /* 7 x6: 5 repeats, no cut */
    CHECK_EQ(schedule_us_cut(rep1s, eog, 12), 12);
    /* 1 at 1, 3, .., 11 equals the one two on: 5 repeats, no cut; one pair more makes 6 */
    const int32_t rep2s[16] = { 9, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 5, 6, 7 };
    CHECK_EQ(schedule_us_cut(rep2s, eog, 16), 16);
    const int32_t rep2[16] = { 9, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 5 };
    CHECK_EQ(schedule_us_cut(rep2, eog, 16), 1);
    eog[1] = true;                                   /* the end of text comes first */
    CHECK_EQ(schedule_us_cut(rep2, eog, 16), 1);
    eog[1] = false;
    eog[0] = true;
    CHECK_EQ(schedule_us_cut(rep2, eog, 16), 0);
}

/* ------------------------------------------------------------------ whole decodes */

typedef struct run_log {
    um_snapshot *snap[256];
    int          n;
} run_log;

static void keep_snap(void *ctx, um_snapshot *sn) {
    run_log *r = ctx;
    if (r->n < 256) r->snap[r->n++] = sn;
    else snapshot_unref(sn);
}

static void drop_log(run_log *r) {
    for (int i = 0; i < r->n; i++) snapshot_unref(r->snap[i]);
    r->n = 0;
}

/* Each step's snapshot against the rule, recomputed here from what it shows: the accepted
 * positions are the bound's prefix of the canvas sorted by entropy (ties: lower position);
 * the others hold floor(u V) of their NOISE stream; the shown token is the argmax; the
 * temperature follows t_max -> t_min; the mean entropy is the canvas's. Returns the problems. */
static int check_step(const um_snapshot *sn, int V) {
    const um_us_view *u = &sn->us;
    const um_settings *s = &sn->settings;
    const int C = u->end - u->start;
    int bad = 0;
    int32_t order[64];
    for (int i = 0; i < C; i++) order[i] = u->start + i;
    for (int i = 1; i < C; i++)                      /* insertion sort by (entropy, position) */
        for (int j = i; j > 0; j--) {
            const um_pos *a = &sn->pos[order[j - 1]], *b = &sn->pos[order[j]];
            if (a->entropy < b->entropy || (a->entropy == b->entropy && order[j - 1] < order[j])) break;
            int32_t t = order[j]; order[j] = order[j - 1]; order[j - 1] = t;
        }
    bool acc[64] = { false };
    double before = 0, sum = 0;
    int n_acc = 0;
    for (int i = 0; i < C; i++) {
        const int p = order[i];
        if (before <= (double)u->entropy_bound) { acc[p - u->start] = true; n_acc++; }
        before += sn->pos[p].entropy;
    }
    for (int i = 0; i < C; i++) {
        const um_pos *p = &sn->pos[u->start + i];
        sum += p->entropy;
        if (u->stopped) continue;                    /* kept or cut: checked by the caller */
        bad += p->us != (acc[i] ? UM_US_ACCEPTED : UM_US_DRAFT);
        bad += p->token != p->top[0].token;
        if (!acc[i]) {
            double un = sampler_uniform_at(s->seed, sn->step - 1, u->start + i, UM_RNG_NOISE);
            bad += p->held != (int32_t)floor(un * V);
        }
    }
    const int k = u->canvas_step - 1;
    bad += fabs(u->temperature - (s->us_t_min + (s->us_t_max - s->us_t_min) * (double)(s->steps - k) / s->steps)) > 1e-6;
    bad += u->accepted != n_acc;
    bad += fabs(u->mean_entropy - sum / C) > 1e-5;
    return bad;
}

/* The cached-prompt decode against the uncached one on tiny-diffusion-gemma (prompt of 12, past
 * the window of 8; canvases of 16, up to 3 of them, 6 steps each): every snapshot equal, token
 * for token (output and working canvas), step for step; and every step as the rule says. */
TEST(uniform_cached_decode_equals_uncached) {
    char path[256];
    if (make_model("tiny-diffusion-gemma", path, sizeof path)) { th_fail(__FILE__, __LINE__, "synth"); return; }
    um_engine_opts o = { .model_path = path, .n_threads = 2, .kernel = -1 };
    um_engine *en = NULL;
    um_err e = { "" };
    int rc = engine_open(&en, &o, &e);
    unlink(path);
    CHECK_MSG(rc == UM_OK, "%s", e.msg);
    if (rc) return;
    um_settings s;
    um_engine_info info;
    engine_default_settings(en, &s);
    engine_get_info(en, &info);
    CHECK(s.schedule == UM_SCHED_UNIFORM && s.us_canvas == 16 && s.steps == 48 && s.cache == UM_CACHE_PREFIX);
    s.n_gen = 40;
    s.steps = 6;
    s.seed = 11;
    int32_t prompt[12];
    for (int i = 0; i < 12; i++) prompt[i] = (i * 71 + 5) % 1000;
    run_log a = { .n = 0 }, b = { .n = 0 };
    rc = engine_start_tokens(en, prompt, 12, &s, &e);
    if (!rc) rc = engine_run(en, keep_snap, &a, &e) < 0;
    const int64_t rows_cached = engine_rows_computed(en);
    s.cache = UM_CACHE_NONE;
    if (!rc) rc = engine_start_tokens(en, prompt, 12, &s, &e);
    if (!rc) rc = engine_run(en, keep_snap, &b, &e) < 0;
    CHECK_MSG(rc == 0, "%s", e.msg);
    CHECK_EQ(a.n, b.n);
    int differ = 0, bad = 0, canvases = 0, stopped = 0;
    for (int i = 0; i < a.n && i < b.n; i++) {
        const um_snapshot *x = a.snap[i], *y = b.snap[i];
        if (x->n_canvas != y->n_canvas) { differ++; continue; }
        for (int p = 0; p < x->n_canvas; p++)
            differ += x->pos[p].token != y->pos[p].token || x->pos[p].held != y->pos[p].held ||
                      x->pos[p].us != y->pos[p].us || x->pos[p].entropy != y->pos[p].entropy;
        bad += check_step(x, info.n_vocab);
        canvases = x->block + 1;
        stopped += x->us.stopped;
    }
    const um_snapshot *last = a.n ? a.snap[a.n - 1] : NULL;
    printf("    %d steps over %d canvas(es); rows through the layers %lld with the prompt cache, %lld without\n", a.n,
           canvases, (long long)rows_cached, (long long)engine_rows_computed(en));
    CHECK(rows_cached < engine_rows_computed(en));
    CHECK_MSG(differ == 0, "%d positions differ between the cached and the uncached decode", differ);
    CHECK_MSG(bad == 0, "%d steps or positions break the rule", bad);
    CHECK(last && last->done && last->n_canvas == 12 + 48);
    /* at the end every generated position is part of the output or past its cut */
    int open_pos = 0;
    for (int p = 12; last && p < last->n_canvas; p++)
        open_pos += last->pos[p].us != UM_US_KEPT && last->pos[p].us != UM_US_CUT;
    CHECK_EQ(open_pos, 0);
    CHECK(stopped == canvases);
    drop_log(&a);
    drop_log(&b);
    engine_close(en);
}
