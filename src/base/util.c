/*
 * util: error formatting, allocation wrappers, clock and the
 * scalar half-precision conversions every other module builds on.
 */
#define _POSIX_C_SOURCE 200809L
#include "util.h"

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

/* Messages are one line and may quote names from hostile files: control bytes (newlines,
 * terminal escapes) become '?', so printing a message can never drive the terminal. */
static void sanitize(char *s) {
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f) *s = '?';
}

int um_errf(um_err *e, const char *fmt, ...) {
    if (e) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(e->msg, sizeof e->msg, fmt, ap);
        va_end(ap);
        sanitize(e->msg);
    }
    return UM_FAIL;
}

int um_err_prefix(um_err *e, const char *fmt, ...) {
    if (!e) return UM_FAIL;
    char old[sizeof e->msg];
    memcpy(old, e->msg, sizeof old);
    char pre[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(pre, sizeof pre, fmt, ap);
    va_end(ap);
    size_t np = strlen(pre);
    if (np >= sizeof e->msg - 3) np = sizeof e->msg - 3;
    memcpy(e->msg, pre, np);
    memcpy(e->msg + np, ": ", 2);
    size_t room = sizeof e->msg - np - 3;
    size_t no = strnlen(old, room);
    memcpy(e->msg + np + 2, old, no);
    e->msg[np + 2 + no] = '\0';
    sanitize(e->msg);
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

size_t um_utf8_len(const unsigned char *s, size_t n) {
    unsigned c = s[0];
    size_t len;
    uint32_t cp;
    if (c < 0x80) return 1;
    if (c >= 0xc2 && c <= 0xdf) { len = 2; cp = c & 0x1f; }
    else if (c >= 0xe0 && c <= 0xef) { len = 3; cp = c & 0x0f; }
    else if (c >= 0xf0 && c <= 0xf4) { len = 4; cp = c & 0x07; }
    else return 0;
    if (n < len) return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80) return 0;
        cp = (cp << 6) | (s[i] & 0x3f);
    }
    if ((len == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) || (len == 4 && (cp < 0x10000 || cp > 0x10ffff)))
        return 0;                                  /* overlong, surrogate, past U+10FFFF */
    return len;
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
static pthread_once_t g_share_once = PTHREAD_ONCE_INIT;

static void find_share(void) {
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        exe[n] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash) {
            *slash = '\0';
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

const char *um_share_dir(void) {
    pthread_once(&g_share_once, find_share);
    return g_share;
}
