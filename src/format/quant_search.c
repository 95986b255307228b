/*
 * quant_search: the K-quant and IQ4 quantizers, searches for the scales and levels that
 * follow llama.cpp's reference quantizers step by step (same candidate scales, same error
 * measures, same float operation order), so the bytes match what llama-quantize writes
 * with no importance matrix (tests/test_quant.c, tests/test_quantize.c).
 */
#include "quant_impl.h"

#include <float.h>
#include <math.h>
#include <string.h>

/* ================================================================== K-quant quantizers
 * The searches below follow llama.cpp's reference quantizers step by step (same candidate
 * scales, same error measures, same float operation order) so the bytes match.
 */

/* Symmetric levels -nmax..nmax-1 for n values, least squares weighted by x^2 (llama.cpp's
 * make_qx_quants with rmse_type 1 and no importance weights). Returns the scale; L gets
 * level + nmax. */
static float sym_levels_weighted(int n, int nmax, const float *x, int8_t *L) {
    float max = 0, amax = 0;
    for (int i = 0; i < n; i++)
        if (fabsf(x[i]) > amax) { amax = fabsf(x[i]); max = x[i]; }
    if (amax < GROUP_EPS) {
        memset(L, 0, (size_t)n);
        return 0.f;
    }
    float iscale = -nmax / max;
    float sumlx = 0, suml2 = 0;
    for (int i = 0; i < n; i++) {
        int l = clampi(nearest_int(iscale * x[i]), -nmax, nmax - 1);
        L[i] = (int8_t)(l + nmax);
        float w = x[i] * x[i];
        sumlx += w * x[i] * l;
        suml2 += w * l * l;
    }
    float scale = suml2 ? sumlx / suml2 : 0.0f;
    float best = scale * sumlx;
    /* try 18 nearby inverse scales; keep the one with the smallest weighted error */
    for (int is = -9; is <= 9; is++) {
        if (is == 0) continue;
        iscale = -(nmax + 0.1f * is) / max;
        sumlx = suml2 = 0;
        for (int i = 0; i < n; i++) {
            int l = clampi(nearest_int(iscale * x[i]), -nmax, nmax - 1);
            float w = x[i] * x[i];
            sumlx += w * x[i] * l;
            suml2 += w * l * l;
        }
        if (suml2 > 0 && sumlx * sumlx > best * suml2) {
            for (int i = 0; i < n; i++)
                L[i] = (int8_t)(nmax + clampi(nearest_int(iscale * x[i]), -nmax, nmax - 1));
            scale = sumlx / suml2;
            best = scale * sumlx;
        }
    }
    return scale;
}

/* Q3_K's sub-block search (llama.cpp's make_q3_quants with rmse): start from the max-based
 * levels, then move single levels while that lowers the x^2-weighted error, up to 5 passes. */
static float q3_levels(int n, int nmax, const float *x, int8_t *L) {
    float max = 0, amax = 0;
    for (int i = 0; i < n; i++)
        if (fabsf(x[i]) > amax) { amax = fabsf(x[i]); max = x[i]; }
    if (amax < GROUP_EPS) {
        memset(L, 0, (size_t)n);
        return 0.f;
    }
    float iscale = -nmax / max;
    float sumlx = 0, suml2 = 0;
    for (int i = 0; i < n; i++) {
        int l = clampi(nearest_int(iscale * x[i]), -nmax, nmax - 1);
        L[i] = (int8_t)l;
        float w = x[i] * x[i];
        sumlx += w * x[i] * l;
        suml2 += w * l * l;
    }
    for (int pass = 0; pass < 5; pass++) {
        int changed = 0;
        for (int i = 0; i < n; i++) {
            float w = x[i] * x[i];
            float slx = sumlx - w * x[i] * L[i];
            if (slx <= 0) continue;
            float sl2 = suml2 - w * L[i] * L[i];
            int nl = clampi(nearest_int(x[i] * sl2 / slx), -nmax, nmax - 1);
            if (nl == L[i]) continue;
            slx += w * x[i] * nl;
            sl2 += w * nl * nl;
            if (sl2 > 0 && slx * slx * suml2 > sumlx * sumlx * sl2) {
                L[i] = (int8_t)nl;
                sumlx = slx;
                suml2 = sl2;
                changed++;
            }
        }
        if (!changed) break;
    }
    for (int i = 0; i < n; i++) L[i] = (int8_t)(L[i] + nmax);
    return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
}

