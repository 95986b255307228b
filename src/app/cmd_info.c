/*
 * cmd_info: `unmask info FILE.gguf [--json]` describes a GGUF file: format, general
 * metadata, the architecture's hyper-parameters (every "<arch>.*" key), a tokenizer
 * summary, the tensor table, totals, whether unmask can run it (and if not, why) and, when it
 * can, which sampler decodes it (masked or uniform-state) and the key that says so.
 * A split model (gguf.h) is described as one file, opened from any of its parts, with its
 * parts listed (path, bytes, tensors whose data each holds) after the first line.
 * "Can run" is decided by the one verdict every decoding command loads its model through
 * (model_check_runnable: weights, architecture, hyper-parameters, every required tensor with
 * its shape and a type unmask computes with, a mask token, a tokenizer that loads and fits
 * the embedding, the file's own chat template parsing), and its reason is the one `unmask
 * generate` prints. The template a run naming none uses is chat_from_gguf's, the engine's.
 *
 * Text and JSON come from the same walk over the file; every string from the file is
 * hostile, so text output escapes control bytes (no terminal escapes get through) and
 * JSON output escapes per RFC 8259 and replaces invalid UTF-8 with U+FFFD.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "chat.h"
#include "cli.h"
#include "flags.h"
#include "genopts.h"
#include "esc.h"
#include "gguf.h"
#include "jsonw.h"
#include "model.h"
#include "quant.h"

static const struct { const char *key, *label; } token_ids[] = {
    { "tokenizer.ggml.bos_token_id",       "bos" },
    { "tokenizer.ggml.eos_token_id",       "eos" },
    { "tokenizer.ggml.eot_token_id",       "eot" },
    { "tokenizer.ggml.mask_token_id",      "mask" },
    { "tokenizer.ggml.padding_token_id",   "pad" },
    { "tokenizer.ggml.unknown_token_id",   "unk" },
};

/* ------------------------------------------------------------------ strings out */

/* Text: the first max bytes under the escaping rule (esc.h; '\' as "\\"), "..." after a cut. */
static void put_text(FILE *f, gguf_str s, uint64_t max) {
    size_t n = esc_cut(s.ptr, (size_t)s.len, (size_t)UM_MIN(max, s.len));
    esc_fput(f, s.ptr, n, ESC_BACKSLASH, 0);
    if (n < s.len) fputs("...", f);
}

static void put_json_str(FILE *f, gguf_str s) { jsonw_put_str(f, s.ptr, (size_t)s.len); }

static gguf_str cstr(const char *s) { return (gguf_str){ s, strlen(s) }; }

static void put_json_key(FILE *f, const char *key, bool *first) {
    fputs(*first ? "" : ", ", f);
    *first = false;
    put_json_str(f, cstr(key));
    fputs(": ", f);
}

/* ------------------------------------------------------------------ values out */

static void put_number(FILE *f, gguf_type t, uint64_t u, int64_t i, double d, bool json) {
    switch (t) {
    case GGUF_TYPE_FLOAT32: case GGUF_TYPE_FLOAT64:
        if (json && !isfinite(d)) fputs("null", f);
        else if (json) {                            /* the shortest text that reads back the same */
            char buf[40];
            if (t == GGUF_TYPE_FLOAT32) jsonw_fmt_float((float)d, buf, sizeof buf);
            else jsonw_fmt_double(d, buf, sizeof buf);
            fputs(buf, f);
        } else fprintf(f, "%g", d);
        break;
    case GGUF_TYPE_BOOL: fputs(u ? "true" : "false", f); break;
    case GGUF_TYPE_INT8: case GGUF_TYPE_INT16: case GGUF_TYPE_INT32: case GGUF_TYPE_INT64:
        fprintf(f, "%lld", (long long)i);
        break;
    default: fprintf(f, "%llu", (unsigned long long)u); break;
    }
}

static void put_elem(FILE *f, const gguf_kv *kv, uint64_t j, bool json) {
    if (kv->arr_type == GGUF_TYPE_STRING) {
        if (json) put_json_str(f, kv->arr_str[j]);
        else fputc('\'', f), put_text(f, kv->arr_str[j], 40), fputc('\'', f);
        return;
    }
    int64_t i = gguf_arr_i64(kv, j);
    put_number(f, kv->arr_type, (uint64_t)i, i, gguf_arr_f64(kv, j), json);
}

/* A value. Long arrays are summarized: text shows up to 8 elements, JSON up to 1024
 * numbers or 16 strings, else {"type": T, "n": N}. */
