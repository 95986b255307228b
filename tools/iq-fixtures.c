/*
 * iq-fixtures: the llama.cpp side of tests/data/iq/ (run by tools/make-iq-fixtures.sh; built
 * only there, against the peer's libggml-base, never part of unmask).
 *
 *   iq-fixtures imatrix SRC.gguf OUT.dat
 *       A legacy importance-matrix file (the format common/imatrix-loader.cpp reads: int32
 *       n_entries; per entry int32 name length, name, int32 ncall, int32 nval, nval floats)
 *       with one entry per 2-D tensor of SRC: positive, deterministic, not all equal.
 *   iq-fixtures blocks QUANT.gguf TENSOR TYPE_ID OUT.bin
 *       Takes 4 blocks spread over TENSOR of QUANT.gguf (what llama-quantize wrote) and 4
 *       random blocks, and writes them with the floats ggml's own to_float gives for them
 *       (ggml_get_type_traits(type)->to_float), in the UMQ1 layout of tests/data/quant:
 *       "UMQ1", u32 type, n_a, bytes_a, n_b, bytes_b; blocks A, floats A, blocks B, floats B.
 *   iq-fixtures types FILE.gguf
 *       Every tensor's name and ggml type, one per line (what llama-quantize chose).
 *   iq-fixtures source SRC.gguf TENSOR OUT.f32
 *       The source values (f16 widened by ggml, or f32) of the same 4 blocks of TENSOR, the
 *       input llama-quantize quantized into section A (for the quantizers' tests).
 *
 * Every expected value comes from llama.cpp's code, none from unmask's.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggml.h"
#include "gguf.h"

#define N_BLOCKS 4

static int die(const char *m) { fprintf(stderr, "iq-fixtures: %s\n", m); return 1; }

static int cmd_imatrix(const char *src, const char *out) {
    struct ggml_context *meta = NULL;
    struct gguf_init_params p = { .no_alloc = true, .ctx = &meta };
    struct gguf_context *g = gguf_init_from_file(src, p);
    if (!g) return die("cannot read the source model");
    FILE *f = fopen(out, "wb");
    if (!f) return die("cannot write the imatrix");
    int32_t n = 0;
    fwrite(&n, 4, 1, f);
    for (int64_t i = 0; i < gguf_get_n_tensors(g); i++) {
        const char *name = gguf_get_tensor_name(g, i);
        struct ggml_tensor *t = ggml_get_tensor(meta, name);
        if (ggml_n_dims(t) < 2) continue;
        int32_t len = (int32_t)strlen(name), ncall = 1, nval = (int32_t)t->ne[0];
        if (t->ne[2] > 1) nval *= (int32_t)t->ne[2];          /* experts: one row of sums each */
        fwrite(&len, 4, 1, f); fwrite(name, 1, (size_t)len, f);
        fwrite(&ncall, 4, 1, f); fwrite(&nval, 4, 1, f);
        for (int32_t k = 0; k < nval; k++) {
            float v = 1.0f + 0.75f * sinf(0.37f * (float)k + (float)i);   /* in [0.25, 1.75] */
            fwrite(&v, 4, 1, f);
        }
        n++;
    }
    fseek(f, 0, SEEK_SET);
    fwrite(&n, 4, 1, f);
    fclose(f);
    gguf_free(g);
    ggml_free(meta);
    return 0;
}

/* Byte offsets (of the high byte) of fp16 fields in random blocks, cleared of the top exponent
 * bit so every scale is finite (|h| < 2). */
static void sanitize(int type, uint8_t *b) {
    switch (type) {
    case GGML_TYPE_IQ1_M: b[55] &= 0xBF; break;             /* top nibble of scales u16 #3 */
    case GGML_TYPE_TQ1_0: b[53] &= 0xBF; break;             /* d at 52 */
    case GGML_TYPE_TQ2_0: b[65] &= 0xBF; break;             /* d at 64 */
    default:              b[1] &= 0xBF; break;              /* d at 0 */
    }
}

