/*
 * quantize: llama.cpp's quantization mixtures and the file converter (see quantize.h).
 *
 * The per-tensor rules follow llama.cpp's src/llama-quant.cpp (llama_tensor_get_type_impl,
 * tensor_allows_quantization, tensor_type_fallback) for the mixtures unmask can produce;
 * tests/test_quantize.c checks them against the types llama-quantize itself wrote
 * (tests/data/quant/mixtures.txt).
 *
 * Converter invariants: every input count and size is checked by the GGUF reader; a tensor
 * is converted only when its type changes; keys and tensors are written in llama-quantize's
 * order (so for the same input both tools write the same bytes); input values must be finite (as llama-quantize
 * checks); output tensors are held in memory until the atomic write, so peak memory is about
 * the output file's size plus one float row per thread.
 */
#include "quantize.h"

#include <ctype.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "gguf.h"
#include "quant.h"

/* ------------------------------------------------------------------ mixtures */

/* LLAMA_FTYPE_* numbers (llama.h); only the ones offered here. */
enum {
    FT_ALL_F32 = 0, FT_F16 = 1, FT_Q4_0 = 2, FT_Q4_1 = 3, FT_Q8_0 = 7, FT_Q5_0 = 8, FT_Q5_1 = 9,
    FT_Q2_K = 10, FT_Q3_K_S = 11, FT_Q3_K_M = 12, FT_Q3_K_L = 13, FT_Q4_K_S = 14, FT_Q4_K_M = 15,
    FT_Q5_K_S = 16, FT_Q5_K_M = 17, FT_Q6_K = 18, FT_IQ4_NL = 25, FT_IQ4_XS = 30, FT_BF16 = 32,
    FT_IQ2_XXS = 19, FT_IQ2_XS = 20, FT_IQ3_XXS = 23, FT_IQ3_S = 26, FT_IQ3_M = 27, FT_IQ2_S = 28,
    FT_IQ2_M = 29, FT_TQ1_0 = 36, FT_TQ2_0 = 37, FT_IQ1_S = 24, FT_IQ1_M = 31,
};

