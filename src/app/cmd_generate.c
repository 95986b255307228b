/*
 * cmd_generate: `unmask generate` runs a whole generation without the visualizer and prints
 * the answer on stdout; load and step progress with timings go to stderr; --json prints the
 * tokens, per-step commits and timings as one JSON object instead: "steps_run" is the number
 * of steps that ran (one entry each in "steps"), which the adaptive schedules and
 * --stop-at-eos make smaller than settings.steps_requested; "forward_passes" and
 * "rows_computed" count the passes and the canvas rows they ran through the layers (per step
 * too, with "cache_refreshed"), "cache_bytes" the K/V caches held. --stream-json writes JSON
 * lines while the run goes instead (src/app/stepstream.h, docs/stream.md): a start line, one
 * line per step as it ran, and a done line with the answer (or an error line).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "esc.h"
#include "engine.h"
#include "snapshot.h"
#include "flags.h"
#include "genopts.h"
#include "jsonw.h"
#include "stdfd.h"
#include "stepstream.h"

enum { GEN_JSON = 1, GEN_STREAM_JSON };

static const um_flag gen_own_rows[] = {
    { .help = "output:", .cmds = FLAG_CMD_GENERATE },
    { 0, "json", NULL, GEN_JSON, FLAG_CMD_GENERATE, FLAG_RUN, NULL, 0, "print tokens, per-step commits and timings as JSON" },
    { 0, "stream-json", NULL, GEN_STREAM_JSON, FLAG_CMD_GENERATE, FLAG_RUN, NULL, 0,
      "print one JSON line per step as it runs, flushed (docs/stream.md)" },
};

typedef struct gen_own { um_genopts *g; bool stream; } gen_own;

static int own_fn(void *ctx, const um_flag *f, const char *name, const char *v, const char *prog) {
    gen_own *o = ctx;
    if (f->id == GEN_JSON) o->g->json = true;
    else if (f->id == GEN_STREAM_JSON) o->stream = true;
    return 0;
}

/* The command's parser: the generation rows, its own, -q and -h; usage prints the same. */
static void parser(flags_parser *p, um_genopts *g, gen_own *o, flags_common *c) {
    *p = (flags_parser){ .prog = "unmask generate", .cmd = FLAG_CMD_GENERATE };
    genopts_add(p, g);
    flags_add(p, gen_own_rows, (int)(sizeof gen_own_rows / sizeof gen_own_rows[0]), own_fn, o, NULL);
    flags_add(p, flags_misc_rows, flags_misc_rows_n, flags_common_fn, c, NULL);
}

static void usage(FILE *f) {
    flags_parser p;
    parser(&p, NULL, NULL, NULL);
    fprintf(f, "usage: unmask generate [-m FILE | -M PRESET] -p PROMPT [options]\n\n"
               "Run a whole denoising generation and print the answer.\n\n");
    flags_usage(f, &p);
    genopts_usage_numbers(f);
}

/* Per step: progress on stderr, and with --json every snapshot that ran kept for the step
 * list (however many: a timestep schedule may run more steps than tokens). */
typedef struct step_ctx {
    bool          quiet, keep;
    bool          tty;       /* stderr is a terminal: the step line is redrawn with '\r' (else one line each) */
    um_snapshot **hist;      /* (cap) grown as needed */
    int           n_hist, cap;
    bool          oom;       /* a snapshot could not be kept */
    double        fwd, smp;  /* ms summed over the steps */
    stepstream   *stream;    /* --stream-json, else NULL */
} step_ctx;

static void on_step(void *ctx, um_snapshot *sn) {
    step_ctx *c = ctx;
    c->fwd += sn->forward_ms;
    c->smp += sn->sample_ms;
    /* redrawn on a terminal, a line each into a file; uniform-state: the rule's numbers */
    if (!c->quiet && sn->us.on)
        fprintf(stderr, "%sstep %d/%d  canvas %d/%d  t %.3f  accepted %d  held %d/%d  H %.4f/%.4f  %.0f ms/step%s",
                c->tty ? "\r" : "", sn->step, sn->n_steps, sn->block + 1, sn->n_blocks, (double)sn->us.temperature,
                sn->us.accepted, sn->us.held, sn->us.stability, (double)sn->us.mean_entropy, (double)sn->us.confidence,
                sn->forward_ms + sn->sample_ms, c->tty ? "   " : "\n");
    else if (!c->quiet)
        fprintf(stderr, "%sstep %d/%d  block %d/%d  masks %d  %.0f ms/step%s", c->tty ? "\r" : "", sn->step, sn->n_steps,
                sn->block + 1, sn->n_blocks, sn->masks_left, sn->forward_ms + sn->sample_ms, c->tty ? "   " : "\n");
    if (c->stream) stepstream_step(c->stream, sn);
    if (c->keep && c->n_hist == c->cap) {
        int cap = c->cap ? 2 * c->cap : 64;
        um_snapshot **nh = realloc(c->hist, (size_t)cap * sizeof *nh);
        if (nh) { c->hist = nh; c->cap = cap; }
        else c->oom = true;
    }
    if (c->keep && c->n_hist < c->cap) c->hist[c->n_hist++] = sn;
    else snapshot_unref(sn);
}

