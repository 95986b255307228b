/*
 * gif: streaming GIF89a encoder with LZW and changed-region frames. See gif.h.
 *
 * Invariants: prev holds exactly what a viewer shows after the frames encoded so far;
 * pending holds the one frame added but not yet encoded (have_pending). All buffers are
 * allocated in gif_open; adding a frame allocates nothing. The first I/O error is sticky:
 * later calls fail with the same message and gif_close keeps nothing at PATH.
 *
 * LZW details (GIF89a appendix F, matched to giflib's decoder): minimum code size 8, so the
 * clear code is 256, end-of-information 257 and new strings start at 258 with 9-bit codes.
 * After writing a code the width grows by one bit when the next string to be assigned no
 * longer fits (next >= 1 << width), up to 12 bits. When the next string would be code 4095
 * a clear code is written instead and the dictionary restarts, as giflib's encoder does.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gif.h"
#include "outfile.h"

#define LZW_MIN_BITS   8
#define LZW_CLEAR      256
#define LZW_EOI        257
#define LZW_FIRST      258
#define LZW_MAX_BITS   12
#define LZW_LIMIT      4095      /* no string is assigned this code: a clear comes instead */
#define LZW_HASH       8192      /* open-addressing table, at most half full */

struct gif_writer {
    outfile *of;                 /* the output (outfile.h): a temporary until gif_close */
    FILE *fp;                    /* outfile_stream(of) */
    char *path;                  /* the name given, for messages */
    int w, h;                    /* logical screen, pixels */
    gif_options opt;
    uint8_t *prev;               /* (h, w) composited image after the encoded frames */
    uint8_t *pending;            /* (h, w) frame waiting to be encoded */
    uint8_t *sub;                /* (h, w) scratch: the sub-image being encoded */
    int pending_delay;           /* cs */
    int have_pending;
    int frames_added;
    int frames_encoded;
    uint64_t bytes;
    int failed;                  /* sticky I/O error */
    char errmsg[256];

    /* LZW state */
    uint32_t *hkey;              /* (LZW_HASH) (prefix << 8 | byte) + 1; 0 = empty */
    uint16_t *hcode;             /* (LZW_HASH) code of that string */
    uint8_t block[255];          /* current data sub-block */
    int blen;
    uint32_t acc;                /* bit accumulator, LSB first */
    int nbits;
    int width;                   /* current code width, bits */
    int next;                    /* next code to assign */
};

/* ---------------------------------------------------------------- output */

static void put(gif_writer *g, const void *p, size_t n) {
    if (g->failed) return;
    if (fwrite(p, 1, n, g->fp) != n) {
        g->failed = 1;
        snprintf(g->errmsg, sizeof g->errmsg, "%s: write failed: %s", g->path, strerror(errno));
        return;
    }
    g->bytes += n;
}

static void put_u8(gif_writer *g, unsigned v) { uint8_t b = (uint8_t)v; put(g, &b, 1); }
static void put_u16(gif_writer *g, unsigned v) {
    uint8_t b[2] = { (uint8_t)v, (uint8_t)(v >> 8) };
    put(g, b, 2);
}

static int fail_sticky(gif_writer *g, um_err *e) { return um_errf(e, "gif: %s", g->errmsg); }

/* ---------------------------------------------------------------- LZW */

static void lzw_reset(gif_writer *g) {
    memset(g->hkey, 0, LZW_HASH * sizeof *g->hkey);
    g->width = LZW_MIN_BITS + 1;
    g->next = LZW_FIRST;
}

static void block_byte(gif_writer *g, uint8_t b) {
    g->block[g->blen++] = b;
    if (g->blen == 255) {
        put_u8(g, 255);
        put(g, g->block, 255);
        g->blen = 0;
    }
}

static void write_code(gif_writer *g, int code) {
    g->acc |= (uint32_t)code << g->nbits;
    g->nbits += g->width;
    while (g->nbits >= 8) {
        block_byte(g, (uint8_t)g->acc);
        g->acc >>= 8;
        g->nbits -= 8;
    }
}

/* Write the code of a string; widen codes when the next assignment would not fit. */
static void write_data_code(gif_writer *g, int code) {
    write_code(g, code);
    if (g->next >= (1 << g->width) && g->width < LZW_MAX_BITS) g->width++;
}

static uint32_t hash_slot(uint32_t key) { return (key * 2654435761u) >> (32 - 13); }