static const um_mixture mixtures[] = {
    { "Q4_K_M", FT_Q4_K_M, UM_TYPE_Q4_K,   "Q4_K, with Q6_K for the head and half the attn_v/ffn_down (4.9 bpw)" },
    { "Q4_K_S", FT_Q4_K_S, UM_TYPE_Q4_K,   "Q4_K, a few early layers Q5_K (4.6 bpw)" },
    { "Q5_K_M", FT_Q5_K_M, UM_TYPE_Q5_K,   "Q5_K, with Q6_K for the head and half the attn_v/ffn_down (5.7 bpw)" },
    { "Q5_K_S", FT_Q5_K_S, UM_TYPE_Q5_K,   "Q5_K, Q6_K head (5.5 bpw)" },
    { "Q6_K",   FT_Q6_K,   UM_TYPE_Q6_K,   "Q6_K everywhere (6.6 bpw)" },
    { "Q8_0",   FT_Q8_0,   UM_TYPE_Q8_0,   "Q8_0 everywhere (8.5 bpw)" },
    { "Q3_K_S", FT_Q3_K_S, UM_TYPE_Q3_K,   "Q3_K, Q6_K head (3.5 bpw)" },
    { "Q3_K_M", FT_Q3_K_M, UM_TYPE_Q3_K,   "Q3_K with Q4_K/Q5_K for attn_v, attn_output, ffn_down (3.9 bpw)" },
    { "Q3_K_L", FT_Q3_K_L, UM_TYPE_Q3_K,   "Q3_K with Q5_K for attn_v, attn_output, ffn_down (4.3 bpw)" },
    { "Q2_K",   FT_Q2_K,   UM_TYPE_Q2_K,   "Q2_K with Q3_K/Q4_K for attn_v, attn_output, ffn_down (3.0 bpw)" },
    { "Q4_0",   FT_Q4_0,   UM_TYPE_Q4_0,   "Q4_0, Q6_K head (4.5 bpw)" },
    { "Q4_1",   FT_Q4_1,   UM_TYPE_Q4_1,   "Q4_1, Q6_K head (5.0 bpw)" },
    { "Q5_0",   FT_Q5_0,   UM_TYPE_Q5_0,   "Q5_0, Q6_K head (5.5 bpw)" },
    { "Q5_1",   FT_Q5_1,   UM_TYPE_Q5_1,   "Q5_1, Q6_K head (6.0 bpw)" },
    { "IQ4_NL", FT_IQ4_NL, UM_TYPE_IQ4_NL, "4-bit codebook, blocks of 32 (4.5 bpw)" },
    { "IQ4_XS", FT_IQ4_XS, UM_TYPE_IQ4_XS, "4-bit codebook, 6-bit sub-scales (4.25 bpw)" },
    { "IQ3_M",  FT_IQ3_M,  UM_TYPE_IQ3_S,  "IQ3_S lattice, Q4_K attn_v/attn_output and early ffn_down (3.7 bpw)" },
    { "IQ3_S",  FT_IQ3_S,  UM_TYPE_IQ3_S,  "IQ3_S lattice, 4-bit scales per 32 (3.4 bpw)" },
    { "IQ3_XXS", FT_IQ3_XXS, UM_TYPE_IQ3_XXS, "IQ3_XXS lattice, IQ2_S attn_q/attn_k, IQ3_S attn_output (3.1 bpw)" },
    { "IQ2_M",  FT_IQ2_M,  UM_TYPE_IQ2_S,  "IQ2_S lattice, IQ3_S token_embd/attn_v/attn_output (2.7 bpw)" },
    { "IQ2_S",  FT_IQ2_S,  UM_TYPE_IQ2_XS, "IQ2_XS lattice, IQ3_S token_embd/attn_v/attn_output (2.5 bpw)" },
    { "IQ2_XS", FT_IQ2_XS, UM_TYPE_IQ2_XS, "IQ2_XS lattice, Q2_K token_embd/attn_v, Q5_K head (2.3 bpw)" },
    { "IQ2_XXS", FT_IQ2_XXS, UM_TYPE_IQ2_XXS, "IQ2_XXS lattice, Q2_K token_embd/attn_v, Q5_K head (2.1 bpw)" },
    { "IQ1_M",  FT_IQ1_M,  UM_TYPE_IQ1_M,  "IQ1_M lattice, IQ2_XXS attn_output, Q2_K token_embd (1.8 bpw)" },
    { "IQ1_S",  FT_IQ1_S,  UM_TYPE_IQ1_S,  "IQ1_S lattice, IQ2_XXS attn_output, Q2_K token_embd (1.6 bpw)" },
    { "TQ1_0",  FT_TQ1_0,  UM_TYPE_TQ1_0,  "ternary, for models trained ternary (BitNet); Q4_K token_embd (1.69 bpw)" },
    { "TQ2_0",  FT_TQ2_0,  UM_TYPE_TQ2_0,  "ternary, 2 bits per weight; Q4_K token_embd (2.06 bpw)" },
    { "F16",    FT_F16,    UM_TYPE_F16,    "IEEE half for every 2-D weight" },
    { "BF16",   FT_BF16,   UM_TYPE_BF16,   "bfloat16 for every 2-D weight" },
    { "F32",    FT_ALL_F32, UM_TYPE_F32,   "float32 for every 2-D weight" },
};

const um_mixture *um_mixture_find(const char *name) {
    for (size_t i = 0; i < UM_ARRAY_LEN(mixtures); i++)
        if (!strcasecmp(mixtures[i].name, name)) return &mixtures[i];
    return NULL;
}

const um_mixture *um_mixture_at(size_t i) {
    return i < UM_ARRAY_LEN(mixtures) ? &mixtures[i] : NULL;
}

/* ------------------------------------------------------------------ tensor categories */

typedef enum category {
    CAT_TOKEN_EMBD, CAT_ATTN_Q, CAT_ATTN_V, CAT_ATTN_K, CAT_ATTN_QKV, CAT_ATTN_KV_B,
    CAT_ATTN_OUTPUT, CAT_FFN_UP, CAT_FFN_GATE, CAT_FFN_DOWN, CAT_OUTPUT, CAT_OTHER
} category;

static bool has(const char *s, const char *sub) { return strstr(s, sub) != NULL; }

static category categorize(const char *name) {
    if (!strcmp(name, "output.weight")) return CAT_OUTPUT;
    if (!strcmp(name, "token_embd.weight") || !strcmp(name, "per_layer_token_embd.weight")) return CAT_TOKEN_EMBD;
    if (has(name, "attn_qkv.weight")) return CAT_ATTN_QKV;
    if (has(name, "attn_kv_b.weight")) return CAT_ATTN_KV_B;
    if (has(name, "attn_v.weight")) return CAT_ATTN_V;
    if (has(name, "attn_k.weight")) return CAT_ATTN_K;
    if (has(name, "attn_q.weight")) return CAT_ATTN_Q;
    if (has(name, "attn_output.weight")) return CAT_ATTN_OUTPUT;
    if (has(name, "ffn_up")) return CAT_FFN_UP;
    if (has(name, "ffn_gate")) return CAT_FFN_GATE;
    if (has(name, "ffn_down")) return CAT_FFN_DOWN;
    return CAT_OTHER;
}

