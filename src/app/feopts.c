/*
 * feopts: the front-end flags' table and parsers (see feopts.h).
 */
#include "feopts.h"

#include <string.h>

#include "numparse.h"
#include "pace.h"
#include "recorder.h"
#include "theme.h"
#include "heat.h"
#include "view.h"

#define REC_MAX_COLS 500
#define REC_MAX_ROWS 200
#define STR_(x) #x
#define STR(x)  STR_(x)              /* a number macro as a string literal, for help texts */

typedef int (*fe_parse_fn)(feopts *f, const char *flag, const char *v, const char *prog);

typedef struct fe_flag {
    const char  *name;
    const char  *arg;            /* NULL: the flag takes no value */
    unsigned     cmds;           /* FE_VIEW | FE_RECORD */
    fe_parse_fn  parse;          /* NULL for a value-less flag (handled by name) */
    const char  *help;           /* one "%s": replaced by the row's choices or defaults, if any */
} fe_flag;

static int p_theme(feopts *f, const char *flag, const char *v, const char *prog) { (void)flag; (void)prog; f->theme = v; return 0; }
static int p_gif(feopts *f, const char *flag, const char *v, const char *prog) { (void)flag; (void)prog; f->gif = v; return 0; }
static int p_cast(feopts *f, const char *flag, const char *v, const char *prog) { (void)flag; (void)prog; f->cast = v; return 0; }

static int p_heat(feopts *f, const char *flag, const char *v, const char *prog) {
    for (int k = 0; k < VIEW_HEAT_COUNT; k++)
        if (!strcmp(v, ui_heat_keys[k])) { f->heat = k; return 0; }
    fprintf(stderr, "%s: %s must be", prog, flag);
    for (int k = 0; k < VIEW_HEAT_COUNT; k++)
        fprintf(stderr, "%s %s", k == 0 ? "" : k == VIEW_HEAT_COUNT - 1 ? " or" : ",", ui_heat_keys[k]);
    fputc('\n', stderr);
    return -1;
}

static int p_layout(feopts *f, const char *flag, const char *v, const char *prog) {
    for (int k = 0; k < VIEW_LAYOUT_COUNT; k++)
        if (!strcmp(v, view_layout_keys[k])) { f->layout = k; return 0; }
    fprintf(stderr, "%s: %s must be", prog, flag);
    for (int k = 0; k < VIEW_LAYOUT_COUNT; k++)
        fprintf(stderr, "%s %s", k == 0 ? "" : k == VIEW_LAYOUT_COUNT - 1 ? " or" : ",", view_layout_keys[k]);
    fputc('\n', stderr);
    return -1;
}

static const struct { const char *name; int depth; } colors[] = {
    { "auto", -1 }, { "24bit", 16777216 }, { "256", 256 }, { "8", 8 }, { "none", 0 },
};

static int p_color(feopts *f, const char *flag, const char *v, const char *prog) {
    for (size_t k = 0; k < sizeof colors / sizeof colors[0]; k++)
        if (!strcmp(v, colors[k].name)) { f->depth = colors[k].depth; return 0; }
    fprintf(stderr, "%s: %s must be auto, 24bit, 256, 8 or none\n", prog, flag);
    return -1;
}

