/*
 * frame: the screen as data. A frame is a grid of cells, each holding one grapheme
 * cluster, its width, colours and attributes; it knows nothing about curses or files.
 *
 * The visualizer builds one frame per redraw (ui/view.c: view_build) and hands it to a
 * renderer: ui/draw_curses.c for the terminal; a recorder can turn the same frame into a
 * GIF or an asciicast event (issue 7). Renderers only read frames.
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

#include <stdint.h>
#include "util.h"

#define FRAME_TEXT_MAX 32
#define FRAME_DEFAULT  0xFF000000u     /* "use the terminal's default colour" */

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

/* Fill a rectangle with blanks in style st (clipped to the frame). */
void frame_fill(frame *f, int x, int y, int w, int h, frame_style st);
/* Put one cluster (display text of width 1 or 2) at (x, y); returns the next x.
 * A width-2 cluster that does not fit before `limit` puts a blank instead. */
int  frame_put_cluster(frame *f, int x, int y, int limit, const char *text, int width,
                       frame_style st, int32_t pos);
/* Put a UTF-8 string (shaped: clusters, widths, control characters made visible),
 * clipped at column `limit` (exclusive); returns the next x. */
int  frame_puts(frame *f, int x, int y, int limit, const char *s, frame_style st);
/* Change the style of cells [x, x+w) on row y, keeping their text. */
void frame_restyle(frame *f, int x, int y, int w, frame_style st);

/* Colour helpers shared by every renderer. */
int         frame_color_to_256(frame_color c);   /* nearest xterm-256 index (16..255) */
int         frame_color_to_8(frame_color c);     /* nearest of the 8 ANSI colours (0..7); black
                                                  * only for near-black, so dark greys stay visible */
frame_color frame_color_from_256(int idx);       /* xterm palette entry as 0xRRGGBB */

/* Convert to the recorders' frame (src/record/rec_frame.h): out->cells must hold f->w * f->h
 * cells (out->cols/rows are set). Default colours become fg_default / bg_default, text is
 * decoded to at most REC_MAX_CP code points, italic is dropped (the recorders have none). */
struct rec_frame;
void frame_to_rec(const frame *f, struct rec_frame *out, uint32_t fg_default, uint32_t bg_default);

/* Debug/test helper: row y as UTF-8 text (continuation cells skipped); returns bytes. */
size_t frame_row_text(const frame *f, int y, char *buf, size_t cap);

#endif
