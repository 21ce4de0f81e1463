/*
 * p3d_mpi.c - p3d-analyze-mpi: p3d-analyze's command line on several MPI
 * processes (mpirun, srun).  Each process reads its block of the job's
 * rank files (model/p3d_dist.h); process 0 merges and writes every output,
 * so the answer is the same for any number of processes.  This file is
 * the transport (MPI point-to-point and broadcast of byte buffers) and
 * the process's life: the others are silent (stdout and stderr to
 * /dev/null after start) and leave once their files are sent; no process
 * waits on a peer past a deadline (P3D_MPI_DEADLINE_S, default 14400 s:
 * then MPI_Abort); a process that dies ends the job (MPI's default error
 * handler, errors are fatal).
 */
#include <fcntl.h>
#include <mpi.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "p3d_dist.h"
#include "p3d_util.h"
#include "p3d_dist_fetch.h"

int p3d_cli_main(int argc, char **argv); /* p3d_main.c's main */

#define P3D_MPI_PIECE (1 << 30) /* bytes per MPI call (counts are int) */

static int p3d_mpi_err = 2; /* a dup of stderr, for this file's messages */

/* What this process moved (P3D_MPI_STATS=1 prints it at the end). */
static struct {
    uint64_t rounds, round_msgs, round_out, round_in, to0_msgs, to0_bytes;
} p3d_mpi_stat;

/* The bytes of a message of n that go in the piece at off. */
static int p3d_mpi_piece(uint64_t n, uint64_t off)
{
    return (int)(n - off < P3D_MPI_PIECE ? n - off : P3D_MPI_PIECE);
}

/*
 * Sends in flight: each message is its size, then its bytes in pieces,
 * all with one tag (MPI keeps the order of one sender's messages).  At
 * most P3D_MPI_WINDOW are in flight; the next waits for the oldest.
 */
#define P3D_MPI_WINDOW 4
#define P3D_MPI_REQS 8 /* size + pieces: messages up to 7 GiB */

struct p3d_mpi_out {
    uint64_t n;
    struct p3d_bytes b;
    MPI_Request req[P3D_MPI_REQS];
    int n_req;
};

static struct p3d_mpi_out p3d_mpi_out[P3D_MPI_WINDOW];
static int p3d_mpi_head, p3d_mpi_busy;

static void p3d_mpi_wait_one(void)
{
    struct p3d_mpi_out *o = &p3d_mpi_out[p3d_mpi_head];

    MPI_Waitall(o->n_req, o->req, MPI_STATUSES_IGNORE);
    p3d_bytes_free(&o->b);
    o->n_req = 0;
    p3d_mpi_head = (p3d_mpi_head + 1) % P3D_MPI_WINDOW;
    p3d_mpi_busy--;
}

static void p3d_mpi_flush(void)
{
    while (p3d_mpi_busy)
        p3d_mpi_wait_one();
}

