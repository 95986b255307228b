/*
 * view: composes the whole screen into a frame (src/record/frame.h) from the visualizer's state,
 * in one pass per redraw. No curses here, so a recorder (GIF, asciicast) can build the
 * very same frames from recorded snapshots.
 *
 * Layout (w x h cells):
 *   row 0            header: model, architecture, quant, backend and ISA, threads, and
 *                    right-aligned the shown step's K/V cache (mode/storage, refresh rule,
 *                    bytes held; "cache off"), which is never cut for a long model name
 *   rows 1..h-3      canvas (the layout: prompt dimmed, then the generated region, wrapped;
 *                    or, in the grid9 layout, the puzzle and the answer as 9x9 sudoku grids,
 *                    see grid9.h, back to text with a note when the canvas has no 81
 *                    generated positions or the grids do not fit) and the
 *                    panels: inspector and schedule (recorded steps as bars, the plan
 *                    ahead from schedule.h as shaded columns) on the right when w >= 96,
 *                    else in a strip under the canvas
 *   row h-2          legend (what the heat colours mean)
 *   row h-1          status line (step, block, masks, rows computed by the step's forward
 *                    passes out of the canvas's, "refresh" when they refilled the cache, ...),
 *                    with transient messages (setting changes) right-aligned
 *                    before the playback pace and the RUNNING/PAUSED badge; while the source's error stands, the
 *                    error itself and an ERROR badge (and, with no snapshot to draw, the
 *                    error wrapped over the body instead of "starting...")
 * Below VIEW_MIN_W x VIEW_MIN_H the frame holds only a "terminal too small" message.
 *
 * Comparison (n_panes > 1, `--compare`): the canvas area holds one pane per run, side by side
 * when each gets VIEW_PANE_MIN_W columns, else stacked when each gets VIEW_PANE_MIN_H rows,
 * else a "too small for N panes" message. A pane is a header line (its label, step counter,
 * masks left, forward passes and, after the first pane, how many positions differ from the
 * first pane's), a summary line once its shown snapshot is done (summary.h), and its
 * canvas; positions whose token differs from the first pane's are marked in the
 * theme's diff role. Every pane shows step min(pane_step, its newest); hist/n_hist/shown hold the
 * focused pane (the inspector, the schedule and the status line follow it).
 *
 * To render a recorded run without the interactive UI: fill a view_state with the
 * snapshots (hist), shown = the index to draw, a theme (theme_builtin or theme_load),
 * depth 256, and call view_build once per snapshot.
 */
#ifndef UM_UI_VIEW_H
#define UM_UI_VIEW_H

#include "frame.h"
#include "text.h"
#include "theme.h"
#include "ui_source.h"

#define VIEW_MIN_W 60
#define VIEW_MIN_H 16
#define VIEW_SIDE_MIN_W 96      /* from this width the panels sit right of the canvas */
#define VIEW_PANE_MIN_W 30      /* a comparison pane side by side: at least these columns */
#define VIEW_PANE_MIN_H 4       /* a stacked pane: header, summary and two canvas rows */
#define VIEW_MAX_PANES  4

typedef enum view_heat {
    VIEW_HEAT_COMMIT = 0,       /* probability of the token when it was committed */
    VIEW_HEAT_LIVE,             /* current top-1 probability; masks show it as ghost text */
    VIEW_HEAT_ORDER,            /* step at which the token was committed */
    VIEW_HEAT_ENTROPY,          /* entropy of the position's distribution (low = bright) */
    VIEW_HEAT_CACHE,            /* K/V recomputed at the step (bright) or served stale from the cache */
    VIEW_HEAT_COUNT
} view_heat;

/* The heat modes' names and --heat values: ui_heat_names, ui_heat_keys (heat.h). */

typedef enum view_layout {
    VIEW_LAYOUT_TEXT = 0,       /* the canvas as wrapped text */
    VIEW_LAYOUT_GRID9,          /* a 9x9 sudoku: the puzzle and the answer as grids (grid9.h) */
    VIEW_LAYOUT_COUNT
} view_layout;

