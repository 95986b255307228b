/*
 * schedule: the denoising schedule (how many masked positions commit at each step, and
 * where) and the commit rule (which ones, from their scores).
 *
 * Schedules (um_settings.schedule), all over blocks of the generated part only
 * (block_len <= 0 or >= n_gen: one block); the active block is the first one that
 * still holds a mask, and only its masked positions are eligible:
 *   UM_SCHED_BLOCK      LLaDA: steps split evenly over blocks (earlier blocks take the
 *                       remainder); within a block its masks split evenly over its steps,
 *                       earlier steps taking the remainder.
 *   UM_SCHED_TIMESTEP   Dream: within a block of S steps, at in-block step k,
 *                       t = 1 - k/S (1-eps), s = 1 - (k+1)/S (1-eps): commit
 *                       floor(R (1 - s/t)) of the R masks left; the block's last step commits all.
 *   UM_SCHED_LINEAR     RND1: after in-block step k of S, floor(N (S-k-1)/S) of the block's
 *                       N positions stay masked; the block's last step commits the rest.
 *   UM_SCHED_THRESHOLD  Fast-dLLM: commit every eligible position whose score >= threshold,
 *                       at least the plan's count (the best one; LLaDA 2.0's quota with
 *                       block_steps, schedule_threshold_quota); a block takes as many steps
 *                       as it needs.
 * With settings.block_aligned (block-causal models, LLaDA 2.x) block boundaries sit at
 * multiples of block_len from canvas position 0, so the first block is the part of the
 * prompt's last block that is generated.
 *   UM_SCHED_FACTOR     Fast-dLLM's factor rule: the n best, n the largest such that the
 *                       i-th best scores >= 1 - factor/(i+1) for every i <= n; at least one.
 *   UM_SCHED_EB         EB-sampler: positions by increasing entropy, the most such that the
 *                       sum of their entropies minus the largest stays <= eb_gamma (so at
 *                       least one).
 * The last three are adaptive: the model's scores decide the count, the step count does not
 * bound it (schedule_adaptive).
 *
 * The plan is a pure function of the current state (settings, which positions are still
 * masked, steps done so far), so settings may change between any two steps: nothing
 * precomputed goes stale. With unchanged settings it reproduces the reference schedules
 * exactly (see docs/decoding.md, "Changing settings mid-run").
 *
 * Invariants: the plan never asks for more positions than are eligible; a block schedule
 * or timestep step always has steps_left >= 1, and a step with steps_left == 1 commits
 * every mask left in the active block, so a run always ends.
 */
#ifndef UM_SCHEDULE_H
#define UM_SCHEDULE_H

#include <stdint.h>
#include <stdbool.h>
#include "util.h"
#include "engine.h"
#include "sampler.h"

typedef struct um_plan {
    int32_t n_blocks;            /* blocks over the generated part */
    int32_t block;               /* active block: the first holding a mask; n_blocks when done */
    int32_t start, end;          /* canvas range [start, end) of the active block */
    int32_t masks_left;          /* masked positions in the active block (the eligible ones) */
    int32_t steps_left;          /* steps the active block has left, this one included (>= 1) */
    int32_t count;               /* block/timestep: positions to commit now; threshold: 1 (the minimum;
                                    the engine may raise it, schedule_threshold_quota) */
    double  p_transfer;          /* origin score: commit probability of each eligible position */
    bool    done;                /* no mask left in the generated part */
    bool    post;                /* an edit-only step (LLaDA 2.1) on the block that just filled:
                                    masks_left and count 0 (schedule_mdm_plan) */
    /* the uniform schedule (schedule_us_plan): block = the canvas, [start, end) its positions,
       every one of them eligible and given a logits row */
    float   temperature;         /* this step's t */
    float   sc_temp;             /* self-conditioning from the previous step's logits at this t; 0: off */
    float   entropy_bound;       /* the acceptance bound (settings.us_bound) */
    int32_t us_step;             /* steps already run on this canvas (0: its first) */
} um_plan;

/*
 * Plan step number steps_done (0-based count of steps already run) for a canvas of
 * n_prompt prompt positions followed by n_gen generated ones; masked: (n_prompt + n_gen)
 * flags, true where the position still holds the mask token.
 */
int schedule_plan(const um_settings *s, int32_t n_prompt, int32_t n_gen, const bool *masked,
               int32_t steps_done, um_plan *out, um_err *e);

