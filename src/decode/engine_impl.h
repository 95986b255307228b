/*
 * engine_impl: the engine's state, shared by engine.c (open, start, the masked-diffusion step,
 * publishing) and engine_uniform.c (the uniform-state step). Private to src/decode.
 */
#ifndef UM_ENGINE_IMPL_H
#define UM_ENGINE_IMPL_H

#include "engine.h"

#include <pthread.h>
#include <stdint.h>

#include "backend.h"
#include "chat.h"
#include "model.h"
#include "pool.h"
#include "sampler.h"
#include "schedule.h"
#include "tokenizer.h"

/* What engines opened with engine_open_sharing hold in common: the model, tokenizer, thread
 * pool and backend (the repacked weights and a pass's working buffers). They take turns for
 * starts and steps, first come first served (a ticket lock: no pane waits behind another's
 * run of steps); the last to close frees it all. */
typedef struct batch_req batch_req;             /* engine_share.c */

typedef struct um_shared {
    um_model       *model;
    tokenizer      *tok;
    um_pool        *pool;
    um_backend      be;
    pthread_mutex_t lock;
    pthread_cond_t  turn_cv;
    uint64_t        next, serving;  /* tickets: handed out, and whose turn it is */
    int             refs;           /* engines holding it (under lock) */
    const void     *dg_owner;       /* the engine whose prompt K/V the backend holds (uniform-state) */
    /* batched passes (engine_share.c, engine_step): planned passes wait here for a turn; the
     * first engine whose turn comes runs every waiting one in one pass (backend run_multi) */
    batch_req      *queue;          /* FIFO, under lock */
    int             live;           /* engines with a run in progress (started, not done) */
    double          last_batch_ms;  /* the last batched pass's time: how long a leader waits */
    pthread_cond_t  queue_cv;       /* a request was queued */
} um_shared;

struct um_engine {
    um_shared    *sh;           /* the model side, shared with engine_open_sharing's engines */
    um_model     *model;        /* sh->model, sh->tok, sh->pool, sh->be, for short */
    tokenizer    *tok;
    um_pool      *pool;
    um_backend    be;           /* where the forward pass runs (CPU or CUDA) */
    um_chat       chat;
    chat_custom  *chat_file;     /* --chat-template-file's, else the model file's own
                                   (unmask.chat_template, chat_from_gguf); NULL when none */
    char         *system;
    int           n_ctx;        /* the limit: opts.n_ctx when given, else the trained context */
    bool          ctx_explicit; /* opts.n_ctx was given */
    void        (*warn)(void *ctx, const char *msg);
    void         *warn_ctx;
    int           mask_id;
    um_sample_ws **ws;          /* (n_threads) */
    int           n_threads;
    /* the canvas */
    um_settings   set;
    int32_t       n_prompt, n_canvas, steps_done;
    int64_t       passes;       /* forward passes since engine_start */
    int64_t       rows_total;   /* canvas rows run through the layers since engine_start */
    int32_t      *tokens;       /* (n_canvas) */
    bool         *masked;       /* (n_canvas) */
    um_pos       *pos;          /* (n_canvas) live per-position state */
    bool          done;
    /* per-step scratch, sized for n_canvas */
    int32_t      *elig;         /* eligible canvas positions */
    int32_t      *rows;         /* logits rows for them */
    float        *logits;       /* (n_elig, n_vocab) */
    float        *logits_u;     /* CFG unconditional, same shape, or NULL */
    int32_t      *canvas_u;     /* CFG canvas with the prompt masked */
    um_pick      *picks;
    um_scored    *scored;
    um_why       *why;          /* (n_canvas) schedule_explain's output for the commits */
    bool          view_ahead;   /* opts.view_ahead */
    int32_t      *committed;
    int32_t       attn_block;   /* block-causal attention's block length (hp.block_size), else 0 */
    /* the active block's own state (docs/decoding.md, "Block diffusion (LLaDA 2.x) and editing") */
    um_mdm_state  mdm;          /* the masked schedules' block and post-edit state (schedule.h) */
    int32_t      *active;       /* (n_canvas) rows of a partial pass */
    bool         *kv_masked;    /* (n_canvas) masked at the last refresh */
    bool         *in_active;    /* (n_canvas) scratch: position already in active[] */
    int           cap;          /* canvas capacity of the scratch */
    /* K/V caches while settings.cache != none: [0] the canvas, [1] the unconditional
       canvas of guidance; valid from a refresh until something makes it stale */
    um_kvcache   *kv[2];
    um_kv_store   kv_store;     /* the type they store */
    int           kv_cap;       /* canvas capacity they were made for */
    bool          kv_valid;
    um_cache      kv_mode;      /* settings at the last refresh */
    int32_t       kv_start, kv_end, kv_step;   /* active block's range and steps_done then */
    float         kv_drift;     /* measured by the last partial pass */
    /* uniform-state decoding (settings.schedule == UM_SCHED_UNIFORM, engine_uniform.c) */
    um_us_state   us;           /* the schedule's per-canvas state */
    float        *sc_logits;    /* (us_canvas, n_vocab) the previous step's canvas logits (self-conditioning) */
    bool          us_prompt_ok; /* the backend holds the current canvas's prompt K/V */
    um_us_view    us_view;      /* the last step's rule state, for the snapshot */
    um_snapshot  *snap;         /* latest published */
    char          quant[32], isa[32];
    bool          live;         /* counted in sh->live */
};


