/*
 * test_flags: the flag tables' parser and help printer (src/app/flags.c) on a small table of
 * its own, and the real generation table (genopts.c) through it: the spellings people type
 * (--steps=32, --steps 32, -t2, -t 2, -qh, --) reach the same values; unknown flags, missing
 * and unwanted values and refused rows fail; --help prints every row of the command once,
 * and a row's command bits decide who takes it.
 */
#include "harness.h"

#include <stdlib.h>

#include "flags.h"
#include "genopts.h"
#include "jsonw.h"

enum { T_NUM = 1, T_WORD, T_SWITCH, T_ONLY_GEN, T_RUN };

static const um_flag rows[] = {
    { .help = "things:", .cmds = FLAG_CMD_GENERATE | FLAG_CMD_EVAL },
    { 'n', "num", "N", T_NUM, FLAG_CMD_GENERATE | FLAG_CMD_EVAL, 0, NULL, 0, "a number" },
    { 'w', "word", "W", T_WORD, FLAG_CMD_GENERATE | FLAG_CMD_EVAL, 0, NULL, 0, "a word\nsecond line" },
    { 'x', "switch", NULL, T_SWITCH, FLAG_CMD_GENERATE | FLAG_CMD_EVAL, 0, NULL, 0, "no value" },
    { 0, "only-gen", NULL, T_ONLY_GEN, FLAG_CMD_GENERATE, 0, NULL, 0, "generate's own" },
    { 0, "run", NULL, T_RUN, FLAG_CMD_GENERATE | FLAG_CMD_EVAL, FLAG_RUN, NULL, 0, "refused in --compare" },
};

typedef struct vals { int num, switches, only_gen, run; const char *word; } vals;

static int fn(void *ctx, const um_flag *f, const char *name, const char *v, const char *prog) {
    vals *x = ctx;
    switch (f->id) {
    case T_NUM:      x->num = atoi(v); return v[0] == 'b' ? -1 : 0;   /* "bad": a refused value */
    case T_WORD:     x->word = v; return 0;
    case T_SWITCH:   x->switches++; return 0;
    case T_ONLY_GEN: x->only_gen++; return 0;
    case T_RUN:      x->run++; return 0;
    default:         return 0;
    }
}

/* Parse a NULL-terminated list as argv[1..] for cmd; pos collects up to 3 arguments. */
static int parse(unsigned cmd, vals *x, flags_common *c, const char **pos, int *n_pos, const char *const *args) {
    char *argv[32] = { (char *)"prog" };
    int argc = 1;
    for (; args[argc - 1]; argc++) argv[argc] = (char *)args[argc - 1];
    flags_parser p = { .prog = "test", .cmd = cmd, .pos = pos, .max_pos = 3 };
    flags_add(&p, rows, (int)(sizeof rows / sizeof rows[0]), fn, x, NULL);
    flags_add(&p, flags_misc_rows, flags_misc_rows_n, flags_common_fn, c, NULL);
    int r = flags_parse(&p, argc, argv);
    *n_pos = p.n_pos;
    return r;
}

#define PARSE(cmd, ...) parse(cmd, &x, &c, pos, &n_pos, (const char *const[]){ __VA_ARGS__, NULL })

