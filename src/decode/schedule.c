/*
 * schedule: denoising schedules and the commit rule. See schedule.h for the rules and
 * docs/decoding.md for how they map onto the LLaDA, Dream and Fast-dLLM reference code.
 *
 * Block step budget, without any stored plan: with T total steps over nb blocks, block b
 * is allotted T/nb (+1 for the first T%nb blocks). At global step d, the active block b
 * has steps_left = (T - d) - (steps allotted to the blocks after b), at least 1. With
 * unchanged settings that is exactly "allot(b) minus the steps already spent in b".
 * LLaDA's per-step count (base+1 for the first M%S steps, then base, base = M/S) equals
 * ceil(R / steps_left) for the R masks left, so the count needs no stored table either.
 */
#include "schedule.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- plan */

static int32_t block_len_of(const um_settings *s, int32_t n_gen) {
    return (s->block_len <= 0 || s->block_len >= n_gen) ? n_gen : s->block_len;
}

/* steps allotted to blocks 0..b together */
static int64_t allot_through(int64_t T, int64_t nb, int64_t b) {
    int64_t rem = T % nb;
    return (b + 1) * (T / nb) + (b + 1 < rem ? b + 1 : rem);
}

int schedule_plan(const um_settings *s, int32_t n_prompt, int32_t n_gen, const bool *masked,
               int32_t steps_done, um_plan *out, um_err *e) {
    if (!s || !masked || !out)
        return um_errf(e, "schedule: missing argument");
    if (n_prompt < 0 || n_gen <= 0)
        return um_errf(e, "schedule: need a prompt of >= 0 and a generation of >= 1 positions (got %d, %d)",
                       n_prompt, n_gen);
    if (s->steps <= 0)
        return um_errf(e, "schedule: steps must be >= 1 (got %d)", s->steps);
    if (steps_done < 0)
        return um_errf(e, "schedule: negative step count %d", steps_done);
    if ((int)s->schedule < 0 || s->schedule >= UM_SCHED_COUNT)
        return um_errf(e, "schedule: unknown schedule %d", (int)s->schedule);
    if (s->schedule == UM_SCHED_TIMESTEP && !(s->eps >= 0.0f && s->eps < 1.0f))
        return um_errf(e, "schedule: eps must be in [0, 1) (got %g)", (double)s->eps);

    /* aligned blocks (block-causal models): block boundaries at multiples of B from canvas
       position 0, so the first block holds the prompt's tail (off positions) and is shorter */
    const bool aligned = s->block_aligned && s->block_len > 0;
    const int32_t B = aligned ? s->block_len : block_len_of(s, n_gen);
    const int32_t off = aligned ? n_prompt % B : 0;
    const int32_t nb = (int32_t)(((int64_t)off + n_gen + B - 1) / B);
    *out = (um_plan){ .n_blocks = nb, .block = nb, .start = n_prompt + n_gen, .end = n_prompt + n_gen };

    int32_t b = 0, R = 0;
    for (; b < nb; b++) {
        int64_t lo64 = (int64_t)n_prompt + (int64_t)b * B - off, hi64 = lo64 + B;
        int32_t lo = lo64 < n_prompt ? n_prompt : (int32_t)lo64;
        int32_t hi = hi64 < (int64_t)n_prompt + n_gen ? (int32_t)hi64 : n_prompt + n_gen;
        R = 0;
        for (int32_t i = lo; i < hi; i++)
            R += masked[i] ? 1 : 0;
        if (R > 0) {
            out->start = lo;
            out->end = hi;
            break;
        }
    }
    if (b == nb) {
        out->done = true;
        out->steps_left = 1;
        return UM_OK;
    }
    out->block = b;
    out->masks_left = R;

    const int64_t T = s->steps;
    const int64_t later = T - allot_through(T, nb, b);
    int64_t left = (T - steps_done) - later;
    out->steps_left = left < 1 ? 1 : (int32_t)(left > INT32_MAX ? INT32_MAX : left);

    switch (s->schedule) {
    case UM_SCHED_BLOCK:
        out->count = (int32_t)(((int64_t)R + out->steps_left - 1) / out->steps_left);
        out->p_transfer = (double)out->count / R;
        break;
    case UM_SCHED_TIMESTEP: {
        if (out->steps_left == 1) {
            out->count = R;
            out->p_transfer = 1.0;
            break;
        }
        /* the block's own step count and the in-block step index */
        int64_t own = allot_through(T, nb, b) - (b > 0 ? allot_through(T, nb, b - 1) : 0);
        int64_t S = own > out->steps_left ? own : out->steps_left;
        int64_t k = S - out->steps_left;
        double w = 1.0 - (double)s->eps;
        double t = 1.0 - (double)k / (double)S * w;
        double sn = 1.0 - (double)(k + 1) / (double)S * w;
        out->p_transfer = 1.0 - sn / t;
        out->count = (int32_t)floor((double)R * out->p_transfer);
        if (out->count > R)
            out->count = R;
        break;
    }
    case UM_SCHED_LINEAR: {
        /* RND1's diffusion_sample: after in-block step k of S, floor(N (S-k-1) / S) of the
           block's N positions stay masked (N = the block's size: every generated position
           starts masked); the block's last step commits the rest. */
        if (out->steps_left == 1) {
            out->count = R;
            out->p_transfer = 1.0;
            break;
        }
        int64_t own = allot_through(T, nb, b) - (b > 0 ? allot_through(T, nb, b - 1) : 0);
        int64_t S = own > out->steps_left ? own : out->steps_left;
        int64_t k = S - out->steps_left;
        int64_t N = out->end - out->start;
        int64_t keep = N * (S - k - 1) / S;
        out->count = R > keep ? (int32_t)(R - keep) : 0;
        out->p_transfer = (double)out->count / R;
        break;
    }
    case UM_SCHED_THRESHOLD:
    case UM_SCHED_FACTOR:
    case UM_SCHED_EB:
        out->count = 1;
        out->p_transfer = 1.0 / R;
        break;
    default:
        break;
    }
    return UM_OK;
}

