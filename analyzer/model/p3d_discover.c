/*
 * p3d_discover.c - find trace files and sort them into jobs.
 *
 * Files are recognised by name (*.p3d) and then by header.  Folders are
 * walked two levels deep (traces/ -> traces/<job>/), following symlinks
 * but never entering a folder twice (loops).  Files are grouped by job id;
 * within one id, a start more than P3D_RUN_GAP_S after the previous file,
 * or a rank seen again from another process (the shim names a rerun's
 * file rank-N.<pid>.p3d), starts a new run (torchrun's job id "none" is
 * shared by every run on a machine).  A forked child's file of a rank is
 * skipped; a byte copy (same pid and start) is a duplicate.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "p3d_bytes.h"
#include "p3d_discover.h"
#include "p3d_reader.h"
#include "p3d_util.h"

struct p3d_cand {
    char *path;
    struct p3d_file_hdr hdr;
    int owner; /* the process that found it (p3d-analyze-mpi --local) */
};

/* A rank-N*.p3d file whose header cannot be read. */
struct p3d_bad {
    char *path, *msg;
    int rank, owner;
};

struct p3d_found {
    int missing_ok; /* a path that does not exist is counted, not an error */
    int n_missing;
    struct p3d_cand *c;
    size_t n, cap;
    struct p3d_bad *bad;
    size_t n_bad, cap_bad;
    dev_t dev[64];
    ino_t ino[64];
    int n_seen;
};

static int p3d_ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);

    return n >= m && !strcmp(s + n - m, suffix);
}

/*
 * A file with no readable header: one named after a rank is kept to be
 * attached to the job of its folder (p3d_attach_bad), so that the report
 * names it there; any other is an error now.
 */
static void p3d_bad_file(struct p3d_found *w, const char *path,
                         const char *msg)
{
    const char *base = strrchr(path, '/');
    int rank;

    base = base ? base + 1 : path;
    if (sscanf(base, "rank-%d", &rank) != 1 || rank < 0) {
        p3d_error("%s", msg);
        return;
    }
    w->cap_bad = p3d_grow((void **)&w->bad, w->cap_bad, w->n_bad,
                          sizeof(*w->bad));
    w->bad[w->n_bad].path = p3d_xstrdup(path);
    w->bad[w->n_bad].msg = p3d_xstrdup(msg);
    w->bad[w->n_bad].owner = 0;
    w->bad[w->n_bad++].rank = rank;
}

static void p3d_add_file(struct p3d_found *w, const char *path)
{
    struct p3d_reader rd;
    char buf[P3D_FILE_HDR_BYTES];
    ssize_t got;
    int fd = open(path, O_RDONLY | O_CLOEXEC);

    memset(&rd, 0, sizeof(rd));
    rd.path = path;
    if (fd < 0) {
        p3d_error("cannot open '%s': %s", path, strerror(errno));
        return;
    }
    got = pread(fd, buf, sizeof(buf), 0);
    close(fd);
    if (got == 0) {
        p3d_warning("'%s': empty file (the rank recorded nothing); skipped",
                    path);
        return;
    }
    if (got < 0 || p3d_reader_check_hdr(&rd, buf, (size_t)got) < 0) {
        p3d_bad_file(w, path, got < 0 ? strerror(errno) : rd.msg);
        return;
    }
    w->cap = p3d_grow((void **)&w->c, w->cap, w->n, sizeof(*w->c));
    w->c[w->n].path = p3d_xstrdup(path);
    w->c[w->n].owner = 0; /* p3d_found_add sets the others' */
    w->c[w->n++].hdr = rd.hdr;
}

static int p3d_seen(struct p3d_found *w, const struct stat *st)
{
    for (int i = 0; i < w->n_seen; i++)
        if (w->dev[i] == st->st_dev && w->ino[i] == st->st_ino)
            return 1;
    if (w->n_seen < 64) {
        w->dev[w->n_seen] = st->st_dev;
        w->ino[w->n_seen++] = st->st_ino;
    }
    return 0;
}

static int p3d_cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void p3d_walk_dir(struct p3d_found *w, const char *dir, int depth);

static void p3d_walk_entry(struct p3d_found *w, const char *path, int depth)
{
    struct stat st;

    if (stat(path, &st) < 0) {
        p3d_warning("cannot stat '%s': %s; skipped", path, strerror(errno));
        return;
    }
    if (S_ISDIR(st.st_mode)) {
        if (depth >= 2 || p3d_seen(w, &st))
            p3d_note("skipping folder '%s' (too deep or seen before)", path);
        else
            p3d_walk_dir(w, path, depth + 1);
    } else if (S_ISREG(st.st_mode) && p3d_ends_with(path, ".p3d")) {
        p3d_add_file(w, path);
    } else if (strstr(path, ".p3d")) {
        /* a trace renamed (.p3d.bak, .p3d.tmp): say why it is skipped;
         * other files in job folders (truth.json, a README) are not worth
         * a note on every run */
        p3d_note("skipping '%s': not a trace file", path);
    }
}

