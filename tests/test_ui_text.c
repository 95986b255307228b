/* Tests of ui/text.c: clusters, widths, joins across tokens, visible controls. */
#include <stdlib.h>
#include "harness.h"
#include "text.h"

static ui_text T;

static int shape1(const char *s) {
    ui_text_shape_str(&T, s, strlen(s), NULL);
    return T.n;
}

TEST(ui_text_ascii_and_wide) {
    CHECK_EQ(shape1("ab"), 2);
    CHECK_EQ(T.cl[0].width, 1);
    CHECK_STREQ(T.cl[1].text, "b");
    CHECK_EQ(shape1("漢字"), 2);
    CHECK_EQ(T.cl[0].width, 2);
    CHECK_STREQ(T.cl[1].text, "字");
    CHECK_EQ(shape1("😀"), 1);
    CHECK_EQ(T.cl[0].width, 2);
    CHECK_EQ(shape1("\xE2\x9D\xA4\xEF\xB8\x8F"), 1);          /* ❤ + VS16: emoji presentation */
    CHECK_EQ(T.cl[0].width, 2);
    CHECK_EQ(shape1("👩\xE2\x80\x8D💻"), 1);                  /* ZWJ sequence: one cluster */
    CHECK_EQ(T.cl[0].width, 2);
    CHECK_EQ(ui_text_width("漢字😀x"), 7);
    ui_text_free(&T);
}

TEST(ui_text_combining_marks) {
    CHECK_EQ(shape1("e\xCC\x81x"), 2);                           /* é (decomposed) x */
    CHECK_STREQ(T.cl[0].text, "e\xCC\x81");
    CHECK_EQ(T.cl[0].width, 1);
    CHECK_EQ(shape1("\xCC\x81"), 1);                             /* no base: dotted circle */
    CHECK_STREQ(T.cl[0].text, "\xE2\x97\x8C\xCC\x81");
    CHECK_EQ(T.cl[0].width, 1);
    char zalgo[1 + 40 * 2 + 1] = "a";                            /* 40 marks: cut to fit */
    for (int i = 0; i < 40; i++) memcpy(zalgo + 1 + 2 * i, "\xCC\x81", 2);
    zalgo[81] = 0;
    CHECK_EQ(shape1(zalgo), 1);
    size_t l = strlen(T.cl[0].text);
    CHECK(l < UI_CLUSTER_MAX && l % 2 == 1);                     /* 'a' + whole 2-byte marks */
    ui_text_free(&T);
}

TEST(ui_text_controls_visible) {
    CHECK_EQ(shape1("a\nb\tc"), 5);
    CHECK_EQ(T.cl[1].kind, UI_CL_NEWLINE);
    CHECK_STREQ(T.cl[1].text, "\xE2\x86\xB5");
    CHECK_EQ(T.cl[3].kind, UI_CL_TAB);
    CHECK_EQ(shape1("\x01\x7F\xC2\x85"), 3);
    CHECK_STREQ(T.cl[0].text, "\xE2\x90\x81");                   /* ␁ */
    CHECK(T.cl[0].flags & UI_CL_REPLACED);
    CHECK_STREQ(T.cl[1].text, "\xE2\x90\xA1");                   /* ␡ */
    CHECK_STREQ(T.cl[2].text, "\xE2\x8D\xB0");                   /* C1 control: ⍰ */
    CHECK_EQ(shape1("\xE2\x80\xAE"), 1);                         /* RTL override made visible */
    CHECK_STREQ(T.cl[0].text, "\xE2\x8D\xB0");
    ui_text_free(&T);
}

TEST(ui_text_invalid_bytes) {
    CHECK_EQ(shape1("\xFF"), 1);
    CHECK_STREQ(T.cl[0].text, "\xEF\xBF\xBD");
    CHECK(T.cl[0].flags & UI_CL_REPLACED);
    CHECK_EQ(shape1("\xE2\x82" "A"), 2);                         /* truncated sequence: one U+FFFD */
    CHECK_STREQ(T.cl[0].text, "\xEF\xBF\xBD");
    CHECK_STREQ(T.cl[1].text, "A");
    CHECK_EQ(shape1("\xED\xA0\x80"), 3);                         /* surrogate: 3 maximal subparts */
    CHECK_EQ(shape1("\xC0\xAF"), 2);                             /* overlong */
    ui_text_free(&T);
}

TEST(ui_text_joins_partial_utf8_across_tokens) {
    ui_run r[3] = { { 0, "\xE2\x82", 2, false, false }, { 1, "\xAC", 1, false, false } };
    ui_text_shape(&T, r, 2, NULL);
    CHECK_EQ(T.n, 1);
    CHECK_STREQ(T.cl[0].text, "\xE2\x82\xAC");                   /* € */
    CHECK_EQ(T.cl[0].pos, 0);
    CHECK_EQ(T.cl[0].pos_last, 1);
    /* an opaque run (a mask) in between stops the join: both halves invalid */
    ui_run m[3] = { { 0, "\xE2\x82", 2, false, false }, { 1, "#", 1, true, false }, { 2, "\xAC", 1, false, false } };
    ui_text_shape(&T, m, 3, NULL);
    CHECK_EQ(T.n, 3);
    CHECK_STREQ(T.cl[0].text, "\xEF\xBF\xBD");
    CHECK_STREQ(T.cl[1].text, "#");
    CHECK_EQ(T.cl[1].pos, 1);
    CHECK_STREQ(T.cl[2].text, "\xEF\xBF\xBD");
    /* a combining mark in the next token joins its base's cluster, unless split */
    ui_run c[2] = { { 0, "e", 1, false, false }, { 1, "\xCC\x81", 2, false, false } };
    ui_text_shape(&T, c, 2, NULL);
    CHECK_EQ(T.n, 1);
    CHECK_EQ(T.cl[0].pos_last, 1);
    c[1].split = true;
    ui_text_shape(&T, c, 2, NULL);
    CHECK_EQ(T.n, 2);
    CHECK_EQ(T.cl[1].pos, 1);
    ui_text_free(&T);
}