int32_t schedule_threshold_quota(const um_settings *s, const um_plan *plan, int32_t block_step) {
    if (plan->done || plan->masks_left <= 0)
        return 0;
    if (s->block_steps <= 0)
        return 1;
    /* LLaDA 2.0 modeling_llada2_moe.py _get_num_transfer_tokens(block_length, steps): the
       block's full length (the prompt's share included) split over its steps, the first
       block_length % steps steps taking one more; past its steps, all that is left */
    const int32_t S = s->block_steps;
    const int32_t B = s->block_len > 0 ? s->block_len : plan->end - plan->start;
    int32_t q = block_step < S ? B / S + (block_step < B % S ? 1 : 0) : plan->masks_left;
    return q < plan->masks_left ? q : plan->masks_left;
}

/* ---------------------------------------------------------------- masked decoding's state */

void schedule_mdm_start(um_mdm_state *st) {
    *st = (um_mdm_state){ .blk_start = -1 };
}

int schedule_mdm_plan(um_mdm_state *st, const um_settings *s, int32_t n_prompt, int32_t n_gen, const bool *masked,
                      int32_t steps_done, um_plan *out, um_err *e) {
    if (schedule_plan(s, n_prompt, n_gen, masked, steps_done, out, e)) return UM_FAIL;
    out->post = false;
    if (!s->edit) st->post_left = 0;            /* editing switched off mid-run */
    if (st->post_left > 0) {
        /* LLaDA 2.1: an edit-only step on the block that just filled, before the next one */
        out->block = st->post_block;
        out->start = st->post_start;
        out->end = st->post_end;
        out->masks_left = 0;
        out->count = 0;
        out->done = false;
        out->post = true;
    } else if (!out->done) {
        if (out->start != st->blk_start) { st->blk_start = out->start; st->blk_steps = 0; }
        if (s->schedule == UM_SCHED_THRESHOLD) out->count = schedule_threshold_quota(s, out, st->blk_steps);
    }
    return UM_OK;
}

