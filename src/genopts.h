/*
 * genopts: the generation flags shared by `generate`, `record` and the visualizer, parsed
 * into engine options and settings, with one help text so every command documents the
 * same flags the same way.
 */
#ifndef UM_GENOPTS_H
#define UM_GENOPTS_H

#include <stdbool.h>
#include <stdio.h>

#include "engine.h"

typedef struct um_genopts {
    um_engine_opts eng;
    const char    *model;         /* -m */
    const char    *preset;        /* -M */
    const char    *prompt;        /* -p */
    bool           no_chat;
    /* settings given on the command line (applied over the model's defaults) */
    int32_t        n_gen, steps, block, top_k;
    float          eps, threshold, temp, top_p, cfg, alg_temp;
    int            schedule, score; /* -1 = default */
    long long      seed;            /* -1 = default */
    int            gumbel;          /* -1 default, 0 off, 1 on */
    bool           stop_at_eos;
    bool           json;
} um_genopts;

void genopts_init(um_genopts *g);
/* Try argv[*i] (and its value) as a generation flag. Returns 1 if consumed (and advances *i),
 * 0 if not a generation flag, -1 on a bad value (message printed with prog as prefix). */
int  genopts_parse(um_genopts *g, int argc, char **argv, int *i, const char *prog);
/* Apply the flags over s (which holds the model's defaults). */
void genopts_apply(const um_genopts *g, um_settings *s);
/* The model file to open (see genopts.c); NULL after printing why there is none. */
const char *genopts_model_path(const um_genopts *g, char *buf, size_t cap);
/* The help text of the generation flags. */
void genopts_usage(FILE *f);

#endif
