/*
 * p3d_match.c - cross-rank matching.
 *
 * A collective instance is keyed by (communicator, seq): it keeps the
 * record (op, count, datatype, root, redop; 24 bytes per instance) of the
 * first member seen; a member that disagrees makes it divergent, and the
 * divergent ones are decided when every member is in (p3d_match_var.c):
 * each member is compared with the instance's lowest rank, whatever the
 * order the reader threads fed them in.  Send/Recv pairs are keyed by
 * (communicator, src, dst, seq) in comm ranks.  A disagreement is recorded
 * and matching goes on with the next instance (never stops a communicator
 * at its first mismatch, unlike Flight Recorder's analyzer).  Ops arrive
 * from the reader threads during the one pass over the files; state is
 * sharded by communicator, one lock per shard.  The mismatches kept for
 * the report are the first P3D_MM_KEEP in report order of all found.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "p3d_match_int.h"
#include "p3d_util.h"

const char *const p3d_mm_field_name[] = {"op", "count", "datatype", "root",
                                         "redop", "unmatched", "issued"};

static int p3d_cmp_mm(const void *a, const void *b)
{
    const struct p3d_mismatch *x = a, *y = b;

    return P3D_CMP(x->field, y->field) ?: P3D_CMP(x->comm, y->comm) ?:
           P3D_CMP(x->seq, y->seq) ?: P3D_CMP(x->rank_a, y->rank_a) ?:
           P3D_CMP(x->rank_b, y->rank_b) ?: P3D_CMP(x->va, y->va) ?:
           P3D_CMP(x->vb, y->vb);
}

/*
 * Count m; keep it if it is among the first P3D_MM_KEEP in report order,
 * so what is kept does not depend on the order mismatches are found in.
 * Once full, the kept ones are sorted and m is inserted in place.
 */
static void p3d_mm_add(struct p3d_match_res *res, const struct p3d_mismatch *m)
{
    int i = P3D_MM_KEEP - 1;

    if (m->field < P3D_MM_UNMATCHED)
        res->n_mismatch++;
    if (res->n_kept < P3D_MM_KEEP) {
        res->mm[res->n_kept++] = *m;
        if (res->n_kept == P3D_MM_KEEP)
            qsort(res->mm, P3D_MM_KEEP, sizeof(*m), p3d_cmp_mm);
        return;
    }
    if (p3d_cmp_mm(m, &res->mm[i]) >= 0)
        return;
    while (i > 0 && p3d_cmp_mm(m, &res->mm[i - 1]) < 0)
        i--;
    memmove(&res->mm[i + 1], &res->mm[i],
            sizeof(*m) * (size_t)(P3D_MM_KEEP - 1 - i));
    res->mm[i] = *m;
}

static void p3d_mm_diff(struct p3d_match_res *res, struct p3d_mismatch *m,
                        int field, int64_t a, int64_t b)
{
    if (a == b)
        return;
    m->field = field;
    m->va = a;
    m->vb = b;
    p3d_mm_add(res, m);
}

void p3d_match_ref(struct p3d_match_res *res, uint64_t comm, uint64_t seq,
                   int rank_a, const struct p3d_ref *a, int rank_b,
                   const struct p3d_ref *b)
{
    struct p3d_mismatch m = {comm, seq, 0, rank_a, rank_b, 0, 0, a->op,
                             -1, -1};

    if (a->op != b->op) { /* other fields are not comparable */
        p3d_mm_diff(res, &m, P3D_MM_OP, a->op, b->op);
        return;
    }
    p3d_mm_diff(res, &m, P3D_MM_COUNT, (int64_t)a->count, (int64_t)b->count);
    p3d_mm_diff(res, &m, P3D_MM_DTYPE, a->dtype, b->dtype);
    if (p3d_op_rooted(a->op))
        p3d_mm_diff(res, &m, P3D_MM_ROOT, a->root, b->root);
    p3d_mm_diff(res, &m, P3D_MM_REDOP, a->redop, b->redop);
}

void p3d_match_coll(struct p3d_match_res *res, uint64_t comm, uint64_t seq,
                    int rank_a, const struct p3d_rec_op *a, int rank_b,
                    const struct p3d_rec_op *b)
{
    struct p3d_ref ra, rb;

    p3d_ref_set(&ra, a, rank_a);
    p3d_ref_set(&rb, b, rank_b);
    p3d_match_ref(res, comm, seq, rank_a, &ra, rank_b, &rb);
}

