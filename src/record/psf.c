/*
 * psf: PC Screen Font loader (PSF1 and PSF2) with a sorted Unicode map. See psf.h.
 *
 * Invariants after a successful load: glyphs + nglyphs * glyph_bytes lies inside data;
 * every map entry's glyph < nglyphs; map is sorted by cp with no duplicate cp.
 */
#include <stdlib.h>
#include <string.h>

#include "infile.h"
#include "psf.h"

#define PSF1_MAGIC0     0x36
#define PSF1_MAGIC1     0x04
#define PSF1_MODE512    0x01
#define PSF1_MODEHASTAB 0x02
#define PSF1_MODESEQ    0x04
#define PSF1_SEPARATOR  0xFFFF
#define PSF1_STARTSEQ   0xFFFE

#define PSF2_MAGIC      0x864ab572u
#define PSF2_HAS_TABLE  0x01u
#define PSF2_SEPARATOR  0xFF
#define PSF2_STARTSEQ   0xFE

/* Sanity limits: far above any console font, low enough that sizes cannot overflow. */
#define PSF_MAX_DIM     256
#define PSF_MAX_GLYPHS  65536
#define PSF_MAX_CP      0x10FFFFu

/* ---------------------------------------------------------------- map building */

typedef struct map_builder {
    psf_map *v;
    int n, cap;
} map_builder;

static int map_push(map_builder *b, uint32_t cp, uint32_t glyph) {
    if (cp > PSF_MAX_CP) return UM_OK;            /* not a code point: ignore */
    if (b->n == b->cap) {
        int cap = b->cap ? b->cap * 2 : 512;
        psf_map *v = realloc(b->v, (size_t)cap * sizeof *v);
        if (!v) return UM_FAIL;
        b->v = v;
        b->cap = cap;
    }
    b->v[b->n].cp = cp;
    b->v[b->n].glyph = glyph;
    b->n++;
    return UM_OK;
}

static int map_cmp(const void *a, const void *b) {
    const psf_map *x = a, *y = b;
    if (x->cp != y->cp) return x->cp < y->cp ? -1 : 1;
    return x->glyph < y->glyph ? -1 : (x->glyph > y->glyph);
}

/* Sort and drop duplicate code points (the lowest glyph index wins). */
static void map_finish(map_builder *b) {
    if (b->n == 0) return;
    qsort(b->v, (size_t)b->n, sizeof *b->v, map_cmp);
    int w = 1;
    for (int i = 1; i < b->n; i++)
        if (b->v[i].cp != b->v[w - 1].cp) b->v[w++] = b->v[i];
    b->n = w;
}

/* Decode one UTF-8 sequence from p[0..n); returns its length (0 when invalid). */
static int utf8_decode(const uint8_t *p, size_t n, uint32_t *cp) {
    uint8_t c = p[0];
    int len;
    uint32_t v, min;
    if (c < 0x80) { *cp = c; return 1; }
    else if ((c & 0xE0) == 0xC0) { len = 2; v = c & 0x1F; min = 0x80; }
    else if ((c & 0xF0) == 0xE0) { len = 3; v = c & 0x0F; min = 0x800; }
    else if ((c & 0xF8) == 0xF0) { len = 4; v = c & 0x07; min = 0x10000; }
    else return 0;
    if ((size_t)len > n) return 0;
    for (int i = 1; i < len; i++) {
        if ((p[i] & 0xC0) != 0x80) return 0;
        v = (v << 6) | (p[i] & 0x3F);
    }
    if (v < min || v > PSF_MAX_CP || (v >= 0xD800 && v <= 0xDFFF)) return 0;
    *cp = v;
    return len;
}

/* ---------------------------------------------------------------- parsers */

static int parse_psf1(psf_font *f, const uint8_t *d, size_t len, map_builder *mb, um_err *e) {
    uint8_t mode = d[2];
    f->width = 8;
    f->height = d[3];
    f->row_bytes = 1;
    f->glyph_bytes = f->height;
    f->nglyphs = (mode & PSF1_MODE512) ? 512 : 256;
    if (f->height == 0) return um_errf(e, "PSF1 font has glyph height 0");
    size_t off = 4, gbytes = (size_t)f->nglyphs * (size_t)f->glyph_bytes;
    if (len - off < gbytes)
        return um_errf(e, "PSF1 font truncated: %zu glyph bytes needed, %zu present", gbytes, len - off);
    f->glyphs = d + off;
    off += gbytes;
    if (!(mode & (PSF1_MODEHASTAB | PSF1_MODESEQ))) return UM_OK;

    for (int g = 0; g < f->nglyphs; g++) {
        int in_seq = 0;
        for (;;) {
            if (len - off < 2) return um_errf(e, "PSF1 Unicode table truncated at glyph %d", g);
            uint16_t u = (uint16_t)(d[off] | d[off + 1] << 8);
            off += 2;
            if (u == PSF1_SEPARATOR) break;
            if (u == PSF1_STARTSEQ) { in_seq = 1; continue; }
            if (!in_seq && map_push(mb, u, (uint32_t)g) != UM_OK)
                return um_errf(e, "out of memory for the font's Unicode table");
        }
    }
    return UM_OK;
}

