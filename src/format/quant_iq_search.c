/*
 * quant_iq_search: simple quantizers for the lattice formats IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS,
 * IQ3_S, IQ1_S and IQ1_M (the last two: their own section below). NOT llama.cpp's algorithm (its search over grid neighbours with an importance
 * matrix gives other bytes and a somewhat lower error); a plain, correct nearest-grid-point
 * search, so unmask can write these formats and llama-quantize's IQ3_XXS / IQ3_M / IQ2_M
 * mixtures (what they contain, not the same bytes).
 *
 * Per 256-block, with weights w = sigma2 + x^2 (sigma2 = 2 mean(x^2), as llama.cpp does
 * without an importance matrix):
 *   1. signs from x; where a format stores 7 sign bits per 8 (even parity: IQ2_XXS, IQ2_XS,
 *      IQ3_XXS) an odd group flips its least important element, whose target becomes 0;
 *   2. per scale group (16 or 32 weights), for 9 trial scales around max|x| / top level:
 *      each grid group takes the grid point nearest to |x| / scale (every coordinate rounded
 *      to the nearest level, then a precomputed table: the grid point nearest to that cell of
 *      the full product lattice), then the weighted least-squares scale for those points;
 *      the trial with the smallest weighted error wins;
 *   3. d (fp16) = the largest group scale / (31 unit) so every group's multiplier 2s+1 fits
 *      in 4 bits, s rounded, and the grid points chosen again at the stored scale.
 * Invariant: the reference dequantizers (quant_iq.c) read back exactly what is written
 * here; tests/test_quant_iq.c bounds the round-trip error.
 */
#include "quant_impl.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>

typedef struct iq_fmt {
    uint32_t       type;
    int            G;             /* weights per grid point: 8 or 4 */
    const uint64_t *grid64;       /* one of the two, n_grid entries */
    const uint32_t *grid32;
    int            n_grid;
    int            sub;           /* weights per 4-bit scale: 32 or 16 */
    float          unit;          /* group scale = d * unit * (2s + 1) */
    bool           parity;        /* 7 stored sign bits per 8 weights */
    int            L;             /* distinct levels, ascending */
    uint8_t        lev[8];
    uint16_t      *map;           /* (L^G) nearest grid point of each lattice cell */
} iq_fmt;

enum { F_IQ2_XXS, F_IQ2_XS, F_IQ2_S, F_IQ3_XXS, F_IQ3_S, F_COUNT };

static iq_fmt fmts[F_COUNT] = {
    [F_IQ2_XXS] = { UM_TYPE_IQ2_XXS, 8, um_iq2xxs_grid, NULL, 256,  32, 0.125f, true },
    [F_IQ2_XS]  = { UM_TYPE_IQ2_XS,  8, um_iq2xs_grid,  NULL, 512,  16, 0.125f, true },
    [F_IQ2_S]   = { UM_TYPE_IQ2_S,   8, um_iq2s_grid,   NULL, 1024, 16, 0.125f, false },
    [F_IQ3_XXS] = { UM_TYPE_IQ3_XXS, 4, NULL, um_iq3xxs_grid, 256,  32, 0.25f,  true },
    [F_IQ3_S]   = { UM_TYPE_IQ3_S,   4, NULL, um_iq3s_grid,   512,  32, 1.0f,   false },
};

static inline int grid_level(const iq_fmt *f, int p, int j) {
    return f->grid64 ? (int)(f->grid64[p] >> (8 * j) & 0xFF) : (int)(f->grid32[p] >> (8 * j) & 0xFF);
}

static pthread_once_t maps_once = PTHREAD_ONCE_INIT;
static bool maps_ok;

/* Levels of each grid, and for every cell of the product lattice (a level per coordinate)
 * the grid point at the smallest squared distance: 4096 or 6561 cells, built once. */
