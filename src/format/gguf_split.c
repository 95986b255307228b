/*
 * gguf_split: gguf_open, and split models in llama.cpp's gguf-split layout (gguf.h): joining
 * the parts of one when it is opened, and writing parts.
 *
 * Invariants: a joined model is its first part (gguf_impl.h) owning the others; every part
 * was opened and validated as a file of its own (gguf.c) before any split check; the joined
 * tensor table lists every part's tensors in part order, each with its part number, under
 * one name index with no duplicate; nothing is joined unless every part agrees on
 * split.count, carries split.no equal to its place, and the tensors number
 * split.tensors.count. On any failure every part opened so far is closed.
 */
#include "gguf_impl.h"
#include "outfile.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ reading
 * llama.cpp's conventions (v0.4.0 sources, read and cited, not copied):
 *  - src/llama.cpp llama_split_path: a part is "%s-%05d-of-%05d.gguf" of the prefix,
 *    split_no + 1 and split_count; llama_split_prefix: the prefix is the path less exactly
 *    that suffix, and must not be empty.
 *  - src/llama-model-loader.cpp, llama_model_loader's constructor: split.count (u16) > 1
 *    makes a split model; the file opened must have split.no 0 ("model must be loaded with
 *    the first split"); the others are named from its prefix (llama_get_list_splits), each
 *    must carry split.no equal to its index; a tensor name twice over all parts is an error
 *    ("tensor '%s' is duplicated"); split.tensors.count of the first part must equal the
 *    tensors found ("corrupted model: %d tensors expected but %d found").
 *  - tools/gguf-split/gguf-split.cpp, split_strategy: every part gets split.no, split.count
 *    and split.tensors.count, only the first every other key; each part's tensor data lies in
 *    that part.
 * unmask also opens the model from a part other than the first, and checks that every part
 * agrees with the first on split.count and (where present) split.tensors.count, so a part of
 * another split of the same name is caught rather than mixed in.
 */

#define SPLIT_PATH_MAX 4096

/* An integer split key of part p (any integer type) into [0, max]; messages name the file. */
static int split_key(const gguf_file *p, const char *key, uint64_t max, uint64_t *v, um_err *e) {
    if (gguf_get_u64(p, key, v, e)) return um_err_prefix(e, "%s", p->path);
    if (*v > max)
        return um_errf(e, "%s: key '%s' = %llu is out of range 0..%llu", p->path, key, (unsigned long long)*v,
                       (unsigned long long)max);
    return UM_OK;
}

int gguf_split_path(char *buf, size_t cap, const char *prefix, uint32_t no, uint32_t count) {
    int n = snprintf(buf, cap, "%s-%05u-of-%05u.gguf", prefix, no + 1, count);
    return n >= 0 && (size_t)n < cap ? UM_OK : UM_FAIL;
}

int gguf_split_prefix(char *buf, size_t cap, const char *path, uint32_t no, uint32_t count) {
    char suffix[48];
    snprintf(suffix, sizeof suffix, "-%05u-of-%05u.gguf", no + 1, count);
    size_t n = strlen(path), k = strlen(suffix);
    if (n <= k || strcmp(path + n - k, suffix) || n - k >= cap) return UM_FAIL;
    memcpy(buf, path, n - k);
    buf[n - k] = 0;
    return UM_OK;
}

/* parts[0..count) are open and each agrees on split.no and split.count; make parts[0] the
 * whole model. On failure the caller still owns every part. */
static int merge_parts(gguf_file *const *parts, uint32_t count, um_err *e) {
    gguf_file *g = parts[0];
    uint64_t want, total = 0;
    if (split_key(g, GGUF_KEY_SPLIT_TENSORS, INT32_MAX, &want, e)) return UM_FAIL;
    for (uint32_t i = 0; i < count; i++) {
        uint64_t w;
        if (gguf_find_kv(parts[i], GGUF_KEY_SPLIT_TENSORS)) {
            if (split_key(parts[i], GGUF_KEY_SPLIT_TENSORS, INT32_MAX, &w, e)) return UM_FAIL;
            if (w != want)
                return um_errf(e, "%s: split.tensors.count is %llu, but the first part %s says %llu "
                               "(a part of another split?)", parts[i]->path, (unsigned long long)w,
                               g->path, (unsigned long long)want);
        }
        total += parts[i]->n_own;
    }
    if (total != want)
        return um_errf(e, "%s: split.tensors.count is %llu, but the %u parts hold %llu tensors", g->path,
                       (unsigned long long)want, count, (unsigned long long)total);
    if (total > GGUF_MAX_TENSORS)          /* each part is within it; the sum may not be */
        return um_errf(e, "%s: %llu tensors over all parts exceed the limit %u", g->path,
                       (unsigned long long)total, GGUF_MAX_TENSORS);
    gguf_tensor *all = um_calloc(total ? total : 1, sizeof *all);   /* (total) in part order */
    if (!all) return um_errf(e, "out of memory for %llu tensors", (unsigned long long)total);
    uint64_t k = 0;
    for (uint32_t i = 0; i < count; i++)
        for (uint64_t j = 0; j < parts[i]->n_own; j++) {
            all[k] = parts[i]->tensors[j];
            all[k++].part = i;
        }
    free(g->tensors);
    g->tensors = all;
    g->n_tensors = total;
    return gguf_index_tensors(g, parts, e);
}

/* g was opened from path and has split.count: open the other parts and join them. Takes
 * ownership of g. */
static int open_split(gguf_file **out, gguf_file *g, const char *path, um_err *e) {
    gguf_file **parts = NULL;   /* (count) parts[i] is part i + 1 */
    uint64_t count, no;
    char prefix[SPLIT_PATH_MAX], pp[SPLIT_PATH_MAX];
    if (split_key(g, GGUF_KEY_SPLIT_COUNT, GGUF_SPLIT_MAX, &count, e)) goto fail_g;
    if (count == 0) { um_errf(e, "%s: split.count is 0", path); goto fail_g; }
    if (count == 1) { *out = g; return UM_OK; }           /* one part: a plain file */
    if (split_key(g, GGUF_KEY_SPLIT_NO, count - 1, &no, e)) goto fail_g;
    /* the name given, else where it links to (a link named otherwise, e.g. model.gguf) */
    bool named = gguf_split_prefix(prefix, sizeof prefix, path, (uint32_t)no, (uint32_t)count) == UM_OK;
    if (!named) {
        char *real = realpath(path, NULL);
        named = real && gguf_split_prefix(prefix, sizeof prefix, real, (uint32_t)no, (uint32_t)count) == UM_OK;
        free(real);
    }
    if (!named) {
        um_errf(e, "%s: part %llu of a %llu-part split model, but its name does not end in "
                "-%05llu-of-%05llu.gguf (renamed part?)", path, (unsigned long long)no + 1,
                (unsigned long long)count, (unsigned long long)no + 1, (unsigned long long)count);
        goto fail_g;
    }
    parts = um_calloc(count, sizeof *parts);
    if (!parts) { um_errf(e, "out of memory"); goto fail_g; }
    parts[no] = g;
    for (uint32_t i = 0; i < count; i++) {
        uint64_t c, n;
        if (!parts[i]) {
            if (gguf_split_path(pp, sizeof pp, prefix, i, (uint32_t)count)) {
                um_errf(e, "%s: part file name too long", path);
                goto fail;
            }
            if (gguf_open_one(&parts[i], pp, e)) {
                um_err_prefix(e, "part %u of %llu of the split model %s", i + 1, (unsigned long long)count, path);
                goto fail;
            }
        }
        if (split_key(parts[i], GGUF_KEY_SPLIT_COUNT, GGUF_SPLIT_MAX, &c, e)) goto fail;
        if (c != count) {
            um_errf(e, "%s: split.count is %llu, but %s says %llu (a part of another split?)", parts[i]->path,
                    (unsigned long long)c, path, (unsigned long long)count);
            goto fail;
        }
        if (split_key(parts[i], GGUF_KEY_SPLIT_NO, GGUF_SPLIT_MAX, &n, e)) goto fail;
        if (n != i) {
            um_errf(e, "%s: split.no is %llu, but its name makes it part %u of %llu (0-based split.no %u)",
                    parts[i]->path, (unsigned long long)n, i + 1, (unsigned long long)count, i);
            goto fail;
        }
    }
    if (merge_parts(parts, (uint32_t)count, e)) goto fail;
    g = parts[0];
    g->extra = um_malloc((count - 1) * sizeof *g->extra);
    if (!g->extra) { um_errf(e, "out of memory"); goto fail; }
    memcpy(g->extra, parts + 1, (count - 1) * sizeof *g->extra);
    g->n_parts = (uint32_t)count;
    free(parts);
    *out = g;
    return UM_OK;
fail:
    for (uint64_t i = 0; i < count; i++) gguf_close(parts[i]);
    free(parts);
    return UM_FAIL;
fail_g:
    gguf_close(g);
    return UM_FAIL;
}

int gguf_open(gguf_file **out, const char *path, um_err *e) {
    gguf_file *g;
    *out = NULL;
    if (gguf_open_one(&g, path, e)) return UM_FAIL;
    if (!gguf_find_kv(g, GGUF_KEY_SPLIT_COUNT)) {
        *out = g;
        return UM_OK;
    }
    return open_split(out, g, path, e);
}

/* ------------------------------------------------------------------ writing
 * gguf-split's layout (tools/gguf-split/gguf-split.cpp, split_strategy and write()): parts in
 * file order of the tensors; the first part gets gguf_set_kv(all keys), then every part
 * split.no (u16), split.count (u16, set once as a placeholder and again at the end: ggml's
 * gguf_set_val_* removes and re-appends a key, so it comes last), split.tensors.count (i32);
 * the meta data is padded to the alignment, each tensor's data to 32 bytes. ggml writes a
 * tensor's n_dims as ggml_n_dims (trailing dimensions of 1 dropped, at least 1).
 */

int gguf_split_plan(const gguf_file *g, uint64_t max_tensors, uint64_t max_bytes,
                    uint32_t *part_of, uint32_t *n_parts, um_err *e) {
    uint64_t cur = 0, in_part = 0;     /* padded data bytes / tensors in the current part */
    uint32_t part = 0;
    *n_parts = 0;
    if ((max_tensors == 0) == (max_bytes == 0))
        return um_errf(e, "give exactly one of a tensor count and a size per part");
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        const gguf_tensor *t = &g->tensors[i];
        uint64_t nb = (t->size + GGUF_DEFAULT_ALIGNMENT - 1) / GGUF_DEFAULT_ALIGNMENT * GGUF_DEFAULT_ALIGNMENT, next = cur + nb;
        bool split = max_bytes ? next > max_bytes : i > 0 && i % max_tensors == 0;
        if (split) {
            if (in_part == 0)
                return um_errf(e, "a part would hold no tensor: tensor '%s' needs %llu bytes, more than "
                               "the %llu bytes per part", gguf_show(t->name).s, (unsigned long long)nb,
                               (unsigned long long)max_bytes);
            if (part + 1 >= GGUF_SPLIT_MAX)
                return um_errf(e, "more than %u parts", GGUF_SPLIT_MAX);
            part++, cur = nb, in_part = 0;
        } else {
            cur = next;
        }
        part_of[i] = part;
        in_part++;
    }
    *n_parts = part + 1;
    return UM_OK;
}

