/*
 * matmul_shared: what the matmul dispatcher (matmul.c) and every SIMD kernel both use, kept
 * below them so that no kernel calls back into the dispatcher: panel repacking (layouts in
 * matmul.c's header comment), the per-panel scale tables, the reference activation
 * quantizer and the reference float-tile row decoder.
 */
#include "matmul.h"
#include "matmul_impl.h"

#include <math.h>
#include <string.h>

/* ================================================================ repacking */

static inline uint16_t rd16(const uint8_t *p) { uint16_t v; memcpy(&v, p, 2); return v; }

/* The 256 unsigned codes of a Q4_K block (0..15), in column order. */
static void q4k_codes(const um_block_q4_K *b, uint8_t *c) {
    for (int h = 0; h < 4; h++)
        for (int l = 0; l < 32; l++) {
            c[h * 64 + l] = b->qs[h * 32 + l] & 15;
            c[h * 64 + 32 + l] = b->qs[h * 32 + l] >> 4;
        }
}

/* The 256 unsigned codes of a Q6_K block (0..63), in column order. */
static void q6k_codes(const um_block_q6_K *b, uint8_t *c) {
    for (int n = 0; n < 2; n++) {
        const uint8_t *ql = b->ql + n * 64, *qh = b->qh + n * 32;
        uint8_t *o = c + n * 128;
        for (int l = 0; l < 32; l++) {
            o[l]      = (uint8_t)((ql[l] & 15)      | ((qh[l] >> 0) & 3) << 4);
            o[l + 32] = (uint8_t)((ql[l + 32] & 15) | ((qh[l] >> 2) & 3) << 4);
            o[l + 64] = (uint8_t)((ql[l] >> 4)      | ((qh[l] >> 4) & 3) << 4);
            o[l + 96] = (uint8_t)((ql[l + 32] >> 4) | ((qh[l] >> 6) & 3) << 4);
        }
    }
}

/* The fields of a Q4_0 / Q4_1 / Q5_0 / Q5_1 file block (quant.h's structs). */
typedef struct q32_fields {
    const uint8_t *d, *m;        /* f16; m NULL for Q4_0 / Q5_0 */
    const uint8_t *qh;           /* 32 fifth bits, bit j = column j; NULL for Q4_x */
    const uint8_t *qs;           /* 16 bytes: column j low nibble, column j + 16 high */
} q32_fields;

static q32_fields q32_block(uint32_t type, const uint8_t *blk) {
    q32_fields f = { blk, NULL, NULL, NULL };
    switch (type) {
    case UM_TYPE_Q4_0: f.qs = ((const um_block_q4_0 *)blk)->qs; break;
    case UM_TYPE_Q4_1: f.m = blk + 2; f.qs = ((const um_block_q4_1 *)blk)->qs; break;
    case UM_TYPE_Q5_0: f.qh = ((const um_block_q5_0 *)blk)->qh; f.qs = ((const um_block_q5_0 *)blk)->qs; break;
    default:           f.m = blk + 2; f.qh = ((const um_block_q5_1 *)blk)->qh; f.qs = ((const um_block_q5_1 *)blk)->qs; break;
    }
    return f;
}

/* One panel: 16 file rows (src, row_bytes apart) -> packed bytes (dst), nb blocks each.
 * The reference: one byte at a time, straight from the layout comment above. */
