/*
 * matmul: dispatch, weight preparation and the scalar reference path. The SIMD kernels live
 * in one folder per architecture (arch/x86: matmul_avx2.c, matmul_avxvnni.c,
 * matmul_avx512.c, matmul_amx.c, each compiled with its instruction set's flags and only
 * called when the CPU has it). What they share with this file (the repacking below, scale
 * tables, activation quantizing, row decoding) is in matmul_shared.c, below both, so no
 * kernel calls back into the dispatcher; what the x86 kernels share among themselves is in
 * arch/x86/x86_shared_avx2.c and x86_shared_avx512.c, so no kernel calls another sideways.
 * On AArch64 the folder is arch/arm (matmul_neon.c, matmul_dotprod.c, matmul_i8mm.c, shared
 * layer arm_shared*.c); those kernels decode the file layout per panel, so the layouts
 * below are the x86 kernels' only.
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
 *   Q4_0, Q4_1, Q5_0, Q5_1, per 32 columns (16 x 18, 20, 22, 24 bytes):
 *     [0, 256)      4 vectors, vector s: the file's qs[s*4 + i] (low nibble: column s*4 + i,
 *                   high nibble: column 16 + s*4 + i), so code vector g = 0..7 (columns 4g..)
 *                   is the low (g < 4) or high (g >= 4) nibbles of vector g % 4
 *     Q5_x:  [256, 320)  1 vector: bit g = the fifth bit of column g*4 + i
 *     then d[16] f16 (at mm_q32_d_off), then Q4_1/Q5_1: m[16] f16
 *   These are unpacked per chunk to Q8_0 codes (level + 128: mm_unpack_q32_*) and run the
 *   Q8_0 loop; the layout keeps the file size, so the repack needs no larger buffer.
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
    [UM_KERNEL_NEON] = "neon", [UM_KERNEL_DOTPROD] = "dotprod", [UM_KERNEL_I8MM] = "i8mm",
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
    case UM_KERNEL_NEON:    return MM_ARM && c->neon;
    case UM_KERNEL_DOTPROD: return MM_ARM && c->neon && c->dotprod;
    case UM_KERNEL_I8MM:    return MM_ARM && c->neon && c->dotprod && c->i8mm;
    default:                return false;
    }
}

/* Does kernel k agree with the AVX-512 kernel on small Q4_K, Q6_K, Q8_0, Q5_0 and Q5_1
 * products? Random code bytes, small finite f16 scales, 23 tokens (a full and a partial tile). */
bool matmul_self_test(um_kernel k) {
    static const uint32_t types[] = { UM_TYPE_Q4_K, UM_TYPE_Q6_K, UM_TYPE_Q8_0, UM_TYPE_Q5_0, UM_TYPE_Q5_1 };
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
                if (type == UM_TYPE_Q4_K || type == UM_TYPE_Q5_1) memcpy(blk + 2, &h, 2);   /* dmin, m */
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
        return um_errf(e, "UNMASK_KERNEL=%s: unknown (ref, avx2, avxvnni, avx512, amx, neon, dotprod, i8mm)", env);
    }
    /* AMX is chosen only after it reproduces the AVX-512 results on a small product: its
     * tile code could not be run where it was written (see docs/matmul.md). */
    if (matmul_kernel_available(UM_KERNEL_AMX)) {
        pthread_once(&amx_once, amx_check);
        if (amx_ok) { *out = UM_KERNEL_AMX; return UM_OK; }
    }
    static const um_kernel order[] = { UM_KERNEL_AVX512, UM_KERNEL_AVXVNNI, UM_KERNEL_AVX2,
                                       UM_KERNEL_I8MM, UM_KERNEL_DOTPROD, UM_KERNEL_NEON };
    for (size_t i = 0; i < UM_ARRAY_LEN(order); i++)
        if (matmul_kernel_available(order[i])) { *out = order[i]; return UM_OK; }
    *out = UM_KERNEL_REF;
    return UM_OK;
}

