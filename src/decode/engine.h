/*
 * engine: a diffusion LM turned into a step-by-step denoiser that a UI can watch.
 *
 * engine_open() loads a model; engine_start() lays out the canvas (prompt + n_gen masks;
 * uniform-state models: prompt + whole canvases of random tokens) for a set of settings;
 * engine_step() runs one denoising step and publishes a new
 * immutable snapshot. Snapshots are reference counted: the UI may hold any number of
 * them (for rewind) while the worker keeps stepping. Nothing here touches a terminal.
 *
 * Threading: one thread drives an engine (engine_start / engine_step / engine_set);
 * snapshots may be read from any thread once obtained (they never change).
 */
#ifndef UM_ENGINE_H
#define UM_ENGINE_H

#include <stdint.h>
#include <stdbool.h>
#include "util.h"

#define UM_TOPK 8               /* candidates kept per position in a snapshot */

typedef enum um_schedule {       /* how many positions commit per step */
    UM_SCHED_BLOCK = 0,          /* LLaDA semi-autoregressive blocks over the generated part */
    UM_SCHED_TIMESTEP,           /* Dream: t from 1 to eps */
    UM_SCHED_THRESHOLD,          /* Fast-dLLM: every masked position above tau, at least one */
    UM_SCHED_LINEAR,             /* RND1: after step k of S, floor(N (S-k-1)/S) masks remain */
    UM_SCHED_FACTOR,             /* Fast-dLLM's factor rule: the n best while the n-th >= 1 - f/(n+1) */
    UM_SCHED_EB,                 /* EB-sampler: lowest entropies first while sum - max <= gamma */
    UM_SCHED_UNIFORM,            /* uniform-state (DiffusionGemma): random canvas, accept by entropy, renoise
                                    the rest; the only schedule of a uniform-state model (schedule.h) */
    UM_SCHED_COUNT
} um_schedule;

typedef enum um_score {          /* which positions commit first */
    UM_SCORE_CONFIDENCE = 0,     /* probability of the chosen token */
    UM_SCORE_MARGIN,             /* p1 - p2 */
    UM_SCORE_ENTROPY,            /* negative entropy */
    UM_SCORE_RANDOM,
    UM_SCORE_ORIGIN,             /* Dream 'origin': random subset with p = transfer/remaining */
    UM_SCORE_COUNT
} um_score;

typedef enum um_cache {          /* which canvas rows a step recomputes (docs/decoding.md, Caches) */
    UM_CACHE_NONE = 0,           /* every row, every step: exact */
    UM_CACHE_PREFIX,             /* Fast-dLLM prefix cache: the active block and everything after it */
    UM_CACHE_DUAL,               /* Fast-dLLM dual cache: the active block only */
    UM_CACHE_COUNT
} um_cache;

typedef enum um_kv_store {       /* how the cache stores K and V */
    UM_KV_F16 = 0,
    UM_KV_F32,
    UM_KV_Q8_0,
    UM_KV_STORE_COUNT
} um_kv_store;

