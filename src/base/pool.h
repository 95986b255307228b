/*
 * pool: a persistent pthread pool for data-parallel kernels.
 *
 * pool_run() hands the same function to every worker (the caller thread takes part as
 * worker 0) and returns when all are done. Uneven work is balanced by the callee taking
 * chunks from an atomic counter (pool_next_chunk). Workers spin briefly, then sleep on a
 * condition variable, so an idle pool costs no CPU. One pool_run at a time per pool: a
 * nested call (from inside a task) or a concurrent one from another thread is not an
 * error, it runs fn(t, 0, 1) on its own caller.
 *
 * Memory ordering: everything the caller wrote before pool_run is visible to every worker
 * inside fn, and everything any worker wrote inside fn is visible to the caller after
 * pool_run returns (release/acquire on the pool's generation and pending counters).
 * A NULL pool is valid everywhere and means "run on the caller alone".
 */
#ifndef UM_POOL_H
#define UM_POOL_H

#include <stdatomic.h>
#include <stdint.h>

typedef struct um_pool um_pool;

typedef struct um_pool_task {
    void (*fn)(struct um_pool_task *t, int thread_id, int n_threads);
    void *arg;
    atomic_int_fast64_t next;       /* chunk counter, reset to 0 by pool_run */
    int64_t n_chunks;               /* set by the caller */
} um_pool_task;

#define UM_POOL_MAX_THREADS 1024

/* n_threads total including the caller; 1 means no extra threads; <= 0 means
 * pool_default_threads(). Returns NULL if threads cannot be created (none are left). */
um_pool *pool_new(int n_threads);
void     pool_free(um_pool *p);
/* Threads that take part in pool_run, the caller included; 1 for a NULL pool. */
int      pool_threads(const um_pool *p);
void     pool_run(um_pool *p, um_pool_task *t);
/* Next chunk index in [0, n_chunks), or -1 when all are handed out. */
static inline int64_t pool_next_chunk(um_pool_task *t) {
    int64_t c = atomic_fetch_add_explicit(&t->next, 1, memory_order_relaxed);
    return c < t->n_chunks ? c : -1;
}

/* What the pool's multi-thread runs have cost its caller since pool_new: `runs` counts
 * them, `wait_s` sums the time the caller spent after finishing its own share until every
 * helper had finished theirs (helpers waking up late, uneven chunks): the hand-offs. Runs
 * on the caller alone (one thread, nested) count in neither. Read by the caller of
 * pool_run (the profile of a forward pass), never during a run. */
typedef struct um_pool_stats {
    uint64_t runs;
    double   wait_s;
} um_pool_stats;
void pool_stats(const um_pool *p, um_pool_stats *out);

/* Number of physical cores (cpu_features()->n_physical, >= 1): the default for -t. */
int pool_default_threads(void);

/* Convenience: call fn(arg, chunk, thread_id) once for every chunk in [0, n_chunks),
 * chunks handed out dynamically over the pool's threads. */
typedef void (*um_pool_chunk_fn)(void *arg, int64_t chunk, int thread_id);
void pool_for(um_pool *p, int64_t n_chunks, um_pool_chunk_fn fn, void *arg);

#endif
