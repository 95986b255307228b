/* Tests of src/base/numparse.c: the one number parser of every flag and models.conf value.
 * Expected values are C literals (what the compiler reads), never outputs of the parser. */
#include <float.h>
#include <stdint.h>
#include "harness.h"
#include "numparse.h"

/* whole numbers that parse, with the value they mean */
TEST(numparse_int_accepts_plain_decimal) {
    static const struct { const char *s; int64_t v; } ok[] = {
        { "0", 0 }, { "5", 5 }, { "+5", 5 }, { "-5", -5 }, { "-0", 0 }, { "+0", 0 }, { "1048576", 1048576 },
        { "9223372036854775807", INT64_MAX }, { "-9223372036854775808", INT64_MIN },
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        int64_t v = 12345;
        um_err e = { "" };
        CHECK_MSG(num_int("--n", ok[i].s, INT64_MIN, INT64_MAX, &v, &e) == UM_OK, "'%s': %s", ok[i].s, e.msg);
        CHECK_MSG(v == ok[i].v, "'%s' read as %lld", ok[i].s, (long long)v);
    }
}

TEST(numparse_int_refuses_other_spellings) {
    static const char *const bad[] = {
        "", " ", " 5", "5 ", "\t5", "5\n", "5x", "x5", "12.7", "12.0", "1e3", "1E3", "0x10", "0X10", "010", "00",
        "-010", "+", "-", "+-5", "--5", "1_000", "1,000", "1'000", "nan", "NaN", "inf", "-inf", "infinity",
        "\xd9\xa3" /* Arabic-Indic three */, "５" /* fullwidth 5 */,
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int64_t v = 12345;
        um_err e = { "" };
        CHECK_MSG(num_int("--n", bad[i], INT64_MIN, INT64_MAX, &v, &e) == UM_FAIL, "'%s' was accepted", bad[i]);
        CHECK_MSG(v == 12345, "'%s': output written on failure", bad[i]);
        CHECK_CONTAINS(e.msg, "is not a whole number");
    }
}

TEST(numparse_int_range_and_messages) {
    int64_t v = 7;
    um_err e = { "" };
    CHECK(num_int("--steps", "12.7", 1, 1048576, &v, &e) == UM_FAIL);
    CHECK_STREQ(e.msg, "--steps: '12.7' is not a whole number");
    CHECK(num_int("--steps", "0", 1, 1048576, &v, &e) == UM_FAIL);
    CHECK_STREQ(e.msg, "--steps: '0' is out of range (1 to 1048576)");
    CHECK(num_int("--steps", "1048577", 1, 1048576, &v, &e) == UM_FAIL);
    CHECK_STREQ(e.msg, "--steps: '1048577' is out of range (1 to 1048576)");
    CHECK(num_int("--seed", "-1", 0, 9007199254740991LL, &v, &e) == UM_FAIL);
    CHECK_STREQ(e.msg, "--seed: '-1' is out of range (0 to 9007199254740991)");
    /* one past INT64: out of range, not wrapped */
    CHECK(num_int("--n", "9223372036854775808", INT64_MIN, INT64_MAX, &v, &e) == UM_FAIL);
    CHECK_CONTAINS(e.msg, "'9223372036854775808' is out of range (-9223372036854775808 to 9223372036854775807)");
    CHECK(num_int("--n", "-9223372036854775809", INT64_MIN, INT64_MAX, &v, &e) == UM_FAIL);
    CHECK_CONTAINS(e.msg, "is out of range");
    CHECK(num_int("--n", "99999999999999999999999999", 0, 10, &v, &e) == UM_FAIL);
    CHECK_CONTAINS(e.msg, "is out of range (0 to 10)");
    CHECK_EQ(v, 7);
    /* bounds are inclusive */
    CHECK(num_int("--n", "1", 1, 3, &v, &e) == UM_OK && v == 1);
    CHECK(num_int("--n", "3", 1, 3, &v, &e) == UM_OK && v == 3);
    /* no prefix without a what; NULL e is allowed */
    CHECK(num_int(NULL, "x", 0, 1, &v, &e) == UM_FAIL);
    CHECK_STREQ(e.msg, "'x' is not a whole number");
    CHECK(num_int("", "x", 0, 1, &v, NULL) == UM_FAIL);
}

