/*
 * tgemm: float GEMM for the trainer (see tgemm.h).
 *
 * Work is cut into blocks of TG_ROWS rows x TG_COLS columns of C handed out over the pool;
 * inside a block a register tile of 4 rows runs the whole k loop (B rows stream from cache,
 * A elements are broadcast). Edges that do not fill a tile go through the scalar loop, or
 * on AVX2 and AVX-512 machines through an 8-column version of it that gives the same bits
 * (narrow heads of 16 and sequences of 163 tokens are mostly edge). Other architectures
 * (AArch64) run the scalar loop only: the trainer is an x86 tool so far.
 */
#include "tgemm.h"

#include <stddef.h>

#if defined(__x86_64__) || defined(__i386__)
#define TG_X86 1
#include <immintrin.h>
#else
#define TG_X86 0
#endif

#define TG_ROWS 32
#define TG_COLS 256

typedef struct tg_job {
    tgemm_kernel kern;
    int M, N, K, lda, ldb, ldc;
    const float *A, *B;
    float *C;
    bool trans_a, acc;
    int n_cb;                   /* column blocks */
} tg_job;

static inline float a_at(const tg_job *j, int m, int k) {
    return j->trans_a ? j->A[(size_t)k * j->lda + m] : j->A[(size_t)m * j->lda + k];
}

/* scalar: C[m0..m1, n0..n1) in float, k ascending */
static void tile_scalar(const tg_job *j, int m0, int m1, int n0, int n1) {
    for (int m = m0; m < m1; m++) {
        float *c = j->C + (size_t)m * j->ldc;
        for (int n = n0; n < n1; n++) {
            float s = j->acc ? c[n] : 0.0f;
            for (int k = 0; k < j->K; k++) s += a_at(j, m, k) * j->B[(size_t)k * j->ldb + n];
            c[n] = s;
        }
    }
}

#if TG_X86
__attribute__((target("avx512f")))
static void tile4x64_avx512(const tg_job *j, int m, int n) {
    __m512 c[4][4];
    for (int r = 0; r < 4; r++)
        for (int v = 0; v < 4; v++)
            c[r][v] = j->acc ? _mm512_loadu_ps(j->C + (size_t)(m + r) * j->ldc + n + 16 * v) : _mm512_setzero_ps();
    for (int k = 0; k < j->K; k++) {
        const float *b = j->B + (size_t)k * j->ldb + n;
        __m512 b0 = _mm512_loadu_ps(b), b1 = _mm512_loadu_ps(b + 16);
        __m512 b2 = _mm512_loadu_ps(b + 32), b3 = _mm512_loadu_ps(b + 48);
        for (int r = 0; r < 4; r++) {
            __m512 a = _mm512_set1_ps(a_at(j, m + r, k));
            c[r][0] = _mm512_fmadd_ps(a, b0, c[r][0]);
            c[r][1] = _mm512_fmadd_ps(a, b1, c[r][1]);
            c[r][2] = _mm512_fmadd_ps(a, b2, c[r][2]);
            c[r][3] = _mm512_fmadd_ps(a, b3, c[r][3]);
        }
    }
    for (int r = 0; r < 4; r++)
        for (int v = 0; v < 4; v++) _mm512_storeu_ps(j->C + (size_t)(m + r) * j->ldc + n + 16 * v, c[r][v]);
}

__attribute__((target("avx2,fma")))
static void tile4x32_avx2(const tg_job *j, int m, int n) {
    __m256 c[4][4];
    for (int r = 0; r < 4; r++)
        for (int v = 0; v < 4; v++)
            c[r][v] = j->acc ? _mm256_loadu_ps(j->C + (size_t)(m + r) * j->ldc + n + 8 * v) : _mm256_setzero_ps();
    for (int k = 0; k < j->K; k++) {
        const float *b = j->B + (size_t)k * j->ldb + n;
        __m256 b0 = _mm256_loadu_ps(b), b1 = _mm256_loadu_ps(b + 8);
        __m256 b2 = _mm256_loadu_ps(b + 16), b3 = _mm256_loadu_ps(b + 24);
        for (int r = 0; r < 4; r++) {
            __m256 a = _mm256_set1_ps(a_at(j, m + r, k));
            c[r][0] = _mm256_fmadd_ps(a, b0, c[r][0]);
            c[r][1] = _mm256_fmadd_ps(a, b1, c[r][1]);
            c[r][2] = _mm256_fmadd_ps(a, b2, c[r][2]);
            c[r][3] = _mm256_fmadd_ps(a, b3, c[r][3]);
        }
    }
    for (int r = 0; r < 4; r++)
        for (int v = 0; v < 4; v++) _mm256_storeu_ps(j->C + (size_t)(m + r) * j->ldc + n + 8 * v, c[r][v]);
}

