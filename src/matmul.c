/*
 * matmul: dispatch, repacking at load, activation quantization and the scalar reference
 * path. The SIMD kernels live in matmul_avx2.c, matmul_avxvnni.c, matmul_avx512.c and
 * matmul_amx.c (compiled with their ISA's flags and only called when the CPU has it).
 *
 * Panel layouts (16 rows r = 0..15 interleaved so that one 64-byte vector holds 4
 * consecutive columns of every row: byte r*4+i is column k0+i of row r, which is the
 * operand layout of vpdpbusd with a broadcast activation dword, and AMX's B tile rows).
 * A panel occupies exactly the bytes of its 16 file rows, block after block:
 *
 *   Q4_K, per 256 columns (2304 bytes = 16 x 144):
 *     [0, 2048)     32 vectors, vector j*4+s (sub-block j = 0..7, s = 0..3):
 *                   low nibble = q of column j*32 + s*4 + i, high nibble = column +16
 *     [2048, 2080)  d[16] f16     [2080, 2112) dmin[16] f16
 *     [2112, 2304)  the 12 packed 6-bit scale/min bytes, transposed: byte b of row r at b*16 + r
 *   Q6_K, per 256 columns (3360 bytes = 16 x 210):
 *     [0, 2048)     32 vectors, vector j*2+s (sub-block j = 0..15 of 16 columns, s = 0..1):
 *                   low nibble = low 4 bits of q at column j*16 + s*4 + i, high nibble: +8
 *     [2048, 3072)  16 vectors, vector j: bits 2f..2f+1 = high 2 bits of q at column
 *                   j*16 + (f & 1)*8 + (f >> 1)*4 + i       (f = s*2 + half, see kernels)
 *     [3072, 3328)  int8 scale of sub-block j of row r at j*16 + r     [3328, 3360) d[16] f16
 *   Q8_0, per 32 columns (544 bytes = 16 x 34):
 *     [0, 512)      8 vectors, vector s: (uint8)(q ^ 0x80) of column s*4 + i
 *     [512, 544)    d[16] f16
 *
 * q is the format's unsigned code (Q4_K 0..15, Q6_K 0..63) so it can be vpdpbusd's
 * unsigned operand against signed int8 activations; Q8_0 is offset by 128 for the same
 * reason and the activation row carries -128 * sum(q) to undo it.
 */
#include "matmul.h"
#include "matmul_impl.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "cpu.h"

/* ================================================================ kernels and dispatch */

static const char *const kernel_names[UM_KERNEL_COUNT] = {
    [UM_KERNEL_REF] = "ref", [UM_KERNEL_AVX2] = "avx2", [UM_KERNEL_AVXVNNI] = "avxvnni",
    [UM_KERNEL_AVX512] = "avx512", [UM_KERNEL_AMX] = "amx", [UM_KERNEL_AMX_EMU] = "amx-emu",
};

const char *matmul_kernel_name(um_kernel k) {
    return k >= 0 && k < UM_KERNEL_COUNT ? kernel_names[k] : "?";
}

bool matmul_kernel_available(um_kernel k) {
    const um_cpu *c = cpu_features();
    bool avx2 = c->avx2 && c->fma && c->f16c;
    bool avx512 = avx2 && c->avx512f && c->avx512bw && c->avx512vl && c->avx512dq && c->avx512vnni;
    switch (k) {
    case UM_KERNEL_REF:     return true;
    case UM_KERNEL_AVX2:    return avx2;
    case UM_KERNEL_AVXVNNI: return avx2 && c->avx_vnni;
    case UM_KERNEL_AVX512:  return avx512;
    case UM_KERNEL_AMX:     return avx512 && c->amx_tile && c->amx_int8;
    case UM_KERNEL_AMX_EMU: return avx512;
    default:                return false;
    }
}

/* Does kernel k agree with the AVX-512 kernel on small Q4_K, Q6_K and Q8_0 products?
 * Random code bytes, small finite f16 scales, 23 tokens (a full and a partial tile). */
