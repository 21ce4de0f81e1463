/*
 * fake_nccl.c - a CPU stand-in for libnccl.so.2 with real semantics.
 *
 * CI has no GPU, yet the shim must be tested on real multi-process jobs
 * whose waits, bubbles and hangs happen in time.  This double rendezvous
 * between processes through a shared file per communicator (under
 * $P3D_FAKE_SHM_DIR, default /dev/shm), really waits for peers and really
 * moves and reduces the data (host memory stands in for device memory).
 *
 * Like real NCCL it exports every public ncclX as a weak alias of a strong
 * pncclX, and calls its own public API through the PLT (ncclBcast ->
 * ncclBroadcast, ncclCommInitRankConfig -> ncclCommGetAsyncError), so the
 * shim's nested-call guard is exercised.
 *
 * Waiting sleeps on a process-shared futex per communicator; nothing
 * spins.  Ops between ncclGroupStart/End run at the outermost ncclGroupEnd
 * through one progress loop, so grouped send/recv pairs cannot deadlock.
 * Every op's execution interval is reported as a kernel through the fake
 * cudart's listener (see p3dfake.h).  With P3D_FAKE_ASYNC=1 a launch is
 * queued on the stream and runs on its worker thread, as on a GPU.
 */
#include <cuda_runtime_api.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#include <nccl.h>
#pragma GCC diagnostic pop

#include "fake_profiler.h"
#include "p3d_commhash.h"
#include "p3dfake.h"

