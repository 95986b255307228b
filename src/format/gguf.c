/*
 * gguf: reader and writer for GGUF files, versions 2 and 3 (see gguf.h).
 *
 * File layout (all little-endian):
 *   magic u32 "GGUF" | version u32 | n_tensors u64 | n_kv u64
 *   n_kv    x { key: str | type u32 | value }          str = u64 length + bytes
 *   n_tensors x { name: str | n_dims u32 | ne u64[n_dims] | type u32 | offset u64 }
 *   padding to general.alignment | tensor data (each tensor at an aligned offset)
 *
 * Reader invariants: every read goes through the cursor (struct rd), which never moves
 * past the end of the buffer; a count is checked against the bytes left (each element
 * needs at least a known minimum) and a sane limit before anything proportional to it is
 * allocated. After parsing, every tensor's [offset, offset + size) lies inside the file,
 * is aligned, and overlaps no other; keys and tensor names are unique. Messages name the
 * problem and end with "(at byte N)", N being where the offending item starts.
 *
 * Split models (gguf_split.c): each part is opened here as a file of its own; the first part
 * then takes over the others (gguf_impl.h, `extra`), its tensor table becomes every part's
 * tensors in part order and its name index covers them all, so lookups, counts and the
 * per-tensor data pointers work unchanged for callers.
 */
#include "gguf_impl.h"
#include "esc.h"
#include "infile.h"
#include "outfile.h"
#include "quant.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* Smallest encodings, used to bound counts by the bytes left before allocating. */
#define MIN_KV_BYTES     13u    /* key length u64 + type u32 + 1-byte value */
#define MIN_TENSOR_BYTES 32u    /* name length u64 + n_dims u32 + 1 dim u64 + type u32 + offset u64 */

/* ------------------------------------------------------------------ helpers */

static const char *const type_names[GGUF_TYPE_COUNT] = {
    "uint8", "int8", "uint16", "int16", "uint32", "int32", "float32", "bool",
    "string", "array", "uint64", "int64", "float64",
};
static const uint8_t type_sizes[GGUF_TYPE_COUNT] = { 1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8 };

const char *gguf_type_name(gguf_type t) { return (unsigned)t < GGUF_TYPE_COUNT ? type_names[t] : "?"; }
size_t gguf_type_size(gguf_type t) { return (unsigned)t < GGUF_TYPE_COUNT ? type_sizes[t] : 0; }

static bool is_int_type(gguf_type t) {
    return t <= GGUF_TYPE_INT32 || t == GGUF_TYPE_UINT64 || t == GGUF_TYPE_INT64;
}
static bool is_signed_type(gguf_type t) {
    return t == GGUF_TYPE_INT8 || t == GGUF_TYPE_INT16 || t == GGUF_TYPE_INT32 || t == GGUF_TYPE_INT64;
}

bool gguf_str_eq(gguf_str s, const char *c) {
    size_t n = strlen(c);
    return s.len == n && memcmp(s.ptr, c, n) == 0;
}

gguf_shown gguf_show(gguf_str v) {
    gguf_shown o;
    size_t n = esc_cut(v.ptr, (size_t)v.len, 80);
    size_t need = esc_str(o.s, sizeof o.s - 3, v.ptr, n, ESC_BACKSLASH, 0);   /* 80 bytes x 4 < 333 */
    if (n < v.len || need >= sizeof o.s - 3) strcat(o.s, "...");
    return o;
}

