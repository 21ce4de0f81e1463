/*
 * fake_cupti.c - CPU test double of libcupti.so.13: the activity API calls
 * the shim makes, fed by the fake cudart's kernel listener, so CI runs the
 * shim's CUPTI path (external correlation, buffer callbacks, clock
 * conversion, span merging) without a GPU.
 *
 * Every kernel the fakes report becomes a CUpti_ActivityKernel10 record
 * (timestamps = host CLOCK_MONOTONIC + P3DFAKE_CUPTI_OFFSET, the same
 * offset cuptiGetTimestamp adds, so the shim must convert); if an external
 * correlation id is pushed on the reporting thread and the driver or
 * runtime API kind is enabled (CUPTI attaches external correlation to API
 * records), a CUpti_ActivityExternalCorrelation record precedes it.  Buffers come from
 * the client's request callback and are handed back when full or at
 * cuptiActivityFlushAll, on the flushing thread.
 *
 * Environment:
 *   P3D_FAKE_CUPTI_BUSY=1   cuptiSubscribe fails with
 *                           CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED
 *                           (another tool holds CUPTI)
 *   P3D_FAKE_CUPTI_NO_EXT=1 no external correlation records, as for
 *                           kernels NCCL launches from its own thread
 *                           (non-blocking communicators)
 *   P3D_FAKE_CUPTI_KINDS=F  append "enable <kind>" for every activity kind
 *                           the tool enables ("hwtrace <0|1>" for each
 *                           cuptiActivityEnableHWTrace call)
 *   P3D_FAKE_CUPTI_HWTRACE=1 cuptiActivityEnableHWTrace succeeds (a
 *                           Blackwell GPU); by default it answers
 *                           CUPTI_ERROR_NOT_SUPPORTED, as on an H200
 *   P3D_FAKE_CUPTI_LOG=F    append "kernel <pid> <is_nccl> <ext> <start>
 *                           <end> <name>" per kernel (host ns, the truth the
 *                           tests compare the trace with)
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cupti.h>

#include "p3dfake.h"

#define FAKE_API __attribute__((visibility("default")))
#define P3DFAKE_CUPTI_OFFSET 1000000000000000ull  /* 1e15 ns */
#define FAKE_NAMES 256
#define FAKE_NAME_LEN 128
#define FAKE_STACK 16

static pthread_mutex_t fk_lock = PTHREAD_MUTEX_INITIALIZER;
static CUpti_BuffersCallbackRequestFunc fk_request;
static CUpti_BuffersCallbackCompleteFunc fk_complete;
static int fk_subscribed;
static uint64_t fk_enabled;          /* bit per CUpti_ActivityKind < 64 */
static uint32_t fk_corr;
static uint8_t *fk_buf;
static size_t fk_size, fk_used;
static _Atomic size_t fk_dropped;
static char fk_names[FAKE_NAMES][FAKE_NAME_LEN];
static int fk_n_names;
static int fk_log_fd = -2;

static __thread uint64_t fk_stack[FAKE_STACK];
static __thread int fk_depth;

static int fk_env_on(const char *name)
{
    const char *v = getenv(name);

    return v && !strcmp(v, "1");
}

static uint64_t fk_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static size_t fk_record_size(CUpti_ActivityKind kind)
{
    switch (kind) {
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
    case CUPTI_ACTIVITY_KIND_KERNEL:
        return (sizeof(CUpti_ActivityKernel10) + 7) & ~(size_t)7;
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION:
        return (sizeof(CUpti_ActivityExternalCorrelation) + 7) & ~(size_t)7;
    default:
        return 0;
    }
}

/* Interned kernel name: stays valid for the life of the process. */
static const char *fk_intern(const char *name)
{
    int i;

    for (i = 0; i < fk_n_names; i++)
        if (!strncmp(fk_names[i], name, FAKE_NAME_LEN - 1))
            return fk_names[i];
    if (fk_n_names == FAKE_NAMES)
        return "fake_kernel_names_full";
    snprintf(fk_names[fk_n_names], FAKE_NAME_LEN, "%s", name);
    return fk_names[fk_n_names++];
}

