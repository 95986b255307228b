/*
 * test_sudoku: the sudoku library against independent implementations written here: a plain
 * brute-force solution counter that scans rows, columns and boxes for every digit, a validity
 * check that scans each row, column and box, and a naked/hidden-singles solver over explicit
 * candidate sets. Generated puzzles must have one solution, 22..45 givens and the grade asked
 * for; the checker must accept the solution and reject every kind of broken answer.
 */
#include "harness.h"
#include "sudoku.h"

#include <stdbool.h>
#include <string.h>

/* ---------------------------------------------------------------- independent helpers */

static bool ref_can_place(const uint8_t *g, int c, int d) {
    int r = c / 9, col = c % 9, br = r / 3 * 3, bc = col / 3 * 3;
    for (int k = 0; k < 9; k++) {
        if (g[r * 9 + k] == d || g[k * 9 + col] == d) return false;
        if (g[(br + k / 3) * 9 + bc + k % 3] == d) return false;
    }
    return true;
}

/* Solutions of g (modified in place, restored), counted up to limit: branch on the blank
 * with the fewest digits that fit, found by scanning (no masks shared with the library). */
static int ref_count(uint8_t *g, int limit) {
    int best = -1, best_n = 10;
    for (int c = 0; c < 81 && best_n > 1; c++) {
        if (g[c]) continue;
        int n = 0;
        for (int d = 1; d <= 9; d++) n += ref_can_place(g, c, d);
        if (n < best_n) { best = c; best_n = n; }
    }
    if (best < 0) return 1;
    int n = 0;
    for (int d = 1; d <= 9 && n < limit; d++) {
        if (!ref_can_place(g, best, d)) continue;
        g[best] = (uint8_t)d;
        n += ref_count(g, limit - n);
        g[best] = 0;
    }
    return n;
}

static int ref_solutions(const uint8_t *puzzle) {
    uint8_t g[81];
    memcpy(g, puzzle, 81);
    for (int c = 0; c < 81; c++) {           /* givens must not clash */
        if (!g[c]) continue;
        int d = g[c];
        g[c] = 0;
        bool ok = ref_can_place(g, c, d);
        g[c] = (uint8_t)d;
        if (!ok) return 0;
    }
    return ref_count(g, 2);
}

/* Every row, column and box holds 1..9 once. */
static bool ref_valid(const uint8_t *g) {
    for (int u = 0; u < 9; u++) {
        int row = 0, col = 0, box = 0;
        for (int k = 0; k < 9; k++) {
            int a = g[u * 9 + k], b = g[k * 9 + u], c = g[(u / 3 * 3 + k / 3) * 9 + u % 3 * 3 + k % 3];
            if (a < 1 || a > 9 || b < 1 || b > 9 || c < 1 || c > 9) return false;
            row |= 1 << a; col |= 1 << b; box |= 1 << c;
        }
        if (row != 0x3fe || col != 0x3fe || box != 0x3fe) return false;
    }
    return true;
}

/* Singles solver over explicit candidate sets: true when it fills the grid. */
static bool ref_singles(const uint8_t *puzzle, bool hidden) {
    uint8_t g[81];
    memcpy(g, puzzle, 81);
    for (;;) {
        bool cand[81][10];
        for (int c = 0; c < 81; c++)
            for (int d = 1; d <= 9; d++) cand[c][d] = !g[c] && ref_can_place(g, c, d);
        int placed = -1, digit = 0;
        for (int c = 0; c < 81 && placed < 0; c++) {
            if (g[c]) continue;
            int n = 0, last = 0;
            for (int d = 1; d <= 9; d++) if (cand[c][d]) { n++; last = d; }
            if (n == 1) { placed = c; digit = last; }
        }
        if (placed < 0 && hidden) {
            for (int u = 0; u < 27 && placed < 0; u++)
                for (int d = 1; d <= 9 && placed < 0; d++) {
                    int n = 0, where = -1;
                    for (int k = 0; k < 9; k++) {
                        int c = u < 9 ? u * 9 + k : u < 18 ? k * 9 + (u - 9)
                                : ((u - 18) / 3 * 3 + k / 3) * 9 + (u - 18) % 3 * 3 + k % 3;
                        if (cand[c][d]) { n++; where = c; }
                    }
                    if (n == 1) { placed = where; digit = d; }
                }
        }
        if (placed < 0) break;
        g[placed] = (uint8_t)digit;
    }
    for (int c = 0; c < 81; c++) if (!g[c]) return false;
    return ref_valid(g);
}

