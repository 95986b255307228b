/*
 * x86_shared_avx512: what the 512-bit kernels share (AVX-512 F/BW/VL/DQ): the panel
 * unpacker to one byte per weight, the activation quantizer and the AVX-512 kernel's scale
 * tables. Used by matmul_avx512.c and matmul_amx.c, so neither calls the other.
 */
#include <immintrin.h>
#include <string.h>

#include "matmul_impl.h"

/* ---------------------------------------------------------------- unpacking */

/* A Q4_K or Q6_K panel -> one code byte per weight, 16 x n_in bytes: per 256 columns 64
 * vectors, vector g = columns g*4 .. g*4+3 of the 16 rows (the Q8_0 panel order). Done
 * once per chunk, so the token blocks only load and multiply. */
void mm_unpack_panel_avx512(const um_matmul_weights *w, const uint8_t *pb, uint8_t *out) {
    const __m512i m4 = _mm512_set1_epi8(0x0F), m30 = _mm512_set1_epi8(0x30);
    int64_t nsb = w->n_in / 256;
    for (int64_t sb = 0; sb < nsb; sb++) {
        uint8_t *o = out + sb * 4096;
        if (w->type == UM_TYPE_Q4_K) {
            const uint8_t *qv = pb + sb * 16 * sizeof(um_block_q4_K);
            for (int jj = 0; jj < 8; jj++)
                for (int s = 0; s < 4; s++) {
                    __m512i v = _mm512_loadu_si512(qv + (jj * 4 + s) * 64);
                    _mm512_storeu_si512(o + (jj * 8 + s) * 64, _mm512_and_si512(v, m4));
                    _mm512_storeu_si512(o + (jj * 8 + 4 + s) * 64, _mm512_and_si512(_mm512_srli_epi16(v, 4), m4));
                }
        } else {
            const uint8_t *qv = pb + sb * 16 * sizeof(um_block_q6_K);
            for (int jj = 0; jj < 16; jj++) {
                __m512i hb = _mm512_loadu_si512(qv + 2048 + jj * 64);
                for (int s = 0; s < 2; s++) {
                    __m512i v = _mm512_loadu_si512(qv + (jj * 2 + s) * 64);
                    /* high bits of field f = s*2 (+1 for the high nibble), moved to bits 4..5 */
                    __m512i hlo = s == 0 ? _mm512_slli_epi16(hb, 4) : hb;
                    __m512i hhi = s == 0 ? _mm512_slli_epi16(hb, 2) : _mm512_srli_epi16(hb, 2);
                    _mm512_storeu_si512(o + (jj * 4 + s) * 64,
                                        _mm512_or_si512(_mm512_and_si512(v, m4), _mm512_and_si512(hlo, m30)));
                    _mm512_storeu_si512(o + (jj * 4 + 2 + s) * 64,
                                        _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(v, 4), m4), _mm512_and_si512(hhi, m30)));
                }
            }
        }
    }
}

/* A Q4_0 / Q4_1 / Q5_0 / Q5_1 panel -> Q8_0 codes, mm_unpack_q32_avx2 on whole vectors. */
void mm_unpack_q32_avx512(const um_matmul_weights *w, const uint8_t *pb, uint8_t *out) {
    const __m512i m4 = _mm512_set1_epi8(0x0F), m10 = _mm512_set1_epi8(0x10);
    const __m512i bias = _mm512_set1_epi8((char)mm_q32_code_bias(w->type));
    const bool q5 = mm_q32_fifth_bit(w->type);
    const size_t bb = 16 * um_type_bytes(w->type);
    for (int64_t b = 0; b < w->n_in / 32; b++) {
        const uint8_t *qv = pb + (size_t)b * bb;
        uint8_t *o = out + (size_t)b * 512;
        const __m512i hb = q5 ? _mm512_loadu_si512(qv + 256) : _mm512_setzero_si512();
        for (int s = 0; s < 4; s++) {
            const __m512i v = _mm512_loadu_si512(qv + s * 64);
            __m512i lo = _mm512_and_si512(v, m4), hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), m4);
            if (q5) {
                lo = _mm512_or_si512(lo, _mm512_and_si512(_mm512_slli_epi16(hb, 4 - s), m10));
                hi = _mm512_or_si512(hi, _mm512_and_si512(_mm512_srli_epi16(hb, s), m10));
            }
            _mm512_storeu_si512(o + s * 64, _mm512_add_epi8(lo, bias));
            _mm512_storeu_si512(o + (s + 4) * 64, _mm512_add_epi8(hi, bias));
        }
    }
}

/* ---------------------------------------------------------------- activations */

/* mm_quantize_act (matmul.c) 16 values at a time; identical bytes (same amax, the same f32
 * product x * (127 / amax) rounded to nearest-even, the same clamp), tested. Sub-block sums
 * come from whole vectors (per 16 or 32 values), not from a horizontal sum per 8. */
