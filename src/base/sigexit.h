/*
 * sigexit: the one table of signals that end the process, and what unmask does with each.
 * main() installs it for every command (SIGEXIT_DIE, with the output module's cleanup of its
 * temporary files as a hook); the visualizer and `unmask record` install it again with
 * SIGEXIT_FLAG, so the set is written once.
 *
 *   graceful  HUP INT QUIT ALRM TERM USR1 USR2 VTALRM PROF XCPU XFSZ POLL PWR STKFLT and the
 *             real-time signals. SIGEXIT_FLAG (a program with a loop that watches for them):
 *             the handler notes the first one (sigexit_caught) and makes sigexit_fd
 *             readable; the program leaves its loop by its normal way out (the terminal
 *             restored, recordings finished and renamed into place) and exits with 128 + the
 *             signal. SIGEXIT_DIE (a command with no such loop): as a crash signal. Either
 *             way, a graceful signal that is not at its default action when sigexit_install
 *             runs (ignored under nohup, a profiler's SIGPROF) is left alone.
 *   crash     SEGV BUS ILL FPE ABRT SYS TRAP: the handler runs the hooks (sigexit_add_hook:
 *             the visualizer's terminal restore, the output module's removal of its
 *             temporary files), then dies of the signal with its default action.
 *   ignored   PIPE, in SIGEXIT_FLAG mode: every writer checks its writes, so a reader that
 *             went away (a FIFO or pipe output) is an EPIPE error through the normal error
 *             path, not a silent death that leaves temporary files. In SIGEXIT_DIE mode (the
 *             commands without a loop: `generate | head` ends as any CLI tool does) it runs
 *             the hooks and dies of it, as a graceful signal does there.
 * SIGKILL and SIGSTOP cannot be caught. SIGTSTP (suspend) belongs to curses, which restores
 * the terminal, stops, and re-enters on SIGCONT.
 *
 * Invariants: install and uninstall pair up (uninstall puts back exactly the actions install
 * replaced); hooks run in registration order and must be async-signal-safe; install before
 * curses starts (curses keeps a handler it finds, and installs its own only where it finds
 * the default). The flag is process-wide: one loop watches it.
 */
#ifndef UM_SIGEXIT_H
#define UM_SIGEXIT_H

#include <signal.h>
#include <stdbool.h>
#include "util.h"

#define SIGEXIT_MAX_HOOKS 4

typedef enum sigexit_mode {
    SIGEXIT_FLAG = 0,       /* graceful signals set the flag; the caller's loop ends */
    SIGEXIT_DIE,            /* graceful signals run the hooks and end the process, as crashes */
} sigexit_mode;

typedef enum sigexit_kind {
    SIGEXIT_OTHER = 0,      /* does not end the process, or cannot be caught */
    SIGEXIT_GRACEFUL,       /* ends the loop through the normal way out */
    SIGEXIT_CRASH,          /* hooks, temporary files removed, then the default death */
    SIGEXIT_IGNORED,        /* SIGPIPE: writes fail with EPIPE instead */
} sigexit_kind;

typedef void (*sigexit_hook)(void);

sigexit_kind sigexit_kind_of(int sig);
/* Install the handlers; clears the caught signal. Fails only when the wake-up pipe cannot
 * be made. Installing again replaces the first installation (mode included). */
int  sigexit_install(sigexit_mode mode, um_err *e);
void sigexit_uninstall(void);
/* The first graceful signal since install, 0 when none. */
int  sigexit_caught(void);
/* Readable once a graceful signal arrived (poll it with the other fds); -1 when not installed. */
int  sigexit_fd(void);
/* Run fn (async-signal-safe) before dying of a signal, in registration order; hooks stay
 * registered across install/uninstall. Registering the same fn twice keeps one; UM_FAIL
 * when SIGEXIT_MAX_HOOKS are taken. */
int  sigexit_add_hook(sigexit_hook fn);
/* Fill set with what a compute thread blocks (pthread_sigmask) so that signals reach the
 * thread that watches sigexit: every signal but the crash ones, which a fault raises in the
 * faulting thread (blocked, the kernel would kill the process without running a handler). */
void sigexit_compute_mask(sigset_t *set);

#endif
