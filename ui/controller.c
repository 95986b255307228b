/*
 * controller: the visualizer's pane history, drawing and event loop (see controller.h;
 * the state and its invariants are in ctl_state.h).
 *
 * Threads: this file runs on the UI thread only; compute happens in ui/worker.c. The loop
 * poll()s stdin and the worker's wake-up pipe, drains whatever is ready, then composes one
 * frame (ui/view.c) and paints it (ui/draw_curses.c). It never waits on compute: a key is
 * handled as soon as poll returns, whatever the worker is doing.
 *
 * Ways out: q, a loop error, and every graceful signal of src/base/sigexit.h (INT, TERM,
 * HUP, QUIT, USR1, ALRM, ...; the loop polls its wake-up fd). Recordings are finished after
 * the terminal is restored on each of them; crash signals restore the terminal through
 * draw_curses's hook and remove the temporary files.
 *
 * Engine errors: a start or step the source rejects (a prompt or generation past the
 * context, a bad schedule setting) is kept in the pane's `error` until a run starts again;
 * the screen shows it, every settings change restarts while it stands, and quitting with it
 * standing prints it as `unmask: MESSAGE` on stderr and exits 1, as `unmask generate` does.
 */
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <curses.h>

#include "ctl_state.h"
#include "draw_curses.h"
#include "fake_source.h"
#include "sigexit.h"

/* ------------------------------------------------------------------ messages, history */


/* um_engine_opts.warn, on a worker thread (see ctl_warning). */
static void keep_warning(void *ctx, const char *msg) {
    ctl_warning *w = ctx;
    pthread_mutex_lock(&w->lock);
    snprintf(w->msg, sizeof w->msg, "%s", msg);
    w->fresh = true;
    pthread_mutex_unlock(&w->lock);
}

static void show_warning(ctl *a) {
    pthread_mutex_lock(&a->warn.lock);
    if (a->warn.fresh) ctl_say(a, "warning: %s", a->warn.msg);
    a->warn.fresh = false;
    pthread_mutex_unlock(&a->warn.lock);
}

static void hist_clear(ctl_pane *p) {
    for (int32_t i = 0; i < p->n_hist; i++) p->src.release(p->hist[i]);
    p->n_hist = 0;
}

static int hist_push(ctl *a, ctl_pane *p, um_snapshot *s) {
    if (p->n_hist == p->cap_hist) {
        int32_t cap = p->cap_hist ? p->cap_hist * 2 : 64;
        um_snapshot **h = realloc(p->hist, (size_t)cap * sizeof *h);
        if (!h) { p->src.release(s); ctl_say(a, "out of memory: snapshot dropped"); return UM_FAIL; }
        p->hist = h;
        p->cap_hist = cap;
    }
    p->hist[p->n_hist++] = s;
    return UM_OK;
}


/* Following while running: move shown towards the newest step at the pace. */
static void pace_tick(ctl *a) {
    int32_t last = ctl_newest(a);
    if (a->follow && !a->paused && last >= 0)
        a->shown = ui_pace_advance(&a->pace, UM_MIN(a->shown, last), last, um_now());
}

static void drain_pane(ctl *a, ctl_pane *p) {
    ui_event ev;
    while (ui_worker_take(p->worker, &ev)) {
        switch (ev.kind) {
        case UI_EV_RESTARTED:
            show_warning(a);
            if (p->error[0]) {                      /* the failed run had stopped the worker */
                p->error[0] = 0;
                ui_worker_set_running(p->worker, !a->paused);
            }
            hist_clear(p);
            a->shown = 0;
            a->follow = true;
            hist_push(a, p, ev.snap);
            ui_pace_mark(&a->pace, um_now());
            break;
        case UI_EV_SNAPSHOT:
            hist_push(a, p, ev.snap);
            break;
        case UI_EV_APPLIED:
            break;
        case UI_EV_ERROR:                           /* a failed start or step stops the worker */
            snprintf(p->error, sizeof p->error, "%s", ev.msg[0] ? ev.msg : "the engine failed");
            a->message_until = 0;                   /* the error replaces any message */
            break;
        }
    }
}

