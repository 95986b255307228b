/*
 * synth: write random-weight models (see synth.h). Weights are drawn from a fixed-seed
 * generator (splitmix64), uniform with the std-dev of a scaled normal init, generated a
 * few rows at a time and quantized straight into the file's type so even an 8B-shape
 * model needs only its final size in memory.
 */
#include "synth.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf.h"
#include "quant.h"

static const um_synth_shape g_shapes[] = {
    /* small models for tests: K-quant friendly widths (multiples of 256) */
    { "tiny-llada", "llada", 1024, 512, 256, 2, 4, 4, 64, 512, 0, 0, 0, 500000.0f, 1e-5f, false, -1, -1, -1, -1 },
    { "tiny-dream", "dream", 1024, 512, 256, 2, 4, 2, 64, 512, 0, 0, 0, 1000000.0f, 1e-6f, true, -1, -1, -1, -1 },
    { "tiny-llada-moe", "llada-moe", 1024, 512, 256, 2, 4, 4, 64, 0, 8, 2, 256, 50000.0f, 1e-6f, false, -1, -1, -1, -1 },
    { "tiny-rnd1", "rnd1", 1024, 512, 256, 2, 4, 2, 128, 0, 8, 2, 256, 1000000.0f, 1e-6f, false, -1, -1, -1, -1 },
    /* the real families' shapes, vocabulary included (benchmarks) */
    { "llada-8b", "llada", 126464, 4096, 4096, 32, 32, 32, 128, 12288, 0, 0, 0, 500000.0f, 1e-5f, false,
      126080, 126081, 126348, 126336 },
    { "dream-7b", "dream", 152064, 131072, 3584, 28, 28, 4, 128, 18944, 0, 0, 0, 1000000.0f, 1e-6f, true,
      151643, 151643, 151645, 151666 },
    { "llada-moe-7b", "llada-moe", 157184, 8192, 2048, 16, 16, 16, 128, 0, 64, 8, 1024, 50000.0f, 1e-6f, false,
      -1, -1, -1, 156895 },
};

const um_synth_shape *synth_find_shape(const char *name) {
    for (size_t i = 0; i < UM_ARRAY_LEN(g_shapes); i++)
        if (!strcmp(g_shapes[i].name, name)) return &g_shapes[i];
    return NULL;
}