static uint32_t rd32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static int parse_psf2(psf_font *f, const uint8_t *d, size_t len, map_builder *mb, um_err *e) {
    if (len < 32) return um_errf(e, "PSF2 header truncated (%zu bytes)", len);
    uint32_t hsize = rd32(d + 8), flags = rd32(d + 12), n = rd32(d + 16);
    uint32_t gbytes1 = rd32(d + 20), h = rd32(d + 24), w = rd32(d + 28);
    if (w == 0 || h == 0 || w > PSF_MAX_DIM || h > PSF_MAX_DIM)
        return um_errf(e, "PSF2 glyph size %ux%u out of range (1..%d)", w, h, PSF_MAX_DIM);
    if (n == 0 || n > PSF_MAX_GLYPHS)
        return um_errf(e, "PSF2 glyph count %u out of range (1..%d)", n, PSF_MAX_GLYPHS);
    uint32_t row_bytes = (w + 7) / 8;
    if (gbytes1 != row_bytes * h)
        return um_errf(e, "PSF2 bytes per glyph %u, expected %u for %ux%u", gbytes1, row_bytes * h, w, h);
    if (hsize < 32 || hsize > len) return um_errf(e, "PSF2 header size %u invalid", hsize);
    size_t gbytes = (size_t)n * gbytes1;
    if (len - hsize < gbytes)
        return um_errf(e, "PSF2 font truncated: %zu glyph bytes needed, %zu present", gbytes, len - hsize);
    f->width = (int)w;
    f->height = (int)h;
    f->row_bytes = (int)row_bytes;
    f->glyph_bytes = (int)gbytes1;
    f->nglyphs = (int)n;
    f->glyphs = d + hsize;
    size_t off = hsize + gbytes;
    if (!(flags & PSF2_HAS_TABLE)) return UM_OK;

    for (uint32_t g = 0; g < n; g++) {
        int in_seq = 0;
        for (;;) {
            if (off >= len) return um_errf(e, "PSF2 Unicode table truncated at glyph %u", g);
            uint8_t c = d[off];
            if (c == PSF2_SEPARATOR) { off++; break; }
            if (c == PSF2_STARTSEQ) { off++; in_seq = 1; continue; }
            uint32_t cp;
            int k = utf8_decode(d + off, len - off, &cp);
            if (k == 0) return um_errf(e, "PSF2 Unicode table: invalid UTF-8 at byte %zu", off);
            off += (size_t)k;
            if (!in_seq && map_push(mb, cp, g) != UM_OK)
                return um_errf(e, "out of memory for the font's Unicode table");
        }
    }
    return UM_OK;
}

/* ---------------------------------------------------------------- public API */

int psf_load_mem(psf_font *f, const uint8_t *bytes, size_t len, um_err *e) {
    memset(f, 0, sizeof *f);
    if (len >= 2 && bytes[0] == 0x1f && bytes[1] == 0x8b)
        return um_errf(e, "font is gzip-compressed; decompress it first (gunzip)");
    int psf1 = len >= 4 && bytes[0] == PSF1_MAGIC0 && bytes[1] == PSF1_MAGIC1;
    int psf2 = len >= 4 && rd32(bytes) == PSF2_MAGIC;
    if (!psf1 && !psf2) return um_errf(e, "not a PSF font (bad magic)");

    f->data = um_malloc(len);
    if (!f->data) return um_errf(e, "out of memory (%zu bytes) for font", len);
    memcpy(f->data, bytes, len);

    map_builder mb = {0};
    int rc = psf1 ? parse_psf1(f, f->data, len, &mb, e) : parse_psf2(f, f->data, len, &mb, e);
    if (rc == UM_OK && mb.n == 0) {
        /* No Unicode table: the font is indexed by code point. */
        for (int g = 0; g < f->nglyphs && rc == UM_OK; g++)
            if (map_push(&mb, (uint32_t)g, (uint32_t)g) != UM_OK)
                rc = um_errf(e, "out of memory for the font's map");
    }
    if (rc != UM_OK) {
        free(mb.v);
        free(f->data);
        memset(f, 0, sizeof *f);
        return UM_FAIL;
    }
    map_finish(&mb);
    f->map = mb.v;
    f->nmap = mb.n;
    return UM_OK;
}

int psf_load(psf_font *f, const char *path, um_err *e) {
    char *buf;
    size_t len;
    memset(f, 0, sizeof *f);
    if (infile_read(path, INFILE_MAX_FONT, &buf, &len, e) != UM_OK) return UM_FAIL;
    int rc = psf_load_mem(f, (const uint8_t *)buf, len, e);
    free(buf);
    if (rc != UM_OK) return um_err_prefix(e, "%s", path);
    return UM_OK;
}

int psf_load_builtin(psf_font *f, um_err *e) {
    if (psf_load_mem(f, psf_spleen_8x16, psf_spleen_8x16_len, e) != UM_OK)
        return um_err_prefix(e, "built-in font");
    return UM_OK;
}

void psf_close(psf_font *f) {
    if (!f) return;
    free(f->map);
    free(f->data);
    memset(f, 0, sizeof *f);
}

int psf_glyph(const psf_font *f, uint32_t cp) {
    int lo = 0, hi = f->nmap - 1;
    while (lo <= hi) {
        int mid = lo + (hi - lo) / 2;
        uint32_t c = f->map[mid].cp;
        if (c == cp) return (int)f->map[mid].glyph;
        if (c < cp) lo = mid + 1; else hi = mid - 1;
    }
    return -1;
}
