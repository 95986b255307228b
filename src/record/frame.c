/*
 * frame: a grid of styled cells (see frame.h for the cell invariants) and the colour
 * quantisers every renderer shares.
 */
#include <stdlib.h>
#include <string.h>

#include "frame.h"

static void blank(frame_cell *c, frame_style st) {
    c->text[0] = ' ';
    c->text[1] = 0;
    c->width = 1;
    c->attrs = st.attrs;
    c->fg = st.fg;
    c->bg = st.bg;
    c->pos = -1;
}

int frame_init(frame *f, int w, int h, um_err *e) {
    memset(f, 0, sizeof *f);
    if (w < 1 || h < 1) return um_errf(e, "frame: bad size %dx%d", w, h);
    f->cells = um_malloc((size_t)w * (size_t)h * sizeof *f->cells);
    if (!f->cells) return um_errf(e, "frame: out of memory for %dx%d cells", w, h);
    f->w = w;
    f->h = h;
    f->depth = 256;
    f->step = -1;
    frame_fill(f, 0, 0, w, h, (frame_style){ FRAME_DEFAULT, FRAME_DEFAULT, 0 });
    return UM_OK;
}

void frame_free(frame *f) {
    free(f->cells);
    memset(f, 0, sizeof *f);
}

void frame_fill(frame *f, int x, int y, int w, int h, frame_style st) {
    int x1 = UM_MIN(f->w, x + w), y1 = UM_MIN(f->h, y + h);
    x = UM_MAX(0, x);
    y = UM_MAX(0, y);
    for (int r = y; r < y1; r++) {
        if (x > 0 && frame_at(f, x, r)->width == 0) blank(frame_at(f, x - 1, r), st);
        if (x1 < f->w && frame_at(f, x1, r)->width == 0) blank(frame_at(f, x1, r), st);
        for (int c = x; c < x1; c++) blank(frame_at(f, c, r), st);
    }
}

int frame_put_cluster(frame *f, int x, int y, int limit, const char *text, int width,
                      frame_style st, int32_t pos) {
    if (limit > f->w) limit = f->w;
    if (y < 0 || y >= f->h || x < 0 || x >= limit) return x;
    if (width == 2 && x + 1 >= limit) {                    /* does not fit: blank instead */
        frame_fill(f, x, y, 1, 1, st);
        return x + 1;
    }
    frame_fill(f, x, y, width == 2 ? 2 : 1, 1, st);        /* also repairs broken wide cells */
    frame_cell *c = frame_at(f, x, y);
    size_t n = strlen(text);
    if (n >= FRAME_TEXT_MAX) n = FRAME_TEXT_MAX - 1;
    memcpy(c->text, text, n);
    c->text[n] = 0;
    c->pos = pos;
    if (width == 2) {
        c->width = 2;
        frame_cell *r = frame_at(f, x + 1, y);
        r->text[0] = 0;
        r->width = 0;
        r->pos = pos;
        return x + 2;
    }
    return x + 1;
}


void frame_restyle(frame *f, int x, int y, int w, frame_style st) {
    if (y < 0 || y >= f->h) return;
    for (int c = UM_MAX(0, x); c < UM_MIN(f->w, x + w); c++) {
        frame_cell *cell = frame_at(f, c, y);
        cell->fg = st.fg;
        cell->bg = st.bg;
        cell->attrs = st.attrs;
    }
}

/* ------------------------------------------------------------------ colours */

static const uint8_t cube[6] = { 0, 95, 135, 175, 215, 255 };

