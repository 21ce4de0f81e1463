/*
 * p3d_gen.c - writes synthetic, format-exact trace sets for the analyzer
 * tests: W ranks of a Megatron-like job with a chosen layout and rank
 * order, plus injected bad input.
 *
 * Usage: p3d-gen [options] OUTDIR
 *   --tp N --pp N --dp N --cp N --ep N   layout (world = tp*cp*dp*pp)
 *   --order tp-cp-ep-dp-pp|tp-cp-ep-pp-dp
 *   --steps N --mb N --layers N          schedule size
 *   --ops N          about N ops per rank (sets --steps; scale tests)
 *   --job ID --start SEC --suffix S      job id, start time, file suffix
 *   --no-cmdline | --cmd "ARGS"          Megatron flags in the cmdline record
 *   --p2p            micro-batches after the first send/recv on 2-rank comms
 *   --gpu            write gpu_op records
 *   --no-comms       write no comm records (ops on unseen comms)
 *   --stall          after the steps every rank enters one more world
 *                    all-reduce that never returns, and notes SIGTERM:
 *                    all members arrived, none completed (an NCCL or
 *                    network stall, no desync)
 *   --captured       before the --stall op (or at the end), every rank
 *                    captures one world all-reduce into a CUDA graph: it
 *                    returns, flagged capturing, with no gpu_op record
 *                    (its kernels run at replays no record shows)
 *   --skip R         rank R never issues its last DP-CP op (the last
 *                    step's parameter all-gather) while its peers do, and
 *                    every rank exits cleanly: host records of a job whose
 *                    calls returned at once (GPU timing off)
 *   --gaps R         rank R's records of its odd-seq TP collectives were
 *                    dropped (as by a full buffer: the header counts them),
 *                    and in the last step its TP all-reduces disagree on
 *                    the count: with --ops of 40000 or more it has more
 *                    than 4,096 runs of seqs on TP, so the matcher finds
 *                    it only in its last run (P3D_RUNS_MAX)
 *   --capped R       rank R's trace reached its size cap (P3D_MAX_MB) half
 *                    way: every record from the middle step on was
 *                    dropped (the header counts them), though the rank ran
 *                    on as its peers did and closed its file
 *   --stall-absent N with --stall: the N highest ranks never enter the
 *                    stalled all-reduce (stopped outside NCCL, SIGTERM
 *                    noted): the others wait on them (hard edges)
 *   --init-absent N  after the steps the ranks below world - N are blocked
 *                    in a world communicator init (a watchdog report of
 *                    it pending 10 s, and one at SIGTERM, as the shim's
 *                    p3d_wd_inits_at_term), the last N never call it (stopped
 *                    outside NCCL); all note SIGTERM: NCCL init hung
 *   --stall-us N     with --stall: every file ends N us after the stalled
 *                    all-reduce was entered (by default about 4 s later),
 *                    as when a running job is stopped with SIGTERM while
 *                    that op was in flight
 *   --truth FILE     write "0xHASH USED_AS m0,m1,..." per communicator
 *   bad input (R = rank): --truncate R --killed R --bad-magic R
 *   --future-major R --huge-len R --unknown-tag R --missing R
 *   --duplicate R --empty R --mismatch R
 *
 * Communicators follow Megatron's lazy creation (PyTorch ProcessGroupNCCL creates a
 * communicator at a group's first collective when init_process_group
 * has no device_id, as Megatron-LM calls it):
 * WORLD (barrier), TP, PP, EMB, DP-CP, MP, the second world comm (grad
 * norm), CP and EP when > 1.  Hashes are any deterministic 64-bit mix of
 * (job, family, lowest member): every member computes the same value.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "p3d_format.h"

enum { AX_TP, AX_CP, AX_DP, AX_PP, AX_N };
enum { F_WORLD, F_TP, F_PP, F_EMB, F_DPCP, F_MP, F_WORLD2, F_CP, F_EP,
       F_P2P, F_N };
static const char *const fam_label[F_N] = {
    "WORLD", "TP", "PP", "EMB", "DP-CP", "MP", "WORLD", "CP", "EP", "P2P"};

static int g_stalling; /* the op being written never returns */
static int g_capturing; /* the op being written is graph-captured */

