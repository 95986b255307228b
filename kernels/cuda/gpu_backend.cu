/*
 * gpu_backend: the forward pass of forward.c on an NVIDIA GPU, behind backend.h's table.
 *
 * gpu_backend_open() checks for a device (sm_80 or newer), computes the memory the model
 * needs (weights in gpu_pack.h's layouts + activations for max_tokens) and fails with
 * "needs N GiB of GPU memory, M free" when it does not fit, then uploads every weight once,
 * repacked on the host in bounded chunks. All activations live on the GPU for the whole
 * pass; per run the host sends the token embeddings (dequantized on the CPU by ops_embed,
 * the same rows the CPU backend uses: no embedding table on the GPU) and the row list, and
 * gets back only the requested logits rows. MoE layers copy the router logits (n, n_expert)
 * back so routing and grouping run on the CPU with ops_moe_route/ops_moe_group (the exact
 * CPU choice, ties included); the expert FFNs then run on the GPU per expert.
 *
 * Partial passes (kv_new / run_kv, forward_run_kv's contract): the K/V cache lives in device
 * memory (F32, F16 or Q8_0 rows, as on the CPU). A full pass with a cache stores each
 * layer's K and V after RoPE; a partial pass uploads only the active rows' embeddings, runs
 * them through every layer as a compact set, and before each attention loads the layer's
 * cached K/V for every position into the ordinary K/V buffers and scatters the active rows'
 * fresh K/V (computed into the cache's own scratch) over them: the stored cache is never
 * written by a partial pass. The cache's buffers: gpu_cache.cu.
 *
 * Invariants: one stream; nothing allocated in run() or run_kv(); every CUDA error becomes a
 * one-line um_err naming the call; the layer structure mirrors forward.c's run_pass line for
 * line (including the last layer's row subset), so the two backends differ only by arithmetic.
 */
#include <cuda_runtime.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* pool.h uses C11 atomics, which C++ lacks; the backend only needs the um_pool name
 * (ops_* take a NULL pool here), so its guard is set and the type declared instead. */
#define UM_POOL_H
typedef struct um_pool um_pool;
extern "C" {
#include "backend.h"
#include "gpu.h"
#include "model.h"
#include "ops.h"
#include "quant.h"
#include "util.h"
}
#include "gpu_backend.h"
#include "gpu_cache.h"
#include "gpu_kernels.cuh"
#include "gpu_pack.h"

#define GIB (1024.0 * 1024.0 * 1024.0)
/* context, cuBLAS-free runtime and allocator slack the plan adds to its own count */
#define GPU_MEM_MARGIN ((uint64_t)384 << 20)
/* host staging for weight upload: at most this many bytes of packed rows at a time */
#define GPU_STAGE_BYTES ((uint64_t)64 << 20)

#define CK(call, what)                                                                                 \
    do {                                                                                               \
        cudaError_t ck_err_ = (call);                                                                  \
        if (ck_err_ != cudaSuccess) return um_errf(e, "CUDA %s: %s", what, cudaGetErrorString(ck_err_)); \
    } while (0)

/* A kernel launch; with UNMASK_CUDA_SYNC=1 each one is waited for, so an execution error
 * names its kernel (first-run debugging; CUDA graphs are off then). */
#define KL(call, what)                                                                                 \
    do {                                                                                               \
        CK(call, what);                                                                                \
        if (g->sync_each) CK(cudaStreamSynchronize(g->st), what);                                      \
    } while (0)

typedef struct gpu_layer {
    float  *attn_norm, *bq, *bk, *bv, *bo, *q_norm, *k_norm, *ffn_norm, *gate_b, *up_b, *down_b;
    gpu_mat wq, wk, wv, wo, gate, up, down, router;
    gpu_mat *gate_x, *up_x, *down_x;            /* (n_expert) views into the stacks */
    gpu_mat gate_s, up_s, down_s;               /* the stacks (w_stride, s_stride set) */
} gpu_layer;

typedef struct gpu_impl {
    const um_model *m;
    cudaStream_t    st;
    char            kname[64];
    gpu_layer      *layers;                     /* (n_layer) */
    gpu_mat         output;
    float          *output_norm, *output_b;
    void          **wbufs;                      /* device weight allocations */
    int             n_wbufs, cap_wbufs;
    uint64_t        weight_bytes;
    int             T;                          /* activations sized for T tokens */
    cudaGraphExec_t graph;                      /* layers 0..n_layer-2 for canvases of graph_T */
    int             graph_T;
    bool            graph_off;                  /* UNMASK_CUDA_GRAPH=0, MoE, or a failed capture */
    bool            sync_each;                  /* UNMASK_CUDA_SYNC=1: wait after every kernel */
    bool            pack4;                      /* nibble weights for Q4_0/Q4_1/Q4_K (UNMASK_CUDA_PACK4=0: off) */
    bool            per_expert;                 /* UNMASK_CUDA_MOE=loop: one GEMM launch per expert */
    gpu_dims        d;
    /* device activations (shapes for T = max tokens; see gpu_activation_bytes) */
    float   *x, *xn, *hidden;                   /* (T, E) */
    float   *q, *att;                           /* (T, NQ) */
    float   *k, *v;                             /* (T, NKV) */
    float   *ffa, *ffb;                         /* (T*KU, F) */
    float   *gathered, *ex_out;                 /* (T*KU, E), MoE only */
    float   *router;                            /* (T, X) */
    float   *ex_w;                              /* (T, KU) */
    int     *ex_tok, *ex_slot;                  /* (T*KU) */
    int     *ex_off_d;                          /* (X+1) expert row offsets */
    int     *rows, *pos;                        /* (T) */
    float   *cos_t, *sin_t;                     /* (T, n_rot/2) */
    int8_t  *aq;                                /* (T*KU, kmax) */
    float   *ad;                                /* (T*KU, kmax/32) */
    int     *asum;                              /* (T*KU, kmax/16) */
    uint16_t *ah;                               /* (T*KU, kmax) */
    float   *logits;                            /* (T, V) */
    int     *st_arg;                            /* (T) row statistics: argmax */
    float   *st_p1, *st_p2, *st_ent;            /* (T) each */
    int     *st_topi;                           /* (T, GPU_STATS_TOPK) */
    float   *st_topp;                           /* (T, GPU_STATS_TOPK) */
    /* host mirrors */
    float   *x_host;                            /* (T, E) embeddings */
    float   *router_host, *ex_w_host, *ex_roww; /* (T, X), (T, KU), (T*KU) */
    int32_t *ex_id, *ex_off, *ex_tok_host, *ex_slot_host, *rows_host, *pos_host;
    uint32_t *st_host;                          /* (4 + 2 * TOPK, T) statistics bits: argmax, p1, p2,
                                                 * entropy (T each), top ids, top p (T * TOPK each) */
} gpu_impl;

/* ------------------------------------------------------------------ weights */