void schedule_mdm_after(um_mdm_state *st, const um_settings *s, const um_plan *plan, int32_t n_edited,
                        bool block_filled) {
    if (plan->post) {
        st->post_left--;
        if (n_edited == 0) st->post_left = 0;
        return;
    }
    st->blk_steps++;
    if (s->edit && s->post_steps > 0 && block_filled) {
        st->post_left = s->post_steps;
        st->post_block = plan->block;
        st->post_start = plan->start;
        st->post_end = plan->end;
    }
}

bool schedule_mdm_post_due(const um_mdm_state *st) {
    return st->post_left > 0;
}

void schedule_mdm_stop(um_mdm_state *st) {
    st->post_left = 0;
}

/* ---------------------------------------------------------------- scores and selection */

float schedule_score(um_score kind, const um_pick *pk, uint64_t seed, int64_t step, int64_t pos) {
    switch (kind) {
    case UM_SCORE_CONFIDENCE: return pk->prob;
    case UM_SCORE_MARGIN:     return pk->margin;
    case UM_SCORE_ENTROPY:    return pk->neg_entropy;
    case UM_SCORE_RANDOM:
    case UM_SCORE_ORIGIN:
    default:
        return (float)sampler_uniform_at(seed, step, pos, UM_RNG_SCORE);
    }
}

bool schedule_adaptive(um_schedule s) {
    return s == UM_SCHED_THRESHOLD || s == UM_SCHED_FACTOR || s == UM_SCHED_EB || s == UM_SCHED_UNIFORM;
}

/* by key descending, then position ascending: a strict total order */
static bool key_before(const um_scored *a, const um_scored *b) {
    return a->key > b->key || (a->key == b->key && a->pos < b->pos);
}

static bool pos_before(const um_scored *a, const um_scored *b) {
    return a->pos < b->pos;
}

/* In-place heap sort by `before` (first = most before). No allocation: this runs every
   step, and glibc's qsort may malloc a merge buffer. The order is strict, so the result
   does not depend on the sort's stability. */
static void sift(um_scored *v, int32_t n, int32_t i, bool (*before)(const um_scored *, const um_scored *)) {
    for (;;) {
        int32_t l = 2 * i + 1, r = l + 1, w = i;
        /* max-heap on "after": the root is the element that sorts last */
        if (l < n && before(&v[w], &v[l])) w = l;
        if (r < n && before(&v[w], &v[r])) w = r;
        if (w == i)
            return;
        um_scored t = v[i]; v[i] = v[w]; v[w] = t;
        i = w;
    }
}

static void sort_items(um_scored *v, int32_t n, bool (*before)(const um_scored *, const um_scored *)) {
    for (int32_t i = n / 2 - 1; i >= 0; i--)
        sift(v, n, i, before);
    for (int32_t end = n - 1; end > 0; end--) {
        um_scored t = v[0]; v[0] = v[end]; v[end] = t;
        sift(v, end, 0, before);
    }
}

/* move the items flagged by key > 0 to the front, keeping order; return how many */
static int32_t partition_flagged(um_scored *items, int32_t n) {
    int32_t k = 0;
    for (int32_t i = 0; i < n; i++) {
        if (items[i].key > 0.0) {
            um_scored t = items[k]; items[k] = items[i]; items[i] = t;
            k++;
        }
    }
    return k;
}

