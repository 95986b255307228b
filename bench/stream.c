/*
 * stream: the machine's sustained read bandwidth, the second yardstick beside bench/peak.c.
 * A weight product over few activation rows reads every weight once for little arithmetic,
 * so it is bound by whichever is nearer: the int8 peak (peak.c) or the rate at which the
 * weights stream in from memory (this file). bench/rows.c divides by both.
 *
 * Method: a buffer far larger than the last-level cache (at least 4x, and 1 GiB), filled
 * once so every page is mapped, read front to back with the widest loads the CPU has
 * (AVX-512 when present, else AVX2; chosen at run time), every loaded vector added into
 * four accumulators whose sum is stored to a volatile sink so no read can be dropped. With
 * N threads each reads its own contiguous 1/N of the buffer. Best of `reps` runs.
 *
 * Two rates per run, as peak.c and rows.c measure: wall (bytes / the time from the first
 * thread's start to the last one's end) and CPU time (the sum over threads of bytes read /
 * that thread's CPU time: the rate a thread reads at while it holds a core, which is what
 * a machine shared with other jobs still lets one measure).
 *
 * Build: cc -O2 -pthread bench/stream.c -o build/release/stream (bench/rows.py does).
 * Usage: stream [MAX_THREADS [BUFFER_MIB [REPS]]]   Output: one JSON object, GB/s (1e9 B/s).
 * With STREAM_NO_MAIN defined this file is a library for rows.c.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define STREAM_MIN_BYTES ((size_t)1 << 30)
#define STREAM_MAX_THREADS 64

/* ---------------------------------------------------------------- the read loops */

/* Each sums n bytes (n a multiple of 256, p 64-byte aligned) as 64-bit lanes. */
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

__attribute__((target("avx512f"))) static uint64_t stream_read_avx512(const uint8_t *p, size_t n) {
    __m512i a0 = _mm512_setzero_si512(), a1 = a0, a2 = a0, a3 = a0;
    for (size_t i = 0; i < n; i += 256) {
        a0 = _mm512_add_epi64(a0, _mm512_load_si512((const void *)(p + i)));
        a1 = _mm512_add_epi64(a1, _mm512_load_si512((const void *)(p + i + 64)));
        a2 = _mm512_add_epi64(a2, _mm512_load_si512((const void *)(p + i + 128)));
        a3 = _mm512_add_epi64(a3, _mm512_load_si512((const void *)(p + i + 192)));
    }
    return (uint64_t)_mm512_reduce_add_epi64(_mm512_add_epi64(_mm512_add_epi64(a0, a1), _mm512_add_epi64(a2, a3)));
}

__attribute__((target("avx2"))) static uint64_t stream_read_avx2(const uint8_t *p, size_t n) {
    __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0;
    for (size_t i = 0; i < n; i += 256) {
        a0 = _mm256_add_epi64(a0, _mm256_add_epi64(_mm256_load_si256((const __m256i *)(p + i)),
                                                   _mm256_load_si256((const __m256i *)(p + i + 32))));
        a1 = _mm256_add_epi64(a1, _mm256_add_epi64(_mm256_load_si256((const __m256i *)(p + i + 64)),
                                                   _mm256_load_si256((const __m256i *)(p + i + 96))));
        a2 = _mm256_add_epi64(a2, _mm256_add_epi64(_mm256_load_si256((const __m256i *)(p + i + 128)),
                                                   _mm256_load_si256((const __m256i *)(p + i + 160))));
        a3 = _mm256_add_epi64(a3, _mm256_add_epi64(_mm256_load_si256((const __m256i *)(p + i + 192)),
                                                   _mm256_load_si256((const __m256i *)(p + i + 224))));
    }
    __m256i s = _mm256_add_epi64(_mm256_add_epi64(a0, a1), _mm256_add_epi64(a2, a3));
    uint64_t v[4];
    _mm256_storeu_si256((__m256i *)v, s);
    return v[0] + v[1] + v[2] + v[3];
}

