/*
 * forward_blocks: the forward pass's building blocks (linear, grouped expert products, norms,
 * elementwise ops, row gathers), each on the fast path or the reference path, with the time
 * profile; and the dense / MoE SwiGLU feed-forward of the LLaDA-like architectures.
 * Declarations and the state they work on: forward_impl.h.
 */
#include "forward_impl.h"

#include <string.h>

#include "ops.h"
#include "quant.h"

/* ------------------------------------------------------------------ profile */

static const char *const part_names[UM_FW_PART_COUNT] = {
    [UM_FW_EMBED] = "embedding", [UM_FW_NORM] = "rmsnorm (+ qk-norm)", [UM_FW_QKV] = "attn q/k/v products",
    [UM_FW_ROPE] = "rope", [UM_FW_ATTN] = "attention (scores, softmax, values)", [UM_FW_WO] = "attn output product",
    [UM_FW_FFN_IN] = "ffn gate/up products", [UM_FW_ACT] = "swiglu", [UM_FW_FFN_DOWN] = "ffn down product",
    [UM_FW_ROUTE] = "moe routing, gather, combine", [UM_FW_ADD] = "residual adds",
    [UM_FW_HEAD] = "lm head product (+ final norm)", [UM_FW_KV] = "k/v cache (f16 store, load)",
    [UM_FW_GATHER] = "row gathers",
};

const char *forward_part_name(um_fw_part p) { return p >= 0 && p < UM_FW_PART_COUNT ? part_names[p] : "?"; }
void forward_profile(const um_forward *f, um_fw_profile *out) { *out = f->prof; }
void forward_profile_reset(um_forward *f) { memset(&f->prof, 0, sizeof f->prof); }

void fw_prof_begin(um_forward *f) {
    f->prof.passes++;
    pool_stats(f->ref ? NULL : f->pool, &f->pool_at_start);
    f->t_mark = um_now();
}

void fw_prof_end(um_forward *f) {
    um_pool_stats s;
    pool_stats(f->ref ? NULL : f->pool, &s);
    f->prof.dispatches += s.runs - f->pool_at_start.runs;
    f->prof.handoff_ms += (s.wait_s - f->pool_at_start.wait_s) * 1e3;
}

/* Charge the time since the last mark to part p. */
void fw_mark(um_forward *f, um_fw_part p) {
    double t = um_now();
    f->prof.ms[p] += (t - f->t_mark) * 1e3;
    f->t_mark = t;
}

/* ------------------------------------------------------------------ building blocks */

/* y (n, n_out) = x (n, n_in) W^T (+ bias) on the fast path, or the double-precision
 * reference over dequantized rows. */
void fw_linear(um_forward *f, const um_matmul_weights *mw, const um_weight *w, const float *x,
                   int64_t n, float *y, um_vec bias) {
    double t0 = um_now();
    f->prof.macs += (uint64_t)n * (uint64_t)w->n_in * (uint64_t)w->n_out;
    if (!f->ref) {
        matmul(f->pool, mw, x, n, y, f->scratch);
    } else {
        const um_type_traits *tr = um_traits(w->type);
        for (int64_t r = 0; r < w->n_out; r++) {
            tr->to_float_ref((const char *)w->data + (uint64_t)r * w->row_bytes, f->wrow_f, w->n_in);
            for (int64_t t = 0; t < n; t++) {
                const float *xt = x + t * w->n_in;
                double acc = 0;
                for (int64_t i = 0; i < w->n_in; i++) acc += (double)f->wrow_f[i] * xt[i];
                y[t * w->n_out + r] = (float)acc;
            }
        }
    }
    f->prof.matmul_ms += (um_now() - t0) * 1e3;
    if (bias) {
        if (f->ref) ops_add_bias_ref(y, y, bias, n, (int)w->n_out);
        else ops_add_bias(f->pool, y, y, bias, n, (int)w->n_out);
    }
}

/* The grouped expert products of an MoE layer (fast paths only): x (n, n_in) rows, k
 * choices each through f->ex_slot (k == 1: x is already in grouped-row order). */
void fw_grouped(um_forward *f, const um_matmul_group *g, int n_g, int n_expert, const float *x,
                    int64_t n, int k) {
    double t0 = um_now();
    for (int i = 0; i < n_g; i++)
        f->prof.macs += (uint64_t)n * (uint64_t)k * (uint64_t)g[i].w[0].n_in * (uint64_t)g[i].w[0].n_out;
    matmul_grouped(f->pool, g, n_g, n_expert, f->ex_off, x, n, k > 1 ? f->ex_slot : NULL, k, f->scratch);
    f->prof.matmul_ms += (um_now() - t0) * 1e3;
}

void fw_rmsnorm(um_forward *f, float *y, const float *x, const float *w, int64_t rows, int n) {
    if (f->ref) ops_rmsnorm_ref(y, x, w, rows, n, f->m->hp.norm_eps);
    else ops_rmsnorm(f->pool, y, x, w, rows, n, f->m->hp.norm_eps);
}

void fw_add(um_forward *f, float *y, const float *a, const float *b, int64_t n) {
    if (f->ref) ops_add_ref(y, a, b, n);
    else ops_add(f->pool, y, a, b, n);
}

void fw_swiglu(um_forward *f, float *y, const float *g, const float *u, int64_t n) {
    if (f->ref) ops_swiglu_ref(y, g, u, n);
    else ops_swiglu(f->pool, y, g, u, n);
}

void fw_gather(float *dst, const float *src, const int32_t *rows, int64_t n, int64_t width) {
    for (int64_t i = 0; i < n; i++) memcpy(dst + i * width, src + (int64_t)rows[i] * width, (size_t)width * sizeof(float));
}

