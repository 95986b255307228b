/*
 * matmul_avx512: 512-bit kernels (AVX-512 F/BW/VL/DQ + VNNI). Called only when
 * matmul_kernel_available(UM_KERNEL_AVX512).
 *
 * Integer panels (Q4_K, Q6_K, Q8_0, Q4_0/Q4_1/Q5_0/Q5_1; layouts in matmul.c): one zmm holds
 * 4 columns of all 16 rows, so one vpdpbusd with a broadcast activation dword advances 16
 * outputs by 4 columns. Q4_K/Q6_K panels are first unpacked to one byte per weight (per
 * thread, per chunk: 16 x n_in bytes, L2-resident), Q4_0..Q5_1 panels to Q8_0 codes for the
 * Q8_0 loop, then every vector serves 8 tokens at a time. Per
 * sub-block the int32 sums are converted once and scaled by the panel's float table
 * (d * sub-block scale); the activation scale is applied once per 256 (K-quants) or 32
 * (Q8_0) columns. Everything else: the float-tile path (16 rows x 256 columns decoded to
 * f32, transposed, then 16 x 12 register blocks of FMAs).
 */
#include <immintrin.h>
#include <string.h>

#include "matmul_impl.h"

#define AI static inline __attribute__((always_inline))
#define UNROLL _Pragma("GCC unroll 16")
#define TB 10                    /* tokens per integer register block: what 32 zmm registers
                                    and the addressing trick below allow */
#define TF 12                    /* tokens per float register block */

/* The hot loops address token u's activation row as p0 + u * s. With one more base
 * (p5 = token 5) and 3s as a second index, x86 scaled addressing reaches tokens 0..9 with
 * 4 general registers (10 separate pointers do not fit and get reloaded from the stack),
 * and the broadcast stays an embedded {1to16} operand (GCC would emit a separate
 * vpbroadcastd). The asm reads activation memory the compiler does not see; it is written
 * before the kernels run (an earlier pool_run) and never during them. */
typedef struct toks {
    const int8_t *p0, *p5;       /* token 0 and token 5 of the block, same offset */
    intptr_t s, s3;              /* row stride and 3 x stride, bytes */
} toks;

#define BC "%{1to16%}, %1, %0"     /* embedded broadcast source, then the two registers */
#define TOK_OP(INSN, POST, acc, w, u, t)                                                                   \
    switch (u) {                                                                                           \
    case 0: __asm__(INSN " (%2)" POST : "+v"(acc) : "v"(w), "r"((t).p0)); break;                           \
    case 1: __asm__(INSN " (%2,%3,1)" POST : "+v"(acc) : "v"(w), "r"((t).p0), "r"((t).s)); break;         \
    case 2: __asm__(INSN " (%2,%3,2)" POST : "+v"(acc) : "v"(w), "r"((t).p0), "r"((t).s)); break;         \
    case 3: __asm__(INSN " (%2,%3,1)" POST : "+v"(acc) : "v"(w), "r"((t).p0), "r"((t).s3)); break;        \
    case 4: __asm__(INSN " (%2,%3,4)" POST : "+v"(acc) : "v"(w), "r"((t).p0), "r"((t).s)); break;         \
    case 5: __asm__(INSN " (%2)" POST : "+v"(acc) : "v"(w), "r"((t).p5)); break;                           \
    case 6: __asm__(INSN " (%2,%3,2)" POST : "+v"(acc) : "v"(w), "r"((t).p0), "r"((t).s3)); break;        \
    case 7: __asm__(INSN " (%2,%3,2)" POST : "+v"(acc) : "v"(w), "r"((t).p5), "r"((t).s)); break;         \
    case 8: __asm__(INSN " (%2,%3,8)" POST : "+v"(acc) : "v"(w), "r"((t).p0), "r"((t).s)); break;         \
    default: __asm__(INSN " (%2,%3,4)" POST : "+v"(acc) : "v"(w), "r"((t).p5), "r"((t).s)); break;        \
    }

