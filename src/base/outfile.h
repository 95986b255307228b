/*
 * outfile: every file unmask writes goes through here (GGUF models, GIFs, asciicasts, logits,
 * the trainer's checkpoints), so one set of rules protects the user's files.
 *
 * 1. Before any work, a command declares its inputs and outputs (outfile_set) and calls
 *    outfile_check. It refuses an output that is the same file as an input (st_dev/st_ino
 *    after stat() follows symlinks, so ./M, dir/../M, hard links and symlinks are all
 *    caught), two outputs that are the same file (also when neither exists yet: the real
 *    path of the parent directory plus the base name), a directory, a block device, a
 *    socket, an output it may not write, and a missing or unwritable directory, so a bad
 *    output fails at once and not after a long generation or quantization. It also refuses
 *    a declared input that exists but is not a regular file (the input rule, infile.h).
 * 2. outfile_open writes a regular (or not yet existing) target through a temporary file
 *    made by mkstemp in the target's own directory (".NAME.XXXXXX", never a fixed name),
 *    with the mode a new file would get (0666 & ~umask) or the existing target's mode and
 *    owner; outfile_commit flushes, fsyncs and renames it over the target atomically. A
 *    target reached through a symlink is replaced where the link points; the link stays.
 * 3. A FIFO or character device the user named (/dev/null, a tty, a named pipe) is written
 *    directly: opened without O_CREAT or O_TRUNC, never replaced, not fsynced. /dev/stdout,
 *    /dev/stderr, /dev/fd/N and /proc/self/fd/N are written through a dup of that descriptor,
 *    whatever it is, so `--out /dev/stdout >> log` appends. None of the writers seeks, so
 *    nothing needs a seekable file. A FIFO without a reader is refused rather than waited
 *    for (opened with O_NONBLOCK), so nothing hangs.
 * 4. Any failure (a write error such as ENOSPC, fsync, close, rename) removes the temporary
 *    file and names the OS reason: "PATH: write failed: No space left on device". Nothing
 *    partial is ever left at the target.
 * 5. Pending temporary names sit in a fixed static registry, so outfile_signal_cleanup (only
 *    unlink(), async-signal-safe) can remove them from a signal handler. Between mkstemp
 *    creating a file and its entry being published lie a few instructions; outside that
 *    window no temporary file outlives a process that dies through such a handler.
 */
#ifndef UM_OUTFILE_H
#define UM_OUTFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "util.h"

#define OUTFILE_MAX_NAMES   8    /* inputs, and outputs, one command may declare */
#define OUTFILE_MAX_PENDING 16   /* temporary files open at once in the process */

/* The files of one command: flag is how the user named each ("-m", "--gif", "OUT.gguf"). */
typedef struct outfile_set {
    int n_in, n_out;
    bool overflow;               /* more than OUTFILE_MAX_NAMES of either: check fails */
    struct { const char *flag, *path; } in[OUTFILE_MAX_NAMES], out[OUTFILE_MAX_NAMES];
} outfile_set;

void outfile_set_init(outfile_set *s);
/* Declare an input / an output (NULL path: nothing declared; strings are not copied). */
void outfile_set_input(outfile_set *s, const char *flag, const char *path);
void outfile_set_output(outfile_set *s, const char *flag, const char *path);
/* Rule 1 above; the message names both flags and paths, e.g.
 * "--gif M: is the same file as the input -m M; refusing to overwrite an input". */
int  outfile_check(const outfile_set *s, um_err *e);

typedef struct outfile outfile;

/* Open PATH for writing (rules 2 and 3). */
int   outfile_open(outfile **out, const char *path, um_err *e);
/* The stream to write to (owned by o). */
FILE *outfile_stream(outfile *o);
/* fwrite n bytes; a short write fails with "PATH: write failed: REASON". */
int   outfile_write(outfile *o, const void *p, size_t n, um_err *e);
/* The path as the caller gave it (for messages). */
const char *outfile_path(const outfile *o);
/* Written in place (a FIFO or character device) rather than through a temporary file. */
bool  outfile_direct(const outfile *o);
/* Flush and finish: fsync + rename for a regular target; frees o. On failure the temporary
 * file is removed and nothing changes at PATH. */
int   outfile_commit(outfile *o, um_err *e);
/* Discard: close and remove the temporary file (a direct output keeps what was written);
 * frees o. NULL is a no-op. */
void  outfile_abort(outfile *o);

/* Async-signal-safe: unlink every pending temporary file. For signal handlers that end the
 * process without going through outfile_commit / outfile_abort. */
void  outfile_signal_cleanup(void);

#endif