static void build_maps(void) {
    maps_ok = true;
    for (int k = 0; k < F_COUNT; k++) {
        iq_fmt *f = &fmts[k];
        bool seen[256] = { false };
        for (int p = 0; p < f->n_grid; p++)
            for (int j = 0; j < f->G; j++) seen[grid_level(f, p, j)] = true;
        f->L = 0;
        for (int v = 0; v < 256 && f->L < 8; v++)
            if (seen[v]) f->lev[f->L++] = (uint8_t)v;
        int cells = 1;
        for (int j = 0; j < f->G; j++) cells *= f->L;
        f->map = malloc(sizeof(uint16_t) * (size_t)cells);
        if (!f->map) { maps_ok = false; return; }
        for (int c = 0; c < cells; c++) {
            int v[8], cc = c;
            for (int j = 0; j < f->G; j++) { v[j] = f->lev[cc % f->L]; cc /= f->L; }
            int best = 0, best_d = 1 << 30;
            for (int p = 0; p < f->n_grid; p++) {
                int d = 0;
                for (int j = 0; j < f->G; j++) { int t = v[j] - grid_level(f, p, j); d += t * t; }
                if (d < best_d) { best_d = d; best = p; }
            }
            f->map[c] = (uint16_t)best;
        }
    }
}

/* Grid point for target magnitudes a[G] at scale sigma (> 0). */
static int nearest_point(const iq_fmt *f, const float *a, float sigma) {
    int cell = 0, mul = 1;
    const float inv = 1.0f / sigma;
    for (int j = 0; j < f->G; j++) {
        float t = a[j] * inv;
        int li = 0;
        while (li + 1 < f->L && fabsf(t - f->lev[li + 1]) < fabsf(t - f->lev[li])) li++;
        cell += li * mul;
        mul *= f->L;
    }
    return f->map[cell];
}

/* Points for one scale group at scale sigma; returns the weighted least-squares scale for
 * them and its weighted squared error. */
static float fit_group(const iq_fmt *f, const float *a, const float *w, int n, float sigma, int *pts, float *err) {
    double num = 0, den = 0;
    for (int g = 0; g < n / f->G; g++) {
        pts[g] = nearest_point(f, a + g * f->G, sigma);
        for (int j = 0; j < f->G; j++) {
            double q = grid_level(f, pts[g], j), ww = w[g * f->G + j];
            num += ww * a[g * f->G + j] * q;
            den += ww * q * q;
        }
    }
    float s = den > 0 ? (float)(num / den) : 0.f;
    double e = 0;
    for (int g = 0; g < n / f->G; g++)
        for (int j = 0; j < f->G; j++) {
            double t = a[g * f->G + j] - (double)s * grid_level(f, pts[g], j);
            e += w[g * f->G + j] * t * t;
        }
    *err = (float)e;
    return s;
}

/* One 256-block: grid point per group, sign byte per 8 weights, 4-bit scale per group of
 * f->sub, fp16 d. */
typedef struct iq_choice {
    int      pts[UM_QK_K / 4];
    uint8_t  signs[UM_QK_K / 8];
    uint8_t  s[UM_QK_K / 16];
    um_half  d;
} iq_choice;

static void choose(const iq_fmt *f, const float *x, iq_choice *c) {
    float a[UM_QK_K], w[UM_QK_K], sig[UM_QK_K / 16];
    double sum2 = 0;
    for (int i = 0; i < UM_QK_K; i++) sum2 += (double)x[i] * x[i];
    const float sigma2 = (float)(2 * sum2 / UM_QK_K);
    memset(c, 0, sizeof *c);
    for (int i = 0; i < UM_QK_K; i++) {
        a[i] = fabsf(x[i]);
        w[i] = sigma2 + x[i] * x[i];
        if (x[i] < 0) c->signs[i / 8] |= (uint8_t)(1u << (i % 8));
    }
    if (f->parity)
        for (int k = 0; k < UM_QK_K / 8; k++) {
            if (!(__builtin_popcount(c->signs[k]) & 1)) continue;
            int m = 8 * k;
            for (int i = 8 * k + 1; i < 8 * k + 8; i++)
                if (w[i] * a[i] * a[i] < w[m] * a[m] * a[m]) m = i;
            c->signs[k] ^= (uint8_t)(1u << (m % 8));
            a[m] = 0;                                    /* wrong sign: aim for the smallest level */
        }
    const int n_sub = UM_QK_K / f->sub, top = f->lev[f->L - 1];
    float max_sig = 0;
    for (int b = 0; b < n_sub; b++) {
        const float *ab = a + b * f->sub, *wb = w + b * f->sub;
        float amax = 0;
        for (int i = 0; i < f->sub; i++) amax = fmaxf(amax, ab[i]);
        sig[b] = 0;
        if (amax <= 0) continue;
        float best = INFINITY;
        int pts[8];
        for (int k = -4; k <= 4; k++) {
            float err, s = fit_group(f, ab, wb, f->sub, amax / top * (1.0f + 0.1f * k), pts, &err);
            if (s > 0 && err < best) { best = err; sig[b] = s; }
        }
        max_sig = fmaxf(max_sig, sig[b]);
    }
    const float d = h2f(f2h(max_sig / (31.0f * f->unit)));
    c->d = f2h(d);
    for (int b = 0; b < n_sub; b++) {
        int s = d > 0 ? clampi(nearest_int((sig[b] / (d * f->unit) - 1) * 0.5f), 0, 15) : 0;
        c->s[b] = (uint8_t)s;
        const float sq = d * f->unit * (2 * s + 1);
        for (int g = 0; g < f->sub / f->G; g++) {
            int gi = b * (f->sub / f->G) + g;
            c->pts[gi] = sq > 0 ? nearest_point(f, a + gi * f->G, sq) : 0;
        }
    }
}

