/*
 * outfile: declared outputs checked up front, temporary file + atomic rename for regular
 * targets, direct writes for FIFOs and character devices, and a signal-safe registry of
 * pending temporary files (see outfile.h).
 *
 * Registry invariant: pending_state[i] is ARMED exactly while pending_name[i] names a
 * temporary file this process created and has neither renamed nor removed; the name is
 * written before the state is published (release store), and the signal handler reads the
 * state with an acquire load, so it never sees a half-written name. The same holds for sets
 * (outfile_group): group_reg[k] points to a group only while its arrays exist (registered
 * after they are allocated, unregistered before they are freed), and a member's state is
 * M_WRITING or M_DONE exactly while tmp[i], written before the state, names a temporary file.
 */
#include "outfile.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
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

/* A set of outputs (outfile_group_*): every member's temporary name, heap-allocated once the
 * group exists and freed only after it left group_reg. */
enum { M_EMPTY = 0, M_WRITING, M_DONE, M_DIRECT, M_GONE };   /* M_WRITING, M_DONE: tmp[i] exists */

struct outfile_group {
    int    n, n_open;            /* members declared, members opened so far */
    char **tmp;                  /* (n) temporary names (malloc'd); NULL for a direct member */
    char **target;               /* (n) what each temporary is renamed onto */
    char **path;                 /* (n) as the caller gave it, for messages */
    int   *state;                /* (n) M_*, published with release stores after tmp[i] */
    bool  *existed;              /* (n) the target was a regular file when the member opened */
    int    slot;                 /* index in group_reg, -1 before it is registered */
};

static outfile_group *group_reg[OUTFILE_MAX_GROUPS];

