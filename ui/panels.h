/*
 * panels: the view's side panels (ui/view.c places them): the inspector and the schedule.
 */
#ifndef UM_UI_PANELS_H
#define UM_UI_PANELS_H

#include "view.h"

/* The position under the cursor at snapshot s, in the rectangle (x0, y0, w, h). */
void panel_inspector(frame *f, const view_state *v, const um_snapshot *s, int x0, int y0, int w, int h);
/* The schedule: steps as bars, the plan ahead, the parameters; c holds its scratch. */
void panel_schedule(view_ctx *c, frame *f, const view_state *v, const um_snapshot *s, int x0, int y0, int w, int h);

#endif
