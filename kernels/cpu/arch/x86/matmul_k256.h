/*
 * matmul_k256: the 256-bit kernels, included by matmul_avx2.c (MM_VNNI 0: vpmaddubsw +
 * vpmaddwd) and matmul_avxvnni.c (MM_VNNI 1: vpdpbusd ymm). Private to the matmul module.
 *
 * Same panel layouts as the 512-bit kernels (matmul.c): a ymm holds 4 columns of 8 rows, so
 * a 16-row panel is done as two halves (rows 0..7 = bytes 0..31 of each 64-byte vector,
 * rows 8..15 = bytes 32..63). Q4_K/Q6_K panels are unpacked to one byte per weight first
 * (mm_unpack_panel_avx2, same order as the 512-bit path). 16 ymm registers allow register
 * blocks of 4 tokens; the activation scale is folded into the sub-block scale. Q4_0, Q4_1,
 * Q5_0 and Q5_1 panels run the Q8_0 loop on Q8_0 codes: decoded from the packed panel in the
 * loop for chunks of at most Q32_DIRECT_MAX tokens, else unpacked once per chunk.
 *
 * Without VNNI, vpmaddubsw saturates at 32767: fine for Q4_K (codes <= 15) and Q6_K
 * (<= 63), but Q8_0's offset codes reach 255, so Q8_0 uses |w| x sign(a, w) instead and
 * ignores the -128 * sum(q) correction.
 *
 * Q4_K without VNNI sums its products in int16: a vpmaddubsw lane holds 2 products of at
 * most 15 x 127, so the 8 groups of a 32-column sub-block add up to at most 16 x 15 x 127 =
 * 30480 < 32767 with vpaddw, and one vpmaddwd per sub-block multiplies them by the
 * sub-block's 6-bit integer scale into int32 (instead of a vpmaddwd and a vpaddd per
 * group: vpmaddwd takes a multiplier slot, so this nearly halves the multiplies). The
 * super-block's sum stays exact in int32 (8 x 63 x 30480 < 2^24, so even its conversion
 * to f32 is exact); the mins term is an integer sum too (vpmaddwd of the int16 mins with
 * the activations' int16 sums per 32), as in the 512-bit kernel. bench/peak.c's avx2-i16
 * is this loop's ceiling.
 */
#include <immintrin.h>
#include <string.h>

#include "matmul_impl.h"

#define AI static inline __attribute__((always_inline))
#define UNROLL _Pragma("GCC unroll 16")
#define TB 4                     /* tokens per integer register block */
#define TF 6                     /* tokens per float register block */

/* The VEX vpdpbusd of AVX-VNNI; tests/test_matmul_avxvnni_avx512.c builds this file with the
 * EVEX form (AVX512-VNNI + VL, the same operation) to run the kernel on CPUs without AVX-VNNI. */
#ifndef MM_DPBUSD256
#define MM_DPBUSD256 _mm256_dpbusd_avx_epi32
#endif

AI __m256i dpbusd(__m256i acc, __m256i u, __m256i s) {
#if MM_VNNI
    return MM_DPBUSD256(acc, u, s);
#else
    return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1)));
#endif
}

/* Keeps v in a register at this point of a chain of additions. Without VNNI the chains are
 * vpaddd / vpaddw, which GCC re-associates into a tree over all of a block's products: that
 * needs more than 16 registers and spills every few instructions. */
#if MM_VNNI
#define IN_REG(v) ((void)0)
#else
#define IN_REG(v) __asm__("" : "+x"(v))
#endif

AI __m256i bcast32(const int8_t *p) {
    int32_t v;
    memcpy(&v, p, 4);
    return _mm256_set1_epi32(v);
}

typedef struct tok_ptrs {
    const int8_t *q[TB];
    const float *scale[TB];
    const void *corr[TB];
} tok_ptrs;

AI void tok_init(const int T, const mm_job *j, int64_t t, tok_ptrs *p) {
    UNROLL for (int u = 0; u < T; u++) {
        const uint8_t *a = j->act + (size_t)(t + u) * j->act_stride;
        p->q[u] = (const int8_t *)a;
        p->scale[u] = (const float *)(a + j->off_scale);
        p->corr[u] = a + j->off_corr;
    }
}

