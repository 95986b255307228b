/*
 * test_util: error messages stay one printable line whatever they quote, and prefixes
 * compose without overflowing.
 */
#include "harness.h"
#include "util.h"

TEST(errors_never_carry_control_bytes) {
    um_err e;
    CHECK(um_errf(&e, "tensor '%s' missing", "evil\x1b[2J\nname\x7f") == UM_FAIL);
    CHECK_STREQ(e.msg, "tensor 'evil?[2J?name?' missing");
    um_err_prefix(&e, "file\r%s", ".gguf");
    CHECK_STREQ(e.msg, "file?.gguf: tensor 'evil?[2J?name?' missing");
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
