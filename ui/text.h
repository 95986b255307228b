/*
 * text: turns raw token bytes into display clusters (what a terminal cell shows).
 *
 * Input is a list of runs, one per canvas position, each holding that position's raw
 * bytes (a token piece may be partial UTF-8). Adjacent non-opaque runs are joined into one
 * byte stream before decoding, so a character split over two byte-fallback tokens shows
 * whole; an opaque run (a mask glyph, ghost text) is decoded on its own.
 *
 * Output invariants, for every cluster:
 *   - it is one extended grapheme cluster (utf8proc), never split;
 *   - its display bytes are valid UTF-8, at most UI_CLUSTER_MAX - 1 bytes (long runs of
 *     combining marks are cut), and contain no control character: invalid bytes became
 *     U+FFFD (one per maximal invalid subpart), C0 controls and DEL their Unicode "control
 *     picture" (U+2400 + c, U+2421), C1 controls and zero-width format characters U+2370;
 *   - width is its display width in cells, 1 or 2 (CJK and emoji 2); a cluster that would
 *     be zero wide (a combining mark with no base) gets a U+25CC dotted-circle base;
 *   - a newline is a UI_CL_NEWLINE cluster shown as U+21B5 (the layout breaks the line
 *     after it); a tab is a UI_CL_TAB cluster shown as U+2192 (the layout pads it to the
 *     next tab stop);
 *   - pos is the position of the cluster's first byte, pos_last of its last byte.
 */
#ifndef UM_UI_TEXT_H
#define UM_UI_TEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "frame.h"
#include "util.h"

#define UI_CLUSTER_MAX 32      /* bytes per cluster's display text, NUL included */

typedef enum ui_cl_kind { UI_CL_TEXT = 0, UI_CL_NEWLINE, UI_CL_TAB } ui_cl_kind;
enum { UI_CL_REPLACED = 1 };   /* flags: display differs from the source bytes */

typedef struct ui_cluster {
    int32_t  pos, pos_last;    /* canvas positions of the first and last source byte */
    char     text[UI_CLUSTER_MAX];   /* display UTF-8, NUL-terminated */
    uint8_t  width;            /* cells, 1 or 2 */
    uint8_t  kind;             /* ui_cl_kind */
    uint8_t  flags;
} ui_cluster;

typedef struct ui_run {
    int32_t     pos;           /* canvas position these bytes belong to */
    const char *bytes;         /* raw bytes, any content */
    size_t      len;
    bool        opaque;        /* decode alone, never join with neighbours */
    bool        split;         /* do not join with the run before (a new segment starts) */
} ui_run;

typedef struct ui_text {
    ui_cluster *cl;            /* (n) clusters in display order */
    int32_t     n, cap;
    /* scratch reused between calls */
    uint32_t   *cp;            /* (cp_cap) decoded code points */
    int32_t    *cp_pos;        /* (cp_cap) position of each code point's first byte */
    int32_t    *cp_pos_last;   /* (cp_cap) position of its last byte */
    uint8_t    *cp_bad;        /* (cp_cap) 1 when it replaced invalid bytes */
    int32_t     cp_cap;
    unsigned char *seg;        /* (seg_cap) bytes of the segment being decoded */
    int32_t    *seg_pos;       /* (seg_cap) position of each byte */
    size_t      seg_cap;
} ui_text;

/* Shape runs into t->cl (replacing what was there). Fails only on out-of-memory. */
int  ui_text_shape(ui_text *t, const ui_run *runs, int32_t n_runs, um_err *e);
/* Shape one string (position 0); convenience for panels. */
int  ui_text_shape_str(ui_text *t, const char *s, size_t len, um_err *e);
void ui_text_free(ui_text *t);

/* Decode one UTF-8 sequence at s[0..n), n >= 1. Returns bytes used (>= 1); an invalid
 * maximal subpart gives *cp = U+FFFD and *bad = 1. */
size_t ui_text_decode(const unsigned char *s, size_t n, uint32_t *cp, uint8_t *bad);

/* Display width in cells of a string after shaping (tabs count 1, newlines 1). */
int  ui_text_width(const char *s);

/* Put a UTF-8 string into a frame (shaped as above: clusters, widths, control characters
 * made visible), clipped at column `limit` (exclusive); returns the next x. */
int ui_text_puts(frame *f, int x, int y, int limit, const char *s, frame_style st);

#endif
