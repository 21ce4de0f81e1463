/*
 * p3d_cupti.c - GPU op times and the compute timeline from CUPTI activity
 * records.
 *
 * Why CUPTI: it is the only source of every kernel and copy (PyTorch's
 * launches bypass an interposed cudaLaunchKernel; NCCL launches through
 * its static cudart), so one mechanism gives both NCCL op times and the
 * compute spans.  libcupti is never linked: the process's own (PyTorch
 * ships libcupti.so.13) is found at run time.
 *
 * Flow: cuptiSubscribe claims CUPTI (it fails if torch.profiler, Nsight or
 * another tool holds it: then the caller falls back to CUDA events);
 * CONCURRENT_KERNEL, MEMCPY, MEMSET and EXTERNAL_CORRELATION are enabled
 * (the driver-API records external correlation needs only with
 * P3D_CUPTI_DRIVER, see cupti_enable_driver);
 * buffers come from a fixed pool mapped once.  The hooks push the op's id
 * (or its group's key) as external correlation id around the NCCL call;
 * CUPTI then emits (correlationId -> external id) records, and each NCCL
 * kernel (name contains ncclDevKernel_ or ncclKernel_) becomes a GPU_OP
 * record for its op(s).  Kernels NCCL launches from its own thread
 * (non-blocking communicators) carry no id: they are linked by launch
 * order per stream (p3d_cupti_order.c); NCCL kernels linked to nothing
 * (e.g. replayed CUDA graphs) become P3D_SPAN_NCCL spans.  An op whose
 * group launched several kernels (several communicators) gets one GPU_OP
 * per kernel: readers take the earliest start and the latest end.  Other kernels and copies feed the span merger.
 * Buffers are processed on CUPTI's thread (or the flushing thread) under
 * one lock, never on the application's NCCL call path.  Times are put on
 * CLOCK_MONOTONIC with p3d_gpu_clock.c (device -1 in CLOCK_SYNC = the
 * CUPTI timestamp clock).
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <cupti.h>

#include "p3d_env.h"
#include "p3d_gpu.h"
#include "p3d_shim.h"

#define CUPTI_BUFS 32
#define CUPTI_BUF_BYTES (512u << 10)
#define CUPTI_CORR_SLOTS 65536u
#define CUPTI_EXT_KIND CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM2
#define CUPTI_CLOCK_NS 1000000000ull

struct cupti_api {
    CUptiResult (*Subscribe)(CUpti_SubscriberHandle *, CUpti_CallbackFunc,
                             void *);
    CUptiResult (*Unsubscribe)(CUpti_SubscriberHandle);
    CUptiResult (*Enable)(CUpti_ActivityKind);
    CUptiResult (*Disable)(CUpti_ActivityKind);
    CUptiResult (*RegisterCallbacks)(CUpti_BuffersCallbackRequestFunc,
                                     CUpti_BuffersCallbackCompleteFunc);
    CUptiResult (*GetNextRecord)(uint8_t *, size_t, CUpti_Activity **);
    CUptiResult (*FlushAll)(uint32_t);
    CUptiResult (*Push)(CUpti_ExternalCorrelationKind, uint64_t);
    CUptiResult (*Pop)(CUpti_ExternalCorrelationKind, uint64_t *);
    CUptiResult (*GetTimestamp)(uint64_t *);
    CUptiResult (*GetNumDropped)(CUcontext, uint32_t, size_t *);
    CUptiResult (*GetStreamIdEx)(CUcontext, CUstream, uint8_t, uint32_t *);
    CUptiResult (*EnableDriverApi)(CUpti_CallbackId, uint8_t);
    CUptiResult (*EnableHWTrace)(uint8_t); /* CUDA 13; NULL before */
};

struct cupti_corr {
    uint32_t corr;
    uint32_t reserved;
    uint64_t ext;
};