static inline void put16(uint8_t *p, uint32_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); }
static inline void put32(uint8_t *p, uint32_t v) { put16(p, v); put16(p + 2, v >> 16); }

static void quantize_rows(int k, const float *x, void *dst, int64_t n) {
    pthread_once(&maps_once, build_maps);
    const iq_fmt *f = &fmts[k];
    uint8_t *out = dst;
    const uint32_t bytes = um_type_bytes(f->type);
    iq_choice c;
    for (int64_t i = 0; i < n / UM_QK_K; i++, x += UM_QK_K, out += bytes) {
        memset(out, 0, bytes);
        if (!maps_ok) continue;                      /* out of memory building the tables: zeros */
        choose(f, x, &c);
        put16(out, c.d);
        uint8_t *q = out + 2;
        for (int ib = 0; ib < 8; ib++) {
            switch (f->type) {
            case UM_TYPE_IQ2_XXS: {                  /* 4 indices, then 4 x 7 sign bits + scale */
                uint32_t aux = (uint32_t)c.s[ib] << 28;
                for (int l = 0; l < 4; l++) {
                    q[8 * ib + l] = (uint8_t)c.pts[4 * ib + l];
                    aux |= (uint32_t)(c.signs[4 * ib + l] & 127) << (7 * l);
                }
                put32(q + 8 * ib + 4, aux);
                break;
            }
            case UM_TYPE_IQ2_XS:
                for (int l = 0; l < 4; l++)
                    put16(q + 2 * (4 * ib + l), (uint32_t)c.pts[4 * ib + l] | (uint32_t)(c.signs[4 * ib + l] & 127) << 9);
                q[64 + ib] = (uint8_t)(c.s[2 * ib] | c.s[2 * ib + 1] << 4);
                break;
            case UM_TYPE_IQ2_S:                      /* qs, signs (qs + 32), qh, scales */
                for (int l = 0; l < 4; l++) {
                    q[4 * ib + l] = (uint8_t)c.pts[4 * ib + l];
                    q[64 + ib] |= (uint8_t)((c.pts[4 * ib + l] >> 8) << (2 * l));
                    q[32 + 4 * ib + l] = c.signs[4 * ib + l];
                }
                q[72 + ib] = (uint8_t)(c.s[2 * ib] | c.s[2 * ib + 1] << 4);
                break;
            case UM_TYPE_IQ3_XXS: {                  /* 64 index bytes, then per 32 signs + scale */
                uint32_t aux = (uint32_t)c.s[ib] << 28;
                for (int k8 = 0; k8 < 8; k8++) q[8 * ib + k8] = (uint8_t)c.pts[8 * ib + k8];
                for (int l = 0; l < 4; l++) aux |= (uint32_t)(c.signs[4 * ib + l] & 127) << (7 * l);
                put32(q + 64 + 4 * ib, aux);
                break;
            }
            default:                                 /* IQ3_S: qs, qh, signs, scales per 64 */
                for (int k8 = 0; k8 < 8; k8++) {
                    q[8 * ib + k8] = (uint8_t)c.pts[8 * ib + k8];
                    q[64 + ib] |= (uint8_t)((c.pts[8 * ib + k8] >> 8) << k8);
                }
                for (int l = 0; l < 4; l++) q[72 + 4 * ib + l] = c.signs[4 * ib + l];
                q[104 + ib / 2] |= (uint8_t)(c.s[ib] << (4 * (ib % 2)));
                break;
            }
        }
    }
}

