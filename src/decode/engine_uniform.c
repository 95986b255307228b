/*
 * engine_uniform: the uniform-state step, engine_step for a run whose schedule is
 * UM_SCHED_UNIFORM: DiffusionGemma's, and a masked architecture's file that says
 * unmask.uniform_state (hp.uniform_state without arch->uniform_state). The schedule
 * (schedule.h, "uniform-state decoding") owns the per-canvas state and the rules; this file
 * reads its plan and does the rest:
 *   plan    = schedule_us_plan(state)              canvas [P, P + C), t, self-conditioning
 *   prompt  = DiffusionGemma, on a canvas's first step with --cache prefix: the prefix's K/V
 *             once (dg_prompt)
 *   logits  = DiffusionGemma: run_dg([prefix | canvas], rows = the C canvas rows, SC = last
 *             step's logits at its t); a masked architecture: its ordinary pass run([prefix |
 *             canvas]) over the whole sequence every step (it attends both ways, so the
 *             prefix's K/V change with the canvas), rows = the canvas rows (shifted by one when
 *             the model scores i from row i-1), no self-conditioning
 *   picks   = sampler_pick(row) at temperature t, in parallel: the sample (one uniform from the
 *             (seed, step, pos, TOKEN) stream), the entropy of softmax(logits / t), the argmax
 *   accept  = schedule_select: increasing entropy while the sum before stays <= the bound
 *   commit  = output token = argmax; the working canvas holds the sample where accepted, else a
 *             fresh token from the (seed, step, pos, NOISE) stream
 *   stop    = schedule_us_after (stable argmax and confident, or out of steps): cut the canvas
 *             (schedule_us_cut), keep it as the next canvas's prefix or end the run
 *   publish
 * A canvas starts from tokens of the (seed, canvas index, pos, INIT) streams, drawn for every
 * canvas at the start, so every position always shows a token.
 */
#include "engine_impl.h"

#include <string.h>

#include "forward.h"

/* ------------------------------------------------------------------ start */

int engine_uniform_start(um_engine *en, um_err *e) {
    const um_settings *s = &en->set;
    if (schedule_us_start(&en->us, s, s->n_gen, e)) return UM_FAIL;
    const int32_t V = en->model->hp.n_vocab, C = s->us_canvas;
    for (int32_t i = en->n_prompt; i < en->n_canvas; i++) {
        int32_t t = sampler_token_at(s->seed, (i - en->n_prompt) / C, i, UM_RNG_INIT, V);
        um_pos *p = &en->pos[i];
        en->tokens[i] = t;
        en->masked[i] = false;
        p->token = p->held = t;
        p->masked = false;
        p->us = UM_US_NOISE;
    }
    en->us_prompt_ok = false;
    um_plan plan;
    schedule_us_plan(&en->us, s, en->n_prompt, &plan);
    en->us_view = (um_us_view){
        .on = true, .start = plan.start, .end = plan.end, .temperature = plan.temperature,
        .entropy_bound = plan.entropy_bound, .stability = s->us_stability, .confidence = s->us_confidence,
    };
    return engine_publish(en, &plan, 0, 0, 0, 0, NULL, e);
}

/* ------------------------------------------------------------------ step */

typedef struct us_job {
    um_engine  *en;
    um_settings st;             /* the run's settings at this step's temperature, no filter */
    int32_t     start;
    int64_t     step;
    int         failed;
    um_err      err;
} us_job;

static void pick_row(void *arg, int64_t i, int tid) {
    us_job *j = arg;
    um_engine *en = j->en;
    const size_t V = (size_t)en->model->hp.n_vocab;
    um_err e;
    if (sampler_pick(en->logits + (size_t)i * V, (int32_t)V, -1, &j->st, j->step, j->start + i, en->ws[tid],
                     &en->picks[i], &e))
        if (!j->failed) { j->failed = 1; j->err = e; }
}

/* The canvas stopped: keep it up to its cut as the prefix of the next one (the working
 * tokens become the output); past the cut, end of text to the end of the run. */
static void finish_canvas(um_engine *en, const um_plan *plan) {
    const int32_t P = plan->start, C = plan->end - plan->start;
    bool *eog = en->in_active;                   /* scratch: (n_canvas) */
    int32_t *out = en->rows;                     /* scratch: (n_canvas) */
    for (int32_t i = 0; i < C; i++) {
        out[i] = en->pos[P + i].token;
        eog[i] = tok_is_eog(en->tok, out[i]);
    }
    const int32_t cut = schedule_us_cut(out, eog, C);
    for (int32_t i = 0; i < cut; i++) {
        um_pos *p = &en->pos[P + i];
        en->tokens[P + i] = p->held = p->token;
        p->us = UM_US_KEPT;
    }
    const int32_t eos = tok_special(en->tok)->eos;
    if (cut < C)
        for (int32_t i = P + cut; i < en->n_canvas; i++) {
            um_pos *p = &en->pos[i];
            if (eos >= 0) en->tokens[i] = p->token = p->held = eos;
            p->us = UM_US_CUT;
        }
    en->us_view.cut = cut;
    schedule_us_next(&en->us, cut, C);
    en->us_prompt_ok = false;                    /* the next canvas has a longer prefix */
}