static void lzw_encode(gif_writer *g, const uint8_t *idx, size_t n) {
    put_u8(g, LZW_MIN_BITS);
    g->acc = 0;
    g->nbits = 0;
    g->blen = 0;
    lzw_reset(g);
    write_code(g, LZW_CLEAR);

    uint32_t cur = idx[0];
    for (size_t i = 1; i < n; i++) {
        uint32_t key = (cur << 8 | idx[i]) + 1;
        uint32_t s = hash_slot(key);
        while (g->hkey[s] && g->hkey[s] != key) s = (s + 1) & (LZW_HASH - 1);
        if (g->hkey[s]) { cur = g->hcode[s]; continue; }

        write_data_code(g, (int)cur);
        if (g->next >= LZW_LIMIT) {
            write_code(g, LZW_CLEAR);
            lzw_reset(g);
        } else {
            g->hkey[s] = key;
            g->hcode[s] = (uint16_t)g->next++;
        }
        cur = idx[i];
    }
    write_data_code(g, (int)cur);
    write_code(g, LZW_EOI);
    if (g->nbits > 0) block_byte(g, (uint8_t)g->acc);
    if (g->blen > 0) {
        put_u8(g, (unsigned)g->blen);
        put(g, g->block, (size_t)g->blen);
    }
    put_u8(g, 0);                                   /* block terminator */
}

/* ---------------------------------------------------------------- frames */

/* Encode the pending frame with the given delay as the difference against prev. */
static void encode_pending(gif_writer *g, int delay_cs) {
    int x0 = 0, y0 = 0, x1 = g->w - 1, y1 = g->h - 1;   /* inclusive box */
    int transparent = -1;
    const uint8_t *cur = g->pending;

    if (g->frames_encoded > 0) {
        x0 = g->w; y0 = g->h; x1 = -1; y1 = -1;
        for (int y = 0; y < g->h; y++) {
            const uint8_t *a = cur + (size_t)y * g->w, *b = g->prev + (size_t)y * g->w;
            if (!memcmp(a, b, (size_t)g->w)) continue;
            if (y0 > y) y0 = y;
            y1 = y;
            int l = 0, r = g->w - 1;
            while (a[l] == b[l]) l++;
            while (a[r] == b[r]) r--;
            if (l < x0) x0 = l;
            if (r > x1) x1 = r;
        }
        if (y1 < 0) {
            x0 = y0 = x1 = y1 = 0;                  /* identical: a 1x1 unchanged image */
        } else {
            int used[256] = {0};
            for (int y = y0; y <= y1; y++)
                for (int x = x0; x <= x1; x++) {
                    size_t o = (size_t)y * g->w + x;
                    if (cur[o] != g->prev[o]) used[cur[o]] = 1;
                }
            for (int i = 255; i >= 0; i--) if (!used[i]) { transparent = i; break; }
        }
    }

    int bw = x1 - x0 + 1, bh = y1 - y0 + 1;
    uint8_t *s = g->sub;
    for (int y = y0; y <= y1; y++) {
        const uint8_t *a = cur + (size_t)y * g->w, *b = g->prev + (size_t)y * g->w;
        for (int x = x0; x <= x1; x++)
            *s++ = (transparent >= 0 && a[x] == b[x]) ? (uint8_t)transparent : a[x];
    }

    /* graphic control extension: disposal 1 (do not dispose), optional transparency */
    uint8_t gce[8] = { 0x21, 0xF9, 4, (uint8_t)(1 << 2 | (transparent >= 0)),
                       (uint8_t)delay_cs, (uint8_t)(delay_cs >> 8),
                       (uint8_t)(transparent >= 0 ? transparent : 0), 0 };
    put(g, gce, sizeof gce);
    put_u8(g, 0x2C);                                /* image descriptor */
    put_u16(g, (unsigned)x0);
    put_u16(g, (unsigned)y0);
    put_u16(g, (unsigned)bw);
    put_u16(g, (unsigned)bh);
    put_u8(g, 0);                                   /* no local table, not interlaced */
    lzw_encode(g, g->sub, (size_t)bw * (size_t)bh);

    for (int y = y0; y <= y1; y++)
        memcpy(g->prev + (size_t)y * g->w + x0, cur + (size_t)y * g->w + x0, (size_t)bw);
    g->frames_encoded++;
}

/* ---------------------------------------------------------------- public API */

static void writer_free(gif_writer *g) {
    if (!g) return;
    outfile_abort(g->of);
    free(g->path);
    free(g->prev); free(g->pending); free(g->sub);
    free(g->hkey); free(g->hcode);
    free(g);
}