static void put_value(FILE *f, const gguf_kv *kv, bool json) {
    if (kv->type == GGUF_TYPE_STRING) {
        if (json) put_json_str(f, kv->v.s);
        else put_text(f, kv->v.s, 72);
        return;
    }
    if (kv->type != GGUF_TYPE_ARRAY) {
        put_number(f, kv->type, kv->v.u, kv->v.i, kv->v.f, json);
        return;
    }
    uint64_t limit = !json ? 8 : kv->arr_type == GGUF_TYPE_STRING ? 16 : 1024;
    if (kv->arr_n > limit) {
        if (json) fprintf(f, "{\"type\": \"%s\", \"n\": %llu}", gguf_type_name(kv->arr_type), (unsigned long long)kv->arr_n);
        else fprintf(f, "[%llu x %s]", (unsigned long long)kv->arr_n, gguf_type_name(kv->arr_type));
        return;
    }
    fputc('[', f);
    for (uint64_t j = 0; j < kv->arr_n; j++) {
        if (j) fputs(", ", f);
        put_elem(f, kv, j, json);
    }
    fputc(']', f);
}

/* ------------------------------------------------------------------ facts */

typedef struct info {
    const gguf_file *g;
    char      arch[64];          /* "" when general.architecture is missing or not a short string */
    uint64_t  params, bytes;     /* totals over tensors: elements, data bytes */
    char      why_not[512];      /* "" when unmask can run the file */
    const gguf_kv *tokens;       /* tokenizer.ggml.tokens, or NULL */
    bool      chat_ok;           /* chat_from_gguf succeeded (else `runnable` says why) */
    um_chat   chat;              /* the template a run naming none uses: chat_from_gguf's */
    const char *chat_from;       /* its choice.from: CHAT_GGUF_KEY (the file's own), ... NULL (none) */
    bool      uniform;           /* runnable and decoded uniform-state (model_gguf_uniform_state) */
    const char *decoding_from;   /* the key that decides the decoding: general.architecture or
                                    UM_UNIFORM_STATE_KEY; NULL when not runnable */
} info;

static void gather(info *in, const gguf_file *g) {
    memset(in, 0, sizeof *in);
    in->g = g;
    um_err e;
    if (gguf_get_str(g, "general.architecture", in->arch, sizeof in->arch, &e)) in->arch[0] = 0;
    if (gguf_get_arr(g, "tokenizer.ggml.tokens", GGUF_TYPE_STRING, &in->tokens, &e)) in->tokens = NULL;
    for (uint64_t i = 0; i < gguf_n_tensors(g); i++) {
        in->params += gguf_tensor_at(g, i)->n_elements;
        in->bytes += gguf_tensor_at(g, i)->size;
    }
    chat_choice c;
    in->chat_ok = chat_from_gguf(g, in->arch[0] ? in->arch : NULL, NULL, &c, &e) == UM_OK;
    if (in->chat_ok) {
        in->chat = c.chat;
        in->chat_from = c.from;
        chat_custom_free(c.own);
    }
    /* the very checks generate runs, through the same function, with the same reason */
    if (model_check_runnable(gguf_path(g), &e)) snprintf(in->why_not, sizeof in->why_not, "%s", e.msg);
    /* how it decodes, by the loader's own rule (it passed, so the key reads) */
    const um_arch *a = arch_find(in->arch);
    if (!in->why_not[0] && a && model_gguf_uniform_state(g, a, &in->uniform, &e) == UM_OK)
        in->decoding_from = in->uniform && !a->uniform_state ? UM_UNIFORM_STATE_KEY : "general.architecture";
}

static bool has_prefix(gguf_str s, const char *p) {
    size_t n = strlen(p);
    return s.len >= n && memcmp(s.ptr, p, n) == 0;
}

/* "<arch>." keys are hyper-parameters; general.* and tokenizer.* are shown elsewhere. */
static bool is_hparam(const info *in, const gguf_kv *kv) {
    size_t n = strlen(in->arch);
    return n && kv->key.len > n + 1 && !memcmp(kv->key.ptr, in->arch, n) && kv->key.ptr[n] == '.';
}

static void shape_str(const gguf_tensor *t, char *buf, size_t cap) {
    size_t o = 0;
    for (uint32_t d = 0; d < t->n_dims && o < cap; d++)
        o += (size_t)snprintf(buf + o, cap - o, d ? " x %llu" : "%llu", (unsigned long long)t->ne[d]);
}

