/*
 * cmd_split: `unmask split [--split-max-tensors N | --split-max-size SIZE] IN.gguf OUTPREFIX`
 * writes a model as parts in llama.cpp's gguf-split layout (OUTPREFIX-00001-of-0000N.gguf,
 * split.no / split.count / split.tensors.count in every part, every other key in the first;
 * gguf.h), so a user can split without llama.cpp and get the same bytes.
 *
 * Files: IN may itself be any part of a split model (it is opened whole). Before anything is
 * written every part's name is checked against every input part by outfile_check (never
 * overwrite an input, refuse directories and special files, fail early on an unwritable
 * directory); the parts are then written as one set through outfile.h (rule 6): each to a
 * temporary file, all renamed into place only once every part is complete, so a failure
 * (a full disk in the last part) leaves an existing set of the same names as it was.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "flags.h"
#include "gguf.h"
#include "numparse.h"
#include "outfile.h"

#define PROG "unmask split"
#define DEFAULT_MAX_TENSORS 128         /* gguf-split's default (split_params.n_split_tensors) */

enum { SP_MAX_TENSORS = 1, SP_MAX_SIZE, SP_DRY_RUN };

#define SP FLAG_CMD_SPLIT
static const um_flag split_rows[] = {
    { 0, "split-max-tensors", "N", SP_MAX_TENSORS, SP, FLAG_RUN, NULL, 0, "at most N tensors per part (default 128)" },
    { 0, "split-max-size", "SIZE", SP_MAX_SIZE, SP, FLAG_RUN, NULL, 0,
      "at most SIZE bytes of tensor data per part (each tensor\n"
      "padded to 32 bytes); SIZE is a whole number with an\n"
      "optional unit K, M or G (1000, 10^6, 10^9), e.g. 2M" },
    { 0, "dry-run", NULL, SP_DRY_RUN, SP, FLAG_RUN, NULL, 0, "print the plan, write nothing" },
};
#undef SP

typedef struct split_opts { int64_t max_tensors; uint64_t max_bytes; bool dry_run; } split_opts;

static int parse_size(const char *v, uint64_t *out);

static int own_fn(void *ctx, const um_flag *f, const char *name, const char *v, const char *prog) {
    split_opts *o = ctx;
    if (f->id == SP_DRY_RUN) { o->dry_run = true; return 0; }
    bool by_size = f->id == SP_MAX_SIZE;
    if ((by_size && o->max_tensors) || (!by_size && o->max_bytes)) {
        fprintf(stderr, "%s: give either --split-max-tensors or --split-max-size, not both\n", prog);
        return -1;
    }
    return by_size ? (parse_size(v, &o->max_bytes) ? -1 : 0) : num_arg_int(prog, name, v, 1, GGUF_MAX_TENSORS, &o->max_tensors);
}

static void parser(flags_parser *p, flags_common *c, split_opts *o, const char **pos) {
    *p = (flags_parser){ .prog = PROG, .cmd = FLAG_CMD_SPLIT, .pos = pos, .max_pos = 2 };
    flags_add(p, split_rows, (int)(sizeof split_rows / sizeof split_rows[0]), own_fn, o, NULL);
    flags_add(p, flags_misc_rows, flags_misc_rows_n, flags_common_fn, c, NULL);
}

static void usage(FILE *f) {
    flags_parser p;
    parser(&p, NULL, NULL, NULL);
    fprintf(f,
        "usage: unmask split [options] IN.gguf OUTPREFIX\n"
        "\n"
        "Write the model IN as parts OUTPREFIX-00001-of-0000N.gguf ... in llama.cpp's\n"
        "gguf-split layout (the same names, keys and bytes): every part is a GGUF file with\n"
        "split.no, split.count and split.tensors.count, the first also every other key.\n"
        "Tensors keep their order. unmask and llama.cpp open the model from its first part\n"
        "(unmask from any part). IN may itself be a split model.\n"
        "\n"
        "options:\n");
    flags_usage(f, &p);
}

