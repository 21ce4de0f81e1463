/*
 * p3d_hang_dist.c - the hang analysis over several processes
 * (p3d-analyze-mpi): each process reads the rank files it read for the
 * scan, and process 0 gets only what each rank keeps (p3d_hang_keep.c),
 * not the files.  Before, process 0 read every file of a hung job again,
 * and with --local copied them all from the other nodes first: about
 * 13.5 bytes an op in its memory, 220 GB at 16k ranks x 1M ops.
 *
 * Three steps, each one message a process to or from process 0:
 *   1. process 0 says whether the files are read at all (a job that
 *      ended cleanly is decided from the scan, p3d_hang_reads_files) and
 *      sends its matcher's result, whose kept mismatches every reader
 *      needs for what it keeps;
 *   2. each process reads its ranks; what proving an op needs of the
 *      other ranks (whether their file was read, their op count, their
 *      highest seq per communicator, kind and peer: p3d_hang_count) goes
 *      to process 0, which sends all of it to all;
 *   3. each proves and keeps its ranks, and sends them to process 0,
 *      which then follows the waits as one process does.
 * A rank's kept part is its struct as it lies in memory (both ends run
 * one build) without its pointers, then its arrays and its records'
 * block, whose pointers the receiver sets again.
 */
#include <stdlib.h>
#include <string.h>

#include "p3d_dist.h"
#include "p3d_hang_int.h"
#include "p3d_match.h"
#include "p3d_util.h"

int p3d_hang_dist_reads(struct p3d_job *job, struct p3d_dist *d)
{
    struct p3d_bytes b = {0};
    struct p3d_bytes_in in;
    int32_t reads = 0;

    if (d->self == 0) {
        reads = p3d_hang_reads_files(job);
        p3d_bytes_put(&b, &reads, sizeof(reads));
        if (job->match)
            p3d_bytes_put(&b, job->match, sizeof(*job->match));
    }
    d->bcast(d, &b);
    in = (struct p3d_bytes_in){b.p, b.n, 0, 0};
    p3d_bytes_get(&in, &reads, sizeof(reads));
    if (d->self != 0 && in.off < in.n) {
        if (!job->match)
            job->match = p3d_xcalloc(1, sizeof(*job->match));
        p3d_bytes_get(&in, job->match, sizeof(*job->match));
    }
    if (d->self != 0 && (in.bad || in.off != in.n))
        p3d_die("the hang analysis's start from process 0 arrived damaged");
    p3d_bytes_free(&b);
    return reads;
}

/* Step 2: rank h's file read, op count and keys. */
static void p3d_hd_counts_put(const struct p3d_hrank *h, struct p3d_bytes *b)
{
    int32_t head[2] = {h->rank, h->open};
    uint64_t n_ops = h->n_ops;

    p3d_bytes_put(b, head, sizeof(head));
    p3d_bytes_put(b, &n_ops, sizeof(n_ops));
    p3d_bytes_put_arr(b, h->keys, h->n_keys * sizeof(*h->keys));
}

static void p3d_hd_counts_get(struct p3d_hjob *hj, struct p3d_bytes_in *in)
{
    while (in->off < in->n && !in->bad) {
        int32_t head[2];
        uint64_t n_ops;
        size_t n;
        void *keys;
        p3d_bytes_get(in, head, sizeof(head));
        p3d_bytes_get(in, &n_ops, sizeof(n_ops));
        keys = p3d_bytes_get_arr(in, &n);
        if (in->bad || head[0] < 0 || head[0] >= hj->world ||
            n % sizeof(struct p3d_hkey)) {
            free(keys);
            in->bad = 1;
            return;
        }
        if (hj->hr[head[0]].mine) { /* its own, already here */
            free(keys);
            continue;
        }
        hj->hr[head[0]].open = head[1];
        hj->hr[head[0]].n_ops = n_ops;
        free(hj->hr[head[0]].keys);
        hj->hr[head[0]].keys = keys;
        hj->hr[head[0]].n_keys = n / sizeof(struct p3d_hkey);
    }
}

