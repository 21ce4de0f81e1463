/*
 * rank_comm.c - communicators, ops, compute and faults of one rank.
 *
 * Communicators are created the way Megatron under PyTorch does it: one
 * per group, lazily at its first use, the group's first rank calling
 * ncclGetUniqueId and every member ncclCommInitRankConfig (the id travels
 * through a file in the run's scratch dir, as through the c10d store).
 * Every op is counted in the rank's truth file before it is issued, so
 * the counts stay exact when the rank hangs inside NCCL or is killed.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "p3dfake.h"
#include "rank.h"

/* Kernels: their names are what the fake cudart and CUPTI report. */
void p3dsim_forward_kernel(void);
void p3dsim_backward_kernel(void);
void p3dsim_optimizer_kernel(void);
void p3dsim_hang_kernel(void);
void p3dsim_forward_kernel(void) {}
void p3dsim_backward_kernel(void) {}
void p3dsim_optimizer_kernel(void) {}
void p3dsim_hang_kernel(void) {}

uint64_t rank_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static size_t rank_dt_size(ncclDataType_t dt)
{
    switch (dt) {
    case ncclFloat16: case ncclBfloat16: return 2;
    case ncclInt32: case ncclUint32: case ncclFloat32: return 4;
    case ncclInt64: case ncclUint64: case ncclFloat64: return 8;
    default: return 1;
    }
}

static void rank_sleep_ms(int ms)
{
    struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000l };

    nanosleep(&ts, NULL);
}

static int rank_read_id(const char *path, ncclUniqueId *id)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    ssize_t n;

    if (fd < 0)
        return -1;
    n = read(fd, id, sizeof(*id));
    close(fd);
    return n == (ssize_t)sizeof(*id) ? 0 : -1;
}

static int rank_write_id(const char *path, const ncclUniqueId *id, int rank)
{
    char tmp[PATH_MAX + 32];
    int fd;

    snprintf(tmp, sizeof(tmp), "%s.%d.tmp", path, rank);
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0 || write(fd, id, sizeof(*id)) != (ssize_t)sizeof(*id)) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    close(fd);
    return rename(tmp, path);
}

/* c is now the rank's communicator of group g, its rank in it me. */
ncclComm_t rank_comm_keep(struct rank_ctx *x, int g, ncclComm_t c,
                                 int me)
{
    if (x->cfg->async &&
        (cudaStreamCreateWithFlags(&x->nstream[g], cudaStreamNonBlocking) !=
             cudaSuccess ||
         cudaEventCreateWithFlags(&x->ev_post[g], cudaEventDisableTiming) !=
             cudaSuccess))
        return NULL;
    x->comm[g] = c;
    x->t->created[g] = ++x->t->n_created;
    x->t->comm_rank[g] = me;
    return c;
}

ncclComm_t rank_comm(struct rank_ctx *x, int g)
{
    int mem[SIM_MAX_RANKS], n, me = 0;
    char path[PATH_MAX], name[160];
    ncclUniqueId id;
    ncclConfig_t conf = NCCL_CONFIG_INITIALIZER;
    ncclComm_t c = NULL;
    ncclResult_t r;

    if (x->comm[g])
        return x->comm[g];
    n = sim_members(x->cfg, g, x->rank, mem);
    while (mem[me] != x->rank)
        me++;
    snprintf(path, sizeof(path), "%s/ids/%s-%d.id", x->scratch,
             sim_grp_short(g), mem[0]);
    if (me == 0) {
        if (ncclGetUniqueId(&id) != ncclSuccess ||
            rank_write_id(path, &id, x->rank) != 0)
            return NULL;
    } else {
        while (rank_read_id(path, &id) != 0)
            rank_sleep_ms(1);
    }
    if (x->cfg->comm_names) {
        snprintf(name, sizeof(name), "%s:%d", sim_grp_megatron(g), g + 1);
        conf.commName = name;
    }
    r = ncclCommInitRankConfig(&c, n, id, me, &conf);
    if (r != ncclSuccess && r != ncclInProgress)
        return NULL;
    return rank_comm_keep(x, g, c, me);
}