static sudoku_difficulty ref_grade(const uint8_t *p) {
    if (ref_singles(p, false)) return SUDOKU_EASY;
    if (ref_singles(p, true)) return SUDOKU_MEDIUM;
    return SUDOKU_HARD;
}

static void parse_ok(const char *s, uint8_t *g) {
    um_err e;
    if (sudoku_parse(s, strlen(s), g, &e) != UM_OK) memset(g, 0, 81);
}

/* Arto Inkala's 2012 puzzle: one solution, not solvable by singles. */
static const char *INKALA = "8..........36......7..9.2...5...7.......457.....1...3...1....68..85...1..9....4..";

/* ---------------------------------------------------------------- generation */

TEST(sudoku_generated_puzzles_unique_in_range_and_graded) {
    for (int d = SUDOKU_EASY; d <= SUDOKU_HARD; d++) {
        for (uint64_t seed = 0; seed < 12; seed++) {
            uint8_t p[81], s[81];
            um_err e;
            CHECK_MSG(sudoku_generate(seed * 7919 + 3, (sudoku_difficulty)d, p, s, &e) == UM_OK, "%s", e.msg);
            int givens = 0;
            for (int c = 0; c < 81; c++) {
                givens += p[c] != 0;
                CHECK(p[c] == 0 || p[c] == s[c]);          /* the puzzle is the solution with holes */
            }
            CHECK(givens >= 22 && givens <= 45);
            CHECK(ref_valid(s));
            CHECK_EQ(ref_solutions(p), 1);
            CHECK_MSG(ref_grade(p) == (sudoku_difficulty)d, "seed %llu asked %s, graded %s by the reference",
                      (unsigned long long)seed, sudoku_difficulty_name((sudoku_difficulty)d),
                      sudoku_difficulty_name(ref_grade(p)));
        }
    }
}

TEST(sudoku_generate_is_deterministic_and_keyed_by_difficulty) {
    uint8_t p1[81], s1[81], p2[81], s2[81], p3[81], s3[81];
    CHECK(sudoku_generate(12345, SUDOKU_MEDIUM, p1, s1, NULL) == UM_OK);
    CHECK(sudoku_generate(12345, SUDOKU_MEDIUM, p2, s2, NULL) == UM_OK);
    CHECK(memcmp(p1, p2, 81) == 0 && memcmp(s1, s2, 81) == 0);
    CHECK(sudoku_generate(12345, SUDOKU_EASY, p3, s3, NULL) == UM_OK);
    CHECK(memcmp(s1, s3, 81) != 0);
    CHECK(sudoku_generate(12346, SUDOKU_MEDIUM, p3, s3, NULL) == UM_OK);
    CHECK(memcmp(s1, s3, 81) != 0);
    uint8_t f1[81], f2[81];
    sudoku_full_grid(99, f1);
    sudoku_full_grid(99, f2);
    CHECK(ref_valid(f1) && memcmp(f1, f2, 81) == 0);
}

TEST(sudoku_easy_givens_spread) {
    /* easy puzzles are not all piled up at one count of givens */
    int lo = 81, hi = 0;
    for (uint64_t seed = 0; seed < 60; seed++) {
        uint8_t p[81], s[81];
        CHECK(sudoku_generate(seed, SUDOKU_EASY, p, s, NULL) == UM_OK);
        int n = sudoku_givens(p);
        lo = n < lo ? n : lo;
        hi = n > hi ? n : hi;
    }
    CHECK_MSG(hi - lo >= 8, "easy givens only span %d..%d", lo, hi);
}

/* ---------------------------------------------------------------- solver and grading */

TEST(sudoku_counter_and_grade_on_known_puzzles) {
    uint8_t p[81], sol[81];
    parse_ok(INKALA, p);
    CHECK_EQ(sudoku_givens(p), 21);
    CHECK_EQ(sudoku_count_solutions(p, 2, sol), 1);
    CHECK_EQ(ref_solutions(p), 1);
    CHECK(ref_valid(sol));
    CHECK(sudoku_check(p, sol));
    CHECK_EQ(sudoku_grade(p), SUDOKU_HARD);
    CHECK_EQ(ref_grade(p), SUDOKU_HARD);
    /* remove a given of a full grid's neighbour: an empty grid has many solutions */
    uint8_t empty[81] = { 0 };
    CHECK_EQ(sudoku_count_solutions(empty, 2, NULL), 2);
    /* clashing givens: no solution */
    uint8_t clash[81] = { 0 };
    clash[0] = 5; clash[8] = 5;
    CHECK_EQ(sudoku_count_solutions(clash, 2, NULL), 0);
    CHECK_EQ(sudoku_solve_singles(clash, true), -1);
    /* a solution with one cell blanked is easy; singles fill it back */
    uint8_t one[81];
    memcpy(one, sol, 81);
    one[40] = 0;
    CHECK_EQ(sudoku_grade(one), SUDOKU_EASY);
    CHECK_EQ(sudoku_solve_singles(one, false), 0);
    CHECK(memcmp(one, sol, 81) == 0);
}

