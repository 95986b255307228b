/*
 * main: the unmask command line. Dispatches to subcommands (one file each, cmd_*.c);
 * with no subcommand it opens the visualizer. Only this file and the UI exit the process.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cpu.h"
#include "flags.h"
#include "gpu.h"
#include "matmul.h"
#include "ops.h"
#include "outfile.h"
#include "sigexit.h"
#include "stdfd.h"
#include "ui_main.h"

static const struct um_command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} commands[] = {
    { "info",     cmd_info,     "describe a GGUF file: metadata, tokenizer, tensors, whether it runs" },
    { "generate", cmd_generate, "run a whole generation and print the answer (no visualizer)" },
    { "eval",     cmd_eval,     "run a model over a task file (or held-out sudoku) and check every answer" },
    { "logits",   cmd_logits,   "one forward pass over a given canvas; write every row's logits" },
    { "synth",    cmd_synth,    "write a random-weight model of a named shape (tests, benchmarks)" },
    { "tokenize", cmd_tokenize, "print the token ids (and pieces) of a text under a GGUF file's tokenizer" },
    { "record",   cmd_record,   "run a whole generation headless and record it as a GIF and/or asciicast" },
    { "quantize", cmd_quantize, "convert a GGUF model's weights to Q4_K_M, Q5_K_M, Q6_K, Q8_0, F16..." },
    { "split",    cmd_split,    "write a model as parts in llama.cpp's gguf-split layout (NAME-00001-of-0000N.gguf)" },
};

/* The program's own flags (before any command). */
static const um_flag main_rows[] = {
    { 'h', "help", NULL, 'h', FLAG_CMD_MAIN, 0, NULL, 0, "show this help (COMMAND --help for a command's options)" },
    { 'V', "version", NULL, 'V', FLAG_CMD_MAIN, 0, NULL, 0, "print version, build options and detected CPU features" },
};

static void usage(FILE *f) {
    fprintf(f,
        "usage: unmask [--version] [--help] COMMAND [ARGS]\n"
        "\n"
        "unmask runs diffusion language models (LLaDA, LLaDA 2.x, Dream, LLaDA-MoE, RND1;\n"
        "DiffusionGemma's forward pass) from GGUF files and shows them denoising live in the\n"
        "terminal.\n"
        "\n"
        "commands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
    fprintf(f,
        "\n"
        "with no COMMAND: the live visualizer: unmask [-m FILE | -M PRESET] [OPTIONS]\n"
        "(unmask --ui-help lists its options and keys)\n"
        "\n"
        "options:\n");
    flags_parser p = { .cmd = FLAG_CMD_MAIN };
    flags_add(&p, main_rows, (int)(sizeof main_rows / sizeof main_rows[0]), NULL, NULL, NULL);
    flags_usage(f, &p);
    fprintf(f, "\nEvery command takes -h/--help; long flags take their value after a space or '='\n"
               "(--steps 32, --steps=32), short ones after a space or attached (-t 2, -t2); -- ends\n"
               "the flags. Man page: unmask.1 (docs/unmask.1).\n");
}

/* "kernels: matmul K (runs: ...), ops K (runs: ...), bf16 product P": the CPU kernels this
 * binary can run here and the ones chosen (UNMASK_KERNEL's choice when set); P says whether
 * --self-cond-product bf16 runs on the BF16 dot-product instruction (twice the float rate) or
 * forms the same sums with FMAs */
static void kernels_line(void) {
    char mm[256] = "", op[128] = "";
    size_t n = 0;
    for (int k = 0; k < UM_KERNEL_COUNT; k++)
        if (matmul_kernel_available((um_kernel)k) && n < sizeof mm)
            n += (size_t)snprintf(mm + n, sizeof mm - n, "%s%s", n ? " " : "", matmul_kernel_name((um_kernel)k));
    n = 0;
    for (int k = 0; k < UM_OPS_ISA_COUNT; k++)
        if (ops_isa_available((um_ops_isa)k) && n < sizeof op)
            n += (size_t)snprintf(op + n, sizeof op - n, "%s%s", n ? " " : "", ops_isa_name((um_ops_isa)k));
    um_kernel k;
    um_err e;
    const char *chosen = matmul_kernel_default(&k, &e) == UM_OK ? matmul_kernel_name(k) : "none (UNMASK_KERNEL is not valid here)";
    printf("kernels: matmul %s (available: %s), ops %s (available: %s), bf16 product %s\n", chosen, mm,
           ops_isa_name(ops_active()), op, ops_bf16_dot() ? "vdpbf16ps" : "fma");
}

static void version(void) {
    const um_cpu *c = cpu_features();
    char feats[512], gpu[256];
    cpu_feature_string(c, feats, sizeof feats);
    gpu_describe(gpu, sizeof gpu);
    printf("unmask %s\n", UM_VERSION);
    printf("build: %s, %s, C11, %s\n", UM_VARIANT,
#if defined(__clang__)
           "clang " __clang_version__,
#elif defined(__GNUC__)
           "gcc " __VERSION__,
#else
           "unknown compiler",
#endif
           gpu_built() ? "CUDA backend (sm_80 sm_86 sm_89 sm_90)" : "no CUDA");
    printf("cpu: %s, %d physical cores, %d logical\n", c->brand, c->n_physical, c->n_logical);
    printf("features: %s\n", feats[0] ? feats : "(none beyond baseline x86-64)");
    if (c->amx_denied) printf("amx: disabled: %s\n", c->amx_denied);
    kernels_line();
    printf("gpu: %s\n", gpu);
}

/* The command line, dispatched; *prog names the program in messages ("unmask NAME"). */
static int run(int argc, char **argv, char *prog, size_t cap) {
    if (argc >= 2 && (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V"))) {
        version();
        return 0;
    }
    if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        usage(stdout);
        return 0;
    }
    /* a signal that ends the process removes the temporary files of unfinished outputs
     * (outfile.h) and dies of it; the visualizer and `record` install the same table again
     * with SIGEXIT_FLAG, ending their loops by the normal way out (sigexit.h) */
    um_err se = { "" };
    sigexit_add_hook(outfile_signal_cleanup);
    if (sigexit_install(SIGEXIT_DIE, &se)) fprintf(stderr, "unmask: warning: %s\n", se.msg);
    if (argc < 2 || argv[1][0] == '-') return ui_main(argc, argv);   /* no subcommand: the visualizer */
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(argv[1], commands[i].name)) {
            snprintf(prog, cap, "unmask %s", commands[i].name);
            return commands[i].run(argc - 1, argv + 1);
        }
    fprintf(stderr, "unmask: unknown command '%s' (see unmask --help)\n", argv[1]);
    return 2;
}

int main(int argc, char **argv) {
    /* standard output checked in one place (stdfd.h): closed descriptors get placeholders,
     * and every command but the visualizer (curses needs the C library's stream) writes
     * through a stream that keeps the OS reason of a lost write */
    bool visualizer = argc < 2 || (argv[1][0] == '-' && strcmp(argv[1], "--version") && strcmp(argv[1], "-V") &&
                                   strcmp(argv[1], "--help") && strcmp(argv[1], "-h"));
    stdfd_init(!visualizer);
    char prog[64] = "unmask";
    int rc = run(argc, argv, prog, sizeof prog);
    um_err e = { "" };
    if (stdfd_finish(&e)) {                      /* everything written must have arrived */
        if (e.msg[0]) fprintf(stderr, "%s: %s\n", prog, e.msg);
        if (rc == 0) rc = 1;
    }
    return rc;
}
