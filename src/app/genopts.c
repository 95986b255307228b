/*
 * genopts: parse the generation flags (see genopts.h). Values are checked here, by the one
 * number parser (numparse.h), so every command reports a bad value the same way:
 * "unmask CMD: --steps: 'x' is not a whole number", "... is out of range (1 to 1048576)".
 * Schedule flags that name different schedules are refused whatever their order.
 */
#include "genopts.h"

#include "esc.h"
#include "numparse.h"
#include "infile.h"
#include "schedule.h"

#include <stdlib.h>
#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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
    g->us_sc_mode = g->us_sc_bf16 = -1;
}

/* ------------------------------------------------------------------ the table */

enum {
    GO_GPU = 1, GO_CTX, GO_PROMPT, GO_CHAT_TEMPLATE, GO_CHAT_TEMPLATE_FILE, GO_NO_CHAT, GO_SYSTEM,
    GO_GEN, GO_STEPS, GO_BLOCK, GO_EPS, GO_THRESHOLD, GO_FACTOR, GO_EB_GAMMA, GO_SCHEDULE, GO_ALG,
    GO_ALG_TEMP, GO_TEMP, GO_TOP_K, GO_TOP_P, GO_GUMBEL, GO_NO_GUMBEL, GO_CFG, GO_SEED, GO_STOP_AT_EOS,
    GO_EOS_EARLY_STOP, GO_NO_EOS_EARLY_STOP, GO_BLOCK_STEPS, GO_EDIT, GO_EDIT_THRESHOLD, GO_POST_STEPS,
    GO_NO_EDIT, GO_FAST, GO_CACHE, GO_CACHE_REFRESH, GO_CACHE_DRIFT, GO_CACHE_TYPE,
    GO_T_MAX, GO_T_MIN, GO_ENTROPY_BOUND, GO_STABILITY, GO_CONFIDENCE, GO_SELF_COND, GO_SELF_COND_TOPK,
    GO_SELF_COND_PRODUCT,
};

#define D FLAG_CMD_DECODE
#define S_(x) (1u << (x))

/* Every generation flag, in help order. key: the JSON settings key of the value the row sets
 * (genopts_json_settings); uses: the schedules the setting belongs to (eval's settings line). */