#if MM_VNNI
/* ub: the unpacked panel (mm_unpack_panel_avx2); h: panel half (rows h*8 .. h*8+7) */
AI void q4k_block(const int T, const uint8_t *ub, const float *tab, int64_t nsb, const mm_job *j,
                  int64_t t, int h, float *y) {
    tok_ptrs p;
    tok_init(T, j, t, &p);
    __m256 acc[TB];
    UNROLL for (int u = 0; u < T; u++) acc[u] = _mm256_setzero_ps();
    for (int64_t sb = 0; sb < nsb; sb++) {
        const float *dsc = tab + sb * 256 + h * 8, *dmm = dsc + 128;
        for (int jj = 0; jj < 8; jj++) {
            const uint8_t *qv = ub + mm_ub_off(j->w->n_in, sb, jj * 8, h);
            size_t k = (size_t)sb * 256 + jj * 32;
            __m256i is[TB];
            UNROLL for (int u = 0; u < T; u++) is[u] = _mm256_setzero_si256();
            UNROLL for (int g = 0; g < 8; g++) {
                __m256i v = _mm256_load_si256((const __m256i *)(qv + g * 32));
                UNROLL for (int u = 0; u < T; u++) is[u] = dpbusd(is[u], v, bcast32(p.q[u] + k + g * 4));
            }
            __m256 sc = _mm256_loadu_ps(dsc + jj * 16), mn = _mm256_loadu_ps(dmm + jj * 16);
            UNROLL for (int u = 0; u < T; u++) {
                __m256 s = _mm256_mul_ps(sc, _mm256_set1_ps(p.scale[u][sb]));
                acc[u] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(is[u]), s, acc[u]);
                acc[u] = _mm256_fnmadd_ps(mn, _mm256_set1_ps(((const float *)p.corr[u])[sb * 8 + jj]), acc[u]);
            }
        }
    }
    UNROLL for (int u = 0; u < T; u++) _mm256_storeu_ps(y + (size_t)u * j->w->n_out + h * 8, acc[u]);
}
#else
/* Q4_K tables of the int16 loop, per super-block and panel half (8 rows), Q4K_TAB bytes:
 *   [0, 256)    8 vectors, sub-block j: int16 lanes 2r and 2r+1 = the 6-bit scale of row r
 *   [256, 384)  4 vectors, pair p: int16 lane 2r = the 6-bit min of sub-block 2p of row r,
 *               lane 2r+1 = that of sub-block 2p+1
 *   [384, 416)  d of rows 0..7 (f32)     [416, 448) dmin of rows 0..7 (f32)
 * 896 bytes per 256 columns, within mm_tables_bytes (4 per column). */
#define Q4K_TAB 448

static void q4k_tables(const um_matmul_weights *w, int64_t panel, uint8_t *tab) {
    const uint8_t *base = (const uint8_t *)w->data + panel * UM_MATMUL_PANEL * w->row_bytes;
    const __m256i m63 = _mm256_set1_epi32(63), m15 = _mm256_set1_epi32(15);
    for (int64_t sb = 0; sb < w->n_in / 256; sb++) {
        const uint8_t *o = base + sb * 16 * sizeof(um_block_q4_K);
        for (int h = 0; h < 2; h++) {
            uint8_t *t = tab + (sb * 2 + h) * Q4K_TAB;
            const uint8_t *q = o + 2112 + h * 8;
            __m256i Q[12], sc[8], mn[8];
            for (int i = 0; i < 12; i++) Q[i] = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(q + i * 16)));
            for (int jj = 0; jj < 8; jj++) {     /* the 6-bit unpacking of mm_panel_tables (matmul_shared.c) */
                if (jj < 4) {
                    sc[jj] = _mm256_and_si256(Q[jj], m63);
                    mn[jj] = _mm256_and_si256(Q[jj + 4], m63);
                } else {
                    sc[jj] = _mm256_or_si256(_mm256_and_si256(Q[jj + 4], m15), _mm256_slli_epi32(_mm256_srli_epi32(Q[jj - 4], 6), 4));
                    mn[jj] = _mm256_or_si256(_mm256_srli_epi32(Q[jj + 4], 4), _mm256_slli_epi32(_mm256_srli_epi32(Q[jj], 6), 4));
                }
                _mm256_storeu_si256((__m256i *)(t + jj * 32), _mm256_or_si256(sc[jj], _mm256_slli_epi32(sc[jj], 16)));
            }
            for (int pp = 0; pp < 4; pp++)
                _mm256_storeu_si256((__m256i *)(t + 256 + pp * 32), _mm256_or_si256(mn[2 * pp], _mm256_slli_epi32(mn[2 * pp + 1], 16)));
            _mm256_storeu_ps((float *)(t + 384), _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(o + 2048 + h * 16))));
            _mm256_storeu_ps((float *)(t + 416), _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(o + 2080 + h * 16))));
        }
    }
}

