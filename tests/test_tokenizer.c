/*
 * Tokenizer tests: the conformance files in tests/data/vocab (token ids produced by each
 * model's reference Hugging Face tokenizer), round trips, pre-tokenizer splits checked by
 * hand, invalid UTF-8, special tokens, BOS/EOS rules, and bad files.
 */
#include "harness.h"
#include "tokenizer.h"
#include "unicode_pre.h"
#include "gguf.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

#define VOCAB_DIR "tests/data/vocab/"

/* ------------------------------------------------------------------ conformance */

/* Runs every input of NAME.gguf.inp (inputs separated by "\n__ggml_vocab_test__\n"; the
 * file ends with a separator) against the matching line of NAME.gguf.out (ids separated by
 * spaces, possibly with a leading space). Encoding adds no BOS/EOS and parses no control
 * tokens, as the reference did. Returns the number of inputs checked, -1 on failure. */
static int conformance(const char *name) {
    char path[256];
    um_err e = { { 0 } };
    tokenizer *t;
    snprintf(path, sizeof path, VOCAB_DIR "%s.gguf", name);
    if (tok_load_file(&t, path, &e) != UM_OK) { th_fail(__FILE__, __LINE__, "load: %s", e.msg); return -1; }

    char *inp, *outp;
    size_t inp_len, out_len;
    snprintf(path, sizeof path, VOCAB_DIR "%s.gguf.inp", name);
    if (um_read_file(path, &inp, &inp_len, &e) != UM_OK) { th_fail(__FILE__, __LINE__, "%s", e.msg); tok_free(t); return -1; }
    snprintf(path, sizeof path, VOCAB_DIR "%s.gguf.out", name);
    if (um_read_file(path, &outp, &out_len, &e) != UM_OK) { th_fail(__FILE__, __LINE__, "%s", e.msg); free(inp); tok_free(t); return -1; }

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

TEST(tok_conformance_gpt2)         { CHECK_EQ(conformance("ggml-vocab-gpt-2"), 46); }
TEST(tok_conformance_deepseek_llm) { CHECK_EQ(conformance("ggml-vocab-deepseek-llm"), 46); }
TEST(tok_conformance_starcoder)    { CHECK_EQ(conformance("ggml-vocab-starcoder"), 46); }
TEST(tok_conformance_mpt)          { CHECK_EQ(conformance("ggml-vocab-mpt"), 46); }
TEST(tok_conformance_llama_spm)    { CHECK_EQ(conformance("ggml-vocab-llama-spm"), 46); }
TEST(tok_conformance_phi3)         { CHECK_EQ(conformance("ggml-vocab-phi-3"), 46); }
