/*
 * jsonw: streaming JSON writer (see jsonw.h).
 */
#include "jsonw.h"
#include "esc.h"
#include "util.h"

#include <math.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>

void jsonw_init(jsonw *j, FILE *f) {
    memset(j, 0, sizeof *j);
    j->f = f;
    j->first[0] = true;
}

static void sep(jsonw *j) {
    if (j->after_key) { j->after_key = false; return; }
    if (!j->first[j->depth]) fputc(',', j->f);
    j->first[j->depth] = false;
}

static void open(jsonw *j, char c) {
    sep(j);
    fputc(c, j->f);
    if (j->depth + 1 < JSONW_MAX_DEPTH) j->depth++;
    j->first[j->depth] = true;
}

static void close_(jsonw *j, char c) {
    fputc(c, j->f);
    if (j->depth > 0) j->depth--;
}

void jsonw_obj_begin(jsonw *j) { open(j, '{'); }
void jsonw_obj_end(jsonw *j) { close_(j, '}'); }
void jsonw_arr_begin(jsonw *j) { open(j, '['); }
void jsonw_arr_end(jsonw *j) { close_(j, ']'); }

bool jsonw_utf8_valid(const char *s, size_t n) {
    const unsigned char *p = (const unsigned char *)s;
    for (size_t i = 0; i < n;) {
        size_t len = um_utf8_len(p + i, n - i);
        if (!len) return false;
        i += len;
    }
    return true;
}

/* Controls (esc.h's rule: C0, DEL and C1) as \u00NN, so a JSON document printed to a
 * terminal cannot drive it either. */
void jsonw_put_str(FILE *f, const char *s, size_t n) {
    const unsigned char *p = (const unsigned char *)s;
    fputc('"', f);
    for (size_t i = 0; i < n;) {
        unsigned c = p[i];
        size_t len = um_utf8_len(p + i, n - i);
        if (c == '"' || c == '\\') { fputc('\\', f); fputc((int)c, f); i++; }
        else if (c == '\n') { fputs("\\n", f); i++; }
        else if (c == '\t') { fputs("\\t", f); i++; }
        else if (c == '\r') { fputs("\\r", f); i++; }
        else if (!len) { fputs("\xef\xbf\xbd", f); i++; }
        else {
            /* only a 1- or 2-byte character can be a control */
            uint32_t cp = len == 1 ? c : len == 2 ? (c & 0x1f) << 6 | (p[i + 1] & 0x3f) : 0x800;
            if (esc_is_control(cp)) fprintf(f, "\\u%04x", (unsigned)cp);
            else fwrite(p + i, 1, len, f);
            i += len;
        }
    }
    fputc('"', f);
}

void jsonw_key(jsonw *j, const char *key) {
    sep(j);
    jsonw_put_str(j->f, key, strlen(key));
    fputc(':', j->f);
    j->after_key = true;
}

void jsonw_strn(jsonw *j, const char *s, size_t n) { sep(j); jsonw_put_str(j->f, s, n); }
void jsonw_str(jsonw *j, const char *s) { jsonw_strn(j, s, strlen(s)); }
void jsonw_int(jsonw *j, long long v) { sep(j); fprintf(j->f, "%lld", v); }
/* The fewest significant digits (%.Ng) that read back as the same value: 0.9f is "0.9", not
 * the "0.899999976" of a fixed 9 digits, and a double keeps every bit it has (up to 17). */
void jsonw_fmt_double(double v, char *buf, size_t cap) {
    for (int p = 1; p <= 17; p++) {
        snprintf(buf, cap, "%.*g", p, v);
        if (strtod(buf, NULL) == v) return;
    }
}

void jsonw_fmt_float(float v, char *buf, size_t cap) {
    for (int p = 1; p <= 9; p++) {
        snprintf(buf, cap, "%.*g", p, (double)v);
        if (strtof(buf, NULL) == v) return;
    }
}

void jsonw_num(jsonw *j, double v) {
    char buf[40];
    sep(j);
    if (!isfinite(v)) { fputs("null", j->f); return; }
    jsonw_fmt_double(v, buf, sizeof buf);
    fputs(buf, j->f);
}

void jsonw_f32(jsonw *j, float v) {
    char buf[40];
    sep(j);
    if (!isfinite(v)) { fputs("null", j->f); return; }
    jsonw_fmt_float(v, buf, sizeof buf);
    fputs(buf, j->f);
}
void jsonw_bool(jsonw *j, bool v) { sep(j); fputs(v ? "true" : "false", j->f); }
void jsonw_null(jsonw *j) { sep(j); fputs("null", j->f); }
