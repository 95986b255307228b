/*
 * test_pool: the persistent thread pool hands out every chunk exactly once, for many
 * sizes and thread counts, across repeated runs, and makes workers' writes visible to
 * the caller after pool_run.
 */
#include "harness.h"
#include "pool.h"

#include <stdlib.h>
#include <time.h>

#define TP_LEN(a) (sizeof(a) / sizeof((a)[0]))

typedef struct count_arg {
    atomic_int *hits;               /* (n_chunks) times each chunk was processed */
    int        *owner;              /* (n_chunks) thread id that processed it; plain writes */
    atomic_int  seen_threads[64];   /* which thread ids called fn */
    int         bad_n_threads;      /* set (racily but only ever to 1) if fn saw a wrong count */
    int         expect_threads;
} count_arg;

static void count_task(um_pool_task *t, int thread_id, int n_threads) {
    count_arg *a = t->arg;
    if (n_threads != a->expect_threads || thread_id < 0 || thread_id >= n_threads) {
        atomic_store(&a->seen_threads[63], 1000);   /* flagged below */
        return;
    }
    atomic_fetch_add(&a->seen_threads[thread_id], 1);
    for (int64_t c; (c = pool_next_chunk(t)) >= 0;) {
        atomic_fetch_add_explicit(&a->hits[c], 1, memory_order_relaxed);
        a->owner[c] = thread_id;    /* non-atomic: visibility to the caller is pool_run's job */
    }
}

/* Run count_task over n_chunks on p; check each chunk ran exactly once and every
 * thread took part once. Returns 0 on success. */
static int run_counted(um_pool *p, int64_t n_chunks, int n_threads) {
    count_arg a = { 0 };
    a.hits = calloc((size_t)n_chunks + 1, sizeof *a.hits);
    a.owner = malloc(((size_t)n_chunks + 1) * sizeof *a.owner);
    a.expect_threads = n_threads;
    for (int64_t i = 0; i < n_chunks; i++) a.owner[i] = -1;
    um_pool_task t = { .fn = count_task, .arg = &a, .n_chunks = n_chunks };
    atomic_store(&t.next, 12345);   /* pool_run must reset it */
    pool_run(p, &t);
    int bad = 0;
    for (int64_t i = 0; i < n_chunks; i++)
        if (atomic_load(&a.hits[i]) != 1 || a.owner[i] < 0 || a.owner[i] >= n_threads) bad = 1;
    for (int i = 0; i < n_threads && i < 63; i++)
        if (atomic_load(&a.seen_threads[i]) != 1) bad = 1;
    if (atomic_load(&a.seen_threads[63]) == 1000) bad = 1;
    free(a.hits);
    free(a.owner);
    return bad;
}

TEST(pool_every_chunk_once) {
    static const int threads[] = { 1, 2, 3, 4, 8 };
    static const int64_t sizes[] = { 0, 1, 2, 3, 7, 64, 513, 10007 };
    for (size_t ti = 0; ti < TP_LEN(threads); ti++) {
        um_pool *p = pool_new(threads[ti]);
        CHECK(p != NULL);
        CHECK_EQ(pool_threads(p), threads[ti]);
        for (size_t si = 0; si < TP_LEN(sizes); si++) {
            int bad = run_counted(p, sizes[si], threads[ti]);
            if (bad) pool_free(p);
            CHECK_MSG(!bad, "threads %d, chunks %lld", threads[ti], (long long)sizes[si]);
        }
        pool_free(p);
    }
}

/* Back-to-back runs (helpers still spinning) mixed with pauses long enough for them to
 * fall asleep, so both wake-up paths are taken; 2 threads spin on this machine's CPUs,
 * 4 may outnumber them and then sleep at once. */
TEST(pool_repeated_runs) {
    static const int threads[] = { 2, 4 };
    for (size_t ti = 0; ti < TP_LEN(threads); ti++) {
        um_pool *p = pool_new(threads[ti]);
        CHECK(p != NULL);
        int bad = 0;
        for (int r = 0; r < 300 && !bad; r++) {
            if (r % 50 == 49) nanosleep(&(struct timespec){ 0, 3000000 }, NULL);
            bad = run_counted(p, 1 + r % 37, threads[ti]);
        }
        pool_free(p);
        CHECK_MSG(!bad, "threads %d", threads[ti]);
    }
}

TEST(pool_null_and_single_thread) {
    CHECK_EQ(pool_threads(NULL), 1);
    CHECK(run_counted(NULL, 100, 1) == 0);
    um_pool *p = pool_new(1);
    CHECK(p != NULL);
    int bad = run_counted(p, 100, 1);
    pool_free(p);
    CHECK(!bad);
    pool_free(NULL);
}