static int keep_wbuf(gpu_impl *g, void *p) {
    if (g->n_wbufs == g->cap_wbufs) {
        int cap = g->cap_wbufs ? g->cap_wbufs * 2 : 256;
        void **n = (void **)realloc(g->wbufs, sizeof *n * (size_t)cap);
        if (!n) return UM_FAIL;
        g->wbufs = n;
        g->cap_wbufs = cap;
    }
    g->wbufs[g->n_wbufs++] = p;
    return UM_OK;
}

static int wmalloc(gpu_impl *g, void **p, uint64_t bytes, const char *name, um_err *e) {
    *p = NULL;
    if (!bytes) return UM_OK;
    cudaError_t err = cudaMalloc(p, bytes);
    if (err != cudaSuccess)
        return um_errf(e, "CUDA out of memory uploading '%s' (%" PRIu64 " bytes): %s", name, bytes, cudaGetErrorString(err));
    if (keep_wbuf(g, *p)) { cudaFree(*p); *p = NULL; return um_errf(e, "out of memory"); }
    g->weight_bytes += bytes;
    return UM_OK;
}

static int upload_vec(gpu_impl *g, float **dst, um_vec src, int64_t n, um_err *e) {
    *dst = NULL;
    if (!src) return UM_OK;
    if (wmalloc(g, (void **)dst, (uint64_t)n * 4, "vector", e)) return UM_FAIL;
    CK(cudaMemcpy(*dst, src, (size_t)n * 4, cudaMemcpyHostToDevice), "upload vector");
    return UM_OK;
}

/* Repack w into its GPU layout in chunks of rows and upload it. */
static int layout_of(const gpu_impl *g, const um_weight *w, gpu_layout *L, um_err *e) {
    *L = gpu_layout_for(w->type, w->n_in, w->n_out);
    if (L->kind == GPU_KIND_NONE) return um_errf(e, "tensor '%s': type %s has no CUDA kernel", w->name, um_type_name(w->type));
    if (g->pack4) gpu_layout_pack4(L, w->n_out);
    return UM_OK;
}

/* Repack w (layout L) into the device buffers wd / sd / od, filling gm as a view of them. */
static int upload_into(gpu_impl *g, gpu_mat *gm, const um_weight *w, const gpu_layout *Lp, void *wd, float *sd,
                       float *od, um_err *e) {
    const gpu_layout L = *Lp;
    memset(gm, 0, sizeof *gm);
    gm->w = wd;
    gm->scale = sd;
    gm->off = od;
    gm->kind = L.kind;
    gm->group = L.group;
    gm->has_off = L.has_off;
    gm->pack4 = L.pack4;
    gm->bias4 = L.bias4;
    gm->n_in = (int)w->n_in;
    gm->n_out = (int)w->n_out;
    gm->k_pad = (int)L.k_pad;
    const uint64_t row_w = L.bytes_w / (uint64_t)w->n_out;
    const int64_t ng = L.kind == GPU_KIND_I8 ? L.k_pad / L.group : 0;
    const uint64_t row_all = row_w + (uint64_t)ng * 4 * (L.has_off ? 2 : 1);
    int64_t chunk = (int64_t)(GPU_STAGE_BYTES / row_all);
    if (chunk < 1) chunk = 1;
    if (chunk > w->n_out) chunk = w->n_out;
    char *sw = (char *)malloc((size_t)(row_w * (uint64_t)chunk));
    float *ss = (float *)malloc((size_t)(ng ? ng * chunk : 1) * 4);
    float *so = (float *)malloc((size_t)(ng ? ng * chunk : 1) * 4);
    float *tmp = (float *)malloc((size_t)w->n_in * 4);
    int8_t *q8 = (int8_t *)malloc((size_t)L.k_pad);      /* one int8 row before nibble packing */
    int rc = UM_OK;
    if (!sw || !ss || !so || !tmp || !q8) { rc = um_errf(e, "out of memory staging '%s'", w->name); goto out; }
    for (int64_t r0 = 0; r0 < w->n_out; r0 += chunk) {
        const int64_t nr = UM_MIN(chunk, w->n_out - r0);
        for (int64_t r = 0; r < nr; r++) {
            const char *src = (const char *)w->data + (uint64_t)(r0 + r) * w->row_bytes;
            if (L.kind == GPU_KIND_I8 && L.pack4) {
                gpu_pack_row(w->type, &L, src, w->n_in, q8, ss + r * ng, so + r * ng, tmp);
                gpu_nibble_pack(q8, L.k_pad, L.bias4, (uint8_t *)sw + r * row_w);
            } else if (L.kind == GPU_KIND_I8)
                gpu_pack_row(w->type, &L, src, w->n_in, (int8_t *)sw + r * row_w, ss + r * ng, so + r * ng, tmp);
            else
                gpu_pack_row_float(w->type, src, w->n_in, L.k_pad, sw + r * row_w);
        }
        cudaError_t err = cudaMemcpy((char *)gm->w + (uint64_t)r0 * row_w, sw, (size_t)(row_w * (uint64_t)nr),
                                     cudaMemcpyHostToDevice);
        if (err == cudaSuccess && ng)
            err = cudaMemcpy(gm->scale + r0 * ng, ss, (size_t)(nr * ng * 4), cudaMemcpyHostToDevice);
        if (err == cudaSuccess && ng && L.has_off)
            err = cudaMemcpy(gm->off + r0 * ng, so, (size_t)(nr * ng * 4), cudaMemcpyHostToDevice);
        if (err != cudaSuccess) { rc = um_errf(e, "CUDA upload of '%s': %s", w->name, cudaGetErrorString(err)); goto out; }
    }
out:
    free(sw); free(ss); free(so); free(tmp); free(q8);
    return rc;
}

static int upload_mat(gpu_impl *g, gpu_mat *gm, const um_weight *w, um_err *e) {
    memset(gm, 0, sizeof *gm);
    if (!w->data) return UM_OK;
    gpu_layout L;
    void *wd, *sd, *od;
    if (layout_of(g, w, &L, e) || wmalloc(g, &wd, L.bytes_w, w->name, e) || wmalloc(g, &sd, L.bytes_scale, w->name, e) ||
        wmalloc(g, &od, L.bytes_off, w->name, e))
        return UM_FAIL;
    return upload_into(g, gm, w, &L, wd, (float *)sd, (float *)od, e);
}

/* The n experts of one tensor (equal type and shape) in one allocation each for values,
 * scales and offsets, so one grouped GEMM covers them: views[x] is expert x, stack the
 * first with the strides set. */
