/* Tests of ui/worker.c and ui/fake_source.c: the worker/UI handoff (run under `make tsan`
 * too) and the synthetic denoiser's invariants. No timing thresholds: waits only bound
 * how long a broken worker can hang the test. */
#include <poll.h>
#include <stdint.h>
#include <time.h>
#include <stdlib.h>
#include "harness.h"
#include "fake_source.h"
#include "worker.h"

#define WAIT_MS 20000              /* liveness bound, not a performance limit */

/* Next event, waiting on the wake-up fd like the UI does; false on timeout. */
static bool next_event(ui_worker *w, ui_event *ev) {
    for (int waited = 0; waited < WAIT_MS; waited += 100) {
        if (ui_worker_take(w, ev)) return true;
        struct pollfd p = { ui_worker_fd(w), POLLIN, 0 };
        poll(&p, 1, 100);
    }
    return false;
}

TEST(ui_worker_step_once_and_run_to_done) {
    ui_source src;
    um_err e = { "" };
    CHECK(fake_source_open(&src, 0, &e) == UM_OK);
    um_settings s = src.defaults;
    s.n_gen = 24; s.steps = 8; s.block_len = 8;
    ui_worker *w;
    CHECK(ui_worker_open(&w, &src, &s, "The quick", false, &e) == UM_OK);
    ui_event ev;
    bool ok = next_event(w, &ev) && ev.kind == UI_EV_RESTARTED && ev.snap && ev.snap->step == 0;
    int32_t masks0 = ok ? ev.snap->masks_left : -1;
    if (ev.snap) src.release(ev.snap);
    int steps_ok = 0;
    for (int k = 1; k <= 3; k++) {                 /* three single steps while paused */
        ui_worker_step_once(w);
        if (next_event(w, &ev) && ev.kind == UI_EV_SNAPSHOT && ev.snap->step == k) steps_ok++;
        if (ev.snap) src.release(ev.snap);
    }
    bool idle = !ui_worker_take(w, &ev);           /* paused: nothing more arrives */
    ui_worker_set_running(w, true);
    int32_t last = 3, committed = 0;
    bool consecutive = true, done = false;
    while (!done && next_event(w, &ev)) {
        if (ev.kind != UI_EV_SNAPSHOT) { consecutive = false; break; }
        consecutive &= ev.snap->step == ++last;
        committed += ev.snap->n_committed;
        done = ev.snap->done;
        if (done) consecutive &= ev.snap->masks_left == 0;
        src.release(ev.snap);
    }
    ui_worker_close(w);
    src.close(src.self);
    CHECK(ok);
    CHECK_EQ(masks0, 24);
    CHECK_EQ(steps_ok, 3);
    CHECK(idle);
    CHECK(done);
    CHECK(consecutive);
    CHECK_EQ(last, 8);        /* 24 tokens = 3 blocks of 8; 8 steps split 3+3+2 (schedule.h) */
}

TEST(ui_worker_restart_and_apply) {
    ui_source src;
    um_err e = { "" };
    CHECK(fake_source_open(&src, 1, &e) == UM_OK);
    um_settings s = src.defaults;
    s.n_gen = 16; s.steps = 16; s.block_len = 16;
    ui_worker *w;
    CHECK(ui_worker_open(&w, &src, &s, "", true, &e) == UM_OK);
    ui_event ev;
    int restarts = 0, applied = 0, threshold_steps = 0;
    /* restart while running: a RESTARTED event with step 0 must come, whatever was in flight */
    s.seed = 5;
    ui_worker_restart(w, &s, "ab");
    um_settings t = s;
    t.schedule = UM_SCHED_THRESHOLD;
    bool done = false;
    while (!done && next_event(w, &ev)) {
        if (ev.kind == UI_EV_RESTARTED) {
            restarts += ev.snap->settings.seed == 5 && ev.snap->step == 0;
            if (ev.snap->settings.seed == 5) ui_worker_apply(w, &t);
        }
        if (ev.kind == UI_EV_APPLIED) applied++;
        if (ev.snap) {
            threshold_steps += ev.snap->settings.schedule == UM_SCHED_THRESHOLD;
            done = ev.snap->done && ev.snap->settings.seed == 5;
            src.release(ev.snap);
        }
    }
    ui_worker_close(w);
    src.close(src.self);
    CHECK_EQ(restarts, 1);
    CHECK_EQ(applied, 1);
    CHECK(threshold_steps > 0);
    CHECK(done);
}

