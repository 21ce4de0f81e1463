/*
 * p3d_bw.c - nccl-tests bandwidth arithmetic: algbw = bytes / time;
 * busbw factor AllReduce 2(n-1)/n, ReduceScatter/AllGather/AlltoAll
 * (n-1)/n on the full buffer, Broadcast/Reduce/Send/Recv 1.
 */
#include "p3d_bw.h"

double p3d_bw_factor(int op, int n)
{
    if (n < 1)
        return 1.0;
    switch (op) {
    case P3D_OP_ALLREDUCE:
        return 2.0 * (n - 1) / n;
    case P3D_OP_REDUCESCATTER:
    case P3D_OP_ALLGATHER:
    case P3D_OP_ALLTOALL:
    case P3D_OP_GATHER:
    case P3D_OP_SCATTER:
        return (double)(n - 1) / n;
    default:
        return 1.0;
    }
}

double p3d_bw_bytes(int op, int n, double bytes)
{
    if (op == P3D_OP_REDUCESCATTER || op == P3D_OP_ALLGATHER)
        return bytes * n;
    return bytes;
}

double p3d_algbw(const struct p3d_opstat *s, int op, int n)
{
    if (!s->gpu_ns)
        return 0.0;
    return p3d_bw_bytes(op, n, (double)s->gpu_bytes) / (double)s->gpu_ns;
}