void p3d_ref_set(struct p3d_ref *r, const struct p3d_rec_op *o, int rank)
{
    *r = (struct p3d_ref){.count = o->count, .root = o->peer, .rank = rank,
                          .op = o->op, .dtype = o->dtype, .redop = o->redop,
                          .div = 0, .set = 1};
}

int p3d_ref_agrees(const struct p3d_ref *r, const struct p3d_rec_op *o)
{
    return r->op == o->op && r->count == o->count && r->dtype == o->dtype &&
           (!p3d_op_rooted(r->op) || r->root == o->peer) &&
           r->redop == o->redop;
}

#define P3D_MAX_SEQ (1ull << 28)
/*
 * Instances are indexed by seq, so a damaged seq would size an array: a
 * seq more than P3D_SEQ_SLACK past the number of ops taken so far by the
 * member on the comm (or on the pair) is not matched.  Real seqs are
 * dense from 0.
 */
#define P3D_SEQ_SLACK (1ull << 16)

struct p3d_matcher *p3d_matcher_new(void)
{
    struct p3d_matcher *m = p3d_xcalloc(1, sizeof(*m));

    for (int i = 0; i < P3D_SHARDS; i++)
        pthread_mutex_init(&m->shard[i].lock, NULL);
    return m;
}

void p3d_matcher_split(struct p3d_matcher *m, int n, uint64_t block)
{
    for (int i = 0; i < P3D_SHARDS; i++) {
        m->shard[i].split_n = n > 1 ? (uint64_t)n : 0;
        m->shard[i].split_block = block ? block : 1;
    }
}

static int p3d_shard_index(uint64_t hash)
{
    uint64_t x = hash * 0x9e3779b97f4a7c15ull;

    return (int)(x >> 58); /* top 6 bits: 64 shards */
}

static struct p3d_shard *p3d_shard_of(struct p3d_matcher *m, uint64_t hash)
{
    return &m->shard[p3d_shard_index(hash)];
}

/* A batch brings a shard its ops in runs on one communicator, and a
 * member's Send/Recv in runs on one pair: the last one looked up is
 * checked before the map. */
static struct p3d_mcomm *p3d_mcomm_get(struct p3d_shard *sh, uint64_t hash)
{
    int added;

    if (sh->last < sh->n && sh->comms[sh->last].hash == hash)
        return &sh->comms[sh->last];
    sh->last = p3d_map_index(&sh->idx, hash, (void **)&sh->comms, &sh->n,
                            &sh->cap, sizeof(*sh->comms), &added);
    if (added)
        sh->comms[sh->last].hash = hash;
    return &sh->comms[sh->last];
}

enum p3d_take_how p3d_match_take(struct p3d_take *t,
                                 const struct p3d_rec_op *o)
{
    if (o->op >= P3D_OP_COUNT || P3D_OP_IS_P2P(o->op) ||
        o->seq >= P3D_MAX_SEQ)
        return P3D_TAKE_NOTED; /* not a collective the matcher counts */
    if (o->seq >= t->n_taken + P3D_SEQ_SLACK)
        return P3D_TAKE_NOT;
    t->n_taken++;
    if (!t->n_runs || o->seq != t->hi) {
        t->n_runs++;
        t->lo = o->seq;
    }
    t->hi = o->seq + 1;
    return t->n_runs <= P3D_RUNS_MAX ? P3D_TAKE_NOTED : P3D_TAKE_UNNOTED;
}

void p3d_matcher_last_run(struct p3d_matcher *m, int rank, uint64_t comm,
                          uint64_t lo, uint64_t hi)
{
    struct p3d_shard *sh = p3d_shard_of(m, comm);

    pthread_mutex_lock(&sh->lock);
    p3d_member_get(p3d_mcomm_get(sh, comm), rank)->last =
        (struct p3d_run){lo, hi};
    pthread_mutex_unlock(&sh->lock);
}

/* Where collective seq lies in this shard's arrays: one block of
 * split_block seqs in every split_n is here, so block b is the
 * (b / split_n)-th block here. */
static uint64_t p3d_local_seq(const struct p3d_shard *sh, uint64_t seq)
{
    uint64_t b;

    if (sh->split_n <= 1)
        return seq;
    b = seq / sh->split_block;
    return b / sh->split_n * sh->split_block + seq % sh->split_block;
}

