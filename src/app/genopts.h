/*
 * genopts: the generation flags shared by `generate`, `eval`, `record` and the visualizer:
 * one table (genopts.c, flags.h rows) parsed into engine options and settings, printed as
 * every command's help, reported as the JSON settings and refused in --compare where a
 * row names the model, prompt or machine.
 */
#ifndef UM_GENOPTS_H
#define UM_GENOPTS_H

#include <stdbool.h>
#include <stdio.h>

#include "engine.h"
#include "flags.h"
#include "jsonw.h"
#include "models_conf.h"
#include "outfile.h"

/* The models.conf preset used when neither -m nor -M is given (the bundled model). */
#define UM_DEFAULT_PRESET "demo"
/* The bundled model's file name, looked for in models/ of the working directory, beside the
 * binary and in the installed data folder when no preset names it. */
#define UM_BUNDLED_MODEL "unmask-demo.gguf"

/* --fast for a model whose preset has no `fast` (models_fast): Fast-dLLM's published
 * combination, the dual cache with a 0.9 confidence threshold, measured on LLaDA-8B and Dream-7B
 * (docs/decoding.md, "Fast, per model"). The bundled models' presets carry what their own yardsticks
 * measured best: the sudoku model --threshold 0.999 without a cache, the demo model
 * --threshold 0.5. */
#define GENOPTS_FAST_THRESHOLD 0.9f
#define GENOPTS_FAST_CACHE     UM_CACHE_DUAL

/* --gen's largest value: a canvas past it is refused while the flags are read, before any
 * model is loaded (and repacked). */
#define GENOPTS_MAX_GEN (1 << 20)

typedef struct um_genopts {
    um_engine_opts eng;
    const char    *model;         /* -m */
    const char    *preset;        /* -M */
    const char    *prompt;        /* -p; genopts_resolve: else the preset's prompt (into pre) */
    bool           no_chat;
    /* settings given on the command line (applied over the model's defaults) */
    int32_t        n_gen, steps, block, top_k;
    float          eps, threshold, temp, top_p, cfg, alg_temp;
    float          factor, eb_gamma;  /* name the factor and eb schedules */
    int            cache, cache_type; /* --cache, --cache-type; -1 = not given */
    int32_t        cache_refresh;     /* -1 = not given; alone it means --cache dual */
    float          cache_drift;       /* -1 = not given */
    int            schedule, score; /* --schedule, --alg; -1 = not given (genopts_apply also
                                       reads --eps, --threshold and --block for the schedule) */
    long long      seed;            /* -1 = default */
    int            gumbel;          /* -1 default, 0 off, 1 on */
    bool           stop_at_eos;
    int            eos_early_stop;    /* -1 default, 0 off, 1 on */
    int32_t        block_steps;       /* --block-steps; -1 = not given */
    int            edit;              /* --edit / --no-edit; -1 = not given */
    float          edit_threshold;    /* -1 = not given; given: editing on */
    int32_t        post_steps;        /* -1 = not given; given: editing on */
    /* uniform-state decoding (DiffusionGemma); -1 = not given (the file's settings) */
    float          us_t_min, us_t_max, us_bound, us_confidence;
    int32_t        us_stability, us_sc_top_k;
    int            us_sc_mode;        /* --self-cond: 0 exact, 1 topk, 2 auto, 3 off */
    int            us_sc_bf16;        /* --self-cond-product: 0 f32, 1 bf16 */
    bool           fast;           /* --fast: the preset's fast, else GENOPTS_FAST_*, unless flags
                                      name those parts */
    bool           json;
    /* filled by genopts_resolve */
    bool           have_preset;
    models_preset  pre;
    char           model_buf[4096];
} um_genopts;

void genopts_init(um_genopts *g);
/* Add the generation rows to a command's parser: the shared -m -M -t (flags_model_rows) and
 * the generation table, both into g (NULL: for help only). Rows are taken by the commands
 * in FLAG_CMD_DECODE. */
