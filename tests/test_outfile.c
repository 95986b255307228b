/*
 * Tests of src/base/outfile.c: the same-file checks (symlinks, "..", hard links, outputs that do
 * not exist yet), temporary file + rename (no temporary left, mode, the old file intact until
 * the commit), removal of the temporary on failure and on outfile_signal_cleanup, direct
 * writes to character devices, and a child killed by a signal leaving no temporary behind.
 * Every test works in its own mkdtemp directory.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "outfile.h"
#include "sigexit.h"

static void make_dir(char *dir) {
    strcpy(dir, "/tmp/um-outfile-XXXXXX");
    if (!mkdtemp(dir)) dir[0] = 0;
}

static void put_file(const char *path, const char *text) {
    FILE *f = fopen(path, "wb");
    if (f) { fputs(text, f); fclose(f); }
}

static bool file_is(const char *path, const char *text) {
    char buf[256] = { 0 };
    FILE *f = fopen(path, "rb");
    if (!f) return false;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    return n == strlen(text) && !memcmp(buf, text, n);
}

/* Entries of dir whose name starts with '.' (the temporaries), "." and ".." aside. */
static int hidden_entries(const char *dir) {
    DIR *d = opendir(dir);
    int n = 0;
    for (struct dirent *de; d && (de = readdir(d));)
        if (de->d_name[0] == '.' && strcmp(de->d_name, ".") && strcmp(de->d_name, "..")) n++;
    if (d) closedir(d);
    return n;
}

static void remove_dir(const char *dir) {
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) {}
}

TEST(outfile_refuses_an_input_by_any_name) {
    char d[64], m[128], alias[160], lnk[128], hard[128], sub[128];
    make_dir(d);
    CHECK(d[0]);
    snprintf(m, sizeof m, "%s/M", d);
    snprintf(sub, sizeof sub, "%s/sub", d);
    snprintf(lnk, sizeof lnk, "%s/L", d);
    snprintf(hard, sizeof hard, "%s/H", d);
    put_file(m, "model");
    CHECK(mkdir(sub, 0755) == 0);
    CHECK(symlink("M", lnk) == 0);
    CHECK(link(m, hard) == 0);
    const char *const fmt[] = { "%s/./M", "%s/sub/../M", "%s/L", "%s/H" };
    for (size_t i = 0; i < 4; i++) {
        snprintf(alias, sizeof alias, fmt[i], d);
        outfile_set s;
        um_err e = { "" };
        outfile_set_init(&s);
        outfile_set_input(&s, "-m", m);
        outfile_set_output(&s, "--gif", alias);
        CHECK_MSG(outfile_check(&s, &e) == UM_FAIL, "%s accepted", alias);
        CHECK_CONTAINS(e.msg, "--gif ");
        CHECK_CONTAINS(e.msg, "is the same file as the input -m ");
        CHECK_CONTAINS(e.msg, "refusing to overwrite an input");
        /* the symlink as the input, the real name as the output */
        outfile_set_init(&s);
        outfile_set_input(&s, "-m", alias);
        outfile_set_output(&s, "--out", m);
        CHECK(outfile_check(&s, &e) == UM_FAIL);
    }
    CHECK(file_is(m, "model"));
    remove_dir(d);
}

TEST(outfile_refuses_two_outputs_that_are_one_file) {
    char d[64], x[128], x2[160], y[128];
    make_dir(d);
    CHECK(d[0]);
    snprintf(x, sizeof x, "%s/X", d);
    snprintf(x2, sizeof x2, "%s/./X", d);
    snprintf(y, sizeof y, "%s/Y", d);
    outfile_set s;
    um_err e = { "" };
    outfile_set_init(&s);                            /* neither exists yet */
    outfile_set_output(&s, "--gif", x);
    outfile_set_output(&s, "--cast", x2);
    CHECK(outfile_check(&s, &e) == UM_FAIL);
    CHECK_CONTAINS(e.msg, "--cast ");
    CHECK_CONTAINS(e.msg, "is the same file as --gif ");
    put_file(x, "x");                                /* and once it exists */
    CHECK(outfile_check(&s, &e) == UM_FAIL);
    outfile_set_init(&s);                            /* different files pass */
    outfile_set_output(&s, "--gif", x);
    outfile_set_output(&s, "--cast", y);
    CHECK_MSG(outfile_check(&s, &e) == UM_OK, "%s", e.msg);
    outfile_set_init(&s);                            /* /dev/null twice is harmless */
    outfile_set_output(&s, "--gif", "/dev/null");
    outfile_set_output(&s, "--cast", "/dev/null");
    CHECK_MSG(outfile_check(&s, &e) == UM_OK, "%s", e.msg);
    remove_dir(d);
}

