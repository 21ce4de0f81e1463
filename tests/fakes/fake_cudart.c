/*
 * fake_cudart.c - a CPU stand-in for libcudart.so.13.
 *
 * Lets the shim and the simulator run without a GPU: streams, events,
 * allocations (a fake 80 GiB device), copies and "kernels" that take time
 * (the first kernel argument points to a duration in ns; the kernel sleeps
 * that long on the calling thread).  Work is synchronous, so an event's
 * time is the time it was recorded.  See p3dfake.h for the listener.
 * With P3D_FAKE_ASYNC=1 streams are asynchronous instead (fake_stream.c).
 */
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "fake_stream.h"
#include "p3dfake.h"

#define FAKE_API __attribute__((visibility("default")))
#define STREAM_MAGIC 0x5354524du
#define EVENT_MAGIC 0x45564e54u
#define ALLOC_MAGIC 0x414c4c4f43ull
#define ALLOC_HDR 4096u

struct fake_stream {
    uint32_t magic;
    unsigned int flags;
    int priority;
    int device;
    struct fake_queue *q;    /* async mode only */
    struct fake_work {       /* synchronous mode's event stamping */
        _Atomic uint64_t end;   /* end of its last NCCL launch */
        _Atomic int recs;       /* records still to be stamped with it */
        _Atomic uint64_t first; /* first other record since its last work */
    } work;
};

struct alloc_hdr {
    uint64_t magic;
    uint64_t size;
    int counted;   /* counts toward device memory */
};

static _Atomic(p3dfake_kernel_listener_fn) fake_listener;
static _Atomic(p3dfake_kernel_listener_fn) fake_observer;
static _Atomic(p3dfake_call_observer_fn) fake_call_observer;
static struct fake_queue *fake_default_q;
static _Atomic uint64_t fake_used;
static __thread int fake_device;
static __thread cudaError_t fake_last_error;

FAKE_API uint64_t p3dfake_now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

FAKE_API void p3dfake_set_kernel_listener(p3dfake_kernel_listener_fn fn)
{
    atomic_store(&fake_listener, fn);
}

FAKE_API void p3dfake_set_kernel_observer(p3dfake_kernel_listener_fn fn)
{
    atomic_store(&fake_observer, fn);
}

static int fake_stream_ok(cudaStream_t s);
static struct fake_work fake_default_work; /* the default streams' */

/*
 * Synchronous mode: a stream's stamping state (the end of its last NCCL
 * launch, how many event records are still to get it, when an event was
 * first recorded for its next work), NULL in async mode or for a bad
 * handle.
 */
static struct fake_work *fake_work_of(cudaStream_t s)
{
    if (fake_async())
        return NULL;
    if ((uintptr_t)s <= 2)
        return &fake_default_work;
    return fake_stream_ok(s) ? &((struct fake_stream *)s)->work : NULL;
}

FAKE_API uint64_t p3dfake_stream_first_record(void *stream)
{
    struct fake_work *w = fake_work_of(stream);

    return w ? atomic_load(&w->first) : 0;
}

FAKE_API void p3dfake_stream_done(void *stream, uint64_t end_ns, int n_ops)
{
    struct fake_work *w = fake_work_of(stream);

    if (w) {
        atomic_store(&w->end, end_ns);
        atomic_store(&w->recs, n_ops);
        atomic_store(&w->first, 0);
    }
}

FAKE_API void p3dfake_set_call_observer(p3dfake_call_observer_fn fn)
{
    atomic_store(&fake_call_observer, fn);
}

FAKE_API void p3dfake_report_call(uint64_t start_ns, uint64_t end_ns)
{
    p3dfake_call_observer_fn ob = atomic_load(&fake_call_observer);

    if (ob)
        ob(start_ns, end_ns);
}

