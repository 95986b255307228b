/*
 * grid9: the sudoku on the canvas (see grid9.h for the rule).
 */
#include <stdio.h>
#include <string.h>

#include "grid9.h"

#define PIECE_MAX 64

/* The one character of token tok's text, spaces trimmed; 0 when it is not exactly one byte. */
static char one_char(const ui_source *src, int32_t tok) {
    char buf[PIECE_MAX];
    if (!src || !src->piece) return 0;
    size_t n = src->piece(src->self, tok, buf, sizeof buf), a = 0;
    if (n > sizeof buf) n = sizeof buf;
    while (a < n && buf[a] == ' ') a++;
    while (n > a && buf[n - 1] == ' ') n--;
    return n - a == 1 ? buf[a] : 0;
}

static uint8_t digit_of(const ui_source *src, const um_pos *p) {
    if (p->masked) return 0;
    char ch = one_char(src, p->token);
    return ch >= '1' && ch <= '9' ? (uint8_t)(ch - '0') : 0;
}

static bool is_cell_char(char ch) { return (ch >= '1' && ch <= '9') || ch == '.' || ch == '0'; }

/* Do cells a and b share a row, a column or a box? */
static bool peers(int a, int b) {
    int ra = a / 9, ca = a % 9, rb = b / 9, cb = b % 9;
    return a != b && (ra == rb || ca == cb || (ra / 3 == rb / 3 && ca / 3 == cb / 3));
}

bool grid9_scan(const ui_source *src, const um_snapshot *s, grid9 *g) {
    memset(g, 0, sizeof *g);
    g->answer0 = g->puzzle0 = -1;
    if (!s || s->n_canvas - s->n_prompt < SUDOKU_CELLS) return false;
    g->answer0 = s->n_prompt;
    /* the puzzle: the last run of 81 cell characters in the prompt */
    for (int32_t i = s->n_prompt - 1, run = 0; i >= 0; i--) {
        const um_pos *p = &s->pos[i];
        run = !p->masked && is_cell_char(one_char(src, p->token)) ? run + 1 : 0;
        if (run == SUDOKU_CELLS) { g->puzzle0 = i; break; }
    }
    if (g->puzzle0 >= 0)
        for (int k = 0; k < SUDOKU_CELLS; k++) g->given[k] = digit_of(src, &s->pos[g->puzzle0 + k]);
    for (int k = 0; k < SUDOKU_CELLS; k++) g->digit[k] = digit_of(src, &s->pos[g->answer0 + k]);
    for (int k = 0; k < SUDOKU_CELLS; k++) {
        uint8_t d = g->digit[k];
        if (!d) continue;
        bool bad = g->given[k] && g->given[k] != d;
        for (int j = 0; j < SUDOKU_CELLS && !bad; j++)
            bad = peers(k, j) && (g->digit[j] == d || g->given[j] == d);
        g->conflict[k] = bad;
        g->n_conflicts += bad;
    }
    return true;
}

void grid9_verdict(const grid9 *g, char *buf, size_t cap) {
    int empty = 0;
    for (int k = 0; k < SUDOKU_CELLS; k++) empty += g->digit[k] == 0;
    if (g->n_conflicts) snprintf(buf, cap, "%d conflict%s", g->n_conflicts, g->n_conflicts == 1 ? "" : "s");
    else if (empty == 0) snprintf(buf, cap, "solved");
    else snprintf(buf, cap, "%d to fill", empty);
}