static const um_flag gen_rows[] = {
    { 0, "gpu", NULL, GO_GPU, D, FLAG_RUN, NULL, 0, "run the forward pass on the CUDA backend" },
    { 0, "ctx", "N", GO_CTX, D, FLAG_RUN, NULL, 0,
      "context limit in tokens (default: the model's trained context;\n"
      "past it a generation runs only with --ctx, with a warning)" },
    { .help = "prompt:", .cmds = D },
    { 'p', "prompt", "TEXT", GO_PROMPT, D, FLAG_RUN, NULL, 0,
      "the prompt (default: the preset's prompt, if it has one)" },
    { 0, "chat-template", "NAME", GO_CHAT_TEMPLATE, D, FLAG_RUN | FLAG_PANE, NULL, 0,
      "llada, llada-moe, llada2, dream, chatml, rnd1, gemma4 or none\n"
      "(default: the file's own unmask.chat_template, else detected)" },
    { 0, "chat-template-file", "FILE", GO_CHAT_TEMPLATE_FILE, D, FLAG_RUN | FLAG_PANE, NULL, 0,
      "the chat template in FILE (format: docs/models.md)" },
    { 0, "no-chat", NULL, GO_NO_CHAT, D, FLAG_RUN | FLAG_PANE, NULL, 0, "use the prompt as it is (same as --chat-template none)" },
    { 0, "system", "TEXT", GO_SYSTEM, D, FLAG_RUN | FLAG_PANE, NULL, 0, "system prompt" },
    { .help = "decoding:", .cmds = D },
    { 0, "gen", "N", GO_GEN, D, 0, "gen", 0, "tokens to generate, 1 to 1048576 (default 128)" },
    { 0, "steps", "S", GO_STEPS, D, 0, "steps_requested", 0, "denoising steps (default: as many as tokens)" },
    { 0, "block", "B", GO_BLOCK, D, 0, "block", 0, "blocks of B tokens (any schedule); alone: the block schedule (LLaDA)" },
    { 0, "eps", "E", GO_EPS, D, 0, "eps", S_(UM_SCHED_TIMESTEP), "timestep schedule (Dream) with this eps, 0 <= E < 1" },
    { 0, "threshold", "T", GO_THRESHOLD, D, 0, "threshold", S_(UM_SCHED_THRESHOLD),
      "confidence-threshold schedule (Fast-dLLM): commit all above T" },
    { 0, "factor", "F", GO_FACTOR, D, 0, "factor", S_(UM_SCHED_FACTOR),
      "Fast-dLLM's factor rule: commit the n best while the n-th has a\n"
      "confidence >= 1 - F/(n+1)" },
    { 0, "eb-gamma", "G", GO_EB_GAMMA, D, 0, "eb_gamma", S_(UM_SCHED_EB),
      "entropy-bounded sampler (EB-sampler): commit the lowest-entropy\n"
      "positions while their entropies, less the largest, sum to <= G nats" },
    { 0, "schedule", "NAME", GO_SCHEDULE, D, 0, "schedule", 0,
      "block, timestep, threshold, linear (RND1), factor or eb; flags\n"
      "naming two different schedules are an error" },
    { 0, "alg", "A", GO_ALG, D, 0, "alg", 0, "position score: confidence, margin, entropy, random or origin" },
    { 0, "alg-temp", "T", GO_ALG_TEMP, D, 0, "alg_temp", 0, "> 0: sample which positions commit (Dream's alg_temp)" },
    { 0, "temp", "T", GO_TEMP, D, 0, "temperature", 0, "temperature (0 = greedy)" },
    { 0, "top-k", "K", GO_TOP_K, D, 0, "top_k", 0, "sample among the K best (0 = off)" },
    { 0, "top-p", "P", GO_TOP_P, D, 0, "top_p", 0, "nucleus sampling (1 = off)" },
    { 0, "gumbel", NULL, GO_GUMBEL, D, 0, "gumbel", 0, "LLaDA's Gumbel-max token choice in float64 (default for LLaDA)" },
    { 0, "no-gumbel", NULL, GO_NO_GUMBEL, D, 0, NULL, 0, "Dream's multinomial token choice (default for Dream and RND1)" },
    { 0, "cfg", "W", GO_CFG, D, 0, "cfg", 0, "classifier-free guidance weight (0 = off)" },
    { 0, "seed", "N", GO_SEED, D, 0, "seed", 0, "random seed, 0 to 9007199254740991 (default 42)" },
    { 0, "stop-at-eos", NULL, GO_STOP_AT_EOS, D, 0, "stop_at_eos", 0, "stop once a finished block is all end-of-text" },
    { 0, "eos-early-stop", NULL, GO_EOS_EARLY_STOP, D, 0, "eos_early_stop", 0,
      "stop once every position up to the first end-of-text is\n"
      "committed (LLaDA 2.x; default for block-causal models)" },
    { 0, "no-eos-early-stop", NULL, GO_NO_EOS_EARLY_STOP, D, 0, NULL, 0, "don't" },
    { 0, "block-steps", "S", GO_BLOCK_STEPS, D, 0, "block_steps", S_(UM_SCHED_THRESHOLD),
      "threshold schedule with LLaDA 2.0's quota: at in-block step k\n"
      "commit at least B/S (+1 for k < B%S) besides all above the threshold" },
    { 0, "fast", NULL, GO_FAST, D, 0, NULL, 0,
      "the model's measured best fast decoding (its preset's `fast`:\n"
      "sudoku --threshold 0.999, demo --threshold 0.5), else\n"
      "Fast-dLLM's --threshold 0.9 --cache dual; a flag naming a\n"
      "schedule or a cache mode or refresh rule replaces that part" },
    { .help = "block diffusion editing (LLaDA 2.1; any model):", .cmds = D },
    { 0, "edit", NULL, GO_EDIT, D, 0, "edit", 0,
      "replace committed tokens of the active block: LLaDA 2.1's\n"
      "defaults, --edit-threshold 0.9 --post-steps 16" },
    { 0, "edit-threshold", "P", GO_EDIT_THRESHOLD, D, 0, "edit_threshold", 0,
      "replace a committed token when the model prefers another with\n"
      "probability > P (implies --edit)" },
    { 0, "post-steps", "N", GO_POST_STEPS, D, 0, "post_steps", 0, "at most N edit-only steps once a block is full (implies --edit)" },
    { 0, "no-edit", NULL, GO_NO_EDIT, D, 0, NULL, 0, "no editing" },
    { .help = "uniform-state decoding (DiffusionGemma, and files with unmask.uniform_state = true;\n"
              "defaults: the file's diffusion.eb_* keys; --steps S: at most S steps a canvas,\n"
              "--gen N: ceil(N / canvas) canvases; DiffusionGemma's --cache prefix|none: the prompt's\n"
              "K/V once per canvas (default, exact) or the whole pass; the others: the whole pass only):",
      .cmds = D },
    { 0, "t-max", "T", GO_T_MAX, D, 0, "t_max", S_(UM_SCHED_UNIFORM), "temperature on a canvas's first step (down to --t-min)" },
    { 0, "t-min", "T", GO_T_MIN, D, 0, "t_min", S_(UM_SCHED_UNIFORM), "temperature on its last step" },
    { 0, "entropy-bound", "B", GO_ENTROPY_BOUND, D, 0, "entropy_bound", S_(UM_SCHED_UNIFORM),
      "accept positions by increasing entropy while the sum before stays <= B nats" },
    { 0, "stability", "N", GO_STABILITY, D, 0, "stability", S_(UM_SCHED_UNIFORM), "stop a canvas once its argmax held N steps running ..." },
    { 0, "confidence", "C", GO_CONFIDENCE, D, 0, "confidence", S_(UM_SCHED_UNIFORM), "... and its mean entropy is below C" },
    { 0, "self-cond", "MODE", GO_SELF_COND, D, 0, "self_cond", S_(UM_SCHED_UNIFORM), "self-conditioning: auto (default), exact, topk or off (DiffusionGemma only)" },
    { 0, "self-cond-topk", "K", GO_SELF_COND_TOPK, D, 0, "self_cond_topk", S_(UM_SCHED_UNIFORM), "its K for topk and auto, 1 to 4096 (default 256)" },
    { 0, "self-cond-product", "P", GO_SELF_COND_PRODUCT, D, 0, "self_cond_product", S_(UM_SCHED_UNIFORM),
      "exact and auto's exact rows in f32 (default) or bf16: BF16 values in\n"
      "float pairs, twice the rate with AVX-512 BF16, the same bits anywhere" },
    { .help = "cache (approximate; default none = exact):", .cmds = D },
    { 0, "cache", "MODE", GO_CACHE, D, 0, "cache", 0,
      "none, prefix or dual (Fast-dLLM): a full pass fills a K/V cache at\n"
      "each block's start; then prefix recomputes the block and all after\n"
      "it, dual the block only (only positions masked at the fill)" },
    { 0, "cache-refresh", "K", GO_CACHE_REFRESH, D, 0, "cache_refresh", 0, "also a full pass every K steps (alone: --cache dual)" },
    { 0, "cache-drift", "D", GO_CACHE_DRIFT, D, 0, "cache_drift", 0,
      "also a full pass after a step whose recomputed rows' K moved by\n"
      "more than D (relative) from the cached ones" },
    { 0, "cache-type", "T", GO_CACHE_TYPE, D, 0, "cache_type", 0, "f16 (default), f32 or q8_0: how the cache stores K and V" },
};
#undef D

