/*
 * test_snapshot: the snapshot module (src/decode/snapshot.c): one allocation whose arrays
 * are usable end to end, reference counting across threads (freed exactly once: ASan and
 * TSan builds report a double free or leak), and the restart rule the engine and both UI
 * sources share, held against the engine's own answer (engine_set) on a real model.
 */
#include "harness.h"

#include <pthread.h>
#include <stdlib.h>

#include "engine.h"
#include "snapshot.h"

TEST(snapshot_arrays_fill_the_allocation) {
    int32_t sizes[][2] = { { 1, 0 }, { 7, 3 }, { 300, 300 }, { 4096, 1 } };
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        um_snapshot *s = snapshot_new(sizes[k][0], sizes[k][1]);
        CHECK(s != NULL);
        CHECK(s->step == 0 && s->n_canvas == 0 && !s->done);            /* zeroed */
        CHECK((char *)s->pos == (char *)(s + 1));
        CHECK((char *)s->committed == (char *)(s->pos + sizes[k][0]));
        for (int32_t i = 0; i < sizes[k][0]; i++) s->pos[i].token = i;   /* every byte writable (ASan) */
        for (int32_t i = 0; i < sizes[k][1]; i++) s->committed[i] = i;
        CHECK_EQ(s->pos[sizes[k][0] - 1].token, sizes[k][0] - 1);
        snapshot_unref(s);
    }
    snapshot_ref(NULL);                                                  /* ignored */
    snapshot_unref(NULL);
}

static void *ref_unref_many(void *arg) {
    for (int i = 0; i < 10000; i++) {
        snapshot_ref(arg);
        snapshot_unref(arg);
    }
    snapshot_unref(arg);                                                 /* this thread's own reference */
    return NULL;
}

TEST(snapshot_refcount_across_threads) {
    um_snapshot *s = snapshot_new(16, 2);
    CHECK(s != NULL);
    pthread_t t[4];
    for (int i = 0; i < 4; i++) snapshot_ref(s);
    for (int i = 0; i < 4; i++) CHECK(pthread_create(&t[i], NULL, ref_unref_many, s) == 0);
    for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
    CHECK_EQ(s->pos[15].token, 0);                                       /* still ours: one ref left */
    snapshot_unref(s);                                                   /* freed here, once */
}

/* The rule by table, and the engine answering the same through engine_set. */
TEST(snapshot_restart_rule_matches_engine) {
    um_engine *en = NULL;
    um_err e = { "" };
    um_engine_opts o = { .model_path = "tests/data/tiny-llada.gguf", .n_threads = 1, .kernel = -1 };
    CHECK_MSG(engine_open(&en, &o, &e) == UM_OK, "%s", e.msg);
    um_settings base;
    engine_default_settings(en, &base);
    base.n_gen = 8;
    base.steps = 8;
    base.block_len = 8;
    CHECK_MSG(engine_start(en, "a", &base, &e) == UM_OK, "%s", e.msg);
    struct { const char *what; bool restart; } cases[] = {
        { "n_gen", true }, { "seed", true }, { "cfg on", true }, { "steps", false },
        { "temperature", false }, { "score", false }, { "cfg weight", false },
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        um_settings from = base, to = base;
        switch (k) {
        case 0: to.n_gen = 4; to.steps = 4; to.block_len = 4; break;
        case 1: to.seed = base.seed + 1; break;
        case 2: to.cfg = 1.0f; break;
        case 3: to.steps = 4; break;
        case 4: to.temperature = 0.5f; break;
        case 5: to.score = (um_score)((base.score + 1) % UM_SCORE_COUNT); break;
        case 6: from.cfg = 1.0f; to.cfg = 2.0f; break;
        }
        CHECK_MSG(snapshot_needs_restart(&from, &to) == cases[k].restart, "rule: %s", cases[k].what);
        if (k == 6) continue;                                           /* from differs from the engine's */
        int rc = engine_set(en, &to);
        CHECK_MSG(rc == (cases[k].restart ? 1 : 0), "engine_set: %s gave %d", cases[k].what, rc);
        CHECK_EQ(engine_set(en, &base), cases[k].restart ? 1 : 0);      /* and back: the same kind of change */
    }
    engine_close(en);
}
