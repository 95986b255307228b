/*
 * test_render: PSF loading (built-in Spleen, PSF2, hostile files), the xterm-256 palette and
 * colour mapping, and pixels of rendered cells (glyphs, wide cells, missing-glyph box,
 * underline, bold, dim, reverse). Expected values come from the font's documented contents
 * (full block = all rows 0xFF, 'A' is glyph 65) and hand-computed palette arithmetic.
 */
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "frame_cells.h"
#include "psf.h"
#include "render.h"

TEST(psf_builtin_is_spleen_8x16) {
    psf_font f, g;
    um_err e = {0};
    CHECK_MSG(psf_load_builtin(&f, &e) == UM_OK, "%s", e.msg);
    CHECK_EQ(f.width, 8);
    CHECK_EQ(f.height, 16);
    CHECK_EQ(f.nglyphs, 512);
    CHECK_EQ(psf_glyph(&f, 'A'), 65);
    CHECK_EQ(psf_glyph(&f, ' '), 32);
    int full = psf_glyph(&f, 0x2588);                     /* █ */
    CHECK(full >= 0);
    for (int y = 0; y < 16; y++) CHECK_EQ(psf_bitmap(&f, full)[y], 0xFF);
    CHECK(psf_glyph(&f, 0x2591) >= 0);                    /* ░ */
    CHECK(psf_glyph(&f, 0x2592) >= 0);                    /* ▒ */
    CHECK(psf_glyph(&f, 0x00B7) >= 0);                    /* · */
    CHECK_EQ(psf_glyph(&f, 0x4E2D), -1);                  /* 中: not in Spleen */
    CHECK_EQ(psf_glyph(&f, 0x10FFFF), -1);

    /* the compiled-in bytes are the committed data/fonts file */
    CHECK_MSG(psf_load(&g, "data/fonts/spleen-8x16.psfu", &e) == UM_OK, "%s", e.msg);
    int same = g.nglyphs == f.nglyphs && g.nmap == f.nmap &&
               !memcmp(g.glyphs, f.glyphs, (size_t)f.nglyphs * (size_t)f.glyph_bytes) &&
               !memcmp(g.map, f.map, (size_t)f.nmap * sizeof *f.map);
    psf_close(&g);
    psf_close(&f);
    CHECK(same);
}

TEST(psf2_in_memory) {
    /* two 5x3 glyphs; glyph 0 maps "a" and a sequence (skipped), glyph 1 maps U+20AC */
    uint8_t d[32 + 6 + 16];
    memset(d, 0, sizeof d);
    const uint32_t hdr[8] = { 0x864ab572u, 0, 32, 1, 2, 3, 3, 5 };
    for (int i = 0; i < 8; i++)
        for (int b = 0; b < 4; b++) d[4 * i + b] = (uint8_t)(hdr[i] >> (8 * b));
    const uint8_t glyphs[6] = { 0xF8, 0x88, 0xF8, 0x20, 0x70, 0x20 };
    memcpy(d + 32, glyphs, 6);
    const uint8_t table[] = { 'a', 0xFE, 'e', 0xCC, 0x81, 0xFF, 0xE2, 0x82, 0xAC, 0xFF };
    memcpy(d + 38, table, sizeof table);
    psf_font f;
    um_err e = {0};
    CHECK_MSG(psf_load_mem(&f, d, 38 + sizeof table, &e) == UM_OK, "%s", e.msg);
    CHECK_EQ(f.width, 5);
    CHECK_EQ(f.height, 3);
    CHECK_EQ(psf_glyph(&f, 'a'), 0);
    CHECK_EQ(psf_glyph(&f, 0x20AC), 1);
    CHECK_EQ(psf_glyph(&f, 'e'), -1);                       /* only inside a sequence */
    CHECK_EQ(psf_bitmap(&f, 1)[1], 0x70);
    psf_close(&f);

    /* the table cut short: an error naming it */
    CHECK(psf_load_mem(&f, d, 38 + 3, &e) == UM_FAIL);
    CHECK_CONTAINS(e.msg, "table truncated");
}