TEST(pool_default_is_physical_cores) {
    int n = pool_default_threads();
    CHECK(n >= 1);
    um_pool *p = pool_new(0);
    CHECK(p != NULL);
    CHECK_EQ(pool_threads(p), n);
    pool_free(p);
}

/* Uneven work: chunk i costs i units; the sum must come out right with dynamic hand-out. */
typedef struct sum_arg {
    double *partial;                /* (n_threads) per-thread sums, plain writes */
} sum_arg;

static void sum_chunk(void *argp, int64_t chunk, int thread_id) {
    sum_arg *a = argp;
    double s = 0;
    for (int64_t k = 0; k < chunk * 50; k++) s += 1.0;
    a->partial[thread_id] += s / 50.0;
}

TEST(pool_for_uneven_work) {
    um_pool *p = pool_new(3);
    CHECK(p != NULL);
    double partial[3] = { 0 };
    sum_arg a = { partial };
    for (int r = 0; r < 20; r++) pool_for(p, 200, sum_chunk, &a);
    pool_free(p);
    double total = partial[0] + partial[1] + partial[2];
    CHECK_NEAR(total, 20.0 * 199 * 200 / 2, 0);     /* integers, exact in double */
}

TEST(pool_create_free_many) {
    for (int i = 0; i < 20; i++) {
        um_pool *p = pool_new(1 + i % 4);
        CHECK(p != NULL);
        if (i % 2) CHECK(run_counted(p, 9, 1 + i % 4) == 0);
        pool_free(p);               /* immediately, with helpers possibly still spinning */
    }
}

/* A task that itself calls pool_run on the same pool: the inner run must not deadlock
 * or disturb the outer one; it runs on the calling worker alone. */
typedef struct nest_arg {
    um_pool    *pool;
    atomic_int  outer_hits;
    atomic_int  inner_hits;
    atomic_int  inner_bad_threads;
} nest_arg;

static void inner_chunk(void *argp, int64_t chunk, int thread_id) {
    nest_arg *a = argp;
    if (thread_id != 0) atomic_fetch_add(&a->inner_bad_threads, 1);
    atomic_fetch_add(&a->inner_hits, 1);
}

static void outer_chunk(void *argp, int64_t chunk, int thread_id) {
    nest_arg *a = argp;
    atomic_fetch_add(&a->outer_hits, 1);
    pool_for(a->pool, 5, inner_chunk, a);
}

TEST(pool_nested_run_is_inline) {
    um_pool *p = pool_new(3);
    CHECK(p != NULL);
    nest_arg a = { .pool = p };
    pool_for(p, 40, outer_chunk, &a);
    int bad = run_counted(p, 100, 3);        /* the pool still works afterwards */
    pool_free(p);
    CHECK_EQ(atomic_load(&a.outer_hits), 40);
    CHECK_EQ(atomic_load(&a.inner_hits), 200);
    CHECK_EQ(atomic_load(&a.inner_bad_threads), 0);
    CHECK(!bad);
}

/* pool_stats counts the multi-thread runs and the caller's wait in them; runs on the caller
 * alone (a one-thread pool, a nested run) count in neither. A helper that sleeps 20 ms on one
 * chunk while the caller has none makes the caller wait at least that long. */
static void slow_chunk(void *arg, int64_t c, int tid) {
    (void)arg;
    if (c == 0 && tid != 0) {
        struct timespec ts = { 0, 20 * 1000 * 1000 };
        nanosleep(&ts, NULL);
    }
}

static void take_first_chunk_on_helper(um_pool_task *t, int thread_id, int n_threads) {
    (void)n_threads;
    if (thread_id == 0) return;                  /* the caller takes nothing: it only waits */
    for (int64_t c; (c = pool_next_chunk(t)) >= 0;) slow_chunk(NULL, c, thread_id);
}

TEST(pool_stats_count_runs_and_waits) {
    um_pool_stats s;
    pool_stats(NULL, &s);
    CHECK_EQ((long long)s.runs, 0);
    um_pool *one = pool_new(1);
    pool_for(one, 10, slow_chunk, NULL);
    pool_stats(one, &s);
    CHECK_EQ((long long)s.runs, 0);
    pool_free(one);

    um_pool *p = pool_new(2);
    CHECK(p != NULL);
    for (int i = 0; i < 7; i++) CHECK(run_counted(p, 50, 2) == 0);
    pool_stats(p, &s);
    CHECK_EQ((long long)s.runs, 7);
    CHECK(s.wait_s >= 0);
    double before = s.wait_s;
    um_pool_task t = { .fn = take_first_chunk_on_helper, .n_chunks = 1 };
    pool_run(p, &t);
    pool_stats(p, &s);
    CHECK_EQ((long long)s.runs, 8);
    CHECK_MSG(s.wait_s - before >= 0.019, "caller waited %.4f s for a 20 ms helper", s.wait_s - before);
    pool_free(p);
}