/* The threshold schedule's least count at in-block step block_step (the steps already run
 * on the active block): 1, or with settings.block_steps S > 0 LLaDA 2.0's quota
 * block_len/S (+1 for the first block_len%S steps; every mask left from step S on), never
 * more than the block's masks. schedule_mdm_plan counts the in-block steps and puts this
 * into plan.count. */
int32_t schedule_threshold_quota(const um_settings *s, const um_plan *plan, int32_t block_step);

/* ---------------------------------------------------------------- masked decoding's state
 *
 * What the masked schedules keep between steps besides the canvas: the steps run on the
 * active block (the threshold schedule's LLaDA 2.0 quota counts them) and LLaDA 2.1's
 * edit-only steps after a block fills (settings.edit with post_steps > 0: up to post_steps
 * steps on that block, ending after one that edits nothing). The engine owns the state and
 * changes it only through these calls; schedule_mdm_plan returns the step's complete plan,
 * so the engine reads it and never patches it.
 */
typedef struct um_mdm_state {
    int32_t blk_start;           /* canvas start of the block blk_steps counts for (-1: none) */
    int32_t blk_steps;           /* steps run on that block */
    int32_t post_left;           /* edit-only steps left on the block that just filled */
    int32_t post_block, post_start, post_end;
} um_mdm_state;

void schedule_mdm_start(um_mdm_state *st);
/* The plan of step steps_done: an edit-only step (plan.post) when one is due, otherwise
 * schedule_plan's with the threshold schedule's count raised to the quota of the active
 * block's in-block step. Editing switched off drops the post steps still due. */
int  schedule_mdm_plan(um_mdm_state *st, const um_settings *s, int32_t n_prompt, int32_t n_gen, const bool *masked,
                       int32_t steps_done, um_plan *out, um_err *e);
/* After the step of plan ran: n_edited positions changed by edits, block_filled when no mask
 * is left in [plan.start, plan.end). Counts the in-block step; after a step that filled its
 * block (editing on) schedules the post steps; a post step that edits nothing ends them. */
void schedule_mdm_after(um_mdm_state *st, const um_settings *s, const um_plan *plan, int32_t n_edited,
                        bool block_filled);
/* An edit-only step is due. */
bool schedule_mdm_post_due(const um_mdm_state *st);
/* The run stops early (end of text): no post step is due any more. */
void schedule_mdm_stop(um_mdm_state *st);

/* One eligible position handed to schedule_select. */
typedef struct um_scored {
    int32_t pos;                 /* canvas position */
    float   score;               /* higher commits first (see schedule_score) */
    float   entropy;             /* nats, of the scoring distribution (-pick.neg_entropy): the eb order */
    double  key;                 /* scratch for schedule_select */
} um_scored;

/* The score of a position for settings.score from its pick (random/origin: a uniform
   from the position's own stream, so it does not depend on the order of evaluation). */
float schedule_score(um_score kind, const um_pick *pk, uint64_t seed, int64_t step, int64_t pos);

/*
 * Choose which of the n eligible positions commit at this step. items is reordered:
 * the first k (the return value) are the committed ones, in ascending position order.
 *   origin (block/timestep schedules): each commits independently with p_transfer;
 *   threshold schedule: score >= settings.threshold, and at least plan->count (the best);
 *   factor schedule: the n best while the n-th scores >= 1 - factor/(n+1), at least one;
 *   eb schedule: by entropy ascending, the longest run whose entropies' sum minus its
 *   largest is <= eb_gamma (at least one); uniform schedule: the same rule with
 *   plan->entropy_bound (the sum of the entropies before each accepted one stays <= it);
 *   otherwise the plan's count best by score, or with alg_temp > 0 a sample without
 *   replacement from softmax(score / alg_temp) (Gumbel-top-k).
 * Ties: the lower position first. Random draws come from (seed, step, pos) streams.
 */
int32_t schedule_select(const um_settings *s, const um_plan *plan, int64_t step, um_scored *items, int32_t n);

/*
 * Why each committed position committed, for readers (um_why in engine.h): call right after
 * schedule_select with the same settings and plan; items[0..k) are the committed ones (as
 * schedule_select left them), items[k..n) the rest. out[c] describes items[c], c < k.
 */
void schedule_explain(const um_settings *s, const um_plan *plan, const um_scored *items, int32_t n, int32_t k,
                      um_why *out);

