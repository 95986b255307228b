/*
 * flags: the table-driven parser and help printer, and the rows every command shares
 * (see flags.h). Arguments shown in messages pass the escaping rule (esc.h): a flag typed
 * with control bytes cannot act on the terminal.
 */
#include "flags.h"

#include <string.h>

#include "esc.h"
#include "numparse.h"

const um_flag flags_model_rows[] = {
    { .help = "model:", .cmds = FLAG_CMD_DECODE },
    { 'm', "model", "FILE", FLAG_ID_MODEL,
      FLAG_CMD_DECODE | FLAG_CMD_LOGITS | FLAG_CMD_TOKENIZE | FLAG_CMD_INFO, FLAG_RUN | FLAG_PANE, NULL, 0,
      "model file (GGUF; any part of a split model); when decoding, a file\n"
      "a preset names gets its settings; default: the demo preset" },
    { 'M', "preset", "NAME", FLAG_ID_PRESET,
      FLAG_CMD_DECODE | FLAG_CMD_LOGITS | FLAG_CMD_TOKENIZE | FLAG_CMD_INFO, FLAG_RUN | FLAG_PANE, NULL, 0,
      "a preset of models.conf (unmask --list-models): its model file and,\n"
      "when decoding, its settings" },
    { 't', "threads", "N", FLAG_ID_THREADS, FLAG_CMD_DECODE | FLAG_CMD_LOGITS | FLAG_CMD_QUANTIZE, FLAG_RUN, NULL, 0,
      "threads, 1 to 1024 (default: physical cores)" },
};
const int flags_model_rows_n = (int)(sizeof flags_model_rows / sizeof flags_model_rows[0]);

const um_flag flags_misc_rows[] = {
    { 'q', "quiet", NULL, FLAG_ID_QUIET,
      FLAG_CMD_VIEW | FLAG_CMD_GENERATE | FLAG_CMD_EVAL | FLAG_CMD_RECORD | FLAG_CMD_QUANTIZE | FLAG_CMD_SPLIT |
      FLAG_CMD_SYNTH, FLAG_RUN, NULL, 0, "no progress on stderr" },
    { 'h', "help", NULL, FLAG_ID_HELP, FLAG_CMD_ALL, FLAG_RUN, NULL, 0, "this help" },
};
const int flags_misc_rows_n = (int)(sizeof flags_misc_rows / sizeof flags_misc_rows[0]);

int flags_common_fn(void *ctx, const um_flag *f, const char *name, const char *v, const char *prog) {
    flags_common *c = ctx;
    switch (f->id) {
    case FLAG_ID_MODEL:   c->model = v; return 0;
    case FLAG_ID_PRESET:  c->preset = v; return 0;
    case FLAG_ID_THREADS: return num_arg_i32(prog, name, v, 1, FLAGS_MAX_THREADS, &c->threads);
    case FLAG_ID_QUIET:   c->quiet = true; return 0;
    case FLAG_ID_HELP:    c->help = true; return FLAGS_STOP;
    default:              return 0;
    }
}

void flags_add(flags_parser *p, const um_flag *rows, int n, flags_fn fn, void *ctx, flags_fill_fn fill) {
    if (p->n_sets < FLAGS_MAX_SETS) p->sets[p->n_sets++] = (flags_set){ rows, n, fn, ctx, fill };
}

static bool is_heading(const um_flag *f) { return !f->short_name && !f->long_name; }

const um_flag *flags_find(const um_flag *rows, int n, unsigned cmd, const char *name) {
    size_t len = strlen(name);
    for (int k = 0; k < n; k++) {
        const um_flag *f = &rows[k];
        if (!(f->cmds & cmd) || is_heading(f)) continue;
        if (f->long_name && !strcmp(f->long_name, name)) return f;
        if (len == 1 && f->short_name == name[0]) return f;
    }
    return NULL;
}

/* The row of p named by a long name of len bytes, or by one short letter; *set its set. */
static const um_flag *lookup(const flags_parser *p, const char *name, size_t len, bool is_long, const flags_set **set) {
    for (int s = 0; s < p->n_sets; s++)
        for (int k = 0; k < p->sets[s].n; k++) {
            const um_flag *f = &p->sets[s].rows[k];
            if (!(f->cmds & p->cmd) || is_heading(f)) continue;
            bool hit = is_long ? f->long_name && strlen(f->long_name) == len && !strncmp(f->long_name, name, len)
                               : f->short_name == name[0];
            if (hit) { *set = &p->sets[s]; return f; }
        }
    return NULL;
}

/* An argument as messages show it: escaped, at most about 80 bytes. */
static const char *shown(const char *s, char *buf, size_t cap) {
    size_t n = strlen(s);
    size_t cut = esc_cut(s, n, 80);
    esc_str(buf, cap, s, cut, 0, 0);
    if (cut < n && strlen(buf) + 4 < cap) strcat(buf, "...");
    return buf;
}

static const char *hint(const flags_parser *p) { return p->cmd == FLAG_CMD_VIEW ? "unmask --ui-help" : "--help"; }

/* Apply row f of set s as typed `name` with value v: 1 consumed, -1 bad, FLAGS_STOP + 1 stop. */
static int apply(flags_parser *p, const flags_set *s, const um_flag *f, const char *name, const char *v) {
    if ((f->attrs & p->refuse) && !(f->attrs & FLAG_PANE)) {
        fprintf(stderr, "%s: %s%s is not allowed there (every pane decodes the same prompt on the same machine; "
                        "give it outside --compare)\n", p->prog, p->where ? p->where : "", name);
        return -1;
    }
    int r = s->fn(s->ctx, f, name, v, p->prog);
    return r < 0 ? -1 : r == FLAGS_STOP ? FLAGS_STOP + 1 : 1;
}

