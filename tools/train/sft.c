/*
 * sft: JSONL prompt/answer examples tokenized into fixed-length sequences (see sft.h).
 *
 * The JSON reader handles one flat object per line: string keys, string values with every
 * JSON escape (\uXXXX and surrogate pairs to UTF-8), and other values (numbers, literals,
 * nested objects or arrays) skipped. It never reads past len and rejects anything else.
 * Evaluation works in batches of up to the workspace's max_b sequences.
 */
#include "sft.h"
#include "infile.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ JSON */

typedef struct reader {
    const char *s;
    size_t n, i;
} reader;

static void skip_ws(reader *r) {
    while (r->i < r->n && (r->s[r->i] == ' ' || r->s[r->i] == '\t' || r->s[r->i] == '\r' || r->s[r->i] == '\n')) r->i++;
}

static int hex4(reader *r, uint32_t *v) {
    if (r->n - r->i < 4) return -1;
    *v = 0;
    for (int k = 0; k < 4; k++) {
        char c = r->s[r->i++];
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (d < 0) return -1;
        *v = *v << 4 | (uint32_t)d;
    }
    return 0;
}

static size_t put_utf8(uint32_t cp, char *o) {
    if (cp < 0x80) { o[0] = (char)cp; return 1; }
    if (cp < 0x800) { o[0] = (char)(0xc0 | cp >> 6); o[1] = (char)(0x80 | (cp & 63)); return 2; }
    if (cp < 0x10000) {
        o[0] = (char)(0xe0 | cp >> 12); o[1] = (char)(0x80 | (cp >> 6 & 63)); o[2] = (char)(0x80 | (cp & 63));
        return 3;
    }
    o[0] = (char)(0xf0 | cp >> 18); o[1] = (char)(0x80 | (cp >> 12 & 63));
    o[2] = (char)(0x80 | (cp >> 6 & 63)); o[3] = (char)(0x80 | (cp & 63));
    return 4;
}

/* A string at r->i (the opening quote); into *out (heap) when out is given. */
static int read_string(reader *r, char **out, um_err *e) {
    if (r->i >= r->n || r->s[r->i] != '"') return um_errf(e, "expected a string at byte %zu", r->i + 1);
    r->i++;
    char *o = out ? malloc(r->n - r->i + 1) : NULL;     /* decoded text is never longer than its source */
    if (out && !o) return um_errf(e, "out of memory");
    size_t k = 0;
    while (r->i < r->n && r->s[r->i] != '"') {
        char c = r->s[r->i++];
        if ((unsigned char)c < 0x20) { free(o); return um_errf(e, "control character in a string at byte %zu", r->i); }
        if (c != '\\') { if (o) o[k++] = c; continue; }
        if (r->i >= r->n) break;
        char x = r->s[r->i++];
        const char *from = "\"\\/bfnrt", *to = "\"\\/\b\f\n\r\t";
        const char *f = x ? strchr(from, x) : NULL;
        if (f) { if (o) o[k++] = to[f - from]; continue; }
        uint32_t cp, lo;
        if (x != 'u' || hex4(r, &cp)) { free(o); return um_errf(e, "bad escape in a string at byte %zu", r->i); }
        if (cp >= 0xd800 && cp < 0xdc00) {
            if (r->n - r->i < 6 || r->s[r->i] != '\\' || r->s[r->i + 1] != 'u') { free(o); return um_errf(e, "lone surrogate at byte %zu", r->i); }
            r->i += 2;
            if (hex4(r, &lo) || lo < 0xdc00 || lo >= 0xe000) { free(o); return um_errf(e, "bad surrogate pair at byte %zu", r->i); }
            cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
        } else if (cp >= 0xdc00 && cp < 0xe000) {
            free(o);
            return um_errf(e, "lone surrogate at byte %zu", r->i);
        }
        if (o) k += put_utf8(cp, o + k);    /* \uXXXX (6 bytes) -> at most 3, a pair (12) -> 4 */
    }
    if (r->i >= r->n) { free(o); return um_errf(e, "unterminated string"); }
    r->i++;
    if (o) { o[k] = 0; *out = o; }
    return UM_OK;
}

