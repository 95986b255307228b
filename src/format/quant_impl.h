/*
 * quant_impl: what the reference dequantizers (quant.c) and the quantizer searches
 * (quant_search.c) share, private to src/format: float conversions as ggml does them,
 * llama.cpp's rounding trick, and the quantizers the traits table names.
 */
#ifndef UM_QUANT_IMPL_H
#define UM_QUANT_IMPL_H

#include <stdint.h>
#include <string.h>

#include "quant.h"
#include "util.h"

/* Bit-exactness needs every a*b+c rounded twice, as llama.cpp's build does: no FMA
 * contraction, whatever -std or -march this file is built with. */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

/* Scales smaller than this count as an all-zero group (llama.cpp's GROUP_MAX_EPS). */
#define GROUP_EPS 1e-15f

/* fp16 -> fp32 as ggml does it: also quiets signalling NaNs (sets the top mantissa bit),
 * which util's um_fp16_to_fp32 keeps as they are. */
static inline float h2f(um_half h) {
    float f = um_fp16_to_fp32(h);
    if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff)) {
        uint32_t u;
        memcpy(&u, &f, 4);
        u |= 0x00400000u;
        memcpy(&f, &u, 4);
    }
    return f;
}
static inline um_half f2h(float f) { return um_fp32_to_fp16(f); }

/* Round half to even for |v| < 2^22: adding 1.5*2^23 leaves the integer in the low
 * mantissa bits. Same trick (and so the same result on odd inputs) as llama.cpp. */
static inline int nearest_int(float v) {
    float t = v + 12582912.f;
    int32_t i;
    memcpy(&i, &t, 4);
    return (i & 0x007fffff) - 0x00400000;
}

static inline int clampi(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }

/* The K-quant and IQ4 quantizers (quant_search.c), bytes identical to llama-quantize's. */
void quant_q2_K_from_float(const float *x, void *dst, int64_t n);
void quant_q3_K_from_float(const float *x, void *dst, int64_t n);
void quant_q4_K_from_float(const float *x, void *dst, int64_t n);
void quant_q5_K_from_float(const float *x, void *dst, int64_t n);
void quant_q6_K_from_float(const float *x, void *dst, int64_t n);
void quant_q8_K_from_float(const float *x, void *dst, int64_t n);
void quant_iq4_nl_from_float(const float *x, void *dst, int64_t n);
void quant_iq4_xs_from_float(const float *x, void *dst, int64_t n);

/* The lattice and ternary formats (quant_iq.c): reference dequantizer and dot against Q8_K. */
#define QUANT_IQ_DECL(name)                                                   \
    void quant_##name##_to_float(const void *src, float *y, int64_t n);      \
    float quant_##name##_dot(const void *w, const void *act, int64_t n);
QUANT_IQ_DECL(iq2_xxs)
QUANT_IQ_DECL(iq2_xs)
QUANT_IQ_DECL(iq2_s)
QUANT_IQ_DECL(iq3_xxs)
QUANT_IQ_DECL(iq3_s)
QUANT_IQ_DECL(iq1_s)
QUANT_IQ_DECL(iq1_m)
QUANT_IQ_DECL(tq1_0)
QUANT_IQ_DECL(tq2_0)
#undef QUANT_IQ_DECL
void quant_tq1_0_from_float(const float *x, void *dst, int64_t n);
/* Simple nearest-grid-point quantizers (quant_iq_search.c; not llama.cpp's search). */
void quant_iq2_xxs_from_float(const float *x, void *dst, int64_t n);
void quant_iq2_xs_from_float(const float *x, void *dst, int64_t n);
void quant_iq2_s_from_float(const float *x, void *dst, int64_t n);
void quant_iq3_xxs_from_float(const float *x, void *dst, int64_t n);
void quant_iq3_s_from_float(const float *x, void *dst, int64_t n);
void quant_iq1_s_from_float(const float *x, void *dst, int64_t n);
void quant_iq1_m_from_float(const float *x, void *dst, int64_t n);
void quant_tq2_0_from_float(const float *x, void *dst, int64_t n);

#endif
