/*
 * test_dgemma: the diffusion-gemma architecture (DiffusionGemma on the Gemma 4 backbone) against
 * an independent float64 forward pass written here from llama.cpp's port (unslothai/llama.cpp
 * refs/pins/c3fb9724: src/models/diffusion-gemma.cpp, gemma4-common.h) and transformers'
 * modeling_diffusion_gemma.py, on tiny-diffusion-gemma random weights read straight from the GGUF
 * file (nothing of model.c or forward*.c is used by that reference); plus the region mask
 * worked by hand, self-conditioning (exact, and top-k against exact), and refused files.
 *
 * The reference, with P prompt rows, E = n_embd, per layer (head size, K/V heads, RoPE dims and
 * base of its kind: sliding or global):
 *   x = emb[tok] sqrt(E); canvas rows: x = rmsnorm(x + SC) without weight, where
 *     SC = Wd_sc(gelu(Wg_sc n) * (Wu_sc n)), n = rmsnorm(sqrt(E) sum_v softmax(z / t)_v emb[v]) * pre_norm
 *   xn = rmsnorm(x) * attn_norm; q = Wq xn, k = Wk xn, v = Wv xn or the raw k (no attn_v)
 *   q, k per head: rmsnorm * q_norm / k_norm, NeoX RoPE with angle pos base^(-2i/n_rot) / ff_i
 *   (ff = rope_freqs on global layers); v per head: rmsnorm without weight
 *   query i sees key j when: i prompt: j <= i (sliding: i - j < n_swa); i canvas: j canvas, or
 *     j prompt (sliding: j >= P - n_swa + 1); softmax of q.k (no scale), GQA
 *   r = x + rmsnorm(Wo att) * post_attention_norm
 *   mlp = rmsnorm(Wd(gelu(Wg h) * Wu h)) * post_ffw_norm_1, h = rmsnorm(r) * ffn_norm
 *   router = softmax(Wr (rmsnorm(r) / sqrt(E) * gate_inp.scale)), top-k, renormalised, times
 *     ffn_down_exps.scale[e]; moe = rmsnorm(sum w_e Wd_e(gelu(Wg_e y) * Wu_e y)) * post_ffw_norm_2,
 *     y = rmsnorm(r) * pre_ffw_norm_2 (gate_up fused: rows [0, F) gate, [F, 2F) up)
 *   x = (r + rmsnorm(mlp + moe) * post_ffw_norm) * (i < P ? enc_layer_output_scale : layer_output_scale)
 *   logits = c tanh((rmsnorm(x) * output_norm) emb^T / c), c = final_logit_softcapping
 * gelu is the tanh form. Everything in double.
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
#include "tokenizer.h"
#include "chat.h"

/* ------------------------------------------------------------------ float64 reference */

typedef struct ref_model {
    const gguf_file *g;
    int E, L, H, V, FF, X, K, FX, W, C;
    int hd[64], hkv[64], nrot[64], swa[64];
    double eps, base[64], cap;
    double *rope_ff;                    /* (hd_global / 2) */
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
static double *tensor_d(const gguf_file *g, const char *name) {
    const gguf_tensor *t = gguf_find_tensor(g, name);
    if (!t) return NULL;
    int64_t n = (int64_t)t->n_elements;
    float *f = malloc(sizeof(float) * (size_t)n);
    double *d = malloc(sizeof(double) * (size_t)n);
    um_traits(t->type)->to_float_ref(t->data, f, n);
    for (int64_t i = 0; i < n; i++) d[i] = f[i];
    free(f);
    return d;
}

static double *layer_t(const ref_model *r, int il, const char *suffix) {
    char n[128];
    snprintf(n, sizeof n, "blk.%d.%s", il, suffix);
    return tensor_d(r->g, n);
}

static void matvec(double *y, const double *W, const double *x, int n_in, int n_out) {
    for (int o = 0; o < n_out; o++) {
        double s = 0;
        for (int i = 0; i < n_in; i++) s += W[(int64_t)o * n_in + i] * x[i];
        y[o] = s;
    }
}

/* y = x / rms(x) (* w if given) */
static void rmsnorm_d(double *y, const double *x, const double *w, int n, double eps) {
    double ss = 0;
    for (int i = 0; i < n; i++) ss += x[i] * x[i];
    double inv = 1.0 / sqrt(ss / n + eps);
    for (int i = 0; i < n; i++) y[i] = x[i] * inv * (w ? w[i] : 1.0);
}

static double gelu_d(double x) { return 0.5 * x * (1.0 + tanh(sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x))); }

static void rope_d(double *v, int pos, int n_rot, double base, const double *ff) {
    int half = n_rot / 2;
    for (int i = 0; i < half; i++) {
        double th = pos * pow(base, -2.0 * i / n_rot) / (ff ? ff[i] : 1.0), c = cos(th), s = sin(th);
        double a = v[i], b = v[i + half];
        v[i] = a * c - b * s;
        v[i + half] = a * s + b * c;
    }
}

/* Does query i see key j (P prompt rows, window W, sliding or global)? Written from
 * llm_graph_input_attn_diffusion::set_input, independently of forward_dg_key_range. */
static int sees(int i, int j, int P, int W, int swa) {
    if (i >= P) return j >= P || !swa || j >= P - W + 1;
    return j < P && j <= i && (!swa || i - j < W);
}

/* y = Wd (gelu(Wg x) * (Wu x)); Wg, Wu rows F of E, Wd rows E of F */
static void geglu_ffn(double *y, const double *Wg, const double *Wu, const double *Wd, const double *x, int E, int F) {
    double *a = malloc(sizeof(double) * F), *b = malloc(sizeof(double) * F);
    matvec(a, Wg, x, E, F);
    matvec(b, Wu, x, E, F);
    for (int i = 0; i < F; i++) a[i] = gelu_d(a[i]) * b[i];
    matvec(y, Wd, a, F, E);
    free(a); free(b);
}

