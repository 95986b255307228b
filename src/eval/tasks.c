/*
 * tasks: JSONL task-file loader (see tasks.h). The file is read whole, split on '\n', and
 * each non-blank line parsed by jsonr; a line's bytes (a '\r' before the '\n' included) are
 * all handed to the JSON reader, which accepts '\r' as whitespace and rejects NUL bytes.
 */
#include "tasks.h"
#include "infile.h"

#include <stdlib.h>
#include <string.h>

#include "jsonr.h"

static char *dup_str(const char *s) {
    size_t n = strlen(s);
    char *d = malloc(n + 1);
    if (d) memcpy(d, s, n + 1);
    return d;
}

int tasks_add(task_set *ts, const char *prompt, const char *answer, int line, um_err *e) {
    if (ts->n == ts->cap) {
        int nc = ts->cap ? ts->cap * 2 : 64;
        task *ni = realloc(ts->items, (size_t)nc * sizeof *ni);
        if (!ni) return um_errf(e, "out of memory");
        ts->items = ni;
        ts->cap = nc;
    }
    task *t = &ts->items[ts->n];
    t->prompt = dup_str(prompt);
    t->answer = dup_str(answer);
    t->line = line;
    if (!t->prompt || !t->answer) {
        free(t->prompt);
        free(t->answer);
        return um_errf(e, "out of memory");
    }
    ts->n++;
    return UM_OK;
}

static bool blank(const char *s, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r') return false;
    return true;
}

int tasks_load(const char *path, task_set *ts, um_err *e) {
    char *data;
    size_t len;
    memset(ts, 0, sizeof *ts);
    if (infile_read(path, INFILE_MAX_TASKS, &data, &len, e) != UM_OK) return UM_FAIL;
    int line = 0;
    for (size_t at = 0; at < len;) {
        const char *s = data + at, *nl = memchr(s, '\n', len - at);
        size_t n = nl ? (size_t)(nl - s) : len - at;
        at += n + (nl != NULL);
        line++;
        if (blank(s, n)) continue;
        jsonr_obj o;
        if (jsonr_object(s, n, &o, e) != UM_OK) {
            um_err_prefix(e, "%s:%d", path, line);
            goto err;
        }
        const jsonr_member *p = jsonr_get(&o, "prompt"), *a = jsonr_get(&o, "answer");
        if (!p || !a) {
            um_errf(e, "%s:%d: missing \"%s\"", path, line, !p ? "prompt" : "answer");
        } else if (p->type != JSONR_STRING) {
            um_errf(e, "%s:%d: \"prompt\" must be a string, got %s", path, line, jsonr_type_name(p->type));
        } else if (a->type != JSONR_STRING && a->type != JSONR_NUMBER) {
            um_errf(e, "%s:%d: \"answer\" must be a string or a number, got %s", path, line, jsonr_type_name(a->type));
        } else if (tasks_add(ts, p->str, a->str, line, e) == UM_OK) {
            jsonr_free(&o);
            continue;
        } else {
            um_err_prefix(e, "%s:%d", path, line);
        }
        jsonr_free(&o);
        goto err;
    }
    free(data);
    if (ts->n == 0) return um_errf(e, "%s: no tasks (the file is empty or has only blank lines)", path);
    return UM_OK;
err:
    free(data);
    tasks_free(ts);
    return UM_FAIL;
}

void tasks_free(task_set *ts) {
    for (int i = 0; i < ts->n; i++) { free(ts->items[i].prompt); free(ts->items[i].answer); }
    free(ts->items);
    memset(ts, 0, sizeof *ts);
}
