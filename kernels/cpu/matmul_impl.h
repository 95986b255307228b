/*
 * matmul_impl: what matmul.c shares with its per-ISA kernel files (matmul_*.c). Private to
 * the matmul module; nothing outside src/matmul*.c includes it.
 *
 * Work is cut into (panel, token slab) chunks. A panel is 16 consecutive output rows; the
 * last one may be partial (raw rows, float-tile path). For the integer kernels the
 * activations are quantized once per call into `act` (one row of act_stride bytes per
 * token, layout below), and each thread decodes the panel's per-block scales into a float
 * table before running its token blocks.
 */
#ifndef UM_MATMUL_IMPL_H
#define UM_MATMUL_IMPL_H

#include <stdint.h>
#include <stddef.h>

#include "matmul.h"
#include "quant.h"

#define MM_KC 256                /* float-tile path: columns decoded per step */

/* The architecture whose kernel folder the Makefile builds (kernels/cpu/arch/x86 on x86,
 * kernels/cpu/arch/arm on AArch64; other targets have only the portable reference kernel).
 * The dispatcher names each folder's kernels only where they exist. */
#if defined(__x86_64__) || defined(__i386__)
#define MM_X86 1
#else
#define MM_X86 0
#endif
#if defined(__aarch64__)
#define MM_ARM 1
#else
#define MM_ARM 0
#endif

/* Quantized activation row of one token (integer kernels), byte offsets from the row start:
 *   [0, n_in)         int8 q            x ~= scale * q
 *   [off_scale, ...)  float scale       per 256 (Q4_K, Q6_K) or per 32 (Q8_0)
 *   [off_corr, ...)   Q4_K: float scale*sum(q) per 32    (the mins term), then
 *                           int16 sum(q) per 32           (the same sums, for vpdpwssd)
 *                     Q6_K: int32 -32*sum(q) per 16      (the -32 offset of q6), then
 *                           int16 sum(q) per 16           (the same sums, for vpmaddwd)
 *                     IQ (mm_iq_int): int32 -64*sum(q) per 16 (the +64 of their codes)
 *                     Q8_0: int32 -128*sum(q) per 32     (weights are stored as w ^ 0x80), then
 *                           float scale*sum(q) per 32    (the mins term of Q4_1/Q5_1)
 *                     (Q4_0, Q4_1, Q5_0 and Q5_1 use the Q8_0 row: mm_act_type) */
typedef struct mm_job {
    const um_matmul_weights *w;
    const float   *x;            /* (n_tokens, n_in) */
    float         *y;            /* (n_tokens, n_out) */
    int64_t        n_tokens;
    int64_t        slab;         /* tokens per chunk */
    int64_t        n_slabs;
    const uint8_t *act;          /* (n_tokens, act_stride) bytes, integer kernels only */
    size_t         act_stride;
    size_t         off_scale, off_corr;
    int            n_threads;    /* of the pool running the job */
    uint8_t       *thread_scratch;     /* n_threads * per_thread bytes, 64-aligned each */
    size_t         per_thread;
} mm_job;

/* Per-thread scratch of the float-tile path: decoded rows (16, MM_KC) f32 then the
 * transposed tile (MM_KC, 16) f32. */
#define MM_FLOAT_SCRATCH (2 * UM_MATMUL_PANEL * MM_KC * sizeof(float))

/* Decode rows [row0, row0 + n_rows) columns [k0, k0 + kc) of a file-layout matrix to f32,
 * out (16, MM_KC) row-major, rows >= n_rows zero. Portable (quant.c's reference
 * dequantizers), with fast F32/F16/BF16 (arch/x86/x86_shared_avx2.c, needs AVX2+F16C). */
void mm_decode_rows_ref(const um_matmul_weights *w, int64_t row0, int n_rows, int64_t k0,
                        int64_t kc, float *out);
