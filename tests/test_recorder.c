/*
 * test_recorder: frames -> GIF + asciicast, read back with independent tools.
 *
 * The GIF is decoded with giflib (dlopen, as in test_gif.c) and composited here (disposal 1,
 * transparent index skipped), so frame counts, delays and pixels are what any viewer shows.
 * Expected colours come from the test's own frames (xterm-exact 0xRRGGBB values and their
 * known xterm-256 indices), never from the code under test. The cast is read line by line.
 * The last test composes real visualizer frames (view_build over the fake source, the
 * viridis theme) and checks a status-line pixel against the theme's status background.
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "fake_source.h"
#include "frame.h"
#include "frame_cells.h"
#include "recorder.h"
#include "theme.h"
#include "view.h"

#include "giflib_dl.h"

/* Exact xterm-256 colours and their palette indices (cube levels 00 5f 87 af d7 ff). */
#define RED     0xff0000u            /* index 196 */
#define BLUE    0x0000ffu            /* index 21 */
#define GREEN   0x00ff00u            /* index 46 */
#define GREY30  0x303030u            /* grey ramp 236 */
#define IDX_RED   196
#define IDX_BLUE  21
#define IDX_GREEN 46
#define IDX_GREY30 236

#define COLS 12
#define ROWS 4
#define CW 8                          /* built-in font cell: 8 x 16 px */
#define CH 16

static void tmp_path(char *buf, size_t n, const char *name) {
    snprintf(buf, n, "/tmp/unmask_test_rec_%ld_%s", (long)getpid(), name);
}

static int file_exists(const char *p) { struct stat st; return stat(p, &st) == 0; }

/* A cols x rows frame of blank cells on bg, with `text` in row 0 on fg. */
static void fill_frame(frame *f, frame_cell *cells, int cols, int rows, uint32_t bg, const char *text) {
    f->w = cols;
    f->h = rows;
    f->cells = cells;
    for (int i = 0; i < cols * rows; i++) cells[i] = tc_cell(0, 0xffffff, bg, 0);
    for (int i = 0; text && text[i] && i < cols; i++) cells[i] = tc_cell((uint8_t)text[i], 0xffffff, bg, 0);
}

/* Read a whole small file into a heap string. */
static char *slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *buf = malloc(1 << 20);
    size_t n = buf ? fread(buf, 1, (1 << 20) - 1, f) : 0;
    fclose(f);
    if (buf) buf[n] = 0;
    return buf;
}

static int count_lines_with(const char *text, const char *needle) {
    int n = 0;
    for (const char *line = text; line && *line;) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        const char *hit = strstr(line, needle);
        if (hit && hit < line + len) n++;
        line = end ? end + 1 : line + len;
    }
    return n;
}

/* ---------------------------------------------------------------- giflib */

#ifdef HAVE_GIFLIB_H

#define MAXF 64
typedef struct decoded {
    int w, h, n;
    int delay[MAXF];                  /* centiseconds */
    uint8_t *frame[MAXF];             /* (h, w) composited palette indices */
} decoded;

static void decoded_free(decoded *d) {
    for (int i = 0; i < d->n; i++) free(d->frame[i]);
    memset(d, 0, sizeof *d);
}

