/*
 * Tokenizer tests: the conformance files in tests/data/vocab (token ids produced by each
 * model's reference Hugging Face tokenizer), round trips, pre-tokenizer splits checked by
 * hand, invalid UTF-8, special tokens, BOS/EOS rules, and bad files.
 */
#include "harness.h"
#include "infile.h"
#include "tokenizer.h"
#include "unicode_pre.h"
#include "gguf.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define VOCAB_DIR "tests/data/vocab/"

/* ------------------------------------------------------------------ conformance */

/* Runs every input of NAME.gguf.inp (inputs separated by "\n__ggml_vocab_test__\n"; the
 * file ends with a separator) against the matching line of NAME.gguf.out (ids separated by
 * spaces, possibly with a leading space). Encoding adds no BOS/EOS and parses no control
 * tokens, as the reference did. Returns the number of inputs checked, -1 on failure. */
static int conformance_in(const char *dir, const char *name) {
    char path[512];
    um_err e = { { 0 } };
    tokenizer *t;
    snprintf(path, sizeof path, "%s%s.gguf", dir, name);
    if (tok_load_file(&t, path, &e) != UM_OK) { th_fail(__FILE__, __LINE__, "load: %s", e.msg); return -1; }

    char *inp, *outp;
    size_t inp_len, out_len;
    snprintf(path, sizeof path, "%s%s.gguf.inp", dir, name);
    if (infile_read(path, (size_t)1 << 30, &inp, &inp_len, &e) != UM_OK) { th_fail(__FILE__, __LINE__, "%s", e.msg); tok_free(t); return -1; }
    snprintf(path, sizeof path, "%s%s.gguf.out", dir, name);
    if (infile_read(path, (size_t)1 << 30, &outp, &out_len, &e) != UM_OK) { th_fail(__FILE__, __LINE__, "%s", e.msg); free(inp); tok_free(t); return -1; }

    static const char sep[] = "\n__ggml_vocab_test__\n";
    const size_t sep_len = sizeof sep - 1;
    int count = 0, bad = 0;
    size_t ip = 0;
    char *line = outp;
    while (ip < inp_len) {
        const char *next = memmem(inp + ip, inp_len - ip, sep, sep_len);
        size_t in_n = next ? (size_t)(next - (inp + ip)) : inp_len - ip;
        const char *in = inp + ip;
        ip += in_n + (next ? sep_len : 0);

        char *eol = strchr(line, '\n');
        if (!eol) { th_fail(__FILE__, __LINE__, "%s: .out has fewer lines than .inp has inputs", name); bad++; break; }
        *eol = 0;
        int32_t want[512];
        int nw = 0;
        for (char *p = line; *p; ) {
            while (*p == ' ') p++;
            if (!*p) break;
            want[nw++] = (int32_t)strtol(p, &p, 10);
            if (nw == 512) break;
        }
        line = eol + 1;

        int32_t *ids;
        size_t n;
        if (tok_encode(t, in, in_n, 0, &ids, &n, &e) != UM_OK) {
            th_fail(__FILE__, __LINE__, "%s input %d: %s", name, count, e.msg);
            bad++;
            count++;
            continue;
        }
        int same = (int)n == nw;
        for (size_t i = 0; same && i < n; i++) same = ids[i] == want[i];
        if (!same) {
            char got[2048] = "", exp[2048] = "";
            for (size_t i = 0; i < n && strlen(got) < 2000; i++) snprintf(got + strlen(got), sizeof got - strlen(got), " %d", ids[i]);
            for (int i = 0; i < nw && strlen(exp) < 2000; i++) snprintf(exp + strlen(exp), sizeof exp - strlen(exp), " %d", want[i]);
            th_fail(__FILE__, __LINE__, "%s input %d '%.*s':\n  got %s\n  want%s", name, count, (int)in_n, in, got, exp);
            bad++;
        }
        char *dec;
        size_t dl;
        if (tok_decode(t, ids, n, 0, &dec, &dl, &e) != UM_OK) {
            th_fail(__FILE__, __LINE__, "%s input %d decode: %s", name, count, e.msg);
            bad++;
        } else {
            if (dl != in_n || memcmp(dec, in, in_n) != 0) {
                th_fail(__FILE__, __LINE__, "%s input %d: decode gives '%.*s', want '%.*s'", name, count, (int)dl, dec, (int)in_n, in);
                bad++;
            }
            free(dec);
        }
        free(ids);
        count++;
    }
    if (*line) { th_fail(__FILE__, __LINE__, "%s: .out has more lines than .inp has inputs", name); bad++; }
    free(inp);
    free(outp);
    tok_free(t);
    return bad ? -1 : count;
}