/* A masked step's forward passes, planned (engine.c, step_passes): the canvas's, and with
 * guidance the unconditional canvas's; then what the caches hold after them. */
typedef struct step_pass {
    um_pass p[2];
    int     np;
    bool    refresh;            /* full passes that refill the caches */
    float   drift[2];           /* partial passes: each one's drift */
} step_pass;

/* What the step's forward passes did, for the snapshot. */
typedef struct step_work {
    int32_t passes, rows;
    int32_t batched;            /* engines whose passes ran in this step's one pass (0: alone) */
    bool    refreshed;
    int32_t n_edited;           /* committed tokens replaced */
    bool    post;               /* an edit-only step */
} step_work;

/* Publish a snapshot of the canvas after a step (engine.c). */
int  engine_publish(um_engine *en, const um_plan *plan, int n_committed, int planned, double fwd_ms, double smp_ms,
                    const step_work *w, um_err *e);
/* The uniform-state step and start (engine_uniform.c). */
int  engine_uniform_start(um_engine *en, um_err *e);
int  engine_uniform_step(um_engine *en, um_err *e);

/* The shared model side (engine_turn.c): made with one reference, freed by the last release. */
um_shared *engine_shared_new(void);
void engine_shared_release(um_shared *sh);
/* One engine's turn on the shared model (a start, a step, freeing its caches), in ticket order. */
void engine_turn_begin(um_shared *sh);
void engine_turn_end(um_shared *sh);
/* The engine's run is in progress (started, not done): a batch's leader waits for its passes. */
void engine_set_live(um_engine *en, bool live);

/* A masked step in three parts (engine.c): engine_step_prep plans it and its forward passes
 * from the engine's own state (no shared resource: engines sharing a model plan at once); the
 * passes run, on their own (engine_run_step_passes) or batched with other engines'
 * (engine_share.c); engine_step_finish samples, commits and publishes (the shared pool: in the
 * engine's turn). engine_step_alone is the three in a row (and the uniform-state step). */
typedef struct step_ctx {
    um_plan   plan;
    bool      post;
    int       n, n_mask, n_view;
    double    t0;
    step_work work;
    step_pass sp;
} step_ctx;

enum { PREP_FAIL = -1, PREP_NONE = 0, PREP_PUBLISH = 1, PREP_RUN = 2 };

int  engine_step_prep(um_engine *en, step_ctx *c, um_err *e);
int  engine_run_step_passes(um_engine *en, step_pass *sp, um_err *e);
int  engine_step_finish(um_engine *en, step_ctx *c, um_err *e);
int  engine_step_alone(um_engine *en, um_err *e);

#endif