/* ------------------------------------------------------------------ text */

static void print_text(const info *in, FILE *f) {
    const gguf_file *g = in->g;
    fprintf(f, "%s: GGUF v%u, %llu bytes, %llu keys, %llu tensors, alignment %llu\n", gguf_path(g), gguf_version(g),
            (unsigned long long)gguf_file_size(g), (unsigned long long)gguf_n_kv(g),
            (unsigned long long)gguf_n_tensors(g), (unsigned long long)gguf_alignment(g));
    if (gguf_n_parts(g) > 1) {
        fprintf(f, "\nparts (split model, %u files)\n", gguf_n_parts(g));
        for (uint32_t i = 0; i < gguf_n_parts(g); i++) {
            gguf_part p = gguf_part_at(g, i);
            fputs("  ", f);
            put_text(f, cstr(p.path), 200);
            fprintf(f, "  %llu bytes, %llu tensors\n", (unsigned long long)p.size, (unsigned long long)p.n_tensors);
        }
    }
    fprintf(f, "\ngeneral\n");
    for (uint64_t i = 0; i < gguf_n_kv(g); i++) {
        const gguf_kv *kv = gguf_kv_at(g, i);
        if (!has_prefix(kv->key, "general.")) continue;
        fputs("  ", f);
        gguf_str k = { kv->key.ptr + 8, kv->key.len - 8 };
        put_text(f, k, 40);
        fprintf(f, "%*s", (int)(k.len < 28 ? 28 - k.len : 1), "");
        put_value(f, kv, false);
        fputc('\n', f);
    }
    fputs("\nhyper-parameters (", f);
    put_text(f, cstr(in->arch[0] ? in->arch : "?"), sizeof in->arch);
    fputs(".*)\n", f);
    for (uint64_t i = 0; i < gguf_n_kv(g); i++) {
        const gguf_kv *kv = gguf_kv_at(g, i);
        if (!is_hparam(in, kv)) continue;
        size_t n = strlen(in->arch) + 1;
        gguf_str k = { kv->key.ptr + n, kv->key.len - n };
        fputs("  ", f);
        put_text(f, k, 60);
        fprintf(f, "%*s", (int)(k.len < 36 ? 36 - k.len : 1), "");
        put_value(f, kv, false);
        fputc('\n', f);
    }
    /* diffusion.* keys (shift_logits; DiffusionGemma's canvas_length and sampler settings) */
    bool any_diff = false;
    for (uint64_t i = 0; i < gguf_n_kv(g); i++) {
        const gguf_kv *kv = gguf_kv_at(g, i);
        if (!has_prefix(kv->key, "diffusion.")) continue;
        if (!any_diff) fprintf(f, "\ndiffusion\n");
        any_diff = true;
        gguf_str k = { kv->key.ptr + 10, kv->key.len - 10 };
        fputs("  ", f);
        put_text(f, k, 60);
        fprintf(f, "%*s", (int)(k.len < 36 ? 36 - k.len : 1), "");
        put_value(f, kv, false);
        fputc('\n', f);
    }
    fprintf(f, "\ntokenizer\n");
    const gguf_kv *kv;
    static const char *const strs[][2] = { { "tokenizer.ggml.model", "model" }, { "tokenizer.ggml.pre", "pre" } };
    for (int i = 0; i < 2; i++) {
        fprintf(f, "  %-18s", strs[i][1]);
        if ((kv = gguf_find_kv(g, strs[i][0])) && kv->type == GGUF_TYPE_STRING) put_text(f, kv->v.s, 60);
        else fputs("-", f);
        fputc('\n', f);
    }
    fprintf(f, "  %-18s%llu\n", "vocab size", (unsigned long long)(in->tokens ? in->tokens->arr_n : 0));
    if ((kv = gguf_find_kv(g, "tokenizer.ggml.merges")) && kv->type == GGUF_TYPE_ARRAY)
        fprintf(f, "  %-18s%llu\n", "merges", (unsigned long long)kv->arr_n);
    for (size_t i = 0; i < UM_ARRAY_LEN(token_ids); i++) {
        uint64_t id;
        if (gguf_get_u64(g, token_ids[i].key, &id, NULL)) continue;
        fprintf(f, "  %-18s%llu", token_ids[i].label, (unsigned long long)id);
        if (in->tokens && id < in->tokens->arr_n) fputs(" '", f), put_text(f, in->tokens->arr_str[id], 40), fputc('\'', f);
        else if (in->tokens) fputs(" (out of range)", f);
        fputc('\n', f);
    }
    kv = gguf_find_kv(g, "tokenizer.chat_template");
    if (kv && kv->type == GGUF_TYPE_STRING) fprintf(f, "  %-18syes (%llu bytes)\n", "chat template", (unsigned long long)kv->v.s.len);
    else fprintf(f, "  %-18sno\n", "chat template");
    fprintf(f, "  %-18s", "template used");
    if (!in->chat_ok) fputs(CHAT_GGUF_KEY " is invalid (runnable: no, below)\n", f);
    else if (!in->chat_from) fputs("none (no chat template in the file)\n", f);
    else if (!strcmp(in->chat_from, CHAT_GGUF_KEY))
        fprintf(f, "the file's own, " CHAT_GGUF_KEY " (%llu bytes)\n",
                (unsigned long long)gguf_find_kv(g, CHAT_GGUF_KEY)->v.s.len);
    else if (!strcmp(in->chat_from, "tokenizer.chat_template"))
        fprintf(f, "%s (recognised in tokenizer.chat_template)\n", chat_name(in->chat));
    else fprintf(f, "%s (the architecture's: tokenizer.chat_template is not one unmask renders)\n", chat_name(in->chat));

    if (gguf_n_tensors(g)) {
        int w = 4;
        for (uint64_t i = 0; i < gguf_n_tensors(g); i++) w = (int)UM_MAX((uint64_t)w, UM_MIN(gguf_tensor_at(g, i)->name.len, 48));
        fprintf(f, "\ntensors\n  %-*s  %-7s  %-24s %12s\n", w, "name", "type", "shape", "bytes");
        for (uint64_t i = 0; i < gguf_n_tensors(g); i++) {
            const gguf_tensor *t = gguf_tensor_at(g, i);
            char shape[96];
            shape_str(t, shape, sizeof shape);
            fputs("  ", f);
            put_text(f, t->name, 48);
            fprintf(f, "%*s  %-7s  %-24s %12llu\n", (int)(t->name.len < (uint64_t)w ? w - (int)t->name.len : 0), "",
                    um_type_name(t->type), shape, (unsigned long long)t->size);
        }
    }
    fprintf(f, "\ntotals\n  %-18s%llu\n  %-18s%llu\n", "parameters", (unsigned long long)in->params, "bytes",
            (unsigned long long)in->bytes);
    if (in->params)
        fprintf(f, "  %-18s%.4f (%.3f bits)\n", "bytes per weight", (double)in->bytes / (double)in->params,
                8.0 * (double)in->bytes / (double)in->params);
    fputs(in->why_not[0] ? "\nrunnable: no: " : "\nrunnable: yes", f);
    /* the reason generate gives, byte for byte (um_errf escaped what it quotes from the file) */
    esc_fput(f, in->why_not, strlen(in->why_not), 0, 0);
    fputc('\n', f);
    /* which sampler decodes it, and the key that says so: "uniform-state (general.architecture
       = diffusion-gemma)", "uniform-state (unmask.uniform_state = true)", "masked (...)" */
    if (in->decoding_from) {
        fprintf(f, "decoding: %s (%s = ", in->uniform ? "uniform-state" : "masked", in->decoding_from);
        if (strcmp(in->decoding_from, UM_UNIFORM_STATE_KEY)) put_text(f, cstr(in->arch), sizeof in->arch);
        else fputs("true", f);
        fputs(")\n", f);
    }
}