void mm_decode_rows_avx2(const um_matmul_weights *w, int64_t row0, int n_rows, int64_t k0,
                         int64_t kc, float *out);

/* Per-panel scale tables (floats), see matmul.c: Q4_K n_in floats, Q6_K n_in, Q8_0 n_in/2,
 * mm_q32_type n_in/2 (d per 32 columns and row, as Q8_0), then for Q4_1/Q5_1 m likewise. */
void mm_panel_tables(const um_matmul_weights *w, int64_t panel, float *tables);
size_t mm_tables_bytes(const um_matmul_weights *w);
void mm_panel_tables_avx2(const um_matmul_weights *w, int64_t panel, float *tables);   /* same, F16C */
/* The AVX-512 kernel's tables: as above except Q4_K, whose 256 floats per super-block are
 * d*sc (128 floats, [sub-block][row]), then the mins as int16 pairs (4 vectors: pair p holds
 * m[2p], m[2p+1] of each row), then dmin (16 floats). */
void mm_panel_tables_avx512(const um_matmul_weights *w, int64_t panel, float *tables);
/* Integer-kernel per-thread scratch: the tables, then the panel unpacked to one byte per
 * weight (16 x n_in bytes; per 256 columns 64 vectors of 4 columns x 16 rows). */
#define MM_INT_SCRATCH(w) (mm_tables_bytes(w) + (size_t)UM_MATMUL_PANEL * (size_t)(w)->n_in)
void mm_unpack_panel_avx512(const um_matmul_weights *w, const uint8_t *panel, uint8_t *out);
void mm_unpack_panel_avx2(const um_matmul_weights *w, const uint8_t *panel, uint8_t *out);
/* The 256-bit kernels' unpacked panel is half-major: rows 0..7 (half 0), then rows 8..15,
 * each n_in * 8 bytes: per 256 columns 64 vectors of 32 bytes (4 columns x 8 rows, byte
 * r * 4 + i = column 4v + i of row 8h + r). A pass of a token block over one half then
 * reads n_in * 8 contiguous bytes (16 KiB for n_in = 2048: it stays in L1 across the token
 * blocks of a panel), not every 64-byte line of the panel for 32 bytes of it. Byte offset
 * of vector v of super-block sb in half h: */
static inline size_t mm_ub_off(int64_t n_in, int64_t sb, int v, int h) {
    return (size_t)h * (size_t)n_in * 8 + (size_t)sb * 2048 + (size_t)v * 32;
}
/* Quantize activations with AVX2 / AVX-512 (identical output to mm_quantize_act). */
void mm_quantize_act_avx2(uint32_t type, const float *x, int64_t n_in, uint8_t *row,
                          size_t off_scale, size_t off_corr);
void mm_quantize_act_avx512(uint32_t type, const float *x, int64_t n_in, uint8_t *row,
                            size_t off_scale, size_t off_corr);

/* The 32-column formats the x86 kernels repack and run on the Q8_0 loop (issue: Q5_0 in
 * Q4_K_M files): Q4_0, Q4_1, Q5_0, Q5_1. Their panel (matmul.c) keeps the file's bytes per
 * weight; each chunk unpacks it to Q8_0 codes (level + 128, one byte per weight, the Q8_0
 * panel's vector order without the scales: 512 bytes per 32 columns) and a d table, so the
 * integer sums are those of the same levels stored as Q8_0. Q4_1/Q5_1 (w = d*level + m) add
 * m x scale*sum(q) per block from the activation row (its float field after the int32s). */