/* acc += u8 codes w . s8 activations (4 bytes of token u at byte offset off, broadcast) */
AI __m512i dp_tok(const int u, __m512i acc, __m512i w, toks t, intptr_t off) {
    toks o = { t.p0 + off, t.p5 + off, t.s, t.s3 };
    TOK_OP("vpdpbusd", BC, acc, w, u, o)
    return acc;
}

/* acc += int16 pairs w . the int16 pair of token u at byte offset off (broadcast) */
AI __m512i dpw_tok(const int u, __m512i acc, __m512i w, toks t, intptr_t off) {
    toks o = { t.p0 + off, t.p5 + off, t.s, t.s3 };
    TOK_OP("vpdpwssd", BC, acc, w, u, o)
    return acc;
}

/* the int32 of token u at byte offset off, broadcast */
AI __m512i bcast_tok(const int u, toks t, intptr_t off) {
    toks o = { t.p0 + off, t.p5 + off, t.s, t.s3 };
    __m512i r = _mm512_setzero_si512(), dummy = r;
    TOK_OP("vpbroadcastd", ", %0", r, dummy, u, o)   /* %1 is unused by this form */
    return r;
}

/* v * (the float of token u at byte offset off, broadcast) */
AI __m512 mul_tok(const int u, __m512 v, toks t, intptr_t off) {
    toks o = { t.p0 + off, t.p5 + off, t.s, t.s3 };
    __m512 r = _mm512_setzero_ps();
    TOK_OP("vmulps", BC, r, v, u, o)
    return r;
}

/* acc + v * (the float of token u at byte offset off, broadcast) */
AI __m512 fma_tok(const int u, __m512 acc, __m512 v, toks t, intptr_t off) {
    toks o = { t.p0 + off, t.p5 + off, t.s, t.s3 };
    TOK_OP("vfmadd231ps", BC, acc, v, u, o)
    return acc;
}

AI toks toks_at(const mm_job *j, int64_t t) {
    toks r;
    r.p0 = (const int8_t *)(j->act + (size_t)t * j->act_stride);
    r.s = (intptr_t)j->act_stride;
    r.s3 = 3 * r.s;
    r.p5 = r.p0 + 5 * r.s;
    return r;
}

/* The next panel's prefetch (int_chunk): a slice of it per token block, spread over the
 * block's loop, `step` bytes (whole lines) per super-block (Q8_0: per 32-column block). */
typedef struct pf_slice {
    const uint8_t *p;            /* NULL: nothing to fetch */
    size_t         step;
} pf_slice;

AI void pf_part(pf_slice pf, int64_t i) {
    if (pf.p)
        for (size_t o = 0; o < pf.step; o += 64) _mm_prefetch((const char *)pf.p + (size_t)i * pf.step + o, _MM_HINT_T1);
}

/* ---------------------------------------------------------------- Q4_K */

/* ub: the unpacked panel; tab: its scale tables (mm_panel_tables_avx512); T tokens from t;
 * y: row t, column panel*16. Per super-block and token: the 8 sub-block sums are scaled by
 * d*sc in f32; the mins term sum_j m_j * sum(q_j) is done in integers (4 vpdpwssd on int16
 * pairs, exact) and scaled once by dmin, instead of one f32 FMA per sub-block: on the FMA
 * ports that is 78 instead of 81 operations per 64 vpdpbusd. */
