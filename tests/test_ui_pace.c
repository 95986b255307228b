/*
 * test_ui_pace: the visualizer's playback clock (ui/pace.c) with made-up times, so the
 * rules are checked exactly and without waiting: at most one step per interval while the
 * engine is ahead, a step shown as soon as it exists when the engine is slower, all at once
 * with pace 0; the < > arithmetic; and the status line (ui/view.c) showing the pace and
 * telling paced playback (RUNNING, PAUSED) from a rewind.
 */
#include <stdint.h>
#include <stdlib.h>

#include "harness.h"
#include "fake_source.h"
#include "pace.h"
#include "view.h"

TEST(ui_pace_engine_ahead_one_step_per_interval) {
    ui_pace p;
    ui_pace_init(&p, 120, 10.0);
    /* the engine has computed 40 steps ahead; the view is at 0 */
    CHECK_EQ(ui_pace_advance(&p, 0, 40, 10.0), 0);
    CHECK_EQ(ui_pace_wait_ms(&p, 0, 40, 10.0), 120);
    CHECK_EQ(ui_pace_advance(&p, 0, 40, 10.119), 0);
    CHECK_EQ(ui_pace_wait_ms(&p, 0, 40, 10.119), 1);
    CHECK_EQ(ui_pace_advance(&p, 0, 40, 10.120), 1);
    /* long after (the UI was busy): still one step, and the next waits a whole interval */
    CHECK_EQ(ui_pace_advance(&p, 1, 40, 15.0), 2);
    CHECK_EQ(ui_pace_advance(&p, 2, 40, 15.0), 2);
    CHECK_EQ(ui_pace_advance(&p, 2, 40, 15.1), 2);
    CHECK_EQ(ui_pace_wait_ms(&p, 2, 40, 15.1), 20);
    CHECK_EQ(ui_pace_advance(&p, 2, 40, 15.12), 3);
    /* 40 steps at 120 ms: the last one shows 4.8 s after the first, not before */
    ui_pace_init(&p, 120, 0.0);
    int32_t shown = 0;
    for (int ms = 1; ms <= 10000 && shown < 40; ms++) {
        int32_t next = ui_pace_advance(&p, shown, 40, ms / 1000.0);
        CHECK(next == shown || next == shown + 1);
        if (next == 40) CHECK_MSG(ms >= 4800 && ms <= 4800 + 40, "step 40 at %d ms", ms);
        shown = next;
    }
    CHECK_EQ(shown, 40);
}

TEST(ui_pace_engine_slower_shows_at_once) {
    ui_pace p;
    ui_pace_init(&p, 120, 0.0);
    /* shown is the newest: nothing to wait for on the clock */
    CHECK_EQ(ui_pace_wait_ms(&p, 3, 3, 0.05), -1);
    CHECK_EQ(ui_pace_advance(&p, 3, 3, 0.05), 3);
    /* the next step took the engine 2 s: it shows the moment it exists */
    CHECK_EQ(ui_pace_wait_ms(&p, 3, 4, 2.0), 0);
    CHECK_EQ(ui_pace_advance(&p, 3, 4, 2.0), 4);
    /* and a step arriving 50 ms later waits for the rest of the interval */
    CHECK_EQ(ui_pace_advance(&p, 4, 5, 2.05), 4);
    CHECK_EQ(ui_pace_wait_ms(&p, 4, 5, 2.05), 70);
    CHECK_EQ(ui_pace_advance(&p, 4, 5, 2.12), 5);
}

TEST(ui_pace_zero_follows_the_engine) {
    ui_pace p;
    ui_pace_init(&p, 0, 1.0);
    CHECK_EQ(ui_pace_wait_ms(&p, 0, 30, 1.0), 0);
    CHECK_EQ(ui_pace_advance(&p, 0, 30, 1.0), 30);
    ui_pace_init(&p, -5, 0.0);                       /* out of range values are clamped */
    CHECK_EQ(p.ms, 0);
    ui_pace_init(&p, 1 << 30, 0.0);
    CHECK_EQ(p.ms, UI_PACE_MAX_MS);
}

TEST(ui_pace_mark_restarts_the_interval) {
    ui_pace p;
    ui_pace_init(&p, 100, 0.0);
    ui_pace_mark(&p, 5.0);                           /* a key moved the view at t = 5 s */
    CHECK_EQ(ui_pace_advance(&p, 7, 9, 5.05), 7);
    CHECK_EQ(ui_pace_advance(&p, 7, 9, 5.1), 8);
}

