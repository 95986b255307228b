/*
 * sampler: token choice from one logits row, and the run's deterministic random streams.
 *
 * How a row is read (n = n_vocab, K = a small sorted prefix, at most SAMPLER_PREFIX):
 *   pass 1 (always): online softmax over the row: running max m, and in float64
 *          Z = sum e^(l-m), S = sum e^(l-m)(l-m) for the raw row and, when the
 *          temperature is neither 0 nor 1, the same for l/T; rescaled whenever m grows.
 *          The same pass keeps the K best (logit, id) pairs by insertion.
 *          Entropy = log Z - S/Z, so the raw view and every score come out of this pass.
 *   pass 2 (only at temperature > 0 with no filter): the multinomial walk or the Gumbel
 *          keys over the whole vocabulary, in token-id order.
 * top-k / top-p need the best candidates in order; they come from the K-prefix and, only
 * when that is too short (flat distributions, large top-k), from a heap built over the
 * whole row and popped lazily (a partial heap sort, O(n + j log n) for j candidates).
 *
 * Order of candidates: by logit descending, ties by lower token id. Every selection in
 * this file uses that one strict order, so results never depend on sort stability.
 */
#include "sampler.h"
#include "cpu.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---------------------------------------------------------------- random numbers */

static uint64_t splitmix64(uint64_t *x) {
    uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static uint64_t mix64(uint64_t x) {
    uint64_t t = x;
    return splitmix64(&t);
}

void sampler_rng_init(um_rng *r, uint64_t seed, int64_t step, int64_t pos, um_rng_purpose purpose) {
    /* Each key part goes through a full 64-bit mix before the next is folded in, so
       neighbouring (step, pos) pairs give unrelated streams. */
    uint64_t k = mix64(seed);
    k = mix64(k ^ (uint64_t)step);
    k = mix64(k ^ (uint64_t)pos);
    k = mix64(k ^ (uint64_t)purpose);
    for (int i = 0; i < 4; i++)
        r->s[i] = splitmix64(&k);
}

static inline uint64_t rotl(uint64_t x, int k) {
    return (x << k) | (x >> (64 - k));
}

uint64_t sampler_rng_u64(um_rng *r) {
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

double sampler_rng_uniform(um_rng *r) {
    /* 53 bits centred in their cell: never 0, never 1, so log(u) and log(-log u) are finite. */
    return ((double)(sampler_rng_u64(r) >> 11) + 0.5) * 0x1.0p-53;
}

double sampler_uniform_at(uint64_t seed, int64_t step, int64_t pos, um_rng_purpose purpose) {
    um_rng r;
    sampler_rng_init(&r, seed, step, pos, purpose);
    return sampler_rng_uniform(&r);
}

int32_t sampler_token_at(uint64_t seed, int64_t step, int64_t pos, um_rng_purpose purpose, int32_t n_vocab) {
    /* u < 1 - 2^-54, so u n < n for any vocabulary below 2^53 */
    int32_t t = (int32_t)(sampler_uniform_at(seed, step, pos, purpose) * (double)n_vocab);
    return t < n_vocab ? t : n_vocab - 1;
}

/* ---------------------------------------------------------------- workspace */

/* pass 1: the AVX2+FMA kernel when the CPU has both, NEON on AArch64, else the reference;
 * UNMASK_KERNEL=ref forces the reference, as it does for ops and matmul */
static um_scan_fn choose_scan(void) {
    const char *env = getenv("UNMASK_KERNEL");
    if (env && !strcasecmp(env, "ref"))
        return sampler_scan_ref;
    const um_cpu *c = cpu_features();
#if defined(__x86_64__) || defined(__i386__)
    if (c->avx2 && c->fma && c->os_avx)
        return sampler_scan_avx2;
#elif defined(__aarch64__)
    if (c->neon)
        return sampler_scan_neon;
#endif
    (void)c;
    return sampler_scan_ref;
}

#define SAMPLER_PREFIX 64        /* sorted prefix kept by pass 1 when a filter is on */

struct um_sample_ws {
    int32_t n_vocab;
    um_scan_fn scan;              /* pass 1: the SIMD kernel when the CPU has it, else the reference */
    um_logit_id  best[SAMPLER_PREFIX]; /* pass 1: best candidates, strict order */
    um_logit_id *heap;                 /* (n_vocab) fallback: whole row as a max-heap, popped to its tail */
};

um_sample_ws *sampler_ws_new(int32_t n_vocab) {
    if (n_vocab <= 0)
        return NULL;
    um_sample_ws *ws = um_calloc(1, sizeof *ws);
    if (!ws)
        return NULL;
    ws->n_vocab = n_vocab;
    ws->scan = choose_scan();
    ws->heap = um_malloc((size_t)n_vocab * sizeof *ws->heap);
    if (!ws->heap) {
        free(ws);
        return NULL;
    }
    return ws;
}

void sampler_ws_free(um_sample_ws *ws) {
    if (!ws)
        return;
    free(ws->heap);
    free(ws);
}

/* a comes before b */
static inline bool ent_before(um_logit_id a, um_logit_id b) {
    return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
}

/* ---------------------------------------------------------------- sorted prefix */

typedef struct prefix {
    const um_logit_id *best;
    int32_t       n_best;        /* pass-1 prefix length (the best n_best of the row) */
    int32_t       n_finite;      /* candidates in all */
    bool          all_in_best;   /* the prefix holds every finite entry */
    um_logit_id       *heap;          /* fallback heap, built on first need */
    int32_t       heap_n;        /* entries still in the heap */
    int32_t       popped;        /* entries popped to the tail, in order */
    bool          heap_built;
    const float  *x;
    int32_t       n_vocab, mask_id;
} prefix;

static void heap_down(um_logit_id *h, int32_t n, int32_t i) {
    for (;;) {
        int32_t l = 2 * i + 1, r = l + 1, b = i;
        if (l < n && ent_before(h[l], h[b])) b = l;
        if (r < n && ent_before(h[r], h[b])) b = r;
        if (b == i)
            return;
        um_logit_id t = h[i]; h[i] = h[b]; h[b] = t;
        i = b;
    }
}

/* The j-th candidate in order (0-based); j < n_finite. */
static um_logit_id prefix_get(prefix *p, int32_t j) {
    if (!p->heap_built && (j < p->n_best))
        return p->best[j];
    if (!p->heap_built) {
        int32_t n = 0;
        for (int32_t i = 0; i < p->n_vocab; i++) {
            float l = p->x[i];
            if (i == p->mask_id || !(l > -INFINITY) || l == INFINITY)
                continue;
            p->heap[n++] = (um_logit_id){ l, i };
        }
        for (int32_t i = n / 2 - 1; i >= 0; i--)
            heap_down(p->heap, n, i);
        p->heap_n = n;
        p->popped = 0;
        p->heap_built = true;
    }
    while (p->popped <= j) {
        /* pop the root to the tail: the tail holds the popped entries, best last */
        int32_t n = p->heap_n;
        um_logit_id top = p->heap[0];
        p->heap[0] = p->heap[n - 1];
        p->heap_n = n - 1;
        heap_down(p->heap, p->heap_n, 0);
        p->heap[n - 1] = top;
        p->popped++;
    }
    return p->heap[p->n_finite - 1 - j];
}

/* ---------------------------------------------------------------- token choice */

int sampler_pick(const float *logits, int32_t n_vocab, int32_t mask_id, const um_settings *s,
                 int64_t step, int64_t pos, um_sample_ws *ws, um_pick *out, um_err *e) {
    if (!logits || !s || !ws || !out)
        return um_errf(e, "sampler: missing argument");
    if (n_vocab <= 0 || n_vocab > ws->n_vocab)
        return um_errf(e, "sampler: row of %d logits does not fit a workspace for %d", n_vocab, ws->n_vocab);
    if (!(s->temperature >= 0.0f) || !isfinite(s->temperature))
        return um_errf(e, "sampler: temperature %g is not a number >= 0", (double)s->temperature);
    if (s->top_k < 0)
        return um_errf(e, "sampler: top-k %d is negative", s->top_k);
    if (isnan(s->top_p))
        return um_errf(e, "sampler: top-p is not a number");

    const double temp = s->temperature;
    const double tq = temp > 0.0 ? temp : 1.0;          /* temperature of the scoring distribution */
    const bool has_top_p = s->top_p < 1.0f;
    const bool has_top_k = s->top_k > 0;

    const int32_t cap = (has_top_p || has_top_k) ? SAMPLER_PREFIX : (UM_TOPK > 2 ? UM_TOPK : 2);
    const bool track_t = tq != 1.0;
    um_row_scan st;
    ws->scan(logits, n_vocab, mask_id, 1.0 / tq, track_t, ws->best, cap, &st);
    if (st.n_finite == 0)
        return um_errf(e, "sampler: position %lld has no finite logit", (long long)pos);

    const double m = st.m;
    /* the raw view */
    out->n_top = st.n_best < UM_TOPK ? st.n_best : UM_TOPK;
    for (int32_t j = 0; j < UM_TOPK; j++) {
        if (j < out->n_top)
            out->top[j] = (um_cand){ ws->best[j].id, (float)(exp(ws->best[j].logit - m) / st.zr) };
        else
            out->top[j] = (um_cand){ -1, 0.0f };
    }
    out->entropy = (float)fmax(0.0, log(st.zr) - st.sr / st.zr);

    /* the kept set: a prefix of M candidates in order, or the whole row (M = n_finite) */
    const double zq = track_t ? st.zt : st.zr;       /* tempered Z over the whole row */
    const double sq = track_t ? st.st : st.sr;
    prefix pf = { .best = ws->best, .n_best = st.n_best, .n_finite = st.n_finite,
                  .heap = ws->heap, .x = logits, .n_vocab = n_vocab, .mask_id = mask_id };
    int32_t M = st.n_finite;
    if (has_top_p) {
        /* Dream's nucleus: keep candidates up to and including the first whose cumulative
           tempered probability exceeds top_p (at least one). */
        double cum = 0.0;
        int32_t j = 0;
        while (j < st.n_finite) {
            um_logit_id c = prefix_get(&pf, j);
            cum += exp((c.logit - m) / tq) / zq;
            j++;
            if (cum > s->top_p)
                break;
        }
        M = j;
    }
    if (has_top_k && s->top_k < M)
        M = s->top_k;
    const bool subset = M < st.n_finite;

    /* scoring distribution over the kept set (Dream) or the raw row (LLaDA, gumbel) */
    double zs, ss, ts;                                    /* Z, S and temperature of the scores */
    um_logit_id c0 = prefix_get(&pf, 0);
    um_logit_id c1 = M > 1 ? prefix_get(&pf, 1) : c0;
    if (s->gumbel) {
        zs = st.zr; ss = st.sr; ts = 1.0;
        c1 = st.n_finite > 1 ? prefix_get(&pf, 1) : c0;
    } else if (subset) {
        zs = 0.0; ss = 0.0; ts = tq;
        for (int32_t j = 0; j < M; j++) {
            double x = (prefix_get(&pf, j).logit - m) / tq, ex = exp(x);
            zs += ex;
            ss += ex * x;
        }
    } else {
        zs = zq; ss = sq; ts = tq;
    }
    const int32_t n_scored = s->gumbel ? st.n_finite : M;
    double q1 = exp((c0.logit - m) / ts) / zs;
    double q2 = n_scored > 1 ? exp((c1.logit - m) / ts) / zs : 0.0;
    out->margin = (float)(q1 - q2);
    out->neg_entropy = (float)fmin(0.0, ss / zs - log(zs));

    /* the token */
    int32_t tok = c0.id;
    float tok_logit = c0.logit;
    if (temp > 0.0) {
        um_rng rng;
        sampler_rng_init(&rng, s->seed, step, pos, UM_RNG_TOKEN);
        if (s->gumbel) {
            /* LLaDA: argmax exp(l) / (-log u)^T in float64; taken in the log domain
               (l - T log(-log u)), which is the same argmax and cannot overflow. */
            double best_key = -INFINITY;
            if (subset) {
                for (int32_t j = 0; j < M; j++) {
                    um_logit_id c = prefix_get(&pf, j);
                    double key = (double)c.logit - temp * log(-log(sampler_rng_uniform(&rng)));
                    if (key > best_key) { best_key = key; tok = c.id; tok_logit = c.logit; }
                }
            } else {
                for (int32_t i = 0; i < n_vocab; i++) {
                    float l = logits[i];
                    if (i == mask_id || !(l > -INFINITY) || l == INFINITY)
                        continue;
                    double key = (double)l - temp * log(-log(sampler_rng_uniform(&rng)));
                    if (key > best_key) { best_key = key; tok = i; tok_logit = l; }
                }
            }
        } else {
            /* Dream: one draw from the tempered, filtered distribution (inverse CDF walk) */
            double target = sampler_rng_uniform(&rng) * zs, acc = 0.0;
            bool found = false;
            if (subset) {
                for (int32_t j = 0; j < M && !found; j++) {
                    um_logit_id c = prefix_get(&pf, j);
                    acc += exp((c.logit - m) / tq);
                    tok = c.id; tok_logit = c.logit;
                    found = acc >= target;
                }
            } else {
                for (int32_t i = 0; i < n_vocab && !found; i++) {
                    float l = logits[i];
                    if (i == mask_id || !(l > -INFINITY) || l == INFINITY)
                        continue;
                    acc += exp((l - m) / tq);
                    tok = i; tok_logit = l;   /* rounding shortfall: the last candidate */
                    found = acc >= target;
                }
            }
        }
    }
    out->token = tok;
    out->prob = (float)(exp((tok_logit - m) / ts) / zs);
    return UM_OK;
}

void sampler_cfg(float *out, const float *cond, const float *uncond, int64_t n, float w) {
    const float g = w + 1.0f;
    for (int64_t i = 0; i < n; i++)
        out[i] = uncond[i] + g * (cond[i] - uncond[i]);
}