int32_t schedule_select(const um_settings *s, const um_plan *plan, int64_t step, um_scored *items, int32_t n) {
    if (!s || !plan || !items || n <= 0 || plan->done)
        return 0;
    int32_t k;
    if (s->schedule == UM_SCHED_THRESHOLD) {
        /* Fast-dLLM: every position with score >= tau, and at least the plan's count (1, or
           LLaDA 2.0's quota: its generate() commits the positions above the threshold when
           there are at least quota of them, else the quota best) */
        for (int32_t i = 0; i < n; i++)
            items[i].key = items[i].score;
        sort_items(items, n, key_before);
        k = 0;
        while (k < n && items[k].score >= s->threshold)
            k++;
        int32_t least = plan->count < n ? plan->count : n;
        if (k < least)
            k = least;
        if (k == 0)
            return 0;
    } else if (s->schedule == UM_SCHED_FACTOR) {
        /* Fast-dLLM's get_transfer_index_dynamic: the (i+1)-th best (items[i]) must reach
           1 - factor/(i+2); the first always commits */
        for (int32_t i = 0; i < n; i++)
            items[i].key = items[i].score;
        sort_items(items, n, key_before);
        k = 1;
        while (k < n && (double)items[k].score >= 1.0 - (double)s->factor / (double)(k + 2))
            k++;
    } else if (s->schedule == UM_SCHED_EB || s->schedule == UM_SCHED_UNIFORM) {
        /* EB-sampler: lowest entropy first (key = -entropy), the largest prefix whose entropies
           sum to <= gamma once its largest (the last, in this order) is left out; DiffusionGemma's
           acceptance is the same rule with its entropy bound (diffusion.cpp: an entry is accepted
           when cumE - entropy[pos] <= bound, the sum of the ones before it) */
        const double bound = s->schedule == UM_SCHED_EB ? (double)s->eb_gamma : (double)plan->entropy_bound;
        for (int32_t i = 0; i < n; i++)
            items[i].key = -(double)items[i].entropy;
        sort_items(items, n, key_before);
        double sum = 0;
        k = 0;
        do {
            sum += items[k].entropy;
            k++;
        } while (k < n && sum <= bound);
    } else if (s->score == UM_SCORE_ORIGIN) {
        /* Dream 'origin': independent coins, u < p_transfer */
        for (int32_t i = 0; i < n; i++)
            items[i].key = sampler_uniform_at(s->seed, step, items[i].pos, UM_RNG_ORIGIN) < plan->p_transfer ? 1.0 : 0.0;
        k = partition_flagged(items, n);
    } else {
        k = plan->count < n ? plan->count : n;
        if (k <= 0)
            return 0;
        for (int32_t i = 0; i < n; i++) {
            items[i].key = items[i].score;
            if (s->alg_temp > 0.0f) {
                /* Gumbel-top-k: the k largest score/alg_temp + Gumbel noise are a sample of k
                   without replacement from softmax(score/alg_temp), as Dream's multinomial */
                double u = sampler_uniform_at(s->seed, step, items[i].pos, UM_RNG_SELECT);
                items[i].key = (double)items[i].score / s->alg_temp - log(-log(u));
            }
        }
        sort_items(items, n, key_before);
    }
    sort_items(items, k, pos_before);
    return k;
}

/* ---------------------------------------------------------------- explanation */

/* Does a come before b in the rule's order? eb: lower entropy; else higher score; ties:
 * the lower position (as schedule_select's sorts). */
static bool why_before(bool eb, const um_scored *a, const um_scored *b) {
    if (eb ? a->entropy != b->entropy : a->score != b->score)
        return eb ? a->entropy < b->entropy : a->score > b->score;
    return a->pos < b->pos;
}

void schedule_explain(const um_settings *s, const um_plan *plan, const um_scored *items, int32_t n, int32_t k,
                      um_why *out) {
    const bool eb = s->schedule == UM_SCHED_EB;
    double eb_sum = 0, eb_max = 0;
    for (int32_t c = 0; c < k && eb; c++) {
        eb_sum += items[c].entropy;
        eb_max = items[c].entropy > eb_max ? items[c].entropy : eb_max;
    }
    for (int32_t c = 0; c < k; c++) {
        um_why *w = &out[c];
        memset(w, 0, sizeof *w);
        w->rank = 1;
        for (int32_t j = 0; j < n; j++) w->rank += j != c && why_before(eb, &items[j], &items[c]);
        w->n_elig = n;
        w->count = plan->count;
        w->committed = k;
        w->block = plan->block;
        w->score = eb ? items[c].entropy : items[c].score;
        switch (s->schedule) {
        case UM_SCHED_THRESHOLD:
            w->rule = items[c].score >= s->threshold ? UM_WHY_THRESHOLD : UM_WHY_QUOTA;
            w->bound = s->threshold;
            break;
        case UM_SCHED_FACTOR:
            w->rule = UM_WHY_FACTOR;
            w->bound = (float)(1.0 - (double)s->factor / (double)(w->rank + 1));
            break;
        case UM_SCHED_EB:
            w->rule = UM_WHY_EB;
            w->bound = s->eb_gamma;
            w->value = (float)(eb_sum - eb_max);
            break;
        default:
            w->rule = s->score == UM_SCORE_ORIGIN ? UM_WHY_RANDOM : s->alg_temp > 0.0f ? UM_WHY_SAMPLED : UM_WHY_COUNT;
            w->bound = (float)plan->p_transfer;
            break;
        }
    }
}

