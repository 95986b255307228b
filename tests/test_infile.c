/*
 * Tests of src/base/infile.c: only regular files are opened, a FIFO without a writer is refused
 * at once (a blocking open would hang this test), size limits hold for files that report
 * their size and for streams that do not.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "infile.h"

TEST(infile_refuses_what_is_not_a_regular_file) {
    char d[] = "/tmp/um-infile-XXXXXX", fifo[64];
    CHECK(mkdtemp(d) != NULL);
    snprintf(fifo, sizeof fifo, "%s/F", d);
    CHECK(mkfifo(fifo, 0600) == 0);
    um_err e = { "" };
    char *data = NULL;
    size_t len = 0;
    CHECK(infile_open(fifo, NULL, &e) < 0);           /* returns at once: nothing blocks */
    CHECK_CONTAINS(e.msg, ": not a regular file (a FIFO)");
    CHECK(infile_read(fifo, 100, &data, &len, &e) == UM_FAIL);
    CHECK(data == NULL);
    CHECK(infile_read("/dev/zero", 100, &data, &len, &e) == UM_FAIL);
    CHECK_CONTAINS(e.msg, "/dev/zero: not a regular file (a character device)");
    CHECK(infile_open(d, NULL, &e) < 0);
    CHECK_CONTAINS(e.msg, "not a regular file (a directory)");
    CHECK(infile_open("/nonexistent/x", NULL, &e) < 0);
    CHECK_CONTAINS(e.msg, "No such file or directory");
    CHECK(!infile_is_regular(fifo));
    CHECK(!infile_is_regular(d));
    CHECK(infile_is_regular("tests/data/tiny-llada.gguf"));
    unlink(fifo);
    rmdir(d);
}

TEST(infile_reads_with_a_size_limit) {
    char path[] = "/tmp/um-infile-XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    CHECK_EQ(write(fd, "0123456789", 10), 10);
    close(fd);
    um_err e = { "" };
    char *data = NULL;
    size_t len = 0;
    CHECK_MSG(infile_read(path, 10, &data, &len, &e) == UM_OK, "%s", e.msg);
    CHECK_EQ(len, 10);
    CHECK_STREQ(data, "0123456789");                 /* NUL-terminated */
    free(data);
    CHECK(infile_read(path, 9, &data, &len, &e) == UM_FAIL);
    CHECK_CONTAINS(e.msg, "larger than the 9 bytes limit");
    unlink(path);
    if (access("/proc/self/status", R_OK) != 0) { th_skip("no /proc (not Linux): the size-0 file case is untested"); return; }
    CHECK(infile_read("/proc/self/status", 4, &data, &len, &e) == UM_FAIL);   /* reports size 0 */
    CHECK_CONTAINS(e.msg, "larger than");
    CHECK_MSG(infile_read("/proc/self/status", (size_t)1 << 20, &data, &len, &e) == UM_OK, "%s", e.msg);
    CHECK(len > 0 && strstr(data, "Umask") != NULL);
    free(data);
}

TEST(infile_read_fd_limits_an_endless_stream) {
    int fd = open("/dev/zero", O_RDONLY);            /* what `-f - < /dev/zero` would give */
    CHECK(fd >= 0);
    um_err e = { "" };
    char *data = NULL;
    size_t len = 0;
    int rc = infile_read_fd(fd, "standard input", (size_t)1 << 20, &data, &len, &e);
    close(fd);
    CHECK(rc == UM_FAIL);
    CHECK(data == NULL);
    CHECK_CONTAINS(e.msg, "standard input: larger than the 1 MiB limit");
}
