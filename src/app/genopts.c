/*
 * genopts: parse the generation flags (see genopts.h). Values are checked here, by the one
 * number parser (numparse.h), so every command reports a bad value the same way:
 * "unmask CMD: --steps: 'x' is not a whole number", "... is out of range (1 to 1048576)".
 * Schedule flags that name different schedules are refused whatever their order.
 */
#include "genopts.h"

#include "numparse.h"
#include "infile.h"
#include "schedule.h"

#include <stdlib.h>
#include <string.h>

void genopts_init(um_genopts *g) {
    memset(g, 0, sizeof *g);
    g->eng.kernel = -1;
    g->n_gen = g->steps = g->block = g->top_k = -1;
    g->eps = g->threshold = g->temp = g->top_p = g->cfg = g->alg_temp = -1;
    g->factor = g->eb_gamma = g->cache_drift = -1;
    g->cache = g->cache_type = -1;
    g->cache_refresh = -1;
    g->schedule = g->score = -1;
    g->seed = -1;
    g->gumbel = -1;
    g->eos_early_stop = g->edit = -1;
    g->block_steps = g->post_steps = -1;
    g->edit_threshold = -1;
    g->us_t_min = g->us_t_max = g->us_bound = g->us_confidence = -1;
    g->us_stability = g->us_sc_top_k = -1;
    g->us_sc_mode = -1;
}