typedef uint64_t (*stream_read_fn)(const uint8_t *, size_t);

/* The widest read loop this CPU runs, and its name ("avx512" or "avx2"). */
static stream_read_fn stream_reader(const char **name) {
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) { *name = "avx512"; return stream_read_avx512; }
    *name = "avx2";
    return stream_read_avx2;
}
#elif defined(__aarch64__)
#include <arm_neon.h>

static uint64_t stream_read_neon(const uint8_t *p, size_t n) {
    uint64x2_t a[8];
    for (int k = 0; k < 8; k++) a[k] = vdupq_n_u64(0);
    for (size_t i = 0; i < n; i += 256)
        for (int k = 0; k < 8; k++)
            a[k] = vaddq_u64(a[k], vaddq_u64(vld1q_u64((const uint64_t *)(p + i + 32 * k)),
                                             vld1q_u64((const uint64_t *)(p + i + 32 * k + 16))));
    uint64x2_t s = a[0];
    for (int k = 1; k < 8; k++) s = vaddq_u64(s, a[k]);
    return vgetq_lane_u64(s, 0) + vgetq_lane_u64(s, 1);
}

typedef uint64_t (*stream_read_fn)(const uint8_t *, size_t);

/* AArch64: 128-bit NEON loads (Advanced SIMD is baseline) */
static stream_read_fn stream_reader(const char **name) {
    *name = "neon";
    return stream_read_neon;
}
#endif

/* ---------------------------------------------------------------- the buffer */

/* Bytes of the last-level cache: the larger of what sysfs and sysconf say (in a VM they
 * disagree: one CCD's L3 against the whole socket's), 32 MiB when neither knows. */
static size_t stream_llc_bytes(void) {
    size_t best = 0;
#ifdef _SC_LEVEL3_CACHE_SIZE                   /* glibc only */
    long s = sysconf(_SC_LEVEL3_CACHE_SIZE);
    if (s > 0) best = (size_t)s;
#endif
    for (int idx = 0; idx < 8; idx++) {
        char path[96], buf[32];
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", idx);
        FILE *f = fopen(path, "r");
        if (!f) continue;
        if (fgets(buf, sizeof buf, f)) {
            char *end;
            size_t v = strtoul(buf, &end, 10);
            if (*end == 'K') v <<= 10;
            else if (*end == 'M') v <<= 20;
            if (v > best) best = v;
        }
        fclose(f);
    }
    return best ? best : (size_t)32 << 20;
}

/* The default buffer size: 4x the last-level cache, at least 1 GiB. */
static size_t stream_default_bytes(void) {
    size_t b = 4 * stream_llc_bytes();
    return b > STREAM_MIN_BYTES ? b : STREAM_MIN_BYTES;
}

/* A buffer of n bytes (rounded up to 2 MiB), huge pages asked for, every page written once
 * (no page is faulted in while a run is timed). NULL when out of memory. */
static uint8_t *stream_alloc(size_t *n) {
    const size_t huge = (size_t)2 << 20;
    *n = (*n + huge - 1) & ~(huge - 1);
    void *p = NULL;
    if (posix_memalign(&p, huge, *n) != 0) return NULL;
#ifdef MADV_HUGEPAGE
#ifdef MADV_HUGEPAGE                           /* Linux only */
    (void)madvise(p, *n, MADV_HUGEPAGE);
#endif
#endif
    memset(p, 0x5a, *n);
    return p;
}

/* ---------------------------------------------------------------- the measurement */

