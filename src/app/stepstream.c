/*
 * stepstream: the --stream-json lines (see stepstream.h; the schema is docs/stream.md).
 */
#include "stepstream.h"

#include <stdint.h>

#include "genopts.h"
#include "jsonw.h"
#include "snapshot.h"

/* "text" (the token's bytes; invalid UTF-8 as U+FFFD) and, when the bytes alone are not
 * valid UTF-8 (a byte-level piece of a longer character), "hex": the exact bytes. */
static void put_piece(jsonw *j, const um_engine *en, int32_t token) {
    size_t len = 0;
    const char *b = (const char *)engine_token_bytes(en, token, &len);
    if (!b) len = 0;
    jsonw_key(j, "text"); jsonw_strn(j, b ? b : "", len);
    if (len && !jsonw_utf8_valid(b, len)) {
        char hex[2 * 64 + 1];
        size_t n = len < 64 ? len : 64;          /* pieces are short; a longer one is cut */
        for (size_t i = 0; i < n; i++) snprintf(hex + 2 * i, 3, "%02x", (unsigned char)b[i]);
        jsonw_key(j, "hex"); jsonw_strn(j, hex, 2 * n);
    }
}

static void end_line(stepstream *ss) {
    fputc('\n', ss->f);
    if (fflush(ss->f) != 0 || ferror(ss->f)) ss->failed = true;
}

void stepstream_start(stepstream *ss, FILE *f, um_engine *en, const um_settings *s, const char *prompt,
                      double load_s) {
    ss->f = f;
    ss->en = en;
    ss->t0 = um_now();
    ss->failed = false;
    um_engine_info info;
    engine_get_info(en, &info);
    um_snapshot *s0 = engine_snapshot(en);
    jsonw j;
    jsonw_init(&j, f);
    jsonw_obj_begin(&j);
    jsonw_key(&j, "type"); jsonw_str(&j, "start");
    jsonw_key(&j, "version"); jsonw_int(&j, STEPSTREAM_VERSION);
    jsonw_key(&j, "model"); jsonw_str(&j, info.name);
    jsonw_key(&j, "arch"); jsonw_str(&j, info.arch);
    jsonw_key(&j, "quant"); jsonw_str(&j, info.quant);
    jsonw_key(&j, "backend"); jsonw_str(&j, info.backend);
    jsonw_key(&j, "kernel"); jsonw_str(&j, info.isa);
    jsonw_key(&j, "threads"); jsonw_int(&j, info.n_threads);
    jsonw_key(&j, "n_vocab"); jsonw_int(&j, info.n_vocab);
    jsonw_key(&j, "mask_id"); jsonw_int(&j, info.mask_id);
    jsonw_key(&j, "eos_id"); jsonw_int(&j, info.eos_id);
    jsonw_key(&j, "settings"); genopts_json_settings(&j, s);
    jsonw_key(&j, "prompt"); jsonw_str(&j, prompt);
    jsonw_key(&j, "n_prompt"); jsonw_int(&j, s0->n_prompt);
    jsonw_key(&j, "n_gen"); jsonw_int(&j, s0->n_canvas - s0->n_prompt);
    jsonw_key(&j, "n_canvas"); jsonw_int(&j, s0->n_canvas);
    jsonw_key(&j, "n_steps"); jsonw_int(&j, s0->n_steps);
    jsonw_key(&j, "n_blocks"); jsonw_int(&j, s0->n_blocks);
    jsonw_key(&j, "prompt_tokens"); jsonw_arr_begin(&j);
    for (int32_t i = 0; i < s0->n_prompt; i++) {
        jsonw_obj_begin(&j);
        jsonw_key(&j, "token"); jsonw_int(&j, s0->pos[i].token);
        put_piece(&j, en, s0->pos[i].token);
        jsonw_obj_end(&j);
    }
    jsonw_arr_end(&j);
    jsonw_key(&j, "load_s"); jsonw_num(&j, load_s);
    jsonw_obj_end(&j);
    snapshot_unref(s0);
    end_line(ss);
}

