/*
 * sudoku: 9x9 sudoku grids for the sudoku model's data and for checking its answers.
 *
 * A grid is uint8_t[81], row-major, 0 = blank and 1..9 = a digit. Everything here is
 * deterministic: a puzzle is a pure function of (seed, difficulty), drawn from the module's
 * own splitmix64 stream (never rand()), so a data set is reproduced exactly from its seeds.
 *
 * Difficulty is graded by a logical solver that only ever places forced digits:
 *   easy   - naked singles alone solve it (some blank has one candidate left, every step);
 *   medium - naked + hidden singles solve it (a digit with one place left in a row, column
 *            or box), naked singles alone do not;
 *   hard   - naked + hidden singles get stuck: it needs search.
 * Every generated puzzle has exactly one solution and 22 to 45 givens.
 */
#ifndef UM_SUDOKU_H
#define UM_SUDOKU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util.h"

#define SUDOKU_CELLS      81
#define SUDOKU_MIN_GIVENS 22
#define SUDOKU_MAX_GIVENS 45

typedef enum sudoku_difficulty {
    SUDOKU_EASY = 0,
    SUDOKU_MEDIUM = 1,
    SUDOKU_HARD = 2,
} sudoku_difficulty;

/* "easy", "medium", "hard". */
const char *sudoku_difficulty_name(sudoku_difficulty d);
/* Parse a difficulty name; UM_FAIL (with a message) for anything else. */
int sudoku_difficulty_parse(const char *s, sudoku_difficulty *d, um_err *e);

/* Parse exactly n == 81 characters: '1'-'9' for givens, '.' or '0' for blanks. Only the
 * format is checked (not that the givens agree with each other). */
int  sudoku_parse(const char *s, size_t n, uint8_t grid[SUDOKU_CELLS], um_err *e);
/* 81 characters, '.' for blanks, then a NUL. */
void sudoku_format(const uint8_t grid[SUDOKU_CELLS], char out[SUDOKU_CELLS + 1]);
/* Number of non-blank cells. */
int  sudoku_givens(const uint8_t grid[SUDOKU_CELLS]);

/* A full grid with every row, column and box holding 1..9 exactly once. */
bool sudoku_grid_valid(const uint8_t grid[SUDOKU_CELLS]);
/* output is a valid full grid that keeps every given of puzzle. */
bool sudoku_check(const uint8_t puzzle[SUDOKU_CELLS], const uint8_t output[SUDOKU_CELLS]);
/* Read a model's answer: skipping spaces, tabs and newlines, the first 81 characters must all
 * be '1'-'9' (what follows them is ignored). UM_FAIL with a message otherwise. */
int  sudoku_read_digits(const char *text, size_t n, uint8_t grid[SUDOKU_CELLS], um_err *e);

/* Count the solutions of puzzle, stopping at limit (so 2 answers "more than one"). The first
 * one found goes to solution when it is non-NULL. A puzzle whose givens clash has 0. */
int  sudoku_count_solutions(const uint8_t puzzle[SUDOKU_CELLS], int limit, uint8_t solution[SUDOKU_CELLS]);
/* Fill grid's blanks with forced digits only: naked singles, plus hidden singles when
 * hidden is true. Returns the number of blanks left (0 = solved), or -1 on a contradiction. */
int  sudoku_solve_singles(uint8_t grid[SUDOKU_CELLS], bool hidden);
/* The difficulty of a puzzle with a unique solution (see the top of this file). */
sudoku_difficulty sudoku_grade(const uint8_t puzzle[SUDOKU_CELLS]);

/* A random full grid: randomized backtracking keyed by seed. */
void sudoku_full_grid(uint64_t seed, uint8_t grid[SUDOKU_CELLS]);
/* A puzzle of difficulty d with a unique solution and SUDOKU_MIN_GIVENS..SUDOKU_MAX_GIVENS
 * givens, and its solution; a pure function of (seed, d). */
int  sudoku_generate(uint64_t seed, sudoku_difficulty d, uint8_t puzzle[SUDOKU_CELLS],
                     uint8_t solution[SUDOKU_CELLS], um_err *e);

/* Data set splits: item i of a split uses seed split_base + seed_base + i, and the bases lie
 * 2^40 apart, so train, val and test never share a seed while seed_base + i < 2^40. */
typedef enum sudoku_split { SUDOKU_TRAIN = 0, SUDOKU_VAL = 1, SUDOKU_TEST = 2 } sudoku_split;
#define SUDOKU_SPLIT_SPAN ((uint64_t)1 << 40)
const char *sudoku_split_name(sudoku_split s);
int  sudoku_split_parse(const char *s, sudoku_split *out, um_err *e);
/* The seed of item index of split with seed_base; UM_FAIL when seed_base + index leaves the
 * split's range. */
int  sudoku_split_seed(sudoku_split s, uint64_t seed_base, uint64_t index, uint64_t *seed, um_err *e);
/* The difficulty of item index of a "mix" set: easy, medium, hard in turn. */
sudoku_difficulty sudoku_mix_difficulty(uint64_t index);

#endif