static int conformance(const char *name) { return conformance_in(VOCAB_DIR, name); }

TEST(tok_conformance_gpt2)         { CHECK_EQ(conformance("ggml-vocab-gpt-2"), 46); }
TEST(tok_conformance_deepseek_llm) { CHECK_EQ(conformance("ggml-vocab-deepseek-llm"), 46); }
TEST(tok_conformance_starcoder)    { CHECK_EQ(conformance("ggml-vocab-starcoder"), 46); }
TEST(tok_conformance_mpt)          { CHECK_EQ(conformance("ggml-vocab-mpt"), 46); }
TEST(tok_conformance_llama_spm)    { CHECK_EQ(conformance("ggml-vocab-llama-spm"), 46); }
TEST(tok_conformance_phi3)         { CHECK_EQ(conformance("ggml-vocab-phi-3"), 46); }
TEST(tok_conformance_gemma4)       { CHECK_EQ(conformance("ggml-vocab-gemma-4-subset"), 46); }

/* ------------------------------------------------------------------ pre-tokenizer splits */

/* Expected pieces ('|'-separated) computed with Python's `regex` module running the
 * Hugging Face patterns (GPT-2, Llama-3, Qwen2) on the same strings. */
static const struct split_case {
    upre_kind   kind;
    const char *text;
    const char *pieces;
} split_cases[] = {
    { UPRE_GPT2, "Hello world's 12345 \n\n  x!!\n",
      "Hello| world|'s| 12345| \n\n | x|!!|\n" },
    { UPRE_GPT2, "I'VE  \t\tgot (it)\r\n\r\n  ok",
      "I|'|VE|  \t|\t|got| (|it|)|\r\n\r\n | ok" },
    { UPRE_GPT2, "  \xc2\xa0""x\xe3\x80\x80""y 1\xc2\xbd""\xd9\xa3""\xd9\xa4""",
      "  |\xc2\xa0""|x|\xe3\x80\x80""|y| 1\xc2\xbd""\xd9\xa3""\xd9\xa4""" },
    { UPRE_GPT2, "\"quoted\"...\n\nend   ",
      "\"|quoted|\"...|\n|\n|end|   " },
    { UPRE_GPT2, "don't'S 'Ll\t\n \n x",
      "don|'t|'|S| '|Ll|\t\n \n| x" },
    { UPRE_LLAMA3, "Hello world's 12345 \n\n  x!!\n",
      "Hello| world|'s| |123|45| \n\n| | x|!!\n" },
    { UPRE_LLAMA3, "I'VE  \t\tgot (it)\r\n\r\n  ok",
      "I|'VE|  \t|\tgot| (|it|)\r\n\r\n| | ok" },
    { UPRE_LLAMA3, "  \xc2\xa0""x\xe3\x80\x80""y 1\xc2\xbd""\xd9\xa3""\xd9\xa4""",
      "  |\xc2\xa0""x|\xe3\x80\x80""y| |1\xc2\xbd""\xd9\xa3""|\xd9\xa4""" },
    { UPRE_LLAMA3, "\"quoted\"...\n\nend   ",
      "\"quoted|\"...\n\n|end|   " },
    { UPRE_LLAMA3, "don't'S 'Ll\t\n \n x",
      "don|'t|'S| '|Ll|\t\n \n| x" },
    { UPRE_QWEN2, "Hello world's 12345 \n\n  x!!\n",
      "Hello| world|'s| |1|2|3|4|5| \n\n| | x|!!\n" },
    { UPRE_QWEN2, "I'VE  \t\tgot (it)\r\n\r\n  ok",
      "I|'VE|  \t|\tgot| (|it|)\r\n\r\n| | ok" },
    { UPRE_QWEN2, "  \xc2\xa0""x\xe3\x80\x80""y 1\xc2\xbd""\xd9\xa3""\xd9\xa4""",
      "  |\xc2\xa0""x|\xe3\x80\x80""y| |1|\xc2\xbd""|\xd9\xa3""|\xd9\xa4""" },
    { UPRE_QWEN2, "\"quoted\"...\n\nend   ",
      "\"quoted|\"...\n\n|end|   " },
    { UPRE_QWEN2, "don't'S 'Ll\t\n \n x",
      "don|'t|'S| '|Ll|\t\n \n| x" },
};

