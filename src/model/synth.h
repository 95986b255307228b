/*
 * synth: random-weight models of every supported architecture, written as ordinary GGUF
 * files with unmask's writer. Tests, the peer comparison and the benchmarks use them: a
 * shape preset ("tiny-llada", "llada-8b", ...) fixes the hyper-parameters, a seed fixes the
 * weights, and one weight type (or llama-quantize's per-tensor choice for a mixture such as
 * Q4_K_M) fixes the encoding.
 *
 * The tokenizer is a byte-level BPE ("gpt2" model) whose first 256 tokens are the bytes
 * (GPT-2's byte-to-unicode mapping), followed by special tokens placed where the real
 * family puts them when the vocabulary is large enough (LLaDA: mask 126336, BOS 126080...).
 */
#ifndef UM_SYNTH_H
#define UM_SYNTH_H

#include <stdbool.h>
#include <stdint.h>

#include "util.h"

typedef struct um_synth_shape {
    const char *name;           /* preset name */
    const char *arch;           /* general.architecture */
    int32_t n_vocab, n_ctx, n_embd, n_layer, n_head, n_head_kv, head_dim, n_ff;
    int32_t n_expert, n_expert_used, n_ff_exp;
    float   rope_base, norm_eps;
    bool    qkv_bias;
    /* special token ids; -1 = next free id after the bytes */
    int32_t bos_id, eos_id, eot_id, mask_id;
    /* LLaDA2 (BailingMoeV2) extras, 0 for the other families */
    int32_t n_rot;              /* rotary dims (0: head_dim) */
    int32_t n_dense_lead;       /* leading dense layers (n_ff wide) */
    int32_t n_expert_shared;    /* shared experts of n_ff_exp each */
    int32_t n_expert_groups, n_group_used;
    float   expert_weights_scale;
    /* DiffusionGemma (Gemma 4): head_dim / n_head_kv above are the global layers', these the
     * sliding layers'; layer il is global when (il + 1) % swa_period == 0 (Gemma 4's 5:1 pattern) */
    int32_t head_dim_swa, n_head_kv_swa, n_swa, swa_period, canvas_length;
    float   rope_base_swa, softcap;
    float   rope_partial;       /* global layers rotate this fraction of their pairs (rope_freqs) */
    bool    fused_gate_up;      /* experts' gate and up in one ffn_gate_up_exps tensor */
} um_synth_shape;

const um_synth_shape *synth_find_shape(const char *name);
/* Comma-separated preset names for messages. */
const char *synth_shape_names(void);

typedef struct um_synth_opts {
    const um_synth_shape *shape;
    uint32_t         type;          /* type of every matrix when mixture is NULL */
    const char      *mixture;       /* llama-quantize mixture name ("Q4_K_M"), or NULL */
    uint64_t         seed;
    float            init_scale;    /* weight std-dev multiplier, 1 = default */
    bool             progress;      /* print progress to stderr */
} um_synth_opts;

int synth_write(const um_synth_opts *o, const char *path, um_err *e);

#endif
