/*
 * p3d_nccl_comm.c - wrappers of NCCL's communicator life cycle: the
 * inits, split (NOCOLOR included), shrink, finalize/destroy/abort/revoke,
 * and ncclCommGetAsyncError (counted, not traced).
 *
 * Each created communicator gets NCCL's own commHash (p3d_commhash.c) and
 * an entry in the comm table (p3d_comm.c).  Non-blocking inits return
 * ncclInProgress: the comm is recorded at once with what the arguments
 * say, and size/rank/device arrive later as P3D_REC_COMM_INFO.
 */
#include <stddef.h>
#include <string.h>
#include <unistd.h>

#include "p3d_commhash.h"
#include "p3d_hooks.h"
#include "p3d_inflight.h"
#include "p3d_nccl.h"
#include "p3d_watchdog.h"

#define P3D_NAME_MAX 256
#define P3D_LEARN_TRIES 64
#define P3D_CONFIG_MAGIC 0xcafebeef

/* ncclCommInitAll makes its own unique id: caught from ncclGetUniqueId. */
static P3D_TLS int p3d_in_init_all;
static P3D_TLS int p3d_init_all_have_id;
static P3D_TLS ncclUniqueId p3d_init_all_id;

static int p3d_comm_created(ncclResult_t ret)
{
    return ret == ncclSuccess || ret == ncclInProgress;
}

static const char *p3d_config_name(const ncclConfig_t *cfg)
{
    if (cfg == NULL || cfg->magic != P3D_CONFIG_MAGIC ||
        cfg->size < offsetof(ncclConfig_t, commName) + sizeof(char *))
        return NULL;
    return cfg->commName;
}

static uint8_t p3d_config_flags(const ncclConfig_t *cfg)
{
    if (cfg == NULL || cfg->magic != P3D_CONFIG_MAGIC ||
        cfg->size < offsetof(ncclConfig_t, blocking) + sizeof(int))
        return 0;
    return cfg->blocking == 0 ? P3D_COMMF_NONBLOCKING : 0;
}

/* Copy `tmpl` and the comm name into a P3D_REC_COMM record. */
static void p3d_comm_record(const struct p3d_rec_comm *tmpl, const char *name)
{
    size_t n = name != NULL ? strnlen(name, P3D_NAME_MAX) : 0;
    struct p3d_rec_comm *r = p3d_rec_reserve(P3D_REC_COMM, sizeof(*r) + n + 1);

    if (r == NULL)
        return;
    memcpy((char *)r + sizeof(r->h), (const char *)tmpl + sizeof(r->h),
           sizeof(*r) - sizeof(r->h));
    if (n > 0)
        memcpy(r->name, name, n);
    p3d_watchdog_comm_name(tmpl->comm_hash, name); /* hang report label */
    r->tid = p3d_tid();
    p3d_rec_commit(r);
    p3d_nccl_note_version();
}

static void p3d_comm_info_record(const struct p3d_comm *c)
{
    struct p3d_rec_comm_info *r =
        p3d_rec_reserve(P3D_REC_COMM_INFO, sizeof(*r));

    if (r == NULL)
        return;
    r->comm_hash = c->hash;
    r->t = p3d_now();
    r->nranks = c->nranks;
    r->rank = c->rank;
    r->device = c->device;
    p3d_rec_commit(r);
}

/* 1 if NCCL reports `comm` ready (async error ncclSuccess). */
static int p3d_comm_ready(ncclComm_t comm)
{
    P3D_REAL(ncclCommGetAsyncError);
    ncclResult_t err = ncclInProgress;

    return real != NULL && real(comm, &err) == ncclSuccess &&
           err == ncclSuccess;
}

