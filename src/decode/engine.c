/*
 * engine: the denoising loop behind engine.h. Owns the model, tokenizer, forward pass and
 * thread pool (or shares them with the engines engine_open_sharing opened on it: compare
 * panes; engine_turn.c, engine_share.c) and one canvas; each step runs one forward pass over
 * the canvas, picks a token for every eligible masked position, lets the schedule commit some
 * of them, and publishes a fresh immutable snapshot.
 *
 * Per step (see docs/decoding.md for the rules themselves):
 *   plan   = schedule_plan(settings, canvas state)        active block, how many to commit
 *   rows   = eligible positions (shifted by one when the model scores i from row i-1)
 *   logits = forward(canvas, rows)  [and forward(unconditional canvas) for CFG]
 *            with a cache: a full pass that refills it (refresh), or a partial pass over
 *            the positions masked at the last refresh within the cache's region, plus rows
 *   picks  = sampler_pick(row) for each eligible position, in parallel, keyed RNG streams
 *   edits  = with settings.edit (LLaDA 2.1), the block's committed positions whose pick
 *            differs with probability > edit_threshold take it (they were eligible rows too)
 *   commit = schedule_select(scores)   (threshold: at least the LLaDA 2.0 quota of the
 *            block's in-block step, schedule_threshold_quota)
 *   then   = a block just filled with editing on: up to post_steps edit-only steps on it;
 *            eos_early_stop: stop at the first end of text with all before it committed
 * Deterministic for a given seed whatever the thread count: every random draw comes from a
 * stream keyed by (seed, step, position, purpose).
 */
#include "engine_impl.h"
#include "snapshot.h"

#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chat.h"
#include "backend.h"
#include "forward.h"
#include "model.h"
#include "pool.h"
#include "quant.h"
#include "sampler.h"
#include "schedule.h"
#include "tokenizer.h"

/* ------------------------------------------------------------------ snapshots */

um_snapshot *engine_snapshot(um_engine *en) {
    snapshot_ref(en->snap);
    return en->snap;
}

/* ------------------------------------------------------------------ open / close */

static void fw_progress(void *ctx, int done, int total) {
    const um_engine_opts *o = ctx;
    if (o->progress) o->progress(o->progress_ctx, "repacking weights", done, total);
}

/* with == NULL: map the model, repack its weights and start the pool (engine_open); else take
 * with's (engine_open_sharing). The rest is the engine's own. */
static int open_engine(um_engine **out, um_engine *with, const um_engine_opts *o, um_err *e) {
    *out = NULL;
    um_engine *en = um_calloc(1, sizeof *en);
    if (!en) return um_errf(e, "out of memory");
    /* a template file is read before the model is mapped: its errors come at once */
    if (o->chat_template_file && chat_template_load_file(o->chat_template_file, &en->chat_file, e)) goto fail;
    if (with) {
        en->sh = with->sh;
        pthread_mutex_lock(&en->sh->lock);
        en->sh->refs++;
        pthread_mutex_unlock(&en->sh->lock);
    } else {
        if (!(en->sh = engine_shared_new())) { um_errf(e, "out of memory"); goto fail; }
        if (o->progress) o->progress(o->progress_ctx, "mapping model", 0, 1);
        gguf_file *g;                 /* gguf_open's messages name the file already */
        if (gguf_open(&g, o->model_path, e)) goto fail;
        /* the one verdict `unmask info` prints too (model.h) */
        if (model_load_runnable(&en->sh->model, &en->sh->tok, g, e)) { um_err_prefix(e, "%s", o->model_path); goto fail; }
    }
    en->model = en->sh->model;
    en->tok = en->sh->tok;
    const um_model *m = en->model;
    en->mask_id = m->hp.mask_id;
    en->n_ctx = o->n_ctx > 0 ? o->n_ctx : m->hp.n_ctx_train;
    en->ctx_explicit = o->n_ctx > 0;
    if (o->n_gen_min > en->n_ctx) {                /* before the long part: the repack */
        um_errf(e, en->ctx_explicit ? "%d tokens to generate exceed the context of %d tokens set by --ctx"
                                    : "%d tokens to generate exceed the model's trained context of %d tokens "
                                      "(--ctx N allows more, with a warning)", o->n_gen_min, en->n_ctx);
        goto fail;
    }
    en->warn = o->warn;
    en->warn_ctx = o->warn_ctx;
    en->view_ahead = o->view_ahead;
    /* chat template: a name (--chat-template, --no-chat, a preset's), else the template file
     * read above, else the one the model file asks for (chat.h: its own unmask.chat_template,
     * else detected from tokenizer.chat_template, else none for a raw LM) */
    if (o->chat_template) {
        if (chat_from_name(o->chat_template, &en->chat, e)) goto fail;
    } else if (!en->chat_file) {
        chat_choice c;
        if (chat_from_gguf(m->gguf, m->arch->name, gguf_path(m->gguf), &c, e)) goto fail;
        en->chat = c.chat;
        en->chat_file = c.own;
    }
    en->system = o->system ? strdup(o->system) : NULL;
    if (!with) {
        um_shared *sh = en->sh;
        sh->pool = pool_new(o->n_threads > 0 ? o->n_threads : pool_default_threads());
        if (!sh->pool) { um_errf(e, "cannot start worker threads"); goto fail; }
        if (o->gpu) {
            if (o->progress) o->progress(o->progress_ctx, "uploading weights to the GPU", 0, 1);
            if (gpu_backend_open(&sh->be, m, 64, e)) goto fail;
        } else {
            um_forward_opts fo = {
                .max_tokens = 64, .reference = o->reference, .kernel = (um_kernel)o->kernel, .release_pages = true,
                .progress = fw_progress, .progress_ctx = (void *)o,
            };
            um_forward *fw;
            if (forward_new(&fw, m, sh->pool, &fo, e)) goto fail;
            forward_as_backend(fw, &sh->be);
        }
    }
    en->pool = en->sh->pool;
    en->be = en->sh->be;
    en->n_threads = pool_threads(en->pool);
    en->ws = um_calloc((size_t)en->n_threads, sizeof *en->ws);
    if (!en->ws) { um_errf(e, "out of memory"); goto fail; }
    for (int i = 0; i < en->n_threads; i++)
        if (!(en->ws[i] = sampler_ws_new(m->hp.n_vocab))) { um_errf(e, "out of memory"); goto fail; }
    snprintf(en->quant, sizeof en->quant, "%s", um_type_name(m->ftype_main));
    snprintf(en->isa, sizeof en->isa, "%s", en->be.kernel_name(en->be.impl));
    en->attn_block = m->arch->block_causal && m->hp.block_size > 0 ? m->hp.block_size : 0;
    engine_default_settings(en, &en->set);
    en->done = true;
    *out = en;
    return UM_OK;
fail:
    engine_close(en);
    return UM_FAIL;
}

