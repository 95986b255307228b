/*
 * frame_cells: a test helper making frame cells (src/record/frame.h) from one code point,
 * for the recorder tests that build frames by hand.
 */
#ifndef UM_TEST_FRAME_CELLS_H
#define UM_TEST_FRAME_CELLS_H

#include <stdint.h>
#include "frame.h"

/* A width-1 cell showing cp (0: a blank) in fg on bg with FRAME_* attrs. */
static inline frame_cell tc_cell(uint32_t cp, uint32_t fg, uint32_t bg, uint8_t attrs) {
    frame_cell c = { .text = " ", .width = 1, .attrs = attrs, .fg = fg, .bg = bg, .pos = -1 };
    char *t = c.text;
    if (cp == 0) return c;
    if (cp < 0x80) { t[0] = (char)cp; t[1] = 0; }
    else if (cp < 0x800) { t[0] = (char)(0xC0 | cp >> 6); t[1] = (char)(0x80 | (cp & 63)); t[2] = 0; }
    else if (cp < 0x10000) { t[0] = (char)(0xE0 | cp >> 12); t[1] = (char)(0x80 | (cp >> 6 & 63)); t[2] = (char)(0x80 | (cp & 63)); t[3] = 0; }
    else { t[0] = (char)(0xF0 | cp >> 18); t[1] = (char)(0x80 | (cp >> 12 & 63)); t[2] = (char)(0x80 | (cp >> 6 & 63)); t[3] = (char)(0x80 | (cp & 63)); t[4] = 0; }
    return c;
}

/* The code point a cell shows (' ' for a blank). */
static inline uint32_t tc_cp(const frame_cell *c) {
    uint32_t cp[FRAME_MAX_CP];
    return frame_cell_cps(c, cp) ? cp[0] : ' ';
}

#endif
