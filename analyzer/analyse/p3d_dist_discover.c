/*
 * p3d_dist_discover.c - p3d-analyze-mpi --local (p3d_dist_discover.h):
 * each process walks its own folders (one path, each node's own files:
 * `srun --ntasks-per-node=1 p3d-analyze-mpi --local /local/traces/job`),
 * and process 0 sorts what every process found into jobs and sends the
 * jobs to all, so every process then holds the same job list.  A rank
 * file is read by the process that found it (p3d_rank.owner); a file
 * several processes found (a folder they share) counts once, as the
 * lowest one's.  What the others would have printed while walking (a
 * file they cannot open, say) travels with their list: process 0 prints
 * it, naming the process and its host (a message a lower process already
 * gave, in a folder they share, once), and an error there counts as one.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "p3d_dist_discover.h"
#include "p3d_map.h"
#include "p3d_strbuf.h"
#include "p3d_util.h"

static uint64_t p3d_dd_hash(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */

    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    return h;
}

/* A kept message again, as the kind it was ('e', 'w' or 'n'). */
static void p3d_dd_emit(char kind, const char *fmt, ...) P3D_PRINTF(2, 3);

static void p3d_dd_emit(char kind, const char *fmt, ...)
{
    char text[2300];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    if (kind == 'e')
        p3d_error("%s", text);
    else if (kind == 'w')
        p3d_warning("%s", text);
    else
        p3d_note("%s", text);
}

/* A message of this process, kept for process 0: its kind's first letter,
 * then the text, one per line (messages are one line each). */
static void p3d_dd_keep(void *ctx, const char *kind, const char *text)
{
    p3d_sb_addf(ctx, "%c%s\n", kind[0], text);
}

/* This process's walk as one message: host, messages, counts, files. */
static void p3d_dd_walk(char **paths, int n, struct p3d_found **f,
                        struct p3d_bytes *b)
{
    struct p3d_sb heard = P3D_SB_INIT;
    char host[256] = "";
    int32_t counts[2];
    int ret;

    gethostname(host, sizeof(host) - 1);
    p3d_msg_to = p3d_dd_keep; /* process 0's too: printed once, first */
    p3d_msg_to_ctx = &heard;
    *f = p3d_found_walk(paths, n, 1, &ret);
    p3d_msg_to = NULL;
    counts[0] = p3d_found_files(*f);
    counts[1] = p3d_found_missing(*f);
    p3d_bytes_put_arr(b, host, strlen(host) + 1);
    p3d_bytes_put_arr(b, p3d_sb_str(&heard), heard.len + 1);
    p3d_bytes_put(b, counts, sizeof(counts));
    p3d_found_pack(*f, b);
    p3d_sb_free(&heard);
}

/*
 * Print process p's kept messages on process 0, with who said them; a
 * message a lower process already gave (a folder they share) once.
 */
static void p3d_dd_say(int p, const char *host, const char *heard,
                       struct p3d_map *said)
{
    while (*heard) {
        const char *end = strchr(heard, '\n');
        int len = (int)(end ? end - heard : (long)strlen(heard));
        uint64_t key = p3d_dd_hash(heard, (size_t)len);
        if (p3d_map_get(said, key) >= 0) {
            heard += end ? len + 1 : len;
            continue;
        }
        p3d_map_put(said, key, p);
        if (p == 0) /* its own: printed as p3d-analyze prints them */
            p3d_dd_emit(heard[0], "%.*s", len - 1, heard + 1);
        else
            p3d_dd_emit(heard[0], "process %d (%s): %.*s", p, host, len - 1,
                        heard + 1);
        heard += end ? len + 1 : len;
    }
}

/* Processes that found nothing, said once with the first few named. */
static void p3d_dd_empty(struct p3d_sb *who, int *n_who, int p,
                         const char *host, const int32_t *counts)
{
    if (counts[0] > 0)
        return;
    if (*n_who < 8)
        p3d_sb_addf(who, "%s%d (%s%s)", *n_who ? ", " : "", p, host,
                    counts[1] ? ": no such folder" : "");
    (*n_who)++;
}

