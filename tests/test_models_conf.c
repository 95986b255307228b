/* Tests of src/app/models_conf.c: presets, path resolution, errors with FILE:LINE, lookup. */
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>
#include "harness.h"
#include "models_conf.h"
#include "chat.h"
#include "view.h"

static int parse(models_conf *mc, const char *text, um_err *e) {
    e->msg[0] = 0;
    return models_conf_parse(mc, text, strlen(text), "/etc/um/models.conf", e);
}

TEST(models_conf_presets) {
    models_conf mc;
    um_err e;
    const char *text =
        "# presets\n"
        "[llada-8b]\n"
        "path = models/llada.gguf   # relative\n"
        "chat_template = llada\n"
        "gen = 128\nsteps=64\n block = 32 \n"
        "schedule = threshold\nscoring = margin\ntemperature = 0.5\n"
        "\n[dream]\npath = /abs/dream.gguf\n";
    CHECK_MSG(parse(&mc, text, &e) == UM_OK, "%s", e.msg);
    CHECK_EQ(mc.n, 2);
    const models_preset *p = models_conf_get(&mc, "llada-8b");
    CHECK(p != NULL);
    CHECK_STREQ(p->path, "/etc/um/models/llada.gguf");
    CHECK_STREQ(p->chat_template, "llada");
    CHECK_EQ(p->gen, 128);
    CHECK_EQ(p->steps, 64);
    CHECK_EQ(p->block, 32);
    CHECK_EQ(p->schedule, 2);            /* block, timestep, threshold */
    CHECK_EQ(p->scoring, 1);
    CHECK_NEAR(p->temperature, 0.5, 0);
    CHECK_EQ(p->line, 2);
    p = models_conf_get(&mc, "dream");
    CHECK(p != NULL);
    CHECK_STREQ(p->path, "/abs/dream.gguf");
    CHECK_EQ(p->steps, -1);
    CHECK_EQ(p->schedule, -1);
    CHECK(isnan(p->temperature));
    CHECK(models_conf_get(&mc, "nope") == NULL);
    models_conf_free(&mc);
}

TEST(models_conf_errors_name_file_and_line) {
    models_conf mc;
    um_err e;
    CHECK(parse(&mc, "[a]\npath = x\ncolour = red\n", &e) == UM_FAIL);
    CHECK_CONTAINS(e.msg, "/etc/um/models.conf:3: unknown key 'colour'");
    CHECK(parse(&mc, "[a]\npath = x\nsteps = 12x\n", &e) == UM_FAIL);
    CHECK_STREQ(e.msg, "/etc/um/models.conf:3: steps: '12x' is not a whole number");
    CHECK(parse(&mc, "[a]\npath = x\nsteps = 0\n", &e) == UM_FAIL);
    CHECK_STREQ(e.msg, "/etc/um/models.conf:3: steps: '0' is out of range (1 to 1048576)");
    /* the command line's number rules (numparse.h): no fractions, hex or leading zeros, no nan */
    CHECK(parse(&mc, "[a]\npath = x\ngen = 12.7\n", &e) == UM_FAIL);
    CHECK_STREQ(e.msg, "/etc/um/models.conf:3: gen: '12.7' is not a whole number");
    CHECK(parse(&mc, "[a]\npath = x\nblock = 0x10\n", &e) == UM_FAIL);
    CHECK_STREQ(e.msg, "/etc/um/models.conf:3: block: '0x10' is not a whole number");
    CHECK(parse(&mc, "[a]\npath = x\nsteps = 010\n", &e) == UM_FAIL);
    CHECK_CONTAINS(e.msg, ":3: steps: '010' is not a whole number");
    CHECK(parse(&mc, "[a]\npath = x\ntemperature = nan\n", &e) == UM_FAIL);
    CHECK_STREQ(e.msg, "/etc/um/models.conf:3: temperature: 'nan' is not a number");
    CHECK(parse(&mc, "[a]\npath = x\ntemperature = inf\n", &e) == UM_FAIL);
    CHECK_CONTAINS(e.msg, ":3: temperature: 'inf' is not a number");
    CHECK(parse(&mc, "[a]\npath = x\ntemperature = 101\n", &e) == UM_FAIL);
    CHECK_CONTAINS(e.msg, ":3: temperature: '101' is out of range (0 to 100)");
    CHECK(parse(&mc, "[a]\npath = x\nschedule = fast\n", &e) == UM_FAIL);
    CHECK_CONTAINS(e.msg, ":3: unknown schedule 'fast'");
    CHECK(parse(&mc, "[a]\npath = x\ntemperature = -1\n", &e) == UM_FAIL);
    CHECK(parse(&mc, "path = x\n", &e) == UM_FAIL);
    CHECK_CONTAINS(e.msg, ":1: 'path' before any [preset]");
    CHECK(parse(&mc, "[a]\npath = x\n[a]\npath = y\n", &e) == UM_FAIL);
    CHECK_CONTAINS(e.msg, ":3: preset [a] already defined at line 1");
    CHECK(parse(&mc, "[a]\ngen = 5\n", &e) == UM_FAIL);
    CHECK_CONTAINS(e.msg, ":1: preset [a] has no path");
    CHECK(parse(&mc, "[a b]\npath = x\n", &e) == UM_FAIL);
    CHECK(parse(&mc, "[a\n", &e) == UM_FAIL);
    CHECK_CONTAINS(e.msg, ":1: expected [name]");
    CHECK(parse(&mc, "[a]\npath\n", &e) == UM_FAIL);
    CHECK_CONTAINS(e.msg, ":2: expected 'key = value'");
    CHECK(parse(&mc, "[a]\npath =\n", &e) == UM_FAIL);
    CHECK_CONTAINS(e.msg, ":2: empty value");
}