static int cmd_blocks(const char *path, const char *tensor, int type, const char *out) {
    struct ggml_context *meta = NULL;
    struct gguf_init_params p = { .no_alloc = true, .ctx = &meta };
    struct gguf_context *g = gguf_init_from_file(path, p);
    if (!g) return die("cannot read the quantized model");
    int64_t id = gguf_find_tensor(g, tensor);
    if (id < 0) return die("tensor not found");
    if ((int)gguf_get_tensor_type(g, id) != type) {
        fprintf(stderr, "iq-fixtures: %s is %s, not %s\n", tensor,
                ggml_type_name(gguf_get_tensor_type(g, id)), ggml_type_name((enum ggml_type)type));
        return 1;
    }
    const struct ggml_type_traits *tr = ggml_get_type_traits((enum ggml_type)type);
    size_t bs = tr->type_size, size = gguf_get_tensor_size(g, id), nb = size / bs;
    int64_t blck = tr->blck_size;
    if (nb < N_BLOCKS) return die("tensor too small");
    uint8_t *qa = malloc(N_BLOCKS * bs), *qb = malloc(N_BLOCKS * bs);
    float *ea = malloc(sizeof(float) * N_BLOCKS * blck), *eb = malloc(sizeof(float) * N_BLOCKS * blck);
    FILE *f = fopen(path, "rb");
    if (!qa || !qb || !ea || !eb || !f) return die("out of memory or cannot open");
    for (size_t k = 0; k < N_BLOCKS; k++) {
        size_t blk = k * (nb - 1) / (N_BLOCKS - 1);         /* first, last and two between */
        if (fseek(f, (long)(gguf_get_data_offset(g) + gguf_get_tensor_offset(g, id) + blk * bs), SEEK_SET) ||
            fread(qa + k * bs, 1, bs, f) != bs)
            return die("short read");
    }
    fclose(f);
    uint32_t rng = 0x9e3779b9u ^ (uint32_t)type;
    for (size_t i = 0; i < N_BLOCKS * bs; i++) {
        rng ^= rng << 13; rng ^= rng >> 17; rng ^= rng << 5;
        qb[i] = (uint8_t)rng;
    }
    for (size_t k = 0; k < N_BLOCKS; k++) sanitize(type, qb + k * bs);
    tr->to_float(qa, ea, N_BLOCKS * blck);
    tr->to_float(qb, eb, N_BLOCKS * blck);
    FILE *o = fopen(out, "wb");
    if (!o) return die("cannot write the fixture");
    uint32_t h[5] = { (uint32_t)type, (uint32_t)(N_BLOCKS * blck), (uint32_t)(N_BLOCKS * bs),
                      (uint32_t)(N_BLOCKS * blck), (uint32_t)(N_BLOCKS * bs) };
    fwrite("UMQ1", 1, 4, o); fwrite(h, 4, 5, o);
    fwrite(qa, 1, N_BLOCKS * bs, o); fwrite(ea, 4, (size_t)(N_BLOCKS * blck), o);
    fwrite(qb, 1, N_BLOCKS * bs, o); fwrite(eb, 4, (size_t)(N_BLOCKS * blck), o);
    fclose(o);
    printf("%-8s %zu blocks of %s (of %zu), %d random blocks\n", ggml_type_name((enum ggml_type)type),
           (size_t)N_BLOCKS, tensor, nb, N_BLOCKS);
    free(qa); free(qb); free(ea); free(eb);
    gguf_free(g);
    ggml_free(meta);
    return 0;
}

/* The source floats (F16 or F32 tensor) of the same 4 blocks cmd_blocks takes. */
static int cmd_source(const char *path, const char *tensor, const char *out) {
    struct ggml_context *meta = NULL;
    struct gguf_init_params p = { .no_alloc = true, .ctx = &meta };
    struct gguf_context *g = gguf_init_from_file(path, p);
    if (!g) return die("cannot read the source model");
    int64_t id = gguf_find_tensor(g, tensor);
    if (id < 0) return die("tensor not found");
    enum ggml_type t = gguf_get_tensor_type(g, id);
    if (t != GGML_TYPE_F16 && t != GGML_TYPE_F32) return die("source tensor is not f16/f32");
    size_t es = t == GGML_TYPE_F16 ? 2 : 4, nb = gguf_get_tensor_size(g, id) / es / 256;
    FILE *f = fopen(path, "rb"), *o = fopen(out, "wb");
    if (!f || !o) return die("cannot open");
    for (size_t k = 0; k < N_BLOCKS; k++) {
        size_t blk = k * (nb - 1) / (N_BLOCKS - 1);
        uint8_t raw[256 * 4];
        float v[256];
        if (fseek(f, (long)(gguf_get_data_offset(g) + gguf_get_tensor_offset(g, id) + blk * 256 * es), SEEK_SET) ||
            fread(raw, es, 256, f) != 256)
            return die("short read");
        if (t == GGML_TYPE_F16) ggml_fp16_to_fp32_row((const ggml_fp16_t *)raw, v, 256);
        else memcpy(v, raw, sizeof v);
        fwrite(v, 4, 256, o);
    }
    fclose(f); fclose(o);
    gguf_free(g);
    ggml_free(meta);
    return 0;
}

/* "NAME TYPE" of every tensor of a GGUF file, in file order. */
static int cmd_types(const char *path) {
    struct gguf_init_params p = { .no_alloc = true, .ctx = NULL };
    struct gguf_context *g = gguf_init_from_file(path, p);
    if (!g) return die("cannot read the model");
    for (int64_t i = 0; i < gguf_get_n_tensors(g); i++)
        printf("%s %s\n", gguf_get_tensor_name(g, i), ggml_type_name(gguf_get_tensor_type(g, i)));
    gguf_free(g);
    return 0;
}

int main(int argc, char **argv) {
    if (argc == 3 && !strcmp(argv[1], "types")) return cmd_types(argv[2]);
    if (argc == 5 && !strcmp(argv[1], "source")) return cmd_source(argv[2], argv[3], argv[4]);
    if (argc == 4 && !strcmp(argv[1], "imatrix")) return cmd_imatrix(argv[2], argv[3]);
    if (argc == 6 && !strcmp(argv[1], "blocks")) return cmd_blocks(argv[2], argv[3], atoi(argv[4]), argv[5]);
    fprintf(stderr, "usage: iq-fixtures imatrix SRC.gguf OUT.dat | blocks QUANT.gguf TENSOR TYPE_ID OUT.bin |"
                    " source SRC.gguf TENSOR OUT.f32 | types FILE.gguf\n");
    return 2;
}
