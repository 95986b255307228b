/*
 * matmul: Y (n_tokens, n_out) = X (n_tokens, n_in) * W^T for every weight format unmask
 * computes with, on the best kernel the CPU has.
 *
 * A diffusion step multiplies the whole canvas by every weight matrix, so this is GEMM:
 * kernels decode each weight block once and reuse it across a register block of tokens.
 *
 * Kernels (chosen once per matrix at matmul_prepare, from cpu_features() or UNMASK_KERNEL):
 *   ref      scalar: activations quantized with quant.c's reference quantizer to the
 *            format's vec_dot_type, then quant.c's vec_dot_ref per (token, row). Always built.
 *   avx2     256-bit; integer formats with vpmaddubsw/vpmaddwd
 *   avxvnni  256-bit with AVX-VNNI vpdpbusd (UNMASK_KERNEL=avx2 on a VNNI CPU picks this)
 *   avx512   512-bit, AVX-512 VNNI vpdpbusd, f32 FMA for float formats
 *   amx      AMX-INT8 tiles for the repacked formats (others: the avx512 code); chosen
 *            automatically only after matmul_self_test agrees with avx512
 *   amx-emu  the AMX loops and data layout with scalar tile ops (tests only)
 *   neon     AArch64 Advanced SIMD: the float-tile path for every format (f32 FMA)
 *   dotprod  AArch64 SDOT (FEAT_DotProd): the integer path for every quantized format
 *   i8mm     AArch64 SMMLA (FEAT_I8MM): the same with 2x8 by 8x2 int8 tile products
 *            (arch/arm; the ARM kernels decode each panel from the file layout per chunk,
 *            so they never repack, see matmul_impl.h)
 *
 * Layouts. Q4_K, Q6_K, Q8_0, Q4_0, Q4_1, Q5_0 and Q5_1 are repacked at load into panels of
 * 16 rows (see matmul.c for the byte layout) when the caller lends a writable buffer of the
 * same size: resident memory stays the file size. The x86 kernels take the IQ1/IQ2/IQ3/TQ
 * formats on the integer path from the file layout. Every other format, and the repacked
 * ones without a writable buffer, stays in the file's row-major layout and runs the "float
 * tile" path: a panel of 16 rows x 256 columns is decoded to f32 once and multiplied with
 * f32 activations.
 * The panel layout is the same for every SIMD kernel, so w->kernel may be switched among
 * avx2 / avxvnni / avx512 / amx after matmul_prepare (not to or from ref).
 *
 * Invariants: n_in is a multiple of the format's block size; the row-major data is
 * n_out * (n_in / blck * bytes) bytes; y is fully overwritten; matmul never allocates.
 */
#ifndef UM_MATMUL_H
#define UM_MATMUL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pool.h"
#include "util.h"

typedef enum um_kernel {
    UM_KERNEL_AUTO = -1,         /* matmul_prepare: best available (or UNMASK_KERNEL) */
    UM_KERNEL_REF = 0,
    UM_KERNEL_AVX2,
    UM_KERNEL_AVXVNNI,
    UM_KERNEL_AVX512,
    UM_KERNEL_AMX,
    UM_KERNEL_AMX_EMU,
    UM_KERNEL_NEON,
    UM_KERNEL_DOTPROD,
    UM_KERNEL_I8MM,
    UM_KERNEL_COUNT
} um_kernel;

#define UM_MATMUL_PANEL 16       /* rows per repacked panel */

typedef struct um_matmul_weights {
    uint32_t    type;            /* um_type of the weights */
    int64_t     n_in;            /* columns (elements per row) */
    int64_t     n_out;           /* rows */
    size_t      row_bytes;       /* bytes of one row in the file layout */
    const void *data;            /* n_out * row_bytes bytes: panels, then file-layout tail rows */
    bool        packed;          /* rows [0, n_out / 16 * 16) are 16-row panels */
    um_kernel   kernel;          /* the kernel every matmul() on these weights uses */
} um_matmul_weights;

