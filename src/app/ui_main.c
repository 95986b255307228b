/*
 * ui_main: `unmask` with no subcommand: the visualizer's options. Parses them from the flag
 * tables (flags.h: the generation rows, the front-end rows, its own --compare, --list-models,
 * --ui-help, and -q), resolves the
 * preset and checks inputs, outputs and the terminal before curses starts, then hands
 * everything to the controller (ui/controller.h), which owns the state, the event loop
 * and the recordings.
 */
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "controller.h"
#include "esc.h"
#include "feopts.h"
#include "flags.h"
#include "genopts.h"
#include "keys.h"
#include "models_conf.h"
#include "outfile.h"
#include "pace.h"
#include "ui_main.h"

#define DEFAULT_PROMPT  "Once upon a time"

/* ------------------------------------------------------------------ options */

enum { VW_COMPARE = 1, VW_LIST_MODELS, VW_UI_HELP };

static const um_flag view_rows[] = {
    { .help = "visualizer:", .cmds = FLAG_CMD_VIEW },
    { 0, "compare", "FLAGS", VW_COMPARE, FLAG_CMD_VIEW, FLAG_RUN, NULL, 0,
      "also decode the prompt with these decoding flags in quotes (up to 3\n"
      "times: 4 panes in lock step, Tab moves the focus); not the flags\n"
      "naming the prompt or machine (-p -t --ctx --gpu ...); with -m or -M\n"
      "the pane runs that model (its preset's settings, not main's)" },
    { 0, "list-models", NULL, VW_LIST_MODELS, FLAG_CMD_VIEW, FLAG_RUN, NULL, 0,
      "list the presets of models.conf and whether their files exist" },
    { 0, "ui-help", NULL, VW_UI_HELP, FLAG_CMD_VIEW, FLAG_RUN, NULL, 0, "this help (so is -h after another flag; unmask -h: the commands)" },
};

/* The --compare runs: their flags (parsed copies) and labels. */
typedef struct compare_opts {
    int        n;
    um_genopts g[VIEW_MAX_PANES - 1];
    char      *buf[VIEW_MAX_PANES - 1];
    const char *label[VIEW_MAX_PANES - 1];
    um_engine_opts eng[VIEW_MAX_PANES - 1];   /* genopts_pane_engine */
    bool        own[VIEW_MAX_PANES - 1];      /* the pane named its own model */
} compare_opts;

/* What the visualizer's own rows asked for. */
typedef struct view_own {
    compare_opts *cmp;
    bool          list_models, help;
} view_own;

static int view_fn(void *ctx, const um_flag *f, const char *name, const char *v, const char *prog) {
    view_own *o = ctx;
    if (f->id == VW_LIST_MODELS) { o->list_models = true; return FLAGS_STOP; }
    if (f->id == VW_UI_HELP) { o->help = true; return FLAGS_STOP; }
    compare_opts *c = o->cmp;                       /* --compare FLAGS */
    if (c->n == VIEW_MAX_PANES - 1) {
        fprintf(stderr, "%s: %s: at most %d (%d runs in all)\n", prog, name, VIEW_MAX_PANES - 1, VIEW_MAX_PANES);
        return -1;
    }
    genopts_init(&c->g[c->n]);
    c->buf[c->n] = strdup(v);
    if (!c->buf[c->n]) { fprintf(stderr, "%s: out of memory\n", prog); return -1; }
    c->label[c->n] = v;
    c->n++;
    return genopts_parse_compare(&c->g[c->n - 1], c->buf[c->n - 1], prog) ? -1 : 0;
}

static void parser(flags_parser *p, um_genopts *g, feopts *fe, view_own *o, flags_common *com) {
    *p = (flags_parser){ .prog = "unmask", .cmd = FLAG_CMD_VIEW };
    genopts_add(p, g);
    flags_add(p, view_rows, (int)(sizeof view_rows / sizeof view_rows[0]), view_fn, o, NULL);
    feopts_add(p, fe);
    flags_add(p, flags_misc_rows, flags_misc_rows_n, flags_common_fn, com, NULL);
}

static void usage(FILE *f) {
    flags_parser p;
    parser(&p, NULL, NULL, NULL, NULL);
    fprintf(f,
        "usage: unmask [OPTIONS]        the live visualizer (needs a terminal)\n"
        "\n");
    flags_usage(f, &p);
    genopts_usage_numbers(f);
    fprintf(f,
        "Flags override the preset (-M).\n"
        "keys (the same table as the ? overlay):\n");
    for (int k = 0; k < ui_keys_len; k++)          /* rows without a label share the row above */
        if (ui_keys[k].label) fprintf(f, "  %-18s %s\n", ui_keys[k].label, ui_keys[k].help);
}

static int list_models(void) {
    char path[2048];
    if (!models_conf_find(path, sizeof path)) {
        char places[1200];
        models_conf_places(places, sizeof places);
        printf("no models.conf found (looked in %s; its format: docs/models.md)\n", places);
        return 0;
    }
    models_conf mc;
    um_err e = { "" };
    if (models_conf_load(&mc, path, &e)) { fprintf(stderr, "unmask: %s\n", e.msg); return 1; }
    printf("presets in %s:\n", path);
    for (int i = 0; i < mc.n; i++) {                /* names and paths are the file's text: escaped */
        const models_preset *p = &mc.presets[i];
        struct stat st;
        bool ok = stat(p->path, &st) == 0 && S_ISREG(st.st_mode);
        char name[4 * sizeof p->name], where[4 * sizeof p->path];
        esc_str(name, sizeof name, p->name, strlen(p->name), 0, 0);
        esc_str(where, sizeof where, p->path, strlen(p->path), 0, 0);
        printf("  %-16s %-8s %s\n", name, ok ? "present" : "MISSING", where);
    }
    models_conf_free(&mc);
    return 0;
}

