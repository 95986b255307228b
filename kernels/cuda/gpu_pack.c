/*
 * gpu_pack: the CUDA backend's host code that needs no GPU (layouts, repacking one row,
 * reference products, memory plan, RoPE table); see gpu_pack.h for the layouts.
 */
#include "gpu_pack.h"

#include <math.h>
#include <string.h>

gpu_layout gpu_layout_for(uint32_t t, int64_t n_in, int64_t n_out) {
    gpu_layout L;
    memset(&L, 0, sizeof L);
    L.kind = GPU_KIND_NONE;
    L.k_pad = gpu_round_up(n_in, 32);
    const um_type_traits *tr = um_traits(t);
    if (!tr || tr->is_activation || n_in <= 0 || n_out <= 0) return L;
    switch (t) {
    case UM_TYPE_F32:  L.kind = GPU_KIND_F32;  L.bytes_w = (uint64_t)n_out * L.k_pad * 4; return L;
    case UM_TYPE_F16:  L.kind = GPU_KIND_F16;  L.bytes_w = (uint64_t)n_out * L.k_pad * 2; return L;
    case UM_TYPE_BF16: L.kind = GPU_KIND_BF16; L.bytes_w = (uint64_t)n_out * L.k_pad * 2; return L;
    case UM_TYPE_Q2_K: case UM_TYPE_Q3_K: case UM_TYPE_Q6_K: L.group = 16; break;
    default: L.group = 32; break;
    }
    if (!tr->to_float_ref || n_in % (int64_t)tr->blck) { L.kind = GPU_KIND_NONE; return L; }
    L.kind = GPU_KIND_I8;
    L.has_off = t == UM_TYPE_Q4_1 || t == UM_TYPE_Q5_1 || t == UM_TYPE_Q2_K || t == UM_TYPE_Q4_K ||
                t == UM_TYPE_Q5_K;
    L.requant = !(t == UM_TYPE_Q4_0 || t == UM_TYPE_Q4_1 || t == UM_TYPE_Q5_0 || t == UM_TYPE_Q5_1 ||
                  t == UM_TYPE_Q8_0 || t == UM_TYPE_Q2_K || t == UM_TYPE_Q3_K || t == UM_TYPE_Q4_K ||
                  t == UM_TYPE_Q5_K || t == UM_TYPE_Q6_K || t == UM_TYPE_IQ4_NL || t == UM_TYPE_IQ4_XS);
    L.pack4_ok = t == UM_TYPE_Q4_0 || t == UM_TYPE_Q4_1 || t == UM_TYPE_Q4_K;
    L.bias4 = t == UM_TYPE_Q4_0 ? 8 : 0;
    L.bytes_w = (uint64_t)n_out * L.k_pad;
    L.bytes_scale = (uint64_t)n_out * (L.k_pad / L.group) * 4;
    L.bytes_off = L.has_off ? L.bytes_scale : 0;
    return L;
}

uint64_t gpu_layout_bytes(const gpu_layout *L) { return L->bytes_w + L->bytes_scale + L->bytes_off; }

void gpu_layout_pack4(gpu_layout *L, int64_t n_out) {
    if (!L->pack4_ok) return;
    L->pack4 = true;
    L->bytes_w = (uint64_t)n_out * (uint64_t)(L->k_pad / 2);
}

void gpu_nibble_pack(const int8_t *q, int64_t k_pad, int bias, uint8_t *out) {
    for (int64_t b = 0; b < k_pad / 32; b++)
        for (int j = 0; j < 16; j++)
            out[16 * b + j] = (uint8_t)(((q[32 * b + j] + bias) & 0xF) | (((q[32 * b + j + 16] + bias) & 0xF) << 4));
}

void gpu_nibble_unpack(const uint8_t *in, int64_t k_pad, int bias, int8_t *q) {
    for (int64_t b = 0; b < k_pad / 32; b++)
        for (int j = 0; j < 16; j++) {
            q[32 * b + j] = (int8_t)((in[16 * b + j] & 0xF) - bias);
            q[32 * b + j + 16] = (int8_t)((in[16 * b + j] >> 4) - bias);
        }
}

static float gpu_h2f(um_half h) { return um_fp16_to_fp32(h); }

