/*
 * engine_share: the step, alone or batched (engine_step, engine_step_many, engine_run). Engines
 * on one model (engine_open_sharing: compare panes) plan their steps at once, and the first
 * whose turn (engine_turn.c) comes runs every planned pass in one pass over the weights (the
 * backend's run_multi), from many threads (engine_step) or in lock step from one
 * (engine_step_many); an engine alone steps as it always did (engine_step_alone, engine.c).
 */
#include "engine_impl.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "forward.h"

/* ------------------------------------------------------------------ batched passes */

/* One engine's planned passes, waiting in sh->queue until some engine's turn runs them. */
struct batch_req {
    batch_req  *next;
    step_pass  *sp;
    bool        done;
    int         rc;
    um_err      err;
    double      ms;             /* the batched pass's time */
    int         engines;        /* engines in it */
};

static void enqueue(um_shared *sh, batch_req *r) {
    pthread_mutex_lock(&sh->lock);
    batch_req **t = &sh->queue;
    while (*t) t = &(*t)->next;
    *t = r;
    sh->queued++;
    pthread_cond_broadcast(&sh->queue_cv);
    pthread_mutex_unlock(&sh->lock);
}

/* In en's turn, with en's request mine not run yet: wait a moment for the passes of the other
 * engines whose runs are in progress (at most 5% of the last batched pass, 0.1 to 5 ms: they
 * plan in microseconds, and a paused one must not hold the others up), then run mine and every
 * waiting request, up to UM_FW_MAX_PASSES canvases, in one pass. */
static void lead_batch(um_engine *en, batch_req *mine) {
    um_shared *sh = en->sh;
    pthread_mutex_lock(&sh->lock);
    const double wait_ms = UM_MIN(5.0, UM_MAX(0.1, 0.05 * sh->last_batch_ms));
    struct timespec dl;
    clock_gettime(CLOCK_REALTIME, &dl);
    dl.tv_nsec += (long)(wait_ms * 1e6);
    dl.tv_sec += dl.tv_nsec / 1000000000L;
    dl.tv_nsec %= 1000000000L;
    while (sh->queued < sh->live)
        if (pthread_cond_timedwait(&sh->queue_cv, &sh->lock, &dl) != 0) break;
    batch_req *take[UM_FW_MAX_PASSES];
    um_pass ps[UM_FW_MAX_PASSES];
    int nt = 0, np = 0;
    take[nt++] = mine;                             /* mine first, then the queue's order */
    for (batch_req *r = sh->queue; r; r = r->next)
        if (r != mine && np + mine->sp->np + r->sp->np <= UM_FW_MAX_PASSES) { take[nt++] = r; np += r->sp->np; }
    np = 0;
    for (int i = 0; i < nt; i++) {
        for (batch_req **t = &sh->queue; *t; t = &(*t)->next)
            if (*t == take[i]) { *t = take[i]->next; sh->queued--; break; }
        for (int b = 0; b < take[i]->sp->np; b++) ps[np++] = take[i]->sp->p[b];
    }
    pthread_mutex_unlock(&sh->lock);
    um_err err = { "" };
    const double t = um_now();
    const int rc = en->be.run_multi(en->be.impl, ps, np, &err);
    const double ms = (um_now() - t) * 1e3;
    pthread_mutex_lock(&sh->lock);
    sh->last_batch_ms = ms;
    for (int i = 0; i < nt; i++) {
        take[i]->rc = rc;
        take[i]->err = err;
        take[i]->ms = ms;
        take[i]->engines = nt;
        take[i]->done = true;
    }
    pthread_mutex_unlock(&sh->lock);
}

/* Engines that share a model plan their steps at once, each in its own thread; the first
 * whose turn comes runs all the planned passes waiting in one pass over the weights (the
 * backend's run_multi), the others find theirs done; each then samples and commits in its
 * own turn. The output is the same as each engine's alone: every op computes a row on its
 * own. A uniform-state step, a backend without run_multi or an engine alone runs as always. */
