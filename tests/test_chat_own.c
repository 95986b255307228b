/*
 * test_chat_own: a model file's own prompt template (unmask.chat_template, chat.h) end to end
 * on a random-weight tiny-llada whose vocabulary is given the sudoku model's 81 position
 * markers <|r1c1|>..<|r9c9|> as control tokens: with no template named, the prompt tokens
 * are BOS, the markers, then the puzzle's characters; a named template (--no-chat and a
 * preset's chat_template are the name "none"), a template file and a named family win over
 * it; a malformed value (bad line, wrong type) is one line naming the file and the key, in
 * the engine and in the runnable verdict alike, and the model does not open; which source
 * chat_from_gguf says decided.
 *
 * Expected ids are the file's, not the tokenizer's: the synth vocabulary's first 256 tokens
 * are the bytes (id = byte value), the markers are written at MARK0 + k here, and BOS and the
 * Llama-3 header token are looked up in the file's own arrays.
 */
#include <stdlib.h>
#include <unistd.h>

#include "chat.h"
#include "engine.h"
#include "gguf.h"
#include "harness.h"
#include "model.h"
#include "quant.h"
#include "snapshot.h"
#include "synth.h"

enum { MARK0 = 300, CELLS = 81 };     /* markers at ids 300..380 (synth's <|reserved_N|> there) */

static const char *const PUZZLE =
    "53..7....6..195....98....6.8...6...34..8.3..17...2...6.6....28....419..5....8..79";

static char base_path[256], path[256];

__attribute__((destructor)) static void cleanup(void) {
    if (base_path[0]) unlink(base_path);
    if (path[0]) unlink(path);
}

/* tiny-llada with the markers as control tokens; own: unmask.chat_template's text (NULL: no
 * key), own_u32: the key as a uint32 instead; tok_tmpl: tokenizer.chat_template (NULL: none). */
static const char *write_model(const char *own, bool own_u32, const char *tok_tmpl) {
    um_err e = { "" };
    if (!base_path[0]) {
        snprintf(base_path, sizeof base_path, "/tmp/unmask-chatown-%d-base.gguf", (int)getpid());
        um_synth_opts o = { .shape = synth_find_shape("tiny-llada"), .type = UM_TYPE_Q8_0, .seed = 5, .init_scale = 1.0f };
        if (synth_write(&o, base_path, &e)) { printf("    synth: %s\n", e.msg); base_path[0] = 0; return NULL; }
    }
    snprintf(path, sizeof path, "/tmp/unmask-chatown-%d.gguf", (int)getpid());
    gguf_file *g;
    if (gguf_open(&g, base_path, &e)) { printf("    %s\n", e.msg); return NULL; }
    const gguf_kv *tk = gguf_find_kv(g, "tokenizer.ggml.tokens"), *ty = gguf_find_kv(g, "tokenizer.ggml.token_type");
    uint64_t n = tk->arr_n;
    char **toks = calloc(n, sizeof *toks);
    int32_t *types = calloc(n, sizeof *types);
    for (uint64_t i = 0; i < n; i++) {
        toks[i] = calloc(1, tk->arr_str[i].len + 16);
        if (i >= MARK0 && i < MARK0 + CELLS)
            snprintf(toks[i], 16, "<|r%dc%d|>", (int)(i - MARK0) / 9 + 1, (int)(i - MARK0) % 9 + 1);
        else memcpy(toks[i], tk->arr_str[i].ptr, tk->arr_str[i].len);
        types[i] = i >= MARK0 && i < MARK0 + CELLS ? 3 : (int32_t)gguf_arr_i64(ty, i);   /* 3: control */
    }
    gguf_writer *w = gguf_writer_new();
    const char *skip[] = { "tokenizer.ggml.tokens", "tokenizer.ggml.token_type", NULL };
    gguf_copy_kv(w, g, skip);
    gguf_set_arr_str(w, "tokenizer.ggml.tokens", (const char *const *)toks, n);
    gguf_set_arr(w, "tokenizer.ggml.token_type", GGUF_TYPE_INT32, types, n);
    if (own_u32) gguf_set_u32(w, CHAT_GGUF_KEY, 7);
    else if (own) gguf_set_str(w, CHAT_GGUF_KEY, own);
    if (tok_tmpl) gguf_set_str(w, "tokenizer.chat_template", tok_tmpl);
    for (uint64_t i = 0; i < gguf_n_tensors(g); i++) {
        const gguf_tensor *t = gguf_tensor_at(g, i);
        char name[256];
        snprintf(name, sizeof name, "%.*s", (int)t->name.len, t->name.ptr);
        gguf_add_tensor(w, name, t->type, t->n_dims, t->ne, t->data, t->size, &e);
    }
    int rc = gguf_writer_write(w, path, &e);
    gguf_writer_free(w);
    gguf_close(g);
    for (uint64_t i = 0; i < n; i++) free(toks[i]);
    free(toks);
    free(types);
    if (rc) { printf("    write: %s\n", e.msg); return NULL; }
    return path;
}

