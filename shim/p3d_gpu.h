/*
 * p3d_gpu.h - internal API of the GPU timeline (issue 4): GPU start/end of
 * NCCL ops, merged compute spans, clock conversion.
 *
 * Three backends sit behind the hooks of p3d_hooks.h (p3d_gpu_hooks.c):
 *   cupti   p3d_cupti.c: CUPTI activity records (all kernels and copies),
 *           NCCL kernels linked to ops by external correlation ids;
 *   events  p3d_gpu_events.c: CUDA events recorded around each op on its
 *           stream, polled by the background thread (p3d_gpu_thread.c);
 *   plugin  p3d_plugin.c: NCCL's profiler plugin (the NCCL kernel's own
 *           channel timestamps), kernels from CUPTI in windows as auto;
 *   off     nothing.
 * P3D_GPU_TIMING=auto (the default) times NCCL ops with events and lets
 * CUPTI record kernels in windows (p3d_gpu_window.c); without events it
 * takes CUPTI for everything.  Every CUDA/CUPTI function
 * is called through a pointer resolved at run time (p3d_gpu_cuda.c).
 */
#ifndef P3D_GPU_H
#define P3D_GPU_H

#include <stddef.h>
#include <stdint.h>

#include "p3d_format.h"
#include "p3d_hooks.h"

enum p3d_gpu_mode {
    P3D_GPU_OFF = 0,
    P3D_GPU_CUPTI,
    P3D_GPU_EVENTS,
    P3D_GPU_AUTO,
    P3D_GPU_PLUGIN         /* NCCL's profiler plugin (p3d_plugin.h) */
};

/* Parse P3D_GPU_TIMING ("auto" if unset or unknown, warned). */
enum p3d_gpu_mode p3d_gpu_mode_parse(const char *s);

/*
 * Whether this process should say that processes of its job share a GPU
 * (p3d_gpu_shared.c): creates the marker .gpu-HOST-BUS in the job folder
 * open as `job_dfd` (-1: no folder, returns 0); 1 only
 * for the one process that finds it made by another process of the job
 * and then makes the ".warned" marker, 0 otherwise (first user, already
 * said, or no writable folder).  A marker whose writer (its pid, same
 * host) has exited, or without a pid and older than
 * P3D_GPU_MARKER_STALE_S, is a previous run's and is replaced.
 */
#define P3D_GPU_MARKER_STALE_S 600
int p3d_gpu_shared_claim(int job_dfd, const char *host, const char *bus);

/* What times the NCCL ops now, in words for notes ("CUDA events"). */
const char *p3d_gpu_ops_source(void);

/* Under CUPTI chosen by default: warn once per shared GPU of the job. */
void p3d_gpu_warn_shared(void);

/* ---- compute spans (p3d_gpu_span.c) ---------------------------------- */

#define P3D_SPAN_GAP_NS 10000u           /* merge gaps below 10 us */
#define P3D_SPAN_MAX_NS 10000000u        /* close a span after 10 ms */
#define P3D_SPAN_STREAMS 256             /* (device, stream, kind) slots */

/* One open span per (device, stream, kind). */
struct p3d_span_open {
    uint64_t stream;
    uint64_t start;
    uint64_t end;
    uint64_t busy;
    uint32_t n;
    uint16_t device;
    uint8_t kind;
    uint8_t used;
};

/* Receives every closed span (a record writer, or a test). */
typedef void (*p3d_span_emit_fn)(const struct p3d_span_open *s, void *arg);

struct p3d_span_set {
    struct p3d_span_open slot[P3D_SPAN_STREAMS];
    uint64_t gap_ns;
    uint64_t max_ns;
    uint64_t overflow;     /* items emitted unmerged: table full */
    p3d_span_emit_fn emit;
    void *arg;
};

void p3d_span_init(struct p3d_span_set *set, p3d_span_emit_fn emit,
                   void *arg);
/* Add one kernel/copy [start, end) of `kind` on (device, stream). */
void p3d_span_add(struct p3d_span_set *set, uint16_t device, uint64_t stream,
                  uint8_t kind, uint64_t start, uint64_t end);
/* Close the open spans of (device, stream) (an NCCL kernel ran there). */
void p3d_span_cut(struct p3d_span_set *set, uint16_t device,
                  uint64_t stream);
/* Close every open span. */
void p3d_span_flush(struct p3d_span_set *set);
/* Write a closed span as a P3D_REC_GPU_SPAN record (emit callback). */
void p3d_span_write(const struct p3d_span_open *s, void *arg);

/* ---- clock pairing (p3d_gpu_clock.c) --------------------------------- */

/* Offset from a device/CUPTI clock to host CLOCK_MONOTONIC. */
struct p3d_clock_map {
    int64_t offset;        /* host = gpu + offset */
    uint64_t uncert;       /* half the bracketing host interval */
    int valid;
};

typedef uint64_t (*p3d_gpu_clock_fn)(void);