static void p3d_walk_dir(struct p3d_found *w, const char *dir, int depth)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char **names = NULL;
    size_t n = 0, cap = 0;

    if (!d) {
        p3d_error("cannot read folder '%s': %s", dir, strerror(errno));
        return;
    }
    while ((e = readdir(d))) {
        size_t len;
        if (e->d_name[0] == '.')
            continue;
        cap = p3d_grow((void **)&names, cap, n, sizeof(*names));
        len = strlen(dir) + strlen(e->d_name) + 2;
        names[n] = p3d_xmalloc(len);
        snprintf(names[n++], len, "%s%s%s", dir,
                 p3d_ends_with(dir, "/") ? "" : "/", e->d_name);
    }
    closedir(d);
    if (n)
        qsort(names, n, sizeof(*names), p3d_cmp_str);
    for (size_t i = 0; i < n; i++) {
        p3d_walk_entry(w, names[i], depth);
        free(names[i]);
    }
    free(names);
}

static int p3d_cmp_cand(const void *a, const void *b)
{
    const struct p3d_cand *x = a, *y = b;
    int c = strncmp(x->hdr.job_id, y->hdr.job_id, P3D_JOB_ID_LEN);

    if (c)
        return c;
    if (x->hdr.start_realtime_ns != y->hdr.start_realtime_ns)
        return x->hdr.start_realtime_ns < y->hdr.start_realtime_ns ? -1 : 1;
    c = strcmp(x->path, y->path);
    return c ? c : x->owner - y->owner;
}

#define P3D_NS 1000000000ull

static int p3d_cmp_rank(const void *a, const void *b)
{
    const struct p3d_rank *x = a, *y = b;

    return (x->rank > y->rank) - (x->rank < y->rank);
}

static struct p3d_job *p3d_new_job(struct p3d_jobset *set, size_t *cap,
                                   const struct p3d_cand *c)
{
    struct p3d_job *j;

    *cap = p3d_grow((void **)&set->jobs, *cap, (size_t)set->n,
                    sizeof(*set->jobs));
    j = &set->jobs[set->n++];
    memset(j, 0, sizeof(*j));
    p3d_fixed_str(j->job_id, c->hdr.job_id, P3D_JOB_ID_LEN);
    j->start_ns = c->hdr.start_realtime_ns;
    return j;
}

/* The rank file of `rank` already in job j, or NULL. */
static struct p3d_rank *p3d_find(struct p3d_job *j, int rank)
{
    for (int i = 0; rank >= 0 && i < j->n_ranks; i++)
        if (j->ranks[i].rank == rank)
            return &j->ranks[i];
    return NULL;
}

/* Two files of one rank from the same process: a copy, not a rerun. */
static int p3d_same_process(const struct p3d_file_hdr *a,
                            const struct p3d_file_hdr *b)
{
    return a->pid == b->pid && a->start_realtime_ns == b->start_realtime_ns;
}

static int p3d_starts_run(struct p3d_job *j, const struct p3d_cand *c,
                          uint64_t prev_start)
{
    struct p3d_rank *old;

    if (!j || strncmp(j->job_id, c->hdr.job_id, P3D_JOB_ID_LEN))
        return 1;
    if (c->hdr.start_realtime_ns > prev_start + P3D_RUN_GAP_S * P3D_NS)
        return 1;
    old = p3d_find(j, c->hdr.rank);
    return old && !(c->hdr.flags & P3D_F_FORKED) &&
           !p3d_same_process(&old->hdr, &c->hdr);
}

static void p3d_add_rank(struct p3d_job *j, size_t *cap, struct p3d_cand *c)
{
    struct p3d_rank *old = p3d_find(j, c->hdr.rank), *r;

    if (old && (c->hdr.flags & P3D_F_FORKED)) {
        p3d_note("skipping '%s': written by a forked child of rank %d",
                 c->path, c->hdr.rank);
        free(c->path);
        return;
    }
    if (old && old->owner != c->owner && !strcmp(old->path, c->path) &&
        p3d_same_process(&old->hdr, &c->hdr)) {
        free(c->path); /* one file several processes see (--local) */
        return;
    }
    if (old) {
        p3d_warning("rank %d has two trace files, '%s' and '%s'; using the "
                    "first", c->hdr.rank, old->path, c->path);
        free(c->path);
        return;
    }
    *cap = p3d_grow((void **)&j->ranks, *cap, (size_t)j->n_ranks,
                    sizeof(*j->ranks));
    r = &j->ranks[j->n_ranks++];
    memset(r, 0, sizeof(*r));
    r->path = c->path;
    r->hdr = c->hdr;
    r->rank = c->hdr.rank;
    r->owner = c->owner;
    if (c->hdr.world_size > j->world_size)
        j->world_size = c->hdr.world_size;
}

