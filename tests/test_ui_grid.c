/* Tests of the grid layout: ui/grid9.c (where the puzzle and the answer lie on the canvas,
 * which committed digits break a rule) and ui/view.c's VIEW_LAYOUT_GRID9, cell by cell on
 * hand-made snapshots over a character vocabulary like the sudoku model's. The puzzle and
 * its solution are the well-known example grid of Wikipedia's "Sudoku" article; every
 * expected conflict is worked out by hand in the comments. */
#include <stdlib.h>
#include "harness.h"
#include "grid9.h"
#include "view.h"

/* token ids: 0 the mask, 1..9 the digits, then '.', specials, a word, a wide character; from
 * MARK on the sudoku model's 81 position markers <|r1c1|>..<|r9c9|> (control tokens its own
 * template, unmask.chat_template, puts before the puzzle) */
enum { M = 0, DOT = 10, BOS = 11, EOS = 12, WORD = 13, WIDE = 14, N_VOCAB, MARK = N_VOCAB };
static const char *const vocab[N_VOCAB] = {
    "<m>", "1", "2", "3", "4", "5", "6", "7", "8", "9", ".", "<s>", "</s>", " word", "漢",
};

static size_t piece(void *self, int32_t t, char *buf, size_t cap) {
    (void)self;
    char mark[32];
    if (t >= MARK) snprintf(mark, sizeof mark, "<|r%dc%d|>", (t - MARK) / 9 + 1, (t - MARK) % 9 + 1);
    const char *text = t >= MARK ? mark : vocab[t];
    size_t n = strlen(text);
    if (n > cap) n = cap;
    memcpy(buf, text, n);
    return n;
}
static bool special(void *self, int32_t t) { (void)self; return t == BOS || t == EOS || t >= MARK; }

static ui_source src = { .info = { .arch = "test", .name = "grid", .quant = "q", .backend = "cpu", .isa = "x", .n_threads = 1 },
                         .piece = piece, .is_special = special };

static const char *const PUZZLE =
    "53..7....6..195....98....6.8...6...34..8.3..17...2...6.6....28....419..5....8..79";
static const char *const SOLUTION =
    "534678912672195348198342567859761423426853791713924856961537284287419635345286179";

static int32_t tok_of(char ch) { return ch == '.' ? DOT : ch - '0'; }

/* A snapshot: prompt toks[0..n_prompt), then the generated ones; M is a mask. Committed
 * tokens have p 0.9; every generated position's best candidate is "7" at p 0.6. */
static um_snapshot *snap(const int32_t *toks, int32_t n, int32_t n_prompt) {
    um_snapshot *s = calloc(1, sizeof *s + (size_t)n * sizeof(um_pos));
    s->pos = (um_pos *)(s + 1);
    s->n_canvas = n;
    s->n_prompt = n_prompt;
    s->n_steps = 81;
    s->n_blocks = 1;
    s->step = 5;
    for (int32_t i = 0; i < n; i++) {
        um_pos *p = &s->pos[i];
        p->token = toks[i];
        p->is_prompt = i < n_prompt;
        p->masked = toks[i] == M && !p->is_prompt;
        p->commit_step = p->masked || p->is_prompt ? -1 : 1;
        p->commit_conf = 0.9f;
        p->has_view = !p->is_prompt;
        p->top[0].token = 7;
        p->top[0].prob = 0.6f;
        s->masks_left += p->masked;
    }
    return s;
}

/* [BOS][the puzzle's 81 cells][answer: 81 cells from `answer` ('0' = masked)][extra EOS]. */
static um_snapshot *sudoku_snap(const char *answer, int extra) {
    int32_t toks[1 + 81 + 81 + 16];
    int32_t n = 0;
    toks[n++] = BOS;
    for (int k = 0; k < 81; k++) toks[n++] = tok_of(PUZZLE[k]);
    for (int k = 0; k < 81; k++) toks[n++] = answer[k] == '0' ? M : tok_of(answer[k]);
    for (int k = 0; k < extra; k++) toks[n++] = EOS;
    return snap(toks, n, 82);
}

/* All 81 answer cells masked but the ones listed as "r c d" triples. */
static void answer_with(char out[82], const int *rcd, int n) {
    memset(out, '0', 81);
    out[81] = 0;
    for (int i = 0; i < n; i++) out[rcd[3 * i] * 9 + rcd[3 * i + 1]] = (char)('0' + rcd[3 * i + 2]);
}