void genopts_usage_numbers(FILE *f) {
    fprintf(f, "N, S, B, K are whole numbers (no fraction, exponent, hex or leading zero), the others\n"
               "decimals (no nan or inf); a value outside a flag's range is refused, naming the range.\n"
               "A long flag's value may follow '=' (--steps=32), a short flag's be attached (-t2);\n"
               "-- ends the flags.\n");
}

/* One setting's value as JSON, by the row that sets it. */
static void put_setting(jsonw *j, const um_settings *s, int id) {
    switch (id) {
    case GO_GEN:            jsonw_int(j, s->n_gen); break;
    case GO_STEPS:          jsonw_int(j, s->steps); break;
    case GO_BLOCK:          jsonw_int(j, s->block_len); break;
    case GO_EPS:            jsonw_f32(j, s->eps); break;
    case GO_THRESHOLD:      jsonw_f32(j, s->threshold); break;
    case GO_FACTOR:         jsonw_f32(j, s->factor); break;
    case GO_EB_GAMMA:       jsonw_f32(j, s->eb_gamma); break;
    case GO_SCHEDULE:       jsonw_str(j, schedule_name(s->schedule)); break;
    case GO_ALG:            jsonw_str(j, schedule_score_name(s->score)); break;
    case GO_ALG_TEMP:       jsonw_f32(j, s->alg_temp); break;
    case GO_TEMP:           jsonw_f32(j, s->temperature); break;
    case GO_TOP_K:          jsonw_int(j, s->top_k); break;
    case GO_TOP_P:          jsonw_f32(j, s->top_p); break;
    case GO_GUMBEL:         jsonw_bool(j, s->gumbel); break;
    case GO_CFG:            jsonw_f32(j, s->cfg); break;
    case GO_SEED:           jsonw_int(j, (long long)s->seed); break;
    case GO_STOP_AT_EOS:    jsonw_bool(j, s->stop_at_eos); break;
    case GO_EOS_EARLY_STOP: jsonw_bool(j, s->eos_early_stop); break;
    case GO_BLOCK_STEPS:    jsonw_int(j, s->block_steps); break;
    case GO_EDIT:           jsonw_bool(j, s->edit); break;
    case GO_EDIT_THRESHOLD: jsonw_f32(j, s->edit_threshold); break;
    case GO_POST_STEPS:     jsonw_int(j, s->post_steps); break;
    case GO_CACHE:          jsonw_str(j, engine_cache_name(s->cache)); break;
    case GO_CACHE_REFRESH:  jsonw_int(j, s->cache_refresh); break;
    case GO_CACHE_DRIFT:    jsonw_f32(j, s->cache_drift); break;
    case GO_CACHE_TYPE:     jsonw_str(j, engine_kv_store_name(s->cache_type)); break;
    case GO_T_MAX:          jsonw_f32(j, s->us_t_max); break;
    case GO_T_MIN:          jsonw_f32(j, s->us_t_min); break;
    case GO_ENTROPY_BOUND:  jsonw_f32(j, s->us_bound); break;
    case GO_STABILITY:      jsonw_int(j, s->us_stability); break;
    case GO_CONFIDENCE:     jsonw_f32(j, s->us_confidence); break;
    case GO_SELF_COND: {
        static const char *const sc_names[] = { "exact", "topk", "auto" };
        jsonw_str(j, !s->us_self_cond ? "off" : s->us_sc_mode >= 0 && s->us_sc_mode <= 2 ? sc_names[s->us_sc_mode] : "?");
        break;
    }
    case GO_SELF_COND_TOPK: jsonw_int(j, s->us_sc_top_k); break;
    case GO_SELF_COND_PRODUCT: jsonw_str(j, s->us_sc_bf16 ? "bf16" : "f32"); break;
    default:                jsonw_null(j); break;
    }
}

