/*
 * cmp_logits: compare two logits files (rows of n_vocab little-endian float32), as written by
 * `unmask logits --out` and bench/peer_logits. Prints one JSON object: rows, min and mean
 * per-row cosine similarity, share of rows whose argmax agrees, largest absolute difference.
 * With --min-cos C and --min-argmax A it exits 1 when a threshold is missed.
 *
 * usage: cmp_logits A.f32 B.f32 N_VOCAB [--min-cos C] [--min-argmax A]
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static float *load(const char *path, long n_vocab, long *rows) {
    FILE *f = fopen(path, "rb");
    if (!f) { perror(path); return NULL; }
    fseek(f, 0, SEEK_END);
    long bytes = ftell(f);
    fseek(f, 0, SEEK_SET);
    if (bytes <= 0 || bytes % (n_vocab * 4)) { fprintf(stderr, "%s: size %ld is not a multiple of %ld rows\n", path, bytes, n_vocab * 4); fclose(f); return NULL; }
    float *d = malloc(bytes);
    if (!d || fread(d, 1, bytes, f) != (size_t)bytes) { fprintf(stderr, "%s: read error\n", path); fclose(f); free(d); return NULL; }
    fclose(f);
    *rows = bytes / (n_vocab * 4);
    return d;
}

int main(int argc, char **argv) {
    if (argc < 4) { fprintf(stderr, "usage: cmp_logits A.f32 B.f32 N_VOCAB [--min-cos C] [--min-argmax A]\n"); return 2; }
    long n_vocab = atol(argv[3]);
    double min_cos_req = -2, min_arg_req = -1;
    for (int i = 4; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--min-cos")) min_cos_req = atof(argv[i + 1]);
        else if (!strcmp(argv[i], "--min-argmax")) min_arg_req = atof(argv[i + 1]);
    }
    long ra, rb;
    float *a = load(argv[1], n_vocab, &ra), *b = load(argv[2], n_vocab, &rb);
    if (!a || !b) return 2;
    if (ra != rb) { fprintf(stderr, "row count differs: %ld vs %ld\n", ra, rb); return 2; }
    double min_cos = 2, sum_cos = 0, max_abs = 0;
    long agree = 0;
    for (long r = 0; r < ra; r++) {
        const float *x = a + r * n_vocab, *y = b + r * n_vocab;
        double xy = 0, xx = 0, yy = 0;
        long ax = 0, ay = 0;
        for (long v = 0; v < n_vocab; v++) {
            xy += (double)x[v] * y[v];
            xx += (double)x[v] * x[v];
            yy += (double)y[v] * y[v];
            if (x[v] > x[ax]) ax = v;
            if (y[v] > y[ay]) ay = v;
            double d = fabs((double)x[v] - y[v]);
            if (d > max_abs) max_abs = d;
        }
        double c = xy / (sqrt(xx) * sqrt(yy) + 1e-300);
        if (c < min_cos) min_cos = c;
        sum_cos += c;
        agree += ax == ay;
    }
    double arg = (double)agree / ra;
    printf("{\"rows\": %ld, \"cos_min\": %.7f, \"cos_mean\": %.7f, \"argmax_agree\": %.4f, \"max_abs_diff\": %.6g}\n",
           ra, min_cos, sum_cos / ra, arg, max_abs);
    return (min_cos < min_cos_req || arg < min_arg_req) ? 1 : 0;
}
