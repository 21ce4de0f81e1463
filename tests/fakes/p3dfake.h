/*
 * p3dfake.h - the private interface between the CPU test doubles.
 *
 * CI has no GPU.  build/fakes/libcudart.so.13 and build/fakes/libnccl.so.2
 * stand in for the real libraries; this header is what the doubles (and
 * the GPU helper's fake CUPTI) say to each other beyond the public CUDA
 * and NCCL APIs.
 *
 * Kernels.  cudaLaunchKernel(func, grid, block, args, shmem, stream) runs
 * synchronously on the calling thread: args[0] must point to a uint64_t
 * duration in nanoseconds and the fake sleeps (nanosleep) that long.  The
 * kernel's name is the dynamic symbol name of func (dladdr), else
 * "p3dfake_kernel_<address>".
 *
 * Listener.  Every kernel and every fake-NCCL kernel is reported, after it
 * completed, to one process-wide listener:
 *     fn(name, stream, start_ns, end_ns, is_nccl)
 * with CLOCK_MONOTONIC nanoseconds of the host.  Fake NCCL reports one
 * kernel per communicator per launch: an ungrouped op is one kernel; the
 * ops of one communicator inside ncclGroupStart/End form one kernel that
 * starts at the outermost ncclGroupEnd and ends when the last of them
 * completed, named after the first op (all-p2p groups are
 * "ncclDevKernel_SendRecv").  Names look like real NCCL's, e.g.
 * "ncclDevKernel_AllReduce_Sum_f32_RING_LL".  A 1-rank in-place
 * collective launches no kernel (as real NCCL).  The listener is called
 * on the thread that ran the work; it must be cheap and must not call
 * back into the fakes.
 *
 * Calls.  Fake NCCL also reports, to one process-wide call observer, the
 * span of every launch: from the entry of its first op into the fake (an
 * ungrouped op's own), or from an event recorded on its stream for it
 * before that (a timer's start event), until its ops completed
 * (asynchronous mode: until the launch returned; a group without ops
 * reports nothing), in
 * CLOCK_MONOTONIC ns, on the calling thread.  In synchronous mode that is
 * the time from when the caller started issuing it to its completion,
 * which a per-op timer's start and end events bracket.
 *
 * Events.  cudaEventRecord stores the host CLOCK_MONOTONIC time at which
 * the stream's work up to that point is complete.  Work is synchronous, so
 * the records right after an NCCL launch on a stream, as many as the
 * launch had ops there (one end event per op), get the time its kernels
 * ended (as on a GPU, where they are queued behind the running kernel,
 * however late the host comes back to record them); any other record,
 * after a compute kernel too, gets the time of the record call.
 *
 * Asynchronous mode (P3D_FAKE_ASYNC=1, off by default).  Streams behave
 * like GPU streams: cudaLaunchKernel, NCCL ops (at the outermost
 * ncclGroupEnd, on the first op's stream), cudaEventRecord,
 * cudaStreamWaitEvent and the *Async copies only enqueue; one worker thread
 * per stream runs them in order, so a rank whose peer never arrives has a
 * blocked stream, not a blocked host thread: the NCCL call returns and its
 * completion never comes (cudaEventQuery stays cudaErrorNotReady).
 * cudaStreamSynchronize, cudaDeviceSynchronize, cudaEventSynchronize,
 * cudaMemcpy, cudaMemset and cudaFree wait.  Listeners are then called on
 * the stream's worker thread, so thread-local state of the launching thread
 * (e.g. a pushed external correlation id) is not visible to them.
 *
 * Environment read by the doubles:
 *   P3D_FAKE_NDEV      number of fake devices (default 8)
 *   P3D_FAKE_ASYNC     "1": asynchronous streams (above)
 *   P3D_FAKE_SHM_DIR   directory of the fake NCCL rendezvous files
 *                      (default /dev/shm); files are unlinked once every
 *                      member has joined
 */
#ifndef P3DFAKE_H
#define P3DFAKE_H

#include <stdint.h>

typedef void (*p3dfake_kernel_listener_fn)(const char *name, void *stream,
                                           uint64_t start_ns,
                                           uint64_t end_ns, int is_nccl);

/* Exported by libcudart.so.13 (fake).  NULL unregisters. */
void p3dfake_set_kernel_listener(p3dfake_kernel_listener_fn fn);

/*
 * Exported by libcudart.so.13 (fake): a second, independent listener slot
 * for the simulator's ground truth, so it does not displace fake CUPTI.
 */
void p3dfake_set_kernel_observer(p3dfake_kernel_listener_fn fn);

/* Exported by libcudart.so.13 (fake): the call observer (see "Calls");
 * NULL unregisters.  p3dfake_report_call is what fake NCCL calls. */
typedef void (*p3dfake_call_observer_fn)(uint64_t start_ns, uint64_t end_ns);
void p3dfake_set_call_observer(p3dfake_call_observer_fn fn);
void p3dfake_report_call(uint64_t start_ns, uint64_t end_ns);

/* Exported by libcudart.so.13 (fake): 1 in asynchronous mode. */
int p3dfake_async(void);
/* Fake NCCL, per call: whether it kept the call on `stream` in its fake
 * CUDA graph (cudaStreamIsCapturing then says so, on this thread). */
void p3dfake_mark_captured(void *stream, int captured);

/*
 * Exported by libcudart.so.13 (fake): run fn(arg) on the stream's worker
 * after the work already queued there; 0 if queued, -1 in synchronous mode
 * (the caller runs the work itself).
 */
int p3dfake_stream_enqueue(void *stream, void (*fn)(void *), void *arg);

/* Exported by libcudart.so.13 (fake): report one kernel interval. */
void p3dfake_report_kernel(const char *name, void *stream,
                           uint64_t start_ns, uint64_t end_ns, int is_nccl);

/* Exported by libcudart.so.13 (fake), called by fake NCCL after a
 * synchronous launch: its n_ops ops on `stream` ended at end_ns (see
 * "Events"). */
void p3dfake_stream_done(void *stream, uint64_t end_ns, int n_ops);

/* Exported by libcudart.so.13 (fake): synchronous mode, when an event
 * was first recorded on the stream since its last work (the start event
 * of a timer of the work to come), 0 if none. */
uint64_t p3dfake_stream_first_record(void *stream);

/* Exported by libcudart.so.13 (fake): CLOCK_MONOTONIC in ns. */
uint64_t p3dfake_now_ns(void);

/* Exported by libcudart.so.13 (fake): cudaMemGetInfo calls so far, so a
 * test can wait for a sampler to have looked. */
uint64_t p3dfake_meminfo_calls(void);

/* Fake device memory in use, bytes (what cudaMemGetInfo subtracts). */
uint64_t p3dfake_device_used(void);

#define P3DFAKE_DEVICE_TOTAL (80ull << 30)   /* an 80 GiB device */
#define P3DFAKE_CONTEXT_BYTES (512ull << 20) /* used before any malloc */

#endif /* P3DFAKE_H */