void genopts_json_settings(jsonw *j, const um_settings *s) {
    jsonw_obj_begin(j);
    const bool uniform = s->schedule == UM_SCHED_UNIFORM;
    for (size_t k = 0; k < sizeof gen_rows / sizeof gen_rows[0]; k++) {
        if (!gen_rows[k].key) continue;
        /* the uniform-state rows only under that schedule (the others keep a fixed schema) */
        if (gen_rows[k].uses == S_(UM_SCHED_UNIFORM) && !uniform) continue;
        jsonw_key(j, gen_rows[k].key);
        put_setting(j, s, gen_rows[k].id);
    }
    jsonw_key(j, "block_aligned"); jsonw_bool(j, s->block_aligned);   /* the model's, no flag */
    if (uniform) { jsonw_key(j, "canvas"); jsonw_int(j, s->us_canvas); }
    jsonw_obj_end(j);
}

bool genopts_setting_used(const char *key, const um_settings *s) {
    for (size_t k = 0; k < sizeof gen_rows / sizeof gen_rows[0]; k++)
        if (gen_rows[k].key && !strcmp(gen_rows[k].key, key))
            return !gen_rows[k].uses || (gen_rows[k].uses & S_((unsigned)s->schedule));
    return false;
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
#define MAX_CTX   (1 << 24)
#define MAX_SEED  9007199254740991LL     /* 2^53 - 1: exact in JSON */

/* The shared rows (-m -M -t) into g; -q and -h are the command's (flags_common). */
static int model_fn(void *ctx, const um_flag *f, const char *name, const char *v, const char *prog) {
    um_genopts *g = ctx;
    switch (f->id) {
    case FLAG_ID_MODEL:   g->model = v; return 0;
    case FLAG_ID_PRESET:  g->preset = v; return 0;
    case FLAG_ID_THREADS: return num_arg_i32(prog, name, v, 1, FLAGS_MAX_THREADS, &g->eng.n_threads);
    default:              return 0;
    }
}

/* Enumerations by name: the lower layer's parser, its message after the flag. */
#define BY_NAME(parse, type, field) do {                                                \
        type x_; um_err e_;                                                             \
        if (parse(v, &x_, &e_)) { fprintf(stderr, "%s: %s: %s\n", prog, name, e_.msg); return -1; } \
        g->field = (int)x_;                                                             \
    } while (0)

