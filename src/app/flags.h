/*
 * flags: the command-line flags of every command, as tables (htop's long_opts, tig's key
 * table). A row names a flag once -- its short and long spelling, its value, which commands
 * take it, its help text -- and that row drives the parsing, `--help` (flags_usage), the
 * `--compare` refusal list (rows marked FLAG_RUN) and, for the generation flags, the JSON
 * settings (genopts.c); tests/cli/flags.sh checks that docs/unmask.1 lists exactly the rows
 * `--help` prints.
 *
 * Each module that owns flags keeps one table of rows and one handler that switches on the
 * row's id (genopts.c: generation flags; feopts.c: visualizer/record front-end flags; each
 * cmd_*.c its own). The rows every command shares (-m/--model, -M/--preset, -t/--threads,
 * -q/--quiet, -h/--help) are defined once here (flags_model_rows, flags_misc_rows), each
 * naming the commands that take it, so no two commands spell them differently.
 *
 * The conventions (POSIX and GNU, what people type without thinking):
 *   --steps 32  --steps=32       a long flag's value after a space or '='
 *   -t 2  -t2                    a short flag's value after a space or attached
 *   -qh                          value-less short flags cluster
 *   --                           ends the options: everything after it is an argument
 *   -                            an argument (standard input, where a command reads it)
 * Long names match exactly (no abbreviations: adding a flag never breaks a spelling).
 * The parser is our own loop over the tables, not getopt_long: the `--compare` strings are
 * parsed while the command line is (getopt keeps global state and cannot nest), and the
 * messages name the command and the flag as typed.
 */
#ifndef UM_FLAGS_H
#define UM_FLAGS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* The commands, one bit each: a row's cmds says which commands take it. */
enum {
    FLAG_CMD_VIEW     = 1u << 0,   /* the visualizer (no command) */
    FLAG_CMD_GENERATE = 1u << 1,
    FLAG_CMD_EVAL     = 1u << 2,
    FLAG_CMD_RECORD   = 1u << 3,
    FLAG_CMD_LOGITS   = 1u << 4,
    FLAG_CMD_TOKENIZE = 1u << 5,
    FLAG_CMD_INFO     = 1u << 6,
    FLAG_CMD_QUANTIZE = 1u << 7,
    FLAG_CMD_SPLIT    = 1u << 8,
    FLAG_CMD_SYNTH    = 1u << 9,
    FLAG_CMD_MAIN     = 1u << 10,  /* `unmask --help`, `unmask --version` */
    FLAG_CMD_DECODE   = FLAG_CMD_VIEW | FLAG_CMD_GENERATE | FLAG_CMD_EVAL | FLAG_CMD_RECORD,
    FLAG_CMD_ALL      = (1u << 11) - 1,
};

/* Row attributes. */
enum {
    FLAG_RUN = 1u << 0,   /* names the model, prompt, machine or output: refused in --compare */
    FLAG_PANE = 1u << 1,  /* a FLAG_RUN row a --compare pane may give all the same: its own model
                             (-m, -M, then the pane runs its own engine) or chat template */
};

typedef struct um_flag {
    char        short_name;  /* 'm' for -m; 0: none. A row with neither name is a heading */
    const char *long_name;   /* "model" for --model; NULL: none */
    const char *arg;         /* the value's name in help ("FILE"); NULL: takes no value */
    int         id;          /* what the owner's handler switches on */
    unsigned    cmds;        /* FLAG_CMD_* bits of the commands that take the row */
    unsigned    attrs;       /* FLAG_RUN, FLAG_PANE */
    const char *key;         /* the name its value is reported under in JSON settings; NULL: none */
    unsigned    uses;        /* genopts: the schedules (1 << um_schedule) the setting belongs to; 0: all */
    const char *help;        /* one line per '\n'; a "%s" is filled by the set's fill function */
} um_flag;

/* The handler of a set: apply row f, typed as `name` ("-t", "--threads"), value v (NULL for
 * a row without a value). Returns 0, FLAGS_STOP (the command's work is done: --help), or -1
 * after printing "PROG: NAME: problem" on stderr. */
typedef int (*flags_fn)(void *ctx, const um_flag *f, const char *name, const char *v, const char *prog);
/* Fill the "%s" of a row's help (choices, defaults) into buf. */
typedef void (*flags_fill_fn)(const um_flag *f, char *buf, size_t cap);

#define FLAGS_STOP 1

typedef struct flags_set {
    const um_flag *rows;
    int            n;
    flags_fn       fn;
    void          *ctx;
    flags_fill_fn  fill;        /* NULL: no row has a "%s" */
} flags_set;

#define FLAGS_MAX_SETS 8

typedef struct flags_parser {
    const char *prog;           /* message prefix: "unmask generate" */
    unsigned    cmd;            /* the command's FLAG_CMD_* bit */
    flags_set   sets[FLAGS_MAX_SETS];
    int         n_sets;
    const char **pos;           /* the arguments that are not flags, in order (NULL: none taken) */
    int         max_pos, n_pos;
    unsigned    refuse;         /* rows with any of these attrs are refused (inside --compare) */
    const char *where;          /* prefix of messages about the flags: "--compare: " or "" */
} flags_parser;

/* Add a set to p (at most FLAGS_MAX_SETS). */
void flags_add(flags_parser *p, const um_flag *rows, int n, flags_fn fn, void *ctx, flags_fill_fn fill);
/* Parse argv[1..argc-1]. Returns 0, FLAGS_STOP (a handler said so: exit 0), or 2 after a
 * one-line message on stderr (bad usage: unknown flag, missing or unwanted value, a bad value,
 * a refused row, more arguments than max_pos). */
int  flags_parse(flags_parser *p, int argc, char **argv);
/* Parse the one flag at argv[*i] (with its value), advancing *i past what it used. Returns 1
 * when consumed, 0 when it is not one of p's flags (nothing printed), -1 after a message,
 * FLAGS_STOP + 1 when a handler stopped. */
int  flags_parse_one(flags_parser *p, int argc, char **argv, int *i);
/* The help lines of every row of p's sets that p->cmd takes, in table order; a heading row
 * is printed when a row under it is. */
void flags_usage(FILE *f, const flags_parser *p);
/* The head of a row as --help prints it: "-m, --model FILE", "--gen N", "-q, --quiet". */
void flags_head(const um_flag *f, char *buf, size_t cap);
/* The first of rows whose long name is `name` (without dashes) or whose short name is name[0]
 * (name of one character), for command cmd; NULL when none. */
const um_flag *flags_find(const um_flag *rows, int n, unsigned cmd, const char *name);

/* ---------------------------------------------------------------- the shared rows */

enum { FLAG_ID_MODEL = -1, FLAG_ID_PRESET = -2, FLAG_ID_THREADS = -3, FLAG_ID_QUIET = -4, FLAG_ID_HELP = -5 };

/* -m/--model, -M/--preset, -t/--threads (with the "model:" heading of the decoding commands) */
extern const um_flag flags_model_rows[];
extern const int     flags_model_rows_n;
/* -q/--quiet, -h/--help */
extern const um_flag flags_misc_rows[];
extern const int     flags_misc_rows_n;

/* The values of the shared rows, for commands that keep them apart from genopts. */
typedef struct flags_common {
    const char *model, *preset;
    int32_t     threads;        /* 0: not given */
    bool        quiet, help;
} flags_common;

/* The handler of the shared rows into a flags_common (ctx): --help sets help and stops. */
int flags_common_fn(void *ctx, const um_flag *f, const char *name, const char *v, const char *prog);
/* The thread count's range (-t). */
#define FLAGS_MAX_THREADS 1024

#endif
