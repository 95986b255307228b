/*
 * test_matmul_q32: Q4_0, Q4_1, Q5_0 and Q5_1 on the x86 integer path (matmul_impl.h,
 * mm_q32_type). matmul_prepare repacks them into panels of the file's size; each chunk unpacks
 * a panel to Q8_0 codes (level + 128) and a d (and m) table, and runs the Q8_0 loop. Checked
 * here, apart from the tolerance sweeps of test_matmul.c:
 *   - the unpacked panel dequantizes to exactly quant.c's reference values, bit for bit, on
 *     random block bytes (every nibble and fifth-bit pattern), with both unpackers;
 *   - a Q5_0 or Q4_0 matrix gives the same bits as the same levels and scales stored as Q8_0,
 *     on every x86 kernel this CPU has (the brief of the change: the integer sums are those of
 *     Q8_0, and so is every float operation after them).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "matmul.h"
#include "matmul_impl.h"
#include "quant.h"
#include "util.h"

static uint64_t q32_rng = 1;
static uint32_t q32_next(void) {
    q32_rng = q32_rng * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(q32_rng >> 33);
}

/* n_out rows of n_in columns of random block bytes, each block's d (and m) a finite f16 of
 * either sign between 2^-8 and 2^-6. */
static uint8_t *q32_random_matrix(uint32_t type, int64_t n_in, int64_t n_out, size_t *bytes) {
    const size_t bb = um_type_bytes(type), nb = (size_t)(n_in / 32) * (size_t)n_out;
    *bytes = nb * bb;
    uint8_t *m = um_malloc_aligned(*bytes);
    for (size_t i = 0; i < *bytes; i++) m[i] = (uint8_t)q32_next();
    for (size_t b = 0; b < nb; b++) {
        uint16_t d = (uint16_t)(0x1C00 | (q32_next() & 0x83FF)), mn = (uint16_t)(0x1C00 | (q32_next() & 0x83FF));
        memcpy(m + b * bb, &d, 2);
        if (mm_q32_affine(type)) memcpy(m + b * bb + 2, &mn, 2);
    }
    return m;
}

TEST(matmul_q32_unpacked_panel_is_exact) {
#if MM_X86
    if (!matmul_kernel_available(UM_KERNEL_AVX2)) { th_skip("no AVX2"); return; }
    static const uint32_t types[] = { UM_TYPE_Q5_0, UM_TYPE_Q5_1, UM_TYPE_Q4_0, UM_TYPE_Q4_1 };
    const int64_t n_in = 160, n_out = 32;           /* 5 blocks, 2 panels */
    for (size_t ti = 0; ti < UM_ARRAY_LEN(types); ti++) {
        const uint32_t type = types[ti];
        q32_rng = 77 + ti;
        size_t bytes;
        uint8_t *raw = q32_random_matrix(type, n_in, n_out, &bytes), *buf = um_malloc_aligned(bytes);
        um_matmul_weights w;
        um_err e;
        CHECK_MSG(matmul_prepare(&w, type, n_in, n_out, raw, buf, UM_KERNEL_AVX2, &e) == UM_OK, "%s", e.msg);
        CHECK(w.packed);
        float *want = malloc(sizeof(float) * (size_t)n_in), *tab = malloc(mm_tables_bytes(&w));
        uint8_t *codes[2] = { um_malloc_aligned(16 * (size_t)n_in), um_malloc_aligned(16 * (size_t)n_in) };
        const bool wide = matmul_kernel_available(UM_KERNEL_AVX512);
        for (int64_t p = 0; p < n_out / 16; p++) {
            const uint8_t *pb = (const uint8_t *)w.data + (size_t)p * 16 * w.row_bytes;
            mm_panel_tables(&w, p, tab);
            mm_unpack_q32_avx2(&w, pb, codes[0]);
            if (wide) mm_unpack_q32_avx512(&w, pb, codes[1]);
            else memcpy(codes[1], codes[0], 16 * (size_t)n_in);
            for (int r = 0; r < 16; r++) {
                const int64_t row = p * 16 + r;
                um_traits(type)->to_float_ref(raw + (size_t)row * w.row_bytes, want, n_in);
                for (int64_t k = 0; k < n_in; k++) {
                    const int64_t b = k / 32, c = k % 32;
                    const size_t at = (size_t)b * 512 + (size_t)(c / 4) * 64 + (size_t)r * 4 + (size_t)(c % 4);
                    const int level = (int)codes[0][at] - 128;
                    const float d = tab[b * 16 + r];
                    /* quant.c's arithmetic: level * d, or level * d + m */
                    float got = mm_q32_affine(type) ? (float)level * d + tab[(n_in / 32 + b) * 16 + r] : (float)level * d;
                    CHECK_MSG(codes[1][at] == codes[0][at], "%s: AVX-512 unpacker differs at row %lld column %lld",
                              um_type_name(type), (long long)row, (long long)k);
                    CHECK_MSG(memcmp(&got, &want[k], sizeof got) == 0, "%s row %lld column %lld: %.9g, reference %.9g",
                              um_type_name(type), (long long)row, (long long)k, got, want[k]);
                }
            }
        }
        free(want); free(tab);
        um_free_aligned(codes[0]); um_free_aligned(codes[1]);
        um_free_aligned(raw); um_free_aligned(buf);
    }
#else
    th_skip("x86 kernels only");
#endif
}