/* Edges on AVX2: rows m..m+nr (nr <= 4) x columns n..n+nc (nc <= 8) with masked loads and
 * a separate multiply and add per k, the operations of tile_scalar in the same order (the
 * scalar loop is compiled without contraction: -std=c11 keeps -ffp-contract=off), so an
 * edge gives the same bits as tile_scalar, only 8 columns at a time. */
__attribute__((target("avx2")))
static void tile_edge_avx2(const tg_job *j, int m, int nr, int n, int nc) {
    static const int32_t lanes[16] = { -1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0 };
    const __m256i mask = _mm256_loadu_si256((const __m256i *)(lanes + 8 - nc));
    __m256 c[4];
    for (int r = 0; r < nr; r++)
        c[r] = j->acc ? _mm256_maskload_ps(j->C + (size_t)(m + r) * j->ldc + n, mask) : _mm256_setzero_ps();
    for (int k = 0; k < j->K; k++) {
        __m256 b = _mm256_maskload_ps(j->B + (size_t)k * j->ldb + n, mask);
        for (int r = 0; r < nr; r++) c[r] = _mm256_add_ps(c[r], _mm256_mul_ps(_mm256_set1_ps(a_at(j, m + r, k)), b));
    }
    for (int r = 0; r < nr; r++) _mm256_maskstore_ps(j->C + (size_t)(m + r) * j->ldc + n, mask, c[r]);
}

/* C[m0..m1, n0..n1) through tile_edge_avx2 */
static void edge_avx2(const tg_job *j, int m0, int m1, int n0, int n1) {
    for (int m = m0; m < m1; m += 4)
        for (int n = n0; n < n1; n += 8) tile_edge_avx2(j, m, m1 - m < 4 ? m1 - m : 4, n, n1 - n < 8 ? n1 - n : 8);
}
#endif

static void block(void *arg, int64_t chunk, int thread_id) {
    const tg_job *j = arg;
    int m0 = (int)(chunk / j->n_cb) * TG_ROWS, n0 = (int)(chunk % j->n_cb) * TG_COLS;
    int m1 = m0 + TG_ROWS < j->M ? m0 + TG_ROWS : j->M;
    int n1 = n0 + TG_COLS < j->N ? n0 + TG_COLS : j->N;
#if TG_X86
    int w = j->kern == TGEMM_AVX512 ? 64 : j->kern == TGEMM_AVX2 ? 32 : 0;
#else
    int w = 0;
#endif
    if (!w) { tile_scalar(j, m0, m1, n0, n1); return; }
#if TG_X86
    int mv = m0 + (m1 - m0) / 4 * 4, nv = n0 + (n1 - n0) / w * w;
    for (int m = m0; m < mv; m += 4)
        for (int n = n0; n < nv; n += w) {
            if (w == 64) tile4x64_avx512(j, m, n);
            else tile4x32_avx2(j, m, n);
        }
    if (nv < n1) edge_avx2(j, m0, mv, nv, n1);
    if (mv < m1) edge_avx2(j, mv, m1, n0, n1);
#endif
}

tgemm_kernel tgemm_best(void) {
#if !TG_X86
    return TGEMM_REF;
#else
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) return TGEMM_AVX512;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return TGEMM_AVX2;
    return TGEMM_REF;
#endif
}

void tgemm_k(tgemm_kernel kern, um_pool *p, int M, int N, int K, const float *A, int lda, bool trans_a,
             const float *B, int ldb, float *C, int ldc, bool accumulate) {
    if (M <= 0 || N <= 0) return;
    tg_job j = { kern, M, N, K, lda, ldb, ldc, A, B, C, trans_a, accumulate, (N + TG_COLS - 1) / TG_COLS };
    int64_t n_chunks = (int64_t)((M + TG_ROWS - 1) / TG_ROWS) * j.n_cb;
    if (!p || n_chunks == 1) for (int64_t c = 0; c < n_chunks; c++) block(&j, c, 0);
    else pool_for(p, n_chunks, block, &j);
}

void tgemm(um_pool *p, int M, int N, int K, const float *A, int lda, bool trans_a,
           const float *B, int ldb, float *C, int ldc, bool accumulate) {
    static tgemm_kernel best = (tgemm_kernel)-1;
    if ((int)best < 0) best = tgemm_best();
    tgemm_k(best, p, M, N, K, A, lda, trans_a, B, ldb, C, ldc, accumulate);
}

void tgemm_ref(int M, int N, int K, const float *A, int lda, bool trans_a,
               const float *B, int ldb, float *C, int ldc, bool accumulate) {
    for (int m = 0; m < M; m++)
        for (int n = 0; n < N; n++) {
            double s = accumulate ? C[(size_t)m * ldc + n] : 0.0;
            for (int k = 0; k < K; k++) {
                float a = trans_a ? A[(size_t)k * lda + m] : A[(size_t)m * lda + k];
                s += (double)a * B[(size_t)k * ldb + n];
            }
            C[(size_t)m * ldc + n] = (float)s;
        }
}
