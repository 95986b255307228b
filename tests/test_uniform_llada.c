/*
 * test_uniform_llada: a file of a masked architecture (llada, what unmask's trainer writes)
 * that says unmask.uniform_state = true, decoded by the uniform-state sampler through the
 * architecture's ordinary forward pass (engine_uniform.c): the key and the diffusion.* keys
 * load (a key that is not a bool, or no canvas_length, is one message naming the key); the
 * defaults are the uniform schedule with the file's settings, no prompt cache and no
 * self-conditioning, and a masked schedule, a cache or self-conditioning are refused; the
 * canvas starts from the INIT streams; every step of the first canvas equals a reference
 * worked here in double from the logits of a plain forward_run over [prompt | canvas] (not
 * the later canvases), with the same streams; the same file without the key decodes masked.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine.h"
#include "forward.h"
#include "gguf.h"
#include "harness.h"
#include "model.h"
#include "pool.h"
#include "quant.h"
#include "sampler.h"
#include "snapshot.h"
#include "synth.h"

enum { CANVAS = 8, STEPS = 4, PROMPT = 5 };
static const float T_MIN = 0.5f, T_MAX = 1.0f, BOUND = 2.5f;

typedef enum variant {
    V_NONE,             /* the synth file as written: no key */
    V_UNIFORM,          /* the key true and the sampler's keys */
    V_FALSE,            /* the key false (and the sampler's keys, unused) */
    V_NOT_BOOL,         /* the key as a uint32 1 */
    V_NO_CANVAS,        /* the key true, no diffusion.canvas_length */
    V_SHIFT,            /* V_UNIFORM scoring position i from row i-1 (diffusion.shift_logits) */
} variant;

static char base_path[256], var_path[256];

__attribute__((destructor)) static void cleanup(void) {
    if (base_path[0]) unlink(base_path);
    if (var_path[0]) unlink(var_path);
}

/* tiny-llada (f32, seed 7) rewritten as variant v; returns its path or NULL. */
static const char *write_variant(variant v) {
    um_err e = { "" };
    if (!base_path[0]) {
        snprintf(base_path, sizeof base_path, "/tmp/unmask-us-llada-%d-base.gguf", (int)getpid());
        um_synth_opts o = { .shape = synth_find_shape("tiny-llada"), .type = UM_TYPE_F32, .seed = 7, .init_scale = 1.0f };
        if (synth_write(&o, base_path, &e)) { printf("    synth: %s\n", e.msg); base_path[0] = 0; return NULL; }
    }
    if (v == V_NONE) return base_path;
    snprintf(var_path, sizeof var_path, "/tmp/unmask-us-llada-%d.gguf", (int)getpid());
    gguf_file *g;
    if (gguf_open(&g, base_path, &e)) { printf("    %s\n", e.msg); return NULL; }
    gguf_writer *w = gguf_writer_new();
    const char *skip[] = { "diffusion.shift_logits", NULL };
    gguf_copy_kv(w, g, v == V_SHIFT ? skip : NULL);
    if (v == V_NOT_BOOL) gguf_set_u32(w, UM_UNIFORM_STATE_KEY, 1);
    else gguf_set_bool(w, UM_UNIFORM_STATE_KEY, v != V_FALSE);
    if (v != V_NO_CANVAS) gguf_set_u32(w, "diffusion.canvas_length", CANVAS);
    if (v == V_SHIFT) gguf_set_bool(w, "diffusion.shift_logits", true);
    gguf_set_u32(w, "diffusion.eb_max_steps", STEPS);
    gguf_set_f32(w, "diffusion.eb_t_min", T_MIN);
    gguf_set_f32(w, "diffusion.eb_t_max", T_MAX);
    gguf_set_f32(w, "diffusion.eb_entropy_bound", BOUND);
    gguf_set_u32(w, "diffusion.eb_stability_threshold", 100);   /* never stable: STEPS steps a canvas */
    gguf_set_f32(w, "diffusion.eb_confidence_threshold", 0.0f);
    int rc = UM_OK;
    for (uint64_t i = 0; rc == UM_OK && i < gguf_n_tensors(g); i++) {
        const gguf_tensor *t = gguf_tensor_at(g, i);
        char name[256];
        snprintf(name, sizeof name, "%.*s", (int)t->name.len, t->name.ptr);
        rc = gguf_add_tensor(w, name, t->type, t->n_dims, t->ne, t->data, t->size, &e);
    }
    if (rc == UM_OK) rc = gguf_writer_write(w, var_path, &e);
    gguf_writer_free(w);
    gguf_close(g);
    if (rc) { printf("    %s\n", e.msg); return NULL; }
    return var_path;
}

/* ------------------------------------------------------------------ loading */