/* logits (T, V) of tokens[0..T), P prompt rows; sc_logits (T - P, V) at temperature sc_t or NULL */
static void ref_forward(const ref_model *r, const int32_t *tok, int T, int P, const float *sc_logits, double sc_t,
                        double *logits) {
    const int E = r->E, V = r->V;
    double *emb = tensor_d(r->g, "token_embd.weight");
    double *x = calloc((size_t)T * E, sizeof(double)), *xn = malloc(sizeof(double) * E);
    double *res = malloc(sizeof(double) * (size_t)T * E), *t1 = malloc(sizeof(double) * E), *t2 = malloc(sizeof(double) * E);
    for (int t = 0; t < T; t++)
        for (int i = 0; i < E; i++) x[(int64_t)t * E + i] = emb[(int64_t)tok[t] * E + i] * sqrt((double)E);
    if (sc_logits) {
        double *pre = tensor_d(r->g, "self_cond_pre_norm.weight"), *Wg = tensor_d(r->g, "self_cond_gate.weight");
        double *Wu = tensor_d(r->g, "self_cond_up.weight"), *Wd = tensor_d(r->g, "self_cond_down.weight");
        double *p = malloc(sizeof(double) * V);
        for (int c = 0; c < T - P; c++) {
            const float *z = sc_logits + (int64_t)c * V;
            double mx = -INFINITY, sum = 0;
            for (int v = 0; v < V; v++) if (z[v] / sc_t > mx) mx = z[v] / sc_t;
            for (int v = 0; v < V; v++) sum += p[v] = exp(z[v] / sc_t - mx);
            for (int i = 0; i < E; i++) {
                double s = 0;
                for (int v = 0; v < V; v++) s += p[v] / sum * emb[(int64_t)v * E + i];
                t1[i] = s * sqrt((double)E);
            }
            rmsnorm_d(t1, t1, pre, E, r->eps);
            geglu_ffn(t2, Wg, Wu, Wd, t1, E, r->FF);
            for (int i = 0; i < E; i++) x[(int64_t)(P + c) * E + i] += t2[i];
        }
        free(pre); free(Wg); free(Wu); free(Wd); free(p);
    }
    for (int t = P; t < T; t++) rmsnorm_d(x + (int64_t)t * E, x + (int64_t)t * E, NULL, E, r->eps);

    for (int il = 0; il < r->L; il++) {
        const int HD = r->hd[il], HKV = r->hkv[il], NQ = r->H * HD, NKV = HKV * HD, G = r->H / HKV;
        double *an = layer_t(r, il, "attn_norm.weight"), *Wq = layer_t(r, il, "attn_q.weight");
        double *Wk = layer_t(r, il, "attn_k.weight"), *Wv = layer_t(r, il, "attn_v.weight");
        double *Wo = layer_t(r, il, "attn_output.weight"), *qn = layer_t(r, il, "attn_q_norm.weight");
        double *kn = layer_t(r, il, "attn_k_norm.weight"), *pan = layer_t(r, il, "post_attention_norm.weight");
        double *q = malloc(sizeof(double) * (size_t)T * NQ), *k = malloc(sizeof(double) * (size_t)T * NKV);
        double *v = malloc(sizeof(double) * (size_t)T * NKV), *att = malloc(sizeof(double) * NQ), *sc = malloc(sizeof(double) * T);
        const double *ff = r->swa[il] ? NULL : r->rope_ff;
        for (int t = 0; t < T; t++) {
            rmsnorm_d(xn, x + (int64_t)t * E, an, E, r->eps);
            matvec(q + (int64_t)t * NQ, Wq, xn, E, NQ);
            matvec(k + (int64_t)t * NKV, Wk, xn, E, NKV);
            if (Wv) matvec(v + (int64_t)t * NKV, Wv, xn, E, NKV);
            else memcpy(v + (int64_t)t * NKV, k + (int64_t)t * NKV, sizeof(double) * NKV);
            for (int h = 0; h < r->H; h++) {
                double *qh = q + (int64_t)t * NQ + h * HD;
                rmsnorm_d(qh, qh, qn, HD, r->eps);
                rope_d(qh, t, r->nrot[il], r->base[il], ff);
            }
            for (int h = 0; h < HKV; h++) {
                double *kh = k + (int64_t)t * NKV + h * HD, *vh = v + (int64_t)t * NKV + h * HD;
                rmsnorm_d(kh, kh, kn, HD, r->eps);
                rope_d(kh, t, r->nrot[il], r->base[il], ff);
                rmsnorm_d(vh, vh, NULL, HD, r->eps);
            }
        }
        for (int t = 0; t < T; t++) {
            for (int h = 0; h < r->H; h++) {
                const double *qh = q + (int64_t)t * NQ + h * HD;
                double mx = -INFINITY, sum = 0;
                for (int j = 0; j < T; j++) {
                    sc[j] = -INFINITY;
                    if (!sees(t, j, P, r->W, r->swa[il])) continue;
                    double s = 0;
                    for (int d = 0; d < HD; d++) s += qh[d] * k[(int64_t)j * NKV + (h / G) * HD + d];
                    sc[j] = s;
                    if (s > mx) mx = s;
                }
                for (int d = 0; d < HD; d++) att[h * HD + d] = 0;
                for (int j = 0; j < T; j++) {
                    if (sc[j] == -INFINITY) continue;
                    double w = exp(sc[j] - mx);
                    sum += w;
                    for (int d = 0; d < HD; d++) att[h * HD + d] += w * v[(int64_t)j * NKV + (h / G) * HD + d];
                }
                for (int d = 0; d < HD; d++) att[h * HD + d] /= sum;
            }
            matvec(t1, Wo, att, NQ, E);
            rmsnorm_d(t1, t1, pan, E, r->eps);
            for (int i = 0; i < E; i++) res[(int64_t)t * E + i] = x[(int64_t)t * E + i] + t1[i];
        }
        free(an); free(Wq); free(Wk); free(Wv); free(Wo); free(qn); free(kn); free(pan);
        free(q); free(k); free(v); free(att); free(sc);

        double *fn = layer_t(r, il, "ffn_norm.weight"), *Wg = layer_t(r, il, "ffn_gate.weight");
        double *Wu = layer_t(r, il, "ffn_up.weight"), *Wd = layer_t(r, il, "ffn_down.weight");
        double *pf = layer_t(r, il, "post_ffw_norm.weight"), *pf1 = layer_t(r, il, "post_ffw_norm_1.weight");
        double *pf2 = layer_t(r, il, "post_ffw_norm_2.weight"), *pre2 = layer_t(r, il, "pre_ffw_norm_2.weight");
        double *Wr = layer_t(r, il, "ffn_gate_inp.weight"), *rs = layer_t(r, il, "ffn_gate_inp.scale");
        double *ds = layer_t(r, il, "ffn_down_exps.scale"), *gu = layer_t(r, il, "ffn_gate_up_exps.weight");
        double *ge = layer_t(r, il, "ffn_gate_exps.weight"), *ue = layer_t(r, il, "ffn_up_exps.weight");
        double *de = layer_t(r, il, "ffn_down_exps.weight");
        double *enc = layer_t(r, il, "enc_layer_output_scale.weight"), *dec = layer_t(r, il, "layer_output_scale.weight");
        const int X = r->X, FX = r->FX;
        double *lg = malloc(sizeof(double) * X), *y = malloc(sizeof(double) * E), *acc = malloc(sizeof(double) * E);
        double *eo = malloc(sizeof(double) * E);
        for (int t = 0; t < T; t++) {
            const double *rt = res + (int64_t)t * E;
            rmsnorm_d(xn, rt, fn, E, r->eps);
            geglu_ffn(t1, Wg, Wu, Wd, xn, E, r->FF);
            rmsnorm_d(t1, t1, pf1, E, r->eps);
            rmsnorm_d(xn, rt, NULL, E, r->eps);
            for (int i = 0; i < E; i++) xn[i] = xn[i] / sqrt((double)E) * rs[i];
            matvec(lg, Wr, xn, E, X);
            double mx = -INFINITY, sum = 0;
            for (int e = 0; e < X; e++) if (lg[e] > mx) mx = lg[e];
            for (int e = 0; e < X; e++) sum += lg[e] = exp(lg[e] - mx);
            for (int e = 0; e < X; e++) lg[e] /= sum;
            int chosen[16];
            double wsum = 0;
            for (int c = 0; c < r->K; c++) {
                int best = -1;
                for (int e = 0; e < X; e++) {
                    int used = 0;
                    for (int u = 0; u < c; u++) used |= chosen[u] == e;
                    if (!used && (best < 0 || lg[e] > lg[best])) best = e;
                }
                chosen[c] = best;
                wsum += lg[best];
            }
            rmsnorm_d(y, rt, pre2, E, r->eps);
            for (int i = 0; i < E; i++) acc[i] = 0;
            for (int c = 0; c < r->K; c++) {
                const int ex = chosen[c];
                const double w = lg[ex] / wsum * (ds ? ds[ex] : 1.0);
                const double *g_e = gu ? gu + (int64_t)ex * 2 * FX * E : ge + (int64_t)ex * FX * E;
                const double *u_e = gu ? g_e + (int64_t)FX * E : ue + (int64_t)ex * FX * E;
                geglu_ffn(eo, g_e, u_e, de + (int64_t)ex * E * FX, y, E, FX);
                for (int i = 0; i < E; i++) acc[i] += w * eo[i];
            }
            rmsnorm_d(acc, acc, pf2, E, r->eps);
            for (int i = 0; i < E; i++) t1[i] += acc[i];
            rmsnorm_d(t1, t1, pf, E, r->eps);
            const double s = t < P ? enc[0] : dec[0];
            for (int i = 0; i < E; i++) x[(int64_t)t * E + i] = (rt[i] + t1[i]) * s;
        }
        free(fn); free(Wg); free(Wu); free(Wd); free(pf); free(pf1); free(pf2); free(pre2); free(Wr); free(rs);
        free(ds); free(gu); free(ge); free(ue); free(de); free(enc); free(dec); free(lg); free(y); free(acc); free(eo);
    }
    double *on = tensor_d(r->g, "output_norm.weight");
    for (int t = 0; t < T; t++) {
        rmsnorm_d(xn, x + (int64_t)t * E, on, E, r->eps);
        matvec(logits + (int64_t)t * V, emb, xn, E, V);       /* tied head */
        if (r->cap > 0)
            for (int v = 0; v < V; v++) logits[(int64_t)t * V + v] = r->cap * tanh(logits[(int64_t)t * V + v] / r->cap);
    }
    free(on); free(emb); free(x); free(xn); free(res); free(t1); free(t2);
}

