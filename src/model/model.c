/*
 * model: load a diffusion LM from GGUF: read hyper-parameters for the file's architecture,
 * bind every tensor by name, check shapes and types, convert norm weights and biases to f32.
 *
 * Shapes use ggml's order (ne[0] fastest): a weight "W: n_in -> n_out" is stored with
 * ne = {n_in, n_out}; expert weights add ne[2] = n_expert.
 */
#include "model.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chat.h"
#include "ops.h"
#include "quant.h"
#include "tokenizer.h"

#define MAX_VEC_TENSORS 8192

typedef struct loader {
    um_model   *m;
    um_err     *e;
    /* pending f32 vectors: filled in a second pass into one arena */
    struct { const gguf_tensor *t; um_vec *dst; } vecs[MAX_VEC_TENSORS];
    int         n_vecs;
    uint64_t    vec_floats;
} loader;

static const char *arch_key(const um_model *m, const char *suffix, char *buf, size_t cap) {
    snprintf(buf, cap, "%s.%s", m->arch->name, suffix);
    return buf;
}

/* Optional u32 key with default; error only if present with a bad type or value. */
static int get_u32_opt(const um_model *m, const char *suffix, uint32_t def, uint32_t *v, um_err *e) {
    char key[160];
    arch_key(m, suffix, key, sizeof key);
    const gguf_kv *kv = gguf_find_kv(m->gguf, key);
    if (!kv) { *v = def; return UM_OK; }
    if (kv->type == GGUF_TYPE_ARRAY) {
        /* per-layer arrays (e.g. head_count_kv): unmask needs them uniform */
        if (kv->arr_n == 0) return um_errf(e, "key '%s' is an empty array", key);
        int64_t first = gguf_arr_i64(kv, 0);
        for (uint64_t i = 1; i < kv->arr_n; i++)
            if (gguf_arr_i64(kv, i) != first)
                return um_errf(e, "key '%s': per-layer values differ (layer 0: %" PRId64 ", layer %" PRIu64 ": %" PRId64 "); "
                                  "non-uniform layers are not supported", key, first, i, gguf_arr_i64(kv, i));
        if (first < 0 || first > INT32_MAX) return um_errf(e, "key '%s': value %" PRId64 " out of range", key, first);
        *v = (uint32_t)first;
        return UM_OK;
    }
    return gguf_get_u32(m->gguf, key, v, e);
}

/* An integer hyper-parameter "<arch>.SUFFIX" read as its type (an unsigned 32-bit value
 * stays unsigned; no narrowing before the check) and checked against [lo, hi]: absent, def
 * (or "required key ... missing" when required); present but outside, "key 'K' = V is
 * invalid (must be LO..HI)", naming the value the file holds. */
static int get_u32_in(const um_model *m, const char *suffix, bool required, uint32_t def, uint32_t lo, uint32_t hi,
                      uint32_t *v, um_err *e) {
    char key[160];
    arch_key(m, suffix, key, sizeof key);
    if (!gguf_find_kv(m->gguf, key)) {
        if (required) return um_errf(e, "required key '%s' missing", key);
        *v = def;
        return UM_OK;
    }
    if (get_u32_opt(m, suffix, def, v, e)) return UM_FAIL;
    if (*v < lo || *v > hi) return um_errf(e, "key '%s' = %u is invalid (must be %u..%u)", key, *v, lo, hi);
    return UM_OK;
}

static int get_f32_opt(const um_model *m, const char *suffix, float def, float *v, um_err *e) {
    char key[160];
    arch_key(m, suffix, key, sizeof key);
    if (!gguf_find_kv(m->gguf, key)) { *v = def; return UM_OK; }
    return gguf_get_f32(m->gguf, key, v, e);
}

static const char *dims_str(const gguf_tensor *t, char *buf, size_t cap) {
    size_t n = 0;
    buf[0] = '\0';
    for (uint32_t d = 0; d < t->n_dims && n < cap; d++)
        n += (size_t)snprintf(buf + n, cap - n, "%s%" PRIu64, d ? " x " : "", t->ne[d]);
    return buf;
}

/* Find a tensor and check its shape (ne0, ne1, ne2; 0 = dimension must not exist beyond). */
static const gguf_tensor *find_shaped(loader *L, const char *name, int64_t ne0, int64_t ne1, int64_t ne2,
                                      bool required, int *status) {
    *status = UM_OK;
    const gguf_tensor *t = gguf_find_tensor(L->m->gguf, name);
    if (!t) {
        if (required) *status = um_errf(L->e, "tensor '%s' missing (required by architecture '%s')", name, L->m->arch->name);
        return NULL;
    }
    int64_t want[3] = { ne0, ne1, ne2 };
    uint32_t want_dims = ne2 ? 3 : ne1 ? 2 : 1;
    bool ok = t->n_dims == want_dims;
    for (uint32_t d = 0; ok && d < want_dims; d++) ok = (int64_t)t->ne[d] == want[d];
    if (!ok) {
        char got[96];
        char exp[96];
        dims_str(t, got, sizeof got);
        if (ne2) snprintf(exp, sizeof exp, "%" PRId64 " x %" PRId64 " x %" PRId64, ne0, ne1, ne2);
        else if (ne1) snprintf(exp, sizeof exp, "%" PRId64 " x %" PRId64, ne0, ne1);
        else snprintf(exp, sizeof exp, "%" PRId64, ne0);
        *status = um_errf(L->e, "tensor '%s' has shape [%s], expected [%s]", name, got, exp);
        return NULL;
    }
    return t;
}

static int check_type(loader *L, const gguf_tensor *t, bool matrix) {
    if (!um_traits(t->type))
        return um_errf(L->e, "tensor '%.*s' has type %s, which unmask cannot compute with",
                       (int)t->name.len, t->name.ptr, um_type_name(t->type));
    if (!matrix && t->type != UM_TYPE_F32 && t->type != UM_TYPE_F16 && t->type != UM_TYPE_BF16)
        return um_errf(L->e, "tensor '%.*s': 1-D tensors must be f32, f16 or bf16 (got %s)",
                       (int)t->name.len, t->name.ptr, um_type_name(t->type));
    return UM_OK;
}

static void weight_from(um_weight *w, const gguf_tensor *t, int64_t expert) {
    w->name = t->name.ptr;
    w->type = t->type;
    w->n_in = (int64_t)t->ne[0];
    w->n_out = (int64_t)t->ne[1];
    w->row_bytes = (uint64_t)w->n_in / um_type_blck(t->type) * um_type_bytes(t->type);
    w->data = (const char *)t->data + (uint64_t)expert * w->row_bytes * (uint64_t)w->n_out;
}

