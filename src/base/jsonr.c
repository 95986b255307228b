/*
 * jsonr: strict JSON object reader (see jsonr.h).
 *
 * A recursive-descent parser over a byte range that never reads past its end. Strings are
 * decoded into one scratch buffer reused across the parse and copied out at their exact
 * size, so memory stays proportional to what is kept.
 */
#include "jsonr.h"
#include "esc.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define JSONR_MAX_MEMBERS 4096

typedef struct parser {
    const unsigned char *s;
    size_t   n, i;
    um_err  *e;
    char    *buf;            /* scratch for the string being decoded */
    size_t   buf_len, buf_cap;
} parser;

static int fail(parser *p, const char *what) {
    return um_errf(p->e, "column %zu: %s", p->i + 1, what);
}

static void skip_ws(parser *p) {
    while (p->i < p->n && (p->s[p->i] == ' ' || p->s[p->i] == '\t' || p->s[p->i] == '\n' || p->s[p->i] == '\r'))
        p->i++;
}

static int buf_put(parser *p, const void *src, size_t k) {
    if (p->buf_len + k + 1 > p->buf_cap) {
        size_t cap = p->buf_cap ? p->buf_cap * 2 : 256;
        while (cap < p->buf_len + k + 1) cap *= 2;
        char *nb = realloc(p->buf, cap);
        if (!nb) return um_errf(p->e, "out of memory reading JSON");
        p->buf = nb;
        p->buf_cap = cap;
    }
    memcpy(p->buf + p->buf_len, src, k);
    p->buf_len += k;
    p->buf[p->buf_len] = '\0';
    return UM_OK;
}

static int hex4(parser *p, uint32_t *out) {
    uint32_t v = 0;
    if (p->n - p->i < 4) return fail(p, "\\u needs four hex digits");
    for (int k = 0; k < 4; k++) {
        unsigned c = p->s[p->i + k];
        v <<= 4;
        if (c >= '0' && c <= '9') v |= c - '0';
        else if (c >= 'a' && c <= 'f') v |= c - 'a' + 10;
        else if (c >= 'A' && c <= 'F') v |= c - 'A' + 10;
        else return fail(p, "\\u needs four hex digits");
    }
    p->i += 4;
    *out = v;
    return UM_OK;
}

/* At the opening quote: decode the string into p->buf (p->buf_len bytes). */
static int parse_string(parser *p) {
    p->buf_len = 0;
    if (buf_put(p, "", 0) != UM_OK) return UM_FAIL;
    p->i++;                                            /* the opening quote */
    for (;;) {
        if (p->i >= p->n) return fail(p, "unterminated string");
        unsigned c = p->s[p->i];
        if (c == '"') { p->i++; return UM_OK; }
        if (c < 0x20) return fail(p, "control character inside a string (escape it)");
        if (c != '\\') {
            size_t k = um_utf8_len(p->s + p->i, p->n - p->i);
            if (k == 0) return fail(p, "invalid UTF-8");
            if (buf_put(p, p->s + p->i, k) != UM_OK) return UM_FAIL;
            p->i += k;
            continue;
        }
        if (++p->i >= p->n) return fail(p, "unterminated escape");
        char esc = (char)p->s[p->i++], one;
        switch (esc) {
        case '"': one = '"'; break;
        case '\\': one = '\\'; break;
        case '/': one = '/'; break;
        case 'b': one = '\b'; break;
        case 'f': one = '\f'; break;
        case 'n': one = '\n'; break;
        case 'r': one = '\r'; break;
        case 't': one = '\t'; break;
        case 'u': {
            uint32_t cp;
            p->i -= 2;                                 /* errors point at the backslash */
            size_t at = p->i;
            p->i += 2;
            if (hex4(p, &cp) != UM_OK) return UM_FAIL;
            if (cp >= 0xdc00 && cp <= 0xdfff) { p->i = at; return fail(p, "lone low surrogate in \\u escape"); }
            if (cp >= 0xd800 && cp <= 0xdbff) {
                uint32_t lo;
                if (p->n - p->i < 2 || p->s[p->i] != '\\' || p->s[p->i + 1] != 'u') {
                    p->i = at;
                    return fail(p, "high surrogate not followed by a low surrogate");
                }
                p->i += 2;
                if (hex4(p, &lo) != UM_OK) return UM_FAIL;
                if (lo < 0xdc00 || lo > 0xdfff) { p->i = at; return fail(p, "high surrogate not followed by a low surrogate"); }
                cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
            }
            if (cp == 0) { p->i = at; return fail(p, "\\u0000 (a NUL character) is not accepted"); }
            unsigned char u[4];
            size_t k;
            if (cp < 0x80) { u[0] = (unsigned char)cp; k = 1; }
            else if (cp < 0x800) { u[0] = (unsigned char)(0xc0 | cp >> 6); u[1] = (unsigned char)(0x80 | (cp & 0x3f)); k = 2; }
            else if (cp < 0x10000) {
                u[0] = (unsigned char)(0xe0 | cp >> 12); u[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
                u[2] = (unsigned char)(0x80 | (cp & 0x3f)); k = 3;
            } else {
                u[0] = (unsigned char)(0xf0 | cp >> 18); u[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3f));
                u[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f)); u[3] = (unsigned char)(0x80 | (cp & 0x3f)); k = 4;
            }
            if (buf_put(p, u, k) != UM_OK) return UM_FAIL;
            continue;
        }
        default:
            p->i -= 2;
            return fail(p, "unknown escape in a string");
        }
        if (buf_put(p, &one, 1) != UM_OK) return UM_FAIL;
    }
}