static struct {
    int size[AX_N], ep, world, order_pp_dp, steps, mb, layers, ops, stall;
    int cmdline, p2p, gpu, truncate, killed, bad_magic, future_major;
    int huge_len, unknown_tag, missing, duplicate, empty, mismatch, no_comms;
    int skip, captured, gaps, capped, stall_us, stall_absent, init_absent;
    const char *job, *suffix, *truth, *out, *cmd;
    uint64_t start;
} g = {{1, 1, 1, 1}, 1, 1, 0, 3, 4, 2, 0, 0, 1, 0, 0, -1, -1, -1, -1, -1, -1,
       -1, -1, -1, -1, 0, -1, 0, -1, -1, 0, 0, 0, "genjob", "", NULL, NULL, NULL, 1800000000ull};

#define GEN_MAX_WORLD 16384 /* issue 23's scale sets: 16,384 ranks */

struct comm {
    int fam, n, members[GEN_MAX_WORLD], rank;
    uint64_t hash, seq, pseq_send[GEN_MAX_WORLD], pseq_recv[GEN_MAX_WORLD];
};

struct wr {
    FILE *f;
    uint8_t chunk[P3D_CHUNK_BYTES];
    size_t off;
    uint32_t index;
    uint64_t n_rec, op_id, t;
    int dropping;     /* --capped: the trace reached its size cap */
    uint64_t dropped; /* records left out (the header counts them) */
    uint64_t t_stall; /* when the --stall op was entered */
};

static uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static uint64_t str_hash(const char *s)
{
    uint64_t h = 1469598103934665603ull;

    while (*s)
        h = (h ^ (uint8_t)*s++) * 1099511628211ull;
    return h;
}

/* Dense coordinates; order tp-cp-dp-pp or tp-cp-pp-dp, first fastest. */
static void coords(int r, int c[AX_N])
{
    static const int o0[AX_N] = {AX_TP, AX_CP, AX_DP, AX_PP};
    static const int o1[AX_N] = {AX_TP, AX_CP, AX_PP, AX_DP};
    const int *o = g.order_pp_dp ? o1 : o0;

    for (int i = 0; i < AX_N; i++) {
        c[o[i]] = r % g.size[o[i]];
        r /= g.size[o[i]];
    }
}

/* Expert coordinates: etp = tp, ep, edp, pp in the same order shape. */
static void ecoords(int r, int c[4])
{
    int edp = g.world / (g.size[AX_TP] * g.ep * g.size[AX_PP]);
    int sz[4] = {g.size[AX_TP], g.ep, edp, g.size[AX_PP]};
    int o[4] = {0, 1, 2, 3};

    if (g.order_pp_dp) {
        o[2] = 3;
        o[3] = 2;
    }
    for (int i = 0; i < 4; i++) {
        c[o[i]] = r % sz[o[i]];
        r /= sz[o[i]];
    }
}

static int same_fixed(int a, int b, unsigned vary, int expert)
{
    int ca[AX_N], cb[AX_N];

    if (expert) {
        ecoords(a, ca);
        ecoords(b, cb);
    } else {
        coords(a, ca);
        coords(b, cb);
    }
    for (int i = 0; i < AX_N; i++)
        if (!(vary & (1u << i)) && ca[i] != cb[i])
            return 0;
    return 1;
}

static void make_group(struct comm *c, int fam, int r, unsigned vary,
                       int expert)
{
    c->fam = fam;
    c->n = 0;
    for (int s = 0; s < g.world; s++)
        if (same_fixed(r, s, vary, expert))
            c->members[c->n++] = s;
}

static int stage_of(int r)
{
    int c[AX_N];

    coords(r, c);
    return c[AX_PP];
}

