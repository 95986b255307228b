/*
 * frame: the screen as data, the one cell type every output reads. A frame is a grid of
 * cells, each holding one grapheme cluster, its width, colours and attributes; it knows
 * nothing about curses or files.
 *
 * The visualizer builds one frame per redraw (ui/view.c: view_build) and hands it to the
 * renderers, which only read it: ui/draw_curses.c for the terminal, and the recorders of
 * this folder (render.c draws it into GIF pixels, cast.c into asciicast escape text), with
 * no conversion in between. Text is laid out into a frame by ui/text.h (ui_text_puts).
 *
 * Cell invariants (kept by every frame_* writer):
 *   - text is a NUL-terminated UTF-8 grapheme cluster with no control characters,
 *     at most FRAME_TEXT_MAX - 1 bytes; a blank cell holds " ".
 *   - width is 1 for a normal cell, 2 for the left half of a wide cluster (CJK, emoji);
 *     the cell to its right then has width 0 and text "" (a continuation cell). A wide
 *     cluster is never placed in the last column; writing over half of a wide cluster
 *     blanks the other half.
 *   - fg, bg are 24-bit 0xRRGGBB values or FRAME_DEFAULT (the terminal's own colour).
 *     Renderers quantise to what they can show (frame_color_to_256 / _to_8); frame->depth
 *     records the colour depth the frame was composed for (attributes such as DIM/BOLD
 *     already stand in for colour when depth is 0).
 *   - pos is the canvas position whose text the cell shows, or -1 (for mouse hit tests).
 */
#ifndef UM_FRAME_H
#define UM_FRAME_H

#include <stddef.h>
#include <stdint.h>
#include "util.h"

#define FRAME_TEXT_MAX 32
#define FRAME_DEFAULT  0xFF000000u     /* "use the terminal's default colour" */
#define FRAME_DEFAULT_FG 0xd0d0d0u     /* what the recorders paint for FRAME_DEFAULT: a dark */
#define FRAME_DEFAULT_BG 0x121212u     /* terminal's usual text and background */
#define FRAME_MAX_CP   4               /* code points a recorder draws per cell (base + marks) */

typedef uint32_t frame_color;          /* 0x00RRGGBB or FRAME_DEFAULT */

enum {
    FRAME_BOLD      = 1 << 0,
    FRAME_DIM       = 1 << 1,
    FRAME_UNDERLINE = 1 << 2,
    FRAME_REVERSE   = 1 << 3,
    FRAME_ITALIC    = 1 << 4,
};

typedef struct frame_style {
    frame_color fg, bg;
    uint8_t     attrs;                 /* FRAME_* bits */
} frame_style;

typedef struct frame_cell {
    char        text[FRAME_TEXT_MAX];  /* one grapheme cluster, UTF-8, NUL-terminated */
    uint8_t     width;                 /* 1, 2 (wide, left half) or 0 (right half) */
    uint8_t     attrs;
    frame_color fg, bg;
    int32_t     pos;                   /* canvas position shown, -1 if none */
} frame_cell;

typedef struct frame {
    int         w, h;                  /* columns, rows */
    int         depth;                 /* colours composed for: 16777216, 256, 8 or 0 (none) */
    frame_cell *cells;                 /* (h, w) row-major */
    int32_t     step;                  /* snapshot step shown, -1 if none (for recorders) */
} frame;

int  frame_init(frame *f, int w, int h, um_err *e);   /* all cells blank, default colours */
void frame_free(frame *f);
static inline frame_cell *frame_at(frame *f, int x, int y) { return &f->cells[(size_t)y * (size_t)f->w + (size_t)x]; }
static inline const frame_cell *frame_get(const frame *f, int x, int y) { return &f->cells[(size_t)y * (size_t)f->w + (size_t)x]; }

/* Fill a rectangle with blanks in style st (clipped to the frame). */
void frame_fill(frame *f, int x, int y, int w, int h, frame_style st);
/* Put one cluster (display text of width 1 or 2) at (x, y); returns the next x.
 * A width-2 cluster that does not fit before `limit` puts a blank instead. */
int  frame_put_cluster(frame *f, int x, int y, int limit, const char *text, int width,
                       frame_style st, int32_t pos);
/* Change the style of cells [x, x+w) on row y, keeping their text. */
void frame_restyle(frame *f, int x, int y, int w, frame_style st);

/* Colour helpers shared by every renderer. */
int         frame_color_to_256(frame_color c);   /* nearest xterm-256 index (16..255) */
int         frame_color_to_8(frame_color c);     /* nearest of the 8 ANSI colours (0..7); black
                                                  * only for near-black, so dark greys stay visible */
frame_color frame_color_from_256(int idx);       /* xterm palette entry as 0xRRGGBB */

/* For the recorders: the cell's colours with FRAME_DEFAULT resolved (FRAME_DEFAULT_FG/BG),
 * and its text as code points (at most FRAME_MAX_CP: the base, then combining marks; 0 for a
 * blank or a continuation cell; a malformed byte reads as U+FFFD). */
static inline uint32_t frame_fg_rgb(const frame_cell *c) { return c->fg == FRAME_DEFAULT ? FRAME_DEFAULT_FG : c->fg; }
static inline uint32_t frame_bg_rgb(const frame_cell *c) { return c->bg == FRAME_DEFAULT ? FRAME_DEFAULT_BG : c->bg; }
int frame_cell_cps(const frame_cell *c, uint32_t cp[FRAME_MAX_CP]);

/* Debug/test helper: row y as UTF-8 text (continuation cells skipped); returns bytes. */
size_t frame_row_text(const frame *f, int y, char *buf, size_t cap);

#endif