TEST(sudoku_grade_agrees_with_reference_on_random_removals) {
    /* puzzles the generator did not shape: a full grid's cells removed in the test's own
     * random order while the reference counter still finds one solution */
    int seen[3] = { 0 };
    for (uint64_t seed = 0; seed < 40; seed++) {
        uint8_t g[81], order[81];
        sudoku_full_grid(seed, g);
        uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
        for (int c = 0; c < 81; c++) order[c] = (uint8_t)c;
        for (int c = 80; c > 0; c--) {
            x ^= x << 13; x ^= x >> 7; x ^= x << 17;
            int j = (int)(x % (uint64_t)(c + 1));
            uint8_t t = order[c]; order[c] = order[j]; order[j] = t;
        }
        for (int k = 0; k < 81; k++) {
            uint8_t v = g[order[k]];
            g[order[k]] = 0;
            if (ref_solutions(g) != 1) g[order[k]] = v;
            if (k % 8 == 7 && sudoku_count_solutions(g, 2, NULL) == 1) {   /* intermediate puzzles too */
                sudoku_difficulty d = sudoku_grade(g);
                CHECK_EQ(d, ref_grade(g));
                seen[d]++;
            }
        }
        sudoku_difficulty d = sudoku_grade(g);
        CHECK_EQ(d, ref_grade(g));
        seen[d]++;
    }
    CHECK_MSG(seen[SUDOKU_EASY] > 0 && seen[SUDOKU_MEDIUM] > 0 && seen[SUDOKU_HARD] > 0,
              "graded %d easy, %d medium, %d hard", seen[0], seen[1], seen[2]);
}

/* ---------------------------------------------------------------- text and checking */

TEST(sudoku_parse_and_format) {
    uint8_t g[81];
    um_err e;
    char s[82];
    CHECK(sudoku_parse(INKALA, 81, g, &e) == UM_OK);
    sudoku_format(g, s);
    CHECK_STREQ(s, INKALA);
    char zeros[82];
    memcpy(zeros, INKALA, 82);
    for (int i = 0; i < 81; i++) if (zeros[i] == '.') zeros[i] = '0';
    uint8_t g0[81];
    CHECK(sudoku_parse(zeros, 81, g0, &e) == UM_OK);
    CHECK(memcmp(g, g0, 81) == 0);
    CHECK(sudoku_parse(INKALA, 80, g, &e) == UM_FAIL);
    CHECK_CONTAINS(e.msg, "81 characters");
    char bad[82];
    memcpy(bad, INKALA, 82);
    bad[10] = 'x';
    CHECK(sudoku_parse(bad, 81, g, &e) == UM_FAIL);
    CHECK_CONTAINS(e.msg, "row 2, column 2");
}

