/*
 * cmd_logits: `unmask logits` runs one forward pass over exactly the given canvas (no chat
 * template, no BOS) and writes n_tokens rows of n_vocab little-endian float32 logits, rows
 * unshifted, as the model computes them. The peer comparison (make check-peer) reads them.
 * DiffusionGemma files run the region-aware pass (forward_run_dg): the prompt / canvas split
 * and the self-conditioning input (a previous step's logits) come from flags.
 * --partial A:B times the pass a cached step runs instead (forward_run_kv): one full pass
 * fills an F16 K/V cache of the canvas (as the decoder's --cache does; not timed among the
 * reps), then each rep computes only rows A..B-1 against it and their logits.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "flags.h"
#include "forward.h"
#include "genopts.h"
#include "model.h"
#include "numparse.h"
#include "gguf.h"
#include "outfile.h"
#include "pool.h"
#include "quant.h"

#define MAX_REPS 1024

enum { LG_TOKENS = 1, LG_OUT, LG_REFERENCE, LG_GPU, LG_REPS, LG_PROFILE, LG_PARTIAL, LG_PROMPT_LEN, LG_SC, LG_SC_TEMP,
       LG_SC_MODE, LG_SC_TOPK, LG_SC_PRODUCT };

#define LG FLAG_CMD_LOGITS
static const um_flag logits_rows[] = {
    { 0, "tokens", "LIST", LG_TOKENS, LG, FLAG_RUN, NULL, 0, "comma-separated token ids: the whole canvas" },
    { 0, "out", "FILE", LG_OUT, LG, FLAG_RUN, NULL, 0, "output file (little-endian float32, row-major)" },
    { 0, "reference", NULL, LG_REFERENCE, LG, FLAG_RUN, NULL, 0, "use the scalar reference forward pass (slow)" },
    { 0, "gpu", NULL, LG_GPU, LG, FLAG_RUN, NULL, 0, "run on the CUDA backend" },
    { 0, "reps", "N", LG_REPS, LG, FLAG_RUN, NULL, 0, "run N passes (1 to 1024) and print their median time as JSON on stdout" },
    { 0, "profile", NULL, LG_PROFILE, LG, FLAG_RUN, NULL, 0, "with --reps (CPU only): add where the median pass spent its time, per part" },
    { 0, "partial", "A:B", LG_PARTIAL, LG, FLAG_RUN, NULL, 0,
      "CPU only: fill a K/V cache (F16) with one full pass, then run (and time) the\n"
      "partial pass of a cached step: rows A..B-1 only, against the cache; --out gets\n"
      "their B-A rows" },
    { .help = "DiffusionGemma (diffusion-gemma) files, CPU only:", .cmds = LG },
    { 0, "prompt-len", "N", LG_PROMPT_LEN, LG, FLAG_RUN, NULL, 0,
      "the first N tokens are the prompt, the rest the canvas (default: all but the\n"
      "file's diffusion.canvas_length last tokens, as llama.cpp splits)" },
    { 0, "sc", "FILE", LG_SC, LG, FLAG_RUN, NULL, 0,
      "self-conditioning input: the previous step's logits of the canvas rows\n"
      "(n_canvas x n_vocab float32, as --out writes them)" },
    { 0, "sc-temp", "T", LG_SC_TEMP, LG, FLAG_RUN, NULL, 0, "the previous step's temperature (default 1): p = softmax(logits / T)" },
    { 0, "sc-mode", "M", LG_SC_MODE, LG, FLAG_RUN, NULL, 0,
      "exact (default): p times the whole embedding table; topk: each row's K largest\n"
      "entries plus the rest spread evenly; auto: topk where those K hold all but 0.001\n"
      "of the mass, exact elsewhere" },
    { 0, "sc-topk", "K", LG_SC_TOPK, LG, FLAG_RUN, NULL, 0, "K for topk and auto, 1 to 4096 (default 256)" },
    { 0, "sc-product", "P", LG_SC_PRODUCT, LG, FLAG_RUN, NULL, 0,
      "the exact rows' product in f32 (default) or bf16 (BF16 values in float pairs)" },
};
#undef LG

typedef struct logits_opts {
    const char *tokens, *out, *sc_path, *sc_mode;
    int32_t     reps, prompt_len, sc_topk, part_a, part_b;
    int         sc_product;     /* genopts_sc_product's value; -1: not given */
    float       sc_temp;
    bool        reference, gpu, profile;
} logits_opts;