/* Asymmetric levels 0..nmax with scale and min (llama.cpp's make_qkx2_quants): start from
 * the min/max fit, then try nstep+1 stretched scales, each refit by weighted least squares,
 * keeping the fit with the smallest weighted error (absolute if use_mad, else squared).
 * Returns the scale; *neg_min gets -min (>= 0). */
static float asym_levels(int n, int nmax, const float *x, const float *w, uint8_t *L,
                         float *neg_min, float rmin, float rdelta, int nstep, bool use_mad) {
    uint8_t Laux[32];
    float min = x[0], max = x[0];
    float sum_w = w[0], sum_x = sum_w * x[0];
    for (int i = 1; i < n; i++) {
        if (x[i] < min) min = x[i];
        if (x[i] > max) max = x[i];
        sum_w += w[i];
        sum_x += w[i] * x[i];
    }
    if (min > 0) min = 0;
    if (max == min) {
        memset(L, 0, (size_t)n);
        *neg_min = -min;
        return 0.f;
    }
    float iscale = nmax / (max - min);
    float scale = 1 / iscale;
    float best_error = 0;
    for (int i = 0; i < n; i++) {
        L[i] = (uint8_t)clampi(nearest_int(iscale * (x[i] - min)), 0, nmax);
        float diff = scale * L[i] + min - x[i];
        diff = use_mad ? fabsf(diff) : diff * diff;
        best_error += w[i] * diff;
    }
    for (int is = 0; is <= nstep; is++) {
        iscale = (rmin + rdelta * is + nmax) / (max - min);
        float sum_l = 0, sum_l2 = 0, sum_xl = 0;
        for (int i = 0; i < n; i++) {
            int l = clampi(nearest_int(iscale * (x[i] - min)), 0, nmax);
            Laux[i] = (uint8_t)l;
            sum_l += w[i] * l;
            sum_l2 += w[i] * l * l;
            sum_xl += w[i] * l * x[i];
        }
        float D = sum_w * sum_l2 - sum_l * sum_l;
        if (D <= 0) continue;
        float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
        float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
        if (this_min > 0) {
            this_min = 0;
            this_scale = sum_xl / sum_l2;
        }
        float err = 0;
        for (int i = 0; i < n; i++) {
            float diff = this_scale * Laux[i] + this_min - x[i];
            diff = use_mad ? fabsf(diff) : diff * diff;
            err += w[i] * diff;
        }
        if (err < best_error) {
            memcpy(L, Laux, (size_t)n);
            best_error = err;
            scale = this_scale;
            min = this_min;
        }
    }
    *neg_min = -min;
    return scale;
}

