/*
 * p3d_bw.c - nccl-tests bandwidth arithmetic: algbw = bytes / time;
 * busbw = algbw x the op kind's factor (its P3D_OPK_BW_* trait in
 * P3D_OPS: AllReduce 2(n-1)/n, ReduceScatter/AllGather/AlltoAll/Gather/
 * Scatter (n-1)/n on the full buffer, the others 1).
 */
#include "p3d_bw.h"
#include "p3d_ops.h"

double p3d_bw_factor(int op, int n)
{
    unsigned k = p3d_op_traits(op);

    if (n < 1)
        return 1.0;
    if (k & P3D_OPK_BW_AR)
        return 2.0 * (n - 1) / n;
    if (k & P3D_OPK_BW_RING)
        return (double)(n - 1) / n;
    return 1.0;
}

double p3d_bw_bytes(int op, int n, double bytes)
{
    return p3d_op_traits(op) & P3D_OPK_BYTES_N ? bytes * n : bytes;
}

double p3d_algbw(const struct p3d_opstat *s, int op, int n)
{
    if (!s->gpu_ns)
        return 0.0;
    return p3d_bw_bytes(op, n, (double)s->gpu_bytes) / (double)s->gpu_ns;
}