typedef struct um_settings {
    int32_t     n_gen;           /* tokens to generate (mask positions) */
    int32_t     steps;           /* total denoising steps */
    int32_t     block_len;       /* block schedule: block length (<= n_gen) */
    float       eps;             /* timestep schedule */
    float       threshold;       /* threshold schedule: tau */
    float       factor;          /* factor schedule: f */
    float       eb_gamma;        /* eb schedule: entropy budget per step, nats */
    um_schedule schedule;
    um_score    score;
    float       alg_temp;        /* > 0: sample which positions commit */
    float       temperature;     /* 0 = greedy */
    int32_t     top_k;           /* 0 = off */
    float       top_p;           /* 1 = off */
    bool        gumbel;          /* token choice by Gumbel-max in float64 and scores from the raw
                                    softmax (LLaDA); false: one multinomial draw from the tempered,
                                    top-p/top-k filtered distribution, which also scores (Dream) */
    float       cfg;             /* classifier-free guidance weight, 0 = off */
    uint64_t    seed;
    bool        stop_at_eos;     /* stop once the active block is all EOS */
    bool        eos_early_stop;  /* LLaDA 2.x: stop once every generated position up to the first
                                    end-of-text token is committed (with editing: checked when a
                                    block and its post steps are done); the rest becomes EOS */
    /* LLaDA 2.x block diffusion (docs/decoding.md, "Block diffusion (LLaDA 2.x) and editing") */
    bool        block_aligned;   /* blocks start at multiples of block_len from canvas position 0
                                    (the prompt's tail shares the first block), as block-causal
                                    attention lays them out; false: blocks start at the prompt's end */
    int32_t     block_steps;     /* threshold schedule: > 0: at in-block step k commit at least
                                    quota(k) = block_len/S (+1 for k < block_len%S), LLaDA 2.0's
                                    get_num_transfer_tokens; 0: at least one */
    bool        edit;            /* LLaDA 2.1 token editing: a committed token of the active block
                                    is replaced when the model's choice there differs and has
                                    probability > edit_threshold */
    float       edit_threshold;
    int32_t     post_steps;      /* editing: at most this many edit-only steps once a block has no
                                    mask (ending early after a step with no edit) */
    /* K/V cache: a full pass (the refresh) fills it at the start of each block, and when
       cache_refresh steps have passed since the last one (> 0), or when the last partial
       pass measured a drift above cache_drift (> 0); the steps in between recompute only
       the positions masked at the last refresh, within the cache's region */
    um_cache    cache;
    um_kv_store cache_type;
    int32_t     cache_refresh;
    float       cache_drift;
    /* uniform-state decoding (UM_SCHED_UNIFORM; docs/decoding.md "Uniform-state decoding"):
       `steps` is the most steps a canvas takes (diffusion.eb_max_steps); cache prefix keeps the
       prompt's K/V for every step of a canvas (exact), none runs the whole pass each step */
    int32_t     us_canvas;       /* canvas length (diffusion.canvas_length); n_gen: ceil(n_gen / it) canvases */
    float       us_t_min, us_t_max; /* temperature: t_max on a canvas's first step down to t_min */
    float       us_bound;        /* entropy bound, nats: accept in increasing entropy while the sum
                                    before the position stays <= it */
    int32_t     us_stability;    /* steps the argmax canvas must stay unchanged ... */
    float       us_confidence;   /* ... with the mean entropy below this, to stop the canvas */
    bool        us_self_cond;    /* self-conditioning from the previous step (off on a canvas's first) */
    int32_t     us_sc_mode;      /* its um_sc_mode (forward.h): 0 exact, 1 top-k, 2 auto */
    bool        us_sc_bf16;      /* the exact rows' product in BF16 (um_selfcond.bf16) */
    int32_t     us_sc_top_k;     /* K for top-k and auto */
} um_settings;

typedef struct um_cand {
    int32_t token;
    float   prob;
} um_cand;

/* Why a position committed: the rule of its commit step and that rule's numbers, as plain
 * data for a reader (the visualizer's inspector). Filled by schedule_explain at the commit
 * step and kept until the position changes again. */
typedef enum um_why_rule {
    UM_WHY_NONE = 0,             /* masked, a prompt token, or not recorded */
    UM_WHY_COUNT,                /* block/timestep/linear: one of the `count` best by score */
    UM_WHY_SAMPLED,              /* block/timestep/linear with alg_temp: drawn among them (Gumbel-top-k) */
    UM_WHY_RANDOM,               /* origin scoring: its own coin came up below p_transfer (`bound`) */
    UM_WHY_THRESHOLD,            /* threshold: score >= `bound` (tau) */
    UM_WHY_QUOTA,                /* threshold: below tau, committed as one of the step's least `count` */
    UM_WHY_FACTOR,               /* factor: score >= `bound` = 1 - factor/(rank+1), or the best one */
    UM_WHY_EB,                   /* eb: `value` (entropies of the set, its largest left out) <= `bound` (gamma) */
    UM_WHY_EOS,                  /* filled with end-of-text when the run stopped at one */
} um_why_rule;