void genopts_add(flags_parser *p, um_genopts *g);
/* One --compare FLAGS string (the visualizer, record): split on spaces (single or double
 * quotes keep spaces in a value) in place (flags is modified and must outlive g), parsed
 * with genopts_parse into g (fresh from genopts_init). Flags that change the model, the
 * prompt or the machine (-m -M -p -t --ctx --gpu --chat-template --system --no-chat --json)
 * are refused: every pane decodes the same prompt with the same model. Returns UM_OK, or
 * UM_FAIL with a message on stderr (prog as prefix). */
int  genopts_parse_compare(um_genopts *g, char *flags, const char *prog);
/* A --compare pane's engine options, after genopts_resolve(main): *own when the pane named its
 * own model (-m or -M: then it is resolved like a command line of its own, its preset's
 * settings included, and runs on main's machine options: threads, GPU, context, kernel);
 * else main's options with the pane's chat template or system prompt. Fails on a preset or
 * file that does not resolve. */
int  genopts_pane_engine(const um_genopts *main, um_genopts *pane, um_engine_opts *out, bool *own, um_err *e);
/* genopts_pane_engine for the n --compare panes (labels: their FLAGS as given), each pane
 * that names its own model added to files as an input. On failure prints
 * "PROG: --compare 'FLAGS': problem" on stderr and returns UM_FAIL. */
int  genopts_pane_engines(const um_genopts *main, um_genopts *panes, const char *const *labels, int n,
                          um_engine_opts *eng, bool *own, outfile_set *files, const char *prog);
/* A pane's settings from its source's defaults: a pane with its own model takes only its own
 * flags (and preset), the others main's and then theirs (their --fast: main's preset's). */
void genopts_pane_apply(const um_genopts *main, const um_genopts *pane, bool own, um_settings *s);
/* After parsing: load the -M preset (if any; with neither -m nor -M, the "demo" preset when
 * models.conf has it and its file exists), choose the model file (-m, else the preset's, else
 * the bundled model) into g->eng.model_path, the chat template (--no-chat, flag, preset) and,
 * with no -p, the preset's prompt (g->prompt then points into g->pre: g must not be copied).
 * Fails with a one-line message. */
int  genopts_resolve(um_genopts *g, um_err *e);
/* The model file a command without decoding settings (info, tokenize, logits) reads: -m, else
 * the path of preset `preset` (-M) from models.conf. */
int  genopts_model_file(const char *model, const char *preset, char *buf, size_t cap, um_err *e);
/* Apply the preset's settings and then the flags over s (which holds the model's defaults);
 * --fast takes the preset's fast (models_fast), else GENOPTS_FAST_*. */
void genopts_apply(const um_genopts *g, um_settings *s);

/* The value of --self-cond-product (and logits --sc-product): 0 f32, 1 bf16; anything else
 * -1, after a message naming the flag on stderr. */
int  genopts_sc_product(const char *prog, const char *name, const char *v);
/* An engine warning callback (um_engine_opts.warn) for commands without a screen: prints
 * "PROG: warning: MSG" on stderr, prog (the warn_ctx) being e.g. "unmask generate". */
void genopts_warn_stderr(void *prog, const char *msg);
/* The engine's load progress on stderr (um_engine_opts.progress), unless *(bool *)quiet. */
void genopts_progress_stderr(void *quiet, const char *what, int done, int total);
/* The lines after a command's flags: how numbers and values are spelled. */
void genopts_usage_numbers(FILE *f);
/* The decoding settings as one JSON object (a value: the caller writes its key first): one
 * key per table row that sets a value (its `key`), in table order, then block_aligned. */
void genopts_json_settings(jsonw *j, const um_settings *s);
/* Does the setting reported as `key` apply under s's schedule (--threshold under block: no)? */
bool genopts_setting_used(const char *key, const um_settings *s);

#endif