/*
 * A member's seqs beyond what it has taken plus P3D_SEQ_SLACK are not
 * believed, and its seqs are remembered in at most P3D_RUNS_MAX runs
 * and its last one (p3d_match_take: per member, so the same whatever the
 * order of arrival; over several processes the scan takes them where the
 * rank is read, which sees all of the member's ops, marks the copies it
 * sends P3D_MATCH_UNNOTED and sends the last run, p3d_matcher_last_run).
 * An instance keeps the first record; disagreement makes it divergent.
 */
static void p3d_on_coll(struct p3d_shard *sh, struct p3d_mcomm *c, int rank,
                        const struct p3d_rec_op *o)
{
    struct p3d_member *mb = p3d_member_get(c, rank);
    uint64_t li = p3d_local_seq(sh, o->seq);
    enum p3d_take_how how;
    struct p3d_ref *r;

    if (sh->split_n > 1)
        how = o->flags & P3D_MATCH_UNNOTED ? P3D_TAKE_UNNOTED
                                           : P3D_TAKE_NOTED;
    else
        how = p3d_match_take(&mb->take, o);
    if (how == P3D_TAKE_NOT)
        return;
    if (how == P3D_TAKE_NOTED)
        p3d_member_note(mb, li);
    if ((size_t)li >= c->cap) /* a call per op otherwise */
        c->cap = p3d_grow((void **)&c->v, c->cap, (size_t)li,
                          sizeof(*c->v));
    r = &c->v[li];
    if (!r->set) {
        p3d_ref_set(r, o, rank);
        sh->res.n_coll++;
    } else if (r->div || !p3d_ref_agrees(r, o)) {
        p3d_div_add(sh, o->comm_hash, o->seq, li, r, rank, o);
    }
}

static struct p3d_pair *p3d_pair_get(struct p3d_mcomm *c, int src, int dst)
{
    uint64_t key = (uint64_t)(uint32_t)src << 32 | (uint32_t)dst;
    struct p3d_pair *p;
    int added;

    if (c->last_pair < c->n_pairs && c->pairs[c->last_pair].src == src &&
        c->pairs[c->last_pair].dst == dst)
        return &c->pairs[c->last_pair];
    c->last_pair = p3d_map_index(&c->pair_idx, key, (void **)&c->pairs,
                                &c->n_pairs, &c->pairs_cap, sizeof(*c->pairs),
                                &added);
    p = &c->pairs[c->last_pair];
    if (added) {
        p->src = src;
        p->dst = dst;
    }
    return p;
}

static void p3d_on_p2p(struct p3d_shard *sh, struct p3d_mcomm *c, int rank,
                       int comm_rank, const struct p3d_rec_op *o)
{
    int send = o->op == P3D_OP_SEND;
    int src = send ? comm_rank : o->peer, dst = send ? o->peer : comm_rank;
    struct p3d_pair *p = p3d_pair_get(c, src, dst);
    struct p3d_ref *r;
    struct p3d_mismatch m = {o->comm_hash, o->seq, 0, 0, 0, 0, 0,
                             P3D_OP_SEND, src, dst};

    if (o->seq >= p->n_seen + P3D_SEQ_SLACK)
        return;
    p->n_seen++;
    if ((size_t)o->seq >= p->cap)
        p->cap = p3d_grow((void **)&p->v, p->cap, (size_t)o->seq,
                          sizeof(*p->v));
    r = &p->v[o->seq];
    if (!r->set) {
        p3d_ref_set(r, o, rank);
        return;
    }
    if (r->set == 2 || r->op == o->op)
        return; /* a duplicate record; not a pair */
    r->set = 2;
    sh->res.n_p2p++;
    m.rank_a = send ? rank : r->rank; /* the sender first */
    m.rank_b = send ? r->rank : rank;
    p3d_mm_diff(&sh->res, &m, P3D_MM_COUNT,
                (int64_t)(send ? o->count : r->count),
                (int64_t)(send ? r->count : o->count));
    p3d_mm_diff(&sh->res, &m, P3D_MM_DTYPE, send ? o->dtype : r->dtype,
                send ? r->dtype : o->dtype);
}

/* Whether an op is matched at all (checked before taking a lock). */
static int p3d_match_wanted(int comm_rank, const struct p3d_rec_op *o)
{
    if (o->op >= P3D_OP_COUNT || o->seq >= P3D_MAX_SEQ)
        return 0;
    return !P3D_OP_IS_P2P(o->op) || (o->peer >= 0 && comm_rank >= 0);
}