/* Every public ncclX is a weak alias of the strong pncclX, as in NCCL. */
#define NCCL_API(ret, func, ...)                                              \
    __attribute__((weak, alias("p" #func))) ret func(__VA_ARGS__);            \
    __attribute__((visibility("default"))) ret p##func(__VA_ARGS__)

#define FAKE_VERSION 22809
#define FAKE_ID_MAGIC "P3DFAKE1"
#define FAKE_SEG_MAGIC 0x50334446u
#define FAKE_COMM_MAGIC 0x434f4d4du
#define FAKE_SLOT (256u << 10)     /* collective bytes per rank per round */
#define FAKE_P2P_SLOT (64u << 10)  /* p2p bytes per chunk per channel */
#define FAKE_NAME_LEN 64
#define FAKE_MAX_REDOPS 64

enum fake_kind {
    FK_ALLREDUCE, FK_REDUCESCATTER, FK_ALLGATHER, FK_BROADCAST, FK_REDUCE,
    FK_ALLTOALL, FK_GATHER, FK_SCATTER, FK_SEND, FK_RECV
};

/* Shared header of one communicator's rendezvous file. */
struct seg_hdr {
    uint32_t magic;
    _Atomic int32_t nranks;
    _Atomic uint32_t gen;       /* futex word: bumped on every change */
    _Atomic uint32_t waiters;
    _Atomic int32_t attached;
    _Atomic int32_t revoked;
    uint8_t pad[40];
};

/* One direction of one rank pair: a one-chunk mailbox. */
struct p2p_chan {
    _Atomic uint64_t posted;
    _Atomic uint64_t consumed;
    _Atomic uint64_t bytes;
    uint64_t pad;
};

struct ncclComm {
    uint32_t magic;
    int rank;
    int nranks;
    int device;
    int blocking;
    char name[FAKE_NAME_LEN];
    char *base;
    size_t bytes;
    struct seg_hdr *hdr;
    _Atomic uint64_t *arrive;   /* rounds written, per rank */
    _Atomic uint64_t *done;     /* rounds consumed, per rank */
    struct p2p_chan *chan;      /* [src * n + dst] */
    char *cslots;               /* [2][n][FAKE_SLOT] */
    char *pslots;               /* [n * n][FAKE_P2P_SLOT] */
    uint64_t round;
    int split_count;
    int shrink_count;
    _Atomic int aborted;
    _Atomic int async_err;
    _Atomic int pending;        /* launches queued on a stream (async) */
    struct fake_prof_comm prof; /* the profiler plugin's view */
};

struct fake_op {
    enum fake_kind kind;
    ncclComm_t comm;
    const void *send;
    void *recv;
    size_t count;
    ncclDataType_t dt;
    ncclRedOp_t op;
    int peer;                   /* root or p2p peer */
    cudaStream_t stream;
    /* progress */
    size_t off;                 /* elements (coll) or chunks (p2p) done */
    size_t cur;                 /* elements of the round in flight */
    int phase;
    uint64_t target;
    int finished;
    ncclResult_t ret;
    uint64_t t_end;
    void *prof_api;             /* its profiler API event's handle */
};

struct fake_redop {
    int used;
    ncclDataType_t dt;
    double scalar;
};

static __thread int fake_depth;
static __thread uint64_t fake_group_t0; /* entry of the group's first op */
static __thread struct fake_op *fake_queue;
static __thread size_t fake_nq, fake_capq;
static __thread char fake_errbuf[256];
static struct fake_redop fake_redops[FAKE_MAX_REDOPS];
static _Atomic uint32_t fake_id_counter;

static ncclResult_t fake_err(ncclResult_t r, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(fake_errbuf, sizeof(fake_errbuf), fmt, ap);
    va_end(ap);
    return r;
}

static size_t fake_dt_size(ncclDataType_t dt)
{
    switch (dt) {
    case ncclInt8: case ncclUint8: case ncclFloat8e4m3: case ncclFloat8e5m2:
        return 1;
    case ncclFloat16: case ncclBfloat16:
        return 2;
    case ncclInt32: case ncclUint32: case ncclFloat32:
        return 4;
    case ncclInt64: case ncclUint64: case ncclFloat64:
        return 8;
    default:
        return 0;
    }
}

/* ---- futex waiting ---- */

static void fake_bump(struct seg_hdr *h)
{
    atomic_fetch_add(&h->gen, 1);
    if (atomic_load(&h->waiters))
        syscall(SYS_futex, &h->gen, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

static void fake_wait(struct seg_hdr *h, uint32_t seen, long timeout_ns)
{
    struct timespec ts = { timeout_ns / 1000000000l,
                           timeout_ns % 1000000000l };

    atomic_fetch_add(&h->waiters, 1);
    syscall(SYS_futex, &h->gen, FUTEX_WAIT, seen, &ts, NULL, 0);
    atomic_fetch_sub(&h->waiters, 1);
}

/* ---- rendezvous files ---- */

static const char *fake_dir(void)
{
    const char *d = getenv("P3D_FAKE_SHM_DIR");

    return d && *d ? d : "/dev/shm";
}

static size_t fake_seg_bytes(int n)
{
    size_t nn = (size_t)n * (size_t)n;

    return sizeof(struct seg_hdr) + 2 * (size_t)n * sizeof(uint64_t) +
           nn * sizeof(struct p2p_chan) + 2 * (size_t)n * FAKE_SLOT +
           nn * FAKE_P2P_SLOT;
}

static void fake_seg_layout(ncclComm_t c)
{
    size_t n = (size_t)c->nranks;
    char *p = c->base;

    c->hdr = (struct seg_hdr *)p;
    p += sizeof(struct seg_hdr);
    c->arrive = (_Atomic uint64_t *)p;
    p += n * sizeof(uint64_t);
    c->done = (_Atomic uint64_t *)p;
    p += n * sizeof(uint64_t);
    c->chan = (struct p2p_chan *)p;
    p += n * n * sizeof(struct p2p_chan);
    c->cslots = p;
    p += 2 * n * FAKE_SLOT;
    c->pslots = p;
}

static ncclResult_t fake_map(ncclComm_t c)
{
    char path[PATH_MAX];
    struct stat st;
    int fd;

    snprintf(path, sizeof(path), "%s/%s", fake_dir(), c->name);
    fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0)
        return fake_err(ncclSystemError, "open %s: %s", path,
                        strerror(errno));
    c->bytes = fake_seg_bytes(c->nranks);
    if (fstat(fd, &st) == 0 && (size_t)st.st_size < c->bytes &&
        ftruncate(fd, (off_t)c->bytes) != 0) {
        close(fd);
        return fake_err(ncclSystemError, "ftruncate %s", path);
    }
    c->base = mmap(NULL, c->bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (c->base == MAP_FAILED)
        return fake_err(ncclSystemError, "mmap %s", path);
    fake_seg_layout(c);
    return ncclSuccess;
}

/* Join the communicator's file; wait for every member if asked. */
static ncclResult_t fake_attach(ncclComm_t c, int wait_all)
{
    int32_t want = 0;
    ncclResult_t r = fake_map(c);

    if (r != ncclSuccess)
        return r;
    if (!atomic_compare_exchange_strong(&c->hdr->nranks, &want, c->nranks) &&
        want != c->nranks)
        return fake_err(ncclInvalidUsage, "nranks %d != %d of the peers",
                        c->nranks, want);
    c->hdr->magic = FAKE_SEG_MAGIC;
    atomic_fetch_add(&c->hdr->attached, 1);
    fake_bump(c->hdr);
    while (wait_all) {
        uint32_t seen = atomic_load(&c->hdr->gen);

        if (atomic_load(&c->hdr->attached) >= c->nranks)
            break;
        fake_wait(c->hdr, seen, 100000000l);
    }
    return ncclSuccess;
}

static void fake_unlink(ncclComm_t c)
{
    char path[PATH_MAX];

    snprintf(path, sizeof(path), "%s/%s", fake_dir(), c->name);
    unlink(path);
}

static ncclComm_t fake_comm_new(const char *name, int nranks, int rank,
                                const ncclConfig_t *config)
{
    ncclComm_t c = calloc(1, sizeof(*c));

    if (!c)
        return NULL;
    c->magic = FAKE_COMM_MAGIC;
    snprintf(c->name, sizeof(c->name), "%.*s", FAKE_NAME_LEN - 1, name);
    c->nranks = nranks;
    c->rank = rank;
    cudaGetDevice(&c->device);
    c->blocking = !(config && config->blocking == 0);
    return c;
}

static int fake_comm_ok(ncclComm_t c)
{
    return c && c->magic == FAKE_COMM_MAGIC;
}

static uint64_t fake_fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;

    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

/* ---- reductions ---- */

static float fake_bf16_get(const uint16_t *p)
{
    uint32_t u = (uint32_t)*p << 16;
    float f;

    memcpy(&f, &u, sizeof(f));
    return f;
}

static void fake_bf16_put(uint16_t *p, float f)
{
    uint32_t u;

    memcpy(&u, &f, sizeof(u));
    *p = (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

/* The loops of fake_reduce and fake_scale over elements of C type T. */
#define FAKE_RED(T, GET, PUT)                                                 \
    do {                                                                      \
        T *d_ = dst;                                                          \
        const T *s_ = src;                                                    \
        for (size_t i_ = 0; i_ < n; i_++) {                                   \
            double a_ = GET(d_[i_]), b_ = GET(s_[i_]), r_;                    \
            switch (op) {                                                     \
            case ncclProd: r_ = a_ * b_; break;                               \
            case ncclMax: r_ = a_ > b_ ? a_ : b_; break;                      \
            case ncclMin: r_ = a_ < b_ ? a_ : b_; break;                      \
            default: r_ = a_ + b_; break;                                     \
            }                                                                 \
            PUT(d_[i_], r_);                                                  \
        }                                                                     \
    } while (0)

#define FAKE_SCALE(T, GET, PUT)                                               \
    do {                                                                      \
        T *d_ = dst;                                                          \
        for (size_t i_ = 0; i_ < n; i_++)                                     \
            PUT(d_[i_], GET(d_[i_]) * k);                                     \
    } while (0)

/* Element getters and setters through double, per NCCL data type. */
#define FAKE_GETV(x) ((double)(x))
#define G_BF(x) ((double)fake_bf16_get(&(x)))
#define P_BF(x, v) fake_bf16_put(&(x), (float)(v))
#define P_I8(x, v) ((x) = (int8_t)(v))
#define P_U8(x, v) ((x) = (uint8_t)(v))
#define P_I32(x, v) ((x) = (int32_t)(v))
#define P_U32(x, v) ((x) = (uint32_t)(v))
#define P_I64(x, v) ((x) = (int64_t)(v))
#define P_U64(x, v) ((x) = (uint64_t)(v))
#define P_F16(x, v) ((x) = (_Float16)(v))
#define P_F32(x, v) ((x) = (float)(v))
#define P_F64(x, v) ((x) = (double)(v))

/* LOOP(C type, getter, setter) for data type dt (u8 and fp8 as bytes). */
#define FAKE_BY_TYPE(dt, LOOP)                                                \
    switch (dt) {                                                             \
    case ncclInt8: LOOP(int8_t, FAKE_GETV, P_I8); break;                      \
    case ncclInt32: LOOP(int32_t, FAKE_GETV, P_I32); break;                   \
    case ncclUint32: LOOP(uint32_t, FAKE_GETV, P_U32); break;                 \
    case ncclInt64: LOOP(int64_t, FAKE_GETV, P_I64); break;                   \
    case ncclUint64: LOOP(uint64_t, FAKE_GETV, P_U64); break;                 \
    case ncclFloat16: LOOP(_Float16, FAKE_GETV, P_F16); break;                \
    case ncclFloat32: LOOP(float, FAKE_GETV, P_F32); break;                   \
    case ncclFloat64: LOOP(double, FAKE_GETV, P_F64); break;                  \
    case ncclBfloat16: LOOP(uint16_t, G_BF, P_BF); break;                     \
    default: LOOP(uint8_t, FAKE_GETV, P_U8); break;                           \
    }

/* dst[i] = dst[i] op src[i] for n elements. */
static void fake_reduce(ncclDataType_t dt, ncclRedOp_t op, void *dst,
                        const void *src, size_t n)
{
    FAKE_BY_TYPE(dt, FAKE_RED)
}

/* buf[i] *= k (avg: k = 1/n; PreMulSum: k = the scalar). */
static void fake_scale(ncclDataType_t dt, void *dst, size_t n, double k)
{
    FAKE_BY_TYPE(dt, FAKE_SCALE)
}

static int fake_is_premul(ncclRedOp_t op)
{
    int i = (int)op - (int)ncclNumOps;

    return i >= 0 && i < FAKE_MAX_REDOPS && fake_redops[i].used;
}

/* Copy a rank's contribution into its slot (PreMulSum scales it). */
static void fake_contrib(const struct fake_op *o, void *dst, const void *src,
                         size_t n)
{
    size_t es = fake_dt_size(o->dt);

    memcpy(dst, src, n * es);
    if (fake_is_premul(o->op))
        fake_scale(o->dt, dst, n,
                   fake_redops[(int)o->op - (int)ncclNumOps].scalar);
}

/* ---- collectives: rounds of at most FAKE_SLOT bytes per rank ---- */

static size_t fake_mult(const struct fake_op *o)
{
    int rs = o->kind == FK_REDUCESCATTER || o->kind == FK_ALLTOALL ||
             o->kind == FK_SCATTER;

    return rs ? (size_t)o->comm->nranks : 1;
}

static char *fake_cslot(ncclComm_t c, uint64_t round, int rank)
{
    size_t i = (size_t)(round & 1) * (size_t)c->nranks + (size_t)rank;

    return c->cslots + i * FAKE_SLOT;
}

static void fake_coll_write(struct fake_op *o, char *slot)
{
    ncclComm_t c = o->comm;
    size_t es = fake_dt_size(o->dt), n = o->cur, off = o->off;
    const char *s = o->send;
    int me = c->rank;

    switch (o->kind) {
    case FK_BROADCAST:
        if (me == o->peer)
            memcpy(slot, s + off * es, n * es);
        break;
    case FK_SCATTER:
        if (me != o->peer)
            break;
        /* fall through */
    case FK_REDUCESCATTER:
    case FK_ALLTOALL:
        for (int i = 0; i < c->nranks; i++)
            fake_contrib(o, slot + (size_t)i * n * es,
                         s + ((size_t)i * o->count + off) * es, n);
        break;
    default:
        fake_contrib(o, slot, s + off * es, n);
        break;
    }
}

static void fake_coll_reduce(struct fake_op *o, uint64_t r, size_t blk,
                             char *out)
{
    ncclComm_t c = o->comm;
    size_t es = fake_dt_size(o->dt), n = o->cur;
    ncclRedOp_t op = fake_is_premul(o->op) ? ncclSum : o->op;

    memcpy(out, fake_cslot(c, r, 0) + blk * n * es, n * es);
    for (int j = 1; j < c->nranks; j++)
        fake_reduce(o->dt, op, out, fake_cslot(c, r, j) + blk * n * es, n);
    if (o->op == ncclAvg)
        fake_scale(o->dt, out, n, 1.0 / c->nranks);
}

static void fake_coll_read(struct fake_op *o, uint64_t r)
{
    ncclComm_t c = o->comm;
    size_t es = fake_dt_size(o->dt), n = o->cur, off = o->off;
    char *d = o->recv;
    int me = c->rank, root = o->peer;

    switch (o->kind) {
    case FK_ALLREDUCE:
        fake_coll_reduce(o, r, 0, d + off * es);
        break;
    case FK_REDUCE:
        if (me == root)
            fake_coll_reduce(o, r, 0, d + off * es);
        break;
    case FK_REDUCESCATTER:
        fake_coll_reduce(o, r, (size_t)me, d + off * es);
        break;
    case FK_BROADCAST:
        memcpy(d + off * es, fake_cslot(c, r, root), n * es);
        break;
    case FK_SCATTER:
        memcpy(d + off * es, fake_cslot(c, r, root) + (size_t)me * n * es,
               n * es);
        break;
    case FK_GATHER:
        if (me != root)
            break;
        /* fall through */
    case FK_ALLGATHER:
        for (int j = 0; j < c->nranks; j++)
            memcpy(d + ((size_t)j * o->count + off) * es,
                   fake_cslot(c, r, j), n * es);
        break;
    case FK_ALLTOALL:
        for (int j = 0; j < c->nranks; j++)
            memcpy(d + ((size_t)j * o->count + off) * es,
                   fake_cslot(c, r, j) + (size_t)me * n * es, n * es);
        break;
    default:
        break;
    }
}

static int fake_all_reached(_Atomic uint64_t *v, int n, uint64_t want)
{
    for (int j = 0; j < n; j++)
        if (atomic_load(&v[j]) < want)
            return 0;
    return 1;
}

/* One step of a collective: 1 progress, 0 blocked. */
static int fake_coll_step(struct fake_op *o)
{
    ncclComm_t c = o->comm;
    uint64_t r = c->round;

    if (o->off >= o->count) {
        o->finished = 1;
        return 1;
    }
    if (o->phase == 0) {
        size_t per = FAKE_SLOT / (fake_mult(o) * fake_dt_size(o->dt));

        if (r >= 2 && !fake_all_reached(c->done, c->nranks, r - 1))
            return 0;
        o->cur = o->count - o->off < per ? o->count - o->off : per;
        fake_coll_write(o, fake_cslot(c, r, c->rank));
        atomic_store(&c->arrive[c->rank], r + 1);
        o->phase = 1;
        fake_bump(c->hdr);
        return 1;
    }
    if (!fake_all_reached(c->arrive, c->nranks, r + 1))
        return 0;
    fake_coll_read(o, r);
    atomic_store(&c->done[c->rank], r + 1);
    c->round = r + 1;
    o->off += o->cur;
    o->phase = 0;
    fake_bump(c->hdr);
    if (o->off >= o->count)
        o->finished = 1;
    return 1;
}

/* ---- point to point: chunks through a one-slot mailbox ---- */

static size_t fake_p2p_chunks(const struct fake_op *o)
{
    size_t b = o->count * fake_dt_size(o->dt);

    return (b + FAKE_P2P_SLOT - 1) / FAKE_P2P_SLOT;
}

static int fake_send_step(struct fake_op *o)
{
    ncclComm_t c = o->comm;
    size_t idx = (size_t)c->rank * (size_t)c->nranks + (size_t)o->peer;
    struct p2p_chan *ch = &c->chan[idx];
    size_t total = o->count * fake_dt_size(o->dt), nch = fake_p2p_chunks(o);

    if (o->off < nch) {
        uint64_t posted = atomic_load(&ch->posted);
        size_t at = o->off * FAKE_P2P_SLOT;
        size_t len = total - at < FAKE_P2P_SLOT ? total - at : FAKE_P2P_SLOT;

        if (posted != atomic_load(&ch->consumed))
            return 0;
        memcpy(c->pslots + idx * FAKE_P2P_SLOT, (const char *)o->send + at,
               len);
        atomic_store(&ch->bytes, len);
        atomic_store(&ch->posted, posted + 1);
        o->target = posted + 1;
        o->off++;
        fake_bump(c->hdr);
        return 1;
    }
    if (atomic_load(&ch->consumed) < o->target)
        return 0;
    o->finished = 1;
    return 1;
}

static int fake_recv_step(struct fake_op *o)
{
    ncclComm_t c = o->comm;
    size_t idx = (size_t)o->peer * (size_t)c->nranks + (size_t)c->rank;
    struct p2p_chan *ch = &c->chan[idx];
    size_t total = o->count * fake_dt_size(o->dt), at, len;
    uint64_t consumed = atomic_load(&ch->consumed);

    if (o->off >= fake_p2p_chunks(o)) {
        o->finished = 1;
        return 1;
    }
    if (atomic_load(&ch->posted) <= consumed)
        return 0;
    at = o->off * FAKE_P2P_SLOT;
    len = atomic_load(&ch->bytes);
    if (len > total - at)
        len = total - at;
    memcpy((char *)o->recv + at, c->pslots + idx * FAKE_P2P_SLOT, len);
    atomic_store(&ch->consumed, consumed + 1);
    o->off++;
    if (o->off >= fake_p2p_chunks(o))
        o->finished = 1;
    fake_bump(c->hdr);
    return 1;
}

/* ---- the progress loop ---- */

static int fake_is_coll(enum fake_kind k)
{
    return k != FK_SEND && k != FK_RECV;
}

/* Must o wait for an earlier op of the same ordering class? */
static int fake_ordered_after(const struct fake_op *ops, size_t i)
{
    const struct fake_op *o = &ops[i];

    for (size_t j = 0; j < i; j++) {
        const struct fake_op *p = &ops[j];

        if (p->finished || p->comm != o->comm)
            continue;
        if (fake_is_coll(o->kind) && fake_is_coll(p->kind))
            return 1;
        if (!fake_is_coll(o->kind) && p->kind == o->kind &&
            p->peer == o->peer)
            return 1;
    }
    return 0;
}

static int fake_step(struct fake_op *o)
{
    ncclComm_t c = o->comm;

    if (atomic_load(&c->aborted)) {
        o->ret = fake_err(ncclSystemError, "communicator was aborted");
        return -1;
    }
    if (atomic_load(&c->hdr->revoked)) {
        o->ret = fake_err(ncclRemoteError, "communicator was revoked");
        return -1;
    }
    if (o->kind == FK_SEND)
        return fake_send_step(o);
    if (o->kind == FK_RECV)
        return fake_recv_step(o);
    return fake_coll_step(o);
}

/* One pass over the ops; returns 1 if anything moved. */
static int fake_pass(struct fake_op *ops, size_t n, ncclResult_t *ret,
                     size_t *left)
{
    int moved = 0;

    *left = 0;
    for (size_t i = 0; i < n; i++) {
        struct fake_op *o = &ops[i];
        int r;

        if (o->finished)
            continue;
        if (fake_ordered_after(ops, i)) {
            (*left)++;
            continue;
        }
        while ((r = fake_step(o)) > 0 && !o->finished)
            moved = 1;
        if (r < 0) {
            o->finished = 1;
            *ret = o->ret;
        }
        if (o->finished) {
            o->t_end = p3dfake_now_ns();
            moved = 1;
        } else {
            (*left)++;
        }
    }
    return moved;
}

/* Run ops to completion; sleeps on a futex while nothing can move. */
static ncclResult_t fake_run(struct fake_op *ops, size_t n)
{
    ncclResult_t ret = ncclSuccess;
    size_t left = n;

    while (left) {
        struct seg_hdr *h = NULL;
        uint32_t seen = 0;
        int one_comm = 1;

        for (size_t i = 0; i < n; i++) {
            if (ops[i].finished)
                continue;
            if (!h) {
                h = ops[i].comm->hdr;
                seen = atomic_load(&h->gen);
            } else if (ops[i].comm->hdr != h) {
                one_comm = 0;
            }
        }
        if (!fake_pass(ops, n, &ret, &left) && left)
            fake_wait(h, seen, one_comm ? 100000000l : 1000000l);
    }
    return ret;
}

/* ---- kernel names and reports ---- */

static const char *fake_kind_name(enum fake_kind k)
{
    static const char *names[] = {
        "AllReduce", "ReduceScatter", "AllGather", "Broadcast", "Reduce",
        "AlltoAll", "Gather", "Scatter", "Send", "Recv"
    };

    return names[k];
}

static const char *fake_dt_name(ncclDataType_t dt)
{
    static const char *names[] = { "i8", "u8", "i32", "u32", "i64", "u64",
                                   "f16", "f32", "f64", "bf16", "f8e4m3",
                                   "f8e5m2" };

    return (unsigned)dt < ncclNumTypes ? names[dt] : "unknown";
}

static const char *fake_op_name(ncclRedOp_t op)
{
    switch (op) {
    case ncclSum: return "Sum";
    case ncclProd: return "Prod";
    case ncclMax: case ncclMin: return "MinMax";
    case ncclAvg: return "SumPostDiv";
    default: return "PreMulSum";
    }
}

static void fake_kernel_name(const struct fake_op *o, int all_p2p,
                             char *buf, size_t len)
{
    switch (all_p2p ? FK_SEND : o->kind) {
    case FK_ALLREDUCE: case FK_REDUCESCATTER: case FK_REDUCE:
        snprintf(buf, len, "ncclDevKernel_%s_%s_%s_RING_LL",
                 fake_kind_name(o->kind), fake_op_name(o->op),
                 fake_dt_name(o->dt));
        break;
    case FK_ALLGATHER: case FK_BROADCAST:
        snprintf(buf, len, "ncclDevKernel_%s_RING_LL",
                 fake_kind_name(o->kind));
        break;
    default:
        snprintf(buf, len, "ncclDevKernel_SendRecv");
        break;
    }
}

static int fake_launches_kernel(const struct fake_op *o)
{
    if (o->count == 0)
        return 0;
    return !(o->comm->nranks == 1 && o->kind != FK_SEND &&
             o->kind != FK_RECV && (const void *)o->send == o->recv);
}

/* One kernel per communicator of the launch (see p3dfake.h). */
static void fake_report(const struct fake_op *ops, size_t n, uint64_t t0)
{
    for (size_t i = 0; i < n; i++) {
        uint64_t end = 0;
        int first = 1, all_p2p = 1, any = 0;
        char name[128];

        for (size_t j = 0; j < i && first; j++)
            if (ops[j].comm == ops[i].comm)
                first = 0;
        if (!first)
            continue;
        for (size_t j = i; j < n; j++) {
            if (ops[j].comm != ops[i].comm)
                continue;
            end = ops[j].t_end > end ? ops[j].t_end : end;
            all_p2p &= !fake_is_coll(ops[j].kind);
            any |= fake_launches_kernel(&ops[j]);
        }
        if (!any)
            continue;
        fake_kernel_name(&ops[i], all_p2p, name, sizeof(name));
        p3dfake_report_kernel(name, (void *)ops[i].stream, t0, end, 1);
    }
}

/* Synchronous mode: per stream of the launch, when its ops ended and how
 * many there were (the fake cudart stamps the events recorded next). */
static void fake_streams_done(const struct fake_op *ops, size_t n)
{
    for (size_t i = 0; i < n && !p3dfake_async(); i++) {
        uint64_t end = 0;
        int k = 0, first = 1;

        for (size_t j = 0; j < i && first; j++)
            first = ops[j].stream != ops[i].stream;
        if (!first)
            continue;
        for (size_t j = i; j < n; j++)
            if (ops[j].stream == ops[i].stream) {
                end = ops[j].t_end > end ? ops[j].t_end : end;
                k++;
            }
        if (end) /* ops that ran (an in-place 1-rank op did not) */
            p3dfake_stream_done((void *)ops[i].stream, end, k);
    }
}

/* The kernel-level tasks NCCL 2.28's taskAppend makes of one op (ncclFunc_t
 * values: AllGather 2, Send 6, Recv 7, ...), told to the plugin. */
static int fake_prof_func(enum fake_kind k)
{
    static const int func[] = { 4, 3, 2, 0, 1, 8, 10, 9, 6, 7 };

    return func[k];
}

static void fake_prof_op(const struct fake_op *o, uint64_t t0)
{
    struct fake_prof_comm *pc = &o->comm->prof;
    int n = o->comm->nranks, me = o->comm->rank, r;
    void *api = o->prof_api;

    if (o->kind == FK_SEND || o->kind == FK_RECV) {
        fake_prof_task(pc, fake_prof_func(o->kind), o->peer, o->count, t0,
                       o->t_end, api);
        return;
    }
    if (o->count == 0 || n == 1)   /* no task: no event, no seqNumber */
        return;
    if (o->kind == FK_GATHER)
        fake_prof_task(pc, 6, o->peer, o->count, t0, o->t_end, NULL);
    if (o->kind == FK_ALLTOALL || o->kind == FK_GATHER ||
        o->kind == FK_SCATTER) {
        for (r = 0; r < n; r++) {
            if (o->kind == FK_ALLTOALL || (o->kind == FK_SCATTER &&
                                           me == o->peer))
                fake_prof_task(pc, 6, r, o->count, t0, o->t_end, NULL);
            if (o->kind == FK_ALLTOALL || (o->kind == FK_GATHER &&
                                           me == o->peer))
                fake_prof_task(pc, 7, r, o->count, t0, o->t_end, NULL);
        }
        if (o->kind == FK_SCATTER)
            fake_prof_task(pc, 7, o->peer, o->count, t0, o->t_end, NULL);
        return;
    }
    fake_prof_task(pc, fake_prof_func(o->kind), -1, o->count, t0, o->t_end,
                   api);
}

static void fake_prof_report(const struct fake_op *ops, size_t n,
                             uint64_t t0)
{
    if (n == 0)
        return;
    fake_prof_launch_begin(&ops[0].comm->prof);
    for (size_t i = 0; i < n; i++)
        fake_prof_op(&ops[i], t0);
    fake_prof_launch_end();
}

/* The network transfers of ops (fake_prof_proxy_begin): send/recv one,
 * a collective of several ranks a receive from the ring's previous rank
 * and a send to its next; px[2 * i + k]. */
static void fake_proxy_begin(const struct fake_op *ops, size_t n,
                             struct fake_prof_proxy *px)
{
    for (size_t i = 0; i < n; i++) {
        const struct fake_op *o = &ops[i];
        struct fake_prof_comm *pc = &o->comm->prof;
        int nr = o->comm->nranks, me = o->comm->rank;

        px[2 * i].op = px[2 * i].step = NULL;
        px[2 * i + 1] = px[2 * i];
        if (o->kind == FK_SEND || o->kind == FK_RECV)
            fake_prof_proxy_begin(pc, o->kind == FK_SEND, o->peer, &px[2 * i]);
        else if (nr > 1 && o->count) {
            fake_prof_proxy_begin(pc, 0, (me + nr - 1) % nr, &px[2 * i]);
            fake_prof_proxy_begin(pc, 1, (me + 1) % nr, &px[2 * i + 1]);
        }
    }
}

static ncclResult_t fake_launch_now(struct fake_op *ops, size_t n)
{
    uint64_t t0 = p3dfake_now_ns();
    struct fake_prof_proxy *px =
        fake_prof_proxy_wanted() ? calloc(2 * n + 2, sizeof(*px)) : NULL;
    ncclResult_t r;

    if (px != NULL)
        fake_proxy_begin(ops, n, px);
    r = fake_run(ops, n);
    for (size_t i = 0; px != NULL && i < 2 * n; i++)
        fake_prof_proxy_end(&px[i]);
    free(px);
    fake_report(ops, n, t0);
    fake_prof_report(ops, n, t0);
    fake_streams_done(ops, n);
    for (size_t i = 0; i < n; i++)
        if (ops[i].ret != ncclSuccess)
            atomic_store(&ops[i].comm->async_err, ops[i].ret);
    return r;
}

struct fake_launch_rec {
    size_t n;
    struct fake_op ops[];
};

/* Async mode: the launch, run by the stream's worker thread. */
static void fake_launch_async(void *arg)
{
    struct fake_launch_rec *l = arg;

    fake_launch_now(l->ops, l->n);
    for (size_t i = 0; i < l->n; i++)
        atomic_fetch_sub(&l->ops[i].comm->pending, 1);
    free(l);
}

/* Run now, or (P3D_FAKE_ASYNC=1) enqueue on the first op's stream. */
static ncclResult_t fake_launch(struct fake_op *ops, size_t n)
{
    struct fake_launch_rec *l;

    if (!p3dfake_async())
        return fake_launch_now(ops, n);
    l = malloc(sizeof(*l) + n * sizeof(*ops));
    if (!l)
        return fake_err(ncclSystemError, "out of memory");
    l->n = n;
    memcpy(l->ops, ops, n * sizeof(*ops));
    for (size_t i = 0; i < n; i++)
        atomic_fetch_add(&ops[i].comm->pending, 1);
    if (p3dfake_stream_enqueue((void *)ops[0].stream, fake_launch_async, l)
        == 0)
        return ncclSuccess;
    for (size_t i = 0; i < n; i++)
        atomic_fetch_sub(&ops[i].comm->pending, 1);
    free(l);
    return fake_launch_now(ops, n);
}

/* Async mode: wait until the comm's queued launches ran (or it aborted). */
static void fake_drain(ncclComm_t c)
{
    struct timespec ts = { 0, 1000000 };

    while (atomic_load(&c->pending) > 0 && !atomic_load(&c->aborted))
        nanosleep(&ts, NULL);
}

/* When a synchronous launch's ops completed (their last t_end); now if
 * they ran asynchronously or not at all. */
static uint64_t fake_ops_end(const struct fake_op *ops, size_t n)
{
    uint64_t end = 0;

    for (size_t i = 0; i < n && !p3dfake_async(); i++)
        end = ops[i].t_end > end ? ops[i].t_end : end;
    return end ? end : p3dfake_now_ns();
}

/* Where a launch began for the stream: the entry of its first op (t0), or
 * an event recorded on the first op's stream for it before that. */
static uint64_t fake_launch_start(const struct fake_op *ops, uint64_t t0)
{
    uint64_t f = p3dfake_stream_first_record((void *)ops[0].stream);

    return f && f < t0 ? f : t0;
}

/* Queue inside a group, else run now. */
static ncclResult_t fake_submit(const struct fake_op *o)
{
    struct fake_op one = *o;
    uint64_t t_entry = p3dfake_now_ns();

    if (fake_depth == 0) {
        uint64_t t0 = fake_launch_start(&one, t_entry);
        ncclResult_t r = fake_launch(&one, 1);

        p3dfake_report_call(t0, fake_ops_end(&one, 1));
        return r;
    }
    if (fake_nq == fake_capq) {
        size_t cap = fake_capq ? 2 * fake_capq : 16;
        struct fake_op *q = realloc(fake_queue, cap * sizeof(*q));

        if (!q)
            return fake_err(ncclSystemError, "out of memory");
        fake_queue = q;
        fake_capq = cap;
    }
    if (fake_nq == 0)
        fake_group_t0 = t_entry;
    fake_queue[fake_nq++] = one;
    return ncclSuccess;
}

static ncclResult_t fake_check(ncclComm_t c, ncclDataType_t dt, int peer)
{
    if (!fake_comm_ok(c))
        return fake_err(ncclInvalidArgument, "invalid communicator");
    if (fake_dt_size(dt) == 0)
        return fake_err(ncclInvalidArgument, "invalid datatype %d", dt);
    if (peer < -1 || peer >= c->nranks)
        return fake_err(ncclInvalidArgument, "invalid peer/root %d", peer);
    if (atomic_load(&c->aborted))
        return fake_err(ncclInvalidUsage, "communicator was aborted");
    return ncclSuccess;
}

/*
 * The profiler's API event of the call (NCCL's collTaskAppend, on the
 * caller's thread; AlltoAll/Gather/Scatter's inner sends get none here),
 * then the call is queued/run, or kept in the fake CUDA graph.
 */
static ncclResult_t fake_op_api(struct fake_op *o)
{
    struct fake_prof_comm *pc = &o->comm->prof;
    int func = fake_prof_func(o->kind);
    int captured = fake_prof_capturing(pc, func, o->count, fake_depth > 0);

    if (o->kind != FK_ALLTOALL && o->kind != FK_GATHER &&
        o->kind != FK_SCATTER)
        o->prof_api = fake_prof_api(pc, func, o->count, captured);
    p3dfake_mark_captured(o->stream, captured);
    if (captured) {
        fake_prof_capture(pc, func, o->count, o->prof_api);
        return ncclSuccess;
    }
    return fake_submit(o);
}

static ncclResult_t fake_op(enum fake_kind k, const void *s, void *r,
                            size_t count, ncclDataType_t dt, ncclRedOp_t op,
                            int peer, ncclComm_t c, cudaStream_t st)
{
    struct fake_op o = { .kind = k, .comm = c, .send = s, .recv = r,
                         .count = count, .dt = dt, .op = op, .peer = peer,
                         .stream = st };
    ncclResult_t ret = fake_check(c, dt, peer);

    if (ret != ncclSuccess)
        return ret;
    if ((int)op < 0 || ((int)op >= (int)ncclNumOps && !fake_is_premul(op)))
        return fake_err(ncclInvalidArgument, "invalid reduction op %d", op);
    return fake_op_api(&o);
}

/* ---- collectives and p2p ---- */

NCCL_API(ncclResult_t, ncclAllReduce, const void *sendbuff, void *recvbuff,
         size_t count, ncclDataType_t datatype, ncclRedOp_t op,
         ncclComm_t comm, cudaStream_t stream)
{
    return fake_op(FK_ALLREDUCE, sendbuff, recvbuff, count, datatype, op, -1,
                   comm, stream);
}

NCCL_API(ncclResult_t, ncclReduceScatter, const void *sendbuff,
         void *recvbuff, size_t recvcount, ncclDataType_t datatype,
         ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream)
{
    return fake_op(FK_REDUCESCATTER, sendbuff, recvbuff, recvcount,
                   datatype, op, -1, comm, stream);
}

NCCL_API(ncclResult_t, ncclAllGather, const void *sendbuff, void *recvbuff,
         size_t sendcount, ncclDataType_t datatype, ncclComm_t comm,
         cudaStream_t stream)
{
    return fake_op(FK_ALLGATHER, sendbuff, recvbuff, sendcount, datatype,
                   ncclSum, -1, comm, stream);
}

NCCL_API(ncclResult_t, ncclBroadcast, const void *sendbuff, void *recvbuff,
         size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
         cudaStream_t stream)
{
    if (root < 0)
        return fake_err(ncclInvalidArgument, "invalid root %d", root);
    return fake_op(FK_BROADCAST, sendbuff, recvbuff, count, datatype,
                   ncclSum, root, comm, stream);
}

/* As in NCCL: ncclBcast calls ncclBroadcast through the PLT. */
NCCL_API(ncclResult_t, ncclBcast, void *buff, size_t count,
         ncclDataType_t datatype, int root, ncclComm_t comm,
         cudaStream_t stream)
{
    return ncclBroadcast(buff, buff, count, datatype, root, comm, stream);
}

NCCL_API(ncclResult_t, ncclReduce, const void *sendbuff, void *recvbuff,
         size_t count, ncclDataType_t datatype, ncclRedOp_t op, int root,
         ncclComm_t comm, cudaStream_t stream)
{
    if (root < 0)
        return fake_err(ncclInvalidArgument, "invalid root %d", root);
    return fake_op(FK_REDUCE, sendbuff, recvbuff, count, datatype, op, root,
                   comm, stream);
}

NCCL_API(ncclResult_t, ncclAlltoAll, const void *sendbuff, void *recvbuff,
         size_t count, ncclDataType_t datatype, ncclComm_t comm,
         cudaStream_t stream)
{
    return fake_op(FK_ALLTOALL, sendbuff, recvbuff, count, datatype, ncclSum,
                   -1, comm, stream);
}

NCCL_API(ncclResult_t, ncclGather, const void *sendbuff, void *recvbuff,
         size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
         cudaStream_t stream)
{
    if (root < 0)
        return fake_err(ncclInvalidArgument, "invalid root %d", root);
    return fake_op(FK_GATHER, sendbuff, recvbuff, count, datatype, ncclSum,
                   root, comm, stream);
}

NCCL_API(ncclResult_t, ncclScatter, const void *sendbuff, void *recvbuff,
         size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
         cudaStream_t stream)
{
    if (root < 0)
        return fake_err(ncclInvalidArgument, "invalid root %d", root);
    return fake_op(FK_SCATTER, sendbuff, recvbuff, count, datatype, ncclSum,
                   root, comm, stream);
}

NCCL_API(ncclResult_t, ncclSend, const void *sendbuff, size_t count,
         ncclDataType_t datatype, int peer, ncclComm_t comm,
         cudaStream_t stream)
{
    if (peer < 0)
        return fake_err(ncclInvalidArgument, "invalid peer %d", peer);
    return fake_op(FK_SEND, sendbuff, NULL, count, datatype, ncclSum, peer,
                   comm, stream);
}

NCCL_API(ncclResult_t, ncclRecv, void *recvbuff, size_t count,
         ncclDataType_t datatype, int peer, ncclComm_t comm,
         cudaStream_t stream)
{
    if (peer < 0)
        return fake_err(ncclInvalidArgument, "invalid peer %d", peer);
    return fake_op(FK_RECV, NULL, recvbuff, count, datatype, ncclSum, peer,
                   comm, stream);
}

/* ---- groups ---- */

/*
 * NCCL runs a communicator init made inside ncclGroupStart/End at the
 * outermost ncclGroupEnd, and the profiler plugin's init with it (v2.28.9
 * src/group.cc, ncclGroupEndInternal -> ncclCommInitRankFunc ->
 * ncclProfilerPluginInit); so does the fake, for the plugin's init.
 */
#define FAKE_PROF_PENDING 64
static __thread struct {
    ncclComm_t comm;
    uint64_t hash;
} fake_prof_pending[FAKE_PROF_PENDING];
static __thread int fake_n_prof_pending;

static void fake_prof_init_when(ncclComm_t c, uint64_t hash, int nranks,
                                int rank)
{
    if (fake_depth > 0 && fake_n_prof_pending < FAKE_PROF_PENDING) {
        fake_prof_pending[fake_n_prof_pending].comm = c;
        fake_prof_pending[fake_n_prof_pending++].hash = hash;
        return;
    }
    fake_prof_init(&c->prof, hash, c->name, nranks, rank);
}

static void fake_prof_init_pending(void)
{
    for (int i = 0; i < fake_n_prof_pending; i++) {
        ncclComm_t c = fake_prof_pending[i].comm;
        fake_prof_init(&c->prof, fake_prof_pending[i].hash, c->name,
                       c->nranks, c->rank);
    }
    fake_n_prof_pending = 0;
}

NCCL_API(ncclResult_t, ncclGroupStart, void)
{
    fake_depth++;
    return ncclSuccess;
}

NCCL_API(ncclResult_t, ncclGroupEnd, void)
{
    ncclResult_t r;
    uint64_t t0;

    if (fake_depth == 0)
        return fake_err(ncclInvalidUsage, "ncclGroupEnd without start");
    if (--fake_depth > 0)
        return ncclSuccess;
    fake_prof_init_pending();
    if (fake_nq == 0)
        return ncclSuccess;
    t0 = fake_launch_start(fake_queue, fake_group_t0);
    r = fake_launch(fake_queue, fake_nq);
    p3dfake_report_call(t0, fake_ops_end(fake_queue, fake_nq));
    fake_nq = 0;
    return r;
}

NCCL_API(ncclResult_t, ncclGroupSimulateEnd, ncclSimInfo_t *simInfo)
{
    if (simInfo)
        simInfo->estimatedTime = 0.0f;
    if (fake_depth == 0)
        return fake_err(ncclInvalidUsage, "ncclGroupEnd without start");
    if (--fake_depth == 0)
        fake_nq = 0;
    return ncclSuccess;
}

/* ---- communicators ---- */

NCCL_API(ncclResult_t, ncclGetUniqueId, ncclUniqueId *uniqueId)
{
    uint64_t rnd[2] = { 0, 0 };
    char name[FAKE_NAME_LEN];

    if (!uniqueId)
        return fake_err(ncclInvalidArgument, "uniqueId is NULL");
    if (getrandom(uniqueId->internal, sizeof(uniqueId->internal), 0) < 0 ||
        getrandom(rnd, sizeof(rnd), 0) < 0)
        rnd[0] = p3dfake_now_ns();
    snprintf(name, sizeof(name), "p3dfake-%d-%u-%016llx", (int)getpid(),
             atomic_fetch_add(&fake_id_counter, 1),
             (unsigned long long)rnd[0]);
    memcpy(uniqueId->internal, FAKE_ID_MAGIC, 8);
    memcpy(uniqueId->internal + 8, name, strlen(name) + 1);
    return ncclSuccess;
}

/* Join a root communicator named by id, waiting for every member. */
static ncclResult_t fake_init(ncclComm_t *out, int nranks,
                              const ncclUniqueId *id, int rank,
                              const ncclConfig_t *config)
{
    ncclComm_t c;
    ncclResult_t r;

    if (!out || !id || nranks < 1 || rank < 0 || rank >= nranks)
        return fake_err(ncclInvalidArgument, "bad init arguments");
    if (memcmp(id->internal, FAKE_ID_MAGIC, 8) != 0 ||
        memchr(id->internal + 8, 0, FAKE_NAME_LEN) == NULL)
        return fake_err(ncclInvalidArgument, "not a fake-NCCL unique id");
    c = fake_comm_new(id->internal + 8, nranks, rank, config);
    if (!c)
        return fake_err(ncclSystemError, "out of memory");
    r = fake_attach(c, 1);
    if (r != ncclSuccess) {
        free(c);
        return r;
    }
    if (rank == 0)
        fake_unlink(c);
    fake_prof_init_when(c, p3d_commhash_root(id->internal), nranks, rank);
    *out = c;
    return ncclSuccess;
}

static ncclResult_t fake_init_done(ncclComm_t c, ncclResult_t r)
{
    if (r == ncclSuccess && !c->blocking)
        return ncclInProgress;   /* done already; GetAsyncError: success */
    return r;
}

NCCL_API(ncclResult_t, ncclCommInitRank, ncclComm_t *comm, int nranks,
         ncclUniqueId commId, int rank)
{
    return fake_init(comm, nranks, &commId, rank, NULL);
}

/* As in NCCL: InitRankConfig calls ncclCommGetAsyncError via the PLT. */
NCCL_API(ncclResult_t, ncclCommInitRankConfig, ncclComm_t *comm, int nranks,
         ncclUniqueId commId, int rank, ncclConfig_t *config)
{
    ncclResult_t r = fake_init(comm, nranks, &commId, rank, config);
    ncclResult_t st = ncclSuccess;

    if (r != ncclSuccess)
        return r;
    ncclCommGetAsyncError(*comm, &st);
    return fake_init_done(*comm, st);
}

NCCL_API(ncclResult_t, ncclCommInitRankScalable, ncclComm_t *newcomm,
         int nranks, int myrank, int nId, ncclUniqueId *commIds,
         ncclConfig_t *config)
{
    ncclResult_t r;

    if (nId < 1 || !commIds)
        return fake_err(ncclInvalidArgument, "no unique ids");
    r = fake_init(newcomm, nranks, &commIds[0], myrank, config);
    return r == ncclSuccess ? fake_init_done(*newcomm, r) : r;
}

NCCL_API(ncclResult_t, ncclCommInitAll, ncclComm_t *comm, int ndev,
         const int *devlist)
{
    ncclUniqueId id;
    ncclResult_t r;

    if (!comm || ndev < 1)
        return fake_err(ncclInvalidArgument, "bad ncclCommInitAll args");
    pncclGetUniqueId(&id);
    for (int i = 0; i < ndev; i++) {
        ncclComm_t c = fake_comm_new(id.internal + 8, ndev, i, NULL);

        if (!c)
            return fake_err(ncclSystemError, "out of memory");
        c->device = devlist ? devlist[i] : i;
        r = fake_attach(c, 0);
        if (r != ncclSuccess)
            return r;
        fake_prof_init(&c->prof, p3d_commhash_root(id.internal), c->name,
                       ndev, i);
        comm[i] = c;
    }
    fake_unlink(comm[0]);
    return ncclSuccess;
}

static int fake_cmp_ck(const void *a, const void *b)
{
    const int32_t *x = a, *y = b;   /* key, parent rank */

    if (x[0] != y[0])
        return x[0] < y[0] ? -1 : 1;
    return x[1] < y[1] ? -1 : x[1] > y[1];
}

/* Members with my color sorted by (key, parent rank): my new rank. */
static int fake_split_rank(const int32_t *ck, int n, int color, int me,
                           int *size)
{
    int32_t (*m)[2] = calloc((size_t)n, sizeof(*m));
    int k = 0, mine = -1;

    if (!m)
        return -1;
    for (int i = 0; i < n; i++)
        if (ck[2 * i] == color) {
            m[k][0] = ck[2 * i + 1];
            m[k][1] = i;
            k++;
        }
    qsort(m, (size_t)k, sizeof(*m), fake_cmp_ck);
    for (int i = 0; i < k; i++)
        if (m[i][1] == me)
            mine = i;
    free(m);
    *size = k;
    return mine;
}

static ncclResult_t fake_child(ncclComm_t parent, uint64_t h, int n, int rank,
                               ncclComm_t *out, const ncclConfig_t *config,
                               uint64_t comm_hash)
{
    char name[FAKE_NAME_LEN];
    ncclComm_t c;
    ncclResult_t r;

    snprintf(name, sizeof(name), "p3dfake-child-%016llx",
             (unsigned long long)h);
    c = fake_comm_new(name, n, rank, config);
    if (!c)
        return fake_err(ncclSystemError, "out of memory");
    c->device = parent->device;
    r = fake_attach(c, 1);
    if (r != ncclSuccess) {
        free(c);
        return r;
    }
    if (rank == 0)
        fake_unlink(c);
    fake_prof_init(&c->prof, comm_hash, c->name, n, rank);
    *out = c;
    return fake_init_done(c, ncclSuccess);
}

NCCL_API(ncclResult_t, ncclCommSplit, ncclComm_t comm, int color, int key,
         ncclComm_t *newcomm, ncclConfig_t *config)
{
    int32_t mine[2] = { color, key }, *all;
    struct fake_op o = { .kind = FK_ALLGATHER, .comm = comm, .count = 2,
                         .dt = ncclInt32, .op = ncclSum, .peer = -1 };
    ncclResult_t r = fake_check(comm, ncclInt32, -1);
    int size = 0, rank;
    uint64_t h;

    if (r != ncclSuccess || !newcomm)
        return r != ncclSuccess ? r : fake_err(ncclInvalidArgument, "NULL");
    fake_drain(comm);
    all = calloc((size_t)comm->nranks * 2, sizeof(*all));
    if (!all)
        return fake_err(ncclSystemError, "out of memory");
    o.send = mine;
    o.recv = all;
    r = fake_run(&o, 1);
    comm->split_count++;
    *newcomm = NULL;
    if (r != ncclSuccess || color == NCCL_SPLIT_NOCOLOR) {
        free(all);
        return r;
    }
    rank = fake_split_rank(all, comm->nranks, color, comm->rank, &size);
    free(all);
    h = fake_fnv(0xcbf29ce484222325ull, comm->name, strlen(comm->name));
    h = fake_fnv(h, &comm->split_count, sizeof(comm->split_count));
    h = fake_fnv(h, &color, sizeof(color));
    return fake_child(comm, h, size, rank, newcomm, config,
                      p3d_commhash_split(comm->prof.hash, comm->split_count,
                                         color));
}

NCCL_API(ncclResult_t, ncclCommShrink, ncclComm_t comm, int *excludeRanksList,
         int excludeRanksCount, ncclComm_t *newcomm, ncclConfig_t *config,
         int shrinkFlags)
{
    int rank = comm ? comm->rank : 0, n;
    ncclResult_t r = fake_check(comm, ncclInt32, -1);
    uint64_t h;

    (void)shrinkFlags;
    if (r != ncclSuccess || !newcomm || excludeRanksCount < 0)
        return r != ncclSuccess ? r : fake_err(ncclInvalidArgument, "args");
    fake_drain(comm);
    n = comm->nranks - excludeRanksCount;
    for (int i = 0; i < excludeRanksCount; i++) {
        if (excludeRanksList[i] == comm->rank)
            return fake_err(ncclInvalidArgument, "shrinking out myself");
        if (excludeRanksList[i] < comm->rank)
            rank--;
    }
    comm->shrink_count++;
    h = fake_fnv(0x84222325cbf29ce4ull, comm->name, strlen(comm->name));
    h = fake_fnv(h, &comm->shrink_count, sizeof(comm->shrink_count));
    return fake_child(comm, h, n, rank, newcomm, config,
                      p3d_commhash_split(comm->prof.hash, 0, 0));
}

NCCL_API(ncclResult_t, ncclCommFinalize, ncclComm_t comm)
{
    if (!fake_comm_ok(comm))
        return fake_err(ncclInvalidArgument, "bad comm");
    fake_drain(comm);
    return ncclSuccess;
}

NCCL_API(ncclResult_t, ncclCommDestroy, ncclComm_t comm)
{
    if (!comm)
        return ncclSuccess;
    if (!fake_comm_ok(comm))
        return fake_err(ncclInvalidArgument, "bad comm");
    fake_drain(comm);
    if (atomic_load(&comm->pending) > 0)
        return ncclSuccess;   /* aborted with work queued: leak it */
    fake_prof_fini(&comm->prof);
    comm->magic = 0;
    munmap(comm->base, comm->bytes);
    free(comm);
    return ncclSuccess;
}

/*
 * Waiters of this comm in this process return an error.  The comm is not
 * freed: another thread may still be inside an op on it.
 */
NCCL_API(ncclResult_t, ncclCommAbort, ncclComm_t comm)
{
    if (!comm)
        return ncclSuccess;
    if (!fake_comm_ok(comm))
        return fake_err(ncclInvalidArgument, "bad comm");
    atomic_store(&comm->aborted, 1);
    atomic_store(&comm->async_err, ncclSystemError);
    fake_bump(comm->hdr);
    return ncclSuccess;
}

NCCL_API(ncclResult_t, ncclCommRevoke, ncclComm_t comm, int revokeFlags)
{
    (void)revokeFlags;
    if (!fake_comm_ok(comm))
        return fake_err(ncclInvalidArgument, "bad comm");
    atomic_store(&comm->hdr->revoked, 1);
    fake_bump(comm->hdr);
    return ncclSuccess;
}

/* A getter: *out = VALUE (of comm) when comm is valid and out not NULL. */
#define FAKE_GETTER(func, type, value)                                        \
    NCCL_API(ncclResult_t, func, ncclComm_t comm, type *out)                  \
    {                                                                         \
        if (!fake_comm_ok(comm) || !out)                                      \
            return fake_err(ncclInvalidArgument, "bad comm");                 \
        *out = (value);                                                       \
        return ncclSuccess;                                                   \
    }

FAKE_GETTER(ncclCommGetAsyncError, ncclResult_t,
            (ncclResult_t)atomic_load(&comm->async_err))
FAKE_GETTER(ncclCommCount, int, comm->nranks)
FAKE_GETTER(ncclCommUserRank, int, comm->rank)
FAKE_GETTER(ncclCommCuDevice, int, comm->device)

/* ---- misc ---- */

NCCL_API(ncclResult_t, ncclGetVersion, int *version)
{
    if (!version)
        return fake_err(ncclInvalidArgument, "version is NULL");
    /* P3D_FAKE_NCCL_VERSION: another NCCL_VERSION_CODE (22907 for
     * 2.29.7), for the shim's version gates */
    *version = getenv("P3D_FAKE_NCCL_VERSION")
                   ? atoi(getenv("P3D_FAKE_NCCL_VERSION")) : FAKE_VERSION;
    return ncclSuccess;
}

NCCL_API(const char *, ncclGetErrorString, ncclResult_t result)
{
    switch (result) {
    case ncclSuccess: return "no error";
    case ncclUnhandledCudaError: return "unhandled cuda error";
    case ncclSystemError: return "unhandled system error";
    case ncclInternalError: return "internal error";
    case ncclInvalidArgument: return "invalid argument";
    case ncclInvalidUsage: return "invalid usage";
    case ncclRemoteError: return "remote process exited or there was a "
                                 "network error";
    case ncclInProgress: return "NCCL operation in progress";
    default: return "unknown result code";
    }
}

NCCL_API(const char *, ncclGetLastError, ncclComm_t comm)
{
    (void)comm;
    return fake_errbuf;
}

static double fake_scalar(const void *p, ncclDataType_t dt)
{
    switch (dt) {
    case ncclInt8: return *(const int8_t *)p;
    case ncclUint8: return *(const uint8_t *)p;
    case ncclInt32: return *(const int32_t *)p;
    case ncclUint32: return *(const uint32_t *)p;
    case ncclInt64: return (double)*(const int64_t *)p;
    case ncclUint64: return (double)*(const uint64_t *)p;
    case ncclFloat16: return *(const _Float16 *)p;
    case ncclFloat32: return *(const float *)p;
    case ncclFloat64: return *(const double *)p;
    case ncclBfloat16: return fake_bf16_get(p);
    default: return 1.0;
    }
}

NCCL_API(ncclResult_t, ncclRedOpCreatePreMulSum, ncclRedOp_t *op,
         void *scalar, ncclDataType_t datatype,
         ncclScalarResidence_t residence, ncclComm_t comm)
{
    (void)residence;
    if (!op || !scalar || !fake_comm_ok(comm) || !fake_dt_size(datatype))
        return fake_err(ncclInvalidArgument, "bad PreMulSum args");
    for (int i = 0; i < FAKE_MAX_REDOPS; i++) {
        if (__atomic_exchange_n(&fake_redops[i].used, 1, __ATOMIC_SEQ_CST))
            continue;
        fake_redops[i].dt = datatype;
        fake_redops[i].scalar = fake_scalar(scalar, datatype);
        *op = (ncclRedOp_t)((int)ncclNumOps + i);
        return ncclSuccess;
    }
    return fake_err(ncclInternalError, "too many custom reduction ops");
}

NCCL_API(ncclResult_t, ncclRedOpDestroy, ncclRedOp_t op, ncclComm_t comm)
{
    (void)comm;
    if (!fake_is_premul(op))
        return fake_err(ncclInvalidArgument, "not a custom op: %d", op);
    __atomic_store_n(&fake_redops[(int)op - (int)ncclNumOps].used, 0,
                     __ATOMIC_SEQ_CST);
    return ncclSuccess;
}

NCCL_API(ncclResult_t, ncclMemAlloc, void **ptr, size_t size)
{
    if (!ptr)
        return fake_err(ncclInvalidArgument, "ptr is NULL");
    *ptr = calloc(1, size ? size : 1);
    return *ptr ? ncclSuccess : fake_err(ncclSystemError, "out of memory");
}

NCCL_API(ncclResult_t, ncclMemFree, void *ptr)
{
    free(ptr);
    return ncclSuccess;
}

NCCL_API(ncclResult_t, ncclCommRegister, const ncclComm_t comm, void *buff,
         size_t size, void **handle)
{
    (void)comm;
    (void)size;
    if (handle)
        *handle = buff;
    return ncclSuccess;
}

NCCL_API(ncclResult_t, ncclCommDeregister, const ncclComm_t comm,
         void *handle)
{
    (void)comm;
    (void)handle;
    return ncclSuccess;
}

NCCL_API(ncclResult_t, ncclCommWindowRegister, ncclComm_t comm, void *buff,
         size_t size, ncclWindow_t *win, int winFlags)
{
    (void)comm;
    (void)size;
    (void)winFlags;
    if (win)
        *win = (ncclWindow_t)buff;
    return ncclSuccess;
}

NCCL_API(ncclResult_t, ncclCommWindowDeregister, ncclComm_t comm,
         ncclWindow_t win)
{
    (void)comm;
    (void)win;
    return ncclSuccess;
}