static void p3d_mpi_send(struct p3d_dist *d, int tag, struct p3d_bytes *b)
{
    struct p3d_mpi_out *o;

    (void)d;
    if (p3d_mpi_busy == P3D_MPI_WINDOW)
        p3d_mpi_wait_one();
    o = &p3d_mpi_out[(p3d_mpi_head + p3d_mpi_busy) % P3D_MPI_WINDOW];
    p3d_mpi_busy++;
    o->n = b->n;
    o->b = *b;
    memset(b, 0, sizeof(*b));
    p3d_mpi_stat.to0_msgs++;
    p3d_mpi_stat.to0_bytes += o->n;
    if (o->n > (uint64_t)P3D_MPI_PIECE * (P3D_MPI_REQS - 1)) {
        dprintf(p3d_mpi_err, "p3d-analyze-mpi: error: a message of %llu "
                "bytes is past what one message may hold\n",
                (unsigned long long)o->n);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_Isend(&o->n, 1, MPI_UINT64_T, 0, tag, MPI_COMM_WORLD, &o->req[0]);
    o->n_req = 1;
    for (uint64_t off = 0; off < o->n; off += P3D_MPI_PIECE)
        MPI_Isend(o->b.p + off, p3d_mpi_piece(o->n, off), MPI_BYTE, 0, tag,
                  MPI_COMM_WORLD, &o->req[o->n_req++]);
}

static void p3d_mpi_recv(struct p3d_dist *d, int *from, int *tag,
                         struct p3d_bytes *b)
{
    uint64_t n = 0;
    MPI_Status st;

    (void)d;
    MPI_Recv(&n, 1, MPI_UINT64_T, *from < 0 ? MPI_ANY_SOURCE : *from,
             *from < 0 ? MPI_ANY_TAG : *tag, MPI_COMM_WORLD, &st);
    *from = st.MPI_SOURCE;
    *tag = st.MPI_TAG;
    p3d_bytes_room(b, (size_t)n);
    for (uint64_t off = 0; off < n; off += P3D_MPI_PIECE)
        MPI_Recv(b->p + off, p3d_mpi_piece(n, off), MPI_BYTE, *from, *tag,
                 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
}

static void p3d_mpi_bcast(struct p3d_dist *d, struct p3d_bytes *b)
{
    uint64_t n = b->n;

    p3d_mpi_flush();
    MPI_Bcast(&n, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
    if (d->self != 0)
        p3d_bytes_room(b, (size_t)n);
    for (uint64_t off = 0; off < n; off += P3D_MPI_PIECE)
        MPI_Bcast(b->p + off, p3d_mpi_piece(n, off), MPI_BYTE, 0,
                  MPI_COMM_WORLD);
}

/*
 * One round of a shuffle (the scan's or a time pass's): the sizes (and
 * whether each process is done, in the top bit) go all to all, then every
 * pair's bytes in
 * pieces, all posted at once and waited for together, so no order of
 * sends and receives can block, with a tag no other message uses
 * (p3d_dist_round_tag).
 */
#define P3D_MPI_DONE (1ull << 63)

static void p3d_mpi_post(struct p3d_bytes *b, uint64_t n, int peer, int send,
                         MPI_Request **r, int *n_req, int *cap)
{
    int tag = p3d_dist_round_tag(p3d_dist_mpi);

    for (uint64_t off = 0; off < n; off += P3D_MPI_PIECE) {
        if (*n_req == *cap) {
            *cap = *cap ? 2 * *cap : 64;
            *r = realloc(*r, (size_t)*cap * sizeof(**r));
            if (!*r)
                MPI_Abort(MPI_COMM_WORLD, 2);
        }
        if (send)
            MPI_Isend(b->p + off, p3d_mpi_piece(n, off), MPI_BYTE, peer, tag,
                      MPI_COMM_WORLD, &(*r)[(*n_req)++]);
        else
            MPI_Irecv(b->p + off, p3d_mpi_piece(n, off), MPI_BYTE, peer, tag,
                      MPI_COMM_WORLD, &(*r)[(*n_req)++]);
    }
}

static int p3d_mpi_exchange(struct p3d_dist *d, struct p3d_bytes *out,
                            struct p3d_bytes *in, int done)
{
    uint64_t *sz = calloc((size_t)d->n * 2, sizeof(*sz)), *got = sz + d->n;
    MPI_Request *r = NULL;
    int n_req = 0, cap = 0, all = 1;

    if (!sz)
        MPI_Abort(MPI_COMM_WORLD, 2);
    for (int p = 0; p < d->n; p++)
        sz[p] = (p == d->self ? 0 : out[p].n) | (done ? P3D_MPI_DONE : 0);
    MPI_Alltoall(sz, 1, MPI_UINT64_T, got, 1, MPI_UINT64_T, MPI_COMM_WORLD);
    for (int p = 0; p < d->n; p++) {
        uint64_t n = got[p] & ~P3D_MPI_DONE;
        all &= !!(got[p] & P3D_MPI_DONE);
        p3d_bytes_room(&in[p], (size_t)n); /* 0 from this process */
        if (p != d->self) {
            p3d_mpi_stat.round_msgs += out[p].n > 0;
            p3d_mpi_stat.round_out += out[p].n;
            p3d_mpi_stat.round_in += n;
            p3d_mpi_post(&in[p], n, p, 0, &r, &n_req, &cap);
            p3d_mpi_post(&out[p], out[p].n, p, 1, &r, &n_req, &cap);
        }
    }
    MPI_Waitall(n_req, r, MPI_STATUSES_IGNORE);
    p3d_mpi_stat.rounds++;
    for (int p = 0; p < d->n; p++)
        if (p != d->self)
            out[p].n = 0;
    free(r);
    free(sz);
    return all;
}

/* P3D_MPI_STATS=1: one line a process of what it sent and received, for
 * the cluster model of bench/README.md. */
static void p3d_mpi_stats(const struct p3d_dist *d)
{
    const char *on = getenv("P3D_MPI_STATS");

    if (!on || strcmp(on, "1"))
        return;
    dprintf(p3d_mpi_err, "p3d-analyze-mpi: process %d: %llu rounds, %llu "
            "messages and %llu bytes sent in them, %llu bytes received; "
            "%llu messages and %llu bytes sent to process 0\n", d->self,
            (unsigned long long)p3d_mpi_stat.rounds,
            (unsigned long long)p3d_mpi_stat.round_msgs,
            (unsigned long long)p3d_mpi_stat.round_out,
            (unsigned long long)p3d_mpi_stat.round_in,
            (unsigned long long)p3d_mpi_stat.to0_msgs,
            (unsigned long long)p3d_mpi_stat.to0_bytes);
}

static void p3d_mpi_done(struct p3d_dist *d)
{
    p3d_mpi_stats(d);
    p3d_mpi_flush();
    MPI_Finalize();
    exit(0);
}

/* The deadline: a process still running after it ends every process. */
static void *p3d_mpi_deadline(void *arg)
{
    unsigned s = *(unsigned *)arg;

    while (s > 0)
        s = sleep(s);
    dprintf(p3d_mpi_err, "p3d-analyze-mpi: error: still running after "
            "P3D_MPI_DEADLINE_S=%u s (a process waits on a peer that "
            "stopped?); aborting\n", *(unsigned *)arg);
    p3d_dist_fetch_clean(); /* MPI_Abort skips atexit */
    MPI_Abort(MPI_COMM_WORLD, 2);
    return NULL;
}

static void p3d_mpi_start_deadline(void)
{
    static unsigned s = 14400;
    const char *e = getenv("P3D_MPI_DEADLINE_S");
    pthread_t t;

    if (e && *e)
        s = (unsigned)strtoul(e, NULL, 10);
    if (s && pthread_create(&t, NULL, p3d_mpi_deadline, &s) == 0)
        pthread_detach(t);
}

/* Seqs per block of a communicator's instances in the time passes
 * (p3d_dist_seq_owner): P3D_MPI_SEQ_BLOCK, default 256; process 0's
 * value for all, since every process must route alike. */
static void p3d_mpi_seq_block(struct p3d_dist *d)
{
    const char *e = getenv("P3D_MPI_SEQ_BLOCK");
    uint64_t b = e && *e ? strtoull(e, NULL, 10) : 256;

    MPI_Bcast(&b, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
    d->seq_block = b ? b : 1;
}

/* The others print nothing: process 0 says what there is to say. */
static void p3d_mpi_silence(void)
{
    int fd = open("/dev/null", O_WRONLY);

    fflush(stdout);
    fflush(stderr);
    p3d_mpi_err = dup(2);
    if (fd >= 0) {
        dup2(fd, 1);
        dup2(fd, 2);
        close(fd);
    }
}

/*
 * mpirun ends the other processes with SIGTERM when one fails, and a
 * user's Ctrl-C reaches them as SIGINT or SIGTERM: process 0 removes
 * its copies of other nodes' files first (atexit does not run), then
 * dies of the signal as it would have.
 */
static void p3d_mpi_on_signal(int sig)
{
    p3d_dist_fetch_clean();
    signal(sig, SIG_DFL);
    raise(sig);
}

static void p3d_mpi_clean_on_signals(void)
{
    static const int sigs[] = {SIGTERM, SIGINT, SIGHUP};
    struct sigaction sa;

    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = p3d_mpi_on_signal;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
        sigaction(sigs[i], &sa, NULL);
}

static void p3d_mpi_test_term(struct p3d_dist *d)
{
    (void)d;
    raise(SIGTERM);
}

/* Test hooks (tests/integration/test_mpi_equiv.sh): P3D_MPI_TEST_PEER=exit
 * or stall makes process 1 die or hang before it reads a file; =term0
 * sends process 0 SIGTERM once it holds its --local copies. */
static void p3d_mpi_test_fault(struct p3d_dist *d)
{
    const char *t = getenv("P3D_MPI_TEST_PEER");
    int self = d->self;

    if (t && self == 0 && !strcmp(t, "term0"))
        d->fetched = p3d_mpi_test_term;
    if (!t || self != 1)
        return;
    if (!strcmp(t, "exit"))
        _exit(3);
    if (!strcmp(t, "stall"))
        for (;;)
            pause();
}

int main(int argc, char **argv)
{
    static struct p3d_dist d = {0, 1, 32767, p3d_mpi_send, p3d_mpi_recv,
                                p3d_mpi_bcast, p3d_mpi_exchange,
                                p3d_mpi_done, 0, NULL};
    int *ub, flag = 0, level, ret;

    /* The heap's settings (one malloc arena, p3d_util.c) before MPI
     * starts its threads: set after them, each of those threads' arenas
     * stayed, and the reader threads' memory spread over them (256 x 40k
     * at -n 1: 231 MB peak against p3d-analyze's 136; 149 MB with this) */
    p3d_malloc_tune();
    /* Only this thread calls MPI; the scan's threads do not. */
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &level);
    MPI_Comm_rank(MPI_COMM_WORLD, &d.self);
    MPI_Comm_size(MPI_COMM_WORLD, &d.n);
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &flag);
    if (flag)
        d.tag_max = *ub;
    p3d_mpi_seq_block(&d);
    p3d_dist_mpi = &d;
    if (d.n > 1)
        p3d_dist_active = &d;
    if (d.self != 0)
        p3d_mpi_silence();
    p3d_mpi_start_deadline();
    if (d.self == 0)
        p3d_mpi_clean_on_signals();
    p3d_mpi_test_fault(&d);
    ret = p3d_cli_main(argc, argv);
    p3d_mpi_stats(&d);
    p3d_mpi_flush();
    MPI_Finalize();
    return ret;
}
