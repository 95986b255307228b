/*
 * Tests of src/base/outfile.c: the same-file checks (symlinks, "..", hard links, outputs that do
 * not exist yet), temporary file + rename (no temporary left, mode, the old file intact until
 * the commit), removal of the temporary on failure and on outfile_signal_cleanup, direct
 * writes to character devices, a child killed by a signal leaving no temporary behind,
 * outputs through symbolic links (written where they lead, never replaced), and sets of
 * files written all or nothing (outfile_group_*).
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
    char h[160];                                     /* a file and its hard link: one file */
    snprintf(h, sizeof h, "%s/X.hard", d);
    CHECK(link(x, h) == 0);
    outfile_set_init(&s);
    outfile_set_output(&s, "--gif", x);
    outfile_set_output(&s, "--cast", h);
    CHECK(outfile_check(&s, &e) == UM_FAIL);
    CHECK_CONTAINS(e.msg, "X.hard: is the same file as --gif ");
    outfile_set_init(&s);                            /* a dangling link and the file it names */
    char dl[160], dt[160];
    snprintf(dl, sizeof dl, "%s/dl", d);
    snprintf(dt, sizeof dt, "%s/new.bin", d);
    CHECK(symlink("new.bin", dl) == 0);
    outfile_set_output(&s, "--gif", dt);
    outfile_set_output(&s, "--cast", dl);
    CHECK(outfile_check(&s, &e) == UM_FAIL);
    CHECK_CONTAINS(e.msg, "dl: is the same file as --gif ");
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

/* A link is written through, as cp does: the file it leads to gets the data (and is created
 * when the link dangles); the link stays a link. */
TEST(outfile_writes_through_symlinks_never_replacing_them) {
    char d[64], p[160], t[160], l1[160], l2[160], loop[160];
    make_dir(d);
    CHECK(d[0]);
    snprintf(p, sizeof p, "%s/sub", d);
    CHECK(mkdir(p, 0755) == 0);
    snprintf(t, sizeof t, "%s/sub/target.f32", d);
    snprintf(l1, sizeof l1, "%s/link.f32", d);
    snprintf(l2, sizeof l2, "%s/link2.f32", d);
    CHECK(symlink("sub/target.f32", l1) == 0);       /* dangling, relative */
    CHECK(symlink(l1, l2) == 0);                     /* a chain: link2 -> link -> target */
    um_err e = { "" };
    outfile *o;
    for (int round = 0; round < 2; round++) {        /* the target missing, then existing */
        const char *via = round ? l2 : l1, *text = round ? "second" : "first";
        outfile_set s;
        outfile_set_init(&s);
        outfile_set_output(&s, "--out", via);
        CHECK_MSG(outfile_check(&s, &e) == UM_OK, "%s", e.msg);
        CHECK_MSG(outfile_open(&o, via, &e) == UM_OK, "%s", e.msg);
        CHECK(!outfile_direct(o));
        CHECK(outfile_write(o, text, strlen(text), &e) == UM_OK);
        CHECK_MSG(outfile_commit(o, &e) == UM_OK, "%s", e.msg);
        struct stat st;
        CHECK(lstat(l1, &st) == 0 && S_ISLNK(st.st_mode));
        CHECK(lstat(l2, &st) == 0 && S_ISLNK(st.st_mode));
        CHECK(lstat(t, &st) == 0 && S_ISREG(st.st_mode));
        CHECK(file_is(t, text));
    }
    CHECK_EQ(hidden_entries(p), 0);
    snprintf(loop, sizeof loop, "%s/loop", d);       /* a loop of links: an error naming it */
    CHECK(symlink("loop", loop) == 0);
    CHECK(outfile_open(&o, loop, &e) == UM_FAIL);
    CHECK_CONTAINS(e.msg, "loop: too many levels of symbolic links");
    snprintf(l1, sizeof l1, "%s/nodir.f32", d);       /* leading into a missing directory */
    CHECK(symlink("nodir/x.f32", l1) == 0);
    outfile_set s;
    outfile_set_init(&s);
    outfile_set_output(&s, "--out", l1);
    CHECK(outfile_check(&s, &e) == UM_FAIL);
    CHECK_CONTAINS(e.msg, "--out ");
    CHECK_CONTAINS(e.msg, "nodir.f32: directory ");
    CHECK_CONTAINS(e.msg, "No such file or directory");
    remove_dir(d);
}