TEST(ui_grid9_scan_finds_puzzle_and_answer) {
    grid9 g;
    um_snapshot *s = sudoku_snap(SOLUTION, 0);
    CHECK(grid9_scan(&src, s, &g));
    CHECK_EQ(g.answer0, 82);                      /* the first generated position */
    CHECK_EQ(g.puzzle0, 1);                       /* after the BOS */
    for (int k = 0; k < 81; k++) {
        CHECK_EQ(g.given[k], PUZZLE[k] == '.' ? 0 : PUZZLE[k] - '0');
        CHECK_EQ(g.digit[k], SOLUTION[k] - '0');
        CHECK(!g.conflict[k]);
    }
    CHECK_EQ(g.n_conflicts, 0);                   /* the solution breaks no rule */
    free(s);

    s = sudoku_snap(SOLUTION, 9);                 /* --gen 90: the 81 cells come first */
    CHECK(grid9_scan(&src, s, &g));
    CHECK_EQ(g.answer0, 82);
    free(s);

    int32_t toks[82 + 80];                        /* 80 generated positions: no grid */
    for (int i = 0; i < 82 + 80; i++) toks[i] = i == 0 ? BOS : 5;
    s = snap(toks, 82 + 80, 82);
    CHECK(!grid9_scan(&src, s, &g));
    CHECK_EQ(g.answer0, -1);
    free(s);

    int32_t words[3 + 81];                        /* a prompt of words: no puzzle, no givens */
    for (int i = 0; i < 3 + 81; i++) words[i] = i < 3 ? WORD : 1 + i % 9;
    s = snap(words, 3 + 81, 3);
    CHECK(grid9_scan(&src, s, &g));
    CHECK_EQ(g.answer0, 3);
    CHECK_EQ(g.puzzle0, -1);
    for (int k = 0; k < 81; k++) CHECK_EQ(g.given[k], 0);
    free(s);

    /* a prompt of 85 cell characters: the last 81 are the puzzle */
    int32_t longp[85 + 81];
    for (int i = 0; i < 4; i++) longp[i] = 9;
    for (int k = 0; k < 81; k++) longp[4 + k] = tok_of(PUZZLE[k]);
    for (int k = 0; k < 81; k++) longp[85 + k] = M;
    s = snap(longp, 85 + 81, 85);
    CHECK(grid9_scan(&src, s, &g));
    CHECK_EQ(g.puzzle0, 4);
    CHECK_EQ(g.given[0], 5);
    free(s);

    /* the sudoku model's own template: BOS, the 81 markers <|r1c1|>..<|r9c9|>, then the puzzle;
     * a marker is no cell character, so the puzzle is the 81 positions after the last one */
    int32_t marked[1 + 81 + 81 + 81];
    int32_t n = 0;
    marked[n++] = BOS;
    for (int k = 0; k < 81; k++) marked[n++] = MARK + k;
    for (int k = 0; k < 81; k++) marked[n++] = tok_of(PUZZLE[k]);
    for (int k = 0; k < 81; k++) marked[n++] = tok_of(SOLUTION[k]);
    s = snap(marked, n, 1 + 81 + 81);
    CHECK(grid9_scan(&src, s, &g));
    CHECK_EQ(g.puzzle0, 1 + 81);
    CHECK_EQ(g.answer0, 1 + 81 + 81);
    for (int k = 0; k < 81; k++) {
        CHECK_EQ(g.given[k], PUZZLE[k] == '.' ? 0 : PUZZLE[k] - '0');
        CHECK_EQ(g.digit[k], SOLUTION[k] - '0');
    }
    CHECK_EQ(g.n_conflicts, 0);
    free(s);
}

