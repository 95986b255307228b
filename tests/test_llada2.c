/*
 * test_llada2: the llada2 architecture (LLaDA 2.x, the BailingMoeV2 layout) against an
 * independent float64 forward pass written here from the model's published definition
 * (modeling_llada2_moe.py of inclusionAI/LLaDA2.0-mini and llama.cpp's bailingmoe2 graph), on
 * tiny-llada2 random weights read straight from the GGUF file (nothing of model.c or forward.c
 * is used by that reference); plus hand-checked small cases: group-limited routing, partial
 * rotary, the block-causal mask, and partial (cached) passes that must equal full passes.
 *
 * The reference, per layer (B = block length, blocks counted from position 0):
 *   xn = rmsnorm(x) * attn_norm ; [q; k; v] = xn Wqkv^T (rows Q, then K, then V)
 *   q, k per head: rmsnorm * q_norm / k_norm, then NeoX RoPE on the first n_rot dims only
 *   query i attends keys j with j / B <= i / B (softmax, scale 1/sqrt(head_dim), GQA)
 *   x += att Wo^T ; xn = rmsnorm(x) * ffn_norm
 *   dense layer (il < leading_dense_block_count): x += Wd (silu(Wg xn) * (Wu xn))
 *   MoE layer: p = sigmoid(Wr xn), key = p + exp_probs_b; groups of n_expert/n_group experts
 *     score the sum of their two best keys; the n_group_used best groups offer experts; the k
 *     best keys among those are chosen; w = p / sum(p chosen) * expert_weights_scale;
 *     x += sum w_e expert_e(xn) + shared(xn)
 *   logits = rmsnorm(x) * output_norm W_out^T
 */
#include <math.h>
#include <stdlib.h>
#include <unistd.h>

#include "forward.h"
#include "gguf.h"
#include "harness.h"
#include "model.h"
#include "ops.h"
#include "pool.h"
#include "quant.h"
#include "synth.h"

/* ------------------------------------------------------------------ float64 reference */

typedef struct ref_model {
    const gguf_file *g;
    int E, L, H, HKV, HD, NROT, V, FF, X, K, FX, FS, NG, NGU, DENSE, B;
    double eps, base, scale;
} ref_model;

static uint32_t key_u32(const gguf_file *g, const char *k) {
    uint32_t v = 0;
    um_err e;
    if (gguf_get_u32(g, k, &v, &e)) return 0;
    return v;
}

static double key_f32(const gguf_file *g, const char *k) {
    float v = 0;
    um_err e;
    if (gguf_get_f32(g, k, &v, &e)) return 0;
    return v;
}

/* A tensor dequantized to doubles, row-major as stored (ne0 fastest); NULL if absent. */
static double *tensor_d(const gguf_file *g, const char *name, int64_t *n_out) {
    const gguf_tensor *t = gguf_find_tensor(g, name);
    if (!t) return NULL;
    int64_t n = (int64_t)t->n_elements;
    float *f = malloc(sizeof(float) * (size_t)n);
    double *d = malloc(sizeof(double) * (size_t)n);
    um_traits(t->type)->to_float_ref(t->data, f, n);
    for (int64_t i = 0; i < n; i++) d[i] = f[i];
    free(f);
    if (n_out) *n_out = n;
    return d;
}

static double *layer_t(const ref_model *r, int il, const char *suffix) {
    char n[128];
    snprintf(n, sizeof n, "blk.%d.%s", il, suffix);
    return tensor_d(r->g, n, NULL);
}

/* y (n_out) = W (n_out rows of n_in) x */
static void matvec(double *y, const double *W, const double *x, int n_in, int n_out) {
    for (int o = 0; o < n_out; o++) {
        double s = 0;
        for (int i = 0; i < n_in; i++) s += W[(int64_t)o * n_in + i] * x[i];
        y[o] = s;
    }
}

static void rmsnorm_d(double *y, const double *x, const double *w, int n, double eps) {
    double ss = 0;
    for (int i = 0; i < n; i++) ss += x[i] * x[i];
    double inv = 1.0 / sqrt(ss / n + eps);
    for (int i = 0; i < n; i++) y[i] = x[i] * inv * w[i];
}

/* NeoX rotation of the first n_rot dims: pairs (i, i + n_rot/2), angle pos * base^(-2i/n_rot) */
static void rope_d(double *v, int pos, int n_rot, double base) {
    int half = n_rot / 2;
    for (int i = 0; i < half; i++) {
        double th = pos * pow(base, -2.0 * i / n_rot), c = cos(th), s = sin(th);
        double a = v[i], b = v[i + half];
        v[i] = a * c - b * s;
        v[i + half] = a * s + b * c;
    }
}

