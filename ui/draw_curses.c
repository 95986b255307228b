/*
 * draw_curses: frame -> ncursesw (see draw_curses.h).
 *
 * Colour pairs are allocated on demand from a small hash of (fg, bg) after quantising to
 * the terminal's depth; when the pairs run out the cache is flushed and the next frame
 * repaints everything. The crash-signal restore (a src/base/sigexit.h hook) writes a fixed
 * escape string and the saved termios with async-signal-safe calls only.
 */
#include <curses.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include "draw_curses.h"
#include "sigexit.h"

#define PAIR_SLOTS 4096              /* hash slots, > the pairs we ever allocate */
#define PAIR_LIMIT 2000              /* pairs used before flushing */

static struct {
    bool            open;
    int             depth;
    struct termios  saved;            /* terminal modes before curses */
    bool            have_saved;
    int             n_pairs;
    int             pair_max;
    bool            flushed;          /* pairs were forgotten during this frame */
    struct { int fg, bg, pair; } slot[PAIR_SLOTS];
} dc;

static volatile sig_atomic_t curses_on;      /* the terminal needs restoring */

/* sigexit hook for crash signals: mouse off, attributes reset, cursor shown, alternate
 * screen left, then the modes saved before curses started. */
static void restore_on_crash(void) {
    static const char restore[] = "\033[?1000l\033[?1002l\033[?1006l\033[0m\033[?25h\033[?1049l\r\n";
    if (!curses_on) return;
    curses_on = 0;
    ssize_t r = write(STDOUT_FILENO, restore, sizeof restore - 1);
    (void)r;
    if (dc.have_saved) tcsetattr(STDIN_FILENO, TCSAFLUSH, &dc.saved);
}

static int quantise(frame_color c) {
    if (c == FRAME_DEFAULT) return -1;
    switch (dc.depth) {
    case 16777216: return (int)c;
    case 256:      return frame_color_to_256(c);
    case 8:        return frame_color_to_8(c);
    default:       return -1;
    }
}

/* Forget all pairs. Cells on screen may still carry old pair numbers whose colours get
 * redefined, so the next refresh repaints the whole screen. */
void draw_curses_reset_colors(void) {
    memset(dc.slot, 0, sizeof dc.slot);
    dc.n_pairs = 0;
    dc.flushed = true;
    if (dc.open) clearok(curscr, TRUE);
}

static int pair_for(frame_color fg, frame_color bg) {
    if (dc.depth == 0) return 0;
    int f = quantise(fg), b = quantise(bg);
    if (f < 0 && b < 0) return 0;
    unsigned h = ((unsigned)f * 2654435761u ^ (unsigned)b * 40503u) % PAIR_SLOTS;
    for (int probe = 0; probe < PAIR_SLOTS; probe++, h = (h + 1) % PAIR_SLOTS) {
        if (dc.slot[h].pair && dc.slot[h].fg == f && dc.slot[h].bg == b) return dc.slot[h].pair;
        if (!dc.slot[h].pair) break;
    }
    if (dc.n_pairs >= dc.pair_max) draw_curses_reset_colors();
    h = ((unsigned)f * 2654435761u ^ (unsigned)b * 40503u) % PAIR_SLOTS;
    while (dc.slot[h].pair) h = (h + 1) % PAIR_SLOTS;
    int p = ++dc.n_pairs;
    if (init_extended_pair(p, f, b) != OK) return 0;
    dc.slot[h].fg = f;
    dc.slot[h].bg = b;
    dc.slot[h].pair = p;
    return p;
}

int draw_curses_open(int want, int *depth, um_err *e) {
    if (tcgetattr(STDIN_FILENO, &dc.saved) == 0) dc.have_saved = true;
    if (!initscr()) return um_errf(e, "cannot start curses (is TERM set?)");
    dc.open = true;
    curses_on = 1;
    atexit(draw_curses_close);
    if (sigexit_add_hook(restore_on_crash)) {
        draw_curses_close();
        return um_errf(e, "cannot register the terminal restore for crash signals");
    }

    raw();
    noecho();
    keypad(stdscr, TRUE);
    nodelay(stdscr, TRUE);
    curs_set(0);
    set_escdelay(25);
    mousemask(BUTTON1_PRESSED | BUTTON1_CLICKED, NULL);
    mouseinterval(0);

    const char *nc = getenv("NO_COLOR");
    int d = 0;
    if (has_colors() && !(nc && *nc)) {
        start_color();
        use_default_colors();
        d = COLORS >= 16777216 ? 16777216 : COLORS >= 256 ? 256 : COLORS >= 8 ? 8 : 0;
    }
    if (want >= 0 && want < d) d = want;
    dc.depth = d;
    dc.pair_max = UM_MIN(PAIR_LIMIT, COLOR_PAIRS - 1);
    if (dc.pair_max < 1) dc.depth = d = 0;
    *depth = d;
    return UM_OK;
}

void draw_curses_size(int *w, int *h) {
    *w = COLS;
    *h = LINES;
}

void draw_curses_frame(const frame *f) {
    int w = UM_MIN(f->w, COLS), h = UM_MIN(f->h, LINES);
    dc.flushed = false;
    for (int pass = 0; pass < 2; pass++) {    /* a pass that flushed pairs is painted again */
    for (int y = 0; y < h; y++) {
        for (int x = 0; x < w; x++) {
            const frame_cell *c = &f->cells[(size_t)y * (size_t)f->w + (size_t)x];
            if (c->width == 0) continue;
            attr_t a = A_NORMAL;
            if (c->attrs & FRAME_BOLD) a |= A_BOLD;
            if (c->attrs & FRAME_DIM) a |= A_DIM;
            if (c->attrs & FRAME_UNDERLINE) a |= A_UNDERLINE;
            if (c->attrs & FRAME_REVERSE) a |= A_REVERSE;
            if (c->attrs & FRAME_ITALIC) a |= A_ITALIC;
            int pair = pair_for(c->fg, c->bg);
            attr_set(a, 0, &pair);
            if (c->width == 2 && x + 1 >= w) { mvaddstr(y, x, " "); continue; }
            mvaddstr(y, x, c->text);
        }
    }
    if (!dc.flushed) break;
    dc.flushed = false;
    }
    attr_set(A_NORMAL, 0, NULL);
    wnoutrefresh(stdscr);
    doupdate();
}

void draw_curses_close(void) {
    if (!dc.open) return;
    dc.open = false;
    curses_on = 0;
    mousemask(0, NULL);
    curs_set(1);
    endwin();
    fflush(stdout);
}
