/*
 * fake_source: deterministic synthetic denoising (see fake_source.h).
 *
 * Model of the fake "network": every generated position i has a hidden target token.
 * At progress f in [0,1] (steps done / planned) the target's probability is
 * sigmoid(8 f - 2 + n_i) with n_i a fixed per-position offset, sharpened or flattened by
 * the temperature; the rest of the mass goes to distractors drawn from a hash of
 * (seed, i, step). Top-k, entropy and the committed token (always the current top-1)
 * follow from that. Everything random comes from a hash of (seed, position, step), so
 * snapshots depend only on seed, settings and prompt.
 *
 * How many positions commit per step, in which block and which ones come from schedule.h
 * (schedule_plan, schedule_select on the fake scores, schedule_explain for the inspector's
 * why line), exactly as in the engine, so the demo's schedule panel matches a real run with
 * the same settings; only the scores and tokens are made up.
 *
 * K/V cache (settings.cache): which rows a step would recompute follows the engine's rule
 * (src/decode/engine.c, step_forward): a refresh (every row) when the cache is empty, the
 * mode or the active block changed, or cache_refresh steps have passed; otherwise the
 * positions masked at the refresh within the cache's region (dual: the active block;
 * prefix: from its start to the canvas end), every other position marked cached. There is
 * no drift to measure, so cache_drift never triggers a refresh. The cache's size is made up:
 * a pretend 4 layers of 64-wide K and V per position (FAKE_KV_ELEMS) in the storage type.
 * fake_source_open_nocache stands in for a backend without partial passes (the CUDA one):
 * info.can_cache is false and a start with a cache fails as the engine's does.
 *
 * Invariants: canvas arrays are allocated at start and never resized during a run;
 * published snapshots are single allocations freed when their reference count drops
 * to zero.
 */
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fake_source.h"
#include "schedule.h"
#include "snapshot.h"

/* ------------------------------------------------------------------ vocabulary */

static const char *const fake_words[] = {
    "<mask>", "<eos>",
    " The", " quick", " brown", " fox", " jumps", " over", " the", " lazy", " dog", ".",
    "\n", "\t", " 漢字", " 😀", " cafe\xCC\x81", " naïve", ",", " diffusion", " models",
    " denoise", " every", " token", " in", " parallel", " price", " 10", "\xE2\x82", "\xAC",
    " ok", "\xFF", " steps", " unmask", " 世界", " 🙂", " and", " then", " a", " word",
};
#define FAKE_N_WORDS ((int32_t)(sizeof fake_words / sizeof fake_words[0]))
#define FAKE_EURO_LEAD 28          /* "\xE2\x82": always followed by FAKE_EURO_TAIL */
#define FAKE_EURO_TAIL 29
#define FAKE_FIRST_WORD 2
#define FAKE_N_VOCAB (FAKE_BYTE0 + 256)
#define FAKE_KV_ELEMS (4 * 2 * 64)  /* K/V elements per position: layers x (K, V) x width */

typedef struct fake {
    int          delay_ms;
    int          cancel;                   /* atomic: set by fake_cancel, cleared per step */
    um_settings  s;
    int32_t      n_prompt, n_canvas;      /* canvas = prompt + n_gen */
    int32_t      step;                     /* steps done */
    um_plan      plan;                     /* schedule.h's plan for the next step */
    bool        *masked;                   /* (n_canvas) still masked (schedule_plan's input) */
    int32_t     *token;                    /* (n_canvas) committed token or mask id */
    int32_t     *target;                   /* (n_canvas) hidden target of each position */
    int32_t     *commit_step;              /* (n_canvas) -1 while masked or prompt */
    float       *commit_conf;              /* (n_canvas) */
    float       *score;                    /* (n_canvas) scratch: commit priority */
    um_scored   *items;                    /* (n_canvas) scratch: schedule_select's input */
    um_why      *why;                      /* (2 n_canvas) why each position committed; then scratch */
    um_cand     *top;                      /* (n_canvas, UM_TOPK) this step's view */
    float       *entropy;                  /* (n_canvas) nats */
    bool        *kv_masked;                /* (n_canvas) masked at the last cache refresh */
    bool        *cached;                   /* (n_canvas) this step's K/V came from the cache */
    int32_t      cap;                      /* allocated length of the arrays above */
    bool         can_cache;                /* false: refuses settings.cache as the CUDA backend */
    /* the pretend cache: valid since a refresh at step kv_step, for that mode and block */
    bool         kv_valid;
    um_cache     kv_mode;
    int32_t      kv_start, kv_end, kv_step;
    int32_t      rows;                     /* rows this step recomputed */
    bool         refreshed;                /* this step refilled the cache */
} fake;