void stepstream_step(stepstream *ss, const um_snapshot *sn) {
    if (ss->failed) return;
    jsonw j;
    jsonw_init(&j, ss->f);
    jsonw_obj_begin(&j);
    jsonw_key(&j, "type"); jsonw_str(&j, "step");
    jsonw_key(&j, "step"); jsonw_int(&j, sn->step);
    jsonw_key(&j, "n_steps"); jsonw_int(&j, sn->n_steps);
    jsonw_key(&j, "block"); jsonw_int(&j, sn->block);
    jsonw_key(&j, "n_blocks"); jsonw_int(&j, sn->n_blocks);
    jsonw_key(&j, "planned"); jsonw_int(&j, sn->planned);
    jsonw_key(&j, "masks_left"); jsonw_int(&j, sn->masks_left);
    jsonw_key(&j, "forward_passes"); jsonw_int(&j, (long long)engine_forward_passes(ss->en));
    jsonw_key(&j, "forward_ms"); jsonw_num(&j, sn->forward_ms);
    jsonw_key(&j, "sample_ms"); jsonw_num(&j, sn->sample_ms);
    jsonw_key(&j, "elapsed_s"); jsonw_num(&j, um_now() - ss->t0);
    jsonw_key(&j, "done"); jsonw_bool(&j, sn->done);
    jsonw_key(&j, "commits"); jsonw_arr_begin(&j);
    for (int32_t c = 0; c < sn->n_committed; c++) {
        const int32_t p = sn->committed[c];
        const um_pos *ps = &sn->pos[p];
        jsonw_obj_begin(&j);
        jsonw_key(&j, "pos"); jsonw_int(&j, p);
        jsonw_key(&j, "token"); jsonw_int(&j, ps->token);
        put_piece(&j, ss->en, ps->token);
        jsonw_key(&j, "conf"); jsonw_f32(&j, ps->commit_conf);
        jsonw_key(&j, "entropy"); jsonw_f32(&j, ps->has_view ? ps->entropy : 0.0f);
        jsonw_key(&j, "top"); jsonw_arr_begin(&j);
        for (int k = 0; ps->has_view && k < UM_TOPK && ps->top[k].prob > 0; k++) {
            jsonw_obj_begin(&j);
            jsonw_key(&j, "token"); jsonw_int(&j, ps->top[k].token);
            put_piece(&j, ss->en, ps->top[k].token);
            jsonw_key(&j, "prob"); jsonw_f32(&j, ps->top[k].prob);
            jsonw_obj_end(&j);
        }
        jsonw_arr_end(&j);
        jsonw_obj_end(&j);
    }
    jsonw_arr_end(&j);
    /* token editing: committed tokens replaced at this step (from the old token to the new) */
    jsonw_key(&j, "edits"); jsonw_arr_begin(&j);
    for (int32_t p = sn->n_prompt; p < sn->n_canvas; p++) {
        const um_pos *ps = &sn->pos[p];
        if (!ps->edited) continue;
        jsonw_obj_begin(&j);
        jsonw_key(&j, "pos"); jsonw_int(&j, p);
        jsonw_key(&j, "from"); jsonw_int(&j, ps->edit_from);
        jsonw_key(&j, "token"); jsonw_int(&j, ps->token);
        put_piece(&j, ss->en, ps->token);
        jsonw_key(&j, "conf"); jsonw_f32(&j, ps->commit_conf);
        jsonw_obj_end(&j);
    }
    jsonw_arr_end(&j);
    /* --stop-at-eos: positions set to end-of-text at this step without being committed */
    jsonw_key(&j, "filled"); jsonw_arr_begin(&j);
    for (int32_t p = sn->n_prompt; p < sn->n_canvas; p++) {
        const um_pos *ps = &sn->pos[p];
        if (ps->masked || ps->commit_step != sn->step) continue;
        bool committed = false;
        for (int32_t c = 0; c < sn->n_committed && !committed; c++) committed = sn->committed[c] == p;
        if (!committed) jsonw_int(&j, p);
    }
    jsonw_arr_end(&j);
    if (sn->us.on) { jsonw_key(&j, "uniform"); stepstream_json_uniform(&j, sn); }
    jsonw_obj_end(&j);
    end_line(ss);
}

