/*
 * peak: the machine's int8 (and f32) multiply-accumulate peak per instruction family,
 * measured with tight loops of independent instructions (no loads, 12 accumulators so
 * latency never limits), on 1 and N threads. It is the yardstick bench/gemm.c divides by.
 *
 *   avx512  vpdpbusd zmm: 64 MACs per instruction
 *   avxvnni vpdpbusd ymm: 32 MACs
 *   avx2    vpmaddubsw + vpmaddwd + vpaddd ymm: 32 MACs per 3 instructions (int32 sums,
 *           what an AVX2 product of 8-bit weights must do without VNNI)
 *   avx2-i16 vpmaddubsw + vpaddw ymm: 32 MACs per 2 instructions, one of them a multiply
 *           (int16 sums: the most AVX2 does; reachable where the products fit in int16, as
 *           4-bit codes' do, widened to int32 only once per many products)
 *   f32-512 vfmadd231ps zmm: 16 MACs      f32-256 vfmadd231ps ymm: 8 MACs
 * AArch64 (the families of the dotprod and i8mm matmul kernels):
 *   sdot    SDOT v.4s, v.16b, v.16b (vdotq_s32, FEAT_DotProd): 16 MACs per instruction
 *   smmla   SMMLA v.4s, v.16b, v.16b (vmmlaq_s32, FEAT_I8MM): a 2x8 by 8x2 int8 product into a
 *           2x2 int32 tile, 32 MACs per instruction
 *   f32-128 FMLA v.4s (vfmaq_f32): 4 MACs
 *
 * Build: bench/build-tools.sh. Usage: peak [MAX_THREADS [KERNEL]] (KERNEL: a matmul kernel
 * name; the output then names the families that kernel is measured against).
 * Output: one JSON object, GMAC/s per family and thread count. With PEAK_NO_MAIN defined
 * this file is a library for gemm.c.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifndef ITERS
#define ITERS 10000000L     /* -DITERS=N for a quick check (under emulation: the figures mean nothing) */
#endif
#define ACC12(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

/* Each returns MACs done; the sink stops the compiler from dropping the loop. */
__attribute__((target("avx512f,avx512bw,avx512vnni"))) static double loop_avx512(volatile int *sink) {
#define D(i) __m512i a##i = _mm512_set1_epi32(i);
    ACC12(D)
#undef D
    __m512i u = _mm512_set1_epi8(3), s = _mm512_set1_epi8(-2);
    for (long it = 0; it < ITERS; it++) {
#define D(i) a##i = _mm512_dpbusd_epi32(a##i, u, s);
        ACC12(D)
#undef D
        __asm__ volatile("" : "+v"(u), "+v"(s));
    }
    __m512i t = _mm512_setzero_si512();
#define D(i) t = _mm512_add_epi32(t, a##i);
    ACC12(D)
#undef D
    *sink = _mm512_reduce_add_epi32(t);
    return (double)ITERS * 12 * 64;
}

__attribute__((target("avx2,avxvnni"))) static double loop_avxvnni(volatile int *sink) {
#define D(i) __m256i a##i = _mm256_set1_epi32(i);
    ACC12(D)
#undef D
    __m256i u = _mm256_set1_epi8(3), s = _mm256_set1_epi8(-2);
    for (long it = 0; it < ITERS; it++) {
#define D(i) a##i = _mm256_dpbusd_avx_epi32(a##i, u, s);
        ACC12(D)
#undef D
        __asm__ volatile("" : "+x"(u), "+x"(s));
    }
    __m256i t = _mm256_setzero_si256();
#define D(i) t = _mm256_add_epi32(t, a##i);
    ACC12(D)
#undef D
    *sink = _mm256_extract_epi32(t, 0) + _mm256_extract_epi32(t, 5);
    return (double)ITERS * 12 * 32;
}