static void ref_init(ref_model *r, const gguf_file *g) {
    memset(r, 0, sizeof *r);
    r->g = g;
    r->E = (int)key_u32(g, "diffusion-gemma.embedding_length");
    r->L = (int)key_u32(g, "diffusion-gemma.block_count");
    r->H = (int)key_u32(g, "diffusion-gemma.attention.head_count");
    r->FF = (int)key_u32(g, "diffusion-gemma.feed_forward_length");
    r->X = (int)key_u32(g, "diffusion-gemma.expert_count");
    r->K = (int)key_u32(g, "diffusion-gemma.expert_used_count");
    r->FX = (int)key_u32(g, "diffusion-gemma.expert_feed_forward_length");
    r->W = (int)key_u32(g, "diffusion-gemma.attention.sliding_window");
    r->C = (int)key_u32(g, "diffusion.canvas_length");
    r->eps = key_f32(g, "diffusion-gemma.attention.layer_norm_rms_epsilon");
    r->cap = key_f32(g, "diffusion-gemma.final_logit_softcapping");
    r->V = (int)gguf_find_tensor(g, "token_embd.weight")->ne[1];
    const gguf_kv *pat = gguf_find_kv(g, "diffusion-gemma.attention.sliding_window_pattern");
    const gguf_kv *kvh = gguf_find_kv(g, "diffusion-gemma.attention.head_count_kv");
    for (int il = 0; il < r->L && il < 64; il++) {
        r->swa[il] = (int)gguf_arr_i64(pat, (uint64_t)il);
        r->hkv[il] = (int)gguf_arr_i64(kvh, (uint64_t)il);
        r->hd[il] = (int)key_u32(g, r->swa[il] ? "diffusion-gemma.attention.key_length_swa" : "diffusion-gemma.attention.key_length");
        r->nrot[il] = (int)key_u32(g, r->swa[il] ? "diffusion-gemma.rope.dimension_count_swa" : "diffusion-gemma.rope.dimension_count");
        r->base[il] = key_f32(g, r->swa[il] ? "diffusion-gemma.rope.freq_base_swa" : "diffusion-gemma.rope.freq_base");
    }
    r->rope_ff = tensor_d(g, "rope_freqs.weight");
}

/* ------------------------------------------------------------------ helpers */

static int make_model(const char *shape, uint32_t type, char *path, size_t cap) {
    snprintf(path, cap, "/tmp/unmask-test-dgemma-%d-%s-%s.gguf", (int)getpid(), shape, um_type_name(type));
    um_synth_opts o = { .shape = synth_find_shape(shape), .type = type, .seed = 5, .init_scale = 1.0f };
    um_err e;
    if (!o.shape || synth_write(&o, path, &e)) { printf("    synth: %s\n", e.msg); return -1; }
    return 0;
}

/* n previous-step logits in [0, 1000 / div), a fixed hash of the index (malloc'ed) */
static float *hashed_logits(int n, float div) {
    float *z = malloc(sizeof(float) * (size_t)n);
    for (int i = 0; i < n; i++) z[i] = (float)((i * 2654435761u) % 1000) / div;
    return z;
}

/* tiny-diffusion-gemma in F32, written, opened and its file removed; NULL (the test failed) if not */
static um_model *open_tiny(um_err *e) {
    char path[256];
    um_model *m = NULL;
    if (make_model("tiny-diffusion-gemma", UM_TYPE_F32, path, sizeof path)) { th_fail(__FILE__, __LINE__, "synth"); return NULL; }
    int rc = model_open(&m, path, e);
    unlink(path);
    if (rc) { th_fail(__FILE__, __LINE__, "open: %s", e->msg); return NULL; }
    return m;
}

static double cosine_fd(const float *a, const double *b, int n) {
    double ab = 0, aa = 0, bb = 0;
    for (int i = 0; i < n; i++) { ab += a[i] * b[i]; aa += (double)a[i] * a[i]; bb += b[i] * b[i]; }
    return ab / sqrt(aa * bb);
}

static double cosine_ff(const float *a, const float *b, int n) {
    double ab = 0, aa = 0, bb = 0;
    for (int i = 0; i < n; i++) { ab += (double)a[i] * b[i]; aa += (double)a[i] * a[i]; bb += (double)b[i] * b[i]; }
    return ab / sqrt(aa * bb);
}

static int argmax_f(const float *a, int n) { int b = 0; for (int i = 1; i < n; i++) if (a[i] > a[b]) b = i; return b; }
static int argmax_d(const double *a, int n) { int b = 0; for (int i = 1; i < n; i++) if (a[i] > a[b]) b = i; return b; }

#define T_MAX 40

