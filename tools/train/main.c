/*
 * unmask-train: trains unmask's bundled demo model from plain text.
 *
 *   unmask-train bpe    --vocab N --out TOK.gguf FILE...         learn a byte-level BPE tokenizer
 *   unmask-train chars  --out TOK.gguf [--chars STR]              a character vocabulary (no merges)
 *   unmask-train train  --tok TOK.gguf --ckpt CK [options] FILE... train (resumes from CK if present)
 *   unmask-train train  --sft --valid V.jsonl --tok ... FILE.jsonl... conditional (prompt/answer) training
 *                      --init MODEL.gguf  start from an exported model's weights (fresh optimizer, schedule)
 *                      --sudoku  every example a sudoku (tools/train/sudoku_train.h): markers initialised
 *                                as row + column + box; --aug symmetries; --given-visible F
 *                      --corrupt uniform  random-token corruption (uniform-state diffusion), the loss
 *                                at every answer position; evaluation on random tokens likewise
 *   unmask-train chars  --markers sudoku ...                      + the 81 cell markers and their template
 *   unmask-train export --ckpt CK --tok TOK.gguf --out MODEL.gguf write the llada GGUF
 *                      --uniform-canvas N  a uniform-state model: unmask.uniform_state, canvas N
 *   unmask-train eval   -m MODEL.gguf FILE...                     held-out masked-token loss
 *   unmask-train eval   -m MODEL.gguf --sft FILE.jsonl...         answer loss, accuracy, solve rate
 *   unmask-train prompts FILE...                                  openings of held-out paragraphs
 *
 * Text mode: every command splits each FILE the same way: the first 95% (cut after a newline) is
 * training text, the rest is held out. Training data are windows of n_ctx tokens at random
 * offsets of the concatenated training parts (files joined by <|endoftext|>).
 *
 * SFT mode (--sft): the FILEs are JSONL prompt/answer pairs (sft.h), held-out pairs come from
 * --valid. Each step draws B examples uniformly at random (the first --curriculum-start
 * fraction of the training set at step 0, growing linearly to all of it at step --curriculum,
 * when given: order the file easy to hard) and masks only their answers (tm_mask_answer).
 * Evaluation: held-out answer loss and accuracy at t = 0.5 on fixed masks, and greedy solving
 * (all answer tokens masked, each step commits the single most confident position, as
 * `unmask generate --steps N --gen N --temp 0` with confidence scoring does).
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bpe.h"
#include "gguf.h"
#include "infile.h"
#include "outfile.h"
#include "pool.h"
#include "sft.h"
#include "sigexit.h"
#include "sudoku_train.h"
#include "tmodel.h"
#include "tokenizer.h"

#define HELDOUT_FRACTION 0.05
#define UNIFORM_ROUNDS   8      /* --corrupt uniform: argmax passes of the training-time solving check */
#define TRAIN_MAX_TEXT   ((size_t)1 << 30)    /* one corpus file read into memory: 1 GiB */

/* ------------------------------------------------------------------ corpus */

typedef struct corpus {
    char  **text;
    size_t *len, *split;        /* split: bytes of training text; [split, len) is held out */
    int     n;
} corpus;

static size_t split_point(const char *s, size_t n) {
    size_t k = (size_t)((double)n * (1.0 - HELDOUT_FRACTION));
    while (k < n && s[k - 1] != '\n') k++;
    return k;
}

static int corpus_load(corpus *c, char **files, int n, um_err *e) {
    memset(c, 0, sizeof *c);
    c->text = um_calloc((size_t)n, sizeof *c->text);
    c->len = um_calloc((size_t)n, sizeof *c->len);
    c->split = um_calloc((size_t)n, sizeof *c->split);
    if (!c->text || !c->len || !c->split) return um_errf(e, "out of memory");
    for (int i = 0; i < n; i++) {
        if (infile_read(files[i], TRAIN_MAX_TEXT, &c->text[i], &c->len[i], e)) return UM_FAIL;
        if (c->len[i] < 100) return um_errf(e, "%s: too short to split (%zu bytes)", files[i], c->len[i]);
        c->split[i] = split_point(c->text[i], c->len[i]);
        c->n++;
    }
    return UM_OK;
}

static void corpus_free(corpus *c) {
    for (int i = 0; i < c->n; i++) free(c->text[i]);
    free(c->text); free(c->len); free(c->split);
}

/* Token stream of the training parts (held_out false) or held-out parts, files joined by EOS. */
static int corpus_tokens(const corpus *c, const tokenizer *tk, bool held_out, int32_t **out, size_t *n_out,
                         um_err *e) {
    size_t cap = 0, n = 0;
    int32_t *all = NULL;
    for (int i = 0; i < c->n; i++) {
        const char *s = c->text[i] + (held_out ? c->split[i] : 0);
        size_t len = held_out ? c->len[i] - c->split[i] : c->split[i];
        int32_t *ids;
        size_t k;
        if (tok_encode(tk, s, len, 0, &ids, &k, e)) { free(all); return UM_FAIL; }
        if (n + k + 1 > cap) {
            cap = (n + k + 1) * 2;
            int32_t *na = realloc(all, cap * sizeof *na);
            if (!na) { free(ids); free(all); return um_errf(e, "out of memory"); }
            all = na;
        }
        memcpy(all + n, ids, k * sizeof *ids);
        n += k;
        all[n++] = tok_special(tk)->eos;
        free(ids);
    }
    *out = all;
    *n_out = n;
    return UM_OK;
}

/* ------------------------------------------------------------------ options */