bool matmul_self_test(um_kernel k) {
    static const uint32_t types[] = { UM_TYPE_Q4_K, UM_TYPE_Q6_K, UM_TYPE_Q8_0 };
    const int64_t n_in = 512, n_out = 32, n_tok = 23;
    bool ok = matmul_kernel_available(k) && matmul_kernel_available(UM_KERNEL_AVX512);
    uint32_t rng = 12345;
    for (size_t ti = 0; ti < UM_ARRAY_LEN(types) && ok; ti++) {
        uint32_t type = types[ti], bb = um_type_bytes(type);
        size_t nb = (size_t)(n_in / um_type_blck(type)) * n_out, bytes = nb * bb;
        uint8_t *raw = um_malloc(bytes), *pa = um_malloc_aligned(bytes), *pb = um_malloc_aligned(bytes);
        float *x = um_malloc(sizeof(float) * n_tok * n_in), *ya = um_malloc(sizeof(float) * n_tok * n_out),
              *yb = um_malloc(sizeof(float) * n_tok * n_out);
        um_matmul_weights wa, wb;
        void *sa = NULL, *sb = NULL;
        ok = raw && pa && pb && x && ya && yb;
        if (ok) {
            for (size_t i = 0; i < bytes; i++) raw[i] = (uint8_t)((rng = rng * 1103515245u + 12345u) >> 16);
            for (size_t b = 0; b < nb; b++) {
                uint16_t h = (uint16_t)(0x1800 | ((rng = rng * 1103515245u + 12345u) >> 16 & 0x3ff));
                uint8_t *blk = raw + b * bb;
                if (type == UM_TYPE_Q6_K) memcpy(blk + 208, &h, 2);
                else memcpy(blk, &h, 2);
                if (type == UM_TYPE_Q4_K) memcpy(blk + 2, &h, 2);
            }
            for (int64_t i = 0; i < n_tok * n_in; i++) x[i] = (float)((int)((rng = rng * 1103515245u + 12345u) >> 16) % 2001 - 1000) * 1e-3f;
            ok = matmul_prepare(&wa, type, n_in, n_out, raw, pa, k, NULL) == UM_OK &&
                 matmul_prepare(&wb, type, n_in, n_out, raw, pb, UM_KERNEL_AVX512, NULL) == UM_OK;
        }
        if (ok) {
            sa = um_malloc_aligned(matmul_scratch_bytes(&wa, n_tok, 1));
            sb = um_malloc_aligned(matmul_scratch_bytes(&wb, n_tok, 1));
            ok = sa && sb;
        }
        if (ok) {
            matmul(NULL, &wa, x, n_tok, ya, sa);
            matmul(NULL, &wb, x, n_tok, yb, sb);
            for (int64_t i = 0; i < n_tok * n_out && ok; i++)   /* same integer sums: f32 rounding only */
                ok = fabsf(ya[i] - yb[i]) <= 1e-4f * (fabsf(yb[i]) + 1.f);
        }
        um_free_aligned(sa); um_free_aligned(sb);
        free(raw); um_free_aligned(pa); um_free_aligned(pb);
        free(x); free(ya); free(yb);
    }
    return ok;
}

static pthread_once_t amx_once = PTHREAD_ONCE_INIT;
static bool amx_ok;
static void amx_check(void) { amx_ok = matmul_self_test(UM_KERNEL_AMX); }

int matmul_kernel_default(um_kernel *out, um_err *e) {
    const char *env = getenv("UNMASK_KERNEL");
    if (env && *env) {
        for (int k = 0; k < UM_KERNEL_COUNT; k++) {
            if (strcmp(env, kernel_names[k]) != 0) continue;
            /* "avx2" on a VNNI CPU means the 256-bit path, with its best instructions */
            if (k == UM_KERNEL_AVX2 && matmul_kernel_available(UM_KERNEL_AVXVNNI)) k = UM_KERNEL_AVXVNNI;
            if (!matmul_kernel_available((um_kernel)k)) {
                const char *why = k == UM_KERNEL_AMX ? cpu_features()->amx_denied : NULL;
                return um_errf(e, "UNMASK_KERNEL=%s: this CPU cannot run it%s%s", env,
                               why ? ": " : "", why ? why : "");
            }
            *out = (um_kernel)k;
            return UM_OK;
        }
        return um_errf(e, "UNMASK_KERNEL=%s: unknown (ref, avx2, avxvnni, avx512, amx)", env);
    }
    /* AMX is chosen only after it reproduces the AVX-512 results on a small product: its
     * tile code could not be run where it was written (see docs/matmul.md). */
    if (matmul_kernel_available(UM_KERNEL_AMX)) {
        pthread_once(&amx_once, amx_check);
        if (amx_ok) { *out = UM_KERNEL_AMX; return UM_OK; }
    }
    static const um_kernel order[] = { UM_KERNEL_AVX512, UM_KERNEL_AVXVNNI, UM_KERNEL_AVX2 };
    for (size_t i = 0; i < UM_ARRAY_LEN(order); i++)
        if (matmul_kernel_available(order[i])) { *out = order[i]; return UM_OK; }
    *out = UM_KERNEL_REF;
    return UM_OK;
}

