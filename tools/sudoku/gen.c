/*
 * sudoku-gen: the sudoku model's data sets, as JSONL lines
 *   {"prompt": "<81 chars, '.' blanks>", "answer": "<81 digits>", "difficulty": "easy"}
 *
 *   sudoku-gen --split train|val|test --difficulty easy|medium|hard|mix --n N
 *              [--seed-base S] --out FILE.jsonl
 *   sudoku-gen --check-disjoint TRAIN.jsonl TEST.jsonl
 *
 * Splits are disjoint by construction: item i of a split is sudoku_generate(seed) with
 * seed = split_base + S + i, split bases 0 (train), 2^40 (val), 2^40*2 (test), and
 * S + i < 2^40 enforced; "mix" takes easy, medium, hard in turn by item index. So a file is
 * reproduced exactly from its flags, and N items in several runs with seed bases 0, K, 2K...
 * are the same items as one run. --check-disjoint verifies that no solution grid of the
 * second file appears in the first (exit 1 naming the lines if one does).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "numparse.h"
#include "sudoku.h"
#include "tasks.h"
#include "util.h"

static void usage(FILE *f) {
    fputs("usage: sudoku-gen --split train|val|test --difficulty easy|medium|hard|mix --n N\n"
          "                  [--seed-base S] --out FILE.jsonl\n"
          "       sudoku-gen --check-disjoint TRAIN.jsonl TEST.jsonl\n"
          "\n"
          "Writes N sudoku puzzles with unique solutions as JSONL lines\n"
          "  {\"prompt\": \"<81 chars, '.' blanks>\", \"answer\": \"<81 digits>\", \"difficulty\": \"easy\"}\n"
          "Item i uses seed split_base + S + i: train 0, val 2^40, test 2*2^40 (S + i < 2^40),\n"
          "so the splits never share a seed; 'mix' cycles easy, medium, hard by item index.\n"
          "--out - writes to stdout. --check-disjoint exits 1 if a solution grid of TEST is in TRAIN.\n", f);
}

/* ---------------------------------------------------------------- --check-disjoint */

typedef struct grid_at { uint8_t g[SUDOKU_CELLS]; int line; } grid_at;

static int cmp_grid(const void *a, const void *b) { return memcmp(a, b, SUDOKU_CELLS); }

/* The answers of path as full grids, sorted; errors name FILE:LINE. */
static int load_solutions(const char *path, grid_at **out, int *n, um_err *e) {
    task_set ts;
    if (tasks_load(path, &ts, e) != UM_OK) return UM_FAIL;
    grid_at *g = malloc((size_t)ts.n * sizeof *g);
    if (!g) { tasks_free(&ts); return um_errf(e, "out of memory"); }
    for (int i = 0; i < ts.n; i++) {
        const task *t = &ts.items[i];
        bool parsed = sudoku_parse(t->answer, strlen(t->answer), g[i].g, e) == UM_OK;
        if (!parsed || !sudoku_grid_valid(g[i].g)) {
            if (parsed) um_errf(e, "not a valid solved grid");
            um_err_prefix(e, "%s:%d: \"answer\"", path, t->line);
            free(g);
            tasks_free(&ts);
            return UM_FAIL;
        }
        g[i].line = t->line;
    }
    *n = ts.n;
    tasks_free(&ts);
    qsort(g, (size_t)*n, sizeof *g, cmp_grid);
    *out = g;
    return UM_OK;
}

static int check_disjoint(const char *train_path, const char *test_path) {
    um_err e = {{0}};
    grid_at *train = NULL, *test = NULL;
    int n_train = 0, n_test = 0, overlap = 0;
    if (load_solutions(train_path, &train, &n_train, &e) != UM_OK ||
        load_solutions(test_path, &test, &n_test, &e) != UM_OK) {
        fprintf(stderr, "sudoku-gen: %s\n", e.msg);
        free(train);
        return 2;
    }
    for (int i = 0; i < n_test; i++) {
        const grid_at *hit = bsearch(&test[i], train, (size_t)n_train, sizeof *train, cmp_grid);
        if (!hit) continue;
        if (overlap < 10)
            printf("overlap: %s:%d has the solution of %s:%d\n", test_path, test[i].line, train_path, hit->line);
        overlap++;
    }
    if (overlap)
        printf("NOT disjoint: %d of %d solution grids of %s appear in %s\n", overlap, n_test, test_path, train_path);
    else
        printf("disjoint: none of the %d solution grids of %s appears among the %d of %s\n",
               n_test, test_path, n_train, train_path);
    free(train);
    free(test);
    return overlap ? 1 : 0;
}

/* ---------------------------------------------------------------- generation */

