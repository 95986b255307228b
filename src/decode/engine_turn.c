/*
 * engine_turn: the part of the engine that engines on one model hold in common
 * (engine_open_sharing: compare panes): its life (made by the first engine, freed by the last
 * to close), the turns the engines take for their starts and steps (a ticket lock: first come,
 * first served), and which engines have a run in progress.
 */
#include "engine_impl.h"

#include <stdlib.h>

/* The model side, alone or shared: made with one reference, freed by the last release. */
um_shared *engine_shared_new(void) {
    um_shared *sh = um_calloc(1, sizeof *sh);
    if (!sh) return NULL;
    pthread_mutex_init(&sh->lock, NULL);
    pthread_cond_init(&sh->turn_cv, NULL);
    pthread_cond_init(&sh->queue_cv, NULL);
    sh->refs = 1;
    return sh;
}

void engine_shared_release(um_shared *sh) {
    if (!sh) return;
    pthread_mutex_lock(&sh->lock);
    int left = --sh->refs;
    pthread_mutex_unlock(&sh->lock);
    if (left > 0) return;
    if (sh->be.free) sh->be.free(sh->be.impl);
    pool_free(sh->pool);
    tok_free(sh->tok);
    model_close(sh->model);
    pthread_cond_destroy(&sh->turn_cv);
    pthread_cond_destroy(&sh->queue_cv);
    pthread_mutex_destroy(&sh->lock);
    free(sh);
}

/* One engine's turn on the shared model (a start or a step), in ticket order. */
void engine_turn_begin(um_shared *sh) {
    pthread_mutex_lock(&sh->lock);
    uint64_t t = sh->next++;
    while (t != sh->serving) pthread_cond_wait(&sh->turn_cv, &sh->lock);
    pthread_mutex_unlock(&sh->lock);
}

void engine_turn_end(um_shared *sh) {
    pthread_mutex_lock(&sh->lock);
    sh->serving++;
    pthread_cond_broadcast(&sh->turn_cv);
    pthread_mutex_unlock(&sh->lock);
}

/* An engine's run is in progress (started, not done): a leader waits for its passes. */
void engine_set_live(um_engine *en, bool live) {
    if (!en->sh || en->live == live) return;
    pthread_mutex_lock(&en->sh->lock);
    en->sh->live += live ? 1 : -1;
    en->live = live;
    pthread_mutex_unlock(&en->sh->lock);
}

