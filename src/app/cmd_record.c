/*
 * cmd_record: `unmask record` runs a whole generation with no terminal and writes what the
 * visualizer would have shown as an animated GIF and/or an asciicast v2 file.
 *
 * Each snapshot (step 0, the all-mask canvas, then one per denoising step) is composed by
 * the visualizer's own view_build on a virtual COLS x ROWS screen with the chosen theme, and
 * handed to the recorder (recorder.h): the GIF gets one frame per snapshot with a fixed
 * delay and a final hold, the cast gets the frame at its real time after a "step N" marker.
 * stdout and stdin are never used, so it runs in scripts and CI. Every graceful signal of
 * src/base/sigexit.h (INT, TERM, HUP, QUIT, USR1, ALRM, ...) stops after the step in flight and
 * still finishes the files (exit 128 + the signal); a crash signal runs sigexit's clean-up
 * hooks and dies, leaving nothing under the final names; SIGPIPE is ignored (a write to a
 * closed pipe fails like any write, and the files are removed).
 */
#include <signal.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cast.h"
#include "cli.h"
#include "genopts.h"
#include "numparse.h"
#include "outfile.h"
#include "recorder.h"
#include "rec_frame.h"
#include "sigexit.h"
#include "theme.h"
#include "ui_source.h"
#include "view.h"

#define REC_MAX_COLS 500
#define REC_MAX_ROWS 200

static void usage(FILE *f) {
    fprintf(f, "usage: unmask record [-m FILE] -p PROMPT --gif OUT.gif [--cast OUT.cast] [options]\n\n"
               "Run a whole generation without a terminal and record what the visualizer shows:\n"
               "one frame per denoising step (plus the initial all-mask frame).\n\n");
    genopts_usage(f);
    fprintf(f, "recording:\n"
               "  --gif FILE         write an animated GIF (looping, one frame per step)\n"
               "  --cast FILE        write an asciicast v2 recording (asciinema), one marker per step\n"
               "  --size COLSxROWS   the virtual screen (default 100x30, at least %dx%d)\n"
               "  --delay-cs N       GIF: centiseconds each step is shown (default %d)\n"
               "  --hold-cs N        GIF: centiseconds the last frame is held (default %d)\n"
               "  --theme NAME|FILE  viridis (default), magma, inferno, cividis, high-contrast, mono, or a .theme file\n"
               "  --heat MODE        commit (default), live, order or entropy\n"
               "  -q, --quiet        no progress on stderr\n"
               "  -h, --help         this help\n",
            VIEW_MIN_W, VIEW_MIN_H, RECORDER_DELAY_CS, RECORDER_HOLD_CS);
}

static void progress(void *ctx, const char *what, int done, int total) {
    if (*(bool *)ctx) return;
    fprintf(stderr, "\rload: %s %d/%d   ", what, done, total);
    if (done == total) fputc('\n', stderr);
}

/* --size COLSxROWS: two whole numbers (numparse.h) around one 'x'. */
static int parse_size(const char *v, int *cols, int *rows) {
    const char *x = strpbrk(v, "xX");
    char c_txt[32], r_txt[32];
    int64_t c, n;
    um_err e;
    if (!x || (size_t)(x - v) >= sizeof c_txt || strlen(x + 1) >= sizeof r_txt) goto bad;
    snprintf(c_txt, sizeof c_txt, "%.*s", (int)(x - v), v);
    snprintf(r_txt, sizeof r_txt, "%s", x + 1);
    if (num_int(NULL, c_txt, INT64_MIN, INT64_MAX, &c, &e) || num_int(NULL, r_txt, INT64_MIN, INT64_MAX, &n, &e)) goto bad;
    if (c < VIEW_MIN_W || n < VIEW_MIN_H || c > REC_MAX_COLS || n > REC_MAX_ROWS) {
        fprintf(stderr, "unmask record: --size: '%s' is out of range (%dx%d to %dx%d)\n", v, VIEW_MIN_W, VIEW_MIN_H,
                REC_MAX_COLS, REC_MAX_ROWS);
        return -1;
    }
    *cols = (int)c;
    *rows = (int)n;
    return 0;
bad:
    um_errf(&e, "--size: '%.60s' is not COLSxROWS (e.g. 100x30)", v);   /* um_errf: control bytes shown as '?' */
    fprintf(stderr, "unmask record: %s\n", e.msg);
    return -1;
}

