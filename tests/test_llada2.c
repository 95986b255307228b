/*
 * test_llada2: the llada2 architecture (LLaDA 2.x, the BailingMoeV2 layout) against an
 * independent float64 forward pass (tests/ref_f64.h) written from the model's published definition
 * (modeling_llada2_moe.py of inclusionAI/LLaDA2.0-mini and llama.cpp's bailingmoe2 graph), on
 * tiny-llada2 random weights read straight from the GGUF file (nothing of model.c or forward.c
 * is used by that reference); plus hand-checked small cases: group-limited routing, partial
 * rotary, the block-causal mask, and partial (cached) passes that must equal full passes.
 *
 * The reference, per layer (B = block length, blocks counted from position 0):
 *   xn = rmsnorm(x) * attn_norm ; [q; k; v] = xn Wqkv^T (rows Q, then K, then V)
 *   q, k per head: rmsnorm * q_norm / k_norm, then NeoX RoPE on the first n_rot dims only
 *   query i attends keys j with j / B <= i / B (softmax, scale 1/sqrt(head_dim), GQA)
 *   x += att Wo^T ; xn = rmsnorm(x) * ffn_norm
 *   dense layer (il < leading_dense_block_count): x += Wd (silu(Wg xn) * (Wu xn))
 *   MoE layer: p = sigmoid(Wr xn), key = p + exp_probs_b; groups of n_expert/n_group experts
 *     score the sum of their two best keys; the n_group_used best groups offer experts; the k
 *     best keys among those are chosen; w = p / sum(p chosen) * expert_weights_scale;
 *     x += sum w_e expert_e(xn) + shared(xn)
 *   logits = rmsnorm(x) * output_norm W_out^T
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
#include "ref_f64.h"
#include "synth.h"

/* ------------------------------------------------------------------ helpers */

static int make_model(uint32_t type, char *path, size_t cap) {
    snprintf(path, cap, "/tmp/unmask-test-llada2-%d-%s.gguf", (int)getpid(), um_type_name(type));
    um_synth_opts o = { .shape = synth_find_shape("tiny-llada2"), .type = type, .seed = 11, .init_scale = 1.0f };
    um_err e;
    if (!o.shape || synth_write(&o, path, &e)) { printf("    synth: %s\n", e.msg); return -1; }
    return 0;
}

static int argmax_f(const float *a, int n) { int b = 0; for (int i = 1; i < n; i++) if (a[i] > a[b]) b = i; return b; }
static int argmax_d(const double *a, int n) { int b = 0; for (int i = 1; i < n; i++) if (a[i] > a[b]) b = i; return b; }

#define T_CANVAS 45                     /* one full block of 32 and a partial second block */

static void canvas(int32_t *tok, int V, int salt) {
    for (int i = 0; i < T_CANVAS; i++) tok[i] = (i * 131 + 17 + salt * 7) % V;
}

/* ------------------------------------------------------------------ tests */

/* unmask's reference (double dot products over dequantized rows) and fast paths against the
 * float64 reference: F32 and F16 storage are exact inputs for both sides, so the only
 * differences are float activations (ref) and summation order / f32 ops (fast): 1e-5 in cosine. */
