/*
 * gemm: throughput of matmul() on the LLaDA-8B shapes (not a unit test; bench/gemm.sh
 * builds and runs it and writes bench/results/gemm.json).
 *
 * For every weight type x shape x kernel x n_tokens x threads it reports the best and
 * median wall time of several runs, GMAC/s and GOP/s (2 ops per MAC) from the best wall
 * time, and a CPU-time rate: MACs / (process CPU seconds / threads), which is what the
 * threads achieved while they actually held a core (this machine is shared by other jobs,
 * so wall time alone mostly measures the neighbours). The fractions of peak divide the
 * CPU-time rate by the peak of the kernel's instruction family measured the same way
 * (bench/peak.c, run at start-up, one core; N threads' peak = N x one core's): avx512 -> vpdpbusd zmm, avxvnni -> vpdpbusd ymm,
 * avx2 -> vpmaddubsw+vpmaddwd+vpaddd ymm; float formats also against the f32 FMA peak.
 *
 * Weights are random but valid blocks (no quantizer run: the 4096 x 126464 head would take
 * minutes), repacked in place once; every SIMD kernel shares the packed layout.
 *
 * Usage: gemm [--types q4_K,q6_K,q8_0,f16] [--shapes 4096x4096,...] [--tokens 32,160,512]
 *             [--threads 1,2] [--kernels avx2,avxvnni,avx512] [--min-time S]
 */
#define PEAK_NO_MAIN
#include "peak.c"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cpu.h"
#include "matmul.h"
#include "pool.h"
#include "quant.h"
#include "util.h"

#include "benchutil.h"