/* ------------------------------------------------------------------ JSON */

static void print_json(const info *in, FILE *f) {
    const gguf_file *g = in->g;
    fputs("{\"path\": ", f);
    put_json_str(f, cstr(gguf_path(g)));
    fprintf(f, ", \"version\": %u, \"file_size\": %llu, \"alignment\": %llu, \"n_kv\": %llu, \"n_tensors\": %llu",
            gguf_version(g), (unsigned long long)gguf_file_size(g), (unsigned long long)gguf_alignment(g),
            (unsigned long long)gguf_n_kv(g), (unsigned long long)gguf_n_tensors(g));
    fputs(",\n \"parts\": [", f);
    for (uint32_t i = 0; i < gguf_n_parts(g); i++) {
        gguf_part p = gguf_part_at(g, i);
        fputs(i ? ", {\"path\": " : "{\"path\": ", f);
        put_json_str(f, cstr(p.path));
        fprintf(f, ", \"bytes\": %llu, \"n_tensors\": %llu}", (unsigned long long)p.size, (unsigned long long)p.n_tensors);
    }
    fputs("],\n \"architecture\": ", f);
    if (in->arch[0]) put_json_str(f, cstr(in->arch));
    else fputs("null", f);

    fputs(",\n \"general\": {", f);
    bool first = true;
    for (uint64_t i = 0; i < gguf_n_kv(g); i++) {
        const gguf_kv *kv = gguf_kv_at(g, i);
        if (!has_prefix(kv->key, "general.")) continue;
        fputs(first ? "" : ", ", f);
        first = false;
        put_json_str(f, (gguf_str){ kv->key.ptr + 8, kv->key.len - 8 });
        fputs(": ", f);
        put_value(f, kv, true);
    }
    fputs("},\n \"hyperparameters\": {", f);
    first = true;
    for (uint64_t i = 0; i < gguf_n_kv(g); i++) {
        const gguf_kv *kv = gguf_kv_at(g, i);
        if (!is_hparam(in, kv)) continue;
        size_t n = strlen(in->arch) + 1;
        fputs(first ? "" : ", ", f);
        first = false;
        put_json_str(f, (gguf_str){ kv->key.ptr + n, kv->key.len - n });
        fputs(": ", f);
        put_value(f, kv, true);
    }
    fputs("},\n \"diffusion\": {", f);
    first = true;
    for (uint64_t i = 0; i < gguf_n_kv(g); i++) {
        const gguf_kv *dk = gguf_kv_at(g, i);
        if (!has_prefix(dk->key, "diffusion.")) continue;
        fputs(first ? "" : ", ", f);
        first = false;
        put_json_str(f, (gguf_str){ dk->key.ptr + 10, dk->key.len - 10 });
        fputs(": ", f);
        put_value(f, dk, true);
    }
    fputs("},\n \"tokenizer\": {", f);
    first = true;
    const gguf_kv *kv;
    static const char *const strs[][2] = { { "tokenizer.ggml.model", "model" }, { "tokenizer.ggml.pre", "pre" } };
    for (int i = 0; i < 2; i++) {
        put_json_key(f, strs[i][1], &first);
        if ((kv = gguf_find_kv(g, strs[i][0])) && kv->type == GGUF_TYPE_STRING) put_json_str(f, kv->v.s);
        else fputs("null", f);
    }
    put_json_key(f, "vocab_size", &first);
    fprintf(f, "%llu", (unsigned long long)(in->tokens ? in->tokens->arr_n : 0));
    kv = gguf_find_kv(g, "tokenizer.ggml.merges");
    put_json_key(f, "merges", &first);
    fprintf(f, "%llu", (unsigned long long)(kv && kv->type == GGUF_TYPE_ARRAY ? kv->arr_n : 0));
    for (size_t i = 0; i < UM_ARRAY_LEN(token_ids); i++) {
        uint64_t id;
        char key[32];
        snprintf(key, sizeof key, "%s_token_id", token_ids[i].label);
        put_json_key(f, key, &first);
        if (gguf_get_u64(g, token_ids[i].key, &id, NULL)) { fputs("null", f); continue; }
        fprintf(f, "%llu", (unsigned long long)id);
        if (in->tokens && id < in->tokens->arr_n) {
            snprintf(key, sizeof key, "%s_token", token_ids[i].label);
            put_json_key(f, key, &first);
            put_json_str(f, in->tokens->arr_str[id]);
        }
    }
    kv = gguf_find_kv(g, "tokenizer.chat_template");
    put_json_key(f, "chat_template", &first);
    fputs(kv && kv->type == GGUF_TYPE_STRING ? "true" : "false", f);
    put_json_key(f, "template", &first);            /* what a run naming none uses */
    if (!in->chat_ok) fputs("null", f);
    else put_json_str(f, cstr(in->chat_from && !strcmp(in->chat_from, CHAT_GGUF_KEY) ? CHAT_GGUF_KEY : chat_name(in->chat)));
    put_json_key(f, "template_from", &first);
    if (in->chat_ok && in->chat_from) put_json_str(f, cstr(in->chat_from));
    else fputs("null", f);

    fputs("},\n \"tensors\": [", f);
    for (uint64_t i = 0; i < gguf_n_tensors(g); i++) {
        const gguf_tensor *t = gguf_tensor_at(g, i);
        fputs(i ? ",\n  {\"name\": " : "\n  {\"name\": ", f);
        put_json_str(f, t->name);
        fprintf(f, ", \"type\": \"%s\", \"shape\": [", um_type_name(t->type));
        for (uint32_t d = 0; d < t->n_dims; d++) fprintf(f, d ? ", %llu" : "%llu", (unsigned long long)t->ne[d]);
        fprintf(f, "], \"bytes\": %llu, \"part\": %u, \"offset\": %llu}", (unsigned long long)t->size, t->part,
                (unsigned long long)t->offset);
    }
    fprintf(f, "],\n \"totals\": {\"params\": %llu, \"bytes\": %llu, \"bytes_per_weight\": ",
            (unsigned long long)in->params, (unsigned long long)in->bytes);
    if (in->params) fprintf(f, "%.6g, \"bits_per_weight\": %.6g}", (double)in->bytes / (double)in->params,
                            8.0 * (double)in->bytes / (double)in->params);
    else fputs("null, \"bits_per_weight\": null}", f);
    fprintf(f, ",\n \"runnable\": %s, \"why_not\": ", in->why_not[0] ? "false" : "true");
    if (in->why_not[0]) put_json_str(f, cstr(in->why_not));
    else fputs("null", f);
    fputs(", \"decoding\": ", f);
    if (in->decoding_from) fprintf(f, "\"%s\", \"decoding_from\": \"%s\"", in->uniform ? "uniform-state" : "masked",
                                   in->decoding_from);
    else fputs("null, \"decoding_from\": null", f);
    fputs("}\n", f);
}