void stepstream_json_uniform(jsonw *j, const um_snapshot *sn) {
    const um_us_view *u = &sn->us;
    jsonw_obj_begin(j);
    jsonw_key(j, "start"); jsonw_int(j, u->start);
    jsonw_key(j, "end"); jsonw_int(j, u->end);
    jsonw_key(j, "canvas_step"); jsonw_int(j, u->canvas_step);
    jsonw_key(j, "temperature"); jsonw_num(j, u->temperature);
    jsonw_key(j, "entropy_bound"); jsonw_num(j, u->entropy_bound);
    jsonw_key(j, "accepted"); jsonw_int(j, u->accepted);
    jsonw_key(j, "held"); jsonw_int(j, u->held);
    jsonw_key(j, "stability"); jsonw_int(j, u->stability);
    jsonw_key(j, "mean_entropy"); jsonw_num(j, u->mean_entropy);
    jsonw_key(j, "confidence"); jsonw_num(j, u->confidence);
    jsonw_key(j, "self_cond"); jsonw_bool(j, u->self_cond);
    jsonw_key(j, "sc_exact_rows"); jsonw_int(j, u->sc_exact_rows);
    jsonw_key(j, "sc_product"); jsonw_str(j, u->sc_bf16 ? "bf16" : "f32");
    jsonw_key(j, "stopped"); jsonw_bool(j, u->stopped);
    jsonw_key(j, "stable"); jsonw_bool(j, u->stable);
    if (u->stopped) { jsonw_key(j, "cut"); jsonw_int(j, u->cut); }
    /* the canvas, one entry per position in each array */
    const int32_t lo = u->start, hi = u->end < sn->n_canvas ? u->end : sn->n_canvas;
    jsonw_key(j, "kind"); jsonw_arr_begin(j);
    for (int32_t p = lo; p < hi; p++) jsonw_str(j, engine_us_kind_name((um_us_kind)sn->pos[p].us));
    jsonw_arr_end(j);
    jsonw_key(j, "token"); jsonw_arr_begin(j);
    for (int32_t p = lo; p < hi; p++) jsonw_int(j, sn->pos[p].token);
    jsonw_arr_end(j);
    jsonw_key(j, "held"); jsonw_arr_begin(j);
    for (int32_t p = lo; p < hi; p++) jsonw_int(j, sn->pos[p].held);
    jsonw_arr_end(j);
    jsonw_key(j, "entropy"); jsonw_arr_begin(j);
    for (int32_t p = lo; p < hi; p++) jsonw_num(j, sn->pos[p].has_view ? sn->pos[p].entropy : 0.0);
    jsonw_arr_end(j);
    jsonw_obj_end(j);
}

void stepstream_done(stepstream *ss, const um_snapshot *last, const char *answer) {
    if (ss->failed) return;
    const int64_t passes = engine_forward_passes(ss->en);
    const int32_t n_gen = last->n_canvas - last->n_prompt;
    jsonw j;
    jsonw_init(&j, ss->f);
    jsonw_obj_begin(&j);
    jsonw_key(&j, "type"); jsonw_str(&j, "done");
    jsonw_key(&j, "steps_run"); jsonw_int(&j, last->step);
    jsonw_key(&j, "forward_passes"); jsonw_int(&j, (long long)passes);
    jsonw_key(&j, "tokens_per_pass"); jsonw_num(&j, passes > 0 ? (double)n_gen / (double)passes : 0.0);
    jsonw_key(&j, "generate_s"); jsonw_num(&j, um_now() - ss->t0);
    jsonw_key(&j, "tokens"); jsonw_arr_begin(&j);
    for (int32_t i = 0; i < last->n_canvas; i++) jsonw_int(&j, last->pos[i].token);
    jsonw_arr_end(&j);
    jsonw_key(&j, "answer"); jsonw_str(&j, answer ? answer : "");
    jsonw_obj_end(&j);
    end_line(ss);
}

void stepstream_error(stepstream *ss, const char *msg) {
    if (ss->failed || !ss->f) return;
    jsonw j;
    jsonw_init(&j, ss->f);
    jsonw_obj_begin(&j);
    jsonw_key(&j, "type"); jsonw_str(&j, "error");
    jsonw_key(&j, "message"); jsonw_str(&j, msg);
    jsonw_obj_end(&j);
    end_line(ss);
}

bool stepstream_failed(const stepstream *ss) { return ss->failed; }
