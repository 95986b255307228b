/*
 * harness: a minimal test harness. Tests register themselves with TEST(name); the runner
 * (tests/harness.c) runs them all (or those whose name or file contains one of its
 * arguments) and ends with
 * "unit: N passed, N failed, N skipped". A failed CHECK ends the test at once.
 * Paths in tests are relative to the repository root (the runner chdirs there).
 */
#ifndef UM_HARNESS_H
#define UM_HARNESS_H

#include <math.h>
#include <stdio.h>
#include <string.h>

typedef void (*th_fn)(void);
void th_register(const char *name, const char *file, th_fn fn);
void th_fail(const char *file, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void th_skip(const char *why);      /* mark the current test skipped (counted apart, never as passed) */
int  th_failed(void);               /* has the current test failed? */

#define TEST(name)                                                              \
    static void name(void);                                                     \
    __attribute__((constructor)) static void name##_register(void) {            \
        th_register(#name, __FILE__, name);                                     \
    }                                                                           \
    static void name(void)

#define CHECK(cond)                                                             \
    do { if (!(cond)) { th_fail(__FILE__, __LINE__, "%s", #cond); return; } } while (0)

#define CHECK_MSG(cond, ...)                                                    \
    do { if (!(cond)) { th_fail(__FILE__, __LINE__, __VA_ARGS__); return; } } while (0)

#define CHECK_EQ(a, b)                                                          \
    do { long long _a = (long long)(a), _b = (long long)(b);                    \
         if (_a != _b) { th_fail(__FILE__, __LINE__, "%s == %s (%lld vs %lld)", #a, #b, _a, _b); return; } } while (0)

#define CHECK_NEAR(a, b, tol)                                                   \
    do { double _a = (double)(a), _b = (double)(b);                             \
         if (!(fabs(_a - _b) <= (tol))) { th_fail(__FILE__, __LINE__, "%s ~ %s (%.9g vs %.9g, tol %g)", #a, #b, _a, _b, (double)(tol)); return; } } while (0)

#define CHECK_STREQ(a, b)                                                       \
    do { const char *_a = (a), *_b = (b);                                       \
         if (!_a || !_b || strcmp(_a, _b) != 0) { th_fail(__FILE__, __LINE__, "%s == %s (\"%s\" vs \"%s\")", #a, #b, _a ? _a : "(null)", _b ? _b : "(null)"); return; } } while (0)

#define CHECK_CONTAINS(hay, needle)                                             \
    do { const char *_h = (hay), *_n = (needle);                                \
         if (!_h || !strstr(_h, _n)) { th_fail(__FILE__, __LINE__, "\"%s\" should contain \"%s\"", _h ? _h : "(null)", _n); return; } } while (0)

#endif
