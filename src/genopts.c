/*
 * genopts: parse the generation flags (see genopts.h). Values are checked here so every
 * command reports a bad value the same way: "unmask CMD: --steps: 'x' is not a number".
 */
#include "genopts.h"

#include "infile.h"
#include "schedule.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void genopts_init(um_genopts *g) {
    memset(g, 0, sizeof *g);
    g->eng.kernel = -1;
    g->n_gen = g->steps = g->block = g->top_k = -1;
    g->eps = g->threshold = g->temp = g->top_p = g->cfg = g->alg_temp = -1;
    g->schedule = g->score = -1;
    g->seed = -1;
    g->gumbel = -1;
}

void genopts_usage(FILE *f) {
    fprintf(f,
        "model:\n"
        "  -m FILE            model file (GGUF); default: the bundled demo model\n"
        "  -M NAME            a preset from models.conf\n"
        "  -t N               threads (default: physical cores)\n"
        "  --gpu              run the forward pass on the CUDA backend\n"
        "  --ctx N            context limit in tokens (default: the model's)\n"
        "prompt:\n"
        "  -p TEXT            the prompt\n"
        "  --chat-template T  llada, llada-moe, dream, chatml, rnd1 or none (default: detected)\n"
        "  --no-chat          use the prompt as it is (same as --chat-template none)\n"
        "  --system TEXT      system prompt\n"
        "decoding:\n"
        "  --gen N            tokens to generate (default 128)\n"
        "  --steps S          denoising steps (default: as many as tokens)\n"
        "  --block B          block schedule (LLaDA): blocks of B tokens\n"
        "  --eps E            timestep schedule (Dream) with this eps\n"
        "  --threshold T      confidence-threshold schedule (Fast-dLLM): commit all above T\n"
        "  --schedule NAME    block, timestep, threshold or linear (RND1)\n"
        "  --alg A            position score: confidence, margin, entropy, random or origin\n"
        "  --alg-temp T       > 0: sample which positions commit (Dream's alg_temp)\n"
        "  --temp T           temperature (0 = greedy)\n"
        "  --top-k K          sample among the K best (0 = off)\n"
        "  --top-p P          nucleus sampling (1 = off)\n"
        "  --gumbel           LLaDA's Gumbel-max token choice in float64 (default for LLaDA)\n"
        "  --no-gumbel        Dream's multinomial token choice (default for Dream and RND1)\n"
        "  --cfg W            classifier-free guidance weight (0 = off)\n"
        "  --seed N           random seed (default 42)\n"
        "  --stop-at-eos      stop once a finished block is all end-of-text\n");
}

static int num(const char *prog, const char *flag, const char *v, double lo, double hi, double *out) {
    char *end;
    errno = 0;
    double d = strtod(v, &end);
    if (end == v || *end || errno) { fprintf(stderr, "%s: %s: '%s' is not a number\n", prog, flag, v); return -1; }
    if (d < lo || d > hi) { fprintf(stderr, "%s: %s: %s is out of range [%g, %g]\n", prog, flag, v, lo, hi); return -1; }
    *out = d;
    return 0;
}

int genopts_parse(um_genopts *g, int argc, char **argv, int *i, const char *prog) {
    const char *a = argv[*i];
    /* flags without a value */
    if (!strcmp(a, "--no-chat")) { g->no_chat = true; return 1; }
    if (!strcmp(a, "--gumbel")) { g->gumbel = 1; return 1; }
    if (!strcmp(a, "--no-gumbel")) { g->gumbel = 0; return 1; }
    if (!strcmp(a, "--stop-at-eos")) { g->stop_at_eos = true; return 1; }
    if (!strcmp(a, "--json")) { g->json = true; return 1; }
    if (!strcmp(a, "--gpu")) { g->eng.gpu = true; return 1; }
    static const char *const with_value[] = {
        "-m", "-M", "-t", "--ctx", "-p", "--chat-template", "--system", "--gen", "--steps", "--block", "--eps",
        "--threshold", "--alg", "--schedule", "--alg-temp", "--temp", "--top-k", "--top-p", "--cfg", "--seed",
    };
    int known = 0;
    for (size_t k = 0; k < sizeof with_value / sizeof with_value[0]; k++) known |= !strcmp(a, with_value[k]);
    if (!known) return 0;
    if (*i + 1 >= argc) { fprintf(stderr, "%s: %s needs a value\n", prog, a); return -1; }
    const char *v = argv[++*i];
    double d;
    if (!strcmp(a, "-m")) g->model = v;
    else if (!strcmp(a, "-M")) g->preset = v;
    else if (!strcmp(a, "-p")) g->prompt = v;
    else if (!strcmp(a, "--chat-template")) g->eng.chat_template = v;
    else if (!strcmp(a, "--system")) g->eng.system = v;
    else if (!strcmp(a, "--alg")) {
        um_score sc;
        um_err e;
        if (schedule_score_from_name(v, &sc, &e)) { fprintf(stderr, "%s: --alg: %s\n", prog, e.msg); return -1; }
        g->score = (int)sc;
    } else if (!strcmp(a, "--schedule")) {
        um_schedule sc;
        um_err e;
        if (schedule_from_name(v, &sc, &e)) { fprintf(stderr, "%s: --schedule: %s\n", prog, e.msg); return -1; }
        g->schedule = (int)sc;
    } else if (!strcmp(a, "-t")) { if (num(prog, a, v, 1, 1024, &d)) return -1; g->eng.n_threads = (int)d; }
    else if (!strcmp(a, "--ctx")) { if (num(prog, a, v, 1, 1 << 24, &d)) return -1; g->eng.n_ctx = (int)d; }
    else if (!strcmp(a, "--gen")) { if (num(prog, a, v, 1, 1 << 20, &d)) return -1; g->n_gen = (int32_t)d; }
    else if (!strcmp(a, "--steps")) { if (num(prog, a, v, 1, 1 << 20, &d)) return -1; g->steps = (int32_t)d; }
    else if (!strcmp(a, "--block")) {
        if (num(prog, a, v, 1, 1 << 20, &d)) return -1;
        g->block = (int32_t)d;
        g->schedule = UM_SCHED_BLOCK;
    } else if (!strcmp(a, "--eps")) {
        if (num(prog, a, v, 0, 1, &d)) return -1;
        g->eps = (float)d;
        g->schedule = UM_SCHED_TIMESTEP;
    } else if (!strcmp(a, "--threshold")) {
        if (num(prog, a, v, 0, 1, &d)) return -1;
        g->threshold = (float)d;
        g->schedule = UM_SCHED_THRESHOLD;
    } else if (!strcmp(a, "--alg-temp")) { if (num(prog, a, v, 0, 1e6, &d)) return -1; g->alg_temp = (float)d; }
    else if (!strcmp(a, "--temp")) { if (num(prog, a, v, 0, 100, &d)) return -1; g->temp = (float)d; }
    else if (!strcmp(a, "--top-k")) { if (num(prog, a, v, 0, 1 << 24, &d)) return -1; g->top_k = (int32_t)d; }
    else if (!strcmp(a, "--top-p")) { if (num(prog, a, v, 1e-6, 1, &d)) return -1; g->top_p = (float)d; }
    else if (!strcmp(a, "--cfg")) { if (num(prog, a, v, 0, 100, &d)) return -1; g->cfg = (float)d; }
    else if (!strcmp(a, "--seed")) { if (num(prog, a, v, 0, 9007199254740991.0, &d)) return -1; g->seed = (long long)d; }
    return 1;
}

