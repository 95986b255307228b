/*
 * test_quantize: the mixture rules and `unmask quantize`'s converter against llama-quantize.
 *
 * tests/data/quant/mixtures.txt lists, for three small models (two llada-shaped, one 8-expert), the type
 * llama-quantize gave every tensor under each mixture; tiny-f32.gguf and its llama-quantize
 * outputs tiny-q4_k_m.gguf / tiny-q8_0.gguf check the whole file path byte for byte.
 * All were made by tools/make-quant-fixtures.sh.
 */
#include "harness.h"
#include "infile.h"
#include "gguf.h"
#include "quant.h"
#include "quantize.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ------------------------------------------------------------------ mixtures.txt */

enum { MAX_MIX = 32, MAX_T = 512 };

typedef struct mix_model {
    um_quant_model  m;
    um_quant_tensor t[MAX_T];
    char            names[MAX_T][96];
    uint32_t        expect[MAX_T][MAX_MIX];
    size_t          n;
} mix_model;

static mix_model g_models[4];

TEST(quantize_mixtures_match_llama_quantize) {
    char *buf;
    size_t len;
    um_err e;
    CHECK_MSG(infile_read("tests/data/quant/mixtures.txt", (size_t)1 << 30, &buf, &len, &e) == UM_OK, "%s", e.msg);
    char mixes[MAX_MIX][16];
    unsigned ftypes[MAX_MIX];
    int n_mix = 0, n_ft = 0, n_models = 0, n_checked = 0;
    mix_model *cur = NULL;
    for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n")) {
        if (line[0] == '#') continue;
        char word[32];
        int off = 0;
        if (sscanf(line, "%31s%n", word, &off) != 1) continue;
        char *p = line + off;
        if (!strcmp(word, "mixtures")) {
            int k;
            while (n_mix < MAX_MIX && sscanf(p, "%15s%n", mixes[n_mix], &k) == 1) { p += k; n_mix++; }
        } else if (!strcmp(word, "ftypes")) {
            int k;
            while (n_ft < MAX_MIX && sscanf(p, "%u%n", &ftypes[n_ft], &k) == 1) { p += k; n_ft++; }
        } else if (!strcmp(word, "model")) {
            CHECK(n_models < 4);
            cur = &g_models[n_models++];
            memset(cur, 0, sizeof *cur);
            char name[16];
            CHECK(sscanf(p, "%15s %63s %d %d %d %d", name, cur->m.arch, &cur->m.n_layer, &cur->m.n_head,
                         &cur->m.n_head_kv, &cur->m.n_expert) == 6);
        } else if (!strcmp(word, "tensor")) {
            CHECK(cur && cur->n < MAX_T);
            size_t i = cur->n++;
            char model[16];
            int nd, k;
            unsigned long long ne0, ne1, ne2;
            CHECK(sscanf(p, "%15s %95s %d %llu %llu %llu%n", model, cur->names[i], &nd, &ne0, &ne1, &ne2, &k) == 6);
            p += k;
            um_quant_tensor *t = &cur->t[i];
            t->name = cur->names[i];
            t->ne[0] = ne0; t->ne[1] = ne1; t->ne[2] = ne2; t->ne[3] = 1;
            t->type = UM_TYPE_F32;
            for (int c = 0; c < n_mix; c++) {
                char ty[16];
                CHECK(sscanf(p, "%15s%n", ty, &k) == 1);
                p += k;
                int id = um_type_from_name(ty);
                CHECK_MSG(id >= 0, "unknown type %s", ty);
                cur->expect[i][c] = (uint32_t)id;
            }
        }
    }
    free(buf);
    CHECK(n_mix > 0 && n_mix == n_ft && n_models == 3);
    static uint32_t got[MAX_T];
    for (int c = 0; c < n_mix; c++) {
        const um_mixture *mix = um_mixture_find(mixes[c]);
        CHECK_MSG(mix, "mixture %s not offered", mixes[c]);
        CHECK_MSG(mix->ftype == ftypes[c], "%s: ftype %u, llama.cpp wrote %u", mixes[c], mix->ftype, ftypes[c]);
        for (int mi = 0; mi < n_models; mi++) {
            mix_model *mm = &g_models[mi];
            CHECK_MSG(um_quant_choose(mix, &mm->m, mm->t, mm->n, got, &e) == UM_OK, "%s", e.msg);
            for (size_t i = 0; i < mm->n; i++, n_checked++)
                CHECK_MSG(got[i] == mm->expect[i][c], "%s, model %d, %s: %s, llama-quantize chose %s",
                          mixes[c], mi, mm->t[i].name, um_type_name(got[i]), um_type_name(mm->expect[i][c]));
        }
    }
    CHECK(n_checked > 1000);
}

