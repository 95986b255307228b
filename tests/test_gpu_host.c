/*
 * test_gpu_host: the host side of the CUDA backend, tested without a GPU: the repacking of
 * every integer weight format into the int8 + scale (+ offset) layout (bit-exact with the
 * reference dequantizers), the int8 GEMM arithmetic against plain dot products, the mma
 * fragment indices against the PTX ISA tables, the RoPE table against ops_rope_ref, the
 * memory plan, and the error gpu_backend_open gives when there is no device (or no CUDA).
 * The kernels themselves run in tests/gpu (make gpu-check) on a machine with a GPU.
 */
#include <math.h>
#include <stdlib.h>
#include <unistd.h>

#include "backend.h"
#include "forward.h"
#include "gpu.h"
#include "gpu_mma.h"
#include "gpu_pack.h"
#include "harness.h"
#include "model.h"
#include "ops.h"
#include "quant.h"
#include "synth.h"

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static float frand(void) {            /* uniform in [-1, 1) */
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((rng_state >> 40) & 0xFFFFFF) / 8388608.0f - 1.0f;
}

static const uint32_t exact_types[] = {
    UM_TYPE_Q4_0, UM_TYPE_Q4_1, UM_TYPE_Q5_0, UM_TYPE_Q5_1, UM_TYPE_Q8_0, UM_TYPE_Q2_K,
    UM_TYPE_Q3_K, UM_TYPE_Q4_K, UM_TYPE_Q5_K, UM_TYPE_Q6_K, UM_TYPE_IQ4_NL, UM_TYPE_IQ4_XS,
};

/* Every exact format: scale * q + off equals the reference dequantizer bit for bit (the
 * same float products), so the GPU computes with exactly the file's weights. */
TEST(gpu_pack_matches_reference_dequant_bit_exact) {
    enum { N = 512 };
    float x[N], ref[N], got[N], tmp[N];
    int8_t q[N];
    float scale[N / 16], off[N / 16];
    static uint8_t blocks[N * 4];
    for (size_t ti = 0; ti < UM_ARRAY_LEN(exact_types); ti++) {
        const uint32_t t = exact_types[ti];
        const um_type_traits *tr = um_traits(t);
        CHECK(tr && tr->from_float_ref && tr->to_float_ref);
        gpu_layout L = gpu_layout_for(t, N, 3);
        CHECK_MSG(L.kind == GPU_KIND_I8 && !L.requant, "%s: layout kind %d requant %d", um_type_name(t), L.kind, L.requant);
        const bool g16 = t == UM_TYPE_Q2_K || t == UM_TYPE_Q3_K || t == UM_TYPE_Q6_K;
        CHECK_EQ(L.group, g16 ? 16 : 32);
        CHECK_EQ(L.bytes_w, 3 * N);
        CHECK_EQ(L.bytes_scale, 3 * (N / L.group) * 4);
        for (int row = 0; row < 3; row++) {
            for (int i = 0; i < N; i++) x[i] = frand() * (row + 1) + (row == 2 ? 0.7f : 0.0f);
            tr->from_float_ref(x, blocks, N);
            tr->to_float_ref(blocks, ref, N);
            memset(off, 0, sizeof off);
            gpu_pack_row(t, &L, blocks, N, q, scale, off, tmp);
            gpu_unpack_row_ref(&L, q, scale, off, N, got);
            for (int i = 0; i < N; i++)
                CHECK_MSG(memcmp(&got[i], &ref[i], 4) == 0, "%s row %d elem %d: packed %.9g vs reference %.9g",
                          um_type_name(t), row, i, got[i], ref[i]);
        }
    }
}

