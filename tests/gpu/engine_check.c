/*
 * engine_check: the engine on the CUDA backend's interface (in emu-check, the backend's host
 * code with the device kernels replaced by CPU references). The CUDA backend runs no partial
 * passes yet (its table leaves kv_new/run_kv NULL), so a cache mode must be refused with a
 * message naming the backend, at engine_start and by engine_set mid-run, while --cache none
 * decodes as always.
 *
 *   engine_check MODEL.gguf
 *
 * Exit 0 all passed, 1 a check failed, 2 setup error.
 */
#include <stdio.h>
#include <string.h>

#include "engine.h"

static int failures;

static void check(int ok, const char *what, const char *msg) {
    printf("%s %s%s%s\n", ok ? "ok  " : "FAIL", what, msg && *msg ? ": " : "", msg ? msg : "");
    failures += !ok;
}

int main(int argc, char **argv) {
    if (argc != 2) { fprintf(stderr, "usage: engine_check MODEL.gguf\n"); return 2; }
    um_engine_opts o = { .model_path = argv[1], .n_threads = 2, .kernel = -1, .gpu = true };
    um_engine *en = NULL;
    um_err e = { "" };
    if (engine_open(&en, &o, &e)) { fprintf(stderr, "engine_check: %s\n", e.msg); return 2; }
    um_engine_info info;
    engine_get_info(en, &info);
    check(!strcmp(info.backend, "cuda"), "the engine runs on the cuda backend", info.backend);
    um_settings s;
    engine_default_settings(en, &s);
    s.n_gen = 16;
    s.steps = 8;
    s.block_len = 8;
    s.cache = UM_CACHE_DUAL;
    int rc = engine_start(en, "hello", &s, &e);
    check(rc == UM_FAIL && strstr(e.msg, "needs partial forward passes") && strstr(e.msg, "cuda"),
          "--cache dual refused at start", e.msg);
    s.cache = UM_CACHE_NONE;
    e.msg[0] = '\0';
    rc = engine_start(en, "hello", &s, &e);
    check(rc == UM_OK, "--cache none starts", e.msg);
    check(rc == UM_OK && engine_step(en, &e) == 1, "--cache none steps", e.msg);
    um_settings t = s;
    t.cache = UM_CACHE_PREFIX;
    check(engine_set(en, &t) == -1, "--cache prefix refused mid-run", "");
    check(engine_settings(en)->cache == UM_CACHE_NONE, "the refused change left the settings alone", "");
    int steps = engine_run(en, NULL, NULL, &e);
    check(steps > 0 && engine_done(en), "the run finishes without a cache", e.msg);
    check(engine_cache_bytes(en) == 0, "no cache held", "");
    engine_close(en);
    printf("engine_check: %s\n", failures ? "FAILED" : "all passed");
    return failures ? 1 : 0;
}
