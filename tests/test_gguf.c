/*
 * test_gguf: the GGUF reader and writer.
 *
 * - every metadata type and array round-trips writer -> reader, getters check types/ranges;
 * - the reader agrees with tests/data/gguf-expected.tsv, written by llama.cpp's gguf-py
 *   (tests/data/gguf_expect.py), on every file in tests/data/vocab and on tiny-llada.gguf;
 * - a corpus of broken files, each made from a valid file and patched, fails with its
 *   specific message and byte offset;
 * - tests/data/tiny-llada.gguf is exactly what tiny_llada() generates.
 * UNMASK_REGEN=1 rewrites tests/data/tiny-llada.gguf and the fuzz seeds in tests/fuzz/seeds/.
 */
#include "harness.h"
#include "infile.h"
#include "gguf.h"
#include "quant.h"

#include <glob.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static bool regen(void) { const char *s = getenv("UNMASK_REGEN"); return s && *s == '1'; }

static void save(const char *path, const uint8_t *p, size_t n) {
    FILE *f = fopen(path, "wb");
    if (f) { fwrite(p, 1, n, f); fclose(f); }
}

static uint64_t find(const uint8_t *p, size_t n, const char *s) {
    const uint8_t *q = memmem(p, n, s, strlen(s));
    return q ? (uint64_t)(q - p) : UINT64_MAX;
}
static void put32(uint8_t *p, uint64_t at, uint32_t v) { memcpy(p + at, &v, 4); }
static void put64(uint8_t *p, uint64_t at, uint64_t v) { memcpy(p + at, &v, 8); }

/* ------------------------------------------------------------------ round trip */

static const uint8_t  a_u8[]  = { 0, 1, 255 };
static const int8_t   a_i8[]  = { -128, 0, 127 };
static const uint16_t a_u16[] = { 0, 65535 };
static const int16_t  a_i16[] = { -32768, 32767 };
static const uint32_t a_u32[] = { 7, 4000000000u };
static const int32_t  a_i32[] = { -2147483647 - 1, 5 };
static const uint64_t a_u64[] = { 18446744073709551615ull };
static const int64_t  a_i64[] = { INT64_MIN, -1, INT64_MAX };
static const float    a_f32[] = { 1.5f, -0.25f, 3e38f };
static const double   a_f64[] = { 1e300, -2.5 };
static const uint8_t  a_bool[] = { 1, 0, 1 };
static const char *const a_str[] = { "", "hello", "tab\there", "\xc4\xa0world" };

static void set_all(gguf_writer *w) {
    gguf_set_u8(w, "t.u8", 200);
    gguf_set_i8(w, "t.i8", -100);
    gguf_set_u16(w, "t.u16", 60000);
    gguf_set_i16(w, "t.i16", -30000);
    gguf_set_u32(w, "t.u32", 4000000000u);
    gguf_set_i32(w, "t.i32", -2000000000);
    gguf_set_u64(w, "t.u64", 18000000000000000000ull);
    gguf_set_i64(w, "t.i64", -9000000000000000000ll);
    gguf_set_f32(w, "t.f32", 0.1f);
    gguf_set_f64(w, "t.f64", 0.1);
    gguf_set_bool(w, "t.bool", true);
    gguf_set_str(w, "t.str", "héllo");
    gguf_set_str(w, "t.empty", "");
    gguf_set_arr(w, "a.u8", GGUF_TYPE_UINT8, a_u8, 3);
    gguf_set_arr(w, "a.i8", GGUF_TYPE_INT8, a_i8, 3);
    gguf_set_arr(w, "a.u16", GGUF_TYPE_UINT16, a_u16, 2);
    gguf_set_arr(w, "a.i16", GGUF_TYPE_INT16, a_i16, 2);
    gguf_set_arr(w, "a.u32", GGUF_TYPE_UINT32, a_u32, 2);
    gguf_set_arr(w, "a.i32", GGUF_TYPE_INT32, a_i32, 2);
    gguf_set_arr(w, "a.u64", GGUF_TYPE_UINT64, a_u64, 1);
    gguf_set_arr(w, "a.i64", GGUF_TYPE_INT64, a_i64, 3);
    gguf_set_arr(w, "a.f32", GGUF_TYPE_FLOAT32, a_f32, 3);
    gguf_set_arr(w, "a.f64", GGUF_TYPE_FLOAT64, a_f64, 2);
    gguf_set_arr(w, "a.bool", GGUF_TYPE_BOOL, a_bool, 3);
    gguf_set_arr(w, "a.empty", GGUF_TYPE_INT32, NULL, 0);
    gguf_set_arr_str(w, "a.str", a_str, 4);
    gguf_set_u32(w, "t.replaced", 1);
    gguf_set_u32(w, "t.replaced", 2);              /* replaces, keeps position */
}

#define N_ALL_KV 27

