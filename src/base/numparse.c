/*
 * numparse: whole numbers and decimals from flags and config values (see numparse.h).
 *
 * The spelling is checked by hand first, so strtoll/strtod only ever see text that is
 * plain decimal: they would otherwise accept leading spaces, "0x10", "nan", "inf" and hex
 * floats, and stop silently at trailing garbage.
 */
#include "numparse.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SHOW_MAX 60             /* bytes of a bad value quoted in a message */

static bool is_digit(char c) { return c >= '0' && c <= '9'; }

/* The value as quoted in a message: at most SHOW_MAX bytes, then "..." */
static const char *shown(const char *s, char *buf, size_t cap) {
    if (strlen(s) <= SHOW_MAX) return s;
    snprintf(buf, cap, "%.*s...", SHOW_MAX, s);
    return buf;
}

static int fail(um_err *e, const char *what, const char *s, const char *why) {
    char buf[SHOW_MAX + 4];
    bool pre = what && *what;
    return um_errf(e, "%s%s'%s' %s", pre ? what : "", pre ? ": " : "", shown(s, buf, sizeof buf), why);
}

void num_format(double v, char *buf, size_t cap) {
    if (v == 0) v = 0;                                       /* -0 prints as 0 */
    if (!isfinite(v)) { snprintf(buf, cap, "%s", isnan(v) ? "nan" : v > 0 ? "inf" : "-inf"); return; }
    if (v == floor(v)) { snprintf(buf, cap, "%.0f", v); return; }
    for (int prec = 1; prec <= 40; prec++) {
        snprintf(buf, cap, "%.*f", prec, v);
        if (strtod(buf, NULL) == v) return;
    }
}

/* ------------------------------------------------------------------ integers */

int num_int(const char *what, const char *s, int64_t lo, int64_t hi, int64_t *out, um_err *e) {
    const char *p = s + (*s == '+' || *s == '-');
    bool ok = is_digit(*p) && !(p[0] == '0' && p[1]);        /* a leading zero: "010", "0x10", "0.5" */
    for (const char *q = p; ok && *q; q++) ok = is_digit(*q);
    if (!ok) return fail(e, what, s, "is not a whole number");
    errno = 0;
    long long v = strtoll(s, NULL, 10);
    if (errno == ERANGE || v < lo || v > hi) {
        char why[96];
        snprintf(why, sizeof why, "is out of range (%lld to %lld)", (long long)lo, (long long)hi);
        return fail(e, what, s, why);
    }
    *out = v;
    return UM_OK;
}

/* ------------------------------------------------------------------ numbers */

/* [+-] (digits [. [digits]] | . digits) [(e|E) [+-] digits], and nothing else */
static bool decimal_syntax(const char *p) {
    p += *p == '+' || *p == '-';
    int digits = 0;
    while (is_digit(*p)) { p++; digits++; }
    if (*p == '.') {
        p++;
        while (is_digit(*p)) { p++; digits++; }
    }
    if (!digits) return false;
    if (*p == 'e' || *p == 'E') {
        p++;
        p += *p == '+' || *p == '-';
        if (!is_digit(*p)) return false;
        while (is_digit(*p)) p++;
    }
    return *p == '\0';
}

static bool in_range(double v, double lo, double hi, unsigned open) {
    bool below = (open & NUM_LO_OPEN) ? !(v > lo) : !(v >= lo);
    bool above = (open & NUM_HI_OPEN) ? !(v < hi) : !(v <= hi);
    return !below && !above;
}

static int out_of_range(um_err *e, const char *what, const char *s, double lo, double hi, unsigned open) {
    char l[64], h[64], ex[80] = "", why[220];
    num_format(lo, l, sizeof l);
    num_format(hi, h, sizeof h);
    if ((open & NUM_LO_OPEN) && (open & NUM_HI_OPEN)) snprintf(ex, sizeof ex, ", both excluded");
    else if (open) snprintf(ex, sizeof ex, ", %s excluded", (open & NUM_LO_OPEN) ? l : h);
    snprintf(why, sizeof why, "is out of range (%s to %s%s)", l, h, ex);
    return fail(e, what, s, why);
}

int num_float(const char *what, const char *s, double lo, double hi, unsigned open, double *out, um_err *e) {
    if (!decimal_syntax(s)) return fail(e, what, s, "is not a number");
    double v = strtod(s, NULL);          /* past the double range: inf; below it: the denormal or 0 */
    if (v == 0) v = 0;                   /* -0 reads as 0 */
    if (!isfinite(v) || !in_range(v, lo, hi, open)) return out_of_range(e, what, s, lo, hi, open);
    *out = v;
    return UM_OK;
}

int num_f32(const char *what, const char *s, double lo, double hi, unsigned open, float *out, um_err *e) {
    double x;
    if (num_float(what, s, lo, hi, open, &x, e)) return UM_FAIL;
    if (fabs(x) > FLT_MAX || !in_range((double)(float)x, lo, hi, open)) return out_of_range(e, what, s, lo, hi, open);
    *out = (float)x;
    return UM_OK;
}

/* ------------------------------------------------------------------ command-line forms */

static int report(const char *prog, const um_err *e) {
    fprintf(stderr, "%s: %s\n", prog, e->msg);
    return -1;
}

int num_arg_int(const char *prog, const char *flag, const char *v, int64_t lo, int64_t hi, int64_t *out) {
    um_err e;
    return num_int(flag, v, lo, hi, out, &e) ? report(prog, &e) : 0;
}

int num_arg_i32(const char *prog, const char *flag, const char *v, int32_t lo, int32_t hi, int32_t *out) {
    int64_t x;
    if (num_arg_int(prog, flag, v, lo, hi, &x)) return -1;
    *out = (int32_t)x;
    return 0;
}

int num_arg_float(const char *prog, const char *flag, const char *v, double lo, double hi, unsigned open, double *out) {
    um_err e;
    return num_float(flag, v, lo, hi, open, out, &e) ? report(prog, &e) : 0;
}

int num_arg_f32(const char *prog, const char *flag, const char *v, double lo, double hi, unsigned open, float *out) {
    um_err e;
    return num_f32(flag, v, lo, hi, open, out, &e) ? report(prog, &e) : 0;
}
