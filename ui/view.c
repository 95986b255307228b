/*
 * view: one frame from the visualizer state (see view.h for the layout).
 *
 * Sections in drawing order: helpers, header, canvas (text, then the grid layout),
 * inspector, schedule, status line, help overlay (the heat values, their styles and the
 * legend are ui/heat.c's). Each panel draws only inside the rectangle it is
 * given; the canvas is the only one that needs scratch memory (kept in view_ctx, grown,
 * never shrunk, so steady-state redraws do not allocate).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grid9.h"
#include "heat.h"
#include "keys.h"
#include "pace.h"
#include "schedule.h"
#include "summary.h"
#include "panels.h"
#include "view.h"
#include "view_util.h"

const char *const view_layout_keys[VIEW_LAYOUT_COUNT] = { "text", "grid9" };

#define TAB_STOP      4
#define SPECIAL_GLYPH "\xE2\x88\x8E"   /* ∎: a generated special token (end of text...) */
#define GRID_GAP      3             /* columns between the puzzle and the answer grids */

/* ------------------------------------------------------------------ helpers */

/* ------------------------------------------------------------------ header */

/* Bytes with a binary unit: "512 B", "7.5 KiB", "84 KiB", "1.2 MiB". */
static void fmt_bytes(uint64_t b, char *out, size_t cap) {
    static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB" };
    double x = (double)b;
    int u = 0;
    while (x >= 1024 && u < 4) { x /= 1024; u++; }
    snprintf(out, cap, u == 0 || x >= 10 ? "%.0f %s" : "%.1f %s", x, unit[u]);
}

/* The K/V cache in force at step s: "cache dual/f16 · 84 KiB" (with its refresh rule when it
 * has one), "cache off", or "cache off · 84 KiB held" after a cached run switched it off. */
static void cache_label(const um_snapshot *s, char *buf, size_t cap) {
    const um_settings *se = &s->settings;
    char bytes[32], rule[64] = "";
    fmt_bytes(s->cache_bytes, bytes, sizeof bytes);
    if (se->cache == UM_CACHE_NONE) {
        snprintf(buf, cap, s->cache_bytes ? "cache off \xC2\xB7 %s held" : "cache off", bytes);
        return;
    }
    int n = se->cache_refresh > 0 ? snprintf(rule, sizeof rule, " refresh %d", se->cache_refresh) : 0;
    if (se->cache_drift > 0) snprintf(rule + n, sizeof rule - (size_t)n, " drift %g", (double)se->cache_drift);
    snprintf(buf, cap, "cache %s/%s%s \xC2\xB7 %s", engine_cache_name(se->cache), engine_kv_store_name(se->cache_type),
             rule, bytes);
}

/* The source's model and machine and the shown step's cache, fields left out whole by
 * priority when the line is narrow, then "? keys" right-aligned. The model's name is shown up
 * to its parenthesis (the bundled models' names go on "(llada, N params, 5000 steps)": their
 * training, which reads as denoising steps beside the step counter; `unmask info` has it). */
static void draw_header(frame *f, const view_state *v, const um_snapshot *s) {
    frame_style st = view_role(v, THEME_HEADER);
    frame_fill(f, 0, 0, f->w, 1, st);
    char name[128] = "", arch[40] = "", quant[40] = "", where[100] = "", threads[32] = "", kv[128] = "", buf[512];
    if (v->src) {
        const um_engine_info *in = &v->src->info;
        const char *paren = strstr(in->name, " (");
        char base[128];
        snprintf(base, sizeof base, "%.*s", paren ? (int)(paren - in->name) : (int)strlen(in->name), in->name);
        view_cut_cols(base, UM_MAX(12, f->w - 64), name, sizeof name);     /* a long name leaves room */
        snprintf(arch, sizeof arch, "%s", in->arch);
        snprintf(quant, sizeof quant, "%s", in->quant);
        snprintf(where, sizeof where, "%s %s", in->backend, in->isa);
        snprintf(threads, sizeof threads, "%d thread%s", in->n_threads, in->n_threads == 1 ? "" : "s");
    }
    if (s) cache_label(s, kv, sizeof kv);
    const view_field fields[] = {
        { "unmask", 0 }, { name, 1 }, { arch, 5 }, { quant, 4 }, { where, 3 }, { threads, 6 }, { kv, 2 },
    };
    int right = view_put_right(f, 0, f->w, "? keys ", st);
    buf[0] = ' ';
    view_fit(fields, (int)(sizeof fields / sizeof fields[0]), " \xE2\x94\x82 ", right - 2, buf + 1, sizeof buf - 1);
    ui_text_puts(f, 0, 0, right - 1, buf, st);
}

/* ------------------------------------------------------------------ canvas */

static bool is_special(const view_state *v, int32_t tok) {
    return v->src && v->src->is_special && v->src->is_special(v->src->self, tok);
}

/* Panes on two models (their own sources) may tokenize the prompt into another number of
 * tokens: their generated positions are matched from the first one, and compared by text. */
static bool two_models(const view_state *v) { return v->diff_src && v->src && v->diff_src != v->src; }

/* Whether the pane's snapshot b can be marked against the first pane's a at all. */
static bool comparable(const view_state *v, const um_snapshot *a, const um_snapshot *b) {
    if (two_models(v)) return a->n_canvas - a->n_prompt == b->n_canvas - b->n_prompt;
    return a->n_canvas == b->n_canvas && a->n_prompt == b->n_prompt;
}

