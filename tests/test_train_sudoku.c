/*
 * The sudoku model's training pieces (tools/train/sudoku_train.h): the cell-marker vocabulary
 * and the prompt template its file carries, augmentation by sudoku's symmetries, masking with
 * visible givens, and the structured marker initialisation.
 */
#include "harness.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bpe.h"
#include "chat.h"
#include "gguf.h"
#include "sft.h"
#include "sudoku.h"
#include "sudoku_train.h"
#include "tmodel.h"
#include "tokenizer.h"

static const char PUZZLE[] = "5493178.68...493..3...5.9147.6594.3........4..83.....11..98....29...61536..1.37.9";
static const char ANSWER[] = "549317826861249375372658914716594238925831647483762591137985462298476153654123789";

/* the marker vocabulary, as `unmask-train chars --markers sudoku` writes it, in memory */
typedef struct mtok {
    gguf_file *g;
    uint8_t *buf;
    tokenizer *tk;
    chat_custom *tmpl;
} mtok;

static tokenizer *mtok_open(mtok *c) {
    *c = (mtok){ 0 };
    bpe_vocab *v = NULL;
    um_err e = { "" };
    char *tt = sdk_template_text();
    if (!tt || bpe_chars(&v, "0123456789.\n", 12, &e)) { free(tt); return NULL; }
    for (int i = 0; i < SDK_CELLS; i++) {
        char m[16];
        sdk_marker_text(i, m);
        if (bpe_add_control(v, m, &e)) { bpe_free(v); free(tt); return NULL; }
    }
    gguf_writer *w = gguf_writer_new();
    gguf_set_str(w, "general.architecture", "llada");
    gguf_set_str(w, "unmask.chat_template", tt);
    size_t size;
    if (bpe_write_kv(v, w, &e) == UM_OK && gguf_writer_write_mem(w, &c->buf, &size, &e) == UM_OK &&
        gguf_open_mem(&c->g, c->buf, size, &e) == UM_OK && tok_load(&c->tk, c->g, &e) == UM_OK) {
        const gguf_kv *kv = gguf_find_kv(c->g, "unmask.chat_template");
        if (!kv || chat_template_parse(kv->v.s.ptr, (size_t)kv->v.s.len, "mem", &c->tmpl, &e)) {
            tok_free(c->tk);
            c->tk = NULL;
        }
    }
    gguf_writer_free(w);
    bpe_free(v);
    free(tt);
    return c->tk;
}

static void mtok_close(mtok *c) {
    chat_custom_free(c->tmpl);
    tok_free(c->tk);
    gguf_close(c->g);
    free(c->buf);
}

/* the example as one sequence through sft_load_chat, as training reads it */
static int load_one(mtok *c, const char *puzzle, const char *answer, sft_set *s) {
    char path[] = "/tmp/um_sdk_XXXXXX", line[256];
    int fd = mkstemp(path);
    if (fd < 0) return UM_FAIL;
    int n = snprintf(line, sizeof line, "{\"prompt\": \"%s\", \"answer\": \"%s\"}\n", puzzle, answer);
    bool ok = write(fd, line, (size_t)n) == n;
    close(fd);
    um_err e = { "" };
    char *p = path;
    int rc = ok ? sft_load_chat(s, c->tk, c->tmpl, &p, 1, 0, 1024, &e) : UM_FAIL;
    unlink(path);
    return rc;
}

TEST(train_sudoku_markers_prompt) {
    mtok c;
    tokenizer *tk = mtok_open(&c);
    CHECK(tk != NULL);
    CHECK_EQ(tok_n_vocab(tk), 14 + 81);
    sdk_layout l;
    um_err e = { "" };
    CHECK(sdk_layout_init(&l, tk, &e) == UM_OK);
    CHECK_EQ(l.marker0, 14);
    CHECK_EQ(l.digit[0], 10);
    CHECK_EQ(l.digit[7], 7);
    sft_set s;
    CHECK(load_one(&c, PUZZLE, ANSWER, &s) == UM_OK);
    /* [BOS][81 markers][81 cells][81 answer cells] */
    CHECK_EQ(s.T, 1 + 81 + 81 + 81);
    CHECK_EQ(s.prompt_len[0], 163);
    CHECK_EQ(s.seq[0], 12);
    for (int i = 0; i < 81; i++) {
        CHECK_EQ(s.seq[1 + i], 14 + i);
        CHECK_EQ(s.seq[82 + i], PUZZLE[i] == '.' ? 10 : PUZZLE[i] - '0');
        CHECK_EQ(s.seq[163 + i], ANSWER[i] - '0');
    }
    CHECK(sdk_seq_ok(&l, s.seq, s.T, s.prompt_len[0]));
    s.seq[163] = 4;                                  /* the answer no longer keeps the given 5 */
    CHECK(!sdk_seq_ok(&l, s.seq, s.T, s.prompt_len[0]));
    sft_free(&s);
    mtok_close(&c);
}

