/*
 * esc: the one rule for text that comes from a file (a model file, a chat template file, a
 * task file, models.conf, a theme) on its way to a terminal. Such text is hostile: an ESC
 * byte in a model's name could switch the user's terminal to the alternate screen, change
 * its title or charset, and leave it so after unmask exits.
 *
 * The rule: a terminal must never receive, raw, a character it may act on rather than show.
 * Those are the C0 controls U+0000-U+001F, DEL U+007F and the C1 controls U+0080-U+009F
 * (in UTF-8, C2 80 .. C2 9F: some terminals take U+009B as CSI), and any byte that is not
 * part of valid UTF-8 (a lone 0x9B is CSI to a terminal in 8-bit mode). esc_is_control
 * names the code points; esc_str and esc_fput escape a byte string under the rule, every
 * such byte as \xNN. Every printer of file text goes through them: um_errf's messages, the
 * subcommands' text output, the JSON writer (which escapes the same code points as \u00NN),
 * the visualizer's text shaping and the asciicast writer (which show them as symbols).
 *
 * Invariant of the output: valid UTF-8 with no C0, DEL or C1 control, except the '\n' and
 * '\t' that ESC_KEEP_LINES lets through; a truncated result never ends inside an escape or a
 * UTF-8 sequence.
 */
#ifndef UM_ESC_H
#define UM_ESC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum {
    ESC_BACKSLASH  = 1,   /* '\' itself as "\\", so the result reads back unambiguously */
    ESC_C_NAMES    = 2,   /* '\n' '\t' '\r' as "\n" "\t" "\r" rather than \x0a \x09 \x0d */
    ESC_KEEP_LINES = 4,   /* '\n' and '\t' pass through (multi-line text such as an answer) */
};

/* The one UTF-8 validator (of the escaping rule, the JSON reader and writer): the length of
 * the valid UTF-8 sequence at s (n >= 1 bytes left), 1-4, or 0 when it is not valid UTF-8 (a
 * stray continuation byte, a truncated, overlong or surrogate sequence, past U+10FFFF). */
size_t um_utf8_len(const unsigned char *s, size_t n);

/* Is cp a character a terminal may act on rather than show (C0, DEL, C1)? */
bool   esc_is_control(uint32_t cp);

/* Escape src[0..n) into dst (cap bytes; NUL-terminated when cap > 0) under the rule above;
 * quote (when not 0, e.g. '\'' or '"') is escaped with a backslash too. Returns the length
 * the whole escaped text needs, without the NUL (as snprintf: larger than cap - 1 means cut). */
size_t esc_str(char *dst, size_t cap, const char *src, size_t n, unsigned flags, char quote);

/* The same, written to f; 0, or EOF when a write failed. */
int    esc_fput(FILE *f, const char *src, size_t n, unsigned flags, char quote);

/* The longest prefix of s[0..n) of at most max bytes that does not end inside a valid UTF-8
 * sequence (for "first 72 bytes..." displays). */
size_t esc_cut(const char *s, size_t n, size_t max);

#endif
