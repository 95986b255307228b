/*
 * panels: the side panels of the view: the inspector (the position under the cursor: its
 * token, why it committed, the candidates) and the schedule (the steps as bars, the plan
 * ahead, the schedule's parameters). Each draws only inside the rectangle it is given.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heat.h"
#include "panels.h"
#include "schedule.h"
#include "view_util.h"

void panel_inspector(frame *f, const view_state *v, const um_snapshot *s, int x0, int y0, int w, int h) {
    frame_style pn = view_role(v, THEME_PANEL), ti = view_role(v, THEME_TITLE), dim = pn;
    dim.attrs |= FRAME_DIM;
    frame_fill(f, x0, y0, w, h, pn);
    int32_t i = view_focus(v);
    char buf[512], raw[PIECE_MAX], label[PIECE_MAX * 2];
    int y = y0, lim = x0 + w;
    if (i < 0) { ui_text_puts(f, x0, y, lim, "inspector", ti); return; }
    const um_pos *p = &s->pos[i];
    snprintf(buf, sizeof buf, "inspector  pos %d%s", i, v->cursor < 0 ? " (follows)" : "");
    ui_text_puts(f, x0, y++, lim, buf, ti);
    if (y >= y0 + h) return;
    bool ghost;
    frame_style tok = view_pos_style(v, s, i, &ghost);
    size_t len = view_piece(v, p->token, raw, sizeof raw);
    if (p->masked) {
        ui_text_puts(f, ui_text_puts(f, x0, y, lim, "token  ", pn), y, lim, v->th->mask_glyph, view_role(v, THEME_MASK));
    } else {
        view_piece_label(raw, len, label, sizeof label);
        int x = ui_text_puts(f, x0, y, lim, "token  ", pn);
        ui_text_puts(f, x, y, lim, label, tok);
    }
    if (++y >= y0 + h) return;
    if (p->is_prompt) snprintf(buf, sizeof buf, "prompt token");
    else if (p->masked) snprintf(buf, sizeof buf, "masked at step %d", s->step);
    else snprintf(buf, sizeof buf, "committed step %d, p %.3f%s", p->commit_step, p->commit_conf, p->fresh ? " (new)" : "");
    ui_text_puts(f, x0, y++, lim, buf, pn);
    if (!p->masked && !p->is_prompt && p->n_edits > 0 && y < y0 + h) {
        /* token editing: the latest replacement, "edited at step S: OLD -> NEW" */
        char from[PIECE_MAX * 2], to[PIECE_MAX * 2];
        len = view_piece(v, p->edit_from, raw, sizeof raw);
        view_piece_label(raw, len, from, sizeof from);
        len = view_piece(v, p->token, raw, sizeof raw);
        view_piece_label(raw, len, to, sizeof to);
        char times[32] = "";
        if (p->n_edits > 1) snprintf(times, sizeof times, " (%d edits)", p->n_edits);
        snprintf(buf, sizeof buf, "edited at step %d: %.64s -> %.64s%s", p->edit_step, from, to, times);
        frame_style es = pn;
        if (p->edited) {
            frame_style er = view_role(v, THEME_EDITED);
            es.attrs |= er.attrs;
            if (er.bg != FRAME_DEFAULT) es.bg = er.bg;
            if (v->depth == 0) es.attrs |= FRAME_REVERSE;
        }
        ui_text_puts(f, x0, y++, lim, buf, es);
    }
    if (!p->has_view || y >= y0 + h) return;
    snprintf(buf, sizeof buf, "top-%d at step %d, H %.2f nats", UM_TOPK, s->step, p->entropy);
    ui_text_puts(f, x0, y++, lim, buf, dim);
    int bar_w = w >= 30 ? 8 : 4;
    for (int k = 0; k < UM_TOPK && y < y0 + h; k++, y++) {
        const um_cand *cd = &p->top[k];
        if (cd->prob <= 0 && k > 0) break;
        len = view_piece(v, cd->token, raw, sizeof raw);
        view_piece_label(raw, len, label, sizeof label);
        int x = x0;
        snprintf(buf, sizeof buf, "%d ", k + 1);
        x = ui_text_puts(f, x, y, lim, buf, dim);
        int label_end = lim - bar_w - 7;
        ui_text_puts(f, x, y, label_end, label, ui_heat_style(v, cd->prob, pn));
        /* probability bar in eighths, then the value */
        int bx = label_end + 1, eighths = (int)lroundf(cd->prob * (float)(bar_w * 8));
        frame_style bs = ui_heat_style(v, cd->prob, view_role(v, THEME_BAR));
        for (int j = 0; j < bar_w; j++, eighths -= 8) {
            static const char *const part[9] = { " ", "\xE2\x96\x8F", "\xE2\x96\x8E", "\xE2\x96\x8D", "\xE2\x96\x8C",
                                                 "\xE2\x96\x8B", "\xE2\x96\x8A", "\xE2\x96\x89", "\xE2\x96\x88" };
            frame_put_cluster(f, bx + j, y, lim, part[eighths >= 8 ? 8 : eighths <= 0 ? 0 : eighths], 1, bs, -1);
        }
        snprintf(buf, sizeof buf, " %.3f", cd->prob);
        ui_text_puts(f, bx + bar_w, y, lim, buf, pn);
    }
}

/* ------------------------------------------------------------------ schedule */