void mm_pack_panel_ref(uint32_t type, const uint8_t *src, size_t row_bytes, int64_t nb, uint8_t *dst) {
    uint8_t c[256];
    for (int64_t b = 0; b < nb; b++) {
        if (type == UM_TYPE_Q4_K) {
            uint8_t *o = dst + b * 16 * sizeof(um_block_q4_K);
            for (int r = 0; r < 16; r++) {
                const um_block_q4_K *blk = (const um_block_q4_K *)(src + r * row_bytes) + b;
                q4k_codes(blk, c);
                for (int j = 0; j < 8; j++)
                    for (int s = 0; s < 4; s++)
                        for (int i = 0; i < 4; i++) {
                            int k = j * 32 + s * 4 + i;
                            o[(j * 4 + s) * 64 + r * 4 + i] = (uint8_t)(c[k] | c[k + 16] << 4);
                        }
                memcpy(o + 2048 + r * 2, &blk->d, 2);
                memcpy(o + 2080 + r * 2, &blk->dmin, 2);
                for (int b2 = 0; b2 < 12; b2++) o[2112 + b2 * 16 + r] = blk->scales[b2];
            }
        } else if (type == UM_TYPE_Q6_K) {
            uint8_t *o = dst + b * 16 * sizeof(um_block_q6_K);
            for (int r = 0; r < 16; r++) {
                const um_block_q6_K *blk = (const um_block_q6_K *)(src + r * row_bytes) + b;
                q6k_codes(blk, c);
                for (int j = 0; j < 16; j++)
                    for (int i = 0; i < 4; i++) {
                        uint8_t hb = 0;
                        for (int s = 0; s < 2; s++) {
                            int k = j * 16 + s * 4 + i;
                            int lo = c[k], hi = c[k + 8];
                            o[(j * 2 + s) * 64 + r * 4 + i] = (uint8_t)((lo & 15) | (hi & 15) << 4);
                            hb |= (uint8_t)((lo >> 4) << (2 * (s * 2 + 0)) | (hi >> 4) << (2 * (s * 2 + 1)));
                        }
                        o[2048 + j * 64 + r * 4 + i] = hb;
                    }
                for (int j = 0; j < 16; j++) o[3072 + j * 16 + r] = (uint8_t)blk->scales[j];
                memcpy(o + 3328 + r * 2, &blk->d, 2);
            }
        } else if (mm_q32_type(type)) {
            const size_t bb = um_type_bytes(type), doff = mm_q32_d_off(type);
            uint8_t *o = dst + b * 16 * bb;
            for (int r = 0; r < 16; r++) {
                q32_fields f = q32_block(type, src + r * row_bytes + b * bb);
                for (int s = 0; s < 4; s++)
                    for (int i = 0; i < 4; i++) o[s * 64 + r * 4 + i] = f.qs[s * 4 + i];
                if (f.qh)
                    for (int i = 0; i < 4; i++) {
                        uint8_t hb = 0;
                        for (int g = 0; g < 8; g++) {
                            int k = g * 4 + i;
                            hb |= (uint8_t)(((f.qh[k / 8] >> (k % 8)) & 1) << g);
                        }
                        o[256 + r * 4 + i] = hb;
                    }
                memcpy(o + doff + r * 2, f.d, 2);
                if (f.m) memcpy(o + doff + 32 + r * 2, f.m, 2);
            }
        } else { /* Q8_0 */
            uint8_t *o = dst + b * 16 * sizeof(um_block_q8_0);
            for (int r = 0; r < 16; r++) {
                const um_block_q8_0 *blk = (const um_block_q8_0 *)(src + r * row_bytes) + b;
                for (int s = 0; s < 8; s++)
                    for (int i = 0; i < 4; i++)
                        o[s * 64 + r * 4 + i] = (uint8_t)blk->qs[s * 4 + i] ^ 0x80;
                memcpy(o + 512 + r * 2, &blk->d, 2);
            }
        }
    }
}

static inline uint64_t ld64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return v; }
static inline uint32_t ld32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static inline void st32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }

/* mm_pack_panel_ref with whole words: every 4-byte group of a packed vector is one row's 4
 * consecutive columns, so it is built in a register and stored at once (GGUF and x86 are
 * little-endian: byte k of a loaded word is the k-th byte in memory). Same bytes, tested;
 * loading an 8B-shape file spent most of its preparation time in the byte-wise version. */
