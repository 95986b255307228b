/*
 * cpu: CPUID/XGETBV feature detection and the Linux AMX permission request (x86); hardware
 * capabilities from the kernel (AArch64: getauxval on Linux, sysctlbyname on macOS).
 *
 * A feature counts only if the CPU reports it and the OS saves its register state
 * (XCR0 bits): AVX needs YMM (bit 2), AVX-512 needs opmask/ZMM (bits 5-7), AMX needs
 * XTILECFG/XTILEDATA (bits 17-18) and, on Linux, a granted ARCH_REQ_XCOMP_PERM.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "cpu.h"

#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#define UM_X86 1
#elif defined(__aarch64__)
#define UM_ARM64 1
#if defined(__linux__)
#include <sys/auxv.h>
#ifndef HWCAP_ASIMDDP
#define HWCAP_ASIMDDP (1 << 20)       /* <asm/hwcap.h> */
#endif
#ifndef HWCAP2_I8MM
#define HWCAP2_I8MM (1 << 13)
#endif
#endif
#endif
#if defined(__APPLE__)
#include <sys/sysctl.h>
#endif

static um_cpu g_cpu;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

#ifdef UM_X86
static unsigned long long xgetbv0(void) {
    unsigned eax, edx;
    __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
    return ((unsigned long long)edx << 32) | eax;
}

#define ARCH_GET_XCOMP_PERM 0x1022
#define ARCH_REQ_XCOMP_PERM 0x1023
#define XFEATURE_XTILEDATA  18

static const char *request_amx_permission(void) {
#ifdef __linux__
    unsigned long bitmask = 0;
    if (syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) != 0)
        return "arch_prctl(ARCH_REQ_XCOMP_PERM) refused by the kernel";
    if (syscall(SYS_arch_prctl, ARCH_GET_XCOMP_PERM, &bitmask) != 0)
        return "arch_prctl(ARCH_GET_XCOMP_PERM) failed";
    if (!(bitmask & (1ul << XFEATURE_XTILEDATA)))
        return "kernel did not grant AMX tile data";
    return NULL;
#else
    return "AMX needs Linux arch_prctl permission";
#endif
}
#endif

static int count_physical_cores(int n_logical) {
#if defined(__APPLE__)
    int phys = 0;
    size_t len = sizeof phys;
    if (sysctlbyname("hw.physicalcpu", &phys, &len, NULL, 0) == 0 && phys > 0 && phys <= n_logical) return phys;
    return n_logical;
#endif
    /* Linux: count distinct (physical_package_id, core_id) pairs from sysfs; elsewhere the
       first fopen fails and every logical CPU counts as a core. */
    int seen_pkg[1024], seen_core[1024], n_seen = 0;
    for (int cpu = 0; cpu < n_logical && cpu < 1024; cpu++) {
        char path[128];
        int pkg = 0, core = -1;
        FILE *f;
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/topology/core_id", cpu);
        if (!(f = fopen(path, "r"))) return n_logical;
        if (fscanf(f, "%d", &core) != 1) core = cpu;
        fclose(f);
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/topology/physical_package_id", cpu);
        if ((f = fopen(path, "r"))) {
            if (fscanf(f, "%d", &pkg) != 1) pkg = 0;
            fclose(f);
        }
        int dup = 0;
        for (int i = 0; i < n_seen; i++)
            if (seen_pkg[i] == pkg && seen_core[i] == core) { dup = 1; break; }
        if (!dup) { seen_pkg[n_seen] = pkg; seen_core[n_seen] = core; n_seen++; }
    }
    return n_seen > 0 ? n_seen : n_logical;
}

#ifdef UM_ARM64
#if defined(__APPLE__)
static bool sysctl_flag(const char *name) {
    int v = 0;
    size_t n = sizeof v;
    return sysctlbyname(name, &v, &n, NULL, 0) == 0 && v != 0;
}
#endif

static void detect_arm64(um_cpu *c) {
    c->neon = true;                   /* Advanced SIMD is mandatory in AArch64 */
#if defined(__linux__)
    unsigned long hw = getauxval(AT_HWCAP), hw2 = getauxval(AT_HWCAP2);
    c->dotprod = (hw & HWCAP_ASIMDDP) != 0;
    c->i8mm = (hw2 & HWCAP2_I8MM) != 0;
    snprintf(c->brand, sizeof c->brand, "AArch64 (Linux)");
#elif defined(__APPLE__)
    c->dotprod = sysctl_flag("hw.optional.arm.FEAT_DotProd");
    c->i8mm = sysctl_flag("hw.optional.arm.FEAT_I8MM");
    size_t n = sizeof c->brand;
    if (sysctlbyname("machdep.cpu.brand_string", c->brand, &n, NULL, 0) != 0)
        snprintf(c->brand, sizeof c->brand, "AArch64 (macOS)");
#endif
}
#endif

