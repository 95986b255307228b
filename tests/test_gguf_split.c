/*
 * test_gguf_split: split models in llama.cpp's gguf-split layout (gguf.h).
 *
 * - part names and prefixes follow llama_split_path / llama_split_prefix;
 * - the plan puts tensors where gguf-split would (expected parts worked out by hand from its
 *   rules, not by the code under test);
 * - written parts carry the keys in gguf-split's order and types, the first part every other
 *   key, each part its own tensors (read back with gguf_open_mem, which never follows splits);
 * - opening any part gives one file whose tensors hold the original bytes;
 * - a missing part, a part of another split, a wrong split.no, a renamed part, a tensor in two
 *   parts and a wrong split.tensors.count each fail with a message naming the file.
 */
#include "harness.h"
#include "gguf.h"
#include "quant.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define N_T 5
static const char *const t_names[N_T] = { "a", "b", "c", "d", "e" };
static const uint32_t t_dims[N_T] = { 1, 2, 1, 2, 1 };
static const uint64_t t_ne[N_T][2] = { { 8, 1 }, { 16, 2 }, { 10, 1 }, { 4, 1 }, { 24, 1 } };
/* bytes 32, 128, 40, 16, 96; padded to 32: 32, 128, 64, 32, 96 */
static float t_data[N_T][32];

static uint64_t t_bytes(int i) { return t_ne[i][0] * t_ne[i][1] * 4; }

/* A scratch directory (mkdtemp) and paths inside it. */
static char dir[64];
static const char *in_dir(const char *name) {
    static char buf[8][160];
    static int k;
    k = (k + 1) % 8;
    snprintf(buf[k], sizeof buf[k], "%s/%s", dir, name);
    return buf[k];
}
static bool make_dir(void) {
    snprintf(dir, sizeof dir, "/tmp/unmask-split-XXXXXX");
    return mkdtemp(dir) != NULL;
}
static void remove_dir(void) {
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd)) {}
}

/* The model: two keys, then the five tensors. */
static int write_model(const char *path, um_err *e) {
    for (int i = 0; i < N_T; i++)
        for (int j = 0; j < 32; j++) t_data[i][j] = (float)(i * 100 + j) * 0.5f;
    gguf_writer *w = gguf_writer_new();
    gguf_set_str(w, "general.architecture", "llada");
    gguf_set_u32(w, "t.number", 42);
    int rc = UM_OK;
    for (int i = 0; i < N_T && rc == UM_OK; i++)
        rc = gguf_add_tensor(w, t_names[i], UM_TYPE_F32, t_dims[i], t_ne[i], t_data[i], t_bytes(i), e);
    if (rc == UM_OK) rc = gguf_writer_write(w, path, e);
    gguf_writer_free(w);
    return rc;
}

static uint8_t *slurp(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long sz = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *p = malloc((size_t)sz + 1);
    *n = p ? fread(p, 1, (size_t)sz, f) : 0;
    fclose(f);
    return p;
}

TEST(gguf_split_names) {
    char b[64];
    CHECK(gguf_split_path(b, sizeof b, "dir/m", 1, 3) == UM_OK);
    CHECK_STREQ(b, "dir/m-00002-of-00003.gguf");
    CHECK(gguf_split_path(b, 10, "dir/m", 1, 3) == UM_FAIL);
    CHECK(gguf_split_prefix(b, sizeof b, "dir/m-00002-of-00003.gguf", 1, 3) == UM_OK);
    CHECK_STREQ(b, "dir/m");
    CHECK(gguf_split_prefix(b, sizeof b, "dir/m-00002-of-00003.gguf", 0, 3) == UM_FAIL);  /* another part's name */
    CHECK(gguf_split_prefix(b, sizeof b, "dir/m-00002-of-00004.gguf", 1, 3) == UM_FAIL);
    CHECK(gguf_split_prefix(b, sizeof b, "-00002-of-00003.gguf", 1, 3) == UM_FAIL);       /* empty prefix */
    CHECK(gguf_split_prefix(b, 4, "dir/m-00002-of-00003.gguf", 1, 3) == UM_FAIL);         /* does not fit */
}