int gif_open(gif_writer **out, const char *path, int w, int h, const uint8_t *palette_rgb,
             const gif_options *opts, um_err *e) {
    *out = NULL;
    if (w < 1 || h < 1 || w > 65535 || h > 65535)
        return um_errf(e, "gif: frame size %dx%d out of range (1..65535)", w, h);
    gif_writer *g = um_calloc(1, sizeof *g);
    if (!g) return um_errf(e, "gif: out of memory");
    if (opts) g->opt = *opts;
    if (g->opt.loop_count < 0 || g->opt.loop_count > 65535) g->opt.loop_count = 0;
    g->w = w;
    g->h = h;
    size_t npix = (size_t)w * (size_t)h, plen = strlen(path);
    g->path = um_malloc(plen + 1);
    g->prev = um_malloc(npix);
    g->pending = um_malloc(npix);
    g->sub = um_malloc(npix);
    g->hkey = um_malloc(LZW_HASH * sizeof *g->hkey);
    g->hcode = um_malloc(LZW_HASH * sizeof *g->hcode);
    if (!g->path || !g->prev || !g->pending || !g->sub || !g->hkey || !g->hcode) {
        writer_free(g);
        return um_errf(e, "gif: out of memory for %dx%d frames", w, h);
    }
    memcpy(g->path, path, plen + 1);
    if (g->opt.group ? outfile_group_open(g->opt.group, &g->of, path, e) : outfile_open(&g->of, path, e)) {
        writer_free(g);
        return um_err_prefix(e, "gif");
    }
    g->fp = outfile_stream(g->of);

    put(g, "GIF89a", 6);
    put_u16(g, (unsigned)w);
    put_u16(g, (unsigned)h);
    put_u8(g, 0xF7);             /* global table, 8-bit colour resolution, 2^(7+1) entries */
    put_u8(g, 0);                /* background colour index */
    put_u8(g, 0);                /* no aspect ratio */
    put(g, palette_rgb, 256 * 3);
    static const uint8_t netscape[] = { 0x21, 0xFF, 11, 'N', 'E', 'T', 'S', 'C', 'A', 'P', 'E',
                                        '2', '.', '0', 3, 1 };
    put(g, netscape, sizeof netscape);
    put_u16(g, (unsigned)g->opt.loop_count);
    put_u8(g, 0);
    if (g->failed) {
        um_errf(e, "gif: %s", g->errmsg);
        gif_abort(g);
        return UM_FAIL;
    }
    *out = g;
    return UM_OK;
}

static int clamp_delay(int cs) {
    return cs < GIF_MIN_DELAY_CS ? GIF_MIN_DELAY_CS : cs > GIF_MAX_DELAY_CS ? GIF_MAX_DELAY_CS : cs;
}

int gif_add_frame(gif_writer *g, const uint8_t *pix, int delay_cs, um_err *e) {
    if (!g || !pix) return um_errf(e, "gif: add_frame without a writer or pixels");
    if (g->failed) return fail_sticky(g, e);
    if (g->have_pending) encode_pending(g, g->pending_delay);
    if (g->failed) return fail_sticky(g, e);
    memcpy(g->pending, pix, (size_t)g->w * (size_t)g->h);
    g->pending_delay = clamp_delay(delay_cs);
    g->have_pending = 1;
    g->frames_added++;
    return UM_OK;
}

int gif_close(gif_writer *g, um_err *e) {
    if (!g) return um_errf(e, "gif: close of a writer that is not open");
    if (!g->failed && !g->have_pending) {
        um_errf(e, "gif: %s: no frames recorded, nothing written", g->path);
        gif_abort(g);
        return UM_FAIL;
    }
    if (!g->failed) {
        int d = g->pending_delay;
        if (g->opt.final_hold_cs > d) d = clamp_delay(g->opt.final_hold_cs);
        encode_pending(g, d);
        put_u8(g, 0x3B);                            /* trailer */
    }
    if (g->failed) {
        um_errf(e, "gif: %s", g->errmsg);
        gif_abort(g);
        return UM_FAIL;
    }
    outfile *of = g->of;
    g->of = NULL;
    g->fp = NULL;
    writer_free(g);
    if (outfile_commit(of, e)) return um_err_prefix(e, "gif");
    return UM_OK;
}

void gif_abort(gif_writer *g) {
    writer_free(g);              /* outfile_abort removes the temporary file */
}

int gif_frames(const gif_writer *g) { return g->frames_added; }
uint64_t gif_bytes(const gif_writer *g) { return g->bytes; }
