/*
 * test_schedule: commit counts of the block (LLaDA) and timestep (Dream) schedules
 * against tables worked out by hand, the threshold and factor (Fast-dLLM) and entropy-bounded
 * (EB-sampler) rules, each selection
 * rule, settings changed mid-run, and a tiny canvas driven through sampler + schedule.
 */
#include "harness.h"
#include "schedule.h"

#include <stdlib.h>

static um_settings base(um_schedule sch, int n_gen, int steps, int block) {
    return (um_settings){ .n_gen = n_gen, .steps = steps, .block_len = block, .schedule = sch,
                          .score = UM_SCORE_CONFIDENCE, .top_p = 1.0f, .seed = 1 };
}

static int table_is(const um_settings *s, const int *want, int n_want) {
    int32_t got[1024];
    um_err e = { "" };
    int32_t n = schedule_table(s, s->n_gen, got, 1024, &e);
    if (n != n_want) {
        fprintf(stderr, "    table: %d steps, want %d (%s)\n", n, n_want, e.msg);
        return 0;
    }
    for (int i = 0; i < n; i++) {
        if (got[i] != want[i]) {
            fprintf(stderr, "    table step %d: %d, want %d\n", i, got[i], want[i]);
            return 0;
        }
    }
    return 1;
}

/* ---------------------------------------------------------------- block (LLaDA) */

TEST(schedule_block_counts_by_hand) {
    /* one block of 10, 4 steps: 10 = 4*2 + 2, the first 2 steps take the remainder */
    um_settings s = base(UM_SCHED_BLOCK, 10, 4, 10);
    CHECK(table_is(&s, (int[]){ 3, 3, 2, 2 }, 4));
    s.block_len = 0;                       /* 0 = one block over the whole generation */
    CHECK(table_is(&s, (int[]){ 3, 3, 2, 2 }, 4));
    /* blocks of 5, 4 steps: 2 steps per block, 5 masks -> 3, 2 */
    s = base(UM_SCHED_BLOCK, 10, 4, 5);
    CHECK(table_is(&s, (int[]){ 3, 2, 3, 2 }, 4));
    /* blocks of 5, 5 steps: the first block takes the spare step: 3 steps (2,2,1), then 2 (3,2) */
    s = base(UM_SCHED_BLOCK, 10, 5, 5);
    CHECK(table_is(&s, (int[]){ 2, 2, 1, 3, 2 }, 5));
    /* blocks 4, 4, 2 (short last block), 6 steps = 2 per block */
    s = base(UM_SCHED_BLOCK, 10, 6, 4);
    CHECK(table_is(&s, (int[]){ 2, 2, 2, 2, 1, 1 }, 6));
    /* fewer steps than blocks: 4 blocks of 2, 2 steps; every block still gets one step */
    s = base(UM_SCHED_BLOCK, 8, 2, 2);
    CHECK(table_is(&s, (int[]){ 2, 2, 2, 2 }, 4));
}

TEST(schedule_block_llada_defaults) {
    int32_t got[256];
    /* LLaDA chat defaults: gen 128, steps 128, block 32: one token per step */
    um_settings s = base(UM_SCHED_BLOCK, 128, 128, 32);
    CHECK_EQ(schedule_table(&s, 128, got, 256, NULL), 128);
    for (int i = 0; i < 128; i++)
        CHECK_EQ(got[i], 1);
    /* steps 64: two per step */
    s.steps = 64;
    CHECK_EQ(schedule_table(&s, 128, got, 256, NULL), 64);
    for (int i = 0; i < 64; i++)
        CHECK_EQ(got[i], 2);
}

/* ---------------------------------------------------------------- timestep (Dream) */

TEST(schedule_timestep_counts_by_hand) {
    /* gen 10, 4 steps, eps 0: t = 1, .75, .5, .25; s = .75, .5, .25, 0
       step 0: floor(10 * (1 - .75/1))   = floor(2.5)   = 2
       step 1: floor( 8 * (1 - .5/.75))  = floor(2.667) = 2
       step 2: floor( 6 * (1 - .25/.5))  = 3
       step 3: the last step commits the 3 left */
    um_settings s = base(UM_SCHED_TIMESTEP, 10, 4, 0);
    s.eps = 0.0f;
    CHECK(table_is(&s, (int[]){ 2, 2, 3, 3 }, 4));
    /* eps 1e-3: t = 1, .75025, .5005, .25075; s = .75025, .5005, .25075
       step 0: floor(10 * .24975) = 2; step 1: floor(8 * .332889) = 2;
       step 2: floor(6 * .499001) = floor(2.994) = 2; step 3: the 4 left */
    s.eps = 1e-3f;
    CHECK(table_is(&s, (int[]){ 2, 2, 2, 4 }, 4));
    /* blocks of 3 (gen 6), 4 steps = 2 per block, eps 0: floor(3 * .5) = 1, then the 2 left */
    s = base(UM_SCHED_TIMESTEP, 6, 4, 3);
    CHECK(table_is(&s, (int[]){ 1, 2, 1, 2 }, 4));
}

