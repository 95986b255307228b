/*
 * quant: the tensor element types of GGUF/ggml, each block layout declared once.
 *
 * This header is shared by C and CUDA (kernels/): plain structs, fixed-width types,
 * a static_assert on every block size. Type ids are ggml's and never change.
 * Bits per weight are given per block; "d" scales are IEEE half unless noted.
 */
#ifndef UM_QUANT_H
#define UM_QUANT_H

#include <stdint.h>
#include <stddef.h>
#include <stdbool.h>

#ifdef __cplusplus
#define UM_STATIC_ASSERT(c, m) static_assert(c, m)
#else
#include <assert.h>
#define UM_STATIC_ASSERT(c, m) _Static_assert(c, m)
#endif

typedef uint16_t um_half;       /* IEEE fp16 bits */
typedef uint16_t um_bf16;       /* bfloat16 bits */

typedef enum um_type {
    UM_TYPE_F32     = 0,
    UM_TYPE_F16     = 1,
    UM_TYPE_Q4_0    = 2,
    UM_TYPE_Q4_1    = 3,
    /* 4, 5: removed Q4_2, Q4_3 */
    UM_TYPE_Q5_0    = 6,
    UM_TYPE_Q5_1    = 7,
    UM_TYPE_Q8_0    = 8,
    UM_TYPE_Q8_1    = 9,
    UM_TYPE_Q2_K    = 10,
    UM_TYPE_Q3_K    = 11,
    UM_TYPE_Q4_K    = 12,
    UM_TYPE_Q5_K    = 13,
    UM_TYPE_Q6_K    = 14,
    UM_TYPE_Q8_K    = 15,
    UM_TYPE_IQ2_XXS = 16,
    UM_TYPE_IQ2_XS  = 17,
    UM_TYPE_IQ3_XXS = 18,
    UM_TYPE_IQ1_S   = 19,
    UM_TYPE_IQ4_NL  = 20,
    UM_TYPE_IQ3_S   = 21,
    UM_TYPE_IQ2_S   = 22,
    UM_TYPE_IQ4_XS  = 23,
    UM_TYPE_I8      = 24,
    UM_TYPE_I16     = 25,
    UM_TYPE_I32     = 26,
    UM_TYPE_I64     = 27,
    UM_TYPE_F64     = 28,
    UM_TYPE_IQ1_M   = 29,
    UM_TYPE_BF16    = 30,
    /* 31..33: removed Q4_0_4_4, Q4_0_4_8, Q4_0_8_8 */
    UM_TYPE_TQ1_0   = 34,
    UM_TYPE_TQ2_0   = 35,
    /* 36..38: removed IQ4_NL_4_4, IQ4_NL_4_8, IQ4_NL_8_8 */
    UM_TYPE_MXFP4   = 39,
    UM_TYPE_COUNT   = 40
} um_type;

#define UM_QK4_0  32
#define UM_QK4_1  32
#define UM_QK5_0  32
#define UM_QK5_1  32
#define UM_QK8_0  32
#define UM_QK8_1  32
#define UM_QK4_NL 32
#define UM_QK_K   256
#define UM_K_SCALE_SIZE 12

/* 4.5 bpw: x = d * (q - 8) */
typedef struct { um_half d; uint8_t qs[UM_QK4_0 / 2]; } um_block_q4_0;
UM_STATIC_ASSERT(sizeof(um_block_q4_0) == 2 + 16, "q4_0 size");

/* 5 bpw: x = d * q + m */
typedef struct { um_half d, m; uint8_t qs[UM_QK4_1 / 2]; } um_block_q4_1;
UM_STATIC_ASSERT(sizeof(um_block_q4_1) == 4 + 16, "q4_1 size");

/* 5.5 bpw: x = d * (q - 16), 5th bits in qh */
typedef struct { um_half d; uint8_t qh[4]; uint8_t qs[UM_QK5_0 / 2]; } um_block_q5_0;
UM_STATIC_ASSERT(sizeof(um_block_q5_0) == 2 + 4 + 16, "q5_0 size");

