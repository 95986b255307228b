/* Tests of ui/view.c and the frame (src/record/frame.c): the screen as a frame, with hand-made snapshots over a
 * tiny vocabulary, so every expected cell is written out here. */
#include <math.h>
#include <stdlib.h>
#include "harness.h"
#include "heat.h"
#include "summary.h"
#include "view.h"

static const char *const vocab[] = {
    "<m>", "ab", "\n", "cd", "\t", "x", "\xE2\x82", "\xAC", "漢字", "😀", "e", "\xCC\x81", "0123456789",
};
enum { M = 0, AB, NL, CD, TAB, X, EURO1, EURO2, CJK, EMOJI, E, ACUTE, DIGITS };

static size_t piece(void *self, int32_t t, char *buf, size_t cap) {
    (void)self;
    size_t n = strlen(vocab[t]);
    if (n > cap) n = cap;
    memcpy(buf, vocab[t], n);
    return n;
}

static ui_source src = { .info = { .arch = "test", .name = "unit", .quant = "q", .backend = "cpu", .isa = "x", .n_threads = 2 },
                         .piece = piece };

/* A snapshot of tokens toks[0..n): first n_prompt are prompt, tokens M are masked. */
static um_snapshot *snap(const int32_t *toks, int32_t n, int32_t n_prompt) {
    um_snapshot *s = calloc(1, sizeof *s + (size_t)n * sizeof(um_pos));
    s->pos = (um_pos *)(s + 1);
    s->n_canvas = n;
    s->n_prompt = n_prompt;
    s->n_steps = 4;
    s->n_blocks = 1;
    s->step = 1;
    for (int32_t i = 0; i < n; i++) {
        um_pos *p = &s->pos[i];
        p->token = toks[i];
        p->is_prompt = i < n_prompt;
        p->masked = toks[i] == M;
        p->commit_step = p->masked || p->is_prompt ? -1 : 1;
        p->commit_conf = 0.9f;
        p->has_view = !p->is_prompt;
        p->top[0].token = X;
        p->top[0].prob = 0.6f;
        s->masks_left += p->masked;
    }
    return s;
}

static theme th;
static view_ctx ctx;

static int build(frame *f, int w, int h, um_snapshot *s, view_heat heat) {
    um_err e = { "" };
    frame_free(f);
    if (frame_init(f, w, h, &e)) return UM_FAIL;
    um_snapshot *hist[2] = { s, s };
    view_state v = { .src = &src, .hist = hist, .n_hist = 1, .shown = 0, .th = &th, .depth = 256,
                     .heat = heat, .cursor = -1 };
    return view_build(&ctx, f, &v, &e);
}

static const char *row(frame *f, int y) {
    static char buf[4096];
    frame_row_text(f, y, buf, sizeof buf);
    return buf;
}

TEST(ui_view_prompt_newline_tab_and_masks) {
    theme_builtin(&th);
    frame f = { 0 };
    int32_t toks[] = { AB, NL, CD, X, TAB, X, M, M, EURO1, EURO2 };
    um_snapshot *s = snap(toks, 10, 3);
    CHECK(build(&f, 100, 30, s, VIEW_HEAT_COMMIT) == UM_OK);
    /* row 1: prompt "ab↵", row 2: "cd", row 3: generated "x→  x░░€" (tab to column 4) */
    CHECK(strncmp(row(&f, 1), "ab\xE2\x86\xB5 ", 6) == 0);
    CHECK(strncmp(row(&f, 2), "cd ", 3) == 0);
    CHECK_MSG(strncmp(row(&f, 3), "x\xE2\x86\x92  x\xE2\x96\x91\xE2\x96\x91\xE2\x82\xAC ", 17) == 0, "%s", row(&f, 3));
    CHECK_EQ(frame_at(&f, 7, 3)->pos, 8);                       /* € belongs to its first byte's token */
    CHECK_EQ(frame_at(&f, 1, 3)->pos, 4);                       /* the tab's cells map to the tab */
    CHECK_EQ(frame_at(&f, 3, 3)->pos, 4);
    CHECK_EQ(frame_at(&f, 0, 1)->fg, th.role[THEME_PROMPT].fg); /* prompt dimmed */
    CHECK(frame_at(&f, 0, 1)->attrs & FRAME_DIM);
    CHECK_EQ(frame_at(&f, 5, 3)->fg, th.role[THEME_MASK].fg);
    /* heat 0.9 shown at the nearest of 32 levels (28/31), the documented quantisation */
    CHECK_EQ(frame_at(&f, 0, 3)->fg, theme_heat(&th, 28.0f / 31.0f));
    /* panel border in column 65 (100 - 34 - 1); status line at the bottom */
    for (int y = 1; y < 28; y++) CHECK_STREQ(frame_at(&f, 65, y)->text, "\xE2\x94\x82");
    CHECK_CONTAINS(row(&f, 29), "step 1/4");
    CHECK_CONTAINS(row(&f, 29), "masks 2");
    CHECK_CONTAINS(row(&f, 0), "unit");
    /* live confidence: masks show their top candidate as ghost text */
    CHECK(build(&f, 100, 30, s, VIEW_HEAT_LIVE) == UM_OK);
    CHECK_MSG(strncmp(row(&f, 3), "x\xE2\x86\x92  xxx", 9) == 0, "%s", row(&f, 3));
    CHECK(frame_at(&f, 5, 3)->attrs & FRAME_DIM);
    frame_free(&f);
    free(s);
    view_ctx_free(&ctx);
}