TEST(quantize_mixture_names) {
    CHECK(um_mixture_find("q4_k_m") == um_mixture_find("Q4_K_M"));
    CHECK_EQ(um_mixture_find("Q4_K_M")->ftype, 15);
    CHECK_EQ(um_mixture_find("Q8_0")->base_type, UM_TYPE_Q8_0);
    CHECK(um_mixture_find("Q4_K") == NULL);
    CHECK(um_mixture_find("Q2_K_S") == NULL);     /* needs an importance matrix: not offered */
    for (size_t i = 0; um_mixture_at(i); i++) {
        const um_type_traits *t = um_traits(um_mixture_at(i)->base_type);
        CHECK_MSG(t && t->from_float_ref, "%s has no quantizer", um_mixture_at(i)->name);
    }
}

/* MoE models: expert tensors must carry a layer number, as llama.cpp demands. */
TEST(quantize_moe_needs_layer_numbers) {
    um_quant_model m = { .arch = "llada-moe", .n_layer = 2, .n_head = 4, .n_head_kv = 4, .n_expert = 64 };
    um_quant_tensor t[2] = {
        { .name = "blk.1.ffn_down_exps.weight", .ne = { 256, 256, 64, 1 }, .type = UM_TYPE_F32 },
        { .name = "ffn_down_exps.weight",       .ne = { 256, 256, 64, 1 }, .type = UM_TYPE_F32 },
    };
    uint32_t out[2];
    um_err e = { "" };
    CHECK(um_quant_choose(um_mixture_find("Q4_K_M"), &m, t, 1, out, &e) == UM_OK);
    CHECK_EQ(out[0], UM_TYPE_Q6_K);              /* layer 1 of 2 is in the last eighth */
    CHECK(um_quant_choose(um_mixture_find("Q4_K_M"), &m, t, 2, out, &e) == UM_FAIL);
    CHECK_CONTAINS(e.msg, "ffn_down_exps.weight");
    t[0].name = "blk.7.ffn_down_exps.weight";
    CHECK(um_quant_choose(um_mixture_find("Q4_K_M"), &m, t, 1, out, &e) == UM_FAIL);
    CHECK_CONTAINS(e.msg, "out of range");
}

/* ------------------------------------------------------------------ whole files */

static bool kv_equal(const gguf_kv *a, const gguf_kv *b) {
    if (a->type != b->type) return false;
    switch (a->type) {
    case GGUF_TYPE_STRING:
        return a->v.s.len == b->v.s.len && !memcmp(a->v.s.ptr, b->v.s.ptr, a->v.s.len);
    case GGUF_TYPE_FLOAT32: case GGUF_TYPE_FLOAT64:
        return a->v.f == b->v.f;
    case GGUF_TYPE_ARRAY:
        if (a->arr_type != b->arr_type || a->arr_n != b->arr_n) return false;
        if (a->arr_type == GGUF_TYPE_STRING) {
            for (uint64_t i = 0; i < a->arr_n; i++)
                if (a->arr_str[i].len != b->arr_str[i].len || memcmp(a->arr_str[i].ptr, b->arr_str[i].ptr, a->arr_str[i].len))
                    return false;
            return true;
        }
        return !memcmp(a->arr_data, b->arr_data, a->arr_n * gguf_type_size(a->arr_type));
    default:
        return a->v.u == b->v.u;
    }
}

/* unmask's output has the same tensors (type, shape, bytes) and the same metadata as
 * llama-quantize's for the same input. */
static void check_same_as_llama(const char *mine_path, const char *ref_path) {
    gguf_file *mine = NULL, *ref = NULL;
    um_err e = { "" };
    if (gguf_open(&mine, mine_path, &e) || gguf_open(&ref, ref_path, &e)) {
        th_fail(__FILE__, __LINE__, "%s", e.msg);
        goto out;
    }
    if (gguf_n_tensors(mine) != gguf_n_tensors(ref)) {
        th_fail(__FILE__, __LINE__, "tensor count %llu vs %llu", (unsigned long long)gguf_n_tensors(mine),
                (unsigned long long)gguf_n_tensors(ref));
        goto out;
    }
    for (uint64_t i = 0; i < gguf_n_tensors(ref) && !th_failed(); i++) {
        const gguf_tensor *r = gguf_tensor_at(ref, i);
        char name[128];
        snprintf(name, sizeof name, "%.*s", (int)r->name.len, r->name.ptr);
        const gguf_tensor *t = gguf_find_tensor(mine, name);
        if (!t) th_fail(__FILE__, __LINE__, "%s missing", name);
        else if (t->type != r->type) th_fail(__FILE__, __LINE__, "%s: %s vs llama %s", name, um_type_name(t->type), um_type_name(r->type));
        else if (memcmp(t->ne, r->ne, sizeof t->ne)) th_fail(__FILE__, __LINE__, "%s: shape differs", name);
        else if (t->size != r->size || memcmp(t->data, r->data, r->size)) th_fail(__FILE__, __LINE__, "%s: bytes differ", name);
    }
    if (gguf_n_kv(mine) != gguf_n_kv(ref))
        th_fail(__FILE__, __LINE__, "%llu keys vs llama's %llu", (unsigned long long)gguf_n_kv(mine), (unsigned long long)gguf_n_kv(ref));
    for (uint64_t i = 0; i < gguf_n_kv(ref) && !th_failed(); i++) {
        const gguf_kv *r = gguf_kv_at(ref, i);
        char key[128];
        snprintf(key, sizeof key, "%.*s", (int)r->key.len, r->key.ptr);
        const gguf_kv *k = gguf_find_kv(mine, key);
        if (!k || !kv_equal(k, r)) th_fail(__FILE__, __LINE__, "key %s %s", key, k ? "differs" : "missing");
    }
out:
    gguf_close(mine);
    gguf_close(ref);
}

