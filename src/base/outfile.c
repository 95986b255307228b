/*
 * outfile: declared outputs checked up front, temporary file + atomic rename for regular
 * targets, direct writes for FIFOs and character devices, and a signal-safe registry of
 * pending temporary files (see outfile.h).
 *
 * Registry invariant: pending_state[i] is ARMED exactly while pending_name[i] names a
 * temporary file this process created and has neither renamed nor removed; the name is
 * written before the state is published (release store), and the signal handler reads the
 * state with an acquire load, so it never sees a half-written name.
 */
#include "outfile.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "infile.h"

/* ---------------------------------------------------------------- pending temporaries */

enum { SLOT_FREE = 0, SLOT_CLAIMED = 1, SLOT_ARMED = 2 };

static char pending_name[OUTFILE_MAX_PENDING][PATH_MAX];
static int  pending_state[OUTFILE_MAX_PENDING];

static int slot_claim(void) {
    for (int i = 0; i < OUTFILE_MAX_PENDING; i++) {
        int expect = SLOT_FREE;
        if (__atomic_compare_exchange_n(&pending_state[i], &expect, SLOT_CLAIMED, false, __ATOMIC_ACQ_REL,
                                        __ATOMIC_RELAXED))
            return i;
    }
    return -1;
}

static void slot_arm(int i)     { __atomic_store_n(&pending_state[i], SLOT_ARMED, __ATOMIC_RELEASE); }
static void slot_release(int i) { __atomic_store_n(&pending_state[i], SLOT_FREE, __ATOMIC_RELEASE); }

void outfile_signal_cleanup(void) {
    for (int i = 0; i < OUTFILE_MAX_PENDING; i++)
        if (__atomic_load_n(&pending_state[i], __ATOMIC_ACQUIRE) == SLOT_ARMED) unlink(pending_name[i]);
}

/* ---------------------------------------------------------------- classifying a target */

typedef enum { TARGET_NEW, TARGET_REGULAR, TARGET_DIRECT } target_kind;

static const char *kind_name(mode_t m) {
    if (S_ISDIR(m))  return "is a directory";
    if (S_ISBLK(m))  return "is a block device; refusing to write to it";
    if (S_ISSOCK(m)) return "is a socket";
    return "is not a file unmask can write";
}

/* The descriptor /dev/stdout, /dev/stderr, /dev/fd/N or /proc/self/fd/N names, else -1.
 * Such an output is written through a dup of the descriptor: the shell's redirection (its
 * offset, >> appending) is honoured, and a regular file behind it is not replaced. */
static int fd_alias(const char *path) {
    if (!strcmp(path, "/dev/stdout")) return 1;
    if (!strcmp(path, "/dev/stderr")) return 2;
    const char *n = !strncmp(path, "/dev/fd/", 8) ? path + 8 : !strncmp(path, "/proc/self/fd/", 14) ? path + 14 : NULL;
    if (!n || *n < '0' || *n > '9') return -1;
    char *end;
    long fd = strtol(n, &end, 10);
    return *end || fd > 1 << 20 ? -1 : (int)fd;
}

/* What PATH is and whether it may be written; *st is its stat when it exists. */
static int classify(const char *path, target_kind *kind, struct stat *st, um_err *e) {
    if (!path || !*path) return um_errf(e, "empty output file name");
    if (stat(path, st) != 0) {
        if (errno != ENOENT || fd_alias(path) >= 0) return um_errf(e, "%s: %s", path, strerror(errno));
        *kind = TARGET_NEW;
        return UM_OK;
    }
    if (fd_alias(path) >= 0 && !S_ISDIR(st->st_mode)) *kind = TARGET_DIRECT;
    else if (S_ISREG(st->st_mode)) *kind = TARGET_REGULAR;
    else if (S_ISFIFO(st->st_mode) || S_ISCHR(st->st_mode)) *kind = TARGET_DIRECT;
    else return um_errf(e, "%s: %s", path, kind_name(st->st_mode));
    if (access(path, W_OK) != 0) return um_errf(e, "%s: %s", path, strerror(errno));
    return UM_OK;
}