static void check_all(const gguf_file *g) {
    um_err e;
    uint32_t u32; uint64_t u64; int64_t i64; float f; bool b; char s[64];
    const gguf_kv *kv;
    CHECK_EQ(gguf_n_kv(g), N_ALL_KV);
    CHECK(gguf_get_u32(g, "t.u8", &u32, &e) == UM_OK && u32 == 200);
    CHECK(gguf_get_i64(g, "t.i8", &i64, &e) == UM_OK && i64 == -100);
    CHECK(gguf_get_u32(g, "t.u16", &u32, &e) == UM_OK && u32 == 60000);
    CHECK(gguf_get_i64(g, "t.i16", &i64, &e) == UM_OK && i64 == -30000);
    CHECK(gguf_get_u32(g, "t.u32", &u32, &e) == UM_OK && u32 == 4000000000u);
    CHECK(gguf_get_u64(g, "t.u32", &u64, &e) == UM_OK && u64 == 4000000000u);
    CHECK(gguf_get_i64(g, "t.i32", &i64, &e) == UM_OK && i64 == -2000000000);
    CHECK(gguf_get_u64(g, "t.u64", &u64, &e) == UM_OK && u64 == 18000000000000000000ull);
    CHECK(gguf_get_i64(g, "t.i64", &i64, &e) == UM_OK && i64 == -9000000000000000000ll);
    CHECK(gguf_get_f32(g, "t.f32", &f, &e) == UM_OK && f == 0.1f);
    CHECK(gguf_find_kv(g, "t.f64")->v.f == 0.1);
    CHECK(gguf_get_bool(g, "t.bool", &b, &e) == UM_OK && b);
    CHECK(gguf_get_str(g, "t.str", s, sizeof s, &e) == UM_OK);
    CHECK_STREQ(s, "héllo");
    CHECK(gguf_get_str(g, "t.empty", s, sizeof s, &e) == UM_OK && s[0] == 0);
    CHECK(gguf_get_u32(g, "t.replaced", &u32, &e) == UM_OK && u32 == 2);

    /* getter errors */
    CHECK(gguf_get_u32(g, "nope", &u32, &e) == UM_FAIL);
    CHECK_STREQ(e.msg, "key 'nope' missing");
    CHECK(gguf_get_u32(g, "t.str", &u32, &e) == UM_FAIL);
    CHECK_STREQ(e.msg, "key 't.str' has type string, expected uint32");
    CHECK(gguf_get_u32(g, "t.i8", &u32, &e) == UM_FAIL);
    CHECK_STREQ(e.msg, "key 't.i8' has value -100, out of range for uint32");
    CHECK(gguf_get_u32(g, "t.u64", &u32, &e) == UM_FAIL);
    CHECK_STREQ(e.msg, "key 't.u64' has value 18000000000000000000, out of range for uint32");
    CHECK(gguf_get_i64(g, "t.u64", &i64, &e) == UM_FAIL);
    CHECK(gguf_get_f32(g, "t.u32", &f, &e) == UM_FAIL);
    CHECK(gguf_get_bool(g, "t.u8", &b, &e) == UM_FAIL);
    CHECK(gguf_get_str(g, "t.str", s, 3, &e) == UM_FAIL);
    CHECK_CONTAINS(e.msg, "longer than");
    CHECK(gguf_get_arr(g, "a.u8", GGUF_TYPE_INT8, &kv, &e) == UM_FAIL && !kv);
    CHECK_STREQ(e.msg, "key 'a.u8' has type array of uint8, expected array of int8");
    CHECK(gguf_get_arr(g, "t.u8", GGUF_TYPE_COUNT, &kv, &e) == UM_FAIL);
    CHECK_STREQ(e.msg, "key 't.u8' has type uint8, expected array of any");
    CHECK(gguf_get_u32(g, "a.u32", &u32, &e) == UM_FAIL);

    /* arrays */
    static const struct { const char *key; gguf_type t; const void *data; uint64_t n; } arrs[] = {
        { "a.u8", GGUF_TYPE_UINT8, a_u8, 3 },     { "a.i8", GGUF_TYPE_INT8, a_i8, 3 },
        { "a.u16", GGUF_TYPE_UINT16, a_u16, 2 },  { "a.i16", GGUF_TYPE_INT16, a_i16, 2 },
        { "a.u32", GGUF_TYPE_UINT32, a_u32, 2 },  { "a.i32", GGUF_TYPE_INT32, a_i32, 2 },
        { "a.u64", GGUF_TYPE_UINT64, a_u64, 1 },  { "a.i64", GGUF_TYPE_INT64, a_i64, 3 },
        { "a.f32", GGUF_TYPE_FLOAT32, a_f32, 3 }, { "a.f64", GGUF_TYPE_FLOAT64, a_f64, 2 },
        { "a.bool", GGUF_TYPE_BOOL, a_bool, 3 },  { "a.empty", GGUF_TYPE_INT32, NULL, 0 },
    };
    for (size_t k = 0; k < UM_ARRAY_LEN(arrs); k++) {
        CHECK_MSG(gguf_get_arr(g, arrs[k].key, arrs[k].t, &kv, &e) == UM_OK, "%s: %s", arrs[k].key, e.msg);
        CHECK_EQ(kv->arr_n, arrs[k].n);
        CHECK(kv->arr_n == 0 || memcmp(kv->arr_data, arrs[k].data, kv->arr_n * gguf_type_size(arrs[k].t)) == 0);
    }
    CHECK(gguf_get_arr(g, "a.i64", GGUF_TYPE_INT64, &kv, &e) == UM_OK);
    CHECK(gguf_arr_i64(kv, 0) == INT64_MIN && gguf_arr_i64(kv, 2) == INT64_MAX);
    CHECK(gguf_get_arr(g, "a.f32", GGUF_TYPE_FLOAT32, &kv, &e) == UM_OK);
    CHECK(gguf_arr_f64(kv, 1) == -0.25 && gguf_arr_i64(kv, 2) == INT64_MAX);
    CHECK(gguf_get_arr(g, "a.u32", GGUF_TYPE_COUNT, &kv, &e) == UM_OK);
    CHECK(gguf_arr_f64(kv, 1) == 4000000000.0);
    CHECK(gguf_get_arr(g, "a.str", GGUF_TYPE_STRING, &kv, &e) == UM_OK);
    CHECK_EQ(kv->arr_n, 4);
    for (int i = 0; i < 4; i++) CHECK(gguf_str_eq(kv->arr_str[i], a_str[i]));
}

/* Tensors of three types; data is a deterministic byte pattern. */
static uint8_t tdata[3][4096];
static void add_tensors(gguf_writer *w) {
    um_err e;
    for (int k = 0; k < 3; k++)
        for (int i = 0; i < 4096; i++) tdata[k][i] = (uint8_t)(i * 31 + k * 7);
    uint64_t ne_f32[2] = { 3, 5 }, ne_q8[1] = { 64 }, ne_q4k[3] = { 256, 2, 3 };
    gguf_add_tensor(w, "w.f32", UM_TYPE_F32, 2, ne_f32, tdata[0], 60, &e);
    gguf_add_tensor(w, "w.q8_0", UM_TYPE_Q8_0, 1, ne_q8, tdata[1], 68, &e);
    gguf_add_tensor(w, "w.q4_K", UM_TYPE_Q4_K, 3, ne_q4k, tdata[2], 6 * 144, &e);
}