static uint64_t hash_bytes(const void *p, uint64_t n) {       /* FNV-1a */
    const uint8_t *b = p;
    uint64_t h = 1469598103934665603ull;
    for (uint64_t i = 0; i < n; i++) h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

static uint64_t hash_size(uint64_t n) {
    uint64_t m = 16;
    while (m <= 2 * n) m <<= 1;
    return m;
}

/* Find name in an index table over n items whose names are got by name_of; returns the
 * slot: table[slot] is 0 (absent, free slot) or the matching index + 1. */
typedef gguf_str (*name_of_fn)(const gguf_file *g, uint32_t i);
static gguf_str kv_name(const gguf_file *g, uint32_t i) { return g->kv[i].key; }
static gguf_str t_name(const gguf_file *g, uint32_t i) { return g->tensors[i].name; }

static uint64_t hash_slot(const gguf_file *g, const uint32_t *table, uint64_t tn, name_of_fn name_of,
                          const char *p, uint64_t n) {
    uint64_t s = hash_bytes(p, n) & (tn - 1);
    while (table[s]) {
        gguf_str k = name_of(g, table[s] - 1);
        if (k.len == n && memcmp(k.ptr, p, n) == 0) break;
        s = (s + 1) & (tn - 1);
    }
    return s;
}

/* ------------------------------------------------------------------ cursor */

struct rd {
    const uint8_t *p;
    uint64_t       size, off;
    um_err        *e;
};

static uint64_t left(const struct rd *r) { return r->size - r->off; }

static int need(struct rd *r, uint64_t n, const char *what) {
    if (n <= left(r)) return UM_OK;
    return um_errf(r->e, "truncated file: %s needs %llu bytes, only %llu left (at byte %llu)", what,
                   (unsigned long long)n, (unsigned long long)left(r), (unsigned long long)r->off);
}

static int rd_u32(struct rd *r, uint32_t *v, const char *what) {
    if (need(r, 4, what)) return UM_FAIL;
    memcpy(v, r->p + r->off, 4);
    r->off += 4;
    return UM_OK;
}

static int rd_u64(struct rd *r, uint64_t *v, const char *what) {
    if (need(r, 8, what)) return UM_FAIL;
    memcpy(v, r->p + r->off, 8);
    r->off += 8;
    return UM_OK;
}

/* A string: u64 length then bytes. max bounds names; values are bounded by the file. */
static int rd_str(struct rd *r, gguf_str *s, uint64_t max, const char *what) {
    uint64_t at = r->off, n;
    if (rd_u64(r, &n, what)) return UM_FAIL;
    if (n > max)
        return um_errf(r->e, "%s length %llu exceeds the limit %llu (at byte %llu)", what,
                       (unsigned long long)n, (unsigned long long)max, (unsigned long long)at);
    if (n > left(r))
        return um_errf(r->e, "%s length %llu runs past end of file (%llu bytes left) (at byte %llu)",
                       what, (unsigned long long)n, (unsigned long long)left(r), (unsigned long long)at);
    s->ptr = (const char *)r->p + r->off;
    s->len = n;
    r->off += n;
    return UM_OK;
}

/* One scalar of type t into kv->v (t is neither STRING nor ARRAY). */
static void decode_scalar(gguf_kv *kv, gguf_type t, const uint8_t *p) {
    uint8_t u8; uint16_t u16; uint32_t u32; uint64_t u64; float f32; double f64;
    switch (t) {
    case GGUF_TYPE_UINT8:   kv->v.u = p[0]; break;
    case GGUF_TYPE_INT8:    kv->v.i = (int8_t)p[0]; break;
    case GGUF_TYPE_BOOL:    memcpy(&u8, p, 1); kv->v.u = u8 != 0; break;
    case GGUF_TYPE_UINT16:  memcpy(&u16, p, 2); kv->v.u = u16; break;
    case GGUF_TYPE_INT16:   memcpy(&u16, p, 2); kv->v.i = (int16_t)u16; break;
    case GGUF_TYPE_UINT32:  memcpy(&u32, p, 4); kv->v.u = u32; break;
    case GGUF_TYPE_INT32:   memcpy(&u32, p, 4); kv->v.i = (int32_t)u32; break;
    case GGUF_TYPE_FLOAT32: memcpy(&f32, p, 4); kv->v.f = f32; break;
    case GGUF_TYPE_UINT64:  memcpy(&u64, p, 8); kv->v.u = u64; break;
    case GGUF_TYPE_INT64:   memcpy(&u64, p, 8); kv->v.i = (int64_t)u64; break;
    case GGUF_TYPE_FLOAT64: memcpy(&f64, p, 8); kv->v.f = f64; break;
    default: break;
    }
}

/* The value of kv, whose key has been read. Messages are prefixed with the key by rd_kv. */
static int rd_value(struct rd *r, gguf_kv *kv) {
    uint32_t t;
    if (rd_u32(r, &t, "value type")) return UM_FAIL;
    if (t >= GGUF_TYPE_COUNT)
        return um_errf(r->e, "unknown value type %u (at byte %llu)", t,
                       (unsigned long long)kv->offset);
    kv->type = (gguf_type)t;
    if (t == GGUF_TYPE_STRING) return rd_str(r, &kv->v.s, UINT64_MAX, "string");
    if (t != GGUF_TYPE_ARRAY) {
        if (need(r, type_sizes[t], "value")) return UM_FAIL;
        decode_scalar(kv, kv->type, r->p + r->off);
        r->off += type_sizes[t];
        return UM_OK;
    }
    uint32_t et;
    uint64_t n;
    if (rd_u32(r, &et, "array element type") || rd_u64(r, &n, "array length")) return UM_FAIL;
    if (et >= GGUF_TYPE_COUNT || et == GGUF_TYPE_ARRAY)
        return um_errf(r->e, "%s array element type %u (at byte %llu)",
                       et == GGUF_TYPE_ARRAY ? "nested arrays are not supported:" : "unknown",
                       et, (unsigned long long)kv->offset);
    kv->arr_type = (gguf_type)et;
    kv->arr_n = n;
    uint64_t min = et == GGUF_TYPE_STRING ? 8 : type_sizes[et];
    if (n > left(r) / min)
        return um_errf(r->e, "array of %llu %s elements runs past end of file (%llu bytes left) (at byte %llu)",
                       (unsigned long long)n, type_names[et], (unsigned long long)left(r),
                       (unsigned long long)kv->offset);
    if (et != GGUF_TYPE_STRING) {
        kv->arr_data = r->p + r->off;
        r->off += n * min;
        return UM_OK;
    }
    kv->arr_str = um_calloc(n, sizeof *kv->arr_str);   /* n * 16 <= 2 * file size */
    if (!kv->arr_str) return um_errf(r->e, "out of memory for %llu strings", (unsigned long long)n);
    for (uint64_t i = 0; i < n; i++)
        if (rd_str(r, &kv->arr_str[i], UINT64_MAX, "string")) return UM_FAIL;
    return UM_OK;
}

static int rd_kv(struct rd *r, gguf_kv *kv) {
    kv->offset = r->off;
    if (rd_str(r, &kv->key, GGUF_MAX_NAME, "key")) return UM_FAIL;
    return rd_value(r, kv) ? um_err_prefix(r->e, "key '%s'", gguf_show(kv->key).s) : UM_OK;
}

/* The rest of a tensor info after its name; at is where the record starts. Messages are
 * prefixed with the tensor's name by rd_tensor. */
static int rd_dims(struct rd *r, gguf_tensor *t, uint64_t at) {
    if (rd_u32(r, &t->n_dims, "tensor n_dims")) return UM_FAIL;
    if (t->n_dims < 1 || t->n_dims > GGUF_MAX_DIMS)
        return um_errf(r->e, "n_dims %u is not in 1..%d (at byte %llu)", t->n_dims,
                       GGUF_MAX_DIMS, (unsigned long long)at);
    t->n_elements = 1;
    bool overflow = false;
    for (uint32_t d = 0; d < GGUF_MAX_DIMS; d++) {
        t->ne[d] = 1;
        if (d < t->n_dims && rd_u64(r, &t->ne[d], "tensor dimension")) return UM_FAIL;
        if (t->ne[d] > (uint64_t)INT64_MAX || !um_mul_ok(t->n_elements, t->ne[d], &t->n_elements)) overflow = true;
    }
    if (overflow || t->n_elements > (uint64_t)INT64_MAX)
        return um_errf(r->e, "element count %llu x %llu x %llu x %llu overflows (at byte %llu)",
                       (unsigned long long)t->ne[0], (unsigned long long)t->ne[1],
                       (unsigned long long)t->ne[2], (unsigned long long)t->ne[3], (unsigned long long)at);
    if (rd_u32(r, &t->type, "tensor type") || rd_u64(r, &t->offset, "tensor offset")) return UM_FAIL;
    uint32_t blck = um_type_blck(t->type);
    if (!blck)
        return um_errf(r->e, "unknown type id %u (at byte %llu)", t->type,
                       (unsigned long long)at);
    if (t->ne[0] % blck)
        return um_errf(r->e, "ne[0] = %llu is not a multiple of the %s block size %u (at byte %llu)",
                       (unsigned long long)t->ne[0], um_type_name(t->type), blck, (unsigned long long)at);
    if (!um_mul_ok(t->n_elements / blck, um_type_bytes(t->type), &t->size))
        return um_errf(r->e, "byte size overflows (at byte %llu)", (unsigned long long)at);
    return UM_OK;
}

static int rd_tensor(struct rd *r, gguf_tensor *t) {
    uint64_t at = r->off;
    if (rd_str(r, &t->name, GGUF_MAX_NAME, "tensor name")) return UM_FAIL;
    return rd_dims(r, t, at) ? um_err_prefix(r->e, "tensor '%s'", gguf_show(t->name).s) : UM_OK;
}

/* ------------------------------------------------------------------ reader */

static int cmp_by_offset(const void *a, const void *b, void *ctx) {
    const gguf_tensor *t = ctx;
    uint32_t i = *(const uint32_t *)a, j = *(const uint32_t *)b;
    uint64_t x = t[i].offset, y = t[j].offset;
    return x != y ? (x < y ? -1 : 1) : (i > j) - (i < j);      /* ties in file order */
}

/* Index the names; fail on a duplicate (parts: see gguf_index_tensors). */
static int build_index(gguf_file *g, bool tensors, gguf_file *const *parts, um_err *e) {
    uint64_t n = tensors ? g->n_tensors : g->n_kv, tn = hash_size(n);
    uint32_t *table = um_calloc(tn, sizeof *table);
    if (!table) return um_errf(e, "out of memory indexing %llu names", (unsigned long long)n);
    if (tensors) free(g->t_hash), g->t_hash = table, g->t_hash_n = tn;
    else         g->kv_hash = table, g->kv_hash_n = tn;
    for (uint64_t i = 0; i < n; i++) {
        gguf_str s = tensors ? g->tensors[i].name : g->kv[i].key;
        uint64_t slot = hash_slot(g, table, tn, tensors ? t_name : kv_name, s.ptr, s.len);
        if (table[slot] && parts)
            return um_errf(e, "tensor '%s' is in two parts of the split model: %s and %s", gguf_show(s).s,
                           parts[g->tensors[table[slot] - 1].part]->path, parts[g->tensors[i].part]->path);
        if (table[slot])
            return um_errf(e, "duplicate %s '%s' (at byte %llu)", tensors ? "tensor name" : "key", gguf_show(s).s,
                           (unsigned long long)(tensors ? (uint64_t)((const uint8_t *)s.ptr - g->base) - 8
                                                        : g->kv[i].offset));
        table[slot] = (uint32_t)i + 1;
    }
    return UM_OK;
}

int gguf_index_tensors(gguf_file *g, gguf_file *const *parts, um_err *e) {
    return build_index(g, true, parts, e);
}

static int check_alignment(gguf_file *g, um_err *e) {
    g->alignment = GGUF_DEFAULT_ALIGNMENT;
    const gguf_kv *kv = gguf_find_kv(g, "general.alignment");
    if (!kv) return UM_OK;
    if (kv->type != GGUF_TYPE_UINT32)
        return um_errf(e, "general.alignment has type %s, expected uint32 (at byte %llu)",
                       gguf_type_name(kv->type), (unsigned long long)kv->offset);
    if (kv->v.u == 0 || (kv->v.u & (kv->v.u - 1)))
        return um_errf(e, "general.alignment %llu is not a power of two (at byte %llu)",
                       (unsigned long long)kv->v.u, (unsigned long long)kv->offset);
    g->alignment = kv->v.u;
    return UM_OK;
}

/* Place every tensor: aligned, inside the file, no two overlapping. */
static int check_tensor_data(gguf_file *g, const uint64_t *info_off, um_err *e) {
    uint64_t A = g->alignment;
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        gguf_tensor *t = &g->tensors[i];
        gguf_shown nm = gguf_show(t->name);
        uint64_t beg, end;
        if (t->offset % A)
            return um_errf(e, "tensor '%s': data offset %llu is not a multiple of the alignment %llu (at byte %llu)",
                           nm.s, (unsigned long long)t->offset, (unsigned long long)A, (unsigned long long)info_off[i]);
        if (!um_add_ok(g->data_off, t->offset, &beg) || !um_add_ok(beg, t->size, &end))
            return um_errf(e, "tensor '%s': data offset %llu + %llu bytes overflows (at byte %llu)", nm.s,
                           (unsigned long long)t->offset, (unsigned long long)t->size, (unsigned long long)info_off[i]);
        if (end > g->size)
            return um_errf(e, "tensor '%s': data [%llu, %llu) ends past end of file (size %llu) (at byte %llu)",
                           nm.s, (unsigned long long)beg, (unsigned long long)end, (unsigned long long)g->size,
                           (unsigned long long)info_off[i]);
        t->data = g->base + beg;
    }
    uint32_t *order = um_malloc(g->n_tensors * sizeof *order);
    if (!order) return um_errf(e, "out of memory sorting %llu tensors", (unsigned long long)g->n_tensors);
    for (uint64_t i = 0; i < g->n_tensors; i++) order[i] = (uint32_t)i;
    um_qsort_r(order, g->n_tensors, sizeof *order, cmp_by_offset, g->tensors);
    int rc = UM_OK;
    int64_t last = -1;          /* tensor with the furthest end so far */
    uint64_t last_end = 0;
    for (uint64_t k = 0; k < g->n_tensors && rc == UM_OK; k++) {
        const gguf_tensor *t = &g->tensors[order[k]];
        if (t->size == 0) continue;
        if (last >= 0 && t->offset < last_end) {
            const gguf_tensor *p = &g->tensors[last];
            rc = um_errf(e, "tensor '%s': data [%llu, %llu) overlaps tensor '%s' [%llu, %llu) (at byte %llu)",
                         gguf_show(t->name).s, (unsigned long long)(g->data_off + t->offset),
                         (unsigned long long)(g->data_off + t->offset + t->size), gguf_show(p->name).s,
                         (unsigned long long)(g->data_off + p->offset), (unsigned long long)(g->data_off + last_end),
                         (unsigned long long)info_off[order[k]]);
        }
        if (t->offset + t->size > last_end) last_end = t->offset + t->size, last = order[k];
    }
    free(order);
    return rc;
}