static bool fake_is_special(void *self, int32_t tok) {
    (void)self;
    return tok == FAKE_MASK_ID || tok == FAKE_EOS_ID;
}

static size_t fake_piece(void *self, int32_t tok, char *buf, size_t cap) {
    const char *p;
    size_t n;
    char b;
    if (tok >= FAKE_BYTE0 && tok < FAKE_BYTE0 + 256) {
        b = (char)(tok - FAKE_BYTE0);
        p = &b;
        n = 1;
    } else if (tok >= 0 && tok < FAKE_N_WORDS) {
        p = fake_words[tok];
        n = strlen(p);
    } else {
        p = "<?>";
        n = 3;
    }
    if (n > cap) n = cap;
    memcpy(buf, p, n);
    return n;
}

/* ------------------------------------------------------------------ hashing */

static uint64_t mix(uint64_t x) {
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}
static uint64_t hash3(uint64_t a, uint64_t b, uint64_t c) { return mix(mix(mix(a) ^ b) ^ c); }
static float unit(uint64_t h) { return (float)((h >> 40) * (1.0 / 16777216.0)); }   /* [0,1) */

/* ------------------------------------------------------------------ snapshots */

/* Fill a snapshot from the current state; committed = indices committed in this step. */
static um_snapshot *fake_publish(fake *f, const int32_t *committed, int32_t n_committed,
                                 int32_t planned, double ms, um_err *e) {
    um_snapshot *s = snapshot_new(f->n_canvas, n_committed);
    if (!s) { um_errf(e, "fake source: out of memory for a snapshot"); return NULL; }
    int32_t masks = 0;
    for (int32_t i = 0; i < f->n_canvas; i++) {
        um_pos *p = &s->pos[i];
        p->token = f->token[i];
        p->is_prompt = i < f->n_prompt;
        p->masked = !p->is_prompt && f->commit_step[i] < 0;
        p->commit_step = f->commit_step[i];
        p->commit_conf = f->commit_conf[i];
        p->why = f->commit_step[i] >= 0 ? f->why[i] : (um_why){ 0 };
        p->fresh = !p->is_prompt && f->commit_step[i] == f->step && f->step > 0;
        p->cached = f->cached[i];
        masks += p->masked;
        if (!p->is_prompt) {
            p->has_view = true;
            p->view_step = f->commit_step[i] >= 0 ? f->commit_step[i] : f->step;   /* committed: the view it took */
            memcpy(p->top, &f->top[(size_t)i * UM_TOPK], sizeof p->top);
            p->entropy = f->entropy[i];
        }
    }
    if (n_committed > 0) memcpy(s->committed, committed, (size_t)n_committed * sizeof(int32_t));
    s->step = f->step;
    s->n_prompt = f->n_prompt;
    s->n_canvas = f->n_canvas;
    s->masks_left = masks;
    s->n_committed = n_committed;
    s->planned = planned;
    s->done = masks == 0;
    s->forward_ms = ms;
    s->sample_ms = 0;
    s->passes = f->step > 0;                /* one pretend forward pass a step */
    s->passes_total = f->step;
    s->rows_computed = f->step > 0 ? f->rows : 0;
    s->cache_refreshed = f->step > 0 && f->refreshed;
    static const uint64_t kv_num[UM_KV_STORE_COUNT] = { 2, 4, 34 }, kv_den[UM_KV_STORE_COUNT] = { 1, 1, 32 };
    s->cache_bytes = f->s.cache == UM_CACHE_NONE || f->s.cache_type >= UM_KV_STORE_COUNT ? 0
                   : (uint64_t)f->n_canvas * FAKE_KV_ELEMS * kv_num[f->s.cache_type] / kv_den[f->s.cache_type];
    s->settings = f->s;
    s->block = UM_MIN(f->plan.block, f->plan.n_blocks - 1);
    s->n_blocks = f->plan.n_blocks;
    /* planned total, as the engine reports it: the settings' steps, or as many as ran */
    s->n_steps = f->s.schedule == UM_SCHED_THRESHOLD ? f->step + (masks > 0 ? 1 : 0) : UM_MAX(f->s.steps, f->step);
    if (masks == 0) s->n_steps = f->step;
    return s;
}

