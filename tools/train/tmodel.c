/*
 * tmodel: forward, backward, AdamW, checkpoints and export of the trainer's llada model
 * (see tmodel.h for the model and the invariants).
 *
 * Matrix products go through tgemm: y = x W^T uses a transposed copy of W (n_in, n_out)
 * made once per use; dx = dy W and dW += dy^T x need no copy. Attention runs one job per
 * (sequence, head) with per-thread scratch. Element-wise passes are serial: they cost a few
 * percent of a step and keep every reduction in one fixed order.
 */
#include "tmodel.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gguf.h"
#include "infile.h"
#include "outfile.h"
#include "quant.h"
#include "tgemm.h"

/* ------------------------------------------------------------------ random numbers */

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t tm_rand(uint64_t s[4]) {
    uint64_t r = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0]; s[3] ^= s[1]; s[1] ^= s[2]; s[0] ^= s[3]; s[2] ^= t; s[3] = rotl(s[3], 45);
    return r;
}

double tm_rand_unit(uint64_t s[4]) { return (double)(tm_rand(s) >> 11) * (1.0 / 9007199254740992.0); }

void tm_rand_seed(uint64_t s[4], uint64_t seed) {
    for (int i = 0; i < 4; i++) {     /* splitmix64 */
        uint64_t z = (seed += 0x9e3779b97f4a7c15ull);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        s[i] = z ^ (z >> 31);
    }
}

double tm_rand_normal(uint64_t s[4]) {
    double u1 = tm_rand_unit(s), u2 = tm_rand_unit(s);
    return sqrt(-2.0 * log(u1 + 1e-300)) * cos(2.0 * M_PI * u2);
}

/* ------------------------------------------------------------------ parameters */

enum { T_ATTN_NORM, T_Q, T_K, T_V, T_O, T_FFN_NORM, T_GATE, T_UP, T_DOWN, T_PER_LAYER };

static void add_t(tm_model *m, const char *name, int32_t n_out, int32_t n_in, bool decay) {
    tm_tensor *t = &m->t[m->n_tensors++];
    snprintf(t->name, sizeof t->name, "%s", name);
    t->off = m->n_params;
    t->n_out = n_out;
    t->n_in = n_in;
    t->decay = decay;
    m->n_params += (int64_t)n_out * n_in;
}

int tm_new(tm_model **out, const tm_config *c, um_err *e) {
    *out = NULL;
    if (c->n_vocab < 4 || c->n_embd < 2 || c->n_layer < 1 || c->n_head < 1 || c->n_ff < 1 || c->n_ctx < 1 ||
        c->n_embd % c->n_head || (c->n_embd / c->n_head) % 2)
        return um_errf(e, "model: bad shape (vocab %d, embd %d, layers %d, heads %d, ffn %d, ctx %d)",
                       c->n_vocab, c->n_embd, c->n_layer, c->n_head, c->n_ff, c->n_ctx);
    if (c->mask_id < 0 || c->mask_id >= c->n_vocab) return um_errf(e, "model: mask id %d outside the vocabulary", c->mask_id);
    tm_model *m = um_calloc(1, sizeof *m);
    if (!m) return um_errf(e, "out of memory");
    m->c = *c;
    m->t = um_calloc((size_t)(2 + T_PER_LAYER * c->n_layer), sizeof *m->t);
    if (!m->t) { free(m); return um_errf(e, "out of memory"); }
    const int32_t D = c->n_embd, F = c->n_ff;
    add_t(m, "token_embd.weight", c->n_vocab, D, false);
    add_t(m, "output_norm.weight", 1, D, false);
    char name[48];
    static const char *const names[T_PER_LAYER] = { "attn_norm", "attn_q", "attn_k", "attn_v", "attn_output",
                                                    "ffn_norm", "ffn_gate", "ffn_up", "ffn_down" };
    for (int l = 0; l < c->n_layer; l++)
        for (int k = 0; k < T_PER_LAYER; k++) {
            snprintf(name, sizeof name, "blk.%d.%s.weight", l, names[k]);
            bool norm = k == T_ATTN_NORM || k == T_FFN_NORM;
            int32_t n_out = norm ? 1 : k == T_GATE || k == T_UP ? F : D;
            int32_t n_in = k == T_DOWN ? F : D;
            add_t(m, name, n_out, n_in, !norm);
        }
    size_t bytes = (size_t)m->n_params * sizeof(float);
    m->p = um_malloc_aligned(bytes); m->g = um_malloc_aligned(bytes);
    m->m = um_malloc_aligned(bytes); m->v = um_malloc_aligned(bytes);
    if (!m->p || !m->g || !m->m || !m->v) {
        int64_t np = m->n_params;
        tm_free(m);
        return um_errf(e, "out of memory for %" PRId64 " parameters", np);
    }
    memset(m->p, 0, bytes); memset(m->g, 0, bytes); memset(m->m, 0, bytes); memset(m->v, 0, bytes);
    *out = m;
    return UM_OK;
}

void tm_free(tm_model *m) {
    if (!m) return;
    um_free_aligned(m->p); um_free_aligned(m->g); um_free_aligned(m->m); um_free_aligned(m->v);
    free(m->t);
    free(m);
}

