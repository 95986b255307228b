/*
 * peer_logits: the correctness and speed peer. Drives llama.cpp's C API (llama.h) on a GGUF
 * file: one non-causal forward pass over exactly the given canvas, logits for every row,
 * written as n_tokens rows of n_vocab little-endian float32 (the same format as
 * `unmask logits --out`). With --reps N it also times N forward passes and prints the median.
 *
 * Built by `make check-peer` / `make bench` against build/peer (llama.cpp v0.4.0 from the pinned
 * npm package node-llama-cpp@3.21.1, AMX off). Not part of the unmask binary.
 *
 * usage: peer_logits MODEL.gguf --tokens ID,ID,... [--out FILE.f32] [-t THREADS] [--reps N]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "llama.h"

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void quiet_log(enum ggml_log_level level, const char *text, void *user) {
    (void)user;
    if (level >= GGML_LOG_LEVEL_ERROR) fputs(text, stderr);
}

int main(int argc, char **argv) {
    const char *model_path = NULL, *tokens_arg = NULL, *out_path = NULL;
    int n_threads = 2, reps = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--tokens") && i + 1 < argc) tokens_arg = argv[++i];
        else if (!strcmp(argv[i], "--out") && i + 1 < argc) out_path = argv[++i];
        else if (!strcmp(argv[i], "-t") && i + 1 < argc) n_threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
        else if (!model_path && argv[i][0] != '-') model_path = argv[i];
        else { fprintf(stderr, "peer_logits: unknown argument '%s'\n", argv[i]); return 2; }
    }
    if (!model_path || !tokens_arg) {
        fprintf(stderr, "usage: peer_logits MODEL.gguf --tokens ID,ID,... [--out FILE.f32] [-t N] [--reps N]\n");
        return 2;
    }
    int cap = 16, n = 0;
    llama_token *toks = malloc(sizeof *toks * cap);
    for (const char *p = tokens_arg; *p;) {
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p) { fprintf(stderr, "peer_logits: bad token list at '%s'\n", p); return 2; }
        if (n == cap) toks = realloc(toks, sizeof *toks * (cap *= 2));
        toks[n++] = (llama_token)v;
        p = *end == ',' ? end + 1 : end;
    }

    llama_log_set(quiet_log, NULL);
    llama_backend_init();
    struct llama_model_params mp = llama_model_default_params();
    double t0 = now();
    struct llama_model *model = llama_model_load_from_file(model_path, mp);
    if (!model) { fprintf(stderr, "peer_logits: cannot load %s\n", model_path); return 1; }
    double t_load = now() - t0;
    struct llama_context_params cp = llama_context_default_params();
    cp.n_ctx = (uint32_t)(n < 512 ? 512 : n);
    cp.n_batch = cp.n_ubatch = (uint32_t)n;
    cp.n_threads = cp.n_threads_batch = n_threads;
    cp.no_perf = true;
    struct llama_context *ctx = llama_init_from_model(model, cp);
    if (!ctx) { fprintf(stderr, "peer_logits: cannot create context\n"); return 1; }
    llama_set_causal_attn(ctx, false);
    int n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));

    struct llama_batch batch = llama_batch_init(n, 0, 1);
    batch.n_tokens = n;
    for (int i = 0; i < n; i++) {
        batch.token[i] = toks[i];
        batch.pos[i] = i;
        batch.n_seq_id[i] = 1;
        batch.seq_id[i][0] = 0;
        batch.logits[i] = 1;
    }
    int runs = reps > 0 ? reps : 1;
    double *ms = malloc(sizeof *ms * runs);
    for (int r = 0; r < runs; r++) {
        /* a model with a K/V memory (llama.cpp PR #17454's llada2) refuses a second batch at the
         * same positions: start every pass from an empty memory (none on v0.4.0's diffusion models) */
        llama_memory_t mem = llama_get_memory(ctx);
        if (r > 0 && mem) llama_memory_clear(mem, true);
        double t = now();
        if (llama_decode(ctx, batch) != 0) { fprintf(stderr, "peer_logits: llama_decode failed\n"); return 1; }
        ms[r] = (now() - t) * 1e3;
    }
    if (out_path) {
        FILE *f = fopen(out_path, "wb");
        if (!f) { perror(out_path); return 1; }
        for (int i = 0; i < n; i++) {
            const float *row = llama_get_logits_ith(ctx, i);
            if (!row || fwrite(row, sizeof(float), (size_t)n_vocab, f) != (size_t)n_vocab) {
                fprintf(stderr, "peer_logits: cannot write row %d\n", i);
                return 1;
            }
        }
        if (fclose(f) != 0) { perror(out_path); return 1; }
    }
    qsort(ms, runs, sizeof *ms, cmp_double);
    printf("{\"n_tokens\": %d, \"n_vocab\": %d, \"threads\": %d, \"load_s\": %.3f, \"reps\": %d, "
           "\"forward_ms_median\": %.2f, \"forward_ms\": [", n, n_vocab, n_threads, t_load, runs, ms[runs / 2]);
    for (int r = 0; r < runs; r++) printf("%s%.2f", r ? ", " : "", ms[r]);
    printf("]}\n");
    llama_batch_free(batch);
    llama_free(ctx);
    llama_model_free(model);
    llama_backend_free();
    free(ms);
    free(toks);
    return 0;
}