static void tokens(int32_t *tok, int T, int V, int salt) {
    for (int i = 0; i < T; i++) tok[i] = (i * 131 + 17 + salt * 7) % V;
}

/* ------------------------------------------------------------------ tests */

/* unmask's reference path (double dot products) and fast path against the float64 reference on
 * F32 (and F16) weights: prompts shorter and longer than the window of 8, with and without
 * self-conditioning (the input: the first pass's canvas logits at temperature 0.7). Tolerance
 * 1e-5 in cosine, as llada2's; argmax may differ on one row of a near tie. */
static void against_reference(const char *shape, uint32_t type) {
    char path[256];
    if (make_model(shape, type, path, sizeof path)) { th_fail(__FILE__, __LINE__, "cannot write model"); return; }
    um_err e = { "" };
    um_model *m = NULL;
    gguf_file *g = NULL;
    int rc = model_open(&m, path, &e);
    if (!rc) rc = gguf_open(&g, path, &e);
    unlink(path);
    if (rc) { th_fail(__FILE__, __LINE__, "open: %s", e.msg); model_close(m); gguf_close(g); return; }
    ref_model r;
    ref_init(&r, g);
    const int V = r.V, C = r.C;
    int32_t tok[T_MAX], rows[T_MAX];
    for (int i = 0; i < T_MAX; i++) rows[i] = i;
    double *ld = malloc(sizeof(double) * T_MAX * V);
    float *lf = malloc(sizeof(float) * T_MAX * V), *lr = malloc(sizeof(float) * T_MAX * V);
    float *prev = malloc(sizeof(float) * C * V);
    um_pool *pool = pool_new(2);
    um_forward *fast = NULL, *ref = NULL;
    um_forward_opts fo = { .max_tokens = T_MAX, .kernel = UM_KERNEL_AUTO };
    um_forward_opts ro = { .max_tokens = T_MAX, .reference = true };
    if (forward_new(&fast, m, pool, &fo, &e) || forward_new(&ref, m, NULL, &ro, &e)) {
        th_fail(__FILE__, __LINE__, "%s", e.msg);
        goto out;
    }
    static const int prompts[] = { 5, 20 };
    for (size_t pi = 0; pi < UM_ARRAY_LEN(prompts); pi++) {
        const int P = prompts[pi], T = P + C;
        tokens(tok, T, V, (int)pi);
        for (int with_sc = 0; with_sc < 2; with_sc++) {
            um_selfcond sc = { .logits = with_sc ? prev : NULL, .temp = 0.7f, .mode = UM_SC_EXACT };
            ref_forward(&r, tok, T, P, with_sc ? prev : NULL, 0.7f, ld);
            if (forward_run_dg(fast, tok, T, P, &sc, rows, T, lf, &e) || forward_run_dg(ref, tok, T, P, &sc, rows, T, lr, &e)) {
                th_fail(__FILE__, __LINE__, "%s", e.msg);
                goto out;
            }
            double worst_f = 1, worst_r = 1;
            int agree_f = 0, agree_r = 0;
            for (int t = 0; t < T; t++) {
                double cf = cosine_fd(lf + t * V, ld + t * V, V), cr = cosine_fd(lr + t * V, ld + t * V, V);
                if (cf < worst_f) worst_f = cf;
                if (cr < worst_r) worst_r = cr;
                agree_f += argmax_f(lf + t * V, V) == argmax_d(ld + t * V, V);
                agree_r += argmax_f(lr + t * V, V) == argmax_d(ld + t * V, V);
            }
            printf("    %s %s prompt %d%s: worst row cosine ref %.9f fast %.9f, argmax %d/%d %d/%d\n", shape, um_type_name(type), P,
                   with_sc ? " + self-conditioning" : "", worst_r, worst_f, agree_r, T, agree_f, T);
            if (worst_r < 0.99999 || worst_f < 0.99999 || agree_r < T - 1 || agree_f < T - 1) {
                th_fail(__FILE__, __LINE__, "%s prompt %d sc %d: cosine ref %.9f fast %.9f (need 0.99999), argmax %d %d of %d",
                        shape, P, with_sc, worst_r, worst_f, agree_r, agree_f, T);
                goto out;
            }
            if (!with_sc) memcpy(prev, lf + (size_t)P * V, sizeof(float) * C * V);
        }
    }
out:
    free(ld); free(lf); free(lr); free(prev); free(r.rope_ff);
    forward_free(fast);
    forward_free(ref);
    pool_free(pool);
    gguf_close(g);
    model_close(m);
}

TEST(dgemma_fused_experts_match_float64_reference) { against_reference("tiny-diffusion-gemma", UM_TYPE_F32); }
TEST(dgemma_split_experts_match_float64_reference) { against_reference("tiny-diffusion-gemma-split", UM_TYPE_F32); }
/* F16 storage: the same values for both sides (the reference dequantizes them exactly) */
TEST(dgemma_f16_matches_float64_reference)        { against_reference("tiny-diffusion-gemma", UM_TYPE_F16); }

/* The region mask worked by hand for 6 rows, 3 of them prompt, window 2:
 *   sliding: row 0 {0}, row 1 {0,1}, row 2 {1,2} (2 - 0 >= 2 masks key 0); canvas rows 3..5
 *            see the canvas and the prompt from P - W + 1 = 2: {2,3,4,5}
 *   global:  row 0 {0}, row 1 {0,1}, row 2 {0,1,2}; canvas rows {0..5} */
TEST(dgemma_region_mask_by_hand) {
    static const int want_lo[2][6] = { { 0, 0, 1, 2, 2, 2 }, { 0, 0, 0, 0, 0, 0 } };
    static const int want_hi[2][6] = { { 1, 2, 3, 6, 6, 6 }, { 1, 2, 3, 6, 6, 6 } };
    for (int glob = 0; glob < 2; glob++)
        for (int t = 0; t < 6; t++) {
            int32_t lo, hi;
            forward_dg_key_range(t, 6, 3, 2, !glob, &lo, &hi);
            CHECK_MSG(lo == want_lo[glob][t] && hi == want_hi[glob][t], "%s row %d: keys [%d, %d), want [%d, %d)",
                      glob ? "global" : "sliding", t, lo, hi, want_lo[glob][t], want_hi[glob][t]);
        }
    /* a prompt shorter than the window: canvas rows of a sliding layer see the whole prompt */
    int32_t lo, hi;
    forward_dg_key_range(4, 7, 2, 8, true, &lo, &hi);
    CHECK(lo == 0 && hi == 7);
    /* no prompt: every row is canvas */
    forward_dg_key_range(0, 4, 0, 2, true, &lo, &hi);
    CHECK(lo == 0 && hi == 4);
}

/* Attention over per-query key ranges, each kernel set against a plain double computation:
 * values one-hot per key and queries zero give each row the uniform average of the keys it
 * sees (exactly 1/n on those keys, 0 elsewhere); random q, k, v with ranges the sliding prompt
 * rows would have then compare with a double softmax. */