frame_color frame_color_from_256(int i) {
    static const frame_color sys[16] = {
        0x000000, 0xcd0000, 0x00cd00, 0xcdcd00, 0x0000ee, 0xcd00cd, 0x00cdcd, 0xe5e5e5,
        0x7f7f7f, 0xff0000, 0x00ff00, 0xffff00, 0x5c5cff, 0xff00ff, 0x00ffff, 0xffffff,
    };
    if (i < 0) return FRAME_DEFAULT;
    if (i < 16) return sys[i];
    if (i < 232) {
        i -= 16;
        return (frame_color)cube[i / 36] << 16 | (frame_color)cube[(i / 6) % 6] << 8 | cube[i % 6];
    }
    if (i < 256) {
        uint32_t g = 8 + 10 * (uint32_t)(i - 232);
        return g << 16 | g << 8 | g;
    }
    return FRAME_DEFAULT;
}

static int dist2(frame_color a, frame_color b) {
    int dr = (int)(a >> 16 & 255) - (int)(b >> 16 & 255);
    int dg = (int)(a >> 8 & 255) - (int)(b >> 8 & 255);
    int db = (int)(a & 255) - (int)(b & 255);
    return 2 * dr * dr + 4 * dg * dg + 3 * db * db;        /* rough perceptual weights */
}

int frame_color_to_256(frame_color c) {
    if (c == FRAME_DEFAULT) return -1;
    int best = 16, bd = 1 << 30;
    for (int i = 16; i < 256; i++) {                        /* 0..15 depend on the terminal */
        int d = dist2(c, frame_color_from_256(i));
        if (d < bd) { bd = d; best = i; }
    }
    return best;
}

int frame_color_to_8(frame_color c) {
    if (c == FRAME_DEFAULT) return -1;
    /* black only for near-black: dark greys as text must stay visible on dark terminals */
    int maxc = UM_MAX((int)(c >> 16 & 255), UM_MAX((int)(c >> 8 & 255), (int)(c & 255)));
    if (maxc < 0x40) return 0;
    int best = 1, bd = 1 << 30;
    for (int i = 1; i < 8; i++) {
        int d = dist2(c, frame_color_from_256(i));
        if (d < bd) { bd = d; best = i; }
    }
    return best;
}

size_t frame_row_text(const frame *f, int y, char *buf, size_t cap) {
    size_t n = 0;
    if (!cap) return 0;
    for (int x = 0; x < f->w && y >= 0 && y < f->h; x++) {
        const frame_cell *c = &f->cells[(size_t)y * (size_t)f->w + (size_t)x];
        size_t l = strlen(c->text);
        if (n + l + 1 > cap) break;
        memcpy(buf + n, c->text, l);
        n += l;
    }
    buf[n] = 0;
    return n;
}

/* UTF-8 -> code points; the cell text is valid UTF-8 by the frame's invariant, but a
 * hand-made cell is read defensively: a malformed byte is U+FFFD and consumes one byte. */
static size_t decode(const unsigned char *s, size_t n, uint32_t *cp) {
    unsigned char b = s[0];
    size_t len = b < 0x80 ? 1 : (b & 0xE0) == 0xC0 ? 2 : (b & 0xF0) == 0xE0 ? 3 : (b & 0xF8) == 0xF0 ? 4 : 0;
    if (len == 1) { *cp = b; return 1; }
    if (len == 0 || len > n) { *cp = 0xFFFD; return 1; }
    uint32_t v = b & (0x7F >> len);
    for (size_t k = 1; k < len; k++) {
        if ((s[k] & 0xC0) != 0x80) { *cp = 0xFFFD; return 1; }
        v = v << 6 | (s[k] & 0x3F);
    }
    *cp = v;
    return len;
}

int frame_cell_cps(const frame_cell *c, uint32_t cp[FRAME_MAX_CP]) {
    if (c->width == 0) return 0;
    size_t len = strnlen(c->text, FRAME_TEXT_MAX);
    int n = 0;
    for (size_t at = 0; at < len && n < FRAME_MAX_CP;) {
        uint32_t v;
        at += decode((const unsigned char *)c->text + at, len - at, &v);
        if (v == ' ' && n == 0 && at == len) break;             /* a blank */
        cp[n++] = v;
    }
    return n;
}