static int parse(gguf_file *g, um_err *e) {
    struct rd r = { g->base, g->size, 0, e };
    uint32_t magic;
    if (rd_u32(&r, &magic, "magic")) return UM_FAIL;
    if (magic != GGUF_MAGIC)
        return um_errf(e, "bad magic 0x%08x, not a GGUF file (at byte 0)", magic);
    if (rd_u32(&r, &g->version, "version")) return UM_FAIL;
    if (g->version != 2 && g->version != 3)
        return um_errf(e, "unsupported GGUF version %u (unmask reads 2 and 3%s) (at byte 4)", g->version,
                       (g->version & 0xffff) == 0 ? "; big-endian file?" : "");
    if (rd_u64(&r, &g->n_tensors, "tensor count") || rd_u64(&r, &g->n_kv, "key count")) return UM_FAIL;
    if (g->n_tensors > GGUF_MAX_TENSORS)
        return um_errf(e, "tensor count %llu exceeds the limit %u (at byte 8)", (unsigned long long)g->n_tensors,
                       GGUF_MAX_TENSORS);
    if (g->n_kv > GGUF_MAX_KV)
        return um_errf(e, "key count %llu exceeds the limit %u (at byte 16)", (unsigned long long)g->n_kv, GGUF_MAX_KV);
    if (g->n_kv * MIN_KV_BYTES + g->n_tensors * MIN_TENSOR_BYTES > left(&r))
        return um_errf(e, "%llu keys and %llu tensors cannot fit in the %llu bytes left (at byte 8)",
                       (unsigned long long)g->n_kv, (unsigned long long)g->n_tensors, (unsigned long long)left(&r));

    g->kv = um_calloc(g->n_kv, sizeof *g->kv);
    g->tensors = um_calloc(g->n_tensors, sizeof *g->tensors);
    uint64_t *info_off = um_calloc(g->n_tensors, sizeof *info_off);
    int rc = UM_FAIL;
    if (!g->kv || !g->tensors || !info_off) { um_errf(e, "out of memory"); goto out; }
    for (uint64_t i = 0; i < g->n_kv; i++)
        if (rd_kv(&r, &g->kv[i])) goto out;
    if (build_index(g, false, NULL, e) || check_alignment(g, e)) goto out;
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        info_off[i] = r.off;
        if (rd_tensor(&r, &g->tensors[i])) goto out;
    }
    if (build_index(g, true, NULL, e)) goto out;
    g->data_off = (r.off + g->alignment - 1) & ~(g->alignment - 1);   /* r.off < 2^63, no wrap */
    rc = check_tensor_data(g, info_off, e);