const tm_tensor *tm_find(const tm_model *m, const char *name) {
    for (int i = 0; i < m->n_tensors; i++) if (!strcmp(m->t[i].name, name)) return &m->t[i];
    return NULL;
}

void tm_init(tm_model *m, uint64_t seed) {
    uint64_t s[4];
    tm_rand_seed(s, seed);
    const double std = 0.02, std_res = 0.02 / sqrt(2.0 * m->c.n_layer);
    for (int i = 0; i < m->n_tensors; i++) {
        const tm_tensor *t = &m->t[i];
        float *p = m->p + t->off;
        int64_t n = (int64_t)t->n_out * t->n_in;
        bool res = strstr(t->name, "attn_output") || strstr(t->name, "ffn_down");
        for (int64_t k = 0; k < n; k++) p[k] = t->decay || !strstr(t->name, "norm") ? (float)(tm_rand_normal(s) * (res ? std_res : std)) : 1.0f;
    }
    memset(m->m, 0, (size_t)m->n_params * sizeof(float));
    memset(m->v, 0, (size_t)m->n_params * sizeof(float));
}

/* ------------------------------------------------------------------ workspace */

typedef struct layer_acts {
    float *xin, *xn1, *rstd1;   /* (BT, D), (BT, D), (BT) */
    float *q, *k, *v, *att;     /* (BT, D): q, k after RoPE; att = attention output before Wo */
    float *prob;                /* (B, H, T, T) softmax */
    float *x2, *xn2, *rstd2;    /* (BT, D), (BT, D), (BT) */
    float *ga, *up, *hh;        /* (BT, F): gate pre-activation, up, silu(ga) * up */
} layer_acts;

struct tm_ws {
    int max_b, n_ctx, n_threads, n_layer;
    layer_acts *la;             /* (n_layer) */
    float *xf, *xnf, *rstdf;    /* (BT, D), (BT, D), (BT): final residual and its norm */
    float *xm, *logits;         /* (BT, D), (BT, V): rows of masked positions only */
    float *loss_row;            /* (BT) */
    int32_t *rows;              /* (BT) masked positions */
    float *rope_cos, *rope_sin; /* (n_ctx, HD / 2) */
    float *wt;                  /* transposed weight copy, max(V, F, D) * D */
    float *dx, *dxn, *dq, *dk, *dv, *datt; /* (BT, D) */
    float *dga, *dup, *dhh;     /* (BT, F) */
    float *dxm;                 /* (BT, D) */
    float *th;                  /* per thread: kt (HD, T), s (T, T), ds (T, T) */
    size_t th_floats;
};

static float *wsalloc(size_t n, int *bad) {
    float *p = um_malloc_aligned((n ? n : 1) * sizeof(float));
    if (!p) *bad = 1;
    return p;
}

int tm_ws_new(tm_ws **out, const tm_model *m, int max_b, int n_threads, um_err *e) {
    *out = NULL;
    tm_ws *w = um_calloc(1, sizeof *w);
    if (!w) return um_errf(e, "out of memory");
    const tm_config *c = &m->c;
    const size_t T = (size_t)c->n_ctx, BT = (size_t)max_b * T, D = (size_t)c->n_embd, F = (size_t)c->n_ff;
    const size_t V = (size_t)c->n_vocab, H = (size_t)c->n_head, HD = D / H;
    w->n_layer = c->n_layer; w->max_b = max_b; w->n_ctx = c->n_ctx; w->n_threads = n_threads < 1 ? 1 : n_threads;
    int bad = 0;
    if (!(w->la = um_calloc((size_t)c->n_layer, sizeof *w->la))) { free(w); return um_errf(e, "out of memory"); }
    for (int l = 0; l < c->n_layer; l++) {
        layer_acts *a = &w->la[l];
        a->xin = wsalloc(BT * D, &bad); a->xn1 = wsalloc(BT * D, &bad); a->rstd1 = wsalloc(BT, &bad);
        a->q = wsalloc(BT * D, &bad); a->k = wsalloc(BT * D, &bad); a->v = wsalloc(BT * D, &bad);
        a->att = wsalloc(BT * D, &bad); a->prob = wsalloc((size_t)max_b * H * T * T, &bad);
        a->x2 = wsalloc(BT * D, &bad); a->xn2 = wsalloc(BT * D, &bad); a->rstd2 = wsalloc(BT, &bad);
        a->ga = wsalloc(BT * F, &bad); a->up = wsalloc(BT * F, &bad); a->hh = wsalloc(BT * F, &bad);
    }
    w->xf = wsalloc(BT * D, &bad); w->xnf = wsalloc(BT * D, &bad); w->rstdf = wsalloc(BT, &bad);
    w->xm = wsalloc(BT * D, &bad); w->logits = wsalloc(BT * V, &bad); w->loss_row = wsalloc(BT, &bad);
    w->rows = um_malloc(BT * sizeof(int32_t));
    if (!w->rows) bad = 1;
    w->rope_cos = wsalloc(T * HD / 2, &bad); w->rope_sin = wsalloc(T * HD / 2, &bad);
    size_t big = UM_MAX(UM_MAX(V, F), D) * D;
    w->wt = wsalloc(big, &bad);
    w->dx = wsalloc(BT * D, &bad); w->dxn = wsalloc(BT * D, &bad); w->dq = wsalloc(BT * D, &bad);
    w->dk = wsalloc(BT * D, &bad); w->dv = wsalloc(BT * D, &bad); w->datt = wsalloc(BT * D, &bad);
    w->dga = wsalloc(BT * F, &bad); w->dup = wsalloc(BT * F, &bad); w->dhh = wsalloc(BT * F, &bad);
    w->dxm = wsalloc(BT * D, &bad);
    w->th_floats = (HD * T + 2 * T * T + 15) / 16 * 16;
    w->th = wsalloc(w->th_floats * (size_t)w->n_threads, &bad);
    if (bad) { tm_ws_free(w); return um_errf(e, "out of memory for activations (batch %d)", max_b); }
    for (size_t pos = 0; pos < T; pos++)
        for (size_t i = 0; i < HD / 2; i++) {
            double th = (double)pos * pow((double)c->rope_base, -2.0 * (double)i / (double)HD);
            w->rope_cos[pos * (HD / 2) + i] = (float)cos(th);
            w->rope_sin[pos * (HD / 2) + i] = (float)sin(th);
        }
    *out = w;
    return UM_OK;
}

