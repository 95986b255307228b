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
#include "esc.h"
#include "infile.h"
#include "tokenizer.h"

static void usage(FILE *f) {
    fprintf(f,
        "usage: unmask tokenize -m FILE [options] TEXT\n"
        "       unmask tokenize -m FILE [options] -f TEXTFILE\n"
        "\n"
        "Tokenize TEXT with the tokenizer stored in the GGUF file FILE.\n"
        "\n"
        "options:\n"
        "  -m, --model FILE   GGUF file holding the tokenizer (tokenizer.ggml.* keys)\n"
        "  -f, --file PATH    read the text from PATH (bytes as they are; '-' is stdin; a regular\n"
        "                     file of at most 16 MiB)\n"
        "      --ids-only     print the ids on one line, separated by spaces\n"
        "      --no-bos       do not add BOS/EOS even when the file asks for them\n"
        "      --no-special   treat special-token text (e.g. <|eot_id|>) as plain text\n"
        "  -h, --help         show this help\n"
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
    const char *model = NULL, *file = NULL, *text = NULL;
    bool ids_only = false, no_bos = false, no_special = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { usage(stdout); return 0; }
        else if (!strcmp(a, "-m") || !strcmp(a, "--model")) {
            if (++i >= argc) { fprintf(stderr, "unmask tokenize: %s needs a file\n", a); return 2; }
            model = argv[i];
        } else if (!strcmp(a, "-f") || !strcmp(a, "--file")) {
            if (++i >= argc) { fprintf(stderr, "unmask tokenize: %s needs a path\n", a); return 2; }
            file = argv[i];
        } else if (!strcmp(a, "--ids-only")) ids_only = true;
        else if (!strcmp(a, "--no-bos")) no_bos = true;
        else if (!strcmp(a, "--no-special")) no_special = true;
        else if (a[0] == '-' && a[1] != 0 && strcmp(a, "--") != 0) {
            fprintf(stderr, "unmask tokenize: unknown option '%s' (see unmask tokenize --help)\n", a);
            return 2;
        } else {
            if (!strcmp(a, "--")) { if (++i >= argc) break; a = argv[i]; }
            if (text) { fprintf(stderr, "unmask tokenize: give the text as one argument (quote it)\n"); return 2; }
            text = a;
        }
    }
    if (!model) { fprintf(stderr, "unmask tokenize: -m FILE is required (see unmask tokenize --help)\n"); return 2; }
    if (!text == !file) {
        fprintf(stderr, "unmask tokenize: give either TEXT or -f TEXTFILE (see unmask tokenize --help)\n");
        return 2;
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