int engine_open(um_engine **out, const um_engine_opts *o, um_err *e) { return open_engine(out, NULL, o, e); }

int engine_open_sharing(um_engine **out, um_engine *with, const um_engine_opts *o, um_err *e) {
    return open_engine(out, with, o, e);
}

static void free_kv(um_engine *en) {
    for (int b = 0; b < 2; b++) {
        if (en->kv[b]) en->be.kv_free(en->kv[b]);
        en->kv[b] = NULL;
    }
    en->kv_cap = 0;
    en->kv_valid = false;
}

static void free_canvas(um_engine *en) {
    free(en->tokens); free(en->masked); free(en->pos); free(en->elig); free(en->rows);
    um_free_aligned(en->logits); um_free_aligned(en->logits_u); free(en->canvas_u);
    free(en->picks); free(en->scored); free(en->committed); free(en->why);
    free(en->active); free(en->kv_masked); free(en->in_active);
    um_free_aligned(en->sc_logits);
    en->sc_logits = NULL;
    en->active = NULL; en->kv_masked = en->in_active = NULL;
    en->tokens = en->elig = en->rows = en->canvas_u = en->committed = NULL;
    en->masked = NULL; en->pos = NULL; en->logits = en->logits_u = NULL;
    en->picks = NULL; en->scored = NULL; en->why = NULL;
    en->cap = 0;
}

void engine_close(um_engine *en) {
    if (!en) return;
    snapshot_unref(en->snap);
    free_canvas(en);
    engine_set_live(en, false);
    if (en->sh) {                               /* the caches belong to the shared backend */
        engine_turn_begin(en->sh);
        free_kv(en);
        if (en->sh->dg_owner == en) en->sh->dg_owner = NULL;
        engine_turn_end(en->sh);
    }
    if (en->ws) for (int i = 0; i < en->n_threads; i++) sampler_ws_free(en->ws[i]);
    free(en->ws);
    engine_shared_release(en->sh);
    free(en->system);
    chat_custom_free(en->chat_file);
    free(en);
}

void engine_get_info(const um_engine *en, um_engine_info *info) {
    memset(info, 0, sizeof *info);
    const um_model *m = en->model;
    snprintf(info->arch, sizeof info->arch, "%s", m->arch->name);
    snprintf(info->name, sizeof info->name, "%s", m->name);
    snprintf(info->quant, sizeof info->quant, "%s", en->quant);
    snprintf(info->backend, sizeof info->backend, "%s", en->be.name);
    snprintf(info->isa, sizeof info->isa, "%s", en->isa);
    info->n_threads = en->n_threads;
    info->n_vocab = m->hp.n_vocab;
    info->n_ctx = en->n_ctx;
    info->mask_id = en->mask_id;
    info->eos_id = tok_special(en->tok)->eos;
    info->can_cache = en->be.run_kv != NULL;
}

const um_settings *engine_settings(const um_engine *en) { return &en->set; }
bool engine_done(const um_engine *en) { return en->done; }

/* ------------------------------------------------------------------ start */

