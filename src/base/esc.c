/*
 * esc: escaping of file text for terminals (see esc.h for the rule). One walk over the bytes
 * decides every unit (a character passed through, or one escape) and hands it to a sink: a
 * bounded buffer or a stream.
 */
#include "esc.h"

/* RFC 3629's table of well-formed sequences. */
size_t um_utf8_len(const unsigned char *s, size_t n) {
    unsigned c = s[0];
    size_t len;
    uint32_t cp;
    if (c < 0x80) return 1;
    if (c >= 0xc2 && c <= 0xdf) { len = 2; cp = c & 0x1f; }
    else if (c >= 0xe0 && c <= 0xef) { len = 3; cp = c & 0x0f; }
    else if (c >= 0xf0 && c <= 0xf4) { len = 4; cp = c & 0x07; }
    else return 0;
    if (n < len) return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80) return 0;
        cp = (cp << 6) | (s[i] & 0x3f);
    }
    if ((len == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) || (len == 4 && (cp < 0x10000 || cp > 0x10ffff)))
        return 0;                                  /* overlong, surrogate, past U+10FFFF */
    return len;
}

bool esc_is_control(uint32_t cp) { return cp < 0x20 || (cp >= 0x7f && cp <= 0x9f); }

typedef struct sink {
    char  *dst;          /* buffer sink: dst[0..cap), or NULL */
    size_t cap, used;    /* bytes written to dst */
    size_t need;         /* bytes the whole result needs */
    bool   full;         /* a unit did not fit: nothing more is written */
    FILE  *f;            /* stream sink, or NULL */
    bool   failed;
} sink;

static void put(sink *s, const char *p, size_t n) {
    s->need += n;
    if (s->f) {
        if (!s->failed && fwrite(p, 1, n, s->f) != n) s->failed = true;
        return;
    }
    if (s->full || !s->dst) return;
    if (s->used + n + 1 > s->cap) { s->full = true; return; }   /* whole units only */
    for (size_t i = 0; i < n; i++) s->dst[s->used++] = p[i];
}

static void put_hex(sink *s, unsigned char c) {
    static const char hex[] = "0123456789abcdef";
    char b[4] = { '\\', 'x', hex[c >> 4], hex[c & 15] };
    put(s, b, 4);
}

static void walk(sink *s, const char *src, size_t n, unsigned flags, char quote) {
    const unsigned char *p = (const unsigned char *)src;
    for (size_t i = 0; i < n;) {
        unsigned char c = p[i];
        size_t len = um_utf8_len(p + i, n - i);
        if (len == 0) { put_hex(s, c); i++; continue; }          /* not part of valid UTF-8 */
        if (len == 1) {
            if ((c == '\n' || c == '\t') && (flags & ESC_KEEP_LINES)) put(s, (const char *)p + i, 1);
            else if ((c == '\n' || c == '\t' || c == '\r') && (flags & ESC_C_NAMES))
                put(s, c == '\n' ? "\\n" : c == '\t' ? "\\t" : "\\r", 2);
            else if (esc_is_control(c)) put_hex(s, c);
            else if ((c == '\\' && (flags & ESC_BACKSLASH)) || (quote && c == (unsigned char)quote)) {
                char b[2] = { '\\', (char)c };
                put(s, b, 2);
            } else put(s, (const char *)p + i, 1);
            i++;
            continue;
        }
        if (len == 2 && c == 0xc2 && p[i + 1] <= 0x9f) {        /* U+0080..U+009F: C1 controls */
            put_hex(s, c);
            put_hex(s, p[i + 1]);
        } else {
            put(s, (const char *)p + i, len);
        }
        i += len;
    }
}

size_t esc_str(char *dst, size_t cap, const char *src, size_t n, unsigned flags, char quote) {
    sink s = { .dst = cap ? dst : NULL, .cap = cap };
    walk(&s, src, n, flags, quote);
    if (cap) dst[s.used] = '\0';
    return s.need;
}

int esc_fput(FILE *f, const char *src, size_t n, unsigned flags, char quote) {
    sink s = { .f = f };
    walk(&s, src, n, flags, quote);
    return s.failed ? EOF : 0;
}

size_t esc_cut(const char *s, size_t n, size_t max) {
    if (n <= max) return n;
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;
    while (i < max) {
        size_t len = um_utf8_len(p + i, n - i);
        if (len == 0) len = 1;                  /* an invalid byte is a unit of its own */
        if (i + len > max) break;
        i += len;
    }
    return i;
}
