/*
 * ref_f64: an independent float64 forward pass for the tests (test_llada2.c, test_forward.c),
 * written from the families' published definitions, not from model.c or forward.c: weights are
 * read straight from the GGUF file (dequantized by the reference dequantizers, which
 * test_quant.c checks against llama.cpp's own fixtures), every product and nonlinearity in
 * double. The family facts are stated here, apart from src/model/arch.c:
 *   llada      Llama: RoPE on adjacent pairs, dense SwiGLU
 *   dream      Qwen2.5: NeoX RoPE, Q/K/V biases
 *   llada-moe  OLMoE: per-head QK-norm, NeoX RoPE, softmax router, top-k weights as they are
 *   rnd1       Qwen3-MoE: per-head QK-norm, NeoX RoPE, softmax router, top-k renormalised
 *   llada2     BailingMoeV2: fused QKV, per-head QK-norm, partial NeoX RoPE, dense lead layers,
 *              sigmoid router with selection bias, group-limited top-k, renormalised and scaled,
 *              shared experts, block-causal attention over blocks of 32 from position 0
 * Per layer: xn = rmsnorm(x) * attn_norm; q, k, v = xn W (+ b); q, k per head rmsnorm * q_norm
 * / k_norm where present; RoPE on the first n_rot dims; softmax(q k / sqrt(hd)) v (GQA) over
 * the keys the mask allows; x += att Wo (+ bo); xn = rmsnorm(x) * ffn_norm; x += FFN(xn);
 * logits = rmsnorm(x) * output_norm W_out (token_embd when output.weight is absent) (+ b).
 *
 * Besides the logits it reports, per row, the smallest routing margin over its MoE layers: the
 * gap between the last chosen and the first unchosen expert key (and, with groups, between the
 * last kept and first dropped group score). A fast path whose activations are rounded to int8
 * may route a row with a tiny margin differently: that row may then differ discontinuously,
 * every other row must not.
 *
 * Header-only (static functions), included by one test file each.
 */
#ifndef UM_TESTS_REF_F64_H
#define UM_TESTS_REF_F64_H

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf.h"
#include "quant.h"

typedef struct ref_model {
    const gguf_file *g;
    char arch[32];
    int E, L, H, HKV, HD, NROT, V, FF, X, K, FX, FS, NG, NGU, DENSE, B;
    bool neox, moe, sigmoid, renorm;
    double eps, base, scale;
} ref_model;

static uint32_t ref_key_u32(const ref_model *r, const char *suffix, uint32_t def) {
    char k[128];
    snprintf(k, sizeof k, "%s.%s", r->arch, suffix);
    uint32_t v;
    um_err e;
    return gguf_find_kv(r->g, k) && gguf_get_u32(r->g, k, &v, &e) == UM_OK ? v : def;
}

static double ref_key_f32(const ref_model *r, const char *suffix, double def) {
    char k[128];
    snprintf(k, sizeof k, "%s.%s", r->arch, suffix);
    float v;
    um_err e;
    return gguf_find_kv(r->g, k) && gguf_get_f32(r->g, k, &v, &e) == UM_OK ? v : def;
}

