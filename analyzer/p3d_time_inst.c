/*
 * p3d_time_inst.c - join the ops of all ranks into collective instances,
 * keyed by (communicator, seq), and Send/Recv pairs, keyed by
 * (communicator, src, dst, per-pair seq), for clock alignment and wait
 * states.
 */
#include <stdlib.h>
#include <string.h>

#include "p3d_time.h"
#include "p3d_util.h"

static uint64_t p3d_mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    return h * 0xff51afd7ed558ccdull;
}

static void p3d_itab_coll(struct p3d_itab *it, int ti, size_t oi,
                          const struct p3d_top *o)
{
    uint64_t key = p3d_mix(p3d_mix(1, (uint64_t)o->gcomm), o->seq);
    int k = p3d_map_get(&it->idx, key);

    if (k < 0) {
        it->cap_inst = p3d_grow((void **)&it->inst, it->cap_inst, it->n_inst,
                                sizeof(*it->inst));
        k = (int)it->n_inst++;
        it->inst[k].gcomm = o->gcomm;
        it->inst[k].seq = o->seq;
        it->inst[k].first = -1;
        p3d_map_put(&it->idx, key, k);
    }
    it->cap_ents = p3d_grow((void **)&it->ents, it->cap_ents, it->n_ents,
                            sizeof(*it->ents));
    it->ents[it->n_ents].r.tl = ti;
    it->ents[it->n_ents].r.op = (uint32_t)oi;
    it->ents[it->n_ents].next = it->inst[k].first;
    it->inst[k].first = (int)it->n_ents++;
    it->inst[k].n++;
}

static void p3d_itab_p2p(struct p3d_itab *it, int ti, int rank, size_t oi,
                         const struct p3d_top *o)
{
    int send = o->op == P3D_OP_SEND;
    int src = send ? rank : o->peer, dst = send ? o->peer : rank;
    uint64_t key = p3d_mix(p3d_mix(p3d_mix(p3d_mix(2, (uint64_t)o->gcomm),
                                           (uint64_t)src), (uint64_t)dst),
                           o->seq);
    int k = p3d_map_get(&it->pidx, key);
    struct p3d_iref r = {ti, (uint32_t)oi};

    if (o->peer < 0)
        return;
    if (k < 0) {
        it->cap_pairs = p3d_grow((void **)&it->pairs, it->cap_pairs,
                                 it->n_pairs, sizeof(*it->pairs));
        k = (int)it->n_pairs++;
        memset(&it->pairs[k], 0, sizeof(it->pairs[k]));
        p3d_map_put(&it->pidx, key, k);
    }
    if (send) {
        it->pairs[k].send = r;
        it->pairs[k].have |= 1;
    } else {
        it->pairs[k].recv = r;
        it->pairs[k].have |= 2;
    }
}

void p3d_itab_build(const struct p3d_time_res *t, struct p3d_itab *it)
{
    memset(it, 0, sizeof(*it));
    for (int ti = 0; ti < t->n; ti++) {
        const struct p3d_tl *tl = &t->tl[ti];
        /* op indexes are 32-bit: 2^32 ops would take 320 GiB anyway */
        for (size_t oi = 0; oi < tl->n_ops && oi < UINT32_MAX; oi++) {
            const struct p3d_top *o = &tl->ops[oi];
            if (o->gcomm < 0)
                continue;
            if (P3D_OP_IS_P2P(o->op))
                p3d_itab_p2p(it, ti, tl->rank, oi, o);
            else
                p3d_itab_coll(it, ti, oi, o);
        }
    }
}

void p3d_itab_free(struct p3d_itab *it)
{
    free(it->inst);
    free(it->ents);
    free(it->pairs);
    p3d_map_free(&it->idx);
    p3d_map_free(&it->pidx);
    memset(it, 0, sizeof(*it));
}
