/*
 * heat: the heat modes' values, their styles and the legend (see heat.h).
 */
#include <math.h>
#include <stdio.h>

#include "heat.h"

const char *const ui_heat_names[VIEW_HEAT_COUNT] = {
    "confidence at commit", "live confidence", "commit order", "entropy", "K/V cache",
};
const char *const ui_heat_keys[VIEW_HEAT_COUNT] = { "commit", "live", "order", "entropy", "cache" };

#define RAMP_W 12                   /* legend: cells of the ramp */

static const char *const shade[4] = { "\xE2\x96\x91", "\xE2\x96\x92", "\xE2\x96\x93", "\xE2\x96\x88" };   /* ░▒▓█ */

static frame_style role(const view_state *v, theme_role r) { return v->th->role[r]; }

float ui_heat_value(const view_state *v, const um_snapshot *s, int32_t i) {
    const um_pos *p = &s->pos[i];
    if (v->heat == VIEW_HEAT_CACHE)                     /* the prompt's K/V are cached too */
        return s->passes > 0 ? (p->cached ? 0.0f : 1.0f) : NAN;
    if (p->is_prompt) return NAN;
    /* uniform-state: every position holds a token each step; its heat is the entropy the
       acceptance rule reads (the order mode keeps its meaning: the last step accepted) */
    if (p->us != UM_US_NONE && v->heat != VIEW_HEAT_ORDER) {
        if (p->us == UM_US_NOISE || p->us == UM_US_CUT || !p->has_view) return NAN;
        return 1.0f - fminf(p->entropy / UI_HEAT_ENTROPY_SCALE, 1.0f);
    }
    switch (v->heat) {
    case VIEW_HEAT_COMMIT:
        return p->masked ? NAN : p->commit_conf;
    case VIEW_HEAT_LIVE:
        if (p->masked) return p->has_view ? p->top[0].prob : NAN;
        return p->commit_conf;
    case VIEW_HEAT_ORDER:
        if (p->masked) return NAN;
        return s->n_steps > 1 ? (float)(p->commit_step - 1) / (float)(s->n_steps - 1) : 1.0f;
    case VIEW_HEAT_ENTROPY:
        if (!p->has_view) return p->masked ? NAN : p->commit_conf;
        return 1.0f - fminf(p->entropy / UI_HEAT_ENTROPY_SCALE, 1.0f);
    default:
        return NAN;
    }
}

frame_style ui_heat_style(const view_state *v, float h, frame_style base) {
    frame_style st = base;
    h = roundf(fminf(fmaxf(h, 0.0f), 1.0f) * 31.0f) / 31.0f;   /* 32 levels bound the colour pairs */
    if (v->depth == 0) {
        st.attrs &= (uint8_t)~(FRAME_DIM | FRAME_BOLD);
        st.attrs |= h < 1.0f / 3 ? FRAME_DIM : h > 2.0f / 3 ? FRAME_BOLD : 0;
        return st;
    }
    st.fg = theme_heat(v->th, h);
    if (v->depth <= 8 && h > 0.5f) st.attrs |= FRAME_BOLD;   /* doubles the 8 levels */
    return st;
}

/* One swatch of heat h: a solid block, or with 8 colours or none a shading glyph that carries
 * the value. Returns the next x. */
static int swatch(frame *f, const view_state *v, int x, int y, float h) {
    const char *g = v->depth > 8 ? shade[3] : shade[UM_MIN(3, (int)(h * 4))];
    return frame_put_cluster(f, x, y, f->w, g, 1, ui_heat_style(v, h, role(v, THEME_PANEL)), -1);
}

/* The cache mode's scale: recomputed and stale swatches, and why everything is one or none. */
static int cache_scale(frame *f, const view_state *v, const um_snapshot *s, int x, int y) {
    frame_style pn = role(v, THEME_PANEL);
    x = swatch(f, v, swatch(f, v, x, y, 1.0f), y, 1.0f);
    x = ui_text_puts(f, x + 1, y, f->w, "recomputed", pn) + 2;
    x = swatch(f, v, swatch(f, v, x, y, 0.0f), y, 0.0f);
    x = ui_text_puts(f, x + 1, y, f->w, "stale (cached K/V)", pn) + 2;
    const char *why = !s ? NULL : s->passes == 0 ? "(no forward pass at this step)"
                    : s->settings.cache == UM_CACHE_NONE ? "(cache off: every row recomputed)"
                    : s->cache_refreshed ? "(a refresh: every row recomputed)" : NULL;
    if (why && x + ui_text_width(why) <= f->w) x = ui_text_puts(f, x, y, f->w, why, pn) + 2;
    return x;
}

/* Does an item "MARK LABEL" fit whole from column x? (The legend leaves out what does not.) */
static bool room(const frame *f, int x, const char *mark, const char *label) {
    return x + ui_text_width(mark) + 1 + ui_text_width(label) <= f->w;
}