void mm_pack_panel(uint32_t type, const uint8_t *src, size_t row_bytes, int64_t nb, uint8_t *dst) {
    const uint64_t m0f = 0x0F0F0F0F0F0F0F0Full, mf0 = 0xF0F0F0F0F0F0F0F0ull;
    for (int64_t b = 0; b < nb; b++) {
        if (type == UM_TYPE_Q4_K) {
            uint8_t *o = dst + b * 16 * sizeof(um_block_q4_K);
            for (int r = 0; r < 16; r++) {
                const um_block_q4_K *blk = (const um_block_q4_K *)(src + r * row_bytes) + b;
                /* qs[h*32 + t]: low nibble column h*64 + t, high nibble column h*64 + 32 + t;
                 * packed byte of sub-block j, column t < 16: code(j*32 + t) | code(j*32 + 16 + t) << 4 */
                for (int h = 0; h < 4; h++)
                    for (int t0 = 0; t0 < 16; t0 += 8) {
                        uint64_t L = ld64(blk->qs + h * 32 + t0), H = ld64(blk->qs + h * 32 + 16 + t0);
                        uint64_t ev = (L & m0f) | (H & m0f) << 4, od = (L >> 4 & m0f) | (H & mf0);
                        uint8_t *oe = o + ((2 * h) * 4 + t0 / 4) * 64 + r * 4, *oo = o + ((2 * h + 1) * 4 + t0 / 4) * 64 + r * 4;
                        st32(oe, (uint32_t)ev);
                        st32(oe + 64, (uint32_t)(ev >> 32));
                        st32(oo, (uint32_t)od);
                        st32(oo + 64, (uint32_t)(od >> 32));
                    }
                memcpy(o + 2048 + r * 2, &blk->d, 2);
                memcpy(o + 2080 + r * 2, &blk->dmin, 2);
                for (int b2 = 0; b2 < 12; b2++) o[2112 + b2 * 16 + r] = blk->scales[b2];
            }
        } else if (type == UM_TYPE_Q6_K) {
            uint8_t *o = dst + b * 16 * sizeof(um_block_q6_K);
            const uint64_t m03 = 0x0303030303030303ull;
            for (int r = 0; r < 16; r++) {
                const um_block_q6_K *blk = (const um_block_q6_K *)(src + r * row_bytes) + b;
                /* sub-block j (16 columns) lies in half n = j/8, 32-column group g = (j%8)/2 at
                 * l0 = (j%2)*16: low 4 bits in ql[n*64 + (g&1)*32 + l] (high nibble when g >= 2),
                 * high 2 bits at bit 2g of qh[n*32 + l] (q6k_codes spells it out) */
                for (int j = 0; j < 16; j++) {
                    int n = j / 8, g = (j % 8) / 2, l0 = (j % 2) * 16, sh = 4 * (g >> 1);
                    const uint8_t *ql = blk->ql + n * 64 + (g & 1) * 32 + l0, *qh = blk->qh + n * 32 + l0;
                    uint64_t A = ld64(ql) >> sh & m0f, B = ld64(ql + 8) >> sh & m0f;
                    uint64_t X = (ld64(qh) >> (2 * g) & m03) | (ld64(qh + 8) >> (2 * g) & m03) << 2;
                    uint64_t P = A | B << 4;     /* byte k: code(k) low bits | code(k + 8) low bits << 4 */
                    st32(o + (j * 2) * 64 + r * 4, (uint32_t)P);
                    st32(o + (j * 2 + 1) * 64 + r * 4, (uint32_t)(P >> 32));
                    st32(o + 2048 + j * 64 + r * 4, (uint32_t)X | (uint32_t)(X >> 32) << 4);
                }
                for (int j = 0; j < 16; j++) o[3072 + j * 16 + r] = (uint8_t)blk->scales[j];
                memcpy(o + 3328 + r * 2, &blk->d, 2);
            }
        } else if (mm_q32_type(type)) {
            const size_t bb = um_type_bytes(type), doff = mm_q32_d_off(type);
            uint8_t *o = dst + b * 16 * bb;
            for (int r = 0; r < 16; r++) {
                q32_fields f = q32_block(type, src + r * row_bytes + b * bb);
                for (int s2 = 0; s2 < 4; s2++) st32(o + s2 * 64 + r * 4, ld32(f.qs + s2 * 4));
                if (f.qh) {
                    /* byte i, bit g = bit 4g + i of qh: gather bits i, i+4, .., i+28 to 0..7 */
                    const uint32_t qh = ld32(f.qh);
                    uint32_t hb = 0;
                    for (int i = 0; i < 4; i++) {
                        uint32_t x = (qh >> i) & 0x11111111u;
                        x = (x | x >> 3) & 0x03030303u;
                        x = (x | x >> 6) & 0x000F000Fu;
                        x = (x | x >> 12) & 0xFFu;
                        hb |= x << (8 * i);
                    }
                    st32(o + 256 + r * 4, hb);
                }
                memcpy(o + doff + r * 2, f.d, 2);
                if (f.m) memcpy(o + doff + 32 + r * 2, f.m, 2);
            }
        } else { /* Q8_0 */
            uint8_t *o = dst + b * 16 * sizeof(um_block_q8_0);
            for (int r = 0; r < 16; r++) {
                const um_block_q8_0 *blk = (const um_block_q8_0 *)(src + r * row_bytes) + b;
                for (int s2 = 0; s2 < 8; s2++) st32(o + s2 * 64 + r * 4, ld32((const uint8_t *)blk->qs + s2 * 4) ^ 0x80808080u);
                memcpy(o + 512 + r * 2, &blk->d, 2);
            }
        }
    }
}