/* COLSxROWS: two whole numbers (numparse.h) around one 'x'. */
static int p_size(feopts *f, const char *flag, const char *v, const char *prog) {
    const char *x = strpbrk(v, "xX");
    char c_txt[32], r_txt[32];
    int64_t c, n;
    um_err e;
    if (!x || (size_t)(x - v) >= sizeof c_txt || strlen(x + 1) >= sizeof r_txt) goto bad;
    snprintf(c_txt, sizeof c_txt, "%.*s", (int)(x - v), v);
    snprintf(r_txt, sizeof r_txt, "%s", x + 1);
    if (num_int(NULL, c_txt, INT64_MIN, INT64_MAX, &c, &e) || num_int(NULL, r_txt, INT64_MIN, INT64_MAX, &n, &e)) goto bad;
    if (c < VIEW_MIN_W || n < VIEW_MIN_H || c > REC_MAX_COLS || n > REC_MAX_ROWS) {
        fprintf(stderr, "%s: %s: '%s' is out of range (%dx%d to %dx%d)\n", prog, flag, v, VIEW_MIN_W, VIEW_MIN_H,
                REC_MAX_COLS, REC_MAX_ROWS);
        return -1;
    }
    f->cols = (int)c;
    f->rows = (int)n;
    return 0;
bad:
    um_errf(&e, "%s: '%.60s' is not COLSxROWS (e.g. 100x30)", flag, v);   /* um_errf: control bytes shown as '?' */
    fprintf(stderr, "%s: %s\n", prog, e.msg);
    return -1;
}

static int p_delay_cs(feopts *f, const char *flag, const char *v, const char *prog) { f->delay_cs_set = true; return num_arg_i32(prog, flag, v, 2, 65535, &f->delay_cs); }
static int p_hold_cs(feopts *f, const char *flag, const char *v, const char *prog) { return num_arg_i32(prog, flag, v, 0, 65535, &f->hold_cs); }
static int p_delay_ms(feopts *f, const char *flag, const char *v, const char *prog) { return num_arg_int(prog, flag, v, 0, 600000, &f->delay_ms); }
static int p_pace(feopts *f, const char *flag, const char *v, const char *prog) { f->pace_set = true; return num_arg_i32(prog, flag, v, 0, UI_PACE_MAX_MS, &f->pace_ms); }

static const fe_flag fe_flags[] = {
    { "--gif",      "FILE",      FE_VIEW | FE_RECORD, p_gif,      "write an animated GIF of the screen, one frame per step%s" },
    { "--cast",     "FILE",      FE_VIEW | FE_RECORD, p_cast,     "write an asciicast v2 recording (asciinema), one marker per step%s" },
    { "--size",     "COLSxROWS", FE_RECORD,           p_size,     "the virtual screen (default 100x30, at least %s)" },
    { "--delay-cs", "N",         FE_RECORD,           p_delay_cs, "GIF: centiseconds each step is shown, 2 to 65535 (default %s)" },
    { "--hold-cs",  "N",         FE_RECORD,           p_hold_cs,  "GIF: centiseconds the last frame is held, 0 to 65535 (default %s)" },
    { "--theme",    "NAME|FILE", FE_VIEW | FE_RECORD, p_theme,    "%s, or a .theme file" },
    { "--color",    "MODE",      FE_VIEW,             p_color,    "auto, 24bit, 256, 8 or none (NO_COLOR is honoured)%s" },
    { "--heat",     "MODE",      FE_VIEW | FE_RECORD, p_heat,     "%s" },
    { "--layout",   "MODE",      FE_VIEW | FE_RECORD, p_layout,   "%s (a 9x9 sudoku grid);\n"
                                                                  "                     default: the preset's layout, else text" },
    { "--paused",   NULL,        FE_VIEW,             NULL,       "start paused at step 0%s" },
    { "--demo-ui",  NULL,        FE_VIEW,             NULL,       "a synthetic denoiser instead of a model (tests, demos)%s" },
    { "--delay-ms", "N",         FE_VIEW,             p_delay_ms, "its step time, 0 to 600000 (default 300)%s" },
    { "--pace",     "MS",        FE_VIEW,             p_pace,     "ms between steps shown while following (default " STR(UI_PACE_DEFAULT_MS) "; 0: engine speed; keys < >)%s" },
    { "--pace",     "MS",        FE_RECORD,           p_pace,     "ms per step in the cast and the GIF (unless --delay-cs); 0: real times%s" },
};

void feopts_init(feopts *f) {
    memset(f, 0, sizeof *f);
    f->theme = "viridis";
    f->heat = VIEW_HEAT_COMMIT;
    f->layout = -1;
    f->depth = -1;
    f->cols = 100;
    f->rows = 30;
    f->delay_cs = RECORDER_DELAY_CS;
    f->hold_cs = RECORDER_HOLD_CS;
    f->delay_ms = 300;
}