void genopts_apply(const um_genopts *g, um_settings *s) {
    if (g->have_preset) models_conf_apply(&g->pre, s);
    if (g->n_gen > 0) {
        s->n_gen = g->n_gen;
        if (g->steps <= 0) s->steps = g->n_gen;   /* one token per step unless told */
    }
    if (g->steps > 0) s->steps = g->steps;
    if (g->schedule >= 0) s->schedule = (um_schedule)g->schedule;
    if (g->block > 0) s->block_len = g->block;
    if (g->schedule == UM_SCHED_TIMESTEP && g->block <= 0) s->block_len = 0;
    if (g->eps >= 0) s->eps = g->eps;
    if (g->threshold >= 0) s->threshold = g->threshold;
    if (g->score >= 0) s->score = (um_score)g->score;
    if (g->alg_temp >= 0) s->alg_temp = g->alg_temp;
    if (g->temp >= 0) s->temperature = g->temp;
    if (g->top_k >= 0) s->top_k = g->top_k;
    if (g->top_p > 0) s->top_p = g->top_p;
    if (g->cfg >= 0) s->cfg = g->cfg;
    if (g->seed >= 0) s->seed = (uint64_t)g->seed;
    if (g->gumbel >= 0) s->gumbel = g->gumbel;
    if (g->stop_at_eos) s->stop_at_eos = true;
    if (s->block_len > s->n_gen) s->block_len = s->n_gen;
}

/* The bundled model: models/ in the working directory, then the installed data folder. */
static bool bundled_model(char *buf, size_t cap) {
    char installed[3800];
    snprintf(installed, sizeof installed, "%.3700s/models/unmask-demo.gguf", um_share_dir());
    const char *const cands[] = { "models/unmask-demo.gguf", installed };
    for (size_t i = 0; i < sizeof cands / sizeof cands[0]; i++) {
        if (infile_is_regular(cands[i])) {       /* a probe: never opens (a FIFO would block) */
            snprintf(buf, cap, "%s", cands[i]);
            return true;
        }
    }
    return false;
}

int genopts_resolve(um_genopts *g, um_err *e) {
    if (g->preset) {
        if (models_conf_resolve(g->preset, &g->pre, e)) return um_err_prefix(e, "-M %s", g->preset);
        g->have_preset = true;
    } else if (!g->model && models_conf_resolve(UM_DEFAULT_PRESET, &g->pre, NULL) == UM_OK) {
        /* no model named: models.conf's default preset, when its file is there */
        if (infile_is_regular(g->pre.path)) g->have_preset = true;
    }
    if (g->model) g->eng.model_path = g->model;
    else if (g->have_preset) g->eng.model_path = g->pre.path;
    else if (bundled_model(g->model_buf, sizeof g->model_buf)) g->eng.model_path = g->model_buf;
    else return um_errf(e, "no model given (-m FILE or -M PRESET) and the bundled model models/unmask-demo.gguf "
                           "was not found (make demo-model builds it)");
    if (g->no_chat) g->eng.chat_template = "none";
    else if (!g->eng.chat_template && g->have_preset && g->pre.chat_template[0]) g->eng.chat_template = g->pre.chat_template;
    return UM_OK;
}