static void ws_free_layers(tm_ws *w) {
    for (int l = 0; w->la && l < w->n_layer; l++) {
        layer_acts *a = &w->la[l];
        float *bufs[] = { a->xin, a->xn1, a->rstd1, a->q, a->k, a->v, a->att, a->prob, a->x2, a->xn2,
                          a->rstd2, a->ga, a->up, a->hh };
        for (size_t i = 0; i < UM_ARRAY_LEN(bufs); i++) um_free_aligned(bufs[i]);
        memset(a, 0, sizeof *a);
    }
}

void tm_ws_free(tm_ws *w) {
    if (!w) return;
    ws_free_layers(w);
    free(w->rows);
    /* every float buffer came from wsalloc */
    float **bufs[] = { &w->xf, &w->xnf, &w->rstdf, &w->xm, &w->logits, &w->loss_row, &w->rope_cos,
                       &w->rope_sin, &w->wt, &w->dx, &w->dxn, &w->dq, &w->dk, &w->dv, &w->datt, &w->dga,
                       &w->dup, &w->dhh, &w->dxm, &w->th };
    for (size_t i = 0; i < UM_ARRAY_LEN(bufs); i++) um_free_aligned(*bufs[i]);
    free(w->la);
    free(w);
}


/* ------------------------------------------------------------------ building blocks */

static void transpose(const float *src, int rows, int cols, float *dst) {   /* (rows, cols) -> (cols, rows) */
    for (int r0 = 0; r0 < rows; r0 += 32)
        for (int c0 = 0; c0 < cols; c0 += 32)
            for (int r = r0; r < UM_MIN(r0 + 32, rows); r++)
                for (int c = c0; c < UM_MIN(c0 + 32, cols); c++) dst[(size_t)c * rows + r] = src[(size_t)r * cols + c];
}

/* src (rows, cols) with row stride ld -> dst (cols, rows) */
static void transpose_ld(const float *src, int rows, int cols, int ld, float *dst) {
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < cols; c++) dst[(size_t)c * rows + r] = src[(size_t)r * ld + c];
}

/* y (n, O) = x (n, I) W^T, W (O, I) */
static void linear(tm_ws *w, um_pool *p, const float *x, int n, const float *W, int O, int I, float *y) {
    transpose(W, O, I, w->wt);
    tgemm(p, n, O, I, x, I, false, w->wt, O, y, O, false);
}

/* dx (n, I) (+)= dy (n, O) W; dW (O, I) += dy^T x */
static void linear_back(um_pool *p, const float *x, const float *dy, int n, const float *W, float *dW,
                        int O, int I, float *dx, bool acc_dx) {
    if (dx) tgemm(p, n, I, O, dy, O, false, W, I, dx, I, acc_dx);
    tgemm(p, O, I, n, dy, O, true, x, I, dW, I, true);
}

static void rmsnorm(const float *x, const float *g, int n, int D, float eps, float *y, float *rstd) {
    for (int r = 0; r < n; r++) {
        const float *xr = x + (size_t)r * D;
        double ss = 0;
        for (int i = 0; i < D; i++) ss += (double)xr[i] * xr[i];
        float rs = (float)(1.0 / sqrt(ss / D + eps));
        rstd[r] = rs;
        for (int i = 0; i < D; i++) y[(size_t)r * D + i] = xr[i] * rs * g[i];
    }
}

/* dx (+)= d rmsnorm; dg += */
static void rmsnorm_back(const float *x, const float *g, const float *rstd, const float *dy, int n, int D,
                         float *dx, float *dg, bool acc) {
    for (int r = 0; r < n; r++) {
        const float *xr = x + (size_t)r * D, *dyr = dy + (size_t)r * D;
        float *dxr = dx + (size_t)r * D;
        float rs = rstd[r];
        double dot = 0;
        for (int i = 0; i < D; i++) { dot += (double)dyr[i] * g[i] * xr[i]; dg[i] += dyr[i] * xr[i] * rs; }
        float k = (float)(dot / D) * rs * rs * rs;
        for (int i = 0; i < D; i++) {
            float v = dyr[i] * g[i] * rs - xr[i] * k;
            dxr[i] = acc ? dxr[i] + v : v;
        }
    }
}

