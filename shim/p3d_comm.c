/*
 * p3d_comm.c - communicator table (see p3d_comm.h): open addressing on
 * the ncclComm_t pointer, lock-free reads, mutex-protected writes.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "p3d_comm.h"
#include "p3d_shim.h"

#define P3D_COMM_EMPTY 0
#define P3D_COMM_GONE 1

struct p3d_comm p3d_comm_table[P3D_COMM_TABLE];
static pthread_mutex_t p3d_comm_lock = PTHREAD_MUTEX_INITIALIZER;

struct p3d_comm *p3d_comm_find(const void *comm)
{
    uintptr_t key = (uintptr_t)comm;
    unsigned i = p3d_comm_slot(key), n;

    if (key <= P3D_COMM_GONE)
        return NULL;
    for (n = 0; n < P3D_COMM_TABLE; n++) {
        struct p3d_comm *c = &p3d_comm_table[(i + n) & (P3D_COMM_TABLE - 1)];
        uintptr_t k = __atomic_load_n(&c->key, __ATOMIC_ACQUIRE);

        if (k == key)
            return c;
        if (k == P3D_COMM_EMPTY)
            return NULL;
    }
    return NULL;
}

/* Slot for `key`: its live entry, else the first free one.  Locked. */
static struct p3d_comm *p3d_comm_place(uintptr_t key)
{
    unsigned i = p3d_comm_slot(key), n;
    struct p3d_comm *freeslot = NULL;

    for (n = 0; n < P3D_COMM_TABLE; n++) {
        struct p3d_comm *c = &p3d_comm_table[(i + n) & (P3D_COMM_TABLE - 1)];

        if (c->key == key)
            return c;
        if (c->key == P3D_COMM_GONE && freeslot == NULL)
            freeslot = c;
        if (c->key == P3D_COMM_EMPTY)
            return freeslot != NULL ? freeslot : c;
    }
    return freeslot;
}

static struct p3d_comm *p3d_comm_put(uintptr_t key, uint64_t hash,
                                     uint64_t parent, int unknown)
{
    struct p3d_comm *c = p3d_comm_place(key);

    if (c == NULL)
        return NULL;
    __atomic_store_n(&c->key, P3D_COMM_GONE, __ATOMIC_RELEASE);
    free(c->peer_seq);
    memset((char *)c + sizeof(c->key), 0, sizeof(*c) - sizeof(c->key));
    c->hash = hash;
    c->parent_hash = parent;
    c->nranks = c->rank = c->device = -1;
    c->unknown = unknown;
    __atomic_store_n(&c->key, key, __ATOMIC_RELEASE);
    return c;
}

struct p3d_comm *p3d_comm_add(const void *comm, uint64_t hash,
                              uint64_t parent_hash, int nranks, int rank,
                              int device)
{
    struct p3d_comm *c;

    if ((uintptr_t)comm <= P3D_COMM_GONE)
        return NULL;
    pthread_mutex_lock(&p3d_comm_lock);
    c = p3d_comm_put((uintptr_t)comm, hash, parent_hash, 0);
    pthread_mutex_unlock(&p3d_comm_lock);
    if (c != NULL && nranks > 0)
        p3d_comm_set_info(c, nranks, rank, device);
    else if (c != NULL)
        c->device = device;
    return c;
}

struct p3d_comm *p3d_comm_get_slow(const void *comm)
{
    struct p3d_comm *c = p3d_comm_find(comm);

    if (P3D_LIKELY(c != NULL) || (uintptr_t)comm <= P3D_COMM_GONE)
        return c;
    pthread_mutex_lock(&p3d_comm_lock);
    c = p3d_comm_place((uintptr_t)comm);
    if (c != NULL && c->key != (uintptr_t)comm)
        c = p3d_comm_put((uintptr_t)comm, (uint64_t)(uintptr_t)comm, 0, 1);
    pthread_mutex_unlock(&p3d_comm_lock);
    return c;
}

void p3d_comm_set_info(struct p3d_comm *c, int nranks, int rank, int device)
{
    uint64_t *seq;

    pthread_mutex_lock(&p3d_comm_lock);
    if (nranks > 0 && c->peer_seq == NULL) {
        seq = calloc(2 * (size_t)nranks, sizeof(*seq));
        if (seq != NULL) {
            __atomic_store_n(&c->peer_seq, seq, __ATOMIC_RELEASE);
            /* nranks after the array: readers index it below nranks */
            __atomic_store_n(&c->nranks, nranks, __ATOMIC_RELEASE);
        }
    }
    c->rank = rank;
    c->device = device;
    __atomic_store_n(&c->info_known, 1, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&p3d_comm_lock);
}

void p3d_comm_remove(const void *comm)
{
    struct p3d_comm *c;

    pthread_mutex_lock(&p3d_comm_lock);
    c = p3d_comm_find(comm);
    if (c != NULL)
        __atomic_store_n(&c->key, P3D_COMM_GONE, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&p3d_comm_lock);
}

/*
 * The sequence counters take no locked instruction (one costs 10-20 ns):
 * NCCL forbids issuing ops on one communicator from two threads at once
 * (user guide, "Thread Safety"), and a hand-over between threads is
 * ordered by the application's own synchronisation.  Relaxed atomic
 * loads/stores keep a concurrent reader (the watchdog) from tearing.
 */
static uint64_t p3d_comm_bump(uint64_t *ctr)
{
    uint64_t v = __atomic_load_n(ctr, __ATOMIC_RELAXED);

    __atomic_store_n(ctr, v + 1, __ATOMIC_RELAXED);
    return v;
}

uint64_t p3d_comm_next_coll(struct p3d_comm *c)
{
    return p3d_comm_bump(&c->coll_seq);
}

uint64_t p3d_comm_next_p2p(struct p3d_comm *c, int peer, int is_recv)
{
    int n = __atomic_load_n(&c->nranks, __ATOMIC_ACQUIRE);
    uint64_t *seq;

    if (n <= 0 || peer < 0 || peer >= n)
        return UINT64_MAX;
    seq = __atomic_load_n(&c->peer_seq, __ATOMIC_ACQUIRE);
    if (seq == NULL)
        return UINT64_MAX;
    return p3d_comm_bump(&seq[(is_recv ? n : 0) + peer]);
}

int p3d_comm_next_split(struct p3d_comm *c)
{
    return __atomic_add_fetch(&c->split_count, 1, __ATOMIC_RELAXED);
}

void p3d_comm_clear(void)
{
    unsigned i;

    for (i = 0; i < P3D_COMM_TABLE; i++) {
        free(p3d_comm_table[i].peer_seq);
        memset(&p3d_comm_table[i], 0, sizeof(p3d_comm_table[i]));
    }
}