static void check_tensors(const gguf_file *g, uint64_t align) {
    CHECK_EQ(gguf_n_tensors(g), 3);
    CHECK_EQ(gguf_alignment(g), align);
    CHECK_EQ(gguf_data_offset(g) % align, 0);
    static const char *names[3] = { "w.f32", "w.q8_0", "w.q4_K" };
    static const uint64_t sizes[3] = { 60, 68, 864 }, nel[3] = { 15, 64, 1536 };
    for (int k = 0; k < 3; k++) {
        const gguf_tensor *t = gguf_find_tensor(g, names[k]);
        CHECK_MSG(t == gguf_tensor_at(g, k), "%s", names[k]);
        CHECK_EQ(t->size, sizes[k]);
        CHECK_EQ(t->n_elements, nel[k]);
        CHECK_EQ(t->offset % align, 0);
        CHECK_EQ(((const uint8_t *)t->data - (const uint8_t *)gguf_tensor_at(g, 0)->data) % align, 0);
        CHECK(memcmp(t->data, tdata[k], t->size) == 0);
    }
    const gguf_tensor *q = gguf_find_tensor(g, "w.q4_K");
    CHECK(q->n_dims == 3 && q->ne[0] == 256 && q->ne[1] == 2 && q->ne[2] == 3 && q->ne[3] == 1);
    CHECK(q->type == UM_TYPE_Q4_K);
    CHECK(gguf_find_tensor(g, "w.q4") == NULL);
}

TEST(gguf_roundtrip_every_type) {
    gguf_writer *w = gguf_writer_new();
    set_all(w);
    add_tensors(w);
    uint8_t *buf; size_t n; um_err e;
    CHECK_MSG(gguf_writer_write_mem(w, &buf, &n, &e) == UM_OK, "%s", e.msg);
    gguf_file *g;
    int rc = gguf_open_mem(&g, buf, n, &e);
    CHECK_MSG(rc == UM_OK, "%s", e.msg);
    CHECK_EQ(gguf_version(g), 3);
    CHECK_EQ(gguf_file_size(g), n);
    CHECK_EQ(n % 32, 0);                        /* the last tensor is padded too */
    if (regen()) save("tests/fuzz/seeds/valid-all-types.gguf", buf, n);
    check_all(g);
    CHECK(gguf_kv_at(g, 0)->type == GGUF_TYPE_UINT8 && gguf_str_eq(gguf_kv_at(g, 0)->key, "t.u8"));
    CHECK(gguf_str_eq(gguf_kv_at(g, N_ALL_KV - 1)->key, "t.replaced"));   /* replacing kept its place */
    CHECK(gguf_kv_at(g, N_ALL_KV) == NULL);
    if (!th_failed()) check_tensors(g, 32);
    gguf_close(g);
    free(buf);
    gguf_writer_free(w);
}

TEST(gguf_file_write_alignment_and_copy) {
    char path[] = "/tmp/unmask-gguf-XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    close(fd);
    gguf_writer *w = gguf_writer_new();
    set_all(w);
    gguf_set_u32(w, "general.alignment", 128);
    add_tensors(w);
    um_err e;
    CHECK_MSG(gguf_writer_write(w, path, &e) == UM_OK, "%s", e.msg);
    gguf_writer_free(w);
    char pattern[64];                           /* the temporary ".NAME.XXXXXX" was renamed into place */
    snprintf(pattern, sizeof pattern, "/tmp/.%s.*", path + 5);
    glob_t gl;
    CHECK(glob(pattern, 0, NULL, &gl) == GLOB_NOMATCH);
    gguf_file *g;
    CHECK_MSG(gguf_open(&g, path, &e) == UM_OK, "%s", e.msg);
    CHECK_STREQ(gguf_path(g), path);
    check_tensors(g, 128);

    /* copy every key but two into a new file; the copy reads back identically */
    static const char *const skip[] = { "general.alignment", "t.u8", NULL };
    gguf_writer *w2 = gguf_writer_new();
    CHECK(gguf_copy_kv(w2, g, skip) == UM_OK);
    gguf_set_u8(w2, "t.u8", 200);
    uint8_t *buf; size_t n;
    CHECK(gguf_writer_write_mem(w2, &buf, &n, &e) == UM_OK);
    gguf_file *g2;
    CHECK_MSG(gguf_open_mem(&g2, buf, n, &e) == UM_OK, "%s", e.msg);
    CHECK_EQ(gguf_n_tensors(g2), 0);
    CHECK_EQ(gguf_alignment(g2), 32);
    check_all(g2);
    gguf_close(g2);
    gguf_close(g);
    free(buf);
    gguf_writer_free(w2);
    unlink(path);
}

TEST(gguf_writer_rejects_bad_input) {
    gguf_writer *w = gguf_writer_new();
    um_err e;
    uint8_t d[64] = { 0 };
    uint64_t ne33[1] = { 33 }, ne32[1] = { 32 };
    CHECK(gguf_add_tensor(w, "x", UM_TYPE_Q8_0, 1, ne33, d, 34, &e) == UM_FAIL);
    CHECK_STREQ(e.msg, "tensor 'x': ne[0] = 33 is not a multiple of the q8_0 block size 32");
    CHECK(gguf_add_tensor(w, "x", 4, 1, ne32, d, 34, &e) == UM_FAIL);
    CHECK_STREQ(e.msg, "tensor 'x': unknown type id 4");
    CHECK(gguf_add_tensor(w, "x", UM_TYPE_Q8_0, 1, ne32, d, 33, &e) == UM_FAIL);
    CHECK_STREQ(e.msg, "tensor 'x': 33 bytes given, q8_0 of this shape needs 34");
    CHECK(gguf_add_tensor(w, "x", UM_TYPE_Q8_0, 1, ne32, d, 34, &e) == UM_OK);
    CHECK(gguf_add_tensor(w, "x", UM_TYPE_Q8_0, 1, ne32, d, 34, &e) == UM_FAIL);
    CHECK_STREQ(e.msg, "duplicate tensor name 'x'");
    CHECK(gguf_set_arr(w, "a", GGUF_TYPE_STRING, d, 1) == UM_FAIL);
    CHECK(gguf_set_arr(w, "a", GGUF_TYPE_ARRAY, d, 1) == UM_FAIL);
    gguf_set_u32(w, "general.alignment", 48);
    uint8_t *buf; size_t n;
    CHECK(gguf_writer_write_mem(w, &buf, &n, &e) == UM_FAIL);
    CHECK_CONTAINS(e.msg, "general.alignment must be a uint32 power of two");
    gguf_writer_free(w);
}

