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
#include "summary.h"
#include "schedule.h"
#include "view_util.h"

/* What a score means, by the scoring rule: "p" (confidence), "margin", "-H", "u" (random). */
static const char *score_label(um_score sc) {
    switch (sc) {
    case UM_SCORE_MARGIN:  return "margin";
    case UM_SCORE_ENTROPY: return "-H";
    case UM_SCORE_RANDOM:
    case UM_SCORE_ORIGIN:  return "u";
    default:               return "p";
    }
}

void panel_why(const view_state *v, const um_snapshot *s, int32_t i, char *buf, size_t cap) {
    const um_pos *p = &s->pos[i];
    buf[0] = 0;
    if (p->is_prompt || p->masked || p->commit_step < 0) return;
    const um_snapshot *at = p->commit_step < v->n_hist ? v->hist[p->commit_step] : s;   /* the commit step */
    const um_settings *se = &at->settings;
    const um_why *w = &p->why;
    const char *sl = score_label(se->score);
    char of[96];
    snprintf(of, sizeof of, "rank %d of %d masked in block %d", w->rank, w->n_elig, w->block + 1);
    int n = 0;
    switch (w->rule) {
    case UM_WHY_COUNT:
        if (w->count >= w->n_elig) n = snprintf(buf, cap, "all %d masks left commit: the block's last step", w->n_elig);
        else n = snprintf(buf, cap, "%s, quota %d this step (%s %.2f)", of, w->count, sl, (double)w->score);
        break;
    case UM_WHY_SAMPLED:
        n = snprintf(buf, cap, "drawn by alg_temp %.2f: %s, quota %d", (double)se->alg_temp, of, w->count);
        break;
    case UM_WHY_RANDOM:
        n = snprintf(buf, cap, "origin: its coin fell below p_transfer %.2f (%d masked in block %d)", (double)w->bound,
                     w->n_elig, w->block + 1);
        break;
    case UM_WHY_THRESHOLD:
        n = snprintf(buf, cap, "%s %.2f >= threshold %.2f (%s)", sl, (double)w->score, (double)w->bound, of);
        break;
    case UM_WHY_QUOTA:
        n = snprintf(buf, cap, "%s %.2f < threshold %.2f, but %s and the step commits at least %d", sl,
                     (double)w->score, (double)w->bound, of, w->count);
        break;
    case UM_WHY_FACTOR:
        if (w->rank == 1 && w->score < w->bound)
            n = snprintf(buf, cap, "the best of %d masked: factor commits at least one (%s %.2f)", w->n_elig, sl, (double)w->score);
        else
            n = snprintf(buf, cap, "%s %.2f >= 1 - factor %.2f/(rank+1) = %.2f (%s)", sl, (double)w->score,
                         (double)se->factor, (double)w->bound, of);
        break;
    case UM_WHY_EB:
        n = snprintf(buf, cap, "entropy sum %.2f <= gamma %.2f (its H %.2f, %s; %d committed)", (double)w->value,
                     (double)w->bound, (double)w->score, of, w->committed);
        break;
    case UM_WHY_EOS:
        n = snprintf(buf, cap, "end of text: filled when the run stopped at one");
        break;
    default:
        return;
    }
    /* what sampling and guidance did to the pick: the committed token against the view's top */
    const um_pos *ap = &at->pos[i];
    if (n < 0 || (size_t)n >= cap || !ap->has_view || w->rule == UM_WHY_EOS) return;
    if (se->temperature > 0 && ap->top[0].token != p->token && p->n_edits == 0) {
        char raw[PIECE_MAX], label[PIECE_MAX * 2];
        size_t len = view_piece(v, ap->top[0].token, raw, sizeof raw);
        view_piece_label(raw, len, label, sizeof label);
        n += snprintf(buf + n, cap - (size_t)n, "; sampled at T %.2f, the top choice was %.40s p %.2f",
                      (double)se->temperature, label, (double)ap->top[0].prob);
    } else if (se->temperature > 0) {
        n += snprintf(buf + n, cap - (size_t)n, "; sampled at T %.2f", (double)se->temperature);
    }
    if (n >= 0 && (size_t)n < cap && se->cfg > 0)
        snprintf(buf + n, cap - (size_t)n, "; guidance cfg %.2f shaped these probabilities", (double)se->cfg);
}