/* Write n members a0..a(n-1) of a set into dir with the given texts; fail_at >= 0 aborts that
 * member midway (a write error) and then the whole set, as a caller does. */
static int write_set(const char *dir, int n, const char *text, int fail_at, um_err *e) {
    outfile_group *g;
    if (outfile_group_new(&g, n, e)) return UM_FAIL;
    for (int i = 0; i < n; i++) {
        char p[160];
        snprintf(p, sizeof p, "%s/a%d", dir, i);
        outfile *o;
        if (outfile_group_open(g, &o, p, e)) { outfile_group_abort(g); return UM_FAIL; }
        outfile_write(o, text, strlen(text), e);
        if (i == fail_at) {
            outfile_abort(o);
            outfile_group_abort(g);
            return um_errf(e, "member %d failed", i);
        }
        if (outfile_commit(o, e)) { outfile_group_abort(g); return UM_FAIL; }
    }
    return outfile_group_commit(g, e);
}

static bool set_is(const char *dir, int n, const char *text) {
    for (int i = 0; i < n; i++) {
        char p[160];
        snprintf(p, sizeof p, "%s/a%d", dir, i);
        if (!file_is(p, text)) return false;
    }
    return true;
}

TEST(outfile_group_writes_all_or_nothing) {
    char d[64];
    make_dir(d);
    CHECK(d[0]);
    um_err e = { "" };
    CHECK_MSG(write_set(d, 3, "old", -1, &e) == UM_OK, "%s", e.msg);
    CHECK(set_is(d, 3, "old"));
    for (int at = 0; at < 3; at++) {                 /* a failure in any member: the old set */
        CHECK(write_set(d, 3, "new", at, &e) == UM_FAIL);
        CHECK_MSG(set_is(d, 3, "old"), "failure at member %d changed the set", at);
        CHECK_EQ(hidden_entries(d), 0);
    }
    CHECK_MSG(write_set(d, 3, "new", -1, &e) == UM_OK, "%s", e.msg);
    CHECK(set_is(d, 3, "new"));
    CHECK_EQ(hidden_entries(d), 0);

    /* renamed only at the group's commit: until then every old file is untouched */
    outfile_group *g;
    CHECK(outfile_group_new(&g, 2, &e) == UM_OK);
    outfile *o;
    char p[160];
    for (int i = 0; i < 2; i++) {
        snprintf(p, sizeof p, "%s/a%d", d, i);
        CHECK(outfile_group_open(g, &o, p, &e) == UM_OK);
        CHECK(outfile_write(o, "two", 3, &e) == UM_OK);
        CHECK(outfile_commit(o, &e) == UM_OK);
        CHECK(set_is(d, 2, "new"));
    }
    CHECK_EQ(hidden_entries(d), 2);
    snprintf(p, sizeof p, "%s/a2", d);               /* a third member than declared: refused */
    CHECK(outfile_group_open(g, &o, p, &e) == UM_FAIL);
    CHECK_CONTAINS(e.msg, "more than the 2 files declared");
    CHECK(outfile_group_commit(g, &e) == UM_OK);
    CHECK(set_is(d, 2, "two"));

    /* a set with a member never written is refused whole */
    CHECK(outfile_group_new(&g, 2, &e) == UM_OK);
    snprintf(p, sizeof p, "%s/a0", d);
    CHECK(outfile_group_open(g, &o, p, &e) == UM_OK);
    CHECK(outfile_commit(o, &e) == UM_OK);
    CHECK(outfile_group_commit(g, &e) == UM_FAIL);
    CHECK_CONTAINS(e.msg, "only 1 of the 2 files of the set were written; nothing was replaced");
    CHECK(file_is(p, "two"));
    CHECK_EQ(hidden_entries(d), 0);
    remove_dir(d);
}

