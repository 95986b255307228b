/*
 * ctl_keys: what each key does (ui/keys.c's table maps keys to actions; act() is the one
 * place an action changes the controller's state) and the one-line prompt editor.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <curses.h>

#include "ctl_state.h"
#include "draw_curses.h"
#include "heat.h"
#include "schedule.h"

static void set_paused(ctl *a, bool paused) {
    a->paused = paused;
    ctl_set_running_all(a, !paused);
    if (!paused) {          /* after a scrub: back to the live step; else playback goes on */
        if (!a->follow && ctl_newest(a) >= 0) a->shown = ctl_newest(a);
        a->follow = true;
        ui_pace_mark(&a->pace, um_now());
    }
}

/* A settings change: from the next step when the source can, else a restart (always while
 * an error stands: there is no run to change). */
static void change(ctl *a, um_settings next, const char *what) {
    ctl_pane *p = &a->pn[a->focus];
    bool restart = p->error[0] || p->src.needs_restart(&p->settings, &next);
    p->settings = next;
    if (restart) {
        ui_worker_restart(p->worker, &p->settings, a->prompt);
        ctl_say(a, "%s: restarted", what);
    } else {
        ui_worker_apply(p->worker, &p->settings);
        ctl_say(a, "%s: from the next step", what);
    }
}

/* The focused pane's run as a view_state (for view_focus). */
static view_state focus_view(const ctl *a) {
    const ctl_pane *p = &a->pn[a->focus];
    return (view_state){ .hist = p->hist, .n_hist = p->n_hist, .shown = UM_MIN(a->shown, p->n_hist - 1), .cursor = a->cursor };
}

static void move_vertical(ctl *a, int dir) {
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

static void next_theme(ctl *a) {
    um_err e = { "" };
    for (int tries = 0; tries < theme_cycle_len; tries++) {
        a->theme_idx = (a->theme_idx + 1) % theme_cycle_len;
        theme t;
        if (theme_load(&t, theme_cycle[a->theme_idx], &e) == UM_OK) {
            a->th = t;
            draw_curses_reset_colors();
            ctl_say(a, "theme: %s", a->th.name);
            return;
        }
        ctl_say(a, "%s", e.msg);
    }
}

static void act(ctl *a, ui_action action) {
    um_settings n = a->pn[a->focus].settings;
    char what[128];
    int32_t last = ctl_newest(a);
    switch (action) {
    case UI_ACT_QUIT:  a->quit = true; break;
    case UI_ACT_HELP:  a->help = !a->help; a->help_page = 0; break;
    case UI_ACT_INSPECTOR:   a->hide_inspector = !a->hide_inspector; break;
    case UI_ACT_SCHED_PANEL: a->hide_schedule = !a->hide_schedule; break;
    case UI_ACT_PAUSE: set_paused(a, !a->paused); break;
    case UI_ACT_STEP:
        if (!a->paused) { set_paused(a, true); ctl_say(a, "paused: n steps once"); break; }
        if (a->shown < last) { a->shown++; a->follow |= a->shown == last; break; }
        a->follow = true;
        ctl_step_once_all(a);
        break;
    case UI_ACT_BACK:
        if (!a->paused) set_paused(a, true);
        if (a->shown > 0) a->shown--;
        a->follow = false;
        break;
    case UI_ACT_FORWARD:
        if (a->shown < last) { a->shown++; a->follow |= a->shown == last; ui_pace_mark(&a->pace, um_now()); }
        else if (a->paused) { a->follow = true; ctl_step_once_all(a); }
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
            ctl_say(a, "cache refused: the %s backend runs no partial forward passes", a->pn[a->focus].src.info.backend);
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
        ctl_restart_all(a);
        ctl_say(a, "restarted, seed %llu", (unsigned long long)a->pn[0].settings.seed);
        break;
    case UI_ACT_EDIT: {
        size_t len = strlen(a->prompt), need = len + CTL_PROMPT_MAX;     /* room to type */
        if (need > a->edit_cap) {
            char *b = realloc(a->edit, need);
            if (!b) { ctl_say(a, "out of memory for the prompt editor"); break; }
            a->edit = b;
            a->edit_cap = need;
        }
        memcpy(a->edit, a->prompt, len + 1);
        a->editing = true;
        break;
    }
    case UI_ACT_HEAT:
        a->heat = (view_heat)((a->heat + 1) % VIEW_HEAT_COUNT);
        ctl_say(a, "heat: %s", ui_heat_names[a->heat]);
        break;
    case UI_ACT_LAYOUT:
        a->layout = (view_layout)((a->layout + 1) % VIEW_LAYOUT_COUNT);
        ctl_say(a, "layout: %s", view_layout_keys[a->layout]);
        break;
    case UI_ACT_THEME: next_theme(a); break;
    case UI_ACT_RECORD:
        ctl_rec_key_toggle(a);
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
        if (a->n_panes > 1) ctl_say(a, "focus: pane %d (%s)", a->focus + 1, a->pn[a->focus].label);
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
static void edit_key(ctl *a, int kind, wint_t ch) {
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
    if (!p) { ctl_say(a, "out of memory: prompt unchanged"); return; }
    free(a->prompt);
    a->prompt = p;
    ctl_restart_all(a);
    ctl_say(a, "new prompt: restarted");
}

void ctl_read_keys(ctl *a) {
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
        if (a->help && ((kind == OK && ch == ' ') || (kind == KEY_CODE_YES && ch == KEY_NPAGE))) { a->help_page++; continue; }
        if (a->help && !(kind == OK && (ch == '?' || ch == 27 || ch == 'q'))) { a->help = false; continue; }
        act(a, ui_key_action((int)ch));
    }
}
