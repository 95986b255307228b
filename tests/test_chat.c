/*
 * test_chat: the exact prompt text of every chat template family, detection from
 * GGUF chat templates and architecture names, and template names.
 */
#include "harness.h"
#include "chat.h"

#include <stdlib.h>

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
    /* LLaDA-8B-Instruct's template: BOS once, Llama-3 headers, contents trimmed */
    CHECK_FMT(UM_CHAT_LLADA, NULL, "  Hi there\n", "<|startoftext|>",
              "<|startoftext|><|start_header_id|>user<|end_header_id|>\n\nHi there<|eot_id|>"
              "<|start_header_id|>assistant<|end_header_id|>\n\n");
    CHECK_FMT(UM_CHAT_LLADA, "Be brief.", "Hi", "<|startoftext|>",
              "<|startoftext|><|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|>"
              "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
              "<|start_header_id|>assistant<|end_header_id|>\n\n");
    CHECK_FMT(UM_CHAT_LLADA, NULL, "Hi", NULL,
              "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
              "<|start_header_id|>assistant<|end_header_id|>\n\n");
    CHECK(chat_has_bos(UM_CHAT_LLADA));
}

TEST(chat_llada_moe_strings) {
    CHECK_FMT(UM_CHAT_LLADA_MOE, NULL, "Hi", "<|startoftext|>",
              "<role>SYSTEM</role>detailed thinking off<|role_end|>"
              "<role>HUMAN</role>Hi<|role_end|><role>ASSISTANT</role>");
    CHECK_FMT(UM_CHAT_LLADA_MOE, "You are terse.", "Hi", NULL,
              "<role>SYSTEM</role>You are terse.<|role_end|>"
              "<role>HUMAN</role>Hi<|role_end|><role>ASSISTANT</role>");
    CHECK(!chat_has_bos(UM_CHAT_LLADA_MOE));
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
    CHECK(!chat_has_bos(UM_CHAT_DREAM));
}

TEST(chat_rnd1_and_none_strings) {
    CHECK_FMT(UM_CHAT_RND1, NULL, "What is 2+2?", NULL, "Question: What is 2+2?\nAnswer:");
    CHECK_FMT(UM_CHAT_RND1, NULL, "  Question: why?", NULL, "  Question: why?");
    CHECK_FMT(UM_CHAT_RND1, "Answer in French.", "Hi", NULL, "Answer in French.\n\nQuestion: Hi\nAnswer:");
    CHECK_FMT(UM_CHAT_NONE, NULL, "The sky is", NULL, "The sky is");
    CHECK_FMT(UM_CHAT_NONE, "Context.", "The sky is", NULL, "Context.\n\nThe sky is");
    CHECK_FMT(UM_CHAT_NONE, NULL, "", NULL, "");
}

TEST(chat_detect_from_template_and_arch) {
    const char *llada_tmpl = "{% set loop_messages = messages %}{% for message in loop_messages %}"
        "{% set content = '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n'+ "
        "message['content'] | trim + '<|eot_id|>' %}";
    const char *qwen_tmpl = "{%- else %}{{- '<|im_start|>system\\nYou are a helpful assistant.<|im_end|>\\n' }}";
    const char *qwen3_tmpl = "{%- for message in messages %}{{- '<|im_start|>' + message.role + '\\n' }}";
    const char *ling_tmpl = "<role>SYSTEM</role>{{ content }}<|role_end|><role>HUMAN</role>";
    CHECK_EQ(chat_detect(llada_tmpl, "llada"), UM_CHAT_LLADA);
    CHECK_EQ(chat_detect(llada_tmpl, "llada-moe"), UM_CHAT_LLADA);   /* the file's template wins */
    CHECK_EQ(chat_detect(ling_tmpl, "llada-moe"), UM_CHAT_LLADA_MOE);
    CHECK_EQ(chat_detect(qwen_tmpl, "dream"), UM_CHAT_DREAM);
    CHECK_EQ(chat_detect(qwen3_tmpl, NULL), UM_CHAT_CHATML);
    CHECK_EQ(chat_detect(qwen3_tmpl, "rnd1"), UM_CHAT_RND1);          /* base model: no chat */
    CHECK_EQ(chat_detect(NULL, "llada"), UM_CHAT_LLADA);
    CHECK_EQ(chat_detect("", "llada-moe"), UM_CHAT_LLADA_MOE);
    CHECK_EQ(chat_detect(NULL, "dream"), UM_CHAT_DREAM);
    CHECK_EQ(chat_detect(NULL, "llama"), UM_CHAT_NONE);
    CHECK_EQ(chat_detect(NULL, NULL), UM_CHAT_NONE);
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
    CHECK_CONTAINS(e.msg, "llada|llada-moe|dream|chatml|rnd1|none");
    char *out = (char *)1;
    CHECK(chat_format(UM_CHAT_DREAM, NULL, NULL, NULL, &out, &e) == UM_FAIL);
    CHECK(out == NULL);
}
