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

enum { FE_GIF = 1, FE_CAST, FE_SIZE, FE_DELAY_CS, FE_HOLD_CS, FE_THEME, FE_COLOR, FE_HEAT, FE_LAYOUT, FE_PAUSED,
       FE_DEMO_UI, FE_DELAY_MS, FE_PACE };

#define VR (FE_VIEW | FE_RECORD)

/* Every front-end flag; FLAG_RUN: not a decoding setting (refused in --compare). */
static const um_flag fe_rows[] = {
    { 0, "gif",      "FILE",      FE_GIF,      VR,        FLAG_RUN, NULL, 0, "write an animated GIF of the screen, one frame per step" },
    { 0, "cast",     "FILE",      FE_CAST,     VR,        FLAG_RUN, NULL, 0, "write an asciicast v2 recording (asciinema), one marker per step" },
    { 0, "size",     "COLSxROWS", FE_SIZE,     FE_RECORD, FLAG_RUN, NULL, 0, "the virtual screen (default 100x30, at least %s)" },
    { 0, "delay-cs", "N",         FE_DELAY_CS, FE_RECORD, FLAG_RUN, NULL, 0, "GIF: centiseconds each step is shown, 2 to 65535 (default %s)" },
    { 0, "hold-cs",  "N",         FE_HOLD_CS,  FE_RECORD, FLAG_RUN, NULL, 0, "GIF: centiseconds the last frame is held, 0 to 65535 (default %s)" },
    { 0, "theme",    "NAME|FILE", FE_THEME,    VR,        FLAG_RUN, NULL, 0, "%s, or a .theme file" },
    { 0, "color",    "MODE",      FE_COLOR,    FE_VIEW,   FLAG_RUN, NULL, 0, "auto, 24bit, 256, 8 or none (NO_COLOR is honoured)" },
    { 0, "heat",     "MODE",      FE_HEAT,     VR,        FLAG_RUN, NULL, 0, "%s" },
    { 0, "layout",   "MODE",      FE_LAYOUT,   VR,        FLAG_RUN, NULL, 0, "%s (a 9x9 sudoku grid);\n"
                                                                              "default: the preset's layout, else text" },
    { 0, "paused",   NULL,        FE_PAUSED,   FE_VIEW,   FLAG_RUN, NULL, 0, "start paused at step 0" },
    { 0, "demo-ui",  NULL,        FE_DEMO_UI,  FE_VIEW,   FLAG_RUN, NULL, 0, "a synthetic denoiser instead of a model (tests, demos)" },
    { 0, "delay-ms", "N",         FE_DELAY_MS, FE_VIEW,   FLAG_RUN, NULL, 0, "its step time, 0 to 600000 (default 300)" },
    { 0, "pace",     "MS",        FE_PACE,     FE_VIEW,   FLAG_RUN, NULL, 0,
      "ms between steps shown while following (default " STR(UI_PACE_DEFAULT_MS) "; 0: engine speed; keys < >)" },
    { 0, "pace",     "MS",        FE_PACE,     FE_RECORD, FLAG_RUN, NULL, 0, "ms per step in the cast and the GIF (unless --delay-cs); 0: real times" },
};
#undef VR

static int fe_fn(void *ctx, const um_flag *fl, const char *name, const char *v, const char *prog) {
    feopts *f = ctx;
    switch (fl->id) {
    case FE_GIF:      f->gif = v; return 0;
    case FE_CAST:     f->cast = v; return 0;
    case FE_SIZE:     return p_size(f, name, v, prog);
    case FE_DELAY_CS: return p_delay_cs(f, name, v, prog);
    case FE_HOLD_CS:  return p_hold_cs(f, name, v, prog);
    case FE_THEME:    f->theme = v; return 0;
    case FE_COLOR:    return p_color(f, name, v, prog);
    case FE_HEAT:     return p_heat(f, name, v, prog);
    case FE_LAYOUT:   return p_layout(f, name, v, prog);
    case FE_PAUSED:   f->paused = true; return 0;
    case FE_DEMO_UI:  f->demo = true; return 0;
    case FE_DELAY_MS: return p_delay_ms(f, name, v, prog);
    case FE_PACE:     return p_pace(f, name, v, prog);
    default:          return 0;
    }
}

/* The "%s" of a row's help: the choices or defaults, from the lists that define them. */
static void fe_fill(const um_flag *fl, char *fill, size_t cap) {
    size_t n = 0;
    fill[0] = 0;
    switch (fl->id) {
    case FE_THEME:
        for (int t = 0; t < theme_cycle_len && n < cap; t++)
            n += (size_t)snprintf(fill + n, cap - n, "%s%s%s", t ? ", " : "", theme_cycle[t], t ? "" : " (default)");
        break;
    case FE_HEAT:
        for (int h = 0; h < VIEW_HEAT_COUNT && n < cap; h++)
            n += (size_t)snprintf(fill + n, cap - n, "%s%s%s", h == 0 ? "" : h == VIEW_HEAT_COUNT - 1 ? " or " : ", ",
                                  ui_heat_keys[h], h == VIEW_HEAT_COMMIT ? " (default)" : "");
        break;
    case FE_LAYOUT:
        for (int l = 0; l < VIEW_LAYOUT_COUNT && n < cap; l++)
            n += (size_t)snprintf(fill + n, cap - n, "%s%s", l == 0 ? "" : l == VIEW_LAYOUT_COUNT - 1 ? " or " : ", ",
                                  view_layout_keys[l]);
        break;
    case FE_SIZE:     snprintf(fill, cap, "%dx%d", VIEW_MIN_W, VIEW_MIN_H); break;
    case FE_DELAY_CS: snprintf(fill, cap, "%d", RECORDER_DELAY_CS); break;
    case FE_HOLD_CS:  snprintf(fill, cap, "%d", RECORDER_HOLD_CS); break;
    default:          break;
    }
}

void feopts_add(flags_parser *p, feopts *f) {
    flags_add(p, fe_rows, (int)(sizeof fe_rows / sizeof fe_rows[0]), fe_fn, f, fe_fill);
}

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
    flags_parser p = { .prog = prog, .cmd = cmd };
    feopts_add(&p, f);
    int r = flags_parse_one(&p, argc, argv, i);
    return r > 1 ? 1 : r;
}

void feopts_usage(FILE *out, unsigned cmd) {
    flags_parser p = { .cmd = cmd };
    feopts_add(&p, NULL);
    flags_usage(out, &p);
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
