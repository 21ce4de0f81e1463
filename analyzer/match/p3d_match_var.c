/*
 * p3d_match_var.c - divergent collective instances, decided once every
 * member is in, so the result does not depend on the order the reader
 * threads feed the matcher.
 *
 * During the scan an instance keeps one record (24 bytes).  The first
 * member that disagrees with it makes the instance divergent: a side
 * table entry, rare, keeps the record the earlier members had (variant 0)
 * and, from then on, every member whose record differs from variant 0
 * with its variant.  The earlier members themselves are not known then;
 * at the finish they are found from each member's runs of seqs (which
 * seqs it took: kept per (communicator, member), not per op).  Every
 * member is then compared with the instance's lowest global rank, as
 * when the instance is read in rank order.
 */
#include <stdlib.h>
#include <string.h>

#include "p3d_match_int.h"
#include "p3d_util.h"

struct p3d_member *p3d_member_get(struct p3d_mcomm *c, int rank)
{
    int i = c->last_mem;
    struct p3d_member *mb;

    if (i >= 0 && (size_t)i < c->n_mem && c->mem[i].rank == rank)
        return &c->mem[i];
    i = p3d_map_get(&c->mem_idx, (uint64_t)(uint32_t)rank);
    if (i < 0) {
        c->mem_cap = p3d_grow((void **)&c->mem, c->mem_cap, c->n_mem,
                              sizeof(*c->mem));
        i = (int)c->n_mem++;
        mb = &c->mem[i];
        memset(mb, 0, sizeof(*mb));
        mb->rank = rank;
        p3d_map_put(&c->mem_idx, (uint64_t)(uint32_t)rank, i);
    }
    c->last_mem = i;
    return &c->mem[i];
}

void p3d_member_note(struct p3d_member *mb, uint64_t seq)
{
    if (mb->cur.hi > mb->cur.lo && seq == mb->cur.hi) {
        mb->cur.hi++;
        return;
    }
    /* the runs are bounded by the take (P3D_RUNS_MAX: p3d_match_take
     * marks the ops of later runs unnoted; a part of a member's seqs, as
     * one process of several sees them, has no more runs than all) */
    if (mb->cur.hi > mb->cur.lo) {
        mb->more_cap = p3d_grow((void **)&mb->more, mb->more_cap,
                                mb->n_more, sizeof(*mb->more));
        mb->more[mb->n_more++] = mb->cur;
    }
    mb->cur.lo = seq;
    mb->cur.hi = seq + 1;
}

/* Whether mb took the instance at local index li (global seq). */
static int p3d_member_has(const struct p3d_member *mb, uint64_t li,
                          uint64_t seq)
{
    if (seq >= mb->last.lo && seq < mb->last.hi)
        return 1;
    if (li >= mb->cur.lo && li < mb->cur.hi)
        return 1;
    for (uint32_t i = 0; i < mb->n_more; i++)
        if (li >= mb->more[i].lo && li < mb->more[i].hi)
            return 1;
    return 0;
}

static uint32_t p3d_var_new(struct p3d_shard *sh, const struct p3d_ref *r)
{
    sh->var_cap = p3d_grow((void **)&sh->var, sh->var_cap, sh->n_var,
                           sizeof(*sh->var));
    sh->var[sh->n_var].v = *r;
    sh->var[sh->n_var].next = 0;
    return (uint32_t)sh->n_var++;
}

static struct p3d_div *p3d_div_new(struct p3d_shard *sh, uint64_t comm,
                                   uint64_t seq, uint64_t li,
                                   struct p3d_ref *r)
{
    struct p3d_div *d;

    sh->div_cap = p3d_grow((void **)&sh->div, sh->div_cap, sh->n_div,
                           sizeof(*sh->div));
    d = &sh->div[sh->n_div++];
    d->comm = comm;
    d->seq = seq;
    d->li = li;
    d->var0 = p3d_var_new(sh, r);
    d->mem_head = 0;
    r->div = (uint32_t)sh->n_div;
    return d;
}

/* The index of d's variant that o agrees with (added if none). */
static uint32_t p3d_var_of(struct p3d_shard *sh, const struct p3d_div *d,
                           int rank, const struct p3d_rec_op *o)
{
    uint32_t v = d->var0, last = v;
    struct p3d_ref r;

    for (; ; v = sh->var[v].next - 1) {
        if (p3d_ref_agrees(&sh->var[v].v, o))
            return v;
        last = v;
        if (!sh->var[v].next)
            break;
    }
    p3d_ref_set(&r, o, rank);
    v = p3d_var_new(sh, &r);
    sh->var[last].next = v + 1;
    return v;
}