FAKE_API void p3dfake_report_kernel(const char *name, void *stream,
                                    uint64_t start_ns, uint64_t end_ns,
                                    int is_nccl)
{
    p3dfake_kernel_listener_fn fn = atomic_load(&fake_listener);
    p3dfake_kernel_listener_fn ob = atomic_load(&fake_observer);
    struct fake_work *w = fake_work_of(stream);

    if (w && !is_nccl)
        atomic_store(&w->recs, 0); /* compute ran after it: moved on */
    if (w)
        atomic_store(&w->first, 0);
    if (fn)
        fn(name, stream, start_ns, end_ns, is_nccl);
    if (ob)
        ob(name, stream, start_ns, end_ns, is_nccl);
}

FAKE_API uint64_t p3dfake_device_used(void)
{
    return atomic_load(&fake_used);
}

static cudaError_t fake_ret(cudaError_t e)
{
    if (e != cudaSuccess)
        fake_last_error = e;
    return e;
}

static int fake_ndev(void)
{
    const char *s = getenv("P3D_FAKE_NDEV");
    int n = s ? atoi(s) : 8;

    return n > 0 ? n : 8;
}


/* ---- devices ---- */

FAKE_API cudaError_t cudaGetDeviceCount(int *count)
{
    if (!count)
        return fake_ret(cudaErrorInvalidValue);
    *count = fake_ndev();
    return cudaSuccess;
}

FAKE_API cudaError_t cudaGetDevice(int *device)
{
    if (!device)
        return fake_ret(cudaErrorInvalidValue);
    *device = fake_device;
    return cudaSuccess;
}

FAKE_API cudaError_t cudaSetDevice(int device)
{
    if (device < 0 || device >= fake_ndev())
        return fake_ret(cudaErrorInvalidDevice);
    fake_device = device;
    return cudaSuccess;
}

/* One bus id per device index, as on a real node. */
FAKE_API cudaError_t cudaDeviceGetPCIBusId(char *bus, int len, int device)
{
    if (!bus || len < 13 || device < 0 || device >= fake_ndev())
        return fake_ret(cudaErrorInvalidValue);
    snprintf(bus, (size_t)len, "0000:%02x:00.0", 0x10 + device);
    return cudaSuccess;
}

FAKE_API cudaError_t cudaDeviceSynchronize(void)
{
    if (fake_async())
        fake_queue_sync_all();
    return cudaSuccess;
}

FAKE_API cudaError_t cudaDriverGetVersion(int *v)
{
    if (!v)
        return fake_ret(cudaErrorInvalidValue);
    *v = 13000;
    return cudaSuccess;
}

FAKE_API cudaError_t cudaRuntimeGetVersion(int *v)
{
    return cudaDriverGetVersion(v);
}

/* ---- streams ---- */

static int fake_stream_ok(cudaStream_t s)
{
    uintptr_t v = (uintptr_t)s;

    if (v <= 2)   /* 0, cudaStreamLegacy, cudaStreamPerThread */
        return 1;
    return ((struct fake_stream *)s)->magic == STREAM_MAGIC;
}

/* The stream's work queue in async mode, else NULL (synchronous). */
static struct fake_queue *fake_q(cudaStream_t s)
{
    if (!fake_async())
        return NULL;
    if ((uintptr_t)s <= 2)
        return fake_queue_get(&fake_default_q, NULL);
    return fake_queue_get(&((struct fake_stream *)s)->q, s);
}

FAKE_API int p3dfake_async(void)
{
    return fake_async();
}

FAKE_API int p3dfake_stream_enqueue(void *stream, void (*fn)(void *),
                                    void *arg)
{
    struct fake_queue *q = fake_stream_ok(stream) ? fake_q(stream) : NULL;

    if (!q)
        return -1;
    fake_queue_fn(q, fn, arg);
    return 0;
}

