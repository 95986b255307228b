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
 *    target that is a symbolic link is written where the link leads, as cp and the shell's
 *    '>' do: the file there is replaced, or created when the link dangles; the link itself
 *    is never replaced (and a loop of links is an error naming the path).
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
 * 6. A set of files that belong together (the parts of a split model; any command that
 *    writes several files that must match) is written all or nothing through a group:
 *    outfile_group_new declares how many, outfile_group_open opens each member (rules 2-4),
 *    outfile_commit finishes a member (flush, fsync, close) without renaming it, and
 *    outfile_group_commit renames every member into place only once all are finished. Any
 *    failure before (a full disk in the third part) removes every temporary and leaves the
 *    old files as they were. The renames run with the signals that end the process held;
 *    before them each existing target gets a second name (a hard link) so that a rename that
 *    fails midway puts the replaced files back: the old set stands whole, or the new one.
 *    A FIFO or device member is written in place as it comes (nothing to rename).
 */
#ifndef UM_OUTFILE_H
#define UM_OUTFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "util.h"

#define OUTFILE_MAX_NAMES   8    /* inputs, and outputs, one command may declare */
#define OUTFILE_MAX_PENDING 16   /* single temporary files open at once in the process */
#define OUTFILE_MAX_GROUPS  4    /* sets being written at once (each of any size) */

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
/* Flush and finish: fsync + rename for a regular target (for a group member the rename waits
 * for outfile_group_commit); frees o. On failure the temporary file is removed and nothing
 * changes at PATH. */
int   outfile_commit(outfile *o, um_err *e);
/* Discard: close and remove the temporary file (a direct output keeps what was written);
 * frees o. NULL is a no-op. */
void  outfile_abort(outfile *o);

/* Rule 6: a set of n files written all or nothing. Every member opened must be committed
 * (outfile_commit: finished, not yet renamed) or aborted before the group is. */
typedef struct outfile_group outfile_group;
int  outfile_group_new(outfile_group **g, int n, um_err *e);
/* Open the next member at PATH (at most n); outfile_direct tells whether it is written in place. */
int  outfile_group_open(outfile_group *g, outfile **o, const char *path, um_err *e);
/* Rename every member into place, or fail and leave every target as it was; frees g. It
 * fails (replacing nothing) unless all n members were opened and committed. */
int  outfile_group_commit(outfile_group *g, um_err *e);
/* Remove every member's temporary file; frees g. NULL is a no-op. */
void outfile_group_abort(outfile_group *g);

/* Async-signal-safe: unlink every pending temporary file (single outputs and group members). For signal handlers that end the
 * process without going through outfile_commit / outfile_abort. */
void  outfile_signal_cleanup(void);

#endif
