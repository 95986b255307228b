/*
 * test_gif: the GIF encoder, checked with independent decoders.
 *
 * giflib (Debian libgif-dev) is loaded with dlopen so the unit-test binary needs no extra
 * link flag; it decodes every frame, and the test composites the frames itself (GIF89a
 * rules: disposal 1, transparent index skipped) and compares each composite with the exact
 * pixels that were fed in. gifsicle --info cross-checks the loop and delays. Either tool
 * missing makes its tests skip, never pass.
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "frame_cells.h"
#include "infile.h"
#include "gif.h"
#include "psf.h"
#include "render.h"

#include "giflib_dl.h"

/* ---------------------------------------------------------------- helpers */

static uint32_t lcg(uint32_t *s) { *s = *s * 1664525u + 1013904223u; return *s >> 8; }

static void tmp_path(char *buf, size_t n, const char *name) {
    snprintf(buf, n, "/tmp/unmask_test_%ld_%s", (long)getpid(), name);
}

static int file_exists(const char *p) { struct stat st; return stat(p, &st) == 0; }

#define NF 7
#define W 160
#define H 120

/* Seven frames that exercise every path: random noise (many dictionary resets), sparse
 * changes (transparency), an identical frame, a flat fill (long strings, 12-bit codes), a
 * region using all 256 colours (no free transparent index), a single-pixel change. */
static void make_frames(uint8_t fr[NF][H * W]) {
    uint32_t s = 12345;
    for (int i = 0; i < W * H; i++) fr[0][i] = (uint8_t)lcg(&s);
    memcpy(fr[1], fr[0], W * H);
    for (int k = 0; k < 40; k++) fr[1][lcg(&s) % (W * H)] = (uint8_t)(lcg(&s) % 7);
    memcpy(fr[2], fr[1], W * H);
    memset(fr[3], 17, W * H);
    memcpy(fr[4], fr[3], W * H);
    for (int y = 10; y < 26; y++)
        for (int x = 20; x < 36; x++) fr[4][y * W + x] = (uint8_t)((y - 10) * 16 + (x - 20));
    memcpy(fr[5], fr[4], W * H);
    fr[5][(H - 1) * W + (W - 1)] = 200;
    for (int i = 0; i < W * H; i++) fr[6][i] = (uint8_t)(i / W + i % W);
}

static const int delays[NF] = { 5, 1, 10, 7, 30, 12, 8 };   /* 1 is clamped to 2 */
#define FINAL_HOLD 150

static int write_test_gif(const char *path, uint8_t fr[NF][H * W], um_err *e) {
    uint8_t pal[768];
    render_palette(pal);
    gif_options o = { .loop_count = 0, .final_hold_cs = FINAL_HOLD };
    gif_writer *g;
    if (gif_open(&g, path, W, H, pal, &o, e) != UM_OK) return UM_FAIL;
    for (int i = 0; i < NF; i++)
        if (gif_add_frame(g, fr[i], delays[i], e) != UM_OK) { gif_abort(g); return UM_FAIL; }
    return gif_close(g, e);
}

/* ---------------------------------------------------------------- giflib */


