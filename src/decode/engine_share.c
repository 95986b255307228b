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
    pthread_cond_broadcast(&sh->queue_cv);
    pthread_mutex_unlock(&sh->lock);
}

static int queue_len(const um_shared *sh) {
    int n = 0;
    for (const batch_req *r = sh->queue; r; r = r->next) n++;
    return n;
}

/* Whether en's masked steps can join a batch: the uniform-state step and a backend without
 * run_multi (CUDA) step on their own. */
static bool batches(const um_engine *en) {
    return en->be.run_multi && en->set.schedule != UM_SCHED_UNIFORM;
}

/* The passes in one run_multi pass, and its time. */
static int run_batch(um_engine *en, const um_pass *ps, int np, double *ms, um_err *err) {
    const double t = um_now();
    const int rc = en->be.run_multi(en->be.impl, ps, np, err);
    *ms = (um_now() - t) * 1e3;
    return rc;
}

/* The rest of a step engine_step_prep planned as kind, once its batch ran (rc and err: how
 * it went; ms: its time; engines: how many it served). In the engine's turn. */
static int step_after(um_engine *en, step_ctx *c, int kind, int rc, const um_err *err, double ms, int engines,
                      um_err *e) {
    switch (kind) {
    case PREP_FAIL: return UM_FAIL;                /* e says why (engine_step_prep) */
    case PREP_NONE: return 0;
    case PREP_PUBLISH: return engine_publish(en, &c->plan, 0, 0, 0, 0, NULL, e) ? UM_FAIL : 0;
    default: break;
    }
    if (rc) {
        *e = *err;
        return UM_FAIL;
    }
    c->work.batched = engines;
    c->t0 = um_now() - ms * 1e-3;                  /* the step's forward time: the batched pass's */
    return engine_step_finish(en, c, e);
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
    while (queue_len(sh) < sh->live)
        if (pthread_cond_timedwait(&sh->queue_cv, &sh->lock, &dl) != 0) break;
    /* mine, and the others in the queue's order while their canvases fit; the taken leave it */
    batch_req *take[UM_FW_MAX_PASSES];
    um_pass ps[UM_FW_MAX_PASSES];
    int nt = 0, np = 0;
    for (batch_req **t = &sh->queue; *t;) {
        batch_req *r = *t;
        if (r == mine || np + mine->sp->np + r->sp->np <= UM_FW_MAX_PASSES) {
            if (r != mine) np += r->sp->np;
            take[nt++] = r;
            *t = r->next;
        } else {
            t = &r->next;
        }
    }
    np = 0;
    for (int i = 0; i < nt; i++)
        for (int b = 0; b < take[i]->sp->np; b++) ps[np++] = take[i]->sp->p[b];
    pthread_mutex_unlock(&sh->lock);
    um_err err = { "" };
    double ms;
    const int rc = run_batch(en, ps, np, &ms, &err);
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
    if (alone || !batches(en)) {
        engine_turn_begin(sh);
        rc = engine_step_alone(en, e);
        engine_turn_end(sh);
    } else {
        step_ctx c;
        batch_req r = { .sp = &c.sp };
        const int k = engine_step_prep(en, &c, e);
        if (k == PREP_RUN) enqueue(sh, &r);
        engine_turn_begin(sh);
        pthread_mutex_lock(&sh->lock);
        const bool done = r.done;
        pthread_mutex_unlock(&sh->lock);
        if (k == PREP_RUN && !done) lead_batch(en, &r);
        rc = step_after(en, &c, k, r.rc, &r.err, r.ms, r.engines, e);
        engine_turn_end(sh);
    }
    engine_set_live(en, rc >= 0 && !en->done);
    return rc;
}

int engine_step_many(um_engine **ens, int n, int *rcs, um_err *e) {
    enum { MAXE = UM_FW_MAX_PASSES / 2, OWN_STEP = -2 };     /* a step of its own: engine_step_alone */
    if (n <= 0) return UM_OK;
    um_shared *sh = ens[0]->sh;
    for (int i = 1; i < n; i++)
        if (ens[i]->sh != sh) return um_errf(e, "engine_step_many: the engines do not share one model");
    if (n > MAXE) return um_errf(e, "engine_step_many: at most %d engines", MAXE);
    step_ctx c[MAXE];
    int kind[MAXE];
    um_err ei[MAXE];
    um_pass ps[UM_FW_MAX_PASSES];
    int np = 0, nrun = 0, failed = 0;
    engine_turn_begin(sh);
    for (int i = 0; i < n; i++) {
        ei[i] = (um_err){ "" };
        kind[i] = batches(ens[i]) ? engine_step_prep(ens[i], &c[i], &ei[i]) : OWN_STEP;
        if (kind[i] != PREP_RUN) continue;
        for (int b = 0; b < c[i].sp.np; b++) ps[np++] = c[i].sp.p[b];
        nrun++;
    }
    double ms = 0;
    um_err er = { "" };
    const int rc_run = np > 0 ? run_batch(ens[0], ps, np, &ms, &er) : UM_OK;
    for (int i = 0; i < n; i++) {
        rcs[i] = kind[i] == OWN_STEP ? engine_step_alone(ens[i], &ei[i])
                                     : step_after(ens[i], &c[i], kind[i], rc_run, &er, ms, nrun, &ei[i]);
        if (rcs[i] < 0 && !failed++) *e = ei[i];
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
