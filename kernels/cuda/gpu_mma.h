/*
 * gpu_mma: where each lane's registers sit in the warp-level tensor-core tiles the GEMMs
 * use (PTX mma.sync m16n8k32 / m16n8k16, ".row.col": A row-major (M, K), B column-major
 * (K, N), C (M, N)). g = lane / 4 ("groupID"), t = lane % 4 ("threadID_in_group").
 * The kernels address shared memory only through these helpers, and the CPU unit tests
 * (tests/test_gpu_host.c) check them element by element against the PTX ISA tables, so a
 * wrong index shows up without a GPU. Plain C; __host__ __device__ under nvcc.
 */
#ifndef UM_GPU_MMA_H
#define UM_GPU_MMA_H

#ifdef __CUDACC__
#define GPU_HD __host__ __device__
#else
#define GPU_HD
#endif

/* s8 m16n8k32, A (16 x 32 bytes): register r (0..3) holds 4 consecutive k bytes. */
static inline GPU_HD void gpu_frag_a_s8k32(int lane, int r, int *row, int *k) {
    *row = (lane >> 2) + (r & 1) * 8;
    *k = (lane & 3) * 4 + (r >> 1) * 16;
}
/* s8 m16n8k32, B (32 x 8): register r (0..1) holds 4 consecutive k bytes of column n. */
static inline GPU_HD void gpu_frag_b_s8k32(int lane, int r, int *n, int *k) {
    *n = lane >> 2;
    *k = (lane & 3) * 4 + r * 16;
}
/* s8 m16n8k16, A (16 x 16 bytes): register r (0..1). */
static inline GPU_HD void gpu_frag_a_s8k16(int lane, int r, int *row, int *k) {
    *row = (lane >> 2) + r * 8;
    *k = (lane & 3) * 4;
}
/* s8 m16n8k16, B (16 x 8): one register. */
static inline GPU_HD void gpu_frag_b_s8k16(int lane, int *n, int *k) {
    *n = lane >> 2;
    *k = (lane & 3) * 4;
}
/* f16/bf16 m16n8k16, A (16 x 16 halves): register r (0..3) holds 2 consecutive k halves. */
static inline GPU_HD void gpu_frag_a_h16(int lane, int r, int *row, int *k) {
    *row = (lane >> 2) + (r & 1) * 8;
    *k = (lane & 3) * 2 + (r >> 1) * 8;
}
/* f16/bf16 m16n8k16, B (16 x 8): register r (0..1) holds 2 consecutive k halves of column n. */
static inline GPU_HD void gpu_frag_b_h16(int lane, int r, int *n, int *k) {
    *n = lane >> 2;
    *k = (lane & 3) * 2 + r * 8;
}
/* C/D (16 x 8), s32 or f32: element i (0..3). */
static inline GPU_HD void gpu_frag_c(int lane, int i, int *row, int *n) {
    *row = (lane >> 2) + (i >> 1) * 8;
    *n = (lane & 3) * 2 + (i & 1);
}

#endif