/* ---------------------------------------------------------------- uniform-state decoding */

int schedule_us_start(um_us_state *st, const um_settings *s, int32_t n_gen, um_err *e) {
    memset(st, 0, sizeof *st);
    if (s->us_canvas <= 0)
        return um_errf(e, "uniform schedule: canvas length must be >= 1 (got %d)", s->us_canvas);
    if (n_gen <= 0)
        return um_errf(e, "uniform schedule: generation length must be >= 1 (got %d)", n_gen);
    if (s->steps <= 0)
        return um_errf(e, "uniform schedule: steps must be >= 1 (got %d)", s->steps);
    if (!(s->us_t_min > 0) || !(s->us_t_max > 0) || !isfinite(s->us_t_min) || !isfinite(s->us_t_max))
        return um_errf(e, "uniform schedule: temperatures must be > 0 (got %g, %g)", (double)s->us_t_min,
                       (double)s->us_t_max);
    st->n_blocks = (int32_t)(((int64_t)n_gen + s->us_canvas - 1) / s->us_canvas);
    return UM_OK;
}

void schedule_us_plan(const um_us_state *st, const um_settings *s, int32_t n_prompt, um_plan *out) {
    const int32_t C = s->us_canvas, S = s->steps > 0 ? s->steps : 1;
    memset(out, 0, sizeof *out);
    out->n_blocks = st->n_blocks;
    out->block = st->done ? st->n_blocks : st->block;
    out->start = n_prompt + out->block * C;
    out->end = out->start + (st->done ? 0 : C);
    out->done = st->done;
    /* the step counts down from S (diffusion.cpp: cur_step = S .. 1); past S (the step budget
       lowered mid-run) the last temperature holds */
    const int32_t left = S - st->step > 1 ? S - st->step : 1;
    out->steps_left = left;
    out->us_step = st->step;
    out->temperature = s->us_t_min + (s->us_t_max - s->us_t_min) * ((float)left / (float)S);
    out->sc_temp = s->us_self_cond && st->step > 0 ? st->prev_temp : 0.0f;
    out->entropy_bound = s->us_bound;
    out->masks_left = st->done ? 0 : C;
    out->count = 1;
    out->p_transfer = 1.0;
}

bool schedule_us_after(um_us_state *st, const um_settings *s, const um_plan *plan, bool same_argmax,
                       double mean_entropy, int32_t n_accepted) {
    st->held = same_argmax && st->step > 0 ? st->held + 1 : 0;
    st->step++;
    st->prev_temp = plan->temperature;
    st->mean_entropy = (float)mean_entropy;
    st->n_accepted = n_accepted;
    st->stable = st->held >= s->us_stability && mean_entropy < (double)s->us_confidence;
    st->stopped = st->stable || st->step >= s->steps;
    return st->stopped;
}

int32_t schedule_us_cut(const int32_t *tokens, const bool *eog, int32_t n) {
    int32_t cut = n;
    for (int32_t i = 0; i < n; i++)
        if (eog[i]) { cut = i; break; }
    for (int32_t i = 0; i + 1 < cut; i++)
        for (int32_t stride = 1; stride <= 2; stride++) {
            int32_t reps = 0;
            for (int32_t j = i; j + stride < n && tokens[j] == tokens[j + stride]; j += stride)
                reps++;
            if (reps >= 6)
                return i;
        }
    return cut;
}

