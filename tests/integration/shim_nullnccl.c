/*
 * shim_nullnccl.c - an NCCL that does nothing, for measuring what the
 * shim itself adds to a call (shim_bench.c).  Only the symbols the bench
 * and the shim's comm bookkeeping use.
 */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#include <nccl.h>
#pragma GCC diagnostic pop

static int null_comm;

ncclResult_t ncclAllReduce(const void *s, void *r, size_t n,
                           ncclDataType_t d, ncclRedOp_t o, ncclComm_t c,
                           cudaStream_t st)
{
    (void)s, (void)r, (void)n, (void)d, (void)o, (void)c, (void)st;
    return ncclSuccess;
}

ncclResult_t ncclCommInitRank(ncclComm_t *c, int n, ncclUniqueId id, int r)
{
    (void)n, (void)id, (void)r;
    *c = (ncclComm_t)&null_comm;
    return ncclSuccess;
}

ncclResult_t ncclCommGetAsyncError(ncclComm_t c, ncclResult_t *e)
{
    (void)c;
    *e = ncclSuccess;
    return ncclSuccess;
}

ncclResult_t ncclCommCount(const ncclComm_t c, int *n)
{
    (void)c;
    *n = 1;
    return ncclSuccess;
}

ncclResult_t ncclCommUserRank(const ncclComm_t c, int *r)
{
    (void)c;
    *r = 0;
    return ncclSuccess;
}

ncclResult_t ncclCommCuDevice(const ncclComm_t c, int *d)
{
    (void)c;
    *d = 0;
    return ncclSuccess;
}

ncclResult_t ncclGetVersion(int *v)
{
    *v = NCCL_VERSION_CODE;
    return ncclSuccess;
}