TEST(ui_view_wide_cells_and_wrapping) {
    theme_builtin(&th);
    frame f = { 0 };
    int32_t toks[12] = { CJK, EMOJI, E, ACUTE };
    for (int i = 4; i < 12; i++) toks[i] = DIGITS;              /* 80 cells: wraps at 65 */
    um_snapshot *s = snap(toks, 12, 4);
    CHECK(build(&f, 100, 30, s, VIEW_HEAT_COMMIT) == UM_OK);
    CHECK_STREQ(frame_at(&f, 0, 1)->text, "漢");
    CHECK_EQ(frame_at(&f, 0, 1)->width, 2);
    CHECK_EQ(frame_at(&f, 1, 1)->width, 0);
    CHECK_STREQ(frame_at(&f, 2, 1)->text, "字");
    CHECK_STREQ(frame_at(&f, 4, 1)->text, "😀");
    CHECK_STREQ(frame_at(&f, 6, 1)->text, "e\xCC\x81");         /* combining mark joined across tokens */
    CHECK_EQ(frame_at(&f, 6, 1)->width, 1);
    CHECK_EQ(frame_at(&f, 6, 1)->pos, 2);
    CHECK_STREQ(frame_at(&f, 64, 2)->text, "4");               /* digits: 65th cell is '4' */
    CHECK_STREQ(frame_at(&f, 0, 3)->text, "5");                /* then the line wraps */
    /* narrow layout: canvas takes the whole width */
    CHECK(build(&f, 80, 24, s, VIEW_HEAT_COMMIT) == UM_OK);
    CHECK_STREQ(frame_at(&f, 79, 2)->text, "9");
    CHECK_STREQ(frame_at(&f, 0, 3)->text, " ");
    /* too small */
    CHECK(build(&f, VIEW_MIN_W - 1, VIEW_MIN_H, s, VIEW_HEAT_COMMIT) == UM_OK);
    bool found = false;
    for (int y = 0; y < f.h; y++) found |= strstr(row(&f, y), "terminal too small") != NULL;
    CHECK(found);
    CHECK(build(&f, VIEW_MIN_W, VIEW_MIN_H, s, VIEW_HEAT_COMMIT) == UM_OK);
    CHECK_CONTAINS(row(&f, VIEW_MIN_H - 1), "step 1/4");
    frame_free(&f);
    free(s);
    view_ctx_free(&ctx);
}

TEST(ui_frame_wide_cell_invariants) {
    frame f;
    frame_style st = { FRAME_DEFAULT, FRAME_DEFAULT, 0 };
    CHECK(frame_init(&f, 4, 1, NULL) == UM_OK);
    CHECK_EQ(frame_put_cluster(&f, 3, 0, 4, "漢", 2, st, 1), 4);  /* no room: blank */
    CHECK_STREQ(frame_at(&f, 3, 0)->text, " ");
    frame_put_cluster(&f, 1, 0, 4, "漢", 2, st, 1);
    CHECK_EQ(frame_at(&f, 2, 0)->width, 0);
    frame_put_cluster(&f, 2, 0, 4, "a", 1, st, 2);                /* over the right half */
    CHECK_STREQ(frame_at(&f, 1, 0)->text, " ");
    CHECK_EQ(frame_at(&f, 1, 0)->width, 1);
    CHECK_STREQ(frame_at(&f, 2, 0)->text, "a");
    frame_put_cluster(&f, 0, 0, 4, "漢", 2, st, 1);
    frame_put_cluster(&f, 0, 0, 4, "b", 1, st, 2);                /* over the left half */
    CHECK_EQ(frame_at(&f, 1, 0)->width, 1);
    CHECK_STREQ(frame_at(&f, 1, 0)->text, " ");
    frame_free(&f);
}

/* What the recorders read from a frame cell: its code points and its colours with the
 * terminal default resolved. */
TEST(ui_frame_cell_for_recorders) {
    frame f;
    frame_style st = { 0x112233, FRAME_DEFAULT, FRAME_BOLD | FRAME_ITALIC };
    CHECK(frame_init(&f, 4, 1, NULL) == UM_OK);
    frame_put_cluster(&f, 0, 0, 4, "e\xCC\x81", 1, st, 0);
    frame_put_cluster(&f, 1, 0, 4, "漢", 2, st, 1);
    uint32_t cp[FRAME_MAX_CP];
    CHECK_EQ(frame_cell_cps(frame_at(&f, 0, 0), cp), 2);
    CHECK_EQ(cp[0], 'e');
    CHECK_EQ(cp[1], 0x301);
    CHECK_EQ(frame_fg_rgb(frame_at(&f, 0, 0)), 0x112233);
    CHECK_EQ(frame_bg_rgb(frame_at(&f, 0, 0)), FRAME_DEFAULT_BG);
    CHECK_EQ(frame_cell_cps(frame_at(&f, 1, 0), cp), 1);
    CHECK_EQ(cp[0], 0x6F22);
    CHECK_EQ(frame_cell_cps(frame_at(&f, 2, 0), cp), 0);      /* continuation */
    CHECK_EQ(frame_cell_cps(frame_at(&f, 3, 0), cp), 0);      /* blank */
    CHECK_EQ(frame_fg_rgb(frame_at(&f, 3, 0)), FRAME_DEFAULT_FG);
    frame_cell bad = { .text = "a\xff", .width = 1 };        /* hand-made, malformed: U+FFFD */
    CHECK_EQ(frame_cell_cps(&bad, cp), 2);
    CHECK_EQ(cp[1], 0xFFFD);
    frame_free(&f);
}