void p3d_nccl_learn(struct p3d_comm *c, ncclComm_t comm, int emit)
{
    P3D_REAL(ncclCommCount);
    static void *slot_rank, *slot_dev;
    __typeof__(&ncclCommUserRank) get_rank;
    __typeof__(&ncclCommCuDevice) get_dev;
    int n = -1, r = -1, d = -1;

    if (c->info_known || c->info_tries++ >= P3D_LEARN_TRIES || real == NULL)
        return;
    get_rank = (__typeof__(get_rank))p3d_resolve_cached(
        &slot_rank, "ncclCommUserRank", "pncclCommUserRank");
    get_dev = (__typeof__(get_dev))p3d_resolve_cached(
        &slot_dev, "ncclCommCuDevice", "pncclCommCuDevice");
    if (get_rank == NULL || !p3d_comm_ready(comm))
        return;
    if (real(comm, &n) != ncclSuccess || get_rank(comm, &r) != ncclSuccess)
        return;
    if (get_dev == NULL || get_dev(comm, &d) != ncclSuccess)
        d = -1;
    p3d_comm_set_info(c, n, r, d);
    if (emit)
        p3d_comm_info_record(c);
}

void p3d_nccl_note_version(void)
{
    static int done;
    P3D_REAL(ncclGetVersion);
    int v = 0;

    if (__atomic_load_n(&done, __ATOMIC_RELAXED) || !p3d_writer_is_open())
        return;
    __atomic_store_n(&done, 1, __ATOMIC_RELAXED);
    if (real != NULL && real(&v) == ncclSuccess)
        p3d_writer_set_nccl_version((uint32_t)v);
}

/*
 * Record a root communicator made from `id`: table entry, learn what is
 * known if the init finished, P3D_REC_COMM.
 */
static void p3d_comm_root(ncclComm_t comm, const ncclUniqueId *id,
                          struct p3d_rec_comm *t, const ncclConfig_t *cfg)
{
    struct p3d_comm *c = NULL;

    t->comm_hash = id != NULL ? p3d_commhash_root(id->internal) : 0;
    t->comm_ptr = (uint64_t)(uintptr_t)comm;
    t->flags |= p3d_config_flags(cfg);
    t->device = -1;
    if (p3d_comm_created((ncclResult_t)t->ret) && comm != NULL)
        c = p3d_comm_add(comm, t->comm_hash, 0, t->nranks, t->rank, -1);
    if (c != NULL) {
        __atomic_store_n(&c->info_known, 0, __ATOMIC_RELEASE);
        if (t->ret == ncclSuccess)
            p3d_nccl_learn(c, comm, 0);
        t->device = c->device;
    }
    p3d_comm_record(t, p3d_config_name(cfg));
}

/* Before a root init: what the arguments say; returns the in-flight token. */
static uint64_t p3d_root_begin(struct p3d_rec_comm *t, int how, int nranks,
                               int rank, const ncclUniqueId *id)
{
    t->how = (uint8_t)how;
    t->nranks = nranks;
    t->rank = rank;
    t->t_enter = p3d_now();
    return p3d_nccl_init_enter(id != NULL ? p3d_commhash_root(id->internal)
                                          : 0, nranks, rank);
}

/* After it: the comm it made (`out`, may be NULL) and its record. */
static void p3d_root_end(struct p3d_rec_comm *t, uint64_t tok,
                         ncclResult_t ret, ncclComm_t *out,
                         const ncclUniqueId *id, const ncclConfig_t *cfg)
{
    p3d_nccl_init_leave(tok);
    t->t_exit = p3d_now();
    t->ret = ret;
    p3d_comm_root(out != NULL ? *out : NULL, id, t, cfg);
    p3d_nccl_leave();
}

/*
 * The root inits, one row each: name, P3D_COMM_INIT_*, nccl.h's
 * parameters, the argument list, then the new comm's slot, nranks, this
 * rank, the unique ids and how many, and the config (NULL: none).
 */
