/*
 * forward_gemma: the DiffusionGemma forward pass, one region-aware pass over [prompt | canvas]
 * on the Gemma 4 MoE backbone, as llama.cpp's port computes it (unslothai/llama.cpp refs/pins/
 * c3fb9724, src/models/diffusion-gemma.cpp and gemma4-common.h; the same model as transformers'
 * modeling_diffusion_gemma.py runs as a causal encoder plus a bidirectional decoder).
 *
 * With P prompt rows, C = T - P canvas rows, E = n_embd, per layer il (its own head size hd,
 * K/V heads, RoPE dims and base; sliding or global):
 *   x    = embed(tokens) * sqrt(E);  canvas rows: x = rmsnorm_noscale(x + SC(prev logits))
 *   xn   = rmsnorm(x) * attn_norm
 *   q, k = xn Wq, xn Wk;  v = xn Wv, or the raw k where the layer has no attn_v (global)
 *   q, k = rmsnorm per head * q_norm / k_norm;  v = rmsnorm_noscale per head;  NeoX RoPE on q, k
 *          (global layers divide each pair's angle by rope_freqs: proportional RoPE)
 *   att  = softmax(q k^T) v  (scale 1) over the region mask: a prompt row t sees prompt rows
 *          [t - n_swa + 1 (sliding) or 0, t]; a canvas row sees every canvas row and the prompt
 *          rows from P - n_swa + 1 (sliding) or 0
 *   r    = x + rmsnorm(att Wo) * post_attention_norm
 *   mlp  = rmsnorm(W_down(gelu(W_g h) * W_u h)) * post_ffw_norm_1,  h = rmsnorm(r) * ffn_norm
 *   moe  = rmsnorm(sum_k w_k s_k expert_k(rmsnorm(r) * pre_ffw_norm_2)) * post_ffw_norm_2, the
 *          top-k of softmax(W_router (rmsnorm_noscale(r) / sqrt(E) * ffn_gate_inp.scale)), w
 *          renormalised, s = ffn_down_exps.scale, experts GeGLU
 *   x    = (r + rmsnorm(mlp + moe) * post_ffw_norm) * (prompt rows: enc scalar, canvas: scalar)
 * then logits = softcap(rmsnorm(x) * output_norm  token_embd^T).
 * Every row goes through every layer (the canvas needs all its rows). The prompt's K/V are
 * exact whatever the canvas holds, since no prompt row sees the canvas: the prompt pass
 * (forward_dg_prompt) runs the prompt alone and stores them, and a canvas pass
 * (forward_run_dg_cached) runs only the canvas rows against them, as the port's PREFILL and
 * DECODE phases do (diffusion-gemma.cpp).
 */
#include "forward_impl.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops.h"
#include "quant.h"

/* ------------------------------------------------------------------ self-conditioning */

/* One embedding row as floats: the type's reference decoder on the reference path, else the
 * SIMD one where the kernel set has it (the same bits: ops_dequant_row). */
static void embd_row(const um_forward *f, int64_t v, float *out) {
    const um_weight *w = &f->m->tok_embd;
    const char *src = (const char *)w->data + (uint64_t)v * w->row_bytes;
    if (f->ref) um_traits(w->type)->to_float_ref(src, out, w->n_in);
    else ops_dequant_row(w->type, src, out, w->n_in);
}

typedef struct sc_job {
    um_forward        *f;
    const um_selfcond *sc;
    int                n_vocab, E;
} sc_job;

/* p = softmax(z / temp) as llama.cpp forms it (scale by 1/temp, then ggml's soft_max: max,
 * expf, sum in double): p[v] = expf(z[v] / temp - mx) * inv. Returns the sum of
 * exp(z/temp - max) for the caller's tail mass; *mx_out and *inv_out get mx and inv. */
static double sc_softmax(const float *z, float inv_t, int V, float *p, float *mx_out, float *inv_out, bool ref) {
    float mx = -INFINITY;
    for (int v = 0; v < V; v++) { p[v] = z[v] * inv_t; if (p[v] > mx) mx = p[v]; }
    /* the reference's expf, or the kernel set's exp (sc_blk_fill forms the same) */
    const double sum = ref ? ops_exp_shift_ref(p, V, mx) : ops_exp_shift(p, V, mx);
    float inv = (float)(1.0 / sum);
    for (int v = 0; v < V; v++) p[v] *= inv;
    *mx_out = mx;
    *inv_out = inv;
    return sum;
}

