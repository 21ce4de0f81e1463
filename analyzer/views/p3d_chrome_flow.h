/*
 * p3d_chrome_flow.h - flow arrows from each Send to its Recv in the
 * Chrome trace.  A pair is keyed by (comm, source comm rank, destination
 * comm rank, per-pair sequence number), which both sides know on their
 * own.  Each end is noted as its rank's events are written; the arrows
 * are written after the last rank, only those with both ends, so no
 * arrow dangles and no rank file is read twice.
 */
#ifndef P3D_CHROME_FLOW_H
#define P3D_CHROME_FLOW_H

#include <stdio.h>

#include "p3d_vrank.h"
#include "p3d_map.h"

/* One end of an arrow: where its event was written. */
struct p3d_flow_end {
    int rank;
    uint32_t tid;
    uint64_t t0, t1;
};

struct p3d_flows {
    struct p3d_map idx; /* flow id -> index */
    uint64_t *id;       /* [n] */
    uint8_t *sides;     /* bit 0 send seen, bit 1 recv seen */
    struct p3d_flow_end *end; /* [n][2]: the send's, the recv's */
    size_t n, cap;
};

/* Flow id of a Send/Recv event (< 2^53), 0 if it has none. */
uint64_t p3d_flow_id(const struct p3d_vev *e);


/* Fill gpu (op_id -> 1) from the GPU NCCL events of v. */
void p3d_flow_gpu_ops(const struct p3d_vrank *v, struct p3d_map *gpu);

/* Note event e of rank (written on track e->tid) as an end of its
 * arrow, if it has one and it is the event the arrow attaches to. */
void p3d_flows_note(struct p3d_flows *fl, const struct p3d_vev *e, int rank,
                    const struct p3d_map *gpu);

/* Write every arrow with both ends (each "sep" first); returns how many
 * events were written. */
size_t p3d_flows_write(FILE *f, const struct p3d_flows *fl, int first);

void p3d_flows_free(struct p3d_flows *fl);

#endif /* P3D_CHROME_FLOW_H */
