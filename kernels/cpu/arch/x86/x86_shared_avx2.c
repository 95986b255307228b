/*
 * x86_shared_avx2: what every x86 SIMD kernel shares (AVX2 + F16C, present on every CPU the
 * x86 kernels run on): the f32/f16/bf16 row decoders of the float-tile path, the 256-bit
 * panel unpacker, the activation quantizer and the per-panel scale tables. The shared layer
 * of kernels/cpu/arch/x86: the instruction-set files (matmul_avx2.c, matmul_avxvnni.c,
 * matmul_avx512.c, matmul_amx.c) call into it and into nothing else beside them.
 */
#include <immintrin.h>
#include <string.h>

#include "matmul_impl.h"

void mm_decode_rows_avx2(const um_matmul_weights *w, int64_t row0, int n_rows, int64_t k0,
                         int64_t kc, float *out) {
    for (int r = 0; r < UM_MATMUL_PANEL; r++) {
        float *o = out + (size_t)r * MM_KC;
        if (r >= n_rows) { memset(o, 0, (size_t)kc * sizeof(float)); continue; }
        const uint8_t *row = (const uint8_t *)w->data + (size_t)(row0 + r) * w->row_bytes;
        if (w->type == UM_TYPE_F32) { memcpy(o, (const float *)row + k0, (size_t)kc * sizeof(float)); continue; }
        const uint16_t *h = (const uint16_t *)row + k0;
        int64_t k = 0;
        if (w->type == UM_TYPE_F16) {
            for (; k + 8 <= kc; k += 8)
                _mm256_storeu_ps(o + k, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(h + k))));
            for (; k < kc; k++) o[k] = _cvtsh_ss(h[k]);
        } else {
            for (; k + 8 <= kc; k += 8) {
                __m256i v = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(h + k)));
                _mm256_storeu_ps(o + k, _mm256_castsi256_ps(_mm256_slli_epi32(v, 16)));
            }
            for (; k < kc; k++) { uint32_t v = (uint32_t)h[k] << 16; memcpy(o + k, &v, 4); }
        }
    }
}

void mm_unpack_panel_avx2(const um_matmul_weights *w, const uint8_t *pb, uint8_t *out) {
    const __m256i m4 = _mm256_set1_epi8(0x0F), m30 = _mm256_set1_epi8(0x30);
    int64_t nsb = w->n_in / 256;
    for (int64_t sb = 0; sb < nsb; sb++) {
        for (int h = 0; h < 2; h++) {
            if (w->type == UM_TYPE_Q4_K) {
                const uint8_t *qv = pb + sb * 16 * sizeof(um_block_q4_K) + h * 32;
                for (int jj = 0; jj < 8; jj++)
                    for (int s = 0; s < 4; s++) {
                        __m256i v = _mm256_loadu_si256((const __m256i *)(qv + (jj * 4 + s) * 64));
                        _mm256_storeu_si256((__m256i *)(out + mm_ub_off(w->n_in, sb, jj * 8 + s, h)), _mm256_and_si256(v, m4));
                        _mm256_storeu_si256((__m256i *)(out + mm_ub_off(w->n_in, sb, jj * 8 + 4 + s, h)),
                                            _mm256_and_si256(_mm256_srli_epi16(v, 4), m4));
                    }
            } else {
                const uint8_t *qv = pb + sb * 16 * sizeof(um_block_q6_K) + h * 32;
                for (int jj = 0; jj < 16; jj++) {
                    __m256i hb = _mm256_loadu_si256((const __m256i *)(qv + 2048 + jj * 64));
                    for (int s = 0; s < 2; s++) {
                        __m256i v = _mm256_loadu_si256((const __m256i *)(qv + (jj * 2 + s) * 64));
                        __m256i hlo = s == 0 ? _mm256_slli_epi16(hb, 4) : hb;
                        __m256i hhi = s == 0 ? _mm256_slli_epi16(hb, 2) : _mm256_srli_epi16(hb, 2);
                        _mm256_storeu_si256((__m256i *)(out + mm_ub_off(w->n_in, sb, jj * 4 + s, h)),
                                            _mm256_or_si256(_mm256_and_si256(v, m4), _mm256_and_si256(hlo, m30)));
                        _mm256_storeu_si256((__m256i *)(out + mm_ub_off(w->n_in, sb, jj * 4 + 2 + s, h)),
                                            _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(v, 4), m4),
                                                            _mm256_and_si256(hhi, m30)));
                    }
                }
            }
        }
    }
}

