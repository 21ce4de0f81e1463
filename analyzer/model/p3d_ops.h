/*
 * p3d_ops.h - the one table of NCCL op kinds in the analyzer, generated
 * from P3D_OPS in include/p3d_format.h: each kind's name and traits
 * (P3D_OPK_*: point-to-point, rooted, bus bandwidth factor, bytes scale).
 * Every analysis and view asks here, none keeps its own list.
 */
#ifndef P3D_OPS_H
#define P3D_OPS_H

#include "p3d_format.h"

/* "AllReduce", ... indexed by P3D_OP_*. */
extern const char *const p3d_op_name[P3D_OP_COUNT];
/* P3D_OPK_* bits of op, 0 for a value outside the table. */
unsigned p3d_op_traits(int op);
/* The op has a root that every member must agree on. */
int p3d_op_rooted(int op);
/* A Send or Recv to the rank's own comm rank: PyTorch's all-to-all over
 * Send/Recv includes the own share (torch/csrc/cuda/nccl.cpp loops over
 * every rank), which moves no data between ranks and waits for no one. */
int p3d_op_to_self(const struct p3d_rec_op *o);

#endif /* P3D_OPS_H */