/* ================================================================== IQ1_S / IQ1_M
 * x = d (2s+1) (g + delta), g in {-1, 0, 1} from a grid of 2048 points of 8, delta = +-1/8
 * (IQ1_S: one sign per 32 weights, 3-bit s per 32; IQ1_M: a sign per 8, 3-bit s per 16).
 * Same search as above with signed levels: per trial scale and shift sign, each group takes
 * the grid point nearest to x / scale - delta (per-coordinate rounding to -1/0/1, then the
 * nearest-point table of the 3^8 lattice), then the least-squares scale.
 */
static uint16_t *iq1_map;                    /* (6561) nearest grid point of each cell */
static pthread_once_t iq1_once = PTHREAD_ONCE_INIT;

static void build_iq1_map(void) {
    iq1_map = malloc(sizeof(uint16_t) * 6561);
    if (!iq1_map) return;
    for (int c = 0; c < 6561; c++) {
        int v[8], cc = c;
        for (int j = 0; j < 8; j++) { v[j] = cc % 3 - 1; cc /= 3; }
        int best = 0, best_d = 1 << 30;
        for (int p = 0; p < UM_IQ1S_NGRID; p++) {
            int d = 0;
            for (int j = 0; j < 8; j++) { int t = v[j] - (int8_t)(um_iq1s_grid[p] >> (8 * j)); d += t * t; }
            if (d < best_d) { best_d = d; best = p; }
        }
        iq1_map[c] = (uint16_t)best;
    }
}

static inline int iq1_level(int p, int j) { return (int8_t)(um_iq1s_grid[p] >> (8 * j)); }

/* Grid point for 8 weights at scale sigma and shift delta, and its weighted error. */
static int iq1_point(const float *x, const float *w, float sigma, float delta, float *err) {
    int cell = 0, mul = 1;
    for (int j = 0; j < 8; j++) {
        float t = x[j] / sigma - delta;
        cell += (t < -0.5f ? 0 : t > 0.5f ? 2 : 1) * mul;
        mul *= 3;
    }
    int p = iq1_map[cell];
    float e = 0;
    for (int j = 0; j < 8; j++) { float r = x[j] - sigma * (iq1_level(p, j) + delta); e += w[j] * r * r; }
    *err = e;
    return p;
}

/* One scale group of n (16 or 32) weights whose shift signs come in runs of `run` (8 or 32):
 * points and shift signs at scale sigma; returns the least-squares scale for them. */
static float iq1_fit(const float *x, const float *w, int n, int run, float sigma, int *pts, bool *neg, float *err) {
    double num = 0, den = 0, e = 0;
    for (int r = 0; r < n / run; r++) {
        float best = INFINITY;
        for (int sgn = 0; sgn < 2; sgn++) {
            const float delta = sgn ? -UM_IQ1S_DELTA : UM_IQ1S_DELTA;
            float tot = 0;
            int p[4];
            for (int g = 0; g < run / 8; g++) {
                float eg;
                p[g] = iq1_point(x + r * run + 8 * g, w + r * run + 8 * g, sigma, delta, &eg);
                tot += eg;
            }
            if (tot < best) {
                best = tot;
                neg[r] = sgn;
                for (int g = 0; g < run / 8; g++) pts[r * run / 8 + g] = p[g];
            }
        }
        e += best;
    }
    for (int i = 0; i < n; i++) {
        double v = iq1_level(pts[i / 8], i % 8) + (neg[i / run] ? -UM_IQ1S_DELTA : UM_IQ1S_DELTA);
        num += w[i] * x[i] * v;
        den += w[i] * v * v;
    }
    *err = (float)e;
    return den > 0 ? (float)(num / den) : 0.f;
}