/* Q4_0 / Q4_1 / Q5_0 / Q5_1 panel -> Q8_0 codes (matmul_impl.h): code vector g of a block is
 * the low (g < 4) or high nibbles of packed vector g % 4, plus bit g of the fifth-bit vector
 * moved to bit 4 (16-bit shifts: the bit kept stays within its byte), plus the format's bias. */
void mm_unpack_q32_avx2(const um_matmul_weights *w, const uint8_t *pb, uint8_t *out) {
    const __m256i m4 = _mm256_set1_epi8(0x0F), m10 = _mm256_set1_epi8(0x10);
    const __m256i bias = _mm256_set1_epi8((char)mm_q32_code_bias(w->type));
    const bool q5 = mm_q32_fifth_bit(w->type);
    const size_t bb = 16 * um_type_bytes(w->type);
    for (int64_t b = 0; b < w->n_in / 32; b++) {
        const uint8_t *qv = pb + (size_t)b * bb;
        uint8_t *o = out + (size_t)b * 512;
        for (int h = 0; h < 2; h++) {
            const __m256i hb = q5 ? _mm256_loadu_si256((const __m256i *)(qv + 256 + h * 32)) : _mm256_setzero_si256();
            for (int s = 0; s < 4; s++) {
                const __m256i v = _mm256_loadu_si256((const __m256i *)(qv + s * 64 + h * 32));
                __m256i lo = _mm256_and_si256(v, m4), hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
                if (q5) {
                    /* bit s to bit 4 for the low nibbles (code vector s), bit s + 4 for the high */
                    lo = _mm256_or_si256(lo, _mm256_and_si256(_mm256_slli_epi16(hb, 4 - s), m10));
                    hi = _mm256_or_si256(hi, _mm256_and_si256(_mm256_srli_epi16(hb, s), m10));
                }
                _mm256_storeu_si256((__m256i *)(o + s * 64 + h * 32), _mm256_add_epi8(lo, bias));
                _mm256_storeu_si256((__m256i *)(o + (s + 4) * 64 + h * 32), _mm256_add_epi8(hi, bias));
            }
        }
    }
}

static inline float hmax8(__m256 v) {
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_shuffle_ps(m, m, 1));
    return _mm_cvtss_f32(m);
}

static inline int hsum8_epi32(__m256i v) {
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
    return _mm_cvtsi128_si32(s);
}

/* Same arithmetic as mm_quantize_act (matmul.c): amax, d = amax / 127, q = round-to-even of
 * x * (127 / amax), so both give identical bytes. Sums per 8 values, then per 16/32. */
