/*
 * worker: runs a ui_source in its own thread so the UI never waits on compute.
 *
 * The UI thread posts commands (run/pause, one step, restart, new settings); the worker
 * thread calls the source and publishes each snapshot into a mailbox, then writes one byte
 * to a wake-up pipe. The UI polls ui_worker_fd() together with stdin and drains the mailbox
 * with ui_worker_take(). Snapshots are immutable; ownership of each published snapshot
 * (one reference) passes to whoever takes it.
 *
 * Invariants: only the worker thread calls the source's start/step/apply/close (close is
 * called by ui_worker_close after the thread has joined); every shared field is guarded by
 * one mutex; the worker sleeps on a condition variable when it has nothing to do; pause
 * takes effect after the step in flight; restart and close cancel a step in flight when the
 * source has a cancel hook (a cancelled step publishes nothing); while running, no step
 * starts past the horizon the UI set (its playback pace keeps the engine a few steps ahead).
 */
#ifndef UM_UI_WORKER_H
#define UM_UI_WORKER_H

#include "ui_source.h"

typedef struct ui_worker ui_worker;

typedef enum ui_event_kind {
    UI_EV_SNAPSHOT = 0,     /* snap: the next step of the current run */
    UI_EV_RESTARTED,        /* snap: step 0 of a new run; drop the old history */
    UI_EV_APPLIED,          /* settings applied from the next step */
    UI_EV_ERROR,            /* msg: the source failed; the worker pauses */
} ui_event_kind;

typedef struct ui_event {
    ui_event_kind kind;
    um_snapshot  *snap;     /* owned by the taker (one reference), NULL unless a snapshot */
    char          msg[512];
} ui_event;

/* Starts the thread and asks it to start a run with s and prompt (paused or not). */
int  ui_worker_open(ui_worker **out, ui_source *src, const um_settings *s, const char *prompt,
                    bool running, um_err *e);
int  ui_worker_fd(const ui_worker *w);          /* readable when events wait */
void ui_worker_set_running(ui_worker *w, bool running);
void ui_worker_step_once(ui_worker *w);         /* one step, then stay paused */
void ui_worker_restart(ui_worker *w, const um_settings *s, const char *prompt);
void ui_worker_apply(ui_worker *w, const um_settings *s);   /* from the next step */
/* While running, compute no step past `step` (the UI's playback keeps the engine a few steps
 * ahead of what it shows, so a setting changed now applies soon after the shown step);
 * INT32_MAX, the default: no limit. Single steps (ui_worker_step_once) ignore it. */
void ui_worker_set_horizon(ui_worker *w, int32_t step);
bool ui_worker_busy(ui_worker *w);              /* a step or start is in flight */
/* Take the oldest pending event; returns false when none. Drains the wake-up pipe. */
bool ui_worker_take(ui_worker *w, ui_event *ev);
/* Stops the thread (after any step in flight) and frees pending snapshots; the caller
 * closes the source afterwards. */
void ui_worker_close(ui_worker *w);

#endif