static struct cupti_api cu;
static _Atomic int cupti_on;
static CUpti_SubscriberHandle cupti_sub;
static uint8_t *cupti_pool;
static _Atomic uint32_t cupti_free_mask;
static _Atomic uint32_t cupti_pool_hw; /* buffers ever touched (lowest first) */
static pthread_mutex_t cupti_lock = PTHREAD_MUTEX_INITIALIZER;
static struct cupti_corr cupti_corr_map[CUPTI_CORR_SLOTS];
static struct p3d_span_set cupti_spans;
static struct p3d_clock_map cupti_clock;
static uint64_t cupti_clock_at;

/*
 * libcupti.so.13 next to the process's libcudart (CUDA toolkit layout) or
 * in the sibling wheel directory (pip: nvidia/cu13/lib, or
 * nvidia/cuda_runtime/lib next to nvidia/cuda_cupti/lib).
 */
static void *cupti_open_near_cudart(void)
{
    static const char *rel[] = {"libcupti.so.13",
                                "../../cuda_cupti/lib/libcupti.so.13",
                                "../extras/CUPTI/lib64/libcupti.so.13"};
    void *sym = p3d_resolve("cudaGetDevice", NULL);
    char path[4096];
    Dl_info info;
    size_t i;
    char *slash;
    void *h;

    if (!sym || !dladdr(sym, &info) || !info.dli_fname ||
        strlen(info.dli_fname) >= sizeof(path) - 64)
        return NULL;
    strcpy(path, info.dli_fname);
    slash = strrchr(path, '/');
    if (!slash)
        return NULL;
    for (i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
        strcpy(slash + 1, rel[i]);
        if ((h = dlopen(path, RTLD_LAZY | RTLD_LOCAL)))
            return h;
    }
    return NULL;
}

/* Find the process's libcupti, loading it only as a last resort. */
static void *cupti_open(void)
{
    static const char *names[] = {"libcupti.so.13", "libcupti.so.12",
                                  "libcupti.so"};
    Dl_info info;
    void *h, *sym;
    size_t i;

    for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if ((h = dlopen(names[i], RTLD_LAZY | RTLD_NOLOAD)))
            return h;
    sym = p3d_resolve("cuptiActivityEnable", NULL);
    if (sym && dladdr(sym, &info) && info.dli_fname &&
        (h = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD)))
        return h;
    if ((h = cupti_open_near_cudart()))
        return h;
    for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if ((h = dlopen(names[i], RTLD_LAZY | RTLD_LOCAL)))
            return h;
    return NULL;
}

#define P3D_CUPTI_SYM(member, name)                                           \
    (*(void **)&cu.member = dlsym(h, name))

static int cupti_resolve(void)
{
    void *h = cupti_open();

    if (!h)
        return -1;
    P3D_CUPTI_SYM(Subscribe, "cuptiSubscribe");
    P3D_CUPTI_SYM(Unsubscribe, "cuptiUnsubscribe");
    P3D_CUPTI_SYM(Enable, "cuptiActivityEnable");
    P3D_CUPTI_SYM(Disable, "cuptiActivityDisable");
    P3D_CUPTI_SYM(RegisterCallbacks, "cuptiActivityRegisterCallbacks");
    P3D_CUPTI_SYM(GetNextRecord, "cuptiActivityGetNextRecord");
    P3D_CUPTI_SYM(FlushAll, "cuptiActivityFlushAll");
    P3D_CUPTI_SYM(Push, "cuptiActivityPushExternalCorrelationId");
    P3D_CUPTI_SYM(Pop, "cuptiActivityPopExternalCorrelationId");
    P3D_CUPTI_SYM(GetTimestamp, "cuptiGetTimestamp");
    P3D_CUPTI_SYM(GetNumDropped, "cuptiActivityGetNumDroppedRecords");
    P3D_CUPTI_SYM(GetStreamIdEx, "cuptiGetStreamIdEx");
    P3D_CUPTI_SYM(EnableDriverApi, "cuptiActivityEnableDriverApi");
    P3D_CUPTI_SYM(EnableHWTrace, "cuptiActivityEnableHWTrace");
    if (!cu.Subscribe || !cu.Enable || !cu.RegisterCallbacks ||
        !cu.GetNextRecord || !cu.FlushAll || !cu.Push || !cu.Pop ||
        !cu.GetTimestamp)
        return -1;
    return 0;
}

