/*
 * rec_frame: the screen model the recorders consume (GIF renderer, asciicast ANSI writer).
 *
 * A frame is a grid of cells, row-major, each holding what the terminal would show there:
 * up to four code points (a base character plus combining marks), a display width, 24-bit
 * foreground and background colours and a few attributes. It is deliberately plain data so
 * the visualizer's own frame (ui/frame.h) converts into it with one loop and no allocation.
 *
 * Conventions the converter must keep:
 *   - ncp == 0 means an empty cell, drawn as a space in the cell's colours.
 *   - A double-width character (CJK, most emoji) sits in its left cell with width 2; the
 *     cell to its right has width 0 (a continuation cell) and its text is ignored. Its
 *     colours should equal the left cell's.
 *   - Every other cell has width 1. A width-2 cell in the last column is drawn as width 1.
 *   - Colours are 0xRRGGBB, already resolved from the theme (no "default colour" value):
 *     the recorders need the real colour to paint pixels. REC_REVERSE is resolved by the
 *     recorders (fg and bg swapped), so a converter may pass it through.
 */
#ifndef UM_REC_FRAME_H
#define UM_REC_FRAME_H

#include <stdint.h>

enum {
    REC_BOLD      = 1 << 0,
    REC_UNDERLINE = 1 << 1,
    REC_DIM       = 1 << 2,      /* GIF: fg blended halfway to bg; ANSI: SGR 2 */
    REC_REVERSE   = 1 << 3,
};

#define REC_MAX_CP 4

typedef struct rec_cell {
    uint32_t cp[REC_MAX_CP];     /* code points, cp[0] the base, then combining marks */
    uint8_t  ncp;                /* 0..REC_MAX_CP used entries of cp */
    uint8_t  width;              /* 1, 2 (wide, leading half) or 0 (continuation) */
    uint8_t  attr;               /* REC_BOLD | REC_UNDERLINE | REC_DIM | REC_REVERSE */
    uint32_t fg, bg;             /* 0xRRGGBB */
} rec_cell;

typedef struct rec_frame {
    int cols, rows;              /* grid size in cells */
    rec_cell *cells;             /* (rows, cols) row-major; not owned by the recorders */
} rec_frame;

static inline rec_cell *rec_at(const rec_frame *f, int row, int col) {
    return &f->cells[(long)row * f->cols + col];
}

#endif