/* rotate pairs of every head of x (B*T, D) by +theta (dir 1) or -theta (dir -1) */
static void rope(const tm_ws *w, float *x, int B, int T, int D, int H, int dir) {
    const int HD = D / H, half = HD / 2;
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) {
            const float *cs = w->rope_cos + (size_t)t * half, *sn = w->rope_sin + (size_t)t * half;
            float *xr = x + ((size_t)b * T + t) * D;
            for (int h = 0; h < H; h++)
                for (int i = 0; i < half; i++) {
                    float *v = xr + h * HD + 2 * i;
                    float c = cs[i], s = dir * sn[i], a = v[0], bb = v[1];
                    v[0] = a * c - bb * s;
                    v[1] = a * s + bb * c;
                }
        }
}

typedef struct attn_job {
    tm_ws *w;
    layer_acts *a;
    int T, D, H;
    bool back;
} attn_job;

static void attn_one(void *arg, int64_t chunk, int thread_id) {
    const attn_job *j = arg;
    tm_ws *w = j->w;
    layer_acts *a = j->a;
    const int T = j->T, D = j->D, H = j->H, HD = D / H;
    const int b = (int)(chunk / H), h = (int)(chunk % H);
    const size_t base = (size_t)b * T * D + (size_t)h * HD;
    const float scale = 1.0f / sqrtf((float)HD);
    float *kt = w->th + (size_t)thread_id * w->th_floats, *s = kt + (size_t)HD * T, *ds = s + (size_t)T * T;
    float *P = a->prob + ((size_t)b * H + h) * T * T;
    const float *q = a->q + base, *k = a->k + base, *v = a->v + base;
    if (!j->back) {
        transpose_ld(k, T, HD, D, kt);          /* kt (HD, T) */
        tgemm(NULL, T, T, HD, q, D, false, kt, T, s, T, false);
        for (int r = 0; r < T; r++) {
            float *sr = s + (size_t)r * T, *pr = P + (size_t)r * T, mx = -INFINITY;
            for (int c = 0; c < T; c++) { sr[c] *= scale; if (sr[c] > mx) mx = sr[c]; }
            double sum = 0;
            for (int c = 0; c < T; c++) { pr[c] = expf(sr[c] - mx); sum += pr[c]; }
            float inv = (float)(1.0 / sum);
            for (int c = 0; c < T; c++) pr[c] *= inv;
        }
        tgemm(NULL, T, HD, T, P, T, false, v, D, a->att + base, D, false);
        return;
    }
    const float *dO = w->datt + base;
    transpose_ld(v, T, HD, D, kt);              /* vt (HD, T) */
    tgemm(NULL, T, T, HD, dO, D, false, kt, T, s, T, false);          /* dP */
    tgemm(NULL, T, HD, T, P, T, true, dO, D, w->dv + base, D, false);  /* dV = P^T dO */
    for (int r = 0; r < T; r++) {
        const float *pr = P + (size_t)r * T, *dpr = s + (size_t)r * T;
        float *dsr = ds + (size_t)r * T;
        double dot = 0;
        for (int c = 0; c < T; c++) dot += (double)pr[c] * dpr[c];
        for (int c = 0; c < T; c++) dsr[c] = pr[c] * (dpr[c] - (float)dot) * scale;
    }
    tgemm(NULL, T, HD, T, ds, T, false, k, D, w->dq + base, D, false);  /* dQ = dS K */
    tgemm(NULL, T, HD, T, ds, T, true, q, D, w->dk + base, D, false);   /* dK = dS^T Q */
}

static void attention(tm_ws *w, um_pool *p, layer_acts *a, int B, int T, int D, int H, bool back) {
    attn_job j = { w, a, T, D, H, back };
    pool_for(p, (int64_t)B * H, attn_one, &j);
}

typedef struct loss_job {
    const tm_model *m;
    tm_ws *w;
    const int32_t *target;
    const float *wgt;           /* (B) per-sequence weight: 1/t_b, or SFT's 1/(t_b answer length) */
    int T;
    float norm;                 /* 1 / the loss's divisor (text: B * T) */
    bool grad;
} loss_job;

static void loss_rows(void *arg, int64_t chunk, int thread_id) {
    const loss_job *j = arg;
    const int V = j->m->c.n_vocab;
    const int64_t r = chunk;
    int32_t pos = j->w->rows[r];
    float *lg = j->w->logits + (size_t)r * V;
    float mx = -INFINITY;
    for (int i = 0; i < V; i++) if (lg[i] > mx) mx = lg[i];
    double sum = 0;
    for (int i = 0; i < V; i++) sum += exp((double)(lg[i] - mx));
    int32_t y = j->target[pos];
    float wgt = j->wgt[pos / j->T];
    j->w->loss_row[r] = (float)((log(sum) + mx - lg[y]) * wgt);
    if (!j->grad) return;
    float k = wgt * j->norm, inv = (float)(1.0 / sum);
    for (int i = 0; i < V; i++) lg[i] = expf(lg[i] - mx) * inv * k;
    lg[y] -= k;
}