TEST(ui_view_schedule_plan_ahead) {
    theme_builtin(&th);
    frame f = { 0 };
    int32_t toks[8] = { M, M, M, M, M, M, M, M };
    um_snapshot *s = snap(toks, 8, 0);
    s->step = 0;
    s->settings.schedule = UM_SCHED_BLOCK;
    s->settings.n_gen = 8;
    s->settings.steps = 4;
    s->settings.block_len = 8;
    CHECK(build(&f, 100, 30, s, VIEW_HEAT_COMMIT) == UM_OK);
    bool found = false;
    for (int y = 0; y < f.h; y++) found |= strstr(row(&f, y), "4 to go") != NULL;   /* 8 masks, 4 steps */
    CHECK(found);
    /* 4 planned columns of equal height (2 each = the scale maximum): full ░ columns. At
     * 100x30 the schedule panel is rows 19..27 (9 rows: title, parameters, 5 chart rows,
     * marker, footer). */
    int shaded = 0;
    for (int y = 19; y < 28; y++)
        for (int x = 66; x < f.w; x++) shaded += !strcmp(frame_at(&f, x, y)->text, "\xE2\x96\x91");
    CHECK_EQ(shaded, 4 * 5);
    s->settings.schedule = UM_SCHED_THRESHOLD;               /* model-dependent: no plan ahead */
    CHECK(build(&f, 100, 30, s, VIEW_HEAT_COMMIT) == UM_OK);
    found = false;
    for (int y = 0; y < f.h; y++) found |= strstr(row(&f, y), "to go") != NULL;
    CHECK(!found);
    frame_free(&f);
    free(s);
    view_ctx_free(&ctx);
}

static bool special_x(void *self, int32_t t) { (void)self; return t == X; }

TEST(ui_view_generated_specials_compact) {
    theme_builtin(&th);
    frame f = { 0 };
    int32_t toks[] = { X, AB, X, X };            /* prompt "x", then "ab" and two specials */
    um_snapshot *s = snap(toks, 4, 1);
    ui_source keep = src;
    src.is_special = special_x;
    int rc = build(&f, 100, 30, s, VIEW_HEAT_COMMIT);
    src = keep;
    CHECK(rc == UM_OK);
    CHECK(strncmp(row(&f, 1), "x ", 2) == 0);              /* the prompt keeps its text */
    CHECK(strncmp(row(&f, 2), "ab\xE2\x88\x8E\xE2\x88\x8E ", 9) == 0);
    CHECK(frame_at(&f, 2, 2)->attrs & FRAME_DIM);
    CHECK_EQ(frame_at(&f, 3, 2)->pos, 3);
    frame_free(&f);
    free(s);
    view_ctx_free(&ctx);
}

/* A source error: with no run, the body says "cannot start: ..." (wrapped to the width)
 * instead of "starting..." and the status line holds the error and an ERROR badge; with a
 * run on screen, the status line still says it. */
TEST(ui_view_source_error) {
    theme_builtin(&th);
    frame f = { 0 };
    um_err e = { "" };
    const char *msg = "prompt of 24002 tokens is longer than the context of 256 tokens";
    CHECK(frame_init(&f, 60, 16, &e) == UM_OK);
    view_state v = { .src = &src, .th = &th, .depth = 256, .cursor = -1, .error = msg };
    CHECK(view_build(&ctx, &f, &v, &e) == UM_OK);
    /* 60 columns: "cannot start: " + 64 characters wraps after 58 cells (x 1..58) */
    CHECK_MSG(strncmp(row(&f, 1), " cannot start: prompt of 24002 tokens is longer than the co", 59) == 0, "%s", row(&f, 1));
    CHECK_MSG(strncmp(row(&f, 2), " ntext of 256 tokens ", 21) == 0, "%s", row(&f, 2));
    CHECK_CONTAINS(row(&f, 4), "q quits");
    CHECK_EQ(frame_at(&f, 1, 1)->fg, th.role[THEME_MESSAGE].fg);
    CHECK_CONTAINS(row(&f, 15), " error: prompt of 24002");
    CHECK_CONTAINS(row(&f, 15), " ERROR ");
    for (int y = 0; y < f.h; y++) CHECK(!strstr(row(&f, y), "starting..."));
    v.error = NULL;                                          /* no error: the old text */
    CHECK(view_build(&ctx, &f, &v, &e) == UM_OK);
    CHECK_CONTAINS(row(&f, 1), "starting...");
    frame_free(&f);

    int32_t toks[] = { AB, X, M };
    um_snapshot *s = snap(toks, 3, 1);
    um_snapshot *hist[1] = { s };
    CHECK(frame_init(&f, 100, 30, &e) == UM_OK);
    view_state w = { .src = &src, .hist = hist, .n_hist = 1, .th = &th, .depth = 256, .cursor = -1,
                     .error = "schedule: eps must be in [0, 1) (got 1)", .message = "schedule timestep: restarted" };
    CHECK(view_build(&ctx, &f, &w, &e) == UM_OK);
    CHECK_CONTAINS(row(&f, 29), " error: schedule: eps must be in [0, 1) (got 1)");
    CHECK_CONTAINS(row(&f, 29), " ERROR ");
    CHECK(!strstr(row(&f, 29), "RUNNING") && !strstr(row(&f, 29), "restarted"));
    CHECK(strncmp(row(&f, 1), "ab", 2) == 0);               /* the run stays drawn */
    frame_free(&f);
    free(s);
    view_ctx_free(&ctx);
}

