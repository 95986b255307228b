/*
 * draw_curses: the terminal renderer. Owns curses: only the UI thread calls these.
 *
 * draw_curses_open starts curses (alternate screen, raw keys, mouse clicks, hidden cursor)
 * and decides the colour depth: 24-bit when the terminfo entry has direct colour (e.g.
 * TERM=xterm-direct), else the nearest of 256, else 8 colours; none when NO_COLOR is set
 * (non-empty) or the terminal has no colours. It registers a src/base/sigexit.h hook so crash
 * signals restore the terminal before the process dies; graceful signals (SIGINT, SIGTERM,
 * SIGQUIT, ...) are the caller's: it installs sigexit first and leaves its loop on
 * sigexit_caught(), then calls draw_curses_close.
 *
 * draw_curses_frame paints a frame (src/record/frame.h) cell by cell; curses sends only what
 * changed. draw_curses_close restores the terminal; it is idempotent and also runs at exit.
 */
#ifndef UM_DRAW_CURSES_H
#define UM_DRAW_CURSES_H

#include <stdbool.h>
#include "frame.h"

/* want_depth: -1 auto, else 0, 8, 256 or 16777216 (capped to what the terminal has). */
int  draw_curses_open(int want_depth, int *depth, um_err *e);
void draw_curses_size(int *w, int *h);
void draw_curses_frame(const frame *f);
void draw_curses_reset_colors(void);    /* forget colour pairs (after a theme change) */
void draw_curses_close(void);

#endif
