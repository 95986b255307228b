/*
 * cmd_record: `unmask record` runs a whole generation with no terminal and writes what the
 * visualizer would have shown as an animated GIF and/or an asciicast v2 file.
 *
 * Each snapshot (step 0, the all-mask canvas, then one per denoising step) is composed by
 * the visualizer's own view_build on a virtual COLS x ROWS screen with the chosen theme, and
 * handed to the recorder (recorder.h): the GIF gets one frame per snapshot with a fixed
 * delay and a final hold, the cast gets the frame at its real time after a "step N" marker.
 * Timing: --pace MS puts step k at k * MS ms in the cast and makes the GIF delay MS/10 cs
 * (--delay-cs, when given, still sets the GIF's); --pace 0 uses the real times for both (the
 * GIF frames then last as long as the steps took); without --pace, --delay-cs (default
 * RECORDER_DELAY_CS) and real cast times.
 * With --compare FLAGS (up to 3), every run is decoded to its end first (one engine each on
 * one shared model, each run in its own thread, the passes they plan at once run as one),
 * then the frames are composed from them in lock step (step k of every
 * run, a finished run showing its last step), as the visualizer's comparison panes; the
 * frames then sit on a virtual clock: step k at k * pace, or k * --delay-cs.
 * stdout and stdin are never used, so it runs in scripts and CI. Every graceful signal of
 * src/base/sigexit.h (INT, TERM, HUP, QUIT, USR1, ALRM, ...) stops after the step in flight and
 * still finishes the files (exit 128 + the signal); a crash signal runs sigexit's clean-up
 * hooks and dies, leaving nothing under the final names; SIGPIPE is ignored (a write to a
 * closed pipe fails like any write, and the files are removed).
 */
#include <signal.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cast.h"
#include "cli.h"
#include "feopts.h"
#include "flags.h"
#include "genopts.h"
#include "numparse.h"
#include "gguf.h"
#include "outfile.h"
#include "recorder.h"
#include "sigexit.h"
#include "theme.h"
#include "ui_source.h"
#include "view.h"


enum { REC_COMPARE = 1 };

static const um_flag rec_rows[] = {
    { .help = "recording:", .cmds = FLAG_CMD_RECORD },
    { 0, "compare", "FLAGS", REC_COMPARE, FLAG_CMD_RECORD, FLAG_RUN, NULL, 0,
      "also decode the prompt with these decoding flags in quotes (up to 3\n"
      "times): the runs side by side or stacked, as the visualizer shows them;\n"
      "with -m or -M the pane runs that model (its preset's settings, not main's)" },
};

#define RECORD_MAX_PANES VIEW_MAX_PANES

/* The --compare runs: their flags (parsed copies, cbuf: the split strings they point into). */
typedef struct rec_cmp {
    um_genopts *cg;
    char      **cbuf;
    const char **clabel;
    int        *n_cmp;
} rec_cmp;

static int rec_fn(void *ctx, const um_flag *f, const char *name, const char *v, const char *prog) {
    rec_cmp *c = ctx;
    if (*c->n_cmp == RECORD_MAX_PANES - 1) {
        fprintf(stderr, "%s: %s: at most %d (%d runs in all)\n", prog, name, RECORD_MAX_PANES - 1, RECORD_MAX_PANES);
        return -1;
    }
    int k = (*c->n_cmp)++;
    genopts_init(&c->cg[k]);
    c->clabel[k] = v;
    if (!(c->cbuf[k] = strdup(v))) { fprintf(stderr, "%s: out of memory\n", prog); return -1; }
    return genopts_parse_compare(&c->cg[k], c->cbuf[k], prog) ? -1 : 0;
}

static void parser(flags_parser *p, um_genopts *g, feopts *fe, rec_cmp *rc, flags_common *com) {
    *p = (flags_parser){ .prog = "unmask record", .cmd = FLAG_CMD_RECORD };
    genopts_add(p, g);
    flags_add(p, rec_rows, (int)(sizeof rec_rows / sizeof rec_rows[0]), rec_fn, rc, NULL);
    feopts_add(p, fe);
    flags_add(p, flags_misc_rows, flags_misc_rows_n, flags_common_fn, com, NULL);
}

static void usage(FILE *f) {
    flags_parser p;
    parser(&p, NULL, NULL, NULL, NULL);
    fprintf(f, "usage: unmask record [-m FILE | -M PRESET] -p PROMPT --gif OUT.gif [--cast OUT.cast] [options]\n\n"
               "Run a whole generation without a terminal and record what the visualizer shows:\n"
               "one frame per denoising step (plus the initial all-mask frame).\n\n");
    flags_usage(f, &p);
    genopts_usage_numbers(f);
}