/* The prompt editor on a prompt longer than the status line shows its end, where typing goes. */
TEST(ui_view_editor_shows_the_end_of_a_long_prompt) {
    theme_builtin(&th);
    frame f = { 0 };
    um_err e = { "" };
    static char longp[3000];
    for (size_t i = 0; i + 1 < sizeof longp; i++) longp[i] = (char)('a' + i % 26);
    memcpy(longp + sizeof longp - 5, "TAIL", 5);
    int32_t toks[] = { AB, X };
    um_snapshot *s = snap(toks, 2, 1);
    um_snapshot *hist[1] = { s };
    CHECK(frame_init(&f, 100, 30, &e) == UM_OK);
    view_state v = { .src = &src, .hist = hist, .n_hist = 1, .th = &th, .depth = 256, .cursor = -1, .edit = longp };
    CHECK(view_build(&ctx, &f, &v, &e) == UM_OK);
    CHECK_CONTAINS(row(&f, 29), "TAIL\xE2\x96\x8F");
    frame_free(&f);
    free(s);
    view_ctx_free(&ctx);
}

/* ui_summary_of's order distance: 0 left to right, 1 right to left, ties in a step by
 * position; tokens per forward pass from the snapshot's pass count. */
TEST(ui_view_summary_order_distance) {
    int32_t toks[] = { AB, X, X, X, X };                    /* prompt 1, 4 generated */
    um_snapshot *s = snap(toks, 5, 1);
    int32_t scratch[16];
    ui_summary sm;
    s->step = 4;
    s->passes_total = 8;
    s->done = true;
    for (int i = 0; i < 4; i++) s->pos[1 + i].commit_step = i + 1;   /* left to right */
    ui_summary_of(s, scratch, &sm);
    CHECK(sm.steps == 4 && sm.passes == 8);
    CHECK(fabs(sm.tok_per_pass - 0.5) < 1e-9);
    CHECK(fabs(sm.order_dist) < 1e-9);
    for (int i = 0; i < 4; i++) s->pos[1 + i].commit_step = 4 - i;   /* right to left: the maximum */
    ui_summary_of(s, scratch, &sm);
    CHECK(fabs(sm.order_dist - 1.0) < 1e-9);
    for (int i = 0; i < 4; i++) s->pos[1 + i].commit_step = 1;       /* all in one step: in order */
    ui_summary_of(s, scratch, &sm);
    CHECK(fabs(sm.order_dist) < 1e-9);
    /* steps 2,1,1,2: ranks 2,0,1,3; sum |r - i| = 2+1+1+0 = 4 over floor(16/2) = 8 */
    int cs[4] = { 2, 1, 1, 2 };
    for (int i = 0; i < 4; i++) s->pos[1 + i].commit_step = cs[i];
    ui_summary_of(s, scratch, &sm);
    CHECK(fabs(sm.order_dist - 0.5) < 1e-9);
    free(s);
}

/* Two panes side by side: each header names its settings, the second counts the tokens that
 * differ from the first and marks them in the diff role; too narrow and short: a message. */
TEST(ui_view_compare_panes) {
    theme_builtin(&th);
    frame f = { 0 };
    um_err e = { "" };
    int32_t ta[] = { AB, X, X, X }, tb[] = { AB, X, AB, M };
    um_snapshot *a = snap(ta, 4, 1), *b = snap(tb, 4, 1);
    um_snapshot *ha[1] = { a }, *hb[1] = { b };
    view_pane panes[2] = { { .hist = ha, .n_hist = 1, .label = "main" }, { .hist = hb, .n_hist = 1, .label = "--seed 7" } };
    CHECK(frame_init(&f, 140, 30, &e) == UM_OK);
    view_state v = { .src = &src, .hist = ha, .n_hist = 1, .th = &th, .depth = 256, .cursor = -1,
                     .panes = panes, .n_panes = 2 };
    CHECK(view_build(&ctx, &f, &v, &e) == UM_OK);
    CHECK_CONTAINS(row(&f, 1), "1 main");
    CHECK_CONTAINS(row(&f, 1), "2 --seed 7 \xC2\xB7 step 1/4 \xC2\xB7 masks 1 \xC2\xB7 fwd 0");
    CHECK_CONTAINS(row(&f, 2), "1 differ");                 /* position 2 only: 3 is masked in b */
    int marked = 0;
    for (int x = 0; x < f.w; x++)
        for (int y = 1; y < f.h - 2; y++) marked += frame_at(&f, x, y)->bg == th.role[THEME_DIFF].bg;
    CHECK(marked >= 1);
    frame_free(&f);
    CHECK(frame_init(&f, 100, 30, &e) == UM_OK);             /* panes of 32 columns: whole fields */
    CHECK(view_build(&ctx, &f, &v, &e) == UM_OK);
    CHECK_CONTAINS(row(&f, 1), "2 --seed 7 \xC2\xB7 step 1/4 \xC2\xB7 masks 1");
    CHECK(!strstr(row(&f, 1), "fwd"));                      /* left out whole, not cut */
    CHECK_CONTAINS(row(&f, 2), "1 differ");                 /* the summary line fits in words */
    frame_free(&f);
    CHECK(frame_init(&f, 60, 16, &e) == UM_OK);              /* 4 panes at 60x16: 3 canvas rows, too few */
    view_pane four[4] = { panes[0], panes[1], panes[0], panes[1] };
    v.panes = four;
    v.n_panes = 4;
    CHECK(view_build(&ctx, &f, &v, &e) == UM_OK);
    bool said = false;
    for (int y = 0; y < f.h; y++) said |= strstr(row(&f, y), "terminal too small for 4 panes") != NULL;
    CHECK(said);
    frame_free(&f);
    free(a);
    free(b);
    view_ctx_free(&ctx);
}