static void against_reference(uint32_t type) {
    char path[256];
    if (make_model(type, path, sizeof path)) { th_fail(__FILE__, __LINE__, "cannot write model"); return; }
    um_err e = { "" };
    um_model *m = NULL;
    gguf_file *g = NULL;
    int rc = model_open(&m, path, &e);
    if (!rc) rc = gguf_open(&g, path, &e);
    unlink(path);
    if (rc) { th_fail(__FILE__, __LINE__, "open: %s", e.msg); model_close(m); return; }
    ref_model r;
    if (!ref_init(&r, g)) { th_fail(__FILE__, __LINE__, "not a known family"); gguf_close(g); model_close(m); return; }
    const int T = T_CANVAS, V = r.V;
    int32_t tok[T_CANVAS], rows[T_CANVAS];
    canvas(tok, V, 0);
    for (int i = 0; i < T; i++) rows[i] = i;
    double *ld = malloc(sizeof(double) * T * V);
    float *lf = malloc(sizeof(float) * T * V), *lr = malloc(sizeof(float) * T * V);
    um_pool *pool = pool_new(2);
    um_forward *fast = NULL, *ref = NULL;
    um_forward_opts fo = { .max_tokens = T, .kernel = UM_KERNEL_AUTO };
    um_forward_opts ro = { .max_tokens = T, .reference = true };
    ref_forward(&r, tok, T, ld, NULL);
    if (forward_new(&fast, m, pool, &fo, &e) || forward_new(&ref, m, NULL, &ro, &e) ||
        forward_run(fast, tok, T, rows, T, lf, &e) || forward_run(ref, tok, T, rows, T, lr, &e)) {
        th_fail(__FILE__, __LINE__, "%s", e.msg);
    } else {
        double worst_f = 1, worst_r = 1;
        int agree_f = 0, agree_r = 0;
        for (int t = 0; t < T; t++) {
            double cf = ref_cosine(lf + t * V, ld + t * V, V), cr = ref_cosine(lr + t * V, ld + t * V, V);
            if (cf < worst_f) worst_f = cf;
            if (cr < worst_r) worst_r = cr;
            agree_f += argmax_f(lf + t * V, V) == argmax_d(ld + t * V, V);
            agree_r += argmax_f(lr + t * V, V) == argmax_d(ld + t * V, V);
        }
        printf("    %s: worst row cosine ref %.9f fast %.9f, argmax %d/%d %d/%d\n", um_type_name(type), worst_r, worst_f,
               agree_r, T, agree_f, T);
        if (worst_r < 0.99999 || worst_f < 0.99999 || agree_r < T - 1 || agree_f < T - 1)
            th_fail(__FILE__, __LINE__, "%s: cosine ref %.9f fast %.9f (need 0.99999), argmax %d %d of %d",
                    um_type_name(type), worst_r, worst_f, agree_r, agree_f, T);
    }
    free(ld); free(lf); free(lr);
    forward_free(fast);
    forward_free(ref);
    pool_free(pool);
    gguf_close(g);
    model_close(m);
}

TEST(llada2_f32_matches_float64_reference) { against_reference(UM_TYPE_F32); }
TEST(llada2_f16_matches_float64_reference) { against_reference(UM_TYPE_F16); }

/* Group-limited routing on a constructed router output. 8 experts in 4 groups of 2, 2 groups
 * used, k = 2, sigmoid, normalised, scale 2.5. Logits and their sigmoids:
 *   g0: e0  3.0 -> 0.9526, e1 -3.0 -> 0.0474   group score 1.0000
 *   g1: e2  2.0 -> 0.8808, e3  2.0 -> 0.8808   group score 1.7616
 *   g2: e4 -1.0 -> 0.2689, e5 -1.0 -> 0.2689   group score 0.5379
 *   g3: e6  2.5 -> 0.9241, e7 -4.0 -> 0.0180   group score 0.9421
 * Groups g1 and g0 win; among e0..e3 the best two are e0 and e2 (e2, e3 tie: the lower index).
 * Without groups e6 (0.9241) would beat e2: the group rule is what drops it.
 * With bias +2 on e5, g2 scores 2.5379 and leads, g1 second; the keys among e2..e5 are
 * 0.8808, 0.8808, 0.2689, 2.2689: picks e5 then e2, weighted by the unbiased p (0.2689, 0.8808). */