/* ------------------------------------------------------------------ the fake model */

/* Compute this step's view (top-k, entropy) for every masked generated position. */
static void fake_view(fake *f) {
    int32_t total = UM_MAX(1, f->s.steps);
    float progress = f->step >= total ? 1.0f : (float)f->step / (float)total;
    float temp = f->s.temperature > 0 ? f->s.temperature : 0.0f;
    for (int32_t i = f->n_prompt; i < f->n_canvas; i++) {
        um_cand *top = &f->top[(size_t)i * UM_TOPK];
        if (f->commit_step[i] >= 0) continue;                 /* committed: keep last view */
        float offset = 2.0f * unit(hash3(f->s.seed, (uint64_t)i, 7)) - 1.0f;
        float z = 8.0f * progress - 2.0f + 1.5f * offset;
        float p_target = 1.0f / (1.0f + expf(-z));
        p_target = powf(p_target, 1.0f + 2.0f * temp);      /* hotter: flatter */
        p_target = 0.02f + 0.96f * p_target;
        /* distractors: geometric shares of the remaining mass */
        float rest = 1.0f - p_target, share = rest * 0.5f;
        um_cand c[UM_TOPK];
        c[0].token = f->target[i];
        c[0].prob = p_target;
        for (int k = 1; k < UM_TOPK; k++) {
            uint64_t h = hash3(f->s.seed ^ 0xD15, (uint64_t)i * 131 + (uint64_t)k, (uint64_t)f->step / 3);
            int32_t t = FAKE_FIRST_WORD + (int32_t)(h % (uint64_t)(FAKE_N_WORDS - FAKE_FIRST_WORD));
            if (t == FAKE_EURO_LEAD || t == FAKE_EURO_TAIL || t == c[0].token) t = FAKE_FIRST_WORD + k;
            c[k].token = t;
            c[k].prob = share;
            share *= 0.5f;
        }
        /* sort descending (insertion sort over 8) */
        for (int a = 1; a < UM_TOPK; a++)
            for (int b = a; b > 0 && c[b].prob > c[b - 1].prob; b--) {
                um_cand t = c[b]; c[b] = c[b - 1]; c[b - 1] = t;
            }
        float h = 0, sum = 0;
        for (int k = 0; k < UM_TOPK; k++) {
            sum += c[k].prob;
            if (c[k].prob > 0) h -= c[k].prob * logf(c[k].prob);
        }
        if (sum < 1.0f) h -= (1.0f - sum) * logf((1.0f - sum) / 1000.0f);   /* tail over 1000 tokens */
        memcpy(top, c, sizeof c);
        f->entropy[i] = h;
        switch (f->s.score) {
        case UM_SCORE_MARGIN:  f->score[i] = c[0].prob - c[1].prob; break;
        case UM_SCORE_ENTROPY: f->score[i] = -h; break;
        case UM_SCORE_RANDOM:
        case UM_SCORE_ORIGIN:  f->score[i] = unit(hash3(f->s.seed, (uint64_t)i, (uint64_t)f->step + 99)); break;
        default:               f->score[i] = c[0].prob; break;
        }
    }
}

static int32_t count_masked(const fake *f, int32_t lo, int32_t hi) {
    int32_t n = 0;
    for (int32_t i = lo; i < hi; i++) n += f->commit_step[i] < 0;
    return n;
}