TEST(flags_value_spellings_agree) {
    const char *pos[3];
    int n_pos;
    /* every spelling of "num 32, word hi" */
    const char *const forms[][4] = {
        { "--num", "32", "--word", "hi" }, { "--num=32", "--word=hi", NULL, NULL }, { "-n32", "-whi", NULL, NULL },
        { "-n", "32", "-w", "hi" },        { "--num=32", "-w", "hi", NULL },
    };
    for (size_t k = 0; k < sizeof forms / sizeof forms[0]; k++) {
        vals x = { 0 };
        flags_common c = { 0 };
        const char *args[5] = { forms[k][0], forms[k][1], forms[k][2], forms[k][3], NULL };
        CHECK_EQ(parse(FLAG_CMD_GENERATE, &x, &c, pos, &n_pos, args), 0);
        CHECK_EQ(x.num, 32);
        CHECK_STREQ(x.word, "hi");
        CHECK_EQ(n_pos, 0);
    }
    vals x = { 0 };
    flags_common c = { 0 };
    CHECK_EQ(PARSE(FLAG_CMD_GENERATE, "--word=a=b"), 0);        /* the first '=' splits */
    CHECK_STREQ(x.word, "a=b");
    CHECK_EQ(PARSE(FLAG_CMD_GENERATE, "--word="), 0);           /* an empty value is a value */
    CHECK_STREQ(x.word, "");
    CHECK_EQ(PARSE(FLAG_CMD_GENERATE, "--word", "-x"), 0);      /* a value may start with '-' */
    CHECK_STREQ(x.word, "-x");
    CHECK_EQ(x.switches, 0);
}

TEST(flags_clusters_dashdash_and_arguments) {
    const char *pos[3];
    int n_pos;
    vals x = { 0 };
    flags_common c = { 0 };
    CHECK_EQ(PARSE(FLAG_CMD_GENERATE, "-xq", "a", "-xn7"), 0);   /* -x -q, then -x -n 7 */
    CHECK_EQ(x.switches, 2);
    CHECK(c.quiet);
    CHECK_EQ(x.num, 7);
    CHECK_EQ(n_pos, 1);
    CHECK_STREQ(pos[0], "a");
    x = (vals){ 0 };
    CHECK_EQ(PARSE(FLAG_CMD_GENERATE, "a", "--", "-x", "--num"), 0);
    CHECK_EQ(x.switches, 0);                                   /* after --: arguments */
    CHECK_EQ(n_pos, 3);
    CHECK_STREQ(pos[1], "-x");
    CHECK_STREQ(pos[2], "--num");
    CHECK_EQ(PARSE(FLAG_CMD_GENERATE, "-", "b"), 0);            /* '-' alone is an argument */
    CHECK_STREQ(pos[0], "-");
    CHECK_EQ(PARSE(FLAG_CMD_GENERATE, "a", "b", "c", "d"), 2);  /* more than max_pos */
    CHECK_EQ(PARSE(FLAG_CMD_GENERATE, "-qh", "--nope"), FLAGS_STOP);   /* -h stops before --nope */
    CHECK(c.help);
}

TEST(flags_refusals) {
    const char *pos[3];
    int n_pos;
    vals x = { 0 };
    flags_common c = { 0 };
    CHECK_EQ(PARSE(FLAG_CMD_GENERATE, "--nope"), 2);
    CHECK_EQ(PARSE(FLAG_CMD_GENERATE, "--nu", "3"), 2);          /* no abbreviations */
    CHECK_EQ(PARSE(FLAG_CMD_GENERATE, "--num"), 2);              /* value missing */
    CHECK_EQ(PARSE(FLAG_CMD_GENERATE, "-n"), 2);
    CHECK_EQ(PARSE(FLAG_CMD_GENERATE, "--switch=1"), 2);         /* a value where none is taken */
    CHECK_EQ(x.switches, 0);
    CHECK_EQ(PARSE(FLAG_CMD_GENERATE, "-xz"), 2);                /* unknown letter in a cluster */
    CHECK_EQ(PARSE(FLAG_CMD_GENERATE, "--num", "bad"), 2);       /* the handler's verdict */
    CHECK_EQ(PARSE(FLAG_CMD_EVAL, "--only-gen"), 2);             /* another command's row */
    CHECK_EQ(x.only_gen, 0);
    CHECK_EQ(PARSE(FLAG_CMD_GENERATE, "--only-gen"), 0);
    CHECK_EQ(x.only_gen, 1);
    /* inside --compare: FLAG_RUN rows refused, the others taken */
    char *argv[] = { (char *)"--run", (char *)"--num=4", NULL };
    flags_parser p = { .prog = "test", .cmd = FLAG_CMD_GENERATE, .refuse = FLAG_RUN, .where = "--compare: " };
    flags_add(&p, rows, (int)(sizeof rows / sizeof rows[0]), fn, &x, NULL);
    int i = 0;
    CHECK_EQ(flags_parse_one(&p, 2, argv, &i), -1);
    CHECK_EQ(x.run, 0);
    i = 1;
    CHECK_EQ(flags_parse_one(&p, 2, argv, &i), 1);
    CHECK_EQ(x.num, 4);
}