AI void q4k_block(const int T, const bool packed, const uint8_t *ub, const float *tab, int64_t nsb,
                  const mm_job *j, int64_t t, float *y, pf_slice pf) {
    const float *scale[TB];
    UNROLL for (int u = 0; u < T; u++) scale[u] = (const float *)(j->act + (size_t)(t + u) * j->act_stride + j->off_scale);
    toks tk = toks_at(j, t);
    const intptr_t bsum0 = (intptr_t)(j->off_corr + (size_t)(j->w->n_in / 32) * sizeof(float));
    __m512 acc[TB];
    UNROLL for (int u = 0; u < T; u++) acc[u] = _mm512_setzero_ps();
    for (int64_t sb = 0; sb < nsb; sb++) {
        const float *dsc = tab + sb * 256;
        const __m512i *mins = (const __m512i *)(dsc + 128);
        pf_part(pf, sb);
        __m512 asb[TB];
        __m512i is[TB];
        UNROLL for (int u = 0; u < T; u++) asb[u] = _mm512_setzero_ps();
        for (int jj = 0; jj < 8; jj++) {
            size_t k = (size_t)sb * 256 + jj * 32;
            UNROLL for (int u = 0; u < T; u++) is[u] = _mm512_setzero_si512();
            if (packed) {
                /* packed vector s of sub-block jj: columns 4s.. (low nibbles), 16 + 4s.. (high) */
                const uint8_t *qb = ub + sb * 16 * sizeof(um_block_q4_K) + jj * 4 * 64;
                const __m512i m4 = _mm512_set1_epi8(0x0F);
                UNROLL for (int s4 = 0; s4 < 4; s4++) {
                    const __m512i v = _mm512_load_si512(qb + s4 * 64);
                    const __m512i lo = _mm512_and_si512(v, m4), hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), m4);
                    UNROLL for (int u = 0; u < T; u++) is[u] = dp_tok(u, is[u], lo, tk, (intptr_t)(k + s4 * 4));
                    UNROLL for (int u = 0; u < T; u++) is[u] = dp_tok(u, is[u], hi, tk, (intptr_t)(k + 16 + s4 * 4));
                }
            } else {
                const uint8_t *qv = ub + sb * 4096 + jj * 8 * 64;
                UNROLL for (int g = 0; g < 8; g++) {
                    __m512i v = _mm512_load_si512(qv + g * 64);
                    UNROLL for (int u = 0; u < T; u++) is[u] = dp_tok(u, is[u], v, tk, (intptr_t)(k + g * 4));
                }
            }
            __m512 sc = _mm512_loadu_ps(dsc + jj * 16);
            UNROLL for (int u = 0; u < T; u++) asb[u] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(is[u]), sc, asb[u]);
        }
        UNROLL for (int u = 0; u < T; u++) is[u] = _mm512_setzero_si512();
        UNROLL for (int p = 0; p < 4; p++) {
            __m512i mv = _mm512_loadu_si512(mins + p);
            intptr_t bo = bsum0 + (intptr_t)((sb * 8 + 2 * p) * sizeof(int16_t));
            UNROLL for (int u = 0; u < T; u++) is[u] = dpw_tok(u, is[u], mv, tk, bo);
        }
        __m512 dmin = _mm512_loadu_ps(dsc + 192);
        UNROLL for (int u = 0; u < T; u++) {
            asb[u] = _mm512_fnmadd_ps(_mm512_cvtepi32_ps(is[u]), dmin, asb[u]);
            acc[u] = _mm512_fmadd_ps(asb[u], _mm512_set1_ps(scale[u][sb]), acc[u]);
        }
    }
    UNROLL for (int u = 0; u < T; u++) _mm512_storeu_ps(y + (size_t)u * j->w->n_out, acc[u]);
}

/* ---------------------------------------------------------------- Q6_K */