void quant_q2_K_from_float(const float *x, void *dst, int64_t n) {
    um_block_q2_K *b = dst;
    uint8_t L[UM_QK_K];
    float w[16], mins[16], scales[16];
    for (int64_t i = 0; i < n / UM_QK_K; i++, b++, x += UM_QK_K) {
        float max_scale = 0, max_min = 0;
        for (int j = 0; j < 16; j++) {
            for (int l = 0; l < 16; l++) w[l] = fabsf(x[16 * j + l]);
            scales[j] = asym_levels(16, 3, x + 16 * j, w, L + 16 * j, &mins[j], -0.5f, 0.1f, 15, true);
            if (scales[j] > max_scale) max_scale = scales[j];
            if (mins[j] > max_min) max_min = mins[j];
        }
        /* 4-bit sub-block scales and mins against fp16 super-block factors */
        if (max_scale > 0) {
            float iscale = 15.f / max_scale;
            for (int j = 0; j < 16; j++) b->scales[j] = (uint8_t)nearest_int(iscale * scales[j]);
            b->d = f2h(max_scale / 15.f);
        } else {
            memset(b->scales, 0, 16);
            b->d = f2h(0.f);
        }
        if (max_min > 0) {
            float iscale = 15.f / max_min;
            for (int j = 0; j < 16; j++) b->scales[j] |= (uint8_t)(nearest_int(iscale * mins[j]) << 4);
            b->dmin = f2h(max_min / 15.f);
        } else {
            b->dmin = f2h(0.f);
        }
        /* re-pick levels against the scales actually stored */
        for (int j = 0; j < 16; j++) {
            const float d = h2f(b->d) * (b->scales[j] & 0xF);
            if (!d) continue;
            const float dm = h2f(b->dmin) * (b->scales[j] >> 4);
            for (int l = 0; l < 16; l++)
                L[16 * j + l] = (uint8_t)clampi(nearest_int((x[16 * j + l] + dm) / d), 0, 3);
        }
        for (int half = 0; half < 2; half++)
            for (int l = 0; l < 32; l++) {
                const uint8_t *s = L + 128 * half + l;
                b->qs[32 * half + l] = (uint8_t)(s[0] | (s[32] << 2) | (s[64] << 4) | (s[96] << 6));
            }
    }
}

void quant_q3_K_from_float(const float *x, void *dst, int64_t n) {
    um_block_q3_K *b = dst;
    int8_t L[UM_QK_K];
    float scales[16];
    for (int64_t i = 0; i < n / UM_QK_K; i++, b++, x += UM_QK_K) {
        float max_scale = 0, amax = 0;
        for (int j = 0; j < 16; j++) {
            scales[j] = q3_levels(16, 4, x + 16 * j, L + 16 * j);
            if (fabsf(scales[j]) > amax) { amax = fabsf(scales[j]); max_scale = scales[j]; }
        }
        /* 6-bit signed sub-block scales: low nibbles in bytes 0..7, two high bits in 8..11 */
        memset(b->scales, 0, 12);
        if (max_scale) {
            float iscale = -32.f / max_scale;
            for (int j = 0; j < 16; j++) {
                int l = (int8_t)nearest_int(iscale * scales[j]);
                l = clampi(l, -32, 31) + 32;
                if (j < 8) b->scales[j] = (uint8_t)(l & 0xF);
                else       b->scales[j - 8] |= (uint8_t)((l & 0xF) << 4);
                b->scales[j % 4 + 8] |= (uint8_t)((l >> 4) << (2 * (j / 4)));
            }
            b->d = f2h(1 / iscale);
        } else {
            b->d = f2h(0.f);
        }
        for (int j = 0; j < 16; j++) {
            const float d = h2f(b->d) * um_q3_K_scale(j, b->scales);
            if (!d) continue;
            for (int l = 0; l < 16; l++)
                L[16 * j + l] = (int8_t)(clampi(nearest_int(x[16 * j + l] / d), -4, 3) + 4);
        }
        /* third bit of element e goes to hmask[e % 32], bit e / 32 */
        memset(b->hmask, 0, 32);
        for (int e = 0; e < UM_QK_K; e++)
            if (L[e] > 3) {
                b->hmask[e % 32] |= (uint8_t)(1 << (e / 32));
                L[e] -= 4;
            }
        for (int half = 0; half < 2; half++)
            for (int l = 0; l < 32; l++) {
                const int8_t *s = L + 128 * half + l;
                b->qs[32 * half + l] = (uint8_t)(s[0] | (s[32] << 2) | (s[64] << 4) | (s[96] << 6));
            }
    }
}

/* Store 8 six-bit scales and mins in the 12-byte K4 layout (inverse of um_k4_scale_min). */
static void k4_pack_scales(uint8_t out[12], const uint8_t ls[8], const uint8_t lm[8]) {
    for (int j = 0; j < 8; j++) {
        if (j < 4) {
            out[j] = ls[j];
            out[j + 4] = lm[j];
        } else {
            out[j + 4] = (uint8_t)((ls[j] & 0xF) | ((lm[j] & 0xF) << 4));
            out[j - 4] |= (uint8_t)((ls[j] >> 4) << 6);
            out[j] |= (uint8_t)((lm[j] >> 4) << 6);
        }
    }
}