/* Does position i of b and its match in a hold a committed token in both, a different one? */
static bool differs(const view_state *v, const um_snapshot *a, const um_snapshot *b, int32_t i) {
    if (!comparable(v, a, b) || i < b->n_prompt || i >= b->n_canvas) return false;
    const int32_t ia = i - b->n_prompt + a->n_prompt;
    if (a->pos[ia].masked || b->pos[i].masked) return false;
    if (!two_models(v)) return a->pos[ia].token != b->pos[i].token;
    char ta[64], tb[64];                           /* two vocabularies: the same text or not */
    size_t na = v->diff_src->piece(v->diff_src->self, a->pos[ia].token, ta, sizeof ta);
    size_t nb = v->src->piece(v->src->self, b->pos[i].token, tb, sizeof tb);
    return na != nb || memcmp(ta, tb, UM_MIN(na, sizeof ta)) != 0;
}

/* st marked as differing from the first pane's token (THEME_DIFF over the heat). */
static frame_style diff_style(const view_state *v, frame_style st) {
    frame_style df = view_role(v, THEME_DIFF);
    if (df.fg != FRAME_DEFAULT) st.fg = df.fg;
    if (df.bg != FRAME_DEFAULT) st.bg = df.bg;
    st.attrs |= df.attrs;
    if (v->depth == 0) st.attrs |= FRAME_REVERSE;          /* no colours: the mark must still show */
    return st;
}

/* Positions [from, to) of s as wrapped text in the rectangle (x0, y0, w, h). */
static int draw_canvas(view_ctx *c, frame *f, const view_state *v, const um_snapshot *s, int32_t from, int32_t to,
                       int x0, int y0, int w, int h, um_err *e) {
    if (w < 1 || h < 1 || to <= from) return UM_OK;
    int32_t n = to - from;
    if (view_grow((void **)&c->runs, sizeof *c->runs, &c->runs_cap, n + 1, e)) return UM_FAIL;
    size_t need = (size_t)n * PIECE_MAX + 64;
    if (need > c->bytes_cap) {
        char *b = realloc(c->bytes, need);
        if (!b) return um_errf(e, "view: out of memory for canvas text");
        c->bytes = b;
        c->bytes_cap = need;
    }
    /* runs: the raw bytes of every position (or its mask glyph / ghost) */
    size_t at = 0;
    for (int32_t i = from; i < to; i++) {
        const um_pos *p = &s->pos[i];
        ui_run *r = &c->runs[i - from];
        bool ghost = false;
        r->pos = i;
        r->bytes = c->bytes + at;
        r->split = i == s->n_prompt;
        r->opaque = false;
        if (p->masked) {
            ghost = v->heat == VIEW_HEAT_LIVE && p->has_view;
            r->opaque = true;
            if (ghost) r->len = view_piece(v, p->top[0].token, c->bytes + at, PIECE_MAX);
            if (!ghost || r->len == 0) {
                r->len = strlen(v->th->mask_glyph);
                memcpy(c->bytes + at, v->th->mask_glyph, r->len);
            }
        } else if (i >= s->n_prompt && is_special(v, p->token)) {
            r->opaque = true;                        /* generated <|eot|> etc.: one compact glyph */
            r->len = sizeof SPECIAL_GLYPH - 1;
            memcpy(c->bytes + at, SPECIAL_GLYPH, r->len);
        } else {
            r->len = view_piece(v, p->token, c->bytes + at, PIECE_MAX);
        }
        at += r->len;
    }
    if (ui_text_shape(&c->text, c->runs, n, e)) return UM_FAIL;
    const ui_text *t = &c->text;
    if (view_grow((void **)&c->place, 3 * sizeof *c->place, &c->place_cap, t->n + 1, e)) return UM_FAIL;

    /* layout: line, x, width of every cluster */
    int32_t focus = view_focus(v), focus_line = 0, line = 0, x = 0;
    bool in_gen = false;
    for (int32_t k = 0; k < t->n; k++) {
        const ui_cluster *cl = &t->cl[k];
        if (!in_gen && cl->pos >= s->n_prompt) {
            in_gen = true;
            if (x > 0) { line++; x = 0; }          /* the generated region starts a line */
        }
        int cw = cl->kind == UI_CL_TAB ? TAB_STOP - x % TAB_STOP : cl->width;
        if (x + cw > w) {
            line++;
            x = 0;
            if (cl->kind == UI_CL_TAB) cw = TAB_STOP;
        }
        if (cw > w) cw = w;
        c->place[3 * k] = line;
        c->place[3 * k + 1] = x;
        c->place[3 * k + 2] = cw;
        if (cl->pos <= focus && focus <= cl->pos_last) focus_line = line;
        x += cw;
        if (cl->kind == UI_CL_NEWLINE) { line++; x = 0; }
    }
    int32_t total = line + 1, top = 0;
    if (total > h) {
        top = focus_line - h / 3;
        if (top > total - h) top = total - h;
        if (top < 0) top = 0;
    }

    frame_fill(f, x0, y0, w, h, view_role(v, THEME_TEXT));
    frame_style cursor = view_role(v, THEME_CURSOR);
    for (int32_t k = 0; k < t->n; k++) {
        int32_t ln = c->place[3 * k] - top;
        if (ln < 0 || ln >= h) continue;
        const ui_cluster *cl = &t->cl[k];
        int cx = x0 + c->place[3 * k + 1], cw = c->place[3 * k + 2];
        bool ghost;
        frame_style st = view_pos_style(v, s, cl->pos, &ghost);
        if (cl->kind != UI_CL_TEXT || (cl->flags & UI_CL_REPLACED)) st.attrs |= FRAME_DIM;
        if (!s->pos[cl->pos].masked && !strcmp(cl->text, SPECIAL_GLYPH) && cl->pos >= s->n_prompt) st.attrs |= FRAME_DIM;
        if (v->diff_ref && differs(v, v->diff_ref, s, cl->pos)) st = diff_style(v, st);
        if (!strcmp(cl->text, " ")) st.attrs &= (uint8_t)~FRAME_UNDERLINE;   /* a token's leading space: not "_lord" */
        if (v->cursor >= 0 && cl->pos <= v->cursor && v->cursor <= cl->pos_last) st = cursor;
        frame_put_cluster(f, cx, y0 + ln, x0 + w, cl->text, cl->width, st, cl->pos);
        for (int j = 1; j < cw && cl->kind == UI_CL_TAB; j++)
            frame_put_cluster(f, cx + j, y0 + ln, x0 + w, " ", 1, st, cl->pos);
    }
    return UM_OK;
}