#define P3D_NCCL_INITS(X)                                                     \
    X(ncclCommInitRank, P3D_COMM_INIT_RANK,                                   \
      (ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank),          \
      (comm, nranks, commId, rank), comm, nranks, rank, &commId, 1, NULL)     \
    X(ncclCommInitRankConfig, P3D_COMM_INIT_CONFIG,                           \
      (ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank,           \
       ncclConfig_t *config),                                                 \
      (comm, nranks, commId, rank, config), comm, nranks, rank, &commId, 1,   \
      config)                                                                 \
    X(ncclCommInitRankScalable, P3D_COMM_INIT_SCALABLE,                       \
      (ncclComm_t *newcomm, int nranks, int myrank, int nId,                  \
       ncclUniqueId *commIds, ncclConfig_t *config),                          \
      (newcomm, nranks, myrank, nId, commIds, config), newcomm, nranks,       \
      myrank, commIds, nId, config)

#define P3D_NCCL_INIT_WRAP(fn, how, params, args, out, nranks, rank, ids,    \
                           nid, cfg)                                          \
    P3D_EXPORT ncclResult_t fn params                                         \
    {                                                                         \
        P3D_REAL(fn);                                                         \
        const ncclUniqueId *id = (nid) > 0 ? (ids) : NULL;                    \
        struct p3d_rec_comm t = {0};                                          \
        ncclResult_t ret;                                                     \
        uint64_t tok;                                                         \
                                                                              \
        if (real == NULL)                                                     \
            return ncclSystemError;                                           \
        if (!p3d_nccl_enter())                                                \
            return real args;                                                 \
        tok = p3d_root_begin(&t, how, nranks, rank, id);                      \
        ret = real args;                                                      \
        p3d_root_end(&t, tok, ret, out, id, cfg);                             \
        return ret;                                                           \
    }

P3D_NCCL_INITS(P3D_NCCL_INIT_WRAP)

/* Pass-through that lets ncclCommInitAll's wrapper see its unique id. */
P3D_EXPORT ncclResult_t ncclGetUniqueId(ncclUniqueId *uniqueId)
{
    P3D_REAL(ncclGetUniqueId);
    ncclResult_t ret;

    if (real == NULL)
        return ncclSystemError;
    ret = real(uniqueId);
    if (p3d_in_init_all && ret == ncclSuccess && uniqueId != NULL) {
        p3d_init_all_id = *uniqueId;
        p3d_init_all_have_id = 1;
    }
    return ret;
}

/*
 * NCCL made the id without going through the PLT: derive a stand-in from
 * (pid, first comm pointer), the same for all ndev comms of the call.
 */
static void p3d_init_all_synthetic_id(ncclComm_t first)
{
    uint64_t v[2] = {(uint64_t)getpid(), (uint64_t)(uintptr_t)first};

    memset(&p3d_init_all_id, 0, sizeof(p3d_init_all_id));
    memcpy(p3d_init_all_id.internal, v, sizeof(v));
}

P3D_EXPORT ncclResult_t ncclCommInitAll(ncclComm_t *comm, int ndev,
                                        const int *devlist)
{
    P3D_REAL(ncclCommInitAll);
    struct p3d_rec_comm t = {0};
    ncclResult_t ret;
    int i;

    if (real == NULL)
        return ncclSystemError;
    if (!p3d_nccl_enter())
        return real(comm, ndev, devlist);
    p3d_in_init_all = 1;
    p3d_init_all_have_id = 0;
    t.t_enter = p3d_now();
    ret = real(comm, ndev, devlist);
    t.t_exit = p3d_now();
    p3d_in_init_all = 0;
    if (!p3d_init_all_have_id && comm != NULL && ndev > 0)
        p3d_init_all_synthetic_id(comm[0]);
    for (i = 0; comm != NULL && i < ndev; i++) {
        t.how = P3D_COMM_INIT_ALL;
        t.flags = 0;
        t.nranks = ndev;
        t.rank = i;
        t.ret = ret;
        p3d_comm_root(comm[i], &p3d_init_all_id, &t, NULL);
    }
    p3d_nccl_leave();
    return ret;
}