/* Q4_0, Q4_1, Q4_K values survive the nibble layout exactly; other formats do not take it. */
TEST(gpu_nibble_layout_round_trips) {
    enum { N = 512 };
    float x[N], tmp[N];
    int8_t q[N], back[N];
    uint8_t nib[N / 2];
    float scale[N / 16], off[N / 16];
    static uint8_t blocks[N * 4];
    for (size_t ti = 0; ti < UM_ARRAY_LEN(exact_types); ti++) {
        const uint32_t t = exact_types[ti];
        gpu_layout L = gpu_layout_for(t, N, 5);
        gpu_layout_pack4(&L, 5);
        const bool want = t == UM_TYPE_Q4_0 || t == UM_TYPE_Q4_1 || t == UM_TYPE_Q4_K;
        CHECK_MSG(L.pack4 == want, "%s: pack4 %d", um_type_name(t), L.pack4);
        CHECK_EQ(L.bytes_w, want ? 5 * N / 2 : 5 * N);
        if (!want) continue;
        for (int i = 0; i < N; i++) x[i] = frand() * 2.0f - 0.3f;
        um_traits(t)->from_float_ref(x, blocks, N);
        gpu_pack_row(t, &L, blocks, N, q, scale, off, tmp);
        for (int i = 0; i < N; i++) CHECK(q[i] + L.bias4 >= 0 && q[i] + L.bias4 <= 15);
        gpu_nibble_pack(q, N, L.bias4, nib);
        gpu_nibble_unpack(nib, N, L.bias4, back);
        CHECK(memcmp(q, back, N) == 0);
        /* the byte order the GEMM's staging assumes: byte j = value j | value j+16 << 4 */
        CHECK_EQ(nib[3] & 0xF, q[3] + L.bias4);
        CHECK_EQ(nib[3] >> 4, q[19] + L.bias4);
        CHECK_EQ(nib[16 + 5] >> 4, q[32 + 21] + L.bias4);
    }
}

TEST(gpu_pack_float_rows_are_padded) {
    uint16_t src[40], dst[64];
    for (int i = 0; i < 40; i++) src[i] = (uint16_t)(0x3c00 + i);
    gpu_layout L = gpu_layout_for(UM_TYPE_F16, 40, 2);
    CHECK_EQ(L.kind, GPU_KIND_F16);
    CHECK_EQ(L.k_pad, 64);
    CHECK_EQ(L.bytes_w, 2 * 64 * 2);
    memset(dst, 0xff, sizeof dst);
    gpu_pack_row_float(UM_TYPE_F16, src, 40, 64, dst);
    for (int i = 0; i < 64; i++) CHECK_EQ(dst[i], i < 40 ? src[i] : 0);
    CHECK_EQ(gpu_layout_for(UM_TYPE_BF16, 64, 1).kind, GPU_KIND_BF16);
    CHECK_EQ(gpu_layout_for(UM_TYPE_F32, 64, 1).kind, GPU_KIND_F32);
}

TEST(gpu_layout_rejects_what_it_cannot_compute) {
    CHECK_EQ(gpu_layout_for(UM_TYPE_Q8_K, 256, 4).kind, GPU_KIND_NONE);      /* activation-only */
    CHECK_EQ(gpu_layout_for(UM_TYPE_MXFP4, 256, 4).kind, GPU_KIND_NONE);     /* no reference */
    CHECK_EQ(gpu_layout_for(UM_TYPE_Q4_K, 128, 4).kind, GPU_KIND_NONE);      /* not whole blocks */
    CHECK_EQ(gpu_layout_for(UM_TYPE_Q8_0, 0, 4).kind, GPU_KIND_NONE);
    CHECK_EQ(gpu_layout_for(99, 32, 4).kind, GPU_KIND_NONE);
}

/* The lossy fallback for types without an exact repacking: each value within half a step. */
TEST(gpu_requant_row_error_bound) {
    float x[96], back[96];
    int8_t q[96];
    float d[3];
    for (int i = 0; i < 96; i++) x[i] = frand() * (i < 32 ? 1e-3f : 5.0f);
    x[40] = 0;
    gpu_requant_row(x, 96, 96, q, d);
    gpu_layout L = { .kind = GPU_KIND_I8, .group = 32, .requant = true, .k_pad = 96 };
    gpu_unpack_row_ref(&L, q, d, NULL, 96, back);
    for (int i = 0; i < 96; i++) CHECK_NEAR(back[i], x[i], d[i / 32] * 0.5001f);
}

/* The int8 GEMM's arithmetic (integer dot per group, then scales and the offset term)
 * against a double dot of the dequantized weights with the dequantized activations; both
 * see the same int8 activations, so only float rounding separates them (rel 1e-5). */