/* attn_v-like tensors are the most sensitive to quantization; they share one counter. */
static bool is_attn_v(category c) { return c == CAT_ATTN_V || c == CAT_ATTN_QKV || c == CAT_ATTN_KV_B; }

/* Substrings that mark weights llama.cpp never quantizes (small, or precision-critical). */
static const char *const never_quantized[] = {
    "_norm.weight", "ffn_gate_inp.weight", "ffn_gate_tid2eid.weight", "altup", "laurel",
    "per_layer_model_proj", "ssm_conv1d", "shortconv.conv.weight", "indexer.k_proj.weight",
    "indexer.q_proj.weight", "time_mix_first.weight", "time_mix_w0.weight", "time_mix_w1.weight",
    "time_mix_w2.weight", "time_mix_v0.weight", "time_mix_v1.weight", "time_mix_v2.weight",
    "time_mix_a0.weight", "time_mix_a1.weight", "time_mix_a2.weight", "time_mix_g1.weight",
    "time_mix_g2.weight", "time_mix_decay_w1.weight", "time_mix_decay_w2.weight",
    "time_mix_lerp_fused.weight", "attn_rel_b.weight", ".position_embd", "sam.pos_embd",
    "sam.neck.", "sam.net_", ".rel_pos", ".patch_embd", ".patch_merger", "a.rvq.codebook",
    "mm.a.code_embd",
};

/* ggml_n_dims: dimensions up to the last one with more than one element (at least 1). */
static int n_dims(const uint64_t ne[4]) {
    for (int i = 3; i >= 1; i--)
        if (ne[i] > 1) return i + 1;
    return 1;
}

static bool allows_quantization(const um_quant_tensor *t) {
    if (n_dims(t->ne) < 2) return false;
    size_t len = strlen(t->name);
    if (len < 6 || strcmp(t->name + len - 6, "weight")) return false;
    if (!strcmp(t->name, "position_embd.weight") || !strcmp(t->name, "token_types.weight")) return false;
    for (size_t i = 0; i < UM_ARRAY_LEN(never_quantized); i++)
        if (has(t->name, never_quantized[i])) return false;
    return true;
}

/* Layer number of "blk.N.*", or -1. */
static int layer_of(const char *name) {
    int l = -1;
    if (sscanf(name, "blk.%d.", &l) != 1) return -1;
    return l;
}

/* ------------------------------------------------------------------ the rules */

typedef struct rule_state {
    const um_mixture     *mix;
    const um_quant_model *m;
    int  n_attn_v, i_attn_v;        /* attn_v-like tensors: total, seen so far */
    int  i_ffn_down, i_ffn_gate, i_ffn_up;
    bool tied;                      /* no output.weight: token_embd doubles as the head */
    bool falcon, is_70b;
} rule_state;

/* llama.cpp's use_more_bits: the first and last eighth of the layers, and every third
 * layer in between. */
static bool more_bits(int i, int n) { return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2; }

static int n_gqa(const um_quant_model *m) { return m->n_head_kv ? m->n_head / m->n_head_kv : 0; }

/* Which layer a ffn tensor belongs to: its counter for dense models; parsed from the name
 * for MoE, where expert tensors are not in layer order. */
static int ffn_layer(const rule_state *s, int counter, const char *name, int *layer, um_err *e) {
    *layer = counter;
    if (s->m->n_expert > 1) {
        *layer = layer_of(name);
        if (*layer < 0) return um_errf(e, "cannot tell the layer of tensor %s", name);
        if (*layer >= s->m->n_layer)
            return um_errf(e, "tensor %s: layer %d out of range [0, %d)", name, *layer, s->m->n_layer);
    }
    return UM_OK;
}

/* The ftypes llama.cpp handles in one branch of their own (1- and 2-bit lattices). */
static bool iq2_family(uint32_t ft) {
    return ft == FT_IQ2_XXS || ft == FT_IQ2_XS || ft == FT_IQ1_S || ft == FT_IQ2_S || ft == FT_IQ2_M || ft == FT_IQ1_M;
}

/* llama_tensor_get_type_impl for the offered ftypes. IQ3_XXS is chosen as llama-quantize
 * chooses it with an importance matrix (which it demands for IQ3_XXS weights; unmask's own
 * quantizer needs none): has_imatrix is true for it. */
