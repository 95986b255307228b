/*
 * ctl_state: the controller's state, shared by its files and nothing else: ui/ctl_state.c
 * (helpers all of them use), ui/controller.c (history, drawing, the loop, ui_ctl_run),
 * ui/ctl_keys.c (the key actions, the prompt editor) and ui/ctl_record.c (the --gif/--cast
 * recorder and the g key's GIF). Calls go one way: controller -> keys -> record -> state.
 *
 * State invariants: hist holds every snapshot of the current run in step order (hist[k]
 * is step k), each with one reference owned here; shown indexes hist; `follow` means the
 * view moves towards the newest snapshot by itself, at the pace (ui/pace.h): while running,
 * shown advances at most one step per pace interval, or as soon as a step exists when the
 * engine is slower than the pace; the worker computes up to UI_PACE_LEAD steps ahead of
 * shown (its horizon, set before every wait, so a setting changed now applies soon after
 * the step on screen). While paused the view stays where it is; a step asked for with n
 * shows as it arrives. Scrubbing, jumps and n are never paced. The pace is part of this
 * playback state, not of the worker or the engine.
 */
#ifndef UM_UI_CTL_STATE_H
#define UM_UI_CTL_STATE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "controller.h"
#include "keys.h"
#include "pace.h"
#include "recorder.h"
#include "view.h"
#include "worker.h"

#define CTL_MESSAGE_SECONDS 4.0
#define CTL_PROMPT_MAX      4096

typedef struct ctl_pane {          /* one run: the main one (pn[0]) or a --compare */
    ui_source     src;
    ui_worker    *worker;
    um_snapshot **hist;            /* (n_hist) this run's snapshots, hist[k] is step k */
    int32_t       n_hist, cap_hist;
    um_settings   settings;        /* what the next start/apply uses */
    char          label[160];      /* the settings as given: "main" or the --compare FLAGS */
    char          error[512];      /* the source's standing error, "" when the run is fine */
} ctl_pane;

/* Engine warnings (um_engine_opts.warn: a run past the model's trained context that --ctx
 * allows) arrive on a worker thread during a start: kept here, shown when the UI takes
 * the start's snapshot, and printed on stderr once the terminal is restored. */
typedef struct ctl_warning {
    pthread_mutex_t lock;
    char            msg[512];
    bool            fresh;         /* not yet shown on screen */
} ctl_warning;

typedef struct ctl {
    ctl_pane      pn[VIEW_MAX_PANES];
    int           n_panes, focus;  /* focus: the pane the inspector and settings keys act on */
    int32_t       shown;           /* the common step shown (each pane: min(shown, its newest)) */
    bool          follow;
    ui_pace       pace;            /* how fast shown follows the newest step */
    char         *prompt;          /* owned, any length */
    theme         th;
    int           theme_idx;
    int           depth;
    view_heat     heat;
    view_layout   layout;
    int32_t       cursor;
    bool          paused, help, editing, quit;
    int           help_page;       /* the help's page (space turns it) */
    bool          hide_inspector, hide_schedule;   /* i, p */
    char         *edit;            /* (edit_cap) the prompt editor's line */
    size_t        edit_cap;
    char          message[512];
    double        message_until;
    frame         fr;
    view_ctx      vc;
    ctl_warning   warn;
    recorder     *rec_cli;         /* --gif / --cast, NULL when not recording */
    char          rec_cli_lost[512];   /* why rec_cli stopped midway ("" if it did not): exit 1 */
    recorder     *rec_key;         /* the g key's GIF, NULL when not recording */
    char          rec_key_path[64];
    char          rec_title[128];  /* cast header title: "unmask: PROMPT" */
    int32_t       rec_step;        /* step of the last recorded frame (cast markers) */
} ctl;

/* ctl_state.c */
void    ctl_say(ctl *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int32_t ctl_newest(const ctl *a);  /* the newest step every pane can show, -1 for none */
void    ctl_set_running_all(ctl *a, bool running);
void    ctl_step_once_all(ctl *a);
void    ctl_restart_all(ctl *a);

/* ctl_keys.c */
void    ctl_read_keys(ctl *a);     /* every key waiting, without blocking */

/* ctl_record.c */
int     ctl_rec_cli_open(ctl *a, const char *gif, const char *cast, um_err *e);
int     ctl_rec_cli_close(ctl *a);          /* after the terminal is restored; 1 on a failure */
void    ctl_rec_key_toggle(ctl *a);         /* g */
void    ctl_rec_key_stop(ctl *a, bool show);
void    ctl_rec_feed(ctl *a);               /* the composed frame a->fr to the recorders */

#endif