TEST(gpu_i8_dot_matches_dequantized_dot) {
    enum { N = 768 };
    float w[N], a[N], wd[N], tmp[N];
    int8_t wq[N], aq[N];
    float ws[N / 16], wo[N / 16], ad[N / 32];
    int as[N / 16];
    static uint8_t blocks[N * 4];
    for (size_t ti = 0; ti < UM_ARRAY_LEN(exact_types); ti++) {
        const uint32_t t = exact_types[ti];
        const um_type_traits *tr = um_traits(t);
        gpu_layout L = gpu_layout_for(t, N, 1);
        for (int i = 0; i < N; i++) { w[i] = frand() + 0.2f; a[i] = frand() * 3.0f; }
        tr->from_float_ref(w, blocks, N);
        memset(wo, 0, sizeof wo);
        gpu_pack_row(t, &L, blocks, N, wq, ws, wo, tmp);
        gpu_unpack_row_ref(&L, wq, ws, wo, N, wd);
        gpu_quantize_act_ref(a, N, N, aq, ad, as);
        double ref = 0, mag = 0;
        for (int i = 0; i < N; i++) {
            const double av = (double)ad[i / 32] * aq[i];
            ref += (double)wd[i] * av;
            mag += fabs((double)wd[i] * av);
        }
        const float got = gpu_i8_dot_ref(&L, wq, ws, wo, aq, ad, as);
        CHECK_MSG(fabs(got - ref) <= 1e-5 * mag + 1e-6, "%s: %.9g vs %.9g", um_type_name(t), got, ref);
        /* and the activation quantization itself stays within half a step */
        for (int i = 0; i < N; i++) CHECK_NEAR(ad[i / 32] * aq[i], a[i], ad[i / 32] * 0.5001f);
        for (int g = 0; g < N / 16; g++) {
            int s = 0;
            for (int j = 0; j < 16; j++) s += aq[16 * g + j];
            CHECK_EQ(as[g], s);
        }
    }
}

/* ------------------------------------------------------------------ mma fragments
 * The PTX ISA's per-element tables ("Matrix fragments for mma.m16n8k32/k16"), written out
 * element by element, against the register-level helpers the kernels use. */

TEST(gpu_mma_fragments_match_ptx_tables) {
    for (int lane = 0; lane < 32; lane++) {
        const int g = lane >> 2, t = lane % 4;
        /* s8 m16n8k32 A: a0..a15; row g for i < 4 or 8 <= i < 12, else g + 8;
         * col t*4 + (i & 3) for i < 8, t*4 + (i & 3) + 16 otherwise */
        for (int i = 0; i < 16; i++) {
            int row, k;
            gpu_frag_a_s8k32(lane, i / 4, &row, &k);
            const int prow = (i < 4 || (i >= 8 && i < 12)) ? g : g + 8;
            const int pcol = t * 4 + (i & 3) + (i < 8 ? 0 : 16);
            CHECK_EQ(row, prow);
            CHECK_EQ(k + (i & 3), pcol);
        }
        /* s8 m16n8k32 B: b0..b7; row (k) t*4 + (i & 3) for i < 4, + 16 otherwise; col g */
        for (int i = 0; i < 8; i++) {
            int n, k;
            gpu_frag_b_s8k32(lane, i / 4, &n, &k);
            CHECK_EQ(n, g);
            CHECK_EQ(k + (i & 3), t * 4 + (i & 3) + (i < 4 ? 0 : 16));
        }
        /* s8 m16n8k16 A: a0..a7; row g for i < 4 else g + 8; col t*4 + (i & 3) */
        for (int i = 0; i < 8; i++) {
            int row, k;
            gpu_frag_a_s8k16(lane, i / 4, &row, &k);
            CHECK_EQ(row, i < 4 ? g : g + 8);
            CHECK_EQ(k + (i & 3), t * 4 + (i & 3));
        }
        /* s8 m16n8k16 B: b0..b3; row t*4 + i; col g */
        for (int i = 0; i < 4; i++) {
            int n, k;
            gpu_frag_b_s8k16(lane, &n, &k);
            CHECK_EQ(n, g);
            CHECK_EQ(k + i, t * 4 + i);
        }
        /* f16/bf16 m16n8k16 A: a0..a7 (halves); row g for i in {0,1,4,5}, else g + 8;
         * col t*2 + (i & 1) for i < 4, t*2 + (i & 1) + 8 otherwise */
        for (int i = 0; i < 8; i++) {
            int row, k;
            gpu_frag_a_h16(lane, i / 2, &row, &k);
            CHECK_EQ(row, (i == 0 || i == 1 || i == 4 || i == 5) ? g : g + 8);
            CHECK_EQ(k + (i & 1), t * 2 + (i & 1) + (i < 4 ? 0 : 8));
        }
        /* f16/bf16 m16n8k16 B: b0..b3; row t*2 + (i & 1) for i < 2, + 8 otherwise; col g */
        for (int i = 0; i < 4; i++) {
            int n, k;
            gpu_frag_b_h16(lane, i / 2, &n, &k);
            CHECK_EQ(n, g);
            CHECK_EQ(k + (i & 1), t * 2 + (i & 1) + (i < 2 ? 0 : 8));
        }
        /* C/D: c0..c3; row g for i < 2 else g + 8; col t*2 + (i & 1) */
        for (int i = 0; i < 4; i++) {
            int row, n;
            gpu_frag_c(lane, i, &row, &n);
            CHECK_EQ(row, i < 2 ? g : g + 8);
            CHECK_EQ(n, t * 2 + (i & 1));
        }
    }
}

