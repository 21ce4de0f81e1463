/*
 * p3d_nccl_profiler_abi.h - the part of NCCL's profiler plugin ABI that
 * p3dtrace uses (v4: NCCL 2.27, v5: NCCL 2.28, v6: NCCL 2.29+), declared
 * in our own words because NCCL installs no profiler header and its files
 * are not ours to copy.
 *
 * Sources: docs/research/nccl-profiler-abi.md (v4, v5: NVIDIA/nccl
 * src/include/plugin/nccl_profiler.h, profiler/profiler_v4.h, _v5.h at
 * v2.27.3-1 and v2.28.9-1) and docs/nccl-profiler-notes.md section 2 (v6:
 * profiler_v6.h at v2.29.2-1 .. v2.30.7-1).  Only the layouts matter; the
 * sizes and the offsets we read are checked below (LP64).  v6 keeps v5's
 * function table, descriptor head and union members, and adds copy-engine
 * members that fit in v5's 88-byte union, so one union serves both.
 */
#ifndef P3D_NCCL_PROFILER_ABI_H
#define P3D_NCCL_PROFILER_ABI_H

#include <stddef.h>
#include <stdint.h>

/* Event type bits (eDescr.type and the activation mask). */
#define P3D_NP_GROUP 0x1
#define P3D_NP_COLL 0x2
#define P3D_NP_P2P 0x4
#define P3D_NP_PROXY_OP 0x8     /* a network transfer on one channel */
#define P3D_NP_PROXY_STEP 0x10  /* one step (slice) of it */
#define P3D_NP_KERNEL_CH 0x40
#define P3D_NP_COLL_API 0x200   /* v5+: the API call, on the caller's thread */
#define P3D_NP_P2P_API 0x400

/* recordEventState: the KernelCh stop state; its args carry the stop. */
#define P3D_NP_STATE_KERNEL_CH_STOP 22
/* ProxyStep states (NCCL's proxy thread, net transport; v4+ numbers). */
#define P3D_NP_STEP_SEND_GPU_WAIT 8    /* waits for the GPU's data */
#define P3D_NP_STEP_SEND_WAIT 9        /* posted to the network */
#define P3D_NP_STEP_RECV_WAIT 10       /* waits for the peer's data */
#define P3D_NP_STEP_RECV_FLUSH_WAIT 11 /* flushing it to the GPU */
#define P3D_NP_STEP_RECV_GPU_WAIT 12   /* waits for the GPU to take it */
#define P3D_NP_STEP_SEND_PEER_WAIT 20  /* waits for the receiver's buffer */

/* ncclResult_t's success value (all callbacks return an int enum). */
#define P3D_NP_SUCCESS 0

typedef void (*p3d_np_logger_fn)(int level, unsigned long flags,
                                 const char *file, int line,
                                 const char *fmt, ...);

/* The union members read by p3dtrace; the others are padding here. */
struct p3d_np_coll {
    uint64_t seq_number;      /* per comm, per NCCL function, 0-based */
    const char *func;         /* "AllReduce", ... */
    const void *send_buff;
    void *recv_buff;
    size_t count;
    int root;
    const char *datatype;
    uint8_t n_channels;
    uint8_t n_warps;
    const char *algo;
    const char *proto;
};

struct p3d_np_p2p {
    const char *func;         /* "Send" or "Recv" */
    void *buff;
    const char *datatype;
    size_t count;
    int peer;
    uint8_t n_channels;       /* garbage through NCCL 2.28's v4 adapter */
};

struct p3d_np_kernel_ch {
    uint8_t channel_id;
    uint64_t p_timer;         /* GPU globaltimer ns at the channel's start */
};

/* ProxyOp: started by NCCL's proxy thread for one channel of a task's
 * network send or receive (v2.28.9 src/plugin/profiler.cc:478-497; the
 * parent is the task's handle). */
struct p3d_np_proxy_op {
    int32_t pid;
    uint8_t channel_id;
    int peer;                 /* the remote rank, in the communicator */
    int n_steps;
    int chunk_size;
    int is_send;
};

struct p3d_np_proxy_step {
    int step;                 /* the parent ProxyOp's step, from 0 */
};

/* v5+ API events; graphCaptured: the call was made under stream capture. */
struct p3d_np_coll_api {
    const char *func;
    size_t count;
    const char *datatype;
    int root;
    void *stream;
    _Bool graph_captured;
};

struct p3d_np_p2p_api {
    const char *func;
    size_t count;
    const char *datatype;
    void *stream;
    _Bool graph_captured;
};