static int reserve(um_engine *en, int n, um_err *e) {
    if (n <= en->cap) return UM_OK;
    free_canvas(en);
    size_t V = (size_t)en->model->hp.n_vocab;
    en->tokens = um_calloc((size_t)n, sizeof *en->tokens);
    en->masked = um_calloc((size_t)n, sizeof *en->masked);
    en->pos = um_calloc((size_t)n, sizeof *en->pos);
    en->elig = um_calloc((size_t)n, sizeof *en->elig);
    en->rows = um_calloc((size_t)n, sizeof *en->rows);
    en->canvas_u = um_calloc((size_t)n, sizeof *en->canvas_u);
    en->picks = um_calloc((size_t)n, sizeof *en->picks);
    en->scored = um_calloc((size_t)n, sizeof *en->scored);
    en->committed = um_calloc((size_t)n, sizeof *en->committed);
    en->why = um_calloc((size_t)n, sizeof *en->why);
    en->active = um_calloc((size_t)n, sizeof *en->active);
    en->kv_masked = um_calloc((size_t)n, sizeof *en->kv_masked);
    en->in_active = um_calloc((size_t)n, sizeof *en->in_active);
    /* a uniform-state step asks for the rows of one canvas, and keeps the last step's for
       self-conditioning; a masked step for every eligible position */
    const bool uniform = en->model->hp.uniform_state;
    const size_t rows = uniform ? (size_t)UM_MIN(n, en->model->hp.canvas_length) : (size_t)n;
    en->logits = um_malloc_aligned(rows * V * sizeof(float));
    if (uniform) en->sc_logits = um_malloc_aligned(rows * V * sizeof(float));
    if (!en->tokens || !en->masked || !en->pos || !en->elig || !en->rows || !en->canvas_u || !en->picks ||
        !en->scored || !en->committed || !en->why || !en->active || !en->kv_masked || !en->in_active || !en->logits ||
        (uniform && !en->sc_logits)) {
        free_canvas(en);
        return um_errf(e, "out of memory for a canvas of %d tokens (%zu MB of logits)", n, rows * V * 4 >> 20);
    }
    en->cap = n;
    /* growing the backend's buffers drops the prompt K/V it may hold for a sharing engine */
    en->sh->dg_owner = NULL;
    return en->be.reserve(en->be.impl, n, e);
}

/* The context rule (engine.h, engine_start): one place for generate, record and the visualizer. */
static int check_context(const um_engine *en, int64_t n_prompt, int64_t n_gen, um_err *e) {
    const int64_t total = n_prompt + n_gen;
    if (total <= en->n_ctx) return UM_OK;
    if (en->ctx_explicit)
        return um_errf(e, "prompt of %" PRId64 " tokens + %" PRId64 " to generate = %" PRId64 " exceeds the context of "
                       "%d tokens set by --ctx", n_prompt, n_gen, total, en->n_ctx);
    return um_errf(e, "prompt of %" PRId64 " tokens + %" PRId64 " to generate = %" PRId64 " exceeds the model's trained "
                   "context of %d tokens (--ctx N allows more, with a warning)", n_prompt, n_gen, total, en->n_ctx);
}

static int check_settings(const um_engine *en, const um_settings *s, um_err *e) {
    if (s->n_gen <= 0) return um_errf(e, "--gen must be positive (got %d)", s->n_gen);
    if (!schedule_adaptive(s->schedule) && s->steps <= 0) return um_errf(e, "--steps must be positive (got %d)", s->steps);
    if (s->schedule >= UM_SCHED_COUNT || s->score >= UM_SCORE_COUNT) return um_errf(e, "unknown schedule or scoring");
    if (s->temperature < 0) return um_errf(e, "temperature must be >= 0");
    if (s->top_p <= 0 || s->top_p > 1) return um_errf(e, "top-p must be in (0, 1]");
    if (s->cfg < 0) return um_errf(e, "cfg must be >= 0");
    if (s->factor <= 0 && s->schedule == UM_SCHED_FACTOR) return um_errf(e, "--factor must be > 0");
    if (s->eb_gamma < 0) return um_errf(e, "--eb-gamma must be >= 0");
    if (s->cache >= UM_CACHE_COUNT || s->cache_type >= UM_KV_STORE_COUNT) return um_errf(e, "unknown cache mode or type");
    if (s->cache_refresh < 0 || s->cache_drift < 0) return um_errf(e, "--cache-refresh and --cache-drift must be >= 0");
    if (!(s->edit_threshold >= 0 && s->edit_threshold <= 1)) return um_errf(e, "--edit-threshold must be in [0, 1]");
    if (s->post_steps < 0 || s->block_steps < 0) return um_errf(e, "--post-steps and --block-steps must be >= 0");
    /* uniform: the file decodes uniform-state; dg: with DiffusionGemma's own pass (a prompt
       K/V cache, self-conditioning), else with the architecture's ordinary pass (engine_uniform.c) */
    const bool uniform = en->model->hp.uniform_state, dg = en->model->arch->uniform_state;
    if (uniform != (s->schedule == UM_SCHED_UNIFORM)) {
        if (uniform && !dg)
            return um_errf(e, "this %s file is a uniform-state model (" UM_UNIFORM_STATE_KEY " = true): it decodes with "
                           "the uniform schedule only", en->model->arch->family);
        return uniform ? um_errf(e, "%s is a uniform-state model: it decodes with the uniform schedule only",
                                 en->model->arch->family)
                       : um_errf(e, "the uniform schedule is for uniform-state models (this is %s)", en->model->arch->family);
    }
    if (uniform) {
        if (dg && !en->be.run_dg)
            return um_errf(e, "the %s backend does not run %s yet (use the CPU backend)", en->be.name, en->model->arch->name);
        if (s->us_canvas != en->model->hp.canvas_length)
            return um_errf(e, "the canvas is the file's diffusion.canvas_length (%d), not %d", en->model->hp.canvas_length,
                           s->us_canvas);
        if (s->cfg > 0)
            return um_errf(e, "--cfg: a uniform-state model has no masked prompt to guide against");
        if (!dg && s->cache != UM_CACHE_NONE)
            return um_errf(e, "--cache %s: this uniform-state %s model attends both ways over [prompt | canvas], so the "
                           "prompt's K/V change with the canvas every step: nothing to keep (--cache none)",
                           engine_cache_name(s->cache), en->model->arch->family);
        if (!dg && s->us_self_cond)
            return um_errf(e, "--self-cond: this uniform-state %s file has no self-conditioning weights "
                           "(self_cond_*): off only", en->model->arch->family);
        if (s->cache == UM_CACHE_DUAL || (s->cache == UM_CACHE_PREFIX && !en->be.dg_prompt))
            return um_errf(e, "--cache %s: a uniform-state model keeps the prompt's K/V (prefix) or nothing (none)",
                           engine_cache_name(s->cache));
        if (!(s->us_t_min > 0) || !(s->us_t_max > 0) || !(s->us_bound >= 0) || !(s->us_confidence >= 0) ||
            s->us_stability < 0 || s->steps <= 0)
            return um_errf(e, "uniform-state settings: temperatures > 0, bound and confidence >= 0, steps >= 1");
        if (s->us_self_cond && (s->us_sc_mode < 0 || s->us_sc_mode > 2 ||
                                (s->us_sc_mode != 0 && (s->us_sc_top_k < 1 || s->us_sc_top_k >= en->model->hp.n_vocab))))
            return um_errf(e, "self-conditioning: mode exact, topk or auto, top-k in [1, %d)", en->model->hp.n_vocab);
        return UM_OK;
    }
    if (s->cache != UM_CACHE_NONE && !en->be.run_kv)
        return um_errf(e, "--cache %s needs partial forward passes, which the %s backend does not run yet "
                       "(use --cache none, or the CPU backend)", engine_cache_name(s->cache), en->be.name);
    return UM_OK;
}

