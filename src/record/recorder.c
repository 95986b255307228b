/*
 * recorder: frames -> GIF + asciicast (see recorder.h).
 *
 * State: `pend` holds the pixels of the last frame not yet handed to the GIF writer (real-time
 * mode only; fixed mode hands every frame over at once) and `pend_t` when it appeared; `cur`
 * is the scratch the next frame is drawn into. Both are (h, w) palette indices, allocated at
 * open. gif_writer itself encodes one frame behind, which is what gives the final hold.
 *
 * Glyph fallbacks (render.c): characters the built-in font lacks are drawn in the GIF with
 * the nearest glyph it has; the cast keeps the real characters, since terminals have the fonts.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cast.h"
#include "gif.h"
#include "psf.h"
#include "recorder.h"
#include "render.h"


struct recorder {
    recorder_opts o;
    double        t0;            /* um_now() at open */
    /* GIF */
    gif_writer   *gif;
    psf_font      font;
    bool          have_font;
    render_ctx    rc;
    int           w, h;          /* canvas pixels */
    uint8_t      *cur;           /* (h, w) the frame being added */
    uint8_t      *pend;          /* (h, w) real-time mode: frame waiting for its delay */
    bool          have_pend;
    double        pend_t;        /* seconds: when pend appeared */
    char         *gif_path;
    /* cast */
    cast_writer  *cast;
};

static int delay_cs_between(double t0, double t1) {
    double cs = (t1 - t0) * 100.0 + 0.5;
    if (cs < GIF_MIN_DELAY_CS) return GIF_MIN_DELAY_CS;
    if (cs > GIF_MAX_DELAY_CS) return GIF_MAX_DELAY_CS;
    return (int)cs;
}

int recorder_open(recorder **out, const recorder_opts *o, um_err *e) {
    *out = NULL;
    if (!o->gif_path && !o->cast_path) return um_errf(e, "recorder: neither a GIF nor a cast file was given");
    if (o->cols < 1 || o->rows < 1 || o->cols > 1000 || o->rows > 1000)
        return um_errf(e, "recorder: size %dx%d is out of range (1..1000 cells each)", o->cols, o->rows);
    recorder *r = um_calloc(1, sizeof *r);
    if (!r) return um_errf(e, "recorder: out of memory");
    r->o = *o;
    if (r->o.delay_cs <= 0) r->o.delay_cs = RECORDER_DELAY_CS;
    if (r->o.hold_cs < 0) r->o.hold_cs = RECORDER_HOLD_CS;
    r->o.gif_path = r->o.cast_path = NULL;     /* the caller's strings are not kept */
    r->o.term = r->o.title = NULL;
    r->t0 = um_now();
    if (o->gif_path) {
        if (psf_load_builtin(&r->font, e)) goto fail;
        r->have_font = true;
        render_init(&r->rc, &r->font);
        render_size(&r->rc, o->cols, o->rows, &r->w, &r->h);
        if (r->w > 65535 || r->h > 65535) { um_errf(e, "recorder: %dx%d pixels is too big for a GIF", r->w, r->h); goto fail; }
        size_t n = (size_t)r->w * (size_t)r->h;
        r->cur = malloc(n);
        r->pend = malloc(n);
        r->gif_path = strdup(o->gif_path);
        if (!r->cur || !r->pend || !r->gif_path) { um_errf(e, "recorder: out of memory"); goto fail; }
        uint8_t pal[256 * 3];
        render_palette(pal);
        gif_options go = { .loop_count = 0, .final_hold_cs = r->o.hold_cs };
        if (gif_open(&r->gif, o->gif_path, r->w, r->h, pal, &go, e)) goto fail;
    }
    if (o->cast_path) {
        if (cast_open(&r->cast, o->cast_path, o->cols, o->rows, (int64_t)time(NULL), o->term, o->title, e)) goto fail;
    }
    *out = r;
    return UM_OK;
fail:
    recorder_abort(r);
    return UM_FAIL;
}

double recorder_elapsed(const recorder *r) { return um_now() - r->t0; }

int recorder_frame(recorder *r, double t, const frame *f, const char *label, um_err *e) {
    if (r->cast) {
        if (label && cast_marker(r->cast, t, label, e)) return UM_FAIL;
        if (cast_frame(r->cast, t, f, r->o.cast_color, e)) return UM_FAIL;
    }
    if (!r->gif) return UM_OK;
    render_frame_fit(&r->rc, f, r->cur, r->w, r->h, r->o.pad_rgb);
    if (!r->o.real_time) return gif_add_frame(r->gif, r->cur, r->o.delay_cs, e);
    size_t n = (size_t)r->w * (size_t)r->h;
    if (r->have_pend) {
        if (!memcmp(r->cur, r->pend, n)) return UM_OK;      /* looks the same: pend stays longer */
        if (gif_add_frame(r->gif, r->pend, delay_cs_between(r->pend_t, t), e)) return UM_FAIL;
    }
    uint8_t *tmp = r->pend;
    r->pend = r->cur;
    r->cur = tmp;
    r->pend_t = t;
    r->have_pend = true;
    return UM_OK;
}

static void free_recorder(recorder *r) {
    if (r->have_font) psf_close(&r->font);
    free(r->cur);
    free(r->pend);
    free(r->gif_path);
    free(r);
}

int recorder_close(recorder *r, double t, um_err *e) {
    int rc = UM_OK;
    um_err e2 = { "" };
    if (r->gif) {
        if (r->have_pend && gif_add_frame(r->gif, r->pend, delay_cs_between(r->pend_t, t), &e2)) {
            gif_abort(r->gif);
            rc = UM_FAIL;
            *e = e2;
        } else if (gif_close(r->gif, &e2)) {
            rc = UM_FAIL;
            *e = e2;
        }
        r->gif = NULL;
    }
    if (r->cast) {
        if (cast_close(r->cast, &e2) && rc == UM_OK) {
            rc = UM_FAIL;
            *e = e2;
        }
        r->cast = NULL;
    }
    free_recorder(r);
    return rc;
}

void recorder_abort(recorder *r) {
    if (!r) return;
    if (r->gif) gif_abort(r->gif);
    if (r->cast) cast_abort(r->cast);
    free_recorder(r);
}

int recorder_gif_frames(const recorder *r) {
    return r->gif ? gif_frames(r->gif) + (r->have_pend ? 1 : 0) : 0;
}

int recorder_cast_events(const recorder *r) { return r->cast ? cast_events(r->cast) : 0; }

const char *recorder_gif_path(const recorder *r) { return r->gif ? r->gif_path : NULL; }
