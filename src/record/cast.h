/*
 * cast: asciicast v2 writer, and frame -> ANSI escape text for headless recordings.
 *
 * File format (newline-delimited JSON): a header object
 *   {"version":2,"width":W,"height":H,"timestamp":UNIX,"env":{"TERM":"..."},"title":"..."}
 * then one event per line: [t,"o","text"] output, [t,"m","label"] marker (unmask writes one
 * per denoising step), [t,"r","WxH"] resize. t is seconds since the recording started, with
 * microsecond precision, and never decreases (an earlier t is raised to the last one).
 *
 * Strings are always valid JSON and valid UTF-8: '"' and '\' are backslash-escaped, every
 * byte below 0x20 and 0x7f become \u00XX (ESC is \u001b), and each maximal invalid UTF-8
 * subsequence (stray continuation byte, overlong form, surrogate, > U+10FFFF, truncated
 * sequence) becomes U+FFFD. An output chunk that ends in the middle of a valid sequence
 * keeps the incomplete tail for the next chunk, so splitting a stream never invents U+FFFD.
 *
 * Output as in gif.h, through outfile.h: a regular PATH appears only at cast_close (unique
 * temporary file, fsync, rename); a FIFO or character device is written directly. The
 * first write error is sticky and reported by every later call.
 */
#ifndef UM_CAST_H
#define UM_CAST_H

#include <stddef.h>
#include <stdint.h>

#include "frame.h"
#include "util.h"

/* A growable byte buffer the caller keeps between frames so steady state never allocates. */
typedef struct cast_buf {
    char  *data;                 /* (cap) bytes, data[len] == 0 when cap > 0 */
    size_t len, cap;
} cast_buf;

void cast_buf_free(cast_buf *b);

/* Append s[0..n) to out as the inside of a JSON string (no quotes), per the rules above.
 * Bytes of an incomplete UTF-8 sequence at the end are left unconsumed when keep_tail is
 * set; the return value is the number of input bytes consumed. */
size_t cast_json_escape(cast_buf *out, const char *s, size_t n, int keep_tail, int *oom);

enum { CAST_COLOR_24BIT = 0, CAST_COLOR_256 = 1 };

/* The escape text that turns a terminal showing prev into one showing cur: with prev NULL
 * (or a different size) a full redraw (hide cursor, clear, every row), else only the runs of
 * cells that differ, each preceded by a cursor move. Colours as SGR 38;2/48;2 (24-bit) or
 * 38;5/48;5 (nearest xterm-256 index). Text is UTF-8; continuation cells of wide characters
 * are skipped. Ends with SGR 0. Replaces out's contents. */
int cast_frame_ansi(const frame *cur, const frame *prev, int color_mode, cast_buf *out, um_err *e);

typedef struct cast_writer cast_writer;

/* term and title may be NULL ("xterm-256color", no title). timestamp: UNIX seconds. */
int  cast_open(cast_writer **out, const char *path, int cols, int rows, int64_t timestamp,
               const char *term, const char *title, um_err *e);
int  cast_output(cast_writer *c, double t, const char *bytes, size_t n, um_err *e);
int  cast_marker(cast_writer *c, double t, const char *label, um_err *e);
int  cast_resize(cast_writer *c, double t, int cols, int rows, um_err *e);
/* Output event for a frame: a diff against the previous frame given here (full redraw the
 * first time and after a size change, which also writes a resize event). The frame is
 * copied, so the caller may reuse its buffer. */
int  cast_frame(cast_writer *c, double t, const frame *f, int color_mode, um_err *e);
/* Write any kept partial UTF-8 tail as U+FFFD and finish PATH (outfile_commit); frees c. */
int  cast_close(cast_writer *c, um_err *e);
/* Discard the recording and its temporary file; frees c. */
void cast_abort(cast_writer *c);

int  cast_events(const cast_writer *c);     /* events written so far */

#endif
