/*
 * p3d_comm.h - the shim's table of live NCCL communicators: what each
 * ncclComm_t of this process is (hash, parent, size, rank, device) and
 * the counters that key ops across ranks (per-comm collective sequence,
 * per (comm, peer) send and receive sequences).
 *
 * Invariants / thread safety:
 *   - p3d_comm_find is lock-free (an open-addressing table, entries are
 *     published with a release store of their key); it is the hot path.
 *   - add/set_info/remove take a mutex; they run at comm init and end.
 *   - Per-peer arrays are allocated when the comm size becomes known
 *     (init, or later for splits), never per call.
 *   - Entries are never freed while the process lives; a removed entry
 *     is reused by a later add (so memory is bounded by the table size).
 */
#ifndef P3D_COMM_H
#define P3D_COMM_H

#include <stdint.h>

#define P3D_COMM_TABLE 4096

struct p3d_comm {
    uintptr_t key;            /* ncclComm_t value; 0 empty, 1 removed */
    uint64_t hash;
    uint64_t parent_hash;
    int32_t nranks;           /* -1 until known */
    int32_t rank;
    int32_t device;
    int32_t info_known;       /* nranks/rank/device learned */
    int32_t info_tries;       /* attempts to learn them */
    int32_t split_count;      /* this comm's own ncclCommSplit counter */
    int32_t last_async_error; /* last non-success GetAsyncError result */
    int32_t unknown;          /* not seen at init: hash is the pointer */
    uint64_t coll_seq;
    uint64_t *peer_seq;       /* [0, nranks): sends, [nranks, 2n): recvs */
};

/* Lock-free lookup; NULL if the comm was never added (or removed). */
struct p3d_comm *p3d_comm_find(const void *comm);

/*
 * Add or refresh the entry of `comm`.  nranks/rank/device may be -1
 * (unknown yet).  Returns the entry or NULL when the table is full.
 */
struct p3d_comm *p3d_comm_add(const void *comm, uint64_t hash,
                              uint64_t parent_hash, int nranks, int rank,
                              int device);

/*
 * Find `comm`, or add it as unknown (hash = pointer value, flagged), so
 * that ops on comms created before the shim saw them still get sequence
 * numbers.  NULL only when the table is full.  Inline: a comm in its home
 * slot (the common case) costs one hash and one load.
 */
struct p3d_comm *p3d_comm_get_slow(const void *comm);
extern struct p3d_comm p3d_comm_table[P3D_COMM_TABLE];

static inline unsigned p3d_comm_slot(uintptr_t key)
{
    uint64_t h = (uint64_t)key * 0x9e3779b97f4a7c15ull;

    return (unsigned)(h >> 32) & (P3D_COMM_TABLE - 1);
}

static inline struct p3d_comm *p3d_comm_get(const void *comm)
{
    uintptr_t key = (uintptr_t)comm;
    struct p3d_comm *c = &p3d_comm_table[p3d_comm_slot(key)];

    if (__builtin_expect(key > 1 &&
                         __atomic_load_n(&c->key, __ATOMIC_ACQUIRE) == key,
                         1))
        return c;
    return p3d_comm_get_slow(comm);
}

/* Record nranks/rank/device; allocates the per-peer arrays once. */
void p3d_comm_set_info(struct p3d_comm *c, int nranks, int rank, int device);

/* Forget `comm` (destroy/abort).  Safe if absent. */
void p3d_comm_remove(const void *comm);

/*
 * Next collective sequence number (0-based) of `c`.  Like the p2p one
 * below, not atomic against a second thread issuing on the same comm at
 * the same moment, which NCCL forbids.
 */
uint64_t p3d_comm_next_coll(struct p3d_comm *c);

/*
 * Next send (is_recv 0) or receive (is_recv 1) sequence number between
 * this rank and `peer`; UINT64_MAX if the peer is out of range or the
 * comm size is not known.
 */
uint64_t p3d_comm_next_p2p(struct p3d_comm *c, int peer, int is_recv);

/* Advance the comm's split counter; returns the new value (NCCL's ++). */
int p3d_comm_next_split(struct p3d_comm *c);

/* Empty the table (tests only; not thread-safe). */
void p3d_comm_clear(void);

#endif /* P3D_COMM_H */