TEST(outfile_check_refuses_what_cannot_be_written) {
    char d[64], fifo[128], path[160];
    make_dir(d);
    CHECK(d[0]);
    outfile_set s;
    um_err e = { "" };
    outfile_set_init(&s);
    outfile_set_output(&s, "--gif", d);              /* a directory */
    CHECK(outfile_check(&s, &e) == UM_FAIL);
    CHECK_CONTAINS(e.msg, "is a directory");
    snprintf(path, sizeof path, "%s/missing/x.gif", d);
    outfile_set_init(&s);
    outfile_set_output(&s, "--gif", path);           /* no such directory: before any work */
    CHECK(outfile_check(&s, &e) == UM_FAIL);
    CHECK_CONTAINS(e.msg, "No such file or directory");
    snprintf(fifo, sizeof fifo, "%s/F", d);
    CHECK(mkfifo(fifo, 0600) == 0);
    outfile_set_init(&s);
    outfile_set_input(&s, "-m", fifo);               /* an input that is not a regular file */
    CHECK(outfile_check(&s, &e) == UM_FAIL);
    CHECK_CONTAINS(e.msg, "not a regular file (a FIFO)");
    outfile_set_init(&s);
    for (int i = 0; i <= OUTFILE_MAX_NAMES; i++) outfile_set_output(&s, "-o", "/dev/null");
    CHECK(outfile_check(&s, &e) == UM_FAIL);          /* too many is an error, not a silent drop */
    remove_dir(d);
}

TEST(outfile_commit_replaces_atomically) {
    char d[64], p[128];
    make_dir(d);
    CHECK(d[0]);
    snprintf(p, sizeof p, "%s/out.bin", d);
    put_file(p, "old");
    CHECK(chmod(p, 0640) == 0);
    um_err e = { "" };
    outfile *o;
    CHECK_MSG(outfile_open(&o, p, &e) == UM_OK, "%s", e.msg);
    CHECK(!outfile_direct(o));
    CHECK_STREQ(outfile_path(o), p);
    CHECK(outfile_write(o, "new", 3, &e) == UM_OK);
    CHECK(fflush(outfile_stream(o)) == 0);
    CHECK(file_is(p, "old"));                        /* untouched until the commit */
    CHECK_EQ(hidden_entries(d), 1);                  /* the temporary, in the same directory */
    CHECK_MSG(outfile_commit(o, &e) == UM_OK, "%s", e.msg);
    CHECK(file_is(p, "new"));
    CHECK_EQ(hidden_entries(d), 0);
    struct stat st;
    CHECK(stat(p, &st) == 0);
    CHECK_EQ(st.st_mode & 07777, 0640);              /* the old file's mode, not mkstemp's 0600 */

    snprintf(p, sizeof p, "%s/fresh.bin", d);        /* a new file: 0666 & ~umask */
    mode_t mask = umask(027);
    int rc = outfile_open(&o, p, &e);
    if (rc == UM_OK) rc = outfile_commit(o, &e);
    umask(mask);
    CHECK_MSG(rc == UM_OK, "%s", e.msg);
    CHECK(stat(p, &st) == 0);
    CHECK_EQ(st.st_mode & 07777, 0640);
    remove_dir(d);
}

TEST(outfile_abort_and_failure_remove_the_temporary) {
    char d[64], p[128];
    make_dir(d);
    CHECK(d[0]);
    snprintf(p, sizeof p, "%s/out.bin", d);
    put_file(p, "old");
    um_err e = { "" };
    outfile *o;
    CHECK(outfile_open(&o, p, &e) == UM_OK);
    CHECK(outfile_write(o, "partial", 7, &e) == UM_OK);
    outfile_abort(o);
    CHECK(file_is(p, "old"));
    CHECK_EQ(hidden_entries(d), 0);

    /* a rename that fails (the target became a non-empty directory): temporary removed,
     * the OS reason in the message */
    snprintf(p, sizeof p, "%s/target", d);
    CHECK(outfile_open(&o, p, &e) == UM_OK);
    CHECK(outfile_write(o, "data", 4, &e) == UM_OK);
    char inner[160];
    CHECK(mkdir(p, 0755) == 0);
    snprintf(inner, sizeof inner, "%s/keep", p);
    put_file(inner, "k");
    CHECK(outfile_commit(o, &e) == UM_FAIL);
    CHECK_CONTAINS(e.msg, "cannot rename the temporary file into place: ");
    CHECK_EQ(hidden_entries(d), 0);
    CHECK(file_is(inner, "k"));
    remove_dir(d);
}