/* 6 bpw: x = d * q + m */
typedef struct { um_half d, m; uint8_t qh[4]; uint8_t qs[UM_QK5_1 / 2]; } um_block_q5_1;
UM_STATIC_ASSERT(sizeof(um_block_q5_1) == 4 + 4 + 16, "q5_1 size");

/* 8.5 bpw: x = d * q */
typedef struct { um_half d; int8_t qs[UM_QK8_0]; } um_block_q8_0;
UM_STATIC_ASSERT(sizeof(um_block_q8_0) == 2 + 32, "q8_0 size");

/* 9 bpw: x = d * q, s = d * sum(q) */
typedef struct { um_half d, s; int8_t qs[UM_QK8_1]; } um_block_q8_1;
UM_STATIC_ASSERT(sizeof(um_block_q8_1) == 4 + 32, "q8_1 size");

/* 2.625 bpw: 16 sub-blocks of 16, 4-bit scale and min each */
typedef struct { uint8_t scales[UM_QK_K / 16]; uint8_t qs[UM_QK_K / 4]; um_half d, dmin; } um_block_q2_K;
UM_STATIC_ASSERT(sizeof(um_block_q2_K) == 16 + 64 + 4, "q2_K size");

/* 3.4375 bpw: 16 sub-blocks of 16, 6-bit scales, high bit in hmask */
typedef struct { uint8_t hmask[UM_QK_K / 8]; uint8_t qs[UM_QK_K / 4]; uint8_t scales[12]; um_half d; } um_block_q3_K;
UM_STATIC_ASSERT(sizeof(um_block_q3_K) == 32 + 64 + 12 + 2, "q3_K size");

/* 4.5 bpw: 8 sub-blocks of 32, 6-bit scale and min each */
typedef struct { um_half d, dmin; uint8_t scales[UM_K_SCALE_SIZE]; uint8_t qs[UM_QK_K / 2]; } um_block_q4_K;
UM_STATIC_ASSERT(sizeof(um_block_q4_K) == 4 + 12 + 128, "q4_K size");

/* 5.5 bpw: as q4_K plus a high bit per weight */
typedef struct { um_half d, dmin; uint8_t scales[UM_K_SCALE_SIZE]; uint8_t qh[UM_QK_K / 8]; uint8_t qs[UM_QK_K / 2]; } um_block_q5_K;
UM_STATIC_ASSERT(sizeof(um_block_q5_K) == 4 + 12 + 32 + 128, "q5_K size");

/* 6.5625 bpw: 16 sub-blocks of 16, int8 scales, x = d * scale * (q - 32) */
typedef struct { uint8_t ql[UM_QK_K / 2]; uint8_t qh[UM_QK_K / 4]; int8_t scales[UM_QK_K / 16]; um_half d; } um_block_q6_K;
UM_STATIC_ASSERT(sizeof(um_block_q6_K) == 128 + 64 + 16 + 2, "q6_K size");

/* activation format of the K-quant dots: float scale, 16 partial sums */
typedef struct { float d; int8_t qs[UM_QK_K]; int16_t bsums[UM_QK_K / 16]; } um_block_q8_K;
UM_STATIC_ASSERT(sizeof(um_block_q8_K) == 4 + 256 + 32, "q8_K size");

/* 4.5 bpw: non-linear 4-bit codebook */
typedef struct { um_half d; uint8_t qs[UM_QK4_NL / 2]; } um_block_iq4_nl;
UM_STATIC_ASSERT(sizeof(um_block_iq4_nl) == 2 + 16, "iq4_nl size");