/* Build communicator `fam` as rank r sees it; 0 if r is not a member. */
static int make_comm(struct comm *c, int fam, int r, int peer)
{
    int pp = g.size[AX_PP];

    memset(c, 0, sizeof(*c));
    switch (fam) {
    case F_WORLD: case F_WORLD2: make_group(c, fam, r, 15, 0); break;
    case F_TP: make_group(c, fam, r, 1u << AX_TP, 0); break;
    case F_PP: make_group(c, fam, r, 1u << AX_PP, 0); break;
    case F_CP: make_group(c, fam, r, 1u << AX_CP, 0); break;
    case F_DPCP:
        make_group(c, fam, r, 1u << AX_DP | 1u << AX_CP, 0);
        break;
    case F_MP: make_group(c, fam, r, 1u << AX_TP | 1u << AX_PP, 0); break;
    case F_EP: make_group(c, fam, r, 2, 1); break;
    case F_EMB: {
        struct comm pg;
        int st = stage_of(r);
        if (pp < 2 || (st != 0 && st != pp - 1))
            return 0;
        make_group(&pg, F_PP, r, 1u << AX_PP, 0);
        c->fam = fam;
        for (int i = 0; i < pg.n; i++) {
            int s = stage_of(pg.members[i]);
            if (s == 0 || s == pp - 1)
                c->members[c->n++] = pg.members[i];
        }
        break;
    }
    case F_P2P:
        c->fam = fam;
        c->n = 2;
        c->members[0] = r < peer ? r : peer;
        c->members[1] = r < peer ? peer : r;
        break;
    }
    for (int i = 0; i < c->n; i++)
        if (c->members[i] == r)
            c->rank = i;
    c->hash = mix(str_hash(g.job) ^ mix((uint64_t)fam << 32 |
                                        (uint64_t)c->members[0]));
    if (fam == F_P2P)
        c->hash = mix(c->hash ^ (uint64_t)c->members[1] << 20);
    return 1;
}

static int comm_rank_of(const struct comm *c, int global)
{
    for (int i = 0; i < c->n; i++)
        if (c->members[i] == global)
            return i;
    return -1;
}

/* ---- writer ---- */

static void wr_chunk_start(struct wr *w)
{
    struct p3d_chunk_hdr *h = (void *)w->chunk;

    memset(w->chunk, 0, sizeof(w->chunk));
    h->h.tag = P3D_REC_CHUNK;
    h->h.len = sizeof(*h);
    h->tid = 4242;
    h->index = w->index++;
    w->off = sizeof(*h);
    w->n_rec++;
}

static void wr_flush(struct wr *w)
{
    fwrite(w->chunk, 1, sizeof(w->chunk), w->f);
    wr_chunk_start(w);
}

static void put(struct wr *w, void *rec, size_t len)
{
    struct p3d_rec_hdr *h = rec;

    if (w->dropping) {
        w->dropped++;
        return;
    }
    if (w->off + len > sizeof(w->chunk))
        wr_flush(w);
    h->len = (uint16_t)len;
    memcpy(w->chunk + w->off, rec, len);
    w->off += len;
    w->n_rec++;
}

static void put_str(struct wr *w, unsigned tag, const char *s, size_t n)
{
    uint8_t buf[4096] = {0};
    struct p3d_rec_str *r = (void *)buf;

    if (n > sizeof(buf) - 16)
        n = sizeof(buf) - 16;
    r->h.tag = tag;
    r->n_bytes = n;
    memcpy(r->text, s, n);
    put(w, r, P3D_REC_ROUND(sizeof(*r) + n));
}

static void put_comm(struct wr *w, const struct comm *c)
{
    uint8_t buf[96] = {0};
    struct p3d_rec_comm *r = (void *)buf;

    if (g.no_comms)
        return;
    r->h.tag = P3D_REC_COMM;
    r->how = P3D_COMM_INIT_CONFIG;
    r->comm_hash = c->hash;
    r->comm_ptr = 0x7f0000000000ull + (c->hash & 0xffff0);
    r->t_enter = w->t++;
    r->t_exit = w->t++;
    r->nranks = c->n;
    r->rank = c->rank;
    r->device = 0;
    r->tid = 4242;
    put(w, r, 88);
}

static void put_gpu(struct wr *w, const struct p3d_rec_op *o)
{
    struct p3d_rec_gpu_op r = {{P3D_REC_GPU_OP, 0}};

    r.source = P3D_GPU_SRC_EVENTS;
    r.op_id = o->op_id;
    r.gpu_start = o->t_enter + 500;
    r.gpu_end = r.gpu_start + 2000 + o->bytes / 50;
    put(w, &r, sizeof(r));
}

