/*
 * stdfd: the standard descriptors, and the one check that everything written to standard
 * output arrived. A command that exits 0 after its output was lost (stdout on a full disk,
 * /dev/full, a closed descriptor) lies to the script that ran it; this module makes every
 * such loss an exit status of 1 with the OS reason:
 *     unmask info: writing to standard output failed: No space left on device
 *
 * 1. stdfd_init, first thing in main: each of 0, 1, 2 that is closed gets a placeholder that
 *    fails every read or write with EBADF (/dev/null opened the wrong way round), so no file
 *    the program opens later takes that number (a model or an output's temporary file as
 *    descriptor 1 would otherwise receive the program's text). With keep_reason, stdout is
 *    then replaced by a stream over descriptor 1 that remembers the errno of the first failed
 *    write (the C library's own stream forgets it once its buffer is dropped); the buffering
 *    stays as before (by lines on a terminal, in blocks otherwise).
 * 2. stdfd_check: flush now; fails if this or any earlier write to stdout failed. Commands
 *    that print as they go call it after each unit (an eval task, a stream line), so a run
 *    stops at its first lost line instead of computing output nobody receives.
 * 3. stdfd_finish, at exit (main, once, for every command): stdfd_check, then close stdout
 *    (a file system may report a delayed write error only at close). Nothing may write to
 *    stdout afterwards.
 * The visualizer runs with the C library's own stream (curses needs a stream with a
 * descriptor): there a lost write is still caught at exit, its reason only while the stream
 * still holds the bytes.
 *
 * Invariant: once a write to stdout has failed, stdfd_check and stdfd_finish fail for the
 * rest of the run, naming the first failure's reason.
 */
#ifndef UM_STDFD_H
#define UM_STDFD_H

#include <stdbool.h>

#include "util.h"

void stdfd_init(bool keep_reason);
int  stdfd_check(um_err *e);
/* Is standard output open for writing at all (not closed, not read-only)? For commands whose
 * product is their output, before a long run: "standard output is closed". */
int  stdfd_writable(um_err *e);
/* UM_FAIL with e->msg "" when the failure was already handed out by stdfd_check. */
int  stdfd_finish(um_err *e);

#endif
