/*
 * sampler_neon: the sampler's pass-1 kernel with AArch64 Advanced SIMD, the twin of
 * arch/x86/sampler_avx2.c with 4 lanes (NEON is baseline on AArch64; sampler.c uses it
 * whenever cpu_features() reports neon).
 *
 * The same two vector passes: pass A finds the max finite logit, counts finite logits and
 * feeds the best list (a vector compare against the list's current cut, scalar insertion
 * only for the lanes that beat it, in ascending id order, so the list is exactly the
 * reference's); pass B sums e^(l-m) and e^(l-m)(l-m) with the polynomial exp of
 * simd_exp_neon.h, accumulated in float64 lanes. Tests hold it against sampler_scan_ref
 * with the AVX2 kernel's tolerances: m, count and best list equal, sums within 2e-6 relative.
 */
#include "sampler_scan.h"

#include <arm_neon.h>
#include <math.h>

#include "simd_exp_neon.h"

/* e^x for x <= 0; 0 below -87 (e^-87 ~ 1.6e-38, nothing against a sum >= 1) */
static inline float32x4_t exp_nonpos(float32x4_t x) {
    const float32x4_t lo = vdupq_n_f32(-87.0f);
    uint32x4_t under = vcltq_f32(x, lo);
    return vreinterpretq_f32_u32(vbicq_u32(vreinterpretq_u32_f32(exp4_core(vmaxq_f32(x, lo))), under));
}

/* all ones in lanes holding a finite value (NaN compares false both ways) */
static inline uint32x4_t finite_mask(float32x4_t v) {
    return vandq_u32(vcgtq_f32(v, vdupq_n_f32(-INFINITY)), vcltq_f32(v, vdupq_n_f32(INFINITY)));
}

static inline float32x4_t and_mask(float32x4_t v, uint32x4_t m) {
    return vreinterpretq_f32_u32(vandq_u32(vreinterpretq_u32_f32(v), m));
}

static inline bool is_finite(float l) {
    return l > -INFINITY && l < INFINITY;
}

typedef struct pass_a {
    float32x4_t  vmax;
    float        smax;
    int32_t      n_finite;
    um_logit_id *best;
    int32_t     *n_best;
    int32_t      cap;
} pass_a;

static void scan_max_best(const float *x, int32_t lo, int32_t hi, pass_a *a) {
    const float32x4_t ninf = vdupq_n_f32(-INFINITY);
    int32_t i = lo;
    for (; i + 4 <= hi; i += 4) {
        float32x4_t v = vld1q_f32(x + i);
        uint32x4_t fin = finite_mask(v);
        float32x4_t vf = vbslq_f32(fin, v, ninf);
        a->vmax = vmaxq_f32(a->vmax, vf);
        a->n_finite += (int32_t)vaddvq_u32(vshrq_n_u32(fin, 31));
        float cut = *a->n_best < a->cap ? -INFINITY : a->best[a->cap - 1].logit;
        uint32x4_t hit = vcgtq_f32(vf, vdupq_n_f32(cut));
        if (vmaxvq_u32(hit) == 0)
            continue;
        uint32_t h[4];
        vst1q_u32(h, hit);
        for (int j = 0; j < 4; j++)
            if (h[j]) sampler_best_insert(a->best, a->n_best, a->cap, x[i + j], i + j);
    }
    for (; i < hi; i++) {
        float l = x[i];
        if (!is_finite(l))
            continue;
        a->smax = l > a->smax ? l : a->smax;
        a->n_finite++;
        sampler_best_insert(a->best, a->n_best, a->cap, l, i);
    }
}

typedef struct pass_b {
    float64x2_t zr0, zr1, sr0, sr1, zt0, zt1, st0, st1;
    double      zr, sr, zt, st;  /* scalar tails */
} pass_b;

static inline void acc(float64x2_t *a0, float64x2_t *a1, float32x4_t v) {
    *a0 = vaddq_f64(*a0, vcvt_f64_f32(vget_low_f32(v)));
    *a1 = vaddq_f64(*a1, vcvt_high_f64_f32(v));
}

static void scan_sums(const float *x, int32_t lo, int32_t hi, float m, float inv_t, bool track_t, pass_b *b) {
    const float32x4_t vm = vdupq_n_f32(m), vit = vdupq_n_f32(inv_t);
    int32_t i = lo;
    for (; i + 4 <= hi; i += 4) {
        float32x4_t v = vld1q_f32(x + i);
        uint32x4_t fin = finite_mask(v);
        float32x4_t d = and_mask(vsubq_f32(v, vm), fin);      /* 0 in absent lanes */
        float32x4_t e = and_mask(exp_nonpos(d), fin);
        acc(&b->zr0, &b->zr1, e);
        acc(&b->sr0, &b->sr1, vmulq_f32(e, d));
        if (track_t) {
            float32x4_t dt = vmulq_f32(d, vit);
            float32x4_t et = and_mask(exp_nonpos(dt), fin);
            acc(&b->zt0, &b->zt1, et);
            acc(&b->st0, &b->st1, vmulq_f32(et, dt));
        }
    }
    for (; i < hi; i++) {
        float l = x[i];
        if (!is_finite(l))
            continue;
        float d = l - m;
        double e = expf(d);
        b->zr += e;
        b->sr += e * d;
        if (track_t) {
            float dt = d * inv_t;
            double et = expf(dt);
            b->zt += et;
            b->st += et * dt;
        }
    }
}

static double hsum(float64x2_t a, float64x2_t b) {
    return vaddvq_f64(vaddq_f64(a, b));
}

void sampler_scan_neon(const float *x, int32_t n, int32_t skip, double inv_t, bool track_t,
                       um_logit_id *best, int32_t cap, um_row_scan *out) {
    *out = (um_row_scan){ .m = -INFINITY };
    bool split = skip >= 0 && skip < n;
    int32_t lo2 = split ? skip + 1 : n, hi1 = split ? skip : n;

    pass_a a = { .vmax = vdupq_n_f32(-INFINITY), .smax = -INFINITY, .best = best,
                 .n_best = &out->n_best, .cap = cap };
    scan_max_best(x, 0, hi1, &a);
    scan_max_best(x, lo2, n, &a);
    out->n_finite = a.n_finite;
    if (a.n_finite == 0)
        return;
    float vm = vmaxvq_f32(a.vmax);
    float m = vm > a.smax ? vm : a.smax;
    out->m = m;

    pass_b b = { 0 };
    b.zr0 = b.zr1 = b.sr0 = b.sr1 = b.zt0 = b.zt1 = b.st0 = b.st1 = vdupq_n_f64(0);
    scan_sums(x, 0, hi1, m, (float)inv_t, track_t, &b);
    scan_sums(x, lo2, n, m, (float)inv_t, track_t, &b);
    out->zr = hsum(b.zr0, b.zr1) + b.zr;
    out->sr = hsum(b.sr0, b.sr1) + b.sr;
    if (track_t) {
        out->zt = hsum(b.zt0, b.zt1) + b.zt;
        out->st = hsum(b.st0, b.st1) + b.st;
    }
}