TEST(schedule_timestep_dream_defaults_sum) {
    /* Dream: 512 steps over 128 masks, eps 1e-3: many steps commit nothing, all 512 run,
       and together they commit all 128 */
    static int32_t got[600];
    um_settings s = base(UM_SCHED_TIMESTEP, 128, 512, 0);
    s.eps = 1e-3f;
    CHECK_EQ(schedule_table(&s, 128, got, 600, NULL), 512);
    int sum = 0, zeros = 0;
    for (int i = 0; i < 512; i++) {
        sum += got[i];
        zeros += got[i] == 0;
    }
    CHECK_EQ(sum, 128);
    CHECK(zeros > 300);
    CHECK_EQ(got[0], 0);                   /* floor(128 * .00195) */
}

/* ---------------------------------------------------------------- linear (RND1) */

TEST(schedule_linear_counts_by_hand) {
    /* RND1: gen 10, 4 steps: masks left after each step floor(10*3/4) = 7, floor(10*2/4) = 5,
       floor(10*1/4) = 2, 0 -> commits 3, 2, 3, 2 (LLaDA's block schedule gives 3, 3, 2, 2) */
    um_settings s = base(UM_SCHED_LINEAR, 10, 4, 0);
    CHECK(table_is(&s, (int[]){ 3, 2, 3, 2 }, 4));
    /* gen 5, 8 steps: left floor(5*7/8) = 4, 3, 3, 2, 1, 1, floor(5/8) = 0 after steps 0..6:
       commits 1, 1, 0, 1, 1, 0, 1 and the run is done after 7 steps (nothing left to do) */
    s = base(UM_SCHED_LINEAR, 5, 8, 0);
    CHECK(table_is(&s, (int[]){ 1, 1, 0, 1, 1, 0, 1 }, 7));
}

/* ---------------------------------------------------------------- plan */

TEST(schedule_plan_layout_and_done) {
    bool masked[7] = { false, false, false, true, true, true, true };   /* prompt 3, gen 4 */
    um_settings s = base(UM_SCHED_BLOCK, 4, 4, 2);
    um_plan p;
    CHECK(schedule_plan(&s, 3, 4, masked, 0, &p, NULL) == UM_OK);
    CHECK_EQ(p.n_blocks, 2);
    CHECK_EQ(p.block, 0);
    CHECK_EQ(p.start, 3);
    CHECK_EQ(p.end, 5);
    CHECK_EQ(p.masks_left, 2);
    CHECK_EQ(p.steps_left, 2);
    CHECK_EQ(p.count, 1);
    masked[3] = masked[4] = false;
    CHECK(schedule_plan(&s, 3, 4, masked, 2, &p, NULL) == UM_OK);
    CHECK_EQ(p.block, 1);
    CHECK_EQ(p.start, 5);
    CHECK(!p.done);
    masked[5] = masked[6] = false;
    CHECK(schedule_plan(&s, 3, 4, masked, 4, &p, NULL) == UM_OK);
    CHECK(p.done);
    CHECK_EQ(p.block, 2);
}