TEST(dgemma_attention_key_ranges) {
    enum { T = 6, HD = 16, H = 2, HKV = 1 };
    float q[T * H * HD] = { 0 }, k[T * HKV * HD], v[T * HKV * HD] = { 0 }, out[T * H * HD];
    int32_t lo[T], hi[T];
    for (int t = 0; t < T; t++) forward_dg_key_range(t, T, 3, 2, true, &lo[t], &hi[t]);
    for (int i = 0; i < T * HD; i++) k[i] = (float)((i * 7) % 5) * 0.1f;
    for (int j = 0; j < T; j++) v[j * HD + j] = 1.0f;
    um_err e;
    um_attn a = { .n_q = T, .n_kv = T, .n_head = H, .n_head_kv = HKV, .head_dim = HD, .scale = 1.0f, .kv_lo = lo, .kv_hi = hi };
    for (int isa = 0; isa < UM_OPS_ISA_COUNT; isa++) {
        if (!ops_isa_available((um_ops_isa)isa)) continue;
        CHECK(ops_select((um_ops_isa)isa, &e) == UM_OK);
        CHECK(ops_attention(NULL, &a, out, q, k, v, &e) == UM_OK);
        for (int t = 0; t < T; t++)
            for (int h = 0; h < H; h++)
                for (int j = 0; j < T; j++) {
                    double want = j >= lo[t] && j < hi[t] ? 1.0 / (hi[t] - lo[t]) : 0.0;
                    CHECK_MSG(fabs(out[(t * H + h) * HD + j] - want) < 1e-6, "%s row %d head %d key %d: %g want %g",
                              ops_isa_name((um_ops_isa)isa), t, h, j, out[(t * H + h) * HD + j], want);
                }
    }
    /* random values, a 40-row pass (prompt 24, window 5): two tiles of queries, mixed runs */
    enum { T2 = 40, HD2 = 64, H2 = 4, HKV2 = 2 };
    static float q2[T2 * H2 * HD2], k2[T2 * HKV2 * HD2], v2[T2 * HKV2 * HD2], o2[T2 * H2 * HD2];
    int32_t lo2[T2], hi2[T2];
    uint32_t s = 12345;
    for (int i = 0; i < T2 * H2 * HD2; i++) { s = s * 1664525u + 1013904223u; q2[i] = (float)((s >> 8) % 2001) / 1000.0f - 1.0f; }
    for (int i = 0; i < T2 * HKV2 * HD2; i++) {
        s = s * 1664525u + 1013904223u; k2[i] = (float)((s >> 8) % 2001) / 1000.0f - 1.0f;
        s = s * 1664525u + 1013904223u; v2[i] = (float)((s >> 8) % 2001) / 1000.0f - 1.0f;
    }
    for (int t = 0; t < T2; t++) forward_dg_key_range(t, T2, 24, 5, true, &lo2[t], &hi2[t]);
    um_attn a2 = { .n_q = T2, .n_kv = T2, .n_head = H2, .n_head_kv = HKV2, .head_dim = HD2, .scale = 0.5f, .kv_lo = lo2, .kv_hi = hi2 };
    um_pool *pool = pool_new(2);
    for (int isa = 0; isa < UM_OPS_ISA_COUNT; isa++) {
        if (!ops_isa_available((um_ops_isa)isa)) continue;
        CHECK(ops_select((um_ops_isa)isa, &e) == UM_OK);
        CHECK(ops_attention(pool, &a2, o2, q2, k2, v2, &e) == UM_OK);
        for (int t = 0; t < T2; t++)
            for (int h = 0; h < H2; h++) {
                const int g = h / (H2 / HKV2);
                double sc[T2], mx = -INFINITY, sum = 0;
                for (int j = lo2[t]; j < hi2[t]; j++) {
                    double d = 0;
                    for (int x = 0; x < HD2; x++) d += (double)q2[(t * H2 + h) * HD2 + x] * k2[(j * HKV2 + g) * HD2 + x];
                    sc[j] = d * 0.5;
                    if (sc[j] > mx) mx = sc[j];
                }
                for (int j = lo2[t]; j < hi2[t]; j++) sum += sc[j] = exp(sc[j] - mx);
                for (int x = 0; x < HD2; x++) {
                    double want = 0;
                    for (int j = lo2[t]; j < hi2[t]; j++) want += sc[j] / sum * v2[(j * HKV2 + g) * HD2 + x];
                    double got = o2[(t * H2 + h) * HD2 + x];
                    if (fabs(got - want) > 2e-5) {
                        pool_free(pool);
                        th_fail(__FILE__, __LINE__, "%s row %d head %d dim %d: %g want %g", ops_isa_name((um_ops_isa)isa), t, h, x, got, want);
                        return;
                    }
                }
            }
    }
    pool_free(pool);
    ops_select(UM_OPS_REF, &e);
    ops_select(ops_isa_best(), &e);
}

/* GeGLU, the soft-cap and RoPE frequency factors against values worked out by hand. */
TEST(dgemma_new_ops_by_hand) {
    /* gelu(1) = 0.5 (1 + tanh(sqrt(2/pi) 1.044715)) = 0.841191990; gelu(-1) = -0.158808010;
     * gelu(3) = 2.996362978; times up = 2, 1, 0.5 */
    float g[3] = { 1.0f, -1.0f, 3.0f }, u[3] = { 2.0f, 1.0f, 0.5f }, y[3];
    ops_geglu_ref(y, g, u, 3);
    CHECK_NEAR(y[0], 2 * 0.841191990, 1e-6);
    CHECK_NEAR(y[1], -0.158808010, 1e-6);
    CHECK_NEAR(y[2], 0.5 * 2.996362978, 1e-6);
    um_pool *pool = pool_new(2);
    static float big_g[70000], big_u[70000], big_y[70000];
    for (int i = 0; i < 70000; i++) { big_g[i] = (float)(i % 400) / 40.0f - 5.0f; big_u[i] = 1.0f; }
    ops_geglu(pool, big_y, big_g, big_u, 70000);
    for (int i = 0; i < 70000; i += 997) CHECK_NEAR(big_y[i], gelu_d(big_g[i]), 1e-6);
    /* soft-cap 30: tanh(1) * 30 = 22.847765; 0 stays 0; -60 -> -30 tanh(2) = -28.920820 */
    float x[3] = { 30.0f, 0.0f, -60.0f };
    ops_softcap(pool, x, 3, 30.0f);
    CHECK_NEAR(x[0], 22.847765, 1e-4);
    CHECK_NEAR(x[1], 0.0, 0);
    CHECK_NEAR(x[2], -28.920820, 1e-4);
    pool_free(pool);
    /* RoPE with factors: pair 0 (factor 1) turns by pos; pair 1 (factor 1e30) stays. NeoX, 4
     * dims, base 10000, position 2: pair 0 angle 2 rad: (1, 0) -> (cos 2, sin 2) */
    float ff[2] = { 1.0f, 1e30f };
    um_rope r = { .mode = UM_ROPE_NEOX, .head_dim = 4, .n_dims = 4, .freq_base = 10000.0f, .freq_scale = 1.0f, .freq_factors = ff };
    float qv[4] = { 1.0f, 1.0f, 0.0f, 0.5f };
    int32_t pos = 2;
    um_err e;
    CHECK(ops_rope_ref(&r, &pos, 1, qv, 1, NULL, 0, &e) == UM_OK);
    CHECK_NEAR(qv[0], cos(2.0), 1e-6);
    CHECK_NEAR(qv[2], sin(2.0), 1e-6);
    CHECK_NEAR(qv[1], 1.0, 1e-6);
    CHECK_NEAR(qv[3], 0.5, 1e-6);
}