TEST(uniform_llada_key_loads) {
    const char *p;
    um_model *m = NULL;
    um_err e = { "" };
    CHECK((p = write_variant(V_UNIFORM)) && model_open(&m, p, &e) == UM_OK);
    CHECK_MSG(m, "%s", e.msg);
    if (m) {
        const um_hparams *hp = &m->hp;
        CHECK(hp->uniform_state && !m->arch->uniform_state && hp->mask_id >= 0);   /* the mask token stays */
        CHECK(hp->canvas_length == CANVAS && hp->eb_max_steps == STEPS && hp->eb_stability == 100);
        CHECK(hp->eb_t_min == T_MIN && hp->eb_t_max == T_MAX && hp->eb_entropy_bound == BOUND && hp->eb_confidence == 0);
        model_close(m);
    }
    m = NULL;
    CHECK((p = write_variant(V_FALSE)) && model_open(&m, p, &e) == UM_OK && m && !m->hp.uniform_state);
    model_close(m);
    m = NULL;
    CHECK((p = write_variant(V_NONE)) && model_open(&m, p, &e) == UM_OK && m && !m->hp.uniform_state);
    model_close(m);
    /* malformed: one message naming the key, through the runnable verdict too */
    um_err e1 = { "" }, e2 = { "" };
    m = NULL;
    CHECK((p = write_variant(V_NOT_BOOL)) && model_open(&m, p, &e1) != UM_OK && !m);
    CHECK_CONTAINS(e1.msg, "key 'unmask.uniform_state' has type uint32, expected bool");
    CHECK((p = write_variant(V_NO_CANVAS)) && model_check_runnable(p, &e2) != UM_OK);
    CHECK_CONTAINS(e2.msg, "required key 'diffusion.canvas_length' missing (unmask.uniform_state = true");
    CHECK(!strchr(e1.msg, '\n') && !strchr(e2.msg, '\n'));
}

/* ------------------------------------------------------------------ settings */

static um_engine *open_engine_at(const char *p) {
    if (!p) return NULL;
    um_engine_opts o = { .model_path = p, .n_threads = 2, .kernel = -1, .chat_template = "none" };
    um_engine *en = NULL;
    um_err e = { "" };
    if (engine_open(&en, &o, &e)) printf("    engine_open: %s\n", e.msg);
    return en;
}

static um_engine *open_engine(variant v) { return open_engine_at(write_variant(v)); }

TEST(uniform_llada_defaults_and_refusals) {
    um_engine *en = open_engine(V_UNIFORM);
    CHECK(en != NULL);
    if (!en) return;
    um_settings s;
    engine_default_settings(en, &s);
    CHECK(s.schedule == UM_SCHED_UNIFORM && s.us_canvas == CANVAS && s.n_gen == CANVAS && s.steps == STEPS);
    CHECK(s.us_t_min == T_MIN && s.us_t_max == T_MAX && s.us_bound == BOUND && s.us_stability == 100);
    CHECK(s.cache == UM_CACHE_NONE && !s.us_self_cond);
    int32_t prompt[PROMPT] = { 1, 2, 3, 4, 5 };
    CHECK(engine_start_tokens(en, prompt, PROMPT, &s, NULL) == UM_OK);
    struct { um_settings s; const char *msg; } bad[4];
    for (int i = 0; i < 4; i++) bad[i].s = s;
    bad[0].s.schedule = UM_SCHED_BLOCK;
    bad[0].msg = "is a uniform-state model (unmask.uniform_state = true): it decodes with the uniform schedule only";
    bad[1].s.cache = UM_CACHE_PREFIX;
    bad[1].msg = "--cache prefix: this uniform-state LLaDA model attends both ways";
    bad[2].s.us_self_cond = true;
    bad[2].msg = "--self-cond: this uniform-state LLaDA file has no self-conditioning weights";
    bad[3].s.cache = UM_CACHE_DUAL;
    bad[3].msg = "--cache dual";
    for (int i = 0; i < 4; i++) {
        um_err e = { "" };
        CHECK(engine_start_tokens(en, prompt, PROMPT, &bad[i].s, &e) != UM_OK);
        CHECK_CONTAINS(e.msg, bad[i].msg);
    }
    engine_close(en);
    /* the key false: the family's masked schedule, as before */
    en = open_engine(V_FALSE);
    CHECK(en != NULL);
    if (!en) return;
    engine_default_settings(en, &s);
    CHECK(s.schedule == UM_SCHED_BLOCK);
    s.schedule = UM_SCHED_UNIFORM;
    um_err e = { "" };
    CHECK(engine_start_tokens(en, prompt, PROMPT, &s, &e) != UM_OK);
    CHECK_CONTAINS(e.msg, "the uniform schedule is for uniform-state models (this is LLaDA)");
    engine_close(en);
}

