/*
 * umq1: the quantization fixtures of tests/data/quant and tests/data/iq (made by
 * tools/make-quant-fixtures.sh and tools/make-iq-fixtures.sh from llama.cpp's own code). The
 * UMQ1 layout: "UMQ1", u32 type, n_a, bytes_a, n_b, bytes_b, then blocks A, floats A, blocks B,
 * floats B (A: llama-quantize's blocks of a fixed input; B: random blocks), each float the
 * value llama.cpp's dequantizer gives. Test-only, header-only: included by test_quant*.c.
 */
#ifndef UM_TEST_UMQ1_H
#define UM_TEST_UMQ1_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "infile.h"
#include "util.h"

typedef struct fixture {
    uint32_t type, n_a, bytes_a, n_b, bytes_b;
    const uint8_t *qa, *qb;
    const float *ea, *eb;                   /* expected dequantized values */
    char *buf;                              /* the whole file; free() it */
} fixture;

/* Reads DIR/NAME.bin (at most max bytes); false (buf NULL, or the reason printed) when it is
 * missing or malformed. */
static inline bool load_fixture_in(const char *dir, const char *name, size_t max, fixture *f) {
    char path[256];
    snprintf(path, sizeof path, "%s/%s.bin", dir, name);
    size_t len;
    um_err e;
    memset(f, 0, sizeof *f);
    if (infile_read(path, max, &f->buf, &len, &e) != UM_OK) { fprintf(stdout, "    %s\n", e.msg); return false; }
    uint32_t h[5];
    if (len < 24 || memcmp(f->buf, "UMQ1", 4)) return false;
    memcpy(h, f->buf + 4, sizeof h);
    f->type = h[0]; f->n_a = h[1]; f->bytes_a = h[2]; f->n_b = h[3]; f->bytes_b = h[4];
    if (len != 24 + (size_t)f->bytes_a + 4u * f->n_a + f->bytes_b + 4u * f->n_b) return false;
    const char *p = f->buf + 24;
    f->qa = (const uint8_t *)p; p += f->bytes_a;
    f->ea = (const float *)p;   p += 4u * f->n_a;
    f->qb = (const uint8_t *)p; p += f->bytes_b;
    f->eb = (const float *)p;
    return true;
}

#endif
