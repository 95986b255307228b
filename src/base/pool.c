/*
 * pool: a persistent pthread pool (see pool.h for the contract).
 *
 * Protocol. The pool owns a generation counter. pool_run publishes the task, sets
 * `pending` to the number of helper threads, and bumps the generation. Each helper waits
 * for the generation to change: first by spinning for SPIN_ITERS pauses, then by sleeping
 * on `wake`. A helper runs the task, then decrements `pending`; the one that reaches zero
 * wakes the caller if it sleeps. The caller runs the task as thread 0, then waits for
 * `pending == 0` the same way (spin, then sleep on `done`).
 *
 * Wake-ups are skipped when nobody sleeps (the common case inside a forward pass, where
 * runs follow each other within microseconds). A sleeper announces itself under the
 * mutex (`n_sleeping`, `caller_sleeping`) before re-checking its condition; the waker
 * changes the condition before reading the announcement. Both sides use sequentially
 * consistent atomics, so at least one sees the other (Dekker): either the sleeper sees
 * the new condition and does not sleep, or the waker sees the sleeper and signals under
 * the mutex, which the sleeper holds until it is inside pthread_cond_wait.
 * Ordering of data: the generation bump publishes the task (and the caller's writes) to
 * the helpers; each helper's decrement of `pending` publishes its writes to the caller.
 *
 * Invariants: a helper touches the task only between seeing a new generation and its
 * decrement of `pending`, so the task may live on the caller's stack. Only one pool_run
 * is in flight per pool (`busy`); a nested or concurrent call runs on its caller alone.
 * Helpers block every signal but the crash ones (sigexit_compute_mask), so signals reach
 * the thread that handles them (the visualizer's UI thread), and a fault in a helper still
 * runs the crash handler.
 */
#include "pool.h"

#include "cpu.h"
#include "sigexit.h"
#include "util.h"

#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define cpu_relax() _mm_pause()
#elif defined(__aarch64__)
#define cpu_relax() __asm__ volatile("yield" ::: "memory")
#else
#define cpu_relax() ((void)0)
#endif

/* About 20-100 us of spinning: long enough to catch the next pool_run of a forward pass
 * (kernels follow each other within microseconds), short enough that an idle pool
 * falls asleep almost at once. */
#define SPIN_ITERS 4096

struct um_pool {
    int              n_threads;     /* caller included */
    int              spin;          /* pauses before sleeping: SPIN_ITERS, or 0 when there
                                     * are more threads than CPUs (spinning would steal the
                                     * CPU from the thread being waited for) */
    pthread_t       *threads;       /* (n_threads - 1) helpers */
    pthread_mutex_t  mu;
    pthread_cond_t   wake;          /* helpers sleep here between tasks */
    pthread_cond_t   done;          /* the caller sleeps here until pending == 0 */
    atomic_uint      generation;    /* bumped once per pool_run (and once by pool_free) */
    atomic_int       pending;       /* helpers still running the current task */
    um_pool_task    *_Atomic task;  /* current task; valid while pending > 0 */
    atomic_bool      stop;          /* set by pool_free */
    atomic_bool      busy;          /* a pool_run is in flight */
    atomic_int       n_sleeping;    /* helpers inside (or entering) the wait on `wake` */
    atomic_bool      caller_sleeping;   /* the caller waits on `done` */
    um_pool_stats    stats;         /* written by the caller of a run only (under `busy`) */
};

typedef struct helper_arg {
    um_pool *pool;
    int      id;                    /* 1 .. n_threads-1 */
} helper_arg;

static unsigned wait_generation(um_pool *p, unsigned seen) {
    for (int i = 0; i < p->spin; i++) {
        unsigned g = atomic_load_explicit(&p->generation, memory_order_acquire);
        if (g != seen) return g;
        cpu_relax();
    }
    pthread_mutex_lock(&p->mu);
    atomic_fetch_add(&p->n_sleeping, 1);
    unsigned g;
    while ((g = atomic_load(&p->generation)) == seen) pthread_cond_wait(&p->wake, &p->mu);
    atomic_fetch_sub(&p->n_sleeping, 1);
    pthread_mutex_unlock(&p->mu);
    return g;
}

static void *helper_main(void *argp) {
    helper_arg a = *(helper_arg *)argp;
    free(argp);
    um_pool *p = a.pool;
    unsigned seen = 0;
    for (;;) {
        seen = wait_generation(p, seen);
        if (atomic_load_explicit(&p->stop, memory_order_acquire)) break;
        um_pool_task *t = atomic_load_explicit(&p->task, memory_order_acquire);
        t->fn(t, a.id, p->n_threads);
        if (atomic_fetch_sub(&p->pending, 1) == 1 && atomic_load(&p->caller_sleeping)) {
            pthread_mutex_lock(&p->mu);
            pthread_cond_signal(&p->done);
            pthread_mutex_unlock(&p->mu);
        }
    }
    return NULL;
}

int pool_default_threads(void) {
    int n = cpu_features()->n_physical;
    return n >= 1 ? n : 1;
}

