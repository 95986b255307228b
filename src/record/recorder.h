/*
 * recorder: turns a sequence of screen frames (frame.h) into a GIF and/or an asciicast v2
 * file. It is the glue between the frame model and the writers (render.h + gif.h, cast.h),
 * shared by `unmask record` (headless) and the visualizer (--gif, --cast and the g key).
 *
 * Two timing modes:
 *   - fixed (headless): every frame added becomes one GIF frame shown for delay_cs, even
 *     when nothing changed, so a run of S steps gives exactly S + 1 frames; the last frame
 *     is held for hold_cs.
 *   - real time (interactive): a GIF frame stays on screen for the real time until the next
 *     frame that looks different; frames whose pixels equal the previous one only extend it.
 *     This is written one frame behind (a frame's delay is known when the next one arrives).
 * The cast always uses real times t (seconds since the recorder opened, never decreasing),
 * writes a marker event before a frame when a label is given ("step N"), an output event
 * only when cells changed, and a resize event when the frame size changes.
 *
 * The GIF size is fixed at open (cols x rows cells, 8x16 px each with the built-in font);
 * a frame of another size is drawn cut off or padded with pad_rgb. A few characters the
 * visualizer uses and the font lacks (↵ ␣ → ∎ ▲, eighth blocks) are drawn in the GIF as the
 * nearest glyph the font has (¶ _ » ● ^, half/full blocks); the cast keeps them as they are.
 * Files are written through outfile.h and appear at recorder_close (see gif.h, cast.h);
 * recorder_abort discards. No allocation per frame: pixel buffers are allocated at open,
 * the fallback scratch only grows when a bigger frame arrives.
 */
#ifndef UM_RECORDER_H
#define UM_RECORDER_H

#include <stdbool.h>
#include <stdint.h>

#include "frame.h"
#include "util.h"

/* Colours a recording uses where the screen has the terminal's default colour (exact
 * xterm-256 greys 252 and 233, so they render without rounding). */
#define RECORDER_FG_DEFAULT FRAME_DEFAULT_FG
#define RECORDER_BG_DEFAULT FRAME_DEFAULT_BG

#define RECORDER_DELAY_CS 8      /* default per-frame delay of a headless GIF, centiseconds */
#define RECORDER_HOLD_CS  300    /* default hold of the last frame */

typedef struct recorder_opts {
    const char *gif_path;        /* NULL: no GIF */
    const char *cast_path;       /* NULL: no cast */
    int         cols, rows;      /* GIF canvas in cells; the cast header's size */
    bool        real_time;       /* see above; false = fixed delay_cs per frame */
    int         delay_cs;        /* fixed mode: delay of each frame (<= 0: RECORDER_DELAY_CS) */
    int         hold_cs;         /* minimum delay of the last frame (< 0: RECORDER_HOLD_CS) */
    uint32_t    pad_rgb;         /* GIF area outside a smaller frame, 0xRRGGBB */
    int         cast_color;      /* CAST_COLOR_24BIT or CAST_COLOR_256 */
    const char *term;            /* cast header; NULL: "xterm-256color" */
    const char *title;           /* cast header; NULL: none */
} recorder_opts;

typedef struct recorder recorder;

/* Open the files (at least one path must be given). */
int    recorder_open(recorder **out, const recorder_opts *o, um_err *e);
/* Seconds since recorder_open (the t to pass below for a frame happening now). */
double recorder_elapsed(const recorder *r);
/* Add a frame seen at time t (seconds since open); label: cast marker written first, or
 * NULL. The frame is read, not kept. */
int    recorder_frame(recorder *r, double t, const frame *f, const char *label, um_err *e);
/* Finish at time t (real-time mode: the last frame stays until t, at least hold_cs):
 * finish both files (outfile_commit); frees r. Each file is finished on its own (one that
 * fails does not discard the other); the first error is returned. A GIF that got no frame
 * is discarded with an error. */
int    recorder_close(recorder *r, double t, um_err *e);
/* Discard both files; frees r. */
void   recorder_abort(recorder *r);

int    recorder_gif_frames(const recorder *r);     /* GIF frames written or pending */
int    recorder_cast_events(const recorder *r);    /* cast events written */
const char *recorder_gif_path(const recorder *r);  /* NULL when not writing a GIF */

#endif