/* Exact: soft[c] = sum_v p[v] emb[v] over the whole vocabulary, in vocabulary order. The
 * reference path sums in double here, row by row, from the probabilities p (V) of the row.
 * The fast path only marks the row and keeps its softmax max and 1/sum (sc_softmax's mx,
 * inv): sc_exact_blocked sums every marked row at once. With sc->bf16 both paths form
 * ops_gemm_bf16_acc's sums: BF16 values, in float, a pair of vocabulary rows at a time. */
static void sc_exact_from(const sc_job *j, int64_t c, float *p, float *row, float mx, float inv) {
    um_forward *f = j->f;
    const int V = j->n_vocab, E = j->E;
    f->sc_exact[c] = 1;
    if (!f->ref) {
        f->sc_mx[c] = mx;
        f->sc_inv[c] = inv;
        return;
    }
    float *out = f->sc_soft + c * E;
    if (j->sc->bf16) {              /* the fast path's rounding and chain, one row at a time */
        float *ev = (float *)f->wrow, *od = ev + E;     /* wrow: max_in doubles >= 2 E floats */
        for (int i = 0; i < E; i++) out[i] = 0;
        for (int v = 0; v < V; v += 2) {
            const float pe = um_bf16_to_fp32(ops_bf16_round(p[v])), po = v + 1 < V ? um_bf16_to_fp32(ops_bf16_round(p[v + 1])) : 0.0f;
            if (pe == 0 && po == 0) continue;
            embd_row(f, v, ev);
            if (v + 1 < V) embd_row(f, v + 1, od);
            for (int i = 0; i < E; i++) {
                const float eo = v + 1 < V ? um_bf16_to_fp32(ops_bf16_round(od[i])) : 0.0f;
                out[i] = fmaf(pe, um_bf16_to_fp32(ops_bf16_round(ev[i])), fmaf(po, eo, out[i]));
            }
        }
        return;
    }
    double *acc = f->wrow;
    for (int i = 0; i < E; i++) acc[i] = 0;
    for (int v = 0; v < V; v++) {
        if (p[v] == 0) continue;
        embd_row(f, v, row);
        for (int i = 0; i < E; i++) acc[i] += (double)p[v] * row[i];
    }
    for (int i = 0; i < E; i++) out[i] = (float)acc[i];
}

static void sc_exact_row(void *arg, int64_t c, int tid) {
    const sc_job *j = arg;
    um_forward *f = j->f;
    const int V = j->n_vocab, E = j->E;
    float *p = f->sc_p + (int64_t)tid * (V + E), mx, inv;
    sc_softmax(j->sc->logits + c * V, 1.0f / j->sc->temp, V, p, &mx, &inv, f->ref);
    sc_exact_from(j, c, p, p + V, mx, inv);
}

/* The fast path's exact product for the marked rows, a block of UM_SC_BLOCK vocabulary rows
 * at a time: the block's embedding rows are dequantized once (not once per canvas row, which
 * on a 262K vocabulary was most of a step) and its probabilities recomputed from the row's
 * max and sum (the same expf as sc_softmax, so the same values); then Y += P_block E_block,
 * each sum a chain of fused multiply-adds in vocabulary order (ops_gemm_acc). */
typedef struct sc_blk_job {
    um_forward  *f;
    const float *logits;
    float        inv_t;
    int          V, E, nx, nv, n_deq;
    int64_t      v0;
    bool         bf16;          /* also pack the block into sc_pb16 / sc_eb16 (kp pairs) */
} sc_blk_job;

#define SC_DEQ_ROWS 16

static void sc_blk_fill(void *arg, int64_t i, int tid) {
    const sc_blk_job *j = arg;
    um_forward *f = j->f;
    if (i < j->n_deq) {
        const int r0 = (int)i * SC_DEQ_ROWS, r1 = (int)UM_MIN((i + 1) * SC_DEQ_ROWS, j->nv);
        for (int r = r0; r < r1; r++) embd_row(f, j->v0 + r, f->sc_eb + (int64_t)r * j->E);
        for (int r = r0; j->bf16 && r < r1; r += 2)     /* SC_DEQ_ROWS is even: whole pairs */
            ops_bf16_pack_b(f->sc_eb16, (j->nv + 1) / 2, r / 2, f->sc_eb + (int64_t)r * j->E,
                            r + 1 < r1 ? f->sc_eb + (int64_t)(r + 1) * j->E : NULL, j->E);
        return;
    }
    const int r = (int)(i - j->n_deq), c = f->sc_rows[r];
    const float *z = j->logits + (int64_t)c * j->V + j->v0;
    const float mx = f->sc_mx[c], inv = f->sc_inv[c];
    float *pb = f->sc_pb + (int64_t)r * UM_SC_BLOCK;
    /* the row's probabilities of this block, formed as sc_softmax formed them (the same exp
     * of the same scaled logits), so the sums match the row's max and 1/sum */
    for (int k = 0; k < j->nv; k++) pb[k] = z[k] * j->inv_t;
    ops_exp_shift(pb, j->nv, mx);
    for (int k = 0; k < j->nv; k++) pb[k] *= inv;
    if (j->bf16) {
        if (j->nv % 2) pb[j->nv] = 0;                 /* the last pair's missing half */
        ops_bf16_pairs(f->sc_pb16 + (int64_t)r * (UM_SC_BLOCK / 2), pb, (j->nv + 1) / 2);
    }
}

