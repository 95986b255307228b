/*
 * jsonr: a small strict JSON reader for one-object-per-line files (JSONL task files).
 *
 * jsonr_object parses text that must hold exactly one JSON object (whitespace around it
 * allowed) and returns its top-level members. String members come back decoded (escapes
 * \" \\ \/ \b \f \n \r \t and \uXXXX, surrogate pairs joined) as NUL-terminated UTF-8;
 * number members as their source text; nested arrays and objects are validated but not
 * kept. Anything else is rejected with a one-line message naming the column: invalid UTF-8,
 * raw control characters in strings, lone surrogates, \u0000, trailing commas, duplicate
 * keys, leading zeros, text after the object, nesting deeper than JSONR_MAX_DEPTH.
 */
#ifndef UM_JSONR_H
#define UM_JSONR_H

#include <stddef.h>

#include "util.h"

#define JSONR_MAX_DEPTH 64

typedef enum jsonr_type {
    JSONR_NULL, JSONR_BOOL, JSONR_NUMBER, JSONR_STRING, JSONR_ARRAY, JSONR_OBJECT,
} jsonr_type;

typedef struct jsonr_member {
    char      *key;          /* decoded, NUL-terminated */
    jsonr_type type;
    char      *str;          /* JSONR_STRING: the decoded value; JSONR_NUMBER: its text; else NULL */
    size_t     len;          /* bytes in str */
    int        boolean;      /* JSONR_BOOL: 0 or 1 */
} jsonr_member;

typedef struct jsonr_obj {
    jsonr_member *m;         /* (n) in source order */
    int           n;
} jsonr_obj;

/* Parse text[0..len) as one JSON object. On failure o is left empty (nothing to free). */
int  jsonr_object(const char *text, size_t len, jsonr_obj *o, um_err *e);
/* The member named key, or NULL. */
const jsonr_member *jsonr_get(const jsonr_obj *o, const char *key);
void jsonr_free(jsonr_obj *o);
/* "null", "boolean", "number", "string", "array", "object". */
const char *jsonr_type_name(jsonr_type t);

#endif