static void drain_worker(ctl *a) {
    int32_t before = ctl_newest(a);
    for (int k = 0; k < a->n_panes; k++) drain_pane(a, &a->pn[k]);
    int32_t after = ctl_newest(a);
    /* paused at the newest step (n asked for the next one): show it as soon as every pane
     * has it; while running the pace moves the view (pace_tick) */
    if (a->follow && a->paused && before >= 0 && a->shown == before && after > before) {
        a->shown = before + 1;
        ui_pace_mark(&a->pace, um_now());
    }
}

/* The first standing error of the panes, NULL for none. */
static const char *any_error(const ctl *a) {
    for (int k = 0; k < a->n_panes; k++)
        if (a->pn[k].error[0]) return a->pn[k].error;
    return NULL;
}




/* ------------------------------------------------------------------ drawing */

static int redraw(ctl *a, um_err *e) {
    int w, h;
    draw_curses_size(&w, &h);
    if (w != a->fr.w || h != a->fr.h || !a->fr.cells) {
        frame_free(&a->fr);
        if (frame_init(&a->fr, UM_MAX(1, w), UM_MAX(1, h), e)) return UM_FAIL;
        clearok(curscr, TRUE);
    }
    view_pane panes[VIEW_MAX_PANES];
    bool busy = false;
    for (int k = 0; k < a->n_panes; k++) {
        const ctl_pane *p = &a->pn[k];
        panes[k] = (view_pane){ .hist = p->hist, .n_hist = p->n_hist, .label = p->label, .src = &p->src,
                                .error = p->error[0] ? p->error : NULL };
        busy |= ui_worker_busy(p->worker);
    }
    const ctl_pane *fp = &a->pn[a->focus];
    view_state v = {
        .src = &fp->src, .hist = fp->hist, .n_hist = fp->n_hist, .shown = UM_MIN(a->shown, fp->n_hist - 1), .th = &a->th,
        .depth = a->depth, .heat = a->heat, .layout = a->layout, .cursor = a->cursor, .paused = a->paused,
        .busy = a->paused && busy, .help = a->help, .help_page = a->help_page,
        .hide_inspector = a->hide_inspector, .hide_schedule = a->hide_schedule,
        .message = um_now() < a->message_until ? a->message : NULL,
        .edit = a->editing ? a->edit : NULL, .recording = a->rec_cli || a->rec_key,
        .error = fp->error[0] ? fp->error : a->n_panes > 1 ? NULL : any_error(a), .following = a->follow,
        .pace_ms = a->pace.ms, .panes = panes, .n_panes = a->n_panes, .focus_pane = a->focus, .pane_step = a->shown,
    };
    if (view_build(&a->vc, &a->fr, &v, e)) return UM_FAIL;
    draw_curses_frame(&a->fr);
    if (a->rec_cli || a->rec_key) {                 /* the recordings: no REC, no "recording ..." */
        if (a->rec_fr.w != a->fr.w || a->rec_fr.h != a->fr.h) {
            frame_free(&a->rec_fr);
            if (frame_init(&a->rec_fr, a->fr.w, a->fr.h, e)) return UM_FAIL;
        }
        v.recording = false;
        if (a->message_rec) v.message = NULL;
        if (view_build(&a->vc, &a->rec_fr, &v, e)) return UM_FAIL;
        ctl_rec_feed(a);
    }
    return UM_OK;
}