/* Part `part` of the plan into o (open, not committed). */
static int write_part(const gguf_file *g, const uint32_t *part_of, uint32_t n_parts, uint32_t part, outfile *o,
                      um_err *e) {
    gguf_writer *w = gguf_writer_new();
    if (!w) return um_errf(e, "out of memory");
    int rc = UM_FAIL;
    if ((part == 0 && gguf_copy_kv(w, g, NULL)) || gguf_set_u16(w, GGUF_KEY_SPLIT_NO, (uint16_t)part) ||
        gguf_set_i32(w, GGUF_KEY_SPLIT_TENSORS, (int32_t)g->n_tensors) ||
        gguf_set_u16(w, GGUF_KEY_SPLIT_COUNT, (uint16_t)n_parts)) {
        um_errf(e, "out of memory");
        goto out;
    }
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        const gguf_tensor *t = &g->tensors[i];
        if (part_of[i] != part) continue;
        if (memchr(t->name.ptr, 0, t->name.len)) {
            um_errf(e, "tensor '%s': name holds a NUL byte", gguf_show(t->name).s);
            goto out;
        }
        char *name = strndup(t->name.ptr, t->name.len);
        uint32_t n_dims = GGUF_MAX_DIMS;
        while (n_dims > 1 && t->ne[n_dims - 1] == 1) n_dims--;          /* ggml_n_dims */
        int bad = !name ? um_errf(e, "out of memory")
                        : gguf_add_tensor(w, name, t->type, n_dims, t->ne, t->data, t->size, e);
        free(name);
        if (bad) goto out;
    }
    rc = gguf_writer_write_to(w, o, e);
