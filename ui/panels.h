/*
 * panels: the view's side panels (ui/view.c places them): the inspector and the schedule.
 */
#ifndef UM_UI_PANELS_H
#define UM_UI_PANELS_H

#include "view.h"

/* The position under the cursor at snapshot s, in the rectangle (x0, y0, w, h). */
void panel_inspector(frame *f, const view_state *v, const um_snapshot *s, int x0, int y0, int w, int h);
/* Why position i of s committed, in words with the rule's numbers ("" when masked or a
 * prompt token); the commit step's snapshot (v->hist) supplies the settings then in force. */
void panel_why(const view_state *v, const um_snapshot *s, int32_t i, char *buf, size_t cap);
/* The schedule's parameters in at most w columns, whole fields by priority ("threshold 0.90 ·
 * block 32 · quota 1", "gamma 0.50 · one block", "steps 32 · block 8"). */
void panel_schedule_params(const um_settings *se, int w, char *buf, size_t cap);
/* The schedule: steps as bars, the plan ahead, the parameters; c holds its scratch. */
void panel_schedule(view_ctx *c, frame *f, const view_state *v, const um_snapshot *s, int x0, int y0, int w, int h);

#endif
