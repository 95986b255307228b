/*
 * test_jsonr: the strict JSON object reader: members and their types, every escape
 * (surrogate pairs included) decoded to the UTF-8 written here by hand, and a list of
 * malformed lines each rejected with the column of the problem.
 */
#include "harness.h"
#include "jsonr.h"

#include <stdlib.h>
#include <string.h>

static int parse(const char *s, jsonr_obj *o, um_err *e) { return jsonr_object(s, strlen(s), o, e); }

TEST(jsonr_members_and_types) {
    jsonr_obj o;
    um_err e;
    CHECK(parse(" {\"prompt\": \"hi\", \"n\": -1.5e3, \"ok\": true, \"x\": null, \"a\": [1, {\"b\": []}], \"o\": {}}\r\n",
                &o, &e) == UM_OK);
    CHECK_EQ(o.n, 6);
    const jsonr_member *m = jsonr_get(&o, "prompt");
    CHECK(m && m->type == JSONR_STRING && m->len == 2);
    CHECK_STREQ(m->str, "hi");
    m = jsonr_get(&o, "n");
    CHECK(m && m->type == JSONR_NUMBER);
    CHECK_STREQ(m->str, "-1.5e3");
    m = jsonr_get(&o, "ok");
    CHECK(m && m->type == JSONR_BOOL && m->boolean == 1);
    CHECK(jsonr_get(&o, "x")->type == JSONR_NULL);
    CHECK(jsonr_get(&o, "a")->type == JSONR_ARRAY && jsonr_get(&o, "a")->str == NULL);
    CHECK(jsonr_get(&o, "o")->type == JSONR_OBJECT);
    CHECK(jsonr_get(&o, "missing") == NULL);
    jsonr_free(&o);
    CHECK(parse("{}", &o, &e) == UM_OK && o.n == 0);
    jsonr_free(&o);
}

TEST(jsonr_escapes_decode) {
    jsonr_obj o;
    um_err e;
    CHECK_MSG(parse("{\"s\": \"a\\nb\\\"c\\\\d\\/e\\tf\\u00e9\\u20ac\\ud83d\\ude00\\b\\f\\r\"}", &o, &e) == UM_OK, "%s", e.msg);
    const jsonr_member *m = jsonr_get(&o, "s");
    /* e-acute C3 A9, euro E2 82 AC, U+1F600 F0 9F 98 80 */
    const char want[] = "a\nb\"c\\d/e\tf\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\b\f\r";
    CHECK_EQ(m->len, sizeof want - 1);
    CHECK(memcmp(m->str, want, sizeof want - 1) == 0);
    jsonr_free(&o);
    /* raw UTF-8 passes through; escaped keys are decoded too */
    CHECK(parse("{\"\\u0070rompt\": \"\xc3\xa9t\xc3\xa9\"}", &o, &e) == UM_OK);
    CHECK_STREQ(jsonr_get(&o, "prompt")->str, "\xc3\xa9t\xc3\xa9");
    jsonr_free(&o);
}

