/*
 * cmd_synth: `unmask synth` writes a random-weight model of a named shape (tests, the peer
 * comparison and benchmarks use these; they produce noise, not text).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "flags.h"
#include "numparse.h"
#include "outfile.h"
#include "quant.h"
#include "quantize.h"
#include "synth.h"

enum { SY_SHAPE = 1, SY_TYPE, SY_SEED, SY_SCALE, SY_OUT };

#define SY FLAG_CMD_SYNTH
static const um_flag synth_rows[] = {
    { 0, "shape", "NAME", SY_SHAPE, SY, FLAG_RUN, NULL, 0, "%s" },
    { 0, "type", "TYPE", SY_TYPE, SY, FLAG_RUN, NULL, 0,
      "type of the 2-D weights: f32 (default), f16, bf16, q8_0, q4_0, q4_K, q5_K, q6_K, ...\n"
      "or a llama-quantize mixture (Q4_K_M, Q5_K_M, Q6_K, Q8_0) chosen per tensor as it does" },
    { 0, "seed", "N", SY_SEED, SY, FLAG_RUN, NULL, 0, "weight seed, 0 to 9007199254740991 (default 1)" },
    { 0, "scale", "S", SY_SCALE, SY, FLAG_RUN, NULL, 0, "multiply the weight init by S, more than 0 and at most 1000 (default 1)" },
    { 'o', "out", "FILE", SY_OUT, SY, FLAG_RUN, NULL, 0, "output file" },
};
#undef SY

typedef struct synth_cli { um_synth_opts *o; const char *out, *shape; } synth_cli;

static int own_fn(void *ctx, const um_flag *f, const char *name, const char *v, const char *prog) {
    synth_cli *c = ctx;
    int64_t x;
    switch (f->id) {
    case SY_SHAPE: c->shape = v; return 0;
    case SY_OUT:   c->out = v; return 0;
    case SY_TYPE: {
        int t = um_type_from_name(v);
        if (t >= 0) c->o->type = (uint32_t)t;
        else if (um_mixture_find(v)) c->o->mixture = v;
        else { fprintf(stderr, "%s: unknown type or mixture '%s'\n", prog, v); return -1; }
        return 0;
    }
    case SY_SEED:
        if (num_arg_int(prog, name, v, 0, 9007199254740991LL, &x)) return -1;
        c->o->seed = (uint64_t)x;
        return 0;
    case SY_SCALE: return num_arg_f32(prog, name, v, 0, 1000, NUM_LO_OPEN, &c->o->init_scale);
    default:       return 0;
    }
}

static void fill(const um_flag *f, char *buf, size_t cap) { snprintf(buf, cap, "%s", synth_shape_names()); }

static void parser(flags_parser *p, flags_common *c, synth_cli *s) {
    *p = (flags_parser){ .prog = "unmask synth", .cmd = FLAG_CMD_SYNTH };
    flags_add(p, synth_rows, (int)(sizeof synth_rows / sizeof synth_rows[0]), own_fn, s, fill);
    flags_add(p, flags_misc_rows, flags_misc_rows_n, flags_common_fn, c, NULL);
}

static void usage(FILE *f) {
    flags_parser p;
    parser(&p, NULL, NULL);
    fprintf(f,
        "usage: unmask synth --shape NAME [--type TYPE] [--seed N] [--scale S] -o OUT.gguf\n"
        "\n"
        "Write a model with random weights (for tests and benchmarks).\n"
        "\n");
    flags_usage(f, &p);
}

int cmd_synth(int argc, char **argv) {
    um_synth_opts o = { .type = UM_TYPE_F32, .seed = 1, .init_scale = 1.0f };
    synth_cli sc = { .o = &o };
    flags_common com = { 0 };
    flags_parser fp;
    parser(&fp, &com, &sc);
    int pr = flags_parse(&fp, argc, argv);
    if (pr == FLAGS_STOP) { usage(stdout); return 0; }
    if (pr) return pr;
    o.progress = !com.quiet && isatty(STDERR_FILENO);   /* '\r' progress: on a terminal only */
    const char *out = sc.out, *shape = sc.shape;
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