static ncclResult_t rank_call(struct rank_ctx *x, const struct rank_op *o,
                              ncclComm_t c)
{
    const char *s = x->sbuf;
    char *r = x->rbuf;
    cudaStream_t st = x->cfg->async ? x->nstream[o->grp] : x->stream;

    switch (o->kind) {
    case SK_ALLREDUCE:
        return ncclAllReduce(s, r, o->count, o->dt, o->op, c, st);
    case SK_REDUCESCATTER:
        return ncclReduceScatter(s, r, o->count, o->dt, o->op, c, st);
    case SK_ALLGATHER:
        return ncclAllGather(s, r, o->count, o->dt, c, st);
    case SK_BROADCAST:
        return ncclBroadcast(s, r, o->count, o->dt, o->peer, c, st);
    case SK_ALLTOALL:
        return ncclAlltoAll(s, r, o->count, o->dt, c, st);
    case SK_SEND:
        return ncclSend(s, o->count, o->dt, o->peer, c, st);
    case SK_RECV:
        return ncclRecv(r, o->count, o->dt, o->peer, c, st);
    default:
        return ncclInvalidUsage;
    }
}

/* The injected hang: stop, "in compute", until the driver kills us. */
static void rank_hang(struct rank_ctx *x, int g)
{
    uint64_t dur = 3600ull * 1000000000ull;
    void *args[1] = { &dur };
    dim3 one = { 1, 1, 1 };

    x->t->stop_grp = g;
    x->t->stop_t = rank_now();
    x->t->stopped = 1;
    if (x->t->n_busy < SIM_MAX_BUSY) {
        struct sim_busy *b = &x->t->busy[x->t->n_busy++];

        b->start = x->t->stop_t;
        b->iter = (uint32_t)x->iter;
        b->kind = SB_HANG;
    }
    for (;;) {
        cudaLaunchKernel((const void *)p3dsim_hang_kernel, one, one, args, 0,
                         x->stream);
        cudaDeviceSynchronize();   /* async: the kernel runs on the stream */
    }
}

static void rank_kill(struct rank_ctx *x)
{
    x->t->stop_grp = -1;
    x->t->stop_t = rank_now();
    x->t->stopped = 2;
    raise(SIGKILL);
}

/* The injected mismatch of one op other than its count; 0 if the op
 * has no such field to get wrong. */
static int rank_mismatch(struct rank_op *o, int what, int red)
{
    switch (what) {
    case SIM_MM_REDOP:
        if (!red)
            return 0;
        o->op = o->op == ncclMax ? ncclSum : ncclMax;
        return 1;
    case SIM_MM_DTYPE:   /* same width: the buffers stay big enough */
        o->dt = o->dt == ncclBfloat16 ? ncclFloat16
                : o->dt == ncclFloat16 ? ncclBfloat16
                : o->dt == ncclFloat32 ? ncclInt32
                : o->dt == ncclInt32 ? ncclFloat32
                : o->dt == ncclInt64 ? ncclFloat64 : ncclInt64;
        return 1;
    case SIM_MM_KIND:    /* same buffer sizes */
        if (o->kind == SK_ALLREDUCE || o->kind == SK_BROADCAST) {
            o->kind = o->kind == SK_ALLREDUCE ? SK_BROADCAST : SK_ALLREDUCE;
            o->peer = 0;
            return 1;
        }
        if (o->kind == SK_REDUCESCATTER || o->kind == SK_ALLGATHER) {
            o->kind = o->kind == SK_ALLGATHER ? SK_REDUCESCATTER
                                              : SK_ALLGATHER;
            return 1;
        }
        return 0;
    default:
        return 0;
    }
}