static int gen_fn(void *ctx, const um_flag *f, const char *name, const char *v, const char *prog) {
    um_genopts *g = ctx;
    int bad = 0;
    int32_t n32;
    int64_t n64;
    switch (f->id) {
    case GO_GPU:                g->eng.gpu = true; break;
    case GO_CTX:                if (!(bad = num_arg_i32(prog, name, v, 1, MAX_CTX, &n32))) g->eng.n_ctx = n32; break;
    case GO_PROMPT:             g->prompt = v; break;
    case GO_CHAT_TEMPLATE:      g->eng.chat_template = v; break;
    case GO_CHAT_TEMPLATE_FILE: g->eng.chat_template_file = v; break;
    case GO_NO_CHAT:            g->no_chat = true; break;
    case GO_SYSTEM:             g->eng.system = v; break;
    case GO_GEN:                bad = num_arg_i32(prog, name, v, 1, GENOPTS_MAX_GEN, &g->n_gen); break;
    case GO_STEPS:              bad = num_arg_i32(prog, name, v, 1, GENOPTS_MAX_GEN, &g->steps); break;
    case GO_BLOCK:              bad = num_arg_i32(prog, name, v, 1, GENOPTS_MAX_GEN, &g->block); break;
    case GO_EPS:                bad = num_arg_f32(prog, name, v, 0, 1, NUM_HI_OPEN, &g->eps); break;
    case GO_THRESHOLD:          bad = num_arg_f32(prog, name, v, 0, 1, 0, &g->threshold); break;
    case GO_FACTOR:             bad = num_arg_f32(prog, name, v, 0, 100, NUM_LO_OPEN, &g->factor); break;
    case GO_EB_GAMMA:           bad = num_arg_f32(prog, name, v, 0, 1e6, 0, &g->eb_gamma); break;
    case GO_SCHEDULE:           BY_NAME(schedule_from_name, um_schedule, schedule); break;
    case GO_ALG:                BY_NAME(schedule_score_from_name, um_score, score); break;
    case GO_ALG_TEMP:           bad = num_arg_f32(prog, name, v, 0, 1e6, 0, &g->alg_temp); break;
    case GO_TEMP:               bad = num_arg_f32(prog, name, v, 0, 100, 0, &g->temp); break;
    case GO_TOP_K:              bad = num_arg_i32(prog, name, v, 0, MAX_CTX, &g->top_k); break;
    case GO_TOP_P:              bad = num_arg_f32(prog, name, v, 0, 1, NUM_LO_OPEN, &g->top_p); break;
    case GO_GUMBEL:             g->gumbel = 1; break;
    case GO_NO_GUMBEL:          g->gumbel = 0; break;
    case GO_CFG:                bad = num_arg_f32(prog, name, v, 0, 100, 0, &g->cfg); break;
    case GO_SEED:               if (!(bad = num_arg_int(prog, name, v, 0, MAX_SEED, &n64))) g->seed = n64; break;
    case GO_STOP_AT_EOS:        g->stop_at_eos = true; break;
    case GO_EOS_EARLY_STOP:     g->eos_early_stop = 1; break;
    case GO_NO_EOS_EARLY_STOP:  g->eos_early_stop = 0; break;
    case GO_BLOCK_STEPS:        bad = num_arg_i32(prog, name, v, 1, GENOPTS_MAX_GEN, &g->block_steps); break;
    case GO_EDIT:               g->edit = 1; break;
    case GO_EDIT_THRESHOLD:     bad = num_arg_f32(prog, name, v, 0, 1, 0, &g->edit_threshold); break;
    case GO_POST_STEPS:         bad = num_arg_i32(prog, name, v, 0, GENOPTS_MAX_GEN, &g->post_steps); break;
    case GO_NO_EDIT:            g->edit = 0; break;
    case GO_FAST:               g->fast = true; break;
    case GO_CACHE:              BY_NAME(engine_cache_from_name, um_cache, cache); break;
    case GO_CACHE_REFRESH:      bad = num_arg_i32(prog, name, v, 1, GENOPTS_MAX_GEN, &g->cache_refresh); break;
    case GO_CACHE_DRIFT:        bad = num_arg_f32(prog, name, v, 0, 1e6, NUM_LO_OPEN, &g->cache_drift); break;
    case GO_CACHE_TYPE:         BY_NAME(engine_kv_store_from_name, um_kv_store, cache_type); break;
    case GO_T_MAX:              bad = num_arg_f32(prog, name, v, 0, 100, NUM_LO_OPEN, &g->us_t_max); break;
    case GO_T_MIN:              bad = num_arg_f32(prog, name, v, 0, 100, NUM_LO_OPEN, &g->us_t_min); break;
    case GO_ENTROPY_BOUND:      bad = num_arg_f32(prog, name, v, 0, 1e6, 0, &g->us_bound); break;
    case GO_CONFIDENCE:         bad = num_arg_f32(prog, name, v, 0, 1e6, 0, &g->us_confidence); break;
    case GO_STABILITY:          bad = num_arg_i32(prog, name, v, 0, GENOPTS_MAX_GEN, &g->us_stability); break;
    case GO_SELF_COND_TOPK:     bad = num_arg_i32(prog, name, v, 1, 4096, &g->us_sc_top_k); break;
    case GO_SELF_COND: {
        static const char *const modes[] = { "exact", "topk", "auto", "off" };
        g->us_sc_mode = -1;
        for (int k = 0; k < 4; k++) if (!strcmp(v, modes[k])) g->us_sc_mode = k;
        if (g->us_sc_mode < 0) { fprintf(stderr, "%s: %s is auto, exact, topk or off (not '%s')\n", prog, name, v); return -1; }
        break;
    }
    case GO_SELF_COND_PRODUCT:
        if ((g->us_sc_bf16 = genopts_sc_product(prog, name, v)) < 0) return -1;
        break;
    default:                    break;
    }
    if (bad) return -1;
    char flag[48];                                  /* check_schedule speaks in long names */
    snprintf(flag, sizeof flag, "--%s", f->long_name ? f->long_name : "");
    return check_schedule(g, flag, prog) ? -1 : 0;
}

