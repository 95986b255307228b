/*
 * test_cast: asciicast v2 writer and frame -> ANSI text.
 *
 * Escaping is checked against hand-written expected strings. Whole files are checked by
 * python3's json module (an independent parser): header fields, one marker per step,
 * non-decreasing times, and that the "o" texts joined equal the raw bytes decoded by
 * Python's own UTF-8 decoder with errors="replace" (the same maximal-subpart rule). The
 * ANSI text is replayed through a tiny terminal emulator in this file and the resulting
 * screen compared cell by cell with the frame.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "cast.h"
#include "frame_cells.h"

static const char *esc(const char *s, size_t n, int keep_tail, size_t *used) {
    static cast_buf b;
    int oom = 0;
    b.len = 0;
    size_t u = cast_json_escape(&b, s, n, keep_tail, &oom);
    if (used) *used = u;
    if (oom || !b.data) return "(oom)";
    return b.data;
}

TEST(cast_escape_controls_quotes_backslash) {
    const char in[] = "a\"b\\c\x01\x1b[0m\n\t\x7f~";
    CHECK_STREQ(esc(in, sizeof in - 1, 0, NULL), "a\\\"b\\\\c\\u0001\\u001b[0m\\u000a\\u0009\\u007f~");
    const char nul[] = { 'x', 0, 'y' };
    CHECK_STREQ(esc(nul, 3, 0, NULL), "x\\u0000y");
}

TEST(cast_escape_invalid_utf8_becomes_fffd) {
#define R "\xEF\xBF\xBD"
    /* valid 2-, 3-, 4-byte sequences pass through */
    CHECK_STREQ(esc("\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80", 9, 0, NULL), "\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80");
    CHECK_STREQ(esc("\xFF", 1, 0, NULL), R);                        /* never valid */
    CHECK_STREQ(esc("\x80x", 2, 0, NULL), R "x");                   /* stray continuation */
    CHECK_STREQ(esc("\xC0\xAF", 2, 0, NULL), R R);                  /* overlong '/' */
    CHECK_STREQ(esc("\xED\xA0\x80", 3, 0, NULL), R R R);            /* surrogate D800 */
    CHECK_STREQ(esc("\xF4\x90\x80\x80", 4, 0, NULL), R R R R);      /* > U+10FFFF */
    CHECK_STREQ(esc("\xE2\x82x", 3, 0, NULL), R "x");               /* truncated, one U+FFFD */
    CHECK_STREQ(esc("a\xE2\x82", 3, 0, NULL), "a" R);               /* truncated at the end */
    size_t used;
    CHECK_STREQ(esc("a\xE2\x82", 3, 1, &used), "a");                /* ... or kept for later */
    CHECK_EQ(used, 1);
    CHECK_STREQ(esc("a\xE2\x28", 3, 1, &used), "a" R "(");          /* invalid is not kept */
    CHECK_EQ(used, 3);
#undef R
}

/* ---------------------------------------------------------------- whole file via python */

static int have_python(void) { return system("command -v python3 >/dev/null 2>&1") == 0; }

/* Run python3 on script with the cast path and the raw-output path; 0 when it prints OK. */
static int python_check(const char *script, const char *cast, const char *raw, char *msg, size_t msz) {
    char spath[256], cmd[1024];
    snprintf(spath, sizeof spath, "/tmp/unmask_test_%ld_check.py", (long)getpid());
    FILE *f = fopen(spath, "w");
    if (!f) { snprintf(msg, msz, "cannot write %s", spath); return -1; }
    fputs(script, f);
    fclose(f);
    snprintf(cmd, sizeof cmd, "python3 '%s' '%s' '%s' 2>&1", spath, cast, raw);
    FILE *p = popen(cmd, "r");
    if (!p) { unlink(spath); snprintf(msg, msz, "popen failed"); return -1; }
    size_t n = fread(msg, 1, msz - 1, p);
    msg[n] = 0;
    int rc = pclose(p);
    unlink(spath);
    return rc == 0 && !strncmp(msg, "OK", 2) ? 0 : -1;
}