TEST(gif_giflib_roundtrip_every_frame) {
#ifndef HAVE_GIFLIB_H
    th_skip("gif_lib.h not installed (apt-get install libgif-dev)");
#else
    if (!giflib_load()) { th_skip("libgif.so not loadable (apt-get install libgif-dev)"); return; }
    static uint8_t fr[NF][H * W], canvas[H * W];
    make_frames(fr);
    char path[256];
    tmp_path(path, sizeof path, "rt.gif");
    um_err e = {0};
    CHECK_MSG(write_test_gif(path, fr, &e) == UM_OK, "%s", e.msg);

    int err = 0;
    GifFileType *gf = gl.open(path, &err);
    CHECK_MSG(gf, "DGifOpenFileName error %d", err);
    int ok = gl.slurp(gf) == GIF_OK;
    if (!ok) { gl.close(gf, &err); unlink(path); CHECK_MSG(0, "DGifSlurp failed: %d", gf->Error); }
    CHECK_EQ(gf->SWidth, W);
    CHECK_EQ(gf->SHeight, H);
    CHECK_EQ(gf->ImageCount, NF);
    CHECK(gf->SColorMap && gf->SColorMap->ColorCount == 256);
    /* the global colour table is the xterm-256 palette: spot-check cube, grey and base */
    CHECK_EQ(gf->SColorMap->Colors[196].Red, 0xff);
    CHECK_EQ(gf->SColorMap->Colors[196].Green, 0);
    CHECK_EQ(gf->SColorMap->Colors[244].Red, 0x80);
    CHECK_EQ(gf->SColorMap->Colors[4].Blue, 0xee);

    /* NETSCAPE2.0 loop block: application extension then a sub-block 01 lo hi */
    int loop = -1;
    ExtensionBlock *xb = gf->SavedImages[0].ExtensionBlocks;
    for (int i = 0; i + 1 < gf->SavedImages[0].ExtensionBlockCount; i++)
        if (xb[i].Function == APPLICATION_EXT_FUNC_CODE && xb[i].ByteCount == 11 &&
            !memcmp(xb[i].Bytes, "NETSCAPE2.0", 11) && xb[i + 1].ByteCount == 3 && xb[i + 1].Bytes[0] == 1)
            loop = xb[i + 1].Bytes[1] | xb[i + 1].Bytes[2] << 8;
    CHECK_EQ(loop, 0);

    memset(canvas, 0, sizeof canvas);
    for (int f = 0; f < NF; f++) {
        SavedImage *si = &gf->SavedImages[f];
        GraphicsControlBlock gcb;
        CHECK(gl.gcb(gf, f, &gcb) == GIF_OK);
        int want_delay = f == NF - 1 ? FINAL_HOLD : delays[f] < 2 ? 2 : delays[f];
        CHECK_EQ(gcb.DelayTime, want_delay);
        CHECK_EQ(gcb.DisposalMode, DISPOSE_DO_NOT);
        int l = si->ImageDesc.Left, t = si->ImageDesc.Top, w = si->ImageDesc.Width, h = si->ImageDesc.Height;
        CHECK(l >= 0 && t >= 0 && w > 0 && h > 0 && l + w <= W && t + h <= H);
        if (f == 0) CHECK(w == W && h == H);
        if (f == 2) CHECK(w == 1 && h == 1);       /* identical frame: 1x1 */
        if (f == 5) CHECK(w == 1 && h == 1 && l == W - 1 && t == H - 1);
        for (int y = 0; y < h; y++)
            for (int x = 0; x < w; x++) {
                int v = si->RasterBits[y * w + x];
                if (gcb.TransparentColor != NO_TRANSPARENT_COLOR && v == gcb.TransparentColor) continue;
                canvas[(t + y) * W + l + x] = (uint8_t)v;
            }
        for (int i = 0; i < W * H; i++)
            CHECK_MSG(canvas[i] == fr[f][i], "frame %d pixel (%d,%d): decoded %d, fed %d",
                      f, i % W, i / W, canvas[i], fr[f][i]);
    }
    gl.close(gf, &err);
    unlink(path);
#endif
}