/* Decode and composite every frame; 0 on success, else a giflib error code. */
static int decode_gif(const char *path, decoded *d) {
    memset(d, 0, sizeof *d);
    int err = 0;
    GifFileType *gf = gl.open(path, &err);
    if (!gf) return err ? err : -1;
    if (gl.slurp(gf) != GIF_OK) { err = gf->Error; gl.close(gf, &err); return err ? err : -1; }
    d->w = gf->SWidth;
    d->h = gf->SHeight;
    uint8_t *canvas = calloc((size_t)d->w * d->h, 1);
    for (int f = 0; f < gf->ImageCount && f < MAXF; f++) {
        SavedImage *si = &gf->SavedImages[f];
        GraphicsControlBlock gcb = { .TransparentColor = NO_TRANSPARENT_COLOR };
        gl.gcb(gf, f, &gcb);
        d->delay[f] = gcb.DelayTime;
        int l = si->ImageDesc.Left, t = si->ImageDesc.Top, w = si->ImageDesc.Width, h = si->ImageDesc.Height;
        for (int y = 0; y < h; y++)
            for (int x = 0; x < w; x++) {
                int v = si->RasterBits[y * w + x];
                if (gcb.TransparentColor != NO_TRANSPARENT_COLOR && v == gcb.TransparentColor) continue;
                if (t + y < d->h && l + x < d->w) canvas[(t + y) * d->w + l + x] = (uint8_t)v;
            }
        d->frame[f] = malloc((size_t)d->w * d->h);
        memcpy(d->frame[f], canvas, (size_t)d->w * d->h);
        d->n = f + 1;
    }
    free(canvas);
    gl.close(gf, &err);
    return 0;
}
#define NEED_GIFLIB() do { if (!giflib_load()) { th_skip("libgif.so not loadable (apt-get install libgif-dev)"); return; } } while (0)
#else
#define NEED_GIFLIB() do { th_skip("gif_lib.h not installed (apt-get install libgif-dev)"); return; } while (0)
#endif

/* ---------------------------------------------------------------- tests */

/* Fixed mode (headless): one GIF frame per frame added, even unchanged ones; fixed delays,
 * the final hold; one cast marker per label and an output event per changed frame. */
TEST(recorder_fixed_mode_frames_delays_markers) {
    NEED_GIFLIB();
#ifdef HAVE_GIFLIB_H
    char gif[256], cast[256];
    tmp_path(gif, sizeof gif, "fixed.gif");
    tmp_path(cast, sizeof cast, "fixed.cast");
    recorder_opts o = { .gif_path = gif, .cast_path = cast, .cols = COLS, .rows = ROWS, .delay_cs = 7,
                        .hold_cs = 120, .title = "t" };
    recorder *r;
    um_err e = { "" };
    CHECK_MSG(recorder_open(&r, &o, &e) == UM_OK, "%s", e.msg);
    static frame_cell cells[COLS * ROWS];
    frame f = { 0 };
    const uint32_t bgs[5] = { RED, RED, BLUE, BLUE, GREEN };     /* frames 1 and 3 repeat */
    for (int i = 0; i < 5; i++) {
        fill_frame(&f, cells, COLS, ROWS, bgs[i], i == 4 ? "done" : NULL);
        char label[16];
        snprintf(label, sizeof label, "step %d", i);
        CHECK_MSG(recorder_frame(r, 0.1 * i, &f, i ? label : NULL, &e) == UM_OK, "%s", e.msg);
    }
    CHECK_EQ(recorder_gif_frames(r), 5);
    CHECK_MSG(recorder_close(r, 1.0, &e) == UM_OK, "%s", e.msg);

    decoded d;
    CHECK_EQ(decode_gif(gif, &d), 0);
    CHECK_EQ(d.w, COLS * CW);
    CHECK_EQ(d.h, ROWS * CH);
    CHECK_EQ(d.n, 5);
    const int want_idx[5] = { IDX_RED, IDX_RED, IDX_BLUE, IDX_BLUE, IDX_GREEN };
    for (int i = 0; i < 5; i++) {
        CHECK_EQ(d.delay[i], i == 4 ? 120 : 7);
        /* a pixel in the middle of the bottom-right cell: background only */
        CHECK_EQ(d.frame[i][(ROWS * CH - 8) * d.w + COLS * CW - 4], want_idx[i]);
    }
    decoded_free(&d);

    char *text = slurp(cast);
    CHECK(text);
    CHECK(!strncmp(text, "{\"version\": 2, \"width\": 12, \"height\": 4,", 40));
    CHECK_EQ(count_lines_with(text, "\"m\", \"step "), 4);
    CHECK_EQ(count_lines_with(text, "\"o\", "), 3);          /* RED, BLUE, GREEN+text: repeats add nothing */
    CHECK_EQ(count_lines_with(text, "\"m\", \"step 3\""), 1);
    free(text);
    unlink(gif);
    unlink(cast);
#endif
}

