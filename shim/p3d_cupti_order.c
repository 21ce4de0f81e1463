/*
 * p3d_cupti_order.c - link NCCL kernels to ops by launch order per stream
 * when external correlation cannot.
 *
 * External correlation ids only reach launches made on the thread that
 * pushed them.  For non-blocking communicators (PyTorch with device_id /
 * eager init) NCCL launches from its own group thread, so those kernels
 * arrive without our id.  Every launch unit (an ungrouped op, or the ops
 * of one outermost group on one stream) is therefore also queued here
 * with its CUPTI stream id and the number of kernels it launches (one per
 * communicator); kernels of a stream complete in launch order, so an
 * unlinked NCCL kernel belongs to the oldest unit of its stream still
 * waiting for kernels.  A linked kernel retires its unit and every older
 * unit of the stream (ops that launched no kernel).
 *
 * App threads append lock-free; only the CUPTI buffer thread reads, under
 * the CUPTI backend's lock.  The ring holds the last P3D_ORDER_SLOTS units.
 */
#include <stdatomic.h>

#include "p3d_gpu.h"

#define P3D_ORDER_SLOTS 4096u

struct order_unit {
    _Atomic uint64_t seq;    /* sequence + 1 once published, 0 = empty */
    uint64_t key;            /* op_id or group key */
    uint32_t stream;         /* CUPTI stream id */
    uint32_t remaining;      /* kernels still expected */
};

#define P3D_ORDER_HINTS 64

static struct order_unit order_ring[P3D_ORDER_SLOTS];
static _Atomic uint64_t order_head;
static uint64_t order_tail;  /* oldest unit maybe waiting (reader only) */

/*
 * Per stream, the sequence after its last matched unit: units of a stream
 * are consumed in order, so a scan may start there (a stream whose units
 * never get kernels, e.g. a 1-rank communicator's, holds the tail back).
 */
static struct {
    uint32_t stream;
    uint64_t next;
} order_hint[P3D_ORDER_HINTS];

static uint64_t order_start(uint32_t stream)
{
    uint32_t i = stream % P3D_ORDER_HINTS;

    if (order_hint[i].stream == stream && order_hint[i].next > order_tail)
        return order_hint[i].next;
    return order_tail;
}

static void order_hint_set(uint32_t stream, uint64_t next)
{
    uint32_t i = stream % P3D_ORDER_HINTS;

    order_hint[i].stream = stream;
    order_hint[i].next = next;
}

void p3d_cupti_order_push(uint32_t stream, uint64_t key, uint32_t kernels)
{
    uint64_t s = atomic_fetch_add(&order_head, 1);
    struct order_unit *u = &order_ring[s % P3D_ORDER_SLOTS];

    atomic_store_explicit(&u->seq, 0, memory_order_relaxed);
    u->key = key;
    u->stream = stream;
    u->remaining = kernels ? kernels : 1;
    atomic_store_explicit(&u->seq, s + 1, memory_order_release);
}

/* The published unit of sequence s, or NULL. */
static struct order_unit *order_unit(uint64_t s)
{
    struct order_unit *u = &order_ring[s % P3D_ORDER_SLOTS];

    if (atomic_load_explicit(&u->seq, memory_order_acquire) != s + 1)
        return NULL;
    return u;
}

static uint64_t order_begin(void)
{
    uint64_t head = atomic_load(&order_head);

    if (head - order_tail > P3D_ORDER_SLOTS)
        order_tail = head - P3D_ORDER_SLOTS;   /* overwritten: lost */
    return head;
}

/* Move the tail past units that wait for nothing. */
static void order_trim(uint64_t head)
{
    while (order_tail < head) {
        struct order_unit *u = order_unit(order_tail);

        if (!u || u->remaining)
            break;
        order_tail++;
    }
}

int p3d_cupti_order_match(uint32_t stream, uint64_t *key)
{
    uint64_t head = order_begin(), s;

    for (s = order_start(stream); s < head; s++) {
        struct order_unit *u = order_unit(s);

        if (!u || u->stream != stream || !u->remaining)
            continue;
        *key = u->key;
        if (--u->remaining == 0)
            order_hint_set(stream, s + 1);
        order_trim(head);
        return 1;
    }
    return 0;
}

void p3d_cupti_order_linked(uint32_t stream, uint64_t key)
{
    uint64_t head = order_begin(), s, found = head;

    for (s = order_start(stream); s < head && found == head; s++) {
        struct order_unit *u = order_unit(s);

        if (u && u->stream == stream && u->remaining && u->key == key)
            found = s;
    }
    if (found == head)
        return;                    /* not queued: leave the others alone */
    for (s = order_start(stream); s < found; s++) {
        struct order_unit *u = order_unit(s);

        if (u && u->stream == stream)
            u->remaining = 0;      /* older unit that launched nothing */
    }
    if (--order_unit(found)->remaining == 0)
        order_hint_set(stream, found + 1);
    order_trim(head);
}