static double silu(double x) { return x / (1.0 + exp(-x)); }

/* y += Wd (silu(Wg x) * (Wu x)) with width F */
static void swiglu_ffn(double *y, const double *Wg, const double *Wu, const double *Wd, const double *x, int E, int F,
                       double wt) {
    double *a = malloc(sizeof(double) * F), *b = malloc(sizeof(double) * F), *o = malloc(sizeof(double) * E);
    matvec(a, Wg, x, E, F);
    matvec(b, Wu, x, E, F);
    for (int i = 0; i < F; i++) a[i] = silu(a[i]) * b[i];
    matvec(o, Wd, a, F, E);
    for (int i = 0; i < E; i++) y[i] += wt * o[i];
    free(a); free(b); free(o);
}

/* logits (T, V) of the canvas tokens[0..T) */
static void ref_forward(const ref_model *r, const int32_t *tok, int T, double *logits) {
    const int E = r->E, HD = r->HD, NQ = r->H * HD, NKV = r->HKV * HD;
    double *x = calloc((size_t)T * E, sizeof(double)), *xn = malloc(sizeof(double) * E);
    double *q = malloc(sizeof(double) * (size_t)T * NQ), *k = malloc(sizeof(double) * (size_t)T * NKV);
    double *v = malloc(sizeof(double) * (size_t)T * NKV), *qkv = malloc(sizeof(double) * (NQ + 2 * NKV));
    double *att = malloc(sizeof(double) * NQ), *o = malloc(sizeof(double) * E), *sc = malloc(sizeof(double) * T);
    double *emb = tensor_d(r->g, "token_embd.weight", NULL);
    for (int t = 0; t < T; t++) memcpy(x + (int64_t)t * E, emb + (int64_t)tok[t] * E, sizeof(double) * E);
    free(emb);
    for (int il = 0; il < r->L; il++) {
        double *an = layer_t(r, il, "attn_norm.weight"), *wqkv = layer_t(r, il, "attn_qkv.weight");
        double *qn = layer_t(r, il, "attn_q_norm.weight"), *kn = layer_t(r, il, "attn_k_norm.weight");
        double *wo = layer_t(r, il, "attn_output.weight"), *fn = layer_t(r, il, "ffn_norm.weight");
        for (int t = 0; t < T; t++) {
            rmsnorm_d(xn, x + (int64_t)t * E, an, E, r->eps);
            matvec(qkv, wqkv, xn, E, NQ + 2 * NKV);
            for (int h = 0; h < r->H; h++) {
                double *qh = q + (int64_t)t * NQ + h * HD;
                rmsnorm_d(qh, qkv + h * HD, qn, HD, r->eps);
                rope_d(qh, t, r->NROT, r->base);
            }
            for (int h = 0; h < r->HKV; h++) {
                double *kh = k + (int64_t)t * NKV + h * HD;
                rmsnorm_d(kh, qkv + NQ + h * HD, kn, HD, r->eps);
                rope_d(kh, t, r->NROT, r->base);
                memcpy(v + (int64_t)t * NKV + h * HD, qkv + NQ + NKV + h * HD, sizeof(double) * HD);
            }
        }
        /* attention, block-causal, then the output projection and residual (all rows read the
         * pre-attention state through q, k, v only, so updating x row by row is safe) */
        for (int t = 0; t < T; t++) {
            int n_keys = (t / r->B + 1) * r->B;
            if (n_keys > T) n_keys = T;
            for (int h = 0; h < r->H; h++) {
                int g = h / (r->H / r->HKV);
                const double *qh = q + (int64_t)t * NQ + h * HD;
                double mx = -INFINITY, sum = 0;
                for (int j = 0; j < n_keys; j++) {
                    double s = 0;
                    for (int d = 0; d < HD; d++) s += qh[d] * k[(int64_t)j * NKV + g * HD + d];
                    sc[j] = s / sqrt((double)HD);
                    if (sc[j] > mx) mx = sc[j];
                }
                for (int j = 0; j < n_keys; j++) { sc[j] = exp(sc[j] - mx); sum += sc[j]; }
                for (int d = 0; d < HD; d++) {
                    double a = 0;
                    for (int j = 0; j < n_keys; j++) a += sc[j] * v[(int64_t)j * NKV + g * HD + d];
                    att[h * HD + d] = a / sum;
                }
            }
            matvec(o, wo, att, NQ, E);
            for (int i = 0; i < E; i++) x[(int64_t)t * E + i] += o[i];
        }
        /* feed-forward */
        if (il < r->DENSE) {
            double *wg = layer_t(r, il, "ffn_gate.weight"), *wu = layer_t(r, il, "ffn_up.weight");
            double *wd = layer_t(r, il, "ffn_down.weight");
            for (int t = 0; t < T; t++) {
                rmsnorm_d(xn, x + (int64_t)t * E, fn, E, r->eps);
                swiglu_ffn(x + (int64_t)t * E, wg, wu, wd, xn, E, r->FF, 1.0);
            }
            free(wg); free(wu); free(wd);
        } else {
            double *wr = layer_t(r, il, "ffn_gate_inp.weight"), *bias = layer_t(r, il, "exp_probs_b.bias");
            double *ge = layer_t(r, il, "ffn_gate_exps.weight"), *ue = layer_t(r, il, "ffn_up_exps.weight");
            double *de = layer_t(r, il, "ffn_down_exps.weight");
            double *gs = layer_t(r, il, "ffn_gate_shexp.weight"), *us = layer_t(r, il, "ffn_up_shexp.weight");
            double *ds = layer_t(r, il, "ffn_down_shexp.weight");
            double *p = malloc(sizeof(double) * r->X), *key = malloc(sizeof(double) * r->X);
            const int per = r->X / r->NG;
            const int64_t ex_in = (int64_t)r->FX * E;      /* one expert's gate/up (FX, E), down (E, FX) */
            for (int t = 0; t < T; t++) {
                rmsnorm_d(xn, x + (int64_t)t * E, fn, E, r->eps);
                matvec(p, wr, xn, E, r->X);
                for (int e = 0; e < r->X; e++) { p[e] = 1.0 / (1.0 + exp(-p[e])); key[e] = p[e] + bias[e]; }
                /* groups: score = sum of the two best keys; keep the NGU best */
                int on[64] = { 0 };
                double gsc[64];
                for (int gi = 0; gi < r->NG; gi++) {
                    double b1 = -INFINITY, b2 = -INFINITY;
                    for (int e = gi * per; e < (gi + 1) * per; e++) {
                        if (key[e] > b1) { b2 = b1; b1 = key[e]; } else if (key[e] > b2) b2 = key[e];
                    }
                    gsc[gi] = b1 + b2;
                }
                for (int u = 0; u < r->NGU; u++) {
                    int best = -1;
                    for (int gi = 0; gi < r->NG; gi++) if (!on[gi] && (best < 0 || gsc[gi] > gsc[best])) best = gi;
                    on[best] = 1;
                }
                int chosen[64];
                for (int c = 0; c < r->K; c++) {
                    int best = -1;
                    for (int e = 0; e < r->X; e++) {
                        if (!on[e / per]) continue;
                        int used = 0;
                        for (int c2 = 0; c2 < c; c2++) used |= chosen[c2] == e;
                        if (!used && (best < 0 || key[e] > key[best])) best = e;
                    }
                    chosen[c] = best;
                }
                double psum = 0;
                for (int c = 0; c < r->K; c++) psum += p[chosen[c]];
                double *y = x + (int64_t)t * E;
                for (int c = 0; c < r->K; c++) {
                    int e = chosen[c];
                    swiglu_ffn(y, ge + e * ex_in, ue + e * ex_in, de + e * ex_in, xn, E, r->FX, p[e] / psum * r->scale);
                }
                swiglu_ffn(y, gs, us, ds, xn, E, r->FS, 1.0);
            }
            free(p); free(key);
            free(wr); free(bias); free(ge); free(ue); free(de); free(gs); free(us); free(ds);
        }
        free(an); free(wqkv); free(qn); free(kn); free(wo); free(fn);
    }
    double *on = tensor_d(r->g, "output_norm.weight", NULL), *wout = tensor_d(r->g, "output.weight", NULL);
    for (int t = 0; t < T; t++) {
        rmsnorm_d(xn, x + (int64_t)t * E, on, E, r->eps);
        matvec(logits + (int64_t)t * r->V, wout, xn, E, r->V);
    }
    free(on); free(wout);
    free(x); free(xn); free(q); free(k); free(v); free(qkv); free(att); free(o); free(sc);
}

