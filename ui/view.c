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
#include "view.h"

const char *const view_layout_keys[VIEW_LAYOUT_COUNT] = { "text", "grid9" };

#define TAB_STOP      4
#define SIDE_W        34            /* right-hand panel width (wide layout) */
#define STRIP_H       9             /* bottom strip height (narrow layout) */
#define PIECE_MAX     256           /* bytes of one token's text kept for display */
#define SPECIAL_GLYPH "\xE2\x88\x8E"   /* ∎: a generated special token (end of text...) */
#define GRID_GAP      3             /* columns between the puzzle and the answer grids */

static frame_style role(const view_state *v, theme_role r) { return v->th->role[r]; }

/* ------------------------------------------------------------------ helpers */

static size_t piece(const view_state *v, int32_t tok, char *buf, size_t cap) {
    return v->src && v->src->piece ? v->src->piece(v->src->self, tok, buf, cap) : 0;
}

void view_piece_label(const char *b, size_t len, char *out, size_t cap) {
    size_t n = 0;
    if (!cap) return;
    for (size_t i = 0; i < len;) {
        uint32_t cp;
        uint8_t bad;
        size_t used = ui_text_decode((const unsigned char *)b + i, len - i, &cp, &bad);
        char tmp[32];
        size_t tl;
        if (bad) {
            tl = 0;
            for (size_t k = 0; k < used && tl + 4 < sizeof tmp; k++)
                tl += (size_t)snprintf(tmp + tl, sizeof tmp - tl, "<%02X>", (unsigned char)b[i + k]);
        } else if (cp == ' ')  { memcpy(tmp, "\xE2\x90\xA3", 3); tl = 3; }
        else if (cp == '\n')   { memcpy(tmp, "\xE2\x86\xB5", 3); tl = 3; }
        else if (cp == '\t')   { memcpy(tmp, "\xE2\x86\x92", 3); tl = 3; }
        else if (cp < 0x20 || cp == 0x7F) { tl = (size_t)snprintf(tmp, sizeof tmp, "<%02X>", cp); }
        else { memcpy(tmp, b + i, used); tl = used; }
        if (n + tl + 1 > cap) break;
        memcpy(out + n, tmp, tl);
        n += tl;
        i += used;
    }
    out[n] = 0;
}

static int grow(void **p, size_t elem, int32_t *cap, int32_t want, um_err *e) {
    if (want <= *cap) return UM_OK;
    int32_t nc = want < 256 ? 256 : want * 2;
    void *q = realloc(*p, elem * (size_t)nc);
    if (!q) return um_errf(e, "view: out of memory");
    *p = q;
    *cap = nc;
    return UM_OK;
}

static const um_snapshot *shown(const view_state *v) {
    if (!v->hist || v->n_hist <= 0) return NULL;
    int32_t i = v->shown < 0 ? 0 : v->shown >= v->n_hist ? v->n_hist - 1 : v->shown;
    return v->hist[i];
}

int32_t view_focus(const view_state *v) {
    const um_snapshot *s = shown(v);
    if (!s) return -1;
    if (v->cursor >= 0 && v->cursor < s->n_canvas) return v->cursor;
    for (int32_t i = s->n_prompt; i < s->n_canvas; i++)
        if (s->pos[i].masked) return i;
    return s->n_canvas - 1;
}

/* Right-align s on row y ending before column `end`; returns its start column. */
static int put_right(frame *f, int y, int end, const char *s, frame_style st) {
    int w = ui_text_width(s);
    int x = end - w;
    if (x < 0) x = 0;
    frame_puts(f, x, y, end, s, st);
    return x;
}

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

/* The source's model and machine, then the shown step's cache: after them when it fits,
 * else right-aligned before "? keys" over the end of the model's part. */
static void draw_header(frame *f, const view_state *v, const um_snapshot *s) {
    frame_style st = role(v, THEME_HEADER);
    frame_fill(f, 0, 0, f->w, 1, st);
    char buf[512], kv[160] = "";
    if (v->src) {
        const um_engine_info *in = &v->src->info;
        snprintf(buf, sizeof buf, " unmask \xE2\x94\x82 %s \xE2\x94\x82 %s \xE2\x94\x82 %s \xE2\x94\x82 %s %s \xE2\x94\x82 %d thread%s",
                 in->name, in->arch, in->quant, in->backend, in->isa, in->n_threads, in->n_threads == 1 ? "" : "s");
    } else {
        snprintf(buf, sizeof buf, " unmask");
    }
    if (s) {
        char label[128];
        cache_label(s, label, sizeof label);
        snprintf(kv, sizeof kv, " \xE2\x94\x82 %s", label);
    }
    int right = put_right(f, 0, f->w, "? keys ", st);
    int end = right - 1;
    if (kv[0] && ui_text_width(buf) + ui_text_width(kv) > end) end = put_right(f, 0, end, kv, st);
    int x = frame_puts(f, 0, 0, end, buf, st);
    if (kv[0] && end == right - 1) frame_puts(f, x, 0, end, kv, st);
}