static const uint32_t kv_types[UM_KV_STORE_COUNT] = { [UM_KV_F16] = UM_TYPE_F16, [UM_KV_F32] = UM_TYPE_F32,
                                                      [UM_KV_Q8_0] = UM_TYPE_Q8_0 };

/* The caches for the current canvas, settings.cache_type and guidance: made when missing,
 * too small or of another type (a cache mode switched on mid-run, a longer canvas), so in a
 * steady run this allocates once, at engine_start. */
static int ensure_kv(um_engine *en, um_err *e) {
    const int nb = en->set.cfg > 0 ? 2 : 1;
    if (en->kv_cap < en->n_canvas || en->kv_store != en->set.cache_type || (nb == 2 && !en->kv[1])) {
        free_kv(en);
        for (int b = 0; b < nb; b++)
            if (en->be.kv_new(en->be.impl, kv_types[en->set.cache_type], en->cap, &en->kv[b], e)) {
                free_kv(en);
                return UM_FAIL;
            }
        en->kv_cap = en->cap;
        en->kv_store = en->set.cache_type;
    }
    return UM_OK;
}

static int start_tokens(um_engine *en, const int32_t *ids, int n, const um_settings *s, um_err *e) {
    if (check_settings(en, s, e)) return UM_FAIL;
    const int V = en->model->hp.n_vocab;
    for (int i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= V) return um_errf(e, "prompt token %d at position %d is outside the vocabulary", ids[i], i);
    if (n == 0 && en->model->hp.shift_logits)
        return um_errf(e, "this model scores position i from row i-1, so it needs a non-empty prompt");
    /* uniform-state: whole canvases, ceil(n_gen / canvas) of them */
    const bool uniform = s->schedule == UM_SCHED_UNIFORM;
    const int64_t gen = uniform ? ((int64_t)s->n_gen + s->us_canvas - 1) / s->us_canvas * s->us_canvas : s->n_gen;
    int64_t total = (int64_t)n + gen;
    if (check_context(en, n, gen, e)) return UM_FAIL;
    if (reserve(en, (int)total, e)) return UM_FAIL;
    en->set = *s;
    en->n_prompt = n;
    en->n_canvas = (int32_t)total;
    en->steps_done = 0;
    en->passes = 0;
    en->rows_total = 0;
    en->kv_valid = false;
    en->done = false;
    schedule_mdm_start(&en->mdm);
    memset(en->pos, 0, (size_t)total * sizeof *en->pos);
    for (int i = 0; i < en->n_canvas; i++) {
        bool prompt = i < n;
        en->tokens[i] = prompt ? ids[i] : en->mask_id;
        en->masked[i] = !prompt;
        en->pos[i].token = en->tokens[i];
        en->pos[i].masked = !prompt;
        en->pos[i].is_prompt = prompt;
        en->pos[i].commit_step = -1;
        en->pos[i].edit_step = -1;
        en->pos[i].edit_from = -1;
    }
    if (uniform) {
        if (total > en->model->hp.n_ctx_train && en->warn) {
            char msg[256];
            snprintf(msg, sizeof msg, "prompt of %d tokens + %" PRId64 " to generate = %" PRId64 " exceeds the model's "
                     "trained context of %d tokens; running it because --ctx %d allows it", n, gen, total,
                     en->model->hp.n_ctx_train, en->n_ctx);
            en->warn(en->warn_ctx, msg);
        }
        return engine_uniform_start(en, e);
    }
    if (s->cfg > 0 && !en->logits_u) {
        en->logits_u = um_malloc_aligned((size_t)en->cap * (size_t)V * sizeof(float));
        if (!en->logits_u) return um_errf(e, "out of memory for classifier-free guidance");
    }
    if (s->cache != UM_CACHE_NONE && ensure_kv(en, e)) return UM_FAIL;
    um_plan plan;
    if (schedule_plan(&en->set, en->n_prompt, s->n_gen, en->masked, 0, &plan, e)) return UM_FAIL;
    if (total > en->model->hp.n_ctx_train && en->warn) {
        char msg[256];
        snprintf(msg, sizeof msg, "prompt of %d tokens + %d to generate = %" PRId64 " exceeds the model's trained "
                 "context of %d tokens; running it because --ctx %d allows it (expect worse text past it)",
                 n, s->n_gen, total, en->model->hp.n_ctx_train, en->n_ctx);
        en->warn(en->warn_ctx, msg);
    }
    return engine_publish(en, &plan, 0, 0, 0, 0, NULL, e);
}

