/*
 * test_util_avx2: the portable fp16/bf16 conversions in util.c against the hardware
 * instructions (F16C vcvtph2ps/vcvtps2ph, AVX512-BF16 vcvtneps2bf16) as the independent
 * reference. Compiled with AVX2/F16C flags; each test checks cpu_features() first.
 */
#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#include "cpu.h"
#include "harness.h"
#include "util.h"

TEST(fp16_to_fp32_matches_f16c_for_all_halves) {
    if (!cpu_features()->f16c) { th_skip("no F16C"); return; }
    for (uint32_t h = 0; h < 65536; h++) {
        float ref = _cvtsh_ss((unsigned short)h);
        float got = um_fp16_to_fp32((uint16_t)h);
        if (ref != ref) { CHECK_MSG(got != got, "half %04x: NaN expected", h); continue; }
        uint32_t a, b;
        memcpy(&a, &ref, 4);
        memcpy(&b, &got, 4);
        CHECK_MSG(a == b, "half %04x: %08x vs F16C %08x", h, b, a);
    }
}

TEST(fp32_to_fp16_matches_f16c_round_to_nearest) {
    if (!cpu_features()->f16c) { th_skip("no F16C"); return; }
    uint64_t s = 0x9e3779b97f4a7c15ull;
    for (int i = 0; i < 2000000; i++) {
        s ^= s << 13; s ^= s >> 7; s ^= s << 17;
        uint32_t bits = (uint32_t)s;
        if (i < 65536) bits = ((uint32_t)i << 16) | (uint32_t)(s & 0xffff);   /* cover every exponent */
        float f;
        memcpy(&f, &bits, 4);
        if (f != f) continue;            /* NaN payloads differ by design */
        uint16_t ref = _cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT);
        uint16_t got = um_fp32_to_fp16(f);
        CHECK_MSG(ref == got, "float %08x: %04x vs F16C %04x", bits, got, ref);
    }
}

__attribute__((target("avx512f,avx512bf16,avx512vl")))
static uint16_t hw_bf16(float f) {
    __m128bh r = _mm_cvtneps_pbh(_mm_set1_ps(f));
    uint16_t out[8];
    memcpy(out, &r, 16);
    return out[0];
}

TEST(fp32_to_bf16_matches_avx512bf16) {
    if (!cpu_features()->avx512bf16) { th_skip("no AVX512-BF16"); return; }
    uint64_t s = 0x1234567ull;
    for (int i = 0; i < 1000000; i++) {
        s ^= s << 13; s ^= s >> 7; s ^= s << 17;
        uint32_t bits = (uint32_t)s;
        float f;
        memcpy(&f, &bits, 4);
        if (f != f) continue;
        /* the instruction flushes denormal inputs to zero; ggml's scalar rule does not */
        if ((bits & 0x7f800000) == 0) continue;
        CHECK_MSG(hw_bf16(f) == um_fp32_to_bf16(f), "float %08x", bits);
        CHECK(um_bf16_to_fp32(um_fp32_to_bf16(f)) == um_bf16_to_fp32(hw_bf16(f)));
    }
}
