/*
 * p3d_clock_solve.h - the causality bounds between hosts and their
 * solution (p3d_clock.c gathers the bounds from joined instances).
 *
 * A bound (a, b, v) says D[b] - D[a] >= v, D[h] being what is added to
 * host h's clock.  Up to P3D_CBOUNDS_DENSE hosts the bounds are a hosts x
 * hosts table and every chain of hosts is tightened at once
 * (Floyd-Warshall); beyond, a 12k-host job would need 1.8 GB for that
 * table and 2e12 steps, so the bounds that exist are kept sparse and the
 * two brackets each host needs (against host 0, either way) come from
 * two single-source shortest-path runs (Bellman-Ford over the bounds
 * kept).  Where the bounds do not contradict each other both give the
 * same distances, hence the same answer (tests/unit/test_time_clock.c
 * compares them); where they do, both report the host's bracket as
 * contradicted, by amounts that depend on the method.
 */
#ifndef P3D_CLOCK_SOLVE_H
#define P3D_CLOCK_SOLVE_H

#include <stdint.h>

#define P3D_CBOUNDS_DENSE 1024

struct p3d_cbounds;

/* One host's solution against host 0: D (0 without a bracket), half the
 * bracket, how much it contradicts (0: none), bounds used. */
struct p3d_csol {
    int64_t d, uncert, contra;
    int n_inst;
    int solved; /* bracketed both ways: d and the rest are set */
};

/* Bounds of nh hosts; sparse forces the sparse store at any size. */
struct p3d_cbounds *p3d_cbounds_new(int nh, int sparse);
void p3d_cbounds_add(struct p3d_cbounds *c, int a, int b, int64_t v);
/* Bounds as bytes, and added into another store of as many hosts: the
 * largest v of each pair and the counts summed, as if every bound had
 * been added to it (p3d-analyze-mpi: each process holds the bounds of
 * the communicators it owns).  Merge returns -1 if the bytes are bad. */
struct p3d_bytes;
struct p3d_bytes_in;
void p3d_cbounds_pack(const struct p3d_cbounds *c, struct p3d_bytes *b);
int p3d_cbounds_merge(struct p3d_cbounds *c, struct p3d_bytes_in *in);
/* Fill sol[nh] (sol[0]: host 0, unsolved). */
void p3d_cbounds_solve(const struct p3d_cbounds *c, struct p3d_csol *sol);
void p3d_cbounds_free(struct p3d_cbounds *c);

#endif /* P3D_CLOCK_SOLVE_H */