static void p3d_group(struct p3d_found *w, struct p3d_jobset *set)
{
    struct p3d_job *j = NULL;
    size_t cap = 0, rcap = 0;
    uint64_t prev = 0;

    if (w->n)
        qsort(w->c, w->n, sizeof(*w->c), p3d_cmp_cand);
    for (size_t i = 0; i < w->n; i++) {
        if (p3d_starts_run(j, &w->c[i], prev)) {
            j = p3d_new_job(set, &cap, &w->c[i]);
            rcap = 0;
        }
        prev = w->c[i].hdr.start_realtime_ns;
        p3d_add_rank(j, &rcap, &w->c[i]);
    }
}

/* Length of path's folder part ("a/b/f" -> 3). */
static size_t p3d_dir_len(const char *path)
{
    const char *slash = strrchr(path, '/');

    return slash ? (size_t)(slash - path) : 0;
}

/* The newest job with a file in b's folder, b's rank inside its world
 * and no file for that rank yet. */
static struct p3d_job *p3d_bad_owner(struct p3d_jobset *set,
                                     const struct p3d_bad *b)
{
    size_t n = p3d_dir_len(b->path);

    for (int k = set->n - 1; k >= 0; k--) {
        struct p3d_job *j = &set->jobs[k];
        int here = 0, taken = 0;
        for (int i = 0; i < j->n_ranks; i++) {
            here |= p3d_dir_len(j->ranks[i].path) == n &&
                    !strncmp(j->ranks[i].path, b->path, n);
            taken |= j->ranks[i].rank == b->rank;
        }
        if (here && !taken && b->rank < j->world_size)
            return j;
    }
    return NULL;
}

/* The same unreadable file as an earlier entry, found by another
 * process too (a folder they share, --local). */
static int p3d_bad_seen(const struct p3d_found *w, size_t i)
{
    for (size_t k = 0; k < i; k++)
        if (w->bad[k].owner != w->bad[i].owner &&
            !strcmp(w->bad[k].path, w->bad[i].path))
            return 1;
    return 0;
}

/*
 * Files of w->bad join the job of their folder as ranks that the scan
 * then finds unreadable (it names them in the report); a file no job
 * takes is reported as an error here.
 */
static void p3d_attach_bad(struct p3d_found *w, struct p3d_jobset *set)
{
    for (size_t i = 0; i < w->n_bad; i++) {
        struct p3d_bad *b = &w->bad[i];
        struct p3d_job *j = p3d_bad_owner(set, b);
        struct p3d_rank *r;
        if (p3d_bad_seen(w, i)) {
            free(b->path);
        } else if (!j) {
            if (b->owner > 0) /* p3d-analyze-mpi --local: another's file */
                p3d_error("process %d: %s", b->owner, b->msg);
            else
                p3d_error("%s", b->msg);
            free(b->path);
        } else {
            j->ranks = p3d_xrealloc(j->ranks, (size_t)j->n_ranks + 1,
                                    sizeof(*j->ranks));
            r = &j->ranks[j->n_ranks++];
            memset(r, 0, sizeof(*r));
            r->path = b->path;
            r->rank = b->rank;
            r->owner = b->owner;
        }
        free(b->msg);
    }
    free(w->bad);
}

static int p3d_cmp_job(const void *a, const void *b)
{
    const struct p3d_job *x = a, *y = b;

    return (x->start_ns > y->start_ns) - (x->start_ns < y->start_ns);
}

struct p3d_found *p3d_found_walk(char **paths, int n, int missing_ok,
                                 int *ret)
{
    struct p3d_found *f = p3d_xcalloc(1, sizeof(*f));

    *ret = 0;
    f->missing_ok = missing_ok;
    for (int i = 0; i < n; i++) {
        struct stat st;
        if (stat(paths[i], &st) < 0 && errno == ENOENT && missing_ok) {
            f->n_missing++;
            continue;
        }
        if (stat(paths[i], &st) < 0) {
            *ret = p3d_error("cannot read '%s': %s", paths[i],
                            strerror(errno));
            continue;
        }
        if (S_ISDIR(st.st_mode)) {
            p3d_seen(f, &st);
            p3d_walk_dir(f, paths[i], 0);
        } else {
            p3d_add_file(f, paths[i]);
        }
    }
    return f;
}

int p3d_found_files(const struct p3d_found *f)
{
    return (int)(f->n + f->n_bad);
}

int p3d_found_missing(const struct p3d_found *f)
{
    return f->n_missing;
}