/* 4.25 bpw: codebook, 6-bit sub-block scales */
typedef struct { um_half d; uint16_t scales_h; uint8_t scales_l[UM_QK_K / 64]; uint8_t qs[UM_QK_K / 2]; } um_block_iq4_xs;
UM_STATIC_ASSERT(sizeof(um_block_iq4_xs) == 2 + 2 + 4 + 128, "iq4_xs size");

/* ------------------------------------------------------------------ IQ1/IQ2/IQ3 and ternary
 * Layouts from llama.cpp's ggml/src/ggml-common.h (v0.4.0); the lattice grids their indices
 * point into are in iq_tables.c. Each 256-block has 8 sub-blocks of 32 ("ib32"), each 4
 * groups of 8 weights sharing a grid entry; signs come from ksigns (7 stored bits + parity).
 */

/* 2.0625 bpw: per ib32 two u32: 4 grid indices (8 bits), then 4 x 7 sign bits, 4-bit scale */
typedef struct { um_half d; uint16_t qs[UM_QK_K / 8]; } um_block_iq2_xxs;
UM_STATIC_ASSERT(sizeof(um_block_iq2_xxs) == 2 + 64, "iq2_xxs size");

/* 2.3125 bpw: per group of 8 a u16 (9-bit grid index, 7 sign bits); 4-bit scale per 16 */
typedef struct { um_half d; uint16_t qs[UM_QK_K / 8]; uint8_t scales[UM_QK_K / 32]; } um_block_iq2_xs;
UM_STATIC_ASSERT(sizeof(um_block_iq2_xs) == 2 + 64 + 8, "iq2_xs size");

/* 2.5625 bpw: 10-bit grid index (8 in qs, 2 in qh), 8 explicit sign bits, 4-bit scale per 16 */
typedef struct { um_half d; uint8_t qs[UM_QK_K / 4]; uint8_t qh[UM_QK_K / 32]; uint8_t scales[UM_QK_K / 32]; } um_block_iq2_s;
UM_STATIC_ASSERT(sizeof(um_block_iq2_s) == 2 + 64 + 8 + 8, "iq2_s size");

/* 3.0625 bpw: 8-bit indices of 4-element grid points, then per ib32 a u32 of signs and scale */
typedef struct { um_half d; uint8_t qs[3 * UM_QK_K / 8]; } um_block_iq3_xxs;
UM_STATIC_ASSERT(sizeof(um_block_iq3_xxs) == 2 + 96, "iq3_xxs size");

/* 3.4375 bpw: 9-bit indices of 4-element grid points, 8 explicit sign bits, 4-bit scale per 32 */
typedef struct { um_half d; uint8_t qs[UM_QK_K / 4]; uint8_t qh[UM_QK_K / 32]; uint8_t signs[UM_QK_K / 8];
                 uint8_t scales[UM_QK_K / 64]; } um_block_iq3_s;
UM_STATIC_ASSERT(sizeof(um_block_iq3_s) == 2 + 64 + 8 + 32 + 4, "iq3_s size");

/* 1.5625 bpw: 11-bit grid index (levels -1/0/1) per 8; per ib32 in qh: 3 high index bits x 4,
 * 3-bit scale, sign of the +-1/8 shift */
typedef struct { um_half d; uint8_t qs[UM_QK_K / 8]; uint16_t qh[UM_QK_K / 32]; } um_block_iq1_s;
UM_STATIC_ASSERT(sizeof(um_block_iq1_s) == 2 + 32 + 16, "iq1_s size");

/* 1.75 bpw: as iq1_s with a shift sign per 8 and 3-bit scales per 16; the fp16 block scale is
 * scattered over the top nibbles of the four u16 of scales (um_iq1_m_d) */
typedef struct { uint8_t qs[UM_QK_K / 8]; uint8_t qh[UM_QK_K / 16]; uint8_t scales[UM_QK_K / 32]; } um_block_iq1_m;
UM_STATIC_ASSERT(sizeof(um_block_iq1_m) == 32 + 16 + 8, "iq1_m size");