typedef struct opts {
    const char *tok, *ckpt, *log, *out, *model, *name, *chars, *valid, *init, *markers;
    int vocab, steps, batch, warmup, threads, eval_every, ckpt_minutes;
    bool sft, ctx_given, sudoku, aug, uniform;
    int uniform_canvas;
    double given_visible;
    int solve_every, solve_n, heldout_n, max_examples, curriculum;
    double curriculum_start;
    double minutes;
    tm_config c;
    tm_adam adam;
    float lr_min;
    uint64_t seed;
    char **files;
    int n_files;
} opts;

static int parse(opts *o, int argc, char **argv) {
    *o = (opts){ .vocab = 4096, .steps = 3000, .batch = 8, .warmup = 100, .threads = 0, .eval_every = 50,
                 .ckpt_minutes = 5, .minutes = 0, .seed = 1,
                 .c = { .n_vocab = 0, .n_embd = 256, .n_layer = 6, .n_head = 4, .n_ff = 768, .n_ctx = 256,
                        .rope_base = 10000.0f, .norm_eps = 1e-5f },
                 .adam = { .lr = 2e-3f, .beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f, .weight_decay = 0.1f, .clip = 1.0f },
                 .lr_min = 2e-4f, .name = "unmask-demo", .chars = "0123456789.\n",
                 .solve_every = 0, .solve_n = 64, .heldout_n = 256, .curriculum_start = 0.25 };
    o->files = um_calloc((size_t)argc + 1, sizeof *o->files);
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
#define OPT(s) (!strcmp(a, s) && v && ++i)
        if (OPT("--tok")) o->tok = v;
        else if (OPT("--ckpt")) o->ckpt = v;
        else if (OPT("--log")) o->log = v;
        else if (OPT("--out")) o->out = v;
        else if (OPT("-m")) o->model = v;
        else if (OPT("--name")) o->name = v;
        else if (OPT("--vocab")) o->vocab = atoi(v);
        else if (OPT("--steps")) o->steps = atoi(v);
        else if (OPT("--batch")) o->batch = atoi(v);
        else if (OPT("--warmup")) o->warmup = atoi(v);
        else if (OPT("--threads")) o->threads = atoi(v);
        else if (OPT("--eval-every")) o->eval_every = atoi(v);
        else if (OPT("--ckpt-minutes")) o->ckpt_minutes = atoi(v);
        else if (OPT("--minutes")) o->minutes = atof(v);
        else if (OPT("--seed")) o->seed = strtoull(v, NULL, 10);
        else if (OPT("--embd")) o->c.n_embd = atoi(v);
        else if (OPT("--layers")) o->c.n_layer = atoi(v);
        else if (OPT("--heads")) o->c.n_head = atoi(v);
        else if (OPT("--ffn")) o->c.n_ff = atoi(v);
        else if (OPT("--ctx")) { o->c.n_ctx = atoi(v); o->ctx_given = true; }
        else if (OPT("--rope-base")) o->c.rope_base = (float)atof(v);
        else if (OPT("--chars")) o->chars = v;
        else if (OPT("--init")) o->init = v;
        else if (OPT("--valid")) o->valid = v;
        else if (OPT("--solve-every")) o->solve_every = atoi(v);
        else if (OPT("--solve-n")) o->solve_n = atoi(v);
        else if (OPT("--heldout-n")) o->heldout_n = atoi(v);
        else if (OPT("--max-examples")) o->max_examples = atoi(v);
        else if (OPT("--curriculum")) o->curriculum = atoi(v);
        else if (OPT("--curriculum-start")) o->curriculum_start = atof(v);
        else if (!strcmp(a, "--sft")) o->sft = true;
        else if (!strcmp(a, "--sudoku")) o->sudoku = true;
        else if (!strcmp(a, "--aug")) o->aug = true;
        else if (OPT("--given-visible")) o->given_visible = atof(v);
        else if (OPT("--markers")) o->markers = v;
        else if (OPT("--corrupt")) {
            if (strcmp(v, "uniform") && strcmp(v, "mask")) {
                fprintf(stderr, "unmask-train: --corrupt: mask (the default) or uniform\n");
                return UM_FAIL;
            }
            o->uniform = !strcmp(v, "uniform");
        }
        else if (OPT("--uniform-canvas")) o->uniform_canvas = atoi(v);
        else if (OPT("--lr")) o->adam.lr = (float)atof(v);
        else if (OPT("--lr-min")) o->lr_min = (float)atof(v);
        else if (a[0] == '-') { fprintf(stderr, "unmask-train: unknown or incomplete option '%s'\n", a); return UM_FAIL; }
        else o->files[o->n_files++] = argv[i];
#undef OPT
    }
    bool needs_files = strcmp(argv[1], "export") && strcmp(argv[1], "chars");
    if (!o->n_files && needs_files) { fprintf(stderr, "unmask-train: no text files given\n"); return UM_FAIL; }
    if (o->batch < 1 || o->steps < 1 || o->eval_every < 1 || o->solve_n < 0 || o->heldout_n < 0) {
        fprintf(stderr, "unmask-train: --batch, --steps and --eval-every must be positive\n");
        return UM_FAIL;
    }
    if ((o->aug || o->given_visible > 0) && !o->sudoku) {
        fprintf(stderr, "unmask-train: --aug and --given-visible need --sudoku\n");
        return UM_FAIL;
    }
    if (o->uniform && o->given_visible > 0) {
        fprintf(stderr, "unmask-train: --given-visible is for masked training (not --corrupt uniform)\n");
        return UM_FAIL;
    }
    if (o->given_visible < 0 || o->given_visible > 1) {
        fprintf(stderr, "unmask-train: --given-visible must be in [0, 1]\n");
        return UM_FAIL;
    }
    if (o->markers && strcmp(o->markers, "sudoku")) {
        fprintf(stderr, "unmask-train: --markers: only 'sudoku' (the 81 cell markers) is known\n");
        return UM_FAIL;
    }
    return UM_OK;
}

