/*
 * cmd_quantize: `unmask quantize IN.gguf OUT.gguf TYPE [-t N]`, llama-quantize's mixtures
 * (see quantize.h) from the command line.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "flags.h"
#include "cpu.h"
#include "numparse.h"
#include "gguf.h"
#include "outfile.h"
#include "quantize.h"

enum { QZ_ALLOW_REQUANTIZE = 1 };

static const um_flag quant_rows[] = {
    { 0, "allow-requantize", NULL, QZ_ALLOW_REQUANTIZE, FLAG_CMD_QUANTIZE, FLAG_RUN, NULL, 0,
      "convert tensors that are already quantized (loses quality)" },
};

static int own_fn(void *ctx, const um_flag *f, const char *name, const char *v, const char *prog) {
    *(bool *)ctx = true;                            /* --allow-requantize */
    return 0;
}

static void parser(flags_parser *p, flags_common *c, bool *allow, const char **pos) {
    *p = (flags_parser){ .prog = "unmask quantize", .cmd = FLAG_CMD_QUANTIZE, .pos = pos, .max_pos = 3 };
    flags_add(p, flags_model_rows, flags_model_rows_n, flags_common_fn, c, NULL);
    flags_add(p, quant_rows, (int)(sizeof quant_rows / sizeof quant_rows[0]), own_fn, allow, NULL);
    flags_add(p, flags_misc_rows, flags_misc_rows_n, flags_common_fn, c, NULL);
}

static void usage(FILE *f) {
    flags_parser p;
    parser(&p, NULL, NULL, NULL);
    fprintf(f,
        "usage: unmask quantize [options] IN.gguf OUT.gguf TYPE\n"
        "\n"
        "Convert the weights of a GGUF model to TYPE, choosing each tensor's type as\n"
        "llama.cpp's llama-quantize does (round to nearest, no importance matrix). Every\n"
        "metadata key is copied; general.file_type is set to llama.cpp's number for TYPE.\n"
        "1-D tensors and norms stay as they are.\n"
        "\n"
        "options:\n");
    flags_usage(f, &p);
    fprintf(f, "\nTYPE:\n");
    for (size_t i = 0; um_mixture_at(i); i++) {
        const um_mixture *m = um_mixture_at(i);
        fprintf(f, "  %-8s %2u  %s\n", m->name, m->ftype, m->summary);
    }
}

int cmd_quantize(int argc, char **argv) {
    um_quantize_opts o = { .n_threads = cpu_features()->n_physical };
    const char *pos[3];
    flags_common com = { 0 };
    flags_parser fp;
    parser(&fp, &com, &o.allow_requantize, pos);
    int pr = flags_parse(&fp, argc, argv);
    if (pr == FLAGS_STOP) { usage(stdout); return 0; }
    if (pr) return pr;
    if (com.threads > 0) o.n_threads = com.threads;
    o.quiet = com.quiet;
    const int n_pos = fp.n_pos;
    if (n_pos != 3) {
        fprintf(stderr, "unmask quantize: need IN.gguf OUT.gguf TYPE (see --help)\n");
        return 2;
    }
    const um_mixture *mix = um_mixture_find(pos[2]);
    if (!mix) {
        fprintf(stderr, "unmask quantize: unknown type '%s' (see --help for the list)\n", pos[2]);
        return 2;
    }
    um_err e = { "" };
    outfile_set files;                   /* same file by device and inode, not by name */
    outfile_set_init(&files);
    outfile_set_input(&files, "IN.gguf", pos[0]);
    outfile_set_output(&files, "OUT.gguf", pos[1]);
    if (outfile_check(&files, &e) || gguf_split_check_outputs(&files, &e)) {
        fprintf(stderr, "unmask quantize: %s\n", e.msg);
        return 1;
    }
    if (um_quantize_file(pos[0], pos[1], mix, &o, &e)) {
        fprintf(stderr, "unmask quantize: %s\n", e.msg);
        return 1;
    }
    return 0;
}