/* Compose snapshot hist[shown] and hand it to the recorder at time t (seconds). */
static int record_one(recorder *rec, double t, view_ctx *vc, frame *fr, view_state *v, um_err *e) {
    if (view_build(vc, fr, v, e)) return UM_FAIL;
    const um_snapshot *s = v->hist[v->shown];
    char label[32];
    snprintf(label, sizeof label, "step %d", s->step);
    return recorder_frame(rec, t, fr, s->step > 0 ? label : NULL, e);
}

/* Decode run k to its end into the pane's history (*hist, grown); UM_FAIL on error. */
static int run_to_end(ui_source *src, const um_settings *s, const char *prompt, um_snapshot ***hist, int32_t *n,
                      bool quiet, int k, um_err *e) {
    int32_t cap = 0;
    um_snapshot *snap = src->start(src->self, s, prompt, e);
    while (snap) {
        if (*n == cap) {
            cap = cap ? cap * 2 : 64;
            um_snapshot **h = realloc(*hist, (size_t)cap * sizeof *h);
            if (!h) { src->release(snap); return um_errf(e, "out of memory"); }
            *hist = h;
        }
        (*hist)[(*n)++] = snap;
        if (!quiet) {                                /* redrawn on a terminal, a line each into a file */
            bool tty = isatty(STDERR_FILENO);
            char batch[32] = "";                     /* its pass served this many runs */
            if (snap->batched > 1) snprintf(batch, sizeof batch, "  in 1 pass x%d", snap->batched);
            fprintf(stderr, "%srun %d: step %d/%d  masks %d%s%s", tty ? "\r" : "", k + 1, snap->step, snap->n_steps,
                    snap->masks_left, batch, tty ? "   " : "\n");
        }
        if (snap->done || sigexit_caught()) return UM_OK;
        int32_t prev = snap->step;
        snap = src->step(src->self, e);
        if (snap && snap->step == prev) { src->release(snap); return UM_OK; }
    }
    return UM_FAIL;
}

/* One run of a comparison, to its end in its own thread: the runs share one model, and
 * the passes they plan at the same time run as one (engine_step). */
typedef struct run_job {
    ui_source     *src;
    const um_settings *s;
    const char    *prompt;
    um_snapshot ***hist;
    int32_t       *n;
    bool           quiet;
    int            k;
    int            rc;
    um_err         e;
} run_job;

static void *run_job_main(void *arg) {
    run_job *j = arg;
    j->rc = run_to_end(j->src, j->s, j->prompt, j->hist, j->n, j->quiet, j->k, &j->e);
    return NULL;
}

static int record_main(int argc, char **argv, um_genopts *cg, char **cbuf, const char **clabel, int *n_cmp, bool *quietp);

int cmd_record(int argc, char **argv) {
    bool quiet = false;
    um_genopts *cg = um_calloc(RECORD_MAX_PANES - 1, sizeof *cg);   /* the --compare runs' flags */
    char *cbuf[RECORD_MAX_PANES - 1] = { 0 };
    const char *clabel[RECORD_MAX_PANES - 1] = { 0 };
    int n_cmp = 0;
    if (!cg) { fprintf(stderr, "unmask record: out of memory\n"); return 1; }
    int rc = record_main(argc, argv, cg, cbuf, clabel, &n_cmp, &quiet);
    for (int k = 0; k < n_cmp; k++) free(cbuf[k]);
    free(cg);
    return rc;
}