/* Starts and steps are the engine's turns on the (maybe shared) model: reserve, the caches
 * and every pass use its backend and pool. */
int engine_start_tokens(um_engine *en, const int32_t *ids, int n, const um_settings *s, um_err *e) {
    engine_turn_begin(en->sh);
    int rc = start_tokens(en, ids, n, s, e);
    engine_turn_end(en->sh);
    engine_set_live(en, rc == UM_OK && !en->done);
    return rc;
}

int engine_start(um_engine *en, const char *prompt, const um_settings *s, um_err *e) {
    char *text = NULL;
    const tok_specials *sp = tok_special(en->tok);
    const char *bos_text = NULL;
    size_t bos_len = 0;
    char bos_buf[128] = "";
    if (sp->bos >= 0) {
        bos_text = tok_text(en->tok, sp->bos, &bos_len);
        if (bos_len < sizeof bos_buf) { memcpy(bos_buf, bos_text, bos_len); bos_buf[bos_len] = '\0'; bos_text = bos_buf; }
        else bos_text = NULL;
    }
    if (en->chat_file ? chat_custom_format(en->chat_file, en->system, prompt, bos_text, &text, e)
                      : chat_format(en->chat, en->system, prompt, bos_text, &text, e)) return UM_FAIL;
    /* BOS: the template's text already holds it, or the tokenizer adds it as the file says */
    unsigned flags = TOK_PARSE_SPECIAL | ((en->chat_file ? chat_custom_has_bos(en->chat_file) : chat_has_bos(en->chat)) ? 0 : TOK_ADD_SPECIAL);
    int32_t *ids = NULL;
    size_t n = 0;
    int rc = tok_encode(en->tok, text, strlen(text), flags, &ids, &n, e);
    free(text);
    if (rc) return UM_FAIL;
    /* the EOS the tokenizer may append belongs to training text, not to a prompt */
    if (n > 0 && sp->add_eos && ids[n - 1] == sp->eos) n--;
    if (n > (size_t)en->n_ctx) {                 /* also keeps n within int */
        free(ids);
        check_context(en, (int64_t)n, UM_MAX(s->n_gen, 0), e);   /* fails: n alone is past the limit */
        return UM_FAIL;
    }
    rc = engine_start_tokens(en, ids, (int)n, s, e);
    free(ids);
    return rc;
}

int engine_set(um_engine *en, const um_settings *s) {
    int restart = snapshot_needs_restart(&en->set, s);
    um_settings keep = en->set;
    en->set = *s;
    if (check_settings(en, s, NULL)) { en->set = keep; return -1; }
    return restart;
}

/* ------------------------------------------------------------------ step */

typedef struct pick_job {
    um_engine *en;
    int n;
    int64_t step;
    int failed;
    um_err err;
} pick_job;

static void pick_one(void *arg, int64_t i, int tid) {
    pick_job *j = arg;
    um_engine *en = j->en;
    const size_t V = (size_t)en->model->hp.n_vocab;
    um_err e;
    if (sampler_pick(en->logits + (size_t)i * V, (int32_t)V, en->mask_id, &en->set, j->step, en->elig[i],
                     en->ws[tid], &en->picks[i], &e)) {
        if (!j->failed) { j->failed = 1; j->err = e; }
    }
}

/* Plans the step's forward passes into sp (they run later: engine_run_step_passes, or batched
 * with other engines'): logits (and logits_u with guidance) for rows[0..n). Without a
 * cache, full passes as they always were. With one, a refresh (full passes that refill the
 * caches) when the cache is empty, the mode or the active block changed, cache_refresh steps
 * have passed or the last drift passed cache_drift; otherwise partial passes over the
 * positions masked at the refresh within the region (dual: the active block; prefix: from
 * its start to the canvas end) plus the logits rows. Every other position's token is the
 * same as at the refresh (only masked positions change), so its cached K/V are stale only
 * through the context that changed around it. */