static void gpu_nibbles32(const uint8_t qs[16], const uint8_t *qh, int bias, int8_t *q) {
    uint32_t h = 0;
    if (qh) memcpy(&h, qh, 4);
    for (int j = 0; j < 16; j++) {
        int lo = qs[j] & 0xF, hi = qs[j] >> 4;
        if (qh) { lo |= (int)((h >> j) & 1) << 4; hi |= (int)((h >> (j + 16)) & 1) << 4; }
        q[j] = (int8_t)(lo - bias);
        q[j + 16] = (int8_t)(hi - bias);
    }
}

static void gpu_pack_row_i8(uint32_t t, const void *src, int64_t n_in, int64_t k_pad,
                            int8_t *q, float *scale, float *off) {
    const int64_t nb32 = n_in / 32;
    memset(q + n_in, 0, (size_t)(k_pad - n_in));
    switch (t) {
    case UM_TYPE_Q8_0: {
        const um_block_q8_0 *b = (const um_block_q8_0 *)src;
        for (int64_t i = 0; i < nb32; i++) { memcpy(q + 32 * i, b[i].qs, 32); scale[i] = gpu_h2f(b[i].d); }
        return;
    }
    case UM_TYPE_Q4_0: {
        const um_block_q4_0 *b = (const um_block_q4_0 *)src;
        for (int64_t i = 0; i < nb32; i++) { gpu_nibbles32(b[i].qs, NULL, 8, q + 32 * i); scale[i] = gpu_h2f(b[i].d); }
        return;
    }
    case UM_TYPE_Q4_1: {
        const um_block_q4_1 *b = (const um_block_q4_1 *)src;
        for (int64_t i = 0; i < nb32; i++) {
            gpu_nibbles32(b[i].qs, NULL, 0, q + 32 * i);
            scale[i] = gpu_h2f(b[i].d);
            off[i] = gpu_h2f(b[i].m);
        }
        return;
    }
    case UM_TYPE_Q5_0: {
        const um_block_q5_0 *b = (const um_block_q5_0 *)src;
        for (int64_t i = 0; i < nb32; i++) { gpu_nibbles32(b[i].qs, b[i].qh, 16, q + 32 * i); scale[i] = gpu_h2f(b[i].d); }
        return;
    }
    case UM_TYPE_Q5_1: {
        const um_block_q5_1 *b = (const um_block_q5_1 *)src;
        for (int64_t i = 0; i < nb32; i++) {
            gpu_nibbles32(b[i].qs, b[i].qh, 0, q + 32 * i);
            scale[i] = gpu_h2f(b[i].d);
            off[i] = gpu_h2f(b[i].m);
        }
        return;
    }
    case UM_TYPE_IQ4_NL: {
        const um_block_iq4_nl *b = (const um_block_iq4_nl *)src;
        for (int64_t i = 0; i < nb32; i++) {
            for (int j = 0; j < 16; j++) {
                q[32 * i + j] = um_iq4nl_values[b[i].qs[j] & 0xF];
                q[32 * i + j + 16] = um_iq4nl_values[b[i].qs[j] >> 4];
            }
            scale[i] = gpu_h2f(b[i].d);
        }
        return;
    }
    default: break;
    }
    const int64_t nsb = n_in / UM_QK_K;
    for (int64_t i = 0; i < nsb; i++) {
        int8_t *qb = q + UM_QK_K * i;
        switch (t) {
        case UM_TYPE_Q2_K: {
            const um_block_q2_K *b = (const um_block_q2_K *)src + i;
            const float d = gpu_h2f(b->d), dmin = gpu_h2f(b->dmin);
            for (int e = 0; e < UM_QK_K; e++) {
                int half = e / 128, r = e % 128;
                qb[e] = (int8_t)((b->qs[32 * half + r % 32] >> (2 * (r / 32))) & 3);
            }
            for (int s = 0; s < 16; s++) {
                scale[16 * i + s] = d * (float)(b->scales[s] & 0xF);
                off[16 * i + s] = -(dmin * (float)(b->scales[s] >> 4));
            }
            break;
        }
        case UM_TYPE_Q3_K: {
            const um_block_q3_K *b = (const um_block_q3_K *)src + i;
            const float d = gpu_h2f(b->d);
            for (int e = 0; e < UM_QK_K; e++) {
                int half = e / 128, r = e % 128, g = r / 32, l = r % 32;
                int low = (b->qs[32 * half + l] >> (2 * g)) & 3;
                int high = (b->hmask[l] >> (4 * half + g)) & 1;
                qb[e] = (int8_t)(low - (high ? 0 : 4));
            }
            for (int s = 0; s < 16; s++) scale[16 * i + s] = d * (float)um_q3_K_scale(s, b->scales);
            break;
        }
        case UM_TYPE_Q4_K: case UM_TYPE_Q5_K: {
            const uint8_t *qs, *qh = NULL, *sc8;
            float d, dmin;
            if (t == UM_TYPE_Q4_K) {
                const um_block_q4_K *b = (const um_block_q4_K *)src + i;
                qs = b->qs; sc8 = b->scales; d = gpu_h2f(b->d); dmin = gpu_h2f(b->dmin);
            } else {
                const um_block_q5_K *b = (const um_block_q5_K *)src + i;
                qs = b->qs; qh = b->qh; sc8 = b->scales; d = gpu_h2f(b->d); dmin = gpu_h2f(b->dmin);
            }
            for (int e = 0; e < UM_QK_K; e++) {
                int chunk = e / 64, r = e % 64;
                int v = (qs[32 * chunk + r % 32] >> (r < 32 ? 0 : 4)) & 0xF;
                if (qh) v |= ((qh[r % 32] >> (e / 32)) & 1) << 4;
                qb[e] = (int8_t)v;
            }
            for (int s = 0; s < 8; s++) {
                uint8_t sc, m;
                um_k4_scale_min(s, sc8, &sc, &m);
                scale[8 * i + s] = d * (float)sc;
                off[8 * i + s] = -(dmin * (float)m);
            }
            break;
        }
        case UM_TYPE_Q6_K: {
            const um_block_q6_K *b = (const um_block_q6_K *)src + i;
            const float d = gpu_h2f(b->d);
            for (int e = 0; e < UM_QK_K; e++) {
                int half = e / 128, r = e % 128, g = r / 32, l = r % 32;
                int low = (b->ql[64 * half + 32 * (g & 1) + l] >> (4 * (g >> 1))) & 0xF;
                int high = (b->qh[32 * half + l] >> (2 * g)) & 3;
                qb[e] = (int8_t)((low | (high << 4)) - 32);
            }
            for (int s = 0; s < 16; s++) scale[16 * i + s] = d * (float)b->scales[s];
            break;
        }
        case UM_TYPE_IQ4_XS: {
            const um_block_iq4_xs *b = (const um_block_iq4_xs *)src + i;
            const float d = gpu_h2f(b->d);
            for (int ib = 0; ib < 8; ib++) {
                for (int j = 0; j < 16; j++) {
                    qb[32 * ib + j] = um_iq4nl_values[b->qs[16 * ib + j] & 0xF];
                    qb[32 * ib + j + 16] = um_iq4nl_values[b->qs[16 * ib + j] >> 4];
                }
                scale[8 * i + ib] = d * (float)um_iq4_xs_scale(ib, b);
            }
            break;
        }
        default: return;    /* not reached: gpu_layout_for marks other types requant */
        }
    }
}

