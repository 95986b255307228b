/*
 * forward_impl: what forward.c (weights, buffers, K/V cache, the pass of the LLaDA-like
 * architectures), forward_blocks.c (the building blocks and the dense/MoE FFN) and
 * forward_gemma.c (the Gemma 4 / DiffusionGemma pass) share: the forward state and the
 * blocks' declarations. Private to src/model.
 *
 * Every building block runs the fast path (packed weights, SIMD ops, the pool) or, for
 * f->ref, the reference path (row-by-row dequantized weights, double dot products, scalar
 * ops), and charges its time to a profile part with fw_mark.
 */
#ifndef UM_FORWARD_IMPL_H
#define UM_FORWARD_IMPL_H

#include "forward.h"

typedef struct fw_layer {
    um_matmul_weights wq, wk, wv, wo, gate, up, down, router;
    um_matmul_weights gate_sh, up_sh, down_sh;      /* shared experts, or empty */
    um_matmul_weights *gate_x, *up_x, *down_x;      /* (n_expert) */
} fw_layer;

struct um_forward {
    const um_model *m;
    um_pool        *pool;
    bool            ref;
    um_kernel       kernel;
    int             max_tokens;
    fw_layer       *layers;
    um_matmul_weights output;
    void          **owned;        /* prepared weight buffers */
    int             n_owned, cap_owned;
    uint64_t        weight_bytes, act_bytes;
    /* activations, all sized for max_tokens (T) */
    float   *x;                   /* (T, E) residual stream */
    float   *xn;                  /* (T, E) normed input / projection output */
    float   *q, *att;             /* (T, NQ) */
    float   *k, *v;               /* (T, NKV) */
    float   *ff_a, *ff_b;         /* (T * k_used, F) gate/up (dense: k_used = 1) */
    float   *gathered, *ex_out;   /* (T * k_used, E) MoE grouped rows in (reference only) / out */
    float   *router;              /* (T, n_expert) */
    int32_t *ex_id, *ex_off, *ex_tok, *ex_slot;
    float   *ex_w, *ex_roww;
    float   *hidden;              /* (T, E) rows for the head */
    int32_t *pos;                 /* (T) */
    int32_t *rows_sel;            /* (T) */
    /* partial passes (forward_run_kv) */
    float   *kc, *vc;             /* (T, NKV) K/V of the active rows, before they join k, v */
    int32_t *tok_sel;             /* (T) tokens of the active rows */
    int32_t *slot;                /* (T) canvas position -> index among the active rows, or -1 */
    int32_t *hrow;                /* (T) head rows as indices among the rows carried */
    int32_t *cpos;                /* (T) canvas positions of the rows carried */
    double  *wrow;                /* reference path: one dequantized row, (max n_in) */
    float   *wrow_f;
    void    *scratch;             /* matmul scratch */
    size_t   scratch_bytes;
    /* Gemma 4 / DiffusionGemma (forward_gemma.c); NULL for the other architectures */
    um_matmul_weights sc_gate, sc_up, sc_down;  /* self-conditioning MLP */
    float   *resid;               /* (T, E) the residual after attention (Gemma's attn_out) */
    float   *moe_out;             /* (T, E) routed experts' sum, then post_ffw_norm_2 of it */
    int32_t *kv_lo, *kv_hi;       /* (T) each query's key range for the region-aware mask */
    float   *sc_soft;             /* (T, E) self-conditioning soft embedding of the canvas rows */
    float   *sc_p;                /* (n_threads, n_vocab) one probability row per thread */
    double  *sc_colsum;           /* (E) sum over the vocabulary of the embedding rows (top-k tail) */
    bool     sc_colsum_ok;        /* sc_colsum computed (once, on first use) */
    uint8_t *sc_exact;            /* (T) the row's self-conditioning went exact (UM_SC_AUTO) */
    int      sc_exact_rows;       /* their count in the last pass */
    /* the fast path's exact product, blocked over the vocabulary (forward_gemma.c) */
    float   *sc_mx, *sc_inv;      /* (T) each row's softmax max and 1/sum */
    int32_t *sc_rows;             /* (T) the canvas rows that go exact */
    float   *sc_pb;               /* (T, UM_SC_BLOCK) their probabilities of one vocabulary block */
    float   *sc_eb;               /* (UM_SC_BLOCK, E) that block's embedding rows as floats */
    float   *sc_y;                /* (T, E) their sums so far */
    uint32_t *sc_pb16;            /* um_selfcond.bf16: (T, UM_SC_BLOCK / 2) the probabilities in BF16 pairs */
    uint32_t *sc_eb16;            /* and the block's embedding rows, ops_bf16_pack_b's tiles */
    /* the prompt's K/V (forward_dg_prompt): layer il's rows at pc_k + max_tokens * pc_off[il] */
    float   *pc_k, *pc_v;         /* (max_tokens, sum over layers of n_head_kv * head_dim) */
    int64_t *pc_off;              /* (n_layer + 1) floats of one row before layer il */
    int32_t *pc_tok;              /* (max_tokens) the prompt they hold */
    int      pc_n;                /* its length; -1: none */
    int      pc_cap;              /* max_tokens they were made for (0: not made) */
    uint64_t pc_bytes;            /* K and V */
    um_fw_profile prof;           /* where the passes since the last reset spent their time */
    double   t_mark;              /* um_now() at the end of the last timed part */
    um_pool_stats pool_at_start;  /* the pool's counters when the pass began */
};

