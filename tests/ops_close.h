/*
 * ops_close.h: the element-wise tolerance check of the ops tests (test_ops.c,
 * test_ops_dgemma.c): CHECK_CLOSE(a, b, n, abs_tol, rel_tol, what) fails naming the worst
 * element when some |a - b| exceeds abs_tol + rel_tol |b| (a NaN on one side only always does).
 */
#ifndef UM_TEST_OPS_CLOSE_H
#define UM_TEST_OPS_CLOSE_H

#include <math.h>
#include <stdint.h>

/* Largest |a - b| - tol(b) over n; returns the index of the worst element in *at.
 * tol(b) = abs_tol + rel_tol * |b|. <= 0 means within tolerance. */
static inline double ops_worst(const float *a, const float *b, int64_t n, double abs_tol, double rel_tol, int64_t *at) {
    double w = -1e300;
    *at = -1;
    for (int64_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - (double)b[i]);
        if (isnan(a[i]) != isnan(b[i])) d = INFINITY;
        double ex = d - (abs_tol + rel_tol * fabs((double)b[i]));
        if (ex > w) { w = ex; *at = i; }
    }
    return w;
}

#define CHECK_CLOSE(a, b, n, abs_tol, rel_tol, what)                                     \
    do { int64_t _at; double _w = ops_worst(a, b, n, abs_tol, rel_tol, &_at);            \
         CHECK_MSG(_w <= 0, "%s: element %lld: %.9g vs ref %.9g", what, (long long)_at,   \
                   (double)(a)[_at], (double)(b)[_at]); } while (0)

#endif
