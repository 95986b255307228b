/*
 * render: draws a frame (frame.h) into an 8-bit indexed pixel buffer with a PSF bitmap font, for
 * the GIF recorder. The palette is the xterm-256 palette (render_palette), so a GIF can use
 * it as its global colour table and no quantisation is ever needed.
 *
 * Colours: a cell's 0xRRGGBB maps to the xterm-256 index with exactly that colour when one
 * exists (the 6x6x6 cube and grey ramp, 16..255, are preferred over the user-remappable
 * 0..15), otherwise to the index nearest in squared RGB distance. A theme built from xterm
 * colours therefore renders exactly; others are off by at most half a cube step.
 *
 * Drawing per cell (cell = font width x font height pixels, wide cells twice as wide):
 * background fill; the glyph for cp[0] from the font's Unicode map (centred in a wide cell);
 * a rectangle outline when the font has no glyph (so missing glyphs are visible, never
 * blank); combining marks cp[1..] overlaid when the font has them; bold = the glyph drawn a
 * second time one pixel to the right; underline = a line two pixels above the cell bottom;
 * dim = foreground blended halfway to the background; reverse = fg and bg swapped.
 * Nothing is allocated while drawing.
 */
#ifndef UM_RENDER_H
#define UM_RENDER_H

#include <stddef.h>
#include <stdint.h>

#include "psf.h"
#include "frame.h"
#include "util.h"

#define RENDER_CACHE 256         /* direct-mapped RGB -> index cache entries (power of 2) */

typedef struct render_ctx {
    const psf_font *font;        /* not owned */
    uint32_t cache_rgb[RENDER_CACHE];   /* key: rgb | 1 << 24 when the slot is valid */
    uint8_t  cache_idx[RENDER_CACHE];
} render_ctx;

/* The xterm-256 palette as (256, 3) bytes R, G, B. */
void     render_palette(uint8_t rgb[256 * 3]);
uint32_t render_palette_rgb(int idx);               /* 0xRRGGBB of index idx (0..255) */
int      render_nearest(uint32_t rgb);              /* uncached colour mapping, see above */

void render_init(render_ctx *r, const psf_font *font);
int  render_index(render_ctx *r, uint32_t rgb);      /* cached render_nearest */
/* Pixel size of a cols x rows frame. */
void render_size(const render_ctx *r, int cols, int rows, int *w, int *h);
/* Draw fr into pix, (h, w) bytes from render_size; pix_len is checked against it. */
int  render_frame(render_ctx *r, const frame *fr, uint8_t *pix, size_t pix_len, um_err *e);
/* Draw fr into a fixed pw x ph canvas (a GIF's size is fixed at gif_open while a terminal may
 * be resized): cells that do not fit whole are cut off, the rest of the canvas is pad_rgb. */
void render_frame_fit(render_ctx *r, const frame *fr, uint8_t *pix, int pw, int ph, uint32_t pad_rgb);

#endif