static void sc_exact_blocked(um_forward *f, const um_selfcond *sc, int NC) {
    const int V = f->m->hp.n_vocab, E = f->m->hp.n_embd;
    int nx = 0;
    for (int c = 0; c < NC; c++)
        if (f->sc_exact[c]) f->sc_rows[nx++] = c;
    if (!nx) return;
    memset(f->sc_y, 0, sizeof(float) * (size_t)nx * E);
    sc_blk_job j = { f, sc->logits, 1.0f / sc->temp, V, E, nx, 0, 0, 0, sc->bf16 };
    for (int64_t v0 = 0; v0 < V; v0 += UM_SC_BLOCK) {
        j.v0 = v0;
        j.nv = (int)UM_MIN(UM_SC_BLOCK, V - v0);
        j.n_deq = (j.nv + SC_DEQ_ROWS - 1) / SC_DEQ_ROWS;
        pool_for(f->pool, j.n_deq + nx, sc_blk_fill, &j);
        if (sc->bf16) ops_gemm_bf16_acc(f->pool, f->sc_y, E, f->sc_pb16, UM_SC_BLOCK / 2, f->sc_eb16, nx, (j.nv + 1) / 2, E);
        else ops_gemm_acc(f->pool, f->sc_y, E, f->sc_pb, UM_SC_BLOCK, f->sc_eb, E, nx, j.nv, E);
    }
    for (int r = 0; r < nx; r++) memcpy(f->sc_soft + (int64_t)f->sc_rows[r] * E, f->sc_y + (int64_t)r * E, sizeof(float) * E);
}

/* Before: a ranks below b (smaller probability, ties: the larger id ranks lower). */
static bool sc_below(const float *p, int32_t a, int32_t b) { return p[a] < p[b] || (p[a] == p[b] && a > b); }

/* Top-k: the k largest probabilities exactly (a min-heap over one pass), the tail's mass
 * spread evenly over the other V - k tokens, whose embedding sum is the column sum less the
 * kept rows: soft = sum_j p_j e_j + tail / (V - k) (colsum - sum_j e_j). */
static void sc_topk_row(void *arg, int64_t c, int tid) {
    const sc_job *j = arg;
    um_forward *f = j->f;
    const int V = j->n_vocab, E = j->E, K = j->sc->top_k;
    float *p = f->sc_p + (int64_t)tid * (V + E), *row = p + V, mx, inv;
    float *out = f->sc_soft + c * E;
    sc_softmax(j->sc->logits + c * V, 1.0f / j->sc->temp, V, p, &mx, &inv, f->ref);
    int32_t heap[UM_SC_MAX_TOPK];
    int n = 0;
    for (int32_t v = 0; v < V; v++) {
        int i;
        if (n < K) {
            i = n++;
            heap[i] = v;
            while (i > 0 && sc_below(p, heap[i], heap[(i - 1) / 2])) {
                int par = (i - 1) / 2;
                int32_t t = heap[par]; heap[par] = heap[i]; heap[i] = t; i = par;
            }
        } else if (sc_below(p, heap[0], v)) {
            heap[0] = v;
            for (i = 0;;) {
                int l = 2 * i + 1, r = l + 1, s = i;
                if (l < n && sc_below(p, heap[l], heap[s])) s = l;
                if (r < n && sc_below(p, heap[r], heap[s])) s = r;
                if (s == i) break;
                int32_t t = heap[s]; heap[s] = heap[i]; heap[i] = t; i = s;
            }
        }
    }
    double mass = 0;
    for (int k = 0; k < n; k++) mass += p[heap[k]];
    if (j->sc->mode == UM_SC_AUTO && 1.0 - mass > (j->sc->tail_max > 0 ? j->sc->tail_max : UM_SC_AUTO_TAIL)) {
        sc_exact_from(j, c, p, row, mx, inv);   /* too much mass outside the top k: the exact product */
        return;
    }
    const double share = V > n && mass < 1.0 ? (1.0 - mass) / (double)(V - n) : 0.0;
    for (int i = 0; i < E; i++) out[i] = (float)(share * f->sc_colsum[i]);
    for (int k = 0; k < n; k++) {
        embd_row(f, heap[k], row);
        const float w = (float)((double)p[heap[k]] - share);
        for (int i = 0; i < E; i++) out[i] += w * row[i];
    }
}