/* Top-k self-conditioning keeps the k largest probabilities and spreads the rest evenly; with
 * k = n_vocab - 1 the spread covers exactly one token, so it equals the exact product. With a
 * small k it still runs and differs. */
TEST(dgemma_self_conditioning_topk_limit_is_exact) {
    um_err e = { "" };
    um_model *m = open_tiny(&e);
    if (!m) return;
    int rc = UM_OK;
    const int V = m->hp.n_vocab, C = m->hp.canvas_length, P = 6, T = P + C;
    int32_t tok[T_MAX], rows[T_MAX];
    tokens(tok, T, V, 3);
    for (int i = 0; i < T; i++) rows[i] = i;
    float *prev = hashed_logits(C * V, 100.0f), *a = malloc(sizeof(float) * T * V), *b = malloc(sizeof(float) * T * V);
    um_pool *pool = pool_new(2);
    um_forward *f = NULL;
    um_forward_opts fo = { .max_tokens = T, .kernel = UM_KERNEL_AUTO };
    um_selfcond ex = { .logits = prev, .temp = 0.6f, .mode = UM_SC_EXACT };
    um_selfcond tk = { .logits = prev, .temp = 0.6f, .mode = UM_SC_TOPK, .top_k = V - 1 };
    um_selfcond t4 = { .logits = prev, .temp = 0.6f, .mode = UM_SC_TOPK, .top_k = 4 };
    rc = forward_new(&f, m, pool, &fo, &e);
    if (!rc) rc = forward_run_dg(f, tok, T, P, &ex, rows, T, a, &e);
    if (!rc) rc = forward_run_dg(f, tok, T, P, &tk, rows, T, b, &e);
    double worst = 1;
    for (int t = 0; !rc && t < T; t++) { double c = cosine_ff(a + t * V, b + t * V, V); if (c < worst) worst = c; }
    int prompt_same = 1;
    if (!rc) rc = forward_run_dg(f, tok, T, P, &t4, rows, T, b, &e);
    for (int i = 0; !rc && i < P * V; i++) prompt_same &= a[i] == b[i];
    double worst4 = 1;
    for (int t = P; !rc && t < T; t++) { double c = cosine_ff(a + t * V, b + t * V, V); if (c < worst4) worst4 = c; }
    um_selfcond bad = { .logits = prev, .temp = 0.6f, .mode = UM_SC_TOPK, .top_k = V };
    um_err e2 = { "" };
    int rc_bad = rc ? UM_FAIL : forward_run_dg(f, tok, T, P, &bad, rows, T, b, &e2);
    free(prev); free(a); free(b);
    forward_free(f);
    pool_free(pool);
    model_close(m);
    CHECK_MSG(rc == UM_OK, "%s", e.msg);
    printf("    top-%d vs exact: worst row cosine %.9f; top-4: %.6f\n", V - 1, worst, worst4);
    CHECK_MSG(worst > 0.999999, "top-(V-1) differs from exact: %.9f", worst);
    CHECK_MSG(prompt_same, "self-conditioning changed prompt rows");
    CHECK_MSG(worst4 < 0.999999, "top-4 equals exact (%.9f): the tail is not used?", worst4);
    CHECK(rc_bad != UM_OK);
    CHECK_CONTAINS(e2.msg, "top-k");
}

/* Files the loader must refuse with a message naming the problem. */
static void refused(const char *shape, const char *drop_key, const char *drop_tensor, const char *expect) {
    char path[256], path2[300];
    if (make_model(shape, UM_TYPE_F32, path, sizeof path)) { th_fail(__FILE__, __LINE__, "synth"); return; }
    snprintf(path2, sizeof path2, "%s.cut.gguf", path);
    um_err e = { "" };
    gguf_file *g = NULL;
    gguf_writer *w = gguf_writer_new();
    int rc = gguf_open(&g, path, &e);
    const char *skip[] = { drop_key, NULL };
    if (!rc) rc = gguf_copy_kv(w, g, skip);
    for (uint64_t i = 0; !rc && i < gguf_n_tensors(g); i++) {
        const gguf_tensor *t = gguf_tensor_at(g, i);
        char name[128];
        snprintf(name, sizeof name, "%.*s", (int)t->name.len, t->name.ptr);
        if (drop_tensor && !strcmp(name, drop_tensor)) continue;
        rc = gguf_add_tensor(w, name, t->type, t->n_dims, t->ne, t->data, t->size, &e);
    }
    if (!rc) rc = gguf_writer_write(w, path2, &e);
    gguf_writer_free(w);
    gguf_close(g);
    unlink(path);
    if (rc) { unlink(path2); th_fail(__FILE__, __LINE__, "%s", e.msg); return; }
    um_model *m = NULL;
    rc = model_open(&m, path2, &e);
    unlink(path2);
    model_close(m);
    if (rc == UM_OK || !strstr(e.msg, expect))
        th_fail(__FILE__, __LINE__, "rc %d, message '%s' (expected '%s')", rc, e.msg, expect);
}

TEST(dgemma_bad_files_are_refused) {
    refused("tiny-diffusion-gemma", "diffusion.canvas_length", NULL, "diffusion.canvas_length");
    refused("tiny-diffusion-gemma", "diffusion-gemma.attention.sliding_window_pattern", NULL, "sliding_window_pattern");
    refused("tiny-diffusion-gemma", "diffusion-gemma.attention.key_length_swa", NULL, "key_length_swa");
    refused("tiny-diffusion-gemma", NULL, "self_cond_up.weight", "self-conditioning tensors incomplete");
    refused("tiny-diffusion-gemma", NULL, "rope_freqs.weight", "rope_freqs.weight");
    refused("tiny-diffusion-gemma", NULL, "blk.1.enc_layer_output_scale.weight", "enc_layer_output_scale");
}