static int upload_stack(gpu_impl *g, gpu_mat *stack, gpu_mat *views, const um_weight *ws, int n, um_err *e) {
    gpu_layout L;
    if (layout_of(g, &ws[0], &L, e)) return UM_FAIL;
    for (int x = 1; x < n; x++)
        if (ws[x].type != ws[0].type || ws[x].n_in != ws[0].n_in || ws[x].n_out != ws[0].n_out)
            return um_errf(e, "tensor '%s': experts differ in type or shape", ws[x].name);
    void *wd, *sd, *od;
    if (wmalloc(g, &wd, L.bytes_w * (uint64_t)n, ws[0].name, e) || wmalloc(g, &sd, L.bytes_scale * (uint64_t)n, ws[0].name, e) ||
        wmalloc(g, &od, L.bytes_off * (uint64_t)n, ws[0].name, e))
        return UM_FAIL;
    const uint64_t ns = L.bytes_scale / 4;
    for (int x = 0; x < n; x++)
        if (upload_into(g, &views[x], &ws[x], &L, (char *)wd + L.bytes_w * (uint64_t)x, sd ? (float *)sd + ns * x : NULL,
                        od ? (float *)od + ns * x : NULL, e))
            return UM_FAIL;
    *stack = views[0];
    stack->w_stride = (long long)L.bytes_w;
    stack->s_stride = (long long)ns;
    return UM_OK;
}

static int upload_weights(gpu_impl *g, um_err *e) {
    const um_model *m = g->m;
    const um_hparams *hp = &m->hp;
    const int64_t E = hp->n_embd, HD = hp->head_dim, NQ = (int64_t)hp->n_head * HD, NKV = (int64_t)hp->n_head_kv * HD;
    g->layers = (gpu_layer *)calloc((size_t)hp->n_layer, sizeof *g->layers);
    if (!g->layers) return um_errf(e, "out of memory");
    for (int il = 0; il < hp->n_layer; il++) {
        const um_layer *l = &m->layers[il];
        gpu_layer *gl = &g->layers[il];
        if (upload_vec(g, &gl->attn_norm, l->attn_norm, E, e) || upload_vec(g, &gl->ffn_norm, l->ffn_norm, E, e) ||
            upload_vec(g, &gl->bq, l->bq, NQ, e) || upload_vec(g, &gl->bk, l->bk, NKV, e) ||
            upload_vec(g, &gl->bv, l->bv, NKV, e) || upload_vec(g, &gl->bo, l->bo, E, e) ||
            upload_vec(g, &gl->q_norm, l->q_norm, HD, e) || upload_vec(g, &gl->k_norm, l->k_norm, HD, e))
            return UM_FAIL;
        if (upload_mat(g, &gl->wq, &l->wq, e) || upload_mat(g, &gl->wk, &l->wk, e) ||
            upload_mat(g, &gl->wv, &l->wv, e) || upload_mat(g, &gl->wo, &l->wo, e))
            return UM_FAIL;
        if (m->arch->moe) {
            const int X = hp->n_expert;
            if (upload_mat(g, &gl->router, &l->ffn_gate_inp, e)) return UM_FAIL;
            gl->gate_x = (gpu_mat *)calloc((size_t)X, sizeof(gpu_mat));
            gl->up_x = (gpu_mat *)calloc((size_t)X, sizeof(gpu_mat));
            gl->down_x = (gpu_mat *)calloc((size_t)X, sizeof(gpu_mat));
            if (!gl->gate_x || !gl->up_x || !gl->down_x) return um_errf(e, "out of memory");
            if (upload_stack(g, &gl->gate_s, gl->gate_x, l->gate_exps, X, e) ||
                upload_stack(g, &gl->up_s, gl->up_x, l->up_exps, X, e) ||
                upload_stack(g, &gl->down_s, gl->down_x, l->down_exps, X, e))
                return UM_FAIL;
        } else {
            if (upload_mat(g, &gl->gate, &l->ffn_gate, e) || upload_mat(g, &gl->up, &l->ffn_up, e) ||
                upload_mat(g, &gl->down, &l->ffn_down, e) || upload_vec(g, &gl->gate_b, l->ffn_gate_b, hp->n_ff, e) ||
                upload_vec(g, &gl->up_b, l->ffn_up_b, hp->n_ff, e) || upload_vec(g, &gl->down_b, l->ffn_down_b, E, e))
                return UM_FAIL;
        }
    }
    if (upload_vec(g, &g->output_norm, m->output_norm, E, e) || upload_vec(g, &g->output_b, m->output_b, hp->n_vocab, e) ||
        upload_mat(g, &g->output, &m->output, e))
        return UM_FAIL;
    return UM_OK;
}

/* ------------------------------------------------------------------ activations */

static void free_acts(gpu_impl *g) {
    void *dev[] = { g->x, g->xn, g->hidden, g->q, g->att, g->k, g->v, g->ffa, g->ffb, g->gathered, g->ex_out,
                    g->router, g->ex_w, g->ex_tok, g->ex_slot, g->rows, g->pos, g->cos_t, g->sin_t, g->aq, g->ad,
                    g->asum, g->ah, g->logits, g->st_arg, g->st_p1, g->st_p2, g->st_ent, g->st_topi, g->st_topp, g->ex_off_d };
    for (size_t i = 0; i < UM_ARRAY_LEN(dev); i++) cudaFree(dev[i]);
    void *host[] = { g->x_host, g->router_host, g->ex_w_host, g->ex_roww, g->ex_id, g->ex_off, g->ex_tok_host,
                     g->ex_slot_host, g->rows_host, g->pos_host, g->st_host };
    for (size_t i = 0; i < UM_ARRAY_LEN(host); i++) free(host[i]);
    g->x = g->xn = g->hidden = g->q = g->att = g->k = g->v = g->ffa = g->ffb = g->gathered = g->ex_out = NULL;
    g->router = g->ex_w = g->cos_t = g->sin_t = g->ad = g->logits = g->st_p1 = g->st_p2 = g->st_ent = NULL;
    g->ex_tok = g->ex_slot = g->rows = g->pos = g->asum = g->st_arg = g->st_topi = NULL;
    g->st_topp = NULL;
    g->ex_off_d = NULL;
    g->st_host = NULL;
    g->aq = NULL;
    g->ah = NULL;
    g->x_host = g->router_host = g->ex_w_host = g->ex_roww = NULL;
    g->ex_id = g->ex_off = g->ex_tok_host = g->ex_slot_host = g->rows_host = g->pos_host = NULL;
    g->T = 0;
}

static void drop_graph(gpu_impl *g);

