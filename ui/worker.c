/*
 * worker: the compute thread behind the visualizer (see worker.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sigexit.h"
#include "worker.h"

#define QUEUE_CAP 1024              /* events; the UI drains far faster than steps arrive */

struct ui_worker {
    ui_source      *src;
    pthread_t       thread;
    pthread_mutex_t mu;
    pthread_cond_t  cv;
    int             pipe_rd, pipe_wr;
    /* guarded by mu */
    bool            quit, running, busy, done;
    bool            cancelled;              /* the step in flight was cancelled on purpose */
    int             step_requests;          /* single steps asked for while paused */
    bool            restart_pending, apply_pending;
    int32_t         newest;                 /* step of the last snapshot published */
    int32_t         horizon;                /* running: no step past this one */
    um_settings     restart_settings, apply_settings;
    char           *restart_prompt;
    ui_event        queue[QUEUE_CAP];       /* ring */
    int             q_head, q_len;
};

static void wake(ui_worker *w) {
    char b = 1;
    ssize_t r = write(w->pipe_wr, &b, 1);      /* full pipe: the UI is already woken */
    (void)r;
}

/* Called with mu held. A full queue drops the event's snapshot (cannot happen in practice:
 * the UI drains on every wake-up). */
static void publish(ui_worker *w, ui_event_kind kind, um_snapshot *snap, const char *msg) {
    if (w->q_len == QUEUE_CAP) {
        if (snap) w->src->release(snap);
        return;
    }
    ui_event *ev = &w->queue[(w->q_head + w->q_len) % QUEUE_CAP];
    ev->kind = kind;
    ev->snap = snap;
    snprintf(ev->msg, sizeof ev->msg, "%s", msg ? msg : "");
    w->q_len++;
    wake(w);
}