/* The header names the shown step's K/V cache (mode/storage, refresh rule, bytes held) or
 * "cache off"; a model name too long for the row is cut with "…", never the cache. */
TEST(ui_view_header_names_the_cache) {
    theme_builtin(&th);
    frame f = { 0 };
    int32_t toks[] = { AB, X, M, M };
    um_snapshot *s = snap(toks, 4, 1);
    CHECK(build(&f, 100, 30, s, VIEW_HEAT_COMMIT) == UM_OK);
    CHECK_CONTAINS(row(&f, 0), "\xE2\x94\x82 2 threads \xE2\x94\x82 cache off ");
    s->settings.cache = UM_CACHE_DUAL;
    s->settings.cache_type = UM_KV_F16;
    s->cache_bytes = 84 * 1024;
    CHECK(build(&f, 100, 30, s, VIEW_HEAT_COMMIT) == UM_OK);
    CHECK_CONTAINS(row(&f, 0), "cache dual/f16 \xC2\xB7 84 KiB");
    CHECK(!strstr(row(&f, 0), "cache off"));
    s->settings.cache = UM_CACHE_PREFIX;
    s->settings.cache_type = UM_KV_Q8_0;
    s->settings.cache_refresh = 8;
    s->cache_bytes = 1288490189;                              /* 1.2 GiB */
    CHECK(build(&f, 100, 30, s, VIEW_HEAT_COMMIT) == UM_OK);
    CHECK_CONTAINS(row(&f, 0), "cache prefix/q8_0 refresh 8 \xC2\xB7 1.2 GiB");
    s->settings.cache = UM_CACHE_NONE;                        /* switched off, memory still held */
    CHECK(build(&f, 100, 30, s, VIEW_HEAT_COMMIT) == UM_OK);
    CHECK_CONTAINS(row(&f, 0), "cache off \xC2\xB7 1.2 GiB held");
    ui_source keep = src;                                     /* a long name: cut, the cache stays */
    memset(src.info.name, 'n', sizeof src.info.name - 1);
    s->settings.cache = UM_CACHE_DUAL;
    s->cache_bytes = 512;
    int rc = build(&f, 100, 30, s, VIEW_HEAT_COMMIT);
    src = keep;
    CHECK(rc == UM_OK);
    CHECK_MSG(strstr(row(&f, 0), "nnn\xE2\x80\xA6 \xE2\x94\x82") != NULL, "%s", row(&f, 0));   /* cut with a mark */
    CHECK_MSG(strstr(row(&f, 0), "\xE2\x94\x82 cache dual/q8_0 refresh 8 \xC2\xB7 512 B") != NULL, "%s", row(&f, 0));
    CHECK_MSG(strstr(row(&f, 0), "? keys") != NULL, "%s", row(&f, 0));
    frame_free(&f);
    free(s);
    view_ctx_free(&ctx);
}

/* The status line: rows the shown step's passes computed out of passes x canvas, "refresh"
 * when they refilled the cache; 0 at step 0 (no pass). Read from the snapshot shown, so a
 * rewound step shows its own count. */