TEST(ui_pace_horizon_keeps_the_engine_near) {
    ui_pace p;
    ui_pace_init(&p, 120, 0.0);
    CHECK_EQ(ui_pace_horizon(&p, 0), UI_PACE_LEAD);
    CHECK_EQ(ui_pace_horizon(&p, 40), 40 + UI_PACE_LEAD);
    CHECK_EQ(ui_pace_horizon(&p, INT32_MAX - 1), INT32_MAX);
    p.ms = 0;                                        /* no pace: no limit */
    CHECK_EQ(ui_pace_horizon(&p, 3), INT32_MAX);
}

TEST(ui_pace_halve_and_double) {
    int32_t ms = UI_PACE_DEFAULT_MS;
    const int32_t down[] = { 60, 30, 15, 0, 0 };
    for (int i = 0; i < 5; i++) { ms = ui_pace_halve(ms); CHECK_EQ(ms, down[i]); }
    const int32_t up[] = { 15, 30, 60, 120, 240 };
    for (int i = 0; i < 5; i++) { ms = ui_pace_double(ms); CHECK_EQ(ms, up[i]); }
    CHECK_EQ(ui_pace_double(UI_PACE_MAX_MS), UI_PACE_MAX_MS);
    CHECK_EQ(ui_pace_double(UI_PACE_MAX_MS / 2 + 1), UI_PACE_MAX_MS);
    char buf[32];
    ui_pace_label(120, buf, sizeof buf);
    CHECK_STREQ(buf, "pace 120 ms");
    ui_pace_label(0, buf, sizeof buf);
    CHECK_STREQ(buf, "pace off");
}

static const char *status_row(frame *f) {
    static char buf[4096];
    frame_row_text(f, f->h - 1, buf, sizeof buf);
    return buf;
}

/* The badge: a view behind the newest step is playback while following (RUNNING, or PAUSED),
 * a rewind when not; DONE only once the last step is shown; the pace label when asked. */
TEST(ui_pace_status_line) {
    ui_source src;
    um_err e = { "" };
    CHECK(fake_source_open(&src, 0, &e) == UM_OK);
    um_settings s = src.defaults;
    s.n_gen = 8;
    s.steps = 4;
    s.block_len = 8;
    um_snapshot *hist[8];
    int32_t n = 0;
    hist[n++] = src.start(src.self, &s, "hi", &e);
    CHECK(hist[0] != NULL);
    while (n < 8 && !hist[n - 1]->done) { hist[n] = src.step(src.self, &e); CHECK(hist[n] != NULL); n++; }
    CHECK(hist[n - 1]->done);
    theme th;
    theme_builtin(&th);
    frame f = { 0 };
    view_ctx vc = { 0 };
    CHECK(frame_init(&f, 120, 30, &e) == UM_OK);
    view_state v = { .src = &src, .hist = hist, .n_hist = n, .shown = 1, .th = &th, .depth = 256, .cursor = -1,
                     .following = true, .pace_ms = 120 };
    CHECK(view_build(&vc, &f, &v, &e) == UM_OK);
    CHECK_CONTAINS(status_row(&f), " step 1/4 ");
    CHECK_CONTAINS(status_row(&f), " pace 120 ms ");
    CHECK_CONTAINS(status_row(&f), " RUNNING ");
    CHECK(!strstr(status_row(&f), "DONE") && !strstr(status_row(&f), "REWIND"));
    v.paused = true;
    CHECK(view_build(&vc, &f, &v, &e) == UM_OK);
    CHECK_CONTAINS(status_row(&f), " PAUSED ");
    v.following = false;                              /* scrubbed back: a rewind */
    CHECK(view_build(&vc, &f, &v, &e) == UM_OK);
    CHECK_CONTAINS(status_row(&f), " REWIND 1/4 ");
    v.following = true;
    v.paused = false;
    v.shown = n - 1;
    v.pace_ms = 0;
    CHECK(view_build(&vc, &f, &v, &e) == UM_OK);
    CHECK_CONTAINS(status_row(&f), " DONE ");
    CHECK_CONTAINS(status_row(&f), " pace off ");
    v.pace_ms = -1;                                   /* not shown */
    CHECK(view_build(&vc, &f, &v, &e) == UM_OK);
    CHECK(!strstr(status_row(&f), "pace"));
    frame_free(&f);
    view_ctx_free(&vc);
    for (int32_t i = 0; i < n; i++) src.release(hist[i]);
    src.close(src.self);
}
