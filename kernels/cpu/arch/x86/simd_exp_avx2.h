/*
 * simd_exp_avx2: the e^x polynomial shared by the AVX2 kernels (ops_avx2.c, sampler_avx2.c).
 * Include only from files compiled for AVX2+FMA (the *_avx2.c rule in the Makefile).
 *
 * exp8_core takes x already clamped to [-87, 88]: x = n ln2 + r, e^r by a degree-7
 * polynomial (Cephes coefficients), 2^n built in the exponent field. Callers add their own
 * clamping and out-of-range handling around it.
 */
#ifndef UM_SIMD_EXP_AVX2_H
#define UM_SIMD_EXP_AVX2_H

#include <immintrin.h>

static inline __m256 exp8_core(__m256 x) {
    __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                               _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
    __m256 p = _mm256_set1_ps(1.9875691500e-4f);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
    p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
    __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    return _mm256_mul_ps(p, _mm256_castsi256_ps(e));
}

#endif