TEST(ui_view_status_shows_rows_computed) {
    theme_builtin(&th);
    frame f = { 0 };
    um_err e = { "" };
    int32_t toks[] = { AB, X, X, X, M, M, M, M, M, M };     /* 10 positions */
    um_snapshot *a = snap(toks, 10, 1), *b = snap(toks, 10, 1), *c = snap(toks, 10, 1);
    a->step = 0;
    b->step = 1; b->passes = 1; b->rows_computed = 10; b->cache_refreshed = true;
    c->step = 2; c->passes = 1; c->rows_computed = 3;
    um_snapshot *hist[3] = { a, b, c };
    CHECK(frame_init(&f, 140, 30, &e) == UM_OK);
    view_state v = { .src = &src, .hist = hist, .n_hist = 3, .shown = 2, .th = &th, .depth = 256, .cursor = -1 };
    CHECK(view_build(&ctx, &f, &v, &e) == UM_OK);
    CHECK_MSG(strstr(row(&f, 29), "masks 6  rows 3/10  ") != NULL, "%s", row(&f, 29));
    CHECK(!strstr(row(&f, 29), "refresh"));
    v.shown = 1;                                             /* rewound: step 1's own numbers */
    CHECK(view_build(&ctx, &f, &v, &e) == UM_OK);
    CHECK_MSG(strstr(row(&f, 29), "rows 10/10 refresh  ") != NULL, "%s", row(&f, 29));
    v.shown = 0;
    CHECK(view_build(&ctx, &f, &v, &e) == UM_OK);
    CHECK_CONTAINS(row(&f, 29), "rows 0  ");
    c->passes = 2;                                           /* guidance: two passes a step */
    c->rows_computed = 6;
    v.shown = 2;
    CHECK(view_build(&ctx, &f, &v, &e) == UM_OK);
    CHECK_CONTAINS(row(&f, 29), "rows 6/20  ");
    c->batched = 4;                                          /* compare panes: one pass for four */
    CHECK(view_build(&ctx, &f, &v, &e) == UM_OK);
    CHECK_CONTAINS(row(&f, 29), "rows 6/20 in 1 pass x4  ");
    frame_free(&f);
    free(a); free(b); free(c);
    view_ctx_free(&ctx);
}

/* The K/V cache heat mode: positions the shown step served from the cache (prompt and
 * committed ones alike) take the ramp's low end, recomputed ones its high end; masks keep
 * their glyph in the same colours; the legend names both; a step with no pass has no heat. */
TEST(ui_view_cache_heat_stale_vs_recomputed) {
    theme_builtin(&th);
    frame f = { 0 };
    um_err e = { "" };
    int32_t toks[] = { AB, X, X, M, M, M };                   /* prompt "ab", then "xx░░░░" */
    um_snapshot *s = snap(toks, 6, 1), *s0 = snap(toks, 6, 1);
    s->step = 2;
    s->passes = 1;
    s->rows_computed = 3;
    s->settings.cache = UM_CACHE_DUAL;
    bool cached[6] = { true, true, false, false, false, true };
    for (int i = 0; i < 6; i++) s->pos[i].cached = cached[i];
    s0->step = 0;                                           /* no pass yet: nothing cached */
    um_snapshot *hist[2] = { s0, s };
    CHECK(frame_init(&f, 100, 30, &e) == UM_OK);
    view_state v = { .src = &src, .hist = hist, .n_hist = 2, .shown = 1, .th = &th, .depth = 256,
                     .heat = VIEW_HEAT_CACHE, .cursor = -1 };
    CHECK(view_build(&ctx, &f, &v, &e) == UM_OK);
    /* the ramp's ends as text colours: the dark end lifted to stay readable (ui_heat_readable) */
    frame_color stale = ui_heat_readable(theme_heat(&th, 0.0f), FRAME_DEFAULT), fresh = theme_heat(&th, 1.0f);
    CHECK(stale != fresh);
    /* row 1: "ab" (prompt), row 2: x x ░ ░ ░ at columns 0..4, positions 1..5 */
    CHECK_EQ(frame_at(&f, 0, 1)->fg, stale);                  /* the prompt, cached */
    CHECK(frame_at(&f, 0, 1)->attrs & FRAME_DIM);             /* still dimmed as the prompt */
    CHECK_EQ(frame_at(&f, 0, 2)->pos, 1);
    CHECK_EQ(frame_at(&f, 0, 2)->fg, stale);                  /* committed before the refresh */
    CHECK_EQ(frame_at(&f, 1, 2)->fg, fresh);                  /* recomputed */
    CHECK_STREQ(frame_at(&f, 2, 2)->text, "\xE2\x96\x91");    /* masks keep the glyph */
    CHECK_EQ(frame_at(&f, 2, 2)->fg, fresh);
    CHECK_EQ(frame_at(&f, 3, 2)->fg, fresh);
    CHECK_EQ(frame_at(&f, 4, 2)->pos, 5);                     /* a mask after the active block */
    CHECK_STREQ(frame_at(&f, 4, 2)->text, "\xE2\x96\x91");
    CHECK_EQ(frame_at(&f, 4, 2)->fg, stale);
    CHECK_CONTAINS(row(&f, 28), "K/V cache");
    CHECK_CONTAINS(row(&f, 28), "recomputed");
    CHECK_CONTAINS(row(&f, 28), "stale (cached K/V)");
    CHECK(!strstr(row(&f, 28), "every row recomputed"));
    /* legend swatches: recomputed in the high colour, stale in the low one */
    int x = 0;
    while (x < f.w && frame_at(&f, x, 28)->fg != fresh) x++;
    CHECK(x < f.w && !strcmp(frame_at(&f, x, 28)->text, "\xE2\x96\x88"));
    while (x < f.w && frame_at(&f, x, 28)->fg != stale) x++;
    CHECK(x < f.w && !strcmp(frame_at(&f, x, 28)->text, "\xE2\x96\x88"));
    /* without colours: stale dim, recomputed bold */
    v.depth = 0;
    CHECK(view_build(&ctx, &f, &v, &e) == UM_OK);
    CHECK(frame_at(&f, 0, 2)->attrs & FRAME_DIM);
    CHECK(!(frame_at(&f, 0, 2)->attrs & FRAME_BOLD));
    CHECK(frame_at(&f, 1, 2)->attrs & FRAME_BOLD);
    /* rewound to step 0: no pass, no heat; the prompt is plain prompt again */
    v.depth = 256;
    v.shown = 0;
    CHECK(view_build(&ctx, &f, &v, &e) == UM_OK);
    CHECK_EQ(frame_at(&f, 0, 1)->fg, th.role[THEME_PROMPT].fg);
    CHECK_EQ(frame_at(&f, 2, 2)->fg, th.role[THEME_MASK].fg);
    CHECK_CONTAINS(row(&f, 28), "no forward pass at this step");
    /* a run without a cache: every position recomputed, and the legend says why */
    s->settings.cache = UM_CACHE_NONE;
    for (int i = 0; i < 6; i++) s->pos[i].cached = false;
    s->rows_computed = 6;
    v.shown = 1;
    CHECK(view_build(&ctx, &f, &v, &e) == UM_OK);
    CHECK_EQ(frame_at(&f, 0, 1)->fg, fresh);
    CHECK_EQ(frame_at(&f, 4, 2)->fg, fresh);
    CHECK_CONTAINS(row(&f, 28), "cache off: every row recomputed");
    frame_free(&f);
    free(s);
    free(s0);
    view_ctx_free(&ctx);
}