/* "N", "NK", "NM", "NG" (decimal units, as gguf-split's M and G) into bytes. */
static int parse_size(const char *v, uint64_t *out) {
    char num[32];
    size_t n = strlen(v);
    uint64_t unit = 1;
    if (n && strchr("KMG", v[n - 1])) {
        unit = v[n - 1] == 'K' ? 1000ull : v[n - 1] == 'M' ? 1000000ull : 1000000000ull;
        n--;
    }
    if (n == 0 || n >= sizeof num) {
        fprintf(stderr, PROG ": --split-max-size: '%s' is not a size (N, NK, NM or NG)\n", v);
        return UM_FAIL;
    }
    memcpy(num, v, n);
    num[n] = 0;
    int64_t k;
    if (num_arg_int(PROG, "--split-max-size", num, 1, (int64_t)(INT64_MAX / unit), &k)) return UM_FAIL;
    *out = (uint64_t)k * unit;
    return UM_OK;
}

/* Rule 1 of outfile.h for every part against every input part (sets hold 8 names each). */
static int check_outputs(const gguf_file *in, char *const *paths, uint32_t n_parts, um_err *e) {
    for (uint32_t i = 0; i < n_parts; i++)
        for (uint32_t j = 0; j < gguf_n_parts(in); j += OUTFILE_MAX_NAMES) {
            outfile_set s;
            outfile_set_init(&s);
            for (uint32_t k = j; k < gguf_n_parts(in) && k < j + OUTFILE_MAX_NAMES; k++)
                outfile_set_input(&s, "IN.gguf", gguf_part_at(in, k).path);
            outfile_set_output(&s, "OUTPREFIX", paths[i]);
            if (outfile_check(&s, e)) return UM_FAIL;
        }
    return UM_OK;
}

int cmd_split(int argc, char **argv) {
    split_opts o = { 0 };
    flags_common com = { 0 };
    const char *pos[2];
    flags_parser fp;
    parser(&fp, &com, &o, pos);
    int pr = flags_parse(&fp, argc, argv);
    if (pr == FLAGS_STOP) { usage(stdout); return 0; }
    if (pr) return pr;
    int64_t max_tensors = o.max_tensors;
    uint64_t max_bytes = o.max_bytes;
    const bool dry_run = o.dry_run, quiet = com.quiet;
    const int n_pos = fp.n_pos;
    if (n_pos != 2 || !pos[1][0]) {
        fprintf(stderr, PROG ": need IN.gguf and a non-empty OUTPREFIX (see --help)\n");
        return 2;
    }
    if (!max_tensors && !max_bytes) max_tensors = DEFAULT_MAX_TENSORS;

    um_err e = { "" };
    gguf_file *g = NULL;
    uint32_t *part_of = NULL, n_parts = 0;
    char **paths = NULL;
    int rc = 1;
    if (gguf_open(&g, pos[0], &e)) goto out;
    uint64_t n = gguf_n_tensors(g);
    part_of = calloc(n ? n : 1, sizeof *part_of);
    if (!part_of) { um_errf(&e, "out of memory"); goto out; }
    if (gguf_split_plan(g, (uint64_t)max_tensors, max_bytes, part_of, &n_parts, &e)) goto out;
    paths = calloc(n_parts, sizeof *paths);
    if (!paths) { um_errf(&e, "out of memory"); goto out; }
    size_t cap = strlen(pos[1]) + 32;
    for (uint32_t i = 0; i < n_parts; i++) {
        if (!(paths[i] = malloc(cap)) || gguf_split_path(paths[i], cap, pos[1], i, n_parts)) {
            um_errf(&e, "out of memory");
            goto out;
        }
    }
    if (dry_run) {
        printf("%u parts\n", n_parts);
        for (uint32_t i = 0; i < n_parts; i++) {
            uint64_t k = 0, bytes = 0;
            for (uint64_t t = 0; t < n; t++)
                if (part_of[t] == i) k++, bytes += gguf_tensor_at(g, t)->size;
            printf("%s: %llu tensors, %llu bytes of tensor data\n", paths[i], (unsigned long long)k,
                   (unsigned long long)bytes);
        }
        rc = 0;
        goto out;
    }
    if (check_outputs(g, paths, n_parts, &e)) goto out;
    if (gguf_split_write(g, part_of, n_parts, paths, &e)) {       /* all the parts, or none */
        um_err_prefix(&e, "nothing written");
        goto out;
    }
    for (uint32_t i = 0; i < n_parts && !quiet; i++) printf("wrote %s (part %u of %u)\n", paths[i], i + 1, n_parts);
    rc = 0;
out:
    if (rc) fprintf(stderr, PROG ": %s\n", e.msg);
    for (uint32_t i = 0; paths && i < n_parts; i++) free(paths[i]);
    free(paths);
    free(part_of);
    gguf_close(g);
    return rc;
}
