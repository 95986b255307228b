/*
 * infile: the one rule for every file unmask reads (models, themes, models.conf, text files,
 * fonts, trainer corpora and checkpoints).
 *
 * An input must be a regular file; anything else (a FIFO, a device, a directory, a socket)
 * fails at once with "PATH: not a regular file (a FIFO)". Nothing blocks in open(): the file
 * is opened O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY, checked with fstat, and only then
 * put back in blocking mode. Standard input is read only where a flag says "-", through
 * infile_read_fd. Whatever is read into memory has a size limit, checked against the size
 * fstat reports before anything is read and again while reading (files under /proc report
 * size 0), and named in the message: "PATH: larger than the 1 MiB limit".
 */
#ifndef UM_INFILE_H
#define UM_INFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>

#include "util.h"

/* Limits for the files read whole into memory. */
#define INFILE_MAX_THEME   ((size_t)1 << 20)     /* a .theme file: 1 MiB */
#define INFILE_MAX_CONF    ((size_t)1 << 20)     /* models.conf: 1 MiB */
#define INFILE_MAX_TEXT    ((size_t)16 << 20)    /* a text or prompt file (tokenize -f): 16 MiB */
#define INFILE_MAX_FONT    ((size_t)4 << 20)     /* a PSF font: 4 MiB */
#define INFILE_MAX_TASKS   ((size_t)256 << 20)   /* an eval task file (JSONL): 256 MiB */

/* Open PATH for reading under the rule above. Returns the descriptor (blocking, close-on-exec)
 * with its fstat in *st (st may be NULL), or -1 with a one-line message naming PATH. */
int  infile_open(const char *path, struct stat *st, um_err *e);
/* Read the whole regular file PATH (at most max_bytes) into a NUL-terminated heap buffer. */
int  infile_read(const char *path, size_t max_bytes, char **data, size_t *len, um_err *e);
/* Read everything from an already open descriptor (standard input for "-") up to max_bytes;
 * name is used in messages. The descriptor is not closed. */
int  infile_read_fd(int fd, const char *name, size_t max_bytes, char **data, size_t *len, um_err *e);
/* The rule applied to a stat() already made: UM_OK for a regular file, else UM_FAIL with the
 * same "PATH: not a regular file (a FIFO)" message infile_open gives. Opens nothing. */
int  infile_check_stat(const char *path, const struct stat *st, um_err *e);
/* Does PATH name a regular file (after following symlinks)? A probe that never opens it. */
bool infile_is_regular(const char *path);

#endif
