/*
 * dequant_avx2: Q6_K's signed levels as byte vectors, shared by the dequantization kernels
 * of ops_avx2.c and ops_avx512.c. Include only from files compiled for AVX2 or above.
 *
 * A Q6_K block holds two halves of 128 weights; in half h, weight 32g + l (g 0..3, l 0..31)
 * takes its low four bits from ql[64h + 32(g & 1) + l] (the low nibble for g < 2, the high
 * one after) and its two high bits from bits 2g, 2g+1 of qh[32h + l]; the level is that
 * 6-bit code minus 32 (as quant.c's q6_K_levels).
 */
#ifndef UM_DEQUANT_AVX2_H
#define UM_DEQUANT_AVX2_H

#include <immintrin.h>

#include "quant.h"

/* q[g]: the 32 levels of weights 128h + 32g .. +31 of block b, as int8 */
static inline void q6k_levels_avx2(const um_block_q6_K *b, int h, __m256i q[4]) {
    const __m256i m4 = _mm256_set1_epi8(0x0F), m3 = _mm256_set1_epi8(3), o32 = _mm256_set1_epi8(32);
    const __m256i a = _mm256_loadu_si256((const __m256i *)(b->ql + 64 * h));
    const __m256i c = _mm256_loadu_si256((const __m256i *)(b->ql + 64 * h + 32));
    const __m256i hb = _mm256_loadu_si256((const __m256i *)(b->qh + 32 * h));
    /* 16-bit shifts move bits across the bytes of a pair; every mask below keeps only the
     * bits that came from the byte itself */
    q[0] = _mm256_and_si256(a, m4);
    q[1] = _mm256_and_si256(c, m4);
    q[2] = _mm256_and_si256(_mm256_srli_epi16(a, 4), m4);
    q[3] = _mm256_and_si256(_mm256_srli_epi16(c, 4), m4);
    for (int g = 0; g < 4; g++) {
        const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(hb, 2 * g), m3);
        q[g] = _mm256_sub_epi8(_mm256_or_si256(q[g], _mm256_slli_epi16(hi, 4)), o32);
    }
}

#endif