/* Record a split/shrink child; `c` is the parent entry (may be NULL). */
static void p3d_comm_child(struct p3d_comm *parent, ncclComm_t child,
                           struct p3d_rec_comm *t, const ncclConfig_t *cfg)
{
    struct p3d_comm *c = NULL;

    t->parent_hash = parent != NULL ? parent->hash : 0;
    if (parent == NULL || parent->unknown)
        t->flags |= P3D_COMMF_PARENT_UNKNOWN;
    t->flags |= p3d_config_flags(cfg);
    t->nranks = t->rank = t->device = -1;
    if (t->color == NCCL_SPLIT_NOCOLOR && t->how == P3D_COMM_SPLIT) {
        t->flags |= P3D_COMMF_NOCOLOR;
    } else {
        t->comm_hash = p3d_commhash_split(t->parent_hash, t->split_count,
                                          t->color);
        t->comm_ptr = (uint64_t)(uintptr_t)child;
        if (p3d_comm_created((ncclResult_t)t->ret) && child != NULL)
            c = p3d_comm_add(child, t->comm_hash, t->parent_hash, -1, -1,
                             -1);
    }
    if (c != NULL && t->ret == ncclSuccess) {
        p3d_nccl_learn(c, child, 0);
        t->nranks = c->nranks;
        t->rank = c->rank;
        t->device = c->device;
    }
    p3d_comm_record(t, p3d_config_name(cfg));
}

P3D_EXPORT ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key,
                                      ncclComm_t *newcomm,
                                      ncclConfig_t *config)
{
    P3D_REAL(ncclCommSplit);
    struct p3d_rec_comm t = {0};
    struct p3d_comm *parent;
    ncclResult_t ret;
    uint64_t tok;

    if (real == NULL)
        return ncclSystemError;
    if (!p3d_nccl_enter())
        return real(comm, color, key, newcomm, config);
    parent = p3d_comm_get(comm);
    t.how = P3D_COMM_SPLIT;
    t.color = color;
    t.key = key;
    t.t_enter = p3d_now();
    tok = p3d_nccl_init_enter(parent != NULL ? parent->hash : 0, -1, -1);
    ret = real(comm, color, key, newcomm, config);
    p3d_nccl_init_leave(tok);
    t.t_exit = p3d_now();
    t.ret = ret;
    if (parent != NULL)
        t.split_count = p3d_comm_created(ret) ? p3d_comm_next_split(parent)
                                              : parent->split_count;
    p3d_comm_child(parent, newcomm != NULL ? *newcomm : NULL, &t, config);
    p3d_nccl_leave();
    return ret;
}

P3D_EXPORT ncclResult_t ncclCommShrink(ncclComm_t comm, int *excludeRanksList,
                                       int excludeRanksCount,
                                       ncclComm_t *newcomm,
                                       ncclConfig_t *config, int shrinkFlags)
{
    P3D_REAL(ncclCommShrink);
    struct p3d_rec_comm t = {0};
    struct p3d_comm *parent;
    ncclResult_t ret;

    if (real == NULL)
        return ncclSystemError;
    if (!p3d_nccl_enter())
        return real(comm, excludeRanksList, excludeRanksCount, newcomm,
                    config, shrinkFlags);
    parent = p3d_comm_get(comm);
    t.how = P3D_COMM_SHRINK;
    t.key = parent != NULL ? parent->rank : -1;
    t.t_enter = p3d_now();
    ret = real(comm, excludeRanksList, excludeRanksCount, newcomm, config,
               shrinkFlags);
    t.t_exit = p3d_now();
    t.ret = ret;
    p3d_comm_child(parent, newcomm != NULL ? *newcomm : NULL, &t, config);
    p3d_nccl_leave();
    return ret;
}

