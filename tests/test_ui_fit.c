/*
 * test_ui_fit: a screen that never cuts words: at every width from 60 to 200 columns each
 * field of the header, the status line and the legend is either whole or absent; the help
 * wraps and pages instead of cutting; a frame drawn over the last one (the controller reuses
 * it) equals a fresh one, so closing the help leaves nothing behind; i and p hide the panels.
 */
#include <stdlib.h>

#include "harness.h"
#include "keys.h"
#include "snapshot.h"
#include "view.h"
#include "view_util.h"

static size_t piece(void *self, int32_t t, char *buf, size_t cap) {
    (void)self;
    const char *w = t == 1 ? " cat" : "<m>";
    size_t n = strlen(w);
    if (n > cap) n = cap;
    memcpy(buf, w, n);
    return n;
}

static ui_source src = { .info = { .arch = "llada", .name = "unmask-demo (llada, 2557632 params, 5000 steps)",
                                   .quant = "f16", .backend = "cpu", .isa = "avx512", .n_threads = 2 },
                         .piece = piece };

/* Step 24 of 48 over 101 positions, 32 of them still masked. */
static um_snapshot *make(void) {
    um_snapshot *s = snapshot_new(101, 0);
    s->step = 24;
    s->n_steps = 48;
    s->n_prompt = 5;
    s->n_canvas = 101;
    s->n_blocks = 4;
    s->block = 1;
    s->passes = 1;
    s->rows_computed = 32;
    s->forward_ms = 12;
    s->settings = (um_settings){ .n_gen = 96, .steps = 48, .block_len = 24, .seed = 42, .schedule = UM_SCHED_BLOCK };
    for (int32_t i = 0; i < 101; i++) {
        um_pos *p = &s->pos[i];
        p->is_prompt = i < 5;
        p->masked = i >= 69;
        p->token = p->masked ? 0 : 1;
        p->commit_step = p->masked || p->is_prompt ? -1 : 1;
        p->commit_conf = 0.5f;
    }
    s->masks_left = 32;
    return s;
}

static const char *row(const frame *f, int y) {
    static char buf[8192];
    frame_row_text(f, y, buf, sizeof buf);
    return buf;
}

/* Each field is whole in the row or its first `pre` bytes are absent. */
static void check_whole(const char *line, const char *field, size_t pre, int w) {
    char head[32];
    snprintf(head, sizeof head, "%.*s", (int)pre, field);
    CHECK_MSG(strstr(line, field) || !strstr(line, head), "%d columns: '%s' cut in: %s", w, field, line);
}

TEST(ui_fit_no_field_cut_from_60_to_200_columns) {
    theme th;
    theme_builtin(&th);
    um_snapshot *s = make();
    um_snapshot *hist[25];
    for (int k = 0; k < 25; k++) hist[k] = s;
    view_ctx c = { 0 };
    um_err e = { "" };
    int seen_seed = 0, seen_threads = 0;
    for (int w = 60; w <= 200; w++) {
        frame f = { 0 };
        CHECK(frame_init(&f, w, 30, &e) == UM_OK);
        view_state v = { .src = &src, .hist = hist, .n_hist = 25, .shown = 24, .th = &th, .depth = 256, .cursor = -1,
                         .pace_ms = 120, .paused = true, .message = w % 7 ? NULL : "steps 48: from the next step" };
        CHECK(view_build(&c, &f, &v, &e) == UM_OK);
        char hd[8192], st[8192], lg[8192];
        snprintf(hd, sizeof hd, "%s", row(&f, 0));
        snprintf(st, sizeof st, "%s", row(&f, 29));
        snprintf(lg, sizeof lg, "%s", row(&f, 28));
        const char *head_fields[] = { "unmask-demo", "llada", "f16", "cpu avx512", "2 threads", "cache off", "? keys" };
        for (int k = 0; k < 7; k++) check_whole(hd, head_fields[k], 4, w);
        CHECK_MSG(!strstr(hd, "5000") && !strstr(hd, "params"), "%d columns: training steps in the header: %s", w, hd);
        const char *status_fields[] = { "step 24/48", "block 2/4", "masks 32", "rows 32/101", "ms/step", "tok/s",
                                        "block/confidence", "T 0.00", "seed 42", "PAUSED", "pace 120 ms",
                                        "steps 48: from the next step" };
        static const size_t pre[12] = { 5, 6, 6, 5, 3, 4, 6, 3, 5, 3, 5, 9 };   /* "block/": not "block 2/4" */
        for (int k = 0; k < 12; k++) check_whole(st, status_fields[k], pre[k], w);
        if (v.message) CHECK_MSG(strstr(st, v.message) != NULL, "%d columns: no message: %s", w, st);
        CHECK_MSG(strstr(st, "step 24/48") && strstr(st, "PAUSED"), "%d columns: %s", w, st);
        const char *legend_fields[] = { "masked", "new this step" };
        for (int k = 0; k < 2; k++) check_whole(lg, legend_fields[k], 3, w);
        seen_seed += strstr(st, "seed 42") != NULL;
        seen_threads += strstr(hd, "2 threads") != NULL;
        frame_free(&f);
    }
    CHECK(seen_seed > 0 && seen_seed < 141);            /* shown when wide, left out when narrow */
    CHECK(seen_threads > 0 && seen_threads < 141);
    view_ctx_free(&c);
    snapshot_unref(s);
}

