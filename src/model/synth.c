/*
 * synth: write random-weight models (see synth.h). Weights are drawn from fixed-seed
 * generators (splitmix64, one stream per tensor and chunk of 64 rows, so the result does not
 * depend on the thread count), uniform with the std-dev of a scaled normal init, and
 * quantized chunk by chunk straight into the file's type on every core, so even an 8B-shape
 * model needs only its final size in memory.
 */
#include "synth.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf.h"
#include "pool.h"
#include "quant.h"
#include "quantize.h"

static const um_synth_shape g_shapes[] = {
    /* small models for tests: K-quant friendly widths (multiples of 256) */
    { "tiny-llada", "llada", 1024, 512, 256, 2, 4, 4, 64, 512, 0, 0, 0, 500000.0f, 1e-5f, false, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0.0f, 0, 0, 0, 0, 0, 0.0f, 0.0f, 0.0f, false },
    { "tiny-dream", "dream", 1024, 512, 256, 2, 4, 2, 64, 512, 0, 0, 0, 1000000.0f, 1e-6f, true, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0.0f, 0, 0, 0, 0, 0, 0.0f, 0.0f, 0.0f, false },
    { "tiny-llada-moe", "llada-moe", 1024, 512, 256, 2, 4, 4, 64, 0, 8, 2, 256, 50000.0f, 1e-6f, false, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0.0f, 0, 0, 0, 0, 0, 0.0f, 0.0f, 0.0f, false },
    { "tiny-rnd1", "rnd1", 1024, 512, 256, 2, 4, 2, 128, 0, 8, 2, 256, 1000000.0f, 1e-6f, false, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0.0f, 0, 0, 0, 0, 0, 0.0f, 0.0f, 0.0f, false },
    /* the real families' shapes, vocabulary included (benchmarks) */
    { "llada-8b", "llada", 126464, 4096, 4096, 32, 32, 32, 128, 12288, 0, 0, 0, 500000.0f, 1e-5f, false,
      126080, 126081, 126348, 126336, 0, 0, 0, 0, 0, 0.0f, 0, 0, 0, 0, 0, 0.0f, 0.0f, 0.0f, false },
    { "dream-7b", "dream", 152064, 131072, 3584, 28, 28, 4, 128, 18944, 0, 0, 0, 1000000.0f, 1e-6f, true,
      151643, 151643, 151645, 151666, 0, 0, 0, 0, 0, 0.0f, 0, 0, 0, 0, 0, 0.0f, 0.0f, 0.0f, false },
    { "llada-moe-7b", "llada-moe", 157184, 8192, 2048, 16, 16, 16, 128, 0, 64, 8, 1024, 50000.0f, 1e-6f, false,
      -1, -1, -1, 156895, 0, 0, 0, 0, 0, 0.0f, 0, 0, 0, 0, 0, 0.0f, 0.0f, 0.0f, false },
    /* LLaDA2: 3 layers (1 dense), 8 experts in 2 groups (1 used), 1 shared, half the head rotated */
    { "tiny-llada2", "llada2", 1024, 512, 256, 3, 4, 2, 64, 512, 8, 2, 256, 600000.0f, 1e-6f, false,
      -1, -1, -1, -1, 32, 1, 1, 2, 1, 2.5f, 0, 0, 0, 0, 0, 0.0f, 0.0f, 0.0f, false },
    /* LLaDA2.0-mini's config.json (inclusionAI/LLaDA2.0-mini): hidden 2048, 20 layers (first dense,
     * intermediate 5120), 16 heads / 4 KV of 128 (partial_rotary_factor 0.5), 256 experts of 512,
     * 8 used, n_group 8, topk_group 4, 1 shared, routed_scaling_factor 2.5, rope_theta 600000,
     * rms_norm_eps 1e-6, max_position_embeddings 32768, vocab 157184; eos 156892, mask 156895 */
    { "llada2-mini", "llada2", 157184, 32768, 2048, 20, 16, 4, 128, 5120, 256, 8, 512, 600000.0f, 1e-6f, false,
      -1, 156892, -1, 156895, 64, 1, 1, 8, 4, 2.5f, 0, 0, 0, 0, 0, 0.0f, 0.0f, 0.0f, false },
    /* DiffusionGemma: 3 layers (sliding, sliding, global), a window of 8 so short prompts
     * exercise it, a 16-token canvas; global heads twice as wide with 1 K/V head */
    { .name = "tiny-diffusion-gemma", .arch = "diffusion-gemma", .n_vocab = 1024, .n_ctx = 4096, .n_embd = 256,
      .n_layer = 3, .n_head = 4, .n_head_kv = 1, .head_dim = 128, .n_ff = 512, .n_expert = 8, .n_expert_used = 2,
      .n_ff_exp = 256, .rope_base = 1000000.0f, .norm_eps = 1e-6f, .bos_id = 2, .eos_id = 1, .eot_id = -1, .mask_id = -1,
      .head_dim_swa = 64, .n_head_kv_swa = 2, .n_swa = 8, .swa_period = 3, .canvas_length = 16,
      .rope_base_swa = 10000.0f, .softcap = 30.0f, .rope_partial = 0.25f, .fused_gate_up = true },
    { .name = "tiny-diffusion-gemma-split", .arch = "diffusion-gemma", .n_vocab = 1024, .n_ctx = 4096, .n_embd = 256,
      .n_layer = 3, .n_head = 4, .n_head_kv = 1, .head_dim = 128, .n_ff = 512, .n_expert = 8, .n_expert_used = 2,
      .n_ff_exp = 256, .rope_base = 1000000.0f, .norm_eps = 1e-6f, .bos_id = 2, .eos_id = 1, .eot_id = -1, .mask_id = -1,
      .head_dim_swa = 64, .n_head_kv_swa = 2, .n_swa = 8, .swa_period = 3, .canvas_length = 16,
      .rope_base_swa = 10000.0f, .softcap = 30.0f, .rope_partial = 0.25f, .fused_gate_up = false },
    /* tiny-diffusion-gemma with the real vocabulary size (262144): the self-conditioning product and
     * the head at full width (bench/sc_topk.py) */
    { .name = "tiny-diffusion-gemma-262k", .arch = "diffusion-gemma", .n_vocab = 262144, .n_ctx = 4096, .n_embd = 256,
      .n_layer = 3, .n_head = 4, .n_head_kv = 1, .head_dim = 128, .n_ff = 512, .n_expert = 8, .n_expert_used = 2,
      .n_ff_exp = 256, .rope_base = 1000000.0f, .norm_eps = 1e-6f, .bos_id = 2, .eos_id = 1, .eot_id = -1, .mask_id = -1,
      .head_dim_swa = 64, .n_head_kv_swa = 2, .n_swa = 8, .swa_period = 3, .canvas_length = 16,
      .rope_base_swa = 10000.0f, .softcap = 30.0f, .rope_partial = 0.25f, .fused_gate_up = true },
    /* DiffusionGemma-26B-A4B (google/diffusiongemma-26B-A4B-it, a Gemma 4 26B-A4B backbone): hidden 2816,
     * 30 layers (25 sliding of head 256 with 8 K/V heads, 5 global of head 512 with 2), 16 heads, window
     * 1024, dense MLP 2112 beside 128 experts of 704 (8 used), vocabulary 262144, canvas 256, rope 1e6
     * (global, partial 0.25) / 1e4 (sliding), soft-cap 30, rms eps 1e-6. Values from REFERENCE.md section 7
     * and Gemma 4 26B-A4B's published configuration; no real file was read here (docs/models.md). */
    { .name = "diffusion-gemma-26b-a4b", .arch = "diffusion-gemma", .n_vocab = 262144, .n_ctx = 262144, .n_embd = 2816,
      .n_layer = 30, .n_head = 16, .n_head_kv = 2, .head_dim = 512, .n_ff = 2112, .n_expert = 128, .n_expert_used = 8,
      .n_ff_exp = 704, .rope_base = 1000000.0f, .norm_eps = 1e-6f, .bos_id = 2, .eos_id = 1, .eot_id = -1, .mask_id = -1,
      .head_dim_swa = 256, .n_head_kv_swa = 8, .n_swa = 1024, .swa_period = 6, .canvas_length = 256,
      .rope_base_swa = 10000.0f, .softcap = 30.0f, .rope_partial = 0.25f, .fused_gate_up = true },
};

