/*
 * theme: the built-in viridis theme, the theme-file parser and the heat ramp.
 * Parsing never stops at the first good line: every line is checked and the first
 * error is reported as FILE:LINE: message.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "infile.h"
#include "theme.h"
#include "numparse.h"
#include "text.h"

const char *const theme_cycle[] = { "viridis", "magma", "inferno", "cividis", "high-contrast", "mono" };
const int theme_cycle_len = (int)(sizeof theme_cycle / sizeof theme_cycle[0]);

static const char *const role_names[THEME_N_ROLES] = {
    [THEME_TEXT] = "text",       [THEME_PROMPT] = "prompt",   [THEME_MASK] = "mask",
    [THEME_GHOST] = "ghost",     [THEME_FRESH] = "fresh",     [THEME_CURSOR] = "cursor",
    [THEME_HEADER] = "header",   [THEME_PANEL] = "panel",     [THEME_BORDER] = "border",
    [THEME_TITLE] = "title",     [THEME_STATUS] = "status",   [THEME_RUNNING] = "running",
    [THEME_PAUSED] = "paused",   [THEME_BAR] = "bar",         [THEME_PLANNED] = "planned",
    [THEME_MARK] = "mark",       [THEME_MESSAGE] = "message", [THEME_HELP] = "help",
    [THEME_CONFLICT] = "conflict", [THEME_DIFF] = "diff",       [THEME_EDITED] = "edited",
    [THEME_NOISE] = "noise",     [THEME_DRAFT] = "draft",     [THEME_ACCEPTED] = "accepted",
};

const char *theme_role_name(theme_role r) { return r < THEME_N_ROLES ? role_names[r] : "?"; }

#define D FRAME_DEFAULT
void theme_builtin(theme *t) {
    memset(t, 0, sizeof *t);
    snprintf(t->name, sizeof t->name, "viridis");
    /* viridis from 0.2 to 1.0: the darkest purples are unreadable as text on dark terminals */
    static const frame_color ramp[] = { 0x3e4989, 0x31688e, 0x26828e, 0x1f9e89, 0x35b779, 0x6ece58, 0xb5de2b, 0xfde725 };
    memcpy(t->ramp, ramp, sizeof ramp);
    t->n_ramp = (int)(sizeof ramp / sizeof ramp[0]);
    snprintf(t->mask_glyph, sizeof t->mask_glyph, "\xE2\x96\x91");     /* ░ */
    t->role[THEME_TEXT]    = (frame_style){ D, D, 0 };
    t->role[THEME_PROMPT]  = (frame_style){ 0x8a8a8a, D, FRAME_DIM };
    t->role[THEME_MASK]    = (frame_style){ 0x585858, D, 0 };
    t->role[THEME_GHOST]   = (frame_style){ D, D, FRAME_DIM | FRAME_ITALIC };
    t->role[THEME_FRESH]   = (frame_style){ D, D, FRAME_UNDERLINE | FRAME_BOLD };
    t->role[THEME_CURSOR]  = (frame_style){ 0x000000, 0xffd75f, 0 };
    t->role[THEME_HEADER]  = (frame_style){ 0xffffff, 0x3e4989, FRAME_BOLD };
    t->role[THEME_PANEL]   = (frame_style){ 0xd0d0d0, D, 0 };
    t->role[THEME_BORDER]  = (frame_style){ 0x4e4e4e, D, 0 };
    t->role[THEME_TITLE]   = (frame_style){ 0x6ece58, D, FRAME_BOLD };
    t->role[THEME_STATUS]  = (frame_style){ 0xeeeeee, 0x303030, 0 };
    t->role[THEME_RUNNING] = (frame_style){ 0x000000, 0x35b779, FRAME_BOLD };
    t->role[THEME_PAUSED]  = (frame_style){ 0x000000, 0xfde725, FRAME_BOLD };
    t->role[THEME_BAR]     = (frame_style){ 0x35b779, D, 0 };
    t->role[THEME_PLANNED] = (frame_style){ 0x585858, D, 0 };
    t->role[THEME_MARK]    = (frame_style){ 0xfde725, D, FRAME_BOLD };
    t->role[THEME_MESSAGE] = (frame_style){ 0xfde725, D, 0 };
    t->role[THEME_HELP]    = (frame_style){ 0xeeeeee, 0x262626, 0 };
    t->role[THEME_CONFLICT] = (frame_style){ 0xffffff, 0xaf0000, FRAME_BOLD };
    t->role[THEME_DIFF]    = (frame_style){ D, 0x5f00af, 0 };
    t->role[THEME_EDITED]  = (frame_style){ D, 0x875f00, FRAME_BOLD | FRAME_ITALIC };
    t->role[THEME_NOISE]   = (frame_style){ 0x585858, D, FRAME_DIM };
    t->role[THEME_DRAFT]   = (frame_style){ D, D, FRAME_ITALIC };
    t->role[THEME_ACCEPTED] = (frame_style){ D, 0x1c3a2a, FRAME_BOLD };
}
#undef D