/* ================================================================ panel scale tables */

size_t mm_tables_bytes(const um_matmul_weights *w) {
    if (!w->packed && !mm_iq_int(w)) return 0;
    return (size_t)w->n_in * sizeof(float);   /* Q8_0 needs half of it */
}

/* Q4_K per 256 columns: dsc[8][16] = d * sc, then dmm[8][16] = dmin * m.
 * Q6_K per 256 columns: dsc[16][16] = d * sc.   Q8_0 per 32 columns: d[16].
 * Q4_0 Q4_1 Q5_0 Q5_1: d[16] per 32 columns as Q8_0, then (Q4_1, Q5_1) m[16] per 32 columns
 * from t + n_in / 2.
 * Loops run over the 16 rows innermost on contiguous bytes so they vectorize. */
void mm_panel_tables(const um_matmul_weights *w, int64_t panel, float *t) {
    const uint8_t *base = (const uint8_t *)w->data + panel * UM_MATMUL_PANEL * w->row_bytes;
    int64_t nb = w->n_in / um_type_blck(w->type);
    float d[16], dm[16];
    for (int64_t b = 0; b < nb; b++) {
        if (w->type == UM_TYPE_Q4_K) {
            const uint8_t *o = base + b * 16 * sizeof(um_block_q4_K), *q = o + 2112;
            float *dsc = t + b * 256, *dmm = dsc + 128;
            for (int r = 0; r < 16; r++) {
                d[r] = um_fp16_to_fp32(rd16(o + 2048 + r * 2));
                dm[r] = um_fp16_to_fp32(rd16(o + 2080 + r * 2));
            }
            for (int j = 0; j < 4; j++)
                for (int r = 0; r < 16; r++) {
                    dsc[j * 16 + r] = d[r] * (float)(q[j * 16 + r] & 63);
                    dmm[j * 16 + r] = dm[r] * (float)(q[(j + 4) * 16 + r] & 63);
                }
            for (int j = 4; j < 8; j++)
                for (int r = 0; r < 16; r++) {
                    int sc = (q[(j + 4) * 16 + r] & 0xF) | ((q[(j - 4) * 16 + r] >> 6) << 4);
                    int m = (q[(j + 4) * 16 + r] >> 4) | ((q[j * 16 + r] >> 6) << 4);
                    dsc[j * 16 + r] = d[r] * (float)sc;
                    dmm[j * 16 + r] = dm[r] * (float)m;
                }
        } else if (w->type == UM_TYPE_Q6_K) {
            const uint8_t *o = base + b * 16 * sizeof(um_block_q6_K);
            float *dsc = t + b * 256;
            for (int r = 0; r < 16; r++) d[r] = um_fp16_to_fp32(rd16(o + 3328 + r * 2));
            for (int j = 0; j < 16; j++)
                for (int r = 0; r < 16; r++) dsc[j * 16 + r] = d[r] * (float)(int8_t)o[3072 + j * 16 + r];
        } else if (mm_q32_type(w->type)) {
            const uint8_t *o = base + b * 16 * um_type_bytes(w->type) + mm_q32_d_off(w->type);
            for (int r = 0; r < 16; r++) t[b * 16 + r] = um_fp16_to_fp32(rd16(o + r * 2));
            if (mm_q32_affine(w->type))
                for (int r = 0; r < 16; r++) t[nb * 16 + b * 16 + r] = um_fp16_to_fp32(rd16(o + 32 + r * 2));
        } else {
            const uint8_t *o = base + b * 16 * sizeof(um_block_q8_0);
            for (int r = 0; r < 16; r++) t[b * 16 + r] = um_fp16_to_fp32(rd16(o + 512 + r * 2));
        }
    }
}

/* ================================================================ IQ panels */

