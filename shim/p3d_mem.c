/*
 * p3d_mem.c - lock-free allocation table and per-device memory levels.
 *
 * Allocation wrappers call p3d_mem_track/untrack on the application's
 * thread: a few atomics, no locks, no syscalls except p3d_now() when a new
 * peak is reached.  Peak changes become P3D_REC_MEM records, throttled to
 * one per P3D_MEM_EMIT_NS unless the peak grew by P3D_MEM_EMIT_BYTES; the
 * final levels are always written at exit (p3d_mem_emit_final).  See
 * p3d_mem.h for what each kind counts.
 */
#include <stdatomic.h>
#include <string.h>

#include "p3d_mem.h"
#include "p3d_shim.h"

#define TABLE_SIZE (1u << P3D_MEM_TABLE_BITS)
#define KEY_EMPTY 0ull
#define KEY_TOMB 1ull
#define VAL_BYTES_MASK 0x0000ffffffffffffull

struct mem_slot {
    _Atomic uint64_t key;
    _Atomic uint64_t val;   /* bytes | class << 48 | dev << 56 */
};

/* One reported level (P3D_MEM_* kind on one device). */
struct mem_level {
    _Atomic uint64_t cur;
    _Atomic uint64_t peak;
    _Atomic uint64_t emitted_peak;
    _Atomic uint64_t emitted_t;
};

/* The parts P3D_MEM_DEVICE is made of, per device. */
struct mem_dev {
    _Atomic uint64_t sync_live;   /* cudaMalloc, cuMemAlloc, mapped */
    _Atomic uint64_t async_live;  /* cudaMallocAsync live bytes */
    _Atomic uint64_t pool_cur;    /* sampled pool reserved bytes */
    _Atomic uint64_t pool_high;
    _Atomic int pool_known;
};

static struct mem_slot mem_table[TABLE_SIZE];
static struct mem_level mem_levels[P3D_MEM_KIND_COUNT][P3D_MEM_DEVS];
static struct mem_dev mem_devs[P3D_MEM_DEVS];
static _Atomic uint32_t mem_dev_mask;
static _Atomic uint32_t mem_pool_mask;
static _Atomic uint64_t mem_overflow;
static _Atomic int mem_changed;         /* since the last used sample */
static _Atomic uint64_t mem_used_at;    /* time of the last used sample */

static int mem_dev_index(int dev)
{
    if (dev < 0)
        return 0;
    return dev < P3D_MEM_DEVS ? dev : P3D_MEM_DEVS - 1;
}

static uint32_t mem_hash(uint64_t key)
{
    key ^= key >> 29;
    key *= 0x9e3779b97f4a7c15ull;
    return (uint32_t)(key >> (64 - P3D_MEM_TABLE_BITS));
}

static uint64_t mem_pack(uint64_t bytes, int cls, int dev)
{
    return (bytes & VAL_BYTES_MASK) | ((uint64_t)cls << 48) |
           ((uint64_t)dev << 56);
}

static void mem_write(int kind, int dev, uint64_t cur, uint64_t peak)
{
    struct p3d_rec_mem *r = p3d_rec_reserve(P3D_REC_MEM, sizeof(*r));

    if (!r)
        return;
    r->kind = (uint8_t)kind;
    r->device = (uint16_t)dev;
    r->t = p3d_now();
    r->current = cur;
    r->peak = peak;
    p3d_rec_commit(r);
}

/*
 * A new peak `cand` (above the one seen): raise it; write a record if the
 * throttle allows.  Out of line: most calls set no new peak.
 */
static __attribute__((noinline)) void mem_raise_peak(int kind, int dev,
                                                     uint64_t cur,
                                                     uint64_t cand)
{
    struct mem_level *l = &mem_levels[kind][dev];
    uint64_t old = atomic_load_explicit(&l->peak, memory_order_relaxed);
    uint64_t now;

    while (cand > old)
        if (atomic_compare_exchange_weak(&l->peak, &old, cand))
            break;
    if (cand <= old)
        return;
    now = p3d_now();
    if (cand < atomic_load(&l->emitted_peak) + P3D_MEM_EMIT_BYTES &&
        now < atomic_load(&l->emitted_t) + P3D_MEM_EMIT_NS)
        return;
    atomic_store(&l->emitted_peak, cand);
    atomic_store(&l->emitted_t, now);
    mem_write(kind, dev, cur, cand);
}