__attribute__((target("avx2"))) static double loop_avx2(volatile int *sink) {
    /* 6 chains, each with its own weight operand: the product cannot be shared (CSE) */
#define ACC6(X) X(0) X(1) X(2) X(3) X(4) X(5)
#define D(i) __m256i a##i = _mm256_set1_epi32(i), u##i = _mm256_set1_epi8(3 + i);
    ACC6(D)
#undef D
    __m256i s = _mm256_set1_epi8(-2), one = _mm256_set1_epi16(1);
    for (long it = 0; it < ITERS; it++) {
#define D(i) a##i = _mm256_add_epi32(a##i, _mm256_madd_epi16(_mm256_maddubs_epi16(u##i, s), one));
        ACC6(D)
#undef D
        __asm__ volatile("" : "+x"(u0), "+x"(u1), "+x"(u2), "+x"(u3), "+x"(u4), "+x"(u5), "+x"(s));
    }
    __m256i t = _mm256_setzero_si256();
#define D(i) t = _mm256_add_epi32(t, a##i);
    ACC6(D)
#undef D
    *sink = _mm256_extract_epi32(t, 0) + _mm256_extract_epi32(t, 5);
    return (double)ITERS * 6 * 32;
}

__attribute__((target("avx2"))) static double loop_avx2_i16(volatile int *sink) {
    /* 6 chains: 3 weight operands x 2 activation operands, 6 distinct products (no CSE);
     * only the vpaddw is on a chain, so 6 keep two multiplies in flight per cycle */
#define ACC6(X) X(0) X(1) X(2) X(3) X(4) X(5)
#define D(i) __m256i a##i = _mm256_set1_epi16(i);
    ACC6(D)
#undef D
    __m256i u0 = _mm256_set1_epi8(3), u1 = _mm256_set1_epi8(5), u2 = _mm256_set1_epi8(7);
    __m256i s0 = _mm256_set1_epi8(-2), s1 = _mm256_set1_epi8(1);
    for (long it = 0; it < ITERS; it++) {
        a0 = _mm256_add_epi16(a0, _mm256_maddubs_epi16(u0, s0));
        a1 = _mm256_add_epi16(a1, _mm256_maddubs_epi16(u1, s0));
        a2 = _mm256_add_epi16(a2, _mm256_maddubs_epi16(u2, s0));
        a3 = _mm256_add_epi16(a3, _mm256_maddubs_epi16(u0, s1));
        a4 = _mm256_add_epi16(a4, _mm256_maddubs_epi16(u1, s1));
        a5 = _mm256_add_epi16(a5, _mm256_maddubs_epi16(u2, s1));
        __asm__ volatile("" : "+x"(u0), "+x"(u1), "+x"(u2), "+x"(s0), "+x"(s1));
    }
    __m256i t = _mm256_setzero_si256();
#define D(i) t = _mm256_add_epi16(t, a##i);
    ACC6(D)
#undef D
    *sink = _mm256_extract_epi16(t, 0) + _mm256_extract_epi16(t, 9);
    return (double)ITERS * 6 * 32;
}

__attribute__((target("avx512f"))) static double loop_f32_512(volatile int *sink) {
#define D(i) __m512 a##i = _mm512_set1_ps((float)i);
    ACC12(D)
#undef D
    __m512 u = _mm512_set1_ps(1.0000001f), s = _mm512_set1_ps(1e-7f);
    for (long it = 0; it < ITERS; it++) {
#define D(i) a##i = _mm512_fmadd_ps(a##i, u, s);
        ACC12(D)
#undef D
        __asm__ volatile("" : "+v"(u), "+v"(s));
    }
    __m512 t = _mm512_setzero_ps();
#define D(i) t = _mm512_add_ps(t, a##i);
    ACC12(D)
#undef D
    *sink = (int)_mm512_reduce_add_ps(t);
    return (double)ITERS * 12 * 16;
}

__attribute__((target("avx2,fma"))) static double loop_f32_256(volatile int *sink) {
#define D(i) __m256 a##i = _mm256_set1_ps((float)i);
    ACC12(D)
#undef D
    __m256 u = _mm256_set1_ps(1.0000001f), s = _mm256_set1_ps(1e-7f);
    for (long it = 0; it < ITERS; it++) {
#define D(i) a##i = _mm256_fmadd_ps(a##i, u, s);
        ACC12(D)
#undef D
        __asm__ volatile("" : "+x"(u), "+x"(s));
    }
    __m256 t = _mm256_setzero_ps();
#define D(i) t = _mm256_add_ps(t, a##i);
    ACC12(D)
#undef D
    float f[8];
    _mm256_storeu_ps(f, t);
    *sink = (int)f[0];
    return (double)ITERS * 12 * 8;
}

#elif defined(__aarch64__)
#include <arm_neon.h>
#if defined(__linux__)
#include <sys/auxv.h>
#elif defined(__APPLE__)
#include <sys/sysctl.h>
#endif