/* dst = rows [r0, r0 + n) of src, a view into the same mapping (weights are stored row by row). */
static void weight_rows(um_weight *dst, const um_weight *src, int64_t r0, int64_t n) {
    *dst = *src;
    dst->n_out = n;
    dst->data = (const char *)src->data + (uint64_t)r0 * src->row_bytes;
}

static int bind_weight(loader *L, um_weight *w, const char *name, int64_t n_in, int64_t n_out, bool required) {
    int st;
    memset(w, 0, sizeof *w);
    const gguf_tensor *t = find_shaped(L, name, n_in, n_out, 0, required, &st);
    if (st) return st;
    if (!t) return UM_OK;
    if (check_type(L, t, true)) return UM_FAIL;
    weight_from(w, t, 0);
    return UM_OK;
}

static int bind_vec(loader *L, um_vec *dst, const char *name, int64_t n, bool required) {
    int st;
    *dst = NULL;
    const gguf_tensor *t = find_shaped(L, name, n, 0, 0, required, &st);
    if (st) return st;
    if (!t) return UM_OK;
    if (check_type(L, t, false)) return UM_FAIL;
    if (L->n_vecs >= MAX_VEC_TENSORS) return um_errf(L->e, "too many 1-D tensors (limit %d)", MAX_VEC_TENSORS);
    L->vecs[L->n_vecs].t = t;
    L->vecs[L->n_vecs].dst = dst;
    L->n_vecs++;
    L->vec_floats += (uint64_t)n;
    return UM_OK;
}

static int bind_experts(loader *L, um_weight **out, const char *name, int64_t n_in, int64_t n_out, int64_t n_exp) {
    int st;
    const gguf_tensor *t = find_shaped(L, name, n_in, n_out, n_exp, true, &st);
    if (st) return st;
    if (check_type(L, t, true)) return UM_FAIL;
    um_weight *w = um_calloc((size_t)n_exp, sizeof *w);
    if (!w) return um_errf(L->e, "out of memory binding '%s'", name);
    for (int64_t x = 0; x < n_exp; x++) weight_from(&w[x], t, x);
    *out = w;
    return UM_OK;
}

/* MoE keys beyond expert_count/used/ff (BailingMoeV2 / LLaDA2 and the llama.cpp generic
 * ones): leading dense layers, shared experts, gating function and weight normalisation (where
 * arch->moe_from_keys), expert groups (any MoE architecture, as llama.cpp's build_moe_ffn).
 * Absent keys take the architecture's defaults. */
static int read_moe_extras(um_model *m, um_err *e) {
    um_hparams *hp = &m->hp;
    uint32_t v;
    if (get_u32_opt(m, "leading_dense_block_count", 0, &v, e)) return UM_FAIL;
    if (v > (uint32_t)hp->n_layer) return um_errf(e, "leading_dense_block_count %u exceeds the %d layers", v, hp->n_layer);
    hp->n_layer_dense_lead = (int32_t)v;
    if (hp->n_layer_dense_lead > 0 && hp->n_ff <= 0) {
        char key[160];
        arch_key(m, "feed_forward_length", key, sizeof key);
        if (!gguf_find_kv(m->gguf, key)) return um_errf(e, "required key '%s' missing (dense leading layers)", key);
        return um_errf(e, "key '%s' = 0 is invalid: the %d leading dense layers need a width", key, hp->n_layer_dense_lead);
    }
    if (get_u32_opt(m, "expert_shared_count", 0, &v, e)) return UM_FAIL;
    if (v > 64) return um_errf(e, "expert_shared_count %u out of range", v);
    hp->n_expert_shared = (int32_t)v;
    /* llama.cpp's loader: width = (expert_shared_feed_forward_length or n_ff_exp) x shared count */
    if (get_u32_opt(m, "expert_shared_feed_forward_length", 0, &v, e)) return UM_FAIL;
    if (v > (1u << 20)) return um_errf(e, "expert_shared_feed_forward_length %u out of range", v);
    hp->n_ff_shexp = (int32_t)((v ? (int64_t)v : hp->n_ff_exp) * hp->n_expert_shared);
    hp->moe_sigmoid = m->arch->router == UM_ROUTER_SIGMOID;
    hp->moe_norm_w = m->arch->moe_norm_w;
    if (m->arch->moe_from_keys) {
        if (get_u32_opt(m, "expert_gating_func", hp->moe_sigmoid ? 2u : 1u, &v, e)) return UM_FAIL;
        if (v != 1 && v != 2)  /* llama.cpp's enum: 1 softmax, 2 sigmoid */
            return um_errf(e, "expert_gating_func %u unsupported (1 softmax and 2 sigmoid are)", v);
        hp->moe_sigmoid = v == 2;
        char key[160];
        arch_key(m, "expert_weights_norm", key, sizeof key);
        if (gguf_find_kv(m->gguf, key) && gguf_get_bool(m->gguf, key, &hp->moe_norm_w, e)) return UM_FAIL;
    }
    uint32_t ng, nu;
    if (get_u32_opt(m, "expert_group_count", 0, &ng, e) || get_u32_opt(m, "expert_group_used_count", 0, &nu, e))
        return UM_FAIL;
    if (ng > 1) {
        /* as llama.cpp's loader asserts: groups divide the experts, 0 < used < groups */
        if (ng > UM_MOE_MAX_GROUPS || hp->n_expert % (int32_t)ng || nu == 0 || nu >= ng)
            return um_errf(e, "expert_group_count %u / expert_group_used_count %u invalid for %d experts", ng, nu, hp->n_expert);
        if ((int64_t)nu * (hp->n_expert / (int32_t)ng) < hp->n_expert_used)
            return um_errf(e, "expert_group_used_count %u leaves fewer experts than expert_used_count %d", nu, hp->n_expert_used);
        hp->n_expert_groups = (int32_t)ng;
        hp->n_group_used = (int32_t)nu;
    }
    return UM_OK;
}

#define MAX_DIM (1u << 20)          /* widths: embedding, feed-forward */

/* ------------------------------------------------------------------ diffusion.* keys */

static int diffusion_f32(const um_model *m, const char *key, float def, float lo, float hi, float *v, um_err *e) {
    *v = def;
    if (gguf_find_kv(m->gguf, key) && gguf_get_f32(m->gguf, key, v, e)) return UM_FAIL;
    if (!(*v >= lo && *v <= hi)) return um_errf(e, "%s = %g out of range [%g, %g]", key, (double)*v, (double)lo, (double)hi);
    return UM_OK;
}