/* Process 0: take every other process's walk, in process order. */
static void p3d_dd_gather(struct p3d_dist *d, struct p3d_found *f,
                          const struct p3d_bytes *mine)
{
    struct p3d_bytes b = {0};
    struct p3d_sb who = P3D_SB_INIT;
    struct p3d_map said = {0};
    int n_who = 0;

    for (int p = 0; p < d->n; p++) {
        struct p3d_bytes_in in;
        const char *host, *heard;
        int32_t counts[2] = {0, 0};
        size_t n;
        int from = p, tag = 0;
        if (p > 0)
            d->recv(d, &from, &tag, &b);
        in = p > 0 ? (struct p3d_bytes_in){b.p, b.n, 0, 0}
                   : (struct p3d_bytes_in){mine->p, mine->n, 0, 0};
        host = p3d_bytes_view_arr(&in, &n);
        heard = p3d_bytes_view_arr(&in, &n);
        p3d_bytes_get(&in, counts, sizeof(counts));
        if (in.bad || !host || !heard || (p > 0 && p3d_found_add(f, &in, p)))
            p3d_die("the list of trace files from process %d arrived "
                    "damaged", p);
        p3d_dd_say(p, host, heard, &said);
        p3d_dd_empty(&who, &n_who, p, host, counts);
    }
    if (n_who)
        p3d_warning("--local: %d of %d processes found no trace files in "
                    "their folders: %s%s", n_who, d->n, p3d_sb_str(&who),
                    n_who > 8 ? ", ..." : "");
    p3d_sb_free(&who);
    p3d_map_free(&said);
    p3d_bytes_free(&b);
}

static void p3d_dd_pack_jobs(const struct p3d_jobset *set,
                             struct p3d_bytes *b)
{
    p3d_bytes_put(b, &set->n, sizeof(set->n));
    for (int k = 0; k < set->n; k++) {
        const struct p3d_job *j = &set->jobs[k];
        p3d_bytes_put(b, j->job_id, sizeof(j->job_id));
        p3d_bytes_put(b, &j->start_ns, sizeof(j->start_ns));
        p3d_bytes_put(b, &j->world_size, sizeof(j->world_size));
        p3d_bytes_put(b, &j->n_ranks, sizeof(j->n_ranks));
        for (int i = 0; i < j->n_ranks; i++)
            p3d_rank_pack(&j->ranks[i], b);
    }
}

static void p3d_dd_unpack_jobs(struct p3d_jobset *set,
                               struct p3d_bytes_in *in)
{
    memset(set, 0, sizeof(*set));
    p3d_bytes_get(in, &set->n, sizeof(set->n));
    if (in->bad || set->n < 0 || (size_t)set->n > in->n)
        p3d_die("the job list from process 0 arrived damaged");
    set->jobs = p3d_xcalloc((size_t)set->n + 1, sizeof(*set->jobs));
    for (int k = 0; k < set->n; k++) {
        struct p3d_job *j = &set->jobs[k];
        p3d_bytes_get(in, j->job_id, sizeof(j->job_id));
        p3d_bytes_get(in, &j->start_ns, sizeof(j->start_ns));
        p3d_bytes_get(in, &j->world_size, sizeof(j->world_size));
        p3d_bytes_get(in, &j->n_ranks, sizeof(j->n_ranks));
        if (in->bad || j->n_ranks < 0 || (size_t)j->n_ranks > in->n)
            p3d_die("the job list from process 0 arrived damaged");
        j->ranks = p3d_xcalloc((size_t)j->n_ranks + 1, sizeof(*j->ranks));
        for (int i = 0; i < j->n_ranks; i++)
            if (p3d_rank_unpack(&j->ranks[i], in) < 0)
                p3d_die("the job list from process 0 arrived damaged "
                        "(job %d, rank file %d)", k, i);
    }
}

int p3d_dist_discover(struct p3d_dist *d, char **paths, int n,
                      struct p3d_jobset *set)
{
    struct p3d_bytes mine = {0}, jobs = {0};
    struct p3d_found *f;
    struct p3d_bytes_in in;

    p3d_dd_walk(paths, n, &f, &mine);
    if (d->self != 0) {
        d->send(d, 0, &mine); /* tag 0: the scan's messages come later */
        p3d_found_free(f);
    } else {
        p3d_dd_gather(d, f, &mine);
        p3d_found_jobs(f, set);
        p3d_dd_pack_jobs(set, &jobs);
    }
    d->bcast(d, &jobs);
    if (d->self != 0) {
        in = (struct p3d_bytes_in){jobs.p, jobs.n, 0, 0};
        p3d_dd_unpack_jobs(set, &in);
    }
    p3d_bytes_free(&mine);
    p3d_bytes_free(&jobs);
    return 0;
}
