/*
 * engine_defaults: each family's official decoding settings (engine_family_defaults) and a
 * model's (engine_default_settings: the family's, then what the file itself says). The
 * sources of every value are cited beside it; docs/decoding.md has the table.
 */
#include "engine_impl.h"

#include <string.h>

/* The entropy-bound sampler with llama.cpp's diffusion-cli defaults (the file's diffusion.eb_*
 * replace them: engine_default_settings), one canvas of 256; no self-conditioning, no cache. */
static void uniform_sampler(um_settings *s) {
    s->schedule = UM_SCHED_UNIFORM;
    s->score = UM_SCORE_ENTROPY;
    s->steps = 48;
    s->us_canvas = 256;
    s->n_gen = 256;
    s->us_t_min = 0.4f;
    s->us_t_max = 0.8f;
    s->us_bound = 0.1f;
    s->us_stability = 1;
    s->us_confidence = 0.005f;
    s->us_self_cond = false;        /* mode auto, K = 256 when it is switched on */
    s->us_sc_mode = 2;
    s->us_sc_top_k = 256;
    s->block_len = 0;
    s->cache = UM_CACHE_NONE;
}

/* What every family shares. */
static void common_defaults(um_settings *s) {
    memset(s, 0, sizeof *s);
    s->n_gen = 128;
    s->steps = 128;
    s->block_len = 32;
    s->eps = 1e-3f;
    s->threshold = 0.9f;
    s->factor = 1.0f;
    s->eb_gamma = 1.0f;
    s->top_p = 1.0f;
    s->seed = 42;
    s->edit_threshold = UM_EDIT_THRESHOLD_DEFAULT;
    s->post_steps = UM_POST_STEPS_DEFAULT;
}

void engine_family_defaults(const char *a, bool block_causal, int32_t block_size, bool can_cache, um_settings *s) {
    common_defaults(s);
    if (!strcmp(a, "diffusion-gemma")) {
        /* DiffusionGemma: self-conditioning auto K = 256 (docs/decoding.md), the prompt's K/V
         * once per canvas */
        uniform_sampler(s);
        s->us_self_cond = true;
        s->cache = can_cache ? UM_CACHE_PREFIX : UM_CACHE_NONE;
        s->cache_type = UM_KV_F32;
    } else if (block_causal) {
        /* LLaDA 2.x (modeling_llada2_moe.py generate(), LLaDA2.0-mini and LLaDA2.1-mini):
         * blocks of block_length aligned to canvas position 0, in each the masks whose
         * confidence passes threshold 0.95 with at least get_num_transfer_tokens(32, steps 32)
         * = 1 per step, greedy at temperature 0, stop at end of text. Finished blocks and the
         * prompt never change and attend only to themselves and earlier blocks, so their K/V
         * are final: the prefix cache is exact here and on by default (docs/decoding.md).
         * Editing (LLaDA 2.1) stays off until asked: LLaDA 2.0 was not trained for it. */
        s->schedule = UM_SCHED_THRESHOLD;
        s->score = UM_SCORE_CONFIDENCE;
        s->threshold = 0.95f;
        s->block_len = block_size > 0 ? block_size : 32;
        s->block_aligned = true;
        s->block_steps = 32;
        s->temperature = 0.0f;
        s->gumbel = false;
        s->eos_early_stop = true;
        s->cache = can_cache ? UM_CACHE_PREFIX : UM_CACHE_NONE;
        s->cache_type = UM_KV_F32;      /* f16 would round the cached K/V: f32 keeps it bit-exact */
    } else if (!strcmp(a, "dream") || !strcmp(a, "rnd1")) {
        /* Dream's README: timestep schedule with eps, entropy ordering; RND1's sampler keeps
         * floor(N (S-k-1)/S) masks after step k (the linear schedule) */
        s->schedule = !strcmp(a, "dream") ? UM_SCHED_TIMESTEP : UM_SCHED_LINEAR;
        s->score = UM_SCORE_ENTROPY;
        s->block_len = 0;
        s->temperature = !strcmp(a, "dream") ? 0.2f : 0.1f;
        s->top_p = !strcmp(a, "dream") ? 0.95f : 1.0f;
        s->gumbel = false;
    } else {
        /* LLaDA generate.py: semi-autoregressive blocks, low-confidence remasking, greedy */
        s->schedule = UM_SCHED_BLOCK;
        s->score = UM_SCORE_CONFIDENCE;
        s->temperature = 0.0f;
        s->gumbel = true;
    }
}

void engine_default_settings(const um_engine *en, um_settings *s) {
    const um_model *m = en->model;
    const bool uniform = m->hp.uniform_state, dg = m->arch->uniform_state;
    if (uniform && !dg) {
        /* a masked architecture's file that says unmask.uniform_state: the sampler alone, with
         * neither self-conditioning (no such weights) nor a prompt cache (the prompt attends
         * to the canvas), whatever its family decodes masks with */
        common_defaults(s);
        uniform_sampler(s);
    } else {
        engine_family_defaults(m->arch->name, m->arch->block_causal, m->hp.block_size,
                               dg ? en->be.dg_prompt != NULL : en->be.run_kv != NULL, s);
    }
    if (uniform) {              /* the file's sampler settings (model.c read them, defaults when absent) */
        const um_hparams *hp = &m->hp;
        s->us_canvas = hp->canvas_length;
        s->n_gen = hp->canvas_length;
        s->steps = hp->eb_max_steps;
        s->us_t_min = hp->eb_t_min;
        s->us_t_max = hp->eb_t_max;
        s->us_bound = hp->eb_entropy_bound;
        s->us_stability = hp->eb_stability;
        s->us_confidence = hp->eb_confidence;
        if (s->us_sc_top_k >= hp->n_vocab) s->us_sc_mode = 0;    /* a vocabulary that small: exact */
    }
}