static const char *check_py =
    "import json, sys\n"
    "lines = open(sys.argv[1], 'rb').read().decode('utf-8').split('\\n')\n"   /* strict UTF-8 */
    "assert lines[-1] == '', 'file must end with a newline'\n"
    "h = json.loads(lines[0])\n"
    "assert h['version'] == 2 and h['width'] == 40 and h['height'] == 5, h\n"
    "assert h['timestamp'] == 1700000000 and h['env']['TERM'] == 'xterm-256color', h\n"
    "assert h['title'] == 'unmask \"demo\"\\\\x0a', repr(h['title'])   # escaped (esc.h): a player may print it\n"
    "ev = [json.loads(l) for l in lines[1:-1]]\n"
    "ts = [e[0] for e in ev]\n"
    "assert ts == sorted(ts) and ts[0] >= 0, ts\n"
    "marks = [e[2] for e in ev if e[1] == 'm']\n"
    "assert marks == ['step %d' % i for i in range(1, 6)], marks\n"
    "rs = [e[2] for e in ev if e[1] == 'r']\n"
    "assert rs == ['30x4'], rs\n"
    "out = ''.join(e[2] for e in ev if e[1] == 'o')\n"
    "want = open(sys.argv[2], 'rb').read().decode('utf-8', 'replace')\n"
    "assert out == want, (out, want)\n"
    "assert all(len(e) == 3 and e[1] in 'omr' for e in ev)\n"
    "print('OK')\n";

TEST(cast_file_parses_as_json_lines) {
    if (!have_python()) { th_skip("python3 not installed"); return; }
    char path[256], raw[256];
    snprintf(path, sizeof path, "/tmp/unmask_test_%ld.cast", (long)getpid());
    snprintf(raw, sizeof raw, "/tmp/unmask_test_%ld.raw", (long)getpid());
    FILE *rf = fopen(raw, "wb");
    CHECK(rf);

    um_err e = {0};
    cast_writer *c;
    CHECK_MSG(cast_open(&c, path, 40, 5, 1700000000, NULL, "unmask \"demo\"\n", &e) == UM_OK, "%s", e.msg);
    /* output chunks: controls, a euro sign split over two chunks, invalid bytes, a final
     * truncated sequence that cast_close must turn into U+FFFD */
    static const char *chunks[] = { "\x1b[2J\x1b[Hhello \"q\" \\ ", "\xE2\x82", "\xAC ok\r\n",
                                    "bad \xFF\xC0\xAF end", "\xF0\x9F" };
    for (int i = 0; i < 5; i++) {
        size_t len = strlen(chunks[i]);
        CHECK(cast_output(c, 0.1 * i, chunks[i], len, &e) == UM_OK);
        fwrite(chunks[i], 1, len, rf);
        char label[32];
        snprintf(label, sizeof label, "step %d", i + 1);
        CHECK(cast_marker(c, i == 3 ? 0.05 : 0.1 * i + 0.01, label, &e) == UM_OK);   /* 0.05: goes back */
    }
    CHECK(cast_resize(c, 0.6, 30, 4, &e) == UM_OK);
    fclose(rf);
    CHECK(access(path, F_OK) != 0);                  /* nothing at PATH before close */
    CHECK(cast_close(c, &e) == UM_OK);
    char msg[4096];
    int rc = python_check(check_py, path, raw, msg, sizeof msg);
    unlink(path);
    unlink(raw);
    CHECK_MSG(rc == 0, "python check: %s", msg);
}

TEST(cast_open_errors) {
    um_err e = {0};
    cast_writer *c;
    CHECK(cast_open(&c, "/nonexistent-dir/a.cast", 80, 24, 0, NULL, NULL, &e) == UM_FAIL);
    CHECK_CONTAINS(e.msg, "/nonexistent-dir/a.cast");
    CHECK(cast_open(&c, "/tmp/x.cast", 0, 24, 0, NULL, NULL, &e) == UM_FAIL);
    CHECK_CONTAINS(e.msg, "out of range");
}

/* ---------------------------------------------------------------- ANSI replay */

/* A terminal emulator just big enough for cast_frame_ansi's output: CUP, ED 2, DECTCEM,
 * SGR 0/1/2/4/7/38;2/48;2/38;5/48;5, UTF-8 text, wide CJK (U+4E00..9FFF) advancing two. */
typedef struct vt_cell { uint32_t cp; uint8_t attr; uint32_t fg, bg; int wide_tail; } vt_cell;
typedef struct vt { int cols, rows, x, y; uint8_t attr; uint32_t fg, bg; vt_cell *s; int bad; } vt;

