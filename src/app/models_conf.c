/*
 * models_conf: the models.conf INI reader (see models_conf.h). Every value is checked
 * (numbers by numparse.h, as the command-line flags are); the first problem is reported as
 * FILE:LINE: message and nothing is returned.
 */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "infile.h"
#include "models_conf.h"
#include "numparse.h"
#include "schedule.h"
#include "view.h"

static char *trim(char *s) {
    while (*s == ' ' || *s == '\t') s++;
    char *end = s + strlen(s);
    while (end > s && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\r')) *--end = 0;
    return s;
}

/* A numeric value through the one number parser: "FILE:LINE: KEY: 'v' is not a whole number". */
static int parse_int(const char *file, int line, const char *key, const char *v, int32_t lo, int32_t hi, int32_t *out,
                     um_err *e) {
    char what[1100];
    int64_t x;
    snprintf(what, sizeof what, "%s:%d: %s", file, line, key);
    if (num_int(what, v, lo, hi, &x, e)) return UM_FAIL;
    *out = (int32_t)x;
    return UM_OK;
}

static void fast_unset(models_fast *f) {
    memset(f, 0, sizeof *f);
    f->threshold = f->eb_gamma = f->factor = f->cache_drift = -1;
    f->cache = -1;
    f->cache_refresh = -1;
}

int models_fast_parse(const char *v, models_fast *out, um_err *e) {
    models_fast f;
    fast_unset(&f);
    char words[256];
    if (strlen(v) >= sizeof words) return um_errf(e, "fast: longer than %zu bytes", sizeof words - 1);
    snprintf(words, sizeof words, "%s", v);
    int rules = 0;
    for (char *save = NULL, *w = strtok_r(words, " \t", &save); w; w = strtok_r(NULL, " \t", &save)) {
        char *val = strtok_r(NULL, " \t", &save);
        if (!val) return um_errf(e, "fast: %s needs a value", w);
        char what[300];
        snprintf(what, sizeof what, "fast: %s", w);
        double x;
        int64_t k;
        if (!strcmp(w, "--threshold")) {
            if (num_float(what, val, 0, 1, 0, &x, e)) return UM_FAIL;
            f.threshold = (float)x, rules++;
        } else if (!strcmp(w, "--eb-gamma")) {
            if (num_float(what, val, 0, 1e6, 0, &x, e)) return UM_FAIL;
            f.eb_gamma = (float)x, rules++;
        } else if (!strcmp(w, "--factor")) {
            if (num_float(what, val, 0, 100, NUM_LO_OPEN, &x, e)) return UM_FAIL;
            f.factor = (float)x, rules++;
        } else if (!strcmp(w, "--cache")) {
            um_cache c;
            um_err why;
            if (engine_cache_from_name(val, &c, &why)) return um_errf(e, "fast: --cache: %s", why.msg);
            f.cache = (int)c;
        } else if (!strcmp(w, "--cache-drift")) {
            if (num_float(what, val, 0, 1e6, NUM_LO_OPEN, &x, e)) return UM_FAIL;
            f.cache_drift = (float)x;
        } else if (!strcmp(w, "--cache-refresh")) {
            if (num_int(what, val, 1, 1 << 20, &k, e)) return UM_FAIL;
            f.cache_refresh = (int32_t)k;
        } else {
            return um_errf(e, "fast: '%s' is not one of --threshold, --eb-gamma, --factor, --cache, --cache-drift, "
                              "--cache-refresh", w);
        }
    }
    if (rules != 1) return um_errf(e, "fast: name one rule (--threshold, --eb-gamma or --factor), not %d", rules);
    if ((f.cache_drift > 0 || f.cache_refresh > 0) && f.cache != UM_CACHE_DUAL)
        return um_errf(e, "fast: --cache-drift and --cache-refresh refresh the dual cache: add --cache dual");
    f.set = true;
    *out = f;
    return UM_OK;
}

int models_conf_parse(models_conf *mc, const char *text, size_t len, const char *file, um_err *e) {
    memset(mc, 0, sizeof *mc);
    snprintf(mc->file, sizeof mc->file, "%s", file);
    char dir[1024];
    const char *slash = strrchr(file, '/');
    snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - file) : 1, slash ? file : ".");
    int cap = 0;
    models_preset *cur = NULL;
    const char *p = text, *end = text + len;
    for (int line = 1; p < end; line++) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
        char buf[2048];
        if (n >= sizeof buf) { um_errf(e, "%s:%d: line too long", file, line); goto err; }
        memcpy(buf, p, n);
        buf[n] = 0;
        p += n + (nl ? 1 : 0);
        if (memchr(buf, 0, n)) { um_errf(e, "%s:%d: NUL byte in line", file, line); goto err; }
        for (char *h = buf; (h = strpbrk(h, "#;")); h++)       /* comments: # or ; at start or after a blank */
            if (h == buf || h[-1] == ' ' || h[-1] == '\t') { *h = 0; break; }
        char *s = trim(buf);
        if (!*s) continue;
        if (*s == '[') {
            char *close = strchr(s, ']');
            if (!close || trim(close + 1)[0]) { um_errf(e, "%s:%d: expected [name]", file, line); goto err; }
            *close = 0;
            char *name = trim(s + 1);
            if (!*name || strlen(name) >= sizeof cur->name) { um_errf(e, "%s:%d: section name must be 1..63 bytes", file, line); goto err; }
            for (char *c = name; *c; c++)
                if (!isalnum((unsigned char)*c) && !strchr("-_.", *c)) {
                    um_errf(e, "%s:%d: bad character '%c' in section name (letters, digits, - _ .)", file, line, *c);
                    goto err;
                }
            for (int i = 0; i < mc->n; i++)
                if (!strcmp(mc->presets[i].name, name)) {
                    um_errf(e, "%s:%d: preset [%s] already defined at line %d", file, line, name, mc->presets[i].line);
                    goto err;
                }
            if (mc->n == cap) {
                cap = cap ? cap * 2 : 8;
                models_preset *np = realloc(mc->presets, (size_t)cap * sizeof *np);
                if (!np) { um_errf(e, "%s: out of memory", file); goto err; }
                mc->presets = np;
            }
            cur = &mc->presets[mc->n++];
            memset(cur, 0, sizeof *cur);
            snprintf(cur->name, sizeof cur->name, "%s", name);
            cur->gen = cur->steps = cur->block = -1;
            cur->schedule = cur->scoring = -1;
            cur->temperature = NAN;
            fast_unset(&cur->fast);
            cur->line = line;
            continue;
        }
        char *eq = strchr(s, '=');
        if (!eq) { um_errf(e, "%s:%d: expected 'key = value' or [name], got '%s'", file, line, s); goto err; }
        *eq = 0;
        char *key = trim(s), *val = trim(eq + 1);
        if (!cur) { um_errf(e, "%s:%d: '%s' before any [preset] section", file, line, key); goto err; }
        if (!*val) { um_errf(e, "%s:%d: empty value for '%s'", file, line, key); goto err; }
        if (!strcmp(key, "path")) {
            int w = val[0] == '/' ? snprintf(cur->path, sizeof cur->path, "%s", val)
                                  : snprintf(cur->path, sizeof cur->path, "%s/%s", dir, val);
            if (w < 0 || (size_t)w >= sizeof cur->path) { um_errf(e, "%s:%d: path too long", file, line); goto err; }
        } else if (!strcmp(key, "chat_template")) {
            if (strlen(val) >= sizeof cur->chat_template) { um_errf(e, "%s:%d: chat_template too long", file, line); goto err; }
            snprintf(cur->chat_template, sizeof cur->chat_template, "%s", val);
        } else if (!strcmp(key, "gen")) {
            if (parse_int(file, line, key, val, 1, 1 << 20, &cur->gen, e)) goto err;
        } else if (!strcmp(key, "steps")) {
            if (parse_int(file, line, key, val, 1, 1 << 20, &cur->steps, e)) goto err;
        } else if (!strcmp(key, "block")) {
            if (parse_int(file, line, key, val, 1, 1 << 20, &cur->block, e)) goto err;
        } else if (!strcmp(key, "schedule")) {
            um_schedule sc;
            um_err why;
            if (schedule_from_name(val, &sc, &why)) { um_errf(e, "%s:%d: %s", file, line, why.msg); goto err; }
            cur->schedule = (int)sc;
        } else if (!strcmp(key, "scoring")) {
            um_score sc;
            um_err why;
            if (schedule_score_from_name(val, &sc, &why)) { um_errf(e, "%s:%d: %s", file, line, why.msg); goto err; }
            cur->scoring = (int)sc;
        } else if (!strcmp(key, "temperature")) {
            char what[1100];
            double t;
            snprintf(what, sizeof what, "%s:%d: %s", file, line, key);
            if (num_float(what, val, 0, 100, 0, &t, e)) goto err;
            cur->temperature = (float)t;
        } else if (!strcmp(key, "prompt")) {
            if (strlen(val) >= sizeof cur->prompt) { um_errf(e, "%s:%d: prompt too long (at most %zu bytes)", file, line, sizeof cur->prompt - 1); goto err; }
            snprintf(cur->prompt, sizeof cur->prompt, "%s", val);
        } else if (!strcmp(key, "fast")) {
            um_err why;
            if (models_fast_parse(val, &cur->fast, &why)) { um_errf(e, "%s:%d: %s", file, line, why.msg); goto err; }
        } else if (!strcmp(key, "layout")) {
            int k = 0;                 /* the names live once, beside the view (view.h) */
            while (k < VIEW_LAYOUT_COUNT && strcmp(view_layout_keys[k], val)) k++;
            if (k == VIEW_LAYOUT_COUNT) {
                char names[64] = "";
                for (int j = 0, at = 0; j < VIEW_LAYOUT_COUNT; j++)
                    at += snprintf(names + at, sizeof names - (size_t)at, "%s%s", j == 0 ? "" : j == VIEW_LAYOUT_COUNT - 1 ? " or " : ", ",
                                  view_layout_keys[j]);
                um_errf(e, "%s:%d: layout must be %s, got '%s'", file, line, names, val);
                goto err;
            }
            snprintf(cur->layout, sizeof cur->layout, "%s", val);
        } else {
            um_errf(e, "%s:%d: unknown key '%s' (path, chat_template, gen, steps, block, schedule, scoring, temperature, prompt, layout, fast)", file, line, key);
            goto err;
        }
    }
    for (int i = 0; i < mc->n; i++)
        if (!mc->presets[i].path[0]) {
            um_errf(e, "%s:%d: preset [%s] has no path", file, mc->presets[i].line, mc->presets[i].name);
            goto err;
        }
    return UM_OK;
