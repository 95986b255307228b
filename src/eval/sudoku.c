/*
 * sudoku: grids, a solution counter, the singles solver that grades difficulty, and the
 * seeded puzzle generator (see sudoku.h).
 *
 * Invariants: a search state's row/col/box masks always hold exactly the digits placed in
 * its grid (bit d set = digit d used); every random choice comes from one splitmix64 stream
 * seeded by the caller, so results never depend on the platform's rand() or on timing.
 */
#include "sudoku.h"

#include <string.h>

/* ---------------------------------------------------------------- random stream */

typedef struct rng { uint64_t s; } rng;

static uint64_t rng_next(rng *r) {            /* splitmix64 */
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static uint32_t rng_below(rng *r, uint32_t n) {     /* uniform in [0, n) */
    return (uint32_t)(((unsigned __int128)rng_next(r) * n) >> 64);
}

static void shuffle(rng *r, uint8_t *a, int n) {
    for (int i = n - 1; i > 0; i--) {
        int j = (int)rng_below(r, (uint32_t)i + 1);
        uint8_t t = a[i]; a[i] = a[j]; a[j] = t;
    }
}

/* ---------------------------------------------------------------- names */

static const char *const DIFF_NAMES[] = { "easy", "medium", "hard" };
static const char *const SPLIT_NAMES[] = { "train", "val", "test" };

const char *sudoku_difficulty_name(sudoku_difficulty d) {
    return (unsigned)d < UM_ARRAY_LEN(DIFF_NAMES) ? DIFF_NAMES[d] : "?";
}

int sudoku_difficulty_parse(const char *s, sudoku_difficulty *d, um_err *e) {
    for (unsigned i = 0; i < UM_ARRAY_LEN(DIFF_NAMES); i++)
        if (s && strcmp(s, DIFF_NAMES[i]) == 0) { *d = (sudoku_difficulty)i; return UM_OK; }
    return um_errf(e, "unknown difficulty '%s' (easy, medium or hard)", s ? s : "");
}

const char *sudoku_split_name(sudoku_split s) {
    return (unsigned)s < UM_ARRAY_LEN(SPLIT_NAMES) ? SPLIT_NAMES[s] : "?";
}

int sudoku_split_parse(const char *s, sudoku_split *out, um_err *e) {
    for (unsigned i = 0; i < UM_ARRAY_LEN(SPLIT_NAMES); i++)
        if (s && strcmp(s, SPLIT_NAMES[i]) == 0) { *out = (sudoku_split)i; return UM_OK; }
    return um_errf(e, "unknown split '%s' (train, val or test)", s ? s : "");
}

int sudoku_split_seed(sudoku_split s, uint64_t seed_base, uint64_t index, uint64_t *seed, um_err *e) {
    uint64_t off;
    if ((unsigned)s >= UM_ARRAY_LEN(SPLIT_NAMES)) return um_errf(e, "unknown split %d", (int)s);
    if (!um_add_ok(seed_base, index, &off) || off >= SUDOKU_SPLIT_SPAN)
        return um_errf(e, "seed base %llu + item %llu leaves the split's seed range (must stay below 2^40)",
                       (unsigned long long)seed_base, (unsigned long long)index);
    *seed = (uint64_t)s * SUDOKU_SPLIT_SPAN + off;
    return UM_OK;
}

sudoku_difficulty sudoku_mix_difficulty(uint64_t index) { return (sudoku_difficulty)(index % 3); }

/* ---------------------------------------------------------------- text */

int sudoku_parse(const char *s, size_t n, uint8_t grid[SUDOKU_CELLS], um_err *e) {
    if (n != SUDOKU_CELLS)
        return um_errf(e, "a sudoku is 81 characters ('1'-'9', '.' for blanks), this one has %zu", n);
    for (int i = 0; i < SUDOKU_CELLS; i++) {
        char c = s[i];
        if (c >= '1' && c <= '9') grid[i] = (uint8_t)(c - '0');
        else if (c == '.' || c == '0') grid[i] = 0;
        else return um_errf(e, "sudoku cell %d (row %d, column %d) is '%c', not '1'-'9', '.' or '0'",
                            i + 1, i / 9 + 1, i % 9 + 1, (unsigned char)c >= 0x20 && c != 0x7f ? c : '?');
    }
    return UM_OK;
}

void sudoku_format(const uint8_t grid[SUDOKU_CELLS], char out[SUDOKU_CELLS + 1]) {
    for (int i = 0; i < SUDOKU_CELLS; i++)
        out[i] = grid[i] >= 1 && grid[i] <= 9 ? (char)('0' + grid[i]) : '.';
    out[SUDOKU_CELLS] = '\0';
}

int sudoku_givens(const uint8_t grid[SUDOKU_CELLS]) {
    int n = 0;
    for (int i = 0; i < SUDOKU_CELLS; i++) n += grid[i] != 0;
    return n;
}

int sudoku_read_digits(const char *text, size_t n, uint8_t grid[SUDOKU_CELLS], um_err *e) {
    int k = 0;
    for (size_t i = 0; i < n && k < SUDOKU_CELLS; i++) {
        char c = text[i];
        if (c == ' ' || c == '\t' || c == '\n' || c == '\r') continue;
        if (c < '1' || c > '9')
            return um_errf(e, "cell %d of the answer is not a digit 1-9", k + 1);
        grid[k++] = (uint8_t)(c - '0');
    }
    if (k < SUDOKU_CELLS) return um_errf(e, "the answer has only %d of the 81 digits", k);
    return UM_OK;
}

/* ---------------------------------------------------------------- search state */

static inline int row_of(int c) { return c / 9; }
static inline int col_of(int c) { return c % 9; }
static inline int box_of(int c) { return (c / 27) * 3 + (c % 9) / 3; }

/* The k-th cell (0..8) of unit u: rows 0..8, columns 9..17, boxes 18..26. */
static inline int unit_cell(int u, int k) {
    if (u < 9) return u * 9 + k;
    if (u < 18) return k * 9 + (u - 9);
    int b = u - 18;
    return ((b / 3) * 3 + k / 3) * 9 + (b % 3) * 3 + k % 3;
}

typedef struct state {
    uint8_t  g[SUDOKU_CELLS];
    uint16_t row[9], col[9], box[9];     /* bit d (1..9) set: digit d placed in that unit */
} state;

static inline uint16_t cands(const state *s, int c) {
    return (uint16_t)(~(s->row[row_of(c)] | s->col[col_of(c)] | s->box[box_of(c)]) & 0x3fe);
}

static inline void place(state *s, int c, int d) {
    uint16_t b = (uint16_t)(1u << d);
    s->g[c] = (uint8_t)d;
    s->row[row_of(c)] |= b; s->col[col_of(c)] |= b; s->box[box_of(c)] |= b;
}

static inline void unplace(state *s, int c) {
    uint16_t b = (uint16_t)~(1u << s->g[c]);
    s->row[row_of(c)] &= b; s->col[col_of(c)] &= b; s->box[box_of(c)] &= b;
    s->g[c] = 0;
}

/* Load a puzzle; false when two givens clash or a cell holds something other than 0..9. */
static bool state_init(state *s, const uint8_t puzzle[SUDOKU_CELLS]) {
    memset(s, 0, sizeof *s);
    for (int c = 0; c < SUDOKU_CELLS; c++) {
        int d = puzzle[c];
        if (d == 0) continue;
        if (d > 9 || !(cands(s, c) & (1u << d))) return false;
        place(s, c, d);
    }
    return true;
}

typedef struct search {
    int      limit, count;
    uint8_t *first;          /* (81) the first solution found, or NULL */
    rng     *r;              /* random digit order when non-NULL */
} search;

/* Depth-first search, always branching on the blank with the fewest candidates. */
static void search_rec(state *s, search *q) {
    int best = -1, best_n = 10;
    for (int c = 0; c < SUDOKU_CELLS; c++) {
        if (s->g[c]) continue;
        int n = __builtin_popcount(cands(s, c));
        if (n < best_n) { best = c; best_n = n; if (n <= 1) break; }
    }
    if (best < 0) {                                 /* no blank left: a solution */
        if (q->count++ == 0 && q->first) memcpy(q->first, s->g, SUDOKU_CELLS);
        return;
    }
    uint16_t m = cands(s, best);
    uint8_t digits[9];
    int n = 0;
    for (int d = 1; d <= 9; d++) if (m & (1u << d)) digits[n++] = (uint8_t)d;
    if (q->r) shuffle(q->r, digits, n);
    for (int i = 0; i < n && q->count < q->limit; i++) {
        place(s, best, digits[i]);
        search_rec(s, q);
        unplace(s, best);
    }
}

int sudoku_count_solutions(const uint8_t puzzle[SUDOKU_CELLS], int limit, uint8_t solution[SUDOKU_CELLS]) {
    state s;
    if (limit < 1 || !state_init(&s, puzzle)) return 0;
    search q = { .limit = limit, .count = 0, .first = solution, .r = NULL };
    search_rec(&s, &q);
    return q.count;
}

bool sudoku_grid_valid(const uint8_t grid[SUDOKU_CELLS]) {
    state s;
    if (!state_init(&s, grid)) return false;
    for (int c = 0; c < SUDOKU_CELLS; c++) if (grid[c] == 0) return false;
    return true;
}

bool sudoku_check(const uint8_t puzzle[SUDOKU_CELLS], const uint8_t output[SUDOKU_CELLS]) {
    for (int c = 0; c < SUDOKU_CELLS; c++)
        if (puzzle[c] != 0 && puzzle[c] != output[c]) return false;
    return sudoku_grid_valid(output);
}

/* ---------------------------------------------------------------- logical solver */

int sudoku_solve_singles(uint8_t grid[SUDOKU_CELLS], bool hidden) {
    state s;
    if (!state_init(&s, grid)) return -1;
    for (bool progress = true; progress;) {
        progress = false;
        for (int c = 0; c < SUDOKU_CELLS; c++) {          /* naked singles */
            if (s.g[c]) continue;
            uint16_t m = cands(&s, c);
            if (m == 0) return -1;
            if ((m & (m - 1)) == 0) { place(&s, c, __builtin_ctz(m)); progress = true; }
        }
        if (progress || !hidden) continue;
        for (int u = 0; u < 27; u++) {                    /* hidden singles */
            for (int d = 1; d <= 9; d++) {
                int where = -1, n = 0;
                for (int k = 0; k < 9; k++) {
                    int c = unit_cell(u, k);
                    if (s.g[c] == d) { n = -1; break; }
                    if (!s.g[c] && (cands(&s, c) & (1u << d))) { where = c; n++; }
                }
                if (n == 0) return -1;
                if (n == 1) { place(&s, where, d); progress = true; }
            }
        }
    }
    memcpy(grid, s.g, SUDOKU_CELLS);
    return SUDOKU_CELLS - sudoku_givens(grid);
}

sudoku_difficulty sudoku_grade(const uint8_t puzzle[SUDOKU_CELLS]) {
    uint8_t g[SUDOKU_CELLS];
    memcpy(g, puzzle, SUDOKU_CELLS);
    if (sudoku_solve_singles(g, false) == 0) return SUDOKU_EASY;
    memcpy(g, puzzle, SUDOKU_CELLS);
    if (sudoku_solve_singles(g, true) == 0) return SUDOKU_MEDIUM;
    return SUDOKU_HARD;
}

/* ---------------------------------------------------------------- generation */

static void full_grid(rng *r, uint8_t grid[SUDOKU_CELLS]) {
    static const uint8_t empty[SUDOKU_CELLS];
    state s;
    state_init(&s, empty);
    search q = { .limit = 1, .count = 0, .first = grid, .r = r };
    search_rec(&s, &q);                  /* an empty grid always has a solution */
}

void sudoku_full_grid(uint64_t seed, uint8_t grid[SUDOKU_CELLS]) {
    rng r = { seed };
    full_grid(&r, grid);
}

/* Does the puzzle stay acceptable for difficulty d with one more cell removed? Easy and
 * medium keep it solvable by their singles (which implies a unique solution); hard only
 * keeps the solution unique. */
static bool removal_ok(const uint8_t puzzle[SUDOKU_CELLS], sudoku_difficulty d) {
    if (d == SUDOKU_HARD) return sudoku_count_solutions(puzzle, 2, NULL) == 1;
    uint8_t g[SUDOKU_CELLS];
    memcpy(g, puzzle, SUDOKU_CELLS);
    return sudoku_solve_singles(g, d == SUDOKU_MEDIUM) == 0;
}

/* The givens a candidate puzzle stops removing at, drawn per attempt so that each difficulty
 * spreads over a realistic range instead of piling up at its minimum: easy 30..45, medium
 * 24..36, hard as few as uniqueness allows. Removal may also stop earlier (more givens),
 * when no further cell can go. */
static int target_givens(rng *r, sudoku_difficulty d) {
    switch (d) {
    case SUDOKU_EASY:   return 30 + (int)rng_below(r, 16);
    case SUDOKU_MEDIUM: return 24 + (int)rng_below(r, 13);
    default:            return SUDOKU_MIN_GIVENS;
    }
}

#define SUDOKU_MAX_ATTEMPTS 100000

int sudoku_generate(uint64_t seed, sudoku_difficulty d, uint8_t puzzle[SUDOKU_CELLS],
                    uint8_t solution[SUDOKU_CELLS], um_err *e) {
    if ((unsigned)d > SUDOKU_HARD) return um_errf(e, "unknown difficulty %d", (int)d);
    /* One stream per (seed, difficulty): the same seed at two difficulties gives two grids. */
    rng r = { seed };
    r.s = rng_next(&r) ^ (0xd1b54a32d192ed03ull * ((uint64_t)d + 1));
    for (int attempt = 0; attempt < SUDOKU_MAX_ATTEMPTS; attempt++) {
        uint8_t order[SUDOKU_CELLS];
        full_grid(&r, solution);
        memcpy(puzzle, solution, SUDOKU_CELLS);
        for (int c = 0; c < SUDOKU_CELLS; c++) order[c] = (uint8_t)c;
        shuffle(&r, order, SUDOKU_CELLS);
        int target = target_givens(&r, d), givens = SUDOKU_CELLS;
        for (int k = 0; k < SUDOKU_CELLS && givens > target; k++) {
            int c = order[k];
            puzzle[c] = 0;
            if (removal_ok(puzzle, d)) givens--;
            else puzzle[c] = solution[c];
        }
        if (givens >= SUDOKU_MIN_GIVENS && givens <= SUDOKU_MAX_GIVENS && sudoku_grade(puzzle) == d)
            return UM_OK;
    }
    return um_errf(e, "no %s sudoku found for seed %llu in %d attempts", sudoku_difficulty_name(d),
                   (unsigned long long)seed, SUDOKU_MAX_ATTEMPTS);
}
