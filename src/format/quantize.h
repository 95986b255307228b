/*
 * quantize: llama.cpp's quantization mixtures (Q4_K_M, Q5_K_M, Q6_K, Q8_0, ...) applied to
 * whole GGUF files.
 *
 * A mixture names a base tensor type plus llama-quantize's per-tensor rules (output head in
 * Q6_K, more bits for some attn_v / ffn_down layers, 1-D tensors and norms left alone,
 * fallbacks for rows that are not a whole number of blocks). um_quant_choose() reproduces
 * that choice tensor by tensor; um_quantize_file() writes the converted file with every
 * metadata key copied and general.file_type set to llama.cpp's ftype number.
 *
 * Invariants: the choice depends only on tensor names, shapes, types and a few hyper-
 * parameters (never on data), and visits tensors in llama.cpp's order (layer number, then
 * name), because some rules count tensors as they go.
 */
#ifndef UM_QUANTIZE_H
#define UM_QUANTIZE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util.h"

typedef struct um_mixture {
    const char *name;           /* llama-quantize's name: "Q4_K_M" */
    uint32_t    ftype;          /* LLAMA_FTYPE_* number, written as general.file_type */
    uint32_t    base_type;      /* ggml type most tensors get */
    const char *summary;        /* one line for --help */
} um_mixture;

/* Case-insensitive lookup; NULL if unknown. */
const um_mixture *um_mixture_find(const char *name);
/* The i-th supported mixture, NULL past the end (for listing). */
const um_mixture *um_mixture_at(size_t i);

/* What the per-tensor rules need to know about the model. */
typedef struct um_quant_model {
    char arch[64];              /* general.architecture */
    int  n_layer;               /* <arch>.block_count */
    int  n_head, n_head_kv;     /* layer 0's; n_head_kv defaults to n_head */
    int  n_expert;              /* <arch>.expert_count, 0 if absent */
} um_quant_model;

typedef struct um_quant_tensor {
    const char *name;
    uint64_t    ne[4];          /* elements per dim, ne[0] fastest; unused dims = 1 */
    uint32_t    type;           /* current ggml type */
} um_quant_tensor;

/* out[i] = the type llama-quantize gives tensor t[i] under mixture mix. Fails (with the
 * tensor's name) where llama.cpp would refuse, e.g. an expert tensor without a layer number. */
int um_quant_choose(const um_mixture *mix, const um_quant_model *m, const um_quant_tensor *t,
                    size_t n, uint32_t *out, um_err *e);

typedef struct um_quantize_opts {
    int  n_threads;             /* >= 1 */
    bool allow_requantize;      /* convert tensors that are already quantized */
    bool quiet;                 /* no per-tensor progress lines on stderr */
} um_quantize_opts;

/* Convert in_path to out_path (written atomically), tensors in llama-quantize's order. */
int um_quantize_file(const char *in_path, const char *out_path, const um_mixture *mix,
                     const um_quantize_opts *o, um_err *e);

#endif
