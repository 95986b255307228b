/*
 * sigexit: the signals that end the process, handled one way (see sigexit.h).
 *
 * The handlers use only async-signal-safe calls (write, sigaction, raise) and touch only
 * `caught`, `wake_wr` and the hook table, all set before the handlers are installed.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "sigexit.h"

#ifndef NSIG
#define NSIG 65
#endif

/* Default action "terminate" or "core" in signal(7), less PIPE (ignored, see the header),
 * KILL and STOP (not catchable). The real-time signals are added by range in kind_of. */
static const int graceful[] = {
    SIGHUP, SIGINT, SIGQUIT, SIGALRM, SIGTERM, SIGUSR1, SIGUSR2, SIGVTALRM, SIGPROF, SIGXCPU, SIGXFSZ,
#ifdef SIGPOLL
    SIGPOLL,
#endif
#ifdef SIGPWR
    SIGPWR,
#endif
#ifdef SIGSTKFLT
    SIGSTKFLT,
#endif
};
static const int crash[] = { SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGSYS, SIGTRAP };

static volatile sig_atomic_t caught;
static volatile sig_atomic_t wake_wr = -1;
static int wake_rd = -1;
static sigexit_hook volatile hooks[SIGEXIT_MAX_HOOKS];
static volatile sig_atomic_t n_hooks;
static struct sigaction saved[NSIG];     /* actions install replaced, put back by uninstall */
static bool replaced[NSIG];
static bool installed;

sigexit_kind sigexit_kind_of(int sig) {
    for (size_t i = 0; i < sizeof graceful / sizeof graceful[0]; i++)
        if (graceful[i] == sig) return SIGEXIT_GRACEFUL;
    for (size_t i = 0; i < sizeof crash / sizeof crash[0]; i++)
        if (crash[i] == sig) return SIGEXIT_CRASH;
#ifdef SIGRTMIN
    if (sig >= SIGRTMIN && sig <= SIGRTMAX) return SIGEXIT_GRACEFUL;
#endif
    return sig == SIGPIPE ? SIGEXIT_IGNORED : SIGEXIT_OTHER;
}

static void on_graceful(int sig) {
    int saved_errno = errno;
    if (!caught) caught = sig;
    if (wake_wr >= 0) {
        char b = 1;
        ssize_t r = write(wake_wr, &b, 1);       /* a full pipe is already readable */
        (void)r;
    }
    errno = saved_errno;
}

static void on_crash(int sig) {
    for (int i = 0; i < n_hooks; i++) hooks[i]();
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    sigaction(sig, &dfl, NULL);
    raise(sig);                                  /* delivered (fatally) when the handler returns */
}

int sigexit_add_hook(sigexit_hook fn) {
    for (int i = 0; i < n_hooks; i++)
        if (hooks[i] == fn) return UM_OK;
    if (n_hooks == SIGEXIT_MAX_HOOKS) return UM_FAIL;
    hooks[n_hooks] = fn;
    n_hooks = n_hooks + 1;                       /* published after the slot is filled */
    return UM_OK;
}

static void replace(int sig, void (*handler)(int), int flags, bool only_default) {
    struct sigaction old, sa;
    if (sig <= 0 || sig >= NSIG || sigaction(sig, NULL, &old) != 0) return;
    if (only_default && (old.sa_flags & SA_SIGINFO || old.sa_handler != SIG_DFL)) return;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = handler;
    sa.sa_flags = flags;
    sigfillset(&sa.sa_mask);                     /* no handler interrupts another */
    if (sigaction(sig, &sa, NULL) != 0) return;
    saved[sig] = old;
    replaced[sig] = true;
}

int sigexit_install(sigexit_mode mode, um_err *e) {
    if (installed) sigexit_uninstall();
    int fds[2];
    if (pipe(fds) != 0) return um_errf(e, "signals: pipe: %s", strerror(errno));
    for (int i = 0; i < 2; i++) {
        fcntl(fds[i], F_SETFL, fcntl(fds[i], F_GETFL) | O_NONBLOCK);
        fcntl(fds[i], F_SETFD, FD_CLOEXEC);
    }
    wake_rd = fds[0];
    wake_wr = fds[1];
    caught = 0;
    installed = true;
    for (int sig = 1; sig < NSIG; sig++) {
        switch (sigexit_kind_of(sig)) {
        /* SA_RESTART: a write in progress (a recording to a FIFO) is not cut short; poll
         * still returns EINTR, and the wake-up pipe covers a signal taken by another thread */
        case SIGEXIT_GRACEFUL:
            if (mode == SIGEXIT_DIE) replace(sig, on_crash, SA_RESETHAND, true);
            else replace(sig, on_graceful, SA_RESTART, true);
            break;
        case SIGEXIT_CRASH:    replace(sig, on_crash, SA_RESETHAND, false); break;
        case SIGEXIT_IGNORED:  /* a command with no loop dies of a closed pipe, as CLI tools do */
            if (mode == SIGEXIT_DIE) replace(sig, on_crash, SA_RESETHAND, true);
            else replace(sig, SIG_IGN, 0, true);
            break;
        case SIGEXIT_OTHER:    break;
        }
    }
    return UM_OK;
}

void sigexit_uninstall(void) {
    if (!installed) return;
    for (int sig = 1; sig < NSIG; sig++)
        if (replaced[sig]) {
            sigaction(sig, &saved[sig], NULL);
            replaced[sig] = false;
        }
    int wr = wake_wr;
    wake_wr = -1;
    close(wr);
    close(wake_rd);
    wake_rd = -1;
    installed = false;
}

void sigexit_compute_mask(sigset_t *set) {
    sigfillset(set);
    for (size_t i = 0; i < sizeof crash / sizeof crash[0]; i++) sigdelset(set, crash[i]);
}

int sigexit_caught(void) { return caught; }

int sigexit_fd(void) { return wake_rd; }