TEST(ui_grid9_conflicts) {
    grid9 g;
    char ans[82];
    /* (4,4)=5 and (4,7)=5 share row 4: both marked. No 5 is given in row 4, columns 4 and 7
     * or their boxes, so nothing else. */
    int two[] = { 4, 4, 5, 4, 7, 5 };
    answer_with(ans, two, 2);
    um_snapshot *s = sudoku_snap(ans, 0);
    CHECK(grid9_scan(&src, s, &g));
    CHECK_EQ(g.n_conflicts, 2);
    CHECK(g.conflict[4 * 9 + 4] && g.conflict[4 * 9 + 7]);
    free(s);
    /* (0,0)=1 where the puzzle gives 5; no 1 is given in row 0, column 0 or box 0 */
    int changed[] = { 0, 0, 1 };
    answer_with(ans, changed, 1);
    s = sudoku_snap(ans, 0);
    CHECK(grid9_scan(&src, s, &g));
    CHECK_EQ(g.n_conflicts, 1);
    CHECK(g.conflict[0]);
    free(s);
    /* (0,2)=7: row 0 gives 7 at (0,4); only the answer cell is marked, never the given */
    int given_peer[] = { 0, 2, 7 };
    answer_with(ans, given_peer, 1);
    s = sudoku_snap(ans, 0);
    CHECK(grid9_scan(&src, s, &g));
    CHECK_EQ(g.n_conflicts, 1);
    CHECK(g.conflict[2]);
    free(s);
    /* (1,1)=2 and (2,0)=2 share box 0 only; no 2 is given in rows 1-2, columns 0-1 or box 0 */
    int box[] = { 1, 1, 2, 2, 0, 2 };
    answer_with(ans, box, 2);
    s = sudoku_snap(ans, 0);
    CHECK(grid9_scan(&src, s, &g));
    CHECK_EQ(g.n_conflicts, 2);
    CHECK(g.conflict[10] && g.conflict[18]);
    free(s);
    /* (2,2)=5 where the puzzle gives 8 (and box 0 gives a 5 at (0,0)) */
    int on_given[] = { 2, 2, 5 };
    answer_with(ans, on_given, 1);
    s = sudoku_snap(ans, 0);
    CHECK(grid9_scan(&src, s, &g));
    CHECK_EQ(g.n_conflicts, 1);
    CHECK(g.conflict[20]);
    free(s);
    /* a correct digit is no conflict: (0,2)=4 as in the solution */
    int right[] = { 0, 2, 4 };
    answer_with(ans, right, 1);
    s = sudoku_snap(ans, 0);
    CHECK(grid9_scan(&src, s, &g));
    CHECK_EQ(g.n_conflicts, 0);
    CHECK_EQ(g.digit[2], 4);
    free(s);
}

static theme th;
static view_ctx ctx;

static int build(frame *f, int w, int h, um_snapshot *s, view_heat heat, int depth, int32_t cursor) {
    um_err e = { "" };
    frame_free(f);
    if (frame_init(f, w, h, &e)) return UM_FAIL;
    um_snapshot *hist[1] = { s };
    view_state v = { .src = &src, .hist = hist, .n_hist = 1, .shown = 0, .th = &th, .depth = depth,
                     .heat = heat, .layout = VIEW_LAYOUT_GRID9, .cursor = cursor, .pace_ms = -1 };
    return view_build(&ctx, f, &v, &e);
}

static const char *row(frame *f, int y) {
    static char buf[4096];
    frame_row_text(f, y, buf, sizeof buf);
    return buf;
}

static bool starts(const char *s, const char *prefix) { return strncmp(s, prefix, strlen(prefix)) == 0; }

/* Grid drawn with its top-left cell at (gx, gy): box lines in place (─ ┼ rows 3 and 7, │
 * columns 7 and 15, border colour), cell (r, c) showing position p0 + 9r + c. */
static bool grid_lines_ok(frame *f, int gx, int gy) {
    for (int y = 0; y < GRID9_H; y++)
        for (int x = 0; x < GRID9_W; x++) {
            const frame_cell *c = frame_at(f, gx + x, gy + y);
            bool rule = y == 3 || y == 7, line = x == 7 || x == 15;
            const char *want = rule ? (line ? "┼" : "─") : line ? "│" : NULL;
            if (want && (strcmp(c->text, want) || c->fg != th.role[THEME_BORDER].fg || c->pos != -1)) return false;
            if (!want && (x % 2 == 0) && strcmp(c->text, " ")) return false;      /* gaps between cells */
        }
    return true;
}