/* Shared body of Q4_K and Q5_K: 8 sub-blocks of 32 with 6-bit scales and mins.
 * Fills L (levels 0..nmax) and the block's d, dmin and scales. */
static void k4_quantize_block(const float *x, int nmax, float rmin, float rdelta, int nstep,
                              uint8_t L[UM_QK_K], um_half *d_out, um_half *dmin_out, uint8_t sc_out[12]) {
    float w[32], mins[8], scales[8];
    float max_scale = 0, max_min = 0;
    for (int j = 0; j < 8; j++) {
        const float *xs = x + 32 * j;
        float sum_x2 = 0;
        for (int l = 0; l < 32; l++) sum_x2 += xs[l] * xs[l];
        const float av_x = sqrtf(sum_x2 / 32);
        for (int l = 0; l < 32; l++) w[l] = av_x + fabsf(xs[l]);
        scales[j] = asym_levels(32, nmax, xs, w, L + 32 * j, &mins[j], rmin, rdelta, nstep, false);
        if (scales[j] > max_scale) max_scale = scales[j];
        if (mins[j] > max_min) max_min = mins[j];
    }
    const float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
    const float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
    uint8_t ls[8], lm[8];
    for (int j = 0; j < 8; j++) {
        ls[j] = (uint8_t)nearest_int(inv_scale * scales[j]);
        lm[j] = (uint8_t)nearest_int(inv_min * mins[j]);
        ls[j] = UM_MIN(63, ls[j]);
        lm[j] = UM_MIN(63, lm[j]);
    }
    memset(sc_out, 0, 12);
    k4_pack_scales(sc_out, ls, lm);
    *d_out = f2h(max_scale / 63.f);
    *dmin_out = f2h(max_min / 63.f);
    for (int j = 0; j < 8; j++) {
        uint8_t sc, m;
        um_k4_scale_min(j, sc_out, &sc, &m);
        const float d = h2f(*d_out) * sc;
        if (!d) continue;
        const float dm = h2f(*dmin_out) * m;
        for (int l = 0; l < 32; l++)
            L[32 * j + l] = (uint8_t)clampi(nearest_int((x[32 * j + l] + dm) / d), 0, nmax);
    }
}

void quant_q4_K_from_float(const float *x, void *dst, int64_t n) {
    um_block_q4_K *b = dst;
    uint8_t L[UM_QK_K];
    for (int64_t i = 0; i < n / UM_QK_K; i++, b++, x += UM_QK_K) {
        k4_quantize_block(x, 15, -1.f, 0.1f, 20, L, &b->d, &b->dmin, b->scales);
        for (int c = 0; c < 4; c++)
            for (int l = 0; l < 32; l++)
                b->qs[32 * c + l] = (uint8_t)(L[64 * c + l] | (L[64 * c + l + 32] << 4));
    }
}

void quant_q5_K_from_float(const float *x, void *dst, int64_t n) {
    um_block_q5_K *b = dst;
    uint8_t L[UM_QK_K];
    for (int64_t i = 0; i < n / UM_QK_K; i++, b++, x += UM_QK_K) {
        k4_quantize_block(x, 31, -0.5f, 0.1f, 15, L, &b->d, &b->dmin, b->scales);
        memset(b->qh, 0, 32);
        for (int c = 0; c < 4; c++)
            for (int l = 0; l < 32; l++) {
                int lo = L[64 * c + l], hi = L[64 * c + l + 32];
                if (lo > 15) { lo -= 16; b->qh[l] |= (uint8_t)(1 << (2 * c)); }
                if (hi > 15) { hi -= 16; b->qh[l] |= (uint8_t)(2 << (2 * c)); }
                b->qs[32 * c + l] = (uint8_t)(lo | (hi << 4));
            }
    }
}

