/*
 * test_esc: the one escaping rule for file text on its way to a terminal (src/base/esc.h).
 * Expected strings are written by hand from the rule; the property test checks the output
 * invariant (valid UTF-8, no C0/DEL/C1 control) on random bytes with an independent decoder.
 */
#include <stdint.h>
#include <stdlib.h>

#include "esc.h"
#include "harness.h"

TEST(esc_controls_c1_and_invalid_bytes) {
    char out[256];
    static const struct { const char *in; size_t n; unsigned flags; char quote; const char *want; } c[] = {
        { "plain", 5, 0, 0, "plain" },
        { "\x1b[?1049h", 8, 0, 0, "\\x1b[?1049h" },                 /* alternate screen */
        { "\x1b]0;title\x07", 10, 0, 0, "\\x1b]0;title\\x07" },      /* window title */
        { "a\nb\tc\rd", 7, 0, 0, "a\\x0ab\\x09c\\x0dd" },
        { "a\nb\tc\rd", 7, ESC_C_NAMES, 0, "a\\nb\\tc\\rd" },
        { "a\nb\tc\rd", 7, ESC_KEEP_LINES, 0, "a\nb\tc\\x0dd" },
        { "\x7f", 1, 0, 0, "\\x7f" },
        { "\xc2\x9b" "1m", 4, 0, 0, "\\xc2\\x9b1m" },                /* U+009B: CSI to some terminals */
        { "\xc2\x80\xc2\x9f\xc2\xa0", 6, 0, 0, "\\xc2\\x80\\xc2\\x9f\xc2\xa0" },  /* C1 edges; U+00A0 shows */
        { "\x9b", 1, 0, 0, "\\x9b" },                                 /* 8-bit CSI alone: not UTF-8 */
        { "\xe2\x82", 2, 0, 0, "\\xe2\\x82" },                        /* truncated sequence */
        { "\xed\xa0\x80", 3, 0, 0, "\\xed\\xa0\\x80" },               /* surrogate */
        { "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", 9, 0, 0, "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80" },
        { "a\0b", 3, 0, 0, "a\\x00b" },
        { "back\\slash", 10, 0, 0, "back\\slash" },
        { "back\\slash", 10, ESC_BACKSLASH, 0, "back\\\\slash" },
        { "it's \"q\"", 8, 0, '\'', "it\\'s \"q\"" },
        { "it's \"q\"", 8, 0, '"', "it's \\\"q\\\"" },
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        size_t need = esc_str(out, sizeof out, c[i].in, c[i].n, c[i].flags, c[i].quote);
        CHECK_MSG(!strcmp(out, c[i].want), "case %zu: got \"%s\", want \"%s\"", i, out, c[i].want);
        CHECK_MSG(need == strlen(c[i].want), "case %zu: need %zu", i, need);
    }
    CHECK(esc_is_control(0) && esc_is_control(0x1f) && esc_is_control(0x7f) && esc_is_control(0x80) &&
          esc_is_control(0x9f));
    CHECK(!esc_is_control(' ') && !esc_is_control('~') && !esc_is_control(0xa0) && !esc_is_control(0x2400));
}

/* A cut result keeps whole units: never half an escape or half a character. */
TEST(esc_truncation_keeps_whole_units) {
    char out[8];
    size_t need = esc_str(out, sizeof out, "ab\x1b\x1b", 4, 0, 0);
    CHECK_EQ(need, 10);
    CHECK_STREQ(out, "ab\\x1b");                  /* 6 bytes; the second escape would need 10 + NUL */
    need = esc_str(out, 5, "abc\xe2\x82\xac", 6, 0, 0);
    CHECK_EQ(need, 6);
    CHECK_STREQ(out, "abc");                      /* the euro sign (3 bytes) does not fit in 1 */
    need = esc_str(out, 0, "abc", 3, 0, 0);       /* cap 0: only the length */
    CHECK_EQ(need, 3);
    CHECK_EQ(esc_cut("ab\xe2\x82\xac", 5, 4), 2);  /* not inside the euro sign */
    CHECK_EQ(esc_cut("ab\xe2\x82\xac", 5, 5), 5);
    CHECK_EQ(esc_cut("ab\xff\xff", 4, 3), 3);     /* invalid bytes are units of one */
    CHECK_EQ(esc_cut("abc", 3, 10), 3);
}

TEST(esc_fput_writes_the_same_and_reports_failure) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    CHECK(f);
    CHECK_EQ(esc_fput(f, "x\x1b" "y\xc2\x85", 5, 0, 0), 0);
    fclose(f);
    CHECK_STREQ(buf, "x\\x1by\\xc2\\x85");
    free(buf);
    FILE *full = fopen("/dev/full", "w");
    if (!full) { th_skip("no /dev/full"); return; }
    setvbuf(full, NULL, _IONBF, 0);               /* unbuffered: the write itself fails */
    CHECK_EQ(esc_fput(full, "abc", 3, 0, 0), EOF);
    fclose(full);
}

/* An independent decoder (RFC 3629's table) for the property test. Returns bytes, 0 if invalid. */
static size_t decode(const unsigned char *s, size_t n, uint32_t *cp) {
    unsigned char b = s[0];
    size_t len = b < 0x80 ? 1 : b >= 0xc2 && b <= 0xdf ? 2 : b >= 0xe0 && b <= 0xef ? 3 : b >= 0xf0 && b <= 0xf4 ? 4 : 0;
    if (!len || len > n) return 0;
    uint32_t c = len == 1 ? b : len == 2 ? b & 0x1f : len == 3 ? b & 0x0f : b & 0x07;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80) return 0;
        c = c << 6 | (s[i] & 0x3f);
    }
    static const uint32_t min[5] = { 0, 0, 0x80, 0x800, 0x10000 };
    if (c < min[len] || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff)) return 0;
    *cp = c;
    return len;
}

TEST(esc_output_never_holds_a_control_random_bytes) {
    uint64_t x = 0x9e3779b97f4a7c15ull;
    char out[1024];
    unsigned char in[64];
    for (int round = 0; round < 20000; round++) {
        size_t n = (size_t)(round % 64);
        for (size_t i = 0; i < n; i++) {
            x ^= x << 13; x ^= x >> 7; x ^= x << 17;
            /* bias towards the interesting bytes: ESC, C1 lead 0xc2, continuation bytes */
            static const unsigned char pick[] = { 0x1b, 0xc2, 0x9b, 0x80, 0x0a, 0x07, 0xe2, 0xf0 };
            in[i] = (x >> 60) < 6 ? pick[(x >> 20) & 7] : (unsigned char)(x >> 32);
        }
        unsigned flags = (unsigned)round % 8;
        size_t need = esc_str(out, sizeof out, (const char *)in, n, flags, 0);
        CHECK(need < sizeof out);
        const unsigned char *o = (const unsigned char *)out;
        for (size_t i = 0; i < need;) {
            uint32_t cp;
            size_t k = decode(o + i, need - i, &cp);
            CHECK_MSG(k > 0, "round %d: invalid UTF-8 at %zu", round, i);
            bool allowed = (flags & ESC_KEEP_LINES) && (cp == '\n' || cp == '\t');
            CHECK_MSG(allowed || !(cp < 0x20 || (cp >= 0x7f && cp <= 0x9f)), "round %d: control U+%04X out", round, cp);
            i += k;
        }
    }
}