TEST(gguf_split_plan_follows_gguf_split) {
    CHECK(make_dir());
    um_err e;
    gguf_file *g;
    CHECK_MSG(write_model(in_dir("m.gguf"), &e) == UM_OK, "%s", e.msg);
    CHECK_MSG(gguf_open(&g, in_dir("m.gguf"), &e) == UM_OK, "%s", e.msg);
    CHECK_EQ(gguf_n_parts(g), 1);
    static const struct { uint64_t max_t, max_b; uint32_t n; uint32_t part[N_T]; } cases[] = {
        { 2, 0, 3, { 0, 0, 1, 1, 2 } },   /* new part at every positive multiple of 2 */
        { 1, 0, 5, { 0, 1, 2, 3, 4 } },
        { 5, 0, 1, { 0, 0, 0, 0, 0 } },
        { 0, 160, 3, { 0, 0, 1, 1, 2 } }, /* 32+128 = 160 fits; +64 does not; 64+32; +96 does not */
        { 0, 100, 4, { 0, 1, 2, 2, 3 } }, /* a tensor above the limit gets a part of its own */
        { 0, 1000, 1, { 0, 0, 0, 0, 0 } },
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        uint32_t part[N_T], n;
        CHECK_MSG(gguf_split_plan(g, cases[c].max_t, cases[c].max_b, part, &n, &e) == UM_OK, "%s", e.msg);
        CHECK_EQ(n, cases[c].n);
        for (int i = 0; i < N_T; i++) CHECK_MSG(part[i] == cases[c].part[i], "case %zu tensor %d", c, i);
    }
    uint32_t part[N_T], n;
    CHECK(gguf_split_plan(g, 0, 31, part, &n, &e) == UM_FAIL);       /* the first tensor alone is too big */
    CHECK_CONTAINS(e.msg, "a part would hold no tensor: tensor 'a'");
    CHECK(gguf_split_plan(g, 0, 0, part, &n, &e) == UM_FAIL);
    gguf_close(g);
    remove_dir();
}

/* Split m.gguf into prefix "p" by two tensors per part (3 parts). */
static int split3(um_err *e) {
    gguf_file *g;
    uint32_t part[N_T], n;
    if (gguf_open(&g, in_dir("m.gguf"), e)) return UM_FAIL;
    int rc = gguf_split_plan(g, 2, 0, part, &n, e);
    char path[3][160], *paths[3] = { path[0], path[1], path[2] };
    for (uint32_t i = 0; rc == UM_OK && i < n && i < 3; i++) gguf_split_path(path[i], sizeof path[i], in_dir("p"), i, n);
    if (rc == UM_OK) rc = n == 3 ? gguf_split_write(g, part, n, paths, e) : um_errf(e, "%u parts, not 3", n);
    gguf_close(g);
    return rc;
}

TEST(gguf_split_parts_have_gguf_split_layout) {
    CHECK(make_dir());
    um_err e;
    CHECK_MSG(write_model(in_dir("m.gguf"), &e) == UM_OK, "%s", e.msg);
    CHECK_MSG(split3(&e) == UM_OK, "%s", e.msg);
    static const char *const files[3] = { "p-00001-of-00003.gguf", "p-00002-of-00003.gguf", "p-00003-of-00003.gguf" };
    static const int first_t[3] = { 0, 2, 4 }, n_t[3] = { 2, 2, 1 };
    for (int p = 0; p < 3; p++) {
        size_t n;
        uint8_t *buf = slurp(in_dir(files[p]), &n);
        CHECK(buf);
        gguf_file *g;
        CHECK_MSG(gguf_open_mem(&g, buf, n, &e) == UM_OK, "%s", e.msg);
        /* keys: the first part every key of the model, then split.no, split.tensors.count and
         * split.count (gguf-split sets split.count last), types u16, i32, u16 */
        uint64_t k0 = p == 0 ? 2 : 0;
        CHECK_EQ(gguf_n_kv(g), k0 + 3);
        if (p == 0) {
            CHECK(gguf_str_eq(gguf_kv_at(g, 0)->key, "general.architecture"));
            CHECK(gguf_str_eq(gguf_kv_at(g, 1)->key, "t.number"));
        }
        const gguf_kv *no = gguf_kv_at(g, k0), *tc = gguf_kv_at(g, k0 + 1), *cnt = gguf_kv_at(g, k0 + 2);
        CHECK(gguf_str_eq(no->key, "split.no") && no->type == GGUF_TYPE_UINT16 && no->v.u == (uint64_t)p);
        CHECK(gguf_str_eq(tc->key, "split.tensors.count") && tc->type == GGUF_TYPE_INT32 && tc->v.i == N_T);
        CHECK(gguf_str_eq(cnt->key, "split.count") && cnt->type == GGUF_TYPE_UINT16 && cnt->v.u == 3);
        CHECK_EQ(gguf_n_tensors(g), n_t[p]);
        for (int i = 0; i < n_t[p]; i++) {
            const gguf_tensor *t = gguf_tensor_at(g, (uint64_t)i);
            int k = first_t[p] + i;
            CHECK(gguf_str_eq(t->name, t_names[k]));
            CHECK_EQ(t->n_dims, k == 1 ? 2 : 1);        /* ggml_n_dims: d's 4 x 1 is written 1-D */
            CHECK(t->size == t_bytes(k) && !memcmp(t->data, t_data[k], t_bytes(k)));
        }
        gguf_close(g);
        free(buf);
    }
    remove_dir();
}

