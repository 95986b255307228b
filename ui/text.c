/*
 * text: raw token bytes -> display clusters (see text.h for the invariants).
 *
 * Two passes per segment (a maximal group of joinable runs): decode bytes to code points,
 * replacing invalid subparts with U+FFFD, then group code points into grapheme clusters
 * with utf8proc and turn each into its display form and width.
 */
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "esc.h"
#include "text.h"

static int grow(void **p, size_t elem, size_t want, um_err *e) {
    void *q = realloc(*p, elem * want);
    if (!q) return um_errf(e, "text: out of memory for %zu items", want);
    *p = q;
    return UM_OK;
}

static int reserve_cp(ui_text *t, size_t n, um_err *e) {
    if ((int32_t)n <= t->cp_cap) return UM_OK;
    size_t cap = n < 256 ? 256 : n * 2;
    if (grow((void **)&t->cp, sizeof *t->cp, cap, e) || grow((void **)&t->cp_pos, sizeof *t->cp_pos, cap, e) ||
        grow((void **)&t->cp_pos_last, sizeof *t->cp_pos_last, cap, e) || grow((void **)&t->cp_bad, 1, cap, e))
        return UM_FAIL;
    t->cp_cap = (int32_t)cap;
    return UM_OK;
}

static int reserve_seg(ui_text *t, size_t n, um_err *e) {
    if (n <= t->seg_cap) return UM_OK;
    size_t cap = n < 1024 ? 1024 : n * 2;
    if (grow((void **)&t->seg, 1, cap, e) || grow((void **)&t->seg_pos, sizeof *t->seg_pos, cap, e)) return UM_FAIL;
    t->seg_cap = cap;
    return UM_OK;
}

static int push_cluster(ui_text *t, um_err *e) {
    if (t->n == t->cap) {
        int32_t cap = t->cap ? t->cap * 2 : 256;
        if (grow((void **)&t->cl, sizeof *t->cl, (size_t)cap, e)) return UM_FAIL;
        t->cap = cap;
    }
    memset(&t->cl[t->n], 0, sizeof t->cl[t->n]);
    t->n++;
    return UM_OK;
}

/* ------------------------------------------------------------------ decoding */

/* Decode one UTF-8 sequence at s[0..n). Returns bytes used (>= 1); *cp = U+FFFD and
 * *bad = 1 for an invalid maximal subpart (Unicode's "substitution of maximal subparts"). */
size_t ui_text_decode(const unsigned char *s, size_t n, uint32_t *cp, uint8_t *bad) {
    unsigned char b = s[0];
    *bad = 0;
    if (b < 0x80) { *cp = b; return 1; }
    size_t need;
    uint32_t c;
    unsigned char lo = 0x80, hi = 0xBF;
    if (b >= 0xC2 && b <= 0xDF)      { need = 2; c = b & 0x1F; }
    else if (b >= 0xE0 && b <= 0xEF) { need = 3; c = b & 0x0F; if (b == 0xE0) lo = 0xA0; if (b == 0xED) hi = 0x9F; }
    else if (b >= 0xF0 && b <= 0xF4) { need = 4; c = b & 0x07; if (b == 0xF0) lo = 0x90; if (b == 0xF4) hi = 0x8F; }
    else { *cp = 0xFFFD; *bad = 1; return 1; }
    size_t i = 1;
    for (; i < need; i++) {
        if (i >= n || s[i] < lo || s[i] > hi) { *cp = 0xFFFD; *bad = 1; return i; }
        c = (c << 6) | (s[i] & 0x3F);
        lo = 0x80; hi = 0xBF;
    }
    *cp = c;
    return need;
}

/* ------------------------------------------------------------------ clusters */

static bool is_combining(uint32_t cp) {
    utf8proc_category_t c = utf8proc_category((utf8proc_int32_t)cp);
    return c == UTF8PROC_CATEGORY_MN || c == UTF8PROC_CATEGORY_ME || c == UTF8PROC_CATEGORY_MC;
}

/* Append cp's UTF-8 to buf (cap bytes incl. NUL) if it fits whole; returns false if not. */
static bool append_cp(char *buf, size_t *len, size_t cap, uint32_t cp) {
    utf8proc_uint8_t tmp[4];
    utf8proc_ssize_t n = utf8proc_encode_char((utf8proc_int32_t)cp, tmp);
    if (n <= 0 || *len + (size_t)n + 1 > cap) return false;
    memcpy(buf + *len, tmp, (size_t)n);
    *len += (size_t)n;
    buf[*len] = 0;
    return true;
}

