/*
 * stepstream: `unmask generate --stream-json`, the run as JSON lines written while it
 * happens, so another program (a notebook, a web page) can draw its own view of the
 * decoding: a "start" line (model, settings, prompt tokens, canvas size), one "step" line
 * per denoising step (commits with positions, tokens, text pieces, scores and top-k
 * candidates; timings; the schedule's state; forward passes so far), and a last line,
 * "done" with the answer or "error" with the message. docs/stream.md is the schema.
 *
 * Invariants: every line is one complete JSON object followed by '\n' and flushed before
 * the call returns (a reader sees each step as soon as it ran); the lines are written by
 * the thread that drives the engine (engine_run's callback); nothing is allocated per line.
 * A failed write is remembered (stepstream_failed) and later lines are not attempted.
 */
#ifndef UM_STEPSTREAM_H
#define UM_STEPSTREAM_H

#include <stdbool.h>
#include <stdio.h>

#include "engine.h"
#include "jsonw.h"

#define STEPSTREAM_VERSION 1

typedef struct stepstream {
    FILE      *f;
    um_engine *en;
    double     t0;          /* um_now() at the start line: step lines count elapsed_s from here */
    bool       failed;      /* a write or flush failed (the reader went away, disk full) */
} stepstream;

/* The start line, after engine_start: s the settings in force, prompt as the user gave it,
 * load_s the model's load time. */
void stepstream_start(stepstream *ss, FILE *f, um_engine *en, const um_settings *s, const char *prompt,
                      double load_s);
/* One step line for snapshot sn (the step that just ran). */
void stepstream_step(stepstream *ss, const um_snapshot *sn);
/* The last line of a finished run: last is the final snapshot, answer the decoded text. */
void stepstream_done(stepstream *ss, const um_snapshot *last, const char *answer);
/* The last line of a failed run. */
void stepstream_error(stepstream *ss, const char *msg);
bool stepstream_failed(const stepstream *ss);
/* A uniform-state step (sn->us.on) as the value of a "uniform" key: the rule's numbers and,
 * for the canvas being denoised, per position its kind, output token, working token and
 * entropy (docs/stream.md). Shared by --stream-json and generate --json. */
void stepstream_json_uniform(jsonw *j, const um_snapshot *sn);

#endif