/* One op into its shard, whose lock the caller holds. */
static void p3d_match_locked(struct p3d_shard *sh, int rank, int comm_rank,
                             const struct p3d_rec_op *o)
{
    struct p3d_mcomm *c = p3d_mcomm_get(sh, o->comm_hash);

    if (P3D_OP_IS_P2P(o->op))
        p3d_on_p2p(sh, c, rank, comm_rank, o);
    else
        p3d_on_coll(sh, c, rank, o);
}

void p3d_matcher_op(struct p3d_matcher *m, int rank, int comm_rank,
                    const struct p3d_rec_op *o)
{
    struct p3d_shard *sh = p3d_shard_of(m, o->comm_hash);

    if (!p3d_match_wanted(comm_rank, o))
        return;
    pthread_mutex_lock(&sh->lock);
    p3d_match_locked(sh, rank, comm_rank, o);
    pthread_mutex_unlock(&sh->lock);
}

void p3d_mbatch_add(struct p3d_mbatch *b, int comm_rank,
                    const struct p3d_rec_op *o)
{
    if (!p3d_match_wanted(comm_rank, o))
        return;
    if (b->n == b->cap) {
        b->cap = b->cap ? b->cap * 2 : 1024;
        b->o = p3d_xrealloc(b->o, b->cap, sizeof(*b->o));
        b->crank = p3d_xrealloc(b->crank, b->cap, sizeof(*b->crank));
        b->idx = p3d_xrealloc(b->idx, b->cap, sizeof(*b->idx));
        b->sh = p3d_xrealloc(b->sh, b->cap, sizeof(*b->sh));
    }
    b->o[b->n] = *o;
    b->sh[b->n] = (uint8_t)p3d_shard_index(o->comm_hash);
    b->crank[b->n++] = comm_rank;
}

/* b->idx: the batch's ops grouped by shard, in arrival order within a
 * shard (a counting sort); start[s]..start[s + 1] is shard s. */
static void p3d_mbatch_sort(struct p3d_mbatch *b, uint32_t *start)
{
    uint32_t at[P3D_SHARDS];

    memset(start, 0, (P3D_SHARDS + 1) * sizeof(*start));
    for (size_t i = 0; i < b->n; i++)
        start[b->sh[i] + 1]++;
    for (int s = 0; s < P3D_SHARDS; s++)
        start[s + 1] += start[s];
    memcpy(at, start, sizeof(at));
    for (size_t i = 0; i < b->n; i++)
        b->idx[at[b->sh[i]]++] = (uint32_t)i;
}

/* Match the batch's ops of shard s (its lock held by the caller). */
static void p3d_mbatch_run(struct p3d_matcher *m, int rank,
                           const struct p3d_mbatch *b, const uint32_t *start,
                           int s)
{
    for (uint32_t k = start[s]; k < start[s + 1]; k++)
        p3d_match_locked(&m->shard[s], rank, b->crank[b->idx[k]],
                         &b->o[b->idx[k]]);
}

/* Keep the batch's ops of the shards marked in `left`, in order. */
static void p3d_mbatch_keep(struct p3d_mbatch *b, const uint8_t *left)
{
    size_t n = 0;

    for (size_t i = 0; i < b->n; i++) {
        if (!left[b->sh[i]])
            continue;
        if (n != i) {
            b->o[n] = b->o[i];
            b->crank[n] = b->crank[i];
            b->sh[n] = b->sh[i];
        }
        n++;
    }
    b->n = n;
}

/* Match the batch's ops of every shard whose lock is free (with wait: of
 * every shard) and keep the rest, in order, for the next time. */
static void p3d_mbatch_give(struct p3d_matcher *m, int rank,
                            struct p3d_mbatch *b, int wait)
{
    uint32_t start[P3D_SHARDS + 1];
    uint8_t left[P3D_SHARDS];
    int n_left = 0;

    p3d_mbatch_sort(b, start);
    for (int s = 0; s < P3D_SHARDS; s++) {
        left[s] = 0;
        if (start[s] == start[s + 1])
            continue;
        if (wait)
            pthread_mutex_lock(&m->shard[s].lock);
        else if (pthread_mutex_trylock(&m->shard[s].lock) != 0) {
            left[s] = 1;
            n_left++;
            continue;
        }
        p3d_mbatch_run(m, rank, b, start, s);
        pthread_mutex_unlock(&m->shard[s].lock);
    }
    if (n_left)
        p3d_mbatch_keep(b, left);
    else
        b->n = 0;
    b->due = b->n + P3D_MBATCH_OPS;
}

