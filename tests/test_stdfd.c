/*
 * test_stdfd: standard output checked with its OS reason (src/base/stdfd.h), in child
 * processes whose descriptor 1 is /dev/full, closed or a pipe, since the module replaces the
 * process's stdout. Each child reports what stdfd said through a pipe of its own.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "stdfd.h"

enum { OUT_FULL, OUT_CLOSED, OUT_PIPE };

/* Run body in a child with stdout set up as `how`; returns what the child wrote to its
 * report pipe (static buffer). */
static const char *in_child(int how, void (*body)(int report)) {
    static char got[1024];
    got[0] = 0;
    int rp[2], sink[2];
    if (pipe(rp) || pipe(sink)) return "pipe failed";
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) return "fork failed";
    if (pid == 0) {
        close(rp[0]);
        if (how == OUT_FULL) {
            int fd = open("/dev/full", O_WRONLY);
            if (fd < 0 || dup2(fd, 1) < 0) _exit(3);
        } else if (how == OUT_CLOSED) {
            close(1);
        } else if (dup2(sink[1], 1) < 0) _exit(3);
        close(sink[0]);
        body(rp[1]);
        _exit(0);
    }
    close(rp[1]);
    close(sink[1]);
    size_t n = 0;
    for (ssize_t k; (k = read(rp[0], got + n, sizeof got - 1 - n)) > 0;) n += (size_t)k;
    got[n] = 0;
    char drain[4096];
    while (read(sink[0], drain, sizeof drain) > 0) {}
    close(rp[0]);
    close(sink[0]);
    waitpid(pid, NULL, 0);
    return got;
}

static void say(int report, const char *what, int rc, const um_err *e) {
    dprintf(report, "%s=%d:%s;", what, rc, e->msg);
}

/* 200 KB of output: glibc's own stream drops its buffer on a failed write and forgets why */
static void print_a_lot_then_finish(int report) {
    stdfd_init(true);
    for (int i = 0; i < 20000; i++) printf("line %d of the output\n", i);
    um_err e = { "" };
    int rc = stdfd_finish(&e);
    say(report, "finish", rc, &e);
}

/* Writes larger than the buffer go straight to the descriptor: when they fail nothing stays
 * buffered, and a flush at exit has nothing to retry, so only the reason kept when the write
 * failed can name it */
static void write_big_blocks_then_finish(int report) {
    stdfd_init(true);
    static char block[1 << 16];
    memset(block, 'x', sizeof block);
    for (int i = 0; i < 3; i++) fwrite(block, 1, sizeof block, stdout);
    um_err e = { "" };
    int rc = stdfd_finish(&e);
    say(report, "finish", rc, &e);
}

static void check_then_finish(int report) {
    stdfd_init(true);
    printf("one line\n");
    um_err e = { "" };
    int rc = stdfd_check(&e);
    say(report, "check", rc, &e);
    e.msg[0] = 'x';
    rc = stdfd_finish(&e);
    say(report, "finish", rc, &e);
}

static void closed_then_open_a_file(int report) {
    stdfd_init(true);
    um_err e = { "" };
    int rc = stdfd_writable(&e);
    say(report, "writable", rc, &e);
    int fd = open("/dev/null", O_RDONLY);       /* must not take descriptor 1 */
    dprintf(report, "fd=%d;", fd);
    printf("x\n");
    rc = stdfd_finish(&e);
    say(report, "finish", rc, &e);
}

TEST(stdfd_full_disk_keeps_the_reason) {
    const char *r = in_child(OUT_FULL, print_a_lot_then_finish);
    CHECK_STREQ(r, "finish=-1:writing to standard output failed: No space left on device;");
}

TEST(stdfd_full_disk_reason_without_a_buffer_to_retry) {
    const char *r = in_child(OUT_FULL, write_big_blocks_then_finish);
    CHECK_STREQ(r, "finish=-1:writing to standard output failed: No space left on device;");
}

TEST(stdfd_check_reports_once) {
    const char *r = in_child(OUT_FULL, check_then_finish);
    /* the check hands the failure out; finish still fails but does not repeat the message */
    CHECK_STREQ(r, "check=-1:writing to standard output failed: No space left on device;finish=-1:;");
    r = in_child(OUT_PIPE, check_then_finish);
    CHECK_STREQ(r, "check=0:;finish=0:x;");
}

TEST(stdfd_closed_stdout_is_held_by_a_placeholder) {
    const char *r = in_child(OUT_CLOSED, closed_then_open_a_file);
    CHECK_STREQ(r, "writable=-1:standard output is closed;fd=3;finish=-1:writing to standard output failed: Bad file descriptor;");
}