static void vt_feed(vt *t, const char *p, size_t n) {
    size_t i = 0;
    while (i < n) {
        uint8_t c = (uint8_t)p[i];
        if (c == 0x1b) {
            if (i + 1 >= n || p[i + 1] != '[') { t->bad = 1; return; }
            i += 2;
            int priv = 0, np = 0, par[32] = {0};
            if (i < n && p[i] == '?') { priv = 1; i++; }
            while (i < n && ((p[i] >= '0' && p[i] <= '9') || p[i] == ';')) {
                if (p[i] == ';') { if (np < 31) np++; }
                else par[np] = par[np] * 10 + (p[i] - '0');
                i++;
            }
            np++;
            if (i >= n) { t->bad = 1; return; }
            char f = p[i++];
            if (priv) continue;
            if (f == 'H') { t->y = (par[0] ? par[0] : 1) - 1; t->x = (np > 1 && par[1] ? par[1] : 1) - 1; }
            else if (f == 'J') {
                for (int k = 0; k < t->cols * t->rows; k++) t->s[k] = (vt_cell){ ' ', 0, 0, 0, 0 };
            } else if (f == 'm') {
                for (int k = 0; k < np; k++) {
                    int v = par[k];
                    if (v == 0) { t->attr = 0; t->fg = t->bg = 0; }
                    else if (v == 1) t->attr |= FRAME_BOLD;
                    else if (v == 2) t->attr |= FRAME_DIM;
                    else if (v == 4) t->attr |= FRAME_UNDERLINE;
                    else if (v == 7) t->attr |= FRAME_REVERSE;
                    else if ((v == 38 || v == 48) && k + 4 < np && par[k + 1] == 2) {
                        uint32_t rgb = (uint32_t)par[k + 2] << 16 | (uint32_t)par[k + 3] << 8 | (uint32_t)par[k + 4];
                        if (v == 38) t->fg = rgb; else t->bg = rgb;
                        k += 4;
                    } else if ((v == 38 || v == 48) && k + 2 < np && par[k + 1] == 5) {
                        if (v == 38) t->fg = 0x1000000u | (uint32_t)par[k + 2];
                        else t->bg = 0x1000000u | (uint32_t)par[k + 2];
                        k += 2;
                    } else t->bad = 1;
                }
            } else t->bad = 1;
            continue;
        }
        if (c < 0x20) { t->bad = 1; return; }
        uint32_t cp = c;
        int len = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
        if (len > 1) { cp = c & (0x3F >> (len - 1)); for (int k = 1; k < len; k++) cp = cp << 6 | ((uint8_t)p[i + k] & 63); }
        i += (size_t)len;
        int w = cp >= 0x4E00 && cp <= 0x9FFF ? 2 : 1;
        if (t->y >= t->rows || t->x + w > t->cols) { t->bad = 1; return; }
        vt_cell *d = &t->s[t->y * t->cols + t->x];
        *d = (vt_cell){ cp, t->attr, t->fg, t->bg, 0 };
        if (w == 2) d[1] = (vt_cell){ 0, t->attr, t->fg, t->bg, 1 };
        t->x += w;
    }
}

static frame_cell C(uint32_t cp, uint32_t fg, uint32_t bg, uint8_t attr) { return tc_cell(cp, fg, bg, attr); }

/* Compare the emulator's screen with frame f; returns the first differing index or -1. */
static int vt_diff(const vt *t, const frame *f) {
    for (int i = 0; i < f->w * f->h; i++) {
        const frame_cell *c = &f->cells[i];
        const vt_cell *v = &t->s[i];
        if (c->width == 0) { if (!v->wide_tail) return i; continue; }
        if (v->cp != tc_cp(c) || v->fg != c->fg || v->bg != c->bg || v->attr != c->attrs) return i;
    }
    return -1;
}