static bool is_digit(parser *p) { return p->i < p->n && p->s[p->i] >= '0' && p->s[p->i] <= '9'; }

static int parse_number(parser *p) {
    size_t start = p->i;
    if (p->s[p->i] == '-') p->i++;
    if (!is_digit(p)) return fail(p, "malformed number");
    if (p->s[p->i] == '0') {
        p->i++;
        if (is_digit(p)) { p->i = start; return fail(p, "number with a leading zero"); }
    } else {
        while (is_digit(p)) p->i++;
    }
    if (p->i < p->n && p->s[p->i] == '.') {
        p->i++;
        if (!is_digit(p)) return fail(p, "malformed number");
        while (is_digit(p)) p->i++;
    }
    if (p->i < p->n && (p->s[p->i] == 'e' || p->s[p->i] == 'E')) {
        p->i++;
        if (p->i < p->n && (p->s[p->i] == '+' || p->s[p->i] == '-')) p->i++;
        if (!is_digit(p)) return fail(p, "malformed number");
        while (is_digit(p)) p->i++;
    }
    return UM_OK;
}

static int parse_literal(parser *p, const char *word) {
    size_t k = strlen(word);
    if (p->n - p->i < k || memcmp(p->s + p->i, word, k) != 0) return fail(p, "not a JSON value");
    p->i += k;
    return UM_OK;
}

static int parse_value(parser *p, int depth, jsonr_type *type);

/* At '[' or '{': validate the container without keeping it. */
static int parse_nested(parser *p, int depth) {
    char open = (char)p->s[p->i], close = open == '[' ? ']' : '}';
    if (depth >= JSONR_MAX_DEPTH) return fail(p, "nesting too deep");
    p->i++;
    skip_ws(p);
    if (p->i < p->n && p->s[p->i] == close) { p->i++; return UM_OK; }
    for (;;) {
        jsonr_type t;
        skip_ws(p);
        if (open == '{') {
            if (p->i >= p->n || p->s[p->i] != '"') return fail(p, "expected a string key");
            if (parse_string(p) != UM_OK) return UM_FAIL;
            skip_ws(p);
            if (p->i >= p->n || p->s[p->i] != ':') return fail(p, "expected ':' after a key");
            p->i++;
            skip_ws(p);
        }
        if (parse_value(p, depth + 1, &t) != UM_OK) return UM_FAIL;
        skip_ws(p);
        if (p->i < p->n && p->s[p->i] == ',') { p->i++; continue; }
        if (p->i < p->n && p->s[p->i] == close) { p->i++; return UM_OK; }
        return fail(p, open == '[' ? "expected ',' or ']'" : "expected ',' or '}'");
    }
}

static int parse_value(parser *p, int depth, jsonr_type *type) {
    if (p->i >= p->n) return fail(p, "unexpected end of input, expected a value");
    switch (p->s[p->i]) {
    case '"': *type = JSONR_STRING; return parse_string(p);
    case '{': *type = JSONR_OBJECT; return parse_nested(p, depth);
    case '[': *type = JSONR_ARRAY; return parse_nested(p, depth);
    case 't': *type = JSONR_BOOL; return parse_literal(p, "true");
    case 'f': *type = JSONR_BOOL; return parse_literal(p, "false");
    case 'n': *type = JSONR_NULL; return parse_literal(p, "null");
    default:
        if (p->s[p->i] == '-' || (p->s[p->i] >= '0' && p->s[p->i] <= '9')) { *type = JSONR_NUMBER; return parse_number(p); }
        return fail(p, "not a JSON value");
    }
}