/* ------------------------------------------------------------------ canvas: the grid layout */

/* The first display cluster of a token's text, leading spaces skipped (only spaces: ␣), into
 * out; returns its width (1 or 2), 0 when out of memory. */
static int cell_glyph(view_ctx *c, const view_state *v, int32_t tok, char out[UI_CLUSTER_MAX], um_err *e) {
    char raw[PIECE_MAX];
    size_t n = view_piece(v, tok, raw, sizeof raw), a = 0;
    while (a < n && raw[a] == ' ') a++;
    if (a == n) {
        snprintf(out, UI_CLUSTER_MAX, "%s", n ? "\xE2\x90\xA3" : "?");
        return 1;
    }
    if (ui_text_shape_str(&c->text, raw + a, n - a, e)) return 0;
    snprintf(out, UI_CLUSTER_MAX, "%s", c->text.cl[0].text);
    return c->text.cl[0].width;
}

/* The box lines of one grid whose top-left cell is (gx, gy). */
static void draw_box_lines(frame *f, const view_state *v, int gx, int gy) {
    frame_style b = view_role(v, THEME_BORDER);
    for (int y = 0; y < GRID9_H; y++) {
        bool rule = y == GRID9_BOX_ROW1 || y == GRID9_BOX_ROW2;
        for (int x = 0; x < GRID9_W; x++) {
            bool line = x == GRID9_BOX_COL1 || x == GRID9_BOX_COL2;
            if (rule) frame_put_cluster(f, gx + x, gy + y, gx + GRID9_W, line ? "\xE2\x94\xBC" : "\xE2\x94\x80", 1, b, -1);
            else if (line) frame_put_cluster(f, gx + x, gy + y, gx + GRID9_W, "\xE2\x94\x82", 1, b, -1);
        }
    }
}

/* Style of answer cell k: the heat of the text layout, then the conflict mark, then the cursor. */
static frame_style answer_style(const view_state *v, const um_snapshot *s, const grid9 *g, int k, bool special) {
    int32_t i = g->answer0 + k;
    bool ghost;
    frame_style st = view_pos_style(v, s, i, &ghost);
    if (special) st.attrs |= FRAME_DIM;
    if (g->conflict[k]) {
        frame_style cf = view_role(v, THEME_CONFLICT);
        if (cf.fg != FRAME_DEFAULT) st.fg = cf.fg;
        if (cf.bg != FRAME_DEFAULT) st.bg = cf.bg;
        st.attrs |= cf.attrs;
        if (v->depth == 0) st.attrs |= FRAME_REVERSE;      /* no colours: the mark must still show */
    } else if (v->diff_ref && differs(v, v->diff_ref, s, i)) {
        st = diff_style(v, st);                            /* --compare: differs from pane 1 */
    }
    return v->cursor == i ? view_role(v, THEME_CURSOR) : st;
}

/* The 81 cells of one grid at (gx, gy): the puzzle (dimmed, as the prompt) or the answer. */
static int draw_cells(view_ctx *c, frame *f, const view_state *v, const um_snapshot *s, const grid9 *g,
                      bool answer, int gx, int gy, um_err *e) {
    int32_t p0 = answer ? g->answer0 : g->puzzle0;
    for (int k = 0; k < SUDOKU_CELLS; k++) {
        int32_t i = p0 + k;
        const um_pos *p = &s->pos[i];
        char text[UI_CLUSTER_MAX];
        int width = 1;
        bool special = false, ghost;
        frame_style st;
        if (answer && p->masked) {                          /* the mask, or its ghost */
            snprintf(text, sizeof text, "%s", v->th->mask_glyph);
            if (v->heat == VIEW_HEAT_LIVE && p->has_view && !(width = cell_glyph(c, v, p->top[0].token, text, e)))
                return UM_FAIL;
        } else if (answer && is_special(v, p->token)) {
            snprintf(text, sizeof text, "%s", SPECIAL_GLYPH);
            special = true;
        } else if (!(width = cell_glyph(c, v, p->token, text, e))) {
            return UM_FAIL;
        }
        if (answer) st = answer_style(v, s, g, k, special);
        else st = v->cursor == i ? view_role(v, THEME_CURSOR) : view_pos_style(v, s, i, &ghost);
        frame_put_cluster(f, gx + grid9_col(k % 9), gy + grid9_row(k / 9), gx + GRID9_W, text, width, st, i);
    }
    return UM_OK;
}

/* The canvas in the grid9 layout (grid9.h): the puzzle grid left (or, when the prompt holds
 * none, the prompt as text in its place), the answer grid right, titles above when there is
 * a row for them, the generated positions after the 81 cells as text below. When it cannot
 * (too few generated positions, a canvas smaller than the grids) it draws nothing, leaves
 * *drawn false and says why in note; the caller draws the text layout. */