void p3d_found_pack(const struct p3d_found *f, struct p3d_bytes *b)
{
    uint64_t n = f->n, n_bad = f->n_bad;

    p3d_bytes_put(b, &n, sizeof(n));
    for (size_t i = 0; i < f->n; i++) {
        p3d_bytes_put(b, &f->c[i].hdr, sizeof(f->c[i].hdr));
        p3d_bytes_put_arr(b, f->c[i].path, strlen(f->c[i].path) + 1);
    }
    p3d_bytes_put(b, &n_bad, sizeof(n_bad));
    for (size_t i = 0; i < f->n_bad; i++) {
        p3d_bytes_put(b, &f->bad[i].rank, sizeof(f->bad[i].rank));
        p3d_bytes_put_arr(b, f->bad[i].path, strlen(f->bad[i].path) + 1);
        p3d_bytes_put_arr(b, f->bad[i].msg, strlen(f->bad[i].msg) + 1);
    }
}

/* A string put with its NUL, allocated; NULL (in->bad set) if it is not. */
static char *p3d_get_str(struct p3d_bytes_in *in)
{
    size_t n;
    char *s = p3d_bytes_get_arr(in, &n);

    if (s && n && s[n - 1] == 0)
        return s;
    free(s);
    in->bad = 1;
    return NULL;
}

/* One found file (p3d_found_pack's order), added to f; -1 when damaged. */
static int p3d_get_cand(struct p3d_found *f, struct p3d_bytes_in *in,
                        int owner)
{
    struct p3d_cand c = {.owner = owner};

    p3d_bytes_get(in, &c.hdr, sizeof(c.hdr));
    if (!(c.path = p3d_get_str(in)))
        return -1;
    f->cap = p3d_grow((void **)&f->c, f->cap, f->n, sizeof(*f->c));
    f->c[f->n++] = c;
    return 0;
}

static int p3d_get_bad(struct p3d_found *f, struct p3d_bytes_in *in,
                       int owner)
{
    struct p3d_bad b = {.owner = owner};

    p3d_bytes_get(in, &b.rank, sizeof(b.rank));
    b.path = p3d_get_str(in);
    b.msg = b.path ? p3d_get_str(in) : NULL;
    if (!b.msg) { /* either missing: in->bad is set */
        free(b.path);
        return -1;
    }
    f->cap_bad = p3d_grow((void **)&f->bad, f->cap_bad, f->n_bad,
                          sizeof(*f->bad));
    f->bad[f->n_bad++] = b;
    return 0;
}

int p3d_found_add(struct p3d_found *f, struct p3d_bytes_in *in, int owner)
{
    static int (*const get[])(struct p3d_found *, struct p3d_bytes_in *,
                              int) = {p3d_get_cand, p3d_get_bad};

    for (int list = 0; list < 2; list++) { /* files, then unreadable ones */
        uint64_t n = 0;
        p3d_bytes_get(in, &n, sizeof(n));
        for (uint64_t i = 0; i < n && !in->bad; i++)
            if (get[list](f, in, owner) < 0)
                break;
    }
    return in->bad ? -1 : 0;
}

void p3d_found_jobs(struct p3d_found *f, struct p3d_jobset *set)
{
    memset(set, 0, sizeof(*set));
    p3d_group(f, set);
    if (set->n)
        qsort(set->jobs, (size_t)set->n, sizeof(*set->jobs), p3d_cmp_job);
    p3d_attach_bad(f, set);
    for (int k = 0; k < set->n; k++)
        qsort(set->jobs[k].ranks, (size_t)set->jobs[k].n_ranks,
              sizeof(struct p3d_rank), p3d_cmp_rank);
    free(f->c);
    free(f);
}

void p3d_found_free(struct p3d_found *f)
{
    for (size_t i = 0; i < f->n; i++)
        free(f->c[i].path);
    for (size_t i = 0; i < f->n_bad; i++)
        free(f->bad[i].path), free(f->bad[i].msg);
    free(f->c);
    free(f->bad);
    free(f);
}

int p3d_discover(char **paths, int n, struct p3d_jobset *set)
{
    int ret;
    struct p3d_found *f = p3d_found_walk(paths, n, 0, &ret);

    p3d_found_jobs(f, set);
    return ret;
}

void p3d_discover_say(const struct p3d_jobset *set, int all,
                      const char *dir)
{
    const struct p3d_job *j = &set->jobs[set->n - 1];
    char when[64];

    if (set->n < 2)
        return;
    p3d_job_started(j, when, sizeof(when));
    if (dir)
        p3d_warning("--compare: '%s' holds traces of %d jobs; comparing "
                    "the newest, job '%s' started %s (give each run its "
                    "own folder)", dir, set->n, j->job_id, when);
    else if (all)
        p3d_note("found %d jobs; analysing each (oldest first)", set->n);
    else
        p3d_warning("found traces of %d jobs; analysing the newest, job "
                    "'%s' started %s (use --all for every job)", set->n,
                    j->job_id, when);
}