/* engine_run with a way out: a --stream-json line that did not arrive ends the run at once
 * (nobody is reading the rest). Returns the steps run, or -1 with e set. */
static int run_steps(um_engine *en, step_ctx *c, um_err *e) {
    int steps = 0;
    while (!engine_done(en)) {
        int r = engine_step(en, e);
        if (r < 0) return -1;
        if (r == 0) break;
        steps++;
        on_step(c, engine_snapshot(en));
        if (c->stream && stepstream_failed(c->stream)) {
            if (!stdfd_check(e)) um_errf(e, "writing to standard output failed");
            return -1;
        }
    }
    return steps;
}

int cmd_generate(int argc, char **argv) {
    um_genopts g;
    genopts_init(&g);
    gen_own own = { .g = &g };
    flags_common com = { 0 };
    flags_parser fp;
    parser(&fp, &g, &own, &com);
    int pr = flags_parse(&fp, argc, argv);
    if (pr == FLAGS_STOP) { usage(stdout); return 0; }
    if (pr) return pr;
    bool quiet = com.quiet, stream = own.stream;
    const bool tty = isatty(STDERR_FILENO);         /* else no '\r': a log gets whole lines */
    if (stream && g.json) { fprintf(stderr, "unmask generate: --json and --stream-json both write stdout; give one\n"); return 2; }
    um_err re = { "" };
    if (genopts_resolve(&g, &re)) { fprintf(stderr, "unmask generate: %s\n", re.msg); return 1; }
    if (!g.prompt) { fprintf(stderr, "unmask generate: -p PROMPT is required unless the preset has a prompt (see --help)\n"); return 2; }
    if (stdfd_writable(&re)) { fprintf(stderr, "unmask generate: %s\n", re.msg); return 1; }   /* before the long part */
    g.eng.progress = genopts_progress_stderr;
    g.eng.progress_ctx = &quiet;
    g.eng.warn = genopts_warn_stderr;
    g.eng.warn_ctx = (void *)"unmask generate";
    um_err e = { "" };
    um_engine *en = NULL;
    um_snapshot **hist = NULL;
    int rc = 1, n_hist = 0;
    stepstream ss = { .f = stream ? stdout : NULL };
    double t0 = um_now();
    if (engine_open(&en, &g.eng, &e)) goto out;
    double t_load = um_now() - t0;
    um_settings s;
    engine_default_settings(en, &s);
    genopts_apply(&g, &s);
    if (engine_start(en, g.prompt, &s, &e)) goto out;
    um_engine_info info;
    engine_get_info(en, &info);
    if (!quiet) {
        char name[4 * sizeof info.name];            /* the file's general.name: escaped (esc.h) */
        esc_str(name, sizeof name, info.name, strlen(info.name), 0, 0);
        fprintf(stderr, "model: %s (%s, %s), kernel %s, %d threads, load %.2f s\n", name, info.arch, info.quant,
                info.isa, info.n_threads, t_load);
    }
    if (stream) stepstream_start(&ss, stdout, en, &s, g.prompt, t_load);
    double t_gen = um_now();
    step_ctx sc = { .quiet = quiet, .tty = tty, .keep = g.json, .stream = stream ? &ss : NULL };
    int ran = run_steps(en, &sc, &e);
    hist = sc.hist;
    n_hist = sc.n_hist;
    if (ran < 0) goto out;
    if (sc.oom) { snprintf(e.msg, sizeof e.msg, "out of memory keeping the step list"); goto out; }
    double fwd = sc.fwd, smp = sc.smp;
    double t_total = um_now() - t_gen;
    um_snapshot *last = engine_snapshot(en);
    if (!quiet) {
        int steps = last->step;
        fprintf(stderr, "%sdone: %d steps in %.2f s (%.0f ms/step: forward %.0f, sampling %.0f), %.1f tokens/s\n", tty ? "\r" : "", steps,
                t_total, steps ? t_total * 1e3 / steps : 0, steps ? fwd / steps : 0, steps ? smp / steps : 0,
                t_total > 0 ? (last->n_canvas - last->n_prompt) / t_total : 0);
    }
    char *answer = engine_answer(en, last);
    if (stream) {
        stepstream_done(&ss, last, answer);
        if (stepstream_failed(&ss)) {
            free(answer);
            snapshot_unref(last);
            if (!stdfd_check(&e)) um_errf(&e, "writing to standard output failed");
            goto out;
        }
    } else if (!g.json) {
        /* the answer is made of the file's token pieces: on a terminal they pass the escaping
         * rule (lines and tabs kept); into a pipe or a file they are the exact bytes */
        const char *text = answer ? answer : "";
        if (isatty(STDOUT_FILENO)) esc_fput(stdout, text, strlen(text), ESC_KEEP_LINES, 0);
        else fputs(text, stdout);
        putchar('\n');
    } else {
        jsonw j;
        jsonw_init(&j, stdout);
        jsonw_obj_begin(&j);
        jsonw_key(&j, "model"); jsonw_str(&j, info.name);
        jsonw_key(&j, "arch"); jsonw_str(&j, info.arch);
        jsonw_key(&j, "kernel"); jsonw_str(&j, info.isa);
        jsonw_key(&j, "threads"); jsonw_int(&j, info.n_threads);
        jsonw_key(&j, "settings"); genopts_json_settings(&j, &s);
        jsonw_key(&j, "steps_run"); jsonw_int(&j, last->step);   /* fewer when the run ends early */
        jsonw_key(&j, "forward_passes"); jsonw_int(&j, engine_forward_passes(en));
        jsonw_key(&j, "rows_computed"); jsonw_int(&j, engine_rows_computed(en));
        jsonw_key(&j, "cache_bytes"); jsonw_int(&j, (long long)engine_cache_bytes(en));
        jsonw_key(&j, "n_prompt"); jsonw_int(&j, last->n_prompt);
        jsonw_key(&j, "tokens"); jsonw_arr_begin(&j);
        for (int i = 0; i < last->n_canvas; i++) jsonw_int(&j, last->pos[i].token);
        jsonw_arr_end(&j);
        jsonw_key(&j, "answer"); jsonw_str(&j, answer ? answer : "");
        jsonw_key(&j, "steps"); jsonw_arr_begin(&j);
        for (int h = 0; h < n_hist; h++) {
            const um_snapshot *sn = hist[h];
            jsonw_obj_begin(&j);
            jsonw_key(&j, "step"); jsonw_int(&j, sn->step);
            jsonw_key(&j, "block"); jsonw_int(&j, sn->block);
            jsonw_key(&j, "planned"); jsonw_int(&j, sn->planned);
            jsonw_key(&j, "forward_ms"); jsonw_num(&j, sn->forward_ms);
            jsonw_key(&j, "sample_ms"); jsonw_num(&j, sn->sample_ms);
            jsonw_key(&j, "rows_computed"); jsonw_int(&j, sn->rows_computed);
            jsonw_key(&j, "cache_refreshed"); jsonw_bool(&j, sn->cache_refreshed);
            jsonw_key(&j, "commits"); jsonw_arr_begin(&j);
            for (int c = 0; c < sn->n_committed; c++) {
                int p = sn->committed[c];
                jsonw_obj_begin(&j);
                jsonw_key(&j, "pos"); jsonw_int(&j, p);
                jsonw_key(&j, "token"); jsonw_int(&j, sn->pos[p].token);
                jsonw_key(&j, "conf"); jsonw_f32(&j, sn->pos[p].commit_conf);
                jsonw_obj_end(&j);
            }
            jsonw_arr_end(&j);
            /* token editing: committed tokens replaced at this step, old and new */
            jsonw_key(&j, "post_step"); jsonw_bool(&j, sn->post_step);
            jsonw_key(&j, "edits"); jsonw_arr_begin(&j);
            for (int p = sn->n_prompt; p < sn->n_canvas; p++) {
                if (!sn->pos[p].edited) continue;
                jsonw_obj_begin(&j);
                jsonw_key(&j, "pos"); jsonw_int(&j, p);
                jsonw_key(&j, "from"); jsonw_int(&j, sn->pos[p].edit_from);
                jsonw_key(&j, "token"); jsonw_int(&j, sn->pos[p].token);
                jsonw_key(&j, "conf"); jsonw_f32(&j, sn->pos[p].commit_conf);
                jsonw_obj_end(&j);
            }
            jsonw_arr_end(&j);
            if (sn->us.on) { jsonw_key(&j, "uniform"); stepstream_json_uniform(&j, sn); }
            jsonw_obj_end(&j);
        }
        jsonw_arr_end(&j);
        jsonw_key(&j, "load_s"); jsonw_num(&j, t_load);
        jsonw_key(&j, "generate_s"); jsonw_num(&j, t_total);
        jsonw_obj_end(&j);
        fputc('\n', stdout);
    }
    free(answer);
    snapshot_unref(last);
    rc = 0;
out:
    if (rc && stream) stepstream_error(&ss, e.msg);
    if (rc) fprintf(stderr, "%sunmask generate: %s\n", quiet || !tty ? "" : "\n", e.msg);
    for (int h = 0; h < n_hist; h++) snapshot_unref(hist[h]);
    free(hist);
    engine_close(en);
    return rc;
}