/* Dense or MoE feed-forward on xn (n, E), result added into x (n, E). */
int fw_ffn(um_forward *f, int il, float *x, const float *xn, int n, um_err *e) {
    const um_model *m = f->m;
    const um_hparams *hp = &m->hp;
    const um_layer *l = &m->layers[il];
    const fw_layer *fl = f->layers ? &f->layers[il] : NULL;
    const int64_t E = hp->n_embd;
    if (!layer_moe(m, il)) {
        const int64_t F = hp->n_ff;
        fw_linear(f, fl ? &fl->gate : NULL, &l->ffn_gate, xn, n, f->ff_a, l->ffn_gate_b);
        fw_linear(f, fl ? &fl->up : NULL, &l->ffn_up, xn, n, f->ff_b, l->ffn_up_b);
        fw_mark(f, UM_FW_FFN_IN);
        fw_swiglu(f, f->ff_a, f->ff_a, f->ff_b, n * F);
        fw_mark(f, UM_FW_ACT);
        fw_linear(f, fl ? &fl->down : NULL, &l->ffn_down, f->ff_a, n, f->xn + 0, l->ffn_down_b);
        fw_mark(f, UM_FW_FFN_DOWN);
        fw_add(f, x, x, f->xn, n * E);
        fw_mark(f, UM_FW_ADD);
        return UM_OK;
    }
    const int K = hp->n_expert_used, X = hp->n_expert;
    const int64_t F = hp->n_ff_exp;
    fw_linear(f, fl ? &fl->router : NULL, &l->ffn_gate_inp, xn, n, f->router, NULL);
    um_moe_cfg cfg = {
        .n_expert = X, .k = K, .gating = hp->moe_sigmoid ? UM_MOE_SIGMOID : UM_MOE_SOFTMAX,
        .norm_topk = hp->moe_norm_w, .scale = hp->expert_weights_scale, .bias = l->exp_probs_b,
        .n_group = hp->n_expert_groups, .n_group_used = hp->n_group_used,
    };
    if (ops_moe_route(&cfg, f->router, n, f->ex_id, f->ex_w, e)) return UM_FAIL;
    if (ops_moe_group(f->ex_id, f->ex_w, n, K, X, f->ex_off, f->ex_tok, f->ex_roww, f->ex_slot, e)) return UM_FAIL;
    fw_mark(f, UM_FW_ROUTE);
    if (!f->ref) {
        /* every expert's rows in one pass per product (matmul_grouped): gate and up together */
        const um_matmul_group gu[2] = { { fl->gate_x, f->ff_a }, { fl->up_x, f->ff_b } };
        fw_grouped(f, gu, 2, X, xn, n, K);
        fw_mark(f, UM_FW_FFN_IN);
        fw_swiglu(f, f->ff_a, f->ff_a, f->ff_b, (int64_t)n * K * F);
        fw_mark(f, UM_FW_ACT);
        const um_matmul_group gd = { fl->down_x, f->ex_out };
        fw_grouped(f, &gd, 1, X, f->ff_a, (int64_t)n * K, 1);
        fw_mark(f, UM_FW_FFN_DOWN);
    }
    for (int ex = 0; f->ref && ex < X; ex++) {
        int64_t r0 = f->ex_off[ex], cnt = f->ex_off[ex + 1] - r0;
        if (!cnt) continue;
        float *in = f->gathered + r0 * E, *ga = f->ff_a + r0 * F, *up = f->ff_b + r0 * F;
        fw_gather(in, xn, f->ex_tok + r0, cnt, E);
        fw_mark(f, UM_FW_ROUTE);
        fw_linear(f, fl ? &fl->gate_x[ex] : NULL, &l->gate_exps[ex], in, cnt, ga, NULL);
        fw_linear(f, fl ? &fl->up_x[ex] : NULL, &l->up_exps[ex], in, cnt, up, NULL);
        fw_mark(f, UM_FW_FFN_IN);
        fw_swiglu(f, ga, ga, up, cnt * F);
        fw_mark(f, UM_FW_ACT);
        fw_linear(f, fl ? &fl->down_x[ex] : NULL, &l->down_exps[ex], ga, cnt, f->ex_out + r0 * E, NULL);
        fw_mark(f, UM_FW_FFN_DOWN);
    }
    if (f->ref) ops_moe_combine_ref(x, f->ex_out, f->ex_w, f->ex_slot, n, K, (int)E, true);
    else ops_moe_combine(f->pool, x, f->ex_out, f->ex_w, f->ex_slot, n, K, (int)E, true);
    fw_mark(f, UM_FW_ROUTE);
    if (l->ffn_gate_shexp.data) {
        /* shared experts: one always-on SwiGLU FFN over every row, added beside the routed sum */
        const int64_t FS = hp->n_ff_shexp;
        fw_linear(f, fl ? &fl->gate_sh : NULL, &l->ffn_gate_shexp, xn, n, f->ff_a, NULL);
        fw_linear(f, fl ? &fl->up_sh : NULL, &l->ffn_up_shexp, xn, n, f->ff_b, NULL);
        fw_mark(f, UM_FW_FFN_IN);
        fw_swiglu(f, f->ff_a, f->ff_a, f->ff_b, n * FS);
        fw_mark(f, UM_FW_ACT);
        fw_linear(f, fl ? &fl->down_sh : NULL, &l->ffn_down_shexp, f->ff_a, n, f->ex_out, NULL);
        fw_mark(f, UM_FW_FFN_DOWN);
        fw_add(f, x, x, f->ex_out, n * E);
        fw_mark(f, UM_FW_ADD);
    }
    return UM_OK;
}
