/*
 * cpu: CPU features detected at run time, in one place.
 *
 * cpu_detect() runs once (thread-safe, idempotent). On x86 it reads CPUID/XGETBV and, when
 * the CPU has AMX, asks Linux for permission to use AMX tile data (arch_prctl
 * ARCH_REQ_XCOMP_PERM); if that request fails, every AMX flag is cleared and
 * cpu_features()->amx_denied says why, so no kernel ever touches tiles without permission.
 * On AArch64 it reads the kernel's hardware capabilities (Linux getauxval(AT_HWCAP /
 * AT_HWCAP2)) or the sysctl hw.optional.arm.FEAT_* keys (macOS). Flags of the other
 * architecture stay false.
 */
#ifndef UM_CPU_H
#define UM_CPU_H

#include <stdbool.h>

typedef struct um_cpu {
    bool avx, avx2, fma, f16c, bmi2;
    bool avx512f, avx512bw, avx512vl, avx512dq, avx512vnni, avx512bf16, avx512vbmi;
    bool avx_vnni;
    bool amx_tile, amx_int8, amx_bf16;
    bool os_avx, os_avx512, os_amx;   /* OS saves the register state (XCR0) */
    bool neon;                        /* AArch64 Advanced SIMD (always there on AArch64) */
    bool dotprod;                     /* SDOT/UDOT (FEAT_DotProd: Apple M1+, Neoverse N1+) */
    bool i8mm;                        /* SMMLA (FEAT_I8MM: Apple M2+, Graviton 3/4) */
    const char *amx_denied;           /* NULL, or why AMX was disabled */
    int  n_logical;                   /* online logical CPUs */
    int  n_physical;                  /* physical cores (best effort; >= 1) */
    char brand[64];
} um_cpu;

/* Detect once; every later call returns the same object. */
const um_cpu *cpu_features(void);

/* "avx2 fma f16c avx512f ... amx-int8" (only features that are usable). */
void cpu_feature_string(const um_cpu *c, char *buf, unsigned cap);

#endif
