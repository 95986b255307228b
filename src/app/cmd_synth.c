/*
 * cmd_synth: `unmask synth` writes a random-weight model of a named shape (tests, the peer
 * comparison and benchmarks use these; they produce noise, not text).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "numparse.h"
#include "outfile.h"
#include "quant.h"
#include "quantize.h"
#include "synth.h"

static void usage(FILE *f) {
    fprintf(f,
        "usage: unmask synth --shape NAME [--type TYPE] [--seed N] [--scale S] -o OUT.gguf\n"
        "\n"
        "Write a model with random weights (for tests and benchmarks).\n"
        "\n"
        "  --shape NAME   %s\n"
        "  --type TYPE    type of the 2-D weights: f32 (default), f16, bf16, q8_0, q4_0, q4_K, q5_K, q6_K, ...\n"
        "                 or a llama-quantize mixture (Q4_K_M, Q5_K_M, Q6_K, Q8_0) chosen per tensor as it does\n"
        "  --seed N       weight seed, 0 to 9007199254740991 (default 1)\n"
        "  --scale S      multiply the weight init by S, more than 0 and at most 1000 (default 1)\n"
        "  -o FILE        output file\n", synth_shape_names());
}

int cmd_synth(int argc, char **argv) {
    um_synth_opts o = { .type = UM_TYPE_F32, .seed = 1, .init_scale = 1.0f, .progress = true };
    const char *out = NULL, *shape = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { usage(stdout); return 0; }
        if (i + 1 >= argc) { fprintf(stderr, "unmask synth: '%s' needs a value or is unknown (see --help)\n", a); return 2; }
        const char *v = argv[++i];
        if (!strcmp(a, "--shape")) shape = v;
        else if (!strcmp(a, "--type")) {
            int t = um_type_from_name(v);
            if (t >= 0) o.type = (uint32_t)t;
            else if (um_mixture_find(v)) o.mixture = v;
            else { fprintf(stderr, "unmask synth: unknown type or mixture '%s'\n", v); return 2; }
        } else if (!strcmp(a, "--seed")) {
            int64_t x;
            if (num_arg_int("unmask synth", a, v, 0, 9007199254740991LL, &x)) return 2;
            o.seed = (uint64_t)x;
        } else if (!strcmp(a, "--scale")) {
            if (num_arg_f32("unmask synth", a, v, 0, 1000, NUM_LO_OPEN, &o.init_scale)) return 2;
        }
        else if (!strcmp(a, "-o")) out = v;
        else { fprintf(stderr, "unmask synth: unknown option '%s' (see --help)\n", a); return 2; }
    }
    if (!shape || !out) { usage(stderr); return 2; }
    o.shape = synth_find_shape(shape);
    if (!o.shape) { fprintf(stderr, "unmask synth: unknown shape '%s' (known: %s)\n", shape, synth_shape_names()); return 2; }
    um_err e = { "" };
    outfile_set files;                   /* an unwritable -o fails before the weights are made */
    outfile_set_init(&files);
    outfile_set_output(&files, "-o", out);
    if (outfile_check(&files, &e)) { fprintf(stderr, "unmask synth: %s\n", e.msg); return 1; }
    if (synth_write(&o, out, &e)) { fprintf(stderr, "unmask synth: %s\n", e.msg); return 1; }
    return 0;
}