TEST(gguf_split_opens_from_any_part) {
    CHECK(make_dir());
    um_err e;
    CHECK_MSG(write_model(in_dir("m.gguf"), &e) == UM_OK, "%s", e.msg);
    CHECK_MSG(split3(&e) == UM_OK, "%s", e.msg);
    static const char *const files[3] = { "p-00001-of-00003.gguf", "p-00002-of-00003.gguf", "p-00003-of-00003.gguf" };
    static const uint32_t part_of[N_T] = { 0, 0, 1, 1, 2 };
    for (int p = 0; p < 3; p++) {
        gguf_file *g;
        CHECK_MSG(gguf_open(&g, in_dir(files[p]), &e) == UM_OK, "%s", e.msg);
        CHECK_EQ(gguf_n_parts(g), 3);
        CHECK_STREQ(gguf_path(g), in_dir(files[0]));
        CHECK_EQ(gguf_n_tensors(g), N_T);
        uint32_t v;
        CHECK(gguf_get_u32(g, "t.number", &v, &e) == UM_OK && v == 42);
        uint64_t total = 0;
        for (uint32_t i = 0; i < 3; i++) {
            gguf_part pt = gguf_part_at(g, i);
            struct stat st;
            CHECK_STREQ(pt.path, in_dir(files[i]));
            CHECK(stat(pt.path, &st) == 0 && pt.size == (uint64_t)st.st_size);
            CHECK_EQ(pt.n_tensors, i < 2 ? 2 : 1);
            total += pt.size;
        }
        CHECK_EQ(gguf_file_size(g), total);
        for (int i = 0; i < N_T; i++) {
            const gguf_tensor *t = gguf_find_tensor(g, t_names[i]);
            CHECK(t && t == gguf_tensor_at(g, (uint64_t)i));
            CHECK_EQ(t->part, part_of[i]);
            CHECK(t->size == t_bytes(i) && !memcmp(t->data, t_data[i], t_bytes(i)));
        }
        gguf_close(g);
    }
    /* a copy of the keys is a plain file: no split.* keys */
    gguf_file *g;
    CHECK_MSG(gguf_open(&g, in_dir(files[1]), &e) == UM_OK, "%s", e.msg);
    gguf_writer *w = gguf_writer_new();
    CHECK(gguf_copy_kv(w, g, NULL) == UM_OK);
    uint8_t *buf; size_t n;
    CHECK(gguf_writer_write_mem(w, &buf, &n, &e) == UM_OK);
    gguf_file *c;
    CHECK_MSG(gguf_open_mem(&c, buf, n, &e) == UM_OK, "%s", e.msg);
    CHECK_EQ(gguf_n_kv(c), 2);
    CHECK(!gguf_find_kv(c, "split.count") && !gguf_find_kv(c, "split.no") && !gguf_find_kv(c, "split.tensors.count"));
    gguf_close(c);
    free(buf);
    gguf_writer_free(w);
    gguf_close(g);
    remove_dir();
}

/* A hand-made part: split keys as given (count 0: leave split.count out), tensors by index. */
static int write_part(const char *name, int no, int count, int tcount, const int *tens, int n_tens) {
    um_err e;
    gguf_writer *w = gguf_writer_new();
    if (no == 0) gguf_set_str(w, "general.architecture", "llada");
    gguf_set_u16(w, "split.no", (uint16_t)no);
    if (tcount >= 0) gguf_set_i32(w, "split.tensors.count", tcount);
    if (count) gguf_set_u16(w, "split.count", (uint16_t)count);
    int rc = UM_OK;
    for (int i = 0; i < n_tens && rc == UM_OK; i++) {
        int k = tens[i];
        rc = gguf_add_tensor(w, t_names[k], UM_TYPE_F32, t_dims[k], t_ne[k], t_data[k], t_bytes(k), &e);
    }
    if (rc == UM_OK) rc = gguf_writer_write(w, in_dir(name), &e);
    gguf_writer_free(w);
    return rc;
}

static void expect_fail(const char *open, const char *msg1, const char *msg2) {
    gguf_file *g = (gguf_file *)1;
    um_err e = { "" };
    int rc = gguf_open(&g, in_dir(open), &e);
    CHECK_MSG(rc == UM_FAIL && !g, "opening %s should fail", open);
    CHECK_CONTAINS(e.msg, msg1);
    if (msg2) CHECK_CONTAINS(e.msg, msg2);
}