static int draw_grid_canvas(view_ctx *c, frame *f, const view_state *v, const um_snapshot *s, int x0, int y0,
                            int w, int h, char *note, size_t note_cap, bool *drawn, um_err *e) {
    grid9 g;
    const int need_w = 2 * GRID9_W + GRID_GAP;
    *drawn = false;
    if (!grid9_scan(v->src, s, &g)) {
        snprintf(note, note_cap, "grid9: %d generated, needs 81: text layout", s->n_canvas - s->n_prompt);
        return UM_OK;
    }
    if (w < need_w || h < GRID9_H) {
        snprintf(note, note_cap, "grid9: canvas %dx%d, needs %dx%d: text layout", w, h, need_w, GRID9_H);
        return UM_OK;
    }
    *drawn = true;
    frame_fill(f, x0, y0, w, h, view_role(v, THEME_TEXT));
    int gy = y0 + (h > GRID9_H), rx = x0 + GRID9_W + GRID_GAP;
    if (gy > y0) {
        frame_style ti = view_role(v, THEME_TITLE), cf = view_role(v, THEME_CONFLICT);
        char buf[48];
        ui_text_puts(f, x0 + 1, y0, rx, g.puzzle0 >= 0 ? "puzzle" : "prompt", ti);
        int x = ui_text_puts(f, rx + 1, y0, x0 + w, "answer", ti);
        grid9_verdict(&g, buf, sizeof buf);
        if (g.n_conflicts && v->depth == 0) cf.attrs |= FRAME_REVERSE;
        if (x + 2 + ui_text_width(buf) <= x0 + w) ui_text_puts(f, x + 2, y0, x0 + w, buf, g.n_conflicts ? cf : ti);
    }
    if (g.puzzle0 >= 0) {
        draw_box_lines(f, v, x0, gy);
        if (draw_cells(c, f, v, s, &g, false, x0, gy, e)) return UM_FAIL;
    } else if (draw_canvas(c, f, v, s, 0, s->n_prompt, x0, gy, GRID9_W, GRID9_H, e)) {
        return UM_FAIL;
    }
    draw_box_lines(f, v, rx, gy);
    if (draw_cells(c, f, v, s, &g, true, rx, gy, e)) return UM_FAIL;
    int32_t tail = g.answer0 + SUDOKU_CELLS;                /* generated after the 81 cells */
    int ty = gy + GRID9_H + 1;
    if (tail < s->n_canvas && ty < y0 + h) return draw_canvas(c, f, v, s, tail, s->n_canvas, x0, ty, w, y0 + h - ty, e);
    if (tail < s->n_canvas) snprintf(note, note_cap, "grid9: %d positions below not shown", s->n_canvas - tail);
    return UM_OK;
}

/* The canvas in v's layout; *grid says whether the grid layout was drawn. */
static int draw_body(view_ctx *c, frame *f, const view_state *v, const um_snapshot *s, int x0, int y0, int w, int h,
                     char *note, size_t note_cap, bool *grid, um_err *e) {
    *grid = false;
    if (v->layout == VIEW_LAYOUT_GRID9) {
        if (draw_grid_canvas(c, f, v, s, x0, y0, w, h, note, note_cap, grid, e)) return UM_FAIL;
        if (*grid) return UM_OK;
    }
    return draw_canvas(c, f, v, s, 0, s->n_canvas, x0, y0, w, h, e);
}

/* ------------------------------------------------------------------ status */

