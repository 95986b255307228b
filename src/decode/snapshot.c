/*
 * snapshot: one allocation per snapshot with an atomic reference count (see snapshot.h).
 */
#include "snapshot.h"

#include <stdatomic.h>
#include <stdlib.h>

um_snapshot *snapshot_new(int32_t n_canvas, int32_t n_committed) {
    size_t bytes = sizeof(um_snapshot) + (size_t)n_canvas * sizeof(um_pos) +
                   (size_t)(n_committed > 0 ? n_committed : 1) * sizeof(int32_t);
    um_snapshot *s = um_calloc(1, bytes);
    if (!s) return NULL;
    s->pos = (um_pos *)(s + 1);
    s->committed = (int32_t *)(s->pos + n_canvas);
    atomic_init(&s->refs_, 1);
    return s;
}

void snapshot_ref(um_snapshot *s) {
    if (s) atomic_fetch_add_explicit(&s->refs_, 1, memory_order_relaxed);
}

void snapshot_unref(um_snapshot *s) {
    if (s && atomic_fetch_sub_explicit(&s->refs_, 1, memory_order_acq_rel) == 1) free(s);
}

bool snapshot_needs_restart(const um_settings *from, const um_settings *to) {
    return from->n_gen != to->n_gen || from->seed != to->seed || (from->cfg > 0) != (to->cfg > 0);
}