static int mixture_type(rule_state *s, const um_quant_tensor *t, category cat, uint32_t *type, um_err *e) {
    const uint32_t ft = s->mix->ftype;
    const int n_layer = s->m->n_layer, n_expert = s->m->n_expert;
    uint32_t nt = *type;

    if (cat == CAT_OUTPUT || (s->tied && cat == CAT_TOKEN_EMBD)) {
        /* the head gets Q6_K (or Q8_0 when the rows do not split into the base type's blocks) */
        if (s->falcon || t->ne[0] % um_type_blck(nt) != 0) nt = UM_TYPE_Q8_0;
        else if (iq2_family(ft) || ft == FT_IQ3_XXS) nt = UM_TYPE_Q5_K;
        else if (nt != UM_TYPE_Q8_0) nt = UM_TYPE_Q6_K;
    } else if (cat == CAT_TOKEN_EMBD) {
        if (ft == FT_IQ2_XXS || ft == FT_IQ2_XS || ft == FT_IQ1_S || ft == FT_IQ1_M) nt = UM_TYPE_Q2_K;
        else if (ft == FT_IQ2_S || ft == FT_IQ2_M || ft == FT_IQ3_XXS) nt = UM_TYPE_IQ3_S;
        else if (ft == FT_TQ1_0 || ft == FT_TQ2_0) nt = UM_TYPE_Q4_K;
    } else if (iq2_family(ft)) {
        /* llama.cpp's branch for these: its own attn_v, attn_k, ffn_down (by plain tensor
         * count, not layer) and attn_output rules, nothing else */
        const bool m2 = ft == FT_IQ2_S || ft == FT_IQ2_M;
        if (is_attn_v(cat)) {
            if (n_gqa(s->m) >= 4 || n_expert >= 4) nt = UM_TYPE_Q4_K;
            else nt = m2 ? UM_TYPE_IQ3_S : UM_TYPE_Q2_K;
            s->i_attn_v++;
        } else if (n_expert == 8 && cat == CAT_ATTN_K) {
            nt = UM_TYPE_Q4_K;
        } else if (cat == CAT_FFN_DOWN) {
            if (s->i_ffn_down < n_layer / 8) nt = m2 ? UM_TYPE_IQ3_S : UM_TYPE_Q2_K;
            s->i_ffn_down++;
        } else if (cat == CAT_ATTN_OUTPUT) {
            if (n_expert == 8) nt = UM_TYPE_Q5_K;
            else if (ft == FT_IQ1_S || ft == FT_IQ1_M) nt = UM_TYPE_IQ2_XXS;
            else if (m2) nt = UM_TYPE_IQ3_S;
        }
    } else if (is_attn_v(cat)) {
        const int i = s->i_attn_v, n = s->n_attn_v;
        if (ft == FT_Q2_K) nt = n_gqa(s->m) >= 4 ? UM_TYPE_Q4_K : UM_TYPE_Q3_K;
        else if (ft == FT_IQ3_XXS) nt = n_gqa(s->m) >= 4 ? UM_TYPE_Q4_K : UM_TYPE_IQ3_XXS;  /* with imatrix */
        else if (ft == FT_IQ3_S && n_gqa(s->m) >= 4) nt = UM_TYPE_Q4_K;
        else if (ft == FT_IQ3_M) nt = UM_TYPE_Q4_K;
        else if (ft == FT_Q3_K_M) nt = i < 2 ? UM_TYPE_Q5_K : UM_TYPE_Q4_K;
        else if (ft == FT_Q3_K_L) nt = UM_TYPE_Q5_K;
        else if ((ft == FT_IQ4_NL || ft == FT_IQ4_XS) && n_gqa(s->m) >= 4) nt = UM_TYPE_Q5_K;
        else if ((ft == FT_Q4_K_M || ft == FT_Q5_K_M) && more_bits(i, n)) nt = UM_TYPE_Q6_K;
        else if (ft == FT_Q4_K_S && i < 4) nt = UM_TYPE_Q5_K;
        if (s->is_70b && (nt == UM_TYPE_Q3_K || nt == UM_TYPE_Q4_K)) nt = UM_TYPE_Q5_K;
        if (n_expert == 8) nt = UM_TYPE_Q8_0;
        s->i_attn_v++;
    } else if (cat == CAT_ATTN_K) {
        if (n_expert == 8) nt = UM_TYPE_Q8_0;
        else if (ft == FT_IQ3_XXS) nt = UM_TYPE_IQ2_S;
    } else if (cat == CAT_ATTN_Q) {
        if (ft == FT_IQ3_XXS) nt = UM_TYPE_IQ2_S;
    } else if (cat == CAT_FFN_DOWN) {
        int il;
        if (ffn_layer(s, s->i_ffn_down, t->name, &il, e)) return UM_FAIL;
        const bool mb = more_bits(il, n_layer);
        if (ft == FT_Q2_K) nt = UM_TYPE_Q3_K;
        /* IQ3_XXS without an imatrix would take Q4_K/Q3_K here; with one (see above) nothing */
        else if (ft == FT_Q3_K_M)
            nt = il < n_layer / 16 ? UM_TYPE_Q5_K : (!s->falcon || mb) ? UM_TYPE_Q4_K : UM_TYPE_Q3_K;
        else if (ft == FT_IQ3_M && (il < n_layer / 8 || (n_expert == 8 && mb))) nt = UM_TYPE_Q4_K;
        else if (ft == FT_Q3_K_L) nt = s->falcon ? UM_TYPE_Q4_K : UM_TYPE_Q5_K;
        else if (ft == FT_Q4_K_M) {
            if (s->falcon) nt = il < n_layer / 16 ? UM_TYPE_Q6_K : mb ? UM_TYPE_Q5_K : UM_TYPE_Q4_K;
            else if (mb) nt = UM_TYPE_Q6_K;
        } else if (il < n_layer / 8 && (ft == FT_IQ4_NL || ft == FT_IQ4_XS)) nt = UM_TYPE_Q5_K;  /* no imatrix */
        else if (ft == FT_Q5_K_M && mb) nt = UM_TYPE_Q6_K;
        else if (ft == FT_Q4_K_S && !s->falcon && il < n_layer / 8) nt = UM_TYPE_Q5_K;
        s->i_ffn_down++;
    } else if (cat == CAT_ATTN_OUTPUT) {
        if (!s->falcon) {
            if (n_expert == 8) {
                if (ft == FT_Q2_K || ft == FT_IQ3_XXS || ft == FT_Q3_K_S || ft == FT_Q3_K_M || ft == FT_IQ4_NL ||
                    ft == FT_Q4_K_S || ft == FT_Q4_K_M || ft == FT_IQ3_S || ft == FT_IQ3_M || ft == FT_IQ4_XS)
                    nt = UM_TYPE_Q5_K;
            } else {
                if (ft == FT_Q2_K) nt = UM_TYPE_Q3_K;
                else if (ft == FT_IQ3_XXS) nt = UM_TYPE_IQ3_S;
                else if (ft == FT_IQ3_M) nt = UM_TYPE_Q4_K;
                else if (ft == FT_Q3_K_M) nt = UM_TYPE_Q4_K;
                else if (ft == FT_Q3_K_L) nt = UM_TYPE_Q5_K;
            }
        } else if (ft == FT_Q3_K_L) {
            nt = UM_TYPE_Q4_K;
        }
    } else if (cat == CAT_FFN_GATE || cat == CAT_FFN_UP) {
        /* only IQ3_XS changes these; the layer check still applies (MoE names) */
        int il;
        if (ffn_layer(s, cat == CAT_FFN_GATE ? s->i_ffn_gate : s->i_ffn_up, t->name, &il, e)) return UM_FAIL;
        if (cat == CAT_FFN_GATE) s->i_ffn_gate++;
        else s->i_ffn_up++;
    }
    *type = nt;
    return UM_OK;
}

