/*
 * matmul_avxvnni: the 256-bit kernels with AVX-VNNI vpdpbusd (see matmul_k256.h). Called
 * only when the CPU has AVX-VNNI.
 */
#define MM_VNNI 1
#define MM_CHUNK_FN mm_chunk_avxvnni
#include "matmul_k256.h"
