/*
 * harness: the test runner behind tests/harness.h. Each test runs in order of
 * registration (with arguments, only those matching one); the summary line is what
 * `make test` and CI read. A watchdog thread ends the run when one test takes longer
 * than UNIT_TIMEOUT seconds (default 900; 0: no limit), naming it, so a hang costs a
 * clear failure, not the rest of CI's time.
 */
#include "harness.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define TH_MAX 4096

static struct { const char *name, *file; th_fn fn; } g_tests[TH_MAX];
static int g_n;
static int g_cur_failed, g_cur_skipped;

void th_register(const char *name, const char *file, th_fn fn) {
    if (g_n >= TH_MAX) { fprintf(stderr, "harness: too many tests\n"); exit(2); }
    g_tests[g_n].name = name;
    g_tests[g_n].file = file;
    g_tests[g_n].fn = fn;
    g_n++;
}

void th_fail(const char *file, int line, const char *fmt, ...) {
    g_cur_failed = 1;
    fprintf(stdout, "    %s:%d: ", file, line);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stdout, fmt, ap);
    va_end(ap);
    fputc('\n', stdout);
}

void th_skip(const char *why) {
    g_cur_skipped = 1;
    fprintf(stdout, "    skipped: %s\n", why);
}

int th_failed(void) { return g_cur_failed; }

/* the watchdog: wd_cur is the running test (-1: none), wd_gen counts starts */
static pthread_mutex_t wd_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wd_cv;
static int wd_cur = -1;
static long wd_gen, wd_limit;

static void *watchdog(void *arg) {
    (void)arg;
    pthread_mutex_lock(&wd_lock);
    for (;;) {
        while (wd_cur < 0) pthread_cond_wait(&wd_cv, &wd_lock);
        long gen = wd_gen;
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_sec += wd_limit;
        int rc = 0;
        while (wd_gen == gen && wd_cur >= 0 && rc != ETIMEDOUT) rc = pthread_cond_timedwait(&wd_cv, &wd_lock, &until);
        if (wd_gen == gen && wd_cur >= 0) {
            fprintf(stdout, "FAIL %s: did not finish in %ld s (UNIT_TIMEOUT)\nunit: stopped by the watchdog\n",
                    g_tests[wd_cur].name, wd_limit);
            fflush(stdout);
            _exit(3);
        }
    }
    return NULL;
}

static void wd_start(void) {
    const char *v = getenv("UNIT_TIMEOUT");
    wd_limit = v && *v ? strtol(v, NULL, 10) : 900;
    if (wd_limit <= 0) return;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&wd_cv, &ca);
    pthread_condattr_destroy(&ca);
    /* the watchdog takes no signal: the tests of signal handling send theirs to the process */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_t t;
    if (pthread_create(&t, NULL, watchdog, NULL) != 0) wd_limit = 0;
    else pthread_detach(t);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

static void wd_set(int test) {
    if (wd_limit <= 0) return;
    pthread_mutex_lock(&wd_lock);
    wd_cur = test;
    wd_gen++;
    pthread_cond_broadcast(&wd_cv);
    pthread_mutex_unlock(&wd_lock);
}

/* no filters: every test; else those whose name or file contains one of them */
static int selected(int i, int n_filters, char **filters) {
    for (int f = 0; f < n_filters; f++)
        if (strstr(g_tests[i].name, filters[f]) || strstr(g_tests[i].file, filters[f])) return 1;
    return n_filters == 0;
}

int main(int argc, char **argv) {
    const char *root = getenv("UNMASK_ROOT");
    if (root && chdir(root) != 0) { perror(root); return 2; }
    setvbuf(stdout, NULL, _IOLBF, 0);
    int passed = 0, failed = 0, skipped = 0;
    wd_start();
    for (int i = 0; i < g_n; i++) {
        if (!selected(i, argc - 1, argv + 1)) continue;
        g_cur_failed = g_cur_skipped = 0;
        wd_set(i);
        g_tests[i].fn();
        wd_set(-1);
        const char *tag = g_cur_failed ? "FAIL" : g_cur_skipped ? "skip" : "ok  ";
        fprintf(stdout, "%s %s\n", tag, g_tests[i].name);
        if (g_cur_failed) failed++;
        else if (g_cur_skipped) skipped++;
        else passed++;
    }
    fprintf(stdout, "unit: %d passed, %d failed, %d skipped\n", passed, failed, skipped);
    return failed ? 1 : 0;
}

/* The watchdog is armed by default; with UNIT_WATCHDOG_PROBE set this test hangs on
 * purpose, for tests/cli/basic.sh to see the watchdog end the run and name it. */
TEST(harness_watchdog) {
    if (getenv("UNIT_WATCHDOG_PROBE"))
        for (;;) pause();
    const char *v = getenv("UNIT_TIMEOUT");
    CHECK_EQ(wd_limit, v && *v ? strtol(v, NULL, 10) : 900);
}