/* ------------------------------------------------------------------ commands */

/* No output may be one of the inputs (outfile.h); each corpus file is checked on its own,
 * so their number is not limited by OUTFILE_MAX_NAMES. `train` reads and rewrites its
 * checkpoint by design (an output there); `export` only reads it. */
static int check_files(const opts *o, bool ckpt_written, um_err *e) {
    for (int i = -1; i < o->n_files; i++) {
        outfile_set fs;
        outfile_set_init(&fs);
        if (i < 0) {
            outfile_set_input(&fs, "--tok", o->tok);
            outfile_set_input(&fs, "-m", o->model);
            outfile_set_input(&fs, "--init", o->init);
            if (!ckpt_written) outfile_set_input(&fs, "--ckpt", o->ckpt);
        } else {
            outfile_set_input(&fs, "FILE", o->files[i]);
        }
        outfile_set_output(&fs, "--out", o->out);
        if (ckpt_written) outfile_set_output(&fs, "--ckpt", o->ckpt);
        outfile_set_output(&fs, "--log", o->log);
        if (outfile_check(&fs, e)) return UM_FAIL;
    }
    return UM_OK;
}

static int cmd_bpe(opts *o, um_err *e) {
    if (!o->out) return um_errf(e, "bpe: --out is required");
    corpus c;
    int rc = UM_FAIL;
    bpe_vocab *v = NULL;
    gguf_writer *w = NULL;
    if (corpus_load(&c, o->files, o->n_files, e)) goto out;
    double t0 = um_now();
    if (bpe_train(&v, (const char *const *)c.text, c.split, c.n, o->vocab, e)) goto out;
    fprintf(stderr, "bpe: %d tokens, %d merges in %.1f s\n", v->n_vocab, v->n_merges, um_now() - t0);
    if (!(w = gguf_writer_new())) { um_errf(e, "out of memory"); goto out; }
    gguf_set_str(w, "general.architecture", "llada");
    gguf_set_str(w, "general.name", "unmask-demo tokenizer");
    if (bpe_write_kv(v, w, e) || gguf_writer_write(w, o->out, e)) goto out;
    rc = UM_OK;
out:
    gguf_writer_free(w);
    bpe_free(v);
    corpus_free(&c);
    return rc;
}

/* Held-out windows of T tokens (non-overlapping), at most max_windows. */
static int heldout_windows(const int32_t *ids, size_t n, int T, int max_windows) {
    int k = (int)(n / (size_t)T);
    return max_windows > 0 && k > max_windows ? max_windows : k;
}

/* Mean cross-entropy (nats) per masked held-out token over windows at mask rate t (fixed seed: the same masks each call). */
static double heldout_loss(tm_model *m, tm_ws *w, um_pool *p, const int32_t *ids, int n_win, int B, double t,
                           uint64_t seed, int32_t *in, int32_t *tgt, float *inv) {
    const int T = m->c.n_ctx;
    uint64_t s[4];
    tm_rand_seed(s, seed);
    double sum = 0;
    int64_t masked = 0;
    for (int w0 = 0; w0 < n_win; w0 += B) {
        int nb = UM_MIN(B, n_win - w0);
        for (int b = 0; b < nb; b++) {
            inv[b] = (float)(1.0 / t);
            for (int i = 0; i < T; i++) {
                int32_t y = ids[(size_t)(w0 + b) * T + i];
                tgt[b * T + i] = y;
                in[b * T + i] = tm_rand_unit(s) < t ? m->c.mask_id : y;
            }
        }
        /* L = sum(CE) / t / (nb T): undo the weight and the normalisation */
        int64_t nm = 0;
        sum += tm_step(m, w, p, in, tgt, inv, nb, T, false, &nm) * t * nb * T;
        masked += nm;
    }
    return masked ? sum / masked : 0;
}

/* ------------------------------------------------------------------ the training loop */

/* What `train` and `train --sft` share: the model with its workspace, batch buffers, step
 * and random stream, and the loop around them (LR schedule, Adam, evaluation every
 * --eval-every steps, the log, a checkpoint every --ckpt-minutes and at the end, the
 * --minutes cap). Each command brings its data through train_hooks. */
typedef struct trainer {
    opts      *o;
    tm_model  *m;
    tm_ws     *w;
    um_pool   *pool;
    int        B, T;            /* batch: B sequences of T tokens */
    int32_t   *in, *tgt;        /* (B, T) a step's inputs and targets; scratch for evaluation */
    float     *wgt;             /* (B) per-sequence loss weights */
    bool      *loss_at;         /* (B, T) --corrupt uniform: the positions the loss counts */
    int64_t    step;            /* steps done */
    uint64_t   rng[4];          /* the training stream (batches and masks), saved in checkpoints */
    outfile   *log;             /* --log through the output module: a temporary file holding the
                                   old log (on a resumed run) and the new lines, renamed over
                                   --log at every checkpoint and at the end (log_commit) */
} trainer;

typedef struct train_hooks {
    /* Fill t->in, t->tgt, t->wgt with the batch of step t->step; return its loss after the
     * forward and backward pass (gradients accumulated in t->m). */
    double (*batch)(trainer *t, void *ctx);
    /* Evaluate (last: the final evaluation of the run) into the command's part of the stderr
     * line (shown) and its log columns (cols), each cap bytes. */
    void (*eval)(trainer *t, void *ctx, bool last, char *shown, char *cols, size_t cap);
    void *ctx;
} train_hooks;