/* ------------------------------------------------------------------ canvas */

/* Style and text source of one position. *ghost is set for live-confidence ghosts. */
static frame_style pos_style(const view_state *v, const um_snapshot *s, int32_t i, bool *ghost) {
    const um_pos *p = &s->pos[i];
    float h = ui_heat_value(v, s, i);
    *ghost = false;
    if (p->is_prompt) return isnan(h) ? role(v, THEME_PROMPT) : ui_heat_style(v, h, role(v, THEME_PROMPT));
    if (p->us == UM_US_NOISE) return role(v, THEME_NOISE);
    if (p->us == UM_US_CUT) return role(v, THEME_MASK);
    if (p->us == UM_US_DRAFT || p->us == UM_US_ACCEPTED) {     /* uniform-state: heat, then the kind */
        frame_style st = ui_heat_style(v, isnan(h) ? 1.0f : h, role(v, THEME_TEXT));
        frame_style k = role(v, p->us == UM_US_DRAFT ? THEME_DRAFT : THEME_ACCEPTED);
        st.attrs |= k.attrs;
        if (k.bg != FRAME_DEFAULT) st.bg = k.bg;
        if (p->us == UM_US_ACCEPTED && v->depth == 0) st.attrs |= FRAME_UNDERLINE;   /* no colours: still shows */
        return st;
    }
    if (p->masked) {
        if (v->heat == VIEW_HEAT_LIVE && p->has_view) {
            *ghost = true;
            frame_style st = ui_heat_style(v, h, role(v, THEME_TEXT));
            st.attrs |= role(v, THEME_GHOST).attrs;
            return st;
        }
        if (!isnan(h)) return ui_heat_style(v, h, role(v, THEME_MASK));
        return role(v, THEME_MASK);
    }
    frame_style st = ui_heat_style(v, isnan(h) ? 1.0f : h, role(v, THEME_TEXT));
    if (p->fresh || p->edited) {        /* a replaced token is not a fresh commit: its own role */
        frame_style fr = role(v, p->edited ? THEME_EDITED : THEME_FRESH);
        st.attrs |= fr.attrs;
        if (fr.bg != FRAME_DEFAULT) st.bg = fr.bg;
        if (fr.fg != FRAME_DEFAULT) st.fg = fr.fg;
        if (p->edited && v->depth == 0) st.attrs |= FRAME_REVERSE;   /* no colours: still shows */
    }
    return st;
}

static bool is_special(const view_state *v, int32_t tok) {
    return v->src && v->src->is_special && v->src->is_special(v->src->self, tok);
}

/* Does position i hold a committed token in both a and b, a different one? */
static bool differs(const um_snapshot *a, const um_snapshot *b, int32_t i) {
    if (a->n_canvas != b->n_canvas || a->n_prompt != b->n_prompt || i < a->n_prompt || i >= a->n_canvas) return false;
    return !a->pos[i].masked && !b->pos[i].masked && a->pos[i].token != b->pos[i].token;
}