/* Together the 32 lanes cover each fragment exactly once (no element loaded twice or missed). */
TEST(gpu_mma_fragments_cover_tiles_once) {
    int a32[16][32] = { { 0 } }, c[16][8] = { { 0 } }, ah[16][16] = { { 0 } };
    for (int lane = 0; lane < 32; lane++) {
        for (int r = 0; r < 4; r++) {
            int row, k;
            gpu_frag_a_s8k32(lane, r, &row, &k);
            for (int b = 0; b < 4; b++) a32[row][k + b]++;
            gpu_frag_a_h16(lane, r, &row, &k);
            for (int b = 0; b < 2; b++) ah[row][k + b]++;
            gpu_frag_c(lane, r, &row, &k);
            c[row][k]++;
        }
    }
    for (int i = 0; i < 16; i++) {
        for (int j = 0; j < 32; j++) CHECK_EQ(a32[i][j], 1);
        for (int j = 0; j < 16; j++) CHECK_EQ(ah[i][j], 1);
        for (int j = 0; j < 8; j++) CHECK_EQ(c[i][j], 1);
    }
}

/* ------------------------------------------------------------------ RoPE table */

/* Rotating with the uploaded table (as k_rope does: fma after rounding the x1 product) gives
 * ops_rope_ref's result bit for bit, in both modes and with partial rotary. */
TEST(gpu_rope_table_reproduces_ops_rope_ref) {
    enum { T = 37, H = 3, HD = 64 };
    static float x[T * H * HD], y[T * H * HD], ct[T * HD], st[T * HD];
    int32_t pos[T];
    for (int t = 0; t < T; t++) pos[t] = t;
    const int dims_list[2] = { 64, 32 };
    for (int mode = 0; mode < 2; mode++)
        for (int di = 0; di < 2; di++) {
            const int n_dims = dims_list[di], half = n_dims / 2;
            for (int i = 0; i < T * H * HD; i++) x[i] = y[i] = frand();
            um_rope r = { mode ? UM_ROPE_NEOX : UM_ROPE_NORM, HD, n_dims, 500000.0f, 1.0f, NULL };
            um_err e;
            CHECK(ops_rope_ref(&r, pos, T, x, H, NULL, 0, &e) == UM_OK);
            gpu_rope_table(r.freq_base, 1.0f, n_dims, T, ct, st);
            for (int t = 0; t < T; t++)
                for (int h = 0; h < H; h++) {
                    float *v = y + ((int64_t)t * H + h) * HD;
                    for (int i = 0; i < half; i++) {
                        const float c = ct[t * half + i], s = st[t * half + i];
                        const int i0 = mode ? i : 2 * i, i1 = mode ? i + half : 2 * i + 1;
                        const float x0 = v[i0], x1 = v[i1];
                        v[i0] = fmaf(x0, c, -(x1 * s));
                        v[i1] = fmaf(x0, s, x1 * c);
                    }
                }
            for (int i = 0; i < T * H * HD; i++)
                CHECK_MSG(memcmp(&x[i], &y[i], 4) == 0, "mode %d dims %d elem %d: %.9g vs %.9g", mode, n_dims, i, y[i], x[i]);
        }
}

/* ------------------------------------------------------------------ memory plan */

static um_model *synth_model(const char *shape, uint32_t type, char *path, size_t cap) {
    snprintf(path, cap, "/tmp/unmask-gpuhost-%d-%s-%s.gguf", (int)getpid(), shape, um_type_name(type));
    um_synth_opts o = { .shape = synth_find_shape(shape), .type = type, .seed = 3, .init_scale = 1.0f };
    um_err e;
    um_model *m = NULL;
    if (!o.shape || synth_write(&o, path, &e)) { printf("    synth: %s\n", e.msg); return NULL; }
    if (model_open(&m, path, &e)) { printf("    model_open: %s\n", e.msg); m = NULL; }
    unlink(path);
    return m;
}