static uint64_t cupti_timestamp(void)
{
    uint64_t t = 0;

    if (cu.GetTimestamp(&t) != CUPTI_SUCCESS)
        return 0;
    return t;
}

/* CUPTI wants an empty buffer: take one from the pool (lock-free). */
static void CUPTIAPI cupti_buf_request(uint8_t **buf, size_t *size,
                                       size_t *max_records)
{
    uint32_t m = atomic_load(&cupti_free_mask);

    *max_records = 0;
    while (m) {
        int i = __builtin_ctz(m);

        if (atomic_compare_exchange_weak(&cupti_free_mask, &m,
                                         m & ~(1u << i))) {
            uint32_t hw = atomic_load(&cupti_pool_hw);
            while ((uint32_t)i + 1 > hw &&
                   !atomic_compare_exchange_weak(&cupti_pool_hw, &hw,
                                                 (uint32_t)i + 1))
                ;
            *buf = cupti_pool + (size_t)i * CUPTI_BUF_BYTES;
            *size = CUPTI_BUF_BYTES;
            return;
        }
    }
    *buf = NULL;
    *size = 0;
    p3d_warn_once("cupti_pool", "CUPTI buffer pool exhausted: some GPU "
                  "activity records were dropped");
}

static void cupti_buf_release(uint8_t *buf)
{
    size_t i = (size_t)(buf - cupti_pool) / CUPTI_BUF_BYTES;

    if (buf >= cupti_pool && i < CUPTI_BUFS)
        atomic_fetch_or(&cupti_free_mask, 1u << i);
}

static int cupti_is_nccl(const char *name)
{
    return name && (strstr(name, "ncclDevKernel_") ||
                    strstr(name, "ncclKernel_"));
}

/* GPU_OP record(s) for an NCCL kernel linked to external id `ext`. */
static void cupti_nccl_op(uint64_t ext, uint64_t start, uint64_t end)
{
    struct p3d_gpu_group g;
    uint32_t i;

    if (!(ext & P3D_GPU_GROUP_KEY)) {
        p3d_gpu_op_write(P3D_GPU_SRC_CUPTI, ext, start, end);
        return;
    }
    if (!p3d_gpu_group_get(ext, &g))
        return;
    for (i = 0; i < g.n_ops; i++)
        p3d_gpu_op_write(P3D_GPU_SRC_CUPTI, g.op_id[i], start, end);
}

/* How NCCL kernels were linked (under cupti_lock), noted in the trace. */
static uint64_t cupti_n_by_id, cupti_n_by_order, cupti_n_unlinked;
static const char *cupti_driver_mode = "off";
/* What stamps the kernel records: the trace's note says (issue 24). */
static const char *cupti_kernel_clock = "software instrumentation";
static int cupti_hw_error;   /* cuptiActivityEnableHWTrace's refusal */
static int cupti_windowed; /* kernel windows only (p3d_gpu_window.c) */