/* Rows that are not a whole number of the chosen type's blocks fall back to a type with
 * 32-element blocks, and to F16 when even that does not fit. */
static int fallback(const um_quant_tensor *t, uint32_t *type, um_err *e) {
    const uint64_t ncols = t->ne[0];
    uint32_t nt = *type;
    if (ncols % um_type_blck(nt) == 0) return UM_OK;
    switch (nt) {
    case UM_TYPE_IQ1_S: case UM_TYPE_IQ1_M: case UM_TYPE_IQ2_XXS: case UM_TYPE_IQ2_XS: case UM_TYPE_IQ2_S:
    case UM_TYPE_IQ3_XXS: case UM_TYPE_IQ3_S:
    case UM_TYPE_IQ4_XS: nt = UM_TYPE_IQ4_NL; break;
    case UM_TYPE_Q2_K: case UM_TYPE_Q3_K: case UM_TYPE_TQ1_0: case UM_TYPE_TQ2_0: nt = UM_TYPE_Q4_0; break;
    case UM_TYPE_Q4_K: nt = UM_TYPE_Q5_0; break;
    case UM_TYPE_Q5_K: nt = UM_TYPE_Q5_1; break;
    case UM_TYPE_Q6_K: nt = UM_TYPE_Q8_0; break;
    default:
        if (um_type_blck(nt) > 32) return um_errf(e, "tensor %s: no fallback for type %s", t->name, um_type_name(nt));
    }
    if (ncols % um_type_blck(nt) != 0) nt = UM_TYPE_F16;
    *type = nt;
    return UM_OK;
}