/*
 * The per-step commit counts of a whole run with these settings and no change on the way
 * (every step commits exactly the planned count): counts[i] for step i. Returns the number
 * of steps, or UM_FAIL (with e) for the threshold schedule, whose count depends on the
 * model, or when cap is too small.
 */
int32_t schedule_table(const um_settings *s, int32_t n_gen, int32_t *counts, int32_t cap, um_err *e);

/* ---------------------------------------------------------------- uniform-state decoding
 *
 * UM_SCHED_UNIFORM (DiffusionGemma; llama.cpp's port diffusion_generate_entropy_bound and
 * diffusion-cli's run_turn, transformers' EntropyBoundSampler). A generation of n_gen tokens is
 * ceil(n_gen / C) canvases of C = settings.us_canvas positions, one after the other after the
 * prompt; the canvas of block b is [n_prompt + b C, n_prompt + (b+1) C), everything before it
 * its prefix. On a canvas of S = settings.steps steps, at its step k (0-based), s = S - k:
 *   t = t_min + (t_max - t_min) s / S; self-conditioning at the previous step's t (off at k = 0);
 *   every position: entropy H of softmax(logits / t), a sample from it, its argmax;
 *   accept (schedule_select) in increasing H while the sum of the H before stays <= the bound;
 *   accepted positions hold their sample, the rest a fresh random token; the output is the argmax;
 *   the canvas stops (schedule_us_after) when the argmax equalled the previous step's for
 *   us_stability steps running and the mean H < us_confidence, or after S steps;
 *   then it is cut (schedule_us_cut) at its first end of generation or the start of a repeat
 *   loop, and the next canvas starts (schedule_us_next) unless it was cut or was the last.
 * The state below is all the schedule keeps; the engine owns it and changes it only through
 * these calls, so a settings change applies from the next step.
 */
typedef struct um_us_state {
    int32_t block, n_blocks;     /* the canvas being denoised, and how many the run may take */
    int32_t step;                /* steps run on it */
    int32_t held;                /* steps running that its argmax canvas did not change */
    float   prev_temp;           /* the last step's temperature (self-conditioning) */
    float   mean_entropy;        /* the last step's mean entropy over the canvas */
    int32_t n_accepted;          /* positions the last step accepted */
    bool    stopped;             /* the last step stopped the canvas (stable and confident, or S steps) */
    bool    stable;              /* ... because stable and confident (false: out of steps) */
    int32_t cut;                 /* when stopped: the kept length of the canvas (schedule_us_cut) */
    bool    done;                /* no canvas left */
} um_us_state;

/* A fresh run: n_gen tokens over canvases of settings.us_canvas. Fails on a bad setting. */
int  schedule_us_start(um_us_state *st, const um_settings *s, int32_t n_gen, um_err *e);
/* The plan of the next step (temperature, self-conditioning, the canvas range). */
void schedule_us_plan(const um_us_state *st, const um_settings *s, int32_t n_prompt, um_plan *out);
/* After a step that accepted n_accepted positions: same_argmax (the argmax canvas equals the
 * previous step's; false on a canvas's first step) and the mean entropy decide whether the
 * canvas stops. Returns st->stopped. */
bool schedule_us_after(um_us_state *st, const um_settings *s, const um_plan *plan, bool same_argmax,
                       double mean_entropy, int32_t n_accepted);
/* Where a stopped canvas ends: its first end-of-generation position (eog[i]), or the start
 * of a repetition loop (a token equal to the one 1 or 2 positions on for 6 or more
 * positions running: diffusion-cli's trim_canvas), whichever comes first; n when neither. */
int32_t schedule_us_cut(const int32_t *tokens, const bool *eog, int32_t n);
/* The next canvas after a stopped one kept cut of its C positions: done when cut < C or
 * it was the last. */
void schedule_us_next(um_us_state *st, int32_t cut, int32_t C);

/* Is the per-step count decided by the model's scores (threshold, factor, eb) rather than by
 * the step budget? Such runs take as many steps as they need and have no schedule_table. */
bool schedule_adaptive(um_schedule s);

/* Names for flags, snapshots and the UI: "block", "timestep", "threshold", "linear", "factor", "eb", "uniform";
   "confidence", "margin", "entropy", "random", "origin". *_from_name fails with a message
   listing the known names. */
const char *schedule_name(um_schedule s);
int         schedule_from_name(const char *name, um_schedule *out, um_err *e);
const char *schedule_score_name(um_score s);
int         schedule_score_from_name(const char *name, um_score *out, um_err *e);

#endif