um_pool *pool_new(int n_threads) {
    if (n_threads <= 0) n_threads = pool_default_threads();
    if (n_threads > UM_POOL_MAX_THREADS) n_threads = UM_POOL_MAX_THREADS;
    um_pool *p = um_calloc(1, sizeof *p);
    if (!p) return NULL;
    p->n_threads = n_threads;
    p->spin = n_threads <= cpu_features()->n_logical ? SPIN_ITERS : 0;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->wake, NULL);
    pthread_cond_init(&p->done, NULL);
    atomic_init(&p->generation, 0);
    atomic_init(&p->pending, 0);
    atomic_init(&p->task, NULL);
    atomic_init(&p->stop, false);
    atomic_init(&p->busy, false);
    atomic_init(&p->n_sleeping, 0);
    atomic_init(&p->caller_sleeping, false);
    if (n_threads == 1) return p;

    p->threads = um_calloc((size_t)n_threads - 1, sizeof *p->threads);
    if (!p->threads) goto err;
    int created = 0;
    sigset_t all, old;
    sigexit_compute_mask(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);         /* inherited by the helpers */
    for (int i = 1; i < n_threads; i++) {
        helper_arg *a = um_malloc(sizeof *a);
        if (!a) break;
        a->pool = p;
        a->id = i;
        if (pthread_create(&p->threads[i - 1], NULL, helper_main, a) != 0) { free(a); break; }
        created++;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (created == n_threads - 1) return p;
    p->n_threads = created + 1;     /* let pool_free stop and join exactly those */
    pool_free(p);
    return NULL;
err:
    pthread_cond_destroy(&p->done);
    pthread_cond_destroy(&p->wake);
    pthread_mutex_destroy(&p->mu);
    free(p);
    return NULL;
}

void pool_free(um_pool *p) {
    if (!p) return;
    if (p->n_threads > 1) {
        pthread_mutex_lock(&p->mu);
        atomic_store_explicit(&p->stop, true, memory_order_release);
        atomic_fetch_add_explicit(&p->generation, 1, memory_order_release);
        pthread_cond_broadcast(&p->wake);
        pthread_mutex_unlock(&p->mu);
        for (int i = 0; i < p->n_threads - 1; i++) pthread_join(p->threads[i], NULL);
    }
    free(p->threads);
    pthread_cond_destroy(&p->done);
    pthread_cond_destroy(&p->wake);
    pthread_mutex_destroy(&p->mu);
    free(p);
}

int pool_threads(const um_pool *p) { return p ? p->n_threads : 1; }

void pool_run(um_pool *p, um_pool_task *t) {
    atomic_store_explicit(&t->next, 0, memory_order_relaxed);
    /* One run at a time: a nested call (a task that itself calls pool_run) or a second
     * thread calling in while a run is in flight gets the caller's thread alone. */
    if (!p || p->n_threads == 1 || atomic_exchange_explicit(&p->busy, true, memory_order_acquire)) {
        t->fn(t, 0, 1);
        return;
    }
    atomic_store_explicit(&p->task, t, memory_order_relaxed);
    atomic_store_explicit(&p->pending, p->n_threads - 1, memory_order_relaxed);
    atomic_fetch_add(&p->generation, 1);
    if (atomic_load(&p->n_sleeping) > 0) {
        pthread_mutex_lock(&p->mu);
        pthread_cond_broadcast(&p->wake);
        pthread_mutex_unlock(&p->mu);
    }

    t->fn(t, 0, p->n_threads);

    const double t_wait = um_now();
    int spins = 0;
    while (atomic_load_explicit(&p->pending, memory_order_acquire) != 0 && spins < p->spin) {
        cpu_relax();
        spins++;
    }
    if (spins == p->spin) {
        pthread_mutex_lock(&p->mu);
        atomic_store(&p->caller_sleeping, true);
        /* A full fence between the announcement and the re-check. C11 already orders a
         * seq_cst store before a later seq_cst load, and AArch64's STLR/LDAR do too, but
         * qemu-user 7.2 on an x86 host lets the load pass the store (it emits no
         * store-load barrier for that pair): the last helper then read caller_sleeping as
         * false after the caller had read pending as 1, and nobody woke the caller (a hang
         * of test_pool's pool_create_free_many about once in 130 runs under -cpu
         * neoverse-n1). The fence is a DMB there, an MFENCE in the emulation. */
        atomic_thread_fence(memory_order_seq_cst);
        while (atomic_load(&p->pending) != 0) pthread_cond_wait(&p->done, &p->mu);
        atomic_store(&p->caller_sleeping, false);
        pthread_mutex_unlock(&p->mu);
    }
    p->stats.runs++;
    p->stats.wait_s += um_now() - t_wait;
    atomic_store_explicit(&p->busy, false, memory_order_release);
}

void pool_stats(const um_pool *p, um_pool_stats *out) {
    um_pool_stats none = { 0, 0 };
    *out = p ? p->stats : none;
}

/* ------------------------------------------------------------------ pool_for */

typedef struct for_arg {
    um_pool_chunk_fn fn;
    void            *arg;
} for_arg;

static void for_task(um_pool_task *t, int thread_id, int n_threads) {
    const for_arg *fa = t->arg;
    for (int64_t c; (c = pool_next_chunk(t)) >= 0;) fa->fn(fa->arg, c, thread_id);
}

void pool_for(um_pool *p, int64_t n_chunks, um_pool_chunk_fn fn, void *arg) {
    if (n_chunks <= 0) return;
    for_arg fa = { fn, arg };
    um_pool_task t = { .fn = for_task, .arg = &fa, .n_chunks = n_chunks };
    pool_run(p, &t);
}
