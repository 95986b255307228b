/*
 * gguf: reader and writer for GGUF files (versions 2 and 3), the format llama.cpp uses.
 *
 * Reader invariants: the file is mmapped read-only and treated as hostile. Every count,
 * string length, array length, dimension product, type id, offset and size is checked
 * against the file size and sane limits before it is used; a failure returns UM_FAIL with
 * a message naming the problem and the byte offset. Strings and numeric arrays are views
 * into the mapping (not NUL-terminated); they live as long as the gguf_file.
 *
 * Writer: builds a v3 file in memory-light fashion (metadata is kept, tensor data is
 * referenced by pointer until gguf_writer_write) honouring general.alignment.
 *
 * Split models (llama.cpp's gguf-split layout): parts named PREFIX-00001-of-0000N.gguf, each a
 * complete GGUF file with split.no (u16, 0-based), split.count (u16) and split.tensors.count
 * (i32, tensors over all parts); the first part carries every other key. gguf_open given ANY
 * part's name opens and validates all N parts and presents them as one file: the keys are the
 * first part's, the tensors are every part's in part order (each gguf_tensor says which part
 * holds its data; its offset is relative to that part's data section), names are unique over
 * all parts and their number equals split.tensors.count. A plain file is one part.
 * (gguf.c parses one file and writes; gguf_split.c opens, joins parts and writes parts.)
 */
#ifndef UM_GGUF_H
#define UM_GGUF_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>
#include "util.h"

#define GGUF_MAGIC             0x46554747u   /* "GGUF" little-endian */
#define GGUF_DEFAULT_ALIGNMENT 32
#define GGUF_MAX_DIMS          4

/* Sane limits: far above any real model, low enough that no input makes us allocate
 * unbounded memory before the file size has been checked. */
#define GGUF_MAX_KV        (1u << 20)
#define GGUF_MAX_TENSORS   (1u << 20)
#define GGUF_MAX_NAME      65535u            /* tensor names and keys, bytes */

typedef enum gguf_type {
    GGUF_TYPE_UINT8   = 0,
    GGUF_TYPE_INT8    = 1,
    GGUF_TYPE_UINT16  = 2,
    GGUF_TYPE_INT16   = 3,
    GGUF_TYPE_UINT32  = 4,
    GGUF_TYPE_INT32   = 5,
    GGUF_TYPE_FLOAT32 = 6,
    GGUF_TYPE_BOOL    = 7,
    GGUF_TYPE_STRING  = 8,
    GGUF_TYPE_ARRAY   = 9,
    GGUF_TYPE_UINT64  = 10,
    GGUF_TYPE_INT64   = 11,
    GGUF_TYPE_FLOAT64 = 12,
    GGUF_TYPE_COUNT
} gguf_type;

typedef struct gguf_str {
    const char *ptr;            /* not NUL-terminated; points into the mapping (reader) */
    uint64_t    len;            /* bytes */
} gguf_str;

typedef struct gguf_kv {
    gguf_str  key;
    gguf_type type;
    /* scalars: exactly one member valid, chosen by type */
    union {
        uint64_t u;             /* UINT8..UINT64 and BOOL (0/1) */
        int64_t  i;             /* INT8..INT64 */
        double   f;             /* FLOAT32 / FLOAT64 */
        gguf_str s;             /* STRING */
    } v;
    /* arrays (type == GGUF_TYPE_ARRAY) */
    gguf_type       arr_type;   /* element type; never ARRAY (nested arrays are rejected) */
    uint64_t        arr_n;      /* element count */
    const void     *arr_data;   /* numeric elements, packed little-endian, in the mapping */
    gguf_str       *arr_str;    /* string elements (heap array of views), when arr_type == STRING */
    uint64_t        offset;     /* byte offset of the key in the file, for messages */
} gguf_kv;

typedef struct gguf_tensor {
    gguf_str    name;
    uint32_t    n_dims;
    uint64_t    ne[GGUF_MAX_DIMS];  /* elements per dim, ne[0] fastest; unused dims = 1 */
    uint32_t    type;               /* ggml type id (see quant.h) */
    uint64_t    offset;             /* relative to the data section start of its part */
    uint64_t    size;               /* bytes, computed from type and shape */
    uint64_t    n_elements;
    const void *data;               /* in the mapping (reader) */
    uint32_t    part;               /* part holding the data (0 unless a split model) */
} gguf_tensor;

/* One part of a (split) model, for listing. */
typedef struct gguf_part {
    const char *path;
    uint64_t    size;               /* bytes of this part's file */
    uint64_t    n_tensors;          /* tensors whose data lies in this part */
    uint64_t    data_offset;        /* start of this part's tensor data section */
} gguf_part;