/* src: the unpacked panel (mm_unpack_panel_avx2), or with `packed` the packed panel itself;
 * tab: q4k_tables; h: panel half. The packed form is for a chunk of at most TB tokens (an
 * expert with few rows): a packed vector holds group s (low nibbles) and group s + 4 (high
 * nibbles) of a sub-block, so decoding it per token block costs less than unpacking the panel
 * once when there is only one block. The int16 sums are exact in any order: bit-identical. */
AI void q4k_block(const int T, const bool packed, const uint8_t *src, const uint8_t *tab, int64_t nsb,
                  const mm_job *j, int64_t t, int h, float *y) {
    tok_ptrs p;
    tok_init(T, j, t, &p);
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    const int8_t *bsum[TB];      /* int16 sums of the activations per 32 columns */
    UNROLL for (int u = 0; u < T; u++) bsum[u] = (const int8_t *)p.corr[u] + (size_t)(j->w->n_in / 32) * sizeof(float);
    __m256 acc[TB];
    UNROLL for (int u = 0; u < T; u++) acc[u] = _mm256_setzero_ps();
    for (int64_t sb = 0; sb < nsb; sb++) {
        const uint8_t *tb = tab + (sb * 2 + h) * Q4K_TAB;
        __m256i is[TB], ms[TB];
        UNROLL for (int u = 0; u < T; u++) is[u] = _mm256_setzero_si256();
        for (int jj = 0; jj < 8; jj++) {
            const size_t k = (size_t)sb * 256 + jj * 32;
            __m256i ps[TB];
            if (packed) {
                const uint8_t *qb = src + sb * 16 * sizeof(um_block_q4_K) + h * 32 + jj * 4 * 64;
                UNROLL for (int u = 0; u < T; u++) ps[u] = _mm256_setzero_si256();
                UNROLL for (int s4 = 0; s4 < 4; s4++) {
                    const __m256i v = _mm256_loadu_si256((const __m256i *)(qb + s4 * 64));
                    const __m256i lo = _mm256_and_si256(v, m4), hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
                    UNROLL for (int u = 0; u < T; u++) {
                        ps[u] = _mm256_add_epi16(ps[u], _mm256_maddubs_epi16(lo, bcast32(p.q[u] + k + s4 * 4)));
                        ps[u] = _mm256_add_epi16(ps[u], _mm256_maddubs_epi16(hi, bcast32(p.q[u] + k + 16 + s4 * 4)));
                        IN_REG(ps[u]);
                    }
                }
            } else {
                const uint8_t *qv = src + mm_ub_off(j->w->n_in, sb, jj * 8, h);
                __m256i v = _mm256_load_si256((const __m256i *)qv);
                UNROLL for (int u = 0; u < T; u++) ps[u] = _mm256_maddubs_epi16(v, bcast32(p.q[u] + k));
                UNROLL for (int g = 1; g < 8; g++) {
                    v = _mm256_load_si256((const __m256i *)(qv + g * 32));
                    UNROLL for (int u = 0; u < T; u++) {
                        ps[u] = _mm256_add_epi16(ps[u], _mm256_maddubs_epi16(v, bcast32(p.q[u] + k + g * 4)));
                        IN_REG(ps[u]);
                    }
                }
            }
            const __m256i sc = _mm256_loadu_si256((const __m256i *)(tb + jj * 32));
            UNROLL for (int u = 0; u < T; u++) is[u] = _mm256_add_epi32(is[u], _mm256_madd_epi16(ps[u], sc));
        }
        UNROLL for (int u = 0; u < T; u++) ms[u] = _mm256_setzero_si256();
        UNROLL for (int pp = 0; pp < 4; pp++) {
            const __m256i mn = _mm256_loadu_si256((const __m256i *)(tb + 256 + pp * 32));
            UNROLL for (int u = 0; u < T; u++)
                ms[u] = _mm256_add_epi32(ms[u], _mm256_madd_epi16(mn, bcast32(bsum[u] + (sb * 8 + pp * 2) * 2)));
        }
        const __m256 d = _mm256_loadu_ps((const float *)(tb + 384)), dm = _mm256_loadu_ps((const float *)(tb + 416));
        UNROLL for (int u = 0; u < T; u++) {
            __m256 s = _mm256_set1_ps(p.scale[u][sb]);
            acc[u] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(is[u]), _mm256_mul_ps(d, s), acc[u]);
            acc[u] = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(ms[u]), _mm256_mul_ps(dm, s), acc[u]);
        }
    }
    UNROLL for (int u = 0; u < T; u++) _mm256_storeu_ps(y + (size_t)u * j->w->n_out + h * 8, acc[u]);
}
#endif

