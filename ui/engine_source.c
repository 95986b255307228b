/*
 * engine_source: the real engine (src/decode/engine.h) behind the ui_source interface.
 *
 * A thin adapter: start = engine_start + engine_snapshot, step = engine_step +
 * engine_snapshot, apply = engine_set, piece = engine_token_bytes (reads the immutable
 * tokenizer, so the UI thread may call it while a step runs). The engine has no way to
 * cut a step short yet, so cancel is NULL: a restart or quit waits for the step in flight.
 */
#include <stdio.h>
#include <string.h>

#include "engine.h"
#include "snapshot.h"
#include "ui_source.h"

static um_snapshot *es_start(void *self, const um_settings *s, const char *prompt, um_err *e) {
    um_engine *en = self;
    if (engine_start(en, prompt, s, e)) return NULL;
    return engine_snapshot(en);
}

static um_snapshot *es_step(void *self, um_err *e) {
    um_engine *en = self;
    if (engine_step(en, e) < 0) return NULL;
    return engine_snapshot(en);
}

static int es_apply(void *self, const um_settings *s, um_err *e) {
    int rc = engine_set(self, s);
    if (rc < 0) return um_errf(e, "the engine refused these settings");
    if (rc > 0) return um_errf(e, "this change needs a restart");
    return UM_OK;
}

static size_t es_piece(void *self, int32_t token, char *buf, size_t cap) {
    size_t len = 0;
    const uint8_t *p = engine_token_bytes(self, token, &len);
    if (!p) return 0;
    if (len > cap) len = cap;
    memcpy(buf, p, len);
    return len;
}

static bool es_is_special(void *self, int32_t token) {
    return engine_token_is_special(self, token) || engine_token_is_eog(self, token);
}

static void es_close(void *self) { engine_close(self); }

static int source_open(ui_source *out, const ui_source *with, const um_engine_opts *o, um_err *e) {
    um_engine *en;
    memset(out, 0, sizeof *out);
    if (with ? engine_open_sharing(&en, with->self, o, e) : engine_open(&en, o, e)) return UM_FAIL;
    out->self = en;
    engine_get_info(en, &out->info);
    engine_default_settings(en, &out->defaults);
    out->start = es_start;
    out->step = es_step;
    out->apply = es_apply;
    out->needs_restart = snapshot_needs_restart;
    out->piece = es_piece;
    out->is_special = es_is_special;
    out->cancel = NULL;
    out->retain = snapshot_ref;
    out->release = snapshot_unref;
    out->close = es_close;
    return UM_OK;
}

int engine_source_open(ui_source *out, const um_engine_opts *o, um_err *e) { return source_open(out, NULL, o, e); }

int engine_source_open_sharing(ui_source *out, const ui_source *with, const um_engine_opts *o, um_err *e) {
    return source_open(out, with, o, e);
}