TEST(psf_hostile_files_give_errors) {
    psf_font f;
    um_err e = {0};
    const uint8_t gz[] = { 0x1f, 0x8b, 8, 0 };
    CHECK(psf_load_mem(&f, gz, sizeof gz, &e) == UM_FAIL);
    CHECK_CONTAINS(e.msg, "gzip");
    const uint8_t junk[] = "hello world";
    CHECK(psf_load_mem(&f, junk, sizeof junk, &e) == UM_FAIL);
    CHECK_CONTAINS(e.msg, "bad magic");
    CHECK(psf_load_mem(&f, psf_spleen_8x16, 100, &e) == UM_FAIL);           /* glyphs cut */
    CHECK_CONTAINS(e.msg, "truncated");
    CHECK(psf_load_mem(&f, psf_spleen_8x16, 4 + 512 * 16 + 10, &e) == UM_FAIL); /* table cut */
    CHECK_CONTAINS(e.msg, "table truncated");
    uint8_t huge[32] = { 0x72, 0xb5, 0x4a, 0x86 };
    huge[8] = 32;                                           /* header size */
    huge[16] = 0xff; huge[17] = 0xff; huge[18] = 0xff;      /* 16M glyphs */
    huge[20] = 2; huge[24] = 2; huge[28] = 8;
    CHECK(psf_load_mem(&f, huge, sizeof huge, &e) == UM_FAIL);
    CHECK_CONTAINS(e.msg, "glyph count");
    CHECK(psf_load(&f, "/nonexistent/font.psf", &e) == UM_FAIL);
    CHECK_CONTAINS(e.msg, "/nonexistent/font.psf");
}

TEST(render_palette_is_xterm256) {
    CHECK_EQ(render_palette_rgb(0), 0x000000);
    CHECK_EQ(render_palette_rgb(4), 0x0000ee);
    CHECK_EQ(render_palette_rgb(16), 0x000000);
    CHECK_EQ(render_palette_rgb(21), 0x0000ff);             /* cube (0,0,5) */
    CHECK_EQ(render_palette_rgb(67), 0x5f87af);             /* cube (1,2,3): 16+36+12+3 */
    CHECK_EQ(render_palette_rgb(196), 0xff0000);            /* cube (5,0,0) */
    CHECK_EQ(render_palette_rgb(231), 0xffffff);
    CHECK_EQ(render_palette_rgb(232), 0x080808);
    CHECK_EQ(render_palette_rgb(255), 0xeeeeee);
    /* every palette colour maps back to an index of exactly that colour */
    for (int i = 0; i < 256; i++) CHECK_EQ(render_palette_rgb(render_nearest(render_palette_rgb(i))), render_palette_rgb(i));
    CHECK_EQ(render_nearest(0xff0000), 196);                /* cube preferred over base 9 */
    CHECK_EQ(render_nearest(0x7f7f7f), 8);                  /* only base 8 is exact */
    /* 0x123456: nearest cube levels 00,5f,5f (d = 18^2+43^2+9^2 = 2254) beat grey 0x303030 (2360) */
    CHECK_EQ(render_nearest(0x123456), 23);
}

/* ---------------------------------------------------------------- rendered pixels */

static frame_cell C(uint32_t cp, uint32_t fg, uint32_t bg, uint8_t attr) { return tc_cell(cp, fg, bg, attr); }

enum { COLS = 6, ROWS = 2, PW = COLS * 8, PH = ROWS * 16 };
static uint8_t pix[PH * PW];

static uint32_t px(int x, int y) { return render_palette_rgb(pix[y * PW + x]); }

/* every pixel of the cell at (row, col), span cells wide, is rgb */
static int cell_all(int row, int col, int span, uint32_t rgb) {
    for (int y = 0; y < 16; y++)
        for (int x = 0; x < 8 * span; x++)
            if (px(col * 8 + x, row * 16 + y) != rgb) return 0;
    return 1;
}