TEST(ui_view_grid_layout_cells) {
    theme_builtin(&th);
    frame f = { 0 };
    char ans[82];
    /* the solution's first four rows committed, the rest masked; (8,8) holds 9 (right) */
    memcpy(ans, SOLUTION, 81);
    memset(ans + 36, '0', 45);
    ans[81] = 0;
    um_snapshot *s = sudoku_snap(ans, 0);
    CHECK(build(&f, 100, 30, s, VIEW_HEAT_COMMIT, 256, -1) == UM_OK);
    /* wide layout, canvas 65x27 from row 1: titles on row 1, the grids from row 2 at x 0 and 26 */
    CHECK_MSG(starts(row(&f, 1), " puzzle                    answer "), "%s", row(&f, 1));
    CHECK_MSG(starts(row(&f, 2), " 5 3 . │ . 7 . │ . . .     5 3 4 │ 6 7 8 │ 9 1 2  "), "%s", row(&f, 2));
    CHECK_MSG(starts(row(&f, 5), "───────┼───────┼───────   ───────┼───────┼─────── "), "%s", row(&f, 5));
    CHECK(grid_lines_ok(&f, 0, 2));
    CHECK(grid_lines_ok(&f, 26, 2));
    for (int r = 0; r < 9; r++)
        for (int c = 0; c < 9; c++) {
            int k = 9 * r + c, x = 26 + grid9_col(c), y = 2 + grid9_row(r);
            const frame_cell *a = frame_at(&f, x, y), *p = frame_at(&f, grid9_col(c), y);
            CHECK_EQ(a->pos, 82 + k);                              /* answer: p0 + 9r + c */
            CHECK_EQ(p->pos, 1 + k);                               /* puzzle: after the BOS */
            char want[2] = { PUZZLE[k], 0 };
            CHECK_STREQ(p->text, want);
            CHECK_EQ(p->fg, th.role[THEME_PROMPT].fg);             /* givens dimmed as the prompt */
            CHECK(p->attrs & FRAME_DIM);
            if (r < 4) {
                want[0] = SOLUTION[k];
                CHECK_STREQ(a->text, want);
                CHECK_EQ(a->fg, theme_heat(&th, 28.0f / 31.0f));   /* heat of p 0.9, as the text layout */
                CHECK_EQ(a->bg, th.role[THEME_TEXT].bg);           /* no conflict */
            } else {
                CHECK_STREQ(a->text, th.mask_glyph);
                CHECK_EQ(a->fg, th.role[THEME_MASK].fg);
            }
            /* Up from the row below reaches this cell: same column, the nearest row above with cells */
            if (r > 0) CHECK_EQ(frame_at(&f, x, 2 + grid9_row(r - 1))->pos, 82 + k - 9);
        }
    /* nothing drawn right of the answer grid; the legend has no conflict note without conflicts... */
    CHECK_EQ(frame_at(&f, 49, 2)->pos, -1);
    CHECK_CONTAINS(row(&f, 28), "conflict");                    /* ...but the legend names the mark */
    CHECK(!strstr(row(&f, 1), "conflicts"));
    /* the cursor on answer cell (2,3) */
    CHECK(build(&f, 100, 30, s, VIEW_HEAT_COMMIT, 256, 82 + 21) == UM_OK);
    CHECK_EQ(frame_at(&f, 26 + grid9_col(3), 2 + grid9_row(2))->bg, th.role[THEME_CURSOR].bg);
    /* live heat: masks show their best candidate ("7") as ghost text */
    CHECK(build(&f, 100, 30, s, VIEW_HEAT_LIVE, 256, -1) == UM_OK);
    const frame_cell *gh = frame_at(&f, 26 + grid9_col(0), 2 + grid9_row(8));
    CHECK_STREQ(gh->text, "7");
    CHECK(gh->attrs & FRAME_ITALIC);
    /* narrow layout (80x24): an 11-row canvas holds the grids, no titles */
    CHECK(build(&f, 80, 24, s, VIEW_HEAT_COMMIT, 256, -1) == UM_OK);
    CHECK(grid_lines_ok(&f, 26, 1));
    CHECK_EQ(frame_at(&f, 26 + grid9_col(8), 1 + grid9_row(8))->pos, 82 + 80);
    frame_free(&f);
    free(s);
    view_ctx_free(&ctx);
}

TEST(ui_view_grid_layout_conflicts) {
    theme_builtin(&th);
    frame f = { 0 };
    char ans[82];
    int two[] = { 4, 4, 5, 4, 7, 5, 0, 0, 5 };            /* (4,4) and (4,7) clash; (0,0) is right */
    answer_with(ans, two, 3);
    um_snapshot *s = sudoku_snap(ans, 0);
    CHECK(build(&f, 100, 30, s, VIEW_HEAT_COMMIT, 256, -1) == UM_OK);
    CHECK_CONTAINS(row(&f, 1), "answer  2 conflicts");
    int y = 2 + grid9_row(4);
    for (int c = 4; c <= 7; c += 3) {
        const frame_cell *a = frame_at(&f, 26 + grid9_col(c), y);
        CHECK_STREQ(a->text, "5");
        CHECK_EQ(a->bg, th.role[THEME_CONFLICT].bg);
        CHECK_EQ(a->fg, th.role[THEME_CONFLICT].fg);
    }
    CHECK(frame_at(&f, 26 + grid9_col(0), 2)->bg != th.role[THEME_CONFLICT].bg);
    /* no colours: the mark is reverse video */
    CHECK(build(&f, 100, 30, s, VIEW_HEAT_COMMIT, 0, -1) == UM_OK);
    CHECK(frame_at(&f, 26 + grid9_col(4), y)->attrs & FRAME_REVERSE);
    CHECK(!(frame_at(&f, 26 + grid9_col(0), 2)->attrs & FRAME_REVERSE));
    frame_free(&f);
    free(s);
    view_ctx_free(&ctx);
}

