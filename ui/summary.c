/*
 * summary: a finished run in numbers (see summary.h). The order distance counts ranks with
 * one counting pass over the commit steps (scratch), no sort and no allocation. The uniform-state
 * lines read only the snapshot.
 */
#include <stdio.h>
#include <string.h>

#include "summary.h"
#include "util.h"

void ui_summary_of(const um_snapshot *s, int32_t *scratch, ui_summary *out) {
    int32_t n = s->n_canvas - s->n_prompt, max_step = UM_MAX(s->step, 0);
    int32_t *base = scratch;                        /* (max_step + 2) first rank per step */
    memset(out, 0, sizeof *out);
    out->steps = s->step;
    out->passes = s->passes_total;
    out->tok_per_pass = s->passes_total > 0 ? (double)n / (double)s->passes_total : 0;
    if (n <= 1) return;
    memset(base, 0, (size_t)(max_step + 2) * sizeof *base);
    for (int32_t i = 0; i < n; i++) base[UM_MIN(UM_MAX(s->pos[s->n_prompt + i].commit_step, 0), max_step) + 1]++;
    for (int32_t k = 1; k <= max_step + 1; k++) base[k] += base[k - 1];
    int64_t sum = 0;
    for (int32_t i = 0; i < n; i++) {              /* reading order: rank = next slot of its step */
        int32_t r = base[UM_MIN(UM_MAX(s->pos[s->n_prompt + i].commit_step, 0), max_step)]++;
        sum += r > i ? r - i : i - r;
    }
    out->order_dist = (double)sum / (double)((int64_t)n * n / 2);
}

void ui_summary_why_uniform(const um_snapshot *s, int32_t i, char *buf, size_t cap) {
    const um_pos *p = &s->pos[i];
    const um_us_view *u = &s->us;
    if (p->us == UM_US_NOISE) { snprintf(buf, cap, "noise: random, no step yet"); return; }
    if (p->us == UM_US_CUT) { snprintf(buf, cap, "cut: past end of text/repeat"); return; }
    if (p->us == UM_US_KEPT) { snprintf(buf, cap, "kept: a stopped canvas's output"); return; }
    double below = 0;
    for (int32_t j = u->start; j < u->end && j < s->n_canvas; j++) {
        const um_pos *q = &s->pos[j];
        if (q->entropy < p->entropy || (q->entropy == p->entropy && j < i)) below += q->entropy;
    }
    if (p->us == UM_US_ACCEPTED)
        snprintf(buf, cap, "accepted: lower H %.3f <= %.3f", below, (double)u->entropy_bound);
    else
        snprintf(buf, cap, "draft: lower H %.3f > %.3f", below, (double)u->entropy_bound);
}

