/*
 * p3d_commhash.h - NCCL's own communicator hash (commHash), recomputed in
 * the shim so our traces join NCCL's logs, RAS and profiler plugins.
 *
 * Algorithm of NCCL's src/include/bitops.h (eatHash/digestHash/getHash)
 * and src/init.cc: root comm = getHash(uniqueId.internal, 128); split
 * child = digest(eat(parent hash, 8), eat(splitCount, 4), eat(color, 4));
 * ncclCommShrink uses splitCount 0 and color 0.  Pure functions.
 */
#ifndef P3D_COMMHASH_H
#define P3D_COMMHASH_H

#include <stddef.h>
#include <stdint.h>

/* NCCL getHash(bytes, size). */
uint64_t p3d_commhash_bytes(const void *bytes, size_t size);

/* commHash of a root communicator from its 128-byte unique id. */
uint64_t p3d_commhash_root(const void *unique_id);

/* commHash of a split (or shrink: split_count 0, color 0) child. */
uint64_t p3d_commhash_split(uint64_t parent, int split_count, int color);

#endif /* P3D_COMMHASH_H */
