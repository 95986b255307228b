/*
 * test_evalcheck: the answer checks of `unmask eval` on outputs whose verdict is known by
 * construction: trimmed exact equality, the last number (thousands commas, decimals, signs,
 * trailing punctuation), and sudoku answers built from a known solution (written in rows,
 * with a changed given, a repeated digit, a non-digit, too few digits).
 */
#include "harness.h"
#include "evalcheck.h"
#include "sudoku.h"

#include <string.h>

/* Arto Inkala's 2012 puzzle and its solution (published with it). */
static const char *PUZ = "8..........36......7..9.2...5...7.......457.....1...3...1....68..85...1..9....4..";
static const char *SOL = "812753649943682175675491283154237896369845721287169534521974368438526917796318452";

TEST(evalcheck_exact) {
    char why[128];
    CHECK(evalcheck_run(EVALCHECK_EXACT, "p", "Paris", "  Paris\n", why, sizeof why));
    CHECK(evalcheck_run(EVALCHECK_EXACT, "p", "\tTwo words ", "Two words", NULL, 0));
    CHECK(!evalcheck_run(EVALCHECK_EXACT, "p", "Paris", "paris", why, sizeof why));
    CHECK_CONTAINS(why, "differs");
    CHECK(!evalcheck_run(EVALCHECK_EXACT, "p", "Paris", "Paris.", NULL, 0));
    CHECK(!evalcheck_run(EVALCHECK_EXACT, "p", "a b", "a  b", NULL, 0));
    CHECK(evalcheck_run(EVALCHECK_EXACT, "p", "", " \n ", NULL, 0));
}

TEST(evalcheck_last_number_normalizes) {
    static const struct { const char *text, *want; } cases[] = {
        { "The answer is 42.", "42" },
        { "3 apples and 5 pears", "5" },
        { "total: 1,234,567 dollars", "1234567" },
        { "1,2,3", "3" },
        { "x = -7", "-7" },
        { "5-3", "3" },
        { "well-2", "2" },
        { "0042", "42" },
        { "3.50", "3.5" },
        { "3.0", "3" },
        { "-0.0", "0" },
        { "#### 18", "18" },
        { "12,345.60 total", "12345.6" },
        { "v1.2.3", "3" },           /* read left to right: "1.2", then "3" */
    };
    char out[64];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        CHECK_MSG(evalcheck_last_number(cases[i].text, out, sizeof out), "no number in '%s'", cases[i].text);
        CHECK_MSG(strcmp(out, cases[i].want) == 0, "'%s' -> '%s', want '%s'", cases[i].text, out, cases[i].want);
    }
    CHECK(!evalcheck_last_number("no digits here", out, sizeof out));
    CHECK(!evalcheck_last_number("123456789", out, 4));       /* does not fit */
}

TEST(evalcheck_number) {
    char why[128];
    CHECK(evalcheck_run(EVALCHECK_NUMBER, "p", "#### 1,200", "so she pays 1200.", why, sizeof why));
    CHECK(evalcheck_run(EVALCHECK_NUMBER, "p", "72", "first 3, then 72", NULL, 0));
    CHECK(!evalcheck_run(EVALCHECK_NUMBER, "p", "72", "72 at first, then 73", why, sizeof why));
    CHECK_CONTAINS(why, "73");
    CHECK(!evalcheck_run(EVALCHECK_NUMBER, "p", "72", "seventy-two", why, sizeof why));
    CHECK_CONTAINS(why, "no number");
    um_err e;
    CHECK(evalcheck_task_ok(EVALCHECK_NUMBER, "p", "42", &e) == UM_OK);
    CHECK(evalcheck_task_ok(EVALCHECK_NUMBER, "p", "forty", &e) == UM_FAIL);
}

TEST(evalcheck_sudoku) {
    char why[128], text[256];
    uint8_t p[81], s[81];
    CHECK(sudoku_parse(PUZ, 81, p, NULL) == UM_OK && sudoku_parse(SOL, 81, s, NULL) == UM_OK);
    CHECK(sudoku_grid_valid(s) && sudoku_check(p, s));     /* the published solution */
    CHECK(evalcheck_run(EVALCHECK_SUDOKU, PUZ, SOL, SOL, why, sizeof why));
    /* the answer field is not consulted: the grid is checked against the prompt */
    CHECK(evalcheck_run(EVALCHECK_SUDOKU, PUZ, "anything", SOL, NULL, 0));
    /* nine rows on nine lines, then trailing text */
    size_t n = 0;
    for (int r = 0; r < 9; r++) { memcpy(text + n, SOL + r * 9, 9); n += 9; text[n++] = '\n'; }
    strcpy(text + n, "<eos>");
    CHECK(evalcheck_run(EVALCHECK_SUDOKU, PUZ, SOL, text, NULL, 0));
    /* a changed given: the first cell (8) becomes 9 */
    strcpy(text, SOL);
    text[0] = '9';
    CHECK(!evalcheck_run(EVALCHECK_SUDOKU, PUZ, SOL, text, why, sizeof why));
    CHECK_CONTAINS(why, "row 1, column 1");
    /* a repeated digit in a blank cell: cell 2 (1) becomes 2 */
    strcpy(text, SOL);
    text[1] = '2';
    CHECK(!evalcheck_run(EVALCHECK_SUDOKU, PUZ, SOL, text, why, sizeof why));
    CHECK_CONTAINS(why, "repeats");
    /* a non-digit, too short */
    strcpy(text, SOL);
    text[40] = 'x';
    CHECK(!evalcheck_run(EVALCHECK_SUDOKU, PUZ, SOL, text, why, sizeof why));
    CHECK_CONTAINS(why, "cell 41");
    CHECK(!evalcheck_run(EVALCHECK_SUDOKU, PUZ, SOL, "81275364994368", why, sizeof why));
    CHECK_CONTAINS(why, "only 14 of the 81");
    um_err e;
    CHECK(evalcheck_task_ok(EVALCHECK_SUDOKU, PUZ, "", &e) == UM_OK);
    CHECK(evalcheck_task_ok(EVALCHECK_SUDOKU, "123", "", &e) == UM_FAIL);
    evalcheck_kind k;
    CHECK(evalcheck_parse("number", &k, NULL) == UM_OK && k == EVALCHECK_NUMBER);
    CHECK(evalcheck_parse("fuzzy", &k, &e) == UM_FAIL);
}