/* Any other value: a number or literal runs to the next , } ] or space; objects and arrays
 * are skipped by depth, strings inside them by read_string. */
static int skip_value(reader *r, um_err *e) {
    if (r->i >= r->n) return um_errf(e, "missing value");
    char c = r->s[r->i];
    if (c == '"') return read_string(r, NULL, e);
    if (c == '{' || c == '[') {
        int depth = 0;
        while (r->i < r->n) {
            c = r->s[r->i];
            if (c == '"') { if (read_string(r, NULL, e)) return UM_FAIL; continue; }
            if (c == '{' || c == '[') depth++;
            if (c == '}' || c == ']') depth--;
            r->i++;
            if (depth == 0) return UM_OK;
        }
        return um_errf(e, "unterminated object or array");
    }
    size_t b = r->i;
    while (r->i < r->n && !strchr(",}] \t\r\n", r->s[r->i])) r->i++;
    if (r->i == b) return um_errf(e, "missing value at byte %zu", b + 1);
    return UM_OK;
}

int sft_parse_line(const char *line, size_t len, char **prompt, char **answer, um_err *e) {
    *prompt = *answer = NULL;
    reader r = { line, len, 0 };
    skip_ws(&r);
    if (r.i >= r.n || r.s[r.i] != '{') return um_errf(e, "not a JSON object");
    r.i++;
    skip_ws(&r);
    bool first = true;
    while (r.i < r.n && r.s[r.i] != '}') {
        if (!first) {
            if (r.s[r.i] != ',') goto bad_sep;
            r.i++;
            skip_ws(&r);
        }
        first = false;
        char *key = NULL;
        if (read_string(&r, &key, e)) goto fail;
        skip_ws(&r);
        if (r.i >= r.n || r.s[r.i] != ':') { free(key); um_errf(e, "expected ':' after a key"); goto fail; }
        r.i++;
        skip_ws(&r);
        char **dst = !strcmp(key, "prompt") ? prompt : !strcmp(key, "answer") ? answer : NULL;
        free(key);
        if (dst) {
            if (*dst) { um_errf(e, "a field is given twice"); goto fail; }
            if (r.i >= r.n || r.s[r.i] != '"') { um_errf(e, "\"prompt\" and \"answer\" must be strings"); goto fail; }
            if (read_string(&r, dst, e)) goto fail;
        } else if (skip_value(&r, e)) {
            goto fail;
        }
        skip_ws(&r);
    }
    if (r.i >= r.n) { um_errf(e, "unterminated object"); goto fail; }
    r.i++;
    skip_ws(&r);
    if (r.i < r.n) { um_errf(e, "text after the object"); goto fail; }
    if (!*prompt || !*answer) { um_errf(e, "missing \"%s\"", *prompt ? "answer" : "prompt"); goto fail; }
    return UM_OK;
bad_sep:
    um_errf(e, "expected ',' or '}' at byte %zu", r.i + 1);
fail:
    free(*prompt); free(*answer);
    *prompt = *answer = NULL;
    return UM_FAIL;
}

/* ------------------------------------------------------------------ examples */

typedef struct ex {
    int32_t *ids;               /* prompt then answer */
    size_t   n, n_prompt;
} ex;

static int encode_example(const tokenizer *tk, const char *prompt, const char *answer, ex *x, um_err *e) {
    int32_t *p = NULL, *a = NULL;
    size_t np = 0, na = 0;
    const tok_specials *sp = tok_special(tk);
    if (tok_encode(tk, prompt, strlen(prompt), TOK_PARSE_SPECIAL | TOK_ADD_SPECIAL, &p, &np, e)) return UM_FAIL;
    if (np > 0 && sp->add_eos && p[np - 1] == sp->eos) np--;      /* as engine_start does */
    if (tok_encode(tk, answer, strlen(answer), 0, &a, &na, e)) { free(p); return UM_FAIL; }
    if (np == 0 || na == 0) { free(p); free(a); return um_errf(e, "empty %s after tokenizing", np ? "answer" : "prompt"); }
    x->ids = malloc((np + na) * sizeof *x->ids);
    if (!x->ids) { free(p); free(a); return um_errf(e, "out of memory"); }
    memcpy(x->ids, p, np * sizeof *p);
    memcpy(x->ids + np, a, na * sizeof *a);
    x->n = np + na;
    x->n_prompt = np;
    free(p); free(a);
    return UM_OK;
}