/* The label of the candidates list: when they were computed. */
static void topk_label(const view_state *v, const um_snapshot *s, const um_pos *p, char *buf, size_t cap) {
    (void)v;
    if (p->view_step == s->step) snprintf(buf, cap, "top-%d at the shown step %d, H %.2f", UM_TOPK, s->step, p->entropy);
    else if (!p->masked && p->view_step == p->commit_step)
        snprintf(buf, cap, "top-%d at commit, step %d, H %.2f", UM_TOPK, p->view_step, p->entropy);
    else snprintf(buf, cap, "top-%d at step %d (not computed since), H %.2f", UM_TOPK, p->view_step, p->entropy);
}

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
    else if (p->us != UM_US_NONE) ui_summary_why_uniform(s, i, buf, sizeof buf);
    else if (p->masked) snprintf(buf, sizeof buf, "masked at step %d", s->step);
    else snprintf(buf, sizeof buf, "committed step %d, p %.3f%s", p->commit_step, p->commit_conf, p->fresh ? " (new)" : "");
    y = view_put_wrapped(f, x0, y, lim, y0 + h, buf, pn);
    char why[640];
    panel_why(v, s, i, why, sizeof why);
    if (why[0]) y = view_put_wrapped(f, x0, y, lim, y0 + h, why, pn);
    if (!p->masked && !p->is_prompt && p->n_edits > 0 && y < y0 + h) {
        /* token editing: the latest replacement, "edited at step S: OLD -> NEW" */
        char from[PIECE_MAX * 2], to[PIECE_MAX * 2];
        len = view_piece(v, p->edit_from, raw, sizeof raw);
        view_piece_label(raw, len, from, sizeof from);
        len = view_piece(v, p->token, raw, sizeof raw);
        view_piece_label(raw, len, to, sizeof to);
        char times[32] = "";
        if (p->n_edits > 1) snprintf(times, sizeof times, " (%d edits)", p->n_edits);
        const um_snapshot *es_at = p->edit_step < v->n_hist ? v->hist[p->edit_step] : s;
        snprintf(buf, sizeof buf, "edited at step %d: %.64s -> %.64s%s, p %.2f > edit threshold %.2f", p->edit_step, from,
                 to, times, (double)p->commit_conf, (double)es_at->settings.edit_threshold);
        frame_style es = pn;
        if (p->edited) {
            frame_style er = view_role(v, THEME_EDITED);
            es.attrs |= er.attrs;
            if (er.bg != FRAME_DEFAULT) es.bg = er.bg;
            if (v->depth == 0) es.attrs |= FRAME_REVERSE;
        }
        y = view_put_wrapped(f, x0, y, lim, y0 + h, buf, es);
    }
    if (y >= y0 + h) return;
    if (!p->has_view) {
        if (p->masked && s->step == 0)
            view_put_wrapped(f, x0, y, lim, y0 + h, "no candidates yet: step 0 is the canvas before any forward pass", dim);
        else if (p->masked && p->cached) /* the visualizer views every mask a pass computes */
            view_put_wrapped(f, x0, y, lim, y0 + h, "no candidates yet: this cached step recomputed only some "
                             "rows (the K/V cache held the rest), not this one; its block's steps will", dim);
        else if (p->masked)
            view_put_wrapped(f, x0, y, lim, y0 + h, "no candidates: this step computed no logits for this "
                             "position", dim);
        return;
    }
    topk_label(v, s, p, buf, sizeof buf);
    y = view_put_wrapped(f, x0, y, lim, y0 + h, buf, dim);
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

/* Did the decoding rule change between two steps' settings (what `s`, `a`, `+ -`, `b B` and
 * a new threshold, factor, gamma or eps change)? */
static bool rule_changed(const um_settings *a, const um_settings *b) {
    return a->schedule != b->schedule || a->score != b->score || a->steps != b->steps || a->block_len != b->block_len ||
           a->threshold != b->threshold || a->factor != b->factor || a->eb_gamma != b->eb_gamma || a->eps != b->eps ||
           a->alg_temp != b->alg_temp || a->block_steps != b->block_steps;
}