AI void q6k_block(const int T, const bool packed, const uint8_t *ub, const float *tab, int64_t nsb,
                  const mm_job *j, int64_t t, float *y, pf_slice pf) {
    const float *scale[TB];
    UNROLL for (int u = 0; u < T; u++) scale[u] = (const float *)(j->act + (size_t)(t + u) * j->act_stride + j->off_scale);
    toks tk = toks_at(j, t);
    __m512 acc[TB];
    UNROLL for (int u = 0; u < T; u++) acc[u] = _mm512_setzero_ps();
    for (int64_t sb = 0; sb < nsb; sb++) {
        const float *dsc = tab + sb * 256;
        pf_part(pf, sb);
        __m512 asb[TB];
        UNROLL for (int u = 0; u < T; u++) asb[u] = _mm512_setzero_ps();
        for (int jj = 0; jj < 16; jj++) {
            const uint8_t *qv = ub + sb * 4096 + jj * 4 * 64;
            size_t k = (size_t)sb * 256 + jj * 16;
            __m512i is[TB];
            /* starting from -32 * sum(q) undoes the code offset (codes are q + 32) */
            intptr_t co = (intptr_t)(j->off_corr + (sb * 16 + jj) * sizeof(int32_t));
            UNROLL for (int u = 0; u < T; u++) is[u] = bcast_tok(u, tk, co);
            __m512i w[4];
            if (packed) {
                /* the 4 code vectors of sub-block jj from its two packed low-nibble vectors and
                 * its high-bit vector, as mm_unpack_panel_avx512 makes them */
                const uint8_t *qb = ub + sb * 16 * sizeof(um_block_q6_K);
                const __m512i m4 = _mm512_set1_epi8(0x0F), m30 = _mm512_set1_epi8(0x30);
                const __m512i v0 = _mm512_loadu_si512(qb + (jj * 2) * 64), v1 = _mm512_loadu_si512(qb + (jj * 2 + 1) * 64);
                const __m512i hb = _mm512_loadu_si512(qb + 2048 + jj * 64);
                w[0] = _mm512_or_si512(_mm512_and_si512(v0, m4), _mm512_and_si512(_mm512_slli_epi16(hb, 4), m30));
                w[1] = _mm512_or_si512(_mm512_and_si512(v1, m4), _mm512_and_si512(hb, m30));
                w[2] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(v0, 4), m4), _mm512_and_si512(_mm512_slli_epi16(hb, 2), m30));
                w[3] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(v1, 4), m4), _mm512_and_si512(_mm512_srli_epi16(hb, 2), m30));
            } else {
                UNROLL for (int g = 0; g < 4; g++) w[g] = _mm512_load_si512(qv + g * 64);
            }
            UNROLL for (int g = 0; g < 4; g++)
                UNROLL for (int u = 0; u < T; u++) is[u] = dp_tok(u, is[u], w[g], tk, (intptr_t)(k + g * 4));
            __m512 sc = _mm512_loadu_ps(dsc + jj * 16);
            UNROLL for (int u = 0; u < T; u++) asb[u] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(is[u]), sc, asb[u]);
        }
        UNROLL for (int u = 0; u < T; u++) acc[u] = _mm512_fmadd_ps(asb[u], _mm512_set1_ps(scale[u][sb]), acc[u]);
    }
    UNROLL for (int u = 0; u < T; u++) _mm512_storeu_ps(y + (size_t)u * j->w->n_out, acc[u]);
}

/* ---------------------------------------------------------------- Q8_0 */

/* The Q4_0..Q5_1 code source of q8_0_block when it decodes the packed panel itself (direct):
 * whether the format has fifth bits, and its Q8_0 code bias (matmul_impl.h). */
typedef struct q32_src {
    bool    q5;
    __m512i bias;
} q32_src;

/* pb: Q8_0 code vectors, bstride bytes per 32 columns (the packed Q8_0 panel, or the Q4_0..Q5_1
 * panel unpacked to Q8_0 codes), or with direct the packed Q4_0..Q5_1 panel itself, whose code
 * vectors s and s + 4 are made from its vector s as mm_unpack_q32_avx512 makes them (the int32
 * sums are exact in any order: the same bits); affine (Q4_1, Q5_1): plus m (tab + nb * 16) x
 * scale*sum(q), the activation row's float after its int32 corrections. */
