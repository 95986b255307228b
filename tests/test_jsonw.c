/*
 * test_jsonw: the JSON writer's strings (escapes, invalid UTF-8 as U+FFFD) and
 * jsonw_utf8_valid, which the step stream uses to add a token's exact bytes when its text
 * alone is not valid UTF-8 (a piece of a longer character).
 */
#include "harness.h"

#include <stdlib.h>

#include "jsonw.h"

TEST(jsonw_utf8_valid_cases) {
    CHECK(jsonw_utf8_valid("", 0));
    CHECK(jsonw_utf8_valid("plain \n\t", 8));
    CHECK(jsonw_utf8_valid("\xE6\xBC\xA2\xE5\xAD\x97", 6));              /* 漢字 */
    CHECK(jsonw_utf8_valid("\xF0\x9F\x98\x80", 4));                      /* 😀 */
    CHECK(!jsonw_utf8_valid("\xE6\xBC", 2));                             /* the first two bytes of 漢 */
    CHECK(!jsonw_utf8_valid("\xA2", 1));                                 /* a lone continuation byte */
    CHECK(!jsonw_utf8_valid("\xC0\xAF", 2));                             /* overlong */
    CHECK(!jsonw_utf8_valid("\xED\xA0\x80", 3));                         /* a surrogate */
    CHECK(!jsonw_utf8_valid("ok\xFF", 3));
}

TEST(jsonw_strings_escaped_and_replaced) {
    char buf[256] = "";
    FILE *m = fmemopen(buf, sizeof buf - 1, "w");
    CHECK(m != NULL);
    jsonw j;
    jsonw_init(&j, m);
    jsonw_obj_begin(&j);
    jsonw_key(&j, "t"); jsonw_strn(&j, "a\"b\\\n\x01\xE6\xBC", 8);
    jsonw_key(&j, "n"); jsonw_int(&j, -3);
    jsonw_obj_end(&j);
    fclose(m);
    CHECK_STREQ(buf, "{\"t\":\"a\\\"b\\\\\\n\\u0001\xEF\xBF\xBD\xEF\xBF\xBD\",\"n\":-3}");
}

/* The characters a terminal acts on are escapes in JSON too (esc.h's rule): DEL and the C1
 * controls (U+009B is CSI to some terminals) as \u007f, \u009b; U+00A0, the first character
 * past them, and a three-byte character stay as they are. */
TEST(jsonw_escapes_del_and_c1_controls) {
    char buf[128] = "";
    FILE *m = fmemopen(buf, sizeof buf - 1, "w");
    CHECK(m != NULL);
    jsonw_put_str(m, "\x7f\xc2\x80\xc2\x9b" "2J\xc2\xa0\xe2\x82\xac\x1b", 13);
    fclose(m);
    CHECK_STREQ(buf, "\"\\u007f\\u0080\\u009b2J\xc2\xa0\xe2\x82\xac\\u001b\"");
}

/* Numbers: the shortest text that reads back as the same value. Expected texts are written
 * out by hand (the decimal a person would write for the value stored); each is also checked
 * to read back exactly, and a float that needs all 9 digits keeps them. */
TEST(jsonw_numbers_shortest_round_trip) {
    const struct { float v; const char *want; } fl[] = {
        { 0.9f, "0.9" }, { 0.95f, "0.95" }, { 0.1f, "0.1" }, { 1e-3f, "0.001" }, { 42.0f, "42" },
        { 0.0f, "0" }, { -2.5f, "-2.5" }, { 16777216.0f, "16777216" }, { 0.333333343f, "0.33333334" }, { 0.104274996f, "0.104274996" },
        { 1e-30f, "1e-30" },
    };
    char buf[64];
    for (size_t k = 0; k < sizeof fl / sizeof fl[0]; k++) {
        jsonw_fmt_float(fl[k].v, buf, sizeof buf);
        CHECK_STREQ(buf, fl[k].want);
        CHECK(strtof(buf, NULL) == fl[k].v);
    }
    const struct { double v; const char *want; } db[] = {
        { 0.9, "0.9" }, { 0.1 + 0.2, "0.30000000000000004" }, { 1.0 / 3.0, "0.3333333333333333" },
        { 123456789.125, "123456789.125" }, { (double)0.9f, "0.8999999761581421" },
    };
    for (size_t k = 0; k < sizeof db / sizeof db[0]; k++) {
        jsonw_fmt_double(db[k].v, buf, sizeof buf);
        CHECK_STREQ(buf, db[k].want);
        CHECK(strtod(buf, NULL) == db[k].v);
    }
    char out[256] = "";
    FILE *m = fmemopen(out, sizeof out - 1, "w");
    CHECK(m != NULL);
    jsonw j;
    jsonw_init(&j, m);
    jsonw_arr_begin(&j);
    jsonw_f32(&j, 0.9f);
    jsonw_num(&j, 0.5);
    jsonw_f32(&j, NAN);
    jsonw_num(&j, INFINITY);
    jsonw_arr_end(&j);
    fclose(m);
    CHECK_STREQ(out, "[0.9,0.5,null,null]");
}