/* Resume from --ckpt when it exists (model, step, random stream); otherwise leave t->m NULL. */
static int trainer_resume(trainer *t, um_err *e) {
    struct stat st;
    if (stat(t->o->ckpt, &st)) return UM_OK;
    if (tm_load(&t->m, &t->step, t->rng, t->o->ckpt, e)) return UM_FAIL;
    fprintf(stderr, "train: resumed %s at step %" PRId64 "\n", t->o->ckpt, t->step);
    return UM_OK;
}

/* A new model of the options' shape over tk's vocabulary, initialised from --seed. */
static int trainer_new_model(trainer *t, const tokenizer *tk, um_err *e) {
    opts *o = t->o;
    o->c.n_vocab = tok_n_vocab(tk);
    o->c.mask_id = tok_special(tk)->mask;
    if (tm_new(&t->m, &o->c, e)) return UM_FAIL;
    tm_init(t->m, o->seed);
    tm_rand_seed(t->rng, o->seed ^ 0x5eedull);
    return UM_OK;
}

/* ------------------------------------------------------------------ the log (--log)
 * Written through the output module (src/base/outfile.h) like every other file: a write that
 * fails (a full disk) stops the run with the OS reason, and the --log file is replaced only by
 * a complete one, so an existing log is never left cut or emptied. A resumed run carries the
 * old lines over first (the log reads as one run); a fresh run replaces the old log once its
 * first checkpoint is written. */

static int log_open(trainer *t, bool keep_old, um_err *e) {
    const char *path = t->o->log;
    char *old = NULL;
    size_t n = 0;
    struct stat st;
    if (keep_old && stat(path, &st) == 0 && S_ISREG(st.st_mode) && infile_read(path, (size_t)1 << 30, &old, &n, e))
        return um_err_prefix(e, "--log");
    if (outfile_open(&t->log, path, e)) { free(old); return UM_FAIL; }
    int rc = n ? outfile_write(t->log, old, n, e) : UM_OK;
    free(old);
    if (rc) { outfile_abort(t->log); t->log = NULL; }
    return rc;
}

static int log_printf(trainer *t, um_err *e, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int log_printf(trainer *t, um_err *e, const char *fmt, ...) {
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n < 0) return um_errf(e, "--log: cannot format a line");
    return outfile_write(t->log, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1, e);
}

/* Rename what the log holds over --log, and go on appending to a fresh copy of it. */
static int log_commit(trainer *t, um_err *e) {
    int rc = outfile_commit(t->log, e);
    t->log = NULL;
    return rc ? rc : log_open(t, true, e);
}

/* Threads, workspace and buffers for batches of T tokens; the log (header on a fresh run). */
static int trainer_start(trainer *t, int T, const char *columns, um_err *e) {
    const opts *o = t->o;
    t->B = o->batch;
    t->T = T;
    t->pool = pool_new(o->threads);
    if (tm_ws_new(&t->w, t->m, t->B, pool_threads(t->pool), e)) return UM_FAIL;
    t->in = um_malloc((size_t)t->B * T * sizeof *t->in);
    t->tgt = um_malloc((size_t)t->B * T * sizeof *t->tgt);
    t->wgt = um_malloc((size_t)t->B * sizeof *t->wgt);
    t->loss_at = um_malloc((size_t)t->B * T * sizeof *t->loss_at);
    if (!t->in || !t->tgt || !t->wgt || !t->loss_at) return um_errf(e, "out of memory");
    if (o->log && log_open(t, t->step > 0, e)) return UM_FAIL;
    if (t->log && t->step == 0 &&
        log_printf(t, e, "step\tlr\ttrain_loss\tgrad_norm\t%s\ttokens_per_s\telapsed_s\n", columns)) return UM_FAIL;
    return UM_OK;
}

static int trainer_run(trainer *t, const train_hooks *h, um_err *e) {
    const opts *o = t->o;
    double t_start = um_now(), t_ckpt = t_start, t_log = t_start, loss_acc = 0, t_eval = 0;
    int n_acc = 0;
    char shown[256], cols[256];
    while (t->step < o->steps) {
        double loss = h->batch(t, h->ctx);
        tm_adam adam = o->adam;
        adam.lr = tm_lr_at(t->step, o->warmup, o->steps, o->adam.lr, o->lr_min);
        double gn = tm_adam_update(t->m, &adam, t->step + 1);
        t->step++;
        loss_acc += loss;
        n_acc++;
        double now = um_now();
        bool last = t->step == o->steps || (o->minutes > 0 && now - t_start > o->minutes * 60);
        if (t->step % o->eval_every == 0 || last) {
            double t0 = um_now();
            h->eval(t, h->ctx, last, shown, cols, sizeof shown);
            t_eval += um_now() - t0;
            double tps = (double)n_acc * t->B * t->T / (t0 - t_log);      /* training only */
            fprintf(stderr, "step %" PRId64 " lr %.2e loss %.4f gnorm %.3f %s  %.0f tok/s\n", t->step, adam.lr,
                    loss_acc / n_acc, gn, shown, tps);
            if (t->log && log_printf(t, e, "%" PRId64 "\t%.3e\t%.4f\t%.3f\t%s\t%.0f\t%.0f\n", t->step, adam.lr,
                                     loss_acc / n_acc, gn, cols, tps, um_now() - t_start))
                return UM_FAIL;
            loss_acc = 0; n_acc = 0; t_log = um_now();
        }
        if (last || now - t_ckpt > o->ckpt_minutes * 60.0) {
            if (tm_save(t->m, t->step, t->rng, o->ckpt, e)) return UM_FAIL;
            if (t->log && log_commit(t, e)) return UM_FAIL;   /* the log as far as the checkpoint */
            t_ckpt = now;
        }
        if (last) break;
    }
    fprintf(stderr, "train: %.0f s, of which evaluation %.0f s\n", um_now() - t_start, t_eval);
    return UM_OK;
}