static void put_op(struct wr *w, struct comm *c, int op, int dtype, int redop,
                   uint64_t count, int peer)
{
    static const int dsize[] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1, 1};
    struct p3d_rec_op r = {{P3D_REC_OP, 0}};

    r.op = op;
    r.dtype = dtype;
    r.redop = redop;
    r.op_id = w->op_id++;
    r.comm_hash = c->hash;
    if (P3D_OP_IS_P2P(op))
        r.seq = op == P3D_OP_SEND ? c->pseq_send[peer]++
                                  : c->pseq_recv[peer]++;
    else
        r.seq = c->seq++;
    r.count = count;
    r.bytes = count * dsize[dtype % 13];
    r.stream = 0x5000;
    r.t_enter = w->t;
    w->t += 10000;
    r.t_exit = g_stalling ? 0 : r.t_enter + 3000;
    r.peer = peer;
    r.tid = 4242;
    r.comm_rank = c->rank;
    r.flags |= g_capturing ? P3D_OPF_CAPTURING : 0;
    put(w, &r, sizeof(r));
    if (g.gpu && !g_stalling && !g_capturing)
        put_gpu(w, &r);
}

/* ---- schedule ---- */

struct rank_ctx {
    struct wr w;
    struct comm c[F_N], p2p_prev, p2p_next;
    int have[F_N], r, stage, first_tp_ar, prev, next, mb;
    FILE *truth;
    long mark_off;
};

static void mark(struct rank_ctx *x)
{
    if (!x->mark_off && x->w.op_id == 6 && x->w.f)
        x->mark_off = (long)(P3D_DATA_OFFSET + (x->w.index - 1) *
                             (size_t)P3D_CHUNK_BYTES + x->w.off);
}

static void coll(struct rank_ctx *x, int fam, int op, int dt, int redop,
                 uint64_t count, int root)
{
    if (!x->have[fam])
        return;
    if (x->r == g.gaps && fam == F_TP && x->c[fam].seq % 2) {
        x->c[fam].seq++; /* issued, its record dropped */
        x->w.dropped++;
        return;
    }
    mark(x);
    put_op(&x->w, &x->c[fam], op, dt, redop, count, root);
}

static void p2p(struct rank_ctx *x, int op, int delta)
{
    struct comm *c = &x->c[F_PP];
    int other = delta < 0 ? x->prev : x->next;

    if (g.p2p && x->mb > 0) /* the first micro-batch goes batched */
        c = delta < 0 ? &x->p2p_prev : &x->p2p_next;
    mark(x);
    put_op(&x->w, c, op, 9, P3D_REDOP_NONE, 512 * 512, comm_rank_of(c, other));
}

static void tp_allreduce(struct rank_ctx *x, int step, uint64_t count)
{
    if (x->r == g.mismatch && step == (g.steps > 1) && !x->first_tp_ar++)
        count += 1;
    if (x->r == g.gaps && step == g.steps - 1)
        count += 1;
    coll(x, F_TP, P3D_OP_ALLREDUCE, 9, 0, count, -1);
}

static void layer(struct rank_ctx *x, int step, int bwd)
{
    tp_allreduce(x, step, 262144);
    tp_allreduce(x, step, 262144);
    coll(x, F_CP, bwd ? P3D_OP_REDUCESCATTER : P3D_OP_ALLGATHER, 9,
         bwd ? 0 : P3D_REDOP_NONE, 131072, -1);
    coll(x, F_EP, P3D_OP_ALLTOALL, 9, P3D_REDOP_NONE, 65536, -1);
    coll(x, F_EP, P3D_OP_ALLTOALL, 9, P3D_REDOP_NONE, 65536, -1);
}

static void micro_batch(struct rank_ctx *x, int step)
{
    int pp = g.size[AX_PP], first = x->stage == 0, last = x->stage == pp - 1;

    for (int i = 0; (first || last) && i < 3; i++)
        coll(x, F_TP, P3D_OP_BROADCAST, 4, P3D_REDOP_NONE, 512, 0);
    if (!first)
        p2p(x, P3D_OP_RECV, -1);
    for (int l = 0; l < g.layers; l++)
        layer(x, step, 0);
    if (last) {
        coll(x, F_TP, P3D_OP_ALLREDUCE, 7, 2, 512, -1);
        coll(x, F_TP, P3D_OP_ALLREDUCE, 7, 0, 512, -1);
        coll(x, F_TP, P3D_OP_ALLREDUCE, 7, 0, 512, -1);
    } else {
        p2p(x, P3D_OP_SEND, 1);
        p2p(x, P3D_OP_RECV, 1);
    }
    for (int l = 0; l < g.layers; l++)
        layer(x, step, 1);
    if (!first)
        p2p(x, P3D_OP_SEND, -1);
}

