/*
 * benchutil.h: helpers shared by the GEMM benchmarks (bench/gemm.c, bench/rows.c), which
 * are single-file tools built by bench/build-tools.sh: a xorshift64 generator for their
 * synthetic weights and activations (deterministic: the same data every run) and the
 * comma-separated list parser of their --types/--shapes/... options (items cut at 31 bytes).
 */
#ifndef UM_BENCHUTIL_H
#define UM_BENCHUTIL_H

#include <stdint.h>
#include <string.h>

static uint64_t rng = 88172645463325252ull;
static inline uint64_t next_rand(void) {
    rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
    return rng;
}

static inline int parse_list(const char *s, char out[][32], int max) {
    int n = 0;
    while (*s && n < max) {
        const char *c = strchr(s, ',');
        size_t len = c ? (size_t)(c - s) : strlen(s);
        if (len >= 32) len = 31;
        memcpy(out[n], s, len);
        out[n][len] = '\0';
        n++;
        if (!c) break;
        s = c + 1;
    }
    return n;
}

#endif