static int alloc_acts(gpu_impl *g, int T, um_err *e) {
    drop_graph(g);      /* captured pointers die with the buffers */
    free_acts(g);
    const gpu_dims d = gpu_dims_for(g->m, T);
    const uint64_t R = (uint64_t)d.rows_ff, K = (uint64_t)d.kmax, X = (uint64_t)(d.X ? d.X : 1);
    struct { void **p; uint64_t bytes; } want[] = {
        { (void **)&g->x, (uint64_t)T * d.E * 4 }, { (void **)&g->xn, (uint64_t)T * d.E * 4 },
        { (void **)&g->hidden, (uint64_t)T * d.E * 4 }, { (void **)&g->q, (uint64_t)T * d.NQ * 4 },
        { (void **)&g->att, (uint64_t)T * d.NQ * 4 }, { (void **)&g->k, (uint64_t)T * d.NKV * 4 },
        { (void **)&g->v, (uint64_t)T * d.NKV * 4 }, { (void **)&g->ffa, R * d.F * 4 }, { (void **)&g->ffb, R * d.F * 4 },
        { (void **)&g->gathered, d.X ? R * d.E * 4 : 0 }, { (void **)&g->ex_out, d.X ? R * d.E * 4 : 0 },
        { (void **)&g->router, (uint64_t)T * X * 4 }, { (void **)&g->ex_w, R * 4 }, { (void **)&g->ex_tok, R * 4 },
        { (void **)&g->ex_slot, R * 4 }, { (void **)&g->rows, (uint64_t)T * 4 },
        { (void **)&g->cos_t, (uint64_t)T * (d.n_rot / 2) * 4 }, { (void **)&g->sin_t, (uint64_t)T * (d.n_rot / 2) * 4 },
        { (void **)&g->aq, R * K }, { (void **)&g->ad, R * (K / 32) * 4 }, { (void **)&g->asum, R * (K / 16) * 4 },
        { (void **)&g->ah, R * K * 2 }, { (void **)&g->logits, (uint64_t)T * d.V * 4 },
        { (void **)&g->pos, (uint64_t)T * 4 }, { (void **)&g->st_arg, (uint64_t)T * 4 },
        { (void **)&g->st_p1, (uint64_t)T * 4 }, { (void **)&g->st_p2, (uint64_t)T * 4 },
        { (void **)&g->st_ent, (uint64_t)T * 4 }, { (void **)&g->st_topi, (uint64_t)T * GPU_STATS_TOPK * 4 },
        { (void **)&g->st_topp, (uint64_t)T * GPU_STATS_TOPK * 4 }, { (void **)&g->ex_off_d, (X + 1) * 4 },
    };
    for (size_t i = 0; i < UM_ARRAY_LEN(want); i++) {
        if (!want[i].bytes) continue;
        cudaError_t err = cudaMalloc(want[i].p, want[i].bytes);
        if (err != cudaSuccess)
            return um_errf(e, "CUDA out of memory for activations (%" PRIu64 " bytes): %s", want[i].bytes,
                           cudaGetErrorString(err));
    }
    g->x_host = (float *)malloc((size_t)T * d.E * 4);
    g->router_host = (float *)malloc((size_t)(T * X * 4));
    g->ex_w_host = (float *)malloc((size_t)(R * 4));
    g->ex_roww = (float *)malloc((size_t)(R * 4));
    g->ex_id = (int32_t *)malloc((size_t)(R * 4));
    g->ex_off = (int32_t *)malloc((size_t)((X + 1) * 4));
    g->ex_tok_host = (int32_t *)malloc((size_t)(R * 4));
    g->ex_slot_host = (int32_t *)malloc((size_t)(R * 4));
    g->rows_host = (int32_t *)malloc((size_t)T * 4);
    g->pos_host = (int32_t *)malloc((size_t)T * 4);
    g->st_host = (uint32_t *)malloc((size_t)T * (4 + 2 * GPU_STATS_TOPK) * 4);
    float *ct = (float *)malloc((size_t)T * (d.n_rot / 2 + 1) * 4), *stab = (float *)malloc((size_t)T * (d.n_rot / 2 + 1) * 4);
    if (!g->x_host || !g->router_host || !g->ex_w_host || !g->ex_roww || !g->ex_id || !g->ex_off || !g->ex_tok_host ||
        !g->ex_slot_host || !g->rows_host || !g->pos_host || !g->st_host || !ct || !stab) {
        free(ct); free(stab);
        return um_errf(e, "out of memory");
    }
    for (int i = 0; i < T; i++) g->pos_host[i] = i;
    gpu_rope_table(g->m->hp.rope_base, 1.0f, (int)d.n_rot, T, ct, stab);
    cudaError_t err = cudaMemcpy(g->pos, g->pos_host, (size_t)T * 4, cudaMemcpyHostToDevice);
    if (err == cudaSuccess) err = cudaMemcpy(g->cos_t, ct, (size_t)T * (d.n_rot / 2) * 4, cudaMemcpyHostToDevice);
    if (err == cudaSuccess) err = cudaMemcpy(g->sin_t, stab, (size_t)T * (d.n_rot / 2) * 4, cudaMemcpyHostToDevice);
    free(ct);
    free(stab);
    CK(err, "upload rope table");
    g->T = T;
    g->d = d;
    return UM_OK;
}

/* ------------------------------------------------------------------ building blocks */

static gpu_act make_act(gpu_impl *g, const float *x, int n, int K) {
    gpu_act a;
    a.x = x;
    a.n = n;
    a.K = K;
    a.k_pad = (int)gpu_round_up(K, 32);
    a.q = g->aq;
    a.d = g->ad;
    a.sum16 = g->asum;
    a.h = g->ah;
    a.h_kind = -1;
    a.q_ready = 0;
    return a;
}

/* y (a.n, ldy) [+]= a.x W^T (+ bias), preparing a's int8 / half form on first need. */
static int linear(gpu_impl *g, const gpu_mat *W, gpu_act *a, float *y, int ldy, const float *bias, int acc, um_err *e) {
    if (W->kind == GPU_KIND_I8 && !a->q_ready) KL(gpu_quantize_act(a, g->st), "quantize activations");
    if ((W->kind == GPU_KIND_F16 || W->kind == GPU_KIND_BF16) && a->h_kind != W->kind)
        KL(gpu_convert_act(a, W->kind, g->st), "convert activations");
    KL(gpu_gemm(W, a, y, ldy, bias, acc, g->st), "gemm");
    return UM_OK;
}

