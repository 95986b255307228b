/*
 * view_util: helpers shared by the view's files (ui/view.c, ui/panels.c) and nothing else.
 */
#ifndef UM_UI_VIEW_UTIL_H
#define UM_UI_VIEW_UTIL_H

#include "view.h"

#define SIDE_W        34            /* right-hand panel width (wide layout) */
#define STRIP_H       9             /* bottom strip height (narrow layout) */
#define PIECE_MAX     256           /* bytes of one token's text kept for display */

static inline frame_style view_role(const view_state *v, theme_role r) { return v->th->role[r]; }
/* The raw bytes of token tok (0 without a source). */
size_t             view_piece(const view_state *v, int32_t tok, char *buf, size_t cap);
/* The snapshot drawn: hist[shown] clamped, NULL without one. */
const um_snapshot *view_shown(const view_state *v);
/* Right-align s on row y ending before column `end`; returns its start column. */
int                view_put_right(frame *f, int y, int end, const char *s, frame_style st);
/* Style of position i (heat, fresh, edited); *ghost is set for live-confidence ghosts. */
frame_style        view_pos_style(const view_state *v, const um_snapshot *s, int32_t i, bool *ghost);
/* Grow a scratch array to `want` elements (elem bytes each). */
int                view_grow(void **p, size_t elem, int32_t *cap, int32_t want, um_err *e);

#endif
