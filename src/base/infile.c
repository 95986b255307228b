/*
 * infile: non-blocking, regular-files-only opening and size-capped reading (see infile.h).
 */
#include "infile.h"

#include <errno.h>
#include <stdint.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *kind_of(mode_t m) {
    if (S_ISDIR(m))  return "a directory";
    if (S_ISFIFO(m)) return "a FIFO";
    if (S_ISCHR(m))  return "a character device";
    if (S_ISBLK(m))  return "a block device";
    if (S_ISSOCK(m)) return "a socket";
    return "not a file";
}

/* "1 MiB", "16 MiB", "512 KiB", "100 bytes": the limit as the message names it. */
static void size_name(size_t n, char *buf, size_t cap) {
    if (n >= ((size_t)1 << 30) && n % ((size_t)1 << 30) == 0) snprintf(buf, cap, "%zu GiB", n >> 30);
    else if (n >= ((size_t)1 << 20) && n % ((size_t)1 << 20) == 0) snprintf(buf, cap, "%zu MiB", n >> 20);
    else if (n >= 1024 && n % 1024 == 0) snprintf(buf, cap, "%zu KiB", n >> 10);
    else snprintf(buf, cap, "%zu bytes", n);
}

static int too_big(const char *name, size_t max, um_err *e) {
    char lim[32];
    size_name(max, lim, sizeof lim);
    return um_errf(e, "%s: larger than the %s limit for this file", name, lim);
}

int infile_check_stat(const char *path, const struct stat *st, um_err *e) {
    if (S_ISREG(st->st_mode)) return UM_OK;
    return um_errf(e, "%s: not a regular file (%s)", path, kind_of(st->st_mode));
}

int infile_open(const char *path, struct stat *out_st, um_err *e) {
    if (!path || !*path) { um_errf(e, "empty file name"); return -1; }
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) { um_errf(e, "%s: %s", path, strerror(errno)); return -1; }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int err = errno;
        close(fd);
        um_errf(e, "%s: %s", path, strerror(err));
        return -1;
    }
    if (infile_check_stat(path, &st, e)) {
        close(fd);
        return -1;
    }
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0) {
        int err = errno;
        close(fd);
        um_errf(e, "%s: %s", path, strerror(err));
        return -1;
    }
    if (out_st) *out_st = st;
    return fd;
}

int infile_read_fd(int fd, const char *name, size_t max, char **data, size_t *len, um_err *e) {
    *data = NULL;
    *len = 0;
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    if (!buf) return um_errf(e, "%s: out of memory", name);
    for (;;) {
        if (n + 1 >= cap) {                  /* room for the NUL and at least one byte */
            size_t ncap = cap * 2;
            if (max < SIZE_MAX - 2 && ncap > max + 2) ncap = max + 2;   /* max + 1 bytes read: too big */
            char *nb = realloc(buf, ncap);
            if (!nb) { free(buf); return um_errf(e, "%s: out of memory", name); }
            buf = nb;
            cap = ncap;
        }
        ssize_t got = read(fd, buf + n, cap - n - 1);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) {
            int err = errno;
            free(buf);
            return um_errf(e, "%s: read failed: %s", name, strerror(err));
        }
        if (got == 0) break;
        n += (size_t)got;
        if (n > max) { free(buf); return too_big(name, max, e); }
    }
    buf[n] = '\0';
    *data = buf;
    *len = n;
    return UM_OK;
}

int infile_read(const char *path, size_t max, char **data, size_t *len, um_err *e) {
    *data = NULL;
    *len = 0;
    struct stat st;
    int fd = infile_open(path, &st, e);
    if (fd < 0) return UM_FAIL;
    if ((uint64_t)st.st_size > (uint64_t)max) { close(fd); return too_big(path, max, e); }
    int rc = infile_read_fd(fd, path, max, data, len, e);
    close(fd);
    return rc;
}

bool infile_is_regular(const char *path) {
    struct stat st;
    return path && stat(path, &st) == 0 && S_ISREG(st.st_mode);
}