/* Split path into its directory ("." when there is no slash) and base name. */
static int split_path(const char *path, char *dir, size_t cap, const char **base, um_err *e) {
    const char *slash = strrchr(path, '/');
    *base = slash ? slash + 1 : path;
    if (!**base || !strcmp(*base, ".") || !strcmp(*base, ".."))
        return um_errf(e, "%s: names a directory, not a file", path);
    size_t n = !slash ? 0 : slash == path ? 1 : (size_t)(slash - path);
    if (n + 2 > cap) return um_errf(e, "%s: path too long", path);
    if (!slash) memcpy(dir, ".", 2);
    else { memcpy(dir, path, n); dir[n] = 0; }
    return UM_OK;
}

/* The name a target will have: realpath of an existing file, else realpath(dir)/base, after
 * checking that the directory exists and may be written. malloc'd. */
static char *canonical(const char *path, bool exists, um_err *e) {
    if (exists) {
        char *r = realpath(path, NULL);
        if (!r) um_errf(e, "%s: %s", path, strerror(errno));
        if (r) {                                   /* its directory must take the temporary */
            char dir[PATH_MAX];
            const char *base;
            if (split_path(r, dir, sizeof dir, &base, e)) { free(r); return NULL; }
            if (access(dir, W_OK | X_OK) != 0) {
                um_errf(e, "%s: cannot create files in %s: %s", path, dir, strerror(errno));
                free(r);
                return NULL;
            }
        }
        return r;
    }
    char dir[PATH_MAX];
    const char *base;
    if (split_path(path, dir, sizeof dir, &base, e)) return NULL;
    char *rd = realpath(dir, NULL);
    if (!rd) { um_errf(e, "%s: directory %s: %s", path, dir, strerror(errno)); return NULL; }
    struct stat st;
    if (stat(rd, &st) != 0 || !S_ISDIR(st.st_mode)) {
        um_errf(e, "%s: %s is not a directory", path, dir);
        free(rd);
        return NULL;
    }
    if (access(rd, W_OK | X_OK) != 0) {
        um_errf(e, "%s: cannot create files in %s: %s", path, dir, strerror(errno));
        free(rd);
        return NULL;
    }
    size_t n = strlen(rd) + strlen(base) + 2;
    char *out = malloc(n);
    if (out) snprintf(out, n, "%s%s%s", rd, strcmp(rd, "/") ? "/" : "", base);
    else um_errf(e, "out of memory");
    free(rd);
    return out;
}

/* ---------------------------------------------------------------- declared files */

/* e holds "PATH: reason"; make it "FLAG PATH: reason". */
static int with_flag(um_err *e, const char *flag) {
    if (!e) return UM_FAIL;
    char old[sizeof e->msg];
    memcpy(old, e->msg, sizeof old);
    return um_errf(e, "%.40s %.460s", flag, old);
}

void outfile_set_init(outfile_set *s) { memset(s, 0, sizeof *s); }

void outfile_set_input(outfile_set *s, const char *flag, const char *path) {
    if (!path) return;
    if (s->n_in == OUTFILE_MAX_NAMES) { s->overflow = true; return; }
    s->in[s->n_in].flag = flag;
    s->in[s->n_in++].path = path;
}

void outfile_set_output(outfile_set *s, const char *flag, const char *path) {
    if (!path) return;
    if (s->n_out == OUTFILE_MAX_NAMES) { s->overflow = true; return; }
    s->out[s->n_out].flag = flag;
    s->out[s->n_out++].path = path;
}