void p3d_div_add(struct p3d_shard *sh, uint64_t comm, uint64_t seq,
                 uint64_t li, struct p3d_ref *r, int rank,
                 const struct p3d_rec_op *o)
{
    struct p3d_div *d = r->div ? &sh->div[r->div - 1]
                               : p3d_div_new(sh, comm, seq, li, r);
    uint32_t v = p3d_var_of(sh, d, rank, o);

    if (v == d->var0)
        return; /* agrees with variant 0: found from its runs */
    sh->vm_cap = p3d_grow((void **)&sh->vm, sh->vm_cap, sh->n_vm,
                          sizeof(*sh->vm));
    sh->vm[sh->n_vm].rank = rank;
    sh->vm[sh->n_vm].var = v;
    sh->vm[sh->n_vm].next = d->mem_head;
    d->mem_head = (uint32_t)++sh->n_vm;
}

static int p3d_cmp_vmember(const void *a, const void *b)
{
    const struct p3d_vmember *x = a, *y = b;

    if (x->rank != y->rank)
        return x->rank < y->rank ? -1 : 1;
    return x->var < y->var ? -1 : x->var > y->var;
}

static int p3d_cmp_member(const void *a, const void *b)
{
    const struct p3d_member *x = a, *y = b;

    return x->rank < y->rank ? -1 : x->rank > y->rank;
}

/* d's filed members into (*buf)[0..n), ascending rank; returns n. */
static size_t p3d_div_filed(const struct p3d_shard *sh,
                            const struct p3d_div *d,
                            struct p3d_vmember **buf, size_t *cap)
{
    size_t n = 0;

    for (uint32_t i = d->mem_head; i; i = sh->vm[i - 1].next) {
        *cap = p3d_grow((void **)buf, *cap, n, sizeof(**buf));
        (*buf)[n++] = sh->vm[i - 1];
    }
    if (n > 1)
        qsort(*buf, n, sizeof(**buf), p3d_cmp_vmember);
    return n;
}

/*
 * Compare the members of d (c's members that took d->seq, ascending
 * rank; their variant as filed, else variant 0) with the lowest of them.
 */
static void p3d_div_decide(struct p3d_shard *sh, const struct p3d_mcomm *c,
                           const struct p3d_div *d,
                           struct p3d_vmember **buf, size_t *cap)
{
    size_t n = p3d_div_filed(sh, d, buf, cap), k = 0;
    int ref_rank = -1;
    uint32_t ref_var = 0;

    for (size_t i = 0; i < c->n_mem; i++) {
        const struct p3d_member *mb = &c->mem[i];
        uint32_t v = d->var0;
        if (!p3d_member_has(mb, d->li, d->seq))
            continue;
        while (k < n && (*buf)[k].rank < mb->rank)
            k++;
        if (k < n && (*buf)[k].rank == mb->rank)
            v = (*buf)[k].var; /* the first of duplicate records */
        if (ref_rank < 0)
            ref_rank = mb->rank, ref_var = v;
        else if (v != ref_var)
            p3d_match_ref(&sh->res, d->comm, d->seq, ref_rank,
                          &sh->var[ref_var].v, mb->rank, &sh->var[v].v);
    }
}

void p3d_div_finish(struct p3d_shard *sh)
{
    struct p3d_vmember *buf = NULL;
    size_t cap = 0;

    for (size_t i = 0; i < sh->n; i++) /* one process: its last runs */
        for (size_t k = 0; k < sh->comms[i].n_mem; k++) {
            struct p3d_member *mb = &sh->comms[i].mem[k];
            if (mb->take.n_runs > P3D_RUNS_MAX)
                mb->last = (struct p3d_run){mb->take.lo, mb->take.hi};
        }
    for (size_t i = 0; i < sh->n; i++) /* members by rank, once */
        if (sh->comms[i].n_mem > 1)
            qsort(sh->comms[i].mem, sh->comms[i].n_mem,
                  sizeof(*sh->comms[i].mem), p3d_cmp_member);
    for (size_t i = 0; i < sh->n_div; i++) {
        int ci = p3d_map_get(&sh->idx, sh->div[i].comm);
        if (ci >= 0)
            p3d_div_decide(sh, &sh->comms[ci], &sh->div[i], &buf, &cap);
    }
    free(buf);
    free(sh->div);
    free(sh->var);
    free(sh->vm);
    for (size_t i = 0; i < sh->n; i++) {
        struct p3d_mcomm *c = &sh->comms[i];
        for (size_t k = 0; k < c->n_mem; k++)
            free(c->mem[k].more);
        free(c->mem);
        p3d_map_free(&c->mem_idx);
    }
}