void gpu_requant_row(const float *x, int64_t n_in, int64_t k_pad, int8_t *q, float *scale) {
    memset(q + n_in, 0, (size_t)(k_pad - n_in));
    for (int64_t b = 0; b < n_in / 32; b++) {
        float amax = 0;
        for (int j = 0; j < 32; j++) amax = fmaxf(amax, fabsf(x[32 * b + j]));
        const float d = amax / 127.0f, id = d > 0 ? 1.0f / d : 0.0f;
        for (int j = 0; j < 32; j++) q[32 * b + j] = (int8_t)lrintf(x[32 * b + j] * id);
        scale[b] = d;
    }
}

void gpu_pack_row(uint32_t t, const gpu_layout *L, const void *src, int64_t n_in,
                  int8_t *q, float *scale, float *off, float *tmp) {
    if (L->requant) {
        um_traits(t)->to_float_ref(src, tmp, n_in);
        gpu_requant_row(tmp, n_in, L->k_pad, q, scale);
        return;
    }
    gpu_pack_row_i8(t, src, n_in, L->k_pad, q, scale, off);
}

void gpu_pack_row_float(uint32_t t, const void *src, int64_t n_in, int64_t k_pad, void *dst) {
    size_t es = t == UM_TYPE_F32 ? 4 : 2;
    memcpy(dst, src, (size_t)n_in * es);
    memset((char *)dst + (size_t)n_in * es, 0, (size_t)(k_pad - n_in) * es);
}