static void quantize_iq1(bool m, const float *x, void *dst, int64_t n) {
    pthread_once(&iq1_once, build_iq1_map);
    const int sub = m ? 16 : 32, run = m ? 8 : 32, n_sub = UM_QK_K / sub;
    const uint32_t bytes = um_type_bytes(m ? UM_TYPE_IQ1_M : UM_TYPE_IQ1_S);
    uint8_t *out = dst;
    for (int64_t i = 0; i < n / UM_QK_K; i++, x += UM_QK_K, out += bytes) {
        memset(out, 0, bytes);
        if (!iq1_map) continue;
        float w[UM_QK_K], sig[16];
        double sum2 = 0;
        for (int k = 0; k < UM_QK_K; k++) sum2 += (double)x[k] * x[k];
        for (int k = 0; k < UM_QK_K; k++) w[k] = (float)(2 * sum2 / UM_QK_K) + x[k] * x[k];
        int pts[32], tp[4];
        bool neg[32], tn[4];
        float max_sig = 0;
        for (int b = 0; b < n_sub; b++) {
            float amax = 0, best = INFINITY, err;
            for (int k = 0; k < sub; k++) amax = fmaxf(amax, fabsf(x[b * sub + k]));
            sig[b] = 0;
            if (amax <= 0) continue;
            for (int k = -4; k <= 4; k++) {
                float sgm = iq1_fit(x + b * sub, w + b * sub, sub, run, amax / 1.125f * (1.0f + 0.1f * k), tp, tn, &err);
                if (sgm > 0 && err < best) { best = err; sig[b] = sgm; }
            }
            max_sig = fmaxf(max_sig, sig[b]);
        }
        const um_half dh = f2h(max_sig / 15.0f);
        const float d = h2f(dh);
        uint8_t s[16];
        for (int b = 0; b < n_sub; b++) {
            s[b] = (uint8_t)(d > 0 ? clampi(nearest_int((sig[b] / d - 1) * 0.5f), 0, 7) : 0);
            float err, sq = d * (2 * s[b] + 1);
            if (sq > 0) iq1_fit(x + b * sub, w + b * sub, sub, run, sq, pts + b * sub / 8, neg + b * sub / run, &err);
            else for (int g = 0; g < sub / 8; g++) { pts[b * sub / 8 + g] = 0; if (g * 8 % run == 0) neg[(b * sub + g * 8) / run] = false; }
        }
        if (!m) {                                /* d, qs[32], qh[8] (u16) */
            um_block_iq1_s *o = (um_block_iq1_s *)out;
            o->d = dh;
            for (int ib = 0; ib < 8; ib++) {
                uint16_t h = (uint16_t)(s[ib] << 12 | (neg[ib] ? 0x8000 : 0));
                for (int l = 0; l < 4; l++) {
                    o->qs[4 * ib + l] = (uint8_t)pts[4 * ib + l];
                    h |= (uint16_t)((pts[4 * ib + l] >> 8) << (3 * l));
                }
                uint8_t *qh = (uint8_t *)&o->qh[ib];
                qh[0] = (uint8_t)h; qh[1] = (uint8_t)(h >> 8);
            }
        } else {                                 /* qs[32], qh[16], scales[8] (+ d's nibbles) */
            um_block_iq1_m *o = (um_block_iq1_m *)out;
            uint16_t sc[4] = { 0 };
            for (int ib = 0; ib < 8; ib++) {
                sc[ib / 2] |= (uint16_t)((s[2 * ib] | s[2 * ib + 1] << 3) << (6 * (ib % 2)));
                for (int l = 0; l < 4; l++) {
                    o->qs[4 * ib + l] = (uint8_t)pts[4 * ib + l];
                    uint8_t h = (uint8_t)((pts[4 * ib + l] >> 8) | (neg[4 * ib + l] ? 8 : 0));
                    o->qh[2 * ib + l / 2] |= (uint8_t)(h << (4 * (l % 2)));
                }
            }
            for (int k = 0; k < 4; k++) {
                sc[k] |= (uint16_t)(((dh >> (4 * k)) & 0xF) << 12);
                o->scales[2 * k] = (uint8_t)sc[k];
                o->scales[2 * k + 1] = (uint8_t)(sc[k] >> 8);
            }
        }
    }
}

void quant_iq1_s_from_float(const float *x, void *dst, int64_t n) { quantize_iq1(false, x, dst, n); }
void quant_iq1_m_from_float(const float *x, void *dst, int64_t n) { quantize_iq1(true, x, dst, n); }

void quant_iq2_xxs_from_float(const float *x, void *dst, int64_t n) { quantize_rows(F_IQ2_XXS, x, dst, n); }
void quant_iq2_xs_from_float(const float *x, void *dst, int64_t n)  { quantize_rows(F_IQ2_XS, x, dst, n); }
void quant_iq2_s_from_float(const float *x, void *dst, int64_t n)   { quantize_rows(F_IQ2_S, x, dst, n); }
void quant_iq3_xxs_from_float(const float *x, void *dst, int64_t n) { quantize_rows(F_IQ3_XXS, x, dst, n); }
void quant_iq3_s_from_float(const float *x, void *dst, int64_t n)   { quantize_rows(F_IQ3_S, x, dst, n); }
