/*
 * arch: one description per supported model architecture, as data.
 *
 * Everything that differs between LLaDA, Dream, LLaDA-MoE, RND1 and LLaDA 2.x is a field here; the
 * loader (model.c) and the forward pass (forward.c) read these flags and never test an
 * architecture name. Hyper-parameters are not here: they come from the file.
 * Tensor names follow llama.cpp's GGUF naming (blk.N.attn_q.weight, ...).
 */
#ifndef UM_ARCH_H
#define UM_ARCH_H

#include <stdbool.h>
#include <stdint.h>

typedef enum um_router {
    UM_ROUTER_SOFTMAX = 0,      /* softmax over all experts, then top-k */
    UM_ROUTER_SIGMOID = 1,      /* sigmoid scores, top-k */
} um_router;

typedef struct um_arch {
    const char  *name;          /* general.architecture value */
    const char  *family;        /* human name for messages */
    bool         rope_neox;     /* RoPE rotates halves (Qwen/Dream/OLMoE), else adjacent pairs (Llama/LLaDA) */
    bool         qk_norm;       /* per-head RMSNorm on Q and K before RoPE (attn_q_norm, attn_k_norm) */
    bool         moe;           /* FFN is a mixture of experts (ffn_gate_inp, ffn_*_exps) */
    um_router    router;
    bool         moe_norm_w;    /* renormalise the k selected weights to sum to 1 */
    bool         moe_from_keys; /* expert_gating_func / expert_weights_norm keys override router and
                                   moe_norm_w (llama.cpp reads them for BailingMoeV2/LLaDA2 only;
                                   its llada-moe and rnd1 graphs hard-code theirs) */
    bool         shift_logits;  /* default when diffusion.shift_logits is absent: score i by row i-1 */
    bool         output_optional; /* output.weight may be missing: tied to token_embd */
    const char  *default_chat;  /* chat template used when the file's is not recognised */
    bool         fused_qkv;     /* Q, K and V come from one blk.N.attn_qkv tensor, rows [Q; K; V] */
    bool         block_causal;  /* attention is block-causal over the canvas (LLaDA 2.x): each block of
                                   hp.block_size positions sees itself and every earlier block, so the
                                   K/V of finished blocks are final and the block cache is exact */
    int32_t      default_mask_id;   /* mask token when the file names none (0: none): LLaDA2's 156895 */
    int32_t      default_block_size; /* block length of block_causal attention unless the file says */
    bool         gemma4;        /* the Gemma 4 backbone as DiffusionGemma runs it (forward_gemma.c): per-layer
                                   sliding/global geometry, post-norms, GeGLU, a dense MLP beside the MoE,
                                   layer scalars, logit soft-cap, one region-aware [prompt | canvas] pass
                                   with self-conditioning; its hyper-parameters and tensors load apart
                                   (model.c, gemma_*) */
    bool         uniform_state; /* uniform-state diffusion: no mask token, the canvas holds random tokens
                                   that the sampler accepts or re-noises (docs/decoding.md) */
} um_arch;

/* The table entry for general.architecture, or NULL. */
const um_arch *arch_find(const char *name);
/* "llada, dream, llada-moe, rnd1, llada2, diffusion-gemma" for error messages. */
const char *arch_supported_list(void);

#endif