void genopts_usage(FILE *f) {
    fprintf(f,
        "model:\n"
        "  -m FILE            model file (GGUF); default: the bundled demo model\n"
        "  -M NAME            a preset from models.conf\n"
        "  -t N               threads (default: physical cores)\n"
        "  --gpu              run the forward pass on the CUDA backend\n"
        "  --ctx N            context limit in tokens (default: the model's trained context;\n"
        "                     past it a generation runs only with --ctx, with a warning)\n"
        "prompt:\n"
        "  -p TEXT            the prompt (default: the preset's prompt, if it has one)\n"
        "  --chat-template T  llada, llada-moe, llada2, dream, chatml, rnd1, gemma4 or none (default: detected)\n"
        "  --chat-template-file F  the chat template in file F (format: docs/models.md)\n"
        "  --no-chat          use the prompt as it is (same as --chat-template none)\n"
        "  --system TEXT      system prompt\n"
        "decoding:\n"
        "  --gen N            tokens to generate (default 128)\n"
        "  --steps S          denoising steps (default: as many as tokens)\n"
        "  --block B          blocks of B tokens (any schedule); alone: the block schedule (LLaDA)\n"
        "  --eps E            timestep schedule (Dream) with this eps, 0 <= E < 1\n"
        "  --threshold T      confidence-threshold schedule (Fast-dLLM): commit all above T\n"
        "  --factor F         Fast-dLLM's factor rule: commit the n best while the n-th has a\n"
        "                     confidence >= 1 - F/(n+1)\n"
        "  --eb-gamma G       entropy-bounded sampler (EB-sampler): commit the lowest-entropy\n"
        "                     positions while their entropies, less the largest, sum to <= G nats\n"
        "  --schedule NAME    block, timestep, threshold, linear (RND1), factor or eb; flags\n"
        "                     naming two different schedules are an error\n"
        "  --alg A            position score: confidence, margin, entropy, random or origin\n"
        "  --alg-temp T       > 0: sample which positions commit (Dream's alg_temp)\n"
        "  --temp T           temperature (0 = greedy)\n"
        "  --top-k K          sample among the K best (0 = off)\n"
        "  --top-p P          nucleus sampling (1 = off)\n"
        "  --gumbel           LLaDA's Gumbel-max token choice in float64 (default for LLaDA)\n"
        "  --no-gumbel        Dream's multinomial token choice (default for Dream and RND1)\n"
        "  --cfg W            classifier-free guidance weight (0 = off)\n"
        "  --seed N           random seed (default 42)\n"
        "  --stop-at-eos      stop once a finished block is all end-of-text\n"
        "  --eos-early-stop   stop once every position up to the first end-of-text is\n"
        "                     committed (LLaDA 2.x; default for block-causal models)\n"
        "  --no-eos-early-stop  don't\n"
        "  --block-steps S    threshold schedule with LLaDA 2.0's quota: at in-block step k\n"
        "                     commit at least B/S (+1 for k < B%%S) besides all above the threshold\n"
        "block diffusion editing (LLaDA 2.1; any model):\n"
        "  --edit             replace committed tokens of the active block: LLaDA 2.1's\n"
        "                     defaults, --edit-threshold 0.9 --post-steps 16\n"
        "  --edit-threshold P replace a committed token when the model prefers another with\n"
        "                     probability > P (implies --edit)\n"
        "  --post-steps N     at most N edit-only steps once a block is full (implies --edit)\n"
        "  --no-edit          no editing\n"
        "uniform-state decoding (DiffusionGemma; defaults: the file's diffusion.eb_* keys):\n"
        "  --steps S          at most S steps a canvas (eb_max_steps); --gen N: ceil(N / canvas) canvases\n"
        "  --t-max T, --t-min T  temperature from T_max on a canvas's first step down to T_min\n"
        "  --entropy-bound B  accept positions by increasing entropy while the sum before stays <= B nats\n"
        "  --stability N      stop a canvas once its argmax held N steps running ...\n"
        "  --confidence C     ... and its mean entropy is below C\n"
        "  --self-cond MODE   self-conditioning: auto (default), exact, topk or off\n"
        "  --self-cond-topk K its K for topk and auto (default 256)\n"
        "  --cache prefix|none  the prompt's K/V once per canvas (default, exact) or the whole pass\n"
        "  --fast             the best measured trade-off: --eb-gamma 0.01 --cache dual\n"
        "                     --cache-drift 0.05; a flag naming a schedule or a cache mode or\n"
        "                     refresh rule replaces that part\n"
        "cache (approximate; default none = exact):\n"
        "  --cache MODE       none, prefix or dual (Fast-dLLM): a full pass fills a K/V cache at\n"
        "                     each block's start; then prefix recomputes the block and all after\n"
        "                     it, dual the block only (only positions masked at the fill)\n"
        "  --cache-refresh K  also a full pass every K steps (alone: --cache dual)\n"
        "  --cache-drift D    also a full pass after a step whose recomputed rows' K moved by\n"
        "                     more than D (relative) from the cached ones\n"
        "  --cache-type T     f16 (default), f32 or q8_0: how the cache stores K and V\n"
        "N, S, B, K are whole numbers (no fraction, exponent, hex or leading zero), the others\n"
        "decimals (no nan or inf); a value outside a flag's range is refused, naming the range.\n");
}

