/*
 * sft: JSONL prompt/answer examples tokenized into fixed-length sequences (see sft.h).
 *
 * The files are read by tasks_load (src/eval/tasks.c), the reader of `unmask eval`'s task
 * files, one file at a time; this module only tokenizes and pads. Evaluation works in
 * batches of up to the workspace's max_b sequences.
 */
#include "sft.h"
#include "gguf.h"
#include "tasks.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ examples */

typedef struct ex {
    int32_t *ids;               /* prompt then answer */
    size_t   n, n_prompt;
} ex;

static int encode_example(const tokenizer *tk, const chat_custom *tmpl, const char *prompt, const char *answer,
                          ex *x, um_err *e) {
    int32_t *p = NULL, *a = NULL;
    size_t np = 0, na = 0;
    const tok_specials *sp = tok_special(tk);
    char *text = NULL;
    if (tmpl) {                 /* as engine_start formats a prompt with a template file */
        char bos[128] = "";
        size_t bl = 0;
        const char *bt = sp->bos >= 0 ? tok_text(tk, sp->bos, &bl) : NULL;
        if (bt && bl < sizeof bos) { memcpy(bos, bt, bl); bos[bl] = '\0'; }
        if (chat_custom_format(tmpl, NULL, prompt, bt && bl < sizeof bos ? bos : NULL, &text, e)) return UM_FAIL;
        prompt = text;
    }
    unsigned flags = TOK_PARSE_SPECIAL | (tmpl && chat_custom_has_bos(tmpl) ? 0 : TOK_ADD_SPECIAL);
    int rc = tok_encode(tk, prompt, strlen(prompt), flags, &p, &np, e);
    free(text);
    if (rc) return UM_FAIL;
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
    return sft_load_chat(out, tk, NULL, paths, n_paths, max_examples, max_T, e);
}

int sft_load_chat(sft_set *out, const tokenizer *tk, const chat_custom *tmpl, char *const *paths, int n_paths,
                  int max_examples, int max_T, um_err *e) {
    memset(out, 0, sizeof *out);
    task_set ts = { 0 };
    ex *xs = NULL;
    size_t n = 0, cap = 0, T = 0;
    int longest_file = 0, longest_line = 0;     /* where the first example of T tokens is */
    int rc = UM_FAIL;
    for (int f = 0; f < n_paths && (max_examples <= 0 || n < (size_t)max_examples); f++) {
        if (tasks_load(paths[f], &ts, e)) goto out;
        for (int i = 0; i < ts.n && (max_examples <= 0 || n < (size_t)max_examples); i++) {
            const task *t = &ts.items[i];
            if (n == cap) {
                cap = cap ? cap * 2 : 1024;
                ex *nx = realloc(xs, cap * sizeof *nx);
                if (!nx) { um_errf(e, "out of memory"); goto out; }
                xs = nx;
            }
            if (encode_example(tk, tmpl, t->prompt, t->answer, &xs[n], e)) {
                um_err_prefix(e, "%s:%d", paths[f], t->line);
                goto out;
            }
            if (xs[n].n > (size_t)max_T) {
                um_errf(e, "%s:%d: prompt + answer is %zu tokens, more than the context of %d", paths[f], t->line,
                        xs[n].n, max_T);
                free(xs[n].ids);
                goto out;
            }
            if (xs[n].n > T) { T = xs[n].n; longest_file = f; longest_line = t->line; }
            n++;
        }
        tasks_free(&ts);
    }
    if (n == 0) { um_errf(e, "no examples in the data files"); goto out; }
    uint64_t cells;
    if (!um_mul_ok(n, T, &cells) || !(out->seq = um_malloc(cells * sizeof *out->seq)) ||
        !(out->prompt_len = um_malloc(n * sizeof *out->prompt_len)) ||
        !(out->longest = um_malloc(strlen(paths[longest_file]) + 16))) {
        sft_free(out);
        um_errf(e, "out of memory for %zu examples of %zu tokens", n, T);
        goto out;
    }
    sprintf(out->longest, "%s:%d", paths[longest_file], longest_line);
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
    tasks_free(&ts);
    for (size_t i = 0; i < n; i++) free(xs[i].ids);
    free(xs);
    return rc;
}

int sft_same_length(const sft_set *train, const sft_set *held, um_err *e) {
    if (held->T == train->T) return UM_OK;
    return um_errf(e, "%s: the longest held-out example is %d tokens, the longest training one %d (%s); they must be equal",
                   held->longest, held->T, train->T, train->longest);
}