/* ------------------------------------------------------------------ vocab files vs gguf-py */

/* Undo gguf_expect.py's escaping (\xNN) in place; returns the length. */
static size_t unesc(char *s) {
    size_t j = 0;
    for (size_t i = 0; s[i]; i++) {
        if (s[i] == '\\' && s[i + 1] == 'x') {
            char hex[3] = { s[i + 2], s[i + 3], 0 };
            s[j++] = (char)strtol(hex, NULL, 16);
            i += 3;
        } else {
            s[j++] = s[i];
        }
    }
    s[j] = 0;
    return j;
}

static bool elem_is(const gguf_kv *kv, uint64_t i, char *want) {
    if (kv->arr_type == GGUF_TYPE_STRING) {
        size_t n = unesc(want);
        return kv->arr_str[i].len == n && memcmp(kv->arr_str[i].ptr, want, n) == 0;
    }
    return gguf_arr_f64(kv, i) == strtod(want, NULL);
}

TEST(gguf_files_agree_with_gguf_py) {
    FILE *f = fopen("tests/data/gguf-expected.tsv", "r");
    CHECK(f);
    char line[8192], open_name[256] = "";
    gguf_file *g = NULL;
    um_err e;
    int files = 0, lines = 0;
    uint64_t kv_i = 0;
    while (fgets(line, sizeof line, f) && !th_failed()) {
        line[strcspn(line, "\n")] = 0;
        char *col[10] = { 0 };
        int nc = 0;
        for (char *p = strtok(line, "\t"); p && nc < 10; p = strtok(NULL, "\t")) col[nc++] = p;
        lines++;
        if (!strcmp(col[1], "file")) {
            gguf_close(g);
            snprintf(open_name, sizeof open_name, "tests/data/%s", col[0]);
            CHECK_MSG(gguf_open(&g, open_name, &e) == UM_OK, "%s", e.msg);
            CHECK_EQ(gguf_version(g), atoi(col[2]));
            CHECK_EQ(gguf_n_kv(g), atoi(col[3]));
            CHECK_EQ(gguf_n_tensors(g), atoi(col[4]));
            files++;
            kv_i = 0;
            continue;
        }
        unesc(col[2]);
        if (!strcmp(col[1], "tensor")) {
            const gguf_tensor *t = gguf_find_tensor(g, col[2]);
            CHECK_MSG(t, "%s: no tensor %s", open_name, col[2]);
            char ne[96];
            ne[0] = 0;
            for (uint32_t d = 0; d < t->n_dims; d++)
                snprintf(ne + strlen(ne), sizeof ne - strlen(ne), d ? ",%llu" : "%llu", (unsigned long long)t->ne[d]);
            uint64_t sum = 0;
            for (uint64_t i = 0; i < t->size; i++) sum += ((const uint8_t *)t->data)[i];
            CHECK_MSG(t->type == (uint32_t)atoi(col[3]) && !strcmp(ne, col[4]) && t->size == strtoull(col[5], NULL, 10) &&
                      gguf_data_offset(g) + t->offset == strtoull(col[6], NULL, 10) && sum == strtoull(col[7], NULL, 10),
                      "%s: tensor %s", open_name, col[2]);
            continue;
        }
        const gguf_kv *kv = gguf_kv_at(g, kv_i++);   /* same order as in the file */
        CHECK_MSG(kv && gguf_str_eq(kv->key, col[2]), "%s: key %llu is not %s", open_name,
                  (unsigned long long)kv_i - 1, col[2]);
        if (!strcmp(col[1], "kv")) {
            CHECK_MSG(!strcmp(gguf_type_name(kv->type), col[3]), "%s: %s type %s", open_name, col[2], col[3]);
            if (kv->type == GGUF_TYPE_STRING) {
                size_t n = unesc(col[4]);
                CHECK_MSG(kv->v.s.len == n && !memcmp(kv->v.s.ptr, col[4], n), "%s: %s", open_name, col[2]);
            } else if (kv->type == GGUF_TYPE_FLOAT32 || kv->type == GGUF_TYPE_FLOAT64) {
                CHECK(kv->v.f == strtod(col[4], NULL));
            } else if (col[4][0] == '-') {
                CHECK(kv->v.i == strtoll(col[4], NULL, 10));
            } else {
                CHECK(kv->v.u == strtoull(col[4], NULL, 10));
            }
            continue;
        }
        CHECK(kv->type == GGUF_TYPE_ARRAY && !strcmp(gguf_type_name(kv->arr_type), col[3]));
        uint64_t n = strtoull(col[4], NULL, 10);
        CHECK_EQ(kv->arr_n, n);
        double sum = 0;
        for (uint64_t i = 0; i < n; i++)
            sum += kv->arr_type == GGUF_TYPE_STRING ? (double)kv->arr_str[i].len : gguf_arr_f64(kv, i);
        CHECK_MSG(sum == strtod(col[5], NULL), "%s: %s sum %.17g vs %s", open_name, col[2], sum, col[5]);
        if (n)
            CHECK_MSG(elem_is(kv, 0, col[6]) && elem_is(kv, n / 2, col[7]) && elem_is(kv, n - 1, col[8]),
                      "%s: %s elements", open_name, col[2]);
    }
    gguf_close(g);
    fclose(f);
    CHECK_EQ(files, 7);
    CHECK(lines > 150);
}