static void ref_init(ref_model *r, const gguf_file *g) {
    memset(r, 0, sizeof *r);
    r->g = g;
    r->E = (int)key_u32(g, "llada2.embedding_length");
    r->L = (int)key_u32(g, "llada2.block_count");
    r->H = (int)key_u32(g, "llada2.attention.head_count");
    r->HKV = (int)key_u32(g, "llada2.attention.head_count_kv");
    r->HD = (int)key_u32(g, "llada2.attention.key_length");
    r->NROT = (int)key_u32(g, "llada2.rope.dimension_count");
    r->FF = (int)key_u32(g, "llada2.feed_forward_length");
    r->X = (int)key_u32(g, "llada2.expert_count");
    r->K = (int)key_u32(g, "llada2.expert_used_count");
    r->FX = (int)key_u32(g, "llada2.expert_feed_forward_length");
    r->FS = (int)key_u32(g, "llada2.expert_shared_feed_forward_length") * (int)key_u32(g, "llada2.expert_shared_count");
    r->NG = (int)key_u32(g, "llada2.expert_group_count");
    r->NGU = (int)key_u32(g, "llada2.expert_group_used_count");
    r->DENSE = (int)key_u32(g, "llada2.leading_dense_block_count");
    r->eps = key_f32(g, "llada2.attention.layer_norm_rms_epsilon");
    r->base = key_f32(g, "llada2.rope.freq_base");
    r->scale = key_f32(g, "llada2.expert_weights_scale");
    r->V = (int)gguf_find_tensor(g, "output.weight")->ne[1];
    r->B = 32;                          /* the family's block length; tiny-llada2 writes no key */
}