void p3d_matcher_offer(struct p3d_matcher *m, int rank, struct p3d_mbatch *b)
{
    p3d_mbatch_give(m, rank, b, b->n >= P3D_MBATCH_MAX);
}

void p3d_matcher_flush(struct p3d_matcher *m, int rank, struct p3d_mbatch *b)
{
    p3d_mbatch_give(m, rank, b, 1);
}

void p3d_mbatch_free(struct p3d_mbatch *b)
{
    free(b->o);
    free(b->crank);
    free(b->idx);
    free(b->sh);
    memset(b, 0, sizeof(*b));
}

static void *p3d_sink_open(void *ctx)
{
    (void)ctx;
    return p3d_xcalloc(1, sizeof(struct p3d_mbatch));
}

static void p3d_sink_op(void *ctx, void *st, int rank, int comm_rank,
                        const struct p3d_rec_op *o)
{
    p3d_mbatch_add(st, comm_rank, o);
    if (p3d_mbatch_due(st))
        p3d_matcher_offer(ctx, rank, st);
}

static void p3d_sink_rank_end(void *ctx, void *st, int rank)
{
    struct p3d_mbatch *b = st;

    if (b->n)
        p3d_matcher_flush(ctx, rank, b);
}

static void p3d_sink_close(void *ctx, void *st)
{
    (void)ctx;
    p3d_mbatch_free(st);
    free(st);
}

struct p3d_op_sink p3d_matcher_sink(struct p3d_matcher *m)
{
    struct p3d_op_sink k = {m, p3d_sink_open, p3d_sink_op,
                            p3d_sink_rank_end, p3d_sink_close};
    return k;
}

/* Global rank of comm rank cr of the communicator with this hash. */
static int p3d_global(const struct p3d_job *job, uint64_t hash, int cr)
{
    int gi = p3d_map_get(&job->comm_idx, hash);

    if (gi < 0 || cr < 0 || cr >= job->comms[gi].size)
        return -1;
    return job->comms[gi].slot[cr];
}

/* Sends never received and receives never sent, one entry per pair. */
static void p3d_unmatched(const struct p3d_job *job, struct p3d_mcomm *c,
                          struct p3d_match_res *res)
{
    for (size_t i = 0; i < c->n_pairs; i++) {
        struct p3d_pair *p = &c->pairs[i];
        uint64_t n_send = 0, n_recv = 0;
        for (size_t k = 0; k < p->cap; k++) {
            if (p->v[k].set != 1)
                continue;
            if (p->v[k].op == P3D_OP_SEND)
                n_send++;
            else
                n_recv++;
        }
        if (n_send || n_recv) {
            int s = p3d_global(job, c->hash, p->src);
            int d = p3d_global(job, c->hash, p->dst);
            struct p3d_mismatch m = {c->hash, 0, P3D_MM_UNMATCHED, s, d,
                                     (int64_t)n_send, (int64_t)n_recv,
                                     P3D_OP_SEND, s, d};
            res->n_unmatched_p2p += n_send + n_recv;
            p3d_mm_add(res, &m);
        }
        free(p->v);
    }
}

static uint64_t p3d_n_coll(const struct p3d_rcomm *c)
{
    uint64_t n = 0;

    for (int k = 0; k < P3D_OP_COUNT; k++)
        if (!P3D_OP_IS_P2P(k))
            n += c->st[k].calls;
    return n;
}

/*
 * Members that issued fewer collectives on a communicator than another
 * member: a killed or hung rank, or a desynchronised schedule.  A rank
 * whose trace lost records (P3D_F_DROPPED: every record once P3D_MAX_MB
 * is reached, shim/p3d_writer.c) recorded fewer than it issued, so it is
 * neither compared nor the reference.
 */
