/*
 * tasks: task files for `unmask eval` and the sudoku generator's checks. A task file is
 * JSONL: one JSON object per line with a string "prompt" and an "answer" (a string, or a
 * number kept as its text); other members are ignored and blank lines skipped.
 *
 * Every problem is reported as "FILE:LINE: what is wrong" (one line), and a file with no
 * task is an error. Items keep their 1-based line number for later messages.
 */
#ifndef UM_TASKS_H
#define UM_TASKS_H

#include "util.h"

typedef struct task {
    char *prompt;            /* decoded UTF-8, NUL-terminated */
    char *answer;            /* decoded UTF-8 (or a number's text), NUL-terminated */
    int   line;              /* 1-based line in the file; 0 for generated tasks */
} task;

typedef struct task_set {
    task *items;             /* (n) */
    int   n, cap;
} task_set;

/* Load every task of path. On failure ts is left empty. */
int  tasks_load(const char *path, task_set *ts, um_err *e);
/* Append a copy of (prompt, answer) with line number line. */
int  tasks_add(task_set *ts, const char *prompt, const char *answer, int line, um_err *e);
void tasks_free(task_set *ts);

#endif
