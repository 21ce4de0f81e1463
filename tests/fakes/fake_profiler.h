/*
 * fake_profiler.h - the fake NCCL's profiler plugin loader and caller
 * (fake_profiler.c), private to libnccl.so.2 (fake).
 */
#ifndef FAKE_PROFILER_H
#define FAKE_PROFILER_H

#include <stddef.h>
#include <stdint.h>

#define FAKE_PROF_FUNCS 11      /* NCCL's ncclFunc_t values */
#define FAKE_PROF_GRAPH_MAX 16  /* calls one fake CUDA graph captures */

/* A call captured into the comm's fake CUDA graph (P3D_FAKE_GRAPH). */
struct fake_prof_captured {
    int func;
    size_t count;
    void *api;                  /* its CollApi/P2pApi handle */
};

/* The plugin's view of one communicator. */
struct fake_prof_comm {
    void *ctx;                  /* the plugin's context, NULL: none */
    uint64_t hash;              /* commHash, as NCCL computes it */
    int rank;
    int nranks;
    _Atomic uint64_t seq[FAKE_PROF_FUNCS];  /* coll.seqNumber per func */
    uint64_t n_calls;           /* capturable calls so far (the window) */
    int n_graph;
    struct fake_prof_captured graph[FAKE_PROF_GRAPH_MAX];
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
/* api: the call's CollApi/P2pApi handle (the task's parent, v5+). */
void fake_prof_task(struct fake_prof_comm *pc, int func, int peer,
                    size_t count, uint64_t t0, uint64_t t_end, void *api);
void fake_prof_launch_end(void);

/*
 * The API call itself, on the caller's thread (v5+; NULL otherwise): the
 * CollApi or P2pApi event, started and stopped as NCCL's collTaskAppend
 * does, graphCaptured as told; returns its handle.
 */
void *fake_prof_api(struct fake_prof_comm *pc, int func, size_t count,
                    int captured);

/* One network transfer's ProxyOp and first step, while the op runs. */
struct fake_prof_proxy {
    void *op, *step;
};
void fake_prof_proxy_begin(struct fake_prof_comm *pc, int is_send, int peer,
                           struct fake_prof_proxy *px);
void fake_prof_proxy_end(struct fake_prof_proxy *px);
/* Whether a plugin asked for proxy events at all (else no call needed). */
int fake_prof_proxy_wanted(void);

/*
 * P3D_FAKE_GRAPH=FIRST:LEN:REPLAYS: of a comm's ungrouped non-empty
 * collective calls (AllReduce .. Reduce), numbers FIRST..FIRST+LEN-1 are
 * "stream-captured": fake_prof_capturing says so, fake_prof_capture keeps
 * the call (it runs nothing: no task, no seqNumber) and, after the last
 * one, replays the graph REPLAYS times as NCCL does (docs/
 * nccl-profiler-notes.md section 1): on another thread (CUDA's host
 * callback), per replay a Group and per captured call a Coll whose
 * parent is the capture-time API handle and whose seqNumber is the
 * communicator's current one, advanced only when that handle or the
 * Group's is non-NULL (NCCL v2.28.9 src/plugin/profiler.cc:419-427),
 * and its KernelCh events.  The caller waits for the replays.
 */
int fake_prof_capturing(struct fake_prof_comm *pc, int func, size_t count,
                        int in_group);
void fake_prof_capture(struct fake_prof_comm *pc, int func, size_t count,
                       void *api);

#endif /* FAKE_PROFILER_H */
