/*
 * model: a diffusion LM loaded from a GGUF file: hyper-parameters, architecture flags and the
 * weights bound by name with their shapes checked.
 *
 * Invariants after model_open() succeeds: every required tensor exists with the shape the
 * hyper-parameters imply, every weight's type is one unmask computes with, and the mapping
 * outlives the model. Weight matrices are um_weight views (type, n_in, n_out, data); the
 * compute side (forward.c) prepares its own packed copies for its kernels. Nothing here allocates per step.
 */
#ifndef UM_MODEL_H
#define UM_MODEL_H

#include <stdbool.h>
#include <stdint.h>

#include "arch.h"
#include "gguf.h"
#include "util.h"

/* A weight matrix W of shape (n_out, n_in): row r holds the n_in inputs of output r,
 * stored in the file's type (ggml ne[0] = n_in, ne[1] = n_out). For expert tensors
 * (ne[2] = n_expert) one um_weight describes one expert's slice. */
typedef struct um_weight {
    const char *name;           /* tensor name, for messages (points into the mapping's copy) */
    uint32_t    type;           /* um_type */
    int64_t     n_in, n_out;
    const void *data;           /* n_out rows of row_bytes */
    uint64_t    row_bytes;
} um_weight;

/* A 1-D float vector (norm weights, biases), converted to f32 once at load. */
typedef const float *um_vec;

typedef struct um_hparams {
    int32_t n_vocab;
    int32_t n_ctx_train;        /* context the model was trained for */
    int32_t n_embd;
    int32_t n_layer;            /* layers run (the file's block_count less n_layer_nextn) */
    int32_t n_head, n_head_kv;
    int32_t head_dim;           /* per head, Q/K/V */
    int32_t n_rot;              /* rotary dims (<= head_dim) */
    int32_t n_ff;               /* dense FFN width */
    int32_t n_expert, n_expert_used, n_ff_exp;
    int32_t n_layer_dense_lead; /* the first layers are dense FFNs (n_ff), the rest MoE */
    int32_t n_expert_shared;    /* shared experts, always on, fused into one FFN of n_ff_shexp */
    int32_t n_ff_shexp;         /* width of that FFN (all shared experts together), 0 if none */
    int32_t n_expert_groups;    /* group-limited routing: experts in n_expert_groups equal groups, */
    int32_t n_group_used;       /* of which the n_group_used best compete (0 = no groups) */
    bool    moe_sigmoid;        /* router gating: sigmoid, else softmax */
    bool    moe_norm_w;         /* renormalise the chosen experts' weights to sum 1 */
    int32_t n_layer_nextn;      /* trailing next-token-prediction layers in the file, ignored */
    float   rope_base;
    float   norm_eps;
    float   expert_weights_scale; /* 0 or 1 = none */
    bool    shift_logits;
    int32_t mask_id;            /* -1 if the file has none */
    int32_t block_size;         /* block-causal attention block length (arch->block_causal), else 0 */
    /* Gemma 4 / DiffusionGemma (arch->gemma4); per-layer geometry is in um_layer, and head_dim,
     * n_head_kv, n_rot above hold the largest layer's (buffer sizes) */
    int32_t n_swa;              /* sliding window: a sliding prompt row q sees keys q-n_swa < k <= q */
    int32_t canvas_length;      /* diffusion.canvas_length: the last rows of a pass are the canvas */
    float   softcap;            /* final_logit_softcapping: logits = c tanh(logits / c); 0 = none */
    int64_t nkv_max;            /* largest n_head_kv * head_dim over the layers */
    /* the file's sampler settings (diffusion.eb_*, llama.cpp's diffusion-cli defaults when absent) */
    int32_t eb_max_steps, eb_stability;
    float   eb_t_min, eb_t_max, eb_entropy_bound, eb_confidence;
    /* decoded by the uniform-state sampler: the architecture is (arch->uniform_state,
     * DiffusionGemma) or the file says so (UM_UNIFORM_STATE_KEY on a masked architecture,
     * which then gives canvas_length and the eb_* above too). Everything that decides the
     * decoding asks this; what is about DiffusionGemma's own pass asks the arch. */
    bool    uniform_state;
} um_hparams;