static bool is_panel_type(uint32_t type) {
    return type == UM_TYPE_Q4_K || type == UM_TYPE_Q6_K || type == UM_TYPE_Q8_0 || mm_q32_type(type);
}

/* The x86 kernels' panels; the ARM kernels decode the file layout (matmul_impl.h). */
bool matmul_wants_repack(uint32_t type, um_kernel k) {
    return k != UM_KERNEL_REF && k <= UM_KERNEL_AMX_EMU && is_panel_type(type);
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
    return (*off_corr + (n / 16) * (sizeof(int32_t) + sizeof(int16_t)) + 63) & ~(size_t)63;
}

static size_t per_thread_bytes(const um_matmul_weights *w) {
    size_t n = MM_FLOAT_SCRATCH;
    if (mm_int_path(w)) {
        size_t i = MM_INT_SCRATCH(w);
#if MM_X86
        if (w->kernel == UM_KERNEL_AMX || w->kernel == UM_KERNEL_AMX_EMU) i += mm_amx_scratch_bytes(w);
#endif
#if MM_ARM
        if (mm_arm_int(w)) i = mm_arm_scratch_bytes(w);
#endif
        n = UM_MAX(n, i);
    }
    return (n + 63) & ~(size_t)63;
}

size_t matmul_scratch_bytes(const um_matmul_weights *w, int64_t n_tokens, int n_threads) {
    if (n_tokens < 1) n_tokens = 1;
    if (n_threads < 1) n_threads = 1;
    if (w->kernel == UM_KERNEL_REF) return (size_t)n_tokens * ref_act_stride(w) + 64;
    size_t a = 0, s, c;
    if (mm_int_path(w)) a = (size_t)n_tokens * act_stride_int(w, &s, &c);
    return a + (size_t)n_threads * per_thread_bytes(w) + 64;
}

/* One activation row x (w->n_in floats) into dst, in the layout of matmul_impl.h. */
static void quantize_row(const mm_job *j, const float *x, uint8_t *dst) {
    const um_matmul_weights *w = j->w;
    /* the 512-bit quantizer wherever the 512-bit kernels may run (same bytes either way) */
#if MM_X86
    bool wide = w->kernel == UM_KERNEL_AVX512 || w->kernel == UM_KERNEL_AMX || w->kernel == UM_KERNEL_AMX_EMU;
    (wide ? mm_quantize_act_avx512 : mm_quantize_act_avx2)(mm_act_type(w), x, w->n_in, dst, j->off_scale, j->off_corr);
#else
    mm_quantize_act(mm_act_type(w), x, w->n_in, dst, j->off_scale, j->off_corr);
#endif
}

static void quant_rows(void *arg, int64_t t, int thread_id) {
    const mm_job *j = arg;
    quantize_row(j, j->x + t * j->w->n_in, (uint8_t *)j->act + (size_t)t * j->act_stride);
}

static const mm_chunk_fn chunk_fns[UM_KERNEL_COUNT] = {
#if MM_X86
    [UM_KERNEL_AVX2] = mm_chunk_avx2, [UM_KERNEL_AVXVNNI] = mm_chunk_avxvnni,
    [UM_KERNEL_AVX512] = mm_chunk_avx512, [UM_KERNEL_AMX] = mm_chunk_amx,
    [UM_KERNEL_AMX_EMU] = mm_chunk_amx_emu,
#endif
#if MM_ARM
    [UM_KERNEL_NEON] = mm_chunk_neon, [UM_KERNEL_DOTPROD] = mm_chunk_dotprod, [UM_KERNEL_I8MM] = mm_chunk_i8mm,
#endif
};

/* The kernel of one chunk. AMX takes full packed panels; the rest of an AMX product (other
 * formats, a partial last panel) runs on the AVX-512 kernel, chosen here so that no kernel
 * file calls another. Likewise the ARM integer kernels take full panels of the formats
 * they decode, and the neon float-tile kernel the rest. */