/* Positions [from, to) of s as wrapped text in the rectangle (x0, y0, w, h). */
static int draw_canvas(view_ctx *c, frame *f, const view_state *v, const um_snapshot *s, int32_t from, int32_t to,
                       int x0, int y0, int w, int h, um_err *e) {
    if (w < 1 || h < 1 || to <= from) return UM_OK;
    int32_t n = to - from;
    if (grow((void **)&c->runs, sizeof *c->runs, &c->runs_cap, n + 1, e)) return UM_FAIL;
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
            if (ghost) r->len = piece(v, p->top[0].token, c->bytes + at, PIECE_MAX);
            if (!ghost || r->len == 0) {
                r->len = strlen(v->th->mask_glyph);
                memcpy(c->bytes + at, v->th->mask_glyph, r->len);
            }
        } else if (i >= s->n_prompt && is_special(v, p->token)) {
            r->opaque = true;                        /* generated <|eot|> etc.: one compact glyph */
            r->len = sizeof SPECIAL_GLYPH - 1;
            memcpy(c->bytes + at, SPECIAL_GLYPH, r->len);
        } else {
            r->len = piece(v, p->token, c->bytes + at, PIECE_MAX);
        }
        at += r->len;
    }
    if (ui_text_shape(&c->text, c->runs, n, e)) return UM_FAIL;
    const ui_text *t = &c->text;
    if (grow((void **)&c->place, 3 * sizeof *c->place, &c->place_cap, t->n + 1, e)) return UM_FAIL;

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

    frame_fill(f, x0, y0, w, h, role(v, THEME_TEXT));
    frame_style cursor = role(v, THEME_CURSOR);
    for (int32_t k = 0; k < t->n; k++) {
        int32_t ln = c->place[3 * k] - top;
        if (ln < 0 || ln >= h) continue;
        const ui_cluster *cl = &t->cl[k];
        int cx = x0 + c->place[3 * k + 1], cw = c->place[3 * k + 2];
        bool ghost;
        frame_style st = pos_style(v, s, cl->pos, &ghost);
        if (cl->kind != UI_CL_TEXT || (cl->flags & UI_CL_REPLACED)) st.attrs |= FRAME_DIM;
        if (!s->pos[cl->pos].masked && !strcmp(cl->text, SPECIAL_GLYPH) && cl->pos >= s->n_prompt) st.attrs |= FRAME_DIM;
        if (v->diff_ref && differs(v->diff_ref, s, cl->pos)) {
            frame_style df = role(v, THEME_DIFF);
            if (df.fg != FRAME_DEFAULT) st.fg = df.fg;
            if (df.bg != FRAME_DEFAULT) st.bg = df.bg;
            st.attrs |= df.attrs;
            if (v->depth == 0) st.attrs |= FRAME_REVERSE;      /* no colours: the mark must still show */
        }
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
    size_t n = piece(v, tok, raw, sizeof raw), a = 0;
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
    frame_style b = role(v, THEME_BORDER);
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
    frame_style st = pos_style(v, s, i, &ghost);
    if (special) st.attrs |= FRAME_DIM;
    if (g->conflict[k]) {
        frame_style cf = role(v, THEME_CONFLICT);
        if (cf.fg != FRAME_DEFAULT) st.fg = cf.fg;
        if (cf.bg != FRAME_DEFAULT) st.bg = cf.bg;
        st.attrs |= cf.attrs;
        if (v->depth == 0) st.attrs |= FRAME_REVERSE;      /* no colours: the mark must still show */
    }
    return v->cursor == i ? role(v, THEME_CURSOR) : st;
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
        else st = v->cursor == i ? role(v, THEME_CURSOR) : pos_style(v, s, i, &ghost);
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
    frame_fill(f, x0, y0, w, h, role(v, THEME_TEXT));
    int gy = y0 + (h > GRID9_H), rx = x0 + GRID9_W + GRID_GAP;
    if (gy > y0) {
        frame_style ti = role(v, THEME_TITLE), cf = role(v, THEME_CONFLICT);
        char buf[48];
        frame_puts(f, x0 + 1, y0, rx, g.puzzle0 >= 0 ? "puzzle" : "prompt", ti);
        int x = frame_puts(f, rx + 1, y0, x0 + w, "answer", ti);
        if (g.n_conflicts) {
            snprintf(buf, sizeof buf, "%d conflict%s", g.n_conflicts, g.n_conflicts == 1 ? "" : "s");
            if (v->depth == 0) cf.attrs |= FRAME_REVERSE;
            frame_puts(f, x + 2, y0, x0 + w, buf, cf);
        }
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

/* ------------------------------------------------------------------ inspector */

static void draw_inspector(frame *f, const view_state *v, const um_snapshot *s, int x0, int y0, int w, int h) {
    frame_style pn = role(v, THEME_PANEL), ti = role(v, THEME_TITLE), dim = pn;
    dim.attrs |= FRAME_DIM;
    frame_fill(f, x0, y0, w, h, pn);
    int32_t i = view_focus(v);
    char buf[512], raw[PIECE_MAX], label[PIECE_MAX * 2];
    int y = y0, lim = x0 + w;
    if (i < 0) { frame_puts(f, x0, y, lim, "inspector", ti); return; }
    const um_pos *p = &s->pos[i];
    snprintf(buf, sizeof buf, "inspector  pos %d%s", i, v->cursor < 0 ? " (follows)" : "");
    frame_puts(f, x0, y++, lim, buf, ti);
    if (y >= y0 + h) return;
    bool ghost;
    frame_style tok = pos_style(v, s, i, &ghost);
    size_t len = piece(v, p->token, raw, sizeof raw);
    if (p->masked) {
        frame_puts(f, frame_puts(f, x0, y, lim, "token  ", pn), y, lim, v->th->mask_glyph, role(v, THEME_MASK));
    } else {
        view_piece_label(raw, len, label, sizeof label);
        int x = frame_puts(f, x0, y, lim, "token  ", pn);
        frame_puts(f, x, y, lim, label, tok);
    }
    if (++y >= y0 + h) return;
    if (p->is_prompt) snprintf(buf, sizeof buf, "prompt token");
    else if (p->us != UM_US_NONE) ui_summary_why_uniform(s, i, buf, sizeof buf);
    else if (p->masked) snprintf(buf, sizeof buf, "masked at step %d", s->step);
    else snprintf(buf, sizeof buf, "committed step %d, p %.3f%s", p->commit_step, p->commit_conf, p->fresh ? " (new)" : "");
    frame_puts(f, x0, y++, lim, buf, pn);
    if (!p->masked && !p->is_prompt && p->n_edits > 0 && y < y0 + h) {
        /* token editing: the latest replacement, "edited at step S: OLD -> NEW" */
        char from[PIECE_MAX * 2], to[PIECE_MAX * 2];
        len = piece(v, p->edit_from, raw, sizeof raw);
        view_piece_label(raw, len, from, sizeof from);
        len = piece(v, p->token, raw, sizeof raw);
        view_piece_label(raw, len, to, sizeof to);
        char times[32] = "";
        if (p->n_edits > 1) snprintf(times, sizeof times, " (%d edits)", p->n_edits);
        snprintf(buf, sizeof buf, "edited at step %d: %.64s -> %.64s%s", p->edit_step, from, to, times);
        frame_style es = pn;
        if (p->edited) {
            frame_style er = role(v, THEME_EDITED);
            es.attrs |= er.attrs;
            if (er.bg != FRAME_DEFAULT) es.bg = er.bg;
            if (v->depth == 0) es.attrs |= FRAME_REVERSE;
        }
        frame_puts(f, x0, y++, lim, buf, es);
    }
    if (!p->has_view || y >= y0 + h) return;
    snprintf(buf, sizeof buf, "top-%d at step %d, H %.2f nats", UM_TOPK, s->step, p->entropy);
    frame_puts(f, x0, y++, lim, buf, dim);
    int bar_w = w >= 30 ? 8 : 4;
    for (int k = 0; k < UM_TOPK && y < y0 + h; k++, y++) {
        const um_cand *cd = &p->top[k];
        if (cd->prob <= 0 && k > 0) break;
        len = piece(v, cd->token, raw, sizeof raw);
        view_piece_label(raw, len, label, sizeof label);
        int x = x0;
        snprintf(buf, sizeof buf, "%d ", k + 1);
        x = frame_puts(f, x, y, lim, buf, dim);
        int label_end = lim - bar_w - 7;
        frame_puts(f, x, y, label_end, label, ui_heat_style(v, cd->prob, pn));
        /* probability bar in eighths, then the value */
        int bx = label_end + 1, eighths = (int)lroundf(cd->prob * (float)(bar_w * 8));
        frame_style bs = ui_heat_style(v, cd->prob, role(v, THEME_BAR));
        for (int j = 0; j < bar_w; j++, eighths -= 8) {
            static const char *const part[9] = { " ", "\xE2\x96\x8F", "\xE2\x96\x8E", "\xE2\x96\x8D", "\xE2\x96\x8C",
                                                 "\xE2\x96\x8B", "\xE2\x96\x8A", "\xE2\x96\x89", "\xE2\x96\x88" };
            frame_put_cluster(f, bx + j, y, lim, part[eighths >= 8 ? 8 : eighths <= 0 ? 0 : eighths], 1, bs, -1);
        }
        snprintf(buf, sizeof buf, " %.3f", cd->prob);
        frame_puts(f, bx + bar_w, y, lim, buf, pn);
    }
}

/* ------------------------------------------------------------------ schedule */

/* The plan ahead: commit counts of the steps after the newest snapshot if nothing changes,
 * simulated with schedule_plan from its masks (committing the first masks of the active
 * block: which ones does not change the counts). None for the threshold schedule, whose
 * counts depend on the model. Returns the number of future steps in c->future. */
static int32_t plan_ahead(view_ctx *c, const um_snapshot *last, um_err *e) {
    int32_t n_gen = last->n_canvas - last->n_prompt;
    if (last->done || schedule_adaptive(last->settings.schedule) || n_gen <= 0) return 0;
    if (grow((void **)&c->sim_masked, sizeof *c->sim_masked, &c->sim_cap, n_gen, e)) return 0;
    int32_t max_steps = UM_MIN(4096, UM_MAX(last->settings.steps, 1) + n_gen);
    if (grow((void **)&c->future, sizeof *c->future, &c->future_cap, max_steps, e)) return 0;
    for (int32_t i = 0; i < n_gen; i++) c->sim_masked[i] = last->pos[last->n_prompt + i].masked;
    int32_t n = 0;
    for (int32_t step = last->step; n < max_steps; step++) {
        um_plan p;
        if (schedule_plan(&last->settings, 0, n_gen, c->sim_masked, step, &p, NULL) != UM_OK || p.done) break;
        c->future[n++] = p.count;
        for (int32_t i = p.start, k = 0; i < p.end && k < p.count; i++)
            if (c->sim_masked[i]) { c->sim_masked[i] = false; k++; }
    }
    return n;
}

static void draw_schedule(view_ctx *cx, frame *f, const view_state *v, const um_snapshot *s, int x0, int y0, int w, int h) {
    frame_style pn = role(v, THEME_PANEL), ti = role(v, THEME_TITLE);
    frame_fill(f, x0, y0, w, h, pn);
    char buf[256];
    snprintf(buf, sizeof buf, "schedule  %s \xC2\xB7 %s", schedule_name(s->settings.schedule),
             schedule_score_name(s->settings.score));
    frame_puts(f, x0, y0, x0 + w, buf, ti);
    if (h < 4) return;
    /* one column per step: recorded steps 1..n as bars (─ where the plan said more), then the
     * plan ahead as ░ columns; a window around the shown step when they do not all fit */
    int label_w = 5, cols = w - label_w, chart_h = h - 3;
    int32_t n = v->n_hist - 1, cur = s->step;
    if (cols < 1 || n < 0) return;
    int32_t n_future = plan_ahead(cx, v->hist[n], NULL), total = n + n_future;
    int32_t first = 1;
    if (total > cols) first = UM_MAX(1, UM_MIN(cur - cols / 2, total - cols + 1));
    int maxv = 1;
    for (int32_t k = 1; k <= n; k++) maxv = UM_MAX(maxv, UM_MAX(v->hist[k]->n_committed, v->hist[k]->planned));
    for (int32_t j = 0; j < n_future; j++) maxv = UM_MAX(maxv, cx->future[j]);
    snprintf(buf, sizeof buf, "%d", maxv);
    frame_puts(f, x0, y0 + 1, x0 + label_w, buf, pn);
    frame_puts(f, x0, y0 + chart_h, x0 + label_w, "0", pn);
    static const char *const eighth[9] = { " ", "\xE2\x96\x81", "\xE2\x96\x82", "\xE2\x96\x83", "\xE2\x96\x84",
                                           "\xE2\x96\x85", "\xE2\x96\x86", "\xE2\x96\x87", "\xE2\x96\x88" };
    for (int c = 0; c < cols; c++) {
        int32_t k = first + c;
        if (k > total) break;
        int cx0 = x0 + label_w + c;
        if (k > n) {                                             /* planned, not yet run */
            int plan = cx->future[k - n - 1] * chart_h * 8 / maxv;
            for (int r = 0; r < chart_h && plan > r * 8; r++)
                frame_put_cluster(f, cx0, y0 + chart_h - r, x0 + w, "\xE2\x96\x91", 1, role(v, THEME_PLANNED), -1);
            continue;
        }
        const um_snapshot *hs = v->hist[k];
        int act = hs->n_committed * chart_h * 8 / maxv, plan = hs->planned * chart_h * 8 / maxv;
        frame_style bar = role(v, k == cur ? THEME_MARK : THEME_BAR);
        for (int r = 0; r < chart_h; r++) {                      /* r = 0 is the bottom row */
            int fill = act - r * 8, y = y0 + chart_h - r;
            if (fill > 0) frame_put_cluster(f, cx0, y, x0 + w, eighth[fill >= 8 ? 8 : fill], 1, bar, -1);
            else if (plan > r * 8 && plan <= (r + 1) * 8)          /* planned level above the bar */
                frame_put_cluster(f, cx0, y, x0 + w, "\xE2\x94\x80", 1, role(v, THEME_PLANNED), -1);
        }
        if (k == cur) frame_put_cluster(f, cx0, y0 + chart_h + 1, x0 + w, "\xE2\x96\xB2", 1, role(v, THEME_MARK), -1);
    }
    if (n_future > 0) snprintf(buf, sizeof buf, "step %d: %d/%d committed, %d to go", cur, s->n_committed, s->planned, n_future);
    else snprintf(buf, sizeof buf, "step %d: %d/%d committed/planned", cur, s->n_committed, s->planned);
    frame_puts(f, x0, y0 + h - 1, x0 + w, buf, pn);
}

/* ------------------------------------------------------------------ status */

/* note: the layout's note, shown in the message's place when there is no message. */
static void draw_status(frame *f, const view_state *v, const um_snapshot *s, int y, const char *note) {
    frame_style st = role(v, THEME_STATUS);
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
        int right = put_right(f, y, f->w, " Enter restarts \xC2\xB7 Esc cancels ", st);
        /* keep the end of a long prompt visible */
        const char *p = buf;
        while (ui_text_width(p) > right - 1 && *p) p++;
        while ((*p & 0xC0) == 0x80) p++;
        frame_puts(f, 0, y, right - 1, p, st);
        return;
    }
    if (v->error) {                                 /* the error, whole, instead of the numbers */
        int right = put_right(f, y, f->w, " ERROR ", role(v, THEME_PAUSED));
        if (v->recording) right = put_right(f, y, right - 1, " REC ", role(v, THEME_PAUSED));
        frame_style msg_st = role(v, THEME_MESSAGE);
        msg_st.bg = st.bg;
        snprintf(buf, sizeof buf, " error: %s", v->error);
        frame_puts(f, 0, y, right - 1, buf, msg_st);
        return;
    }
    if (!s) { frame_puts(f, 0, y, f->w, " starting...", st); return; }
    const um_snapshot *last = v->hist[v->n_hist - 1];
    double ms = 0;
    int32_t committed = 0;
    for (int32_t k = 1; k <= v->shown && k < v->n_hist; k++) {
        ms += v->hist[k]->forward_ms + v->hist[k]->sample_ms;
        committed += v->hist[k]->n_committed;
    }
    double ms_step = v->shown > 0 ? ms / v->shown : 0, tps = ms > 0 ? committed / (ms / 1000.0) : 0;
    const um_settings *se = &s->settings;
    char rows[64] = "0";                            /* step 0 ran no forward pass */
    if (s->passes > 0)
        snprintf(rows, sizeof rows, "%d/%lld%s", s->rows_computed, (long long)s->passes * s->n_canvas,
                 s->cache_refreshed ? " refresh" : "");
    char edits[48] = "";                            /* token editing: this step's replacements */
    if (s->settings.edit || s->n_edited > 0)
        snprintf(edits, sizeof edits, "  edits %d%s", s->n_edited, s->post_step ? " (post)" : "");
    if (s->us.on) ui_summary_status_uniform(s, rows, ms_step, buf, sizeof buf);   /* the rule's numbers */
    else snprintf(buf, sizeof buf, " step %d/%d  block %d/%d  masks %d%s  rows %s  %.0f ms/step  %.1f tok/s  %s/%s  T %.2f  seed %llu",
             s->step, s->n_steps, s->block + 1, s->n_blocks, s->masks_left, edits, rows, ms_step, tps,
             schedule_name(se->schedule), schedule_score_name(se->score),
             (double)se->temperature, (unsigned long long)se->seed);
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
    int right = put_right(f, y, f->w, badge, role(v, br));
    if (v->recording) right = put_right(f, y, right - 1, " REC ", role(v, THEME_PAUSED));
    if (v->pace_ms >= 0) {
        char label[24], pace[32];
        ui_pace_label(v->pace_ms, label, sizeof label);
        snprintf(pace, sizeof pace, " %s ", label);
        right = put_right(f, y, right - 1, pace, st);
    }
    const char *msg = v->message && *v->message ? v->message : note;
    if (msg && *msg) {                     /* "...: from the next step" / "...: restarted" */
        frame_style msg_st = role(v, THEME_MESSAGE);
        msg_st.bg = st.bg;
        int mw = ui_text_width(msg) + 2;
        int mx = UM_MAX(right / 3, right - mw);   /* keep "step k/N ..." readable */
        frame_puts(f, mx + 1, y, right - 1, msg, msg_st);
        right = mx;
    }
    frame_puts(f, 0, y, right - 1, buf, st);
}

/* No run to show: the source's error, wrapped to the width, and what can be done. */
static void draw_start_error(frame *f, const view_state *v, int y0, int h) {
    frame_style ms = role(v, THEME_MESSAGE), tx = role(v, THEME_TEXT);
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
    frame_puts(f, 1, y + 2, f->w, "q quits, e edits the prompt, settings keys restart", tx);
}

/* ------------------------------------------------------------------ help overlay */

static void draw_help(frame *f, const view_state *v) {
    int lines = 0;
    for (int i = 0; i < ui_keys_len; i++) lines += ui_keys[i].label != NULL;
    int bw = UM_MIN(f->w - 2, 72), bh = UM_MIN(f->h - 2, lines + 4);
    int bx = (f->w - bw) / 2, by = (f->h - bh) / 2;
    frame_style st = role(v, THEME_HELP), ti = role(v, THEME_TITLE);
    ti.bg = st.bg;
    frame_fill(f, bx, by, bw, bh, st);
    frame_puts(f, bx + 2, by, bx + bw, "keys (? or Esc closes)", ti);
    int y = by + 2;
    for (int i = 0; i < ui_keys_len && y < by + bh - 1; i++) {
        if (!ui_keys[i].label) continue;
        frame_puts(f, bx + 2, y, bx + 16, ui_keys[i].label, ti);
        frame_puts(f, bx + 16, y, bx + bw - 1, ui_keys[i].help, st);
        y++;
    }
}

/* ------------------------------------------------------------------ the frame */

static void draw_too_small(frame *f, const view_state *v) {
    char buf[128];
    frame_fill(f, 0, 0, f->w, f->h, role(v, THEME_TEXT));
    snprintf(buf, sizeof buf, "terminal too small: %dx%d", f->w, f->h);
    frame_puts(f, 0, f->h / 2 - 1, f->w, buf, role(v, THEME_MESSAGE));
    snprintf(buf, sizeof buf, "need at least %dx%d (q quits)", VIEW_MIN_W, VIEW_MIN_H);
    frame_puts(f, 0, f->h / 2, f->w, buf, role(v, THEME_TEXT));
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
    if (k != v->focus_pane) pv.cursor = -1;
    const um_snapshot *s = shown(&pv);
    const view_pane *p0 = &v->panes[0];
    const um_snapshot *ref = k > 0 && p0->n_hist > 0 ? p0->hist[UM_MIN(v->pane_step, p0->n_hist - 1)] : NULL;
    frame_style ti = role(v, k == v->focus_pane ? THEME_TITLE : THEME_PANEL), pn = role(v, THEME_PANEL);
    char head[2][512], line[2][512];
    const char *dot = " \xC2\xB7 ";
    frame_fill(f, x0, y0, w, 2, pn);
    /* the header and summary lines in words ([0]), and compact ([1]) for when they do not fit */
    for (int cp = 0; cp < 2; cp++) {
        char sum[256] = "", diff[64] = "";
        int off = snprintf(head[cp], sizeof head[cp], "%s%d %s", k == v->focus_pane ? "\xE2\x96\xB8" : " ", k + 1, p->label);
        if (s && !cp) snprintf(head[cp] + off, sizeof head[cp] - (size_t)off, "%sstep %d/%d%smasks %d%sfwd %lld",
                               dot, s->step, s->n_steps, dot, s->masks_left, dot, (long long)s->passes_total);
        if (s && cp) snprintf(head[cp] + off, sizeof head[cp] - (size_t)off, " %d/%d m%d f%lld",
                              s->step, s->n_steps, s->masks_left, (long long)s->passes_total);
        if (s && s->done) {
            int32_t need = s->step + 2 + s->n_canvas;
            if (grow((void **)&c->rank, sizeof *c->rank, &c->rank_cap, need, e)) return UM_FAIL;
            ui_summary sm;
            ui_summary_of(s, c->rank, &sm);
            if (!cp)
                snprintf(sum, sizeof sum, "done %d steps%s%lld fwd%s%.2f tok/fwd%sorder %.2f", sm.steps, dot,
                         (long long)sm.passes, dot, sm.tok_per_pass, dot, sm.order_dist);
            else
                snprintf(sum, sizeof sum, "%d st %lld fwd %.2f t/f ord %.2f", sm.steps, (long long)sm.passes,
                         sm.tok_per_pass, sm.order_dist);
        }
        if (s && ref && (ref->n_canvas != s->n_canvas || ref->n_prompt != s->n_prompt)) {
            snprintf(diff, sizeof diff, cp ? "len\xE2\x89\xA0" : "other length: no marks");
        } else if (s && ref) {
            int32_t nd = 0;
            for (int32_t i = s->n_prompt; i < s->n_canvas; i++) nd += differs(ref, s, i);
            snprintf(diff, sizeof diff, cp ? "%d\xE2\x89\xA0" : "%d differ", nd);
        }
        snprintf(line[cp], sizeof line[cp], "  %s%s%s", sum, sum[0] && diff[0] ? (cp ? " " : dot) : "", diff);
    }
    frame_puts(f, x0, y0, x0 + w, head[ui_text_width(head[0]) > w], ti);
    if (p->error) {
        char buf[600];
        snprintf(buf, sizeof buf, "  error: %s", p->error);
        frame_puts(f, x0, y0 + 1, x0 + w, buf, role(v, THEME_MESSAGE));
    } else if (s) {
        frame_puts(f, x0, y0 + 1, x0 + w, line[ui_text_width(line[0]) > w], pn);
    }
    if (!s) {
        frame_fill(f, x0, y0 + 2, w, h - 2, role(v, THEME_TEXT));
        return UM_OK;
    }
    pv.diff_ref = ref;
    return draw_body(c, f, &pv, s, x0, y0 + 2, w, h - 2, note, note_cap, grid, e);
}

/* The panes in the rectangle (x0, y0, w, h): side by side, stacked, or a message. */
static int draw_panes(view_ctx *c, frame *f, const view_state *v, int x0, int y0, int w, int h,
                      char *note, size_t note_cap, bool *grid, um_err *e) {
    int n = v->n_panes;
    frame_style b = role(v, THEME_BORDER);
    frame_fill(f, x0, y0, w, h, role(v, THEME_TEXT));
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
        frame_puts(f, x0 + 1, y0, x0 + w, buf, role(v, THEME_MESSAGE));
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
        const um_snapshot *s = shown(v);
        char note[128] = "";
        bool grid = false;
        draw_header(f, v, s);
        int body_y = 1, body_h = f->h - 3;
        if (s) {
            f->step = s->step;
            if (f->w >= VIEW_SIDE_MIN_W) {
                int sx = f->w - SIDE_W, cw = sx - 1;
                if (draw_main(c, f, v, s, 0, body_y, cw, body_h, note, sizeof note, &grid, e)) return UM_FAIL;
                for (int y = body_y; y < body_y + body_h; y++)
                    frame_put_cluster(f, cw, y, f->w, "\xE2\x94\x82", 1, role(v, THEME_BORDER), -1);
                int ih = body_h - 10;
                draw_inspector(f, v, s, sx + 1, body_y, SIDE_W - 1, ih);
                frame_fill(f, sx, body_y + ih, SIDE_W, 1, role(v, THEME_BORDER));
                for (int x = sx; x < f->w; x++)
                    frame_put_cluster(f, x, body_y + ih, f->w, "\xE2\x94\x80", 1, role(v, THEME_BORDER), -1);
                draw_schedule(c, f, v, s, sx + 1, body_y + ih + 1, SIDE_W - 1, body_h - ih - 1);
            } else {
                int ch = body_h - STRIP_H - 1, half = f->w / 2;
                if (draw_main(c, f, v, s, 0, body_y, f->w, ch, note, sizeof note, &grid, e)) return UM_FAIL;
                for (int x = 0; x < f->w; x++)
                    frame_put_cluster(f, x, body_y + ch, f->w, "\xE2\x94\x80", 1, role(v, THEME_BORDER), -1);
                draw_inspector(f, v, s, 0, body_y + ch + 1, half - 1, STRIP_H);
                for (int y = body_y + ch + 1; y < body_y + body_h; y++)
                    frame_put_cluster(f, half - 1, y, f->w, "\xE2\x94\x82", 1, role(v, THEME_BORDER), -1);
                draw_schedule(c, f, v, s, half, body_y + ch + 1, f->w - half, STRIP_H);
            }
        } else {
            frame_fill(f, 0, body_y, f->w, body_h, role(v, THEME_TEXT));
            if (v->error) draw_start_error(f, v, body_y, body_h);
            else frame_puts(f, 1, body_y, f->w, "starting...", role(v, THEME_MESSAGE));
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