static void p3d_short_members(struct p3d_job *job, struct p3d_match_res *res)
{
    uint64_t *max = p3d_xcalloc((size_t)job->n_comms + 1, sizeof(*max));
    int *who = p3d_xcalloc((size_t)job->n_comms + 1, sizeof(*who));

    for (int i = 0; i < job->n_ranks; i++)
        for (int k = 0; !p3d_lost_records(&job->ranks[i]) &&
                        k < job->ranks[i].n_comms; k++) {
            const struct p3d_rcomm *c = &job->ranks[i].comms[k];
            if (c->gcomm >= 0 && p3d_n_coll(c) > max[c->gcomm]) {
                max[c->gcomm] = p3d_n_coll(c);
                who[c->gcomm] = job->ranks[i].rank;
            }
        }
    for (int i = 0; i < job->n_ranks; i++)
        for (int k = 0; !p3d_lost_records(&job->ranks[i]) &&
                        k < job->ranks[i].n_comms; k++) {
            const struct p3d_rcomm *c = &job->ranks[i].comms[k];
            struct p3d_mismatch m = {c->hash, 0, P3D_MM_ISSUED, 0, 0, 0, 0,
                                     0, -1, -1};
            if (c->gcomm < 0 || p3d_n_coll(c) >= max[c->gcomm])
                continue;
            m.rank_a = who[c->gcomm];
            m.va = (int64_t)max[c->gcomm];
            m.rank_b = job->ranks[i].rank;
            m.vb = (int64_t)p3d_n_coll(c);
            res->n_short++;
            p3d_mm_add(res, &m);
        }
    free(max);
    free(who);
}

/*
 * Fold part into res: counts add up, and the kept mismatches are the
 * first P3D_MM_KEEP in report order of both lists, which is the first of
 * everything both found (each list is the first of its own).  So results
 * fold the same whichever way the communicators were split (shards, or
 * the processes of p3d-analyze-mpi).
 */
void p3d_match_fold(struct p3d_match_res *res, const struct p3d_match_res *part)
{
    struct p3d_mismatch all[2 * P3D_MM_KEEP];
    int n = 0;

    res->n_coll += part->n_coll;
    res->n_p2p += part->n_p2p;
    res->n_mismatch += part->n_mismatch;
    res->n_unmatched_p2p += part->n_unmatched_p2p;
    res->n_short += part->n_short;
    if (!part->n_kept)
        return;
    memcpy(all, res->mm, sizeof(*all) * (size_t)res->n_kept);
    n = res->n_kept;
    memcpy(all + n, part->mm, sizeof(*all) * (size_t)part->n_kept);
    n += part->n_kept;
    qsort(all, (size_t)n, sizeof(*all), p3d_cmp_mm);
    res->n_kept = n < P3D_MM_KEEP ? n : P3D_MM_KEEP;
    memcpy(res->mm, all, sizeof(*all) * (size_t)res->n_kept);
}

static void p3d_shard_finish(struct p3d_shard *sh, const struct p3d_job *job)
{
    p3d_div_finish(sh);
    for (size_t i = 0; i < sh->n; i++) {
        struct p3d_mcomm *c = &sh->comms[i];
        p3d_unmatched(job, c, &sh->res);
        free(c->v);
        free(c->pairs);
        p3d_map_free(&c->pair_idx);
    }
    for (int i = 0; i < sh->res.n_kept; i++) { /* P2P: comm -> global */
        struct p3d_mismatch *x = &sh->res.mm[i];
        if (x->field < P3D_MM_UNMATCHED && x->p2p_src >= 0) {
            x->p2p_src = p3d_global(job, x->comm, x->p2p_src);
            x->p2p_dst = p3d_global(job, x->comm, x->p2p_dst);
        }
    }
    free(sh->comms);
    p3d_map_free(&sh->idx);
    pthread_mutex_destroy(&sh->lock);
}

void p3d_matcher_finish_part(struct p3d_matcher *m,
                             const struct p3d_job *job,
                             struct p3d_match_res *res)
{
    memset(res, 0, sizeof(*res));
    for (int i = 0; i < P3D_SHARDS; i++) {
        p3d_shard_finish(&m->shard[i], job);
        p3d_match_fold(res, &m->shard[i].res);
    }
    free(m);
}

void p3d_match_close(struct p3d_match_res *res, struct p3d_job *job)
{
    struct p3d_match_res issued;

    memset(&issued, 0, sizeof(issued));
    p3d_short_members(job, &issued);
    p3d_match_fold(res, &issued);
    job->match = res;
}

void p3d_matcher_finish(struct p3d_matcher *m, struct p3d_job *job)
{
    struct p3d_match_res *res = p3d_xcalloc(1, sizeof(*res));

    p3d_matcher_finish_part(m, job, res);
    p3d_match_close(res, job);
}