TEST(schedule_plan_settings_change_mid_run) {
    bool m[8];
    um_plan p;
    for (int i = 0; i < 8; i++)
        m[i] = true;
    um_settings s = base(UM_SCHED_BLOCK, 8, 4, 8);
    CHECK(schedule_plan(&s, 0, 8, m, 0, &p, NULL) == UM_OK);
    CHECK_EQ(p.count, 2);
    /* two steps committed positions 0, 1, 5, 6; 4 masks left */
    m[0] = m[1] = m[5] = m[6] = false;
    /* more steps (8): 6 left for this block -> one per step */
    s.steps = 8;
    CHECK(schedule_plan(&s, 0, 8, m, 2, &p, NULL) == UM_OK);
    CHECK_EQ(p.steps_left, 6);
    CHECK_EQ(p.count, 1);
    /* fewer steps (1) than already run: the next step commits everything left */
    s.steps = 1;
    CHECK(schedule_plan(&s, 0, 8, m, 2, &p, NULL) == UM_OK);
    CHECK_EQ(p.steps_left, 1);
    CHECK_EQ(p.count, 4);
    /* block length 4 after 2 of 4 steps: 2 blocks of 2 allotted steps; block 0 (masks 2, 3)
       has (4 - 2) - 2 = 0 steps left -> 1: commit both; then block 1 (masks 4, 7) gets the last */
    s.steps = 4;
    s.block_len = 4;
    CHECK(schedule_plan(&s, 0, 8, m, 2, &p, NULL) == UM_OK);
    CHECK_EQ(p.block, 0);
    CHECK_EQ(p.masks_left, 2);
    CHECK_EQ(p.count, 2);
    m[2] = m[3] = false;
    CHECK(schedule_plan(&s, 0, 8, m, 3, &p, NULL) == UM_OK);
    CHECK_EQ(p.block, 1);
    CHECK_EQ(p.steps_left, 1);
    CHECK_EQ(p.count, 2);
    /* switching to the timestep schedule at the same point: one block, 2 of 4 steps left:
       k = 2 of S = 4, eps 0: floor(4 * (1 - .25/.5)) = 2 */
    s.schedule = UM_SCHED_TIMESTEP;
    s.block_len = 0;
    s.eps = 0.0f;
    m[2] = m[3] = true;
    CHECK(schedule_plan(&s, 0, 8, m, 2, &p, NULL) == UM_OK);
    CHECK_EQ(p.count, 2);
    CHECK_NEAR(p.p_transfer, 0.5, 1e-12);
}

TEST(schedule_plan_rejects_bad_settings) {
    bool m[4] = { true, true, true, true };
    um_plan p;
    um_err e = { "" };
    um_settings s = base(UM_SCHED_BLOCK, 4, 0, 4);
    CHECK(schedule_plan(&s, 0, 4, m, 0, &p, &e) == UM_FAIL);
    CHECK_CONTAINS(e.msg, "steps");
    s = base(UM_SCHED_TIMESTEP, 4, 4, 0);
    s.eps = 1.0f;
    CHECK(schedule_plan(&s, 0, 4, m, 0, &p, &e) == UM_FAIL);
    CHECK_CONTAINS(e.msg, "eps");
    s = base(UM_SCHED_BLOCK, 4, 4, 4);
    CHECK(schedule_plan(&s, 0, 0, m, 0, &p, &e) == UM_FAIL);
    s.schedule = UM_SCHED_THRESHOLD;
    CHECK(schedule_table(&s, 4, (int32_t[8]){ 0 }, 8, &e) == UM_FAIL);
    CHECK_CONTAINS(e.msg, "threshold");
}

/* ---------------------------------------------------------------- selection */

static void fill(um_scored *it, const float *scores, int n, int first_pos) {
    for (int i = 0; i < n; i++)
        it[i] = (um_scored){ .pos = first_pos + i, .score = scores[i] };
}

TEST(schedule_select_threshold_rule) {
    um_settings s = base(UM_SCHED_THRESHOLD, 4, 4, 0);
    um_plan p = { .count = 1, .masks_left = 4 };
    um_scored it[4];
    /* tau .9: .95 and .91 pass */
    s.threshold = 0.9f;
    fill(it, (float[]){ 0.95f, 0.5f, 0.91f, 0.2f }, 4, 10);
    CHECK_EQ(schedule_select(&s, &p, 0, it, 4), 2);
    CHECK_EQ(it[0].pos, 10);
    CHECK_EQ(it[1].pos, 12);
    /* nothing passes: the best one alone */
    s.threshold = 0.99f;
    fill(it, (float[]){ 0.95f, 0.5f, 0.91f, 0.2f }, 4, 10);
    CHECK_EQ(schedule_select(&s, &p, 0, it, 4), 1);
    CHECK_EQ(it[0].pos, 10);
    /* a score equal to tau commits (Fast-dLLM drops only conf < tau); ties: lower position */
    s.threshold = 0.5f;
    fill(it, (float[]){ 0.3f, 0.5f, 0.5f }, 3, 0);
    CHECK_EQ(schedule_select(&s, &p, 0, it, 3), 2);
    CHECK_EQ(it[0].pos, 1);
    CHECK_EQ(it[1].pos, 2);
    s.threshold = 0.6f;
    fill(it, (float[]){ 0.3f, 0.5f, 0.5f }, 3, 0);
    CHECK_EQ(schedule_select(&s, &p, 0, it, 3), 1);
    CHECK_EQ(it[0].pos, 1);
}

/* Fast-dLLM's factor rule: the n-th best must reach 1 - f/(n+1). f = 1: the 2nd needs 2/3,
 * the 3rd 3/4, the 4th 4/5. */