AI void q8_0_block(const int T, const bool direct, const bool affine, const uint8_t *pb, size_t bstride, q32_src qs,
                   const float *tab, int64_t nb, const mm_job *j, int64_t t, float *y, pf_slice pf) {
    toks tk = toks_at(j, t);
    const __m512i m4 = _mm512_set1_epi8(0x0F), m10 = _mm512_set1_epi8(0x10);
    __m512 acc[TB];
    UNROLL for (int u = 0; u < T; u++) acc[u] = _mm512_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *qv = pb + (size_t)b * bstride;
        pf_part(pf, b);
        __m512i is[TB];
        /* starting from -128 * sum(q) undoes the code offset (codes are w + 128) */
        intptr_t co = (intptr_t)(j->off_corr + b * sizeof(int32_t)), so = (intptr_t)(j->off_scale + b * sizeof(float));
        UNROLL for (int u = 0; u < T; u++) is[u] = bcast_tok(u, tk, co);
        if (direct) {
            const __m512i hb = qs.q5 ? _mm512_loadu_si512(qv + 256) : _mm512_setzero_si512();
            UNROLL for (int s = 0; s < 4; s++) {
                const __m512i v = _mm512_loadu_si512(qv + s * 64);
                __m512i lo = _mm512_and_si512(v, m4), hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), m4);
                if (qs.q5) {
                    lo = _mm512_or_si512(lo, _mm512_and_si512(_mm512_slli_epi16(hb, 4 - s), m10));
                    hi = _mm512_or_si512(hi, _mm512_and_si512(_mm512_srli_epi16(hb, s), m10));
                }
                lo = _mm512_add_epi8(lo, qs.bias);
                hi = _mm512_add_epi8(hi, qs.bias);
                UNROLL for (int u = 0; u < T; u++) is[u] = dp_tok(u, is[u], lo, tk, (intptr_t)(b * 32 + s * 4));
                UNROLL for (int u = 0; u < T; u++) is[u] = dp_tok(u, is[u], hi, tk, (intptr_t)(b * 32 + 16 + s * 4));
            }
        } else {
            UNROLL for (int s = 0; s < 8; s++) {
                __m512i v = _mm512_loadu_si512(qv + s * 64);
                UNROLL for (int u = 0; u < T; u++) is[u] = dp_tok(u, is[u], v, tk, (intptr_t)(b * 32 + s * 4));
            }
        }
        __m512 d = _mm512_loadu_ps(tab + b * 16);
        UNROLL for (int u = 0; u < T; u++)
            acc[u] = _mm512_fmadd_ps(mul_tok(u, _mm512_cvtepi32_ps(is[u]), tk, so), d, acc[u]);
        if (affine) {
            __m512 m = _mm512_loadu_ps(tab + (nb + b) * 16);
            intptr_t mo = (intptr_t)(j->off_corr + (size_t)(nb + b) * sizeof(float));
            UNROLL for (int u = 0; u < T; u++) acc[u] = fma_tok(u, acc[u], m, tk, mo);
        }
    }
    UNROLL for (int u = 0; u < T; u++) _mm512_storeu_ps(y + (size_t)u * j->w->n_out, acc[u]);
}

/* Q4_K (and Q6_K) straight from the packed panel, not unpacked first, for chunks of at most this many
 * tokens: per 64-byte vector and token block it costs an AND, a shift and an AND on the
 * vector ALUs (not the pipes vpdpbusd needs), where unpacking stores and reloads the panel
 * once per chunk; the few-row products of cached steps and experts gain (issue 30). */
#define Q4K_DIRECT_MAX 64
/* Q6_K's packed codes take 14 vector operations per 4 code vectors (low nibbles, high bits,
 * combined), which pays only for one token block: 1-row experts +67%, 4 rows +31%, 16 rows -9%
 * (Zen 5, one thread, alternating builds) */
#define Q6K_DIRECT_MAX TB
/* Q4_0..Q5_1 from the packed panel (q8_0_block's direct) for chunks of at most this many tokens,
 * else unpacked to Q8_0 codes once per chunk: see docs/matmul.md for the measurements */
#define Q32_DIRECT_MAX (2 * TB)