union p3d_np_descr_body {
    struct p3d_np_coll coll;
    struct p3d_np_coll_api coll_api;  /* v5+ only */
    struct p3d_np_p2p_api p2p_api;    /* v5+ only */
    struct p3d_np_p2p p2p;
    struct p3d_np_kernel_ch kernel_ch;
    struct p3d_np_proxy_op proxy_op;
    struct p3d_np_proxy_step proxy_step;
    char size_v5[88];         /* v5's coll adds parentGroup at 104; v6's
                               * largest (ceColl) is 88 too */
};

/* v4 event descriptor (uint8_t type). */
struct p3d_np_descr_v4 {
    uint8_t type;
    void *parent_obj;
    int rank;
    union {
        struct p3d_np_coll coll;
        struct p3d_np_p2p p2p;
        struct p3d_np_kernel_ch kernel_ch;
        char size[80];
    } u;
};

/* v5 event descriptor (uint64_t type; the union is v4's, plus API events). */
struct p3d_np_descr_v5 {
    uint64_t type;
    void *parent_obj;
    int rank;
    union p3d_np_descr_body u;
};

/* v6 event descriptor: v5's, with copy-engine members in the union. */
typedef struct p3d_np_descr_v5 p3d_np_descr_v6;

/* State arguments: an 8-byte union; KernelCh stop puts pTimer there. */
union p3d_np_state_args {
    size_t trans_size;
    int appended_proxy_ops;
    void *data;
    uint64_t kernel_ch_p_timer;
};

struct p3d_np_v4 {
    const char *name;
    int (*init)(void **context, int *activation_mask, const char *comm_name,
                uint64_t comm_hash, int n_nodes, int nranks, int rank,
                p3d_np_logger_fn logfn);
    int (*start_event)(void *context, void **handle,
                       struct p3d_np_descr_v4 *descr);
    int (*stop_event)(void *handle);
    int (*record_event_state)(void *handle, int state,
                              union p3d_np_state_args *args);
    int (*finalize)(void *context);
};

struct p3d_np_v5 {
    const char *name;
    int (*init)(void **context, uint64_t comm_id, int *activation_mask,
                const char *comm_name, int n_nodes, int nranks, int rank,
                p3d_np_logger_fn logfn);
    int (*start_event)(void *context, void **handle,
                       struct p3d_np_descr_v5 *descr);
    int (*stop_event)(void *handle);
    int (*record_event_state)(void *handle, int state,
                              union p3d_np_state_args *args);
    int (*finalize)(void *context);
};

/* v6: v5's table with the v6 descriptor (same layout). */
struct p3d_np_v6 {
    const char *name;
    int (*init)(void **context, uint64_t comm_id, int *activation_mask,
                const char *comm_name, int n_nodes, int nranks, int rank,
                p3d_np_logger_fn logfn);
    int (*start_event)(void *context, void **handle, p3d_np_descr_v6 *descr);
    int (*stop_event)(void *handle);
    int (*record_event_state)(void *handle, int state,
                              union p3d_np_state_args *args);
    int (*finalize)(void *context);
};

_Static_assert(sizeof(struct p3d_np_descr_v4) == 104, "v4 descriptor");
_Static_assert(sizeof(struct p3d_np_descr_v5) == 112, "v5 descriptor");
_Static_assert(offsetof(struct p3d_np_descr_v5, u) == 24, "union at 24");
_Static_assert(offsetof(struct p3d_np_descr_v4, u) == 24, "union at 24");
_Static_assert(offsetof(struct p3d_np_coll, n_channels) == 80 - 24,
               "coll.nChannels at 80");
_Static_assert(offsetof(struct p3d_np_p2p, peer) == 56 - 24, "p2p.peer");
_Static_assert(offsetof(struct p3d_np_proxy_op, channel_id) == 28 - 24 &&
                   offsetof(struct p3d_np_proxy_op, peer) == 32 - 24 &&
                   offsetof(struct p3d_np_proxy_op, is_send) == 44 - 24,
               "proxyOp members at 28, 32 and 44");
_Static_assert(offsetof(struct p3d_np_p2p, n_channels) == 60 - 24,
               "p2p.nChannels at 60");
_Static_assert(offsetof(struct p3d_np_kernel_ch, p_timer) == 32 - 24,
               "kernelCh.pTimer at 32");
_Static_assert(offsetof(struct p3d_np_coll_api, graph_captured) == 40,
               "collApi.graphCaptured at 64");
_Static_assert(offsetof(struct p3d_np_p2p_api, graph_captured) == 32,
               "p2pApi.graphCaptured at 56");
_Static_assert(sizeof(union p3d_np_state_args) == 8, "state args");
_Static_assert(sizeof(struct p3d_np_v6) == 48, "v6 function table");
_Static_assert(sizeof(struct p3d_np_v5) == 48, "function table");

#endif /* P3D_NCCL_PROFILER_ABI_H */