/* The sudoku model's template: the 81 markers, then the user's text (the puzzle). */
static const char *marker_template(void) {
    static char t[CELLS * 8 + 64];
    size_t o = (size_t)snprintf(t, sizeof t, "# the sudoku model's prompt\nuser = \"");
    for (int k = 0; k < CELLS; k++) o += (size_t)snprintf(t + o, sizeof t - o, "<|r%dc%d|>", k / 9 + 1, k % 9 + 1);
    snprintf(t + o, sizeof t - o, "{user}\"\nassistant = \"\"\n");
    return t;
}

/* The file's id of a token text (its own array, not the tokenizer), or -1. */
static int32_t file_id(const char *p, const char *text) {
    gguf_file *g;
    um_err e;
    int32_t id = -1;
    if (gguf_open(&g, p, &e)) return -1;
    const gguf_kv *tk = gguf_find_kv(g, "tokenizer.ggml.tokens");
    for (uint64_t i = 0; tk && i < tk->arr_n && id < 0; i++)
        if (gguf_str_eq(tk->arr_str[i], text)) id = (int32_t)i;
    if (!strcmp(text, "BOS")) {
        uint64_t v;
        id = gguf_get_u64(g, "tokenizer.ggml.bos_token_id", &v, &e) ? -1 : (int32_t)v;
    }
    gguf_close(g);
    return id;
}

/* Open p with the template choices given, lay out PUZZLE (system prompt sys) and copy the
 * prompt's tokens; returns n_prompt, or -1 with the message in e. */
static int prompt_of(const char *p, const char *chat_template, const char *file, const char *sys, int32_t *out,
                     int cap, um_err *e) {
    um_engine_opts o = { .model_path = p, .n_threads = 1, .kernel = -1, .chat_template = chat_template,
                         .chat_template_file = file, .system = sys };
    um_engine *en = NULL;
    if (engine_open(&en, &o, e)) return -1;
    um_settings s;
    engine_default_settings(en, &s);
    s.n_gen = 8;
    s.steps = 1;
    s.block_len = 0;
    int n = -1;
    if (engine_start(en, PUZZLE, &s, e) == UM_OK) {
        um_snapshot *sn = engine_snapshot(en);
        n = sn->n_prompt;
        for (int i = 0; i < n && i < cap; i++) out[i] = sn->pos[i].token;
        snapshot_unref(sn);
    }
    engine_close(en);
    return n;
}

TEST(chat_own_template_lays_out_the_markers) {
    const char *p = write_model(marker_template(), false, NULL);
    CHECK(p);
    int32_t bos = file_id(p, "BOS"), got[512];
    CHECK(bos >= 0);
    um_err e = { "" };
    int n = prompt_of(p, NULL, NULL, NULL, got, 512, &e);
    CHECK_MSG(n == 1 + CELLS + CELLS, "n_prompt %d (%s)", n, e.msg);
    CHECK_EQ(got[0], bos);                                   /* the tokenizer adds BOS (bos = tokenizer) */
    for (int k = 0; k < CELLS; k++) CHECK_EQ(got[1 + k], MARK0 + k);
    for (int k = 0; k < CELLS; k++) CHECK_EQ(got[1 + CELLS + k], (unsigned char)PUZZLE[k]);
    /* the template has no system line: a system prompt is refused, naming where it came from */
    CHECK(prompt_of(p, NULL, NULL, "Be brief.", got, 512, &e) == -1);
    char want[400];
    snprintf(want, sizeof want, "%s: unmask.chat_template: no 'system' line", p);
    CHECK_CONTAINS(e.msg, want);
}