TEST(outfile_signal_cleanup_removes_pending_temporaries) {
    char d[64], a[128], b[128];
    make_dir(d);
    CHECK(d[0]);
    snprintf(a, sizeof a, "%s/a.gif", d);
    snprintf(b, sizeof b, "%s/b.cast", d);
    um_err e = { "" };
    outfile *oa, *ob;
    CHECK(outfile_open(&oa, a, &e) == UM_OK);
    CHECK(outfile_open(&ob, b, &e) == UM_OK);
    CHECK_EQ(hidden_entries(d), 2);
    outfile_signal_cleanup();
    CHECK_EQ(hidden_entries(d), 0);
    CHECK(access(a, F_OK) != 0 && access(b, F_OK) != 0);
    outfile_abort(oa);                               /* still safe afterwards */
    outfile_abort(ob);
    remove_dir(d);
}

TEST(outfile_child_killed_by_a_signal_leaves_no_temporary) {
    char d[64], p[128];
    make_dir(d);
    CHECK(d[0]);
    snprintf(p, sizeof p, "%s/out.gguf", d);
    fflush(stdout);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        signal(SIGTERM, SIG_DFL);
        um_err se;                                   /* as main() does for every command */
        sigexit_add_hook(outfile_signal_cleanup);
        if (sigexit_install(SIGEXIT_DIE, &se)) _exit(5);
        um_err e;
        outfile *o;
        if (outfile_open(&o, p, &e) || outfile_write(o, "x", 1, &e) || fflush(outfile_stream(o))) _exit(3);
        raise(SIGTERM);
        _exit(4);                                    /* not reached: SIGTERM still ends it */
    }
    int status = 0;
    CHECK(waitpid(pid, &status, 0) == pid);
    CHECK_MSG(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM, "status %#x", status);
    CHECK_EQ(hidden_entries(d), 0);
    CHECK(access(p, F_OK) != 0);
    remove_dir(d);
}

TEST(outfile_writes_devices_in_place) {
    struct stat st;
    if (stat("/dev/null", &st) != 0 || !S_ISCHR(st.st_mode) || stat("/dev/full", &st) != 0) {
        th_skip("no /dev/null or /dev/full");
        return;
    }
    um_err e = { "" };
    outfile *o;
    CHECK_MSG(outfile_open(&o, "/dev/null", &e) == UM_OK, "%s", e.msg);
    CHECK(outfile_direct(o));
    CHECK(outfile_write(o, "abc", 3, &e) == UM_OK);
    CHECK_MSG(outfile_commit(o, &e) == UM_OK, "%s", e.msg);
    CHECK(stat("/dev/null", &st) == 0 && S_ISCHR(st.st_mode));   /* still the device node */
    CHECK(outfile_open(&o, "/dev/full", &e) == UM_OK);
    static char big[1 << 16];
    int rc = outfile_write(o, big, sizeof big, &e);
    if (rc == UM_OK) rc = outfile_commit(o, &e);
    else outfile_abort(o);
    CHECK(rc == UM_FAIL);
    CHECK_CONTAINS(e.msg, "/dev/full: write failed: No space left on device");
    CHECK(stat("/dev/full", &st) == 0 && S_ISCHR(st.st_mode));
}

TEST(outfile_fifo_without_reader_is_refused_not_waited_for) {
    char d[64], f[128];
    make_dir(d);
    CHECK(d[0]);
    snprintf(f, sizeof f, "%s/F", d);
    CHECK(mkfifo(f, 0600) == 0);
    um_err e = { "" };
    outfile *o;
    CHECK(outfile_open(&o, f, &e) == UM_FAIL);
    CHECK_CONTAINS(e.msg, "a FIFO with no reader");
    int rd = open(f, O_RDONLY | O_NONBLOCK);         /* with a reader it is written in place */
    CHECK(rd >= 0);
    CHECK_MSG(outfile_open(&o, f, &e) == UM_OK, "%s", e.msg);
    CHECK(outfile_direct(o));
    CHECK(outfile_write(o, "hi", 2, &e) == UM_OK);
    CHECK(outfile_commit(o, &e) == UM_OK);
    char buf[4] = { 0 };
    CHECK_EQ(read(rd, buf, sizeof buf), 2);
    CHECK(!memcmp(buf, "hi", 2));
    close(rd);
    struct stat st;
    CHECK(stat(f, &st) == 0 && S_ISFIFO(st.st_mode));
    remove_dir(d);
}