void schedule_us_next(um_us_state *st, int32_t cut, int32_t C) {
    st->cut = cut;
    if (cut < C || st->block + 1 >= st->n_blocks) {
        st->done = true;
        return;
    }
    st->block++;
    st->step = 0;
    st->held = 0;
    st->prev_temp = 0;
    st->stopped = st->stable = false;
}

/* ---------------------------------------------------------------- whole-run table */

int32_t schedule_table(const um_settings *s, int32_t n_gen, int32_t *counts, int32_t cap, um_err *e) {
    if (!s || !counts)
        return um_errf(e, "schedule: missing argument");
    if (schedule_adaptive(s->schedule))
        return um_errf(e, "schedule: the %s schedule has no fixed table (it depends on the model)", schedule_name(s->schedule));
    if (n_gen <= 0)
        return um_errf(e, "schedule: generation length must be >= 1 (got %d)", n_gen);
    bool *masked = um_malloc((size_t)n_gen * sizeof *masked);
    if (!masked)
        return um_errf(e, "schedule: out of memory");
    for (int32_t i = 0; i < n_gen; i++)
        masked[i] = true;
    int32_t steps = 0;
    for (;;) {
        um_plan p;
        if (schedule_plan(s, 0, n_gen, masked, steps, &p, e) != UM_OK) {
            free(masked);
            return UM_FAIL;
        }
        if (p.done)
            break;
        if (steps >= cap) {
            free(masked);
            return um_errf(e, "schedule: more than %d steps", cap);
        }
        counts[steps++] = p.count;
        /* commit the first count masks of the active block (which ones does not matter) */
        for (int32_t i = p.start, c = 0; i < p.end && c < p.count; i++)
            if (masked[i]) { masked[i] = false; c++; }
    }
    free(masked);
    return steps;
}

/* ---------------------------------------------------------------- names */

static const char *const schedule_names[UM_SCHED_COUNT] = {
    [UM_SCHED_BLOCK] = "block", [UM_SCHED_TIMESTEP] = "timestep",
    [UM_SCHED_THRESHOLD] = "threshold", [UM_SCHED_LINEAR] = "linear",
    [UM_SCHED_FACTOR] = "factor", [UM_SCHED_EB] = "eb", [UM_SCHED_UNIFORM] = "uniform",
};

static const char *const score_names[UM_SCORE_COUNT] = {
    [UM_SCORE_CONFIDENCE] = "confidence", [UM_SCORE_MARGIN] = "margin",
    [UM_SCORE_ENTROPY] = "entropy", [UM_SCORE_RANDOM] = "random", [UM_SCORE_ORIGIN] = "origin",
};

const char *schedule_name(um_schedule s) {
    return (int)s >= 0 && s < UM_SCHED_COUNT ? schedule_names[s] : "?";
}

const char *schedule_score_name(um_score s) {
    return (int)s >= 0 && s < UM_SCORE_COUNT ? score_names[s] : "?";
}

static int from_name(const char *what, const char *const *names, int n, const char *name, int *out, um_err *e) {
    char known[128] = "";
    for (int i = 0; i < n; i++) {
        if (name && !strcmp(name, names[i])) {
            *out = i;
            return UM_OK;
        }
        if (i)
            strncat(known, "|", sizeof known - strlen(known) - 1);
        strncat(known, names[i], sizeof known - strlen(known) - 1);
    }
    return um_errf(e, "unknown %s '%s' (known: %s)", what, name ? name : "", known);
}

int schedule_from_name(const char *name, um_schedule *out, um_err *e) {
    int v;
    if (from_name("schedule", schedule_names, UM_SCHED_COUNT, name, &v, e) != UM_OK)
        return UM_FAIL;
    *out = (um_schedule)v;
    return UM_OK;
}

int schedule_score_from_name(const char *name, um_score *out, um_err *e) {
    int v;
    if (from_name("score", score_names, UM_SCORE_COUNT, name, &v, e) != UM_OK)
        return UM_FAIL;
    *out = (um_score)v;
    return UM_OK;
}