/* nt is at most the format's block size; the cases above it are never taken */
#define CASES(F, MAX, ...) \
    switch (nt) { \
    case 1: F(1, __VA_ARGS__); break; case 2: F(2, __VA_ARGS__); break; \
    case 3: F(3, __VA_ARGS__); break; case 4: F(4, __VA_ARGS__); break; \
    case 5: F(5, __VA_ARGS__); break; case 6: F(6, __VA_ARGS__); break; \
    case 7: F(7, __VA_ARGS__); break; case 8: F(8, __VA_ARGS__); break; \
    case 9: F(9, __VA_ARGS__); break; case 10: F(10, __VA_ARGS__); break; \
    case 11: if (MAX >= 11) F(11, __VA_ARGS__); break; \
    default: if (MAX >= 12) F(12, __VA_ARGS__); break; }

static void int_chunk(const mm_job *j, int64_t panel, int64_t t0, int64_t t1, float *tab) {
    const um_matmul_weights *w = j->w;
    const bool iq = mm_iq_int(w);           /* decoded like a Q6_K panel, see matmul_impl.h */
    const bool direct = (w->type == UM_TYPE_Q4_K && t1 - t0 <= Q4K_DIRECT_MAX) ||
                        (w->type == UM_TYPE_Q6_K && t1 - t0 <= Q6K_DIRECT_MAX);
    const bool q32 = mm_q32_type(w->type);  /* Q8_0 codes, see matmul_impl.h */
    const bool q32_direct = q32 && t1 - t0 <= Q32_DIRECT_MAX;
    const q32_src qs = { mm_q32_fifth_bit(w->type), _mm512_set1_epi8((char)mm_q32_code_bias(w->type)) };
    const uint8_t *pb = (const uint8_t *)w->data + (size_t)panel * UM_MATMUL_PANEL * w->row_bytes;
    uint8_t *ub = (uint8_t *)tab + mm_tables_bytes(w);
    if (iq) {
        mm_iq_panel(w, panel, tab, ub, true);
    } else if (q32) {
        mm_panel_tables_avx512(w, panel, tab);
        if (!q32_direct) mm_unpack_q32_avx512(w, pb, ub);
    } else {
        mm_panel_tables_avx512(w, panel, tab);
        if (w->type != UM_TYPE_Q8_0 && !direct) mm_unpack_panel_avx512(w, pb, ub);
    }
    int64_t nb = w->n_in / um_type_blck(w->type);
    int tb = TB;
    /* even blocks: 32 tokens run as 4 x 8, not 3 x 10 + 2 */
    int64_t n_blocks = (t1 - t0 + tb - 1) / tb;
    tb = (int)((t1 - t0 + n_blocks - 1) / n_blocks);
    /* Fetch the panel this thread most likely takes next (chunks are handed out in order,
     * one per thread in turn) into L2 while this one computes: a slice per token block, and
     * within the block a part per super-block, so that the loads are in flight all along.
     * With few tokens (2 blocks for 16 rows) the whole slice issued at the start of a block
     * did not hide the memory: spreading it raised Q4_K 4096 -> 12288 at 16 rows from about
     * 170 to 210-290 GMAC/s on a Zen 5 (one thread; docs/perf.md). */
    const int64_t n_full = w->n_out / UM_MATMUL_PANEL, next = panel + j->n_threads;
    const size_t pbytes = UM_MATMUL_PANEL * w->row_bytes;
    const uint8_t *pn = next < n_full && j->n_slabs == 1 ? (const uint8_t *)w->data + (size_t)next * pbytes : NULL;
    const size_t pf_step = ((pbytes + (size_t)n_blocks - 1) / (size_t)n_blocks + 63) & ~(size_t)63;
    size_t pf = 0;
    for (int64_t t = t0; t < t1; t += tb) {
        int nt = (int)UM_MIN(tb, t1 - t);
        float *y = j->y + t * w->n_out + panel * UM_MATMUL_PANEL;
        pf_slice sl = { NULL, 0 };
        if (pn && pf < pbytes) {
            const size_t e = UM_MIN(pf + pf_step, pbytes);
            sl.p = pn + pf;
            sl.step = ((e - pf + (size_t)nb - 1) / (size_t)nb + 63) & ~(size_t)63;
            pf = e;
        }
        if (direct && w->type == UM_TYPE_Q4_K) { CASES(q4k_block, TB, true, pb, tab, nb, j, t, y, sl) }
        else if (w->type == UM_TYPE_Q4_K) { CASES(q4k_block, TB, false, ub, tab, nb, j, t, y, sl) }
        else if (w->type == UM_TYPE_Q6_K && direct) { CASES(q6k_block, TB, true, pb, tab, nb, j, t, y, sl) }
        else if (w->type == UM_TYPE_Q6_K || iq) { CASES(q6k_block, TB, false, ub, tab, nb, j, t, y, sl) }
        else if (q32_direct && mm_q32_affine(w->type)) { CASES(q8_0_block, TB, true, true, pb, 16 * (size_t)um_type_bytes(w->type), qs, tab, nb, j, t, y, sl) }
        else if (q32_direct) { CASES(q8_0_block, TB, true, false, pb, 16 * (size_t)um_type_bytes(w->type), qs, tab, nb, j, t, y, sl) }
        else if (q32 && mm_q32_affine(w->type)) { CASES(q8_0_block, TB, false, true, ub, 512, qs, tab, nb, j, t, y, sl) }
        else if (q32) { CASES(q8_0_block, TB, false, false, ub, 512, qs, tab, nb, j, t, y, sl) }
        else { CASES(q8_0_block, TB, false, false, pb, 16 * sizeof(um_block_q8_0), qs, tab, nb, j, t, y, sl) }
    }
}

