/*
 * Uniform-state training (unmask-train train --sft --corrupt uniform): random-token corruption
 * of the answer, the loss at every answer position (tm_step_at with loss_at), its gradient
 * against finite differences, and the export's keys that make unmask decode the file with the
 * uniform-state sampler.
 */
#include "harness.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bpe.h"
#include "gguf.h"
#include "tmodel.h"

static const tm_config utiny = { .n_vocab = 19, .n_embd = 8, .n_layer = 2, .n_head = 2, .n_ff = 12, .n_ctx = 6,
                                 .mask_id = 18, .rope_base = 10000.0f, .norm_eps = 1e-5f };

/* B sequences of 2 prompt and 4 answer tokens, the answer corrupted; at least one token replaced */
static void ubatch(const tm_model *m, int B, uint64_t seed, int32_t *in, int32_t *tgt, bool *at, float *wgt) {
    uint64_t s[4];
    tm_rand_seed(s, seed);
    for (int b = 0; b < B; b++) {
        int32_t seq[6];
        for (int i = 0; i < 6; i++) seq[i] = (int32_t)(tm_rand(s) % 18);
        bool changed;
        do {
            wgt[b] = tm_uniform_answer(m, seq, 6, 2, s, in + b * 6, tgt + b * 6, at + b * 6);
            changed = false;
            for (int i = 2; i < 6; i++) changed |= in[b * 6 + i] != seq[i];
        } while (!changed);
    }
}

TEST(train_uniform_corruption) {
    tm_model *m;
    um_err e = { "" };
    CHECK(tm_new(&m, &utiny, &e) == UM_OK);
    uint64_t s[4];
    tm_rand_seed(s, 3);
    int32_t seq[6] = { 1, 2, 3, 4, 5, 6 }, in[6], tgt[6];
    bool at[6];
    long replaced = 0, seen[19] = { 0 };
    for (int k = 0; k < 4000; k++) {
        float w = tm_uniform_answer(m, seq, 6, 2, s, in, tgt, at);
        CHECK_NEAR(w, 0.25, 1e-7);                       /* 1 / the answer's length */
        for (int i = 0; i < 6; i++) {
            CHECK_EQ(tgt[i], seq[i]);
            CHECK_EQ(at[i], i >= 2);                     /* every answer position counts, no prompt one */
            CHECK(in[i] >= 0 && in[i] < 19);
            if (i < 2) CHECK_EQ(in[i], seq[i]);
            else { replaced += in[i] != seq[i]; seen[in[i]]++; }
        }
    }
    /* t ~ U(0, 1): about half replaced (a replacement may draw the same token: 1/19 of them) */
    double frac = (double)replaced / (4000.0 * 4);
    CHECK_MSG(frac > 0.43 && frac < 0.52, "replaced %.3f", frac);
    for (int v = 0; v < 19; v++) CHECK_MSG(seen[v] > 0, "token %d never drawn", v);   /* the mask id too */
    tm_free(m);
}

TEST(train_uniform_loss_is_answer_ce) {
    /* tm_step_at with loss_at against CE computed here from tm_logits in double: every answer
     * position counts, clean or replaced; prompt positions never */
    tm_model *m;
    um_err e = { "" };
    CHECK(tm_new(&m, &utiny, &e) == UM_OK);
    tm_init(m, 5);
    for (int64_t i = 0; i < m->n_params; i++) m->p[i] *= 6.0f;
    tm_ws *w;
    CHECK(tm_ws_new(&w, m, 2, 1, &e) == UM_OK);
    int32_t in[12], tgt[12];
    bool at[12];
    float wgt[2];
    ubatch(m, 2, 8, in, tgt, at, wgt);
    int64_t n = 0;
    double got = tm_step_at(m, w, NULL, in, tgt, at, wgt, 2, 6, 2.0, false, &n);
    CHECK_EQ(n, 8);
    double want = 0;
    float lg[6 * 19];
    for (int b = 0; b < 2; b++) {
        tm_logits(m, w, NULL, in + b * 6, 6, lg);
        for (int i = 2; i < 6; i++) {
            const float *r = lg + i * 19;
            double mx = r[0], sum = 0;
            for (int v = 1; v < 19; v++) mx = fmax(mx, r[v]);
            for (int v = 0; v < 19; v++) sum += exp(r[v] - mx);
            want += (log(sum) + mx - r[tgt[b * 6 + i]]) * wgt[b];
        }
    }
    want /= 2.0;
    CHECK_MSG(fabs(got - want) <= 1e-4 * fabs(want), "loss %.6f, by hand %.6f", got, want);
    /* loss_at NULL: only mask tokens count (none here unless a draw hit the mask id) */
    int masks = 0;
    for (int i = 0; i < 12; i++) masks += in[i] == utiny.mask_id;
    tm_step_at(m, w, NULL, in, tgt, NULL, wgt, 2, 6, 2.0, false, &n);
    CHECK_EQ(n, masks);
    tm_ws_free(w);
    tm_free(m);
}