/* ------------------------------------------------------------------ forward / backward */

static const float *P(const tm_model *m, int layer, int k) {
    return m->p + m->t[2 + layer * T_PER_LAYER + k].off;
}
static float *G(const tm_model *m, int layer, int k) {
    return m->g + m->t[2 + layer * T_PER_LAYER + k].off;
}

/* forward through the final norm; fills w->xnf */
static void forward_body(tm_model *m, tm_ws *w, um_pool *p, const int32_t *input, int B, int T) {
    const tm_config *c = &m->c;
    const int D = c->n_embd, F = c->n_ff, H = c->n_head, n = B * T;
    const float *E = m->p;
    float *x = w->xf;
    for (int r = 0; r < n; r++) memcpy(x + (size_t)r * D, E + (size_t)input[r] * D, (size_t)D * sizeof(float));
    for (int l = 0; l < c->n_layer; l++) {
        layer_acts *a = &w->la[l];
        memcpy(a->xin, x, (size_t)n * D * sizeof(float));
        rmsnorm(a->xin, P(m, l, T_ATTN_NORM), n, D, c->norm_eps, a->xn1, a->rstd1);
        linear(w, p, a->xn1, n, P(m, l, T_Q), D, D, a->q);
        linear(w, p, a->xn1, n, P(m, l, T_K), D, D, a->k);
        linear(w, p, a->xn1, n, P(m, l, T_V), D, D, a->v);
        rope(w, a->q, B, T, D, H, 1);
        rope(w, a->k, B, T, D, H, 1);
        attention(w, p, a, B, T, D, H, false);
        linear(w, p, a->att, n, P(m, l, T_O), D, D, a->x2);
        for (size_t i = 0; i < (size_t)n * D; i++) a->x2[i] += a->xin[i];
        rmsnorm(a->x2, P(m, l, T_FFN_NORM), n, D, c->norm_eps, a->xn2, a->rstd2);
        linear(w, p, a->xn2, n, P(m, l, T_GATE), F, D, a->ga);
        linear(w, p, a->xn2, n, P(m, l, T_UP), F, D, a->up);
        for (size_t i = 0; i < (size_t)n * F; i++) {
            float g = a->ga[i];
            a->hh[i] = g / (1.0f + expf(-g)) * a->up[i];
        }
        linear(w, p, a->hh, n, P(m, l, T_DOWN), D, F, x);
        for (size_t i = 0; i < (size_t)n * D; i++) x[i] += a->x2[i];
    }
    rmsnorm(x, m->p + m->t[1].off, n, D, c->norm_eps, w->xnf, w->rstdf);
}

void tm_logits(tm_model *m, tm_ws *w, um_pool *p, const int32_t *input, int T, float *logits) {
    forward_body(m, w, p, input, 1, T);
    linear(w, p, w->xnf, T, m->p, m->c.n_vocab, m->c.n_embd, logits);
}

double tm_step(tm_model *m, tm_ws *w, um_pool *p, const int32_t *input, const int32_t *target,
               const float *inv_t, int B, int T, bool grad, int64_t *n_masked) {
    return tm_step_norm(m, w, p, input, target, inv_t, B, T, (double)B * T, grad, n_masked);
}

double tm_step_norm(tm_model *m, tm_ws *w, um_pool *p, const int32_t *input, const int32_t *target,
                    const float *wgt, int B, int T, double norm, bool grad, int64_t *n_masked) {
    return tm_step_at(m, w, p, input, target, NULL, wgt, B, T, norm, grad, n_masked);
}