/* The layout names: --layout values and models.conf's `layout` key. */
extern const char *const view_layout_keys[VIEW_LAYOUT_COUNT];

typedef struct view_pane {         /* one run of a comparison */
    um_snapshot *const *hist;       /* (n_hist) its snapshots, hist[k] is step k */
    int32_t             n_hist;
    const char         *label;      /* its settings as given, e.g. "--seed 7" */
    const char         *error;      /* its source's standing error, NULL for none */
    const ui_source    *src;        /* its source (token text), NULL: the view's; a --compare pane
                                       with its own model (-m, -M) has another */
} view_pane;

typedef struct view_state {
    const ui_source    *src;        /* info (header) and piece() (token text) */
    um_snapshot *const *hist;       /* (n_hist) recorded snapshots of this run, oldest first */
    int32_t             n_hist;
    int32_t             shown;      /* index into hist of the snapshot drawn */
    const theme        *th;
    int                 depth;      /* colours available: 16777216, 256, 8 or 0 (NO_COLOR) */
    view_heat           heat;
    view_layout         layout;     /* text, or the 9x9 grids (back to text with a note when impossible) */
    int32_t             cursor;     /* canvas position under the inspector; -1: follow activity */
    bool                paused;     /* the user paused (else running) */
    bool                busy;       /* a step is being computed */
    bool                help;       /* help overlay shown */
    int                 help_page;  /* its page (wraps around) when the keys take more than one */
    bool                hide_inspector, hide_schedule;   /* the i and p keys: give the canvas the room */
    const char         *message;    /* transient message, NULL for none */
    const char         *edit;       /* the prompt being edited, NULL when not editing */
    bool                recording;  /* a recording is running: REC in the status line */
    const char         *error;      /* the source rejected the run (standing), NULL for none */
    bool                following;  /* the view follows the newest step at the pace: a shown
                                       step behind the newest is playback, not a rewind */
    int32_t             pace_ms;    /* the playback pace in the status line; < 0: not shown */
    const view_pane    *panes;      /* (n_panes) a comparison when n_panes > 1, else unused */
    int                 n_panes;
    int                 focus_pane; /* the pane hist/n_hist show and the cursor lives in */
    int32_t             pane_step;  /* the step every pane shows (its newest when it has fewer) */
    const um_snapshot  *diff_ref;   /* internal: the first pane's snapshot, marks differences */
    const ui_source    *diff_src;   /* internal: its source; when not src, tokens compare by text */
} view_state;

typedef struct view_ctx {           /* scratch reused between frames */
    ui_text   text;
    ui_run   *runs;                 /* (runs_cap) */
    int32_t   runs_cap;
    char     *bytes;                /* (bytes_cap) piece bytes of the shown snapshot */
    size_t    bytes_cap;
    int32_t  *place;                /* (3 * place_cap): line, x, width per cluster */
    int32_t   place_cap;
    bool     *sim_masked;           /* (sim_cap) schedule panel: masks of the plan ahead */
    int32_t   sim_cap;
    int32_t  *future;               /* (future_cap) planned counts of the steps not yet run */
    int32_t   future_cap;
    int32_t  *rank;                 /* (rank_cap) ui_summary_of scratch */
    int32_t   rank_cap;
} view_ctx;

int     view_build(view_ctx *c, frame *f, const view_state *v, um_err *e);
void    view_ctx_free(view_ctx *c);

/* The position the inspector shows: v->cursor, or the first masked position (the action),
 * or the last position when nothing is masked. -1 when there is no snapshot. */
int32_t view_focus(const view_state *v);
/* Visible label of a token's raw bytes for panels: space as U+2423, newline U+21B5, tab
 * U+2192, invalid bytes as <XX>; cut to fit cap. */
void    view_piece_label(const char *bytes, size_t len, char *out, size_t cap);

#endif
