/* Tests of ui/theme.c: the shipped theme files, parse errors with FILE:LINE, the heat ramp. */
#include <stdlib.h>
#include "harness.h"
#include "theme.h"

static int parse(theme *t, const char *text, um_err *e) {
    e->msg[0] = 0;
    return theme_parse(t, text, strlen(text), "x.theme", e);
}

TEST(ui_theme_shipped_files_parse) {
    for (int i = 0; i < theme_cycle_len; i++) {
        char path[256];
        theme t;
        um_err e = { "" };
        snprintf(path, sizeof path, "themes/%s.theme", theme_cycle[i]);
        CHECK_MSG(theme_load(&t, path, &e) == UM_OK, "%s", e.msg);
        CHECK_STREQ(t.name, theme_cycle[i]);
        CHECK(t.n_ramp >= 2);
    }
}

TEST(ui_theme_values) {
    theme t;
    um_err e;
    CHECK(parse(&t, "# c\nname = t1\nmask = red on 21 bold\nprompt = #585858  # grey\nmask_glyph = _\n", &e) == UM_OK);
    CHECK_STREQ(t.name, "t1");
    CHECK_EQ(t.role[THEME_MASK].fg, 0xcd0000);
    CHECK_EQ(t.role[THEME_MASK].bg, frame_color_from_256(21));
    CHECK_EQ(t.role[THEME_MASK].attrs, FRAME_BOLD);
    CHECK_EQ(t.role[THEME_PROMPT].fg, 0x585858);
    CHECK_EQ(t.role[THEME_PROMPT].bg, FRAME_DEFAULT);
    CHECK_STREQ(t.mask_glyph, "_");
    CHECK(parse(&t, "heat = #000000 #ffffff\n", &e) == UM_OK);
    CHECK_EQ(theme_heat(&t, 0), 0x000000);
    CHECK_EQ(theme_heat(&t, 1), 0xffffff);
    CHECK_EQ(theme_heat(&t, 0.5f), 0x808080);                  /* 127.5 rounds up */
    CHECK_EQ(theme_heat(&t, -3), 0x000000);                    /* clamped */
    CHECK_EQ(theme_heat(&t, NAN), 0x000000);
}

TEST(ui_theme_errors_name_file_and_line) {
    theme t;
    um_err e;
    CHECK(parse(&t, "name = a\n\nmaskk = red\n", &e) == UM_FAIL);
    CHECK_CONTAINS(e.msg, "x.theme:3: unknown key 'maskk'");
    CHECK(parse(&t, "mask = #12345\n", &e) == UM_FAIL);
    CHECK_CONTAINS(e.msg, "x.theme:1: bad colour");
    CHECK(parse(&t, "\nmask = red blue\n", &e) == UM_FAIL);
    CHECK_CONTAINS(e.msg, "x.theme:2:");
    CHECK(parse(&t, "mask = red on\n", &e) == UM_FAIL);
    CHECK_CONTAINS(e.msg, "x.theme:1: 'on' needs");
    CHECK(parse(&t, "heat = #000000\n", &e) == UM_FAIL);
    CHECK_CONTAINS(e.msg, "x.theme:1: heat needs at least 2");
    CHECK(parse(&t, "heat = #000000 default\n", &e) == UM_FAIL);
    CHECK_CONTAINS(e.msg, "bad heat colour 'default'");
    CHECK(parse(&t, "a\n", &e) == UM_FAIL);
    CHECK_CONTAINS(e.msg, "x.theme:1: expected 'key = value'");
    CHECK(parse(&t, "mask_glyph = \xE6\xBC\xA2\n", &e) == UM_FAIL);   /* wide glyph */
    CHECK_CONTAINS(e.msg, "x.theme:1: mask_glyph");
    CHECK(parse(&t, "mask = 256\n", &e) == UM_FAIL);
    um_err e2 = { "" };
    CHECK(theme_load(&t, "no-such-theme", &e2) == UM_FAIL);
    CHECK_CONTAINS(e2.msg, "not found");
    CHECK(theme_load(&t, "../etc", &e2) == UM_FAIL);
}

TEST(ui_theme_colour_quantisers) {
    CHECK_EQ(frame_color_to_256(0xff0000), 196);
    CHECK_EQ(frame_color_to_256(0x808080), 244);
    CHECK_EQ(frame_color_to_256(FRAME_DEFAULT), -1);
    CHECK_EQ(frame_color_from_256(196), 0xff0000);
    CHECK_EQ(frame_color_to_8(0xcd0000), 1);
    CHECK_EQ(frame_color_to_8(0x101010), 0);                   /* near-black */
    CHECK(frame_color_to_8(0x585858) != 0);                   /* dark grey stays visible */
}