TEST(llada2_group_limited_routing_by_hand) {
    const float logits[8] = { 3.0f, -3.0f, 2.0f, 2.0f, -1.0f, -1.0f, 2.5f, -4.0f };
    um_moe_cfg c = { .n_expert = 8, .k = 2, .gating = UM_MOE_SIGMOID, .norm_topk = true, .scale = 2.5f,
                     .n_group = 4, .n_group_used = 2 };
    int32_t ex[2];
    float w[2];
    um_err e;
    CHECK(ops_moe_route(&c, logits, 1, ex, w, &e) == UM_OK);
    CHECK_EQ(ex[0], 0);
    CHECK_EQ(ex[1], 2);
    double p0 = 1 / (1 + exp(-3.0)), p2 = 1 / (1 + exp(-2.0));
    CHECK_NEAR(w[0], p0 / (p0 + p2) * 2.5, 1e-5);
    CHECK_NEAR(w[1], p2 / (p0 + p2) * 2.5, 1e-5);
    /* the same scores without groups pick e0 and e6 */
    um_moe_cfg flat = c;
    flat.n_group = 0;
    CHECK(ops_moe_route(&flat, logits, 1, ex, w, &e) == UM_OK);
    CHECK_EQ(ex[0], 0);
    CHECK_EQ(ex[1], 6);
    /* a selection bias moves the choice but not the weights' source */
    const float bias[8] = { 0, 0, 0, 0, 0, 2.0f, 0, 0 };
    c.bias = bias;
    CHECK(ops_moe_route(&c, logits, 1, ex, w, &e) == UM_OK);
    CHECK_EQ(ex[0], 5);
    CHECK_EQ(ex[1], 2);
    double p5 = 1 / (1 + exp(1.0));
    CHECK_NEAR(w[0], p5 / (p5 + p2) * 2.5, 1e-5);
    CHECK_NEAR(w[1], p2 / (p5 + p2) * 2.5, 1e-5);
    /* groups that cannot supply k experts are refused */
    c.n_group_used = 1;
    c.k = 3;
    CHECK(ops_moe_route(&c, logits, 1, ex, w, &e) == UM_FAIL);
}

/* Partial NeoX RoPE: head_dim 64, 32 rotated dims: dims 32..63 come out bit for bit as they
 * went in, dims i and i+16 (i < 16) rotate by pos * base^(-2i/32). */
TEST(llada2_partial_rotary_leaves_the_rest) {
    enum { HD = 64, NR = 32, NH = 2 };
    float q[NH * HD], q0[NH * HD];
    for (int i = 0; i < NH * HD; i++) q0[i] = q[i] = (float)sin(0.37 * i + 0.1);
    const int32_t pos[1] = { 9 };
    um_rope rp = { .mode = UM_ROPE_NEOX, .head_dim = HD, .n_dims = NR, .freq_base = 600000.0f, .freq_scale = 1.0f };
    um_err e;
    for (int path = 0; path < 2; path++) {
        memcpy(q, q0, sizeof q);
        CHECK((path ? ops_rope(NULL, &rp, pos, 1, q, NH, NULL, 0, &e) : ops_rope_ref(&rp, pos, 1, q, NH, NULL, 0, &e)) == UM_OK);
        for (int h = 0; h < NH; h++) {
            for (int d = NR; d < HD; d++) CHECK_MSG(q[h * HD + d] == q0[h * HD + d], "head %d dim %d changed", h, d);
            for (int i = 0; i < NR / 2; i++) {
                double th = 9 * pow(600000.0, -2.0 * i / NR);
                double a = q0[h * HD + i], b = q0[h * HD + i + NR / 2];
                CHECK_NEAR(q[h * HD + i], a * cos(th) - b * sin(th), 1e-5);
                CHECK_NEAR(q[h * HD + i + NR / 2], a * sin(th) + b * cos(th), 1e-5);
            }
        }
    }
}

/* The mask: a token changed in block 1 (positions 32..44) leaves every logit of block 0 bit for
 * bit as it was (rows are computed independently and block 0 never reads block 1), on both
 * paths, and changes block 1's rows. */