TEST(gif_gifsicle_info_loop_and_delays) {
    if (system("command -v gifsicle >/dev/null 2>&1") != 0) { th_skip("gifsicle not installed"); return; }
    static uint8_t fr[NF][H * W];
    make_frames(fr);
    char path[256], cmd[400], out[8192];
    tmp_path(path, sizeof path, "info.gif");
    um_err e = {0};
    CHECK_MSG(write_test_gif(path, fr, &e) == UM_OK, "%s", e.msg);
    snprintf(cmd, sizeof cmd, "gifsicle --info '%s' 2>&1", path);
    FILE *p = popen(cmd, "r");
    CHECK(p);
    size_t n = fread(out, 1, sizeof out - 1, p);
    out[n] = 0;
    int rc = pclose(p);
    CHECK_MSG(rc == 0, "gifsicle failed: %s", out);
    /* --info does not decompress; a full read-and-rewrite does, and reports corrupt LZW */
    char out2[2048];
    snprintf(cmd, sizeof cmd, "gifsicle -o /dev/null '%s' 2>&1", path);
    p = popen(cmd, "r");
    CHECK(p);
    size_t n2 = fread(out2, 1, sizeof out2 - 1, p);
    out2[n2] = 0;
    rc = pclose(p);
    unlink(path);
    CHECK_MSG(rc == 0 && n2 == 0, "gifsicle could not decode the file: %s", out2);
    CHECK_CONTAINS(out, "7 images");
    CHECK_CONTAINS(out, "logical screen 160x120");
    CHECK_CONTAINS(out, "loop forever");
    CHECK_CONTAINS(out, "delay 0.05s");
    CHECK_CONTAINS(out, "delay 0.02s");          /* the 1 cs delay, clamped */
    CHECK_CONTAINS(out, "delay 1.50s");          /* final hold */
    CHECK(!strstr(out, "warning") && !strstr(out, "error"));
}

TEST(gif_single_pixel_and_errors) {
    uint8_t pal[768];
    render_palette(pal);
    char path[256];
    tmp_path(path, sizeof path, "one.gif");
    um_err e = {0};
    gif_writer *g;
    CHECK(gif_open(&g, path, 0, 5, pal, NULL, &e) == UM_FAIL);
    CHECK_CONTAINS(e.msg, "out of range");
    CHECK(gif_open(&g, "/nonexistent-dir/x.gif", 4, 4, pal, NULL, &e) == UM_FAIL);
    CHECK_CONTAINS(e.msg, "/nonexistent-dir/x.gif");

    /* no frames: an error and nothing left behind */
    CHECK(gif_open(&g, path, 1, 1, pal, NULL, &e) == UM_OK);
    CHECK(gif_close(g, &e) == UM_FAIL);
    CHECK_CONTAINS(e.msg, "no frames");
    CHECK(!file_exists(path));

    /* the file appears only at close (atomic rename) */
    CHECK(gif_open(&g, path, 1, 1, pal, NULL, &e) == UM_OK);
    uint8_t px = 42;
    CHECK(gif_add_frame(g, &px, 10, &e) == UM_OK);
    CHECK(!file_exists(path));
    CHECK_EQ(gif_frames(g), 1);
    CHECK(gif_close(g, &e) == UM_OK);
    CHECK(file_exists(path));

    /* byte-exact: a 1x1 GIF's LZW stream is clear(256) 42 eoi(257) in 9-bit codes */
    char *d; size_t n;
    CHECK(infile_read(path, (size_t)1 << 30, &d, &n, &e) == UM_OK);
    unlink(path);
    static const uint8_t tail[] = { 0x21, 0xF9, 4, 1 << 2, 10, 0, 0, 0,    /* GCE: dispose 1, 10 cs */
                                    0x2C, 0, 0, 0, 0, 1, 0, 1, 0, 0,      /* 1x1 at (0,0) */
                                    8, 4, 0x00, 0x55, 0x04, 0x04, 0, 0x3B };
    /* codes 256, 42, 257 LSB-first in 9 bits: 0x100 | 0x02A << 9 | 0x101 << 18 */
    int ok = n == 13 + 768 + 19 + sizeof tail && !memcmp(d, "GIF89a", 6) &&
             !memcmp(d + n - sizeof tail, tail, sizeof tail);
    free(d);
    CHECK(ok);
}

/* The acceptance check at module level: cells rendered with the built-in font,
 * encoded, decoded by giflib; a pixel inside a known cell has that cell's colour. */