TEST(gguf_split_bad_sets_fail_naming_the_part) {
    CHECK(make_dir());
    static const int t01[] = { 0, 1 }, t2[] = { 2 }, t1[] = { 1 }, t234[] = { 2, 3, 4 };
    /* the good two-part set q: tensors a b | c; opens */
    CHECK(write_part("q-00001-of-00002.gguf", 0, 2, 3, t01, 2) == UM_OK);
    CHECK(write_part("q-00002-of-00002.gguf", 1, 2, 3, t2, 1) == UM_OK);
    gguf_file *g;
    um_err e;
    CHECK_MSG(gguf_open(&g, in_dir("q-00002-of-00002.gguf"), &e) == UM_OK, "%s", e.msg);
    CHECK_EQ(gguf_n_tensors(g), 3);
    gguf_close(g);

    /* missing part: the message names the exact path expected */
    CHECK(write_part("m-00001-of-00002.gguf", 0, 2, 3, t01, 2) == UM_OK);
    expect_fail("m-00001-of-00002.gguf", "part 2 of 2 of the split model", in_dir("m-00002-of-00002.gguf"));
    if (th_failed()) return;
    /* a part of another split: split.count disagrees */
    CHECK(write_part("x-00001-of-00002.gguf", 0, 2, 3, t01, 2) == UM_OK);
    CHECK(write_part("x-00002-of-00002.gguf", 1, 3, 3, t2, 1) == UM_OK);
    expect_fail("x-00001-of-00002.gguf", in_dir("x-00002-of-00002.gguf"), "split.count is 3");
    if (th_failed()) return;
    expect_fail("x-00002-of-00002.gguf", "does not end in -00002-of-00003.gguf", NULL);   /* its own name disagrees */
    if (th_failed()) return;
    /* split.no disagrees with the name */
    CHECK(write_part("n-00001-of-00002.gguf", 0, 2, 3, t01, 2) == UM_OK);
    CHECK(write_part("n-00002-of-00002.gguf", 0, 2, 3, t2, 1) == UM_OK);
    expect_fail("n-00001-of-00002.gguf", "split.no is 0, but its name makes it part 2 of 2", NULL);
    if (th_failed()) return;
    /* renamed part */
    CHECK(rename(in_dir("q-00002-of-00002.gguf"), in_dir("renamed.gguf")) == 0);
    expect_fail("renamed.gguf", "does not end in -00002-of-00002.gguf (renamed part?)", NULL);
    if (th_failed()) return;
    /* a tensor in two parts */
    CHECK(write_part("d-00001-of-00002.gguf", 0, 2, 3, t01, 2) == UM_OK);
    CHECK(write_part("d-00002-of-00002.gguf", 1, 2, 3, t1, 1) == UM_OK);
    expect_fail("d-00002-of-00002.gguf", "tensor 'b' is in two parts of the split model", in_dir("d-00002-of-00002.gguf"));
    if (th_failed()) return;
    /* split.tensors.count wrong in the first part, and disagreeing in another */
    CHECK(write_part("c-00001-of-00002.gguf", 0, 2, 4, t01, 2) == UM_OK);
    CHECK(write_part("c-00002-of-00002.gguf", 1, 2, 4, t2, 1) == UM_OK);
    expect_fail("c-00001-of-00002.gguf", "split.tensors.count is 4, but the 2 parts hold 3 tensors", NULL);
    if (th_failed()) return;
    CHECK(write_part("k-00001-of-00002.gguf", 0, 2, 5, t01, 2) == UM_OK);
    CHECK(write_part("k-00002-of-00002.gguf", 1, 2, 4, t234, 3) == UM_OK);
    expect_fail("k-00001-of-00002.gguf", "split.tensors.count is 4, but the first part", NULL);
    if (th_failed()) return;
    /* split.count 0, and the first part without split.tensors.count */
    gguf_writer *w = gguf_writer_new();
    gguf_set_u16(w, "split.count", 0);
    CHECK(gguf_writer_write(w, in_dir("zero.gguf"), &e) == UM_OK);
    gguf_writer_free(w);
    expect_fail("zero.gguf", "split.count is 0", NULL);
    if (th_failed()) return;
    CHECK(write_part("t-00001-of-00002.gguf", 0, 2, -1, t01, 2) == UM_OK);
    CHECK(write_part("t-00002-of-00002.gguf", 1, 2, 3, t2, 1) == UM_OK);
    expect_fail("t-00001-of-00002.gguf", "key 'split.tensors.count' missing", NULL);
    if (th_failed()) return;
    remove_dir();
}