void panel_schedule_params(const um_settings *se, int w, char *buf, size_t cap) {
    char f[6][48];
    int nf = 0;
    const char *dot = " \xC2\xB7 ";
    switch (se->schedule) {
    case UM_SCHED_THRESHOLD: snprintf(f[nf++], sizeof f[0], "threshold %.2f", (double)se->threshold); break;
    case UM_SCHED_FACTOR:    snprintf(f[nf++], sizeof f[0], "factor %.2f", (double)se->factor); break;
    case UM_SCHED_EB:        snprintf(f[nf++], sizeof f[0], "gamma %.2f", (double)se->eb_gamma); break;
    case UM_SCHED_TIMESTEP:  snprintf(f[nf++], sizeof f[0], "steps %d", se->steps);
                             snprintf(f[nf++], sizeof f[0], "eps %.3g", (double)se->eps); break;
    default:                 snprintf(f[nf++], sizeof f[0], "steps %d", se->steps); break;
    }
    if (se->block_len > 0 && se->block_len < se->n_gen) snprintf(f[nf++], sizeof f[0], "block %d", se->block_len);
    else snprintf(f[nf++], sizeof f[0], "one block");
    if (se->schedule == UM_SCHED_THRESHOLD)
        snprintf(f[nf++], sizeof f[0], se->block_steps > 0 ? "quota B/%d" : "quota 1", se->block_steps);
    if (se->alg_temp > 0) snprintf(f[nf++], sizeof f[0], "alg_temp %.2f", (double)se->alg_temp);
    /* whole fields only, in priority order, while they fit */
    char out[256] = "";
    for (int k = 0; k < nf; k++) {
        char next[256];
        snprintf(next, sizeof next, "%.190s%s%.47s", out, out[0] ? dot : "", f[k]);
        if (ui_text_width(next) > w) break;
        memcpy(out, next, sizeof out);
    }
    snprintf(buf, cap, "%s", out);
}

void panel_schedule(view_ctx *cx, frame *f, const view_state *v, const um_snapshot *s, int x0, int y0, int w, int h) {
    frame_style pn = view_role(v, THEME_PANEL), ti = view_role(v, THEME_TITLE);
    frame_fill(f, x0, y0, w, h, pn);
    char buf[256];
    snprintf(buf, sizeof buf, "schedule  %s \xC2\xB7 %s", schedule_name(s->settings.schedule),
             schedule_score_name(s->settings.score));
    ui_text_puts(f, x0, y0, x0 + w, buf, ti);
    if (h < 5) return;
    panel_schedule_params(&s->settings, w, buf, sizeof buf);
    ui_text_puts(f, x0, y0 + 1, x0 + w, buf, pn);
    y0++;                                                        /* the chart below the parameters */
    h--;
    /* one column per step: recorded steps 1..n as bars (─ where the plan said more), then the
     * plan ahead as ░ columns; a window around the shown step when they do not all fit; ╎ on
     * top of a step whose settings changed the rule (schedule, scoring, its parameters) */
    int label_w = 5, cols = w - label_w - 1, chart_h = h - 3;      /* a free column at the right: the
                                                                    * marker never sits on the edge */
    /* while following, the steps up to the one shown: the worker runs ahead of the pace, and its
     * steps are not news yet (a recording gets one frame per step, not one per arrival too) */
    int32_t n = v->following ? UM_MIN(v->shown, v->n_hist - 1) : v->n_hist - 1, cur = s->step;
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
        if (k > 1 && rule_changed(&v->hist[k - 1]->settings, &hs->settings))
            frame_put_cluster(f, cx0, y0 + 1, x0 + w, "\xE2\x95\x8E", 1, view_role(v, THEME_MESSAGE), -1);
    }
    if (cur > 1 && cur <= n && rule_changed(&v->hist[cur - 1]->settings, &s->settings)) {
        const um_settings *was = &v->hist[cur - 1]->settings;
        snprintf(buf, sizeof buf, "step %d: %s -> %s", cur, schedule_name(was->schedule), schedule_name(s->settings.schedule));
        if (was->schedule == s->settings.schedule || ui_text_width(buf) > w)
            snprintf(buf, sizeof buf, "step %d: rule changed here", cur);
    } else if (n_future > 0) snprintf(buf, sizeof buf, "step %d: %d/%d committed, %d to go", cur, s->n_committed, s->planned, n_future);
    else snprintf(buf, sizeof buf, "step %d: %d/%d committed/planned", cur, s->n_committed, s->planned);
    ui_text_puts(f, x0, y0 + h - 1, x0 + w, buf, pn);
}

