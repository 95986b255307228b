/*
 * cast: asciicast v2 writer and frame -> ANSI text. See cast.h.
 *
 * Invariants: every line written is one complete JSON value followed by '\n'; every string
 * inside is valid UTF-8; event times never decrease. prev holds the last frame passed to
 * cast_frame (what a player shows after replaying the file), sized cols x rows.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cast.h"
#include "esc.h"
#include "outfile.h"
#include "render.h"

/* ---------------------------------------------------------------- byte buffer */

void cast_buf_free(cast_buf *b) {
    free(b->data);
    memset(b, 0, sizeof *b);
}

static int buf_reserve(cast_buf *b, size_t extra) {
    if (b->len + extra + 1 <= b->cap) return 1;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + extra + 1) cap *= 2;
    char *d = realloc(b->data, cap);
    if (!d) return 0;
    b->data = d;
    b->cap = cap;
    return 1;
}

/* Append n bytes; on failure set *oom and leave b unchanged. */
static void buf_put(cast_buf *b, const void *p, size_t n, int *oom) {
    if (*oom) return;
    if (!buf_reserve(b, n)) { *oom = 1; return; }
    memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = 0;
}

static void buf_puts(cast_buf *b, const char *s, int *oom) { buf_put(b, s, strlen(s), oom); }

