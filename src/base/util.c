/*
 * util: error formatting, allocation wrappers, clock and the
 * scalar half-precision conversions every other module builds on.
 */
#define _POSIX_C_SOURCE 200809L
#include "util.h"
#include "esc.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <limits.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <pthread.h>
#if defined(__APPLE__)
#include <mach-o/dyld.h>
#endif

/* Messages are one line and may quote names from hostile files: they go through the one
 * escaping rule (esc.h), so a control byte (a newline, a terminal escape) or a byte that is not
 * UTF-8 becomes \xNN and printing a message can never drive the terminal. raw is escaped
 * into e->msg, cut at a whole unit when it does not fit. */
static void set_escaped(um_err *e, const char *raw) {
    esc_str(e->msg, sizeof e->msg, raw, strlen(raw), 0, 0);
}

int um_errf(um_err *e, const char *fmt, ...) {
    if (e) {
        char raw[sizeof e->msg];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(raw, sizeof raw, fmt, ap);
        va_end(ap);
        set_escaped(e, raw);
    }
    return UM_FAIL;
}

int um_err_prefix(um_err *e, const char *fmt, ...) {
    if (!e) return UM_FAIL;
    char old[sizeof e->msg], pre[256], raw[sizeof e->msg];
    memcpy(old, e->msg, sizeof old);
    old[sizeof old - 1] = '\0';
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(pre, sizeof pre, fmt, ap);
    va_end(ap);
    snprintf(raw, sizeof raw, "%s: %s", pre, old);
    set_escaped(e, raw);
    return UM_FAIL;
}

void *um_malloc(size_t n) { return malloc(n ? n : 1); }
void *um_calloc(size_t n, size_t size) { return calloc(n ? n : 1, size ? size : 1); }

void *um_malloc_aligned(size_t n) {
    void *p = NULL;
    size_t rounded = (n + 63) & ~(size_t)63;
    if (posix_memalign(&p, 64, rounded ? rounded : 64) != 0) return NULL;
    return p;
}
void um_free_aligned(void *p) { free(p); }

void um_hugepage_hint(void *p, size_t n) {
#ifdef MADV_HUGEPAGE
    const uintptr_t huge = (uintptr_t)2 << 20;
    uintptr_t a = ((uintptr_t)p + huge - 1) & ~(huge - 1), b = ((uintptr_t)p + n) & ~(huge - 1);
    if (b > a) (void)madvise((void *)a, b - a, MADV_HUGEPAGE);
#else
    (void)p;
    (void)n;
#endif
}

double um_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* IEEE half <-> single, exact for every half value (subnormals included). */
float um_fp16_to_fp32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000) << 16;
    uint32_t exp = (h >> 10) & 0x1f;
    uint32_t man = h & 0x3ff;
    uint32_t bits;
    if (exp == 0) {
        if (man == 0) {
            bits = sign;
        } else {                       /* subnormal: normalise */
            exp = 127 - 15 + 1;
            while (!(man & 0x400)) { man <<= 1; exp--; }
            man &= 0x3ff;
            bits = sign | (exp << 23) | (man << 13);
        }
    } else if (exp == 0x1f) {
        bits = sign | 0x7f800000u | (man << 13) | (man ? 0x00400000u : 0);   /* NaN made quiet, as ggml and F16C do */
    } else {
        bits = sign | ((exp + 127 - 15) << 23) | (man << 13);
    }
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

/* Round to nearest even, as F16C's vcvtps2ph with imm 0 and as ggml does. */
uint16_t um_fp32_to_fp16(float f) {
    uint32_t x;
    memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000;
    uint32_t absx = x & 0x7fffffff;
    if (absx >= 0x7f800000) {          /* inf or nan */
        return (uint16_t)(sign | 0x7c00 | (absx > 0x7f800000 ? 0x200 : 0));
    }
    if (absx >= 0x477ff000) return (uint16_t)(sign | 0x7c00);   /* overflow -> inf */
    if (absx < 0x38800000) {           /* result is subnormal or zero */
        if (absx < 0x33000000) return (uint16_t)sign;
        uint32_t e = absx >> 23;
        uint32_t m = (absx & 0x7fffff) | 0x800000;
        uint32_t shift = 126 - e;      /* 14 + (113 - e) */
        uint32_t half = m >> shift;
        uint32_t rem = m & ((1u << shift) - 1);
        uint32_t mid = 1u << (shift - 1);
        if (rem > mid || (rem == mid && (half & 1))) half++;
        return (uint16_t)(sign | half);
    }
    uint32_t e = (absx >> 23) - 127 + 15;
    uint32_t m = absx & 0x7fffff;
    uint32_t h = (e << 10) | (m >> 13);
    uint32_t rem = m & 0x1fff;
    if (rem > 0x1000 || (rem == 0x1000 && (h & 1))) h++;
    return (uint16_t)(sign | h);
}