/* Set the current level; raise the peak to `cand` (at least `cur`). */
static inline void mem_raise(int kind, int dev, uint64_t cur, uint64_t cand)
{
    struct mem_level *l = &mem_levels[kind][dev];

    atomic_store_explicit(&l->cur, cur, memory_order_relaxed);
    if (cand < cur)
        cand = cur;
    if (cand > atomic_load_explicit(&l->peak, memory_order_relaxed))
        mem_raise_peak(kind, dev, cur, cand);
}

/* Recompute P3D_MEM_DEVICE of `dev` from its parts (in line: per call). */
static inline __attribute__((always_inline)) void
mem_device_update(int dev)
{
    struct mem_dev *d = &mem_devs[dev];
    uint64_t sync = atomic_load(&d->sync_live);
    uint64_t cur, cand;

    if (atomic_load(&d->pool_known)) {
        cur = sync + atomic_load(&d->pool_cur);
        cand = sync + atomic_load(&d->pool_high);
    } else {
        cur = sync + atomic_load(&d->async_live);
        cand = cur;
    }
    mem_raise(P3D_MEM_DEVICE, dev, cur, cand);
}

static inline __attribute__((always_inline)) void
mem_count(int cls, int dev, uint64_t bytes, int sign)
{
    _Atomic uint64_t *ctr;
    int kind;

    switch (cls) {
    case P3D_MC_DEVICE: ctr = &mem_devs[dev].sync_live; break;
    case P3D_MC_ASYNC: ctr = &mem_devs[dev].async_live; break;
    case P3D_MC_HOST: ctr = &mem_levels[P3D_MEM_HOST_PINNED][dev].cur; break;
    case P3D_MC_MANAGED: ctr = &mem_levels[P3D_MEM_MANAGED][dev].cur; break;
    default: return;
    }
    if (sign > 0)
        atomic_fetch_add(ctr, bytes);
    else
        atomic_fetch_sub(ctr, bytes);
    if (!atomic_load_explicit(&mem_changed, memory_order_relaxed))
        atomic_store_explicit(&mem_changed, 1, memory_order_relaxed);
    if (cls == P3D_MC_DEVICE || cls == P3D_MC_ASYNC) {
        mem_device_update(dev);
        return;
    }
    kind = cls == P3D_MC_HOST ? P3D_MEM_HOST_PINNED : P3D_MEM_MANAGED;
    if (sign > 0)
        mem_raise(kind, dev, atomic_load(&mem_levels[kind][dev].cur), 0);
}

int p3d_mem_track(uint64_t key, uint64_t bytes, int cls, int dev)
{
    uint32_t h = mem_hash(key);
    int i;

    dev = mem_dev_index(dev);
    if (key <= KEY_TOMB)
        return -1;
    for (i = 0; i < P3D_MEM_PROBE; i++) {
        struct mem_slot *s = &mem_table[(h + i) & (TABLE_SIZE - 1)];
        uint64_t k = atomic_load_explicit(&s->key, memory_order_acquire);

        if (k != KEY_EMPTY && k != KEY_TOMB)
            continue;
        if (!atomic_compare_exchange_strong(&s->key, &k, key))
            continue;
        atomic_store_explicit(&s->val, mem_pack(bytes, cls, dev),
                              memory_order_release);
        if (!(atomic_load_explicit(&mem_dev_mask, memory_order_relaxed) &
              (1u << dev)))
            atomic_fetch_or(&mem_dev_mask, 1u << dev);
        mem_count(cls, dev, bytes, 1);
        return 0;
    }
    atomic_fetch_add(&mem_overflow, 1);
    p3d_warn_once("mem_overflow", "allocation table full: some allocations "
                  "are not counted in memory peaks");
    return -1;
}

static struct mem_slot *mem_find(uint64_t key)
{
    uint32_t h = mem_hash(key);
    int i;

    for (i = 0; i < P3D_MEM_PROBE; i++) {
        struct mem_slot *s = &mem_table[(h + i) & (TABLE_SIZE - 1)];
        uint64_t k = atomic_load_explicit(&s->key, memory_order_acquire);

        if (k == key)
            return s;
        if (k == KEY_EMPTY)
            return NULL;
    }
    return NULL;
}

static void mem_unpack(uint64_t v, uint64_t *bytes, int *cls, int *dev)
{
    *bytes = v & VAL_BYTES_MASK;
    *cls = (int)((v >> 48) & 0xff);
    *dev = (int)(v >> 56);
}

