/*
 * models_conf: named model presets from models.conf (INI form), so `unmask -M llada-8b`
 * stands for a file path plus default settings.
 *
 *     # comment
 *     [llada-8b]
 *     path          = models/LLaDA-8B-Instruct-Q4_K_M.gguf   # relative to this file's directory
 *     chat_template = llada        # free text handed to the engine
 *     gen           = 128          # tokens to generate
 *     steps         = 128
 *     block         = 32
 *     schedule      = block        # block | timestep | threshold | linear (schedule.h names)
 *     scoring       = confidence   # confidence | margin | entropy | random | origin
 *     temperature   = 0
 *     prompt        = ...          # the prompt when none is given (-p); the rest of the line
 *     layout        = grid9        # how views lay the canvas out: text | grid9 (a 9x9 sudoku)
 *     fast          = --threshold 0.999   # what --fast means for this model (models_fast)
 *
 * Lookup order (the first name that exists wins, whatever it is: a FIFO or a directory there
 * is an error, not an absent file): ./models.conf, $XDG_CONFIG_HOME/unmask/models.conf
 * (~/.config/unmask/models.conf when unset), the binary's directory (a build tree: ./unmask
 * run from anywhere finds the repository's models.conf and, through its relative paths, the
 * bundled models), the installed data folder (um_share_dir: PREFIX/share/unmask).
 * Errors name FILE:LINE. Unset numeric fields are -1 (temperature: NAN, schedule and
 * scoring: -1), so flags and presets merge simply.
 */
#ifndef UM_MODELS_CONF_H
#define UM_MODELS_CONF_H

#include <stddef.h>
#include <stdint.h>
#include "engine.h"
#include "util.h"

/* A preset's --fast: the fast decoding measured best for that model (key `fast`, spelled as
 * the flags: one rule of --threshold X, --eb-gamma G or --factor F, then optionally --cache
 * none|prefix|dual with --cache-drift D or --cache-refresh K). Unset fields are -1; a fast
 * that names no --cache runs without one. */
typedef struct models_fast {
    bool    set;
    float   threshold, eb_gamma, factor;
    int     cache;             /* um_cache; -1: none named (no cache) */
    float   cache_drift;
    int32_t cache_refresh;
} models_fast;

typedef struct models_preset {
    char    name[64];
    char    path[1024];        /* as resolved: relative paths joined to the file's directory */
    char    chat_template[64];
    int32_t gen, steps, block; /* -1 when unset */
    int     schedule, scoring; /* um_schedule / um_score, -1 when unset */
    float   temperature;       /* NAN when unset */
    char    prompt[1024];      /* "" when unset */
    char    layout[16];        /* "" when unset, else one of view_layout_keys (ui/view.h) */
    models_fast fast;          /* .set false when unset */
    int     line;              /* where the section starts */
} models_preset;

typedef struct models_conf {
    char           file[1024]; /* the file these came from */
    models_preset *presets;    /* (n) in file order */
    int            n;
} models_conf;

/* Parse text; file names the source in errors and anchors relative paths. */
int  models_conf_parse(models_conf *mc, const char *text, size_t len, const char *file, um_err *e);
int  models_conf_load(models_conf *mc, const char *path, um_err *e);
/* Find the first models.conf in the lookup order; false when no such name exists. */
bool models_conf_find(char *path, size_t cap);
/* The lookup places, for messages: "./, ~/.config/unmask/, /src/unmask/, /usr/local/share/unmask/". */
void models_conf_places(char *buf, size_t cap);
/* The first preset of the models.conf found whose path is the file `model` (the same file by
 * device and inode), into out; false when none (or no models.conf, or no such file). */
bool models_conf_preset_of(const char *model, models_preset *out);
const models_preset *models_conf_get(const models_conf *mc, const char *name);
void models_conf_free(models_conf *mc);

/* Find models.conf (lookup order above), load it and copy out preset `name`. The error
 * says when no file exists, when the file is bad (FILE:LINE) or which file lacks the name. */
int  models_conf_resolve(const char *name, models_preset *out, um_err *e);
/* Parse a `fast` value (models_fast) into out; the message names what is wrong. */
int  models_fast_parse(const char *v, models_fast *out, um_err *e);
/* Write the preset's set fields over s (n_gen, steps, block_len, schedule, score,
 * temperature); block_len is kept <= n_gen. */
void models_conf_apply(const models_preset *p, um_settings *s);

#endif