void outfile_signal_cleanup(void) {
    for (int i = 0; i < OUTFILE_MAX_PENDING; i++)
        if (__atomic_load_n(&pending_state[i], __ATOMIC_ACQUIRE) == SLOT_ARMED) unlink(pending_name[i]);
    for (int k = 0; k < OUTFILE_MAX_GROUPS; k++) {
        outfile_group *g = __atomic_load_n(&group_reg[k], __ATOMIC_ACQUIRE);
        for (int i = 0; g && i < g->n; i++) {
            int st = __atomic_load_n(&g->state[i], __ATOMIC_ACQUIRE);
            if (st == M_WRITING || st == M_DONE) unlink(g->tmp[i]);
        }
    }
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

/* Where PATH leads: the symbolic links of its last component followed, as open(O_CREAT)
 * and cp do, so a dangling link leads to the file it names (created there) and a link is
 * never replaced. An fd alias on the way (/dev/stdout) stops the walk. malloc'd; NULL with e
 * set (a loop of links). An lstat that fails ends the walk too: classify reports it. */
static char *resolve(const char *path, um_err *e) {
    char *cur = strdup(path);
    for (int hop = 0; cur; hop++) {
        struct stat lst;
        if (fd_alias(cur) >= 0 || lstat(cur, &lst) != 0 || !S_ISLNK(lst.st_mode)) return cur;
        char to[PATH_MAX];
        ssize_t n = hop < 40 ? readlink(cur, to, sizeof to - 1) : -1;
        if (n < 0) {
            um_errf(e, "%s: %s", path, hop < 40 ? strerror(errno) : "too many levels of symbolic links");
            free(cur);
            return NULL;
        }
        to[n] = 0;
        const char *slash = strrchr(cur, '/');   /* a relative link is read from its own directory */
        size_t d = to[0] == '/' || !slash ? 0 : (size_t)(slash - cur) + 1;
        char *next = malloc(d + (size_t)n + 1);
        if (next) {
            memcpy(next, cur, d);
            memcpy(next + d, to, (size_t)n + 1);
        }
        free(cur);
        cur = next;
    }
    um_errf(e, "out of memory");
    return NULL;
}

/* What REAL (PATH with its links followed) is and whether it may be written; *st is its stat
 * when it exists. Messages name PATH, as the user gave it. */
static int classify(const char *path, const char *real, target_kind *kind, struct stat *st, um_err *e) {
    if (stat(real, st) != 0) {
        if (errno != ENOENT || fd_alias(real) >= 0) return um_errf(e, "%s: %s", path, strerror(errno));
        *kind = TARGET_NEW;
        return UM_OK;
    }
    if (fd_alias(real) >= 0 && !S_ISDIR(st->st_mode)) *kind = TARGET_DIRECT;
    else if (S_ISREG(st->st_mode)) *kind = TARGET_REGULAR;
    else if (S_ISFIFO(st->st_mode) || S_ISCHR(st->st_mode)) *kind = TARGET_DIRECT;
    else return um_errf(e, "%s: %s", path, kind_name(st->st_mode));
    if (access(real, W_OK) != 0) return um_errf(e, "%s: %s", path, strerror(errno));
    return UM_OK;
}

/* resolve + classify: *real (malloc'd) is where PATH leads. */
static int examine(const char *path, char **real, target_kind *kind, struct stat *st, um_err *e) {
    *real = NULL;
    if (!path || !*path) return um_errf(e, "empty output file name");
    if (!(*real = resolve(path, e))) return UM_FAIL;
    if (classify(path, *real, kind, st, e)) {
        free(*real);
        *real = NULL;
        return UM_FAIL;
    }
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

/* The name a target will have: realpath of an existing file, else realpath(dir)/base of
 * where PATH leads (real), after checking that the directory exists and may be written.
 * malloc'd; messages name PATH. */
static char *canonical(const char *path, const char *real, bool exists, um_err *e) {
    if (exists) {
        char *r = realpath(real, NULL);
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
    if (split_path(real, dir, sizeof dir, &base, e)) return NULL;
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
    char *canon[OUTFILE_MAX_NAMES] = { 0 }, *real = NULL;
    int rc = UM_OK;
    for (int k = 0; k < s->n_out && rc == UM_OK; k++) {
        const char *flag = s->out[k].flag, *path = s->out[k].path;
        free(real);
        if (examine(path, &real, &kind[k], &st[k], e)) { rc = with_flag(e, flag); break; }
        for (int i = 0; i < s->n_in && kind[k] != TARGET_NEW; i++)
            if (in_ok[i] && in_st[i].st_dev == st[k].st_dev && in_st[i].st_ino == st[k].st_ino) {
                rc = um_errf(e, "%s %s: is the same file as the input %s %s; refusing to overwrite an input", flag,
                             path, s->in[i].flag, s->in[i].path);
                break;
            }
        if (rc) break;
        if (kind[k] == TARGET_DIRECT && S_ISCHR(st[k].st_mode)) continue;   /* /dev/null twice is fine */
        if (kind[k] == TARGET_DIRECT) {            /* a pipe behind /dev/stdout has no name: dev/ino decide */
            canon[k] = realpath(real, NULL);
            if (!canon[k]) canon[k] = strdup(real);
            if (!canon[k]) { rc = um_errf(e, "out of memory"); break; }
        } else if (!(canon[k] = canonical(path, real, kind[k] == TARGET_REGULAR, e))) {
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
    free(real);
    for (int k = 0; k < s->n_out; k++) free(canon[k]);
    return rc;
}

/* ---------------------------------------------------------------- writing */

struct outfile {
    FILE          *fp;
    char          *path;         /* as the caller gave it */
    int            slot;         /* registry slot of the temporary name; -1: none */
    char          *target;       /* through a temporary: what it is renamed onto */
    outfile_group *group;        /* a member of this group (its temporary named there), or NULL */
    int            member;       /* its index in the group */
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

static int open_direct(outfile *o, const char *real, const struct stat *st, um_err *e) {
    int alias = fd_alias(real);
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
    int fd = open(real, O_WRONLY | O_NOCTTY | O_CLOEXEC | O_NONBLOCK);
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

/* Make the temporary file for o->target: ".NAME.XXXXXX" in its directory, with the mode
 * (and, where permitted, the owner) the target should get. Its name goes to tmpl (cap
 * PATH_MAX) and is to be published by the caller; returns the descriptor or -1. */
static int make_temp(outfile *o, bool exists, const struct stat *st, char *tmpl, um_err *e) {
    char dir[PATH_MAX];
    const char *base;
    if (split_path(o->target, dir, sizeof dir, &base, e)) return -1;
    const char *sep = strcmp(dir, "/") ? "/" : "";
    if (snprintf(tmpl, PATH_MAX, "%s%s.%.200s.XXXXXX", dir, sep, base) >= PATH_MAX) {
        um_errf(e, "%s: path too long", o->path);
        return -1;
    }
    int fd = mkostemp(tmpl, O_CLOEXEC);
    if (fd < 0) {
        um_errf(e, "%s: cannot create a temporary file in %s: %s", o->path, dir, strerror(errno));
        return -1;
    }
    mode_t mode = exists ? st->st_mode & 07777 : 0666 & ~process_umask();
    (void)fchmod(fd, mode);                        /* mkstemp made it 0600 */
    if (exists && (st->st_uid != geteuid() || st->st_gid != getegid()))
        (void)fchown(fd, st->st_uid, st->st_gid);  /* works for root; others keep their own */
    return fd;
}

static int stream_on(outfile *o, int fd, um_err *e) {
    if ((o->fp = fdopen(fd, "wb"))) return UM_OK;
    return um_errf(e, "%s: %s", o->path, strerror(errno));
}

static int open_group_member(outfile_group *g, outfile *o, bool exists, const struct stat *st, um_err *e);

/* Open PATH (alone, or as the next member of g). */
static int open_any(outfile **out, outfile_group *g, const char *path, um_err *e) {
    *out = NULL;
    target_kind kind;
    struct stat st;
    char *real;
    if (examine(path, &real, &kind, &st, e)) return UM_FAIL;
    outfile *o = um_calloc(1, sizeof *o);
    if (!o || !(o->path = strdup(path))) {
        free(o);
        free(real);
        return um_errf(e, "out of memory");
    }
    o->slot = -1;
    o->member = -1;
    int rc;
    if (kind == TARGET_DIRECT) {
        rc = open_direct(o, real, &st, e);
        if (g && rc == UM_OK) rc = open_group_member(g, o, false, NULL, e);
    } else {
        /* a symlink: the file where it leads is written (replaced or created), the link stays */
        o->target = kind == TARGET_REGULAR ? realpath(real, NULL) : strdup(real);
        if (!o->target) rc = um_errf(e, "%s: %s", path, strerror(errno));
        else if (g) rc = open_group_member(g, o, kind == TARGET_REGULAR, &st, e);
        else if ((o->slot = slot_claim()) < 0)
            rc = um_errf(e, "%s: more than %d files being written at once", path, OUTFILE_MAX_PENDING);
        else {
            int fd = make_temp(o, kind == TARGET_REGULAR, &st, pending_name[o->slot], e);
            if (fd < 0) {
                slot_release(o->slot);
                o->slot = -1;
                rc = UM_FAIL;
            } else {
                slot_arm(o->slot);
                rc = stream_on(o, fd, e);
                if (rc) close(fd);
            }
        }
    }
    free(real);
    if (rc) { outfile_abort(o); return UM_FAIL; }
    *out = o;
    return UM_OK;
}

int outfile_open(outfile **out, const char *path, um_err *e) { return open_any(out, NULL, path, e); }

FILE *outfile_stream(outfile *o) { return o->fp; }
const char *outfile_path(const outfile *o) { return o->path; }
bool outfile_direct(const outfile *o) { return !o->target; }

int outfile_write(outfile *o, const void *p, size_t n, um_err *e) {
    if (n && fwrite(p, 1, n, o->fp) != n) return um_errf(e, "%s: write failed: %s", o->path, strerror(errno));
    return UM_OK;
}

/* Make the renames in a directory durable (best effort: not every file system allows it). */
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

/* Flush, fsync (a temporary) and close o's stream; the message names the step that failed. */
static int finish_stream(outfile *o, um_err *e) {
    int rc = UM_OK;
    errno = 0;
    if (fflush(o->fp) != 0) rc = um_errf(e, "%s: write failed: %s", o->path, strerror(errno));
    else if (ferror(o->fp)) rc = um_errf(e, "%s: write failed: an earlier write returned an error", o->path);
    if (rc == UM_OK && o->target && fsync(fileno(o->fp)) != 0)
        rc = um_errf(e, "%s: fsync failed: %s", o->path, strerror(errno));
    int closed = fclose(o->fp);
    o->fp = NULL;
    if (closed != 0 && rc == UM_OK) rc = um_errf(e, "%s: close failed: %s", o->path, strerror(errno));
    return rc;
}

static void member_finished(outfile *o, bool ok);
static void member_aborted(outfile *o);

int outfile_commit(outfile *o, um_err *e) {
    if (!o) return um_errf(e, "commit of an output that is not open");
    int rc = finish_stream(o, e);
    if (o->group) {
        member_finished(o, rc == UM_OK);            /* renamed by outfile_group_commit */
    } else if (o->slot >= 0) {
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
    if (o->group) member_aborted(o);
    else if (o->slot >= 0) {
        unlink(pending_name[o->slot]);
        slot_release(o->slot);
    }
    outfile_free(o);
}

/* ---------------------------------------------------------------- sets: all or nothing */

static int open_group_member(outfile_group *g, outfile *o, bool exists, const struct stat *st, um_err *e) {
    int i = g->n_open;
    if (i >= g->n) return um_errf(e, "%s: more than the %d files declared for this set", o->path, g->n);
    g->n_open++;
    o->group = g;
    o->member = i;
    if (!(g->path[i] = strdup(o->path))) return um_errf(e, "out of memory");
    if (!o->target) {                              /* a FIFO or device: written in place, as it comes */
        __atomic_store_n(&g->state[i], M_DIRECT, __ATOMIC_RELEASE);
        return UM_OK;
    }
    char tmpl[PATH_MAX];
    int fd = make_temp(o, exists, st, tmpl, e);
    if (fd < 0) return UM_FAIL;
    if (!(g->tmp[i] = strdup(tmpl)) || !(g->target[i] = strdup(o->target))) {
        close(fd);
        unlink(tmpl);
        return um_errf(e, "out of memory");
    }
    g->existed[i] = exists;
    __atomic_store_n(&g->state[i], M_WRITING, __ATOMIC_RELEASE);   /* the name before the state */
    if (stream_on(o, fd, e)) { close(fd); return UM_FAIL; }
    return UM_OK;
}

/* A member's temporary file is gone (removed, or renamed into place): the registry forgets it. */
static void member_drop(outfile_group *g, int i, bool remove) {
    int st = __atomic_load_n(&g->state[i], __ATOMIC_ACQUIRE);
    if (remove && (st == M_WRITING || st == M_DONE)) unlink(g->tmp[i]);
    __atomic_store_n(&g->state[i], M_GONE, __ATOMIC_RELEASE);
}

static void member_finished(outfile *o, bool ok) {
    outfile_group *g = o->group;
    int i = o->member;
    if (!ok) member_drop(g, i, true);
    else if (g->state[i] == M_WRITING) __atomic_store_n(&g->state[i], M_DONE, __ATOMIC_RELEASE);
}

static void member_aborted(outfile *o) { member_drop(o->group, o->member, true); }

int outfile_group_new(outfile_group **out, int n, um_err *e) {
    *out = NULL;
    if (n < 1) return um_errf(e, "a set of %d files", n);
    outfile_group *g = um_calloc(1, sizeof *g);
    if (!g) return um_errf(e, "out of memory");
    g->n = n;
    g->slot = -1;
    g->tmp = um_calloc((size_t)n, sizeof *g->tmp);
    g->target = um_calloc((size_t)n, sizeof *g->target);
    g->path = um_calloc((size_t)n, sizeof *g->path);
    g->state = um_calloc((size_t)n, sizeof *g->state);
    g->existed = um_calloc((size_t)n, sizeof *g->existed);
    if (!g->tmp || !g->target || !g->path || !g->state || !g->existed) {
        outfile_group_abort(g);
        return um_errf(e, "out of memory");
    }
    for (int k = 0; k < OUTFILE_MAX_GROUPS && g->slot < 0; k++) {   /* registered once complete */
        outfile_group *none = NULL;
        if (__atomic_compare_exchange_n(&group_reg[k], &none, g, false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) g->slot = k;
    }
    if (g->slot < 0) {
        outfile_group_abort(g);
        return um_errf(e, "more than %d sets of files being written at once", OUTFILE_MAX_GROUPS);
    }
    *out = g;
    return UM_OK;
}

int outfile_group_open(outfile_group *g, outfile **o, const char *path, um_err *e) {
    return open_any(o, g, path, e);
}

static void group_free(outfile_group *g) {
    if (g->slot >= 0) __atomic_store_n(&group_reg[g->slot], NULL, __ATOMIC_RELEASE);   /* first */
    for (int i = 0; g->path && i < g->n; i++) {
        if (g->tmp) free(g->tmp[i]);
        if (g->target) free(g->target[i]);
        free(g->path[i]);
    }
    free(g->tmp);
    free(g->target);
    free(g->path);
    free(g->state);
    free(g->existed);
    free(g);
}

void outfile_group_abort(outfile_group *g) {
    if (!g) return;
    for (int i = 0; g->state && g->tmp && i < g->n; i++) member_drop(g, i, true);
    group_free(g);
}

/* A second name for the file at target, so that a failed replacement can put it back:
 * a hard link ".NAME.XXXXXX" beside it. NULL with *err = 0 when there is nothing to keep
 * (the file is gone) or the file system has no hard links; NULL with *err set on failure. */
static char *keep_old(const char *target, int *err) {
    char tmpl[PATH_MAX], dir[PATH_MAX];
    const char *base;
    *err = 0;
    if (split_path(target, dir, sizeof dir, &base, NULL) ||
        snprintf(tmpl, sizeof tmpl, "%s%s.%.200s.XXXXXX", dir, strcmp(dir, "/") ? "/" : "", base) >= (int)sizeof tmpl) {
        *err = ENAMETOOLONG;
        return NULL;
    }
    for (int tries = 0; tries < 8; tries++) {
        char name[PATH_MAX];
        memcpy(name, tmpl, strlen(tmpl) + 1);
        int fd = mkostemp(name, O_CLOEXEC);        /* a fresh unique name, then the link under it */
        if (fd < 0) { *err = errno; return NULL; }
        close(fd);
        unlink(name);
        if (link(target, name) == 0) {
            char *k = strdup(name);
            if (!k) { unlink(name); *err = ENOMEM; }
            return k;
        }
        if (errno == EEXIST) continue;             /* taken in between: another name */
        if (errno != ENOENT && errno != EPERM && errno != EOPNOTSUPP && errno != EMLINK) *err = errno;
        return NULL;
    }
    *err = EEXIST;
    return NULL;
}

/* The signals that end the process are held while the set is renamed, so none lands between
 * two renames; the crash signals stay (a fault in here must still be reported). */
static void hold_signals(sigset_t *old) {
    sigset_t all;
    sigfillset(&all);
    static const int crash[] = { SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP, SIGSYS };
    for (size_t i = 0; i < sizeof crash / sizeof crash[0]; i++) sigdelset(&all, crash[i]);
    pthread_sigmask(SIG_BLOCK, &all, old);
}

int outfile_group_commit(outfile_group *g, um_err *e) {
    if (!g) return um_errf(e, "commit of a set that is not open");
    int ready = 0;
    for (int i = 0; i < g->n; i++) ready += i < g->n_open && (g->state[i] == M_DONE || g->state[i] == M_DIRECT);
    if (ready < g->n) {
        um_errf(e, "only %d of the %d files of the set were written; nothing was replaced", ready, g->n);
        outfile_group_abort(g);
        return UM_FAIL;
    }
    char **bak = um_calloc((size_t)g->n, sizeof *bak);
    if (!bak) {
        outfile_group_abort(g);
        return um_errf(e, "out of memory");
    }
    sigset_t old;
    hold_signals(&old);
    int rc = UM_OK, k = 0, err;
    for (int i = 0; i < g->n && rc == UM_OK; i++)  /* the old files get a second name first */
        if (g->state[i] == M_DONE && g->existed[i] && !(bak[i] = keep_old(g->target[i], &err)) && err)
            rc = um_errf(e, "%s: cannot keep the old file while the set is replaced: %s; nothing was replaced",
                         g->path[i], strerror(err));
    for (; rc == UM_OK && k < g->n; k++) {
        if (g->state[k] != M_DONE) continue;
        if (rename(g->tmp[k], g->target[k]) != 0) {
            rc = um_errf(e, "%s: cannot rename the temporary file into place: %s", g->path[k], strerror(errno));
            break;
        }
        member_drop(g, k, false);
    }
    if (rc != UM_OK) {                             /* put back what was replaced: the old set stands */
        int lost = 0;
        for (int j = 0; j < k; j++) {
            if (g->state[j] == M_DIRECT) continue;
            if (bak[j] ? rename(bak[j], g->target[j]) != 0 : g->existed[j] || unlink(g->target[j]) != 0) lost++;
            else if (bak[j]) { free(bak[j]); bak[j] = NULL; }
        }
        if (k > 0 && e) {
            char why[sizeof e->msg];
            memcpy(why, e->msg, sizeof why);
            if (lost) um_errf(e, "%s; %d of the files already replaced could not be put back", why, lost);
            else um_errf(e, "%s; the files already replaced were put back", why);
        }
    }
    for (int i = 0; i < g->n; i++) {
        if (bak[i]) unlink(bak[i]);
        free(bak[i]);
        if (rc == UM_OK && g->target[i] && (i == 0 || !g->target[i - 1] || strcmp(g->target[i], g->target[i - 1])))
            sync_dir_of(g->target[i]);
    }
    free(bak);
    outfile_group_abort(g);                        /* the temporaries left, if any; frees g */
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return rc;
}
