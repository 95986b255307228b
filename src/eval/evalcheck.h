/*
 * evalcheck: the answer checks of `unmask eval`. Each check compares a model's output text
 * with a task's prompt and expected answer and says right or wrong, with a short reason
 * when wrong. Pure functions of their inputs (no model, no I/O).
 *
 *   exact  - the output and the answer are equal once leading/trailing whitespace is trimmed
 *   number - the last number in the output equals the last number in the answer
 *            ("1,234" = "1234", "3.50" = "3.5", "-0" = "0"; a trailing '.' is punctuation)
 *   sudoku - skipping whitespace, the output's first 81 characters are digits 1-9 forming a
 *            valid grid that keeps every given of the prompt (the answer is not consulted)
 */
#ifndef UM_EVALCHECK_H
#define UM_EVALCHECK_H

#include <stdbool.h>
#include <stddef.h>

#include "util.h"

typedef enum evalcheck_kind { EVALCHECK_EXACT = 0, EVALCHECK_NUMBER, EVALCHECK_SUDOKU } evalcheck_kind;

/* "exact", "number", "sudoku". */
const char *evalcheck_name(evalcheck_kind k);
int  evalcheck_parse(const char *s, evalcheck_kind *k, um_err *e);
/* Can a task be checked this way? (number: the answer holds a number; sudoku: the prompt is
 * an 81-character puzzle.) The message says what is wrong with the task. */
int  evalcheck_task_ok(evalcheck_kind k, const char *prompt, const char *answer, um_err *e);
/* Is output right? When wrong and why is non-NULL, a short reason goes there. */
bool evalcheck_run(evalcheck_kind k, const char *prompt, const char *answer, const char *output,
                   char *why, size_t why_cap);
/* The last number in text, normalized (no thousands commas, no leading zeros, no trailing
 * fraction zeros, no "-" on zero) into out. false when text holds no number or it does not fit. */
bool evalcheck_last_number(const char *text, char *out, size_t cap);

#endif
