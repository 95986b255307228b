/*
 * test_cpu: run-time feature detection agrees with the kernel's own view (/proc/cpuinfo),
 * an independent source, for every feature unmask dispatches on.
 */
#include <stdbool.h>
#include <stdlib.h>

#include "cpu.h"
#include "harness.h"
#include "infile.h"
#include "util.h"

static bool cpuinfo_has(const char *flags, const char *name) {
    size_t n = strlen(name);
    for (const char *p = flags; (p = strstr(p, name)); p += n) {
        bool start = p == flags || p[-1] == ' ';
        bool end = p[n] == ' ' || p[n] == '\n' || p[n] == '\0';
        if (start && end) return true;
    }
    return false;
}

TEST(cpu_features_match_proc_cpuinfo) {
    char *info;
    size_t len;
    um_err e;
    if (infile_read("/proc/cpuinfo", (size_t)1 << 30, &info, &len, &e) != UM_OK) { th_skip("no /proc/cpuinfo"); return; }
    const um_cpu *c = cpu_features();
#if defined(__aarch64__)
    /* "Features : fp asimd ... asimddp ... i8mm"; under user-mode QEMU on an x86 host the
       file is the host's (no Features line): make test-arm64 checks detection instead by
       the emulated CPU's model (tools/test-arm64.sh) */
    char *flags = strstr(info, "\nFeatures");
    if (!flags) { free(info); th_skip("no Features line in /proc/cpuinfo (emulated?)"); return; }
    struct { const char *flag; bool have; } rows[] = {
        { "asimd", c->neon }, { "asimddp", c->dotprod }, { "i8mm", c->i8mm },
    };
#else
    char *flags = strstr(info, "\nflags");
    if (!flags) { free(info); th_skip("no flags line in /proc/cpuinfo"); return; }
    struct { const char *flag; bool have; } rows[] = {
        { "avx2", c->avx2 }, { "fma", c->fma }, { "f16c", c->f16c },
        { "avx512f", c->avx512f }, { "avx512bw", c->avx512bw }, { "avx512vl", c->avx512vl },
        { "avx512_vnni", c->avx512vnni }, { "avx512_bf16", c->avx512bf16 }, { "avx_vnni", c->avx_vnni },
        { "amx_int8", c->amx_int8 || c->amx_denied }, { "amx_bf16", c->amx_bf16 || c->amx_denied },
    };
#endif
    char *eol = strchr(flags + 1, '\n');
    if (eol) *eol = '\0';
    int bad = 0;
    for (size_t i = 0; i < UM_ARRAY_LEN(rows); i++) {
        bool want = cpuinfo_has(flags, rows[i].flag);
        if (want != rows[i].have) {
            printf("    %s: cpuinfo says %d, detected %d\n", rows[i].flag, want, rows[i].have);
            bad++;
        }
    }
    free(info);
    CHECK_EQ(bad, 0);
}

TEST(cpu_counts_are_sane) {
    const um_cpu *c = cpu_features();
    CHECK(c->n_logical >= 1);
    CHECK(c->n_physical >= 1 && c->n_physical <= c->n_logical);
    CHECK(cpu_features() == c);   /* detected once */
    char buf[512];
    cpu_feature_string(c, buf, sizeof buf);
    if (c->avx2) CHECK_CONTAINS(buf, "avx2");
    if (c->dotprod) CHECK_CONTAINS(buf, "dotprod");
    if (c->i8mm) CHECK_CONTAINS(buf, "i8mm");
    if (c->amx_denied) CHECK(!c->amx_int8 && !c->amx_tile);
}