static int ffn(gpu_impl *g, int il, int n, um_err *e) {
    const um_model *m = g->m;
    const um_hparams *hp = &m->hp;
    const gpu_layer *gl = &g->layers[il];
    const int E = hp->n_embd;
    if (!m->arch->moe) {
        const int F = hp->n_ff;
        gpu_act a = make_act(g, g->xn, n, E);
        if (linear(g, &gl->gate, &a, g->ffa, F, gl->gate_b, 0, e) || linear(g, &gl->up, &a, g->ffb, F, gl->up_b, 0, e))
            return UM_FAIL;
        KL(gpu_swiglu(g->ffa, g->ffa, g->ffb, (int64_t)n * F, g->st), "swiglu");
        gpu_act b = make_act(g, g->ffa, n, F);
        return linear(g, &gl->down, &b, g->x, E, gl->down_b, 1, e);
    }
    const int K = hp->n_expert_used, X = hp->n_expert, F = hp->n_ff_exp;
    gpu_act a = make_act(g, g->xn, n, E);
    if (linear(g, &gl->router, &a, g->router, X, NULL, 0, e)) return UM_FAIL;
    CK(cudaMemcpyAsync(g->router_host, g->router, (size_t)n * X * 4, cudaMemcpyDeviceToHost, g->st), "router copy");
    CK(cudaStreamSynchronize(g->st), "router sync");
    um_moe_cfg cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.n_expert = X;
    cfg.k = K;
    cfg.gating = m->arch->router == UM_ROUTER_SIGMOID ? UM_MOE_SIGMOID : UM_MOE_SOFTMAX;
    cfg.norm_topk = m->arch->moe_norm_w;
    cfg.scale = hp->expert_weights_scale;
    cfg.bias = NULL;
    if (ops_moe_route(&cfg, g->router_host, n, g->ex_id, g->ex_w_host, e)) return UM_FAIL;
    if (ops_moe_group(g->ex_id, g->ex_w_host, n, K, X, g->ex_off, g->ex_tok_host, g->ex_roww, g->ex_slot_host, e))
        return UM_FAIL;
    const size_t nk = (size_t)n * K * 4;
    CK(cudaMemcpyAsync(g->ex_tok, g->ex_tok_host, nk, cudaMemcpyHostToDevice, g->st), "upload routing");
    CK(cudaMemcpyAsync(g->ex_slot, g->ex_slot_host, nk, cudaMemcpyHostToDevice, g->st), "upload routing");
    CK(cudaMemcpyAsync(g->ex_w, g->ex_w_host, nk, cudaMemcpyHostToDevice, g->st), "upload routing");
    if (gl->gate_s.kind == GPU_KIND_I8 && gl->up_s.kind == GPU_KIND_I8 && gl->down_s.kind == GPU_KIND_I8 && !g->per_expert) {
        /* every expert in one launch per matrix: gather all grouped rows, quantize once */
        int max_rows = 0;
        for (int ex = 0; ex < X; ex++) max_rows = UM_MAX(max_rows, g->ex_off[ex + 1] - g->ex_off[ex]);
        CK(cudaMemcpyAsync(g->ex_off_d, g->ex_off, (size_t)(X + 1) * 4, cudaMemcpyHostToDevice, g->st), "upload routing");
        const int R = n * K;
        KL(gpu_gather_rows(g->gathered, g->xn, g->ex_tok, R, E, g->st), "gather expert rows");
        gpu_act ai = make_act(g, g->gathered, R, E);
        KL(gpu_quantize_act(&ai, g->st), "quantize activations");
        KL(gpu_gemm_grouped(&gl->gate_s, X, g->ex_off_d, max_rows, &ai, g->ffa, F, g->st), "expert gate");
        KL(gpu_gemm_grouped(&gl->up_s, X, g->ex_off_d, max_rows, &ai, g->ffb, F, g->st), "expert up");
        KL(gpu_swiglu(g->ffa, g->ffa, g->ffb, (int64_t)R * F, g->st), "swiglu");
        gpu_act ad = make_act(g, g->ffa, R, F);
        KL(gpu_quantize_act(&ad, g->st), "quantize activations");
        KL(gpu_gemm_grouped(&gl->down_s, X, g->ex_off_d, max_rows, &ad, g->ex_out, E, g->st), "expert down");
        KL(gpu_moe_combine(g->x, g->ex_out, g->ex_w, g->ex_slot, n, K, E, g->st), "moe combine");
        CK(cudaStreamSynchronize(g->st), "moe sync");
        return UM_OK;
    }
    for (int ex = 0; ex < X; ex++) {
        const int r0 = g->ex_off[ex], cnt = g->ex_off[ex + 1] - r0;
        if (!cnt) continue;
        float *in = g->gathered + (int64_t)r0 * E, *ga = g->ffa + (int64_t)r0 * F, *up = g->ffb + (int64_t)r0 * F;
        KL(gpu_gather_rows(in, g->xn, g->ex_tok + r0, cnt, E, g->st), "gather expert rows");
        gpu_act ai = make_act(g, in, cnt, E);
        if (linear(g, &gl->gate_x[ex], &ai, ga, F, NULL, 0, e) || linear(g, &gl->up_x[ex], &ai, up, F, NULL, 0, e))
            return UM_FAIL;
        KL(gpu_swiglu(ga, ga, up, (int64_t)cnt * F, g->st), "swiglu");
        gpu_act ad = make_act(g, ga, cnt, F);
        if (linear(g, &gl->down_x[ex], &ad, g->ex_out + (int64_t)r0 * E, E, NULL, 0, e)) return UM_FAIL;
    }
    KL(gpu_moe_combine(g->x, g->ex_out, g->ex_w, g->ex_slot, n, K, E, g->st), "moe combine");
    /* the host routing arrays are reused by the next layer: wait for the uploads */
    CK(cudaStreamSynchronize(g->st), "moe sync");
    return UM_OK;
}

/* ------------------------------------------------------------------ the table */

/* What one pass carries through the layers: every canvas position (a plain or a
 * cache-filling full pass), or only the active rows of a partial pass, whose attention
 * reads the cache's K/V for every other position (forward.c's run_pass, the same steps). */
typedef struct gpu_pass {
    int         T;              /* canvas tokens: the keys of every attention */
    int         N;              /* rows carried through the layers (T, or the active count) */
    int         n_rows;         /* rows for the head, as indices among the carried rows (g->rows) */
    const int  *cpos;           /* device (N): canvas positions of the carried rows */
    const int  *qpos;           /* device (n_rows): positions of the head rows (q's RoPE, last layer) */
    um_kvcache *kv;             /* NULL: no cache */
    bool        partial;        /* read kv (a full pass with kv stores into it) */
    bool        drift;          /* partial: measure the active rows' K drift at the last layer */
} gpu_pass;