TEST(ui_view_grid_layout_fallbacks) {
    theme_builtin(&th);
    frame f = { 0 };
    /* 40 generated positions: the text layout, and the status line says why */
    int32_t toks[82 + 40];
    toks[0] = BOS;
    for (int k = 0; k < 81; k++) toks[1 + k] = tok_of(PUZZLE[k]);
    for (int k = 0; k < 40; k++) toks[82 + k] = 1 + k % 9;
    um_snapshot *s = snap(toks, 82 + 40, 82);
    CHECK(build(&f, 100, 30, s, VIEW_HEAT_COMMIT, 256, -1) == UM_OK);
    CHECK_CONTAINS(row(&f, 29), "grid9: 40 generated, needs 81: text layout");
    CHECK_MSG(starts(row(&f, 1), "<s>53..7....6..195"), "%s", row(&f, 1));   /* the prompt as text */
    CHECK(!strstr(row(&f, 5), "┼"));
    free(s);
    /* 60x16: a 3-row canvas cannot hold the grids */
    s = sudoku_snap(SOLUTION, 0);
    CHECK(build(&f, 60, 16, s, VIEW_HEAT_COMMIT, 256, -1) == UM_OK);
    CHECK_CONTAINS(row(&f, 15), "grid9: canvas 60x3, needs 49x11");
    free(s);
    /* --gen 90: the 9 end-of-text positions after the cells as text under the grids */
    s = sudoku_snap(SOLUTION, 9);
    CHECK(build(&f, 100, 30, s, VIEW_HEAT_COMMIT, 256, -1) == UM_OK);
    CHECK(grid_lines_ok(&f, 26, 2));
    CHECK_MSG(starts(row(&f, 14), "∎∎∎∎∎∎∎∎∎ "), "%s", row(&f, 14));
    CHECK_EQ(frame_at(&f, 0, 14)->pos, 82 + 81);
    CHECK(!strstr(row(&f, 29), "grid9"));
    /* in the 11-row canvas of 80x24 they do not fit: said on the status line */
    CHECK(build(&f, 80, 24, s, VIEW_HEAT_COMMIT, 256, -1) == UM_OK);
    CHECK_CONTAINS(row(&f, 23), "grid9: 9 positions below not shown");
    free(s);
    /* a prompt of words: it stands as text where the puzzle would; words, specials and wide
     * characters in the answer show their first character */
    int32_t w[2 + 81];
    w[0] = WORD;
    w[1] = WORD;
    for (int k = 0; k < 81; k++) w[2 + k] = k == 0 ? WORD : k == 1 ? EOS : k == 2 ? WIDE : 1 + k % 9;
    s = snap(w, 2 + 81, 2);
    CHECK(build(&f, 100, 30, s, VIEW_HEAT_COMMIT, 256, -1) == UM_OK);
    CHECK_MSG(starts(row(&f, 1), " prompt "), "%s", row(&f, 1));
    CHECK_MSG(starts(row(&f, 2), " word word "), "%s", row(&f, 2));
    CHECK_EQ(frame_at(&f, 1, 2)->pos, 0);
    CHECK_STREQ(frame_at(&f, 26 + grid9_col(0), 2)->text, "w");
    CHECK_STREQ(frame_at(&f, 26 + grid9_col(1), 2)->text, "∎");
    CHECK(frame_at(&f, 26 + grid9_col(1), 2)->attrs & FRAME_DIM);
    CHECK_STREQ(frame_at(&f, 26 + grid9_col(2), 2)->text, "漢");
    CHECK_EQ(frame_at(&f, 26 + grid9_col(2), 2)->width, 2);
    CHECK_STREQ(frame_at(&f, 26 + GRID9_BOX_COL1, 2)->text, "│");  /* the wide cell keeps the box line */
    frame_free(&f);
    free(s);
    view_ctx_free(&ctx);
}

