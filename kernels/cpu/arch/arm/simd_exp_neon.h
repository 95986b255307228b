/*
 * simd_exp_neon: the e^x polynomial shared by the NEON kernels (ops_neon.c, sampler_neon.c),
 * the AArch64 twin of arch/x86/simd_exp_avx2.h with the same constants and the same order
 * of operations, 4 lanes. Advanced SIMD is baseline on AArch64: no extra flags needed.
 *
 * exp4_core takes x already clamped to [-87, 88]: x = n ln2 + r, e^r by a degree-7
 * polynomial (Cephes coefficients), 2^n built in the exponent field. Callers add their own
 * clamping and out-of-range handling around it.
 */
#ifndef UM_SIMD_EXP_NEON_H
#define UM_SIMD_EXP_NEON_H

#include <arm_neon.h>

/* vfmaq_f32(a, b, c) = a + b c in one rounding; vfmsq_f32(a, b, c) = a - b c */
static inline float32x4_t exp4_core(float32x4_t x) {
    float32x4_t n = vrndnq_f32(vmulq_f32(x, vdupq_n_f32(1.44269504088896341f)));
    float32x4_t r = vfmsq_f32(x, n, vdupq_n_f32(0.693359375f));
    r = vfmsq_f32(r, n, vdupq_n_f32(-2.12194440e-4f));
    float32x4_t p = vdupq_n_f32(1.9875691500e-4f);
    p = vfmaq_f32(vdupq_n_f32(1.3981999507e-3f), p, r);
    p = vfmaq_f32(vdupq_n_f32(8.3334519073e-3f), p, r);
    p = vfmaq_f32(vdupq_n_f32(4.1665795894e-2f), p, r);
    p = vfmaq_f32(vdupq_n_f32(1.6666665459e-1f), p, r);
    p = vfmaq_f32(vdupq_n_f32(5.0000001201e-1f), p, r);
    p = vfmaq_f32(vaddq_f32(r, vdupq_n_f32(1.0f)), p, vmulq_f32(r, r));
    int32x4_t e = vshlq_n_s32(vaddq_s32(vcvtnq_s32_f32(n), vdupq_n_s32(127)), 23);
    return vmulq_f32(p, vreinterpretq_f32_s32(e));
}

#endif