static bool frame_has(frame *f, const char *needle) {
    for (int y = 0; y < f->h; y++) if (strstr(row(f, y), needle)) return true;
    return false;
}

/* Token editing: a replaced token is drawn in the theme's edited role, not as a fresh commit;
 * the legend names it, the status line counts the step's edits ("(post)" on an edit-only
 * step), the inspector says "edited at step S: OLD -> NEW"; rewound to the step before, the
 * old token is back and nothing is marked. */
TEST(ui_view_token_edit_is_distinct) {
    theme_builtin(&th);
    frame f = { 0 };
    um_err e = { "" };
    int32_t t1[] = { AB, X, X, CD, M, M };                    /* step 1: "xxcd" committed */
    int32_t t2[] = { AB, X, E, CD, X, M };                    /* step 2: pos 2 x -> e (edit), pos 4 fresh */
    um_snapshot *a = snap(t1, 6, 1), *b = snap(t2, 6, 1);
    a->step = 1;
    a->settings.edit = true;
    b->step = 2;
    b->settings.edit = true;
    b->n_edited = 1;
    b->pos[2].edited = true; b->pos[2].edit_step = 2; b->pos[2].edit_from = X; b->pos[2].n_edits = 1;
    b->pos[4].fresh = true; b->pos[4].commit_step = 2;
    um_snapshot *hist[2] = { a, b };
    CHECK(frame_init(&f, 140, 30, &e) == UM_OK);
    view_state v = { .src = &src, .hist = hist, .n_hist = 2, .shown = 1, .th = &th, .depth = 256, .cursor = 2 };
    CHECK(view_build(&ctx, &f, &v, &e) == UM_OK);
    /* row 2 after the prompt "ab": x e cd x ░ -> columns 0, 1, 2-3, 4 */
    const frame_cell *ed = frame_at(&f, 1, 2), *fr = frame_at(&f, 4, 2), *old = frame_at(&f, 0, 2);
    CHECK_EQ(ed->pos, 2);
    CHECK_STREQ(ed->text, "e");
    CHECK_EQ(fr->pos, 4);
    CHECK_EQ(old->pos, 1);
    CHECK(v.cursor == 2);
    v.cursor = -1;                                           /* the cursor's style would hide it */
    CHECK(view_build(&ctx, &f, &v, &e) == UM_OK);
    ed = frame_at(&f, 1, 2); fr = frame_at(&f, 4, 2); old = frame_at(&f, 0, 2);
    frame_style er = th.role[THEME_EDITED], fs = th.role[THEME_FRESH];
    CHECK_EQ(ed->bg, er.bg);                                  /* the edited role's background */
    CHECK((ed->attrs & er.attrs) == er.attrs);
    CHECK(ed->bg != fr->bg);                                  /* not drawn as a fresh commit */
    CHECK((fr->attrs & fs.attrs) == fs.attrs);
    CHECK(!(ed->attrs & FRAME_UNDERLINE));
    CHECK(old->bg != er.bg);                                  /* an untouched commit: no mark */
    CHECK_CONTAINS(row(&f, 28), "edited");                   /* legend */
    CHECK_CONTAINS(row(&f, 29), "masks 1  edits 1  rows");   /* status */
    v.cursor = 2;                                            /* the inspector on the edited position */
    CHECK(view_build(&ctx, &f, &v, &e) == UM_OK);
    CHECK_MSG(frame_has(&f, "edited at step 2: x -> e"), "%s", row(&f, 3));
    b->post_step = true;                                     /* an edit-only step after the block */
    CHECK(view_build(&ctx, &f, &v, &e) == UM_OK);
    CHECK_CONTAINS(row(&f, 29), "edits 1 (post)");
    v.shown = 0;                                             /* rewound: the old token, no mark */
    CHECK(view_build(&ctx, &f, &v, &e) == UM_OK);
    CHECK_STREQ(frame_at(&f, 1, 2)->text, "x");
    CHECK(frame_at(&f, 1, 2)->bg != er.bg);
    CHECK(!frame_has(&f, "edited at step"));
    CHECK_CONTAINS(row(&f, 29), "edits 0  rows");
    v.depth = 0;                                             /* no colours: the mark still shows */
    v.shown = 1;
    v.cursor = -1;
    CHECK(view_build(&ctx, &f, &v, &e) == UM_OK);
    CHECK(frame_at(&f, 1, 2)->attrs & FRAME_REVERSE);
    CHECK(!(frame_at(&f, 4, 2)->attrs & FRAME_REVERSE));
    frame_free(&f);
    free(a); free(b);
    view_ctx_free(&ctx);
}