static bool is_panel_type(uint32_t type) {
    return type == UM_TYPE_Q4_K || type == UM_TYPE_Q6_K || type == UM_TYPE_Q8_0;
}

bool matmul_wants_repack(uint32_t type, um_kernel k) {
    return k != UM_KERNEL_REF && is_panel_type(type);
}

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

int matmul_prepare(um_matmul_weights *w, uint32_t type, int64_t n_in, int64_t n_out,
                   const void *data, void *dst, um_kernel kernel, um_err *e) {
    memset(w, 0, sizeof *w);
    if (kernel == UM_KERNEL_AUTO && matmul_kernel_default(&kernel, e) != UM_OK) return UM_FAIL;
    if (kernel < 0 || kernel >= UM_KERNEL_COUNT) return um_errf(e, "matmul: bad kernel id %d", (int)kernel);
    if (!matmul_kernel_available(kernel))
        return um_errf(e, "matmul: this CPU cannot run the %s kernel", kernel_names[kernel]);
    const um_type_traits *tr = um_traits(type);
    uint32_t blck = um_type_blck(type), bytes = um_type_bytes(type);
    if (!tr || !tr->vec_dot_ref || !tr->to_float_ref)   /* activation-only types have no dot */
        return um_errf(e, "matmul: weight type %s is not supported", um_type_name(type));
    if (n_in <= 0 || n_out <= 0 || n_in % blck != 0)
        return um_errf(e, "matmul: bad shape %lld x %lld for %s (columns must be a multiple of %u)",
                       (long long)n_out, (long long)n_in, um_type_name(type), blck);
    uint64_t total;
    if (!um_mul_ok((uint64_t)(n_in / blck) * bytes, (uint64_t)n_out, &total) || total > SIZE_MAX)
        return um_errf(e, "matmul: %lld x %lld matrix is too large", (long long)n_out, (long long)n_in);
    w->type = type;
    w->n_in = n_in;
    w->n_out = n_out;
    w->row_bytes = (size_t)(n_in / blck) * bytes;
    w->kernel = kernel;
    w->data = data;
    if (!dst || dst == data) {
        if (!dst || !matmul_wants_repack(type, kernel)) return UM_OK;
    } else if (!matmul_wants_repack(type, kernel)) {
        memcpy(dst, data, total);
        w->data = dst;
        return UM_OK;
    }
    /* repack: panel by panel; in place through a one-panel copy */
    int64_t n_panels = n_out / UM_MATMUL_PANEL, nb = n_in / blck;
    size_t panel_bytes = UM_MATMUL_PANEL * w->row_bytes;
    uint8_t *tmp = NULL;
    if (dst == data && n_panels > 0 && !(tmp = um_malloc(panel_bytes)))
        return um_errf(e, "matmul: out of memory repacking a %s matrix", um_type_name(type));
    for (int64_t p = 0; p < n_panels; p++) {
        const uint8_t *src = (const uint8_t *)data + p * panel_bytes;
        if (tmp) { memcpy(tmp, src, panel_bytes); src = tmp; }
        mm_pack_panel(type, src, w->row_bytes, nb, (uint8_t *)dst + p * panel_bytes);
    }
    free(tmp);
    size_t tail = (size_t)(n_out - n_panels * UM_MATMUL_PANEL) * w->row_bytes;
    if (dst != data && tail)
        memcpy((uint8_t *)dst + n_panels * panel_bytes, (const uint8_t *)data + n_panels * panel_bytes, tail);
    w->data = dst;
    w->packed = true;
    return UM_OK;
}

/* ================================================================ panel scale tables */