static uint64_t expect_bytes(const um_weight *w, bool pack4) {
    const gpu_layout L = gpu_layout_for(w->type, w->n_in, w->n_out);
    if (L.kind == GPU_KIND_I8) {
        const uint64_t groups = (uint64_t)w->n_out * (uint64_t)(w->n_in / L.group);
        const bool nib = pack4 && (w->type == UM_TYPE_Q4_0 || w->type == UM_TYPE_Q4_1 || w->type == UM_TYPE_Q4_K);
        return (uint64_t)w->n_out * w->n_in / (nib ? 2 : 1) + groups * 4 * (L.has_off ? 2 : 1);
    }
    return (uint64_t)w->n_out * w->n_in * (w->type == UM_TYPE_F32 ? 4 : 2);
}

/* The plan counts each matrix once in its layout (1 byte + scales per weight for integer
 * formats) plus the float vectors; activations grow linearly with the canvas. */
TEST(gpu_memory_plan_counts_every_weight) {
    const char *shapes[] = { "tiny-llada", "tiny-llada-moe" };
    const uint32_t types[] = { UM_TYPE_Q8_0, UM_TYPE_Q4_K };
    for (int si = 0; si < 2; si++)
        for (int ti = 0; ti < 2; ti++) {
            char path[256];
            um_model *m = synth_model(shapes[si], types[ti], path, sizeof path);
            CHECK(m);
            um_err e = { "" };
            uint64_t got[2] = { 0, 0 }, want[2];
            bool ok = true;
            for (int p4 = 0; p4 < 2; p4++) {
                ok = ok && gpu_weight_plan(m, p4, &got[p4], &e);
                want[p4] = gpu_vec_floats(m) * 4;
                for (int il = 0; il < m->hp.n_layer; il++) {
                    const um_layer *l = &m->layers[il];
                    want[p4] += expect_bytes(&l->wq, p4) + expect_bytes(&l->wk, p4) + expect_bytes(&l->wv, p4) +
                                expect_bytes(&l->wo, p4);
                    if (m->arch->moe) {
                        want[p4] += expect_bytes(&l->ffn_gate_inp, p4);
                        for (int x = 0; x < m->hp.n_expert; x++)
                            want[p4] += expect_bytes(&l->gate_exps[x], p4) + expect_bytes(&l->up_exps[x], p4) +
                                        expect_bytes(&l->down_exps[x], p4);
                    } else {
                        want[p4] += expect_bytes(&l->ffn_gate, p4) + expect_bytes(&l->ffn_up, p4) +
                                    expect_bytes(&l->ffn_down, p4);
                    }
                }
                want[p4] += expect_bytes(&m->output, p4);
            }
            const gpu_dims d1 = gpu_dims_for(m, 64), d2 = gpu_dims_for(m, 128), d3 = gpu_dims_for(m, 192);
            const uint64_t a1 = gpu_activation_bytes(&d1), a2 = gpu_activation_bytes(&d2), a3 = gpu_activation_bytes(&d3);
            const int64_t V = m->hp.n_vocab;
            model_close(m);
            CHECK_MSG(ok, "%s", e.msg);
            CHECK_EQ(got[0], want[0]);
            CHECK_EQ(got[1], want[1]);
            CHECK(types[ti] == UM_TYPE_Q4_K ? got[1] < got[0] : got[1] == got[0]);
            CHECK(a2 > a1 && a3 - a2 == a2 - a1);
            CHECK(a1 > (uint64_t)64 * V * 4);        /* the logits buffer alone */
        }
}

/* ------------------------------------------------------------------ opening */

TEST(gpu_backend_open_fails_cleanly_without_device) {
    char path[256], desc[256];
    um_model *m = synth_model("tiny-llada", UM_TYPE_Q8_0, path, sizeof path);
    CHECK(m);
    const int n_dev = gpu_describe(desc, sizeof desc);
    um_backend b;
    um_err e = { "" };
    memset(&b, 0, sizeof b);
    if (gpu_built() && n_dev > 0) {
        model_close(m);
        th_skip("a CUDA device is present: the backend is exercised by make gpu-check");
        return;
    }
    const int rc = gpu_backend_open(&b, m, 64, &e);
    model_close(m);
    CHECK(rc == UM_FAIL);
    CHECK(b.impl == NULL && b.run == NULL);
    if (gpu_built()) CHECK_CONTAINS(e.msg, "no CUDA device: ");
    else CHECK_CONTAINS(e.msg, "built without CUDA");
}

