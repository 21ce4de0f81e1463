/*
 * null_nccl.c - an NCCL that does nothing, so bench/shim_bench.c measures
 * only what the shim adds to a call.  Exports the calls the bench makes
 * and the ones the shim's communicator bookkeeping uses.
 */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#include <nccl.h>
#pragma GCC diagnostic pop

#define NULL_API __attribute__((visibility("default"), noinline))

static int null_comm;

NULL_API ncclResult_t ncclAllReduce(const void *s, void *r, size_t n,
                                    ncclDataType_t d, ncclRedOp_t o,
                                    ncclComm_t c, cudaStream_t st)
{
    (void)s, (void)r, (void)n, (void)d, (void)o, (void)c, (void)st;
    __asm__ volatile("" ::: "memory");
    return ncclSuccess;
}

NULL_API ncclResult_t ncclSend(const void *s, size_t n, ncclDataType_t d,
                               int peer, ncclComm_t c, cudaStream_t st)
{
    (void)s, (void)n, (void)d, (void)peer, (void)c, (void)st;
    __asm__ volatile("" ::: "memory");
    return ncclSuccess;
}

NULL_API ncclResult_t ncclRecv(void *r, size_t n, ncclDataType_t d,
                               int peer, ncclComm_t c, cudaStream_t st)
{
    (void)r, (void)n, (void)d, (void)peer, (void)c, (void)st;
    __asm__ volatile("" ::: "memory");
    return ncclSuccess;
}

NULL_API ncclResult_t ncclGroupStart(void)
{
    __asm__ volatile("" ::: "memory");
    return ncclSuccess;
}

NULL_API ncclResult_t ncclGroupEnd(void)
{
    __asm__ volatile("" ::: "memory");
    return ncclSuccess;
}

NULL_API ncclResult_t ncclGetUniqueId(ncclUniqueId *id)
{
    int i;

    for (i = 0; i < NCCL_UNIQUE_ID_BYTES; i++)
        id->internal[i] = (char)i;
    return ncclSuccess;
}

NULL_API ncclResult_t ncclCommInitRank(ncclComm_t *c, int n, ncclUniqueId id,
                                       int r)
{
    (void)n, (void)id, (void)r;
    *c = (ncclComm_t)&null_comm;
    return ncclSuccess;
}

NULL_API ncclResult_t ncclCommDestroy(ncclComm_t c)
{
    (void)c;
    return ncclSuccess;
}

NULL_API ncclResult_t ncclGetVersion(int *v)
{
    *v = NCCL_VERSION_CODE;
    return ncclSuccess;
}