/* ------------------------------------------------------------------ helpers */

static int make_model(uint32_t type, char *path, size_t cap) {
    snprintf(path, cap, "/tmp/unmask-test-llada2-%d-%s.gguf", (int)getpid(), um_type_name(type));
    um_synth_opts o = { .shape = synth_find_shape("tiny-llada2"), .type = type, .seed = 11, .init_scale = 1.0f };
    um_err e;
    if (!o.shape || synth_write(&o, path, &e)) { printf("    synth: %s\n", e.msg); return -1; }
    return 0;
}

static double cosine_fd(const float *a, const double *b, int n) {
    double ab = 0, aa = 0, bb = 0;
    for (int i = 0; i < n; i++) { ab += a[i] * b[i]; aa += (double)a[i] * a[i]; bb += b[i] * b[i]; }
    return ab / sqrt(aa * bb);
}

static int argmax_f(const float *a, int n) { int b = 0; for (int i = 1; i < n; i++) if (a[i] > a[b]) b = i; return b; }
static int argmax_d(const double *a, int n) { int b = 0; for (int i = 1; i < n; i++) if (a[i] > a[b]) b = i; return b; }

#define T_CANVAS 45                     /* one full block of 32 and a partial second block */

static void canvas(int32_t *tok, int V, int salt) {
    for (int i = 0; i < T_CANVAS; i++) tok[i] = (i * 131 + 17 + salt * 7) % V;
}

/* ------------------------------------------------------------------ tests */

/* unmask's reference (double dot products over dequantized rows) and fast paths against the
 * float64 reference: F32 and F16 storage are exact inputs for both sides, so the only
 * differences are float activations (ref) and summation order / f32 ops (fast): 1e-5 in cosine. */
static void against_reference(uint32_t type) {
    char path[256];
    if (make_model(type, path, sizeof path)) { th_fail(__FILE__, __LINE__, "cannot write model"); return; }
    um_err e = { "" };
    um_model *m = NULL;
    gguf_file *g = NULL;
    int rc = model_open(&m, path, &e);
    if (!rc) rc = gguf_open(&g, path, &e);
    unlink(path);
    if (rc) { th_fail(__FILE__, __LINE__, "open: %s", e.msg); model_close(m); return; }
    ref_model r;
    ref_init(&r, g);
    const int T = T_CANVAS, V = r.V;
    int32_t tok[T_CANVAS], rows[T_CANVAS];
    canvas(tok, V, 0);
    for (int i = 0; i < T; i++) rows[i] = i;
    double *ld = malloc(sizeof(double) * T * V);
    float *lf = malloc(sizeof(float) * T * V), *lr = malloc(sizeof(float) * T * V);
    um_pool *pool = pool_new(2);
    um_forward *fast = NULL, *ref = NULL;
    um_forward_opts fo = { .max_tokens = T, .kernel = UM_KERNEL_AUTO };
    um_forward_opts ro = { .max_tokens = T, .reference = true };
    ref_forward(&r, tok, T, ld);
    if (forward_new(&fast, m, pool, &fo, &e) || forward_new(&ref, m, NULL, &ro, &e) ||
        forward_run(fast, tok, T, rows, T, lf, &e) || forward_run(ref, tok, T, rows, T, lr, &e)) {
        th_fail(__FILE__, __LINE__, "%s", e.msg);
    } else {
        double worst_f = 1, worst_r = 1;
        int agree_f = 0, agree_r = 0;
        for (int t = 0; t < T; t++) {
            double cf = cosine_fd(lf + t * V, ld + t * V, V), cr = cosine_fd(lr + t * V, ld + t * V, V);
            if (cf < worst_f) worst_f = cf;
            if (cr < worst_r) worst_r = cr;
            agree_f += argmax_f(lf + t * V, V) == argmax_d(ld + t * V, V);
            agree_r += argmax_f(lr + t * V, V) == argmax_d(ld + t * V, V);
        }
        printf("    %s: worst row cosine ref %.9f fast %.9f, argmax %d/%d %d/%d\n", um_type_name(type), worst_r, worst_f,
               agree_r, T, agree_f, T);
        if (worst_r < 0.99999 || worst_f < 0.99999 || agree_r < T - 1 || agree_f < T - 1)
            th_fail(__FILE__, __LINE__, "%s: cosine ref %.9f fast %.9f (need 0.99999), argmax %d %d of %d",
                    um_type_name(type), worst_r, worst_f, agree_r, agree_f, T);
    }
    free(ld); free(lf); free(lr);
    forward_free(fast);
    forward_free(ref);
    pool_free(pool);
    gguf_close(g);
    model_close(m);
}

