/*
 * p3d_chrome_flow.c - Send -> Recv flow arrows (see p3d_chrome_flow.h).
 * The arrow starts ("s") on the send's slice and ends ("f", bound to the
 * enclosing slice) on the receive's slice, at the send's start clamped
 * into the receive, so the arrow never points back in time when clocks
 * agree.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "p3d_chrome.h"
#include "p3d_chrome_flow.h"
#include "p3d_util.h"

uint64_t p3d_flow_id(const struct p3d_vev *e)
{
    int64_t src, dst;
    uint64_t h;

    if (e->kind != P3D_V_HOST && e->kind != P3D_V_GPU_NCCL)
        return 0;
    if (e->op != P3D_OP_SEND && e->op != P3D_OP_RECV)
        return 0;
    if (e->comm_rank < 0 || e->peer < 0)
        return 0;
    src = e->op == P3D_OP_SEND ? e->comm_rank : e->peer;
    dst = e->op == P3D_OP_SEND ? e->peer : e->comm_rank;
    h = e->comm ^ 0x51afd7ed558ccd6bull;
    h = (h ^ (uint64_t)src) * 0xff51afd7ed558ccdull;
    h = (h ^ (uint64_t)dst) * 0xc4ceb9fe1a85ec53ull;
    h = (h ^ e->seq) * 0xff51afd7ed558ccdull;
    h ^= h >> 29;
    h &= (1ull << 53) - 1;
    return h ? h : 1;
}

void p3d_flow_gpu_ops(const struct p3d_vrank *v, struct p3d_map *gpu)
{
    for (size_t i = 0; i < v->n; i++)
        if (v->ev[i].kind == P3D_V_GPU_NCCL)
            p3d_map_put(gpu, v->ev[i].op_id, 1);
}

/*
 * The event of v an arrow of op e attaches to: e itself when it is a
 * GPU op or a host call without a GPU op in v; gpu maps op_id -> 1 for
 * the ops of v that have a GPU event.
 */
static int p3d_flow_bound(const struct p3d_vev *e, const struct p3d_map *gpu)
{
    if (e->kind == P3D_V_GPU_NCCL)
        return 1;
    return e->kind == P3D_V_HOST && p3d_map_get(gpu, e->op_id) < 0;
}

void p3d_flows_note(struct p3d_flows *fl, const struct p3d_vev *e, int rank,
                    const struct p3d_map *gpu)
{
    uint64_t id = p3d_flow_id(e);
    int added, side = e->op == P3D_OP_SEND ? 0 : 1;
    size_t k, cap;

    if (!id || !p3d_flow_bound(e, gpu))
        return;
    cap = fl->cap;
    k = p3d_map_index(&fl->idx, id, (void **)&fl->sides, &fl->n, &fl->cap,
                      sizeof(*fl->sides), &added);
    if (fl->cap != cap) {
        fl->id = p3d_xrealloc(fl->id, fl->cap, sizeof(*fl->id));
        fl->end = p3d_xrealloc(fl->end, fl->cap * 2, sizeof(*fl->end));
    }
    fl->id[k] = id;
    fl->sides[k] |= (uint8_t)(1u << side);
    fl->end[2 * k + (size_t)side] =
        (struct p3d_flow_end){rank, e->tid, e->t0, e->t1};
}

/* The arrow's end at the receive: no earlier than the send started
 * (clocks of two hosts), inside the receive's slice. */
static uint64_t p3d_flow_recv_ts(const struct p3d_flow_end *s,
                                 const struct p3d_flow_end *r)
{
    if (s->t0 <= r->t0)
        return r->t0;
    return s->t0 < r->t1 ? s->t0 : r->t1 - (r->t1 > r->t0);
}

size_t p3d_flows_write(FILE *f, const struct p3d_flows *fl, int first)
{
    size_t n = 0;

    for (size_t k = 0; k < fl->n; k++) {
        const struct p3d_flow_end *s = &fl->end[2 * k], *r = s + 1;
        if (fl->sides[k] != 3)
            continue;
        fprintf(f, "%s{\"ph\":\"s\",\"cat\":\"p2p\",\"name\":"
                "\"send->recv\",\"id\":%" PRIu64 ",\"pid\":%d,\"tid\":%u,"
                "\"ts\":", first && !n ? "\n" : ",\n", fl->id[k], s->rank,
                s->tid);
        p3d_chrome_us(f, s->t0);
        fprintf(f, "},\n{\"ph\":\"f\",\"cat\":\"p2p\",\"name\":"
                "\"send->recv\",\"id\":%" PRIu64 ",\"pid\":%d,\"tid\":%u,"
                "\"ts\":", fl->id[k], r->rank, r->tid);
        p3d_chrome_us(f, p3d_flow_recv_ts(s, r));
        fputs(",\"bp\":\"e\"}", f);
        n += 2;
    }
    return n;
}

void p3d_flows_free(struct p3d_flows *fl)
{
    p3d_map_free(&fl->idx);
    free(fl->id);
    free(fl->sides);
    free(fl->end);
    memset(fl, 0, sizeof(*fl));
}