TEST(sudoku_check_accepts_solution_rejects_broken) {
    uint8_t p[81], s[81], o[81];
    CHECK(sudoku_generate(777, SUDOKU_MEDIUM, p, s, NULL) == UM_OK);
    CHECK(sudoku_check(p, s));
    /* a changed given (the rest left as is) */
    int given = 0;
    while (!p[given]) given++;
    memcpy(o, s, 81);
    o[given] = (uint8_t)(o[given] % 9 + 1);
    CHECK(!ref_valid(o) && !sudoku_check(p, o));
    /* a valid grid that does not keep the givens: digits 1 and 2 swapped everywhere */
    for (int c = 0; c < 81; c++) o[c] = s[c] == 1 ? 2 : s[c] == 2 ? 1 : s[c];
    CHECK(ref_valid(o) && !sudoku_check(p, o));
    /* duplicates: swap two blanks of one row within a box (columns break), of one column
     * within a box (rows break), and of one row across boxes (columns and boxes break) */
    int pairs[3][2] = { { -1, -1 }, { -1, -1 }, { -1, -1 } };
    for (int a = 0; a < 81; a++)
        for (int b = a + 1; b < 81; b++) {
            if (p[a] || p[b] || s[a] == s[b]) continue;
            bool same_row = a / 9 == b / 9, same_col = a % 9 == b % 9;
            bool same_box = a / 27 == b / 27 && a % 9 / 3 == b % 9 / 3;
            int k = same_row && same_box ? 0 : same_col && same_box ? 1 : same_row ? 2 : -1;
            if (k >= 0 && pairs[k][0] < 0) { pairs[k][0] = a; pairs[k][1] = b; }
        }
    int tried = 0;
    for (int k = 0; k < 3; k++) {
        if (pairs[k][0] < 0) continue;
        memcpy(o, s, 81);
        uint8_t t = o[pairs[k][0]]; o[pairs[k][0]] = o[pairs[k][1]]; o[pairs[k][1]] = t;
        CHECK_MSG(!ref_valid(o) && !sudoku_check(p, o), "swap kind %d accepted", k);
        tried++;
    }
    CHECK(tried >= 2);
    /* a blank left, and a digit out of range */
    memcpy(o, s, 81);
    for (int c = 0; c < 81; c++) if (!p[c]) { o[c] = 0; break; }
    CHECK(!sudoku_check(p, o));
    memcpy(o, s, 81);
    for (int c = 0; c < 81; c++) if (!p[c]) { o[c] = 10; break; }
    CHECK(!sudoku_check(p, o));
}

TEST(sudoku_read_digits_from_model_output) {
    uint8_t p[81], s[81], o[81];
    char text[82], spaced[200];
    um_err e;
    CHECK(sudoku_generate(5, SUDOKU_EASY, p, s, NULL) == UM_OK);
    sudoku_format(s, text);
    CHECK(sudoku_read_digits(text, 81, o, &e) == UM_OK);
    CHECK(memcmp(o, s, 81) == 0);
    /* rows on lines, spaces between cells, trailing text ignored */
    size_t n = 0;
    for (int c = 0; c < 81; c++) {
        spaced[n++] = text[c];
        spaced[n++] = c % 9 == 8 ? '\n' : ' ';
    }
    memcpy(spaced + n, "done", 4);
    n += 4;
    CHECK(sudoku_read_digits(spaced, n, o, &e) == UM_OK);
    CHECK(memcmp(o, s, 81) == 0);
    /* too short, a non-digit, a zero */
    CHECK(sudoku_read_digits(text, 80, o, &e) == UM_FAIL);
    CHECK_CONTAINS(e.msg, "80 of the 81");
    text[30] = '.';
    CHECK(sudoku_read_digits(text, 81, o, &e) == UM_FAIL);
    CHECK_CONTAINS(e.msg, "cell 31");
    text[30] = '0';
    CHECK(sudoku_read_digits(text, 81, o, &e) == UM_FAIL);
}

TEST(sudoku_split_seed_ranges) {
    uint64_t a, b, c;
    CHECK(sudoku_split_seed(SUDOKU_TRAIN, 0, 0, &a, NULL) == UM_OK);
    CHECK(sudoku_split_seed(SUDOKU_VAL, 0, 0, &b, NULL) == UM_OK);
    CHECK(sudoku_split_seed(SUDOKU_TEST, 5, 7, &c, NULL) == UM_OK);
    CHECK(a == 0 && b == (1ull << 40) && c == (2ull << 40) + 12);
    /* the last seed of train stays below the first of val */
    CHECK(sudoku_split_seed(SUDOKU_TRAIN, (1ull << 40) - 1, 0, &a, NULL) == UM_OK);
    CHECK(a < b);
    um_err e;
    CHECK(sudoku_split_seed(SUDOKU_TRAIN, (1ull << 40) - 1, 1, &a, &e) == UM_FAIL);
    CHECK(sudoku_split_seed(SUDOKU_TEST, UINT64_MAX, 1, &a, &e) == UM_FAIL);
    sudoku_split sp;
    sudoku_difficulty d;
    CHECK(sudoku_split_parse("val", &sp, NULL) == UM_OK && sp == SUDOKU_VAL);
    CHECK(sudoku_split_parse("training", &sp, &e) == UM_FAIL);
    CHECK(sudoku_difficulty_parse("hard", &d, NULL) == UM_OK && d == SUDOKU_HARD);
    CHECK(sudoku_difficulty_parse("HARD", &d, &e) == UM_FAIL);
    CHECK(sudoku_mix_difficulty(0) == SUDOKU_EASY && sudoku_mix_difficulty(4) == SUDOKU_MEDIUM &&
          sudoku_mix_difficulty(8) == SUDOKU_HARD);
}
