/*
 * gpu: what the (optional) CUDA backend reports about the machine's GPUs.
 * Built from the .cu files in kernels/ when nvcc is present (UM_HAVE_CUDA); otherwise src/model/gpu_none.c
 * answers "no CUDA" so the rest of unmask never needs an #ifdef.
 */
#ifndef UM_GPU_H
#define UM_GPU_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* 1 if this binary was built with the CUDA backend. */
int gpu_built(void);
/* Fill buf with one line describing the first device ("NVIDIA H200, sm_90, 139 GiB")
 * or why there is none ("no CUDA device: ..."). Returns the device count (0 if none). */
int gpu_describe(char *buf, size_t cap);

#ifdef __cplusplus
}
#endif
#endif