static int count(const char *hay, const char *needle) {
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p++) n++;
    return n;
}

TEST(flags_usage_from_the_table) {
    char buf[4096] = "";
    FILE *m = fmemopen(buf, sizeof buf - 1, "w");
    CHECK(m != NULL);
    flags_parser p = { .cmd = FLAG_CMD_EVAL };
    flags_add(&p, rows, (int)(sizeof rows / sizeof rows[0]), fn, NULL, NULL);
    flags_add(&p, flags_misc_rows, flags_misc_rows_n, flags_common_fn, NULL, NULL);
    flags_usage(m, &p);
    fclose(m);
    CHECK_EQ(count(buf, "things:\n"), 1);
    CHECK_EQ(count(buf, "  -n, --num N "), 1);
    CHECK_EQ(count(buf, "  -x, --switch "), 1);
    CHECK_EQ(count(buf, "  -q, --quiet "), 1);
    CHECK_EQ(count(buf, "  -h, --help "), 1);
    CHECK_EQ(count(buf, "--only-gen"), 0);                      /* not eval's */
    CHECK_CONTAINS(buf, "a word\n                       second line\n");   /* continuation indented */
}

/* The real generation table: the spellings reach um_genopts; a schedule conflict is still
 * caught whatever the spelling; settings JSON keys come from the rows. */
TEST(flags_genopts_table) {
    um_genopts g;
    genopts_init(&g);
    char *argv[] = { (char *)"x", (char *)"--steps=32", (char *)"-t2", (char *)"--gen", (char *)"64", (char *)"-pOnce",
                     (char *)"--threshold=0.9", (char *)"--preset=demo", NULL };
    flags_parser p = { .prog = "test", .cmd = FLAG_CMD_GENERATE };
    genopts_add(&p, &g);
    CHECK_EQ(flags_parse(&p, 8, argv), 0);
    CHECK_EQ(g.steps, 32);
    CHECK_EQ(g.eng.n_threads, 2);
    CHECK_EQ(g.n_gen, 64);
    CHECK_STREQ(g.prompt, "Once");
    CHECK_STREQ(g.preset, "demo");
    CHECK_NEAR(g.threshold, 0.9, 1e-7);
    char *bad[] = { (char *)"x", (char *)"--eps=0.1", NULL };   /* threshold then eps: two schedules */
    CHECK_EQ(flags_parse(&p, 2, bad), 2);
    char *big[] = { (char *)"x", (char *)"--gen=1048577", NULL };
    CHECK_EQ(flags_parse(&p, 2, big), 2);                       /* past GENOPTS_MAX_GEN */
    um_settings s = { .schedule = UM_SCHED_BLOCK };
    CHECK(!genopts_setting_used("threshold", &s));
    CHECK(!genopts_setting_used("eps", &s));
    CHECK(genopts_setting_used("temperature", &s));
    s.schedule = UM_SCHED_THRESHOLD;
    CHECK(genopts_setting_used("threshold", &s));
    CHECK(genopts_setting_used("block_steps", &s));
    CHECK(!genopts_setting_used("eb_gamma", &s));
}

TEST(flags_json_settings_keys_from_rows) {
    char buf[4096] = "";
    FILE *m = fmemopen(buf, sizeof buf - 1, "w");
    CHECK(m != NULL);
    jsonw j;
    jsonw_init(&j, m);
    um_settings s = { .n_gen = 8, .steps = 4, .threshold = 0.9f, .top_p = 0.95f, .temperature = 0.2f };
    genopts_json_settings(&j, &s);
    fclose(m);
    const char *const keys[] = { "\"gen\":8", "\"steps_requested\":4", "\"threshold\":0.9,", "\"top_p\":0.95,",
                                 "\"temperature\":0.2,", "\"alg_temp\":", "\"gumbel\":", "\"block_aligned\":" };
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) CHECK_MSG(count(buf, keys[k]) == 1, "%s in %s", keys[k], buf);
}

