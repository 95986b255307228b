/*
 * test_train: the demo-model trainer (tools/train). Its GEMM against the scalar reference;
 * the hand-written backward pass against finite differences; a short training run whose
 * loss falls; bit-exact checkpoint resume; the exported GGUF against the engine's forward
 * pass; and the BPE trainer's vocabulary read back by the engine's tokenizer, which must
 * segment text exactly as the trainer does and decode it back. Conditional (SFT) training:
 * answer-only masking, its loss and gradients, loading and refusing data files, the
 * character vocabulary (one token per cell in the engine's tokenizer) and a tiny run that
 * learns to answer.
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
#include "sft.h"

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

/* ------------------------------------------------------------------ GEMM edges */

TEST(train_gemm_edges_match_scalar_bits) {
    /* the AVX2 edge tiles do tile_scalar's multiply-then-add in the same k order: same bits.
     * Every shape here is narrower than the 32-column AVX2 tile, so tgemm_k's AVX2 path runs
     * edge tiles only, and its REF path tile_scalar, over the same blocks. */
    if (tgemm_best() == TGEMM_REF) { th_skip("no AVX2"); return; }
    static const int shapes[][3] = { { 1, 1, 1 }, { 3, 7, 5 }, { 4, 8, 9 }, { 7, 13, 31 }, { 163, 16, 163 }, { 2, 30, 64 } };
    for (size_t si = 0; si < UM_ARRAY_LEN(shapes); si++)
        for (int ta = 0; ta < 2; ta++)
            for (int acc = 0; acc < 2; acc++) {
                int M = shapes[si][0], N = shapes[si][1], K = shapes[si][2];
                float *A = malloc((size_t)M * K * 4), *B = malloc((size_t)K * N * 4);
                float *C = malloc((size_t)M * N * 4), *R = malloc((size_t)M * N * 4);
                fill(A, (size_t)M * K, 11); fill(B, (size_t)K * N, 12); fill(C, (size_t)M * N, 13);
                memcpy(R, C, (size_t)M * N * 4);
                tgemm_k(TGEMM_AVX2, NULL, M, N, K, A, ta ? M : K, ta, B, N, C, N, acc);
                tgemm_k(TGEMM_REF, NULL, M, N, K, A, ta ? M : K, ta, B, N, R, N, acc);
                CHECK_MSG(memcmp(C, R, (size_t)M * N * 4) == 0, "shape %dx%dx%d ta %d acc %d", M, N, K, ta, acc);
                free(A); free(B); free(C); free(R);
            }
}

/* ------------------------------------------------------------------ conditional (SFT) training */

/* sequences of tiny's shape: 2 prompt tokens (never the mask), 4 answer tokens */
static void sft_batch(const tm_model *m, int B, uint64_t seed, int32_t *in, int32_t *tgt, float *wgt) {
    uint64_t s[4];
    tm_rand_seed(s, seed);
    for (int b = 0; b < B; b++) {
        int32_t seq[6];
        for (int i = 0; i < 6; i++) seq[i] = (int32_t)(tm_rand(s) % 18);
        do wgt[b] = tm_mask_answer(m, seq, 6, 2, s, in + b * 6, tgt + b * 6);
        while (in[b * 6 + 2] != m->c.mask_id && in[b * 6 + 5] != m->c.mask_id);   /* some answer masked */
    }
}