/* Sum of every embedding row, once per forward state (the top-k tail's mean). */
static void sc_colsum(um_forward *f) {
    if (f->sc_colsum_ok) return;
    const um_model *m = f->m;
    const int E = m->hp.n_embd;
    float *row = f->sc_p + m->hp.n_vocab;
    for (int i = 0; i < E; i++) f->sc_colsum[i] = 0;
    for (int64_t v = 0; v < m->hp.n_vocab; v++) {
        embd_row(f, v, row);
        for (int i = 0; i < E; i++) f->sc_colsum[i] += row[i];
    }
    f->sc_colsum_ok = true;
}

/* x (NC, E) += SC MLP of the soft embeddings of the canvas rows. */
static int self_condition(um_forward *f, const um_selfcond *sc, float *x, int NC, um_err *e) {
    const um_model *m = f->m;
    const int E = m->hp.n_embd, V = m->hp.n_vocab;
    const int64_t FF = m->hp.n_ff;
    sc_job j = { f, sc, V, E };
    memset(f->sc_exact, 0, (size_t)NC);
    if (sc->mode != UM_SC_EXACT) {
        sc_colsum(f);
        pool_for(f->ref ? NULL : f->pool, NC, sc_topk_row, &j);
    } else {
        pool_for(f->ref ? NULL : f->pool, NC, sc_exact_row, &j);
    }
    if (!f->ref) sc_exact_blocked(f, sc, NC);
    f->sc_exact_rows = 0;
    for (int c = 0; c < NC; c++) f->sc_exact_rows += f->sc_exact[c];
    const float es = sqrtf((float)E);
    for (int64_t i = 0; i < (int64_t)NC * E; i++) f->sc_soft[i] *= es;
    fw_mark(f, UM_FW_EMBED);
    fw_rmsnorm(f, f->sc_soft, f->sc_soft, m->sc_pre_norm, NC, E);
    fw_linear(f, &f->sc_gate, &m->sc_gate, f->sc_soft, NC, f->ff_a, NULL);
    fw_linear(f, &f->sc_up, &m->sc_up, f->sc_soft, NC, f->ff_b, NULL);
    if (f->ref) ops_geglu_ref(f->ff_a, f->ff_a, f->ff_b, NC * FF);
    else ops_geglu(f->pool, f->ff_a, f->ff_a, f->ff_b, NC * FF);
    fw_linear(f, &f->sc_down, &m->sc_down, f->ff_a, NC, f->sc_soft, NULL);
    fw_add(f, x, x, f->sc_soft, (int64_t)NC * E);
    fw_mark(f, UM_FW_EMBED);
    (void)e;
    return UM_OK;
}

/* ------------------------------------------------------------------ layer parts */

static void scale_rows(float *x, int64_t n_rows, int E, float s) {
    for (int64_t i = 0; i < n_rows * E; i++) x[i] *= s;
}

void forward_dg_key_range(int t, int T, int P, int n_swa, bool swa, int32_t *lo, int32_t *hi) {
    if (t < P) {                    /* prompt: causal over the prompt; sliding: is_masked_swa, q - k >= n_swa */
        *lo = swa ? UM_MAX(0, t - n_swa + 1) : 0;
        *hi = t + 1;
    } else {                        /* canvas: all of it, and the prompt (sliding: canvas_prompt_lo = P - n_swa + 1) */
        *lo = swa ? UM_MAX(0, P - n_swa + 1) : 0;
        *hi = T;
    }
}