static int parse_range(const char *v, int32_t *a, int32_t *b);

static int own_fn(void *ctx, const um_flag *f, const char *name, const char *v, const char *prog) {
    logits_opts *o = ctx;
    switch (f->id) {
    case LG_TOKENS:     o->tokens = v; return 0;
    case LG_OUT:        o->out = v; return 0;
    case LG_REFERENCE:  o->reference = true; return 0;
    case LG_GPU:        o->gpu = true; return 0;
    case LG_PROFILE:    o->profile = true; return 0;
    case LG_REPS:       return num_arg_i32(prog, name, v, 1, MAX_REPS, &o->reps);
    case LG_PROMPT_LEN: return num_arg_i32(prog, name, v, 0, INT32_MAX, &o->prompt_len);
    case LG_PARTIAL:    return parse_range(v, &o->part_a, &o->part_b);
    case LG_SC:         o->sc_path = v; return 0;
    case LG_SC_TEMP:    return num_arg_f32(prog, name, v, 0, 1000, NUM_LO_OPEN, &o->sc_temp);
    case LG_SC_TOPK:    return num_arg_i32(prog, name, v, 1, UM_SC_MAX_TOPK, &o->sc_topk);
    case LG_SC_PRODUCT: return (o->sc_product = genopts_sc_product(prog, name, v)) < 0 ? -1 : 0;
    case LG_SC_MODE:
        if (strcmp(v, "exact") && strcmp(v, "topk") && strcmp(v, "auto")) {
            fprintf(stderr, "%s: %s is exact, topk or auto (not '%s')\n", prog, name, v);
            return -1;
        }
        o->sc_mode = v;
        return 0;
    default: return 0;
    }
}

static void parser(flags_parser *p, flags_common *c, logits_opts *o) {
    *p = (flags_parser){ .prog = "unmask logits", .cmd = FLAG_CMD_LOGITS };
    flags_add(p, flags_model_rows, flags_model_rows_n, flags_common_fn, c, NULL);
    flags_add(p, logits_rows, (int)(sizeof logits_rows / sizeof logits_rows[0]), own_fn, o, NULL);
    flags_add(p, flags_misc_rows, flags_misc_rows_n, flags_common_fn, c, NULL);
}

static void usage(FILE *f) {
    flags_parser p;
    parser(&p, NULL, NULL);
    fprintf(f,
        "usage: unmask logits -m FILE --tokens ID,ID,... --out FILE.f32 [-t THREADS] [--reference | --gpu] [--reps N] [--profile]\n"
        "                     [--partial A:B]\n"
        "                     [--prompt-len N] [--sc FILE.f32 [--sc-temp T] [--sc-mode M] [--sc-topk K] [--sc-product P]]\n"
        "\n"
        "One forward pass over exactly these tokens; writes n_tokens x n_vocab float32 logits.\n"
        "\n");
    flags_usage(f, &p);
}

/* "ID,ID,...": each id a whole number 0..INT32_MAX (numparse.h); fails with a message. */
static int parse_tokens(const char *s, int32_t **out, int *n) {
    int cap = 64, k = 0;
    int32_t *t = malloc(sizeof *t * (size_t)cap);
    if (!t) { fprintf(stderr, "unmask logits: out of memory\n"); return -1; }
    for (const char *p = s;; ) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        char *item = strndup(p, len), what[48];
        if (!item) { free(t); fprintf(stderr, "unmask logits: out of memory\n"); return -1; }
        snprintf(what, sizeof what, "--tokens: item %d", k + 1);
        int64_t v;
        um_err e;
        int bad = num_int(what, item, 0, INT32_MAX, &v, &e);
        free(item);
        if (bad) {
            fprintf(stderr, "unmask logits: %s\n", e.msg);
            free(t);
            return -1;
        }
        if (k == cap) {
            int32_t *nt = realloc(t, sizeof *t * (size_t)(cap *= 2));
            if (!nt) { free(t); fprintf(stderr, "unmask logits: out of memory\n"); return -1; }
            t = nt;
        }
        t[k++] = (int32_t)v;
        if (!comma) break;
        p = comma + 1;
    }
    *out = t;
    *n = k;
    return 0;
}