TEST(llada2_f32_matches_float64_reference) { against_reference(UM_TYPE_F32); }
TEST(llada2_f16_matches_float64_reference) { against_reference(UM_TYPE_F16); }

/* Group-limited routing on a constructed router output. 8 experts in 4 groups of 2, 2 groups
 * used, k = 2, sigmoid, normalised, scale 2.5. Logits and their sigmoids:
 *   g0: e0  3.0 -> 0.9526, e1 -3.0 -> 0.0474   group score 1.0000
 *   g1: e2  2.0 -> 0.8808, e3  2.0 -> 0.8808   group score 1.7616
 *   g2: e4 -1.0 -> 0.2689, e5 -1.0 -> 0.2689   group score 0.5379
 *   g3: e6  2.5 -> 0.9241, e7 -4.0 -> 0.0180   group score 0.9421
 * Groups g1 and g0 win; among e0..e3 the best two are e0 and e2 (e2, e3 tie: the lower index).
 * Without groups e6 (0.9241) would beat e2: the group rule is what drops it.
 * With bias +2 on e5, g2 scores 2.5379 and leads, g1 second; the keys among e2..e5 are
 * 0.8808, 0.8808, 0.2689, 2.2689: picks e5 then e2, weighted by the unbiased p (0.2689, 0.8808). */
TEST(llada2_group_limited_routing_by_hand) {
    const float logits[8] = { 3.0f, -3.0f, 2.0f, 2.0f, -1.0f, -1.0f, 2.5f, -4.0f };
    um_moe_cfg c = { .n_expert = 8, .k = 2, .gating = UM_MOE_SIGMOID, .norm_topk = true, .scale = 2.5f,
                     .n_group = 4, .n_group_used = 2 };
    int32_t ex[2];
    float w[2];
    um_err e;
    CHECK(ops_moe_route(&c, logits, 1, ex, w, &e) == UM_OK);
    CHECK_EQ(ex[0], 0);
    CHECK_EQ(ex[1], 2);
    double p0 = 1 / (1 + exp(-3.0)), p2 = 1 / (1 + exp(-2.0));
    CHECK_NEAR(w[0], p0 / (p0 + p2) * 2.5, 1e-5);
    CHECK_NEAR(w[1], p2 / (p0 + p2) * 2.5, 1e-5);
    /* the same scores without groups pick e0 and e6 */
    um_moe_cfg flat = c;
    flat.n_group = 0;
    CHECK(ops_moe_route(&flat, logits, 1, ex, w, &e) == UM_OK);
    CHECK_EQ(ex[0], 0);
    CHECK_EQ(ex[1], 6);
    /* a selection bias moves the choice but not the weights' source */
    const float bias[8] = { 0, 0, 0, 0, 0, 2.0f, 0, 0 };
    c.bias = bias;
    CHECK(ops_moe_route(&c, logits, 1, ex, w, &e) == UM_OK);
    CHECK_EQ(ex[0], 5);
    CHECK_EQ(ex[1], 2);
    double p5 = 1 / (1 + exp(1.0));
    CHECK_NEAR(w[0], p5 / (p5 + p2) * 2.5, 1e-5);
    CHECK_NEAR(w[1], p2 / (p5 + p2) * 2.5, 1e-5);
    /* groups that cannot supply k experts are refused */
    c.n_group_used = 1;
    c.k = 3;
    CHECK(ops_moe_route(&c, logits, 1, ex, w, &e) == UM_FAIL);
}

/* Partial NeoX RoPE: head_dim 64, 32 rotated dims: dims 32..63 come out bit for bit as they
 * went in, dims i and i+16 (i < 16) rotate by pos * base^(-2i/32). */
