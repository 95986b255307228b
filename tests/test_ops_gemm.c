/*
 * test_ops_gemm: ops_gemm_acc (y += a b, each element a chain of fused multiply-adds in k
 * order) on every kernel set this CPU has, bit for bit against the scalar reference, and the
 * reference against a double sum. Split from test_ops.c (same conventions).
 */
#include "harness.h"
#include "ops.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define ULP (1.0 / 8388608.0)   /* 2^-23 */

/* n floats uniform in [-amp, amp) from a xorshift stream */
static float *rnd_buf(uint64_t *s, int64_t n, float amp) {
    float *p = malloc((size_t)(n > 0 ? n : 1) * sizeof *p);
    for (int64_t i = 0; i < n; i++) {
        *s ^= *s << 13; *s ^= *s >> 7; *s ^= *s << 17;
        p[i] = amp * ((float)((*s >> 40) * (1.0 / 8388608.0)) - 1.0f);
    }
    return p;
}

/* y += a b on every kernel set, bit for bit with the reference (each element one chain of
 * fused multiply-adds in k order), over row and column tails of every tile width (4 rows;
 * 64, 24 and 16 columns), leading dimensions wider than the rows (the gaps must stay as they
 * were), threaded and not; and the reference against a double sum. */
TEST(ops_gemm_acc_all_isas) {
    static const int ns[] = { 1, 3, 4, 5, 9 }, ks[] = { 1, 7, 64 }, ms[] = { 1, 5, 16, 17, 24, 63, 64, 65, 130 };
    um_pool *pool = pool_new(3);
    int shapes = 0;
    for (size_t ni = 0; ni < UM_ARRAY_LEN(ns); ni++)
        for (size_t ki = 0; ki < UM_ARRAY_LEN(ks); ki++)
            for (size_t mi = 0; mi < UM_ARRAY_LEN(ms); mi++) {
                const int n = ns[ni], k = ks[ki], m = ms[mi];
                const int64_t lda = k + 1, ldb = m + 5, ldy = m + 3;
                uint64_t seed = (uint64_t)(n * 1000 + k * 10 + m) * 0x9E3779B97F4A7C15ull + 1;
                float *a = rnd_buf(&seed, n * lda, 1.0f), *b = rnd_buf(&seed, k * ldb, 4.0f), *y0 = rnd_buf(&seed, n * ldy, 2.0f);
                float *ref = malloc(sizeof(float) * n * ldy), *y = malloc(sizeof(float) * n * ldy);
                memcpy(ref, y0, sizeof(float) * n * ldy);
                ops_gemm_acc_ref(ref, ldy, a, lda, b, ldb, n, k, m);
                double worst_d = 0;
                for (int i = 0; i < n; i++)
                    for (int j = 0; j < m; j++) {
                        double s = y0[i * ldy + j];
                        for (int kk = 0; kk < k; kk++) s += (double)a[i * lda + kk] * b[kk * ldb + j];
                        double d = fabs(s - ref[i * ldy + j]);
                        if (d > worst_d) worst_d = d;
                    }
                /* |terms| <= 4, |y0| <= 2: k + 1 roundings of partial sums below 4k + 2 */
                CHECK_MSG(worst_d <= (k + 1) * (4.0 * k + 2) * ULP, "ref %dx%dx%d: %.3g from the double sum", n, k, m, worst_d);
                for (int i = 0; i < n; i++)
                    for (int j = m; j < ldy; j++) CHECK(ref[i * ldy + j] == y0[i * ldy + j]);
                for (um_ops_isa isa = UM_OPS_REF; isa < UM_OPS_ISA_COUNT; isa++) {
                    if (!ops_isa_available(isa) || ops_select(isa, NULL) != UM_OK) continue;
                    for (int threaded = 0; threaded < 2; threaded++) {
                        memcpy(y, y0, sizeof(float) * n * ldy);
                        ops_gemm_acc(threaded ? pool : NULL, y, ldy, a, lda, b, ldb, n, k, m);
                        CHECK_MSG(!memcmp(y, ref, sizeof(float) * n * ldy), "%s %dx%dx%d%s: not the reference's bits",
                                  ops_isa_name(isa), n, k, m, threaded ? " threaded" : "");
                    }
                }
                free(a); free(b); free(y0); free(ref); free(y);
                shapes++;
            }
    ops_select(ops_isa_best(), NULL);
    pool_free(pool);
    CHECK_EQ(shapes, 135);
}