void genopts_add(flags_parser *p, um_genopts *g) {
    flags_add(p, flags_model_rows, flags_model_rows_n, model_fn, g, NULL);
    flags_add(p, gen_rows, (int)(sizeof gen_rows / sizeof gen_rows[0]), gen_fn, g, NULL);
}


/* What --fast stands for with preset pre (NULL: none): its `fast`, else GENOPTS_FAST_*. */
static models_fast fast_of(const models_preset *pre) {
    if (pre && pre->fast.set) return pre->fast;
    return (models_fast){ .set = true, .threshold = GENOPTS_FAST_THRESHOLD, .eb_gamma = -1, .factor = -1,
                          .cache = GENOPTS_FAST_CACHE, .cache_drift = -1, .cache_refresh = -1 };
}

/* genopts_apply with --fast read from preset fast_pre */
static void apply(const um_genopts *g, const models_preset *fast_pre, um_settings *s) {
    if (g->have_preset) models_conf_apply(&g->pre, s);
    if (g->n_gen > 0) {
        s->n_gen = g->n_gen;
        /* one token per step unless told; a uniform-state canvas keeps its step budget */
        if (g->steps <= 0 && s->schedule != UM_SCHED_UNIFORM) s->steps = g->n_gen;
    }
    if (g->steps > 0) s->steps = g->steps;
    /* --fast (docs/decoding.md, "Fast, per model"): its rule unless a flag names a schedule, its cache
     * unless a flag names a cache mode or refresh rule */
    float threshold = g->threshold, factor = g->factor, eb_gamma = g->eb_gamma, drift = g->cache_drift;
    int cache = g->cache;
    int32_t refresh = g->cache_refresh;
    if (g->fast) {
        models_fast f = fast_of(fast_pre);
        if (g->schedule < 0 && g->eps < 0 && threshold < 0 && g->block_steps < 0 && factor < 0 && eb_gamma < 0) {
            threshold = f.threshold;
            factor = f.factor;
            eb_gamma = f.eb_gamma;
        }
        if (cache < 0 && refresh <= 0 && drift <= 0) {
            cache = f.cache;
            drift = f.cache_drift;
            refresh = f.cache_refresh;
        }
    }
    /* the schedule the flags name (they agree: check_schedule); --block alone: blocks */
    int sched = g->schedule >= 0 ? g->schedule
              : g->eps >= 0 ? UM_SCHED_TIMESTEP
              : threshold >= 0 || g->block_steps >= 0 ? UM_SCHED_THRESHOLD
              : factor >= 0 ? UM_SCHED_FACTOR
              : eb_gamma >= 0 ? UM_SCHED_EB
              : g->block > 0 ? UM_SCHED_BLOCK : -1;
    if (sched >= 0) s->schedule = (um_schedule)sched;
    if (g->block > 0) s->block_len = g->block;
    if (sched == UM_SCHED_TIMESTEP && g->block <= 0) s->block_len = 0;   /* Dream: one block */
    if (g->eps >= 0) s->eps = g->eps;
    if (threshold >= 0) s->threshold = threshold;
    if (factor >= 0) s->factor = factor;
    if (eb_gamma >= 0) s->eb_gamma = eb_gamma;
    if (cache >= 0) s->cache = (um_cache)cache;
    else if (refresh > 0 || drift > 0) s->cache = UM_CACHE_DUAL;   /* a refresh rule alone */
    if (g->cache_type >= 0) s->cache_type = (um_kv_store)g->cache_type;
    if (refresh > 0) s->cache_refresh = refresh;
    if (drift > 0) s->cache_drift = drift;
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
    if (g->us_sc_bf16 >= 0) s->us_sc_bf16 = g->us_sc_bf16;
    if (g->us_sc_mode == 3) s->us_self_cond = false;
    else if (g->us_sc_mode >= 0) { s->us_self_cond = true; s->us_sc_mode = g->us_sc_mode; }   /* aligned: the attention's block */
}