/* Uniform-state (DiffusionGemma): every position holds a token; the kinds get their roles
 * (noise its own colours, a draft the draft attrs, an accepted token the accepted background),
 * the legend names them, the status line shows the rule's numbers, and the inspector's why line
 * names the entropy rule with the sum worked here: entropies 0.02 and 0.05 are below the draft's
 * 0.4, and 0.07 > the bound 0.06. */
TEST(ui_view_uniform_state_kinds) {
    theme_builtin(&th);
    frame f = { 0 };
    um_err e = { "" };
    int32_t t[] = { AB, X, E, CD, X, E };          /* prompt "ab"; canvas x e cd x e */
    um_snapshot *s = snap(t, 6, 1);
    s->us = (um_us_view){ .on = true, .start = 1, .end = 6, .canvas_step = 2, .temperature = 0.7f, .entropy_bound = 0.06f,
                          .accepted = 2, .held = 1, .stability = 2, .mean_entropy = 0.25f, .confidence = 0.005f };
    const uint8_t kind[6] = { UM_US_NONE, UM_US_ACCEPTED, UM_US_ACCEPTED, UM_US_DRAFT, UM_US_NOISE, UM_US_DRAFT };
    const float ent[6] = { 0, 0.05f, 0.02f, 0.4f, 0, 0.9f };
    for (int i = 0; i < 6; i++) { s->pos[i].us = kind[i]; s->pos[i].entropy = ent[i]; }
    s->pos[4].has_view = false;
    um_snapshot *hist[1] = { s };
    CHECK(frame_init(&f, 140, 30, &e) == UM_OK);
    view_state v = { .src = &src, .hist = hist, .n_hist = 1, .shown = 0, .th = &th, .depth = 256, .cursor = -1 };
    CHECK(view_build(&ctx, &f, &v, &e) == UM_OK);
    /* row 2: x e cd x e at columns 0, 1, 2-3, 4, 5 */
    const frame_cell *acc = frame_at(&f, 0, 2), *dr = frame_at(&f, 2, 2), *no = frame_at(&f, 4, 2);
    CHECK(acc->pos == 1 && dr->pos == 3 && no->pos == 4);
    CHECK_EQ(acc->bg, th.role[THEME_ACCEPTED].bg);
    CHECK((acc->attrs & th.role[THEME_ACCEPTED].attrs) == th.role[THEME_ACCEPTED].attrs);
    CHECK((dr->attrs & th.role[THEME_DRAFT].attrs) == th.role[THEME_DRAFT].attrs);
    CHECK(dr->bg != th.role[THEME_ACCEPTED].bg);
    CHECK_EQ(no->fg, th.role[THEME_NOISE].fg);
    CHECK(acc->fg != dr->fg);                      /* heat: entropy 0.05 against 0.4 */
    CHECK(frame_has(&f, "noise") && frame_has(&f, "draft") && frame_has(&f, "accepted"));   /* legend */
    CHECK_CONTAINS(row(&f, 29), "t 0.70  bound 0.06  accepted 2  held 1/2  H 0.250 < 0.005");
    CHECK_CONTAINS(row(&f, 29), "sc off");         /* self-conditioning: rows by product */
    s->us.self_cond = true;
    s->us.sc_exact_rows = 2;
    s->us.sc_bf16 = true;
    CHECK(view_build(&ctx, &f, &v, &e) == UM_OK);
    CHECK_CONTAINS(row(&f, 29), "sc bf16 2 + top-k 3");
    s->us.sc_exact_rows = 5;
    s->us.sc_bf16 = false;
    CHECK(view_build(&ctx, &f, &v, &e) == UM_OK);
    CHECK_CONTAINS(row(&f, 29), "sc f32 5");
    s->us.sc_exact_rows = 0;
    CHECK(view_build(&ctx, &f, &v, &e) == UM_OK);
    CHECK_CONTAINS(row(&f, 29), "sc top-k 5");
    v.cursor = 3;                                  /* below 0.4: 0.05 + 0.02 = 0.07 > 0.06 */
    CHECK(view_build(&ctx, &f, &v, &e) == UM_OK);
    CHECK_MSG(frame_has(&f, "draft: lower H 0.070 > 0.060"), "%s", row(&f, 3));
    v.cursor = 1;                                  /* below 0.05: 0.02 */
    CHECK(view_build(&ctx, &f, &v, &e) == UM_OK);
    CHECK(frame_has(&f, "accepted: lower H 0.020 <= 0.060"));
    v.cursor = 4;
    CHECK(view_build(&ctx, &f, &v, &e) == UM_OK);
    CHECK(frame_has(&f, "noise: random, no step yet"));
    frame_free(&f);
    free(s);
    view_ctx_free(&ctx);
}
