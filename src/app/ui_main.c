/*
 * ui_main: the visualizer's options, state and event loop (see ui_main.h).
 *
 * Threads: this file runs on the UI thread only; compute happens in ui/worker.c. The loop
 * poll()s stdin and the worker's wake-up pipe, drains whatever is ready, then composes one
 * frame (ui/view.c) and paints it (ui/draw_curses.c). It never waits on compute: a key is
 * handled as soon as poll returns, whatever the worker is doing.
 *
 * State invariants: hist holds every snapshot of the current run in step order (hist[k]
 * is step k), each with one reference owned here; shown indexes hist; `follow` means the
 * view moves towards the newest snapshot by itself, at the pace (ui/pace.h): while running,
 * shown advances at most one step per pace interval, or as soon as a step exists when the
 * engine is slower than the pace; the worker computes up to UI_PACE_LEAD steps ahead of
 * shown (its horizon, set before every wait, so a setting changed now applies soon after
 * the step on screen). While paused the view stays where it is; a step asked for with n
 * shows as it arrives. Scrubbing, jumps and n are never paced. The pace is part of this
 * playback state, not of the worker or the engine.
 *
 * Recording: rec_cli (--gif/--cast, the whole session) and rec_key (the g key, a GIF) are
 * fed every composed frame in redraw(); the recorder keeps only frames that look different.
 * Both are finished (files renamed into place) after the terminal is restored, on every
 * way out of the loop: q, a loop error, and every graceful signal of src/base/sigexit.h (INT,
 * TERM, HUP, QUIT, USR1, ALRM, ...; the loop polls its wake-up fd). Crash signals restore
 * the terminal through draw_curses's hook and remove the temporary files.
 *
 * Engine errors: a start or step the source rejects (a prompt or generation past the
 * context, a bad schedule setting) is kept in `error` until a run starts again; the screen
 * shows it, every settings change restarts while it stands, and quitting with it standing
 * prints it as `unmask: MESSAGE` on stderr and exits 1, as `unmask generate` does.
 */
#include <errno.h>
#include <locale.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <curses.h>

#include "draw_curses.h"
#include "esc.h"
#include "fake_source.h"
#include "feopts.h"
#include "cast.h"
#include "genopts.h"
#include "heat.h"
#include "schedule.h"
#include "keys.h"
#include "models_conf.h"
#include "numparse.h"
#include "outfile.h"
#include "pace.h"
#include "recorder.h"
#include "sigexit.h"
#include "ui_main.h"
#include "view.h"
#include "worker.h"

#define MESSAGE_SECONDS 4.0
#define PROMPT_MAX      4096
#define DEFAULT_PROMPT  "Once upon a time"

typedef struct pane {              /* one run: the main one (pn[0]) or a --compare */
    ui_source     src;
    ui_worker    *worker;
    um_snapshot **hist;            /* (n_hist) this run's snapshots, hist[k] is step k */
    int32_t       n_hist, cap_hist;
    um_settings   settings;        /* what the next start/apply uses */
    char          label[160];      /* the settings as given: "main" or the --compare FLAGS */
    char          error[512];      /* the source's standing error, "" when the run is fine */
} pane;

typedef struct app {
    pane          pn[VIEW_MAX_PANES];
    int           n_panes, focus;  /* focus: the pane the inspector and settings keys act on */
    int32_t       shown;           /* the common step shown (each pane: min(shown, its newest)) */
    bool          follow;
    ui_pace       pace;            /* how fast shown follows the newest step */
    char         *prompt;          /* owned, any length */
    theme         th;
    int           theme_idx;
    int           depth;
    view_heat     heat;
    view_layout   layout;
    int32_t       cursor;
    bool          paused, help, editing, quit;
    char         *edit;            /* (edit_cap) the prompt editor's line */
    size_t        edit_cap;
    char          message[512];
    double        message_until;
    frame         fr;
    view_ctx      vc;
    recorder     *rec_cli;         /* --gif / --cast, NULL when not recording */
    char          rec_cli_lost[512];   /* why rec_cli stopped midway ("" if it did not): exit 1 */
    recorder     *rec_key;         /* the g key's GIF, NULL when not recording */
    char          rec_key_path[64];
    char          rec_title[128];  /* cast header title: "unmask: PROMPT" */
    rec_frame     rf;              /* fr converted for the recorders; cells (rf_cap) */
    size_t        rf_cap;
    int32_t       rec_step;        /* step of the last recorded frame (cast markers) */
} app;

