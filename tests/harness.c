/*
 * harness: the test runner behind tests/harness.h. Each test runs in order of
 * registration (with arguments, only those matching one); the summary line is what
 * `make test` and CI read.
 */
#include "harness.h"

#include <stdarg.h>
#include <stdlib.h>
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
    for (int i = 0; i < g_n; i++) {
        if (!selected(i, argc - 1, argv + 1)) continue;
        g_cur_failed = g_cur_skipped = 0;
        g_tests[i].fn();
        const char *tag = g_cur_failed ? "FAIL" : g_cur_skipped ? "skip" : "ok  ";
        fprintf(stdout, "%s %s\n", tag, g_tests[i].name);
        if (g_cur_failed) failed++;
        else if (g_cur_skipped) skipped++;
        else passed++;
    }
    fprintf(stdout, "unit: %d passed, %d failed, %d skipped\n", passed, failed, skipped);
    return failed ? 1 : 0;
}
