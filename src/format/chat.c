/*
 * chat: chat templates for the supported diffusion model families, as a table of the
 * strings around each part, plus detection from the GGUF's chat template and arch, plus
 * templates read from a user's file in the same shape. See chat.h for the output of each
 * family; docs/models.md cites the template each string was typed from.
 *
 * Invariant: a built-in family and a file template are rendered by the same function from
 * the same struct (chat_parts), so the file format can express every built-in family. A
 * model file's own template (unmask.chat_template) is that file format too.
 */
#include "chat.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "infile.h"

enum { BOS_TOKENIZER, BOS_TEXT, BOS_NONE };

typedef struct chat_parts {
    const char *no_system;                /* the text when there is no system prompt */
    const char *system_pre, *system_post; /* around S; system_pre NULL: the template has none */
    const char *user_pre, *user_post;     /* around U */
    const char *assistant;                /* the generation prompt */
    bool        trim;                     /* S and U trimmed of surrounding whitespace (jinja | trim) */
    int         bos;                      /* BOS_TOKENIZER | BOS_TEXT | BOS_NONE */
    bool        keep_question;            /* rnd1: a prompt that already asks "Question:" is kept */
} chat_parts;

/* The Ling 2.0 template's SYSTEM turn (LLaDA-MoE-7B-A1B-Instruct, LLaDA2.x tokenizer_config.json:
 * "{{- '<role>SYSTEM</role>' }}", then "messages[0].content + '\n'" when the first message is a
 * system message, then "'detailed thinking ' + thinking_option + '<|role_end|>'" with
 * thinking_option set to 'off'). */
#define LING_SYSTEM      "<role>SYSTEM</role>"
#define LING_THINK_OFF   "detailed thinking off<|role_end|>"
#define LING_PARTS { LING_SYSTEM LING_THINK_OFF, LING_SYSTEM, "\n" LING_THINK_OFF, \
                     "<role>HUMAN</role>", "<|role_end|>", "<role>ASSISTANT</role>", false, BOS_TOKENIZER, false }

static const struct { const char *name; chat_parts p; } families[UM_CHAT_COUNT] = {
    /* Gemma 4 (DiffusionGemma): google-gemma-4-31B-it.jinja in llama.cpp's models/templates: bos_token,
     * '<|turn>system\n' + content | trim + '<turn|>\n' when the first message is a system one,
     * '<|turn>' + role + '\n' + content | trim + '<turn|>\n' per message, then the generation prompt
     * '<|turn>model\n' and, thinking off, '<|channel>thought\n<channel|>'. BOS: the tokenizer's. */
    [UM_CHAT_GEMMA4] = { "gemma4", { "", "<|turn>system\n", "<turn|>\n", "<|turn>user\n", "<turn|>\n",
        "<|turn>model\n<|channel>thought\n<channel|>", true, BOS_TOKENIZER, false } },
    [UM_CHAT_NONE]  = { "none", { "", "", "\n\n", "", "", "", false, BOS_TOKENIZER, false } },
    /* LLaDA-8B-Instruct's tokenizer_config.json: bos_token + '<|start_header_id|>' + role +
     * '<|end_header_id|>\n\n' + content | trim + '<|eot_id|>' per message, BOS on the first */
    [UM_CHAT_LLADA] = { "llada", { "",
        "<|start_header_id|>system<|end_header_id|>\n\n", "<|eot_id|>",
        "<|start_header_id|>user<|end_header_id|>\n\n", "<|eot_id|>",
        "<|start_header_id|>assistant<|end_header_id|>\n\n", true, BOS_TEXT, false } },
    [UM_CHAT_LLADA_MOE] = { "llada-moe", LING_PARTS },
    [UM_CHAT_LLADA2]    = { "llada2", LING_PARTS },
    /* Dream-v0-Instruct-7B (Qwen2.5's template): a default system turn when none is given */
    [UM_CHAT_DREAM] = { "dream", { "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n",
        "<|im_start|>system\n", "<|im_end|>\n",
        "<|im_start|>user\n", "<|im_end|>\n",
        "<|im_start|>assistant\n", false, BOS_TOKENIZER, false } },
    [UM_CHAT_CHATML] = { "chatml", { "",
        "<|im_start|>system\n", "<|im_end|>\n",
        "<|im_start|>user\n", "<|im_end|>\n",
        "<|im_start|>assistant\n", false, BOS_TOKENIZER, false } },
    /* RND1's demo_rnd_generation.py, task mode: "Question: {prompt}\nAnswer:" unless the
     * prompt already starts with "Question:" */
    [UM_CHAT_RND1] = { "rnd1", { "", "", "\n\n", "Question: ", "\nAnswer:", "", false, BOS_TOKENIZER, true } },
};