static void p3d_hd_counts_take(void *ctx, int from, const struct p3d_bytes *m)
{
    struct p3d_bytes *all = ctx;

    (void)from;
    p3d_bytes_put(all, m->p, m->n);
}

void p3d_hang_dist_counts(struct p3d_hjob *hj, struct p3d_dist *d)
{
    struct p3d_bytes b = {0}, all = {0};
    struct p3d_bytes_in in;

    for (int i = 0; i < hj->world; i++)
        if (hj->hr[i].r != NULL && hj->hr[i].mine)
            p3d_hd_counts_put(&hj->hr[i], d->self == 0 ? &all : &b);
    p3d_dist_to_zero(d, &b, p3d_hd_counts_take, &all);
    d->bcast(d, &all);
    in = (struct p3d_bytes_in){all.p, all.n, 0, 0};
    p3d_hd_counts_get(hj, &in);
    if (in.bad)
        p3d_die("the hang analysis's op counts arrived damaged");
    p3d_bytes_free(&all);
}

/* Step 3: a kept rank, to process 0. */
static void p3d_hd_rank_put(const struct p3d_hrank *h, size_t n_mm,
                            struct p3d_bytes *b)
{
    size_t block = 0;

#define P3D_HD_ROOM(ref) (block += p3d_hang_rec_room(*(ref)))
    P3D_KEEP_EACH(h, P3D_HD_ROOM);
#undef P3D_HD_ROOM
    p3d_bytes_put(b, h, sizeof(*h));
    p3d_bytes_put_arr(b, h->at, h->at ? h->n_kept * sizeof(*h->at) : 0);
    p3d_bytes_put_arr(b, h->pend, h->pend ? h->n_kept : 0);
    p3d_bytes_put_arr(b, h->proven, h->proven ? h->n_kept : 0);
    p3d_bytes_put_arr(b, h->per_comm, h->n_per_comm * sizeof(*h->per_comm));
    p3d_bytes_put_arr(b, h->mm_uses,
                      h->mm_uses ? n_mm * sizeof(*h->mm_uses) : 0);
    p3d_bytes_put_arr(b, h->block, h->block ? block : 0);
}

/* Point *ref at the next record of the block; 0 when it runs past. */
static int p3d_hd_point(const uint8_t *block, size_t n, size_t *off,
                        const void **ref)
{
    const struct p3d_rec_hdr *r = (const void *)(block + *off);

    if (*off + sizeof(*r) > n || r->len < sizeof(*r) ||
        r->len > n - *off)
        return 0;
    *ref = r;
    *off += p3d_hang_rec_room(r);
    return 1;
}

/* An array of the message, NULL when it is empty; bad if not `want`
 * bytes (or, with may_lack, none: the sender had no such array). */
static void *p3d_hd_arr(struct p3d_bytes_in *in, size_t want, int may_lack)
{
    size_t n;
    void *v = p3d_bytes_get_arr(in, &n);

    if (n != want && !(n == 0 && may_lack))
        in->bad = 1;
    if (n == 0) {
        free(v);
        return NULL;
    }
    return v;
}

/* What process 0 takes in: from whom, and which ranks it has. */
struct p3d_hd_take {
    const struct p3d_job *job;
    struct p3d_hjob *hj;
    struct p3d_dist *d;
    size_t n_mm;
    uint8_t *got;                    /* [world] a rank's part came */
};

/* Whether process `from` reads rank r's file, which came once only. */
static int p3d_hd_sender_ok(struct p3d_hd_take *t, int from, int r)
{
    const struct p3d_hrank *h = &t->hj->hr[r];

    if (h->r == NULL || h->mine || t->got[r] ||
        p3d_dist_owner_of(t->d, t->job, (int)(h->r - t->job->ranks)) !=
            from)
        return 0;
    t->got[r] = 1;
    return 1;
}

static void p3d_hd_rank_get(struct p3d_hd_take *t, int from,
                            struct p3d_bytes_in *in)
{
    struct p3d_hjob *hj = t->hj;
    size_t n_mm = t->n_mm;
    struct p3d_hrank got, *h;
    size_t n_block = 0, off = 0;
    int ok = 1;