static char *dup_n(const char *s, size_t n) {
    char *d = malloc(n + 1);
    if (d) { memcpy(d, s, n); d[n] = '\0'; }
    return d;
}

int jsonr_object(const char *text, size_t len, jsonr_obj *o, um_err *e) {
    parser p = { .s = (const unsigned char *)text, .n = len, .i = 0, .e = e };
    o->m = NULL;
    o->n = 0;
    int cap = 0;
    for (size_t i = 0; i < len;) {                     /* name bad bytes before the grammar does */
        size_t k = um_utf8_len(p.s + i, len - i);
        if (k == 0) { p.i = i; fail(&p, "invalid UTF-8"); goto err; }
        i += k;
    }
    skip_ws(&p);
    if (p.i >= p.n) { fail(&p, "empty line, expected a JSON object"); goto err; }
    if (p.s[p.i] != '{') { fail(&p, "expected a JSON object ('{')"); goto err; }
    p.i++;
    skip_ws(&p);
    if (p.i < p.n && p.s[p.i] == '}') { p.i++; goto done; }
    for (;;) {
        skip_ws(&p);
        if (p.i >= p.n || p.s[p.i] != '"') { fail(&p, "expected a string key"); goto err; }
        size_t key_at = p.i;
        if (parse_string(&p) != UM_OK) goto err;
        for (int k = 0; k < o->n; k++)
            if (strlen(o->m[k].key) == p.buf_len && memcmp(o->m[k].key, p.buf, p.buf_len) == 0) {
                p.i = key_at;
                fail(&p, "duplicate key");
                goto err;
            }
        if (o->n == JSONR_MAX_MEMBERS) { fail(&p, "too many members in one object"); goto err; }
        if (o->n == cap) {
            int nc = cap ? cap * 2 : 8;
            jsonr_member *nm = realloc(o->m, (size_t)nc * sizeof *nm);
            if (!nm) { um_errf(e, "out of memory reading JSON"); goto err; }
            o->m = nm;
            cap = nc;
        }
        jsonr_member *m = &o->m[o->n];
        memset(m, 0, sizeof *m);
        if (!(m->key = dup_n(p.buf, p.buf_len))) { um_errf(e, "out of memory reading JSON"); goto err; }
        o->n++;
        skip_ws(&p);
        if (p.i >= p.n || p.s[p.i] != ':') { fail(&p, "expected ':' after a key"); goto err; }
        p.i++;
        skip_ws(&p);
        size_t val_at = p.i;
        if (parse_value(&p, 1, &m->type) != UM_OK) goto err;
        if (m->type == JSONR_STRING || m->type == JSONR_NUMBER) {
            const char *src = m->type == JSONR_STRING ? p.buf : text + val_at;
            m->len = m->type == JSONR_STRING ? p.buf_len : p.i - val_at;
            if (!(m->str = dup_n(src, m->len))) { um_errf(e, "out of memory reading JSON"); goto err; }
        } else if (m->type == JSONR_BOOL) {
            m->boolean = p.s[val_at] == 't';
        }
        skip_ws(&p);
        if (p.i < p.n && p.s[p.i] == ',') { p.i++; continue; }
        if (p.i < p.n && p.s[p.i] == '}') { p.i++; break; }
        fail(&p, "expected ',' or '}'");
        goto err;
    }
done:
    skip_ws(&p);
    if (p.i < p.n) { fail(&p, "text after the JSON object"); goto err; }
    free(p.buf);
    return UM_OK;
err:
    free(p.buf);
    jsonr_free(o);
    return UM_FAIL;
}

const jsonr_member *jsonr_get(const jsonr_obj *o, const char *key) {
    for (int k = 0; k < o->n; k++)
        if (strcmp(o->m[k].key, key) == 0) return &o->m[k];
    return NULL;
}

void jsonr_free(jsonr_obj *o) {
    for (int k = 0; k < o->n; k++) { free(o->m[k].key); free(o->m[k].str); }
    free(o->m);
    o->m = NULL;
    o->n = 0;
}

const char *jsonr_type_name(jsonr_type t) {
    static const char *const names[] = { "null", "boolean", "number", "string", "array", "object" };
    return (unsigned)t < UM_ARRAY_LEN(names) ? names[t] : "?";
}