__attribute__((target("arch=armv8.2-a+dotprod"))) static double loop_sdot(volatile int *sink) {
#define D(i) int32x4_t a##i = vdupq_n_s32(i);
    ACC12(D)
#undef D
    int8x16_t u = vdupq_n_s8(3), s = vdupq_n_s8(-2);
    for (long it = 0; it < ITERS; it++) {
#define D(i) a##i = vdotq_s32(a##i, u, s);
        ACC12(D)
#undef D
        __asm__ volatile("" : "+w"(u), "+w"(s));
    }
    int32x4_t t = vdupq_n_s32(0);
#define D(i) t = vaddq_s32(t, a##i);
    ACC12(D)
#undef D
    *sink = vaddvq_s32(t);
    return (double)ITERS * 12 * 16;
}

__attribute__((target("arch=armv8.2-a+dotprod+i8mm"))) static double loop_smmla(volatile int *sink) {
#define D(i) int32x4_t a##i = vdupq_n_s32(i);
    ACC12(D)
#undef D
    int8x16_t u = vdupq_n_s8(3), s = vdupq_n_s8(-2);
    for (long it = 0; it < ITERS; it++) {
#define D(i) a##i = vmmlaq_s32(a##i, u, s);
        ACC12(D)
#undef D
        __asm__ volatile("" : "+w"(u), "+w"(s));
    }
    int32x4_t t = vdupq_n_s32(0);
#define D(i) t = vaddq_s32(t, a##i);
    ACC12(D)
#undef D
    *sink = vaddvq_s32(t);
    return (double)ITERS * 12 * 32;
}

static double loop_f32_128(volatile int *sink) {
#define D(i) float32x4_t a##i = vdupq_n_f32((float)i);
    ACC12(D)
#undef D
    float32x4_t u = vdupq_n_f32(1.0f), s = vdupq_n_f32(0.5f);
    for (long it = 0; it < ITERS; it++) {
#define D(i) a##i = vfmaq_f32(a##i, u, s);
        ACC12(D)
#undef D
        __asm__ volatile("" : "+w"(u), "+w"(s));
    }
    float32x4_t t = vdupq_n_f32(0);
#define D(i) t = vaddq_f32(t, a##i);
    ACC12(D)
#undef D
    *sink = (int)vaddvq_f32(t);
    return (double)ITERS * 12 * 4;
}
#endif

typedef double (*peak_loop)(volatile int *);

typedef struct peak_family {
    const char *name;
    peak_loop   fn;
    const char *cpu_flag;        /* __builtin_cpu_supports name */
} peak_family;

static const peak_family peak_families[] = {
#if defined(__x86_64__) || defined(__i386__)
    { "avx512", loop_avx512, "avx512vnni" },
    { "avxvnni", loop_avxvnni, "avxvnni" },
    { "avx2", loop_avx2, "avx2" },
    { "avx2-i16", loop_avx2_i16, "avx2" },
    { "f32-512", loop_f32_512, "avx512f" },
    { "f32-256", loop_f32_256, "fma" },
#elif defined(__aarch64__)
    { "smmla", loop_smmla, "i8mm" },
    { "sdot", loop_sdot, "dotprod" },
    { "f32-128", loop_f32_128, "neon" },
#endif
};
#define PEAK_N_FAMILIES (int)(sizeof peak_families / sizeof peak_families[0])

