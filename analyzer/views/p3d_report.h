/*
 * p3d_report.h - the default text report and its pieces.
 */
#ifndef P3D_REPORT_H
#define P3D_REPORT_H

#include <stdio.h>

#include "p3d_job.h"

/* --detail: what the text report adds to the answer (default none). */
enum {
    P3D_DETAIL_RANKS = 1, /* per rank, per communicator, per op kind */
    P3D_DETAIL_COMMS = 2, /* every communicator, labels, message sizes */
    P3D_DETAIL_MAP = 4,   /* the coordinate map stage by stage */
    P3D_DETAIL_TIME = 8,  /* per iteration, per host clock, wait states */
    P3D_DETAIL_HANG = 16, /* every rank of a chain of waits */
    P3D_DETAIL_ALL = 31
};
/* "ranks,comms" -> bits; -1 (message printed) for an unknown word. */
int p3d_detail_parse(const char *spec, unsigned *out);

/*
 * The text report.  It leads with the answer: job and layout, step time,
 * where the time goes and the verdict, the bubble, hang or mismatches,
 * the findings with next steps, the seed table row; `detail` adds the
 * sections named above after it.
 */
void p3d_report_text(FILE *f, const struct p3d_job *job, unsigned detail);
/* The seed's TP x PP x DP picture: per stage its ranks and groups when
 * stages is set, then the job's groups of each kind. */
void p3d_report_coords(FILE *f, const struct p3d_job *job, int stages);
/* The time section (views/p3d_seedrow.c) and the seed table row. */
void p3d_time_report(FILE *f, const struct p3d_job *job, unsigned detail);
void p3d_seed_report(FILE *f, const struct p3d_job *job);
/* The hang section (views/p3d_hang_out.c); P3D_DETAIL_HANG: every rank
 * of the chain of waits, else the first P3D_CHAIN_SHOWN. */
#define P3D_CHAIN_SHOWN 16
void p3d_hang_report(FILE *f, const struct p3d_job *job, unsigned detail);
/* The findings, each with its next step (views/p3d_report_find.c). */
void p3d_report_findings(FILE *f, const struct p3d_job *job,
                         unsigned detail);


#endif /* P3D_REPORT_H */