float um_bf16_to_fp32(uint16_t h) {
    uint32_t bits = (uint32_t)h << 16;
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

/* Same rule as ggml_compute_fp32_to_bf16: NaN forced quiet, else RNE. */
uint16_t um_fp32_to_bf16(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7fffffff) > 0x7f800000) return (uint16_t)((u >> 16) | 64);
    return (uint16_t)((u + (0x7fff + ((u >> 16) & 1))) >> 16);
}

#ifndef UM_PREFIX
#define UM_PREFIX "/usr/local"
#endif

static char g_share[PATH_MAX];
static char g_exe_dir[PATH_MAX];          /* "" where the OS does not say (no /proc) */
static pthread_once_t g_share_once = PTHREAD_ONCE_INIT;

/* The running binary's path into exe (Linux: /proc/self/exe; macOS: _NSGetExecutablePath);
 * its length, or -1 where neither works (the caller falls back on UM_PREFIX). */
static ssize_t exe_path(char *exe, size_t cap) {
#if defined(__APPLE__)
    uint32_t size = (uint32_t)cap;
    if (_NSGetExecutablePath(exe, &size) != 0) return -1;
    return (ssize_t)strlen(exe);
#else
    return readlink("/proc/self/exe", exe, cap);
#endif
}

/* ROOT/build/<variant> -> ROOT in g_exe_dir, when ROOT/models.conf is there. */
static void variant_root(const char *dir) {
    const char *v = strrchr(dir, '/');
    if (!v || v == dir) return;
    size_t blen = (size_t)(v - dir);
    if (blen < 6 || memcmp(dir + blen - 6, "/build", 6) != 0) return;
    size_t rlen = blen - 6;
    char conf[PATH_MAX + 16];
    struct stat st;
    snprintf(conf, sizeof conf, "%.*s/models.conf", (int)rlen, dir);
    if (rlen == 0 || stat(conf, &st) != 0 || !S_ISREG(st.st_mode)) return;
    snprintf(g_exe_dir, sizeof g_exe_dir, "%.*s", (int)rlen, dir);
}

static void find_share(void) {
    char exe[PATH_MAX];
    ssize_t n = exe_path(exe, sizeof exe - 1);
    if (n > 0) {
        exe[n] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash) {
            *slash = '\0';
            snprintf(g_exe_dir, sizeof g_exe_dir, "%s", exe);
            variant_root(exe);
            char cand[PATH_MAX + 32];
            snprintf(cand, sizeof cand, "%s/../share/unmask", exe);
            struct stat st;
            if (stat(cand, &st) == 0 && S_ISDIR(st.st_mode) && strlen(cand) < sizeof g_share) {
                snprintf(g_share, sizeof g_share, "%s", cand);
                return;
            }
        }
    }
    snprintf(g_share, sizeof g_share, "%s/share/unmask", UM_PREFIX);
}

const char *um_exe_dir(void) {
    pthread_once(&g_share_once, find_share);
    return g_exe_dir;
}

#if defined(__APPLE__) || defined(__FreeBSD__)
typedef struct sort_ctx {
    int (*cmp)(const void *, const void *, void *);
    void *ctx;
} sort_ctx;

static int sort_thunk(void *c, const void *a, const void *b) {
    const sort_ctx *s = c;
    return s->cmp(a, b, s->ctx);
}
#endif

void um_qsort_r(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *, void *), void *ctx) {
#if defined(__APPLE__) || defined(__FreeBSD__)
    sort_ctx s = { cmp, ctx };
    qsort_r(base, n, size, &s, sort_thunk);
#else
    qsort_r(base, n, size, cmp, ctx);
#endif
}

const char *um_share_dir(void) {
    pthread_once(&g_share_once, find_share);
    return g_share;
}