int main(int argc, char **argv) {
    const char *split_s = NULL, *diff_s = NULL, *out_path = NULL;
    uint64_t n = 0, seed_base = 0;
    bool have_n = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { usage(stdout); return 0; }
        if (!strcmp(a, "--check-disjoint")) {
            if (argc != i + 3 || i != 1) {
                fprintf(stderr, "sudoku-gen: --check-disjoint takes exactly two files and no other flag\n");
                return 2;
            }
            return check_disjoint(argv[i + 1], argv[i + 2]);
        }
        if (i + 1 >= argc) { fprintf(stderr, "sudoku-gen: unknown flag or missing value: %s\n", a); usage(stderr); return 2; }
        const char *v = argv[++i];
        if (!strcmp(a, "--split")) split_s = v;
        else if (!strcmp(a, "--difficulty")) diff_s = v;
        else if (!strcmp(a, "--out")) out_path = v;
        else if (!strcmp(a, "--n")) {
            int64_t x;
            if (num_arg_int("sudoku-gen", a, v, 1, (int64_t)SUDOKU_SPLIT_SPAN, &x)) return 2;
            n = (uint64_t)x;
            have_n = true;
        } else if (!strcmp(a, "--seed-base")) {
            int64_t x;
            if (num_arg_int("sudoku-gen", a, v, 0, (int64_t)SUDOKU_SPLIT_SPAN - 1, &x)) return 2;
            seed_base = (uint64_t)x;
        } else {
            fprintf(stderr, "sudoku-gen: unknown flag: %s\n", a);
            usage(stderr);
            return 2;
        }
    }
    if (!split_s || !diff_s || !have_n || !out_path) {
        fprintf(stderr, "sudoku-gen: --split, --difficulty, --n and --out are required\n");
        usage(stderr);
        return 2;
    }
    um_err e = {{0}};
    sudoku_split split;
    sudoku_difficulty diff = SUDOKU_EASY;
    bool mix = !strcmp(diff_s, "mix");
    uint64_t seed;
    if (!mix && sudoku_difficulty_parse(diff_s, &diff, NULL) != UM_OK) {
        fprintf(stderr, "sudoku-gen: unknown difficulty '%s' (easy, medium, hard or mix)\n", diff_s);
        return 2;
    }
    if (sudoku_split_parse(split_s, &split, &e) != UM_OK ||
        sudoku_split_seed(split, seed_base, n - 1, &seed, &e) != UM_OK) {
        fprintf(stderr, "sudoku-gen: %s\n", e.msg);
        return 2;
    }

    /* Write beside the target and rename at the end: a failed run never leaves half a file. */
    bool to_stdout = !strcmp(out_path, "-");
    char tmp[4096];
    FILE *f = stdout;
    if (!to_stdout) {
        if (snprintf(tmp, sizeof tmp, "%s.tmp%ld", out_path, (long)getpid()) >= (int)sizeof tmp) {
            fprintf(stderr, "sudoku-gen: output path too long\n");
            return 2;
        }
        if (!(f = fopen(tmp, "w"))) { fprintf(stderr, "sudoku-gen: %s: %s\n", tmp, strerror(errno)); return 1; }
    }
    double t0 = um_now();
    for (uint64_t i = 0; i < n; i++) {
        uint8_t puzzle[SUDOKU_CELLS], solution[SUDOKU_CELLS];
        char p[SUDOKU_CELLS + 1], s[SUDOKU_CELLS + 1];
        sudoku_difficulty d = mix ? sudoku_mix_difficulty(i) : diff;
        sudoku_split_seed(split, seed_base, i, &seed, NULL);
        if (sudoku_generate(seed, d, puzzle, solution, &e) != UM_OK) {
            fprintf(stderr, "sudoku-gen: %s\n", e.msg);
            if (!to_stdout) { fclose(f); remove(tmp); }
            return 1;
        }
        sudoku_format(puzzle, p);
        sudoku_format(solution, s);
        fprintf(f, "{\"prompt\": \"%s\", \"answer\": \"%s\", \"difficulty\": \"%s\"}\n", p, s, sudoku_difficulty_name(d));
    }
    if (fflush(f) != 0 || ferror(f) || (!to_stdout && fclose(f) != 0)) {
        fprintf(stderr, "sudoku-gen: writing %s failed: %s\n", out_path, strerror(errno));
        if (!to_stdout) remove(tmp);
        return 1;
    }
    if (!to_stdout && rename(tmp, out_path) != 0) {
        fprintf(stderr, "sudoku-gen: %s: %s\n", out_path, strerror(errno));
        remove(tmp);
        return 1;
    }
    fprintf(stderr, "sudoku-gen: %llu %s %s puzzles (seeds %llu..%llu) in %.1f s -> %s\n",
            (unsigned long long)n, sudoku_split_name(split), diff_s,
            (unsigned long long)(seed - (n - 1)), (unsigned long long)seed, um_now() - t0, out_path);
    return 0;
}