typedef struct um_why {
    int32_t rule;                /* um_why_rule */
    int32_t rank;                /* 1-based, in the rule's order (score, or entropy for eb) */
    int32_t n_elig;              /* masked positions of the active block at that step */
    int32_t count;               /* the step's count: the plan's (count rules) or its least (quota) */
    int32_t committed;           /* positions the step committed */
    int32_t block;               /* the active block (0-based) */
    float   score;               /* the position's score (its entropy for eb) */
    float   bound;               /* the rule's bar: tau, 1 - f/(rank+1), gamma, p_transfer */
    float   value;               /* eb: the set's entropy sum without its largest */
} um_why;

/* What a position of a uniform-state run (UM_SCHED_UNIFORM) holds, as of one step. */
typedef enum um_us_kind {
    UM_US_NONE = 0,              /* not uniform-state, or a prompt position */
    UM_US_NOISE,                 /* a random token: its canvas has had no step yet */
    UM_US_DRAFT,                 /* token: the model's argmax, not accepted this step (held: fresh noise) */
    UM_US_ACCEPTED,              /* token: the argmax; accepted this step (held: its sample) */
    UM_US_KEPT,                  /* part of a stopped canvas's output, kept (the next canvas's prefix) */
    UM_US_CUT,                   /* past the cut (end of text or a repeat loop): end of text */
    UM_US_KIND_COUNT
} um_us_kind;

/* Per canvas position, as of one step. */
typedef struct um_pos {
    int32_t token;               /* committed token, or the mask id while masked */
    bool    masked;
    bool    is_prompt;
    bool    fresh;               /* committed in this snapshot's step */
    int32_t commit_step;         /* step at which it was committed, -1 if masked or prompt */
    float   commit_conf;         /* probability of the token when committed */
    /* the model's view at this step (valid when has_view; prompt positions have none) */
    bool    has_view;
    um_cand top[UM_TOPK];        /* best candidates, descending probability */
    float   entropy;             /* nats, of the full distribution */
    int32_t view_step;           /* the snapshot step top/entropy were computed at (has_view) */
    um_why  why;                 /* why it committed (valid when commit_step >= 0, else UM_WHY_NONE) */
    bool    cached;              /* this step read its K/V from the cache, last computed at the
                                    last refresh (false on full passes) */
    /* token editing (settings.edit): a committed token replaced, never a fresh commit */
    bool    edited;              /* replaced in this snapshot's step */
    int32_t edit_step;           /* step of the latest replacement (valid when n_edits > 0) */
    int32_t edit_from;           /* the token it replaced then (valid when n_edits > 0) */
    int32_t n_edits;             /* replacements so far */
    /* uniform-state decoding: token is the output (the last step's argmax), held the token
       the working canvas feeds to the next step; entropy is that of softmax(logits / t),
       the one the acceptance rule reads (top[] stays the raw view) */
    uint8_t us;                  /* um_us_kind */
    int32_t held;
} um_pos;

/* The step of a uniform-state run (docs/stream.md): everything its stop and acceptance rules read. */
typedef struct um_us_view {
    bool    on;                  /* a uniform-state run */
    int32_t start, end;          /* the canvas being denoised: [start, end) */
    int32_t canvas_step;         /* steps run on it, this one included (0: none yet) */
    float   temperature;         /* this step's t */
    float   entropy_bound;       /* the acceptance bound, nats */
    int32_t accepted;            /* positions accepted this step */
    int32_t held, stability;     /* steps the argmax canvas stayed unchanged, and the steps needed */
    float   mean_entropy, confidence; /* mean entropy of this step, and the stop threshold */
    bool    self_cond;           /* this step's pass was self-conditioned */
    int32_t sc_exact_rows;       /* ... with the exact product on this many rows (auto/exact) */
    bool    sc_bf16;             /* ... that product in BF16 */
    bool    stopped, stable;     /* this step stopped the canvas; because stable and confident
                                    (false: its step budget ran out) */
    int32_t cut;                 /* when stopped: positions of the canvas kept */
} um_us_view;