/* note: the layout's note, shown in the message's place when there is no message. */
static void draw_status(frame *f, const view_state *v, const um_snapshot *s, int y, const char *note) {
    frame_style st = view_role(v, THEME_STATUS);
    frame_fill(f, 0, y, f->w, 1, st);
    char buf[512], badge[64];
    if (v->edit) {
        const char *tail = v->edit;                 /* a long prompt: its end, where typing goes */
        size_t len = strlen(tail);
        if (len > sizeof buf / 2) {
            tail += len - sizeof buf / 2;
            while ((*tail & 0xC0) == 0x80) tail++;
        }
        snprintf(buf, sizeof buf, " prompt> %s\xE2\x96\x8F", tail);
        int right = view_put_right(f, y, f->w, " Enter restarts \xC2\xB7 Esc cancels ", st);
        /* keep the end of a long prompt visible */
        const char *p = buf;
        while (ui_text_width(p) > right - 1 && *p) p++;
        while ((*p & 0xC0) == 0x80) p++;
        ui_text_puts(f, 0, y, right - 1, p, st);
        return;
    }
    if (v->error) {                                 /* the error, whole, instead of the numbers */
        int right = view_put_right(f, y, f->w, " ERROR ", view_role(v, THEME_PAUSED));
        if (v->recording) right = view_put_right(f, y, right - 1, " REC ", view_role(v, THEME_PAUSED));
        frame_style msg_st = view_role(v, THEME_MESSAGE);
        msg_st.bg = st.bg;
        char err[600];
        snprintf(err, sizeof err, "error: %s", v->error);
        /* cut after a word with "…" when longer: the whole error is over the body (view_build) */
        view_cut_words(err, right - 2, buf + 1, sizeof buf - 1);
        buf[0] = ' ';
        ui_text_puts(f, 0, y, right - 1, buf, msg_st);
        return;
    }
    if (!s) { ui_text_puts(f, 0, y, f->w, " starting...", st); return; }
    const um_snapshot *last = v->hist[v->n_hist - 1];
    double ms = 0;
    int32_t committed = 0;
    for (int32_t k = 1; k <= v->shown && k < v->n_hist; k++) {
        ms += v->hist[k]->forward_ms + v->hist[k]->sample_ms;
        committed += v->hist[k]->n_committed;
    }
    double ms_step = v->shown > 0 ? ms / v->shown : 0, tps = ms > 0 ? committed / (ms / 1000.0) : 0;
    const um_settings *se = &s->settings;
    char rows[64] = "rows 0";                       /* step 0 ran no forward pass */
    if (s->passes > 0)
        snprintf(rows, sizeof rows, "rows %d/%lld%s", s->rows_computed, (long long)s->passes * s->n_canvas,
                 s->cache_refreshed ? " refresh" : "");
    if (s->passes > 0 && s->batched > 1)            /* one pass over the weights for several panes */
        snprintf(rows + strlen(rows), sizeof rows - strlen(rows), " in 1 pass x%d", s->batched);
    char stepf[48], blockf[32], masks[64], msf[32], tpsf[32], sched[80], tempf[24], seedf[40];
    view_step_label(s, stepf, sizeof stepf);
    snprintf(blockf, sizeof blockf, "block %d/%d", s->block + 1, s->n_blocks);
    snprintf(masks, sizeof masks, "masks %d", s->masks_left);
    if (s->settings.edit || s->n_edited > 0)       /* token editing: this step's replacements */
        snprintf(masks + strlen(masks), sizeof masks - strlen(masks), "  edits %d%s", s->n_edited, s->post_step ? " (post)" : "");
    snprintf(msf, sizeof msf, "%.0f ms/step", ms_step);
    snprintf(tpsf, sizeof tpsf, "%.1f tok/s", tps);
    snprintf(sched, sizeof sched, "%s/%s", schedule_name(se->schedule), schedule_score_name(se->score));
    snprintf(tempf, sizeof tempf, "T %.2f", (double)se->temperature);
    snprintf(seedf, sizeof seedf, "seed %llu", (unsigned long long)se->seed);
    /* in screen order; a narrow line leaves out whole fields, the highest prio first */
    const view_field masked_fields[] = {
        { stepf, 0 }, { blockf, 2 }, { masks, 1 }, { rows, 6 }, { msf, 7 }, { tpsf, 4 }, { sched, 3 },
        { tempf, 5 }, { seedf, 8 },
    };
    /* uniform-state: the numbers its acceptance and stop rules read, instead of the masks */
    const um_us_view *u = &s->us;
    char canvf[32], tf[24], boundf[24], accf[24], heldf[32], hf[48];
    snprintf(canvf, sizeof canvf, "canvas %d/%d", s->block + 1, s->n_blocks);
    snprintf(tf, sizeof tf, "t %.2f", (double)u->temperature);
    snprintf(boundf, sizeof boundf, "bound %.2f", (double)u->entropy_bound);
    snprintf(accf, sizeof accf, "accepted %d", u->accepted);
    snprintf(heldf, sizeof heldf, "held %d/%d", u->held, u->stability);
    snprintf(hf, sizeof hf, "H %.3f < %.3f", (double)u->mean_entropy, (double)u->confidence);
    const char *stopf = u->stopped ? (u->stable ? "stable" : "out of steps") : "";
    /* self-conditioning: off on a canvas's first step; else how many rows took the exact
     * product, in which precision, and how many the top-k sum */
    char scf[48];
    const int n_c = u->end - u->start, n_x = u->sc_exact_rows;
    const char *prec = u->sc_bf16 ? "bf16" : "f32";
    if (!u->self_cond) snprintf(scf, sizeof scf, "sc off");
    else if (n_x >= n_c) snprintf(scf, sizeof scf, "sc %s %d", prec, n_x);
    else if (n_x <= 0) snprintf(scf, sizeof scf, "sc top-k %d", n_c);
    else snprintf(scf, sizeof scf, "sc %s %d + top-k %d", prec, n_x, n_c - n_x);
    const view_field uniform_fields[] = {
        { stepf, 0 }, { canvf, 6 }, { tf, 1 }, { boundf, 4 }, { accf, 2 }, { heldf, 5 }, { hf, 3 },
        { stopf, 1 }, { scf, 7 }, { rows, 8 }, { msf, 9 }, { seedf, 10 },
    };
    const view_field *fields = u->on ? uniform_fields : masked_fields;
    const int n_fields = u->on ? (int)(sizeof uniform_fields / sizeof uniform_fields[0])
                               : (int)(sizeof masked_fields / sizeof masked_fields[0]);
    theme_role br;
    if (v->shown < v->n_hist - 1 && !v->following) {
        snprintf(badge, sizeof badge, " REWIND %d/%d ", s->step, last->step);
        br = THEME_PAUSED;
    } else if (v->shown == v->n_hist - 1 && last->done) {
        snprintf(badge, sizeof badge, " DONE ");
        br = THEME_RUNNING;
    } else if (v->paused) {
        snprintf(badge, sizeof badge, v->busy ? " PAUSED (finishing step) " : " PAUSED ");
        br = THEME_PAUSED;
    } else {
        snprintf(badge, sizeof badge, " RUNNING ");
        br = THEME_RUNNING;
    }
    int right = view_put_right(f, y, f->w, badge, view_role(v, br));
    if (v->recording) right = view_put_right(f, y, right - 1, " REC ", view_role(v, THEME_PAUSED));
    const char *msg = v->message && *v->message ? v->message : note;
    int min_left = 1 + ui_text_width(stepf) + 1, msg_w = msg && *msg ? ui_text_width(msg) + 2 : 0;
    if (v->pace_ms >= 0) {                          /* the pace goes before the message does */
        char label[24], pace[32];
        ui_pace_label(v->pace_ms, label, sizeof label);
        snprintf(pace, sizeof pace, " %s ", label);
        if (right - 1 - ui_text_width(pace) - msg_w >= min_left) right = view_put_right(f, y, right - 1, pace, st);
    }
    if (msg && *msg) {                     /* "...: from the next step" / "...: restarted" */
        frame_style msg_st = view_role(v, THEME_MESSAGE);
        msg_st.bg = st.bg;
        if (right - 1 - msg_w >= min_left) {
            int mx = right - msg_w;
            ui_text_puts(f, mx + 1, y, right - 1, msg, msg_st);
            right = mx;
        } else {                           /* a long message has the line to itself for a while */
            view_cut_words(msg, right - 2, buf, sizeof buf);
            ui_text_puts(f, 1, y, right - 1, buf, msg_st);
            return;
        }
    }
    buf[0] = ' ';
    view_fit(fields, n_fields, "  ", right - 2, buf + 1, sizeof buf - 1);
    ui_text_puts(f, 0, y, right - 1, buf, st);
}

