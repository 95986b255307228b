/*
 * pace: the playback clock of the visualizer. The engine may compute steps faster than a
 * person can watch them; the view then follows the newest step at a pace: at most one new
 * step shown per pace interval. When the engine is slower than the pace, a step is shown
 * as soon as it exists (the interval since the last shown step has already passed).
 *
 * The clock belongs to the playback state (which step is shown), not to an engine or a
 * worker: it only sees indexes (the step shown and the newest step available), so several
 * runs shown side by side can share one clock and move in lock step. Times are passed in
 * (seconds, um_now()), which keeps the rules testable without waiting.
 *
 * Only following live is paced; scrubbing, jumps and single steps move the view at once
 * and call ui_pace_mark so the paced steps after them keep their interval.
 */
#ifndef UM_UI_PACE_H
#define UM_UI_PACE_H

#include <stddef.h>
#include <stdint.h>

#define UI_PACE_DEFAULT_MS 120      /* 48 steps in about 6 s */
#define UI_PACE_MAX_MS     60000
#define UI_PACE_MIN_MS     15       /* halving below this gives 0; doubling 0 gives this */
#define UI_PACE_LEAD       2        /* steps the engine may compute ahead of the shown one */

typedef struct ui_pace {
    int32_t ms;                     /* least time between two steps shown while following; 0: none */
    double  shown_at;               /* seconds: when the view last moved to another step */
} ui_pace;

void    ui_pace_init(ui_pace *p, int32_t ms, double now);
/* The view moved to another step now (a key, a restart): the next paced step waits a whole
 * interval from here. */
void    ui_pace_mark(ui_pace *p, double now);
/* Following live from step index shown towards newest: the index to show now. newest at once
 * when ms is 0; else shown + 1 when ms have passed since the view last moved (marked), else
 * shown. Marks the clock when the view moves. */
int32_t ui_pace_advance(ui_pace *p, int32_t shown, int32_t newest, double now);
/* Milliseconds until ui_pace_advance moves the view (0: now), or -1 when shown is already the
 * newest step (the next move waits for the engine, not the clock). */
int     ui_pace_wait_ms(const ui_pace *p, int32_t shown, int32_t newest, double now);
/* The last step the engine should compute while the view shows step `shown`: UI_PACE_LEAD
 * ahead, so the next steps are ready when due and a setting changed now applies soon after
 * what is on screen; unlimited (INT32_MAX) with pace 0. */
int32_t ui_pace_horizon(const ui_pace *p, int32_t shown);
/* The < and > keys: half and double the pace, clamped to 0 .. UI_PACE_MAX_MS. */
int32_t ui_pace_halve(int32_t ms);
int32_t ui_pace_double(int32_t ms);
/* "pace 120 ms", "pace off" (0) for the status line. */
void    ui_pace_label(int32_t ms, char *buf, size_t cap);

#endif