static int step_passes(um_engine *en, const um_plan *plan, int n, int *n_view, step_work *w, step_pass *sp, um_err *e) {
    const um_settings *s = &en->set;
    const int T = en->n_canvas, nb = s->cfg > 0 ? 2 : 1;
    if (nb == 2)
        for (int i = 0; i < T; i++) en->canvas_u[i] = i < en->n_prompt ? en->mask_id : en->tokens[i];
    const int32_t *canvas[2] = { en->tokens, en->canvas_u };
    float *out[2] = { en->logits, en->logits_u };
    for (int i = 0; i < T; i++) en->pos[i].cached = false;
    w->passes = nb;
    w->rows = nb * T;
    memset(sp, 0, sizeof *sp);
    sp->np = nb;
    for (int b = 0; b < nb; b++)
        sp->p[b] = (um_pass){ .tokens = canvas[b], .n_tokens = T, .rows = en->rows, .n_rows = n + *n_view, .logits = out[b] };
    if (s->cache == UM_CACHE_NONE) {
        en->kv_valid = false;
        return UM_OK;
    }
    if (ensure_kv(en, e)) return UM_FAIL;
    for (int b = 0; b < nb; b++) sp->p[b].kv = en->kv[b];
    const bool due = !en->kv_valid || s->cache != en->kv_mode ||
                     (s->cache_refresh > 0 && en->steps_done - en->kv_step >= s->cache_refresh) ||
                     (s->cache_drift > 0 && en->kv_drift > s->cache_drift);
    const bool moved = plan->start != en->kv_start || plan->end != en->kv_end;
    /* Block-causal attention: when the active block moves on, nothing before the block just
     * left changes any more, and its own K/V lack only its last commits; so instead of a full
     * pass, the partial pass below starts at that block (advance) and stops at the end of the
     * new active block's attention block: no position attends to a later block. */
    const bool advance = en->attn_block > 0 && !due && moved;
    sp->refresh = due || (moved && !advance);
    if (sp->refresh) {
        en->kv_valid = false;
        return UM_OK;
    }
    /* Block-causal attention: the active block's attention blocks (from the multiple of
     * attn_block at or below its start, so the prompt's tail in it too, to the multiple at or
     * above its end) are recomputed whole, since their positions see each other; everything
     * before them is final and nothing after them is seen. After an advance the block just
     * left is recomputed too. With editing, committed tokens of the active block change too,
     * so the whole block is recomputed. */
    const int ab = en->attn_block;
    const int first = advance ? UM_MIN(en->kv_start, plan->start) : plan->start;
    const int lo = ab > 0 ? first - first % ab : plan->start;
    const int hi = ab > 0 ? UM_MIN(T, (plan->end + ab - 1) / ab * ab) : s->cache == UM_CACHE_PREFIX ? T : plan->end;
    int na = 0;
    memset(en->in_active, 0, (size_t)T * sizeof *en->in_active);
    for (int i = lo; i < hi; i++) {
        bool whole = ab > 0 || (i < plan->end && s->edit && i >= plan->start);
        if (whole || en->kv_masked[i]) { en->active[na++] = i; en->in_active[i] = true; }
    }
    for (int i = 0; i < n; i++)
        if (!en->in_active[en->rows[i]]) { en->active[na++] = en->rows[i]; en->in_active[en->rows[i]] = true; }
    int nv = 0;                    /* view-only rows: just those this pass computes anyway */
    for (int i = n; i < n + *n_view; i++)
        if (en->in_active[en->rows[i]]) { en->elig[n + nv] = en->elig[i]; en->rows[n + nv] = en->rows[i]; nv++; }
    *n_view = nv;
    for (int b = 0; b < nb; b++) {
        sp->p[b].active = en->active;
        sp->p[b].n_active = na;
        sp->p[b].n_rows = n + nv;
        sp->p[b].drift = &sp->drift[b];
    }
    w->rows = nb * na;
    return UM_OK;
}

/* The planned passes on this engine's backend alone, one after another. */
int engine_run_step_passes(um_engine *en, step_pass *sp, um_err *e) {
    for (int b = 0; b < sp->np; b++) {
        const um_pass *p = &sp->p[b];
        if (p->kv ? en->be.run_kv(en->be.impl, p->kv, p->tokens, p->n_tokens, p->active, p->n_active, p->rows,
                                  p->n_rows, p->logits, p->drift, e)
                  : en->be.run(en->be.impl, p->tokens, p->n_tokens, p->rows, p->n_rows, p->logits, e))
            return UM_FAIL;
    }
    return UM_OK;
}

/* After the passes ran: what the caches hold now. */
static void step_passes_done(um_engine *en, const um_plan *plan, step_work *w, const step_pass *sp) {
    const um_settings *s = &en->set;
    const int T = en->n_canvas;
    if (s->cache == UM_CACHE_NONE) return;
    if (sp->refresh) {
        memcpy(en->kv_masked, en->masked, (size_t)T * sizeof *en->masked);
        en->kv_valid = true;
        en->kv_mode = s->cache;
        en->kv_start = plan->start;
        en->kv_end = plan->end;
        en->kv_step = en->steps_done;
        en->kv_drift = 0;
        w->refreshed = true;
        return;
    }
    float drift = 0;
    for (int b = 0; b < sp->np; b++) drift = UM_MAX(drift, sp->drift[b]);
    en->kv_drift = drift;
    en->kv_start = plan->start;
    en->kv_end = plan->end;
    for (int i = 0; i < T; i++) en->pos[i].cached = !en->in_active[i];
}

static bool block_all_eog(const um_engine *en, const um_plan *p) {
    for (int i = p->start; i < p->end; i++)
        if (en->masked[i] || !tok_is_eog(en->tok, en->tokens[i])) return false;
    return p->end > p->start;
}

/* LLaDA 2.x's end-of-text stop (eos_early_stop): the first end-of-generation token of the
 * generated part, when every position before it is committed; -1 otherwise. */
static int32_t first_final_eog(const um_engine *en) {
    for (int32_t i = en->n_prompt; i < en->n_canvas; i++) {
        if (en->masked[i]) return -1;
        if (tok_is_eog(en->tok, en->tokens[i])) return i;
    }
    return -1;
}

