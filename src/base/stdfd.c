/*
 * stdfd: placeholders for closed standard descriptors, and stdout's writes checked with their
 * OS reason kept (see stdfd.h).
 *
 * State: first_errno is 0 until a write to stdout fails, then that write's errno (-1 when the
 * C library's stream reported an error without one) and never changes again; said records
 * that stdfd_check handed the failure to a caller, so stdfd_finish does not repeat it.
 */
#include "stdfd.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static FILE *native;             /* the C library's stdout while ours replaces it, else NULL */
static int   first_errno;
static bool  said;
static bool  placeholder[3];     /* the descriptor was closed at start */

/* The stream over descriptor 1: every byte or -1, with the first errno kept. */
static ssize_t out_write(void *cookie, const char *buf, size_t n) {
    (void)cookie;
    for (size_t done = 0; done < n;) {
        ssize_t w = write(STDOUT_FILENO, buf + done, n - done);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            if (!first_errno) first_errno = w < 0 ? errno : EIO;
            return -1;
        }
        done += (size_t)w;
    }
    return (ssize_t)n;
}

void stdfd_init(bool keep_reason) {
    for (int fd = 0; fd <= 2; fd++) {
        if (fcntl(fd, F_GETFD) >= 0 || errno != EBADF) continue;
        /* the lowest free number is fd itself (the ones below are open by now) */
        int p = open("/dev/null", (fd == 0 ? O_WRONLY : O_RDONLY) | O_CLOEXEC);
        if (p == fd) placeholder[fd] = true;
        else if (p >= 0) close(p);
    }
    if (!keep_reason || native) return;
    FILE *f = fopencookie(NULL, "w", (cookie_io_functions_t){ .write = out_write });
    if (!f) return;                              /* keep the C library's stream */
    setvbuf(f, NULL, isatty(STDOUT_FILENO) ? _IOLBF : _IOFBF, BUFSIZ);
    native = stdout;
    stdout = f;                                  /* glibc: the standard streams are assignable */
}

static int failed(um_err *e) {
    return um_errf(e, "writing to standard output failed: %s",
                   first_errno > 0 ? strerror(first_errno) : "an earlier write returned an error");
}

int stdfd_check(um_err *e) {
    errno = 0;
    int r = fflush(stdout);
    int err = errno;
    if ((r != 0 || ferror(stdout)) && !first_errno) first_errno = err ? err : -1;
    if (!first_errno) return UM_OK;
    if (e) said = true;
    return failed(e);
}

int stdfd_writable(um_err *e) {
    int fl = fcntl(STDOUT_FILENO, F_GETFL);
    if (placeholder[STDOUT_FILENO] || fl < 0) return um_errf(e, "standard output is closed");
    if ((fl & O_ACCMODE) == O_RDONLY) return um_errf(e, "standard output is not open for writing");
    return UM_OK;
}

int stdfd_finish(um_err *e) {
    bool was_said = said;
    int rc = stdfd_check(NULL);
    if (native) {                                /* ours is flushed: close it, then the real one */
        fclose(stdout);
        stdout = native;
        native = NULL;
    }
    errno = 0;
    if (fclose(stdout) != 0 && rc == UM_OK && !placeholder[STDOUT_FILENO] && errno != EBADF) {
        first_errno = errno ? errno : -1;        /* a delayed write error, reported at close */
        rc = UM_FAIL;
    }
    if (rc == UM_OK) return UM_OK;
    if (was_said) {                              /* the command has printed this one already */
        if (e) e->msg[0] = '\0';
        return UM_FAIL;
    }
    return failed(e);
}