/* Name of a kernel ("ref", "avx2", ...). */
const char *matmul_kernel_name(um_kernel k);
/* Can this CPU run kernel k? */
bool matmul_kernel_available(um_kernel k);
/* The kernel AUTO stands for: UNMASK_KERNEL if set (fails if unknown or the CPU lacks it),
 * else the best available. */
int matmul_kernel_default(um_kernel *out, um_err *e);
/* Does kernel k reproduce the AVX-512 kernel's results on small Q4_K/Q6_K/Q8_0/Q5_0/Q5_1 products?
 * matmul_kernel_default runs it once for AMX before choosing AMX automatically. */
bool matmul_self_test(um_kernel k);
/* Does matmul_prepare repack this type for kernel k (so a writable buffer helps)? */
bool matmul_wants_repack(uint32_t type, um_kernel k);

/* Prepare a weight matrix. data: n_out rows in the file layout (typically the mmap).
 * dst: NULL (use data as is), or a writable buffer of n_out * row_bytes bytes that
 * receives the repacked matrix; dst == data repacks in place. When the type or kernel
 * needs no repacking, dst is still filled (copied) unless it is NULL or equal to data, and
 * w->data points at it. Fails with a message for an unsupported type, a bad shape or a
 * kernel the CPU lacks. */
int matmul_prepare(um_matmul_weights *w, uint32_t type, int64_t n_in, int64_t n_out,
                   const void *data, void *dst, um_kernel kernel, um_err *e);

/* Bytes of scratch a matmul() of n_tokens rows needs with n_threads threads (64-byte
 * aligned buffer). The same scratch may be reused by every call with at most n_tokens. */
size_t matmul_scratch_bytes(const um_matmul_weights *w, int64_t n_tokens, int n_threads);

/* y (n_tokens, n_out) = x (n_tokens, n_in) * W^T. x, y row-major f32; scratch from
 * matmul_scratch_bytes(w, >= n_tokens, pool_threads(p)), 64-byte aligned. */
void matmul(um_pool *p, const um_matmul_weights *w, const float *x, int64_t n_tokens,
            float *y, void *scratch);

/* ---------------------------------------------------------------- mixture of experts
 * Grouped products: every expert's rows of one MoE layer in one pass over the experts'
 * weights. With n_rows = n_x * k "grouped rows" sorted by expert (ops_moe_group: expert e
 * owns rows [off[e], off[e+1])), for each group g and expert e with rows:
 *     g.y[r, :] = in(r) * g.w[e]^T        r in [off[e], off[e+1])
 * where in(r) is x's row t for the (t, c) with slot[t * k + c] == r, or x's row r when slot
 * is NULL (k must then be 1). On the integer kernels each input row is quantized once and
 * copied to its k grouped rows (no float gather), and one pool dispatch runs every
 * (group, expert, panel) chunk: a layer's gate and up products together, then its down
 * product, instead of 2 x n_expert small products each with its own quantizing pass and
 * dispatch. The results are bit-identical to matmul() of each expert on its gathered rows
 * (same quantized bytes, same chunk kernel, per-token sums in the same order); other
 * kernels and formats (ref, the float-tile path, a partial last panel) gather the rows and
 * run exactly that. A group's n_expert matrices share type, shape and kernel; groups
 * computed together share n_in and type (otherwise they run one after the other). */
typedef struct um_matmul_group {
    const um_matmul_weights *w;   /* n_expert matrices */
    float                   *y;   /* (n_x * k, w->n_out) */
} um_matmul_group;

/* Scratch bytes of matmul_grouped over n_x input rows, k choices each, for the matrices
 * like w with n_threads threads (64-byte aligned buffer). */
size_t matmul_grouped_scratch_bytes(const um_matmul_weights *w, int64_t n_x, int k, int n_threads);
void matmul_grouped(um_pool *p, const um_matmul_group *g, int n_g, int n_expert, const int32_t *off,
                    const float *x, int64_t n_x, const int32_t *slot, int k, void *scratch);

#endif