void gpu_unpack_row_ref(const gpu_layout *L, const int8_t *q, const float *scale,
                        const float *off, int64_t n_in, float *w) {
    for (int64_t i = 0; i < n_in; i++) {
        float v = scale[i / L->group] * (float)q[i];
        w[i] = L->has_off ? v + off[i / L->group] : v;
    }
}

void gpu_quantize_act_ref(const float *x, int64_t K, int64_t k_pad, int8_t *q, float *d, int *sum16) {
    for (int64_t b = 0; b < k_pad / 32; b++) {
        float amax = 0;
        for (int j = 0; j < 32; j++) {
            int64_t k = 32 * b + j;
            amax = fmaxf(amax, fabsf(k < K ? x[k] : 0.0f));
        }
        const float dd = amax / 127.0f, inv = dd > 0 ? 1.0f / dd : 0.0f;
        d[b] = dd;
        for (int h = 0; h < 2; h++) {
            int s = 0;
            for (int j = 16 * h; j < 16 * h + 16; j++) {
                int64_t k = 32 * b + j;
                int qi = (int)roundf((k < K ? x[k] : 0.0f) * inv);
                q[k] = (int8_t)qi;
                s += qi;
            }
            sum16[2 * b + h] = s;
        }
    }
}

float gpu_i8_dot_ref(const gpu_layout *L, const int8_t *wq, const float *wscale, const float *woff,
                     const int8_t *aq, const float *ad, const int *asum) {
    float acc = 0.0f;
    const int G = L->group;
    for (int64_t g = 0; g < L->k_pad / G; g++) {
        int c = 0;
        for (int j = 0; j < G; j++) c += (int)wq[g * G + j] * (int)aq[g * G + j];
        const int64_t b = g * G / 32;
        float v = (float)c * wscale[g] * ad[b];
        if (L->has_off) {
            int s = G == 32 ? asum[2 * b] + asum[2 * b + 1] : asum[g];
            v += woff[g] * ad[b] * (float)s;
        }
        acc += v;
    }
    return acc;
}

gpu_dims gpu_dims_for(const um_model *m, int64_t T) {
    const um_hparams *hp = &m->hp;
    gpu_dims d;
    memset(&d, 0, sizeof d);
    const bool moe = m->arch->moe;
    d.T = T;
    d.E = hp->n_embd;
    d.HD = hp->head_dim;
    d.NQ = (int64_t)hp->n_head * hp->head_dim;
    d.NKV = (int64_t)hp->n_head_kv * hp->head_dim;
    d.F = moe ? hp->n_ff_exp : hp->n_ff;
    d.KU = moe ? hp->n_expert_used : 1;
    d.X = moe ? hp->n_expert : 0;
    d.V = hp->n_vocab;
    d.n_rot = hp->n_rot;
    d.kmax = gpu_round_up(UM_MAX(UM_MAX(d.E, d.NQ), d.F), 32);
    d.rows_ff = T * d.KU;
    return d;
}

uint64_t gpu_activation_bytes(const gpu_dims *d) {
    const uint64_t T = (uint64_t)d->T, R = (uint64_t)d->rows_ff, K = (uint64_t)d->kmax;
    uint64_t b = 0;
    b += T * d->E * 4 * 3;                  /* x, xn, hidden */
    b += T * d->NQ * 4 * 2;                 /* q, att */
    b += T * d->NKV * 4 * 2;                /* k, v */
    b += R * d->F * 4 * 2;                  /* ff_a, ff_b */
    if (d->X) b += R * d->E * 4 * 2;        /* gathered, ex_out */
    b += T * (d->X ? d->X : 1) * 4;         /* router */
    b += R * 4 * 3 + T * 4 * 2;             /* ex_tok, ex_w, ex_slot; rows, pos */
    b += (uint64_t)((d->X ? d->X : 1) + 1) * 4; /* expert offsets */
    b += T * 4 * (4 + 2 * GPU_STATS_TOPK);  /* row statistics with their top-k candidates */
    b += T * (uint64_t)(d->n_rot / 2) * 4 * 2;  /* rope cos, sin */
    b += R * K;                             /* int8 activations */
    b += R * (K / 32) * 4 + R * (K / 16) * 4;   /* their scales and 16-sums */
    b += R * K * 2;                         /* f16/bf16 activations */
    b += T * d->V * 4;                      /* logits */
    return b;
}