/* Split-model keys and file names (llama.cpp: src/llama-arch.cpp LLM_KV_SPLIT_*,
 * src/llama.cpp llama_split_path "%s-%05d-of-%05d.gguf" with split_no + 1). */
#define GGUF_KEY_SPLIT_NO       "split.no"
#define GGUF_KEY_SPLIT_COUNT    "split.count"
#define GGUF_KEY_SPLIT_TENSORS  "split.tensors.count"
#define GGUF_SPLIT_MAX          65535u      /* split.count is a u16 */

typedef struct gguf_file gguf_file;

/* Open (under infile.h's rule: a regular file, never blocking) and validate. On failure *out
 * is NULL and e holds "<path>: <problem> (at byte N)". A part of a split model opens the
 * whole model (see above); a missing or mismatched part fails naming that part's path. */
int  gguf_open(gguf_file **out, const char *path, um_err *e);
/* Same, over a caller-owned buffer (fuzzing, tests). The buffer must outlive the file.
 * Always one part: split keys are not followed. */
int  gguf_open_mem(gguf_file **out, const void *data, size_t size, um_err *e);
void gguf_close(gguf_file *g);

uint32_t           gguf_version(const gguf_file *g);
uint64_t           gguf_file_size(const gguf_file *g);     /* bytes, summed over all parts */
uint64_t           gguf_alignment(const gguf_file *g);     /* the first part's */
uint64_t           gguf_data_offset(const gguf_file *g);   /* start of (the first part's) tensor data */
const char        *gguf_path(const gguf_file *g);          /* the first part's; "" for memory files */
uint32_t           gguf_n_parts(const gguf_file *g);       /* 1 unless a split model */
gguf_part          gguf_part_at(const gguf_file *g, uint32_t i);   /* i < gguf_n_parts */

uint64_t           gguf_n_kv(const gguf_file *g);
const gguf_kv     *gguf_kv_at(const gguf_file *g, uint64_t i);
const gguf_kv     *gguf_find_kv(const gguf_file *g, const char *key);   /* NULL if absent */

uint64_t           gguf_n_tensors(const gguf_file *g);     /* over all parts */
const gguf_tensor *gguf_tensor_at(const gguf_file *g, uint64_t i);
const gguf_tensor *gguf_find_tensor(const gguf_file *g, const char *name);

/* Typed getters. Return UM_OK, or UM_FAIL with "key 'K' missing" or
 * "key 'K' has type T, expected U". Integer getters accept any integer type whose value
 * fits the destination (a u32 key read as u64 is fine; -1 read as u32 is an error). */
int gguf_get_u32(const gguf_file *g, const char *key, uint32_t *v, um_err *e);
int gguf_get_u64(const gguf_file *g, const char *key, uint64_t *v, um_err *e);
int gguf_get_i64(const gguf_file *g, const char *key, int64_t *v, um_err *e);
int gguf_get_f32(const gguf_file *g, const char *key, float *v, um_err *e);   /* F32 or F64 */
int gguf_get_bool(const gguf_file *g, const char *key, bool *v, um_err *e);
/* String into a caller buffer (NUL-terminated; error if it does not fit). */
int gguf_get_str(const gguf_file *g, const char *key, char *buf, size_t cap, um_err *e);
/* Array view; error unless the key is an array of elem_type (pass GGUF_TYPE_COUNT for any). */
int gguf_get_arr(const gguf_file *g, const char *key, gguf_type elem_type,
                 const gguf_kv **kv, um_err *e);
/* Read element i of a numeric array as double / int64 (bounds-checked by caller via arr_n). */
double  gguf_arr_f64(const gguf_kv *kv, uint64_t i);
int64_t gguf_arr_i64(const gguf_kv *kv, uint64_t i);

/* Compare a view with a C string. */
bool gguf_str_eq(gguf_str s, const char *c);

const char *gguf_type_name(gguf_type t);
size_t      gguf_type_size(gguf_type t);    /* scalar size in bytes; 0 for STRING/ARRAY */

/* ------------------------------------------------------------------ writer */

typedef struct gguf_writer gguf_writer;

gguf_writer *gguf_writer_new(void);
void         gguf_writer_free(gguf_writer *w);