void quant_q6_K_from_float(const float *x, void *dst, int64_t n) {
    um_block_q6_K *b = dst;
    int8_t L[UM_QK_K];
    float scales[16];
    for (int64_t i = 0; i < n / UM_QK_K; i++, b++, x += UM_QK_K) {
        float max_scale = 0, max_abs = 0;
        for (int j = 0; j < 16; j++) {
            scales[j] = sym_levels_weighted(16, 32, x + 16 * j, L + 16 * j);
            if (fabsf(scales[j]) > max_abs) { max_abs = fabsf(scales[j]); max_scale = scales[j]; }
        }
        if (max_abs < GROUP_EPS) {
            memset(b, 0, sizeof *b);
            continue;
        }
        /* int8 sub-block scales: the largest maps to -128 */
        const float iscale = -128.f / max_scale;
        b->d = f2h(1 / iscale);
        for (int j = 0; j < 16; j++) b->scales[j] = (int8_t)UM_MIN(127, nearest_int(iscale * scales[j]));
        for (int j = 0; j < 16; j++) {
            const float d = h2f(b->d) * b->scales[j];
            if (!d) continue;
            for (int l = 0; l < 16; l++)
                L[16 * j + l] = (int8_t)(clampi(nearest_int(x[16 * j + l] / d), -32, 31) + 32);
        }
        for (int half = 0; half < 2; half++) {
            uint8_t *ql = b->ql + 64 * half, *qh = b->qh + 32 * half;
            const int8_t *s = L + 128 * half;
            for (int l = 0; l < 32; l++) {
                ql[l]      = (uint8_t)((s[l] & 0xF) | ((s[l + 64] & 0xF) << 4));
                ql[l + 32] = (uint8_t)((s[l + 32] & 0xF) | ((s[l + 96] & 0xF) << 4));
                qh[l] = (uint8_t)((s[l] >> 4) | ((s[l + 32] >> 4) << 2) | ((s[l + 64] >> 4) << 4) | ((s[l + 96] >> 4) << 6));
            }
        }
    }
}

void um_quantize_q8_K(const float *x, um_block_q8_K *b, int64_t n) {
    for (int64_t i = 0; i < n / UM_QK_K; i++, b++, x += UM_QK_K) {
        float max = 0, amax = 0;
        for (int j = 0; j < UM_QK_K; j++)
            if (fabsf(x[j]) > amax) { amax = fabsf(x[j]); max = x[j]; }
        if (!amax) {
            b->d = 0;
            memset(b->qs, 0, sizeof b->qs);
            memset(b->bsums, 0, sizeof b->bsums);   /* llama.cpp leaves them unset */
            continue;
        }
        const float iscale = -127.f / max;
        for (int j = 0; j < UM_QK_K; j++) b->qs[j] = (int8_t)UM_MIN(127, nearest_int(iscale * x[j]));
        for (int j = 0; j < 16; j++) {
            int sum = 0;
            for (int l = 0; l < 16; l++) sum += b->qs[16 * j + l];
            b->bsums[j] = (int16_t)sum;
        }
        b->d = 1 / iscale;
    }
}
void quant_q8_K_from_float(const float *x, void *dst, int64_t n) { um_quantize_q8_K(x, dst, n); }

/* ================================================================== IQ4 quantizers */

/* Index of the codebook value nearest to v (ties to the lower index's neighbour rule of
 * llama.cpp: strictly closer to the lower one picks it). */
static int iq4_nearest(float v) {
    const int8_t *k = um_iq4nl_values;
    if (v <= k[0]) return 0;
    if (v >= k[15]) return 15;
    int lo = 0, hi = 15;
    while (hi - lo > 1) {
        int mid = (lo + hi) / 2;
        if (v < k[mid]) hi = mid; else lo = mid;
    }
    return v - k[hi - 1] < k[hi] - v ? hi - 1 : hi;
}

