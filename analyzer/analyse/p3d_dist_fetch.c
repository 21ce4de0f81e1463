/*
 * p3d_dist_fetch.c - p3d-analyze-mpi --local, after the hang analysis
 * (p3d_dist_fetch.h).  The --chrome/--html views read rank files again,
 * on process 0, which cannot see the other nodes' folders (the hang
 * analysis reads each file where it lies, hang/p3d_hang_dist.c).  So
 * process 0 says which files it needs, their owners send them in pieces,
 * and process 0 keeps them in a folder of its own under $TMPDIR (removed
 * when it exits) that p3d_rank_file() then names.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "p3d_dist_fetch.h"
#include "p3d_strbuf.h"
#include "p3d_util.h"

#define P3D_FETCH_PIECE ((size_t)16 << 20) /* bytes of file per message */

/* What starts each piece of a file (then its bytes). */
struct p3d_file_piece {
    uint64_t size; /* the file's */
    uint64_t off;  /* of this piece */
    int32_t err;   /* errno: the owner could not read on; no bytes */
    int32_t pad;
};

/* The copies made, removed at exit or on a signal: the list has room
 * before a job's first copy and moves only with signals held
 * (p3d_fetch_room), and an entry counts once it is written, so a signal
 * handler may walk it. */
static char p3d_fetch_dir[4096];
static char **p3d_fetch_files;
static volatile sig_atomic_t p3d_fetch_n;

void p3d_dist_fetch_clean(void)
{
    for (int i = 0; i < p3d_fetch_n; i++)
        unlink(p3d_fetch_files[i]);
    if (p3d_fetch_dir[0])
        rmdir(p3d_fetch_dir);
}

/* Room in the list for n more copies, with signals held while it moves
 * (one job after another each make room for theirs). */
static void p3d_fetch_room(int n)
{
    sigset_t all, was;
    char **grown = p3d_xcalloc((size_t)p3d_fetch_n + (size_t)n + 1,
                               sizeof(*grown)), **old = p3d_fetch_files;

    if (p3d_fetch_n)
        memcpy(grown, old, (size_t)p3d_fetch_n * sizeof(*grown));
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &was);
    p3d_fetch_files = grown;
    pthread_sigmask(SIG_SETMASK, &was, NULL);
    free(old);
}

/* A new file for rank file i in process 0's folder, or -1. */
static int p3d_fetch_create(int i, char **path)
{
    const char *tmp = getenv("TMPDIR");
    char name[4200];
    int fd;

    if (!p3d_fetch_dir[0]) {
        snprintf(p3d_fetch_dir, sizeof(p3d_fetch_dir),
                 "%s/p3d-analyze-mpi.XXXXXX", tmp && *tmp ? tmp : "/tmp");
        if (!mkdtemp(p3d_fetch_dir)) {
            p3d_fetch_dir[0] = 0;
            return -1;
        }
        atexit(p3d_dist_fetch_clean);
    }
    snprintf(name, sizeof(name), "%s/rank-file-%d.p3d", p3d_fetch_dir, i);
    fd = open(name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0)
        return -1;
    p3d_fetch_files[p3d_fetch_n] = *path = p3d_xstrdup(name);
    p3d_fetch_n = p3d_fetch_n + 1;
    return fd;
}

/* An owner: rank file i to process 0, piece by piece (a file that cannot
 * be read on sends its errno, so process 0 does not wait for it). */