/* On a machine with a GPU: the whole pass on tiny LLaDA (Q8_0), Dream (BF16) and LLaDA-MoE
 * (Q4_K) against the CPU scalar reference (float activations, double dots), full canvas and
 * a row subset. Cosine >= 0.999 (0.99 MoE), the limits test_forward sets for the CPU fast
 * path; the GPU quantizes activations to int8 (or bf16), so for MoE a token near a routing
 * tie may pick another expert (see below). Skipped without a device. */
static void gpu_vs_cpu(const char *shape, uint32_t type, double min_cos) {
    char path[256], desc[256];
    if (gpu_describe(desc, sizeof desc) == 0) { th_skip(desc); return; }
    um_model *m = synth_model(shape, type, path, sizeof path);
    CHECK(m);
    const bool moe = m->arch->moe;
    enum { T = 48 };
    const int V = m->hp.n_vocab;
    int32_t tok[T], rows[T], sub[T / 3];
    for (int i = 0; i < T; i++) { tok[i] = (i * 37 + 11) % V; rows[i] = i; }
    for (int i = 0; i < T / 3; i++) sub[i] = T - 1 - 3 * i;
    float *lg = malloc(sizeof(float) * T * V), *lc = malloc(sizeof(float) * T * V), *ls = malloc(sizeof(float) * T * V);
    um_backend b;
    um_err e = { "" };
    um_forward *fw = NULL;
    um_forward_opts fo = { .max_tokens = T, .reference = true };
    int rc = gpu_backend_open(&b, m, T, &e);
    if (!rc) rc = b.run(b.impl, tok, T, rows, T, lg, &e);
    if (!rc) rc = b.run(b.impl, tok, T, sub, T / 3, ls, &e);
    if (!rc) rc = forward_new(&fw, m, NULL, &fo, &e);
    if (!rc) rc = forward_run(fw, tok, T, rows, T, lc, &e);
    double worst = 1, worst_sub = 1;
    int below = 0;
    for (int r = 0; !rc && r < T; r++) {
        double ab = 0, aa = 0, bb = 0;
        for (int i = 0; i < V; i++) {
            const double x = lg[(size_t)r * V + i], y = lc[(size_t)r * V + i];
            ab += x * y; aa += x * x; bb += y * y;
        }
        worst = fmin(worst, ab / sqrt(aa * bb));
        below += ab / sqrt(aa * bb) < min_cos;
    }
    for (int j = 0; !rc && j < T / 3; j++) {
        double ab = 0, aa = 0, bb = 0;
        for (int i = 0; i < V; i++) {
            const double x = ls[(size_t)j * V + i], y = lg[(size_t)sub[j] * V + i];
            ab += x * y; aa += x * x; bb += y * y;
        }
        worst_sub = fmin(worst_sub, ab / sqrt(aa * bb));
    }
    if (b.free && b.impl) b.free(b.impl);
    forward_free(fw);
    model_close(m);
    free(lg); free(lc); free(ls);
    CHECK_MSG(rc == UM_OK, "%s", e.msg);
    /* MoE: a near-tied router may send a token to another expert under int8 activations
     * (seen in the host emulation: one row of 40 at 0.947); allow 2 such rows of 48, >= 0.9 */
    const bool moe_flip_ok = moe && below <= 2 && worst >= 0.9;
    CHECK_MSG(worst >= min_cos || moe_flip_ok, "gpu vs cpu reference: min row cosine %.6f (%d rows below %g)", worst,
              below, min_cos);
    CHECK_MSG(worst_sub >= 0.99999, "row subset vs full rows: min cosine %.6f", worst_sub);
}

TEST(gpu_forward_matches_cpu_llada_q8_0) { gpu_vs_cpu("tiny-llada", UM_TYPE_Q8_0, 0.999); }
TEST(gpu_forward_matches_cpu_dream_bf16) { gpu_vs_cpu("tiny-dream", UM_TYPE_BF16, 0.999); }
TEST(gpu_forward_matches_cpu_llada_moe_q4_K) { gpu_vs_cpu("tiny-llada-moe", UM_TYPE_Q4_K, 0.99); }
