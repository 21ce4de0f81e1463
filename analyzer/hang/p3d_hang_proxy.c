/*
 * p3d_hang_proxy.c - NCCL's network transfers in flight at a hang, as the
 * shim's watchdog noted them from NCCL's proxy events (shim/
 * p3d_plugin_proxy.c: one "proxy: " note per transfer, with its
 * communicator, direction, the peer's rank in that communicator, and the
 * step it waits in).  Kept per rank while the hang scan reads the files;
 * given to the views with the peer as a global rank and the
 * communicator's group name, so "waits for the peer's data" names who.
 *
 * Evidence only: the root is found from the op records (p3d_hang_graph.c);
 * these lines say where the bytes stood.  Transfers inside a node (NVLink,
 * P2P, SHM) have no proxy events, so an empty list says nothing.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "p3d_hang_int.h"
#include "p3d_job.h"
#include "p3d_map.h"

#define P3D_PROXY_PREFIX "proxy: "

void p3d_hang_proxy_note(struct p3d_hrank *h, const struct p3d_rec_str *s)
{
    size_t room = s->h.len - sizeof(*s), n = sizeof(P3D_PROXY_PREFIX) - 1;

    if (s->n_bytes > room || s->n_bytes <= n ||
        memcmp(s->text, P3D_PROXY_PREFIX, n) != 0)
        return;
    if (h->n_proxy == P3D_HANG_PROXY_KEEP) { /* keep the latest report's */
        memmove(h->proxy, h->proxy + 1, sizeof(h->proxy) - sizeof(*h->proxy));
        h->n_proxy--;
    }
    h->proxy[h->n_proxy++] = s;
}

/*
 * One note in words: "send to rank 5 (comm rank 1 of PP 0x...), channel
 * 0: 0 of 1 steps done, ...".  The note's own text when it does not
 * parse (a newer shim's wording).
 */
static void p3d_hang_proxy_line(const struct p3d_job *job,
                                const struct p3d_rec_str *s, char *out,
                                size_t cap)
{
    char text[P3D_HANG_PROXY_LEN], dir[16];
    uint64_t comm;
    int peer, at = 0, gi, rank = -1, label = -1;
    size_t n = s->n_bytes < sizeof(text) - 1 ? s->n_bytes : sizeof(text) - 1;
    const char *rest;

    memcpy(text, s->text, n);
    text[n] = '\0';
    if (sscanf(text, P3D_PROXY_PREFIX "comm 0x%" SCNx64 " %15s %*s comm "
               "rank %d, %n", &comm, dir, &peer, &at) != 3 || at == 0) {
        snprintf(out, cap, "%s", text + sizeof(P3D_PROXY_PREFIX) - 1);
        return;
    }
    rest = text + at;
    gi = p3d_map_get(&job->comm_idx, comm);
    if (gi >= 0 && gi < job->n_comms) {
        const struct p3d_gcomm *c = &job->comms[gi];
        label = c->label;
        if (peer >= 0 && peer < c->size)
            rank = c->slot[peer];
    }
    if (rank >= 0)
        snprintf(out, cap, "%s rank %d (comm rank %d of %s 0x%016" PRIx64
                 "), %s", strcmp(dir, "send") == 0 ? "send to" :
                 "receive from", rank, peer, p3d_hang_lbl_name(label), comm,
                 rest);
    else
        snprintf(out, cap, "%s", text + sizeof(P3D_PROXY_PREFIX) - 1);
}

int p3d_hang_proxy_lines(const struct p3d_job *job, int rank,
                         char (*out)[P3D_HANG_PROXY_LEN], int max)
{
    const struct p3d_hjob *hj = job->hang ? job->hang->priv : NULL;
    const struct p3d_hrank *h;
    int n = 0;

    if (hj == NULL || rank < 0 || rank >= hj->world)
        return 0;
    h = &hj->hr[rank];
    for (int k = 0; k < h->n_proxy && n < max; k++)
        p3d_hang_proxy_line(job, h->proxy[k], out[n++], P3D_HANG_PROXY_LEN);
    return n;
}