/* Plan the next step with schedule.h, exactly as the engine does. */
static int replan(fake *f, um_err *e) {
    for (int32_t i = 0; i < f->n_canvas; i++) f->masked[i] = i >= f->n_prompt && f->commit_step[i] < 0;
    return schedule_plan(&f->s, f->n_prompt, f->n_canvas - f->n_prompt, f->masked, f->step, &f->plan, e);
}

/* The rows this step's pretend forward pass recomputes, by engine.c's rule (the header). */
static void fake_cache_step(fake *f) {
    const um_settings *s = &f->s;
    const int32_t T = f->n_canvas;
    f->refreshed = false;
    f->rows = T;
    memset(f->cached, 0, (size_t)T * sizeof *f->cached);
    if (s->cache == UM_CACHE_NONE) { f->kv_valid = false; return; }
    if (!f->kv_valid || s->cache != f->kv_mode || f->plan.start != f->kv_start || f->plan.end != f->kv_end ||
        (s->cache_refresh > 0 && f->step - f->kv_step >= s->cache_refresh)) {
        for (int32_t i = 0; i < T; i++) f->kv_masked[i] = i >= f->n_prompt && f->commit_step[i] < 0;
        f->kv_valid = true;
        f->kv_mode = s->cache;
        f->kv_start = f->plan.start;
        f->kv_end = f->plan.end;
        f->kv_step = f->step;
        f->refreshed = true;
        return;
    }
    const int32_t hi = s->cache == UM_CACHE_PREFIX ? T : f->plan.end;
    f->rows = 0;
    for (int32_t i = 0; i < T; i++) {
        bool active = i >= f->plan.start && i < hi && f->kv_masked[i];
        f->cached[i] = !active;
        f->rows += active;
    }
}

/* The engine's refusal of a cache on a backend without partial passes (engine.c). */
static int check_cache(const fake *f, const um_settings *s, um_err *e) {
    if (s->cache == UM_CACHE_NONE || f->can_cache) return UM_OK;
    return um_errf(e, "--cache %s needs partial forward passes, which the fake-gpu backend does not run yet "
                   "(use --cache none, or the CPU backend)", engine_cache_name(s->cache));
}

/* Sleep ms in 10 ms slices; false when cancelled meanwhile. */
static bool sleep_ms(fake *f, int ms) {
    for (int left = ms; left > 0; left -= 10) {
        if (__atomic_load_n(&f->cancel, __ATOMIC_ACQUIRE)) return false;
        int slice = left < 10 ? left : 10;
        struct timespec ts = { 0, (long)slice * 1000000L };
        while (nanosleep(&ts, &ts) != 0) {}
    }
    return !__atomic_load_n(&f->cancel, __ATOMIC_ACQUIRE);
}

static void fake_cancel(void *self) {
    fake *f = self;
    __atomic_store_n(&f->cancel, 1, __ATOMIC_RELEASE);
}

/* ------------------------------------------------------------------ source callbacks */

static int32_t tokenize(const char *prompt, int32_t *out, int32_t cap) {
    int32_t n = 0;
    size_t len = strlen(prompt), at = 0;
    while (at < len && n < cap) {
        int32_t best = -1;
        size_t best_len = 0;
        for (int32_t t = FAKE_FIRST_WORD; t < FAKE_N_WORDS; t++) {
            size_t l = strlen(fake_words[t]);
            if (l > best_len && l <= len - at && !memcmp(prompt + at, fake_words[t], l)) {
                best = t;
                best_len = l;
            }
        }
        if (best < 0) { best = FAKE_BYTE0 + (unsigned char)prompt[at]; best_len = 1; }
        out[n++] = best;
        at += best_len;
    }
    return n;
}