void genopts_json_settings(jsonw *j, const um_settings *s) {
    jsonw_obj_begin(j);
    jsonw_key(j, "gen"); jsonw_int(j, s->n_gen);
    jsonw_key(j, "steps_requested"); jsonw_int(j, s->steps);
    jsonw_key(j, "schedule"); jsonw_str(j, schedule_name(s->schedule));
    jsonw_key(j, "block"); jsonw_int(j, s->block_len);
    jsonw_key(j, "eps"); jsonw_num(j, s->eps);
    jsonw_key(j, "threshold"); jsonw_num(j, s->threshold);
    jsonw_key(j, "factor"); jsonw_num(j, s->factor);
    jsonw_key(j, "eb_gamma"); jsonw_num(j, s->eb_gamma);
    jsonw_key(j, "alg"); jsonw_str(j, schedule_score_name(s->score));
    jsonw_key(j, "temperature"); jsonw_num(j, s->temperature);
    jsonw_key(j, "top_k"); jsonw_int(j, s->top_k);
    jsonw_key(j, "top_p"); jsonw_num(j, s->top_p);
    jsonw_key(j, "cfg"); jsonw_num(j, s->cfg);
    jsonw_key(j, "seed"); jsonw_int(j, (long long)s->seed);
    jsonw_key(j, "cache"); jsonw_str(j, engine_cache_name(s->cache));
    jsonw_key(j, "cache_type"); jsonw_str(j, engine_kv_store_name(s->cache_type));
    jsonw_key(j, "cache_refresh"); jsonw_int(j, s->cache_refresh);
    jsonw_key(j, "cache_drift"); jsonw_num(j, s->cache_drift);
    jsonw_key(j, "block_aligned"); jsonw_bool(j, s->block_aligned);
    jsonw_key(j, "block_steps"); jsonw_int(j, s->block_steps);
    jsonw_key(j, "eos_early_stop"); jsonw_bool(j, s->eos_early_stop);
    jsonw_key(j, "edit"); jsonw_bool(j, s->edit);
    jsonw_key(j, "edit_threshold"); jsonw_num(j, s->edit_threshold);
    jsonw_key(j, "post_steps"); jsonw_int(j, s->post_steps);
    if (s->schedule == UM_SCHED_UNIFORM) {
        static const char *const sc_names[] = { "exact", "topk", "auto" };
        jsonw_key(j, "canvas"); jsonw_int(j, s->us_canvas);
        jsonw_key(j, "t_min"); jsonw_num(j, s->us_t_min);
        jsonw_key(j, "t_max"); jsonw_num(j, s->us_t_max);
        jsonw_key(j, "entropy_bound"); jsonw_num(j, s->us_bound);
        jsonw_key(j, "stability"); jsonw_int(j, s->us_stability);
        jsonw_key(j, "confidence"); jsonw_num(j, s->us_confidence);
        jsonw_key(j, "self_cond");
        jsonw_str(j, !s->us_self_cond ? "off" : s->us_sc_mode >= 0 && s->us_sc_mode <= 2 ? sc_names[s->us_sc_mode] : "?");
        jsonw_key(j, "self_cond_topk"); jsonw_int(j, s->us_sc_top_k);
    }
    jsonw_obj_end(j);
}

/* A flag that names a schedule conflicts with another that names a different one. */
static int conflict(const char *prog, const char *f1, int s1, const char *f2, int s2) {
    fprintf(stderr, "%s: %s and %s choose different schedules (%s, %s); give one\n", prog, f1, f2,
            schedule_name((um_schedule)s1), schedule_name((um_schedule)s2));
    return -1;
}

/* The schedule flags given so far must agree (docs/decoding.md, "Choosing a schedule from the flags"):
 * --eps names timestep, --threshold names threshold, --schedule NAME names NAME. --block
 * names none: every schedule runs over blocks, so it goes with any of them. a is the flag
 * just parsed; the message names the earlier flag first. */
static int check_schedule(const um_genopts *g, const char *a, const char *prog) {
    char named[64];
    snprintf(named, sizeof named, "--schedule %s", g->schedule >= 0 ? schedule_name((um_schedule)g->schedule) : "");
    /* the flags that name a schedule by their value, with whether each was given */
    const struct { const char *flag; int sched; bool given; } by_value[] = {
        { "--eps", UM_SCHED_TIMESTEP, g->eps >= 0 },
        { "--threshold", UM_SCHED_THRESHOLD, g->threshold >= 0 },
        { "--block-steps", UM_SCHED_THRESHOLD, g->block_steps >= 0 },
        { "--factor", UM_SCHED_FACTOR, g->factor >= 0 },
        { "--eb-gamma", UM_SCHED_EB, g->eb_gamma >= 0 },
    };
    const int n = (int)(sizeof by_value / sizeof by_value[0]);
    int mine = -1;                                  /* the schedule flag a names */
    for (int k = 0; k < n; k++) if (!strcmp(a, by_value[k].flag)) mine = by_value[k].sched;
    if (!strcmp(a, "--schedule")) {
        for (int k = 0; k < n; k++)
            if (by_value[k].given && g->schedule != by_value[k].sched)
                return conflict(prog, by_value[k].flag, by_value[k].sched, named, g->schedule);
    } else if (mine >= 0) {
        for (int k = 0; k < n; k++)
            if (by_value[k].given && by_value[k].sched != mine) return conflict(prog, by_value[k].flag, by_value[k].sched, a, mine);
        if (g->schedule >= 0 && g->schedule != mine) return conflict(prog, named, g->schedule, a, mine);
    }
    return 0;
}

