/*
 * matmul_avx2: the 256-bit kernels without VNNI (vpmaddubsw + vpmaddwd), see
 * matmul_k256.h. The row decoders, unpacker, quantizer and scale tables they use are in
 * x86_shared_avx2.c.
 */
#define MM_VNNI 0
#define MM_CHUNK_FN mm_chunk_avx2
#include "matmul_k256.h"