/* ---------------------------------------------------------------- float tiles */

/* y[u][0..n_rows) (+)= sum_k x[u][k] * wt[k][r] for T tokens; wt (kc, 16). */
AI void float_block(const int T, const float *wt, int64_t kc, const float *x, int64_t xs,
                    float *y, int64_t ys, __mmask16 m, bool add) {
    __m512 acc[TF];
    UNROLL for (int u = 0; u < T; u++) acc[u] = add ? _mm512_maskz_loadu_ps(m, y + u * ys) : _mm512_setzero_ps();
    for (int64_t k = 0; k < kc; k++) {
        __m512 wv = _mm512_load_ps(wt + k * 16);
        UNROLL for (int u = 0; u < T; u++) acc[u] = _mm512_fmadd_ps(_mm512_set1_ps(x[u * xs + k]), wv, acc[u]);
    }
    UNROLL for (int u = 0; u < T; u++) _mm512_mask_storeu_ps(y + u * ys, m, acc[u]);
}

/* wt (kc, 16) = rows (16, MM_KC) transposed, 16 columns at a time with shuffles (a 16x16
 * transpose in 4 rounds). Gathers did this before and dominated small-canvas products on
 * AMD Zen 4, where vgatherdps is microcoded (about 2/3 of a 2.6M-parameter model's time at
 * 8 tokens). Columns past kc in the last group are loaded as zeros. */
static void transpose_panel(const float *rows, int64_t kc, float *wt) {
    for (int64_t k0 = 0; k0 < kc; k0 += 16) {
        __mmask16 m = kc - k0 >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (kc - k0)) - 1);
        __m512 r[16], t[16];
        UNROLL for (int i = 0; i < 16; i++) r[i] = _mm512_maskz_load_ps(m, rows + (size_t)i * MM_KC + k0);
        /* per 128-bit lane: pairs of rows interleaved */
        UNROLL for (int i = 0; i < 8; i++) {
            t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
            t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
        }
        /* u[4i + j]: rows 4i..4i+3 at column 4l + j of lane l */
        UNROLL for (int i = 0; i < 4; i++) {
            r[4 * i + 0] = _mm512_shuffle_ps(t[4 * i + 0], t[4 * i + 2], 0x44);
            r[4 * i + 1] = _mm512_shuffle_ps(t[4 * i + 0], t[4 * i + 2], 0xEE);
            r[4 * i + 2] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0x44);
            r[4 * i + 3] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0xEE);
        }
        /* gather the four row groups' lanes */
        UNROLL for (int j = 0; j < 4; j++) {
            __m512 w0 = _mm512_shuffle_f32x4(r[j], r[4 + j], 0x88), w1 = _mm512_shuffle_f32x4(r[j], r[4 + j], 0xDD);
            __m512 x0 = _mm512_shuffle_f32x4(r[8 + j], r[12 + j], 0x88), x1 = _mm512_shuffle_f32x4(r[8 + j], r[12 + j], 0xDD);
            t[j] = _mm512_shuffle_f32x4(w0, x0, 0x88);        /* column j */
            t[8 + j] = _mm512_shuffle_f32x4(w0, x0, 0xDD);    /* column 8 + j */
            t[4 + j] = _mm512_shuffle_f32x4(w1, x1, 0x88);    /* column 4 + j */
            t[12 + j] = _mm512_shuffle_f32x4(w1, x1, 0xDD);   /* column 12 + j */
        }
        int64_t nk = UM_MIN(16, kc - k0);
        for (int64_t i = 0; i < nk; i++) _mm512_store_ps(wt + (size_t)(k0 + i) * 16, t[i]);
    }
}

