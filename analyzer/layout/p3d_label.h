/*
 * p3d_label.h - give every joined communicator its labels under the
 * job's layout and decide, from usage, which group it is used as.
 */
#ifndef P3D_LABEL_H
#define P3D_LABEL_H

#include "p3d_job.h"
#include "p3d_layout.h"

/*
 * Set labels, label_first, label and role of every communicator of job.
 * label_first (JSON "label") depends on the member set only; label (JSON
 * "used_as") on usage too: the embedding group at PP = 2 is "label" PP,
 * "used_as" EMB (see p3d_label.c).
 */
void p3d_label_all(struct p3d_job *job);

/*
 * Pick the label a communicator is used as: from `bits` (matching
 * labels), its usage class, whether an earlier communicator has the same
 * members (`dup_of` its label, or -1).  Returns a P3D_LBL_*.
 */
int p3d_label_pick(unsigned bits, enum p3d_use use, const struct p3d_gcomm *g,
                   int dup_label);

#endif /* P3D_LABEL_H */