/* 1.6875 bpw ternary: 5 trits per byte in qs (240 weights), 4 per byte in qh (16 weights) */
typedef struct { uint8_t qs[(UM_QK_K - 4 * UM_QK_K / 64) / 5]; uint8_t qh[UM_QK_K / 64]; um_half d; } um_block_tq1_0;
UM_STATIC_ASSERT(sizeof(um_block_tq1_0) == 48 + 4 + 2, "tq1_0 size");

/* 2.0625 bpw ternary: 2 bits per weight, x = d * (q - 1) */
typedef struct { uint8_t qs[UM_QK_K / 4]; um_half d; } um_block_tq2_0;
UM_STATIC_ASSERT(sizeof(um_block_tq2_0) == 64 + 2, "tq2_0 size");

#define UM_IQ1S_NGRID 2048
#define UM_IQ1S_DELTA 0.125f     /* the +-1/8 shift of IQ1_S / IQ1_M levels */

/* The format tables (iq_tables.c, verbatim from llama.cpp's ggml-common.h). */
extern const uint8_t  um_kmask_iq2xs[8];
extern const uint8_t  um_ksigns_iq2xs[128];        /* 7 sign bits -> 8 with even parity */
extern const uint64_t um_iq2xxs_grid[256];
extern const uint64_t um_iq2xs_grid[512];
extern const uint64_t um_iq2s_grid[1024];
extern const uint32_t um_iq3xxs_grid[256];
extern const uint32_t um_iq3s_grid[512];
extern const uint64_t um_iq1s_grid[UM_IQ1S_NGRID];

/* IQ1_M: the fp16 bits of the block scale, 4 bits from the top of each scales u16. */
static inline um_half um_iq1_m_d(const um_block_iq1_m *b) {
    uint16_t sc[4];
    for (int i = 0; i < 4; i++) sc[i] = (uint16_t)(b->scales[2 * i] | (b->scales[2 * i + 1] << 8));
    return (um_half)((sc[0] >> 12) | ((sc[1] >> 8) & 0x00f0) | ((sc[2] >> 4) & 0x0f00) | (sc[3] & 0xf000));
}

/* Size facts for every ggml type id, including those unmask cannot compute with, so the
 * GGUF reader can validate any file. blck == 0 marks an id that is not a type. */
typedef struct um_type_size {
    const char *name;           /* ggml's name, e.g. "q4_K" */
    uint32_t    blck;           /* elements per block */
    uint32_t    bytes;          /* bytes per block */
} um_type_size;

extern const um_type_size um_type_sizes[UM_TYPE_COUNT];

/* NULL-safe helpers; return 0 / "?" for ids that are not types. */
static inline uint32_t um_type_blck(uint32_t t)  { return t < UM_TYPE_COUNT ? um_type_sizes[t].blck : 0; }
static inline uint32_t um_type_bytes(uint32_t t) { return t < UM_TYPE_COUNT ? um_type_sizes[t].bytes : 0; }
const char *um_type_name(uint32_t t);
/* Parse a ggml type name (case-insensitive, "q4_k" == "Q4_K"); -1 if unknown. */
int um_type_from_name(const char *name);

/* ------------------------------------------------------------------ traits
 * One row per type unmask can compute with (quant.c). Reference functions are scalar,
 * portable and bit-exact with llama.cpp's; fast paths live in matmul_*.c and are tested
 * against these. n is always a multiple of the type's block size.
 */
typedef void (*um_to_float_fn)(const void *blocks, float *out, int64_t n);
typedef void (*um_from_float_fn)(const float *in, void *blocks, int64_t n);
/* Dot product of n weights (this type) with n activations (vec_dot_type), scalar reference. */
typedef float (*um_vec_dot_fn)(const void *w, const void *act, int64_t n);

