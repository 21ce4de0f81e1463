/*
 * p3d_html_time.h - where a rank's time goes in a window, for the
 * pictures and the comparison table: compute, NCCL not hidden behind
 * compute (per group label), pipeline bubble (no compute while a PP
 * transfer is pending) and idle.  A stand-in, computed from the views'
 * model, until the time analysis (issue 6) provides its own numbers.
 */
#ifndef P3D_HTML_TIME_H
#define P3D_HTML_TIME_H

#include "p3d_vrank.h"
#include "p3d_layout.h"

enum p3d_vstate { P3D_VS_COMPUTE, P3D_VS_NCCL, P3D_VS_BUBBLE, P3D_VS_IDLE };

struct p3d_vbreak {
    uint64_t span;                       /* window length */
    uint64_t compute;                    /* compute busy */
    uint64_t overlapped;                 /* NCCL hidden behind compute */
    uint64_t exposed[P3D_LBL_COUNT + 1]; /* by label; last = unknown */
    uint64_t exposed_all;
    uint64_t bubble, idle;
    int host_only;                       /* no GPU compute spans: compute
                                            = time outside NCCL ops */
};

/* Called for each piece [a, b) of the window in one state; label for
 * P3D_VS_NCCL (P3D_LBL_COUNT = unknown). */
typedef void (*p3d_vstate_fn)(uint64_t a, uint64_t b, int state, int label,
                              void *ctx);

/* Walk [t0, t1) of v in states.  Returns 0, -1 if v has no events. */
int p3d_vstates(const struct p3d_vrank *v, uint64_t t0, uint64_t t1,
                p3d_vstate_fn fn, void *ctx);

/* Sum the states of [t0, t1) of v into b. */
void p3d_vbreak_rank(const struct p3d_vrank *v, uint64_t t0, uint64_t t1,
                     struct p3d_vbreak *b);

/* Whether an event counts as NCCL activity for the breakdown. */
int p3d_vis_nccl(const struct p3d_vrank *v, const struct p3d_vev *e);

#endif /* P3D_HTML_TIME_H */