/* Vocabulary rows per block of the exact self-conditioning product (fast path). */
#define UM_SC_BLOCK 256

/* Whether layer il runs the MoE FFN (MoE models may lead with dense layers). */
static inline bool layer_moe(const um_model *m, int il) {
    return m->arch->moe && il >= m->hp.n_layer_dense_lead;
}


/* ------------------------------------------------------------------ building blocks (forward_blocks.c) */

/* A pass's profile: begin counts the pass and starts the clock; end adds the pool's
 * dispatches and hand-offs since begin. */
void fw_prof_begin(um_forward *f);
void fw_prof_end(um_forward *f);
/* Charge the time since the last mark to part p. */
void fw_mark(um_forward *f, um_fw_part p);
/* y (n, n_out) = x (n, n_in) W^T (+ bias); mw: the prepared weights (fast path), w: the file's. */
void fw_linear(um_forward *f, const um_matmul_weights *mw, const um_weight *w, const float *x,
               int64_t n, float *y, um_vec bias);
/* The grouped expert products of an MoE layer (fast paths only), rows through f->ex_slot. */
void fw_grouped(um_forward *f, const um_matmul_group *g, int n_g, int n_expert, const float *x, int64_t n, int k);
void fw_rmsnorm(um_forward *f, float *y, const float *x, const float *w, int64_t rows, int n);
void fw_add(um_forward *f, float *y, const float *a, const float *b, int64_t n);
void fw_swiglu(um_forward *f, float *y, const float *g, const float *u, int64_t n);
void fw_gather(float *dst, const float *src, const int32_t *rows, int64_t n, int64_t width);
/* Dense or MoE SwiGLU feed-forward of layer il on xn (n, E), added into x (n, E). */
int  fw_ffn(um_forward *f, int il, float *x, const float *xn, int n, um_err *e);

/* ------------------------------------------------------------------ Gemma 4 (forward_gemma.c) */

/* The region-aware pass over [prompt | canvas] (forward.h, forward_run_dg): every row
 * (FWG_FULL); the prompt alone, storing its K/V (FWG_PROMPT, forward_dg_prompt); the canvas
 * rows alone over the stored prompt K/V (FWG_CANVAS, forward_run_dg_cached). */
typedef enum fwg_mode { FWG_FULL = 0, FWG_PROMPT, FWG_CANVAS } fwg_mode;
int  fwg_run(um_forward *f, const int32_t *tokens, int n_tokens, int n_prompt, const um_selfcond *sc,
             const int32_t *rows, int n_rows, float *logits, fwg_mode mode, um_err *e);
/* Free the prompt store (forward_free, and when the buffers are remade). */
void fwg_free_prompt(um_forward *f);

#endif