static int diffusion_u32(const um_model *m, const char *key, uint32_t def, uint32_t lo, uint32_t hi, int32_t *v, um_err *e) {
    uint32_t x = def;
    if (gguf_find_kv(m->gguf, key) && gguf_get_u32(m->gguf, key, &x, e)) return UM_FAIL;
    if (x < lo || x > hi) return um_errf(e, "%s = %u out of range [%u, %u]", key, x, lo, hi);
    *v = (int32_t)x;
    return UM_OK;
}

/* The uniform-state sampler's keys (DiffusionGemma's, and a masked architecture's file with
 * UM_UNIFORM_STATE_KEY): diffusion.canvas_length required (why: what needs it), then the
 * settings with diffusion-cli.cpp's fallbacks when a key is absent (the converter writes them
 * from generation_config.json): 48 steps, t 0.4..0.8, bound 0.1, stability 1, confidence 0.005. */
static int uniform_sampler_keys(um_model *m, const char *why, um_err *e) {
    um_hparams *hp = &m->hp;
    if (!gguf_find_kv(m->gguf, "diffusion.canvas_length"))
        return um_errf(e, "required key 'diffusion.canvas_length' missing (%s)", why);
    if (diffusion_u32(m, "diffusion.canvas_length", 0, 1, 65536, &hp->canvas_length, e) ||
        diffusion_u32(m, "diffusion.eb_max_steps", 48, 1, 100000, &hp->eb_max_steps, e) ||
        diffusion_f32(m, "diffusion.eb_t_min", 0.4f, 0.0f, 100.0f, &hp->eb_t_min, e) ||
        diffusion_f32(m, "diffusion.eb_t_max", 0.8f, 0.0f, 100.0f, &hp->eb_t_max, e) ||
        diffusion_f32(m, "diffusion.eb_entropy_bound", 0.1f, 0.0f, 1e6f, &hp->eb_entropy_bound, e) ||
        diffusion_u32(m, "diffusion.eb_stability_threshold", 1, 0, 100000, &hp->eb_stability, e) ||
        diffusion_f32(m, "diffusion.eb_confidence_threshold", 0.005f, 0.0f, 1e6f, &hp->eb_confidence, e))
        return UM_FAIL;
    return UM_OK;
}

int model_gguf_uniform_state(const gguf_file *g, const um_arch *a, bool *uniform, um_err *e) {
    *uniform = a && a->uniform_state;
    bool key = false;
    if (gguf_find_kv(g, UM_UNIFORM_STATE_KEY) && gguf_get_bool(g, UM_UNIFORM_STATE_KEY, &key, e)) return UM_FAIL;
    *uniform |= key;
    return UM_OK;
}

/* ------------------------------------------------------------------ masked architectures */

static int read_hparams(um_model *m, um_err *e) {
    um_hparams *hp = &m->hp;
    uint32_t v;
    if (get_u32_in(m, "embedding_length", true, 0, 1, MAX_DIM, &v, e)) return UM_FAIL;
    hp->n_embd = (int32_t)v;
    if (get_u32_in(m, "block_count", true, 0, 1, 8192, &v, e)) return UM_FAIL;
    hp->n_layer = (int32_t)v;
    /* trailing multi-token-prediction layers (BailingMoeV2's num_nextn_predict_layers) are
     * counted in block_count; a diffusion pass never runs them */
    uint32_t nextn;
    if (get_u32_opt(m, "nextn_predict_layers", 0, &nextn, e)) return UM_FAIL;
    if (nextn >= (uint32_t)hp->n_layer)
        return um_errf(e, "nextn_predict_layers %u leaves no layer of block_count %d", nextn, hp->n_layer);
    hp->n_layer_nextn = (int32_t)nextn;
    hp->n_layer -= hp->n_layer_nextn;
    if (hp->n_layer > 4096) return um_errf(e, "block_count %d: more than 4096 layers to run", hp->n_layer);
    if (get_u32_in(m, "attention.head_count", true, 0, 1, 4096, &v, e)) return UM_FAIL;
    hp->n_head = (int32_t)v;
    if (get_u32_in(m, "attention.head_count_kv", false, (uint32_t)hp->n_head, 1, 4096, &v, e)) return UM_FAIL;
    hp->n_head_kv = (int32_t)v;
    /* any context a uint32 can say is valid; above INT32_MAX it limits nothing unmask runs */
    if (get_u32_in(m, "context_length", false, 4096, 1, UINT32_MAX, &v, e)) return UM_FAIL;
    hp->n_ctx_train = v > INT32_MAX ? INT32_MAX : (int32_t)v;
    if (hp->n_head % hp->n_head_kv)
        return um_errf(e, "attention.head_count_kv %d must divide head_count %d", hp->n_head_kv, hp->n_head);
    uint32_t def_hd = hp->n_embd % hp->n_head ? 0 : (uint32_t)(hp->n_embd / hp->n_head);
    if (get_u32_opt(m, "attention.key_length", def_hd, &v, e)) return UM_FAIL;
    if (v < 2 || v > 1024 || v % 2) return um_errf(e, "head dimension %u unsupported (must be even, 2..1024)", v);
    hp->head_dim = (int32_t)v;
    uint32_t vlen;
    if (get_u32_opt(m, "attention.value_length", (uint32_t)hp->head_dim, &vlen, e)) return UM_FAIL;
    if (vlen != (uint32_t)hp->head_dim)
        return um_errf(e, "attention.value_length %u differs from key_length %d (unsupported)", vlen, hp->head_dim);
    if (get_u32_opt(m, "rope.dimension_count", (uint32_t)hp->head_dim, &v, e)) return UM_FAIL;
    if (v == 0 || v > (uint32_t)hp->head_dim || v % 2)
        return um_errf(e, "rope.dimension_count %u invalid for head dimension %d", v, hp->head_dim);
    hp->n_rot = (int32_t)v;
    if (get_f32_opt(m, "rope.freq_base", 10000.0f, &hp->rope_base, e)) return UM_FAIL;
    if (!(hp->rope_base > 0)) return um_errf(e, "rope.freq_base must be positive");
    char key[160];
    arch_key(m, "attention.layer_norm_rms_epsilon", key, sizeof key);
    if (!gguf_find_kv(m->gguf, key)) return um_errf(e, "required key '%s' missing", key);
    if (gguf_get_f32(m->gguf, key, &hp->norm_eps, e)) return UM_FAIL;
    if (!(hp->norm_eps > 0 && hp->norm_eps < 1)) return um_errf(e, "%s = %g out of range", key, hp->norm_eps);
    /* a dense model needs the width; a MoE model's file may say 0 where no layer is dense */
    if (get_u32_in(m, "feed_forward_length", !m->arch->moe, 0, m->arch->moe ? 0 : 1, MAX_DIM, &v, e)) return UM_FAIL;
    hp->n_ff = (int32_t)v;
    if (m->arch->moe) {
        if (get_u32_in(m, "expert_count", true, 0, 1, 4096, &v, e)) return UM_FAIL;
        hp->n_expert = (int32_t)v;
        if (get_u32_in(m, "expert_used_count", true, 0, 1, (uint32_t)hp->n_expert, &v, e)) return UM_FAIL;
        hp->n_expert_used = (int32_t)v;
        arch_key(m, "expert_feed_forward_length", key, sizeof key);
        bool have = gguf_find_kv(m->gguf, key) != NULL;
        if (!have && hp->n_ff / hp->n_expert_used <= 0)
            return um_errf(e, "required key '%s' missing (feed_forward_length does not give it)", key);
        if (get_u32_in(m, "expert_feed_forward_length", false, (uint32_t)(hp->n_ff / hp->n_expert_used), 1, MAX_DIM,
                       &v, e))
            return UM_FAIL;
        hp->n_ff_exp = (int32_t)v;
        if (get_f32_opt(m, "expert_weights_scale", 0.0f, &hp->expert_weights_scale, e)) return UM_FAIL;
        if (read_moe_extras(m, e)) return UM_FAIL;
    }
    bool b;
    const gguf_kv *kv = gguf_find_kv(m->gguf, "diffusion.shift_logits");
    if (kv) {
        if (gguf_get_bool(m->gguf, "diffusion.shift_logits", &b, e)) return UM_FAIL;
        hp->shift_logits = b;
    } else {
        hp->shift_logits = m->arch->shift_logits;
    }
    hp->mask_id = m->arch->default_mask_id > 0 ? m->arch->default_mask_id : -1;   /* the file's: bind_all */
    hp->block_size = 0;
    if (m->arch->block_causal) {
        /* No converter writes the block length (it is a generate() argument, 32 by default in
         * modeling_llada2_moe.py); diffusion.block_length is unmask's own optional key. */
        hp->block_size = m->arch->default_block_size;
        if (gguf_find_kv(m->gguf, "diffusion.block_length")) {
            if (gguf_get_u32(m->gguf, "diffusion.block_length", &v, e)) return UM_FAIL;
            if (v < 1 || v > 65536) return um_errf(e, "diffusion.block_length %u out of range [1, 65536]", v);
            hp->block_size = (int32_t)v;
        }
    }
    /* a masked architecture's file trained on random-token corruption decodes uniform-state
     * (its mask token stays, unused) */
    if (hp->uniform_state &&
        uniform_sampler_keys(m, UM_UNIFORM_STATE_KEY " = true needs the uniform-state sampler's canvas length", e))
        return UM_FAIL;
    return UM_OK;
}