int sft_load(sft_set *out, const tokenizer *tk, char *const *paths, int n_paths, int max_examples, int max_T,
             um_err *e) {
    memset(out, 0, sizeof *out);
    ex *xs = NULL;
    size_t n = 0, cap = 0, T = 0;
    int rc = UM_FAIL;
    for (int f = 0; f < n_paths && (max_examples <= 0 || n < (size_t)max_examples); f++) {
        char *text;
        size_t len;
        if (infile_read(paths[f], INFILE_MAX_TASKS, &text, &len, e)) goto out;
        size_t line = 0;
        for (size_t b = 0; b < len && (max_examples <= 0 || n < (size_t)max_examples);) {
            size_t eol = b;
            while (eol < len && text[eol] != '\n') eol++;
            line++;
            size_t k = b;
            while (k < eol && (text[k] == ' ' || text[k] == '\t' || text[k] == '\r')) k++;
            if (k < eol) {
                char *prompt, *answer;
                if (sft_parse_line(text + b, eol - b, &prompt, &answer, e)) {
                    um_err_prefix(e, "%s:%zu", paths[f], line);
                    free(text);
                    goto out;
                }
                if (n == cap) {
                    cap = cap ? cap * 2 : 1024;
                    ex *nx = realloc(xs, cap * sizeof *nx);
                    if (!nx) { free(prompt); free(answer); free(text); um_errf(e, "out of memory"); goto out; }
                    xs = nx;
                }
                int bad = encode_example(tk, prompt, answer, &xs[n], e);
                free(prompt); free(answer);
                if (bad) { um_err_prefix(e, "%s:%zu", paths[f], line); free(text); goto out; }
                if (xs[n].n > (size_t)max_T) {
                    um_errf(e, "%s:%zu: prompt + answer is %zu tokens, more than the context of %d", paths[f], line,
                            xs[n].n, max_T);
                    free(xs[n].ids);
                    free(text);
                    goto out;
                }
                if (xs[n].n > T) T = xs[n].n;
                n++;
            }
            b = eol + 1;
        }
        free(text);
    }
    if (n == 0) { um_errf(e, "no examples in the data files"); goto out; }
    uint64_t cells;
    if (!um_mul_ok(n, T, &cells) || !(out->seq = um_malloc(cells * sizeof *out->seq)) ||
        !(out->prompt_len = um_malloc(n * sizeof *out->prompt_len))) {
        sft_free(out);
        um_errf(e, "out of memory for %zu examples of %zu tokens", n, T);
        goto out;
    }
    const int32_t pad = tok_special(tk)->eos >= 0 ? tok_special(tk)->eos : 0;
    for (size_t i = 0; i < n; i++) {
        int32_t *s = out->seq + i * T;
        memcpy(s, xs[i].ids, xs[i].n * sizeof *s);
        for (size_t j = xs[i].n; j < T; j++) s[j] = pad;
        out->prompt_len[i] = (int32_t)xs[i].n_prompt;
    }
    out->n = (int32_t)n;
    out->T = (int32_t)T;
    rc = UM_OK;
out:
    for (size_t i = 0; i < n; i++) free(xs[i].ids);
    free(xs);
    return rc;
}

void sft_free(sft_set *s) {
    free(s->seq);
    free(s->prompt_len);
    memset(s, 0, sizeof *s);
}

/* ------------------------------------------------------------------ evaluation */