void mm_quantize_act_avx2(uint32_t type, const float *x, int64_t n_in, uint8_t *row,
                          size_t off_scale, size_t off_corr) {
    int8_t *q = (int8_t *)row;
    float *scale = (float *)(row + off_scale);
    int blk = type == UM_TYPE_Q8_0 ? 32 : 256;
    const __m256 sign = _mm256_set1_ps(-0.0f);
    for (int64_t b = 0; b < n_in / blk; b++) {
        const float *xb = x + b * blk;
        __m256 mx = _mm256_setzero_ps();
        for (int i = 0; i < blk; i += 8) mx = _mm256_max_ps(mx, _mm256_andnot_ps(sign, _mm256_loadu_ps(xb + i)));
        float amax = hmax8(mx);
        float d = amax / 127.f, id = amax > 0 ? 127.f / amax : 0.f;
        __m256 idv = _mm256_set1_ps(id);
        int sums[32];                        /* per 8 values */
        for (int i = 0; i < blk; i += 8) {
            __m256 v = _mm256_round_ps(_mm256_mul_ps(_mm256_loadu_ps(xb + i), idv), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
            __m256i iv = _mm256_cvtps_epi32(v);
            iv = _mm256_max_epi32(_mm256_min_epi32(iv, _mm256_set1_epi32(127)), _mm256_set1_epi32(-127));
            sums[i / 8] = hsum8_epi32(iv);
            __m128i p16 = _mm_packs_epi32(_mm256_castsi256_si128(iv), _mm256_extracti128_si256(iv, 1));
            __m128i p8 = _mm_packs_epi16(p16, p16);
            _mm_storel_epi64((__m128i *)(q + b * blk + i), p8);
        }
        scale[b] = d;
        if (type == UM_TYPE_Q4_K) {
            float *corr = (float *)(row + off_corr) + b * 8;
            int16_t *bsum = (int16_t *)(row + off_corr + (size_t)(n_in / 32) * sizeof(float)) + b * 8;
            for (int j = 0; j < 8; j++) {
                int s = sums[4 * j] + sums[4 * j + 1] + sums[4 * j + 2] + sums[4 * j + 3];
                corr[j] = d * (float)s;
                bsum[j] = (int16_t)s;
            }
        } else if (type == UM_TYPE_Q6_K || um_is_iq_lattice(type)) {
            int32_t *corr = (int32_t *)(row + off_corr) + b * 16;
            int16_t *bsum = (int16_t *)(row + off_corr + (size_t)(n_in / 16) * sizeof(int32_t)) + b * 16;
            for (int j = 0; j < 16; j++) {
                int s = sums[2 * j] + sums[2 * j + 1];
                corr[j] = -mm_code_offset(type) * s;
                if (type == UM_TYPE_Q6_K) bsum[j] = (int16_t)s;
            }
        } else {
            const int sb = sums[0] + sums[1] + sums[2] + sums[3];
            ((int32_t *)(row + off_corr))[b] = -128 * sb;
            ((float *)(row + off_corr + (size_t)(n_in / 32) * sizeof(int32_t)))[b] = d * (float)sb;
        }
    }
}

/* mm_panel_tables (matmul.c) with F16C and 8 rows per vector; identical results (every
 * entry is one exact product d * scale, tested). */
void mm_panel_tables_avx2(const um_matmul_weights *w, int64_t panel, float *t) {
    const uint8_t *base = (const uint8_t *)w->data + panel * UM_MATMUL_PANEL * w->row_bytes;
    int64_t nb = w->n_in / um_type_blck(w->type);
    const __m256i m63 = _mm256_set1_epi32(63), m15 = _mm256_set1_epi32(15);
    for (int64_t b = 0; b < nb; b++) {
        for (int h = 0; h < 2; h++) {
            if (w->type == UM_TYPE_Q4_K) {
                const uint8_t *o = base + b * 16 * sizeof(um_block_q4_K), *q = o + 2112 + h * 8;
                float *dsc = t + b * 256 + h * 8, *dmm = dsc + 128;
                __m256 d = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(o + 2048 + h * 16)));
                __m256 dm = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(o + 2080 + h * 16)));
                __m256i Q[12];
                for (int i = 0; i < 12; i++) Q[i] = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(q + i * 16)));
                for (int j = 0; j < 8; j++) {
                    __m256i sc, m;
                    if (j < 4) {
                        sc = _mm256_and_si256(Q[j], m63);
                        m = _mm256_and_si256(Q[j + 4], m63);
                    } else {
                        sc = _mm256_or_si256(_mm256_and_si256(Q[j + 4], m15), _mm256_slli_epi32(_mm256_srli_epi32(Q[j - 4], 6), 4));
                        m = _mm256_or_si256(_mm256_srli_epi32(Q[j + 4], 4), _mm256_slli_epi32(_mm256_srli_epi32(Q[j], 6), 4));
                    }
                    _mm256_storeu_ps(dsc + j * 16, _mm256_mul_ps(d, _mm256_cvtepi32_ps(sc)));
                    _mm256_storeu_ps(dmm + j * 16, _mm256_mul_ps(dm, _mm256_cvtepi32_ps(m)));
                }
            } else if (w->type == UM_TYPE_Q6_K) {
                const uint8_t *o = base + b * 16 * sizeof(um_block_q6_K);
                __m256 d = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(o + 3328 + h * 16)));
                for (int j = 0; j < 16; j++) {
                    __m256i sc = _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(o + 3072 + j * 16 + h * 8)));
                    _mm256_storeu_ps(t + b * 256 + j * 16 + h * 8, _mm256_mul_ps(d, _mm256_cvtepi32_ps(sc)));
                }
            } else if (mm_q32_type(w->type)) {
                const uint8_t *o = base + b * 16 * um_type_bytes(w->type) + mm_q32_d_off(w->type);
                _mm256_storeu_ps(t + b * 16 + h * 8, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(o + h * 16))));
                if (mm_q32_affine(w->type))
                    _mm256_storeu_ps(t + (nb + b) * 16 + h * 8, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(o + 32 + h * 16))));
            } else {
                const uint8_t *o = base + b * 16 * sizeof(um_block_q8_0);
                _mm256_storeu_ps(t + b * 16 + h * 8, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(o + 512 + h * 16))));
            }
        }
    }
}
