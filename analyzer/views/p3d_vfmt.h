/*
 * p3d_vfmt.h - the formatting every view shares, so that the text, the
 * HTML and --compare say a figure the same way.  Views include this, not
 * one another.
 */
#ifndef P3D_VFMT_H
#define P3D_VFMT_H

#include <stddef.h>
#include <stdint.h>

/* "1.5 MiB" */
void p3d_fmt_bytes(char *buf, size_t n, double bytes);

/*
 * An "issued" or "unmatched" entry of the matcher as words (buf) and its
 * kind ("incomplete" / "unmatched"), shared by the text and HTML reports.
 */
struct p3d_mismatch;
const char *p3d_mm_other_text(const struct p3d_mismatch *x,
                              const char *lab, char *buf, size_t n);

/* A pipeline stage's bubble as two sums that add up to it, for the text
 * and the HTML alike. */
struct p3d_tstage;
void p3d_fmt_stage(char *buf, size_t n, const struct p3d_tstage *g);

/* The ranks whose traces lost records (p3d_lost_records) as a list in
 * buf, and (lost, if not NULL) how many records they lost in all, for the
 * matching and the hang sections; returns how many ranks. */
struct p3d_job;
int p3d_fmt_lost_ranks(char *buf, size_t n, const struct p3d_job *job,
                       uint64_t *lost);

#endif /* P3D_VFMT_H */