/* Metadata, in insertion order; setting an existing key replaces its value. Strings are copied. */
int gguf_set_u8 (gguf_writer *w, const char *key, uint8_t v);
int gguf_set_i8 (gguf_writer *w, const char *key, int8_t v);
int gguf_set_u16(gguf_writer *w, const char *key, uint16_t v);
int gguf_set_i16(gguf_writer *w, const char *key, int16_t v);
int gguf_set_u32(gguf_writer *w, const char *key, uint32_t v);
int gguf_set_i32(gguf_writer *w, const char *key, int32_t v);
int gguf_set_u64(gguf_writer *w, const char *key, uint64_t v);
int gguf_set_i64(gguf_writer *w, const char *key, int64_t v);
int gguf_set_f32(gguf_writer *w, const char *key, float v);
int gguf_set_f64(gguf_writer *w, const char *key, double v);
int gguf_set_bool(gguf_writer *w, const char *key, bool v);
int gguf_set_str(gguf_writer *w, const char *key, const char *v);
/* Numeric array: n elements of elem_type packed little-endian in data (copied). */
int gguf_set_arr(gguf_writer *w, const char *key, gguf_type elem_type, const void *data, uint64_t n);
int gguf_set_arr_str(gguf_writer *w, const char *key, const char *const *strs, uint64_t n);
/* Copy every key of an open file (except those in skip, NULL-terminated list, and the three
 * split.* keys: a copy is a new file, and a writer of parts sets them itself, as llama.cpp's
 * quantizer removes them, src/llama-quant.cpp gguf_remove_key(... LLM_KV_SPLIT_*)). */
int gguf_copy_kv(gguf_writer *w, const gguf_file *src, const char *const *skip);

/* Tensor: data must stay valid until gguf_writer_write (not copied). size is checked
 * against type and shape. ne has n_dims entries, ne[0] fastest. */
int gguf_add_tensor(gguf_writer *w, const char *name, uint32_t type, uint32_t n_dims,
                    const uint64_t *ne, const void *data, uint64_t size, um_err *e);

/* Write the file through outfile.h (a regular file atomically: a unique temporary in the same
 * directory, then rename; a FIFO or device directly; the stream is never seeked). Alignment
 * from general.alignment if set (must be a power of two), else 32. */
int gguf_writer_write(gguf_writer *w, const char *path, um_err *e);
struct outfile;
/* The same bytes into an output already open (outfile.h); the caller commits or aborts it. */
int gguf_writer_write_to(gguf_writer *w, struct outfile *o, um_err *e);
/* Same bytes into a malloc'd buffer (caller frees); for tests and fuzz seeds. */
int gguf_writer_write_mem(gguf_writer *w, uint8_t **data, size_t *size, um_err *e);

/* ------------------------------------------------------------------ split files */

/* PREFIX-%05d-of-%05d.gguf for 0-based part no of count (llama_split_path). UM_FAIL if it
 * does not fit in cap. */
int gguf_split_path(char *buf, size_t cap, const char *prefix, uint32_t no, uint32_t count);
/* The PREFIX of a part's path, if path ends in the suffix of part no of count
 * (llama_split_prefix); UM_FAIL otherwise or if it does not fit. */
int gguf_split_prefix(char *buf, size_t cap, const char *path, uint32_t no, uint32_t count);

/* gguf-split's plan (tools/gguf-split/gguf-split.cpp, split_strategy): tensors in file order,
 * a new part when max_tensors > 0 and the index is a positive multiple of it, or when
 * max_bytes > 0 and the part's data (each tensor padded to 32 bytes) would exceed it. Fills
 * part_of (n_tensors entries) and *n_parts; fails if a part would hold no tensor (a tensor
 * larger than max_bytes first) or more than GGUF_SPLIT_MAX parts result. Exactly one of
 * max_tensors and max_bytes is nonzero. */
int gguf_split_plan(const gguf_file *g, uint64_t max_tensors, uint64_t max_bytes,
                    uint32_t *part_of, uint32_t *n_parts, um_err *e);
/* Write every part of that plan, part i to paths[i], as one set (outfile.h rule 6): all the
 * parts, or none and every old file at those paths as it was. The first part gets every key
 * of g (less split.*), each part then split.no, split.tensors.count, split.count in that
 * order, and its tensors with n_dims as ggml writes it (trailing 1s dropped), so the bytes
 * equal gguf-split's for the same input and options. */
int gguf_split_write(const gguf_file *g, const uint32_t *part_of, uint32_t n_parts, char *const *paths, um_err *e);

struct outfile_set;
/* Rule 1 of outfile.h (never overwrite an input) for the other parts of split inputs: for each
 * input of s whose name (symlinks followed) is part k of n of a split, every output of s is
 * checked against the other n-1 parts' names, which gguf_open would read too. Inputs that are
 * not split parts add nothing. Run after outfile_check(s). */
int gguf_split_check_outputs(const struct outfile_set *s, um_err *e);

#endif