out:
    free(info_off);
    return rc;
}

int gguf_open_mem(gguf_file **out, const void *data, size_t size, um_err *e) {
    *out = NULL;
    gguf_file *g = um_calloc(1, sizeof *g);
    if (!g) return um_errf(e, "out of memory");
    g->base = data;
    g->size = size;
    g->path = strdup("");
    if (!g->path || parse(g, e)) {
        if (!g->path) um_errf(e, "out of memory");
        gguf_close(g);
        return UM_FAIL;
    }
    g->n_own = g->n_tensors;
    g->n_parts = 1;
    *out = g;
    return UM_OK;
}

int gguf_open_one(gguf_file **out, const char *path, um_err *e) {
    *out = NULL;
    struct stat st;
    int fd = infile_open(path, &st, e);
    if (fd < 0) return UM_FAIL;
    const void *base = NULL;
    if (st.st_size > 0) {
        base = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (base == MAP_FAILED) {
            int err = errno;
            close(fd);
            return um_errf(e, "%s: mmap: %s", path, strerror(err));
        }
    }
    close(fd);
    gguf_file *g = um_calloc(1, sizeof *g);
    if (!g) {
        if (base) munmap((void *)base, (size_t)st.st_size);
        return um_errf(e, "%s: out of memory", path);
    }
    g->base = base;
    g->size = (uint64_t)st.st_size;
    g->mapped = base != NULL;
    g->path = strdup(path);
    if (!g->path || parse(g, e)) {
        if (!g->path) um_errf(e, "out of memory");
        um_err_prefix(e, "%s", path);
        gguf_close(g);
        return UM_FAIL;
    }
    g->n_own = g->n_tensors;
    g->n_parts = 1;
    *out = g;
    return UM_OK;
}