uint64_t gpu_vec_floats(const um_model *m) {
    const um_hparams *hp = &m->hp;
    uint64_t per = (uint64_t)hp->n_embd * 2 + (uint64_t)hp->head_dim * 2        /* norms, qk-norms */
                 + (uint64_t)hp->n_head * hp->head_dim + (uint64_t)hp->n_head_kv * hp->head_dim * 2
                 + hp->n_embd                                                     /* biases q,k,v,o */
                 + (uint64_t)hp->n_ff * 2 + hp->n_embd;                           /* ffn biases */
    return per * hp->n_layer + hp->n_embd + hp->n_vocab;
}

bool gpu_weight_plan(const um_model *m, bool pack4, uint64_t *bytes, um_err *e) {
    /* llada2's block-causal mask, dense lead layers, shared experts and grouped routing, and
     * DiffusionGemma's Gemma 4 pass (per-layer geometry, region mask, self-conditioning) have no
     * CUDA path yet: refuse before packing anything */
    if (m->arch->block_causal || m->arch->fused_qkv || m->arch->gemma4) {
        um_errf(e, "the CUDA backend does not run architecture '%s' yet (run without --gpu)", m->arch->name);
        return false;
    }
    uint64_t total = gpu_vec_floats(m) * 4;
    const um_hparams *hp = &m->hp;
    for (int il = 0; il <= hp->n_layer; il++) {
        const um_weight *ws[8];
        int nw = 0;
        const um_layer *l = il < hp->n_layer ? &m->layers[il] : NULL;
        if (!l) ws[nw++] = &m->output;
        else {
            ws[nw++] = &l->wq; ws[nw++] = &l->wk; ws[nw++] = &l->wv; ws[nw++] = &l->wo;
            if (m->arch->moe) ws[nw++] = &l->ffn_gate_inp;
            else { ws[nw++] = &l->ffn_gate; ws[nw++] = &l->ffn_up; ws[nw++] = &l->ffn_down; }
        }
        for (int i = 0; i < nw; i++) {
            gpu_layout L = gpu_layout_for(ws[i]->type, ws[i]->n_in, ws[i]->n_out);
            if (pack4) gpu_layout_pack4(&L, ws[i]->n_out);
            if (L.kind == GPU_KIND_NONE) {
                um_errf(e, "tensor '%s': type %s has no CUDA kernel", ws[i]->name, um_type_name(ws[i]->type));
                return false;
            }
            total += gpu_layout_bytes(&L);
        }
        for (int x = 0; l && m->arch->moe && x < hp->n_expert; x++) {
            const um_weight *ex[3] = { &l->gate_exps[x], &l->up_exps[x], &l->down_exps[x] };
            for (int i = 0; i < 3; i++) {
                gpu_layout L = gpu_layout_for(ex[i]->type, ex[i]->n_in, ex[i]->n_out);
                if (pack4) gpu_layout_pack4(&L, ex[i]->n_out);
                if (L.kind == GPU_KIND_NONE) {
                    um_errf(e, "tensor '%s': type %s has no CUDA kernel", ex[i]->name, um_type_name(ex[i]->type));
                    return false;
                }
                total += gpu_layout_bytes(&L);
            }
        }
    }
    *bytes = total;
    return true;
}

void gpu_rope_table(float freq_base, float freq_scale, int n_dims, int64_t T, float *cos_t, float *sin_t) {
    const float theta_scale = powf(freq_base, -2.0f / (float)n_dims);
    const float fs = freq_scale > 0 ? freq_scale : 1.0f;
    const int half = n_dims / 2;
    for (int64_t p = 0; p < T; p++) {
        float theta = (float)p;
        for (int i = 0; i < half; i++) {
            float t = fs * theta;
            cos_t[p * half + i] = cosf(t);
            sin_t[p * half + i] = sinf(t);
            theta *= theta_scale;
        }
    }
}