/* Ranges of the numeric flags (docs/unmask.1 and README state them too). */
#define MAX_GEN   (1 << 20)
#define MAX_CTX   (1 << 24)
#define MAX_SEED  9007199254740991LL     /* 2^53 - 1: exact in JSON */

int genopts_parse(um_genopts *g, int argc, char **argv, int *i, const char *prog) {
    const char *a = argv[*i];
    /* flags without a value */
    if (!strcmp(a, "--no-chat")) { g->no_chat = true; return 1; }
    if (!strcmp(a, "--gumbel")) { g->gumbel = 1; return 1; }
    if (!strcmp(a, "--no-gumbel")) { g->gumbel = 0; return 1; }
    if (!strcmp(a, "--stop-at-eos")) { g->stop_at_eos = true; return 1; }
    if (!strcmp(a, "--fast")) { g->fast = true; return 1; }
    if (!strcmp(a, "--eos-early-stop")) { g->eos_early_stop = 1; return 1; }
    if (!strcmp(a, "--no-eos-early-stop")) { g->eos_early_stop = 0; return 1; }
    if (!strcmp(a, "--edit")) { g->edit = 1; return 1; }
    if (!strcmp(a, "--no-edit")) { g->edit = 0; return 1; }
    if (!strcmp(a, "--json")) { g->json = true; return 1; }
    if (!strcmp(a, "--gpu")) { g->eng.gpu = true; return 1; }
    static const char *const with_value[] = {
        "-m", "-M", "-t", "--ctx", "-p", "--chat-template", "--chat-template-file", "--system", "--gen", "--steps", "--block", "--eps",
        "--threshold", "--alg", "--schedule", "--alg-temp", "--temp", "--top-k", "--top-p", "--cfg", "--seed",
        "--factor", "--eb-gamma", "--cache", "--cache-type", "--cache-refresh", "--cache-drift",
        "--block-steps", "--edit-threshold", "--post-steps", "--t-min", "--t-max", "--entropy-bound",
        "--stability", "--confidence", "--self-cond", "--self-cond-topk",
    };
    int known = 0;
    for (size_t k = 0; k < sizeof with_value / sizeof with_value[0]; k++) known |= !strcmp(a, with_value[k]);
    if (!known) return 0;
    if (*i + 1 >= argc) { fprintf(stderr, "%s: %s needs a value\n", prog, a); return -1; }
    const char *v = argv[++*i];
    int bad = 0;
    int32_t n32;
    if (!strcmp(a, "-m")) g->model = v;
    else if (!strcmp(a, "-M")) g->preset = v;
    else if (!strcmp(a, "-p")) g->prompt = v;
    else if (!strcmp(a, "--chat-template")) g->eng.chat_template = v;
    else if (!strcmp(a, "--chat-template-file")) g->eng.chat_template_file = v;
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
    } else if (!strcmp(a, "--cache")) {
        um_cache c;
        um_err e;
        if (engine_cache_from_name(v, &c, &e)) { fprintf(stderr, "%s: --cache: %s\n", prog, e.msg); return -1; }
        g->cache = (int)c;
    } else if (!strcmp(a, "--cache-type")) {
        um_kv_store t;
        um_err e;
        if (engine_kv_store_from_name(v, &t, &e)) { fprintf(stderr, "%s: --cache-type: %s\n", prog, e.msg); return -1; }
        g->cache_type = (int)t;
    } else if (!strcmp(a, "-t")) { if (!(bad = num_arg_i32(prog, a, v, 1, 1024, &n32))) g->eng.n_threads = n32; }
    else if (!strcmp(a, "--ctx")) { if (!(bad = num_arg_i32(prog, a, v, 1, MAX_CTX, &n32))) g->eng.n_ctx = n32; }
    else if (!strcmp(a, "--gen")) bad = num_arg_i32(prog, a, v, 1, MAX_GEN, &g->n_gen);
    else if (!strcmp(a, "--steps")) bad = num_arg_i32(prog, a, v, 1, MAX_GEN, &g->steps);
    else if (!strcmp(a, "--block")) bad = num_arg_i32(prog, a, v, 1, MAX_GEN, &g->block);
    else if (!strcmp(a, "--top-k")) bad = num_arg_i32(prog, a, v, 0, MAX_CTX, &g->top_k);
    else if (!strcmp(a, "--seed")) {
        int64_t x;
        bad = num_arg_int(prog, a, v, 0, MAX_SEED, &x);
        if (!bad) g->seed = x;
    } else if (!strcmp(a, "--eps")) bad = num_arg_f32(prog, a, v, 0, 1, NUM_HI_OPEN, &g->eps);
    else if (!strcmp(a, "--threshold")) bad = num_arg_f32(prog, a, v, 0, 1, 0, &g->threshold);
    else if (!strcmp(a, "--alg-temp")) bad = num_arg_f32(prog, a, v, 0, 1e6, 0, &g->alg_temp);
    else if (!strcmp(a, "--temp")) bad = num_arg_f32(prog, a, v, 0, 100, 0, &g->temp);
    else if (!strcmp(a, "--top-p")) bad = num_arg_f32(prog, a, v, 0, 1, NUM_LO_OPEN, &g->top_p);
    else if (!strcmp(a, "--cfg")) bad = num_arg_f32(prog, a, v, 0, 100, 0, &g->cfg);
    else if (!strcmp(a, "--factor")) bad = num_arg_f32(prog, a, v, 0, 100, NUM_LO_OPEN, &g->factor);
    else if (!strcmp(a, "--eb-gamma")) bad = num_arg_f32(prog, a, v, 0, 1e6, 0, &g->eb_gamma);
    else if (!strcmp(a, "--cache-refresh")) bad = num_arg_i32(prog, a, v, 1, MAX_GEN, &g->cache_refresh);
    else if (!strcmp(a, "--cache-drift")) bad = num_arg_f32(prog, a, v, 0, 1e6, NUM_LO_OPEN, &g->cache_drift);
    else if (!strcmp(a, "--t-min")) bad = num_arg_f32(prog, a, v, 0, 100, NUM_LO_OPEN, &g->us_t_min);
    else if (!strcmp(a, "--t-max")) bad = num_arg_f32(prog, a, v, 0, 100, NUM_LO_OPEN, &g->us_t_max);
    else if (!strcmp(a, "--entropy-bound")) bad = num_arg_f32(prog, a, v, 0, 1e6, 0, &g->us_bound);
    else if (!strcmp(a, "--confidence")) bad = num_arg_f32(prog, a, v, 0, 1e6, 0, &g->us_confidence);
    else if (!strcmp(a, "--stability")) bad = num_arg_i32(prog, a, v, 0, MAX_GEN, &g->us_stability);
    else if (!strcmp(a, "--self-cond-topk")) bad = num_arg_i32(prog, a, v, 1, 4096, &g->us_sc_top_k);
    else if (!strcmp(a, "--self-cond")) {
        static const char *const modes[] = { "exact", "topk", "auto", "off" };
        g->us_sc_mode = -1;
        for (int k = 0; k < 4; k++) if (!strcmp(v, modes[k])) g->us_sc_mode = k;
        if (g->us_sc_mode < 0) { fprintf(stderr, "%s: --self-cond is auto, exact, topk or off (not '%s')\n", prog, v); return -1; }
    }
    else if (!strcmp(a, "--block-steps")) bad = num_arg_i32(prog, a, v, 1, MAX_GEN, &g->block_steps);
    else if (!strcmp(a, "--edit-threshold")) bad = num_arg_f32(prog, a, v, 0, 1, 0, &g->edit_threshold);
    else if (!strcmp(a, "--post-steps")) bad = num_arg_i32(prog, a, v, 0, MAX_GEN, &g->post_steps);
    if (bad) return -1;
    return check_schedule(g, a, prog) ? -1 : 1;
}