typedef struct um_type_traits {
    um_type          type;
    const char      *name;
    uint32_t         blck;            /* elements per block */
    uint32_t         bytes;           /* bytes per block */
    um_to_float_fn   to_float_ref;    /* reference dequantizer (bit-exact with llama.cpp) */
    um_from_float_fn from_float_ref;  /* round-to-nearest quantizer, NULL if none */
    um_vec_dot_fn    vec_dot_ref;     /* scalar dot against vec_dot_type, NULL if none */
    um_type          vec_dot_type;    /* activation format it pairs with (Q8_0, Q8_K, F32, BF16...) */
    bool             is_quantized;    /* block format (not a plain float type) */
    bool             is_activation;   /* only used for activations (Q8_1, Q8_K): never a weight */
} um_type_traits;

/* NULL when unmask cannot compute with type t (the GGUF reader still knows its size). */
const um_type_traits *um_traits(uint32_t t);

/* Bytes of one row of n elements of type t; 0 if t is not a type or n is not a whole
 * number of blocks. */
uint64_t um_row_size(uint32_t t, int64_t n);

/* ------------------------------------------------------------------ shared unpacking
 * Small pure helpers for the packed scale fields, so every kernel (C or CUDA) decodes
 * them the same way as the reference.
 */

/* Q4_K / Q5_K: 6-bit scale and min of sub-block j (0..7) from the 12 packed bytes. */
static inline void um_k4_scale_min(int j, const uint8_t *q, uint8_t *sc, uint8_t *m) {
    if (j < 4) {
        *sc = q[j] & 63;
        *m  = q[j + 4] & 63;
    } else {
        *sc = (uint8_t)((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
        *m  = (uint8_t)((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
    }
}

/* Q3_K: signed scale (-32..31) of sub-block j (0..15) from the 12 packed bytes. */
static inline int um_q3_K_scale(int j, const uint8_t *s) {
    int lo = j < 8 ? (s[j] & 0xF) : (s[j - 8] >> 4);
    int hi = (s[8 + j % 4] >> (2 * (j / 4))) & 3;
    return (lo | (hi << 4)) - 32;
}

/* IQ4_XS: signed scale (-32..31) of sub-block ib (0..7). */
static inline int um_iq4_xs_scale(int ib, const um_block_iq4_xs *b) {
    int lo = (b->scales_l[ib / 2] >> (4 * (ib % 2))) & 0xF;
    int hi = (b->scales_h >> (2 * ib)) & 3;
    return (lo | (hi << 4)) - 32;
}

/* The IQ4_NL / IQ4_XS codebook: 4-bit index -> int8 level. */
extern const int8_t um_iq4nl_values[16];

/* The lattice and ternary formats (IQ2_XXS..IQ1_M, TQ1_0, TQ2_0) in integer form: block =
 * scale * sum over 16-element groups g of mult[g] * q (q in element order, |q| <= 62, mult
 * odd <= 31). Equal to the reference dequantizer up to float rounding; what int8 kernels use.
 * Returns -1 (and writes nothing) for any other type. */
int um_iq_levels(uint32_t type, const void *block, int8_t q[UM_QK_K], uint8_t mult[UM_QK_K / 16], float *scale);
static inline bool um_is_iq_lattice(uint32_t t) {
    return t == UM_TYPE_IQ2_XXS || t == UM_TYPE_IQ2_XS || t == UM_TYPE_IQ2_S || t == UM_TYPE_IQ3_XXS ||
           t == UM_TYPE_IQ3_S || t == UM_TYPE_IQ1_S || t == UM_TYPE_IQ1_M || t == UM_TYPE_TQ1_0 || t == UM_TYPE_TQ2_0;
}

/* Activation quantizers (reference, bit-exact with llama.cpp's quantize_row_*_ref). */
void um_quantize_q8_0(const float *x, um_block_q8_0 *y, int64_t n);
void um_quantize_q8_1(const float *x, um_block_q8_1 *y, int64_t n);
void um_quantize_q8_K(const float *x, um_block_q8_K *y, int64_t n);
#endif