/* No run to show: the source's error, wrapped to the width, and what can be done. */
static void draw_start_error(frame *f, const view_state *v, int y0, int h) {
    frame_style ms = view_role(v, THEME_MESSAGE), tx = view_role(v, THEME_TEXT);
    ms.bg = tx.bg;
    char buf[640];
    snprintf(buf, sizeof buf, "cannot start: %s", v->error);
    ui_text t = {0};
    int y = y0, x = 1;
    if (ui_text_shape_str(&t, buf, strlen(buf), NULL) == UM_OK)
        for (int32_t i = 0; i < t.n && y < y0 + h - 2; i++) {
            if (x + t.cl[i].width > f->w - 1) { x = 1; y++; }
            if (y >= y0 + h - 2) break;
            x = frame_put_cluster(f, x, y, f->w - 1, t.cl[i].text, t.cl[i].width, ms, -1);
        }
    ui_text_free(&t);
    ui_text_puts(f, 1, y + 2, f->w, "q quits, e edits the prompt, settings keys restart", tx);
}

/* ------------------------------------------------------------------ help overlay */

/* The key table in a box: each help text wrapped at spaces under its own column, rows never
 * split over two pages; pages (v->help_page, wrapped around) when they do not all fit. */
static void draw_help(frame *f, const view_state *v) {
    int bw = UM_MIN(f->w - 2, 76), bh = f->h - 2;
    int bx = (f->w - bw) / 2, by = 1, col = 15, text_w = bw - col - 3, rows = bh - 3;
    frame_style st = view_role(v, THEME_HELP), ti = view_role(v, THEME_TITLE);
    ti.bg = st.bg;
    /* first pass: the page each table row starts on */
    int page_of[64], n_pages = 1, used = 0;
    for (int i = 0; i < ui_keys_len && i < 64; i++) {
        page_of[i] = -1;
        if (!ui_keys[i].label) continue;
        int need = UM_MAX(1, view_wrap_count(ui_keys[i].help, text_w));
        if (used + need > rows && used > 0) { n_pages++; used = 0; }
        page_of[i] = n_pages - 1;
        used += need;
    }
    int page = ((v->help_page % n_pages) + n_pages) % n_pages, lines = 0;
    for (int i = 0; i < ui_keys_len && i < 64; i++)
        if (page_of[i] == page) lines += UM_MAX(1, view_wrap_count(ui_keys[i].help, text_w));
    bh = UM_MIN(bh, lines + 3);
    by = (f->h - bh) / 2;
    frame_fill(f, bx, by, bw, bh, st);
    char title[96];
    if (n_pages > 1) snprintf(title, sizeof title, "keys %d/%d (space: next page, ? or Esc closes)", page + 1, n_pages);
    else snprintf(title, sizeof title, "keys (? or Esc closes)");
    if (ui_text_width(title) > bw - 4) snprintf(title, sizeof title, n_pages > 1 ? "keys %d/%d" : "keys", page + 1, n_pages);
    ui_text_puts(f, bx + 2, by, bx + bw, title, ti);
    int y = by + 2;
    for (int i = 0; i < ui_keys_len && i < 64; i++) {
        if (page_of[i] != page) continue;
        ui_text_puts(f, bx + 2, y, bx + col, ui_keys[i].label, ti);
        y = view_put_wrapped(f, bx + col, y, bx + col + text_w, by + bh - 1, ui_keys[i].help, st);
    }
}

/* ------------------------------------------------------------------ the frame */

static void draw_too_small(frame *f, const view_state *v) {
    char buf[128];
    frame_fill(f, 0, 0, f->w, f->h, view_role(v, THEME_TEXT));
    snprintf(buf, sizeof buf, "terminal too small: %dx%d", f->w, f->h);
    ui_text_puts(f, 0, f->h / 2 - 1, f->w, buf, view_role(v, THEME_MESSAGE));
    snprintf(buf, sizeof buf, "need at least %dx%d (q quits)", VIEW_MIN_W, VIEW_MIN_H);
    ui_text_puts(f, 0, f->h / 2, f->w, buf, view_role(v, THEME_TEXT));
}

/* ------------------------------------------------------------------ comparison panes */