#if !MM_VNNI
/* Q6_K without VNNI, the same int16 idea as Q4_K: codes <= 63, so a vpmaddubsw lane is at
 * most 2 x 63 x 127 = 16002 and two of them add up in int16 (32004 < 32767); one vpmaddwd
 * per pair multiplies them by the sub-block's int8 scale into int32, so the whole
 * super-block is one exact int32 sum (16 x 2 x 2 x 32004 x 128 < 2^31) converted to f32
 * once, instead of one conversion, multiply and add per 16 columns. The -32 offset of the
 * codes is an integer term too: per pair of sub-blocks, vpmaddwd of their two scales with
 * the activations' int16 sums per 16, times 32 (a shift).
 * Tables per super-block and panel half (8 rows), Q6K_TAB bytes:
 *   [0, 256)    8 vectors, pair p: int16 lane 2r = the scale of sub-block 2p of row r,
 *               lane 2r+1 = that of sub-block 2p+1
 *   [256, 288)  d of rows 0..7 (f32)
 * 576 bytes per 256 columns, within mm_tables_bytes (4 per column). IQ formats (codes up to
 * 127) keep the dot-product loop below. */
#define Q6K_TAB 288

static void q6k_tables(const um_matmul_weights *w, int64_t panel, uint8_t *tab) {
    const uint8_t *base = (const uint8_t *)w->data + panel * UM_MATMUL_PANEL * w->row_bytes;
    for (int64_t sb = 0; sb < w->n_in / 256; sb++) {
        const uint8_t *o = base + sb * 16 * sizeof(um_block_q6_K);
        for (int h = 0; h < 2; h++) {
            uint8_t *t = tab + (sb * 2 + h) * Q6K_TAB;
            for (int pp = 0; pp < 8; pp++) {
                __m128i a = _mm_cvtepi8_epi16(_mm_loadl_epi64((const __m128i *)(o + 3072 + (2 * pp) * 16 + h * 8)));
                __m128i b = _mm_cvtepi8_epi16(_mm_loadl_epi64((const __m128i *)(o + 3072 + (2 * pp + 1) * 16 + h * 8)));
                _mm256_storeu_si256((__m256i *)(t + pp * 32), _mm256_set_m128i(_mm_unpackhi_epi16(a, b), _mm_unpacklo_epi16(a, b)));
            }
            _mm256_storeu_ps((float *)(t + 256), _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(o + 3328 + h * 16))));
        }
    }
}

