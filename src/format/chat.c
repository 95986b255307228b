/*
 * chat: chat templates for the supported diffusion model families, as a table of the
 * strings around each part, plus detection from the GGUF's chat template and arch.
 * See chat.h for the output of each family and where it comes from.
 */
#include "chat.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct chat_family {
    const char *name;
    const char *default_system;  /* NULL: no system part unless given */
    const char *system_pre, *system_post;
    const char *user_pre, *user_post;
    const char *assistant;       /* the generation prompt */
    bool        trim;            /* contents trimmed of surrounding whitespace (jinja | trim) */
    bool        bos;             /* BOS text first */
} chat_family;

static const chat_family families[UM_CHAT_COUNT] = {
    [UM_CHAT_NONE] = { "none", NULL, "", "\n\n", "", "", "", false, false },
    [UM_CHAT_LLADA] = { "llada", NULL,
        "<|start_header_id|>system<|end_header_id|>\n\n", "<|eot_id|>",
        "<|start_header_id|>user<|end_header_id|>\n\n", "<|eot_id|>",
        "<|start_header_id|>assistant<|end_header_id|>\n\n", true, true },
    [UM_CHAT_LLADA_MOE] = { "llada-moe", "detailed thinking off",
        "<role>SYSTEM</role>", "<|role_end|>",
        "<role>HUMAN</role>", "<|role_end|>",
        "<role>ASSISTANT</role>", false, false },
    [UM_CHAT_DREAM] = { "dream", "You are a helpful assistant.",
        "<|im_start|>system\n", "<|im_end|>\n",
        "<|im_start|>user\n", "<|im_end|>\n",
        "<|im_start|>assistant\n", false, false },
    [UM_CHAT_CHATML] = { "chatml", NULL,
        "<|im_start|>system\n", "<|im_end|>\n",
        "<|im_start|>user\n", "<|im_end|>\n",
        "<|im_start|>assistant\n", false, false },
    [UM_CHAT_RND1] = { "rnd1", NULL, "", "\n\n", "Question: ", "\nAnswer:", "", false, false },
};

const char *chat_name(um_chat c) {
    return (int)c >= 0 && c < UM_CHAT_COUNT ? families[c].name : "?";
}

const char *chat_names(void) {
    return "llada|llada-moe|dream|chatml|rnd1|none";
}

int chat_from_name(const char *name, um_chat *out, um_err *e) {
    for (int c = 0; name && c < UM_CHAT_COUNT; c++) {
        if (!strcmp(name, families[c].name)) {
            *out = (um_chat)c;
            return UM_OK;
        }
    }
    return um_errf(e, "unknown chat template '%s' (known: %s)", name ? name : "", chat_names());
}

um_chat chat_detect(const char *tmpl, const char *arch) {
    if (arch && !strcmp(arch, "rnd1"))
        return UM_CHAT_RND1;
    if (tmpl && *tmpl) {
        if (strstr(tmpl, "<|start_header_id|>") && strstr(tmpl, "<|end_header_id|>"))
            return UM_CHAT_LLADA;
        if (strstr(tmpl, "<role>HUMAN</role>") || strstr(tmpl, "<|role_end|>"))
            return UM_CHAT_LLADA_MOE;
        if (strstr(tmpl, "<|im_start|>"))
            return strstr(tmpl, "You are a helpful assistant") ? UM_CHAT_DREAM : UM_CHAT_CHATML;
    }
    if (arch) {
        if (!strcmp(arch, "llada"))     return UM_CHAT_LLADA;
        if (!strcmp(arch, "llada-moe")) return UM_CHAT_LLADA_MOE;
        if (!strcmp(arch, "dream"))     return UM_CHAT_DREAM;
    }
    return UM_CHAT_NONE;
}

bool chat_has_bos(um_chat c) {
    return (int)c >= 0 && c < UM_CHAT_COUNT && families[c].bos;
}

/* ---------------------------------------------------------------- formatting */

typedef struct sbuf {
    char  *p;
    size_t len, cap;
    bool   oom;
} sbuf;

static void sb_addn(sbuf *b, const char *s, size_t n) {
    if (b->oom)
        return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n + 1)
            cap *= 2;
        char *np = realloc(b->p, cap);
        if (!np) {
            b->oom = true;
            return;
        }
        b->p = np;
        b->cap = cap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

static void sb_add(sbuf *b, const char *s) {
    sb_addn(b, s, strlen(s));
}

static bool is_space(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

static void sb_add_content(sbuf *b, const char *s, bool trim) {
    size_t n = strlen(s);
    if (trim) {
        while (n > 0 && is_space(*s)) { s++; n--; }
        while (n > 0 && is_space(s[n - 1])) n--;
    }
    sb_addn(b, s, n);
}

int chat_format(um_chat c, const char *system, const char *user, const char *bos_text,
                char **out, um_err *e) {
    if (!out)
        return um_errf(e, "chat: missing output");
    *out = NULL;
    if ((int)c < 0 || c >= UM_CHAT_COUNT)
        return um_errf(e, "chat: unknown template %d", (int)c);
    if (!user)
        return um_errf(e, "chat: missing prompt");
    const chat_family *f = &families[c];
    const char *sys = (system && *system) ? system : f->default_system;

    sbuf b = { 0 };
    sb_addn(&b, "", 0);           /* allocate: an empty prompt still gives a string */
    if (f->bos && bos_text)
        sb_add(&b, bos_text);
    if (sys) {
        sb_add(&b, f->system_pre);
        sb_add_content(&b, sys, f->trim);
        sb_add(&b, f->system_post);
    }
    if (c == UM_CHAT_RND1 && !strncmp(user + strspn(user, " \t\r\n"), "Question:", 9)) {
        sb_add(&b, user);         /* the demo keeps a prompt that already asks a Question: */
    } else {
        sb_add(&b, f->user_pre);
        sb_add_content(&b, user, f->trim);
        sb_add(&b, f->user_post);
    }
    sb_add(&b, f->assistant);
    if (b.oom || !b.p) {
        free(b.p);
        return um_errf(e, "chat: out of memory");
    }
    *out = b.p;
    return UM_OK;
}
