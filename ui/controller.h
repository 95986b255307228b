/*
 * controller: the interactive visualizer's state and event loop. It opens one source per
 * pane (the engine, or the fake one for --demo-ui), runs a worker thread per pane, keeps
 * every pane's snapshot history, turns keys into actions (ui/keys.c's table), composes a
 * frame per redraw (ui/view.c), paints it (ui/draw_curses.c) and feeds it to the recorders
 * (--gif/--cast for the whole session, the g key's GIF). src/app parses the options and
 * hands them over in ui_ctl_opts; this module decides nothing about flags.
 *
 * ui_ctl_run restores the terminal on every way out, prints what the user must know
 * (standing errors, warnings, failed recordings) on stderr as "unmask: ..." lines, and
 * returns the process exit status (0, 1, or 128 + a graceful signal).
 */
#ifndef UM_UI_CONTROLLER_H
#define UM_UI_CONTROLLER_H

#include <stdbool.h>
#include "engine.h"
#include "theme.h"
#include "view.h"

typedef struct ui_ctl_opts {
    const um_engine_opts *eng;      /* the model to open per pane; NULL: the fake source */
    bool         fake_nocache;      /* fake source: as a backend without partial passes (--gpu) */
    int          fake_delay_ms;     /* fake source: time per step */
    const char  *prompt;
    theme        th;
    int          depth;             /* --color: -1 auto, 0 none, 8, 256, 16777216 */
    view_heat    heat;
    view_layout  layout;
    int          pace_ms;
    bool         paused;            /* start paused */
    const char  *gif, *cast;        /* --gif / --cast paths, NULL when not asked for */
    int          n_panes;           /* 1 + the --compare runs, <= VIEW_MAX_PANES */
    const char  *labels[VIEW_MAX_PANES];     /* "main", then each --compare's flags */
    /* Pane k > 0's engine options when they are not eng's (NULL: eng's): with pane_own[k] its
     * own model (the pane gave -m or -M: a second engine, model and thread pool), else eng's
     * model shared with another chat template. */
    const um_engine_opts *pane_eng[VIEW_MAX_PANES];
    bool         pane_own[VIEW_MAX_PANES];
    /* Fills pane k's settings, given the source's defaults in *s (flags over the preset). */
    void       (*settings)(void *ctx, int pane, um_settings *s);
    void        *settings_ctx;
} ui_ctl_opts;

int ui_ctl_run(const ui_ctl_opts *o);

#endif