static bool is_quantized_type(uint32_t t) { return t != UM_TYPE_F32 && t != UM_TYPE_F16 && t != UM_TYPE_BF16; }

/* llama.cpp's tensor order: by layer number (non-layer tensors first), then by name. */
static const um_quant_tensor *g_sort_tensors;
static int cmp_llama_order(const void *a, const void *b) {
    const um_quant_tensor *x = &g_sort_tensors[*(const size_t *)a], *y = &g_sort_tensors[*(const size_t *)b];
    int lx = layer_of(x->name), ly = layer_of(y->name);
    if (lx != ly) return lx < ly ? -1 : 1;
    return strcmp(x->name, y->name);
}

static size_t *llama_order(const um_quant_tensor *t, size_t n) {
    size_t *idx = um_malloc((n ? n : 1) * sizeof *idx);
    if (!idx) return NULL;
    for (size_t i = 0; i < n; i++) idx[i] = i;
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;   /* qsort has no context pointer */
    pthread_mutex_lock(&lock);
    g_sort_tensors = t;
    qsort(idx, n, sizeof *idx, cmp_llama_order);
    pthread_mutex_unlock(&lock);
    return idx;
}

/* Model types that make llama.cpp give attn_v more bits (llm_type 70B). */
static bool model_is_70b(const um_quant_model *m) {
    if (!strcmp(m->arch, "llama")) return m->n_layer == 80 && m->n_head != m->n_head_kv;
    if (!strcmp(m->arch, "qwen2") || !strcmp(m->arch, "deci") || !strcmp(m->arch, "olmo")) return m->n_layer == 80;
    if (!strcmp(m->arch, "jais2")) return m->n_layer == 68;
    return false;
}

int um_quant_choose(const um_mixture *mix, const um_quant_model *m, const um_quant_tensor *t,
                    size_t n, uint32_t *out, um_err *e) {
    rule_state s = { .mix = mix, .m = m, .tied = true, .falcon = !strcmp(m->arch, "falcon"),
                     .is_70b = model_is_70b(m) };
    for (size_t i = 0; i < n; i++) {
        category c = categorize(t[i].name);
        if (is_attn_v(c)) s.n_attn_v++;
        if (c == CAT_OUTPUT) s.tied = false;
    }
    size_t *order = llama_order(t, n);
    if (!order) return um_errf(e, "out of memory");
    int rc = UM_OK;
    for (size_t k = 0; k < n && rc == UM_OK; k++) {
        const um_quant_tensor *ti = &t[order[k]];
        uint32_t type = ti->type;
        if (allows_quantization(ti)) {
            type = mix->base_type;
            if (is_quantized_type(mix->base_type)) {
                rc = mixture_type(&s, ti, categorize(ti->name), &type, e);
                if (rc == UM_OK) rc = fallback(ti, &type, e);
            }
        }
        out[order[k]] = type;
    }
    free(order);
    return rc;
}

/* ------------------------------------------------------------------ converting rows */

typedef struct convert_job {
    const gguf_tensor    *src;
    const um_type_traits *from;         /* NULL when the source is F32 */
    const um_type_traits *to;
    uint8_t              *dst;          /* (n_rows, row_bytes_out) */
    uint64_t              n_rows, n_per_row;
    uint64_t              next_row;     /* work counter, guarded by lock */
    pthread_mutex_t       lock;
    bool                  bad;          /* a non-finite input value was found */
    uint64_t              bad_row;
} convert_job;

enum { ROWS_PER_GRAB = 16 };

static void *convert_worker(void *arg) {
    convert_job *j = arg;
    const uint64_t in_bytes = um_row_size(j->src->type, (int64_t)j->n_per_row);
    const uint64_t out_bytes = um_row_size(j->to->type, (int64_t)j->n_per_row);
    float *row = j->from ? um_malloc(j->n_per_row * sizeof(float)) : NULL;   /* (n_per_row) */
    if (j->from && !row) {
        pthread_mutex_lock(&j->lock);
        j->bad = true;
        j->bad_row = UINT64_MAX;
        pthread_mutex_unlock(&j->lock);
        return NULL;
    }
    for (;;) {
        pthread_mutex_lock(&j->lock);
        uint64_t r0 = j->next_row, r1 = UM_MIN(r0 + ROWS_PER_GRAB, j->n_rows);
        j->next_row = r1;
        bool stop = j->bad;
        pthread_mutex_unlock(&j->lock);
        if (stop || r0 >= r1) break;
        for (uint64_t r = r0; r < r1; r++) {
            const uint8_t *in = (const uint8_t *)j->src->data + r * in_bytes;
            const float *x = (const float *)in;
            if (j->from) {
                j->from->to_float_ref(in, row, (int64_t)j->n_per_row);
                x = row;
            }
            bool finite = true;
            for (uint64_t k = 0; k < j->n_per_row; k++)
                if (!isfinite(x[k])) { finite = false; break; }
            if (!finite) {
                pthread_mutex_lock(&j->lock);
                if (!j->bad || r < j->bad_row) j->bad_row = r;
                j->bad = true;
                pthread_mutex_unlock(&j->lock);
                break;
            }
            j->to->from_float_ref(x, j->dst + r * out_bytes, (int64_t)j->n_per_row);
        }
    }
    free(row);
    return NULL;
}