FAKE_API cudaError_t cudaStreamCreateWithPriority(cudaStream_t *s,
                                                  unsigned int flags,
                                                  int priority)
{
    struct fake_stream *fs;

    if (!s)
        return fake_ret(cudaErrorInvalidValue);
    fs = calloc(1, sizeof(*fs));
    if (!fs)
        return fake_ret(cudaErrorMemoryAllocation);
    fs->magic = STREAM_MAGIC;
    fs->flags = flags;
    fs->priority = priority;
    fs->device = fake_device;
    *s = (cudaStream_t)fs;
    return cudaSuccess;
}

FAKE_API cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s,
                                               unsigned int flags)
{
    return cudaStreamCreateWithPriority(s, flags, 0);
}

FAKE_API cudaError_t cudaStreamCreate(cudaStream_t *s)
{
    return cudaStreamCreateWithPriority(s, 0, 0);
}

FAKE_API cudaError_t cudaStreamDestroy(cudaStream_t s)
{
    if ((uintptr_t)s <= 2 || !fake_stream_ok(s))
        return fake_ret(cudaErrorInvalidResourceHandle);
    if (((struct fake_stream *)s)->q)
        fake_queue_destroy(((struct fake_stream *)s)->q);
    ((struct fake_stream *)s)->magic = 0;
    free(s);
    return cudaSuccess;
}

FAKE_API cudaError_t cudaStreamSynchronize(cudaStream_t s)
{
    struct fake_queue *q;

    if (!fake_stream_ok(s))
        return fake_ret(cudaErrorInvalidResourceHandle);
    if ((q = fake_q(s)))
        fake_queue_sync(q);
    return cudaSuccess;
}

FAKE_API cudaError_t cudaStreamQuery(cudaStream_t s)
{
    struct fake_queue *q;

    if (!fake_stream_ok(s))
        return fake_ret(cudaErrorInvalidResourceHandle);
    q = fake_q(s);
    return q && !fake_queue_idle(q) ? cudaErrorNotReady : cudaSuccess;
}

/* The stream fake NCCL's last call on this thread kept in its fake CUDA
 * graph (P3D_FAKE_GRAPH), NULL if it ran: that stream reads as capturing
 * until the thread's next NCCL call, which is when the shim asks. */
static __thread void *fake_captured_stream;

void p3dfake_mark_captured(void *stream, int captured)
{
    fake_captured_stream = captured ? stream : NULL;
}

FAKE_API cudaError_t cudaStreamIsCapturing(cudaStream_t s,
                                           enum cudaStreamCaptureStatus *st)
{
    if (!st || !fake_stream_ok(s))
        return fake_ret(cudaErrorInvalidValue);
    *st = s && s == fake_captured_stream ? cudaStreamCaptureStatusActive
                                         : cudaStreamCaptureStatusNone;
    return cudaSuccess;
}

FAKE_API cudaError_t cudaStreamGetPriority(cudaStream_t s, int *priority)
{
    if (!priority || !fake_stream_ok(s))
        return fake_ret(cudaErrorInvalidValue);
    *priority = (uintptr_t)s <= 2 ? 0 : ((struct fake_stream *)s)->priority;
    return cudaSuccess;
}

FAKE_API cudaError_t cudaDeviceGetStreamPriorityRange(int *least,
                                                      int *greatest)
{
    if (least)
        *least = 0;
    if (greatest)
        *greatest = -5;
    return cudaSuccess;
}

static struct fake_event *fake_event_get(cudaEvent_t e);

FAKE_API cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e,
                                         unsigned int flags)
{
    struct fake_event *fe = fake_event_get(e);
    struct fake_queue *q;

    (void)flags;
    if (!fe || !fake_stream_ok(s))
        return fake_ret(cudaErrorInvalidResourceHandle);
    if ((q = fake_q(s)) &&
        atomic_load(&fe->completed) < atomic_load(&fe->recorded))
        fake_queue_wait(q, fe);
    return cudaSuccess;
}

/* ---- events ---- */

static struct fake_event *fake_event_get(cudaEvent_t e)
{
    struct fake_event *fe = (struct fake_event *)e;