void gguf_close(gguf_file *g) {
    if (!g) return;
    for (uint32_t i = 0; g->extra && i + 1 < g->n_parts; i++) gguf_close(g->extra[i]);
    free(g->extra);
    for (uint64_t i = 0; g->kv && i < g->n_kv; i++) free(g->kv[i].arr_str);
    free(g->kv);
    free(g->tensors);
    free(g->kv_hash);
    free(g->t_hash);
    free(g->path);
    if (g->mapped) munmap((void *)g->base, g->size);
    free(g);
}

uint32_t gguf_version(const gguf_file *g)     { return g->version; }
uint64_t gguf_file_size(const gguf_file *g) {
    uint64_t n = g->size;
    for (uint32_t i = 0; i + 1 < g->n_parts; i++) n += g->extra[i]->size;
    return n;
}
uint32_t gguf_n_parts(const gguf_file *g)     { return g->n_parts; }

gguf_part gguf_part_at(const gguf_file *g, uint32_t i) {
    const gguf_file *p = i == 0 || i >= g->n_parts ? g : g->extra[i - 1];
    return (gguf_part){ p->path, p->size, p->n_own, p->data_off };
}
uint64_t gguf_alignment(const gguf_file *g)   { return g->alignment; }
uint64_t gguf_data_offset(const gguf_file *g) { return g->data_off; }
const char *gguf_path(const gguf_file *g)     { return g->path; }
uint64_t gguf_n_kv(const gguf_file *g)        { return g->n_kv; }
uint64_t gguf_n_tensors(const gguf_file *g)   { return g->n_tensors; }

const gguf_kv *gguf_kv_at(const gguf_file *g, uint64_t i) { return i < g->n_kv ? &g->kv[i] : NULL; }
const gguf_tensor *gguf_tensor_at(const gguf_file *g, uint64_t i) { return i < g->n_tensors ? &g->tensors[i] : NULL; }

const gguf_kv *gguf_find_kv(const gguf_file *g, const char *key) {
    if (!g->kv_hash) return NULL;
    uint64_t s = hash_slot(g, g->kv_hash, g->kv_hash_n, kv_name, key, strlen(key));
    return g->kv_hash[s] ? &g->kv[g->kv_hash[s] - 1] : NULL;
}

const gguf_tensor *gguf_find_tensor(const gguf_file *g, const char *name) {
    if (!g->t_hash) return NULL;
    uint64_t s = hash_slot(g, g->t_hash, g->t_hash_n, t_name, name, strlen(name));
    return g->t_hash[s] ? &g->tensors[g->t_hash[s] - 1] : NULL;
}

/* ------------------------------------------------------------------ getters */

static const gguf_kv *find_typed(const gguf_file *g, const char *key, um_err *e) {
    const gguf_kv *kv = gguf_find_kv(g, key);
    if (!kv) um_errf(e, "key '%s' missing", key);
    return kv;
}

static int wrong_type(const gguf_kv *kv, const char *key, const char *want, um_err *e) {
    if (kv->type == GGUF_TYPE_ARRAY)
        return um_errf(e, "key '%s' has type array of %s, expected %s", key, gguf_type_name(kv->arr_type), want);
    return um_errf(e, "key '%s' has type %s, expected %s", key, gguf_type_name(kv->type), want);
}

/* Any integer key into [lo, hi] (signed view when the key is signed). */
static int get_int(const gguf_file *g, const char *key, bool want_signed, uint64_t umax, int64_t *sv,
                   uint64_t *uv, const char *want, um_err *e) {
    const gguf_kv *kv = find_typed(g, key, e);
    if (!kv) return UM_FAIL;
    if (!is_int_type(kv->type)) return wrong_type(kv, key, want, e);
    bool neg = is_signed_type(kv->type) && kv->v.i < 0;
    uint64_t mag = is_signed_type(kv->type) && !neg ? (uint64_t)kv->v.i : kv->v.u;
    if (want_signed) {
        if (!neg && mag > (uint64_t)INT64_MAX)
            return um_errf(e, "key '%s' has value %llu, out of range for %s", key, (unsigned long long)mag, want);
        *sv = neg ? kv->v.i : (int64_t)mag;
        return UM_OK;
    }
    if (neg)
        return um_errf(e, "key '%s' has value %lld, out of range for %s", key, (long long)kv->v.i, want);
    if (mag > umax)
        return um_errf(e, "key '%s' has value %llu, out of range for %s", key, (unsigned long long)mag, want);
    *uv = mag;
    return UM_OK;
}

int gguf_get_u32(const gguf_file *g, const char *key, uint32_t *v, um_err *e) {
    uint64_t u;
    if (get_int(g, key, false, UINT32_MAX, NULL, &u, "uint32", e)) return UM_FAIL;
    *v = (uint32_t)u;
    return UM_OK;
}
int gguf_get_u64(const gguf_file *g, const char *key, uint64_t *v, um_err *e) {
    return get_int(g, key, false, UINT64_MAX, NULL, v, "uint64", e);
}
int gguf_get_i64(const gguf_file *g, const char *key, int64_t *v, um_err *e) {
    return get_int(g, key, true, 0, v, NULL, "int64", e);
}

int gguf_get_f32(const gguf_file *g, const char *key, float *v, um_err *e) {
    const gguf_kv *kv = find_typed(g, key, e);
    if (!kv) return UM_FAIL;
    if (kv->type != GGUF_TYPE_FLOAT32 && kv->type != GGUF_TYPE_FLOAT64) return wrong_type(kv, key, "float32", e);
    *v = (float)kv->v.f;
    return UM_OK;
}