/* The routed experts of layer il on r (T, E) into f->moe_out (T, E), before post_ffw_norm_2. */
static int experts(um_forward *f, int il, const float *r, int T, um_err *e) {
    const um_model *m = f->m;
    const um_hparams *hp = &m->hp;
    const um_layer *l = &m->layers[il];
    const fw_layer *fl = f->layers ? &f->layers[il] : NULL;
    const int E = hp->n_embd, K = hp->n_expert_used, X = hp->n_expert;
    const int64_t F = hp->n_ff_exp;
    float *rin = f->att, *xin = f->hidden;       /* scratch: the attention output is consumed */
    /* router input: rmsnorm_noscale(r) * 1/sqrt(E) * ffn_gate_inp.scale (gemma4_build_ffn_moe) */
    fw_rmsnorm(f, rin, r, NULL, T, E);
    const float inv = 1.0f / sqrtf((float)E);
    for (int t = 0; t < T; t++)
        for (int i = 0; i < E; i++) rin[(int64_t)t * E + i] = (rin[(int64_t)t * E + i] * inv) * l->ffn_gate_inp_s[i];
    fw_linear(f, fl ? &fl->router : NULL, &l->ffn_gate_inp, rin, T, f->router, NULL);
    um_moe_cfg cfg = { .n_expert = X, .k = K, .gating = UM_MOE_SOFTMAX, .norm_topk = true, .scale = 0.0f };
    if (ops_moe_route(&cfg, f->router, T, f->ex_id, f->ex_w, e)) return UM_FAIL;
    if (l->down_exps_s)             /* per-expert output scale, folded into the combine weights */
        for (int64_t i = 0; i < (int64_t)T * K; i++) f->ex_w[i] *= l->down_exps_s[f->ex_id[i]];
    if (ops_moe_group(f->ex_id, f->ex_w, T, K, X, f->ex_off, f->ex_tok, f->ex_roww, f->ex_slot, e)) return UM_FAIL;
    fw_mark(f, UM_FW_ROUTE);
    fw_rmsnorm(f, xin, r, l->ffn_pre_norm_2, T, E);
    fw_mark(f, UM_FW_NORM);
    if (!f->ref) {
        const um_matmul_group gu[2] = { { fl->gate_x, f->ff_a }, { fl->up_x, f->ff_b } };
        fw_grouped(f, gu, 2, X, xin, T, K);
        fw_mark(f, UM_FW_FFN_IN);
        ops_geglu(f->pool, f->ff_a, f->ff_a, f->ff_b, (int64_t)T * K * F);
        fw_mark(f, UM_FW_ACT);
        const um_matmul_group gd = { fl->down_x, f->ex_out };
        fw_grouped(f, &gd, 1, X, f->ff_a, (int64_t)T * K, 1);
        fw_mark(f, UM_FW_FFN_DOWN);
        ops_moe_combine(f->pool, f->moe_out, f->ex_out, f->ex_w, f->ex_slot, T, K, E, false);
    } else {
        for (int ex = 0; ex < X; ex++) {
            int64_t r0 = f->ex_off[ex], cnt = f->ex_off[ex + 1] - r0;
            if (!cnt) continue;
            float *in = f->gathered + r0 * E, *ga = f->ff_a + r0 * F, *up = f->ff_b + r0 * F;
            fw_gather(in, xin, f->ex_tok + r0, cnt, E);
            fw_linear(f, NULL, &l->gate_exps[ex], in, cnt, ga, NULL);
            fw_linear(f, NULL, &l->up_exps[ex], in, cnt, up, NULL);
            ops_geglu_ref(ga, ga, up, cnt * F);
            fw_linear(f, NULL, &l->down_exps[ex], ga, cnt, f->ex_out + r0 * E, NULL);
        }
        ops_moe_combine_ref(f->moe_out, f->ex_out, f->ex_w, f->ex_slot, T, K, E, false);
    }
    fw_mark(f, UM_FW_ROUTE);
    return UM_OK;
}

/* Where the rows of one pass sit: the N rows carried through the layers are the pass's
 * positions [r0, r0 + N) of T (keys), the first P of which are the prompt. A full pass
 * carries every row (r0 = 0, N = T); the prompt pass (fill) carries the prompt alone
 * (N = T = P) and stores each layer's K/V of it; a canvas pass carries the canvas rows
 * (r0 = P, N = T - P) and reads the prompt's K/V from that store. */
typedef struct fwg_rows {
    int  r0, N, T, P;
    bool fill, cached;
} fwg_rows;

/* Layer il's K (or V) rows in the prompt store: (max_tokens, n_head_kv * head_dim). */
static float *pc_layer(const um_forward *f, float *base, int il) {
    return base + (int64_t)f->max_tokens * f->pc_off[il];
}

