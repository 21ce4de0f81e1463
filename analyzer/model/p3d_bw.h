/*
 * p3d_bw.h - nccl-tests bandwidth arithmetic (nccl-tests doc/PERFORMANCE.md, "bus bandwidth").
 */
#ifndef P3D_BW_H
#define P3D_BW_H

#include "p3d_job.h"

/* busbw / algbw for op on n ranks. */
double p3d_bw_factor(int op, int n);
/* Bytes nccl-tests counts for one call (AllGather/ReduceScatter: the
 * whole buffer, n * per-rank bytes). */
double p3d_bw_bytes(int op, int n, double bytes);
/* algbw in GB/s of a stat (0 without GPU times). */
double p3d_algbw(const struct p3d_opstat *s, int op, int n);

#endif /* P3D_BW_H */
