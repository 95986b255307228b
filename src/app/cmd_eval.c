/*
 * cmd_eval: `unmask eval` runs a model over a set of tasks and checks every answer: a JSONL
 * task file ({"prompt": ..., "answer": ...} per line, see tasks.h) or held-out sudoku puzzles
 * generated on the fly from the test split's seeds (sudoku.h), so they never overlap a
 * training set made by tools/sudoku/gen.c.
 *
 * The model is opened once; each task restarts the same engine with its prompt
 * (engine_start resets the canvas, the weights stay) and runs it to the end with the same
 * decoding settings, taken from the shared generation flags (genopts.h). Every task is
 * checked before the first forward pass (its check applies, its prompt fits the context), so
 * a bad line fails at once with FILE:LINE. stdout gets one line per task and a summary, or
 * with --json one object; stderr gets a progress bar only when it is a terminal. SIGINT or
 * SIGTERM stops after the task in flight and still reports the tasks done (exit 130/143).
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "esc.h"
#include "engine.h"
#include "snapshot.h"
#include "evalcheck.h"
#include "flags.h"
#include "genopts.h"
#include "jsonw.h"
#include "numparse.h"
#include "schedule.h"
#include "stdfd.h"
#include "sudoku.h"
#include "tasks.h"

static volatile sig_atomic_t stop_signal;
static void on_signal(int sig) { stop_signal = sig; }

enum { EV_CHECK = 1, EV_SUDOKU, EV_DIFFICULTY, EV_SUDOKU_SEED, EV_LIMIT, EV_JSON };

#define EV FLAG_CMD_EVAL
static const um_flag eval_rows[] = {
    { .help = "tasks:", .cmds = EV },
    { 0, "check", "C", EV_CHECK, EV, FLAG_RUN, NULL, 0,
      "exact (trimmed text equal, the default for task files), number (last\n"
      "number equal) or sudoku (a valid grid keeping the prompt's givens)" },
    { 0, "sudoku", "N", EV_SUDOKU, EV, FLAG_RUN, NULL, 0, "N held-out sudoku puzzles from the test split instead of a file (without --gen or a preset: 81 cells, one block)" },
    { 0, "difficulty", "D", EV_DIFFICULTY, EV, FLAG_RUN, NULL, 0, "their difficulty: easy (default), medium, hard or mix" },
    { 0, "sudoku-seed", "S", EV_SUDOKU_SEED, EV, FLAG_RUN, NULL, 0, "their seed base (default: --seed if given, else 0)" },
    { 0, "limit", "N", EV_LIMIT, EV, FLAG_RUN, NULL, 0, "only the first N tasks" },
    { .help = "output:", .cmds = EV },
    { 0, "json", NULL, EV_JSON, EV, FLAG_RUN, NULL, 0, "one JSON object: totals, settings and every task's output" },
};
#undef EV

typedef struct eval_own {
    um_genopts *g;
    const char *check_s, *diff_s;
    int64_t     n_sudoku, limit, sudoku_seed;
} eval_own;

static int own_fn(void *ctx, const um_flag *f, const char *name, const char *v, const char *prog) {
    eval_own *o = ctx;
    switch (f->id) {
    case EV_CHECK:       o->check_s = v; return 0;
    case EV_DIFFICULTY:  o->diff_s = v; return 0;
    case EV_SUDOKU:      return num_arg_int(prog, name, v, 1, 1000000, &o->n_sudoku);
    case EV_LIMIT:       return num_arg_int(prog, name, v, 1, (int64_t)1 << 30, &o->limit);
    case EV_SUDOKU_SEED: return num_arg_int(prog, name, v, 0, (int64_t)(SUDOKU_SPLIT_SPAN - 1), &o->sudoku_seed);
    case EV_JSON:        o->g->json = true; return 0;
    default:             return 0;
    }
}

static void parser(flags_parser *p, um_genopts *g, eval_own *o, flags_common *c, const char **pos) {
    *p = (flags_parser){ .prog = "unmask eval", .cmd = FLAG_CMD_EVAL, .pos = pos, .max_pos = 1 };
    genopts_add(p, g);
    flags_add(p, eval_rows, (int)(sizeof eval_rows / sizeof eval_rows[0]), own_fn, o, NULL);
    flags_add(p, flags_misc_rows, flags_misc_rows_n, flags_common_fn, c, NULL);
}

static void usage(FILE *f) {
    flags_parser p;
    parser(&p, NULL, NULL, NULL, NULL);
    fprintf(f, "usage: unmask eval [-m FILE | -M PRESET] TASKS.jsonl [--check exact|number|sudoku] [options]\n"
               "       unmask eval [-m FILE | -M PRESET] --sudoku N [--difficulty D] [options]\n\n"
               "Run the model on every task and check its answers. A task file holds one JSON object per\n"
               "line: {\"prompt\": \"...\", \"answer\": \"...\"}. The decoding flags are those of generate.\n\n");
    flags_usage(f, &p);
    genopts_usage_numbers(f);
}

/* One task's result. */
typedef struct item {
    bool    correct;
    char   *output;          /* the decoded answer (heap) */
    char    why[128];        /* when wrong */
    int64_t passes, generated, steps;
    int64_t rows;            /* canvas rows the passes computed (fewer than passes x canvas with --cache) */
    double  seconds;
} item;