/* One transformer layer of pass p. */
static int run_layer(gpu_impl *g, int il, const gpu_pass *p, um_err *e) {
    const um_model *m = g->m;
    const um_hparams *hp = &m->hp;
    const int E = hp->n_embd, HD = hp->head_dim, H = hp->n_head, HKV = hp->n_head_kv;
    const int NQ = H * HD, NKV = HKV * HD;
    const int neox = m->arch->rope_neox ? 1 : 0;
    const gpu_layer *gl = &g->layers[il];
    const int N = p->N, T = p->T, n_rows = p->n_rows;
    um_kvcache *kv = p->kv;
    /* On the last layer only the rows the head needs go past the attention (as forward.c). */
    const bool subset = il == hp->n_layer - 1 && n_rows < N;
    const int nq = subset ? n_rows : N;
    /* a partial pass computes the active rows' K/V apart, then lays them over the cache's */
    float *kd = p->partial ? kv->kc : g->k, *vd = p->partial ? kv->vc : g->v;

    KL(gpu_rmsnorm(g->xn, g->x, gl->attn_norm, N, E, hp->norm_eps, g->st), "rmsnorm");
    gpu_act a = make_act(g, g->xn, N, E);
    if (linear(g, &gl->wk, &a, kd, NKV, gl->bk, 0, e) || linear(g, &gl->wv, &a, vd, NKV, gl->bv, 0, e))
        return UM_FAIL;
    if (subset) {
        KL(gpu_gather_rows(g->hidden, g->xn, g->rows, n_rows, E, g->st), "gather rows");
        gpu_act aq = make_act(g, g->hidden, nq, E);
        if (linear(g, &gl->wq, &aq, g->q, NQ, gl->bq, 0, e)) return UM_FAIL;
    } else if (linear(g, &gl->wq, &a, g->q, NQ, gl->bq, 0, e)) {
        return UM_FAIL;
    }
    if (m->arch->qk_norm) {
        KL(gpu_rmsnorm(g->q, g->q, gl->q_norm, nq * H, HD, hp->norm_eps, g->st), "q norm");
        KL(gpu_rmsnorm(kd, kd, gl->k_norm, N * HKV, HD, hp->norm_eps, g->st), "k norm");
    }
    KL(gpu_rope(g->q, subset ? p->qpos : p->cpos, nq, H, HD, hp->n_rot, neox, g->cos_t, g->sin_t, g->st), "rope q");
    KL(gpu_rope(kd, p->cpos, N, HKV, HD, hp->n_rot, neox, g->cos_t, g->sin_t, g->st), "rope k");
    if (kv) {
        uint8_t *ck = kv->k + (uint64_t)il * kv->max_tokens * kv->row_bytes;
        uint8_t *cv = kv->v + (uint64_t)il * kv->max_tokens * kv->row_bytes;
        if (!p->partial) {
            KL(gpu_kv_store(ck, g->k, T, NKV, kv->kind, g->st), "store K");
            KL(gpu_kv_store(cv, g->v, T, NKV, kv->kind, g->st), "store V");
        } else {
            /* every position's cached K/V, then the active rows' fresh ones over them */
            KL(gpu_kv_load(g->k, ck, T, NKV, kv->kind, g->st), "load K");
            KL(gpu_kv_load(g->v, cv, T, NKV, kv->kind, g->st), "load V");
            if (p->drift && il == hp->n_layer - 1) {
                KL(gpu_row_drift(kv->drift_d, kv->kc, g->k, p->cpos, N, NKV, g->st), "K drift");
                CK(cudaMemcpyAsync(kv->drift_host, kv->drift_d, (size_t)N * 4, cudaMemcpyDeviceToHost, g->st), "drift copy");
            }
            KL(gpu_scatter_rows(g->k, kv->kc, p->cpos, N, NKV, g->st), "scatter K");
            KL(gpu_scatter_rows(g->v, kv->vc, p->cpos, N, NKV, g->st), "scatter V");
        }
    }
    KL(gpu_attention(g->att, g->q, g->k, g->v, nq, T, H, HKV, HD, g->st), "attention");
    if (subset) {
        KL(gpu_gather_rows(g->hidden, g->x, g->rows, n_rows, E, g->st), "gather rows");
        CK(cudaMemcpyAsync(g->x, g->hidden, (size_t)n_rows * E * 4, cudaMemcpyDeviceToDevice, g->st), "copy rows");
    }
    gpu_act ao = make_act(g, g->att, nq, NQ);
    if (linear(g, &gl->wo, &ao, g->x, E, gl->bo, 1, e)) return UM_FAIL;
    KL(gpu_rmsnorm(g->xn, g->x, gl->ffn_norm, nq, E, hp->norm_eps, g->st), "rmsnorm");
    return ffn(g, il, nq, e);
}

static void drop_graph(gpu_impl *g) {
    if (g->graph) cudaGraphExecDestroy(g->graph);
    g->graph = NULL;
    g->graph_T = 0;
}

/* Layers 0 .. n_layer-2 of a dense model do the same work for every canvas of T tokens
 * (the row subset only touches the last layer), so they are captured once per T as a CUDA
 * graph and replayed. Returns the number of layers it ran (0: capture unavailable, the
 * caller runs them one by one; the first failure turns graphs off for this backend). */
static int run_graph(gpu_impl *g, int T, um_err *e) {
    const um_model *m = g->m;
    const int L = m->hp.n_layer - 1;
    if (g->graph_off || m->arch->moe || L < 1) return 0;
    if (!g->graph || g->graph_T != T) {
        drop_graph(g);
        cudaGraph_t graph = NULL;
        if (cudaStreamBeginCapture(g->st, cudaStreamCaptureModeThreadLocal) != cudaSuccess) {
            g->graph_off = true;
            cudaGetLastError();
            return 0;
        }
        um_err ce = { "" };
        int rc = UM_OK;
        const gpu_pass plain = { T, T, T, g->pos, g->rows, NULL, false, false };
        for (int il = 0; il < L && !rc; il++) rc = run_layer(g, il, &plain, &ce);
        cudaError_t err = cudaStreamEndCapture(g->st, &graph);
        if (!rc && err == cudaSuccess) err = cudaGraphInstantiate(&g->graph, graph, 0);
        if (graph) cudaGraphDestroy(graph);
        if (rc || err != cudaSuccess) {
            g->graph = NULL;
            g->graph_off = true;
            cudaGetLastError();
            return 0;
        }
        g->graph_T = T;
    }
    CK(cudaGraphLaunch(g->graph, g->st), "graph launch");
    return L;
}

/* The whole pass up to the logits of rows[0..n_rows) in g->logits (n_rows, n_vocab), on
 * the stream (not synchronised): a plain pass (kv NULL), a full pass that fills kv (act
 * NULL), or a partial pass over the active rows act[0..n_act) reading kv (backend.h). The
 * argument checks and their messages are forward.c's run_pass's. */