TEST(tok_pre_splits_match_regex) {
    for (size_t c = 0; c < UM_ARRAY_LEN(split_cases); c++) {
        const struct split_case *sc = &split_cases[c];
        upre_span *sp;
        size_t n;
        um_err e = { { 0 } };
        CHECK(upre_split(sc->kind, sc->text, strlen(sc->text), &sp, &n, &e) == UM_OK);
        char got[256] = "";
        size_t k = 0;
        for (size_t i = 0; i < n && k + sp[i].len + 2 < sizeof got; i++) {
            if (i) got[k++] = '|';
            memcpy(got + k, sc->text + sp[i].off, sp[i].len);
            k += sp[i].len;
        }
        got[k] = 0;
        free(sp);
        CHECK_MSG(!strcmp(got, sc->pieces), "case %zu: got \"%s\", want \"%s\"", c, got, sc->pieces);
    }
}

TEST(tok_pre_invalid_utf8_tiles_input) {
    /* lone continuation, truncated 3-byte sequence, overlong '/', surrogate, 0xFF */
    static const char bad[] = "a\x80 b\xe2\x82 \xc0\xaf\xed\xa0\x80\xff!";
    for (int k = 0; k < UPRE_COUNT; k++) {
        upre_span *sp;
        size_t n;
        um_err e = { { 0 } };
        CHECK(upre_split((upre_kind)k, bad, sizeof bad - 1, &sp, &n, &e) == UM_OK);
        size_t at = 0;
        for (size_t i = 0; i < n; i++) {
            CHECK(sp[i].off == at && sp[i].len > 0);
            at += sp[i].len;
        }
        free(sp);
        CHECK_EQ(at, sizeof bad - 1);
    }
    uint32_t cp;
    CHECK_EQ(upre_utf8_decode((const uint8_t *)"\xc0\xaf", 2, &cp), 1);
    CHECK(cp == UPRE_INVALID);
    CHECK_EQ(upre_utf8_decode((const uint8_t *)"\xf0\x9f\x9a\x80", 4, &cp), 4);
    CHECK_EQ(cp, 0x1F680);
}

/* ------------------------------------------------------------------ synthetic vocabularies */

/* GPT-2's byte -> code point table, written out independently of tokenizer.c. */
static uint32_t gpt2_cp(int b) {
    static uint32_t map[256];
    static int init;
    if (!init) {
        int n = 0;
        for (int c = 0; c < 256; c++) {
            int keep = (c >= '!' && c <= '~') || (c >= 0xA1 && c <= 0xAC) || (c >= 0xAE);
            map[c] = keep ? (uint32_t)c : 256u + (uint32_t)n++;
        }
        init = 1;
    }
    return map[b];
}

typedef struct vocab_spec {
    const char  *model, *pre;
    const char **tokens;        /* appended after the 256 byte tokens (BPE) or as is (SPM) */
    const int32_t *types;       /* per appended token, NULL for all NORMAL */
    const float *scores;        /* SPM, per token */
    int          n;
    const char **merges;
    int          n_merges;
    int          bos, eos;      /* -1: key absent */
    int          add_bos;       /* -1: key absent */
} vocab_spec;