int engine_uniform_step(um_engine *en, um_err *e) {
    const um_settings *s = &en->set;
    um_plan plan;
    schedule_us_plan(&en->us, s, en->n_prompt, &plan);
    if (plan.done) {
        en->done = true;
        return engine_publish(en, &plan, 0, 0, 0, 0, NULL, e) ? UM_FAIL : 0;
    }
    const int32_t P = plan.start, T = plan.end, C = T - P;
    const int64_t step = en->steps_done;
    double t0 = um_now();
    step_work w = { .passes = 1 };
    const bool dg = en->model->arch->uniform_state;   /* DiffusionGemma's own pass, else the ordinary one */
    const bool cached = dg && s->cache == UM_CACHE_PREFIX;
    /* the backend holds one prompt's K/V: an engine sharing it may have stored its own since */
    if (cached && (!en->us_prompt_ok || en->sh->dg_owner != en)) {
        en->sh->dg_owner = NULL;
        if (en->be.dg_prompt(en->be.impl, en->tokens, P, e)) return UM_FAIL;
        en->sh->dg_owner = en;
        en->us_prompt_ok = true;
        w.refreshed = true;
        w.rows += P;
    }
    um_selfcond sc = { .logits = dg && plan.sc_temp > 0 ? en->sc_logits : NULL, .temp = plan.sc_temp,
                       .mode = (um_sc_mode)s->us_sc_mode, .top_k = s->us_sc_top_k,
                       .bf16 = s->us_sc_bf16 };
    if (dg) {
        for (int32_t i = 0; i < C; i++) en->rows[i] = P + i;
        if (en->be.run_dg(en->be.impl, en->tokens, T, P, &sc, cached, en->rows, C, en->logits, e)) return UM_FAIL;
    } else {
        /* P >= 1 when shifting (engine_start), so the rows stay in the pass */
        const int32_t shift = en->model->hp.shift_logits ? 1 : 0;
        for (int32_t i = 0; i < C; i++) en->rows[i] = P + i - shift;
        if (en->be.run(en->be.impl, en->tokens, T, en->rows, C, en->logits, e)) return UM_FAIL;
    }
    w.rows += cached ? C : T;
    for (int32_t i = 0; i < en->n_canvas; i++) en->pos[i].cached = cached && !w.refreshed && i < P;
    en->passes += w.passes;
    en->rows_total += w.rows;
    double t1 = um_now();

    us_job job = { .en = en, .st = *s, .start = P, .step = step };
    job.st.temperature = plan.temperature;
    job.st.top_k = 0;
    job.st.top_p = 1.0f;
    job.st.gumbel = false;
    pool_for(en->pool, C, pick_row, &job);
    if (job.failed) { *e = job.err; return UM_FAIL; }
    for (int32_t i = 0; i < C; i++) {
        en->scored[i] = (um_scored){ .pos = P + i, .score = en->picks[i].neg_entropy,
                                     .entropy = -en->picks[i].neg_entropy };
    }
    const int32_t k = schedule_select(s, &plan, step, en->scored, C);
    bool *acc = en->kv_masked;                   /* scratch: (n_canvas) accepted this step */
    memset(acc, 0, (size_t)C * sizeof *acc);
    for (int32_t c = 0; c < k; c++) {
        acc[en->scored[c].pos - P] = true;
        en->committed[c] = en->scored[c].pos;
    }
    for (int32_t i = 0; i < en->n_canvas; i++) en->pos[i].fresh = false;
    bool same = true;
    double sum_h = 0;
    for (int32_t i = 0; i < C; i++) {
        const um_pick *pk = &en->picks[i];
        um_pos *p = &en->pos[P + i];
        const int32_t argmax = pk->top[0].token;
        same &= p->token == argmax;
        p->token = argmax;
        p->held = acc[i] ? pk->token : sampler_token_at(s->seed, step, P + i, UM_RNG_NOISE, en->model->hp.n_vocab);
        en->tokens[P + i] = p->held;
        p->us = acc[i] ? UM_US_ACCEPTED : UM_US_DRAFT;
        p->fresh = acc[i];
        if (acc[i]) { p->commit_step = (int32_t)step + 1; p->commit_conf = pk->prob; }
        p->has_view = true;
        memcpy(p->top, pk->top, sizeof p->top);
        p->entropy = -pk->neg_entropy;
        sum_h += p->entropy;
    }
    float *t = en->logits;                       /* this step's logits condition the next */
    en->logits = en->sc_logits;
    en->sc_logits = t;
    en->steps_done++;
    const bool stopped = schedule_us_after(&en->us, s, &plan, same, sum_h / C, k);
    en->us_view = (um_us_view){
        .on = true, .start = P, .end = T, .canvas_step = en->us.step, .temperature = plan.temperature,
        .entropy_bound = plan.entropy_bound, .accepted = k, .held = en->us.held, .stability = s->us_stability,
        .mean_entropy = en->us.mean_entropy, .confidence = s->us_confidence, .self_cond = sc.logits != NULL,
        .sc_exact_rows = sc.logits && en->be.dg_sc_exact_rows ? en->be.dg_sc_exact_rows(en->be.impl) : 0,
        .sc_bf16 = sc.logits && s->us_sc_bf16,
        .stopped = stopped, .stable = en->us.stable, .cut = C,
    };
    if (stopped) finish_canvas(en, &plan);
    en->done = en->us.done;
    double t2 = um_now();
    return engine_publish(en, &plan, k, k, (t1 - t0) * 1e3, (t2 - t1) * 1e3, &w, e) ? UM_FAIL : 1;
}