/* argmax over the vocabulary without the mask, its probability (softmax without the mask) */
static int32_t best_token(const float *lg, int V, int32_t mask_id, float *prob) {
    int32_t best = -1;
    float mx = -INFINITY;
    for (int i = 0; i < V; i++) if (i != mask_id && lg[i] > mx) { mx = lg[i]; best = i; }
    double sum = 0;
    for (int i = 0; i < V; i++) if (i != mask_id) sum += exp((double)(lg[i] - mx));
    *prob = (float)(1.0 / sum);
    return best;
}

void sft_heldout(tm_model *m, tm_ws *w, um_pool *p, const sft_set *s, int n, int B, double t, uint64_t seed,
                        int32_t *in, float *logits, sft_eval *ev) {
    const int T = s->T, V = m->c.n_vocab;
    uint64_t r[4];
    tm_rand_seed(r, seed);
    double ce = 0;
    int64_t masked = 0, right = 0;
    n = UM_MIN(n, s->n);
    for (int e0 = 0; e0 < n; e0 += B) {
        int nb = UM_MIN(B, n - e0);
        for (int b = 0; b < nb; b++) {
            const int32_t *seq = s->seq + (size_t)(e0 + b) * T;
            for (int i = 0; i < T; i++)
                in[b * T + i] = i >= s->prompt_len[e0 + b] && tm_rand_unit(r) < t ? m->c.mask_id : seq[i];
        }
        tm_logits_batch(m, w, p, in, nb, T, logits);
        for (int b = 0; b < nb; b++)
            for (int i = 0; i < T; i++) {
                if (in[b * T + i] != m->c.mask_id) continue;
                const float *lg = logits + ((size_t)b * T + i) * V;
                int32_t y = s->seq[(size_t)(e0 + b) * T + i];
                float mx = -INFINITY;
                for (int k = 0; k < V; k++) if (lg[k] > mx) mx = lg[k];
                double sum = 0;
                for (int k = 0; k < V; k++) sum += exp((double)(lg[k] - mx));
                ce += log(sum) + mx - lg[y];
                float pr;
                right += best_token(lg, V, m->c.mask_id, &pr) == y;
                masked++;
            }
    }
    ev->loss = masked ? ce / (double)masked : 0;
    ev->acc = masked ? (double)right / (double)masked : 0;
}

void sft_solve(tm_model *m, tm_ws *w, um_pool *p, const sft_set *s, int first, int n, int B, int32_t *in,
                      float *logits, sft_eval *ev) {
    const int T = s->T, V = m->c.n_vocab;
    n = UM_MIN(n, s->n - first);
    for (int e0 = 0; e0 < n; e0 += B) {
        int nb = UM_MIN(B, n - e0), left = 0;
        for (int b = 0; b < nb; b++) {
            const int32_t *seq = s->seq + (size_t)(first + e0 + b) * T;
            int pl = s->prompt_len[first + e0 + b];
            for (int i = 0; i < T; i++) in[b * T + i] = i >= pl ? m->c.mask_id : seq[i];
            left = UM_MAX(left, T - pl);
        }
        for (; left > 0; left--) {
            tm_logits_batch(m, w, p, in, nb, T, logits);
            for (int b = 0; b < nb; b++) {
                int at = -1;
                int32_t tok = 0;
                float best = -1;
                for (int i = 0; i < T; i++) {
                    if (in[b * T + i] != m->c.mask_id) continue;
                    float pr;
                    int32_t k = best_token(logits + ((size_t)b * T + i) * V, V, m->c.mask_id, &pr);
                    if (pr > best) { best = pr; at = i; tok = k; }
                }
                if (at >= 0) in[b * T + at] = tok;
            }
        }
        for (int b = 0; b < nb; b++) {
            const int32_t *seq = s->seq + (size_t)(first + e0 + b) * T;
            int pl = s->prompt_len[first + e0 + b], wrong = 0;
            for (int i = pl; i < T; i++) wrong += in[b * T + i] != seq[i];
            ev->cells += T - pl;
            ev->cells_right += T - pl - wrong;
            ev->solved += wrong == 0;
            ev->puzzles++;
        }
    }
}
