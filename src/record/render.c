/*
 * render: frame -> indexed pixels with a PSF font and the xterm-256 palette. See render.h.
 *
 * Invariant: every pixel written lies inside the cell being drawn, so cells never bleed into
 * each other (bold's extra column and a centred narrow glyph are clipped to the cell).
 */
#include <string.h>

#include "render.h"

/* ---------------------------------------------------------------- palette */

/* xterm's default colours 0..15 (XTerm-col.ad / 256colres.h). */
static const uint32_t xterm_base16[16] = {
    0x000000, 0xcd0000, 0x00cd00, 0xcdcd00, 0x0000ee, 0xcd00cd, 0x00cdcd, 0xe5e5e5,
    0x7f7f7f, 0xff0000, 0x00ff00, 0xffff00, 0x5c5cff, 0xff00ff, 0x00ffff, 0xffffff,
};
/* Levels of the 6x6x6 colour cube, indices 16..231. */
static const uint8_t cube_level[6] = { 0x00, 0x5f, 0x87, 0xaf, 0xd7, 0xff };

uint32_t render_palette_rgb(int idx) {
    if (idx < 0 || idx > 255) return 0;
    if (idx < 16) return xterm_base16[idx];
    if (idx < 232) {
        int i = idx - 16;
        return (uint32_t)cube_level[i / 36] << 16 | (uint32_t)cube_level[i / 6 % 6] << 8 | cube_level[i % 6];
    }
    uint32_t g = 8 + 10 * (uint32_t)(idx - 232);    /* grey ramp 0x08..0xee */
    return g << 16 | g << 8 | g;
}

void render_palette(uint8_t rgb[256 * 3]) {
    for (int i = 0; i < 256; i++) {
        uint32_t c = render_palette_rgb(i);
        rgb[3 * i + 0] = (uint8_t)(c >> 16);
        rgb[3 * i + 1] = (uint8_t)(c >> 8);
        rgb[3 * i + 2] = (uint8_t)c;
    }
}

int render_nearest(uint32_t rgb) {
    rgb &= 0xffffff;
    int best = 0;
    long best_d = -1;
    /* 16..255 first so an exact cube/grey match wins over the remappable 0..15. */
    for (int k = 0; k < 256; k++) {
        int i = (k + 16) & 255;
        uint32_t c = render_palette_rgb(i);
        long dr = (long)(rgb >> 16) - (long)(c >> 16);
        long dg = (long)(rgb >> 8 & 255) - (long)(c >> 8 & 255);
        long db = (long)(rgb & 255) - (long)(c & 255);
        long d = dr * dr + dg * dg + db * db;
        if (best_d < 0 || d < best_d) { best_d = d; best = i; }
        if (d == 0) break;
    }
    return best;
}

/* ---------------------------------------------------------------- context */

void render_init(render_ctx *r, const psf_font *font) {
    memset(r, 0, sizeof *r);
    r->font = font;
}

int render_index(render_ctx *r, uint32_t rgb) {
    rgb &= 0xffffff;
    uint32_t h = (rgb * 2654435761u) >> 24;          /* Fibonacci hash, top 8 bits */
    h &= RENDER_CACHE - 1;
    uint32_t key = rgb | 1u << 24;
    if (r->cache_rgb[h] != key) {
        r->cache_rgb[h] = key;
        r->cache_idx[h] = (uint8_t)render_nearest(rgb);
    }
    return r->cache_idx[h];
}

void render_size(const render_ctx *r, int cols, int rows, int *w, int *h) {
    *w = cols * r->font->width;
    *h = rows * r->font->height;
}

/* ---------------------------------------------------------------- drawing */

static uint32_t blend_half(uint32_t a, uint32_t b) {
    uint32_t out = 0;
    for (int s = 0; s < 24; s += 8) out |= (((a >> s & 255) + (b >> s & 255)) / 2) << s;
    return out;
}

/* The box drawn for a glyph the font lacks: an outline inset from the cell edges. */
static void draw_missing(uint8_t *pix, int stride, int x0, int y0, int cw, int ch, uint8_t fg) {
    int l = x0 + 1, r = x0 + cw - 2, t = y0 + ch / 8, b = y0 + ch - 1 - ch / 8;
    if (r <= l || b <= t) return;
    for (int x = l; x <= r; x++) { pix[(size_t)t * stride + x] = fg; pix[(size_t)b * stride + x] = fg; }
    for (int y = t; y <= b; y++) { pix[(size_t)y * stride + l] = fg; pix[(size_t)y * stride + r] = fg; }
}

/* OR glyph g into the cell at pixel (x0, y0) of width cw, starting at x offset dx. */
/* Glyph fallbacks: the visualizer draws a few characters the built-in Spleen font lacks
 * (newline and space marks, tab arrow, end-of-text mark, eighth blocks in bars, ▲). Those
 * cells are drawn with the nearest glyph the font has instead of a hollow box. */