const char *chat_name(um_chat c) {
    return (int)c >= 0 && c < UM_CHAT_COUNT ? families[c].name : "?";
}

const char *chat_names(void) {
    return "llada|llada-moe|llada2|dream|chatml|rnd1|gemma4|none";
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

/* Recognise a template by its special tokens, as llama.cpp's llm_chat_detect_template does
 * (src/llama-chat.cpp: "<role>HUMAN</role>" with "<|role_end|>" is its bailing2 = Ling 2.0).
 * UM_CHAT_COUNT: not one unmask renders exactly. */
static um_chat detect_text(const char *tmpl, const char *arch) {
    if (strstr(tmpl, "<|start_header_id|>") && strstr(tmpl, "<|end_header_id|>"))
        return UM_CHAT_LLADA;
    if (strstr(tmpl, "<role>HUMAN</role>") && strstr(tmpl, "<|role_end|>"))
        return arch && !strcmp(arch, "llada2") ? UM_CHAT_LLADA2 : UM_CHAT_LLADA_MOE;
    if (strstr(tmpl, "<|im_start|>"))
        return strstr(tmpl, "You are a helpful assistant") ? UM_CHAT_DREAM : UM_CHAT_CHATML;
    if (strstr(tmpl, "<|turn>") && strstr(tmpl, "<turn|>"))
        return UM_CHAT_GEMMA4;
    return UM_CHAT_COUNT;
}

um_chat chat_detect(const char *tmpl, const char *arch) {
    if (tmpl && *tmpl) {
        um_chat c = detect_text(tmpl, arch);
        if (c != UM_CHAT_COUNT)
            return c;
    }
    static const struct { const char *arch; um_chat chat; } by_arch[] = {
        { "llada", UM_CHAT_LLADA }, { "llada-moe", UM_CHAT_LLADA_MOE }, { "llada2", UM_CHAT_LLADA2 },
        { "dream", UM_CHAT_DREAM }, { "rnd1", UM_CHAT_RND1 }, { "diffusion-gemma", UM_CHAT_GEMMA4 },
    };
    for (size_t i = 0; arch && i < sizeof by_arch / sizeof by_arch[0]; i++)
        if (!strcmp(arch, by_arch[i].arch))
            return by_arch[i].chat;
    return UM_CHAT_NONE;
}

bool chat_has_bos(um_chat c) {
    return (int)c >= 0 && c < UM_CHAT_COUNT && families[c].p.bos == BOS_TEXT;
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

static int render(const chat_parts *f, const char *sys, const char *user, const char *bos_text,
                  char **out, um_err *e) {
    sbuf b = { 0 };
    sb_addn(&b, "", 0);           /* allocate: an empty prompt still gives a string */
    if (f->bos == BOS_TEXT && bos_text)
        sb_add(&b, bos_text);
    if (sys) {
        sb_add(&b, f->system_pre);
        sb_add_content(&b, sys, f->trim);
        sb_add(&b, f->system_post);
    } else {
        sb_add(&b, f->no_system);
    }
    if (f->keep_question && !strncmp(user + strspn(user, " \t\r\n"), "Question:", 9)) {
        sb_add(&b, user);
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

int chat_format(um_chat c, const char *system, const char *user, const char *bos_text,
                char **out, um_err *e) {
    if (!out)
        return um_errf(e, "chat: missing output");
    *out = NULL;
    if ((int)c < 0 || c >= UM_CHAT_COUNT)
        return um_errf(e, "chat: unknown template %d", (int)c);
    if (!user)
        return um_errf(e, "chat: missing prompt");
    return render(&families[c].p, (system && *system) ? system : NULL, user, bos_text, out, e);
}

/* ---------------------------------------------------------------- template files */

enum { K_SYSTEM, K_NO_SYSTEM, K_USER, K_ASSISTANT, K_BOS, K_TRIM, K_COUNT };
static const char *const key_names[K_COUNT] = { "system", "no_system", "user", "assistant", "bos", "trim" };

struct chat_custom {
    chat_parts p;                 /* points into the strings below */
    char      *value[K_COUNT];    /* the unescaped quoted values (NULL when absent) */
    char      *system_pre, *system_post, *user_pre, *user_post;
    char       file[512];
};

void chat_custom_free(chat_custom *t) {
    if (!t)
        return;
    for (int k = 0; k < K_COUNT; k++)
        free(t->value[k]);
    free(t->system_pre);
    free(t->system_post);
    free(t->user_pre);
    free(t->user_post);
    free(t);
}

/* Read a double-quoted value at *s (unescaping \n \t \r \\ \"); *s moves past the closing quote. */
static int parse_quoted(const char **s, const char *end, char **out, const char *file, int line, um_err *e) {
    const char *p = *s + 1;                       /* past the opening quote */
    sbuf b = { 0 };
    sb_addn(&b, "", 0);
    for (;;) {
        if (p >= end) {
            free(b.p);
            return um_errf(e, "%s:%d: missing closing '\"'", file, line);
        }
        char c = *p++;
        if (c == '"')
            break;
        if (c == '\\') {
            if (p >= end) {
                free(b.p);
                return um_errf(e, "%s:%d: missing closing '\"'", file, line);
            }
            char x = *p++;
            c = x == 'n' ? '\n' : x == 't' ? '\t' : x == 'r' ? '\r' : x == '\\' ? '\\' : x == '"' ? '"' : 0;
            if (!c) {
                free(b.p);
                if (isprint((unsigned char)x))
                    return um_errf(e, "%s:%d: unknown escape '\\%c' (\\n \\t \\r \\\\ \\\" only)", file, line, x);
                return um_errf(e, "%s:%d: unknown escape (\\n \\t \\r \\\\ \\\" only)", file, line);
            }
        }
        sb_addn(&b, &c, 1);
    }
    if (b.oom) {
        free(b.p);
        return um_errf(e, "%s: out of memory", file);
    }
    *s = p;
    *out = b.p;
    return UM_OK;
}

static size_t count_of(const char *hay, const char *needle) {
    size_t n = 0, len = strlen(needle);
    for (const char *p = hay; (p = strstr(p, needle)); p += len)
        n++;
    return n;
}

/* Split v at its one placeholder into heap pre/post strings. */
static int split_at(const char *v, const char *ph, char **pre, char **post) {
    const char *at = strstr(v, ph);
    *pre = strndup(v, (size_t)(at - v));
    *post = strdup(at + strlen(ph));
    return *pre && *post ? UM_OK : UM_FAIL;
}

int chat_template_parse(const char *text, size_t len, const char *file, chat_custom **out, um_err *e) {
    *out = NULL;
    chat_custom *t = calloc(1, sizeof *t);
    if (!t)
        return um_errf(e, "%s: out of memory", file);
    snprintf(t->file, sizeof t->file, "%s", file);
    int set_at[K_COUNT] = { 0 };
    bool trim = false;
    int bos = BOS_TOKENIZER;
    const char *p = text, *end = text + len;
    for (int line = 1; p < end; line++) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;            /* this line is [p, le) */
        const char *next = nl ? nl + 1 : end;
        if (memchr(p, '\0', (size_t)(le - p))) { um_errf(e, "%s:%d: NUL byte in line", file, line); goto err; }
        while (le > p && (le[-1] == '\r' || le[-1] == ' ' || le[-1] == '\t')) le--;
        const char *s = p;
        while (s < le && (*s == ' ' || *s == '\t')) s++;
        p = next;
        if (s == le || *s == '#')
            continue;
        const char *ks = s;
        while (s < le && (islower((unsigned char)*s) || *s == '_')) s++;
        size_t klen = (size_t)(s - ks);
        int k = 0;
        while (k < K_COUNT && !(strlen(key_names[k]) == klen && !strncmp(key_names[k], ks, klen))) k++;
        while (s < le && (*s == ' ' || *s == '\t')) s++;
        if (klen == 0 || s >= le || *s != '=') {
            um_errf(e, "%s:%d: expected 'key = value' (keys: system, no_system, user, assistant, bos, trim)", file, line);
            goto err;
        }
        if (k == K_COUNT) {
            um_errf(e, "%s:%d: unknown key '%.*s' (system, no_system, user, assistant, bos, trim)", file, line,
                    (int)(klen > 40 ? 40 : klen), ks);
            goto err;
        }
        if (set_at[k]) { um_errf(e, "%s:%d: '%s' already set at line %d", file, line, key_names[k], set_at[k]); goto err; }
        set_at[k] = line;
        s++;
        while (s < le && (*s == ' ' || *s == '\t')) s++;
        if (k == K_BOS || k == K_TRIM) {
            const char *ws = s;
            while (s < le && !isspace((unsigned char)*s) && *s != '#') s++;
            size_t wlen = (size_t)(s - ws);
            #define IS(word) (wlen == strlen(word) && !strncmp(ws, word, wlen))
            if (k == K_BOS && IS("tokenizer")) bos = BOS_TOKENIZER;
            else if (k == K_BOS && IS("text")) bos = BOS_TEXT;
            else if (k == K_BOS && IS("none")) bos = BOS_NONE;
            else if (k == K_TRIM && IS("yes")) trim = true;
            else if (k == K_TRIM && IS("no")) trim = false;
            else {
                um_errf(e, "%s:%d: %s must be %s", file, line, key_names[k],
                        k == K_BOS ? "tokenizer, text or none" : "yes or no");
                goto err;
            }
            #undef IS
        } else {
            if (s >= le || *s != '"') { um_errf(e, "%s:%d: %s: expected a \"quoted\" value", file, line, key_names[k]); goto err; }
            if (parse_quoted(&s, le, &t->value[k], file, line, e)) goto err;
        }
        while (s < le && (*s == ' ' || *s == '\t')) s++;
        if (s < le && *s != '#') { um_errf(e, "%s:%d: unexpected text after the value", file, line); goto err; }
    }
    /* the placeholders: {system} once in system, {user} once in user, nowhere else */
    for (int k = 0; k < K_COUNT; k++) {
        const char *v = t->value[k];
        if (!v)
            continue;
        size_t ns = count_of(v, "{system}"), nu = count_of(v, "{user}");
        if (k == K_SYSTEM && (ns != 1 || nu)) {
            um_errf(e, "%s:%d: system must hold {system} once (and no {user})", file, set_at[k]);
            goto err;
        }
        if (k == K_USER && (nu != 1 || ns)) {
            um_errf(e, "%s:%d: user must hold {user} once (and no {system})", file, set_at[k]);
            goto err;
        }
        if ((k == K_NO_SYSTEM || k == K_ASSISTANT) && (ns || nu)) {
            um_errf(e, "%s:%d: %s takes no {system} or {user}", file, set_at[k], key_names[k]);
            goto err;
        }
    }
    if (!t->value[K_USER]) { um_errf(e, "%s: no 'user' line (required, e.g. user = \"{user}\\n\")", file); goto err; }
    if (!t->value[K_ASSISTANT]) { um_errf(e, "%s: no 'assistant' line (required; assistant = \"\" for none)", file); goto err; }
    if (split_at(t->value[K_USER], "{user}", &t->user_pre, &t->user_post)) { um_errf(e, "%s: out of memory", file); goto err; }
    if (t->value[K_SYSTEM] && split_at(t->value[K_SYSTEM], "{system}", &t->system_pre, &t->system_post)) {
        um_errf(e, "%s: out of memory", file);
        goto err;
    }
    t->p = (chat_parts){
        .no_system = t->value[K_NO_SYSTEM] ? t->value[K_NO_SYSTEM] : "",
        .system_pre = t->system_pre, .system_post = t->system_post,
        .user_pre = t->user_pre, .user_post = t->user_post,
        .assistant = t->value[K_ASSISTANT], .trim = trim, .bos = bos, .keep_question = false,
    };
    *out = t;
    return UM_OK;
err:
    chat_custom_free(t);
    return UM_FAIL;
}

int chat_template_load_file(const char *path, chat_custom **out, um_err *e) {
    char *data;
    size_t len;
    *out = NULL;
    if (infile_read(path, CHAT_FILE_MAX, &data, &len, e))
        return UM_FAIL;
    int rc = chat_template_parse(data, len, path, out, e);
    free(data);
    return rc;
}

int chat_custom_format(const chat_custom *t, const char *system, const char *user, const char *bos_text,
                       char **out, um_err *e) {
    if (!out)
        return um_errf(e, "chat: missing output");
    *out = NULL;
    if (!t || !user)
        return um_errf(e, "chat: missing %s", t ? "prompt" : "template");
    const char *sys = (system && *system) ? system : NULL;
    if (sys && !t->p.system_pre)
        return um_errf(e, "%s: no 'system' line, so a system prompt cannot be used", t->file);
    return render(&t->p, sys, user, bos_text, out, e);
}

bool chat_custom_has_bos(const chat_custom *t) {
    return t && t->p.bos != BOS_TOKENIZER;
}

const char *chat_custom_file(const chat_custom *t) {
    return t ? t->file : "";
}

/* ---------------------------------------------------------------- a model file's choice */

int chat_from_gguf(const gguf_file *g, const char *arch, const char *file, chat_choice *out, um_err *e) {
    *out = (chat_choice){ .chat = UM_CHAT_NONE };
    const gguf_kv *kv = gguf_find_kv(g, CHAT_GGUF_KEY);
    if (kv) {
        char name[sizeof ((chat_custom *)0)->file];
        snprintf(name, sizeof name, "%s%s" CHAT_GGUF_KEY, file ? file : "", file ? ": " : "");
        if (kv->type != GGUF_TYPE_STRING)
            return um_errf(e, "%s: has type %s, expected string (a chat template file's text)", name,
                           gguf_type_name(kv->type));
        if (kv->v.s.len > CHAT_FILE_MAX)
            return um_errf(e, "%s: %llu bytes, larger than a template's %zu", name,
                           (unsigned long long)kv->v.s.len, CHAT_FILE_MAX);
        if (chat_template_parse(kv->v.s.ptr, (size_t)kv->v.s.len, name, &out->own, e))
            return UM_FAIL;
        out->from = CHAT_GGUF_KEY;
        return UM_OK;
    }
    kv = gguf_find_kv(g, "tokenizer.chat_template");
    if (!kv || kv->type != GGUF_TYPE_STRING)
        return UM_OK;
    char *tmpl = strndup(kv->v.s.ptr, (size_t)kv->v.s.len);  /* the text up to a NUL, as a C string */
    if (!tmpl)
        return um_errf(e, "out of memory");
    um_chat known = detect_text(tmpl, arch);
    out->chat = chat_detect(tmpl, arch);
    out->from = known != UM_CHAT_COUNT ? "tokenizer.chat_template" : "general.architecture";
    free(tmpl);
    return UM_OK;
}