/* One pane at (x0, y0, w, h): header, summary (when done), canvas. */
static int draw_pane(view_ctx *c, frame *f, const view_state *v, int k, int x0, int y0, int w, int h,
                     char *note, size_t note_cap, bool *grid, um_err *e) {
    const view_pane *p = &v->panes[k];
    view_state pv = *v;
    pv.hist = p->hist;
    pv.n_hist = p->n_hist;
    pv.shown = UM_MIN(v->pane_step, p->n_hist - 1);
    pv.diff_ref = NULL;
    if (p->src) pv.src = p->src;
    pv.diff_src = v->panes[0].src ? v->panes[0].src : v->src;
    if (k != v->focus_pane) pv.cursor = -1;
    const um_snapshot *s = view_shown(&pv);
    const view_pane *p0 = &v->panes[0];
    const um_snapshot *ref = k > 0 && p0->n_hist > 0 ? p0->hist[UM_MIN(v->pane_step, p0->n_hist - 1)] : NULL;
    frame_style ti = view_role(v, k == v->focus_pane ? THEME_TITLE : THEME_PANEL), pn = view_role(v, THEME_PANEL);
    const char *dot = " \xC2\xB7 ";
    frame_fill(f, x0, y0, w, 2, pn);
    /* the header and summary lines: whole fields, the least important left out first */
    char name[200], label[176], stepf[48] = "", masks[32] = "", fwd[48] = "", buf[600];
    snprintf(name, sizeof name, "%s%d ", k == v->focus_pane ? "\xE2\x96\xB8" : " ", k + 1);
    view_cut_words(p->label, UM_MAX(1, w - 4), label, sizeof label);
    snprintf(name + strlen(name), sizeof name - strlen(name), "%s", label);
    if (s) {
        view_step_label(s, stepf, sizeof stepf);
        snprintf(masks, sizeof masks, "masks %d", s->masks_left);
        snprintf(fwd, sizeof fwd, "fwd %lld", (long long)s->passes_total);
    }
    const view_field head[] = { { name, 0 }, { stepf, 1 }, { masks, 2 }, { fwd, 3 } };
    view_fit(head, 4, dot, w, buf, sizeof buf);
    ui_text_puts(f, x0, y0, x0 + w, buf, ti);
    char verdict[48] = "", done[48] = "", passes[48] = "", tpf[48] = "", order[48] = "", diff[64] = "";
    if (s && s->done) {
        int32_t need = s->step + 2 + s->n_canvas;
        if (view_grow((void **)&c->rank, sizeof *c->rank, &c->rank_cap, need, e)) return UM_FAIL;
        ui_summary sm;
        ui_summary_of(s, c->rank, &sm);
        snprintf(done, sizeof done, "done %d steps", sm.steps);
        snprintf(passes, sizeof passes, "%lld fwd", (long long)sm.passes);
        snprintf(tpf, sizeof tpf, "%.2f tok/fwd", sm.tok_per_pass);
        snprintf(order, sizeof order, "order %.2f", sm.order_dist);
    }
    grid9 g;                                        /* a sudoku: solved, or how many conflicts */
    if (s && v->layout == VIEW_LAYOUT_GRID9 && grid9_scan(pv.src, s, &g) && (s->done || g.n_conflicts))
        grid9_verdict(&g, verdict, sizeof verdict);
    if (s && ref && !comparable(&pv, ref, s)) {
        snprintf(diff, sizeof diff, "other length: no marks");
    } else if (s && ref) {
        int32_t nd = 0;
        for (int32_t i = s->n_prompt; i < s->n_canvas; i++) nd += differs(&pv, ref, s, i);
        snprintf(diff, sizeof diff, "%d differ", nd);
    }
    const view_field sum[] = { { verdict, 0 }, { done, 1 }, { passes, 3 }, { tpf, 4 }, { order, 5 }, { diff, 2 } };
    memcpy(buf, "  ", 3);
    view_fit(sum, 6, dot, w - 2, buf + 2, sizeof buf - 2);
    if (p->error) {
        char err[600];
        snprintf(err, sizeof err, "error: %s", p->error);
        view_cut_words(err, w - 2, buf + 2, sizeof buf - 2);
        ui_text_puts(f, x0, y0 + 1, x0 + w, buf, view_role(v, THEME_MESSAGE));
    } else if (s) {
        ui_text_puts(f, x0, y0 + 1, x0 + w, buf, pn);
    }
    if (!s) {
        frame_fill(f, x0, y0 + 2, w, h - 2, view_role(v, THEME_TEXT));
        return UM_OK;
    }
    pv.diff_ref = ref;
    return draw_body(c, f, &pv, s, x0, y0 + 2, w, h - 2, note, note_cap, grid, e);
}

/* The panes in the rectangle (x0, y0, w, h): side by side, stacked, or a message. */
static int draw_panes(view_ctx *c, frame *f, const view_state *v, int x0, int y0, int w, int h,
                      char *note, size_t note_cap, bool *grid, um_err *e) {
    int n = v->n_panes;
    frame_style b = view_role(v, THEME_BORDER);
    frame_fill(f, x0, y0, w, h, view_role(v, THEME_TEXT));
    if ((w - (n - 1)) / n >= VIEW_PANE_MIN_W) {             /* side by side, one column between */
        int pw = (w - (n - 1)) / n;
        for (int k = 0; k < n; k++) {
            int px = x0 + k * (pw + 1);
            if (draw_pane(c, f, v, k, px, y0, k == n - 1 ? x0 + w - px : pw, h, note, note_cap, grid, e)) return UM_FAIL;
            if (k < n - 1)
                for (int y = y0; y < y0 + h; y++) frame_put_cluster(f, px + pw, y, x0 + w, "\xE2\x94\x82", 1, b, -1);
        }
    } else if ((h - (n - 1)) / n >= VIEW_PANE_MIN_H) {      /* stacked, one rule between */
        int ph = (h - (n - 1)) / n;
        for (int k = 0; k < n; k++) {
            int py = y0 + k * (ph + 1);
            if (draw_pane(c, f, v, k, x0, py, w, k == n - 1 ? y0 + h - py : ph, note, note_cap, grid, e)) return UM_FAIL;
            if (k < n - 1)
                for (int x = x0; x < x0 + w; x++) frame_put_cluster(f, x, py + ph, x0 + w, "\xE2\x94\x80", 1, b, -1);
        }
    } else {
        char buf[160];
        snprintf(buf, sizeof buf, "terminal too small for %d panes: they need %d columns side by side or %d rows stacked here",
                 n, n * VIEW_PANE_MIN_W + n - 1, n * VIEW_PANE_MIN_H + n - 1);
        ui_text_puts(f, x0 + 1, y0, x0 + w, buf, view_role(v, THEME_MESSAGE));
    }
    return UM_OK;
}

