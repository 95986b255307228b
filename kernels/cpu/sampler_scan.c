/*
 * sampler_scan: the reference pass-1 kernel and the best-list insertion the AVX2 kernel shares
 * (see sampler_scan.h); which kernel runs is the sampler's choice (src/decode/sampler.c).
 * The reference is one online pass: a running max with rescaled sums and the best list.
 */
#include "sampler_scan.h"

#include <math.h>

/* ---------------------------------------------------------------- pass 1 (reference) */

typedef struct scan_state {
    um_row_scan *o;
    double       inv_t;
    bool         track_t;
    um_logit_id *best;           /* (cap) sorted */
    int32_t      cap;
} scan_state;

/* One online pass over x[lo, hi): running max with rescaled sums, and the best-cap list. */
static void scan_range(const float *x, int32_t lo, int32_t hi, scan_state *st) {
    um_row_scan *o = st->o;
    for (int32_t i = lo; i < hi; i++) {
        float l = x[i];
        if (!(l > -INFINITY) || l == INFINITY)   /* NaN, -inf, +inf: no probability */
            continue;
        if (o->n_finite == 0) {
            o->m = l;
        } else if (l > o->m) {
            /* new max: rescale both sums (S' = f (S + (m - m') Z), Z' = f Z) */
            double dm = (double)o->m - (double)l;
            double f = exp(dm);
            o->sr = f * (o->sr + dm * o->zr);
            o->zr *= f;
            if (st->track_t) {
                double dmt = dm * st->inv_t, ft = exp(dmt);
                o->st = ft * (o->st + dmt * o->zt);
                o->zt *= ft;
            }
            o->m = l;
        }
        o->n_finite++;
        float d = l - o->m;
        double e = expf(d);
        o->zr += e;
        o->sr += e * d;
        if (st->track_t) {
            float dt = (float)(d * st->inv_t);
            double et = expf(dt);
            o->zt += et;
            o->st += et * dt;
        }
        sampler_best_insert(st->best, &o->n_best, st->cap, l, i);
    }
}

void sampler_best_insert(um_logit_id *best, int32_t *n_best, int32_t cap, float l, int32_t id) {
    /* ids arrive ascending, so an equal logit never displaces an earlier entry */
    if (*n_best < cap || l > best[*n_best - 1].logit) {
        int32_t j = *n_best < cap ? (*n_best)++ : cap - 1;
        while (j > 0 && l > best[j - 1].logit) {
            best[j] = best[j - 1];
            j--;
        }
        best[j] = (um_logit_id){ l, id };
    }
}

void sampler_scan_ref(const float *x, int32_t n, int32_t skip, double inv_t, bool track_t,
                      um_logit_id *best, int32_t cap, um_row_scan *out) {
    *out = (um_row_scan){ .m = -INFINITY };
    scan_state st = { .o = out, .inv_t = inv_t, .track_t = track_t, .best = best, .cap = cap };
    if (skip >= 0 && skip < n) {
        scan_range(x, 0, skip, &st);
        scan_range(x, skip + 1, n, &st);
    } else {
        scan_range(x, 0, n, &st);
    }
}