/* The plan ahead: commit counts of the steps after the newest snapshot if nothing changes,
 * simulated with schedule_plan from its masks (committing the first masks of the active
 * block: which ones does not change the counts). None for the threshold schedule, whose
 * counts depend on the model. Returns the number of future steps in c->future. */
static int32_t plan_ahead(view_ctx *c, const um_snapshot *last, um_err *e) {
    int32_t n_gen = last->n_canvas - last->n_prompt;
    if (last->done || schedule_adaptive(last->settings.schedule) || n_gen <= 0) return 0;
    if (view_grow((void **)&c->sim_masked, sizeof *c->sim_masked, &c->sim_cap, n_gen, e)) return 0;
    int32_t max_steps = UM_MIN(4096, UM_MAX(last->settings.steps, 1) + n_gen);
    if (view_grow((void **)&c->future, sizeof *c->future, &c->future_cap, max_steps, e)) return 0;
    for (int32_t i = 0; i < n_gen; i++) c->sim_masked[i] = last->pos[last->n_prompt + i].masked;
    int32_t n = 0;
    for (int32_t step = last->step; n < max_steps; step++) {
        um_plan p;
        if (schedule_plan(&last->settings, 0, n_gen, c->sim_masked, step, &p, NULL) != UM_OK || p.done) break;
        c->future[n++] = p.count;
        for (int32_t i = p.start, k = 0; i < p.end && k < p.count; i++)
            if (c->sim_masked[i]) { c->sim_masked[i] = false; k++; }
    }
    return n;
}

void panel_schedule(view_ctx *cx, frame *f, const view_state *v, const um_snapshot *s, int x0, int y0, int w, int h) {
    frame_style pn = view_role(v, THEME_PANEL), ti = view_role(v, THEME_TITLE);
    frame_fill(f, x0, y0, w, h, pn);
    char buf[256];
    snprintf(buf, sizeof buf, "schedule  %s \xC2\xB7 %s", schedule_name(s->settings.schedule),
             schedule_score_name(s->settings.score));
    ui_text_puts(f, x0, y0, x0 + w, buf, ti);
    if (h < 4) return;
    /* one column per step: recorded steps 1..n as bars (─ where the plan said more), then the
     * plan ahead as ░ columns; a window around the shown step when they do not all fit */
    int label_w = 5, cols = w - label_w, chart_h = h - 3;
    int32_t n = v->n_hist - 1, cur = s->step;
    if (cols < 1 || n < 0) return;
    int32_t n_future = plan_ahead(cx, v->hist[n], NULL), total = n + n_future;
    int32_t first = 1;
    if (total > cols) first = UM_MAX(1, UM_MIN(cur - cols / 2, total - cols + 1));
    int maxv = 1;
    for (int32_t k = 1; k <= n; k++) maxv = UM_MAX(maxv, UM_MAX(v->hist[k]->n_committed, v->hist[k]->planned));
    for (int32_t j = 0; j < n_future; j++) maxv = UM_MAX(maxv, cx->future[j]);
    snprintf(buf, sizeof buf, "%d", maxv);
    ui_text_puts(f, x0, y0 + 1, x0 + label_w, buf, pn);
    ui_text_puts(f, x0, y0 + chart_h, x0 + label_w, "0", pn);
    static const char *const eighth[9] = { " ", "\xE2\x96\x81", "\xE2\x96\x82", "\xE2\x96\x83", "\xE2\x96\x84",
                                           "\xE2\x96\x85", "\xE2\x96\x86", "\xE2\x96\x87", "\xE2\x96\x88" };
    for (int c = 0; c < cols; c++) {
        int32_t k = first + c;
        if (k > total) break;
        int cx0 = x0 + label_w + c;
        if (k > n) {                                             /* planned, not yet run */
            int plan = cx->future[k - n - 1] * chart_h * 8 / maxv;
            for (int r = 0; r < chart_h && plan > r * 8; r++)
                frame_put_cluster(f, cx0, y0 + chart_h - r, x0 + w, "\xE2\x96\x91", 1, view_role(v, THEME_PLANNED), -1);
            continue;
        }
        const um_snapshot *hs = v->hist[k];
        int act = hs->n_committed * chart_h * 8 / maxv, plan = hs->planned * chart_h * 8 / maxv;
        frame_style bar = view_role(v, k == cur ? THEME_MARK : THEME_BAR);
        for (int r = 0; r < chart_h; r++) {                      /* r = 0 is the bottom row */
            int fill = act - r * 8, y = y0 + chart_h - r;
            if (fill > 0) frame_put_cluster(f, cx0, y, x0 + w, eighth[fill >= 8 ? 8 : fill], 1, bar, -1);
            else if (plan > r * 8 && plan <= (r + 1) * 8)          /* planned level above the bar */
                frame_put_cluster(f, cx0, y, x0 + w, "\xE2\x94\x80", 1, view_role(v, THEME_PLANNED), -1);
        }
        if (k == cur) frame_put_cluster(f, cx0, y0 + chart_h + 1, x0 + w, "\xE2\x96\xB2", 1, view_role(v, THEME_MARK), -1);
    }
    if (n_future > 0) snprintf(buf, sizeof buf, "step %d: %d/%d committed, %d to go", cur, s->n_committed, s->planned, n_future);
    else snprintf(buf, sizeof buf, "step %d: %d/%d committed/planned", cur, s->n_committed, s->planned);
    ui_text_puts(f, x0, y0 + h - 1, x0 + w, buf, pn);
}