static void trainer_free(trainer *t) {
    if (t->log) outfile_abort(t->log);              /* committed at the last checkpoint, or failed */
    free(t->in); free(t->tgt); free(t->wgt); free(t->loss_at);
    tm_ws_free(t->w);
    pool_free(t->pool);
    tm_free(t->m);
}

/* ------------------------------------------------------------------ text training */

typedef struct text_data {
    const int32_t *train, *held;    /* token streams (n_train), held-out windows (n_win, T) */
    size_t n_train;
    int n_win;
} text_data;

static double text_batch(trainer *t, void *ctx) {
    const text_data *d = ctx;
    tm_draw_batch(t->m, d->train, d->n_train, t->B, t->T, t->rng, t->in, t->tgt, t->wgt);
    return tm_step(t->m, t->w, t->pool, t->in, t->tgt, t->wgt, t->B, t->T, true, NULL);
}

static void text_eval(trainer *t, void *ctx, bool last, char *shown, char *cols, size_t cap) {
    const text_data *d = ctx;
    double hl = heldout_loss(t->m, t->w, t->pool, d->held, d->n_win, t->B, 0.5, 7, t->in, t->tgt, t->wgt);
    snprintf(shown, cap, "heldout(t=0.5) %.4f", hl);
    snprintf(cols, cap, "%.4f", hl);
}

static int cmd_train(opts *o, um_err *e) {
    if (!o->tok || !o->ckpt) return um_errf(e, "train: --tok and --ckpt are required");
    corpus c;
    tokenizer *tk = NULL;
    trainer t = { .o = o };
    int32_t *train = NULL, *held = NULL;
    int rc = UM_FAIL;
    size_t n_train = 0, n_held = 0;
    if (corpus_load(&c, o->files, o->n_files, e) || tok_load_file(&tk, o->tok, e)) goto out;
    if (corpus_tokens(&c, tk, false, &train, &n_train, e) || corpus_tokens(&c, tk, true, &held, &n_held, e)) goto out;
    if (trainer_resume(&t, e) || (!t.m && trainer_new_model(&t, tk, e))) goto out;
    const int T = t.m->c.n_ctx;
    if (n_train < (size_t)T + 1) { um_errf(e, "train: only %zu training tokens", n_train); goto out; }
    if (trainer_start(&t, T, "heldout_loss_t05", e)) goto out;
    text_data d = { train, held, n_train, heldout_windows(held, n_held, T, 16) };
    fprintf(stderr, "train: %" PRId64 " params, %zu train / %zu held-out tokens, batch %d x %d, %d threads\n",
            t.m->n_params, n_train, n_held, t.B, T, pool_threads(t.pool));
    rc = trainer_run(&t, &(train_hooks){ .batch = text_batch, .eval = text_eval, .ctx = &d }, e);
out:
    trainer_free(&t);
    free(train); free(held);
    tok_free(tk);
    corpus_free(&c);
    return rc;
}

/* --chars with the escapes \n, \t and \\ */
static int cmd_chars(opts *o, um_err *e) {
    if (!o->out) return um_errf(e, "chars: --out is required");
    size_t n = strlen(o->chars), k = 0;
    char *c = um_malloc(n + 1);
    if (!c) return um_errf(e, "out of memory");
    for (size_t i = 0; i < n; i++) {
        char x = o->chars[i];
        if (x == '\\' && i + 1 < n) {
            char y = o->chars[++i];
            x = y == 'n' ? '\n' : y == 't' ? '\t' : y;
        }
        c[k++] = x;
    }
    bpe_vocab *v = NULL;
    gguf_writer *w = NULL;
    int rc = UM_FAIL;
    char *tmpl = NULL;
    if (bpe_chars(&v, c, k, e)) goto out;
    for (int i = 0; o->markers && i < SDK_CELLS; i++) {
        char mk[16];
        sdk_marker_text(i, mk);
        if (bpe_add_control(v, mk, e)) goto out;
    }
    if (!(w = gguf_writer_new())) { um_errf(e, "out of memory"); goto out; }
    if (o->markers) {
        if (!(tmpl = sdk_template_text())) { um_errf(e, "out of memory"); goto out; }
        gguf_set_str(w, "unmask.chat_template", tmpl);
    }
    gguf_set_str(w, "general.architecture", "llada");
    gguf_set_str(w, "general.name", "character tokenizer");
    if (bpe_write_kv(v, w, e) || gguf_writer_write(w, o->out, e)) goto out;
    fprintf(stderr, "chars: %d tokens (%zu characters, <|endoftext|> %d, <|mdm_mask|> %d)\n", v->n_vocab, k, v->eos_id,
            v->mask_id);
    rc = UM_OK;
out:
    gguf_writer_free(w);
    bpe_free(v);
    free(tmpl);
    free(c);
    return rc;
}

/* ------------------------------------------------------------------ conditional (SFT) training */

/* The example a step trains on: uniform over a prefix that grows to the whole set. */
static int32_t sft_pick(const opts *o, int64_t step, int32_t n, uint64_t rng[4]) {
    double f = 1.0;
    if (o->curriculum > 0 && step < o->curriculum)
        f = o->curriculum_start + (1.0 - o->curriculum_start) * (double)step / (double)o->curriculum;
    int64_t k = (int64_t)(f * n);
    k = UM_MAX(1, UM_MIN(k, n));
    return (int32_t)(tm_rand(rng) % (uint64_t)k);
}

typedef struct sft_data {
    const sft_set *train, *held;
    float *logits;              /* (B, T, n_vocab) evaluation scratch */
    sdk_layout sdk;             /* --sudoku: the cell tokens */
    int32_t *aug;               /* (T) --aug: the augmented sequence */
} sft_data;