/* After a comm-ending call returned `ret`: its P3D_REC_COMM_END. */
static void p3d_comm_end_record(ncclComm_t comm, int how, uint64_t t0,
                                ncclResult_t ret, int forget)
{
    struct p3d_comm *c = p3d_comm_find(comm);
    struct p3d_rec_comm_end *r =
        p3d_rec_reserve(P3D_REC_COMM_END, sizeof(*r));

    if (r != NULL) {
        r->how = (uint8_t)how;
        r->comm_hash = c != NULL ? c->hash : (uint64_t)(uintptr_t)comm;
        r->t_enter = t0;
        r->t_exit = p3d_now();
        r->ret = ret;
        r->tid = p3d_tid();
        r->last_async_error = c != NULL ? c->last_async_error : 0;
        r->pending_ops = p3d_inflight_pending_on(r->comm_hash);
        p3d_rec_commit(r);
    }
    if (forget && (ret == ncclSuccess || how == P3D_END_ABORT))
        p3d_comm_remove(comm);
}

static uint64_t p3d_comm_end_begin(ncclComm_t comm, int how)
{
    struct p3d_comm *c = p3d_comm_find(comm);

    p3d_hook_comm_end(c != NULL ? c->hash : (uint64_t)(uintptr_t)comm, how);
    return p3d_now();
}

/*
 * The comm-ending calls, one row each: name, P3D_END_*, whether the comm
 * leaves the table, nccl.h's parameters and the argument list.
 */
#define P3D_NCCL_ENDS(X)                                                      \
    X(ncclCommFinalize, P3D_END_FINALIZE, 0, (ncclComm_t comm), (comm))       \
    X(ncclCommDestroy, P3D_END_DESTROY, 1, (ncclComm_t comm), (comm))         \
    X(ncclCommAbort, P3D_END_ABORT, 1, (ncclComm_t comm), (comm))             \
    X(ncclCommRevoke, P3D_END_REVOKE, 0, (ncclComm_t comm, int revokeFlags),  \
      (comm, revokeFlags))

#define P3D_NCCL_END_WRAP(fn, how, forget, params, args)                      \
    P3D_EXPORT ncclResult_t fn params                                         \
    {                                                                         \
        P3D_REAL(fn);                                                         \
        ncclResult_t ret;                                                     \
        uint64_t t0;                                                          \
                                                                              \
        if (real == NULL)                                                     \
            return ncclSystemError;                                           \
        if (!p3d_nccl_enter())                                                \
            return real args;                                                 \
        t0 = p3d_comm_end_begin(comm, how);                                   \
        ret = real args;                                                      \
        p3d_comm_end_record(comm, how, t0, ret, forget);                      \
        p3d_nccl_leave();                                                     \
        return ret;                                                           \
    }

P3D_NCCL_ENDS(P3D_NCCL_END_WRAP)

/*
 * Polled ~10x/s per pending op by PyTorch's watchdog: counted, never
 * traced.  Keeps the last error per comm (the reason of a later abort)
 * and learns a non-blocking comm's size once it reports ready.
 */
P3D_EXPORT ncclResult_t ncclCommGetAsyncError(ncclComm_t comm,
                                              ncclResult_t *asyncError)
{
    P3D_REAL(ncclCommGetAsyncError);
    struct p3d_comm *c;
    ncclResult_t ret;

    if (real == NULL)
        return ncclSystemError;
    if (!p3d_nccl_enter())
        return real(comm, asyncError);
    ret = real(comm, asyncError);
    p3d_count_async_poll();
    c = p3d_comm_find(comm);
    if (c != NULL && ret == ncclSuccess && asyncError != NULL) {
        if (*asyncError != ncclSuccess && *asyncError != ncclInProgress)
            c->last_async_error = *asyncError;
        else if (*asyncError == ncclSuccess && !c->info_known)
            p3d_nccl_learn(c, comm, 1);
    }
    p3d_nccl_leave();
    return ret;
}