/* Writes the vocabulary to a temporary GGUF and loads it; NULL on failure (message in e). */
static tokenizer *make_vocab(const vocab_spec *v, um_err *e) {
    char path[64];
    snprintf(path, sizeof path, "/tmp/um_tok_test_%d.gguf", (int)getpid());
    int bpe = !strcmp(v->model, "gpt2");
    int base = bpe ? 256 : 0, n = base + v->n;
    char **toks = calloc((size_t)n, sizeof *toks);
    int32_t *types = calloc((size_t)n, sizeof *types);
    for (int b = 0; b < base; b++) {
        uint8_t u[5] = { 0 };
        uint32_t c = gpt2_cp(b);
        if (c < 0x80) u[0] = (uint8_t)c;
        else { u[0] = (uint8_t)(0xC0 | (c >> 6)); u[1] = (uint8_t)(0x80 | (c & 0x3F)); }
        toks[b] = strdup((char *)u);
        types[b] = TOK_TYPE_NORMAL;
    }
    for (int i = 0; i < v->n; i++) {
        toks[base + i] = strdup(v->tokens[i]);
        types[base + i] = v->types ? v->types[i] : TOK_TYPE_NORMAL;
    }
    gguf_writer *w = gguf_writer_new();
    gguf_set_str(w, "tokenizer.ggml.model", v->model);
    if (v->pre) gguf_set_str(w, "tokenizer.ggml.pre", v->pre);
    gguf_set_arr_str(w, "tokenizer.ggml.tokens", (const char *const *)toks, (uint64_t)n);
    gguf_set_arr(w, "tokenizer.ggml.token_type", GGUF_TYPE_INT32, types, (uint64_t)n);
    if (v->scores) gguf_set_arr(w, "tokenizer.ggml.scores", GGUF_TYPE_FLOAT32, v->scores, (uint64_t)v->n);
    if (v->merges) gguf_set_arr_str(w, "tokenizer.ggml.merges", v->merges, (uint64_t)v->n_merges);
    if (v->bos >= 0) gguf_set_u32(w, "tokenizer.ggml.bos_token_id", (uint32_t)v->bos);
    if (v->eos >= 0) gguf_set_u32(w, "tokenizer.ggml.eos_token_id", (uint32_t)v->eos);
    if (v->add_bos >= 0) gguf_set_bool(w, "tokenizer.ggml.add_bos_token", v->add_bos);
    int rc = gguf_writer_write(w, path, e);
    gguf_writer_free(w);
    for (int i = 0; i < n; i++) free(toks[i]);
    free(toks);
    free(types);
    tokenizer *t = NULL;
    if (rc == UM_OK) tok_load_file(&t, path, e);
    unlink(path);
    return t;
}

/* Encode and compare with an expected id list (terminated by -1). */
static int encodes_to(const tokenizer *t, const char *s, size_t len, unsigned flags, const int32_t *want) {
    int32_t *ids;
    size_t n;
    um_err e = { { 0 } };
    if (tok_encode(t, s, len, flags, &ids, &n, &e) != UM_OK) return 0;
    size_t nw = 0;
    while (want[nw] >= 0) nw++;
    int ok = n == nw;
    for (size_t i = 0; ok && i < n; i++) ok = ids[i] == want[i];
    if (!ok) {
        fprintf(stderr, "    got:");
        for (size_t i = 0; i < n; i++) fprintf(stderr, " %d", ids[i]);
        fprintf(stderr, "\n");
    }
    free(ids);
    return ok;
}

static int round_trips(const tokenizer *t, const char *s, size_t len, unsigned enc_flags, unsigned dec_flags) {
    int32_t *ids;
    size_t n, dl;
    char *d;
    um_err e = { { 0 } };
    if (tok_encode(t, s, len, enc_flags, &ids, &n, &e) != UM_OK) return 0;
    int rc = tok_decode(t, ids, n, dec_flags, &d, &dl, &e);
    free(ids);
    if (rc != UM_OK) return 0;
    int ok = dl == len && memcmp(d, s, len) == 0;
    free(d);
    return ok;
}

/* Byte tokens are ids 0..255 in byte order; appended tokens start at 256. */
#define B(c) ((int32_t)(uint8_t)(c))

TEST(tok_bpe_merge_rank_order) {
    static const char *tokens[] = { "ab", "bc" };
    static const char *m1[] = { "b c", "a b" };     /* "b c" ranks first */
    static const char *m2[] = { "a b", "b c" };
    vocab_spec v = { "gpt2", "gpt-2", tokens, NULL, NULL, 2, m1, 2, -1, -1, -1 };
    um_err e = { { 0 } };
    tokenizer *t = make_vocab(&v, &e);
    CHECK_MSG(t, "%s", e.msg);
    CHECK(encodes_to(t, "abc", 3, 0, (const int32_t[]){ B('a'), 257, -1 }));
    tok_free(t);
    v.merges = m2;
    t = make_vocab(&v, &e);
    CHECK_MSG(t, "%s", e.msg);
    CHECK(encodes_to(t, "abc", 3, 0, (const int32_t[]){ 256, B('c'), -1 }));
    /* equal ranks: the leftmost pair merges first */
    CHECK(encodes_to(t, "abab", 4, 0, (const int32_t[]){ 256, 256, -1 }));
    tok_free(t);
}