/* The file without the key decodes masked as it always did: the canvas starts as masks and
 * every one is committed by the end, no position shows a uniform-state kind. */
TEST(uniform_llada_without_key_decodes_masked) {
    um_engine *en = open_engine(V_NONE);
    CHECK(en != NULL);
    if (!en) return;
    um_settings s;
    engine_default_settings(en, &s);
    s.n_gen = 16;
    s.steps = 8;
    int32_t prompt[PROMPT] = { 1, 2, 3, 4, 5 };
    um_err e = { "" };
    CHECK_MSG(engine_start_tokens(en, prompt, PROMPT, &s, &e) == UM_OK, "%s", e.msg);
    um_engine_info info;
    engine_get_info(en, &info);
    um_snapshot *sn = engine_snapshot(en);
    int masks = 0;
    for (int i = PROMPT; i < sn->n_canvas; i++) masks += sn->pos[i].masked && sn->pos[i].token == info.mask_id;
    CHECK_EQ(masks, 16);
    CHECK(!sn->us.on);
    snapshot_unref(sn);
    CHECK(engine_run(en, NULL, NULL, &e) >= 0);
    sn = engine_snapshot(en);
    int left = 0, kinds = 0;
    for (int i = 0; i < sn->n_canvas; i++) { left += sn->pos[i].masked; kinds += sn->pos[i].us != UM_US_NONE; }
    CHECK(sn->done && left == 0 && kinds == 0 && sn->step == 8);
    snapshot_unref(sn);
    engine_close(en);
}

/* ------------------------------------------------------------------ the decode against a reference */

typedef struct run_log {
    um_snapshot *snap[64];
    int          n;
} run_log;

static void keep_snap(void *ctx, um_snapshot *sn) {
    run_log *r = ctx;
    if (r->n < 64) r->snap[r->n++] = sn;
    else snapshot_unref(sn);
}

/* One canvas row at temperature t, in double: entropy of softmax(l / t), its argmax (lowest
 * id on ties), and the sample: the first token whose cumulative probability reaches u. */
static void row_ref(const float *l, int V, double t, double u, double *H, int *argmax, int *sample) {
    double mx = -INFINITY, z = 0;
    *argmax = 0;
    for (int v = 0; v < V; v++) if (l[v] > mx) { mx = l[v]; *argmax = v; }
    for (int v = 0; v < V; v++) z += exp(((double)l[v] - mx) / t);
    double h = 0, cum = 0;
    *sample = -1;
    for (int v = 0; v < V; v++) {
        const double p = exp(((double)l[v] - mx) / t) / z;
        if (p > 0) h -= p * log(p);
        cum += p;
        if (*sample < 0 && p > 0 && cum >= u) *sample = v;
    }
    if (*sample < 0) *sample = *argmax;          /* u past the rounded total: not with these rows */
    *H = h;
}

/* Two canvases of 8 after a prompt of 5, 4 steps each; the first canvas step by step against
 * the reference: its pass runs over [prompt | canvas 0] only (the second canvas's noise is not
 * part of it), every position shows the argmax and holds the sample if accepted (entropy order,
 * the sum before within the bound), else the NOISE stream's token; the second canvas starts
 * from its INIT stream and holds it until its turn. shift: the file scores position i from
 * row i-1, so the canvas's logits are rows P-1 .. P+C-2. */