/* ------------------------------------------------------------------ Gemma 4 (DiffusionGemma)
 * Keys and tensors as llama.cpp's DiffusionGemma port reads them (unslothai/llama.cpp
 * refs/pins/c3fb9724: src/models/diffusion-gemma.cpp load_arch_hparams / load_arch_tensors,
 * src/llama-model.cpp's common loader for head counts, key lengths and rope dims; the
 * converter conversion/gemma.py Gemma4Model + conversion/diffusion_gemma.py writes them). */

/* A per-layer value given as one number or as an array of n_layer numbers (llama.cpp's
 * get_key_or_arr). Absent: def, or an error when required. */
static int gemma_layer_key(const um_model *m, const char *suffix, bool required, int64_t def, int64_t *out, um_err *e) {
    char key[160];
    arch_key(m, suffix, key, sizeof key);
    const int n = m->hp.n_layer;
    const gguf_kv *kv = gguf_find_kv(m->gguf, key);
    if (!kv) {
        if (required) return um_errf(e, "required key '%s' missing", key);
        for (int il = 0; il < n; il++) out[il] = def;
        return UM_OK;
    }
    if (kv->type != GGUF_TYPE_ARRAY) {
        uint32_t v;
        bool b;
        if (kv->type == GGUF_TYPE_BOOL) { if (gguf_get_bool(m->gguf, key, &b, e)) return UM_FAIL; v = b; }
        else if (gguf_get_u32(m->gguf, key, &v, e)) return UM_FAIL;
        for (int il = 0; il < n; il++) out[il] = v;
        return UM_OK;
    }
    if (kv->arr_type == GGUF_TYPE_STRING || kv->arr_n != (uint64_t)n)
        return um_errf(e, "key '%s': expected %d per-layer numbers, got an array of %" PRIu64, key, n, kv->arr_n);
    for (int il = 0; il < n; il++) out[il] = gguf_arr_i64(kv, (uint64_t)il);
    return UM_OK;
}