TEST(llada2_partial_rotary_leaves_the_rest) {
    enum { HD = 64, NR = 32, NH = 2 };
    float q[NH * HD], q0[NH * HD];
    for (int i = 0; i < NH * HD; i++) q0[i] = q[i] = (float)sin(0.37 * i + 0.1);
    const int32_t pos[1] = { 9 };
    um_rope rp = { .mode = UM_ROPE_NEOX, .head_dim = HD, .n_dims = NR, .freq_base = 600000.0f, .freq_scale = 1.0f };
    um_err e;
    for (int path = 0; path < 2; path++) {
        memcpy(q, q0, sizeof q);
        CHECK((path ? ops_rope(NULL, &rp, pos, 1, q, NH, NULL, 0, &e) : ops_rope_ref(&rp, pos, 1, q, NH, NULL, 0, &e)) == UM_OK);
        for (int h = 0; h < NH; h++) {
            for (int d = NR; d < HD; d++) CHECK_MSG(q[h * HD + d] == q0[h * HD + d], "head %d dim %d changed", h, d);
            for (int i = 0; i < NR / 2; i++) {
                double th = 9 * pow(600000.0, -2.0 * i / NR);
                double a = q0[h * HD + i], b = q0[h * HD + i + NR / 2];
                CHECK_NEAR(q[h * HD + i], a * cos(th) - b * sin(th), 1e-5);
                CHECK_NEAR(q[h * HD + i + NR / 2], a * sin(th) + b * cos(th), 1e-5);
            }
        }
    }
}

/* The mask: a token changed in block 1 (positions 32..44) leaves every logit of block 0 bit for
 * bit as it was (rows are computed independently and block 0 never reads block 1), on both
 * paths, and changes block 1's rows. */
TEST(llada2_block_causal_mask) {
    char path[256];
    CHECK(make_model(UM_TYPE_F32, path, sizeof path) == 0);
    um_err e = { "" };
    um_model *m = NULL;
    int rc = model_open(&m, path, &e);
    unlink(path);
    CHECK_MSG(rc == UM_OK, "%s", e.msg);
    CHECK(m->arch->block_causal);
    CHECK_EQ(m->hp.block_size, 32);
    const int T = T_CANVAS, V = m->hp.n_vocab;
    int32_t a[T_CANVAS], b[T_CANVAS], rows[T_CANVAS];
    canvas(a, V, 0);
    memcpy(b, a, sizeof a);
    b[40] = (b[40] + 5) % V;
    for (int i = 0; i < T; i++) rows[i] = i;
    float *la = malloc(sizeof(float) * T * V), *lb = malloc(sizeof(float) * T * V);
    um_pool *pool = pool_new(2);
    for (int path_ref = 0; path_ref < 2; path_ref++) {
        um_forward *f = NULL;
        um_forward_opts o = { .max_tokens = T, .kernel = UM_KERNEL_AUTO, .reference = path_ref };
        if (forward_new(&f, m, path_ref ? NULL : pool, &o, &e) || forward_run(f, a, T, rows, T, la, &e) ||
            forward_run(f, b, T, rows, T, lb, &e)) {
            th_fail(__FILE__, __LINE__, "%s", e.msg);
            forward_free(f);
            break;
        }
        forward_free(f);
        CHECK_MSG(memcmp(la, lb, sizeof(float) * 32 * V) == 0, "block 0 moved when block 1 changed (%s path)",
                  path_ref ? "reference" : "fast");
        int moved = 0;
        for (int t = 32; t < T; t++) moved += memcmp(la + t * V, lb + t * V, sizeof(float) * V) != 0;
        CHECK_MSG(moved == T - 32, "only %d of block 1's %d rows changed (%s path)", moved, T - 32,
                  path_ref ? "reference" : "fast");
    }
    free(la); free(lb);
    pool_free(pool);
    model_close(m);
}

/* Partial passes over an F32 K/V cache equal full passes: (1) block 1 recomputed after a change
 * in block 1, block 0's K/V read from the cache; (2) block 0 recomputed while the cache holds a
 * stale block 1: its rows must not see those keys. Active rows in canvas order and scrambled. */
