/*
 * ui_main: `unmask` with no subcommand: the visualizer's options. Parses them (the
 * generation flags, the front-end flags, --compare, --list-models, --ui-help), resolves the
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
#include "genopts.h"
#include "keys.h"
#include "models_conf.h"
#include "outfile.h"
#include "pace.h"
#include "ui_main.h"

#define DEFAULT_PROMPT  "Once upon a time"

/* ------------------------------------------------------------------ options */

static void usage(FILE *f) {
    fprintf(f,
        "usage: unmask [OPTIONS]        the live visualizer (needs a terminal)\n"
        "\n");
    genopts_usage(f);
    fprintf(f, "visualizer:\n"
               "  --compare FLAGS    also decode the prompt with these decoding flags in quotes (up to 3\n"
               "                     times: 4 panes in lock step, Tab moves the focus; not -m -M -p -t --ctx --gpu)\n"
               "  --list-models      list the presets of models.conf and whether their files exist\n");
    feopts_usage(f, FE_VIEW);
    fprintf(f,
        "  --ui-help          this help\n"
        "Flags override the preset (-M).\n"
        "keys (the same table as the ? overlay):\n");
    for (int k = 0; k < ui_keys_len; k++)          /* rows without a label share the row above */
        if (ui_keys[k].label) fprintf(f, "  %-18s %s\n", ui_keys[k].label, ui_keys[k].help);
}

static int list_models(void) {
    char path[2048];
    if (!models_conf_find(path, sizeof path)) {
        printf("no models.conf found (looked in ./, $XDG_CONFIG_HOME/unmask/ or ~/.config/unmask/, %s/)\n", um_share_dir());
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

static void load_progress(void *ctx, const char *what, int done, int total) {
    (void)ctx;
    fprintf(stderr, "\runmask: %s %d/%d   ", what, done, total);
    if (done >= total) fputc('\n', stderr);
}

/* The --compare runs: their flags (parsed copies) and labels. */
typedef struct compare_opts {
    int        n;
    um_genopts g[VIEW_MAX_PANES - 1];
    char      *buf[VIEW_MAX_PANES - 1];
    const char *label[VIEW_MAX_PANES - 1];
} compare_opts;

static int parse_compare(compare_opts *c, int argc, char **argv, int *i) {
    if (*i + 1 >= argc) { fprintf(stderr, "unmask: --compare needs a value (decoding flags in quotes)\n"); return -1; }
    if (c->n == VIEW_MAX_PANES - 1) {
        fprintf(stderr, "unmask: --compare: at most %d (%d runs in all)\n", VIEW_MAX_PANES - 1, VIEW_MAX_PANES);
        return -1;
    }
    const char *v = argv[++*i];
    genopts_init(&c->g[c->n]);
    c->buf[c->n] = strdup(v);
    if (!c->buf[c->n]) { fprintf(stderr, "unmask: out of memory\n"); return -1; }
    c->label[c->n] = v;
    c->n++;
    return genopts_parse_compare(&c->g[c->n - 1], c->buf[c->n - 1], "unmask") ? -1 : 1;
}

static void compare_free(compare_opts *c) {
    for (int k = 0; k < c->n; k++) free(c->buf[k]);
}

/* The settings of pane k: the source's defaults, the flags (over the preset), then for a
 * --compare pane its own flags. */
typedef struct pane_settings { const um_genopts *g; const compare_opts *cmp; } pane_settings;

static void pane_settings_fill(void *ctx, int k, um_settings *s) {
    const pane_settings *ps = ctx;
    genopts_apply(ps->g, s);
    if (k > 0) genopts_apply(&ps->cmp->g[k - 1], s);
}

static int visualize(int argc, char **argv, compare_opts *cmp) {
    um_genopts g;
    feopts fe;
    setlocale(LC_ALL, "");
    genopts_init(&g);
    feopts_init(&fe);
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--compare")) {
            if (parse_compare(cmp, argc, argv, &i) < 0) return 2;
            continue;
        }
        int r = genopts_parse(&g, argc, argv, &i, "unmask");
        if (r == 0) r = feopts_parse(&fe, FE_VIEW, argc, argv, &i, "unmask");
        if (r < 0) return 2;
        if (r > 0) continue;
        const char *a = argv[i];
        if (!strcmp(a, "--list-models")) return list_models();
        if (!strcmp(a, "--ui-help")) { usage(stdout); return 0; }
        fprintf(stderr, a[0] == '-' ? "unmask: unknown option '%s' (see unmask --ui-help)\n"
                                    : "unmask: unexpected argument '%s' (see unmask --ui-help)\n", a);
        return 2;
    }
    const bool demo = fe.demo;

    /* preset, model path and chat template; flags win over the preset */
    if (!demo) {
        um_err e = { "" };
        if (genopts_resolve(&g, &e)) { fprintf(stderr, "unmask: %s\n", e.msg); return 1; }
    }
    theme th;                                       /* config errors first, then the tty */
    um_err te = { "" };
    if (theme_load(&th, fe.theme, &te)) { fprintf(stderr, "unmask: %s\n", te.msg); return 1; }
    outfile_set files;                              /* inputs and outputs before curses starts */
    outfile_set_init(&files);
    if (!demo) outfile_set_input(&files, g.model ? "-m" : "the model", g.eng.model_path);
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
    for (int k = 0; k < cmp->n; k++) o.labels[k + 1] = cmp->label[k];
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
