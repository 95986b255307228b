/*
 * matmul_avx2: the 256-bit kernels without VNNI (vpmaddubsw + vpmaddwd), see
 * matmul_k256.h, and the fast f32/f16/bf16 row decoders every SIMD float-tile path uses
 * (AVX2 + F16C, present on every CPU the SIMD kernels run on).
 */
#define MM_VNNI 0
#define MM_CHUNK_FN mm_chunk_avx2
#include "matmul_k256.h"

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
