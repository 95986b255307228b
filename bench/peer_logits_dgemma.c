/*
 * peer_logits_dgemma: the DiffusionGemma correctness peer. Drives the llama.cpp port of PR #24423
 * (unslothai/llama.cpp refs/pins/c3fb9724, built by tools/check-peer-dgemma.sh) through its C API:
 * one forward pass over [prompt | canvas] (the port splits the batch at n_tokens minus the file's
 * diffusion.canvas_length), optionally with self-conditioning from a previous step's logits
 * (llama_diffusion_set_sc, the fork's own API, as its examples/diffusion-gemma-eval does), flash
 * attention off (its F16 K/V would round what unmask keeps in F32). Writes every row's logits as
 * n_tokens rows of n_vocab little-endian float32, the format of `unmask logits --out`.
 *
 * Built only against that fork's llama.h (it declares llama_diffusion_set_sc); not part of unmask.
 *
 * usage: peer_logits_dgemma MODEL.gguf --tokens ID,ID,... --out FILE.f32 [-t THREADS]
 *                           [--sc PREV.f32 [--sc-temp T]]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llama.h"

static void quiet_log(enum ggml_log_level level, const char *text, void *user) {
    (void)user;
    if (level >= GGML_LOG_LEVEL_ERROR) fputs(text, stderr);
}

int main(int argc, char **argv) {
    const char *model_path = NULL, *tokens_arg = NULL, *out_path = NULL, *sc_path = NULL;
    int n_threads = 2;
    float sc_temp = 1.0f;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--tokens") && i + 1 < argc) tokens_arg = argv[++i];
        else if (!strcmp(argv[i], "--out") && i + 1 < argc) out_path = argv[++i];
        else if (!strcmp(argv[i], "-t") && i + 1 < argc) n_threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--sc") && i + 1 < argc) sc_path = argv[++i];
        else if (!strcmp(argv[i], "--sc-temp") && i + 1 < argc) sc_temp = (float)atof(argv[++i]);
        else if (!model_path && argv[i][0] != '-') model_path = argv[i];
        else { fprintf(stderr, "peer_logits_dgemma: unknown argument '%s'\n", argv[i]); return 2; }
    }
    if (!model_path || !tokens_arg || !out_path || !(sc_temp > 0)) {
        fprintf(stderr, "usage: peer_logits_dgemma MODEL.gguf --tokens ID,... --out FILE.f32 [-t N] [--sc PREV.f32 [--sc-temp T]]\n");
        return 2;
    }
    int cap = 16, n = 0;
    llama_token *toks = malloc(sizeof *toks * cap);
    for (const char *p = tokens_arg; *p;) {
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p) { fprintf(stderr, "peer_logits_dgemma: bad token list at '%s'\n", p); return 2; }
        if (n == cap) toks = realloc(toks, sizeof *toks * (cap *= 2));
        toks[n++] = (llama_token)v;
        p = *end == ',' ? end + 1 : end;
    }
    llama_log_set(quiet_log, NULL);
    llama_backend_init();
    struct llama_model *model = llama_model_load_from_file(model_path, llama_model_default_params());
    if (!model) { fprintf(stderr, "peer_logits_dgemma: cannot load %s\n", model_path); return 1; }
    const int n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));
    char meta[32] = "";
    if (llama_model_meta_val_str(model, "diffusion.canvas_length", meta, sizeof meta) < 0) {
        fprintf(stderr, "peer_logits_dgemma: %s has no diffusion.canvas_length\n", model_path);
        return 1;
    }
    const int C = atoi(meta), P = n > C ? n - C : 0;
    float *sc = NULL;
    if (sc_path) {
        /* the port uploads [n_vocab, C] floats: the canvas rows' previous logits */
        size_t want = (size_t)(n - P) * (size_t)n_vocab;
        FILE *f = fopen(sc_path, "rb");
        sc = malloc(sizeof *sc * want);
        if (!f || !sc || fread(sc, sizeof *sc, want, f) != want) {
            fprintf(stderr, "peer_logits_dgemma: %s: expected %d x %d floats\n", sc_path, n - P, n_vocab);
            return 1;
        }
        fclose(f);
        /* enable before the context so the graph reserve includes the SC subgraph (diffusion-cli.cpp) */
        llama_diffusion_set_sc(model, sc, 1.0f, 1.0f / sc_temp, true);
    }
    struct llama_context_params cp = llama_context_default_params();
    cp.n_ctx = (uint32_t)(n < 512 ? 512 : n);
    cp.n_batch = cp.n_ubatch = (uint32_t)n;
    cp.n_threads = cp.n_threads_batch = n_threads;
    cp.no_perf = true;
    cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
    struct llama_context *ctx = llama_init_from_model(model, cp);
    if (!ctx) { fprintf(stderr, "peer_logits_dgemma: cannot create context\n"); return 1; }
    llama_set_causal_attn(ctx, false);
    struct llama_batch batch = llama_batch_init(n, 0, 1);
    batch.n_tokens = n;
    for (int i = 0; i < n; i++) {
        batch.token[i] = toks[i];
        batch.pos[i] = i;
        batch.n_seq_id[i] = 1;
        batch.seq_id[i][0] = 0;
        batch.logits[i] = 1;
    }
    if (sc) llama_diffusion_set_sc(model, sc, 1.0f, 1.0f / sc_temp, true);
    if (llama_decode(ctx, batch) != 0) { fprintf(stderr, "peer_logits_dgemma: llama_decode failed\n"); return 1; }
    FILE *f = fopen(out_path, "wb");
    if (!f) { perror(out_path); return 1; }
    for (int i = 0; i < n; i++) {
        const float *row = llama_get_logits_ith(ctx, i);
        if (!row || fwrite(row, sizeof(float), (size_t)n_vocab, f) != (size_t)n_vocab) {
            fprintf(stderr, "peer_logits_dgemma: cannot write row %d\n", i);
            return 1;
        }
    }
    if (fclose(f) != 0) { perror(out_path); return 1; }
    printf("{\"n_tokens\": %d, \"n_prompt\": %d, \"n_vocab\": %d, \"self_conditioning\": %s}\n", n, P, n_vocab,
           sc ? "true" : "false");
    llama_batch_free(batch);
    llama_free(ctx);
    llama_model_free(model);
    llama_backend_free();
    free(sc);
    free(toks);
    return 0;
}