/* Compose snapshot hist[n-1] and hand it to the recorder. */
static int record_one(recorder *rec, view_ctx *vc, frame *fr, rec_frame *rf, view_state *v, um_err *e) {
    if (view_build(vc, fr, v, e)) return UM_FAIL;
    frame_to_rec(fr, rf, RECORDER_FG_DEFAULT, RECORDER_BG_DEFAULT);
    const um_snapshot *s = v->hist[v->shown];
    char label[32];
    snprintf(label, sizeof label, "step %d", s->step);
    return recorder_frame(rec, recorder_elapsed(rec), rf, s->step > 0 ? label : NULL, e);
}

int cmd_record(int argc, char **argv) {
    um_genopts g;
    genopts_init(&g);
    const char *gif_path = NULL, *cast_path = NULL, *theme_name = "viridis";
    int cols = 100, rows = 30, delay_cs = RECORDER_DELAY_CS, hold_cs = RECORDER_HOLD_CS, heat = VIEW_HEAT_COMMIT;
    bool quiet = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { usage(stdout); return 0; }
        if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) { quiet = true; continue; }
        int r = genopts_parse(&g, argc, argv, &i, "unmask record");
        if (r < 0) return 2;
        if (r > 0) continue;
        bool valued = !strcmp(a, "--gif") || !strcmp(a, "--cast") || !strcmp(a, "--size") || !strcmp(a, "--delay-cs") ||
                      !strcmp(a, "--hold-cs") || !strcmp(a, "--theme") || !strcmp(a, "--heat");
        if (!valued) {
            fprintf(stderr, a[0] == '-' ? "unmask record: unknown option '%s' (see --help)\n"
                                        : "unmask record: unexpected argument '%s' (see --help)\n", a);
            return 2;
        }
        if (i + 1 >= argc) { fprintf(stderr, "unmask record: %s needs a value\n", a); return 2; }
        const char *v = argv[++i];
        if (!strcmp(a, "--gif")) gif_path = v;
        else if (!strcmp(a, "--cast")) cast_path = v;
        else if (!strcmp(a, "--theme")) theme_name = v;
        else if (!strcmp(a, "--size")) { if (parse_size(v, &cols, &rows)) return 2; }
        else if (!strcmp(a, "--delay-cs")) { if (num_arg_i32("unmask record", a, v, 2, 65535, &delay_cs)) return 2; }
        else if (!strcmp(a, "--hold-cs")) { if (num_arg_i32("unmask record", a, v, 0, 65535, &hold_cs)) return 2; }
        else {
            static const char *const names[VIEW_HEAT_COUNT] = { "commit", "live", "order", "entropy" };
            heat = -1;
            for (int k = 0; k < VIEW_HEAT_COUNT; k++) if (!strcmp(v, names[k])) heat = k;
            if (heat < 0) { fprintf(stderr, "unmask record: --heat must be commit, live, order or entropy\n"); return 2; }
        }
    }
    if (!g.prompt) { fprintf(stderr, "unmask record: -p PROMPT is required (see --help)\n"); return 2; }
    if (!gif_path && !cast_path) { fprintf(stderr, "unmask record: give --gif FILE and/or --cast FILE (see --help)\n"); return 2; }
    theme th;
    um_err e = { "" };
    if (theme_load(&th, theme_name, &e)) { fprintf(stderr, "unmask record: %s\n", e.msg); return 1; }
    if (genopts_resolve(&g, &e)) { fprintf(stderr, "unmask record: %s\n", e.msg); return 1; }
    outfile_set files;                   /* before the model loads: bad outputs fail at once */
    outfile_set_init(&files);
    outfile_set_input(&files, g.model ? "-m" : "the model", g.eng.model_path);
    outfile_set_input(&files, "--theme", theme_is_path(theme_name) ? theme_name : NULL);
    outfile_set_output(&files, "--gif", gif_path);
    outfile_set_output(&files, "--cast", cast_path);
    if (outfile_check(&files, &e)) { fprintf(stderr, "unmask record: %s\n", e.msg); return 1; }
    g.eng.progress = progress;
    g.eng.progress_ctx = &quiet;
    g.eng.warn = genopts_warn_stderr;
    g.eng.warn_ctx = (void *)"unmask record";

    ui_source src;
    if (engine_source_open(&src, &g.eng, &e)) { fprintf(stderr, "unmask record: %s\n", e.msg); return 1; }
    um_settings s = src.defaults;
    genopts_apply(&g, &s);

    int rc = 1;
    recorder *rec = NULL;
    um_snapshot **hist = NULL;
    int32_t n_hist = 0, cap_hist = 0;
    frame fr = { 0 };
    view_ctx vc = { 0 };
    rec_frame rf = { 0 };
    char title[256];
    snprintf(title, sizeof title, "unmask: %s", g.prompt);
    recorder_opts ro = {
        .gif_path = gif_path, .cast_path = cast_path, .cols = cols, .rows = rows, .real_time = false,
        .delay_cs = delay_cs, .hold_cs = hold_cs, .pad_rgb = RECORDER_BG_DEFAULT, .cast_color = CAST_COLOR_24BIT,
        .term = "xterm-256color", .title = title,
    };
    if (frame_init(&fr, cols, rows, &e)) goto out;
    rf.cells = um_calloc((size_t)cols * (size_t)rows, sizeof *rf.cells);
    if (!rf.cells) { um_errf(&e, "out of memory"); goto out; }
    if (sigexit_install(SIGEXIT_FLAG, &e)) goto out;    /* before the temporary files exist */
    if (recorder_open(&rec, &ro, &e)) goto out;

    view_state v = {
        .src = &src, .th = &th, .depth = 16777216, .heat = (view_heat)heat, .cursor = -1,
    };
    double t_start = um_now();
    um_snapshot *snap = src.start(src.self, &s, g.prompt, &e);
    while (snap) {
        if (n_hist == cap_hist) {
            int32_t cap = cap_hist ? cap_hist * 2 : 64;
            um_snapshot **h = realloc(hist, (size_t)cap * sizeof *h);
            if (!h) { src.release(snap); um_errf(&e, "out of memory"); snap = NULL; break; }
            hist = h;
            cap_hist = cap;
        }
        hist[n_hist++] = snap;
        v.hist = hist;
        v.n_hist = n_hist;
        v.shown = n_hist - 1;
        if (record_one(rec, &vc, &fr, &rf, &v, &e)) { snap = NULL; break; }
        if (!quiet)
            fprintf(stderr, "\rstep %d/%d  masks %d  %.0f ms/step   ", snap->step, snap->n_steps, snap->masks_left,
                    snap->forward_ms + snap->sample_ms);
        if (snap->done || sigexit_caught()) break;
        int32_t prev = snap->step;
        snap = src.step(src.self, &e);
        if (snap && snap->step == prev) {            /* the engine had nothing left to do */
            src.release(snap);
            break;
        }
    }
    if (!quiet) fputc('\n', stderr);
    if (!snap && e.msg[0]) {                          /* a failed step or frame: keep nothing */
        recorder_abort(rec);
        rec = NULL;
        goto out;
    }
    int frames = recorder_gif_frames(rec), events = recorder_cast_events(rec);
    double t_end = recorder_elapsed(rec);
    um_err ce = { "" };
    if (recorder_close(rec, t_end, &ce)) { rec = NULL; e = ce; goto out; }
    rec = NULL;
    if (!quiet) {
        fprintf(stderr, "recorded %d steps in %.2f s", n_hist - 1, um_now() - t_start);
        if (gif_path) fprintf(stderr, "; %s: %d frames", gif_path, frames);
        if (cast_path) fprintf(stderr, "; %s: %d events", cast_path, events);
        fputc('\n', stderr);
    }
    int stop_signal = sigexit_caught();
    rc = stop_signal ? 128 + stop_signal : 0;
    if (stop_signal) fprintf(stderr, "unmask record: interrupted after step %d; the files hold the steps so far\n", n_hist - 1);
out:
    if (rc == 1) fprintf(stderr, "unmask record: %s\n", e.msg);
    if (rec) recorder_abort(rec);
    sigexit_uninstall();                            /* after the temporary files are gone */
    for (int32_t i = 0; i < n_hist; i++) src.release(hist[i]);
    free(hist);
    free(rf.cells);
    frame_free(&fr);
    view_ctx_free(&vc);
    src.close(src.self);
    return rc;
}