static double sft_batch(trainer *t, void *ctx) {
    sft_data *d = ctx;
    const sft_set *tr = d->train;
    const int T = t->T;
    for (int b = 0; b < t->B; b++) {
        int32_t k = sft_pick(t->o, t->step, tr->n, t->rng);
        const int32_t *seq = tr->seq + (size_t)k * T;
        if (t->o->aug) {
            sdk_augment(&d->sdk, seq, T, tr->prompt_len[k], t->rng, d->aug);
            seq = d->aug;
        }
        if (t->o->uniform) {
            t->wgt[b] = tm_uniform_answer(t->m, seq, T, tr->prompt_len[k], t->rng, t->in + b * T, t->tgt + b * T,
                                          t->loss_at + b * T);
            continue;
        }
        t->wgt[b] = t->o->sudoku ? sdk_mask_answer(t->m, &d->sdk, seq, T, tr->prompt_len[k], t->o->given_visible, t->rng,
                                                   t->in + b * T, t->tgt + b * T)
                                 : tm_mask_answer(t->m, seq, T, tr->prompt_len[k], t->rng, t->in + b * T, t->tgt + b * T);
    }
    return tm_step_at(t->m, t->w, t->pool, t->in, t->tgt, t->o->uniform ? t->loss_at : NULL, t->wgt, t->B, T,
                      (double)t->B, true, NULL);
}

static void sft_report(trainer *t, void *ctx, bool last, char *shown, char *cols, size_t cap) {
    const sft_data *d = ctx;
    const opts *o = t->o;
    sft_eval ev = { 0 };
    (o->uniform ? sft_heldout_uniform : sft_heldout)(t->m, t->w, t->pool, d->held, o->heldout_n, t->B, 0.5, 7, t->in,
                                                     d->logits, &ev);
    bool solve = last || (o->solve_every > 0 && t->step % o->solve_every == 0);
    if (!solve) {
        snprintf(shown, cap, "heldout(t=0.5) %.4f acc %.4f", ev.loss, ev.acc);
        snprintf(cols, cap, "%.4f\t%.4f\t\t", ev.loss, ev.acc);          /* no solving columns */
        return;
    }
    if (o->uniform) sft_solve_uniform(t->m, t->w, t->pool, d->held, 0, o->solve_n, t->B, UNIFORM_ROUNDS, 11, t->in,
                                      d->logits, &ev);
    else sft_solve(t->m, t->w, t->pool, d->held, 0, o->solve_n, t->B, t->in, d->logits, &ev);
    double cells = (double)ev.cells_right / (double)UM_MAX(1, ev.cells);
    snprintf(shown, cap, "heldout(t=0.5) %.4f acc %.4f solve: cells %.4f solved %d/%d", ev.loss, ev.acc, cells,
             ev.solved, ev.puzzles);
    snprintf(cols, cap, "%.4f\t%.4f\t%.4f\t%.4f", ev.loss, ev.acc, cells, (double)ev.solved / (double)UM_MAX(1, ev.puzzles));
}

/* --sudoku: the cell tokens, and every training sequence a puzzle with its solution */
static int sdk_check_set(sdk_layout *l, const tokenizer *tk, const sft_set *tr, um_err *e) {
    if (sdk_layout_init(l, tk, e)) return UM_FAIL;
    for (int32_t i = 0; i < tr->n; i++)
        if (!sdk_seq_ok(l, tr->seq + (size_t)i * tr->T, tr->T, tr->prompt_len[i]))
            return um_errf(e, "--sudoku: training example %d is not a puzzle (81 cells) with its solution", i + 1);
    return UM_OK;
}

static int cmd_train_sft(opts *o, um_err *e) {
    if (!o->tok || !o->ckpt || !o->valid) return um_errf(e, "train --sft: --tok, --ckpt and --valid are required");
    tokenizer *tk = NULL;
    trainer t = { .o = o };
    sft_set tr = { 0 }, va = { 0 };
    sft_data d = { &tr, &va, NULL, { { 0 }, -1 }, NULL };
    chat_custom *tmpl = NULL;
    int rc = UM_FAIL;
    if (tok_load_file(&tk, o->tok, e) || sft_file_template(o->tok, &tmpl, e) || trainer_resume(&t, e)) goto out;
    if (!t.m && o->init) {
        /* fine-tune an exported model: its weights, a fresh optimizer and LR schedule */
        if (tm_import(&t.m, o->init, e)) goto out;
        if (t.m->c.n_vocab != tok_n_vocab(tk) || t.m->c.mask_id != tok_special(tk)->mask) {
            um_errf(e, "train: --init %s has another vocabulary than --tok %s", o->init, o->tok);
            goto out;
        }
        tm_rand_seed(t.rng, o->seed ^ 0x5eedull);
        fprintf(stderr, "train: starting from the weights of %s\n", o->init);
    }
    int max_T = t.m ? t.m->c.n_ctx : o->ctx_given ? o->c.n_ctx : 1 << 20;
    if (sft_load_chat(&tr, tk, tmpl, o->files, o->n_files, o->max_examples, max_T, e) ||
        sft_load_chat(&va, tk, tmpl, (char *const *)&o->valid, 1, 0, max_T, e) || sft_same_length(&tr, &va, e))
        goto out;
    if (o->sudoku && sdk_check_set(&d.sdk, tk, &tr, e)) goto out;
    if (!t.m) {
        if (!o->ctx_given) o->c.n_ctx = tr.T;
        if (trainer_new_model(&t, tk, e)) goto out;
        if (o->sudoku) sdk_init_markers(t.m, &d.sdk, o->seed);
    }
    if (o->aug && !(d.aug = um_malloc((size_t)tr.T * sizeof *d.aug))) { um_errf(e, "out of memory"); goto out; }
    if (!(d.logits = um_malloc((size_t)o->batch * tr.T * t.m->c.n_vocab * sizeof *d.logits))) {
        um_errf(e, "out of memory");
        goto out;
    }
    if (trainer_start(&t, tr.T, "heldout_loss_t05\theldout_acc_t05\tsolve_cell_acc\tsolve_rate", e)) goto out;
    fprintf(stderr, "train: %" PRId64 " params, %d training / %d held-out examples of %d tokens, batch %d, %d threads\n",
            t.m->n_params, tr.n, va.n, tr.T, t.B, pool_threads(t.pool));
    rc = trainer_run(&t, &(train_hooks){ .batch = sft_batch, .eval = sft_report, .ctx = &d }, e);
out:
    trainer_free(&t);
    free(d.logits); free(d.aug);
    chat_custom_free(tmpl);
    sft_free(&tr); sft_free(&va);
    tok_free(tk);
    return rc;
}