static void detect(void) {
    um_cpu *c = &g_cpu;
    memset(c, 0, sizeof *c);
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    c->n_logical = n > 0 ? (int)n : 1;
    c->n_physical = count_physical_cores(c->n_logical);
    snprintf(c->brand, sizeof c->brand, "unknown CPU");
#ifdef UM_X86
    unsigned a, b, cx, d;
    if (!__get_cpuid(0, &a, &b, &cx, &d)) return;
    unsigned max_leaf = a;
    unsigned ecx1 = 0, ebx7 = 0, ecx7 = 0, edx7 = 0, eax7_1 = 0;
    if (__get_cpuid(1, &a, &b, &cx, &d)) ecx1 = cx;
    if (max_leaf >= 7) {
        __cpuid_count(7, 0, a, b, cx, d);
        ebx7 = b; ecx7 = cx; edx7 = d;
        __cpuid_count(7, 1, a, b, cx, d);
        eax7_1 = a;
    }
    bool osxsave = ecx1 & (1u << 27);
    unsigned long long xcr0 = osxsave ? xgetbv0() : 0;
    c->os_avx = (xcr0 & 0x6) == 0x6;
    c->os_avx512 = c->os_avx && (xcr0 & 0xe0) == 0xe0;
    c->os_amx = (xcr0 & 0x60000) == 0x60000;

    c->avx        = c->os_avx && (ecx1 & (1u << 28));
    c->fma        = c->avx && (ecx1 & (1u << 12));
    c->f16c       = c->avx && (ecx1 & (1u << 29));
    c->avx2       = c->avx && (ebx7 & (1u << 5));
    c->bmi2       = ebx7 & (1u << 8);
    c->avx512f    = c->os_avx512 && (ebx7 & (1u << 16));
    c->avx512dq   = c->avx512f && (ebx7 & (1u << 17));
    c->avx512bw   = c->avx512f && (ebx7 & (1u << 30));
    c->avx512vl   = c->avx512f && (ebx7 & (1u << 31));
    c->avx512vbmi = c->avx512f && (ecx7 & (1u << 1));
    c->avx512vnni = c->avx512f && (ecx7 & (1u << 11));
    c->avx512bf16 = c->avx512f && (eax7_1 & (1u << 5));
    c->avx_vnni   = c->avx2 && (eax7_1 & (1u << 4));
    c->amx_bf16   = c->os_amx && (edx7 & (1u << 22));
    c->amx_tile   = c->os_amx && (edx7 & (1u << 24));
    c->amx_int8   = c->os_amx && (edx7 & (1u << 25));

    if (c->amx_tile) {
        const char *why = request_amx_permission();
        if (why) {
            c->amx_denied = why;
            c->amx_tile = c->amx_int8 = c->amx_bf16 = false;
        }
    } else if (edx7 & (1u << 24)) {
        c->amx_denied = "the OS does not enable AMX state (XCR0)";
    }

    unsigned brand[12];
    if (__get_cpuid(0x80000000, &a, &b, &cx, &d) && a >= 0x80000004) {
        for (unsigned i = 0; i < 3; i++)
            __get_cpuid(0x80000002 + i, &brand[4 * i], &brand[4 * i + 1], &brand[4 * i + 2], &brand[4 * i + 3]);
        char s[49];
        memcpy(s, brand, 48);
        s[48] = '\0';
        const char *p = s;
        while (*p == ' ') p++;
        snprintf(c->brand, sizeof c->brand, "%s", p);
    }
#elif defined(UM_ARM64)
    detect_arm64(c);
#endif
}

const um_cpu *cpu_features(void) {
    pthread_once(&g_once, detect);
    return &g_cpu;
}

void cpu_feature_string(const um_cpu *c, char *buf, unsigned cap) {
    static const struct { const char *name; size_t off; } flags[] = {
#define F(n, m) { n, offsetof(um_cpu, m) }
        F("avx", avx), F("avx2", avx2), F("fma", fma), F("f16c", f16c), F("bmi2", bmi2),
        F("avx512f", avx512f), F("avx512bw", avx512bw), F("avx512vl", avx512vl),
        F("avx512dq", avx512dq), F("avx512vbmi", avx512vbmi), F("avx512vnni", avx512vnni),
        F("avx512bf16", avx512bf16), F("avx-vnni", avx_vnni), F("amx-tile", amx_tile),
        F("amx-int8", amx_int8), F("amx-bf16", amx_bf16),
        F("neon", neon), F("dotprod", dotprod), F("i8mm", i8mm),
#undef F
    };
    size_t n = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++) {
        if (!*(const bool *)((const char *)c + flags[i].off)) continue;
        int w = snprintf(buf + n, cap - n, "%s%s", n ? " " : "", flags[i].name);
        if (w < 0 || (size_t)w >= cap - n) break;
        n += (size_t)w;
    }
}
