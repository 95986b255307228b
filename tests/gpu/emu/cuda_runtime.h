/*
 * A stand-in for <cuda_runtime.h> that lets kernels/cuda/gpu_backend.cu build and run on the
 * CPU (tests/gpu/emu-check.sh): "device" memory is host memory, copies are memcpy, the
 * stream is synchronous, graph capture reports itself unsupported (so the backend's
 * fallback runs). Only what gpu_backend.cu and gpu_kernels.cuh use. Not for production.
 */
#ifndef UM_EMU_CUDA_RUNTIME_H
#define UM_EMU_CUDA_RUNTIME_H

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

typedef enum cudaError { cudaSuccess = 0, cudaErrorInvalidValue = 1, cudaErrorMemoryAllocation = 2,
                         cudaErrorNotSupported = 801 } cudaError_t;
typedef enum cudaMemcpyKind { cudaMemcpyHostToHost = 0, cudaMemcpyHostToDevice = 1, cudaMemcpyDeviceToHost = 2,
                              cudaMemcpyDeviceToDevice = 3 } cudaMemcpyKind;
typedef enum cudaStreamCaptureMode { cudaStreamCaptureModeGlobal = 0, cudaStreamCaptureModeThreadLocal = 1 } cudaStreamCaptureMode;
typedef struct emu_stream *cudaStream_t;
typedef struct emu_graph *cudaGraph_t;
typedef struct emu_graph_exec *cudaGraphExec_t;
#define cudaStreamNonBlocking 1u

typedef struct cudaDeviceProp {
    char   name[256];
    int    major, minor;
    size_t totalGlobalMem;
} cudaDeviceProp;

static inline const char *cudaGetErrorString(cudaError_t e) {
    return e == cudaSuccess ? "no error" : e == cudaErrorMemoryAllocation ? "out of memory"
         : e == cudaErrorNotSupported ? "operation not supported" : "invalid argument";
}
static inline cudaError_t cudaGetLastError(void) { return cudaSuccess; }
static inline cudaError_t cudaGetDeviceCount(int *n) { *n = 1; return cudaSuccess; }
static inline cudaError_t cudaSetDevice(int d) { (void)d; return cudaSuccess; }
static inline cudaError_t cudaGetDeviceProperties(cudaDeviceProp *p, int d) {
    (void)d;
    memset(p, 0, sizeof *p);
    strcpy(p->name, "host emulation");
    p->major = 9;
    p->totalGlobalMem = (size_t)64 << 30;
    return cudaSuccess;
}
static inline cudaError_t cudaMemGetInfo(size_t *free_b, size_t *total) {
    *free_b = (size_t)32 << 30;
    *total = (size_t)64 << 30;
    return cudaSuccess;
}
/* Allocations are poisoned (NaN bytes) so a kernel reading what nobody wrote shows up. */
static inline cudaError_t cudaMalloc(void **p, size_t n) {
    *p = malloc(n ? n : 1);
    if (!*p) return cudaErrorMemoryAllocation;
    memset(*p, 0xff, n);
    return cudaSuccess;
}
static inline cudaError_t cudaFree(void *p) { free(p); return cudaSuccess; }
static inline cudaError_t cudaMemcpy(void *d, const void *s, size_t n, cudaMemcpyKind k) {
    (void)k;
    memmove(d, s, n);
    return cudaSuccess;
}
static inline cudaError_t cudaMemcpyAsync(void *d, const void *s, size_t n, cudaMemcpyKind k, cudaStream_t st) {
    (void)st;
    return cudaMemcpy(d, s, n, k);
}
static inline cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned f) {
    (void)f;
    *s = (cudaStream_t)malloc(1);
    return cudaSuccess;
}
static inline cudaError_t cudaStreamSynchronize(cudaStream_t s) { (void)s; return cudaSuccess; }
static inline cudaError_t cudaStreamDestroy(cudaStream_t s) { free(s); return cudaSuccess; }
static inline cudaError_t cudaStreamBeginCapture(cudaStream_t s, cudaStreamCaptureMode m) {
    (void)s; (void)m;
    return cudaErrorNotSupported;
}
static inline cudaError_t cudaStreamEndCapture(cudaStream_t s, cudaGraph_t *g) { (void)s; *g = NULL; return cudaErrorNotSupported; }
static inline cudaError_t cudaGraphInstantiate(cudaGraphExec_t *e, cudaGraph_t g, unsigned long long f) {
    (void)g; (void)f; *e = NULL;
    return cudaErrorNotSupported;
}
static inline cudaError_t cudaGraphLaunch(cudaGraphExec_t e, cudaStream_t s) { (void)e; (void)s; return cudaErrorNotSupported; }
static inline cudaError_t cudaGraphDestroy(cudaGraph_t g) { (void)g; return cudaSuccess; }
static inline cudaError_t cudaGraphExecDestroy(cudaGraphExec_t e) { (void)e; return cudaSuccess; }

#endif