TEST(llada2_partial_pass_equals_full_pass) {
    char path[256];
    CHECK(make_model(UM_TYPE_F32, path, sizeof path) == 0);
    um_err e = { "" };
    um_model *m = NULL;
    int rc = model_open(&m, path, &e);
    unlink(path);
    CHECK_MSG(rc == UM_OK, "%s", e.msg);
    const int T = T_CANVAS, V = m->hp.n_vocab;
    int32_t a[T_CANVAS], b[T_CANVAS], rows[T_CANVAS];
    canvas(a, V, 0);
    memcpy(b, a, sizeof a);
    b[33] = (b[33] + 3) % V;
    b[44] = (b[44] + 9) % V;
    for (int i = 0; i < T; i++) rows[i] = i;
    float *full = malloc(sizeof(float) * T * V), *part = malloc(sizeof(float) * T * V), *fill = malloc(sizeof(float) * T * V);
    um_pool *pool = pool_new(2);
    um_forward *f = NULL;
    um_kvcache *kv = NULL;
    um_forward_opts o = { .max_tokens = T, .kernel = UM_KERNEL_AUTO };
    if (forward_new(&f, m, pool, &o, &e) || forward_kv_new(f, UM_TYPE_F32, T, &kv, &e) ||
        forward_run(f, b, T, rows, T, full, &e)) {
        th_fail(__FILE__, __LINE__, "%s", e.msg);
        goto out;
    }
    /* (1) cache filled on canvas a, block 1 recomputed on canvas b */
    int32_t act1[T_CANVAS - 32], act1s[T_CANVAS - 32];
    for (int i = 0; i < T - 32; i++) act1[i] = 32 + i;
    for (int i = 0; i < T - 32; i++) act1s[i] = 32 + (i * 5) % (T - 32);   /* 5 is prime to 13 */
    for (int order = 0; order < 2; order++) {
        const int32_t *act = order ? act1s : act1;
        if (forward_run_kv(f, kv, a, T, NULL, 0, rows, T, fill, NULL, &e) ||
            forward_run_kv(f, kv, b, T, act, T - 32, act, T - 32, part, NULL, &e)) {
            th_fail(__FILE__, __LINE__, "%s", e.msg);
            goto out;
        }
        for (int i = 0; i < T - 32; i++)
            CHECK_MSG(memcmp(part + i * V, full + act[i] * V, sizeof(float) * V) == 0,
                      "row %d of a partial pass differs from the full pass (%s order)", act[i], order ? "scrambled" : "canvas");
    }
    /* (2) cache filled on canvas b (block 1 as b has it), block 0 recomputed on canvas a:
     * block 0 of a is what a full pass on a gives, whatever the cache holds for block 1 */
    int32_t act0[32];
    for (int i = 0; i < 32; i++) act0[i] = (i * 7) % 32;
    if (forward_run(f, a, T, rows, T, full, &e) ||
        forward_run_kv(f, kv, b, T, NULL, 0, rows, T, fill, NULL, &e) ||
        forward_run_kv(f, kv, a, T, act0, 32, act0, 32, part, NULL, &e)) {
        th_fail(__FILE__, __LINE__, "%s", e.msg);
        goto out;
    }
    for (int i = 0; i < 32; i++)
        CHECK_MSG(memcmp(part + i * V, full + act0[i] * V, sizeof(float) * V) == 0,
                  "block 0 row %d saw the cached keys of block 1", act0[i]);
out:
    free(full); free(part); free(fill);
    forward_kv_free(kv);
    forward_free(f);
    pool_free(pool);
    model_close(m);
}

