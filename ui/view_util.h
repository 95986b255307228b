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

/* "step 12/48"; for an adaptive schedule (threshold, factor, eb) still running "step 12": the
 * model decides how many steps are left, so there is no total to show. */
void view_step_label(const um_snapshot *s, char *buf, size_t cap);
/* s word-wrapped into columns [x0, lim) from row y, never at or past row ymax: breaks at
 * spaces, a word longer than a line is cut at its edge. Returns the row after the last. */
int view_put_wrapped(frame *f, int x0, int y, int lim, int ymax, const char *s, frame_style st);
/* How many rows view_put_wrapped takes for s in w columns. */
int view_wrap_count(const char *s, int w);
/* One field of a line built by view_fit: its text and how soon it goes (0 stays longest). */
typedef struct view_field {
    const char *text;
    int         prio;
} view_field;
/* Join the fields (in order, "" and NULL skipped) with sep into out, leaving out whole fields,
 * the highest prio first (the later one on ties), until the line is at most w columns wide.
 * Never cuts a field. Returns the line's width. */
int view_fit(const view_field *fl, int n, const char *sep, int w, char *out, size_t cap);
/* s whole when it fits in w columns, else cut after a word with "…" (empty when even the first
 * word does not fit). Returns the width. */
int view_cut_words(const char *s, int w, char *out, size_t cap);

/* s whole when it fits in w columns, else its first w - 1 columns and "…" (for names,
 * which have no words to cut after). Returns the width. */
int view_cut_cols(const char *s, int w, char *out, size_t cap);

#endif
