/*
 * test_chat: the exact prompt text of every chat template family, typed from the published
 * templates (not produced by chat.c), with and without a system prompt; detection from GGUF
 * chat templates and architecture names; template names; template files (--chat-template-file):
 * their rendering, every malformed-file error with its line, and the input-file rules.
 *
 * Sources of the expected strings (docs/models.md lists them with links):
 *   LLaDA-8B-Instruct / LLaDA-1.5: tokenizer_config.json chat_template (Llama-3 headers, | trim,
 *     bos_token before the first message).
 *   LLaDA-MoE-7B-A1B-Instruct, LLaDA 2.x: the Ling 2.0 template (LLaDA2.1-flash
 *     tokenizer_config.json): '<role>SYSTEM</role>' + (system content + '\n' if any) +
 *     'detailed thinking off<|role_end|>', then '<role>HUMAN</role>' + content + '<|role_end|>',
 *     then '<role>ASSISTANT</role>'. The no-system string is also the prompt inclusionAI's dInfer
 *     builds by hand; the with-system one is the chat_example a llama.cpp server printed for
 *     that template (ik_llama.cpp issue #856).
 *   Dream-v0-Instruct-7B: Qwen2.5's ChatML with "You are a helpful assistant." as default system.
 *   RND1-Base-0910: demo_rnd_generation.py task mode, "Question: {prompt}\nAnswer:".
 */
#include "harness.h"
#include "chat.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static char *fmt(um_chat c, const char *sys, const char *user, const char *bos) {
    char *out = NULL;
    if (chat_format(c, sys, user, bos, &out, NULL) != UM_OK)
        return NULL;
    return out;
}

#define CHECK_FMT(c, sys, user, bos, want)              \
    do {                                                \
        char *_o = fmt((c), (sys), (user), (bos));      \
        CHECK_STREQ(_o, (want));                        \
        free(_o);                                       \
    } while (0)

TEST(chat_llada_strings) {
    /* LLaDA-8B-Instruct and LLaDA-1.5 (the same template): BOS once, Llama-3 headers, trimmed */
    CHECK_FMT(UM_CHAT_LLADA, NULL, "  Hi there\n", "<|startoftext|>",
              "<|startoftext|><|start_header_id|>user<|end_header_id|>\n\nHi there<|eot_id|>"
              "<|start_header_id|>assistant<|end_header_id|>\n\n");
    CHECK_FMT(UM_CHAT_LLADA, "Be brief.", "Hi", "<|startoftext|>",
              "<|startoftext|><|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|>"
              "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
              "<|start_header_id|>assistant<|end_header_id|>\n\n");
    CHECK_FMT(UM_CHAT_LLADA, " Be brief. ", "Hi", "<|startoftext|>",     /* the system text is trimmed too */
              "<|startoftext|><|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|>"
              "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
              "<|start_header_id|>assistant<|end_header_id|>\n\n");
    CHECK_FMT(UM_CHAT_LLADA, NULL, "Hi", NULL,
              "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
              "<|start_header_id|>assistant<|end_header_id|>\n\n");
    CHECK(chat_has_bos(UM_CHAT_LLADA));
}

TEST(chat_llada_moe_and_llada2_strings) {
    const um_chat fam[] = { UM_CHAT_LLADA_MOE, UM_CHAT_LLADA2 };
    for (int i = 0; i < 2; i++) {
        CHECK_FMT(fam[i], NULL, "Hi", "<|startoftext|>",        /* no BOS in the text */
                  "<role>SYSTEM</role>detailed thinking off<|role_end|>"
                  "<role>HUMAN</role>Hi<|role_end|><role>ASSISTANT</role>");
        CHECK_FMT(fam[i], "", "Hi", NULL,
                  "<role>SYSTEM</role>detailed thinking off<|role_end|>"
                  "<role>HUMAN</role>Hi<|role_end|><role>ASSISTANT</role>");
        CHECK_FMT(fam[i], "You are a helpful assistant", "Hello", NULL,
                  "<role>SYSTEM</role>You are a helpful assistant\ndetailed thinking off<|role_end|>"
                  "<role>HUMAN</role>Hello<|role_end|><role>ASSISTANT</role>");
        CHECK_FMT(fam[i], "You are terse.", " Hi ", NULL,           /* no trimming */
                  "<role>SYSTEM</role>You are terse.\ndetailed thinking off<|role_end|>"
                  "<role>HUMAN</role> Hi <|role_end|><role>ASSISTANT</role>");
        CHECK(!chat_has_bos(fam[i]));
    }
}