const char *synth_shape_names(void) {
    return "tiny-llada, tiny-dream, tiny-llada-moe, tiny-rnd1, llada-8b, dream-7b, llada-moe-7b";
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
        gguf_set_str(w, "tokenizer.ggml.pre", "default");
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

typedef struct tensor_buf {
    void *data;
    struct tensor_buf *next;
} tensor_buf;

typedef struct synth_ctx {
    const um_synth_opts *o;
    gguf_writer *w;
    tensor_buf *bufs;           /* freed after writing */
    uint64_t bytes;
} synth_ctx;

/* kind: 0 = matrix (std/sqrt-ish init), 1 = norm weight (around 1), 2 = bias (small) */
static int add_tensor(synth_ctx *c, const char *name, int kind, float std, int64_t ne0, int64_t ne1, int64_t ne2, um_err *e) {
    const um_synth_opts *o = c->o;
    uint32_t type = UM_TYPE_F32;
    int n_dims = ne2 ? 3 : ne1 ? 2 : 1;
    if (n_dims >= 2) type = o->choose ? o->choose(o->choose_ctx, name, ne0, ne1, ne2) : o->type;
    const um_type_traits *tr = um_traits(type);
    if (!tr || (type != UM_TYPE_F32 && !tr->from_float_ref))
        return um_errf(e, "cannot write tensor '%s' as %s", name, um_type_name(type));
    if (ne0 % tr->blck) {
        return um_errf(e, "tensor '%s': row length %" PRId64 " is not a multiple of %s's block of %u",
                       name, ne0, tr->name, tr->blck);
    }
    int64_t rows = (ne1 ? ne1 : 1) * (ne2 ? ne2 : 1);
    uint64_t row_bytes = (uint64_t)ne0 / tr->blck * tr->bytes;
    uint64_t size = row_bytes * (uint64_t)rows;
    tensor_buf *tb = um_calloc(1, sizeof *tb);
    if (!tb || !(tb->data = um_malloc_aligned(size))) { free(tb); return um_errf(e, "out of memory for '%s' (%" PRIu64 " bytes)", name, size); }
    tb->next = c->bufs;
    c->bufs = tb;
    const int64_t chunk = 64;
    float *tmp = um_malloc((size_t)(chunk * ne0) * sizeof(float));
    if (!tmp) return um_errf(e, "out of memory");
    uint64_t rng = hash_name(name, o->seed);
    float a = std * sqrtf(3.0f) * o->init_scale;
    for (int64_t r0 = 0; r0 < rows; r0 += chunk) {
        int64_t nr = UM_MIN(chunk, rows - r0);
        for (int64_t i = 0; i < nr * ne0; i++) {
            float u = uniform(&rng, 1.0f);
            tmp[i] = kind == 1 ? 1.0f + 0.1f * u : kind == 2 ? 0.02f * u : a * u;
        }
        char *dst = (char *)tb->data + (uint64_t)r0 * row_bytes;
        if (type == UM_TYPE_F32) memcpy(dst, tmp, (size_t)(nr * ne0) * sizeof(float));
        else tr->from_float_ref(tmp, dst, nr * ne0);
    }
    free(tmp);
    uint64_t ne[3] = { (uint64_t)ne0, (uint64_t)(ne1 ? ne1 : 1), (uint64_t)(ne2 ? ne2 : 1) };
    c->bytes += size;
    return gguf_add_tensor(c->w, name, type, (uint32_t)n_dims, ne, tb->data, size, e);
}

int synth_write(const um_synth_opts *o, const char *path, um_err *e) {
    const um_synth_shape *s = o->shape;
    synth_ctx c = { .o = o, .w = gguf_writer_new() };
    if (!c.w) return um_errf(e, "out of memory");
    int rc = UM_FAIL;
    char key[160], name[160];
    const char *A = s->arch;
    bool moe = s->n_expert > 0;
#define K(suffix) (snprintf(key, sizeof key, "%s." suffix, A), key)
    gguf_set_str(c.w, "general.architecture", A);
    snprintf(name, sizeof name, "synthetic %s (random weights, seed %" PRIu64 ")", s->name, o->seed);
    gguf_set_str(c.w, "general.name", name);
    gguf_set_u32(c.w, "general.alignment", 32);
    gguf_set_u32(c.w, K("context_length"), (uint32_t)s->n_ctx);
    gguf_set_u32(c.w, K("embedding_length"), (uint32_t)s->n_embd);
    gguf_set_u32(c.w, K("block_count"), (uint32_t)s->n_layer);
    gguf_set_u32(c.w, K("attention.head_count"), (uint32_t)s->n_head);
    gguf_set_u32(c.w, K("attention.head_count_kv"), (uint32_t)s->n_head_kv);
    gguf_set_u32(c.w, K("attention.key_length"), (uint32_t)s->head_dim);
    gguf_set_u32(c.w, K("attention.value_length"), (uint32_t)s->head_dim);
    gguf_set_u32(c.w, K("rope.dimension_count"), (uint32_t)s->head_dim);
    gguf_set_f32(c.w, K("rope.freq_base"), s->rope_base);
    gguf_set_f32(c.w, K("attention.layer_norm_rms_epsilon"), s->norm_eps);
    gguf_set_u32(c.w, K("vocab_size"), (uint32_t)s->n_vocab);
    if (moe) {
        gguf_set_u32(c.w, K("expert_count"), (uint32_t)s->n_expert);
        gguf_set_u32(c.w, K("expert_used_count"), (uint32_t)s->n_expert_used);
        gguf_set_u32(c.w, K("expert_feed_forward_length"), (uint32_t)s->n_ff_exp);
        gguf_set_u32(c.w, K("feed_forward_length"), (uint32_t)(s->n_ff_exp * s->n_expert_used));
    } else {
        gguf_set_u32(c.w, K("feed_forward_length"), (uint32_t)s->n_ff);
    }
#undef K
    bool shift = !strcmp(A, "dream") || !strcmp(A, "rnd1");
    gguf_set_bool(c.w, "diffusion.shift_logits", shift);
    if (write_tokenizer(c.w, s, e)) goto out;

    const int64_t E = s->n_embd, V = s->n_vocab, HD = s->head_dim;
    const int64_t NQ = (int64_t)s->n_head * HD, NKV = (int64_t)s->n_head_kv * HD;
    const float std_in = 1.0f / sqrtf((float)E);
    if (add_tensor(&c, "token_embd.weight", 0, 1.0f, E, V, 0, e)) goto out;
    if (add_tensor(&c, "output_norm.weight", 1, 0, E, 0, 0, e)) goto out;
    /* larger head weights make the output distributions peaked, like a trained model's */
    if (add_tensor(&c, "output.weight", 0, 4.0f * std_in, E, V, 0, e)) goto out;
    for (int il = 0; il < s->n_layer; il++) {
#define T(suffix, kind, std, a, b, d) \
        (snprintf(name, sizeof name, "blk.%d." suffix, il), add_tensor(&c, name, kind, std, a, b, d, e))
        if (o->progress) fprintf(stderr, "\rsynth: layer %d/%d", il + 1, s->n_layer);
        if (T("attn_norm.weight", 1, 0, E, 0, 0)) goto out;
        if (T("attn_q.weight", 0, std_in, E, NQ, 0)) goto out;
        if (T("attn_k.weight", 0, std_in, E, NKV, 0)) goto out;
        if (T("attn_v.weight", 0, std_in, E, NKV, 0)) goto out;
        if (s->qkv_bias) {
            if (T("attn_q.bias", 2, 0, NQ, 0, 0)) goto out;
            if (T("attn_k.bias", 2, 0, NKV, 0, 0)) goto out;
            if (T("attn_v.bias", 2, 0, NKV, 0, 0)) goto out;
        }
        if (T("attn_output.weight", 0, 1.0f / sqrtf((float)NQ), NQ, E, 0)) goto out;
        if (!strcmp(A, "llada-moe") || !strcmp(A, "rnd1")) {
            if (T("attn_q_norm.weight", 1, 0, HD, 0, 0)) goto out;
            if (T("attn_k_norm.weight", 1, 0, HD, 0, 0)) goto out;
        }
        if (T("ffn_norm.weight", 1, 0, E, 0, 0)) goto out;
        if (moe) {
            const int64_t F = s->n_ff_exp, X = s->n_expert;
            if (T("ffn_gate_inp.weight", 0, 4.0f * std_in, E, X, 0)) goto out;
            if (T("ffn_gate_exps.weight", 0, std_in, E, F, X)) goto out;
            if (T("ffn_up_exps.weight", 0, std_in, E, F, X)) goto out;
            if (T("ffn_down_exps.weight", 0, 1.0f / sqrtf((float)F), F, E, X)) goto out;
        } else {
            const int64_t F = s->n_ff;
            if (T("ffn_gate.weight", 0, std_in, E, F, 0)) goto out;
            if (T("ffn_up.weight", 0, std_in, E, F, 0)) goto out;
            if (T("ffn_down.weight", 0, 1.0f / sqrtf((float)F), F, E, 0)) goto out;
        }
#undef T
    }
    if (o->progress) fprintf(stderr, "\rsynth: writing %s (%.1f MB)\n", path, (double)c.bytes / 1e6);
    rc = gguf_writer_write(c.w, path, e);
out:
    gguf_writer_free(c.w);
    while (c.bufs) {
        tensor_buf *n = c.bufs->next;
        um_free_aligned(c.bufs->data);
        free(c.bufs);
        c.bufs = n;
    }
    return rc;
}