/* Real-time mode (interactive): a frame that looks the same extends the previous one; each
 * GIF frame's delay is the time to the next different frame; the last lasts until close. */
TEST(recorder_real_time_merges_and_times) {
    NEED_GIFLIB();
#ifdef HAVE_GIFLIB_H
    char gif[256];
    tmp_path(gif, sizeof gif, "rt.gif");
    recorder_opts o = { .gif_path = gif, .cols = COLS, .rows = ROWS, .real_time = true, .hold_cs = 0 };
    recorder *r;
    um_err e = { "" };
    CHECK_MSG(recorder_open(&r, &o, &e) == UM_OK, "%s", e.msg);
    static frame_cell cells[COLS * ROWS];
    frame f = { 0 };
    fill_frame(&f, cells, COLS, ROWS, RED, "a");
    CHECK(recorder_frame(r, 0.00, &f, NULL, &e) == UM_OK);
    CHECK(recorder_frame(r, 0.50, &f, NULL, &e) == UM_OK);        /* same pixels: merged */
    fill_frame(&f, cells, COLS, ROWS, RED, "b");
    CHECK(recorder_frame(r, 1.00, &f, NULL, &e) == UM_OK);
    fill_frame(&f, cells, COLS, ROWS, BLUE, "b");
    CHECK(recorder_frame(r, 1.001, &f, NULL, &e) == UM_OK);       /* 0.1 cs: clamped to 2 */
    CHECK_EQ(recorder_gif_frames(r), 3);
    CHECK_MSG(recorder_close(r, 1.251, &e) == UM_OK, "%s", e.msg);
    decoded d;
    CHECK_EQ(decode_gif(gif, &d), 0);
    CHECK_EQ(d.n, 3);
    CHECK_EQ(d.delay[0], 100);
    CHECK_EQ(d.delay[1], 2);
    CHECK_EQ(d.delay[2], 25);
    CHECK_EQ(d.frame[2][d.w * d.h - 1], IDX_BLUE);
    decoded_free(&d);
    unlink(gif);
#endif
}

/* A terminal resized mid-recording: the GIF keeps its size (the frame is cut off or padded),
 * the cast gets a resize event. */
TEST(recorder_resize_pads_gif_and_marks_cast) {
    NEED_GIFLIB();
#ifdef HAVE_GIFLIB_H
    char gif[256], cast[256];
    tmp_path(gif, sizeof gif, "rs.gif");
    tmp_path(cast, sizeof cast, "rs.cast");
    recorder_opts o = { .gif_path = gif, .cast_path = cast, .cols = COLS, .rows = ROWS, .real_time = true,
                        .pad_rgb = GREY30 };
    recorder *r;
    um_err e = { "" };
    CHECK_MSG(recorder_open(&r, &o, &e) == UM_OK, "%s", e.msg);
    static frame_cell cells[(COLS + 4) * (ROWS + 2)];
    frame f = { 0 };
    fill_frame(&f, cells, COLS, ROWS, RED, NULL);
    CHECK(recorder_frame(r, 0.0, &f, NULL, &e) == UM_OK);
    fill_frame(&f, cells, COLS - 2, ROWS - 1, BLUE, NULL);        /* smaller: padded */
    CHECK(recorder_frame(r, 0.5, &f, NULL, &e) == UM_OK);
    fill_frame(&f, cells, COLS + 4, ROWS + 2, GREEN, NULL);       /* bigger: cut off */
    CHECK(recorder_frame(r, 1.0, &f, NULL, &e) == UM_OK);
    CHECK_MSG(recorder_close(r, 1.5, &e) == UM_OK, "%s", e.msg);
    decoded d;
    CHECK_EQ(decode_gif(gif, &d), 0);
    CHECK_EQ(d.w, COLS * CW);
    CHECK_EQ(d.h, ROWS * CH);
    CHECK_EQ(d.n, 3);
    CHECK_EQ(d.frame[1][0], IDX_BLUE);
    CHECK_EQ(d.frame[1][d.w * d.h - 1], IDX_GREY30);                   /* outside the small frame */
    CHECK_EQ(d.frame[2][d.w * d.h - 1], IDX_GREEN);
    decoded_free(&d);
    char *text = slurp(cast);
    CHECK(text);
    CHECK_EQ(count_lines_with(text, "\"r\", \"10x3\""), 1);
    CHECK_EQ(count_lines_with(text, "\"r\", \"16x6\""), 1);
    free(text);
    unlink(gif);
    unlink(cast);
#endif
}