/* The same levels and d as Q8_0 blocks: qs = level (Q5_0: code - 16, Q4_0: code - 8). */
static void q32_as_q8_0(uint32_t type, const uint8_t *src, int64_t n_blocks, um_block_q8_0 *dst) {
    const size_t bb = um_type_bytes(type);
    float v[32];
    for (int64_t b = 0; b < n_blocks; b++) {
        const uint8_t *blk = src + (size_t)b * bb;
        memcpy(&dst[b].d, blk, 2);
        um_traits(type)->to_float_ref(blk, v, 32);
        const float d = um_fp16_to_fp32(dst[b].d);
        for (int i = 0; i < 32; i++) dst[b].qs[i] = (int8_t)lrintf(v[i] / d);   /* exact: v = level * d */
    }
}

TEST(matmul_q32_equals_its_q8_0_expression) {
    static const uint32_t types[] = { UM_TYPE_Q5_0, UM_TYPE_Q4_0 };
    static const int64_t toks[] = { 1, 7, 33, 160 };
    const int64_t n_in = 704, n_out = 37;           /* 2 panels and a partial one (float tile) */
    const int64_t n_max = 160;
    float *x = malloc(sizeof(float) * (size_t)(n_max * n_in));
    float *ya = malloc(sizeof(float) * (size_t)(n_max * n_out)), *yb = malloc(sizeof(float) * (size_t)(n_max * n_out));
    q32_rng = 5;
    for (int64_t i = 0; i < n_max * n_in; i++) x[i] = (float)((int)(q32_next() % 2001) - 1000) * 1e-3f * (float)(1 + i % 3);
    int n_run = 0;
    for (size_t ti = 0; ti < UM_ARRAY_LEN(types); ti++) {
        const uint32_t type = types[ti];
        q32_rng = 11 + ti;
        size_t bytes;
        uint8_t *raw = q32_random_matrix(type, n_in, n_out, &bytes);
        const int64_t nb = n_in / 32 * n_out;
        um_block_q8_0 *q8 = um_malloc_aligned(sizeof(um_block_q8_0) * (size_t)nb);
        q32_as_q8_0(type, raw, nb, q8);
        for (int k = UM_KERNEL_AVX2; k <= UM_KERNEL_AMX_EMU; k++) {
            if (!matmul_kernel_available((um_kernel)k)) continue;
            uint8_t *ba = um_malloc_aligned(bytes), *bq = um_malloc_aligned(sizeof(um_block_q8_0) * (size_t)nb);
            um_matmul_weights wa, wb;
            um_err e;
            CHECK_MSG(matmul_prepare(&wa, type, n_in, n_out, raw, ba, (um_kernel)k, &e) == UM_OK, "%s", e.msg);
            CHECK_MSG(matmul_prepare(&wb, UM_TYPE_Q8_0, n_in, n_out, q8, bq, (um_kernel)k, &e) == UM_OK, "%s", e.msg);
            void *sa = um_malloc_aligned(matmul_scratch_bytes(&wa, n_max, 1));
            void *sb = um_malloc_aligned(matmul_scratch_bytes(&wb, n_max, 1));
            for (size_t i = 0; i < UM_ARRAY_LEN(toks); i++) {
                matmul(NULL, &wa, x, toks[i], ya, sa);
                matmul(NULL, &wb, x, toks[i], yb, sb);
                CHECK_MSG(memcmp(ya, yb, sizeof(float) * (size_t)(toks[i] * n_out)) == 0,
                          "%s/%s, %lld tokens: not the bits of the same weights as Q8_0", um_type_name(type),
                          matmul_kernel_name((um_kernel)k), (long long)toks[i]);
                n_run++;
            }
            um_free_aligned(sa); um_free_aligned(sb);
            um_free_aligned(ba); um_free_aligned(bq);
        }
        um_free_aligned(q8);
        um_free_aligned(raw);
    }
    free(x); free(ya); free(yb);
    if (n_run == 0) th_skip("no x86 SIMD kernel");
}
