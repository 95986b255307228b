/*
 * engine_source: the real engine behind the ui_source interface.
 *
 * Placeholder until the engine (src/engine.c, issue "engine step API") lands: it only
 * reports that this build has no engine. The engine helper replaces the body with
 * engine_open / engine_start / engine_step / engine_set / engine_snapshot_release
 * calls; the visualizer needs nothing else (see ui_source.h for the contract).
 */
#include "ui_source.h"

int engine_source_open(ui_source *out, const char *model_path, int n_threads, um_err *e) {
    (void)out;
    (void)n_threads;
    return um_errf(e, "%s: this build has no inference engine yet (try --demo-ui for the synthetic demo)", model_path);
}