static um_snapshot *fake_start(void *self, const um_settings *s, const char *prompt, um_err *e) {
    fake *f = self;
    __atomic_store_n(&f->cancel, 0, __ATOMIC_RELEASE);
    if (s->n_gen < 1 || s->n_gen > 4096) { um_errf(e, "fake source: n_gen %d out of range 1..4096", s->n_gen); return NULL; }
    if (s->steps < 1) { um_errf(e, "fake source: steps must be at least 1"); return NULL; }
    if (check_cache(f, s, e)) return NULL;
    int32_t prompt_cap = (int32_t)strlen(prompt ? prompt : "");
    int32_t need = prompt_cap + s->n_gen;
    if (need > f->cap) {
        free(f->token); free(f->target); free(f->commit_step); free(f->commit_conf);
        free(f->score); free(f->items); free(f->why); free(f->top); free(f->entropy); free(f->masked); free(f->kv_masked); free(f->cached);
        f->masked = um_calloc((size_t)need, sizeof(bool));
        f->kv_masked = um_calloc((size_t)need, sizeof(bool));
        f->cached = um_calloc((size_t)need, sizeof(bool));
        f->token = um_calloc((size_t)need, sizeof(int32_t));
        f->target = um_calloc((size_t)need, sizeof(int32_t));
        f->commit_step = um_calloc((size_t)need, sizeof(int32_t));
        f->commit_conf = um_calloc((size_t)need, sizeof(float));
        f->score = um_calloc((size_t)need, sizeof(float));
        f->items = um_calloc((size_t)need, sizeof(um_scored));
        f->why = um_calloc(2 * (size_t)need, sizeof(um_why));
        f->top = um_calloc((size_t)need * UM_TOPK, sizeof(um_cand));
        f->entropy = um_calloc((size_t)need, sizeof(float));
        f->cap = need;
        if (!f->token || !f->target || !f->commit_step || !f->commit_conf || !f->score || !f->items || !f->why || !f->top || !f->entropy ||
            !f->masked || !f->kv_masked || !f->cached) {
            f->cap = 0;
            um_errf(e, "fake source: out of memory for %d positions", need);
            return NULL;
        }
    }
    f->s = *s;
    f->n_prompt = tokenize(prompt ? prompt : "", f->token, prompt_cap);
    f->n_canvas = f->n_prompt + s->n_gen;
    memset(f->top, 0, (size_t)f->n_canvas * UM_TOPK * sizeof(um_cand));
    memset(f->entropy, 0, (size_t)f->n_canvas * sizeof(float));
    memset(f->cached, 0, (size_t)f->n_canvas * sizeof(bool));
    f->kv_valid = false;
    f->rows = 0;
    f->refreshed = false;
    for (int32_t i = 0; i < f->n_canvas; i++) {
        f->commit_step[i] = -1;
        f->commit_conf[i] = 0;
        f->target[i] = f->token[i];
    }
    /* targets: a seeded walk over the word list, the euro pair kept together */
    for (int32_t i = f->n_prompt; i < f->n_canvas; i++) {
        f->token[i] = FAKE_MASK_ID;
        if (i > f->n_prompt && f->target[i - 1] == FAKE_EURO_LEAD) { f->target[i] = FAKE_EURO_TAIL; continue; }
        int32_t t = FAKE_FIRST_WORD + (int32_t)(hash3(s->seed, (uint64_t)i, 1) % (uint64_t)(FAKE_N_WORDS - FAKE_FIRST_WORD));
        if (t == FAKE_EURO_TAIL || (t == FAKE_EURO_LEAD && i == f->n_canvas - 1)) t = FAKE_FIRST_WORD + 1;
        f->target[i] = t;
    }
    f->step = 0;
    if (replan(f, e)) return NULL;
    fake_view(f);
    return fake_publish(f, NULL, 0, 0, 0, e);
}