/* Apply the faults meant for this batch; may not return. */
static void rank_faults(struct rank_ctx *x, struct rank_op *ops, int n)
{
    const struct sim_cfg *c = x->cfg;
    uint64_t seen[SG_COUNT] = { 0 };

    for (int i = 0; i < n; i++) {
        int g = ops[i].grp;
        uint64_t ng = x->t->issued[g] + ++seen[g];
        uint64_t nt = x->t->issued_total + (uint64_t)i + 1;

        if (x->rank == c->hang_rank && g == c->hang_grp &&
            ng == (uint64_t)c->hang_n)
            rank_hang(x, g);
        if (x->rank == c->kill_rank && nt == (uint64_t)c->kill_n)
            rank_kill(x);
        for (int m = 0; m < c->n_mm; m++) {
            int k = ops[i].kind, red = k == SK_ALLREDUCE ||
                                       k == SK_REDUCESCATTER || k == SK_REDUCE;

            if (x->rank != c->mm[m].rank || g != c->mm[m].grp ||
                ng != (uint64_t)c->mm[m].n)
                continue;
            if (!rank_mismatch(&ops[i], c->mm[m].what, red))
                ops[i].count += 1;   /* nothing else to get wrong */
            if (!x->t->mismatch_op)
                x->t->mismatch_op = nt;
        }
    }
}

/*
 * Async mode, as PyTorch: each group's NCCL stream first waits for the
 * compute stream, and the compute stream waits for the result (work.wait).
 */
static void rank_streams_pre(struct rank_ctx *x, const struct rank_op *ops,
                             int n)
{
    if (!x->cfg->async)
        return;
    cudaEventRecord(x->ev_pre, x->stream);
    for (int i = 0; i < n; i++)
        if (i == 0 || ops[i].grp != ops[i - 1].grp)
            cudaStreamWaitEvent(x->nstream[ops[i].grp], x->ev_pre, 0);
}

static void rank_streams_post(struct rank_ctx *x, const struct rank_op *ops,
                              int n)
{
    if (!x->cfg->async)
        return;
    for (int i = 0; i < n; i++)
        if (i == 0 || ops[i].grp != ops[i - 1].grp) {
            cudaEventRecord(x->ev_post[ops[i].grp], x->nstream[ops[i].grp]);
            cudaStreamWaitEvent(x->stream, x->ev_post[ops[i].grp], 0);
        }
}

int rank_submit(struct rank_ctx *x, struct rank_op *ops, int n, int grouped)
{
    ncclComm_t comms[16];
    int bad = 0;

    if (n > 16)
        return -1;
    rank_faults(x, ops, n);
    for (int i = 0; i < n; i++)
        if (!(comms[i] = rank_comm(x, ops[i].grp)))
            return -1;
    for (int i = 0; i < n; i++) {
        struct rank_op *o = &ops[i];

        x->t->ops[o->grp][o->kind]++;
        x->t->bytes[o->grp][o->kind] += o->count * rank_dt_size(o->dt);
        x->t->issued[o->grp]++;
        x->t->issued_total++;
        x->t->inflight[o->grp][o->kind]++;
    }
    rank_streams_pre(x, ops, n);
    if (grouped)
        bad |= ncclGroupStart() != ncclSuccess;
    for (int i = 0; i < n; i++)
        bad |= rank_call(x, &ops[i], comms[i]) != ncclSuccess;
    if (grouped)
        bad |= ncclGroupEnd() != ncclSuccess;
    rank_streams_post(x, ops, n);
    memset(x->t->inflight, 0, sizeof(x->t->inflight));
    return bad ? -1 : 0;
}

int rank_one(struct rank_ctx *x, int grp, int kind, size_t count,
             ncclDataType_t dt, ncclRedOp_t op, int peer)
{
    struct rank_op o = { grp, kind, count ? count : 1, dt, op, peer };

    return rank_submit(x, &o, 1, 0);
}