static bool quiet_load;                        /* -q */

/* The load before curses starts: redrawn in place on a terminal, else the finished lines. */
static void load_progress(void *ctx, const char *what, int done, int total) {
    (void)ctx;
    if (quiet_load) return;
    if (isatty(STDERR_FILENO)) {
        fprintf(stderr, "\runmask: %s %d/%d   ", what, done, total);
        if (done >= total) fputc('\n', stderr);
    } else if (done >= total) {
        fprintf(stderr, "unmask: %s %d/%d\n", what, done, total);
    }
}

static void compare_free(compare_opts *c) {
    for (int k = 0; k < c->n; k++) free(c->buf[k]);
}

/* The settings of pane k: the source's defaults, the flags (over the preset), then for a
 * --compare pane its own flags. */
typedef struct pane_settings { const um_genopts *g; const compare_opts *cmp; } pane_settings;

static void pane_settings_fill(void *ctx, int k, um_settings *s) {
    const pane_settings *ps = ctx;
    if (k == 0) genopts_apply(ps->g, s);
    else genopts_pane_apply(ps->g, &ps->cmp->g[k - 1], ps->cmp->own[k - 1], s);
}

static int visualize(int argc, char **argv, compare_opts *cmp) {
    um_genopts g;
    feopts fe;
    setlocale(LC_ALL, "");
    genopts_init(&g);
    feopts_init(&fe);
    view_own own = { .cmp = cmp };
    flags_common com = { 0 };
    flags_parser p;
    parser(&p, &g, &fe, &own, &com);
    int pr = flags_parse(&p, argc, argv);
    if (own.help || com.help) { usage(stdout); return 0; }   /* --ui-help, or -h after other flags */
    if (own.list_models) return list_models();
    if (pr) return pr;
    quiet_load = com.quiet;
    const bool demo = fe.demo;

    /* preset, model path and chat template; flags win over the preset */
    if (!demo) {
        um_err e = { "" };
        if (genopts_resolve(&g, &e)) { fprintf(stderr, "unmask: %s\n", e.msg); return 1; }
    }
    for (int k = 0; k < cmp->n; k++)
        if (demo && (cmp->g[k].model || cmp->g[k].preset)) {
            fprintf(stderr, "unmask: --compare: -m and -M need a model run (not --demo-ui)\n");
            return 2;
        }
    theme th;                                       /* config errors first, then the tty */
    um_err te = { "" };
    if (theme_load(&th, fe.theme, &te)) { fprintf(stderr, "unmask: %s\n", te.msg); return 1; }
    outfile_set files;                              /* inputs and outputs before curses starts */
    outfile_set_init(&files);
    if (!demo) outfile_set_input(&files, g.model ? "-m" : "the model", g.eng.model_path);
    if (!demo && genopts_pane_engines(&g, cmp->g, cmp->label, cmp->n, cmp->eng, cmp->own, &files, "unmask")) return 1;
    feopts_files(&fe, &files);
    if (outfile_check(&files, &te)) { fprintf(stderr, "unmask: %s\n", te.msg); return 1; }
    if (!isatty(STDOUT_FILENO) || !isatty(STDIN_FILENO)) {
        fprintf(stderr, "unmask: the visualizer needs a terminal (stdin and stdout); for plain text output use `unmask generate`\n");
        return 1;
    }

    const char *prompt = g.prompt ? g.prompt : DEFAULT_PROMPT;    /* -p, else the preset's (genopts_resolve) */
    g.eng.progress = load_progress;
    pane_settings ps = { &g, cmp };
    ui_ctl_opts o = {
        .eng = demo ? NULL : &g.eng, .fake_nocache = g.eng.gpu, .fake_delay_ms = (int)fe.delay_ms,
        .prompt = prompt, .th = th, .depth = fe.depth, .heat = (view_heat)fe.heat,
        .layout = (view_layout)feopts_layout(&fe, g.have_preset ? g.pre.layout : NULL),
        .pace_ms = fe.pace_set ? fe.pace_ms : UI_PACE_DEFAULT_MS, .paused = fe.paused,
        .gif = fe.gif, .cast = fe.cast, .n_panes = 1 + cmp->n,
        .settings = pane_settings_fill, .settings_ctx = &ps,
    };
    o.labels[0] = "main";
    for (int k = 0; k < cmp->n; k++) {
        o.labels[k + 1] = cmp->label[k];
        if (!demo) o.pane_eng[k + 1] = &cmp->eng[k];
        o.pane_own[k + 1] = cmp->own[k];
    }
    return ui_ctl_run(&o);
}

/* The visualizer; the --compare copies live until it returns. */
int ui_main(int argc, char **argv) {
    compare_opts *cmp = um_calloc(1, sizeof *cmp);
    if (!cmp) { fprintf(stderr, "unmask: out of memory\n"); return 1; }
    int ret = visualize(argc, argv, cmp);
    compare_free(cmp);
    free(cmp);
    return ret;
}