TEST(tok_bpe_llama3_whole_word_and_bos) {
    static const char *tokens[] = { "abc", "<|begin|>" };
    static const int32_t types[] = { TOK_TYPE_NORMAL, TOK_TYPE_CONTROL };
    vocab_spec v = { "gpt2", "llama-bpe", tokens, types, NULL, 2, (const char *[]){ "x y" }, 1, 257, -1, -1 };
    um_err e = { { 0 } };
    tokenizer *t = make_vocab(&v, &e);
    CHECK_MSG(t, "%s", e.msg);
    /* llama3 takes a piece that is a whole token without merges, and adds BOS by default */
    CHECK(encodes_to(t, "abc", 3, 0, (const int32_t[]){ 256, -1 }));
    CHECK(encodes_to(t, "abc", 3, TOK_ADD_SPECIAL, (const int32_t[]){ 257, 256, -1 }));
    CHECK(tok_special(t)->add_bos);
    tok_free(t);
    /* gpt-2 has no such shortcut and no BOS by default; add_bos_token=false wins anyway */
    v.pre = "gpt-2";
    t = make_vocab(&v, &e);
    CHECK_MSG(t, "%s", e.msg);
    CHECK(encodes_to(t, "abc", 3, TOK_ADD_SPECIAL, (const int32_t[]){ B('a'), B('b'), B('c'), -1 }));
    tok_free(t);
    v.pre = "llama-bpe";
    v.add_bos = 0;
    t = make_vocab(&v, &e);
    CHECK_MSG(t, "%s", e.msg);
    CHECK(encodes_to(t, "abc", 3, TOK_ADD_SPECIAL, (const int32_t[]){ 256, -1 }));
    tok_free(t);
}

TEST(tok_special_tokens_in_text) {
    static const char *tokens[] = { "<|eot_id|>", "<u>", "<a>", "<a><b>", "ab", "bcd" };
    static const int32_t types[] = { TOK_TYPE_CONTROL, TOK_TYPE_USER_DEFINED, TOK_TYPE_CONTROL, TOK_TYPE_CONTROL,
                                     TOK_TYPE_CONTROL, TOK_TYPE_CONTROL };
    vocab_spec v = { "gpt2", "gpt-2", tokens, types, NULL, 6, (const char *[]){ "x y" }, 1, -1, -1, -1 };
    um_err e = { { 0 } };
    tokenizer *t = make_vocab(&v, &e);
    CHECK_MSG(t, "%s", e.msg);
    const char *s = "x<|eot_id|>y<u>";
    CHECK(encodes_to(t, s, strlen(s), TOK_PARSE_SPECIAL, (const int32_t[]){ B('x'), 256, B('y'), 257, -1 }));
    /* without parsing, control text is plain text but user-defined tokens still match */
    CHECK(encodes_to(t, s, strlen(s), 0, (const int32_t[]){ B('x'), B('<'), B('|'), B('e'), B('o'), B('t'),
          B('_'), B('i'), B('d'), B('|'), B('>'), B('y'), 257, -1 }));
    /* the longer special wins */
    CHECK(encodes_to(t, "<a><b><a>", 9, TOK_PARSE_SPECIAL, (const int32_t[]){ 259, 258, -1 }));
    /* longest first, not leftmost first (llama.cpp): "abcd" is a + bcd, not ab + cd */
    CHECK(encodes_to(t, "abcd", 4, TOK_PARSE_SPECIAL, (const int32_t[]){ B('a'), 261, -1 }));
    CHECK(encodes_to(t, "ab<a>bcdab", 10, TOK_PARSE_SPECIAL, (const int32_t[]){ 260, 258, 261, 260, -1 }));
    CHECK(round_trips(t, s, strlen(s), TOK_PARSE_SPECIAL, TOK_DECODE_SPECIAL));
    /* end of generation found by text; decode hides control tokens unless asked */
    CHECK(tok_is_eog(t, 256));
    CHECK(!tok_is_eog(t, 257));
    int32_t ids[] = { B('x'), 256, B('y') };
    char *d;
    size_t dl;
    CHECK(tok_decode(t, ids, 3, 0, &d, &dl, &e) == UM_OK);
    CHECK_STREQ(d, "xy");
    free(d);
    CHECK(tok_decode(t, ids, 3, TOK_DECODE_SPECIAL, &d, &dl, &e) == UM_OK);
    CHECK_STREQ(d, "x<|eot_id|>y");
    free(d);
    tok_free(t);
}

