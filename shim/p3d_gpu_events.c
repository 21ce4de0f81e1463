/*
 * p3d_gpu_events.c - GPU op times from CUDA events (fallback when CUPTI is
 * unavailable or held by another tool).
 *
 * The app thread records a "start" event on the op's stream before the
 * NCCL call and an "end" event after it (for grouped ops: at the outermost
 * ncclGroupEnd, where the kernels launch).  Events live in a fixed ring of
 * slots, created once per slot; the background thread polls the oldest
 * slots with cudaEventQuery and converts to host time against a reference
 * event it records itself every second (host time bracketed around
 * record+synchronize); it scans the used part of the ring each tick, so
 * completion order across streams does not matter.  Streams being graph-captured are skipped: an event
 * recorded there would become a graph node.  The ring never blocks the
 * app: a full ring drops the op's GPU time (warned once).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include "p3d_gpu.h"
#include "p3d_gpu_cuda.h"
#include "p3d_shim.h"

#define EV_SLOTS 4096
#define EV_REF_NS 1000000000ull
#define EV_REF_BRACKET_NS 50000ull   /* accept a reference within 25 us */

enum { EV_FREE, EV_FILLING, EV_READY };

struct ev_slot {
    _Atomic int state;
    uint64_t op_id;
    cudaEvent_t start;
    cudaEvent_t end;
    cudaStream_t stream;
};

static struct ev_slot ev_ring[EV_SLOTS];
static _Atomic uint64_t ev_head;   /* claim cursor (app threads) */
static int ev_device;
static pthread_mutex_t ev_poll_lock = PTHREAD_MUTEX_INITIALIZER;
static cudaEvent_t ev_ref;
static cudaStream_t ev_ref_stream;
static uint64_t ev_ref_host, ev_ref_at;

/* Slot claimed by this thread's ungrouped op in flight; -1 none. */
static P3D_TLS int ev_tls_slot = -1;
static P3D_TLS struct {
    uint32_t n;
    int slot[P3D_GPU_GROUP_OPS];
} ev_tls_group;

int p3d_events_start(void)
{
    const struct p3d_cuda_api *c = p3d_cuda_api();

    if (!c->EventCreateWithFlags || !c->EventRecord || !c->EventQuery ||
        !c->EventElapsedTime || !c->EventSynchronize ||
        !c->StreamCreateWithFlags)
        return -1;
    if (c->GetDevice)
        c->GetDevice(&ev_device);
    return 0;
}

static int ev_capturing(const struct p3d_cuda_api *c, cudaStream_t s)
{
    enum cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;

    if (!c->StreamIsCapturing || c->StreamIsCapturing(s, &st) != cudaSuccess)
        return 0;
    if (st == cudaStreamCaptureStatusNone)
        return 0;
    p3d_warn_once("gpu_capture", "NCCL ops on graph-captured streams get no "
                  "GPU times with CUDA events (skipped)");
    return 1;
}

/* Claim a free slot (a few tries) and record its start event; -1 none. */
static int ev_claim(const struct p3d_op_ctx *op)
{
    const struct p3d_cuda_api *c = p3d_cuda_api();
    cudaStream_t s = (cudaStream_t)op->stream;
    struct ev_slot *e = NULL;
    uint64_t i = 0;
    int tries;

    if (ev_capturing(c, s))
        return -1;
    for (tries = 0; tries < 8 && !e; tries++) {
        int st = EV_FREE;

        i = atomic_fetch_add(&ev_head, 1) % EV_SLOTS;
        if (atomic_compare_exchange_strong(&ev_ring[i].state, &st,
                                           EV_FILLING))
            e = &ev_ring[i];
    }
    if (!e) {
        p3d_warn_once("gpu_events_full", "CUDA event ring full: some ops "
                      "get no GPU times");
        return -1;
    }
    if (!e->start &&
        (c->EventCreateWithFlags(&e->start, cudaEventDefault) != cudaSuccess ||
         c->EventCreateWithFlags(&e->end, cudaEventDefault) != cudaSuccess)) {
        e->start = NULL;
        atomic_store(&e->state, EV_FREE);
        return -1;
    }
    e->op_id = op->op_id;
    e->stream = s;
    c->EventRecord(e->start, s);
    return (int)i;
}

static void ev_finish(int slot)
{
    struct ev_slot *e = &ev_ring[slot];

    p3d_cuda_api()->EventRecord(e->end, e->stream);
    atomic_store_explicit(&e->state, EV_READY, memory_order_release);
}

void p3d_events_op_before(const struct p3d_op_ctx *op)
{
    int slot = ev_claim(op);

    if (!op->in_group) {
        ev_tls_slot = slot;
        return;
    }
    if (slot < 0)
        return;
    if (ev_tls_group.n < P3D_GPU_GROUP_OPS)
        ev_tls_group.slot[ev_tls_group.n++] = slot;
    else
        ev_finish(slot);   /* too many: end it now rather than leak it */
}

