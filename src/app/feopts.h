/*
 * feopts: the front-end options of the visualizer and `unmask record` (theme, heat mode,
 * colours, screen size, GIF/asciicast outputs, frame delays), parsed from one table so both
 * commands spell, check and document each flag the same way. The generation flags are
 * genopts.h's; this module holds only what decides how the run is shown or recorded.
 *
 * Each table row (flags.h) names the commands that take it (FE_VIEW, FE_RECORD); a flag given
 * to a command that does not take it is not consumed (the command reports it as unknown).
 */
#ifndef UM_FEOPTS_H
#define UM_FEOPTS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "flags.h"
#include "outfile.h"

enum { FE_VIEW = FLAG_CMD_VIEW, FE_RECORD = FLAG_CMD_RECORD };

typedef struct feopts {
    const char *theme;           /* --theme NAME|FILE */
    int         heat;            /* --heat: a view_heat */
    int         layout;          /* --layout: a view_layout, -1 when not given */
    int         depth;           /* --color: -1 auto, 0 none, 8, 256, 16777216 */
    const char *gif, *cast;      /* --gif, --cast: NULL when not given */
    int         cols, rows;      /* --size COLSxROWS (record's virtual screen) */
    int32_t     delay_cs;        /* --delay-cs: GIF centiseconds per step (record) */
    int32_t     hold_cs;         /* --hold-cs: GIF hold of the last frame (record) */
    bool        delay_cs_set;    /* --delay-cs was given */
    int32_t     pace_ms;         /* --pace: ms per shown step, 0 = as fast as the engine */
    bool        pace_set;        /* --pace was given (else: the visualizer's default; record:
                                    the fixed --delay-cs and real times, as without pacing) */
    int64_t     delay_ms;        /* --delay-ms: the synthetic source's step time (visualizer) */
    bool        paused;          /* --paused (visualizer) */
    bool        demo;            /* --demo-ui (visualizer) */
} feopts;

void feopts_init(feopts *f);
/* Add the front-end rows to a command's parser (p->cmd FE_VIEW or FE_RECORD), into f (NULL:
 * for help only). */
void feopts_add(flags_parser *p, feopts *f);
/* Try argv[*i] (and its value) as a front-end flag of command cmd (FE_VIEW or FE_RECORD), by
 * the same rows feopts_add gives the commands' parsers (the table's tests use it alone).
 * Returns 1 if consumed (*i advanced past a value), 0 if not one of cmd's flags, -1 on a bad
 * value (the message printed with prog as prefix; the command exits 2). */
int  feopts_parse(feopts *f, unsigned cmd, int argc, char **argv, int *i, const char *prog);
/* The help lines of cmd's front-end flags, from the table (as flags_usage prints them). */
void feopts_usage(FILE *out, unsigned cmd);
/* The canvas layout (a view_layout): --layout when given, else the preset's `layout`
 * (preset_layout: a view_layout_keys name, "" or NULL when it has none), else text. */
int  feopts_layout(const feopts *f, const char *preset_layout);
/* Declare the files these options read (--theme when it names a file) and write (--gif,
 * --cast) for outfile_check. */
void feopts_files(const feopts *f, outfile_set *s);

#endif