static int forward_logits(gpu_impl *g, um_kvcache *kv, const int32_t *tokens, int n_tokens, const int32_t *act,
                          int n_act, const int32_t *rows, int n_rows, bool drift, um_err *e) {
    const um_model *m = g->m;
    const um_hparams *hp = &m->hp;
    if (n_tokens <= 0 || n_tokens > g->T)
        return um_errf(e, "canvas of %d tokens exceeds the prepared maximum of %d", n_tokens, g->T);
    if (n_rows < 0 || n_rows > n_tokens) return um_errf(e, "bad row count %d", n_rows);
    for (int i = 0; i < n_rows; i++)
        if (rows[i] < 0 || rows[i] >= n_tokens) return um_errf(e, "row %d outside the canvas", rows[i]);
    if (kv && n_tokens > kv->max_tokens)
        return um_errf(e, "canvas of %d tokens exceeds the K/V cache's %d", n_tokens, kv->max_tokens);
    const int T = n_tokens, E = hp->n_embd;
    const bool partial = act != NULL;
    gpu_pass p = { T, T, n_rows, g->pos, g->rows, kv, partial, partial && drift };
    const int32_t *ctok = tokens;             /* tokens of the carried rows */
    const int32_t *hrow = rows;               /* head rows among the carried rows */
    if (partial) {
        if (kv->n_tokens != T)
            return um_errf(e, "the K/V cache holds no canvas of %d tokens (a full pass fills it)", T);
        if (n_act <= 0 || n_act > T) return um_errf(e, "bad active row count %d", n_act);
        for (int i = 0; i < T; i++) kv->slot[i] = -1;
        for (int i = 0; i < n_act; i++) {
            const int q = act[i];
            if (q < 0 || q >= T) return um_errf(e, "active row %d outside the canvas", q);
            if (kv->slot[q] >= 0) return um_errf(e, "active row %d given twice", q);
            kv->slot[q] = i;
            kv->tok_sel[i] = tokens[q];
            kv->pos_host[i] = q;
        }
        for (int i = 0; i < n_rows; i++) {
            if (kv->slot[rows[i]] < 0) return um_errf(e, "logits row %d is not an active row", rows[i]);
            kv->hrow[i] = kv->slot[rows[i]];
        }
        p.N = n_act;
        p.cpos = kv->pos_d;
        p.qpos = kv->qpos_d;
        ctok = kv->tok_sel;
        hrow = kv->hrow;
    } else if (kv) {
        kv->n_tokens = 0;                     /* holds no canvas until this pass completes */
    }
    const int N = p.N;

    if (ops_embed(NULL, g->x_host, m->tok_embd.data, (um_type)m->tok_embd.type, hp->n_vocab, E, ctok, N, e))
        return UM_FAIL;
    CK(cudaMemcpyAsync(g->x, g->x_host, (size_t)N * E * 4, cudaMemcpyHostToDevice, g->st), "upload embeddings");
    memcpy(g->rows_host, hrow, (size_t)n_rows * 4);
    if (n_rows) CK(cudaMemcpyAsync(g->rows, g->rows_host, (size_t)n_rows * 4, cudaMemcpyHostToDevice, g->st), "upload rows");
    if (partial) {
        /* the canvas positions of the carried rows and of the head rows (q's RoPE) */
        CK(cudaMemcpyAsync(kv->pos_d, kv->pos_host, (size_t)N * 4, cudaMemcpyHostToDevice, g->st), "upload positions");
        memcpy(kv->qpos_host, rows, (size_t)n_rows * 4);
        if (n_rows)
            CK(cudaMemcpyAsync(kv->qpos_d, kv->qpos_host, (size_t)n_rows * 4, cudaMemcpyHostToDevice, g->st), "upload positions");
    }

    /* the CUDA graph holds the plain pass's layers; cached passes launch layer by layer */
    const int done = kv ? 0 : run_graph(g, T, e);
    if (done < 0) return UM_FAIL;
    for (int il = done; il < hp->n_layer; il++)
        if (run_layer(g, il, &p, e)) return UM_FAIL;
    if (n_rows == 0) return UM_OK;
    if (n_rows < N) CK(cudaMemcpyAsync(g->hidden, g->x, (size_t)n_rows * E * 4, cudaMemcpyDeviceToDevice, g->st), "copy rows");
    else KL(gpu_gather_rows(g->hidden, g->x, g->rows, n_rows, E, g->st), "gather rows");
    KL(gpu_rmsnorm(g->hidden, g->hidden, g->output_norm, n_rows, E, hp->norm_eps, g->st), "output norm");
    gpu_act ah = make_act(g, g->hidden, n_rows, E);
    return linear(g, &g->output, &ah, g->logits, hp->n_vocab, g->output_b, 0, e);
}

static int gpu_run(void *impl, const int32_t *tokens, int n_tokens, const int32_t *rows, int n_rows, float *logits,
                   um_err *e) {
    gpu_impl *g = (gpu_impl *)impl;
    if (forward_logits(g, NULL, tokens, n_tokens, NULL, 0, rows, n_rows, false, e)) return UM_FAIL;
    if (n_rows)
        CK(cudaMemcpyAsync(logits, g->logits, (size_t)n_rows * g->m->hp.n_vocab * 4, cudaMemcpyDeviceToHost, g->st),
           "logits copy");
    CK(cudaStreamSynchronize(g->st), "forward pass");
    return UM_OK;
}

extern "C" int gpu_backend_run_stats(void *impl, const int32_t *tokens, int n_tokens, const int32_t *rows, int n_rows,
                                     float temp, gpu_row_stat *out, um_err *e) {
    gpu_impl *g = (gpu_impl *)impl;
    if (!(temp > 0)) return um_errf(e, "temperature %g: the row statistics need temp > 0", (double)temp);
    if (forward_logits(g, NULL, tokens, n_tokens, NULL, 0, rows, n_rows, false, e)) return UM_FAIL;
    if (n_rows) {
        const int V = g->m->hp.n_vocab;
        KL(gpu_row_stats(g->logits, n_rows, V, temp, g->st_arg, g->st_p1, g->st_p2, g->st_ent, GPU_STATS_TOPK,
                         g->st_topi, g->st_topp, g->st), "row stats");
        const size_t kb = (size_t)n_rows * GPU_STATS_TOPK * 4;
        CK(cudaMemcpyAsync(g->st_host + 4 * g->T, g->st_topi, kb, cudaMemcpyDeviceToHost, g->st), "stats copy");
        CK(cudaMemcpyAsync(g->st_host + (4 + GPU_STATS_TOPK) * g->T, g->st_topp, kb, cudaMemcpyDeviceToHost, g->st),
           "stats copy");
        CK(cudaMemcpyAsync(g->st_host, g->st_arg, (size_t)n_rows * 4, cudaMemcpyDeviceToHost, g->st), "stats copy");
        CK(cudaMemcpyAsync(g->st_host + g->T, g->st_p1, (size_t)n_rows * 4, cudaMemcpyDeviceToHost, g->st), "stats copy");
        CK(cudaMemcpyAsync(g->st_host + 2 * g->T, g->st_p2, (size_t)n_rows * 4, cudaMemcpyDeviceToHost, g->st), "stats copy");
        CK(cudaMemcpyAsync(g->st_host + 3 * g->T, g->st_ent, (size_t)n_rows * 4, cudaMemcpyDeviceToHost, g->st), "stats copy");
    }
    CK(cudaStreamSynchronize(g->st), "forward pass");
    for (int i = 0; i < n_rows; i++) {
        memcpy(&out[i].token, &g->st_host[i], 4);
        memcpy(&out[i].p_max, &g->st_host[g->T + i], 4);
        memcpy(&out[i].p_second, &g->st_host[2 * g->T + i], 4);
        memcpy(&out[i].entropy, &g->st_host[3 * g->T + i], 4);
        memcpy(out[i].top_id, &g->st_host[4 * g->T + (size_t)i * GPU_STATS_TOPK], 4 * GPU_STATS_TOPK);
        memcpy(out[i].top_p, &g->st_host[(4 + GPU_STATS_TOPK) * g->T + (size_t)i * GPU_STATS_TOPK], 4 * GPU_STATS_TOPK);
    }
    return UM_OK;
}

static int mem_check(uint64_t need, const char *what, um_err *e) {
    size_t free_b = 0, total_b = 0;
    CK(cudaMemGetInfo(&free_b, &total_b), "memory query");
    if (need + GPU_MEM_MARGIN > free_b)
        return um_errf(e, "needs %.2f GiB of GPU memory, %.2f free (%s)", (double)(need + GPU_MEM_MARGIN) / GIB,
                       (double)free_b / GIB, what);
    return UM_OK;
}

