/*
 * test_uniform: uniform-state decoding (DiffusionGemma, issue 28): the prompt's K/V stored once
 * and reused by canvas passes against the full pass; one sampler step worked by hand with a
 * fixed random stream (the expected values computed here in double from the rule in
 * docs/decoding.md, never by the code under test); the block cut; and a whole decode through the
 * engine with the prompt cache equal, token for token and step for step, to the one without.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine.h"
#include "forward.h"
#include "harness.h"
#include "model.h"
#include "pool.h"
#include "quant.h"
#include "sampler.h"
#include "schedule.h"
#include "snapshot.h"
#include "synth.h"

static int make_model(const char *shape, char *path, size_t cap) {
    snprintf(path, cap, "/tmp/unmask-test-uniform-%d-%s.gguf", (int)getpid(), shape);
    um_synth_opts o = { .shape = synth_find_shape(shape), .type = UM_TYPE_F32, .seed = 7, .init_scale = 1.0f };
    um_err e;
    if (!o.shape || synth_write(&o, path, &e)) { printf("    synth: %s\n", e.msg); return -1; }
    return 0;
}

/* ------------------------------------------------------------------ prompt K/V */

/* A canvas pass over the stored prompt K/V gives the full pass's canvas logits bit for bit
 * (every op computes a row on its own), with and without self-conditioning, prompts shorter
 * and longer than the window (8); the store refuses a prompt it does not hold. */
static void prompt_cache_case(bool reference) {
    char path[256];
    if (make_model("tiny-diffusion-gemma", path, sizeof path)) { th_fail(__FILE__, __LINE__, "synth"); return; }
    um_err e = { "" };
    um_model *m = NULL;
    int rc = model_open(&m, path, &e);
    unlink(path);
    CHECK_MSG(rc == UM_OK, "%s", e.msg);
    if (rc) return;
    const int V = m->hp.n_vocab, C = m->hp.canvas_length, PMAX = 13, TMAX = PMAX + C;
    int32_t tok[64], rows[64];
    float *full = malloc(sizeof(float) * C * V), *cached = malloc(sizeof(float) * C * V);
    float *prev = malloc(sizeof(float) * C * V);
    for (int i = 0; i < C * V; i++) prev[i] = (float)((i * 2654435761u) % 997) / 90.0f;
    um_pool *pool = reference ? NULL : pool_new(2);
    um_forward *f = NULL;
    um_forward_opts fo = { .max_tokens = TMAX, .kernel = UM_KERNEL_AUTO, .reference = reference };
    rc = forward_new(&f, m, pool, &fo, &e);
    int differ = 0, cases = 0;
    const int prompts[] = { 3, 13 };
    for (int pi = 0; !rc && pi < 2; pi++) {
        const int P = prompts[pi], T = P + C;
        for (int i = 0; i < T; i++) tok[i] = (i * 131 + 17 + P) % V;
        for (int i = 0; i < C; i++) rows[i] = P + i;
        for (int sc = 0; !rc && sc < 2; sc++) {
            um_selfcond s = { .logits = sc ? prev : NULL, .temp = 0.7f, .mode = UM_SC_EXACT };
            rc = forward_run_dg(f, tok, T, P, &s, rows, C, full, &e);
            if (!rc && sc == 0) rc = forward_dg_prompt(f, tok, P, &e);
            /* the canvas may change between canvas passes: the prompt's K/V stay valid */
            if (!rc) rc = forward_run_dg_cached(f, tok, T, P, &s, rows, C, cached, &e);
            for (int i = 0; !rc && i < C * V; i++) differ += full[i] != cached[i];
            cases++;
        }
        tok[P + 2] = (tok[P + 2] + 5) % V;
        if (!rc) rc = forward_run_dg(f, tok, T, P, NULL, rows, C, full, &e);
        if (!rc) rc = forward_run_dg_cached(f, tok, T, P, NULL, rows, C, cached, &e);
        for (int i = 0; !rc && i < C * V; i++) differ += full[i] != cached[i];
    }
    CHECK_MSG(rc == UM_OK, "%s", e.msg);
    CHECK_MSG(cases == 4 && differ == 0, "%d logits differ between the cached and the full pass", differ);
    CHECK(forward_dg_prompt_bytes(f) > 0);
    /* another prompt than the stored one, and a prompt row asked of a canvas pass */
    um_err e2 = { "" }, e3 = { "" };
    tok[0] = (tok[0] + 1) % V;
    CHECK(!rc && forward_run_dg_cached(f, tok, 13 + C, 13, NULL, rows, C, cached, &e2) != UM_OK);
    CHECK_CONTAINS(e2.msg, "another prompt");
    tok[0] = (tok[0] + V - 1) % V;
    rows[0] = 2;
    CHECK(!rc && forward_run_dg_cached(f, tok, 13 + C, 13, NULL, rows, C, cached, &e3) != UM_OK);
    CHECK_CONTAINS(e3.msg, "prompt row");
    free(full); free(cached); free(prev);
    forward_free(f);
    pool_free(pool);
    model_close(m);
}

TEST(uniform_prompt_cache_equals_full_pass)           { prompt_cache_case(false); }
TEST(uniform_prompt_cache_equals_full_pass_reference) { prompt_cache_case(true); }
