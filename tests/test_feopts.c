/*
 * test_feopts: the front-end options table shared by the visualizer and `unmask record`
 * (src/app/feopts.c): the same flag parses the same way for both commands, a flag of one
 * command is not taken by the other, bad values are refused, and each command's help lists
 * exactly its own flags, once each.
 */
#include "harness.h"

#include <stdlib.h>
#include <unistd.h>

#include "feopts.h"
#include "heat.h"
#include "view.h"

static int parse1(feopts *f, unsigned cmd, const char *flag, const char *val) {
    char *argv[3] = { (char *)flag, (char *)val, NULL };
    int i = 0, argc = val ? 2 : 1;
    int r = feopts_parse(f, cmd, argc, argv, &i, "test");
    if (r > 0 && i != argc - 1) return 99;             /* must consume exactly the value */
    return r;
}

TEST(feopts_shared_flags_parse_alike) {
    unsigned cmds[2] = { FE_VIEW, FE_RECORD };
    for (int c = 0; c < 2; c++) {
        feopts f;
        feopts_init(&f);
        CHECK_EQ(f.heat, VIEW_HEAT_COMMIT);
        CHECK_EQ(parse1(&f, cmds[c], "--heat", "entropy"), 1);
        CHECK_EQ(f.heat, VIEW_HEAT_ENTROPY);
        CHECK_EQ(parse1(&f, cmds[c], "--theme", "magma"), 1);
        CHECK_STREQ(f.theme, "magma");
        CHECK_EQ(parse1(&f, cmds[c], "--gif", "a.gif"), 1);
        CHECK_EQ(parse1(&f, cmds[c], "--cast", "a.cast"), 1);
        CHECK_STREQ(f.gif, "a.gif");
        CHECK_STREQ(f.cast, "a.cast");
        CHECK_EQ(parse1(&f, cmds[c], "--heat", "hot"), -1);
        CHECK_EQ(parse1(&f, cmds[c], "--nope", "x"), 0);
        CHECK_EQ(f.layout, -1);                                  /* not given */
        CHECK_EQ(parse1(&f, cmds[c], "--layout", "grid9"), 1);
        CHECK_EQ(f.layout, VIEW_LAYOUT_GRID9);
        CHECK_EQ(parse1(&f, cmds[c], "--layout", "Grid9"), -1);
        CHECK_EQ(parse1(&f, cmds[c], "--layout", "grid"), -1);
    }
}

/* --layout wins over the preset's layout key, which wins over text. */
TEST(feopts_layout_precedence) {
    feopts f;
    feopts_init(&f);
    CHECK_EQ(feopts_layout(&f, NULL), VIEW_LAYOUT_TEXT);
    CHECK_EQ(feopts_layout(&f, ""), VIEW_LAYOUT_TEXT);
    CHECK_EQ(feopts_layout(&f, "grid9"), VIEW_LAYOUT_GRID9);
    CHECK_EQ(parse1(&f, FE_VIEW, "--layout", "text"), 1);
    CHECK_EQ(feopts_layout(&f, "grid9"), VIEW_LAYOUT_TEXT);
    CHECK_EQ(parse1(&f, FE_RECORD, "--layout", "grid9"), 1);
    CHECK_EQ(feopts_layout(&f, "text"), VIEW_LAYOUT_GRID9);
}