/* ub: the unpacked panel; tab: q6k_tables; h: panel half */
AI void q6k_block_i16(const int T, const uint8_t *ub, const uint8_t *tab, int64_t nsb, const mm_job *j,
                      int64_t t, int h, float *y) {
    tok_ptrs p;
    tok_init(T, j, t, &p);
    const int8_t *bsum[TB];      /* int16 sums of the activations per 16 columns */
    UNROLL for (int u = 0; u < T; u++) bsum[u] = (const int8_t *)p.corr[u] + (size_t)(j->w->n_in / 16) * sizeof(int32_t);
    /* the scale of sub-block 2p (even) or 2p+1 (odd) of row r in both int16 lanes of dword r */
    const __m256i even = _mm256_setr_epi8(0, 1, 0, 1, 4, 5, 4, 5, 8, 9, 8, 9, 12, 13, 12, 13,
                                          0, 1, 0, 1, 4, 5, 4, 5, 8, 9, 8, 9, 12, 13, 12, 13);
    const __m256i odd = _mm256_setr_epi8(2, 3, 2, 3, 6, 7, 6, 7, 10, 11, 10, 11, 14, 15, 14, 15,
                                         2, 3, 2, 3, 6, 7, 6, 7, 10, 11, 10, 11, 14, 15, 14, 15);
    __m256 acc[TB];
    UNROLL for (int u = 0; u < T; u++) acc[u] = _mm256_setzero_ps();
    for (int64_t sb = 0; sb < nsb; sb++) {
        const uint8_t *tb = tab + (sb * 2 + h) * Q6K_TAB;
        __m256i is[TB], ms[TB];
        UNROLL for (int u = 0; u < T; u++) is[u] = _mm256_setzero_si256();
        for (int jj = 0; jj < 16; jj++) {
            const uint8_t *qv = ub + mm_ub_off(j->w->n_in, sb, jj * 4, h);
            const size_t k = (size_t)sb * 256 + jj * 16;
            const __m256i sc = _mm256_shuffle_epi8(_mm256_loadu_si256((const __m256i *)(tb + (jj >> 1) * 32)),
                                                   jj & 1 ? odd : even);
            UNROLL for (int q = 0; q < 2; q++) {
                const __m256i v0 = _mm256_load_si256((const __m256i *)(qv + (2 * q) * 32));
                const __m256i v1 = _mm256_load_si256((const __m256i *)(qv + (2 * q + 1) * 32));
                UNROLL for (int u = 0; u < T; u++) {
                    __m256i ps = _mm256_add_epi16(_mm256_maddubs_epi16(v0, bcast32(p.q[u] + k + q * 8)),
                                                  _mm256_maddubs_epi16(v1, bcast32(p.q[u] + k + q * 8 + 4)));
                    is[u] = _mm256_add_epi32(is[u], _mm256_madd_epi16(ps, sc));
                    IN_REG(is[u]);
                }
            }
        }
        UNROLL for (int u = 0; u < T; u++) ms[u] = _mm256_setzero_si256();
        UNROLL for (int pp = 0; pp < 8; pp++) {
            const __m256i sp = _mm256_loadu_si256((const __m256i *)(tb + pp * 32));
            UNROLL for (int u = 0; u < T; u++)
                ms[u] = _mm256_add_epi32(ms[u], _mm256_madd_epi16(sp, bcast32(bsum[u] + (sb * 16 + pp * 2) * 2)));
        }
        const __m256 d = _mm256_loadu_ps((const float *)(tb + 256));
        UNROLL for (int u = 0; u < T; u++) {
            __m256i v = _mm256_sub_epi32(is[u], _mm256_slli_epi32(ms[u], 5));
            acc[u] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(v), _mm256_mul_ps(d, _mm256_set1_ps(p.scale[u][sb])), acc[u]);
        }
    }
    UNROLL for (int u = 0; u < T; u++) _mm256_storeu_ps(y + (size_t)u * j->w->n_out + h * 8, acc[u]);
}
#endif

AI void q6k_block(const int T, const uint8_t *ub, const float *tab, int64_t nsb, const mm_job *j,
                  int64_t t, int h, float *y) {
    tok_ptrs p;
    tok_init(T, j, t, &p);
    __m256 acc[TB];
    UNROLL for (int u = 0; u < T; u++) acc[u] = _mm256_setzero_ps();
    for (int64_t sb = 0; sb < nsb; sb++) {
        const float *dsc = tab + sb * 256 + h * 8;
        for (int jj = 0; jj < 16; jj++) {
            const uint8_t *qv = ub + mm_ub_off(j->w->n_in, sb, jj * 4, h);
            size_t k = (size_t)sb * 256 + jj * 16;
            __m256i is[TB];
            UNROLL for (int u = 0; u < T; u++) is[u] = _mm256_set1_epi32(((const int32_t *)p.corr[u])[sb * 16 + jj]);
            UNROLL for (int g = 0; g < 4; g++) {
                __m256i v = _mm256_load_si256((const __m256i *)(qv + g * 32));
                UNROLL for (int u = 0; u < T; u++) {
                    is[u] = dpbusd(is[u], v, bcast32(p.q[u] + k + g * 4));
                    IN_REG(is[u]);
                }
            }
            __m256 sc = _mm256_loadu_ps(dsc + jj * 16);
            UNROLL for (int u = 0; u < T; u++)
                acc[u] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(is[u]), _mm256_mul_ps(sc, _mm256_set1_ps(p.scale[u][sb])), acc[u]);
        }
    }
    UNROLL for (int u = 0; u < T; u++) _mm256_storeu_ps(y + (size_t)u * j->w->n_out + h * 8, acc[u]);
}

/* is[u] += the code vector v (Q8_0 codes, level + 128, 4 columns of 8 rows) . token u's 4
 * activations at column k, for T tokens */
AI void q8_0_dp(const int T, __m256i *is, __m256i v, const tok_ptrs *p, size_t k) {
#if MM_VNNI
    UNROLL for (int u = 0; u < T; u++) is[u] = dpbusd(is[u], v, bcast32(p->q[u] + k));
#else
    __m256i wq = _mm256_xor_si256(v, _mm256_set1_epi8((char)0x80));
    __m256i aw = _mm256_abs_epi8(wq);
    UNROLL for (int u = 0; u < T; u++) {
        is[u] = dpbusd(is[u], aw, _mm256_sign_epi8(bcast32(p->q[u] + k), wq));
        IN_REG(is[u]);
    }
#endif
}

