/*
 * test_train: the demo-model trainer (tools/train). Its GEMM against the scalar reference;
 * the hand-written backward pass against finite differences; a short training run whose
 * loss falls; bit-exact checkpoint resume; the exported GGUF against the engine's forward
 * pass; and the BPE trainer's vocabulary read back by the engine's tokenizer, which must
 * segment text exactly as the trainer does and decode it back.
 *
 * The trainer's objects (tools/train, all but its main) are linked into the unit tests.
 */
#include "harness.h"
#include "infile.h"

#include <stdlib.h>
#include <unistd.h>

#include "bpe.h"
#include "tgemm.h"
#include "tmodel.h"

#include "forward.h"
#include "model.h"
#include "quant.h"
#include "tokenizer.h"

/* tiny shape: every code path (several heads, layers, ragged GEMM edges) at FD-friendly size */
static const tm_config tiny = { .n_vocab = 19, .n_embd = 8, .n_layer = 2, .n_head = 2, .n_ff = 12, .n_ctx = 6,
                                .mask_id = 18, .rope_base = 10000.0f, .norm_eps = 1e-5f };

static void fill(float *x, size_t n, uint64_t seed) {
    uint64_t s[4];
    tm_rand_seed(s, seed);
    for (size_t i = 0; i < n; i++) x[i] = (float)(tm_rand_unit(s) * 2.0 - 1.0);
}

TEST(train_gemm_matches_reference) {
    /* f32 FMA vs double accumulation: K <= 300 products of |x| <= 1 stay within 1e-4 relative */
    const double tol = 1e-4;
    static const int shapes[][3] = { { 1, 1, 1 }, { 5, 70, 3 }, { 37, 300, 129 }, { 64, 64, 64 }, { 8, 33, 300 } };
    for (size_t si = 0; si < UM_ARRAY_LEN(shapes); si++)
        for (int ta = 0; ta < 2; ta++)
            for (int acc = 0; acc < 2; acc++) {
                int M = shapes[si][0], N = shapes[si][1], K = shapes[si][2];
                float *A = malloc((size_t)M * K * 4), *B = malloc((size_t)K * N * 4);
                float *C = malloc((size_t)M * N * 4), *R = malloc((size_t)M * N * 4);
                fill(A, (size_t)M * K, 1); fill(B, (size_t)K * N, 2); fill(C, (size_t)M * N, 3);
                memcpy(R, C, (size_t)M * N * 4);
                tgemm_ref(M, N, K, A, ta ? M : K, ta, B, N, R, N, acc);
                for (int kern = TGEMM_REF; kern <= (int)tgemm_best(); kern++) {
                    fill(C, (size_t)M * N, 3);
                    tgemm_k((tgemm_kernel)kern, NULL, M, N, K, A, ta ? M : K, ta, B, N, C, N, acc);
                    for (int i = 0; i < M * N; i++)
                        CHECK_MSG(fabsf(C[i] - R[i]) <= tol * (1 + fabsf(R[i])),
                                  "kernel %d shape %dx%dx%d ta %d acc %d elem %d: %g vs %g", kern, M, N, K, ta, acc, i, C[i], R[i]);
                }
                free(A); free(B); free(C); free(R);
            }
}

static void tiny_batch(int B, int T, uint64_t seed, int32_t *in, int32_t *tgt, float *inv) {
    uint64_t s[4];
    tm_rand_seed(s, seed);
    for (int b = 0; b < B; b++) {
        inv[b] = 1.0f / (0.3f + 0.2f * b);
        for (int i = 0; i < T; i++) {
            tgt[b * T + i] = (int32_t)(tm_rand(s) % 18);
            in[b * T + i] = (i + b) % 3 ? 18 : tgt[b * T + i];
        }
    }
}