/* A tensor dequantized to doubles, row-major as stored (ne0 fastest); NULL if absent. */
static double *ref_tensor(const gguf_file *g, const char *name) {
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

static double *ref_layer(const ref_model *r, int il, const char *suffix) {
    char n[128];
    snprintf(n, sizeof n, "blk.%d.%s", il, suffix);
    return ref_tensor(r->g, n);
}

/* 0 when the file is not one of the five families. */
static int ref_init(ref_model *r, const gguf_file *g) {
    memset(r, 0, sizeof *r);
    r->g = g;
    um_err e;
    if (gguf_get_str(g, "general.architecture", r->arch, sizeof r->arch, &e)) return 0;
    const char *a = r->arch;
    if (strcmp(a, "llada") && strcmp(a, "dream") && strcmp(a, "llada-moe") && strcmp(a, "rnd1") && strcmp(a, "llada2"))
        return 0;
    r->neox = strcmp(a, "llada") != 0;
    r->moe = !strcmp(a, "llada-moe") || !strcmp(a, "rnd1") || !strcmp(a, "llada2");
    r->sigmoid = !strcmp(a, "llada2");
    r->renorm = !strcmp(a, "rnd1") || !strcmp(a, "llada2");
    r->B = !strcmp(a, "llada2") ? 32 : 0;            /* the family's block length; no key in these files */
    r->E = (int)ref_key_u32(r, "embedding_length", 0);
    r->L = (int)ref_key_u32(r, "block_count", 0);
    r->H = (int)ref_key_u32(r, "attention.head_count", 0);
    r->HKV = (int)ref_key_u32(r, "attention.head_count_kv", (uint32_t)r->H);
    r->HD = (int)ref_key_u32(r, "attention.key_length", r->H ? (uint32_t)(r->E / r->H) : 0);
    r->NROT = (int)ref_key_u32(r, "rope.dimension_count", (uint32_t)r->HD);
    r->FF = (int)ref_key_u32(r, "feed_forward_length", 0);
    r->X = (int)ref_key_u32(r, "expert_count", 0);
    r->K = (int)ref_key_u32(r, "expert_used_count", 0);
    r->FX = (int)ref_key_u32(r, "expert_feed_forward_length", r->K ? (uint32_t)(r->FF / r->K) : 0);
    r->FS = (int)ref_key_u32(r, "expert_shared_feed_forward_length", (uint32_t)r->FX) *
            (int)ref_key_u32(r, "expert_shared_count", 0);
    r->NG = (int)ref_key_u32(r, "expert_group_count", 0);
    r->NGU = (int)ref_key_u32(r, "expert_group_used_count", 0);
    r->DENSE = r->moe ? (int)ref_key_u32(r, "leading_dense_block_count", 0) : r->L;
    r->eps = ref_key_f32(r, "attention.layer_norm_rms_epsilon", 1e-6);
    r->base = ref_key_f32(r, "rope.freq_base", 10000.0);
    r->scale = ref_key_f32(r, "expert_weights_scale", 0.0);
    if (r->scale == 0) r->scale = 1.0;
    r->V = (int)gguf_find_tensor(g, "token_embd.weight")->ne[1];
    return 1;
}

/* y (n_out) = W (n_out rows of n_in) x (+ b) */
static void ref_matvec(double *y, const double *W, const double *x, const double *b, int n_in, int n_out) {
    for (int o = 0; o < n_out; o++) {
        double s = b ? b[o] : 0;
        for (int i = 0; i < n_in; i++) s += W[(int64_t)o * n_in + i] * x[i];
        y[o] = s;
    }
}

static void ref_rmsnorm(double *y, const double *x, const double *w, int n, double eps) {
    double ss = 0;
    for (int i = 0; i < n; i++) ss += x[i] * x[i];
    double inv = 1.0 / sqrt(ss / n + eps);
    for (int i = 0; i < n; i++) y[i] = x[i] * inv * (w ? w[i] : 1.0);
}

/* RoPE on the first n_rot dims at angle pos * base^(-2i/n_rot): NeoX pairs (i, i + n_rot/2),
 * else adjacent pairs (2i, 2i + 1) */
static void ref_rope(double *v, int pos, int n_rot, double base, bool neox) {
    for (int i = 0; i < n_rot / 2; i++) {
        double th = pos * pow(base, -2.0 * i / n_rot), c = cos(th), s = sin(th);
        int ia = neox ? i : 2 * i, ib = neox ? i + n_rot / 2 : 2 * i + 1;
        double a = v[ia], b = v[ib];
        v[ia] = a * c - b * s;
        v[ib] = a * s + b * c;
    }
}

static double ref_silu(double x) { return x / (1.0 + exp(-x)); }

/* y += wt * (Wd (silu(Wg x + bg) * (Wu x + bu)) + bd) with width F */
static void ref_swiglu(double *y, const double *Wg, const double *Wu, const double *Wd, const double *bg,
                       const double *bu, const double *bd, const double *x, int E, int F, double wt) {
    double *a = malloc(sizeof(double) * F), *b = malloc(sizeof(double) * F), *o = malloc(sizeof(double) * E);
    ref_matvec(a, Wg, x, bg, E, F);
    ref_matvec(b, Wu, x, bu, E, F);
    for (int i = 0; i < F; i++) a[i] = ref_silu(a[i]) * b[i];
    ref_matvec(o, Wd, a, bd, F, E);
    for (int i = 0; i < E; i++) y[i] += wt * o[i];
    free(a); free(b); free(o);
}

/* One MoE layer's weights, dequantized once. */
typedef struct ref_moe_w { double *wr, *bias, *ge, *ue, *de, *gs, *us, *ds; } ref_moe_w;

static ref_moe_w ref_moe_load(const ref_model *r, int il) {
    ref_moe_w w = { ref_layer(r, il, "ffn_gate_inp.weight"), ref_layer(r, il, "exp_probs_b.bias"),
                    ref_layer(r, il, "ffn_gate_exps.weight"), ref_layer(r, il, "ffn_up_exps.weight"),
                    ref_layer(r, il, "ffn_down_exps.weight"), ref_layer(r, il, "ffn_gate_shexp.weight"),
                    ref_layer(r, il, "ffn_up_shexp.weight"), ref_layer(r, il, "ffn_down_shexp.weight") };
    return w;
}

static void ref_moe_free(ref_moe_w *w) {
    free(w->wr); free(w->bias); free(w->ge); free(w->ue); free(w->de); free(w->gs); free(w->us); free(w->ds);
}

/* One MoE FFN for one row: y += ...; returns the row's routing margin in this layer. */
static double ref_moe(const ref_model *r, const ref_moe_w *w, double *y, const double *xn) {
    const int E = r->E, X = r->X;
    const double *wr = w->wr, *bias = w->bias, *ge = w->ge, *ue = w->ue, *de = w->de;
    const double *gs = w->gs, *us = w->us, *ds = w->ds;
    double *p = malloc(sizeof(double) * X), *key = malloc(sizeof(double) * X);
    ref_matvec(p, wr, xn, NULL, E, X);
    if (r->sigmoid) {
        for (int e = 0; e < X; e++) p[e] = 1.0 / (1.0 + exp(-p[e]));
    } else {
        double mx = -INFINITY, sum = 0;
        for (int e = 0; e < X; e++) if (p[e] > mx) mx = p[e];
        for (int e = 0; e < X; e++) sum += (p[e] = exp(p[e] - mx));
        for (int e = 0; e < X; e++) p[e] /= sum;
    }
    for (int e = 0; e < X; e++) key[e] = p[e] + (bias ? bias[e] : 0);
    double margin = INFINITY;
    int on[256];
    const int per = r->NG > 1 ? X / r->NG : X;
    for (int gi = 0; gi < 256; gi++) on[gi] = r->NG > 1 ? 0 : 1;
    if (r->NG > 1) {                       /* groups: the sum of their two best keys; NGU best kept */
        double gsc[256];
        for (int gi = 0; gi < r->NG; gi++) {
            double b1 = -INFINITY, b2 = -INFINITY;
            for (int e = gi * per; e < (gi + 1) * per; e++) {
                if (key[e] > b1) { b2 = b1; b1 = key[e]; } else if (key[e] > b2) b2 = key[e];
            }
            gsc[gi] = per > 1 ? b1 + b2 : b1;
        }
        double last = 0;
        for (int u = 0; u <= r->NGU && u < r->NG; u++) {
            int best = -1;
            for (int gi = 0; gi < r->NG; gi++) if (!on[gi] && (best < 0 || gsc[gi] > gsc[best])) best = gi;
            if (u < r->NGU) { on[best] = 1; last = gsc[best]; }
            else margin = fmin(margin, last - gsc[best]);
        }
    }
    int chosen[64];
    double last = 0;
    for (int c = 0; c <= r->K; c++) {
        int best = -1;
        for (int e = 0; e < X; e++) {
            if (!on[e / per]) continue;
            int used = 0;
            for (int c2 = 0; c2 < c && c2 < r->K; c2++) used |= chosen[c2] == e;
            if (!used && (best < 0 || key[e] > key[best])) best = e;
        }
        if (c < r->K) { chosen[c] = best; last = key[best]; }
        else if (best >= 0) margin = fmin(margin, last - key[best]);
    }
    double psum = 0;
    for (int c = 0; c < r->K; c++) psum += p[chosen[c]];
    const int64_t ex = (int64_t)r->FX * E;          /* one expert's gate/up (FX, E), down (E, FX) */
    for (int c = 0; c < r->K; c++) {
        int e = chosen[c];
        double wt = (r->renorm ? p[e] / psum : p[e]) * r->scale;
        ref_swiglu(y, ge + e * ex, ue + e * ex, de + e * ex, NULL, NULL, NULL, xn, E, r->FX, wt);
    }
    if (gs) ref_swiglu(y, gs, us, ds, NULL, NULL, NULL, xn, E, r->FS, 1.0);
    free(p); free(key);
    return margin;
}

/* logits (T, V) of the canvas tokens[0..T); margin (T): each row's smallest routing margin
 * (INFINITY for a dense model); margin may be NULL. */
static void ref_forward(const ref_model *r, const int32_t *tok, int T, double *logits, double *margin) {
    const int E = r->E, HD = r->HD, NQ = r->H * HD, NKV = r->HKV * HD;
    double *x = calloc((size_t)T * E, sizeof(double)), *xn = malloc(sizeof(double) * E);
    double *q = malloc(sizeof(double) * (size_t)T * NQ), *k = malloc(sizeof(double) * (size_t)T * NKV);
    double *v = malloc(sizeof(double) * (size_t)T * NKV), *qkv = malloc(sizeof(double) * (NQ + 2 * NKV));
    double *att = malloc(sizeof(double) * NQ), *o = malloc(sizeof(double) * E), *sc = malloc(sizeof(double) * T);
    double *emb = ref_tensor(r->g, "token_embd.weight");
    for (int t = 0; t < T; t++) memcpy(x + (int64_t)t * E, emb + (int64_t)tok[t] * E, sizeof(double) * E);
    for (int t = 0; margin && t < T; t++) margin[t] = INFINITY;
    for (int il = 0; il < r->L; il++) {
        double *an = ref_layer(r, il, "attn_norm.weight"), *wqkv = ref_layer(r, il, "attn_qkv.weight");
        double *wq = ref_layer(r, il, "attn_q.weight"), *wk = ref_layer(r, il, "attn_k.weight");
        double *wv = ref_layer(r, il, "attn_v.weight");
        double *bq = ref_layer(r, il, "attn_q.bias"), *bk = ref_layer(r, il, "attn_k.bias");
        double *bv = ref_layer(r, il, "attn_v.bias"), *bo = ref_layer(r, il, "attn_output.bias");
        double *qn = ref_layer(r, il, "attn_q_norm.weight"), *kn = ref_layer(r, il, "attn_k_norm.weight");
        double *wo = ref_layer(r, il, "attn_output.weight"), *fn = ref_layer(r, il, "ffn_norm.weight");
        for (int t = 0; t < T; t++) {
            ref_rmsnorm(xn, x + (int64_t)t * E, an, E, r->eps);
            if (wqkv) ref_matvec(qkv, wqkv, xn, NULL, E, NQ + 2 * NKV);     /* rows Q, then K, then V */
            else {
                ref_matvec(qkv, wq, xn, bq, E, NQ);
                ref_matvec(qkv + NQ, wk, xn, bk, E, NKV);
                ref_matvec(qkv + NQ + NKV, wv, xn, bv, E, NKV);
            }
            for (int h = 0; h < r->H; h++) {
                double *qh = q + (int64_t)t * NQ + h * HD;
                if (qn) ref_rmsnorm(qh, qkv + h * HD, qn, HD, r->eps);
                else memcpy(qh, qkv + h * HD, sizeof(double) * HD);
                ref_rope(qh, t, r->NROT, r->base, r->neox);
            }
            for (int h = 0; h < r->HKV; h++) {
                double *kh = k + (int64_t)t * NKV + h * HD;
                if (kn) ref_rmsnorm(kh, qkv + NQ + h * HD, kn, HD, r->eps);
                else memcpy(kh, qkv + NQ + h * HD, sizeof(double) * HD);
                ref_rope(kh, t, r->NROT, r->base, r->neox);
                memcpy(v + (int64_t)t * NKV + h * HD, qkv + NQ + NKV + h * HD, sizeof(double) * HD);
            }
        }
        /* every row reads the pre-attention state through q, k, v only: x is updated in place */
        for (int t = 0; t < T; t++) {
            int n_keys = r->B ? (t / r->B + 1) * r->B : T;
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
            ref_matvec(o, wo, att, bo, NQ, E);
            for (int i = 0; i < E; i++) x[(int64_t)t * E + i] += o[i];
        }
        if (il < r->DENSE) {
            double *wg = ref_layer(r, il, "ffn_gate.weight"), *wu = ref_layer(r, il, "ffn_up.weight");
            double *wd = ref_layer(r, il, "ffn_down.weight"), *bg = ref_layer(r, il, "ffn_gate.bias");
            double *bu = ref_layer(r, il, "ffn_up.bias"), *bd = ref_layer(r, il, "ffn_down.bias");
            for (int t = 0; t < T; t++) {
                ref_rmsnorm(xn, x + (int64_t)t * E, fn, E, r->eps);
                ref_swiglu(x + (int64_t)t * E, wg, wu, wd, bg, bu, bd, xn, E, r->FF, 1.0);
            }
            free(wg); free(wu); free(wd); free(bg); free(bu); free(bd);
        } else {
            ref_moe_w w = ref_moe_load(r, il);
            for (int t = 0; t < T; t++) {
                ref_rmsnorm(xn, x + (int64_t)t * E, fn, E, r->eps);
                double m = ref_moe(r, &w, x + (int64_t)t * E, xn);
                if (margin && m < margin[t]) margin[t] = m;
            }
            ref_moe_free(&w);
        }
        free(an); free(wqkv); free(wq); free(wk); free(wv); free(bq); free(bk); free(bv); free(bo);
        free(qn); free(kn); free(wo); free(fn);
    }
    double *on = ref_tensor(r->g, "output_norm.weight"), *wout = ref_tensor(r->g, "output.weight");
    double *bout = ref_tensor(r->g, "output.bias");
    for (int t = 0; t < T; t++) {
        ref_rmsnorm(xn, x + (int64_t)t * E, on, E, r->eps);
        ref_matvec(logits + (int64_t)t * r->V, wout ? wout : emb, xn, bout, E, r->V);
    }
    free(on); free(wout); free(bout); free(emb);
    free(x); free(xn); free(q); free(k); free(v); free(qkv); free(att); free(o); free(sc);
}

static double ref_cosine(const float *a, const double *b, int n) {
    double ab = 0, aa = 0, bb = 0;
    for (int i = 0; i < n; i++) { ab += a[i] * b[i]; aa += (double)a[i] * a[i]; bb += b[i] * b[i]; }
    return ab / sqrt(aa * bb);
}

#endif
