/*
 * view_util: what the view's files share (see view_util.h): token text, the shown snapshot,
 * the focused position, a position's style, right-aligned text, scratch growth.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heat.h"
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