static const struct { uint32_t from, to; } fallbacks[] = {
    { 0x21B5, 0x00B6 },          /* ↵ newline mark  -> ¶ */
    { 0x2423, 0x005F },          /* ␣ visible space -> _ */
    { 0x2192, 0x00BB },          /* → tab           -> » */
    { 0x2190, 0x00AB },          /* ←               -> « */
    { 0x220E, 0x25CF },          /* ∎ end of text   -> ● */
    { 0x258F, 0x258C },          /* ▏▎▍ 1/8..3/8 block -> ▌ (a short bar stays visible) */
    { 0x258E, 0x258C },
    { 0x258D, 0x258C },
    { 0x258B, 0x2588 },          /* ▋▊▉ 5/8..7/8 block -> █ */
    { 0x258A, 0x2588 },
    { 0x2589, 0x2588 },
    { 0x2581, 0x2584 },          /* ▁▂▃ lower 1/8..3/8 -> ▄ */
    { 0x2582, 0x2584 },
    { 0x2583, 0x2584 },
    { 0x2585, 0x2588 },          /* ▅▆▇ lower 5/8..7/8 -> █ */
    { 0x2586, 0x2588 },
    { 0x2587, 0x2588 },
    { 0x25B2, 0x005E },          /* ▲ schedule mark -> ^ */
};
#define FALLBACK_LO 0x2190       /* code points of the table lie in [LO, HI] */
#define FALLBACK_HI 0x25B2
#define N_FALLBACKS ((int)(sizeof fallbacks / sizeof fallbacks[0]))

/* The font's glyph for cp, or its fallback's when the font lacks cp and has the fallback. */
static int glyph(const render_ctx *r, uint32_t cp) {
    int g = psf_glyph(r->font, cp);
    if (g >= 0 || cp < FALLBACK_LO || cp > FALLBACK_HI) return g;
    for (int k = 0; k < N_FALLBACKS; k++)
        if (fallbacks[k].from == cp) return psf_glyph(r->font, fallbacks[k].to);
    return g;
}

static void draw_glyph(const psf_font *f, int g, uint8_t *pix, int stride,
                       int x0, int y0, int cw, int dx, int bold, uint8_t fg) {
    const uint8_t *bm = psf_bitmap(f, g);
    for (int y = 0; y < f->height; y++) {
        const uint8_t *row = bm + (size_t)y * f->row_bytes;
        uint8_t *out = pix + (size_t)(y0 + y) * stride + x0;
        for (int x = 0; x < f->width; x++) {
            if (!(row[x >> 3] & (0x80 >> (x & 7)))) continue;
            int px = dx + x;
            if (px >= 0 && px < cw) out[px] = fg;
            if (bold && px + 1 >= 0 && px + 1 < cw) out[px + 1] = fg;
        }
    }
}

/* Draw the top-left cols x rows cells of fr into pix, a canvas w pixels wide. */
static void draw_cells(render_ctx *r, const frame *fr, int cols, int rows, uint8_t *pix, int w) {
    const psf_font *f = r->font;
    for (int row = 0; row < rows; row++) {
        int prev_wide = 0;                        /* the cell to the left was a wide leader */
        for (int col = 0; col < cols; col++) {
            const frame_cell *c = frame_get(fr, col, row);
            if (c->width == 0 && prev_wide) { prev_wide = 0; continue; }
            int span = (c->width == 2 && col + 1 < cols) ? 2 : 1;
            prev_wide = span == 2;

            uint32_t fg = frame_fg_rgb(c), bg = frame_bg_rgb(c);
            if (c->attrs & FRAME_REVERSE) { uint32_t t = fg; fg = bg; bg = t; }
            if (c->attrs & FRAME_DIM) fg = blend_half(fg, bg);
            uint8_t fgi = (uint8_t)render_index(r, fg), bgi = (uint8_t)render_index(r, bg);

            int cw = span * f->width, x0 = col * f->width, y0 = row * f->height;
            for (int y = 0; y < f->height; y++) memset(pix + (size_t)(y0 + y) * w + x0, bgi, (size_t)cw);

            uint32_t cp[FRAME_MAX_CP];
            int ncp = frame_cell_cps(c, cp);
            if (ncp > 0 && cp[0] != ' ') {
                int g = glyph(r, cp[0]);
                int dx = (cw - f->width) / 2;
                if (g < 0) draw_missing(pix, w, x0, y0, cw, f->height, fgi);
                else draw_glyph(f, g, pix, w, x0, y0, cw, dx, c->attrs & FRAME_BOLD, fgi);
                for (int k = 1; k < ncp; k++) {
                    int gm = psf_glyph(f, cp[k]);
                    if (gm >= 0) draw_glyph(f, gm, pix, w, x0, y0, cw, dx, c->attrs & FRAME_BOLD, fgi);
                }
            }
            if (c->attrs & FRAME_UNDERLINE) {
                int uy = y0 + (f->height >= 4 ? f->height - 2 : f->height - 1);
                memset(pix + (size_t)uy * w + x0, fgi, (size_t)cw);
            }
        }
    }
}

int render_frame(render_ctx *r, const frame *fr, uint8_t *pix, size_t pix_len, um_err *e) {
    if (fr->w <= 0 || fr->h <= 0 || !fr->cells)
        return um_errf(e, "render: empty frame (%dx%d)", fr->w, fr->h);
    int w, h;
    render_size(r, fr->w, fr->h, &w, &h);
    if ((size_t)w * (size_t)h > pix_len)
        return um_errf(e, "render: pixel buffer %zu bytes, frame needs %dx%d", pix_len, w, h);
    draw_cells(r, fr, fr->w, fr->h, pix, w);
    return UM_OK;
}

void render_frame_fit(render_ctx *r, const frame *fr, uint8_t *pix, int pw, int ph, uint32_t pad_rgb) {
    memset(pix, render_index(r, pad_rgb), (size_t)pw * (size_t)ph);
    if (fr->w <= 0 || fr->h <= 0 || !fr->cells) return;
    int cols = UM_MIN(fr->w, pw / r->font->width), rows = UM_MIN(fr->h, ph / r->font->height);
    if (cols > 0 && rows > 0) draw_cells(r, fr, cols, rows, pix, pw);
}
