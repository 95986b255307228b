/*
 * summary: a finished run in numbers, for the comparison panes (docs/ui.md "Compare"): steps,
 * forward passes, tokens per forward pass and the order distance. Pure: one snapshot in,
 * numbers out; the caller passes the scratch, so nothing allocates.
 */
#ifndef UM_UI_SUMMARY_H
#define UM_UI_SUMMARY_H

#include <stdint.h>

#include "engine.h"

typedef struct ui_summary {
    int32_t steps;
    int64_t passes;                 /* forward passes */
    double  tok_per_pass;           /* generated positions / forward passes */
    double  order_dist;             /* 0: committed left to right ... 1: right to left */
} ui_summary;

/* The summary of a finished run s (all positions committed). order_dist: rank the generated
 * positions by (commit step, position): r_i for the i-th position in reading order; the
 * distance is sum |r_i - i| over the n positions divided by its maximum floor(n*n/2) (the
 * reverse order), so 0 is left to right, 1 right to left, about 2/3 a random order.
 * scratch: at least s->step + 2 ints. */
void ui_summary_of(const um_snapshot *s, int32_t *scratch, ui_summary *out);

/* Uniform-state runs (s->us.on). The inspector's line for position i: its kind and why, by
 * the entropy rule ("lower H": the sum of the entropies below its own on its canvas, ties to the
 * lower position; accepted when at most the bound, else renoised). */
void ui_summary_why_uniform(const um_snapshot *s, int32_t i, char *buf, size_t cap);

#endif