static void decode_case(variant v) {
    const char *path = write_variant(v);
    um_engine *en = open_engine_at(path);
    CHECK(en != NULL);
    if (!en) return;
    um_settings s;
    engine_default_settings(en, &s);
    s.n_gen = 2 * CANVAS;
    s.seed = 23;
    int32_t prompt[PROMPT] = { 72, 101, 108, 108, 111 };
    um_err e = { "" };
    int rc = engine_start_tokens(en, prompt, PROMPT, &s, &e);
    CHECK_MSG(rc == UM_OK, "%s", e.msg);
    um_engine_info info;
    engine_get_info(en, &info);
    const int V = info.n_vocab, P = PROMPT, C = CANVAS, N = P + 2 * C;
    /* the start: every generated position a token of its canvas's INIT stream */
    int32_t tok[PROMPT + 2 * CANVAS];
    memcpy(tok, prompt, sizeof prompt);
    for (int i = P; i < N; i++) tok[i] = (int32_t)floor(sampler_uniform_at(s.seed, (i - P) / C, i, UM_RNG_INIT) * V);
    um_snapshot *sn = engine_snapshot(en);
    int bad_start = 0;
    for (int i = P; i < N; i++) bad_start += sn->pos[i].token != tok[i] || sn->pos[i].us != UM_US_NOISE || sn->pos[i].masked;
    CHECK_MSG(bad_start == 0, "%d positions do not start from their INIT stream", bad_start);
    snapshot_unref(sn);
    run_log log = { .n = 0 };
    if (!rc) rc = engine_run(en, keep_snap, &log, &e) < 0;
    CHECK_MSG(rc == 0, "%s", e.msg);
    CHECK(log.n == 2 * STEPS);

    /* the reference pass: the same model through forward.h, the engine's threads and kernels */
    um_model *m = NULL;
    um_pool *pool = pool_new(2);
    um_forward *f = NULL;
    um_forward_opts fo = { .max_tokens = N, .kernel = UM_KERNEL_AUTO };
    CHECK(model_open(&m, path, &e) == UM_OK && forward_new(&f, m, pool, &fo, &e) == UM_OK);
    CHECK(m && m->hp.shift_logits == (v == V_SHIFT));
    float *logits = malloc(sizeof(float) * C * V);
    int32_t rows[CANVAS];
    for (int i = 0; i < C; i++) rows[i] = P + i - (v == V_SHIFT);
    int bad = 0, accepted_total = 0;
    double margin = INFINITY;                    /* how far every sum before stays from the bound */
    for (int k = 0; f && k < STEPS && k < log.n; k++) {
        const um_snapshot *x = log.snap[k];
        const double t = T_MIN + (T_MAX - T_MIN) * (double)(STEPS - k) / STEPS;
        if (forward_run(f, tok, P + C, rows, C, logits, &e)) { bad++; break; }
        double H[CANVAS];
        int amax[CANVAS], samp[CANVAS], order[CANVAS];
        for (int i = 0; i < C; i++) {
            row_ref(logits + (size_t)i * V, V, t, sampler_uniform_at(s.seed, k, P + i, UM_RNG_TOKEN), &H[i], &amax[i],
                    &samp[i]);
            order[i] = i;
        }
        for (int i = 1; i < C; i++)              /* by (entropy, position) */
            for (int j = i; j > 0 && H[order[j - 1]] > H[order[j]]; j--) { int q = order[j]; order[j] = order[j - 1]; order[j - 1] = q; }
        /* the lowest always; each next while the entropies before it sum to <= the bound (the
           sums only grow, so the first refusal ends it) */
        bool acc[CANVAS] = { false };
        double before = 0;
        int n_acc = 0;
        for (int r = 0; r < C; r++) {
            if (r > 0) margin = fmin(margin, fabs(before - BOUND));
            if (r > 0 && before > BOUND) break;
            acc[order[r]] = true;
            n_acc++;
            before += H[order[r]];
        }
        accepted_total += n_acc;
        const bool last = k == STEPS - 1;
        bad += fabs(x->us.temperature - t) > 1e-6;
        bad += x->us.accepted != n_acc;
        bad += x->us.self_cond;                  /* never self-conditioned */
        for (int i = 0; i < C; i++) {
            const um_pos *p = &x->pos[P + i];
            const int32_t held = acc[i] ? samp[i] : (int32_t)floor(sampler_uniform_at(s.seed, k, P + i, UM_RNG_NOISE) * V);
            bad += fabs(p->entropy - H[i]) > 1e-4 * (1 + H[i]);
            if (last && i >= x->us.cut) continue;               /* past the cut: end of text */
            bad += p->token != amax[i];                       /* the output is the argmax */
            if (!last) bad += p->held != held || p->us != (acc[i] ? UM_US_ACCEPTED : UM_US_DRAFT);
            tok[P + i] = held;
        }
        for (int i = P + C; i < N; i++)          /* the next canvas waits as it started */
            bad += x->pos[i].us != UM_US_NOISE || x->pos[i].token != tok[i];
        bad += x->rows_computed != P + C;         /* the whole [prompt | canvas] every step */
    }
    printf("    %d accepted over %d steps of %d positions; closest sum to the bound %.4f away\n", accepted_total, STEPS, C,
           margin);
    CHECK_MSG(bad == 0, "%d values differ from the reference", bad);
    CHECK(accepted_total > STEPS && accepted_total < STEPS * C);   /* the bound mattered */
    CHECK(margin > 1e-3);                        /* the reference is not decided by rounding */
    /* the second canvas ran over [prompt | canvas 0's output | canvas 1] */
    CHECK(log.n == 2 * STEPS && log.snap[STEPS]->rows_computed == P + 2 * C && log.snap[2 * STEPS - 1]->done);
    free(logits);
    forward_free(f);
    pool_free(pool);
    model_close(m);
    for (int i = 0; i < log.n; i++) snapshot_unref(log.snap[i]);
    engine_close(en);
}

TEST(uniform_llada_decode_equals_reference)         { decode_case(V_UNIFORM); }
TEST(uniform_llada_decode_equals_reference_shifted) { decode_case(V_SHIFT); }