/* Best scale of one 32-element sub-block for the codebook, weighted by x^2: start from the
 * max-based scale, refit by least squares, then try 2*ntry+1 other inverse scales (llama.cpp's
 * quantize_row_iq4_nl_impl without importance weights, ntry 7 as llama-quantize uses).
 * L gets the levels of the first fit only, as in llama.cpp. */
static float iq4_sub_scale(const float *x, uint8_t L[32], int ntry) {
    const int8_t *k = um_iq4nl_values;
    float amax = 0, max = 0;
    for (int j = 0; j < 32; j++)
        if (fabsf(x[j]) > amax) { amax = fabsf(x[j]); max = x[j]; }
    if (amax < GROUP_EPS) return 0;
    float d = ntry > 0 ? -max / k[0] : max / k[0];
    float id = 1 / d;
    float sumqx = 0, sumq2 = 0;
    for (int j = 0; j < 32; j++) {
        int l = iq4_nearest(id * x[j]);
        L[j] = (uint8_t)l;
        float q = k[l], w = x[j] * x[j];
        sumqx += w * q * x[j];
        sumq2 += w * q * q;
    }
    d = sumq2 > 0 ? sumqx / sumq2 : 0.f;
    float best = d * sumqx;
    for (int t = -ntry; t <= ntry; t++) {
        id = (t + k[0]) / max;
        sumqx = sumq2 = 0;
        for (int j = 0; j < 32; j++) {
            float q = k[iq4_nearest(id * x[j])], w = x[j] * x[j];
            sumqx += w * q * x[j];
            sumq2 += w * q * q;
        }
        if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
            d = sumqx / sumq2;
            best = d * sumqx;
        }
    }
    return d;
}

static void iq4_pack(const uint8_t *L, uint8_t *qs, int n) {
    for (int i = 0; i < n / 32; i++)
        for (int j = 0; j < 16; j++) qs[16 * i + j] = (uint8_t)(L[32 * i + j] | (L[32 * i + 16 + j] << 4));
}

void quant_iq4_nl_from_float(const float *x, void *dst, int64_t n) {
    um_block_iq4_nl *b = dst;
    for (int64_t i = 0; i < n / UM_QK4_NL; i++, b++, x += UM_QK4_NL) {
        uint8_t L[32] = {0};
        float d = iq4_sub_scale(x, L, 7);
        b->d = f2h(d);
        float id = d ? 1 / d : 0;
        for (int j = 0; j < 32; j++) L[j] = (uint8_t)iq4_nearest(id * x[j]);
        iq4_pack(L, b->qs, 32);
    }
}

void quant_iq4_xs_from_float(const float *x, void *dst, int64_t n) {
    um_block_iq4_xs *b = dst;
    uint8_t L[UM_QK_K];
    float scales[8];
    for (int64_t i = 0; i < n / UM_QK_K; i++, b++, x += UM_QK_K) {
        float max_scale = 0, amax_scale = 0;
        for (int ib = 0; ib < 8; ib++) {
            scales[ib] = iq4_sub_scale(x + 32 * ib, L + 32 * ib, 7);
            if (fabsf(scales[ib]) > amax_scale) { amax_scale = fabsf(scales[ib]); max_scale = scales[ib]; }
        }
        /* 6-bit signed sub-block scales against an fp16 block scale; the largest maps to -32 */
        const float d = -max_scale / 32;
        b->d = f2h(d);
        b->scales_h = 0;
        memset(b->scales_l, 0, sizeof b->scales_l);
        const float id = d ? 1 / d : 0.f;
        for (int ib = 0; ib < 8; ib++) {
            int l = clampi(nearest_int(id * scales[ib]), -32, 31);
            const float dl = d * l;
            const float idl = dl ? 1 / dl : 0.f;
            for (int j = 0; j < 32; j++) L[32 * ib + j] = (uint8_t)iq4_nearest(idl * x[32 * ib + j]);
            l += 32;
            b->scales_l[ib / 2] |= (uint8_t)((l & 0xF) << (4 * (ib % 2)));
            b->scales_h |= (uint16_t)((l >> 4) << (2 * ib));
        }
        iq4_pack(L, b->qs, UM_QK_K);
    }
}
