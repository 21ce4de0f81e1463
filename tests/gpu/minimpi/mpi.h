/*
 * mpi.h - the few MPI calls nccl-tests makes, for tests/gpu/minimpi.c.
 *
 * Why: nccl-tests runs several processes only through MPI, and the GPU
 * machine has no MPI library.  This header and minimpi.c give nccl-tests
 * (built with MPI=1 MPI_HOME=<dir holding include/mpi.h, lib/libmpi.a>)
 * a small MPI over files in a shared folder, for processes started by
 * tests/gpu/nccl_tests.sh on one host.  Only what nccl-tests uses.
 */
#ifndef P3D_MINIMPI_H
#define P3D_MINIMPI_H
#ifdef __cplusplus
extern "C" {
#endif

typedef int MPI_Comm;
typedef int MPI_Datatype;
typedef int MPI_Op;

#define MPI_SUCCESS 0
#define MPI_COMM_WORLD 0
#define MPI_DATATYPE_NULL 0
#define MPI_BYTE 1
#define MPI_INT 2
#define MPI_LONG 3
#define MPI_LONG_LONG 4
#define MPI_INT64_T 5
#define MPI_DOUBLE 6
#define MPI_SUM 1
#define MPI_MIN 2
#define MPI_MAX 3
#define MPI_IN_PLACE ((void *)1)

int MPI_Init(int *argc, char ***argv);
int MPI_Finalize(void);
int MPI_Comm_size(MPI_Comm comm, int *size);
int MPI_Comm_rank(MPI_Comm comm, int *rank);
int MPI_Comm_split(MPI_Comm comm, int color, int key, MPI_Comm *newcomm);
int MPI_Comm_free(MPI_Comm *comm);
int MPI_Barrier(MPI_Comm comm);
int MPI_Bcast(void *buf, int count, MPI_Datatype type, int root,
              MPI_Comm comm);
int MPI_Allreduce(const void *sendbuf, void *recvbuf, int count,
                  MPI_Datatype type, MPI_Op op, MPI_Comm comm);
int MPI_Allgather(const void *sendbuf, int scount, MPI_Datatype stype,
                  void *recvbuf, int rcount, MPI_Datatype rtype,
                  MPI_Comm comm);
int MPI_Gather(const void *sendbuf, int scount, MPI_Datatype stype,
               void *recvbuf, int rcount, MPI_Datatype rtype, int root,
               MPI_Comm comm);

#ifdef __cplusplus
}
#endif
#endif /* P3D_MINIMPI_H */