/* ------------------------------------------------------------------ command */

enum { INFO_JSON = 1 };

static const um_flag info_rows[] = {
    { 0, "json", NULL, INFO_JSON, FLAG_CMD_INFO, FLAG_RUN, NULL, 0, "print the same as one JSON object" },
};

static int own_fn(void *ctx, const um_flag *f, const char *name, const char *v, const char *prog) {
    *(bool *)ctx = true;                            /* --json */
    return 0;
}

static void parser(flags_parser *p, flags_common *c, bool *json, const char **pos) {
    *p = (flags_parser){ .prog = "unmask info", .cmd = FLAG_CMD_INFO, .pos = pos, .max_pos = 1 };
    flags_add(p, flags_model_rows, flags_model_rows_n, flags_common_fn, c, NULL);
    flags_add(p, info_rows, (int)(sizeof info_rows / sizeof info_rows[0]), own_fn, json, NULL);
    flags_add(p, flags_misc_rows, flags_misc_rows_n, flags_common_fn, c, NULL);
}

static void usage(FILE *f) {
    flags_parser p;
    parser(&p, NULL, NULL, NULL);
    fprintf(f,
        "usage: unmask info [--json] FILE.gguf\n"
        "       unmask info [--json] (-m FILE | -M PRESET)\n"
        "\n"
        "Describe a GGUF file: format version, general metadata, the architecture's\n"
        "hyper-parameters, a tokenizer summary, every tensor (name, type, shape, bytes),\n"
        "totals, and whether unmask can run it (and if not, why). Any part of a split\n"
        "model (NAME-00001-of-0000N.gguf) describes the whole model and lists its parts.\n"
        "\n"
        "options:\n");
    flags_usage(f, &p);
}