static int convert_tensor(const gguf_tensor *src, uint32_t to_type, uint8_t *dst, int n_threads,
                          const char *name, um_err *e) {
    convert_job j = {
        .src = src, .to = um_traits(to_type), .dst = dst,
        .n_per_row = src->ne[0], .n_rows = src->n_elements / (src->ne[0] ? src->ne[0] : 1),
    };
    if (!j.to || !j.to->from_float_ref || j.to->is_activation)
        return um_errf(e, "tensor %s: cannot quantize to %s", name, um_type_name(to_type));
    if (src->type != UM_TYPE_F32) {
        j.from = um_traits(src->type);
        if (!j.from || j.from->is_activation)
            return um_errf(e, "tensor %s: cannot convert from type %s", name, um_type_name(src->type));
    }
    pthread_mutex_init(&j.lock, NULL);
    pthread_t th[64];
    int n = UM_MAX(1, UM_MIN(n_threads, 64));
    if ((uint64_t)n > j.n_rows) n = (int)UM_MAX(1, j.n_rows);
    int started = 0;
    for (int i = 1; i < n; i++)
        if (pthread_create(&th[started], NULL, convert_worker, &j) == 0) started++;
    convert_worker(&j);
    for (int i = 0; i < started; i++) pthread_join(th[i], NULL);
    pthread_mutex_destroy(&j.lock);
    if (j.bad && j.bad_row == UINT64_MAX) return um_errf(e, "tensor %s: out of memory", name);
    if (j.bad) return um_errf(e, "tensor %s: non-finite value in row %llu", name, (unsigned long long)j.bad_row);
    return UM_OK;
}

/* ------------------------------------------------------------------ whole files */

static int read_hparams(const gguf_file *g, um_quant_model *m, um_err *e) {
    memset(m, 0, sizeof *m);
    if (gguf_get_str(g, "general.architecture", m->arch, sizeof m->arch, e)) return UM_FAIL;
    char key[128];
    uint32_t v;
    snprintf(key, sizeof key, "%s.block_count", m->arch);
    if (gguf_get_u32(g, key, &v, e)) return UM_FAIL;
    if (v == 0 || v > 4096) return um_errf(e, "%s = %u is not a sane layer count", key, v);
    m->n_layer = (int)v;
    /* head counts may be per-layer arrays; the rules use layer 0's */
    const char *heads[2] = { "attention.head_count", "attention.head_count_kv" };
    int *dst[2] = { &m->n_head, &m->n_head_kv };
    bool found[2] = { false, false };
    for (int i = 0; i < 2; i++) {
        snprintf(key, sizeof key, "%s.%s", m->arch, heads[i]);
        const gguf_kv *kv = gguf_find_kv(g, key);
        if (!kv) continue;
        found[i] = true;
        if (kv->type == GGUF_TYPE_ARRAY) {
            if (kv->arr_n > 0 && kv->arr_type != GGUF_TYPE_STRING) *dst[i] = (int)gguf_arr_i64(kv, 0);
        } else if (gguf_get_u32(g, key, &v, e) == UM_OK) {
            *dst[i] = (int)v;
        } else {
            return UM_FAIL;
        }
    }
    if (!found[1]) m->n_head_kv = m->n_head;
    snprintf(key, sizeof key, "%s.expert_count", m->arch);
    if (gguf_find_kv(g, key)) {
        if (gguf_get_u32(g, key, &v, e)) return UM_FAIL;
        m->n_expert = (int)v;
    }
    return UM_OK;
}

static void name_copy(char *buf, size_t cap, gguf_str s) {
    size_t n = s.len < cap - 1 ? (size_t)s.len : cap - 1;
    memcpy(buf, s.ptr, n);
    buf[n] = 0;
}