TEST(train_uniform_backward_matches_finite_differences) {
    /* the same check and tolerances as train_sft_backward_matches_finite_differences, on the
     * uniform objective: the loss at every answer position, inputs holding random tokens */
    const double abs_tol = 2e-3, rel_tol = 2e-2, h = 1e-3;
    tm_model *m;
    um_err e = { "" };
    CHECK(tm_new(&m, &utiny, &e) == UM_OK);
    tm_init(m, 6);
    uint64_t s[4];
    tm_rand_seed(s, 10);
    for (int64_t i = 0; i < m->n_params; i++) m->p[i] = m->p[i] * 8.0f + (float)(tm_rand_unit(s) - 0.5) * 0.1f;
    tm_ws *w;
    CHECK(tm_ws_new(&w, m, 3, 1, &e) == UM_OK);
    const int B = 3, T = 6;
    int32_t in[18], tgt[18];
    bool at[18];
    float wgt[3];
    ubatch(m, B, 4, in, tgt, at, wgt);
    double l0 = tm_step_at(m, w, NULL, in, tgt, at, wgt, B, T, (double)B, true, NULL);
    CHECK(l0 > 0);
    float *an = malloc((size_t)m->n_params * 4);
    memcpy(an, m->g, (size_t)m->n_params * 4);
    int checked = 0;
    for (int ti = 0; ti < m->n_tensors; ti++) {
        const tm_tensor *t = &m->t[ti];
        int64_t n = (int64_t)t->n_out * t->n_in;
        for (int k = 0; k < 4; k++) {
            int64_t i = t->off + (int64_t)((tm_rand(s) % (uint64_t)n));
            if (ti == 0) i = t->off + (int64_t)in[2 + k] * t->n_in + k;    /* embedding rows of input tokens */
            float p0 = m->p[i];
            m->p[i] = p0 + (float)h;
            double lp = tm_step_at(m, w, NULL, in, tgt, at, wgt, B, T, (double)B, false, NULL);
            m->p[i] = p0 - (float)h;
            double lm = tm_step_at(m, w, NULL, in, tgt, at, wgt, B, T, (double)B, false, NULL);
            m->p[i] = p0;
            double fd = (lp - lm) / (2 * h);
            CHECK_MSG(fabs(an[i] - fd) <= abs_tol + rel_tol * fabs(fd), "%s[%lld]: backward %.6g, finite difference %.6g",
                      t->name, (long long)(i - t->off), an[i], fd);
            checked++;
        }
    }
    CHECK_EQ(checked, 4 * m->n_tensors);
    free(an);
    tm_ws_free(w);
    tm_free(m);
}

TEST(train_uniform_export_keys) {
    char tok_path[] = "/tmp/um_train_utok_XXXXXX", path[] = "/tmp/um_train_ugguf_XXXXXX";
    int f1 = mkstemp(tok_path), f2 = mkstemp(path);
    CHECK(f1 >= 0 && f2 >= 0);
    close(f1); close(f2);
    bpe_vocab *v = NULL;
    um_err e = { "" };
    CHECK(bpe_chars(&v, "0123456789.\n", 12, &e) == UM_OK);
    gguf_writer *gw = gguf_writer_new();
    CHECK(bpe_write_kv(v, gw, &e) == UM_OK && gguf_writer_write(gw, tok_path, &e) == UM_OK);
    gguf_writer_free(gw);
    tm_config c = utiny;
    c.n_vocab = 14;
    c.mask_id = v->mask_id;
    bpe_free(v);
    tm_model *m;
    CHECK(tm_new(&m, &c, &e) == UM_OK);
    tm_init(m, 2);
    for (int uniform = 0; uniform <= 1; uniform++) {
        CHECK_MSG(tm_export_uniform(m, tok_path, "t", path, uniform ? 4 : 0, &e) == UM_OK, "%s", e.msg);
        gguf_file *g = NULL;
        CHECK(gguf_open(&g, path, &e) == UM_OK);
        const gguf_kv *u = gguf_find_kv(g, "unmask.uniform_state"), *cl = gguf_find_kv(g, "diffusion.canvas_length");
        if (uniform) {
            CHECK(u && u->type == GGUF_TYPE_BOOL && u->v.u == 1);
            CHECK(cl && cl->v.u == 4);
        } else {
            CHECK(!u && !cl);
        }
        CHECK(gguf_find_kv(g, "tokenizer.ggml.mask_token_id") != NULL);     /* llada still reads its mask */
        gguf_close(g);
    }
    tm_free(m);
    unlink(tok_path);
    unlink(path);
}
