/*
 * numparse: the one number parser behind every numeric flag of every command and every
 * numeric value of models.conf, so that all of them accept the same spellings and refuse
 * the rest with the same three messages:
 *
 *     WHAT: 'VALUE' is not a whole number        (integer expected)
 *     WHAT: 'VALUE' is not a number              (number expected)
 *     WHAT: 'VALUE' is out of range (LO to HI)   (bounds written as plain decimals)
 *
 * Integers: an optional sign and decimal digits, nothing else: no spaces, no fraction
 * ("12.7", "1e3"), no hex ("0x10"), no leading zero ("010", which C would read as octal),
 * no digit separators ("1_000"). Numbers: decimal with an optional fraction and exponent
 * ("0.5", ".5", "1e-3"); never NaN, infinities, hex floats or spaces. A value past the
 * double range is out of range; one too small for it reads as 0 (or the denormal it rounds
 * to); -0 reads as 0.
 *
 * Invariant: on failure *out is left untouched and e holds one line; the value is quoted
 * with control bytes shown as '?' and at most 60 bytes of it (then "...").
 */
#ifndef UM_NUMPARSE_H
#define UM_NUMPARSE_H

#include <stddef.h>
#include <stdint.h>

#include "util.h"

/* Open bounds for num_float: the bound itself is out of range ("0 to 1, 1 excluded"). */
#define NUM_LO_OPEN 1u
#define NUM_HI_OPEN 2u

/* Parse a whole number in [lo, hi]. what ("--steps", "models.conf:3: gen") prefixes the
 * message; NULL or "" for none. */
int num_int(const char *what, const char *s, int64_t lo, int64_t hi, int64_t *out, um_err *e);
/* Parse a finite number in [lo, hi] (bounds made open by NUM_LO_OPEN / NUM_HI_OPEN). */
int num_float(const char *what, const char *s, double lo, double hi, unsigned open, double *out, um_err *e);

/* num_float, then the value as a float: fails (out of range) when rounding to float lands
 * on an open bound ("0.99999999999" with 1 excluded rounds to 1.0f). */
int num_f32(const char *what, const char *s, double lo, double hi, unsigned open, float *out, um_err *e);

/* Command-line forms: parse flag's value v; on failure print "PROG: FLAG: message" on
 * stderr and return -1 (the command then exits 2, bad usage); 0 on success. */
int num_arg_int(const char *prog, const char *flag, const char *v, int64_t lo, int64_t hi, int64_t *out);
int num_arg_i32(const char *prog, const char *flag, const char *v, int32_t lo, int32_t hi, int32_t *out);
int num_arg_float(const char *prog, const char *flag, const char *v, double lo, double hi, unsigned open, double *out);
int num_arg_f32(const char *prog, const char *flag, const char *v, double lo, double hi, unsigned open, float *out);

/* A finite double as a plain decimal: no exponent, the fewest fraction digits (up to 40)
 * that read back as the same double ("1048576", "0.000001", "-2.5"). */
void num_format(double v, char *buf, size_t cap);

#endif