/* --fast: the preset's fast when it has one, else Fast-dLLM's --threshold 0.9 --cache dual;
 * a flag naming a schedule replaces the rule only, one naming a cache the cache only; a
 * --compare pane without its own model takes the main preset's fast. */
TEST(flags_fast_per_preset) {
    um_genopts g;
    genopts_init(&g);
    g.fast = true;
    um_settings s = { .schedule = UM_SCHED_BLOCK, .threshold = -1, .eb_gamma = -1, .factor = -1 };
    genopts_apply(&g, &s);                                  /* no preset: the default */
    CHECK_EQ(s.schedule, UM_SCHED_THRESHOLD);
    CHECK_NEAR(s.threshold, 0.9, 1e-7);
    CHECK_EQ(s.cache, UM_CACHE_DUAL);
    um_err e;
    g.have_preset = true;                                   /* a preset without cache: none */
    CHECK(models_fast_parse("--threshold 0.999", &g.pre.fast, &e) == UM_OK);
    g.pre.gen = g.pre.steps = g.pre.block = -1;
    g.pre.schedule = UM_SCHED_BLOCK;
    g.pre.scoring = -1;
    g.pre.temperature = NAN;
    s = (um_settings){ .schedule = UM_SCHED_BLOCK };
    genopts_apply(&g, &s);
    CHECK_EQ(s.schedule, UM_SCHED_THRESHOLD);
    CHECK_NEAR(s.threshold, 0.999, 1e-7);
    CHECK_EQ(s.cache, UM_CACHE_NONE);
    CHECK(models_fast_parse("--eb-gamma 0.01 --cache dual --cache-drift 0.05", &g.pre.fast, &e) == UM_OK);
    s = (um_settings){ .schedule = UM_SCHED_BLOCK };
    genopts_apply(&g, &s);
    CHECK_EQ(s.schedule, UM_SCHED_EB);
    CHECK_NEAR(s.eb_gamma, 0.01, 1e-7);
    CHECK_EQ(s.cache, UM_CACHE_DUAL);
    CHECK_NEAR(s.cache_drift, 0.05, 1e-7);
    g.factor = 2;                                           /* --factor 2: the rule only */
    s = (um_settings){ .schedule = UM_SCHED_BLOCK };
    genopts_apply(&g, &s);
    CHECK_EQ(s.schedule, UM_SCHED_FACTOR);
    CHECK_NEAR(s.factor, 2, 0);
    CHECK(s.eb_gamma == 0);
    CHECK_EQ(s.cache, UM_CACHE_DUAL);
    g.factor = -1;
    g.cache = UM_CACHE_NONE;                                /* --cache none: the cache only */
    s = (um_settings){ .schedule = UM_SCHED_BLOCK };
    genopts_apply(&g, &s);
    CHECK_EQ(s.schedule, UM_SCHED_EB);
    CHECK_EQ(s.cache, UM_CACHE_NONE);
    CHECK(s.cache_drift == 0);
    /* a pane's --fast: main's preset */
    um_genopts pane;
    genopts_init(&pane);
    pane.fast = true;
    g.fast = false;
    g.cache = -1;
    CHECK(models_fast_parse("--threshold 0.999", &g.pre.fast, &e) == UM_OK);
    s = (um_settings){ .schedule = UM_SCHED_BLOCK };
    genopts_pane_apply(&g, &pane, false, &s);
    CHECK_EQ(s.schedule, UM_SCHED_THRESHOLD);
    CHECK_NEAR(s.threshold, 0.999, 1e-7);
    CHECK_EQ(s.cache, UM_CACHE_NONE);
}