static int gpu_reserve(void *impl, int max_tokens, um_err *e) {
    gpu_impl *g = (gpu_impl *)impl;
    if (max_tokens <= g->T) return UM_OK;
    const gpu_dims nd = gpu_dims_for(g->m, max_tokens), od = g->d;
    const uint64_t grow = gpu_activation_bytes(&nd) - gpu_activation_bytes(&od);
    char what[96];
    snprintf(what, sizeof what, "activations for %d tokens", max_tokens);
    if (mem_check(grow, what, e)) return UM_FAIL;
    CK(cudaStreamSynchronize(g->st), "sync");
    return alloc_acts(g, max_tokens, e);
}

/* ------------------------------------------------------------------ K/V cache */

static int gpu_kv_new(void *impl, uint32_t type, int max_tokens, um_kvcache **out, um_err *e) {
    gpu_impl *g = (gpu_impl *)impl;
    *out = NULL;
    uint64_t need = 0;
    char what[96];
    snprintf(what, sizeof what, "a %s K/V cache for %d tokens", um_type_name(type), max_tokens);
    if (gpu_cache_plan(&g->m->hp, type, max_tokens, &need, e) || mem_check(need, what, e)) return UM_FAIL;
    return gpu_cache_new(&g->m->hp, type, max_tokens, out, e);
}

static int gpu_run_kv(void *impl, um_kvcache *kv, const int32_t *tokens, int n_tokens, const int32_t *active,
                      int n_active, const int32_t *rows, int n_rows, float *logits, float *drift, um_err *e) {
    gpu_impl *g = (gpu_impl *)impl;
    if (!kv) return um_errf(e, "run_kv: no K/V cache");
    if (kv->nkv != g->m->hp.n_head_kv * g->m->hp.head_dim || kv->n_layer != g->m->hp.n_layer)
        return um_errf(e, "run_kv: the K/V cache was made for another model");
    if (drift) *drift = 0;
    if (forward_logits(g, kv, tokens, n_tokens, active, n_active, rows, n_rows, drift != NULL, e)) return UM_FAIL;
    if (n_rows)
        CK(cudaMemcpyAsync(logits, g->logits, (size_t)n_rows * g->m->hp.n_vocab * 4, cudaMemcpyDeviceToHost, g->st),
           "logits copy");
    CK(cudaStreamSynchronize(g->st), "forward pass");
    if (!active) {
        memcpy(kv->tok, tokens, (size_t)n_tokens * sizeof *tokens);
        kv->n_tokens = n_tokens;
    } else if (drift) {
        /* mean over the active rows whose token is the one the cache was filled with */
        double sum = 0;
        int cnt = 0;
        for (int i = 0; i < n_active; i++)
            if (tokens[active[i]] == kv->tok[active[i]]) { sum += kv->drift_host[i]; cnt++; }
        *drift = cnt ? (float)(sum / cnt) : 0.0f;
    }
    return UM_OK;
}

static const char *gpu_kernel_name(void *impl) { return ((gpu_impl *)impl)->kname; }

static void gpu_free(void *impl) {
    gpu_impl *g = (gpu_impl *)impl;
    if (!g) return;
    if (g->st) cudaStreamSynchronize(g->st);
    drop_graph(g);
    free_acts(g);
    for (int i = 0; i < g->n_wbufs; i++) cudaFree(g->wbufs[i]);
    free(g->wbufs);
    if (g->layers) {
        for (int il = 0; il < g->m->hp.n_layer; il++) {
            free(g->layers[il].gate_x);
            free(g->layers[il].up_x);
            free(g->layers[il].down_x);
        }
    }
    free(g->layers);
    if (g->st) cudaStreamDestroy(g->st);
    free(g);
}

extern "C" int gpu_backend_open(um_backend *out, const um_model *m, int max_tokens, um_err *e) {
    memset(out, 0, sizeof *out);
    if (max_tokens <= 0) return um_errf(e, "max_tokens must be positive");
    int n = 0;
    cudaError_t err = cudaGetDeviceCount(&n);
    if (err != cudaSuccess || n == 0)
        return um_errf(e, "no CUDA device: %s", err != cudaSuccess ? cudaGetErrorString(err) : "none found");
    CK(cudaSetDevice(0), "set device");
    cudaDeviceProp p;
    CK(cudaGetDeviceProperties(&p, 0), "device properties");
    if (p.major < 8)
        return um_errf(e, "CUDA device %s is sm_%d%d: the CUDA backend needs sm_80 or newer (tensor-core mma.sync s8/bf16)",
                       p.name, p.major, p.minor);
    if (m->hp.head_dim > 256 || m->hp.head_dim % 2)
        return um_errf(e, "head_dim %d: the CUDA attention kernel handles even head dims up to 256", m->hp.head_dim);
    const char *pe = getenv("UNMASK_CUDA_PACK4");
    const bool pack4 = !(pe && !strcmp(pe, "0"));
    uint64_t wbytes = 0;
    if (!gpu_weight_plan(m, pack4, &wbytes, e)) return UM_FAIL;
    const gpu_dims d = gpu_dims_for(m, max_tokens);
    const uint64_t abytes = gpu_activation_bytes(&d);
    char what[400];
    snprintf(what, sizeof what, "%.2f GiB weights + %.2f GiB activations for %d tokens on %s", (double)wbytes / GIB,
             (double)abytes / GIB, max_tokens, p.name);
    if (mem_check(wbytes + abytes, what, e)) return UM_FAIL;

    gpu_impl *g = (gpu_impl *)calloc(1, sizeof *g);
    if (!g) return um_errf(e, "out of memory");
    g->m = m;
    g->pack4 = pack4;
    const char *me = getenv("UNMASK_CUDA_MOE");
    g->per_expert = me && !strcmp(me, "loop");
    const char *ge = getenv("UNMASK_CUDA_GRAPH");
    const char *se = getenv("UNMASK_CUDA_SYNC");
    g->sync_each = se && !strcmp(se, "1");
    g->graph_off = (ge && !strcmp(ge, "0")) || g->sync_each;
    snprintf(g->kname, sizeof g->kname, "sm_%d%d mma.s8", p.major, p.minor);
    err = cudaStreamCreateWithFlags(&g->st, cudaStreamNonBlocking);
    if (err == cudaSuccess) err = gpu_kernels_init(m->hp.head_dim);
    if (err != cudaSuccess) {
        um_errf(e, "CUDA init: %s", cudaGetErrorString(err));
        gpu_free(g);
        return UM_FAIL;
    }
    if (upload_weights(g, e) || alloc_acts(g, max_tokens, e)) {
        gpu_free(g);
        return UM_FAIL;
    }
    out->name = "cuda";
    out->impl = g;
    out->run = gpu_run;
    out->reserve = gpu_reserve;
    out->kernel_name = gpu_kernel_name;
    out->free = gpu_free;
    out->kv_new = gpu_kv_new;
    out->kv_free = gpu_cache_free;
    out->kv_bytes = gpu_cache_bytes;
    out->run_kv = gpu_run_kv;
    return UM_OK;
}