static inline bool mm_q32_type(uint32_t t) {
    return t == UM_TYPE_Q4_0 || t == UM_TYPE_Q4_1 || t == UM_TYPE_Q5_0 || t == UM_TYPE_Q5_1;
}
static inline bool mm_q32_affine(uint32_t t) { return t == UM_TYPE_Q4_1 || t == UM_TYPE_Q5_1; }
static inline bool mm_q32_fifth_bit(uint32_t t) { return t == UM_TYPE_Q5_0 || t == UM_TYPE_Q5_1; }
/* Byte offset of d[16] in a packed 32-column block of these formats (m[16] follows it). */
static inline size_t mm_q32_d_off(uint32_t t) { return mm_q32_fifth_bit(t) ? 320 : 256; }
/* Q8_0 code (level + 128) of a 5-bit or 4-bit code c: Q5_0 c - 16, Q4_0 c - 8, Q4_1/Q5_1 c. */
static inline int mm_q32_code_bias(uint32_t t) {
    return t == UM_TYPE_Q5_0 ? 112 : t == UM_TYPE_Q4_0 ? 120 : 128;
}
/* Unpack one packed panel of these formats (pb) into Q8_0 codes (out, 16 x n_in bytes, vector
 * s of block b at b * 512 + s * 64). Same bytes from both; the reference is in the tests. */
void mm_unpack_q32_avx2(const um_matmul_weights *w, const uint8_t *pb, uint8_t *out);
void mm_unpack_q32_avx512(const um_matmul_weights *w, const uint8_t *pb, uint8_t *out);

/* Repack one panel (16 file rows, row_bytes apart, nb blocks each) of a Q4_K / Q6_K / Q8_0 /
 * mm_q32_type matrix into the layout of matmul.c: the byte-wise reference, and the word-wise
 * version matmul_prepare uses (identical bytes). */
void mm_pack_panel_ref(uint32_t type, const uint8_t *src, size_t row_bytes, int64_t nb, uint8_t *dst);
void mm_pack_panel(uint32_t type, const uint8_t *src, size_t row_bytes, int64_t nb, uint8_t *dst);

/* One chunk of work on one ISA: rows of panel `panel`, tokens [t0, t1). */
typedef void (*mm_chunk_fn)(const mm_job *j, int64_t panel, int64_t t0, int64_t t1, void *ts);

void mm_chunk_avx2(const mm_job *j, int64_t panel, int64_t t0, int64_t t1, void *ts);
void mm_chunk_avxvnni(const mm_job *j, int64_t panel, int64_t t0, int64_t t1, void *ts);
void mm_chunk_avx512(const mm_job *j, int64_t panel, int64_t t0, int64_t t1, void *ts);
void mm_chunk_amx(const mm_job *j, int64_t panel, int64_t t0, int64_t t1, void *ts);
void mm_chunk_amx_emu(const mm_job *j, int64_t panel, int64_t t0, int64_t t1, void *ts);
size_t mm_amx_scratch_bytes(const um_matmul_weights *w);   /* beyond MM_INT_SCRATCH */

/* IQ1/IQ2/IQ3 and TQ weights on the x86 SIMD kernels: the integer path without repacking. Each
 * chunk decodes its panel from the file layout (um_iq_levels) into the unpacked-panel layout
 * of Q6_K (one byte per weight, code = level + 64, so 0 < code < 128 and vpmaddubsw cannot
 * saturate: 2 x 126 x 127 < 32767) and a Q6_K-shaped table (per 16 columns, 16 rows:
 * scale * mult); the activation row carries -64 * sum(q) per 16 (the offset), and the
 * kernel's Q6_K loop does the rest (q6k_block of matmul_k256.h or of matmul_avx512.c; AMX
 * hands these panels to the AVX-512 kernel, as every panel it does not take). */
static inline bool mm_iq_int(const um_matmul_weights *w) {
    const um_kernel k = w->kernel;     /* the x86 SIMD kernels, named: a new kernel opts in */
    return (k == UM_KERNEL_AVX2 || k == UM_KERNEL_AVXVNNI || k == UM_KERNEL_AVX512 || k == UM_KERNEL_AMX ||
            k == UM_KERNEL_AMX_EMU) && um_is_iq_lattice(w->type);
}
/* Offset added to weight codes whose sum the activation row undoes per 16 (Q6_K 32, IQ 64). */
static inline int mm_code_offset(uint32_t type) { return type == UM_TYPE_Q6_K ? 32 : 64; }
/* Decode one full panel of an IQ matrix: tab (n_in floats) and ub (16 x n_in bytes), ub in
 * the 256-bit kernels' half-major layout (mm_ub_off), or with wide in the 512-bit one (per
 * 256 columns 64 vectors of 4 columns x 16 rows, mm_unpack_panel_avx512's order). */