#if defined(__aarch64__)
/* The kernel's word on the CPU (Linux hwcaps, macOS sysctl), as src/base/cpu.c reads it. */
static int peak_supported(const peak_family *f) {
    if (strcmp(f->cpu_flag, "neon") == 0) return 1;
#if defined(__linux__)
    if (strcmp(f->cpu_flag, "dotprod") == 0) return (getauxval(AT_HWCAP) >> 20) & 1;     /* HWCAP_ASIMDDP */
    return (getauxval(AT_HWCAP2) >> 13) & 1;                                             /* HWCAP2_I8MM */
#elif defined(__APPLE__)
    int v = 0;
    size_t n = sizeof v;
    const char *key = strcmp(f->cpu_flag, "dotprod") == 0 ? "hw.optional.arm.FEAT_DotProd" : "hw.optional.arm.FEAT_I8MM";
    return sysctlbyname(key, &v, &n, NULL, 0) == 0 && v;
#else
    return 0;
#endif
}
#else
static int peak_supported(const peak_family *f) {
    __builtin_cpu_init();
    if (strcmp(f->cpu_flag, "avx512vnni") == 0) return __builtin_cpu_supports("avx512vnni");
    if (strcmp(f->cpu_flag, "avxvnni") == 0) {
        unsigned a, b, c, d;
        __asm__("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(7), "c"(1));
        return (a >> 4) & 1;
    }
    if (strcmp(f->cpu_flag, "avx512f") == 0) return __builtin_cpu_supports("avx512f");
    if (strcmp(f->cpu_flag, "fma") == 0) return __builtin_cpu_supports("fma");
    return __builtin_cpu_supports("avx2");
}
#endif

/* The peak a GEMM kernel's int8 (or, float_type, f32) products are measured against, by
 * kernel name (matmul_kernel_name): the fastest multiply-accumulate its instruction set
 * has, the yardstick gemm.c, rows.c and profile.py divide by. NULL if not built. Without
 * VNNI that is avx2-i16 (int16 sums), not the slower int32 sequence of avx2: 4-bit
 * products fit in int16, so a kernel may reach it (see docs/perf.md). */
static const peak_family *peak_family_for(const char *kernel, int float_type) {
#if defined(__aarch64__)
    /* i8mm's int8 products are SMMLA tiles; dotprod's (and the rest's) SDOT */
    const char *name = float_type ? "f32-128" : !strcmp(kernel, "i8mm") ? "smmla" : "sdot";
#else
    const char *name = !strcmp(kernel, "avx512") || !strcmp(kernel, "amx") ? (float_type ? "f32-512" : "avx512")
                     : !strcmp(kernel, "avxvnni") ? (float_type ? "f32-256" : "avxvnni")
                     : (float_type ? "f32-256" : "avx2-i16");
#endif
    for (int i = 0; i < PEAK_N_FAMILIES; i++)
        if (strcmp(peak_families[i].name, name) == 0) return &peak_families[i];
    return NULL;
}

typedef struct peak_arg {
    peak_loop fn;
    double macs, cpu_s;
    volatile int sink;
} peak_arg;

static double peak_thread_cpu(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void *peak_thread(void *p) {
    peak_arg *a = p;
    double c0 = peak_thread_cpu();
    a->macs = a->fn(&a->sink);
    a->cpu_s = peak_thread_cpu() - c0;
    return NULL;
}

/* GMAC/s of family f on n_threads threads: best of `reps` runs. The machine is shared,
 * so each thread's rate is measured on its own CPU time (time it actually ran) and the
 * rates are summed: the figure a core would give if it were not time-sliced away. */
static double peak_measure(const peak_family *f, int n_threads, int reps) {
    double best = 0;
    for (int r = 0; r < reps; r++) {
        pthread_t th[64];
        peak_arg args[64];
        for (int i = 0; i < n_threads; i++) {
            args[i].fn = f->fn;
            pthread_create(&th[i], NULL, peak_thread, &args[i]);
        }
        double g = 0;
        for (int i = 0; i < n_threads; i++) {
            pthread_join(th[i], NULL);
            g += args[i].macs / args[i].cpu_s * 1e-9;
        }
        if (g > best) best = g;
    }
    return best;
}

#ifndef PEAK_NO_MAIN
int main(int argc, char **argv) {
    int max_threads = argc > 1 ? atoi(argv[1]) : 2;
    printf("{\n  \"unit\": \"GMAC/s\",\n  \"method\": \"best of 5 runs of 6-12 independent accumulators, no loads\"");
    if (argc > 2) {     /* KERNEL: name the families that kernel is measured against */
        const peak_family *i8 = peak_family_for(argv[2], 0), *f32 = peak_family_for(argv[2], 1);
        printf(",\n  \"kernel\": \"%s\",\n  \"int8_family\": \"%s\",\n  \"f32_family\": \"%s\"", argv[2],
               i8 ? i8->name : "", f32 ? f32->name : "");
    }
    for (int i = 0; i < PEAK_N_FAMILIES; i++) {
        if (!peak_supported(&peak_families[i])) continue;
        printf(",\n  \"%s\": {", peak_families[i].name);
        for (int t = 1; t <= max_threads; t++)
            printf("%s\"%d\": %.1f", t > 1 ? ", " : "", t, peak_measure(&peak_families[i], t, 5));
        printf("}");
    }
    printf("\n}\n");
    return 0;
}
#endif
