/*
 * engine_names: the names of the cache modes, K/V storage types and uniform-state position kinds (engine.h), for flags,
 * JSON and the UI; *_from_name fails with a message listing the known names.
 */
#include <string.h>

#include "engine.h"

static const char *const cache_names[UM_CACHE_COUNT] = {
    [UM_CACHE_NONE] = "none", [UM_CACHE_PREFIX] = "prefix", [UM_CACHE_DUAL] = "dual",
};
static const char *const kv_store_names[UM_KV_STORE_COUNT] = {
    [UM_KV_F16] = "f16", [UM_KV_F32] = "f32", [UM_KV_Q8_0] = "q8_0",
};

static const char *const us_kind_names[UM_US_KIND_COUNT] = {
    [UM_US_NONE] = "none", [UM_US_NOISE] = "noise", [UM_US_DRAFT] = "draft", [UM_US_ACCEPTED] = "accepted",
    [UM_US_KEPT] = "kept", [UM_US_CUT] = "cut",
};

const char *engine_us_kind_name(um_us_kind k) { return (int)k >= 0 && k < UM_US_KIND_COUNT ? us_kind_names[k] : "?"; }
const char *engine_cache_name(um_cache c) { return (int)c >= 0 && c < UM_CACHE_COUNT ? cache_names[c] : "?"; }
const char *engine_kv_store_name(um_kv_store t) {
    return (int)t >= 0 && t < UM_KV_STORE_COUNT ? kv_store_names[t] : "?";
}

static int name_index(const char *what, const char *const *names, int n, const char *name, int *out, um_err *e) {
    for (int i = 0; i < n; i++)
        if (name && !strcmp(name, names[i])) { *out = i; return UM_OK; }
    char known[64] = "";
    for (int i = 0; i < n; i++) {
        if (i) strncat(known, "|", sizeof known - strlen(known) - 1);
        strncat(known, names[i], sizeof known - strlen(known) - 1);
    }
    return um_errf(e, "unknown %s '%s' (known: %s)", what, name ? name : "", known);
}

int engine_cache_from_name(const char *name, um_cache *out, um_err *e) {
    int v;
    if (name_index("cache mode", cache_names, UM_CACHE_COUNT, name, &v, e)) return UM_FAIL;
    *out = (um_cache)v;
    return UM_OK;
}

int engine_kv_store_from_name(const char *name, um_kv_store *out, um_err *e) {
    int v;
    if (name_index("cache type", kv_store_names, UM_KV_STORE_COUNT, name, &v, e)) return UM_FAIL;
    *out = (um_kv_store)v;
    return UM_OK;
}