/* The canvas area: the one run, or the comparison's panes. */
static int draw_main(view_ctx *c, frame *f, const view_state *v, const um_snapshot *s, int x0, int y0, int w, int h,
                     char *note, size_t note_cap, bool *grid, um_err *e) {
    if (v->n_panes > 1 && v->panes) return draw_panes(c, f, v, x0, y0, w, h, note, note_cap, grid, e);
    return draw_body(c, f, v, s, x0, y0, w, h, note, note_cap, grid, e);
}

int view_build(view_ctx *c, frame *f, const view_state *v, um_err *e) {
    f->depth = v->depth;
    f->step = -1;
    if (f->w < VIEW_MIN_W || f->h < VIEW_MIN_H) {
        draw_too_small(f, v);
    } else {
        const um_snapshot *s = view_shown(v);
        char note[128] = "";
        bool grid = false;
        frame_fill(f, 0, 0, f->w, f->h, view_role(v, THEME_TEXT));   /* nothing stays from the last frame */
        draw_header(f, v, s);
        int body_y = 1, body_h = f->h - 3;
        if (s) {
            f->step = s->step;
            const bool insp = !v->hide_inspector, sched = !v->hide_schedule;
            const frame_style bd = view_role(v, THEME_BORDER);
            if (!insp && !sched) {                              /* i and p: the canvas takes it all */
                if (draw_main(c, f, v, s, 0, body_y, f->w, body_h, note, sizeof note, &grid, e)) return UM_FAIL;
            } else if (f->w >= VIEW_SIDE_MIN_W) {
                int sx = f->w - SIDE_W, cw = sx - 1;
                if (draw_main(c, f, v, s, 0, body_y, cw, body_h, note, sizeof note, &grid, e)) return UM_FAIL;
                for (int y = body_y; y < body_y + body_h; y++) frame_put_cluster(f, cw, y, f->w, "\xE2\x94\x82", 1, bd, -1);
                frame_fill(f, sx, body_y, SIDE_W, body_h, view_role(v, THEME_PANEL));
                if (insp && sched) {
                    int ih = body_h - 10;
                    panel_inspector(f, v, s, sx + 1, body_y, SIDE_W - 1, ih);
                    frame_fill(f, sx, body_y + ih, SIDE_W, 1, bd);
                    for (int x = sx; x < f->w; x++) frame_put_cluster(f, x, body_y + ih, f->w, "\xE2\x94\x80", 1, bd, -1);
                    panel_schedule(c, f, v, s, sx + 1, body_y + ih + 1, SIDE_W - 1, body_h - ih - 1);
                } else if (insp) {
                    panel_inspector(f, v, s, sx + 1, body_y, SIDE_W - 1, body_h);
                } else {
                    panel_schedule(c, f, v, s, sx + 1, body_y, SIDE_W - 1, body_h);
                }
            } else {
                int ch = body_h - STRIP_H - 1, half = insp && sched ? f->w / 2 : f->w + 1;
                if (draw_main(c, f, v, s, 0, body_y, f->w, ch, note, sizeof note, &grid, e)) return UM_FAIL;
                for (int x = 0; x < f->w; x++) frame_put_cluster(f, x, body_y + ch, f->w, "\xE2\x94\x80", 1, bd, -1);
                if (insp) panel_inspector(f, v, s, 0, body_y + ch + 1, half - 1, STRIP_H);
                if (insp && sched)
                    for (int y = body_y + ch + 1; y < body_y + body_h; y++) frame_put_cluster(f, half - 1, y, f->w, "\xE2\x94\x82", 1, bd, -1);
                if (sched) panel_schedule(c, f, v, s, insp ? half : 0, body_y + ch + 1, insp ? f->w - half : f->w, STRIP_H);
            }
        } else {
            frame_fill(f, 0, body_y, f->w, body_h, view_role(v, THEME_TEXT));
            if (v->error) draw_start_error(f, v, body_y, body_h);
            else ui_text_puts(f, 1, body_y, f->w, "starting...", view_role(v, THEME_MESSAGE));
        }
        if (s && v->error) {                        /* a standing error, whole, over the canvas's last rows */
            char err[640];
            snprintf(err, sizeof err, "error: %s", v->error);
            int rows = UM_MIN(4, view_wrap_count(err, f->w - 2));
            frame_style ms = view_role(v, THEME_MESSAGE);
            ms.bg = view_role(v, THEME_STATUS).bg;
            frame_fill(f, 0, body_y + body_h - rows, f->w, rows, ms);
            view_put_wrapped(f, 1, body_y + body_h - rows, f->w - 1, body_y + body_h, err, ms);
        }
        ui_heat_legend(f, v, s, f->h - 2, grid);
        draw_status(f, v, s, f->h - 1, note);
        if (v->help) draw_help(f, v);
    }
    if (v->depth == 0)                              /* no colour: attributes only */
        for (size_t i = 0; i < (size_t)f->w * (size_t)f->h; i++) f->cells[i].fg = f->cells[i].bg = FRAME_DEFAULT;
    return UM_OK;
}

void view_ctx_free(view_ctx *c) {
    ui_text_free(&c->text);
    free(c->runs);
    free(c->bytes);
    free(c->place);
    free(c->sim_masked);
    free(c->future);
    free(c->rank);
    memset(c, 0, sizeof *c);
}
