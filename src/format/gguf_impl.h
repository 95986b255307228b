/*
 * gguf_impl: the open file's layout and the helpers both halves of the GGUF module use,
 * private to src/format: gguf.c parses one file (invariants in its header), gguf_split.c
 * opens files (gguf_open), joins the parts of a split model into the first part, writes parts.
 */
#ifndef UM_GGUF_IMPL_H
#define UM_GGUF_IMPL_H

#include "gguf.h"

struct gguf_file {
    const uint8_t *base;        /* the whole file (mapping or caller buffer) */
    uint64_t       size;        /* bytes */
    bool           mapped;      /* base came from mmap and must be unmapped */
    char          *path;        /* "" for memory files */
    uint32_t       version;
    uint64_t       alignment;   /* power of two */
    uint64_t       data_off;    /* start of the tensor data section, aligned */
    uint64_t       n_kv;
    gguf_kv       *kv;          /* (n_kv) */
    uint64_t       n_tensors;   /* over all parts */
    gguf_tensor   *tensors;     /* (n_tensors) every part's, in part order */
    uint32_t      *kv_hash;     /* (kv_hash_n) open addressing, index + 1, 0 = empty */
    uint32_t      *t_hash;      /* (t_hash_n) same for tensor names */
    uint64_t       kv_hash_n, t_hash_n;   /* powers of two, > 2 * count */
    uint64_t       n_own;       /* tensors whose data lies in this file itself */
    uint32_t       n_parts;     /* a split model's parts (the first is this file); 1 if plain */
    gguf_file    **extra;       /* (n_parts - 1) parts 2..N, owned; NULL for a plain file */
};

/* A view made printable for messages: its first 80 bytes escaped by esc.h's rule (and '\'
 * as "\\"), "..." after a cut. */
typedef struct gguf_shown { char s[336]; } gguf_shown;
gguf_shown gguf_show(gguf_str v);

/* Open and validate one file, never following split keys. */
int gguf_open_one(gguf_file **out, const char *path, um_err *e);
/* (Re)build g's tensor-name index over g->tensors; a duplicate fails. parts (NULL for one
 * file) are the split model's files by part number, named in the message. */
int gguf_index_tensors(gguf_file *g, gguf_file *const *parts, um_err *e);

#endif