int feopts_parse(feopts *f, unsigned cmd, int argc, char **argv, int *i, const char *prog) {
    const char *a = argv[*i];
    for (size_t k = 0; k < sizeof fe_flags / sizeof fe_flags[0]; k++) {
        const fe_flag *fl = &fe_flags[k];
        if (!(fl->cmds & cmd) || strcmp(a, fl->name)) continue;
        if (!fl->arg) {
            if (!strcmp(a, "--paused")) f->paused = true;
            else if (!strcmp(a, "--demo-ui")) f->demo = true;
            return 1;
        }
        if (*i + 1 >= argc) { fprintf(stderr, "%s: %s needs a value\n", prog, a); return -1; }
        const char *v = argv[++*i];
        return fl->parse(f, a, v, prog) ? -1 : 1;
    }
    return 0;
}

void feopts_usage(FILE *out, unsigned cmd) {
    for (size_t k = 0; k < sizeof fe_flags / sizeof fe_flags[0]; k++) {
        const fe_flag *fl = &fe_flags[k];
        if (!(fl->cmds & cmd)) continue;
        char head[40], fill[160] = "";
        snprintf(head, sizeof head, "%s%s%s", fl->name, fl->arg ? " " : "", fl->arg ? fl->arg : "");
        if (!strcmp(fl->name, "--theme")) {
            size_t n = 0;
            for (int t = 0; t < theme_cycle_len; t++)
                n += (size_t)snprintf(fill + n, sizeof fill - n, "%s%s%s", t ? ", " : "", theme_cycle[t], t ? "" : " (default)");
        } else if (!strcmp(fl->name, "--heat")) {
            size_t n = 0;
            for (int h = 0; h < VIEW_HEAT_COUNT; h++)
                n += (size_t)snprintf(fill + n, sizeof fill - n, "%s%s%s", h == 0 ? "" : h == VIEW_HEAT_COUNT - 1 ? " or " : ", ",
                                      ui_heat_keys[h], h == VIEW_HEAT_COMMIT ? " (default)" : "");
        } else if (!strcmp(fl->name, "--layout")) {
            size_t n = 0;
            for (int l = 0; l < VIEW_LAYOUT_COUNT; l++)
                n += (size_t)snprintf(fill + n, sizeof fill - n, "%s%s", l == 0 ? "" : l == VIEW_LAYOUT_COUNT - 1 ? " or " : ", ",
                                      view_layout_keys[l]);
        } else if (!strcmp(fl->name, "--size")) {
            snprintf(fill, sizeof fill, "%dx%d", VIEW_MIN_W, VIEW_MIN_H);
        } else if (!strcmp(fl->name, "--delay-cs")) {
            snprintf(fill, sizeof fill, "%d", RECORDER_DELAY_CS);
        } else if (!strcmp(fl->name, "--hold-cs")) {
            snprintf(fill, sizeof fill, "%d", RECORDER_HOLD_CS);
        }
        const char *at = strstr(fl->help, "%s");         /* the choices go where the row says */
        fprintf(out, "  %-18s %.*s%s%s\n", head, (int)(at - fl->help), fl->help, fill, at + 2);
    }
}

int feopts_layout(const feopts *f, const char *preset_layout) {
    if (f->layout >= 0) return f->layout;
    for (int k = 0; preset_layout && k < VIEW_LAYOUT_COUNT; k++)
        if (!strcmp(preset_layout, view_layout_keys[k])) return k;
    return VIEW_LAYOUT_TEXT;
}

void feopts_files(const feopts *f, outfile_set *s) {
    outfile_set_input(s, "--theme", theme_is_path(f->theme) ? f->theme : NULL);
    outfile_set_output(s, "--gif", f->gif);
    outfile_set_output(s, "--cast", f->cast);
}