int genopts_sc_product(const char *prog, const char *name, const char *v) {
    if (!strcmp(v, "f32")) return 0;
    if (!strcmp(v, "bf16")) return 1;
    fprintf(stderr, "%s: %s is f32 or bf16 (not '%s')\n", prog, name, v);
    return -1;
}

void genopts_apply(const um_genopts *g, um_settings *s) {
    apply(g, g->have_preset ? &g->pre : NULL, s);
}

void genopts_progress_stderr(void *quiet, const char *what, int done, int total) {
    if (*(const bool *)quiet) return;
    if (isatty(STDERR_FILENO)) {                   /* redrawn in place */
        fprintf(stderr, "\rload: %s %d/%d   ", what, done, total);
        if (done == total) fputc('\n', stderr);
    } else if (done == total) {                     /* a log: the finished line only, once */
        static char last[64];
        if (!strncmp(last, what, sizeof last - 1)) return;
        snprintf(last, sizeof last, "%s", what);
        fprintf(stderr, "load: %s %d/%d\n", what, done, total);
    }
}

void genopts_warn_stderr(void *prog, const char *msg) {
    fprintf(stderr, "%s: warning: %s\n", (const char *)prog, msg);
}

/* The bundled model: models/ in the working directory, beside the binary (a build tree), then
 * in the installed data folder; where it looked goes into `looked` for the message. */
static bool bundled_model(char *buf, size_t cap, char *looked, size_t looked_cap) {
    char beside[3800], installed[3800];
    snprintf(beside, sizeof beside, "%.3700s/models/", um_exe_dir());
    snprintf(installed, sizeof installed, "%.3700s/models/", um_share_dir());
    const char *const dirs[] = { "models/", um_exe_dir()[0] ? beside : NULL, installed };
    size_t n = 0;
    looked[0] = 0;
    for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
        if (!dirs[i]) continue;
        snprintf(buf, cap, "%s" UM_BUNDLED_MODEL, dirs[i]);
        if (infile_is_regular(buf)) return true;       /* a probe: never opens (a FIFO would block) */
        if (n < looked_cap) n += (size_t)snprintf(looked + n, looked_cap - n, "%s%s", n ? ", " : "", dirs[i]);
    }
    return false;
}

int genopts_resolve(um_genopts *g, um_err *e) {
    if (g->preset) {
        if (models_conf_resolve(g->preset, &g->pre, e)) return um_err_prefix(e, "-M %s", g->preset);
        g->have_preset = true;
        struct stat st;
        if (!g->model && stat(g->pre.path, &st) != 0 && errno == ENOENT)
            return um_errf(e, "-M %s: its model file %s does not exist (where to get it and how presets name "
                              "files: docs/models.md)", g->preset, g->pre.path);
    } else if (g->model) {
        /* a file a preset names runs with that preset's settings: `-m models/unmask-demo.gguf`
         * is `-M demo` (the preset follows the file, not the spelling of its path) */
        g->have_preset = models_conf_preset_of(g->model, &g->pre);
    } else if (models_conf_resolve(UM_DEFAULT_PRESET, &g->pre, NULL) == UM_OK) {
        /* no model named: models.conf's default preset, when its file is there */
        if (infile_is_regular(g->pre.path)) g->have_preset = true;
    }
    char looked[4096];
    if (g->model) g->eng.model_path = g->model;
    else if (g->have_preset) g->eng.model_path = g->pre.path;
    else if (bundled_model(g->model_buf, sizeof g->model_buf, looked, sizeof looked)) g->eng.model_path = g->model_buf;
    else return um_errf(e, "no model given (-m FILE or -M PRESET), and the bundled model " UM_BUNDLED_MODEL
                           " is in none of %s", looked);
    g->eng.n_gen_min = g->n_gen > 0 ? g->n_gen : g->have_preset && g->pre.gen > 0 ? g->pre.gen : 0;
    if (!g->prompt && g->have_preset && g->pre.prompt[0]) g->prompt = g->pre.prompt;   /* points into g */
    if (g->no_chat) { g->eng.chat_template = "none"; g->eng.chat_template_file = NULL; }
    else if (!g->eng.chat_template && g->have_preset && g->pre.chat_template[0]) g->eng.chat_template = g->pre.chat_template;
    return UM_OK;
}