static double stream_clock(clockid_t id) {
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

typedef struct stream_arg {
    stream_read_fn fn;
    const uint8_t *p;
    size_t n;
    double t0, t1, cpu_s;
    volatile uint64_t sink;
} stream_arg;

static void *stream_thread(void *v) {
    stream_arg *a = v;
    a->t0 = stream_clock(CLOCK_MONOTONIC);
    double c0 = stream_clock(CLOCK_THREAD_CPUTIME_ID);
    a->sink = a->fn(a->p, a->n);
    a->cpu_s = stream_clock(CLOCK_THREAD_CPUTIME_ID) - c0;
    a->t1 = stream_clock(CLOCK_MONOTONIC);
    return NULL;
}

typedef struct stream_rate {
    double wall_gbs;             /* bytes / (last end - first start) */
    double cpu_gbs;              /* sum over threads of bytes / thread CPU time */
} stream_rate;

/* Best of `reps` reads of buf (n bytes, from stream_alloc) on n_threads threads; each
 * figure is the best of its own kind. Returns 0 when threads could not be started. */
static int stream_measure(const uint8_t *buf, size_t n, int n_threads, int reps, stream_rate *best) {
    const char *isa;
    stream_read_fn fn = stream_reader(&isa);
    if (n_threads < 1 || n_threads > STREAM_MAX_THREADS) return 0;
    size_t slice = n / (size_t)n_threads / 256 * 256;
    best->wall_gbs = best->cpu_gbs = 0;
    for (int r = 0; r < reps; r++) {
        pthread_t th[STREAM_MAX_THREADS];
        stream_arg args[STREAM_MAX_THREADS];
        for (int i = 0; i < n_threads; i++) {
            args[i] = (stream_arg){ .fn = fn, .p = buf + (size_t)i * slice, .n = slice };
            if (pthread_create(&th[i], NULL, stream_thread, &args[i]) != 0) {
                while (i-- > 0) pthread_join(th[i], NULL);
                return 0;
            }
        }
        double first = 0, last = 0, cpu = 0;
        for (int i = 0; i < n_threads; i++) {
            pthread_join(th[i], NULL);
            if (i == 0 || args[i].t0 < first) first = args[i].t0;
            if (args[i].t1 > last) last = args[i].t1;
            if (args[i].cpu_s > 0) cpu += (double)slice / args[i].cpu_s * 1e-9;
        }
        double wall = (double)slice * n_threads / (last - first) * 1e-9;
        if (wall > best->wall_gbs) best->wall_gbs = wall;
        if (cpu > best->cpu_gbs) best->cpu_gbs = cpu;
    }
    return 1;
}

#ifndef STREAM_NO_MAIN
int main(int argc, char **argv) {
    int max_threads = argc > 1 ? atoi(argv[1]) : 2;
    size_t n = argc > 2 ? (size_t)atol(argv[2]) << 20 : stream_default_bytes();
    int reps = argc > 3 ? atoi(argv[3]) : 5;
    if (max_threads < 1 || max_threads > STREAM_MAX_THREADS || n < ((size_t)1 << 20) || reps < 1) {
        fprintf(stderr, "usage: stream [MAX_THREADS (1-%d) [BUFFER_MIB (>= 1) [REPS]]]\n", STREAM_MAX_THREADS);
        return 2;
    }
    uint8_t *buf = stream_alloc(&n);
    if (!buf) { fprintf(stderr, "stream: cannot allocate %zu bytes\n", n); return 1; }
    const char *isa;
    stream_reader(&isa);
    printf("{\n  \"unit\": \"GB/s\",\n  \"isa\": \"%s\",\n  \"buffer_bytes\": %zu,\n  \"llc_bytes\": %zu,\n"
           "  \"method\": \"best of %d reads of the buffer, each thread its own slice\"",
           isa, n, stream_llc_bytes(), reps);
    for (int t = 1; t <= max_threads; t++) {
        stream_rate r;
        if (!stream_measure(buf, n, t, reps, &r)) { fprintf(stderr, "stream: cannot start %d threads\n", t); return 1; }
        printf(",\n  \"%d\": {\"wall\": %.2f, \"cpu\": %.2f}", t, r.wall_gbs, r.cpu_gbs);
    }
    printf("\n}\n");
    free(buf);
    return 0;
}
#endif