/* Hyper-parameters; the per-layer geometry goes into m->layers (allocated here). */
static int gemma_hparams(um_model *m, um_err *e) {
    um_hparams *hp = &m->hp;
    uint32_t v;
    if (get_u32_in(m, "embedding_length", true, 0, 1, 1u << 20, &v, e)) return UM_FAIL;
    hp->n_embd = (int32_t)v;
    if (get_u32_in(m, "block_count", true, 0, 1, 4096, &v, e)) return UM_FAIL;
    hp->n_layer = (int32_t)v;
    if (get_u32_in(m, "attention.head_count", true, 0, 1, 4096, &v, e)) return UM_FAIL;       /* uniform in Gemma 4 */
    hp->n_head = (int32_t)v;
    if (get_u32_in(m, "context_length", false, 131072, 1, UINT32_MAX, &v, e)) return UM_FAIL;
    hp->n_ctx_train = v > INT32_MAX ? INT32_MAX : (int32_t)v;
    char key[160];
    arch_key(m, "attention.layer_norm_rms_epsilon", key, sizeof key);
    if (!gguf_find_kv(m->gguf, key)) return um_errf(e, "required key '%s' missing", key);
    if (gguf_get_f32(m->gguf, key, &hp->norm_eps, e)) return UM_FAIL;
    if (!(hp->norm_eps > 0 && hp->norm_eps < 1)) return um_errf(e, "%s = %g out of range", key, hp->norm_eps);
    /* head sizes: key_length / value_length for global layers, *_swa for sliding ones (both
     * required equal to K's, as load_arch_tensors throws otherwise) */
    uint32_t hd_full, hd_swa, vl, n_rot_full, n_rot_swa;
    uint32_t def_hd = hp->n_embd % hp->n_head ? 0 : (uint32_t)(hp->n_embd / hp->n_head);
    if (get_u32_opt(m, "attention.key_length", def_hd, &hd_full, e)) return UM_FAIL;
    if (get_u32_opt(m, "attention.value_length", hd_full, &vl, e)) return UM_FAIL;
    if (vl != hd_full) return um_errf(e, "attention.value_length %u differs from key_length %u (unsupported)", vl, hd_full);
    if (get_u32_in(m, "attention.key_length_swa", true, 0, 2, UM_OPS_MAX_HEAD_DIM, &hd_swa, e)) return UM_FAIL;
    if (get_u32_opt(m, "attention.value_length_swa", hd_swa, &vl, e)) return UM_FAIL;
    if (vl != hd_swa) return um_errf(e, "attention.value_length_swa %u differs from key_length_swa %u (unsupported)", vl, hd_swa);
    if (get_u32_opt(m, "rope.dimension_count", hd_full, &n_rot_full, e)) return UM_FAIL;
    if (get_u32_opt(m, "rope.dimension_count_swa", n_rot_full, &n_rot_swa, e)) return UM_FAIL;
    float base_full, base_swa;
    if (get_f32_opt(m, "rope.freq_base", 10000.0f, &base_full, e) || get_f32_opt(m, "rope.freq_base_swa", 10000.0f, &base_swa, e))
        return UM_FAIL;
    if (!(base_full > 0) || !(base_swa > 0)) return um_errf(e, "rope.freq_base / rope.freq_base_swa must be positive");
    if (get_u32_in(m, "attention.sliding_window", true, 0, 1, 1u << 24, &v, e)) return UM_FAIL;
    hp->n_swa = (int32_t)v;
    if (get_f32_opt(m, "final_logit_softcapping", 0.0f, &hp->softcap, e)) return UM_FAIL;
    if (!(hp->softcap >= 0 && hp->softcap < 1e6f)) return um_errf(e, "final_logit_softcapping %g out of range", hp->softcap);

    m->layers = um_calloc((size_t)hp->n_layer, sizeof *m->layers);
    int64_t *arr = um_calloc((size_t)hp->n_layer, sizeof *arr);
    int rc = UM_FAIL;
    if (!m->layers || !arr) { um_errf(e, "out of memory"); goto out; }
    if (gemma_layer_key(m, "attention.sliding_window_pattern", true, 0, arr, e)) goto out;
    for (int il = 0; il < hp->n_layer; il++) m->layers[il].swa = arr[il] != 0;
    if (gemma_layer_key(m, "attention.head_count_kv", false, hp->n_head, arr, e)) goto out;
    hp->head_dim = hp->n_head_kv = hp->n_rot = 0;
    hp->nkv_max = 0;
    for (int il = 0; il < hp->n_layer; il++) {
        um_layer *l = &m->layers[il];
        l->head_dim = (int32_t)(l->swa ? hd_swa : hd_full);
        l->n_rot = (int32_t)(l->swa ? n_rot_swa : n_rot_full);
        l->rope_base = l->swa ? base_swa : base_full;
        if (arr[il] <= 0 || arr[il] > hp->n_head || hp->n_head % arr[il]) {
            um_errf(e, "attention.head_count_kv %" PRId64 " of layer %d must divide head_count %d", arr[il], il, hp->n_head);
            goto out;
        }
        l->n_head_kv = (int32_t)arr[il];
        if (l->head_dim < 2 || l->head_dim > UM_OPS_MAX_HEAD_DIM || l->head_dim % 2) {
            um_errf(e, "layer %d: head dimension %d unsupported (even, 2..%d)", il, l->head_dim, UM_OPS_MAX_HEAD_DIM);
            goto out;
        }
        if (l->n_rot < 2 || l->n_rot > l->head_dim || l->n_rot % 2) {
            um_errf(e, "layer %d: rope dimension %d invalid for head dimension %d", il, l->n_rot, l->head_dim);
            goto out;
        }
        hp->head_dim = UM_MAX(hp->head_dim, l->head_dim);
        hp->n_head_kv = UM_MAX(hp->n_head_kv, l->n_head_kv);
        hp->n_rot = UM_MAX(hp->n_rot, l->n_rot);
        hp->nkv_max = UM_MAX(hp->nkv_max, (int64_t)l->n_head_kv * l->head_dim);
    }
    hp->rope_base = base_full;
    if (get_u32_in(m, "feed_forward_length", true, 0, 1, 1u << 20, &v, e)) goto out;
    hp->n_ff = (int32_t)v;
    if (get_u32_in(m, "expert_count", true, 0, 1, 4096, &v, e)) goto out;
    hp->n_expert = (int32_t)v;
    if (get_u32_in(m, "expert_used_count", true, 0, 1, UM_MOE_MAX_K, &v, e)) goto out;
    hp->n_expert_used = (int32_t)v;
    if (get_u32_in(m, "expert_feed_forward_length", true, 0, 1, 1u << 20, &v, e)) goto out;
    hp->n_ff_exp = (int32_t)v;
    if (hp->n_ff <= 0 || hp->n_ff > (1 << 20) || hp->n_ff_exp <= 0 || hp->n_ff_exp > (1 << 20) || hp->n_expert <= 0 ||
        hp->n_expert > 4096 || hp->n_expert_used <= 0 || hp->n_expert_used > hp->n_expert || hp->n_expert_used > UM_MOE_MAX_K) {
        um_errf(e, "feed_forward_length %d / expert_count %d / expert_used_count %d / expert_feed_forward_length %d invalid",
                hp->n_ff, hp->n_expert, hp->n_expert_used, hp->n_ff_exp);
        goto out;
    }
    /* gemma4-common.h's build_moe_ffn call: softmax gating, weights renormalised, scale 1 */
    hp->moe_sigmoid = false;
    hp->moe_norm_w = true;
    hp->expert_weights_scale = 0.0f;
    hp->shift_logits = false;           /* diffusion-cli: shift_logits = (canvas_length == 0) */
    hp->mask_id = -1;                   /* uniform-state: no mask token */
    if (uniform_sampler_keys(m, "DiffusionGemma splits [prompt | canvas] on it", e)) goto out;
    rc = UM_OK;
out:
    free(arr);
    return rc;
}

