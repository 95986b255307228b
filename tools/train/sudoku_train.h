/*
 * sudoku_train: what training the sudoku model adds to plain conditional (SFT) training.
 *
 * The model's prompt (docs/sudoku.md) is [BOS][81 cell markers][81 puzzle cells] and its
 * answer the 81 cells of the solved grid. The markers <|r1c1|> ... <|r9c9|> are control
 * tokens, one per cell in row-major order, the same in every prompt: their embeddings are
 * the model's learned positions (which row, column and box a cell is in), which a llada
 * GGUF has no other place for. A cell of the puzzle sits 81 positions after its marker and a
 * cell of the answer 81 after the puzzle's, so one fixed RoPE offset finds each. The file
 * carries the prompt template that adds the markers (key unmask.chat_template, the syntax of
 * --chat-template-file), so `unmask generate -m MODEL -p PUZZLE` needs only the puzzle.
 *
 * Training pieces:
 *   - augmentation: a random symmetry of sudoku (digit relabelling, rows within a band,
 *     bands, columns within a stack, stacks, transposition) applied to the puzzle and its
 *     answer together; every image of a valid pair is a valid pair;
 *   - visible givens: a fraction of the sequences mask only the answer's blanks (cells whose
 *     puzzle cell is '.'), so the loss is on the blanks and the state is the one decoding
 *     meets once the givens are copied; the rest mask every answer cell (as tm_mask_answer),
 *     which keeps the copying of givens learnt;
 *   - structured marker initialisation: marker (r, c) starts as the sum of a row, a column
 *     and a box vector, so cells that share a unit start out alike (then trained freely).
 * Invariants: augmentation and masking draw only from the rng given (resumed runs stay bit
 * exact); markers and other tokens are copied unchanged.
 */
#ifndef UM_TRAIN_SUDOKU_TRAIN_H
#define UM_TRAIN_SUDOKU_TRAIN_H

#include <stdbool.h>
#include <stdint.h>

#include "tmodel.h"
#include "tokenizer.h"
#include "util.h"

#define SDK_CELLS 81

/* The text of cell i's marker (row-major, i in [0, 81)): "<|r1c1|>" ... "<|r9c9|>". */
void sdk_marker_text(int cell, char out[16]);

/* The prompt template carried by the model file (unmask.chat_template): the 81 markers, then
 * the user's text; BOS from the tokenizer. Heap string. */
char *sdk_template_text(void);

typedef struct sdk_layout {
    int32_t digit[10];          /* token ids of '1'..'9' at [1..9]; [0]: the blank '.' */
    int32_t marker0;            /* id of <|r1c1|> (the 81 markers are consecutive), -1: none */
} sdk_layout;

/* Token ids from a tokenizer that has one token per character '1'-'9' and '.'. */
int  sdk_layout_init(sdk_layout *l, const tokenizer *tk, um_err *e);

/* True when seq's last 81 prompt tokens are cells (digits or '.') and its first 81 answer
 * tokens are digits that agree with every given (prompt_len + 81 <= T). */
bool sdk_seq_ok(const sdk_layout *l, const int32_t *seq, int T, int prompt_len);

/* out (T) = seq with a random symmetry applied to its puzzle and answer cells. */
void sdk_augment(const sdk_layout *l, const int32_t *seq, int T, int prompt_len, uint64_t rng[4], int32_t *out);

/* Conditional masking: with probability given_visible only the answer's blanks are masked
 * (each with probability p as in tm_mask_answer), otherwise every answer token. Returns the
 * sequence's loss weight 1 / (p * the number of maskable tokens). */
float sdk_mask_answer(const tm_model *m, const sdk_layout *l, const int32_t *seq, int T, int prompt_len,
                      double given_visible, uint64_t rng[4], int32_t *input, int32_t *target);

/* Marker (r, c) = row r + column c + box vectors, each normal(0, 0.02), drawn from seed. */
void sdk_init_markers(tm_model *m, const sdk_layout *l, uint64_t seed);

#endif