static mm_chunk_fn chunk_for(const um_matmul_weights *w, int64_t panel) {
#if MM_X86
    bool amx = w->kernel == UM_KERNEL_AMX || w->kernel == UM_KERNEL_AMX_EMU;
    if (amx && !(w->packed && (panel + 1) * UM_MATMUL_PANEL <= w->n_out)) return mm_chunk_avx512;
#endif
#if MM_ARM
    bool arm_int = w->kernel == UM_KERNEL_DOTPROD || w->kernel == UM_KERNEL_I8MM;
    if (arm_int && !(mm_arm_int(w) && (panel + 1) * UM_MATMUL_PANEL <= w->n_out)) return mm_chunk_neon;
#endif
    return chunk_fns[w->kernel];
}

static void run_chunk(void *arg, int64_t c, int thread_id) {
    const mm_job *j = arg;
    int64_t panel = c / j->n_slabs, s = c % j->n_slabs;
    int64_t t0 = s * j->slab, t1 = UM_MIN(t0 + j->slab, j->n_tokens);
    chunk_for(j->w, panel)(j, panel, t0, t1, j->thread_scratch + (size_t)thread_id * j->per_thread);
}

void matmul(um_pool *p, const um_matmul_weights *w, const float *x, int64_t n_tokens,
            float *y, void *scratch) {
    if (n_tokens <= 0) return;
    if (w->kernel == UM_KERNEL_REF) { matmul_ref(p, w, x, n_tokens, y, scratch); return; }
    int n_threads = pool_threads(p);
    mm_job j = { .w = w, .x = x, .y = y, .n_tokens = n_tokens, .n_threads = n_threads };
    uint8_t *s = scratch;
    if (mm_int_path(w)) {
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
    pool_for(p, n_panels * j.n_slabs, run_chunk, &j);
}

/* ================================================================ grouped (mixture of experts) */

/* The one-dispatch integer path: full panels of an integer kernel, every expert alike. */
static bool grouped_fast(const um_matmul_group *g, int n_expert) {
    const um_matmul_weights *w0 = &g->w[0];
    if (w0->kernel == UM_KERNEL_REF || !mm_int_path(w0) || w0->n_out % UM_MATMUL_PANEL) return false;
    for (int e = 1; e < n_expert; e++) {
        const um_matmul_weights *w = &g->w[e];
        if (w->type != w0->type || w->n_in != w0->n_in || w->n_out != w0->n_out || w->kernel != w0->kernel ||
            w->packed != w0->packed)
            return false;
    }
    return true;
}

size_t matmul_grouped_scratch_bytes(const um_matmul_weights *w, int64_t n_x, int k, int n_threads) {
    if (n_x < 1) n_x = 1;
    if (k < 1) k = 1;
    if (n_threads < 1) n_threads = 1;
    int64_t n_rows = n_x * k;
    size_t s, c;
    /* integer path: the grouped quantized rows and the per-thread tables; fallback: the
     * gathered float rows and matmul's own scratch */
    size_t fast = w->kernel == UM_KERNEL_REF ? 0
                  : (size_t)n_rows * act_stride_int(w, &s, &c) + (size_t)n_threads * per_thread_bytes(w) + 64;
    size_t slow = ((size_t)n_rows * (size_t)w->n_in * sizeof(float) + 63) / 64 * 64 +
                  matmul_scratch_bytes(w, n_rows, n_threads);
    return UM_MAX(fast, slow);
}

typedef struct grp_job {
    const um_matmul_group *g;
    int n_g, n_expert, k;
    const int32_t *off, *slot;
    const float *x;
    mm_job base;                 /* act, strides, per-thread scratch shared by every chunk */
    int64_t n_panels;
} grp_job;

/* Quantize input row t into its first grouped row and copy it to the others. */
static void grp_quant(void *arg, int64_t t, int thread_id) {
    const grp_job *gj = arg;
    const mm_job *j = &gj->base;
    uint8_t *act = (uint8_t *)j->act;
    int64_t r0 = gj->slot ? gj->slot[t * gj->k] : t;
    uint8_t *dst = act + (size_t)r0 * j->act_stride;
    quantize_row(j, gj->x + t * j->w->n_in, dst);
    for (int c = 1; gj->slot && c < gj->k; c++)
        memcpy(act + (size_t)gj->slot[t * gj->k + c] * j->act_stride, dst, j->act_stride);
}

/* Chunk c = (group, expert, panel), panel fastest: all of an expert's rows on one panel. */
static void grp_chunk(void *arg, int64_t c, int thread_id) {
    const grp_job *gj = arg;
    int64_t panel = c % gj->n_panels, rest = c / gj->n_panels;
    int e = (int)(rest % gj->n_expert), gi = (int)(rest / gj->n_expert);
    int64_t r0 = gj->off[e], cnt = gj->off[e + 1] - r0;
    if (cnt <= 0) return;
    mm_job j = gj->base;
    j.w = &gj->g[gi].w[e];
    j.y = gj->g[gi].y + r0 * j.w->n_out;
    j.act += (size_t)r0 * j.act_stride;
    j.n_tokens = cnt;
    j.slab = cnt;
    j.n_slabs = 1;
    chunk_for(j.w, panel)(&j, panel, 0, cnt, j.thread_scratch + (size_t)thread_id * j.per_thread);
}

void matmul_grouped(um_pool *p, const um_matmul_group *g, int n_g, int n_expert, const int32_t *off,
                    const float *x, int64_t n_x, const int32_t *slot, int k, void *scratch) {
    if (n_g <= 0 || n_x <= 0 || n_expert <= 0) return;
    if (!slot) k = 1;
    const um_matmul_weights *w0 = &g[0].w[0];
    bool together = true;
    for (int gi = 0; gi < n_g; gi++) {
        const um_matmul_weights *w = &g[gi].w[0];
        together = together && grouped_fast(&g[gi], n_expert) && w->type == w0->type && w->n_in == w0->n_in &&
                   w->n_out == w0->n_out && w->kernel == w0->kernel;
    }
    if (!together && n_g > 1) {
        for (int gi = 0; gi < n_g; gi++) matmul_grouped(p, &g[gi], 1, n_expert, off, x, n_x, slot, k, scratch);
        return;
    }
    int64_t n_rows = n_x * k;
    if (!together) {
        /* gather the float rows, then each expert's product on its own */
        float *in = (float *)scratch;
        const float *src = x;
        uint8_t *ms = (uint8_t *)scratch;
        if (slot) {
            for (int64_t t = 0; t < n_x; t++)
                for (int c = 0; c < k; c++)
                    memcpy(in + (int64_t)slot[t * k + c] * w0->n_in, x + t * w0->n_in, (size_t)w0->n_in * sizeof(float));
            src = in;
            ms += ((size_t)n_rows * (size_t)w0->n_in * sizeof(float) + 63) / 64 * 64;
        }
        for (int e = 0; e < n_expert; e++) {
            int64_t r0 = off[e], cnt = off[e + 1] - r0;
            if (cnt > 0) matmul(p, &g[0].w[e], src + r0 * w0->n_in, cnt, g[0].y + r0 * g[0].w[e].n_out, ms);
        }
        return;
    }
    grp_job gj = { .g = g, .n_g = n_g, .n_expert = n_expert, .k = k, .off = off, .slot = slot, .x = x,
                   .n_panels = w0->n_out / UM_MATMUL_PANEL };
    mm_job *j = &gj.base;
    j->w = w0;
    j->n_threads = pool_threads(p);
    j->act_stride = act_stride_int(w0, &j->off_scale, &j->off_corr);
    j->act = scratch;
    j->thread_scratch = (uint8_t *)scratch + (size_t)n_rows * j->act_stride;
    j->per_thread = per_thread_bytes(w0);
    pool_for(p, n_x, grp_quant, &gj);
    pool_for(p, (int64_t)n_g * n_expert * gj.n_panels, grp_chunk, &gj);
}