/* One immutable snapshot. Made by snapshot_new (snapshot.h), freed when the last ref is dropped. */
typedef struct um_snapshot {
    int32_t        step;         /* steps done (0 = the initial all-mask canvas) */
    int32_t        n_steps;      /* planned total */
    int32_t        block, n_blocks;
    int32_t        n_prompt, n_canvas;
    int32_t        masks_left;
    int32_t        n_committed; /* positions committed in this step */
    int32_t        planned;      /* positions the schedule planned to commit this step */
    int32_t        n_edited;     /* committed tokens replaced in this step (pos[].edited) */
    bool           post_step;    /* an edit-only step after the block filled (settings.post_steps) */
    bool           done;
    double         forward_ms, sample_ms;
    int32_t        passes;       /* forward passes this step (2 with guidance) */
    int32_t        rows_computed; /* canvas rows run through the layers, summed over the passes */
    bool           cache_refreshed; /* this step ran full passes that refilled the K/V cache */
    int32_t        batched;      /* > 1: this step's passes ran in one pass with other engines'
                                    (compare panes sharing a model, engine_open_sharing): the
                                    number of engines in it; else 0 */
    int64_t        passes_total; /* forward passes of this run so far, this step's included */
    uint64_t       cache_bytes;  /* bytes of the K/V caches held after this step (0 without) */
    um_us_view     us;           /* uniform-state runs: the step's rule state */
    um_settings    settings;     /* in force for this step */
    um_pos        *pos;          /* (n_canvas) */
    int32_t       *committed;    /* (n_committed) canvas indices committed this step */
    /* private to snapshot.c */
    _Atomic int    refs_;
} um_snapshot;

typedef struct um_engine um_engine;

typedef struct um_engine_info {
    char arch[32], name[128], quant[32], backend[64], isa[32];
    int  n_threads, n_vocab, n_ctx, mask_id, eos_id;
    bool can_cache;              /* the backend runs partial passes: settings.cache may be set */
} um_engine_info;

/* ------------------------------------------------------------------ API */

typedef struct um_engine_opts {
    const char *model_path;
    int         n_threads;      /* <= 0: physical cores */
    int         kernel;         /* um_kernel; -1 = best available or UNMASK_KERNEL */
    bool        reference;      /* scalar reference forward pass (tests) */
    bool        gpu;            /* run the forward pass on the CUDA backend */
    int         n_ctx;          /* <= 0: the model's trained context is the limit; > 0: this is
                                   (above the trained context a run gets a warning) */
    int32_t     n_gen_min;      /* > 0: the tokens every run will generate at least (--gen): more
                                   than the context limit fails engine_open before the weights
                                   are repacked, not engine_start after */
    const char *chat_template;  /* NULL: the model file's (chat_from_gguf: its own
                                   unmask.chat_template, else detected); "none": raw prompt */
    const char *chat_template_file; /* NULL: none; else a template file (chat.h), used instead
                                   of chat_template and of the model file's */
    const char *system;         /* system prompt, NULL for the family's default */
    bool        view_ahead;     /* also give the model's view (top-k, entropy) of every mask
                                   after the active block, from rows the step computes anyway (a
                                   viewer's option: it costs their output rows and sampler scans,
                                   never changes what commits; a cached pass views only the
                                   positions it recomputes) */
    void      (*progress)(void *ctx, const char *what, int done, int total);
    void       *progress_ctx;
    /* Called (from the thread that calls engine_start) with one line when a run is allowed
     * but doubtful: a canvas past the model's trained context that n_ctx lets through.
     * NULL: no warnings. */
    void      (*warn)(void *ctx, const char *msg);
    void       *warn_ctx;
} um_engine_opts;

int  engine_open(um_engine **out, const um_engine_opts *o, um_err *e);
/* A second engine on with's model (compare panes): it shares with's model, tokenizer, thread
 * pool and forward pass (one set of repacked weights, one pass's working buffers) and has its
 * own canvas, caches, settings and snapshots. o's model, threads, kernel, GPU and reference
 * choices are with's; its chat template, system prompt, context, warnings and view_ahead are
 * its own. Engines that share take turns for engine_start and engine_step (first come, first
 * served), so any of them may be driven from its own thread; they may close in any order.
 * The output is the same as that of an engine opened alone. */
int  engine_open_sharing(um_engine **out, um_engine *with, const um_engine_opts *o, um_err *e);
void engine_close(um_engine *en);
/* One step of each of n engines that share one model (engine_open_sharing), in lock step and
 * in the calling thread: their passes run as one (the backend's run_multi; the same numbers as
 * each engine's own step), each engine then samples and commits. rcs[i] gets what
 * engine_step would return for ens[i]. UM_FAIL (e: the first failure) when any failed or the
 * engines do not share a model; at most 8 engines. */