TEST(tok_bpe_invalid_utf8) {
    vocab_spec v = { "gpt2", "llama-bpe", (const char *[]){ "zz" }, NULL, NULL, 1, (const char *[]){ "x y" }, 1, -1, -1, 0 };
    um_err e = { { 0 } };
    tokenizer *t = make_vocab(&v, &e);
    CHECK_MSG(t, "%s", e.msg);
    static const char bad[] = "\xff\xc3(\xe2\x82 a\x80";
    CHECK(encodes_to(t, bad, sizeof bad - 1, 0, (const int32_t[]){ 0xFF, 0xC3, '(', 0xE2, 0x82, ' ', 'a', 0x80, -1 }));
    CHECK(round_trips(t, bad, sizeof bad - 1, 0, 0));
    /* pieces are raw bytes: "é" split over two byte tokens joins on decode */
    size_t pl;
    const uint8_t *p = tok_piece(t, 0xC3, &pl);
    CHECK(pl == 1 && p[0] == 0xC3);
    p = tok_piece(t, B(' '), &pl);           /* stored as U+0120 'Ġ' */
    CHECK(pl == 1 && p[0] == ' ');
    char *d;
    size_t dl;
    CHECK(tok_decode(t, (const int32_t[]){ 0xC3, 0xA9 }, 2, 0, &d, &dl, &e) == UM_OK);
    CHECK_STREQ(d, "\xc3\xa9");
    free(d);
    CHECK(tok_decode(t, (const int32_t[]){ 5, 300 }, 2, 0, &d, &dl, &e) == UM_FAIL);
    CHECK_CONTAINS(e.msg, "300");
    tok_free(t);
}

/* SPM: <unk> <s> </s>, 256 byte tokens, then pieces with scores. */
static tokenizer *make_spm(int with_ab, um_err *e) {
    static char bytes[256][7];
    static const char *tokens[3 + 256 + 5];
    static int32_t types[3 + 256 + 5];
    static float scores[3 + 256 + 5];
    int n = 0;
    tokens[n] = "<unk>"; types[n++] = TOK_TYPE_UNKNOWN;
    tokens[n] = "<s>";   types[n++] = TOK_TYPE_CONTROL;
    tokens[n] = "</s>";  types[n++] = TOK_TYPE_CONTROL;
    for (int b = 0; b < 256; b++) {
        snprintf(bytes[b], sizeof bytes[b], "<0x%02X>", b);
        tokens[n] = bytes[b]; types[n++] = TOK_TYPE_BYTE;
    }
    static const char *pieces[] = { "\xe2\x96\x81", "a", "b", "\xe2\x96\x81""a", "\xe2\x96\x81""ab" };
    static const float piece_scores[] = { -3, -4, -5, -1, -0.5f };
    for (int i = 0; i < (with_ab ? 5 : 4); i++) {
        tokens[n] = pieces[i]; types[n] = TOK_TYPE_NORMAL; scores[n++] = piece_scores[i];
    }
    vocab_spec v = { "llama", NULL, tokens, types, scores, n, NULL, 0, -1, -1, -1 };
    return make_vocab(&v, e);
}

#define SPM_SPACE 259
#define SPM_A     260
#define SPM_B     261
#define SPM_SA    262
#define SPM_SAB   263
#define SPM_BYTE(b) (3 + (b))