TEST(llada2_block_causal_mask) {
    char path[256];
    CHECK(make_model(UM_TYPE_F32, path, sizeof path) == 0);
    um_err e = { "" };
    um_model *m = NULL;
    int rc = model_open(&m, path, &e);
    unlink(path);
    CHECK_MSG(rc == UM_OK, "%s", e.msg);
    CHECK(m->arch->block_causal);
    CHECK_EQ(m->hp.block_size, 32);
    const int T = T_CANVAS, V = m->hp.n_vocab;
    int32_t a[T_CANVAS], b[T_CANVAS], rows[T_CANVAS];
    canvas(a, V, 0);
    memcpy(b, a, sizeof a);
    b[40] = (b[40] + 5) % V;
    for (int i = 0; i < T; i++) rows[i] = i;
    float *la = malloc(sizeof(float) * T * V), *lb = malloc(sizeof(float) * T * V);
    um_pool *pool = pool_new(2);
    for (int path_ref = 0; path_ref < 2; path_ref++) {
        um_forward *f = NULL;
        um_forward_opts o = { .max_tokens = T, .kernel = UM_KERNEL_AUTO, .reference = path_ref };
        if (forward_new(&f, m, path_ref ? NULL : pool, &o, &e) || forward_run(f, a, T, rows, T, la, &e) ||
            forward_run(f, b, T, rows, T, lb, &e)) {
            th_fail(__FILE__, __LINE__, "%s", e.msg);
            forward_free(f);
            break;
        }
        forward_free(f);
        CHECK_MSG(memcmp(la, lb, sizeof(float) * 32 * V) == 0, "block 0 moved when block 1 changed (%s path)",
                  path_ref ? "reference" : "fast");
        int moved = 0;
        for (int t = 32; t < T; t++) moved += memcmp(la + t * V, lb + t * V, sizeof(float) * V) != 0;
        CHECK_MSG(moved == T - 32, "only %d of block 1's %d rows changed (%s path)", moved, T - 32,
                  path_ref ? "reference" : "fast");
    }
    free(la); free(lb);
    pool_free(pool);
    model_close(m);
}

/* Partial passes over an F32 K/V cache equal full passes: (1) block 1 recomputed after a change
 * in block 1, block 0's K/V read from the cache; (2) block 0 recomputed while the cache holds a
 * stale block 1: its rows must not see those keys. Active rows in canvas order and scrambled. */
TEST(llada2_partial_pass_equals_full_pass) {
    char path[256];
    CHECK(make_model(UM_TYPE_F32, path, sizeof path) == 0);
    um_err e = { "" };
    um_model *m = NULL;
    int rc = model_open(&m, path, &e);
    unlink(path);
    CHECK_MSG(rc == UM_OK, "%s", e.msg);
    const int T = T_CANVAS, V = m->hp.n_vocab;
    int32_t a[T_CANVAS], b[T_CANVAS], rows[T_CANVAS];
    canvas(a, V, 0);
    memcpy(b, a, sizeof a);
    b[33] = (b[33] + 3) % V;
    b[44] = (b[44] + 9) % V;
    for (int i = 0; i < T; i++) rows[i] = i;
    float *full = malloc(sizeof(float) * T * V), *part = malloc(sizeof(float) * T * V), *fill = malloc(sizeof(float) * T * V);
    um_pool *pool = pool_new(2);
    um_forward *f = NULL;
    um_kvcache *kv = NULL;
    um_forward_opts o = { .max_tokens = T, .kernel = UM_KERNEL_AUTO };
    if (forward_new(&f, m, pool, &o, &e) || forward_kv_new(f, UM_TYPE_F32, T, &kv, &e) ||
        forward_run(f, b, T, rows, T, full, &e)) {
        th_fail(__FILE__, __LINE__, "%s", e.msg);
        goto out;
    }
    /* (1) cache filled on canvas a, block 1 recomputed on canvas b */
    int32_t act1[T_CANVAS - 32], act1s[T_CANVAS - 32];
    for (int i = 0; i < T - 32; i++) act1[i] = 32 + i;
    for (int i = 0; i < T - 32; i++) act1s[i] = 32 + (i * 5) % (T - 32);   /* 5 is prime to 13 */
    for (int order = 0; order < 2; order++) {
        const int32_t *act = order ? act1s : act1;
        if (forward_run_kv(f, kv, a, T, NULL, 0, rows, T, fill, NULL, &e) ||
            forward_run_kv(f, kv, b, T, act, T - 32, act, T - 32, part, NULL, &e)) {
            th_fail(__FILE__, __LINE__, "%s", e.msg);
            goto out;
        }
        for (int i = 0; i < T - 32; i++)
            CHECK_MSG(memcmp(part + i * V, full + act[i] * V, sizeof(float) * V) == 0,
                      "row %d of a partial pass differs from the full pass (%s order)", act[i], order ? "scrambled" : "canvas");
    }
    /* (2) cache filled on canvas b (block 1 as b has it), block 0 recomputed on canvas a:
     * block 0 of a is what a full pass on a gives, whatever the cache holds for block 1 */
    int32_t act0[32];
    for (int i = 0; i < 32; i++) act0[i] = (i * 7) % 32;
    if (forward_run(f, a, T, rows, T, full, &e) ||
        forward_run_kv(f, kv, b, T, NULL, 0, rows, T, fill, NULL, &e) ||
        forward_run_kv(f, kv, a, T, act0, 32, act0, 32, part, NULL, &e)) {
        th_fail(__FILE__, __LINE__, "%s", e.msg);
        goto out;
    }
    for (int i = 0; i < 32; i++)
        CHECK_MSG(memcmp(part + i * V, full + act0[i] * V, sizeof(float) * V) == 0,
                  "block 0 row %d saw the cached keys of block 1", act0[i]);
out:
    free(full); free(part); free(fill);
    forward_kv_free(kv);
    forward_free(f);
    pool_free(pool);
    model_close(m);
}