/* ------------------------------------------------------------------ messages, history */

static void say(app *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(app *a, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(a->message, sizeof a->message, fmt, ap);
    va_end(ap);
    a->message_until = um_now() + MESSAGE_SECONDS;
}

/* Engine warnings (um_engine_opts.warn: a run past the model's trained context that --ctx
 * allows) arrive on the worker thread during a start: kept here, shown when the UI takes
 * the start's snapshot, and printed on stderr once the terminal is restored. */
static pthread_mutex_t g_warn_lock = PTHREAD_MUTEX_INITIALIZER;
static char g_warn[512];
static bool g_warn_new;

static void keep_warning(void *ctx, const char *msg) {
    (void)ctx;
    pthread_mutex_lock(&g_warn_lock);
    snprintf(g_warn, sizeof g_warn, "%s", msg);
    g_warn_new = true;
    pthread_mutex_unlock(&g_warn_lock);
}

static void show_warning(app *a) {
    pthread_mutex_lock(&g_warn_lock);
    if (g_warn_new) say(a, "warning: %s", g_warn);
    g_warn_new = false;
    pthread_mutex_unlock(&g_warn_lock);
}

static void hist_clear(pane *p) {
    for (int32_t i = 0; i < p->n_hist; i++) p->src.release(p->hist[i]);
    p->n_hist = 0;
}

static int hist_push(app *a, pane *p, um_snapshot *s) {
    if (p->n_hist == p->cap_hist) {
        int32_t cap = p->cap_hist ? p->cap_hist * 2 : 64;
        um_snapshot **h = realloc(p->hist, (size_t)cap * sizeof *h);
        if (!h) { p->src.release(s); say(a, "out of memory: snapshot dropped"); return UM_FAIL; }
        p->hist = h;
        p->cap_hist = cap;
    }
    p->hist[p->n_hist++] = s;
    return UM_OK;
}

/* The newest step every pane can show, in lock step: the least newest step of the panes
 * still running (a pane whose run ended shows its last step meanwhile), or, when all ended,
 * the greatest; -1 while a pane has none. */
static int32_t newest(const app *a) {
    int32_t run = INT32_MAX, all = -1;
    for (int k = 0; k < a->n_panes; k++) {
        const pane *p = &a->pn[k];
        int32_t last = p->n_hist - 1;
        if (last < 0) return -1;
        all = UM_MAX(all, last);
        if (!p->hist[last]->done) run = UM_MIN(run, last);
    }
    return run == INT32_MAX ? all : run;
}

/* Following while running: move shown towards the newest step at the pace. */
static void pace_tick(app *a) {
    int32_t last = newest(a);
    if (a->follow && !a->paused && last >= 0)
        a->shown = ui_pace_advance(&a->pace, UM_MIN(a->shown, last), last, um_now());
}

static void drain_pane(app *a, pane *p) {
    ui_event ev;
    while (ui_worker_take(p->worker, &ev)) {
        switch (ev.kind) {
        case UI_EV_RESTARTED:
            show_warning(a);
            if (p->error[0]) {                      /* the failed run had stopped the worker */
                p->error[0] = 0;
                ui_worker_set_running(p->worker, !a->paused);
            }
            hist_clear(p);
            a->shown = 0;
            a->follow = true;
            hist_push(a, p, ev.snap);
            ui_pace_mark(&a->pace, um_now());
            break;
        case UI_EV_SNAPSHOT:
            hist_push(a, p, ev.snap);
            break;
        case UI_EV_APPLIED:
            break;
        case UI_EV_ERROR:                           /* a failed start or step stops the worker */
            snprintf(p->error, sizeof p->error, "%s", ev.msg[0] ? ev.msg : "the engine failed");
            a->message_until = 0;                   /* the error replaces any message */
            break;
        }
    }
}

static void drain_worker(app *a) {
    int32_t before = newest(a);
    for (int k = 0; k < a->n_panes; k++) drain_pane(a, &a->pn[k]);
    int32_t after = newest(a);
    /* paused at the newest step (n asked for the next one): show it as soon as every pane
     * has it; while running the pace moves the view (pace_tick) */
    if (a->follow && a->paused && before >= 0 && a->shown == before && after > before) {
        a->shown = before + 1;
        ui_pace_mark(&a->pace, um_now());
    }
}

/* The first standing error of the panes, NULL for none. */
static const char *any_error(const app *a) {
    for (int k = 0; k < a->n_panes; k++)
        if (a->pn[k].error[0]) return a->pn[k].error;
    return NULL;
}

static void set_running_all(app *a, bool running) {
    for (int k = 0; k < a->n_panes; k++) ui_worker_set_running(a->pn[k].worker, running);
}

static void step_once_all(app *a) {
    for (int k = 0; k < a->n_panes; k++) ui_worker_step_once(a->pn[k].worker);
}

static void restart_all(app *a) {
    for (int k = 0; k < a->n_panes; k++) ui_worker_restart(a->pn[k].worker, &a->pn[k].settings, a->prompt);
}

/* ------------------------------------------------------------------ recording */

static recorder_opts rec_opts(app *a, int cols, int rows) {
    const char *term = getenv("TERM");
    snprintf(a->rec_title, sizeof a->rec_title, "unmask: %.100s", a->prompt);   /* may cut UTF-8: the cast writer shows U+FFFD */
    return (recorder_opts){
        .cols = cols, .rows = rows, .real_time = true, .hold_cs = RECORDER_HOLD_CS,
        .pad_rgb = RECORDER_BG_DEFAULT, .cast_color = a->depth > 256 ? CAST_COLOR_24BIT : CAST_COLOR_256,
        .term = term && *term ? term : NULL, .title = a->rec_title,
    };
}

/* g: start a GIF of the screen as it is now, in ./unmask-YYYYmmdd-HHMMSS[-N].gif. */
static void rec_key_start(app *a) {
    char stamp[32];
    time_t now = time(NULL);
    struct tm tm;
    strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", localtime_r(&now, &tm));
    struct stat st;
    snprintf(a->rec_key_path, sizeof a->rec_key_path, "unmask-%s.gif", stamp);
    for (int n = 2; stat(a->rec_key_path, &st) == 0 && n < 100; n++)
        snprintf(a->rec_key_path, sizeof a->rec_key_path, "unmask-%s-%d.gif", stamp, n);
    recorder_opts o = rec_opts(a, a->fr.w, a->fr.h);
    o.gif_path = a->rec_key_path;
    um_err e = { "" };
    if (recorder_open(&a->rec_key, &o, &e)) { a->rec_key = NULL; say(a, "recording: %s", e.msg); return; }
    say(a, "recording %s (g stops)", a->rec_key_path);
}

/* Finish the g recording; returns the message saying how it went (also shown). */
static void rec_key_stop(app *a, bool show) {
    if (!a->rec_key) return;
    um_err e = { "" };
    int frames = recorder_gif_frames(a->rec_key);
    int rc = recorder_close(a->rec_key, recorder_elapsed(a->rec_key), &e);
    a->rec_key = NULL;
    if (rc) snprintf(a->message, sizeof a->message, "recording failed: %s", e.msg);
    else snprintf(a->message, sizeof a->message, "saved %s (%d frames)", a->rec_key_path, frames);
    if (show) a->message_until = um_now() + MESSAGE_SECONDS;
}

/* Feed the composed frame a->fr to the running recorders; a failing one is dropped. */
static void rec_feed(app *a) {
    if (!a->rec_cli && !a->rec_key) return;
    size_t n = (size_t)a->fr.w * (size_t)a->fr.h;
    if (n > a->rf_cap) {
        rec_cell *c = realloc(a->rf.cells, n * sizeof *c);
        if (!c) { say(a, "recording: out of memory, frame dropped"); return; }
        a->rf.cells = c;
        a->rf_cap = n;
    }
    frame_to_rec(&a->fr, &a->rf, RECORDER_FG_DEFAULT, RECORDER_BG_DEFAULT);
    char label[32];
    bool mark = a->fr.step > 0 && a->fr.step != a->rec_step;
    snprintf(label, sizeof label, "step %d", a->fr.step);
    a->rec_step = a->fr.step;
    um_err e = { "" };
    if (a->rec_cli && recorder_frame(a->rec_cli, recorder_elapsed(a->rec_cli), &a->rf, mark ? label : NULL, &e)) {
        recorder_abort(a->rec_cli);
        a->rec_cli = NULL;
        say(a, "recording stopped: %s", e.msg);
        snprintf(a->rec_cli_lost, sizeof a->rec_cli_lost, "%s", e.msg);
    }
    if (a->rec_key && recorder_frame(a->rec_key, recorder_elapsed(a->rec_key), &a->rf, NULL, &e)) {
        recorder_abort(a->rec_key);
        a->rec_key = NULL;
        say(a, "recording stopped: %s", e.msg);
    }
}

/* ------------------------------------------------------------------ actions */

static void set_paused(app *a, bool paused) {
    a->paused = paused;
    set_running_all(a, !paused);
    if (!paused) {          /* after a scrub: back to the live step; else playback goes on */
        if (!a->follow && newest(a) >= 0) a->shown = newest(a);
        a->follow = true;
        ui_pace_mark(&a->pace, um_now());
    }
}

/* A settings change: from the next step when the source can, else a restart (always while
 * an error stands: there is no run to change). */
static void change(app *a, um_settings next, const char *what) {
    pane *p = &a->pn[a->focus];
    bool restart = p->error[0] || p->src.needs_restart(&p->settings, &next);
    p->settings = next;
    if (restart) {
        ui_worker_restart(p->worker, &p->settings, a->prompt);
        say(a, "%s: restarted", what);
    } else {
        ui_worker_apply(p->worker, &p->settings);
        say(a, "%s: from the next step", what);
    }
}

/* The focused pane's run as a view_state (for view_focus). */
static view_state focus_view(const app *a) {
    const pane *p = &a->pn[a->focus];
    return (view_state){ .hist = p->hist, .n_hist = p->n_hist, .shown = UM_MIN(a->shown, p->n_hist - 1), .cursor = a->cursor };
}

static void move_vertical(app *a, int dir) {
    view_state tmp = focus_view(a);
    int32_t focus = view_focus(&tmp);
    frame *f = &a->fr;
    int cx = -1, cy = -1;
    for (int y = 0; y < f->h && cy < 0; y++)
        for (int x = 0; x < f->w; x++)
            if (frame_at(f, x, y)->pos == focus) { cx = x; cy = y; break; }
    if (cy < 0) return;
    for (int y = cy + dir; y >= 0 && y < f->h; y += dir) {
        int best = -1, bd = 1 << 30;
        for (int x = 0; x < f->w; x++) {
            int32_t p = frame_at(f, x, y)->pos;
            if (p >= 0 && abs(x - cx) < bd) { bd = abs(x - cx); best = p; }
        }
        if (best >= 0) { a->cursor = best; return; }
    }
}

static void next_theme(app *a) {
    um_err e = { "" };
    for (int tries = 0; tries < theme_cycle_len; tries++) {
        a->theme_idx = (a->theme_idx + 1) % theme_cycle_len;
        theme t;
        if (theme_load(&t, theme_cycle[a->theme_idx], &e) == UM_OK) {
            a->th = t;
            draw_curses_reset_colors();
            say(a, "theme: %s", a->th.name);
            return;
        }
        say(a, "%s", e.msg);
    }
}

static void act(app *a, ui_action action) {
    um_settings n = a->pn[a->focus].settings;
    char what[128];
    int32_t last = newest(a);
    switch (action) {
    case UI_ACT_QUIT:  a->quit = true; break;
    case UI_ACT_HELP:  a->help = !a->help; break;
    case UI_ACT_PAUSE: set_paused(a, !a->paused); break;
    case UI_ACT_STEP:
        if (!a->paused) { set_paused(a, true); say(a, "paused: n steps once"); break; }
        if (a->shown < last) { a->shown++; a->follow |= a->shown == last; break; }
        a->follow = true;
        step_once_all(a);
        break;
    case UI_ACT_BACK:
        if (!a->paused) set_paused(a, true);
        if (a->shown > 0) a->shown--;
        a->follow = false;
        break;
    case UI_ACT_FORWARD:
        if (a->shown < last) { a->shown++; a->follow |= a->shown == last; ui_pace_mark(&a->pace, um_now()); }
        else if (a->paused) { a->follow = true; step_once_all(a); }
        break;
    case UI_ACT_FIRST:
        if (!a->paused) set_paused(a, true);
        a->shown = 0;
        a->follow = false;
        break;
    case UI_ACT_LIVE:
        if (last >= 0) a->shown = last;
        a->follow = true;
        ui_pace_mark(&a->pace, um_now());
        break;
    case UI_ACT_PACE_HALVE:
    case UI_ACT_PACE_DOUBLE:
        a->pace.ms = action == UI_ACT_PACE_HALVE ? ui_pace_halve(a->pace.ms) : ui_pace_double(a->pace.ms);
        break;
    case UI_ACT_SCHEDULE:
        /* the masked schedules in turn; a uniform-state model has only its own */
        if (n.schedule != UM_SCHED_UNIFORM) n.schedule = (um_schedule)((n.schedule + 1) % UM_SCHED_UNIFORM);
        snprintf(what, sizeof what, "schedule %s", schedule_name(n.schedule));
        change(a, n, what);
        break;
    case UI_ACT_SCORING:
        n.score = (um_score)((n.score + 1) % UM_SCORE_COUNT);
        snprintf(what, sizeof what, "scoring %s", schedule_score_name(n.score));
        change(a, n, what);
        break;
    case UI_ACT_STEPS_UP:
    case UI_ACT_STEPS_DOWN:
        n.steps = action == UI_ACT_STEPS_UP ? UM_MIN(4096, n.steps * 2) : UM_MAX(1, n.steps / 2);
        snprintf(what, sizeof what, "steps %d", n.steps);
        change(a, n, what);
        break;
    case UI_ACT_BLOCK_UP:
    case UI_ACT_BLOCK_DOWN:
        if (n.block_len <= 0 || n.block_len > n.n_gen) n.block_len = n.n_gen;   /* 0: no blocks */
        n.block_len = action == UI_ACT_BLOCK_UP ? UM_MIN(n.n_gen, n.block_len * 2) : UM_MAX(1, n.block_len / 2);
        snprintf(what, sizeof what, "block %d", n.block_len);
        change(a, n, what);
        break;
    case UI_ACT_TEMP_UP:
    case UI_ACT_TEMP_DOWN:
        n.temperature = fminf(2.0f, fmaxf(0.0f, n.temperature + (action == UI_ACT_TEMP_UP ? 0.1f : -0.1f)));
        n.temperature = roundf(n.temperature * 10.0f) / 10.0f;
        snprintf(what, sizeof what, "temperature %.1f", (double)n.temperature);
        change(a, n, what);
        break;
    case UI_ACT_CACHE:                      /* refused up front where the engine would refuse it */
        if (!a->pn[a->focus].src.info.can_cache) {
            say(a, "cache refused: the %s backend runs no partial forward passes", a->pn[a->focus].src.info.backend);
            break;
        }
        n.cache = (um_cache)((n.cache + 1) % UM_CACHE_COUNT);
        snprintf(what, sizeof what, "cache %s", engine_cache_name(n.cache));
        change(a, n, what);
        break;
    case UI_ACT_TOKEN_EDIT:                 /* LLaDA 2.1 token editing, its thresholds as set */
        n.edit = !n.edit;
        if (n.edit) snprintf(what, sizeof what, "token editing on (p > %.2f, %d post steps)", (double)n.edit_threshold, n.post_steps);
        else snprintf(what, sizeof what, "token editing off");
        change(a, n, what);
        break;
    case UI_ACT_RESTART:
    case UI_ACT_RESEED:
        for (int k = 0; action == UI_ACT_RESEED && k < a->n_panes; k++)
            a->pn[k].settings.seed = (a->pn[k].settings.seed * 1103515245ull + 12345ull) % 1000000ull;
        restart_all(a);
        say(a, "restarted, seed %llu", (unsigned long long)a->pn[0].settings.seed);
        break;
    case UI_ACT_EDIT: {
        size_t len = strlen(a->prompt), need = len + PROMPT_MAX;     /* room to type */
        if (need > a->edit_cap) {
            char *b = realloc(a->edit, need);
            if (!b) { say(a, "out of memory for the prompt editor"); break; }
            a->edit = b;
            a->edit_cap = need;
        }
        memcpy(a->edit, a->prompt, len + 1);
        a->editing = true;
        break;
    }
    case UI_ACT_HEAT:
        a->heat = (view_heat)((a->heat + 1) % VIEW_HEAT_COUNT);
        say(a, "heat: %s", ui_heat_names[a->heat]);
        break;
    case UI_ACT_LAYOUT:
        a->layout = (view_layout)((a->layout + 1) % VIEW_LAYOUT_COUNT);
        say(a, "layout: %s", view_layout_keys[a->layout]);
        break;
    case UI_ACT_THEME: next_theme(a); break;
    case UI_ACT_RECORD:
        if (a->rec_key) rec_key_stop(a, true);
        else rec_key_start(a);
        break;
    case UI_ACT_LEFT:
    case UI_ACT_RIGHT: {
        view_state tmp = focus_view(a);
        int32_t f = view_focus(&tmp);
        if (f < 0) break;
        int32_t max = tmp.hist[tmp.shown]->n_canvas - 1;
        a->cursor = UM_MAX(0, UM_MIN(max, f + (action == UI_ACT_RIGHT ? 1 : -1)));
        break;
    }
    case UI_ACT_FOCUS:
        a->focus = (a->focus + 1) % a->n_panes;
        if (a->n_panes > 1) say(a, "focus: pane %d (%s)", a->focus + 1, a->pn[a->focus].label);
        break;
    case UI_ACT_UP:   move_vertical(a, -1); break;
    case UI_ACT_DOWN: move_vertical(a, +1); break;
    case UI_ACT_UNFOCUS:
        if (a->help) a->help = false;
        else a->cursor = -1;
        break;
    default: break;
    }
}

/* Prompt editing: the status line becomes a one-line editor. */
static void edit_key(app *a, int kind, wint_t ch) {
    size_t len = strlen(a->edit);
    if (kind == KEY_CODE_YES) {
        if (ch == KEY_BACKSPACE) goto backspace;
        if (ch == KEY_ENTER) goto enter;
        return;
    }
    if (ch == 27) { a->editing = false; return; }
    if (ch == '\r' || ch == '\n') goto enter;
    if (ch == 127 || ch == 8) goto backspace;
    if (ch == 21) { a->edit[0] = 0; return; }                 /* ctrl-U */
    if (ch < 32) return;
    char mb[8];
    int n = 0;
    uint32_t c = (uint32_t)ch;                                /* encode as UTF-8 */
    if (c < 0x80) mb[n++] = (char)c;
    else if (c < 0x800) { mb[n++] = (char)(0xC0 | c >> 6); mb[n++] = (char)(0x80 | (c & 63)); }
    else if (c < 0x10000) { mb[n++] = (char)(0xE0 | c >> 12); mb[n++] = (char)(0x80 | (c >> 6 & 63)); mb[n++] = (char)(0x80 | (c & 63)); }
    else { mb[n++] = (char)(0xF0 | c >> 18); mb[n++] = (char)(0x80 | (c >> 12 & 63)); mb[n++] = (char)(0x80 | (c >> 6 & 63)); mb[n++] = (char)(0x80 | (c & 63)); }
    if (len + (size_t)n + 1 < a->edit_cap) {
        memcpy(a->edit + len, mb, (size_t)n);
        a->edit[len + (size_t)n] = 0;
    }
    return;
backspace:
    while (len > 0 && ((unsigned char)a->edit[len - 1] & 0xC0) == 0x80) len--;
    if (len > 0) len--;
    a->edit[len] = 0;
    return;
enter:
    a->editing = false;
    char *p = strdup(a->edit);
    if (!p) { say(a, "out of memory: prompt unchanged"); return; }
    free(a->prompt);
    a->prompt = p;
    restart_all(a);
    say(a, "new prompt: restarted");
}

static void read_keys(app *a) {
    wint_t ch;
    int kind;
    while ((kind = get_wch(&ch)) != ERR) {
        if (kind == KEY_CODE_YES && ch == KEY_RESIZE) continue;     /* size is read per frame */
        if (kind == KEY_CODE_YES && ch == KEY_MOUSE) {
            MEVENT me;
            if (getmouse(&me) == OK && me.x >= 0 && me.y >= 0 && me.x < a->fr.w && me.y < a->fr.h) {
                int32_t p = frame_at(&a->fr, me.x, me.y)->pos;
                if (p >= 0) a->cursor = p;
            }
            continue;
        }
        if (a->editing) { edit_key(a, kind, ch); continue; }
        if (kind == OK && ch == 3) { a->quit = true; continue; }    /* ctrl-C in raw mode */
        if (a->help && !(kind == OK && (ch == '?' || ch == 27 || ch == 'q'))) { a->help = false; continue; }
        act(a, ui_key_action((int)ch));
    }
}

/* ------------------------------------------------------------------ drawing */

static int redraw(app *a, um_err *e) {
    int w, h;
    draw_curses_size(&w, &h);
    if (w != a->fr.w || h != a->fr.h || !a->fr.cells) {
        frame_free(&a->fr);
        if (frame_init(&a->fr, UM_MAX(1, w), UM_MAX(1, h), e)) return UM_FAIL;
        clearok(curscr, TRUE);
    }
    view_pane panes[VIEW_MAX_PANES];
    bool busy = false;
    for (int k = 0; k < a->n_panes; k++) {
        const pane *p = &a->pn[k];
        panes[k] = (view_pane){ .hist = p->hist, .n_hist = p->n_hist, .label = p->label,
                                .error = p->error[0] ? p->error : NULL };
        busy |= ui_worker_busy(p->worker);
    }
    const pane *fp = &a->pn[a->focus];
    view_state v = {
        .src = &fp->src, .hist = fp->hist, .n_hist = fp->n_hist, .shown = UM_MIN(a->shown, fp->n_hist - 1), .th = &a->th,
        .depth = a->depth, .heat = a->heat, .layout = a->layout, .cursor = a->cursor, .paused = a->paused,
        .busy = a->paused && busy, .help = a->help,
        .message = um_now() < a->message_until ? a->message : NULL,
        .edit = a->editing ? a->edit : NULL, .recording = a->rec_cli || a->rec_key,
        .error = fp->error[0] ? fp->error : a->n_panes > 1 ? NULL : any_error(a), .following = a->follow,
        .pace_ms = a->pace.ms, .panes = panes, .n_panes = a->n_panes, .focus_pane = a->focus, .pane_step = a->shown,
    };
    if (view_build(&a->vc, &a->fr, &v, e)) return UM_FAIL;
    draw_curses_frame(&a->fr);
    rec_feed(a);
    return UM_OK;
}

static int run_loop(app *a, um_err *e) {
    struct pollfd fds[2 + VIEW_MAX_PANES] = { { STDIN_FILENO, POLLIN, 0 }, { sigexit_fd(), POLLIN, 0 } };
    for (int k = 0; k < a->n_panes; k++) fds[2 + k] = (struct pollfd){ ui_worker_fd(a->pn[k].worker), POLLIN, 0 };
    while (!a->quit && !sigexit_caught()) {
        pace_tick(a);
        if (redraw(a, e)) return UM_FAIL;
        int timeout = -1;
        if (a->message_until > 0) {
            double left = a->message_until - um_now();
            timeout = left > 0 ? (int)(left * 1000) + 10 : -1;
            if (left <= 0) a->message_until = 0;
        }
        if (a->paused && timeout < 0) timeout = 250;    /* "finishing step" turns into PAUSED */
        if (a->follow && !a->paused && newest(a) >= 0) {   /* the next paced step */
            int due = ui_pace_wait_ms(&a->pace, UM_MIN(a->shown, newest(a)), newest(a), um_now());
            if (due >= 0 && (timeout < 0 || due < timeout)) timeout = due;
        }
        for (int k = 0; k < a->n_panes; k++) ui_worker_set_horizon(a->pn[k].worker, ui_pace_horizon(&a->pace, a->shown));
        int r = poll(fds, (nfds_t)(2 + a->n_panes), timeout);
        if (r < 0 && errno != EINTR) return um_errf(e, "poll: %s", strerror(errno));
        if (r > 0) drain_worker(a);
        /* keys are read without blocking on every wake-up: a SIGWINCH interrupts poll and
         * curses reports the new size only through get_wch (KEY_RESIZE) */
        read_keys(a);
        if (r > 0 && (fds[0].revents & (POLLHUP | POLLERR | POLLNVAL))) a->quit = true;
    }
    return UM_OK;
}

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
    app *a = um_calloc(1, sizeof *a);
    um_err e = { "" };
    int rc = 1;
    if (!a) { fprintf(stderr, "unmask: out of memory\n"); return 1; }
    a->cursor = -1;
    a->follow = true;
    ui_pace_init(&a->pace, fe.pace_set ? fe.pace_ms : UI_PACE_DEFAULT_MS, um_now());
    a->rec_step = -1;
    a->heat = (view_heat)fe.heat;
    a->layout = (view_layout)feopts_layout(&fe, g.have_preset ? g.pre.layout : NULL);
    a->prompt = strdup(prompt);
    if (!a->prompt) { fprintf(stderr, "unmask: out of memory\n"); free(a); return 1; }
    a->th = th;
    for (int i = 0; i < theme_cycle_len; i++)
        if (!strcmp(theme_cycle[i], a->th.name)) a->theme_idx = i;
    /* one source per pane: each engine maps the same model file (docs/ui.md "Compare": the
     * weights' pages are shared, each engine's working buffers are not) */
    g.eng.progress = load_progress;
    g.eng.warn = keep_warning;
    for (int k = 0; k <= cmp->n; k++) {
        pane *p = &a->pn[k];
        int orc = !demo ? engine_source_open(&p->src, &g.eng, &e)   /* --demo-ui --gpu: as the CUDA backend */
                : g.eng.gpu ? fake_source_open_nocache(&p->src, (int)fe.delay_ms, &e)
                : fake_source_open(&p->src, (int)fe.delay_ms, &e);
        if (orc) { fprintf(stderr, "unmask: %s\n", e.msg); goto close_sources; }
        a->n_panes = k + 1;
        p->settings = p->src.defaults;
        genopts_apply(&g, &p->settings);
        if (k > 0) genopts_apply(&cmp->g[k - 1], &p->settings);
        snprintf(p->label, sizeof p->label, "%s", k ? cmp->label[k - 1] : "main");
        g.eng.progress = NULL;                      /* the load is reported once */
    }

    /* graceful signals end the loop from here on (before curses, which keeps them) */
    if (sigexit_install(SIGEXIT_FLAG, &e)) { fprintf(stderr, "unmask: %s\n", e.msg); goto close_src; }
    int n_workers = 0;
    if (draw_curses_open(fe.depth, &a->depth, &e)) { fprintf(stderr, "unmask: %s\n", e.msg); goto close_src; }
    if (fe.gif || fe.cast) {                    /* the size is known once curses runs */
        int w, h;
        draw_curses_size(&w, &h);
        recorder_opts o = rec_opts(a, UM_MAX(1, w), UM_MAX(1, h));
        o.gif_path = fe.gif;
        o.cast_path = fe.cast;
        if (recorder_open(&a->rec_cli, &o, &e)) {
            draw_curses_close();
            fprintf(stderr, "unmask: %s\n", e.msg);
            goto close_src;
        }
    }
    a->paused = fe.paused;
    for (; n_workers < a->n_panes; n_workers++) {
        pane *p = &a->pn[n_workers];
        if (ui_worker_open(&p->worker, &p->src, &p->settings, a->prompt, !fe.paused, &e)) {
            draw_curses_close();
            fprintf(stderr, "unmask: %s\n", e.msg);
            goto close_workers;
        }
    }
    rc = run_loop(a, &e) == UM_OK ? 0 : 1;
    draw_curses_close();                            /* terminal first: the worker may be mid-step */
    pthread_mutex_lock(&g_warn_lock);
    if (g_warn[0]) fprintf(stderr, "unmask: warning: %s\n", g_warn);
    pthread_mutex_unlock(&g_warn_lock);
    if (rc) fprintf(stderr, "unmask: %s\n", e.msg);
    if (a->rec_key) {
        rec_key_stop(a, false);
        fprintf(stderr, "unmask: %s\n", a->message);
    }
    if (a->rec_cli) {
        um_err re = { "" };
        if (recorder_close(a->rec_cli, recorder_elapsed(a->rec_cli), &re)) {
            fprintf(stderr, "unmask: recording: %s\n", re.msg);
            if (!rc) rc = 1;
        }
        a->rec_cli = NULL;
    }
    if (a->rec_cli_lost[0]) {                       /* the files asked for were not written */
        fprintf(stderr, "unmask: recording: %s\n", a->rec_cli_lost);
        if (!rc) rc = 1;
    }
    drain_worker(a);                                /* an error that arrived with the quit */
    for (int k = 0; k < a->n_panes; k++)            /* last: the lines that explain the status */
        if (a->pn[k].error[0]) {
            if (a->n_panes > 1) fprintf(stderr, "unmask: pane %d (%s): %s\n", k + 1, a->pn[k].label, a->pn[k].error);
            else fprintf(stderr, "unmask: %s\n", a->pn[k].error);
            rc = 1;
        }
    if (sigexit_caught()) rc = 128 + sigexit_caught();
close_workers:
    for (int k = 0; k < n_workers; k++) {
        ui_worker_close(a->pn[k].worker);
        hist_clear(&a->pn[k]);
    }
close_src:
    sigexit_uninstall();
close_sources:
    for (int k = 0; k < a->n_panes; k++) a->pn[k].src.close(a->pn[k].src.self);
    free(a->prompt);
    free(a->edit);
    for (int k = 0; k < a->n_panes; k++) free(a->pn[k].hist);
    free(a->rf.cells);
    frame_free(&a->fr);
    view_ctx_free(&a->vc);
    free(a);
    return rc;
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
