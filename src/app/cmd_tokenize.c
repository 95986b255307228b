/*
 * cmd_tokenize: `unmask tokenize -m FILE [options] TEXT` prints the token ids of TEXT under
 * the GGUF file's tokenizer, one "id<TAB>'piece'" line per token (piece bytes escaped so the
 * output is always printable ASCII or valid UTF-8), or the ids alone on one line.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "flags.h"
#include "genopts.h"
#include "esc.h"
#include "infile.h"
#include "tokenizer.h"

enum { TK_FILE = 1, TK_IDS_ONLY, TK_NO_BOS, TK_NO_SPECIAL };

#define TK FLAG_CMD_TOKENIZE
static const um_flag tok_rows[] = {
    { 'f', "file", "PATH", TK_FILE, TK, FLAG_RUN, NULL, 0,
      "read the text from PATH (bytes as they are; '-' is stdin; a regular\n"
      "file of at most 16 MiB)" },
    { 0, "ids-only", NULL, TK_IDS_ONLY, TK, FLAG_RUN, NULL, 0, "print the ids on one line, separated by spaces" },
    { 0, "no-bos", NULL, TK_NO_BOS, TK, FLAG_RUN, NULL, 0, "do not add BOS/EOS even when the file asks for them" },
    { 0, "no-special", NULL, TK_NO_SPECIAL, TK, FLAG_RUN, NULL, 0, "treat special-token text (e.g. <|eot_id|>) as plain text" },
};
#undef TK

typedef struct tok_opts { const char *file; bool ids_only, no_bos, no_special; } tok_opts;

static int own_fn(void *ctx, const um_flag *f, const char *name, const char *v, const char *prog) {
    tok_opts *o = ctx;
    switch (f->id) {
    case TK_FILE:       o->file = v; break;
    case TK_IDS_ONLY:   o->ids_only = true; break;
    case TK_NO_BOS:     o->no_bos = true; break;
    case TK_NO_SPECIAL: o->no_special = true; break;
    default:            break;
    }
    return 0;
}

static void parser(flags_parser *p, flags_common *c, tok_opts *o, const char **pos) {
    *p = (flags_parser){ .prog = "unmask tokenize", .cmd = FLAG_CMD_TOKENIZE, .pos = pos, .max_pos = 1 };
    flags_add(p, flags_model_rows, flags_model_rows_n, flags_common_fn, c, NULL);
    flags_add(p, tok_rows, (int)(sizeof tok_rows / sizeof tok_rows[0]), own_fn, o, NULL);
    flags_add(p, flags_misc_rows, flags_misc_rows_n, flags_common_fn, c, NULL);
}

static void usage(FILE *f) {
    flags_parser p;
    parser(&p, NULL, NULL, NULL);
    fprintf(f,
        "usage: unmask tokenize (-m FILE | -M PRESET) [options] TEXT\n"
        "       unmask tokenize (-m FILE | -M PRESET) [options] -f TEXTFILE\n"
        "\n"
        "Tokenize TEXT with the tokenizer stored in the GGUF file FILE (tokenizer.ggml.* keys).\n"
        "A TEXT that starts with '-' goes after -- (unmask tokenize -m FILE -- -x).\n"
        "\n"
        "options:\n");
    flags_usage(f, &p);
    fprintf(f,
        "\n"
        "Each line of the default output is: id TAB 'piece', where piece is the raw bytes the\n"
        "token decodes to; \\n \\t \\r \\' \\\\ and \\xNN (other control characters, C1\n"
        "controls U+0080-U+009F and bytes that are not complete UTF-8) are escaped.\n");
}

static void print_piece(const uint8_t *p, size_t n) {
    putchar('\'');
    esc_fput(stdout, (const char *)p, n, ESC_BACKSLASH | ESC_C_NAMES, '\'');
    putchar('\'');
}

int cmd_tokenize(int argc, char **argv) {
    tok_opts o = { 0 };
    flags_common com = { 0 };
    const char *pos[1] = { NULL };
    flags_parser fp;
    parser(&fp, &com, &o, pos);
    int pr = flags_parse(&fp, argc, argv);
    if (pr == FLAGS_STOP) { usage(stdout); return 0; }
    if (pr) return pr;
    const char *file = o.file, *text = fp.n_pos ? pos[0] : NULL;
    const bool ids_only = o.ids_only, no_bos = o.no_bos, no_special = o.no_special;
    if (!com.model && !com.preset) {
        fprintf(stderr, "unmask tokenize: -m FILE (or -M PRESET) is required (see unmask tokenize --help)\n");
        return 2;
    }
    if (!text == !file) {
        fprintf(stderr, "unmask tokenize: give either TEXT or -f TEXTFILE (see unmask tokenize --help)\n");
        return 2;
    }
    char model[2048];
    um_err me = { "" };
    if (genopts_model_file(com.model, com.preset, model, sizeof model, &me)) {
        fprintf(stderr, "unmask tokenize: %s\n", me.msg);
        return 1;
    }

    char *owned = NULL;
    size_t len;
    if (file) {
        um_err fe = { "" };
        int rc = strcmp(file, "-") ? infile_read(file, INFILE_MAX_TEXT, &owned, &len, &fe)
                                   : infile_read_fd(STDIN_FILENO, "standard input", INFILE_MAX_TEXT, &owned, &len, &fe);
        if (rc) { fprintf(stderr, "unmask tokenize: -f %s\n", fe.msg); return 1; }
        text = owned;
    } else {
        len = strlen(text);
    }

    um_err e = { { 0 } };
    tokenizer *t;
    if (tok_load_file(&t, model, &e) != UM_OK) {
        fprintf(stderr, "unmask tokenize: %s\n", e.msg);
        free(owned);
        return 1;
    }
    unsigned flags = (no_bos ? 0 : TOK_ADD_SPECIAL) | (no_special ? 0 : TOK_PARSE_SPECIAL);
    int32_t *ids;
    size_t n;
    if (tok_encode(t, text, len, flags, &ids, &n, &e) != UM_OK) {
        fprintf(stderr, "unmask tokenize: %s\n", e.msg);
        tok_free(t);
        free(owned);
        return 1;
    }
    if (ids_only) {
        for (size_t i = 0; i < n; i++) printf(i ? " %d" : "%d", ids[i]);
        putchar('\n');
    } else {
        for (size_t i = 0; i < n; i++) {
            size_t pl;
            const uint8_t *p = tok_piece(t, ids[i], &pl);
            printf("%d\t", ids[i]);
            print_piece(p, pl);
            putchar('\n');
        }
    }
    free(ids);
    tok_free(t);
    free(owned);
    return 0;
}