static void cupti_kernel(const CUpti_ActivityKernel10 *k)
{
    uint64_t s = p3d_clock_to_host(&cupti_clock, k->start);
    uint64_t e = p3d_clock_to_host(&cupti_clock, k->end);
    const struct cupti_corr *c;
    uint64_t key;

    if (!cupti_is_nccl(k->name)) {
        p3d_span_add(&cupti_spans, (uint16_t)k->deviceId, k->streamId,
                     P3D_SPAN_COMPUTE, s, e);
        return;
    }
    p3d_span_cut(&cupti_spans, (uint16_t)k->deviceId, k->streamId);
    c = &cupti_corr_map[k->correlationId % CUPTI_CORR_SLOTS];
    if (c->corr == k->correlationId && c->ext) {
        p3d_cupti_order_linked(k->streamId, c->ext);
        cupti_nccl_op(c->ext, s, e);
        cupti_n_by_id++;
        return;
    }
    if (p3d_cupti_order_match(k->streamId, &key)) {
        cupti_nccl_op(key, s, e);     /* launched from NCCL's own thread */
        cupti_n_by_order++;
        return;
    }
    /* Not linked to an op (e.g. replayed from a CUDA graph). */
    cupti_n_unlinked++;
    {
        struct p3d_span_open one = {k->streamId, s, e, e - s, 1,
                                    (uint16_t)k->deviceId, P3D_SPAN_NCCL, 1};

        p3d_span_write(&one, NULL);
    }
}

static void cupti_record(const CUpti_Activity *r)
{
    switch (r->kind) {
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: {
        const CUpti_ActivityExternalCorrelation *x = (const void *)r;
        struct cupti_corr *c =
            &cupti_corr_map[x->correlationId % CUPTI_CORR_SLOTS];

        if (x->externalKind != CUPTI_EXT_KIND)
            return;
        c->corr = x->correlationId;
        c->ext = x->externalId;
        return;
    }
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
        cupti_kernel((const CUpti_ActivityKernel10 *)r);
        return;
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
        const CUpti_ActivityMemcpy6 *m = (const void *)r;

        p3d_span_add(&cupti_spans, (uint16_t)m->deviceId, m->streamId,
                     P3D_SPAN_COPY, p3d_clock_to_host(&cupti_clock, m->start),
                     p3d_clock_to_host(&cupti_clock, m->end));
        return;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
        const CUpti_ActivityMemset4 *m = (const void *)r;

        p3d_span_add(&cupti_spans, (uint16_t)m->deviceId, m->streamId,
                     P3D_SPAN_COPY, p3d_clock_to_host(&cupti_clock, m->start),
                     p3d_clock_to_host(&cupti_clock, m->end));
        return;
    }
    default:
        return;
    }
}

/* A buffer is full (or flushed): turn its records into trace records. */
static void CUPTIAPI cupti_buf_complete(CUcontext ctx, uint32_t stream,
                                        uint8_t *buf, size_t size,
                                        size_t valid)
{
    CUpti_Activity *r = NULL;
    size_t dropped = 0;

    (void)size;
    pthread_mutex_lock(&cupti_lock);
    while (valid &&
           cu.GetNextRecord(buf, valid, &r) == CUPTI_SUCCESS)
        cupti_record(r);
    pthread_mutex_unlock(&cupti_lock);
    cupti_buf_release(buf);
    if (cu.GetNumDropped &&
        cu.GetNumDropped(ctx, stream, &dropped) == CUPTI_SUCCESS && dropped)
        p3d_warn_once("cupti_dropped", "CUPTI dropped %zu activity records",
                      dropped);
}

static void CUPTIAPI cupti_noop_cb(void *u, CUpti_CallbackDomain d,
                                   CUpti_CallbackId id, const void *data)
{
    (void)u;
    (void)d;
    (void)id;
    (void)data;
}

static void cupti_busy(CUptiResult r)
{
    if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED)
        p3d_warn_once("cupti_busy", "CUPTI is in use by another tool "
                      "(torch.profiler, Nsight?): GPU times come from CUDA "
                      "events and there is no compute timeline");
    else
        p3d_warn_once("cupti_busy", "CUPTI failed (error %d): GPU times "
                      "come from CUDA events and there is no compute "
                      "timeline", (int)r);
}