/* Stop the run: every mask left becomes the end-of-text token, committed at this step. */
static void fill_eos(um_engine *en, int32_t from) {
    int32_t eos = tok_special(en->tok)->eos;
    for (int i = from; i < en->n_canvas; i++)
        if (en->masked[i]) {
            en->tokens[i] = eos;
            en->masked[i] = false;
            en->pos[i].token = eos;
            en->pos[i].masked = false;
            en->pos[i].commit_step = en->steps_done;
            en->pos[i].commit_conf = 0;
            en->pos[i].why = (um_why){ .rule = UM_WHY_EOS };
        }
    schedule_mdm_stop(&en->mdm);
}

static bool range_has_mask(const um_engine *en, int32_t lo, int32_t hi) {
    for (int32_t i = lo; i < hi; i++) if (en->masked[i]) return true;
    return false;
}

/* The masked step's plan, its passes' end and a step alone: engine_impl.h. */
int engine_step_prep(um_engine *en, step_ctx *c, um_err *e) {
    if (en->done || !en->snap) return PREP_NONE;
    um_plan plan;
    const int n_gen = en->n_canvas - en->n_prompt;
    /* the schedule's complete plan: an edit-only step (LLaDA 2.1) or the active block's,
       with the threshold quota of its in-block step */
    if (schedule_mdm_plan(&en->mdm, &en->set, en->n_prompt, n_gen, en->masked, en->steps_done, &plan, e))
        return PREP_FAIL;
    const bool post = plan.post;
    if (plan.done) {
        en->done = true;
        c->plan = plan;
        return PREP_PUBLISH;
    }
    const bool shift = en->model->hp.shift_logits;
    /* elig[0..n_mask): the masks of the active block; then, with editing, its committed
       generated positions (LLaDA 2.1: every non-mask, non-prompt position of the block) */
    int n = 0;
    for (int i = plan.start; i < plan.end; i++) {
        if (!en->masked[i]) continue;
        en->elig[n] = i;
        en->rows[n] = shift ? i - 1 : i;
        n++;
    }
    const int n_mask = n;
    if (en->set.edit)
        for (int i = plan.start; i < plan.end; i++) {
            if (en->masked[i] || i < en->n_prompt) continue;
            en->elig[n] = i;
            en->rows[n] = shift ? i - 1 : i;
            n++;
        }
    /* view_ahead: every mask after the active block, viewed (top-k, entropy) but never
       eligible: elig[n..n+n_view). A full pass computes their hidden states anyway; the extra
       cost is their output-projection rows and sampler scans. A cached pass keeps only the
       rows it computes (step_passes). */
    int n_view = 0;
    for (int i = plan.end; en->view_ahead && !post && i < en->n_canvas; i++)
        if (en->masked[i]) { en->elig[n + n_view] = i; en->rows[n + n_view] = shift ? i - 1 : i; n_view++; }
    /* with shifting, rows i-1 are distinct because the prompt is never empty (engine_start) */
    c->t0 = um_now();
    c->work = (step_work){ .post = post };
    c->plan = plan;
    c->post = post;
    c->n = n;
    c->n_mask = n_mask;
    if (step_passes(en, &c->plan, n, &n_view, &c->work, &c->sp, e)) return PREP_FAIL;
    c->n_view = n_view;
    return PREP_RUN;
}