double tm_step_at(tm_model *m, tm_ws *w, um_pool *p, const int32_t *input, const int32_t *target,
                  const bool *loss_at, const float *wgt, int B, int T, double norm, bool grad, int64_t *n_masked) {
    const tm_config *c = &m->c;
    const int D = c->n_embd, F = c->n_ff, H = c->n_head, V = c->n_vocab, n = B * T;
    forward_body(m, w, p, input, B, T);
    int nm = 0;
    for (int r = 0; r < n; r++) if (loss_at ? loss_at[r] : input[r] == c->mask_id) w->rows[nm++] = r;
    if (n_masked) *n_masked = nm;
    for (int i = 0; i < nm; i++) memcpy(w->xm + (size_t)i * D, w->xnf + (size_t)w->rows[i] * D, (size_t)D * sizeof(float));
    if (nm) linear(w, p, w->xm, nm, m->p, V, D, w->logits);
    loss_job lj = { m, w, target, wgt, T, 1.0f / (float)norm, grad };
    pool_for(p, nm, loss_rows, &lj);
    double loss = 0;
    for (int i = 0; i < nm; i++) loss += w->loss_row[i];
    loss /= norm;
    if (!grad) return loss;

    memset(m->g, 0, (size_t)m->n_params * sizeof(float));
    float *dE = m->g;
    /* output projection (tied): dxm = dlogits E, dE += dlogits^T xm */
    if (nm) linear_back(p, w->xm, w->logits, nm, m->p, dE, V, D, w->dxm, false);
    memset(w->dxn, 0, (size_t)n * D * sizeof(float));
    for (int i = 0; i < nm; i++) memcpy(w->dxn + (size_t)w->rows[i] * D, w->dxm + (size_t)i * D, (size_t)D * sizeof(float));
    rmsnorm_back(w->xf, m->p + m->t[1].off, w->rstdf, w->dxn, n, D, w->dx, m->g + m->t[1].off, false);
    for (int l = c->n_layer - 1; l >= 0; l--) {
        layer_acts *a = &w->la[l];
        /* FFN: x = x2 + Wd hh */
        linear_back(p, a->hh, w->dx, n, P(m, l, T_DOWN), G(m, l, T_DOWN), D, F, w->dhh, false);
        for (size_t i = 0; i < (size_t)n * F; i++) {
            float g = a->ga[i], sg = 1.0f / (1.0f + expf(-g)), silu = g * sg;
            w->dup[i] = w->dhh[i] * silu;
            w->dga[i] = w->dhh[i] * a->up[i] * sg * (1.0f + g * (1.0f - sg));
        }
        linear_back(p, a->xn2, w->dga, n, P(m, l, T_GATE), G(m, l, T_GATE), F, D, w->dxn, false);
        linear_back(p, a->xn2, w->dup, n, P(m, l, T_UP), G(m, l, T_UP), F, D, w->dxn, true);
        rmsnorm_back(a->x2, P(m, l, T_FFN_NORM), a->rstd2, w->dxn, n, D, w->dx, G(m, l, T_FFN_NORM), true);
        /* attention: x2 = xin + Wo att */
        linear_back(p, a->att, w->dx, n, P(m, l, T_O), G(m, l, T_O), D, D, w->datt, false);
        attention(w, p, a, B, T, D, H, true);
        rope(w, w->dq, B, T, D, H, -1);
        rope(w, w->dk, B, T, D, H, -1);
        linear_back(p, a->xn1, w->dq, n, P(m, l, T_Q), G(m, l, T_Q), D, D, w->dxn, false);
        linear_back(p, a->xn1, w->dk, n, P(m, l, T_K), G(m, l, T_K), D, D, w->dxn, true);
        linear_back(p, a->xn1, w->dv, n, P(m, l, T_V), G(m, l, T_V), D, D, w->dxn, true);
        rmsnorm_back(a->xin, P(m, l, T_ATTN_NORM), a->rstd1, w->dxn, n, D, w->dx, G(m, l, T_ATTN_NORM), true);
    }
    for (int r = 0; r < n; r++) {
        float *ge = dE + (size_t)input[r] * D;
        const float *dxr = w->dx + (size_t)r * D;
        for (int i = 0; i < D; i++) ge[i] += dxr[i];
    }
    return loss;
}

void tm_draw_batch(const tm_model *m, const int32_t *data, size_t n, int B, int T, uint64_t rng[4],
                   int32_t *input, int32_t *target, float *inv_t) {
    for (int b = 0; b < B; b++) {
        size_t off = (size_t)(tm_rand(rng) % (uint64_t)(n - (size_t)T));
        double t = tm_rand_unit(rng), pm = (1.0 - TM_MASK_EPS) * t + TM_MASK_EPS;
        inv_t[b] = (float)(1.0 / pm);
        for (int i = 0; i < T; i++) {
            int32_t y = data[off + (size_t)i];
            target[b * T + i] = y;
            input[b * T + i] = tm_rand_unit(rng) < pm ? m->c.mask_id : y;
        }
    }
}

float tm_uniform_answer(const tm_model *m, const int32_t *seq, int T, int prompt_len, uint64_t rng[4],
                        int32_t *input, int32_t *target, bool *loss_at) {
    double t = tm_rand_unit(rng), pm = (1.0 - TM_MASK_EPS) * t + TM_MASK_EPS;
    for (int i = 0; i < T; i++) {
        target[i] = seq[i];
        loss_at[i] = i >= prompt_len;
        input[i] = seq[i];
        if (i >= prompt_len && tm_rand_unit(rng) < pm) input[i] = (int32_t)(tm_rand(rng) % (uint64_t)m->c.n_vocab);
    }
    return (float)(1.0 / (double)UM_MAX(1, T - prompt_len));
}

float tm_mask_answer(const tm_model *m, const int32_t *seq, int T, int prompt_len, uint64_t rng[4],
                     int32_t *input, int32_t *target) {
    double t = tm_rand_unit(rng), pm = (1.0 - TM_MASK_EPS) * t + TM_MASK_EPS;
    for (int i = 0; i < T; i++) {
        target[i] = seq[i];
        input[i] = i >= prompt_len && tm_rand_unit(rng) < pm ? m->c.mask_id : seq[i];
    }
    return (float)(1.0 / (pm * (double)UM_MAX(1, T - prompt_len)));
}

void tm_logits_batch(tm_model *m, tm_ws *w, um_pool *p, const int32_t *input, int B, int T, float *logits) {
    forward_body(m, w, p, input, B, T);
    linear(w, p, w->xnf, B * T, m->p, m->c.n_vocab, m->c.n_embd, logits);
}

/* ------------------------------------------------------------------ optimiser */

