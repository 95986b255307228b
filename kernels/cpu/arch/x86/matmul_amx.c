/*
 * matmul_amx: AMX-INT8 kernels for the 16-row panels (Q4_K, Q6_K, Q8_0, Q4_0..Q5_1), and the same
 * loops with scalar tile operations (amx-emu) so the data layout and loop logic can be
 * tested on CPUs without AMX. Other formats and partial panels go to the AVX-512 kernel
 * (the dispatcher in matmul.c chooses per chunk: mm_amx_takes).
 *
 * Tiles: C (tmm0) = 16 tokens x 16 outputs int32, A (tmm1) = 16 tokens x K activation bytes
 * straight from the quantized activation rows, B (tmm2) = K/4 rows x 64 bytes of weights in
 * VNNI order, which is exactly the panel's vector layout (4 columns of 16 rows). K is one
 * scale sub-block: 32 columns (Q4_K, Q8_0) or 16 (Q6_K), because each sub-block has its own
 * scale per output and tiles accumulate only int32; AVX-512 applies the scales to C.
 * Q4_K/Q6_K panels are first unpacked to bytes (mm_unpack_panel_avx512, 16 x n_in bytes
 * in per-thread scratch, natural column order); Q8_0 panels are loaded as they are (codes q + 128, so C gets the
 * activation row's -128 * sum(q) added); Q4_0/Q4_1/Q5_0/Q5_1 panels are unpacked to those
 * Q8_0 codes (mm_unpack_q32_avx512) and taken like Q8_0, plus m x scale*sum(q) for Q4_1/Q5_1.
 *
 * AMX use: cpu_features() asked Linux for tile-data permission (process-wide) before any
 * kernel could be chosen; each chunk loads its tile configuration and releases the tiles
 * when done, so no thread ever runs tile instructions unconfigured.
 */
#include <immintrin.h>
#include <string.h>

#include "matmul_impl.h"

#define AI static inline __attribute__((always_inline))
#define TM 16                    /* tokens per tile */

typedef struct tilecfg {
    uint8_t  palette, start_row, reserved[14];
    uint16_t colsb[16];
    uint8_t  rows[16];
} tilecfg;

/* The emulated tile register file: 3 tiles of up to 16 rows x 64 bytes. */
typedef struct emu_tiles {
    tilecfg cfg;
    uint8_t t[3][16][64];
} emu_tiles;

size_t mm_amx_scratch_bytes(const um_matmul_weights *w) {
    /* after MM_INT_SCRATCH: C spill (16 x 16 int32), emulated tiles */
    return TM * 16 * 4 + sizeof(emu_tiles) + 64;
}

/* ---------------------------------------------------------------- tile ops */

AI void t_config(bool emu, emu_tiles *et, int m, int k) {
    tilecfg c;
    memset(&c, 0, sizeof c);
    c.palette = 1;
    c.rows[0] = (uint8_t)m; c.colsb[0] = 64;                /* C: m x 16 int32 */
    c.rows[1] = (uint8_t)m; c.colsb[1] = (uint16_t)k;       /* A: m x k bytes */
    c.rows[2] = (uint8_t)(k / 4); c.colsb[2] = 64;          /* B: k/4 x 64 bytes */
    if (emu) et->cfg = c;
    else _tile_loadconfig(&c);
}

AI void t_zero_c(bool emu, emu_tiles *et) {
    if (emu) memset(et->t[0], 0, sizeof et->t[0]);
    else _tile_zero(0);
}

AI void t_load_a(bool emu, emu_tiles *et, const void *p, size_t stride) {
    if (emu) {
        for (int r = 0; r < et->cfg.rows[1]; r++) memcpy(et->t[1][r], (const uint8_t *)p + r * stride, et->cfg.colsb[1]);
    } else {
        _tile_loadd(1, p, stride);
    }
}

AI void t_load_b(bool emu, emu_tiles *et, const void *p) {
    if (emu) {
        for (int r = 0; r < et->cfg.rows[2]; r++) memcpy(et->t[2][r], (const uint8_t *)p + r * 64, 64);
    } else {
        _tile_loadd(2, p, 64);
    }
}

/* C[m][n] += sum_k A[m][k] (signed) * B[k/4][n*4 + k%4] (unsigned): TDPBSUD. */
AI void t_dpbsud(bool emu, emu_tiles *et) {
    if (emu) {
        for (int m = 0; m < et->cfg.rows[0]; m++)
            for (int n = 0; n < 16; n++) {
                int32_t c;
                memcpy(&c, &et->t[0][m][n * 4], 4);
                for (int k = 0; k < et->cfg.colsb[1]; k++)
                    c += (int8_t)et->t[1][m][k] * (int32_t)et->t[2][k / 4][n * 4 + k % 4];
                memcpy(&et->t[0][m][n * 4], &c, 4);
            }
    } else {
        _tile_dpbsud(0, 1, 2);
    }
}

AI void t_store_c(bool emu, emu_tiles *et, int32_t *p) {
    if (emu) {
        for (int r = 0; r < et->cfg.rows[0]; r++) memcpy(p + r * 16, et->t[0][r], 64);
    } else {
        _tile_stored(0, p, 64);
    }
}

