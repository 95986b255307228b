/*
 * sampler_scan: the sampler's pass-1 kernels over one logits row (the reference, the
 * AVX2+FMA version in arch/x86/sampler_avx2.c and the NEON one in arch/arm/sampler_neon.c), below the sampler (src/decode/sampler.c) that
 * chooses between them: the kernels call nothing above this file.
 */
#ifndef UM_SAMPLER_SCAN_H
#define UM_SAMPLER_SCAN_H

#include <stdbool.h>
#include <stdint.h>

/* Internal to the sampler; exported so tests can hold the fast kernel against the
 * reference. Both read x[0, n) except index skip (the mask id; < 0: none), count
 * non-finite values as absent, and return the max finite logit m, the number of finite
 * logits, Z = sum e^(l-m), S = sum e^(l-m)(l-m), and with track_t the same for
 * (l-m)*inv_t, plus the best cap (logit, id) pairs by logit descending, ties by lower id. */

typedef struct um_logit_id {
    float   logit;
    int32_t id;
} um_logit_id;

typedef struct um_row_scan {
    float   m;                   /* max finite logit */
    int32_t n_finite;
    double  zr, sr;              /* raw sums (relative to m) */
    double  zt, st;              /* tempered sums, when track_t */
    int32_t n_best;              /* filled entries of best */
} um_row_scan;

typedef void (*um_scan_fn)(const float *x, int32_t n, int32_t skip, double inv_t, bool track_t,
                           um_logit_id *best, int32_t cap, um_row_scan *out);

void sampler_scan_ref(const float *x, int32_t n, int32_t skip, double inv_t, bool track_t,
                      um_logit_id *best, int32_t cap, um_row_scan *out);
/* AVX2+FMA: two vector passes (max and best list, then the sums with a polynomial exp). */
void sampler_scan_avx2(const float *x, int32_t n, int32_t skip, double inv_t, bool track_t,
                       um_logit_id *best, int32_t cap, um_row_scan *out);
/* AArch64 Advanced SIMD (arch/arm/sampler_neon.c): the same two passes, 4 lanes. */
void sampler_scan_neon(const float *x, int32_t n, int32_t skip, double inv_t, bool track_t,
                       um_logit_id *best, int32_t cap, um_row_scan *out);
/* Insert (l, id) into a best list sorted by logit descending; ids must arrive ascending. */
void sampler_best_insert(um_logit_id *best, int32_t *n_best, int32_t cap, float l, int32_t id);

#endif
