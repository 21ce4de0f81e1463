/*
 * p3d_nccl.h - what the NCCL wrapper files (p3d_nccl.c for ops and
 * groups, p3d_nccl_comm.c for communicator life cycle) share.
 *
 * Thread safety: all functions are safe from any thread; the group state
 * is per thread, like NCCL's own group depth.
 */
#ifndef P3D_NCCL_H
#define P3D_NCCL_H

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#include <nccl.h> /* its ncclGroupStart() has no (void) */
#pragma GCC diagnostic pop
#include <stdint.h>

#include "p3d_comm.h"
#include "p3d_shim.h"

/*
 * Resolve the real `fn` once into a static slot and declare `real` as a
 * pointer of fn's own type (the prototype comes from the real nccl.h).
 */
#define P3D_REAL(fn)                                                          \
    static void *p3d_slot_##fn;                                               \
    __typeof__(&fn) real = (__typeof__(&fn))p3d_resolve_cached(               \
        &p3d_slot_##fn, #fn, "p" #fn)

/*
 * Enter a wrapper: 1 if this call is to be recorded (outermost on the
 * thread and recording on; then p3d_nccl_leave must follow), else 0.
 */
static inline int p3d_nccl_enter(void)
{
    if (!p3d_guard_enter() || !p3d_core_enabled()) {
        p3d_guard_leave();
        return 0;
    }
    return 1;
}

static inline void p3d_nccl_leave(void)
{
    p3d_guard_leave();
}

/*
 * Learn nranks/rank/device of `comm` through ncclCommCount/UserRank/
 * CuDevice once NCCL says the comm is ready; emit P3D_REC_COMM_INFO when
 * `emit`.  Cheap no-op when already known.
 */
void p3d_nccl_learn(struct p3d_comm *c, ncclComm_t comm, int emit);

/*
 * A communicator init/split is about to block (p3d_nccl.c): starts the
 * watchdog and tracks the call in the in-flight table; returns the token
 * for p3d_nccl_init_leave, called when the real call returned.
 */
uint64_t p3d_nccl_init_enter(uint64_t comm_hash, int nranks, int rank);
void p3d_nccl_init_leave(uint64_t token);

/* Store ncclGetVersion in the file header (once). */
void p3d_nccl_note_version(void);

#endif /* P3D_NCCL_H */
