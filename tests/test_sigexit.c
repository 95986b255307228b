/* Tests of src/base/sigexit.c: the table of terminating signals against signal(7), and what each
 * kind does, each case in a forked child so the handlers never touch the test runner. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "sigexit.h"

/* signal(7), default action Term or Core (less KILL: uncatchable) */
static const int ends_process[] = {
    SIGHUP, SIGINT, SIGQUIT, SIGILL, SIGTRAP, SIGABRT, SIGBUS, SIGFPE, SIGUSR1, SIGSEGV, SIGUSR2, SIGPIPE,
    SIGALRM, SIGTERM, SIGSTKFLT, SIGXCPU, SIGXFSZ, SIGVTALRM, SIGPROF, SIGPOLL, SIGPWR, SIGSYS,
};
/* Ign, Stop, Cont, or uncatchable */
static const int other[] = { SIGKILL, SIGSTOP, SIGCHLD, SIGCONT, SIGTSTP, SIGTTIN, SIGTTOU, SIGURG, SIGWINCH };
static const int crash[] = { SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGSYS, SIGTRAP };

TEST(sigexit_table_matches_signal7) {
    for (size_t i = 0; i < sizeof ends_process / sizeof ends_process[0]; i++)
        CHECK_MSG(sigexit_kind_of(ends_process[i]) != SIGEXIT_OTHER, "signal %d ends the process", ends_process[i]);
    for (int s = SIGRTMIN; s <= SIGRTMAX; s++) CHECK_EQ(sigexit_kind_of(s), SIGEXIT_GRACEFUL);
    for (size_t i = 0; i < sizeof other / sizeof other[0]; i++) CHECK_EQ(sigexit_kind_of(other[i]), SIGEXIT_OTHER);
    for (size_t i = 0; i < sizeof crash / sizeof crash[0]; i++) CHECK_EQ(sigexit_kind_of(crash[i]), SIGEXIT_CRASH);
    CHECK_EQ(sigexit_kind_of(SIGPIPE), SIGEXIT_IGNORED);
    CHECK_EQ(sigexit_kind_of(SIGQUIT), SIGEXIT_GRACEFUL);
    CHECK_EQ(sigexit_kind_of(SIGUSR1), SIGEXIT_GRACEFUL);
    CHECK_EQ(sigexit_kind_of(SIGHUP), SIGEXIT_GRACEFUL);
    CHECK_EQ(sigexit_kind_of(0), SIGEXIT_OTHER);
}

/* Run child() in a fork with every signal at its default action; returns the wait status. */
static int in_child(int (*child)(int arg), int arg) {
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        for (int s = 1; s < SIGRTMAX; s++) signal(s, SIG_DFL);
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        _exit(child(arg));
    }
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
    return st;
}

static bool readable(int fd) {
    struct pollfd p = { fd, POLLIN, 0 };
    return poll(&p, 1, 0) == 1 && (p.revents & POLLIN);
}

static bool is_default(int sig) {
    struct sigaction sa;
    return sigaction(sig, NULL, &sa) == 0 && !(sa.sa_flags & SA_SIGINFO) && sa.sa_handler == SIG_DFL;
}

/* Exit codes: 0 fine, else the number of the failed check. */
static int graceful_child(int sig) {
    if (sigexit_caught() != 0 || sigexit_fd() != -1) return 1;
    if (sigexit_install(SIGEXIT_FLAG, NULL)) return 2;
    if (sigexit_caught() != 0 || readable(sigexit_fd())) return 3;
    raise(sig);                                     /* survives */
    if (sigexit_caught() != sig) return 4;
    if (!readable(sigexit_fd())) return 5;
    raise(SIGUSR2);                                 /* the first one is kept */
    if (sigexit_caught() != sig) return 6;
    sigexit_uninstall();
    if (!is_default(sig) || !is_default(SIGSEGV) || !is_default(SIGPIPE)) return 7;
    if (sigexit_fd() != -1) return 8;
    if (sigexit_install(SIGEXIT_FLAG, NULL) || sigexit_caught() != 0) return 9;   /* install clears it */
    sigexit_uninstall();
    return 0;
}

TEST(sigexit_graceful_sets_the_flag_and_wakes) {
    const int sigs[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGALRM, SIGVTALRM, SIGXCPU, SIGXFSZ, SIGRTMIN, SIGRTMAX };
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
        int st = in_child(graceful_child, sigs[i]);
        CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0, "signal %d: child %s %d", sigs[i],
                  WIFEXITED(st) ? "failed check" : "died of signal", WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
    }
}

static void on_prof(int sig) { (void)sig; }

/* nohup's ignored SIGHUP stays ignored; a handler someone else set (a profiler's SIGPROF)
 * stays theirs */
static int respects_child(int unused) {
    (void)unused;
    signal(SIGHUP, SIG_IGN);
    signal(SIGPROF, on_prof);
    if (sigexit_install(SIGEXIT_FLAG, NULL)) return 1;
    struct sigaction sa;
    sigaction(SIGHUP, NULL, &sa);
    if (sa.sa_handler != SIG_IGN) return 2;
    sigaction(SIGPROF, NULL, &sa);
    if (sa.sa_handler != on_prof) return 3;
    raise(SIGHUP);
    raise(SIGPROF);
    if (sigexit_caught() != 0) return 4;
    sigexit_uninstall();
    sigaction(SIGHUP, NULL, &sa);
    if (sa.sa_handler != SIG_IGN) return 5;
    return 0;
}

