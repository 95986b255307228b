/*
 * theme: colour schemes as data. A theme maps semantic roles (mask, fresh, prompt, panel,
 * status, cursor, ...) to styles and holds the heat ramp (2..16 colour stops, low to high)
 * plus the mask glyph. Themes are text files (themes/NAME.theme); viridis is also compiled
 * in so the UI works with no files installed.
 *
 * File format, one setting per line, '#' starts a comment:
 *     name       = viridis
 *     heat       = #440154 #3b528b #21918c #5ec962 #fde725
 *     mask_glyph = ░
 *     ROLE       = FG [on BG] [bold] [dim] [underline] [reverse] [italic]
 * where a colour is #rrggbb, 0..255 (xterm palette), a name (black red green yellow blue
 * magenta cyan white) or `default`. An unknown key, a bad colour or a malformed line is an
 * error "FILE:LINE: ..."; roles not set keep the built-in default.
 */
#ifndef UM_THEME_H
#define UM_THEME_H

#include <stdbool.h>
#include <stddef.h>
#include "frame.h"

typedef enum theme_role {
    THEME_TEXT = 0,      /* committed tokens before heat colouring, canvas background */
    THEME_PROMPT,        /* the prompt (dimmed) */
    THEME_MASK,          /* masked positions */
    THEME_GHOST,         /* live-confidence ghost text on masked positions (attrs used) */
    THEME_FRESH,         /* tokens committed in the shown step (attrs and bg used) */
    THEME_CURSOR,        /* the inspector cursor */
    THEME_HEADER,        /* top line */
    THEME_PANEL,         /* side panels */
    THEME_BORDER,        /* separators */
    THEME_TITLE,         /* panel titles */
    THEME_STATUS,        /* status line */
    THEME_RUNNING,       /* RUNNING badge */
    THEME_PAUSED,        /* PAUSED / REWIND badge */
    THEME_BAR,           /* schedule: committed per step */
    THEME_PLANNED,       /* schedule: planned per step */
    THEME_MARK,          /* schedule: the shown step */
    THEME_MESSAGE,       /* transient messages */
    THEME_HELP,          /* the help overlay */
    THEME_CONFLICT,      /* grid layout: a committed digit that breaks a sudoku rule */
    THEME_DIFF,          /* --compare: a token that differs from the first pane's */
    THEME_EDITED,        /* token editing: a committed token replaced in the shown step */
    THEME_NOISE,         /* uniform-state: a random token, no step on its canvas yet */
    THEME_DRAFT,         /* uniform-state: the argmax, not accepted this step (attrs and bg used) */
    THEME_ACCEPTED,      /* uniform-state: the argmax, accepted this step (attrs and bg used) */
    THEME_N_ROLES
} theme_role;

#define THEME_RAMP_MAX 16

typedef struct theme {
    char        name[64];
    frame_style role[THEME_N_ROLES];
    frame_color ramp[THEME_RAMP_MAX];     /* heat stops, low to high */
    int         n_ramp;
    char        mask_glyph[16];           /* UTF-8, one cluster */
} theme;

void        theme_builtin(theme *t);                 /* viridis, compiled in */
/* Parse theme text; filename is used in error messages. t starts from the built-in. */
int         theme_parse(theme *t, const char *text, size_t len, const char *filename, um_err *e);
/* Load a theme by file path (contains '/' or ends in .theme) or by name, searched in
 * ./themes/, $XDG_CONFIG_HOME/unmask/themes/ (~/.config/...), UM_PREFIX/share/unmask/themes/.
 * The name "viridis" falls back to the built-in when no file is found. A theme file must be
 * a regular file of at most INFILE_MAX_THEME bytes (infile.h). */
int         theme_load(theme *t, const char *name_or_path, um_err *e);
/* Is this --theme value a file path (theme_load reads it as a file, not a name)? */
bool        theme_is_path(const char *name_or_path);
const char *theme_role_name(theme_role r);
/* Heat colour for v in [0, 1] (clamped), linear between ramp stops. */
frame_color theme_heat(const theme *t, float v);

/* The themes `c` cycles through, in order. */
extern const char *const theme_cycle[];
extern const int theme_cycle_len;

#endif