static int run_loop(ctl *a, um_err *e) {
    struct pollfd fds[2 + VIEW_MAX_PANES] = { { STDIN_FILENO, POLLIN, 0 }, { sigexit_fd(), POLLIN, 0 } };
    for (int k = 0; k < a->n_panes; k++) fds[2 + k] = (struct pollfd){ ui_worker_fd(a->pn[k].worker), POLLIN, 0 };
    while (!a->quit && !sigexit_caught()) {
        pace_tick(a);
        if (redraw(a, e)) return UM_FAIL;
        int timeout = -1;
        if (a->message_until > 0) {
            double left = a->message_until - um_now();
            timeout = left > 0 ? (int)(left * 1000) + 10 : -1;
            if (left <= 0) a->message_until = 0;
        }
        if (a->paused && timeout < 0) timeout = 250;    /* "finishing step" turns into PAUSED */
        if (a->follow && !a->paused && ctl_newest(a) >= 0) {   /* the next paced step */
            int due = ui_pace_wait_ms(&a->pace, UM_MIN(a->shown, ctl_newest(a)), ctl_newest(a), um_now());
            if (due >= 0 && (timeout < 0 || due < timeout)) timeout = due;
        }
        for (int k = 0; k < a->n_panes; k++) ui_worker_set_horizon(a->pn[k].worker, ui_pace_horizon(&a->pace, a->shown));
        int r = poll(fds, (nfds_t)(2 + a->n_panes), timeout);
        if (r < 0 && errno != EINTR) return um_errf(e, "poll: %s", strerror(errno));
        if (r > 0) drain_worker(a);
        /* keys are read without blocking on every wake-up: a SIGWINCH interrupts poll and
         * curses reports the new size only through get_wch (KEY_RESIZE) */
        ctl_read_keys(a);
        if (r > 0 && (fds[0].revents & (POLLHUP | POLLERR | POLLNVAL))) a->quit = true;
    }
    return UM_OK;
}

/* ------------------------------------------------------------------ the run */

/* Open one source per pane: the first engine loads the model, the others share it (one set
 * of repacked weights, one thread pool; docs/ui.md "Compare"), each with its own canvas;
 * a pane that named its own model (pane_own) loads that one, with its own pool. */
static int open_sources(ctl *a, const ui_ctl_opts *o, um_err *e) {
    um_engine_opts eng = { 0 };
    if (o->eng) eng = *o->eng;
    eng.warn = keep_warning;
    eng.view_ahead = true;                          /* the inspector shows every mask's candidates */
    eng.warn_ctx = &a->warn;
    for (int k = 0; k < o->n_panes; k++) {
        ctl_pane *p = &a->pn[k];
        um_engine_opts pe = eng;                    /* this pane's: the chat template, its own model */
        if (k > 0 && o->pane_eng[k]) {
            pe = *o->pane_eng[k];
            pe.warn = eng.warn;
            pe.warn_ctx = eng.warn_ctx;
            pe.view_ahead = true;
            pe.progress = o->pane_own[k] && o->eng ? o->eng->progress : NULL;   /* another model: its load too */
            pe.progress_ctx = o->eng ? o->eng->progress_ctx : NULL;
        }
        int orc = o->eng ? (k == 0 || o->pane_own[k] ? engine_source_open(&p->src, &pe, e)
                                                     : engine_source_open_sharing(&p->src, &a->pn[0].src, &pe, e))
                : o->fake_nocache ? fake_source_open_nocache(&p->src, o->fake_delay_ms, e)
                : fake_source_open(&p->src, o->fake_delay_ms, e);
        if (orc) return UM_FAIL;
        a->n_panes = k + 1;
        p->settings = p->src.defaults;
        if (o->settings) o->settings(o->settings_ctx, k, &p->settings);
        snprintf(p->label, sizeof p->label, "%s", o->labels[k] ? o->labels[k] : "main");
        eng.progress = NULL;                        /* the load is reported once */
    }
    return UM_OK;
}