/* The verdict in words: in the answer's title ("solved", "N conflicts", "N to fill") and, with
 * --compare, in each pane's summary once done; a digit that differs from the first pane's is
 * marked in the grid as in the text layout. */
TEST(ui_view_grid_verdict_and_compare_marks) {
    theme_builtin(&th);
    frame f = { 0 };
    grid9 g;
    um_snapshot *solved = sudoku_snap(SOLUTION, 0);
    CHECK(grid9_scan(&src, solved, &g));
    char buf[48];
    grid9_verdict(&g, buf, sizeof buf);
    CHECK_STREQ(buf, "solved");
    CHECK(build(&f, 100, 30, solved, VIEW_HEAT_COMMIT, 256, -1) == UM_OK);
    CHECK_CONTAINS(row(&f, 1), "answer  solved");
    char ans[82];
    int one[] = { 0, 0, 5 };
    answer_with(ans, one, 1);
    um_snapshot *partial = sudoku_snap(ans, 0);
    CHECK(grid9_scan(&src, partial, &g));
    grid9_verdict(&g, buf, sizeof buf);
    CHECK_STREQ(buf, "80 to fill");
    /* two panes, both done: pane 2 holds the solution with (0,1) and (0,2) swapped (3 4 ->
     * 4 3). Worked out: (0,1) holds 4 where the puzzle gives 3, and column 1 has the 4 of
     * (8,1): (0,1) and (8,1) clash; (0,2) holds 3, the given of (0,1) in its row, and column 2
     * has the 3 of (5,2): (0,2) and (5,2) clash. 4 conflicts; 2 positions differ. */
    char swapped[82];
    memcpy(swapped, SOLUTION, 82);
    swapped[1] = '4';
    swapped[2] = '3';
    um_snapshot *other = sudoku_snap(swapped, 0);
    solved->done = other->done = true;
    um_snapshot *h1[1] = { solved }, *h2[1] = { other };
    view_pane panes[2] = { { .hist = h1, .n_hist = 1, .label = "main" }, { .hist = h2, .n_hist = 1, .label = "--alg random" } };
    um_err e = { "" };
    frame_free(&f);                               /* it holds the single-pane frame above */
    CHECK(frame_init(&f, 170, 30, &e) == UM_OK);
    view_state v = { .src = &src, .hist = h1, .n_hist = 1, .shown = 0, .th = &th, .depth = 256, .cursor = -1,
                     .layout = VIEW_LAYOUT_GRID9, .panes = panes, .n_panes = 2, .following = true };
    CHECK(view_build(&ctx, &f, &v, &e) == UM_OK);
    CHECK_CONTAINS(row(&f, 2), "solved");
    CHECK_CONTAINS(row(&f, 2), "4 conflicts");
    CHECK_CONTAINS(row(&f, 2), "2 differ");
    int diff_marked = 0;
    for (int y = 3; y < 28; y++)
        for (int x = 0; x < f.w; x++) diff_marked += frame_at(&f, x, y)->bg == th.role[THEME_DIFF].bg;
    CHECK(diff_marked == 0);                      /* both differing cells conflict: their own mark */
    /* a differing digit that breaks no rule: (0,2) is 4 in pane 1 and 2 in pane 2 (row 0 gives
     * 5 3 7, column 2 gives 8, box 0 gives 5 3 6 9 8: no 2 there): marked as differing */
    char a4[82], a2[82];
    int c4[] = { 0, 2, 4 }, c2[] = { 0, 2, 2 };
    answer_with(a4, c4, 1);
    answer_with(a2, c2, 1);
    um_snapshot *p4 = sudoku_snap(a4, 0), *p2 = sudoku_snap(a2, 0);
    h1[0] = p4;
    h2[0] = p2;
    CHECK(view_build(&ctx, &f, &v, &e) == UM_OK);
    diff_marked = 0;
    for (int y = 3; y < 28; y++)
        for (int x = 85; x < f.w; x++) diff_marked += frame_at(&f, x, y)->bg == th.role[THEME_DIFF].bg &&
                                                       !strcmp(frame_at(&f, x, y)->text, "2");
    CHECK_EQ(diff_marked, 1);
    free(p4);
    free(p2);
    frame_free(&f);
    free(solved);
    free(partial);
    free(other);
    view_ctx_free(&ctx);
}