void ui_heat_legend(frame *f, const view_state *v, const um_snapshot *s, int y, bool grid) {
    frame_style pn = role(v, THEME_PANEL);
    frame_fill(f, 0, y, f->w, 1, pn);
    /* uniform-state: every mode but order and cache shows the rule's entropy */
    const bool us_entropy = s && s->us.on && v->heat != VIEW_HEAT_ORDER && v->heat != VIEW_HEAT_CACHE;
    int x = ui_text_puts(f, 1, y, f->w, us_entropy ? "entropy (the rule's)" : ui_heat_names[v->heat], role(v, THEME_TITLE)) + 1;
    if (v->heat == VIEW_HEAT_CACHE) {
        if (x + 48 > f->w) return;                          /* its scale needs the room */
        x = cache_scale(f, v, s, x, y);
    } else {
        char lo[32], hi[32];
        switch (v->heat) {
        case VIEW_HEAT_ORDER:   snprintf(lo, sizeof lo, "step 1"); snprintf(hi, sizeof hi, "step %d", s ? s->n_steps : 0); break;
        case VIEW_HEAT_ENTROPY: snprintf(lo, sizeof lo, "%.0f+ nats", (double)UI_HEAT_ENTROPY_SCALE); snprintf(hi, sizeof hi, "0 nats"); break;
        default:                snprintf(lo, sizeof lo, "p 0"); snprintf(hi, sizeof hi, "1"); break;
        }
        if (us_entropy) {
            snprintf(lo, sizeof lo, "H %.0f+ nats", (double)UI_HEAT_ENTROPY_SCALE);
            snprintf(hi, sizeof hi, "0");
        }
        if (x + ui_text_width(lo) + RAMP_W + ui_text_width(hi) + 2 > f->w) return;
        x = ui_text_puts(f, x, y, f->w, lo, pn) + 1;
        for (int j = 0; j < RAMP_W; j++) x = swatch(f, v, x, y, (float)j / (float)(RAMP_W - 1));
        x = ui_text_puts(f, x + 1, y, f->w, hi, pn) + 2;
    }
    if (s && s->us.on) {                                  /* uniform-state: the three kinds */
        static const struct { theme_role r; const char *label; } kinds[] = {
            { THEME_NOISE, "noise" }, { THEME_DRAFT, "draft" }, { THEME_ACCEPTED, "accepted" },
        };
        for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
            frame_style ks = kinds[k].r == THEME_NOISE ? role(v, THEME_NOISE) : ui_heat_style(v, 1.0f, role(v, THEME_TEXT));
            frame_style kr = role(v, kinds[k].r);
            if (kinds[k].r != THEME_NOISE) {
                ks.attrs |= kr.attrs | (kinds[k].r == THEME_ACCEPTED && v->depth == 0 ? FRAME_UNDERLINE : 0);
                if (kr.bg != FRAME_DEFAULT) ks.bg = kr.bg;
            }
            if (!room(f, x, "tok", kinds[k].label)) return;
            x = ui_text_puts(f, x, y, f->w, "tok", ks);
            x = ui_text_puts(f, x + 1, y, f->w, kinds[k].label, pn) + 2;
        }
    } else {
        if (!room(f, x, v->th->mask_glyph, "masked")) return;
        x = ui_text_puts(f, x, y, f->w, v->th->mask_glyph, role(v, THEME_MASK));
        x = ui_text_puts(f, x + 1, y, f->w, "masked", pn) + 2;
        frame_style fr = ui_heat_style(v, 1.0f, role(v, THEME_TEXT));
        fr.attrs |= role(v, THEME_FRESH).attrs;
        if (!room(f, x, "new", "this step")) return;
        x = ui_text_puts(f, x, y, f->w, "new", fr);
        x = ui_text_puts(f, x + 1, y, f->w, "this step", pn) + 2;
    }
    if (s && !s->us.on && (s->settings.edit || s->n_edited > 0)) {      /* token editing on: its mark */
        frame_style ed = ui_heat_style(v, 1.0f, role(v, THEME_TEXT)), er = role(v, THEME_EDITED);
        if (er.fg != FRAME_DEFAULT) ed.fg = er.fg;
        if (er.bg != FRAME_DEFAULT) ed.bg = er.bg;
        ed.attrs |= er.attrs | (v->depth == 0 ? FRAME_REVERSE : 0);
        if (!room(f, x, "tok", "edited")) return;
        x = ui_text_puts(f, x, y, f->w, "tok", ed);
        x = ui_text_puts(f, x + 1, y, f->w, "edited", pn) + 2;
    }
    if (grid) {
        frame_style cf = role(v, THEME_CONFLICT);
        if (v->depth == 0) cf.attrs |= FRAME_REVERSE;
        if (!room(f, x, "5", "conflict")) return;
        x = ui_text_puts(f, x, y, f->w, "5", cf);
        x = ui_text_puts(f, x + 1, y, f->w, "conflict", pn) + 2;
    }
    if (v->n_panes > 1) {
        frame_style df = ui_heat_style(v, 1.0f, role(v, THEME_TEXT)), d = role(v, THEME_DIFF);
        if (d.fg != FRAME_DEFAULT) df.fg = d.fg;
        if (d.bg != FRAME_DEFAULT) df.bg = d.bg;
        df.attrs |= d.attrs | (v->depth == 0 ? FRAME_REVERSE : 0);
        if (!room(f, x, "tok", "differs from pane 1")) return;
        x = ui_text_puts(f, x, y, f->w, "tok", df);
        ui_text_puts(f, x + 1, y, f->w, "differs from pane 1", pn);
    }
}
