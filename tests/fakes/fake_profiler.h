/*
 * fake_profiler.h - the fake NCCL's profiler plugin loader and caller
 * (fake_profiler.c), private to libnccl.so.2 (fake).
 */
#ifndef FAKE_PROFILER_H
#define FAKE_PROFILER_H

#include <stddef.h>
#include <stdint.h>

#define FAKE_PROF_FUNCS 11      /* NCCL's ncclFunc_t values */

/* The plugin's view of one communicator. */
struct fake_prof_comm {
    void *ctx;                  /* the plugin's context, NULL: none */
    uint64_t hash;              /* commHash, as NCCL computes it */
    int rank;
    int nranks;
    _Atomic uint64_t seq[FAKE_PROF_FUNCS];  /* coll.seqNumber per func */
};

/* Load the plugin once (NCCL_PROFILER_PLUGIN), then call its init. */
void fake_prof_init(struct fake_prof_comm *pc, uint64_t hash,
                    const char *name, int nranks, int rank);
/* Comm destroy/abort: the plugin's finalize. */
void fake_prof_fini(struct fake_prof_comm *pc);

/*
 * One launch (a group or a single op) ran from t0 to its tasks' ends
 * (CLOCK_MONOTONIC ns, the fake GPU's time): begin, one task per
 * kernel-level task as NCCL's taskAppend makes them, end.  func is
 * ncclFunc_t's value (0 Broadcast .. 7 Recv); peer: p2p peer, else -1.
 */
void fake_prof_launch_begin(struct fake_prof_comm *pc);
void fake_prof_task(struct fake_prof_comm *pc, int func, int peer,
                    size_t count, uint64_t t0, uint64_t t_end);
void fake_prof_launch_end(void);

#endif /* FAKE_PROFILER_H */