/* every image of a valid pair is a valid pair: the answer a valid grid that keeps every given */
TEST(train_sudoku_augment_is_a_symmetry) {
    mtok c;
    CHECK(mtok_open(&c) != NULL);
    sdk_layout l;
    um_err e = { "" };
    CHECK(sdk_layout_init(&l, c.tk, &e) == UM_OK);
    sft_set s;
    CHECK(load_one(&c, PUZZLE, ANSWER, &s) == UM_OK);
    const int T = s.T, P = s.prompt_len[0];
    int32_t *out = malloc((size_t)T * sizeof *out);
    uint64_t r[4];
    tm_rand_seed(r, 5);
    int moved = 0, transposed_like = 0;
    uint8_t pz0[81], an0[81];
    for (int i = 0; i < 81; i++) { pz0[i] = PUZZLE[i] == '.' ? 0 : (uint8_t)(PUZZLE[i] - '0'); an0[i] = (uint8_t)(ANSWER[i] - '0'); }
    for (int k = 0; k < 300; k++) {
        sdk_augment(&l, s.seq, T, P, r, out);
        CHECK(sdk_seq_ok(&l, out, T, P));
        for (int i = 0; i < P - 81; i++) CHECK_EQ(out[i], s.seq[i]);     /* BOS and markers */
        uint8_t pz[81], an[81];
        int blanks = 0, blanks0 = 0;
        for (int i = 0; i < 81; i++) {
            pz[i] = out[P - 81 + i] == l.digit[0] ? 0 : (uint8_t)out[P - 81 + i];
            an[i] = (uint8_t)out[P + i];
            blanks += pz[i] == 0;
            blanks0 += pz0[i] == 0;
        }
        CHECK(sudoku_grid_valid(an));
        CHECK(sudoku_check(pz, an));
        CHECK_EQ(blanks, blanks0);
        moved += memcmp(an, an0, 81) != 0;
        /* the first row's givens pattern equal to the first column's: transposition happened */
        bool t = true;
        for (int j = 0; j < 9; j++) t = t && (pz[j] == 0) == (pz0[j * 9] == 0);
        transposed_like += t;
    }
    CHECK(moved > 290);
    CHECK(transposed_like > 0);
    free(out);
    sft_free(&s);
    mtok_close(&c);
}

TEST(train_sudoku_mask_visible_givens) {
    mtok c;
    CHECK(mtok_open(&c) != NULL);
    sdk_layout l;
    um_err e = { "" };
    CHECK(sdk_layout_init(&l, c.tk, &e) == UM_OK);
    sft_set s;
    CHECK(load_one(&c, PUZZLE, ANSWER, &s) == UM_OK);
    const int T = s.T, P = s.prompt_len[0];
    tm_config cfg = { .n_vocab = 95, .n_embd = 16, .n_layer = 1, .n_head = 2, .n_ff = 32, .n_ctx = T, .mask_id = 13,
                      .rope_base = 17.7214f, .norm_eps = 1e-5f };
    tm_model *m = NULL;
    CHECK(tm_new(&m, &cfg, &e) == UM_OK);
    int32_t *in = malloc((size_t)T * sizeof *in), *tg = malloc((size_t)T * sizeof *tg);
    int blanks = 0;
    for (int i = 0; i < 81; i++) blanks += PUZZLE[i] == '.';
    uint64_t r[4];
    tm_rand_seed(r, 9);
    for (int vis = 0; vis <= 1; vis++) {
        long given_masked = 0, blank_masked = 0;
        for (int k = 0; k < 200; k++) {
            float w = sdk_mask_answer(m, &l, s.seq, T, P, vis ? 1.0 : 0.0, r, in, tg);
            int mk = 0;
            for (int i = 0; i < T; i++) {
                CHECK_EQ(tg[i], s.seq[i]);
                if (in[i] != 13) { CHECK_EQ(in[i], s.seq[i]); continue; }
                CHECK(i >= P);
                mk++;
                if (PUZZLE[i - P] == '.') blank_masked++;
                else given_masked++;
            }
            /* w = 1 / (p * maskable) with p in (0, 1]: at least 1 / maskable */
            CHECK(w >= 1.0f / (float)(vis ? blanks : 81) * 0.999f);
        }
        if (vis) CHECK_EQ(given_masked, 0);
        else CHECK(given_masked > 1000);
        CHECK(blank_masked > 2000);
    }
    free(in); free(tg);
    tm_free(m);
    sft_free(&s);
    mtok_close(&c);
}

TEST(train_sudoku_marker_init_is_row_column_box) {
    sdk_layout l = { { 10, 1, 2, 3, 4, 5, 6, 7, 8, 9 }, 14 };
    tm_config cfg = { .n_vocab = 95, .n_embd = 16, .n_layer = 1, .n_head = 2, .n_ff = 32, .n_ctx = 244, .mask_id = 13,
                      .rope_base = 17.7214f, .norm_eps = 1e-5f };
    tm_model *m = NULL;
    um_err e = { "" };
    CHECK(tm_new(&m, &cfg, &e) == UM_OK);
    tm_init(m, 3);
    const tm_tensor *emb = tm_find(m, "token_embd.weight");
    const float *E = m->p + emb->off;
    float before = E[14 * 16];
    sdk_init_markers(m, &l, 3);
    CHECK(E[14 * 16] != before);
#define MK(r, c) (E + (14 + (r) * 9 + (c)) * 16)
    for (int d = 0; d < 16; d++) {
        /* (0,0)-(0,1) and (1,0)-(1,1): the same two columns, boxes and rows paired alike */
        CHECK_NEAR(MK(0, 0)[d] - MK(0, 1)[d], MK(1, 0)[d] - MK(1, 1)[d], 1e-6);
    }
    bool differs = false;
    for (int d = 0; d < 16; d++)
        differs |= fabsf((MK(0, 2)[d] - MK(0, 3)[d]) - (MK(0, 1)[d] - MK(0, 2)[d])) > 1e-4f;
    CHECK(differs);
    /* the other tokens keep their initialisation */
    tm_model *m2 = NULL;
    CHECK(tm_new(&m2, &cfg, &e) == UM_OK);
    tm_init(m2, 3);
    CHECK(memcmp(m2->p + emb->off, E, 14 * 16 * sizeof *E) == 0);
#undef MK
    tm_free(m2);
    tm_free(m);
}
