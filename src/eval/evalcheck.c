/*
 * evalcheck: answer checks for `unmask eval` (see evalcheck.h). Numbers are compared as
 * normalized decimal text, never through floating point, so "0.1" and "0.10" agree and
 * two long integers that differ in their last digit do not.
 */
#include "evalcheck.h"

#include <stdio.h>
#include <string.h>

#include "sudoku.h"

static const char *const NAMES[] = { "exact", "number", "sudoku" };

const char *evalcheck_name(evalcheck_kind k) {
    return (unsigned)k < UM_ARRAY_LEN(NAMES) ? NAMES[k] : "?";
}

int evalcheck_parse(const char *s, evalcheck_kind *k, um_err *e) {
    for (unsigned i = 0; i < UM_ARRAY_LEN(NAMES); i++)
        if (s && strcmp(s, NAMES[i]) == 0) { *k = (evalcheck_kind)i; return UM_OK; }
    return um_errf(e, "unknown check '%s' (exact, number or sudoku)", s ? s : "");
}

static bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }
static bool is_digit(char c) { return c >= '0' && c <= '9'; }
static bool is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

/* [*b, *e) trimmed of ASCII whitespace at both ends. */
static void trim(const char *s, const char **b, const char **e) {
    *b = s;
    *e = s + strlen(s);
    while (*b < *e && is_space(**b)) (*b)++;
    while (*e > *b && is_space((*e)[-1])) (*e)--;
}

bool evalcheck_last_number(const char *text, char *out, size_t cap) {
    const char *best = NULL;
    size_t best_len = 0;
    bool best_neg = false;
    for (const char *p = text; *p;) {
        if (!is_digit(*p)) { p++; continue; }
        const char *start = p;
        while (is_digit(*p)) p++;
        /* thousands groups: a comma followed by exactly three digits */
        while (p[0] == ',' && is_digit(p[1]) && is_digit(p[2]) && is_digit(p[3]) && !is_digit(p[4])) p += 4;
        if (p[0] == '.' && is_digit(p[1])) {
            p++;
            while (is_digit(*p)) p++;
        }
        best = start;
        best_len = (size_t)(p - start);
        /* a minus sign, not a hyphen between words or a subtraction ("5-3") */
        best_neg = start > text && start[-1] == '-' &&
                   (start - 1 == text || !(is_digit(start[-2]) || is_alpha(start[-2])));
    }
    if (!best) return false;
    /* digits without commas, split at the point */
    char digits[512];
    size_t n = 0, point = (size_t)-1;
    for (size_t i = 0; i < best_len; i++) {
        if (best[i] == ',') continue;
        if (n + 1 >= sizeof digits) return false;
        if (best[i] == '.') point = n;
        else digits[n++] = best[i];
    }
    size_t int_len = point == (size_t)-1 ? n : point;
    size_t lead = 0, frac_end = n;
    while (lead + 1 < int_len && digits[lead] == '0') lead++;
    while (frac_end > int_len && digits[frac_end - 1] == '0') frac_end--;
    bool zero = true;
    for (size_t i = lead; i < frac_end; i++) zero &= digits[i] == '0';
    size_t need = (best_neg && !zero) + (int_len - lead) + (frac_end > int_len ? 1 + frac_end - int_len : 0) + 1;
    if (need > cap) return false;
    size_t w = 0;
    if (best_neg && !zero) out[w++] = '-';
    for (size_t i = lead; i < int_len; i++) out[w++] = digits[i];
    if (frac_end > int_len) {
        out[w++] = '.';
        for (size_t i = int_len; i < frac_end; i++) out[w++] = digits[i];
    }
    out[w] = '\0';
    return true;
}

int evalcheck_task_ok(evalcheck_kind k, const char *prompt, const char *answer, um_err *e) {
    char num[512];
    uint8_t grid[SUDOKU_CELLS];
    switch (k) {
    case EVALCHECK_EXACT:
        return UM_OK;
    case EVALCHECK_NUMBER:
        if (!evalcheck_last_number(answer, num, sizeof num)) return um_errf(e, "\"answer\" holds no number");
        return UM_OK;
    case EVALCHECK_SUDOKU:
        if (sudoku_parse(prompt, strlen(prompt), grid, e) != UM_OK) return um_err_prefix(e, "\"prompt\"");
        return UM_OK;
    }
    return um_errf(e, "unknown check %d", (int)k);
}

static void say(char *why, size_t cap, const char *msg) {
    if (why && cap) snprintf(why, cap, "%s", msg);
}

bool evalcheck_run(evalcheck_kind k, const char *prompt, const char *answer, const char *output,
                   char *why, size_t why_cap) {
    say(why, why_cap, "");
    switch (k) {
    case EVALCHECK_EXACT: {
        const char *ob, *oe, *ab, *ae;
        trim(output, &ob, &oe);
        trim(answer, &ab, &ae);
        bool ok = oe - ob == ae - ab && memcmp(ob, ab, (size_t)(oe - ob)) == 0;
        if (!ok) say(why, why_cap, "differs from the answer");
        return ok;
    }
    case EVALCHECK_NUMBER: {
        char got[512], want[512];
        if (!evalcheck_last_number(answer, want, sizeof want)) { say(why, why_cap, "the answer holds no number"); return false; }
        if (!evalcheck_last_number(output, got, sizeof got)) { say(why, why_cap, "no number in the output"); return false; }
        if (strcmp(got, want) != 0) {
            if (why && why_cap) snprintf(why, why_cap, "last number %.40s, expected %.40s", got, want);
            return false;
        }
        return true;
    }
    case EVALCHECK_SUDOKU: {
        uint8_t puzzle[SUDOKU_CELLS], out[SUDOKU_CELLS];
        um_err e;
        if (sudoku_parse(prompt, strlen(prompt), puzzle, &e) != UM_OK) { say(why, why_cap, "the prompt is not a sudoku"); return false; }
        if (sudoku_read_digits(output, strlen(output), out, &e) != UM_OK) { say(why, why_cap, e.msg); return false; }
        if (sudoku_check(puzzle, out)) return true;
        for (int c = 0; c < SUDOKU_CELLS; c++)
            if (puzzle[c] && puzzle[c] != out[c]) {
                if (why && why_cap) snprintf(why, why_cap, "changes the given at row %d, column %d", c / 9 + 1, c % 9 + 1);
                return false;
            }
        say(why, why_cap, "a digit repeats in a row, column or box");
        return false;
    }
    }
    say(why, why_cap, "unknown check");
    return false;
}