size_t mm_tables_bytes(const um_matmul_weights *w) {
    if (!w->packed) return 0;
    return (size_t)w->n_in * sizeof(float);   /* Q8_0 needs half of it */
}

/* Q4_K per 256 columns: dsc[8][16] = d * sc, then dmm[8][16] = dmin * m.
 * Q6_K per 256 columns: dsc[16][16] = d * sc.   Q8_0 per 32 columns: d[16].
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
        } else {
            const uint8_t *o = base + b * 16 * sizeof(um_block_q8_0);
            for (int r = 0; r < 16; r++) t[b * 16 + r] = um_fp16_to_fp32(rd16(o + 512 + r * 2));
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
        } else if (type == UM_TYPE_Q6_K) {
            int32_t *corr = (int32_t *)(row + off_corr) + b * 16;
            for (int j = 0; j < 16; j++) {
                int s = 0;
                for (int i = 0; i < 16; i++) s += qb[j * 16 + i];
                corr[j] = -32 * s;
            }
        } else {
            int s = 0;
            for (int i = 0; i < 32; i++) s += qb[i];
            ((int32_t *)(row + off_corr))[b] = -128 * s;
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

/* ================================================================ reference kernel */

typedef struct ref_job {
    const um_matmul_weights *w;
    const uint8_t *act;          /* (n_tokens, act_stride): x in vec_dot_type, or x itself */
    size_t act_stride;
    float *y;
    int64_t n_tokens;
} ref_job;

static void ref_rows(void *arg, int64_t chunk, int thread_id) {
    const ref_job *j = arg;
    const um_matmul_weights *w = j->w;
    const um_type_traits *tr = um_traits(w->type);
    int64_t r1 = UM_MIN((chunk + 1) * UM_MATMUL_PANEL, w->n_out);
    for (int64_t r = chunk * UM_MATMUL_PANEL; r < r1; r++) {
        const uint8_t *row = (const uint8_t *)w->data + (size_t)r * w->row_bytes;
        for (int64_t t = 0; t < j->n_tokens; t++)
            j->y[t * w->n_out + r] = tr->vec_dot_ref(row, j->act + (size_t)t * j->act_stride, w->n_in);
    }
}

typedef struct ref_quant_job {
    const um_matmul_weights *w;
    const float *x;
    uint8_t *act;
    size_t act_stride;
} ref_quant_job;

static void ref_quant_rows(void *arg, int64_t t, int thread_id) {
    const ref_quant_job *j = arg;
    const um_type_traits *vt = um_traits(um_traits(j->w->type)->vec_dot_type);
    vt->from_float_ref(j->x + t * j->w->n_in, j->act + (size_t)t * j->act_stride, j->w->n_in);
}

static size_t ref_act_stride(const um_matmul_weights *w) {
    uint32_t vdt = um_traits(w->type)->vec_dot_type;
    if (vdt == UM_TYPE_F32) return 0;
    return ((size_t)(w->n_in / um_type_blck(vdt)) * um_type_bytes(vdt) + 63) & ~(size_t)63;
}

static void matmul_ref(um_pool *p, const um_matmul_weights *w, const float *x, int64_t n_tokens,
                       float *y, void *scratch) {
    ref_job j = { .w = w, .y = y, .n_tokens = n_tokens };
    size_t stride = ref_act_stride(w);
    if (stride == 0) {
        j.act = (const uint8_t *)x;
        j.act_stride = (size_t)w->n_in * sizeof(float);
    } else {
        ref_quant_job q = { .w = w, .x = x, .act = scratch, .act_stride = stride };
        pool_for(p, n_tokens, ref_quant_rows, &q);
        j.act = scratch;
        j.act_stride = stride;
    }
    pool_for(p, (w->n_out + UM_MATMUL_PANEL - 1) / UM_MATMUL_PANEL, ref_rows, &j);
}

/* ================================================================ driver */

static size_t act_stride_int(const um_matmul_weights *w, size_t *off_scale, size_t *off_corr) {
    size_t n = (size_t)w->n_in;
    *off_scale = (n + 63) & ~(size_t)63;
    *off_corr = *off_scale + (n / 32) * sizeof(float);
    return (*off_corr + (n / 16) * sizeof(int32_t) + 63) & ~(size_t)63;
}