/* Run the fake source directly to the end; returns the final snapshot (caller releases). */
static um_snapshot *run_fake(ui_source *src, const um_settings *s, int32_t *n_steps, int32_t *sum_committed) {
    um_err e = { "" };
    um_snapshot *snap = src->start(src->self, s, "The quick", &e);
    *n_steps = 0;
    *sum_committed = 0;
    while (snap && !snap->done) {
        src->release(snap);
        snap = src->step(src->self, &e);
        if (!snap) break;
        (*n_steps)++;
        *sum_committed += snap->n_committed;
        /* every step commits, but with origin scoring (independent coins, as the engine's
         * schedule_select) a step may draw none before the block's last step */
        if (snap->n_committed < 1 && s->score != UM_SCORE_ORIGIN) { src->release(snap); return NULL; }
    }
    return snap;
}

TEST(ui_fake_source_invariants) {
    ui_source src;
    um_err e = { "" };
    CHECK(fake_source_open(&src, 0, &e) == UM_OK);
    for (int sched = 0; sched < UM_SCHED_COUNT; sched++)
        for (int score = 0; score < UM_SCORE_COUNT; score++) {
            um_settings s = src.defaults;
            s.schedule = (um_schedule)sched;
            s.score = (um_score)score;
            int32_t n, sum;
            um_snapshot *fin = run_fake(&src, &s, &n, &sum);
            CHECK_MSG(fin != NULL, "schedule %d scoring %d", sched, score);
            CHECK_EQ(sum, s.n_gen);
            CHECK_EQ(fin->masks_left, 0);
            CHECK_EQ(fin->n_canvas - fin->n_prompt, s.n_gen);
            for (int32_t i = fin->n_prompt; i < fin->n_canvas; i++) {
                CHECK(!fin->pos[i].masked);
                CHECK(fin->pos[i].commit_step >= 1 && fin->pos[i].commit_step <= n);
            }
            if (sched == UM_SCHED_BLOCK) CHECK_EQ(n, fin->n_steps);
            src.release(fin);
        }
    /* prompt: no piece matches "The" (pieces carry a leading space): 3 byte tokens + " quick" */
    um_snapshot *s0 = src.start(src.self, &src.defaults, "The quick", &e);
    CHECK(s0 != NULL);
    CHECK_EQ(s0->n_prompt, 4);
    CHECK_EQ(s0->pos[0].token, FAKE_BYTE0 + 'T');
    char buf[16];
    CHECK_EQ(src.piece(src.self, s0->pos[3].token, buf, sizeof buf), 6);
    CHECK(memcmp(buf, " quick", 6) == 0);
    src.release(s0);
    src.close(src.self);
}

TEST(ui_fake_source_deterministic) {
    ui_source a, b;
    um_err e = { "" };
    CHECK(fake_source_open(&a, 0, &e) == UM_OK);
    CHECK(fake_source_open(&b, 3, &e) == UM_OK);           /* the delay must not matter */
    um_settings s = a.defaults;
    s.n_gen = 20; s.steps = 10; s.block_len = 10;
    int32_t n1, n2, c1, c2;
    um_snapshot *x = run_fake(&a, &s, &n1, &c1), *y = run_fake(&b, &s, &n2, &c2);
    CHECK(x && y);
    CHECK_EQ(n1, n2);
    bool same = true;
    for (int32_t i = 0; i < x->n_canvas; i++) same &= x->pos[i].token == y->pos[i].token && x->pos[i].commit_step == y->pos[i].commit_step;
    a.release(x);
    b.release(y);
    s.seed = 43;
    x = run_fake(&a, &s, &n1, &c1);
    y = run_fake(&b, &a.defaults, &n2, &c2);
    CHECK(x && y);
    bool differ = false;
    for (int32_t i = x->n_prompt; i < x->n_canvas && i < y->n_canvas; i++) differ |= x->pos[i].token != y->pos[i].token;
    a.release(x);
    b.release(y);
    a.close(a.self);
    b.close(b.self);
    CHECK(same);
    CHECK(differ);
}