TEST(feopts_command_specific_flags) {
    feopts f;
    feopts_init(&f);
    CHECK_EQ(parse1(&f, FE_VIEW, "--size", "80x24"), 0);       /* record's */
    CHECK_EQ(parse1(&f, FE_RECORD, "--size", "80x24"), 1);
    CHECK(f.cols == 80 && f.rows == 24);
    CHECK_EQ(parse1(&f, FE_RECORD, "--size", "80x"), -1);
    CHECK_EQ(parse1(&f, FE_RECORD, "--size", "10x10"), -1);     /* below the view's minimum */
    CHECK_EQ(parse1(&f, FE_RECORD, "--color", "256"), 0);      /* the visualizer's */
    CHECK_EQ(parse1(&f, FE_VIEW, "--color", "256"), 1);
    CHECK_EQ(f.depth, 256);
    CHECK_EQ(parse1(&f, FE_VIEW, "--paused", NULL), 1);
    CHECK(f.paused);
    CHECK_EQ(parse1(&f, FE_VIEW, "--delay-ms", "12.5"), -1);
    CHECK_EQ(parse1(&f, FE_RECORD, "--delay-cs", "1"), -1);    /* GIF delays below 2 cs are not honoured */
    CHECK_EQ(parse1(&f, FE_RECORD, "--hold-cs", "0"), 1);
    CHECK_EQ(f.hold_cs, 0);
}

static int count(const char *hay, const char *needle) {
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p++) n++;
    return n;
}

TEST(feopts_usage_lists_each_flag_once) {
    const char *const view_only[] = { "--color MODE", "--paused", "--demo-ui", "--delay-ms N" };
    const char *const rec_only[] = { "--size COLSxROWS", "--delay-cs N", "--hold-cs N" };
    const char *const both[] = { "--gif FILE", "--cast FILE", "--theme NAME|FILE", "--heat MODE", "--layout MODE" };
    for (int c = 0; c < 2; c++) {
        char buf[8192] = "";
        FILE *m = fmemopen(buf, sizeof buf - 1, "w");
        CHECK(m != NULL);
        feopts_usage(m, c == 0 ? FE_VIEW : FE_RECORD);
        fclose(m);
        for (size_t k = 0; k < sizeof both / sizeof both[0]; k++) CHECK_MSG(count(buf, both[k]) == 1, "%s", both[k]);
        for (size_t k = 0; k < 4; k++) CHECK_EQ(count(buf, view_only[k]), c == 0 ? 1 : 0);
        for (size_t k = 0; k < 3; k++) CHECK_EQ(count(buf, rec_only[k]), c == 1 ? 1 : 0);
        for (int h = 0; h < VIEW_HEAT_COUNT; h++) CHECK_CONTAINS(buf, ui_heat_keys[h]);
        CHECK_CONTAINS(buf, "text or grid9");
    }
}

/* --pace: both commands take it (one row each, their own help), 0 .. UI_PACE_MAX_MS ms;
 * given or not is remembered (the visualizer's default, record's fixed --delay-cs). */
TEST(feopts_pace) {
    unsigned cmds[2] = { FE_VIEW, FE_RECORD };
    for (int c = 0; c < 2; c++) {
        feopts f;
        feopts_init(&f);
        CHECK(!f.pace_set && !f.delay_cs_set);
        CHECK_EQ(parse1(&f, cmds[c], "--pace", "0"), 1);
        CHECK(f.pace_set);
        CHECK_EQ(f.pace_ms, 0);
        CHECK_EQ(parse1(&f, cmds[c], "--pace", "250"), 1);
        CHECK_EQ(f.pace_ms, 250);
        CHECK_EQ(parse1(&f, cmds[c], "--pace", "-1"), -1);
        CHECK_EQ(parse1(&f, cmds[c], "--pace", "60001"), -1);
        CHECK_EQ(parse1(&f, cmds[c], "--pace", "1.5"), -1);
        CHECK_EQ(parse1(&f, cmds[c], "--pace", NULL), -1);
        char buf[8192] = "";
        FILE *m = fmemopen(buf, sizeof buf - 1, "w");
        CHECK(m != NULL);
        feopts_usage(m, cmds[c]);
        fclose(m);
        CHECK_EQ(count(buf, "--pace MS"), 1);
        CHECK_CONTAINS(buf, c == 0 ? "default 120" : "--delay-cs");
    }
    feopts f;
    feopts_init(&f);
    CHECK_EQ(parse1(&f, FE_RECORD, "--delay-cs", "12"), 1);
    CHECK(f.delay_cs_set);
}
