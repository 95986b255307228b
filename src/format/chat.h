/*
 * chat: turns a user prompt (and an optional system prompt) into the prompt text a model
 * family was fine-tuned on. The output holds special tokens as their text
 * ("<|im_start|>"), which the tokenizer recognises; it never adds or removes anything
 * the family's official template would not for one user turn plus the generation prompt.
 *
 * Families and what they produce for system S, user U (the exact strings, typed from the
 * published templates, are in tests/test_chat.c; sources in docs/models.md):
 *   llada      BOS <|start_header_id|>system<|end_header_id|>\n\n S <|eot_id|>   (when S)
 *                  <|start_header_id|>user<|end_header_id|>\n\n U <|eot_id|>
 *                  <|start_header_id|>assistant<|end_header_id|>\n\n
 *              (LLaDA-8B-Instruct / LLaDA-1.5: Llama-3 headers, contents trimmed, BOS once)
 *   llada-moe  <role>SYSTEM</role> [S \n] detailed thinking off <|role_end|>
 *              <role>HUMAN</role> U <|role_end|> <role>ASSISTANT</role>
 *              (the Ling 2.0 template LLaDA-MoE and LLaDA 2.x ship: the SYSTEM turn is always
 *              there; S, when given, comes first, then a newline, then "detailed thinking off")
 *   llada2     the same text as llada-moe (LLaDA 2.0 / 2.1, tokenizer pre bailingmoe2), a name
 *              of its own so presets and `unmask info` say which family it is
 *   dream      ChatML, system defaulting to "You are a helpful assistant."
 *   chatml     ChatML, no system block unless S is given (Qwen3's template for one turn)
 *   rnd1       "Question: U\nAnswer:" (RND1-Base is not chat-tuned; its demo's task mode)
 *   gemma4     <|turn>system\n S <turn|>\n (when S) <|turn>user\n U <turn|>\n
 *              <|turn>model\n <|channel>thought\n<channel|>
 *              (Gemma 4's template, thinking off, as llama.cpp's models/templates/
 *              google-gemma-4-31B-it.jinja renders one user turn; contents trimmed; DiffusionGemma;
 *              BOS from the tokenizer, which always adds it for Gemma 4)
 *   none       U unchanged (S, if given, then a blank line, then U)
 *
 * BOS: only llada puts BOS in the text (LLaDA's template does, and its tokenizer adds
 * none); chat_has_bos() says so, and then the tokenizer must not add another.
 *
 * A user's own template (--chat-template-file FILE) is a small text file, read under
 * infile.h's rules (regular file, at most CHAT_FILE_MAX bytes); docs/models.md describes it:
 *
 *     # comment
 *     system    = "<|im_start|>system\n{system}<|im_end|>\n"    # optional; {system} once
 *     no_system = ""                     # optional: the text when there is no system prompt
 *     user      = "<|im_start|>user\n{user}<|im_end|>\n"        # required; {user} once
 *     assistant = "<|im_start|>assistant\n"                     # required: generation prompt
 *     bos       = tokenizer              # tokenizer (default) | text | none
 *     trim      = no                     # yes: strip whitespace around S and U (jinja | trim)
 *
 * Values are double-quoted with the escapes \n \t \r \\ \" (no others); each key at most once.
 * Errors are one line, "FILE:LINE: what".
 */
#ifndef UM_CHAT_H
#define UM_CHAT_H

#include <stdbool.h>
#include <stddef.h>
#include "gguf.h"
#include "util.h"

typedef enum um_chat {
    UM_CHAT_NONE = 0,
    UM_CHAT_LLADA,
    UM_CHAT_LLADA_MOE,
    UM_CHAT_LLADA2,
    UM_CHAT_DREAM,
    UM_CHAT_CHATML,
    UM_CHAT_RND1,
    UM_CHAT_GEMMA4,
    UM_CHAT_COUNT
} um_chat;

/* "llada", "llada-moe", "llada2", "dream", "chatml", "rnd1", "gemma4", "none" */
const char *chat_name(um_chat c);
int         chat_from_name(const char *name, um_chat *out, um_err *e);
/* The names above, separated by '|', for help texts and error messages. */
const char *chat_names(void);

/*
 * Pick the template for a model: the file's tokenizer.chat_template when it is one unmask
 * renders exactly (recognised by its special tokens: Llama-3 headers -> llada; <role>HUMAN</role>
 * with <|role_end|> -> llada2 for arch "llada2", else llada-moe; <|im_start|> -> dream when it
 * holds Qwen2.5's default system, else chatml), otherwise the architecture's own template
 * (llada, llada-moe, llada2, dream, rnd1). This holds for RND1 too: its file's template is used
 * when recognised. Either argument may be NULL.
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

/* ------------------------------------------------ a template read from a file */

#define CHAT_FILE_MAX ((size_t)64 << 10)     /* a template file: 64 KiB */

typedef struct chat_custom chat_custom;

/* Read and check the template file at path (infile.h rules, at most CHAT_FILE_MAX bytes). */
int  chat_template_load_file(const char *path, chat_custom **out, um_err *e);
/* The same from text in memory; file names the source in messages. */
int  chat_template_parse(const char *text, size_t len, const char *file, chat_custom **out, um_err *e);
/* As chat_format, with the file's strings. A system prompt with a template that has no
 * `system` line is an error naming the file. */
int  chat_custom_format(const chat_custom *t, const char *system, const char *user, const char *bos_text,
                        char **out, um_err *e);
/* True when the tokenizer must not add BOS: the file says bos = text (the text holds it)
 * or bos = none. */
bool chat_custom_has_bos(const chat_custom *t);
/* The file it was read from (for `unmask info` and messages). */
const char *chat_custom_file(const chat_custom *t);
void chat_custom_free(chat_custom *t);

/* ------------------------------------------------ the template a model file asks for */

/* A GGUF file may carry its own template: this key, a string holding the text of a template
 * file (above). It is unmask's own key; llama.cpp and other readers ignore it. */
#define CHAT_GGUF_KEY "unmask.chat_template"

typedef struct chat_choice {
    um_chat      chat;          /* the family, when own is NULL */
    chat_custom *own;           /* the file's CHAT_GGUF_KEY parsed; NULL when it has none (caller frees) */
    const char  *from;          /* what decided: CHAT_GGUF_KEY, "tokenizer.chat_template" (a template
                                   recognised), "general.architecture" (a template unmask does not
                                   render: the architecture's own), or NULL (no template: none) */
} chat_choice;

/*
 * The template a run uses when it names none (no --chat-template, --chat-template-file,
 * --no-chat or preset chat_template): the file's own CHAT_GGUF_KEY when it has one, else
 * chat_detect over tokenizer.chat_template and arch, else (a file with no template at all: a
 * raw LM such as the bundled demo model) none. A CHAT_GGUF_KEY that is not a string, is over
 * CHAT_FILE_MAX bytes or does not parse is an error, one line naming the key (and the line in
 * it): "FILE: unmask.chat_template:2: ...", file naming the GGUF ("unmask.chat_template:2: ..."
 * when file is NULL); the parsed template keeps that name for later messages.
 */
int chat_from_gguf(const gguf_file *g, const char *arch, const char *file, chat_choice *out, um_err *e);

#endif