int p3d_mem_lookup(uint64_t key, uint64_t *bytes, int *cls, int *dev)
{
    struct mem_slot *s = key > KEY_TOMB ? mem_find(key) : NULL;

    if (!s)
        return 0;
    mem_unpack(atomic_load_explicit(&s->val, memory_order_acquire), bytes,
               cls, dev);
    return 1;
}

uint64_t p3d_mem_untrack(uint64_t key, int *cls, int *dev)
{
    struct mem_slot *s = key > KEY_TOMB ? mem_find(key) : NULL;
    uint64_t k = key, bytes;

    if (!s)
        return 0;
    mem_unpack(atomic_load_explicit(&s->val, memory_order_acquire), &bytes,
               cls, dev);
    if (!atomic_compare_exchange_strong(&s->key, &k, KEY_TOMB))
        return 0;          /* a concurrent free of the same pointer */
    mem_count(*cls, *dev, bytes, -1);
    return bytes;
}

void p3d_mem_pool_note(int dev)
{
    uint32_t bit = 1u << mem_dev_index(dev);

    if (!(atomic_load_explicit(&mem_pool_mask, memory_order_relaxed) & bit))
        atomic_fetch_or(&mem_pool_mask, bit);
}

void p3d_mem_pool_sample(int dev, uint64_t reserved, uint64_t high)
{
    struct mem_dev *d;

    dev = mem_dev_index(dev);
    d = &mem_devs[dev];
    atomic_store(&d->pool_cur, reserved);
    if (high > atomic_load(&d->pool_high))
        atomic_store(&d->pool_high, high);
    atomic_store(&d->pool_known, 1);
    mem_device_update(dev);
}

void p3d_mem_used_sample(int dev, uint64_t used)
{
    dev = mem_dev_index(dev);
    mem_raise(P3D_MEM_DEVICE_USED, dev, used, used);
}

/*
 * cudaMemGetInfo is a driver round trip (reported to take milliseconds on
 * some systems), so a job whose allocator has settled is sampled once a
 * second, for NCCL's own buffers that no wrapper sees, and a job that
 * allocates or frees is sampled every 100 ms as before.
 */
int p3d_mem_used_due(uint64_t now)
{
    uint64_t last = atomic_load(&mem_used_at);
    uint64_t wait = atomic_load_explicit(&mem_changed, memory_order_relaxed)
                        ? P3D_MEM_USED_BUSY_NS : P3D_MEM_USED_IDLE_NS;

    if (last && now - last < wait)
        return 0;
    atomic_store_explicit(&mem_changed, 0, memory_order_relaxed);
    atomic_store(&mem_used_at, now ? now : 1);
    return 1;
}

uint32_t p3d_mem_devices(void)
{
    return atomic_load(&mem_dev_mask);
}

uint32_t p3d_mem_pool_devices(void)
{
    return atomic_load(&mem_pool_mask);
}

uint64_t p3d_mem_current(int kind, int dev)
{
    return atomic_load(&mem_levels[kind][mem_dev_index(dev)].cur);
}

uint64_t p3d_mem_peak(int kind, int dev)
{
    return atomic_load(&mem_levels[kind][mem_dev_index(dev)].peak);
}

void p3d_mem_peaks(uint64_t peak[P3D_MEM_KIND_COUNT])
{
    int k, d;

    for (k = 0; k < P3D_MEM_KIND_COUNT; k++) {
        peak[k] = 0;
        for (d = 0; d < P3D_MEM_DEVS; d++)
            peak[k] += atomic_load(&mem_levels[k][d].peak);
    }
}

void p3d_mem_emit_final(void)
{
    int k, d;

    for (k = 0; k < P3D_MEM_KIND_COUNT; k++)
        for (d = 0; d < P3D_MEM_DEVS; d++) {
            struct mem_level *l = &mem_levels[k][d];
            uint64_t peak = atomic_load(&l->peak);

            if (peak)
                mem_write(k, d, atomic_load(&l->cur), peak);
        }
}

uint64_t p3d_mem_overflow(void)
{
    return atomic_load(&mem_overflow);
}

void p3d_mem_reset(void)
{
    memset(mem_table, 0, sizeof(mem_table));
    memset(mem_levels, 0, sizeof(mem_levels));
    memset(mem_devs, 0, sizeof(mem_devs));
    atomic_store(&mem_dev_mask, 0);
    atomic_store(&mem_pool_mask, 0);
    atomic_store(&mem_overflow, 0);
    atomic_store(&mem_changed, 0);
    atomic_store(&mem_used_at, 0);
}