int gguf_get_bool(const gguf_file *g, const char *key, bool *v, um_err *e) {
    const gguf_kv *kv = find_typed(g, key, e);
    if (!kv) return UM_FAIL;
    if (kv->type != GGUF_TYPE_BOOL) return wrong_type(kv, key, "bool", e);
    *v = kv->v.u != 0;
    return UM_OK;
}

int gguf_get_str(const gguf_file *g, const char *key, char *buf, size_t cap, um_err *e) {
    const gguf_kv *kv = find_typed(g, key, e);
    if (!kv) return UM_FAIL;
    if (kv->type != GGUF_TYPE_STRING) return wrong_type(kv, key, "string", e);
    if (kv->v.s.len >= cap)
        return um_errf(e, "key '%s' is a string of %llu bytes, longer than the %zu-byte buffer", key,
                       (unsigned long long)kv->v.s.len, cap ? cap - 1 : 0);
    memcpy(buf, kv->v.s.ptr, kv->v.s.len);
    buf[kv->v.s.len] = 0;
    return UM_OK;
}

int gguf_get_arr(const gguf_file *g, const char *key, gguf_type elem_type, const gguf_kv **kv, um_err *e) {
    const gguf_kv *a = find_typed(g, key, e);
    *kv = NULL;
    if (!a) return UM_FAIL;
    char want[32];
    snprintf(want, sizeof want, "array of %s", elem_type == GGUF_TYPE_COUNT ? "any" : gguf_type_name(elem_type));
    if (a->type != GGUF_TYPE_ARRAY || (elem_type != GGUF_TYPE_COUNT && a->arr_type != elem_type))
        return wrong_type(a, key, want, e);
    *kv = a;
    return UM_OK;
}

double gguf_arr_f64(const gguf_kv *kv, uint64_t i) {
    gguf_kv tmp = { 0 };
    if (kv->arr_type == GGUF_TYPE_STRING) return 0;
    decode_scalar(&tmp, kv->arr_type, (const uint8_t *)kv->arr_data + i * type_sizes[kv->arr_type]);
    if (kv->arr_type == GGUF_TYPE_FLOAT32 || kv->arr_type == GGUF_TYPE_FLOAT64) return tmp.v.f;
    return is_signed_type(kv->arr_type) ? (double)tmp.v.i : (double)tmp.v.u;
}

/* Floats are truncated toward zero and saturated (NaN gives 0): hostile values never trap. */
int64_t gguf_arr_i64(const gguf_kv *kv, uint64_t i) {
    gguf_kv tmp = { 0 };
    if (kv->arr_type == GGUF_TYPE_STRING) return 0;
    decode_scalar(&tmp, kv->arr_type, (const uint8_t *)kv->arr_data + i * type_sizes[kv->arr_type]);
    if (kv->arr_type == GGUF_TYPE_FLOAT32 || kv->arr_type == GGUF_TYPE_FLOAT64) {
        double f = tmp.v.f;
        return f != f ? 0 : f >= 0x1p63 ? INT64_MAX : f <= -0x1p63 ? INT64_MIN : (int64_t)f;
    }
    return is_signed_type(kv->arr_type) ? tmp.v.i : (int64_t)tmp.v.u;
}

/* ------------------------------------------------------------------ writer
 * Each key's value is serialized (type id + payload, exactly as in the file) when it is
 * set, so writing is a plain concatenation. The host is little-endian (x86-64), as GGUF.
 */

typedef struct wkv {
    char    *key;
    uint8_t *val;               /* (len) serialized type + value */
    size_t   len;               /* bytes */
} wkv;

typedef struct wtensor {
    char       *name;
    uint32_t    type, n_dims;
    uint64_t    ne[GGUF_MAX_DIMS];
    const void *data;           /* caller's, (size) bytes */
    uint64_t    size;
} wtensor;

struct gguf_writer {
    wkv     *kv;
    size_t   n_kv, cap_kv;
    wtensor *t;
    size_t   n_t, cap_t;
};

struct buf { uint8_t *p; size_t n, cap; bool oom; };

static void put(struct buf *b, const void *p, size_t n) {
    if (b->oom) return;
    if (b->n + n > b->cap) {
        size_t cap = b->cap ? b->cap : 64;
        while (cap < b->n + n) cap *= 2;
        uint8_t *q = realloc(b->p, cap);
        if (!q) { b->oom = true; return; }
        b->p = q, b->cap = cap;
    }
    if (n) memcpy(b->p + b->n, p, n);
    b->n += n;
}
static void put_u32(struct buf *b, uint32_t v) { put(b, &v, 4); }
static void put_u64(struct buf *b, uint64_t v) { put(b, &v, 8); }
static void put_str(struct buf *b, const char *s, uint64_t n) { put_u64(b, n); put(b, s, n); }

gguf_writer *gguf_writer_new(void) { return um_calloc(1, sizeof(gguf_writer)); }

void gguf_writer_free(gguf_writer *w) {
    if (!w) return;
    for (size_t i = 0; i < w->n_kv; i++) free(w->kv[i].key), free(w->kv[i].val);
    for (size_t i = 0; i < w->n_t; i++) free(w->t[i].name);
    free(w->kv);
    free(w->t);
    free(w);
}

static bool grow(void **arr, size_t *cap, size_t n, size_t elem) {
    if (n < *cap) return true;
    size_t c = *cap ? *cap * 2 : 16;
    void *p = realloc(*arr, c * elem);
    if (!p) return false;
    *arr = p, *cap = c;
    return true;
}