TEST(train_sft_backward_matches_finite_differences) {
    /* the answer-only batch and SFT's normalisation (per-sequence 1/(t L), divided by B) through
     * the same FD check as the text objective (tolerances: see that test). This batch's loss
     * (5.3, weights up to 1.6) is more curved than that one: at h = 2e-3 one entry is 20% off,
     * at h = 1e-3 and 5e-4 all agree, so truncation and not the backward made the gap;
     * rounding at h = 1e-3 is still ~3e-4, under abs_tol */
    const double abs_tol = 2e-3, rel_tol = 2e-2, h = 1e-3;
    tm_model *m;
    um_err e = { "" };
    CHECK(tm_new(&m, &tiny, &e) == UM_OK);
    tm_init(m, 6);
    uint64_t s[4];
    tm_rand_seed(s, 10);
    for (int64_t i = 0; i < m->n_params; i++) m->p[i] = m->p[i] * 8.0f + (float)(tm_rand_unit(s) - 0.5) * 0.1f;
    tm_ws *w;
    CHECK(tm_ws_new(&w, m, 3, 1, &e) == UM_OK);
    const int B = 3, T = 6;
    int32_t in[18], tgt[18];
    float wgt[3];
    sft_batch(m, B, 4, in, tgt, wgt);
    int64_t nm = 0;
    double l0 = tm_step_norm(m, w, NULL, in, tgt, wgt, B, T, (double)B, true, &nm);
    CHECK(nm > 0 && l0 > 0);
    float *an = malloc((size_t)m->n_params * 4);
    memcpy(an, m->g, (size_t)m->n_params * 4);
    int checked = 0;
    for (int ti = 0; ti < m->n_tensors; ti++) {
        const tm_tensor *t = &m->t[ti];
        int64_t n = (int64_t)t->n_out * t->n_in;
        for (int k = 0; k < 4; k++) {
            int64_t i = t->off + (int64_t)((tm_rand(s) % (uint64_t)n));
            if (ti == 0) i = t->off + (int64_t)tgt[2 + k] * t->n_in + k;   /* embedding rows of answer tokens */
            float p0 = m->p[i];
            m->p[i] = p0 + (float)h;
            double lp = tm_step_norm(m, w, NULL, in, tgt, wgt, B, T, (double)B, false, NULL);
            m->p[i] = p0 - (float)h;
            double lm = tm_step_norm(m, w, NULL, in, tgt, wgt, B, T, (double)B, false, NULL);
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

TEST(train_sft_loss_is_weighted_answer_ce) {
    /* the loss from tm_step_norm against one computed here from tm_logits in double:
     * sum over masked answer positions of CE * wgt[b], divided by norm; prompt positions hold
     * the clean token, so they never count */
    tm_model *m;
    um_err e = { "" };
    CHECK(tm_new(&m, &tiny, &e) == UM_OK);
    tm_init(m, 7);
    for (int64_t i = 0; i < m->n_params; i++) m->p[i] *= 20.0f;
    tm_ws *w;
    CHECK(tm_ws_new(&w, m, 3, 1, &e) == UM_OK);
    const int B = 3, T = 6, V = tiny.n_vocab;
    int32_t in[18], tgt[18];
    float wgt[3], lg[6 * 19];
    sft_batch(m, B, 8, in, tgt, wgt);
    double want = 0;
    for (int b = 0; b < B; b++) {
        CHECK(in[b * T] == tgt[b * T] && in[b * T + 1] == tgt[b * T + 1]);
        tm_logits(m, w, NULL, in + b * T, T, lg);
        for (int i = 0; i < T; i++) {
            if (in[b * T + i] != tiny.mask_id) continue;
            double mx = -1e300, sum = 0;
            for (int k = 0; k < V; k++) mx = fmax(mx, lg[i * V + k]);
            for (int k = 0; k < V; k++) sum += exp(lg[i * V + k] - mx);
            want += (log(sum) + mx - lg[i * V + tgt[b * T + i]]) * wgt[b];
        }
    }
    want /= B;
    double got = tm_step_norm(m, w, NULL, in, tgt, wgt, B, T, (double)B, false, NULL);
    CHECK_MSG(fabs(got - want) <= 1e-4 * (1 + fabs(want)), "loss %.7g, expected %.7g", got, want);
    tm_ws_free(w);
    tm_free(m);
}

TEST(train_sft_masks_answers_only) {
    /* over many draws: the prompt is never masked; each draw masks answer tokens at its own rate
     * p = 1 / (wgt * L), p in (0, 1], and the masked fraction follows p (binomial: the mean of
     * (fraction - p) over 4000 draws of L = 100 is within 4 standard errors of 0) */
    tm_model *m;
    um_err e = { "" };
    tm_config c = tiny;
    c.n_ctx = 130;
    CHECK(tm_new(&m, &c, &e) == UM_OK);
    int32_t seq[130], in[130], tgt[130];
    for (int i = 0; i < 130; i++) seq[i] = i % 18;
    uint64_t s[4];
    tm_rand_seed(s, 21);
    const int P = 30, L = 100, n = 4000;
    double dev = 0, var = 0, p_lo = 1, p_hi = 0;
    for (int k = 0; k < n; k++) {
        float wg = tm_mask_answer(m, seq, 130, P, s, in, tgt);
        double p = 1.0 / ((double)wg * L);
        CHECK(p > 0 && p <= 1.0 + 1e-6);
        p_lo = fmin(p_lo, p); p_hi = fmax(p_hi, p);
        int masked = 0;
        for (int i = 0; i < 130; i++) {
            CHECK_EQ(tgt[i], seq[i]);
            if (i < P) CHECK_EQ(in[i], seq[i]);
            else if (in[i] == c.mask_id) masked++;
            else CHECK_EQ(in[i], seq[i]);
        }
        dev += (double)masked / L - p;
        var += p * (1 - p) / L;
    }
    CHECK_MSG(fabs(dev / n) < 4 * sqrt(var) / n, "masked fraction minus p: mean %.5f", dev / n);
    CHECK(p_lo < 0.05 && p_hi > 0.95);      /* t ~ U(0, 1) covers the range */
    tm_free(m);
}

/* the sudoku vocabulary, as `unmask-train chars` writes it, in memory */
typedef struct chars_tok {
    gguf_file *g;
    uint8_t   *buf;             /* the GGUF image g reads */
    tokenizer *tk;
} chars_tok;

static tokenizer *chars_open(chars_tok *c) {
    *c = (chars_tok){ 0 };
    bpe_vocab *v = NULL;
    um_err e = { "" };
    if (bpe_chars(&v, "0123456789.\n", 12, &e)) return NULL;
    gguf_writer *w = gguf_writer_new();
    gguf_set_str(w, "general.architecture", "llada");
    size_t size;
    if (bpe_write_kv(v, w, &e) == UM_OK && gguf_writer_write_mem(w, &c->buf, &size, &e) == UM_OK &&
        gguf_open_mem(&c->g, c->buf, size, &e) == UM_OK)
        tok_load(&c->tk, c->g, &e);
    gguf_writer_free(w);
    bpe_free(v);
    return c->tk;
}

static void chars_close(chars_tok *c) {
    tok_free(c->tk);
    gguf_close(c->g);
    free(c->buf);
}

TEST(train_chars_vocab_one_token_per_cell) {
    chars_tok ct;
    tokenizer *tk = chars_open(&ct);
    CHECK(tk != NULL);
    CHECK_EQ(tok_n_vocab(tk), 14);
    CHECK_EQ(tok_special(tk)->eos, 12);
    CHECK_EQ(tok_special(tk)->bos, 12);
    CHECK_EQ(tok_special(tk)->mask, 13);
    CHECK(tok_special(tk)->add_bos);
    CHECK(tok_is_eog(tk, 12));
    const gguf_kv *kv;
    um_err e = { "" };
    CHECK(gguf_get_arr(ct.g, "tokenizer.ggml.merges", GGUF_TYPE_STRING, &kv, &e) == UM_OK);  /* present, empty */
    CHECK_EQ(kv->arr_n, 0);
    const char *puzzle = "5493178.68...493..3...5.9147.6594.3........4..83.....11..98....29...61536..1.37.9";
    int32_t *ids;
    size_t n;
    CHECK(tok_encode(tk, puzzle, 81, 0, &ids, &n, &e) == UM_OK);
    CHECK_EQ(n, 81);
    for (int i = 0; i < 81; i++) CHECK_EQ(ids[i], puzzle[i] == '.' ? 10 : puzzle[i] - '0');
    char *back;
    size_t blen;
    CHECK(tok_decode(tk, ids, n, 0, &back, &blen, &e) == UM_OK);
    CHECK(blen == 81 && memcmp(back, puzzle, 81) == 0);
    free(back); free(ids);
    /* as a prompt: BOS first; a newline is a token; bytes outside the set are dropped */
    CHECK(tok_encode(tk, "12\n3x", 5, TOK_ADD_SPECIAL | TOK_PARSE_SPECIAL, &ids, &n, &e) == UM_OK);
    CHECK_EQ(n, 5);
    CHECK(ids[0] == 12 && ids[1] == 1 && ids[2] == 2 && ids[3] == 11 && ids[4] == 3);
    free(ids);
    /* the trainer's own encoder is for learnt vocabularies only */
    bpe_vocab *v = NULL;
    CHECK(bpe_chars(&v, "ab", 2, &e) == UM_OK);
    CHECK(bpe_encode(v, "ab", 2, &ids, &n, &e) == UM_FAIL);
    bpe_free(v);
    CHECK(bpe_chars(&v, "aba", 3, &e) == UM_FAIL && strstr(e.msg, "twice"));
    CHECK(bpe_chars(&v, "", 0, &e) == UM_FAIL);
    chars_close(&ct);
}

static char *write_temp(const char *text) {
    static char path[64];
    snprintf(path, sizeof path, "/tmp/um_train_sft_XXXXXX");
    int fd = mkstemp(path);
    if (fd < 0) return NULL;
    size_t n = strlen(text);
    ssize_t wr = write(fd, text, n);
    close(fd);
    return wr == (ssize_t)n ? path : NULL;
}

/* The files are read by tasks_load, as `unmask eval` reads its task files: the tests of the
 * JSON itself are in test_jsonr.c; these check what sft adds (tokens, padding, lengths) and
 * that every refusal is one line naming the file and line. */
TEST(train_sft_load) {
    chars_tok ct;
    tokenizer *tk = chars_open(&ct);
    CHECK(tk != NULL);
    um_err e = { "" };
    /* as sudoku-gen writes them (an extra field), blank lines, any member order, a number answer */
    char *path = write_temp("{\"prompt\": \"1.3\", \"answer\": \"123\", \"difficulty\": \"easy\"}\n\n  \r\n"
                            "{\"answer\": \"9\", \"prompt\": \"..\"}\n{\"prompt\": \"4\", \"answer\": 56}");
    CHECK(path != NULL);
    sft_set s;
    CHECK_MSG(sft_load(&s, tk, &path, 1, 0, 64, &e) == UM_OK, "%s", e.msg);
    CHECK(s.n == 3 && s.T == 7);    /* BOS + 3 + 3 */
    static const int32_t want[3][7] = { { 12, 1, 10, 3, 1, 2, 3 }, { 12, 10, 10, 9, 12, 12, 12 }, { 12, 4, 5, 6, 12, 12, 12 } };
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 7; j++) CHECK_EQ(s.seq[i * 7 + j], want[i][j]);
    CHECK(s.prompt_len[0] == 4 && s.prompt_len[1] == 3 && s.prompt_len[2] == 2);
    char where[80];
    snprintf(where, sizeof where, "%s:1", path);
    CHECK_STREQ(s.longest, where);
    sft_free(&s);
    CHECK(sft_load(&s, tk, &path, 1, 1, 64, &e) == UM_OK && s.n == 1);   /* max_examples */
    sft_free(&s);
    char *two[2] = { path, path };                                        /* files in order, lines counted per file */
    CHECK(sft_load(&s, tk, two, 2, 4, 64, &e) == UM_OK && s.n == 4 && s.seq[3 * 7 + 1] == 1);
    sft_free(&s);
    unlink(path);
    char *missing = "/nonexistent/um.jsonl";
    CHECK(sft_load(&s, tk, &missing, 1, 0, 64, &e) == UM_FAIL);
    CHECK_CONTAINS(e.msg, "/nonexistent/um.jsonl: ");
    chars_close(&ct);
}

TEST(train_sft_load_refuses) {
    chars_tok ct;
    tokenizer *tk = chars_open(&ct);
    CHECK(tk != NULL);
    static const struct { const char *text, *msg; int max_T; } bad[] = {
        { "{\"prompt\": \"1\", \"answer\": \"2\"}\nnot json\n", ":2: column 1: expected a JSON object", 64 },
        { "{\"prompt\": \"1\", \"answer\": \"2\"}\n\n{\"prompt\": \"1\"}\n", ":3: missing \"answer\"", 64 },
        { "{\"answer\": \"2\"}\n", ":1: missing \"prompt\"", 64 },
        { "{\"prompt\": 5, \"answer\": \"2\"}\n", ":1: \"prompt\" must be a string, got number", 64 },
        { "{\"prompt\": \"1\", \"answer\": [2]}\n", ":1: \"answer\" must be a string or a number, got array", 64 },
        { "{\"prompt\": \"1\", \"answer\": \"2\", \"prompt\": \"3\"}\n", ":1: column ", 64 },   /* a key twice */
        { "{\"prompt\": \"1\", \"answer\": \"2\"} x\n", ":1: column ", 64 },
        { "", ": no tasks", 64 },
        { "\n  \n", ": no tasks", 64 },
        { "{\"prompt\": \"1\", \"answer\": \"xyz\"}\n", ":1: empty answer", 64 },       /* no token survives */
        { "{\"prompt\": \"1\", \"answer\": \"2\"}\n{\"prompt\": \"123\", \"answer\": \"456\"}\n",
          ":2: prompt + answer is 7 tokens, more than the context of 6", 6 },
    };
    for (size_t i = 0; i < UM_ARRAY_LEN(bad); i++) {
        char *path = write_temp(bad[i].text);
        CHECK(path != NULL);
        um_err e = { "" };
        sft_set s;
        CHECK_MSG(sft_load(&s, tk, &path, 1, 0, bad[i].max_T, &e) == UM_FAIL, "accepted: %s", bad[i].text);
        char want[128];
        snprintf(want, sizeof want, "%s%s", path, bad[i].msg);
        CHECK_MSG(strncmp(e.msg, want, strlen(want)) == 0, "%s: message '%s', want '%s...'", bad[i].text, e.msg, want);
        CHECK(strchr(e.msg, '\n') == NULL);
        CHECK(s.n == 0 && s.seq == NULL && s.longest == NULL);
        unlink(path);
    }
    /* held-out sequences padded to another length than the training ones: the first longest
     * example of each set named */
    char train[64], held[64];
    snprintf(train, sizeof train, "%s", write_temp("{\"prompt\": \"1\", \"answer\": \"2\"}\n\n{\"prompt\": \"12\", \"answer\": \"3\"}\n"));
    snprintf(held, sizeof held, "%s", write_temp("{\"prompt\": \"1\", \"answer\": \"2\"}\n{\"prompt\": \"3\", \"answer\": \"4\"}\n"));
    char *tp = train, *hp = held;
    um_err e = { "" };
    sft_set tr, va, va2;
    CHECK(sft_load(&tr, tk, &tp, 1, 0, 64, &e) == UM_OK && tr.T == 4);
    CHECK(sft_load(&va, tk, &hp, 1, 0, 64, &e) == UM_OK && va.T == 3);
    CHECK(sft_same_length(&tr, &tr, &e) == UM_OK);
    CHECK(sft_same_length(&tr, &va, &e) == UM_FAIL);
    char want[256];
    snprintf(want, sizeof want, "%s:1: the longest held-out example is 3 tokens, the longest training one 4 (%s:3)", held, train);
    CHECK_MSG(strncmp(e.msg, want, strlen(want)) == 0, "message '%s'", e.msg);
    CHECK(sft_load(&va2, tk, &tp, 1, 1, 64, &e) == UM_OK && va2.T == 3);   /* the same file cut: shorter too */
    CHECK(sft_same_length(&va2, &tr, &e) == UM_FAIL && strstr(e.msg, "held-out example is 4 tokens, the longest training one 3"));
    sft_free(&tr); sft_free(&va); sft_free(&va2);
    unlink(train); unlink(held);
    chars_close(&ct);
}

TEST(train_sft_learns_to_answer) {
    /* answer = the prompt's 4 digits each plus one (mod 10): a conditional task with no
     * answer-side shortcut. Before training greedy solving is near chance (1/13 per cell);
     * after 300 steps nearly every cell is right */
    chars_tok ct;
    tokenizer *tk = chars_open(&ct);
    CHECK(tk != NULL);
    sft_set s = { 0 };
    const int N = 400, T = 9;       /* BOS, 4 prompt digits, 4 answer digits */
    s.n = N; s.T = T;
    s.seq = malloc((size_t)N * T * sizeof *s.seq);
    s.prompt_len = malloc((size_t)N * sizeof *s.prompt_len);
    uint64_t r[4];
    tm_rand_seed(r, 31);
    for (int i = 0; i < N; i++) {
        int32_t *q = s.seq + i * T;
        q[0] = 12;
        for (int k = 0; k < 4; k++) { q[1 + k] = (int32_t)(tm_rand(r) % 10); q[5 + k] = (q[1 + k] + 1) % 10; }
        s.prompt_len[i] = 5;
    }
    tm_config c = { .n_vocab = 14, .n_embd = 32, .n_layer = 2, .n_head = 2, .n_ff = 64, .n_ctx = T,
                    .mask_id = 13, .rope_base = 10000.0f, .norm_eps = 1e-5f };
    tm_model *m;
    tm_ws *w;
    um_err e = { "" };
    CHECK(tm_new(&m, &c, &e) == UM_OK);
    tm_init(m, 3);
    const int B = 8;
    CHECK(tm_ws_new(&w, m, B, 1, &e) == UM_OK);
    int32_t in[8 * 9], tgt[8 * 9];
    float wgt[8], *logits = malloc(sizeof(float) * B * T * 14);
    sft_eval before = { 0 }, after = { 0 };
    sft_solve(m, w, NULL, &s, N - 64, 64, B, in, logits, &before);
    CHECK_EQ(before.puzzles, 64);
    CHECK_EQ(before.cells, 64 * 4);
    tm_adam a = { .lr = 1e-2f, .beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f, .weight_decay = 0.0f, .clip = 1.0f };
    for (int step = 0; step < 300; step++) {
        for (int b = 0; b < B; b++) {
            int k = (int)(tm_rand(r) % (N - 64));          /* the last 64 are held out */
            wgt[b] = tm_mask_answer(m, s.seq + k * T, T, s.prompt_len[k], r, in + b * T, tgt + b * T);
        }
        tm_step_norm(m, w, NULL, in, tgt, wgt, B, T, (double)B, true, NULL);
        a.lr = tm_lr_at(step, 10, 300, 1e-2f, 1e-3f);
        tm_adam_update(m, &a, step + 1);
    }
    sft_solve(m, w, NULL, &s, N - 64, 64, B, in, logits, &after);
    sft_heldout(m, w, NULL, &s, N, B, 0.5, 7, in, logits, &after);
    double acc0 = (double)before.cells_right / before.cells, acc1 = (double)after.cells_right / after.cells;
    CHECK_MSG(acc0 < 0.3, "untrained cell accuracy %.3f", acc0);
    CHECK_MSG(acc1 > 0.9 && after.solved > 48, "cell accuracy %.3f -> %.3f, %d/64 solved", acc0, acc1, after.solved);
    CHECK_MSG(after.acc > 0.9 && after.loss < 0.5, "held-out accuracy %.3f loss %.3f", after.acc, after.loss);
    free(logits);
    sft_free(&s);
    tm_ws_free(w);
    tm_free(m);
    chars_close(&ct);
}