/* ------------------------------------------------------------------ broken files */

/* A valid base: keys k.aa (string), k.bb (array of u32), general.alignment; tensors
 * t.aa (f32 [8]) and t.bb (q8_0 [32, 2]). */
static uint8_t base_f32[32];
static uint8_t base_q8[68];
static int make_base(uint8_t **buf, size_t *n) {
    gguf_writer *w = gguf_writer_new();
    static const uint32_t arr[3] = { 1, 2, 3 };
    gguf_set_str(w, "k.aa", "value");
    gguf_set_arr(w, "k.bb", GGUF_TYPE_UINT32, arr, 3);
    gguf_set_u32(w, "general.alignment", 32);
    uint64_t ne1[1] = { 8 }, ne2[2] = { 32, 2 };
    um_err e;
    gguf_add_tensor(w, "t.aa", UM_TYPE_F32, 1, ne1, base_f32, sizeof base_f32, &e);
    gguf_add_tensor(w, "t.bb", UM_TYPE_Q8_0, 2, ne2, base_q8, sizeof base_q8, &e);
    int rc = gguf_writer_write_mem(w, buf, n, &e);
    gguf_writer_free(w);
    return rc;
}

typedef struct broken {
    const char *name;           /* also the seed file name */
    uint8_t    *p;
    size_t      n;
    char        want[256];      /* exact expected message */
} broken;

/* Byte offsets in the base file, found by content rather than hard-coded. */
typedef struct layout {
    uint64_t kv_aa, kv_bb, kv_align;   /* start of each key record */
    uint64_t t_aa, t_bb;               /* start of each tensor info record */
} layout;

static layout base_layout(const uint8_t *p, size_t n) {
    layout L;
    L.kv_aa = find(p, n, "k.aa") - 8;
    L.kv_bb = find(p, n, "k.bb") - 8;
    L.kv_align = find(p, n, "general.alignment") - 8;
    L.t_aa = find(p, n, "t.aa") - 8;
    L.t_bb = find(p, n, "t.bb") - 8;
    return L;
}

static int n_broken;
static broken cases[40];

static broken *add_case(const char *name, const uint8_t *base, size_t n, size_t keep) {
    broken *b = &cases[n_broken++];
    b->name = name;
    b->n = keep;
    b->p = malloc(n ? n : 1);
    memcpy(b->p, base, n);
    return b;
}

#define WANT(b, ...) snprintf((b)->want, sizeof (b)->want, __VA_ARGS__)

