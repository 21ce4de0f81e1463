/*
 * selftest.c - exercises every call of minimpi.c the way nccl-tests does;
 * run by tests/integration/test_val_minimpi.sh as N processes.  Prints
 * "minimpi selftest ok rank R" or exits non-zero.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "mpi.h"

#define CHECK(c)                                                           \
    do {                                                                   \
        if (!(c)) {                                                        \
            fprintf(stderr, "rank %d: check failed line %d: %s\n", rank,   \
                    __LINE__, #c);                                         \
            return 1;                                                      \
        }                                                                  \
    } while (0)

int main(int argc, char **argv)
{
    int rank, size, sub_rank, sub_size, v, mx;
    uint64_t hashes[64];
    double d[3], g[64 * 3];
    long l;
    int64_t big;
    char id[128];
    MPI_Comm sub;

    MPI_Init(&argc, &argv);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    hashes[rank] = 1000 + (uint64_t)rank;
    MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, hashes,
                  sizeof(uint64_t), MPI_BYTE, MPI_COMM_WORLD);
    for (int i = 0; i < size; i++)
        CHECK(hashes[i] == 1000 + (uint64_t)i);
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, size - rank, &sub);
    MPI_Comm_size(sub, &sub_size);
    MPI_Comm_rank(sub, &sub_rank);
    CHECK(sub_size == (size - rank % 2 + 1) / 2);
    CHECK(sub_rank == sub_size - 1 - rank / 2); /* key reverses order */
    memset(id, sub_rank == 0 ? 7 + rank % 2 : 0, sizeof(id));
    MPI_Bcast(id, sizeof(id), MPI_BYTE, 0, sub);
    CHECK(id[0] == 7 + rank % 2 && id[127] == 7 + rank % 2);
    MPI_Barrier(MPI_COMM_WORLD);
    v = rank + 1;
    MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    CHECK(v == size * (size + 1) / 2);
    MPI_Allreduce(&rank, &mx, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    CHECK(mx == size - 1);
    l = 100 - rank;
    MPI_Allreduce(MPI_IN_PLACE, &l, 1, MPI_LONG, MPI_MIN, MPI_COMM_WORLD);
    CHECK(l == 100 - (size - 1));
    big = (int64_t)1 << 40 | rank;
    MPI_Allreduce(MPI_IN_PLACE, &big, 1, MPI_INT64_T, MPI_MAX,
                  MPI_COMM_WORLD);
    CHECK(big == ((int64_t)1 << 40 | (size - 1)));
    for (int i = 0; i < 3; i++)
        d[i] = rank * 10 + i;
    for (int rep = 0; rep < 50; rep++) {
        memset(g, 0, sizeof(g));
        MPI_Gather(d, 3, MPI_DOUBLE, rank == 0 ? g : NULL, 3, MPI_DOUBLE, 0,
                   MPI_COMM_WORLD);
        if (rank == 0)
            for (int i = 0; i < size * 3; i++)
                CHECK(g[i] == (i / 3) * 10 + i % 3);
    }
    MPI_Comm_free(&sub);
    MPI_Finalize();
    printf("minimpi selftest ok rank %d\n", rank);
    return 0;
}
