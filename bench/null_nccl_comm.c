/*
 * null_nccl_comm.c - the communicator queries of the do-nothing NCCLs
 * (bench/null_nccl.c, bench/null_nccl_plugin.c), linked into both: the
 * shim's communicator bookkeeping asks them once per communicator.
 * Every communicator has 2 ranks, this one rank 0 on device 0, so peer 1
 * is valid for send/recv and real NCCL would make a task (and plugin
 * events) per op.
 */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#include <nccl.h>
#pragma GCC diagnostic pop

#define NULL_API __attribute__((visibility("default"), noinline))

NULL_API ncclResult_t ncclCommGetAsyncError(ncclComm_t c, ncclResult_t *e)
{
    (void)c;
    *e = ncclSuccess;
    return ncclSuccess;
}

NULL_API ncclResult_t ncclCommCount(const ncclComm_t c, int *n)
{
    (void)c;
    *n = 2;
    return ncclSuccess;
}

NULL_API ncclResult_t ncclCommUserRank(const ncclComm_t c, int *r)
{
    (void)c;
    *r = 0;
    return ncclSuccess;
}

NULL_API ncclResult_t ncclCommCuDevice(const ncclComm_t c, int *d)
{
    (void)c;
    *d = 0;
    return ncclSuccess;
}