TEST(jsonr_rejects_garbage_with_column) {
    static const struct { const char *text, *msg; } bad[] = {
        { "", "empty" },
        { "   ", "empty" },
        { "not json", "column 1: expected a JSON object" },
        { "[1, 2]", "expected a JSON object" },
        { "{\"a\": 1,}", "column 9: expected a string key" },
        { "{\"a\": 1} x", "column 10: text after" },
        { "{\"a\" 1}", "expected ':'" },
        { "{\"a\": 01}", "column 7: number with a leading zero" },
        { "{\"a\": 1.}", "malformed number" },
        { "{\"a\": -}", "malformed number" },
        { "{\"a\": tru}", "not a JSON value" },
        { "{\"a\": \"x}", "unterminated string" },
        { "{\"a\": \"x\ty\"}", "control character" },
        { "{\"a\": \"\\x\"}", "column 8: unknown escape" },
        { "{\"a\": \"\\u12\"}", "four hex digits" },
        { "{\"a\": \"\\ud800\"}", "column 8: high surrogate" },
        { "{\"a\": \"\\ud800\\u0041\"}", "high surrogate" },
        { "{\"a\": \"\\udc00\"}", "lone low surrogate" },
        { "{\"a\": \"\\u0000\"}", "NUL" },
        { "{\"a\": \"\xff\"}", "column 8: invalid UTF-8" },
        { "{\"a\": \"\xc0\xaf\"}", "invalid UTF-8" },
        { "{\"a\": \"\xed\xa0\x80\"}", "invalid UTF-8" },
        { "{\"a\": 1, \"a\": 2}", "column 10: duplicate key" },
        { "{\"a\": [1 2]}", "expected ',' or ']'" },
        { "{\"a\": 1", "expected ',' or '}'" },
        { "{\"a\": ", "unexpected end" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        jsonr_obj o;
        um_err e = { "" };
        CHECK_MSG(parse(bad[i].text, &o, &e) == UM_FAIL, "accepted: %s", bad[i].text);
        CHECK_MSG(strstr(e.msg, bad[i].msg) != NULL, "'%s': message '%s' lacks '%s'", bad[i].text, e.msg, bad[i].msg);
        CHECK(o.n == 0 && o.m == NULL);
    }
    /* a NUL byte inside the line is not a hidden end of it */
    jsonr_obj o;
    um_err e;
    CHECK(jsonr_object("{\"a\": \"x\0\"}", 11, &o, &e) == UM_FAIL);
    /* nesting past the limit */
    char deep[2 * JSONR_MAX_DEPTH + 16];
    size_t n = 0;
    n += (size_t)sprintf(deep, "{\"a\": ");
    for (int i = 0; i < JSONR_MAX_DEPTH + 1; i++) deep[n++] = '[';
    for (int i = 0; i < JSONR_MAX_DEPTH + 1; i++) deep[n++] = ']';
    deep[n++] = '}';
    CHECK(jsonr_object(deep, n, &o, &e) == UM_FAIL);
    CHECK_CONTAINS(e.msg, "too deep");
}

TEST(jsonr_survives_every_truncation_and_byte_change) {
    /* no crash or over-read (ASan watches) for any prefix or any single-byte change of a
     * line that uses every feature; an accepted line always has its members well formed */
    const char *line = "{\"prompt\": \"a\\u00e9\\ud83d\\ude00\\n\xc3\xa9\", \"answer\": -12.5e+3, \"x\": [true, {\"y\": null}]}";
    size_t n = strlen(line);
    static const unsigned char subs[] = { 0, '"', '\\', '{', '}', '[', ']', ',', ':', 'u', '0', 'e', '-', 0x80, 0xc3, 0xff, ' ' };
    char *buf = malloc(n);
    CHECK(buf != NULL);
    int accepted = 0;
    for (size_t len = 0; len <= n; len++) {
        memcpy(buf, line, len);                      /* exactly len bytes: no NUL to stop at */
        jsonr_obj o;
        um_err e;
        if (jsonr_object(buf, len, &o, &e) == UM_OK) { accepted++; jsonr_free(&o); }
    }
    CHECK_EQ(accepted, 1);                           /* only the whole line */
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < sizeof subs; k++) {
            memcpy(buf, line, n);
            buf[i] = (char)subs[k];
            jsonr_obj o;
            um_err e;
            if (jsonr_object(buf, n, &o, &e) == UM_OK) {
                for (int m = 0; m < o.n; m++)
                    if (o.m[m].type == JSONR_STRING || o.m[m].type == JSONR_NUMBER) CHECK(strlen(o.m[m].str) == o.m[m].len);
                jsonr_free(&o);
            } else {
                CHECK(e.msg[0] != '\0');
            }
        }
    free(buf);
}
