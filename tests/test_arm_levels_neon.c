/*
 * test_arm_levels_neon: the Advanced SIMD decode of Q5_0/Q5_1 and Q2_K/Q3_K blocks into int8
 * levels and scale tables (kernels/cpu/arch/arm/arm_shared.c, mm_arm_levels32/256) gives the
 * same bytes as the byte-by-byte decode it replaced (mm_arm_levels32_ref/256_ref), and that
 * reference follows quant.c's dequantizers. Built only for AArch64 (the Makefile's
 * tests/test_*_neon.c rule); run under QEMU by make test-arm64.
 *
 * Blocks: fixed patterns (every bit clear, every bit set, 0x55/0xAA, each single bit of the
 * high-bit words qh/hmask set alone) and random bytes. Each block is placed against a
 * PROT_NONE page, so a vector load past the block's end (the last block of a mapped file)
 * faults here instead of reading the next row.
 */
#include <float.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../kernels/cpu/arch/arm/matmul_arm.h"
#include "harness.h"
#include "quant.h"
#include "util.h"

#define N_RANDOM 2000            /* random blocks per format */

static uint64_t rng_state;
static uint8_t rnd_byte(void) {
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (uint8_t)(rng_state >> 56);
}

/* A block buffer of `bytes` ending at a page that faults on access. */
typedef struct { uint8_t *map, *blk; size_t len; } guarded;

static int guarded_open(guarded *g, size_t bytes) {
    const size_t page = (size_t)sysconf(_SC_PAGESIZE);
    g->len = 2 * page;
    g->map = mmap(NULL, g->len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (g->map == MAP_FAILED) return -1;
    if (mprotect(g->map + page, page, PROT_NONE) != 0) { munmap(g->map, g->len); return -1; }
    g->blk = g->map + page - bytes;
    return 0;
}

static void guarded_close(guarded *g) { munmap(g->map, g->len); }

/* Block number k of a format (block size `bytes`, high-bit word at hi_off, hi_len bytes):
 * the fixed patterns first, then random bytes. False past the last one. */
static bool make_block(uint8_t *b, size_t bytes, size_t hi_off, size_t hi_len, int k) {
    const int n_fixed = 4 + 8 * (int)hi_len;
    if (k < 4) {
        static const uint8_t fill[4] = { 0x00, 0xFF, 0x55, 0xAA };
        memset(b, fill[k], bytes);
    } else if (k < n_fixed) {              /* one bit of qh / hmask set, the rest random */
        for (size_t i = 0; i < bytes; i++) b[i] = rnd_byte();
        memset(b + hi_off, 0, hi_len);
        b[hi_off + (size_t)(k - 4) / 8] = (uint8_t)(1u << ((k - 4) % 8));
    } else if (k < n_fixed + N_RANDOM) {
        for (size_t i = 0; i < bytes; i++) b[i] = rnd_byte();
    } else {
        return false;
    }
    return true;
}

static const char *type_name(uint32_t t) { return um_traits(t)->name; }

TEST(arm_levels32_vector_matches_bytewise_for_q5) {
    static const uint32_t types[] = { UM_TYPE_Q5_0, UM_TYPE_Q5_1 };
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
        const uint32_t t = types[ti];
        const size_t bytes = um_type_bytes(t), hi_off = t == UM_TYPE_Q5_1 ? 4 : 2;
        guarded g;
        CHECK(guarded_open(&g, bytes) == 0);
        rng_state = 0x5eed0000u + t;
        int n = 0;
        for (int k = 0; make_block(g.blk, bytes, hi_off, 4, k); k++, n++) {
            int8_t q[32], qr[32];
            float d, m, dr, mr;
            mm_arm_levels32(t, g.blk, q, &d, &m);
            if (!mm_arm_levels32_ref(t, g.blk, qr, &dr, &mr)) { guarded_close(&g); CHECK_MSG(0, "%s: no reference", type_name(t)); }
            for (int j = 0; j < 32; j++)
                if (q[j] != qr[j]) { guarded_close(&g); CHECK_MSG(0, "%s block %d column %d: level %d, reference %d", type_name(t), k, j, q[j], qr[j]); }
            if (memcmp(&d, &dr, 4) || memcmp(&m, &mr, 4)) { guarded_close(&g); CHECK_MSG(0, "%s block %d: d/m differ", type_name(t), k); }
        }
        guarded_close(&g);
        CHECK(n == 4 + 32 + N_RANDOM);
    }
}

