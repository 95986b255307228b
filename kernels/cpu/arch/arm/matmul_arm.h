/*
 * matmul_arm: the decoded-panel layouts the AArch64 integer kernels share (matmul_dotprod.c,
 * matmul_i8mm.c) with their decoder (arm_shared.c). Private to kernels/cpu/arch/arm.
 *
 * A chunk decodes its 16-row panel once from the file layout (no repacking at load, so the
 * resident weights stay the mmapped file) into per-thread scratch: the table, then the
 * weights as signed int8 levels, 16 bytes per column (16 x n_in bytes), in one of two orders:
 *   SDOT  (dotprod) per 4 columns c4, 64 bytes: byte r*4 + i = level of row r, column 4*c4 + i.
 *         A q register holds 4 columns of 4 rows: vdotq_laneq_s32 with an activation lane
 *         (4 consecutive columns of one token) gives the 4 rows' partial sums, no
 *         horizontal reduction.
 *   SMMLA (i8mm) per 8 columns c8, 128 bytes: vector p (16 bytes) = row 2p's 8 columns, then
 *         row 2p+1's. vmmlaq_s32 of an activation vector (tokens t, t+1, 8 columns each) with
 *         it gives the 2x2 tile [t r, t r', t+1 r, t+1 r'] (r = 2p, r' = 2p+1).
 * Tables (4-byte words), per unit of 32 columns (32-blocks) or 256 columns (256-blocks), each
 * per-row value stored once per row for SDOT (16 words, rows in order) or pair-duplicated for
 * SMMLA (32 words: pair p at 4p holds v[2p], v[2p+1], v[2p], v[2p+1], the tile's order):
 *   32-block   [0, 32)   f32 d            [32, 64)  f32 m (Q4_1/Q5_1: x = d q + m)
 *   256-block  [0, 512)  int32 scale per 16 columns s at s*32   [512, 1024) int32 min, same
 *              [1024, 1056) f32 d         [1056, 1088) f32 dmin (x = d sc q - dmin m)
 * (SDOT uses the first 16 words of each 32-word slot.) Levels: Q4_0 q-8, Q5_0 q-16, Q8_0 q,
 * IQ4_NL/IQ4_XS the codebook value, Q3_K -4..3, Q6_K q-32, Q2_K/Q4_K/Q5_K/Q4_1/Q5_1 the
 * unsigned code (their min is the separate term), IQ1-IQ3/TQ um_iq_levels (scale = mult).
 */
#ifndef UM_MATMUL_ARM_H
#define UM_MATMUL_ARM_H

#include "matmul_impl.h"

#define ARM_T32  64              /* table words per 32-column unit */
#define ARM_T256 1088            /* table words per 256-column unit */

/* Formats with a min term (affine levels). */
static inline bool mm_arm_affine(uint32_t t) {
    return t == UM_TYPE_Q4_1 || t == UM_TYPE_Q5_1 || t == UM_TYPE_Q2_K || t == UM_TYPE_Q4_K || t == UM_TYPE_Q5_K;
}

/* 256-block formats whose scales (and mins) are per 32 columns: the kernels sum 32 columns
 * before scaling (the tables still hold them per 16, duplicated). */
static inline bool mm_arm_sub32(uint32_t t) {
    return t == UM_TYPE_Q4_K || t == UM_TYPE_Q5_K || t == UM_TYPE_IQ4_XS;
}

static inline size_t mm_arm_tables_bytes(const um_matmul_weights *w) {
    return mm_arm_blk32(w->type) ? (size_t)(w->n_in / 32) * ARM_T32 * 4 : (size_t)(w->n_in / 256) * ARM_T256 * 4;
}

/* One block's levels in column order: a 32-block (d, m: x = d q + m) or a 256-block
 * (integer scale and min per 16 columns, d, dmin: x = d sc q - dmin mn). */
void mm_arm_levels32(uint32_t type, const uint8_t *blk, int8_t q[32], float *d, float *m);
void mm_arm_levels256(uint32_t type, const uint8_t *blk, int8_t q[256], int32_t sc[16], int32_t mn[16],
                      float *d, float *dmin);
/* Their byte-by-byte reference for the formats whose decode is vector bit-twiddling that
 * quant.c spells out per weight (Q5_0/Q5_1, Q2_K/Q3_K; false for any other type), kept for
 * tests/test_arm_levels_neon.c: the vector decode must give the same bytes. */
bool mm_arm_levels32_ref(uint32_t type, const uint8_t *blk, int8_t q[32], float *d, float *m);
bool mm_arm_levels256_ref(uint32_t type, const uint8_t *blk, int8_t q[256], int32_t sc[16], int32_t mn[16],
                          float *d, float *dmin);

/* The few-token path (arm_shared_dotprod.c, SDOT): a chunk of at most ARM_FEW tokens computed row
 * by row from the decoded levels, without building the panel. */
#define ARM_FEW 4
void mm_arm_rows(const mm_job *j, int64_t panel, int64_t t0, int64_t t1);

/* Decode rows [16 panel, 16 panel + 16) of a file-layout matrix: tab (tables above), wq
 * (16 x n_in levels, SMMLA order when mmla, else SDOT order). */
void mm_arm_panel(const um_matmul_weights *w, int64_t panel, bool mmla, void *tab, int8_t *wq);

#endif
