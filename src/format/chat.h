/*
 * chat: turns a user prompt (and an optional system prompt) into the prompt text a model
 * family was fine-tuned on. The output holds special tokens as their text
 * ("<|im_start|>"), which the tokenizer recognises; it never adds or removes anything
 * the family's official template would not.
 *
 * Families and what they produce for system S, user U (the exact strings are in
 * docs/decoding.md and in tests/test_chat.c):
 *   llada      BOS <|start_header_id|>system<|end_header_id|>\n\n S <|eot_id|>   (when S)
 *                  <|start_header_id|>user<|end_header_id|>\n\n U <|eot_id|>
 *                  <|start_header_id|>assistant<|end_header_id|>\n\n
 *              (LLaDA-8B-Instruct's template: Llama-3 headers, contents trimmed, BOS once)
 *   llada-moe  <role>SYSTEM</role> S <|role_end|><role>HUMAN</role> U <|role_end|><role>ASSISTANT</role>
 *              (S defaults to "detailed thinking off", as inclusionAI's dInfer prompts it)
 *   dream      ChatML, system defaulting to "You are a helpful assistant."
 *   chatml     ChatML, no system block unless S is given
 *   rnd1       "Question: U\nAnswer:" (RND1-Base is not chat-tuned; its demo's task mode)
 *   none       U unchanged (S, if given, then a blank line, then U)
 *
 * BOS: only llada puts BOS in the text (LLaDA's template does, and its tokenizer adds
 * none); chat_has_bos() says so, and then the tokenizer must not add another.
 */
#ifndef UM_CHAT_H
#define UM_CHAT_H

#include <stdbool.h>
#include "util.h"

typedef enum um_chat {
    UM_CHAT_NONE = 0,
    UM_CHAT_LLADA,
    UM_CHAT_LLADA_MOE,
    UM_CHAT_DREAM,
    UM_CHAT_CHATML,
    UM_CHAT_RND1,
    UM_CHAT_COUNT
} um_chat;

/* "llada", "llada-moe", "dream", "chatml", "rnd1", "none" */
const char *chat_name(um_chat c);
int         chat_from_name(const char *name, um_chat *out, um_err *e);
/* The names above, separated by '|', for help texts and error messages. */
const char *chat_names(void);

/*
 * Pick the template for a model: arch "rnd1" first (a base model whose file may carry
 * its parent's chat template), then the file's tokenizer.chat_template by its special
 * tokens, then the architecture name. Either argument may be NULL.
 */
um_chat chat_detect(const char *chat_template, const char *arch);

/* True when chat_format's text for c already starts with the BOS token's text. */
bool chat_has_bos(um_chat c);

/*
 * Format one user turn (plus system) with the generation prompt for the assistant.
 * system: NULL or "" = the family's default (if any). bos_text: the text of the BOS
 * token (from the tokenizer), used by llada only; NULL = none. *out: heap string the
 * caller frees.
 */
int chat_format(um_chat c, const char *system, const char *user, const char *bos_text,
                char **out, um_err *e);

#endif