float tm_lr_at(int64_t step, int64_t warmup, int64_t total, float lr, float lr_min) {
    if (step < warmup) return lr * (float)(step + 1) / (float)warmup;
    if (step >= total) return lr_min;
    double f = (double)(step - warmup) / (double)UM_MAX(1, total - warmup);
    return lr_min + (float)(0.5 * (1.0 + cos(M_PI * f))) * (lr - lr_min);
}

double tm_adam_update(tm_model *m, const tm_adam *a, int64_t step) {
    double ss = 0;
    for (int64_t i = 0; i < m->n_params; i++) ss += (double)m->g[i] * m->g[i];
    double norm = sqrt(ss);
    float k = a->clip > 0 && norm > a->clip ? (float)(a->clip / norm) : 1.0f;
    float bc1 = 1.0f - powf(a->beta1, (float)step), bc2 = 1.0f - powf(a->beta2, (float)step);
    for (int ti = 0; ti < m->n_tensors; ti++) {
        const tm_tensor *t = &m->t[ti];
        float wd = t->decay ? a->weight_decay : 0.0f;
        for (int64_t i = t->off; i < t->off + (int64_t)t->n_out * t->n_in; i++) {
            float g = m->g[i] * k;
            m->m[i] = a->beta1 * m->m[i] + (1.0f - a->beta1) * g;
            m->v[i] = a->beta2 * m->v[i] + (1.0f - a->beta2) * g * g;
            float mh = m->m[i] / bc1, vh = m->v[i] / bc2;
            m->p[i] -= a->lr * (mh / (sqrtf(vh) + a->eps) + wd * m->p[i]);
        }
    }
    return norm;
}

/* ------------------------------------------------------------------ checkpoints */

#define CKPT_MAGIC "UMTRAIN1"

int tm_save(const tm_model *m, int64_t step, const uint64_t rng[4], const char *path, um_err *e) {
    outfile *o;
    if (outfile_open(&o, path, e)) return UM_FAIL;
    FILE *f = outfile_stream(o);
    size_t np = (size_t)m->n_params;
    bool ok = fwrite(CKPT_MAGIC, 8, 1, f) == 1 && fwrite(&m->c, sizeof m->c, 1, f) == 1 &&
              fwrite(&step, sizeof step, 1, f) == 1 && fwrite(rng, sizeof(uint64_t), 4, f) == 4 &&
              fwrite(&m->n_params, sizeof m->n_params, 1, f) == 1 &&
              fwrite(m->p, sizeof(float), np, f) == np && fwrite(m->m, sizeof(float), np, f) == np &&
              fwrite(m->v, sizeof(float), np, f) == np;
    if (!ok) {
        um_errf(e, "%s: write failed: %s", path, strerror(errno));
        outfile_abort(o);
        return UM_FAIL;
    }
    return outfile_commit(o, e);
}

int tm_load(tm_model **out, int64_t *step, uint64_t rng[4], const char *path, um_err *e) {
    *out = NULL;
    int fd = infile_open(path, NULL, e);
    FILE *f = fd >= 0 ? fdopen(fd, "rb") : NULL;
    if (!f) {
        if (fd >= 0) { close(fd); return um_errf(e, "%s: %s", path, strerror(errno)); }
        return UM_FAIL;
    }
    char magic[8];
    tm_config c;
    int64_t np = 0;
    if (fread(magic, 8, 1, f) != 1 || memcmp(magic, CKPT_MAGIC, 8) || fread(&c, sizeof c, 1, f) != 1 ||
        fread(step, sizeof *step, 1, f) != 1 || fread(rng, sizeof(uint64_t), 4, f) != 4 ||
        fread(&np, sizeof np, 1, f) != 1) {
        fclose(f);
        return um_errf(e, "%s: not a trainer checkpoint", path);
    }
    tm_model *m;
    if (tm_new(&m, &c, e)) { fclose(f); return um_err_prefix(e, "%s", path); }
    size_t n = (size_t)m->n_params;
    if (np != m->n_params || fread(m->p, sizeof(float), n, f) != n || fread(m->m, sizeof(float), n, f) != n ||
        fread(m->v, sizeof(float), n, f) != n) {
        fclose(f); tm_free(m);
        return um_errf(e, "%s: truncated or mismatched checkpoint", path);
    }
    fclose(f);
    *out = m;
    return UM_OK;
}

/* ------------------------------------------------------------------ GGUF */

int tm_export(const tm_model *m, const char *tok_gguf, const char *name, const char *path, um_err *e) {
    return tm_export_uniform(m, tok_gguf, name, path, 0, e);
}