void rank_compute(struct rank_ctx *x, int kind, int mb, double ms)
{
    static void (*const fns[])(void) = { p3dsim_forward_kernel,
                                         p3dsim_backward_kernel,
                                         p3dsim_optimizer_kernel };
    const struct sim_cfg *c = x->cfg;
    uint64_t dur;
    void *args[1] = { &dur };
    dim3 one = { 1, 1, 1 };

    if (x->rank == c->straggler_rank)
        ms *= 1.0 + c->straggler_pct / 100.0;
    dur = (uint64_t)(ms * 1e6);
    x->cur_mb = c->async ? 0xffff : mb;   /* async: not known on the stream */
    /* The fake reports the kernel as it ran: rank_observer records it. */
    cudaLaunchKernel((const void *)fns[kind], one, one, args, 0, x->stream);
}

void rank_destroy_comms(struct rank_ctx *x)
{
    rank_sync(x);
    rank_eager_destroy(x);
    for (int g = 0; g < SG_COUNT; g++) {
        if (x->comm[g]) {
            ncclCommDestroy(x->comm[g]);
            x->comm[g] = NULL;
        }
        if (x->nstream[g])
            cudaStreamDestroy(x->nstream[g]);
        if (x->ev_post[g])
            cudaEventDestroy(x->ev_post[g]);
    }
}

void rank_sync(struct rank_ctx *x)
{
    if (x->cfg->async)
        cudaDeviceSynchronize();
}

static struct rank_ctx *rank_observed;

/*
 * The truth of compute and pipeline time is what the fakes ran, on the
 * clock the shim reads: each compute kernel's start and end as the fake
 * cudart ran it, and each pipeline send/recv batch as fake NCCL ran it
 * (async: its kernels on the PP stream; synchronous: from its first op's
 * entry to its completion, rank_call_observer), not what the schedule
 * planned.
 */
static void rank_observer(const char *name, void *stream, uint64_t s,
                          uint64_t e, int is_nccl)
{
    struct rank_ctx *x = rank_observed;
    struct sim_step *st = &x->t->steps[x->iter];
    struct sim_busy *b;

    if (is_nccl) {
        if (x->cfg->async && x->nstream[SG_PP] &&
            stream == (void *)x->nstream[SG_PP])
            st->pp_wait_ns += e - s;
        return;
    }
    if (stream != (void *)x->stream || x->t->n_busy >= SIM_MAX_BUSY)
        return;
    b = &x->t->busy[x->t->n_busy];
    b->start = s;
    b->end = e;
    b->iter = (uint32_t)x->iter;
    b->kind = strstr(name, "forward") ? SB_FWD
              : strstr(name, "backward") ? SB_BWD
              : strstr(name, "optimizer") ? SB_OPT : SB_HANG;
    b->mb = (uint16_t)x->cur_mb;
    st->busy_ns += e - s;
    x->t->n_busy++;
}

/*
 * Synchronous mode: a pipeline batch takes the rank from its first op's
 * entry into fake NCCL to the batch's completion (what the shim's start
 * and end events of its ops bracket).  Both modes: an iteration starts,
 * in the truth's step times, where its first NCCL call entered the fake,
 * so a rank descheduled between the schedule's start and that call
 * shifts truth and traces alike.
 */
static void rank_call_observer(uint64_t s, uint64_t e)
{
    struct rank_ctx *x = rank_observed;
    struct sim_step *st = &x->t->steps[x->iter];

    if (x->want_first) {
        st->first_op = s;
        x->want_first = 0;
    }
    if (!x->cfg->async && x->in_pp)
        st->pp_wait_ns += e - s;
}

void rank_observe(struct rank_ctx *x)
{
    rank_observed = x;
    if (x->cfg->async)
        cudaEventCreateWithFlags(&x->ev_pre, cudaEventDisableTiming);
    p3dfake_set_kernel_observer(rank_observer);
    p3dfake_set_call_observer(rank_call_observer);
}