/* The hyper-parameters as read, per layer, against the shape that wrote them. */
TEST(dgemma_hparams_per_layer) {
    um_err e = { "" };
    um_model *m = open_tiny(&e);
    if (!m) return;
    const um_synth_shape *s = synth_find_shape("tiny-diffusion-gemma");
    int ok = m->hp.canvas_length == s->canvas_length && m->hp.n_swa == s->n_swa && m->hp.softcap == s->softcap &&
             m->hp.mask_id == -1 && !m->hp.shift_logits && m->hp.eb_max_steps == 48 && m->hp.eb_t_min == 0.4f &&
             m->hp.eb_t_max == 0.8f && m->hp.eb_stability == 1 && m->arch->uniform_state && m->sc_gate.data && m->rope_freqs;
    int bad_layer = -1;
    for (int il = 0; il < m->hp.n_layer; il++) {
        const um_layer *l = &m->layers[il];
        const bool swa = (il + 1) % s->swa_period != 0;
        if (!(l->swa == swa && l->head_dim == (swa ? s->head_dim_swa : s->head_dim) &&
              l->n_head_kv == (swa ? s->n_head_kv_swa : s->n_head_kv) && l->v_from_k == !swa &&
              l->rope_base == (swa ? s->rope_base_swa : s->rope_base) && l->gate_exps && l->up_exps) && bad_layer < 0)
            bad_layer = il;
    }
    um_hparams hp = m->hp;
    model_close(m);
    CHECK_MSG(ok, "hyper-parameters: canvas %d swa %d softcap %g mask %d shift %d max_steps %d t %g..%g stability %d",
              hp.canvas_length, hp.n_swa, hp.softcap, hp.mask_id, hp.shift_logits, hp.eb_max_steps, hp.eb_t_min,
              hp.eb_t_max, hp.eb_stability);
    CHECK_MSG(bad_layer < 0, "layer %d differs from the shape", bad_layer);
}

/* Gemma 4's tokenizer ("gemma4": SentencePiece-style BPE) on a vocabulary built here, worked by
 * hand. Text "hello hello\n\n\nw!" becomes "hello▁hello" | "\n\n\n" | "w!":
 *   run 1, merges by rank (leftmost first on equal rank): "l l" twice, "▁ h", "▁h e", "ll o" twice
 *          -> h e llo ▁he llo ("h e" is no merge);
 *   run 2, not a token as a whole: "\n \n" -> "\n\n" "\n";
 *   run 3: w, then '!' is no token: its byte <0x21>.
 * BOS is added even though the file says add_bos_token false (llama.cpp overrides it for Gemma 4);
 * "<|turn>" is recognised as a control token; decoding gives the text back. */
TEST(dgemma_gemma4_tokenizer_by_hand) {
    const char *base[] = { "<pad>", "<eos>", "<bos>", "<unk>", "\xE2\x96\x81", "h", "e", "l", "o", "\xE2\x96\x81h",
                           "\xE2\x96\x81he", "ll", "llo", "\n", "\n\n", "w", "<|turn>", "<turn|>" };
    enum { NB = 18, NV = NB + 256 };
    const char *toks[NV];
    char bytes[256][7];
    int32_t types[NV];
    for (int i = 0; i < NB; i++) { toks[i] = base[i]; types[i] = i < 4 || i >= 16 ? 3 : 1; }
    for (int b = 0; b < 256; b++) {
        snprintf(bytes[b], sizeof bytes[b], "<0x%02X>", b);
        toks[NB + b] = bytes[b];
        types[NB + b] = 6;
    }
    const char *merges[] = { "l l", "\xE2\x96\x81 h", "\xE2\x96\x81h e", "ll o", "\n \n" };
    gguf_writer *w = gguf_writer_new();
    gguf_set_str(w, "general.architecture", "diffusion-gemma");
    gguf_set_str(w, "tokenizer.ggml.model", "gemma4");
    gguf_set_arr_str(w, "tokenizer.ggml.tokens", toks, NV);
    gguf_set_arr(w, "tokenizer.ggml.token_type", GGUF_TYPE_INT32, types, NV);
    gguf_set_arr_str(w, "tokenizer.ggml.merges", merges, 5);
    gguf_set_u32(w, "tokenizer.ggml.bos_token_id", 2);
    gguf_set_u32(w, "tokenizer.ggml.eos_token_id", 1);
    gguf_set_bool(w, "tokenizer.ggml.add_bos_token", false);
    uint8_t *mem;
    size_t size;
    um_err e = { "" };
    int rc = gguf_writer_write_mem(w, &mem, &size, &e);
    gguf_writer_free(w);
    CHECK_MSG(rc == UM_OK, "%s", e.msg);
    gguf_file *g = NULL;
    tokenizer *t = NULL;
    rc = gguf_open_mem(&g, mem, size, &e);
    if (!rc) rc = tok_load(&t, g, &e);
    gguf_close(g);
    if (rc) { free(mem); th_fail(__FILE__, __LINE__, "%s", e.msg); return; }
    const char *text = "hello hello\n\n\nw!<|turn>";
    int32_t *ids = NULL;
    size_t n = 0;
    rc = tok_encode(t, text, strlen(text), TOK_ADD_SPECIAL | TOK_PARSE_SPECIAL, &ids, &n, &e);
    static const int32_t want[] = { 2, 5, 6, 12, 10, 12, 14, 13, 15, NB + 0x21, 16 };
    int same = rc == UM_OK && n == UM_ARRAY_LEN(want);
    for (size_t i = 0; same && i < n; i++) same = ids[i] == want[i];
    char got[256] = "";
    for (size_t i = 0; rc == UM_OK && i < n; i++) snprintf(got + strlen(got), sizeof got - strlen(got), " %d", ids[i]);
    char *dec = NULL;
    size_t dlen = 0;
    int rc2 = rc ? UM_FAIL : tok_decode(t, ids + 1, n - 2, 0, &dec, &dlen, &e);
    const bool eog = tok_is_eog(t, 17);
    free(ids);
    tok_free(t);
    free(mem);
    CHECK_MSG(same, "ids:%s", got);
    CHECK_MSG(rc2 == UM_OK && !strcmp(dec, "hello hello\n\n\nw!"), "decoded '%s'", dec ? dec : "(null)");
    free(dec);
    CHECK_MSG(eog, "<turn|> should end a turn");
}

/* Gemma 4's chat template for one user turn, typed from google-gemma-4-31B-it.jinja (llama.cpp's
 * models/templates): system turn only when given, contents trimmed, the generation prompt with
 * an empty thought channel (thinking off); detection by its turn markers and by the arch. */
TEST(dgemma_chat_template) {
    char *out = NULL;
    CHECK(chat_format(UM_CHAT_GEMMA4, NULL, "  Why is the sky blue? ", "<bos>", &out, NULL) == UM_OK);
    CHECK_STREQ(out, "<|turn>user\nWhy is the sky blue?<turn|>\n<|turn>model\n<|channel>thought\n<channel|>");
    free(out);
    out = NULL;
    CHECK(chat_format(UM_CHAT_GEMMA4, "Be brief.", "Hi", "<bos>", &out, NULL) == UM_OK);
    CHECK_STREQ(out, "<|turn>system\nBe brief.<turn|>\n<|turn>user\nHi<turn|>\n<|turn>model\n<|channel>thought\n<channel|>");
    free(out);
    CHECK(!chat_has_bos(UM_CHAT_GEMMA4));
    CHECK_EQ(chat_detect("{{- bos_token -}}{{- '<|turn>' + role + '\\n' }}...{{- '<turn|>\\n' -}}", "diffusion-gemma"), UM_CHAT_GEMMA4);
    CHECK_EQ(chat_detect(NULL, "diffusion-gemma"), UM_CHAT_GEMMA4);
    um_chat c;
    CHECK(chat_from_name("gemma4", &c, NULL) == UM_OK && c == UM_CHAT_GEMMA4);
}