typedef struct um_layer {
    um_vec    attn_norm;        /* (n_embd) */
    um_weight wq, wk, wv, wo;   /* (n_head*hd, n_embd) (n_head_kv*hd, n_embd) x2 (n_embd, n_head*hd);
                                   with arch->fused_qkv, wq wk wv are row ranges of attn_qkv */
    um_vec    bq, bk, bv, bo;   /* optional biases, NULL when absent */
    um_vec    q_norm, k_norm;   /* (head_dim) when arch->qk_norm */
    um_vec    ffn_norm;         /* (n_embd) */
    /* dense FFN */
    um_weight ffn_gate, ffn_up, ffn_down;      /* (n_ff, n_embd) x2, (n_embd, n_ff) */
    um_vec    ffn_gate_b, ffn_up_b, ffn_down_b;
    /* MoE FFN */
    um_weight ffn_gate_inp;     /* router (n_expert, n_embd); data NULL on a dense layer */
    um_vec    exp_probs_b;      /* (n_expert) expert selection bias, or NULL */
    um_weight ffn_gate_shexp, ffn_up_shexp, ffn_down_shexp; /* (n_ff_shexp, n_embd) x2, (n_embd, n_ff_shexp); data NULL if none */
    um_weight *gate_exps, *up_exps, *down_exps; /* (n_expert) each: (n_ff_exp, n_embd) x2, (n_embd, n_ff_exp);
                                   Gemma 4's fused ffn_gate_up_exps binds as row views: gate rows [0, F), up [F, 2F) */
    /* Gemma 4 (arch->gemma4) */
    bool      swa;              /* sliding-window layer, else global */
    int32_t   head_dim, n_head_kv, n_rot;
    float     rope_base;        /* rope.freq_base_swa on sliding layers, rope.freq_base on global ones */
    bool      v_from_k;         /* no attn_v (global layers): V is the raw K projection */
    um_vec    attn_post_norm, ffn_post_norm;                  /* (n_embd) */
    um_vec    ffn_pre_norm_2, ffn_post_norm_1, ffn_post_norm_2; /* (n_embd) MoE input, dense out, MoE out */
    um_vec    ffn_gate_inp_s;   /* (n_embd) router input scale */
    um_vec    down_exps_s;      /* (n_expert) per-expert output scale, or NULL */
    um_vec    out_scale, enc_out_scale; /* (1) layer scalar for canvas rows / prompt rows */
} um_layer;

typedef struct um_model {
    gguf_file     *gguf;
    const um_arch *arch;
    um_hparams     hp;
    char           name[128];   /* general.name or the file name */
    uint32_t       ftype_main;  /* most common weight type, for display */
    um_weight      tok_embd;    /* (n_vocab, n_embd): row = token embedding */
    um_vec         output_norm; /* (n_embd) */
    um_weight      output;      /* (n_vocab, n_embd), may alias tok_embd */
    um_vec         output_b;    /* optional (n_vocab) */
    um_layer      *layers;      /* (n_layer) */
    /* Gemma 4 self-conditioning MLP (optional in the file; NULL data: no self-conditioning) */
    um_vec         sc_pre_norm; /* (n_embd) */
    um_weight      sc_gate, sc_up, sc_down; /* (n_ff, n_embd) x2, (n_embd, n_ff) */
    um_vec         rope_freqs;  /* (rope_freqs_n) Gemma 4 global layers' RoPE frequency divisors */
    int32_t        rope_freqs_n;
    bool           rope_freqs_bound;
    float         *vec_arena;   /* all um_vec storage, one allocation */
    uint64_t       file_bytes;
} um_model;

/* unmask's own key (docs/models.md): true makes a file of a masked architecture (llada, ...)
 * a uniform-state model, decoded by the same sampler as DiffusionGemma, with its settings in
 * the diffusion.* keys (canvas_length required). */
#define UM_UNIFORM_STATE_KEY "unmask.uniform_state"

/* Whether a file of architecture a decodes uniform-state: a->uniform_state, or the key is
 * true. A key that is not a bool is an error naming it. The loader and `unmask info` both
 * ask this, so they never disagree. */
int  model_gguf_uniform_state(const gguf_file *g, const um_arch *a, bool *uniform, um_err *e);

/* Open and validate. On failure *out is NULL and e names the problem (missing tensor, wrong
 * shape, unknown architecture with the supported list, unsupported type...). */
int  model_open(um_model **out, const char *path, um_err *e);
/* Same over an already opened GGUF (takes ownership of g, also on failure). */
int  model_from_gguf(um_model **out, gguf_file *g, um_err *e);
void model_close(um_model *m);

typedef struct tokenizer tokenizer;
/* The one verdict on whether a file runs: every command that decodes loads its model through
 * this, and `unmask info` prints its reason on the "runnable" line, so the two never disagree.
 * model_from_gguf (weights present, architecture, hyper-parameters, every tensor), then what
 * decoding needs beyond the weights: a mask token (uniform-state models have none), a tokenizer that loads (model,
 * pre-tokenizer, token strings and types) and has no more tokens than the embedding has rows,
 * and the file's own chat template (unmask.chat_template, chat.h), when it has one, parsing.
 * Takes ownership of g (closed on failure); messages do not name the file. */
int  model_load_runnable(um_model **m, tokenizer **tok, gguf_file *g, um_err *e);
/* The verdict alone, for PATH (a gguf_open failure names the file, as gguf_open does). */
int  model_check_runnable(const char *path, um_err *e);

/* Total bytes of weights, number of parameters. */
uint64_t model_param_count(const um_model *m);

#endif
