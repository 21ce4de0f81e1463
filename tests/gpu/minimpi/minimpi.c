/*
 * minimpi.c - a tiny MPI over files, enough for nccl-tests on one host.
 *
 * Why: nccl-tests needs MPI to run one process per rank (several ranks
 * share GPU 0 on the validation machine, which NCCL allows only across
 * processes with distinct NCCL_HOSTID), and that machine has no MPI.
 *
 * Every process is started by tests/gpu/nccl_tests.sh with
 *   P3D_MPI_DIR   a folder shared by all ranks (created by the launcher)
 *   P3D_MPI_RANK  this process's rank, P3D_MPI_SIZE  the number of ranks
 * Every collective is an all-gather: each member writes its block to
 * DIR/<comm>.<seq>.<rank> (written to a temporary name, then renamed, so
 * a present file is complete), waits until every member's file of that
 * sequence number exists, reads them all and computes its result locally.
 * A rank deletes its own file of sequence s once sequence s+1 is
 * complete (all members have then read s); the launcher removes the rest.  A wait longer than
 * P3D_MPI_TIMEOUT seconds (default 600) aborts the process.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mpi.h"

#define MINIMPI_MAX_COMMS 16
#define MINIMPI_MAX_RANKS 256

struct minimpi_comm {
    char name[32];
    int size;
    int rank;
    int world[MINIMPI_MAX_RANKS]; /* world rank of each member */
    unsigned long seq;
};

static struct minimpi_comm comms[MINIMPI_MAX_COMMS];
static int n_comms;
static int n_splits;
static char dir[4096];
static double timeout_s = 600;

static void minimpi_die(const char *what)
{
    fprintf(stderr, "minimpi: rank %d: %s\n", comms[0].rank, what);
    exit(3);
}

static int minimpi_env_int(const char *a, const char *b)
{
    const char *s = getenv(a);

    if (!s)
        s = getenv(b);
    if (!s)
        minimpi_die("P3D_MPI_RANK/P3D_MPI_SIZE (or RANK/WORLD_SIZE) unset");
    return atoi(s);
}

int MPI_Init(int *argc, char ***argv)
{
    const char *d = getenv("P3D_MPI_DIR");
    const char *t = getenv("P3D_MPI_TIMEOUT");

    (void)argc;
    (void)argv;
    if (!d || !*d)
        minimpi_die("P3D_MPI_DIR unset");
    snprintf(dir, sizeof(dir), "%s", d);
    if (t)
        timeout_s = atof(t);
    comms[0].rank = minimpi_env_int("P3D_MPI_RANK", "RANK");
    comms[0].size = minimpi_env_int("P3D_MPI_SIZE", "WORLD_SIZE");
    if (comms[0].size < 1 || comms[0].size > MINIMPI_MAX_RANKS ||
        comms[0].rank < 0 || comms[0].rank >= comms[0].size)
        minimpi_die("bad rank or size");
    for (int i = 0; i < comms[0].size; i++)
        comms[0].world[i] = i;
    strcpy(comms[0].name, "w");
    n_comms = 1;
    return MPI_SUCCESS;
}

static struct minimpi_comm *minimpi_comm(MPI_Comm c)
{
    if (c < 0 || c >= n_comms)
        minimpi_die("unknown communicator");
    return &comms[c];
}

static size_t minimpi_type_size(MPI_Datatype t)
{
    switch (t) {
    case MPI_BYTE: return 1;
    case MPI_INT: return sizeof(int);
    case MPI_LONG: return sizeof(long);
    case MPI_LONG_LONG: return sizeof(long long);
    case MPI_INT64_T: return sizeof(int64_t);
    case MPI_DOUBLE: return sizeof(double);
    default: return 0;
    }
}

static void minimpi_path(char *p, size_t n, const struct minimpi_comm *c,
                         unsigned long seq, int member, const char *sfx)
{
    snprintf(p, n, "%s/%s.%lu.%d%s", dir, c->name, seq, member, sfx);
}

