/*
 * rows: weight products over few activation rows (16-64: the active rows of a partial
 * forward pass) on the LLaDA-8B shapes, against both of their bounds: the int8 peak
 * (bench/peak.c) and the stream-read bandwidth (bench/stream.c). Not a unit test;
 * bench/rows.py builds and runs it and writes bench/results/rows.json.
 *
 * Every weight must come from memory, as in a forward pass (4.9 GB of weights per step on
 * the LLaDA-8B shape, far beyond any cache): the matrices are views into one arena of
 * stream.c's buffer size (>= 4x the last-level cache), and a run multiplies the same
 * activation rows by consecutive views (at least RUN_MIN_BYTES of weights, like consecutive
 * layers), starting where the case's previous run stopped, so every view it reads was
 * last touched a whole arena ago. The arena's bytes are random with every 16-bit word a
 * small finite f16 (0x14xx-0x17xx, about 1e-3): such bytes are a valid repacked matrix of
 * every type (the f16 scale fields sit at even offsets of the panel layouts, and any code
 * byte is valid), so one arena serves every case without a repack per view. The kernels'
 * time does not depend on the code values.
 *
 * Rounds interleave everything: per round the load average, the stream read on each thread
 * count (best of 3), the int8 peak of the kernel's family on one core (best of 3; N threads
 * = N x one core, as gemm.c), then one run of every case (the order reversed every other
 * round). The peak is also measured before the first round and after the last. Output: one
 * JSON object with the raw runs (wall and process CPU seconds of each); rows.py derives
 * medians, rates and shares.
 *
 * Usage: rows [--types q4_K,q6_K,q8_0] [--shapes 4096x4096,...] [--rows 16,32,64]
 *             [--threads 1,2] [--rounds 7] [--arena-mib N] [--run-mib 64] [--peak-reps 5]
 */
#define PEAK_NO_MAIN
#include "peak.c"
#define STREAM_NO_MAIN
#include "stream.c"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "cpu.h"
#include "matmul.h"
#include "pool.h"
#include "quant.h"
#include "util.h"

#include "benchutil.h"

#define MAX_LIST 8
#define MAX_THREADS 4

static double process_cpu(void) { return stream_clock(CLOCK_PROCESS_CPUTIME_ID); }

typedef struct row_case {
    char      type_name[32];
    uint32_t  type;
    long long n_in, n_out;
    int       rows, threads;
    size_t    bytes;             /* of one matrix */
    size_t    stride;            /* between views: bytes rounded up to 4 KiB */
    int       views;             /* matrices per run */
    size_t    next;              /* arena offset of the next run's first view */
    um_matmul_weights w;         /* data re-pointed per view */
    int       n_runs;
    double    wall_s[64], cpu_s[64];
} row_case;

/* One run: x (rows, n_in) times `views` consecutive matrices of the arena. */
static void run_case(row_case *c, uint8_t *arena, size_t arena_bytes, um_pool *pool, const float *x,
                     float *y, void *scratch, bool record) {
    double w0 = um_now(), c0 = process_cpu();
    for (int v = 0; v < c->views; v++) {
        if (c->next + c->stride > arena_bytes) c->next = 0;
        c->w.data = arena + c->next;
        matmul(pool, &c->w, x, c->rows, y, scratch);
        c->next += c->stride;
    }
    double wall = um_now() - w0, cpu = process_cpu() - c0;
    if (record && c->n_runs < 64) {
        c->wall_s[c->n_runs] = wall;
        c->cpu_s[c->n_runs] = cpu;
        c->n_runs++;
    }
}