TEST(tok_spm_scores_prefix_and_byte_fallback) {
    um_err e = { { 0 } };
    tokenizer *t = make_spm(1, &e);
    CHECK_MSG(t, "%s", e.msg);
    CHECK(tok_special(t)->add_bos && tok_special(t)->add_space_prefix);
    CHECK(encodes_to(t, "ab", 2, 0, (const int32_t[]){ SPM_SAB, -1 }));
    CHECK(encodes_to(t, "ab", 2, TOK_ADD_SPECIAL, (const int32_t[]){ 1, SPM_SAB, -1 }));
    CHECK(encodes_to(t, "b a", 3, 0, (const int32_t[]){ SPM_SPACE, SPM_B, SPM_SA, -1 }));
    CHECK(encodes_to(t, "\xc3\xa9", 2, 0, (const int32_t[]){ SPM_SPACE, SPM_BYTE(0xC3), SPM_BYTE(0xA9), -1 }));
    CHECK(encodes_to(t, "\xff", 1, 0, (const int32_t[]){ SPM_SPACE, SPM_BYTE(0xFF), -1 }));
    /* text after a special token gets the space prefix again */
    CHECK(encodes_to(t, "a</s>a", 6, TOK_PARSE_SPECIAL, (const int32_t[]){ SPM_SA, 2, SPM_SA, -1 }));
    CHECK(round_trips(t, "b a \xc3\xa9\xff", 8, 0, 0));
    CHECK(round_trips(t, "b a", 3, TOK_ADD_SPECIAL, 0));
    char *d;
    size_t dl;
    CHECK(tok_decode(t, (const int32_t[]){ 1, SPM_SAB }, 2, TOK_DECODE_KEEP_PREFIX, &d, &dl, &e) == UM_OK);
    CHECK_STREQ(d, " ab");
    free(d);
    tok_free(t);
    t = make_spm(0, &e);
    CHECK_MSG(t, "%s", e.msg);
    CHECK(encodes_to(t, "ab", 2, 0, (const int32_t[]){ SPM_SA, SPM_B, -1 }));
    tok_free(t);
}

TEST(tok_bad_files) {
    um_err e = { { 0 } };
    vocab_spec v = { "bert", NULL, (const char *[]){ "a" }, NULL, NULL, 1, NULL, 0, -1, -1, -1 };
    CHECK(make_vocab(&v, &e) == NULL);
    CHECK_CONTAINS(e.msg, "'bert'");
    v = (vocab_spec){ "gpt2", "no-such-pre", (const char *[]){ "a" }, NULL, NULL, 1, (const char *[]){ "x y" }, 1, -1, -1, -1 };
    CHECK(make_vocab(&v, &e) == NULL);
    CHECK_CONTAINS(e.msg, "no-such-pre");
    CHECK_CONTAINS(e.msg, "qwen2");
    v = (vocab_spec){ "gpt2", "gpt-2", (const char *[]){ "a" }, NULL, NULL, 1, NULL, 0, -1, -1, -1 };
    CHECK(make_vocab(&v, &e) == NULL);
    CHECK_CONTAINS(e.msg, "tokenizer.ggml.merges");
    CHECK(tok_load_file(&(tokenizer *){ NULL }, VOCAB_DIR "README.md", &e) == UM_FAIL);
}

/* decode(encode(x)) == x for random byte strings mixing ASCII, whitespace, multi-byte UTF-8
 * and invalid UTF-8 (lone lead and continuation bytes, truncated sequences), on every
 * conformance vocabulary (BPE keeps every byte; SPM falls back to byte tokens and decode
 * drops only the space it added). Bytes C0, C1 and F5-FF are left out: they never occur in
 * UTF-8 and the starcoder/mpt/deepseek vocabularies have no token for them (see
 * tok_bpe_invalid_utf8 for a vocabulary that has). Deterministic LCG. */