static void minimpi_write(const struct minimpi_comm *c, const void *buf,
                          size_t n)
{
    char tmp[4200], fin[4200];
    const char *b = buf;
    int fd;

    minimpi_path(tmp, sizeof(tmp), c, c->seq, c->rank, ".tmp");
    minimpi_path(fin, sizeof(fin), c, c->seq, c->rank, "");
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0)
        minimpi_die("cannot create a file in P3D_MPI_DIR");
    while (n > 0) {
        ssize_t w = write(fd, b, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            minimpi_die("write failed");
        b += w;
        n -= (size_t)w;
    }
    if (close(fd) != 0 || rename(tmp, fin) != 0)
        minimpi_die("cannot publish a file in P3D_MPI_DIR");
}

/* Wait for member m's file of this sequence and read n bytes of it. */
static void minimpi_read(const struct minimpi_comm *c, int m, void *buf,
                         size_t n)
{
    char p[4200];
    struct timespec nap = {0, 50000};
    double waited = 0;
    int fd;

    minimpi_path(p, sizeof(p), c, c->seq, m, "");
    while ((fd = open(p, O_RDONLY)) < 0) {
        nanosleep(&nap, NULL);
        waited += 50e-6;
        if (waited > timeout_s)
            minimpi_die("timed out waiting for a peer (did one die?)");
    }
    if (n > 0 && read(fd, buf, n) != (ssize_t)n)
        minimpi_die("short read of a peer's file");
    close(fd);
}

/* The primitive: all members' n-byte blocks into all[member * n]. */
static void minimpi_allgather(struct minimpi_comm *c, const void *mine,
                              size_t n, void *all)
{
    char p[4200];

    minimpi_write(c, mine, n);
    for (int m = 0; m < c->size; m++)
        minimpi_read(c, m, (char *)all + (size_t)m * n, n);
    if (c->seq > 0) {
        minimpi_path(p, sizeof(p), c, c->seq - 1, c->rank, "");
        unlink(p);
    }
    c->seq++;
}

int MPI_Comm_size(MPI_Comm comm, int *size)
{
    *size = minimpi_comm(comm)->size;
    return MPI_SUCCESS;
}

int MPI_Comm_rank(MPI_Comm comm, int *rank)
{
    *rank = minimpi_comm(comm)->rank;
    return MPI_SUCCESS;
}

int MPI_Barrier(MPI_Comm comm)
{
    struct minimpi_comm *c = minimpi_comm(comm);
    char one = 1, all[MINIMPI_MAX_RANKS];

    minimpi_allgather(c, &one, 1, all);
    return MPI_SUCCESS;
}

static void *minimpi_alloc(size_t n)
{
    void *p = malloc(n ? n : 1);

    if (!p)
        minimpi_die("out of memory");
    return p;
}

int MPI_Bcast(void *buf, int count, MPI_Datatype type, int root,
              MPI_Comm comm)
{
    struct minimpi_comm *c = minimpi_comm(comm);
    size_t n = (size_t)count * minimpi_type_size(type);
    char *all = minimpi_alloc(n * (size_t)c->size);

    minimpi_allgather(c, buf, n, all);
    memcpy(buf, all + (size_t)root * n, n);
    free(all);
    return MPI_SUCCESS;
}

#define MINIMPI_RED(T)                                                     \
    do {                                                                   \
        T *d = out;                                                        \
        const T *s = in;                                                   \
        for (int i = 0; i < count; i++)                                    \
            d[i] = op == MPI_SUM ? d[i] + s[i]                             \
                   : op == MPI_MIN ? (s[i] < d[i] ? s[i] : d[i])           \
                                   : (s[i] > d[i] ? s[i] : d[i]);          \
    } while (0)

static void minimpi_reduce(void *out, const void *in, int count,
                           MPI_Datatype type, MPI_Op op)
{
    switch (type) {
    case MPI_INT: MINIMPI_RED(int); break;
    case MPI_LONG: MINIMPI_RED(long); break;
    case MPI_LONG_LONG: MINIMPI_RED(long long); break;
    case MPI_INT64_T: MINIMPI_RED(int64_t); break;
    case MPI_DOUBLE: MINIMPI_RED(double); break;
    default: minimpi_die("MPI_Allreduce: unsupported type");
    }
}

