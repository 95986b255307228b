/*
 * heat: what each heat mode (view.h, view_heat) measures at a canvas position, how a heat
 * value becomes a style, and the legend line that says so. ui/view.c colours the canvas,
 * the grids and the inspector with these; nothing here draws outside the legend's row.
 *
 * Invariants: a heat value is in [0, 1] (1 = the bright end of the theme's ramp) or NAN for
 * "no value" (the caller keeps the role's own style); values and legend come from the one
 * snapshot shown, so a rewound step shows that step's heat. The K/V cache mode is two-valued:
 * 0 for a position whose keys and values the step read from the cache (stale: last computed
 * at the last refresh), 1 for one it recomputed (every position of a full pass).
 */
#ifndef UM_UI_HEAT_H
#define UM_UI_HEAT_H

#include "view.h"

extern const char *const ui_heat_names[VIEW_HEAT_COUNT];     /* shown in the legend */
extern const char *const ui_heat_keys[VIEW_HEAT_COUNT];      /* the --heat values */

#define UI_HEAT_ENTROPY_SCALE 4.0f  /* nats mapped to the dark end of the ramp in entropy mode */

/* Heat of position i of s in v's mode, in [0, 1], or NAN when it has none (the prompt, except
 * in the cache mode; a plain mask; any position at a step that ran no forward pass, in the
 * cache mode). */
float       ui_heat_value(const view_state *v, const um_snapshot *s, int32_t i);
/* Style for heat h on top of base: the ramp's colour (32 levels), bold for the upper half with
 * 8 colours, or dim / normal / bold without colours. */
/* The least contrast (WCAG ratio) a heat colour keeps against its background as text. */
#define UI_HEAT_MIN_CONTRAST 4.0
/* fg lightened towards white just enough for UI_HEAT_MIN_CONTRAST against bg (FRAME_DEFAULT:
 * the recorders' dark default); unchanged when it has it, or when bg is light. */
frame_color ui_heat_readable(frame_color fg, frame_color bg);
double      ui_heat_contrast(frame_color a, frame_color b);     /* WCAG contrast ratio, 1..21 */
frame_style ui_heat_style(const view_state *v, float h, frame_style base);
/* The legend on row y: the mode's name and its scale (a ramp, or for the cache mode the two
 * swatches), the mask glyph, the fresh mark, and the grid's conflict and the panes' diff marks
 * when they show. s may be NULL (no snapshot yet). */
void        ui_heat_legend(frame *f, const view_state *v, const um_snapshot *s, int y, bool grid);

#endif