err:
    models_conf_free(mc);
    return UM_FAIL;
}

int models_conf_load(models_conf *mc, const char *path, um_err *e) {
    char *data;
    size_t len;
    memset(mc, 0, sizeof *mc);
    if (infile_read(path, INFILE_MAX_CONF, &data, &len, e)) return UM_FAIL;
    int rc = models_conf_parse(mc, data, len, path, e);
    free(data);
    return rc;
}

/* The name is taken (by anything: a FIFO, a directory, a dangling link), so the lookup stops
 * there and loading it says what is wrong ("not a regular file (a FIFO)") instead of the
 * file passing for absent. */
static bool exists(const char *p) {
    struct stat st;
    return lstat(p, &st) == 0;
}

bool models_conf_find(char *path, size_t cap) {
    const char *xdg = getenv("XDG_CONFIG_HOME"), *home = getenv("HOME");
    snprintf(path, cap, "models.conf");
    if (exists(path)) return true;
    if (xdg && *xdg) snprintf(path, cap, "%s/unmask/models.conf", xdg);
    else if (home && *home) snprintf(path, cap, "%s/.config/unmask/models.conf", home);
    else path[0] = 0;
    if (path[0] && exists(path)) return true;
    if (um_exe_dir()[0]) {                          /* a build tree: the binary beside its models.conf */
        snprintf(path, cap, "%s/models.conf", um_exe_dir());
        if (exists(path)) return true;
    }
    snprintf(path, cap, "%s/models.conf", um_share_dir());
    return exists(path);
}