static void tmp_path(char *buf, size_t cap, const char *tag) {
    snprintf(buf, cap, "%s/unmask-test-quantize-%d-%s.gguf", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (int)getpid(), tag);
}

TEST(quantize_file_matches_llama_quantize) {
    const char *mixes[] = { "Q4_K_M", "Q8_0" };
    const char *refs[] = { "tests/data/quant/tiny-q4_k_m.gguf", "tests/data/quant/tiny-q8_0.gguf" };
    for (int i = 0; i < 2 && !th_failed(); i++) {
        char out[256];
        tmp_path(out, sizeof out, mixes[i]);
        um_quantize_opts o = { .n_threads = 3, .quiet = true };
        um_err e = { "" };
        CHECK_MSG(um_quantize_file("tests/data/quant/tiny-f32.gguf", out, um_mixture_find(mixes[i]), &o, &e) == UM_OK,
                  "%s", e.msg);
        check_same_as_llama(out, refs[i]);
        unlink(out);
    }
}

TEST(quantize_file_refuses_bad_input) {
    char out[256];
    tmp_path(out, sizeof out, "bad");
    um_quantize_opts o = { .n_threads = 1, .quiet = true };
    um_err e = { "" };
    CHECK(um_quantize_file("tests/data/quant/no-such.gguf", out, um_mixture_find("Q8_0"), &o, &e) == UM_FAIL);
    CHECK_CONTAINS(e.msg, "no-such.gguf");
    /* already-quantized tensors are not requantized unless asked */
    CHECK(um_quantize_file("tests/data/quant/tiny-q4_k_m.gguf", out, um_mixture_find("Q8_0"), &o, &e) == UM_FAIL);
    CHECK_CONTAINS(e.msg, "--allow-requantize");
    CHECK(access(out, F_OK) != 0);
    o.allow_requantize = true;
    CHECK_MSG(um_quantize_file("tests/data/quant/tiny-q4_k_m.gguf", out, um_mixture_find("Q8_0"), &o, &e) == UM_OK, "%s", e.msg);
    gguf_file *g = NULL;
    CHECK_MSG(gguf_open(&g, out, &e) == UM_OK, "%s", e.msg);
    const gguf_tensor *t = gguf_find_tensor(g, "blk.0.attn_v.weight");
    CHECK(t && t->type == UM_TYPE_Q8_0);
    uint32_t ft = 0;
    CHECK(gguf_get_u32(g, "general.file_type", &ft, &e) == UM_OK && ft == 7);
    gguf_close(g);
    unlink(out);
}

/* A non-finite weight is an error naming the tensor and row, and no output is written. */
TEST(quantize_file_rejects_non_finite_weights) {
    char in[256], out[256];
    tmp_path(in, sizeof in, "nan-in");
    tmp_path(out, sizeof out, "nan-out");
    static float w[4 * 256];
    for (int i = 0; i < 4 * 256; i++) w[i] = (float)((i * 37) % 101 - 50) / 1000.0f;
    w[2 * 256 + 17] = NAN;                                   /* row 2 */
    gguf_writer *gw = gguf_writer_new();
    um_err e = { "" };
    const uint64_t ne[2] = { 256, 4 };
    CHECK(gw);
    CHECK(gguf_set_str(gw, "general.architecture", "llada") == UM_OK);
    CHECK(gguf_set_u32(gw, "llada.block_count", 1) == UM_OK);
    CHECK(gguf_add_tensor(gw, "blk.0.attn_q.weight", UM_TYPE_F32, 2, ne, w, sizeof w, &e) == UM_OK);
    CHECK_MSG(gguf_writer_write(gw, in, &e) == UM_OK, "%s", e.msg);
    gguf_writer_free(gw);
    um_quantize_opts o = { .n_threads = 2, .quiet = true };
    CHECK(um_quantize_file(in, out, um_mixture_find("Q4_K_M"), &o, &e) == UM_FAIL);
    CHECK_CONTAINS(e.msg, "blk.0.attn_q.weight");
    CHECK_CONTAINS(e.msg, "row 2");
    CHECK(access(out, F_OK) != 0);
    unlink(in);
}
