/*
 * cmd_quantize: `unmask quantize IN.gguf OUT.gguf TYPE [-t N]`, llama-quantize's mixtures
 * (see quantize.h) from the command line.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cpu.h"
#include "numparse.h"
#include "gguf.h"
#include "outfile.h"
#include "quantize.h"

static void usage(FILE *f) {
    fprintf(f,
        "usage: unmask quantize [options] IN.gguf OUT.gguf TYPE\n"
        "\n"
        "Convert the weights of a GGUF model to TYPE, choosing each tensor's type as\n"
        "llama.cpp's llama-quantize does (round to nearest, no importance matrix). Every\n"
        "metadata key is copied; general.file_type is set to llama.cpp's number for TYPE.\n"
        "1-D tensors and norms stay as they are.\n"
        "\n"
        "options:\n"
        "  -t, --threads N        threads (default: physical cores)\n"
        "  --allow-requantize     convert tensors that are already quantized (loses quality)\n"
        "  -q, --quiet            no per-tensor progress\n"
        "  -h, --help             this help\n"
        "\n"
        "TYPE:\n");
    for (size_t i = 0; um_mixture_at(i); i++) {
        const um_mixture *m = um_mixture_at(i);
        fprintf(f, "  %-8s %2u  %s\n", m->name, m->ftype, m->summary);
    }
}

int cmd_quantize(int argc, char **argv) {
    um_quantize_opts o = { .n_threads = cpu_features()->n_physical };
    const char *pos[3];
    int n_pos = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "-t") || !strcmp(a, "--threads")) {
            if (i + 1 >= argc) {
                fprintf(stderr, "unmask quantize: %s needs a number\n", a);
                return 2;
            }
            if (num_arg_i32("unmask quantize", a, argv[++i], 1, 1024, &o.n_threads)) return 2;
        } else if (!strcmp(a, "--allow-requantize")) {
            o.allow_requantize = true;
        } else if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) {
            o.quiet = true;
        } else if (a[0] == '-' && a[1]) {
            fprintf(stderr, "unmask quantize: unknown option '%s' (see --help)\n", a);
            return 2;
        } else if (n_pos < 3) {
            pos[n_pos++] = a;
        } else {
            fprintf(stderr, "unmask quantize: too many arguments (see --help)\n");
            return 2;
        }
    }
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
