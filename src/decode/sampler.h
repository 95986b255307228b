/*
 * sampler: token choice for one canvas position from one row of logits, plus the
 * deterministic random numbers every stochastic decision of a run draws from.
 *
 * One call of sampler_pick() reads a logits row (n_vocab floats) and returns, from one
 * fused pass over the vocabulary (two when sampling at temperature > 0 over the whole
 * vocabulary): the chosen token, the numbers the position scores need (probability of
 * the chosen token, p1 - p2, negative entropy) and the model's view for the UI (top
 * UM_TOPK candidates with probabilities, entropy of the raw distribution).
 * The vocabulary is never sorted; top-k / top-p look only at a small sorted prefix,
 * falling back to a partial heap sort only when the prefix is too short.
 *
 * Invariants:
 * - the mask token is never chosen and carries no probability (its logit counts as -inf);
 *   non-finite logits (NaN, -inf, +inf) count as -inf; a row with no finite logit is an error.
 * - Every random number comes from a stream keyed by (seed, step, position, purpose), so
 *   a run is the same for a given seed whatever the thread count or row order.
 * - Nothing here allocates except sampler_ws_new(); one workspace per thread.
 */
#ifndef UM_SAMPLER_H
#define UM_SAMPLER_H

#include <stdint.h>
#include <stdbool.h>
#include "util.h"
#include "engine.h"
#include "sampler_scan.h"

/* ---------------------------------------------------------------- random numbers */

/* xoshiro256** state, seeded through splitmix64 from the stream key. */
typedef struct um_rng {
    uint64_t s[4];
} um_rng;

typedef enum um_rng_purpose {    /* separates the streams of one (step, position) */
    UM_RNG_TOKEN = 1,            /* token choice: one draw (multinomial) or one per candidate (Gumbel) */
    UM_RNG_SCORE,                /* the 'random' position score */
    UM_RNG_ORIGIN,               /* the 'origin' commit coin */
    UM_RNG_SELECT,               /* alg_temp > 0: Gumbel key of the position */
    UM_RNG_NOISE,                /* uniform-state: the fresh random token a position gets after step `step` */
    UM_RNG_INIT,                 /* uniform-state: the random token a canvas starts with (step = the canvas's index) */
} um_rng_purpose;

void     sampler_rng_init(um_rng *r, uint64_t seed, int64_t step, int64_t pos, um_rng_purpose purpose);
uint64_t sampler_rng_u64(um_rng *r);
double   sampler_rng_uniform(um_rng *r);   /* in the open interval (0, 1), 53 random bits */
/* One uniform from a fresh stream: sampler_rng_init + sampler_rng_uniform. */
double   sampler_uniform_at(uint64_t seed, int64_t step, int64_t pos, um_rng_purpose purpose);
/* A token uniform over [0, n_vocab) from a fresh stream: floor(u n_vocab), u = sampler_uniform_at. */
int32_t  sampler_token_at(uint64_t seed, int64_t step, int64_t pos, um_rng_purpose purpose, int32_t n_vocab);

/* ---------------------------------------------------------------- token choice */

typedef struct um_sample_ws um_sample_ws;   /* per-thread scratch, sized for one vocabulary */

um_sample_ws *sampler_ws_new(int32_t n_vocab);
void          sampler_ws_free(um_sample_ws *ws);

/* What sampler_pick returns for one position. */
typedef struct um_pick {
    int32_t token;               /* the chosen token (never the mask id) */
    /* scoring distribution: Dream's (tempered, top-p/top-k filtered) or, with
       settings.gumbel, LLaDA's (raw softmax of the logits); see docs/decoding.md */
    float   prob;                /* probability of the chosen token: the 'confidence' score */
    float   margin;              /* q1 - q2 (q2 = 0 when one candidate is left) */
    float   neg_entropy;         /* sum q log q, nats, <= 0 */
    /* the model's view: raw softmax of the row (temperature 1, no filter) */
    um_cand top[UM_TOPK];        /* best candidates, descending probability, ties by lower id */
    int32_t n_top;               /* min(UM_TOPK, tokens with a finite logit) */
    float   entropy;             /* nats, of the raw distribution */
} um_pick;

/*
 * Choose a token for canvas position pos at denoising step step from one logits row
 * (n_vocab floats; not modified). Uses settings: temperature (0 = argmax), top_k
 * (0 = off), top_p (>= 1 = off), gumbel, seed. mask_id < 0: no mask token.
 */
int sampler_pick(const float *logits, int32_t n_vocab, int32_t mask_id, const um_settings *s,
                 int64_t step, int64_t pos, um_sample_ws *ws, um_pick *out, um_err *e);

/* Classifier-free guidance, LLaDA's form: out = uncond + (w + 1) * (cond - uncond).
   out may alias cond or uncond. n: floats. */
void sampler_cfg(float *out, const float *cond, const float *uncond, int64_t n, float w);

#endif