/* The hyper-parameters as model.c reads them from the converter's keys, and the shapes. */
TEST(llada2_hparams_and_shapes) {
    char path[256];
    CHECK(make_model(UM_TYPE_F32, path, sizeof path) == 0);
    um_err e = { "" };
    um_model *m = NULL;
    int rc = model_open(&m, path, &e);
    CHECK_MSG(rc == UM_OK, "%s", e.msg);
    const um_hparams *hp = &m->hp;
    CHECK_EQ(hp->n_layer, 3);
    CHECK_EQ(hp->n_rot, 32);
    CHECK_EQ(hp->head_dim, 64);
    CHECK_EQ(hp->n_layer_dense_lead, 1);
    CHECK_EQ(hp->n_expert_shared, 1);
    CHECK_EQ(hp->n_ff_shexp, 256);
    CHECK_EQ(hp->n_expert_groups, 2);
    CHECK_EQ(hp->n_group_used, 1);
    CHECK(hp->moe_sigmoid && hp->moe_norm_w && !hp->shift_logits);
    CHECK_NEAR(hp->expert_weights_scale, 2.5, 0);
    CHECK_EQ(hp->block_size, 32);
    CHECK(m->layers[0].ffn_gate.data && !m->layers[0].ffn_gate_inp.data);
    CHECK(m->layers[1].ffn_gate_inp.data && m->layers[1].exp_probs_b && m->layers[1].ffn_down_shexp.data);
    /* fused QKV: three consecutive row ranges of one tensor */
    CHECK(m->layers[1].wk.data == (const char *)m->layers[1].wq.data + 256 * m->layers[1].wq.row_bytes);
    CHECK(m->layers[1].wv.data == (const char *)m->layers[1].wk.data + 128 * m->layers[1].wk.row_bytes);
    model_close(m);
    /* diffusion.block_length and nextn_predict_layers (an extra block_count layer, never run) */
    gguf_file *g;
    CHECK(gguf_open(&g, path, &e) == UM_OK);
    gguf_writer *w = gguf_writer_new();
    const char *skip[] = { "llada2.block_count", NULL };
    CHECK(gguf_copy_kv(w, g, skip) == UM_OK);
    gguf_set_u32(w, "llada2.block_count", 4);
    gguf_set_u32(w, "llada2.nextn_predict_layers", 1);
    gguf_set_u32(w, "diffusion.block_length", 8);
    for (uint64_t i = 0; i < gguf_n_tensors(g); i++) {
        const gguf_tensor *t = gguf_tensor_at(g, i);
        char name[256];
        snprintf(name, sizeof name, "%.*s", (int)t->name.len, t->name.ptr);
        gguf_add_tensor(w, name, t->type, t->n_dims, t->ne, t->data, t->size, &e);
    }
    char path2[300];
    snprintf(path2, sizeof path2, "%s.b8.gguf", path);
    rc = gguf_writer_write(w, path2, &e);
    gguf_writer_free(w);
    gguf_close(g);
    unlink(path);
    CHECK_MSG(rc == UM_OK, "%s", e.msg);
    rc = model_open(&m, path2, &e);
    unlink(path2);
    CHECK_MSG(rc == UM_OK, "%s", e.msg);
    CHECK_EQ(m->hp.n_layer, 3);
    CHECK_EQ(m->hp.n_layer_nextn, 1);
    CHECK_EQ(m->hp.block_size, 8);
    model_close(m);
    /* LLaDA2.0-mini's published shape */
    const um_synth_shape *s = synth_find_shape("llada2-mini");
    CHECK(s != NULL);
    CHECK_STREQ(s->arch, "llada2");
    CHECK(s->n_vocab == 157184 && s->n_embd == 2048 && s->n_layer == 20 && s->n_head == 16 && s->n_head_kv == 4);
    CHECK(s->head_dim == 128 && s->n_rot == 64 && s->n_ff == 5120 && s->n_ff_exp == 512);
    CHECK(s->n_expert == 256 && s->n_expert_used == 8 && s->n_expert_groups == 8 && s->n_group_used == 4);
    CHECK(s->n_dense_lead == 1 && s->n_expert_shared == 1 && s->mask_id == 156895 && s->eos_id == 156892);
}