TEST(numparse_float_accepts_decimal) {
    static const struct { const char *s; double v; } ok[] = {
        { "0", 0.0 }, { "0.5", 0.5 }, { ".5", 0.5 }, { "5.", 5.0 }, { "+0.25", 0.25 }, { "-2.5", -2.5 },
        { "1e3", 1e3 }, { "1E-3", 1e-3 }, { "1e+2", 1e2 }, { "007", 7.0 }, { "12.7", 12.7 },
        { "1e-310", 1e-310 },                        /* a denormal: kept */
        { "4.9406564584124654e-324", 4.9406564584124654e-324 },   /* the smallest denormal */
        { "1e-400", 0.0 },                           /* below every denormal: 0 */
        { "1.7976931348623157e308", DBL_MAX },
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        double v = 12345;
        um_err e = { "" };
        CHECK_MSG(num_float("--x", ok[i].s, -DBL_MAX, DBL_MAX, 0, &v, &e) == UM_OK, "'%s': %s", ok[i].s, e.msg);
        CHECK_MSG(v == ok[i].v, "'%s' read as %.17g", ok[i].s, v);
    }
    double v = 1;
    CHECK(num_float("--x", "-0", 0, 1, 0, &v, NULL) == UM_OK);
    CHECK(v == 0 && !signbit(v));                    /* -0 reads as +0 */
    CHECK(num_float("--x", "-0.0e5", 0, 1, 0, &v, NULL) == UM_OK);
    CHECK(v == 0 && !signbit(v));
}

TEST(numparse_float_refuses_non_numbers) {
    static const char *const bad[] = {
        "", " ", " 1", "1 ", "1\n", "nan", "NaN", "-nan", "nan(0x1)", "inf", "-inf", "+inf", "INF", "infinity",
        "0x1p3", "0x10", "0X1.8P1", "1e", "1e+", "e5", ".", "-", "+", "1.2.3", "1,5", "1_000", "5x", "--1", "1d",
        "1f", "\xe2\x88\x92" "1" /* U+2212 minus */,
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        double v = 12345;
        um_err e = { "" };
        CHECK_MSG(num_float("--x", bad[i], -DBL_MAX, DBL_MAX, 0, &v, &e) == UM_FAIL, "'%s' was accepted", bad[i]);
        CHECK_MSG(v == 12345, "'%s': output written on failure", bad[i]);
        CHECK_CONTAINS(e.msg, "is not a number");
    }
}