/* ------------------------------------------------------------------ parsing */

static const struct { const char *name; int idx; } color_names[] = {
    { "black", 0 }, { "red", 1 }, { "green", 2 }, { "yellow", 3 },
    { "blue", 4 },  { "magenta", 5 }, { "cyan", 6 }, { "white", 7 },
};

static bool parse_color(const char *w, frame_color *out) {
    if (!strcmp(w, "default")) { *out = FRAME_DEFAULT; return true; }
    if (w[0] == '#') {
        if (strlen(w) != 7) return false;
        for (int i = 1; i < 7; i++) if (!isxdigit((unsigned char)w[i])) return false;
        *out = (frame_color)strtoul(w + 1, NULL, 16);
        return true;
    }
    if (isdigit((unsigned char)w[0])) {
        int64_t v;
        if (num_int(NULL, w, 0, 255, &v, NULL)) return false;   /* the one number parser: no "012", "1.5" */
        *out = frame_color_from_256((int)v);
        return true;
    }
    for (size_t i = 0; i < sizeof color_names / sizeof color_names[0]; i++)
        if (!strcmp(w, color_names[i].name)) { *out = frame_color_from_256(color_names[i].idx); return true; }
    return false;
}

#define BAD_COLOR "(want #rrggbb, 0..255, a colour name or default)"

static int parse_style(char *v, frame_style *st, const char *file, int line, um_err *e) {
    frame_style s = { FRAME_DEFAULT, FRAME_DEFAULT, 0 };
    int n = 0;
    bool want_bg = false;
    for (char *w = strtok(v, " \t"); w; w = strtok(NULL, " \t"), n++) {
        if (!strcmp(w, "on")) { want_bg = true; continue; }
        if (!strcmp(w, "bold"))      { s.attrs |= FRAME_BOLD; continue; }
        if (!strcmp(w, "dim"))       { s.attrs |= FRAME_DIM; continue; }
        if (!strcmp(w, "underline")) { s.attrs |= FRAME_UNDERLINE; continue; }
        if (!strcmp(w, "reverse"))   { s.attrs |= FRAME_REVERSE; continue; }
        if (!strcmp(w, "italic"))    { s.attrs |= FRAME_ITALIC; continue; }
        frame_color c;
        if (!parse_color(w, &c)) return um_errf(e, "%s:%d: bad colour or attribute '%s' " BAD_COLOR, file, line, w);
        if (want_bg) { s.bg = c; want_bg = false; }
        else if (n == 0) s.fg = c;
        else return um_errf(e, "%s:%d: colour '%s' out of place (write FG [on BG] [attributes])", file, line, w);
    }
    if (want_bg) return um_errf(e, "%s:%d: 'on' needs a background colour", file, line);
    if (n == 0) return um_errf(e, "%s:%d: empty value", file, line);
    *st = s;
    return UM_OK;
}