TEST(schedule_select_factor_rule) {
    um_settings s = base(UM_SCHED_FACTOR, 5, 5, 0);
    um_plan p = { .count = 1, .masks_left = 5 };
    um_scored it[5];
    s.factor = 1.0f;
    fill(it, (float[]){ 0.7f, 0.95f, 0.1f, 0.8f, 0.9f }, 5, 20);
    CHECK_EQ(schedule_select(&s, &p, 0, it, 5), 3);        /* .95, .9 >= 2/3, .8 >= 3/4; .7 < 4/5 */
    CHECK_EQ(it[0].pos, 21);
    CHECK_EQ(it[1].pos, 23);
    CHECK_EQ(it[2].pos, 24);
    /* the best commits even below every bound */
    fill(it, (float[]){ 0.2f, 0.3f }, 2, 0);
    CHECK_EQ(schedule_select(&s, &p, 0, it, 2), 1);
    CHECK_EQ(it[0].pos, 1);
    /* a larger factor lowers the bounds: f = 2 makes the 2nd need 1/3, the 3rd 1/2 */
    s.factor = 2.0f;
    fill(it, (float[]){ 0.2f, 0.35f, 0.9f }, 3, 0);
    CHECK_EQ(schedule_select(&s, &p, 0, it, 3), 2);
    CHECK(schedule_adaptive(UM_SCHED_FACTOR));
    um_err e = { "" };
    int32_t counts[8];
    CHECK(schedule_table(&s, 5, counts, 8, &e) == UM_FAIL);
    CHECK_CONTAINS(e.msg, "factor");
}

/* The entropy-bounded sampler (EB-sampler, Ben-Hamu et al. 2025): by increasing entropy, the
 * largest set whose entropies sum to <= gamma once the set's largest is left out. */
static void fill_h(um_scored *it, const float *h, int n) {
    for (int i = 0; i < n; i++) it[i] = (um_scored){ .pos = i, .score = -h[i], .entropy = h[i] };
}

TEST(schedule_select_eb_rule) {
    um_settings s = base(UM_SCHED_EB, 5, 5, 0);
    um_plan p = { .count = 1, .masks_left = 5 };
    um_scored it[5];
    s.eb_gamma = 0.5f;
    /* sorted .1 .15 .3 .5 2: {.1,.15,.3} leaves .25; adding .5 leaves .55 > .5 */
    fill_h(it, (float[]){ 0.5f, 0.1f, 2.0f, 0.3f, 0.15f }, 5);
    CHECK_EQ(schedule_select(&s, &p, 0, it, 5), 3);
    CHECK_EQ(it[0].pos, 1);
    CHECK_EQ(it[1].pos, 3);
    CHECK_EQ(it[2].pos, 4);
    /* gamma 1: .55 <= 1 takes .5 as well; 2 would leave 1.05 */
    s.eb_gamma = 1.0f;
    fill_h(it, (float[]){ 0.5f, 0.1f, 2.0f, 0.3f, 0.15f }, 5);
    CHECK_EQ(schedule_select(&s, &p, 0, it, 5), 4);
    /* gamma 0: the single lowest, whatever it is (a set of one leaves nothing) */
    s.eb_gamma = 0.0f;
    fill_h(it, (float[]){ 3.0f, 2.5f }, 2);
    CHECK_EQ(schedule_select(&s, &p, 0, it, 2), 1);
    CHECK_EQ(it[0].pos, 1);
    /* ... but two certain positions (entropy 0) go together */
    fill_h(it, (float[]){ 0.0f, 0.7f, 0.0f }, 3);
    CHECK_EQ(schedule_select(&s, &p, 0, it, 3), 3);
    /* a sum exactly at gamma is allowed; equal entropies: the lower position first */
    s.eb_gamma = 1.0f;
    fill_h(it, (float[]){ 0.5f, 0.5f, 0.5f, 0.5f }, 4);
    CHECK_EQ(schedule_select(&s, &p, 0, it, 4), 3);
    CHECK_EQ(it[0].pos, 0);
    CHECK_EQ(it[1].pos, 1);
    CHECK_EQ(it[2].pos, 2);
    /* the order is by entropy, not by the score the flags chose */
    fill_h(it, (float[]){ 0.9f, 0.05f }, 2);
    it[0].score = 1.0f;
    it[1].score = 0.0f;
    s.eb_gamma = 0.01f;
    CHECK_EQ(schedule_select(&s, &p, 0, it, 2), 1);
    CHECK_EQ(it[0].pos, 1);
    CHECK(schedule_adaptive(UM_SCHED_EB) && schedule_adaptive(UM_SCHED_THRESHOLD) && !schedule_adaptive(UM_SCHED_BLOCK));
}