/* A rename that fails midway (the third target turned into a non-empty directory after its
 * member was written): the files already renamed are put back, the old set stands. */
TEST(outfile_group_failed_rename_puts_the_old_files_back) {
    char d[64], p[160], inner[200];
    make_dir(d);
    CHECK(d[0]);
    um_err e = { "" };
    CHECK_MSG(write_set(d, 2, "old", -1, &e) == UM_OK, "%s", e.msg);   /* a0, a1 exist; a2 not */
    outfile_group *g;
    CHECK(outfile_group_new(&g, 3, &e) == UM_OK);
    for (int i = 0; i < 3; i++) {
        outfile *o;
        snprintf(p, sizeof p, "%s/a%d", d, i);
        CHECK(outfile_group_open(g, &o, p, &e) == UM_OK);
        CHECK(outfile_write(o, "new", 3, &e) == UM_OK);
        CHECK(outfile_commit(o, &e) == UM_OK);
    }
    snprintf(p, sizeof p, "%s/a2", d);
    CHECK(mkdir(p, 0755) == 0);
    snprintf(inner, sizeof inner, "%s/keep", p);
    put_file(inner, "k");
    CHECK(outfile_group_commit(g, &e) == UM_FAIL);
    CHECK_CONTAINS(e.msg, "a2: cannot rename the temporary file into place: ");
    CHECK_CONTAINS(e.msg, "the files already replaced were put back");
    CHECK(set_is(d, 2, "old"));
    CHECK(file_is(inner, "k"));
    CHECK_EQ(hidden_entries(d), 0);                  /* no temporary, no kept copy */
    remove_dir(d);
}

TEST(outfile_group_temporaries_go_with_a_signal) {
    char d[64], p[160];
    make_dir(d);
    CHECK(d[0]);
    um_err e = { "" };
    outfile_group *g;
    CHECK(outfile_group_new(&g, 20, &e) == UM_OK);   /* more members than single slots */
    outfile *o[20];
    for (int i = 0; i < 20; i++) {
        snprintf(p, sizeof p, "%s/part%02d", d, i);
        CHECK_MSG(outfile_group_open(g, &o[i], p, &e) == UM_OK, "%s", e.msg);
        if (i % 2) CHECK(outfile_commit(o[i], &e) == UM_OK);   /* finished ones count too */
    }
    CHECK_EQ(hidden_entries(d), 20);
    outfile_signal_cleanup();
    CHECK_EQ(hidden_entries(d), 0);
    for (int i = 0; i < 20; i += 2) outfile_abort(o[i]);
    outfile_group_abort(g);
    pid_t pid = fork();                              /* and in a process that dies of one */
    CHECK(pid >= 0);
    if (pid == 0) {
        signal(SIGTERM, SIG_DFL);
        um_err se;
        sigexit_add_hook(outfile_signal_cleanup);
        if (sigexit_install(SIGEXIT_DIE, &se)) _exit(5);
        outfile_group *cg;
        outfile *co;
        if (outfile_group_new(&cg, 2, &se)) _exit(3);
        for (int i = 0; i < 2; i++) {
            snprintf(p, sizeof p, "%s/child%d", d, i);
            if (outfile_group_open(cg, &co, p, &se) || outfile_commit(co, &se)) _exit(3);
        }
        raise(SIGTERM);
        _exit(4);
    }
    int status = 0;
    CHECK(waitpid(pid, &status, 0) == pid);
    CHECK_MSG(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM, "status %#x", status);
    CHECK_EQ(hidden_entries(d), 0);
    remove_dir(d);
}