/* After the terminal is restored: what the user must know, and the exit status. */
static int report(ctl *a, int rc, const um_err *e) {
    pthread_mutex_lock(&a->warn.lock);
    if (a->warn.msg[0]) fprintf(stderr, "unmask: warning: %s\n", a->warn.msg);
    pthread_mutex_unlock(&a->warn.lock);
    if (rc) fprintf(stderr, "unmask: %s\n", e->msg);
    if (a->rec_key) {
        ctl_rec_key_stop(a, false);
        fprintf(stderr, "unmask: %s\n", a->message);
    }
    if (ctl_rec_cli_close(a) && !rc) rc = 1;
    drain_worker(a);                                /* an error that arrived with the quit */
    for (int k = 0; k < a->n_panes; k++)            /* last: the lines that explain the status */
        if (a->pn[k].error[0]) {
            if (a->n_panes > 1) fprintf(stderr, "unmask: pane %d (%s): %s\n", k + 1, a->pn[k].label, a->pn[k].error);
            else fprintf(stderr, "unmask: %s\n", a->pn[k].error);
            rc = 1;
        }
    if (sigexit_caught()) rc = 128 + sigexit_caught();
    return rc;
}

int ui_ctl_run(const ui_ctl_opts *o) {
    ctl *a = um_calloc(1, sizeof *a);
    um_err e = { "" };
    int rc = 1, n_workers = 0;
    if (!a) { fprintf(stderr, "unmask: out of memory\n"); return 1; }
    pthread_mutex_init(&a->warn.lock, NULL);
    a->cursor = -1;
    a->follow = true;
    ui_pace_init(&a->pace, o->pace_ms, um_now());
    a->rec_step = -1;
    a->heat = o->heat;
    a->layout = o->layout;
    a->prompt = strdup(o->prompt);
    if (!a->prompt) { fprintf(stderr, "unmask: out of memory\n"); goto out; }
    a->th = o->th;
    for (int i = 0; i < theme_cycle_len; i++)
        if (!strcmp(theme_cycle[i], a->th.name)) a->theme_idx = i;
    if (open_sources(a, o, &e)) { fprintf(stderr, "unmask: %s\n", e.msg); goto close_sources; }

    /* graceful signals end the loop from here on (before curses, which keeps them) */
    if (sigexit_install(SIGEXIT_FLAG, &e)) { fprintf(stderr, "unmask: %s\n", e.msg); goto close_src; }
    if (draw_curses_open(o->depth, &a->depth, &e)) { fprintf(stderr, "unmask: %s\n", e.msg); goto close_src; }
    int w, h;                                       /* the size is known once curses runs */
    draw_curses_size(&w, &h);
    if (frame_init(&a->fr, UM_MAX(1, w), UM_MAX(1, h), &e) || ctl_rec_cli_open(a, o->gif, o->cast, &e)) {
        draw_curses_close();
        fprintf(stderr, "unmask: %s\n", e.msg);
        goto close_src;
    }
    a->paused = o->paused;
    for (; n_workers < a->n_panes; n_workers++) {
        ctl_pane *p = &a->pn[n_workers];
        if (ui_worker_open(&p->worker, &p->src, &p->settings, a->prompt, !o->paused, &e)) {
            draw_curses_close();
            fprintf(stderr, "unmask: %s\n", e.msg);
            goto close_workers;
        }
    }
    rc = run_loop(a, &e) == UM_OK ? 0 : 1;
    draw_curses_close();                            /* terminal first: the worker may be mid-step */
    rc = report(a, rc, &e);
close_workers:
    for (int k = 0; k < n_workers; k++) {
        ui_worker_close(a->pn[k].worker);
        hist_clear(&a->pn[k]);
    }
close_src:
    sigexit_uninstall();
close_sources:
    for (int k = 0; k < a->n_panes; k++) a->pn[k].src.close(a->pn[k].src.self);
out:
    free(a->prompt);
    free(a->edit);
    for (int k = 0; k < a->n_panes; k++) free(a->pn[k].hist);
    frame_free(&a->fr);
    frame_free(&a->rec_fr);
    view_ctx_free(&a->vc);
    pthread_mutex_destroy(&a->warn.lock);
    free(a);
    return rc;
}