void mm_iq_panel(const um_matmul_weights *w, int64_t panel, float *tab, uint8_t *ub, bool wide) {
    const uint32_t bytes = um_type_bytes(w->type);
    int8_t q[256];
    uint8_t mult[16];
    float scale;
    for (int r = 0; r < UM_MATMUL_PANEL; r++) {
        const uint8_t *row = (const uint8_t *)w->data + (size_t)(panel * UM_MATMUL_PANEL + r) * w->row_bytes;
        for (int64_t sb = 0; sb < w->n_in / 256; sb++) {
            um_iq_levels(w->type, row + sb * bytes, q, mult, &scale);
            for (int jj = 0; jj < 16; jj++) tab[sb * 256 + jj * 16 + r] = scale * (float)mult[jj];
            /* column c: vector c / 4 of half r / 8 (mm_ub_off), byte (r % 8) * 4 + c % 4; or
             * (wide) vector c / 4 of the super-block's 64, byte r * 4 + c % 4 */
            uint8_t *o = wide ? ub + sb * 4096 + r * 4 : ub + mm_ub_off(w->n_in, sb, 0, r / 8) + (r % 8) * 4;
            const size_t vstep = wide ? 64 : 32;
            for (int c = 0; c < 256; c += 4) {
                /* q + 64 in each byte, no carry between bytes (|q| <= 62) */
                uint32_t x;
                memcpy(&x, q + c, 4);
                x = ((x & 0x7F7F7F7Fu) + 0x40404040u) ^ (x & 0x80808080u);
                memcpy(o + (c / 4) * vstep, &x, 4);
            }
        }
    }
}

/* ================================================================ activations */

/* Round to nearest, ties to even (the float magic-number trick, valid for |v| < 2^22). */
static inline int round_i(float v) {
    float f = v + 12582912.f;
    int32_t i;
    memcpy(&i, &f, 4);
    return (i & 0x007fffff) - 0x00400000;
}

void mm_quantize_act(uint32_t type, const float *x, int64_t n_in, uint8_t *row,
                     size_t off_scale, size_t off_corr) {
    int8_t *q = (int8_t *)row;
    float *scale = (float *)(row + off_scale);
    int blk = type == UM_TYPE_Q8_0 ? 32 : 256;
    for (int64_t b = 0; b < n_in / blk; b++) {
        const float *xb = x + b * blk;
        int8_t *qb = q + b * blk;
        float amax = 0;
        for (int i = 0; i < blk; i++) amax = fmaxf(amax, fabsf(xb[i]));
        float d = amax / 127.f, id = amax > 0 ? 127.f / amax : 0.f;
        for (int i = 0; i < blk; i++) {
            int v = round_i(xb[i] * id);
            qb[i] = (int8_t)(v > 127 ? 127 : v < -127 ? -127 : v);
        }
        scale[b] = d;
        if (type == UM_TYPE_Q4_K) {
            float *corr = (float *)(row + off_corr) + b * 8;
            int16_t *bsum = (int16_t *)(row + off_corr + (size_t)(n_in / 32) * sizeof(float)) + b * 8;
            for (int j = 0; j < 8; j++) {
                int s = 0;
                for (int i = 0; i < 32; i++) s += qb[j * 32 + i];
                corr[j] = d * (float)s;
                bsum[j] = (int16_t)s;      /* |s| <= 32 * 127 */
            }
        } else if (type == UM_TYPE_Q6_K || um_is_iq_lattice(type)) {
            int32_t *corr = (int32_t *)(row + off_corr) + b * 16;
            int16_t *bsum = (int16_t *)(row + off_corr + (size_t)(n_in / 16) * sizeof(int32_t)) + b * 16;
            for (int j = 0; j < 16; j++) {
                int s = 0;
                for (int i = 0; i < 16; i++) s += qb[j * 16 + i];
                corr[j] = -mm_code_offset(type) * s;
                if (type == UM_TYPE_Q6_K) bsum[j] = (int16_t)s;      /* |s| <= 16 * 127 */
            }
        } else {
            int s = 0;
            for (int i = 0; i < 32; i++) s += qb[i];
            ((int32_t *)(row + off_corr))[b] = -128 * s;
            ((float *)(row + off_corr + (size_t)(n_in / 32) * sizeof(int32_t)))[b] = d * (float)s;
        }
    }
}

/* ================================================================ float-tile decode */

void mm_decode_rows_ref(const um_matmul_weights *w, int64_t row0, int n_rows, int64_t k0,
                        int64_t kc, float *out) {
    const um_type_traits *tr = um_traits(w->type);
    uint32_t blck = um_type_blck(w->type), bytes = um_type_bytes(w->type);
    for (int r = 0; r < UM_MATMUL_PANEL; r++) {
        float *o = out + (size_t)r * MM_KC;
        if (r >= n_rows) { memset(o, 0, (size_t)kc * sizeof(float)); continue; }
        const uint8_t *row = (const uint8_t *)w->data + (size_t)(row0 + r) * w->row_bytes;
        /* k0 and kc are multiples of 256 except at the end of the row, so whole blocks */
        tr->to_float_ref(row + (size_t)(k0 / blck) * bytes, o, kc);
    }
}

