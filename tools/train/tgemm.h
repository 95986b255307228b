/*
 * tgemm: the float GEMM the trainer runs on, C (M,N) [+]= op(A) (M,K) * B (K,N).
 *
 * All matrices are row-major f32 with explicit row strides (elements). op(A) is A stored
 * (M,K), or with trans_a A stored (K,M) and read transposed. Kernels: AVX-512F (4 x 64
 * register tile), AVX2+FMA (4 x 32), and the plain C reference tgemm_ref that tests hold
 * them against. Each C element is computed by one thread summing k in increasing order, so
 * results do not depend on the thread count (training resumes bit-exactly).
 */
#ifndef UM_TRAIN_TGEMM_H
#define UM_TRAIN_TGEMM_H

#include <stdbool.h>

#include "pool.h"

typedef enum tgemm_kernel { TGEMM_REF, TGEMM_AVX2, TGEMM_AVX512 } tgemm_kernel;

/* Best kernel this CPU runs (the default for tgemm). */
tgemm_kernel tgemm_best(void);

void tgemm_k(tgemm_kernel kern, um_pool *p, int M, int N, int K,
             const float *A, int lda, bool trans_a, const float *B, int ldb,
             float *C, int ldc, bool accumulate);
/* tgemm_k with tgemm_best(). */
void tgemm(um_pool *p, int M, int N, int K, const float *A, int lda, bool trans_a,
           const float *B, int ldb, float *C, int ldc, bool accumulate);
/* Scalar reference, serial, sums in double. */
void tgemm_ref(int M, int N, int K, const float *A, int lda, bool trans_a,
               const float *B, int ldb, float *C, int ldc, bool accumulate);

#endif
