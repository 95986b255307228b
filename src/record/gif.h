/*
 * gif: a streaming animated-GIF (GIF89a) encoder, written from scratch.
 *
 * The file has one 256-colour global colour table (the caller's palette; unmask passes the
 * xterm-256 palette from render.h), a NETSCAPE2.0 loop extension, and per frame a graphic
 * control extension (delay in centiseconds, disposal "do not dispose") followed by an image
 * with variable-code-size LZW data (8-bit minimum code size, clear code when the dictionary
 * fills at 4096, sub-blocks of at most 255 bytes).
 *
 * Frame differencing: the first frame is stored whole. Each later frame stores only the
 * bounding box of the pixels that differ from the previous frame; inside that box, pixels
 * that did not change are written as a transparent index (a palette index the changed
 * pixels do not use) so runs of "unchanged" compress well. An identical frame is stored as
 * a 1x1 unchanged image so the frame count always equals the number of gif_add_frame calls.
 *
 * Delays: a frame's delay is how long it stays on screen. Viewers treat delays below 2 cs as
 * 10 cs, so delays are clamped to 2..65535 cs. The last frame is held for
 * max(its delay, final_hold_cs). Writing one frame behind (a frame is encoded when the next
 * arrives or at close) is what makes the final hold possible in a streaming writer.
 *
 * Output through outfile.h: a regular PATH is written to a unique temporary file in its
 * directory that gif_close renames onto PATH only after the trailer is written, flushed and
 * fsynced; any failure removes it and leaves PATH as it was. A FIFO or character device is
 * written directly (the encoder never seeks). gif_abort discards the recording.
 */
#ifndef UM_GIF_H
#define UM_GIF_H

#include <stddef.h>
#include <stdint.h>

#include "util.h"

#define GIF_MIN_DELAY_CS 2
#define GIF_MAX_DELAY_CS 65535

typedef struct gif_options {
    int loop_count;              /* 0 = loop forever (the default), else number of repeats */
    int final_hold_cs;           /* minimum delay of the last frame, centiseconds; 0 = none */
    struct outfile_group *group; /* NULL: PATH on its own; else a member of this all-or-nothing set
                                    (outfile.h rule 6): gif_close finishes it, the group renames */
} gif_options;

typedef struct gif_writer gif_writer;

/* Create PATH (via a temporary file) for w x h frames (1..65535 each). palette_rgb is
 * (256, 3) bytes R, G, B and is copied. opts may be NULL for the defaults. */
int  gif_open(gif_writer **out, const char *path, int w, int h, const uint8_t *palette_rgb,
              const gif_options *opts, um_err *e);
/* Add a frame: pix is (h, w) palette indices, copied; shown for delay_cs centiseconds. */
int  gif_add_frame(gif_writer *g, const uint8_t *pix, int delay_cs, um_err *e);
/* Encode the pending frame, write the trailer and finish PATH (outfile_commit); frees g.
 * Fails (and keeps nothing at PATH) when no frame was added. */
int  gif_close(gif_writer *g, um_err *e);
/* Discard the recording and its temporary file; frees g. */
void gif_abort(gif_writer *g);

/* Frames added so far and bytes written so far (header and encoded frames). */
int      gif_frames(const gif_writer *g);
uint64_t gif_bytes(const gif_writer *g);

#endif