int tm_export_uniform(const tm_model *m, const char *tok_gguf, const char *name, const char *path, int canvas,
                      um_err *e) {
    gguf_file *tg = NULL;
    if (gguf_open(&tg, tok_gguf, e)) return UM_FAIL;
    gguf_writer *w = gguf_writer_new();
    uint16_t *h = um_malloc((size_t)m->n_params * sizeof(uint16_t));
    int rc = UM_FAIL;
    if (!w || !h) { um_errf(e, "out of memory"); goto out; }
    const tm_config *c = &m->c;
    const int HD = c->n_embd / c->n_head;
    gguf_set_str(w, "general.architecture", "llada");
    gguf_set_str(w, "general.name", name);
    gguf_set_u32(w, "general.alignment", 32);
    gguf_set_u32(w, "llada.context_length", (uint32_t)c->n_ctx);
    gguf_set_u32(w, "llada.embedding_length", (uint32_t)c->n_embd);
    gguf_set_u32(w, "llada.block_count", (uint32_t)c->n_layer);
    gguf_set_u32(w, "llada.feed_forward_length", (uint32_t)c->n_ff);
    gguf_set_u32(w, "llada.attention.head_count", (uint32_t)c->n_head);
    gguf_set_u32(w, "llada.attention.head_count_kv", (uint32_t)c->n_head);
    gguf_set_u32(w, "llada.attention.key_length", (uint32_t)HD);
    gguf_set_u32(w, "llada.attention.value_length", (uint32_t)HD);
    gguf_set_u32(w, "llada.rope.dimension_count", (uint32_t)HD);
    gguf_set_f32(w, "llada.rope.freq_base", c->rope_base);
    gguf_set_f32(w, "llada.attention.layer_norm_rms_epsilon", c->norm_eps);
    gguf_set_u32(w, "llada.vocab_size", (uint32_t)c->n_vocab);
    gguf_set_bool(w, "diffusion.shift_logits", false);
    if (canvas > 0) {           /* a uniform-state model: unmask decodes it with the uniform-state sampler */
        gguf_set_bool(w, "unmask.uniform_state", true);
        gguf_set_u32(w, "diffusion.canvas_length", (uint32_t)canvas);
    }
    const char *const skip[] = { "general.architecture", "general.name", "general.alignment", NULL };
    if (gguf_copy_kv(w, tg, skip)) { um_errf(e, "%s: cannot copy tokenizer keys", tok_gguf); goto out; }
    for (int i = 0; i < m->n_tensors; i++) {
        const tm_tensor *t = &m->t[i];
        int64_t n = (int64_t)t->n_out * t->n_in;
        uint64_t ne[2] = { (uint64_t)t->n_in, (uint64_t)t->n_out };
        if (t->n_out == 1) {
            if (gguf_add_tensor(w, t->name, UM_TYPE_F32, 1, ne, m->p + t->off, (uint64_t)n * 4, e)) goto out;
        } else {
            for (int64_t k = 0; k < n; k++) h[t->off + k] = um_fp32_to_fp16(m->p[t->off + k]);
            if (gguf_add_tensor(w, t->name, UM_TYPE_F16, 2, ne, h + t->off, (uint64_t)n * 2, e)) goto out;
        }
    }
    rc = gguf_writer_write(w, path, e);
out:
    free(h);
    gguf_writer_free(w);
    gguf_close(tg);
    return rc;
}

int tm_import(tm_model **out, const char *path, um_err *e) {
    *out = NULL;
    gguf_file *g = NULL;
    if (gguf_open(&g, path, e)) return UM_FAIL;
    tm_config c = { 0 };
    uint32_t u[7] = { 0 };
    int rc = UM_FAIL;
    tm_model *m = NULL;
    if (gguf_get_u32(g, "llada.vocab_size", &u[0], e) || gguf_get_u32(g, "llada.embedding_length", &u[1], e) ||
        gguf_get_u32(g, "llada.block_count", &u[2], e) || gguf_get_u32(g, "llada.attention.head_count", &u[3], e) ||
        gguf_get_u32(g, "llada.feed_forward_length", &u[4], e) || gguf_get_u32(g, "llada.context_length", &u[5], e) ||
        gguf_get_u32(g, "tokenizer.ggml.mask_token_id", &u[6], e) ||
        gguf_get_f32(g, "llada.rope.freq_base", &c.rope_base, e) ||
        gguf_get_f32(g, "llada.attention.layer_norm_rms_epsilon", &c.norm_eps, e)) {
        um_err_prefix(e, "%s", path);
        goto out;
    }
    c.n_vocab = (int32_t)u[0]; c.n_embd = (int32_t)u[1]; c.n_layer = (int32_t)u[2]; c.n_head = (int32_t)u[3];
    c.n_ff = (int32_t)u[4]; c.n_ctx = (int32_t)u[5]; c.mask_id = (int32_t)u[6];
    if (tm_new(&m, &c, e)) goto out;
    for (int i = 0; i < m->n_tensors; i++) {
        const tm_tensor *t = &m->t[i];
        const gguf_tensor *gt = gguf_find_tensor(g, t->name);
        uint64_t n = (uint64_t)t->n_out * t->n_in;
        if (!gt || gt->n_elements != n || (gt->type != UM_TYPE_F32 && gt->type != UM_TYPE_F16)) {
            um_errf(e, "%s: tensor %s missing or not F32/F16 of %" PRIu64 " elements", path, t->name, n);
            goto out;
        }
        for (uint64_t k = 0; k < n; k++)
            m->p[t->off + k] = gt->type == UM_TYPE_F32 ? ((const float *)gt->data)[k]
                                                       : um_fp16_to_fp32(((const uint16_t *)gt->data)[k]);
    }
    *out = m;
    m = NULL;
    rc = UM_OK;
out:
    tm_free(m);
    gguf_close(g);
    return rc;
}