TEST(chat_chatml_strings) {
    CHECK_FMT(UM_CHAT_DREAM, NULL, "Hi", "<|endoftext|>",
              "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n"
              "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
    CHECK_FMT(UM_CHAT_DREAM, "", "Hi", NULL,         /* "" = the default system */
              "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n"
              "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
    CHECK_FMT(UM_CHAT_DREAM, "Talk like a pirate.", "Hi", NULL,
              "<|im_start|>system\nTalk like a pirate.<|im_end|>\n"
              "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
    CHECK_FMT(UM_CHAT_CHATML, NULL, " Hi ", NULL,   /* no default system, no trimming */
              "<|im_start|>user\n Hi <|im_end|>\n<|im_start|>assistant\n");
    CHECK_FMT(UM_CHAT_CHATML, "Be brief.", "Hi", NULL,
              "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
    CHECK(!chat_has_bos(UM_CHAT_DREAM));
}

TEST(chat_rnd1_and_none_strings) {
    CHECK_FMT(UM_CHAT_RND1, NULL, "What is 2+2?", NULL, "Question: What is 2+2?\nAnswer:");
    CHECK_FMT(UM_CHAT_RND1, NULL, "  Question: why?", NULL, "  Question: why?");
    CHECK_FMT(UM_CHAT_RND1, "Answer in French.", "Hi", NULL, "Answer in French.\n\nQuestion: Hi\nAnswer:");
    CHECK_FMT(UM_CHAT_NONE, NULL, "The sky is", NULL, "The sky is");
    CHECK_FMT(UM_CHAT_NONE, "Context.", "The sky is", NULL, "Context.\n\nThe sky is");
    CHECK_FMT(UM_CHAT_NONE, NULL, "", NULL, "");
    CHECK(!chat_has_bos(UM_CHAT_RND1));
}

/* Pieces of the published templates, as they appear in the files' tokenizer.chat_template */
static const char *llada_tmpl = "{% set loop_messages = messages %}{% for message in loop_messages %}"
    "{% set content = '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n'+ "
    "message['content'] | trim + '<|eot_id|>' %}";
static const char *qwen25_tmpl = "{%- else %}{{- '<|im_start|>system\\nYou are a helpful assistant.<|im_end|>\\n' }}";
static const char *qwen3_tmpl = "{%- for message in messages %}{{- '<|im_start|>' + message.role + '\\n' }}";
static const char *ling2_tmpl = "{% set thinking_option = 'off' %}\n{{- '<role>SYSTEM</role>' }}\n"
    "{{- 'detailed thinking ' + thinking_option + '<|role_end|>' }}\n"
    "{{- '<role>HUMAN</role>' + message.content + '<|role_end|>' }}";
/* Ling 1.x (llama.cpp's "bailing"): roles without <|role_end|>, a template unmask does not render */
static const char *ling1_tmpl = "{{ '<role>' + role + '</role>' + message['content'] }}{% if role == 'HUMAN' %}";

TEST(chat_detect_from_template_and_arch) {
    CHECK_EQ(chat_detect(llada_tmpl, "llada"), UM_CHAT_LLADA);
    CHECK_EQ(chat_detect(llada_tmpl, "llada-moe"), UM_CHAT_LLADA);   /* the file's template wins */
    CHECK_EQ(chat_detect(ling2_tmpl, "llada-moe"), UM_CHAT_LLADA_MOE);
    CHECK_EQ(chat_detect(ling2_tmpl, "llada2"), UM_CHAT_LLADA2);
    CHECK_EQ(chat_detect(ling2_tmpl, NULL), UM_CHAT_LLADA_MOE);
    CHECK_EQ(chat_detect(ling1_tmpl, "llada2"), UM_CHAT_LLADA2);     /* unknown text: the family's own */
    CHECK_EQ(chat_detect(ling1_tmpl, NULL), UM_CHAT_NONE);
    CHECK_EQ(chat_detect(qwen25_tmpl, "dream"), UM_CHAT_DREAM);
    CHECK_EQ(chat_detect(qwen3_tmpl, NULL), UM_CHAT_CHATML);
    CHECK_EQ(chat_detect(NULL, "llada"), UM_CHAT_LLADA);
    CHECK_EQ(chat_detect("", "llada-moe"), UM_CHAT_LLADA_MOE);
    CHECK_EQ(chat_detect(NULL, "llada2"), UM_CHAT_LLADA2);
    CHECK_EQ(chat_detect(NULL, "dream"), UM_CHAT_DREAM);
    CHECK_EQ(chat_detect(NULL, "llama"), UM_CHAT_NONE);
    CHECK_EQ(chat_detect(NULL, NULL), UM_CHAT_NONE);
}

TEST(chat_detect_rnd1_uses_a_known_file_template) {
    /* RND1's file may carry its parent's (Qwen3) template: a known one is used as it is ... */
    CHECK_EQ(chat_detect(qwen3_tmpl, "rnd1"), UM_CHAT_CHATML);
    CHECK_EQ(chat_detect(qwen25_tmpl, "rnd1"), UM_CHAT_DREAM);
    /* ... anything else (or none) gives RND1's own task format */
    CHECK_EQ(chat_detect("{{ messages[0].content }}", "rnd1"), UM_CHAT_RND1);
    CHECK_EQ(chat_detect(ling1_tmpl, "rnd1"), UM_CHAT_RND1);
    CHECK_EQ(chat_detect(NULL, "rnd1"), UM_CHAT_RND1);
    CHECK_EQ(chat_detect("", "rnd1"), UM_CHAT_RND1);
}

TEST(chat_names_round_trip) {
    for (int c = 0; c < UM_CHAT_COUNT; c++) {
        um_chat got;
        CHECK(chat_from_name(chat_name((um_chat)c), &got, NULL) == UM_OK);
        CHECK_EQ(got, c);
        CHECK_CONTAINS(chat_names(), chat_name((um_chat)c));
    }
    um_chat got;
    um_err e = { "" };
    CHECK(chat_from_name("vicuna", &got, &e) == UM_FAIL);
    CHECK_CONTAINS(e.msg, "vicuna");
    CHECK_CONTAINS(e.msg, "llada|llada-moe|llada2|dream|chatml|rnd1|gemma4|none");
    char *out = (char *)1;
    CHECK(chat_format(UM_CHAT_DREAM, NULL, NULL, NULL, &out, &e) == UM_FAIL);
    CHECK(out == NULL);
}

/* ------------------------------------------------------------------ template files */

static char *fmt_text(const char *file_text, const char *sys, const char *user, const char *bos, um_err *e) {
    chat_custom *t = NULL;
    char *out = NULL;
    if (chat_template_parse(file_text, strlen(file_text), "t.chat", &t, e) != UM_OK)
        return NULL;
    if (chat_custom_format(t, sys, user, bos, &out, e) != UM_OK)
        out = NULL;
    chat_custom_free(t);
    return out;
}

#define CHECK_FILE_FMT(text, sys, user, bos, want)                 \
    do {                                                           \
        um_err _e = { "" };                                        \
        char *_o = fmt_text((text), (sys), (user), (bos), &_e);    \
        CHECK_MSG(_o != NULL, "template failed: %s", _e.msg);      \
        CHECK_STREQ(_o, (want));                                   \
        free(_o);                                                  \
    } while (0)

TEST(chat_file_renders_chatml_and_ling) {
    const char *chatml =
        "# ChatML, as Qwen's templates write it\n"
        "system    = \"<|im_start|>system\\n{system}<|im_end|>\\n\"\n"
        "user      = \"<|im_start|>user\\n{user}<|im_end|>\\n\"   # one user turn\n"
        "assistant = \"<|im_start|>assistant\\n\"\n";
    CHECK_FILE_FMT(chatml, NULL, "Hi", "<s>", "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
    CHECK_FILE_FMT(chatml, "Be brief.", "Hi", NULL,
                   "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
    const char *ling =
        "system    = \"<role>SYSTEM</role>{system}\\ndetailed thinking off<|role_end|>\"\r\n"
        "no_system = \"<role>SYSTEM</role>detailed thinking off<|role_end|>\"\r\n"
        "user      = \"<role>HUMAN</role>{user}<|role_end|>\"\r\n"
        "assistant = \"<role>ASSISTANT</role>\"\r\n";
    CHECK_FILE_FMT(ling, NULL, "Hi",  NULL,
                   "<role>SYSTEM</role>detailed thinking off<|role_end|><role>HUMAN</role>Hi<|role_end|><role>ASSISTANT</role>");
    CHECK_FILE_FMT(ling, "S", "Hi", NULL,
                   "<role>SYSTEM</role>S\ndetailed thinking off<|role_end|><role>HUMAN</role>Hi<|role_end|><role>ASSISTANT</role>");
}

TEST(chat_file_bos_trim_and_escapes) {
    const char *llada =
        "bos = text\n"
        "trim = yes\n"
        "system = \"<|start_header_id|>system<|end_header_id|>\\n\\n{system}<|eot_id|>\"\n"
        "user = \"<|start_header_id|>user<|end_header_id|>\\n\\n{user}<|eot_id|>\"\n"
        "assistant = \"<|start_header_id|>assistant<|end_header_id|>\\n\\n\"\n";
    CHECK_FILE_FMT(llada, NULL, " Hi\n", "<|startoftext|>",
                   "<|startoftext|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
                   "<|start_header_id|>assistant<|end_header_id|>\n\n");
    CHECK_FILE_FMT("user = \"\\\"{user}\\\"\\t\\\\\"\nassistant = \"\"\n", NULL, "x", NULL, "\"x\"\t\\");
    CHECK_FILE_FMT("user = \"{user} # not a comment\"  # a comment\nassistant = \"=\"\n", NULL, "x", NULL,
                   "x # not a comment=");
    CHECK_FILE_FMT("user = \"{user}{system?}\"\nassistant = \"\"\n", NULL, "x", NULL, "x{system?}");

    chat_custom *t = NULL;
    const char *files[] = { "bos = text\nuser=\"{user}\"\nassistant=\"\"", "bos = none\nuser=\"{user}\"\nassistant=\"\"",
                            "bos = tokenizer\nuser=\"{user}\"\nassistant=\"\"", "user=\"{user}\"\nassistant=\"\"" };
    const bool want[] = { true, true, false, false };
    for (int i = 0; i < 4; i++) {
        CHECK(chat_template_parse(files[i], strlen(files[i]), "b.chat", &t, NULL) == UM_OK);
        CHECK_EQ(chat_custom_has_bos(t), want[i]);
        CHECK_STREQ(chat_custom_file(t), "b.chat");
        chat_custom_free(t);
    }
    /* bos = none: no BOS text even when the tokenizer has one */
    CHECK_FILE_FMT("bos = none\nuser = \"{user}\"\nassistant = \"\"\n", NULL, "x", "<s>", "x");
}

/* The file format can say what each built-in family says: the same strings for both. */
TEST(chat_file_matches_the_builtin_families) {
    const struct { um_chat c; const char *text; } same[] = {
        { UM_CHAT_LLADA, "bos = text\ntrim = yes\n"
          "system = \"<|start_header_id|>system<|end_header_id|>\\n\\n{system}<|eot_id|>\"\n"
          "user = \"<|start_header_id|>user<|end_header_id|>\\n\\n{user}<|eot_id|>\"\n"
          "assistant = \"<|start_header_id|>assistant<|end_header_id|>\\n\\n\"\n" },
        { UM_CHAT_LLADA2, "system = \"<role>SYSTEM</role>{system}\\ndetailed thinking off<|role_end|>\"\n"
          "no_system = \"<role>SYSTEM</role>detailed thinking off<|role_end|>\"\n"
          "user = \"<role>HUMAN</role>{user}<|role_end|>\"\nassistant = \"<role>ASSISTANT</role>\"\n" },
        { UM_CHAT_DREAM, "system = \"<|im_start|>system\\n{system}<|im_end|>\\n\"\n"
          "no_system = \"<|im_start|>system\\nYou are a helpful assistant.<|im_end|>\\n\"\n"
          "user = \"<|im_start|>user\\n{user}<|im_end|>\\n\"\nassistant = \"<|im_start|>assistant\\n\"\n" },
    };
    const char *systems[] = { NULL, "Be brief." };
    for (size_t i = 0; i < sizeof same / sizeof same[0]; i++) {
        for (int s = 0; s < 2; s++) {
            char *a = fmt(same[i].c, systems[s], " Hi ", "<|startoftext|>");
            um_err e = { "" };
            char *b = fmt_text(same[i].text, systems[s], " Hi ", "<|startoftext|>", &e);
            CHECK_MSG(b != NULL, "%s", e.msg);
            CHECK_STREQ(b, a);
            free(a);
            free(b);
        }
    }
}

#define CHECK_FILE_ERR(text, want)                                                  \
    do {                                                                            \
        chat_custom *_t = (chat_custom *)1;                                         \
        um_err _e = { "" };                                                         \
        CHECK(chat_template_parse((text), strlen(text), "my.chat", &_t, &_e) == UM_FAIL); \
        CHECK(_t == NULL);                                                          \
        CHECK_CONTAINS(_e.msg, (want));                                             \
        CHECK(strchr(_e.msg, '\n') == NULL);                                        \
    } while (0)

TEST(chat_file_errors_name_file_and_line) {
    CHECK_FILE_ERR("", "my.chat: no 'user' line");
    CHECK_FILE_ERR("# only a comment\n", "my.chat: no 'user' line");
    CHECK_FILE_ERR("user = \"{user}\"\n", "my.chat: no 'assistant' line");
    CHECK_FILE_ERR("user = \"{user}\"\nassistant = \"\"\nvoice = \"x\"\n", "my.chat:3: unknown key 'voice'");
    CHECK_FILE_ERR("user = \"{user}\"\nuser = \"{user}\"\n", "my.chat:2: 'user' already set at line 1");
    CHECK_FILE_ERR("\n\nuser \"{user}\"\n", "my.chat:3: expected 'key = value'");
    CHECK_FILE_ERR("User = \"{user}\"\n", "my.chat:1: expected 'key = value'");
    CHECK_FILE_ERR("user = {user}\n", "my.chat:1: user: expected a \"quoted\" value");
    CHECK_FILE_ERR("user = \"{user}\n", "my.chat:1: missing closing '\"'");
    CHECK_FILE_ERR("user = \"{user}\\\n", "my.chat:1: missing closing '\"'");
    CHECK_FILE_ERR("user = \"{user}\\x\"\n", "my.chat:1: unknown escape '\\x'");
    CHECK_FILE_ERR("user = \"{user}\" extra\n", "my.chat:1: unexpected text after the value");
    CHECK_FILE_ERR("assistant = \"\"\nuser = \"hello\"\n", "my.chat:2: user must hold {user} once");
    CHECK_FILE_ERR("user = \"{user}{user}\"\n", "my.chat:1: user must hold {user} once");
    CHECK_FILE_ERR("user = \"{user}\"\nsystem = \"S\"\n", "my.chat:2: system must hold {system} once");
    CHECK_FILE_ERR("user = \"{user}\"\nsystem = \"{system}{user}\"\n", "my.chat:2: system must hold {system} once");
    CHECK_FILE_ERR("user = \"{user}\"\nassistant = \"{user}\"\n", "my.chat:2: assistant takes no {system} or {user}");
    CHECK_FILE_ERR("no_system = \"{system}\"\n", "my.chat:1: no_system takes no {system} or {user}");
    CHECK_FILE_ERR("bos = always\n", "my.chat:1: bos must be tokenizer, text or none");
    CHECK_FILE_ERR("trim = true\n", "my.chat:1: trim must be yes or no");
    const char nul[] = "user = \"{user}\"\nassist\0ant = \"\"\n";
    chat_custom *t = NULL;
    um_err e = { "" };
    CHECK(chat_template_parse(nul, sizeof nul - 1, "my.chat", &t, &e) == UM_FAIL);
    CHECK_CONTAINS(e.msg, "my.chat:2: NUL byte");

    /* a system prompt needs a system line */
    const char *no_sys = "user = \"{user}\"\nassistant = \"\"\n";
    CHECK(chat_template_parse(no_sys, strlen(no_sys), "my.chat", &t, &e) == UM_OK);
    char *out = (char *)1;
    CHECK(chat_custom_format(t, "Be brief.", "Hi", NULL, &out, &e) == UM_FAIL);
    CHECK(out == NULL);
    CHECK_CONTAINS(e.msg, "my.chat: no 'system' line");
    CHECK(chat_custom_format(t, "", "Hi", NULL, &out, &e) == UM_OK);     /* "" = none given */
    CHECK_STREQ(out, "Hi");
    free(out);
    chat_custom_free(t);
}

TEST(chat_file_load_follows_the_input_rules) {
    char d[] = "/tmp/um-chat-XXXXXX", path[64];
    CHECK(mkdtemp(d) != NULL);
    chat_custom *t = NULL;
    um_err e = { "" };
    /* a directory, a missing file: one line naming the path */
    CHECK(chat_template_load_file(d, &t, &e) == UM_FAIL);
    CHECK(t == NULL);
    CHECK_CONTAINS(e.msg, d);
    CHECK_CONTAINS(e.msg, "not a regular file");
    snprintf(path, sizeof path, "%s/none.chat", d);
    CHECK(chat_template_load_file(path, &t, &e) == UM_FAIL);
    CHECK_CONTAINS(e.msg, path);
    /* a good file */
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    fputs("user = \"[{user}]\"\nassistant = \">\"\n", f);
    fclose(f);
    CHECK(chat_template_load_file(path, &t, &e) == UM_OK);
    char *out = NULL;
    CHECK(chat_custom_format(t, NULL, "q", NULL, &out, &e) == UM_OK);
    CHECK_STREQ(out, "[q]>");
    CHECK_STREQ(chat_custom_file(t), path);
    free(out);
    chat_custom_free(t);
    /* an error inside names the file and the line */
    f = fopen(path, "w");
    CHECK(f != NULL);
    fputs("# mine\nuser = \"{user}\"\nsytem = \"{system}\"\n", f);
    fclose(f);
    CHECK(chat_template_load_file(path, &t, &e) == UM_FAIL);
    char want[128];
    snprintf(want, sizeof want, "%s:3: unknown key 'sytem'", path);
    CHECK_CONTAINS(e.msg, want);
    /* over the size limit */
    f = fopen(path, "w");
    CHECK(f != NULL);
    for (size_t i = 0; i <= CHAT_FILE_MAX / 8; i++) fputs("#comment\n", f);
    fclose(f);
    CHECK(chat_template_load_file(path, &t, &e) == UM_FAIL);
    CHECK_CONTAINS(e.msg, "limit");
    unlink(path);
    rmdir(d);
}