/* pb: Q8_0 code vectors, bstride bytes per 32 columns (the packed Q8_0 panel, or the Q4_0..Q5_1
 * panel unpacked to Q8_0 codes), or with direct the packed Q4_0..Q5_1 panel itself, whose code
 * vectors s and s + 4 are made from its vector s as mm_unpack_q32_avx2 makes them (int32 sums
 * are exact in any order: the same bits); q5, bias: the format's fifth bits and code bias;
 * affine (Q4_1, Q5_1): plus m (tab + nb * 16) x scale*sum(q). */
AI void q8_0_block(const int T, const bool direct, const bool affine, const uint8_t *pb, size_t bstride, bool q5,
                   __m256i bias, const float *tab, int64_t nb, const mm_job *j, int64_t t, int h, float *y) {
    tok_ptrs p;
    tok_init(T, j, t, &p);
    const float *ssum[TB];       /* scale * sum(q) per 32 columns */
    UNROLL for (int u = 0; u < T; u++) ssum[u] = (const float *)((const uint8_t *)p.corr[u] + (size_t)(nb * 4));
    __m256 acc[TB];
    UNROLL for (int u = 0; u < T; u++) acc[u] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *qv = pb + (size_t)b * bstride + h * 32;
        __m256i is[TB];
        UNROLL for (int u = 0; u < T; u++)
            is[u] = MM_VNNI ? _mm256_set1_epi32(((const int32_t *)p.corr[u])[b]) : _mm256_setzero_si256();
        if (direct) {
            const __m256i m4 = _mm256_set1_epi8(0x0F), m10 = _mm256_set1_epi8(0x10);
            const __m256i hb = q5 ? _mm256_loadu_si256((const __m256i *)(qv + 256)) : _mm256_setzero_si256();
            UNROLL for (int s = 0; s < 4; s++) {
                const __m256i v = _mm256_loadu_si256((const __m256i *)(qv + s * 64));
                __m256i lo = _mm256_and_si256(v, m4), hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
                if (q5) {
                    lo = _mm256_or_si256(lo, _mm256_and_si256(_mm256_slli_epi16(hb, 4 - s), m10));
                    hi = _mm256_or_si256(hi, _mm256_and_si256(_mm256_srli_epi16(hb, s), m10));
                }
                q8_0_dp(T, is, _mm256_add_epi8(lo, bias), &p, (size_t)(b * 32 + s * 4));
                q8_0_dp(T, is, _mm256_add_epi8(hi, bias), &p, (size_t)(b * 32 + 16 + s * 4));
            }
        } else {
            UNROLL for (int s = 0; s < 8; s++)
                q8_0_dp(T, is, _mm256_loadu_si256((const __m256i *)(qv + s * 64)), &p, (size_t)(b * 32 + s * 4));
        }
        __m256 d = _mm256_loadu_ps(tab + b * 16 + h * 8);
        UNROLL for (int u = 0; u < T; u++)
            acc[u] = _mm256_fmadd_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(is[u]), _mm256_set1_ps(p.scale[u][b])), d, acc[u]);
        if (affine) {
            __m256 m = _mm256_loadu_ps(tab + (nb + b) * 16 + h * 8);
            UNROLL for (int u = 0; u < T; u++) acc[u] = _mm256_fmadd_ps(m, _mm256_set1_ps(ssum[u][b]), acc[u]);
        }
    }
    UNROLL for (int u = 0; u < T; u++) _mm256_storeu_ps(y + (size_t)u * j->w->n_out + h * 8, acc[u]);
}

/* Q4_0..Q5_1 from the packed panel (q8_0_block's direct) for chunks of at most this many tokens,
 * else unpacked to Q8_0 codes once per chunk (docs/matmul.md) */
#define Q32_DIRECT_MAX (2 * TB)

#define CASES(F, ...) \
    switch (nt) { \
    case 1: F(1, __VA_ARGS__); break; case 2: F(2, __VA_ARGS__); break; \
    case 3: F(3, __VA_ARGS__); break; default: F(4, __VA_ARGS__); break; }