/* Every weight-scale tensor llama.cpp would apply; unmask knows the two Gemma 4 has. */
static int gemma_check_scales(loader *L) {
    const um_model *m = L->m;
    for (uint64_t i = 0; i < gguf_n_tensors(m->gguf); i++) {
        const gguf_tensor *t = gguf_tensor_at(m->gguf, i);
        const char *n = t->name.ptr;
        size_t len = t->name.len;
        if (len < 6 || memcmp(n + len - 6, ".scale", 6)) continue;
        if ((len > 19 && !memcmp(n + len - 19, ".ffn_gate_inp.scale", 19)) ||
            (len > 20 && !memcmp(n + len - 20, ".ffn_down_exps.scale", 20)))
            continue;
        return um_errf(L->e, "tensor '%.*s': weight scales other than ffn_gate_inp.scale and ffn_down_exps.scale are "
                             "not supported", (int)len, n);
    }
    return UM_OK;
}

static int gemma_bind(loader *L) {
    um_model *m = L->m;
    um_hparams *hp = &m->hp;
    const int64_t E = hp->n_embd, F = hp->n_ff, FX = hp->n_ff_exp, X = hp->n_expert;
    if (gemma_check_scales(L)) return UM_FAIL;
    /* self-conditioning MLP (TENSOR_NOT_REQUIRED in the port): all four or none */
    if (bind_vec(L, &m->sc_pre_norm, "self_cond_pre_norm.weight", E, false) ||
        bind_weight(L, &m->sc_gate, "self_cond_gate.weight", E, F, false) ||
        bind_weight(L, &m->sc_up, "self_cond_up.weight", E, F, false) ||
        bind_weight(L, &m->sc_down, "self_cond_down.weight", F, E, false))
        return UM_FAIL;
    int n_sc = !!gguf_find_tensor(m->gguf, "self_cond_pre_norm.weight") + !!m->sc_gate.data + !!m->sc_up.data + !!m->sc_down.data;
    if (n_sc != 0 && n_sc != 4)
        return um_errf(L->e, "self-conditioning tensors incomplete: self_cond_pre_norm, _gate, _up and _down come together");
    char n[128];
#define NAME(fmt) (snprintf(n, sizeof n, "blk.%d." fmt, il), n)
    for (int il = 0; il < hp->n_layer; il++) {
        um_layer *l = &m->layers[il];
        const int64_t HD = l->head_dim, NQ = (int64_t)hp->n_head * HD, NKV = (int64_t)l->n_head_kv * HD;
        if (!l->swa && !m->rope_freqs_bound) {
            /* one model-wide tensor for every global layer (load_arch_tensors: TENSOR_DUPLICATED after
             * the first), sized by the first global layer's head */
            if (bind_vec(L, &m->rope_freqs, "rope_freqs.weight", HD / 2, true)) return UM_FAIL;
            m->rope_freqs_bound = true;
            m->rope_freqs_n = (int32_t)(HD / 2);
        }
        if (!l->swa && HD / 2 != m->rope_freqs_n)
            return um_errf(L->e, "layer %d: global layers differ in head size (%" PRId64 " vs %d)", il, HD, 2 * m->rope_freqs_n);
        if (bind_vec(L, &l->attn_norm, NAME("attn_norm.weight"), E, true) ||
            bind_weight(L, &l->wq, NAME("attn_q.weight"), E, NQ, true) ||
            bind_weight(L, &l->wk, NAME("attn_k.weight"), E, NKV, true) ||
            bind_weight(L, &l->wv, NAME("attn_v.weight"), E, NKV, false) ||
            bind_weight(L, &l->wo, NAME("attn_output.weight"), NQ, E, true) ||
            bind_vec(L, &l->q_norm, NAME("attn_q_norm.weight"), HD, true) ||
            bind_vec(L, &l->k_norm, NAME("attn_k_norm.weight"), HD, true) ||
            bind_vec(L, &l->attn_post_norm, NAME("post_attention_norm.weight"), E, true) ||
            bind_vec(L, &l->out_scale, NAME("layer_output_scale.weight"), 1, true) ||
            bind_vec(L, &l->enc_out_scale, NAME("enc_layer_output_scale.weight"), 1, true) ||
            bind_vec(L, &l->ffn_norm, NAME("ffn_norm.weight"), E, true) ||
            bind_weight(L, &l->ffn_gate, NAME("ffn_gate.weight"), E, F, true) ||
            bind_weight(L, &l->ffn_up, NAME("ffn_up.weight"), E, F, true) ||
            bind_weight(L, &l->ffn_down, NAME("ffn_down.weight"), F, E, true) ||
            bind_vec(L, &l->ffn_post_norm, NAME("post_ffw_norm.weight"), E, true) ||
            bind_weight(L, &l->ffn_gate_inp, NAME("ffn_gate_inp.weight"), E, X, true) ||
            bind_vec(L, &l->ffn_gate_inp_s, NAME("ffn_gate_inp.scale"), E, true) ||
            bind_vec(L, &l->ffn_pre_norm_2, NAME("pre_ffw_norm_2.weight"), E, true) ||
            bind_vec(L, &l->ffn_post_norm_1, NAME("post_ffw_norm_1.weight"), E, true) ||
            bind_vec(L, &l->ffn_post_norm_2, NAME("post_ffw_norm_2.weight"), E, true) ||
            bind_vec(L, &l->down_exps_s, NAME("ffn_down_exps.scale"), X, false))
            return UM_FAIL;
        l->v_from_k = !l->wv.data;
        if (l->v_from_k) l->wv = l->wk;
        if (gguf_find_tensor(m->gguf, NAME("ffn_gate_up_exps.weight"))) {
            int st;
            const gguf_tensor *t = find_shaped(L, n, E, 2 * FX, X, true, &st);
            if (st) return st;
            if (check_type(L, t, true)) return UM_FAIL;
            l->gate_exps = um_calloc((size_t)X, sizeof *l->gate_exps);
            l->up_exps = um_calloc((size_t)X, sizeof *l->up_exps);
            if (!l->gate_exps || !l->up_exps) return um_errf(L->e, "out of memory binding '%s'", n);
            for (int64_t x = 0; x < X; x++) {
                um_weight both;
                weight_from(&both, t, x);
                weight_rows(&l->gate_exps[x], &both, 0, FX);
                weight_rows(&l->up_exps[x], &both, FX, FX);
            }
        } else if (bind_experts(L, &l->gate_exps, NAME("ffn_gate_exps.weight"), E, FX, X) ||
                   bind_experts(L, &l->up_exps, NAME("ffn_up_exps.weight"), E, FX, X)) {
            return UM_FAIL;
        }
        if (bind_experts(L, &l->down_exps, NAME("ffn_down_exps.weight"), FX, E, X)) return UM_FAIL;
    }
#undef NAME
    return UM_OK;
}