/* Detach the current buffer (under the lock) for delivery. */
static uint8_t *fk_take(size_t *valid)
{
    uint8_t *b = fk_buf;

    *valid = fk_used;
    fk_buf = NULL;
    fk_used = fk_size = 0;
    return b;
}

static void fk_deliver(uint8_t *b, size_t size, size_t valid)
{
    if (b && fk_complete)
        fk_complete(NULL, 0, b, size, valid);
}

/* Room for `len` bytes; may hand a full buffer to *full. */
static uint8_t *fk_room(size_t len, uint8_t **full, size_t *fsize,
                        size_t *fvalid)
{
    size_t max = 0;

    if (fk_buf && fk_used + len > fk_size) {
        *fsize = fk_size;
        *full = fk_take(fvalid);
    }
    if (!fk_buf && fk_request) {
        fk_request(&fk_buf, &fk_size, &max);
        fk_used = 0;
    }
    if (!fk_buf || fk_size < len) {
        atomic_fetch_add(&fk_dropped, 1);
        return NULL;
    }
    fk_used += len;
    return fk_buf + fk_used - len;
}

static uint32_t fk_stream_id(void *stream)
{
    return stream ? (uint32_t)(((uintptr_t)stream >> 4) & 0xffffff) + 8 : 7;
}

static void fk_log(int is_nccl, uint64_t ext, uint64_t s, uint64_t e,
                   const char *name)
{
    char line[256];
    int n;

    if (fk_log_fd == -2) {
        const char *p = getenv("P3D_FAKE_CUPTI_LOG");

        fk_log_fd = p ? open(p, O_WRONLY | O_CREAT | O_APPEND, 0644) : -1;
    }
    if (fk_log_fd < 0)
        return;
    n = snprintf(line, sizeof(line), "kernel %ld %d %llu %llu %llu %s\n",
                 (long)getpid(), is_nccl, (unsigned long long)ext, (unsigned long long)s,
                 (unsigned long long)e, name);
    if (write(fk_log_fd, line, (size_t)n) < 0)
        return;
}

static void fk_log_kind(const char *what, int id);

