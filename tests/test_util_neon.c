/*
 * test_util_neon: the portable fp16 conversions in util.c against AArch64's own half-precision
 * conversion instructions (FCVTL/FCVTN through vcvt_f32_f16/vcvt_f16_f32, part of the base
 * architecture) as the independent reference, the twin of test_util_avx2.c's F16C checks.
 * Built only for AArch64 (the Makefile's tests/test_*_neon.c rule); run under QEMU by
 * make test-arm64. FPCR's default rounding is to nearest even, as util.c's.
 */
#include <arm_neon.h>
#include <stdint.h>
#include <string.h>

#include "cpu.h"
#include "harness.h"
#include "util.h"

static float hw_f16_to_f32(uint16_t h) {
    uint16_t in[4] = { h, 0, 0, 0 };
    float32x4_t v = vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(in)));
    return vgetq_lane_f32(v, 0);
}

static uint16_t hw_f32_to_f16(float f) {
    float16x4_t h = vcvt_f16_f32(vdupq_n_f32(f));
    return vget_lane_u16(vreinterpret_u16_f16(h), 0);
}

TEST(fp16_to_fp32_matches_fcvt_for_all_halves) {
    for (uint32_t h = 0; h < 65536; h++) {
        float ref = hw_f16_to_f32((uint16_t)h);
        float got = um_fp16_to_fp32((uint16_t)h);
        if (ref != ref) { CHECK_MSG(got != got, "half %04x: NaN expected", h); continue; }
        uint32_t a, b;
        memcpy(&a, &ref, 4);
        memcpy(&b, &got, 4);
        CHECK_MSG(a == b, "half %04x: %08x vs FCVT %08x", h, b, a);
    }
}

TEST(fp32_to_fp16_matches_fcvt_round_to_nearest) {
    uint64_t s = 0x9e3779b97f4a7c15ull;
    for (int i = 0; i < 400000; i++) {
        s ^= s << 13; s ^= s >> 7; s ^= s << 17;
        uint32_t bits = (uint32_t)s;
        if (i < 65536) bits = ((uint32_t)i << 16) | (uint32_t)(s & 0xffff);   /* cover every exponent */
        float f;
        memcpy(&f, &bits, 4);
        if (f != f) continue;            /* NaN payloads differ by design */
        uint16_t ref = hw_f32_to_f16(f);
        uint16_t got = um_fp32_to_fp16(f);
        CHECK_MSG(ref == got, "float %08x: %04x vs FCVT %04x", bits, got, ref);
    }
}

TEST(cpu_reports_neon_on_aarch64) {
    CHECK(cpu_features()->neon);         /* Advanced SIMD is part of every AArch64 CPU */
}