TEST(schedule_select_top_count) {
    um_settings s = base(UM_SCHED_BLOCK, 4, 2, 0);
    um_plan p = { .count = 2, .masks_left = 4, .steps_left = 2 };
    um_scored it[4];
    fill(it, (float[]){ 0.1f, 0.9f, 0.5f, 0.7f }, 4, 0);
    CHECK_EQ(schedule_select(&s, &p, 0, it, 4), 2);
    CHECK_EQ(it[0].pos, 1);
    CHECK_EQ(it[1].pos, 3);
    /* negative entropy scores: the least uncertain (closest to 0) first */
    fill(it, (float[]){ -2.0f, -0.1f, -0.5f, -3.0f }, 4, 0);
    CHECK_EQ(schedule_select(&s, &p, 0, it, 4), 2);
    CHECK_EQ(it[0].pos, 1);
    CHECK_EQ(it[1].pos, 2);
    /* ties at the cut: the lower position wins */
    p.count = 1;
    fill(it, (float[]){ 0.2f, 0.8f, 0.8f, 0.1f }, 4, 0);
    CHECK_EQ(schedule_select(&s, &p, 0, it, 4), 1);
    CHECK_EQ(it[0].pos, 1);
    /* a count larger than the eligible set takes them all */
    p.count = 9;
    fill(it, (float[]){ 0.2f, 0.8f }, 2, 5);
    CHECK_EQ(schedule_select(&s, &p, 0, it, 2), 2);
}

TEST(schedule_select_origin_coins) {
    enum { N = 10000 };
    static um_scored it[N];
    um_settings s = base(UM_SCHED_TIMESTEP, N, 4, 0);
    s.score = UM_SCORE_ORIGIN;
    um_plan p = { .masks_left = N };
    for (int i = 0; i < N; i++) it[i] = (um_scored){ .pos = i };
    p.p_transfer = 1.0;
    CHECK_EQ(schedule_select(&s, &p, 0, it, N), N);
    p.p_transfer = 0.0;
    CHECK_EQ(schedule_select(&s, &p, 0, it, N), 0);
    /* p = .5: binomial(10000, .5), sd 50: 5 sigma */
    p.p_transfer = 0.5;
    for (int i = 0; i < N; i++) it[i] = (um_scored){ .pos = i };
    int32_t k = schedule_select(&s, &p, 7, it, N);
    CHECK(abs(k - N / 2) < 250);
    for (int i = 1; i < k; i++)
        CHECK(it[i - 1].pos < it[i].pos);
    /* the same step draws the same coins */
    for (int i = 0; i < N; i++) it[i] = (um_scored){ .pos = i };
    CHECK_EQ(schedule_select(&s, &p, 7, it, N), k);
}

TEST(schedule_select_alg_temp_samples_softmax) {
    /* k = 1 from scores {0, ln 2, ln 3} at alg_temp 1: P = {1/6, 2/6, 3/6} */
    um_settings s = base(UM_SCHED_BLOCK, 3, 3, 0);
    s.alg_temp = 1.0f;
    um_plan p = { .count = 1, .masks_left = 3 };
    const float sc[3] = { 0.0f, logf(2.0f), logf(3.0f) };
    int counts[3] = { 0, 0, 0 };
    const int n = 30000;
    um_scored it[3];
    for (int step = 0; step < n; step++) {
        fill(it, sc, 3, 0);
        CHECK_EQ(schedule_select(&s, &p, step, it, 3), 1);
        counts[it[0].pos]++;
    }
    /* binomial sd <= sqrt(.25/n) = .0029: 5 sigma */
    CHECK_NEAR(counts[0] / (double)n, 1.0 / 6, 0.015);
    CHECK_NEAR(counts[1] / (double)n, 2.0 / 6, 0.015);
    CHECK_NEAR(counts[2] / (double)n, 3.0 / 6, 0.015);
    /* k = 2 never picks one position twice */
    p.count = 2;
    for (int step = 0; step < 100; step++) {
        fill(it, sc, 3, 0);
        CHECK_EQ(schedule_select(&s, &p, step, it, 3), 2);
        CHECK(it[0].pos != it[1].pos);
    }
    /* a tiny alg_temp is the plain top-k */
    s.alg_temp = 1e-4f;
    p.count = 1;
    fill(it, sc, 3, 0);
    CHECK_EQ(schedule_select(&s, &p, 5, it, 3), 1);
    CHECK_EQ(it[0].pos, 2);
}