void models_conf_places(char *buf, size_t cap) {
    const char *xdg = getenv("XDG_CONFIG_HOME");
    snprintf(buf, cap, "./, %s, %s%s%s/", xdg && *xdg ? "$XDG_CONFIG_HOME/unmask/" : "~/.config/unmask/",
             um_exe_dir()[0] ? um_exe_dir() : "", um_exe_dir()[0] ? "/, " : "", um_share_dir());
}

bool models_conf_preset_of(const char *model, models_preset *out) {
    char path[2048];
    struct stat want, st;
    models_conf mc;
    um_err e;
    if (stat(model, &want) || !models_conf_find(path, sizeof path) || models_conf_load(&mc, path, &e)) return false;
    bool found = false;
    for (int i = 0; i < mc.n && !found; i++)
        if (stat(mc.presets[i].path, &st) == 0 && st.st_dev == want.st_dev && st.st_ino == want.st_ino) {
            *out = mc.presets[i];
            found = true;
        }
    models_conf_free(&mc);
    return found;
}

const models_preset *models_conf_get(const models_conf *mc, const char *name) {
    for (int i = 0; i < mc->n; i++)
        if (!strcmp(mc->presets[i].name, name)) return &mc->presets[i];
    return NULL;
}

void models_conf_free(models_conf *mc) {
    free(mc->presets);
    mc->presets = NULL;
    mc->n = 0;
}

int models_conf_resolve(const char *name, models_preset *out, um_err *e) {
    char path[2048];
    models_conf mc;
    if (!models_conf_find(path, sizeof path)) {
        char places[1200];
        models_conf_places(places, sizeof places);
        return um_errf(e, "no models.conf in %s (its format and the presets: docs/models.md)", places);
    }
    if (models_conf_load(&mc, path, e)) return UM_FAIL;
    const models_preset *p = models_conf_get(&mc, name);
    if (p) *out = *p;
    models_conf_free(&mc);
    if (!p) return um_errf(e, "no preset [%s] in %s (unmask --list-models lists them)", name, path);
    return UM_OK;
}

void models_conf_apply(const models_preset *p, um_settings *s) {
    if (p->gen > 0) s->n_gen = p->gen;
    if (p->steps > 0) s->steps = p->steps;
    if (p->block > 0) s->block_len = p->block;
    if (p->schedule >= 0) s->schedule = (um_schedule)p->schedule;
    if (p->scoring >= 0) s->score = (um_score)p->scoring;
    if (!isnan(p->temperature)) s->temperature = p->temperature;
    if (!s->block_aligned && s->block_len > s->n_gen) s->block_len = s->n_gen;   /* aligned: the attention's block */
}