static void float_chunk(const mm_job *j, int64_t panel, int64_t t0, int64_t t1, float *ts) {
    const um_matmul_weights *w = j->w;
    int64_t row0 = panel * UM_MATMUL_PANEL;
    int n_rows = (int)UM_MIN(UM_MATMUL_PANEL, w->n_out - row0);
    __mmask16 m = (__mmask16)((1u << n_rows) - 1);
    float *rows = ts, *wt = ts + UM_MATMUL_PANEL * MM_KC;
    bool fast = w->type == UM_TYPE_F32 || w->type == UM_TYPE_F16 || w->type == UM_TYPE_BF16;
    for (int64_t k0 = 0; k0 < w->n_in; k0 += MM_KC) {
        int64_t kc = UM_MIN(MM_KC, w->n_in - k0);
        if (fast) mm_decode_rows_avx2(w, row0, n_rows, k0, kc, rows);
        else mm_decode_rows_ref(w, row0, n_rows, k0, kc, rows);
        transpose_panel(rows, kc, wt);
        int64_t n_blocks = (t1 - t0 + TF - 1) / TF;   /* even register blocks */
        int bs = (int)((t1 - t0 + n_blocks - 1) / n_blocks);
        for (int64_t t = t0; t < t1; t += bs) {
            int nt = (int)UM_MIN(bs, t1 - t);
            const float *x = j->x + t * w->n_in + k0;
            float *y = j->y + t * w->n_out + row0;
            int64_t xs = w->n_in, ys = w->n_out;
            bool add = k0 > 0;
            switch (nt) {
            case 1: float_block(1, wt, kc, x, xs, y, ys, m, add); break;
            case 2: float_block(2, wt, kc, x, xs, y, ys, m, add); break;
            case 3: float_block(3, wt, kc, x, xs, y, ys, m, add); break;
            case 4: float_block(4, wt, kc, x, xs, y, ys, m, add); break;
            case 5: float_block(5, wt, kc, x, xs, y, ys, m, add); break;
            case 6: float_block(6, wt, kc, x, xs, y, ys, m, add); break;
            case 7: float_block(7, wt, kc, x, xs, y, ys, m, add); break;
            case 8: float_block(8, wt, kc, x, xs, y, ys, m, add); break;
            case 9: float_block(9, wt, kc, x, xs, y, ys, m, add); break;
            case 10: float_block(10, wt, kc, x, xs, y, ys, m, add); break;
            case 11: float_block(11, wt, kc, x, xs, y, ys, m, add); break;
            default: float_block(12, wt, kc, x, xs, y, ys, m, add); break;
            }
        }
    }
}

void mm_chunk_avx512(const mm_job *j, int64_t panel, int64_t t0, int64_t t1, void *ts) {
    const um_matmul_weights *w = j->w;
    if ((w->packed || mm_iq_int(w)) && (panel + 1) * UM_MATMUL_PANEL <= w->n_out) int_chunk(j, panel, t0, t1, ts);
    else float_chunk(j, panel, t0, t1, ts);
}