static void buf_printf(cast_buf *b, int *oom, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void buf_printf(cast_buf *b, int *oom, const char *fmt, ...) {
    char tmp[160];
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (k > 0) buf_put(b, tmp, (size_t)k < sizeof tmp ? (size_t)k : sizeof tmp - 1, oom);
}

/* ---------------------------------------------------------------- JSON escaping */

static const char REPLACEMENT[] = "\xEF\xBF\xBD";   /* U+FFFD */

size_t cast_json_escape(cast_buf *out, const char *str, size_t n, int keep_tail, int *oom) {
    const uint8_t *s = (const uint8_t *)str;
    size_t i = 0;
    while (i < n) {
        uint8_t c = s[i];
        if (c < 0x80) {
            if (c == '"') buf_put(out, "\\\"", 2, oom);
            else if (c == '\\') buf_put(out, "\\\\", 2, oom);
            else if (c < 0x20 || c == 0x7f) buf_printf(out, oom, "\\u%04x", c);
            else buf_put(out, &c, 1, oom);
            i++;
            continue;
        }
        /* lead byte -> sequence length and the allowed range of the second byte (RFC 3629) */
        int len;
        uint8_t lo = 0x80, hi = 0xBF;
        if (c >= 0xC2 && c <= 0xDF) len = 2;
        else if (c == 0xE0) { len = 3; lo = 0xA0; }
        else if (c == 0xED) { len = 3; hi = 0x9F; }
        else if (c >= 0xE1 && c <= 0xEF) len = 3;
        else if (c == 0xF0) { len = 4; lo = 0x90; }
        else if (c == 0xF4) { len = 4; hi = 0x8F; }
        else if (c >= 0xF1 && c <= 0xF3) len = 4;
        else { buf_puts(out, REPLACEMENT, oom); i++; continue; }

        int j = 1;
        for (; j < len; j++) {
            if (i + (size_t)j >= n) break;                     /* truncated by the chunk end */
            uint8_t b = s[i + (size_t)j];
            if (j == 1 ? (b < lo || b > hi) : (b & 0xC0) != 0x80) break;
        }
        if (j == len) {
            buf_put(out, s + i, (size_t)len, oom);
            i += (size_t)len;
        } else if (i + (size_t)j >= n && keep_tail) {
            return i;                                           /* wait for the rest */
        } else {
            buf_puts(out, REPLACEMENT, oom);                    /* maximal invalid subpart */
            i += (size_t)j;
        }
    }
    return n;
}

/* ---------------------------------------------------------------- frame -> ANSI */

static int cell_eq(const frame_cell *a, const frame_cell *b) {
    return a->width == b->width && a->attrs == b->attrs && a->fg == b->fg && a->bg == b->bg &&
           !strncmp(a->text, b->text, FRAME_TEXT_MAX);
}

static void put_utf8(cast_buf *b, uint32_t cp, int *oom) {
    /* cell text never carries control characters or non-characters into the stream */
    if (esc_is_control(cp) || (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF) cp = 0xFFFD;
    uint8_t u[4];
    size_t n;
    if (cp < 0x80) { u[0] = (uint8_t)cp; n = 1; }
    else if (cp < 0x800) { u[0] = (uint8_t)(0xC0 | cp >> 6); u[1] = (uint8_t)(0x80 | (cp & 63)); n = 2; }
    else if (cp < 0x10000) {
        u[0] = (uint8_t)(0xE0 | cp >> 12); u[1] = (uint8_t)(0x80 | (cp >> 6 & 63));
        u[2] = (uint8_t)(0x80 | (cp & 63)); n = 3;
    } else {
        u[0] = (uint8_t)(0xF0 | cp >> 18); u[1] = (uint8_t)(0x80 | (cp >> 12 & 63));
        u[2] = (uint8_t)(0x80 | (cp >> 6 & 63)); u[3] = (uint8_t)(0x80 | (cp & 63)); n = 4;
    }
    buf_put(b, u, n, oom);
}

typedef struct sgr_state {
    int valid;
    uint8_t attr;
    uint32_t fg, bg;
} sgr_state;

static void put_sgr(cast_buf *b, const frame_cell *c, int mode, sgr_state *st, int *oom) {
    uint8_t attr = c->attrs & (FRAME_BOLD | FRAME_DIM | FRAME_UNDERLINE | FRAME_REVERSE);
    uint32_t fg = frame_fg_rgb(c), bg = frame_bg_rgb(c);
    if (st->valid && st->attr == attr && st->fg == fg && st->bg == bg) return;
    buf_puts(b, "\x1b[0", oom);
    if (attr & FRAME_BOLD) buf_puts(b, ";1", oom);
    if (attr & FRAME_DIM) buf_puts(b, ";2", oom);
    if (attr & FRAME_UNDERLINE) buf_puts(b, ";4", oom);
    if (attr & FRAME_REVERSE) buf_puts(b, ";7", oom);
    if (mode == CAST_COLOR_256)
        buf_printf(b, oom, ";38;5;%d;48;5;%dm", render_nearest(fg), render_nearest(bg));
    else
        buf_printf(b, oom, ";38;2;%u;%u;%u;48;2;%u;%u;%um",
                   fg >> 16 & 255, fg >> 8 & 255, fg & 255,
                   bg >> 16 & 255, bg >> 8 & 255, bg & 255);
    st->valid = 1;
    st->attr = attr;
    st->fg = fg;
    st->bg = bg;
}

/* Print cells [from, to) of row; returns the column after the last one printed. */
static int put_cells(cast_buf *b, const frame *f, int row, int from, int to, int mode,
                     sgr_state *st, int *oom) {
    int col = from;
    while (col < to) {
        const frame_cell *c = frame_get(f, col, row);
        put_sgr(b, c, mode, st, oom);
        int wide = c->width == 2 && col + 1 < f->w;
        uint32_t cp[FRAME_MAX_CP];
        int ncp = frame_cell_cps(c, cp);
        if (c->width == 0 || ncp == 0 || (c->width == 2 && !wide)) {
            buf_put(b, " ", 1, oom);                /* blank, orphan continuation, clipped wide */
            col++;
            continue;
        }
        for (int k = 0; k < ncp; k++) put_utf8(b, cp[k], oom);
        col += wide ? 2 : 1;
    }
    return col;
}

int cast_frame_ansi(const frame *cur, const frame *prev, int mode, cast_buf *out, um_err *e) {
    int oom = 0;
    out->len = 0;
    if (out->data) out->data[0] = 0;
    if (cur->w <= 0 || cur->h <= 0 || !cur->cells)
        return um_errf(e, "cast: empty frame (%dx%d)", cur->w, cur->h);
    int full = !prev || prev->w != cur->w || prev->h != cur->h || !prev->cells;
    sgr_state st = {0};

    if (full) buf_puts(out, "\x1b[?25l\x1b[0m\x1b[H\x1b[2J", &oom);
    for (int row = 0; row < cur->h; row++) {
        if (full) {
            buf_printf(out, &oom, "\x1b[%d;1H", row + 1);
            put_cells(out, cur, row, 0, cur->w, mode, &st, &oom);
            continue;
        }
        int col = 0;
        while (col < cur->w) {
            if (cell_eq(frame_get(cur, col, row), frame_get(prev, col, row))) { col++; continue; }
            int start = col;
            /* a changed continuation cell is redrawn through its leading cell */
            if (frame_get(cur, start, row)->width == 0 && start > 0 && frame_get(cur, start - 1, row)->width == 2)
                start--;
            int end = col + 1;
            while (end < cur->w && !cell_eq(frame_get(cur, end, row), frame_get(prev, end, row))) end++;
            buf_printf(out, &oom, "\x1b[%d;%dH", row + 1, start + 1);
            col = put_cells(out, cur, row, start, end, mode, &st, &oom);
        }
    }
    if (full || out->len > 0) buf_puts(out, "\x1b[0m", &oom);
    if (oom) return um_errf(e, "cast: out of memory for a %dx%d frame", cur->w, cur->h);
    return UM_OK;
}

/* ---------------------------------------------------------------- writer */

struct cast_writer {
    outfile *of;                 /* the output (outfile.h): a temporary until cast_close */
    FILE *fp;                    /* outfile_stream(of) */
    char *path;                  /* the name given, for messages */
    int cols, rows;              /* current terminal size */
    double last_t;               /* seconds, last event time written */
    uint8_t tail[4];             /* incomplete UTF-8 sequence kept from the last output chunk */
    int ntail;
    int events;
    int failed;
    char errmsg[256];
    cast_buf line;               /* the event being formatted */
    cast_buf joined;             /* tail + new output bytes */
    cast_buf ansi;               /* cast_frame's escape text */
    frame prev;                  /* last frame given to cast_frame; cells owned */
    size_t prev_cap;             /* cells allocated in prev */
    int have_prev;
};

static int writer_fail(cast_writer *c, um_err *e) { return um_errf(e, "cast: %s", c->errmsg); }

static void write_line(cast_writer *c) {
    if (c->failed) return;
    if (fwrite(c->line.data, 1, c->line.len, c->fp) != c->line.len) {
        c->failed = 1;
        snprintf(c->errmsg, sizeof c->errmsg, "%s: write failed: %s", c->path, strerror(errno));
    }
}

static void writer_free(cast_writer *c) {
    if (!c) return;
    outfile_abort(c->of);
    free(c->path);
    cast_buf_free(&c->line); cast_buf_free(&c->joined); cast_buf_free(&c->ansi);
    free(c->prev.cells);
    free(c);
}

int cast_open(cast_writer **out, const char *path, int cols, int rows, int64_t timestamp,
              const char *term, const char *title, um_err *e) {
    *out = NULL;
    if (cols < 1 || rows < 1 || cols > 10000 || rows > 10000)
        return um_errf(e, "cast: terminal size %dx%d out of range (1..10000)", cols, rows);
    cast_writer *c = um_calloc(1, sizeof *c);
    if (!c) return um_errf(e, "cast: out of memory");
    size_t plen = strlen(path);
    c->path = um_malloc(plen + 1);
    if (!c->path) { writer_free(c); return um_errf(e, "cast: out of memory"); }
    memcpy(c->path, path, plen + 1);
    c->cols = cols;
    c->rows = rows;
    if (outfile_open(&c->of, path, e)) {
        writer_free(c);
        return um_err_prefix(e, "cast");
    }
    c->fp = outfile_stream(c->of);

    int oom = 0;
    cast_buf *l = &c->line;
    buf_printf(l, &oom, "{\"version\": 2, \"width\": %d, \"height\": %d, \"timestamp\": %lld, \"env\": {\"TERM\": \"",
               cols, rows, (long long)timestamp);
    const char *t = term ? term : "xterm-256color";
    cast_json_escape(l, t, strlen(t), 0, &oom);
    buf_puts(l, "\"}", &oom);
    if (title) {
        buf_puts(l, ", \"title\": \"", &oom);
        char safe[1024];            /* may quote a models.conf prompt; a player may print it */
        esc_str(safe, sizeof safe, title, strlen(title), 0, 0);
        cast_json_escape(l, safe, strlen(safe), 0, &oom);
        buf_puts(l, "\"", &oom);
    }
    buf_puts(l, "}\n", &oom);
    if (oom) { cast_abort(c); return um_errf(e, "cast: out of memory"); }
    write_line(c);
    if (c->failed) { um_errf(e, "cast: %s", c->errmsg); cast_abort(c); return UM_FAIL; }
    *out = c;
    return UM_OK;
}

/* Start an event line "[t, "code", "" and return with the string open. */
static void event_begin(cast_writer *c, double t, char code, int *oom) {
    if (!(t >= c->last_t)) t = c->last_t;                   /* also catches NaN */
    c->last_t = t;
    c->line.len = 0;
    buf_printf(&c->line, oom, "[%.6f, \"%c\", \"", t, code);
}

static int event_end(cast_writer *c, int oom, um_err *e) {
    buf_puts(&c->line, "\"]\n", &oom);
    if (oom) return um_errf(e, "cast: out of memory for an event");
    write_line(c);
    if (c->failed) return writer_fail(c, e);
    c->events++;
    return UM_OK;
}

int cast_output(cast_writer *c, double t, const char *bytes, size_t n, um_err *e) {
    if (c->failed) return writer_fail(c, e);
    int oom = 0;
    c->joined.len = 0;
    buf_put(&c->joined, c->tail, (size_t)c->ntail, &oom);
    buf_put(&c->joined, bytes, n, &oom);
    if (oom) return um_errf(e, "cast: out of memory for %zu bytes of output", n);

    event_begin(c, t, 'o', &oom);
    size_t body = c->line.len;
    size_t used = cast_json_escape(&c->line, c->joined.data, c->joined.len, 1, &oom);
    c->ntail = (int)(c->joined.len - used);                  /* at most 3: an incomplete sequence */
    memcpy(c->tail, c->joined.data + used, (size_t)c->ntail);
    if (!oom && c->line.len == body) return UM_OK;           /* nothing complete to write yet */
    return event_end(c, oom, e);
}

int cast_marker(cast_writer *c, double t, const char *label, um_err *e) {
    if (c->failed) return writer_fail(c, e);
    int oom = 0;
    event_begin(c, t, 'm', &oom);
    cast_json_escape(&c->line, label, strlen(label), 0, &oom);
    return event_end(c, oom, e);
}

int cast_resize(cast_writer *c, double t, int cols, int rows, um_err *e) {
    if (c->failed) return writer_fail(c, e);
    if (cols < 1 || rows < 1 || cols > 10000 || rows > 10000)
        return um_errf(e, "cast: resize to %dx%d out of range (1..10000)", cols, rows);
    int oom = 0;
    event_begin(c, t, 'r', &oom);
    buf_printf(&c->line, &oom, "%dx%d", cols, rows);
    c->cols = cols;
    c->rows = rows;
    return event_end(c, oom, e);
}

int cast_frame(cast_writer *c, double t, const frame *f, int mode, um_err *e) {
    if (c->failed) return writer_fail(c, e);
    if (f->w != c->cols || f->h != c->rows) {
        if (cast_resize(c, t, f->w, f->h, e) != UM_OK) return UM_FAIL;
        c->have_prev = 0;
    }
    if (cast_frame_ansi(f, c->have_prev ? &c->prev : NULL, mode, &c->ansi, e) != UM_OK) return UM_FAIL;
    if (c->ansi.len > 0 && cast_output(c, t, c->ansi.data, c->ansi.len, e) != UM_OK) return UM_FAIL;

    size_t n = (size_t)f->w * (size_t)f->h;
    if (n > c->prev_cap) {                                  /* only on the first frame or a resize */
        frame_cell *cells = realloc(c->prev.cells, n * sizeof *cells);
        if (!cells) return um_errf(e, "cast: out of memory for a %dx%d frame", f->w, f->h);
        c->prev.cells = cells;
        c->prev_cap = n;
    }
    memcpy(c->prev.cells, f->cells, n * sizeof *f->cells);
    c->prev.w = f->w;
    c->prev.h = f->h;
    c->have_prev = 1;
    return UM_OK;
}

int cast_close(cast_writer *c, um_err *e) {
    if (!c) return um_errf(e, "cast: close of a writer that is not open");
    if (!c->failed && c->ntail > 0) {
        int oom = 0;
        event_begin(c, c->last_t, 'o', &oom);
        buf_puts(&c->line, REPLACEMENT, &oom);
        c->ntail = 0;
        if (event_end(c, oom, e) != UM_OK) { cast_abort(c); return UM_FAIL; }
    }
    if (c->failed) { writer_fail(c, e); cast_abort(c); return UM_FAIL; }
    outfile *of = c->of;
    c->of = NULL;
    c->fp = NULL;
    writer_free(c);
    if (outfile_commit(of, e)) return um_err_prefix(e, "cast");
    return UM_OK;
}

void cast_abort(cast_writer *c) {
    writer_free(c);              /* outfile_abort removes the temporary file */
}

int cast_events(const cast_writer *c) { return c->events; }