/* Bad llada2 hyper-parameters are refused at load with a message naming the key. */
static void refused_with(const char *path, const char *key, uint32_t value, const char *expect) {
    um_err e = { "" };
    gguf_file *g;
    if (gguf_open(&g, path, &e)) { th_fail(__FILE__, __LINE__, "%s", e.msg); return; }
    gguf_writer *w = gguf_writer_new();
    const char *skip[] = { key, NULL };
    gguf_copy_kv(w, g, skip);
    gguf_set_u32(w, key, value);
    for (uint64_t i = 0; i < gguf_n_tensors(g); i++) {
        const gguf_tensor *t = gguf_tensor_at(g, i);
        char name[256];
        snprintf(name, sizeof name, "%.*s", (int)t->name.len, t->name.ptr);
        gguf_add_tensor(w, name, t->type, t->n_dims, t->ne, t->data, t->size, &e);
    }
    char p2[300];
    snprintf(p2, sizeof p2, "%s.bad.gguf", path);
    int rc = gguf_writer_write(w, p2, &e);
    gguf_writer_free(w);
    gguf_close(g);
    if (rc) { th_fail(__FILE__, __LINE__, "%s", e.msg); return; }
    um_model *m = NULL;
    rc = model_open(&m, p2, &e);
    unlink(p2);
    model_close(m);
    if (rc != UM_FAIL || !strstr(e.msg, expect))
        th_fail(__FILE__, __LINE__, "%s = %u: rc %d, message '%s' (expected '%s')", key, value, rc, e.msg, expect);
}

TEST(llada2_bad_hparams_are_refused) {
    char path[256];
    CHECK(make_model(UM_TYPE_F32, path, sizeof path) == 0);
    refused_with(path, "llada2.expert_group_count", 3, "expert_group_count 3");        /* 8 experts */
    refused_with(path, "llada2.expert_group_used_count", 2, "expert_group_used_count 2"); /* of 2 groups */
    refused_with(path, "llada2.leading_dense_block_count", 9, "leading_dense_block_count 9");
    refused_with(path, "llada2.expert_gating_func", 3, "expert_gating_func 3");
    refused_with(path, "diffusion.block_length", 0, "diffusion.block_length 0");
    refused_with(path, "llada2.nextn_predict_layers", 3, "nextn_predict_layers 3");
    refused_with(path, "llada2.expert_shared_count", 2, "ffn_gate_shexp.weight' has shape");  /* 512 wide */
    unlink(path);
}