void genopts_apply(const um_genopts *g, um_settings *s) {
    if (g->have_preset) models_conf_apply(&g->pre, s);
    if (g->n_gen > 0) {
        s->n_gen = g->n_gen;
        /* one token per step unless told; a uniform-state canvas keeps its step budget */
        if (g->steps <= 0 && s->schedule != UM_SCHED_UNIFORM) s->steps = g->n_gen;
    }
    if (g->steps > 0) s->steps = g->steps;
    /* the schedule the flags name (they agree: check_schedule); --block alone: blocks */
    int sched = g->schedule >= 0 ? g->schedule
              : g->eps >= 0 ? UM_SCHED_TIMESTEP
              : g->threshold >= 0 || g->block_steps >= 0 ? UM_SCHED_THRESHOLD
              : g->factor >= 0 ? UM_SCHED_FACTOR
              : g->eb_gamma >= 0 ? UM_SCHED_EB
              : g->fast ? GENOPTS_FAST_SCHEDULE
              : g->block > 0 ? UM_SCHED_BLOCK : -1;
    /* --fast: the measured best combination (docs/decoding.md, "--fast"); a flag that names
     * a schedule or a cache setting replaces that part of it */
    if (g->fast && sched == GENOPTS_FAST_SCHEDULE && g->eb_gamma < 0) s->eb_gamma = GENOPTS_FAST_EB_GAMMA;
    if (g->fast && g->cache < 0 && g->cache_refresh <= 0 && g->cache_drift <= 0) {
        s->cache = GENOPTS_FAST_CACHE;
        s->cache_drift = GENOPTS_FAST_DRIFT;
    }
    if (sched >= 0) s->schedule = (um_schedule)sched;
    if (g->block > 0) s->block_len = g->block;
    if (sched == UM_SCHED_TIMESTEP && g->block <= 0) s->block_len = 0;   /* Dream: one block */
    if (g->eps >= 0) s->eps = g->eps;
    if (g->threshold >= 0) s->threshold = g->threshold;
    if (g->factor >= 0) s->factor = g->factor;
    if (g->eb_gamma >= 0) s->eb_gamma = g->eb_gamma;
    if (g->cache >= 0) s->cache = (um_cache)g->cache;
    else if (g->cache_refresh > 0 || g->cache_drift > 0) s->cache = UM_CACHE_DUAL;   /* a refresh rule alone */
    if (g->cache_type >= 0) s->cache_type = (um_kv_store)g->cache_type;
    if (g->cache_refresh > 0) s->cache_refresh = g->cache_refresh;
    if (g->cache_drift > 0) s->cache_drift = g->cache_drift;
    if (g->score >= 0) s->score = (um_score)g->score;
    if (g->alg_temp >= 0) s->alg_temp = g->alg_temp;
    if (g->temp >= 0) s->temperature = g->temp;
    if (g->top_k >= 0) s->top_k = g->top_k;
    if (g->top_p > 0) s->top_p = g->top_p;
    if (g->cfg >= 0) s->cfg = g->cfg;
    if (g->seed >= 0) s->seed = (uint64_t)g->seed;
    if (g->gumbel >= 0) s->gumbel = g->gumbel;
    if (g->stop_at_eos) s->stop_at_eos = true;
    if (g->eos_early_stop >= 0) s->eos_early_stop = g->eos_early_stop;
    if (g->block_steps >= 0) s->block_steps = g->block_steps;
    /* editing: --edit-threshold or --post-steps turn it on with the other at LLaDA 2.1's default */
    if (g->edit_threshold >= 0) { s->edit = true; s->edit_threshold = g->edit_threshold; }
    if (g->post_steps >= 0) { s->edit = true; s->post_steps = g->post_steps; }
    if (g->edit >= 0) s->edit = g->edit;
    if (!s->block_aligned && s->block_len > s->n_gen) s->block_len = s->n_gen;
    if (g->us_t_min > 0) s->us_t_min = g->us_t_min;
    if (g->us_t_max > 0) s->us_t_max = g->us_t_max;
    if (g->us_bound >= 0) s->us_bound = g->us_bound;
    if (g->us_confidence >= 0) s->us_confidence = g->us_confidence;
    if (g->us_stability >= 0) s->us_stability = g->us_stability;
    if (g->us_sc_top_k > 0) s->us_sc_top_k = g->us_sc_top_k;
    if (g->us_sc_mode == 3) s->us_self_cond = false;
    else if (g->us_sc_mode >= 0) { s->us_self_cond = true; s->us_sc_mode = g->us_sc_mode; }   /* aligned: the attention's block */
}