/*
 * External correlation records accompany API activity records only, and
 * NCCL launches with cuLaunchKernel* through driver entry points.  By
 * default no driver call is recorded and NCCL kernels are linked to ops
 * by launch order per stream, the way every kernel of a non-blocking
 * communicator (PyTorch's) is linked anyway.  Measured on the H200
 * (bench/README.md, CUDA 13.0 CUPTI, NCCL 2.28.9): the whole driver-API
 * kind (P3D_CUPTI_DRIVER=all) cost a host-bound 2-GPU DDP loop ~30% of
 * its step and linked nccl-tests' kernels by id; the launch calls alone
 * (=launch, cuptiActivityEnableDriverApi; a CUPTI without it gets the
 * whole kind) linked none by id; launch order linked every kernel of 56
 * nccl-tests sizes right.
 */
static const CUpti_CallbackId cupti_launch_cbids[] = {
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz};
#define CUPTI_N_LAUNCH_CBIDS \
    (sizeof(cupti_launch_cbids) / sizeof(cupti_launch_cbids[0]))

static void cupti_launch_apis(uint8_t on)
{
    size_t i;

    for (i = 0; i < CUPTI_N_LAUNCH_CBIDS; i++)
        cu.EnableDriverApi(cupti_launch_cbids[i], on);
}

/* 1 when every launch API's records are on. */
static int cupti_enable_launch_apis(void)
{
    size_t i;

    if (!cu.EnableDriverApi)
        return 0;
    for (i = 0; i < CUPTI_N_LAUNCH_CBIDS; i++)
        if (cu.EnableDriverApi(cupti_launch_cbids[i], 1) != CUPTI_SUCCESS) {
            cupti_launch_apis(0);
            return 0;
        }
    return 1;
}

static void cupti_enable_driver(void)
{
    const char *e = getenv(P3D_ENV_CUPTI_DRIVER);
    int all = e && strcmp(e, "all") == 0;

    if (e == NULL || *e == '\0' || strcmp(e, "0") == 0)
        return;
    if (!all && strcmp(e, "launch") != 0) {
        p3d_warn_once("cupti_driver_env", "%s=%s is not 0, launch or all: "
                      "using 0", P3D_ENV_CUPTI_DRIVER, e);
        return;
    }
    cupti_driver_mode = "launch";
    if (!all && cupti_enable_launch_apis())
        return;
    cupti_driver_mode = "all";
    if (cu.Enable(CUPTI_ACTIVITY_KIND_DRIVER) != CUPTI_SUCCESS) {
        cupti_driver_mode = "off";
        p3d_warn_once("cupti_driver", "CUPTI driver API tracing "
                      "unavailable: NCCL kernels are linked to ops by "
                      "launch order only");
    }
}

static int cupti_enable_all(void)
{
    static const CUpti_ActivityKind need[] = {
        CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION,
        CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL};
    CUptiResult r;
    size_t i;

    for (i = 0; i < sizeof(need) / sizeof(need[0]); i++)
        if ((r = cu.Enable(need[i])) != CUPTI_SUCCESS) {
            cupti_busy(r);
            return -1;
        }
    cupti_enable_driver();
    if (cu.Enable(CUPTI_ACTIVITY_KIND_MEMCPY) != CUPTI_SUCCESS ||
        cu.Enable(CUPTI_ACTIVITY_KIND_MEMSET) != CUPTI_SUCCESS)
        p3d_warn_once("cupti_memcpy", "CUPTI copy tracing unavailable: "
                      "copies are missing from the GPU timeline");
    return 0;
}

static void cupti_undo(void)
{
    if (cu.Disable) {
        cu.Disable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
        cu.Disable(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION);
        cu.Disable(CUPTI_ACTIVITY_KIND_MEMCPY);
        cu.Disable(CUPTI_ACTIVITY_KIND_MEMSET);
        cu.Disable(CUPTI_ACTIVITY_KIND_DRIVER);
    }
    if (cu.EnableDriverApi)
        cupti_launch_apis(0);
    if (cu.Unsubscribe && cupti_sub)
        cu.Unsubscribe(cupti_sub);
    cupti_sub = NULL;
}

