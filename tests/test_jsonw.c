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