static void *worker_main(void *arg) {
    ui_worker *w = arg;
    pthread_mutex_lock(&w->mu);
    while (!w->quit) {
        um_err e = { "" };
        if (w->restart_pending) {
            um_settings s = w->restart_settings;
            char *prompt = w->restart_prompt;
            w->restart_prompt = NULL;
            w->restart_pending = false;
            w->apply_pending = false;
            w->busy = true;
            pthread_mutex_unlock(&w->mu);
            um_snapshot *snap = w->src->start(w->src->self, &s, prompt ? prompt : "", &e);
            free(prompt);
            pthread_mutex_lock(&w->mu);
            w->busy = false;
            if (snap) {
                w->done = snap->done;
                w->newest = snap->step;
                publish(w, UI_EV_RESTARTED, snap, NULL);
            } else {
                w->running = false;
                w->done = true;
                w->step_requests = 0;
                publish(w, UI_EV_ERROR, NULL, e.msg);
            }
            continue;
        }
        if (w->apply_pending) {
            um_settings s = w->apply_settings;
            w->apply_pending = false;
            pthread_mutex_unlock(&w->mu);
            int rc = w->src->apply(w->src->self, &s, &e);
            pthread_mutex_lock(&w->mu);
            publish(w, rc == UM_OK ? UI_EV_APPLIED : UI_EV_ERROR, NULL, rc == UM_OK ? NULL : e.msg);
            continue;
        }
        if (!w->done && ((w->running && w->newest < w->horizon) || w->step_requests > 0)) {
            if (w->step_requests > 0) w->step_requests--;
            w->busy = true;
            w->cancelled = false;
            pthread_mutex_unlock(&w->mu);
            um_snapshot *snap = w->src->step(w->src->self, &e);
            pthread_mutex_lock(&w->mu);
            w->busy = false;
            if (snap) {
                w->done = snap->done;
                w->newest = snap->step;
                if (snap->done) w->step_requests = 0;
                publish(w, UI_EV_SNAPSHOT, snap, NULL);
            } else if (w->cancelled) {              /* a restart or quit cut the step short */
                w->cancelled = false;
            } else {
                w->running = false;
                w->step_requests = 0;
                w->done = true;
                publish(w, UI_EV_ERROR, NULL, e.msg);
            }
            continue;
        }
        pthread_cond_wait(&w->cv, &w->mu);
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

/* Called with mu held: cut a step in flight short (restart, quit). */
static void cancel_step(ui_worker *w) {
    if (w->busy && w->src->cancel) {
        w->cancelled = true;
        w->src->cancel(w->src->self);
    }
}

int ui_worker_open(ui_worker **out, ui_source *src, const um_settings *s, const char *prompt,
                   bool running, um_err *e) {
    ui_worker *w = um_calloc(1, sizeof *w);
    int fds[2];
    if (!w) return um_errf(e, "worker: out of memory");
    if (pipe(fds) != 0) { free(w); return um_errf(e, "worker: pipe: %s", strerror(errno)); }
    for (int i = 0; i < 2; i++) {
        fcntl(fds[i], F_SETFL, fcntl(fds[i], F_GETFL) | O_NONBLOCK);
        fcntl(fds[i], F_SETFD, FD_CLOEXEC);
    }
    w->pipe_rd = fds[0];
    w->pipe_wr = fds[1];
    w->src = src;
    w->running = running;
    w->horizon = INT32_MAX;
    w->restart_pending = true;
    w->restart_settings = *s;
    w->restart_prompt = strdup(prompt ? prompt : "");
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
    /* the worker blocks every signal but the crash ones, so SIGINT/SIGTERM/SIGWINCH reach
     * the UI thread and a fault in a step still restores the terminal */
    sigset_t all, old;
    sigexit_compute_mask(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    int created = w->restart_prompt ? pthread_create(&w->thread, NULL, worker_main, w) : -1;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (created != 0) {
        close(fds[0]); close(fds[1]);
        free(w->restart_prompt);
        free(w);
        return um_errf(e, "worker: cannot start the thread");
    }
    *out = w;
    return UM_OK;
}

int ui_worker_fd(const ui_worker *w) { return w->pipe_rd; }

void ui_worker_set_running(ui_worker *w, bool running) {
    pthread_mutex_lock(&w->mu);
    w->running = running;
    if (running) w->step_requests = 0;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

void ui_worker_step_once(ui_worker *w) {
    pthread_mutex_lock(&w->mu);
    if (!w->running && !w->done) w->step_requests++;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

void ui_worker_restart(ui_worker *w, const um_settings *s, const char *prompt) {
    char *p = strdup(prompt ? prompt : "");
    pthread_mutex_lock(&w->mu);
    free(w->restart_prompt);
    w->restart_prompt = p;
    w->restart_settings = *s;
    w->restart_pending = true;
    w->step_requests = 0;
    w->done = false;
    cancel_step(w);
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

void ui_worker_apply(ui_worker *w, const um_settings *s) {
    pthread_mutex_lock(&w->mu);
    w->apply_settings = *s;
    w->apply_pending = true;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

void ui_worker_set_horizon(ui_worker *w, int32_t step) {
    pthread_mutex_lock(&w->mu);
    if (step != w->horizon) {
        w->horizon = step;
        pthread_cond_signal(&w->cv);
    }
    pthread_mutex_unlock(&w->mu);
}

bool ui_worker_busy(ui_worker *w) {
    pthread_mutex_lock(&w->mu);
    bool b = w->busy || w->step_requests > 0 || w->restart_pending;
    pthread_mutex_unlock(&w->mu);
    return b;
}

bool ui_worker_take(ui_worker *w, ui_event *ev) {
    char buf[256];
    while (read(w->pipe_rd, buf, sizeof buf) > 0) {}
    pthread_mutex_lock(&w->mu);
    bool got = w->q_len > 0;
    if (got) {
        *ev = w->queue[w->q_head];
        w->q_head = (w->q_head + 1) % QUEUE_CAP;
        w->q_len--;
    }
    pthread_mutex_unlock(&w->mu);
    return got;
}

void ui_worker_close(ui_worker *w) {
    if (!w) return;
    pthread_mutex_lock(&w->mu);
    w->quit = true;
    cancel_step(w);
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
    pthread_join(w->thread, NULL);
    ui_event ev;
    while (ui_worker_take(w, &ev))
        if (ev.snap) w->src->release(ev.snap);
    free(w->restart_prompt);
    close(w->pipe_rd);
    close(w->pipe_wr);
    pthread_mutex_destroy(&w->mu);
    pthread_cond_destroy(&w->cv);
    free(w);
}
