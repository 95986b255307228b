/*
 * engine_publish: the snapshot of the canvas after a step (engine_publish, for engine.c's
 * masked step and engine_uniform.c's uniform-state one), and the cache sizes it reports.
 * A snapshot copies the live per-position state: it never changes once published.
 */
#include "engine_impl.h"
#include "snapshot.h"

#include <string.h>

int engine_publish(um_engine *en, const um_plan *plan, int n_committed, int planned, double fwd_ms, double smp_ms,
                   const step_work *w, um_err *e) {
    um_snapshot *s = snapshot_new(en->n_canvas, n_committed);
    if (!s) return um_errf(e, "out of memory for a snapshot");
    s->step = en->steps_done;
    s->n_prompt = en->n_prompt;
    s->n_canvas = en->n_canvas;
    s->settings = en->set;
    memcpy(s->pos, en->pos, (size_t)en->n_canvas * sizeof(um_pos));
    memcpy(s->committed, en->committed, (size_t)n_committed * sizeof(int32_t));
    s->n_committed = n_committed;
    s->planned = planned;
    s->forward_ms = fwd_ms;
    s->sample_ms = smp_ms;
    if (w) {
        s->passes = w->passes;
        s->rows_computed = w->rows;
        s->cache_refreshed = w->refreshed;
        s->batched = w->batched > 1 ? w->batched : 0;
        s->n_edited = w->n_edited;
        s->post_step = w->post;
    }
    s->passes_total = en->passes;
    s->cache_bytes = engine_cache_bytes(en);
    int left = 0;
    for (int i = en->n_prompt; i < en->n_canvas; i++) left += en->masked[i];
    s->masks_left = left;
    s->done = en->done;
    s->block = plan ? plan->block : 0;
    s->n_blocks = plan ? plan->n_blocks : 1;
    /* planned total: steps done plus what the schedule says is left */
    s->n_steps = schedule_adaptive(en->set.schedule) ? en->steps_done + (left > 0 || schedule_mdm_post_due(&en->mdm) ? 1 : 0)
                                                         : UM_MAX(en->set.steps, en->steps_done);
    if (en->set.schedule == UM_SCHED_UNIFORM) {
        /* at most: the current canvas's steps left and every later canvas's */
        const um_us_state *u = &en->us;
        s->n_steps = en->steps_done + (u->done ? 0 : UM_MAX(en->set.steps - u->step, 0) +
                                                      en->set.steps * (u->n_blocks - u->block - 1));
        s->us = en->us_view;
    }
    if (en->done) s->n_steps = en->steps_done;
    snapshot_unref(en->snap);
    en->snap = s;
    return UM_OK;
}

uint64_t engine_cache_bytes(const um_engine *en) {
    uint64_t b = 0;
    for (int i = 0; i < 2; i++) if (en->kv[i]) b += en->be.kv_bytes(en->kv[i]);
    if (en->set.schedule == UM_SCHED_UNIFORM && en->set.cache == UM_CACHE_PREFIX && en->be.dg_prompt_bytes)
        b += en->be.dg_prompt_bytes(en->be.impl);
    return b;
}