    return fe && fe->magic == EVENT_MAGIC ? fe : NULL;
}

FAKE_API cudaError_t cudaEventCreateWithFlags(cudaEvent_t *e,
                                              unsigned int flags)
{
    struct fake_event *fe;

    if (!e)
        return fake_ret(cudaErrorInvalidValue);
    fe = calloc(1, sizeof(*fe));
    if (!fe)
        return fake_ret(cudaErrorMemoryAllocation);
    fe->magic = EVENT_MAGIC;
    fe->flags = flags;
    *e = (cudaEvent_t)fe;
    return cudaSuccess;
}

FAKE_API cudaError_t cudaEventCreate(cudaEvent_t *e)
{
    return cudaEventCreateWithFlags(e, 0);
}

FAKE_API cudaError_t cudaEventDestroy(cudaEvent_t e)
{
    struct fake_event *fe = fake_event_get(e);

    if (!fe)
        return fake_ret(cudaErrorInvalidResourceHandle);
    fe->magic = 0;
    free(fe);
    return cudaSuccess;
}

/*
 * Synchronous mode: the events recorded right after an NCCL launch on a
 * stream, one per op the launch had there (an end event per op, as the
 * shim and any per-op timer record them), are reached when the launch's
 * kernels ended (as on a GPU, where they are queued behind the running
 * kernel), not when the host got around to recording them, which a
 * descheduled host delays.  Any other record (the next op's start event,
 * one after a compute kernel, whose host time on a GPU would have
 * overlapped it) is reached at once.
 */
static uint64_t fake_record_time(cudaStream_t s)
{
    struct fake_work *w = fake_work_of(s);
    uint64_t now, zero = 0;

    if (w && atomic_fetch_sub(&w->recs, 1) > 0)
        return atomic_load(&w->end);
    now = p3dfake_now_ns();
    if (w) {
        atomic_store(&w->recs, 0);
        atomic_compare_exchange_strong(&w->first, &zero, now);
    }
    return now;
}

FAKE_API cudaError_t cudaEventRecordWithFlags(cudaEvent_t e, cudaStream_t s,
                                              unsigned int flags)
{
    struct fake_event *fe = fake_event_get(e);

    struct fake_queue *q;

    (void)flags;
    if (!fe || !fake_stream_ok(s))
        return fake_ret(cudaErrorInvalidResourceHandle);
    q = fake_q(s);
    if (q && !fake_queue_idle(q)) {
        fake_queue_event(q, fe);   /* completes when the stream gets there */
        return cudaSuccess;
    }
    atomic_store(&fe->t_ns, fake_record_time(s));
    atomic_store(&fe->completed, atomic_fetch_add(&fe->recorded, 1) + 1);
    return cudaSuccess;
}

FAKE_API cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s)
{
    return cudaEventRecordWithFlags(e, s, 0);
}

FAKE_API cudaError_t cudaEventQuery(cudaEvent_t e)
{
    struct fake_event *fe = fake_event_get(e);

    if (!fe)
        return fake_ret(cudaErrorInvalidResourceHandle);
    return atomic_load(&fe->completed) < atomic_load(&fe->recorded)
               ? cudaErrorNotReady : cudaSuccess;
}

FAKE_API cudaError_t cudaEventSynchronize(cudaEvent_t e)
{
    struct fake_event *fe = fake_event_get(e);

    if (!fe)
        return fake_ret(cudaErrorInvalidResourceHandle);
    fake_event_sync(fe);
    return cudaSuccess;
}