static void step(struct rank_ctx *x, int s)
{
    int dpcp = g.size[AX_DP] * g.size[AX_CP];

    x->first_tp_ar = 0;
    if (x->r == g.capped && s == g.steps / 2)
        x->w.dropping = 1; /* every record from here on is dropped */
    if (s == 0)
        coll(x, F_WORLD, P3D_OP_ALLREDUCE, 7, 0, 1, -1);
    for (x->mb = 0; x->mb < g.mb; x->mb++)
        micro_batch(x, s);
    coll(x, F_DPCP, P3D_OP_REDUCESCATTER, 7, 0, 4194304 / dpcp, -1);
    if (!(x->r == g.skip && s == g.steps - 1))
        coll(x, F_DPCP, P3D_OP_ALLGATHER, 9, P3D_REDOP_NONE, 4194304 / dpcp,
             -1);
    if (x->stage == g.size[AX_PP] - 1)
        coll(x, F_DPCP, P3D_OP_ALLREDUCE, 7, 0, 2, -1);
    coll(x, F_EMB, P3D_OP_ALLREDUCE, 7, 0, 32000 * 512 / g.size[AX_TP], -1);
    coll(x, F_MP, P3D_OP_ALLREDUCE, 2, 3, 1, -1);
    coll(x, F_MP, P3D_OP_ALLREDUCE, 7, 2, 1, -1);
    coll(x, F_MP, P3D_OP_ALLREDUCE, 7, 2, 1, -1);
    coll(x, F_WORLD2, P3D_OP_ALLREDUCE, 7, 0, 1, -1);
}

/* ---- files ---- */

static int neighbour(int r, int delta)
{
    int c[AX_N];

    coords(r, c);
    c[AX_PP] += delta;
    for (int s = 0; s < g.world; s++) {
        int d[AX_N];
        coords(s, d);
        if (!memcmp(c, d, sizeof(d)))
            return s;
    }
    return -1;
}

static void write_truth(struct rank_ctx *x, const struct comm *c)
{
    if (!x->truth || c->members[0] != x->r)
        return;
    fprintf(x->truth, "0x%016llx %s ", (unsigned long long)c->hash,
            fam_label[c->fam]);
    for (int i = 0; i < c->n; i++)
        fprintf(x->truth, "%s%d", i ? "," : "", c->members[i]);
    fputc('\n', x->truth);
}

static void setup_comms(struct rank_ctx *x)
{
    static const int fams[] = {F_WORLD, F_TP, F_PP, F_EMB, F_DPCP, F_MP,
                               F_WORLD2, F_CP, F_EP};

    for (size_t i = 0; i < sizeof(fams) / sizeof(fams[0]); i++) {
        int f = fams[i];
        if ((f == F_PP && g.size[AX_PP] < 2) ||
            (f == F_CP && g.size[AX_CP] < 2) || (f == F_EP && g.ep < 2))
            continue;
        x->have[f] = make_comm(&x->c[f], f, x->r, 0);
        if (x->have[f] && x->w.f)
            put_comm(&x->w, &x->c[f]);
        if (x->have[f])
            write_truth(x, &x->c[f]);
    }
    x->prev = neighbour(x->r, -1);
    x->next = neighbour(x->r, 1);
    if (!g.p2p)
        return;
    if (x->prev >= 0 && make_comm(&x->p2p_prev, F_P2P, x->r, x->prev)) {
        if (x->w.f)
            put_comm(&x->w, &x->p2p_prev);
        write_truth(x, &x->p2p_prev);
    }
    if (x->next >= 0 && make_comm(&x->p2p_next, F_P2P, x->r, x->next)) {
        if (x->w.f)
            put_comm(&x->w, &x->p2p_next);
        write_truth(x, &x->p2p_next);
    }
}

