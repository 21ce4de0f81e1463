/*
 * p3d_chrome_flow.c - Send -> Recv flow arrows (see p3d_chrome_flow.h).
 * The arrow starts ("s") on the send's slice and ends ("f", bound to the
 * enclosing slice) on the receive's slice, at the send's start clamped
 * into the receive, so the arrow never points back in time when clocks
 * agree.
 */
#include <inttypes.h>
#include <stdlib.h>

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

int p3d_flow_bound(const struct p3d_vev *e, const struct p3d_map *gpu)
{
    if (e->kind == P3D_V_GPU_NCCL)
        return 1;
    return e->kind == P3D_V_HOST && p3d_map_get(gpu, e->op_id) < 0;
}

void p3d_flows_add(struct p3d_flows *fl, const struct p3d_vrank *v)
{
    struct p3d_map gpu = {0};

    p3d_flow_gpu_ops(v, &gpu);
    for (size_t i = 0; i < v->n; i++) {
        const struct p3d_vev *e = &v->ev[i];
        uint64_t id = p3d_flow_id(e);
        int k;
        if (!id || !p3d_flow_bound(e, &gpu))
            continue;
        k = p3d_map_get(&fl->idx, id);
        if (k < 0) {
            fl->cap = p3d_grow((void **)&fl->sides, fl->cap, fl->n, 1);
            fl->send_t0 = p3d_xrealloc(fl->send_t0, fl->cap, 8);
            k = (int)fl->n++;
            fl->sides[k] = 0;
            p3d_map_put(&fl->idx, id, k);
        }
        fl->sides[k] |= e->op == P3D_OP_SEND ? 1 : 2;
        if (e->op == P3D_OP_SEND)
            fl->send_t0[k] = e->t0;
    }
    p3d_map_free(&gpu);
}

int p3d_flows_emit(FILE *f, const struct p3d_flows *fl,
                   const struct p3d_vev *e, int rank, const char *sep)
{
    uint64_t id = p3d_flow_id(e), ts;
    int k = id ? p3d_map_get(&fl->idx, id) : -1;

    if (k < 0 || fl->sides[k] != 3)
        return 0;
    ts = e->t0;
    if (e->op == P3D_OP_RECV && fl->send_t0[k] > ts)
        ts = fl->send_t0[k] < e->t1 ? fl->send_t0[k]
                                    : e->t1 - (e->t1 > e->t0);
    fprintf(f, "%s{\"ph\":\"%s\",\"cat\":\"p2p\",\"name\":\"send->recv\","
            "\"id\":%" PRIu64 ",\"pid\":%d,\"tid\":%u,\"ts\":",
            sep, e->op == P3D_OP_SEND ? "s" : "f", id, rank, e->tid);
    p3d_chrome_us(f, ts);
    fputs(e->op == P3D_OP_SEND ? "}" : ",\"bp\":\"e\"}", f);
    return 1;
}

void p3d_flows_free(struct p3d_flows *fl)
{
    p3d_map_free(&fl->idx);
    free(fl->sides);
    free(fl->send_t0);
    *fl = (struct p3d_flows){{0}, NULL, NULL, 0, 0};
}