FAKE_API cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start,
                                          cudaEvent_t end)
{
    struct fake_event *a = fake_event_get(start);
    struct fake_event *b = fake_event_get(end);
    uint64_t ta, tb;

    if (!ms || !a || !b)
        return fake_ret(cudaErrorInvalidResourceHandle);
    if (cudaEventQuery(start) == cudaErrorNotReady ||
        cudaEventQuery(end) == cudaErrorNotReady)
        return cudaErrorNotReady;
    ta = atomic_load(&a->t_ns);
    tb = atomic_load(&b->t_ns);
    if (!ta || !tb)
        return fake_ret(cudaErrorInvalidResourceHandle);
    *ms = (float)(((double)tb - (double)ta) / 1e6);
    return cudaSuccess;
}

/* ---- memory ---- */

/*
 * Every allocation is an anonymous NORESERVE mapping with a header page in
 * front, so a pretend 10 GiB tensor costs nothing until touched and free
 * knows the size.
 */
static cudaError_t fake_alloc(void **p, size_t size, int counted)
{
    struct alloc_hdr *h;
    void *m;

    if (!p)
        return fake_ret(cudaErrorInvalidValue);
    if (size == 0) {
        *p = NULL;
        return cudaSuccess;
    }
    if (counted && atomic_load(&fake_used) + size >
                       P3DFAKE_DEVICE_TOTAL - P3DFAKE_CONTEXT_BYTES)
        return fake_ret(cudaErrorMemoryAllocation);
    m = mmap(NULL, size + ALLOC_HDR, PROT_READ | PROT_WRITE,
             MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED)
        return fake_ret(cudaErrorMemoryAllocation);
    h = m;
    h->magic = ALLOC_MAGIC;
    h->size = size;
    h->counted = counted;
    if (counted)
        atomic_fetch_add(&fake_used, size);
    *p = (char *)m + ALLOC_HDR;
    return cudaSuccess;
}

static cudaError_t fake_free(void *p)
{
    struct alloc_hdr *h;

    if (!p)
        return cudaSuccess;
    h = (struct alloc_hdr *)((char *)p - ALLOC_HDR);
    if (((uintptr_t)h & 4095u) || h->magic != ALLOC_MAGIC)
        return fake_ret(cudaErrorInvalidValue);
    h->magic = 0;
    if (h->counted)
        atomic_fetch_sub(&fake_used, h->size);
    munmap(h, h->size + ALLOC_HDR);
    return cudaSuccess;
}

FAKE_API cudaError_t cudaMalloc(void **p, size_t size)
{
    return fake_alloc(p, size, 1);
}

/* cudaFree synchronizes the device (in async mode: every queue). */
static cudaError_t fake_free_synced(void *p)
{
    if (fake_async())
        fake_queue_sync_all();
    return fake_free(p);
}

FAKE_API cudaError_t cudaFree(void *p)
{
    return fake_free_synced(p);
}

struct fake_copy {
    void *dst;
    const void *src;   /* NULL: memset with value */
    int value;
    size_t n;
};

static void fake_copy_run(void *arg)
{
    struct fake_copy *c = arg;

    if (c->src)
        memmove(c->dst, c->src, c->n);
    else
        memset(c->dst, c->value, c->n);
    free(c);
}

/* Async mode: run a copy/memset on the stream; 0 if queued. */
static int fake_copy_queue(cudaStream_t s, void *dst, const void *src,
                           int value, size_t n)
{
    struct fake_queue *q = fake_q(s);
    struct fake_copy *c;

    if (!q || !(c = malloc(sizeof(*c))))
        return -1;
    c->dst = dst;
    c->src = src;
    c->value = value;
    c->n = n;
    fake_queue_fn(q, fake_copy_run, c);
    return 0;
}

FAKE_API cudaError_t cudaMallocAsync(void **p, size_t size, cudaStream_t s)
{
    if (!fake_stream_ok(s))
        return fake_ret(cudaErrorInvalidResourceHandle);
    return fake_alloc(p, size, 1);
}

FAKE_API cudaError_t cudaFreeAsync(void *p, cudaStream_t s)
{
    if (!fake_stream_ok(s))
        return fake_ret(cudaErrorInvalidResourceHandle);
    return fake_free_synced(p);   /* keep it simple: free now, in order */
}