static void make_broken(const uint8_t *base, size_t n) {
    layout L = base_layout(base, n);
    broken *b;
    uint64_t data_off = (L.t_bb + 8 + 4 + 4 + 16 + 4 + 8 + 31) / 32 * 32;   /* t.bb: name 4 bytes, 2 dims */
    n_broken = 0;

    b = add_case("empty", base, n, 0);
    WANT(b, "truncated file: magic needs 4 bytes, only 0 left (at byte 0)");
    b = add_case("truncated-header", base, n, 10);
    WANT(b, "truncated file: tensor count needs 8 bytes, only 2 left (at byte 8)");
    b = add_case("bad-magic", base, n, n);
    b->p[0] = 'X';
    WANT(b, "bad magic 0x46554758, not a GGUF file (at byte 0)");
    b = add_case("version-1", base, n, n);
    put32(b->p, 4, 1);
    WANT(b, "unsupported GGUF version 1 (unmask reads 2 and 3) (at byte 4)");
    b = add_case("version-big-endian", base, n, n);
    put32(b->p, 4, 0x03000000);
    WANT(b, "unsupported GGUF version 50331648 (unmask reads 2 and 3; big-endian file?) (at byte 4)");
    b = add_case("huge-tensor-count", base, n, n);
    put64(b->p, 8, 1ull << 40);
    WANT(b, "tensor count 1099511627776 exceeds the limit 1048576 (at byte 8)");
    b = add_case("huge-key-count", base, n, n);
    put64(b->p, 16, UINT64_MAX);
    WANT(b, "key count 18446744073709551615 exceeds the limit 1048576 (at byte 16)");
    b = add_case("key-count-past-end", base, n, n);
    put64(b->p, 16, 100000);
    WANT(b, "100000 keys and 2 tensors cannot fit in the %zu bytes left (at byte 8)", n - 24);
    b = add_case("truncated-in-keys", base, n, L.kv_bb + 10);
    put64(b->p, 8, 0);                          /* no tensors, so the counts fit what is left */
    WANT(b, "key length 4 runs past end of file (2 bytes left) (at byte %llu)",
         (unsigned long long)L.kv_bb);
    b = add_case("key-length-limit", base, n, n);
    put64(b->p, L.kv_aa, 1u << 20);
    WANT(b, "key length 1048576 exceeds the limit 65535 (at byte %llu)", (unsigned long long)L.kv_aa);
    b = add_case("string-past-end", base, n, n);
    put64(b->p, L.kv_aa + 16, 1ull << 62);      /* the value's length: after key (8+4) and type (4) */
    WANT(b, "key 'k.aa': string length 4611686018427387904 runs past end of file (%zu bytes left) (at byte %llu)",
         n - (size_t)(L.kv_aa + 24), (unsigned long long)(L.kv_aa + 16));
    b = add_case("unknown-value-type", base, n, n);
    put32(b->p, L.kv_aa + 12, 13);
    WANT(b, "key 'k.aa': unknown value type 13 (at byte %llu)", (unsigned long long)L.kv_aa);
    b = add_case("nested-array", base, n, n);
    put32(b->p, L.kv_bb + 16, GGUF_TYPE_ARRAY);
    WANT(b, "key 'k.bb': nested arrays are not supported: array element type 9 (at byte %llu)",
         (unsigned long long)L.kv_bb);
    b = add_case("array-past-end", base, n, n);
    put64(b->p, L.kv_bb + 20, 1ull << 61);
    WANT(b, "key 'k.bb': array of 2305843009213693952 uint32 elements runs past end of file (%zu bytes left) (at byte %llu)",
         n - (size_t)(L.kv_bb + 28), (unsigned long long)L.kv_bb);
    b = add_case("duplicate-key", base, n, n);
    memcpy(b->p + L.kv_bb + 8, "k.aa", 4);
    WANT(b, "duplicate key 'k.aa' (at byte %llu)", (unsigned long long)L.kv_bb);
    b = add_case("alignment-not-power-of-two", base, n, n);
    put32(b->p, L.kv_align + 8 + 17 + 4, 48);
    WANT(b, "general.alignment 48 is not a power of two (at byte %llu)", (unsigned long long)L.kv_align);
    b = add_case("alignment-wrong-type", base, n, n);
    put32(b->p, L.kv_align + 8 + 17, GGUF_TYPE_INT32);
    WANT(b, "general.alignment has type int32, expected uint32 (at byte %llu)", (unsigned long long)L.kv_align);
    b = add_case("n-dims-5", base, n, n);
    put32(b->p, L.t_aa + 12, 5);
    WANT(b, "tensor 't.aa': n_dims 5 is not in 1..4 (at byte %llu)", (unsigned long long)L.t_aa);
    b = add_case("dims-overflow", base, n, n);
    put64(b->p, L.t_bb + 16, 1ull << 32);       /* ne[0] */
    put64(b->p, L.t_bb + 24, 1ull << 32);       /* ne[1]: product 2^64 */
    WANT(b, "tensor 't.bb': element count 4294967296 x 4294967296 x 1 x 1 overflows (at byte %llu)",
         (unsigned long long)L.t_bb);
    b = add_case("dim-negative", base, n, n);
    put64(b->p, L.t_aa + 16, UINT64_MAX);
    WANT(b, "tensor 't.aa': element count 18446744073709551615 x 1 x 1 x 1 overflows (at byte %llu)",
         (unsigned long long)L.t_aa);
    b = add_case("unknown-type-id", base, n, n);
    put32(b->p, L.t_aa + 24, 4);
    WANT(b, "tensor 't.aa': unknown type id 4 (at byte %llu)", (unsigned long long)L.t_aa);
    b = add_case("type-id-huge", base, n, n);
    put32(b->p, L.t_aa + 24, 0xffffffffu);
    WANT(b, "tensor 't.aa': unknown type id 4294967295 (at byte %llu)", (unsigned long long)L.t_aa);
    b = add_case("ne0-not-block-multiple", base, n, n);
    put64(b->p, L.t_bb + 16, 16);
    WANT(b, "tensor 't.bb': ne[0] = 16 is not a multiple of the q8_0 block size 32 (at byte %llu)",
         (unsigned long long)L.t_bb);
    b = add_case("size-overflow", base, n, n);
    put64(b->p, L.t_aa + 16, 1ull << 62);       /* 2^62 f32 elements = 2^64 bytes */
    WANT(b, "tensor 't.aa': byte size overflows (at byte %llu)", (unsigned long long)L.t_aa);
    b = add_case("duplicate-tensor", base, n, n);
    memcpy(b->p + L.t_bb + 8, "t.aa", 4);
    WANT(b, "duplicate tensor name 't.aa' (at byte %llu)", (unsigned long long)L.t_bb);
    b = add_case("misaligned-offset", base, n, n);
    put64(b->p, L.t_bb + 36, 64 + 4);
    WANT(b, "tensor 't.bb': data offset 68 is not a multiple of the alignment 32 (at byte %llu)",
         (unsigned long long)L.t_bb);
    b = add_case("overlap", base, n, n);
    put64(b->p, L.t_bb + 36, 0);
    WANT(b, "tensor 't.bb': data [%llu, %llu) overlaps tensor 't.aa' [%llu, %llu) (at byte %llu)",
         (unsigned long long)data_off, (unsigned long long)data_off + 68, (unsigned long long)data_off,
         (unsigned long long)data_off + 32, (unsigned long long)L.t_bb);
    b = add_case("data-past-end", base, n, n - 40);
    WANT(b, "tensor 't.bb': data [%llu, %llu) ends past end of file (size %zu) (at byte %llu)",
         (unsigned long long)data_off + 32, (unsigned long long)data_off + 100, n - 40, (unsigned long long)L.t_bb);
    b = add_case("offset-overflow", base, n, n);
    put64(b->p, L.t_bb + 36, UINT64_MAX - 31);
    WANT(b, "tensor 't.bb': data offset 18446744073709551584 + 68 bytes overflows (at byte %llu)",
         (unsigned long long)L.t_bb);
}

TEST(gguf_broken_files_fail_with_their_message) {
    uint8_t *base; size_t n;
    um_err e;
    CHECK(make_base(&base, &n) == UM_OK);
    gguf_file *g;
    CHECK_MSG(gguf_open_mem(&g, base, n, &e) == UM_OK, "%s", e.msg);   /* the base is valid */
    CHECK_EQ(gguf_data_offset(g), (base_layout(base, n).t_bb + 44 + 31) / 32 * 32);
    gguf_close(g);
    put32(base, 4, 2);                          /* version 2 has the same layout */
    CHECK_MSG(gguf_open_mem(&g, base, n, &e) == UM_OK, "%s", e.msg);
    CHECK_EQ(gguf_version(g), 2);
    gguf_close(g);
    if (regen()) save("tests/fuzz/seeds/valid-v2.gguf", base, n);
    put32(base, 4, 3);
    make_broken(base, n);
    for (int i = 0; i < n_broken; i++) {
        broken *b = &cases[i];
        e.msg[0] = 0;
        int rc = gguf_open_mem(&g, b->p, b->n, &e);
        if (rc == UM_OK) gguf_close(g);
        CHECK_MSG(rc == UM_FAIL && g == NULL, "%s: opened", b->name);
        CHECK_MSG(!strcmp(e.msg, b->want), "%s:\n  got  %s\n  want %s", b->name, e.msg, b->want);
    }
    if (regen()) {
        char path[128];
        save("tests/fuzz/seeds/valid-base.gguf", base, n);
        for (int i = 0; i < n_broken; i++) {
            snprintf(path, sizeof path, "tests/fuzz/seeds/broken-%s.gguf", cases[i].name);
            save(path, cases[i].p, cases[i].n);
        }
    }
    for (int i = 0; i < n_broken; i++) free(cases[i].p);
    free(base);
}