void p3d_events_op_after(const struct p3d_op_ctx *op, int ret)
{
    (void)ret;
    if (op->in_group || ev_tls_slot < 0)
        return;
    ev_finish(ev_tls_slot);
    ev_tls_slot = -1;
}

void p3d_events_group_end_after(uint32_t group_id)
{
    uint32_t i;

    (void)group_id;
    for (i = 0; i < ev_tls_group.n; i++)
        ev_finish(ev_tls_group.slot[i]);
    ev_tls_group.n = 0;
}

/* Re-anchor the reference event (background thread). */
static int ev_ref_update(const struct p3d_cuda_api *c)
{
    uint64_t h0 = 0, h1 = 0;
    int tries;

    if (!ev_ref_stream) {
        int old = -1, bad;

        /* May run on an app thread (drain): keep its current device. */
        if (c->GetDevice && c->SetDevice && c->GetDevice(&old) == cudaSuccess)
            c->SetDevice(ev_device);
        bad = c->StreamCreateWithFlags(&ev_ref_stream,
                                       cudaStreamNonBlocking) != cudaSuccess ||
              c->EventCreateWithFlags(&ev_ref, cudaEventDefault) !=
                  cudaSuccess;
        if (old >= 0 && old != ev_device)
            c->SetDevice(old);
        if (bad) {
            ev_ref_stream = NULL;
            return -1;
        }
    }
    /*
     * The event's time lies between h0 and h1; retry until the bracket is
     * narrow (a first record may wait for the stream to start, a loaded
     * host may deschedule us), keeping the last, which is the recorded one.
     */
    for (tries = 0; tries < 8; tries++) {
        h0 = p3d_now();
        if (c->EventRecord(ev_ref, ev_ref_stream) != cudaSuccess ||
            c->EventSynchronize(ev_ref) != cudaSuccess)
            return -1;
        h1 = p3d_now();
        if (h1 - h0 < EV_REF_BRACKET_NS)
            break;
    }
    ev_ref_host = h0 + (h1 - h0) / 2;
    ev_ref_at = h1;
    return 0;
}

/* Convert a completed slot and write its GPU_OP record. */
static void ev_emit(const struct p3d_cuda_api *c, struct ev_slot *e)
{
    float ms0 = 0, ms1 = 0;
    int64_t start;

    if (c->EventElapsedTime(&ms0, ev_ref, e->start) != cudaSuccess ||
        c->EventElapsedTime(&ms1, e->start, e->end) != cudaSuccess)
        return;
    start = (int64_t)ev_ref_host + (int64_t)((double)ms0 * 1e6);
    p3d_gpu_op_write(P3D_GPU_SRC_EVENTS, e->op_id, (uint64_t)start,
                     (uint64_t)start + (uint64_t)((double)ms1 * 1e6));
}

static int ev_poll(void)
{
    const struct p3d_cuda_api *c = p3d_cuda_api();
    uint64_t head = atomic_load(&ev_head);
    uint64_t n = head < EV_SLOTS ? head : EV_SLOTS, i;
    int busy = 0;

    for (i = 0; i < n; i++) {
        struct ev_slot *e = &ev_ring[i];
        int st = atomic_load_explicit(&e->state, memory_order_acquire);
        cudaError_t q;

        if (st == EV_FILLING)
            busy = 1;
        if (st != EV_READY)
            continue;
        q = c->EventQuery(e->end);
        if (q == cudaErrorNotReady) {
            busy = 1;
            continue;
        }
        if (q == cudaSuccess && (ev_ref_stream || !ev_ref_update(c))) {
            if (p3d_now() - ev_ref_at > EV_REF_NS)
                ev_ref_update(c);
            ev_emit(c, e);
        }
        atomic_store(&e->state, EV_FREE);
        busy = 1;    /* ops are flowing: come back in 1 ms, not 10 */
    }
    return busy;
}

/* Background thread: poll unless a drain is running. */
int p3d_events_tick(void)
{
    int busy;

    if (pthread_mutex_trylock(&ev_poll_lock) != 0)
        return 1;
    busy = ev_poll();
    pthread_mutex_unlock(&ev_poll_lock);
    return busy;
}

/*
 * A communicator is ending (app thread, CUDA still alive): poll until the
 * recorded ops completed or `max_ns` passed, so the last ops of a job get
 * their GPU times although no CUDA call is allowed at exit.
 */
void p3d_events_drain(uint64_t max_ns)
{
    uint64_t t0 = p3d_now();
    struct timespec ms = {0, 1000000L};
    int busy;

    do {
        pthread_mutex_lock(&ev_poll_lock);
        busy = ev_poll();
        pthread_mutex_unlock(&ev_poll_lock);
        if (busy)
            nanosleep(&ms, NULL);
    } while (busy && p3d_now() - t0 < max_ns);
}