static um_snapshot *fake_step(void *self, um_err *e) {
    fake *f = self;
    double t0 = um_now();
    if (!sleep_ms(f, f->delay_ms)) {
        __atomic_store_n(&f->cancel, 0, __ATOMIC_RELEASE);
        um_errf(e, "fake source: step cancelled");
        return NULL;
    }
    int32_t masks = count_masked(f, f->n_prompt, f->n_canvas);
    if (masks == 0) { um_errf(e, "fake source: step after the run finished"); return NULL; }
    /* how many and where: schedule.h's plan (as the engine); which: the fake scores */
    int32_t lo = f->plan.start, hi = f->plan.end, n = 0, planned = f->plan.count;
    if (f->s.schedule == UM_SCHED_THRESHOLD) {
        planned = 0;
        for (int32_t i = lo; i < hi; i++)
            planned += f->commit_step[i] < 0 && f->top[(size_t)i * UM_TOPK].prob >= f->s.threshold;
    }
    planned = UM_MAX(1, planned);
    int32_t n_elig = 0, chosen[4096];
    for (int32_t i = lo; i < hi; i++)
        if (f->commit_step[i] < 0)
            f->items[n_elig++] = (um_scored){ .pos = i, .score = f->score[i], .entropy = f->entropy[i] };
    n = UM_MIN(4096, schedule_select(&f->s, &f->plan, f->step, f->items, n_elig));
    um_why *why = f->why + f->n_canvas;            /* the scratch half */
    schedule_explain(&f->s, &f->plan, f->items, n_elig, n, why);
    fake_cache_step(f);                            /* the pass runs before the commits */
    f->step++;
    for (int32_t j = 0; j < n; j++) {
        int32_t i = chosen[j] = f->items[j].pos;
        f->why[i] = why[j];
        f->token[i] = f->top[(size_t)i * UM_TOPK].token;
        f->commit_conf[i] = f->top[(size_t)i * UM_TOPK].prob;
        f->commit_step[i] = f->step;
    }
    if (replan(f, e)) return NULL;
    fake_view(f);
    return fake_publish(f, chosen, n, planned, (um_now() - t0) * 1000.0, e);
}

static int fake_apply(void *self, const um_settings *s, um_err *e) {
    fake *f = self;
    if (check_cache(f, s, e)) return UM_FAIL;
    um_settings keep = f->s;
    f->s = *s;
    f->s.n_gen = keep.n_gen;                       /* these restart (snapshot_needs_restart) */
    f->s.seed = keep.seed;
    return replan(f, e);
}

static void fake_close(void *self) {
    fake *f = self;
    if (!f) return;
    free(f->token); free(f->target); free(f->commit_step); free(f->commit_conf);
    free(f->score); free(f->items); free(f->why); free(f->top); free(f->entropy); free(f->masked); free(f->kv_masked); free(f->cached);
    free(f);
}

static int open_source(ui_source *out, int delay_ms, bool can_cache, um_err *e) {
    fake *f = um_calloc(1, sizeof *f);
    if (!f) return um_errf(e, "fake source: out of memory");
    f->delay_ms = delay_ms;
    f->can_cache = can_cache;
    memset(out, 0, sizeof *out);
    out->self = f;
    snprintf(out->info.arch, sizeof out->info.arch, "fake");
    snprintf(out->info.name, sizeof out->info.name, "demo (synthetic denoiser)");
    snprintf(out->info.quant, sizeof out->info.quant, "none");
    snprintf(out->info.backend, sizeof out->info.backend, can_cache ? "fake" : "fake-gpu");
    snprintf(out->info.isa, sizeof out->info.isa, "scalar");
    out->info.n_threads = 1;
    out->info.n_vocab = FAKE_N_VOCAB;
    out->info.n_ctx = 4096;
    out->info.mask_id = FAKE_MASK_ID;
    out->info.eos_id = FAKE_EOS_ID;
    out->info.can_cache = can_cache;
    out->defaults = (um_settings){
        .n_gen = 96, .steps = 32, .block_len = 32, .eps = 1e-3f, .threshold = 0.9f,
        .schedule = UM_SCHED_BLOCK, .score = UM_SCORE_CONFIDENCE, .temperature = 0,
        .top_p = 1, .seed = 42, .stop_at_eos = false,
    };
    out->start = fake_start;
    out->step = fake_step;
    out->apply = fake_apply;
    out->needs_restart = snapshot_needs_restart;
    out->piece = fake_piece;
    out->is_special = fake_is_special;
    out->cancel = fake_cancel;
    out->retain = snapshot_ref;
    out->release = snapshot_unref;
    out->close = fake_close;
    return UM_OK;
}

int fake_source_open(ui_source *out, int delay_ms, um_err *e) { return open_source(out, delay_ms, true, e); }
int fake_source_open_nocache(ui_source *out, int delay_ms, um_err *e) { return open_source(out, delay_ms, false, e); }
