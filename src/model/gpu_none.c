/*
 * gpu_none: the answers of a build without the CUDA backend.
 */
#include "gpu.h"

#include <stdio.h>

#ifndef UM_HAVE_CUDA
int gpu_built(void) { return 0; }

int gpu_describe(char *buf, size_t cap) {
    snprintf(buf, cap, "no CUDA (built without nvcc)");
    return 0;
}
#else
typedef int um_gpu_none_unused;   /* ISO C forbids an empty translation unit */
#endif

#ifndef UM_HAVE_CUDA
#include "backend.h"

int gpu_backend_open(um_backend *out, const um_model *m, int max_tokens, um_err *e) {
    (void)out; (void)m; (void)max_tokens;
    return um_errf(e, "this unmask was built without CUDA (nvcc was not found at build time)");
}
#endif