int outfile_check(const outfile_set *s, um_err *e) {
    if (s->overflow) return um_errf(e, "more than %d inputs or outputs declared", OUTFILE_MAX_NAMES);
    struct stat in_st[OUTFILE_MAX_NAMES];
    bool in_ok[OUTFILE_MAX_NAMES];
    for (int i = 0; i < s->n_in; i++) {            /* a missing input fails later, when it is opened */
        in_ok[i] = stat(s->in[i].path, &in_st[i]) == 0;
        if (in_ok[i] && infile_check_stat(s->in[i].path, &in_st[i], e)) return with_flag(e, s->in[i].flag);
    }
    struct stat st[OUTFILE_MAX_NAMES];
    target_kind kind[OUTFILE_MAX_NAMES];
    char *canon[OUTFILE_MAX_NAMES] = { 0 };
    int rc = UM_OK;
    for (int k = 0; k < s->n_out && rc == UM_OK; k++) {
        const char *flag = s->out[k].flag, *path = s->out[k].path;
        if (classify(path, &kind[k], &st[k], e)) { rc = with_flag(e, flag); break; }
        for (int i = 0; i < s->n_in && kind[k] != TARGET_NEW; i++)
            if (in_ok[i] && in_st[i].st_dev == st[k].st_dev && in_st[i].st_ino == st[k].st_ino) {
                rc = um_errf(e, "%s %s: is the same file as the input %s %s; refusing to overwrite an input", flag,
                             path, s->in[i].flag, s->in[i].path);
                break;
            }
        if (rc) break;
        if (kind[k] == TARGET_DIRECT && S_ISCHR(st[k].st_mode)) continue;   /* /dev/null twice is fine */
        if (kind[k] == TARGET_DIRECT) {            /* a pipe behind /dev/stdout has no name: dev/ino decide */
            canon[k] = realpath(path, NULL);
            if (!canon[k]) canon[k] = strdup(path);
            if (!canon[k]) { rc = um_errf(e, "out of memory"); break; }
        } else if (!(canon[k] = canonical(path, kind[k] == TARGET_REGULAR, e))) {
            rc = with_flag(e, flag);
            break;
        }
        for (int j = 0; j < k; j++) {
            bool same = canon[j] && !strcmp(canon[j], canon[k]);
            if (kind[j] != TARGET_NEW && kind[k] != TARGET_NEW && st[j].st_dev == st[k].st_dev &&
                st[j].st_ino == st[k].st_ino && !S_ISCHR(st[k].st_mode))
                same = true;                               /* hard links */
            if (same) {
                rc = um_errf(e, "%s %s: is the same file as %s %s; give each output its own file", flag, path,
                             s->out[j].flag, s->out[j].path);
                break;
            }
        }
    }
    for (int k = 0; k < s->n_out; k++) free(canon[k]);
    return rc;
}

/* ---------------------------------------------------------------- writing */

struct outfile {
    FILE *fp;
    char *path;                  /* as the caller gave it */
    int   slot;                  /* registry slot of the temporary name; -1: written directly */
    char *target;                /* regular: what the temporary is renamed onto */
};

/* The process umask, read without changing it where /proc allows (umask() is a
 * set-and-get: another thread creating a file in between would get the wrong mode). */
static mode_t process_umask(void) {
    int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        char buf[4096];
        ssize_t n = read(fd, buf, sizeof buf - 1);
        close(fd);
        if (n > 0) {
            buf[n] = 0;
            const char *u = strstr(buf, "\nUmask:");
            if (u) return (mode_t)strtoul(u + 7, NULL, 8) & 0777;
        }
    }
    mode_t m = umask(022);
    umask(m);
    return m;
}

static void outfile_free(outfile *o) {
    free(o->path);
    free(o->target);
    free(o);
}

static int open_direct(outfile *o, const struct stat *st, um_err *e) {
    int alias = fd_alias(o->path);
    if (alias >= 0) {                              /* /dev/stdout and the like: the descriptor itself */
        int fd = fcntl(alias, F_DUPFD_CLOEXEC, 3);
        if (fd < 0) return um_errf(e, "%s: %s", o->path, strerror(errno));
        if (!(o->fp = fdopen(fd, "wb"))) {
            int err = errno;
            close(fd);
            return um_errf(e, "%s: %s", o->path, strerror(err));
        }
        return UM_OK;
    }
    int fd = open(o->path, O_WRONLY | O_NOCTTY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        if (errno == ENXIO && S_ISFIFO(st->st_mode))
            return um_errf(e, "%s: a FIFO with no reader (start the reader first)", o->path);
        return um_errf(e, "%s: %s", o->path, strerror(errno));
    }
    struct stat now;
    int fl = fcntl(fd, F_GETFL);
    if (fstat(fd, &now) != 0 || !(S_ISFIFO(now.st_mode) || S_ISCHR(now.st_mode)) || fl < 0 ||
        fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0) {
        close(fd);
        return um_errf(e, "%s: changed while it was being opened", o->path);
    }
    if (!(o->fp = fdopen(fd, "wb"))) {
        int err = errno;
        close(fd);
        return um_errf(e, "%s: %s", o->path, strerror(err));
    }
    return UM_OK;
}

