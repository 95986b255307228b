/*
 * test_util: error messages stay one printable line whatever they quote, and prefixes
 * compose without overflowing.
 */
#include "harness.h"
#include "esc.h"
#include "util.h"

TEST(errors_never_carry_control_bytes) {
    um_err e;
    CHECK(um_errf(&e, "tensor '%s' missing", "evil\x1b[2J\nname\x7f") == UM_FAIL);
    CHECK_STREQ(e.msg, "tensor 'evil\\x1b[2J\\x0aname\\x7f' missing");
    um_err_prefix(&e, "file\r%s", ".gguf");
    CHECK_STREQ(e.msg, "file\\x0d.gguf: tensor 'evil\\x1b[2J\\x0aname\\x7f' missing");
    um_errf(&e, "name '%s'", "c1 \xc2\x9b" "2J bad \x9b utf8 \xc3\xa9");   /* C1 CSI, a lone 0x9b, valid e-acute */
    CHECK_STREQ(e.msg, "name 'c1 \\xc2\\x9b2J bad \\x9b utf8 \xc3\xa9'");
}

TEST(error_prefix_truncates_safely) {
    um_err e;
    char big[2000];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    um_errf(&e, "%s", big);
    CHECK_EQ(strlen(e.msg), sizeof e.msg - 1);
    um_err_prefix(&e, "%s", big);
    CHECK(strlen(e.msg) < sizeof e.msg);
}

/* um_utf8_len: the one UTF-8 validator of the JSON reader, writer and `info --json`. */
TEST(util_utf8_len_accepts_valid_refuses_invalid) {
    static const struct { const char *s; size_t n, want; } c[] = {
        { "a", 1, 1 }, { "\xC3\xA9", 2, 2 }, { "\xE2\x82\xAC", 3, 3 }, { "\xF0\x9F\x98\x80", 4, 4 },
        { "\xF4\x8F\xBF\xBF", 4, 4 },                     /* U+10FFFF */
        { "\x80", 1, 0 }, { "\xC0\xAF", 2, 0 }, { "\xC1\xBF", 2, 0 },   /* continuation, overlong */
        { "\xE0\x80\xAF", 3, 0 }, { "\xED\xA0\x80", 3, 0 },             /* overlong, surrogate */
        { "\xF0\x80\x80\xAF", 4, 0 }, { "\xF4\x90\x80\x80", 4, 0 },     /* overlong, past U+10FFFF */
        { "\xF5\x80\x80\x80", 4, 0 }, { "\xFF", 1, 0 },
        { "\xE2\x82", 2, 0 }, { "\xC3", 1, 0 }, { "\xE2\x28\xA1", 3, 0 }, /* truncated, bad continuation */
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++)
        CHECK_MSG(um_utf8_len((const unsigned char *)c[i].s, c[i].n) == c[i].want, "case %zu", i);
}