static size_t per_thread_bytes(const um_matmul_weights *w) {
    size_t n = MM_FLOAT_SCRATCH;
    if (w->packed) {
        size_t i = MM_INT_SCRATCH(w);
        if (w->kernel == UM_KERNEL_AMX || w->kernel == UM_KERNEL_AMX_EMU) i += mm_amx_scratch_bytes(w);
        n = UM_MAX(n, i);
    }
    return (n + 63) & ~(size_t)63;
}

size_t matmul_scratch_bytes(const um_matmul_weights *w, int64_t n_tokens, int n_threads) {
    if (n_tokens < 1) n_tokens = 1;
    if (n_threads < 1) n_threads = 1;
    if (w->kernel == UM_KERNEL_REF) return (size_t)n_tokens * ref_act_stride(w) + 64;
    size_t a = 0, s, c;
    if (w->packed) a = (size_t)n_tokens * act_stride_int(w, &s, &c);
    return a + (size_t)n_threads * per_thread_bytes(w) + 64;
}

static void quant_rows(void *arg, int64_t t, int thread_id) {
    const mm_job *j = arg;
    /* the 512-bit quantizer wherever the 512-bit kernels may run (same bytes either way) */
    bool wide = j->w->kernel == UM_KERNEL_AVX512 || j->w->kernel == UM_KERNEL_AMX || j->w->kernel == UM_KERNEL_AMX_EMU;
    (wide ? mm_quantize_act_avx512 : mm_quantize_act_avx2)(j->w->type, j->x + t * j->w->n_in, j->w->n_in,
                                                            (uint8_t *)j->act + (size_t)t * j->act_stride,
                                                            j->off_scale, j->off_corr);
}

typedef struct chunk_job {
    const mm_job *j;
    mm_chunk_fn fn;
} chunk_job;

static void run_chunk(void *arg, int64_t c, int thread_id) {
    const chunk_job *cj = arg;
    const mm_job *j = cj->j;
    int64_t panel = c / j->n_slabs, s = c % j->n_slabs;
    int64_t t0 = s * j->slab, t1 = UM_MIN(t0 + j->slab, j->n_tokens);
    cj->fn(j, panel, t0, t1, j->thread_scratch + (size_t)thread_id * j->per_thread);
}

void matmul(um_pool *p, const um_matmul_weights *w, const float *x, int64_t n_tokens,
            float *y, void *scratch) {
    if (n_tokens <= 0) return;
    if (w->kernel == UM_KERNEL_REF) { matmul_ref(p, w, x, n_tokens, y, scratch); return; }
    static const mm_chunk_fn fns[UM_KERNEL_COUNT] = {
        [UM_KERNEL_AVX2] = mm_chunk_avx2, [UM_KERNEL_AVXVNNI] = mm_chunk_avxvnni,
        [UM_KERNEL_AVX512] = mm_chunk_avx512, [UM_KERNEL_AMX] = mm_chunk_amx,
        [UM_KERNEL_AMX_EMU] = mm_chunk_amx_emu,
    };
    int n_threads = pool_threads(p);
    mm_job j = { .w = w, .x = x, .y = y, .n_tokens = n_tokens, .n_threads = n_threads };
    uint8_t *s = scratch;
    if (w->packed) {
        j.act_stride = act_stride_int(w, &j.off_scale, &j.off_corr);
        j.act = s;
        s += (size_t)n_tokens * j.act_stride;
        pool_for(p, n_tokens, quant_rows, &j);
    }
    j.thread_scratch = s;
    j.per_thread = per_thread_bytes(w);
    /* Token slabs only when there are too few panels to keep every thread busy: each
     * slab re-reads the panel, so one slab (all tokens) is the cheapest otherwise. */
    int64_t n_panels = (w->n_out + UM_MATMUL_PANEL - 1) / UM_MATMUL_PANEL;
    j.slab = n_tokens;
    if (n_panels < 4 * (int64_t)n_threads) {
        int64_t want = (4 * (int64_t)n_threads + n_panels - 1) / n_panels;
        j.slab = UM_MAX(16, ((n_tokens + want - 1) / want + 15) / 16 * 16);
    }
    j.n_slabs = (n_tokens + j.slab - 1) / j.slab;
    chunk_job cj = { &j, fns[w->kernel] };
    pool_for(p, n_panels * j.n_slabs, run_chunk, &cj);
}
