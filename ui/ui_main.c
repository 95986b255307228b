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
 * view moves to each new snapshot as it arrives.
 */
#include <errno.h>
#include <getopt.h>
#include <locale.h>
#include <math.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <curses.h>

#include "draw_curses.h"
#include "fake_source.h"
#include "keys.h"
#include "models_conf.h"
#include "ui_main.h"
#include "view.h"
#include "worker.h"

#define MESSAGE_SECONDS 4.0
#define PROMPT_MAX      4096
#define DEFAULT_PROMPT  "Explain diffusion language models in one paragraph."

typedef struct app {
    ui_source     src;
    ui_worker    *worker;
    um_snapshot **hist;            /* (n_hist) this run's snapshots, hist[k] is step k */
    int32_t       n_hist, cap_hist;
    int32_t       shown;
    bool          follow;
    um_settings   settings;        /* what the next start/apply uses */
    char          prompt[PROMPT_MAX];
    theme         th;
    int           theme_idx;
    int           depth;
    view_heat     heat;
    int32_t       cursor;
    bool          paused, help, editing, quit;
    char          edit[PROMPT_MAX];
    char          message[512];
    double        message_until;
    frame         fr;
    view_ctx      vc;
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

static void hist_clear(app *a) {
    for (int32_t i = 0; i < a->n_hist; i++) a->src.release(a->hist[i]);
    a->n_hist = 0;
    a->shown = 0;
}

static int hist_push(app *a, um_snapshot *s) {
    if (a->n_hist == a->cap_hist) {
        int32_t cap = a->cap_hist ? a->cap_hist * 2 : 64;
        um_snapshot **h = realloc(a->hist, (size_t)cap * sizeof *h);
        if (!h) { a->src.release(s); say(a, "out of memory: snapshot dropped"); return UM_FAIL; }
        a->hist = h;
        a->cap_hist = cap;
    }
    a->hist[a->n_hist++] = s;
    if (a->follow) a->shown = a->n_hist - 1;
    return UM_OK;
}

static void drain_worker(app *a) {
    ui_event ev;
    while (ui_worker_take(a->worker, &ev)) {
        switch (ev.kind) {
        case UI_EV_RESTARTED:
            hist_clear(a);
            a->follow = true;
            hist_push(a, ev.snap);
            break;
        case UI_EV_SNAPSHOT:
            hist_push(a, ev.snap);
            break;
        case UI_EV_APPLIED:
            break;
        case UI_EV_ERROR:
            a->paused = true;
            say(a, "error: %s", ev.msg);
            break;
        }
    }
}

/* ------------------------------------------------------------------ actions */

static void set_paused(app *a, bool paused) {
    a->paused = paused;
    ui_worker_set_running(a->worker, !paused);
    if (!paused) {                                   /* resuming continues from live */
        a->follow = true;
        if (a->n_hist) a->shown = a->n_hist - 1;
    }
}

/* A settings change: from the next step when the source can, else a restart. */
static void change(app *a, um_settings next, const char *what) {
    bool restart = a->src.needs_restart(&a->settings, &next);
    a->settings = next;
    if (restart) {
        ui_worker_restart(a->worker, &a->settings, a->prompt);
        say(a, "%s: restarted", what);
    } else {
        ui_worker_apply(a->worker, &a->settings);
        say(a, "%s: from the next step", what);
    }
}

static void move_vertical(app *a, int dir) {
    view_state tmp = { .hist = a->hist, .n_hist = a->n_hist, .shown = a->shown, .cursor = a->cursor };
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
    um_settings n = a->settings;
    char what[128];
    int32_t last = a->n_hist - 1;
    switch (action) {
    case UI_ACT_QUIT:  a->quit = true; break;
    case UI_ACT_HELP:  a->help = !a->help; break;
    case UI_ACT_PAUSE: set_paused(a, !a->paused); break;
    case UI_ACT_STEP:
        if (!a->paused) { set_paused(a, true); say(a, "paused: n steps once"); break; }
        if (a->shown < last) { a->shown++; a->follow = a->shown == last; break; }
        a->follow = true;
        ui_worker_step_once(a->worker);
        break;
    case UI_ACT_BACK:
        if (!a->paused) set_paused(a, true);
        if (a->shown > 0) a->shown--;
        a->follow = false;
        break;
    case UI_ACT_FORWARD:
        if (a->shown < last) { a->shown++; a->follow = a->shown == last; }
        else if (a->paused) { a->follow = true; ui_worker_step_once(a->worker); }
        break;
    case UI_ACT_FIRST:
        if (!a->paused) set_paused(a, true);
        a->shown = 0;
        a->follow = false;
        break;
    case UI_ACT_LIVE:
        if (last >= 0) a->shown = last;
        a->follow = true;
        break;
    case UI_ACT_SCHEDULE:
        n.schedule = (um_schedule)((n.schedule + 1) % UM_SCHED_COUNT);
        snprintf(what, sizeof what, "schedule %s", view_schedule_names[n.schedule]);
        change(a, n, what);
        break;
    case UI_ACT_SCORING:
        n.score = (um_score)((n.score + 1) % UM_SCORE_COUNT);
        snprintf(what, sizeof what, "scoring %s", view_score_names[n.score]);
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
    case UI_ACT_RESTART:
    case UI_ACT_RESEED:
        if (action == UI_ACT_RESEED) a->settings.seed = (a->settings.seed * 1103515245ull + 12345ull) % 1000000ull;
        ui_worker_restart(a->worker, &a->settings, a->prompt);
        say(a, "restarted, seed %llu", (unsigned long long)a->settings.seed);
        break;
    case UI_ACT_EDIT:
        a->editing = true;
        snprintf(a->edit, sizeof a->edit, "%s", a->prompt);
        break;
    case UI_ACT_HEAT:
        a->heat = (view_heat)((a->heat + 1) % VIEW_HEAT_COUNT);
        say(a, "heat: %s", view_heat_names[a->heat]);
        break;
    case UI_ACT_THEME: next_theme(a); break;
    case UI_ACT_LEFT:
    case UI_ACT_RIGHT: {
        view_state tmp = { .hist = a->hist, .n_hist = a->n_hist, .shown = a->shown, .cursor = a->cursor };
        int32_t f = view_focus(&tmp);
        if (f < 0) break;
        int32_t max = a->hist[a->shown]->n_canvas - 1;
        a->cursor = UM_MAX(0, UM_MIN(max, f + (action == UI_ACT_RIGHT ? 1 : -1)));
        break;
    }
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
    if (len + (size_t)n + 1 < sizeof a->edit) {
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
    snprintf(a->prompt, sizeof a->prompt, "%s", a->edit);
    ui_worker_restart(a->worker, &a->settings, a->prompt);
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
    view_state v = {
        .src = &a->src, .hist = a->hist, .n_hist = a->n_hist, .shown = a->shown, .th = &a->th,
        .depth = a->depth, .heat = a->heat, .cursor = a->cursor, .paused = a->paused,
        .busy = a->paused && ui_worker_busy(a->worker), .help = a->help,
        .message = um_now() < a->message_until ? a->message : NULL,
        .edit = a->editing ? a->edit : NULL,
    };
    if (view_build(&a->vc, &a->fr, &v, e)) return UM_FAIL;
    draw_curses_frame(&a->fr);
    return UM_OK;
}

static int run_loop(app *a, um_err *e) {
    struct pollfd fds[2] = { { STDIN_FILENO, POLLIN, 0 }, { ui_worker_fd(a->worker), POLLIN, 0 } };
    while (!a->quit && !draw_curses_quit_signal()) {
        if (redraw(a, e)) return UM_FAIL;
        int timeout = -1;
        if (a->message_until > 0) {
            double left = a->message_until - um_now();
            timeout = left > 0 ? (int)(left * 1000) + 10 : -1;
            if (left <= 0) a->message_until = 0;
        }
        if (a->paused && timeout < 0) timeout = 250;    /* "finishing step" turns into PAUSED */
        int r = poll(fds, 2, timeout);
        if (r < 0 && errno != EINTR) return um_errf(e, "poll: %s", strerror(errno));
        if (r <= 0) continue;
        if (fds[1].revents & POLLIN) drain_worker(a);
        if (fds[0].revents & (POLLIN | POLLHUP)) read_keys(a);
        if (fds[0].revents & (POLLHUP | POLLERR | POLLNVAL)) a->quit = true;
    }
    return UM_OK;
}

/* ------------------------------------------------------------------ options */

static void usage(FILE *f) {
    fprintf(f,
        "usage: unmask [OPTIONS]        the live visualizer (needs a terminal)\n"
        "  -m, --model FILE       GGUF model to run\n"
        "  -M, --preset NAME      a models.conf preset: model path and default settings\n"
        "      --list-models      list the presets of models.conf and whether their files exist\n"
        "  -p, --prompt TEXT      prompt (default: \"" DEFAULT_PROMPT "\")\n"
        "  -n, --gen N            tokens to generate\n"
        "  -s, --steps N          denoising steps\n"
        "  -b, --block N          block length (block and threshold schedules)\n"
        "      --schedule NAME    block | timestep | threshold\n"
        "      --scoring NAME     confidence | margin | entropy | random | origin\n"
        "  -t, --temperature T    0 = greedy\n"
        "      --seed N\n"
        "      --threads N\n"
        "      --theme NAME|FILE  viridis (default) magma inferno cividis high-contrast mono, or a .theme file\n"
        "      --color MODE       auto | 24bit | 256 | 8 | none (NO_COLOR is honoured)\n"
        "      --heat MODE        commit | live | order | entropy\n"
        "      --paused           start paused at step 0\n"
        "      --ui-help          this help\n"
        "Flags override the preset. Press ? in the visualizer for the keys.\n"
        "Testing: --demo-ui runs a synthetic denoiser instead of a model; --delay-ms N sets its step time.\n");
}

static int list_models(void) {
    char path[2048];
    if (!models_conf_find(path, sizeof path)) {
        printf("no models.conf found (looked in ./, $XDG_CONFIG_HOME/unmask/ or ~/.config/unmask/, %s/share/unmask/)\n", UM_PREFIX);
        return 0;
    }
    models_conf mc;
    um_err e = { "" };
    if (models_conf_load(&mc, path, &e)) { fprintf(stderr, "unmask: %s\n", e.msg); return 1; }
    printf("presets in %s:\n", path);
    for (int i = 0; i < mc.n; i++) {
        const models_preset *p = &mc.presets[i];
        struct stat st;
        bool ok = stat(p->path, &st) == 0 && S_ISREG(st.st_mode);
        printf("  %-16s %-8s %s\n", p->name, ok ? "present" : "MISSING", p->path);
    }
    models_conf_free(&mc);
    return 0;
}

static int parse_long(const char *s, long lo, long hi, const char *what, long *out) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi) {
        fprintf(stderr, "unmask: %s must be an integer %ld..%ld, got '%s'\n", what, lo, hi, s);
        return UM_FAIL;
    }
    *out = v;
    return UM_OK;
}

enum { OPT_LIST = 1000, OPT_SCHED, OPT_SCORE, OPT_SEED, OPT_THREADS, OPT_THEME, OPT_COLOR, OPT_HEAT,
       OPT_PAUSED, OPT_DEMO, OPT_DELAY, OPT_HELP };

int ui_main(int argc, char **argv) {
    static const struct option opts[] = {
        { "model", required_argument, 0, 'm' },     { "preset", required_argument, 0, 'M' },
        { "prompt", required_argument, 0, 'p' },    { "gen", required_argument, 0, 'n' },
        { "steps", required_argument, 0, 's' },     { "block", required_argument, 0, 'b' },
        { "temperature", required_argument, 0, 't' }, { "list-models", no_argument, 0, OPT_LIST },
        { "schedule", required_argument, 0, OPT_SCHED }, { "scoring", required_argument, 0, OPT_SCORE },
        { "seed", required_argument, 0, OPT_SEED }, { "threads", required_argument, 0, OPT_THREADS },
        { "theme", required_argument, 0, OPT_THEME }, { "color", required_argument, 0, OPT_COLOR },
        { "heat", required_argument, 0, OPT_HEAT }, { "paused", no_argument, 0, OPT_PAUSED },
        { "demo-ui", no_argument, 0, OPT_DEMO },    { "delay-ms", required_argument, 0, OPT_DELAY },
        { "ui-help", no_argument, 0, OPT_HELP },    { 0, 0, 0, 0 },
    };
    const char *model = NULL, *preset_name = NULL, *prompt = DEFAULT_PROMPT, *theme_name = "viridis";
    long gen = -1, steps = -1, block = -1, seed = -1, threads = 0, delay = 300;
    int sched = -1, score = -1, want_depth = -1, heat = 0;
    float temp = NAN;
    bool demo = false, start_paused = false;
    int c;
    setlocale(LC_ALL, "");
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":m:M:p:n:s:b:t:", opts, NULL)) != -1) {
        switch (c) {
        case 'm': model = optarg; break;
        case 'M': preset_name = optarg; break;
        case 'p': prompt = optarg; break;
        case 'n': if (parse_long(optarg, 1, 4096, "--gen", &gen)) return 2; break;
        case 's': if (parse_long(optarg, 1, 4096, "--steps", &steps)) return 2; break;
        case 'b': if (parse_long(optarg, 1, 4096, "--block", &block)) return 2; break;
        case 't': {
            char *end;
            temp = strtof(optarg, &end);
            if (end == optarg || *end || !(temp >= 0 && temp <= 100)) {
                fprintf(stderr, "unmask: --temperature must be a number 0..100, got '%s'\n", optarg);
                return 2;
            }
            break;
        }
        case OPT_LIST: return list_models();
        case OPT_SCHED:
            if ((sched = models_schedule_from_name(optarg)) < 0) {
                fprintf(stderr, "unmask: unknown schedule '%s' (block, timestep, threshold)\n", optarg);
                return 2;
            }
            break;
        case OPT_SCORE:
            if ((score = models_score_from_name(optarg)) < 0) {
                fprintf(stderr, "unmask: unknown scoring '%s' (confidence, margin, entropy, random, origin)\n", optarg);
                return 2;
            }
            break;
        case OPT_SEED: if (parse_long(optarg, 0, 2147483647L, "--seed", &seed)) return 2; break;
        case OPT_THREADS: if (parse_long(optarg, 1, 1024, "--threads", &threads)) return 2; break;
        case OPT_THEME: theme_name = optarg; break;
        case OPT_COLOR:
            if (!strcmp(optarg, "auto")) want_depth = -1;
            else if (!strcmp(optarg, "24bit")) want_depth = 16777216;
            else if (!strcmp(optarg, "256")) want_depth = 256;
            else if (!strcmp(optarg, "8")) want_depth = 8;
            else if (!strcmp(optarg, "none")) want_depth = 0;
            else { fprintf(stderr, "unmask: --color must be auto, 24bit, 256, 8 or none\n"); return 2; }
            break;
        case OPT_HEAT: {
            static const char *const hn[] = { "commit", "live", "order", "entropy" };
            heat = -1;
            for (int i = 0; i < 4; i++) if (!strcmp(optarg, hn[i])) heat = i;
            if (heat < 0) { fprintf(stderr, "unmask: --heat must be commit, live, order or entropy\n"); return 2; }
            break;
        }
        case OPT_PAUSED: start_paused = true; break;
        case OPT_DEMO: demo = true; break;
        case OPT_DELAY: if (parse_long(optarg, 0, 60000, "--delay-ms", &delay)) return 2; break;
        case OPT_HELP: usage(stdout); return 0;
        case ':': fprintf(stderr, "unmask: option '%s' needs a value\n", argv[optind - 1]); return 2;
        default:  fprintf(stderr, "unmask: unknown option '%s' (see unmask --ui-help)\n", argv[optind - 1]); return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "unmask: unexpected argument '%s' (see unmask --ui-help)\n", argv[optind]);
        return 2;
    }

    /* preset: path and defaults, flags win */
    models_conf mc = { .n = 0 };
    const models_preset *pre = NULL;
    if (preset_name) {
        char path[2048];
        um_err e = { "" };
        if (!models_conf_find(path, sizeof path)) {
            fprintf(stderr, "unmask: -M %s: no models.conf found (see unmask --ui-help)\n", preset_name);
            return 1;
        }
        if (models_conf_load(&mc, path, &e)) { fprintf(stderr, "unmask: %s\n", e.msg); return 1; }
        if (!(pre = models_conf_get(&mc, preset_name))) {
            fprintf(stderr, "unmask: no preset [%s] in %s (unmask --list-models lists them)\n", preset_name, path);
            models_conf_free(&mc);
            return 1;
        }
        if (!model) model = pre->path;
    }
    if (!model && !demo) {
        fprintf(stderr, "unmask: no model: give -m FILE or -M PRESET (unmask --list-models), or --demo-ui for a synthetic demo\n");
        models_conf_free(&mc);
        return 2;
    }
    theme th;                                       /* config errors first, then the tty */
    um_err te = { "" };
    if (theme_load(&th, theme_name, &te)) {
        fprintf(stderr, "unmask: %s\n", te.msg);
        models_conf_free(&mc);
        return 1;
    }
    if (!isatty(STDOUT_FILENO) || !isatty(STDIN_FILENO)) {
        fprintf(stderr, "unmask: the visualizer needs a terminal (stdin and stdout); for plain text output use `unmask generate`\n");
        models_conf_free(&mc);
        return 1;
    }

    app *a = um_calloc(1, sizeof *a);
    um_err e = { "" };
    int rc = 1;
    if (!a) { fprintf(stderr, "unmask: out of memory\n"); models_conf_free(&mc); return 1; }
    a->cursor = -1;
    a->follow = true;
    a->heat = (view_heat)heat;
    snprintf(a->prompt, sizeof a->prompt, "%s", prompt);
    a->th = th;
    for (int i = 0; i < theme_cycle_len; i++)
        if (!strcmp(theme_cycle[i], a->th.name)) a->theme_idx = i;
    if (demo ? fake_source_open(&a->src, (int)delay, &e) : engine_source_open(&a->src, model, (int)threads, &e)) {
        fprintf(stderr, "unmask: %s\n", e.msg);
        goto out;
    }
    um_settings *s = &a->settings;
    *s = a->src.defaults;
    if (pre) {
        if (pre->gen > 0) s->n_gen = pre->gen;
        if (pre->steps > 0) s->steps = pre->steps;
        if (pre->block > 0) s->block_len = pre->block;
        if (pre->schedule >= 0) s->schedule = (um_schedule)pre->schedule;
        if (pre->scoring >= 0) s->score = (um_score)pre->scoring;
        if (!isnan(pre->temperature)) s->temperature = pre->temperature;
    }
    if (gen > 0) s->n_gen = (int32_t)gen;
    if (steps > 0) s->steps = (int32_t)steps;
    if (block > 0) s->block_len = (int32_t)block;
    if (sched >= 0) s->schedule = (um_schedule)sched;
    if (score >= 0) s->score = (um_score)score;
    if (!isnan(temp)) s->temperature = temp;
    if (seed >= 0) s->seed = (uint64_t)seed;
    if (s->block_len > s->n_gen) s->block_len = s->n_gen;

    if (draw_curses_open(want_depth, &a->depth, &e)) { fprintf(stderr, "unmask: %s\n", e.msg); goto close_src; }
    a->paused = start_paused;
    if (ui_worker_open(&a->worker, &a->src, s, a->prompt, !start_paused, &e)) {
        draw_curses_close();
        fprintf(stderr, "unmask: %s\n", e.msg);
        goto close_src;
    }
    rc = run_loop(a, &e) == UM_OK ? 0 : 1;
    if (rc == 0 && draw_curses_quit_signal()) rc = 128 + draw_curses_quit_signal();
    draw_curses_close();                            /* terminal first: the worker may be mid-step */
    ui_worker_close(a->worker);
    if (rc) fprintf(stderr, "unmask: %s\n", e.msg);
    hist_clear(a);
close_src:
    a->src.close(a->src.self);
out:
    free(a->hist);
    frame_free(&a->fr);
    view_ctx_free(&a->vc);
    free(a);
    models_conf_free(&mc);
    return rc;
}