/*
 * Pair `gpu_clock` with p3d_now(): best (narrowest) of `tries` brackets
 * host0 <= gpu <= host1.  Writes a P3D_REC_CLOCK_SYNC for `device` and
 * stores the result in *map.  Returns 0, or -1 if the clock failed.
 */
int p3d_clock_pair(struct p3d_clock_map *map, p3d_gpu_clock_fn gpu_clock,
                   int device, int tries);
uint64_t p3d_clock_to_host(const struct p3d_clock_map *map, uint64_t gpu);

/* ---- op keys shared by the backends (p3d_gpu_hooks.c) ---------------- */

#define P3D_GPU_GROUP_KEY 0x8000000000000000ull  /* external id of a group */
#define P3D_GPU_GROUP_OPS 64                     /* ops remembered/group */
#define P3D_GPU_GROUPS 1024                      /* groups remembered */

/*
 * Ops of one outermost group, published by the app thread at
 * ncclGroupEnd and read by the CUPTI thread to map a group's kernels back
 * to its ops.
 */
struct p3d_gpu_group {
    uint64_t key;          /* P3D_GPU_GROUP_KEY | sequence, 0 = free */
    uint32_t n_ops;
    uint32_t reserved;
    uint64_t op_id[P3D_GPU_GROUP_OPS];
};

/*
 * Copy the group published under `key` into *out; 0 if it was already
 * overwritten by a newer group (then its ops get no GPU time).
 */
int p3d_gpu_group_get(uint64_t key, struct p3d_gpu_group *out);

/* Write one P3D_REC_GPU_OP record. */
void p3d_gpu_op_write(uint8_t source, uint64_t op_id, uint64_t start,
                      uint64_t end);

/* ---- backends --------------------------------------------------------- */

/* CUPTI (p3d_cupti.c).  start returns 0 or -1 (unavailable/busy). */
int p3d_cupti_start(int required);
void p3d_cupti_push(uint64_t key);
void p3d_cupti_pop(void);
/* CUPTI stream id of a cudaStream_t (cached per thread); 0 if unknown. */
uint32_t p3d_cupti_stream_id(void *stream);

/* Launch order per stream (p3d_cupti_order.c), see there. */
void p3d_cupti_order_push(uint32_t stream, uint64_t key, uint32_t kernels);
int p3d_cupti_order_match(uint32_t stream, uint64_t *key);
void p3d_cupti_order_linked(uint32_t stream, uint64_t key);
void p3d_cupti_tick(void);          /* background thread: flush, clock */
void p3d_cupti_fini(void);

/* Kernel-record windows (p3d_gpu_window.c): P3D_GPU_WINDOW. */
#define P3D_GPU_WINDOW_FIRST_S 300
#define P3D_GPU_WINDOW_ON_S 30
#define P3D_GPU_WINDOW_EVERY_S 600
enum { P3D_WIN_NONE, P3D_WIN_SOME, P3D_WIN_ALL };
struct p3d_gpu_window {
    uint64_t first_ns, on_ns, every_ns;
    int mode;               /* P3D_WIN_* */
};
/* 0, or -1 if `s` is not understood (then *w holds the default). */
int p3d_gpu_window_parse(const char *s, struct p3d_gpu_window *w);
/* 1 if kernels are recorded `since_ns` after GPU timing started, at
 * wall-clock time `wall_ns` (CLOCK_REALTIME). */
int p3d_gpu_window_want(const struct p3d_gpu_window *w, uint64_t since_ns,
                        uint64_t wall_ns);
int p3d_gpu_window_config(void);   /* read the variable; 0 = no windows */
void p3d_gpu_window_begin(void);
void p3d_gpu_window_tick(uint64_t now);   /* background thread */
void p3d_gpu_window_describe(char *buf, size_t len);

/* CUPTI for kernel windows only: no NCCL op linking, kinds off until
 * p3d_cupti_kernels(1).  0, or -1 (unavailable/busy). */
int p3d_cupti_start_windowed(void);
/* Background thread: kernel and copy records on (0, or -1 if CUPTI
 * refused one; then none is left on) or off; write the spans still open
 * a moment after a window closed. */
int p3d_cupti_kernels(int on);
void p3d_cupti_close_spans(void);

/* CUDA events (p3d_gpu_events.c). */
int p3d_events_start(void);
void p3d_events_op_before(const struct p3d_op_ctx *op);
void p3d_events_op_after(const struct p3d_op_ctx *op, int ret);
void p3d_events_group_end_after(uint32_t group_id);
int p3d_events_tick(void);          /* background thread: poll, 1 = busy */
void p3d_events_drain(uint64_t max_ns);
void p3d_cupti_flush(void);         /* deliver completed records now */

/* Background thread (p3d_gpu_thread.c): starts once, blocks signals. */
void p3d_gpu_thread_start(void);
void p3d_gpu_thread_stop(void);

#endif /* P3D_GPU_H */