static int cmd_eval_sft(opts *o, um_err *e) {
    tokenizer *tk = NULL;
    tm_model *m = NULL;
    tm_ws *w = NULL;
    um_pool *pool = NULL;
    sft_set s = { 0 };
    int32_t *in = NULL;
    float *logits = NULL;
    chat_custom *tmpl = NULL;
    int rc = UM_FAIL;
    const int B = o->batch;
    if (tok_load_file(&tk, o->model, e) || sft_file_template(o->model, &tmpl, e) || tm_import(&m, o->model, e)) goto out;
    if (sft_load_chat(&s, tk, tmpl, o->files, o->n_files, o->max_examples, m->c.n_ctx, e)) goto out;
    pool = pool_new(o->threads);
    if (tm_ws_new(&w, m, B, pool_threads(pool), e)) goto out;
    in = um_malloc((size_t)B * s.T * sizeof *in);
    logits = um_malloc((size_t)B * s.T * m->c.n_vocab * sizeof *logits);
    if (!in || !logits) { um_errf(e, "out of memory"); goto out; }
    sft_eval ev = { 0 };
    /* a uniform-state file (unmask.uniform_state) is measured on random-token corruption */
    gguf_file *g = NULL;
    bool uniform = false;
    if (gguf_open(&g, o->model, e)) goto out;
    const gguf_kv *kv = gguf_find_kv(g, "unmask.uniform_state");
    uniform = kv && kv->type == GGUF_TYPE_BOOL && kv->v.u;
    gguf_close(g);
    void (*heldout)(tm_model *, tm_ws *, um_pool *, const sft_set *, int, int, double, uint64_t, int32_t *, float *,
                    sft_eval *) = uniform ? sft_heldout_uniform : sft_heldout;
    const char *what = uniform ? "replaced by random tokens" : "masked";
    heldout(m, w, pool, &s, s.n, B, 0.5, 7, in, logits, &ev);
    printf("examples: %d of %d tokens\n", s.n, s.T);
    printf("t=0.50  answer loss %.4f nats, accuracy %.4f (answer tokens %s at rate 0.5)\n", ev.loss, ev.acc, what);
    sft_eval one = { 0 };
    heldout(m, w, pool, &s, s.n, B, 1.0, 7, in, logits, &one);
    printf("t=1.00  answer loss %.4f nats, accuracy %.4f (every answer token predicted at once)\n", one.loss, one.acc);
    int n = o->solve_n > 0 ? UM_MIN(o->solve_n, s.n) : s.n;
    if (uniform) {
        sft_solve_uniform(m, w, pool, &s, 0, n, B, UNIFORM_ROUNDS, 11, in, logits, &ev);
        printf("solving from random tokens, %d argmax passes: %d of %d solved (%.4f), cells %.4f\n", UNIFORM_ROUNDS,
               ev.solved, ev.puzzles, (double)ev.solved / UM_MAX(1, ev.puzzles),
               (double)ev.cells_right / (double)UM_MAX(1, ev.cells));
    } else {
        sft_solve(m, w, pool, &s, 0, n, B, in, logits, &ev);
        printf("greedy solving, one position per step, confidence order: %d of %d solved (%.4f), cells %.4f\n",
               ev.solved, ev.puzzles, (double)ev.solved / UM_MAX(1, ev.puzzles),
               (double)ev.cells_right / (double)UM_MAX(1, ev.cells));
    }
    rc = UM_OK;
out:
    free(in); free(logits);
    sft_free(&s);
    tm_ws_free(w);
    pool_free(pool);
    tm_free(m);
    chat_custom_free(tmpl);
    tok_free(tk);
    return rc;
}

static int cmd_export(opts *o, um_err *e) {
    if (!o->ckpt || !o->tok || !o->out) return um_errf(e, "export: --ckpt, --tok and --out are required");
    tm_model *m;
    int64_t step;
    uint64_t rng[4];
    if (tm_load(&m, &step, rng, o->ckpt, e)) return UM_FAIL;
    char name[256];
    snprintf(name, sizeof name, "%s (llada, %" PRId64 " params, %" PRId64 " steps)", o->name, m->n_params, step);
    int rc = tm_export_uniform(m, o->tok, name, o->out, o->uniform_canvas, e);
    tm_free(m);
    if (!rc) fprintf(stderr, "export: wrote %s (step %" PRId64 ")\n", o->out, step);
    return rc;
}