static void put_cmdline(struct wr *w)
{
    char buf[2048];
    size_t n;

    n = (size_t)snprintf(buf, sizeof(buf),
                         "python3\1pretrain_gpt.py\1%s", g.cmd ? g.cmd : "");
    if (!g.cmd)
        n += (size_t)snprintf(buf + n, sizeof(buf) - n,
            "--tensor-model-parallel-size\1%d\1"
            "--pipeline-model-parallel-size\1%d\1"
            "--context-parallel-size\1%d\1--expert-model-parallel-size\1%d"
            "\1--micro-batch-size\1" "1\1--global-batch-size\1%d\1"
            "--seq-length\1" "512%s", g.size[AX_TP], g.size[AX_PP],
            g.size[AX_CP], g.ep, g.mb * g.size[AX_DP],
            g.order_pp_dp ? "\1--use-tp-pp-dp-mapping" : "");
    for (size_t i = 0; i < n; i++)
        if (buf[i] == '\1' || buf[i] == ' ')
            buf[i] = 0;
    put_str(w, P3D_REC_CMDLINE, buf, n + 1);
}

static void fill_hdr(struct p3d_file_hdr *h, int r, uint64_t nrec)
{
    memset(h, 0, sizeof(*h));
    memcpy(h->magic, P3D_MAGIC, P3D_MAGIC_LEN);
    h->major = P3D_FORMAT_MAJOR;
    h->minor = P3D_FORMAT_MINOR;
    h->hdr_len = P3D_FILE_HDR_BYTES;
    h->flags = r == g.killed ? 0 : P3D_F_CLOSED;
    h->chunk_bytes = P3D_CHUNK_BYTES;
    h->data_off = P3D_DATA_OFFSET;
    h->rank = r;
    h->world_size = g.world;
    h->local_rank = r % 8;
    h->local_world_size = g.world < 8 ? g.world : 8;
    h->pid = 10000 + (uint64_t)r;
    h->ppid = 9999;
    h->start_realtime_ns = g.start * 1000000000ull + (uint64_t)r * 1000;
    h->start_mono_ns = 5000000000ull;
    h->end_mono_ns = r == g.killed ? 0 : 9000000000ull;
    h->n_records = r == g.killed ? 0 : nrec;
    snprintf(h->job_id, sizeof(h->job_id), "%s", g.job);
    snprintf(h->hostname, sizeof(h->hostname), "node%d\"x", r / 8);
    h->nccl_version_runtime = 22809;
    h->nccl_version_compile = 22809;
}

static void put_unknown(struct wr *w, unsigned tag)
{
    uint8_t rec[16] = {0};

    ((struct p3d_rec_hdr *)rec)->tag = tag;
    put(w, rec, sizeof(rec));
}

/* --init-absent: blocked in a world communicator's init, or never
 * calling it; SIGTERM noted either way. */
static void init_hang(struct rank_ctx *x)
{
    static const char term[] = "SIGTERM received";
    struct p3d_rec_hang h = {0};

    if (x->r < g.world - g.init_absent) {
        h.h.tag = P3D_REC_HANG;
        h.n_pending = 1;
        h.pending_ns = 10000000000ull;
        h.t = x->w.t + h.pending_ns;
        h.comm_hash = mix(str_hash(g.job) ^ 0x1717);
        h.seq = (uint64_t)g.world; /* nranks */
        h.peer = x->r;
        h.op = P3D_HANG_OP_INIT;
        put(&x->w, &h, sizeof(h)); /* past the watchdog's timeout, */
        h.t += 1000000000ull;      /* and again at SIGTERM, as the */
        h.pending_ns += 1000000000ull; /* shim reports a blocked init */
        put(&x->w, &h, sizeof(h));
    }
    put_str(&x->w, P3D_REC_NOTE, term, sizeof(term) - 1);
}