TEST(gif_rendered_cell_colour_via_giflib) {
#ifndef HAVE_GIFLIB_H
    th_skip("gif_lib.h not installed (apt-get install libgif-dev)");
#else
    if (!giflib_load()) { th_skip("libgif.so not loadable (apt-get install libgif-dev)"); return; }
    psf_font font;
    um_err e = {0};
    CHECK(psf_load_builtin(&font, &e) == UM_OK);
    render_ctx r;
    render_init(&r, &font);
    enum { COLS = 10, ROWS = 3 };
    static frame_cell cells[COLS * ROWS];
    for (int i = 0; i < COLS * ROWS; i++)
        cells[i] = tc_cell('.', 0x808080, 0x1c1c1c, 0);
    frame fr = { .w = COLS, .h = ROWS, .cells = cells };
    int w, h;
    render_size(&r, COLS, ROWS, &w, &h);
    static uint8_t pix[COLS * 8 * ROWS * 16];
    uint8_t pal[768];
    render_palette(pal);
    char path[256];
    tmp_path(path, sizeof path, "cells.gif");
    gif_writer *g;
    CHECK(gif_open(&g, path, w, h, pal, NULL, &e) == UM_OK);
    /* three steps: a block appears at (1,4) in a theme colour, then moves to (2,7) */
    for (int step = 0; step < 3; step++) {
        if (step == 1) cells[1 * COLS + 4] = tc_cell(0x2588, 0xd7af5f, 0x1c1c1c, 0);
        if (step == 2) { cells[1 * COLS + 4] = cells[0]; cells[2 * COLS + 7] = tc_cell(0x2588, 0x5fafd7, 0x1c1c1c, 0); }
        CHECK(render_frame(&r, &fr, pix, sizeof pix, &e) == UM_OK);
        CHECK(gif_add_frame(g, pix, 6, &e) == UM_OK);
    }
    CHECK_MSG(gif_close(g, &e) == UM_OK, "%s", e.msg);
    psf_close(&font);

    int err = 0;
    GifFileType *gf = gl.open(path, &err);
    CHECK(gf);
    int ok = gl.slurp(gf) == GIF_OK && gf->ImageCount == 3 && gf->SWidth == 80 && gf->SHeight == 48;
    static uint8_t canvas[80 * 48];
    for (int f = 0; ok && f < 3; f++) {
        SavedImage *si = &gf->SavedImages[f];
        GraphicsControlBlock gcb;
        gl.gcb(gf, f, &gcb);
        for (int y = 0; y < si->ImageDesc.Height; y++)
            for (int x = 0; x < si->ImageDesc.Width; x++) {
                int v = si->RasterBits[y * si->ImageDesc.Width + x];
                if (v != gcb.TransparentColor)
                    canvas[(si->ImageDesc.Top + y) * 80 + si->ImageDesc.Left + x] = (uint8_t)v;
            }
        /* the centre pixel of cells (1,4) and (2,7), as RGB from the file's colour table */
        GifColorType a = gf->SColorMap->Colors[canvas[(16 + 8) * 80 + 4 * 8 + 4]];
        GifColorType b = gf->SColorMap->Colors[canvas[(32 + 8) * 80 + 7 * 8 + 4]];
        uint32_t ca = (uint32_t)a.Red << 16 | a.Green << 8 | a.Blue, cb = (uint32_t)b.Red << 16 | b.Green << 8 | b.Blue;
        uint32_t wa = f == 1 ? 0xd7af5f : 0x1c1c1c, wb = f == 2 ? 0x5fafd7 : 0x1c1c1c;
        if (ca != wa || cb != wb) {
            th_fail(__FILE__, __LINE__, "frame %d: cell colours %06x %06x, want %06x %06x", f, ca, cb, wa, wb);
            ok = 0;
        }
    }
    gl.close(gf, &err);
    unlink(path);
    CHECK(ok);
#endif
}