/* Take ownership of b's bytes as key's value (replacing an earlier value). */
static int set_kv(gguf_writer *w, const char *key, struct buf *b) {
    if (b->oom || strlen(key) > GGUF_MAX_NAME) { free(b->p); return UM_FAIL; }
    for (size_t i = 0; i < w->n_kv; i++)
        if (!strcmp(w->kv[i].key, key)) {
            free(w->kv[i].val);
            w->kv[i].val = b->p, w->kv[i].len = b->n;
            return UM_OK;
        }
    char *k = strdup(key);
    if (!k || !grow((void **)&w->kv, &w->cap_kv, w->n_kv, sizeof *w->kv)) { free(k); free(b->p); return UM_FAIL; }
    w->kv[w->n_kv++] = (wkv){ k, b->p, b->n };
    return UM_OK;
}

static int set_scalar(gguf_writer *w, const char *key, gguf_type t, const void *v) {
    struct buf b = { 0 };
    put_u32(&b, t);
    put(&b, v, type_sizes[t]);
    return set_kv(w, key, &b);
}

int gguf_set_u8 (gguf_writer *w, const char *key, uint8_t v)  { return set_scalar(w, key, GGUF_TYPE_UINT8, &v); }
int gguf_set_i8 (gguf_writer *w, const char *key, int8_t v)   { return set_scalar(w, key, GGUF_TYPE_INT8, &v); }
int gguf_set_u16(gguf_writer *w, const char *key, uint16_t v) { return set_scalar(w, key, GGUF_TYPE_UINT16, &v); }
int gguf_set_i16(gguf_writer *w, const char *key, int16_t v)  { return set_scalar(w, key, GGUF_TYPE_INT16, &v); }
int gguf_set_u32(gguf_writer *w, const char *key, uint32_t v) { return set_scalar(w, key, GGUF_TYPE_UINT32, &v); }
int gguf_set_i32(gguf_writer *w, const char *key, int32_t v)  { return set_scalar(w, key, GGUF_TYPE_INT32, &v); }
int gguf_set_u64(gguf_writer *w, const char *key, uint64_t v) { return set_scalar(w, key, GGUF_TYPE_UINT64, &v); }
int gguf_set_i64(gguf_writer *w, const char *key, int64_t v)  { return set_scalar(w, key, GGUF_TYPE_INT64, &v); }
int gguf_set_f32(gguf_writer *w, const char *key, float v)    { return set_scalar(w, key, GGUF_TYPE_FLOAT32, &v); }
int gguf_set_f64(gguf_writer *w, const char *key, double v)   { return set_scalar(w, key, GGUF_TYPE_FLOAT64, &v); }
int gguf_set_bool(gguf_writer *w, const char *key, bool v) {
    uint8_t b = v;
    return set_scalar(w, key, GGUF_TYPE_BOOL, &b);
}

int gguf_set_str(gguf_writer *w, const char *key, const char *v) {
    struct buf b = { 0 };
    put_u32(&b, GGUF_TYPE_STRING);
    put_str(&b, v, strlen(v));
    return set_kv(w, key, &b);
}

int gguf_set_arr(gguf_writer *w, const char *key, gguf_type elem_type, const void *data, uint64_t n) {
    uint64_t bytes;
    if ((unsigned)elem_type >= GGUF_TYPE_COUNT || !type_sizes[elem_type] || !um_mul_ok(n, type_sizes[elem_type], &bytes))
        return UM_FAIL;
    struct buf b = { 0 };
    put_u32(&b, GGUF_TYPE_ARRAY);
    put_u32(&b, elem_type);
    put_u64(&b, n);
    put(&b, data, bytes);
    return set_kv(w, key, &b);
}

static int set_arr_views(gguf_writer *w, const char *key, const char *const *strs, const gguf_str *views, uint64_t n) {
    struct buf b = { 0 };
    put_u32(&b, GGUF_TYPE_ARRAY);
    put_u32(&b, GGUF_TYPE_STRING);
    put_u64(&b, n);
    for (uint64_t i = 0; i < n; i++)
        if (strs) put_str(&b, strs[i], strlen(strs[i]));
        else      put_str(&b, views[i].ptr, views[i].len);
    return set_kv(w, key, &b);
}

int gguf_set_arr_str(gguf_writer *w, const char *key, const char *const *strs, uint64_t n) {
    return set_arr_views(w, key, strs, NULL, n);
}

int gguf_copy_kv(gguf_writer *w, const gguf_file *src, const char *const *skip) {
    for (uint64_t i = 0; i < src->n_kv; i++) {
        const gguf_kv *kv = &src->kv[i];
        char *key = strndup(kv->key.ptr, kv->key.len);
        if (!key) return UM_FAIL;
        bool skipped = !strcmp(key, GGUF_KEY_SPLIT_NO) || !strcmp(key, GGUF_KEY_SPLIT_COUNT) ||
                       !strcmp(key, GGUF_KEY_SPLIT_TENSORS);
        for (const char *const *s = skip; s && *s && !skipped; s++) skipped = !strcmp(*s, key);
        int rc = UM_OK;
        if (skipped) {
        } else if (kv->type == GGUF_TYPE_ARRAY && kv->arr_type == GGUF_TYPE_STRING) {
            rc = set_arr_views(w, key, NULL, kv->arr_str, kv->arr_n);
        } else if (kv->type == GGUF_TYPE_ARRAY) {
            rc = gguf_set_arr(w, key, kv->arr_type, kv->arr_data, kv->arr_n);
        } else {
            struct buf b = { 0 };
            float f = (float)kv->v.f;
            put_u32(&b, kv->type);
            if (kv->type == GGUF_TYPE_STRING)       put_str(&b, kv->v.s.ptr, kv->v.s.len);
            else if (kv->type == GGUF_TYPE_FLOAT32) put(&b, &f, 4);
            else if (kv->type == GGUF_TYPE_FLOAT64) put(&b, &kv->v.f, 8);
            else                                    put(&b, &kv->v.u, type_sizes[kv->type]);   /* low bytes */
            rc = set_kv(w, key, &b);
        }
        free(key);
        if (rc) return UM_FAIL;
    }
    return UM_OK;
}

