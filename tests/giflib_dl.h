/*
 * giflib_dl: giflib's decoder (DGifSlurp), the independent GIF decoder the recording tests
 * check unmask's encoder against, loaded with dlopen so no test build links -lgif.
 * Include after <dlfcn.h>; defines HAVE_GIFLIB_H when <gif_lib.h> exists, and then
 * giflib_load() (1 when the library and its symbols were found) and the table gl.
 */
#ifndef UM_GIFLIB_DL_H
#define UM_GIFLIB_DL_H

#if defined(__has_include)
#if __has_include(<gif_lib.h>)
#include <gif_lib.h>
#define HAVE_GIFLIB_H 1
#endif
#endif

#ifdef HAVE_GIFLIB_H
typedef GifFileType *(*open_fn)(const char *, int *);
typedef int (*slurp_fn)(GifFileType *);
typedef int (*close_fn)(GifFileType *, int *);
typedef int (*gcb_fn)(GifFileType *, int, GraphicsControlBlock *);

static struct { void *h; open_fn open; slurp_fn slurp; close_fn close; gcb_fn gcb; } gl;

static int giflib_load(void) {
    if (gl.h) return 1;
    gl.h = dlopen("libgif.so.7", RTLD_NOW);
    if (!gl.h) gl.h = dlopen("libgif.so", RTLD_NOW);
    if (!gl.h) return 0;
    gl.open = (open_fn)dlsym(gl.h, "DGifOpenFileName");
    gl.slurp = (slurp_fn)dlsym(gl.h, "DGifSlurp");
    gl.close = (close_fn)dlsym(gl.h, "DGifCloseFile");
    gl.gcb = (gcb_fn)dlsym(gl.h, "DGifSavedExtensionToGCB");
    return gl.open && gl.slurp && gl.close && gl.gcb;
}
#endif

#endif