TEST(render_cells_to_pixels) {
    psf_font f;
    um_err e = {0};
    CHECK(psf_load_builtin(&f, &e) == UM_OK);
    render_ctx r;
    render_init(&r, &f);
    int w, h;
    render_size(&r, COLS, ROWS, &w, &h);
    CHECK(w == PW && h == PH);

    static frame_cell cells[COLS * ROWS];
    const uint32_t RED = 0xff0000, BLUE = 0x0000ff, WHITE = 0xffffff, BLACK = 0x000000;
    for (int i = 0; i < COLS * ROWS; i++) cells[i] = C(0, WHITE, BLACK, 0);
    cells[0] = C(0x2588, RED, BLUE, 0);                     /* █: all foreground */
    cells[1] = C(' ', RED, BLUE, 0);                        /* all background */
    cells[2] = C('A', WHITE, BLACK, FRAME_UNDERLINE);
    cells[3] = C('|', WHITE, BLACK, FRAME_BOLD);
    cells[4] = C(0x2588, WHITE, BLACK, FRAME_DIM);            /* fg halfway to bg: 0x7f7f7f */
    cells[5] = C(0x2588, RED, BLUE, FRAME_REVERSE);           /* shows bg colour */
    cells[COLS + 0] = C(0x4E2D, RED, BLACK, 0);             /* 中 wide, missing: a box */
    cells[COLS + 0].width = 2;
    cells[COLS + 1] = cells[COLS + 0];
    cells[COLS + 1].width = 0;
    cells[COLS + 2] = C(0xE000, RED, BLACK, 0);             /* private use: missing, narrow */
    cells[COLS + 3] = C('e', WHITE, BLACK, 0);              /* e + combining acute */
    memcpy(cells[COLS + 3].text, "e\xCC\x81", 4);
    cells[COLS + 5] = C(0x2588, 0x123456, 0x5f87af, 0);     /* non-xterm fg -> nearest 0x005f5f */
    frame fr = { .w = COLS, .h = ROWS, .cells = cells };

    CHECK(render_frame(&r, &fr, pix, sizeof pix - 1, &e) == UM_FAIL);      /* buffer too small */
    CHECK_CONTAINS(e.msg, "pixel buffer");
    memset(pix, 0xAA, sizeof pix);
    CHECK_MSG(render_frame(&r, &fr, pix, sizeof pix, &e) == UM_OK, "%s", e.msg);

    CHECK(cell_all(0, 0, 1, RED));
    CHECK(cell_all(0, 1, 1, BLUE));
    CHECK(cell_all(0, 4, 1, 0x7f7f7f));
    CHECK(cell_all(0, 5, 1, BLUE));
    CHECK(cell_all(1, 5, 1, 0x005f5f));

    /* 'A' (glyph 65): each row's pixels follow the font bitmap; row 14 is the underline */
    const uint8_t *A = psf_bitmap(&f, 65);
    for (int y = 0; y < 16; y++)
        for (int x = 0; x < 8; x++) {
            int on = y == 14 || (A[y] >> (7 - x) & 1);
            CHECK_MSG(px(16 + x, y) == (on ? WHITE : BLACK), "'A' pixel (%d,%d)", x, y);
        }
    /* bold '|': glyph bits OR'd with themselves shifted one pixel right */
    const uint8_t *bar = psf_bitmap(&f, psf_glyph(&f, '|'));
    for (int y = 0; y < 16; y++) {
        uint8_t want = (uint8_t)(bar[y] | bar[y] >> 1);
        for (int x = 0; x < 8; x++)
            CHECK_MSG(px(24 + x, y) == ((want >> (7 - x) & 1) ? WHITE : BLACK), "bold pixel (%d,%d)", x, y);
    }
    /* the wide missing glyph: a box across 16 pixels, hollow inside */
    int y0 = 16;
    CHECK_EQ(px(1, y0 + 8), RED);                           /* left edge */
    CHECK_EQ(px(14, y0 + 8), RED);                          /* right edge, in the second cell */
    CHECK_EQ(px(8, y0 + 2), RED);                           /* top edge */
    CHECK_EQ(px(8, y0 + 8), BLACK);                         /* hollow */
    CHECK_EQ(px(0, y0 + 8), BLACK);                         /* 1-pixel margin */
    /* narrow missing glyph: a box inside its own cell */
    CHECK_EQ(px(16 + 1, y0 + 8), RED);
    CHECK_EQ(px(16 + 6, y0 + 8), RED);
    CHECK_EQ(px(16 + 3, y0 + 8), BLACK);
    /* e with a combining acute: pixels of both glyphs, nothing else */
    const uint8_t *ge = psf_bitmap(&f, psf_glyph(&f, 'e'));
    int acute = psf_glyph(&f, 0x0301);
    for (int y = 0; y < 16; y++) {
        uint8_t want = (uint8_t)(ge[y] | (acute >= 0 ? psf_bitmap(&f, acute)[y] : 0));
        for (int x = 0; x < 8; x++)
            CHECK(px(24 + x, y0 + y) == ((want >> (7 - x) & 1) ? WHITE : BLACK));
    }
    /* nothing left unpainted (index 0xAA, 0xd75fd7, is no colour of this frame) */
    for (int i = 0; i < PW * PH; i++) CHECK(pix[i] != 0xAA);

    /* a wide cell whose glyph the font has: the 8-pixel glyph centred in 16 pixels */
    static frame_cell two[2];
    two[0] = C('X', WHITE, BLACK, 0);
    two[0].width = 2;
    two[1] = two[0];
    two[1].width = 0;
    frame fw = { .w = 2, .h = 1, .cells = two };
    static uint8_t wp[16 * 16];
    CHECK(render_frame(&r, &fw, wp, sizeof wp, &e) == UM_OK);
    const uint8_t *X = psf_bitmap(&f, 'X');
    for (int y = 0; y < 16; y++)
        for (int x = 0; x < 16; x++) {
            int on = x >= 4 && x < 12 && (X[y] >> (7 - (x - 4)) & 1);
            CHECK(render_palette_rgb(wp[y * 16 + x]) == (on ? WHITE : BLACK));
        }
    psf_close(&f);
}