TEST(train_backward_matches_finite_differences) {
    /* central differences in float32: with h = 2e-3 the truncation error (softmax and SiLU
     * curvature) is ~1% and rounding (1e-7 of a loss of ~3, over 2h) ~1e-4 absolute; measured
     * worst case here is under half the limit, while h = 3e-2 already breaks it, so a wrong
     * term (a few % or more of a gradient) cannot hide */
    const double abs_tol = 2e-3, rel_tol = 2e-2, h = 2e-3;
    tm_model *m;
    um_err e = { "" };
    CHECK(tm_new(&m, &tiny, &e) == UM_OK);
    tm_init(m, 5);
    /* larger weights than the 0.02 init so every path carries signal */
    uint64_t s[4];
    tm_rand_seed(s, 9);
    for (int64_t i = 0; i < m->n_params; i++) m->p[i] = m->p[i] * 8.0f + (float)(tm_rand_unit(s) - 0.5) * 0.1f;
    tm_ws *w;
    CHECK(tm_ws_new(&w, m, 2, 1, &e) == UM_OK);
    const int B = 2, T = 6;
    int32_t in[12], tgt[12];
    float inv[2];
    tiny_batch(B, T, 3, in, tgt, inv);
    tm_step(m, w, NULL, in, tgt, inv, B, T, true, NULL);
    float *an = malloc((size_t)m->n_params * 4);
    memcpy(an, m->g, (size_t)m->n_params * 4);
    int checked = 0;
    for (int ti = 0; ti < m->n_tensors; ti++) {
        const tm_tensor *t = &m->t[ti];
        int64_t n = (int64_t)t->n_out * t->n_in;
        for (int k = 0; k < 4; k++) {
            int64_t i = t->off + (int64_t)((tm_rand(s) % (uint64_t)n));
            if (ti == 0) i = t->off + (int64_t)tgt[k] * t->n_in + k;   /* embedding rows in use */
            float p0 = m->p[i];
            m->p[i] = p0 + (float)h;
            double lp = tm_step(m, w, NULL, in, tgt, inv, B, T, false, NULL);
            m->p[i] = p0 - (float)h;
            double lm = tm_step(m, w, NULL, in, tgt, inv, B, T, false, NULL);
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

static char *slice(const char *path, size_t off, size_t n) {
    char *all;
    size_t len;
    um_err e;
    if (infile_read(path, (size_t)1 << 30, &all, &len, &e)) return NULL;
    if (off > len) off = len;
    if (n > len - off) n = len - off;
    char *s = malloc(n + 1);
    memcpy(s, all + off, n);
    s[n] = 0;
    free(all);
    return s;
}

TEST(train_bpe_engine_agrees) {
    char *train = slice("data/corpus/grimms_fairy_tales.txt", 0, 60000);
    char *unseen = slice("data/corpus/tiny_shakespeare.txt", 200000, 20000);
    CHECK(train && unseen);
    const char *texts[1] = { train };
    size_t lens[1] = { strlen(train) };
    bpe_vocab *v = NULL;
    um_err e = { "" };
    CHECK_MSG(bpe_train(&v, texts, lens, 1, 600, &e) == UM_OK, "%s", e.msg);
    CHECK_EQ(v->n_vocab, 600);
    CHECK_EQ(v->eos_id, 598);
    CHECK_EQ(v->mask_id, 599);
    gguf_writer *w = gguf_writer_new();
    gguf_set_str(w, "general.architecture", "llada");
    CHECK(bpe_write_kv(v, w, &e) == UM_OK);
    uint8_t *buf;
    size_t size;
    CHECK(gguf_writer_write_mem(w, &buf, &size, &e) == UM_OK);
    gguf_writer_free(w);
    gguf_file *g;
    CHECK_MSG(gguf_open_mem(&g, buf, size, &e) == UM_OK, "%s", e.msg);
    tokenizer *tk;
    CHECK_MSG(tok_load(&tk, g, &e) == UM_OK, "%s", e.msg);
    CHECK_EQ(tok_n_vocab(tk), 600);
    CHECK_EQ(tok_special(tk)->mask, 599);
    CHECK_EQ(tok_special(tk)->eos, 598);
    const char *samples[] = { train, unseen, "Once upon a time, a king's daughter said: \"Hello!\"\n\n  x\t1234 caf\xc3\xa9 \xff" };
    for (size_t si = 0; si < UM_ARRAY_LEN(samples); si++) {
        const char *s = samples[si];
        size_t n = strlen(s), n_eng, n_own;
        int32_t *eng, *own;
        CHECK(tok_encode(tk, s, n, 0, &eng, &n_eng, &e) == UM_OK);
        CHECK(bpe_encode(v, s, n, &own, &n_own, &e) == UM_OK);
        CHECK_EQ(n_eng, n_own);
        for (size_t i = 0; i < n_eng; i++) CHECK_MSG(eng[i] == own[i], "sample %zu token %zu: engine %d, trainer %d", si, i, eng[i], own[i]);
        if (si == 0) CHECK_MSG(n_eng * 2 < n, "merges should shorten text: %zu tokens for %zu bytes", n_eng, n);
        char *back;
        size_t blen;
        CHECK(tok_decode(tk, eng, n_eng, 0, &back, &blen, &e) == UM_OK);
        CHECK_EQ(blen, n);
        CHECK(memcmp(back, s, n) == 0);
        free(back); free(eng); free(own);
    }
    tok_free(tk);
    gguf_close(g);
    free(buf);
    bpe_free(v);
    free(train); free(unseen);
}

TEST(train_bpe_rejects_bad_sizes) {
    const char *texts[1] = { "ab ab ab" };
    size_t lens[1] = { 8 };
    bpe_vocab *v = NULL;
    um_err e = { "" };
    CHECK(bpe_train(&v, texts, lens, 1, 100, &e) == UM_FAIL);
    CHECK(strstr(e.msg, "vocabulary") != NULL);
    /* a text with too few distinct pairs cannot fill 300 tokens */
    CHECK(bpe_train(&v, texts, lens, 1, 300, &e) == UM_FAIL);
    CHECK(strstr(e.msg, "fewer") != NULL);
    CHECK(v == NULL);
}

/* ------------------------------------------------------------------ training runs */

/* data for tiny: a repeating 17-token cycle with an occasional skip, so context predicts tokens */
static int32_t *pattern_data(size_t n) {
    int32_t *d = malloc(n * sizeof *d);
    for (size_t i = 0; i < n; i++) d[i] = (int32_t)((i * 5 + i / 23) % 17);
    return d;
}

#ifndef NSTEPS
#define NSTEPS 400   /* about 1 s; the loss falls from 2.35 to 1.57 */
#endif
static void train_steps(tm_model *m, tm_ws *w, um_pool *p, const int32_t *data, size_t n, uint64_t rng[4],
                        int64_t from, int64_t to, int64_t total) {
    int32_t in[4 * 6], tgt[4 * 6];
    float inv[4];
    tm_adam a = { .lr = 1e-2f, .beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f, .weight_decay = 0.1f, .clip = 1.0f };
    for (int64_t s = from; s < to; s++) {
        tm_draw_batch(m, data, n, 4, 6, rng, in, tgt, inv);
        tm_step(m, w, p, in, tgt, inv, 4, 6, true, NULL);
        a.lr = tm_lr_at(s, 5, total, 1e-2f, 1e-3f);
        tm_adam_update(m, &a, s + 1);
    }
}

static double fixed_loss(tm_model *m, tm_ws *w, const int32_t *data) {
    int32_t in[4 * 6], tgt[4 * 6];
    float inv[4];
    uint64_t s[4];
    tm_rand_seed(s, 77);
    double l = 0;
    for (int k = 0; k < 8; k++) {
        tm_draw_batch(m, data, 1000, 4, 6, s, in, tgt, inv);
        l += tm_step(m, w, NULL, in, tgt, inv, 4, 6, false, NULL);
    }
    return l / 8;
}

TEST(train_loss_decreases) {
    tm_model *m;
    tm_ws *w;
    um_err e = { "" };
    tm_config c = tiny;
    c.n_embd = 32;
    c.n_ff = 64;
    CHECK(tm_new(&m, &c, &e) == UM_OK);
    tm_init(m, 1);
    CHECK(tm_ws_new(&w, m, 4, 2, &e) == UM_OK);
    um_pool *p = pool_new(2);
    int32_t *data = pattern_data(1000);
    uint64_t rng[4];
    tm_rand_seed(rng, 3);
    double before = fixed_loss(m, w, data);
    /* an untrained model is near uniform: ln(19) = 2.94 nats per masked token (L weighs by 1/t
     * and divides by all tokens, so about the same) */
    CHECK(before > 2.0);
    train_steps(m, w, p, data, 1000, rng, 0, NSTEPS, NSTEPS);
    double after = fixed_loss(m, w, data);
    CHECK_MSG(after < 0.8 * before, "loss %.4f -> %.4f after %d steps", before, after, NSTEPS);
    free(data);
    pool_free(p);
    tm_ws_free(w);
    tm_free(m);
}

TEST(train_checkpoint_resume_is_bit_exact) {
    tm_model *a, *b;
    tm_ws *w;
    um_err e = { "" };
    CHECK(tm_new(&a, &tiny, &e) == UM_OK);
    tm_init(a, 2);
    CHECK(tm_ws_new(&w, a, 4, 2, &e) == UM_OK);
    um_pool *p = pool_new(2);
    int32_t *data = pattern_data(1000);
    char path[] = "/tmp/um_train_ckpt_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    close(fd);
    uint64_t ra[4], rb[4];
    tm_rand_seed(ra, 5);
    train_steps(a, w, p, data, 1000, ra, 0, 4, 10);
    CHECK(tm_save(a, 4, ra, path, &e) == UM_OK);
    train_steps(a, w, p, data, 1000, ra, 4, 10, 10);           /* uninterrupted */
    int64_t step;
    CHECK_MSG(tm_load(&b, &step, rb, path, &e) == UM_OK, "%s", e.msg);
    unlink(path);
    CHECK_EQ(step, 4);
    um_pool *p1 = pool_new(1);                                  /* another thread count, same bits */
    train_steps(b, w, p1, data, 1000, rb, 4, 10, 10);
    CHECK(memcmp(ra, rb, sizeof ra) == 0);
    CHECK(memcmp(a->p, b->p, (size_t)a->n_params * 4) == 0);
    CHECK(memcmp(a->m, b->m, (size_t)a->n_params * 4) == 0);
    CHECK(memcmp(a->v, b->v, (size_t)a->n_params * 4) == 0);
    /* a damaged checkpoint is refused with a message */
    FILE *f = fopen(path, "wb");
    fputs("UMTRAIN1 short", f);
    fclose(f);
    tm_model *bad = NULL;
    CHECK(tm_load(&bad, &step, rb, path, &e) == UM_FAIL);
    CHECK(bad == NULL);
    unlink(path);
    free(data);
    pool_free(p); pool_free(p1);
    tm_ws_free(w);
    tm_free(a);
    tm_free(b);
}

static double cosine(const float *a, const float *b, int n) {
    double ab = 0, aa = 0, bb = 0;
    for (int i = 0; i < n; i++) { ab += (double)a[i] * b[i]; aa += (double)a[i] * a[i]; bb += (double)b[i] * b[i]; }
    return ab / sqrt(aa * bb + 1e-300);
}

TEST(train_export_matches_engine_forward) {
    /* a BPE vocabulary of 270 and a random model written as llada GGUF; the engine's reference
     * forward on the file must give the logits the trainer computes from the same (F16-rounded)
     * weights: same layout, RoPE convention, norms and tied output */
    char tok_path[] = "/tmp/um_train_tok_XXXXXX", model_path[] = "/tmp/um_train_gguf_XXXXXX";
    int f1 = mkstemp(tok_path), f2 = mkstemp(model_path);
    CHECK(f1 >= 0 && f2 >= 0);
    close(f1); close(f2);
    const char *texts[1] = { "the cat sat on the mat and the dog sat on the log; the cat and the dog ran. "
                             "a b c d e f g h i j k l m n o p q r s t u v w x y z 0 1 2 3 4 5 6 7 8 9 "
                             "THE END, said the cat to the dog, and the dog said: the end." };
    size_t lens[1] = { strlen(texts[0]) };
    bpe_vocab *v = NULL;
    um_err e = { "" };
    CHECK_MSG(bpe_train(&v, texts, lens, 1, 270, &e) == UM_OK, "%s", e.msg);
    gguf_writer *gw = gguf_writer_new();
    CHECK(bpe_write_kv(v, gw, &e) == UM_OK && gguf_writer_write(gw, tok_path, &e) == UM_OK);
    gguf_writer_free(gw);
    tm_config c = { .n_vocab = 270, .n_embd = 64, .n_layer = 2, .n_head = 2, .n_ff = 96, .n_ctx = 32,
                    .mask_id = v->mask_id, .rope_base = 10000.0f, .norm_eps = 1e-5f };
    tm_model *m, *back;
    CHECK(tm_new(&m, &c, &e) == UM_OK);
    tm_init(m, 4);
    for (int64_t i = 0; i < m->n_params; i++) m->p[i] *= 10.0f;     /* peaked logits */
    CHECK_MSG(tm_export(m, tok_path, "test", model_path, &e) == UM_OK, "%s", e.msg);
    CHECK_MSG(tm_import(&back, model_path, &e) == UM_OK, "%s", e.msg);
    um_model *em = NULL;
    CHECK_MSG(model_open(&em, model_path, &e) == UM_OK, "%s", e.msg);
    const int T = 32, V = 270;
    int32_t tok[32], rows[32];
    for (int i = 0; i < T; i++) { tok[i] = i % 5 == 3 ? v->mask_id : (i * 37 + 11) % 268; rows[i] = i; }
    um_forward *ref = NULL;
    um_forward_opts ro = { .max_tokens = T, .reference = true };
    float *le = malloc(sizeof(float) * T * V), *lt = malloc(sizeof(float) * T * V);
    CHECK_MSG(forward_new(&ref, em, NULL, &ro, &e) == UM_OK && forward_run(ref, tok, T, rows, T, le, &e) == UM_OK,
              "%s", e.msg);
    tm_ws *w;
    CHECK(tm_ws_new(&w, back, 1, 1, &e) == UM_OK);
    tm_logits(back, w, NULL, tok, T, lt);
    /* float32 (trainer) vs double-accumulated reference: same weights, so only rounding differs */
    for (int r = 0; r < T; r++) {
        double cs = cosine(le + r * V, lt + r * V, V);
        CHECK_MSG(cs > 0.99999, "row %d: cosine %.7f", r, cs);
        for (int i = 0; i < V; i++)
            CHECK_MSG(fabsf(le[r * V + i] - lt[r * V + i]) <= 1e-3f * (1 + fabsf(le[r * V + i])),
                      "row %d logit %d: engine %g trainer %g", r, i, le[r * V + i], lt[r * V + i]);
    }
    /* the tied output: no output.weight in the file */
    gguf_file *g;
    CHECK(gguf_open(&g, model_path, &e) == UM_OK);
    CHECK(gguf_find_tensor(g, "output.weight") == NULL);
    CHECK(gguf_find_tensor(g, "token_embd.weight")->type == UM_TYPE_F16);
    CHECK(gguf_find_tensor(g, "blk.1.ffn_norm.weight")->type == UM_TYPE_F32);
    gguf_close(g);
    free(le); free(lt);
    tm_ws_free(w);
    forward_free(ref);
    model_close(em);
    tm_free(m); tm_free(back);
    bpe_free(v);
    unlink(tok_path); unlink(model_path);
}