TEST(schedule_score_kinds) {
    um_pick pk = { .prob = 0.7f, .margin = 0.4f, .neg_entropy = -1.25f };
    CHECK_NEAR(schedule_score(UM_SCORE_CONFIDENCE, &pk, 1, 0, 0), 0.7, 1e-7);
    CHECK_NEAR(schedule_score(UM_SCORE_MARGIN, &pk, 1, 0, 0), 0.4, 1e-7);
    CHECK_NEAR(schedule_score(UM_SCORE_ENTROPY, &pk, 1, 0, 0), -1.25, 1e-7);
    float r1 = schedule_score(UM_SCORE_RANDOM, &pk, 1, 2, 3);
    CHECK(r1 > 0.0f && r1 < 1.0f);
    CHECK(r1 == schedule_score(UM_SCORE_RANDOM, &pk, 1, 2, 3));
    CHECK(r1 != schedule_score(UM_SCORE_RANDOM, &pk, 1, 2, 4));
}

/* ---------------------------------------------------------------- a tiny canvas */

TEST(schedule_tiny_canvas_confidence_order) {
    /* 4 masked positions, vocab 3, greedy. Confidence of the argmax (token 0 or 1):
       pos 0 {0,0,0}: 1/3;  pos 1 {5,0,0}: e^5/(e^5+2) = .98670;
       pos 2 {2,0,0}: e^2/(e^2+2) = .78699;  pos 3 {0,9,0}: e^9/(e^9+2) = .99975.
       Block schedule, 2 steps: step 0 commits positions 1 and 3, step 1 positions 0 and 2.
       The margin and entropy scores give the same order on these rows. */
    const float rows[4][3] = { { 0, 0, 0 }, { 5, 0, 0 }, { 2, 0, 0 }, { 0, 9, 0 } };
    for (int kind = UM_SCORE_CONFIDENCE; kind <= UM_SCORE_ENTROPY; kind++) {
        um_settings s = base(UM_SCHED_BLOCK, 4, 2, 0);
        s.score = (um_score)kind;
        bool masked[4] = { true, true, true, true };
        int32_t token[4] = { -1, -1, -1, -1 }, when[4] = { -1, -1, -1, -1 };
        um_sample_ws *ws = sampler_ws_new(3);
        for (int step = 0;; step++) {
            um_plan p;
            CHECK(schedule_plan(&s, 0, 4, masked, step, &p, NULL) == UM_OK);
            if (p.done)
                break;
            CHECK(step < 2);
            um_scored it[4];
            um_pick pk[4];
            int n = 0;
            for (int i = p.start; i < p.end; i++) {
                if (!masked[i])
                    continue;
                CHECK(sampler_pick(rows[i], 3, -1, &s, step, i, ws, &pk[i], NULL) == UM_OK);
                it[n++] = (um_scored){ .pos = i, .score = schedule_score(s.score, &pk[i], s.seed, step, i) };
            }
            int32_t k = schedule_select(&s, &p, step, it, n);
            CHECK_EQ(k, 2);
            for (int j = 0; j < k; j++) {
                masked[it[j].pos] = false;
                token[it[j].pos] = pk[it[j].pos].token;
                when[it[j].pos] = step;
            }
        }
        sampler_ws_free(ws);
        CHECK_EQ(when[0], 1); CHECK_EQ(when[1], 0); CHECK_EQ(when[2], 1); CHECK_EQ(when[3], 0);
        CHECK_EQ(token[0], 0); CHECK_EQ(token[1], 0); CHECK_EQ(token[2], 0); CHECK_EQ(token[3], 1);
    }
}

TEST(schedule_names_round_trip) {
    for (int i = 0; i < UM_SCHED_COUNT; i++) {
        um_schedule got;
        CHECK(schedule_from_name(schedule_name((um_schedule)i), &got, NULL) == UM_OK);
        CHECK_EQ(got, i);
    }
    for (int i = 0; i < UM_SCORE_COUNT; i++) {
        um_score got;
        CHECK(schedule_score_from_name(schedule_score_name((um_score)i), &got, NULL) == UM_OK);
        CHECK_EQ(got, i);
    }
    CHECK_STREQ(schedule_name(UM_SCHED_TIMESTEP), "timestep");
    CHECK_STREQ(schedule_score_name(UM_SCORE_MARGIN), "margin");
    um_err e = { "" };
    um_score sc;
    CHECK(schedule_score_from_name("low_confidence", &sc, &e) == UM_FAIL);
    CHECK_CONTAINS(e.msg, "confidence|margin|entropy|random|origin");
    um_schedule sh;
    CHECK(schedule_from_name(NULL, &sh, &e) == UM_FAIL);
    CHECK_CONTAINS(e.msg, "block|timestep|threshold|linear|factor|eb");
}

/* ---------------------------------------------------------------- LLaDA 2.x */

/* LLaDA 2.0's quota (modeling_llada2_moe.py _get_num_transfer_tokens(block_length, steps)):
 * block_length // steps each, the first block_length % steps steps one more; by hand. */
