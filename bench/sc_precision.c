/*
 * sc_precision: what the self-conditioning product of a DiffusionGemma file loses in lower
 * precision (issue 28: whether a BF16 product could replace the exact FP32 one). The product is
 * soft = sum_v p_v e_v over the whole vocabulary (p: the previous step's distribution of a canvas
 * row, e_v: the tied embedding's row v, dequantized). For a few canvas rows it computes the sum
 * four ways, each input rounded as that way stores it and every sum accumulated in the
 * vocabulary's order:
 *   double  - the reference (FP64 accumulation of the FP32 inputs);
 *   fp32    - unmask's exact path (FP32 probabilities and embedding, FP32 sums);
 *   bf16    - both inputs rounded to BF16, FP32 sums (what vdpbf16ps computes, up to the order
 *             of its pairwise sums);
 *   f16     - both inputs rounded to IEEE F16 (subnormals kept), FP32 sums: the llama.cpp
 *             port's product (an F16 transposed copy of the embedding times F16 probabilities).
 * and prints, per sharpness, the cosine and the relative L2 error of each against double.
 * Sharpness k multiplies the logits before the softmax (k = 1: the file's own rows; a random-
 * weight file's rows are near flat, so larger k stands in for a trained model's peaked rows).
 *
 * usage: sc_precision MODEL.gguf CANVAS_LOGITS.f32 [--rows N] [--sharp K,K,...]
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf.h"
#include "ops.h"
#include "quant.h"
#include "util.h"

#define MAX_ROWS 16
#define MAX_SHARP 8

static double dot(const double *a, const double *b, int n) {
    double s = 0;
    for (int i = 0; i < n; i++) s += a[i] * b[i];
    return s;
}

int main(int argc, char **argv) {
    if (argc < 3) { fprintf(stderr, "usage: sc_precision MODEL.gguf CANVAS_LOGITS.f32 [--rows N] [--sharp K,K,...]\n"); return 2; }
    int n_rows = 4;
    double sharp[MAX_SHARP] = { 1, 30, 300 };
    int n_sharp = 3;
    for (int i = 3; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--rows")) n_rows = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--sharp")) {
            n_sharp = 0;
            for (char *s = argv[i + 1]; *s && n_sharp < MAX_SHARP; s++) {
                sharp[n_sharp++] = strtod(s, &s);
                if (!*s) break;
            }
        } else { fprintf(stderr, "sc_precision: unknown option %s\n", argv[i]); return 2; }
    }
    if (n_rows < 1 || n_rows > MAX_ROWS) { fprintf(stderr, "sc_precision: --rows is 1..%d\n", MAX_ROWS); return 2; }
    um_err e = { "" };
    gguf_file *g;
    if (gguf_open(&g, argv[1], &e)) { fprintf(stderr, "sc_precision: %s\n", e.msg); return 1; }
    const gguf_tensor *t = gguf_find_tensor(g, "token_embd.weight");
    if (!t || t->n_dims != 2) { fprintf(stderr, "sc_precision: %s has no 2-D token_embd.weight\n", argv[1]); return 1; }
    const int64_t E = (int64_t)t->ne[0], V = (int64_t)t->ne[1];
    const size_t row_bytes = t->size / (size_t)V;
    FILE *f = fopen(argv[2], "rb");
    if (!f) { perror(argv[2]); return 1; }
    fseek(f, 0, SEEK_END);
    long bytes = ftell(f);
    fseek(f, 0, SEEK_SET);
    if (bytes <= 0 || bytes % (V * 4) || bytes / (V * 4) < n_rows) {
        fprintf(stderr, "sc_precision: %s is not at least %d rows of %lld floats\n", argv[2], n_rows, (long long)V);
        return 1;
    }
    const long avail = bytes / (V * 4);
    float *z = malloc(sizeof(float) * (size_t)(n_rows * V));
    for (int r = 0; r < n_rows; r++) {             /* rows spread over the canvas */
        fseek(f, (long)((avail * r / n_rows) * V * 4), SEEK_SET);
        if (fread(z + r * V, sizeof(float), (size_t)V, f) != (size_t)V) { fprintf(stderr, "sc_precision: read error\n"); return 1; }
    }
    fclose(f);
    float *p = malloc(sizeof(float) * (size_t)(n_rows * V)), *row = malloc(sizeof(float) * (size_t)E);
    float *rb = malloc(sizeof(float) * (size_t)E), *rh = malloc(sizeof(float) * (size_t)E);
    double *ref = calloc((size_t)(n_rows * E), sizeof(double)), *tmp = malloc(sizeof(double) * (size_t)E);
    float *a32 = malloc(sizeof(float) * (size_t)(n_rows * E)), *ab = malloc(sizeof(float) * (size_t)(n_rows * E));
    float *ah = malloc(sizeof(float) * (size_t)(n_rows * E));
    printf("{\"model\": \"%s\", \"n_vocab\": %lld, \"n_embd\": %lld, \"type\": \"%s\", \"rows\": %d, \"results\": [",
           argv[1], (long long)V, (long long)E, um_type_name(t->type), n_rows);
    for (int s = 0; s < n_sharp; s++) {
        double top = 0;
        for (int r = 0; r < n_rows; r++) {             /* p = softmax(k z), in double, stored as FP32 */
            const float *zr = z + r * V;
            double mx = -INFINITY, sum = 0;
            for (int64_t v = 0; v < V; v++) mx = fmax(mx, sharp[s] * zr[v]);
            for (int64_t v = 0; v < V; v++) sum += exp(sharp[s] * zr[v] - mx);
            double pm = 0;
            for (int64_t v = 0; v < V; v++) {
                p[r * V + v] = (float)(exp(sharp[s] * zr[v] - mx) / sum);
                pm = fmax(pm, p[r * V + v]);
            }
            top += pm / n_rows;
        }
        memset(ref, 0, sizeof(double) * (size_t)(n_rows * E));
        memset(a32, 0, sizeof(float) * (size_t)(n_rows * E));
        memset(ab, 0, sizeof(float) * (size_t)(n_rows * E));
        memset(ah, 0, sizeof(float) * (size_t)(n_rows * E));
        for (int64_t v = 0; v < V; v++) {
            ops_dequant_row((um_type)t->type, (const char *)t->data + (size_t)v * row_bytes, row, E);
            for (int64_t i = 0; i < E; i++) {
                rb[i] = um_bf16_to_fp32(um_fp32_to_bf16(row[i]));
                rh[i] = um_fp16_to_fp32(um_fp32_to_fp16(row[i]));
            }
            for (int r = 0; r < n_rows; r++) {
                const float pv = p[r * V + v];
                const float pb = um_bf16_to_fp32(um_fp32_to_bf16(pv)), ph = um_fp16_to_fp32(um_fp32_to_fp16(pv));
                double *rr = ref + r * E;
                float *x = a32 + r * E, *y = ab + r * E, *w = ah + r * E;
                for (int64_t i = 0; i < E; i++) {
                    rr[i] += (double)pv * row[i];
                    x[i] += pv * row[i];
                    y[i] += pb * rb[i];
                    w[i] += ph * rh[i];
                }
            }
        }
        const char *names[3] = { "fp32", "bf16", "f16" };
        const float *got[3] = { a32, ab, ah };
        printf("%s\n {\"sharpness\": %g, \"mean_top_p\": %.6g", s ? "," : "", sharp[s], top);
        for (int k = 0; k < 3; k++) {
            double cmin = 2, emax = 0;
            for (int r = 0; r < n_rows; r++) {
                const double *rr = ref + r * E;
                for (int64_t i = 0; i < E; i++) tmp[i] = got[k][r * E + i];
                const double c = dot(rr, tmp, (int)E) / sqrt(dot(rr, rr, (int)E) * dot(tmp, tmp, (int)E));
                double d2 = 0;
                for (int64_t i = 0; i < E; i++) d2 += (tmp[i] - rr[i]) * (tmp[i] - rr[i]);
                cmin = fmin(cmin, c);
                emax = fmax(emax, sqrt(d2 / dot(rr, rr, (int)E)));
            }
            printf(", \"%s\": {\"min_cos\": %.10f, \"max_rel_l2\": %.3g}", names[k], cmin, emax);
        }
        printf("}");
        fflush(stdout);
    }
    printf("\n]}\n");
    gguf_close(g);
    return 0;
}