/* Attention block of layer il: x (N, E) in, f->resid = x + post-normed attention out. */
static int attention(um_forward *f, int il, const fwg_rows *g, um_err *e) {
    const um_model *m = f->m;
    const um_hparams *hp = &m->hp;
    const um_layer *l = &m->layers[il];
    const fw_layer *fl = f->layers ? &f->layers[il] : NULL;
    const int E = hp->n_embd, H = hp->n_head, HD = l->head_dim, HKV = l->n_head_kv;
    const int N = g->N;
    const int64_t nkv = (int64_t)HKV * HD;
    float *k = f->k + g->r0 * nkv, *v = f->v + g->r0 * nkv;   /* the carried rows' K/V among the keys */
    um_pool *pool = f->ref ? NULL : f->pool;
    fw_rmsnorm(f, f->xn, f->x, l->attn_norm, N, E);
    fw_mark(f, UM_FW_NORM);
    fw_linear(f, fl ? &fl->wq : NULL, &l->wq, f->xn, N, f->q, NULL);
    fw_linear(f, fl ? &fl->wk : NULL, &l->wk, f->xn, N, k, NULL);
    if (l->v_from_k) memcpy(v, k, (size_t)N * nkv * sizeof(float));
    else fw_linear(f, fl ? &fl->wv : NULL, &l->wv, f->xn, N, v, NULL);
    fw_mark(f, UM_FW_QKV);
    fw_rmsnorm(f, f->q, f->q, l->q_norm, (int64_t)N * H, HD);
    fw_rmsnorm(f, k, k, l->k_norm, (int64_t)N * HKV, HD);
    fw_rmsnorm(f, v, v, NULL, (int64_t)N * HKV, HD);
    fw_mark(f, UM_FW_NORM);
    um_rope rope = { .mode = UM_ROPE_NEOX, .head_dim = HD, .n_dims = l->n_rot, .freq_base = l->rope_base,
                     .freq_scale = 1.0f, .freq_factors = l->swa ? NULL : m->rope_freqs };
    const int32_t *pos = f->pos + g->r0;
    int rc = f->ref ? ops_rope_ref(&rope, pos, N, f->q, H, k, HKV, e)
                    : ops_rope(pool, &rope, pos, N, f->q, H, k, HKV, e);
    if (rc) return UM_FAIL;
    fw_mark(f, UM_FW_ROPE);
    /* the prompt's K/V: stored by the prompt pass, read back by a canvas pass (exact: no
       prompt row sees the canvas, so they are what a full pass computes) */
    const size_t pbytes = (size_t)g->P * nkv * sizeof(float);
    if (g->fill && pbytes) {
        memcpy(pc_layer(f, f->pc_k, il), f->k, pbytes);
        memcpy(pc_layer(f, f->pc_v, il), f->v, pbytes);
    } else if (g->cached && pbytes) {
        memcpy(f->k, pc_layer(f, f->pc_k, il), pbytes);
        memcpy(f->v, pc_layer(f, f->pc_v, il), pbytes);
    }
    fw_mark(f, UM_FW_ADD);
    for (int t = 0; t < N; t++)
        forward_dg_key_range(g->r0 + t, g->T, g->P, hp->n_swa, l->swa, &f->kv_lo[t], &f->kv_hi[t]);
    um_attn at = { .n_q = N, .n_kv = g->T, .n_head = H, .n_head_kv = HKV, .head_dim = HD, .scale = 1.0f,
                   .kv_lo = f->kv_lo, .kv_hi = f->kv_hi };
    rc = f->ref ? ops_attention_ref(&at, f->att, f->q, f->k, f->v, e) : ops_attention(pool, &at, f->att, f->q, f->k, f->v, e);
    if (rc) return UM_FAIL;
    fw_mark(f, UM_FW_ATTN);
    fw_linear(f, fl ? &fl->wo : NULL, &l->wo, f->att, N, f->xn, NULL);
    fw_mark(f, UM_FW_WO);
    fw_rmsnorm(f, f->xn, f->xn, l->attn_post_norm, N, E);
    fw_add(f, f->resid, f->x, f->xn, (int64_t)N * E);
    fw_mark(f, UM_FW_ADD);
    return UM_OK;
}