TEST(models_conf_lookup_order) {
    char cwd[4096], dir[] = "/tmp/um-mc-XXXXXX", path[4096];
    CHECK(getcwd(cwd, sizeof cwd) != NULL);
    CHECK(mkdtemp(dir) != NULL);
    char *old_xdg = getenv("XDG_CONFIG_HOME") ? strdup(getenv("XDG_CONFIG_HOME")) : NULL;
    CHECK(chdir(dir) == 0);
    char sub[4200], file[4300];
    snprintf(sub, sizeof sub, "%s/unmask", dir);
    mkdir(sub, 0700);
    snprintf(file, sizeof file, "%s/models.conf", sub);
    FILE *f = fopen(file, "w");
    if (f) { fputs("[x]\npath = a.gguf\n", f); fclose(f); }
    setenv("XDG_CONFIG_HOME", dir, 1);
    bool found = models_conf_find(path, sizeof path);
    bool xdg_ok = found && !strcmp(path, file);
    f = fopen("models.conf", "w");                   /* the working directory wins */
    if (f) { fputs("[y]\npath = b.gguf\n", f); fclose(f); }
    found = models_conf_find(path, sizeof path);
    bool cwd_ok = found && !strcmp(path, "models.conf");
    models_conf mc;
    um_err e = { "" };
    int rc = models_conf_load(&mc, path, &e);
    bool rel_ok = rc == UM_OK && mc.n == 1 && !strcmp(mc.presets[0].path, "./b.gguf");
    if (rc == UM_OK) models_conf_free(&mc);
    unlink("models.conf");
    unlink(file);
    rmdir(sub);
    if (chdir(cwd) != 0) {}
    rmdir(dir);
    if (old_xdg) { setenv("XDG_CONFIG_HOME", old_xdg, 1); free(old_xdg); } else unsetenv("XDG_CONFIG_HOME");
    CHECK(xdg_ok);
    CHECK(cwd_ok);
    CHECK_MSG(rel_ok, "%s", e.msg);
}

TEST(models_conf_prompt_and_layout) {
    models_conf mc;
    um_err e;
    const char *text =
        "[sudoku]\npath = s.gguf\n"
        "prompt = 5493178.68...493..3...5.9147.6594.3........4..83.....11..98....29...61536..1.37.9\n"
        "layout = grid9\n"
        "[plain]\npath = p.gguf\nprompt =   Once upon a time, there was   # a comment\nlayout = text\n"
        "[bare]\npath = b.gguf\n";
    CHECK_MSG(parse(&mc, text, &e) == UM_OK, "%s", e.msg);
    const models_preset *p = models_conf_get(&mc, "sudoku");
    CHECK_STREQ(p->prompt, "5493178.68...493..3...5.9147.6594.3........4..83.....11..98....29...61536..1.37.9");
    CHECK_STREQ(p->layout, "grid9");
    p = models_conf_get(&mc, "plain");
    CHECK_STREQ(p->prompt, "Once upon a time, there was");      /* trimmed, comment cut */
    CHECK_STREQ(p->layout, "text");
    p = models_conf_get(&mc, "bare");
    CHECK_STREQ(p->prompt, "");
    CHECK_STREQ(p->layout, "");
    models_conf_free(&mc);
    CHECK(parse(&mc, "[a]\npath = x\nlayout = grid\n", &e) == UM_FAIL);
    CHECK_CONTAINS(e.msg, "models.conf:3: layout must be text or grid9, got 'grid'");
    CHECK(parse(&mc, "[a]\npath = x\nlayout = Grid9\n", &e) == UM_FAIL);
    CHECK(parse(&mc, "[a]\npath = x\nprompt =\n", &e) == UM_FAIL);
    CHECK_CONTAINS(e.msg, ":3: empty value for 'prompt'");
    char big[1200 + 32];
    snprintf(big, sizeof big, "[a]\npath = x\nprompt = %01100d\n", 7);
    CHECK(parse(&mc, big, &e) == UM_FAIL);
    CHECK_CONTAINS(e.msg, ":3: prompt too long");
    CHECK_EQ(VIEW_LAYOUT_COUNT, 2);                             /* the names the view takes */
    CHECK_STREQ(view_layout_keys[VIEW_LAYOUT_TEXT], "text");
    CHECK_STREQ(view_layout_keys[VIEW_LAYOUT_GRID9], "grid9");
}