/*
 * Kernel timestamps from the GPU's Hardware Event System instead of
 * CUPTI's instrumentation (cuptiActivityEnableHWTrace, CUDA 13's CUPTI;
 * Blackwell only by its header): asked for before any kind is enabled.
 * Every refusal (CUPTI_ERROR_NOT_SUPPORTED on older GPUs, virtualised,
 * MIG, confidential computing ...) or an older CUPTI without the call
 * keeps the usual records, silently: the note says which clock it was.
 * Kernel windows stay as they are until the hardware path's cost is
 * measured on a Blackwell GPU.
 */
static void cupti_try_hw_trace(void)
{
    CUptiResult r;

    if (!cu.EnableHWTrace) {
        cupti_kernel_clock = "software instrumentation (this CUPTI has no "
                             "hardware trace)";
        return;
    }
    r = cu.EnableHWTrace(1);
    if (r == CUPTI_SUCCESS) {
        cupti_kernel_clock = "the hardware event system";
        return;
    }
    cupti_hw_error = (int)r;
    cupti_kernel_clock = "software instrumentation (hardware trace refused)";
}

/* Claim CUPTI, map the buffer pool, pair the clocks; no kind enabled. */
static int cupti_setup(int required)
{
    CUptiResult r;

    if (cupti_resolve() != 0) {
        if (required)
            p3d_warn_once("cupti_missing", "P3D_GPU_TIMING=cupti but no "
                          "usable libcupti was found: using CUDA events");
        return -1;
    }
    if ((r = cu.Subscribe(&cupti_sub, cupti_noop_cb, NULL)) !=
        CUPTI_SUCCESS) {
        cupti_sub = NULL;
        cupti_busy(r);
        return -1;
    }
    cupti_pool = mmap(NULL, (size_t)CUPTI_BUFS * CUPTI_BUF_BYTES,
                      PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                      -1, 0);
    if (cupti_pool == MAP_FAILED) {
        cupti_pool = NULL;
        cupti_undo();
        return -1;
    }
    atomic_store(&cupti_free_mask, 0xffffffffu);
    p3d_span_init(&cupti_spans, p3d_span_write, NULL);
    if (p3d_clock_pair(&cupti_clock, cupti_timestamp, -1, 5) != 0 ||
        cu.RegisterCallbacks(cupti_buf_request, cupti_buf_complete) !=
            CUPTI_SUCCESS) {
        cupti_undo();
        return -1;
    }
    cupti_clock_at = p3d_now();
    cupti_try_hw_trace();
    return 0;
}

int p3d_cupti_start(int required)
{
    if (cupti_setup(required) != 0)
        return -1;
    if (cupti_enable_all() != 0) {
        cupti_undo();
        return -1;
    }
    atomic_store(&cupti_on, 1);
    return 0;
}

int p3d_cupti_start_windowed(void)
{
    if (cupti_setup(0) != 0)
        return -1;
    cupti_windowed = 1;
    atomic_store(&cupti_on, 1);
    return 0;
}

/*
 * A kernel window opens or closes.  Kernels launched before the close
 * still deliver their records (the regular flush picks them up); their
 * open spans are written by p3d_cupti_close_spans a moment later.
 */
int p3d_cupti_kernels(int on)
{
    static const CUpti_ActivityKind kinds[] = {
        CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
        CUPTI_ACTIVITY_KIND_MEMSET};
    size_t i, n = sizeof(kinds) / sizeof(kinds[0]);

    if (!atomic_load(&cupti_on))
        return -1;
    for (i = 0; i < n; i++) {
        CUptiResult r = on ? cu.Enable(kinds[i]) : cu.Disable(kinds[i]);

        if (r != CUPTI_SUCCESS && on) {
            p3d_warn_once("cupti_window", "CUPTI refused kernel or copy "
                          "records (error %d): no kernel window until it "
                          "takes them", (int)r);
            while (i-- > 0)
                cu.Disable(kinds[i]);
            return -1;
        }
    }
    return 0;
}