int engine_step_finish(um_engine *en, step_ctx *c, um_err *e) {
    um_plan plan = c->plan;
    const int n_gen = en->n_canvas - en->n_prompt;
    const bool post = c->post;
    const int n = c->n, n_mask = c->n_mask, n_view = c->n_view;
    const double t0 = c->t0;
    step_work work = c->work;
    step_passes_done(en, &plan, &work, &c->sp);
    en->passes += work.passes;
    en->rows_total += work.rows;
    if (en->set.cfg > 0)
        sampler_cfg(en->logits, en->logits, en->logits_u, (int64_t)(n + n_view) * en->model->hp.n_vocab, en->set.cfg);
    double t1 = um_now();
    const int64_t step = en->steps_done;
    pick_job job = { .en = en, .n = n + n_view, .step = step };
    pool_for(en->pool, n + n_view, pick_one, &job);
    if (job.failed) { *e = job.err; return UM_FAIL; }
    for (int i = 0; i < n_mask; i++) {
        en->scored[i].pos = en->elig[i];
        en->scored[i].score = schedule_score(en->set.score, &en->picks[i], en->set.seed, step, en->elig[i]);
        en->scored[i].entropy = -en->picks[i].neg_entropy;
        en->scored[i].key = 0;
    }
    /* the model's view of every eligible (and viewed) position, before commits reorder scored[] */
    for (int i = 0; i < n + n_view; i++) {
        um_pos *p = &en->pos[en->elig[i]];
        const um_pick *pk = &en->picks[i];
        p->has_view = true;
        p->view_step = (int32_t)step + 1;
        memset(p->top, 0, sizeof p->top);
        for (int k = 0; k < pk->n_top && k < UM_TOPK; k++) p->top[k] = pk->top[k];
        p->entropy = pk->entropy;
    }
    for (int i = 0; i < en->n_canvas; i++) en->pos[i].fresh = en->pos[i].edited = false;
    /* T2T first, from the tokens as they were before this step (the commits below touch only
       masks): LLaDA 2.1 replaces a committed token whose model choice differs and has
       probability > editing_threshold */
    for (int i = n_mask; i < n; i++) {
        const um_pick *pk = &en->picks[i];
        int32_t p = en->elig[i];
        if (pk->token == en->tokens[p] || !(pk->prob > en->set.edit_threshold)) continue;
        um_pos *ps = &en->pos[p];
        ps->edit_from = en->tokens[p];
        ps->edit_step = (int32_t)step + 1;
        ps->n_edits++;
        ps->edited = true;
        ps->token = pk->token;
        ps->commit_conf = pk->prob;
        en->tokens[p] = pk->token;
        work.n_edited++;
    }
    int32_t k = schedule_select(&en->set, &plan, step, en->scored, n_mask);
    schedule_explain(&en->set, &plan, en->scored, n_mask, k, en->why);
    /* picks are indexed like elig[]; find each committed position's pick */
    for (int ci = 0; ci < k; ci++) {
        int32_t p = en->scored[ci].pos;
        int idx = -1;
        for (int i = 0; i < n_mask; i++) if (en->elig[i] == p) { idx = i; break; }
        const um_pick *pk = &en->picks[idx];
        en->tokens[p] = pk->token;
        en->masked[p] = false;
        um_pos *ps = &en->pos[p];
        ps->token = pk->token;
        ps->masked = false;
        ps->fresh = true;
        ps->commit_step = (int32_t)step + 1;
        ps->commit_conf = pk->prob;
        ps->why = en->why[ci];
        en->committed[ci] = p;
    }
    en->steps_done++;
    double t2 = um_now();
    /* the in-block step count; editing: after the step that fills a block, up to post_steps
       edit-only steps on it, ending after one that edits nothing (LLaDA 2.1 max_post_steps) */
    schedule_mdm_after(&en->mdm, &en->set, &plan, work.n_edited, !range_has_mask(en, plan.start, plan.end));
    /* done when no mask is left and no post step is due; optionally stop once a finished
       block is all end-of-text, or (LLaDA 2.x) at the first end of text with everything before
       it committed -- with editing only once the block and its post steps are done, since an
       edit may still replace that token */
    um_plan after;
    if (schedule_plan(&en->set, en->n_prompt, n_gen, en->masked, en->steps_done, &after, e)) return UM_FAIL;
    if (!post && !after.done && en->set.stop_at_eos && after.block > plan.block && block_all_eog(en, &plan)) {
        fill_eos(en, plan.end);
        after.done = true;
    }
    if (en->set.eos_early_stop && !(after.done && !schedule_mdm_post_due(&en->mdm)) &&
        (!en->set.edit || (!schedule_mdm_post_due(&en->mdm) && !range_has_mask(en, plan.start, plan.end)))) {
        int32_t eog = first_final_eog(en);
        if (eog >= 0) {
            fill_eos(en, eog + 1);
            after.done = true;
        }
    }
    en->done = after.done && !schedule_mdm_post_due(&en->mdm);
    if (engine_publish(en, &plan, k, plan.count, (t1 - t0) * 1e3, (t2 - t1) * 1e3, &work, e)) return UM_FAIL;
    return 1;
}

/* A step on the engine's own: plan, passes, finish, all in its turn. */
int engine_step_alone(um_engine *en, um_err *e) {
    if (en->set.schedule == UM_SCHED_UNIFORM) return en->done || !en->snap ? 0 : engine_uniform_step(en, e);
    step_ctx c;
    switch (engine_step_prep(en, &c, e)) {
    case PREP_FAIL: return UM_FAIL;
    case PREP_NONE: return 0;
    case PREP_PUBLISH: return engine_publish(en, &c.plan, 0, 0, 0, 0, NULL, e) ? UM_FAIL : 0;
    default: break;
    }
    if (engine_run_step_passes(en, &c.sp, e)) return UM_FAIL;
    return engine_step_finish(en, &c, e);
}

int64_t engine_forward_passes(const um_engine *en) { return en->passes; }
int64_t engine_rows_computed(const um_engine *en) { return en->rows_total; }


/* ------------------------------------------------------------------ text */

const uint8_t *engine_token_bytes(const um_engine *en, int32_t token, size_t *len) {
    tok_type ty = tok_get_type(en->tok, token);
    if (ty == TOK_TYPE_CONTROL || ty == TOK_TYPE_USER_DEFINED || ty == TOK_TYPE_UNKNOWN || ty == TOK_TYPE_UNUSED)
        return (const uint8_t *)tok_text(en->tok, token, len);
    return tok_piece(en->tok, token, len);
}

bool engine_token_is_eog(const um_engine *en, int32_t token) { return tok_is_eog(en->tok, token); }

bool engine_token_is_special(const um_engine *en, int32_t token) {
    tok_type ty = tok_get_type(en->tok, token);
    return ty == TOK_TYPE_CONTROL || ty == TOK_TYPE_UNKNOWN || ty == TOK_TYPE_UNUSED;
}

char *engine_answer(const um_engine *en, const um_snapshot *s) {
    int32_t *ids = um_malloc((size_t)(s->n_canvas + 1) * sizeof *ids);
    if (!ids) return NULL;
    size_t n = 0;
    for (int i = s->n_prompt; i < s->n_canvas; i++) {
        const um_pos *p = &s->pos[i];
        if (p->us == UM_US_NOISE) break;         /* a canvas not denoised yet */
        if (p->masked) continue;
        if (tok_is_eog(en->tok, p->token)) break;
        ids[n++] = p->token;
    }
    char *out = NULL;
    size_t len;
    if (tok_decode(en->tok, ids, n, 0, &out, &len, NULL)) out = NULL;
    free(ids);
    return out;
}