/* Dense MLP + experts + norms + residual + layer scalars: f->resid -> f->x. */
static int feed_forward(um_forward *f, int il, int T, int P, um_err *e) {
    const um_model *m = f->m;
    const um_hparams *hp = &m->hp;
    const um_layer *l = &m->layers[il];
    const fw_layer *fl = f->layers ? &f->layers[il] : NULL;
    const int E = hp->n_embd;
    const int64_t FF = hp->n_ff;
    fw_rmsnorm(f, f->xn, f->resid, l->ffn_norm, T, E);
    fw_linear(f, fl ? &fl->gate : NULL, &l->ffn_gate, f->xn, T, f->ff_a, NULL);
    fw_linear(f, fl ? &fl->up : NULL, &l->ffn_up, f->xn, T, f->ff_b, NULL);
    fw_mark(f, UM_FW_FFN_IN);
    if (f->ref) ops_geglu_ref(f->ff_a, f->ff_a, f->ff_b, (int64_t)T * FF);
    else ops_geglu(f->pool, f->ff_a, f->ff_a, f->ff_b, (int64_t)T * FF);
    fw_mark(f, UM_FW_ACT);
    fw_linear(f, fl ? &fl->down : NULL, &l->ffn_down, f->ff_a, T, f->xn, NULL);
    fw_mark(f, UM_FW_FFN_DOWN);
    fw_rmsnorm(f, f->xn, f->xn, l->ffn_post_norm_1, T, E);
    if (experts(f, il, f->resid, T, e)) return UM_FAIL;
    fw_rmsnorm(f, f->moe_out, f->moe_out, l->ffn_post_norm_2, T, E);
    fw_add(f, f->xn, f->xn, f->moe_out, (int64_t)T * E);
    fw_rmsnorm(f, f->xn, f->xn, l->ffn_post_norm, T, E);
    fw_add(f, f->x, f->resid, f->xn, (int64_t)T * E);
    scale_rows(f->x, P, E, l->enc_out_scale[0]);
    scale_rows(f->x + (int64_t)P * E, T - P, E, l->out_scale[0]);
    fw_mark(f, UM_FW_ADD);
    return UM_OK;
}

/* ------------------------------------------------------------------ the pass */

void fwg_free_prompt(um_forward *f) {
    um_free_aligned(f->pc_k); um_free_aligned(f->pc_v); free(f->pc_tok); free(f->pc_off);
    f->pc_k = f->pc_v = NULL; f->pc_tok = NULL; f->pc_off = NULL;
    f->pc_n = -1;
    f->pc_cap = 0;
    f->pc_bytes = 0;
}

/* Grow the prompt store to max_tokens rows of every layer's K and V (once per size). */
static int pc_reserve(um_forward *f, um_err *e) {
    if (f->pc_k && f->pc_cap == f->max_tokens) return UM_OK;
    const um_model *m = f->m;
    fwg_free_prompt(f);
    f->pc_off = um_calloc((size_t)m->hp.n_layer + 1, sizeof *f->pc_off);
    if (!f->pc_off) return um_errf(e, "out of memory");
    for (int il = 0; il < m->hp.n_layer; il++)
        f->pc_off[il + 1] = f->pc_off[il] + (int64_t)m->layers[il].n_head_kv * m->layers[il].head_dim;
    const uint64_t bytes = (uint64_t)f->max_tokens * (uint64_t)f->pc_off[m->hp.n_layer] * sizeof(float);
    f->pc_k = um_malloc_aligned(bytes);
    f->pc_v = um_malloc_aligned(bytes);
    f->pc_tok = um_calloc((size_t)f->max_tokens, sizeof *f->pc_tok);
    if (!f->pc_k || !f->pc_v || !f->pc_tok)
        return um_errf(e, "out of memory for the prompt's K/V (%" PRIu64 " bytes)", 2 * bytes);
    f->pc_cap = f->max_tokens;
    f->pc_bytes = 2 * bytes;
    return UM_OK;
}

