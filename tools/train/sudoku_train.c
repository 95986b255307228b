/*
 * sudoku_train: augmentation, masking with visible givens and marker initialisation for
 * the sudoku model (see sudoku_train.h).
 */
#include "sudoku_train.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void sdk_marker_text(int cell, char out[16]) {
    snprintf(out, 16, "<|r%cc%c|>", '1' + (cell / 9) % 9, '1' + cell % 9);
}

char *sdk_template_text(void) {
    /* user = "<markers>{user}", assistant = "": the file syntax of src/format/chat.h */
    static const char head[] = "# the sudoku model: 81 cell markers, then the puzzle\nuser = \"";
    static const char tail[] = "{user}\"\nassistant = \"\"\n";
    size_t cap = sizeof head + SDK_CELLS * 16 + sizeof tail;
    char *s = malloc(cap);
    if (!s) return NULL;
    size_t n = (size_t)snprintf(s, cap, "%s", head);
    for (int i = 0; i < SDK_CELLS; i++) {
        char m[16];
        sdk_marker_text(i, m);
        n += (size_t)snprintf(s + n, cap - n, "%s", m);
    }
    snprintf(s + n, cap - n, "%s", tail);
    return s;
}

int sdk_layout_init(sdk_layout *l, const tokenizer *tk, um_err *e) {
    for (int d = 0; d <= 9; d++) {
        char c = d ? (char)('0' + d) : '.';
        l->digit[d] = tok_find(tk, &c, 1);
        if (l->digit[d] < 0) return um_errf(e, "sudoku: the vocabulary has no token '%c'", c);
    }
    char m[16];
    sdk_marker_text(0, m);
    l->marker0 = tok_find(tk, m, strlen(m));
    for (int i = 1; l->marker0 >= 0 && i < SDK_CELLS; i++) {
        sdk_marker_text(i, m);
        if (tok_find(tk, m, strlen(m)) != l->marker0 + i)
            return um_errf(e, "sudoku: the cell markers are not consecutive tokens (%s)", m);
    }
    return UM_OK;
}

/* 0 for '.', 1-9 for a digit, -1 for another token */
static int cell_value(const sdk_layout *l, int32_t id) {
    for (int d = 0; d <= 9; d++) if (l->digit[d] == id) return d;
    return -1;
}

bool sdk_seq_ok(const sdk_layout *l, const int32_t *seq, int T, int prompt_len) {
    if (prompt_len < SDK_CELLS || prompt_len + SDK_CELLS > T) return false;
    const int32_t *pz = seq + prompt_len - SDK_CELLS, *an = seq + prompt_len;
    for (int i = 0; i < SDK_CELLS; i++) {
        int p = cell_value(l, pz[i]), a = cell_value(l, an[i]);
        if (p < 0 || a < 1 || (p > 0 && p != a)) return false;
    }
    return true;
}

/* a uniformly random permutation of n items (Fisher-Yates) */
static void shuffle(int *v, int n, uint64_t rng[4]) {
    for (int i = 0; i < n; i++) v[i] = i;
    for (int i = n - 1; i > 0; i--) {
        int j = (int)(tm_rand(rng) % (uint64_t)(i + 1));
        int t = v[i]; v[i] = v[j]; v[j] = t;
    }
}

/* a line map that keeps the 3x3 structure: band b goes to band pb[b], line k of it to line pl[b][k] */
static void line_map(int map[9], uint64_t rng[4]) {
    int pb[3], pl[3];
    shuffle(pb, 3, rng);
    for (int b = 0; b < 3; b++) {
        shuffle(pl, 3, rng);
        for (int k = 0; k < 3; k++) map[b * 3 + k] = pb[b] * 3 + pl[k];
    }
}

void sdk_augment(const sdk_layout *l, const int32_t *seq, int T, int prompt_len, uint64_t rng[4], int32_t *out) {
    int rows[9], cols[9], dig[9], relabel[10];
    line_map(rows, rng);
    line_map(cols, rng);
    shuffle(dig, 9, rng);
    bool transpose = tm_rand(rng) & 1;
    relabel[0] = l->digit[0];
    for (int d = 1; d <= 9; d++) relabel[d] = l->digit[dig[d - 1] + 1];
    memcpy(out, seq, (size_t)T * sizeof *out);
    const int starts[2] = { prompt_len - SDK_CELLS, prompt_len };
    for (int s = 0; s < 2; s++) {
        for (int i = 0; i < SDK_CELLS; i++) {
            int r = rows[i / 9], c = cols[i % 9];
            int to = transpose ? c * 9 + r : r * 9 + c;
            int v = cell_value(l, seq[starts[s] + i]);
            out[starts[s] + to] = v < 0 ? seq[starts[s] + i] : relabel[v];
        }
    }
}

float sdk_mask_answer(const tm_model *m, const sdk_layout *l, const int32_t *seq, int T, int prompt_len,
                      double given_visible, uint64_t rng[4], int32_t *input, int32_t *target) {
    bool visible = tm_rand_unit(rng) < given_visible;
    double t = tm_rand_unit(rng), pm = (1.0 - TM_MASK_EPS) * t + TM_MASK_EPS;
    const int32_t *pz = seq + prompt_len - SDK_CELLS;
    int maskable = 0;
    for (int i = 0; i < T; i++) {
        target[i] = seq[i];
        int k = i - prompt_len;
        bool can = i >= prompt_len && !(visible && k < SDK_CELLS && pz[k] != l->digit[0]);
        maskable += can;
        input[i] = can && tm_rand_unit(rng) < pm ? m->c.mask_id : seq[i];
    }
    return (float)(1.0 / (pm * (double)UM_MAX(1, maskable)));
}

void sdk_init_markers(tm_model *m, const sdk_layout *l, uint64_t seed) {
    if (l->marker0 < 0) return;
    const tm_tensor *emb = tm_find(m, "token_embd.weight");
    const int D = m->c.n_embd;
    float *unit = malloc((size_t)27 * D * sizeof *unit);      /* 9 rows, 9 columns, 9 boxes */
    if (!emb || !unit) { free(unit); return; }
    uint64_t s[4];
    tm_rand_seed(s, seed ^ 0x5d0cull);
    for (int k = 0; k < 27 * D; k++) unit[k] = (float)(tm_rand_normal(s) * 0.02);
    for (int i = 0; i < SDK_CELLS; i++) {
        int r = i / 9, c = i % 9, b = (r / 3) * 3 + c / 3;
        float *row = m->p + emb->off + (int64_t)(l->marker0 + i) * D;
        for (int d = 0; d < D; d++) row[d] = unit[r * D + d] + unit[(9 + c) * D + d] + unit[(18 + b) * D + d];
    }
    free(unit);
}