static int open_temp(outfile *o, bool exists, const struct stat *st, um_err *e) {
    /* a symlink to a regular file: replace the file it points to, keep the link */
    o->target = exists ? realpath(o->path, NULL) : strdup(o->path);
    if (!o->target) return um_errf(e, "%s: %s", o->path, strerror(errno));
    char dir[PATH_MAX], tmpl[PATH_MAX];
    const char *base;
    if (split_path(o->target, dir, sizeof dir, &base, e)) return UM_FAIL;
    const char *sep = strcmp(dir, "/") ? "/" : "";
    if (snprintf(tmpl, sizeof tmpl, "%s%s.%.200s.XXXXXX", dir, sep, base) >= (int)sizeof tmpl)
        return um_errf(e, "%s: path too long", o->path);
    int slot = slot_claim();
    if (slot < 0) return um_errf(e, "%s: more than %d files being written at once", o->path, OUTFILE_MAX_PENDING);
    int fd = mkostemp(tmpl, O_CLOEXEC);
    if (fd < 0) {
        int err = errno;
        slot_release(slot);
        return um_errf(e, "%s: cannot create a temporary file in %s: %s", o->path, dir, strerror(err));
    }
    memcpy(pending_name[slot], tmpl, strlen(tmpl) + 1);
    slot_arm(slot);
    o->slot = slot;
    mode_t mode = exists ? st->st_mode & 07777 : 0666 & ~process_umask();
    (void)fchmod(fd, mode);                        /* mkstemp made it 0600 */
    if (exists && (st->st_uid != geteuid() || st->st_gid != getegid()))
        (void)fchown(fd, st->st_uid, st->st_gid);  /* works for root; others keep their own */
    if (!(o->fp = fdopen(fd, "wb"))) {
        int err = errno;
        close(fd);
        return um_errf(e, "%s: %s", o->path, strerror(err));
    }
    return UM_OK;
}

int outfile_open(outfile **out, const char *path, um_err *e) {
    *out = NULL;
    target_kind kind;
    struct stat st;
    if (classify(path, &kind, &st, e)) return UM_FAIL;
    outfile *o = um_calloc(1, sizeof *o);
    if (!o || !(o->path = strdup(path))) { free(o); return um_errf(e, "out of memory"); }
    o->slot = -1;
    int rc = kind == TARGET_DIRECT ? open_direct(o, &st, e) : open_temp(o, kind == TARGET_REGULAR, &st, e);
    if (rc) { outfile_abort(o); return UM_FAIL; }
    *out = o;
    return UM_OK;
}

FILE *outfile_stream(outfile *o) { return o->fp; }
const char *outfile_path(const outfile *o) { return o->path; }
bool outfile_direct(const outfile *o) { return o->slot < 0; }

int outfile_write(outfile *o, const void *p, size_t n, um_err *e) {
    if (n && fwrite(p, 1, n, o->fp) != n) return um_errf(e, "%s: write failed: %s", o->path, strerror(errno));
    return UM_OK;
}

/* Make the rename itself durable (best effort: not every file system allows it). */
static void sync_dir_of(const char *target) {
    char dir[PATH_MAX];
    const char *base;
    if (split_path(target, dir, sizeof dir, &base, NULL)) return;
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        (void)fsync(fd);
        close(fd);
    }
}

int outfile_commit(outfile *o, um_err *e) {
    if (!o) return um_errf(e, "commit of an output that is not open");
    int rc = UM_OK;
    errno = 0;
    if (fflush(o->fp) != 0) rc = um_errf(e, "%s: write failed: %s", o->path, strerror(errno));
    else if (ferror(o->fp)) rc = um_errf(e, "%s: write failed: an earlier write returned an error", o->path);
    if (rc == UM_OK && o->slot >= 0 && fsync(fileno(o->fp)) != 0)
        rc = um_errf(e, "%s: fsync failed: %s", o->path, strerror(errno));
    int closed = fclose(o->fp);
    o->fp = NULL;
    if (closed != 0 && rc == UM_OK) rc = um_errf(e, "%s: close failed: %s", o->path, strerror(errno));
    if (o->slot >= 0) {
        if (rc == UM_OK && rename(pending_name[o->slot], o->target) != 0)
            rc = um_errf(e, "%s: cannot rename the temporary file into place: %s", o->path, strerror(errno));
        if (rc != UM_OK) unlink(pending_name[o->slot]);
        else sync_dir_of(o->target);
        slot_release(o->slot);
    }
    outfile_free(o);
    return rc;
}

void outfile_abort(outfile *o) {
    if (!o) return;
    if (o->fp) fclose(o->fp);
    if (o->slot >= 0) {
        unlink(pending_name[o->slot]);
        slot_release(o->slot);
    }
    outfile_free(o);
}
