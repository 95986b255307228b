/*
 * jsonw: a tiny streaming JSON writer (objects, arrays, strings with full escaping,
 * numbers). Commas are placed automatically; the caller keeps keys and values paired.
 * Strings are written as valid UTF-8: invalid bytes become U+FFFD, and the characters a
 * terminal would act on (esc.h: C0, DEL, C1) are \u00NN escapes.
 */
#ifndef UM_JSONW_H
#define UM_JSONW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#define JSONW_MAX_DEPTH 32

typedef struct jsonw {
    FILE *f;
    int   depth;
    bool  first[JSONW_MAX_DEPTH];   /* no element written yet at this depth */
    bool  after_key;
} jsonw;

void jsonw_init(jsonw *j, FILE *f);
void jsonw_obj_begin(jsonw *j);
void jsonw_obj_end(jsonw *j);
void jsonw_arr_begin(jsonw *j);
void jsonw_arr_end(jsonw *j);
void jsonw_key(jsonw *j, const char *key);
void jsonw_str(jsonw *j, const char *s);
void jsonw_strn(jsonw *j, const char *s, size_t n);
void jsonw_int(jsonw *j, long long v);
/* Numbers as the shortest text that reads back as the same value: jsonw_num for a double
 * (up to 17 digits), jsonw_f32 for a float (up to 9: 0.9f is written 0.9); non-finite
 * values are written as null. */
void jsonw_num(jsonw *j, double v);
void jsonw_f32(jsonw *j, float v);
/* The same texts into buf (a finite value; cap >= 32). */
void jsonw_fmt_double(double v, char *buf, size_t cap);
void jsonw_fmt_float(float v, char *buf, size_t cap);
void jsonw_bool(jsonw *j, bool v);
void jsonw_null(jsonw *j);
/* One string value, quoted and escaped as above, for callers that lay JSON out by hand. */
void jsonw_put_str(FILE *f, const char *s, size_t n);
/* Are these n bytes valid UTF-8, so jsonw_strn writes them unchanged (no U+FFFD)? */
bool jsonw_utf8_valid(const char *s, size_t n);

#endif