void genopts_progress_stderr(void *quiet, const char *what, int done, int total) {
    if (*(const bool *)quiet) return;
    fprintf(stderr, "\rload: %s %d/%d   ", what, done, total);
    if (done == total) fputc('\n', stderr);
}

void genopts_warn_stderr(void *prog, const char *msg) {
    fprintf(stderr, "%s: warning: %s\n", (const char *)prog, msg);
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
    if (!g->prompt && g->have_preset && g->pre.prompt[0]) g->prompt = g->pre.prompt;   /* points into g */
    if (g->no_chat) { g->eng.chat_template = "none"; g->eng.chat_template_file = NULL; }
    else if (!g->eng.chat_template && g->have_preset && g->pre.chat_template[0]) g->eng.chat_template = g->pre.chat_template;
    return UM_OK;
}

#define COMPARE_MAX_ARGS 64

int genopts_parse_compare(um_genopts *g, char *flags, const char *prog) {
    static const char *const refused[] = {
        "-m", "-M", "-p", "-t", "--ctx", "--gpu", "--chat-template", "--chat-template-file", "--system", "--no-chat", "--json",
    };
    char *argv[COMPARE_MAX_ARGS + 1];
    int argc = 0;
    char *r = flags, *w = flags, *given = strdup(flags);   /* given: for messages */
    if (!given) { fprintf(stderr, "%s: out of memory\n", prog); return UM_FAIL; }
    for (;;) {                                      /* split in place, quotes removed */
        while (*r == ' ' || *r == '\t') r++;
        if (!*r) break;
        if (argc == COMPARE_MAX_ARGS) {
            fprintf(stderr, "%s: --compare: more than %d words\n", prog, COMPARE_MAX_ARGS);
            free(given);
            return UM_FAIL;
        }
        const char *start = r;
        argv[argc++] = w;
        char quote = 0;
        for (; *r && (quote || (*r != ' ' && *r != '\t')); r++) {
            if (!quote && (*r == '\'' || *r == '"')) quote = *r;
            else if (quote && *r == quote) quote = 0;
            else *w++ = *r;
        }
        if (quote) {                                /* the text as given, from the word on: the */
            fprintf(stderr, "%s: --compare: unterminated %c in '%s'\n", prog, quote,   /* split overwrote it */
                    given + (start - flags));
            free(given);
            return UM_FAIL;
        }
        bool end = !*r;
        *w++ = 0;
        if (end) break;
        r++;
    }
    argv[argc] = NULL;
    free(given);
    if (argc == 0) { fprintf(stderr, "%s: --compare needs decoding flags, e.g. --compare \"--seed 2\"\n", prog); return UM_FAIL; }
    for (int i = 0; i < argc; i++) {
        for (size_t k = 0; k < sizeof refused / sizeof refused[0]; k++)
            if (!strcmp(argv[i], refused[k])) {
                fprintf(stderr, "%s: --compare: %s is not allowed there (every pane decodes the same prompt with the same model; give it outside --compare)\n",
                        prog, argv[i]);
                return UM_FAIL;
            }
        int rc = genopts_parse(g, argc, argv, &i, prog);
        if (rc < 0) return UM_FAIL;
        if (rc == 0) { fprintf(stderr, "%s: --compare: '%s' is not a decoding flag\n", prog, argv[i]); return UM_FAIL; }
    }
    return UM_OK;
}