TEST(chat_own_template_loses_to_a_named_one) {
    const char *p = write_model(marker_template(), false, NULL);
    CHECK(p);
    int32_t bos = file_id(p, "BOS"), header = file_id(p, "<|start_header_id|>"), got[512];
    CHECK(bos >= 0 && header >= 0);
    um_err e = { "" };
    /* "none": --no-chat, --chat-template none, a preset's chat_template = none */
    int n = prompt_of(p, "none", NULL, NULL, got, 512, &e);
    CHECK_MSG(n == 1 + CELLS, "n_prompt %d (%s)", n, e.msg);
    CHECK_EQ(got[0], bos);
    for (int k = 0; k < CELLS; k++) CHECK_EQ(got[1 + k], (unsigned char)PUZZLE[k]);
    /* a named family: LLaDA's headers, no marker anywhere */
    n = prompt_of(p, "llada", NULL, NULL, got, 512, &e);
    CHECK_MSG(n > CELLS, "n_prompt %d (%s)", n, e.msg);
    CHECK_EQ(got[0], bos);
    CHECK_EQ(got[1], header);
    for (int i = 0; i < n; i++) CHECK(got[i] < MARK0 || got[i] >= MARK0 + CELLS);
    /* --chat-template-file: one marker of its own, then the puzzle */
    char tf[256];
    snprintf(tf, sizeof tf, "/tmp/unmask-chatown-%d.chat", (int)getpid());
    FILE *f = fopen(tf, "w");
    CHECK(f);
    fputs("user = \"<|r5c5|>{user}\"\nassistant = \"\"\n", f);
    fclose(f);
    n = prompt_of(p, NULL, tf, NULL, got, 512, &e);
    unlink(tf);
    CHECK_MSG(n == 2 + CELLS, "n_prompt %d (%s)", n, e.msg);
    CHECK_EQ(got[0], bos);
    CHECK_EQ(got[1], MARK0 + 40);
    CHECK_EQ(got[2], '5');
}

/* One line, the file and the key named, and the model not opened: in the engine (with or
 * without a template named) and in the verdict `unmask info` prints (without the file). */
static void refused(const char *own, bool own_u32, const char *want) {
    const char *p = write_model(own, own_u32, NULL);
    if (!p) { th_fail(__FILE__, __LINE__, "no model"); return; }
    char full[600];
    snprintf(full, sizeof full, "%s: %s", p, want);
    const char *names[] = { NULL, "none", "llada" };
    for (int i = 0; i < 3; i++) {
        um_engine_opts o = { .model_path = p, .n_threads = 1, .kernel = -1, .chat_template = names[i] };
        um_engine *en = NULL;
        um_err e = { "" };
        int rc = engine_open(&en, &o, &e);
        bool opened = en != NULL;
        engine_close(en);
        if (rc != UM_FAIL || opened || strncmp(e.msg, full, strlen(full)) || strchr(e.msg, '\n')) {
            th_fail(__FILE__, __LINE__, "chat_template %s: rc %d, '%s' (wanted '%s...')", names[i] ? names[i] : "(none)",
                    rc, e.msg, full);
            return;
        }
    }
    um_err e = { "" };
    if (model_check_runnable(p, &e) != UM_FAIL || strncmp(e.msg, want, strlen(want)))
        th_fail(__FILE__, __LINE__, "verdict: '%s' (wanted '%s...')", e.msg, want);
}

TEST(chat_own_template_malformed_is_one_line) {
    refused("user = \"{user}\"\nasistant = \"\"\n", false, "unmask.chat_template:2: unknown key 'asistant'");
    refused("# no placeholder\nuser = \"<|r1c1|>\"\nassistant = \"\"\n", false,
            "unmask.chat_template:2: user must hold {user} once");
    refused("user = \"{user}\"\n", false, "unmask.chat_template: no 'assistant' line");
    refused(NULL, true, "unmask.chat_template: has type uint32, expected string");
}

TEST(chat_own_template_source) {
    um_err e = { "" };
    chat_choice c;
    gguf_file *g;
    /* the file's own, over a tokenizer template unmask would recognise */
    const char *p = write_model(marker_template(), false, "<|im_start|>{{ x }}");
    CHECK(p && gguf_open(&g, p, &e) == UM_OK);
    int rc = chat_from_gguf(g, "llada", "M.gguf", &c, &e);
    gguf_close(g);
    CHECK_MSG(rc == UM_OK, "%s", e.msg);
    CHECK(c.own && c.from && !strcmp(c.from, CHAT_GGUF_KEY));
    CHECK_STREQ(chat_custom_file(c.own), "M.gguf: unmask.chat_template");
    CHECK(chat_custom_has_bos(c.own) == false);
    chat_custom_free(c.own);
    /* no own key: the tokenizer's template when recognised, else the architecture's, else none */
    static const struct { const char *tmpl; um_chat chat; const char *from; } cases[] = {
        { "<|im_start|>{{ x }}", UM_CHAT_CHATML, "tokenizer.chat_template" },
        { "{{ unknown }}", UM_CHAT_LLADA, "general.architecture" },
        { NULL, UM_CHAT_NONE, NULL },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        p = write_model(NULL, false, cases[i].tmpl);
        CHECK(p && gguf_open(&g, p, &e) == UM_OK);
        rc = chat_from_gguf(g, "llada", NULL, &c, &e);
        gguf_close(g);
        CHECK_MSG(rc == UM_OK, "%s", e.msg);
        CHECK(!c.own);
        CHECK_EQ(c.chat, cases[i].chat);
        CHECK(cases[i].from ? c.from && !strcmp(c.from, cases[i].from) : !c.from);
    }
}