FAKE_API cudaError_t cudaMallocFromPoolAsync(void **p, size_t size,
                                             cudaMemPool_t pool,
                                             cudaStream_t s)
{
    (void)pool;
    return cudaMallocAsync(p, size, s);
}

FAKE_API cudaError_t cudaMallocManaged(void **p, size_t size,
                                       unsigned int flags)
{
    (void)flags;
    return fake_alloc(p, size, 1);
}

FAKE_API cudaError_t cudaMallocHost(void **p, size_t size)
{
    return fake_alloc(p, size, 0);
}

FAKE_API cudaError_t cudaHostAlloc(void **p, size_t size, unsigned int flags)
{
    (void)flags;
    return fake_alloc(p, size, 0);
}

FAKE_API cudaError_t cudaFreeHost(void *p)
{
    return fake_free(p);
}

static _Atomic uint64_t fake_meminfo_calls;

FAKE_API uint64_t p3dfake_meminfo_calls(void)
{
    return atomic_load(&fake_meminfo_calls);
}

FAKE_API cudaError_t cudaMemGetInfo(size_t *free_b, size_t *total)
{
    uint64_t used = atomic_load(&fake_used) + P3DFAKE_CONTEXT_BYTES;

    atomic_fetch_add(&fake_meminfo_calls, 1);

    if (!free_b || !total)
        return fake_ret(cudaErrorInvalidValue);
    *total = P3DFAKE_DEVICE_TOTAL;
    *free_b = used < P3DFAKE_DEVICE_TOTAL ? P3DFAKE_DEVICE_TOTAL - used : 0;
    return cudaSuccess;
}

FAKE_API cudaError_t cudaMemcpy(void *dst, const void *src, size_t n,
                                enum cudaMemcpyKind kind)
{
    (void)kind;
    if (n && (!dst || !src))
        return fake_ret(cudaErrorInvalidValue);
    if (fake_async())
        fake_queue_sync_all();
    if (n)
        memmove(dst, src, n);
    return cudaSuccess;
}

FAKE_API cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t n,
                                     enum cudaMemcpyKind kind, cudaStream_t s)
{
    if (!fake_stream_ok(s))
        return fake_ret(cudaErrorInvalidResourceHandle);
    if (n && dst && src && fake_copy_queue(s, dst, src, 0, n) == 0)
        return cudaSuccess;
    return cudaMemcpy(dst, src, n, kind);
}

FAKE_API cudaError_t cudaMemset(void *p, int value, size_t n)
{
    if (n && !p)
        return fake_ret(cudaErrorInvalidValue);
    if (fake_async())
        fake_queue_sync_all();
    if (n)
        memset(p, value, n);
    return cudaSuccess;
}

FAKE_API cudaError_t cudaMemsetAsync(void *p, int value, size_t n,
                                     cudaStream_t s)
{
    if (!fake_stream_ok(s))
        return fake_ret(cudaErrorInvalidResourceHandle);
    if (n && p && fake_copy_queue(s, p, NULL, value, n) == 0)
        return cudaSuccess;
    return cudaMemset(p, value, n);
}

/* ---- kernels ---- */

static void fake_kernel_name(const void *func, char *buf, size_t len)
{
    Dl_info info;

    if (dladdr(func, &info) && info.dli_sname && info.dli_saddr == func)
        snprintf(buf, len, "%s", info.dli_sname);
    else
        snprintf(buf, len, "p3dfake_kernel_%p", func);
}