/* UM_SC_AUTO: rows whose top k leave more than the tail bound go exact (bit for bit the exact
 * pass); rows with one dominant token stay top-k. Previous logits: flat rows (all equal) and
 * peaked rows (one token 40 above the rest, so the others hold e^-40 of the mass at t 1). */
TEST(dgemma_self_conditioning_auto_falls_back_exact) {
    um_err e = { "" };
    um_model *m = open_tiny(&e);
    if (!m) return;
    int rc = UM_OK;
    const int V = m->hp.n_vocab, C = m->hp.canvas_length, P = 4, T = P + C;
    int32_t tok[T_MAX], rows[T_MAX];
    tokens(tok, T, V, 5);
    for (int i = 0; i < T; i++) rows[i] = i;
    float *flat = calloc((size_t)C * V, sizeof(float)), *peak = calloc((size_t)C * V, sizeof(float));
    for (int c = 0; c < C; c++) peak[(size_t)c * V + (c * 97) % V] = 40.0f;
    float *a = malloc(sizeof(float) * T * V), *b = malloc(sizeof(float) * T * V);
    um_pool *pool = pool_new(2);
    um_forward *f = NULL;
    um_forward_opts fo = { .max_tokens = T, .kernel = UM_KERNEL_AUTO };
    um_selfcond ex = { .logits = flat, .temp = 1.0f, .mode = UM_SC_EXACT };
    um_selfcond au = { .logits = flat, .temp = 1.0f, .mode = UM_SC_AUTO, .top_k = 8 };
    rc = forward_new(&f, m, pool, &fo, &e);
    if (!rc) rc = forward_run_dg(f, tok, T, P, &ex, rows, T, a, &e);
    int n_exact_ex = rc ? -1 : forward_sc_exact_rows(f);
    if (!rc) rc = forward_run_dg(f, tok, T, P, &au, rows, T, b, &e);
    int n_exact_flat = rc ? -1 : forward_sc_exact_rows(f);
    int same = !rc && !memcmp(a, b, sizeof(float) * T * V);
    au.logits = peak;
    if (!rc) rc = forward_run_dg(f, tok, T, P, &au, rows, T, b, &e);
    int n_exact_peak = rc ? -1 : forward_sc_exact_rows(f);
    free(flat); free(peak); free(a); free(b);
    forward_free(f);
    pool_free(pool);
    model_close(m);
    CHECK_MSG(rc == UM_OK, "%s", e.msg);
    CHECK_EQ(n_exact_ex, C);
    CHECK_EQ(n_exact_flat, C);
    CHECK_MSG(same, "auto on flat rows differs from exact");
    CHECK_EQ(n_exact_peak, 0);
}

/* The BF16 product (um_selfcond.bf16): on the fast path and the reference path (which forms
 * the same rounding and chain row by row; they differ only in the exp of the softmax), close
 * to the float product but not equal to it (it is used); prompt rows untouched; auto on flat
 * rows takes it for every row, bit for bit the exact mode's BF16 pass; with the BF16
 * instruction off (FMAs instead) the pass is the same to the bit. */
TEST(dgemma_self_conditioning_bf16) {
    um_err e = { "" };
    um_model *m = open_tiny(&e);
    if (!m) return;
    int rc = UM_OK;
    const int V = m->hp.n_vocab, C = m->hp.canvas_length, P = 6, T = P + C;
    int32_t tok[T_MAX], rows[T_MAX];
    tokens(tok, T, V, 4);
    for (int i = 0; i < T; i++) rows[i] = i;
    float *prev = hashed_logits(C * V, 250.0f), *ex = malloc(sizeof(float) * T * V), *bf = malloc(sizeof(float) * T * V);
    float *rf = malloc(sizeof(float) * T * V), *x = malloc(sizeof(float) * T * V);
    um_pool *pool = pool_new(2);
    um_forward *f = NULL, *r = NULL;
    um_forward_opts fo = { .max_tokens = T, .kernel = UM_KERNEL_AUTO };
    um_forward_opts ro = { .max_tokens = T, .reference = true };
    um_selfcond sx = { .logits = prev, .temp = 0.8f, .mode = UM_SC_EXACT };
    um_selfcond sb = { .logits = prev, .temp = 0.8f, .mode = UM_SC_EXACT, .bf16 = true };
    um_selfcond sa = { .logits = prev, .temp = 0.8f, .mode = UM_SC_AUTO, .top_k = 4, .tail_max = 1e-6f, .bf16 = true };
    rc = forward_new(&f, m, pool, &fo, &e);
    if (!rc) rc = forward_new(&r, m, NULL, &ro, &e);
    if (!rc) rc = forward_run_dg(f, tok, T, P, &sx, rows, T, ex, &e);
    if (!rc) rc = forward_run_dg(f, tok, T, P, &sb, rows, T, bf, &e);
    if (!rc) rc = forward_run_dg(r, tok, T, P, &sb, rows, T, rf, &e);
    double w_ex = 1, w_ref = 1;
    int differs = 0, prompt_same = 1;
    for (int t = 0; !rc && t < T; t++) {
        double c1 = cosine_ff(bf + t * V, ex + t * V, V), c2 = cosine_ff(bf + t * V, rf + t * V, V);
        if (c1 < w_ex) w_ex = c1;
        if (c2 < w_ref) w_ref = c2;
    }
    for (int i = 0; !rc && i < T * V; i++) {
        if (i < P * V) prompt_same &= bf[i] == ex[i];
        else differs |= bf[i] != ex[i];
    }
    int auto_same = 0, auto_exact = -1, nodot_same = 0;
    if (!rc) rc = forward_run_dg(f, tok, T, P, &sa, rows, T, x, &e);
    if (!rc) { auto_exact = forward_sc_exact_rows(f); auto_same = !memcmp(x, bf, sizeof(float) * T * V); }
    ops_bf16_dot_allow(false);
    if (!rc) rc = forward_run_dg(f, tok, T, P, &sb, rows, T, x, &e);
    ops_bf16_dot_allow(true);
    if (!rc) nodot_same = !memcmp(x, bf, sizeof(float) * T * V);
    free(prev); free(ex); free(bf); free(rf); free(x);
    forward_free(f);
    forward_free(r);
    pool_free(pool);
    model_close(m);
    CHECK_MSG(rc == UM_OK, "%s", e.msg);
    printf("    bf16 vs float product: worst row cosine %.9f; fast vs reference path: %.9f\n", w_ex, w_ref);
    CHECK_MSG(w_ex > 0.9999, "bf16 too far from the float product: %.9f", w_ex);
    CHECK_MSG(w_ref > 0.999999, "bf16 fast path differs from its reference: %.9f", w_ref);
    CHECK_MSG(differs, "bf16 pass equals the float one bit for bit: not used?");
    CHECK_MSG(prompt_same, "self-conditioning changed prompt rows");
    CHECK_EQ(auto_exact, C);
    CHECK_MSG(auto_same, "auto's exact rows are not the bf16 product");
    CHECK_MSG(nodot_same, "the BF16 instruction and the FMA chain differ");
}
