/*
 * fuzz_gguf: libFuzzer target for the GGUF reader. Opens the input as a GGUF file, then
 * touches everything a caller may touch: every key through every typed getter, every array
 * element, every tensor's name and data bytes. ASan/UBSan report any read outside the
 * buffer; a successful open must also satisfy the reader's documented invariants.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf.h"
#include "quant.h"

static volatile uint64_t sink;

static void touch(const void *p, uint64_t n) {
    const uint8_t *b = p;
    uint64_t s = 0;
    for (uint64_t i = 0; i < n; i += 61) s += b[i];     /* sparse, but hits both ends */
    if (n) s += b[n - 1];
    sink += s;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    gguf_file *g;
    um_err e;
    if (gguf_open_mem(&g, data, size, &e) != UM_OK) {
        if (!e.msg[0] || (!strstr(e.msg, "(at byte") && !strstr(e.msg, "out of memory"))) abort();
        return 0;
    }
    for (uint64_t i = 0; i < gguf_n_kv(g); i++) {
        const gguf_kv *kv = gguf_kv_at(g, i);
        char key[256], s[64];
        if (kv->key.len >= sizeof key) continue;
        memcpy(key, kv->key.ptr, kv->key.len);
        key[kv->key.len] = 0;
        if (strlen(key) == kv->key.len && gguf_find_kv(g, key) != kv) abort();   /* keys are unique */
        uint32_t u32; uint64_t u64; int64_t i64; float f; bool b;
        const gguf_kv *arr;
        sink += gguf_get_u32(g, key, &u32, &e) + gguf_get_u64(g, key, &u64, &e) + gguf_get_i64(g, key, &i64, &e) +
                gguf_get_f32(g, key, &f, &e) + gguf_get_bool(g, key, &b, &e) + gguf_get_str(g, key, s, sizeof s, &e) +
                gguf_get_arr(g, key, GGUF_TYPE_COUNT, &arr, &e);
        if (kv->type == GGUF_TYPE_STRING) touch(kv->v.s.ptr, kv->v.s.len);
        if (kv->type != GGUF_TYPE_ARRAY) continue;
        for (uint64_t j = 0; j < kv->arr_n; j++) {
            if (kv->arr_type == GGUF_TYPE_STRING) touch(kv->arr_str[j].ptr, kv->arr_str[j].len);
            else sink += (uint64_t)gguf_arr_i64(kv, j) + (uint64_t)(gguf_arr_f64(kv, j) != 0);
        }
    }
    uint64_t A = gguf_alignment(g);
    if (!A || (A & (A - 1)) || gguf_data_offset(g) % A) abort();
    for (uint64_t i = 0; i < gguf_n_tensors(g); i++) {
        const gguf_tensor *t = gguf_tensor_at(g, i);
        uint32_t blck = um_type_blck(t->type);
        if (!blck || t->n_dims < 1 || t->n_dims > GGUF_MAX_DIMS || t->offset % A) abort();
        if (t->size != t->n_elements / blck * um_type_bytes(t->type)) abort();
        if ((const uint8_t *)t->data < data || (const uint8_t *)t->data + t->size > data + size) abort();
        touch(t->data, t->size);
        char name[256];
        if (t->name.len < sizeof name) {
            memcpy(name, t->name.ptr, t->name.len);
            name[t->name.len] = 0;
            if (strlen(name) == t->name.len && gguf_find_tensor(g, name) != t) abort();
        }
    }
    gguf_close(g);
    return 0;
}