static void int_chunk(const mm_job *j, int64_t panel, int64_t t0, int64_t t1, float *tab) {
    const um_matmul_weights *w = j->w;
    const bool iq = mm_iq_int(w);           /* decoded like a Q6_K panel, see matmul_impl.h */
    /* one token block of Q4_K: computed from the packed panel, not unpacked first */
    const bool direct = !MM_VNNI && w->type == UM_TYPE_Q4_K && t1 - t0 <= TB;
    const bool q32 = mm_q32_type(w->type);  /* Q8_0 codes, see matmul_impl.h */
    const bool q32_direct = q32 && t1 - t0 <= Q32_DIRECT_MAX, q5 = mm_q32_fifth_bit(w->type);
    const __m256i bias = _mm256_set1_epi8((char)mm_q32_code_bias(w->type));
    const size_t q32_stride = q32 ? 16 * (size_t)um_type_bytes(w->type) : 0;
    const uint8_t *pb = (const uint8_t *)w->data + (size_t)panel * UM_MATMUL_PANEL * w->row_bytes;
    uint8_t *ub = (uint8_t *)tab + mm_tables_bytes(w);
    if (iq) {
        mm_iq_panel(w, panel, tab, ub, false);
    } else if (q32) {
        mm_panel_tables_avx2(w, panel, tab);
        if (!q32_direct) mm_unpack_q32_avx2(w, pb, ub);
    } else {
#if MM_VNNI
        mm_panel_tables_avx2(w, panel, tab);
#else
        if (w->type == UM_TYPE_Q4_K) q4k_tables(w, panel, (uint8_t *)tab);
        else if (w->type == UM_TYPE_Q6_K) q6k_tables(w, panel, (uint8_t *)tab);
        else mm_panel_tables_avx2(w, panel, tab);
#endif
        if (w->type != UM_TYPE_Q8_0 && !direct) mm_unpack_panel_avx2(w, pb, ub);
    }
    int64_t nb = w->n_in / um_type_blck(w->type);
    int64_t n_blocks = (t1 - t0 + TB - 1) / TB;   /* even register blocks */
    int bs = (int)((t1 - t0 + n_blocks - 1) / n_blocks);
    /* the next panel of this thread into L2, a slice per token block (as matmul_avx512.c) */
    const int64_t n_full = w->n_out / UM_MATMUL_PANEL, next = panel + j->n_threads;
    const size_t pbytes = UM_MATMUL_PANEL * w->row_bytes;
    const uint8_t *pn = next < n_full && j->n_slabs == 1 ? (const uint8_t *)w->data + (size_t)next * pbytes : NULL;
    size_t pf = 0, pf_step = ((pbytes + (size_t)n_blocks - 1) / (size_t)n_blocks + 63) & ~(size_t)63;
    for (int64_t t = t0; t < t1; t += bs) {
        int nt = (int)UM_MIN(bs, t1 - t);
        float *y = j->y + t * w->n_out + panel * UM_MATMUL_PANEL;
        if (pn)
            for (size_t e = UM_MIN(pf + pf_step, pbytes); pf < e; pf += 64) _mm_prefetch((const char *)pn + pf, _MM_HINT_T1);
        for (int h = 0; h < 2; h++) {
#if MM_VNNI
            if (w->type == UM_TYPE_Q4_K) { CASES(q4k_block, ub, (const void *)tab, nb, j, t, h, y) }
#else
            if (direct) { CASES(q4k_block, true, pb, (const void *)tab, nb, j, t, h, y) }
            else if (w->type == UM_TYPE_Q4_K) { CASES(q4k_block, false, ub, (const void *)tab, nb, j, t, h, y) }
            else if (w->type == UM_TYPE_Q6_K) { CASES(q6k_block_i16, ub, (const void *)tab, nb, j, t, h, y) }
#endif
            else if (w->type == UM_TYPE_Q6_K || iq) { CASES(q6k_block, ub, tab, nb, j, t, h, y) }
            else if (q32_direct && mm_q32_affine(w->type)) { CASES(q8_0_block, true, true, pb, q32_stride, q5, bias, tab, nb, j, t, h, y) }
            else if (q32_direct) { CASES(q8_0_block, true, false, pb, q32_stride, q5, bias, tab, nb, j, t, h, y) }
            else if (q32 && mm_q32_affine(w->type)) { CASES(q8_0_block, false, true, ub, 512, q5, bias, tab, nb, j, t, h, y) }
            else if (q32) { CASES(q8_0_block, false, false, ub, 512, q5, bias, tab, nb, j, t, h, y) }
            else { CASES(q8_0_block, false, false, pb, 16 * sizeof(um_block_q8_0), q5, bias, tab, nb, j, t, h, y) }
        }
    }
}

/* ---------------------------------------------------------------- float tiles */

AI __m256 maskload(const float *p, __m256i m, bool full) {
    return full ? _mm256_loadu_ps(p) : _mm256_maskload_ps(p, m);
}