/* The bound on tensor data is exact: a file that ends exactly where the last tensor's data
 * ends opens (the writer pads after it; the padding is not required), one byte less fails.
 * Expected ends are computed from the layout written above, not read back through gguf.c. */
TEST(gguf_tensor_end_bound_is_exact) {
    uint8_t *base; size_t n;
    um_err e;
    CHECK(make_base(&base, &n) == UM_OK);
    layout L = base_layout(base, n);
    uint64_t data_off = (L.t_bb + 44 + 31) / 32 * 32;   /* t.bb: name 4 bytes, 2 dims, as make_broken */
    uint64_t end = data_off + 32 + 68;                  /* t.bb: at offset 32, two q8_0 blocks of 34 bytes */
    CHECK(end <= n);
    gguf_file *g;
    CHECK_MSG(gguf_open_mem(&g, base, end, &e) == UM_OK, "exactly at the end: %s", e.msg);
    const gguf_tensor *t = gguf_find_tensor(g, "t.bb");
    CHECK(t && t->size == 68 && (const uint8_t *)t->data + t->size == base + end);
    gguf_close(g);
    CHECK(gguf_open_mem(&g, base, end - 1, &e) == UM_FAIL);
    char want[256];
    snprintf(want, sizeof want, "tensor 't.bb': data [%llu, %llu) ends past end of file (size %llu) (at byte %llu)",
             (unsigned long long)(data_off + 32), (unsigned long long)end, (unsigned long long)(end - 1),
             (unsigned long long)L.t_bb);
    CHECK_STREQ(e.msg, want);
    free(base);
}

TEST(gguf_open_reports_path) {
    gguf_file *g;
    um_err e;
    CHECK(gguf_open(&g, "tests/data/no-such.gguf", &e) == UM_FAIL && !g);
    CHECK_STREQ(e.msg, "tests/data/no-such.gguf: No such file or directory");
    CHECK(gguf_open(&g, "tests/data", &e) == UM_FAIL);
    CHECK_STREQ(e.msg, "tests/data: not a regular file (a directory)");
    CHECK(gguf_open(&g, "tests/data/vocab/README.md", &e) == UM_FAIL);
    CHECK_CONTAINS(e.msg, "tests/data/vocab/README.md: bad magic");
}

/* ------------------------------------------------------------------ tiny-llada.gguf */

/* A tiny LLaDA-shaped model with random weights: 2 layers, n_embd 32, 4 heads, n_ff 32,
 * a 103-token byte-level BPE vocabulary. Deterministic (xorshift), so regenerating gives
 * the same bytes. Matrices are Q8_0 (round to nearest, d = amax / 127), norms F32. */
enum { TL_EMBD = 32, TL_FF = 32, TL_LAYERS = 2, TL_HEADS = 4 };

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static float frand(void) {                       /* uniform in [-1, 1) */
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (float)((rng >> 40) / 8388608.0 - 1.0);
}

static void quant_q8_0(const float *x, um_block_q8_0 *y, int64_t n) {
    for (int64_t b = 0; b < n / 32; b++) {
        float amax = 0;
        for (int i = 0; i < 32; i++) amax = fmaxf(amax, fabsf(x[b * 32 + i]));
        float d = amax / 127, id = d ? 1 / d : 0;
        y[b].d = um_fp32_to_fp16(d);
        for (int i = 0; i < 32; i++) y[b].qs[i] = (int8_t)roundf(x[b * 32 + i] * id);
    }
}

typedef struct tiny_buf { void *p[32]; int n; } tiny_buf;

static int tiny_tensor(gguf_writer *w, tiny_buf *keep, const char *name, uint32_t type, uint64_t ne0, uint64_t ne1,
                       float scale) {
    int64_t n = (int64_t)(ne0 * ne1);
    float *x = malloc((size_t)n * sizeof *x);
    for (int64_t i = 0; i < n; i++) x[i] = scale == 0 ? 1 + 0.1f * frand() : scale * frand();
    uint64_t ne[2] = { ne0, ne1 }, size = (uint64_t)n * 4;
    void *data = x;
    if (type == UM_TYPE_Q8_0) {
        data = malloc((size_t)(n / 32) * sizeof(um_block_q8_0));
        quant_q8_0(x, data, n);
        free(x);
        size = (uint64_t)(n / 32) * sizeof(um_block_q8_0);
    }
    keep->p[keep->n++] = data;
    um_err e;
    return gguf_add_tensor(w, name, type, ne1 > 1 ? 2 : 1, ne, data, size, &e);
}