void p3d_cupti_close_spans(void)
{
    if (!atomic_load(&cupti_on))
        return;
    cu.FlushAll(0);
    pthread_mutex_lock(&cupti_lock);
    p3d_span_flush(&cupti_spans);
    pthread_mutex_unlock(&cupti_lock);
}

void p3d_cupti_push(uint64_t key)
{
    cu.Push(CUPTI_EXT_KIND, key);
}

void p3d_cupti_pop(void)
{
    uint64_t last;

    cu.Pop(CUPTI_EXT_KIND, &last);
}

/* Per-thread cache of stream -> CUPTI id (a job has a few NCCL streams). */
#define CUPTI_SID_CACHE 8

uint32_t p3d_cupti_stream_id(void *stream)
{
    static P3D_TLS void *c_stream[CUPTI_SID_CACHE];
    static P3D_TLS uint32_t c_id[CUPTI_SID_CACHE];
    static P3D_TLS unsigned c_next;
    uint32_t id = 0;
    unsigned i;

    for (i = 0; i < CUPTI_SID_CACHE; i++)
        if (c_id[i] && c_stream[i] == stream)
            return c_id[i];
    if (!cu.GetStreamIdEx ||
        cu.GetStreamIdEx(NULL, (CUstream)stream, 0, &id) != CUPTI_SUCCESS)
        return 0;
    i = c_next++ % CUPTI_SID_CACHE;
    c_stream[i] = stream;
    c_id[i] = id;
    return id;
}

void p3d_cupti_tick(void)
{
    if (!atomic_load(&cupti_on))
        return;
    if (p3d_now() - cupti_clock_at >= CUPTI_CLOCK_NS) {
        struct p3d_clock_map m;

        if (p3d_clock_pair(&m, cupti_timestamp, -1, 3) == 0) {
            pthread_mutex_lock(&cupti_lock);
            cupti_clock = m;
            pthread_mutex_unlock(&cupti_lock);
        }
        cupti_clock_at = p3d_now();
    }
    cu.FlushAll(0);
}

void p3d_cupti_flush(void)
{
    if (atomic_load(&cupti_on))
        cu.FlushAll(0);
}

/*
 * Exit: CUPTI's documented at-exit forced flush (a CUPTI call, not a CUDA
 * runtime call), then close the open spans.
 */
void p3d_cupti_fini(void)
{
    if (!atomic_exchange(&cupti_on, 0))
        return;
    cu.FlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    pthread_mutex_lock(&cupti_lock);
    p3d_span_flush(&cupti_spans);
    /* what of the pool was ever resident: the shim's memory under CUPTI */
    p3d_note("cupti pool: %u of %u buffers of %u KiB used at most",
             atomic_load(&cupti_pool_hw), CUPTI_BUFS, CUPTI_BUF_BYTES >> 10);
    if (cupti_hw_error)
        p3d_note("cupti kernel clock: %s, error %d", cupti_kernel_clock,
                 cupti_hw_error);
    else
        p3d_note("cupti kernel clock: %s", cupti_kernel_clock);
    if (cupti_windowed) {
        char w[96];

        p3d_gpu_window_describe(w, sizeof(w));
        p3d_note("cupti: kernel records in %s; NCCL ops timed by %s "
                 "(NCCL kernels %llu)", w, p3d_gpu_ops_source(),
                 (unsigned long long)cupti_n_unlinked);
    } else {
        p3d_note("cupti: driver records %s; NCCL kernels linked by "
                 "correlation id %llu, by launch order %llu, to no op %llu",
                 cupti_driver_mode, (unsigned long long)cupti_n_by_id,
                 (unsigned long long)cupti_n_by_order,
                 (unsigned long long)cupti_n_unlinked);
    }
    pthread_mutex_unlock(&cupti_lock);
}
