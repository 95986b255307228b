/*
 * ctl_state: the helpers every part of the controller uses (see ctl_state.h): the
 * transient message, the lock-step newest step, and the calls that reach every pane's worker.
 */
#include <stdarg.h>
#include <stdio.h>

#include "ctl_state.h"

void ctl_say(ctl *a, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(a->message, sizeof a->message, fmt, ap);
    va_end(ap);
    a->message_until = um_now() + CTL_MESSAGE_SECONDS;
}

/* The newest step every pane can show, in lock step: the least newest step of the panes
 * still running (a pane whose run ended shows its last step meanwhile), or, when all ended,
 * the greatest; -1 while a pane has none. */
int32_t ctl_newest(const ctl *a) {
    int32_t run = INT32_MAX, all = -1;
    for (int k = 0; k < a->n_panes; k++) {
        const ctl_pane *p = &a->pn[k];
        int32_t last = p->n_hist - 1;
        if (last < 0) return -1;
        all = UM_MAX(all, last);
        if (!p->hist[last]->done) run = UM_MIN(run, last);
    }
    return run == INT32_MAX ? all : run;
}

void ctl_set_running_all(ctl *a, bool running) {
    for (int k = 0; k < a->n_panes; k++) ui_worker_set_running(a->pn[k].worker, running);
}

void ctl_step_once_all(ctl *a) {
    for (int k = 0; k < a->n_panes; k++) ui_worker_step_once(a->pn[k].worker);
}

void ctl_restart_all(ctl *a) {
    for (int k = 0; k < a->n_panes; k++) ui_worker_restart(a->pn[k].worker, &a->pn[k].settings, a->prompt);
}
