/*
 * view_util: what the view's files share (see view_util.h): token text, the shown snapshot,
 * the focused position, a position's style, right-aligned text, scratch growth.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heat.h"
#include "schedule.h"
#include "view_util.h"

size_t view_piece(const view_state *v, int32_t tok, char *buf, size_t cap) {
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

int view_grow(void **p, size_t elem, int32_t *cap, int32_t want, um_err *e) {
    if (want <= *cap) return UM_OK;
    int32_t nc = want < 256 ? 256 : want * 2;
    void *q = realloc(*p, elem * (size_t)nc);
    if (!q) return um_errf(e, "view: out of memory");
    *p = q;
    *cap = nc;
    return UM_OK;
}

const um_snapshot *view_shown(const view_state *v) {
    if (!v->hist || v->n_hist <= 0) return NULL;
    int32_t i = v->shown < 0 ? 0 : v->shown >= v->n_hist ? v->n_hist - 1 : v->shown;
    return v->hist[i];
}

int32_t view_focus(const view_state *v) {
    const um_snapshot *s = view_shown(v);
    if (!s) return -1;
    if (v->cursor >= 0 && v->cursor < s->n_canvas) return v->cursor;
    for (int32_t i = s->n_prompt; i < s->n_canvas; i++)
        if (s->pos[i].masked) return i;
    return s->n_canvas - 1;
}

/* Right-align s on row y ending before column `end`; returns its start column. */
int view_put_right(frame *f, int y, int end, const char *s, frame_style st) {
    int w = ui_text_width(s);
    int x = end - w;
    if (x < 0) x = 0;
    ui_text_puts(f, x, y, end, s, st);
    return x;
}

/* Style and text source of one position. *ghost is set for live-confidence ghosts. */
frame_style view_pos_style(const view_state *v, const um_snapshot *s, int32_t i, bool *ghost) {
    const um_pos *p = &s->pos[i];
    float h = ui_heat_value(v, s, i);
    *ghost = false;
    if (p->is_prompt) return isnan(h) ? view_role(v, THEME_PROMPT) : ui_heat_style(v, h, view_role(v, THEME_PROMPT));
    if (p->us == UM_US_NOISE) return view_role(v, THEME_NOISE);
    if (p->us == UM_US_CUT) return view_role(v, THEME_MASK);
    if (p->us == UM_US_DRAFT || p->us == UM_US_ACCEPTED) {     /* uniform-state: heat, then the kind */
        frame_style st = ui_heat_style(v, isnan(h) ? 1.0f : h, view_role(v, THEME_TEXT));
        frame_style k = view_role(v, p->us == UM_US_DRAFT ? THEME_DRAFT : THEME_ACCEPTED);
        st.attrs |= k.attrs;
        if (k.bg != FRAME_DEFAULT) st.bg = k.bg;
        if (p->us == UM_US_ACCEPTED && v->depth == 0) st.attrs |= FRAME_UNDERLINE;   /* no colours: still shows */
        return st;
    }
    if (p->masked) {
        if (v->heat == VIEW_HEAT_LIVE && p->has_view) {
            *ghost = true;
            frame_style st = ui_heat_style(v, h, view_role(v, THEME_TEXT));
            st.attrs |= view_role(v, THEME_GHOST).attrs;
            return st;
        }
        if (!isnan(h)) return ui_heat_style(v, h, view_role(v, THEME_MASK));
        return view_role(v, THEME_MASK);
    }
    frame_style st = ui_heat_style(v, isnan(h) ? 1.0f : h, view_role(v, THEME_TEXT));
    if (p->fresh || p->edited) {        /* a replaced token is not a fresh commit: its own role */
        frame_style fr = view_role(v, p->edited ? THEME_EDITED : THEME_FRESH);
        st.attrs |= fr.attrs;
        if (fr.bg != FRAME_DEFAULT) st.bg = fr.bg;
        if (fr.fg != FRAME_DEFAULT) st.fg = fr.fg;
        if (p->edited && v->depth == 0) st.attrs |= FRAME_REVERSE;   /* no colours: still shows */
    }
    return st;
}