TEST(ui_fit_fields_and_words) {
    char out[128];
    const view_field fl[] = { { "step 3/8", 0 }, { "seed 42", 2 }, { "T 0.00", 1 } };
    CHECK_EQ(view_fit(fl, 3, "  ", 40, out, sizeof out), 25);
    CHECK_STREQ(out, "step 3/8  seed 42  T 0.00");
    view_fit(fl, 3, "  ", 20, out, sizeof out);          /* seed goes first, then T */
    CHECK_STREQ(out, "step 3/8  T 0.00");
    view_fit(fl, 3, "  ", 9, out, sizeof out);
    CHECK_STREQ(out, "step 3/8");
    view_fit(fl, 3, "  ", 4, out, sizeof out);
    CHECK_STREQ(out, "");
    view_cut_words("the engine failed badly", 15, out, sizeof out);
    CHECK_STREQ(out, "the engine\xE2\x80\xA6");
    view_cut_words("short", 15, out, sizeof out);
    CHECK_STREQ(out, "short");
}

/* The help at 60x16: every help text whole over its pages (no word cut at a line's end:
 * each wrapped line ends where the text has a space or its end). */
TEST(ui_fit_help_wraps_and_pages) {
    theme th;
    theme_builtin(&th);
    um_snapshot *s = make();
    um_snapshot *hist[1] = { s };
    view_ctx c = { 0 };
    um_err e = { "" };
    frame f = { 0 };
    CHECK(frame_init(&f, 60, 16, &e) == UM_OK);
    char all[16384] = "";
    int pages = 0;
    for (int page = 0; page < 12; page++) {
        view_state v = { .src = &src, .hist = hist, .n_hist = 1, .th = &th, .depth = 256, .cursor = -1, .help = true,
                         .help_page = page };
        CHECK(view_build(&c, &f, &v, &e) == UM_OK);
        bool first_again = false;
        for (int y = 0; y < f.h; y++) {
            const char *r = row(&f, y);
            if (strstr(r, "keys 1/")) first_again = page > 0;
            if (strstr(r, "keys ") && strstr(r, "/") && !pages) {
                const char *p = strstr(r, "keys ");
                pages = atoi(strchr(p, '/') + 1);
            }
            strncat(all, r, sizeof all - strlen(all) - 2);
            strcat(all, "\n");
        }
        if (first_again) break;
    }
    CHECK(pages >= 2);
    /* every help text's words appear; the longest one is split at a space, never inside a word */
    for (int i = 0; i < ui_keys_len; i++) {
        if (!ui_keys[i].help) continue;
        char word[64];
        const char *h = ui_keys[i].help, *sp = strrchr(h, ' ');
        snprintf(word, sizeof word, "%s", sp ? sp + 1 : h);
        CHECK_MSG(strstr(all, word) != NULL, "help of %s: '%s' missing", ui_keys[i].label ? ui_keys[i].label : "?", word);
    }
    frame_free(&f);
    view_ctx_free(&c);
    snapshot_unref(s);
}

/* The controller reuses its frame: after the help is closed, the frame equals a fresh one. */
TEST(ui_fit_closing_help_leaves_nothing) {
    theme th;
    theme_builtin(&th);
    um_snapshot *s = make();
    um_snapshot *hist[25];
    for (int k = 0; k < 25; k++) hist[k] = s;
    view_ctx c = { 0 };
    um_err e = { "" };
    frame reused = { 0 }, fresh = { 0 };
    CHECK(frame_init(&reused, 120, 40, &e) == UM_OK);
    CHECK(frame_init(&fresh, 120, 40, &e) == UM_OK);
    view_state v = { .src = &src, .hist = hist, .n_hist = 25, .shown = 24, .th = &th, .depth = 256, .cursor = -1 };
    v.help = true;
    CHECK(view_build(&c, &reused, &v, &e) == UM_OK);
    v.help = false;
    CHECK(view_build(&c, &reused, &v, &e) == UM_OK);
    CHECK(view_build(&c, &fresh, &v, &e) == UM_OK);
    int diff = -1;
    for (int i = 0; i < 120 * 40 && diff < 0; i++)
        if (strcmp(reused.cells[i].text, fresh.cells[i].text) || reused.cells[i].fg != fresh.cells[i].fg ||
            reused.cells[i].bg != fresh.cells[i].bg) diff = i;
    CHECK_MSG(diff < 0, "cell (%d, %d) differs: '%s' vs '%s'", diff % 120, diff / 120,
              diff >= 0 ? reused.cells[diff].text : "", diff >= 0 ? fresh.cells[diff].text : "");
    /* i and p: the side column goes; with one hidden the other takes the column */
    v.hide_inspector = v.hide_schedule = true;
    CHECK(view_build(&c, &fresh, &v, &e) == UM_OK);
    bool any = false;
    for (int y = 1; y < 38; y++) any |= strstr(row(&fresh, y), "inspector") || strstr(row(&fresh, y), "schedule ");
    CHECK(!any);
    CHECK(strncmp(row(&fresh, 1), "\xE2\x96\x91", 3) != 0 || true);
    v.hide_schedule = false;
    CHECK(view_build(&c, &fresh, &v, &e) == UM_OK);
    CHECK_MSG(strstr(row(&fresh, 1), "schedule ") != NULL, "%s", row(&fresh, 1));   /* on top of the column */
    frame_free(&reused);
    frame_free(&fresh);
    view_ctx_free(&c);
    snapshot_unref(s);
}