/* "A:B", 0 <= A < B: the partial pass's rows (checked against the canvas once it is known). */
static int parse_range(const char *v, int32_t *a, int32_t *b) {
    const char *colon = strchr(v, ':');
    um_err e;
    int64_t x, y;
    char first[32];
    if (!colon || (size_t)(colon - v) >= sizeof first) {
        fprintf(stderr, "unmask logits: --partial wants A:B (rows A to B-1), not '%s'\n", v);
        return -1;
    }
    memcpy(first, v, (size_t)(colon - v));
    first[colon - v] = 0;
    if (num_int("--partial: A", first, 0, INT32_MAX - 1, &x, &e) || num_int("--partial: B", colon + 1, 1, INT32_MAX, &y, &e)) {
        fprintf(stderr, "unmask logits: %s\n", e.msg);
        return -1;
    }
    if (y <= x) { fprintf(stderr, "unmask logits: --partial %s: B must be greater than A\n", v); return -1; }
    *a = (int32_t)x;
    *b = (int32_t)y;
    return 0;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int cmd_logits(int argc, char **argv) {
    logits_opts o = { .prompt_len = -1, .sc_temp = 1.0f, .part_a = -1, .part_b = -1, .sc_product = -1 };
    flags_common com = { 0 };
    flags_parser fp;
    parser(&fp, &com, &o);
    int pr = flags_parse(&fp, argc, argv);
    if (pr == FLAGS_STOP) { usage(stdout); return 0; }
    if (pr) return pr;
    char model_buf[2048];
    um_err me = { "" };
    const char *model_path = NULL;
    if ((com.model || com.preset) && genopts_model_file(com.model, com.preset, model_buf, sizeof model_buf, &me)) {
        fprintf(stderr, "unmask logits: %s\n", me.msg);
        return 1;
    }
    if (com.model || com.preset) model_path = model_buf;
    const char *tokens = o.tokens, *out = o.out, *sc_path = o.sc_path, *sc_mode = o.sc_mode;
    const int32_t threads = com.threads, reps = o.reps, prompt_len = o.prompt_len, sc_topk = o.sc_topk, sc_product = o.sc_product;
    const int32_t part_a = o.part_a, part_b = o.part_b;
    const float sc_temp = o.sc_temp;
    const bool reference = o.reference, gpu = o.gpu, profile = o.profile;
    if (!model_path || !tokens || (!out && reps <= 0)) { usage(stderr); return 2; }
    if (profile && (gpu || reps <= 0)) { fprintf(stderr, "unmask logits: --profile needs --reps and the CPU backend\n"); return 2; }
    int32_t *tok;
    int n;
    const bool dg_flags = prompt_len >= 0 || sc_path || sc_topk > 0 || sc_mode || sc_product >= 0;
    if (dg_flags && gpu) { fprintf(stderr, "unmask logits: --prompt-len and --sc* run on the CPU only\n"); return 2; }
    if ((sc_topk > 0 || sc_mode || sc_product >= 0) && !sc_path) {
        fprintf(stderr, "unmask logits: --sc-mode, --sc-topk and --sc-product need --sc\n");
        return 2;
    }
    const bool partial = part_a >= 0;
    if (partial && (gpu || reference)) { fprintf(stderr, "unmask logits: --partial runs on the CPU fast path only\n"); return 2; }
    if (partial && dg_flags) { fprintf(stderr, "unmask logits: --partial is not for diffusion-gemma files\n"); return 2; }
    if (parse_tokens(tokens, &tok, &n)) return 2;
    if (partial && part_b > n) {
        fprintf(stderr, "unmask logits: --partial %d:%d: the canvas has %d tokens\n", part_a, part_b, n);
        free(tok);
        return 2;
    }
    um_err e = { "" };
    outfile_set files;                   /* before the model loads: a bad --out fails at once */
    outfile_set_init(&files);
    outfile_set_input(&files, "-m", model_path);
    if (sc_path) outfile_set_input(&files, "--sc", sc_path);
    outfile_set_output(&files, "--out", out);
    if (outfile_check(&files, &e) || gguf_split_check_outputs(&files, &e)) { fprintf(stderr, "unmask logits: %s\n", e.msg); free(tok); return 1; }
    um_model *m = NULL;
    um_pool *pool = NULL;
    um_backend be = { 0 };
    um_forward *fw = NULL;
    um_fw_profile *prof = NULL;
    um_kvcache *kv = NULL;
    double fill_ms = 0;
    float *logits = NULL, *sc_logits = NULL;
    int32_t *rows = NULL;
    int rc = 1;
    double t0 = um_now();
    if (model_open(&m, model_path, &e)) goto out;
    double t_load = um_now() - t0;
    pool = pool_new(threads > 0 ? threads : pool_default_threads());
    if (gpu) {
        if (gpu_backend_open(&be, m, n, &e)) goto out;
    } else {
        um_forward_opts fo = { .max_tokens = n, .reference = reference, .kernel = UM_KERNEL_AUTO, .release_pages = true };
        if (forward_new(&fw, m, pool, &fo, &e)) goto out;
        forward_as_backend(fw, &be);
    }
    double t_prep = um_now() - t0 - t_load;
    logits = malloc(sizeof(float) * (size_t)n * (size_t)m->hp.n_vocab);
    rows = malloc(sizeof *rows * (size_t)n);
    if (!logits || !rows) { snprintf(e.msg, sizeof e.msg, "out of memory for %d logits rows", n); goto out; }
    for (int i = 0; i < n; i++) rows[i] = i;
    const bool dg = m->arch->gemma4 && !gpu;
    if (dg_flags && !dg) { snprintf(e.msg, sizeof e.msg, "--prompt-len and --sc* are for diffusion-gemma files"); goto out; }
    if (partial && m->arch->gemma4) { snprintf(e.msg, sizeof e.msg, "--partial is not for diffusion-gemma files"); goto out; }
    /* --partial: the rows computed and the rows whose logits are written, A..B-1 */
    const int n_out_rows = partial ? part_b - part_a : n;
    int32_t *out_rows = partial ? rows + part_a : rows;
    if (partial) {
        if (forward_kv_new(fw, UM_TYPE_F16, n, &kv, &e)) goto out;
        double tf = um_now();
        if (forward_run_kv(fw, kv, tok, n, NULL, 0, out_rows, n_out_rows, logits, NULL, &e)) goto out;
        fill_ms = (um_now() - tf) * 1e3;
    }
    int n_prompt = prompt_len >= 0 ? prompt_len : (n > m->hp.canvas_length ? n - m->hp.canvas_length : 0);
    if (dg && n_prompt > n) { snprintf(e.msg, sizeof e.msg, "--prompt-len %d is longer than the %d tokens", n_prompt, n); goto out; }
    um_selfcond sc = { .temp = sc_temp, .top_k = sc_topk > 0 ? sc_topk : UM_SC_AUTO_K,
                       .mode = !sc_mode || !strcmp(sc_mode, "exact") ? UM_SC_EXACT : !strcmp(sc_mode, "topk") ? UM_SC_TOPK : UM_SC_AUTO,
                       .bf16 = sc_product == 1 };
    if (sc_path) {
        /* the canvas rows' previous logits, (n - n_prompt, n_vocab) float32 */
        const size_t want = (size_t)(n - n_prompt) * (size_t)m->hp.n_vocab;
        FILE *sf = fopen(sc_path, "rb");
        if (!sf) { snprintf(e.msg, sizeof e.msg, "--sc %s: %s", sc_path, strerror(errno)); goto out; }
        sc_logits = malloc(sizeof(float) * (want ? want : 1));
        size_t got = sc_logits ? fread(sc_logits, sizeof(float), want, sf) : 0;
        int extra = fgetc(sf);
        fclose(sf);
        if (!sc_logits || got != want || extra != EOF) {
            snprintf(e.msg, sizeof e.msg, "--sc %s: expected %d canvas rows x %d logits (%zu bytes)", sc_path,
                     n - n_prompt, m->hp.n_vocab, want * sizeof(float));
            goto out;
        }
        sc.logits = sc_logits;
    }
    int runs = reps > 0 ? reps : 1;
    double ms[MAX_REPS], order[MAX_REPS];
    if (profile && !(prof = calloc((size_t)runs, sizeof *prof))) { snprintf(e.msg, sizeof e.msg, "out of memory"); goto out; }
    for (int r = 0; r < runs; r++) {
        if (prof) forward_profile_reset(fw);
        double t = um_now();
        float drift;             /* asked for, as the decoder's cached steps ask */
        if (partial ? forward_run_kv(fw, kv, tok, n, out_rows, n_out_rows, out_rows, n_out_rows, logits, &drift, &e)
            : dg ? forward_run_dg(fw, tok, n, n_prompt, &sc, rows, n, logits, &e)
                 : be.run(be.impl, tok, n, rows, n, logits, &e))
            goto out;
        ms[r] = (um_now() - t) * 1e3;
        order[r] = ms[r];
        if (prof) forward_profile(fw, &prof[r]);
    }
    if (out) {
        outfile *f;
        if (outfile_open(&f, out, &e)) goto out;           /* messages name the path and the OS reason */
        if (outfile_write(f, logits, sizeof(float) * (size_t)n_out_rows * (size_t)m->hp.n_vocab, &e)) {
            outfile_abort(f);
            goto out;
        }
        if (outfile_commit(f, &e)) goto out;
    }
    if (reps > 0) {
        qsort(ms, (size_t)runs, sizeof ms[0], cmp_double);
        printf("{\"n_tokens\": %d, \"n_vocab\": %d, \"threads\": %d, \"kernel\": \"%s\", \"load_s\": %.3f, "
               "\"prepare_s\": %.3f, \"reps\": %d, \"forward_ms_median\": %.2f, \"forward_ms\": [",
               n, m->hp.n_vocab, pool_threads(pool), be.kernel_name(be.impl), t_load, t_prep, runs, ms[runs / 2]);
        for (int r = 0; r < runs; r++) printf("%s%.2f", r ? ", " : "", order[r]);
        printf("]");
        if (partial)
            printf(", \"partial\": {\"first\": %d, \"end\": %d, \"rows\": %d, \"cache_type\": \"f16\", \"fill_ms\": %.2f}",
                   part_a, part_b, n_out_rows, fill_ms);
        if (prof) {
            int med = 0;   /* the pass whose time is the median */
            for (int r = 0; r < runs; r++)
                if (order[r] == ms[runs / 2]) med = r;
            const um_fw_profile *pp = &prof[med];
            printf(", \"profile\": {\"pass\": %d, \"macs\": %llu, \"matmul_ms\": %.3f, \"dispatches\": %llu, "
                   "\"handoff_ms\": %.3f, \"parts_ms\": {", med, (unsigned long long)pp->macs, pp->matmul_ms,
                   (unsigned long long)pp->dispatches, pp->handoff_ms);
            for (int i = 0; i < UM_FW_PART_COUNT; i++)
                printf("%s\"%s\": %.3f", i ? ", " : "", forward_part_name((um_fw_part)i), pp->ms[i]);
            printf("}}");
        }
        printf("}\n");
    }
    rc = 0;
out:
    if (rc) fprintf(stderr, "unmask logits: %s\n", e.msg);
    free(prof);
    if (kv) forward_kv_free(kv);
    free(logits);
    free(sc_logits);
    free(rows);
    free(tok);
    if (be.free) be.free(be.impl);
    pool_free(pool);
    model_close(m);
    return rc;
}