/* Glyph fallbacks: ↵ (not in Spleen) is drawn exactly like ¶ in the GIF, not as the hollow
 * box a missing glyph gets (U+4E00 here); the cast keeps the real ↵. */
TEST(recorder_gif_glyph_fallbacks) {
    NEED_GIFLIB();
#ifdef HAVE_GIFLIB_H
    char gif[256], cast[256];
    tmp_path(gif, sizeof gif, "fb.gif");
    tmp_path(cast, sizeof cast, "fb.cast");
    recorder_opts o = { .gif_path = gif, .cast_path = cast, .cols = COLS, .rows = ROWS };
    recorder *r;
    um_err e = { "" };
    CHECK_MSG(recorder_open(&r, &o, &e) == UM_OK, "%s", e.msg);
    static frame_cell cells[COLS * ROWS];
    frame f = { 0 };
    fill_frame(&f, cells, COLS, ROWS, BLUE, NULL);
    const uint32_t cps[3] = { 0x21B5, 0x00B6, 0x4E00 };          /* ↵ ¶ 一 */
    for (int i = 0; i < 3; i++) cells[i] = tc_cell(cps[i], 0xffffff, BLUE, 0);
    CHECK(recorder_frame(r, 0.0, &f, NULL, &e) == UM_OK);
    CHECK_EQ(tc_cp(&cells[0]), 0x21B5);                           /* the caller's frame is untouched */
    CHECK_MSG(recorder_close(r, 1.0, &e) == UM_OK, "%s", e.msg);
    decoded d;
    CHECK_EQ(decode_gif(gif, &d), 0);
    CHECK_EQ(d.n, 1);
    int same_as_pilcrow = 1, same_as_box = 1, ink = 0;
    for (int y = 0; y < CH; y++)
        for (int x = 0; x < CW; x++) {
            uint8_t a = d.frame[0][y * d.w + x], b = d.frame[0][y * d.w + CW + x], c = d.frame[0][y * d.w + 2 * CW + x];
            same_as_pilcrow &= a == b;
            same_as_box &= a == c;
            ink += a != IDX_BLUE;
        }
    decoded_free(&d);
    CHECK(same_as_pilcrow);
    CHECK(!same_as_box);
    CHECK(ink > 0);
    char *text = slurp(cast);
    CHECK(text);
    CHECK_CONTAINS(text, "\xE2\x86\xB5");                        /* ↵ in the cast */
    free(text);
    unlink(gif);
    unlink(cast);
#endif
}

TEST(recorder_errors) {
    recorder *r = NULL;
    um_err e = { "" };
    recorder_opts none = { .cols = 10, .rows = 4 };
    CHECK(recorder_open(&r, &none, &e) == UM_FAIL);
    CHECK_CONTAINS(e.msg, "neither");
    recorder_opts big = { .gif_path = "/tmp/x.gif", .cols = 0, .rows = 4 };
    CHECK(recorder_open(&r, &big, &e) == UM_FAIL);
    CHECK_CONTAINS(e.msg, "out of range");
    recorder_opts nodir = { .gif_path = "/nonexistent-dir/a.gif", .cols = 10, .rows = 4 };
    CHECK(recorder_open(&r, &nodir, &e) == UM_FAIL);
    CHECK_CONTAINS(e.msg, "/nonexistent-dir/a.gif");
    /* a GIF with no frame is refused at close and nothing is left at the path */
    char gif[256];
    tmp_path(gif, sizeof gif, "empty.gif");
    recorder_opts o = { .gif_path = gif, .cols = 10, .rows = 4, .real_time = true };
    CHECK_MSG(recorder_open(&r, &o, &e) == UM_OK, "%s", e.msg);
    CHECK(recorder_close(r, 1.0, &e) == UM_FAIL);
    CHECK(!file_exists(gif));
    /* abort leaves nothing either */
    static frame_cell cells[10 * 4];
    frame f = { 0 };
    fill_frame(&f, cells, 10, 4, RED, NULL);
    CHECK_MSG(recorder_open(&r, &o, &e) == UM_OK, "%s", e.msg);
    CHECK(recorder_frame(r, 0.0, &f, NULL, &e) == UM_OK);
    recorder_abort(r);
    CHECK(!file_exists(gif));
}