int view_fit(const view_field *fl, int n, const char *sep, int w, char *out, size_t cap) {
    bool keep[32];
    n = UM_MIN(n, 32);
    for (int k = 0; k < n; k++) keep[k] = fl[k].text && fl[k].text[0];
    for (;;) {
        size_t len = 0;
        out[0] = 0;
        for (int k = 0; k < n; k++) {
            if (!keep[k]) continue;
            int m = snprintf(out + len, cap - len, "%s%s", len ? sep : "", fl[k].text);
            if (m < 0 || (size_t)m >= cap - len) { out[len] = 0; break; }
            len += (size_t)m;
        }
        int width = ui_text_width(out);
        if (width <= w) return width;
        int drop = -1;                              /* the least important field left (later on ties) */
        for (int k = 0; k < n; k++)
            if (keep[k] && (drop < 0 || fl[k].prio >= fl[drop].prio)) drop = k;
        if (drop < 0) { out[0] = 0; return 0; }
        keep[drop] = false;
    }
}

int view_cut_words(const char *s, int w, char *out, size_t cap) {
    snprintf(out, cap, "%s", s);
    if (ui_text_width(out) <= w) return ui_text_width(out);
    /* the longest prefix ending before a space that fits with the ellipsis */
    size_t best = 0;
    for (size_t i = 1; s[i] && i < cap - 4; i++) {
        if (s[i] != ' ') continue;
        char tmp[1024];
        snprintf(tmp, sizeof tmp, "%.*s\xE2\x80\xA6", (int)i, s);
        if (ui_text_width(tmp) > w) break;
        best = i;
    }
    if (best == 0) { out[0] = 0; return 0; }
    snprintf(out, cap, "%.*s\xE2\x80\xA6", (int)best, s);
    return ui_text_width(out);
}

void view_step_label(const um_snapshot *s, char *buf, size_t cap) {
    if (!s->done && schedule_adaptive(s->settings.schedule)) snprintf(buf, cap, "step %d", s->step);   /* no made-up total */
    else snprintf(buf, cap, "step %d/%d", s->step, s->n_steps);
}

/* s as word-wrapped lines in columns [x0, lim) from row y, never past row ymax (exclusive):
 * breaks at spaces; a word longer than the line is cut at the edge. Returns the next row. */
int view_put_wrapped(frame *f, int x0, int y, int lim, int ymax, const char *s, frame_style st) {
    ui_text t = { 0 };
    if (ui_text_shape_str(&t, s, strlen(s), NULL) != UM_OK) { ui_text_free(&t); return y; }
    int32_t i = 0;
    while (i < t.n && y < ymax) {
        while (i < t.n && !strcmp(t.cl[i].text, " ")) i++;          /* no space opens a line */
        int x = x0;
        int32_t end = i, brk = -1;                                   /* brk: the last space that fits */
        for (int w = 0; end < t.n && w + t.cl[end].width <= lim - x0; w += t.cl[end].width, end++)
            if (!strcmp(t.cl[end].text, " ")) brk = end;
        if (end < t.n && brk > i) end = brk;                         /* break at a space */
        for (; i < end; i++) x = frame_put_cluster(f, x, y, lim, t.cl[i].text, t.cl[i].width, st, -1);
        if (i < t.n || x > x0) y++;
    }
    ui_text_free(&t);
    return y;
}

int view_wrap_count(const char *s, int w) {
    frame tmp = { 0 };
    if (w < 1 || frame_init(&tmp, w, 64, NULL)) return 1;
    int n = view_put_wrapped(&tmp, 0, 0, w, 64, s, (frame_style){ FRAME_DEFAULT, FRAME_DEFAULT, 0 });
    frame_free(&tmp);
    return n;
}

int view_cut_cols(const char *s, int w, char *out, size_t cap) {
    snprintf(out, cap, "%s", s);
    if (ui_text_width(out) <= w) return ui_text_width(out);
    ui_text t = { 0 };
    size_t n = 0;
    int width = 0;
    out[0] = 0;
    if (w >= 1 && ui_text_shape_str(&t, s, strlen(s), NULL) == UM_OK)
        for (int32_t i = 0; i < t.n && width + t.cl[i].width <= w - 1; i++) {
            size_t l = strlen(t.cl[i].text);
            if (n + l + 4 > cap) break;
            memcpy(out + n, t.cl[i].text, l);
            n += l;
            width += t.cl[i].width;
        }
    ui_text_free(&t);
    if (w >= 1 && n + 4 <= cap) { memcpy(out + n, "\xE2\x80\xA6", 4); width++; }
    return width;
}