TEST(cast_ansi_full_and_diff_replay) {
    enum { COLS = 6, ROWS = 3 };
    static frame_cell a[COLS * ROWS], b[COLS * ROWS];
    static vt_cell screen[COLS * ROWS];
    for (int i = 0; i < COLS * ROWS; i++) a[i] = C(0, 0xc0c0c0, 0x101010, 0);
    const char *hi = "Hello!";
    for (int i = 0; i < COLS; i++) a[i] = C((uint32_t)hi[i], 0xff0000, 0x000000, i == 0 ? FRAME_BOLD : 0);
    a[COLS + 1] = C(0x4E2D, 0x00ff00, 0x000080, FRAME_UNDERLINE);     /* 中, wide */
    a[COLS + 1].width = 2;
    a[COLS + 2] = a[COLS + 1];
    a[COLS + 2].width = 0;
    a[2 * COLS + 5] = C(0x2591, 0x5f87af, 0x101010, FRAME_DIM);       /* ░ */
    frame fa = { .w = COLS, .h = ROWS, .cells = a }, fb = { .w = COLS, .h = ROWS, .cells = b };

    cast_buf out = {0};
    um_err e = {0};
    vt t = { COLS, ROWS, 0, 0, 0, 0, 0, screen, 0 };
    CHECK(cast_frame_ansi(&fa, NULL, CAST_COLOR_24BIT, &out, &e) == UM_OK);
    CHECK(!strncmp(out.data, "\x1b[?25l", 6));
    vt_feed(&t, out.data, out.len);
    CHECK(!t.bad);
    int d = vt_diff(&t, &fa);
    CHECK_MSG(d < 0, "full redraw differs at cell %d", d);

    /* identical frame: nothing to send */
    CHECK(cast_frame_ansi(&fa, &fa, CAST_COLOR_24BIT, &out, &e) == UM_OK);
    CHECK_EQ(out.len, 0);

    /* change one cell, replace the wide char's tail half, recolour a run */
    memcpy(b, a, sizeof b);
    b[4] = C('?', 0xffffff, 0x000000, FRAME_REVERSE);
    b[COLS + 2] = C('x', 0x00ff00, 0x000080, 0);                      /* breaks the wide char */
    b[COLS + 1] = C('y', 0x00ff00, 0x000080, 0);
    b[2 * COLS + 0] = C('z', 0x123456, 0x654321, 0);
    CHECK(cast_frame_ansi(&fb, &fa, CAST_COLOR_24BIT, &out, &e) == UM_OK);
    CHECK(out.len > 0 && out.len < 200);
    CHECK(!strstr(out.data, "\x1b[2J"));                              /* a diff, not a redraw */
    CHECK_CONTAINS(out.data, "\x1b[1;5H");                             /* cursor to row 1, col 5 */
    vt_feed(&t, out.data, out.len);
    CHECK(!t.bad);
    d = vt_diff(&t, &fb);
    CHECK_MSG(d < 0, "diff replay differs at cell %d", d);

    /* 256-colour mode names palette indices: pure red is cube index 196 */
    CHECK(cast_frame_ansi(&fa, NULL, CAST_COLOR_256, &out, &e) == UM_OK);
    CHECK_CONTAINS(out.data, "38;5;196;48;5;16m");
    cast_buf_free(&out);
}

TEST(cast_frame_events_and_resize) {
    if (!have_python()) { th_skip("python3 not installed"); return; }
    static frame_cell a[4 * 2], b[3 * 2];
    for (int i = 0; i < 8; i++) a[i] = C('a' + (uint32_t)i, 0xffffff, 0, 0);
    for (int i = 0; i < 6; i++) b[i] = C('A' + (uint32_t)i, 0xffffff, 0, 0);
    frame fa = { .w = 4, .h = 2, .cells = a }, fb = { .w = 3, .h = 2, .cells = b };
    char path[256];
    snprintf(path, sizeof path, "/tmp/unmask_test_%ld_f.cast", (long)getpid());
    um_err e = {0};
    cast_writer *c;
    CHECK(cast_open(&c, path, 4, 2, 1, "xterm", "t", &e) == UM_OK);
    CHECK(cast_frame(c, 0.0, &fa, CAST_COLOR_24BIT, &e) == UM_OK);
    CHECK(cast_frame(c, 0.5, &fa, CAST_COLOR_24BIT, &e) == UM_OK);   /* unchanged: no event */
    CHECK(cast_frame(c, 1.0, &fb, CAST_COLOR_24BIT, &e) == UM_OK);   /* resize + redraw */
    CHECK_EQ(cast_events(c), 3);
    CHECK(cast_close(c, &e) == UM_OK);
    static const char *py =
        "import json, sys\n"
        "l = [json.loads(x) for x in open(sys.argv[1], encoding='utf-8')]\n"
        "assert l[0]['width'] == 4 and l[0]['env']['TERM'] == 'xterm', l[0]\n"
        "assert [e[1] for e in l[1:]] == ['o', 'r', 'o'], l\n"
        "assert l[2][2] == '3x2' and l[2][0] == 1.0, l[2]\n"
        "assert 'abcd' in l[1][2] and 'ABC' in l[3][2] and '\\x1b[2J' in l[3][2], l\n"
        "print('OK')\n";
    char msg[4096];
    int rc = python_check(py, path, "-", msg, sizeof msg);
    unlink(path);
    CHECK_MSG(rc == 0, "python check: %s", msg);
}
