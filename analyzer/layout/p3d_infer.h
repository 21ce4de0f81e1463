/*
 * p3d_infer.h - finding a job's layout: stated by the user (--layout) or
 * by the job's command line (Megatron's flags), or inferred from the
 * traces, with the usage classes of its communicators' traffic
 * (p3d_usage.c) as evidence.  The layout itself, a value, is
 * model/p3d_layout.h.
 */
#ifndef P3D_INFER_H
#define P3D_INFER_H

#include <stddef.h>
#include <stdint.h>

#include "p3d_layout.h"

/* Parse --layout "tp=2,pp=2,cp=1,ep=1,order=..." for world w
 * (dp = w / (tp*cp*pp) unless given).  Returns 0 or -1 (message printed). */
int p3d_layout_parse(struct p3d_layout *l, const char *spec, int w);
/* Megatron flags in a NUL-separated argv.  Returns 1 if any was found. */
int p3d_layout_from_cmdline(struct p3d_layout *l, const char *argv,
                            size_t len, int w);

/* Usage class of a joined communicator; max_cpm is the job's largest
 * calls-per-member over all communicators (frequency reference). */
enum p3d_use p3d_usage_class(const struct p3d_gcomm *g, uint64_t max_cpm);
/* Calls per member of a communicator. */
uint64_t p3d_calls_per_member(const struct p3d_gcomm *g);
/* Bitmask of labels consistent with a usage class. */
unsigned p3d_use_labels(enum p3d_use u);
/* Whether a usage class has a weight-gradient signature (which spans CP
 * where CP > 1, p3d_usage.c). */
int p3d_use_is_grad(enum p3d_use u);
/* The labels a usage class points to first (a tie-breaker). */
unsigned p3d_use_primary(enum p3d_use u);

/*
 * Infer the layout of job (world w) from its communicators: the candidate
 * under which most communicators are exact Megatron groups, then most
 * usage-consistent, then default order, larger dp, smaller cp/ep/pp.
 * With a hint (valid) that scores as well as the best, the hint wins;
 * with force, the hint is used anyway and out->contradicted says whether
 * the data fits another layout better.
 */
void p3d_layout_infer(struct p3d_job *job, const struct p3d_layout *hint,
                      int force, struct p3d_layout *out);

#endif /* P3D_INFER_H */