int main(int argc, char **argv) {
    char types[MAX_LIST][32], shapes[MAX_LIST][32], rows_l[MAX_LIST][32], thr[MAX_LIST][32];
    int n_types = parse_list("q4_K,q6_K,q8_0", types, MAX_LIST);
    int n_shapes = parse_list("4096x4096,4096x12288,12288x4096", shapes, MAX_LIST);
    int n_rows = parse_list("16,32,64", rows_l, MAX_LIST);
    int n_thr = parse_list("1,2", thr, MAX_LIST);
    int rounds = 7, peak_reps = 5;
    size_t arena_bytes = stream_default_bytes(), run_bytes = (size_t)64 << 20;
    for (int i = 1; i < argc; i++) {
        if (i + 1 >= argc) { fprintf(stderr, "rows: %s needs a value\n", argv[i]); return 2; }
        const char *a = argv[i], *v = argv[++i];
        if (!strcmp(a, "--types")) n_types = parse_list(v, types, MAX_LIST);
        else if (!strcmp(a, "--shapes")) n_shapes = parse_list(v, shapes, MAX_LIST);
        else if (!strcmp(a, "--rows")) n_rows = parse_list(v, rows_l, MAX_LIST);
        else if (!strcmp(a, "--threads")) n_thr = parse_list(v, thr, MAX_LIST);
        else if (!strcmp(a, "--rounds")) rounds = atoi(v);
        else if (!strcmp(a, "--arena-mib")) arena_bytes = (size_t)atol(v) << 20;
        else if (!strcmp(a, "--run-mib")) run_bytes = (size_t)atol(v) << 20;
        else if (!strcmp(a, "--peak-reps")) peak_reps = atoi(v);
        else { fprintf(stderr, "rows: unknown option %s\n", a); return 2; }
    }
    if (rounds < 1 || rounds > 64 || peak_reps < 1 || arena_bytes == 0) {
        fprintf(stderr, "rows: --rounds 1-64, --peak-reps >= 1, --arena-mib >= 1\n");
        return 2;
    }

    /* the cases, each with its kernel's struct from a real matmul_prepare */
    int n_cases = n_types * n_shapes * n_rows * n_thr, max_rows = 1;
    long long max_in = 1, max_out = 1;
    row_case *cases = calloc((size_t)n_cases, sizeof *cases);
    if (!cases) { fprintf(stderr, "rows: out of memory\n"); return 1; }
    int nc = 0;
    for (int ti = 0; ti < n_types; ti++)
        for (int si = 0; si < n_shapes; si++)
            for (int ri = 0; ri < n_rows; ri++)
                for (int hi = 0; hi < n_thr; hi++) {
                    row_case *c = &cases[nc++];
                    int type = um_type_from_name(types[ti]);
                    if (type != UM_TYPE_Q4_K && type != UM_TYPE_Q6_K && type != UM_TYPE_Q8_0) {
                        fprintf(stderr, "rows: type %s: q4_K, q6_K or q8_0 (the repacked formats)\n", types[ti]);
                        return 2;
                    }
                    strcpy(c->type_name, types[ti]);
                    c->type = (uint32_t)type;
                    if (sscanf(shapes[si], "%lldx%lld", &c->n_in, &c->n_out) != 2 || c->n_in < 256 || c->n_out < 16 ||
                        c->n_in % 256 || c->n_out % 16) {
                        fprintf(stderr, "rows: bad shape %s (IN x OUT, IN a multiple of 256, OUT of 16)\n", shapes[si]);
                        return 2;
                    }
                    c->rows = atoi(rows_l[ri]);
                    c->threads = atoi(thr[hi]);
                    if (c->rows < 1 || c->rows > 4096 || c->threads < 1 || c->threads > MAX_THREADS) {
                        fprintf(stderr, "rows: rows 1-4096, threads 1-%d\n", MAX_THREADS);
                        return 2;
                    }
                    c->bytes = (size_t)(c->n_in / um_type_blck(c->type)) * um_type_bytes(c->type) * (size_t)c->n_out;
                    c->stride = (c->bytes + 4095) & ~(size_t)4095;
                    max_rows = UM_MAX(max_rows, c->rows);
                    max_in = UM_MAX(max_in, c->n_in);
                    max_out = UM_MAX(max_out, c->n_out);
                }

    uint8_t *arena = stream_alloc(&arena_bytes);
    float *x = um_malloc_aligned(sizeof(float) * (size_t)max_rows * (size_t)max_in);
    float *y = um_malloc_aligned(sizeof(float) * (size_t)max_rows * (size_t)max_out);
    if (!arena || !x || !y) { fprintf(stderr, "rows: out of memory (arena %zu bytes)\n", arena_bytes); return 1; }
    uint16_t *h = (uint16_t *)arena;
    for (size_t i = 0; i < arena_bytes / 2; i += 4) {
        uint64_t r = next_rand();
        for (int k = 0; k < 4; k++) h[i + k] = (uint16_t)(0x1400 | (r >> (16 * k) & 0x3ff));
    }
    for (size_t i = 0; i < (size_t)max_rows * (size_t)max_in; i++) x[i] = (float)(int64_t)(next_rand() % 2001 - 1000) * 1e-3f;

    size_t scratch_bytes = 0;
    um_pool *pools[MAX_THREADS + 1] = { 0 };
    for (int i = 0; i < nc; i++) {
        row_case *c = &cases[i];
        if (c->stride > arena_bytes) { fprintf(stderr, "rows: a %s %lldx%lld matrix exceeds the arena\n", c->type_name, c->n_in, c->n_out); return 2; }
        um_err e;
        /* a real prepare for the struct (kernel, row bytes); the arena is already a packed layout */
        if (matmul_prepare(&c->w, c->type, c->n_in, c->n_out, arena, NULL, UM_KERNEL_AUTO, &e) != UM_OK) {
            fprintf(stderr, "rows: %s\n", e.msg);
            return 1;
        }
        if (!matmul_wants_repack(c->type, c->w.kernel)) {
            fprintf(stderr, "rows: the %s kernel has no repacked layout\n", matmul_kernel_name(c->w.kernel));
            return 1;
        }
        c->w.packed = true;
        size_t per_run = run_bytes > c->bytes ? run_bytes : c->bytes;
        c->views = (int)((per_run + c->bytes - 1) / c->bytes);
        if ((size_t)c->views * c->stride > arena_bytes) c->views = (int)(arena_bytes / c->stride);
        if (!pools[c->threads] && !(pools[c->threads] = pool_new(c->threads))) { fprintf(stderr, "rows: no threads\n"); return 1; }
        scratch_bytes = UM_MAX(scratch_bytes, matmul_scratch_bytes(&c->w, c->rows, c->threads));
    }
    void *scratch = um_malloc_aligned(scratch_bytes);
    if (!scratch) { fprintf(stderr, "rows: out of memory\n"); return 1; }
    memset(scratch, 0, scratch_bytes);

    const um_cpu *cpu = cpu_features();
    char flags[512];
    cpu_feature_string(cpu, flags, sizeof flags);
    const char *kernel = matmul_kernel_name(cases[0].w.kernel), *isa;
    stream_reader(&isa);
    const peak_family *pf = peak_family_for(kernel, 0);
    if (!pf || !peak_supported(pf)) { fprintf(stderr, "rows: no int8 peak loop for the %s kernel\n", kernel); return 1; }
    double peak_before = peak_measure(pf, 1, peak_reps);
    double fam_peak[PEAK_N_FAMILIES] = { 0 };      /* every family this CPU has, for the record */
    for (int f = 0; f < PEAK_N_FAMILIES; f++)
        if (peak_supported(&peak_families[f])) fam_peak[f] = &peak_families[f] == pf ? peak_before : peak_measure(&peak_families[f], 1, peak_reps);

    /* warm-up: every case once (pool threads, scratch and arena pages, clocks) */
    for (int i = 0; i < nc; i++) run_case(&cases[i], arena, arena_bytes, pools[cases[i].threads], x, y, scratch, false);

    int max_thr = 1;
    for (int i = 0; i < nc; i++) max_thr = UM_MAX(max_thr, cases[i].threads);
    printf("{\n  \"cpu\": \"%s\",\n  \"flags\": \"%s\",\n  \"kernel\": \"%s\",\n  \"peak_family\": \"%s\",\n"
           "  \"stream_isa\": \"%s\",\n  \"llc_bytes\": %zu,\n  \"arena_bytes\": %zu,\n  \"run_min_bytes\": %zu,\n"
           "  \"families_gmacs_one_core\": {",
           cpu->brand, flags, kernel, pf->name, isa, stream_llc_bytes(), arena_bytes, run_bytes);
    for (int f = 0, first = 1; f < PEAK_N_FAMILIES; f++)
        if (fam_peak[f] > 0) { printf("%s\"%s\": %.1f", first ? "" : ", ", peak_families[f].name, fam_peak[f]); first = 0; }
    printf("},\n  \"rounds\": [");
    for (int r = 0; r < rounds; r++) {
        double la[3] = { 0 };
        FILE *f = fopen("/proc/loadavg", "r");
        if (f) { if (fscanf(f, "%lf %lf %lf", &la[0], &la[1], &la[2]) != 3) la[0] = la[1] = la[2] = 0; fclose(f); }
        printf("%s\n    {\"load_avg_before\": [%.2f, %.2f, %.2f], \"stream_gbs\": {", r ? "," : "", la[0], la[1], la[2]);
        for (int t = 1; t <= max_thr; t++) {
            stream_rate sr;
            if (!stream_measure(arena, arena_bytes, t, 3, &sr)) { fprintf(stderr, "rows: cannot start threads\n"); return 1; }
            printf("%s\"%d\": {\"wall\": %.2f, \"cpu\": %.2f}", t > 1 ? ", " : "", t, sr.wall_gbs, sr.cpu_gbs);
        }
        /* the peak of this round too: the shares divide each round's rates by its own
         * yardsticks, which cancels what the machine's other tenants do to both */
        printf("}, \"peak_gmacs_one_core\": %.1f}", peak_measure(pf, 1, 3));
        fflush(stdout);
        for (int k = 0; k < nc; k++) {
            row_case *c = &cases[r % 2 ? nc - 1 - k : k];
            run_case(c, arena, arena_bytes, pools[c->threads], x, y, scratch, true);
        }
        fprintf(stderr, "rows: round %d/%d done (load %.2f)\n", r + 1, rounds, la[0]);
    }
    double peak_after = peak_measure(pf, 1, peak_reps);
    printf("\n  ],\n  \"peak_gmacs_one_core\": {\"before\": %.1f, \"after\": %.1f},\n  \"cases\": [", peak_before, peak_after);
    for (int i = 0; i < nc; i++) {
        row_case *c = &cases[i];
        printf("%s\n    {\"type\": \"%s\", \"n_in\": %lld, \"n_out\": %lld, \"rows\": %d, \"threads\": %d, "
               "\"matrix_bytes\": %zu, \"views_per_run\": %d, \"wall_s\": [",
               i ? "," : "", c->type_name, c->n_in, c->n_out, c->rows, c->threads, c->bytes, c->views);
        for (int k = 0; k < c->n_runs; k++) printf("%s%.6f", k ? ", " : "", c->wall_s[k]);
        printf("], \"cpu_s\": [");
        for (int k = 0; k < c->n_runs; k++) printf("%s%.6f", k ? ", " : "", c->cpu_s[k]);
        printf("]}");
    }
    printf("\n  ]\n}\n");
    for (int i = 0; i <= MAX_THREADS; i++) pool_free(pools[i]);
    um_free_aligned(scratch);
    um_free_aligned(x);
    um_free_aligned(y);
    free(arena);
    free(cases);
    return 0;
}