TEST(tok_random_round_trip) {
    static const char *const names[] = { "gpt-2", "deepseek-llm", "starcoder", "mpt", "llama-spm", "phi-3" };
    static const char *const atoms[] = { "a", "Z", "7", " ", "  ", "\n", "\t", "\r\n", "'s", "!", "\xc3\xa9",
                                         "\xe6\x97\xa5", "\xf0\x9f\xa6\x99", "\xc3", "\x80", "\xe2\x82", "\xf0\x9f", "\xcc\x81" };
    uint64_t state = 0x9E3779B97F4A7C15ull;
    for (size_t v = 0; v < UM_ARRAY_LEN(names); v++) {
        char path[128];
        um_err e = { { 0 } };
        tokenizer *t;
        snprintf(path, sizeof path, VOCAB_DIR "ggml-vocab-%s.gguf", names[v]);
        CHECK_MSG(tok_load_file(&t, path, &e) == UM_OK, "%s", e.msg);
        for (int it = 0; it < 200; it++) {
            char s[512];
            size_t len = 0;
            state = state * 6364136223846793005ull + 1442695040888963407ull;
            int n_atoms = (int)((state >> 33) % 40);
            for (int k = 0; k < n_atoms; k++) {
                state = state * 6364136223846793005ull + 1442695040888963407ull;
                const char *a = atoms[(state >> 33) % UM_ARRAY_LEN(atoms)];
                memcpy(s + len, a, strlen(a));
                len += strlen(a);
            }
            int ok = round_trips(t, s, len, 0, 0);
            if (!ok) tok_free(t);
            CHECK_MSG(ok, "%s: round trip of %zu bytes failed (iteration %d)", names[v], len, it);
        }
        tok_free(t);
    }
}

/* More conformance files ship with llama.cpp (models/ggml-vocab-*.gguf, several MB each, so
 * not copied here). When the peer source is present (make peer; or UNMASK_PEER_VOCAB=DIR/),
 * they are checked too; otherwise these tests are skipped, never passed. */
static void peer_conformance(const char *name) {
    const char *dir = getenv("UNMASK_PEER_VOCAB");
    if (!dir) dir = "build/peer/src/models/";
    char path[512];
    snprintf(path, sizeof path, "%s%s.gguf.out", dir, name);
    if (access(path, R_OK) != 0) { th_skip("llama.cpp's vocab files not found (make peer, or set UNMASK_PEER_VOCAB)"); return; }
    int n = conformance_in(dir, name);
    CHECK_MSG(n > 0, "%s: conformance failed", name);
}

TEST(tok_peer_conformance_llama_bpe)      { peer_conformance("ggml-vocab-llama-bpe"); }
TEST(tok_peer_conformance_qwen2)          { peer_conformance("ggml-vocab-qwen2"); }
TEST(tok_peer_conformance_deepseek_coder) { peer_conformance("ggml-vocab-deepseek-coder"); }
TEST(tok_peer_conformance_falcon)         { peer_conformance("ggml-vocab-falcon"); }
TEST(tok_peer_conformance_command_r)      { peer_conformance("ggml-vocab-command-r"); }
TEST(tok_peer_conformance_refact)         { peer_conformance("ggml-vocab-refact"); }

TEST(tok_utf8_complete_len_holds_back_partial_sequences) {
    const uint8_t *s = (const uint8_t *)"ab\xc3\xa9\xf0\x9f\xa6\x99";
    CHECK_EQ(tok_utf8_complete_len(s, 0), 0);
    CHECK_EQ(tok_utf8_complete_len(s, 2), 2);
    CHECK_EQ(tok_utf8_complete_len(s, 3), 2);       /* "ab" + lead of é */
    CHECK_EQ(tok_utf8_complete_len(s, 4), 4);
    CHECK_EQ(tok_utf8_complete_len(s, 5), 4);       /* lead of the emoji */
    CHECK_EQ(tok_utf8_complete_len(s, 7), 4);       /* 3 of its 4 bytes */
    CHECK_EQ(tok_utf8_complete_len(s, 8), 8);
    CHECK_EQ(tok_utf8_complete_len((const uint8_t *)"a\x80", 2), 2);      /* stray continuation */
    CHECK_EQ(tok_utf8_complete_len((const uint8_t *)"a\xff", 2), 2);      /* never valid */
    CHECK_EQ(tok_utf8_complete_len((const uint8_t *)"a\xc0", 2), 2);      /* overlong lead */
    CHECK_EQ(tok_utf8_complete_len((const uint8_t *)"a\xed\xa0", 3), 3); /* surrogate start */
    CHECK_EQ(tok_utf8_complete_len((const uint8_t *)"\xe2\x82", 2), 0);  /* start of euro sign */
}