    p3d_bytes_get(in, &got, sizeof(got));
    if (in->bad || got.rank < 0 || got.rank >= hj->world ||
        !p3d_hd_sender_ok(t, from, got.rank) || got.n_ops > (1ull << 40) ||
        got.n_kept > got.n_ops || got.n_per_comm > got.n_ops ||
        got.n_stacks > (1u << 24) ||
        got.n_mods > (1u << 24) || got.n_hang < 0 || got.n_hang > 8 ||
        got.n_abort < 0 || got.n_abort > 4 || got.n_proxy < 0 ||
        got.n_proxy > P3D_HANG_PROXY_KEEP) {
        in->bad = 1;
        return;
    }
    h = &hj->hr[got.rank];
    got.r = h->r;                    /* this process's job model */
    got.keys = h->keys;              /* from step 2 */
    got.n_keys = h->n_keys;
    got.mine = 0;
    got.mapped = 0;
    memset(&got.rd, 0, sizeof(got.rd));
    got.rd.fd = -1;
    got.done = NULL;
    got.gends = NULL;
    got.gpu = NULL;
    got.told = NULL;                 /* copied into the block (kept) */
    got.at = p3d_hd_arr(in, got.n_kept * sizeof(*got.at), 0);
    got.pend = p3d_hd_arr(in, got.n_kept, !got.open);
    got.proven = p3d_hd_arr(in, got.n_kept, 1);
    got.per_comm = p3d_hd_arr(in, got.n_per_comm * sizeof(*got.per_comm),
                              0);
    got.mm_uses = p3d_hd_arr(in, n_mm * sizeof(*got.mm_uses), 1);
    /* the sender's pointers past the counts mean nothing here */
    memset(got.hang + got.n_hang, 0,
           sizeof(got.hang) - (size_t)got.n_hang * sizeof(*got.hang));
    memset(got.abort + got.n_abort, 0,
           sizeof(got.abort) - (size_t)got.n_abort * sizeof(*got.abort));
    memset(got.proxy + got.n_proxy, 0,
           sizeof(got.proxy) - (size_t)got.n_proxy * sizeof(*got.proxy));
    got.block = p3d_bytes_get_arr(in, &n_block);
    got.ops = p3d_xcalloc(got.n_kept + 1, sizeof(*got.ops));
    got.stacks = p3d_xcalloc(got.n_stacks + 1, sizeof(*got.stacks));
    got.mods = p3d_xcalloc(got.n_mods + 1, sizeof(*got.mods));
    got.cap_ops = got.n_kept;
    got.cap_stacks = got.n_stacks;
    got.cap_mods = got.n_mods;
#define P3D_HD_POINT(ref) (ok = ok && p3d_hd_point(got.block, n_block, &off, \
                                                   (ref)))
    P3D_KEEP_EACH(&got, P3D_HD_POINT);
#undef P3D_HD_POINT
    if (!ok || off != n_block || (got.n_kept && !got.pend) ||
        (got.n_kept && !got.at))
        in->bad = 1;
    *h = got;                        /* freed with the rest if bad */
}

static void p3d_hd_ranks_take(void *ctx, int from, const struct p3d_bytes *m)
{
    struct p3d_hd_take *t = ctx;
    struct p3d_bytes_in in = {m->p, m->n, 0, 0};

    while (in.off < in.n && !in.bad)
        p3d_hd_rank_get(t, from, &in);
    if (in.bad)
        p3d_die("the hang analysis's ranks from process %d arrived "
                "damaged", from);
}

void p3d_hang_dist_gather(struct p3d_hjob *hj, const struct p3d_job *job,
                          struct p3d_dist *d)
{
    struct p3d_hd_take t = {job, hj, d,
                            job->match ? (size_t)job->match->n_kept : 0,
                            NULL};
    struct p3d_bytes b = {0};

    if (d->self != 0)
        for (int i = 0; i < hj->world; i++)
            if (hj->hr[i].r != NULL && hj->hr[i].mine)
                p3d_hd_rank_put(&hj->hr[i], t.n_mm, &b);
    t.got = p3d_xcalloc((size_t)hj->world + 1, 1);
    p3d_dist_to_zero(d, &b, p3d_hd_ranks_take, &t);
    free(t.got);
}