/* The shipped models.conf: it parses, has a preset for every family unmask runs, and each
 * preset's chat_template is a template chat.c knows (a typo would only fail at run time). */
TEST(models_conf_shipped_presets) {
    models_conf mc;
    um_err e = { "" };
    CHECK_MSG(models_conf_load(&mc, "models.conf", &e) == UM_OK, "%s", e.msg);
    const char *families[] = { "llada-8b", "llada-1.5", "dream-7b", "llada-moe", "rnd1", "llada2-mini", "llada2-flash" };
    for (size_t i = 0; i < sizeof families / sizeof families[0]; i++)
        CHECK_MSG(models_conf_get(&mc, families[i]) != NULL, "no [%s] preset", families[i]);
    for (int i = 0; i < mc.n; i++) {
        um_chat c;
        const models_preset *p = &mc.presets[i];
        CHECK_MSG(!p->chat_template[0] || chat_from_name(p->chat_template, &c, &e) == UM_OK,
                  "[%s]: %s", p->name, e.msg);
    }
    models_conf_free(&mc);
}

/* `fast`: the flags' spelling, one rule, a cache with its refresh rule; every mistake named. */
TEST(models_conf_fast) {
    models_conf mc;
    um_err e;
    CHECK_MSG(parse(&mc, "[a]\npath = x\nfast = --eb-gamma 0.01 --cache dual --cache-drift 0.05\n[b]\npath = y\n", &e) == UM_OK,
              "%s", e.msg);
    const models_preset *p = models_conf_get(&mc, "a");
    CHECK(p->fast.set);
    CHECK_NEAR(p->fast.eb_gamma, 0.01, 1e-7);
    CHECK_EQ(p->fast.threshold, -1);
    CHECK_EQ(p->fast.factor, -1);
    CHECK_EQ(p->fast.cache, UM_CACHE_DUAL);
    CHECK_NEAR(p->fast.cache_drift, 0.05, 1e-7);
    CHECK_EQ(p->fast.cache_refresh, -1);
    CHECK(!models_conf_get(&mc, "b")->fast.set);
    models_conf_free(&mc);
    models_fast f;
    CHECK(models_fast_parse("--threshold 0.999", &f, &e) == UM_OK);
    CHECK(f.set && f.cache == -1 && f.eb_gamma == -1);
    CHECK_NEAR(f.threshold, 0.999, 1e-7);
    CHECK(models_fast_parse("--factor 2 --cache prefix", &f, &e) == UM_OK);
    CHECK_EQ(f.cache, UM_CACHE_PREFIX);
    CHECK(models_fast_parse("--threshold 0.9 --cache dual --cache-refresh 8", &f, &e) == UM_OK);
    CHECK_EQ(f.cache_refresh, 8);
    const struct { const char *v, *msg; } bad[] = {
        { "--cache dual", "fast: name one rule (--threshold, --eb-gamma or --factor), not 0" },
        { "--threshold 0.9 --factor 2", "fast: name one rule (--threshold, --eb-gamma or --factor), not 2" },
        { "--threshold", "fast: --threshold needs a value" },
        { "--threshold 1.5", "fast: --threshold: '1.5' is out of range" },
        { "--threshold 0.9 --cache all", "fast: --cache: " },
        { "--threshold 0.9 --cache-drift 0.05", "fast: --cache-drift and --cache-refresh refresh the dual cache" },
        { "--threshold 0.9 --steps 4", "fast: '--steps' is not one of --threshold, --eb-gamma, --factor, --cache" },
        { "threshold 0.9", "fast: 'threshold' is not one of" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        e.msg[0] = 0;
        CHECK_MSG(models_fast_parse(bad[i].v, &f, &e) == UM_FAIL, "'%s' accepted", bad[i].v);
        CHECK_CONTAINS(e.msg, bad[i].msg);
    }
    /* in a file: FILE:LINE */
    CHECK(parse(&mc, "[a]\npath = x\nfast = --eb-gamma x\n", &e) == UM_FAIL);
    CHECK_CONTAINS(e.msg, "/etc/um/models.conf:3: fast: --eb-gamma: 'x' is not a number");
}

/* The shipped presets' fast: what docs/decoding.md's tables measured best for the bundled
 * models (the demo model: the one rule within a point of exact agreement that saves passes). */
TEST(models_conf_shipped_fast) {
    models_conf mc;
    um_err e = { "" };
    CHECK_MSG(models_conf_load(&mc, "models.conf", &e) == UM_OK, "%s", e.msg);
    const char *sudoku[] = { "sudoku", "sudoku-hard" };
    for (int i = 0; i < 2; i++) {
        const models_preset *p = models_conf_get(&mc, sudoku[i]);
        CHECK(p && p->fast.set);
        CHECK_NEAR(p->fast.threshold, 0.999, 1e-7);
        CHECK_EQ(p->fast.cache, -1);
    }
    const models_preset *d = models_conf_get(&mc, "demo");
    CHECK(d && d->fast.set);
    CHECK_NEAR(d->fast.threshold, 0.5, 1e-7);
    CHECK(!models_conf_get(&mc, "llada-8b")->fast.set);
    models_conf_free(&mc);
}