static int bind_all(loader *L) {
    um_model *m = L->m;
    um_hparams *hp = &m->hp;
    const gguf_tensor *te = gguf_find_tensor(m->gguf, "token_embd.weight");
    if (!te) return um_errf(L->e, "tensor 'token_embd.weight' missing (required by architecture '%s')", m->arch->name);
    if (te->n_dims != 2 || (int64_t)te->ne[0] != hp->n_embd || te->ne[1] == 0 || te->ne[1] > (1u << 24))
        return um_errf(L->e, "tensor 'token_embd.weight' must be [%d x n_vocab]", hp->n_embd);
    hp->n_vocab = (int32_t)te->ne[1];
    /* a uniform-state model decodes without a mask token, whatever its vocabulary names one */
    if (!m->arch->uniform_state && gguf_find_kv(m->gguf, "tokenizer.ggml.mask_token_id")) {   /* read as its type, then checked */
        uint64_t id;
        if (gguf_get_u64(m->gguf, "tokenizer.ggml.mask_token_id", &id, L->e)) return UM_FAIL;
        if (id >= (uint64_t)hp->n_vocab)
            return um_errf(L->e, "key 'tokenizer.ggml.mask_token_id' = %llu is outside the vocabulary (%d tokens)",
                           (unsigned long long)id, hp->n_vocab);
        hp->mask_id = (int32_t)id;
    } else if (hp->mask_id >= hp->n_vocab) {
        hp->mask_id = -1;             /* the family default does not fit this (synthetic) vocabulary */
    }
    if (bind_weight(L, &m->tok_embd, "token_embd.weight", hp->n_embd, hp->n_vocab, true)) return UM_FAIL;
    if (bind_vec(L, &m->output_norm, "output_norm.weight", hp->n_embd, true)) return UM_FAIL;
    if (bind_weight(L, &m->output, "output.weight", hp->n_embd, hp->n_vocab, !m->arch->output_optional)) return UM_FAIL;
    if (!m->output.data) m->output = m->tok_embd;
    if (bind_vec(L, &m->output_b, "output.bias", hp->n_vocab, false)) return UM_FAIL;
    if (m->arch->gemma4) return gemma_bind(L);

    m->layers = um_calloc((size_t)hp->n_layer, sizeof *m->layers);
    if (!m->layers) return um_errf(L->e, "out of memory");
    const int64_t E = hp->n_embd, HD = hp->head_dim;
    const int64_t NQ = hp->n_head * HD, NKV = hp->n_head_kv * HD;
    char n[128];
#define NAME(fmt) (snprintf(n, sizeof n, "blk.%d." fmt, il), n)
    for (int il = 0; il < hp->n_layer; il++) {
        um_layer *l = &m->layers[il];
        if (!m->arch->fused_qkv && gguf_find_tensor(m->gguf, NAME("attn_qkv.weight")))
            return um_errf(L->e, "tensor '%s': fused QKV weights are not supported for '%s'", n, m->arch->name);
        if (gguf_find_tensor(m->gguf, NAME("rope_freqs.weight")))
            return um_errf(L->e, "tensor '%s': RoPE frequency factors are not supported", n);
        if (bind_vec(L, &l->attn_norm, NAME("attn_norm.weight"), E, true)) return UM_FAIL;
        if (m->arch->fused_qkv) {
            /* one (NQ + 2 NKV, E) matrix, rows [Q; K; V] as HF's query_key_value (split in that
             * order by modeling_llada2_moe.py and by llama.cpp's build_qkv): three row-range views */
            um_weight qkv;
            if (bind_weight(L, &qkv, NAME("attn_qkv.weight"), E, NQ + 2 * NKV, true)) return UM_FAIL;
            weight_rows(&l->wq, &qkv, 0, NQ);
            weight_rows(&l->wk, &qkv, NQ, NKV);
            weight_rows(&l->wv, &qkv, NQ + NKV, NKV);
        } else {
            if (bind_weight(L, &l->wq, NAME("attn_q.weight"), E, NQ, true)) return UM_FAIL;
            if (bind_weight(L, &l->wk, NAME("attn_k.weight"), E, NKV, true)) return UM_FAIL;
            if (bind_weight(L, &l->wv, NAME("attn_v.weight"), E, NKV, true)) return UM_FAIL;
        }
        if (bind_weight(L, &l->wo, NAME("attn_output.weight"), NQ, E, true)) return UM_FAIL;
        if (bind_vec(L, &l->bq, NAME("attn_q.bias"), NQ, false)) return UM_FAIL;
        if (bind_vec(L, &l->bk, NAME("attn_k.bias"), NKV, false)) return UM_FAIL;
        if (bind_vec(L, &l->bv, NAME("attn_v.bias"), NKV, false)) return UM_FAIL;
        if (bind_vec(L, &l->bo, NAME("attn_output.bias"), E, false)) return UM_FAIL;
        if (m->arch->qk_norm) {
            if (bind_vec(L, &l->q_norm, NAME("attn_q_norm.weight"), HD, true)) return UM_FAIL;
            if (bind_vec(L, &l->k_norm, NAME("attn_k_norm.weight"), HD, true)) return UM_FAIL;
        }
        if (bind_vec(L, &l->ffn_norm, NAME("ffn_norm.weight"), E, true)) return UM_FAIL;
        if (m->arch->moe && il >= hp->n_layer_dense_lead) {
            const int64_t X = hp->n_expert, F = hp->n_ff_exp;
            if (bind_weight(L, &l->ffn_gate_inp, NAME("ffn_gate_inp.weight"), E, X, true)) return UM_FAIL;
            if (bind_vec(L, &l->exp_probs_b, NAME("exp_probs_b.bias"), X, false)) return UM_FAIL;
            if (bind_experts(L, &l->gate_exps, NAME("ffn_gate_exps.weight"), E, F, X)) return UM_FAIL;
            if (bind_experts(L, &l->up_exps, NAME("ffn_up_exps.weight"), E, F, X)) return UM_FAIL;
            if (bind_experts(L, &l->down_exps, NAME("ffn_down_exps.weight"), F, E, X)) return UM_FAIL;
            if (hp->n_expert_shared > 0) {
                const int64_t FS = hp->n_ff_shexp;
                if (bind_weight(L, &l->ffn_gate_shexp, NAME("ffn_gate_shexp.weight"), E, FS, true)) return UM_FAIL;
                if (bind_weight(L, &l->ffn_up_shexp, NAME("ffn_up_shexp.weight"), E, FS, true)) return UM_FAIL;
                if (bind_weight(L, &l->ffn_down_shexp, NAME("ffn_down_shexp.weight"), FS, E, true)) return UM_FAIL;
            } else if (gguf_find_tensor(m->gguf, NAME("ffn_gate_shexp.weight"))) {
                return um_errf(L->e, "tensor '%s' present but %s.expert_shared_count is 0 or missing", n, m->arch->name);
            }
        } else {
            const int64_t F = hp->n_ff;
            if (bind_weight(L, &l->ffn_gate, NAME("ffn_gate.weight"), E, F, true)) return UM_FAIL;
            if (bind_weight(L, &l->ffn_up, NAME("ffn_up.weight"), E, F, true)) return UM_FAIL;
            if (bind_weight(L, &l->ffn_down, NAME("ffn_down.weight"), F, E, true)) return UM_FAIL;
            if (bind_vec(L, &l->ffn_gate_b, NAME("ffn_gate.bias"), F, false)) return UM_FAIL;
            if (bind_vec(L, &l->ffn_up_b, NAME("ffn_up.bias"), F, false)) return UM_FAIL;
            if (bind_vec(L, &l->ffn_down_b, NAME("ffn_down.bias"), E, false)) return UM_FAIL;
        }
    }
#undef NAME
    return UM_OK;
}