int  engine_step_many(um_engine **ens, int n, int *rcs, um_err *e);
void engine_get_info(const um_engine *en, um_engine_info *info);
/* The family's official defaults (steps, block, schedule, scoring, temperature...). */
void engine_default_settings(const um_engine *en, um_settings *s);
/* The same from what decides them: the architecture's name, whether its attention is
 * block-causal and its block size (model.h), and whether the backend runs partial passes
 * (the cache a block-causal family turns on). Tests call it without a model. */
void engine_family_defaults(const char *arch, bool block_causal, int32_t block_size, bool can_cache, um_settings *s);
/* LLaDA 2.1's generate() defaults for token editing: editing_threshold 0.9, max_post_steps 16. */
#define UM_EDIT_THRESHOLD_DEFAULT 0.9f
#define UM_POST_STEPS_DEFAULT     16

/* Lay out a new canvas: prompt (chat template applied unless disabled) + s->n_gen masks.
 * The context rule, for every caller: a canvas longer than the model's trained context
 * (n_ctx_train from the GGUF) fails, with the numbers, unless opts.n_ctx raised the limit;
 * then it runs and opts.warn gets the warning. A canvas past an explicit n_ctx fails. */
int  engine_start(um_engine *en, const char *prompt, const um_settings *s, um_err *e);
/* Same with prompt token ids given as they are (no template, no BOS added). */
int  engine_start_tokens(um_engine *en, const int32_t *ids, int n, const um_settings *s, um_err *e);
/* One denoising step. Returns 1 when a step ran, 0 when the canvas was already done. */
int  engine_step(um_engine *en, um_err *e);
bool engine_done(const um_engine *en);
/* Step the started canvas to the end (engine_step until done). on_step, when non-NULL, gets
 * each new snapshot with a reference it must drop (snapshot_unref) or keep. Returns the
 * number of steps run, or -1 on failure. */
int  engine_run(um_engine *en, void (*on_step)(void *ctx, um_snapshot *sn), void *ctx, um_err *e);
/* Forward passes run since the last engine_start (two per step with classifier-free guidance). */
int64_t engine_forward_passes(const um_engine *en);
/* Canvas rows run through the layers since the last engine_start, summed over the passes
 * (n_canvas per full pass; fewer for the partial passes of a cache). */
int64_t engine_rows_computed(const um_engine *en);
/* Bytes of the K/V caches held now (0 without a cache; two caches with guidance). */
uint64_t engine_cache_bytes(const um_engine *en);
/* "none", "prefix", "dual" and "f16", "f32", "q8_0"; *_from_name fail listing the names. */
const char *engine_us_kind_name(um_us_kind k);   /* "none", "noise", "draft", "accepted", "kept", "cut" */
const char *engine_cache_name(um_cache c);
int         engine_cache_from_name(const char *name, um_cache *out, um_err *e);
const char *engine_kv_store_name(um_kv_store t);
int         engine_kv_store_from_name(const char *name, um_kv_store *out, um_err *e);
/* Change settings between steps. Returns 1 if the change needs engine_start again
 * (snapshot_needs_restart), 0 if it applies from the next step, -1 if refused. */
int  engine_set(um_engine *en, const um_settings *s);
const um_settings *engine_settings(const um_engine *en);

/* The latest snapshot, with a reference the caller drops with snapshot_unref (snapshot.h). */
um_snapshot *engine_snapshot(um_engine *en);

/* Raw bytes of a token for display (may hold partial UTF-8; specials give their text). */
const uint8_t *engine_token_bytes(const um_engine *en, int32_t token, size_t *len);
bool engine_token_is_eog(const um_engine *en, int32_t token);
bool engine_token_is_special(const um_engine *en, int32_t token);
/* Decode the generated part of a snapshot (masks skipped, stops at the first end-of-generation
 * token; uniform-state: at the first canvas not yet denoised). Heap string, caller frees. */
char *engine_answer(const um_engine *en, const um_snapshot *s);

#endif