static void p3d_fetch_send(struct p3d_dist *d, const struct p3d_rank *r,
                           int i)
{
    int fd = open(r->path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    struct p3d_file_piece h = {0, 0, 0, 0};

    if (fd < 0 || fstat(fd, &st) < 0)
        h.err = errno ? errno : EIO;
    else
        h.size = (uint64_t)st.st_size;
    do {
        struct p3d_bytes b = {0};
        size_t want = h.err ? 0 : h.size - h.off < P3D_FETCH_PIECE
                                      ? h.size - h.off : P3D_FETCH_PIECE;
        char *p = p3d_bytes_room(&b, sizeof(h) + want);
        ssize_t got = 0;
        if (want &&
            (got = pread(fd, p + sizeof(h), want, (off_t)h.off)) <= 0) {
            h.err = got < 0 ? errno : EIO; /* shorter than it was */
            got = 0;
        }
        memcpy(p, &h, sizeof(h));
        b.n = sizeof(h) + (size_t)got;
        h.off += (uint64_t)got;
        d->send(d, i, &b);
        p3d_bytes_free(&b);
    } while (!h.err && h.off < h.size);
    if (fd >= 0)
        close(fd);
}

/*
 * Process 0: rank file i from its owner into a copy.  Without one (no
 * room under $TMPDIR, the owner could not read it) the rank's copy is ""
 * so that nothing reads r->path, a file on another node (or an unrelated
 * one of the same name here): the views then have no file for it.  Returns NULL, or why not (static text).
 */
static const char *p3d_fetch_take(struct p3d_dist *d, struct p3d_rank *r,
                                  int i, struct p3d_bytes *msg)
{
    static char why[512];
    char *path = NULL;
    int fd = p3d_fetch_create(i, &path), ok = fd >= 0;
    struct p3d_file_piece h;

    why[0] = 0;
    if (!ok)
        snprintf(why, sizeof(why), "cannot create a file under %s: %s",
                 p3d_fetch_dir[0] ? p3d_fetch_dir : "$TMPDIR",
                 strerror(errno));
    do {
        int from = r->owner, tag = i;
        d->recv(d, &from, &tag, msg);
        if (msg->n < sizeof(h))
            p3d_die("a piece of rank file %d from process %d arrived "
                    "damaged", i, from);
        memcpy(&h, msg->p, sizeof(h));
        if (ok && msg->n > sizeof(h) &&
            pwrite(fd, msg->p + sizeof(h), msg->n - sizeof(h),
                   (off_t)h.off) != (ssize_t)(msg->n - sizeof(h))) {
            snprintf(why, sizeof(why), "cannot write '%s': %s", path,
                     strerror(errno));
            ok = 0;
        }
        h.off += msg->n - sizeof(h);
    } while (!h.err && h.off < h.size);
    if (h.err && ok)
        snprintf(why, sizeof(why), "process %d could not read '%s': %s",
                 r->owner, r->path, strerror(h.err));
    if (fd >= 0)
        close(fd);
    free(r->copy);
    r->copy = p3d_xstrdup(ok && !h.err ? path : "");
    return ok && !h.err ? NULL : why;
}

/* Once, after the fetch: the ranks process 0 has no copy of, and why
 * (the first reason). */
static void p3d_fetch_say(const struct p3d_sb *failed, int n,
                          const char *why)
{
    if (!n)
        return;
    p3d_error("--local: process 0 has no copy of the rank files of %d "
              "rank(s) (%s): %s; the views go without them", n, p3d_sb_str(failed), why);
}

/* Process 0's choice: the files of other processes it reads again. */
static void p3d_fetch_need(const struct p3d_job *job, int views,
                           struct p3d_bytes *b)
{
    for (int i = 0; i < job->n_ranks; i++) {
        const struct p3d_rank *r = &job->ranks[i];
        uint8_t want = r->owner != 0 && !r->failed && views;
        p3d_bytes_put(b, &want, 1);
    }
}

void p3d_dist_fetch(struct p3d_dist *d, struct p3d_job *job, int views)
{
    struct p3d_bytes need = {0}, msg = {0};
    struct p3d_sb failed = P3D_SB_INIT;
    char first[512] = "";
    int n_failed = 0;

    if (!d->local)
        return;
    if (d->self == 0) {
        p3d_fetch_need(job, views, &need);
        p3d_fetch_room(job->n_ranks);
    }
    d->bcast(d, &need);
    if (need.n != (size_t)job->n_ranks)
        p3d_die("the list of files to fetch arrived damaged");
    for (int i = 0; i < job->n_ranks; i++) {
        struct p3d_rank *r = &job->ranks[i];
        if (!need.p[i])
            continue;
        if (d->self == 0) {
            const char *why = p3d_fetch_take(d, r, i, &msg);
            if (why && n_failed++ < 16)
                p3d_sb_addf(&failed, "%s%d", n_failed > 1 ? "," : "",
                            r->rank);
            if (why && !first[0])
                snprintf(first, sizeof(first), "%s", why);
        } else if (r->owner == d->self) {
            p3d_fetch_send(d, r, i);
        }
    }
    if (n_failed > 16)
        p3d_sb_add(&failed, ",...");
    p3d_fetch_say(&failed, n_failed, first);
    p3d_sb_free(&failed);
    p3d_bytes_free(&need);
    p3d_bytes_free(&msg);
}
