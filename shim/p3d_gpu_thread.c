/*
 * p3d_gpu_thread.c - the one background thread of the GPU timeline and
 * memory sampler, so no CUDA query ever runs on the application's path.
 *
 * Every tick (1 ms while CUDA events are pending, else 10 ms) it polls the
 * event ring; every 10 ms it reads the reserved size of memory pools that
 * served cudaMallocAsync; it samples cudaMemGetInfo of the devices the
 * process allocated on every 100 ms while the application allocates and
 * once a second when it does not (p3d_mem_used_due); every 100 ms it lets
 * CUPTI flush.  It blocks all
 * signals, touches only devices the application already used (so it never
 * creates a context on another GPU), and is restarted lazily in a forked
 * child.
 */
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <stdatomic.h>
#include <time.h>

#include "p3d_gpu.h"
#include "p3d_gpu_cuda.h"
#include "p3d_mem.h"
#include "p3d_mem_wrap.h"
#include "p3d_shim.h"

static _Atomic int thr_started;
static _Atomic int thr_stop;
static _Atomic int thr_running;
static pthread_once_t thr_atfork_once = PTHREAD_ONCE_INIT;

static void thr_sleep_ms(int ms)
{
    struct timespec ts = {0, (long)ms * 1000000L};

    nanosleep(&ts, NULL);
}

static void thr_sample_pools(const struct p3d_cuda_api *c)
{
    uint32_t mask = p3d_mem_pool_devices();
    int d;

    if (!c->DeviceGetMemPool || !c->MemPoolGetAttribute || !c->SetDevice)
        return;
    for (d = 0; mask; d++, mask >>= 1) {
        cudaMemPool_t pool;
        uint64_t cur = 0, high = 0;

        if (!(mask & 1) || c->DeviceGetMemPool(&pool, d) != cudaSuccess)
            continue;
        if (c->MemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent,
                                   &cur) == cudaSuccess &&
            c->MemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemHigh,
                                   &high) == cudaSuccess)
            p3d_mem_pool_sample(d, cur, high);
    }
}

static void thr_sample_used(const struct p3d_cuda_api *c)
{
    uint32_t mask = p3d_mem_devices();
    int d;

    if (!c->MemGetInfo || !c->SetDevice)
        return;
    for (d = 0; mask; d++, mask >>= 1) {
        size_t free_b = 0, total = 0;

        if (!(mask & 1) || c->SetDevice(d) != cudaSuccess)
            continue;
        if (c->MemGetInfo(&free_b, &total) == cudaSuccess && total >= free_b)
            p3d_mem_used_sample(d, total - free_b);
    }
}

static void *thr_main(void *arg)
{
    const struct p3d_cuda_api *c = p3d_cuda_api();
    uint64_t last_pool = 0, last_slow = 0;

    (void)arg;
    while (!atomic_load(&thr_stop)) {
        uint64_t now = p3d_now();
        int busy = p3d_events_tick();

        if (now - last_pool >= 10000000ull) {
            thr_sample_pools(c);
            last_pool = now;
        }
        if (p3d_mem_used_due(now))
            thr_sample_used(c);
        p3d_gpu_window_tick(now);
        if (now - last_slow >= 100000000ull) {
            p3d_cupti_tick();
            last_slow = now;
        }
        thr_sleep_ms(busy ? 1 : 10);
    }
    atomic_store(&thr_running, 0);
    return NULL;
}

static void thr_atfork_child(void)
{
    atomic_store(&thr_started, 0);
    atomic_store(&thr_running, 0);
}

static void thr_atfork(void)
{
    pthread_atfork(NULL, NULL, thr_atfork_child);
}

/* Stop before the CUDA runtime's own exit handlers (see gpu_atexit). */
static void thr_atexit(void)
{
    p3d_gpu_thread_stop();
}

void p3d_gpu_thread_start(void)
{
    sigset_t all, old;
    pthread_t t;
    int expect = 0;

    if (atomic_load(&thr_stop) ||
        !atomic_compare_exchange_strong(&thr_started, &expect, 1))
        return;
    pthread_once(&thr_atfork_once, thr_atfork);
    atexit(thr_atexit);
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    atomic_store(&thr_running, 1);
    if (pthread_create(&t, NULL, thr_main, NULL) == 0)
        pthread_detach(t);
    else
        atomic_store(&thr_running, 0);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

void p3d_gpu_mem_seen(void)
{
    if (P3D_UNLIKELY(!atomic_load_explicit(&thr_started,
                                           memory_order_relaxed)))
        p3d_gpu_thread_start();
}

/* Ask the thread to stop; wait at most 200 ms (it may sit in CUDA). */
void p3d_gpu_thread_stop(void)
{
    int i;

    atomic_store(&thr_stop, 1);
    for (i = 0; i < 200 && atomic_load(&thr_running); i++)
        thr_sleep_ms(1);
}