out:
    gguf_writer_free(w);
    return rc;
}

int gguf_split_write(const gguf_file *g, const uint32_t *part_of, uint32_t n_parts, char *const *paths, um_err *e) {
    outfile_group *set;
    if (n_parts < 1 || n_parts > GGUF_SPLIT_MAX) return um_errf(e, "%u parts", n_parts);
    if (outfile_group_new(&set, (int)n_parts, e)) return UM_FAIL;
    for (uint32_t i = 0; i < n_parts; i++) {
        outfile *o;
        if (outfile_group_open(set, &o, paths[i], e)) goto fail;
        if (write_part(g, part_of, n_parts, i, o, e)) {
            outfile_abort(o);
            goto fail;
        }
        if (outfile_commit(o, e)) goto fail;        /* finished; renamed with the others */
    }
    return outfile_group_commit(set, e);
fail:
    outfile_group_abort(set);
    return UM_FAIL;
}

/* The split by name: "PREFIX-%05d-of-%05d.gguf" -> *no (0-based), *count; UM_FAIL if not. */
static int split_by_name(const char *path, uint32_t *no, uint32_t *count) {
    size_t n = strlen(path);
    const char *t = n >= 20 ? path + n - 20 : NULL;      /* "-00001-of-00003.gguf" */
    if (!t || t[0] != '-' || strncmp(t + 6, "-of-", 4) || strcmp(t + 15, ".gguf")) return UM_FAIL;
    uint32_t a = 0, b = 0;
    for (int i = 0; i < 5; i++) {
        if (t[1 + i] < '0' || t[1 + i] > '9' || t[10 + i] < '0' || t[10 + i] > '9') return UM_FAIL;
        a = a * 10 + (uint32_t)(t[1 + i] - '0');
        b = b * 10 + (uint32_t)(t[10 + i] - '0');
    }
    if (a < 1 || b < 2 || a > b) return UM_FAIL;
    *no = a - 1;
    *count = b;
    return UM_OK;
}

int gguf_split_check_outputs(const struct outfile_set *s, um_err *e) {
    for (int i = 0; i < s->n_in; i++) {
        if (!s->in[i].path) continue;
        char real[PATH_MAX], prefix[PATH_MAX], part[PATH_MAX], flag[96];
        const char *p = realpath(s->in[i].path, real) ? real : s->in[i].path;
        uint32_t no, count;
        if (split_by_name(p, &no, &count) || gguf_split_prefix(prefix, sizeof prefix, p, no, count)) continue;
        for (uint32_t k = 0; k < count; k++) {
            if (k == no || gguf_split_path(part, sizeof part, prefix, k, count)) continue;
            snprintf(flag, sizeof flag, "%s (its part %u of %u)", s->in[i].flag, k + 1, count);
            outfile_set one;
            outfile_set_init(&one);
            outfile_set_input(&one, flag, part);
            for (int j = 0; j < s->n_out; j++) outfile_set_output(&one, s->out[j].flag, s->out[j].path);
            if (outfile_check(&one, e)) return UM_FAIL;
        }
    }
    return UM_OK;
}
