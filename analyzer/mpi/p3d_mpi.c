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
#include <limits.h>
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "p3d_dist.h"

int p3d_cli_main(int argc, char **argv); /* p3d_main.c's main */

#define P3D_MPI_PIECE (1 << 30) /* bytes per MPI call (counts are int) */

static int p3d_mpi_err = 2; /* a dup of stderr, for this file's messages */

static void p3d_mpi_send(struct p3d_dist *d, int tag,
                         const struct p3d_bytes *b)
{
    uint64_t n = b->n;

    (void)d;
    MPI_Send(&n, 1, MPI_UINT64_T, 0, tag, MPI_COMM_WORLD);
    for (uint64_t off = 0; off < n; off += P3D_MPI_PIECE) {
        uint64_t k = n - off < P3D_MPI_PIECE ? n - off : P3D_MPI_PIECE;
        MPI_Send(b->p + off, (int)k, MPI_BYTE, 0, tag, MPI_COMM_WORLD);
    }
}

static void p3d_mpi_recv(struct p3d_dist *d, int from, int tag,
                         struct p3d_bytes *b)
{
    uint64_t n = 0;

    (void)d;
    MPI_Recv(&n, 1, MPI_UINT64_T, from, tag, MPI_COMM_WORLD,
             MPI_STATUS_IGNORE);
    b->n = 0;
    p3d_bytes_put(b, NULL, (size_t)n);
    for (uint64_t off = 0; off < n; off += P3D_MPI_PIECE) {
        uint64_t k = n - off < P3D_MPI_PIECE ? n - off : P3D_MPI_PIECE;
        MPI_Recv(b->p + off, (int)k, MPI_BYTE, from, tag, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    }
}

static void p3d_mpi_bcast(struct p3d_dist *d, struct p3d_bytes *b)
{
    uint64_t n = b->n;

    MPI_Bcast(&n, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
    if (d->self != 0) {
        b->n = 0;
        p3d_bytes_put(b, NULL, (size_t)n);
    }
    for (uint64_t off = 0; off < n; off += P3D_MPI_PIECE) {
        uint64_t k = n - off < P3D_MPI_PIECE ? n - off : P3D_MPI_PIECE;
        MPI_Bcast(b->p + off, (int)k, MPI_BYTE, 0, MPI_COMM_WORLD);
    }
}

static void p3d_mpi_done(struct p3d_dist *d)
{
    (void)d;
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

/* Test hook (tests/integration/test_mpi_equiv.sh): P3D_MPI_TEST_PEER=exit
 * or stall makes process 1 die or hang before it reads a file. */
static void p3d_mpi_test_fault(int self)
{
    const char *t = getenv("P3D_MPI_TEST_PEER");

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
    static struct p3d_dist d = {0, 1, p3d_mpi_send, p3d_mpi_recv,
                                p3d_mpi_bcast, p3d_mpi_done};
    int ret;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &d.self);
    MPI_Comm_size(MPI_COMM_WORLD, &d.n);
    if (d.n > 1)
        p3d_dist_active = &d;
    if (d.self != 0)
        p3d_mpi_silence();
    p3d_mpi_start_deadline();
    p3d_mpi_test_fault(d.self);
    ret = p3d_cli_main(argc, argv);
    MPI_Finalize();
    return ret;
}