/* The progress bar: redrawn after every step of every task, on a terminal only. */
typedef struct bar {
    bool   on;
    int    done, total, correct;
    double t0;
} bar;

static void bar_draw(const bar *b, const um_snapshot *sn) {
    enum { W = 30 };
    int fill = b->total ? (int)((long long)W * b->done / b->total) : W;
    char cells[W + 1];
    for (int i = 0; i < W; i++) cells[i] = i < fill ? '#' : '.';
    cells[W] = '\0';
    fprintf(stderr, "\r[%s] %d/%d  correct %d", cells, b->done, b->total, b->correct);
    if (sn) fprintf(stderr, "  step %d/%d", sn->step, sn->n_steps);
    fprintf(stderr, "  %.1f s\033[K", um_now() - b->t0);
}

static void on_step(void *ctx, um_snapshot *sn) {
    bar *b = ctx;
    if (b->on) bar_draw(b, sn);
    snapshot_unref(sn);
}

/* The output on one line, quoted: the escaping rule (esc.h) with \n \t \r by name, '\' and
 * '"' escaped; at most max bytes of it, cut on a character boundary. */
static void print_oneline(FILE *f, const char *s, size_t max) {
    size_t n = strlen(s), end = esc_cut(s, n, max);
    fputc('"', f);
    esc_fput(f, s, end, ESC_BACKSLASH | ESC_C_NAMES, '"');
    fputc('"', f);
    if (end < n) fputs("...", f);
}

/* "FILE:LINE" for a task from a file, "sudoku puzzle I" for a generated one. */
static void where(char *buf, size_t cap, const char *path, const task *t, int index) {
    if (t->line > 0) snprintf(buf, cap, "%s:%d", path, t->line);
    else snprintf(buf, cap, "sudoku puzzle %d", index + 1);
}

static int make_sudoku_tasks(task_set *ts, long long n, bool mix, sudoku_difficulty d, uint64_t seed_base, um_err *e) {
    for (long long i = 0; i < n; i++) {
        uint64_t seed;
        uint8_t puzzle[SUDOKU_CELLS], solution[SUDOKU_CELLS];
        char p[SUDOKU_CELLS + 1], s[SUDOKU_CELLS + 1];
        if (sudoku_split_seed(SUDOKU_TEST, seed_base, (uint64_t)i, &seed, e) != UM_OK ||
            sudoku_generate(seed, mix ? sudoku_mix_difficulty((uint64_t)i) : d, puzzle, solution, e) != UM_OK)
            return UM_FAIL;
        sudoku_format(puzzle, p);
        sudoku_format(solution, s);
        if (tasks_add(ts, p, s, 0, e) != UM_OK) return UM_FAIL;
    }
    return UM_OK;
}

