/*
 * p3d_chrome_flow.h - flow arrows from each Send to its Recv in the
 * Chrome trace.  A pair is keyed by (comm, source comm rank, destination
 * comm rank, per-pair sequence number), which both sides know on their
 * own; a first pass over the selected ranks keeps the keys seen on both
 * sides so no arrow dangles.
 */
#ifndef P3D_CHROME_FLOW_H
#define P3D_CHROME_FLOW_H

#include <stdio.h>

#include "p3d_chrome_scan.h"
#include "p3d_map.h"

struct p3d_flows {
    struct p3d_map idx; /* flow id -> index */
    uint8_t *sides;     /* bit 0 send seen, bit 1 recv seen */
    uint64_t *send_t0;  /* start of the send's event */
    size_t n, cap;
};

/* Flow id of a Send/Recv event (< 2^53), 0 if it has none. */
uint64_t p3d_flow_id(const struct p3d_vev *e);

/*
 * The event of v an arrow of op e attaches to: e itself when it is a
 * GPU op or a host call without a GPU op in v; gpu maps op_id -> 1 for
 * the ops of v that have a GPU event.
 */
int p3d_flow_bound(const struct p3d_vev *e, const struct p3d_map *gpu);

/* Fill gpu (op_id -> 1) from the GPU NCCL events of v. */
void p3d_flow_gpu_ops(const struct p3d_vrank *v, struct p3d_map *gpu);

/* Note the sends and receives of v. */
void p3d_flows_add(struct p3d_flows *fl, const struct p3d_vrank *v);

/* Write the arrow end of event e (pid = rank) if both sides exist;
 * returns 1 if something was written.  `sep` is written first. */
int p3d_flows_emit(FILE *f, const struct p3d_flows *fl,
                   const struct p3d_vev *e, int rank, const char *sep);

void p3d_flows_free(struct p3d_flows *fl);

#endif /* P3D_CHROME_FLOW_H */