#define COMPARE_MAX_ARGS 64

int genopts_parse_compare(um_genopts *g, char *flags, const char *prog) {
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
    /* the generation rows and the shared ones; those naming the model, prompt, machine or an
     * output (FLAG_RUN) are refused with a reason */
    flags_parser p = { .prog = prog, .cmd = FLAG_CMD_VIEW, .refuse = FLAG_RUN, .where = "--compare: " };
    genopts_add(&p, g);
    flags_common ignored = { 0 };
    flags_add(&p, flags_misc_rows, flags_misc_rows_n, flags_common_fn, &ignored, NULL);
    for (int i = 0; i < argc; i++) {
        int rc = flags_parse_one(&p, argc, argv, &i);
        if (rc < 0) return UM_FAIL;
        if (rc == 0) {
            char shown[200];
            esc_str(shown, sizeof shown, argv[i], strnlen(argv[i], 80), 0, 0);
            fprintf(stderr, "%s: --compare: '%s' is not a decoding flag\n", prog, shown);
            return UM_FAIL;
        }
    }
    return UM_OK;
}

int genopts_pane_engine(const um_genopts *main, um_genopts *pane, um_engine_opts *out, bool *own, um_err *e) {
    *own = pane->model || pane->preset;
    if (!*own) {
        *out = main->eng;
        if (pane->no_chat) { out->chat_template = "none"; out->chat_template_file = NULL; }
        else if (pane->eng.chat_template_file) out->chat_template_file = pane->eng.chat_template_file;
        else if (pane->eng.chat_template) { out->chat_template = pane->eng.chat_template; out->chat_template_file = NULL; }
        if (pane->eng.system) out->system = pane->eng.system;
        return UM_OK;
    }
    if (genopts_resolve(pane, e)) return UM_FAIL;
    *out = pane->eng;
    out->n_threads = main->eng.n_threads;
    out->kernel = main->eng.kernel;
    out->reference = main->eng.reference;
    out->gpu = main->eng.gpu;
    out->n_ctx = main->eng.n_ctx;
    return UM_OK;
}

int genopts_pane_engines(const um_genopts *main, um_genopts *panes, const char *const *labels, int n,
                         um_engine_opts *eng, bool *own, outfile_set *files, const char *prog) {
    for (int k = 0; k < n; k++) {
        um_err e = { "" };
        if (genopts_pane_engine(main, &panes[k], &eng[k], &own[k], &e)) {
            char shown[200];
            esc_str(shown, sizeof shown, labels[k], strnlen(labels[k], 80), 0, 0);
            fprintf(stderr, "%s: --compare '%s': %s\n", prog, shown, e.msg);
            return UM_FAIL;
        }
        if (own[k]) outfile_set_input(files, "--compare's model", eng[k].model_path);
    }
    return UM_OK;
}

void genopts_pane_apply(const um_genopts *main, const um_genopts *pane, bool own, um_settings *s) {
    if (own) {
        genopts_apply(pane, s);
        return;
    }
    const models_preset *pre = main->have_preset ? &main->pre : NULL;
    apply(main, pre, s);
    apply(pane, pre, s);
}

int genopts_model_file(const char *model, const char *preset, char *buf, size_t cap, um_err *e) {
    if (model) {
        snprintf(buf, cap, "%s", model);
        return UM_OK;
    }
    models_preset pre;
    if (models_conf_resolve(preset, &pre, e)) return um_err_prefix(e, "-M %s", preset);
    snprintf(buf, cap, "%s", pre.path);
    return UM_OK;
}