int cmd_eval(int argc, char **argv) {
    um_genopts g;
    genopts_init(&g);
    eval_own own = { .g = &g, .sudoku_seed = -1 };
    flags_common com = { 0 };
    const char *pos[1] = { NULL };
    flags_parser p;
    parser(&p, &g, &own, &com, pos);
    int pr = flags_parse(&p, argc, argv);
    if (pr == FLAGS_STOP) { usage(stdout); return 0; }
    if (pr) return pr;
    const bool quiet = com.quiet;
    const char *path = p.n_pos ? pos[0] : NULL, *check_s = own.check_s, *diff_s = own.diff_s;
    const int64_t n_sudoku = own.n_sudoku, limit = own.limit, sudoku_seed = own.sudoku_seed;
    if (g.prompt) { fprintf(stderr, "unmask eval: -p is not used: the prompts come from the tasks\n"); return 2; }
    if (!path == !n_sudoku) {
        fprintf(stderr, "unmask eval: give a task file or --sudoku N (one of them; see --help)\n");
        return 2;
    }
    if (path && (diff_s || sudoku_seed >= 0)) {
        fprintf(stderr, "unmask eval: --difficulty and --sudoku-seed go with --sudoku, not a task file\n");
        return 2;
    }
    evalcheck_kind check = n_sudoku ? EVALCHECK_SUDOKU : EVALCHECK_EXACT;
    um_err e = { "" };
    if (check_s && evalcheck_parse(check_s, &check, &e)) { fprintf(stderr, "unmask eval: --check: %s\n", e.msg); return 2; }
    if (!diff_s) diff_s = "easy";
    bool mix = !strcmp(diff_s, "mix");
    sudoku_difficulty diff = SUDOKU_EASY;
    if (!mix && sudoku_difficulty_parse(diff_s, &diff, NULL)) {
        fprintf(stderr, "unmask eval: --difficulty: unknown difficulty '%s' (easy, medium, hard or mix)\n", diff_s);
        return 2;
    }

    /* the tasks, each checked before any forward pass */
    task_set ts = { 0 };
    uint64_t seed_base = sudoku_seed >= 0 ? (uint64_t)sudoku_seed : g.seed >= 0 ? (uint64_t)g.seed : 0;
    if (n_sudoku ? make_sudoku_tasks(&ts, n_sudoku, mix, diff, seed_base, &e) : tasks_load(path, &ts, &e)) {
        fprintf(stderr, "unmask eval: %s\n", e.msg);
        tasks_free(&ts);
        return 1;
    }
    int n = limit > 0 && limit < ts.n ? (int)limit : ts.n;
    char at[4200];
    for (int i = 0; i < n; i++)
        if (evalcheck_task_ok(check, ts.items[i].prompt, ts.items[i].answer, &e)) {
            where(at, sizeof at, path, &ts.items[i], i);
            fprintf(stderr, "unmask eval: %s: %s (--check %s)\n", at, e.msg, evalcheck_name(check));
            tasks_free(&ts);
            return 1;
        }

    if (genopts_resolve(&g, &e) || stdfd_writable(&e)) {
        fprintf(stderr, "unmask eval: %s\n", e.msg);
        tasks_free(&ts);
        return 1;
    }
    /* --sudoku on a model no preset or flag sets a length for: the answer is the 81 cells, one
       block (a grid is not written left to right), one cell per step unless told */
    bool sudoku_block = false;
    if (n_sudoku && g.n_gen <= 0 && !(g.have_preset && g.pre.gen > 0)) {
        g.n_gen = SUDOKU_CELLS;
        g.eng.n_gen_min = SUDOKU_CELLS;
        if (g.block <= 0 && !(g.have_preset && g.pre.block > 0)) { g.block = SUDOKU_CELLS; sudoku_block = true; }
    }
    bool tty = isatty(STDERR_FILENO);
    bool quiet_load = quiet || !tty;
    g.eng.progress = genopts_progress_stderr;
    g.eng.progress_ctx = &quiet_load;
    um_engine *en = NULL;
    item *items = NULL;
    int rc = 1, done = 0;
    double t0 = um_now();
    if (engine_open(&en, &g.eng, &e)) goto out;
    double t_load = um_now() - t0;
    um_settings s;
    engine_default_settings(en, &s);
    /* a uniform-state model has canvases, not blocks: that default is for masked ones */
    if (sudoku_block && s.schedule == UM_SCHED_UNIFORM) g.block = 0;
    genopts_apply(&g, &s);
    um_engine_info info;
    engine_get_info(en, &info);
    for (int i = 0; i < n; i++)                        /* every prompt fits (no forward pass) */
        if (engine_start(en, ts.items[i].prompt, &s, &e)) {
            where(at, sizeof at, path, &ts.items[i], i);
            um_err_prefix(&e, "%s", at);
            goto out;
        }
    items = um_calloc((size_t)n, sizeof *items);
    if (!items) { um_errf(&e, "out of memory"); goto out; }

    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    bar b = { .on = tty && !quiet, .total = n, .t0 = um_now() };
    int correct = 0;
    int64_t passes = 0, generated = 0, rows = 0;
    for (; done < n && !stop_signal; done++) {
        const task *t = &ts.items[done];
        item *it = &items[done];
        double t1 = um_now();
        if (engine_start(en, t->prompt, &s, &e)) goto out;
        int steps = engine_run(en, on_step, &b, &e);
        if (steps < 0) goto out;
        um_snapshot *last = engine_snapshot(en);
        it->output = engine_answer(en, last);
        it->generated = (last->n_canvas - last->n_prompt) - last->masks_left;
        snapshot_unref(last);
        if (!it->output) { um_errf(&e, "out of memory decoding an answer"); goto out; }
        it->steps = steps;
        it->passes = engine_forward_passes(en);
        it->rows = engine_rows_computed(en);
        it->seconds = um_now() - t1;
        it->correct = evalcheck_run(check, t->prompt, t->answer, it->output, it->why, sizeof it->why);
        correct += it->correct;
        passes += it->passes;
        rows += it->rows;
        generated += it->generated;
        b.done = done + 1;
        b.correct = correct;
        if (b.on) bar_draw(&b, NULL);
        if (!g.json) {
            if (b.on) fputs("\r\033[K", stderr);
            printf("item %d: %s, %lld forward passes", done + 1, it->correct ? "ok" : "wrong", (long long)it->passes);
            if (t->line > 0) printf(", line %d", t->line);
            if (!it->correct) {
                printf(": %s; output ", it->why);
                print_oneline(stdout, it->output, 100);
            }
            putchar('\n');
            if (stdfd_check(&e)) goto out;        /* a lost line ends the run (stdfd.h) */
            if (b.on) bar_draw(&b, NULL);
        }
    }
    double seconds = um_now() - b.t0;
    if (b.on) fputs("\r\033[K", stderr);
    if (done < n) fprintf(stderr, "unmask eval: stopped by signal %d after %d of %d tasks\n", (int)stop_signal, done, n);
    double acc = done ? (double)correct / done : 0;
    if (!g.json) {
        printf("accuracy: %d/%d = %.1f%% (check %s)\n", correct, done, 100 * acc, evalcheck_name(check));
        printf("forward passes: %lld (%.1f per task), generated tokens: %lld (%.2f per pass), %.2f s (%.2f s per task)\n",
               (long long)passes, done ? (double)passes / done : 0, (long long)generated,
               passes ? (double)generated / passes : 0, seconds, done ? seconds / done : 0);
        char name[4 * sizeof info.name];            /* the file's general.name: escaped (esc.h) */
        esc_str(name, sizeof name, info.name, strlen(info.name), 0, 0);
        /* the schedule's own parameters only (genopts' table says which schedule each belongs to) */
        char sched[160] = "";
        size_t len = 0;
        const struct { const char *key; double v; } params[] = {
            { "eps", s.eps }, { "threshold", s.threshold }, { "block_steps", s.block_steps },
            { "factor", s.factor }, { "eb_gamma", s.eb_gamma },
        };
        for (size_t k = 0; k < UM_ARRAY_LEN(params) && len < sizeof sched; k++)
            if (genopts_setting_used(params[k].key, &s) && (params[k].v > 0 || strcmp(params[k].key, "block_steps")))
                len += (size_t)snprintf(sched + len, sizeof sched - len, ", %s %g", params[k].key, params[k].v);
        printf("settings: gen %d, steps %d, schedule %s%s, block %d, alg %s, temp %g, seed %llu; model %s\n",
               s.n_gen, s.steps, schedule_name(s.schedule), sched, s.block_len, schedule_score_name(s.score),
               s.temperature, (unsigned long long)s.seed, name);
    } else {
        jsonw j;
        jsonw_init(&j, stdout);
        jsonw_obj_begin(&j);
        jsonw_key(&j, "model"); jsonw_str(&j, info.name);
        jsonw_key(&j, "arch"); jsonw_str(&j, info.arch);
        jsonw_key(&j, "kernel"); jsonw_str(&j, info.isa);
        jsonw_key(&j, "threads"); jsonw_int(&j, info.n_threads);
        jsonw_key(&j, "tasks");
        if (path) jsonw_str(&j, path);
        else {
            jsonw_obj_begin(&j);
            jsonw_key(&j, "sudoku"); jsonw_int(&j, n_sudoku);
            jsonw_key(&j, "difficulty"); jsonw_str(&j, diff_s);
            jsonw_key(&j, "split"); jsonw_str(&j, sudoku_split_name(SUDOKU_TEST));
            jsonw_key(&j, "seed_base"); jsonw_int(&j, (long long)seed_base);
            jsonw_obj_end(&j);
        }
        jsonw_key(&j, "check"); jsonw_str(&j, evalcheck_name(check));
        jsonw_key(&j, "total"); jsonw_int(&j, done);
        jsonw_key(&j, "correct"); jsonw_int(&j, correct);
        jsonw_key(&j, "accuracy"); jsonw_num(&j, acc);
        jsonw_key(&j, "forward_passes"); jsonw_int(&j, passes);
        jsonw_key(&j, "rows_computed"); jsonw_int(&j, rows);
        jsonw_key(&j, "generated_tokens"); jsonw_int(&j, generated);
        jsonw_key(&j, "seconds"); jsonw_num(&j, seconds);
        jsonw_key(&j, "load_seconds"); jsonw_num(&j, t_load);
        jsonw_key(&j, "interrupted"); jsonw_bool(&j, done < n);
        jsonw_key(&j, "settings"); genopts_json_settings(&j, &s);
        jsonw_key(&j, "items"); jsonw_arr_begin(&j);
        for (int i = 0; i < done; i++) {
            const item *it = &items[i];
            jsonw_obj_begin(&j);
            jsonw_key(&j, "index"); jsonw_int(&j, i + 1);
            if (ts.items[i].line > 0) { jsonw_key(&j, "line"); jsonw_int(&j, ts.items[i].line); }
            jsonw_key(&j, "correct"); jsonw_bool(&j, it->correct);
            if (!it->correct) { jsonw_key(&j, "why"); jsonw_str(&j, it->why); }
            jsonw_key(&j, "prompt"); jsonw_str(&j, ts.items[i].prompt);
            jsonw_key(&j, "output"); jsonw_str(&j, it->output);
            jsonw_key(&j, "forward_passes"); jsonw_int(&j, it->passes);
            jsonw_key(&j, "rows_computed"); jsonw_int(&j, it->rows);
            jsonw_key(&j, "generated_tokens"); jsonw_int(&j, it->generated);
            jsonw_key(&j, "steps"); jsonw_int(&j, it->steps);
            jsonw_key(&j, "seconds"); jsonw_num(&j, it->seconds);
            jsonw_obj_end(&j);
        }
        jsonw_arr_end(&j);
        jsonw_obj_end(&j);
        fputc('\n', stdout);
    }
    rc = done < n ? 128 + (int)stop_signal : 0;
out:
    if (rc == 1) {
        if (tty && !quiet) fputs("\r\033[K", stderr);
        fprintf(stderr, "unmask eval: %s\n", e.msg);
    }
    if (items)
        for (int i = 0; i < n; i++) free(items[i].output);
    free(items);
    engine_close(en);
    tasks_free(&ts);
    return rc;
}
