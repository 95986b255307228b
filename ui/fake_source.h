/*
 * fake_source: a deterministic synthetic denoiser behind the ui_source interface, for the
 * UI tests and `unmask --demo-ui`. It needs no model file.
 *
 * Its vocabulary is a fixed list of word pieces chosen to exercise the text layout (CJK,
 * emoji, combining marks, a newline, a tab, a euro sign split over two byte tokens, an
 * invalid byte) plus 256 byte-fallback tokens used to spell prompt text it has no piece
 * for. For a given seed and settings every run yields the same snapshots, whatever the
 * step delay. Schedules and scorings follow the shapes of the real ones (block, timestep,
 * threshold; confidence, margin, entropy, random, origin) over made-up probabilities.
 * With a K/V cache setting it reports the rows a step would recompute and which positions
 * it would serve from the cache, by the engine's rule.
 */
#ifndef UM_FAKE_SOURCE_H
#define UM_FAKE_SOURCE_H

#include "ui_source.h"

/* delay_ms: artificial time each step takes (sleeps in the worker thread). */
int fake_source_open(ui_source *out, int delay_ms, um_err *e);
/* The same standing in for a backend without partial forward passes (the CUDA backend,
 * `unmask --demo-ui --gpu`): info.can_cache is false, backend "fake-gpu", and a start or
 * apply with settings.cache other than none fails with the engine's message. */
int fake_source_open_nocache(ui_source *out, int delay_ms, um_err *e);

/* Token ids of the fake vocabulary, exported for tests. */
#define FAKE_MASK_ID 0
#define FAKE_EOS_ID  1
#define FAKE_BYTE0   1000      /* byte-fallback tokens: FAKE_BYTE0 + byte value */

#endif