int cmd_info(int argc, char **argv) {
    bool json = false;
    flags_common com = { 0 };
    const char *pos[1] = { NULL };
    flags_parser fp;
    parser(&fp, &com, &json, pos);
    int pr = flags_parse(&fp, argc, argv);
    if (pr == FLAGS_STOP) { usage(stdout); return 0; }
    if (pr) return pr;
    if (fp.n_pos + (com.model || com.preset) != 1) {
        if (fp.n_pos) fprintf(stderr, "unmask info: one file at a time (FILE.gguf or -m or -M)\n");
        else usage(stderr);
        return 2;
    }
    char path[2048];
    um_err pe = { "" };
    if (fp.n_pos) snprintf(path, sizeof path, "%s", pos[0]);
    else if (genopts_model_file(com.model, com.preset, path, sizeof path, &pe)) {
        fprintf(stderr, "unmask info: %s\n", pe.msg);
        return 1;
    }
    gguf_file *g;
    um_err e;
    if (gguf_open(&g, path, &e)) {
        fprintf(stderr, "unmask info: %s\n", e.msg);
        return 1;
    }
    info in;
    gather(&in, g);
    if (json) print_json(&in, stdout);
    else print_text(&in, stdout);
    gguf_close(g);
    return 0;                                       /* stdout is checked at exit (stdfd.h) */
}