static int tiny_llada(uint8_t **out, size_t *n) {
    static const char *const extra[] = { "Ġt", "he", "Ġthe", "in", "er", "<|endoftext|>", "<|eot_id|>", "<|mdm_mask|>" };
    static const char *const merges[] = { "Ġ t", "h e", "Ġt he", "i n", "e r" };
    char singles[95][4];
    const char *tokens[103];
    int32_t types[103];
    for (int c = 32; c < 127; c++) {                  /* gpt-2 byte-level: space is U+0120 'Ġ' */
        if (c == ' ') strcpy(singles[0], "\xc4\xa0");
        else singles[c - 32][0] = (char)c, singles[c - 32][1] = 0;
        tokens[c - 32] = singles[c - 32];
        types[c - 32] = 1;
    }
    for (int i = 0; i < 8; i++) tokens[95 + i] = extra[i], types[95 + i] = i < 5 ? 1 : 3;
    rng = 0x9e3779b97f4a7c15ull;
    gguf_writer *w = gguf_writer_new();
    gguf_set_str(w, "general.architecture", "llada");
    gguf_set_str(w, "general.name", "tiny-llada");
    gguf_set_str(w, "general.description", "random weights, for tests only");
    gguf_set_u32(w, "general.file_type", 7);                      /* mostly Q8_0 */
    gguf_set_u32(w, "general.quantization_version", 2);
    gguf_set_u32(w, "llada.context_length", 128);
    gguf_set_u32(w, "llada.embedding_length", TL_EMBD);
    gguf_set_u32(w, "llada.block_count", TL_LAYERS);
    gguf_set_u32(w, "llada.feed_forward_length", TL_FF);
    gguf_set_u32(w, "llada.attention.head_count", TL_HEADS);
    gguf_set_u32(w, "llada.attention.head_count_kv", TL_HEADS);
    gguf_set_u32(w, "llada.rope.dimension_count", TL_EMBD / TL_HEADS);
    gguf_set_f32(w, "llada.rope.freq_base", 500000.0f);
    gguf_set_f32(w, "llada.attention.layer_norm_rms_epsilon", 1e-5f);
    gguf_set_u32(w, "llada.vocab_size", 103);
    gguf_set_str(w, "tokenizer.ggml.model", "gpt2");
    gguf_set_str(w, "tokenizer.ggml.pre", "default");
    gguf_set_arr_str(w, "tokenizer.ggml.tokens", tokens, 103);
    gguf_set_arr(w, "tokenizer.ggml.token_type", GGUF_TYPE_INT32, types, 103);
    gguf_set_arr_str(w, "tokenizer.ggml.merges", merges, 5);
    gguf_set_u32(w, "tokenizer.ggml.bos_token_id", 100);
    gguf_set_u32(w, "tokenizer.ggml.eos_token_id", 100);
    gguf_set_u32(w, "tokenizer.ggml.eot_token_id", 101);
    gguf_set_u32(w, "tokenizer.ggml.mask_token_id", 102);
    gguf_set_bool(w, "tokenizer.ggml.add_bos_token", true);
    gguf_set_str(w, "tokenizer.chat_template",
                 "{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}<|eot_id|>{% endfor %}"
                 "{% if add_generation_prompt %}<|assistant|>{% endif %}");
    tiny_buf keep = { .n = 0 };
    int rc = tiny_tensor(w, &keep, "token_embd.weight", UM_TYPE_Q8_0, TL_EMBD, 103, 0.5f);
    for (int l = 0; l < TL_LAYERS && rc == UM_OK; l++) {
        char nm[64];
#define T(suffix, type, a, b, s) (snprintf(nm, sizeof nm, "blk.%d." suffix, l), rc |= tiny_tensor(w, &keep, nm, type, a, b, s))
        T("attn_norm.weight", UM_TYPE_F32, TL_EMBD, 1, 0);
        T("attn_q.weight", UM_TYPE_Q8_0, TL_EMBD, TL_EMBD, 0.2f);
        T("attn_k.weight", UM_TYPE_Q8_0, TL_EMBD, TL_EMBD, 0.2f);
        T("attn_v.weight", UM_TYPE_Q8_0, TL_EMBD, TL_EMBD, 0.2f);
        T("attn_output.weight", UM_TYPE_Q8_0, TL_EMBD, TL_EMBD, 0.2f);
        T("ffn_norm.weight", UM_TYPE_F32, TL_EMBD, 1, 0);
        T("ffn_gate.weight", UM_TYPE_Q8_0, TL_EMBD, TL_FF, 0.2f);
        T("ffn_up.weight", UM_TYPE_Q8_0, TL_EMBD, TL_FF, 0.2f);
        T("ffn_down.weight", UM_TYPE_Q8_0, TL_FF, TL_EMBD, 0.2f);
#undef T
    }
    if (rc == UM_OK) rc = tiny_tensor(w, &keep, "output_norm.weight", UM_TYPE_F32, TL_EMBD, 1, 0);
    um_err e;
    if (rc == UM_OK) rc = gguf_writer_write_mem(w, out, n, &e);
    for (int i = 0; i < keep.n; i++) free(keep.p[i]);
    gguf_writer_free(w);
    return rc;
}

TEST(gguf_tiny_llada_is_generated) {
    uint8_t *p; size_t n;
    CHECK(tiny_llada(&p, &n) == UM_OK);
    if (regen()) save("tests/data/tiny-llada.gguf", p, n), save("tests/fuzz/seeds/valid-tiny-llada.gguf", p, n);
    gguf_file *g;
    um_err e;
    CHECK_MSG(gguf_open(&g, "tests/data/tiny-llada.gguf", &e) == UM_OK, "%s", e.msg);
    char *file; size_t file_n;
    CHECK(infile_read("tests/data/tiny-llada.gguf", (size_t)1 << 30, &file, &file_n, &e) == UM_OK);
    bool same = file_n == n && memcmp(file, p, n) == 0;
    free(file);
    CHECK_MSG(same, "tests/data/tiny-llada.gguf differs from tiny_llada(); rerun with UNMASK_REGEN=1");
    CHECK_EQ(gguf_n_tensors(g), 2 + 9 * TL_LAYERS);
    const gguf_kv *kv;
    CHECK(gguf_get_arr(g, "tokenizer.ggml.tokens", GGUF_TYPE_STRING, &kv, &e) == UM_OK);
    CHECK(kv->arr_n == 103 && gguf_str_eq(kv->arr_str[102], "<|mdm_mask|>") && gguf_str_eq(kv->arr_str[0], "\xc4\xa0"));
    const gguf_tensor *t = gguf_find_tensor(g, "blk.1.ffn_down.weight");
    CHECK(t && t->type == UM_TYPE_Q8_0 && t->ne[0] == TL_FF && t->ne[1] == TL_EMBD && t->size == 34 * 32);
    gguf_close(g);
    free(p);
}