TEST(arm_levels256_vector_matches_bytewise_for_q2_K_q3_K) {
    static const uint32_t types[] = { UM_TYPE_Q2_K, UM_TYPE_Q3_K };
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
        const uint32_t t = types[ti];
        const size_t bytes = um_type_bytes(t);
        /* Q3_K's high bits: hmask[32] at 0; Q2_K has none, so its qs[64] (at 16) get the one-hot blocks */
        const size_t hi_off = t == UM_TYPE_Q3_K ? 0 : 16, hi_len = t == UM_TYPE_Q3_K ? 32 : 64;
        guarded g;
        CHECK(guarded_open(&g, bytes) == 0);
        rng_state = 0x5eed0000u + t;
        int n = 0;
        for (int k = 0; make_block(g.blk, bytes, hi_off, hi_len, k); k++, n++) {
            int8_t q[256], qr[256];
            int32_t sc[16], mn[16], scr[16], mnr[16];
            float d, dmin, dr, dminr;
            memset(mn, 0x7f, sizeof mn);      /* both must write every entry */
            memset(mnr, 0x3e, sizeof mnr);
            mm_arm_levels256(t, g.blk, q, sc, mn, &d, &dmin);
            if (!mm_arm_levels256_ref(t, g.blk, qr, scr, mnr, &dr, &dminr)) { guarded_close(&g); CHECK_MSG(0, "%s: no reference", type_name(t)); }
            for (int j = 0; j < 256; j++)
                if (q[j] != qr[j]) { guarded_close(&g); CHECK_MSG(0, "%s block %d column %d: level %d, reference %d", type_name(t), k, j, q[j], qr[j]); }
            for (int s = 0; s < 16; s++)
                if (sc[s] != scr[s] || mn[s] != mnr[s]) {
                    guarded_close(&g);
                    CHECK_MSG(0, "%s block %d sub-block %d: scale %d min %d, reference %d %d", type_name(t), k, s, sc[s], mn[s], scr[s], mnr[s]);
                }
            if (memcmp(&d, &dr, 4) || memcmp(&dmin, &dminr, 4)) { guarded_close(&g); CHECK_MSG(0, "%s block %d: d/dmin differ", type_name(t), k); }
        }
        guarded_close(&g);
        CHECK(n == 4 + 8 * (int)hi_len + N_RANDOM);
    }
}

/* The reference against quant.c's dequantizer on random blocks with finite scales: d q (+ m),
 * d sc q - dmin mn in double within f32 rounding of quant.c's two products and one sum. */
TEST(arm_levels_reference_follows_quant_c) {
    static const uint32_t types[] = { UM_TYPE_Q5_0, UM_TYPE_Q5_1, UM_TYPE_Q2_K, UM_TYPE_Q3_K };
    rng_state = 0xfeedu;
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
        const uint32_t t = types[ti];
        const um_type_traits *tr = um_traits(t);
        const bool b32 = tr->blck == 32;
        /* the fp16 fields: d (and m / dmin) */
        const size_t h_off[2] = { t == UM_TYPE_Q2_K ? 80 : t == UM_TYPE_Q3_K ? 108 : 0,
                                  t == UM_TYPE_Q5_1 ? 2 : t == UM_TYPE_Q2_K ? 82 : SIZE_MAX };
        for (int k = 0; k < 200; k++) {
            uint8_t b[256];
            float y[256];
            for (size_t i = 0; i < tr->bytes; i++) b[i] = rnd_byte();
            for (int f = 0; f < 2; f++)
                if (h_off[f] != SIZE_MAX) {
                    uint16_t h = (uint16_t)(0x2000 | (rnd_byte() << 2) | (f && (k & 1) ? 0x8000 : 0));
                    memcpy(b + h_off[f], &h, 2);
                }
            tr->to_float_ref(b, y, tr->blck);
            int8_t q[256];
            int32_t sc[16], mn[16];
            float d, m = 0, dmin = 0;
            if (b32) {
                CHECK(mm_arm_levels32_ref(t, b, q, &d, &m));
                for (int s = 0; s < 16; s++) { sc[s] = 1; mn[s] = 0; }
            } else {
                CHECK(mm_arm_levels256_ref(t, b, q, sc, mn, &d, &dmin));
            }
            for (int j = 0; j < (int)tr->blck; j++) {
                const int s = j / 16 % 16;
                const double a = (double)d * sc[s] * q[j], c = b32 ? (double)m : -(double)dmin * mn[s];
                const double tol = 4 * FLT_EPSILON * (fabs(a) + fabs(c)) + 1e-30;
                CHECK_MSG(fabs(a + c - y[j]) <= tol, "%s block %d column %d: %.9g from the levels, quant.c %.9g",
                          tr->name, k, j, a + c, (double)y[j]);
            }
        }
    }
}