TEST(numparse_float_range_and_messages) {
    double v = 7;
    um_err e = { "" };
    CHECK(num_float("--temp", "nan", 0, 100, 0, &v, &e) == UM_FAIL);
    CHECK_STREQ(e.msg, "--temp: 'nan' is not a number");
    CHECK(num_float("--temp", "100.5", 0, 100, 0, &v, &e) == UM_FAIL);
    CHECK_STREQ(e.msg, "--temp: '100.5' is out of range (0 to 100)");
    CHECK(num_float("--temp", "-0.001", 0, 100, 0, &v, &e) == UM_FAIL);
    CHECK_STREQ(e.msg, "--temp: '-0.001' is out of range (0 to 100)");
    /* past the double range: out of range, not infinity */
    CHECK(num_float("--temp", "1e999", 0, 100, 0, &v, &e) == UM_FAIL);
    CHECK_STREQ(e.msg, "--temp: '1e999' is out of range (0 to 100)");
    CHECK(num_float("--x", "-1e999", -DBL_MAX, DBL_MAX, 0, &v, &e) == UM_FAIL);
    CHECK_CONTAINS(e.msg, "is out of range");
    /* open bounds */
    CHECK(num_float("--eps", "1", 0, 1, NUM_HI_OPEN, &v, &e) == UM_FAIL);
    CHECK_STREQ(e.msg, "--eps: '1' is out of range (0 to 1, 1 excluded)");
    CHECK(num_float("--eps", "0", 0, 1, NUM_HI_OPEN, &v, &e) == UM_OK && v == 0);
    CHECK(num_float("--top-p", "0", 0, 1, NUM_LO_OPEN, &v, &e) == UM_FAIL);
    CHECK_STREQ(e.msg, "--top-p: '0' is out of range (0 to 1, 0 excluded)");
    CHECK(num_float("--top-p", "-0", 0, 1, NUM_LO_OPEN, &v, &e) == UM_FAIL);
    CHECK(num_float("--top-p", "1", 0, 1, NUM_LO_OPEN, &v, &e) == UM_OK && v == 1);
    CHECK(num_float("--x", "1", 0, 1, NUM_LO_OPEN | NUM_HI_OPEN, &v, &e) == UM_FAIL);
    CHECK_STREQ(e.msg, "--x: '1' is out of range (0 to 1, both excluded)");
    /* bounds as plain decimals, never with an exponent */
    CHECK(num_float("--x", "0", 1e-6, 1e6, 0, &v, &e) == UM_FAIL);
    CHECK_STREQ(e.msg, "--x: '0' is out of range (0.000001 to 1000000)");
    CHECK(num_float("--x", "1e300", 0, 1e20, 0, &v, &e) == UM_FAIL);
    CHECK_STREQ(e.msg, "--x: '1e300' is out of range (0 to 100000000000000000000)");
    /* a denormal is a value like any other: in range when the range holds it */
    CHECK(num_float("--x", "1e-310", 0, 1, NUM_LO_OPEN, &v, &e) == UM_OK && v == 1e-310);
}

TEST(numparse_f32_rounding_respects_open_bounds) {
    float f = 7;
    um_err e = { "" };
    /* in range as a double, but 1.0f as a float: refused for a bound that excludes 1 */
    CHECK(num_f32("--eps", "0.99999999999", 0, 1, NUM_HI_OPEN, &f, &e) == UM_FAIL);
    CHECK_STREQ(e.msg, "--eps: '0.99999999999' is out of range (0 to 1, 1 excluded)");
    CHECK(f == 7);
    CHECK(num_f32("--eps", "0.999", 0, 1, NUM_HI_OPEN, &f, &e) == UM_OK && f == 0.999f);
    /* past the float range with a wide double range: out of range, not inf */
    CHECK(num_f32("--x", "1e39", 0, 1e300, 0, &f, &e) == UM_FAIL);
    CHECK_CONTAINS(e.msg, "is out of range");
}

TEST(numparse_messages_are_one_bounded_line) {
    char longv[200];
    memset(longv, '7', sizeof longv - 2);
    longv[sizeof longv - 2] = 'x';
    longv[sizeof longv - 1] = 0;
    int64_t v;
    um_err e = { "" };
    CHECK(num_int("--n", longv, 0, 10, &v, &e) == UM_FAIL);
    CHECK(strlen(e.msg) < 100);                      /* 60 bytes of the value, then "..." */
    CHECK_CONTAINS(e.msg, "777...' is not a whole number");
    CHECK(num_int("--n", "5\n\x1b[2J", 0, 10, &v, &e) == UM_FAIL);
    CHECK(!strchr(e.msg, '\n') && !strchr(e.msg, '\x1b'));
    CHECK_STREQ(e.msg, "--n: '5\\x0a\\x1b[2J' is not a whole number");
}

TEST(numparse_format_plain_decimals) {
    static const struct { double v; const char *s; } cases[] = {
        { 0, "0" }, { -0.0, "0" }, { 1, "1" }, { -2.5, "-2.5" }, { 0.1, "0.1" }, { 1e-6, "0.000001" },
        { 1048576, "1048576" }, { 9007199254740991.0, "9007199254740991" }, { 1e20, "100000000000000000000" },
        { 0.95, "0.95" }, { 1e-3, "0.001" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char buf[128];
        num_format(cases[i].v, buf, sizeof buf);
        CHECK_STREQ(buf, cases[i].s);
    }
}