int engine_step(um_engine *en, um_err *e) {
    um_shared *sh = en->sh;
    pthread_mutex_lock(&sh->lock);
    const bool alone = sh->refs < 2;
    pthread_mutex_unlock(&sh->lock);
    int rc;
    if (alone || !en->be.run_multi || en->set.schedule == UM_SCHED_UNIFORM) {
        engine_turn_begin(sh);
        rc = engine_step_alone(en, e);
        engine_turn_end(sh);
    } else {
        step_ctx c;
        batch_req r = { .sp = &c.sp };
        const int k = engine_step_prep(en, &c, e);
        if (k == PREP_RUN) enqueue(sh, &r);
        engine_turn_begin(sh);
        if (k == PREP_FAIL) rc = UM_FAIL;
        else if (k == PREP_NONE) rc = 0;
        else if (k == PREP_PUBLISH) rc = engine_publish(en, &c.plan, 0, 0, 0, 0, NULL, e) ? UM_FAIL : 0;
        else {
            pthread_mutex_lock(&sh->lock);
            const bool done = r.done;
            pthread_mutex_unlock(&sh->lock);
            if (!done) lead_batch(en, &r);
            if (r.rc) {
                *e = r.err;
                rc = UM_FAIL;
            } else {
                c.work.batched = r.engines;
                c.t0 = um_now() - r.ms * 1e-3;      /* the step's forward time: the batched pass's */
                rc = engine_step_finish(en, &c, e);
            }
        }
        engine_turn_end(sh);
    }
    engine_set_live(en, rc >= 0 && !en->done);
    return rc;
}

int engine_step_many(um_engine **ens, int n, int *rcs, um_err *e) {
    if (n <= 0) return UM_OK;
    um_shared *sh = ens[0]->sh;
    for (int i = 1; i < n; i++)
        if (ens[i]->sh != sh) return um_errf(e, "engine_step_many: the engines do not share one model");
    if (n > UM_FW_MAX_PASSES / 2) return um_errf(e, "engine_step_many: at most %d engines", UM_FW_MAX_PASSES / 2);
    step_ctx c[UM_FW_MAX_PASSES / 2];
    int kind[UM_FW_MAX_PASSES / 2];
    um_pass ps[UM_FW_MAX_PASSES];
    int np = 0, nrun = 0, failed = 0;
    engine_turn_begin(sh);
    for (int i = 0; i < n; i++) {
        um_engine *en = ens[i];
        rcs[i] = 0;
        if (en->set.schedule == UM_SCHED_UNIFORM || !en->be.run_multi) {
            kind[i] = -2;                          /* a step of its own */
            continue;
        }
        um_err ei = { "" };
        kind[i] = engine_step_prep(en, &c[i], &ei);
        if (kind[i] == PREP_FAIL) { rcs[i] = UM_FAIL; if (!failed++) *e = ei; }
        if (kind[i] != PREP_RUN) continue;
        for (int b = 0; b < c[i].sp.np; b++) ps[np++] = c[i].sp.p[b];
        nrun++;
    }
    double ms = 0;
    int rc_run = UM_OK;
    um_err er = { "" };
    if (np > 0) {
        const double t = um_now();
        rc_run = ens[0]->be.run_multi(ens[0]->be.impl, ps, np, &er);
        ms = (um_now() - t) * 1e3;
        if (rc_run && !failed++) *e = er;
    }
    for (int i = 0; i < n; i++) {
        um_engine *en = ens[i];
        um_err ei = { "" };
        if (kind[i] == -2) rcs[i] = engine_step_alone(en, &ei);
        else if (kind[i] == PREP_NONE || kind[i] == PREP_FAIL) continue;
        else if (kind[i] == PREP_PUBLISH) rcs[i] = engine_publish(en, &c[i].plan, 0, 0, 0, 0, NULL, &ei) ? UM_FAIL : 0;
        else if (rc_run) rcs[i] = UM_FAIL;
        else {
            c[i].work.batched = nrun;
            c[i].t0 = um_now() - ms * 1e-3;
            rcs[i] = engine_step_finish(en, &c[i], &ei);
        }
        if (rcs[i] < 0 && ei.msg[0] && !failed++) *e = ei;
        if (rcs[i] < 0 && !failed++) um_errf(e, "a step failed");
    }
    engine_turn_end(sh);
    for (int i = 0; i < n; i++) engine_set_live(ens[i], rcs[i] >= 0 && !ens[i]->done);
    return failed ? UM_FAIL : UM_OK;
}

int engine_run(um_engine *en, void (*on_step)(void *ctx, um_snapshot *sn), void *ctx, um_err *e) {
    int steps = 0;
    while (!engine_done(en)) {
        int r = engine_step(en, e);
        if (r < 0) return -1;
        if (r == 0) break;
        steps++;
        if (on_step) on_step(ctx, engine_snapshot(en));
    }
    return steps;
}
