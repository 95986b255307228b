/*
 * ui_source: what the visualizer watches. A source turns settings and a prompt into a
 * sequence of immutable um_snapshot values (src/decode/engine.h), one per denoising step.
 *
 * The real engine plugs in as one implementation (ui/engine_source.c); ui/fake_source.c
 * is a deterministic synthetic one for tests and `unmask --demo-ui`.
 *
 * Threading contract:
 *   - start, step, apply and close are called from ONE thread (the worker, ui/worker.c),
 *     never concurrently. step may take seconds.
 *   - piece, is_special, needs_restart, release and cancel may be called from the UI thread at any time,
 *     concurrently with step: they must only read immutable data (the vocabulary) or
 *     use atomics (reference counts).
 *   - info is filled once at open time and never changes.
 *
 * Ownership: start and step return a snapshot with one reference owned by the caller;
 * the caller drops it with release. Snapshots never change after they are returned.
 */
#ifndef UM_UI_SOURCE_H
#define UM_UI_SOURCE_H

#include <stddef.h>
#include "engine.h"

typedef struct ui_source ui_source;
struct ui_source {
    void          *self;
    um_engine_info info;
    um_settings    defaults;        /* the settings a fresh run uses */

    /* Lay out prompt + settings->n_gen masks; return the step-0 snapshot (NULL + e on error). */
    um_snapshot *(*start)(void *self, const um_settings *s, const char *prompt, um_err *e);
    /* Run one denoising step; return its snapshot (NULL + e on error). After a snapshot
     * with done set, step is not called again until the next start. */
    um_snapshot *(*step)(void *self, um_err *e);
    /* Change settings from the next step on. Only called when needs_restart said false. */
    int          (*apply)(void *self, const um_settings *s, um_err *e);
    /* Pure: must a change from a to b restart the run? */
    bool         (*needs_restart)(const um_settings *a, const um_settings *b);
    /* Raw bytes of a token's text (may be partial UTF-8); returns the byte count, writes at
     * most cap bytes. Thread-safe (reads the immutable vocabulary). */
    size_t       (*piece)(void *self, int32_t token, char *buf, size_t cap);
    /* Optional (may be NULL): is this a special/control token (end of text, template
     * markers)? The canvas shows generated ones compactly. Thread-safe like piece. */
    bool         (*is_special)(void *self, int32_t token);
    /* Optional (may be NULL): make a step in flight return soon (NULL, any message). A
     * cancel that arrives between steps may be ignored. Thread-safe (an atomic flag). */
    void         (*cancel)(void *self);
    void         (*retain)(um_snapshot *snap);
    void         (*release)(um_snapshot *snap);
    void         (*close)(void *self);
};

/* Open the real engine (ui/engine_source.c) with o (model path, threads, chat template). */
int engine_source_open(ui_source *out, const um_engine_opts *o, um_err *e);
/* Another engine on the model of with (an engine_source): one set of weights and one thread
 * pool for every compare pane (engine_open_sharing); o's chat options are its own. */
int engine_source_open_sharing(ui_source *out, const ui_source *with, const um_engine_opts *o, um_err *e);

#endif
