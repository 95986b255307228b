/*
 * gpu_probe: the CUDA backend's device report (see src/model/gpu.h). Never fails hard: with no
 * driver or no device it says so in one line and returns 0.
 */
#include <cuda_runtime.h>
#include <stdio.h>

#include "gpu.h"

extern "C" int gpu_built(void) { return 1; }

extern "C" int gpu_describe(char *buf, size_t cap) {
    int n = 0;
    cudaError_t err = cudaGetDeviceCount(&n);
    if (err != cudaSuccess || n == 0) {
        snprintf(buf, cap, "no CUDA device: %s", err != cudaSuccess ? cudaGetErrorString(err) : "none found");
        return 0;
    }
    cudaDeviceProp p;
    if (cudaGetDeviceProperties(&p, 0) != cudaSuccess) {
        snprintf(buf, cap, "CUDA device 0: properties unavailable");
        return n;
    }
    snprintf(buf, cap, "%s, sm_%d%d, %.0f GiB%s", p.name, p.major, p.minor,
             (double)p.totalGlobalMem / (1024.0 * 1024.0 * 1024.0), n > 1 ? " (+ more)" : "");
    return n;
}