static void body(struct rank_ctx *x)
{
    int steps = x->r == g.killed ? (g.steps + 1) / 2 : g.steps;

    wr_chunk_start(&x->w);
    put_cmdline(&x->w);
    put_unknown(&x->w, 0x8077); /* optional: readers must skip it */
    setup_comms(x);
    if (x->r == g.unknown_tag)
        put_unknown(&x->w, 0x0077);
    for (int s = 0; s < steps; s++)
        step(x, s);
    if (g.captured) {
        g_capturing = 1;
        coll(x, F_WORLD, P3D_OP_ALLREDUCE, 7, 0, 4096, -1);
        g_capturing = 0;
    }
    if (g.init_absent > 0)
        init_hang(x);
    if (g.stall) {
        static const char term[] = "SIGTERM received";

        g_stalling = 1;
        x->w.t_stall = x->w.t;
        if (x->r < g.world - g.stall_absent)
            coll(x, F_WORLD, P3D_OP_ALLREDUCE, 7, 0, 1024, -1);
        g_stalling = 0;
        put_str(&x->w, P3D_REC_NOTE, term, sizeof(term) - 1);
    }
}

static void path_of(char *p, size_t n, int r, const char *extra)
{
    snprintf(p, n, "%s/rank-%05d%s%s.p3d", g.out, r, g.suffix, extra);
}

static void poke(const char *p, long off, const void *v, size_t n)
{
    FILE *f = fopen(p, "r+b");

    if (!f || fseek(f, off, SEEK_SET) || fwrite(v, 1, n, f) != n) {
        perror(p);
        exit(1);
    }
    fclose(f);
}

static void inject(const char *p, int r, long mark_off)
{
    if (r == g.bad_magic)
        poke(p, 0, "BADMAGIC", 8);
    if (r == g.future_major) {
        uint16_t v = P3D_FORMAT_MAJOR + 1;
        poke(p, 8, &v, 2);
    }
    if (r == g.huge_len && mark_off) {
        uint16_t v = P3D_REC_MAX_LEN;
        poke(p, mark_off + 2, &v, 2);
    }
    if (r == g.truncate && truncate(p, P3D_DATA_OFFSET + 2003) < 0) {
        perror(p);
        exit(1);
    }
}

static void copy_file(const char *from, const char *to)
{
    static char buf[1 << 16];
    FILE *a = fopen(from, "rb"), *b = fopen(to, "wb");
    size_t n;

    if (!a || !b) {
        perror(to);
        exit(1);
    }
    while ((n = fread(buf, 1, sizeof(buf), a)) > 0)
        fwrite(buf, 1, n, b);
    fclose(a);
    fclose(b);
}

static void write_rank(int r, FILE *truth)
{
    static struct rank_ctx x;
    struct p3d_file_hdr h;
    char p[4096];

    path_of(p, sizeof(p), r, "");
    memset(&x, 0, sizeof(x));
    if (r == g.missing) { /* its communicators still go to the truth */
        x.r = r;
        x.stage = stage_of(r);
        x.truth = truth;
        setup_comms(&x);
        return;
    }
    x.r = r;
    x.stage = stage_of(r);
    x.truth = truth;
    x.w.f = fopen(p, r == g.empty ? "w" : "w+b");
    if (!x.w.f) {
        perror(p);
        exit(1);
    }
    if (r != g.empty) {
        static const uint8_t pad[P3D_DATA_OFFSET];
        fwrite(pad, 1, sizeof(pad), x.w.f);
        x.w.t = 5000000000ull + 1000;
        body(&x);
        fwrite(x.w.chunk, 1, sizeof(x.w.chunk), x.w.f);
        fill_hdr(&h, r, x.w.n_rec);
        if (g.stall && g.stall_us > 0 && r != g.killed)
            h.end_mono_ns = x.w.t_stall + (uint64_t)g.stall_us * 1000;
        if (x.w.dropped) {
            h.flags |= P3D_F_DROPPED;
            h.dropped_records = x.w.dropped;
        }
        fseek(x.w.f, 0, SEEK_SET);
        fwrite(&h, 1, sizeof(h), x.w.f);
    }
    fclose(x.w.f);
    inject(p, r, x.mark_off);
    if (r == g.duplicate) {
        char q[4096];
        path_of(q, sizeof(q), r, "-dup");
        copy_file(p, q);
    }
}

/* Ops one step costs rank 0 (dry run, nothing written). */
static uint64_t ops_per_step(void)
{
    static struct rank_ctx x;

    memset(&x, 0, sizeof(x));
    x.stage = stage_of(0);
    setup_comms(&x);
    x.w.f = NULL;
    step(&x, 1);
    return x.w.op_id ? x.w.op_id : 1;
}