void sft_free(sft_set *s) {
    free(s->seq);
    free(s->prompt_len);
    free(s->longest);
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

/* Held-out loss and accuracy: answer tokens replaced with probability t by the mask (masked
 * models: the masked positions count) or by a uniformly random token (uniform-state models:
 * every answer position counts, and the argmax may be any token). */
static void heldout(tm_model *m, tm_ws *w, um_pool *p, const sft_set *s, int n, int B, double t, uint64_t seed,
                    bool uniform, int32_t *in, float *logits, sft_eval *ev) {
    const int T = s->T, V = m->c.n_vocab;
    uint64_t r[4];
    tm_rand_seed(r, seed);
    double ce = 0;
    int64_t counted = 0, right = 0;
    n = UM_MIN(n, s->n);
    for (int e0 = 0; e0 < n; e0 += B) {
        int nb = UM_MIN(B, n - e0);
        for (int b = 0; b < nb; b++) {
            const int32_t *seq = s->seq + (size_t)(e0 + b) * T;
            for (int i = 0; i < T; i++) {
                in[b * T + i] = seq[i];
                if (i >= s->prompt_len[e0 + b] && tm_rand_unit(r) < t)
                    in[b * T + i] = uniform ? (int32_t)(tm_rand(r) % (uint64_t)V) : m->c.mask_id;
            }
        }
        tm_logits_batch(m, w, p, in, nb, T, logits);
        for (int b = 0; b < nb; b++)
            for (int i = uniform ? s->prompt_len[e0 + b] : 0; i < T; i++) {
                if (!uniform && in[b * T + i] != m->c.mask_id) continue;
                const float *lg = logits + ((size_t)b * T + i) * V;
                int32_t y = s->seq[(size_t)(e0 + b) * T + i];
                float mx = -INFINITY;
                for (int k = 0; k < V; k++) if (lg[k] > mx) mx = lg[k];
                double sum = 0;
                for (int k = 0; k < V; k++) sum += exp((double)(lg[k] - mx));
                ce += log(sum) + mx - lg[y];
                float pr;
                right += best_token(lg, V, uniform ? -1 : m->c.mask_id, &pr) == y;
                counted++;
            }
    }
    ev->loss = counted ? ce / (double)counted : 0;
    ev->acc = counted ? (double)right / (double)counted : 0;
}

void sft_heldout(tm_model *m, tm_ws *w, um_pool *p, const sft_set *s, int n, int B, double t, uint64_t seed,
                 int32_t *in, float *logits, sft_eval *ev) {
    heldout(m, w, p, s, n, B, t, seed, false, in, logits, ev);
}

/* Solving's tally of examples [first, first + nb): answer positions right, examples all right. */
static void tally(const sft_set *s, int first, int nb, const int32_t *in, sft_eval *ev) {
    const int T = s->T;
    for (int b = 0; b < nb; b++) {
        const int32_t *seq = s->seq + (size_t)(first + b) * T;
        int pl = s->prompt_len[first + b], wrong = 0;
        for (int i = pl; i < T; i++) wrong += in[b * T + i] != seq[i];
        ev->cells += T - pl;
        ev->cells_right += T - pl - wrong;
        ev->solved += wrong == 0;
        ev->puzzles++;
    }
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
        tally(s, first + e0, nb, in, ev);
    }
}

/* ------------------------------------------------------------------ uniform-state models */

void sft_heldout_uniform(tm_model *m, tm_ws *w, um_pool *p, const sft_set *s, int n, int B, double t, uint64_t seed,
                         int32_t *in, float *logits, sft_eval *ev) {
    heldout(m, w, p, s, n, B, t, seed, true, in, logits, ev);
}

void sft_solve_uniform(tm_model *m, tm_ws *w, um_pool *p, const sft_set *s, int first, int n, int B, int rounds,
                       uint64_t seed, int32_t *in, float *logits, sft_eval *ev) {
    const int T = s->T, V = m->c.n_vocab;
    uint64_t r[4];
    tm_rand_seed(r, seed);
    n = UM_MIN(n, s->n - first);
    for (int e0 = 0; e0 < n; e0 += B) {
        int nb = UM_MIN(B, n - e0);
        for (int b = 0; b < nb; b++) {
            const int32_t *seq = s->seq + (size_t)(first + e0 + b) * T;
            int pl = s->prompt_len[first + e0 + b];
            for (int i = 0; i < T; i++) in[b * T + i] = i >= pl ? (int32_t)(tm_rand(r) % (uint64_t)V) : seq[i];
        }
        for (int k = 0; k < rounds; k++) {
            tm_logits_batch(m, w, p, in, nb, T, logits);
            for (int b = 0; b < nb; b++)
                for (int i = s->prompt_len[first + e0 + b]; i < T; i++) {
                    const float *lg = logits + ((size_t)b * T + i) * V;
                    int best = 0;
                    for (int j = 1; j < V; j++) if (lg[j] > lg[best]) best = j;
                    in[b * T + i] = best;
                }
        }
        tally(s, first + e0, nb, in, ev);
    }
}

int sft_file_template(const char *gguf_path, chat_custom **out, um_err *e) {
    /* the engine's rule (chat_from_gguf): only a file's own template counts here, since the
       trainer's vocabularies carry no tokenizer.chat_template */
    *out = NULL;
    gguf_file *g = NULL;
    if (gguf_open(&g, gguf_path, e)) return UM_FAIL;
    chat_choice c;
    int rc = chat_from_gguf(g, NULL, gguf_path, &c, e);
    gguf_close(g);
    if (rc == UM_OK) *out = c.own;
    return rc;
}