int gguf_add_tensor(gguf_writer *w, const char *name, uint32_t type, uint32_t n_dims,
                    const uint64_t *ne, const void *data, uint64_t size, um_err *e) {
    uint32_t blck = um_type_blck(type);
    uint64_t n = 1, want = 0;
    if (strlen(name) > GGUF_MAX_NAME) return um_errf(e, "tensor name longer than %u bytes", GGUF_MAX_NAME);
    if (!blck) return um_errf(e, "tensor '%s': unknown type id %u", name, type);
    if (n_dims < 1 || n_dims > GGUF_MAX_DIMS) return um_errf(e, "tensor '%s': n_dims %u is not in 1..%d", name, n_dims, GGUF_MAX_DIMS);
    for (uint32_t d = 0; d < n_dims; d++)
        if (ne[d] > (uint64_t)INT64_MAX || !um_mul_ok(n, ne[d], &n)) return um_errf(e, "tensor '%s': element count overflows", name);
    if (ne[0] % blck)
        return um_errf(e, "tensor '%s': ne[0] = %llu is not a multiple of the %s block size %u", name,
                       (unsigned long long)ne[0], um_type_name(type), blck);
    if (!um_mul_ok(n / blck, um_type_bytes(type), &want) || want != size)
        return um_errf(e, "tensor '%s': %llu bytes given, %s of this shape needs %llu", name,
                       (unsigned long long)size, um_type_name(type), (unsigned long long)want);
    for (size_t i = 0; i < w->n_t; i++)
        if (!strcmp(w->t[i].name, name)) return um_errf(e, "duplicate tensor name '%s'", name);
    wtensor t = { strdup(name), type, n_dims, { 1, 1, 1, 1 }, data, size };
    memcpy(t.ne, ne, n_dims * sizeof *ne);
    if (!t.name || !grow((void **)&w->t, &w->cap_t, w->n_t, sizeof *w->t)) {
        free(t.name);
        return um_errf(e, "out of memory");
    }
    w->t[w->n_t++] = t;
    return UM_OK;
}

static uint64_t align_up(uint64_t x, uint64_t a) { return (x + a - 1) & ~(a - 1); }

static const uint8_t zeros[256];

static bool pad(FILE *f, uint64_t n) {
    for (uint64_t k; n; n -= k) {
        k = UM_MIN(n, sizeof zeros);
        if (fwrite(zeros, 1, k, f) != k) return false;
    }
    return true;
}

static int write_stream(gguf_writer *w, FILE *f, um_err *e) {
    uint64_t A = GGUF_DEFAULT_ALIGNMENT;
    for (size_t i = 0; i < w->n_kv; i++) {
        if (strcmp(w->kv[i].key, "general.alignment")) continue;
        uint32_t t, v = 0;
        memcpy(&t, w->kv[i].val, 4);
        if (t == GGUF_TYPE_UINT32) memcpy(&v, w->kv[i].val + 4, 4);
        if (t != GGUF_TYPE_UINT32 || v == 0 || (v & (v - 1)) || v > 65536)
            return um_errf(e, "general.alignment must be a uint32 power of two up to 65536");
        A = v;
    }
    struct buf h = { 0 };
    put_u32(&h, GGUF_MAGIC);
    put_u32(&h, 3);
    put_u64(&h, w->n_t);
    put_u64(&h, w->n_kv);
    for (size_t i = 0; i < w->n_kv; i++) {
        put_str(&h, w->kv[i].key, strlen(w->kv[i].key));
        put(&h, w->kv[i].val, w->kv[i].len);
    }
    uint64_t off = 0;
    for (size_t i = 0; i < w->n_t; i++) {
        const wtensor *t = &w->t[i];
        put_str(&h, t->name, strlen(t->name));
        put_u32(&h, t->n_dims);
        put(&h, t->ne, t->n_dims * sizeof t->ne[0]);
        put_u32(&h, t->type);
        put_u64(&h, off);
        off = align_up(off + t->size, A);
    }
    bool ok = !h.oom && fwrite(h.p, 1, h.n, f) == h.n && pad(f, align_up(h.n, A) - h.n);
    free(h.p);
    for (size_t i = 0; ok && i < w->n_t; i++) {
        const wtensor *t = &w->t[i];
        ok = fwrite(t->data, 1, t->size, f) == t->size && pad(f, align_up(t->size, A) - t->size);
    }
    if (!ok || fflush(f) != 0) return um_errf(e, "write failed: %s", h.oom ? "out of memory" : strerror(errno));
    return UM_OK;
}

int gguf_writer_write_to(gguf_writer *w, outfile *o, um_err *e) {
    return write_stream(w, outfile_stream(o), e) ? um_err_prefix(e, "%s", outfile_path(o)) : UM_OK;
}

int gguf_writer_write(gguf_writer *w, const char *path, um_err *e) {
    outfile *o;
    if (outfile_open(&o, path, e)) return UM_FAIL;
    if (gguf_writer_write_to(w, o, e)) {
        outfile_abort(o);
        return UM_FAIL;
    }
    return outfile_commit(o, e);
}

int gguf_writer_write_mem(gguf_writer *w, uint8_t **data, size_t *size, um_err *e) {
    char *p = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&p, &n);
    if (!f) return um_errf(e, "open_memstream: %s", strerror(errno));
    int rc = write_stream(w, f, e);
    fclose(f);
    if (rc != UM_OK) { free(p); p = NULL, n = 0; }
    *data = (uint8_t *)p;
    *size = n;
    return rc;
}