/* The listener: [external correlation record] + kernel record. */
static void fk_listener(const char *name, void *stream, uint64_t start,
                        uint64_t end, int is_nccl)
{
    uint64_t ext = fk_depth ? fk_stack[fk_depth - 1] : 0;
    size_t xs = fk_record_size(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION);
    size_t ks = fk_record_size(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    uint8_t *full = NULL, *p;
    size_t fsize = 0, fvalid = 0;
    CUpti_ActivityKernel10 *k;
    int with_ext;

    pthread_mutex_lock(&fk_lock);
    fk_log(is_nccl, ext, start, end, name);
    fk_corr++;
    /*
     * As measured with CUDA 13.0's CUPTI and NCCL 2.28.9 on the H200: only
     * next to the records of a whole API kind (driver or runtime); the
     * per-API launch records alone brought none.
     */
    with_ext = ext && !fk_env_on("P3D_FAKE_CUPTI_NO_EXT") &&
               ((fk_enabled >> CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION) & 1) &&
               ((fk_enabled >> CUPTI_ACTIVITY_KIND_DRIVER) & 1 ||
                (fk_enabled >> CUPTI_ACTIVITY_KIND_RUNTIME) & 1);
    p = fk_room(ks + (with_ext ? xs : 0), &full, &fsize, &fvalid);
    if (p && with_ext) {
        CUpti_ActivityExternalCorrelation *x = (void *)p;

        memset(x, 0, xs);
        x->kind = CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION;
        x->externalKind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM2;
        x->externalId = ext;
        x->correlationId = fk_corr;
        p += xs;
        fk_log_kind("ext", (int)fk_corr);
    }
    if (p) {
        k = (void *)p;
        memset(k, 0, ks);
        k->kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
        k->start = start + P3DFAKE_CUPTI_OFFSET;
        k->end = end + P3DFAKE_CUPTI_OFFSET;
        k->completed = k->end;
        k->streamId = fk_stream_id(stream);
        k->correlationId = fk_corr;
        k->name = fk_intern(name);
    }
    pthread_mutex_unlock(&fk_lock);
    fk_deliver(full, fsize, fvalid);
}

static void fk_listen(p3dfake_kernel_listener_fn fn)
{
    void (*set)(p3dfake_kernel_listener_fn) = NULL;
    void *h = dlopen("libcudart.so.13", RTLD_LAZY | RTLD_NOLOAD);

    if (h)
        *(void **)&set = dlsym(h, "p3dfake_set_kernel_listener");
    if (!set)
        *(void **)&set = dlsym(RTLD_DEFAULT, "p3dfake_set_kernel_listener");
    if (set)
        set(fn);
    if (h)
        dlclose(h);
}

FAKE_API CUptiResult cuptiSubscribe(CUpti_SubscriberHandle *sub,
                                    CUpti_CallbackFunc cb, void *ud)
{
    (void)cb;
    (void)ud;
    if (!sub)
        return CUPTI_ERROR_INVALID_PARAMETER;
    if (fk_env_on("P3D_FAKE_CUPTI_BUSY") || fk_subscribed)
        return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
    fk_subscribed = 1;
    *sub = (CUpti_SubscriberHandle)&fk_subscribed;
    return CUPTI_SUCCESS;
}

FAKE_API CUptiResult cuptiUnsubscribe(CUpti_SubscriberHandle sub)
{
    if (!sub || !fk_subscribed)
        return CUPTI_ERROR_INVALID_PARAMETER;
    fk_subscribed = 0;
    return CUPTI_SUCCESS;
}

FAKE_API CUptiResult cuptiActivityRegisterCallbacks(
    CUpti_BuffersCallbackRequestFunc req,
    CUpti_BuffersCallbackCompleteFunc done)
{
    if (!req || !done)
        return CUPTI_ERROR_INVALID_PARAMETER;
    fk_request = req;
    fk_complete = done;
    return CUPTI_SUCCESS;
}

static void fk_log_kind(const char *what, int id)
{
    const char *path = getenv("P3D_FAKE_CUPTI_KINDS");
    FILE *f = path && *path ? fopen(path, "a") : NULL;

    if (f) {
        fprintf(f, "%s %d\n", what, id);
        fclose(f);
    }
}

/*
 * Per-API driver records; P3D_FAKE_CUPTI_NO_API_FILTER=1 plays a CUPTI
 * that refuses them (the shim must then enable the whole driver kind).
 */
FAKE_API CUptiResult cuptiActivityEnableDriverApi(CUpti_CallbackId cbid,
                                                  uint8_t enable)
{
    if (fk_env_on("P3D_FAKE_CUPTI_NO_API_FILTER"))
        return CUPTI_ERROR_NOT_SUPPORTED;
    fk_log_kind(enable ? "driverapi" : "driverapi-off", (int)cbid);
    return CUPTI_SUCCESS;
}

/* Kernel timestamps from the hardware: only "Blackwell" takes it. */
FAKE_API CUptiResult cuptiActivityEnableHWTrace(uint8_t enable)
{
    fk_log_kind("hwtrace", (int)enable);
    return fk_env_on("P3D_FAKE_CUPTI_HWTRACE") ? CUPTI_SUCCESS
                                                : CUPTI_ERROR_NOT_SUPPORTED;
}

FAKE_API CUptiResult cuptiActivityEnable(CUpti_ActivityKind kind)
{
    if ((unsigned)kind >= 64)
        return CUPTI_ERROR_INVALID_KIND;
    fk_log_kind("enable", (int)kind);
    pthread_mutex_lock(&fk_lock);
    fk_enabled |= 1ull << kind;
    pthread_mutex_unlock(&fk_lock);
    if (kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL ||
        kind == CUPTI_ACTIVITY_KIND_KERNEL)
        fk_listen(fk_listener);
    return CUPTI_SUCCESS;
}

FAKE_API CUptiResult cuptiActivityDisable(CUpti_ActivityKind kind)
{
    if ((unsigned)kind >= 64)
        return CUPTI_ERROR_INVALID_KIND;
    pthread_mutex_lock(&fk_lock);
    fk_enabled &= ~(1ull << kind);
    pthread_mutex_unlock(&fk_lock);
    if (kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)
        fk_listen(NULL);
    return CUPTI_SUCCESS;
}

FAKE_API CUptiResult cuptiActivityGetNextRecord(uint8_t *buf, size_t valid,
                                                CUpti_Activity **rec)
{
    size_t off = 0;

    if (!buf || !rec)
        return CUPTI_ERROR_INVALID_PARAMETER;
    if (*rec)
        off = (size_t)((uint8_t *)*rec - buf) + fk_record_size((*rec)->kind);
    if (off + sizeof(CUpti_Activity) > valid) {
        *rec = NULL;
        return CUPTI_ERROR_MAX_LIMIT_REACHED;
    }
    *rec = (CUpti_Activity *)(buf + off);
    if (!fk_record_size((*rec)->kind))
        return CUPTI_ERROR_INVALID_KIND;
    return CUPTI_SUCCESS;
}

FAKE_API CUptiResult cuptiActivityFlushAll(uint32_t flag)
{
    uint8_t *b;
    size_t size, valid;

    (void)flag;
    pthread_mutex_lock(&fk_lock);
    size = fk_size;
    b = fk_used ? fk_take(&valid) : NULL;
    pthread_mutex_unlock(&fk_lock);
    fk_deliver(b, size, valid);
    return CUPTI_SUCCESS;
}

FAKE_API CUptiResult cuptiActivityGetNumDroppedRecords(CUcontext ctx,
                                                       uint32_t stream,
                                                       size_t *dropped)
{
    (void)ctx;
    (void)stream;
    if (!dropped)
        return CUPTI_ERROR_INVALID_PARAMETER;
    *dropped = atomic_exchange(&fk_dropped, 0);
    return CUPTI_SUCCESS;
}

FAKE_API CUptiResult cuptiActivityPushExternalCorrelationId(
    CUpti_ExternalCorrelationKind kind, uint64_t id)
{
    (void)kind;
    if (fk_depth == FAKE_STACK)
        return CUPTI_ERROR_MAX_LIMIT_REACHED;
    fk_stack[fk_depth++] = id;
    return CUPTI_SUCCESS;
}

FAKE_API CUptiResult cuptiActivityPopExternalCorrelationId(
    CUpti_ExternalCorrelationKind kind, uint64_t *last)
{
    (void)kind;
    if (!fk_depth)
        return CUPTI_ERROR_QUEUE_EMPTY;
    fk_depth--;
    if (last)
        *last = fk_stack[fk_depth];
    return CUPTI_SUCCESS;
}

FAKE_API CUptiResult cuptiGetTimestamp(uint64_t *t)
{
    if (!t)
        return CUPTI_ERROR_INVALID_PARAMETER;
    *t = fk_now() + P3DFAKE_CUPTI_OFFSET;
    return CUPTI_SUCCESS;
}

FAKE_API CUptiResult cuptiGetStreamIdEx(CUcontext ctx, CUstream stream,
                                        uint8_t per_thread, uint32_t *id)
{
    (void)ctx;
    (void)per_thread;
    if (!id)
        return CUPTI_ERROR_INVALID_PARAMETER;
    *id = fk_stream_id(stream);
    return CUPTI_SUCCESS;
}