void mm_iq_panel(const um_matmul_weights *w, int64_t panel, float *tab, uint8_t *ub, bool wide);

/* ---------------------------------------------------------------- AArch64 (arch/arm)
 * The integer kernels (dotprod, i8mm) take every quantized weight format on the integer
 * path without repacking: each chunk decodes its 16-row panel from the file layout into
 * signed int8 levels and per-row scale tables (arch/arm/arm_shared.c, layouts in
 * arch/arm/matmul_arm.h). Two shapes:
 *   32-blocks  Q4_0 Q4_1 Q5_0 Q5_1 Q8_0 IQ4_NL: an f32 scale (and min) per 32 columns;
 *              activations quantized per 32 like Q8_0 (act row as mm_quantize_act's Q8_0)
 *   256-blocks Q2_K..Q6_K IQ4_XS and the IQ1-IQ3/TQ lattices: integer sub-block scales (and
 *              mins) per 16 columns under an f32 scale per 256; activations quantized per
 *              256 with int16 sums per 16 (act row as mm_quantize_act's Q6_K)
 * Every other format, F32/F16/BF16 and a partial last panel run the neon float-tile chunk. */
static inline bool mm_arm_blk32(uint32_t t) {
    return t == UM_TYPE_Q4_0 || t == UM_TYPE_Q4_1 || t == UM_TYPE_Q5_0 || t == UM_TYPE_Q5_1 ||
           t == UM_TYPE_Q8_0 || t == UM_TYPE_IQ4_NL;
}
static inline bool mm_arm_int_type(uint32_t t) {
    return mm_arm_blk32(t) || t == UM_TYPE_Q2_K || t == UM_TYPE_Q3_K || t == UM_TYPE_Q4_K ||
           t == UM_TYPE_Q5_K || t == UM_TYPE_Q6_K || t == UM_TYPE_IQ4_XS || um_is_iq_lattice(t);
}
static inline bool mm_arm_int(const um_matmul_weights *w) {
    return (w->kernel == UM_KERNEL_DOTPROD || w->kernel == UM_KERNEL_I8MM) && mm_arm_int_type(w->type);
}
/* Does matmul quantize the activations for these weights (the integer path)? */
static inline bool mm_int_path(const um_matmul_weights *w) {
    return w->packed || mm_iq_int(w) || mm_arm_int(w);
}
/* The format whose activation-row layout (above) the integer path of w uses. */
static inline uint32_t mm_act_type(const um_matmul_weights *w) {
    if (mm_arm_int(w)) return mm_arm_blk32(w->type) ? UM_TYPE_Q8_0 : UM_TYPE_Q6_K;
    return mm_q32_type(w->type) ? UM_TYPE_Q8_0 : w->type;
}
/* Per-thread scratch of the ARM integer kernels: tables, then the decoded panel. */
size_t mm_arm_scratch_bytes(const um_matmul_weights *w);
void mm_chunk_neon(const mm_job *j, int64_t panel, int64_t t0, int64_t t1, void *ts);
void mm_chunk_dotprod(const mm_job *j, int64_t panel, int64_t t0, int64_t t1, void *ts);
void mm_chunk_i8mm(const mm_job *j, int64_t panel, int64_t t0, int64_t t1, void *ts);

/* Quantize one token's activations (n_in floats) into an act row (layout above). */
void mm_quantize_act(uint32_t type, const float *x, int64_t n_in, uint8_t *row,
                     size_t off_scale, size_t off_corr);

#endif