/* Build the display form of code points [a, b) as one cluster. */
static int emit_cluster(ui_text *t, int32_t a, int32_t b, um_err *e) {
    if (push_cluster(t, e)) return UM_FAIL;
    ui_cluster *c = &t->cl[t->n - 1];
    uint32_t first = t->cp[a];
    size_t len = 0;
    c->pos = t->cp_pos[a];
    c->pos_last = t->cp_pos_last[b - 1];
    c->width = 1;
    for (int32_t k = a; k < b; k++) if (t->cp_bad[k]) c->flags |= UI_CL_REPLACED;
    if (first == '\n') {
        c->kind = UI_CL_NEWLINE;
        append_cp(c->text, &len, sizeof c->text, 0x21B5);
        return UM_OK;
    }
    if (first == '\t') {
        c->kind = UI_CL_TAB;
        append_cp(c->text, &len, sizeof c->text, 0x2192);
        return UM_OK;
    }
    if (esc_is_control(first) && first <= 0x7F) {   /* esc.h's rule: C0 and DEL as pictures, */
        c->flags |= UI_CL_REPLACED;
        append_cp(c->text, &len, sizeof c->text, first == 0x7F ? 0x2421 : 0x2400 + first);
        return UM_OK;
    }
    if (esc_is_control(first)) {                      /* C1 as U+2370 */
        c->flags |= UI_CL_REPLACED;
        append_cp(c->text, &len, sizeof c->text, 0x2370);
        return UM_OK;
    }
    int w = utf8proc_charwidth((utf8proc_int32_t)first);
    if (w <= 0) {
        if (!is_combining(first)) {                 /* zero-width format char: make it visible */
            c->flags |= UI_CL_REPLACED;
            append_cp(c->text, &len, sizeof c->text, 0x2370);
            return UM_OK;
        }
        append_cp(c->text, &len, sizeof c->text, 0x25CC);
        w = 1;
    }
    for (int32_t k = a; k < b; k++) {
        if (t->cp[k] == 0xFE0F && w == 1) w = 2;      /* emoji presentation selector */
        if (!append_cp(c->text, &len, sizeof c->text, t->cp[k])) break;   /* cut long mark runs */
    }
    c->width = (uint8_t)(w > 2 ? 2 : w);
    return UM_OK;
}

/* Decode seg[0..n) and append its clusters. */
static int shape_segment(ui_text *t, size_t n, um_err *e) {
    if (reserve_cp(t, n + 1, e)) return UM_FAIL;
    int32_t ncp = 0;
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        uint8_t bad;
        size_t used = ui_text_decode(t->seg + i, n - i, &cp, &bad);
        t->cp[ncp] = cp;
        t->cp_bad[ncp] = bad;
        t->cp_pos[ncp] = t->seg_pos[i];
        t->cp_pos_last[ncp] = t->seg_pos[i + used - 1];
        ncp++;
        i += used;
    }
    utf8proc_int32_t state = 0;
    int32_t start = 0;
    for (int32_t k = 1; k <= ncp; k++) {
        bool brk = k == ncp || utf8proc_grapheme_break_stateful((utf8proc_int32_t)t->cp[k - 1],
                                                                (utf8proc_int32_t)t->cp[k], &state);
        if (!brk) continue;
        if (emit_cluster(t, start, k, e)) return UM_FAIL;
        start = k;
        state = 0;
    }
    return UM_OK;
}

int ui_text_shape(ui_text *t, const ui_run *runs, int32_t n_runs, um_err *e) {
    t->n = 0;
    int32_t r = 0;
    while (r < n_runs) {
        int32_t end = r + 1;
        if (!runs[r].opaque)
            while (end < n_runs && !runs[end].opaque && !runs[end].split) end++;
        size_t bytes = 0;
        for (int32_t k = r; k < end; k++) bytes += runs[k].len;
        if (reserve_seg(t, bytes + 1, e)) return UM_FAIL;
        size_t at = 0;
        for (int32_t k = r; k < end; k++) {
            if (runs[k].len) memcpy(t->seg + at, runs[k].bytes, runs[k].len);
            for (size_t j = 0; j < runs[k].len; j++) t->seg_pos[at + j] = runs[k].pos;
            at += runs[k].len;
        }
        if (bytes && shape_segment(t, bytes, e)) return UM_FAIL;
        r = end;
    }
    return UM_OK;
}

int ui_text_shape_str(ui_text *t, const char *s, size_t len, um_err *e) {
    ui_run run = { 0, s, len, false, false };
    return ui_text_shape(t, &run, 1, e);
}

void ui_text_free(ui_text *t) {
    free(t->cl); free(t->cp); free(t->cp_pos); free(t->cp_pos_last); free(t->cp_bad);
    free(t->seg); free(t->seg_pos);
    memset(t, 0, sizeof *t);
}

int ui_text_width(const char *s) {
    ui_text t = {0};
    int w = 0;
    if (ui_text_shape_str(&t, s, strlen(s), NULL) == UM_OK)
        for (int32_t i = 0; i < t.n; i++) w += t.cl[i].width;
    ui_text_free(&t);
    return w;
}

int ui_text_puts(frame *f, int x, int y, int limit, const char *s, frame_style st) {
    ui_text t = {0};
    if (ui_text_shape_str(&t, s, strlen(s), NULL) == UM_OK)
        for (int32_t i = 0; i < t.n && x < UM_MIN(limit, f->w); i++)
            x = frame_put_cluster(f, x, y, limit, t.cl[i].text, t.cl[i].width, st, -1);
    ui_text_free(&t);
    return x;
}
