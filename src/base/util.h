/*
 * util: error reporting, checked allocation and small helpers shared by every module.
 *
 * Library code never exits: it returns UM_OK / UM_FAIL and, on failure, fills a
 * um_err with one human-readable line naming the problem. Only main() and the UI
 * decide to print and exit.
 */
#ifndef UM_UTIL_H
#define UM_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#define UM_OK    0
#define UM_FAIL (-1)

typedef struct um_err {
    char msg[512];              /* one line, no trailing newline; "" when no error */
} um_err;

/* Format an error into e (if e is non-NULL) and return UM_FAIL. */
int  um_errf(um_err *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Prefix an existing error message: "<prefix>: <old message>". Returns UM_FAIL. */
int  um_err_prefix(um_err *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Allocation that returns NULL on failure (never aborts); callers check. */
void *um_malloc(size_t n);
void *um_calloc(size_t n, size_t size);
/* 64-byte aligned allocation, freed with um_free_aligned. */
void *um_malloc_aligned(size_t n);
void  um_free_aligned(void *p);
/* Ask the kernel to back the whole 2 MiB pages inside [p, p + n) with transparent huge
 * pages (a hint: no effect where THP is off). Call before the memory is first touched:
 * fewer page faults when it is filled and fewer TLB misses when it is streamed. */
void  um_hugepage_hint(void *p, size_t n);

/* Overflow-checked size arithmetic: return false on overflow. */
static inline bool um_mul_ok(uint64_t a, uint64_t b, uint64_t *out) {
    return !__builtin_mul_overflow(a, b, out);
}
static inline bool um_add_ok(uint64_t a, uint64_t b, uint64_t *out) {
    return !__builtin_add_overflow(a, b, out);
}

/* Monotonic wall clock in seconds. */
double um_now(void);

/* The installed data folder: <dir of the executable>/../share/unmask when that exists (so a
 * relocated install works), else UM_PREFIX "/share/unmask". No trailing slash. */
const char *um_share_dir(void);
/* The build tree the running binary belongs to ("" where the OS does not say): the binary's
 * own directory (`make` puts ./unmask beside models.conf and models/), or ROOT for a variant
 * binary ROOT/build/<variant>/unmask (make asan, werror, ...) when ROOT has models.conf, so
 * every variant finds the same presets and bundled model from any working directory. */
const char *um_exe_dir(void);

/* qsort with a context argument for the comparison, on every platform: glibc's qsort_r
 * order (cmp(a, b, ctx)); macOS and the BSDs have qsort_r(base, n, size, ctx, cmp(ctx, a, b)). */
void um_qsort_r(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *, void *), void *ctx);

/* fp16 / bf16 <-> fp32, portable scalar versions (the references). */
float    um_fp16_to_fp32(uint16_t h);
uint16_t um_fp32_to_fp16(float f);
float    um_bf16_to_fp32(uint16_t h);
uint16_t um_fp32_to_bf16(float f);   /* round to nearest even, NaN kept quiet */

#define UM_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
#define UM_MIN(a, b) ((a) < (b) ? (a) : (b))
#define UM_MAX(a, b) ((a) > (b) ? (a) : (b))

#endif