static int cmd_eval(opts *o, um_err *e) {
    if (!o->model) return um_errf(e, "eval: -m MODEL.gguf is required");
    corpus c;
    tokenizer *tk = NULL;
    tm_model *m = NULL;
    tm_ws *w = NULL;
    um_pool *pool = NULL;
    int32_t *held = NULL, *in = NULL, *tgt = NULL;
    float *inv = NULL;
    size_t n_held = 0;
    int rc = UM_FAIL;
    const int B = 8;
    if (corpus_load(&c, o->files, o->n_files, e) || tok_load_file(&tk, o->model, e) || tm_import(&m, o->model, e)) goto out;
    if (corpus_tokens(&c, tk, true, &held, &n_held, e)) goto out;
    pool = pool_new(o->threads);
    if (tm_ws_new(&w, m, B, pool_threads(pool), e)) goto out;
    const int T = m->c.n_ctx;
    in = um_malloc((size_t)B * T * sizeof *in);
    tgt = um_malloc((size_t)B * T * sizeof *tgt);
    inv = um_malloc((size_t)B * sizeof *inv);
    if (!in || !tgt || !inv) { um_errf(e, "out of memory"); goto out; }
    int n_win = heldout_windows(held, n_held, T, 0);
    printf("held-out: %zu tokens, %d windows of %d\n", n_held, n_win, T);
    double half = heldout_loss(m, w, pool, held, n_win, B, 0.5, 99, in, tgt, inv);
    printf("t=0.50  masked-token loss %.4f nats (perplexity %.1f)\n", half, exp(half));
    double avg = 0;
    for (int k = 0; k < 10; k++) {
        double t = 0.05 + 0.1 * k;
        double l = heldout_loss(m, w, pool, held, n_win, B, t, 100 + (uint64_t)k, in, tgt, inv);
        printf("t=%.2f  masked-token loss %.4f nats (perplexity %.1f)\n", t, l, exp(l));
        avg += l / 10;
    }
    printf("averaged over t (0.05..0.95): %.4f nats\n", avg);
    /* reference point: the training text's unigram distribution (add-one smoothed) */
    int32_t *train = NULL;
    size_t n_train = 0;
    double *cnt = um_calloc((size_t)m->c.n_vocab, sizeof *cnt);
    if (cnt && !corpus_tokens(&c, tk, false, &train, &n_train, e)) {
        for (size_t i = 0; i < n_train; i++) cnt[train[i]] += 1;
        double ce = 0;
        for (size_t i = 0; i < (size_t)n_win * T; i++) ce -= log((cnt[held[i]] + 1) / ((double)n_train + m->c.n_vocab));
        printf("unigram baseline (no context): %.4f nats\n", ce / ((double)n_win * T));
    }
    free(cnt);
    free(train);
    rc = UM_OK;
out:
    free(in); free(tgt); free(inv); free(held);
    tm_ws_free(w);
    pool_free(pool);
    tm_free(m);
    tok_free(tk);
    corpus_free(&c);
    return rc;
}

/* Openings (first 10 words) of 4 held-out paragraphs per file, spread over the held-out
 * part, one per line. A paragraph starts a line after a blank line (verse, tales) or is a
 * single line of 200 bytes or more (prose with one paragraph per line). */
static int cmd_prompts(opts *o, um_err *e) {
    corpus c;
    if (corpus_load(&c, o->files, o->n_files, e)) return UM_FAIL;
    for (int f = 0; f < c.n; f++) {
        const char *s = c.text[f];
        const size_t n = c.len[f], held = n - c.split[f];
        for (int j = 0; j < 4; j++) {
            for (size_t i = c.split[f] + held * (size_t)j / 4; i < n; i++) {
                if (s[i - 1] != '\n' || s[i] == '\n') continue;
                size_t eol = i;
                while (eol < n && s[eol] != '\n') eol++;
                bool after_blank = i >= 2 && s[i - 2] == '\n', long_line = eol - i >= 200;
                if (!after_blank && !long_line) continue;
                size_t end = eol;           /* a blank-line paragraph runs to the next blank line */
                if (!long_line) while (end + 1 < n && !(s[end] == '\n' && s[end + 1] == '\n')) end++;
                if (end - i < 200) continue;
                int nw = 0;
                for (size_t k = i; k < end && nw < 10; nw++) {
                    while (k < end && (s[k] == ' ' || s[k] == '\n')) k++;
                    size_t b = k;
                    while (k < end && s[k] != ' ' && s[k] != '\n') k++;
                    printf("%s%.*s", nw ? " " : "", (int)(k - b), s + b);
                }
                printf("\n");
                break;
            }
        }
    }
    corpus_free(&c);
    return UM_OK;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: unmask-train bpe|chars|train|export|eval|prompts [options] FILE...\n");
        return 2;
    }
    opts o;
    if (parse(&o, argc, argv)) { free(o.files); return 2; }
    um_err e = { "" };
    um_err se = { "" };                 /* a signal removes unfinished outputs' temporaries (outfile.h) */
    sigexit_add_hook(outfile_signal_cleanup);
    if (sigexit_install(SIGEXIT_DIE, &se)) fprintf(stderr, "unmask-train: warning: %s\n", se.msg);
    int rc;
    if (check_files(&o, !strcmp(argv[1], "train"), &e)) rc = UM_FAIL;
    else if (!strcmp(argv[1], "bpe")) rc = cmd_bpe(&o, &e);
    else if (!strcmp(argv[1], "chars")) rc = cmd_chars(&o, &e);
    else if (!strcmp(argv[1], "train")) rc = o.sft ? cmd_train_sft(&o, &e) : cmd_train(&o, &e);
    else if (!strcmp(argv[1], "export")) rc = cmd_export(&o, &e);
    else if (!strcmp(argv[1], "eval")) rc = o.sft ? cmd_eval_sft(&o, &e) : cmd_eval(&o, &e);
    else if (!strcmp(argv[1], "prompts")) rc = cmd_prompts(&o, &e);
    else { fprintf(stderr, "unmask-train: unknown command '%s'\n", argv[1]); free(o.files); return 2; }
    free(o.files);
    if (rc) { fprintf(stderr, "unmask-train: %s\n", e.msg); return 1; }
    return 0;
}