static int num(const char *s)
{
    char *end;
    long v = strtol(s, &end, 10);

    if (*end || v < 0) {
        fprintf(stderr, "p3d-gen: bad number '%s'\n", s);
        exit(2);
    }
    return (int)v;
}

static int parse_int_opt(const char *o, const char *v)
{
    static const struct { const char *name; int *p; } t[] = {
        {"--tp", &g.size[AX_TP]}, {"--pp", &g.size[AX_PP]},
        {"--dp", &g.size[AX_DP]}, {"--cp", &g.size[AX_CP]}, {"--ep", &g.ep},
        {"--steps", &g.steps}, {"--mb", &g.mb}, {"--layers", &g.layers},
        {"--ops", &g.ops}, {"--truncate", &g.truncate},
        {"--killed", &g.killed}, {"--bad-magic", &g.bad_magic},
        {"--future-major", &g.future_major}, {"--huge-len", &g.huge_len},
        {"--unknown-tag", &g.unknown_tag}, {"--missing", &g.missing},
        {"--duplicate", &g.duplicate}, {"--empty", &g.empty},
        {"--mismatch", &g.mismatch}, {"--skip", &g.skip},
        {"--gaps", &g.gaps}, {"--capped", &g.capped},
        {"--stall-us", &g.stall_us}, {"--stall-absent", &g.stall_absent},
        {"--init-absent", &g.init_absent}};

    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
        if (!strcmp(o, t[i].name)) {
            *t[i].p = num(v);
            return 1;
        }
    return 0;
}

static void parse(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(o, "--no-cmdline")) { g.cmdline = 0; continue; }
        if (!strcmp(o, "--p2p")) { g.p2p = 1; continue; }
        if (!strcmp(o, "--gpu")) { g.gpu = 1; continue; }
        if (!strcmp(o, "--no-comms")) { g.no_comms = 1; continue; }
        if (!strcmp(o, "--stall")) { g.stall = 1; continue; }
        if (!strcmp(o, "--captured")) { g.captured = 1; continue; }
        if (o[0] != '-') { g.out = o; continue; }
        if (!v) {
            fprintf(stderr, "p3d-gen: '%s' needs a value\n", o);
            exit(2);
        }
        i++;
        if (parse_int_opt(o, v)) continue;
        if (!strcmp(o, "--order")) g.order_pp_dp = !strcmp(v, "tp-cp-ep-pp-dp");
        else if (!strcmp(o, "--job")) g.job = v;
        else if (!strcmp(o, "--suffix")) g.suffix = v;
        else if (!strcmp(o, "--truth")) g.truth = v;
        else if (!strcmp(o, "--cmd")) g.cmd = v;
        else if (!strcmp(o, "--start")) g.start = strtoull(v, NULL, 10);
        else { fprintf(stderr, "p3d-gen: unknown option '%s'\n", o); exit(2); }
    }
}

int main(int argc, char **argv)
{
    FILE *truth = NULL;

    parse(argc, argv);
    g.world = g.size[AX_TP] * g.size[AX_CP] * g.size[AX_DP] * g.size[AX_PP];
    if (!g.out || g.world > GEN_MAX_WORLD || g.world < 1 ||
        g.world % (g.size[AX_TP] * g.ep * g.size[AX_PP])) {
        fprintf(stderr, "usage: p3d-gen [--tp N --pp N --dp N --cp N "
                "--ep N ...] OUTDIR (world <= %d, ep | dp*cp)\n",
                GEN_MAX_WORLD);
        return 2;
    }
    if (mkdir(g.out, 0777) < 0 && errno != EEXIST) {
        perror(g.out);
        return 1;
    }
    if (g.ops)
        g.steps = (int)((uint64_t)g.ops / ops_per_step()) + 1;
    if (g.truth && !(truth = fopen(g.truth, "w"))) {
        perror(g.truth);
        return 1;
    }
    if (!g.cmdline)
        g.cmd = "";
    for (int r = 0; r < g.world; r++)
        write_rank(r, truth);
    if (truth)
        fclose(truth);
    return 0;
}
