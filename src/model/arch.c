/*
 * arch: the architecture table. Facts from each family's reference model and llama.cpp's
 * loaders (src/models/{llada,dream,llada-moe,rnd1}.cpp in llama.cpp v0.4.0):
 * - llada: Llama layout, no biases (optional attn_output/ffn biases are honoured), RoPE
 *   normal, untied head (tied fallback allowed), LLaDA's converter writes shift_logits=false.
 * - dream: Qwen2.5 layout, Q/K/V biases, GQA, RoPE NeoX, shifted logits.
 * - llada-moe: OLMoE layout, QK-norm, RoPE NeoX, softmax router top-k without renormalising.
 * - rnd1: Qwen3-MoE layout, QK-norm, RoPE NeoX, softmax router top-k renormalised, shifted
 *   logits (llama.cpp's default; RND1's converter writes the key).
 * - llada2 (LLaDA 2.0/2.1, inclusionAI): the BailingMoeV2 layout as llama.cpp PR #17454 writes it
 *   (convert_hf_to_gguf.py LLaDA2MoeModel(BailingMoeV2Model), src/models/llada2.cpp in
 *   github.com/wsbagnsv1/llama.cpp; llama.cpp's own src/models/bailingmoe2.cpp): fused attn_qkv,
 *   per-head QK-norm, partial NeoX RoPE, leading dense layers, sigmoid router with selection bias
 *   (exp_probs_b), group-limited top-k, renormalised and scaled weights, shared experts, unshifted
 *   logits (the converter writes diffusion.shift_logits = false), untied head. Attention is
 *   block-causal (modeling_llada2_moe.py generate(): a lower-triangular block mask over blocks of
 *   block_length from position 0, prompt included). Family defaults from that generate():
 *   mask_id 156895, block_length 32 (eos 156892).
 * - diffusion-gemma (DiffusionGemma, Google; GGUF from the llama.cpp port in PR #24423, read at
 *   unslothai/llama.cpp refs/pins/c3fb9724: src/models/diffusion-gemma.cpp, gemma4-common.h,
 *   conversion/diffusion_gemma.py): Gemma 4 MoE backbone, NeoX RoPE (llama-model.cpp's rope-type
 *   table lists LLM_ARCH_DIFFUSION_GEMMA under NEOX), output tied to token_embd, no mask token
 *   (uniform-state: the canvas starts from random tokens), logits unshifted (logit i scores
 *   position i). Everything else comes from the file's keys (docs/models.md, DiffusionGemma).
 * Optional tensors (biases) are detected per file, not flagged here. Routing details that the file
 * states (gating function, weight normalisation, expert groups) come from its keys (model.c).
 */
#include "arch.h"

#include <string.h>

static const um_arch g_archs[] = {
    { .name = "llada", .family = "LLaDA", .rope_neox = false, .qk_norm = false, .moe = false,
      .shift_logits = false, .output_optional = true, .default_chat = "llada" },
    { .name = "dream", .family = "Dream", .rope_neox = true, .qk_norm = false, .moe = false,
      .shift_logits = true, .output_optional = true, .default_chat = "dream" },
    { .name = "llada-moe", .family = "LLaDA-MoE", .rope_neox = true, .qk_norm = true, .moe = true,
      .router = UM_ROUTER_SOFTMAX, .moe_norm_w = false, .shift_logits = false, .output_optional = false,
      .default_chat = "llada" },
    { .name = "rnd1", .family = "RND1", .rope_neox = true, .qk_norm = true, .moe = true,
      .router = UM_ROUTER_SOFTMAX, .moe_norm_w = true, .shift_logits = true, .output_optional = true,
      .default_chat = "rnd1" },
    { .name = "llada2", .family = "LLaDA2", .rope_neox = true, .qk_norm = true, .moe = true,
      .router = UM_ROUTER_SIGMOID, .moe_norm_w = true, .shift_logits = false, .output_optional = false,
      .default_chat = "llada2", .fused_qkv = true, .block_causal = true, .moe_from_keys = true,
      .default_mask_id = 156895, .default_block_size = 32 },
    { .name = "diffusion-gemma", .family = "DiffusionGemma", .rope_neox = true, .qk_norm = true, .moe = true,
      .router = UM_ROUTER_SOFTMAX, .moe_norm_w = true, .shift_logits = false, .output_optional = true,
      .default_chat = "gemma4", .gemma4 = true, .uniform_state = true },
};

const um_arch *arch_find(const char *name) {
    for (unsigned i = 0; i < sizeof g_archs / sizeof g_archs[0]; i++)
        if (!strcmp(g_archs[i].name, name)) return &g_archs[i];
    return NULL;
}

const char *arch_supported_list(void) {
    return "llada, dream, llada-moe, rnd1, llada2, diffusion-gemma";
}