TEST(schedule_threshold_quota_llada2) {
    um_settings s = base(UM_SCHED_THRESHOLD, 64, 64, 32);
    um_plan p = { .start = 10, .end = 42, .masks_left = 32 };
    CHECK_EQ(schedule_threshold_quota(&s, &p, 0), 1);       /* block_steps 0: at least one */
    CHECK_EQ(schedule_threshold_quota(&s, &p, 40), 1);
    s.block_steps = 8;                                       /* 32 / 8 = 4 every step */
    for (int k = 0; k < 8; k++) CHECK_EQ(schedule_threshold_quota(&s, &p, k), 4);
    s.block_len = 10; s.block_steps = 4;                     /* 10 = 3 + 3 + 2 + 2 */
    p.masks_left = 10;
    int want[4] = { 3, 3, 2, 2 };
    for (int k = 0; k < 4; k++) CHECK_EQ(schedule_threshold_quota(&s, &p, k), want[k]);
    p.masks_left = 2;                                        /* never more than the masks */
    CHECK_EQ(schedule_threshold_quota(&s, &p, 0), 2);
    p.masks_left = 7;                                        /* past its steps: all that is left */
    CHECK_EQ(schedule_threshold_quota(&s, &p, 4), 7);
    s.block_len = 32; s.block_steps = 64;                    /* more steps than tokens: 1 then 0 */
    p.masks_left = 32;
    CHECK_EQ(schedule_threshold_quota(&s, &p, 31), 1);
    CHECK_EQ(schedule_threshold_quota(&s, &p, 32), 0);
    p.done = true;
    CHECK_EQ(schedule_threshold_quota(&s, &p, 0), 0);
}

/* The threshold rule with a quota: all that pass when at least quota pass, else the quota best
 * (LLaDA 2.0's generate: "if num_high_confidence >= num_to_transfer ... else topk"). */
TEST(schedule_select_threshold_with_quota) {
    um_settings s = base(UM_SCHED_THRESHOLD, 6, 6, 0);
    s.threshold = 0.9f;
    um_plan p = { .count = 3, .masks_left = 6 };
    um_scored it[6];
    fill(it, (float[]){ 0.2f, 0.95f, 0.4f, 0.3f, 0.5f, 0.1f }, 6, 0);   /* one passes: the 3 best */
    CHECK_EQ(schedule_select(&s, &p, 0, it, 6), 3);
    CHECK_EQ(it[0].pos, 1); CHECK_EQ(it[1].pos, 2); CHECK_EQ(it[2].pos, 4);
    fill(it, (float[]){ 0.99f, 0.95f, 0.4f, 0.93f, 0.91f, 0.1f }, 6, 0); /* four pass: all four */
    CHECK_EQ(schedule_select(&s, &p, 0, it, 6), 4);
    CHECK_EQ(it[0].pos, 0); CHECK_EQ(it[3].pos, 4);
    p.count = 0;                                             /* a zero quota: only those that pass */
    fill(it, (float[]){ 0.2f, 0.3f, 0.4f, 0.3f, 0.5f, 0.1f }, 6, 0);
    CHECK_EQ(schedule_select(&s, &p, 0, it, 6), 0);
    p.count = 9;                                             /* a quota past the masks: all */
    fill(it, (float[]){ 0.2f, 0.3f, 0.4f, 0.3f, 0.5f, 0.1f }, 6, 0);
    CHECK_EQ(schedule_select(&s, &p, 0, it, 6), 6);
}

/* Aligned blocks (block-causal models): boundaries at multiples of the block length from
 * canvas position 0, so the first block is what the prompt's last block leaves to generate. */
TEST(schedule_plan_aligned_blocks) {
    bool m[25];
    for (int i = 0; i < 25; i++) m[i] = i >= 5;              /* prompt 5, gen 20, block 8 */
    um_settings s = base(UM_SCHED_THRESHOLD, 20, 20, 8);
    s.block_aligned = true;
    um_plan p;
    int want[5][2] = { { 5, 8 }, { 8, 16 }, { 16, 24 }, { 24, 25 } };
    for (int b = 0; b < 4; b++) {
        CHECK(schedule_plan(&s, 5, 20, m, b, &p, NULL) == UM_OK);
        CHECK_EQ(p.n_blocks, 4);
        CHECK_EQ(p.block, b);
        CHECK_EQ(p.start, want[b][0]);
        CHECK_EQ(p.end, want[b][1]);
        CHECK_EQ(p.masks_left, want[b][1] - want[b][0]);
        for (int i = p.start; i < p.end; i++) m[i] = false;
    }
    CHECK(schedule_plan(&s, 5, 20, m, 4, &p, NULL) == UM_OK);
    CHECK(p.done);
    for (int i = 0; i < 25; i++) m[i] = i >= 16;             /* prompt on a boundary: whole blocks */
    CHECK(schedule_plan(&s, 16, 9, m, 0, &p, NULL) == UM_OK);
    CHECK_EQ(p.n_blocks, 2);
    CHECK_EQ(p.start, 16);
    CHECK_EQ(p.end, 24);
    s.block_aligned = false;                                 /* unaligned: from the prompt's end */
    for (int i = 0; i < 25; i++) m[i] = i >= 5;
    CHECK(schedule_plan(&s, 5, 20, m, 0, &p, NULL) == UM_OK);
    CHECK_EQ(p.n_blocks, 3);
    CHECK_EQ(p.start, 5);
    CHECK_EQ(p.end, 13);
}