void mm_quantize_act_avx512(uint32_t type, const float *x, int64_t n_in, uint8_t *row,
                            size_t off_scale, size_t off_corr) {
    int8_t *q = (int8_t *)row;
    float *scale = (float *)(row + off_scale);
    const int blk = type == UM_TYPE_Q8_0 ? 32 : 256;
    const __m512i lo = _mm512_set1_epi32(-127), hi = _mm512_set1_epi32(127);
    for (int64_t b = 0; b < n_in / blk; b++) {
        const float *xb = x + b * blk;
        __m512 mx = _mm512_setzero_ps();
        for (int i = 0; i < blk; i += 16) mx = _mm512_max_ps(mx, _mm512_abs_ps(_mm512_loadu_ps(xb + i)));
        float amax = _mm512_reduce_max_ps(mx);
        float d = amax / 127.f, id = amax > 0 ? 127.f / amax : 0.f;
        __m512 idv = _mm512_set1_ps(id);
        int sums[16];                        /* per 16 values */
        for (int i = 0; i < blk; i += 16) {
            __m512i iv = _mm512_cvt_roundps_epi32(_mm512_mul_ps(_mm512_loadu_ps(xb + i), idv),
                                                  _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
            iv = _mm512_max_epi32(_mm512_min_epi32(iv, hi), lo);
            sums[i / 16] = _mm512_reduce_add_epi32(iv);
            _mm_storeu_si128((__m128i *)(q + b * blk + i), _mm512_cvtepi32_epi8(iv));
        }
        scale[b] = d;
        if (type == UM_TYPE_Q4_K) {
            float *corr = (float *)(row + off_corr) + b * 8;
            int16_t *bsum = (int16_t *)(row + off_corr + (size_t)(n_in / 32) * sizeof(float)) + b * 8;
            for (int j = 0; j < 8; j++) {
                int sj = sums[2 * j] + sums[2 * j + 1];
                corr[j] = d * (float)sj;
                bsum[j] = (int16_t)sj;
            }
        } else if (type == UM_TYPE_Q6_K) {
            int32_t *corr = (int32_t *)(row + off_corr) + b * 16;
            int16_t *bsum = (int16_t *)(row + off_corr + (size_t)(n_in / 16) * sizeof(int32_t)) + b * 16;
            for (int j = 0; j < 16; j++) { corr[j] = -32 * sums[j]; bsum[j] = (int16_t)sums[j]; }
        } else if (um_is_iq_lattice(type)) {     /* the +64 of their codes (mm_iq_panel) */
            int32_t *corr = (int32_t *)(row + off_corr) + b * 16;
            for (int j = 0; j < 16; j++) corr[j] = -64 * sums[j];
        } else {
            ((int32_t *)(row + off_corr))[b] = -128 * (sums[0] + sums[1]);
            ((float *)(row + off_corr + (size_t)(n_in / 32) * sizeof(int32_t)))[b] = d * (float)(sums[0] + sums[1]);
        }
    }
}

/* ---------------------------------------------------------------- scale tables */

void mm_panel_tables_avx512(const um_matmul_weights *w, int64_t panel, float *t) {
    if (w->type != UM_TYPE_Q4_K) { mm_panel_tables_avx2(w, panel, t); return; }
    const uint8_t *base = (const uint8_t *)w->data + panel * UM_MATMUL_PANEL * w->row_bytes;
    const __m512i m63 = _mm512_set1_epi32(63), m15 = _mm512_set1_epi32(15);
    for (int64_t b = 0; b < w->n_in / 256; b++) {
        const uint8_t *o = base + b * 16 * sizeof(um_block_q4_K), *q = o + 2112;
        float *dsc = t + b * 256;
        __m512i *mins = (__m512i *)(dsc + 128);
        __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(o + 2048)));
        _mm512_storeu_ps(dsc + 192, _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(o + 2080))));
        __m512i Q[12], m[8];
        for (int i = 0; i < 12; i++) Q[i] = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(q + i * 16)));
        for (int j = 0; j < 8; j++) {
            __m512i sc;
            if (j < 4) {
                sc = _mm512_and_si512(Q[j], m63);
                m[j] = _mm512_and_si512(Q[j + 4], m63);
            } else {
                sc = _mm512_or_si512(_mm512_and_si512(Q[j + 4], m15), _mm512_slli_epi32(_mm512_srli_epi32(Q[j - 4], 6), 4));
                m[j] = _mm512_or_si512(_mm512_srli_epi32(Q[j + 4], 4), _mm512_slli_epi32(_mm512_srli_epi32(Q[j], 6), 4));
            }
            _mm512_storeu_ps(dsc + j * 16, _mm512_mul_ps(d, _mm512_cvtepi32_ps(sc)));
        }
        for (int p = 0; p < 4; p++) _mm512_storeu_si512(mins + p, _mm512_or_si512(m[2 * p], _mm512_slli_epi32(m[2 * p + 1], 16)));
    }
}