static char *trim(char *s) {
    while (*s == ' ' || *s == '\t') s++;
    char *end = s + strlen(s);
    while (end > s && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\r')) *--end = 0;
    return s;
}

int theme_parse(theme *t, const char *text, size_t len, const char *file, um_err *e) {
    theme_builtin(t);
    char name[64] = "";
    const char *p = text, *end = text + len;
    for (int line = 1; p < end; line++) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
        char buf[1024];
        if (n >= sizeof buf) return um_errf(e, "%s:%d: line too long (over %zu bytes)", file, line, sizeof buf - 1);
        memcpy(buf, p, n);
        buf[n] = 0;
        if (memchr(buf, 0, n)) return um_errf(e, "%s:%d: NUL byte in line", file, line);
        p += n + (nl ? 1 : 0);
        /* '#' starts a comment at the start of a line or when followed by a space;
         * '#rrggbb' is a colour */
        for (char *h = buf; (h = strchr(h, '#')); h++)
            if (h == trim(buf) || h[1] == 0 || h[1] == ' ' || h[1] == '\t') { *h = 0; break; }
        char *s = trim(buf);
        if (!*s) continue;
        char *eq = strchr(s, '=');
        if (!eq) return um_errf(e, "%s:%d: expected 'key = value', got '%s'", file, line, s);
        *eq = 0;
        char *key = trim(s), *val = trim(eq + 1);
        if (!strcmp(key, "name")) {
            if (!*val || strlen(val) >= sizeof name) return um_errf(e, "%s:%d: name must be 1..63 bytes", file, line);
            snprintf(name, sizeof name, "%s", val);
        } else if (!strcmp(key, "mask_glyph")) {
            int w = ui_text_width(val);
            if (w != 1 || strlen(val) >= sizeof t->mask_glyph)
                return um_errf(e, "%s:%d: mask_glyph must be one character one cell wide", file, line);
            snprintf(t->mask_glyph, sizeof t->mask_glyph, "%s", val);
        } else if (!strcmp(key, "heat")) {
            int k = 0;
            for (char *w = strtok(val, " \t"); w; w = strtok(NULL, " \t")) {
                if (k == THEME_RAMP_MAX) return um_errf(e, "%s:%d: heat has more than %d stops", file, line, THEME_RAMP_MAX);
                if (!parse_color(w, &t->ramp[k]) || t->ramp[k] == FRAME_DEFAULT)
                    return um_errf(e, "%s:%d: bad heat colour '%s' (want #rrggbb, 0..255 or a colour name)", file, line, w);
                k++;
            }
            if (k < 2) return um_errf(e, "%s:%d: heat needs at least 2 colour stops", file, line);
            t->n_ramp = k;
        } else {
            int r = 0;
            while (r < THEME_N_ROLES && strcmp(key, role_names[r])) r++;
            if (r == THEME_N_ROLES) return um_errf(e, "%s:%d: unknown key '%s'", file, line, key);
            if (parse_style(val, &t->role[r], file, line, e)) return UM_FAIL;
        }
    }
    if (name[0]) snprintf(t->name, sizeof t->name, "%s", name);
    else {                                         /* name from the file name */
        const char *base = strrchr(file, '/');
        base = base ? base + 1 : file;
        size_t bl = strcspn(base, ".");
        snprintf(t->name, sizeof t->name, "%.*s", (int)UM_MIN(bl, sizeof t->name - 1), base);
    }
    return UM_OK;
}

static int try_file(theme *t, const char *path, bool *found, um_err *e) {
    char *data;
    size_t len;
    struct stat st;
    if (stat(path, &st) != 0) return UM_OK;        /* not there: look further */
    *found = true;                                 /* there: a FIFO or a huge file is an error */
    if (infile_read(path, INFILE_MAX_THEME, &data, &len, e)) return UM_FAIL;
    int rc = theme_parse(t, data, len, path, e);
    free(data);
    return rc;
}

bool theme_is_path(const char *name) {
    size_t nl = strlen(name);
    return strchr(name, '/') || (nl > 6 && !strcmp(name + nl - 6, ".theme"));
}

int theme_load(theme *t, const char *name, um_err *e) {
    bool found = false;
    if (theme_is_path(name)) {
        if (try_file(t, name, &found, e)) return UM_FAIL;
        if (!found) return um_errf(e, "theme file %s not found", name);
        return UM_OK;
    }
    for (const char *c = name; *c; c++)
        if (!isalnum((unsigned char)*c) && *c != '-' && *c != '_')
            return um_errf(e, "bad theme name '%s' (letters, digits, - and _ only)", name);
    char path[4096];
    const char *xdg = getenv("XDG_CONFIG_HOME"), *home = getenv("HOME");
    snprintf(path, sizeof path, "themes/%s.theme", name);
    if (try_file(t, path, &found, e)) return UM_FAIL;
    if (found) return UM_OK;
    if (xdg && *xdg) snprintf(path, sizeof path, "%s/unmask/themes/%s.theme", xdg, name);
    else if (home) snprintf(path, sizeof path, "%s/.config/unmask/themes/%s.theme", home, name);
    else path[0] = 0;
    if (path[0] && try_file(t, path, &found, e)) return UM_FAIL;
    if (found) return UM_OK;
    snprintf(path, sizeof path, "%s/themes/%s.theme", um_share_dir(), name);
    if (try_file(t, path, &found, e)) return UM_FAIL;
    if (found) return UM_OK;
    if (!strcmp(name, "viridis")) { theme_builtin(t); return UM_OK; }
    return um_errf(e, "theme '%s' not found in ./themes, the config directory or %s/themes", name, um_share_dir());
}

frame_color theme_heat(const theme *t, float v) {
    if (!(v >= 0)) v = 0;                          /* NaN too */
    if (v > 1) v = 1;
    float x = v * (float)(t->n_ramp - 1);
    int i = (int)x;
    if (i >= t->n_ramp - 1) return t->ramp[t->n_ramp - 1];
    float f = x - (float)i;
    frame_color a = t->ramp[i], b = t->ramp[i + 1], out = 0;
    for (int sh = 0; sh <= 16; sh += 8) {
        float ca = (float)(a >> sh & 255), cb = (float)(b >> sh & 255);
        out |= (frame_color)(ca + (cb - ca) * f + 0.5f) << sh;
    }
    return out;
}