AI void t_release(bool emu) {
    if (!emu) _tile_release();
}

/* ---------------------------------------------------------------- the loops */

AI void amx_chunk(bool emu, const mm_job *j, int64_t panel, int64_t t0, int64_t t1, uint8_t *ts) {
    const um_matmul_weights *w = j->w;
    float *tab = (float *)ts;
    uint8_t *unpacked = ts + mm_tables_bytes(w);
    int32_t *cbuf = (int32_t *)(unpacked + (size_t)UM_MATMUL_PANEL * w->n_in);
    emu_tiles *et = (emu_tiles *)(cbuf + TM * 16);
    mm_panel_tables_avx2(w, panel, tab);
    const uint8_t *pb = (const uint8_t *)w->data + (size_t)panel * UM_MATMUL_PANEL * w->row_bytes;
    int kq = w->type == UM_TYPE_Q6_K ? 16 : 32;         /* columns per sub-block (K of a tile) */
    const bool q32 = mm_q32_type(w->type), affine = mm_q32_affine(w->type);
    const int64_t nb32 = w->n_in / 32;                  /* the m table of Q4_1/Q5_1 follows d's */
    if (q32) mm_unpack_q32_avx512(w, pb, unpacked);     /* Q8_0 codes: the Q8_0 case below */
    else if (w->type != UM_TYPE_Q8_0) mm_unpack_panel_avx512(w, pb, unpacked);
    int cfg_m = -1;
    for (int64_t t = t0; t < t1; t += TM) {
        int m = (int)UM_MIN(TM, t1 - t);
        if (m != cfg_m) { t_config(emu, et, m, kq); cfg_m = m; }
        const uint8_t *act = j->act + (size_t)t * j->act_stride;
        __m512 acc[TM];
        for (int u = 0; u < m; u++) acc[u] = _mm512_setzero_ps();
        int64_t n_sub = w->n_in / kq;
        for (int64_t q = 0; q < n_sub; q++) {
            const uint8_t *b;
            if (w->type == UM_TYPE_Q8_0) b = pb + q * 16 * sizeof(um_block_q8_0);
            else if (q32) b = unpacked + q * 512;
            else b = unpacked + q * kq * 16;           /* kq/4 vectors of 64 bytes */
            t_zero_c(emu, et);
            t_load_a(emu, et, act + q * kq, j->act_stride);
            t_load_b(emu, et, b);
            t_dpbsud(emu, et);
            t_store_c(emu, et, cbuf);
            for (int u = 0; u < m; u++) {
                const uint8_t *a = act + (size_t)u * j->act_stride;
                const float *scale = (const float *)(a + j->off_scale);
                __m512i c = _mm512_loadu_si512(cbuf + u * 16);
                if (w->type == UM_TYPE_Q4_K) {
                    int64_t sb = q / 8, jj = q % 8;
                    __m512 s = _mm512_mul_ps(_mm512_loadu_ps(tab + sb * 256 + jj * 16), _mm512_set1_ps(scale[sb]));
                    acc[u] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(c), s, acc[u]);
                    acc[u] = _mm512_fnmadd_ps(_mm512_loadu_ps(tab + sb * 256 + 128 + jj * 16),
                                              _mm512_set1_ps(((const float *)(a + j->off_corr))[q]), acc[u]);
                } else if (w->type == UM_TYPE_Q6_K) {
                    int64_t sb = q / 16, jj = q % 16;
                    c = _mm512_add_epi32(c, _mm512_set1_epi32(((const int32_t *)(a + j->off_corr))[q]));
                    __m512 s = _mm512_mul_ps(_mm512_loadu_ps(tab + sb * 256 + jj * 16), _mm512_set1_ps(scale[sb]));
                    acc[u] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(c), s, acc[u]);
                } else {
                    c = _mm512_add_epi32(c, _mm512_set1_epi32(((const int32_t *)(a + j->off_corr))[q]));
                    __m512 s = _mm512_mul_ps(_mm512_loadu_ps(tab + q * 16), _mm512_set1_ps(scale[q]));
                    acc[u] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(c), s, acc[u]);
                    if (affine)     /* + m x scale*sum(q), the float after the int32 corrections */
                        acc[u] = _mm512_fmadd_ps(_mm512_loadu_ps(tab + (nb32 + q) * 16),
                                                 _mm512_set1_ps(((const float *)(a + j->off_corr))[nb32 + q]), acc[u]);
                }
            }
        }
        float *y = j->y + t * w->n_out + panel * UM_MATMUL_PANEL;
        for (int u = 0; u < m; u++) _mm512_storeu_ps(y + (size_t)u * w->n_out, acc[u]);
    }
    t_release(emu);
}

/* Full packed panels only: matmul.c sends other formats and partial panels to the AVX-512
 * kernel (mm_amx_takes), so this file calls nothing beside it but the shared layer. */
void mm_chunk_amx(const mm_job *j, int64_t panel, int64_t t0, int64_t t1, void *ts) {
    amx_chunk(false, j, panel, t0, t1, ts);
}

void mm_chunk_amx_emu(const mm_job *j, int64_t panel, int64_t t0, int64_t t1, void *ts) {
    amx_chunk(true, j, panel, t0, t1, ts);
}