/* Every prefix of the font and single-byte corruptions of its header and table either
 * load or fail with a message; under `make asan` any out-of-bounds read fails the test. */
TEST(psf_truncated_and_corrupted_never_crash) {
    size_t n = psf_spleen_8x16_len;
    uint8_t *d = malloc(n);
    CHECK(d);
    psf_font f;
    um_err e = {0};
    int loaded = 0;
    for (size_t len = 0; len < n; len += 97) {
        memcpy(d, psf_spleen_8x16, len);
        e.msg[0] = 0;
        if (psf_load_mem(&f, d, len, &e) == UM_OK) { loaded++; psf_close(&f); }
        else if (!e.msg[0]) { free(d); CHECK_MSG(0, "no message for a %zu-byte prefix", len); }
    }
    CHECK_EQ(loaded, 0);                                  /* no prefix is a whole font */
    uint32_t s = 99;
    for (int k = 0; k < 300; k++) {
        memcpy(d, psf_spleen_8x16, n);
        s = s * 1664525u + 1013904223u;
        size_t at = k < 100 ? (s >> 8) % 4 : n - 1 - (s >> 8) % 2240;    /* header or table */
        d[at] = (uint8_t)(s >> 24);
        if (psf_load_mem(&f, d, n, &e) == UM_OK) {
            for (int i = 0; i < f.nmap; i++) CHECK(f.map[i].glyph < (uint32_t)f.nglyphs);
            psf_close(&f);
        }
    }
    free(d);
}

TEST(render_fit_clips_and_pads) {
    psf_font f;
    um_err e = {0};
    CHECK(psf_load_builtin(&f, &e) == UM_OK);
    render_ctx r;
    render_init(&r, &f);
    static frame_cell cells[3 * 2];
    for (int i = 0; i < 6; i++)
        cells[i] = tc_cell(0x2588, 0xff0000 + (uint32_t)i, 0, 0);   /* ff000i -> ff0000 */
    cells[1].fg = 0x00ff00;
    frame fr = { .w = 3, .h = 2, .cells = cells };
    enum { CW = 20, CH = 40 };                          /* 2.5 cells wide, 2.5 cells tall */
    static uint8_t canvas[CW * CH];
    render_frame_fit(&r, &fr, canvas, CW, CH, 0x0000ff);
    for (int y = 0; y < CH; y++)
        for (int x = 0; x < CW; x++) {
            uint32_t want = x >= 16 || y >= 32 ? 0x0000ff          /* pad: column 2 cut off */
                          : x >= 8 && y < 16 ? 0x00ff00 : 0xff0000;
            uint32_t got = render_palette_rgb(canvas[y * CW + x]);
            CHECK_MSG(got == want, "(%d,%d) %06x want %06x", x, y, got, want);
        }
    psf_close(&f);
}