FAKE_API cudaError_t cudaLaunchKernel(const void *func, dim3 grid,
                                      dim3 block, void **args,
                                      size_t shmem, cudaStream_t s)
{
    char name[256];
    uint64_t t0, dur = 0;
    struct fake_queue *q;

    (void)grid;
    (void)block;
    (void)shmem;
    if (!func || !fake_stream_ok(s))
        return fake_ret(cudaErrorInvalidValue);
    if (args && args[0])
        memcpy(&dur, args[0], sizeof(dur));
    if ((q = fake_q(s))) {
        fake_kernel_name(func, name, sizeof(name));
        fake_queue_kernel(q, name, dur);
        return cudaSuccess;
    }
    t0 = p3dfake_now_ns();
    if (dur)
        fake_sleep_ns(dur);
    fake_kernel_name(func, name, sizeof(name));
    p3dfake_report_kernel(name, s, t0, p3dfake_now_ns(), 0);
    return cudaSuccess;
}

/* ---- driver entry points ---- */

/*
 * Pointers come from a fake driver next to this library
 * ($ORIGIN/libcuda.so.1, provided by the GPU helper's fake), never from a
 * system libcuda.
 */
static void *fake_driver(void)
{
    static void *handle;
    static int tried;
    char path[PATH_MAX];
    Dl_info info;
    char *slash;

    if (tried)
        return handle;
    tried = 1;
    if (!dladdr((void *)fake_driver, &info) || !info.dli_fname)
        return NULL;
    snprintf(path, sizeof(path), "%s", info.dli_fname);
    slash = strrchr(path, '/');
    if (!slash)
        return NULL;
    snprintf(slash + 1, sizeof(path) - (size_t)(slash + 1 - path),
             "libcuda.so.1");
    handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    return handle;
}

FAKE_API cudaError_t cudaGetDriverEntryPointByVersion(
    const char *symbol, void **fn, unsigned int version,
    unsigned long long flags, enum cudaDriverEntryPointQueryResult *st)
{
    void *h = fake_driver();
    void *p = NULL;
    char v2[256];

    (void)version;
    (void)flags;
    if (!symbol || !fn)
        return fake_ret(cudaErrorInvalidValue);
    if (h) {
        snprintf(v2, sizeof(v2), "%s_v2", symbol);
        p = dlsym(h, v2);
        if (!p)
            p = dlsym(h, symbol);
    }
    *fn = p;
    if (st)
        *st = p ? cudaDriverEntryPointSuccess
                : cudaDriverEntryPointSymbolNotFound;
    return p ? cudaSuccess : fake_ret(cudaErrorSymbolNotFound);
}

FAKE_API cudaError_t cudaGetDriverEntryPoint(
    const char *symbol, void **fn, unsigned long long flags,
    enum cudaDriverEntryPointQueryResult *st)
{
    return cudaGetDriverEntryPointByVersion(symbol, fn, 13000, flags, st);
}

/* ---- errors ---- */

FAKE_API cudaError_t cudaGetLastError(void)
{
    cudaError_t e = fake_last_error;

    fake_last_error = cudaSuccess;
    return e;
}

FAKE_API cudaError_t cudaPeekAtLastError(void)
{
    return fake_last_error;
}

FAKE_API const char *cudaGetErrorName(cudaError_t e)
{
    switch (e) {
    case cudaSuccess: return "cudaSuccess";
    case cudaErrorInvalidValue: return "cudaErrorInvalidValue";
    case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
    case cudaErrorInvalidDevice: return "cudaErrorInvalidDevice";
    case cudaErrorInvalidResourceHandle:
        return "cudaErrorInvalidResourceHandle";
    case cudaErrorSymbolNotFound: return "cudaErrorSymbolNotFound";
    case cudaErrorNotReady: return "cudaErrorNotReady";
    default: return "cudaErrorUnknown";
    }
}

FAKE_API const char *cudaGetErrorString(cudaError_t e)
{
    switch (e) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorInvalidDevice: return "invalid device ordinal";
    case cudaErrorInvalidResourceHandle: return "invalid resource handle";
    case cudaErrorSymbolNotFound: return "named symbol not found";
    case cudaErrorNotReady: return "device not ready";
    default: return "unknown error";
    }
}
