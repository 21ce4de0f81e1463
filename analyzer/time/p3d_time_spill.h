/*
 * p3d_time_spill.h - pass 1 of the time analysis keeps what pass 2 loads
 * of each rank (its ops and kernel windows, not yet on the aligned clock)
 * in a compact temporary file, so pass 2 reads that instead of decoding
 * the rank file a third time (p3d_time_spill.c says why and how).
 */
#ifndef P3D_TIME_SPILL_H
#define P3D_TIME_SPILL_H

#include <stddef.h>
#include <stdint.h>

#include "p3d_bytes.h"

struct p3d_tl;
struct p3d_tload;
struct p3d_spill;

/*
 * A spill for a job of about n_ops ops, or NULL: turned off
 * (P3D_SPILL=0), no temporary file, or too little room for it where
 * $TMPDIR (else /tmp) lies.  Pass 2 then decodes the rank files again.
 */
struct p3d_spill *p3d_spill_open(uint64_t n_ops);
void p3d_spill_close(struct p3d_spill *sp);

/* What pass 2 would load of tl (just loaded by pass 1, unshifted) into
 * the file; tl->spill_len stays 0 when that failed.  buf: the loading
 * thread's scratch. */
void p3d_spill_put(struct p3d_spill *sp, struct p3d_tl *tl,
                   struct p3d_bytes *buf);

/* Load tl from the spill into ld's buffers, with d added to its times,
 * as p3d_time_load_rank would have; -1 (nothing lent) when tl has no
 * spill or it does not read back. */
int p3d_spill_get(struct p3d_spill *sp, struct p3d_tl *tl,
                  struct p3d_tload *ld, int64_t d, struct p3d_bytes *buf);

/* The encoding alone (unit tests): append tl to b; decode into tl
 * (buffers already lent), -1 if the bytes are damaged. */
void p3d_spill_encode(const struct p3d_tl *tl, struct p3d_bytes *b);
int p3d_spill_decode(struct p3d_tl *tl, const char *p, size_t n);

#endif /* P3D_TIME_SPILL_H */