static double cpu_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Random valid weights: random code bytes, f16 scales kept small and finite. */
static void *make_weights(uint32_t type, int64_t n_in, int64_t n_out, size_t *bytes) {
    size_t nb = (size_t)(n_in / um_type_blck(type)) * (size_t)n_out, bb = um_type_bytes(type);
    *bytes = nb * bb;
    uint8_t *p = um_malloc_aligned(*bytes);
    if (!p) return NULL;
    uint64_t *q = (uint64_t *)p;
    for (size_t i = 0; i < *bytes / 8; i++) q[i] = next_rand();
    for (size_t b = 0; b < nb; b++) {
        uint8_t *blk = p + b * bb;
        uint16_t small = (uint16_t)(0x1400 | (next_rand() & 0x3ff));   /* ~1e-3 */
        switch (type) {
        case UM_TYPE_Q4_K: memcpy(blk, &small, 2); memcpy(blk + 2, &small, 2); break;
        case UM_TYPE_Q6_K: memcpy(blk + 208, &small, 2); break;
        case UM_TYPE_Q8_0: memcpy(blk, &small, 2); break;
        case UM_TYPE_F16: {
            uint16_t v = (uint16_t)((next_rand() & 0x83ff) | 0x3800);   /* +-[0.5, 1) */
            memcpy(blk, &v, 2);
            break;
        }
        default:                 /* the IQ lattices with d first (IQ1_M's is scattered: left random) */
            if (um_is_iq_lattice(type) && type != UM_TYPE_IQ1_M) {
                size_t off = type == UM_TYPE_TQ1_0 ? 52 : type == UM_TYPE_TQ2_0 ? 64 : 0;
                memcpy(blk + off, &small, 2);
            }
            break;
        }
    }
    return p;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    char types[8][32], shapes[8][32], toks[8][32], thr[4][32], kerns[8][32];
    int n_types = parse_list("q4_K,q6_K,q8_0,f16", types, 8);
    int n_shapes = parse_list("4096x4096,4096x12288,12288x4096,4096x126464", shapes, 8);
    int n_toks = parse_list("32,160,512", toks, 8);
    int n_thr = parse_list("1,2", thr, 4);
    int n_kerns = parse_list("avxvnni,avx512", kerns, 8);
    double min_time = 0.4;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--types")) n_types = parse_list(argv[i + 1], types, 8);
        else if (!strcmp(argv[i], "--shapes")) n_shapes = parse_list(argv[i + 1], shapes, 8);
        else if (!strcmp(argv[i], "--tokens")) n_toks = parse_list(argv[i + 1], toks, 8);
        else if (!strcmp(argv[i], "--threads")) n_thr = parse_list(argv[i + 1], thr, 4);
        else if (!strcmp(argv[i], "--kernels")) n_kerns = parse_list(argv[i + 1], kerns, 8);
        else if (!strcmp(argv[i], "--min-time")) min_time = atof(argv[i + 1]);
        else { fprintf(stderr, "gemm: unknown option %s\n", argv[i]); return 2; }
    }
    const um_cpu *cpu = cpu_features();
    char flags[512];
    cpu_feature_string(cpu, flags, sizeof flags);
    int max_thr = 1;
    for (int i = 0; i < n_thr; i++) max_thr = UM_MAX(max_thr, atoi(thr[i]));

    /* peaks, per family and thread count */
    double peak[PEAK_N_FAMILIES][5] = { { 0 } };
    printf("{\n  \"cpu\": \"%s\",\n  \"flags\": \"%s\",\n  \"peak_gmacs\": {", cpu->brand, flags);
    for (int f = 0, first = 1; f < PEAK_N_FAMILIES; f++) {
        if (!peak_supported(&peak_families[f])) continue;
        printf("%s\n    \"%s\": {", first ? "" : ",", peak_families[f].name);
        first = 0;
        /* cores are identical and not shared (no SMT): N threads' peak is N x one core's,
         * which is far less noisy on a busy machine than measuring N threads at once */
        double one = peak_measure(&peak_families[f], 1, 5);
        for (int t = 1; t <= max_thr && t < 5; t++) {
            peak[f][t] = t * one;
            printf("%s\"%d\": %.1f", t > 1 ? ", " : "", t, peak[f][t]);
        }
        printf("}");
    }
    printf("\n  },\n  \"peak_method\": \"bench/peak.c: independent vpdpbusd / maddubs / FMA chains, no loads, "
           "per-thread CPU time, best of 5 on one core; N threads = N x one core\",\n  \"runs\": [");
    fflush(stdout);

    um_pool *pools[5] = { 0 };
    int first_run = 1;
    for (int ti = 0; ti < n_types; ti++) {
        int type = um_type_from_name(types[ti]);
        if (type < 0) { fprintf(stderr, "gemm: unknown type %s\n", types[ti]); return 2; }
        for (int si = 0; si < n_shapes; si++) {
            long long n_in = 0, n_out = 0;
            if (sscanf(shapes[si], "%lldx%lld", &n_in, &n_out) != 2) { fprintf(stderr, "gemm: bad shape %s\n", shapes[si]); return 2; }
            size_t bytes;
            void *data = make_weights((uint32_t)type, n_in, n_out, &bytes);
            if (!data) { fprintf(stderr, "gemm: out of memory\n"); return 1; }
            um_matmul_weights w;
            um_err e;
            bool prepared = false;
            int64_t max_tok = 0;
            for (int i = 0; i < n_toks; i++) max_tok = UM_MAX(max_tok, atoll(toks[i]));
            float *x = um_malloc_aligned(sizeof(float) * (size_t)(max_tok * n_in));
            float *y = um_malloc_aligned(sizeof(float) * (size_t)(max_tok * n_out));
            for (int64_t i = 0; i < max_tok * n_in; i++) x[i] = (float)(int64_t)(next_rand() % 2001 - 1000) * 1e-3f;
            memset(y, 0, sizeof(float) * (size_t)(max_tok * n_out));
            for (int ki = 0; ki < n_kerns; ki++) {
                um_kernel k = UM_KERNEL_COUNT;
                for (int q = 0; q < UM_KERNEL_COUNT; q++)
                    if (!strcmp(kerns[ki], matmul_kernel_name((um_kernel)q))) k = (um_kernel)q;
                if (k == UM_KERNEL_COUNT || !matmul_kernel_available(k) || k == UM_KERNEL_REF) continue;
                if (!prepared) {
                    double t0 = um_now();
                    if (matmul_prepare(&w, (uint32_t)type, n_in, n_out, data, data, k, &e) != UM_OK) {
                        fprintf(stderr, "gemm: %s\n", e.msg);
                        return 1;
                    }
                    fprintf(stderr, "gemm: %s %s prepared in %.2f s\n", types[ti], shapes[si], um_now() - t0);
                    prepared = true;
                }
                w.kernel = k;      /* the packed layout is shared by every SIMD kernel */
                for (int hi = 0; hi < n_thr; hi++) {
                    int nth = atoi(thr[hi]);
                    if (nth < 1 || nth > 4) continue;
                    if (!pools[nth]) pools[nth] = pool_new(nth);
                    size_t sb = matmul_scratch_bytes(&w, max_tok, nth);
                    void *scratch = um_malloc_aligned(sb);
                    memset(scratch, 0, sb);
                    for (int oi = 0; oi < n_toks; oi++) {
                        int64_t nt = atoll(toks[oi]);
                        double macs = (double)nt * (double)n_in * (double)n_out;
                        double times[16], cpu_total = 0, wall_total = 0;
                        int reps = 0;
                        /* the first run is the warm-up, or the only run when it is long */
                        double c0 = cpu_now(), t0 = um_now();
                        matmul(pools[nth], &w, x, nt, y, scratch);
                        double first = um_now() - t0, first_cpu = cpu_now() - c0;
                        if (first >= min_time) {
                            times[reps++] = first;
                            cpu_total = first_cpu;
                        }
                        while (first < min_time && reps < 16 && (reps < 3 || wall_total < min_time)) {
                            c0 = cpu_now();
                            t0 = um_now();
                            matmul(pools[nth], &w, x, nt, y, scratch);
                            double dt = um_now() - t0;
                            cpu_total += cpu_now() - c0;
                            times[reps++] = dt;
                            wall_total += dt;
                        }
                        qsort(times, (size_t)reps, sizeof(double), cmp_double);
                        double best = times[0], median = times[reps / 2];
                        double cpu_rate = macs * reps / (cpu_total / nth) * 1e-9;
                        bool fl = type == UM_TYPE_F16 || type == UM_TYPE_BF16 || type == UM_TYPE_F32;
                        const peak_family *pf = peak_family_for(matmul_kernel_name(k), 0);
                        const peak_family *pff = peak_family_for(matmul_kernel_name(k), 1);
                        double pk = pf ? peak[pf - peak_families][nth] : 0, pkf = pff ? peak[pff - peak_families][nth] : 0;
                        printf("%s\n    {\"type\": \"%s\", \"n_in\": %lld, \"n_out\": %lld, \"kernel\": \"%s\", "
                               "\"threads\": %d, \"n_tokens\": %lld, \"reps\": %d, \"best_s\": %.6f, \"median_s\": %.6f, "
                               "\"gmacs_wall\": %.1f, \"gops_wall\": %.1f, \"gmacs_cpu\": %.1f, "
                               "\"frac_int8_peak\": %.3f%s",
                               first_run ? "" : ",", types[ti], n_in, n_out, matmul_kernel_name(k), nth, (long long)nt, reps,
                               best, median, macs / best * 1e-9, 2 * macs / best * 1e-9, cpu_rate,
                               pk > 0 ? cpu_rate / pk : 0, fl ? "" : "}");
                        if (fl) printf(", \"frac_f32_peak\": %.3f}", pkf > 0 ? cpu_rate / pkf : 0);
                        first_run = 0;
                        fflush(stdout);
                        fprintf(stderr, "%-5s %5lldx%-6lld %-8s t=%d n=%-4lld %8.1f GMAC/s wall %8.1f cpu  %.0f%% of int8 peak\n",
                                types[ti], n_in, n_out, matmul_kernel_name(k), nth, (long long)nt, macs / best * 1e-9,
                                cpu_rate, pk > 0 ? 100 * cpu_rate / pk : 0);
                    }
                    um_free_aligned(scratch);
                }
            }
            um_free_aligned(x);
            um_free_aligned(y);
            um_free_aligned(data);
        }
    }
    printf("\n  ]\n}\n");
    for (int i = 0; i < 5; i++) pool_free(pools[i]);
    return 0;
}
