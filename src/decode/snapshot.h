/*
 * snapshot: allocation and reference counting of the immutable per-step snapshots
 * (um_snapshot, declared in engine.h), and the one rule that says whether a settings
 * change can apply from the next step or needs a restart. Used by the engine, both UI
 * sources (ui/engine_source.c, ui/fake_source.c) and the tests: nothing else allocates a
 * snapshot or touches its reference count.
 *
 * Invariants: a snapshot is one allocation (header, then n_canvas um_pos, then the
 * committed indices) made with one reference; it is never written after it is published,
 * so any thread may read it while it holds a reference; the last snapshot_unref frees it.
 */
#ifndef UM_SNAPSHOT_H
#define UM_SNAPSHOT_H

#include <stdbool.h>
#include <stdint.h>

#include "engine.h"

/* A zeroed snapshot with room for n_canvas positions and n_committed committed indices
 * (pos and committed point into the same allocation), holding one reference. NULL when
 * out of memory. */
um_snapshot *snapshot_new(int32_t n_canvas, int32_t n_committed);
/* Take and drop a reference; NULL is ignored. Safe from any thread. */
void snapshot_ref(um_snapshot *s);
void snapshot_unref(um_snapshot *s);

/* Does changing the settings from `from` to `to` need the run started again? A new
 * generation length, seed, or guidance switched on or off changes the canvas or the random
 * streams already drawn; every other setting applies from the next step (the cache settings
 * too: a new cache mode or storage type makes the next step refill the cache). */
bool snapshot_needs_restart(const um_settings *from, const um_settings *to);

#endif
