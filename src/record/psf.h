/*
 * psf: PC Screen Font loader (PSF1 and PSF2, uncompressed) with Unicode lookup.
 *
 * A loaded font owns a private copy of the file bytes; glyph bitmaps point into it. The
 * Unicode table (or, without one, the identity map glyph i = U+i) is turned into an array of
 * (code point, glyph) pairs sorted by code point, so lookup is a binary search. Every count
 * and offset in the file is checked against the file size before use; a bad file gives a
 * one-line error, never a crash. Multi-code-point sequences in the table are skipped (the
 * renderer draws combining marks as separate overlays).
 *
 * Gzip-compressed fonts (.psfu.gz) are refused with a message: unmask does not link zlib.
 * The built-in font is Spleen 8x16 (build/VARIANT/generated/psf_spleen.c, BSD-2-Clause, data/fonts/).
 */
#ifndef UM_PSF_H
#define UM_PSF_H

#include <stddef.h>
#include <stdint.h>

#include "util.h"

typedef struct psf_map {
    uint32_t cp;                 /* Unicode code point */
    uint32_t glyph;              /* glyph index, < nglyphs */
} psf_map;

typedef struct psf_font {
    int width, height;           /* glyph cell in pixels */
    int row_bytes;               /* bytes per bitmap row: (width + 7) / 8 */
    int glyph_bytes;             /* height * row_bytes */
    int nglyphs;
    const uint8_t *glyphs;       /* (nglyphs, height, row_bytes), bit 7 of byte 0 = leftmost pixel */
    psf_map *map;                /* (nmap) sorted by cp, one entry per code point */
    int nmap;
    uint8_t *data;               /* owned copy of the file */
} psf_font;

/* The Spleen 8x16 bytes compiled into the binary (build/VARIANT/generated/psf_spleen.c). */
extern const uint8_t psf_spleen_8x16[];
extern const size_t  psf_spleen_8x16_len;

/* Parse a PSF1/PSF2 image from memory (copied). On failure f is left closed. */
int  psf_load_mem(psf_font *f, const uint8_t *bytes, size_t len, um_err *e);
/* Load a PSF file from disk. */
int  psf_load(psf_font *f, const char *path, um_err *e);
/* Load the built-in Spleen 8x16. */
int  psf_load_builtin(psf_font *f, um_err *e);
void psf_close(psf_font *f);

/* Glyph index for code point cp, or -1 when the font has none. */
int  psf_glyph(const psf_font *f, uint32_t cp);
/* Bitmap of glyph g (0 <= g < nglyphs): height rows of row_bytes bytes. */
static inline const uint8_t *psf_bitmap(const psf_font *f, int g) {
    return f->glyphs + (size_t)g * (size_t)f->glyph_bytes;
}

#endif