int flags_parse_one(flags_parser *p, int argc, char **argv, int *i) {
    const char *a = argv[*i];
    char typed[80], buf[400];
    const flags_set *s = NULL;
    const um_flag *f;
    if (a[0] != '-' || !a[1] || !strcmp(a, "--")) return 0;
    if (a[1] == '-') {                              /* --name, --name=value, --name value */
        const char *name = a + 2, *eq = strchr(name, '=');
        size_t len = eq ? (size_t)(eq - name) : strlen(name);
        if (!(f = lookup(p, name, len, true, &s))) return 0;
        snprintf(typed, sizeof typed, "--%s", f->long_name);
        const char *v = NULL;
        if (!f->arg && eq) {
            fprintf(stderr, "%s: %s%s takes no value (given '%s')\n", p->prog, p->where ? p->where : "", typed,
                    shown(eq + 1, buf, sizeof buf));
            return -1;
        }
        if (f->arg) {
            if (eq) v = eq + 1;
            else if (*i + 1 < argc) v = argv[++*i];
            else {
                fprintf(stderr, "%s: %s%s needs a value (%s)\n", p->prog, p->where ? p->where : "", typed, f->arg);
                return -1;
            }
        }
        return apply(p, s, f, typed, v);
    }
    for (const char *c = a + 1; *c; c++) {          /* -x, -xVALUE, -x VALUE, -qh */
        if (!(f = lookup(p, c, 1, false, &s))) {
            if (c == a + 1) return 0;
            char one[2] = { *c, 0 };
            fprintf(stderr, "%s: %sunknown option '-%s' in '%s' (see %s)\n", p->prog, p->where ? p->where : "",
                    shown(one, typed, sizeof typed), shown(a, buf, sizeof buf), hint(p));
            return -1;
        }
        snprintf(typed, sizeof typed, "-%c", f->short_name);
        if (!f->arg) {
            int r = apply(p, s, f, typed, NULL);
            if (r != 1) return r;
            continue;
        }
        const char *v = c[1] ? c + 1 : *i + 1 < argc ? argv[++*i] : NULL;
        if (!v) {
            fprintf(stderr, "%s: %s%s needs a value (%s)\n", p->prog, p->where ? p->where : "", typed, f->arg);
            return -1;
        }
        return apply(p, s, f, typed, v);
    }
    return 1;
}

int flags_parse(flags_parser *p, int argc, char **argv) {
    bool args_only = false;                        /* after "--" */
    char buf[400];
    p->n_pos = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!args_only && !strcmp(a, "--")) { args_only = true; continue; }
        if (args_only || a[0] != '-' || !a[1]) {
            if (!p->pos || p->n_pos >= p->max_pos) {
                fprintf(stderr, p->max_pos ? "%s: %stoo many arguments ('%s'; see %s)\n"
                                           : "%s: %sunexpected argument '%s' (see %s)\n",
                        p->prog, p->where ? p->where : "", shown(a, buf, sizeof buf), hint(p));
                return 2;
            }
            p->pos[p->n_pos++] = a;
            continue;
        }
        int r = flags_parse_one(p, argc, argv, &i);
        if (r == 0) {
            const char *eq = a[1] == '-' ? strchr(a, '=') : NULL;   /* --name=VALUE: name the flag alone */
            char flag[120];
            snprintf(flag, sizeof flag, "%.*s", eq ? (int)(eq - a) : (int)strlen(a), a);
            fprintf(stderr, "%s: %sunknown option '%s' (see %s)\n", p->prog, p->where ? p->where : "",
                    shown(flag, buf, sizeof buf), hint(p));
            return 2;
        }
        if (r < 0) return 2;
        if (r == FLAGS_STOP + 1) return FLAGS_STOP;
    }
    return 0;
}

void flags_head(const um_flag *f, char *buf, size_t cap) {
    size_t n = 0;
    if (f->short_name) n += (size_t)snprintf(buf + n, cap - n, "-%c", f->short_name);
    if (f->long_name && n < cap) n += (size_t)snprintf(buf + n, cap - n, "%s--%s", n ? ", " : "", f->long_name);
    if (f->arg && n < cap) snprintf(buf + n, cap - n, " %s", f->arg);
}

/* The help column: heads narrower than HEAD_W, the text after them (at least two spaces
 * apart); longer heads get a line of their own. */
#define HEAD_W 20

static void print_row(FILE *out, const flags_set *s, const um_flag *f) {
    char head[96], fill[400] = "", text[1200];
    flags_head(f, head, sizeof head);
    const char *at = strstr(f->help, "%s");
    if (at && s->fill) s->fill(f, fill, sizeof fill);
    if (at) snprintf(text, sizeof text, "%.*s%s%s", (int)(at - f->help), f->help, fill, at + 2);
    else snprintf(text, sizeof text, "%s", f->help);
    if (strlen(head) >= HEAD_W) fprintf(out, "  %s\n  %-*s ", head, HEAD_W, "");
    else fprintf(out, "  %-*s ", HEAD_W, head);
    for (const char *t = text; *t; t++) {
        fputc(*t, out);
        if (*t == '\n') fprintf(out, "  %-*s ", HEAD_W, "");
    }
    fputc('\n', out);
}

void flags_usage(FILE *out, const flags_parser *p) {
    for (int s = 0; s < p->n_sets; s++) {
        const flags_set *set = &p->sets[s];
        const um_flag *heading = NULL;
        for (int k = 0; k < set->n; k++) {
            const um_flag *f = &set->rows[k];
            if (!(f->cmds & p->cmd)) continue;
            if (is_heading(f)) { heading = f; continue; }
            if (heading) { fprintf(out, "%s\n", heading->help); heading = NULL; }
            print_row(out, set, f);
        }
    }
}