AI void maskstore(float *p, __m256i m, bool full, __m256 v) {
    if (full) _mm256_storeu_ps(p, v);
    else _mm256_maskstore_ps(p, m, v);
}

/* y[u][0..n_rows) (+)= sum_k x[u][k] * wt[k][r] for T tokens; wt (kc, 16). */
AI void float_block(const int T, const float *wt, int64_t kc, const float *x, int64_t xs,
                    float *y, int64_t ys, __m256i m0, __m256i m1, bool full, bool add) {
    __m256 a0[TF], a1[TF];
    UNROLL for (int u = 0; u < T; u++) {
        a0[u] = add ? maskload(y + u * ys, m0, full) : _mm256_setzero_ps();
        a1[u] = add ? maskload(y + u * ys + 8, m1, full) : _mm256_setzero_ps();
    }
    for (int64_t k = 0; k < kc; k++) {
        __m256 w0 = _mm256_load_ps(wt + k * 16), w1 = _mm256_load_ps(wt + k * 16 + 8);
        UNROLL for (int u = 0; u < T; u++) {
            __m256 xv = _mm256_broadcast_ss(x + u * xs + k);
            a0[u] = _mm256_fmadd_ps(xv, w0, a0[u]);
            a1[u] = _mm256_fmadd_ps(xv, w1, a1[u]);
        }
    }
    UNROLL for (int u = 0; u < T; u++) {
        maskstore(y + u * ys, m0, full, a0[u]);
        maskstore(y + u * ys + 8, m1, full, a1[u]);
    }
}

static void float_chunk(const mm_job *j, int64_t panel, int64_t t0, int64_t t1, float *ts) {
    const um_matmul_weights *w = j->w;
    int64_t row0 = panel * UM_MATMUL_PANEL;
    int n_rows = (int)UM_MIN(UM_MATMUL_PANEL, w->n_out - row0);
    bool full = n_rows == UM_MATMUL_PANEL;
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    __m256i m0 = _mm256_cmpgt_epi32(_mm256_set1_epi32(n_rows), lane);
    __m256i m1 = _mm256_cmpgt_epi32(_mm256_set1_epi32(n_rows - 8), lane);
    float *rows = ts, *wt = ts + UM_MATMUL_PANEL * MM_KC;
    bool fast = w->type == UM_TYPE_F32 || w->type == UM_TYPE_F16 || w->type == UM_TYPE_BF16;
    for (int64_t k0 = 0; k0 < w->n_in; k0 += MM_KC) {
        int64_t kc = UM_MIN(MM_KC, w->n_in - k0);
        if (fast) mm_decode_rows_avx2(w, row0, n_rows, k0, kc, rows);
        else mm_decode_rows_ref(w, row0, n_rows, k0, kc, rows);
        for (int64_t k = 0; k < kc; k++)
            for (int r = 0; r < UM_MATMUL_PANEL; r++) wt[k * 16 + r] = rows[r * MM_KC + k];
        int64_t n_blocks = (t1 - t0 + TF - 1) / TF;   /* even register blocks */
        int bs = (int)((t1 - t0 + n_blocks - 1) / n_blocks);
        for (int64_t t = t0; t < t1; t += bs) {
            int nt = (int)UM_MIN(bs, t1 - t);
            const float *x = j->x + t * w->n_in + k0;
            float *y = j->y + t * w->n_out + row0;
            int64_t xs = w->n_in, ys = w->n_out;
            bool add = k0 > 0;
            switch (nt) {
            case 1: float_block(1, wt, kc, x, xs, y, ys, m0, m1, full, add); break;
            case 2: float_block(2, wt, kc, x, xs, y, ys, m0, m1, full, add); break;
            case 3: float_block(3, wt, kc, x, xs, y, ys, m0, m1, full, add); break;
            case 4: float_block(4, wt, kc, x, xs, y, ys, m0, m1, full, add); break;
            case 5: float_block(5, wt, kc, x, xs, y, ys, m0, m1, full, add); break;
            default: float_block(6, wt, kc, x, xs, y, ys, m0, m1, full, add); break;
            }
        }
    }
}

void MM_CHUNK_FN(const mm_job *j, int64_t panel, int64_t t0, int64_t t1, void *ts) {
    const um_matmul_weights *w = j->w;
    if ((w->packed || mm_iq_int(w)) && (panel + 1) * UM_MATMUL_PANEL <= w->n_out) int_chunk(j, panel, t0, t1, ts);
    else float_chunk(j, panel, t0, t1, ts);
}