static int convert_vecs(loader *L) {
    um_model *m = L->m;
    m->vec_arena = um_malloc_aligned(L->vec_floats * sizeof(float));
    if (!m->vec_arena) return um_errf(L->e, "out of memory for %" PRIu64 " norm/bias values", L->vec_floats);
    float *p = m->vec_arena;
    for (int i = 0; i < L->n_vecs; i++) {
        const gguf_tensor *t = L->vecs[i].t;
        int64_t n = (int64_t)t->ne[0];
        const um_type_traits *tr = um_traits(t->type);
        tr->to_float_ref(t->data, p, n);
        *L->vecs[i].dst = p;
        p += n;
    }
    return UM_OK;
}

static uint32_t main_type(const um_model *m) {
    uint64_t bytes[UM_TYPE_COUNT] = { 0 };
    for (uint64_t i = 0; i < gguf_n_tensors(m->gguf); i++) {
        const gguf_tensor *t = gguf_tensor_at(m->gguf, i);
        if (t->n_dims >= 2 && t->type < UM_TYPE_COUNT) bytes[t->type] += t->size;
    }
    uint32_t best = 0;
    for (uint32_t t = 1; t < UM_TYPE_COUNT; t++)
        if (bytes[t] > bytes[best]) best = t;
    return best;
}

int model_from_gguf(um_model **out, gguf_file *g, um_err *e) {
    *out = NULL;
    um_model *m = um_calloc(1, sizeof *m);
    loader *L = um_calloc(1, sizeof *L);
    if (!m || !L) { free(m); free(L); gguf_close(g); return um_errf(e, "out of memory"); }
    m->gguf = g;
    m->file_bytes = gguf_file_size(g);
    L->m = m;
    L->e = e;
    char arch[64];
    if (gguf_n_tensors(g) == 0) {
        um_errf(e, "vocabulary only (no weights)");
        goto fail;
    }
    if (gguf_get_str(g, "general.architecture", arch, sizeof arch, e)) goto fail;
    m->arch = arch_find(arch);
    if (!m->arch) {
        um_errf(e, "unknown architecture '%s' (supported: %s)", arch, arch_supported_list());
        goto fail;
    }
    if (gguf_find_kv(g, "general.name")) {
        if (gguf_get_str(g, "general.name", m->name, sizeof m->name, NULL) != UM_OK) m->name[0] = '\0';
    }
    if (!m->name[0]) {
        const char *p = gguf_path(g), *s = strrchr(p, '/');
        snprintf(m->name, sizeof m->name, "%s", s ? s + 1 : p);
    }
    if (model_gguf_uniform_state(g, m->arch, &m->hp.uniform_state, e)) goto fail;
    if (m->arch->gemma4 ? gemma_hparams(m, e) : read_hparams(m, e)) goto fail;
    if (bind_all(L)) goto fail;
    if (convert_vecs(L)) goto fail;
    m->ftype_main = main_type(m);
    free(L);
    *out = m;
    return UM_OK;
fail:
    free(L);
    model_close(m);
    return UM_FAIL;
}

int model_open(um_model **out, const char *path, um_err *e) {
    gguf_file *g;
    *out = NULL;
    if (gguf_open(&g, path, e)) return UM_FAIL;
    return model_from_gguf(out, g, e);
}

/* The file's own template (chat.h, unmask.chat_template), when it has one, parses: a run that
 * names no template uses it, so a malformed one makes the file not runnable (whatever a run
 * names: the verdict is the file's). */
static bool own_template_parses(const um_model *m, um_err *e) {
    chat_choice c;
    if (chat_from_gguf(m->gguf, m->arch->name, NULL, &c, e)) return false;
    chat_custom_free(c.own);
    return true;
}

int model_load_runnable(um_model **m, tokenizer **tok, gguf_file *g, um_err *e) {
    *m = NULL;
    *tok = NULL;
    if (model_from_gguf(m, g, e)) return UM_FAIL;
    const um_hparams *hp = &(*m)->hp;
    if (!(*m)->arch->uniform_state && hp->mask_id < 0)   /* a uniform-state model has no mask token */
        um_errf(e, "no tokenizer.ggml.mask_token_id: not a diffusion model file");
    else if (tok_load(tok, (*m)->gguf, e) == UM_OK && tok_n_vocab(*tok) > hp->n_vocab)
        um_errf(e, "tokenizer has %d tokens but the model only %d", tok_n_vocab(*tok), hp->n_vocab);
    else if (*tok && own_template_parses(*m, e))
        return UM_OK;
    tok_free(*tok);
    model_close(*m);
    *tok = NULL;
    *m = NULL;
    return UM_FAIL;
}

int model_check_runnable(const char *path, um_err *e) {
    gguf_file *g;
    um_model *m;
    tokenizer *tok;
    if (gguf_open(&g, path, e) || model_load_runnable(&m, &tok, g, e)) return UM_FAIL;
    tok_free(tok);
    model_close(m);
    return UM_OK;
}

void model_close(um_model *m) {
    if (!m) return;
    if (m->layers) {
        for (int il = 0; il < m->hp.n_layer; il++) {
            free(m->layers[il].gate_exps);
            free(m->layers[il].up_exps);
            free(m->layers[il].down_exps);
        }
    }
    free(m->layers);
    um_free_aligned(m->vec_arena);
    gguf_close(m->gguf);
    free(m);
}

uint64_t model_param_count(const um_model *m) {
    uint64_t n = 0;
    for (uint64_t i = 0; i < gguf_n_tensors(m->gguf); i++) n += gguf_tensor_at(m->gguf, i)->n_elements;
    return n;
}
