/*
 * sft: prompt/answer examples for conditional (supervised fine-tuning) training, read from
 * JSONL files and tokenized the way unmask builds its canvas.
 *
 * The files are task files as `unmask eval` reads them (tasks.h): each line a JSON object
 * with a string "prompt" and an "answer" (a string, or a number taken as its text); other
 * fields are ignored, blank lines skipped, and a file with no example is an error. An
 * example becomes one sequence of T tokens:
 *   [prompt tokens][answer tokens][<|endoftext|> padding up to T]
 * where the prompt is encoded as `unmask generate` encodes a prompt with no chat template
 * (special tokens parsed, BOS added when the file asks for it, no EOS) and the answer as
 * plain text. T is the longest prompt + answer of the set (padding is part of the answer, as
 * in LLaDA's SFT, so the model learns where an answer ends).
 * Invariants: every sequence has exactly T tokens; 0 < prompt_len[i] < T.
 */
#ifndef UM_TRAIN_SFT_H
#define UM_TRAIN_SFT_H

#include <stdint.h>

#include "chat.h"
#include "pool.h"
#include "tmodel.h"
#include "tokenizer.h"
#include "util.h"

typedef struct sft_set {
    int32_t *seq;               /* (n, T) token ids */
    int32_t *prompt_len;        /* (n) tokens of the prompt part of each sequence */
    int32_t  n, T;
    char    *longest;           /* "FILE:LINE" of the first example of T tokens (heap) */
} sft_set;

/* Read at most max_examples (0: all) examples from the files, in file then line order.
 * Fails with "FILE:LINE: ..." on a line that is not such an object, or when an example is
 * longer than max_T tokens; with "FILE: ..." on a file that cannot be read or has no example. */
int  sft_load(sft_set *out, const tokenizer *tk, char *const *paths, int n_paths, int max_examples, int max_T,
              um_err *e);
/* The same with the prompt formatted by a template (NULL: none), as `unmask generate` formats
 * it with that template: the sudoku model's file carries one (unmask.chat_template) that puts
 * the 81 cell markers before the puzzle. */
int  sft_load_chat(sft_set *out, const tokenizer *tk, const chat_custom *tmpl, char *const *paths, int n_paths,
                   int max_examples, int max_T, um_err *e);
/* The template a GGUF file carries in unmask.chat_template: UM_OK with *out NULL when it has
 * none; a malformed one is an error naming the file and the key. */
int  sft_file_template(const char *gguf_path, chat_custom **out, um_err *e);
/* Held-out sequences must be as long as the training ones: UM_OK, or a message naming the
 * longest example of each set. */
int  sft_same_length(const sft_set *train, const sft_set *held, um_err *e);
void sft_free(sft_set *s);

typedef struct sft_eval {
    double loss, acc;           /* held-out: CE per masked answer token, argmax accuracy (t = 0.5) */
    int64_t cells, cells_right; /* solving: answer positions, those equal to the answer */
    int puzzles, solved;        /* solving: examples, those with every answer position right */
} sft_eval;

/* Held-out answer loss and accuracy (sft_eval.loss, .acc) over the first n examples of s with
 * each answer token masked with probability t (fixed masks: the same for the same seed).
 * in (B * s->T) and logits (B * s->T * n_vocab) are scratch; B <= the workspace's max_b. */
void sft_heldout(tm_model *m, tm_ws *w, um_pool *p, const sft_set *s, int n, int B, double t, uint64_t seed,
                 int32_t *in, float *logits, sft_eval *ev);
/* Greedy solving of examples [first, first + n): every answer position masked, each step
 * commits the single most confident masked position of each example (probability of its
 * argmax, the mask excluded; ties: the first), as `unmask generate` does with confidence
 * scoring, one token per step, temperature 0. Adds to ev's cells, cells_right, puzzles, solved. */
void sft_solve(tm_model *m, tm_ws *w, um_pool *p, const sft_set *s, int first, int n, int B, int32_t *in,
               float *logits, sft_eval *ev);

/* Uniform-state models (train --corrupt uniform): the held-out answer loss and accuracy over
 * every answer position, each replaced by a uniformly random token with probability t (fixed
 * draws for the same seed); and solving: the answer starts as random tokens and each of
 * `rounds` passes replaces every answer position by its argmax (a fixed-point check of what
 * the model learnt, not the uniform-state sampler, which unmask runs). */
void sft_heldout_uniform(tm_model *m, tm_ws *w, um_pool *p, const sft_set *s, int n, int B, double t, uint64_t seed,
                         int32_t *in, float *logits, sft_eval *ev);
void sft_solve_uniform(tm_model *m, tm_ws *w, um_pool *p, const sft_set *s, int first, int n, int B, int rounds,
                       uint64_t seed, int32_t *in, float *logits, sft_eval *ev);

#endif