/* Real visualizer frames: the fake source's run composed by view_build at 100x30 with the
 * viridis theme, recorded headless. The status line's first cell is a blank in the theme's
 * status colours (#eeeeee on #303030), so every pixel of it is #303030 (xterm 236). */
TEST(recorder_view_frames_have_theme_colours) {
    NEED_GIFLIB();
#ifdef HAVE_GIFLIB_H
    enum { VW = 100, VH = 30 };
    ui_source src;
    um_err e = { "" };
    CHECK_MSG(fake_source_open(&src, 0, &e) == UM_OK, "%s", e.msg);
    theme th;
    theme_builtin(&th);
    CHECK_EQ(th.role[THEME_STATUS].bg, GREY30);
    um_settings s = src.defaults;
    s.n_gen = 24;
    s.steps = 6;
    s.block_len = 24;
    char gif[256], cast[256];
    tmp_path(gif, sizeof gif, "view.gif");
    tmp_path(cast, sizeof cast, "view.cast");
    recorder_opts o = { .gif_path = gif, .cast_path = cast, .cols = VW, .rows = VH };
    recorder *r;
    CHECK_MSG(recorder_open(&r, &o, &e) == UM_OK, "%s", e.msg);
    frame fr = { 0 };
    CHECK(frame_init(&fr, VW, VH, &e) == UM_OK);
    view_ctx vc = { 0 };
    um_snapshot *hist[64];
    int n = 0;
    um_snapshot *snap = src.start(src.self, &s, "hi", &e);
    while (snap && n < 64) {
        hist[n++] = snap;
        view_state v = { .src = &src, .hist = hist, .n_hist = n, .shown = n - 1, .th = &th, .depth = 16777216, .cursor = -1 };
        CHECK_MSG(view_build(&vc, &fr, &v, &e) == UM_OK, "%s", e.msg);
        char label[16];
        snprintf(label, sizeof label, "step %d", snap->step);
        CHECK(recorder_frame(r, 0.01 * n, &fr, snap->step ? label : NULL, &e) == UM_OK);
        if (snap->done) break;
        snap = src.step(src.self, &e);
    }
    int steps = hist[n - 1]->step;
    CHECK_EQ(steps, 6);
    CHECK_MSG(recorder_close(r, 1.0, &e) == UM_OK, "%s", e.msg);
    for (int i = 0; i < n; i++) src.release(hist[i]);
    view_ctx_free(&vc);
    frame_free(&fr);
    src.close(src.self);

    decoded d;
    CHECK_EQ(decode_gif(gif, &d), 0);
    CHECK_EQ(d.w, VW * 8);
    CHECK_EQ(d.h, VH * 16);
    CHECK_EQ(d.n, steps + 1);
    for (int f = 0; f < d.n; f++)
        for (int y = (VH - 1) * 16; y < VH * 16; y++)
            for (int x = 0; x < 8; x++)
                CHECK_MSG(d.frame[f][y * d.w + x] == IDX_GREY30, "frame %d pixel (%d,%d) = %d", f, x, y,
                          d.frame[f][y * d.w + x]);
    decoded_free(&d);
    char *text = slurp(cast);
    CHECK(text);
    CHECK_EQ(count_lines_with(text, "\"m\", \"step "), steps);
    free(text);
    unlink(gif);
    unlink(cast);
#endif
}
