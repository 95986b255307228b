/*
 * grid9: where a sudoku lies on the canvas, for the view's grid layout (view.h,
 * VIEW_LAYOUT_GRID9), and which committed digits break a rule. Pure: it reads one snapshot
 * and the source's token text, and keeps nothing.
 *
 * The rule (docs/ui.md, "The grid layout"):
 *   answer    the first 81 generated positions, row-major: a model trained on
 *             [prompt][answer] writes the answer right after the prompt, and the positions
 *             after the 81 (end-of-text padding of a longer --gen) are not cells. Which
 *             positions are cells never depends on what they hold, so a cell stays put while
 *             the run fills it. Fewer than 81 generated positions: no grid.
 *   puzzle    the last run of 81 consecutive prompt positions whose tokens are each one cell
 *             character ('1'-'9', '.' or '0' for a blank); none (the prompt is not a puzzle,
 *             e.g. the demo's words) leaves the puzzle unknown: no givens to check against.
 *             Markers before it (the sudoku model's <|r1c1|>..<|r9c9|>, from its own
 *             template) are several bytes each, so no cell characters.
 *   digit     a committed position holds digit d when its token's text, spaces trimmed, is
 *             exactly the one character '1'..'9'; a mask, a word or a special token holds none.
 *   conflict  an answer cell holding digit d where the puzzle gives another digit in that
 *             cell, or where d is given or held by another answer cell in its row, column or
 *             box. Both cells of a clash are marked; givens themselves never are.
 *
 * Geometry of one drawn grid, GRID9_W x GRID9_H cells, box lines between boxes:
 *      " d d d │ d d d │ d d d "      cell (r, c) at column grid9_col(c), row grid9_row(r)
 *      "───────┼───────┼───────"      after grid rows 3 and 6 (rows 3 and 7 of the drawing)
 */
#ifndef UM_UI_GRID9_H
#define UM_UI_GRID9_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sudoku.h"
#include "ui_source.h"

#define GRID9_W 23              /* columns of one drawn grid */
#define GRID9_H 11              /* rows of one drawn grid */
#define GRID9_BOX_COL1 7        /* the box lines' columns... */
#define GRID9_BOX_COL2 15
#define GRID9_BOX_ROW1 3        /* ...and rows inside the drawing */
#define GRID9_BOX_ROW2 7

typedef struct grid9 {
    int32_t answer0;                    /* canvas position of answer cell (0,0); -1: no grid */
    int32_t puzzle0;                    /* canvas position of puzzle cell (0,0); -1: none */
    uint8_t given[SUDOKU_CELLS];        /* the puzzle's digits, 0 blank (all 0 without a puzzle) */
    uint8_t digit[SUDOKU_CELLS];        /* the answer's committed digits, 0 for none */
    bool    conflict[SUDOKU_CELLS];     /* answer cells that break a rule (above) */
    int     n_conflicts;
} grid9;

/* Find the answer and the puzzle in s and mark the conflicts. src may be NULL or lack
 * piece (then no position holds a digit). Returns true when there is an answer grid. */
bool grid9_scan(const ui_source *src, const um_snapshot *s, grid9 *g);

/* The grid's verdict in words: "3 conflicts", "solved" (every answer cell holds a digit and
 * none breaks a rule), else "12 to fill" (cells without a digit yet). */
void grid9_verdict(const grid9 *g, char *buf, size_t cap);

static inline int grid9_col(int c) { return 8 * (c / 3) + 1 + 2 * (c % 3); }
static inline int grid9_row(int r) { return r + r / 3; }

#endif