TEST(ui_worker_restart_cancels_a_long_step) {
    ui_source src;
    um_err e = { "" };
    CHECK(fake_source_open(&src, 600000, &e) == UM_OK);       /* a 10-minute step */
    um_settings s = src.defaults;
    ui_worker *w;
    CHECK(ui_worker_open(&w, &src, &s, "", true, &e) == UM_OK);
    ui_event ev;
    bool first = next_event(w, &ev) && ev.kind == UI_EV_RESTARTED;
    if (ev.snap) src.release(ev.snap);
    while (!ui_worker_busy(w)) { struct pollfd p = { -1, 0, 0 }; poll(&p, 0, 10); }
    s.seed = 9;
    ui_worker_restart(w, &s, "");                            /* must not wait 10 minutes */
    bool restarted = next_event(w, &ev) && ev.kind == UI_EV_RESTARTED && ev.snap->settings.seed == 9;
    if (ev.snap) src.release(ev.snap);
    ui_worker_close(w);                                       /* cancels the next long step too */
    src.close(src.self);
    CHECK(first);
    CHECK(restarted);
}

/* The horizon (the visualizer's pace keeps the engine a few steps ahead of the screen):
 * while running, no step past it starts; raising it lets the worker go on; single steps
 * ignore it. No timing: the worker is idle (not busy) with nothing more published. */
TEST(ui_worker_horizon) {
    ui_source src;
    um_err e = { "" };
    CHECK(fake_source_open(&src, 0, &e) == UM_OK);
    um_settings s = src.defaults;
    s.n_gen = 16; s.steps = 8; s.block_len = 16;
    ui_worker *w;
    CHECK(ui_worker_open(&w, &src, &s, "hi", false, &e) == UM_OK);
    ui_event ev;
    int32_t newest = -1;
    bool order = true, extra = false, stepped = false, done = false;
    ui_worker_set_horizon(w, 3);
    ui_worker_set_running(w, true);
    while (newest < 3 && next_event(w, &ev)) {
        order &= ev.snap && ev.snap->step == newest + 1;
        newest = ev.snap ? ev.snap->step : newest;
        if (ev.snap) src.release(ev.snap);
    }
    for (int waited = 0; ui_worker_busy(w) && waited < WAIT_MS; waited++) { struct timespec t = { 0, 1000000 }; nanosleep(&t, NULL); }
    if (ui_worker_take(w, &ev)) { extra = true; if (ev.snap) src.release(ev.snap); }
    ui_worker_set_horizon(w, 5);                     /* two more, then idle again */
    while (newest < 5 && next_event(w, &ev)) {
        order &= ev.snap && ev.snap->step == newest + 1;
        newest = ev.snap ? ev.snap->step : newest;
        if (ev.snap) src.release(ev.snap);
    }
    for (int waited = 0; ui_worker_busy(w) && waited < WAIT_MS; waited++) { struct timespec t = { 0, 1000000 }; nanosleep(&t, NULL); }
    if (ui_worker_take(w, &ev)) { extra = true; if (ev.snap) src.release(ev.snap); }
    ui_worker_set_running(w, false);                 /* paused: n goes past the horizon */
    ui_worker_step_once(w);
    if (next_event(w, &ev) && ev.snap) { stepped = ev.snap->step == 6; newest = 6; src.release(ev.snap); }
    ui_worker_set_horizon(w, INT32_MAX);             /* no limit: on to the end */
    ui_worker_set_running(w, true);
    while (!done && next_event(w, &ev)) {
        order &= ev.snap && ev.snap->step == newest + 1;
        newest = ev.snap ? ev.snap->step : newest;
        done = ev.snap && ev.snap->done;
        if (ev.snap) src.release(ev.snap);
    }
    ui_worker_close(w);
    src.close(src.self);
    CHECK(order);
    CHECK(!extra);
    CHECK(stepped);
    CHECK(done);
    CHECK_EQ(newest, 8);
}