/* The hyper-parameters as model.c reads them from the converter's keys, and the shapes. */
TEST(llada2_hparams_and_shapes) {
    char path[256];
    CHECK(make_model(UM_TYPE_F32, path, sizeof path) == 0);
    um_err e = { "" };
    um_model *m = NULL;
    int rc = model_open(&m, path, &e);
    CHECK_MSG(rc == UM_OK, "%s", e.msg);
    const um_hparams *hp = &m->hp;
    CHECK_EQ(hp->n_layer, 3);
    CHECK_EQ(hp->n_rot, 32);
    CHECK_EQ(hp->head_dim, 64);
    CHECK_EQ(hp->n_layer_dense_lead, 1);
    CHECK_EQ(hp->n_expert_shared, 1);
    CHECK_EQ(hp->n_ff_shexp, 256);
    CHECK_EQ(hp->n_expert_groups, 2);
    CHECK_EQ(hp->n_group_used, 1);
    CHECK(hp->moe_sigmoid && hp->moe_norm_w && !hp->shift_logits);
    CHECK_NEAR(hp->expert_weights_scale, 2.5, 0);
    CHECK_EQ(hp->block_size, 32);
    CHECK(m->layers[0].ffn_gate.data && !m->layers[0].ffn_gate_inp.data);
    CHECK(m->layers[1].ffn_gate_inp.data && m->layers[1].exp_probs_b && m->layers[1].ffn_down_shexp.data);
    /* fused QKV: three consecutive row ranges of one tensor */
    CHECK(m->layers[1].wk.data == (const char *)m->layers[1].wq.data + 256 * m->layers[1].wq.row_bytes);
    CHECK(m->layers[1].wv.data == (const char *)m->layers[1].wk.data + 128 * m->layers[1].wk.row_bytes);
    model_close(m);
    /* diffusion.block_length and nextn_predict_layers (an extra block_count layer, never run) */
    gguf_file *g;
    CHECK(gguf_open(&g, path, &e) == UM_OK);
    gguf_writer *w = gguf_writer_new();
    const char *skip[] = { "llada2.block_count", NULL };
    CHECK(gguf_copy_kv(w, g, skip) == UM_OK);
    gguf_set_u32(w, "llada2.block_count", 4);
    gguf_set_u32(w, "llada2.nextn_predict_layers", 1);
    gguf_set_u32(w, "diffusion.block_length", 8);
    for (uint64_t i = 0; i < gguf_n_tensors(g); i++) {
        const gguf_tensor *t = gguf_tensor_at(g, i);
        char name[256];
        snprintf(name, sizeof name, "%.*s", (int)t->name.len, t->name.ptr);
        gguf_add_tensor(w, name, t->type, t->n_dims, t->ne, t->data, t->size, &e);
    }
    char path2[300];
    snprintf(path2, sizeof path2, "%s.b8.gguf", path);
    rc = gguf_writer_write(w, path2, &e);
    gguf_writer_free(w);
    gguf_close(g);
    unlink(path);
    CHECK_MSG(rc == UM_OK, "%s", e.msg);
    rc = model_open(&m, path2, &e);
    unlink(path2);
    CHECK_MSG(rc == UM_OK, "%s", e.msg);
    CHECK_EQ(m->hp.n_layer, 3);
    CHECK_EQ(m->hp.n_layer_nextn, 1);
    CHECK_EQ(m->hp.block_size, 8);
    model_close(m);
    /* LLaDA2.0-mini's published shape */
    const um_synth_shape *s = synth_find_shape("llada2-mini");
    CHECK(s != NULL);
    CHECK_STREQ(s->arch, "llada2");
    CHECK(s->n_vocab == 157184 && s->n_embd == 2048 && s->n_layer == 20 && s->n_head == 16 && s->n_head_kv == 4);
    CHECK(s->head_dim == 128 && s->n_rot == 64 && s->n_ff == 5120 && s->n_ff_exp == 512);
    CHECK(s->n_expert == 256 && s->n_expert_used == 8 && s->n_expert_groups == 8 && s->n_group_used == 4);
    CHECK(s->n_dense_lead == 1 && s->n_expert_shared == 1 && s->mask_id == 156895 && s->eos_id == 156892);
}

/* Bad llada2 hyper-parameters are refused at load with a message naming the key. */
static void refused_with(const char *path, const char *key, uint32_t value, const char *expect) {
    um_err e = { "" };
    gguf_file *g;
    if (gguf_open(&g, path, &e)) { th_fail(__FILE__, __LINE__, "%s", e.msg); return; }
    gguf_writer *w = gguf_writer_new();
    const char *skip[] = { key, NULL };
    gguf_copy_kv(w, g, skip);
    gguf_set_u32(w, key, value);
    for (uint64_t i = 0; i < gguf_n_tensors(g); i++) {
        const gguf_tensor *t = gguf_tensor_at(g, i);
        char name[256];
        snprintf(name, sizeof name, "%.*s", (int)t->name.len, t->name.ptr);
        gguf_add_tensor(w, name, t->type, t->n_dims, t->ne, t->data, t->size, &e);
    }
    char p2[300];
    snprintf(p2, sizeof p2, "%s.bad.gguf", path);
    int rc = gguf_writer_write(w, p2, &e);
    gguf_writer_free(w);
    gguf_close(g);
    if (rc) { th_fail(__FILE__, __LINE__, "%s", e.msg); return; }
    um_model *m = NULL;
    rc = model_open(&m, p2, &e);
    unlink(p2);
    model_close(m);
    if (rc != UM_FAIL || !strstr(e.msg, expect))
        th_fail(__FILE__, __LINE__, "%s = %u: rc %d, message '%s' (expected '%s')", key, value, rc, e.msg, expect);
}

TEST(llada2_bad_hparams_are_refused) {
    char path[256];
    CHECK(make_model(UM_TYPE_F32, path, sizeof path) == 0);
    refused_with(path, "llada2.expert_group_count", 3, "expert_group_count 3");        /* 8 experts */
    refused_with(path, "llada2.expert_group_used_count", 2, "expert_group_used_count 2"); /* of 2 groups */
    refused_with(path, "llada2.leading_dense_block_count", 9, "leading_dense_block_count 9");
    refused_with(path, "llada2.expert_gating_func", 3, "expert_gating_func 3");
    refused_with(path, "diffusion.block_length", 0, "diffusion.block_length 0");
    refused_with(path, "llada2.nextn_predict_layers", 3, "nextn_predict_layers 3");
    refused_with(path, "llada2.expert_shared_count", 2, "ffn_gate_shexp.weight' has shape");  /* 512 wide */
    unlink(path);
}