const um_synth_shape *synth_find_shape(const char *name) {
    for (size_t i = 0; i < UM_ARRAY_LEN(g_shapes); i++)
        if (!strcmp(g_shapes[i].name, name)) return &g_shapes[i];
    return NULL;
}

const char *synth_shape_names(void) {
    return "tiny-llada, tiny-dream, tiny-llada-moe, tiny-rnd1, tiny-llada2, tiny-diffusion-gemma, tiny-diffusion-gemma-split, "
           "tiny-diffusion-gemma-262k, "
           "llada-8b, dream-7b, llada-moe-7b, llada2-mini, diffusion-gemma-26b-a4b";
}

/* ------------------------------------------------------------------ random numbers */

static uint64_t splitmix64(uint64_t *s) {
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* uniform in [-a, a) */
static float uniform(uint64_t *s, float a) {
    return (float)((double)(splitmix64(s) >> 11) * (1.0 / 9007199254740992.0) * 2.0 - 1.0) * a;
}

static uint64_t hash_name(const char *name, uint64_t seed) {
    uint64_t h = seed ^ 0xcbf29ce484222325ull;
    for (; *name; name++) h = (h ^ (uint8_t)*name) * 0x100000001b3ull;
    return h;
}

/* ------------------------------------------------------------------ tokenizer */

/* GPT-2's byte-to-unicode map: printable bytes map to themselves, the rest to U+0100+. */
static int byte_to_unicode(int b) {
    if ((b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255)) return b;
    int n = 0;
    for (int c = 0; c < b; c++)
        if (!((c >= 33 && c <= 126) || (c >= 161 && c <= 172) || (c >= 174 && c <= 255))) n++;
    return 256 + n;
}

static void put_utf8(char *out, int cp) {
    if (cp < 0x80) { out[0] = (char)cp; out[1] = 0; }
    else { out[0] = (char)(0xc0 | (cp >> 6)); out[1] = (char)(0x80 | (cp & 0x3f)); out[2] = 0; }
}

typedef struct special { const char *text; int32_t *id; } special;

static int write_tokenizer(gguf_writer *w, const um_synth_shape *s, um_err *e) {
    int32_t n = s->n_vocab;
    if (n < 256 + 16) return um_errf(e, "vocabulary of %d is too small (need at least 272)", n);
    char **toks = um_calloc((size_t)n, sizeof *toks);
    int32_t *types = um_calloc((size_t)n, sizeof *types);
    float *scores = um_calloc((size_t)n, sizeof *scores);
    if (!toks || !types || !scores) { free(toks); free(types); free(scores); return um_errf(e, "out of memory"); }
    char buf[64];
    for (int b = 0; b < 256; b++) {
        put_utf8(buf, byte_to_unicode(b));
        toks[b] = strdup(buf);
        types[b] = 1;                               /* normal */
    }
    int32_t bos = s->bos_id, eos = s->eos_id, eot = s->eot_id, mask = s->mask_id;
    int32_t start_h = -1, end_h = -1, im_start = -1, im_end = -1;
    special sp[] = {
        { "<|endoftext|>", &eos }, { "<|startoftext|>", &bos }, { "<|eot_id|>", &eot },
        { "<|mdm_mask|>", &mask }, { "<|start_header_id|>", &start_h }, { "<|end_header_id|>", &end_h },
        { "<|im_start|>", &im_start }, { "<|im_end|>", &im_end },
    };
    int32_t next = 256;
    for (size_t i = 0; i < UM_ARRAY_LEN(sp); i++) {
        if (*sp[i].id < 0 || *sp[i].id >= n) {
            while (toks[next]) next++;
            *sp[i].id = next;
        }
        if (toks[*sp[i].id]) free(toks[*sp[i].id]);
        toks[*sp[i].id] = strdup(sp[i].text);
        types[*sp[i].id] = 3;                       /* control */
    }
    if (bos == eos) { /* Dream: BOS and EOS share <|endoftext|> */ }
    for (int32_t i = 0; i < n; i++) {
        if (toks[i]) continue;
        snprintf(buf, sizeof buf, "<|reserved_%d|>", i);
        toks[i] = strdup(buf);
        types[i] = 4;                               /* user-defined, never produced by BPE */
    }
    int rc = UM_OK;
    for (int32_t i = 0; i < n; i++) if (!toks[i]) rc = um_errf(e, "out of memory");
    if (rc == UM_OK) {
        gguf_set_str(w, "tokenizer.ggml.model", "gpt2");
        /* LLaDA2's converter writes BailingMoeV2's pre-tokenizer name */
        gguf_set_str(w, "tokenizer.ggml.pre", !strcmp(s->arch, "llada2") ? "bailingmoe2" : "default");
        gguf_set_arr_str(w, "tokenizer.ggml.tokens", (const char *const *)toks, (uint64_t)n);
        gguf_set_arr(w, "tokenizer.ggml.token_type", GGUF_TYPE_INT32, types, (uint64_t)n);
        const char *no_merges[1] = { NULL };
        gguf_set_arr_str(w, "tokenizer.ggml.merges", no_merges, 0);
        gguf_set_u32(w, "tokenizer.ggml.bos_token_id", (uint32_t)bos);
        gguf_set_u32(w, "tokenizer.ggml.eos_token_id", (uint32_t)eos);
        gguf_set_u32(w, "tokenizer.ggml.eot_token_id", (uint32_t)eot);
        gguf_set_u32(w, "tokenizer.ggml.mask_token_id", (uint32_t)mask);
        gguf_set_bool(w, "tokenizer.ggml.add_bos_token", !strcmp(s->arch, "llada") || !strcmp(s->arch, "llada-moe"));
        gguf_set_bool(w, "tokenizer.ggml.add_eos_token", false);
    }
    for (int32_t i = 0; i < n; i++) free(toks[i]);
    free(toks);
    free(types);
    free(scores);
    return rc;
}

/* ------------------------------------------------------------------ tensors */

typedef struct tspec {
    char    name[64];
    int     kind;               /* 0 = matrix, 1 = norm weight (around 1), 2 = bias (small), 3 = expert bias,
                                   4 = rope_freqs (1 for the first `std` pairs, 1e30 after), 5 = scalar in [0.3, 0.9] */
    float   std;
    int64_t ne[3];              /* ne[1], ne[2] = 0 when absent */
    uint32_t type;
    void   *data;
    uint64_t size;
} tspec;

typedef struct plan {
    tspec  *t;
    int     n, cap;
} plan;

static int push(plan *p, const char *name, int kind, float std, int64_t ne0, int64_t ne1, int64_t ne2) {
    if (p->n == p->cap) {
        int cap = p->cap ? p->cap * 2 : 64;
        tspec *n = realloc(p->t, sizeof *n * (size_t)cap);
        if (!n) return UM_FAIL;
        p->t = n;
        p->cap = cap;
    }
    tspec *t = &p->t[p->n++];
    memset(t, 0, sizeof *t);
    snprintf(t->name, sizeof t->name, "%s", name);
    t->kind = kind;
    t->std = std;
    t->ne[0] = ne0; t->ne[1] = ne1; t->ne[2] = ne2;
    return UM_OK;
}

/* Gemma 4 layer geometry of the shape: global when (il + 1) % swa_period == 0. */
static bool gemma_swa(const um_synth_shape *s, int il) { return (il + 1) % s->swa_period != 0; }

/* DiffusionGemma's tensors, named as llama-arch.cpp names them for LLM_ARCH_DIFFUSION_GEMMA. */
static int plan_gemma(const um_synth_shape *s, plan *p) {
    const int64_t E = s->n_embd, V = s->n_vocab, F = s->n_ff, FX = s->n_ff_exp, X = s->n_expert;
    const float std_in = 1.0f / sqrtf((float)E);
    int rc = push(p, "token_embd.weight", 0, 1.0f, E, V, 0);
    rc |= push(p, "output_norm.weight", 1, 0, E, 0, 0);
    /* proportional RoPE: rope_partial of the global head's pairs rotate (conversion/gemma.py
     * generate_extra_tensors: 1.0 then 1e30) */
    rc |= push(p, "rope_freqs.weight", 4, (float)(int)(s->head_dim * s->rope_partial / 2), s->head_dim / 2, 0, 0);
    rc |= push(p, "self_cond_pre_norm.weight", 1, 0, E, 0, 0);
    rc |= push(p, "self_cond_gate.weight", 0, std_in, E, F, 0);
    rc |= push(p, "self_cond_up.weight", 0, std_in, E, F, 0);
    rc |= push(p, "self_cond_down.weight", 0, 1.0f / sqrtf((float)F), F, E, 0);
    char n[64];
    for (int il = 0; il < s->n_layer && !rc; il++) {
        const bool swa = gemma_swa(s, il);
        const int64_t HD = swa ? s->head_dim_swa : s->head_dim, NQ = (int64_t)s->n_head * HD;
        const int64_t NKV = (int64_t)(swa ? s->n_head_kv_swa : s->n_head_kv) * HD;
#define T(suffix, kind, std, a, b, d) (snprintf(n, sizeof n, "blk.%d." suffix, il), push(p, n, kind, std, a, b, d))
        rc |= T("attn_norm.weight", 1, 0, E, 0, 0);
        rc |= T("attn_q.weight", 0, std_in, E, NQ, 0);
        rc |= T("attn_k.weight", 0, std_in, E, NKV, 0);
        if (swa) rc |= T("attn_v.weight", 0, std_in, E, NKV, 0);      /* global layers: V from K */
        rc |= T("attn_output.weight", 0, 1.0f / sqrtf((float)NQ), NQ, E, 0);
        rc |= T("attn_q_norm.weight", 1, 0, HD, 0, 0);
        rc |= T("attn_k_norm.weight", 1, 0, HD, 0, 0);
        rc |= T("post_attention_norm.weight", 1, 0, E, 0, 0);
        rc |= T("layer_output_scale.weight", 5, 0, 1, 0, 0);
        rc |= T("enc_layer_output_scale.weight", 5, 0, 1, 0, 0);
        rc |= T("ffn_norm.weight", 1, 0, E, 0, 0);
        rc |= T("ffn_gate.weight", 0, std_in, E, F, 0);
        rc |= T("ffn_up.weight", 0, std_in, E, F, 0);
        rc |= T("ffn_down.weight", 0, 1.0f / sqrtf((float)F), F, E, 0);
        rc |= T("post_ffw_norm.weight", 1, 0, E, 0, 0);
        /* the router sees a unit-RMS input times 1/sqrt(E): weights of std 2 give decisive logits */
        rc |= T("ffn_gate_inp.weight", 0, 2.0f, E, X, 0);
        rc |= T("ffn_gate_inp.scale", 1, 0, E, 0, 0);
        rc |= T("pre_ffw_norm_2.weight", 1, 0, E, 0, 0);
        rc |= T("post_ffw_norm_1.weight", 1, 0, E, 0, 0);
        rc |= T("post_ffw_norm_2.weight", 1, 0, E, 0, 0);
        if (s->fused_gate_up) {
            rc |= T("ffn_gate_up_exps.weight", 0, std_in, E, 2 * FX, X);
        } else {
            rc |= T("ffn_gate_exps.weight", 0, std_in, E, FX, X);
            rc |= T("ffn_up_exps.weight", 0, std_in, E, FX, X);
        }
        rc |= T("ffn_down_exps.weight", 0, 1.0f / sqrtf((float)FX), FX, E, X);
        rc |= T("ffn_down_exps.scale", 5, 0, X, 0, 0);
#undef T
    }
    return rc ? UM_FAIL : UM_OK;
}

/* Every tensor of the shape, in the order llama.cpp's converters write them. */
static int plan_tensors(const um_synth_shape *s, plan *p) {
    if (!strcmp(s->arch, "diffusion-gemma")) return plan_gemma(s, p);
    const int64_t E = s->n_embd, V = s->n_vocab, HD = s->head_dim;
    const int64_t NQ = (int64_t)s->n_head * HD, NKV = (int64_t)s->n_head_kv * HD;
    const float std_in = 1.0f / sqrtf((float)E);
    const bool moe = s->n_expert > 0, llada2 = !strcmp(s->arch, "llada2");
    const bool qk_norm = !strcmp(s->arch, "llada-moe") || !strcmp(s->arch, "rnd1") || llada2;
    int rc = push(p, "token_embd.weight", 0, 1.0f, E, V, 0);
    rc |= push(p, "output_norm.weight", 1, 0, E, 0, 0);
    /* larger head weights make the output distributions peaked, like a trained model's */
    rc |= push(p, "output.weight", 0, 4.0f * std_in, E, V, 0);
    char n[64];
    for (int il = 0; il < s->n_layer && !rc; il++) {
#define T(suffix, kind, std, a, b, d) (snprintf(n, sizeof n, "blk.%d." suffix, il), push(p, n, kind, std, a, b, d))
        rc |= T("attn_norm.weight", 1, 0, E, 0, 0);
        if (llada2) {
            /* the converter keeps HF's fused query_key_value, rows [Q; K; V] */
            rc |= T("attn_qkv.weight", 0, std_in, E, NQ + 2 * NKV, 0);
        } else {
            rc |= T("attn_q.weight", 0, std_in, E, NQ, 0);
            rc |= T("attn_k.weight", 0, std_in, E, NKV, 0);
            rc |= T("attn_v.weight", 0, std_in, E, NKV, 0);
        }
        if (s->qkv_bias) {
            rc |= T("attn_q.bias", 2, 0, NQ, 0, 0);
            rc |= T("attn_k.bias", 2, 0, NKV, 0, 0);
            rc |= T("attn_v.bias", 2, 0, NKV, 0, 0);
        }
        rc |= T("attn_output.weight", 0, 1.0f / sqrtf((float)NQ), NQ, E, 0);
        if (qk_norm) {
            rc |= T("attn_q_norm.weight", 1, 0, HD, 0, 0);
            rc |= T("attn_k_norm.weight", 1, 0, HD, 0, 0);
        }
        rc |= T("ffn_norm.weight", 1, 0, E, 0, 0);
        if (moe && il >= s->n_dense_lead) {
            const int64_t F = s->n_ff_exp, X = s->n_expert, FS = (int64_t)s->n_ff_exp * s->n_expert_shared;
            rc |= T("ffn_gate_inp.weight", 0, 4.0f * std_in, E, X, 0);
            if (llada2) rc |= T("exp_probs_b.bias", 3, 0, X, 0, 0);
            rc |= T("ffn_gate_exps.weight", 0, std_in, E, F, X);
            rc |= T("ffn_up_exps.weight", 0, std_in, E, F, X);
            rc |= T("ffn_down_exps.weight", 0, 1.0f / sqrtf((float)F), F, E, X);
            if (FS) {
                rc |= T("ffn_gate_shexp.weight", 0, std_in, E, FS, 0);
                rc |= T("ffn_up_shexp.weight", 0, std_in, E, FS, 0);
                rc |= T("ffn_down_shexp.weight", 0, 1.0f / sqrtf((float)FS), FS, E, 0);
            }
        } else {
            const int64_t F = s->n_ff;
            rc |= T("ffn_gate.weight", 0, std_in, E, F, 0);
            rc |= T("ffn_up.weight", 0, std_in, E, F, 0);
            rc |= T("ffn_down.weight", 0, 1.0f / sqrtf((float)F), F, E, 0);
        }
#undef T
    }
    return rc ? UM_FAIL : UM_OK;
}

/* Choose each tensor's stored type: a llama.cpp mixture, or one type for every matrix. */
static int choose_types(const um_synth_opts *o, plan *p, um_err *e) {
    const um_synth_shape *s = o->shape;
    if (!o->mixture) {
        /* vectors and the MoE router stay F32, as llama-quantize leaves them */
        for (int i = 0; i < p->n; i++)
            p->t[i].type = p->t[i].ne[1] && !strstr(p->t[i].name, "ffn_gate_inp") ? o->type : UM_TYPE_F32;
        return UM_OK;
    }
    const um_mixture *mix = um_mixture_find(o->mixture);
    if (!mix) return um_errf(e, "unknown mixture '%s'", o->mixture);
    um_quant_model qm = { .n_layer = s->n_layer, .n_head = s->n_head, .n_head_kv = s->n_head_kv, .n_expert = s->n_expert };
    snprintf(qm.arch, sizeof qm.arch, "%s", s->arch);
    um_quant_tensor *qt = um_calloc((size_t)p->n, sizeof *qt);
    uint32_t *out = um_calloc((size_t)p->n, sizeof *out);
    if (!qt || !out) { free(qt); free(out); return um_errf(e, "out of memory"); }
    for (int i = 0; i < p->n; i++) {
        qt[i].name = p->t[i].name;
        qt[i].ne[0] = (uint64_t)p->t[i].ne[0];
        qt[i].ne[1] = (uint64_t)(p->t[i].ne[1] ? p->t[i].ne[1] : 1);
        qt[i].ne[2] = (uint64_t)(p->t[i].ne[2] ? p->t[i].ne[2] : 1);
        qt[i].ne[3] = 1;
        qt[i].type = UM_TYPE_F32;
    }
    int rc = um_quant_choose(mix, &qm, qt, (size_t)p->n, out, e);
    for (int i = 0; rc == UM_OK && i < p->n; i++) p->t[i].type = out[i];
    free(qt);
    free(out);
    return rc;
}

typedef struct gen_job {
    const um_synth_opts  *o;
    const tspec          *t;
    const um_type_traits *tr;
    uint64_t              row_bytes, seed;
    int64_t               rows;
    float               **tmp;      /* (n_threads) buffers of GEN_CHUNK rows */
} gen_job;

#define GEN_CHUNK 64

/* One chunk of GEN_CHUNK rows, from its own random stream so any thread may take it. */
static void gen_chunk(void *arg, int64_t chunk, int tid) {
    const gen_job *j = arg;
    const tspec *t = j->t;
    const int64_t ne0 = t->ne[0], r0 = chunk * GEN_CHUNK, nr = UM_MIN(GEN_CHUNK, j->rows - r0);
    float *tmp = j->tmp[tid];
    uint64_t rng = j->seed ^ ((uint64_t)chunk * 0x9e3779b97f4a7c15ull);
    float a = t->std * sqrtf(3.0f) * j->o->init_scale;
    for (int64_t i = 0; i < nr * ne0; i++) {
        float u = uniform(&rng, 1.0f);
        tmp[i] = t->kind == 1 ? 1.0f + 0.1f * u : t->kind == 2 ? 0.02f * u : t->kind == 3 ? 0.3f * u
               : t->kind == 4 ? ((i % ne0) < (int64_t)t->std ? 1.0f : 1e30f) : t->kind == 5 ? 0.6f + 0.3f * u : a * u;
    }
    char *dst = (char *)t->data + (uint64_t)r0 * j->row_bytes;
    if (t->type == UM_TYPE_F32) memcpy(dst, tmp, (size_t)(nr * ne0) * sizeof(float));
    else j->tr->from_float_ref(tmp, dst, nr * ne0);
}

static int generate(const um_synth_opts *o, um_pool *pool, tspec *t, um_err *e) {
    const um_type_traits *tr = um_traits(t->type);
    if (!tr || (t->type != UM_TYPE_F32 && !tr->from_float_ref))
        return um_errf(e, "cannot write tensor '%s' as %s", t->name, um_type_name(t->type));
    const int64_t ne0 = t->ne[0];
    if (ne0 % tr->blck)
        return um_errf(e, "tensor '%s': row length %" PRId64 " is not a multiple of %s's block of %u",
                       t->name, ne0, tr->name, tr->blck);
    gen_job j = { .o = o, .t = t, .tr = tr, .seed = hash_name(t->name, o->seed) };
    j.rows = (t->ne[1] ? t->ne[1] : 1) * (t->ne[2] ? t->ne[2] : 1);
    j.row_bytes = (uint64_t)ne0 / tr->blck * tr->bytes;
    t->size = j.row_bytes * (uint64_t)j.rows;
    if (!(t->data = um_malloc_aligned(t->size)))
        return um_errf(e, "out of memory for '%s' (%" PRIu64 " bytes)", t->name, t->size);
    int nt = pool_threads(pool), rc = UM_OK;
    j.tmp = um_calloc((size_t)nt, sizeof *j.tmp);
    for (int i = 0; j.tmp && i < nt; i++)
        if (!(j.tmp[i] = um_malloc((size_t)(GEN_CHUNK * ne0) * sizeof(float)))) rc = UM_FAIL;
    if (!j.tmp || rc) rc = um_errf(e, "out of memory");
    else pool_for(pool, (j.rows + GEN_CHUNK - 1) / GEN_CHUNK, gen_chunk, &j);
    for (int i = 0; j.tmp && i < nt; i++) free(j.tmp[i]);
    free(j.tmp);
    return rc;
}

int synth_write(const um_synth_opts *o, const char *path, um_err *e) {
    const um_synth_shape *s = o->shape;
    gguf_writer *w = gguf_writer_new();
    if (!w) return um_errf(e, "out of memory");
    plan p = { 0 };
    um_pool *pool = NULL;
    int rc = UM_FAIL;
    char key[160], name[160];
    const char *A = s->arch;
    bool moe = s->n_expert > 0;
#define K(suffix) (snprintf(key, sizeof key, "%s." suffix, A), key)
    gguf_set_str(w, "general.architecture", A);
    snprintf(name, sizeof name, "synthetic %s (random weights, seed %" PRIu64 ")", s->name, o->seed);
    gguf_set_str(w, "general.name", name);
    gguf_set_u32(w, "general.alignment", 32);
    if (o->mixture && um_mixture_find(o->mixture)) gguf_set_u32(w, "general.file_type", um_mixture_find(o->mixture)->ftype);
    gguf_set_u32(w, K("context_length"), (uint32_t)s->n_ctx);
    gguf_set_u32(w, K("embedding_length"), (uint32_t)s->n_embd);
    gguf_set_u32(w, K("block_count"), (uint32_t)s->n_layer);
    gguf_set_u32(w, K("attention.head_count"), (uint32_t)s->n_head);
    if (strcmp(A, "diffusion-gemma")) gguf_set_u32(w, K("attention.head_count_kv"), (uint32_t)s->n_head_kv);
    gguf_set_u32(w, K("attention.key_length"), (uint32_t)s->head_dim);
    gguf_set_u32(w, K("attention.value_length"), (uint32_t)s->head_dim);
    gguf_set_u32(w, K("rope.dimension_count"), (uint32_t)(s->n_rot ? s->n_rot : s->head_dim));
    gguf_set_f32(w, K("rope.freq_base"), s->rope_base);
    gguf_set_f32(w, K("attention.layer_norm_rms_epsilon"), s->norm_eps);
    gguf_set_u32(w, K("vocab_size"), (uint32_t)s->n_vocab);
    if (moe) {
        gguf_set_u32(w, K("expert_count"), (uint32_t)s->n_expert);
        gguf_set_u32(w, K("expert_used_count"), (uint32_t)s->n_expert_used);
        gguf_set_u32(w, K("expert_feed_forward_length"), (uint32_t)s->n_ff_exp);
        gguf_set_u32(w, K("feed_forward_length"), (uint32_t)(s->n_ff ? s->n_ff : s->n_ff_exp * s->n_expert_used));
        if (!strcmp(A, "diffusion-gemma")) {
            /* conversion/gemma.py Gemma4Model and Gemma3Model.set_gguf_parameters, TextModel's rope
             * keys, conversion/diffusion_gemma.py's diffusion.* keys */
            gguf_set_u32(w, K("attention.key_length_swa"), (uint32_t)s->head_dim_swa);
            gguf_set_u32(w, K("attention.value_length_swa"), (uint32_t)s->head_dim_swa);
            gguf_set_u32(w, K("rope.dimension_count_swa"), (uint32_t)s->head_dim_swa);
            gguf_set_f32(w, K("rope.freq_base_swa"), s->rope_base_swa);
            gguf_set_u32(w, K("attention.sliding_window"), (uint32_t)s->n_swa);
            gguf_set_f32(w, K("final_logit_softcapping"), s->softcap);
            gguf_set_bool(w, K("attention.causal"), false);
            bool pat[4096];
            int32_t kvh[4096];
            for (int il = 0; il < s->n_layer && il < 4096; il++) {
                pat[il] = gemma_swa(s, il);
                kvh[il] = pat[il] ? s->n_head_kv_swa : s->n_head_kv;
            }
            gguf_set_arr(w, K("attention.sliding_window_pattern"), GGUF_TYPE_BOOL, pat, (uint64_t)s->n_layer);
            gguf_set_arr(w, K("attention.head_count_kv"), GGUF_TYPE_INT32, kvh, (uint64_t)s->n_layer);
            gguf_set_u32(w, "diffusion.canvas_length", (uint32_t)s->canvas_length);
            gguf_set_u32(w, "diffusion.eb_max_steps", 48);
            gguf_set_f32(w, "diffusion.eb_t_min", 0.4f);
            gguf_set_f32(w, "diffusion.eb_t_max", 0.8f);
            gguf_set_f32(w, "diffusion.eb_entropy_bound", 0.1f);
            gguf_set_u32(w, "diffusion.eb_stability_threshold", 1);
            gguf_set_f32(w, "diffusion.eb_confidence_threshold", 0.005f);
        }
        if (!strcmp(A, "llada2")) {
            /* the keys BailingMoeV2Model.set_gguf_parameters and TextModel write (PR #17454) */
            gguf_set_u32(w, K("leading_dense_block_count"), (uint32_t)s->n_dense_lead);
            gguf_set_u32(w, K("expert_shared_feed_forward_length"), (uint32_t)(s->n_ff_exp * s->n_expert_shared));
            gguf_set_u32(w, K("expert_shared_count"), (uint32_t)s->n_expert_shared);
            gguf_set_f32(w, K("expert_weights_scale"), s->expert_weights_scale);
            gguf_set_bool(w, K("expert_weights_norm"), true);
            gguf_set_u32(w, K("expert_gating_func"), 2);            /* sigmoid */
            gguf_set_u32(w, K("expert_group_count"), (uint32_t)s->n_expert_groups);
            gguf_set_u32(w, K("expert_group_used_count"), (uint32_t)s->n_group_used);
        }
    } else {
        gguf_set_u32(w, K("feed_forward_length"), (uint32_t)s->n_ff);
    }
#undef K
    bool shift = !strcmp(A, "dream") || !strcmp(A, "rnd1");
    if (strcmp(A, "diffusion-gemma")) gguf_set_bool(w, "diffusion.shift_logits", shift);
    if (write_tokenizer(w, s, e)) goto out;
    if (plan_tensors(s, &p)) { um_errf(e, "out of memory"); goto out; }
    if (choose_types(o, &p, e)) goto out;
    uint64_t total = 0;
    pool = pool_new(0);
    for (int i = 0; i < p.n; i++) {
        tspec *t = &p.t[i];
        if (o->progress) fprintf(stderr, "\rsynth: tensor %d/%d %-28s", i + 1, p.n, t->name);
        if (generate(o, pool, t, e)) goto out;
        uint64_t ne[3] = { (uint64_t)t->ne[0], (uint64_t)(t->ne[1] ? t->ne[1] : 1), (uint64_t)(t->ne[2] ? t->ne[2] : 1) };
        uint32_t nd = t->ne[2] ? 3 : t->ne[1] ? 2 : 1;
        if (gguf_add_tensor(w, t->name, t->type, nd, ne, t->data, t->size, e)) goto out;
        total += t->size;
    }
    if (o->progress) fprintf(stderr, "\rsynth: writing %s (%.1f MB)%24s\n", path, (double)total / 1e6, "");
    rc = gguf_writer_write(w, path, e);
out:
    pool_free(pool);
    gguf_writer_free(w);
    for (int i = 0; i < p.n; i++) um_free_aligned(p.t[i].data);
    free(p.t);
    return rc;
}