int fwg_run(um_forward *f, const int32_t *tokens, int n_tokens, int n_prompt, const um_selfcond *sc,
            const int32_t *rows, int n_rows, float *logits, fwg_mode mode, um_err *e) {
    const um_model *m = f->m;
    const um_hparams *hp = &m->hp;
    const int T = n_tokens, E = hp->n_embd, V = hp->n_vocab;
    if (T <= 0 || T > f->max_tokens)
        return um_errf(e, "canvas of %d tokens exceeds the prepared maximum of %d", T, f->max_tokens);
    if (n_rows < 0 || n_rows > T) return um_errf(e, "bad row count %d", n_rows);
    for (int i = 0; i < n_rows; i++)
        if (rows[i] < 0 || rows[i] >= T) return um_errf(e, "row %d outside the canvas", rows[i]);
    const int P = n_prompt >= 0 ? n_prompt : (T > hp->canvas_length ? T - hp->canvas_length : 0);
    if (P > T) return um_errf(e, "prompt of %d rows is longer than the %d-token pass", P, T);
    const bool use_sc = sc && sc->logits && mode != FWG_PROMPT;
    if (use_sc) {
        if (!m->sc_gate.data)
            return um_errf(e, "this %s file has no self-conditioning tensors (self_cond_*)", m->arch->name);
        if (!(sc->temp > 0) || !isfinite(sc->temp)) return um_errf(e, "self-conditioning temperature must be positive");
        if (sc->mode != UM_SC_EXACT && sc->mode != UM_SC_TOPK && sc->mode != UM_SC_AUTO)
            return um_errf(e, "unknown self-conditioning mode");
        if (sc->mode != UM_SC_EXACT && (sc->top_k < 1 || sc->top_k > UM_SC_MAX_TOPK || sc->top_k >= V))
            return um_errf(e, "self-conditioning top-k %d outside [1, %d] (and below the %d-token vocabulary)",
                           sc->top_k, UM_SC_MAX_TOPK, V);
        if (!(sc->tail_max >= 0 && sc->tail_max < 1)) return um_errf(e, "self-conditioning tail bound must be in [0, 1)");
    }
    fwg_rows g = { .r0 = 0, .N = T, .T = T, .P = P };
    if (mode == FWG_PROMPT) {
        if (P != T) return um_errf(e, "the prompt pass takes the prompt alone (%d of %d rows)", P, T);
        if (pc_reserve(f, e)) return UM_FAIL;
        f->pc_n = -1;                 /* holds no prompt until this pass completes */
        g.fill = true;
    } else if (mode == FWG_CANVAS) {
        if (f->pc_n != P || (P > 0 && memcmp(f->pc_tok, tokens, (size_t)P * sizeof *tokens)))
            return um_errf(e, "the prompt's K/V hold another prompt (run the prompt pass first)");
        if (P == T) return um_errf(e, "a canvas pass needs canvas rows");
        for (int i = 0; i < n_rows; i++)
            if (rows[i] < P) return um_errf(e, "row %d is a prompt row: a canvas pass computes canvas rows only", rows[i]);
        g.r0 = P;
        g.N = T - P;
        g.cached = true;
    }
    const int N = g.N, PR = g.r0 < P ? P - g.r0 : 0;   /* carried rows, and how many are prompt rows */
    const int NC = N - PR;
    f->sc_exact_rows = 0;
    fw_prof_begin(f);
    if (ops_embed(f->ref ? NULL : f->pool, f->x, m->tok_embd.data, m->tok_embd.type, V, E, tokens + g.r0, N, e))
        return UM_FAIL;
    scale_rows(f->x, N, E, sqrtf((float)E));
    fw_mark(f, UM_FW_EMBED);
    if (NC > 0) {
        float *xc = f->x + (int64_t)PR * E;
        if (use_sc && self_condition(f, sc, xc, NC, e)) return UM_FAIL;
        fw_rmsnorm(f, xc, xc, NULL, NC, E);
        fw_mark(f, UM_FW_NORM);
    }
    for (int il = 0; il < hp->n_layer; il++) {
        if (attention(f, il, &g, e) || feed_forward(f, il, N, PR, e)) return UM_FAIL;
    }
    if (g.fill) {
        memcpy(f->pc_tok, tokens, (size_t)P * sizeof *tokens);
        f->pc_n = P;
    }
    for (int i = 0; i < n_rows; i++) f->rows_sel[i] = rows[i] - g.r0;
    fw_gather(f->hidden, f->x, f->rows_sel, n_rows, E);
    fw_rmsnorm(f, f->hidden, f->hidden, m->output_norm, n_rows, E);
    fw_linear(f, &f->output, &m->output, f->hidden, n_rows, logits, m->output_b);
    if (hp->softcap > 0) {
        if (f->ref) ops_softcap_ref(logits, (int64_t)n_rows * V, hp->softcap);
        else ops_softcap(f->pool, logits, (int64_t)n_rows * V, hp->softcap);
    }
    fw_mark(f, UM_FW_HEAD);
    fw_prof_end(f);
    return UM_OK;
}

int forward_sc_exact_rows(const um_forward *f) { return f->sc_exact_rows; }
