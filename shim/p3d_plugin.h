/*
 * p3d_plugin.h - internal API of NCCL op GPU times from NCCL's profiler
 * plugin (issue 24): libp3dtrace.so is also NCCL's profiler plugin, and
 * the NCCL kernel's own per-channel timestamps (KernelCh events) become
 * the op's P3D_REC_GPU_OP (source P3D_GPU_SRC_PLUGIN).
 *
 * Three parts:
 *   p3d_plugin_env.c   before NCCL starts: NCCL_PROFILER_PLUGIN = us,
 *                      unless the user set it;
 *   p3d_plugin_join.c  the op wrapper registers each op where the plugin
 *                      will find it: v5+, on its thread for the op's API
 *                      event, whose handle comes back as the task's
 *                      parent; v4, under (communicator, NCCL function,
 *                      NCCL's per-function seqNumber, or peer and ordinal
 *                      for p2p); the plugin takes the op id back;
 *   p3d_plugin.c       the exported ncclProfiler_v4/_v5/_v6 tables, the op
 *                      objects that gather their channels' timestamps,
 *                      the clock mapping and the record.
 *
 * Thread safety: every function here is lock-free and safe from any
 * thread (app threads register, NCCL's proxy thread takes).  Memory is
 * fixed tables plus one small context per communicator.
 */
#ifndef P3D_PLUGIN_H
#define P3D_PLUGIN_H

#include <stdint.h>

#include "p3d_hooks.h"

/* ---- p3d_plugin_env.c ------------------------------------------------ */

/* 1 if P3D_GPU_TIMING asks for the plugin ("plugin"; "auto" too when
 * p3d_plugin_auto_default()) and recording is not disabled. */
int p3d_plugin_env_wanted(void);
/* The user's own NCCL_PROFILER_PLUGIN when it names another library (or
 * "none"); NULL when it is unset or names libp3dtrace.so. */
const char *p3d_plugin_env_other(void);
/* Whether "auto" takes the plugin for NCCL ops (see p3d_plugin_env.c). */
int p3d_plugin_auto_default(void);
/* 1 if the process's NCCL calls reach this library's wrappers (we were
 * preloaded), 0 if NCCL loaded us as its plugin only. */
int p3d_plugin_env_interposes(void);

/* ---- p3d_plugin_join.c ----------------------------------------------- */

/* App thread, just before the real NCCL call (its op record written at
 * t_enter): register `op` (plugin mode). */
void p3d_plugin_join_op(const struct p3d_op_ctx *op, uint64_t t_enter);
/*
 * Plugin side: the op id registered under (comm, op kind, peer, seq),
 * removed from the table; 0 if none (not ours, overwritten, or never
 * registered).  peer is -1 for collectives.  *t_put (if not NULL): the
 * op's t_enter, before which no kernel of it starts.
 */
uint64_t p3d_plugin_join_take(uint64_t comm, uint8_t op, int32_t peer,
                                 uint64_t seq, uint64_t *t_put);
/*
 * v5+ (p3d_plugin_join_use_api(1)): an op is joined through the handle
 * the plugin gives its CollApi/P2pApi event, which NCCL starts on the
 * calling thread inside the call (our wrapper registered the op there
 * just before) and hands back as the Coll/P2p event's parentObj, also at
 * every CUDA-graph replay (docs/nccl-profiler-notes.md section 1).
 *
 * p3d_plugin_join_api: the API event of (comm, op) began on this thread;
 * returns the handle to give it: one naming the op registered here, the
 * one "captured" handle if graph_captured (that op is not joined), or
 * NULL (no op of ours: NCCL's own inner calls, AlltoAll's sends; or its
 * slot of the ring is being written by a call API_SLOTS older).
 */
void p3d_plugin_join_use_api(int on);
void *p3d_plugin_join_api(uint64_t comm, uint8_t op, int graph_captured);
/*
 * The op id a Coll/P2p event's parentObj names (once; 0: none, or not of
 * kind `op`), *t_put as for p3d_plugin_join_take.  *replay: 1 if the
 * parent is the "captured" handle, i.e. the event is a graph replay.
 */
uint64_t p3d_plugin_join_parent(const void *parent, uint8_t op,
                                uint64_t *t_put, int *replay);
/* Tests only: called while a handle's slot is half written (NULL). */
extern void (*p3d_plugin_join_midwrite)(void);
/* Graph-captured calls seen by p3d_plugin_join_api (closing note). */
uint64_t p3d_plugin_join_captured(void);
/* App thread, once the real call returned: forget the op it registered
 * (a call NCCL refused, or made no API event for, must not lend its op
 * to the thread's next API event). */
void p3d_plugin_join_call_done(void);
/* Plugin side: next ordinal of a P2p event of (comm, op, peer). */
uint64_t p3d_plugin_join_p2p_next(uint64_t comm, uint8_t op, int32_t peer);
/* Ops registered, and ops lost to a full table (for the closing note). */
void p3d_plugin_join_counts(uint64_t *put, uint64_t *lost);

/* ---- p3d_plugin_proxy.c ---------------------------------------------- */
struct p3d_np_proxy_op;
/* NCCL's proxy events (its proxy thread): a ProxyOp of the task whose op
 * is op_id (0: not ours) on communicator comm; a ProxyStep of a ProxyOp
 * handle; a step's state; the stop of either.  *h stays NULL when the
 * table is full. */
void p3d_plugin_proxy_op_start(void **h, uint64_t comm, uint64_t op_id,
                               const struct p3d_np_proxy_op *d);
void p3d_plugin_proxy_step_start(void **h, const void *parent, int step);
void p3d_plugin_proxy_record(void *h, int state);
void p3d_plugin_proxy_stop(void *h);
/* 1 if h is a handle p3d_plugin_proxy_* gave out. */
int p3d_plugin_proxy_owns(const void *h);
/* Whether proxy events are asked for (P3D_PLUGIN_PROXY, p3d_plugin_env.c). */
int p3d_plugin_env_proxy(void);

/* ---- p3d_plugin.c ---------------------------------------------------- */

/* Communicators NCCL initialised the plugin for (0: never loaded). */
int p3d_plugin_inits(void);
/* The ABI version NCCL loaded (4, 5 or 6), 0 if none. */
int p3d_plugin_version(void);
/* The trace's closing note about the plugin path (any thread, no CUDA). */
void p3d_plugin_note(void);

#endif /* P3D_PLUGIN_H */