/* The masked schedules' own state (schedule_mdm_*): the quota counts the steps of the active
 * block and restarts with the next; a block filled with editing on gets post_steps edit-only
 * plans on its range, ending after one that edits nothing; editing switched off or an early
 * stop drops them. The plan comes complete: the engine patches nothing. */
TEST(schedule_mdm_state_quota_and_post_steps) {
    um_settings s = base(UM_SCHED_THRESHOLD, 8, 8, 4);
    s.threshold = 0.9f;
    s.block_steps = 2;                                       /* 4 = 2 + 2 */
    bool masked[10] = { false, false, true, true, true, true, true, true, true, true };
    um_mdm_state st;
    schedule_mdm_start(&st);
    um_plan p;
    um_err e = { "" };
    CHECK(schedule_mdm_plan(&st, &s, 2, 8, masked, 0, &p, &e) == UM_OK);
    CHECK(!p.post && p.start == 2 && p.end == 6 && p.count == 2);
    masked[2] = false;                                       /* one committed */
    schedule_mdm_after(&st, &s, &p, 0, false);
    CHECK(schedule_mdm_plan(&st, &s, 2, 8, masked, 1, &p, &e) == UM_OK);
    CHECK(p.start == 2 && p.count == 2);                     /* in-block step 1: 2, not more than the 3 masks */
    masked[3] = masked[4] = false;
    schedule_mdm_after(&st, &s, &p, 0, false);
    CHECK(schedule_mdm_plan(&st, &s, 2, 8, masked, 2, &p, &e) == UM_OK);
    CHECK(p.count == 1 && p.masks_left == 1);                /* past its steps: all that is left */
    masked[5] = false;
    schedule_mdm_after(&st, &s, &p, 0, true);                /* filled; editing off: no post step */
    CHECK(!schedule_mdm_post_due(&st));
    CHECK(schedule_mdm_plan(&st, &s, 2, 8, masked, 3, &p, &e) == UM_OK);
    CHECK(!p.post && p.start == 6 && p.count == 2);          /* the next block counts from 0 */
    /* editing: the block that fills gets up to post_steps edit-only steps */
    s.edit = true;
    s.post_steps = 3;
    masked[6] = masked[7] = masked[8] = masked[9] = false;
    schedule_mdm_after(&st, &s, &p, 0, true);
    CHECK(schedule_mdm_post_due(&st));
    CHECK(schedule_mdm_plan(&st, &s, 2, 8, masked, 4, &p, &e) == UM_OK);
    CHECK(p.post && !p.done && p.start == 6 && p.end == 10 && p.count == 0 && p.masks_left == 0);
    schedule_mdm_after(&st, &s, &p, 2, true);                /* edited two: go on */
    CHECK(schedule_mdm_plan(&st, &s, 2, 8, masked, 5, &p, &e) == UM_OK);
    CHECK(p.post);
    schedule_mdm_after(&st, &s, &p, 0, true);                /* edited nothing: done */
    CHECK(!schedule_mdm_post_due(&st));
    CHECK(schedule_mdm_plan(&st, &s, 2, 8, masked, 6, &p, &e) == UM_OK);
    CHECK(!p.post && p.done);
    /* switched off mid-run, or stopped early: the post steps still due are dropped */
    um_plan filled = { .block = 0, .start = 2, .end = 6 };
    schedule_mdm_after(&st, &s, &filled, 0, true);
    CHECK(schedule_mdm_post_due(&st));
    s.edit = false;
    CHECK(schedule_mdm_plan(&st, &s, 2, 8, masked, 7, &p, &e) == UM_OK);
    CHECK(!p.post && !schedule_mdm_post_due(&st));
    s.edit = true;
    schedule_mdm_after(&st, &s, &filled, 0, true);
    schedule_mdm_stop(&st);
    CHECK(!schedule_mdm_post_due(&st));
}