TEST(sigexit_leaves_ignored_and_foreign_handlers) {
    int st = in_child(respects_child, 0);
    CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child: %d/%d", WIFEXITED(st), WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
}

/* SIGPIPE ignored while installed: a write to a pipe without a reader fails with EPIPE */
static int pipe_child(int unused) {
    (void)unused;
    int fds[2];
    if (pipe(fds)) return 1;
    close(fds[0]);
    if (sigexit_install(SIGEXIT_FLAG, NULL)) return 2;
    raise(SIGPIPE);
    errno = 0;
    if (write(fds[1], "x", 1) != -1 || errno != EPIPE) return 3;
    if (sigexit_caught() != 0) return 4;
    sigexit_uninstall();
    if (!is_default(SIGPIPE)) return 5;
    return 0;
}

TEST(sigexit_pipe_is_an_error_not_a_death) {
    int st = in_child(pipe_child, 0);
    CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child: %d/%d", WIFEXITED(st), WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
}

static int hook_fd = -1;
static void hook_one(void) { ssize_t r = write(hook_fd, "1", 1); (void)r; }
static void hook_two(void) { ssize_t r = write(hook_fd, "2", 1); (void)r; }
static void hook_three(void) {}
static void hook_four(void) {}
static void hook_five(void) {}

static int crash_child(int sig) {
    if (sigexit_add_hook(hook_one) || sigexit_add_hook(hook_two) || sigexit_add_hook(hook_one)) return 1;
    if (sigexit_install(SIGEXIT_FLAG, NULL)) return 2;
    raise(sig);
    return 3;                                       /* must not be reached */
}

TEST(sigexit_crash_runs_hooks_then_dies_of_the_signal) {
    for (size_t i = 0; i < sizeof crash / sizeof crash[0]; i++) {
        int fds[2];
        CHECK(pipe(fds) == 0);
        hook_fd = fds[1];
        int st = in_child(crash_child, crash[i]);
        close(fds[1]);
        char buf[8] = "";
        ssize_t n = read(fds[0], buf, sizeof buf - 1);
        close(fds[0]);
        CHECK_MSG(WIFSIGNALED(st) && WTERMSIG(st) == crash[i], "signal %d: child %s %d", crash[i],
                  WIFSIGNALED(st) ? "died of" : "exited", WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
        CHECK_MSG(n == 2 && !strncmp(buf, "12", 2), "signal %d: hooks wrote '%.*s'", crash[i], (int)(n > 0 ? n : 0), buf);
    }
}

/* SIGEXIT_DIE: a graceful signal runs the hooks and ends the process; an ignored one stays */
static int die_child(int sig) {
    signal(SIGHUP, SIG_IGN);
    if (sigexit_add_hook(hook_one) || sigexit_add_hook(hook_two)) return 1;
    if (sigexit_install(SIGEXIT_DIE, NULL)) return 2;
    raise(SIGHUP);
    raise(sig);
    return 3;                                       /* must not be reached */
}

TEST(sigexit_die_mode_ends_on_graceful_signals) {
    const int sigs[] = { SIGINT, SIGTERM, SIGUSR1, SIGQUIT };
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
        int fds[2];
        CHECK(pipe(fds) == 0);
        hook_fd = fds[1];
        int st = in_child(die_child, sigs[i]);
        close(fds[1]);
        char buf[8] = "";
        ssize_t n = read(fds[0], buf, sizeof buf - 1);
        close(fds[0]);
        CHECK_MSG(WIFSIGNALED(st) && WTERMSIG(st) == sigs[i], "signal %d: child %s %d", sigs[i],
                  WIFSIGNALED(st) ? "died of" : "exited", WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
        CHECK_MSG(n == 2 && !strncmp(buf, "12", 2), "signal %d: hooks wrote '%.*s'", sigs[i], (int)(n > 0 ? n : 0), buf);
    }
}

static int hooks_full_child(int unused) {
    (void)unused;
    if (sigexit_add_hook(hook_one) || sigexit_add_hook(hook_two) || sigexit_add_hook(hook_three) ||
        sigexit_add_hook(hook_four))
        return 1;
    if (sigexit_add_hook(hook_five) != UM_FAIL) return 2;
    if (sigexit_add_hook(hook_two) != UM_OK) return 3;  /* already there */
    return 0;
}

TEST(sigexit_hook_table_is_bounded) {
    CHECK_EQ(SIGEXIT_MAX_HOOKS, 4);
    int st = in_child(hooks_full_child, 0);
    CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child: %d/%d", WIFEXITED(st), WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
}

TEST(sigexit_compute_mask_lets_faults_through) {
    sigset_t m;
    sigexit_compute_mask(&m);
    for (size_t i = 0; i < sizeof crash / sizeof crash[0]; i++) CHECK(!sigismember(&m, crash[i]));
    const int blocked[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGALRM, SIGWINCH, SIGPIPE, SIGTSTP };
    for (size_t i = 0; i < sizeof blocked / sizeof blocked[0]; i++) CHECK(sigismember(&m, blocked[i]));
}