static int record_main(int argc, char **argv, um_genopts *cg, char **cbuf, const char **clabel, int *n_cmp, bool *quietp) {
    um_genopts g;
    feopts fe;
    genopts_init(&g);
    feopts_init(&fe);
    rec_cmp rcmp = { cg, cbuf, clabel, n_cmp };
    flags_common com = { 0 };
    flags_parser p;
    parser(&p, &g, &fe, &rcmp, &com);
    int pr = flags_parse(&p, argc, argv);
    if (pr == FLAGS_STOP) { usage(stdout); return 0; }
    if (pr) return pr;
    bool quiet = *quietp = com.quiet;
    const bool tty = isatty(STDERR_FILENO);         /* the step line is redrawn with '\r' only there */
    if (!fe.gif && !fe.cast) { fprintf(stderr, "unmask record: give --gif FILE and/or --cast FILE (see --help)\n"); return 2; }
    theme th;
    um_err e = { "" };
    if (theme_load(&th, fe.theme, &e)) { fprintf(stderr, "unmask record: %s\n", e.msg); return 1; }
    if (genopts_resolve(&g, &e)) { fprintf(stderr, "unmask record: %s\n", e.msg); return 1; }
    if (!g.prompt) { fprintf(stderr, "unmask record: -p PROMPT is required unless the preset has a prompt (see --help)\n"); return 2; }
    outfile_set files;                   /* before the model loads: bad outputs fail at once */
    outfile_set_init(&files);
    outfile_set_input(&files, g.model ? "-m" : "the model", g.eng.model_path);
    um_engine_opts ceng[RECORD_MAX_PANES - 1];        /* each --compare run's (genopts_pane_engine) */
    bool cown[RECORD_MAX_PANES - 1] = { false };
    if (genopts_pane_engines(&g, cg, clabel, *n_cmp, ceng, cown, &files, "unmask record")) return 1;
    feopts_files(&fe, &files);
    if (outfile_check(&files, &e) || gguf_split_check_outputs(&files, &e)) { fprintf(stderr, "unmask record: %s\n", e.msg); return 1; }
    g.eng.progress = genopts_progress_stderr;
    g.eng.progress_ctx = &quiet;
    g.eng.warn = genopts_warn_stderr;
    g.eng.warn_ctx = (void *)"unmask record";

    ui_source src;
    if (engine_source_open(&src, &g.eng, &e)) { fprintf(stderr, "unmask record: %s\n", e.msg); return 1; }
    um_settings s = src.defaults;
    genopts_apply(&g, &s);
    ui_source csrc[RECORD_MAX_PANES - 1];            /* the --compare runs: an engine each, on src's model
                                                        or (cown) their own */
    um_settings cset[RECORD_MAX_PANES - 1];
    um_snapshot **chist[RECORD_MAX_PANES - 1] = { 0 };
    int32_t cn[RECORD_MAX_PANES - 1] = { 0 };
    int n_open = 0;
    g.eng.progress = NULL;
    for (; n_open < *n_cmp; n_open++) {
        um_engine_opts ce = ceng[n_open];
        ce.warn = g.eng.warn;
        ce.warn_ctx = g.eng.warn_ctx;
        ce.progress = cown[n_open] ? genopts_progress_stderr : NULL;     /* another model: its load too */
        ce.progress_ctx = &quiet;
        if (cown[n_open] ? engine_source_open(&csrc[n_open], &ce, &e)
                         : engine_source_open_sharing(&csrc[n_open], &src, &ce, &e)) break;
        cset[n_open] = csrc[n_open].defaults;
        genopts_pane_apply(&g, &cg[n_open], cown[n_open], &cset[n_open]);
    }

    int rc = 1;
    recorder *rec = NULL;
    um_snapshot **hist = NULL;
    int32_t n_hist = 0, cap_hist = 0;
    frame fr = { 0 };
    view_ctx vc = { 0 };
    char title[256];
    snprintf(title, sizeof title, "unmask: %s", g.prompt);
    const bool paced = fe.pace_set && fe.pace_ms > 0;           /* a virtual clock, step k at k * pace */
    int32_t delay_cs = fe.delay_cs;
    if (paced && !fe.delay_cs_set) delay_cs = UM_MAX(2, UM_MIN(65535, (fe.pace_ms + 5) / 10));
    recorder_opts ro = {
        .gif_path = fe.gif, .cast_path = fe.cast, .cols = fe.cols, .rows = fe.rows,
        .real_time = fe.pace_set && fe.pace_ms == 0 && !fe.delay_cs_set && !*n_cmp,
        .delay_cs = delay_cs, .hold_cs = fe.hold_cs, .pad_rgb = RECORDER_BG_DEFAULT, .cast_color = CAST_COLOR_24BIT,
        .term = "xterm-256color", .title = title,
    };
    if (n_open < *n_cmp) goto out;                  /* a --compare engine failed to open */
    if (frame_init(&fr, fe.cols, fe.rows, &e)) goto out;
    if (sigexit_install(SIGEXIT_FLAG, &e)) goto out;    /* before the temporary files exist */
    if (recorder_open(&rec, &ro, &e)) goto out;

    view_state v = {
        .src = &src, .th = &th, .depth = 16777216, .heat = (view_heat)fe.heat, .cursor = -1,
        .layout = (view_layout)feopts_layout(&fe, g.have_preset ? g.pre.layout : NULL),
        .pace_ms = fe.pace_set ? fe.pace_ms : -1,
        .following = true,                          /* playback: never REWIND, no step ahead shown */
    };
    double t_start = um_now();
    um_snapshot *snap = NULL;
    double t_end = 0;
    if (*n_cmp) {               /* every run to its end, each in its own thread (passes batched), then the frames */
        view_pane panes[RECORD_MAX_PANES];
        run_job jobs[RECORD_MAX_PANES];
        pthread_t tid[RECORD_MAX_PANES];
        bool started[RECORD_MAX_PANES] = { false };
        jobs[0] = (run_job){ &src, &s, g.prompt, &hist, &n_hist, quiet, 0, 0, { "" } };
        for (int k = 0; k < *n_cmp; k++)
            jobs[k + 1] = (run_job){ &csrc[k], &cset[k], g.prompt, &chist[k], &cn[k], quiet, k + 1, 0, { "" } };
        for (int k = 1; k <= *n_cmp; k++) started[k] = pthread_create(&tid[k], NULL, run_job_main, &jobs[k]) == 0;
        run_job_main(&jobs[0]);
        for (int k = 1; k <= *n_cmp; k++) {
            if (started[k]) pthread_join(tid[k], NULL);
            else run_job_main(&jobs[k]);                 /* no thread: in turn */
        }
        bool ok = true;
        for (int k = 0; ok && k <= *n_cmp; k++)
            if (jobs[k].rc) { ok = false; e = jobs[k].e; }
        if (!quiet && tty) fputc('\n', stderr);
        int32_t last = n_hist - 1;
        panes[0] = (view_pane){ .hist = hist, .n_hist = n_hist, .label = "main", .src = &src };
        for (int k = 0; k < *n_cmp; k++) {
            panes[k + 1] = (view_pane){ .hist = chist[k], .n_hist = cn[k], .label = clabel[k], .src = &csrc[k] };
            last = UM_MAX(last, cn[k] - 1);
        }
        v.panes = panes;
        v.n_panes = *n_cmp + 1;
        v.hist = hist;
        v.n_hist = n_hist;
        double step_s = paced ? fe.pace_ms / 1000.0 : delay_cs / 100.0;
        for (int32_t k = 0; ok && k <= last && n_hist > 0; k++) {
            v.shown = UM_MIN(k, n_hist - 1);
            v.pane_step = k;
            ok = record_one(rec, (double)k * step_s, &vc, &fr, &v, &e) == UM_OK;
        }
        if (ok) snap = hist[n_hist - 1];            /* not NULL: it went well */
        else if (!e.msg[0]) um_errf(&e, "recording the comparison failed");
        t_end = (double)(last + 1) * step_s;
    } else {
    snap = src.start(src.self, &s, g.prompt, &e);
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
        /* the cast is paced as the GIF: the virtual clock (--pace), the fixed delay, or real time */
        double t = paced ? (double)(n_hist - 1) * fe.pace_ms / 1000.0
                 : ro.real_time ? recorder_elapsed(rec) : (double)(n_hist - 1) * delay_cs / 100.0;
        if (record_one(rec, t, &vc, &fr, &v, &e)) { snap = NULL; break; }
        /* redrawn on a terminal, a line each into a file; uniform-state: accepted instead of masks */
        if (!quiet && snap->us.on)
            fprintf(stderr, "%sstep %d/%d  accepted %d  %.0f ms/step%s", tty ? "\r" : "", snap->step, snap->n_steps,
                    snap->us.accepted, snap->forward_ms + snap->sample_ms, tty ? "   " : "\n");
        else if (!quiet)
            fprintf(stderr, "%sstep %d/%d  masks %d  %.0f ms/step%s", tty ? "\r" : "", snap->step, snap->n_steps,
                    snap->masks_left, snap->forward_ms + snap->sample_ms, tty ? "   " : "\n");
        if (snap->done || sigexit_caught()) break;
        int32_t prev = snap->step;
        snap = src.step(src.self, &e);
        if (snap && snap->step == prev) {            /* the engine had nothing left to do */
            src.release(snap);
            break;
        }
    }
    if (!quiet && tty) fputc('\n', stderr);
    t_end = paced ? (double)n_hist * fe.pace_ms / 1000.0
          : ro.real_time ? recorder_elapsed(rec) : (double)n_hist * delay_cs / 100.0;
    }
    if (!snap && e.msg[0]) {                          /* a failed step or frame: keep nothing */
        recorder_abort(rec);
        rec = NULL;
        goto out;
    }
    int frames = recorder_gif_frames(rec), events = recorder_cast_events(rec);
    um_err ce = { "" };
    if (recorder_close(rec, t_end, &ce)) { rec = NULL; e = ce; goto out; }
    rec = NULL;
    if (!quiet) {
        fprintf(stderr, "recorded %d steps in %.2f s", n_hist - 1, um_now() - t_start);
        if (fe.gif) fprintf(stderr, "; %s: %d frames", fe.gif, frames);
        if (fe.cast) fprintf(stderr, "; %s: %d events", fe.cast, events);
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
    frame_free(&fr);
    view_ctx_free(&vc);
    src.close(src.self);
    for (int k = 0; k < n_open; k++) {
        for (int32_t i = 0; i < cn[k]; i++) csrc[k].release(chist[k][i]);
        free(chist[k]);
        csrc[k].close(csrc[k].self);
    }
    return rc;
}