int um_quantize_file(const char *in_path, const char *out_path, const um_mixture *mix,
                     const um_quantize_opts *o, um_err *e) {
    gguf_file *g = NULL;
    gguf_writer *w = NULL;
    um_quant_tensor *desc = NULL;
    char **names = NULL;
    uint32_t *types = NULL;
    uint8_t **bufs = NULL;
    size_t *order = NULL;
    uint64_t n = 0;
    int rc = UM_FAIL;
    double t0 = um_now();

    if (gguf_open(&g, in_path, e)) return UM_FAIL;
    um_quant_model m;
    if (read_hparams(g, &m, e)) { um_err_prefix(e, "%s", in_path); goto done; }

    n = gguf_n_tensors(g);
    desc = um_calloc(n ? n : 1, sizeof *desc);
    names = um_calloc(n ? n : 1, sizeof *names);
    types = um_calloc(n ? n : 1, sizeof *types);
    bufs = um_calloc(n ? n : 1, sizeof *bufs);
    if (!desc || !names || !types || !bufs) { um_errf(e, "out of memory"); goto done; }
    for (uint64_t i = 0; i < n; i++) {
        const gguf_tensor *t = gguf_tensor_at(g, i);
        names[i] = um_malloc(t->name.len + 1);
        if (!names[i]) { um_errf(e, "out of memory"); goto done; }
        name_copy(names[i], t->name.len + 1, t->name);
        desc[i].name = names[i];
        memcpy(desc[i].ne, t->ne, sizeof desc[i].ne);
        desc[i].type = t->type;
    }
    if (um_quant_choose(mix, &m, desc, n, types, e)) goto done;

    w = gguf_writer_new();
    if (!w) { um_errf(e, "out of memory"); goto done; }
    static const char *const skip[] = { "general.quantization_version", "general.file_type",
                                        "split.no", "split.count", "split.tensors.count", NULL };
    if (gguf_copy_kv(w, g, skip) || gguf_set_u32(w, "general.quantization_version", 2) ||
        gguf_set_u32(w, "general.file_type", mix->ftype)) {
        um_errf(e, "out of memory copying metadata");
        goto done;
    }

    /* tensors go out in llama-quantize's order, so the two tools write the same file */
    order = llama_order(desc, n);
    if (!order) { um_errf(e, "out of memory"); goto done; }
    uint64_t bytes_in = 0, bytes_out = 0;
    for (uint64_t k = 0; k < n; k++) {
        const uint64_t i = order[k];
        const gguf_tensor *t = gguf_tensor_at(g, i);
        const void *data = t->data;
        uint64_t size = t->size;
        if (types[i] != t->type) {
            if (is_quantized_type(t->type) && !o->allow_requantize) {
                um_errf(e, "tensor %s is already %s; requantizing loses quality (pass --allow-requantize)",
                        names[i], um_type_name(t->type));
                goto done;
            }
            uint64_t rows = t->n_elements / (t->ne[0] ? t->ne[0] : 1);
            size = rows * um_row_size(types[i], (int64_t)t->ne[0]);
            bufs[i] = um_malloc(size ? size : 1);
            if (!bufs[i]) { um_errf(e, "tensor %s: out of memory (%llu bytes)", names[i], (unsigned long long)size); goto done; }
            if (convert_tensor(t, types[i], bufs[i], o->n_threads, names[i], e)) goto done;
            data = bufs[i];
        }
        if (!o->quiet)
            fprintf(stderr, "[%4llu/%4llu] %-40s %-7s -> %-7s %10.2f MiB -> %8.2f MiB\n",
                    (unsigned long long)k + 1, (unsigned long long)n, names[i], um_type_name(t->type),
                    um_type_name(types[i]), t->size / 1048576.0, size / 1048576.0);
        bytes_in += t->size;
        bytes_out += size;
        if (gguf_add_tensor(w, names[i], types[i], UM_MAX(t->n_dims, 1), t->ne, data, size, e)) goto done;
    }
    if (gguf_writer_write(w, out_path, e)) goto done;
    if (!o->quiet)
        fprintf(stderr, "%s: %.2f MiB -> %.2f MiB (%s, file type %u) in %.1f s\n", out_path,
                bytes_in / 1048576.0, bytes_out / 1048576.0, mix->name, mix->ftype, um_now() - t0);
    rc = UM_OK;
done:
    gguf_writer_free(w);
    for (uint64_t i = 0; i < n; i++) {
        if (bufs) free(bufs[i]);
        if (names) free(names[i]);
    }
    free(order);
    free(bufs);
    free(names);
    free(types);
    free(desc);
    gguf_close(g);
    return rc;
}