int MPI_Allreduce(const void *sendbuf, void *recvbuf, int count,
                  MPI_Datatype type, MPI_Op op, MPI_Comm comm)
{
    struct minimpi_comm *c = minimpi_comm(comm);
    size_t n = (size_t)count * minimpi_type_size(type);
    char *all = minimpi_alloc(n * (size_t)c->size);

    if (op != MPI_SUM && op != MPI_MIN && op != MPI_MAX)
        minimpi_die("MPI_Allreduce: unsupported op");
    minimpi_allgather(c, sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf, n,
                      all);
    memcpy(recvbuf, all, n);
    for (int m = 1; m < c->size; m++)
        minimpi_reduce(recvbuf, all + (size_t)m * n, count, type, op);
    free(all);
    return MPI_SUCCESS;
}

int MPI_Allgather(const void *sendbuf, int scount, MPI_Datatype stype,
                  void *recvbuf, int rcount, MPI_Datatype rtype,
                  MPI_Comm comm)
{
    struct minimpi_comm *c = minimpi_comm(comm);
    size_t n = (size_t)rcount * minimpi_type_size(rtype);
    char *all = minimpi_alloc(n * (size_t)c->size);
    const char *mine = sendbuf;

    (void)scount;
    (void)stype;
    if (sendbuf == MPI_IN_PLACE)
        mine = (char *)recvbuf + (size_t)c->rank * n;
    minimpi_allgather(c, mine, n, all);
    memcpy(recvbuf, all, n * (size_t)c->size);
    free(all);
    return MPI_SUCCESS;
}

int MPI_Gather(const void *sendbuf, int scount, MPI_Datatype stype,
               void *recvbuf, int rcount, MPI_Datatype rtype, int root,
               MPI_Comm comm)
{
    struct minimpi_comm *c = minimpi_comm(comm);
    size_t n = (size_t)scount * minimpi_type_size(stype);
    char *all = minimpi_alloc(n * (size_t)c->size);
    const char *mine = sendbuf;

    (void)rcount;
    (void)rtype;
    if (sendbuf == MPI_IN_PLACE)
        mine = (char *)recvbuf + (size_t)c->rank * n;
    minimpi_allgather(c, mine, n, all);
    if (c->rank == root && recvbuf)
        memcpy(recvbuf, all, n * (size_t)c->size);
    free(all);
    return MPI_SUCCESS;
}

int MPI_Comm_split(MPI_Comm comm, int color, int key, MPI_Comm *newcomm)
{
    struct minimpi_comm *c = minimpi_comm(comm), *nc;
    int mine[2] = {color, key}, all[2 * MINIMPI_MAX_RANKS];

    if (n_comms >= MINIMPI_MAX_COMMS)
        minimpi_die("too many communicators");
    minimpi_allgather(c, mine, sizeof(mine), all);
    nc = &comms[n_comms];
    memset(nc, 0, sizeof(*nc));
    snprintf(nc->name, sizeof(nc->name), "s%d_%d", n_splits++, color);
    /* members with my color, ordered by (key, parent rank) */
    for (int k = 0; k < c->size; k++) {
        int m = -1;
        for (int j = 0; j < c->size; j++) {
            if (all[2 * j] != color)
                continue;
            int before = 0;
            for (int i = 0; i < c->size; i++)
                before += all[2 * i] == color &&
                          (all[2 * i + 1] < all[2 * j + 1] ||
                           (all[2 * i + 1] == all[2 * j + 1] && i < j));
            if (before == k)
                m = j;
        }
        if (m < 0)
            break;
        if (m == c->rank)
            nc->rank = k;
        nc->world[k] = c->world[m];
        nc->size = k + 1;
    }
    *newcomm = n_comms++;
    return MPI_SUCCESS;
}

int MPI_Comm_free(MPI_Comm *comm)
{
    (void)comm;
    return MPI_SUCCESS;
}

int MPI_Finalize(void)
{
    /* The last files stay: peers may still read them; the launcher
     * removes P3D_MPI_DIR. */
    return MPI_Barrier(MPI_COMM_WORLD);
}
